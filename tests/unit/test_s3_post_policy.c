/*
 * The POST policy checker: AWS's documented condition forms, coverage of
 * every field, expiry, content-length-range, and malformed documents.
 */
#include "config.h"
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include "s3/post_policy.h"
#include "tap.h"

#define NOW 1796000000 /* 2026-11-30 */

static enum s3_err check(const char *json, const struct post_field *f, size_t n, uint64_t *lo,
			 uint64_t *hi)
{
	char b64[4096], msg[256] = "";
	enum s3_err e;
	EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)json, (int)strlen(json));
	e = post_policy_check(b64, strlen(b64), "photos", f, n, NOW, lo, hi, msg, sizeof(msg));
	if (e)
		ok(msg[0] != '\0', "refusal says why: %s", msg);
	return e;
}

int main(void)
{
	const struct post_field f[] = {
		{"key", "user/alice/cat.jpg"},  {"Content-Type", "image/jpeg"},
		{"x-amz-meta-tag", "pets"},     {"policy", "ignored"},
		{"x-amz-signature", "ignored"}, {"x-ignore-me", "anything"},
	};
	uint64_t lo, hi;
	const char *good = "{\"expiration\": \"2027-01-01T00:00:00.000Z\", \"conditions\": ["
			   "{\"bucket\": \"photos\"}, [\"starts-with\", \"$key\", \"user/\"],"
			   "[\"eq\", \"$Content-Type\", \"image/jpeg\"],"
			   "{\"x-amz-meta-tag\": \"pets\"}, [\"content-length-range\", 10, 2048]]}";

	is_int(check(good, f, 6, &lo, &hi), S3_OK, "documented conditions hold");
	ok(lo == 10 && hi == 2048, "content-length-range returned");
	is_int(check("{\"expiration\": \"2027-01-01T00:00:00Z\", \"conditions\": "
		     "[[\"starts-with\", \"$key\", \"\"], [\"starts-with\", \"$Content-Type\", "
		     "\"image/\"], [\"starts-with\", \"$x-amz-meta-tag\", \"\"]]}",
		     f, 6, &lo, &hi),
	       S3_OK, "starts-with \"\" allows anything; no range: 0..max");
	ok(lo == 0 && hi == UINT64_MAX, "no range given");
	is_int(check("{\"expiration\": \"2020-01-01T00:00:00.000Z\", \"conditions\": []}", f, 0,
		     &lo, &hi),
	       S3_ACCESS_DENIED, "expired");
	is_int(check("{\"expiration\": \"2027-01-01T00:00:00.000Z\", \"conditions\": "
		     "[{\"bucket\": \"other\"}]}",
		     f, 0, &lo, &hi),
	       S3_ACCESS_DENIED, "another bucket");
	is_int(check("{\"expiration\": \"2027-01-01T00:00:00.000Z\", \"conditions\": "
		     "[[\"starts-with\", \"$key\", \"user/\"]]}",
		     f, 6, &lo, &hi),
	       S3_ACCESS_DENIED, "a field no condition names (Content-Type)");
	is_int(check("{\"expiration\": \"2027-01-01T00:00:00.000Z\", \"conditions\": "
		     "[[\"eq\", \"$key\", \"user/bob/x\"]]}",
		     f, 1, &lo, &hi),
	       S3_ACCESS_DENIED, "eq fails");
	is_int(check("{\"expiration\": \"2027-01-01T00:00:00.000Z\", \"conditions\": "
		     "[[\"eq\", \"$missing\", \"\"]]}",
		     f, 0, &lo, &hi),
	       S3_OK, "an absent field is the empty string");
	{
		static const char *const bad[] = {
			"not json",
			"[]",
			"{\"conditions\": []}",
			"{\"expiration\": \"tomorrow\", \"conditions\": []}",
			"{\"expiration\": \"2027-01-01T00:00:00Z\", \"conditions\": {}}",
			"{\"expiration\": \"2027-01-01T00:00:00Z\", \"conditions\": [1]}",
			"{\"expiration\": \"2027-01-01T00:00:00Z\", \"conditions\": [[\"eq\", "
			"\"key\", \"x\"]]}",
			"{\"expiration\": \"2027-01-01T00:00:00Z\", \"conditions\": "
			"[[\"content-length-range\", 5, 1]]}",
			"{\"expiration\": \"2027-01-01T00:00:00Z\", \"conditions\": [[\"lt\", "
			"\"$key\", \"x\"]]}",
			"{\"expiration\": \"2027-01-01T00:00:00Z\", \"conditions\": [{\"a\": 1}]}",
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
			ok(check(bad[i], f, 1, &lo, &hi) == S3_INVALID_POLICY, "malformed #%zu: %s",
			   i, bad[i]);
	}
	{
		char msg[64];
		is_int(post_policy_check("@@@@", 4, "photos", f, 0, NOW, &lo, &hi, msg,
					 sizeof(msg)),
		       S3_INVALID_POLICY, "not base64");
		is_int(post_policy_check("", 0, "photos", f, 0, NOW, &lo, &hi, msg, sizeof(msg)),
		       S3_INVALID_POLICY, "empty");
	}
	return done_testing();
}
