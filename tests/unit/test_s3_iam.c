/* S3 identities (s3/s3_iam.h): parsing, lookups and grants. */
#include "config.h"
#include <string.h>
#include "s3/s3_iam.h"
#include "tap.h"
#include "util.h"

static struct s3_iam *parse(const char *json, char *msg, size_t msglen)
{
	return s3_iam_parse(json, strlen(json), msg, msglen);
}

static void test_grants(void)
{
	static const char doc[] =
		"{\"identities\":["
		"{\"name\":\"admin\",\"credentials\":[{\"accessKey\":\"AK1\",\"secretKey\":\"s1\"},"
		"{\"accessKey\":\"AK1b\",\"secretKey\":\"s1b\"}],\"actions\":[\"Admin\"]},"
		"{\"name\":\"reader\",\"credentials\":[{\"accessKey\":\"AK2\",\"secretKey\":\"s2\"}"
		"],"
		"\"actions\":[\"Read:pub*\",\"List:logs\",\"Admin:own\"]},"
		"{\"name\":\"none\",\"credentials\":[{\"accessKey\":\"AK3\",\"secretKey\":\"s3\"}]}"
		"]}";
	char msg[256] = "";
	struct s3_iam *iam = parse(doc, msg, sizeof(msg));
	const struct s3_identity *a, *r, *n;
	const char *secret = NULL;

	ok(iam != NULL, "a valid document parses (%s)", msg);
	if (!iam)
		return;
	is_int(s3_iam_count(iam), 3, "three identities");
	ok(!s3_iam_is_open(iam), "not open");
	a = s3_iam_lookup(iam, "AK1b", &secret);
	ok(a && !strcmp(secret, "s1b") && !strcmp(s3_identity_name(a), "admin"),
	   "a second key finds its identity and secret");
	r = s3_iam_lookup(iam, "AK2", &secret);
	n = s3_iam_lookup(iam, "AK3", &secret);
	ok(!s3_iam_lookup(iam, "AK9", &secret), "an unknown key finds nothing");
	ok(s3_identity_allows(a, S3_ACT_WRITE, "any") && s3_identity_allows(a, S3_ACT_LIST, NULL),
	   "Admin allows everything");
	ok(s3_identity_allows(r, S3_ACT_READ, "pub") &&
		   s3_identity_allows(r, S3_ACT_READ, "public"),
	   "a '*' grant matches the prefix and longer names");
	ok(!s3_identity_allows(r, S3_ACT_READ, "pu") && !s3_identity_allows(r, S3_ACT_READ, NULL),
	   "... not a shorter name, nor calls on no bucket");
	ok(!s3_identity_allows(r, S3_ACT_WRITE, "pub"), "Read does not allow Write");
	ok(s3_identity_allows(r, S3_ACT_LIST, "logs") &&
		   !s3_identity_allows(r, S3_ACT_LIST, "logs2"),
	   "an exact bucket grant");
	ok(s3_identity_allows(r, S3_ACT_WRITE, "own") &&
		   s3_identity_allows(r, S3_ACT_TAGGING, "own"),
	   "Admin:bucket allows everything on that bucket");
	ok(!s3_identity_allows(r, S3_ACT_WRITE, "other"), "... only there");
	ok(!s3_identity_allows(n, S3_ACT_READ, "pub"), "no actions: nothing allowed");
	s3_iam_add_admin(iam, "env", "AKENV", "senv");
	a = s3_iam_lookup(iam, "AKENV", &secret);
	ok(a && !strcmp(secret, "senv") && s3_identity_allows(a, S3_ACT_ADMIN, "x"),
	   "an added admin identity");
	s3_iam_free(iam);
}

static void test_bad_documents(void)
{
	static const struct {
		const char *doc, *why;
	} bad[] = {
		{"", "empty"},
		{"{", "truncated"},
		{"[]", "not an object"},
		{"{\"users\":[]}", "unknown top-level field"},
		{"{\"identities\":{}}", "identities not an array"},
		{"{\"identities\":[1]}", "an identity that is not an object"},
		{"{\"identities\":[{\"credentials\":[]}]}", "no name"},
		{"{\"identities\":[{\"name\":\"\",\"credentials\":[]}]}", "empty name"},
		{"{\"identities\":[{\"name\":\"x\"}]}", "no credentials"},
		{"{\"identities\":[{\"name\":\"x\",\"credentials\":[{\"accessKey\":\"A\"}]}]}",
		 "no secret"},
		{"{\"identities\":[{\"name\":\"x\",\"credentials\":[{\"accessKey\":\"A\","
		 "\"secretKey\":\"s\",\"token\":\"t\"}]}]}",
		 "unknown credential field"},
		{"{\"identities\":[{\"name\":\"x\",\"credentials\":[],\"actions\":[\"Fly\"]}]}",
		 "unknown action"},
		{"{\"identities\":[{\"name\":\"x\",\"credentials\":[],\"actions\":[\"Read:\"]}]}",
		 "empty bucket"},
		{"{\"identities\":[{\"name\":\"x\",\"credentials\":[],\"actions\":[7]}]}",
		 "an action that is not a string"},
		{"{\"identities\":[{\"name\":\"a\",\"credentials\":[{\"accessKey\":\"K\","
		 "\"secretKey\":"
		 "\"s\"}]},{\"name\":\"b\",\"credentials\":[{\"accessKey\":\"K\",\"secretKey\":"
		 "\"t\"}]}]}",
		 "one key in two identities"},
	};
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		char msg[256] = "";
		struct s3_iam *iam = parse(bad[i].doc, msg, sizeof(msg));
		ok(!iam && msg[0], "refused: %s (%s)", bad[i].why, msg);
		s3_iam_free(iam);
	}
	{
		char msg[256] = "";
		struct s3_iam *iam = s3_iam_load(NULL, msg, sizeof(msg));
		ok(iam && s3_iam_is_open(iam), "no file: open");
		s3_iam_free(iam);
		iam = s3_iam_load("/nonexistent/s3.json", msg, sizeof(msg));
		ok(!iam && strstr(msg, "/nonexistent/s3.json"),
		   "a missing file is an error naming it");
		iam = parse("{\"identities\":[]}", msg, sizeof(msg));
		ok(iam && s3_iam_is_open(iam), "an empty list: open");
		s3_iam_free(iam);
	}
}

int main(void)
{
	test_grants();
	test_bad_documents();
	return done_testing();
}
