/*
 * The policy document of a browser POST upload: a base64 JSON object with an
 * "expiration" time and a list of "conditions" every form field must meet
 * (AWS's "Creating a POST policy"):
 *
 *   {"expiration": "2026-12-01T12:00:00.000Z",
 *    "conditions": [{"bucket": "photos"},
 *                   ["starts-with", "$key", "user/"],
 *                   ["eq", "$Content-Type", "image/jpeg"],
 *                   ["content-length-range", 0, 1048576],
 *                   {"x-amz-credential": "AK.../20261130/us-east-1/s3/aws4_request"}]}
 *
 * Pure: no I/O, no globals; the fuzz target drives it directly.
 */
#ifndef WEEDFS_S3_POST_POLICY_H
#define WEEDFS_S3_POST_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include "s3/s3_err.h"

/* The longest policy document taken (base64 text). */
#define POST_POLICY_MAX (64u << 10)

struct post_field {
	const char *name, *value; /* a form field as sent (names compare case-insensitively) */
};

/*
 * Checks the form fields f[0..n) (the bucket is the "bucket" condition's
 * subject; the form need not carry it) against the policy policy_b64[0..len)
 * at unix time now. Every condition must hold, and every field but policy,
 * x-amz-signature, file and x-ignore-* must be named by a condition. On
 * S3_OK, *len_min and *len_max hold the content-length-range (0 and
 * UINT64_MAX without one) for the caller to apply to the file. Otherwise msg
 * says why:
 *   S3_INVALID_POLICY  not base64 JSON of the documented form
 *   S3_ACCESS_DENIED   expired, a condition failed, a field no condition names
 */
enum s3_err post_policy_check(const char *policy_b64, size_t len, const char *bucket,
			      const struct post_field *f, size_t n, int64_t now, uint64_t *len_min,
			      uint64_t *len_max, char *msg, size_t msglen);

#endif
