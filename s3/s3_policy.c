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
 * to everyone. An Admin identity may always read, change and remove the
 * policy itself, so a policy that denies everything can be undone.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client/filer_meta.h"
#include "log.h"
#include "s3/bucket_policy.h"
#include "s3/s3_int.h"
#include "s3/s3_session_gw.h"
#include "util.h"

#define X_POLICY "s3.policy"

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

/* The condition keys of r (values borrowed from r, or from num). */
static size_t context(const struct s3_req *r, struct policy_kv *kv, size_t cap)
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
		{"s3:x-amz-server-side-encryption", "x-amz-server-side-encryption"},
		{"s3:x-amz-server-side-encryption-aws-kms-key-id",
		 "x-amz-server-side-encryption-aws-kms-key-id"},
		{"s3:x-amz-server-side-encryption-customer-algorithm",
		 "x-amz-server-side-encryption-customer-algorithm"},
	};
	size_t n = 0;
	const char *v;

	kv[n++] = (struct policy_kv){"aws:SourceIp", http_req_peer(r->req)};
	kv[n++] = (struct policy_kv){"aws:SecureTransport", "false"};
	if (r->who) {
		kv[n++] = (struct policy_kv){"aws:username", s3_identity_name(r->who)};
		kv[n++] = (struct policy_kv){"aws:userid", s3_identity_name(r->who)};
	}
	for (size_t i = 0; i < ARRAY_LEN(query_keys) && n < cap; i++)
		if ((v = http_req_query(r->req, query_keys[i][1])))
			kv[n++] = (struct policy_kv){query_keys[i][0], v};
	for (size_t i = 0; i < ARRAY_LEN(header_keys) && n < cap; i++)
		if ((v = http_req_header(r->req, header_keys[i][1])))
			kv[n++] = (struct policy_kv){header_keys[i][0], v};
	return n;
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

/* What the policy of bucket (its entry b, NULL when missing) says of action on key. */
static enum policy_effect policy_in(struct s3_req *r, const struct filer_entry *b,
				    const char *bucket, const char *key, const char *action)
{
	const struct filer_xattr *x = b ? filer_entry_xattr_get(b, X_POLICY) : NULL;
	enum policy_effect eff = POLICY_NO_MATCH;

	if (x) {
		char msg[128];
		const struct bucket_policy *p = policy_parsed(bucket, (const char *)x->value,
							      x->value_len, msg, sizeof(msg));
		struct policy_kv kv[24]; /* the fixed keys, and every query and header key */
		char *resource = key ? xasprintf("arn:aws:s3:::%s/%s", bucket, key)
				     : xasprintf("arn:aws:s3:::%s", bucket);
		struct policy_request pr = {
			.principal = r->who ? s3_identity_name(r->who) : NULL,
			.action = action,
			.resource = resource,
			.ctx = kv,
			.nctx = context(r, kv, ARRAY_LEN(kv)),
		};
		/* a stored policy that no longer parses denies rather than opens */
		eff = p ? bucket_policy_eval(p, &pr) : POLICY_DENY;
		if (!p)
			log_warn("bucket %s: its stored policy does not parse (%s): denying",
				 bucket, msg);
		free(resource);
	}
	return eff;
}

static enum policy_effect policy_says(struct s3_req *r, const char *bucket, const char *key,
				      const char *action)
{
	struct filer_entry *b = NULL;
	enum policy_effect eff;
	wfs_err rc = s3_bucket_lookup(r->g, bucket, &b);
	if (rc && rc != WFS_ENOENT && rc != WFS_ENOTDIR)
		return POLICY_DENY; /* its policy unknown: fail closed */
	/* a missing bucket has no policy: the operation itself says NoSuchBucket */
	eff = policy_in(r, b, bucket, key, action);
	filer_entry_free(b);
	return eff;
}

enum policy_effect s3_identity_says(struct s3_req *r, const char *bucket, const char *key,
				    const char *action)
{
	struct policy_kv kv[16];
	char *resource;
	enum policy_effect eff;
	if (!r->who || !s3_identity_has_policies(r->who))
		return POLICY_NO_MATCH;
	resource = key ? xasprintf("arn:aws:s3:::%s/%s", bucket, key)
		       : bucket ? xasprintf("arn:aws:s3:::%s", bucket) : xstrdup("*");
	struct policy_request pr = {
		.principal = s3_identity_name(r->who),
		.action = action,
		.resource = resource,
		.ctx = kv,
		.nctx = context(r, kv, ARRAY_LEN(kv)),
	};
	eff = s3_identity_policy_eval(r->who, &pr);
	free(resource);
	return eff;
}

/* The decision once the bucket policy's effect is known: as AWS, a Deny of the bucket's
   or the identity's policies wins, then an Allow of either, then the identity's grant. */
static bool decide(struct s3_req *r, const char *bucket, const char *key, const char *action,
		   enum s3_action act, enum policy_effect eff)
{
	bool granted =
		s3_iam_is_open(r->iam) || (r->who && s3_identity_allows(r->who, act, bucket));
	bool admin = r->who && s3_identity_allows(r->who, S3_ACT_ADMIN, bucket);
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

int s3_authorize_cached(struct s3_req *r, enum s3_action act)
{
	struct filer_entry *b = NULL;
	const char *action;
	bool ok;
	if (!s3_bucket_peek(r->g, r->bucket, &b))
		return -1;
	action = s3_policy_action(r);
	ok = decide(r, r->bucket, r->key, action, act,
		    policy_in(r, b, r->bucket, r->key, action));
	filer_entry_free(b);
	if (!ok)
		s3_error(r, S3_ACCESS_DENIED, "Access Denied");
	return ok;
}

bool s3_permitted(struct s3_req *r, const char *bucket, const char *key, const char *action,
		  enum s3_action act)
{
	bool admin = r->who && s3_identity_allows(r->who, S3_ACT_ADMIN, bucket);
	if (admin && strstr(action, "BucketPolicy") && !r->session)
		return true; /* no need to read the policy */
	return decide(r, bucket, key, action, act, policy_says(r, bucket, key, action));
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

bool s3_authorize_keys(struct s3_req *r, enum s3_action act)
{
	struct filer_entry *b = NULL;
	bool policy;
	wfs_err rc;
	if (s3_iam_is_open(r->iam) || (r->who && s3_identity_allows(r->who, act, r->bucket)) ||
	    (r->who && s3_identity_has_policies(r->who)))
		return true; /* key by key (an identity's policy may name some) */
	rc = s3_bucket_lookup(r->g, r->bucket, &b);
	policy = !rc && filer_entry_xattr_get(b, X_POLICY);
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
	if (s3_permitted(r, bucket, key, action, act))
		return true;
	denied(r, bucket, action);
	return false;
}
