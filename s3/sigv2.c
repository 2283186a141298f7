/*
 * DESIGN: SigV2 (see sigv2.h). The signature covers no payload, so a SigV2
 * request's body is treated as unsigned (Content-MD5, when sent, is both
 * signed and checked against the body). The resource is signed as received:
 * the raw path, never re-encoded, so a key signs with exactly the bytes the
 * client put on the wire. HMAC-SHA1 here is OpenSSL's one-shot HMAC(): SigV2
 * is the legacy path, and SigV4's fetched-once digest (sigv4.c) is not worth
 * a second copy for it.
 */
#include "config.h"
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "log.h"
#include "lib/http_util.h"
#include "s3/sigv2.h"
#include "util.h"

#define MSG_NO_DATE "AWS authentication requires a valid Date or x-amz-date header"
#define MSG_QUERY_MISSING                                                                 \
	"Query-string authentication requires the Signature, Expires and AWSAccessKeyId " \
	"parameters"
#define MSG_BOTH                                                                                \
	"Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature " \
	"query string parameter or the Authorization header should be specified"

/* The subresources a SigV2 signature covers (the S3 guide's list, as clients sign it). */
static const char *const subresources[] = {
	"accelerate",
	"acl",
	"analytics",
	"cors",
	"defaultObjectAcl",
	"delete",
	"inventory",
	"lifecycle",
	"location",
	"logging",
	"metrics",
	"notification",
	"object-lock",
	"partNumber",
	"policy",
	"replication",
	"requestPayment",
	"response-cache-control",
	"response-content-disposition",
	"response-content-encoding",
	"response-content-language",
	"response-content-type",
	"response-expires",
	"restore",
	"select",
	"select-type",
	"storageClass",
	"tagging",
	"torrent",
	"uploadId",
	"uploads",
	"versionId",
	"versioning",
	"versions",
	"website",
};

/* Appends v without the spaces and tabs around it. */
static void append_trimmed(buf *out, const char *v)
{
	size_t n = strlen(v);
	v = sigv4_trim(v, &n);
	buf_append(out, v, n);
}

/* Calls fn for each name=value of the raw query (neither decoded); stops when it returns false. */
static void query_each(const char *q,
		       bool (*fn)(void *ctx, const char *name, size_t nlen, const char *value,
				  size_t vlen, bool has_value),
		       void *ctx)
{
	while (q && *q) {
		size_t len = strcspn(q, "&"), nlen = strcspn(q, "=&");
		bool has_value = nlen < len;
		if (len && !fn(ctx, q, nlen, has_value ? q + nlen + 1 : "",
			       has_value ? len - nlen - 1 : 0, has_value))
			return;
		q += len + (q[len] == '&');
	}
}

/* ---- parsing ---- */

struct query_fields {
	buf key, signature, expires;
	int seen_key, seen_signature, seen_expires;
	bool v4; /* X-Amz-Signature or X-Amz-Credential alongside */
	bool bad;
};

static bool read_field(void *ctx, const char *name, size_t nlen, const char *value, size_t vlen,
		       bool has_value)
{
	struct query_fields *f = ctx;
	buf *dst = NULL;
	(void)has_value;
	if (nlen == 14 && !memcmp(name, "AWSAccessKeyId", 14)) {
		dst = &f->key;
		f->seen_key++;
	} else if (nlen == 9 && !memcmp(name, "Signature", 9)) {
		dst = &f->signature;
		f->seen_signature++;
	} else if (nlen == 7 && !memcmp(name, "Expires", 7)) {
		dst = &f->expires;
		f->seen_expires++;
	} else if ((nlen == 15 && !memcmp(name, "X-Amz-Signature", 15)) ||
		   (nlen == 16 && !memcmp(name, "X-Amz-Credential", 16))) {
		f->v4 = true;
	}
	if (dst) {
		buf_reset(dst);
		if (!sigv4_pct_decode(value, vlen, dst))
			f->bad = true;
	}
	return true;
}

/* The SigV2 and SigV4 parameters of the raw query q, decoded into f (freed by fields_free). */
static void fields_read(const char *q, struct query_fields *f)
{
	memset(f, 0, sizeof(*f));
	query_each(q, read_field, f);
}

static void fields_free(struct query_fields *f)
{
	buf_free(&f->key);
	buf_free(&f->signature);
	buf_free(&f->expires);
}

bool sigv2_present(const struct sigv4_input *in)
{
	struct query_fields f;
	size_t n;
	const char *auth = sigv4_header_find(in, "authorization", &n);
	if (auth && !strncmp(auth, "AWS ", 4))
		return true;
	if (!in->raw_query)
		return false;
	fields_read(in->raw_query, &f);
	fields_free(&f);
	return f.seen_key > 0;
}

/* Copies b into dst[cap] as a string; false if it does not fit or holds a NUL. */
static bool copy_field(char *dst, size_t cap, const buf *b)
{
	if (b->len >= cap || (b->len && memchr(b->data, '\0', b->len)))
		return false;
	if (b->len)
		memcpy(dst, b->data, b->len);
	dst[b->len] = '\0';
	return true;
}

static enum s3_err parse_query(const struct sigv4_input *in, struct sigv2_auth *a, char *msg,
			       size_t msglen)
{
	struct query_fields f;
	enum s3_err e = S3_OK;
	char *end;
	fields_read(in->raw_query, &f);
	a->presigned = true;
	if (f.v4)
		e = s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT, MSG_BOTH);
	else if (f.seen_key != 1 || f.seen_signature != 1 || f.seen_expires != 1 || f.bad ||
		 !f.key.len || !f.signature.len)
		e = s3_err_msg(msg, msglen, S3_ACCESS_DENIED, MSG_QUERY_MISSING);
	else if (!copy_field(a->access_key, sizeof(a->access_key), &f.key) ||
		 !copy_field(a->signature, sizeof(a->signature), &f.signature))
		e = s3_err_msg(msg, msglen, S3_ACCESS_DENIED,
			       "The AWSAccessKeyId or Signature parameter is too long");
	else if (!copy_field(a->expires, sizeof(a->expires), &f.expires) || !a->expires[0] ||
		 a->expires[0] == '-' || a->expires[0] == '+' ||
		 (a->time = strtoll(a->expires, &end, 10), *end) || a->time < 0)
		e = s3_err_msg(msg, msglen, S3_ACCESS_DENIED,
			       "Invalid date (should be seconds since epoch): %s", a->expires);
	else if (in->now > a->time)
		e = s3_err_msg(msg, msglen, S3_EXPIRED_REQUEST, "Request has expired");
	fields_free(&f);
	return e;
}

/* The request time of header auth: x-amz-date, else Date (RFC 1123 either way). */
static bool header_time(const struct sigv4_input *in, int64_t *t)
{
	char v[64];
	size_t cnt;
	const char *d = sigv4_header_find(in, "x-amz-date", &cnt);
	if (!d)
		d = sigv4_header_find(in, "date", &cnt);
	return d && cnt == 1 && sigv4_copy_trimmed(v, sizeof(v), d) && sigv4_parse_http_date(v, t);
}

static enum s3_err parse_header(const struct sigv4_input *in, const char *v, size_t count,
				struct sigv2_auth *a, char *msg, size_t msglen)
{
	struct query_fields f;
	const char *colon;
	size_t n = strlen(v + 4), klen, slen;
	if (count > 1)
		return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT,
				  "The request has more than one Authorization header");
	fields_read(in->raw_query, &f);
	fields_free(&f);
	if (f.seen_key || f.seen_signature || f.v4)
		return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT, MSG_BOTH);
	v = sigv4_trim(v + 4, &n);
	colon = memchr(v, ':', n);
	klen = colon ? (size_t)(colon - v) : 0;
	slen = colon ? n - klen - 1 : 0;
	if (!klen || !slen || klen >= sizeof(a->access_key) || slen >= sizeof(a->signature) ||
	    memchr(v, ' ', klen))
		return s3_err_msg(
			msg, msglen, S3_INVALID_ARGUMENT,
			"AWS authorization header is invalid.  Expected AwsAccessKeyId:signature");
	memcpy(a->access_key, v, klen);
	memcpy(a->signature, colon + 1, slen);
	if (!header_time(in, &a->time))
		return s3_err_msg(msg, msglen, S3_ACCESS_DENIED, MSG_NO_DATE);
	if (a->time > in->now + SIGV4_MAX_SKEW || a->time < in->now - SIGV4_MAX_SKEW)
		return s3_err_msg(
			msg, msglen, S3_REQUEST_TIME_SKEWED,
			"The difference between the request time and the current time is too "
			"large.");
	return S3_OK;
}

enum s3_err sigv2_parse(const struct sigv4_input *in, struct sigv2_auth *a, char *msg,
			size_t msglen)
{
	size_t count;
	const char *auth, *sha;
	enum s3_err e;
	memset(a, 0, sizeof(*a));
	if (msg && msglen)
		msg[0] = '\0';
	if ((e = sigv4_check_request(in, msg, msglen)))
		return e;
	sha = sigv4_header_find(in, "x-amz-content-sha256", &count);
	if (sha && !strncmp(sha, "STREAMING-", 10))
		return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT,
				  "aws-chunked payloads need Signature Version 4");
	auth = sigv4_header_find(in, "authorization", &count);
	if (auth && strncmp(auth, "AWS ", 4)) /* another scheme, and AWSAccessKeyId in the query */
		return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT, MSG_BOTH);
	e = auth ? parse_header(in, auth, count, a, msg, msglen) : parse_query(in, a, msg, msglen);
	if (e)
		memset(a, 0, sizeof(*a));
	return e;
}

/* ---- the string to sign ---- */

struct amz_header {
	const char *name, *value;
	size_t order;
};

static int amz_cmp(const void *x, const void *y)
{
	const struct amz_header *a = x, *b = y;
	int c = strcasecmp(a->name, b->name);
	return c ? c : (a->order > b->order) - (a->order < b->order);
}

static void append_lower(buf *out, const char *s)
{
	for (; *s; s++)
		buf_append_byte(out, (char)((*s >= 'A' && *s <= 'Z') ? *s + 32 : *s));
}

/* Adds the x-amz-* parameters of raw_query to h (names and values decoded, malloc'd). */
static size_t amz_query_params(const char *raw_query, struct amz_header *h, size_t n,
			       char **owned, size_t *nowned)
{
	for (const char *p = raw_query; p && *p;) {
		size_t len = strcspn(p, "&"), nlen = strcspn(p, "=");
		buf name, value;
		if (nlen > len)
			nlen = len;
		buf_init(&name);
		buf_init(&value);
		if (url_decode(p, nlen, false, &name) &&
		    url_decode(p + nlen + (nlen < len), len - nlen - (nlen < len), false, &value) &&
		    name.len > 6 && !strncasecmp(name.data, "x-amz-", 6)) {
			owned[(*nowned)++] = buf_steal(&name, NULL);
			owned[(*nowned)++] = buf_steal(&value, NULL);
			h[n] = (struct amz_header){owned[*nowned - 2], owned[*nowned - 1], 1000 + n};
			n++;
		}
		buf_free(&name);
		buf_free(&value);
		p += len + (p[len] == '&');
	}
	return n;
}

/*
 * The x-amz-* headers, "name:v1,v2\n" each, sorted by name; for a presigned
 * URL also its x-amz-* query parameters, which clients sign as headers
 * (x-amz-security-token of session credentials).
 */
static void append_amz_headers(const struct sigv4_input *in, bool presigned, buf *out)
{
	size_t nq = 0, nowned = 0, n = 0;
	for (const char *p = presigned ? in->raw_query : NULL; p && *p; p++)
		nq += *p == '&';
	nq += presigned && in->raw_query ? 1 : 0;
	struct amz_header *h = xcalloc(in->nheaders + nq + 1, sizeof(*h));
	char **owned = xcalloc(2 * nq + 1, sizeof(*owned));
	for (size_t i = 0; i < in->nheaders; i++)
		if (!strncasecmp(in->headers[i].name, "x-amz-", 6))
			h[n++] = (struct amz_header){in->headers[i].name, in->headers[i].value, i};
	if (presigned)
		n = amz_query_params(in->raw_query, h, n, owned, &nowned);
	qsort(h, n, sizeof(*h), amz_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i && !strcasecmp(h[i].name, h[i - 1].name)) {
			buf_append_byte(out, ',');
		} else {
			if (i)
				buf_append_byte(out, '\n');
			append_lower(out, h[i].name);
			buf_append_byte(out, ':');
		}
		append_trimmed(out, h[i].value);
	}
	if (n)
		buf_append_byte(out, '\n');
	for (size_t i = 0; i < nowned; i++)
		free(owned[i]);
	free(owned);
	free(h);
}

struct subresource {
	const char *name;
	size_t nlen;
	const char *value;
	size_t vlen;
	bool has_value;
	size_t order;
};

struct subresource_list {
	struct subresource *v;
	size_t n, cap;
};

static bool collect_subresource(void *ctx, const char *name, size_t nlen, const char *value,
				size_t vlen, bool has_value)
{
	struct subresource_list *l = ctx;
	for (size_t i = 0; i < ARRAY_LEN(subresources); i++)
		if (strlen(subresources[i]) == nlen && !memcmp(subresources[i], name, nlen)) {
			if (l->n == l->cap) {
				l->cap = l->cap ? 2 * l->cap : 8;
				l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
			}
			l->v[l->n] = (struct subresource){name, nlen, value, vlen, has_value, l->n};
			l->n++;
			break;
		}
	return true;
}

static int subresource_cmp(const void *x, const void *y)
{
	const struct subresource *a = x, *b = y;
	size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
	int c = memcmp(a->name, b->name, n);
	if (!c)
		c = (a->nlen > b->nlen) - (a->nlen < b->nlen);
	return c ? c : (a->order > b->order) - (a->order < b->order);
}

/*
 * A bucket's own resource is "/bucket" in the S3 guide and "/bucket/" as
 * botocore signs it (ListObjects, a bucket's subresources): with other_form,
 * the one not received.
 */
static bool append_path(const struct sigv4_input *in, const char *vhost_bucket, bool other_form,
			buf *out)
{
	size_t start = out->len, slashes = 0;
	if (vhost_bucket) {
		buf_append_byte(out, '/');
		buf_append_str(out, vhost_bucket);
	}
	buf_append_str(out, in->raw_path);
	if (!other_form)
		return false;
	for (size_t i = start; i < out->len; i++)
		slashes += out->data[i] == '/';
	if (slashes == 1 && out->len > start + 1)
		buf_append_byte(out, '/');
	else if (slashes == 2 && out->data[out->len - 1] == '/')
		out->len--;
	else
		return false; /* an object's path: one form only */
	return true;
}

/* Returns whether other_form gave another resource than the received one. */
static bool append_resource(const struct sigv4_input *in, const char *vhost_bucket, bool other_form,
			    buf *out)
{
	struct subresource_list l = {0};
	bool other = append_path(in, vhost_bucket, other_form, out);
	query_each(in->raw_query, collect_subresource, &l);
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), subresource_cmp);
	for (size_t i = 0; i < l.n; i++) {
		buf_append_byte(out, i ? '&' : '?');
		buf_append(out, l.v[i].name, l.v[i].nlen);
		if (l.v[i].has_value) {
			buf_append_byte(out, '=');
			/* sigv2_parse checked the encoding (sigv4_check_request) */
			if (!sigv4_pct_decode(l.v[i].value, l.v[i].vlen, out))
				buf_append(out, l.v[i].value, l.v[i].vlen);
		}
	}
	free(l.v);
	return other;
}

/* Returns whether other_form made another string than the received resource's. */
static bool string_to_sign(const struct sigv4_input *in, const struct sigv2_auth *a,
			   const char *vhost_bucket, bool other_form, buf *out)
{
	size_t cnt;
	const char *md5 = sigv4_header_find(in, "content-md5", &cnt);
	const char *type = sigv4_header_find(in, "content-type", &cnt);
	const char *date = sigv4_header_find(in, "date", &cnt);
	buf_reset(out);
	buf_append_str(out, in->method);
	buf_append_byte(out, '\n');
	if (md5)
		append_trimmed(out, md5);
	buf_append_byte(out, '\n');
	if (type)
		append_trimmed(out, type);
	buf_append_byte(out, '\n');
	if (a->presigned)
		buf_append_str(out, a->expires);
	else if (date && !sigv4_header_find(in, "x-amz-date", &cnt))
		append_trimmed(out, date);
	buf_append_byte(out, '\n');
	append_amz_headers(in, a->presigned, out);
	return append_resource(in, vhost_bucket, other_form, out);
}

void sigv2_string_to_sign(const struct sigv4_input *in, const struct sigv2_auth *a,
			  const char *vhost_bucket, buf *out)
{
	string_to_sign(in, a, vhost_bucket, false, out);
}

void sigv2_sign(const char *secret, const char *sts, size_t len, char out[29])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mlen = 0;
	if (!HMAC(EVP_sha1(), secret, (int)strlen(secret), (const unsigned char *)sts, len, mac,
		  &mlen) ||
	    mlen != 20)
		fatal("HMAC-SHA1 failed");
	EVP_EncodeBlock((unsigned char *)out, mac, 20); /* 28 characters and a NUL */
}

enum s3_err sigv2_verify(const struct sigv4_input *in, const struct sigv2_auth *a,
			 const char *vhost_bucket, const char *secret)
{
	buf sts;
	char want[29];
	bool match = false;
	if (strlen(a->signature) != 28)
		return S3_SIGNATURE_MISMATCH;
	buf_init(&sts);
	for (int other_form = 0; other_form < 2 && !match; other_form++) {
		if (!string_to_sign(in, a, vhost_bucket, other_form, &sts) && other_form)
			break; /* the same string again */
		sigv2_sign(secret, sts.data ? sts.data : "", sts.len, want);
		match = !CRYPTO_memcmp(want, a->signature, 28);
	}
	buf_free(&sts);
	return match ? S3_OK : S3_SIGNATURE_MISMATCH;
}
