/*
 * S3 identities (s3_iam.h). A handful of identities, each with a few keys:
 * lookups scan the list, which costs nothing next to a request.
 */
#include "config.h"
#include "s3/s3_iam.h"
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "s3/bucket_policy.h"
#include "s3/s3_iam_user.h"
#include "util.h"

#define IAM_FILE_MAX  (1u << 20)
#define IAM_FIELD_MAX 256

struct grant {
	enum s3_action action;
	char *bucket; /* NULL: every bucket; a trailing '*' matches any suffix */
};

struct s3_identity {
	char *name;
	char *email;             /* the file's optional "email" (ACL grants by e-mail); NULL */
	char **access, **secret; /* parallel arrays of n_keys */
	size_t n_keys;
	struct grant *grants;
	size_t n_grants;
	bool admin;
	bool stored;                /* made by the IAM API (its rights: its policies) */
	struct bucket_policy **pol; /* inline policies, n_pol */
	size_t n_pol;
};

struct s3_iam {
	struct s3_identity *v;
	size_t n;
	atomic_int refs;
};

static const char *const action_names[] = {
	[S3_ACT_READ] = "Read",       [S3_ACT_WRITE] = "Write", [S3_ACT_LIST] = "List",
	[S3_ACT_TAGGING] = "Tagging", [S3_ACT_ADMIN] = "Admin",
};


static void identity_free(struct s3_identity *id)
{
	free(id->name);
	free(id->email);
	for (size_t i = 0; i < id->n_keys; i++) {
		free(id->access[i]);
		free(id->secret[i]);
	}
	free(id->access);
	free(id->secret);
	for (size_t i = 0; i < id->n_grants; i++)
		free(id->grants[i].bucket);
	free(id->grants);
	for (size_t i = 0; i < id->n_pol; i++)
		bucket_policy_free(id->pol[i]);
	free(id->pol);
}

static struct s3_iam *iam_new(void)
{
	struct s3_iam *iam = xcalloc(1, sizeof(*iam));
	atomic_init(&iam->refs, 1);
	return iam;
}

struct s3_iam *s3_iam_ref(struct s3_iam *iam)
{
	atomic_fetch_add(&iam->refs, 1);
	return iam;
}

void s3_iam_free(struct s3_iam *iam)
{
	if (!iam || atomic_fetch_sub(&iam->refs, 1) != 1)
		return;
	for (size_t i = 0; i < iam->n; i++)
		identity_free(&iam->v[i]);
	free(iam->v);
	free(iam);
}

/* A string member of obj, present, non-empty and bounded. */
static const char *str_field(yajl_val obj, const char *key)
{
	const char *s;
	if (!json_get_str(obj, key, &s) || !*s || strlen(s) > IAM_FIELD_MAX)
		return NULL;
	return s;
}

static bool only_keys(yajl_val obj, const char *const *keys, const char *what, char *msg,
		      size_t msglen)
{
	if (!YAJL_IS_OBJECT(obj))
		return msg_fail(msg, msglen, "%s must be an object", what);
	for (size_t i = 0; i < obj->u.object.len; i++) {
		bool ok = false;
		for (size_t k = 0; keys[k] && !ok; k++)
			ok = !strcmp(keys[k], obj->u.object.keys[i]);
		if (!ok)
			return msg_fail(msg, msglen, "unknown field \"%.64s\" in %s",
				    obj->u.object.keys[i], what);
	}
	return true;
}

static bool parse_grant(const char *s, struct s3_identity *id, char *msg, size_t msglen)
{
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);
	for (size_t a = 0; a < ARRAY_LEN(action_names); a++) {
		if (strlen(action_names[a]) != n || strncmp(action_names[a], s, n))
			continue;
		if (colon && !colon[1])
			return msg_fail(msg, msglen, "action \"%s\": empty bucket after ':'", s);
		if (a == S3_ACT_ADMIN && !colon)
			id->admin = true;
		id->grants = xrealloc(id->grants, (id->n_grants + 1) * sizeof(*id->grants));
		id->grants[id->n_grants].action = (enum s3_action)a;
		id->grants[id->n_grants].bucket = colon ? xstrdup(colon + 1) : NULL;
		id->n_grants++;
		return true;
	}
	return msg_fail(msg, msglen, "unknown action \"%.64s\" (Read, Write, List, Tagging, Admin)", s);
}

static bool parse_identity(yajl_val v, struct s3_identity *id, char *msg, size_t msglen)
{
	static const char *const keys[] = {"name", "email", "credentials", "actions", NULL};
	static const char *const ckeys[] = {"accessKey", "secretKey", NULL};
	yajl_val creds, acts;
	const char *name;

	if (!only_keys(v, keys, "an identity", msg, msglen))
		return false;
	if (!(name = str_field(v, "name")))
		return msg_fail(msg, msglen, "an identity needs a \"name\"");
	id->name = xstrdup(name);
	if (json_get(v, "email")) {
		const char *email = str_field(v, "email");
		if (!email || !strchr(email, '@'))
			return msg_fail(msg, msglen, "identity %s: \"email\" must be an address",
					name);
		id->email = xstrdup(email);
	}
	creds = json_get(v, "credentials");
	acts = json_get(v, "actions");
	if (!creds || !YAJL_IS_ARRAY(creds))
		return msg_fail(msg, msglen, "identity %s: \"credentials\" must be an array", name);
	if (acts && !YAJL_IS_ARRAY(acts))
		return msg_fail(msg, msglen, "identity %s: \"actions\" must be an array", name);
	for (size_t i = 0; i < creds->u.array.len; i++) {
		yajl_val c = creds->u.array.values[i];
		const char *ak, *sk;
		if (!only_keys(c, ckeys, "a credential", msg, msglen))
			return false;
		if (!(ak = str_field(c, "accessKey")) || !(sk = str_field(c, "secretKey")))
			return msg_fail(
				msg, msglen,
				"identity %s: a credential needs \"accessKey\" and \"secretKey\"",
				name);
		id->access = xrealloc(id->access, (id->n_keys + 1) * sizeof(char *));
		id->secret = xrealloc(id->secret, (id->n_keys + 1) * sizeof(char *));
		id->access[id->n_keys] = xstrdup(ak);
		id->secret[id->n_keys] = xstrdup(sk);
		id->n_keys++;
	}
	for (size_t i = 0; acts && i < acts->u.array.len; i++) {
		yajl_val a = acts->u.array.values[i];
		if (!YAJL_IS_STRING(a))
			return msg_fail(msg, msglen, "identity %s: actions must be strings", name);
		if (!parse_grant(a->u.string, id, msg, msglen))
			return false;
	}
	return true;
}

struct s3_iam *s3_iam_parse(const char *text, size_t len, char *msg, size_t msglen)
{
	static const char *const keys[] = {"identities", NULL};
	struct s3_iam *iam = iam_new();
	char err[128];
	yajl_val root, ids;

	if (msglen)
		msg[0] = '\0';
	root = json_parse(text, len, err, sizeof(err));
	if (!root) {
		msg_fail(msg, msglen, "not JSON: %s", err);
		goto bad;
	}
	if (!only_keys(root, keys, "the document", msg, msglen))
		goto bad;
	ids = json_get(root, "identities");
	if (ids && !YAJL_IS_ARRAY(ids)) {
		msg_fail(msg, msglen, "\"identities\" must be an array");
		goto bad;
	}
	for (size_t i = 0; ids && i < ids->u.array.len; i++) {
		struct s3_identity *id;
		iam->v = xrealloc(iam->v, (iam->n + 1) * sizeof(*iam->v));
		id = &iam->v[iam->n++];
		memset(id, 0, sizeof(*id));
		if (!parse_identity(ids->u.array.values[i], id, msg, msglen))
			goto bad;
		for (size_t k = 0; k < id->n_keys; k++) {
			const char *unused;
			const struct s3_identity *other =
				s3_iam_lookup(iam, id->access[k], &unused);
			if (other && other != id) {
				msg_fail(msg, msglen, "access key %s belongs to two identities",
				     id->access[k]);
				goto bad;
			}
		}
	}
	yajl_tree_free(root);
	return iam;
bad:
	if (root)
		yajl_tree_free(root);
	s3_iam_free(iam);
	return NULL;
}

struct s3_iam *s3_iam_load(const char *path, char *msg, size_t msglen)
{
	struct s3_iam *iam;
	buf b = BUF_INIT;
	char chunk[8192];
	size_t n;
	FILE *f;

	if (!path || !*path)
		return iam_new();
	f = fopen(path, "r");
	if (!f) {
		msg_fail(msg, msglen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0 && b.len <= IAM_FILE_MAX)
		buf_append(&b, chunk, n);
	fclose(f);
	if (b.len > IAM_FILE_MAX) {
		buf_free(&b);
		msg_fail(msg, msglen, "%s: larger than %u bytes", path, IAM_FILE_MAX);
		return NULL;
	}
	iam = s3_iam_parse(b.data ? b.data : "", b.len, msg, msglen);
	buf_free(&b);
	return iam;
}

void s3_iam_add_admin(struct s3_iam *iam, const char *name, const char *access_key,
		      const char *secret_key)
{
	struct s3_identity *id;
	iam->v = xrealloc(iam->v, (iam->n + 1) * sizeof(*iam->v));
	id = &iam->v[iam->n++];
	memset(id, 0, sizeof(*id));
	id->name = xstrdup(name);
	id->access = xmalloc(sizeof(char *));
	id->secret = xmalloc(sizeof(char *));
	id->access[0] = xstrdup(access_key);
	id->secret[0] = xstrdup(secret_key);
	id->n_keys = 1;
	id->admin = true;
}

bool s3_iam_is_open(const struct s3_iam *iam) { return iam->n == 0; }

size_t s3_iam_count(const struct s3_iam *iam) { return iam->n; }

const struct s3_identity *s3_iam_lookup(const struct s3_iam *iam, const char *access_key,
					const char **secret)
{
	for (size_t i = 0; i < iam->n; i++)
		for (size_t k = 0; k < iam->v[i].n_keys; k++)
			if (!strcmp(iam->v[i].access[k], access_key)) {
				*secret = iam->v[i].secret[k];
				return &iam->v[i];
			}
	return NULL;
}

const struct s3_identity *s3_iam_find(const struct s3_iam *iam, const char *name)
{
	for (size_t i = 0; i < iam->n; i++)
		if (!strcmp(iam->v[i].name, name))
			return &iam->v[i];
	return NULL;
}

const char *s3_identity_name(const struct s3_identity *id) { return id->name; }

const char *s3_identity_email(const struct s3_identity *id) { return id->email; }

const struct s3_identity *s3_iam_at(const struct s3_iam *iam, size_t i)
{
	return i < iam->n ? &iam->v[i] : NULL;
}

static bool bucket_matches(const char *pattern, const char *bucket)
{
	size_t n = strlen(pattern);
	if (n && pattern[n - 1] == '*')
		return !strncmp(pattern, bucket, n - 1);
	return !strcmp(pattern, bucket);
}

bool s3_identity_allows(const struct s3_identity *id, enum s3_action a, const char *bucket)
{
	if (id->admin)
		return true;
	for (size_t i = 0; i < id->n_grants; i++) {
		const struct grant *g = &id->grants[i];
		if (g->action != a && g->action != S3_ACT_ADMIN)
			continue;
		if (!g->bucket || (bucket && *bucket && bucket_matches(g->bucket, bucket)))
			return true;
	}
	return false;
}

/* A new identity at the end of iam's list, zeroed. */
static struct s3_identity *identity_add(struct s3_iam *iam, const char *name)
{
	struct s3_identity *id;
	iam->v = xrealloc(iam->v, (iam->n + 1) * sizeof(*iam->v));
	id = &iam->v[iam->n++];
	memset(id, 0, sizeof(*id));
	id->name = xstrdup(name);
	return id;
}

static void key_add(struct s3_identity *id, const char *ak, const char *sk)
{
	id->access = xrealloc(id->access, (id->n_keys + 1) * sizeof(char *));
	id->secret = xrealloc(id->secret, (id->n_keys + 1) * sizeof(char *));
	id->access[id->n_keys] = xstrdup(ak);
	id->secret[id->n_keys] = xstrdup(sk);
	id->n_keys++;
}

struct s3_iam *s3_iam_clone(const struct s3_iam *src)
{
	struct s3_iam *iam = iam_new();
	for (size_t i = 0; i < src->n; i++) {
		const struct s3_identity *from = &src->v[i];
		struct s3_identity *id = identity_add(iam, from->name);
		for (size_t k = 0; k < from->n_keys; k++)
			key_add(id, from->access[k], from->secret[k]);
		id->grants = xcalloc(from->n_grants ? from->n_grants : 1, sizeof(*id->grants));
		for (size_t k = 0; k < from->n_grants; k++) {
			id->grants[k].action = from->grants[k].action;
			id->grants[k].bucket =
				from->grants[k].bucket ? xstrdup(from->grants[k].bucket) : NULL;
		}
		id->n_grants = from->n_grants;
		id->admin = from->admin;
		id->email = from->email ? xstrdup(from->email) : NULL;
		/* only the static identities are cloned: they carry no policies */
	}
	return iam;
}

bool s3_iam_add_user(struct s3_iam *iam, const struct s3_iam_user *u, char *msg, size_t msglen)
{
	struct s3_identity *id;
	if (s3_iam_find(iam, u->name))
		return msg_fail(msg, msglen, "user %s: the identities file has one of that name",
				u->name);
	id = identity_add(iam, u->name);
	id->stored = true;
	for (size_t k = 0; k < u->n_keys; k++) {
		const char *unused;
		/* an inactive key is not there for the signature check: InvalidAccessKeyId */
		if (u->keys[k].active && !s3_iam_lookup(iam, u->keys[k].id, &unused))
			key_add(id, u->keys[k].id, u->keys[k].secret);
	}
	id->pol = xcalloc(u->n_pols ? u->n_pols : 1, sizeof(*id->pol));
	for (size_t k = 0; k < u->n_pols; k++) {
		char why[160];
		struct bucket_policy *p = bucket_policy_parse_identity(
			u->pol_doc[k], strlen(u->pol_doc[k]), why, sizeof(why));
		if (p)
			id->pol[id->n_pol++] = p;
	}
	return true;
}

bool s3_identity_stored(const struct s3_identity *id) { return id->stored; }

bool s3_identity_has_policies(const struct s3_identity *id) { return id->n_pol > 0; }

unsigned s3_identity_policy_needs(const struct s3_identity *id)
{
	unsigned needs = 0;
	for (size_t i = 0; id && i < id->n_pol; i++)
		needs |= bucket_policy_needs(id->pol[i]);
	return needs;
}

enum policy_effect s3_identity_policy_eval(const struct s3_identity *id,
					   const struct policy_request *pr)
{
	enum policy_effect eff = POLICY_NO_MATCH;
	for (size_t i = 0; i < id->n_pol && eff != POLICY_DENY; i++) {
		enum policy_effect e = bucket_policy_eval(id->pol[i], pr);
		if (e != POLICY_NO_MATCH)
			eff = e;
	}
	return eff;
}
