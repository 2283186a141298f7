/*
 * Fuzzes the aws-chunked decoder (s3/aws_chunked.h) and the checksum helpers
 * it leans on (s3/checksum.h).
 *
 * Input: 4 bytes of settings (mode, trailer checksum, decoded length, minimum
 * chunk, split seeds), then the body. The body is decoded in one call, in
 * pseudo-random pieces and (when short) a byte at a time; all three must
 * agree on the errors and on every payload byte. A decoder never produces
 * more payload than it was fed, reports what it passed on, and a body it
 * accepts matches the declared length and its own trailer checksum. A sink
 * that fails part-way stops it for good.
 */
#include "config.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "s3/aws_chunked.h"
#include "s3/checksum.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Signatures are the sigv4 module's business: here one starting with 'f' is bad. */
static bool verify(void *ctx, const uint8_t sha256[32], const char *sig)
{
	if (strlen(sig) != 64)
		abort();
	return sig[0] != 'f';
}

struct sink {
	buf out;
	size_t fail_after; /* SIZE_MAX: never */
};

static enum s3_err sink_out(void *ctx, const char *data, size_t len)
{
	struct sink *k = ctx;
	if (!len)
		abort(); /* never called with nothing */
	if (k->out.len + len > k->fail_after)
		return S3_SERVICE_UNAVAILABLE;
	buf_append(&k->out, data, len);
	return S3_OK;
}

struct run {
	enum s3_err feed, fin;
	buf out;
	char cksum[S3_CKSUM_B64_SIZE + 1];
};

static uint32_t next(uint32_t *x)
{
	*x = *x * 1664525u + 1013904223u;
	return *x >> 8;
}

/* step 0: one call; 1: a byte at a time; else pseudo-random pieces seeded by step */
static void decode(const struct aws_chunked_opts *o, const char *body, size_t len, uint32_t step,
		   size_t fail_after, struct run *r)
{
	aws_chunked *d = aws_chunked_new(o);
	struct sink k = {BUF_INIT, fail_after};
	uint32_t x = step;
	const char *c;
	r->feed = S3_OK;
	for (size_t off = 0; off < len && !r->feed;) {
		size_t n = step == 0 ? len : step == 1 ? 1 : 1 + next(&x) % 64;
		n = MIN(n, len - off);
		r->feed = aws_chunked_feed(d, body + off, n, sink_out, &k);
		off += n;
	}
	if (r->feed && aws_chunked_feed(d, body, len, sink_out, &k) != r->feed)
		abort(); /* errors stick */
	r->fin = aws_chunked_finish(d);
	if (r->feed && r->fin != r->feed)
		abort();
	if (aws_chunked_finish(d) != r->fin)
		abort();
	if (k.out.len > len || aws_chunked_decoded(d) < k.out.len)
		abort();
	if (fail_after == SIZE_MAX && aws_chunked_decoded(d) != k.out.len)
		abort();
	c = aws_chunked_checksum(d);
	if (c && strlen(c) >= S3_CKSUM_B64_SIZE)
		abort();
	snprintf(r->cksum, sizeof(r->cksum), "%s", c ? c : "-");
	r->out = k.out;
	aws_chunked_free(d);
}

static bool same(const struct run *a, const struct run *b)
{
	return a->feed == b->feed && a->fin == b->fin && a->out.len == b->out.len &&
	       (!a->out.len || !memcmp(a->out.data, b->out.data, a->out.len)) &&
	       !strcmp(a->cksum, b->cksum);
}

static void check_checksums(const uint8_t *data, size_t size)
{
	char *s = xmalloc(size + 1);
	size_t cut = size ? data[0] % (size + 1) : 0;
	memcpy(s, data, size);
	s[size] = '\0';
	(void)s3_cksum_from_name(s);
	(void)s3_cksum_from_header(s);
	for (int a = S3_CKSUM_NONE; a < S3_CKSUM_COUNT; a++)
		if (s3_cksum_b64_valid((enum s3_cksum)a, s, size) &&
		    size != s3_cksum_b64_len((enum s3_cksum)a))
			abort();
	if (crc64nvme_update(crc64nvme_update(0, data, cut), data + cut, size - cut) !=
	    crc64nvme_update(0, data, size))
		abort();
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aws_chunked_opts o;
	struct run one, other;
	const char *body;
	size_t len;
	int mode;

	check_checksums(data, size);
	if (size < 4)
		return 0;
	body = (const char *)data + 4;
	len = size - 4;
	memset(&o, 0, sizeof(o));
	mode = data[0] & 3; /* signed, signed+trailer, unsigned+trailer, signed+unsigned trailer */
	o.signed_chunks = mode != 2;
	o.trailer = mode != 0;
	o.trailer_signed = mode == 1;
	o.trailer_cksum =
		o.trailer ? (enum s3_cksum)((data[0] >> 3 & 7) % S3_CKSUM_COUNT) : S3_CKSUM_NONE;
	o.decoded_length = data[0] & 0x40 ? data[1] : UINT64_MAX;
	o.min_chunk = data[0] & 0x80 ? data[1] % 16 : 0;
	o.verify_chunk = verify;
	o.verify_trailer = verify;

	decode(&o, body, len, 0, SIZE_MAX, &one);
	if (!one.feed && !one.fin) {
		/* accepted: the declared length and the trailer's checksum hold */
		if (o.decoded_length != UINT64_MAX && one.out.len != o.decoded_length)
			abort();
		if (o.trailer_cksum != S3_CKSUM_NONE) {
			char want[S3_CKSUM_B64_SIZE];
			s3_cksum_b64(o.trailer_cksum, one.out.data, one.out.len, want);
			if (strcmp(one.cksum, want))
				abort();
		} else if (strcmp(one.cksum, "-")) {
			abort();
		}
	}
	decode(&o, body, len, 2u + (data[2] | (uint32_t)data[3] << 8), SIZE_MAX, &other);
	if (!same(&one, &other))
		abort();
	buf_free(&other.out);
	if (len <= 4096) {
		decode(&o, body, len, 1, SIZE_MAX, &other);
		if (!same(&one, &other))
			abort();
		buf_free(&other.out);
	}
	if (one.out.len) {
		/* a sink that fails: its error, no more output, whatever came before */
		size_t cut = data[2] % one.out.len;
		decode(&o, body, len, 1u + data[3], cut, &other);
		if (other.feed != S3_SERVICE_UNAVAILABLE && other.feed != one.feed)
			abort();
		if (other.out.len > cut ||
		    (other.out.len && memcmp(other.out.data, one.out.data, other.out.len)))
			abort();
		buf_free(&other.out);
	}
	buf_free(&one.out);
	return 0;
}
