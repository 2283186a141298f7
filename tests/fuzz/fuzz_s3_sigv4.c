/*
 * Fuzzes SigV4 (s3/sigv4.h) with what a client controls: method, raw path,
 * raw query and header lines (Authorization included). The first byte picks
 * the mode: the request exactly as given, or the given path, query and
 * headers signed by our signer with a fixed secret (Authorization header or
 * presigned URL).
 *
 * Checked on every input: no crash, a known error code with a message and a
 * cleared auth on failure; on success sane fields (printable key, 8-digit
 * date, service s3, 64 lowercase hex digits, host signed, clock within
 * bounds), verify agreeing with the expected signature, the right signature
 * verifying and a flipped one not, the chunk chain accepting what its signer
 * made. For inputs our signer made, a request that parses must verify.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "s3/sigv4.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SECRET  "fuzz/secret+key"
#define T2013   1369353600
#define MAXHDR  (SIGV4_MAX_HEADERS + 8)
#define PAYLOAD "UNSIGNED-PAYLOAD"

struct fz_req {
	char *method, *path, *query;
	struct sigv4_header h[MAXHDR + 4];
	char *owned[2 * MAXHDR + 16]; /* every string, exactly sized for ASan */
	size_t n, nowned;
};

static char *own(struct fz_req *r, const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	r->owned[r->nowned++] = p;
	return p;
}

static void fz_free(struct fz_req *r)
{
	for (size_t i = 0; i < r->nowned; i++)
		free(r->owned[i]);
}

/* Lines: method, path, query ("\x01" for none), then "name:value" headers. */
static void split(struct fz_req *r, const char *s, size_t size)
{
	const char *end = s + size;
	int line = 0;
	while (s <= end && r->n < MAXHDR) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);
		if (line == 0)
			r->method = own(r, s, len);
		else if (line == 1)
			r->path = own(r, s, len);
		else if (line == 2)
			r->query = len == 1 && s[0] == 1 ? NULL : own(r, s, len);
		else {
			const char *colon = memchr(s, ':', len);
			size_t nlen = colon ? (size_t)(colon - s) : len;
			r->h[r->n].name = own(r, s, nlen);
			r->h[r->n++].value =
				colon ? own(r, colon + 1, len - nlen - 1) : own(r, "", 0);
		}
		line++;
		if (!nl)
			break;
		s = nl + 1;
	}
	if (!r->method)
		r->method = own(r, "GET", 3);
	if (!r->path)
		r->path = own(r, "/", 1);
}

static bool lower_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' ||
		      *s == '_'))
			return false;
	return true;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted, deduplicated lowercase names of r's token headers, joined by ';'. */
static void signed_list(struct fz_req *r, buf *out)
{
	char **names = xcalloc(r->n + 1, sizeof(*names));
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++) {
		char *l = xstrdup(r->h[i].name);
		for (char *p = l; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
		if (lower_token(l))
			names[k++] = l;
		else
			free(l);
	}
	qsort(names, k, sizeof(*names), cmp_str);
	for (size_t i = 0; i < k; i++)
		if (!i || strcmp(names[i], names[i - 1]))
			buf_printf(out, "%s%s", out->len ? ";" : "", names[i]);
	for (size_t i = 0; i < k; i++)
		free(names[i]);
	free(names);
}

static bool is_lower_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static void check_success(const struct sigv4_input *in, const struct sigv4_auth *a, bool ours)
{
	char sig[65];
	uint8_t key[32], key2[32], h[32] = {1, 2, 3};
	struct sigv4_auth b = *a;
	if (!a->access_key[0] || strcmp(a->service, "s3") || strlen(a->date) != 8 ||
	    strncmp(a->date, a->amz_date, 8) || strlen(a->amz_date) != 16 ||
	    !is_lower_hex(a->signature, 64) || a->nsigned < 1 || a->nsigned > SIGV4_MAX_SIGNED ||
	    !strstr(a->signed_headers, "host") || a->decoded_length < -1 ||
	    (unsigned)a->payload > SIGV4_STREAMING_UNSIGNED_TRAILER)
		abort();
	for (const char *p = a->access_key; *p; p++)
		if (*p <= ' ' || *p > '~')
			abort();
	if (a->presigned ? a->expires < 1 || a->expires > SIGV4_MAX_EXPIRES ||
				   in->now > a->time + a->expires
			 : in->now - a->time > SIGV4_MAX_SKEW || a->time - in->now > SIGV4_MAX_SKEW)
		abort();
	if (a->payload == SIGV4_PAYLOAD_HASH && strlen(a->payload_hash) != 64)
		abort();
	/* parse refused what cannot be canonicalised, so verify answers match or mismatch */
	if (!sigv4_expected(in, a, SECRET, sig, key))
		abort();
	enum s3_err e = sigv4_verify(in, a, SECRET, key2);
	if ((e == S3_OK) != !strcmp(sig, a->signature) ||
	    (e != S3_OK && e != S3_SIGNATURE_MISMATCH))
		abort();
	if (ours && e != S3_OK)
		abort();
	memcpy(b.signature, sig, 65);
	if (sigv4_verify(in, &b, SECRET, key2) != S3_OK || memcmp(key, key2, 32))
		abort();
	b.signature[7] = b.signature[7] == '0' ? '1' : '0';
	if (sigv4_verify(in, &b, SECRET, NULL) != S3_SIGNATURE_MISMATCH)
		abort();
	/* the chunk chain accepts what its signer makes, once, in order */
	struct sigv4_chunk_ctx c, v;
	sigv4_chunk_init(&c, a, key);
	v = c;
	sigv4_chunk_sign(&c, h, sig);
	if (!sigv4_chunk_check(&v, h, sig) || sigv4_chunk_check(&v, h, sig))
		abort();
	sigv4_trailer_sign(&c, h, sig);
	if (!sigv4_trailer_check(&v, h, sig))
		abort();
}

static void run(struct fz_req *r, int64_t now, bool ours)
{
	struct sigv4_input in = {r->method, r->path, r->query, r->h, r->n, now, NULL, NULL};
	struct sigv4_auth a;
	char msg[256];
	bool anon = true;
	memset(msg, 'x', sizeof(msg));
	enum s3_err e = sigv4_parse(&in, &a, &anon, msg, sizeof(msg));
	if ((unsigned)e >= S3_ERR_COUNT || !memchr(msg, '\0', sizeof(msg)))
		abort();
	if (e != S3_OK) {
		if (anon || !msg[0] || a.access_key[0] || a.signature[0] || a.decoded_length != -1)
			abort();
		return;
	}
	if (!anon)
		check_success(&in, &a, ours);
}

/* Signs r (header auth) with our signer; returns false if it refused. */
static bool sign_header(struct fz_req *r, uint8_t sel)
{
	static const char *const payloads[] = {
		PAYLOAD, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
		"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"};
	const char *payload = payloads[sel % 5];
	struct sigv4_signer s = {"AKFUZZ", SECRET, "us-east-1", NULL, "20130524T000000Z"};
	buf list = BUF_INIT, auth = BUF_INIT;
	r->h[r->n].name = own(r, "host", 4);
	r->h[r->n++].value = own(r, "gw", 2);
	r->h[r->n].name = own(r, "x-amz-date", 10);
	r->h[r->n++].value = own(r, "20130524T000000Z", 16);
	r->h[r->n].name = own(r, "x-amz-content-sha256", 20);
	r->h[r->n++].value = own(r, payload, strlen(payload));
	signed_list(r, &list);
	struct sigv4_input in = {r->method, r->path, r->query, r->h, r->n, T2013, NULL, NULL};
	bool ok = sigv4_sign_header(&in, list.data, payload, &s, &auth);
	if (ok) {
		r->h[r->n].name = own(r, "Authorization", 13);
		r->h[r->n++].value = own(r, auth.data, auth.len);
	}
	buf_free(&list);
	buf_free(&auth);
	return ok;
}

static bool presign(struct fz_req *r, uint8_t sel)
{
	struct sigv4_signer s = {"AKFUZZ", SECRET, "us-east-1", NULL, "20130524T000000Z"};
	buf list = BUF_INIT, q = BUF_INIT;
	r->h[r->n].name = own(r, "Host", 4);
	r->h[r->n++].value = own(r, "gw", 2);
	signed_list(r, &list);
	struct sigv4_input in = {r->method, r->path, r->query, r->h, r->n, T2013, NULL, NULL};
	bool ok = sigv4_presign(&in, list.data, 1 + sel % 1000, &s, &q);
	if (ok)
		r->query = own(r, q.data, q.len);
	buf_free(&list);
	buf_free(&q);
	return ok;
}

static void check_encode(const uint8_t *data, size_t size)
{
	buf b = BUF_INIT;
	sigv4_uri_encode((const char *)data, size, size & 1, &b);
	for (size_t i = 0; i < b.len; i++) {
		char c = b.data[i];
		if (c == '%') {
			if (i + 2 >= b.len || !strchr("0123456789ABCDEF", b.data[i + 1]) ||
			    !strchr("0123456789ABCDEF", b.data[i + 2]))
				abort();
			i += 2;
		} else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || strchr("-._~/", c))) {
			abort();
		}
	}
	buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_req r;
	int64_t now;
	if (size < 2)
		return 0;
	memset(&r, 0, sizeof(r));
	uint8_t mode = data[0] % 4, sel = data[1];
	split(&r, (const char *)data + 2, size - 2);
	/* mode 3: the clock from the input, extremes included */
	now = mode == 3 && size >= 10 ? (int64_t)get_be64(data + 2) : T2013 + (sel - 128) * 10;
	if (mode == 1 && sign_header(&r, sel))
		run(&r, T2013 + sel % 64, true);
	else if (mode == 2 && presign(&r, sel))
		run(&r, T2013 + sel % 64, true);
	else
		run(&r, now, false);
	check_encode(data, size);
	fz_free(&r);
	return 0;
}
