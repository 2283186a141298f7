/*
 * The bucket policy evaluator: malformed documents (each refusal says why),
 * principals, actions, resources and their Not* forms, every condition
 * operator with ...IfExists and absent keys, CIDR edges, explicit deny.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "s3/bucket_policy.h"
#include "tap.h"

#define BUCKET "photos"
#define OBJ(k) "arn:aws:s3:::" BUCKET "/" k
#define ARN    "arn:aws:s3:::" BUCKET

/* A NULL-terminated list of condition key, value pairs. */
#define KV(...) ((const char *const[]){__VA_ARGS__, NULL})

static struct bucket_policy *parse(const char *json)
{
	char msg[256] = "";
	struct bucket_policy *p = bucket_policy_parse(json, strlen(json), BUCKET, msg, sizeof(msg));
	if (!p)
		printf("# unexpected refusal: %s\n", msg);
	return p;
}

/* The document is refused with a message containing want (case-insensitively). */
static void bad(const char *json, const char *want)
{
	char msg[256] = "";
	struct bucket_policy *p = bucket_policy_parse(json, strlen(json), BUCKET, msg, sizeof(msg));
	ok(!p && strcasestr(msg, want), "refused (%s): %s", want, msg);
	bucket_policy_free(p);
}

static enum policy_effect ev(const struct bucket_policy *p, const char *who, const char *action,
			     const char *resource, const char *const *kv)
{
	struct policy_kv ctx[16];
	struct policy_request r = {
		.principal = who, .action = action, .resource = resource, .ctx = ctx};
	for (; kv && kv[0] && r.nctx < 16; kv += 2)
		ctx[r.nctx++] = (struct policy_kv){kv[0], kv[1]};
	return bucket_policy_eval(p, &r);
}

/* A public Allow of s3:* on the bucket's objects under one "Condition" block. */
static struct bucket_policy *with_cond(const char *cond)
{
	char json[2048];
	snprintf(json, sizeof(json),
		 "{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Allow\","
		 "\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"" OBJ(
			 "*") "\","
			      "\"Condition\":{%s}}}",
		 cond);
	return parse(json);
}

/* Whether the condition block holds for a request with the condition keys kv. */
static int cond(const char *c, const char *const *kv)
{
	struct bucket_policy *p = with_cond(c);
	int r = p ? ev(p, "alice", "s3:GetObject", OBJ("k"), kv) == POLICY_ALLOW : -1;
	bucket_policy_free(p);
	return r;
}

#define COND_IS(c, kv, want, name) is_int(cond(c, kv), want, name)

/* {"Statement": one statement, given its members after Effect/Principal. */
#define STMT(effect, principal, rest) \
	"{\"Statement\":{\"Effect\":\"" effect "\",\"Principal\":" principal "," rest "}}"

static void test_malformed(void)
{
	char msg[64];

	bad("", "bytes");
	bad("not json", "valid JSON");
	bad("[]", "first byte");
	bad("\"x\"", "first byte");
	bad("{\"Statement\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}", "nest");
	bad("{\"Statement\":[{\"Effect\":\"Allow\",\"Sid\":\"[[[[[[[[[[[[[[[[[[[[[[[[\"}]}",
	    "Principal"); /* brackets inside strings do not count as nesting */
	bad("{}", "Missing required field Statement");
	bad("{\"Statement\":[]}", "Missing required field Statement");
	bad("{\"Statement\":[1]}", "must be an object");
	bad("{\"Statement\":\"x\"}", "must be an object");
	bad("{\"Version\":\"2012-10-17\",\"Foo\":1,\"Statement\":[]}", "Unknown field Foo");
	bad("{\"Version\":\"2012-10-17\",\"Version\":\"2012-10-17\",\"Statement\":[]}",
	    "Duplicate field Version");
	bad("{\"Version\":\"2020-01-01\",\"Statement\":[]}", "Version");
	bad("{\"Version\":1,\"Statement\":[]}", "Version");
	bad("{\"Id\":5,\"Statement\":[]}", "Id must be a string");

	/* statement fields */
	bad("{\"Statement\":{\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"" ARN "\"}}",
	    "Missing required field Effect");
	bad(STMT("allow", "\"*\"", "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""), "effect");
	bad("{\"Statement\":{\"Effect\":true,\"Principal\":\"*\",\"Action\":\"s3:*\","
	    "\"Resource\":\"" ARN "\"}}",
	    "effect");
	bad(STMT("Allow", "\"*\"", "\"Sid\":1,\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "Sid");
	bad(STMT("Allow", "\"*\"", "\"Actions\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "Unknown field Actions");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "Duplicate field Action");
	bad("{\"Statement\":{\"Effect\":\"Allow\",\"Action\":\"s3:*\",\"Resource\":\"" ARN "\"}}",
	    "Missing required field Principal");
	bad("{\"Statement\":{\"Effect\":\"Allow\",\"NotPrincipal\":{\"AWS\":\"bob\"},"
	    "\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"" ARN "\"}}",
	    "Principal and NotPrincipal cannot both");
	bad("{\"Statement\":{\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":5},"
	    "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\"}}",
	    "Principal.AWS must be");
	bad(STMT("Allow", "\"*\"", "\"Resource\":\"" ARN "\""), "Missing required field Action");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"NotAction\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "both");
	bad(STMT("Allow", "\"*\"", "\"Action\":\"s3:*\""), "Missing required field Resource");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\",\"NotResource\":\"" ARN "\""),
	    "both");

	/* principals */
	bad(STMT("Allow", "\"alice\"", "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "principal");
	bad(STMT("Allow", "5", "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""), "principal");
	bad(STMT("Allow", "{}", "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""), "principal");
	bad(STMT("Allow", "{\"CanonicalUser\":\"79a59df9\"}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "CanonicalUser \"79a59df9\"");
	bad(STMT("Allow",
		 "{\"CanonicalUser\":"
		 "\"g9a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be\"}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "CanonicalUser");
	bad(STMT("Allow", "{\"CanonicalUser\":[]}", "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "Principal.CanonicalUser must be");
	bad(STMT("Allow", "{\"Service\":\"cloudtrail.example.com\"}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "Service \"cloudtrail.example.com\"");
	bad(STMT("Allow", "{\"Service\":[\"logging.s3.amazonaws.com\",\"*\"]}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "Service \"*\"");
	bad(STMT("Allow", "{\"Service\":\"Logging.S3..amazonaws.com\"}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "Service");
	bad(STMT("Allow", "{\"Service\":{\"a\":1}}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "Principal.Service must be");
	bad(STMT("Allow", "{\"Service\":\"logging.s3.amazonaws.com\",\"Service\":\"x\"}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "duplicate \"Service\"");
	bad(STMT("Allow", "{\"AWS\":\"*\",\"Federated\":\"x\"}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "unsupported principal");
	bad(STMT("Allow", "{\"Aws\":\"*\"}", "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "principal");
	bad(STMT("Allow", "{\"AWS\":[]}", "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "non-empty");
	bad(STMT("Allow", "{\"AWS\":[\"alice\",7]}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "Principal.AWS");
	bad(STMT("Allow", "{\"AWS\":\"\"}", "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "principal");
	bad(STMT("Allow", "{\"AWS\":\"ali*\"}", "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "principal");
	bad(STMT("Allow", "{\"AWS\":\"arn:aws:iam::*:root\"}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "principal");
	bad(STMT("Allow", "{\"AWS\":\"arn:aws:iam::1:group/admins\"}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "principal");
	bad(STMT("Allow", "{\"AWS\":\"arn:aws:iam::1:user/\"}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "principal");
	bad(STMT("Allow", "{\"AWS\":\"arn:aws:iam::root\"}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "principal");
	bad(STMT("Allow", "{\"AWS\":\"arn:aws:sts::1:assumed-role/r/s\"}",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\""),
	    "principal");

	/* actions */
	bad(STMT("Allow", "\"*\"", "\"Action\":\"s3:Frobnicate\",\"Resource\":\"" ARN "\""),
	    "invalid action");
	bad(STMT("Allow", "\"*\"", "\"Action\":\"ec2:RunInstances\",\"Resource\":\"" ARN "\""),
	    "invalid action");
	bad(STMT("Allow", "\"*\"", "\"Action\":\"s3:\",\"Resource\":\"" ARN "\""),
	    "invalid action");
	bad(STMT("Allow", "\"*\"", "\"Action\":\"GetObject\",\"Resource\":\"" ARN "\""),
	    "invalid action");
	bad(STMT("Allow", "\"*\"",
		 "\"NotAction\":[\"s3:GetObject\",\"s3:Nope\"],"
		 "\"Resource\":\"" ARN "\""),
	    "invalid action \"s3:Nope\" in NotAction");
	bad(STMT("Allow", "\"*\"", "\"Action\":42,\"Resource\":\"" ARN "\""), "Action must be");
	bad(STMT("Allow", "\"*\"", "\"Action\":[],\"Resource\":\"" ARN "\""), "Action must be");

	/* resources */
	bad(STMT("Allow", "\"*\"", "\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::other/*\""),
	    "invalid resource");
	bad(STMT("Allow", "\"*\"", "\"Action\":\"s3:*\",\"Resource\":\"*\""), "invalid resource");
	bad(STMT("Allow", "\"*\"", "\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::photos2/*\""),
	    "invalid resource");
	bad(STMT("Allow", "\"*\"", "\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::\""),
	    "invalid resource");
	bad(STMT("Allow", "\"*\"", "\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::x*/*\""),
	    "invalid resource");
	bad(STMT("Allow", "\"*\"", "\"Action\":\"s3:*\",\"Resource\":\"ARN:AWS:S3:::photos\""),
	    "invalid resource");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"NotResource\":[\"" ARN "\",\"arn:aws:s3:::x\"]"),
	    "in NotResource");
	bad(STMT("Allow", "\"*\"", "\"Action\":\"s3:*\",\"Resource\":{}"), "Resource must be");

	/* conditions */
	bad(STMT("Allow", "\"*\"", "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\",\"Condition\":[]"),
	    "Condition must be");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"DateEquals\":{\"aws:CurrentTime\":\"2020-13-01\"}}"),
	    "not an ISO 8601 date");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"DateLessThan\":{\"aws:CurrentTime\":\"2020-01-01T25:00Z\"}}"),
	    "not an ISO 8601 date");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"ForSomeValues:StringEquals\":{\"k\":\"v\"}}"),
	    "operator");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"ForAnyValue:Null\":{\"k\":\"true\"}}"),
	    "Null takes no ForAnyValue");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"ArnLike\":{\"aws:SourceArn\":\"bucket-a\"}}"),
	    "is not an ARN");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"BinaryEquals\":{\"k\":\"AA==\"}}"),
	    "operator \"BinaryEquals\"");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"IfExists\":{\"k\":\"v\"}}"),
	    "operator");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"NullIfExists\":{\"k\":\"true\"}}"),
	    "Null");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"StringEquals\":\"v\"}"),
	    "non-empty object");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"StringEquals\":{}}"),
	    "non-empty object");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"StringEquals\":{\"\":\"v\"}}"),
	    "empty key");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"StringEquals\":{\"k\":[]}}"),
	    "no values");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"StringEquals\":{\"k\":null}}"),
	    "string, number or boolean");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"StringEquals\":{\"k\":[\"a\",{}]}}"),
	    "string, number or boolean");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"NumericLessThan\":{\"s3:max-keys\":\"ten\"}}"),
	    "not a number");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"NumericEquals\":{\"k\":\"0x10\"}}"),
	    "not a number");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"NumericEquals\":{\"k\":\"inf\"}}"),
	    "not a number");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN
		 "\",\"Condition\":{\"Bool\":{\"aws:SecureTransport\":\"yes\"}}"),
	    "true or false");
	bad(STMT("Allow", "\"*\"",
		 "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\",\"Condition\":{\"Null\":{\"k\":1}}"),
	    "true or false");
	{
		static const char *const cidrs[] = {
			"10.0.0.0/33",   "10.0.0",  "10.0.0.0/",    "10.0.0.0/-1",
			"10.0.0.0/+8",   "::1/129", "::1/1000",     "2001:db8::g",
			"fe80::1%eth0",  "",        "10.0.0.0/8/8", "1.2.3.4 ",
			"10.0.0.0/0008", "x",
		};
		for (size_t i = 0; i < sizeof(cidrs) / sizeof(cidrs[0]); i++) {
			char json[512];
			snprintf(json, sizeof(json),
				 STMT("Allow", "\"*\"",
				      "\"Action\":\"s3:*\",\"Resource\":\"" ARN
				      "\",\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":"
				      "[\"10.0.0.0/8\",\"%s\"]}}"),
				 cidrs[i]);
			bad(json, "not an IP address or CIDR");
		}
	}

	/* where: the statement's number */
	bad("{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
	    "\"Resource\":\"" ARN "\"},{\"Effect\":\"Allow\",\"Principal\":\"*\","
	    "\"Action\":\"s3:Bogus\",\"Resource\":\"" ARN "\"}]}",
	    "(statement 2)");

	/* a short or absent message buffer is fine */
	ok(!bucket_policy_parse("{", 1, BUCKET, NULL, 0), "no message buffer");
	ok(!bucket_policy_parse("{}", 2, BUCKET, msg, 8) && strlen(msg) == 7,
	   "message truncated to its buffer: %s", msg);
}

static void test_size_limit(void)
{
	const char *head = "{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
			   "\"Action\":\"s3:*\",\"Resource\":\"" ARN "\",\"Sid\":\"";
	size_t hl = strlen(head);
	char *json = malloc(BUCKET_POLICY_MAX + 2), msg[128] = "";
	struct bucket_policy *p;

	is_int(BUCKET_POLICY_MAX, 20480, "the limit is 20 KiB");
	/* exactly BUCKET_POLICY_MAX bytes: the Sid pads it out */
	memcpy(json, head, hl);
	memset(json + hl, 'a', BUCKET_POLICY_MAX - hl - 3);
	memcpy(json + BUCKET_POLICY_MAX - 3, "\"}}", 4);
	p = bucket_policy_parse(json, BUCKET_POLICY_MAX, BUCKET, msg, sizeof(msg));
	ok(p, "a policy of exactly 20 KiB is taken %s", msg);
	bucket_policy_free(p);
	memset(json + hl, 'a', BUCKET_POLICY_MAX - hl - 2);
	memcpy(json + BUCKET_POLICY_MAX - 2, "\"}}", 4);
	p = bucket_policy_parse(json, BUCKET_POLICY_MAX + 1, BUCKET, msg, sizeof(msg));
	ok(!p && strstr(msg, "20480"), "one byte more is refused: %s", msg);
	bucket_policy_free(p);
	free(json);
}

static void test_forms(void)
{
	struct bucket_policy *p;

	p = parse("{\"Version\":\"2012-10-17\",\"Id\":\"P1\",\"Statement\":[{\"Sid\":\"S1\","
		  "\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"alice\",\"bob\"]},"
		  "\"Action\":[\"s3:GetObject\",\"s3:ListBucket\"],\"Resource\":[\"" ARN
		  "\",\"" OBJ("*") "\"],\"Condition\":{}}]}");
	ok(p, "a full document with an array of statements");
	is_int(ev(p, "bob", "s3:ListBucket", ARN, NULL), POLICY_ALLOW, "array forms match");
	bucket_policy_free(p);
	p = parse("{\"Version\":\"2008-10-17\",\"Statement\":{\"Effect\":\"Deny\","
		  "\"Principal\":{\"AWS\":\"*\"},\"Action\":\"*\",\"Resource\":\"" OBJ("*") "\"}}");
	ok(p, "a single statement object, Version 2008-10-17, Action \"*\"");
	is_int(ev(p, NULL, "s3:PutObject", OBJ("a/b"), NULL), POLICY_DENY,
	       "single statement applies");
	bucket_policy_free(p);
	/* the bucket part may carry wildcards that match the bucket */
	p = parse(STMT("Allow", "\"*\"",
		       "\"Action\":[\"S3:getobject\",\"s3:Get*\",\"s3:*Nothing*\",\"s3:?\"],"
		       "\"Resource\":[\"arn:aws:s3:::*\",\"arn:aws:s3:::pho*/*\","
		       "\"arn:aws:s3:::ph?tos\",\"arn:aws:s3:::*/x\"]"));
	ok(p, "wildcard buckets that match, patterns matching no action, any action case");
	bucket_policy_free(p);
	ok(bucket_policy_parse("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
			       "\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::\"}}",
			       strlen("{\"Statement\":{\"Effect\":\"Allow\",\"Principal\":\"*\","
				      "\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::\"}}"),
			       "other", NULL, 0) == NULL,
	   "another bucket's policy is checked against that bucket");
}

static void test_principals(void)
{
	struct bucket_policy *p;

	p = parse(STMT("Allow", "\"*\"",
		       "\"Action\":\"s3:GetObject\",\"Resource\":\"" OBJ("*") "\""));
	is_int(ev(p, NULL, "s3:GetObject", OBJ("k"), NULL), POLICY_ALLOW, "\"*\": anonymous");
	is_int(ev(p, "alice", "s3:GetObject", OBJ("k"), NULL), POLICY_ALLOW, "\"*\": alice");
	bucket_policy_free(p);
	p = parse(STMT("Allow", "{\"AWS\":\"*\"}",
		       "\"Action\":\"s3:GetObject\",\"Resource\":\"" OBJ("*") "\""));
	is_int(ev(p, NULL, "s3:GetObject", OBJ("k"), NULL), POLICY_ALLOW,
	       "{\"AWS\":\"*\"}: anonymous");
	bucket_policy_free(p);
	p = parse(STMT("Allow", "{\"AWS\":\"alice\"}",
		       "\"Action\":\"s3:GetObject\",\"Resource\":\"" OBJ("*") "\""));
	is_int(ev(p, "alice", "s3:GetObject", OBJ("k"), NULL), POLICY_ALLOW, "by name: alice");
	is_int(ev(p, "bob", "s3:GetObject", OBJ("k"), NULL), POLICY_NO_MATCH, "by name: not bob");
	is_int(ev(p, "Alice", "s3:GetObject", OBJ("k"), NULL), POLICY_NO_MATCH,
	       "names are case-sensitive");
	is_int(ev(p, NULL, "s3:GetObject", OBJ("k"), NULL), POLICY_NO_MATCH,
	       "by name: not anonymous");
	bucket_policy_free(p);
	p = parse(STMT("Allow",
		       "{\"AWS\":[\"arn:aws:iam::123456789012:user/alice\","
		       "\"arn:aws:iam:::user/bob\",\"arn:aws:iam::1:user/dev/team/carol\"]}",
		       "\"Action\":\"s3:GetObject\",\"Resource\":\"" OBJ("*") "\""));
	is_int(ev(p, "alice", "s3:GetObject", OBJ("k"), NULL), POLICY_ALLOW, "user ARN");
	is_int(ev(p, "bob", "s3:GetObject", OBJ("k"), NULL), POLICY_ALLOW,
	       "user ARN, empty account");
	is_int(ev(p, "carol", "s3:GetObject", OBJ("k"), NULL), POLICY_ALLOW, "user ARN with path");
	is_int(ev(p, "dave", "s3:GetObject", OBJ("k"), NULL), POLICY_NO_MATCH, "not listed");
	bucket_policy_free(p);
	p = parse(STMT("Allow", "{\"AWS\":\"arn:aws:iam::123456789012:root\"}",
		       "\"Action\":\"s3:GetObject\",\"Resource\":\"" OBJ("*") "\""));
	is_int(ev(p, "anyone", "s3:GetObject", OBJ("k"), NULL), POLICY_ALLOW,
	       "root: any authenticated identity");
	is_int(ev(p, NULL, "s3:GetObject", OBJ("k"), NULL), POLICY_NO_MATCH, "root: not anonymous");
	bucket_policy_free(p);
}

/* A request made by the service svc (or an identity with canonical id canon). */
static enum policy_effect ev_as(const struct bucket_policy *p, const char *who, const char *svc,
				const char *canon, const char *action)
{
	struct policy_request r = {.principal = who,
				   .action = action,
				   .resource = OBJ("logs/x"),
				   .service = svc,
				   .canonical_id = canon};
	return bucket_policy_eval(p, &r);
}

static void test_service_canonical_not_principal(void)
{
	static const char canon[] =
		"79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be";
	struct bucket_policy *p;

	p = parse(STMT("Allow", "{\"Service\":\"" POLICY_SERVICE_LOGGING "\"}",
		       "\"Action\":\"s3:PutObject\",\"Resource\":\"" OBJ("logs/*") "\""));
	ok(p && !bucket_policy_needs(p), "a Service principal parses, needing nothing more");
	is_int(ev_as(p, NULL, POLICY_SERVICE_LOGGING, NULL, "s3:PutObject"), POLICY_ALLOW,
	       "Service: the log delivery");
	is_int(ev_as(p, NULL, "cloudtrail.amazonaws.com", NULL, "s3:PutObject"), POLICY_NO_MATCH,
	       "Service: another service");
	is_int(ev_as(p, "logging.s3.amazonaws.com", NULL, NULL, "s3:PutObject"), POLICY_NO_MATCH,
	       "Service: not an identity of the same name");
	is_int(ev_as(p, NULL, NULL, NULL, "s3:PutObject"), POLICY_NO_MATCH,
	       "Service: not anonymous");
	ok(!bucket_policy_is_public(p), "a Service grant is not public");
	bucket_policy_free(p);
	p = parse(STMT("Allow",
		       "{\"Service\":[\"cloudtrail.amazonaws.com\",\"" POLICY_SERVICE_LOGGING "\"],"
		       "\"AWS\":\"alice\"}",
		       "\"Action\":\"s3:PutObject\",\"Resource\":\"" OBJ("*") "\""));
	is_int(ev_as(p, NULL, POLICY_SERVICE_LOGGING, NULL, "s3:PutObject"), POLICY_ALLOW,
	       "Service list");
	is_int(ev_as(p, "alice", NULL, NULL, "s3:PutObject"), POLICY_ALLOW,
	       "Service and AWS together");
	bucket_policy_free(p);
	p = parse(STMT("Allow", "\"*\"",
		       "\"Action\":\"s3:PutObject\",\"Resource\":\"" OBJ("*") "\""));
	is_int(ev_as(p, NULL, POLICY_SERVICE_LOGGING, NULL, "s3:PutObject"), POLICY_ALLOW,
	       "\"*\" takes services too");
	bucket_policy_free(p);
	p = parse(STMT("Allow", "{\"AWS\":\"arn:aws:iam::1:root\"}",
		       "\"Action\":\"s3:PutObject\",\"Resource\":\"" OBJ("*") "\""));
	is_int(ev_as(p, NULL, POLICY_SERVICE_LOGGING, NULL, "s3:PutObject"), POLICY_NO_MATCH,
	       "root is not a service");
	bucket_policy_free(p);

	p = parse(STMT("Allow",
		       "{\"CanonicalUser\":"
		       "\"79A59DF900B949E55D96A1E698FBACEDFD6E09D98EACF8F8D5218E7CD47EF2BE\"}",
		       "\"Action\":\"s3:GetObject\",\"Resource\":\"" OBJ("*") "\""));
	ok(p && bucket_policy_needs(p) == POLICY_NEEDS_CANONICAL, "CanonicalUser needs the id");
	is_int(ev_as(p, "alice", NULL, canon, "s3:GetObject"), POLICY_ALLOW,
	       "CanonicalUser: its id (any case)");
	is_int(ev_as(p, "alice", NULL, NULL, "s3:GetObject"), POLICY_NO_MATCH,
	       "CanonicalUser: no id given");
	is_int(ev_as(p, "bob", NULL, "00", "s3:GetObject"), POLICY_NO_MATCH,
	       "CanonicalUser: another id");
	is_int(ev_as(p, NULL, NULL, canon, "s3:GetObject"), POLICY_NO_MATCH,
	       "CanonicalUser: never anonymous");
	bucket_policy_free(p);

	p = parse("{\"Statement\":{\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":[\"alice\"]},"
		  "\"Action\":\"s3:*\",\"Resource\":\"" OBJ("*") "\"}}");
	is_int(ev(p, "alice", "s3:GetObject", OBJ("k"), NULL), POLICY_NO_MATCH,
	       "NotPrincipal: the one named is not denied");
	is_int(ev(p, "bob", "s3:GetObject", OBJ("k"), NULL), POLICY_DENY,
	       "NotPrincipal: another is denied");
	is_int(ev(p, NULL, "s3:GetObject", OBJ("k"), NULL), POLICY_DENY,
	       "NotPrincipal: anonymous is denied");
	is_int(ev_as(p, NULL, POLICY_SERVICE_LOGGING, NULL, "s3:GetObject"), POLICY_DENY,
	       "NotPrincipal: a service is denied");
	bucket_policy_free(p);
	p = parse("{\"Statement\":{\"Effect\":\"Allow\",\"NotPrincipal\":\"*\","
		  "\"Action\":\"s3:*\",\"Resource\":\"" OBJ("*") "\"}}");
	is_int(ev(p, "alice", "s3:GetObject", OBJ("k"), NULL), POLICY_NO_MATCH,
	       "NotPrincipal \"*\": nobody");
	ok(!bucket_policy_is_public(p), "an Allow to NotPrincipal \"*\" is not public");
	bucket_policy_free(p);
	p = parse("{\"Statement\":{\"Effect\":\"Allow\",\"NotPrincipal\":{\"AWS\":\"bob\"},"
		  "\"Action\":\"s3:GetObject\",\"Resource\":\"" OBJ("*") "\"}}");
	is_int(ev(p, NULL, "s3:GetObject", OBJ("k"), NULL), POLICY_ALLOW,
	       "an Allow to NotPrincipal bob: anonymous too");
	ok(bucket_policy_is_public(p), "an Allow to all but bob is public");
	bucket_policy_free(p);
}

static void test_actions_resources(void)
{
	struct bucket_policy *p;

	p = parse(STMT("Allow", "\"*\"",
		       "\"Action\":[\"s3:Get*\",\"s3:*Upload\",\"s3:ListBucke?\"],"
		       "\"Resource\":[\"" ARN "\",\"" OBJ("photos/*") "\",\"" OBJ("a?c") "\"]"));
	is_int(ev(p, NULL, "s3:GetObject", OBJ("photos/x.jpg"), NULL), POLICY_ALLOW, "s3:Get*");
	is_int(ev(p, NULL, "s3:GetObjectTagging", OBJ("photos/x"), NULL), POLICY_ALLOW,
	       "s3:Get* covers GetObjectTagging");
	is_int(ev(p, NULL, "s3:getobject", OBJ("photos/x"), NULL), POLICY_ALLOW,
	       "actions match case-insensitively");
	is_int(ev(p, NULL, "s3:PutObject", OBJ("photos/x"), NULL), POLICY_NO_MATCH,
	       "s3:PutObject not covered");
	is_int(ev(p, NULL, "s3:AbortMultipartUpload", OBJ("photos/x"), NULL), POLICY_ALLOW,
	       "s3:*Upload");
	is_int(ev(p, NULL, "s3:ListBucket", ARN, NULL), POLICY_ALLOW, "? in an action");
	is_int(ev(p, NULL, "s3:ListBucketVersions", ARN, NULL), POLICY_NO_MATCH,
	       "? is one character");
	is_int(ev(p, NULL, "s3:GetObject", OBJ("photos/a/b/c"), NULL), POLICY_ALLOW, "* crosses /");
	is_int(ev(p, NULL, "s3:GetObject", OBJ("docs/x"), NULL), POLICY_NO_MATCH, "another prefix");
	is_int(ev(p, NULL, "s3:GetObject", OBJ("Photos/x"), NULL), POLICY_NO_MATCH,
	       "resources are case-sensitive");
	is_int(ev(p, NULL, "s3:GetObject", OBJ("abc"), NULL), POLICY_ALLOW, "? in a resource");
	is_int(ev(p, NULL, "s3:GetObject",
		  OBJ("a\xc3\xa9"
		      "c"),
		  NULL),
	       POLICY_ALLOW, "? is one UTF-8 character");
	is_int(ev(p, NULL, "s3:GetObject", OBJ("ac"), NULL), POLICY_NO_MATCH,
	       "? needs a character");
	is_int(ev(p, NULL, "s3:GetObject", OBJ(""), NULL), POLICY_NO_MATCH,
	       "the bucket ARN is not \"bucket/\"");
	is_int(ev(p, NULL, "s3:GetObject", "arn:aws:s3:::photos2/photos/x", NULL), POLICY_NO_MATCH,
	       "another bucket");
	is_int(ev(p, NULL, NULL, NULL, NULL), POLICY_NO_MATCH, "no action or resource");
	bucket_policy_free(p);
	/* a home folder per identity: ${aws:username} in the Resource */
	p = parse(STMT("Allow", "{\"AWS\":\"*\"}",
		       "\"Action\":\"s3:*\",\"Resource\":\"" OBJ("home/${aws:username}/*") "\""));
	is_int(ev(p, "alice", "s3:PutObject", OBJ("home/alice/x"), KV("aws:username", "alice")),
	       POLICY_ALLOW, "${aws:username} in a Resource: own folder");
	is_int(ev(p, "alice", "s3:PutObject", OBJ("home/bob/x"), KV("aws:username", "alice")),
	       POLICY_NO_MATCH, "${aws:username} in a Resource: another folder");
	is_int(ev(p, "st*", "s3:PutObject", OBJ("home/steve/x"), KV("aws:username", "st*")),
	       POLICY_NO_MATCH, "a name holding '*' is no wildcard");
	is_int(ev(p, "st*", "s3:PutObject", OBJ("home/st*/x"), KV("aws:username", "st*")),
	       POLICY_ALLOW, "a name holding '*' matches itself");
	is_int(ev(p, NULL, "s3:GetObject", OBJ("home/${aws:username}/x"), NULL), POLICY_NO_MATCH,
	       "anonymous: no username, no match");
	bucket_policy_free(p);

	/* "deny everything but reads", the NotAction idiom */
	p = parse("{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
		  "\"Resource\":\"" OBJ(
			  "*") "\"},{\"Effect\":\"Deny\",\"Principal\":\"*\","
			       "\"NotAction\":[\"s3:GetObject\",\"s3:GetObjectVersion\"],"
			       "\"Resource\":\"" OBJ("*") "\"}]}");
	is_int(ev(p, NULL, "s3:GetObject", OBJ("k"), NULL), POLICY_ALLOW, "NotAction: listed");
	is_int(ev(p, NULL, "s3:PutObject", OBJ("k"), NULL), POLICY_DENY, "NotAction: unlisted");
	bucket_policy_free(p);
	p = parse(STMT("Deny", "\"*\"",
		       "\"Action\":\"s3:*\",\"NotResource\":\"" OBJ("public/*") "\""));
	is_int(ev(p, NULL, "s3:GetObject", OBJ("public/x"), NULL), POLICY_NO_MATCH,
	       "NotResource: listed");
	is_int(ev(p, NULL, "s3:GetObject", OBJ("private/x"), NULL), POLICY_DENY,
	       "NotResource: unlisted");
	is_int(ev(p, NULL, "s3:ListBucket", ARN, NULL), POLICY_DENY, "NotResource: the bucket");
	bucket_policy_free(p);
	/* wildcard-heavy patterns stay fast (no exponential backtracking) */
	p = parse(STMT("Allow", "\"*\"",
		       "\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::photos/"
		       "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\""));
	{
		char res[600] = OBJ("");
		memset(res + strlen(res), 'a', 500);
		is_int(ev(p, NULL, "s3:GetObject", res, NULL), POLICY_NO_MATCH,
		       "pathological glob answers quickly");
		strcat(res, "b");
		is_int(ev(p, NULL, "s3:GetObject", res, NULL), POLICY_ALLOW,
		       "pathological glob matches");
	}
	bucket_policy_free(p);
}

static void test_deny_wins(void)
{
	const char *allow = "{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
			    "\"Resource\":\"" OBJ("*") "\"}";
	const char *deny = "{\"Effect\":\"Deny\",\"Principal\":{\"AWS\":\"bob\"},"
			   "\"Action\":\"s3:DeleteObject\",\"Resource\":\"" OBJ("*") "\"}";
	char json[1024];
	struct bucket_policy *p;

	for (int order = 0; order < 2; order++) {
		snprintf(json, sizeof(json), "{\"Statement\":[%s,%s]}", order ? deny : allow,
			 order ? allow : deny);
		p = parse(json);
		ok(ev(p, "bob", "s3:DeleteObject", OBJ("k"), NULL) == POLICY_DENY,
		   "explicit deny wins (order %d)", order);
		ok(ev(p, "bob", "s3:GetObject", OBJ("k"), NULL) == POLICY_ALLOW,
		   "the deny is narrow (order %d)", order);
		ok(ev(p, "alice", "s3:DeleteObject", OBJ("k"), NULL) == POLICY_ALLOW,
		   "other principals allowed (order %d)", order);
		ok(ev(p, "alice", "s3:DeleteObject", ARN, NULL) == POLICY_NO_MATCH,
		   "nothing matches the bucket itself (order %d)", order);
		bucket_policy_free(p);
	}
	is_int(bucket_policy_eval(NULL, NULL), POLICY_NO_MATCH, "no policy: no match");
}

static void test_string_ops(void)
{
	const char *eq = "\"StringEquals\":{\"s3:prefix\":[\"photos/\",\"docs/\"]}";
	const char *eqx = "\"StringEqualsIfExists\":{\"s3:prefix\":\"photos/\"}";
	const char *ne = "\"StringNotEquals\":{\"s3:prefix\":[\"photos/\",\"docs/\"]}";

	COND_IS(eq, KV("s3:prefix", "photos/"), 1, "StringEquals: first value");
	COND_IS(eq, KV("s3:prefix", "docs/"), 1, "StringEquals: values OR");
	COND_IS(eq, KV("s3:prefix", "Photos/"), 0, "StringEquals: case-sensitive");
	COND_IS(eq, KV("s3:prefix", "photos"), 0, "StringEquals: exact");
	COND_IS(eq, NULL, 0, "StringEquals: absent key is false");
	COND_IS(eq, KV("S3:PREFIX", "photos/"), 1, "condition keys compare case-insensitively");
	COND_IS("\"StringEquals\":{\"AWS:UserName\":\"alice\"}", KV("aws:username", "alice"), 1,
		"policy key case does not matter");
	COND_IS(eqx, NULL, 1, "StringEqualsIfExists: absent key is true");
	COND_IS(eqx, KV("s3:prefix", "x"), 0, "StringEqualsIfExists: present key compared");
	COND_IS(eqx, KV("s3:prefix", "photos/"), 1, "StringEqualsIfExists: present and equal");
	COND_IS(ne, KV("s3:prefix", "photos/"), 0, "StringNotEquals: a listed value");
	COND_IS(ne, KV("s3:prefix", "docs/"), 0, "StringNotEquals: values NOR");
	COND_IS(ne, KV("s3:prefix", "other/"), 1, "StringNotEquals: unlisted");
	COND_IS(ne, NULL, 1, "StringNotEquals: absent key is true");
	COND_IS("\"StringNotEqualsIfExists\":{\"k\":\"v\"}", NULL, 1,
		"StringNotEqualsIfExists: absent key is true");
	COND_IS("\"StringEqualsIgnoreCase\":{\"k\":\"MiXeD\"}", KV("k", "mixed"), 1,
		"StringEqualsIgnoreCase");
	COND_IS("\"StringEqualsIgnoreCase\":{\"k\":\"MiXeD\"}", KV("k", "mixe"), 0,
		"StringEqualsIgnoreCase: different");
	COND_IS("\"StringNotEqualsIgnoreCase\":{\"k\":\"MiXeD\"}", KV("k", "MIXED"), 0,
		"StringNotEqualsIgnoreCase: same but case");
	COND_IS("\"StringNotEqualsIgnoreCase\":{\"k\":\"MiXeD\"}", KV("k", "other"), 1,
		"StringNotEqualsIgnoreCase: different");
	COND_IS("\"StringNotEqualsIgnoreCase\":{\"k\":\"v\"}", NULL, 1,
		"StringNotEqualsIgnoreCase: absent key is true");
	COND_IS("\"StringLike\":{\"s3:prefix\":[\"home/*\",\"tmp/??\"]}",
		KV("s3:prefix", "home/a/b"), 1, "StringLike *");
	COND_IS("\"StringLike\":{\"s3:prefix\":[\"home/*\",\"tmp/??\"]}", KV("s3:prefix", "tmp/ab"),
		1, "StringLike ??");
	COND_IS("\"StringLike\":{\"s3:prefix\":[\"home/*\",\"tmp/??\"]}",
		KV("s3:prefix", "tmp/abc"), 0, "StringLike ?? is two");
	COND_IS("\"StringLike\":{\"s3:prefix\":\"Home/*\"}", KV("s3:prefix", "home/x"), 0,
		"StringLike is case-sensitive");
	COND_IS("\"StringLike\":{\"s3:prefix\":\"home/*\"}", NULL, 0,
		"StringLike: absent is false");
	COND_IS("\"StringLikeIfExists\":{\"s3:prefix\":\"home/*\"}", NULL, 1,
		"StringLikeIfExists: absent is true");
	COND_IS("\"StringNotLike\":{\"s3:prefix\":\"home/*\"}", KV("s3:prefix", "home/x"), 0,
		"StringNotLike: matching");
	COND_IS("\"StringNotLike\":{\"s3:prefix\":\"home/*\"}", KV("s3:prefix", "etc/x"), 1,
		"StringNotLike: not matching");
	COND_IS("\"StringNotLike\":{\"s3:prefix\":\"home/*\"}", NULL, 1,
		"StringNotLike: absent is true");
	COND_IS("\"stringequals\":{\"k\":\"v\"}", KV("k", "v"), 1,
		"operator names compare case-insensitively");
	COND_IS("\"StringEquals\":{\"s3:max-keys\":100}", KV("s3:max-keys", "100"), 1,
		"a number value is its text");
	COND_IS("\"StringEquals\":{\"k\":true}", KV("k", "true"), 1, "a boolean value is its text");
	COND_IS("\"StringEquals\":{\"s3:prefix\":\"home/${aws:username}/\"}",
		KV("s3:prefix", "home/alice/", "aws:username", "alice"), 1,
		"a policy variable is the request's value");
	COND_IS("\"StringEquals\":{\"s3:prefix\":\"home/${aws:username}/\"}",
		KV("s3:prefix", "home/bob/", "aws:username", "alice"), 0,
		"a policy variable: another value");
	COND_IS("\"StringEquals\":{\"s3:prefix\":\"home/${aws:username}/\"}",
		KV("s3:prefix", "home/${aws:username}/"), 0,
		"a variable whose key the request lacks matches nothing");
	COND_IS("\"StringLike\":{\"s3:prefix\":\"${aws:username}/*\"}",
		KV("s3:prefix", "alice/x", "aws:username", "alice"), 1, "a variable in StringLike");
	COND_IS("\"StringLike\":{\"s3:prefix\":\"${aws:username}/*\"}",
		KV("s3:prefix", "bob/x", "aws:username", "*"), 0,
		"a variable's '*' is no wildcard");
	COND_IS("\"StringEquals\":{\"s3:prefix\":\"a${*}b${$}c${?}\"}", KV("s3:prefix", "a*b$c?"),
		1, "${*}, ${$} and ${?} are literal characters");
	COND_IS("\"StringEquals\":{\"k\":\"v\"}", KV("k", "v", "k", "w"), 1,
		"a key given twice counts by its first value");
}

static void test_numeric_ops(void)
{
	COND_IS("\"NumericEquals\":{\"s3:max-keys\":\"100\"}", KV("s3:max-keys", "100"), 1,
		"NumericEquals");
	COND_IS("\"NumericEquals\":{\"s3:max-keys\":100}", KV("s3:max-keys", "100.0"), 1,
		"NumericEquals: numerically, JSON number");
	COND_IS("\"NumericEquals\":{\"s3:max-keys\":\"1e2\"}", KV("s3:max-keys", "100"), 1,
		"NumericEquals: exponent");
	COND_IS("\"NumericEquals\":{\"s3:max-keys\":[1,2,3]}", KV("s3:max-keys", "2"), 1,
		"NumericEquals: values OR");
	COND_IS("\"NumericEquals\":{\"s3:max-keys\":\"100\"}", KV("s3:max-keys", "101"), 0,
		"NumericEquals: different");
	COND_IS("\"NumericEquals\":{\"s3:max-keys\":\"100\"}", KV("s3:max-keys", "ten"), 0,
		"NumericEquals: not a number is false");
	COND_IS("\"NumericEquals\":{\"s3:max-keys\":\"100\"}", KV("s3:max-keys", " 100"), 0,
		"NumericEquals: no spaces");
	COND_IS("\"NumericEquals\":{\"s3:max-keys\":\"100\"}", NULL, 0,
		"NumericEquals: absent is false");
	COND_IS("\"NumericNotEquals\":{\"s3:max-keys\":[\"1\",\"2\"]}", KV("s3:max-keys", "2"), 0,
		"NumericNotEquals: listed");
	COND_IS("\"NumericNotEquals\":{\"s3:max-keys\":[\"1\",\"2\"]}", KV("s3:max-keys", "3"), 1,
		"NumericNotEquals: unlisted");
	COND_IS("\"NumericNotEquals\":{\"s3:max-keys\":\"1\"}", NULL, 1,
		"NumericNotEquals: absent is true");
	COND_IS("\"NumericNotEquals\":{\"s3:max-keys\":\"1\"}", KV("s3:max-keys", "x"), 0,
		"NumericNotEquals: not a number is false");
	COND_IS("\"NumericLessThan\":{\"s3:max-keys\":\"10\"}", KV("s3:max-keys", "9"), 1,
		"NumericLessThan");
	COND_IS("\"NumericLessThan\":{\"s3:max-keys\":\"10\"}", KV("s3:max-keys", "10"), 0,
		"NumericLessThan: boundary");
	COND_IS("\"NumericLessThan\":{\"s3:max-keys\":\"10\"}", KV("s3:max-keys", "-11.5"), 1,
		"NumericLessThan: negative");
	COND_IS("\"NumericLessThanEquals\":{\"s3:max-keys\":\"10\"}", KV("s3:max-keys", "10"), 1,
		"NumericLessThanEquals: boundary");
	COND_IS("\"NumericLessThanEquals\":{\"s3:max-keys\":\"10\"}", KV("s3:max-keys", "11"), 0,
		"NumericLessThanEquals: above");
	COND_IS("\"NumericGreaterThan\":{\"s3:max-keys\":\"10\"}", KV("s3:max-keys", "10"), 0,
		"NumericGreaterThan: boundary");
	COND_IS("\"NumericGreaterThan\":{\"s3:max-keys\":\"10\"}", KV("s3:max-keys", "10.01"), 1,
		"NumericGreaterThan");
	COND_IS("\"NumericGreaterThanEquals\":{\"s3:max-keys\":\"10\"}", KV("s3:max-keys", "10"), 1,
		"NumericGreaterThanEquals: boundary");
	COND_IS("\"NumericGreaterThanEquals\":{\"s3:max-keys\":\"10\"}", KV("s3:max-keys", "9"), 0,
		"NumericGreaterThanEquals: below");
	COND_IS("\"NumericLessThanIfExists\":{\"s3:max-keys\":\"10\"}", NULL, 1,
		"NumericLessThanIfExists: absent is true");
	COND_IS("\"NumericLessThanIfExists\":{\"s3:max-keys\":\"10\"}", KV("s3:max-keys", "50"), 0,
		"NumericLessThanIfExists: present is compared");
}

static void test_bool_null_ops(void)
{
	COND_IS("\"Bool\":{\"aws:SecureTransport\":\"false\"}", KV("aws:SecureTransport", "false"),
		1, "Bool false");
	COND_IS("\"Bool\":{\"aws:SecureTransport\":false}", KV("aws:SecureTransport", "FALSE"), 1,
		"Bool: JSON false, any case");
	COND_IS("\"Bool\":{\"aws:SecureTransport\":\"true\"}", KV("aws:SecureTransport", "false"),
		0, "Bool: different");
	COND_IS("\"Bool\":{\"aws:SecureTransport\":\"true\"}", KV("aws:SecureTransport", "1"), 0,
		"Bool: not true/false is false");
	COND_IS("\"Bool\":{\"aws:SecureTransport\":\"true\"}", NULL, 0, "Bool: absent is false");
	COND_IS("\"BoolIfExists\":{\"aws:SecureTransport\":\"true\"}", NULL, 1,
		"BoolIfExists: absent is true");
	COND_IS("\"Null\":{\"s3:x-amz-server-side-encryption\":\"true\"}", NULL, 1,
		"Null true: absent");
	COND_IS("\"Null\":{\"s3:x-amz-server-side-encryption\":\"true\"}",
		KV("s3:x-amz-server-side-encryption", "AES256"), 0, "Null true: present");
	COND_IS("\"Null\":{\"s3:x-amz-server-side-encryption\":false}",
		KV("s3:x-amz-server-side-encryption", ""), 1, "Null false: present (even empty)");
	COND_IS("\"Null\":{\"s3:x-amz-server-side-encryption\":\"false\"}", NULL, 0,
		"Null false: absent");
	COND_IS("\"Null\":{\"k\":[\"true\",\"false\"]}", NULL, 1, "Null: values OR");
	COND_IS("\"StringEquals\":{\"a\":\"1\",\"b\":\"2\"}", KV("a", "1", "b", "2"), 1,
		"keys AND: both");
	COND_IS("\"StringEquals\":{\"a\":\"1\",\"b\":\"2\"}", KV("a", "1", "b", "3"), 0,
		"keys AND: one fails");
	COND_IS("\"StringEquals\":{\"a\":\"1\"},\"Bool\":{\"b\":\"true\"}",
		KV("a", "1", "b", "true"), 1, "operators AND: both");
	COND_IS("\"StringEquals\":{\"a\":\"1\"},\"Bool\":{\"b\":\"true\"}", KV("a", "1"), 0,
		"operators AND: one fails");
	{
		/* request entries with NULL key or value are ignored */
		struct bucket_policy *p = with_cond("\"Null\":{\"k\":\"true\"}");
		struct policy_kv ctx[] = {{NULL, "x"}, {"k", NULL}};
		struct policy_request r = {.principal = "alice", .action = "s3:GetObject",
					   .resource = OBJ("k"), .ctx = ctx, .nctx = 2};
		is_int(bucket_policy_eval(p, &r), POLICY_ALLOW, "NULL context entries are absent");
		bucket_policy_free(p);
	}
}

static void test_ip_ops(void)
{
	const char *v4 = "\"IpAddress\":{\"aws:SourceIp\":[\"10.0.0.0/8\",\"192.168.1.5\","
			 "\"172.16.0.0/20\",\"203.0.113.77/31\"]}";
	const char *v6 = "\"IpAddress\":{\"aws:SourceIp\":[\"2001:db8::/32\",\"::1\","
			 "\"fd00::/127\"]}";
	const char *not = "\"NotIpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}";

	COND_IS(v4, KV("aws:SourceIp", "10.255.1.1"), 1, "v4 /8: inside");
	COND_IS(v4, KV("aws:SourceIp", "11.0.0.1"), 0, "v4 /8: outside");
	COND_IS(v4, KV("aws:SourceIp", "192.168.1.5"), 1, "v4 bare address is /32");
	COND_IS(v4, KV("aws:SourceIp", "192.168.1.6"), 0, "v4 /32: neighbour");
	COND_IS(v4, KV("aws:SourceIp", "172.16.15.255"), 1, "v4 /20: last inside");
	COND_IS(v4, KV("aws:SourceIp", "172.16.16.0"), 0, "v4 /20: first outside");
	COND_IS(v4, KV("aws:SourceIp", "203.0.113.76"), 1, "v4 /31 (host bits set): even");
	COND_IS(v4, KV("aws:SourceIp", "203.0.113.78"), 0, "v4 /31: outside");
	COND_IS(v4, KV("aws:SourceIp", "::ffff:10.1.2.3"), 1, "v4-mapped v6 is v4");
	COND_IS(v4, KV("aws:SourceIp", "2001:db8::1"), 0, "v6 against v4 networks");
	COND_IS(v4, KV("aws:SourceIp", "10.0.0"), 0, "not an address is false");
	COND_IS(v4, KV("aws:SourceIp", "10.0.0.1/8"), 0, "a request value is no CIDR");
	COND_IS(v4, NULL, 0, "IpAddress: absent is false");
	COND_IS(v6, KV("aws:SourceIp", "2001:db8:ffff::1"), 1, "v6 /32: inside");
	COND_IS(v6, KV("aws:SourceIp", "2001:db9::"), 0, "v6 /32: outside");
	COND_IS(v6, KV("aws:SourceIp", "::1"), 1, "v6 bare is /128");
	COND_IS(v6, KV("aws:SourceIp", "::2"), 0, "v6 /128: neighbour");
	COND_IS(v6, KV("aws:SourceIp", "fd00::1"), 1, "v6 /127: odd");
	COND_IS(v6, KV("aws:SourceIp", "fd00::2"), 0, "v6 /127: outside");
	COND_IS(v6, KV("aws:SourceIp", "10.0.0.1"), 0, "v4 against v6 networks");
	COND_IS("\"IpAddress\":{\"aws:SourceIp\":\"0.0.0.0/0\"}", KV("aws:SourceIp", "1.2.3.4"), 1,
		"v4 /0: every v4");
	COND_IS("\"IpAddress\":{\"aws:SourceIp\":\"0.0.0.0/0\"}", KV("aws:SourceIp", "::1"), 0,
		"v4 /0: no v6");
	COND_IS("\"IpAddress\":{\"aws:SourceIp\":\"::/0\"}", KV("aws:SourceIp", "fe80::1"), 1,
		"v6 /0: every v6");
	COND_IS(not, KV("aws:SourceIp", "10.1.1.1"), 0, "NotIpAddress: inside");
	COND_IS(not, KV("aws:SourceIp", "8.8.8.8"), 1, "NotIpAddress: outside");
	COND_IS(not, NULL, 1, "NotIpAddress: absent is true");
	COND_IS(not, KV("aws:SourceIp", "garbage"), 0, "NotIpAddress: not an address is false");
	COND_IS("\"IpAddressIfExists\":{\"aws:SourceIp\":\"10.0.0.0/8\"}", NULL, 1,
		"IpAddressIfExists: absent is true");
	COND_IS("\"NotIpAddressIfExists\":{\"aws:SourceIp\":\"10.0.0.0/8\"}",
		KV("aws:SourceIp", "10.0.0.1"), 0, "NotIpAddressIfExists: present is compared");
}

/* GetBucketPolicyStatus: public unless the grant to "*" is tied to fixed callers. */
static void test_is_public(void)
{
	struct {
		const char *cond;
		bool public;
	} cases[] = {
		{"\"StringEquals\":{\"s3:prefix\":\"pub/\"}", true},
		{"\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/8\"}", false},
		{"\"StringEquals\":{\"aws:SourceVpc\":\"vpc-1\"}", false},
		{"\"StringEquals\":{\"aws:username\":\"alice\"}", false},
	};
	struct bucket_policy *p;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		p = with_cond(cases[i].cond);
		ok(p && bucket_policy_is_public(p) == cases[i].public, "is_public %s: %d",
		   cases[i].cond, cases[i].public);
		bucket_policy_free(p);
	}
	p = parse("{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
		  "\"Principal\":{\"AWS\":\"bob\"},\"Action\":\"s3:*\",\"Resource\":\"" ARN
		  "\"},{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\","
		  "\"Resource\":\"" ARN "\"}]}");
	ok(p && !bucket_policy_is_public(p), "named principals and a public Deny: not public");
	bucket_policy_free(p);
	p = parse("{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Allow\","
		  "\"Principal\":{\"AWS\":\"*\"},\"Action\":\"s3:GetObject\",\"Resource\":\"" ARN
		  "/*\"}}");
	ok(p && bucket_policy_is_public(p), "Allow {AWS: *} without conditions: public");
	bucket_policy_free(p);
}

static void test_date_ops(void)
{
	const char *lt = "\"DateLessThan\":{\"aws:CurrentTime\":\"2026-06-01T00:00:00Z\"}";

	COND_IS(lt, KV("aws:CurrentTime", "2026-05-31T23:59:59Z"), 1, "DateLessThan: before");
	COND_IS(lt, KV("aws:CurrentTime", "2026-06-01T00:00:00Z"), 0, "DateLessThan: at");
	COND_IS(lt, KV("aws:CurrentTime", "2026-06-01T01:30:00+02:00"), 1,
		"DateLessThan: an offset counts");
	COND_IS(lt, KV("aws:CurrentTime", "2026-05-31"), 1, "DateLessThan: a bare date");
	COND_IS(lt, KV("aws:CurrentTime", "1780271999"), 1, "DateLessThan: epoch seconds");
	COND_IS(lt, KV("aws:CurrentTime", "1780272000"), 0, "DateLessThan: epoch seconds at");
	COND_IS(lt, KV("aws:CurrentTime", "yesterday"), 0, "DateLessThan: not a date");
	COND_IS(lt, NULL, 0, "DateLessThan: absent");
	COND_IS("\"DateGreaterThanEquals\":{\"aws:EpochTime\":\"2026-06-01T00:00:00.000Z\"}",
		KV("aws:EpochTime", "1780272000"), 1, "DateGreaterThanEquals: epoch against ISO");
	COND_IS("\"DateGreaterThan\":{\"aws:EpochTime\":1780272000}",
		KV("aws:EpochTime", "1780272000"), 0, "DateGreaterThan: a JSON number");
	COND_IS("\"DateEquals\":{\"d\":\"2024-02-29T12:00Z\"}", KV("d", "2024-02-29T12:00:00.0Z"),
		1, "DateEquals: the same instant written twice");
	COND_IS("\"DateNotEquals\":{\"d\":\"2024-02-29\"}", KV("d", "2024-03-01"), 1,
		"DateNotEquals");
	COND_IS("\"DateNotEquals\":{\"d\":\"2024-02-29\"}", KV("d", "bad"), 0,
		"DateNotEquals: not a date is false too");
	COND_IS("\"DateLessThanEqualsIfExists\":{\"d\":\"2024-02-29\"}", NULL, 1,
		"Date ...IfExists: absent");
}

static void test_arn_ops(void)
{
	const char *like = "\"ArnLike\":{\"aws:SourceArn\":\"arn:aws:s3:::src-*\"}";

	COND_IS(like, KV("aws:SourceArn", "arn:aws:s3:::src-1"), 1, "ArnLike: matches");
	COND_IS(like, KV("aws:SourceArn", "arn:aws:s3:::other"), 0, "ArnLike: another bucket");
	COND_IS(like, KV("aws:SourceArn", "src-1"), 0, "ArnLike: not an ARN");
	COND_IS("\"ArnLike\":{\"aws:SourceArn\":\"arn:*:s3:::src\"}",
		KV("aws:SourceArn", "arn:aws:iam::1:s3:::src"), 0,
		"ArnLike: '*' stays in its component");
	COND_IS("\"ArnEquals\":{\"aws:SourceArn\":\"arn:aws:s3:::src/a:b\"}",
		KV("aws:SourceArn", "arn:aws:s3:::src/a:b"), 1,
		"ArnEquals: the resource part keeps its colons");
	COND_IS("\"ArnNotLike\":{\"aws:SourceArn\":\"arn:aws:s3:::src-*\"}",
		KV("aws:SourceArn", "arn:aws:s3:::other"), 1, "ArnNotLike");
	COND_IS("\"ArnNotLike\":{\"aws:SourceArn\":\"arn:aws:s3:::src-*\"}", NULL, 1,
		"ArnNotLike: absent");
	COND_IS("\"ArnLike\":{\"aws:SourceArn\":\"*\"}", KV("aws:SourceArn", "anything"), 1,
		"ArnLike \"*\"");
}

static void test_set_ops(void)
{
	const char *all = "\"ForAllValues:StringEquals\":{\"s3:RequestObjectTagKeys\":"
			  "[\"team\",\"env\"]}";
	const char *any = "\"ForAnyValue:StringLike\":{\"s3:RequestObjectTagKeys\":\"sec*\"}";

	COND_IS(all, KV("s3:RequestObjectTagKeys", "team", "s3:RequestObjectTagKeys", "env"), 1,
		"ForAllValues: every value listed");
	COND_IS(all, KV("s3:RequestObjectTagKeys", "team", "s3:RequestObjectTagKeys", "cost"), 0,
		"ForAllValues: one value not listed");
	COND_IS(all, NULL, 1, "ForAllValues: no value holds");
	COND_IS(any, KV("s3:RequestObjectTagKeys", "team", "s3:RequestObjectTagKeys", "secret"), 1,
		"ForAnyValue: the second value matches");
	COND_IS(any, KV("s3:RequestObjectTagKeys", "team"), 0, "ForAnyValue: none matches");
	COND_IS(any, NULL, 0, "ForAnyValue: no value does not hold");
	COND_IS("\"ForAnyValue:StringNotEquals\":{\"k\":[\"a\",\"b\"]}", KV("k", "a", "k", "c"), 1,
		"ForAnyValue:StringNotEquals: one value is neither");
	COND_IS("\"ForAllValues:StringNotEquals\":{\"k\":[\"a\",\"b\"]}", KV("k", "c", "k", "a"), 0,
		"ForAllValues:StringNotEquals: one value is listed");
	COND_IS("\"ForAnyValue:StringEqualsIfExists\":{\"k\":\"a\"}", NULL, 1,
		"ForAnyValue ...IfExists: absent");
	COND_IS("\"StringEquals\":{\"k\":\"c\"}", KV("k", "a", "k", "c"), 0,
		"a plain operator sees the first value only");
	COND_IS("\"ForAnyValue:NumericLessThan\":{\"n\":10}", KV("n", "x", "n", "5"), 1,
		"ForAnyValue:Numeric: a non-number is one failing value");
}

/* The condition keys the gateway fills (s3_policy.c), each with the operator clients use. */
static void test_request_keys(void)
{
	struct bucket_policy *p;

	COND_IS("\"StringEquals\":{\"s3:ExistingObjectTag/secret\":\"true\"}",
		KV("s3:ExistingObjectTag/secret", "true"), 1, "s3:ExistingObjectTag/<key>");
	COND_IS("\"StringEquals\":{\"s3:ExistingObjectTag/secret\":\"true\"}",
		KV("s3:ExistingObjectTag/Secret", "true"), 1,
		"condition keys compare case-insensitively (tag keys too, as in AWS)");
	COND_IS("\"StringEquals\":{\"s3:RequestObjectTag/team\":\"blue\"}",
		KV("s3:RequestObjectTag/team", "blue"), 1, "s3:RequestObjectTag/<key>");
	COND_IS("\"StringEquals\":{\"s3:x-amz-acl\":\"bucket-owner-full-control\"}",
		KV("s3:x-amz-acl", "private"), 0, "s3:x-amz-acl");
	COND_IS("\"StringLike\":{\"s3:x-amz-grant-read\":\"*uri=*AllUsers*\"}",
		KV("s3:x-amz-grant-read",
		   "uri=\"http://acs.amazonaws.com/groups/global/AllUsers\""),
		1, "s3:x-amz-grant-read");
	COND_IS("\"NumericLessThanEquals\":{\"s3:max-keys\":\"10\"}", KV("s3:max-keys", "10"), 1,
		"s3:max-keys at the limit");
	COND_IS("\"NumericLessThanEquals\":{\"s3:max-keys\":\"10\"}", KV("s3:max-keys", "11"), 0,
		"s3:max-keys over it");
	COND_IS("\"StringEquals\":{\"s3:delimiter\":\"/\"}", KV("s3:delimiter", "/"), 1,
		"s3:delimiter");
	COND_IS("\"Null\":{\"s3:prefix\":\"false\"}", KV("s3:prefix", ""), 1,
		"s3:prefix exists (empty)");
	COND_IS("\"StringEquals\":{\"s3:signatureversion\":\"AWS4-HMAC-SHA256\",\"s3:authType\":"
		"\"REST-HEADER\"}",
		KV("s3:signatureversion", "AWS4-HMAC-SHA256", "s3:authType", "REST-HEADER"), 1,
		"s3:signatureversion, s3:authType");
	COND_IS("\"StringEquals\":{\"aws:PrincipalType\":\"Anonymous\"}",
		KV("aws:PrincipalType", "User"), 0, "aws:PrincipalType");
	COND_IS("\"Bool\":{\"aws:SecureTransport\":\"false\"}",
		KV("aws:SecureTransport", "false"), 1, "aws:SecureTransport");
	COND_IS("\"NumericGreaterThanEquals\":{\"s3:object-lock-remaining-retention-days\":\"30\"}",
		KV("s3:object-lock-remaining-retention-days", "31"), 1,
		"s3:object-lock-remaining-retention-days");

	p = with_cond("\"StringNotEquals\":{\"S3:existingobjecttag/secret\":\"true\"}");
	ok(p && bucket_policy_needs(p) == POLICY_NEEDS_OBJECT_TAGS,
	   "an ExistingObjectTag key (any case) asks for the object's tags");
	bucket_policy_free(p);
	p = with_cond("\"StringEquals\":{\"s3:RequestObjectTag/secret\":\"true\"}");
	ok(p && !bucket_policy_needs(p), "a RequestObjectTag key asks for nothing more");
	bucket_policy_free(p);
}

int main(void)
{
	test_is_public();
	test_malformed();
	test_size_limit();
	test_forms();
	test_principals();
	test_service_canonical_not_principal();
	test_actions_resources();
	test_deny_wins();
	test_string_ops();
	test_numeric_ops();
	test_bool_null_ops();
	test_ip_ops();
	test_date_ops();
	test_arn_ops();
	test_set_ops();
	test_request_keys();
	return done_testing();
}
