/*
 * The aws-chunked body decoder (aws_chunked.h).
 *
 * DESIGN
 * - A byte-driven state machine: chunk header line, chunk data, the CRLF after
 *   it, the trailer section, done. Lines (chunk headers, trailers) are
 *   collected in one fixed buffer of AWS_CHUNKED_LINE_MAX bytes; chunk data is
 *   never copied: it goes from the caller's buffer straight to the out
 *   callback, hashed on the way. So any split of the input decodes the same,
 *   and memory is constant whatever the chunk sizes.
 * - Strict where every client agrees: CRLF line ends only, no whitespace or
 *   extension in a chunk header but the one chunk-signature, hex sizes,
 *   64-hex signatures, only the checksum x-amz-trailer named and the trailer
 *   signature in a trailer, each at most once, the signature last.
 * - Two tolerances, both because AWS's own trailer example is laid out so
 *   while the SDKs send plain HTTP/1.1 chunked trailers: one empty line may
 *   sit between the 0-size chunk and the trailer lines, and a body may end
 *   without the closing empty line once a trailer line has been read. Neither
 *   lets through a byte that was not checked: the payload has ended by then.
 * - Errors are the codes S3 answers with: IncompleteBody for any framing
 *   fault (S3 does not tell them apart) and for a decoded length other than
 *   x-amz-decoded-content-length, InvalidChunkSizeError for a short chunk
 *   that is not the last, MalformedTrailerError for
 *   trailers, InvalidRequest for a checksum value that is not well-formed,
 *   BadDigest for one that does not match.
 * - A signed trailer is authenticated before its checksum is compared, so a
 *   tampered trailer reads as a bad signature rather than a bad digest.
 * - Signatures themselves are the caller's (sigv4): it gets each chunk's
 *   SHA-256 and claimed signature, and keeps the chain.
 */
#include "config.h"
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include "s3/aws_chunked.h"
#include "s3/sigv4.h"
#include "util.h"

#define SIG_HEX          64
#define CHUNK_SIG_KEY    ";chunk-signature="
#define TRAILER_SIG_NAME "x-amz-trailer-signature"

enum state {
	ST_HEADER,  /* in a chunk header line */
	ST_DATA,    /* in a chunk's data */
	ST_DATA_CR, /* after the data: '\r' */
	ST_DATA_LF, /* then '\n' */
	ST_TRAILER, /* after the 0-size chunk: trailer lines up to an empty one */
	ST_DONE,
	ST_FAILED
};

struct aws_chunked {
	struct aws_chunked_opts o;
	enum state st;
	enum s3_err err;                     /* the sticky error in ST_FAILED */
	char line[AWS_CHUNKED_LINE_MAX + 2]; /* a line, its CR, a NUL */
	size_t line_len;
	uint64_t left;      /* data bytes left in the current chunk */
	uint64_t last_size; /* the last data chunk's size; UINT64_MAX before the first */
	uint64_t decoded;
	char sig[SIG_HEX + 1];            /* the current chunk's claimed signature */
	EVP_MD_CTX *chunk_md;             /* signed_chunks: SHA-256 of the current chunk */
	struct s3_cksum_ctx ck;           /* trailer_cksum: over the payload */
	char computed[S3_CKSUM_B64_SIZE]; /* its value once the payload ended */
	bool blank_seen;                  /* the tolerated empty line before the trailers */
	unsigned trailer_lines;           /* non-empty trailer lines read */
	bool have_value, have_sig;
	char value[S3_CKSUM_B64_SIZE];        /* the checksum trailer's value */
	char trailer_sig[SIG_HEX + 1];        /* x-amz-trailer-signature */
	char canon[AWS_CHUNKED_LINE_MAX + 2]; /* the signed trailer text ("name:value\n") */
	size_t canon_len;
};

bool aws_chunked_mode(const char *content_sha256, struct aws_chunked_opts *o)
{
	static const struct {
		const char *value;
		bool signed_chunks, trailer, trailer_signed;
	} modes[] = {
		{"STREAMING-AWS4-HMAC-SHA256-PAYLOAD", true, false, false},
		{"STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", true, true, true},
		{"STREAMING-UNSIGNED-PAYLOAD-TRAILER", false, true, false},
	};
	for (size_t i = 0; content_sha256 && i < ARRAY_LEN(modes); i++)
		if (!strcmp(content_sha256, modes[i].value)) {
			o->signed_chunks = modes[i].signed_chunks;
			o->trailer = modes[i].trailer;
			o->trailer_signed = modes[i].trailer_signed;
			return true;
		}
	return false;
}

aws_chunked *aws_chunked_new(const struct aws_chunked_opts *o)
{
	aws_chunked *d;
	assert(!o->trailer_signed || (o->trailer && o->signed_chunks));
	assert(o->trailer_cksum == S3_CKSUM_NONE ||
	       (o->trailer && s3_cksum_digest_len(o->trailer_cksum)));
	assert(!o->signed_chunks || o->verify_chunk);
	assert(!o->trailer_signed || o->verify_trailer);
	d = xcalloc(1, sizeof(*d));
	d->o = *o;
	d->st = ST_HEADER;
	d->last_size = UINT64_MAX;
	if (o->signed_chunks && !(d->chunk_md = EVP_MD_CTX_new()))
		abort(); /* allocation failure, as xmalloc */
	if (o->trailer_cksum != S3_CKSUM_NONE)
		s3_cksum_init(&d->ck, o->trailer_cksum);
	return d;
}

void aws_chunked_free(aws_chunked *d)
{
	if (!d)
		return;
	EVP_MD_CTX_free(d->chunk_md);
	s3_cksum_clear(&d->ck);
	free(d);
}

const char *aws_chunked_checksum(const aws_chunked *d) { return d->have_value ? d->value : NULL; }

uint64_t aws_chunked_decoded(const aws_chunked *d) { return d->decoded; }

static enum s3_err fail(aws_chunked *d, enum s3_err e)
{
	d->st = ST_FAILED;
	d->err = e;
	return e;
}

/* The error for a bad line where d is: trailers have their own code. */
static enum s3_err line_error(const aws_chunked *d)
{
	return d->st == ST_TRAILER && d->o.trailer ? S3_MALFORMED_TRAILER : S3_INCOMPLETE_BODY;
}

/* Copies 64 hex digits at p to out, lower-cased; false if they are not that. */
static bool take_sig(const char *p, size_t n, char out[SIG_HEX + 1])
{
	if (n != SIG_HEX)
		return false;
	for (size_t i = 0; i < SIG_HEX; i++) {
		if (hex_digit_value((unsigned char)p[i]) < 0)
			return false;
		out[i] = p[i] >= 'A' && p[i] <= 'F' ? (char)(p[i] - 'A' + 'a') : p[i];
	}
	out[SIG_HEX] = '\0';
	return true;
}

static enum s3_err verify_chunk(aws_chunked *d)
{
	uint8_t h[32];
	unsigned int hl = 0;
	if (!EVP_DigestFinal_ex(d->chunk_md, h, &hl) || hl != sizeof(h))
		abort();
	return d->o.verify_chunk(d->o.ctx, h, d->sig) ? S3_OK : S3_SIGNATURE_MISMATCH;
}

static void start_chunk_hash(aws_chunked *d)
{
	if (!EVP_DigestInit_ex(d->chunk_md, sigv4_sha256_md(), NULL))
		abort();
}

/* "<hex size>[;chunk-signature=<64 hex>]" */
static enum s3_err header_line(aws_chunked *d, const char *p, size_t n)
{
	uint64_t size = 0;
	size_t i = 0;
	int v;
	for (; i < n && (v = hex_digit_value((unsigned char)p[i])) >= 0; i++)
		size = size > AWS_CHUNKED_CHUNK_MAX ? size : size << 4 | (uint64_t)v;
	if (i == 0)
		return S3_INCOMPLETE_BODY;
	if (d->o.signed_chunks) {
		size_t kl = strlen(CHUNK_SIG_KEY);
		if (n - i < kl || memcmp(p + i, CHUNK_SIG_KEY, kl) ||
		    !take_sig(p + i + kl, n - i - kl, d->sig))
			return S3_INCOMPLETE_BODY;
	} else if (i != n) {
		return S3_INCOMPLETE_BODY;
	}
	if (size > AWS_CHUNKED_CHUNK_MAX)
		return S3_ENTITY_TOO_LARGE;
	if (size && d->last_size != UINT64_MAX && d->last_size < d->o.min_chunk)
		return S3_INVALID_CHUNK_SIZE; /* the previous chunk was short and not the last */
	if (d->o.decoded_length != UINT64_MAX && size > d->o.decoded_length - d->decoded)
		return S3_INCOMPLETE_BODY;
	if (d->o.signed_chunks)
		start_chunk_hash(d);
	if (size) {
		d->last_size = d->left = size;
		d->st = ST_DATA;
		return S3_OK;
	}
	/* the 0-size chunk: the payload is complete */
	if (d->o.signed_chunks) {
		enum s3_err e = verify_chunk(d);
		if (e)
			return e;
	}
	if (d->o.decoded_length != UINT64_MAX && d->decoded != d->o.decoded_length)
		return S3_INCOMPLETE_BODY;
	if (d->o.trailer_cksum != S3_CKSUM_NONE)
		s3_cksum_final_b64(&d->ck, d->computed);
	d->st = ST_TRAILER;
	return S3_OK;
}

/* The trailer section has ended: everything there? signature? checksum? */
static enum s3_err trailer_complete(aws_chunked *d)
{
	if (d->o.trailer_cksum != S3_CKSUM_NONE && !d->have_value)
		return S3_MALFORMED_TRAILER;
	if (d->o.trailer_signed) {
		uint8_t h[32];
		if (!d->have_sig)
			return S3_MALFORMED_TRAILER;
		if (!EVP_Digest(d->canon, d->canon_len, h, NULL, sigv4_sha256_md(), NULL))
			abort();
		if (!d->o.verify_trailer(d->o.ctx, h, d->trailer_sig))
			return S3_SIGNATURE_MISMATCH;
	}
	if (d->have_value && strcmp(d->value, d->computed))
		return S3_BAD_DIGEST;
	return S3_OK;
}

static bool is_ows(char c) { return c == ' ' || c == '\t'; }

/* "name:value": x-amz-checksum-<alg> then x-amz-trailer-signature, or the closing empty line */
static enum s3_err trailer_line(aws_chunked *d, const char *p, size_t n)
{
	char name[AWS_CHUNKED_LINE_MAX + 1];
	const char *colon, *v;
	size_t nl, vl;
	enum s3_cksum alg;

	if (n == 0) {
		enum s3_err e;
		if (d->o.trailer && !d->trailer_lines && !d->blank_seen) {
			d->blank_seen = true; /* AWS's example has an empty line here */
			return S3_OK;
		}
		if (d->o.trailer && (e = trailer_complete(d)))
			return e;
		d->st = ST_DONE;
		return S3_OK;
	}
	if (!d->o.trailer)
		return S3_INCOMPLETE_BODY;
	d->trailer_lines++;
	colon = memchr(p, ':', n);
	if (!colon || colon == p)
		return S3_MALFORMED_TRAILER;
	nl = (size_t)(colon - p);
	for (size_t i = 0; i < nl; i++) {
		char c = p[i];
		if (c <= ' ' || c >= 127)
			return S3_MALFORMED_TRAILER;
		name[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	name[nl] = '\0';
	v = colon + 1;
	vl = n - nl - 1;
	while (vl && is_ows(*v))
		v++, vl--;
	while (vl && is_ows(v[vl - 1]))
		vl--;

	if (!strcmp(name, TRAILER_SIG_NAME)) {
		if (!d->o.trailer_signed || d->have_sig || !take_sig(v, vl, d->trailer_sig))
			return S3_MALFORMED_TRAILER;
		d->have_sig = true;
		return S3_OK;
	}
	alg = s3_cksum_from_header(name);
	/* the signature comes last; only the checksum x-amz-trailer named, once */
	if (d->have_sig || d->have_value || alg == S3_CKSUM_NONE || alg != d->o.trailer_cksum)
		return S3_MALFORMED_TRAILER;
	if (!s3_cksum_b64_valid(alg, v, vl))
		return S3_INVALID_REQUEST;
	memcpy(d->value, v, vl);
	d->value[vl] = '\0';
	d->have_value = true;
	/* nl + vl < n <= AWS_CHUNKED_LINE_MAX, so this fits canon */
	memcpy(d->canon, name, nl);
	d->canon[nl] = ':';
	memcpy(d->canon + nl + 1, v, vl);
	d->canon[nl + 1 + vl] = '\n';
	d->canon_len = nl + vl + 2;
	return S3_OK;
}

/* A whole line (its '\n' consumed) is in d->line. */
static enum s3_err end_line(aws_chunked *d)
{
	size_t n = d->line_len;
	d->line_len = 0;
	if (n == 0 || d->line[n - 1] != '\r')
		return line_error(d); /* a bare LF */
	d->line[--n] = '\0';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)d->line[i];
		if ((c < ' ' && c != '\t') || c == 127)
			return line_error(d); /* CR, NUL and the other controls */
	}
	return d->st == ST_HEADER ? header_line(d, d->line, n) : trailer_line(d, d->line, n);
}

enum s3_err aws_chunked_feed(aws_chunked *d, const char *data, size_t len, aws_chunked_out_fn out,
			     void *ctx)
{
	enum s3_err e;
	assert(out);
	while (len > 0) {
		switch (d->st) {
		case ST_HEADER:
		case ST_TRAILER: {
			const char *lf = memchr(data, '\n', len);
			size_t take = lf ? (size_t)(lf - data) : len;
			if (take > AWS_CHUNKED_LINE_MAX + 1 - d->line_len)
				return fail(d, line_error(d));
			memcpy(d->line + d->line_len, data, take);
			d->line_len += take;
			data += take;
			len -= take;
			if (lf) {
				data++;
				len--;
				if ((e = end_line(d)))
					return fail(d, e);
			}
			break;
		}
		case ST_DATA: {
			size_t n = d->left < len ? (size_t)d->left : len;
			if (d->o.signed_chunks)
				EVP_DigestUpdate(d->chunk_md, data, n);
			if (d->o.trailer_cksum != S3_CKSUM_NONE)
				s3_cksum_update(&d->ck, data, n);
			d->decoded += n;
			d->left -= n;
			if ((e = out(ctx, data, n)))
				return fail(d, e);
			data += n;
			len -= n;
			if (!d->left) {
				if (d->o.signed_chunks && (e = verify_chunk(d)))
					return fail(d, e);
				d->st = ST_DATA_CR;
			}
			break;
		}
		case ST_DATA_CR:
		case ST_DATA_LF:
			if (*data != (d->st == ST_DATA_CR ? '\r' : '\n'))
				return fail(d, S3_INCOMPLETE_BODY);
			d->st = d->st == ST_DATA_CR ? ST_DATA_LF : ST_HEADER;
			data++;
			len--;
			break;
		case ST_DONE:
			return fail(d, S3_INCOMPLETE_BODY); /* bytes after the end */
		case ST_FAILED:
			return d->err;
		}
	}
	return d->st == ST_FAILED ? d->err : S3_OK;
}

enum s3_err aws_chunked_finish(aws_chunked *d)
{
	enum s3_err e;
	switch (d->st) {
	case ST_DONE:
		return S3_OK;
	case ST_FAILED:
		return d->err;
	case ST_TRAILER:
		/* the closing empty line may be missing after a trailer (AWS's example) */
		if (d->o.trailer && !d->line_len && (d->trailer_lines || d->blank_seen)) {
			if ((e = trailer_complete(d)))
				return fail(d, e);
			d->st = ST_DONE;
			return S3_OK;
		}
		return fail(d, S3_INCOMPLETE_BODY);
	default:
		return fail(d, S3_INCOMPLETE_BODY);
	}
}
