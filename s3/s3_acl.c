/*
 * Bucket owners, ACLs, Object Ownership and the Public Access Block: the
 * ?acl, ?ownershipControls and ?publicAccessBlock subresources, the ACL
 * headers of writes, and what owners and grants add to the authorization
 * of s3_policy.c.
 *
 * DESIGN: all of it is xattrs, read from the bucket entry the authorization
 * holds anyway: s3.owner (the identity that made the bucket through S3),
 * s3.ownership (the Object Ownership rule), s3.pab (the four Public Access
 * Block flags as "0"/"1" characters) and s3.acl (acl.h's stored form) on the
 * bucket directory and on each object. A bucket's owner has every right on
 * it and on every object in it (a policy's Deny aside), whatever the rule:
 * a simplification of ObjectWriter, where S3 leaves the bucket owner only
 * what the object's ACL gives. Under BucketOwnerEnforced, S3's default for
 * new buckets, ACLs are ignored; otherwise the bucket's ACL gives READ (list)
 * and WRITE (put and delete objects), an object's its READ, and both the
 * _ACP rights. An object's ACL is read only when nothing else allowed the
 * request, so it costs a lookup only there. Buckets with no s3.owner (made
 * through the filer, or before owners) have no owner: only grants, policies
 * and ACLs; their ACL reads show the gateway's first Admin identity.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include "client/filer_meta.h"
#include "s3/acl.h"
#include "s3/s3_int.h"
#include "s3/s3_meta.h"
#include "util.h"

#define X_OWNER     "s3.owner"
#define X_OWNERSHIP "s3.ownership"
#define X_PAB       "s3.pab"

/* The owner shown for buckets with none recorded when no identity is an Admin. */
#define FIXED_OWNER "weedfs"

static const char *const ownership_names[] = {
	[S3_OWN_NONE] = "",
	[S3_OWN_ENFORCED] = "BucketOwnerEnforced",
	[S3_OWN_PREFERRED] = "BucketOwnerPreferred",
	[S3_OWN_WRITER] = "ObjectWriter",
};

static const char *const pab_names[4] = {"BlockPublicAcls", "IgnorePublicAcls",
					 "BlockPublicPolicy", "RestrictPublicBuckets"};

/* ---- what the bucket entry says ---- */

/* xattr name of e as a string (caller frees), or NULL. */
static char *xattr_string(const struct filer_entry *e, const char *name)
{
	const struct filer_xattr *x = e ? filer_entry_xattr_get(e, name) : NULL;
	if (!x || !x->value_len || memchr(x->value, '\0', x->value_len))
		return NULL;
	return xstrndup((const char *)x->value, x->value_len);
}

static bool xattr_is(const struct filer_entry *e, const char *name, const char *v)
{
	const struct filer_xattr *x = e ? filer_entry_xattr_get(e, name) : NULL;
	return x && x->value_len == strlen(v) && !memcmp(x->value, v, x->value_len);
}

enum s3_ownership s3_bucket_ownership(const struct filer_entry *b)
{
	for (size_t i = S3_OWN_ENFORCED; i < ARRAY_LEN(ownership_names); i++)
		if (xattr_is(b, X_OWNERSHIP, ownership_names[i]))
			return (enum s3_ownership)i;
	return S3_OWN_NONE;
}

bool s3_pab_flag(const struct filer_entry *b, enum s3_pab f)
{
	const struct filer_xattr *x = b ? filer_entry_xattr_get(b, X_PAB) : NULL;
	return x && x->value_len == 4 && x->value[f] == '1';
}

bool s3_owns_bucket(const struct s3_req *r, const struct filer_entry *b)
{
	return r->who && xattr_is(b, X_OWNER, s3_identity_name(r->who));
}

/* The recorded owner of b (caller frees), or NULL. */
static char *owner_recorded(const struct filer_entry *b) { return xattr_string(b, X_OWNER); }

/* The owner ACL reads show for b: recorded, else the first Admin identity, else fixed. */
static char *owner_shown(const struct s3_req *r, const struct filer_entry *b)
{
	char *o = owner_recorded(b);
	const struct s3_identity *id;
	if (o)
		return o;
	for (size_t i = 0; (id = s3_iam_at(r->iam, i)); i++)
		if (s3_identity_allows(id, S3_ACT_ADMIN, NULL))
			return xstrdup(s3_identity_name(id));
	return xstrdup(FIXED_OWNER);
}

/* ---- reading ACLs from a request ---- */

static enum s3_err resolve(void *ctx, bool email, const char *value, char **name)
{
	const struct s3_iam *iam = ctx;
	const struct s3_identity *id;
	char cid[65];
	for (size_t i = 0; (id = s3_iam_at(iam, i)); i++) {
		if (email) {
			const char *e = s3_identity_email(id);
			if (e && !strcasecmp(e, value)) {
				*name = xstrdup(s3_identity_name(id));
				return S3_OK;
			}
			continue;
		}
		acl_canonical_id(s3_identity_name(id), cid);
		if (!strcmp(cid, value)) {
			*name = xstrdup(s3_identity_name(id));
			return S3_OK;
		}
	}
	return email ? S3_UNRESOLVABLE_EMAIL : S3_INVALID_ARGUMENT;
}

static const struct {
	const char *header;
	unsigned perm;
} grant_headers[] = {
	{"x-amz-grant-read", ACL_READ},
	{"x-amz-grant-write", ACL_WRITE},
	{"x-amz-grant-read-acp", ACL_READ_ACP},
	{"x-amz-grant-write-acp", ACL_WRITE_ACP},
	{"x-amz-grant-full-control", ACL_FULL},
};

/* Whether r carries x-amz-acl or an x-amz-grant-* header (a POST form: those fields). */
static bool acl_headers_given(const struct s3_req *r)
{
	if (s3_req_field(r, "x-amz-acl"))
		return true;
	for (size_t i = 0; i < ARRAY_LEN(grant_headers); i++)
		if (s3_req_field(r, grant_headers[i].header))
			return true;
	return false;
}

/*
 * The ACL r's headers give (for a bucket or an object) into a; *given false
 * when there are none (a left empty). False with r's error answer.
 */
static bool acl_from_headers(struct s3_req *r, bool bucket, struct s3_acl *a, bool *given)
{
	const char *canned = s3_req_field(r, "x-amz-acl");
	bool grants = false;
	char msg[256];
	enum s3_err e;

	memset(a, 0, sizeof(*a));
	*given = acl_headers_given(r);
	for (size_t i = 0; i < ARRAY_LEN(grant_headers); i++) {
		const char *v = s3_req_field(r, grant_headers[i].header);
		if (!v)
			continue;
		grants = true;
		if (canned)
			break;
		if ((e = acl_parse_grant_header(v, grant_headers[i].perm, resolve, r->iam, a, msg,
						sizeof(msg)))) {
			s3_error(r, e, "%s", msg);
			acl_free(a);
			return false;
		}
	}
	if (canned && grants) {
		s3_error(r, S3_INVALID_REQUEST,
			 "Specifying both Canned ACLs and Header Grants is not allowed");
		acl_free(a);
		return false;
	}
	if (canned && !acl_canned(canned, bucket, a)) {
		s3_error(r, S3_INVALID_ARGUMENT, "The canned ACL %.64s is not valid", canned);
		acl_free(a);
		return false;
	}
	return true;
}

/* Whether ACL a may be set under b's rule and Public Access Block; else r answered. */
static bool acl_settable(struct s3_req *r, const struct filer_entry *b, const struct s3_acl *a)
{
	if (s3_bucket_ownership(b) == S3_OWN_ENFORCED && !acl_is_owner_only(a)) {
		s3_error(r, S3_ACL_NOT_SUPPORTED, "The bucket does not allow ACLs");
		return false;
	}
	if (s3_pab_flag(b, S3_PAB_BLOCK_ACLS) && acl_is_public(a)) {
		s3_error(r, S3_ACCESS_DENIED, "Access Denied: public ACLs are blocked");
		return false;
	}
	return true;
}

bool s3_acl_write_ok(struct s3_req *r, const struct filer_entry *b)
{
	struct s3_acl a;
	bool given, ok;
	if (!acl_headers_given(r) || (!r->key && !http_req_query(r->req, "acl")))
		return true; /* CreateBucket's are checked as it makes the bucket */
	if (!acl_from_headers(r, !r->key, &a, &given))
		return false;
	ok = acl_settable(r, b, &a);
	acl_free(&a);
	return ok;
}

bool s3_acl_header(struct s3_req *r, struct filer_entry *into)
{
	struct s3_acl a;
	bool given;
	buf enc = BUF_INIT;
	if (!acl_from_headers(r, false, &a, &given))
		return false;
	if (!given && !r->who)
		return true; /* anonymous, nothing asked: the bucket's owner owns it */
	if (!given) {
		/* under BucketOwnerEnforced (new buckets) the writer owns nothing: no record,
		   when the entry the authorization just read is still cached */
		struct filer_entry *b = NULL;
		bool enforced = s3_bucket_peek(r->g, r->bucket, &b) &&
				s3_bucket_ownership(b) == S3_OWN_ENFORCED;
		filer_entry_free(b);
		if (enforced)
			return true;
	}
	if (!given)
		acl_canned("private", false, &a);
	if (r->who)
		a.owner = xstrdup(s3_identity_name(r->who));
	acl_encode(&a, &enc);
	filer_entry_xattr_set(into, S3_XATTR_ACL, enc.data, enc.len);
	buf_free(&enc);
	acl_free(&a);
	return true;
}

/* ---- CreateBucket ---- */

bool s3_bucket_create_xattrs(struct s3_req *r, struct filer_entry *into)
{
	const char *rule = http_req_header(r->req, "x-amz-object-ownership");
	enum s3_ownership own = S3_OWN_ENFORCED;
	struct s3_acl a;
	bool given;
	buf enc = BUF_INIT;

	if (rule) {
		for (own = S3_OWN_ENFORCED; own < ARRAY_LEN(ownership_names); own++)
			if (!strcmp(rule, ownership_names[own]))
				break;
		if (own == ARRAY_LEN(ownership_names)) {
			s3_error(r, S3_INVALID_ARGUMENT, "Invalid x-amz-object-ownership %.64s",
				 rule);
			return false;
		}
	}
	if (!acl_from_headers(r, true, &a, &given))
		return false;
	if (given && own == S3_OWN_ENFORCED && !acl_is_owner_only(&a)) {
		s3_error(r, S3_INVALID_ACL_OWNERSHIP,
			 "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced "
			 "setting");
		acl_free(&a);
		return false;
	}
	if (given) {
		acl_encode(&a, &enc);
		filer_entry_xattr_set(into, S3_XATTR_ACL, enc.data, enc.len);
	}
	if (r->who)
		filer_entry_xattr_set(into, X_OWNER, s3_identity_name(r->who),
				      strlen(s3_identity_name(r->who)));
	filer_entry_xattr_set(into, X_OWNERSHIP, ownership_names[own],
			      strlen(ownership_names[own]));
	buf_free(&enc);
	acl_free(&a);
	return true;
}

enum s3_bucket_claim s3_bucket_claim(const struct s3_req *r, const struct filer_entry *b)
{
	char *o = owner_recorded(b);
	enum s3_bucket_claim c;
	if (o)
		c = r->who && !strcmp(o, s3_identity_name(r->who)) ? S3_CLAIM_MINE
								   : S3_CLAIM_OTHERS;
	else
		c = s3_iam_is_open(r->iam) ||
				    (r->who && s3_identity_allows(r->who, S3_ACT_ADMIN, r->bucket))
			    ? S3_CLAIM_MINE
			    : S3_CLAIM_OTHERS;
	free(o);
	return c;
}

/* ---- the decision ---- */

/* The ACL permission action needs, and whether on the object (else the bucket); 0: none. */
static unsigned perm_needed(const char *action, bool key, bool *on_object)
{
	*on_object = false;
	if (!strcmp(action, "s3:PutObject") || !strcmp(action, "s3:DeleteObject") ||
	    !strcmp(action, "s3:DeleteObjectVersion") || !strcmp(action, "s3:AbortMultipartUpload"))
		return ACL_WRITE;
	if (!key) {
		if (!strcmp(action, "s3:ListBucket") || !strcmp(action, "s3:ListBucketVersions") ||
		    !strcmp(action, "s3:ListBucketMultipartUploads"))
			return ACL_READ;
		if (!strcmp(action, "s3:GetBucketAcl"))
			return ACL_READ_ACP;
		return !strcmp(action, "s3:PutBucketAcl") ? ACL_WRITE_ACP : 0;
	}
	*on_object = true;
	if (!strcmp(action, "s3:GetObject") || !strcmp(action, "s3:GetObjectVersion"))
		return ACL_READ;
	if (!strcmp(action, "s3:GetObjectAcl") || !strcmp(action, "s3:GetObjectVersionAcl"))
		return ACL_READ_ACP;
	if (!strcmp(action, "s3:PutObjectAcl") || !strcmp(action, "s3:PutObjectVersionAcl"))
		return ACL_WRITE_ACP;
	return ACL_FULL; /* the object's other operations: its owner's */
}

/* e's ACL into a (private to the bucket owner when none is stored). */
static void acl_of(const struct filer_entry *e, struct s3_acl *a)
{
	const struct filer_xattr *x = e ? filer_entry_xattr_get(e, S3_XATTR_ACL) : NULL;
	if (!x || !acl_decode((const char *)x->value, x->value_len, a)) {
		memset(a, 0, sizeof(*a));
		acl_canned("private", e && !S_ISREG(e->attr.mode), a);
	}
}

bool s3_acl_log_delivery_writes(const struct filer_entry *b)
{
	struct s3_acl a;
	bool writes = false;
	acl_of(b, &a);
	for (size_t i = 0; i < a.n && !writes; i++)
		writes = a.g[i].who == ACL_LOG_DELIVERY && (a.g[i].perm & ACL_WRITE);
	acl_free(&a);
	return writes && s3_bucket_ownership(b) != S3_OWN_ENFORCED; /* ACLs off: ignored */
}

/* The owner of the object whose ACL is a in a bucket of rule own owned by bucket_owner. */
static const char *object_owner(const struct s3_acl *a, enum s3_ownership own,
				const char *bucket_owner)
{
	if (own == S3_OWN_ENFORCED || !a->owner)
		return bucket_owner;
	if (own == S3_OWN_PREFERRED)
		for (size_t i = 0; i < a->n; i++)
			if (a->g[i].who == ACL_BUCKET_OWNER && a->g[i].perm == ACL_FULL)
				return bucket_owner;
	return a->owner;
}

/* r's object (its ?versionId's version, if any) in bucket, or NULL. Worker. */
static struct filer_entry *object_entry(struct s3_req *r, const char *bucket, const char *key)
{
	const char *vid = http_req_query(r->req, "versionId");
	struct filer_entry *e = NULL;
	if (vid && *vid && strcmp(vid, "null")) {
		if (s3_version_read(r->g, bucket, key, vid, &e))
			e = NULL;
	} else {
		char *path = s3_object_path(bucket, key);
		if (!path || filer_meta_lookup(r->g->filer, path, &e))
			e = NULL;
		free(path);
	}
	return e;
}

int s3_acl_decide(struct s3_req *r, const struct filer_entry *b, const char *bucket,
		  const char *key, const char *action, bool may_block)
{
	const char *who = r->who ? s3_identity_name(r->who) : NULL;
	enum s3_ownership own;
	bool on_object, ignore;
	unsigned need, have;
	char *bowner;
	struct s3_acl a;
	int ok;

	if (!b)
		return 0;
	if (s3_owns_bucket(r, b))
		return 1;
	own = s3_bucket_ownership(b);
	need = perm_needed(action, key != NULL, &on_object);
	if (!need || own == S3_OWN_ENFORCED)
		return 0; /* ACLs disabled: the owner's, the grants' and policies' only */
	if (on_object && !may_block)
		return -1;
	ignore = s3_pab_flag(b, S3_PAB_IGNORE_ACLS);
	bowner = owner_recorded(b);
	if (!on_object) {
		acl_of(b, &a);
		have = acl_perms(&a, who, bowner, bowner, ignore);
		ok = (have & need) == need;
	} else {
		struct filer_entry *e = object_entry(r, bucket, key);
		const char *owner;
		acl_of(e, &a);
		owner = object_owner(&a, own, bowner);
		have = acl_perms(&a, who, owner, bowner, ignore);
		if (who && owner && !strcmp(who, owner))
			have |= ACL_READ_ACP | ACL_WRITE_ACP; /* an owner's, always */
		ok = e && (have & need) == need;
		filer_entry_free(e);
	}
	acl_free(&a);
	free(bowner);
	return ok;
}

bool s3_acl_lists_bucket(const struct s3_req *r, const struct filer_entry *b)
{
	struct s3_acl a;
	char *bowner;
	bool ok;
	if (s3_owns_bucket(r, b))
		return true;
	if (s3_bucket_ownership(b) == S3_OWN_ENFORCED || !r->who)
		return false;
	bowner = owner_recorded(b);
	acl_of(b, &a);
	ok = acl_perms(&a, s3_identity_name(r->who), bowner, bowner,
		       s3_pab_flag(b, S3_PAB_IGNORE_ACLS)) != 0;
	acl_free(&a);
	free(bowner);
	return ok;
}

/* ---- ?acl ---- */

void s3_get_acl(struct s3_req *r)
{
	struct filer_entry *b = s3_bucket_entry(r), *e = NULL;
	struct s3_acl a = {0};
	char *bowner, *path = NULL;
	const char *owner;
	enum s3_ownership own;
	xml_w *w;

	if (!b)
		return;
	own = s3_bucket_ownership(b);
	bowner = owner_shown(r, b);
	if (r->key && !(e = s3_version_target(r, &path)))
		goto out;
	if (own == S3_OWN_ENFORCED) {
		acl_canned("private", !r->key, &a); /* ACLs disabled: the owner's full control */
		owner = bowner;
	} else {
		acl_of(r->key ? e : b, &a);
		owner = r->key ? object_owner(&a, own, bowner) : bowner;
	}
	w = xml_w_new(&r->body);
	acl_xml(&a, w, owner, bowner);
	s3_xml_ok(r, w);
out:
	acl_free(&a);
	free(bowner);
	free(path);
	filer_entry_free(e);
	filer_entry_free(b);
}

void s3_put_acl(struct s3_req *r)
{
	struct filer_entry *b = s3_bucket_entry(r), *e = NULL;
	struct s3_acl a = {0};
	char *path = NULL, msg[256];
	bool given;
	buf enc = BUF_INIT;
	wfs_err rc;
	enum s3_err err;

	if (!b)
		return;
	if (!acl_from_headers(r, !r->key, &a, &given))
		goto out;
	if (given && r->in.len) {
		s3_error(r, S3_UNEXPECTED_CONTENT, "This request does not support content");
		goto out;
	}
	if (!given && !r->in.len) {
		s3_error(r, S3_MISSING_SECURITY_HEADER,
			 "Your request was missing a required header: an ACL header or body");
		goto out;
	}
	if (!given && (err = acl_parse_xml(r->in.data, r->in.len, resolve, r->iam, &a, msg,
					   sizeof(msg)))) {
		s3_error(r, err, "%s", msg);
		goto out;
	}
	if (!acl_settable(r, b, &a))
		goto out;
	if (r->key) {
		struct s3_acl old;
		if (!(e = s3_version_target(r, &path)))
			goto out;
		acl_of(e, &old); /* the object keeps its owner */
		a.owner = old.owner ? xstrdup(old.owner) : NULL;
		acl_free(&old);
	} else {
		path = s3_bucket_path(r->bucket);
	}
	acl_encode(&a, &enc);
	rc = filer_meta_set_xattr(r->g->filer, path, S3_XATTR_ACL, enc.data, enc.len,
				  FM_XATTR_ANY);
	if (!r->key)
		s3_bucket_forget(r->g, r->bucket);
	if (rc)
		s3_filer_error(r, rc, "storing the ACL");
	else
		r->status = 200;
	if (r->key && !rc)
		s3_version_headers(r, e);
out:
	buf_free(&enc);
	acl_free(&a);
	free(path);
	filer_entry_free(e);
	filer_entry_free(b);
}

/* ---- ?ownershipControls ---- */

void s3_put_ownership(struct s3_req *r)
{
	struct xml_node *root = NULL;
	const struct xml_node *rule;
	const char *v;
	size_t own = ARRAY_LEN(ownership_names);
	struct filer_entry *b;
	buf doc = BUF_INIT;

	if (!xml_parse(r->in.data ? r->in.data : "", r->in.len, NULL, &root, NULL, 0) &&
	    !strcmp(root->name, "OwnershipControls") && (rule = xml_child(root, "Rule")) &&
	    !xml_next(rule, "Rule") && (v = xml_child_text(rule, "ObjectOwnership")))
		for (own = S3_OWN_ENFORCED; own < ARRAY_LEN(ownership_names); own++)
			if (!strcmp(v, ownership_names[own]))
				break;
	xml_free(root);
	if (own == ARRAY_LEN(ownership_names)) {
		s3_error(r, S3_MALFORMED_XML,
			 "The XML you provided was not well-formed or did not validate against "
			 "our published schema");
		return;
	}
	if (!(b = s3_bucket_entry(r)))
		return;
	if (own == S3_OWN_ENFORCED) {
		/* ACLs go away: a bucket ACL that gives anyone else a right must go first */
		struct s3_acl a;
		bool others;
		acl_of(b, &a);
		others = !acl_is_owner_only(&a);
		acl_free(&a);
		if (others) {
			s3_error(r, S3_INVALID_ACL_OWNERSHIP,
				 "The bucket ACL grants access to others: reset it to private "
				 "before setting BucketOwnerEnforced");
			filer_entry_free(b);
			return;
		}
	}
	filer_entry_free(b);
	buf_append(&doc, ownership_names[own], strlen(ownership_names[own]));
	s3_bucket_config_set(r, X_OWNERSHIP, &doc, "storing the ownership controls");
	buf_free(&doc);
}

void s3_get_ownership(struct s3_req *r)
{
	struct filer_entry *b = s3_bucket_entry(r);
	enum s3_ownership own = b ? s3_bucket_ownership(b) : S3_OWN_NONE;
	xml_w *w;
	if (b && own == S3_OWN_NONE)
		s3_error(r, S3_NO_OWNERSHIP, "The bucket ownership controls were not found");
	if (own != S3_OWN_NONE) {
		w = xml_w_new(&r->body);
		xml_open_s3(w, "OwnershipControls");
		xml_open(w, "Rule");
		xml_elem(w, "ObjectOwnership", ownership_names[own]);
		s3_xml_ok(r, w);
	}
	filer_entry_free(b);
}

void s3_delete_ownership(struct s3_req *r)
{
	s3_bucket_config_remove(r, X_OWNERSHIP, "removing the ownership controls");
}

/* ---- ?publicAccessBlock ---- */

void s3_put_pab(struct s3_req *r)
{
	struct xml_node *root = NULL;
	char flags[5] = "0000";
	bool ok;
	buf doc = BUF_INIT;

	ok = !xml_parse(r->in.data ? r->in.data : "", r->in.len, NULL, &root, NULL, 0) &&
	     !strcmp(root->name, "PublicAccessBlockConfiguration");
	for (size_t i = 0; ok && i < ARRAY_LEN(pab_names); i++) {
		const char *v = xml_child_text(root, pab_names[i]);
		if (v && !strcmp(v, "true"))
			flags[i] = '1';
		else if (v && strcmp(v, "false"))
			ok = false;
	}
	xml_free(root);
	if (!ok) {
		s3_error(r, S3_MALFORMED_XML,
			 "The XML you provided was not well-formed or did not validate against "
			 "our published schema");
		return;
	}
	buf_append(&doc, flags, 4);
	s3_bucket_config_set(r, X_PAB, &doc, "storing the public access block");
	buf_free(&doc);
}

void s3_get_pab(struct s3_req *r)
{
	struct filer_entry *b = s3_bucket_entry(r);
	const struct filer_xattr *x = b ? filer_entry_xattr_get(b, X_PAB) : NULL;
	xml_w *w;
	if (b && !x)
		s3_error(r, S3_NO_SUCH_PAB, "The public access block configuration was not found");
	if (x) {
		w = xml_w_new(&r->body);
		xml_open_s3(w, "PublicAccessBlockConfiguration");
		for (size_t i = 0; i < ARRAY_LEN(pab_names); i++)
			xml_elem_bool(w, pab_names[i], s3_pab_flag(b, (enum s3_pab)i));
		s3_xml_ok(r, w);
	}
	filer_entry_free(b);
}

void s3_delete_pab(struct s3_req *r)
{
	s3_bucket_config_remove(r, X_PAB, "removing the public access block");
}
