/*
 * DESIGN
 * AWS Signature Version 4 as the S3 API reference describes it
 * ("Authenticating Requests (AWS Signature Version 4)" and its pages on the
 * Authorization header, query parameters, chunked uploads and trailers).
 *
 * Two steps so that the gateway can look the secret up in between:
 * sigv4_parse checks everything that needs no secret and copies what it read
 * into fixed-size fields (nothing to free; nothing is built from a request
 * before its sizes are checked against the SIGV4_MAX_* bounds), then
 * sigv4_verify rebuilds the canonical request from the request as received
 * and compares signatures in constant time.
 *
 * The canonical request is built from the raw path and query, never from the
 * gateway's decoded view: each is percent-decoded once and re-encoded with
 * the AWS rules, so "%7e" and "~", or "%2F" and "/" in a query value, sign
 * alike, while keys with spaces, '+', '%' and "//" keep their bytes (S3
 * normalises no path segment and a literal '+' is a plus, not a space).
 * Encodings that cannot be decoded are refused by sigv4_parse, so verify
 * only ever answers match or mismatch.
 *
 * The signers (sigv4_sign_header, sigv4_presign, chunk signing) share the
 * canonical form with the verifier; the published AWS examples in the unit
 * test pin both down, and vectors from an independent signer cover the
 * awkward keys.
 */
#include "config.h"
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "log.h"
#include "s3/sigv4.h"
#include "util.h"

#define ALGO         "AWS4-HMAC-SHA256"
#define TERMINAL     "aws4_request"
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define UNSIGNED     "UNSIGNED-PAYLOAD"
#define MSG_UNSUPPORTED \
	"The authorization mechanism you have provided is not supported. Please use " ALGO "."
#define MSG_CREDENTIAL                                                                            \
	"the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/" TERMINAL \
	"\"."
#define MSG_QUERY_MISSING                                                                        \
	"Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, " \
	"X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters."
#define MSG_NO_DATE "AWS authentication requires a valid Date or x-amz-date header"

static const char *const payload_names[] = {
	[SIGV4_PAYLOAD_HASH] = "",
	[SIGV4_PAYLOAD_UNSIGNED] = UNSIGNED,
	[SIGV4_STREAMING_SIGNED] = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
	[SIGV4_STREAMING_SIGNED_TRAILER] = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
	[SIGV4_STREAMING_UNSIGNED_TRAILER] = "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
};

/* ---- crypto and hex ---- */

/* Decodes exactly 64 hex digits (either case) of s[0..n) into out. */
static bool hex_decode32(const char *s, size_t n, uint8_t out[32])
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < 32; i++) {
		int hi = hex_digit_value((unsigned char)s[2 * i]);
		int lo = hex_digit_value((unsigned char)s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/*
 * SHA-256 through a digest fetched once and a context per thread. OpenSSL 3's
 * one-shot SHA256() and HMAC() look the algorithm up by name on every call,
 * which cost far more than hashing a request's few hundred bytes (perf: 4.5%
 * of a 4 KiB PUT's CPU under sigv4_verify, most of it EVP_MD_fetch).
 */
static EVP_MD *sha256_md;
static pthread_key_t sha256_ctx_key;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_ctx_free(void *ctx) { EVP_MD_CTX_free(ctx); }

static void sha256_setup(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (!sha256_md || pthread_key_create(&sha256_ctx_key, sha256_ctx_free))
		fatal("could not set up SHA-256");
}

const EVP_MD *sigv4_sha256_md(void)
{
	pthread_once(&sha256_once, sha256_setup);
	return sha256_md;
}

/* SHA-256 of a then b (blen may be 0). */
static void sha256_two(const void *a, size_t alen, const void *b, size_t blen, uint8_t out[32])
{
	const EVP_MD *md = sigv4_sha256_md();
	EVP_MD_CTX *ctx = pthread_getspecific(sha256_ctx_key);
	unsigned int len = 0;
	if (!ctx) {
		ctx = EVP_MD_CTX_new();
		if (!ctx || pthread_setspecific(sha256_ctx_key, ctx))
			fatal("out of memory");
	}
	if (!EVP_DigestInit_ex2(ctx, md, NULL) || !EVP_DigestUpdate(ctx, a, alen) ||
	    (blen && !EVP_DigestUpdate(ctx, b, blen)) || !EVP_DigestFinal_ex(ctx, out, &len) ||
	    len != 32)
		fatal("SHA-256 failed");
}

/* HMAC-SHA256 (RFC 2104: 64-byte blocks, keys longer than a block hashed first). */
static void hmac(const void *key, size_t klen, const void *msg, size_t n, uint8_t out[32])
{
	uint8_t k[64] = {0}, pad[64], inner[32];
	if (klen > sizeof(k))
		sha256_two(key, klen, NULL, 0, k);
	else
		memcpy(k, key, klen);
	for (size_t i = 0; i < sizeof(k); i++)
		pad[i] = k[i] ^ 0x36;
	sha256_two(pad, sizeof(pad), msg, n, inner);
	for (size_t i = 0; i < sizeof(k); i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_two(pad, sizeof(pad), inner, sizeof(inner), out);
	OPENSSL_cleanse(k, sizeof(k));
	OPENSSL_cleanse(pad, sizeof(pad));
}

static void hmac_str(const uint8_t key[32], const char *s, uint8_t out[32])
{
	hmac(key, 32, s, strlen(s), out);
}

/*
 * A signing key changes once a day per identity, region and service, and its
 * four HMACs cost as much as the rest of a request's check: each thread keeps
 * the last few it derived. Matched on the secret's bytes, never its address
 * (a reloaded configuration may put another secret there).
 */
#define KEY_CACHE_SLOTS 4
#define KEY_CACHE_FIELD 128

struct key_slot {
	char secret[KEY_CACHE_FIELD]; /* "" for a free slot */
	char scope[KEY_CACHE_FIELD];  /* date8/region/service */
	uint8_t key[32];
};

static __thread struct key_slot key_cache[KEY_CACHE_SLOTS];
static __thread unsigned key_cache_next;

static void derive_signing_key(const char *secret, const char *date8, const char *region,
			       const char *service, uint8_t out[32])
{
	char *k0 = xasprintf("AWS4%s", secret);
	uint8_t k1[32], k2[32];
	hmac(k0, strlen(k0), date8, strlen(date8), k1);
	OPENSSL_cleanse(k0, strlen(k0));
	free(k0);
	hmac_str(k1, region, k2);
	hmac_str(k2, service, k1);
	hmac_str(k1, TERMINAL, out);
	OPENSSL_cleanse(k1, sizeof(k1));
	OPENSSL_cleanse(k2, sizeof(k2));
}

void sigv4_signing_key(const char *secret, const char *date8, const char *region,
		       const char *service, uint8_t out[32])
{
	char scope[KEY_CACHE_FIELD];
	struct key_slot *slot;
	int n = snprintf(scope, sizeof(scope), "%s/%s/%s", date8, region, service);

	if (!*secret || strlen(secret) >= KEY_CACHE_FIELD || n < 0 || (size_t)n >= sizeof(scope)) {
		derive_signing_key(secret, date8, region, service, out);
		return;
	}
	for (size_t i = 0; i < KEY_CACHE_SLOTS; i++) {
		slot = &key_cache[i];
		if (!strcmp(slot->secret, secret) && !strcmp(slot->scope, scope)) {
			memcpy(out, slot->key, 32);
			return;
		}
	}
	derive_signing_key(secret, date8, region, service, out);
	slot = &key_cache[key_cache_next++ % KEY_CACHE_SLOTS];
	OPENSSL_cleanse(slot, sizeof(*slot));
	memcpy(slot->secret, secret, strlen(secret) + 1);
	memcpy(slot->scope, scope, (size_t)n + 1);
	memcpy(slot->key, out, 32);
}

void sigv4_hmac_hex(const uint8_t key[32], const char *msg, size_t len, char out[65])
{
	uint8_t mac[32];
	hmac(key, 32, msg, len, mac);
	hex_encode(mac, 32, out);
}

void sigv4_sha256_hex(const void *p, size_t len, char out[65])
{
	uint8_t md[32];
	sha256_two(p, len, NULL, 0, md);
	hex_encode(md, 32, out);
}

/* ---- encoding ---- */

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.' || c == '_' || c == '~';
}

void sigv4_uri_encode(const char *s, size_t n, bool keep_slash, buf *out)
{
	static const char digits[] = "0123456789ABCDEF";
	buf_reserve(out, n);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (unreserved(c) || (keep_slash && c == '/')) {
			buf_append_byte(out, (char)c);
		} else {
			char e[3] = {'%', digits[c >> 4], digits[c & 15]};
			buf_append(out, e, 3);
		}
	}
}

/* Appends s[0..n) percent-decoded ('+' stays '+'); false on a bad escape. */
bool sigv4_pct_decode(const char *s, size_t n, buf *out)
{
	buf_reserve(out, n);
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%') {
			buf_append_byte(out, s[i]);
			continue;
		}
		if (n - i < 3)
			return false;
		int hi = hex_digit_value((unsigned char)s[i + 1]);
		int lo = hex_digit_value((unsigned char)s[i + 2]);
		if (hi < 0 || lo < 0)
			return false;
		buf_append_byte(out, (char)(hi << 4 | lo));
		i += 2;
	}
	return true;
}

/* True if s[0..n) is valid percent-encoding. */
static bool pct_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '%')
			continue;
		if (n - i < 3 || hex_digit_value((unsigned char)s[i + 1]) < 0 ||
		    hex_digit_value((unsigned char)s[i + 2]) < 0)
			return false;
		i += 2;
	}
	return true;
}

/* ---- time ---- */

/* Days since 1970-01-01 of a proleptic Gregorian date (month 1..12). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : dm[m - 1];
}

/* The value of n digits at s, or -1. */
static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

static bool make_time(int y, int mo, int d, int h, int mi, int s, int64_t *t)
{
	if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) ||
	    h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59)
		return false;
	*t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
	return true;
}

/* YYYYMMDDTHHMMSSZ, exactly. */
static bool parse_iso_basic(const char *s, int64_t *t)
{
	if (strlen(s) != 16 || s[8] != 'T' || s[15] != 'Z')
		return false;
	return make_time(digits(s, 4), digits(s + 4, 2), digits(s + 6, 2), digits(s + 9, 2),
			 digits(s + 11, 2), digits(s + 13, 2), t);
}

/* RFC 1123 "Fri, 24 May 2013 00:00:00 GMT" (also "+0000" or "UTC" for the zone). */
bool sigv4_parse_http_date(const char *s, int64_t *t)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	size_t n = strlen(s);
	if (n < 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
	    s[19] != ':' || s[22] != ':' || s[25] != ' ')
		return false;
	const char *zone = s + 26;
	if (strcmp(zone, "GMT") && strcmp(zone, "UTC") && strcmp(zone, "+0000"))
		return false;
	int mo = 0;
	for (int i = 0; i < 12; i++)
		if (!memcmp(s + 8, months + 3 * i, 3))
			mo = i + 1;
	return mo && make_time(digits(s + 12, 4), mo, digits(s + 5, 2), digits(s + 17, 2),
			       digits(s + 20, 2), digits(s + 23, 2), t);
}

/* Writes v as n decimal digits at p. */
static void put_digits(char *p, int v, int n)
{
	while (n--) {
		p[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

void sigv4_format_time(int64_t t, char out[17])
{
	time_t tt = (time_t)t;
	struct tm tm;
	memcpy(out, "19700101T000000Z", 17);
	if (!gmtime_r(&tt, &tm) || tm.tm_year < 70 || tm.tm_year > 9999 - 1900)
		return; /* outside what parse_iso_basic reads: the epoch */
	put_digits(out, tm.tm_year + 1900, 4);
	put_digits(out + 4, tm.tm_mon + 1, 2);
	put_digits(out + 6, tm.tm_mday, 2);
	put_digits(out + 9, tm.tm_hour, 2);
	put_digits(out + 11, tm.tm_min, 2);
	put_digits(out + 13, tm.tm_sec, 2);
}

/* ---- request access ---- */

static bool is_space(char c) { return c == ' ' || c == '\t'; }

const char *sigv4_trim(const char *s, size_t *n)
{
	while (*n && is_space(*s)) {
		s++;
		(*n)--;
	}
	while (*n && is_space(s[*n - 1]))
		(*n)--;
	return s;
}

static bool name_is(const char *name, const char *s, size_t n)
{
	return strlen(name) == n && !strncasecmp(name, s, n);
}

/* The value of header name, NULL if absent; *count says how many lines carry it. */
const char *sigv4_header_find(const struct sigv4_input *in, const char *name, size_t *count)
{
	const char *v = NULL;
	*count = 0;
	for (size_t i = 0; i < in->nheaders; i++)
		if (!strcasecmp(in->headers[i].name, name)) {
			if (!v)
				v = in->headers[i].value;
			(*count)++;
		}
	return v;
}

/* Appends value with its ends trimmed and inner runs of white space made one space. */
static void append_trimall(buf *out, const char *v)
{
	bool space = false, any = false;
	for (; *v; v++) {
		if (is_space(*v)) {
			space = any;
			continue;
		}
		if (space)
			buf_append_byte(out, ' ');
		buf_append_byte(out, *v);
		space = false;
		any = true;
	}
}

/* One query parameter as received. */
struct qparam {
	const char *name, *value;
	size_t nlen, vlen;
};

/* Splits q into at most max parameters (empty pieces skipped); SIZE_MAX if more. */
static size_t split_query(const char *q, struct qparam *out, size_t max)
{
	size_t n = 0;
	while (q && *q) {
		const char *end = strchr(q, '&');
		size_t len = end ? (size_t)(end - q) : strlen(q);
		if (len) {
			if (n == max)
				return SIZE_MAX;
			const char *eq = memchr(q, '=', len);
			out[n].name = q;
			out[n].nlen = eq ? (size_t)(eq - q) : len;
			out[n].value = eq ? eq + 1 : q + len;
			out[n].vlen = eq ? len - out[n].nlen - 1 : 0;
			n++;
		}
		q += len + (end != NULL);
	}
	return n;
}

/* ---- canonical request ---- */

struct cq_pair {
	size_t no, nl, vo, vl; /* offsets and lengths in the encoded buffer */
	const char *base;
};

static int cmp_bytes(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);
	return c ? c : (al > bl) - (al < bl);
}

static int cq_cmp(const void *x, const void *y)
{
	const struct cq_pair *a = x, *b = y;
	int c = cmp_bytes(a->base + a->no, a->nl, b->base + b->no, b->nl);
	return c ? c : cmp_bytes(a->base + a->vo, a->vl, b->base + b->vo, b->vl);
}

/* Appends the canonical query of q; X-Amz-Signature left out when presigned. */
static bool canonical_query(const char *q, bool presigned, buf *out)
{
	struct qparam *p = xcalloc(SIGV4_MAX_PARAMS, sizeof(*p));
	struct cq_pair *pairs = NULL;
	buf enc = BUF_INIT, dec = BUF_INIT;
	bool ok = false;
	size_t n = split_query(q, p, SIGV4_MAX_PARAMS), m = 0;
	if (n == SIZE_MAX)
		goto out;
	pairs = xcalloc(n ? n : 1, sizeof(*pairs));
	for (size_t i = 0; i < n; i++) {
		buf_reset(&dec);
		if (!sigv4_pct_decode(p[i].name, p[i].nlen, &dec))
			goto out;
		if (presigned && dec.len == 15 && !memcmp(dec.data, "X-Amz-Signature", 15))
			continue;
		pairs[m].no = enc.len;
		sigv4_uri_encode(dec.data ? dec.data : "", dec.len, false, &enc);
		pairs[m].nl = enc.len - pairs[m].no;
		buf_reset(&dec);
		if (!sigv4_pct_decode(p[i].value, p[i].vlen, &dec))
			goto out;
		pairs[m].vo = enc.len;
		sigv4_uri_encode(dec.data ? dec.data : "", dec.len, false, &enc);
		pairs[m].vl = enc.len - pairs[m].vo;
		m++;
	}
	for (size_t i = 0; i < m; i++)
		pairs[i].base = enc.data;
	qsort(pairs, m, sizeof(*pairs), cq_cmp);
	for (size_t i = 0; i < m; i++) {
		if (i)
			buf_append_byte(out, '&');
		buf_append(out, enc.data + pairs[i].no, pairs[i].nl);
		buf_append_byte(out, '=');
		buf_append(out, enc.data + pairs[i].vo, pairs[i].vl);
	}
	ok = true;
out:
	free(p);
	free(pairs);
	buf_free(&enc);
	buf_free(&dec);
	return ok;
}

/* Appends the canonical headers of the ';'-list signed: "name:value\n" each, in list order,
 * repeated lines joined with ','; a signed header the request lacks gives "name:". */
static void canonical_headers(const struct sigv4_input *in, const char *signed_list, buf *out)
{
	const char *s = signed_list;
	while (*s) {
		size_t len = strcspn(s, ";");
		bool first = true;
		buf_append(out, s, len);
		buf_append_byte(out, ':');
		for (size_t i = 0; i < in->nheaders; i++) {
			if (!name_is(in->headers[i].name, s, len))
				continue;
			if (!first)
				buf_append_byte(out, ',');
			append_trimall(out, in->headers[i].value);
			first = false;
		}
		buf_append_byte(out, '\n');
		s += len + (s[len] == ';');
	}
}

/* Appends the whole canonical request; false if the path or query cannot be decoded. */
static bool build_canonical(const struct sigv4_input *in, bool presigned, const char *signed_list,
			    const char *payload, buf *out)
{
	const char *path = in->raw_path && *in->raw_path ? in->raw_path : "/";
	buf dec = BUF_INIT;
	buf_append_str(out, in->method ? in->method : "");
	buf_append_byte(out, '\n');
	if (!sigv4_pct_decode(path, strlen(path), &dec)) {
		buf_free(&dec);
		return false;
	}
	sigv4_uri_encode(dec.data ? dec.data : "", dec.len, true, out);
	buf_free(&dec);
	buf_append_byte(out, '\n');
	if (!canonical_query(in->raw_query, presigned, out))
		return false;
	buf_append_byte(out, '\n');
	canonical_headers(in, signed_list, out);
	buf_append_byte(out, '\n');
	buf_append_str(out, signed_list);
	buf_append_byte(out, '\n');
	buf_append_str(out, payload);
	return true;
}

static void build_scope(const char *date8, const char *region, const char *service, char *out,
			size_t len)
{
	snprintf(out, len, "%s/%s/%s/" TERMINAL, date8, region, service);
}

/* Appends the string to sign for a canonical request. */
static void build_sts(const char *amz_date, const char *scope, const buf *canonical, buf *out)
{
	char h[65];
	sigv4_sha256_hex(canonical->data ? canonical->data : "", canonical->len, h);
	buf_printf(out, ALGO "\n%s\n%s\n%s", amz_date, scope, h);
}

static const char *payload_line(const struct sigv4_auth *a)
{
	return a->payload == SIGV4_PAYLOAD_HASH ? a->payload_hash : payload_names[a->payload];
}

bool sigv4_canonical_request(const struct sigv4_input *in, const struct sigv4_auth *a, buf *out)
{
	return build_canonical(in, a->presigned, a->signed_headers, payload_line(a), out);
}

bool sigv4_string_to_sign(const struct sigv4_input *in, const struct sigv4_auth *a, buf *out)
{
	char scope[SIGV4_SCOPE_MAX];
	buf c = BUF_INIT;
	bool ok = sigv4_canonical_request(in, a, &c);
	if (ok) {
		build_scope(a->date, a->region, a->service, scope, sizeof(scope));
		build_sts(a->amz_date, scope, &c, out);
	}
	buf_free(&c);
	return ok;
}

bool sigv4_expected(const struct sigv4_input *in, const struct sigv4_auth *a, const char *secret,
		    char sig[65], uint8_t signing_key[32])
{
	uint8_t key[32];
	buf sts = BUF_INIT;
	bool ok = sigv4_string_to_sign(in, a, &sts);
	sig[0] = '\0';
	if (ok) {
		sigv4_signing_key(secret, a->date, a->region, a->service, key);
		sigv4_hmac_hex(key, sts.data, sts.len, sig);
		if (signing_key)
			memcpy(signing_key, key, 32);
		OPENSSL_cleanse(key, sizeof(key));
	}
	buf_free(&sts);
	return ok;
}

enum s3_err sigv4_verify(const struct sigv4_input *in, const struct sigv4_auth *a,
			 const char *secret, uint8_t signing_key[32])
{
	char want[65];
	uint8_t key[32], w[32], got[32];
	enum s3_err e = S3_SIGNATURE_MISMATCH;
	if (sigv4_expected(in, a, secret, want, key) && hex_decode32(want, 64, w) &&
	    hex_decode32(a->signature, strlen(a->signature), got) && !CRYPTO_memcmp(w, got, 32)) {
		e = S3_OK;
		if (signing_key)
			memcpy(signing_key, key, 32);
	}
	OPENSSL_cleanse(key, sizeof(key));
	return e;
}

/* ---- parsing ---- */

/* Copies s[0..n) into dst[cap] if it fits and holds printable ASCII only (no space). */
static bool copy_field(char *dst, size_t cap, const char *s, size_t n)
{
	if (n == 0 || n >= cap)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	memcpy(dst, s, n);
	dst[n] = '\0';
	return true;
}

/* Where the credential, signed headers and signature came from: the messages differ. */
struct origin {
	bool query;
	enum s3_err err; /* S3_AUTH_HEADER_MALFORMED or S3_AUTH_QUERY_ERROR */
	const char *prefix;
};

static const struct origin from_header = {false, S3_AUTH_HEADER_MALFORMED,
					  "The authorization header is malformed; "};
static const struct origin from_query = {true, S3_AUTH_QUERY_ERROR,
					 "Error parsing the X-Amz-Credential parameter; "};

/* AKID/YYYYMMDD/REGION/s3/aws4_request */
static enum s3_err parse_credential(const struct sigv4_input *in, const char *s, size_t n,
				    const struct origin *o, struct sigv4_auth *a, char *msg,
				    size_t msglen)
{
	const char *part[5];
	size_t len[5], k = 0, start = 0;
	for (size_t i = 0; i <= n && k < 5; i++)
		if (i == n || s[i] == '/') {
			part[k] = s + start;
			len[k++] = i - start;
			start = i + 1;
		}
	if (k != 5 || start != n + 1 ||
	    !copy_field(a->access_key, sizeof(a->access_key), part[0], len[0]) ||
	    !copy_field(a->date, sizeof(a->date), part[1], len[1]) || len[1] != 8 ||
	    digits(a->date, 8) < 0 || !copy_field(a->region, sizeof(a->region), part[2], len[2]) ||
	    !copy_field(a->service, sizeof(a->service), part[3], len[3]) || len[4] == 0 ||
	    len[4] > 32)
		return s3_err_msg(msg, msglen, o->err, "%s" MSG_CREDENTIAL, o->prefix);
	if (in->region && *in->region && strcmp(in->region, a->region))
		return s3_err_msg(msg, msglen, o->err,
				  "%sthe region '%s' is wrong; expecting '%.64s'", o->prefix,
				  a->region, in->region);
	if (strcmp(a->service, in->service ? in->service : "s3"))
		return s3_err_msg(msg, msglen, o->err,
				  "%sincorrect service \"%s\". This endpoint belongs to \"%s\".",
				  o->prefix, a->service, in->service ? in->service : "s3");
	if (len[4] != strlen(TERMINAL) || memcmp(part[4], TERMINAL, len[4]))
		return s3_err_msg(msg, msglen, o->err,
				  "%sincorrect terminal \"%.*s\". This endpoint uses \"" TERMINAL
				  "\".",
				  o->prefix, (int)len[4], part[4]);
	return S3_OK;
}

static bool token_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Lowercase names joined by ';', none empty or repeated. */
static enum s3_err parse_signed_headers(const char *s, size_t n, const struct origin *o,
					struct sigv4_auth *a, char *msg, size_t msglen)
{
	const char *what = o->query ? "X-Amz-SignedHeaders" : "SignedHeaders";
	enum s3_err err = o->query ? S3_AUTH_QUERY_ERROR : S3_AUTH_HEADER_MALFORMED;
	if (n == 0 || n > SIGV4_MAX_SIGNED_LEN)
		return s3_err_msg(msg, msglen, err, "%s is empty or longer than %d bytes", what,
				  SIGV4_MAX_SIGNED_LEN);
	if (s[n - 1] == ';')
		return s3_err_msg(msg, msglen, err, "%s has an empty header name", what);
	memcpy(a->signed_headers, s, n);
	a->signed_headers[n] = '\0';
	a->nsigned = 0;
	for (size_t i = 0; i < n;) {
		size_t len = 0;
		while (i + len < n && s[i + len] != ';') {
			if (!token_char((unsigned char)s[i + len]))
				return s3_err_msg(
					msg, msglen, err,
					"%s must list lowercase header names separated by ';'",
					what);
			len++;
		}
		if (len == 0)
			return s3_err_msg(msg, msglen, err, "%s has an empty header name", what);
		if (++a->nsigned > SIGV4_MAX_SIGNED)
			return s3_err_msg(msg, msglen, err, "%s lists more than %d headers", what,
					  SIGV4_MAX_SIGNED);
		/* a repeat of an earlier name */
		for (size_t j = 0; j < i;) {
			size_t l2 = strcspn(s + j, ";");
			if (l2 == len && !memcmp(s + j, s + i, len))
				return s3_err_msg(msg, msglen, err, "%s lists \"%.*s\" twice", what,
						  (int)len, s + i);
			j += l2 + 1;
		}
		i += len + 1;
	}
	return S3_OK;
}

static bool is_signed(const struct sigv4_auth *a, const char *name)
{
	const char *s = a->signed_headers;
	while (*s) {
		size_t len = strcspn(s, ";");
		if (name_is(name, s, len))
			return true;
		s += len + (s[len] == ';');
	}
	return false;
}

static enum s3_err parse_signature(const char *s, size_t n, const struct origin *o,
				   struct sigv4_auth *a, char *msg, size_t msglen)
{
	uint8_t raw[32];
	if (!hex_decode32(s, n, raw))
		return s3_err_msg(msg, msglen,
				  o->query ? S3_AUTH_QUERY_ERROR : S3_AUTH_HEADER_MALFORMED,
				  "%s must be 64 hexadecimal digits",
				  o->query ? "X-Amz-Signature" : "Signature");
	hex_encode(raw, 32, a->signature);
	return S3_OK;
}

/* Host and every x-amz-* header present must be signed (x-amz-content-sha256 may not be:
 * header auth signs its value as the payload line anyway, presigned URLs ignore it). */
static enum s3_err check_unsigned(const struct sigv4_input *in, const struct sigv4_auth *a,
				  char *msg, size_t msglen)
{
	char list[512];
	size_t used = 0;
	bool missing = false;
	list[0] = '\0';
	if (!is_signed(a, "host")) {
		used += (size_t)snprintf(list, sizeof(list), "host");
		missing = true;
	}
	for (size_t i = 0; i < in->nheaders; i++) {
		const char *name = in->headers[i].name;
		if (strncasecmp(name, "x-amz-", 6) || !strcasecmp(name, "x-amz-content-sha256") ||
		    is_signed(a, name))
			continue;
		bool seen = false; /* list a repeated header once */
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcasecmp(in->headers[j].name, name);
		if (seen)
			continue;
		missing = true;
		if (used + strlen(name) + 2 < sizeof(list)) {
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
						 used ? "," : "", name);
			for (size_t j = used - strlen(name); j < used; j++)
				if (list[j] >= 'A' && list[j] <= 'Z')
					list[j] = (char)(list[j] - 'A' + 'a');
		}
	}
	if (missing)
		return s3_err_msg(
			msg, msglen, S3_ACCESS_DENIED,
			"There were headers present in the request which were not signed: %s",
			list);
	return S3_OK;
}

/* Signed header values must not hold control characters: a line break would let one
 * request's canonical form pass for another's. */
static enum s3_err check_signed_values(const struct sigv4_input *in, const struct sigv4_auth *a,
				       char *msg, size_t msglen)
{
	for (size_t i = 0; i < in->nheaders; i++) {
		if (!is_signed(a, in->headers[i].name))
			continue;
		for (const char *v = in->headers[i].value; *v; v++)
			if (((unsigned char)*v < ' ' && *v != '\t') || *v == 0x7f)
				return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT,
						  "Header %.64s holds a control character",
						  in->headers[i].name);
	}
	return S3_OK;
}

/* Copies the trimmed header value v into dst[cap]; false if it does not fit. */
bool sigv4_copy_trimmed(char *dst, size_t cap, const char *v)
{
	size_t n = strnlen(v, cap + 64);
	v = sigv4_trim(v, &n);
	if (n >= cap)
		return false;
	memcpy(dst, v, n);
	dst[n] = '\0';
	return true;
}

/* The request time of header auth: x-amz-date, else Date. */
static enum s3_err header_time(const struct sigv4_input *in, struct sigv4_auth *a, char *msg,
			       size_t msglen)
{
	char v[64];
	size_t cnt;
	const char *xd = sigv4_header_find(in, "x-amz-date", &cnt);
	bool ok;
	if (xd)
		ok = cnt == 1 && sigv4_copy_trimmed(v, sizeof(v), xd) &&
		     parse_iso_basic(v, &a->time);
	else if ((xd = sigv4_header_find(in, "date", &cnt)))
		ok = cnt == 1 && sigv4_copy_trimmed(v, sizeof(v), xd) &&
		     sigv4_parse_http_date(v, &a->time);
	else
		ok = false;
	if (!ok)
		return s3_err_msg(msg, msglen, S3_ACCESS_DENIED, MSG_NO_DATE);
	sigv4_format_time(a->time, a->amz_date);
	return S3_OK;
}

/* x-amz-content-sha256, x-amz-decoded-content-length and x-amz-trailer of header auth. */
static enum s3_err header_payload(const struct sigv4_input *in, struct sigv4_auth *a, char *msg,
				  size_t msglen)
{
	char v[80];
	size_t cnt;
	const char *cs = sigv4_header_find(in, "x-amz-content-sha256", &cnt);
	if (!cs)
		return s3_err_msg(msg, msglen, S3_INVALID_REQUEST,
				  "Missing required header for this request: x-amz-content-sha256");
	bool found = cnt == 1 && sigv4_copy_trimmed(v, sizeof(v), cs);
	if (found) {
		found = false;
		for (int m = SIGV4_PAYLOAD_UNSIGNED; m <= SIGV4_STREAMING_UNSIGNED_TRAILER; m++)
			if (!strcmp(v, payload_names[m])) {
				a->payload = (enum sigv4_payload)m;
				found = true;
			}
		if (!found && hex_decode32(v, strlen(v), a->payload_sha256)) {
			a->payload = SIGV4_PAYLOAD_HASH;
			memcpy(a->payload_hash, v, 65);
			found = true;
		}
		if (!found && !strncmp(v, "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", 40))
			return s3_err_msg(msg, msglen, S3_INVALID_REQUEST, MSG_UNSUPPORTED);
	}
	if (!found)
		return s3_err_msg(
			msg, msglen, S3_INVALID_ARGUMENT,
			"x-amz-content-sha256 must be UNSIGNED-PAYLOAD, "
			"STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, "
			"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.");
	const char *dl = sigv4_header_find(in, "x-amz-decoded-content-length", &cnt);
	if (dl && (cnt != 1 || !sigv4_copy_trimmed(v, 24, dl) ||
		   !parse_i64(v, &a->decoded_length) || a->decoded_length < 0))
		return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT,
				  "x-amz-decoded-content-length must be one non-negative integer");
	const char *tr = sigv4_header_find(in, "x-amz-trailer", &cnt);
	if (tr) {
		bool ok = cnt == 1 && sigv4_copy_trimmed(a->trailer, sizeof(a->trailer), tr);
		for (const char *p = a->trailer; ok && *p; p++)
			ok = *p >= ' ' && *p <= '~';
		if (!ok) {
			a->trailer[0] = '\0';
			return s3_err_msg(
				msg, msglen, S3_INVALID_ARGUMENT,
				"x-amz-trailer must be one header of printable text, at most "
				"%d bytes",
				SIGV4_MAX_TRAILER);
		}
	}
	return S3_OK;
}

/* The scope date must be the request's date. */
static enum s3_err check_date(const struct sigv4_auth *a, const struct origin *o, char *msg,
			      size_t msglen)
{
	if (!memcmp(a->date, a->amz_date, 8))
		return S3_OK;
	return s3_err_msg(
		msg, msglen, o->err,
		"%sInvalid credential date \"%s\". This date is not the same as X-Amz-Date: "
		"\"%.8s\".",
		o->query ? "" : o->prefix, a->date, a->amz_date);
}

/* Authorization: AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=... */
static enum s3_err parse_header_auth(const struct sigv4_input *in, const char *v,
				     struct sigv4_auth *a, char *msg, size_t msglen)
{
	static const char *const keys[3] = {"Credential", "SignedHeaders", "Signature"};
	const char *val[3] = {NULL, NULL, NULL};
	size_t vlen[3] = {0, 0, 0}, n = strnlen(v, SIGV4_MAX_AUTH_LEN + 1), alen = 0;
	enum s3_err e;
	if (n > SIGV4_MAX_AUTH_LEN)
		return s3_err_msg(msg, msglen, S3_AUTH_HEADER_MALFORMED,
				  "%sit is longer than %d bytes", from_header.prefix,
				  SIGV4_MAX_AUTH_LEN);
	v = sigv4_trim(v, &n);
	while (alen < n && !is_space(v[alen]))
		alen++;
	if ((alen == 3 && !memcmp(v, "AWS", 3)) ||
	    (alen == 22 && !memcmp(v, "AWS4-ECDSA-P256-SHA256", 22)))
		return s3_err_msg(msg, msglen, S3_INVALID_REQUEST, MSG_UNSUPPORTED);
	if (alen != strlen(ALGO) || memcmp(v, ALGO, alen)) {
		if (alen >= 5 && !memcmp(v, "AWS4-", 5))
			return s3_err_msg(msg, msglen, S3_AUTH_HEADER_MALFORMED,
					  "%sthe algorithm must be " ALGO, from_header.prefix);
		return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT,
				  "Unsupported Authorization Type");
	}
	for (size_t i = alen; i < n;) {
		size_t len = 0, plen;
		while (i + len < n && v[i + len] != ',')
			len++;
		plen = len;
		const char *p = sigv4_trim(v + i, &plen);
		const char *eq = memchr(p, '=', plen);
		int k = -1;
		for (int j = 0; j < 3 && eq; j++)
			if (name_is(keys[j], p, (size_t)(eq - p)))
				k = j;
		if (k < 0 || eq + 1 == p + plen)
			return s3_err_msg(msg, msglen, S3_AUTH_HEADER_MALFORMED,
					  "%sthe authorization component \"%.*s\" is malformed.",
					  from_header.prefix, (int)(plen > 64 ? 64 : plen), p);
		if (val[k])
			return s3_err_msg(msg, msglen, S3_AUTH_HEADER_MALFORMED,
					  "%sthe component %s appears twice.", from_header.prefix,
					  keys[k]);
		val[k] = eq + 1;
		vlen[k] = (size_t)(p + plen - val[k]);
		i += len + 1;
	}
	if (v[n - 1] == ',')
		return s3_err_msg(msg, msglen, S3_AUTH_HEADER_MALFORMED,
				  "%sthe authorization header ends with a comma.",
				  from_header.prefix);
	if (!val[0] || !val[1] || !val[2])
		return s3_err_msg(
			msg, msglen, S3_AUTH_HEADER_MALFORMED,
			"%sthe authorization header requires three components: Credential, "
			"SignedHeaders, and Signature.",
			from_header.prefix);
	if ((e = parse_credential(in, val[0], vlen[0], &from_header, a, msg, msglen)) ||
	    (e = parse_signed_headers(val[1], vlen[1], &from_header, a, msg, msglen)) ||
	    (e = parse_signature(val[2], vlen[2], &from_header, a, msg, msglen)) ||
	    (e = header_time(in, a, msg, msglen)) || (e = check_date(a, &from_header, msg, msglen)))
		return e;
	if (in->now < a->time - SIGV4_MAX_SKEW || in->now > a->time + SIGV4_MAX_SKEW)
		return s3_err_msg(
			msg, msglen, S3_REQUEST_TIME_SKEWED,
			"The difference between the request time and the current time is too "
			"large.");
	return S3_OK;
}

enum { QP_ALGORITHM, QP_CREDENTIAL, QP_DATE, QP_EXPIRES, QP_SIGNED, QP_SIGNATURE, QP_SHA256, QP_N };
static const char *const qp_names[QP_N] = {
	"X-Amz-Algorithm",     "X-Amz-Credential", "X-Amz-Date",           "X-Amz-Expires",
	"X-Amz-SignedHeaders", "X-Amz-Signature",  "X-Amz-Content-Sha256",
};

/* Which of qp_names a raw parameter name is (decoded), or -1. */
static int qp_which(const char *name, size_t n)
{
	char d[32];
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		if (len == sizeof(d))
			return -1;
		if (name[i] == '%') {
			if (n - i < 3 || hex_digit_value((unsigned char)name[i + 1]) < 0 ||
			    hex_digit_value((unsigned char)name[i + 2]) < 0)
				return -1;
			d[len++] = (char)(hex_digit_value((unsigned char)name[i + 1]) << 4 |
					  hex_digit_value((unsigned char)name[i + 2]));
			i += 2;
		} else {
			d[len++] = name[i];
		}
	}
	for (int k = 0; k < QP_N; k++)
		if (strlen(qp_names[k]) == len && !memcmp(qp_names[k], d, len))
			return k;
	if (len == 14 && !memcmp(d, "AWSAccessKeyId", 14))
		return QP_N;
	return -1;
}

#define QUERY_V4 1 /* X-Amz-Algorithm, -Credential or -Signature */
#define QUERY_V2 2 /* AWSAccessKeyId */

static int query_auth_kind(const char *q)
{
	int kind = 0;
	while (q && *q) {
		size_t len = strcspn(q, "&"), nlen = strcspn(q, "=&");
		int k = qp_which(q, nlen);
		if (k == QP_ALGORITHM || k == QP_CREDENTIAL || k == QP_SIGNATURE)
			kind |= QUERY_V4;
		else if (k == QP_N)
			kind |= QUERY_V2;
		q += len + (q[len] == '&');
	}
	return kind;
}

/*
 * X-Amz-Expires: 1..SIGV4_MAX_EXPIRES seconds. Out of range or not a number,
 * it is refused as S3 refuses it, AccessDenied (403) like an expired URL
 * (what compatibility suites check), with S3's words for each.
 */
static bool all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

static enum s3_err parse_expires(const buf *v, struct sigv4_auth *a, char *msg, size_t msglen)
{
	const char *s = v->data ? v->data : "";
	if (v->len > 1 && s[0] == '-' && all_digits(s + 1, v->len - 1))
		return s3_err_msg(msg, msglen, S3_ACCESS_DENIED,
				  "X-Amz-Expires must be non-negative");
	if (!all_digits(s, v->len))
		return s3_err_msg(msg, msglen, S3_ACCESS_DENIED,
				  "X-Amz-Expires should be a number");
	a->expires = v->len > 9 ? SIGV4_MAX_EXPIRES + 1 : digits(s, (int)v->len);
	if (a->expires > SIGV4_MAX_EXPIRES)
		return s3_err_msg(msg, msglen, S3_ACCESS_DENIED,
				  "X-Amz-Expires must be less than a week (in seconds); that is, "
				  "the given X-Amz-Expires must be less than %d seconds",
				  SIGV4_MAX_EXPIRES);
	if (a->expires < 1)
		return s3_err_msg(msg, msglen, S3_EXPIRED_REQUEST, "Request has expired");
	return S3_OK;
}

static bool buf_is(const buf *b, const char *s)
{
	return b->len == strlen(s) && !memcmp(b->data, s, b->len);
}

/* The X-Amz-* parameters of a presigned URL, decoded into v[QP_N]. */
static enum s3_err query_auth_fields(const struct sigv4_input *in, struct sigv4_auth *a, buf *v,
				     char *msg, size_t msglen)
{
	struct qparam *p = xcalloc(SIGV4_MAX_PARAMS, sizeof(*p));
	bool seen[QP_N] = {false};
	enum s3_err e = S3_OK;
	size_t n = split_query(in->raw_query, p, SIGV4_MAX_PARAMS);
	for (size_t i = 0; i < n && n != SIZE_MAX && !e; i++) {
		int k = qp_which(p[i].name, p[i].nlen);
		if (k < 0 || k == QP_N)
			continue;
		if (seen[k])
			e = s3_err_msg(msg, msglen, S3_AUTH_QUERY_ERROR,
				       "%s appears more than once", qp_names[k]);
		else if (!sigv4_pct_decode(p[i].value, p[i].vlen, &v[k]) ||
			 memchr(v[k].data, 0, v[k].len))
			e = s3_err_msg(msg, msglen, S3_AUTH_QUERY_ERROR, "%s is badly encoded",
				       qp_names[k]);
		seen[k] = true;
	}
	free(p);
	if (e)
		return e;
	if (seen[QP_ALGORITHM] && !buf_is(&v[QP_ALGORITHM], ALGO)) {
		if (buf_is(&v[QP_ALGORITHM], "AWS4-ECDSA-P256-SHA256"))
			return s3_err_msg(msg, msglen, S3_INVALID_REQUEST, MSG_UNSUPPORTED);
		return s3_err_msg(msg, msglen, S3_AUTH_QUERY_ERROR,
				  "X-Amz-Algorithm only supports \"" ALGO "\"");
	}
	for (int k = 0; k < QP_SHA256; k++)
		if (!seen[k])
			return s3_err_msg(msg, msglen, S3_AUTH_QUERY_ERROR, MSG_QUERY_MISSING);
	a->payload = SIGV4_PAYLOAD_UNSIGNED;
	if (!seen[QP_SHA256] || buf_is(&v[QP_SHA256], UNSIGNED))
		return S3_OK;
	if (!hex_decode32(v[QP_SHA256].data, v[QP_SHA256].len, a->payload_sha256))
		return s3_err_msg(msg, msglen, S3_AUTH_QUERY_ERROR,
				  "X-Amz-Content-Sha256 must be " UNSIGNED
				  " or a valid sha256 value");
	a->payload = SIGV4_PAYLOAD_HASH;
	memcpy(a->payload_hash, v[QP_SHA256].data, 64);
	a->payload_hash[64] = '\0';
	return S3_OK;
}

static enum s3_err parse_query_auth(const struct sigv4_input *in, struct sigv4_auth *a, char *msg,
				    size_t msglen)
{
	buf v[QP_N];
	enum s3_err e;
	for (int k = 0; k < QP_N; k++)
		buf_init(&v[k]);
	a->presigned = true;
	if ((e = query_auth_fields(in, a, v, msg, msglen)))
		goto out;
	for (int k = 0; k < QP_SHA256; k++)
		buf_append_byte(&v[k], '\0'); /* C strings from here on; lengths exclude it */
	if ((e = parse_credential(in, v[QP_CREDENTIAL].data, v[QP_CREDENTIAL].len - 1, &from_query,
				  a, msg, msglen)) ||
	    (e = parse_signed_headers(v[QP_SIGNED].data, v[QP_SIGNED].len - 1, &from_query, a, msg,
				      msglen)) ||
	    (e = parse_signature(v[QP_SIGNATURE].data, v[QP_SIGNATURE].len - 1, &from_query, a, msg,
				 msglen)))
		goto out;
	if (!parse_iso_basic(v[QP_DATE].data, &a->time)) {
		e = s3_err_msg(msg, msglen, S3_AUTH_QUERY_ERROR,
			       "X-Amz-Date must be in the ISO8601 Long Format "
			       "\"yyyyMMdd'T'HHmmss'Z'\"");
		goto out;
	}
	sigv4_format_time(a->time, a->amz_date);
	v[QP_EXPIRES].len--;
	if ((e = parse_expires(&v[QP_EXPIRES], a, msg, msglen)) ||
	    (e = check_date(a, &from_query, msg, msglen)))
		goto out;
	if (in->now < a->time - SIGV4_MAX_SKEW)
		e = s3_err_msg(msg, msglen, S3_ACCESS_DENIED, "Request is not valid yet");
	else if (in->now > a->time + a->expires)
		e = s3_err_msg(msg, msglen, S3_EXPIRED_REQUEST, "Request has expired");
out:
	for (int k = 0; k < QP_N; k++)
		buf_free(&v[k]);
	return e;
}

/* The bounds, and an encoding the canonical form can be built from. */
enum s3_err sigv4_check_request(const struct sigv4_input *in, char *msg, size_t msglen)
{
	size_t total = 0, plen, n;
	if (in->nheaders > SIGV4_MAX_HEADERS)
		return s3_err_msg(msg, msglen, S3_HEADER_TOO_LARGE, "More than %d request headers",
				  SIGV4_MAX_HEADERS);
	for (size_t i = 0; i < in->nheaders && total <= SIGV4_MAX_HEADER_BYTES; i++)
		total += strnlen(in->headers[i].name, SIGV4_MAX_HEADER_BYTES + 1) +
			 strnlen(in->headers[i].value, SIGV4_MAX_HEADER_BYTES + 1);
	if (total > SIGV4_MAX_HEADER_BYTES)
		return s3_err_msg(msg, msglen, S3_HEADER_TOO_LARGE,
				  "Request headers exceed %d bytes", SIGV4_MAX_HEADER_BYTES);
	if (!in->method || !*in->method || strlen(in->method) > 32)
		return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT, "Bad request method");
	plen = in->raw_path ? strnlen(in->raw_path, SIGV4_MAX_PATH + 1) : 0;
	if (plen == 0 || in->raw_path[0] != '/' || plen > SIGV4_MAX_PATH ||
	    !pct_valid(in->raw_path, plen))
		return s3_err_msg(msg, msglen, S3_INVALID_URI,
				  "The request path is empty, longer than %d bytes or badly "
				  "percent-encoded",
				  SIGV4_MAX_PATH);
	if (!in->raw_query)
		return S3_OK;
	n = strnlen(in->raw_query, SIGV4_MAX_QUERY + 1);
	if (n > SIGV4_MAX_QUERY || !pct_valid(in->raw_query, n))
		return s3_err_msg(
			msg, msglen, S3_INVALID_URI,
			"The query string is longer than %d bytes or badly percent-encoded",
			SIGV4_MAX_QUERY);
	size_t params = 0;
	for (const char *q = in->raw_query; *q;) {
		size_t len = strcspn(q, "&");
		params += len > 0;
		q += len + (q[len] == '&');
	}
	if (params > SIGV4_MAX_PARAMS)
		return s3_err_msg(msg, msglen, S3_INVALID_ARGUMENT, "More than %d query parameters",
				  SIGV4_MAX_PARAMS);
	return S3_OK;
}

enum s3_err sigv4_parse(const struct sigv4_input *in, struct sigv4_auth *a, bool *anonymous,
			char *msg, size_t msglen)
{
	size_t nauth;
	enum s3_err e;
	memset(a, 0, sizeof(*a));
	a->decoded_length = -1;
	*anonymous = false;
	if (msg && msglen)
		msg[0] = '\0';
	const char *auth = sigv4_header_find(in, "authorization", &nauth);
	int kind = query_auth_kind(in->raw_query);
	if (!auth && !kind) {
		*anonymous = true;
		return S3_OK;
	}
	if ((e = sigv4_check_request(in, msg, msglen)))
		return e;
	if (auth && kind)
		return s3_err_msg(
			msg, msglen, S3_INVALID_ARGUMENT,
			"Only one auth mechanism allowed; only the X-Amz-Algorithm query "
			"parameter, Signature query string parameter or the Authorization header "
			"should be specified");
	if (nauth > 1)
		return s3_err_msg(msg, msglen, S3_AUTH_HEADER_MALFORMED,
				  "%sthe request has more than one Authorization header.",
				  from_header.prefix);
	if (kind == QUERY_V2)
		return s3_err_msg(msg, msglen, S3_INVALID_REQUEST, MSG_UNSUPPORTED);
	e = auth ? parse_header_auth(in, auth, a, msg, msglen)
		 : parse_query_auth(in, a, msg, msglen);
	if (!e)
		e = check_unsigned(in, a, msg, msglen);
	if (!e)
		e = check_signed_values(in, a, msg, msglen);
	if (!e && auth)
		e = header_payload(in, a, msg, msglen);
	if (e) { /* leave nothing half-read behind */
		memset(a, 0, sizeof(*a));
		a->decoded_length = -1;
	}
	return e;
}

/* ---- chunk and trailer signatures ---- */

void sigv4_chunk_init(struct sigv4_chunk_ctx *c, const struct sigv4_auth *a,
		      const uint8_t signing_key[32])
{
	memset(c, 0, sizeof(*c));
	memcpy(c->key, signing_key, 32);
	memcpy(c->amz_date, a->amz_date, sizeof(c->amz_date));
	build_scope(a->date, a->region, a->service, c->scope, sizeof(c->scope));
	memcpy(c->prev, a->signature, sizeof(c->prev));
}

/* The next signature in c's chain for a chunk (or the trailer) hashing to h. */
static void chain_sig(const struct sigv4_chunk_ctx *c, bool trailer, const uint8_t h[32],
		      char out[65])
{
	char hex[65], sts[64 + 17 + SIGV4_SCOPE_MAX + 3 * 65];
	int n;
	hex_encode(h, 32, hex);
	if (trailer)
		n = snprintf(sts, sizeof(sts), ALGO "-TRAILER\n%s\n%s\n%s\n%s", c->amz_date,
			     c->scope, c->prev, hex);
	else
		n = snprintf(sts, sizeof(sts), ALGO "-PAYLOAD\n%s\n%s\n%s\n" EMPTY_SHA256 "\n%s",
			     c->amz_date, c->scope, c->prev, hex);
	sigv4_hmac_hex(c->key, sts, (size_t)n, out);
}

static bool chain_check(struct sigv4_chunk_ctx *c, bool trailer, const uint8_t h[32],
			const char *claimed)
{
	char want[65];
	uint8_t w[32], got[32];
	chain_sig(c, trailer, h, want);
	if (!claimed || !hex_decode32(claimed, strnlen(claimed, 65), got) ||
	    !hex_decode32(want, 64, w) || CRYPTO_memcmp(w, got, 32))
		return false;
	memcpy(c->prev, want, sizeof(c->prev));
	return true;
}

bool sigv4_chunk_check(struct sigv4_chunk_ctx *c, const uint8_t data_sha256[32],
		       const char *claimed_hex)
{
	return chain_check(c, false, data_sha256, claimed_hex);
}

bool sigv4_trailer_check(struct sigv4_chunk_ctx *c, const uint8_t trailer_sha256[32],
			 const char *claimed_hex)
{
	return chain_check(c, true, trailer_sha256, claimed_hex);
}

void sigv4_chunk_sign(struct sigv4_chunk_ctx *c, const uint8_t data_sha256[32], char out[65])
{
	chain_sig(c, false, data_sha256, out);
	memcpy(c->prev, out, sizeof(c->prev));
}

void sigv4_trailer_sign(struct sigv4_chunk_ctx *c, const uint8_t trailer_sha256[32], char out[65])
{
	chain_sig(c, true, trailer_sha256, out);
	memcpy(c->prev, out, sizeof(c->prev));
}

/* ---- signers ---- */

/* Signs canonical request c as s at s->amz_date: appends the scope to scope_out. */
static void sign_canonical(const struct sigv4_signer *s, const buf *c, char scope[SIGV4_SCOPE_MAX],
			   char sig[65])
{
	char date8[9];
	uint8_t key[32];
	buf sts = BUF_INIT;
	const char *service = s->service ? s->service : "s3";
	memcpy(date8, s->amz_date, 8);
	date8[8] = '\0';
	build_scope(date8, s->region, service, scope, SIGV4_SCOPE_MAX);
	build_sts(s->amz_date, scope, c, &sts);
	sigv4_signing_key(s->secret, date8, s->region, service, key);
	sigv4_hmac_hex(key, sts.data, sts.len, sig);
	OPENSSL_cleanse(key, sizeof(key));
	buf_free(&sts);
}

bool sigv4_sign_header(const struct sigv4_input *in, const char *signed_headers,
		       const char *payload, const struct sigv4_signer *s, buf *out)
{
	char scope[SIGV4_SCOPE_MAX], sig[65];
	buf c = BUF_INIT;
	bool ok = build_canonical(in, false, signed_headers, payload, &c);
	if (ok) {
		sign_canonical(s, &c, scope, sig);
		buf_printf(out, ALGO " Credential=%s/%s, SignedHeaders=%s, Signature=%s",
			   s->access_key, scope, signed_headers, sig);
	}
	buf_free(&c);
	return ok;
}

/* A presigned URL signs its X-Amz-Content-Sha256 parameter, if any, as the payload line:
 * decodes it into out. False on a bad escape. */
static bool presign_payload(const char *q, buf *out)
{
	while (q && *q) {
		size_t len = strcspn(q, "&"), nlen = strcspn(q, "=&");
		if (qp_which(q, nlen) == QP_SHA256 && nlen < len) {
			buf_reset(out);
			if (!sigv4_pct_decode(q + nlen + 1, len - nlen - 1, out))
				return false;
		}
		q += len + (q[len] == '&');
	}
	return true;
}

bool sigv4_presign(const struct sigv4_input *in, const char *signed_headers, int64_t expires,
		   const struct sigv4_signer *s, buf *out)
{
	char scope[SIGV4_SCOPE_MAX], sig[65], date8[9];
	buf q = BUF_INIT, c = BUF_INIT, cred = BUF_INIT, payload = BUF_INIT;
	struct sigv4_input in2 = *in;
	bool ok;
	memcpy(date8, s->amz_date, 8);
	date8[8] = '\0';
	build_scope(date8, s->region, s->service ? s->service : "s3", scope, sizeof(scope));
	buf_printf(&cred, "%s/%s", s->access_key, scope);
	if (in->raw_query && *in->raw_query)
		buf_printf(&q, "%s&", in->raw_query);
	buf_append_str(&q, "X-Amz-Algorithm=" ALGO "&X-Amz-Credential=");
	sigv4_uri_encode(cred.data, cred.len, false, &q);
	buf_printf(&q, "&X-Amz-Date=%s&X-Amz-Expires=%lld&X-Amz-SignedHeaders=", s->amz_date,
		   (long long)expires);
	sigv4_uri_encode(signed_headers, strlen(signed_headers), false, &q);
	in2.raw_query = q.data;
	ok = presign_payload(in->raw_query, &payload) &&
	     build_canonical(&in2, true, signed_headers, payload.len ? payload.data : UNSIGNED, &c);
	if (ok) {
		sign_canonical(s, &c, scope, sig);
		buf_printf(out, "%s&X-Amz-Signature=%s", q.data, sig);
	}
	buf_free(&q);
	buf_free(&c);
	buf_free(&cred);
	buf_free(&payload);
	return ok;
}
