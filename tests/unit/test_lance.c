/*
 * The Lance Namespace catalog's pure parts: identifiers (catalog/lance_id.h),
 * request parsing (catalog/lance_req.h: routes, query, body, error codes) and
 * the manifest names of a dataset's versions (catalog/lance_store.h). The
 * catalog against a filer runs in tests/integration.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "catalog/lance_id.h"
#include "catalog/lance_req.h"
#include "catalog/lance_store.h"
#include "tap.h"

#define NS_PATH(op) "/v1/namespace/lake%24sales/" op
#define T_PATH(op)  "/v1/table/lake%24sales%24t1/" op

/* ---- identifiers ---- */

/* Parses raw with delim; on success whether its parts are want (NULL-ended). */
static bool id_is(const char *raw, const char *delim, const char *const *want)
{
	struct lance_id id = {0};
	char why[LANCE_WHY_MAX];
	bool same;
	size_t n = 0;

	if (!lance_id_parse(raw, strlen(raw), delim, &id, why))
		return false;
	while (want[n])
		n++;
	same = id.n == n;
	for (size_t i = 0; same && i < n; i++)
		same = !strcmp(id.parts[i], want[i]);
	lance_id_free(&id);
	return same;
}

/* Whether raw (len bytes) is refused with a reason and leaves no part behind. */
static bool id_refused(const char *raw, size_t len, const char *delim)
{
	struct lance_id id = {0};
	char why[LANCE_WHY_MAX] = "";
	bool refused = !lance_id_parse(raw, len, delim, &id, why) && *why && !id.n;
	lance_id_free(&id);
	return refused;
}

static void ids(void)
{
	static const char *const none[] = {NULL}, *const three[] = {"lake", "sales", "t1", NULL};
	static const char *const two[] = {"lake", "sales", NULL};
	static const char *const spaced[] = {"a b", "c+d", NULL}, *const colons[] = {"a", ":b", NULL};
	static const char *const dotted[] = {"lake", "sales", "t1", NULL};
	static const char *const bad[] = {"a%2",  "a%zz", "%",    "a%00b", "%0",
					  "%g1", "a%%",  "a%2$", NULL};

	ok(id_is("$", NULL, none), "\"$\" is the root");
	ok(id_is("%24", NULL, none), "\"%%24\" is the root");
	ok(id_is("", NULL, none), "an empty segment is the root");
	ok(id_is("$$$", "", none), "delimiters alone are the root");
	ok(id_is("lake%24sales%24t1", NULL, three), "an encoded id has 3 parts");
	ok(id_is("lake$sales$t1", "$", three), "a raw '$' delimits too");
	ok(id_is("%24lake%24%24sales%24", NULL, two), "leading, trailing, double '$' dropped");
	ok(id_is("a%20b$c+d", NULL, spaced), "%%20 is a space, '+' stays '+' in a path");
	ok(id_is("lake.sales..t1.", ".", dotted), "another delimiter: '.'");
	ok(id_is("a:::b", "::", colons), "a 2-byte delimiter splits at its first match");
	ok(!id_is("lake$sales.t1", ".", dotted) && id_refused("lake$sales.t1", 13, "."),
	   "with '.' a part holding '$' is refused");
	ok(id_refused("a%24b.c", 7, "."), "... also when the '$' is encoded");
	ok(id_refused("a$b$$c", 6, "$$"), "with \"$$\" a part holding '$' is refused");
	for (size_t i = 0; bad[i]; i++)
		ok(id_refused(bad[i], strlen(bad[i]), NULL), "bad encoding '%s' refused", bad[i]);
	ok(id_refused("a\0b", 3, NULL), "a raw NUL refused");
	ok(id_refused("a", 1, "a/b"), "a delimiter with '/' refused");
	ok(id_refused("a", 1, "123456789"), "a 9-byte delimiter refused");
	ok(lance_delimiter_ok(NULL) && lance_delimiter_ok("") && lance_delimiter_ok("12345678") &&
		   !lance_delimiter_ok("/") && !lance_delimiter_ok("123456789"),
	   "lance_delimiter_ok: NULL and \"\" are '$', 8 bytes the most, no '/'");

	{
		char raw[LANCE_ID_PARTS_MAX * 3 + 8] = "";
		struct lance_id id = {0};
		char why[LANCE_WHY_MAX] = "";
		for (int i = 0; i < LANCE_ID_PARTS_MAX; i++)
			strcat(raw, "p$");
		ok(lance_id_parse(raw, strlen(raw), NULL, &id, why) && id.n == LANCE_ID_PARTS_MAX,
		   "%d parts taken", LANCE_ID_PARTS_MAX);
		lance_id_free(&id);
		strcat(raw, "q");
		ok(id_refused(raw, strlen(raw), NULL), "%d parts refused", LANCE_ID_PARTS_MAX + 1);
		ok(!lance_id_parse(raw, strlen(raw), NULL, &id, why) && strstr(why, "at most"),
		   "... saying the most: %s", why);
	}
}

static void id_join_equal(void)
{
	struct lance_id a = {0}, b = {0}, c = {0}, root = {0}, root2 = {0};
	char why[LANCE_WHY_MAX], *s;

	ok(lance_id_parse("lake$sales$t1", 13, NULL, &a, why) &&
		   lance_id_parse("%24lake%24sales%24t1", 20, NULL, &b, why) &&
		   lance_id_parse("lake.sales.t2", 13, ".", &c, why) &&
		   lance_id_parse("$", 1, NULL, &root, why) && lance_id_parse("", 0, ".", &root2, why),
	   "ids parsed");
	s = lance_id_join(&a, 0, NULL);
	is_str(s, "lake$sales$t1", "joined with the default '$'");
	free(s);
	s = lance_id_join(&a, 1, ".");
	is_str(s, "sales.t1", "from the second part with '.'");
	free(s);
	s = lance_id_join(&a, 3, NULL);
	is_str(s, "", "from past the last part: empty");
	free(s);
	s = lance_id_join(&root, 0, "::");
	is_str(s, "", "the root joins to empty");
	free(s);
	ok(lance_id_equal(&a, &b), "the same id raw and encoded is equal");
	ok(!lance_id_equal(&a, &c), "a different last part is not");
	ok(lance_id_equal(&root, &root2), "two roots are equal");
	ok(!lance_id_equal(&a, &root) && !lance_id_equal(&root, &a), "a root and an id are not");
	lance_id_free(&b);
	lance_id_parse("lake$sales", 10, NULL, &b, why);
	ok(!lance_id_equal(&a, &b), "a prefix is not equal");
	lance_id_free(&a);
	lance_id_free(&b);
	lance_id_free(&c);
	lance_id_free(&root);
	lance_id_free(&root2);
}

/* ---- requests ---- */

/* lance_parse with body as a C string; the refusal's code in *code on failure. */
static bool parse(const char *method, const char *path, const char *query, const char *body,
		  struct lance_op *op, enum lance_code *code)
{
	struct lance_refusal r = {.code = LANCE_INTERNAL};
	bool done = lance_parse(method, path, query, body, strlen(body), op, &r);
	if (!done && !*r.detail)
		r.code = LANCE_INTERNAL; /* a refusal says why */
	*code = r.code;
	return done;
}

/* Whether the request is refused with code (the op freed either way). */
static bool refused(const char *method, const char *path, const char *query, const char *body,
		    enum lance_code code)
{
	struct lance_op op;
	enum lance_code got;
	bool done = parse(method, path, query, body, &op, &got);
	lance_op_free(&op);
	return !done && got == code;
}

/* Whether the request is taken (the op freed). */
static bool taken(const char *method, const char *path, const char *query, const char *body)
{
	struct lance_op op;
	enum lance_code got;
	bool done = parse(method, path, query, body, &op, &got);
	lance_op_free(&op);
	return done;
}

static void routes(void)
{
	struct lance_op root;
	enum lance_code why;

	ok(parse("GET", "/v1/namespace/list", NULL, "", &root, &why) &&
		   root.route == LR_NS_LIST && root.id.n == 0,
	   "a route without an id is the root's (the client drops a \".\" id)");
	lance_op_free(&root);
	static const struct {
		const char *method, *path, *what;
		enum lance_route route;
		size_t parts;
	} rt[] = {
		{"POST", NS_PATH("create"), "CreateNamespace", LR_NS_CREATE, 2},
		{"GET", NS_PATH("list"), "ListNamespaces", LR_NS_LIST, 2},
		{"POST", NS_PATH("describe"), "DescribeNamespace", LR_NS_DESCRIBE, 2},
		{"POST", NS_PATH("drop"), "DropNamespace", LR_NS_DROP, 2},
		{"POST", NS_PATH("exists"), "NamespaceExists", LR_NS_EXISTS, 2},
		{"GET", NS_PATH("table/list"), "ListTables", LR_TABLE_LIST, 2},
		{"GET", "/v1/table", "ListAllTables", LR_TABLE_LIST_ALL, 0},
		{"GET", "/v1/table/", "ListAllTables", LR_TABLE_LIST_ALL, 0},
		{"POST", T_PATH("declare"), "DeclareTable", LR_DECLARE, 3},
		{"POST", T_PATH("describe"), "DescribeTable", LR_DESCRIBE, 3},
		{"POST", T_PATH("exists"), "TableExists", LR_EXISTS, 3},
		{"POST", T_PATH("register"), "RegisterTable", LR_REGISTER, 3},
		{"POST", T_PATH("deregister"), "DeregisterTable", LR_DEREGISTER, 3},
		{"POST", T_PATH("drop"), "DropTable", LR_DROP, 3},
		{"POST", T_PATH("rename"), "RenameTable", LR_RENAME, 3},
		{"GET", "/v1/namespace/%24/list", "ListNamespaces", LR_NS_LIST, 0},
		{"GET", "/v1/namespace//list", "ListNamespaces", LR_NS_LIST, 0},
	};
	static const char *const unknown[] = {
		T_PATH("count_rows"), T_PATH("create_index"), T_PATH("version/list"),
		T_PATH("describe/"), "/v1/table/x", "/v2/table/x/describe", "/v1/tablex/x/describe",
		"/v1/namespace/a/b/list", "/", "", "/v1", "/v1/", "/v1/table/x/", NS_PATH("table"),
		NULL};

	for (size_t i = 0; i < sizeof(rt) / sizeof(*rt); i++) {
		struct lance_op op;
		enum lance_code code;
		const char *other = strcmp(rt[i].method, "GET") ? "GET" : "POST";
		bool done = parse(rt[i].method, rt[i].path, NULL, "", &op, &code);
		ok(done && op.route == rt[i].route && !strcmp(op.what, rt[i].what) &&
			   op.id.n == rt[i].parts,
		   "%s %s is %s of %zu parts", rt[i].method, rt[i].path, rt[i].what, rt[i].parts);
		lance_op_free(&op);
		ok(refused(other, rt[i].path, NULL, "", LANCE_INVALID_INPUT), "%s %s refused", other,
		   rt[i].path);
	}
	ok(refused("PUT", T_PATH("describe"), NULL, "", LANCE_INVALID_INPUT), "PUT refused");
	for (size_t i = 0; unknown[i]; i++)
		ok(refused("POST", unknown[i], NULL, "", LANCE_UNSUPPORTED) &&
			   refused("GET", unknown[i], NULL, "", LANCE_UNSUPPORTED),
		   "'%s' is Unsupported", unknown[i]);
	ok(refused("POST", "/v1/table/a%zz/describe", NULL, "", LANCE_INVALID_INPUT),
	   "a badly encoded path id is InvalidInput");
	ok(refused("POST", "/v1/table/a%00b/describe", NULL, "", LANCE_INVALID_INPUT),
	   "a NUL in the path id is InvalidInput");
	{
		struct lance_op op;
		enum lance_code code;
		bool done = parse("POST", T_PATH("describe"), NULL, "", &op, &code);
		ok(done && !strcmp(op.id.parts[0], "lake") && !strcmp(op.id.parts[1], "sales") &&
			   !strcmp(op.id.parts[2], "t1"),
		   "the path's id parts");
		lance_op_free(&op);
	}
}

static void query(void)
{
	struct lance_op op;
	enum lance_code code;
	static const char *const bad[] = {
		"limit=-1", "limit=abc", "limit=", "limit", "limit=1.5", "limit=+5", "limit=%zz",
		"limit=18446744073709551616", "include_declared=maybe", "include_declared=",
		"with_table_uri=2", "load_detailed_metadata=tru", "check_declared=garbage",
		"delimiter=", "delimiter=%2F", "delimiter=123456789", "delimiter=%zz", "delimiter",
		NULL};

	ok(parse("GET", NS_PATH("list"), NULL, "", &op, &code) && op.limit == LANCE_PAGE_MAX &&
		   !op.page_token && op.include_declared && !strcmp(op.delim, "$") &&
		   !op.with_table_uri && !op.load_detailed_metadata && !op.check_declared,
	   "no query: the defaults (limit %d, include_declared, '$')", LANCE_PAGE_MAX);
	lance_op_free(&op);
	ok(parse("GET", NS_PATH("list"), "", "", &op, &code) && op.limit == LANCE_PAGE_MAX &&
		   op.include_declared,
	   "an empty query: the defaults");
	lance_op_free(&op);
	ok(parse("GET", NS_PATH("list"), "limit=5&page_token=abc", "", &op, &code) &&
		   op.limit == 5 && op.page_token && !strcmp(op.page_token, "abc"),
	   "limit and page_token");
	lance_op_free(&op);
	ok(parse("GET", NS_PATH("list"), "limit=0&page_token=", "", &op, &code) && op.limit == 0 &&
		   !op.page_token,
	   "limit 0; an empty page_token is the first page");
	lance_op_free(&op);
	ok(parse("GET", NS_PATH("list"), "limit=100000", "", &op, &code) &&
		   op.limit == LANCE_PAGE_MAX,
	   "limit clamped to %d", LANCE_PAGE_MAX);
	lance_op_free(&op);
	ok(parse("GET", NS_PATH("list"), "limit=18446744073709551615", "", &op, &code) &&
		   op.limit == LANCE_PAGE_MAX,
	   "limit u64 max clamped");
	lance_op_free(&op);
	ok(parse("GET", NS_PATH("list"), "page_token=a%2Bb+c", "", &op, &code) && op.page_token &&
		   !strcmp(op.page_token, "a+b c"),
	   "page_token decoded ('+' a space)");
	lance_op_free(&op);
	ok(parse("GET", NS_PATH("table/list"), "include_declared=false", "", &op, &code) &&
		   !op.include_declared,
	   "include_declared=false");
	lance_op_free(&op);
	ok(parse("GET", NS_PATH("table/list"), "include_declared=true", "", &op, &code) &&
		   op.include_declared,
	   "include_declared=true");
	lance_op_free(&op);
	ok(parse("POST", T_PATH("describe"),
		 "with_table_uri=true&load_detailed_metadata=TRUE&check_declared=1", "", &op,
		 &code) &&
		   op.with_table_uri && op.load_detailed_metadata && op.check_declared,
	   "with_table_uri, load_detailed_metadata, check_declared");
	lance_op_free(&op);
	ok(parse("POST", T_PATH("describe"), "with_table_uri=false", "", &op, &code) &&
		   !op.with_table_uri,
	   "with_table_uri=false");
	lance_op_free(&op);
	for (size_t i = 0; bad[i]; i++)
		ok(refused("GET", NS_PATH("list"), bad[i], "", LANCE_INVALID_INPUT), "'%s' refused",
		   bad[i]);

	ok(parse("POST", "/v1/table/lake.sales.t1/describe", "delimiter=.", "", &op, &code) &&
		   op.id.n == 3 && !strcmp(op.delim, ".") && !strcmp(op.id.parts[2], "t1"),
	   "delimiter=. splits the path's id at '.'");
	lance_op_free(&op);
	ok(parse("POST", "/v1/table/lake%3A%3Asales::t1/describe", "delimiter=%3A%3A", "", &op,
		 &code) &&
		   op.id.n == 3 && !strcmp(op.delim, "::"),
	   "delimiter=%%3A%%3A (\"::\")");
	lance_op_free(&op);
	ok(parse("POST", T_PATH("describe"), "delimiter=.", "", &op, &code) == false &&
		   code == LANCE_INVALID_INPUT,
	   "delimiter=. with a '$' in a part refused");
	lance_op_free(&op);
	ok(parse("POST", "/v1/table/lake.sales.t1/describe", "delimiter=.",
		 "{\"id\":[\"lake\",\"sales\",\"t1\"]}", &op, &code),
	   "the body's id matches the path's split at '.'");
	lance_op_free(&op);
}

/* The op of a request expected to be taken, in *op (caller frees). */
static bool body_op(const char *path, const char *body, struct lance_op *op)
{
	enum lance_code code;
	return parse("POST", path, NULL, body, op, &code);
}

static void body_id(void)
{
	static const struct {
		const char *body, *name;
	} bad[] = {
		{"{\"id\":[\"lake\",\"sales\"]}", "an id of fewer parts"},
		{"{\"id\":[\"lake\",\"sales\",\"t2\"]}", "another table's id"},
		{"{\"id\":\"lake$sales$t1\"}", "an id as a string"},
		{"{\"id\":[\"lake\",\"sales\",1]}", "a number as a part"},
		{"{\"id\":[\"lake\",\"\",\"sales\",\"t1\"]}", "an empty part"},
		{"{\"id\":[\"lake\",\"sa\\u0000les\",\"t1\"]}", "a part with a NUL"},
		{NULL, NULL},
	};
	struct lance_op op;
	char big[512] = "{\"id\":[";

	ok(taken("POST", T_PATH("describe"), NULL, "{\"id\":[\"lake\",\"sales\",\"t1\"]}"),
	   "the body's id equal to the path's");
	ok(taken("POST", T_PATH("describe"), NULL, "{\"id\":[\"lake$sales$t1\"]}"),
	   "the body's id as one joined part (DuckDB's lance extension sends that)");
	ok(taken("POST", T_PATH("describe"), NULL, "{\"id\":[\"lake\",\"sales$t1\"]}"),
	   "the body's id partly joined");
	ok(taken("POST", T_PATH("describe"), NULL, "{\"id\":null}"), "a null id");
	ok(taken("POST", "/v1/namespace/%24/describe", NULL, "{\"id\":[]}"), "root: id []");
	for (size_t i = 0; bad[i].body; i++)
		ok(refused("POST", T_PATH("describe"), NULL, bad[i].body, LANCE_INVALID_INPUT),
		   "%s refused", bad[i].name);
	for (int i = 0; i <= LANCE_ID_PARTS_MAX; i++)
		strcat(big, i ? ",\"p\"" : "\"p\"");
	strcat(big, "]}");
	ok(refused("POST", T_PATH("describe"), NULL, big, LANCE_INVALID_INPUT),
	   "an id of %d parts refused", LANCE_ID_PARTS_MAX + 1);

	ok(body_op(T_PATH("rename"),
		   "{\"new_namespace_id\":[\"lake\",\"eu\"],\"new_table_name\":\"t2\"}", &op) &&
		   op.has_new_namespace && op.new_namespace.n == 2 &&
		   !strcmp(op.new_namespace.parts[1], "eu") && op.new_table_name &&
		   !strcmp(op.new_table_name, "t2"),
	   "rename: new_namespace_id and new_table_name");
	lance_op_free(&op);
}

static void modes(void)
{
	static const struct {
		const char *mode;
		enum lance_mode want;
	} ns[] = {
		{"Create", LM_CREATE},       {"create", LM_CREATE},      {"CREATE", LM_CREATE},
		{"ExistOk", LM_EXIST_OK},    {"exist_ok", LM_EXIST_OK},  {"existok", LM_EXIST_OK},
		{"EXIST_OK", LM_EXIST_OK},   {"Overwrite", LM_OVERWRITE}, {"overwrite", LM_OVERWRITE},
	};
	static const char *const bad_ns[] = {"Replace", "", "Exist", "ExistOkay", "Create!",
					     "Skip", NULL};
	struct lance_op op;
	char body[128];

	for (size_t i = 0; i < sizeof(ns) / sizeof(*ns); i++) {
		snprintf(body, sizeof(body), "{\"mode\":\"%s\"}", ns[i].mode);
		ok(body_op(NS_PATH("create"), body, &op) && op.mode == ns[i].want,
		   "create namespace: mode %s", ns[i].mode);
		lance_op_free(&op);
	}
	ok(body_op(NS_PATH("create"), "{\"mode\":null}", &op) && op.mode == LM_CREATE,
	   "create namespace: mode null is Create");
	lance_op_free(&op);
	for (size_t i = 0; bad_ns[i]; i++) {
		snprintf(body, sizeof(body), "{\"mode\":\"%s\"}", bad_ns[i]);
		ok(refused("POST", NS_PATH("create"), NULL, body, LANCE_INVALID_INPUT),
		   "create namespace: mode '%s' refused", bad_ns[i]);
	}

	ok(body_op(NS_PATH("drop"), "{\"mode\":\"Fail\",\"behavior\":\"Restrict\"}", &op) &&
		   op.drop_mode == LD_FAIL && !op.cascade,
	   "drop namespace: Fail, Restrict");
	lance_op_free(&op);
	ok(body_op(NS_PATH("drop"), "{\"mode\":\"skip\",\"behavior\":\"cascade\"}", &op) &&
		   op.drop_mode == LD_SKIP && op.cascade,
	   "drop namespace: skip, cascade");
	lance_op_free(&op);
	ok(body_op(NS_PATH("drop"), "{\"mode\":\"SKIP\",\"behavior\":\"CASCADE\"}", &op) &&
		   op.drop_mode == LD_SKIP && op.cascade,
	   "drop namespace: SKIP, CASCADE");
	lance_op_free(&op);
	ok(body_op(NS_PATH("drop"), "{}", &op) && op.drop_mode == LD_FAIL && !op.cascade,
	   "drop namespace: Fail and Restrict by default");
	lance_op_free(&op);

	ok(body_op(T_PATH("register"), "{\"mode\":\"Create\",\"location\":\"s3://lake/t1\"}",
		   &op) &&
		   op.mode == LM_CREATE && op.location && !strcmp(op.location, "s3://lake/t1"),
	   "register: Create and the location");
	lance_op_free(&op);
	ok(body_op(T_PATH("register"), "{\"mode\":\"overwrite\"}", &op) &&
		   op.mode == LM_OVERWRITE && !op.location,
	   "register: overwrite, no location");
	lance_op_free(&op);
}

static void members(void)
{
	static const char *const bad_versions[] = {"-1", "1.5", "\"3\"", "1e2", "true",
						   "9223372036854775808", "18446744073709551616",
						   "[]", NULL};
	static const char *const bad_props[] = {"{\"a\":1}", "{\"a\":\"b\",\"c\":null}",
						"{\"a\":{}}", "{\"a\":[\"b\"]}", "{\"a\":true}",
						"\"a=b\"", "[]", "1", NULL};
	struct lance_op op;
	char body[128];

	ok(body_op(T_PATH("declare"), "{\"properties\":{\"a\":\"b\",\"c\":\"\"}}", &op) &&
		   op.properties && jt_len(op.properties) == 2 &&
		   !strcmp(jt_get_str(op.properties, "a"), "b"),
	   "properties: an object of strings");
	lance_op_free(&op);
	ok(body_op(T_PATH("declare"), "{\"properties\":null}", &op) && !op.properties,
	   "properties: null is none");
	lance_op_free(&op);
	ok(body_op(NS_PATH("create"), "{\"properties\":{}}", &op) && op.properties &&
		   !jt_len(op.properties),
	   "properties: an empty object");
	lance_op_free(&op);
	for (size_t i = 0; bad_props[i]; i++) {
		snprintf(body, sizeof(body), "{\"properties\":%s}", bad_props[i]);
		ok(refused("POST", T_PATH("declare"), NULL, body, LANCE_INVALID_INPUT),
		   "properties %s refused", bad_props[i]);
	}

	ok(body_op(T_PATH("describe"), "{\"version\":3}", &op) && op.has_version &&
		   op.version == 3,
	   "version 3");
	lance_op_free(&op);
	ok(body_op(T_PATH("describe"), "{\"version\":0}", &op) && op.has_version &&
		   op.version == 0,
	   "version 0");
	lance_op_free(&op);
	ok(body_op(T_PATH("describe"), "{\"version\":9223372036854775807}", &op) &&
		   op.has_version && op.version == INT64_MAX,
	   "version INT64_MAX");
	lance_op_free(&op);
	ok(body_op(T_PATH("describe"), "{\"version\":null}", &op) && !op.has_version,
	   "version null is none");
	lance_op_free(&op);
	for (size_t i = 0; bad_versions[i]; i++) {
		snprintf(body, sizeof(body), "{\"version\":%s}", bad_versions[i]);
		ok(refused("POST", T_PATH("describe"), NULL, body, LANCE_INVALID_INPUT),
		   "version %s refused", bad_versions[i]);
	}

	ok(refused("POST", T_PATH("describe"), NULL, "{\"tag\":\"v1\"}", LANCE_UNSUPPORTED),
	   "a tag is Unsupported");
	ok(refused("POST", T_PATH("describe"), NULL, "{\"branch\":\"main\"}", LANCE_UNSUPPORTED),
	   "a branch is Unsupported");
	ok(taken("POST", T_PATH("describe"), NULL, "{\"tag\":null,\"branch\":null}"),
	   "a null tag and branch are none");

	ok(body_op(T_PATH("describe"),
		   "{\"vend_credentials\":true,\"with_table_uri\":true,"
		   "\"load_detailed_metadata\":true,\"check_declared\":true}",
		   &op) &&
		   op.vend_credentials && op.with_table_uri && op.load_detailed_metadata &&
		   op.check_declared,
	   "the body's booleans");
	lance_op_free(&op);
	ok(body_op(T_PATH("describe"), "{\"vend_credentials\":null}", &op) && !op.vend_credentials,
	   "a null boolean is its default");
	lance_op_free(&op);
	ok(taken("POST", T_PATH("describe"), NULL, "{\"unknown_member\":[1,{\"x\":2}]}"),
	   "an unknown member is ignored");
}

/* Members of the wrong kind or value, each refused as InvalidInput. */
static void invalid_members(void)
{
	static const struct {
		const char *path, *body, *name;
	} bad[] = {
		{T_PATH("rename"), "{\"new_namespace_id\":\"lake$eu\"}", "new_namespace_id as a string"},
		{T_PATH("rename"), "{\"new_table_name\":2}", "new_table_name as a number"},
		{NS_PATH("create"), "{\"mode\":1}", "create namespace: a number as mode"},
		{NS_PATH("drop"), "{\"mode\":\"ExistOk\"}", "drop namespace: mode ExistOk"},
		{NS_PATH("drop"), "{\"mode\":\"Create\"}", "drop namespace: mode Create"},
		{NS_PATH("drop"), "{\"behavior\":\"Force\"}", "drop namespace: behavior Force"},
		{NS_PATH("drop"), "{\"behavior\":true}", "drop namespace: a boolean behavior"},
		{T_PATH("register"), "{\"mode\":\"ExistOk\"}", "register: ExistOk"},
		{T_PATH("register"), "{\"mode\":\"exist_ok\"}", "register: exist_ok"},
		{T_PATH("register"), "{\"mode\":\"Skip\"}", "register: Skip"},
		{T_PATH("register"), "{\"location\":7}", "register: a number as location"},
		{T_PATH("describe"), "{\"vend_credentials\":\"true\"}", "a boolean as a string"},
		{T_PATH("describe"), "{\"check_declared\":1}", "a boolean as a number"},
		{NULL, NULL, NULL},
	};

	for (size_t i = 0; bad[i].path; i++)
		ok(refused("POST", bad[i].path, NULL, bad[i].body, LANCE_INVALID_INPUT), "%s refused",
		   bad[i].name);
}

static void bodies(void)
{
	static const char *const bad[] = {"[]", "\"x\"", "1", "null", "true", "{", "{\"id\":}",
					  "{} x", "{}{}", "{\"a\":1,}", "\xff", NULL};
	struct lance_op op;
	struct lance_refusal r;

	for (size_t i = 0; bad[i]; i++)
		ok(refused("POST", T_PATH("describe"), NULL, bad[i], LANCE_INVALID_INPUT),
		   "body '%s' refused", bad[i]);
	ok(taken("POST", T_PATH("describe"), NULL, ""), "an empty body");
	ok(taken("POST", T_PATH("describe"), NULL, " \r\n\t "), "a body of whitespace");
	ok(taken("POST", T_PATH("describe"), NULL, "  {}  \n"), "{} with whitespace");
	ok(taken("GET", NS_PATH("list"), NULL, "{}"), "a GET with {}");
	ok(!lance_parse("POST", T_PATH("describe"), NULL, "{}\0", 3, &op, &r) &&
		   r.code == LANCE_INVALID_INPUT,
	   "a NUL after the JSON refused");
	lance_op_free(&op);
	ok(lance_parse("POST", T_PATH("describe"), NULL, "{}garbage", 2, &op, &r),
	   "only body_len bytes are read");
	lance_op_free(&op);
}

/* ---- codes and manifests ---- */

static void codes(void)
{
	static const struct {
		enum lance_code code;
		int status;
		const char *name;
	} c[] = {
		{LANCE_UNSUPPORTED, 406, "Unsupported"},
		{LANCE_NAMESPACE_NOT_FOUND, 404, "NamespaceNotFound"},
		{LANCE_NAMESPACE_EXISTS, 409, "NamespaceAlreadyExists"},
		{LANCE_NAMESPACE_NOT_EMPTY, 409, "NamespaceNotEmpty"},
		{LANCE_TABLE_NOT_FOUND, 404, "TableNotFound"},
		{LANCE_TABLE_EXISTS, 409, "TableAlreadyExists"},
		{LANCE_TABLE_VERSION_NOT_FOUND, 404, "TableVersionNotFound"},
		{LANCE_INVALID_INPUT, 400, "InvalidInput"},
		{LANCE_CONCURRENT_MODIFICATION, 409, "ConcurrentModification"},
		{LANCE_PERMISSION_DENIED, 403, "PermissionDenied"},
		{LANCE_UNAUTHENTICATED, 401, "Unauthenticated"},
		{LANCE_SERVICE_UNAVAILABLE, 503, "ServiceUnavailable"},
		{LANCE_INTERNAL, 500, "Internal"},
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++) {
		ok(lance_code_status(c[i].code) == c[i].status, "code %d is status %d", c[i].code,
		   c[i].status);
		is_str(lance_code_name(c[i].code), c[i].name, c[i].name);
	}
}

static void manifests(void)
{
	static const struct {
		const char *name;
		uint64_t v;
	} good[] = {
		{"1.manifest", 1},
		{"0.manifest", 0},
		{"42.manifest", 42},
		{"001.manifest", 1}, /* a padded V1 name under 20 digits reads as V1 */
		{"1844674407370955161.manifest", 1844674407370955161ULL},
		{"18446744073709551614.manifest", 1},
		{"18446744073709551573.manifest", 42},
		{"18446744073709551615.manifest", 0},
		{"00000000000000000000.manifest", UINT64_MAX},
		{"00000000000000000001.manifest", UINT64_MAX - 1},
	};
	static const char *const bad[] = {
		"d3.manifest", "x.manifest", ".manifest", "1.manifest.tmp", "manifest", "",
		"1.Manifest", "-1.manifest", "+1.manifest", " 1.manifest", "1 .manifest",
		"1.manifes", "1manifest", ".1.manifest", "1.1.manifest", "0x1.manifest",
		"99999999999999999999.manifest", "184467440737095516150.manifest",
		"18446744073709551616.manifest", "1.manifest/", "_versions/1.manifest", NULL};
	uint64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		v = 77;
		ok(lance_manifest_version(good[i].name, &v) && v == good[i].v, "%s is version %llu",
		   good[i].name, (unsigned long long)good[i].v);
	}
	for (size_t i = 0; bad[i]; i++) {
		v = 77;
		ok(!lance_manifest_version(bad[i], &v) && v == 77, "'%s' is no manifest", bad[i]);
	}
}

int main(void)
{
	ids();
	id_join_equal();
	routes();
	query();
	body_id();
	modes();
	members();
	invalid_members();
	bodies();
	codes();
	manifests();
	return done_testing();
}
