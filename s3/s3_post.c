/*
 * Browser POST uploads (PostObject): a multipart/form-data body whose fields
 * carry the key, the metadata, a policy document and its SigV4 signature, and
 * whose "file" part (the last one that counts) carries the object. A field is
 * known by its name alone: several clients send fields as parts with a
 * filename, which makes them no less fields; only the part named file is
 * the object.
 *
 * DESIGN: the form streams through lib's multipart parser. Fields are kept
 * (20 KiB at most, S3's bound) until the file part begins; then the upload
 * checks the signature and the policy (post_policy.c) against them, on the
 * loop thread (CPU only), and the file's bytes flow into the same path as a
 * PutObject body (s3_put.c). Fields after the file are ignored, as in S3. The
 * content-length-range of the policy is checked when the file has ended,
 * before anything is committed.
 */
#include "config.h"
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "client/entry.h"
#include "http_util.h"
#include "s3/post_policy.h"
#include "s3/s3_int.h"
#include "s3/sigv2.h"
#include "s3/sigv4.h"
#include "util.h"

/* S3's bound on the form fields that precede the file. */
#define FIELDS_BYTES_MAX (20u << 10)

struct s3_form {
	multipart *mp;
	struct post_field *f; /* owned strings */
	size_t n, bytes;
	char *cur_name; /* the field being read */
	buf cur;
	bool in_file, file_seen, file_done, too_big;
	char *filename, *file_type;
	bool (*on_start)(void *ctx);
	void (*on_file)(void *ctx, const char *data, size_t len);
	void *ctx;
};

static bool mp_part(const struct multipart_part *part, void *arg)
{
	struct s3_form *f = arg;
	if (f->file_seen)
		return true; /* after the file: ignored */
	if (!strcasecmp(part->name, "file")) {
		f->in_file = f->file_seen = true;
		f->filename = xstrdup(part->filename ? part->filename : "");
		f->file_type = part->content_type ? xstrdup(part->content_type) : NULL;
		return f->on_start(f->ctx);
	}
	free(f->cur_name);
	f->cur_name = xstrdup(part->name);
	buf_reset(&f->cur);
	return true;
}

static bool mp_data(const char *data, size_t len, void *arg)
{
	struct s3_form *f = arg;
	if (f->in_file) {
		f->on_file(f->ctx, data, len);
		return true;
	}
	if (!f->cur_name)
		return true; /* a part after the file */
	f->bytes += len;
	if (f->bytes > FIELDS_BYTES_MAX) {
		f->too_big = true;
		return false;
	}
	buf_append(&f->cur, data, len);
	return true;
}

static void mp_part_end(void *arg)
{
	struct s3_form *f = arg;
	if (f->in_file) {
		f->in_file = false;
		f->file_done = true;
		return;
	}
	if (!f->cur_name)
		return;
	f->f = xrealloc(f->f, (f->n + 1) * sizeof(*f->f));
	f->f[f->n].name = f->cur_name;
	f->f[f->n++].value = xstrndup(f->cur.data ? (const char *)f->cur.data : "", f->cur.len);
	f->cur_name = NULL;
}

static const struct multipart_cb mp_cb = {mp_part, mp_data, mp_part_end};

struct s3_form *s3_form_new(const char *content_type, bool (*on_start)(void *ctx),
			    void (*on_file)(void *ctx, const char *data, size_t len), void *ctx)
{
	struct s3_form *f = xcalloc(1, sizeof(*f));
	f->mp = content_type ? multipart_new(content_type, &mp_cb, f) : NULL;
	if (!f->mp) {
		free(f);
		return NULL;
	}
	f->on_start = on_start;
	f->on_file = on_file;
	f->ctx = ctx;
	return f;
}

void s3_form_free(struct s3_form *f)
{
	if (!f)
		return;
	multipart_free(f->mp);
	for (size_t i = 0; i < f->n; i++) {
		free((char *)f->f[i].name);
		free((char *)f->f[i].value);
	}
	free(f->f);
	free(f->cur_name);
	buf_free(&f->cur);
	free(f->filename);
	free(f->file_type);
	free(f);
}

enum s3_err s3_form_feed(struct s3_form *f, const char *data, size_t len)
{
	if (!multipart_feed(f->mp, data, len))
		return S3_OK;
	return f->too_big ? S3_MAX_POST_PRE_DATA : S3_MALFORMED_POST;
}

enum s3_err s3_form_finish(struct s3_form *f)
{
	if (multipart_finish(f->mp))
		return S3_MALFORMED_POST;
	return f->file_done ? S3_OK : S3_INVALID_ARGUMENT;
}

const char *s3_form_get(const struct s3_form *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcasecmp(f->f[i].name, name))
			return f->f[i].value;
	return NULL;
}

bool s3_form_field_at(const void *src, size_t i, const char **name, const char **value)
{
	const struct s3_form *f = src;
	if (i >= f->n)
		return false;
	*name = f->f[i].name;
	*value = f->f[i].value;
	return true;
}

const char *s3_form_file_type(const struct s3_form *f) { return f->file_type; }

const char *s3_req_field(const struct s3_req *r, const char *name)
{
	if (!r->post_form)
		return http_req_header(r->req, name);
	/* a form names x-amz-acl's canned ACL "acl"; its other fields are the headers' names */
	return s3_form_get(r->post_form, strcasecmp(name, "x-amz-acl") ? name : "acl");
}

char *s3_form_key(const struct s3_form *f)
{
	const char *key = s3_form_get(f, "key"), *at;
	if (!key || !*key)
		return NULL;
	at = strstr(key, "${filename}");
	if (!at)
		return xstrdup(key);
	return xasprintf("%.*s%s%s", (int)(at - key), key, f->filename ? f->filename : "",
			 at + strlen("${filename}"));
}

/* SigV2 forms (boto3's default generate_presigned_post): base64(HMAC-SHA1(secret, policy)). */
static enum s3_err check_signature_v2(struct s3_req *r, const struct s3_form *f, const char *policy,
				      char *msg, size_t msglen)
{
	const char *ak = s3_form_get(f, "AWSAccessKeyId"), *sig = s3_form_get(f, "signature");
	const char *secret;
	char want[29];
	if (!ak || !sig) {
		snprintf(msg, msglen, "a SigV2 POST needs AWSAccessKeyId, policy and signature");
		return S3_INVALID_ARGUMENT;
	}
	r->who = s3_iam_lookup(r->iam, ak, &secret);
	if (!r->who) {
		snprintf(msg, msglen, S3_MSG_UNKNOWN_KEY);
		return S3_INVALID_ACCESS_KEY;
	}
	sigv2_sign(secret, policy, strlen(policy), want);
	if (strlen(sig) != 28 || CRYPTO_memcmp(want, sig, 28)) {
		snprintf(msg, msglen,
			 "The request signature we calculated does not match the signature you "
			 "provided.");
		return S3_SIGNATURE_MISMATCH;
	}
	r->form_sigver = "AWS";
	return S3_OK;
}

/* The signature of the policy under the identity its credential names; S3_OK when it holds. */
static enum s3_err check_signature(struct s3_req *r, const struct s3_form *f, const char *policy,
				   char *msg, size_t msglen)
{
	const char *alg = s3_form_get(f, "x-amz-algorithm");
	const char *cred = s3_form_get(f, "x-amz-credential");
	const char *date = s3_form_get(f, "x-amz-date");
	const char *sig = s3_form_get(f, "x-amz-signature"), *secret;
	char ak[SIGV4_MAX_ACCESS_KEY + 1], d8[9], region[SIGV4_MAX_REGION + 1], want[65];
	uint8_t key[32];

	if (!alg || strcmp(alg, "AWS4-HMAC-SHA256") || !cred || !date || !sig) {
		snprintf(msg, msglen,
			 "a signed POST needs x-amz-algorithm AWS4-HMAC-SHA256, "
			 "x-amz-credential, x-amz-date and x-amz-signature");
		return S3_INVALID_ARGUMENT;
	}
	if (sscanf(cred, "%128[^/]/%8[0-9]/%64[^/]/s3/aws4_request", ak, d8, region) != 3 ||
	    strlen(d8) != 8 || strncmp(date, d8, 8) || strcmp(region, r->g->region)) {
		snprintf(msg, msglen,
			 "x-amz-credential is malformed or names another date or "
			 "region than the gateway's");
		return S3_AUTH_QUERY_ERROR;
	}
	r->who = s3_iam_lookup(r->iam, ak, &secret);
	if (!r->who) {
		snprintf(msg, msglen, S3_MSG_UNKNOWN_KEY);
		return S3_INVALID_ACCESS_KEY;
	}
	sigv4_signing_key(secret, d8, region, "s3", key);
	sigv4_hmac_hex(key, policy, strlen(policy), want);
	if (strcasecmp(want, sig)) {
		snprintf(msg, msglen,
			 "The request signature we calculated does not match the "
			 "signature you provided.");
		return S3_SIGNATURE_MISMATCH;
	}
	r->form_sigver = "AWS4-HMAC-SHA256";
	return S3_OK;
}

/*
 * Without a grant: whether the bucket's owner, its ACL or its policy may let r
 * write. Only a refusal that is sure is made here, before the file streams: a
 * bucket not cached, or with a policy (whose Allow may name the key), passes,
 * and the commit's authorization on a worker decides (s3_put.c).
 */
static bool may_write_early(struct s3_req *r)
{
	struct filer_entry *b = NULL;
	bool ok;
	if (!s3_bucket_peek(r->g, r->bucket, &b))
		return true;
	ok = filer_entry_xattr_get(b, S3_XATTR_POLICY) ||
	     s3_acl_decide(r, b, r->bucket, NULL, "s3:PutObject", false) != 0;
	filer_entry_free(b);
	return ok;
}

enum s3_err s3_form_authorize(struct s3_req *r, const struct s3_form *f, uint64_t *len_min,
			      uint64_t *len_max, char *msg, size_t msglen)
{
	const char *policy = s3_form_get(f, "policy");
	enum s3_err e;

	*len_min = 0;
	*len_max = UINT64_MAX;
	if (!policy) {
		if (s3_iam_is_open(r->iam))
			return S3_OK; /* an open gateway takes anonymous forms */
		snprintf(msg, msglen, "Access Denied: the form carries no policy");
		return S3_ACCESS_DENIED;
	}
	if (!s3_form_get(f, "x-amz-signature") && s3_form_get(f, "AWSAccessKeyId")) {
		e = check_signature_v2(r, f, policy, msg, msglen);
		if (e)
			return e;
	} else if (!s3_iam_is_open(r->iam) || s3_form_get(f, "x-amz-signature")) {
		e = check_signature(r, f, policy, msg, msglen);
		if (e)
			return e;
	}
	e = post_policy_check(policy, strlen(policy), r->bucket, f->f, f->n, (int64_t)time(NULL),
			      len_min, len_max, msg, msglen);
	if (e)
		return e;
	if (!s3_iam_is_open(r->iam) && !s3_identity_allows(r->who, S3_ACT_WRITE, r->bucket) &&
	    !may_write_early(r)) {
		snprintf(msg, msglen, "Access Denied");
		return S3_ACCESS_DENIED;
	}
	return S3_OK;
}

void s3_post_answer(struct s3_req *r, const struct s3_form *f, const char *etag)
{
	const char *redirect = s3_form_get(f, "success_action_redirect");
	const char *status = s3_form_get(f, "success_action_status");
	char *loc = xasprintf("/%s/%s", r->bucket, r->key);
	buf b = BUF_INIT;
	xml_w *w;

	s3_header(r, "Location", loc);
	if (redirect && *redirect) {
		/* the browser goes on to the page named, told what was stored */
		buf_printf(&b, "%s%sbucket=", redirect, strchr(redirect, '?') ? "&" : "?");
		url_encode_query(r->bucket, &b);
		buf_printf(&b, "&key=");
		url_encode_query(r->key, &b);
		buf_printf(&b, "&etag=");
		url_encode_query(etag, &b);
		buf_append(&b, "", 1);
		s3_header_replace(r, "Location", (char *)b.data);
		r->status = 303;
	} else if (status && !strcmp(status, "201")) {
		w = xml_w_new(&r->body);
		xml_open(w, "PostResponse");
		xml_elem(w, "Location", loc);
		xml_elem(w, "Bucket", r->bucket);
		xml_elem(w, "Key", r->key);
		xml_elem(w, "ETag", etag);
		s3_xml_ok(r, w);
		r->status = 201;
	} else {
		r->status = status && !strcmp(status, "200") ? 200 : 204;
	}
	buf_free(&b);
	free(loc);
}
