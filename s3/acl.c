/*
 * ACLs (acl.h): parsing, the stored form, and what a grant gives.
 */
#include "config.h"
#include "s3/acl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "s3/sigv4.h"
#include "util.h"

/* ACL bodies are small: a hundred grants fit well within this. */
#define ACL_BODY_MAX (64u << 10)

static const struct {
	const char *name;
	unsigned perm;
} perms[] = {
	{"FULL_CONTROL", ACL_FULL}, {"READ", ACL_READ},          {"WRITE", ACL_WRITE},
	{"READ_ACP", ACL_READ_ACP}, {"WRITE_ACP", ACL_WRITE_ACP},
};

void acl_free(struct s3_acl *a)
{
	free(a->owner);
	for (size_t i = 0; i < a->n; i++)
		free(a->g[i].name);
	free(a->g);
	memset(a, 0, sizeof(*a));
}

void acl_add(struct s3_acl *a, enum acl_who who, const char *name, unsigned perm)
{
	a->g = xrealloc(a->g, (a->n + 1) * sizeof(*a->g));
	a->g[a->n].who = who;
	a->g[a->n].name = name ? xstrdup(name) : NULL;
	a->g[a->n].perm = perm;
	a->n++;
}

bool acl_canned(const char *name, bool bucket, struct s3_acl *a)
{
	bool ok = true;
	acl_add(a, ACL_OWNER, NULL, ACL_FULL);
	if (!strcmp(name, "private"))
		;
	else if (!strcmp(name, "public-read"))
		acl_add(a, ACL_ALL_USERS, NULL, ACL_READ);
	else if (!strcmp(name, "public-read-write"))
		acl_add(a, ACL_ALL_USERS, NULL, ACL_READ | ACL_WRITE);
	else if (!strcmp(name, "authenticated-read"))
		acl_add(a, ACL_AUTH_USERS, NULL, ACL_READ);
	else if (!strcmp(name, "bucket-owner-read"))
		/* on a bucket, the bucket owner is the owner: private */
		bucket ? (void)0 : acl_add(a, ACL_BUCKET_OWNER, NULL, ACL_READ);
	else if (!strcmp(name, "bucket-owner-full-control"))
		bucket ? (void)0 : acl_add(a, ACL_BUCKET_OWNER, NULL, ACL_FULL);
	else if (!strcmp(name, "log-delivery-write") && bucket)
		acl_add(a, ACL_LOG_DELIVERY, NULL, ACL_WRITE | ACL_READ_ACP);
	else
		ok = false;
	return ok;
}

static unsigned perm_of(const char *s)
{
	for (size_t i = 0; i < ARRAY_LEN(perms); i++)
		if (!strcmp(perms[i].name, s))
			return perms[i].perm;
	return 0;
}

/* A group URI's grantee type, or 0. */
static enum acl_who group_of(const char *uri)
{
	if (!strcmp(uri, ACL_URI_ALL))
		return ACL_ALL_USERS;
	if (!strcmp(uri, ACL_URI_AUTH))
		return ACL_AUTH_USERS;
	if (!strcmp(uri, ACL_URI_LOG))
		return ACL_LOG_DELIVERY;
	return 0;
}

/* A grantee of perm: an id, an e-mail or a group URI (exactly one given) added to a. */
static enum s3_err grantee_add(const char *id, const char *email, const char *uri,
			       unsigned perm, acl_resolve_fn resolve, void *ctx,
			       struct s3_acl *a, enum s3_err bad, char *msg, size_t msglen)
{
	char *name = NULL;
	enum s3_err e;
	enum acl_who who;

	if (a->n >= ACL_GRANTS_MAX)
		return s3_err_msg(msg, msglen, bad, "an ACL has at most %d grants",
				  ACL_GRANTS_MAX);
	if (uri) {
		if (!(who = group_of(uri)))
			return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT,
					  "Invalid group uri %.128s", uri);
		acl_add(a, who, NULL, perm);
		return S3_OK;
	}
	e = resolve(ctx, !id, id ? id : email, &name);
	if (e)
		return s3_err_msg(msg, msglen, e,
				  id ? "Invalid id %.80s" : "The e-mail address %.80s you provided "
							    "does not match any account on record",
				  id ? id : email);
	acl_add(a, ACL_USER, name, perm);
	free(name);
	return S3_OK;
}

enum s3_err acl_parse_xml(const char *data, size_t len, acl_resolve_fn resolve, void *ctx,
			  struct s3_acl *a, char *msg, size_t msglen)
{
	static const char bad_schema[] = "The XML you provided was not well-formed or did not "
					 "validate against our published schema";
	struct xml_limits lim = {.max_len = ACL_BODY_MAX};
	struct xml_node *root = NULL;
	const struct xml_node *list;
	enum s3_err e = S3_OK;

	if (xml_parse(data, len, &lim, &root, NULL, 0) ||
	    strcmp(root->name, "AccessControlPolicy") ||
	    !(list = xml_child(root, "AccessControlList"))) {
		e = s3_err_msg(msg, msglen, S3_MALFORMED_ACL, bad_schema);
		goto out;
	}
	xml_foreach(grant, list, "Grant")
	{
		const struct xml_node *ge = xml_child(grant, "Grantee");
		const char *p = xml_child_text(grant, "Permission");
		unsigned perm = p ? perm_of(p) : 0;
		const char *id, *email, *uri;
		if (!ge || !perm) {
			e = s3_err_msg(msg, msglen, S3_MALFORMED_ACL, bad_schema);
			goto out;
		}
		id = xml_child_text(ge, "ID");
		email = xml_child_text(ge, "EmailAddress");
		uri = xml_child_text(ge, "URI");
		if ((id != NULL) + (email != NULL) + (uri != NULL) != 1) {
			e = s3_err_msg(msg, msglen, S3_MALFORMED_ACL, bad_schema);
			goto out;
		}
		e = grantee_add(id, email, uri, perm, resolve, ctx, a, S3_MALFORMED_ACL, msg,
				msglen);
		if (e)
			goto out;
	}
out:
	xml_free(root);
	return e;
}

enum s3_err acl_parse_grant_header(const char *v, unsigned perm, acl_resolve_fn resolve,
				   void *ctx, struct s3_acl *a, char *msg, size_t msglen)
{
	static const char bad[] = "Invalid grant header value";
	const char *p = v;
	enum s3_err e = S3_OK;

	for (;;) {
		const char *eq, *q, *end;
		size_t kl;
		char *val;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!(eq = strchr(p, '=')))
			return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT, bad);
		for (kl = (size_t)(eq - p); kl && (p[kl - 1] == ' '); kl--)
			;
		q = eq + 1;
		while (*q == ' ')
			q++;
		if (*q == '"') {
			if (!(end = strchr(q + 1, '"')))
				return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT, bad);
			val = xstrndup(q + 1, (size_t)(end - q - 1));
			end++;
		} else {
			end = q + strcspn(q, ",");
			val = xstrndup(q, (size_t)(end - q));
		}
		if (kl == 2 && !strncasecmp(p, "id", 2))
			e = grantee_add(val, NULL, NULL, perm, resolve, ctx, a, S3_INVALID_ARGUMENT,
					msg, msglen);
		else if (kl == 12 && !strncasecmp(p, "emailAddress", 12))
			e = grantee_add(NULL, val, NULL, perm, resolve, ctx, a,
					S3_INVALID_ARGUMENT, msg, msglen);
		else if (kl == 3 && !strncasecmp(p, "uri", 3))
			e = grantee_add(NULL, NULL, val, perm, resolve, ctx, a,
					S3_INVALID_ARGUMENT, msg, msglen);
		else
			e = s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT, bad);
		free(val);
		if (e)
			return e;
		while (*end == ' ')
			end++;
		if (!*end)
			return S3_OK;
		if (*end != ',')
			return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT, bad);
		p = end + 1;
	}
}

void acl_encode(const struct s3_acl *a, buf *out)
{
	char line[32];
	if (a->owner) {
		buf_append(out, "o ", 2);
		buf_append(out, a->owner, strlen(a->owner));
		buf_append(out, "\n", 1);
	}
	for (size_t i = 0; i < a->n; i++) {
		int n = snprintf(line, sizeof(line), "g %x %c", a->g[i].perm, (char)a->g[i].who);
		buf_append(out, line, (size_t)n);
		if (a->g[i].name) {
			buf_append(out, " ", 1);
			buf_append(out, a->g[i].name, strlen(a->g[i].name));
		}
		buf_append(out, "\n", 1);
	}
}

static bool who_ok(int c)
{
	return c == ACL_USER || c == ACL_OWNER || c == ACL_BUCKET_OWNER || c == ACL_ALL_USERS ||
	       c == ACL_AUTH_USERS || c == ACL_LOG_DELIVERY;
}

bool acl_decode(const char *v, size_t len, struct s3_acl *a)
{
	const char *end = v + len;
	memset(a, 0, sizeof(*a));
	while (v < end) {
		const char *nl = memchr(v, '\n', (size_t)(end - v));
		size_t n = nl ? (size_t)(nl - v) : (size_t)(end - v);
		if (n > 2 && v[0] == 'o' && v[1] == ' ' && !a->owner && !memchr(v, '\0', n)) {
			a->owner = xstrndup(v + 2, n - 2);
		} else if (n >= 5 && v[0] == 'g' && v[1] == ' ' && a->n < ACL_GRANTS_MAX) {
			unsigned perm = 0;
			size_t i = 2;
			for (; i < n && v[i] != ' '; i++) {
				int d = v[i] >= '0' && v[i] <= '9'   ? v[i] - '0'
					: v[i] >= 'a' && v[i] <= 'f' ? v[i] - 'a' + 10
								     : -1;
				if (d < 0 || i > 3)
					goto bad;
				perm = perm * 16 + (unsigned)d;
			}
			if (i + 1 >= n || !perm || perm > ACL_FULL || !who_ok(v[i + 1]))
				goto bad;
			if (v[i + 1] == ACL_USER) {
				if (i + 3 >= n || v[i + 2] != ' ' ||
				    memchr(v + i + 3, '\0', n - i - 3))
					goto bad;
				char *name = xstrndup(v + i + 3, n - i - 3);
				acl_add(a, ACL_USER, name, perm);
				free(name);
			} else {
				if (i + 2 != n)
					goto bad;
				acl_add(a, (enum acl_who)v[i + 1], NULL, perm);
			}
		} else {
			goto bad;
		}
		v += n + (nl != NULL);
	}
	return true;
bad:
	acl_free(a);
	return false;
}

bool acl_is_public(const struct s3_acl *a)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->g[i].who == ACL_ALL_USERS || a->g[i].who == ACL_AUTH_USERS)
			return true;
	return false;
}

bool acl_is_owner_only(const struct s3_acl *a)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->g[i].who != ACL_OWNER && a->g[i].who != ACL_BUCKET_OWNER)
			return false;
	return true;
}

static bool same(const char *a, const char *b) { return a && b && !strcmp(a, b); }

unsigned acl_perms(const struct s3_acl *a, const char *who, const char *owner,
		   const char *bucket_owner, bool ignore_public)
{
	unsigned p = 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct acl_grant *g = &a->g[i];
		bool match = false;
		switch (g->who) {
		case ACL_USER:
			match = same(who, g->name);
			break;
		case ACL_OWNER:
			match = same(who, owner);
			break;
		case ACL_BUCKET_OWNER:
			match = same(who, bucket_owner);
			break;
		case ACL_ALL_USERS:
			match = !ignore_public;
			break;
		case ACL_AUTH_USERS:
			match = !ignore_public && who;
			break;
		case ACL_LOG_DELIVERY:
			break; /* the gateway's own log delivery needs no grant */
		}
		if (match)
			p |= g->perm;
	}
	return p;
}

void acl_canonical_id(const char *name, char out[65])
{
	char *s = xasprintf("weedfs-s3-canonical-user:%s", name);
	sigv4_sha256_hex(s, strlen(s), out);
	free(s);
}

/* A grantee element naming identity name, or the group uri. */
static void grantee(xml_w *w, const char *name, const char *uri)
{
	static const char *const user[] = {"xmlns:xsi", "http://www.w3.org/2001/XMLSchema-instance",
					   "xsi:type", "CanonicalUser", NULL};
	static const char *const group[] = {"xmlns:xsi",
					    "http://www.w3.org/2001/XMLSchema-instance", "xsi:type",
					    "Group", NULL};
	char id[65];
	xml_open_attrs(w, "Grantee", name ? user : group);
	if (name) {
		acl_canonical_id(name, id);
		xml_elem(w, "ID", id);
		xml_elem(w, "DisplayName", name);
	} else {
		xml_elem(w, "URI", uri);
	}
	xml_close(w);
}

void acl_xml(const struct s3_acl *a, xml_w *w, const char *owner, const char *bucket_owner)
{
	char id[65];
	xml_open_s3(w, "AccessControlPolicy");
	xml_open(w, "Owner");
	acl_canonical_id(owner, id);
	xml_elem(w, "ID", id);
	xml_elem(w, "DisplayName", owner);
	xml_close(w);
	xml_open(w, "AccessControlList");
	for (size_t i = 0; i < a->n; i++) {
		const struct acl_grant *g = &a->g[i];
		const char *name = g->who == ACL_USER	       ? g->name
				   : g->who == ACL_OWNER	       ? owner
				   : g->who == ACL_BUCKET_OWNER ? bucket_owner
								: NULL;
		const char *uri = g->who == ACL_ALL_USERS    ? ACL_URI_ALL
				  : g->who == ACL_AUTH_USERS ? ACL_URI_AUTH
							     : ACL_URI_LOG;
		bool user = g->who == ACL_USER || g->who == ACL_OWNER || g->who == ACL_BUCKET_OWNER;
		if (user && !name)
			continue;
		/* FULL_CONTROL is one grant; any other set of bits one grant per bit */
		for (size_t k = 0; k < ARRAY_LEN(perms); k++) {
			if (g->perm == ACL_FULL ? perms[k].perm != ACL_FULL
						: perms[k].perm == ACL_FULL ||
							  !(g->perm & perms[k].perm))
				continue;
			xml_open(w, "Grant");
			grantee(w, user ? name : NULL, uri);
			xml_elem(w, "Permission", perms[k].name);
			xml_close(w);
		}
	}
	xml_close(w);
	xml_close(w);
}
