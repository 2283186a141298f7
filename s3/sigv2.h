/*
 * AWS Signature Version 2 for S3 ("Signing and authenticating REST requests"
 * in the S3 developer guide): "Authorization: AWS <key>:<signature>" and
 * presigned URLs (AWSAccessKeyId, Expires, Signature). Still what boto3 and
 * botocore give by default for generate_presigned_url, and what s3cmd
 * --signature-v2 and older SDKs send. Like sigv4.h, two steps so the gateway
 * can look the secret up in between.
 */
#ifndef WEEDFS_S3_SIGV2_H
#define WEEDFS_S3_SIGV2_H

#include <stdbool.h>
#include <stdint.h>
#include "buf.h"
#include "s3/s3_err.h"
#include "s3/sigv4.h"

/* What sigv2_parse read (NUL-terminated copies). */
struct sigv2_auth {
	bool presigned;
	char access_key[SIGV4_MAX_ACCESS_KEY + 1];
	char signature[64]; /* base64 as sent (28 characters for HMAC-SHA1) */
	char expires[24];   /* presigned: the Expires parameter as sent */
	int64_t time;       /* header auth: x-amz-date or Date; presigned: Expires */
};

/* Whether in is signed with SigV2: an "AWS " Authorization header or an AWSAccessKeyId
 * query parameter (sigv4_parse handles everything else). */
bool sigv2_present(const struct sigv4_input *in);

/*
 * Reads and checks the SigV2 form of in into *a, without the secret: the
 * bounds (sigv4_check_request), one form only, the key and signature, the
 * clock (header auth within SIGV4_MAX_SKEW of now, presigned not expired).
 * Errors fill msg (always terminated when msglen > 0):
 *   S3_INVALID_ARGUMENT   a malformed Authorization header, header and query auth
 *                         together, a streaming (aws-chunked) payload
 *   S3_ACCESS_DENIED      a missing query parameter or date, a bad Expires
 *   S3_REQUEST_TIME_SKEWED, S3_EXPIRED_REQUEST
 *   and sigv4_check_request's errors.
 */
enum s3_err sigv2_parse(const struct sigv4_input *in, struct sigv2_auth *a, char *msg,
			size_t msglen);

/*
 * The string to sign: method, Content-MD5, Content-Type, the date (Date, or
 * empty with x-amz-date; Expires when presigned), the x-amz-* headers
 * (lowercase, sorted, values trimmed, repeats joined by ','), then the
 * resource: "/" + vhost_bucket (virtual-hosted requests; NULL for path style),
 * the raw path, and the subresources S3 signs ("?acl", "?uploadId=...",
 * sorted, values decoded).
 */
void sigv2_string_to_sign(const struct sigv4_input *in, const struct sigv2_auth *a,
			  const char *vhost_bucket, buf *out);

/* Compares a's signature with base64(HMAC-SHA1(secret, string to sign)) in constant
 * time: S3_OK or S3_SIGNATURE_MISMATCH. */
enum s3_err sigv2_verify(const struct sigv4_input *in, const struct sigv2_auth *a,
			 const char *vhost_bucket, const char *secret);

/* base64(HMAC-SHA1(secret, sts)): the signature itself (signers, tests). */
void sigv2_sign(const char *secret, const char *sts, size_t len, char out[29]);

#endif
