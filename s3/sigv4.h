/*
 * AWS Signature Version 4 for the S3 gateway: the Authorization header,
 * presigned URLs (X-Amz-* query parameters) and the chunk and trailer
 * signatures of STREAMING-AWS4-HMAC-SHA256-PAYLOAD(-TRAILER) uploads.
 *
 * Per request the gateway gathers the method, the raw path and raw query as
 * received (still percent-encoded) and the header lines, calls sigv4_parse,
 * looks up the secret of auth.access_key (S3_INVALID_ACCESS_KEY if unknown),
 * then calls sigv4_verify. For a streaming upload it keeps a sigv4_chunk_ctx
 * and checks each chunk and the trailer with it.
 *
 * Everything here is pure (no globals, no I/O): callable from any thread.
 * The structs hold fixed-size fields only; nothing needs freeing.
 */
#ifndef WEEDFS_S3_SIGV4_H
#define WEEDFS_S3_SIGV4_H

#include <openssl/types.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "s3/s3_err.h"

/* Bounds: a signed request past one is refused before anything is built from it. */
#define SIGV4_MAX_HEADERS      256   /* header lines */
#define SIGV4_MAX_HEADER_BYTES 65536 /* their names and values together */
#define SIGV4_MAX_AUTH_LEN     8192  /* the Authorization header value */
#define SIGV4_MAX_SIGNED       128   /* names in SignedHeaders */
#define SIGV4_MAX_SIGNED_LEN   4096  /* SignedHeaders, bytes */
#define SIGV4_MAX_PATH         8192  /* raw path */
#define SIGV4_MAX_QUERY        16384 /* raw query */
#define SIGV4_MAX_PARAMS       256   /* query parameters */
#define SIGV4_MAX_ACCESS_KEY   128
#define SIGV4_MAX_REGION       64
#define SIGV4_MAX_SERVICE      32
#define SIGV4_MAX_TRAILER      256    /* x-amz-trailer value */
#define SIGV4_MAX_SKEW         900    /* s: header auth farther from now is RequestTimeTooSkewed */
#define SIGV4_MAX_EXPIRES      604800 /* s: X-Amz-Expires at most a week */
#define SIGV4_SCOPE_MAX        (8 + SIGV4_MAX_REGION + SIGV4_MAX_SERVICE + 16)

/* What x-amz-content-sha256 says the body is (presigned URLs: UNSIGNED, or HASH). */
enum sigv4_payload {
	SIGV4_PAYLOAD_HASH,               /* 64 hex: the body's SHA-256, to be checked */
	SIGV4_PAYLOAD_UNSIGNED,           /* UNSIGNED-PAYLOAD */
	SIGV4_STREAMING_SIGNED,           /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD */
	SIGV4_STREAMING_SIGNED_TRAILER,   /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
	SIGV4_STREAMING_UNSIGNED_TRAILER, /* STREAMING-UNSIGNED-PAYLOAD-TRAILER */
};

struct sigv4_header {
	const char *name, *value; /* as received, neither NULL */
};

/* One request, all borrowed. */
struct sigv4_input {
	const char *method;    /* "GET", ... */
	const char *raw_path;  /* as received: starts with '/', still percent-encoded */
	const char *raw_query; /* as received, without '?'; NULL or "" if none */
	const struct sigv4_header *headers;
	size_t nheaders;
	int64_t now;        /* unix seconds */
	const char *region; /* the gateway's region; NULL accepts a scope of any region */
	const char *service; /* the scope's service this endpoint accepts; NULL: "s3" */
};

/* What sigv4_parse read; strings are NUL-terminated copies. */
struct sigv4_auth {
	bool presigned; /* from the X-Amz-* query parameters, not the Authorization header */
	char access_key[SIGV4_MAX_ACCESS_KEY + 1];
	char date[9]; /* credential scope date, YYYYMMDD */
	char region[SIGV4_MAX_REGION + 1];
	char service[SIGV4_MAX_SERVICE + 1];           /* in->service after a successful parse */
	char amz_date[17];                             /* request time, YYYYMMDDTHHMMSSZ */
	int64_t time;                                  /* the same, unix seconds */
	char signed_headers[SIGV4_MAX_SIGNED_LEN + 1]; /* as sent: lowercase names joined by ';' */
	size_t nsigned;
	char signature[65]; /* the claimed signature, lowercase hex */
	int64_t expires;    /* presigned: X-Amz-Expires seconds; 0 otherwise */
	enum sigv4_payload payload;
	char payload_hash[65];      /* SIGV4_PAYLOAD_HASH: the 64 hex digits as sent; else "" */
	uint8_t payload_sha256[32]; /* SIGV4_PAYLOAD_HASH: the same, decoded */
	int64_t decoded_length;     /* x-amz-decoded-content-length, -1 if absent */
	char trailer[SIGV4_MAX_TRAILER + 1]; /* x-amz-trailer, "" if absent */
};

/*
 * Reads and checks the SigV4 form of in (borrowed) into *a (overwritten).
 * S3_OK with *anonymous = true when the request carries no authentication
 * at all (no Authorization header, no X-Amz-Algorithm/Credential/Signature
 * parameter). Otherwise checks, without the secret: the form (Authorization
 * components or the six X-Amz-* parameters), the scope (s3, aws4_request,
 * in->region when set, credential date == request date), the clock (header
 * auth within SIGV4_MAX_SKEW of now; presigned not yet expired), that host
 * and every x-amz-* header present are signed (x-amz-content-sha256 excepted:
 * header auth signs its value as the payload line, presigned URLs ignore it),
 * that signed values hold no control character, the path and query
 * encoding, the bounds, and the payload mode. Header auth takes its time
 * from x-amz-date, else Date. The payload is only described: checking the
 * body against payload_sha256, requiring x-amz-decoded-content-length for
 * streaming modes, and decoding aws-chunked are the caller's. On error fills
 * msg (if msglen > 0, always terminated) with the message S3 gives, leaves
 * *a cleared, and returns one of:
 *   S3_AUTH_HEADER_MALFORMED  bad Authorization components, credential, scope
 *   S3_AUTH_QUERY_ERROR       the same for the X-Amz-* parameters, bad X-Amz-Expires
 *   S3_INVALID_ARGUMENT       unsupported scheme, both header and query auth,
 *                             bad x-amz-content-sha256 / decoded length /
 *                             x-amz-trailer, a control character in a signed
 *                             value, an empty method, too many parameters
 *   S3_INVALID_URI            bad percent-encoding in the path or query, a
 *                             path or query bound exceeded
 *   S3_INVALID_REQUEST        SigV2 (the gateway hands it to sigv2.h first) or
 *                             SigV4a (header, query, or streaming mode);
 *                             missing x-amz-content-sha256
 *   S3_HEADER_TOO_LARGE       too many or too large headers
 *   S3_ACCESS_DENIED          no valid date; unsigned host or x-amz-* headers
 *                             (msg then lists them); presigned not valid yet
 *   S3_REQUEST_TIME_SKEWED    header auth too far from now
 *   S3_EXPIRED_REQUEST        presigned URL expired
 */
enum s3_err sigv4_parse(const struct sigv4_input *in, struct sigv4_auth *a, bool *anonymous,
			char *msg, size_t msglen);

/*
 * Recomputes the signature of in (as parsed into a) with secret and compares
 * it with the claimed one in constant time: S3_OK or S3_SIGNATURE_MISMATCH.
 * On S3_OK fills signing_key (if not NULL) for sigv4_chunk_init.
 */
enum s3_err sigv4_verify(const struct sigv4_input *in, const struct sigv4_auth *a,
			 const char *secret, uint8_t signing_key[32]);

/* The signature sigv4_verify expects (lowercase hex) and its signing key (if not NULL);
 * false (sig "") if in's path or query cannot be decoded, which sigv4_parse refuses. */
bool sigv4_expected(const struct sigv4_input *in, const struct sigv4_auth *a, const char *secret,
		    char sig[65], uint8_t signing_key[32]);

/*
 * Appends the canonical request, or the string to sign, of in/a to out (for
 * the SignatureDoesNotMatch error body and debug logs). False as above.
 */
bool sigv4_canonical_request(const struct sigv4_input *in, const struct sigv4_auth *a, buf *out);
bool sigv4_string_to_sign(const struct sigv4_input *in, const struct sigv4_auth *a, buf *out);

/*
 * Streaming uploads. Each chunk signature signs the previous one (the seed
 * being the request's signature), so the context advances on every check
 * that passes and stays put on one that fails.
 */
struct sigv4_chunk_ctx {
	uint8_t key[32];
	char amz_date[17];
	char scope[SIGV4_SCOPE_MAX];
	char prev[65]; /* the last signature in the chain, lowercase hex */
};

/* Starts the chain at a's (verified) signature; key from sigv4_verify. */
void sigv4_chunk_init(struct sigv4_chunk_ctx *c, const struct sigv4_auth *a,
		      const uint8_t signing_key[32]);
/* True if claimed_hex (64 hex digits, NUL-terminated) signs the chunk whose data hashes to
 * data_sha256 (the final empty chunk included); advances then. */
bool sigv4_chunk_check(struct sigv4_chunk_ctx *c, const uint8_t data_sha256[32],
		       const char *claimed_hex);
/* The same for the trailer chunk: trailer_sha256 hashes the trailing headers as
 * "name:value\n" lines (lowercase names, in the order sent, without x-amz-trailer-signature). */
bool sigv4_trailer_check(struct sigv4_chunk_ctx *c, const uint8_t trailer_sha256[32],
			 const char *claimed_hex);
/* Signer side of the two (test clients): the signature, and advance. */
void sigv4_chunk_sign(struct sigv4_chunk_ctx *c, const uint8_t data_sha256[32], char out[65]);
void sigv4_trailer_sign(struct sigv4_chunk_ctx *c, const uint8_t trailer_sha256[32], char out[65]);

/* Shared helpers. */
/* HMAC chain "AWS4"+secret -> date8 -> region -> service -> "aws4_request". */
void sigv4_signing_key(const char *secret, const char *date8, const char *region,
		       const char *service, uint8_t out[32]);
/* Lowercase hex HMAC-SHA256 of msg[0..len) under key (POST policy signatures). */
void sigv4_hmac_hex(const uint8_t key[32], const char *msg, size_t len, char out[65]);
/* The value of header name in in (any case), NULL if absent; *count: how many lines carry it. */
const char *sigv4_header_find(const struct sigv4_input *in, const char *name, size_t *count);
/* The bounds above, and a percent-encoding of path and query that decodes (SigV2 shares them). */
enum s3_err sigv4_check_request(const struct sigv4_input *in, char *msg, size_t msglen);
/* Appends s[0..n) percent-decoded ('+' stays '+'); false on a bad escape. */
bool sigv4_pct_decode(const char *s, size_t n, buf *out);
/* Trims spaces and tabs around s[0..*n); returns the new start. */
const char *sigv4_trim(const char *s, size_t *n);
/* Copies v without the spaces and tabs around it into dst[cap]; false if it does not fit. */
bool sigv4_copy_trimmed(char *dst, size_t cap, const char *v);
/* RFC 1123 "Fri, 24 May 2013 00:00:00 GMT" (zone GMT, UTC or +0000) to unix seconds. */
bool sigv4_parse_http_date(const char *s, int64_t *t);
/* Lowercase hex SHA-256 of p[0..len). */
void sigv4_sha256_hex(const void *p, size_t len, char out[65]);
/* SHA-256, fetched once: EVP_sha256() makes each EVP_DigestInit_ex look it up again. */
const EVP_MD *sigv4_sha256_md(void);
/* Appends s[0..n) to out with AWS's URI encoding: A-Za-z0-9-._~ kept, '/' kept if
 * keep_slash, every other byte %XX (uppercase). */
void sigv4_uri_encode(const char *s, size_t n, bool keep_slash, buf *out);
/* Formats unix time t as YYYYMMDDTHHMMSSZ. */
void sigv4_format_time(int64_t t, char out[17]);

/*
 * Signers, for tests and the gateway's test clients. s->amz_date must equal
 * the x-amz-date header sent (header auth); signed_headers lists lowercase
 * names of headers in in->headers, sorted, joined by ';'.
 */
struct sigv4_signer {
	const char *access_key, *secret, *region;
	const char *service;  /* NULL: "s3" */
	const char *amz_date; /* YYYYMMDDTHHMMSSZ */
};
/* Appends the Authorization header value signing in with payload line payload (64 hex,
 * UNSIGNED-PAYLOAD or a STREAMING-* mode). False if in's path or query is badly encoded. */
bool sigv4_sign_header(const struct sigv4_input *in, const char *signed_headers,
		       const char *payload, const struct sigv4_signer *s, buf *out);
/* Appends the raw query of a presigned URL for in: in->raw_query's parameters, then the
 * X-Amz-* ones, X-Amz-Signature last. False if in's path or query is badly encoded. */
bool sigv4_presign(const struct sigv4_input *in, const char *signed_headers, int64_t expires,
		   const struct sigv4_signer *s, buf *out);

#endif
