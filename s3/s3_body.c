/*
 * Integrity of the small bodies the gateway reads whole (bucket
 * configuration, DeleteObjects): the signed payload hash, Content-MD5 and the
 * flexible checksum headers must all match what arrived, or nothing is done.
 */
#include "config.h"
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <string.h>
#include <strings.h>
#include "s3/checksum.h"
#include "s3/s3_int.h"
#include "s3/sigv4.h"

static bool signed_hash_ok(struct s3_req *r, const uint8_t *p, size_t n)
{
	uint8_t sum[32];
	if (r->payload == SIGV4_PAYLOAD_HASH) {
		SHA256(p, n, sum);
		if (memcmp(sum, r->payload_sha256, sizeof(sum))) {
			s3_error(r, S3_SHA256_MISMATCH,
				 "The provided 'x-amz-content-sha256' header does not match what "
				 "was computed.");
			return false;
		}
	} else if (r->payload >= 0 && r->payload != SIGV4_PAYLOAD_UNSIGNED) {
		s3_error(r, S3_NOT_IMPLEMENTED, "aws-chunked bodies are not taken on this call");
		return false;
	}
	return true;
}

/* Decodes a well-formed Content-MD5 into want; false when absent or malformed. */
static bool content_md5(struct s3_req *r, unsigned char want[16 + 3])
{
	const char *v = http_req_header(r->req, "Content-MD5");
	return v && strlen(v) == 24 && v[22] == '=' && v[23] == '=' &&
	       EVP_DecodeBlock(want, (const unsigned char *)v, 24) == 18;
}

bool s3_content_md5_valid(struct s3_req *r)
{
	unsigned char want[16 + 3];
	if (!http_req_header(r->req, "Content-MD5") || content_md5(r, want))
		return true;
	s3_error(r, S3_INVALID_DIGEST, "The Content-MD5 you specified was invalid.");
	return false;
}

bool s3_content_md5_matches(struct s3_req *r, const unsigned char md5[16])
{
	unsigned char want[16 + 3];
	if (!http_req_header(r->req, "Content-MD5"))
		return true;
	if (!s3_content_md5_valid(r))
		return false;
	content_md5(r, want);
	if (!memcmp(want, md5, 16))
		return true;
	s3_error(r, S3_BAD_DIGEST, "The Content-MD5 you specified did not match what we received.");
	return false;
}

static bool content_md5_ok(struct s3_req *r, const uint8_t *p, size_t n)
{
	unsigned char got[EVP_MAX_MD_SIZE];
	EVP_Digest(p, n, got, NULL, EVP_md5(), NULL);
	return s3_content_md5_matches(r, got);
}

static bool checksums_ok(struct s3_req *r, const uint8_t *p, size_t n)
{
	const char *name, *value;
	for (size_t i = 0; http_req_header_at(r->req, i, &name, &value); i++) {
		enum s3_cksum a = s3_cksum_from_header(name);
		char sum[S3_CKSUM_B64_SIZE];
		if (a == S3_CKSUM_NONE)
			continue;
		if (!value || !s3_cksum_b64_valid(a, value, strlen(value))) {
			s3_error(r, S3_INVALID_REQUEST, "Value for %s header is invalid.", name);
			return false;
		}
		s3_cksum_b64(a, p, n, sum);
		if (strcmp(sum, value)) {
			s3_error(r, S3_BAD_DIGEST,
				 "The %s you specified did not match the calculated checksum.",
				 s3_cksum_name(a));
			return false;
		}
	}
	return true;
}

bool s3_body_ok(struct s3_req *r)
{
	const uint8_t *p = (const uint8_t *)(r->in.data ? r->in.data : "");
	/* CompleteMultipartUpload's x-amz-checksum-* is the object's, not its XML's */
	bool complete = http_req_method(r->req) == HTTP_POST && http_req_query(r->req, "uploadId");
	return signed_hash_ok(r, p, r->in.len) && content_md5_ok(r, p, r->in.len) &&
	       (complete || checksums_ok(r, p, r->in.len));
}
