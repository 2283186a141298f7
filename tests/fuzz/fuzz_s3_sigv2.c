/*
 * Fuzzes SigV2 (s3/sigv2.h) with what a client controls: method, raw path,
 * raw query and header lines (Authorization included), one per line; the
 * first byte picks whether the request is virtual-hosted and the clock.
 *
 * Checked on every input: no crash; a failure comes with a message and a
 * cleared auth; a success has a key and a signature, verify answers match
 * or mismatch only, and a request signed with the right signature of its
 * own string to sign verifies while the same with one character changed
 * does not.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "s3/sigv2.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SECRET "fuzz/secret+key"
#define MAXHDR 64

struct fz_req {
	struct sigv4_input in;
	struct sigv4_header h[MAXHDR];
	char *owned[MAXHDR * 2 + 4];
	size_t nowned;
};

static char *own(struct fz_req *r, const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	r->owned[r->nowned++] = p;
	return p;
}

/* Lines: method, path, query ("\x01" for none), then "name:value" headers. */
static void split(struct fz_req *r, const char *s, size_t size)
{
	const char *end = s + size;
	int line = 0;
	r->in.headers = r->h;
	while (s <= end && r->in.nheaders < MAXHDR) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);
		if (line == 0) {
			r->in.method = own(r, s, len);
		} else if (line == 1) {
			r->in.raw_path = own(r, s, len);
		} else if (line == 2) {
			r->in.raw_query = len == 1 && s[0] == 1 ? NULL : own(r, s, len);
		} else {
			const char *colon = memchr(s, ':', len);
			size_t nlen = colon ? (size_t)(colon - s) : len;
			r->h[r->in.nheaders].name = own(r, s, nlen);
			r->h[r->in.nheaders++].value =
				colon ? own(r, colon + 1, len - nlen - 1) : own(r, "", 0);
		}
		line++;
		if (!nl)
			break;
		s = nl + 1;
	}
	if (!r->in.method)
		r->in.method = own(r, "GET", 3);
	if (!r->in.raw_path)
		r->in.raw_path = own(r, "/", 1);
}

static void check_success(struct fz_req *r, struct sigv2_auth *a, const char *vhost)
{
	enum s3_err v;
	buf sts = BUF_INIT;
	char right[29];

	if (!a->access_key[0] || !a->signature[0])
		abort();
	v = sigv2_verify(&r->in, a, vhost, SECRET);
	if (v != S3_OK && v != S3_SIGNATURE_MISMATCH)
		abort();
	sigv2_string_to_sign(&r->in, a, vhost, &sts);
	sigv2_sign(SECRET, sts.data ? sts.data : "", sts.len, right);
	buf_free(&sts);
	memcpy(a->signature, right, sizeof(right));
	if (sigv2_verify(&r->in, a, vhost, SECRET) != S3_OK)
		abort();
	a->signature[5] = a->signature[5] == 'A' ? 'B' : 'A';
	if (sigv2_verify(&r->in, a, vhost, SECRET) != S3_SIGNATURE_MISMATCH)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_req r;
	struct sigv2_auth a;
	char msg[256];
	const char *vhost;
	enum s3_err e;

	if (size < 1 || size > 1 << 16)
		return 0;
	memset(&r, 0, sizeof(r));
	vhost = data[0] & 1 ? "fuzz-bucket" : NULL;
	/* a clock near the Dates and Expires the seeds carry, or far from them */
	r.in.now = data[0] & 2 ? 1175024202 : (int64_t)(data[0] >> 2) * 100000000;
	split(&r, (const char *)data + 1, size - 1);
	(void)sigv2_present(&r.in);
	memset(&a, 0x5a, sizeof(a));
	e = sigv2_parse(&r.in, &a, msg, sizeof(msg));
	if (e == S3_OK) {
		check_success(&r, &a, vhost);
	} else {
		if (!msg[0] || a.access_key[0] || a.signature[0] || a.expires[0])
			abort();
	}
	for (size_t i = 0; i < r.nowned; i++)
		free(r.owned[i]);
	return 0;
}
