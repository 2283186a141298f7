/*
 * Bucket policies: Put/Get/DeleteBucketPolicy, and the authorization of every
 * request on a bucket by its policy together with the identities' grants.
 *
 * DESIGN: the policy is the bucket directory's s3.policy xattr, validated by
 * bucket_policy.c when put. A request is authorized on a worker, where the
 * bucket's entry comes from the cache of s3_bucket_cache.c: the policy's
 * explicit Deny wins; else its Allow, or the identity's grant (the -config
 * actions, or an open gateway), lets the request through. So a policy can
 * open a bucket to anonymous requests ("Principal": "*") or close part of it
 * to everyone. The bucket's owner and its ACLs (s3_acl.c) allow like a grant
 * does. An Admin identity or the bucket's owner may always read, change and
 * remove the policy itself, so a policy that denies everything can be undone.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "client/filer_meta.h"
#include "log.h"
#include "s3/acl.h"
#include "s3/bucket_policy.h"
#include "s3/s3_int.h"
#include "s3/s3_session_gw.h"
#include "util.h"

#define X_POLICY S3_XATTR_POLICY

/* ---- configuration ---- */

void s3_put_policy(struct s3_req *r)
{
	struct bucket_policy *p;
	char msg[256] = "";

	if (!s3_bucket_exists(r))
		return;
	if (r->in.len > BUCKET_POLICY_MAX) {
		s3_error(r, S3_MALFORMED_POLICY, "Policies may be at most %u bytes",
			 BUCKET_POLICY_MAX);
		return;
	}
	p = bucket_policy_parse(r->in.data ? r->in.data : "", r->in.len, r->bucket, msg,
				sizeof(msg));
	if (!p) {
		s3_error(r, S3_MALFORMED_POLICY, "%s", msg);
		return;
	}
	if (bucket_policy_is_public(p)) {
		struct filer_entry *b = s3_bucket_entry(r);
		bool blocked = b && s3_pab_flag(b, S3_PAB_BLOCK_POLICY);
		filer_entry_free(b);
		if (blocked) {
			s3_error(r, S3_ACCESS_DENIED, "Access Denied: public policies are blocked");
			bucket_policy_free(p);
			return;
		}
	}
	bucket_policy_free(p);
	s3_bucket_config_set(r, X_POLICY, &r->in, "storing the bucket policy");
	if (r->status == 200)
		r->status = 204;
}

void s3_get_policy(struct s3_req *r)
{
	struct filer_entry *b = s3_bucket_entry(r);
	const struct filer_xattr *x = b ? filer_entry_xattr_get(b, X_POLICY) : NULL;
	if (b && !x)
		s3_error(r, S3_NO_SUCH_POLICY, "The bucket policy does not exist");
	if (x) {
		buf_append(&r->body, x->value, x->value_len);
		r->ctype = "application/json";
		r->status = 200;
	}
	filer_entry_free(b);
}

void s3_get_policy_status(struct s3_req *r)
{
	struct filer_entry *b = s3_bucket_entry(r);
	const struct filer_xattr *x = b ? filer_entry_xattr_get(b, X_POLICY) : NULL;
	struct bucket_policy *p;
	char msg[128];
	xml_w *w;
	if (b && !x)
		s3_error(r, S3_NO_SUCH_POLICY, "The bucket policy does not exist");
	if (x) {
		p = bucket_policy_parse((const char *)x->value, x->value_len, r->bucket, msg,
					sizeof(msg));
		w = xml_w_new(&r->body);
		xml_open_s3(w, "PolicyStatus");
		xml_elem_bool(w, "IsPublic", bucket_policy_is_public(p));
		s3_xml_ok(r, w);
		bucket_policy_free(p);
	}
	filer_entry_free(b);
}

void s3_delete_policy(struct s3_req *r)
{
	s3_bucket_config_remove(r, X_POLICY, "removing the bucket policy");
}

/* ---- what a request is, in a policy's words ---- */

static bool has(const struct s3_req *r, const char *param)
{
	return http_req_query(r->req, param) != NULL;
}

/* The action a bucket-level request performs. */
static const char *bucket_action(const struct s3_req *r, enum http_method m)
{
	bool get = m == HTTP_GET, put = m == HTTP_PUT;
	if (has(r, "policyStatus"))
		return "s3:GetBucketPolicyStatus";
	if (has(r, "acl"))
		return get ? "s3:GetBucketAcl" : "s3:PutBucketAcl";
	if (has(r, "ownershipControls"))
		return get ? "s3:GetBucketOwnershipControls" : "s3:PutBucketOwnershipControls";
	if (has(r, "publicAccessBlock"))
		return get ? "s3:GetBucketPublicAccessBlock" : "s3:PutBucketPublicAccessBlock";
	if (has(r, "logging"))
		return get ? "s3:GetBucketLogging" : "s3:PutBucketLogging";
	if (has(r, "policy"))
		return get   ? "s3:GetBucketPolicy"
		       : put ? "s3:PutBucketPolicy"
			     : "s3:DeleteBucketPolicy";
	if (has(r, "object-lock"))
		return get ? "s3:GetBucketObjectLockConfiguration"
			   : "s3:PutBucketObjectLockConfiguration";
	if (has(r, "versioning"))
		return get ? "s3:GetBucketVersioning" : "s3:PutBucketVersioning";
	if (has(r, "cors"))
		return get ? "s3:GetBucketCORS" : "s3:PutBucketCORS";
	if (has(r, "encryption"))
		return get ? "s3:GetEncryptionConfiguration" : "s3:PutEncryptionConfiguration";
	if (has(r, "lifecycle"))
		return get ? "s3:GetLifecycleConfiguration" : "s3:PutLifecycleConfiguration";
	if (has(r, "tagging"))
		return get ? "s3:GetBucketTagging" : "s3:PutBucketTagging";
	if (has(r, "location"))
		return "s3:GetBucketLocation";
	if (has(r, "uploads"))
		return "s3:ListBucketMultipartUploads";
	if (has(r, "versions"))
		return "s3:ListBucketVersions";
	if (has(r, "delete"))
		return "s3:DeleteObject";
	return put ? "s3:CreateBucket" : m == HTTP_DELETE ? "s3:DeleteBucket" : "s3:ListBucket";
}

/* The action a request on an object performs. */
static const char *object_action(const struct s3_req *r, enum http_method m)
{
	bool version = has(r, "versionId"), upload = has(r, "uploadId");
	if (has(r, "acl")) {
		if (m == HTTP_GET)
			return version ? "s3:GetObjectVersionAcl" : "s3:GetObjectAcl";
		return version ? "s3:PutObjectVersionAcl" : "s3:PutObjectAcl";
	}
	if (has(r, "tagging")) {
		if (m == HTTP_GET)
			return version ? "s3:GetObjectVersionTagging" : "s3:GetObjectTagging";
		if (m == HTTP_PUT)
			return version ? "s3:PutObjectVersionTagging" : "s3:PutObjectTagging";
		return version ? "s3:DeleteObjectVersionTagging" : "s3:DeleteObjectTagging";
	}
	if (has(r, "retention"))
		return m == HTTP_GET ? "s3:GetObjectRetention" : "s3:PutObjectRetention";
	if (has(r, "legal-hold"))
		return m == HTTP_GET ? "s3:GetObjectLegalHold" : "s3:PutObjectLegalHold";
	switch (m) {
	case HTTP_GET:
		if (upload)
			return "s3:ListMultipartUploadParts";
		if (has(r, "attributes"))
			return version ? "s3:GetObjectVersionAttributes" : "s3:GetObjectAttributes";
		/* fall through */
	case HTTP_HEAD:
		return version ? "s3:GetObjectVersion" : "s3:GetObject";
	case HTTP_DELETE:
		return upload    ? "s3:AbortMultipartUpload"
		       : version ? "s3:DeleteObjectVersion"
				 : "s3:DeleteObject";
	default:
		return "s3:PutObject"; /* PUT, uploads, parts, copies, completes */
	}
}

const char *s3_policy_action(const struct s3_req *r)
{
	enum http_method m = http_req_method(r->req);
	return r->key ? object_action(r, m) : bucket_action(r, m);
}

/*
 * The condition keys of one request: values borrowed from the request, or
 * made for it (own, freed with the context). A key with several values
 * (s3:RequestObjectTagKeys) is added once per value.
 */
struct ctx {
	struct policy_kv *kv;
	size_t n, cap;
	char **own;
	size_t nown;
	char now_iso[32], now_epoch[24], days[24];
};

static void ctx_add(struct ctx *c, const char *key, const char *value)
{
	if (!value)
		return;
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 48;
		c->kv = xrealloc(c->kv, c->cap * sizeof(*c->kv));
	}
	c->kv[c->n++] = (struct policy_kv){key, value};
}

/* s, kept until the context is freed. */
static const char *ctx_keep(struct ctx *c, char *s)
{
	c->own = xrealloc(c->own, (c->nown + 1) * sizeof(*c->own));
	c->own[c->nown++] = s;
	return s;
}

static void ctx_free(struct ctx *c)
{
	for (size_t i = 0; i < c->nown; i++)
		free(c->own[i]);
	free(c->own);
	free(c->kv);
	memset(c, 0, sizeof(*c));
}

struct tag_keys {
	struct ctx *c;
	const char *prefix; /* "s3:RequestObjectTag/" or s3:ExistingObjectTag/ */
	bool keys;          /* and each key as s3:RequestObjectTagKeys */
};

static void add_tag(void *arg, const char *k, const char *v)
{
	struct tag_keys *t = arg;
	const char *name = ctx_keep(t->c, xstrdup(k));

	ctx_add(t->c, ctx_keep(t->c, xasprintf("%s%s", t->prefix, k)), ctx_keep(t->c, xstrdup(v)));
	if (t->keys)
		ctx_add(t->c, "s3:RequestObjectTagKeys", name);
}

/* How r was signed, in s3:authType's and s3:signatureversion's words (NULL: unsigned). */
static void auth_keys(const struct s3_req *r, struct ctx *c)
{
	const char *auth = http_req_header(r->req, "Authorization");
	const char *type = NULL, *ver = NULL;

	if (auth) {
		type = "REST-HEADER";
		ver = !strncmp(auth, "AWS4-HMAC-SHA256", 16) ? "AWS4-HMAC-SHA256"
		      : !strncmp(auth, "AWS ", 4)          ? "AWS"
							   : NULL;
	} else if (http_req_query(r->req, "X-Amz-Signature")) {
		type = "REST-QUERY-STRING";
		ver = "AWS4-HMAC-SHA256";
	} else if (http_req_query(r->req, "Signature")) {
		type = "REST-QUERY-STRING";
		ver = "AWS";
	} else if (r->form_sigver) {
		type = "POST";
		ver = r->form_sigver;
	}
	ctx_add(c, "s3:authType", type);
	ctx_add(c, "s3:signatureversion", ver);
}

/* Whether action reads or changes what an existing object holds (s3:ExistingObjectTag). */
static bool acts_on_existing(const char *action)
{
	static const char *const acts[] = {
		"s3:GetObject",
		"s3:GetObjectVersion",
		"s3:GetObjectTagging",
		"s3:GetObjectVersionTagging",
		"s3:PutObjectTagging",
		"s3:PutObjectVersionTagging",
		"s3:DeleteObjectTagging",
		"s3:DeleteObjectVersionTagging",
		"s3:GetObjectAcl",
		"s3:GetObjectVersionAcl",
		"s3:PutObjectAcl",
		"s3:PutObjectVersionAcl",
	};
	for (size_t i = 0; i < ARRAY_LEN(acts); i++)
		if (!strcmp(action, acts[i]))
			return true;
	return false;
}

/*
 * The tags stored on bucket/key (the version the request names), as
 * s3:ExistingObjectTag/<key>: a filer read, so only for a policy naming such
 * a key. A copy's read of its source names the source's version in
 * x-amz-copy-source. Worker.
 */
static void existing_tags(const struct s3_req *r, struct ctx *c, const char *bucket,
			  const char *key)
{
	const char *src = http_req_header(r->req, "x-amz-copy-source"), *vid = NULL, *q;
	struct filer_entry *e = NULL;
	struct tag_keys t = {c, POLICY_EXISTING_TAG, false};
	char *id = NULL, *path;
	wfs_err rc;

	if (src && (q = strstr(src, "?versionId=")))
		vid = id = xstrdup(q + strlen("?versionId="));
	else if (!src)
		vid = http_req_query(r->req, "versionId");
	if (vid && s3_version_id_ok(vid)) {
		rc = s3_version_read(r->g, bucket, key, vid, &e);
	} else {
		path = s3_object_path(bucket, key);
		rc = path ? filer_meta_lookup(r->g->filer, path, &e) : WFS_ENOENT;
		free(path);
	}
	if (!rc && S_ISREG(e->attr.mode))
		s3_tags_each_entry(e, add_tag, &t);
	filer_entry_free(e);
	free(id);
}

/* The resource a request names: its object's or its bucket's ARN, "*" for none. */
static char *resource_arn(const char *bucket, const char *key)
{
	return key      ? xasprintf("arn:aws:s3:::%s/%s", bucket, key)
	       : bucket ? xasprintf("arn:aws:s3:::%s", bucket)
			: xstrdup("*");
}

/* aws:CurrentTime (ISO 8601, UTC) and aws:EpochTime of now. */
static void time_keys(time_t now, char iso[32], char epoch[24])
{
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(iso, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(epoch, 24, "%lld", (long long)now);
}

/* Seconds from now to an x-amz-object-lock-retain-until-date, in whole days (rounded up). */
static const char *remaining_days(struct ctx *c, const char *until, time_t now)
{
	struct tm tm = {0};
	const char *end = until ? strptime(until, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
	time_t t;

	if (!end)
		return NULL;
	t = timegm(&tm);
	snprintf(c->days, sizeof(c->days), "%lld",
		 t > now ? (long long)((t - now + 86399) / 86400) : 0LL);
	return c->days;
}

/*
 * The condition keys of r acting on bucket/key with action; with needs
 * (bucket_policy_needs) POLICY_NEEDS_OBJECT_TAGS, the object's stored tags
 * too (a filer read: worker).
 */
static void context(const struct s3_req *r, struct ctx *c, const char *bucket, const char *key,
		    const char *action, unsigned needs)
{
	static const char *const query_keys[][2] = {
		{"s3:prefix", "prefix"},
		{"s3:delimiter", "delimiter"},
		{"s3:max-keys", "max-keys"},
		{"s3:versionid", "versionId"},
	};
	static const char *const header_keys[][2] = {
		{"s3:if-none-match", "If-None-Match"},
		{"s3:if-match", "If-Match"},
		{"aws:Referer", "Referer"},
		{"aws:UserAgent", "User-Agent"},
		{"s3:x-amz-content-sha256", "x-amz-content-sha256"},
		{"s3:x-amz-copy-source", "x-amz-copy-source"},
		{"s3:x-amz-metadata-directive", "x-amz-metadata-directive"},
		{"s3:object-lock-mode", "x-amz-object-lock-mode"},
		{"s3:object-lock-retain-until-date", "x-amz-object-lock-retain-until-date"},
		{"s3:object-lock-legal-hold", "x-amz-object-lock-legal-hold"},
	};
	/* what a write asks for of its object: a POST form's fields stand for these */
	static const char *const write_keys[][2] = {
		{"s3:x-amz-acl", "x-amz-acl"},
		{"s3:x-amz-grant-read", "x-amz-grant-read"},
		{"s3:x-amz-grant-write", "x-amz-grant-write"},
		{"s3:x-amz-grant-read-acp", "x-amz-grant-read-acp"},
		{"s3:x-amz-grant-write-acp", "x-amz-grant-write-acp"},
		{"s3:x-amz-grant-full-control", "x-amz-grant-full-control"},
		{"s3:x-amz-storage-class", "x-amz-storage-class"},
		{"s3:x-amz-server-side-encryption", "x-amz-server-side-encryption"},
		{"s3:x-amz-server-side-encryption-aws-kms-key-id",
		 "x-amz-server-side-encryption-aws-kms-key-id"},
		{"s3:x-amz-server-side-encryption-customer-algorithm",
		 "x-amz-server-side-encryption-customer-algorithm"},
	};
	time_t now = time(NULL);
	const char *v;

	/* the gateway speaks plain HTTP only */
	ctx_add(c, "aws:SourceIp", http_req_peer(r->req));
	ctx_add(c, "aws:SecureTransport", "false");
	time_keys(now, c->now_iso, c->now_epoch);
	ctx_add(c, "aws:CurrentTime", c->now_iso);
	ctx_add(c, "aws:EpochTime", c->now_epoch);
	ctx_add(c, "aws:PrincipalType",
		r->session ? "AssumedRole" : r->who ? "User" : "Anonymous");
	if (r->who) {
		ctx_add(c, "aws:username", s3_identity_name(r->who));
		ctx_add(c, "aws:userid", s3_identity_name(r->who));
	}
	auth_keys(r, c);
	for (size_t i = 0; i < ARRAY_LEN(query_keys); i++)
		ctx_add(c, query_keys[i][0], http_req_query(r->req, query_keys[i][1]));
	for (size_t i = 0; i < ARRAY_LEN(header_keys); i++)
		ctx_add(c, header_keys[i][0], http_req_header(r->req, header_keys[i][1]));
	for (size_t i = 0; i < ARRAY_LEN(write_keys); i++)
		ctx_add(c, write_keys[i][0], s3_req_field(r, write_keys[i][1]));
	if ((v = http_req_header(r->req, "x-amz-object-lock-retain-until-date")))
		ctx_add(c, "s3:object-lock-remaining-retention-days", remaining_days(c, v, now));
	if (!key)
		return;
	/* the tags the request gives the object: a write's header or form field, a
	   PutObjectTagging body */
	if (!strcmp(action, "s3:PutObject")) {
		struct tag_keys t = {c, "s3:RequestObjectTag/", true};
		s3_tags_each_write(r, add_tag, &t);
	} else if (!strcmp(action, "s3:PutObjectTagging") ||
		   !strcmp(action, "s3:PutObjectVersionTagging")) {
		struct tag_keys t = {c, "s3:RequestObjectTag/", true};
		s3_tags_each_body(&r->in, add_tag, &t);
	}
	if ((needs & POLICY_NEEDS_OBJECT_TAGS) && acts_on_existing(action))
		existing_tags(r, c, bucket, key);
}

/* ---- authorization ---- */

/*
 * Parsed policies, per thread: parsing the stored JSON for every request cost
 * a 4 KiB GET on a bucket with a three-statement policy a third of its CPU.
 * A slot is matched on the bucket and the policy's exact bytes, so a changed
 * policy (the bucket cache refreshes the entry) is parsed again.
 */
#define POLICY_CACHE_SLOTS 8

struct parsed_policy {
	char *bucket; /* NULL: a free slot */
	char *text;
	size_t len;
	struct bucket_policy *p;
};

struct policy_cache {
	struct parsed_policy slot[POLICY_CACHE_SLOTS];
	unsigned next;
};

static pthread_key_t policy_cache_key;
static pthread_once_t policy_cache_once = PTHREAD_ONCE_INIT;

static void slot_clear(struct parsed_policy *s)
{
	free(s->bucket);
	free(s->text);
	bucket_policy_free(s->p);
	memset(s, 0, sizeof(*s));
}

static void policy_cache_free(void *arg)
{
	struct policy_cache *c = arg;
	for (size_t i = 0; i < POLICY_CACHE_SLOTS; i++)
		slot_clear(&c->slot[i]);
	free(c);
}

static void policy_cache_init(void)
{
	if (pthread_key_create(&policy_cache_key, policy_cache_free))
		fatal("could not set up the policy cache");
}

/* bucket's policy text, parsed (NULL when it does not parse: msg says why); the thread's. */
static const struct bucket_policy *policy_parsed(const char *bucket, const char *text, size_t len,
						 char *msg, size_t msglen)
{
	struct policy_cache *c;
	struct parsed_policy *s;
	struct bucket_policy *p;

	pthread_once(&policy_cache_once, policy_cache_init);
	c = pthread_getspecific(policy_cache_key);
	if (!c) {
		c = xcalloc(1, sizeof(*c));
		if (pthread_setspecific(policy_cache_key, c))
			fatal("out of memory");
	}
	for (size_t i = 0; i < POLICY_CACHE_SLOTS; i++) {
		s = &c->slot[i];
		if (s->bucket && s->len == len && !strcmp(s->bucket, bucket) &&
		    !memcmp(s->text, text, len))
			return s->p;
	}
	p = bucket_policy_parse(text, len, bucket, msg, msglen);
	if (!p)
		return NULL; /* not kept: the warning comes with every request it denies */
	s = &c->slot[c->next++ % POLICY_CACHE_SLOTS];
	slot_clear(s);
	s->bucket = xstrdup(bucket);
	s->text = xmalloc(len ? len : 1);
	memcpy(s->text, text, len);
	s->len = len;
	s->p = p;
	return p;
}

/* The parsed policy of bucket (its entry b, NULL when missing); NULL with *stored when it
   does not parse. */
static const struct bucket_policy *policy_of(const struct filer_entry *b, const char *bucket,
					     bool *stored, char *msg, size_t msglen)
{
	const struct filer_xattr *x = b ? filer_entry_xattr_get(b, X_POLICY) : NULL;

	*stored = x != NULL;
	return x ? policy_parsed(bucket, (const char *)x->value, x->value_len, msg, msglen) : NULL;
}

/* What the policy of bucket (its entry b, NULL when missing) says of action on key. */
static enum policy_effect policy_in(struct s3_req *r, const struct filer_entry *b,
				    const char *bucket, const char *key, const char *action)
{
	char msg[128];
	bool stored;
	const struct bucket_policy *p = policy_of(b, bucket, &stored, msg, sizeof(msg));
	unsigned needs = bucket_policy_needs(p);
	enum policy_effect eff;
	struct ctx c = {0};
	char *resource, canon[65];

	if (!stored)
		return POLICY_NO_MATCH;
	if (!p) {
		/* a stored policy that no longer parses denies rather than opens */
		log_warn("bucket %s: its stored policy does not parse (%s): denying", bucket, msg);
		return POLICY_DENY;
	}
	resource = resource_arn(bucket, key);
	if (r->who && (needs & POLICY_NEEDS_CANONICAL))
		acl_canonical_id(s3_identity_name(r->who), canon);
	context(r, &c, bucket, key, action, needs);
	struct policy_request pr = {
		.principal = r->who ? s3_identity_name(r->who) : NULL,
		.action = action,
		.resource = resource,
		.ctx = c.kv,
		.nctx = c.n,
		.canonical_id = r->who && (needs & POLICY_NEEDS_CANONICAL) ? canon : NULL,
	};
	eff = bucket_policy_eval(p, &pr);
	/* RestrictPublicBuckets: a public policy admits this gateway's identities only */
	if (eff == POLICY_ALLOW && !r->who && s3_pab_flag(b, S3_PAB_RESTRICT) &&
	    bucket_policy_is_public(p))
		eff = POLICY_NO_MATCH;
	ctx_free(&c);
	free(resource);
	return eff;
}

/* The same, reading the bucket's entry (into *out, caller frees; NULL when missing). */
static enum policy_effect policy_says(struct s3_req *r, const char *bucket, const char *key,
				      const char *action, struct filer_entry **out)
{
	struct filer_entry *b = NULL;
	wfs_err rc = s3_bucket_lookup(r->g, bucket, &b);
	*out = NULL;
	if (rc && rc != WFS_ENOENT && rc != WFS_ENOTDIR)
		return POLICY_DENY; /* its policy unknown: fail closed */
	/* a missing bucket has no policy: the operation itself says NoSuchBucket */
	*out = rc ? NULL : b;
	if (rc)
		filer_entry_free(b);
	return policy_in(r, *out, bucket, key, action);
}

enum policy_effect s3_identity_says(struct s3_req *r, const char *bucket, const char *key,
				    const char *action)
{
	struct ctx c = {0};
	char *resource;
	enum policy_effect eff;
	if (!r->who || !s3_identity_has_policies(r->who))
		return POLICY_NO_MATCH;
	resource = resource_arn(bucket, key);
	/* the stored tags are a filer read: s3_authorize_cached leaves such a request to a
	   worker (identity_needs_tags) */
	context(r, &c, bucket, key, action, s3_identity_policy_needs(r->who));
	struct policy_request pr = {
		.principal = s3_identity_name(r->who),
		.action = action,
		.resource = resource,
		.ctx = c.kv,
		.nctx = c.n,
	};
	eff = s3_identity_policy_eval(r->who, &pr);
	ctx_free(&c);
	free(resource);
	return eff;
}

bool s3_service_permitted(struct s3_gateway *g, const char *service, const char *source_bucket,
			  const char *bucket, const char *key, const char *action)
{
	struct filer_entry *b = NULL;
	const struct bucket_policy *p;
	char msg[128], iso[32], epoch[24], *resource, *source;
	bool stored, ok;

	if (s3_bucket_lookup(g, bucket, &b))
		return false;
	p = policy_of(b, bucket, &stored, msg, sizeof(msg));
	time_keys(time(NULL), iso, epoch);
	resource = resource_arn(bucket, key);
	source = xasprintf("arn:aws:s3:::%s", source_bucket ? source_bucket : "");
	/* what AWS gives a service's request; the account is the one the gateway's IAM and
	   STS ARNs carry, so policies written for S3's log delivery hold as written */
	struct policy_kv kv[] = {
		{"aws:SourceArn", source_bucket ? source : NULL},
		{"aws:SourceAccount", "000000000000"},
		{"aws:PrincipalServiceName", service},
		{"aws:PrincipalIsAWSService", "true"},
		{"aws:PrincipalType", "Service"},
		{"aws:SecureTransport", "false"},
		{"aws:CurrentTime", iso},
		{"aws:EpochTime", epoch},
	};
	struct policy_request pr = {
		.action = action,
		.resource = resource,
		.ctx = kv,
		.nctx = ARRAY_LEN(kv),
		.service = service,
	};
	ok = p && bucket_policy_eval(p, &pr) == POLICY_ALLOW;
	free(resource);
	free(source);
	filer_entry_free(b);
	return ok;
}

/* The decision once the bucket policy's effect is known: as AWS, a Deny of the bucket's
   or the identity's policies wins, then an Allow of either, then the identity's grant,
   the bucket's ownership or an ACL (acl: s3_acl_decide's answer), or, for CreateBucket,
   being an identity at all (each may make buckets of its own, as AWS accounts do). */
static bool decide(struct s3_req *r, const char *bucket, const char *key, const char *action,
		   enum s3_action act, enum policy_effect eff, const struct filer_entry *b, int acl)
{
	bool granted = s3_iam_is_open(r->iam) ||
		       (r->who && s3_identity_allows(r->who, act, bucket)) || acl == 1 ||
		       (r->who && !key && !strcmp(action, "s3:CreateBucket"));
	bool admin = r->who && (s3_identity_allows(r->who, S3_ACT_ADMIN, bucket) ||
				(b && s3_owns_bucket(r, b)));
	enum policy_effect mine;
	if (!s3_session_gate(r, bucket, key, action))
		return false; /* session credentials: only within their scopes */
	if (admin && strstr(action, "BucketPolicy"))
		return true; /* the owner can always undo a policy that locks everyone out */
	mine = s3_identity_says(r, bucket, key, action);
	if (eff == POLICY_DENY || mine == POLICY_DENY)
		return false;
	return eff == POLICY_ALLOW || mine == POLICY_ALLOW || granted;
}

/* Whether the policy of bucket (its entry b) names an s3:ExistingObjectTag key. */
static bool needs_tags(const struct filer_entry *b, const char *bucket)
{
	char msg[128];
	bool stored;
	const struct bucket_policy *p = policy_of(b, bucket, &stored, msg, sizeof(msg));
	return bucket_policy_needs(p) & POLICY_NEEDS_OBJECT_TAGS;
}

/* Whether r's identity's inline policies name an s3:ExistingObjectTag key. */
static bool identity_needs_tags(const struct s3_req *r)
{
	return s3_identity_policy_needs(r->who) & POLICY_NEEDS_OBJECT_TAGS;
}

int s3_authorize_cached(struct s3_req *r, enum s3_action act)
{
	struct filer_entry *b = NULL;
	const char *action;
	enum policy_effect eff;
	bool ok;
	if (!s3_bucket_peek(r->g, r->bucket, &b))
		return -1;
	action = s3_policy_action(r);
	if (r->key && acts_on_existing(action) &&
	    (needs_tags(b, r->bucket) || identity_needs_tags(r))) {
		filer_entry_free(b);
		return -1; /* the object's tags are a filer read: on the worker */
	}
	eff = policy_in(r, b, r->bucket, r->key, action);
	ok = decide(r, r->bucket, r->key, action, act, eff, b, 0);
	if (!ok) {
		/* ownership or an ACL may allow it; an object's ACL is read on a worker */
		int acl = s3_acl_decide(r, b, r->bucket, r->key, action, false);
		if (acl < 0) {
			filer_entry_free(b);
			return -1;
		}
		ok = acl && decide(r, r->bucket, r->key, action, act, eff, b, acl);
	}
	if (!ok) {
		s3_error(r, S3_ACCESS_DENIED, "Access Denied");
	} else if (!s3_acl_write_ok(r, b)) {
		ok = false; /* its ACL headers do not suit the bucket's rules: r answered */
	}
	filer_entry_free(b);
	return ok;
}

bool s3_permitted(struct s3_req *r, const char *bucket, const char *key, const char *action,
		  enum s3_action act)
{
	bool admin = r->who && s3_identity_allows(r->who, S3_ACT_ADMIN, bucket);
	struct filer_entry *b;
	enum policy_effect eff;
	bool ok;
	if (admin && strstr(action, "BucketPolicy") && !r->session)
		return true; /* no need to read the policy */
	eff = policy_says(r, bucket, key, action, &b);
	ok = decide(r, bucket, key, action, act, eff, b, 0) ||
	     (eff != POLICY_DENY &&
	      decide(r, bucket, key, action, act, eff, b, s3_acl_decide(r, b, bucket, key, action, true)));
	filer_entry_free(b);
	return ok;
}

/*
 * A refusal: as S3, a bucket that does not exist is NoSuchBucket to anyone,
 * signed or not (the name says nothing S3 would not say), except to a
 * CreateBucket, which is refused as such.
 */
static void denied(struct s3_req *r, const char *bucket, const char *action)
{
	struct filer_entry *b = NULL;
	if (bucket && strcmp(action, "s3:CreateBucket") &&
	    s3_bucket_lookup(r->g, bucket, &b) == WFS_ENOENT)
		s3_error(r, S3_NO_SUCH_BUCKET, "The specified bucket does not exist");
	else
		s3_error(r, S3_ACCESS_DENIED, "Access Denied");
	filer_entry_free(b);
}

bool s3_authorize_keys(struct s3_req *r)
{
	struct filer_entry *b = NULL;
	bool policy;
	wfs_err rc;
	/* as S3, an identity's keys are judged one by one, the denied ones AccessDenied in the
	   answer (a policy or an ACL may allow some, or none); only an anonymous request that
	   nothing could allow is refused whole */
	if (s3_iam_is_open(r->iam) || r->who)
		return true;
	rc = s3_bucket_lookup(r->g, r->bucket, &b);
	policy = !rc && (filer_entry_xattr_get(b, X_POLICY) ||
			 s3_acl_decide(r, b, r->bucket, NULL, "s3:DeleteObject", true) == 1);
	filer_entry_free(b);
	if (rc == WFS_ENOENT)
		s3_error(r, S3_NO_SUCH_BUCKET, "The specified bucket does not exist");
	else if (!policy)
		s3_error(r, S3_ACCESS_DENIED, "Access Denied");
	return policy;
}

bool s3_authorize(struct s3_req *r, const char *bucket, const char *key, const char *action,
		  enum s3_action act)
{
	if (!s3_permitted(r, bucket, key, action, act)) {
		denied(r, bucket, action);
		return false;
	}
	if (key && !strcmp(bucket, r->bucket) && r->key && !strcmp(key, r->key)) {
		/* the ACL headers of r's own write must suit the bucket's rules */
		struct filer_entry *b = NULL;
		bool ok = s3_bucket_lookup(r->g, bucket, &b) || s3_acl_write_ok(r, b);
		filer_entry_free(b);
		return ok;
	}
	return true;
}
