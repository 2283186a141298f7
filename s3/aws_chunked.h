/*
 * The aws-chunked request body (Content-Encoding: aws-chunked), decoded as it
 * arrives. The caller picks the mode from x-amz-content-sha256:
 *
 *   STREAMING-AWS4-HMAC-SHA256-PAYLOAD          signed chunks
 *     <hex size>;chunk-signature=<64 hex>\r\n <data> \r\n ... 0;chunk-signature=<sig>\r\n \r\n
 *   STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER  signed chunks, signed trailer
 *     ... 0;chunk-signature=<sig>\r\n
 *     x-amz-checksum-<alg>:<base64>\r\n x-amz-trailer-signature:<64 hex>\r\n \r\n
 *   STREAMING-UNSIGNED-PAYLOAD-TRAILER          plain chunks, unsigned trailer
 *     <hex size>\r\n <data> \r\n ... 0\r\n x-amz-checksum-<alg>:<base64>\r\n \r\n
 *
 * Payload bytes go to a callback as soon as they are decoded; nothing bigger
 * than one header or trailer line is ever buffered. A chunk's signature can
 * only be checked once its last byte has passed, so what the callback got is
 * trustworthy only once aws_chunked_finish has returned S3_OK: the caller
 * must not commit anything before that.
 *
 * aws_chunked.c's DESIGN comment says what is tolerated and why.
 */
#ifndef WEEDFS_S3_AWS_CHUNKED_H
#define WEEDFS_S3_AWS_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "s3/checksum.h"
#include "s3/s3_err.h"

/* S3's smallest chunk but the last; a value for aws_chunked_opts.min_chunk. */
#define AWS_CHUNKED_MIN_CHUNK 8192
/* The largest chunk size accepted: S3's largest single PUT (5 GiB). */
#define AWS_CHUNKED_CHUNK_MAX (5ULL << 30)
/* The longest chunk header or trailer line, CRLF excluded (the longest valid one is 97). */
#define AWS_CHUNKED_LINE_MAX 128

struct aws_chunked_opts {
	bool signed_chunks;  /* ";chunk-signature=" on every chunk header, checked */
	bool trailer;        /* a trailer section follows the 0-size chunk */
	bool trailer_signed; /* x-amz-trailer-signature ends it (requires trailer) */
	/*
	 * The checksum x-amz-trailer named (S3_CKSUM_NONE: none, and then no
	 * checksum trailer may come). Requires trailer. The decoder computes it
	 * over the payload and compares it with the trailer's value.
	 */
	enum s3_cksum trailer_cksum;
	/* x-amz-decoded-content-length, or UINT64_MAX when absent */
	uint64_t decoded_length;
	/* every data chunk but the last must be at least this long (0: no minimum) */
	uint64_t min_chunk;
	/*
	 * Required with signed_chunks: the SHA-256 of one chunk's data (the 0-size
	 * chunk included) and the signature its header claimed (64 lower-case hex,
	 * NUL-terminated; both borrowed for the call). Called in order, once per
	 * chunk; the callee keeps the chain of previous signatures. false gives
	 * S3_SIGNATURE_MISMATCH.
	 */
	bool (*verify_chunk)(void *ctx, const uint8_t sha256[32], const char *sig);
	/*
	 * Required with trailer_signed: the SHA-256 of the canonical trailer, each
	 * trailer line but the signature as "lower-case name:value\n" (for example
	 * "x-amz-checksum-crc32c:sOO8/Q==\n"; empty if there was none), and the
	 * claimed x-amz-trailer-signature. false gives S3_SIGNATURE_MISMATCH.
	 */
	bool (*verify_trailer)(void *ctx, const uint8_t sha256[32], const char *sig);
	void *ctx; /* passed to the two callbacks */
};

/*
 * Receives decoded payload (borrowed for the call; len > 0). Anything but
 * S3_OK stops the decoder, and feed returns that value.
 */
typedef enum s3_err (*aws_chunked_out_fn)(void *ctx, const char *data, size_t len);

typedef struct aws_chunked aws_chunked;

/*
 * Sets o's signed_chunks, trailer and trailer_signed from an
 * x-amz-content-sha256 value (borrowed) and returns true, or returns false
 * for a value that is not one of the three streaming modes above (SigV4a's
 * STREAMING-AWS4-ECDSA-P256-SHA256-* modes included). Other fields untouched.
 */
bool aws_chunked_mode(const char *content_sha256, struct aws_chunked_opts *o);

/*
 * A decoder for one body; o is copied. An impossible o (a trailer field
 * without trailer, a signed trailer without signed chunks, a missing
 * callback) is a programming error and asserts. Free with aws_chunked_free.
 * A decoder is used by one thread at a time; the callbacks run on it, inside
 * feed and finish.
 */
aws_chunked *aws_chunked_new(const struct aws_chunked_opts *o);

/*
 * Decodes len bytes at data (borrowed; any split of the body, one byte at a
 * time included) and passes the payload in them to out(ctx, ...). Returns
 * S3_OK, or the first error, which sticks: every later call returns it.
 *   S3_INCOMPLETE_BODY     bad framing: a malformed or oversized chunk header,
 *                          a missing CRLF, bytes after the end, a payload
 *                          longer than decoded_length (or shorter, when the
 *                          0-size chunk arrives)
 *   S3_ENTITY_TOO_LARGE    a chunk larger than AWS_CHUNKED_CHUNK_MAX
 *   S3_INVALID_CHUNK_SIZE  a chunk shorter than min_chunk that was not the last
 *   S3_SIGNATURE_MISMATCH  verify_chunk or verify_trailer said no
 *   S3_MALFORMED_TRAILER a malformed, oversized, duplicated, unexpected or
 *                          missing trailer line, or a checksum trailer for
 *                          another algorithm than trailer_cksum
 *   S3_INVALID_REQUEST     a checksum trailer whose value is not base64 of the
 *                          algorithm's digest length
 *   S3_BAD_DIGEST          a checksum trailer that does not match the payload
 *   anything out returned
 */
enum s3_err aws_chunked_feed(aws_chunked *d, const char *data, size_t len, aws_chunked_out_fn out,
			     void *ctx);

/*
 * The body has ended: S3_OK if it was complete and every check passed, else
 * the sticky error, or S3_INCOMPLETE_BODY for a body that stopped short (or
 * another of feed's errors for a trailer found wanting at the end).
 */
enum s3_err aws_chunked_finish(aws_chunked *d);

/*
 * The checksum trailer's value as sent (base64, blanks trimmed; borrowed from
 * d) once its line was read, else NULL. Once finish returned S3_OK it is the
 * payload's own checksum.
 */
const char *aws_chunked_checksum(const aws_chunked *d);
/* Payload bytes passed to out so far. */
uint64_t aws_chunked_decoded(const aws_chunked *d);
/* Releases d; NULL is fine. */
void aws_chunked_free(aws_chunked *d);

#endif
