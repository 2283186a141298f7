/*
 * Session credentials: the token's encoding, signature and checks, and what a
 * session lets through (s3_session.h).
 */
#include "config.h"
#include "s3/s3_session.h"
#include "util.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define MAC_LEN       32
#define FIXED_LEN     (1 + 1 + 8 + S3_SESSION_AK_LEN) /* version, flags, expiry, key id */
#define FLAG_SCOPED   1
#define TOKEN_LABEL   "weedfs-session-token"
#define SECRET_LABEL  "weedfs-session-secret"
#define BASE32_DIGITS "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";


/* ---- base64url without padding ---- */

/* Writes the encoding of p[0..n) and a NUL into out (4 * n / 3 + 3 bytes suffice). */
static void b64url_encode(const uint8_t *p, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		size_t left = n - i;
		if (left > 1)
			v |= (uint32_t)p[i + 1] << 8;
		if (left > 2)
			v |= p[i + 2];
		out[o++] = b64url[v >> 18 & 63];
		out[o++] = b64url[v >> 12 & 63];
		if (left > 1)
			out[o++] = b64url[v >> 6 & 63];
		if (left > 2)
			out[o++] = b64url[v & 63];
	}
	out[o] = '\0';
}

static int b64url_value(char c)
{
	const char *p = c ? strchr(b64url, c) : NULL;
	return p ? (int)(p - b64url) : -1;
}

/* Decodes s[0..n) into out (at most cap bytes): the length, or -1 on anything but the
   canonical encoding (a foreign character, a dangling character, stray low bits). */
static long b64url_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	if (n % 4 == 1)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int v = b64url_value(s[i]);
		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o == cap)
				return -1;
			out[o++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	return acc ? -1 : (long)o;
}

/* ---- fields ---- */

bool s3_session_key_id(const char *ak)
{
	if (strncmp(ak, S3_SESSION_AK_PREFIX, 4) || strlen(ak) != S3_SESSION_AK_LEN)
		return false;
	for (size_t i = 4; i < S3_SESSION_AK_LEN; i++)
		if (!strchr(BASE32_DIGITS, ak[i]) || !ak[i])
			return false;
	return true;
}

/* Whether s[0..n) has no control byte (nor NUL): it is written into headers and XML. */
static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

static bool bucket_ok(const char *b, size_t n)
{
	return n >= 1 && n <= S3_SESSION_BUCKET_MAX && printable(b, n) && !memchr(b, '/', n) &&
	       !memchr(b, '*', n) && !memchr(b, '?', n);
}

static bool prefix_ok(const char *p, size_t n, char *msg, size_t msglen)
{
	if (n > S3_SESSION_PREFIX_MAX)
		return msg_fail(msg, msglen, "a prefix may be at most %d bytes", S3_SESSION_PREFIX_MAX);
	if (memchr(p, '*', n) || memchr(p, '?', n))
		return msg_fail(msg, msglen, "a prefix may not hold '*' or '?' (\"%.64s\")", p);
	if (!printable(p, n))
		return msg_fail(msg, msglen, "a prefix may not hold control characters");
	return true;
}

bool s3_session_add_scope(struct s3_session *s, const char *bucket, const char *prefix,
			  unsigned actions, char *msg, size_t msglen)
{
	struct s3_session_scope *sc;
	if (!bucket_ok(bucket, strlen(bucket)))
		return msg_fail(msg, msglen, "\"%.64s\" is not a bucket name", bucket);
	if (!prefix_ok(prefix, strlen(prefix), msg, msglen))
		return false;
	if (!actions || actions & ~(unsigned)S3_SESSION_ALL)
		return msg_fail(msg, msglen, "a scope needs actions");
	s->scoped = true;
	for (size_t i = 0; i < s->n; i++) {
		if (!strcmp(s->scope[i].bucket, bucket) && !strcmp(s->scope[i].prefix, prefix)) {
			s->scope[i].actions |= actions;
			return true;
		}
	}
	if (s->n == S3_SESSION_SCOPES_MAX)
		return msg_fail(msg, msglen, "at most %d bucket and prefix pairs",
			    S3_SESSION_SCOPES_MAX);
	sc = &s->scope[s->n++];
	snprintf(sc->bucket, sizeof(sc->bucket), "%s", bucket);
	snprintf(sc->prefix, sizeof(sc->prefix), "%s", prefix);
	sc->actions = actions;
	return true;
}

/* ---- the signed body ---- */

static void mac(const uint8_t key[S3_SESSION_KEY_LEN], const char *label, const uint8_t *p,
		size_t n, uint8_t out[MAC_LEN])
{
	uint8_t buf[sizeof(TOKEN_LABEL) + S3_SESSION_BODY_MAX + 64];
	unsigned len = MAC_LEN;
	size_t ll = strlen(label) + 1; /* the NUL separates label and data */
	memcpy(buf, label, ll);
	memcpy(buf + ll, p, n);
	HMAC(EVP_sha256(), key, S3_SESSION_KEY_LEN, buf, ll + n, out, &len);
	OPENSSL_cleanse(buf, ll + n);
}

void s3_session_secret(const uint8_t key[S3_SESSION_KEY_LEN], const char *access_key,
		       int64_t expiry, char out[S3_SESSION_SECRET_LEN + 1])
{
	char m[S3_SESSION_AK_LEN + 32];
	uint8_t h[MAC_LEN];
	int n = snprintf(m, sizeof(m), "%.20s%c%lld", access_key, '\0', (long long)expiry);
	mac(key, SECRET_LABEL, (const uint8_t *)m, (size_t)n, h);
	b64url_encode(h, 30, out); /* 30 bytes: 40 characters, like AWS's secrets */
	OPENSSL_cleanse(h, sizeof(h));
}

struct writer {
	uint8_t *p;
	size_t n, cap;
	bool over;
};

static void put(struct writer *w, const void *p, size_t n)
{
	if (w->n + n > w->cap) {
		w->over = true;
		return;
	}
	memcpy(w->p + w->n, p, n);
	w->n += n;
}

static void put_u8(struct writer *w, unsigned v)
{
	uint8_t b = (uint8_t)v;
	put(w, &b, 1);
}

static void put_str8(struct writer *w, const char *s)
{
	size_t n = strlen(s);
	put_u8(w, (unsigned)n);
	put(w, s, n);
}

static size_t encode(const struct s3_session *s, uint8_t *out, size_t cap)
{
	struct writer w = {out, 0, cap, false};
	uint8_t e[8];
	for (int i = 0; i < 8; i++)
		e[i] = (uint8_t)((uint64_t)s->expiry >> (56 - 8 * i));
	put_u8(&w, S3_SESSION_VERSION);
	put_u8(&w, s->scoped ? FLAG_SCOPED : 0);
	put(&w, e, 8);
	put(&w, s->access_key, S3_SESSION_AK_LEN);
	put_str8(&w, s->parent);
	put_str8(&w, s->name);
	put_u8(&w, s->scoped ? (unsigned)s->n : 0);
	for (size_t i = 0; s->scoped && i < s->n; i++) {
		size_t pl = strlen(s->scope[i].prefix);
		put_u8(&w, s->scope[i].actions);
		put_str8(&w, s->scope[i].bucket);
		put_u8(&w, (unsigned)(pl >> 8));
		put_u8(&w, (unsigned)(pl & 255));
		put(&w, s->scope[i].prefix, pl);
	}
	return w.over ? 0 : w.n;
}

bool s3_session_issue(const uint8_t key[S3_SESSION_KEY_LEN], struct s3_session *s,
		      const uint8_t nonce[S3_SESSION_NONCE_LEN],
		      char token[S3_SESSION_TOKEN_MAX + 1], char secret[S3_SESSION_SECRET_LEN + 1],
		      char *msg, size_t msglen)
{
	uint8_t body[S3_SESSION_BODY_MAX + MAC_LEN];
	size_t pn = strlen(s->parent), nn = strlen(s->name), n;
	uint64_t bits = 0;
	int have = 0;

	if (!pn || pn > S3_SESSION_PARENT_MAX || !printable(s->parent, pn))
		return msg_fail(msg, msglen, "the parent identity's name is empty, too long or "
					 "holds control characters");
	if (nn > S3_SESSION_NAME_MAX || !printable(s->name, nn))
		return msg_fail(msg, msglen, "the session name is too long or holds control characters");
	if (s->expiry <= 0)
		return msg_fail(msg, msglen, "the session needs an expiry");
	if (s->scoped && !s->n)
		return msg_fail(msg, msglen, "a scoped session needs a scope");
	/* 10 random bytes as 16 base32 digits, 5 bits each */
	memcpy(s->access_key, S3_SESSION_AK_PREFIX, 4);
	for (size_t i = 0, o = 4; o < S3_SESSION_AK_LEN; o++) {
		if (have < 5) {
			bits = bits << 8 | nonce[i++];
			have += 8;
		}
		have -= 5;
		s->access_key[o] = BASE32_DIGITS[bits >> have & 31];
	}
	s->access_key[S3_SESSION_AK_LEN] = '\0';
	n = encode(s, body, S3_SESSION_BODY_MAX);
	if (!n)
		return msg_fail(msg, msglen, "the session's scopes take more than %d bytes",
			    S3_SESSION_BODY_MAX);
	mac(key, TOKEN_LABEL, body, n, body + n);
	b64url_encode(body, n + MAC_LEN, token);
	s3_session_secret(key, s->access_key, s->expiry, secret);
	return true;
}

/* ---- reading ---- */

struct reader {
	const uint8_t *p;
	size_t n, at;
};

static bool take(struct reader *r, void *out, size_t n)
{
	if (r->n - r->at < n)
		return false;
	memcpy(out, r->p + r->at, n);
	r->at += n;
	return true;
}

/* A length-prefixed string (1 or 2 length bytes) into out[cap]: false if it does not fit. */
static bool take_str(struct reader *r, int lenbytes, char *out, size_t cap)
{
	uint8_t l[2] = {0, 0};
	size_t n;
	if (!take(r, l + 2 - lenbytes, (size_t)lenbytes))
		return false;
	n = (size_t)l[0] << 8 | l[1];
	if (n >= cap || !take(r, out, n))
		return false;
	out[n] = '\0';
	return !memchr(out, '\0', n); /* a NUL would cut it short of what was signed */
}

static bool parse_scopes(struct reader *rd, struct s3_session *out, char *msg, size_t msglen)
{
	uint8_t count;
	if (!take(rd, &count, 1))
		return msg_fail(msg, msglen, "the token is cut short");
	if (count > S3_SESSION_SCOPES_MAX || (!out->scoped && count) || (out->scoped && !count))
		return msg_fail(msg, msglen, "the token's scope count is wrong");
	for (size_t i = 0; i < count; i++) {
		struct s3_session_scope *sc = &out->scope[i];
		uint8_t act;
		if (!take(rd, &act, 1) || !take_str(rd, 1, sc->bucket, sizeof(sc->bucket)) ||
		    !take_str(rd, 2, sc->prefix, sizeof(sc->prefix)))
			return msg_fail(msg, msglen, "the token's scope %zu is cut short or too long",
				    i + 1);
		sc->actions = act;
		if (!act || act & ~S3_SESSION_ALL || !bucket_ok(sc->bucket, strlen(sc->bucket)) ||
		    !prefix_ok(sc->prefix, strlen(sc->prefix), NULL, 0))
			return msg_fail(msg, msglen, "the token's scope %zu is malformed", i + 1);
		out->n++;
	}
	return true;
}

/* A string field that must hold no control character. */
static bool take_name(struct reader *rd, char *out, size_t cap, bool empty_ok)
{
	return take_str(rd, 1, out, cap) && printable(out, strlen(out)) && (empty_ok || *out);
}

bool s3_session_parse(const uint8_t *body, size_t len, struct s3_session *out, char *msg,
		      size_t msglen)
{
	struct reader rd = {body, len, 0};
	uint8_t head[2], e[8];
	uint64_t expiry = 0;

	memset(out, 0, sizeof(*out));
	if (len > S3_SESSION_BODY_MAX || !take(&rd, head, 2) || !take(&rd, e, 8) ||
	    !take(&rd, out->access_key, S3_SESSION_AK_LEN))
		return msg_fail(msg, msglen, "the token is cut short");
	if (head[0] != S3_SESSION_VERSION)
		return msg_fail(msg, msglen, "the token's version %u is not known here", head[0]);
	if (head[1] & ~FLAG_SCOPED)
		return msg_fail(msg, msglen, "the token has unknown flags");
	out->scoped = head[1] & FLAG_SCOPED;
	for (int i = 0; i < 8; i++)
		expiry = expiry << 8 | e[i];
	out->expiry = (int64_t)expiry;
	if (out->expiry <= 0)
		return msg_fail(msg, msglen, "the token's expiry is not valid");
	if (!s3_session_key_id(out->access_key))
		return msg_fail(msg, msglen, "the token's access key id is malformed");
	if (!take_name(&rd, out->parent, sizeof(out->parent), false) ||
	    !take_name(&rd, out->name, sizeof(out->name), true))
		return msg_fail(msg, msglen, "the token's names are malformed");
	if (!parse_scopes(&rd, out, msg, msglen))
		return false;
	if (rd.at != rd.n)
		return msg_fail(msg, msglen, "the token has %zu bytes too many", rd.n - rd.at);
	return true;
}

enum s3_session_status s3_session_verify(const uint8_t key[S3_SESSION_KEY_LEN], const char *token,
					 int64_t now, struct s3_session *out,
					 char secret[S3_SESSION_SECRET_LEN + 1], char *msg,
					 size_t msglen)
{
	uint8_t raw[S3_SESSION_BODY_MAX + MAC_LEN], want[MAC_LEN];
	size_t tl = strnlen(token, S3_SESSION_TOKEN_MAX + 1);
	long n;

	memset(out, 0, sizeof(*out));
	if (tl > S3_SESSION_TOKEN_MAX) {
		msg_fail(msg, msglen, "The security token is longer than any this gateway issues");
		return S3_SESSION_MALFORMED;
	}
	n = b64url_decode(token, tl, raw, sizeof(raw));
	if (n < FIXED_LEN + MAC_LEN) {
		msg_fail(msg, msglen, "The security token is not one this gateway issues (not base64url, "
				  "or too short)");
		return S3_SESSION_MALFORMED;
	}
	if (raw[0] != S3_SESSION_VERSION) {
		msg_fail(msg, msglen, "The security token's version %u is not known here", raw[0]);
		return S3_SESSION_BAD_VERSION;
	}
	mac(key, TOKEN_LABEL, raw, (size_t)n - MAC_LEN, want);
	if (CRYPTO_memcmp(want, raw + n - MAC_LEN, MAC_LEN)) {
		msg_fail(msg, msglen, "The security token's signature does not hold: it was altered "
				  "or comes from another cluster");
		return S3_SESSION_BAD_SIGNATURE;
	}
	if (!s3_session_parse(raw, (size_t)n - MAC_LEN, out, msg, msglen))
		return S3_SESSION_MALFORMED;
	if (now >= out->expiry) {
		msg_fail(msg, msglen, "The provided token has expired.");
		memset(out, 0, sizeof(*out));
		return S3_SESSION_EXPIRED;
	}
	if (secret)
		s3_session_secret(key, out->access_key, out->expiry, secret);
	return S3_SESSION_OK;
}

/* ---- what a session lets through ---- */

enum s3_session_op s3_session_op_of(const char *a)
{
	static const struct {
		const char *action;
		enum s3_session_op op;
	} map[] = {
		{"s3:GetObject", S3_SESSION_OP_READ},
		{"s3:GetObjectVersion", S3_SESSION_OP_READ},
		{"s3:GetObjectAttributes", S3_SESSION_OP_READ},
		{"s3:GetObjectVersionAttributes", S3_SESSION_OP_READ},
		{"s3:PutObject", S3_SESSION_OP_WRITE},
		/* a writer's own multipart uploads: what S3's PutObject grant comes with */
		{"s3:ListMultipartUploadParts", S3_SESSION_OP_WRITE},
		{"s3:AbortMultipartUpload", S3_SESSION_OP_WRITE},
		{"s3:DeleteObject", S3_SESSION_OP_DELETE},
		{"s3:DeleteObjectVersion", S3_SESSION_OP_DELETE},
		{"s3:ListBucket", S3_SESSION_OP_LIST},
		{"s3:ListBucketVersions", S3_SESSION_OP_LIST},
		{"s3:ListBucketMultipartUploads", S3_SESSION_OP_LIST},
		{"s3:GetBucketLocation", S3_SESSION_OP_BUCKET},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i].action, a))
			return map[i].op;
	return S3_SESSION_OP_OTHER;
}

bool s3_session_permits(const struct s3_session *s, enum s3_session_op op, const char *bucket,
			const char *path)
{
	static const unsigned bit[] = {
		[S3_SESSION_OP_READ] = S3_SESSION_READ,
		[S3_SESSION_OP_WRITE] = S3_SESSION_WRITE,
		[S3_SESSION_OP_DELETE] = S3_SESSION_DELETE,
		[S3_SESSION_OP_LIST] = S3_SESSION_LIST,
		[S3_SESSION_OP_BUCKET] = S3_SESSION_ALL,
		[S3_SESSION_OP_OTHER] = 0,
	};
	if (!s->scoped)
		return true;
	if (!bucket || op == S3_SESSION_OP_OTHER)
		return false;
	if (!path && op != S3_SESSION_OP_LIST && op != S3_SESSION_OP_BUCKET)
		return false;
	for (size_t i = 0; i < s->n; i++) {
		const struct s3_session_scope *sc = &s->scope[i];
		if (strcmp(sc->bucket, bucket) || !(sc->actions & bit[op]))
			continue;
		if (op == S3_SESSION_OP_BUCKET ||
		    !strncmp(path ? path : "", sc->prefix, strlen(sc->prefix)))
			return true;
	}
	return false;
}
