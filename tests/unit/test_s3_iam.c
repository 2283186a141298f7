/* S3 identities (s3/s3_iam.h): parsing, lookups and grants; the IAM API's stored users
   (s3/s3_iam_user.h), their merge and policies, and query forms (s3/query_form.h). */
#include "config.h"
#include <string.h>
#include "s3/query_form.h"
#include "s3/s3_iam.h"
#include "s3/s3_iam_user.h"
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

#define AK_A "AKIAAAAAAAAAAAAAAAAA"
#define AK_B "AKIABBBBBBBBBBBBBBBB"
#define SK40 "0123456789012345678901234567890123456789"

static void test_stored_users(void)
{
	static const char doc[] =
		"{\"name\":\"carol\",\"id\":\"AIDAX\",\"created\":\"2026-01-01T00:00:00Z\","
		"\"keys\":[{\"accessKey\":\"" AK_A "\",\"secretKey\":\"" SK40 "\","
		"\"status\":\"Active\",\"created\":\"\"},"
		"{\"accessKey\":\"" AK_B "\",\"secretKey\":\"" SK40 "\","
		"\"status\":\"Inactive\"}],"
		"\"policies\":[{\"name\":\"p\",\"document\":\"{\\\"Statement\\\":"
		"{\\\"Effect\\\":\\\"Allow\\\",\\\"Action\\\":\\\"s3:GetObject\\\","
		"\\\"Resource\\\":\\\"arn:aws:s3:::pub/*\\\"}}\"}]}";
	struct s3_iam_user u, again;
	struct s3_iam *base, *set;
	const struct s3_identity *id;
	const char *secret;
	char msg[256] = "";
	buf b = BUF_INIT;

	ok(s3_iam_user_parse(doc, strlen(doc), &u, msg, sizeof(msg)), "a stored user parses (%s)",
	   msg);
	ok(u.n_keys == 2 && u.keys[0].active && !u.keys[1].active && u.n_pols == 1,
	   "its keys, their status and its policy");
	s3_iam_user_write(&u, &b);
	ok(s3_iam_user_parse(b.data, b.len, &again, msg, sizeof(msg)) &&
		   !strcmp(again.name, "carol") && again.n_keys == 2 &&
		   !strcmp(again.pol_doc[0], u.pol_doc[0]),
	   "written back, it reads back the same");
	s3_iam_user_clear(&again);
	buf_free(&b);

	base = parse("{\"identities\":[{\"name\":\"carol2\",\"credentials\":[{\"accessKey\":"
		     "\"AKF\",\"secretKey\":\"f\"}],\"actions\":[\"Admin\"]}]}",
		     msg, sizeof(msg));
	set = s3_iam_clone(base);
	ok(s3_iam_add_user(set, &u, msg, sizeof(msg)), "the user joins the file's identities");
	id = s3_iam_lookup(set, AK_A, &secret);
	ok(id && s3_identity_stored(id) && s3_identity_has_policies(id) &&
		   !strcmp(secret, SK40),
	   "its active key finds it");
	ok(!s3_iam_lookup(set, AK_B, &secret), "its inactive key is not known");
	ok(id && !s3_identity_allows(id, S3_ACT_READ, "pub"), "it has no grants of its own");
	if (id) {
		struct policy_request pr = {.action = "s3:GetObject",
					    .resource = "arn:aws:s3:::pub/k"};
		ok(s3_identity_policy_eval(id, &pr) == POLICY_ALLOW, "its policy allows pub/k");
		pr.resource = "arn:aws:s3:::other/k";
		ok(s3_identity_policy_eval(id, &pr) == POLICY_NO_MATCH, "and nothing else");
	}
	ok(s3_iam_lookup(set, "AKF", &secret) && !s3_iam_lookup(base, AK_A, &secret),
	   "the clone keeps the file's identities; the file's set is unchanged");
	snprintf(u.name, sizeof(u.name), "carol2");
	ok(!s3_iam_add_user(set, &u, msg, sizeof(msg)) && strstr(msg, "identities file"),
	   "a name of the file's is refused: the file wins");
	s3_iam_free(s3_iam_ref(set));
	ok(s3_iam_count(set) == 2, "a reference dropped leaves the set to its other holder");
	s3_iam_free(set);
	s3_iam_free(base);
	s3_iam_user_clear(&u);

	static const char *const bad[] = {
		"{\"name\":\"a/b\"}",
		"{\"name\":\"a\",\"keys\":[{\"accessKey\":\"short\",\"secretKey\":\"" SK40
		"\",\"status\":\"Active\"}]}",
		"{\"name\":\"a\",\"keys\":[{\"accessKey\":\"" AK_A "\",\"secretKey\":\"" SK40
		"\",\"status\":\"Maybe\"}]}",
		"{\"name\":\"a\",\"policies\":[{\"name\":\"p\",\"document\":\"{}\"}]}",
		"{\"name\":\"a\",\"policies\":[{\"name\":\"p\",\"document\":\"{\\\"Statement\\\":"
		"{\\\"Effect\\\":\\\"Allow\\\",\\\"Principal\\\":\\\"*\\\","
		"\\\"Action\\\":\\\"s3:*\\\",\\\"Resource\\\":\\\"*\\\"}}\"}]}",
		"[1]",
	};
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		msg[0] = '\0';
		ok(!s3_iam_user_parse(bad[i], strlen(bad[i]), &u, msg, sizeof(msg)) && msg[0],
		   "refused with a reason: %s (%s)", bad[i], msg);
		s3_iam_user_clear(&u);
	}
}

static void test_query_form(void)
{
	struct query_form f;
	char msg[128] = "";
	static const char *const known[] = {"Action", "Version", NULL};
	const char *body = "Action=PutUserPolicy&&PolicyDocument=%7B%22a%22%3A+1%7D&Version=x";

	ok(query_form_parse(body, strlen(body), &f, msg, sizeof(msg)) && f.n == 3,
	   "three pairs, the empty one skipped");
	ok(!strcmp(query_form_get(&f, "PolicyDocument"), "{\"a\": 1}"),
	   "values decoded, + a space");
	ok(!strcmp(query_form_unknown(&f, known), "PolicyDocument"), "an unknown parameter named");
	query_form_free(&f);
	ok(!query_form_parse("a=1&a=2", 7, &f, msg, sizeof(msg)) && strstr(msg, "twice") && !f.n,
	   "a repeated name is refused");
	ok(!query_form_parse("a=%zz", 5, &f, msg, sizeof(msg)) && !f.n, "a bad escape is refused");
	ok(s3_iam_name_ok("a+b=c,d.e@f_g-h") && !s3_iam_name_ok("") && !s3_iam_name_ok("a b"),
	   "IAM's name characters");
}

/* The optional e-mail of an identity (ACL grants by e-mail): kept, checked, cloned. */
static void test_email(void)
{
	static const char doc[] =
		"{\"identities\":[{\"name\":\"bob\",\"email\":\"bob@example.com\","
		"\"credentials\":[{\"accessKey\":\"AKB\",\"secretKey\":\"s\"}]},"
		"{\"name\":\"eve\",\"credentials\":[{\"accessKey\":\"AKE\",\"secretKey\":\"s\"}]}]}";
	char msg[256] = "";
	struct s3_iam *iam = parse(doc, msg, sizeof(msg)), *copy;
	const struct s3_identity *b;

	ok(iam != NULL, "an identity with an e-mail parses (%s)", msg);
	if (!iam)
		return;
	b = s3_iam_at(iam, 0);
	ok(b && !strcmp(s3_identity_email(b), "bob@example.com"), "its e-mail is kept");
	ok(!s3_identity_email(s3_iam_at(iam, 1)), "without one: none");
	ok(!s3_iam_at(iam, 2), "s3_iam_at ends with the identities");
	copy = s3_iam_clone(iam);
	ok(!strcmp(s3_identity_email(s3_iam_at(copy, 0)), "bob@example.com"), "cloned too");
	s3_iam_free(copy);
	s3_iam_free(iam);
	ok(!parse("{\"identities\":[{\"name\":\"x\",\"email\":\"not-an-address\","
		  "\"credentials\":[]}]}",
		  msg, sizeof(msg)),
	   "an e-mail without '@' is refused");
	ok(!parse("{\"identities\":[{\"name\":\"x\",\"email\":3,\"credentials\":[]}]}", msg,
		  sizeof(msg)),
	   "... and one that is not a string (%s)", msg);
}

int main(void)
{
	test_grants();
	test_email();
	test_bad_documents();
	test_stored_users();
	test_query_form();
	return done_testing();
}
