/* Session credentials (s3/s3_session.h): issue, verify, scopes, and session policies. */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "s3/s3_session.h"
#include "s3/s3_session_key.h"
#include "tap.h"

#define NOW 1800000000

static const uint8_t key[S3_SESSION_KEY_LEN] = "0123456789abcdef0123456789abcdef";
static const uint8_t other_key[S3_SESSION_KEY_LEN] = "fedcba9876543210fedcba9876543210";
static const uint8_t nonce[S3_SESSION_NONCE_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};

static char token[S3_SESSION_TOKEN_MAX + 1], secret[S3_SESSION_SECRET_LEN + 1];

/* A scoped session of alice for bucket "wh", prefix "ns/t1/", read and list. */
static bool issue_one(struct s3_session *s, int64_t expiry)
{
	char msg[256] = "";
	memset(s, 0, sizeof(*s));
	snprintf(s->parent, sizeof(s->parent), "alice");
	snprintf(s->name, sizeof(s->name), "job-7");
	s->expiry = expiry;
	return s3_session_add_scope(s, "wh", "ns/t1/", S3_SESSION_READ | S3_SESSION_LIST, msg,
				    sizeof(msg)) &&
	       s3_session_issue(key, s, nonce, token, secret, msg, sizeof(msg));
}

static void test_roundtrip(void)
{
	struct s3_session s, v;
	char msg[256] = "", sec2[S3_SESSION_SECRET_LEN + 1];

	ok(issue_one(&s, NOW + 3600), "a scoped session issues");
	ok(s3_session_key_id(s.access_key) && !strncmp(s.access_key, "ASIA", 4),
	   "its access key id is ASIA + 16 base32 (%s)", s.access_key);
	is_int(strlen(secret), S3_SESSION_SECRET_LEN, "the secret has 40 characters");
	ok(strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
		   strlen(token),
	   "the token is base64url without padding");
	is_int(s3_session_verify(key, token, NOW, &v, sec2, msg, sizeof(msg)), S3_SESSION_OK,
	       "it verifies");
	is_str(v.parent, "alice", "the parent comes back");
	is_str(v.name, "job-7", "the session name comes back");
	is_str(v.access_key, s.access_key, "the access key id comes back");
	is_int(v.expiry, NOW + 3600, "the expiry comes back");
	ok(v.scoped && v.n == 1 && !strcmp(v.scope[0].bucket, "wh") &&
		   !strcmp(v.scope[0].prefix, "ns/t1/") &&
		   v.scope[0].actions == (S3_SESSION_READ | S3_SESSION_LIST),
	   "the scope comes back");
	is_str(sec2, secret, "the secret is recomputed from the token alone");
	{
		char again[S3_SESSION_SECRET_LEN + 1];
		s3_session_secret(other_key, s.access_key, s.expiry, again);
		ok(strcmp(again, secret), "another cluster key derives another secret");
		s3_session_secret(key, s.access_key, s.expiry + 1, again);
		ok(strcmp(again, secret), "another expiry derives another secret");
	}
}

static void test_refusals(void)
{
	struct s3_session s, v;
	char msg[256] = "", bad[S3_SESSION_TOKEN_MAX + 2];

	issue_one(&s, NOW + 900);
	is_int(s3_session_verify(key, token, NOW + 900, &v, NULL, msg, sizeof(msg)),
	       S3_SESSION_EXPIRED, "at its expiry it has expired");
	ok(strstr(msg, "expired") != NULL, "and says so (%s)", msg);
	ok(!v.parent[0], "an expired session gives nothing back");
	is_int(s3_session_verify(key, token, NOW + 899, &v, NULL, msg, sizeof(msg)),
	       S3_SESSION_OK, "a second before, it holds");
	is_int(s3_session_verify(other_key, token, NOW, &v, NULL, msg, sizeof(msg)),
	       S3_SESSION_BAD_SIGNATURE, "another cluster's key refuses it");
	/* every single-character change is refused (the last ones may only move stray bits) */
	{
		size_t n = strlen(token), refused = 0;
		for (size_t i = 0; i < n; i++) {
			snprintf(bad, sizeof(bad), "%s", token);
			bad[i] = bad[i] == 'A' ? 'B' : 'A';
			refused += s3_session_verify(key, bad, NOW, &v, NULL, msg, sizeof(msg)) !=
				   S3_SESSION_OK;
		}
		is_int(refused, n, "every altered character is refused");
	}
	snprintf(bad, sizeof(bad), "%s", token);
	bad[strlen(bad) - 3] = '\0';
	ok(s3_session_verify(key, bad, NOW, &v, NULL, msg, sizeof(msg)) != S3_SESSION_OK,
	   "a cut token is refused");
	snprintf(bad, sizeof(bad), "%s=", token);
	is_int(s3_session_verify(key, bad, NOW, &v, NULL, msg, sizeof(msg)), S3_SESSION_MALFORMED,
	       "padding or a foreign character is malformed");
	is_int(s3_session_verify(key, "", NOW, &v, NULL, msg, sizeof(msg)), S3_SESSION_MALFORMED,
	       "an empty token is malformed");
	ok(msg[0] != '\0', "with a message (%s)", msg);
	memset(bad, 'A', S3_SESSION_TOKEN_MAX + 1);
	bad[S3_SESSION_TOKEN_MAX + 1] = '\0';
	is_int(s3_session_verify(key, bad, NOW, &v, NULL, msg, sizeof(msg)), S3_SESSION_MALFORMED,
	       "an over-long token is malformed");
	/* "B" first: version 4 once decoded (0b000001...) */
	snprintf(bad, sizeof(bad), "B%s", token + 1);
	is_int(s3_session_verify(key, bad, NOW, &v, NULL, msg, sizeof(msg)),
	       S3_SESSION_BAD_VERSION, "an unknown version is refused as such");
}

static void test_structure(void)
{
	uint8_t body[S3_SESSION_BODY_MAX];
	struct s3_session v;
	char msg[256];
	size_t n = 0;
	/* a well-formed unscoped body, then broken one field at a time */
	body[n++] = 1;
	body[n++] = 0;
	for (int i = 0; i < 8; i++)
		body[n++] = (uint8_t)((uint64_t)(NOW + 60) >> (56 - 8 * i));
	memcpy(body + n, "ASIAABCDEFGHIJKLMNOP", 20);
	n += 20;
	body[n++] = 1;
	body[n++] = 'a';
	body[n++] = 0;
	body[n++] = 0;
	ok(s3_session_parse(body, n, &v, msg, sizeof(msg)) && !v.scoped && !strcmp(v.parent, "a"),
	   "an unscoped body parses");
	ok(!s3_session_parse(body, n - 1, &v, msg, sizeof(msg)), "one byte short is refused");
	body[n] = 0;
	ok(!s3_session_parse(body, n + 1, &v, msg, sizeof(msg)), "a byte too many is refused");
	body[n - 1] = 1;
	ok(!s3_session_parse(body, n, &v, msg, sizeof(msg)),
	   "scopes in an unscoped body are refused");
	body[n - 1] = 0;
	body[1] = 2;
	ok(!s3_session_parse(body, n, &v, msg, sizeof(msg)), "an unknown flag is refused");
	body[1] = 0;
	body[n - 3] = '\0';
	ok(!s3_session_parse(body, n, &v, msg, sizeof(msg)), "a NUL in a name is refused");
	body[n - 3] = 'a';
	body[12] = 'a';
	ok(!s3_session_parse(body, n, &v, msg, sizeof(msg)), "a malformed access key is refused");
}

static void test_scopes(void)
{
	struct s3_session s = {0};
	char msg[256] = "";

	ok(!s3_session_add_scope(&s, "wh", "ns/*", S3_SESSION_READ, msg, sizeof(msg)) &&
		   strstr(msg, "'*'"),
	   "a '*' in a prefix is refused (%s)", msg);
	ok(!s3_session_add_scope(&s, "wh", "ns/?", S3_SESSION_READ, msg, sizeof(msg)),
	   "a '?' in a prefix is refused");
	ok(!s3_session_add_scope(&s, "w/h", "", S3_SESSION_READ, msg, sizeof(msg)),
	   "a '/' in a bucket is refused");
	ok(!s3_session_add_scope(&s, "wh", "p", 0, msg, sizeof(msg)), "no actions is refused");
	ok(s3_session_add_scope(&s, "wh", "ns/t1/", S3_SESSION_READ, msg, sizeof(msg)) &&
		   s3_session_add_scope(&s, "wh", "ns/t1/", S3_SESSION_WRITE, msg, sizeof(msg)) &&
		   s.n == 1 && s.scope[0].actions == (S3_SESSION_READ | S3_SESSION_WRITE),
	   "the same bucket and prefix merge their actions");
	s3_session_add_scope(&s, "wh", "ns/t2/", S3_SESSION_LIST, msg, sizeof(msg));

	ok(s3_session_permits(&s, S3_SESSION_OP_READ, "wh", "ns/t1/data/f.parquet"),
	   "a read under the prefix is let through");
	ok(!s3_session_permits(&s, S3_SESSION_OP_READ, "wh", "ns/t10/f"),
	   "a read of a sibling table (same leading characters) is not");
	ok(!s3_session_permits(&s, S3_SESSION_OP_READ, "other", "ns/t1/f"),
	   "another bucket is not");
	ok(s3_session_permits(&s, S3_SESSION_OP_WRITE, "wh", "ns/t1/f"), "a write is");
	ok(!s3_session_permits(&s, S3_SESSION_OP_DELETE, "wh", "ns/t1/f"),
	   "a delete without the action is not");
	ok(!s3_session_permits(&s, S3_SESSION_OP_LIST, "wh", "ns/t1/"),
	   "listing t1 without List is not");
	ok(s3_session_permits(&s, S3_SESSION_OP_LIST, "wh", "ns/t2/meta"),
	   "listing within t2 is");
	ok(!s3_session_permits(&s, S3_SESSION_OP_LIST, "wh", "ns/t"),
	   "a listing prefix shorter than the scope's is not");
	ok(!s3_session_permits(&s, S3_SESSION_OP_LIST, "wh", NULL),
	   "a listing with no prefix is not");
	ok(s3_session_permits(&s, S3_SESSION_OP_BUCKET, "wh", NULL), "HeadBucket on wh is");
	ok(!s3_session_permits(&s, S3_SESSION_OP_BUCKET, "nope", NULL), "on another bucket not");
	ok(!s3_session_permits(&s, S3_SESSION_OP_OTHER, "wh", "ns/t1/f"),
	   "anything else (tagging, configuration) is not");
	ok(!s3_session_permits(&s, S3_SESSION_OP_LIST, NULL, NULL), "ListBuckets is not");
	is_int(s3_session_op_of("s3:GetObject"), S3_SESSION_OP_READ, "GetObject reads");
	is_int(s3_session_op_of("s3:PutObjectTagging"), S3_SESSION_OP_OTHER, "tagging is other");
	{
		struct s3_session open = {0};
		ok(s3_session_permits(&open, S3_SESSION_OP_OTHER, "x", NULL),
		   "an unscoped session leaves it to its parent");
	}
	for (int i = 0; i < S3_SESSION_SCOPES_MAX; i++) {
		char p[16];
		snprintf(p, sizeof(p), "p%d/", i);
		s3_session_add_scope(&s, "b", p, S3_SESSION_READ, msg, sizeof(msg));
	}
	ok(!s3_session_add_scope(&s, "b", "last/", S3_SESSION_READ, msg, sizeof(msg)),
	   "more than %d scopes are refused", S3_SESSION_SCOPES_MAX);
}

static void test_policy(void)
{
	static const struct {
		const char *doc;
		bool ok;
		const char *what;
	} cases[] = {
		{"{\"Version\":\"2012-10-17\",\"Statement\":{\"Effect\":\"Allow\",\"Action\":"
		 "\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::wh/ns/t1/*\"}}",
		 true, "one object statement"},
		{"{\"Statement\":[{\"Effect\":\"Deny\",\"Action\":\"s3:GetObject\",\"Resource\":"
		 "\"arn:aws:s3:::wh/*\"}]}",
		 false, "Deny"},
		{"{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"s3:*\",\"Resource\":"
		 "\"arn:aws:s3:::wh/*\"}]}",
		 false, "s3:*"},
		{"{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"s3:GetObject\",\"Resource\":"
		 "\"arn:aws:s3:::wh/a*b*\"}]}",
		 false, "a '*' inside the resource"},
		{"{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"s3:GetObject\",\"Resource\":"
		 "\"arn:aws:s3:::wh/exact.txt\"}]}",
		 false, "an exact key (not a prefix)"},
		{"{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"s3:GetObject\",\"Resource\":"
		 "\"arn:aws:s3:::wh/a?/*\"}]}",
		 false, "a '?' in the resource"},
		{"{\"Statement\":[{\"Effect\":\"Allow\",\"NotAction\":\"s3:GetObject\",\"Resource\":"
		 "\"arn:aws:s3:::wh/*\"}]}",
		 false, "NotAction"},
		{"{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"s3:ListBucket\",\"Resource\":"
		 "\"arn:aws:s3:::wh\",\"Condition\":{\"StringEquals\":{\"s3:prefix\":\"a/\"}}}]}",
		 false, "StringEquals on s3:prefix"},
		{"{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"s3:GetObject\",\"Resource\":"
		 "\"arn:aws:s3:::wh\"}]}",
		 false, "an object action on the bucket only (nothing)"},
		{"not json", false, "not JSON"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct s3_session s = {0};
		char msg[256] = "";
		bool got = s3_session_policy(cases[i].doc, strlen(cases[i].doc), &s, msg,
					     sizeof(msg));
		ok(got == cases[i].ok && (got || msg[0]), "policy: %s %s (%s)", cases[i].what,
		   cases[i].ok ? "maps" : "is refused", msg);
	}
	{
		static const char doc[] =
			"{\"Version\":\"2012-10-17\",\"Statement\":[{\"Sid\":\"rw\","
			"\"Effect\":\"Allow\",\"Action\":[\"s3:GetObject\",\"s3:PutObject\"],"
			"\"Resource\":[\"arn:aws:s3:::wh/ns/t1/*\"]},{\"Effect\":\"Allow\","
			"\"Action\":\"s3:ListBucket\",\"Resource\":\"arn:aws:s3:::wh\",\"Condition\":"
			"{\"StringLike\":{\"s3:prefix\":[\"ns/t1/*\"]}}}]}";
		struct s3_session s = {0};
		char msg[256] = "";
		ok(s3_session_policy(doc, strlen(doc), &s, msg, sizeof(msg)) && s.n == 1 &&
			   s.scope[0].actions ==
				   (S3_SESSION_READ | S3_SESSION_WRITE | S3_SESSION_LIST) &&
			   !strcmp(s.scope[0].prefix, "ns/t1/"),
		   "read, write and a listing condition map onto one scope (%s)", msg);
	}
}

static void test_vend(void)
{
	struct s3_session_creds c;
	struct s3_session v;
	char msg[256] = "";
	ok(s3_session_vend(key, "alice", "wh", "ns/t1/", false, 600, NOW, &c, msg, sizeof(msg)),
	   "vend read-only credentials (%s)", msg);
	ok(s3_session_verify(key, c.session_token, NOW, &v, NULL, msg, sizeof(msg)) ==
			   S3_SESSION_OK &&
		   v.scope[0].actions == (S3_SESSION_READ | S3_SESSION_LIST) &&
		   v.expiry == NOW + 600 && !strcmp(c.access_key, v.access_key),
	   "they verify, read and list only, for the TTL");
	is_str(c.expiration, "2027-01-15T08:10:00Z", "Expiration is ISO 8601");
	ok(!s3_session_vend(key, "alice", "wh", "ns/*", true, 600, NOW, &c, msg, sizeof(msg)),
	   "a pattern prefix is refused (%s)", msg);
	ok(!s3_session_vend(key, "alice", "wh", "ns/", true, 10, NOW, &c, msg, sizeof(msg)),
	   "a TTL under a minute is refused");
}

int main(void)
{
	test_roundtrip();
	test_refusals();
	test_structure();
	test_scopes();
	test_policy();
	test_vend();
	return done_testing();
}
