/*
 * SigV2 (s3/sigv2.h): the S3 developer guide's published examples (header
 * and query-string authentication), the string to sign's parts (x-amz-*
 * headers, subresources, the bucket's two resource forms, virtual-hosted
 * requests), and every refusal with its error code.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "s3/sigv2.h"
#include "tap.h"
#include "util.h"

/* The credentials and times of the guide's examples. */
#define AK    "AKIAIOSFODNN7EXAMPLE"
#define SK    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define T2007 1175023002 /* Tue, 27 Mar 2007 19:16:42 GMT */
#define DATE  "Tue, 27 Mar 2007 19:36:42 +0000"
#define T_GET 1175024202 /* DATE */

struct req {
	struct sigv4_input in;
	struct sigv4_header h[16];
};

static void req_init(struct req *r, const char *method, const char *path, const char *query,
		     int64_t now)
{
	memset(r, 0, sizeof(*r));
	r->in.method = method;
	r->in.raw_path = path;
	r->in.raw_query = query;
	r->in.headers = r->h;
	r->in.now = now;
}

static void req_add(struct req *r, const char *name, const char *value)
{
	r->h[r->in.nheaders].name = name;
	r->h[r->in.nheaders++].value = value;
}

static enum s3_err parse(struct req *r, struct sigv2_auth *a)
{
	char msg[256];
	enum s3_err e = sigv2_parse(&r->in, a, msg, sizeof(msg));
	ok(e == S3_OK || msg[0], "an error comes with a message (%s)", msg);
	return e;
}

static char *sts_of(struct req *r, const struct sigv2_auth *a, const char *vhost)
{
	buf b = BUF_INIT;
	sigv2_string_to_sign(&r->in, a, vhost, &b);
	buf_append_byte(&b, '\0');
	return b.data;
}

static void test_present(void)
{
	struct req r;
	req_init(&r, "GET", "/b/k", NULL, 0);
	ok(!sigv2_present(&r.in), "no auth: not SigV2");
	req_add(&r, "Authorization", "AWS4-HMAC-SHA256 Credential=x");
	ok(!sigv2_present(&r.in), "a SigV4 header is not SigV2");
	req_init(&r, "GET", "/b/k", NULL, 0);
	req_add(&r, "authorization", "AWS " AK ":sig");
	ok(sigv2_present(&r.in), "an AWS header is SigV2");
	req_init(&r, "GET", "/b/k", "x=1&AWSAccessKeyId=" AK, 0);
	ok(sigv2_present(&r.in), "an AWSAccessKeyId parameter is SigV2");
	req_init(&r, "GET", "/b/k", "X-Amz-Credential=x&AWSAccessKeyIdX=1", 0);
	ok(!sigv2_present(&r.in), "other parameters are not");
}

static void test_published_header_example(void)
{
	struct req r;
	struct sigv2_auth a;
	char *sts;
	req_init(&r, "GET", "/awsexamplebucket1/photos/puppy.jpg", NULL, T_GET + 60);
	req_add(&r, "Host", "s3.us-west-1.amazonaws.com");
	req_add(&r, "Date", DATE);
	req_add(&r, "Authorization", "AWS " AK ":qgk2+6Sv9/oM7G3qLEjTH1a1l1g=");
	is_int(parse(&r, &a), S3_OK, "guide's GET: parses");
	is_str(a.access_key, AK, "guide's GET: the key");
	ok(a.time == T_GET && !a.presigned, "guide's GET: the time of its Date");
	sts = sts_of(&r, &a, NULL);
	is_str(sts, "GET\n\n\n" DATE "\n/awsexamplebucket1/photos/puppy.jpg",
	       "guide's GET: the string to sign");
	free(sts);
	is_int(sigv2_verify(&r.in, &a, NULL, SK), S3_OK, "guide's GET: verifies");
	is_int(sigv2_verify(&r.in, &a, NULL, SK "x"), S3_SIGNATURE_MISMATCH,
	       "guide's GET: another secret does not");
	/* the same request virtual-hosted: the bucket comes from Host, and still signs */
	req_init(&r, "GET", "/photos/puppy.jpg", NULL, T_GET);
	req_add(&r, "Date", DATE);
	req_add(&r, "Authorization", "AWS " AK ":qgk2+6Sv9/oM7G3qLEjTH1a1l1g=");
	is_int(parse(&r, &a), S3_OK, "virtual-hosted: parses");
	is_int(sigv2_verify(&r.in, &a, "awsexamplebucket1", SK), S3_OK, "virtual-hosted: verifies");
	is_int(sigv2_verify(&r.in, &a, NULL, SK), S3_SIGNATURE_MISMATCH,
	       "virtual-hosted: not without its bucket");
}

static void test_published_query_example(void)
{
	static const char q[] = "AWSAccessKeyId=" AK
				"&Expires=1175139620&Signature=NpgCjnDzrM%2BWFzoENXmpNDUsSn8%3D";
	struct req r;
	struct sigv2_auth a;
	char *sts;
	req_init(&r, "GET", "/johnsmith/photos/puppy.jpg", q, T2007);
	is_int(parse(&r, &a), S3_OK, "guide's presigned URL: parses");
	ok(a.presigned && a.time == 1175139620, "presigned: Expires read");
	is_str(a.signature, "NpgCjnDzrM+WFzoENXmpNDUsSn8=", "presigned: the signature decoded");
	sts = sts_of(&r, &a, NULL);
	is_str(sts, "GET\n\n\n1175139620\n/johnsmith/photos/puppy.jpg",
	       "presigned: Expires is the date line, the auth parameters are not signed");
	free(sts);
	is_int(sigv2_verify(&r.in, &a, NULL, SK), S3_OK, "presigned: verifies");
	req_init(&r, "GET", "/johnsmith/photos/puppy.jpg", q, 1175139621);
	is_int(parse(&r, &a), S3_EXPIRED_REQUEST, "presigned: a second late is expired");
}

static void test_string_to_sign(void)
{
	struct req r;
	struct sigv2_auth a;
	char *sts;
	req_init(&r, "PUT", "/b/a%20b+c",
		 "x-id=PutObject&versionId=v%2F1&tagging&response-content-type=text%2Fplain&acl",
		 T_GET);
	req_add(&r, "Content-Type", " text/plain ");
	req_add(&r, "Content-MD5", "1B2M2Y8AsgTpgAmY7PhCfg==");
	req_add(&r, "Date", DATE);
	req_add(&r, "X-Amz-Meta-Zed", " last ");
	req_add(&r, "x-amz-meta-multi", "one");
	req_add(&r, "X-AMZ-META-MULTI", "two ");
	req_add(&r, "Authorization", "AWS " AK ":c2ln");
	is_int(parse(&r, &a), S3_OK, "a PUT with metadata: parses");
	sts = sts_of(&r, &a, NULL);
	is_str(sts,
	       "PUT\n1B2M2Y8AsgTpgAmY7PhCfg==\ntext/plain\n" DATE "\n"
	       "x-amz-meta-multi:one,two\nx-amz-meta-zed:last\n"
	       "/b/a%20b+c?acl&response-content-type=text/plain&tagging&versionId=v/1",
	       "headers lowercased, sorted and joined; subresources sorted and decoded; the "
	       "path as sent");
	free(sts);
	req_init(&r, "GET", "/b/k", NULL, T_GET);
	req_add(&r, "Date", "Thu, 01 Jan 1970 00:00:00 GMT");
	req_add(&r, "x-amz-date", DATE);
	req_add(&r, "Authorization", "AWS " AK ":c2ln");
	is_int(parse(&r, &a), S3_OK, "x-amz-date: parses (its time, not Date's)");
	sts = sts_of(&r, &a, NULL);
	is_str(sts, "GET\n\n\n\nx-amz-date:" DATE "\n/b/k", "x-amz-date blanks the Date line");
	free(sts);
}

/* A bucket's resource signs as "/bucket" (the guide) or "/bucket/" (botocore). */
struct form_case {
	const char *what, *signed_resource, *path, *vhost;
	enum s3_err want;
};

static void test_bucket_resource_forms(void)
{
	static const struct form_case cases[] = {
		{"/bkt received, /bkt/ signed", "/bkt/", "/bkt", NULL, S3_OK},
		{"virtual-hosted /, /bkt/ signed", "/bkt/", "/", "bkt", S3_OK},
		{"/bkt/ received, /bkt signed", "/bkt", "/bkt/", NULL, S3_OK},
		{"an object's path has one form only", "/bkt", "/bkt/k", NULL,
		 S3_SIGNATURE_MISMATCH},
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const struct form_case *c = &cases[i];
		struct req r;
		struct sigv2_auth a;
		char sts[128], sig[29], hdr[64];
		int n = snprintf(sts, sizeof(sts), "GET\n\n\n" DATE "\n%s?versioning",
				 c->signed_resource);
		sigv2_sign(SK, sts, (size_t)n, sig);
		snprintf(hdr, sizeof(hdr), "AWS " AK ":%s", sig);
		req_init(&r, "GET", c->path, "versioning", T_GET);
		req_add(&r, "Date", DATE);
		req_add(&r, "Authorization", hdr);
		is_int(parse(&r, &a), S3_OK, c->what);
		is_int(sigv2_verify(&r.in, &a, c->vhost, SK), c->want, c->what);
	}
}

struct refusal {
	const char *what, *path, *query, *auth, *date, *extra;
	int64_t now;
	enum s3_err want;
};

static void test_refusals(void)
{
	static const char long_key[] =
		"AWS "
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		"A:sig";
	static const struct refusal cases[] = {
		{"no colon", "/b/k", NULL, "AWS " AK, DATE, NULL, T_GET, S3_INVALID_ARGUMENT},
		{"no key", "/b/k", NULL, "AWS :sig", DATE, NULL, T_GET, S3_INVALID_ARGUMENT},
		{"no signature", "/b/k", NULL, "AWS " AK ":", DATE, NULL, T_GET,
		 S3_INVALID_ARGUMENT},
		{"a key too long", "/b/k", NULL, long_key, DATE, NULL, T_GET, S3_INVALID_ARGUMENT},
		{"header and query", "/b/k", "AWSAccessKeyId=" AK "&Signature=x&Expires=9",
		 "AWS " AK ":sig", DATE, NULL, T_GET, S3_INVALID_ARGUMENT},
		{"SigV4 header and SigV2 query", "/b/k",
		 "AWSAccessKeyId=" AK "&Signature=x&Expires=9", "AWS4-HMAC-SHA256 x", DATE, NULL,
		 T_GET, S3_INVALID_ARGUMENT},
		{"SigV2 and SigV4 query", "/b/k",
		 "AWSAccessKeyId=" AK "&Signature=x&Expires=9&X-Amz-Signature=y", NULL, NULL, NULL,
		 0, S3_INVALID_ARGUMENT},
		{"no date", "/b/k", NULL, "AWS " AK ":sig", NULL, NULL, T_GET, S3_ACCESS_DENIED},
		{"a bad date", "/b/k", NULL, "AWS " AK ":sig", "yesterday", NULL, T_GET,
		 S3_ACCESS_DENIED},
		{"16 minutes fast", "/b/k", NULL, "AWS " AK ":sig", DATE, NULL, T_GET - 960,
		 S3_REQUEST_TIME_SKEWED},
		{"16 minutes slow", "/b/k", NULL, "AWS " AK ":sig", DATE, NULL, T_GET + 960,
		 S3_REQUEST_TIME_SKEWED},
		{"a streaming payload", "/b/k", NULL, "AWS " AK ":sig", DATE,
		 "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", T_GET, S3_INVALID_ARGUMENT},
		{"no Expires", "/b/k", "AWSAccessKeyId=" AK "&Signature=x", NULL, NULL, NULL, 0,
		 S3_ACCESS_DENIED},
		{"no Signature", "/b/k", "AWSAccessKeyId=" AK "&Expires=9", NULL, NULL, NULL, 0,
		 S3_ACCESS_DENIED},
		{"an empty key", "/b/k", "AWSAccessKeyId=&Signature=x&Expires=9", NULL, NULL, NULL,
		 0, S3_ACCESS_DENIED},
		{"two keys", "/b/k", "AWSAccessKeyId=a&AWSAccessKeyId=b&Signature=x&Expires=9",
		 NULL, NULL, NULL, 0, S3_ACCESS_DENIED},
		{"Expires not a number", "/b/k", "AWSAccessKeyId=a&Signature=x&Expires=soon", NULL,
		 NULL, NULL, 0, S3_ACCESS_DENIED},
		{"Expires negative", "/b/k", "AWSAccessKeyId=a&Signature=x&Expires=-5", NULL, NULL,
		 NULL, 0, S3_ACCESS_DENIED},
		{"Expires past", "/b/k", "AWSAccessKeyId=a&Signature=x&Expires=99", NULL, NULL,
		 NULL, 100, S3_EXPIRED_REQUEST},
		{"a bad escape", "/b/k", "AWSAccessKeyId=a&Signature=%zz&Expires=99", NULL, NULL,
		 NULL, 0, S3_INVALID_URI},
		{"a NUL in the key", "/b/k", "AWSAccessKeyId=a%00b&Signature=x&Expires=99", NULL,
		 NULL, NULL, 0, S3_ACCESS_DENIED},
	};
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		const struct refusal *c = &cases[i];
		struct req r;
		struct sigv2_auth a;
		req_init(&r, "GET", c->path, c->query, c->now);
		if (c->auth)
			req_add(&r, "Authorization", c->auth);
		if (c->date)
			req_add(&r, "Date", c->date);
		if (c->extra)
			req_add(&r, "x-amz-content-sha256", c->extra);
		is_int(parse(&r, &a), c->want, c->what);
		ok(!a.access_key[0] && !a.signature[0], "%s: nothing kept", c->what);
	}
}

/* A signature of the wrong length or a byte off never verifies. */
static void test_mismatches(void)
{
	static const char *const sigs[] = {
		"qgk2+6Sv9/oM7G3qLEjTH1a1l1g",
		"qgk2+6Sv9/oM7G3qLEjTH1a1l1g==", "Qgk2+6Sv9/oM7G3qLEjTH1a1l1g="};
	for (size_t i = 0; i < ARRAY_LEN(sigs); i++) {
		struct req r;
		struct sigv2_auth a;
		char hdr[80];
		snprintf(hdr, sizeof(hdr), "AWS " AK ":%s", sigs[i]);
		req_init(&r, "GET", "/awsexamplebucket1/photos/puppy.jpg", NULL, T_GET);
		req_add(&r, "Date", DATE);
		req_add(&r, "Authorization", hdr);
		ok(parse(&r, &a) == S3_OK, "%s parses", sigs[i]);
		is_int(sigv2_verify(&r.in, &a, NULL, SK), S3_SIGNATURE_MISMATCH,
		       "a near signature does not verify");
	}
}

int main(void)
{
	test_present();
	test_published_header_example();
	test_published_query_example();
	test_string_to_sign();
	test_bucket_resource_forms();
	test_refusals();
	test_mismatches();
	return done_testing();
}
