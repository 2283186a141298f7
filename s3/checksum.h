/*
 * The additional checksums S3 clients send with an object (x-amz-checksum-*
 * headers and aws-chunked trailers): CRC32, CRC32C, CRC64NVME, SHA1, SHA256.
 *
 * A digest is written the way S3 writes it: the checksum's bytes, big-endian
 * for the CRCs, in standard base64 with padding (CRC32 of "123456789",
 * 0xcbf43926, is "y/Q5Jg=="). checksum.c's DESIGN comment says how each
 * algorithm is computed.
 */
#ifndef WEEDFS_S3_CHECKSUM_H
#define WEEDFS_S3_CHECKSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum s3_cksum {
	S3_CKSUM_NONE = 0, /* no checksum, or a name we do not know */
	S3_CKSUM_CRC32,
	S3_CKSUM_CRC32C,
	S3_CKSUM_CRC64NVME,
	S3_CKSUM_SHA1,
	S3_CKSUM_SHA256,
	S3_CKSUM_COUNT
};

#define S3_CKSUM_DIGEST_MAX 32 /* SHA256's 32 bytes are the longest */
#define S3_CKSUM_B64_SIZE   45 /* base64 of 32 bytes (44 characters) and a NUL */

/*
 * One running checksum. A plain struct so it can sit inside another; set it
 * up with s3_cksum_init and release it with s3_cksum_final* or
 * s3_cksum_clear. One thread at a time.
 */
struct evp_md_ctx_st;
struct s3_cksum_ctx {
	enum s3_cksum alg;
	uint64_t crc;             /* the CRCs' running value (as crc*_update returns it) */
	struct evp_md_ctx_st *md; /* SHA1 and SHA256 only; owned */
};

/*
 * The algorithm an S3 name gives ("CRC32", "CRC32C", "CRC64NVME", "SHA1",
 * "SHA256", any case: x-amz-checksum-algorithm, x-amz-sdk-checksum-algorithm),
 * or S3_CKSUM_NONE for anything else. s is borrowed; NULL gives NONE.
 */
enum s3_cksum s3_cksum_from_name(const char *s);
/*
 * The algorithm a header name gives ("x-amz-checksum-crc32", ..., any case:
 * x-amz-trailer, trailer lines), or S3_CKSUM_NONE. s is borrowed; NULL gives NONE.
 */
enum s3_cksum s3_cksum_from_header(const char *s);
/* "CRC32", ...; NULL for S3_CKSUM_NONE or an unknown value. Static strings. */
const char *s3_cksum_name(enum s3_cksum a);
/* "x-amz-checksum-crc32", ... (lower case); NULL for NONE or an unknown value. */
const char *s3_cksum_header(enum s3_cksum a);
/* The digest's length in bytes (4, 4, 8, 20, 32); 0 for NONE or an unknown value. */
size_t s3_cksum_digest_len(enum s3_cksum a);
/* The length of its base64 text (8, 8, 12, 28, 44); 0 for NONE or an unknown value. */
size_t s3_cksum_b64_len(enum s3_cksum a);

/* Starts a checksum of algorithm a (not NONE; anything else asserts). */
void s3_cksum_init(struct s3_cksum_ctx *c, enum s3_cksum a);
/* Adds n bytes at p (borrowed; any length, p may be NULL when n is 0). */
void s3_cksum_update(struct s3_cksum_ctx *c, const void *p, size_t n);
/*
 * Writes the digest to out and returns its length; releases c (use
 * s3_cksum_init again to reuse it).
 */
size_t s3_cksum_final(struct s3_cksum_ctx *c, uint8_t out[S3_CKSUM_DIGEST_MAX]);
/* Like s3_cksum_final, but writes the digest as S3 writes it: base64, NUL-terminated. */
void s3_cksum_final_b64(struct s3_cksum_ctx *c, char out[S3_CKSUM_B64_SIZE]);
/* Releases c without a result; harmless on a released or zeroed ctx. */
void s3_cksum_clear(struct s3_cksum_ctx *c);

/* The base64 checksum of n bytes at p, in one call. */
void s3_cksum_b64(enum s3_cksum a, const void *p, size_t n, char out[S3_CKSUM_B64_SIZE]);
/*
 * True if v[0..len) (borrowed) is well-formed base64 of a digest of algorithm
 * a: exactly s3_cksum_b64_len(a) characters of the standard alphabet with the
 * right '=' padding. Says nothing of whether the value is the right one.
 */
bool s3_cksum_b64_valid(enum s3_cksum a, const char *v, size_t len);

/*
 * Decodes v (borrowed, NUL-terminated), the base64 of a digest of algorithm a,
 * into out: the digest's length, or 0 when v is not such a value
 * (s3_cksum_b64_valid).
 */
size_t s3_cksum_b64_decode(enum s3_cksum a, const char *v, uint8_t out[S3_CKSUM_DIGEST_MAX]);
/* Writes the digest d of algorithm a (not NONE) as S3 writes it: base64, NUL-terminated. */
void s3_cksum_digest_b64(enum s3_cksum a, const uint8_t *d, char out[S3_CKSUM_B64_SIZE]);

/* Whether a is one of the CRCs (CRC32, CRC32C, CRC64NVME): they can be combined. */
bool s3_cksum_is_crc(enum s3_cksum a);
/* A CRC's value from its digest bytes (big-endian), and back. a is a CRC. */
uint64_t s3_crc_from_digest(enum s3_cksum a, const uint8_t *d);
size_t s3_crc_to_digest(enum s3_cksum a, uint64_t crc, uint8_t out[S3_CKSUM_DIGEST_MAX]);
/*
 * The CRC (algorithm a, a CRC) of A followed by B from the CRC of A, the CRC
 * of B and B's length in bytes, without the bytes: zlib's crc32_combine for
 * the three reflected CRCs (each starts from and ends with all ones, so the
 * conditioning cancels). Multipart uploads make a FULL_OBJECT checksum from
 * the parts' CRCs this way. Any thread.
 */
uint64_t s3_crc_combine(enum s3_cksum a, uint64_t crc1, uint64_t crc2, uint64_t len2);

/*
 * CRC-64/NVME (reflected polynomial 0xad93d23594c93659, initial value and
 * final xor all ones): extends crc (0 to start) over n bytes at p.
 * crc64nvme_update(0, "123456789", 9) == 0xae8b14860a799888. Any thread.
 */
uint64_t crc64nvme_update(uint64_t crc, const void *p, size_t n);

#endif
