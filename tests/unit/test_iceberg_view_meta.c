/*
 * The Iceberg view metadata engine: create, replace (a new version with a new
 * schema, an identical version reused), the view requirement, every update,
 * malformed and unknown input changing nothing, dialects a replace may not
 * drop, and the version history trimmed to version.history.num-entries.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "catalog/iceberg_view_meta.h"
#include "tap.h"
#include "util.h"

#define UUID "6f2c4a1e-8a9b-4d5e-9f10-2b3c4d5e6f70"
#define LOC "s3://warehouse/db/v_events"
#define NOW 1733000000000LL

static char err[256];

static jt *parse(const char *s)
{
	jt *v = jt_parse(s, strlen(s), err, sizeof(err));
	if (!v)
		printf("# parse: %s\n", err);
	return v;
}

static char *text(const jt *v)
{
	buf b = BUF_INIT;
	ice_view_write(v, &b);
	return buf_steal(&b, NULL);
}

/* The metadata survives being written and read back. */
static void reparses(const jt *m, const char *what)
{
	char *t = text(m);
	jt *back = ice_view_parse(t, strlen(t), err, sizeof(err));
	ok(back && jt_equal(back, m), "%s: written metadata reads back the same (%s)", what,
	   back ? "" : err);
	jt_free(back);
	free(t);
}

/* A commit body as text against *m; a refused one must leave *m as it was. */
static ice_rc commit(jt **m, const char *body, int64_t now)
{
	jt *b = parse(body);
	char *before = text(*m), *after;
	ice_rc rc;
	err[0] = '\0';
	rc = ice_view_commit(m, b, now, err, sizeof(err));
	if (rc != ICE_OK) {
		after = text(*m);
		ok(!strcmp(before, after), "refused commit leaves the metadata as it was (%s)", err);
		free(after);
	} else {
		reparses(*m, "after a commit");
	}
	free(before);
	jt_free(b);
	return rc;
}

static int64_t geti(const jt *obj, const char *key)
{
	int64_t v = -12345;
	jt_get_i64(obj, key, &v);
	return v;
}

static const jt *version(const jt *m, int64_t id)
{
	jt *vs = jt_get(m, "versions");
	for (size_t i = 0; i < jt_len(vs); i++)
		if (geti(jt_at(vs, i), "version-id") == id)
			return jt_at(vs, i);
	return NULL;
}

#define SCHEMA1                                                                            \
	"{\"type\":\"struct\",\"schema-id\":7,\"fields\":["                                  \
	"{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":false},"                   \
	"{\"id\":2,\"name\":\"n\",\"type\":\"string\",\"required\":false}]}"
#define SCHEMA2                                                                            \
	"{\"type\":\"struct\",\"fields\":["                                                  \
	"{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":false}]}"
#define SQL1 "[{\"type\":\"sql\",\"sql\":\"SELECT id, n FROM t\",\"dialect\":\"spark\"}]"
#define SQL2 "[{\"type\":\"sql\",\"sql\":\"SELECT id FROM t\",\"dialect\":\"spark\"}]"

static const char *create_req =
	"{\"name\":\"v_events\",\"location\":null,\"schema\":" SCHEMA1 ","
	"\"view-version\":{\"version-id\":0,\"timestamp-ms\":5,\"schema-id\":7,"
	"\"summary\":{\"engine-name\":\"spark\",\"engine-version\":\"3.5.3\"},"
	"\"representations\":" SQL1 ","
	"\"default-catalog\":\"weedfs\",\"default-namespace\":[\"db\"]},"
	"\"properties\":{\"comment\":\"events view\"}}";

static jt *create(const char *req_text)
{
	jt *req = parse(req_text), *m = NULL;
	ice_rc rc = ice_view_create(req, UUID, LOC, NOW, &m, err, sizeof(err));
	if (rc != ICE_OK)
		printf("# create: %s\n", err);
	jt_free(req);
	return m;
}

static void test_create(void)
{
	jt *m = create(create_req), *v;
	char *name;
	ok(m != NULL, "create: a view from a CreateViewRequest");
	if (!m)
		return;
	is_str(jt_get_str(m, "view-uuid"), UUID, "create: view-uuid is the caller's");
	is_int(geti(m, "format-version"), 1, "create: format-version 1");
	is_str(jt_get_str(m, "location"), LOC, "create: no location in the request: the server's");
	is_int(jt_len(jt_get(m, "schemas")), 1, "create: one schema");
	is_int(geti(jt_at(jt_get(m, "schemas"), 0), "schema-id"), 0, "create: schema id 0 assigned");
	is_int(geti(m, "current-version-id"), 1, "create: current version 1");
	v = jt_at(jt_get(m, "versions"), 0);
	is_int(geti(v, "version-id"), 1, "create: the version is 1 whatever the client sent");
	is_int(geti(v, "schema-id"), 0, "create: the version points at schema 0");
	is_int(geti(v, "timestamp-ms"), NOW, "create: the version is stamped with the server's time");
	is_str(jt_get_str(jt_get(v, "summary"), "engine-name"), "spark", "create: summary kept");
	is_str(jt_get_str(v, "default-catalog"), "weedfs", "create: default-catalog kept");
	is_int(jt_len(jt_get(m, "version-log")), 1, "create: one version-log entry");
	is_int(geti(jt_at(jt_get(m, "version-log"), 0), "version-id"), 1, "create: log names version 1");
	is_int(geti(jt_at(jt_get(m, "version-log"), 0), "timestamp-ms"), NOW, "create: log time");
	is_str(jt_get_str(jt_get(m, "properties"), "comment"), "events view", "create: properties");
	ok(ice_view_validate(m, err, sizeof(err)) == ICE_OK, "create: the result validates");
	reparses(m, "create");
	name = ice_view_file_name(m, 1, UUID);
	is_str(name, LOC "/metadata/00001-" UUID ".metadata.json", "file name of version 1");
	free(name);
	jt_free(m);

	m = create("{\"name\":\"v\",\"location\":\"s3://other/v/\",\"schema\":" SCHEMA2 ","
		   "\"view-version\":{\"version-id\":1,\"timestamp-ms\":1,\"schema-id\":0,"
		   "\"summary\":{},\"representations\":" SQL2 ",\"default-namespace\":[]}}");
	ok(m && !jt_get(jt_at(jt_get(m, "versions"), 0), "default-catalog"),
	   "create: no default-catalog, none stored");
	is_str(jt_get_str(m, "location"), "s3://other/v/", "create: the request's location");
	ok(m && jt_is(jt_get(m, "properties"), JT_OBJ), "create: no properties, an empty map");
	name = ice_view_file_name(m, 12, "u");
	is_str(name, "s3://other/v/metadata/00012-u.metadata.json", "file name: one slash");
	free(name);
	jt_free(m);
}

static void bad_create(const char *req_text, const char *what)
{
	jt *req = parse(req_text), *m = (jt *)1;
	ice_rc rc = ice_view_create(req, UUID, LOC, NOW, &m, err, sizeof(err));
	ok(rc == ICE_BAD && m == NULL && err[0], "create refused: %s (%s)", what, err);
	jt_free(req);
}

#define VV(body) "\"view-version\":{\"version-id\":1,\"timestamp-ms\":1,\"schema-id\":0," body "}"
#define GOOD_VV VV("\"summary\":{},\"representations\":" SQL1 ",\"default-namespace\":[]")

static void test_create_bad(void)
{
	bad_create("[]", "not an object");
	bad_create("{\"schema\":" SCHEMA1 "," GOOD_VV "}", "no name");
	bad_create("{\"name\":\"v\"," GOOD_VV "}", "no schema");
	bad_create("{\"name\":\"v\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1}]}," GOOD_VV
		   "}",
		   "a schema field without name and type");
	bad_create("{\"name\":\"v\",\"schema\":" SCHEMA1 "}", "no view-version");
	bad_create("{\"name\":\"v\",\"schema\":" SCHEMA1 ","
		   VV("\"summary\":{},\"representations\":[],\"default-namespace\":[]") "}",
		   "no representations");
	bad_create("{\"name\":\"v\",\"schema\":" SCHEMA1 ","
		   VV("\"summary\":{},\"representations\":[{\"type\":\"sql\",\"sql\":\"a\","
		      "\"dialect\":\"spark\"},{\"type\":\"sql\",\"sql\":\"b\",\"dialect\":\"Spark\"}],"
		      "\"default-namespace\":[]") "}",
		   "two queries for one dialect");
	bad_create("{\"name\":\"v\",\"schema\":" SCHEMA1 ","
		   VV("\"summary\":{},\"representations\":[{\"type\":\"sql\",\"dialect\":\"x\"}],"
		      "\"default-namespace\":[]") "}",
		   "a sql representation without sql");
	bad_create("{\"name\":\"v\",\"schema\":" SCHEMA1 ","
		   VV("\"summary\":{\"a\":1},\"representations\":" SQL1 ",\"default-namespace\":[]")
		   "}",
		   "a summary value that is not a string");
	bad_create("{\"name\":\"v\",\"schema\":" SCHEMA1 ","
		   VV("\"summary\":{},\"representations\":" SQL1 ",\"default-namespace\":\"db\"") "}",
		   "default-namespace not a list");
	bad_create("{\"name\":\"v\",\"schema\":" SCHEMA1 ","
		   VV("\"summary\":{},\"representations\":" SQL1 ",\"default-namespace\":[],"
		      "\"default-catalog\":3") "}",
		   "default-catalog not a string");
	bad_create("{\"name\":\"v\",\"location\":5,\"schema\":" SCHEMA1 "," GOOD_VV "}",
		   "location not a string");
	bad_create("{\"name\":\"v\",\"schema\":" SCHEMA1 "," GOOD_VV ",\"properties\":{\"a\":true}}",
		   "a property that is not a string");
	bad_create("{\"name\":\"v\",\"schema\":" SCHEMA1 "," GOOD_VV
		   ",\"properties\":{\"version.history.num-entries\":\"0\"}}",
		   "version.history.num-entries 0");
}

/* A replace as Spark sends it: a new schema, a version on it (-1), made current (-1). */
static const char *replace_body =
	"{\"identifier\":{\"namespace\":[\"db\"],\"name\":\"v_events\"},"
	"\"requirements\":[{\"type\":\"assert-view-uuid\",\"uuid\":\"" UUID "\"}],"
	"\"updates\":[{\"action\":\"add-schema\",\"schema\":" SCHEMA2 ",\"last-column-id\":1},"
	"{\"action\":\"add-view-version\",\"view-version\":{\"version-id\":2,"
	"\"timestamp-ms\":1733000001000,\"schema-id\":-1,\"summary\":{\"engine-name\":\"spark\"},"
	"\"representations\":" SQL2 ",\"default-namespace\":[\"db\"]}},"
	"{\"action\":\"set-current-view-version\",\"view-version-id\":-1}]}";

static void test_replace(void)
{
	jt *m = create(create_req);
	const jt *v;
	if (!m)
		return;
	ok(commit(&m, replace_body, NOW + 5000) == ICE_OK, "replace: commits (%s)", err);
	is_int(jt_len(jt_get(m, "schemas")), 2, "replace: the new schema is added");
	is_int(geti(jt_at(jt_get(m, "schemas"), 1), "schema-id"), 1, "replace: as schema 1");
	is_int(geti(m, "current-version-id"), 2, "replace: version 2 is current");
	v = version(m, 2);
	is_int(geti(v, "schema-id"), 1, "replace: schema-id -1 became the added schema");
	is_int(jt_len(jt_get(m, "version-log")), 2, "replace: a version-log entry");
	is_int(geti(jt_at(jt_get(m, "version-log"), 1), "timestamp-ms"), 1733000001000LL,
	       "replace: a version new in the commit is logged at its own time");

	/* The same SQL and schema again: reused, no version 3. */
	ok(commit(&m,
		  "{\"requirements\":[],\"updates\":[{\"action\":\"add-schema\",\"schema\":" SCHEMA2
		  "},{\"action\":\"add-view-version\",\"view-version\":{\"version-id\":3,"
		  "\"timestamp-ms\":99,\"schema-id\":-1,\"summary\":{\"engine-name\":\"spark\"},"
		  "\"representations\":" SQL2 ",\"default-namespace\":[\"db\"]}},"
		  "{\"action\":\"set-current-view-version\",\"view-version-id\":-1}]}",
		  NOW + 6000) == ICE_OK,
	   "replace with an identical version commits (%s)", err);
	is_int(jt_len(jt_get(m, "schemas")), 2, "identical schema: reused, not added");
	is_int(jt_len(jt_get(m, "versions")), 2, "identical version: reused, not added");
	is_int(jt_len(jt_get(m, "version-log")), 2, "already current: no log entry");

	/* Back to version 1's SQL (a revert): version 1 reused and current again. */
	ok(commit(&m,
		  "{\"updates\":[{\"action\":\"add-view-version\",\"view-version\":{\"version-id\":3,"
		  "\"timestamp-ms\":77,\"schema-id\":0,\"summary\":{\"engine-name\":\"spark\","
		  "\"engine-version\":\"3.5.3\"},\"representations\":" SQL1 ","
		  "\"default-catalog\":\"weedfs\",\"default-namespace\":[\"db\"]}},"
		  "{\"action\":\"set-current-view-version\",\"view-version-id\":-1}]}",
		  NOW + 7000) == ICE_OK,
	   "revert to version 1's definition commits (%s)", err);
	is_int(geti(m, "current-version-id"), 1, "revert: version 1 is current again");
	is_int(jt_len(jt_get(m, "versions")), 2, "revert: no new version");
	is_int(geti(jt_at(jt_get(m, "version-log"), 2), "timestamp-ms"), NOW + 7000,
	       "revert: an old version made current is logged at the commit's time");

	/* A different default-catalog is a different version. */
	ok(commit(&m,
		  "{\"updates\":[{\"action\":\"add-view-version\",\"view-version\":{\"version-id\":1,"
		  "\"timestamp-ms\":78,\"schema-id\":0,\"summary\":{},\"representations\":" SQL1 ","
		  "\"default-namespace\":[\"db\"]}}]}",
		  NOW + 8000) == ICE_OK,
	   "a version added without making it current (%s)", err);
	is_int(jt_len(jt_get(m, "versions")), 3, "the new version is added");
	ok(version(m, 3) != NULL, "its taken id 1 became the highest + 1 (3)");
	is_int(geti(m, "current-version-id"), 1, "the current version is unchanged");
	jt_free(m);
}

static void test_requirements(void)
{
	jt *m = create(create_req);
	if (!m)
		return;
	ok(commit(&m,
		  "{\"requirements\":[{\"type\":\"assert-view-uuid\",\"uuid\":\"other\"}],"
		  "\"updates\":[{\"action\":\"set-location\",\"location\":\"s3://x\"}]}",
		  NOW) == ICE_CONFLICT,
	   "assert-view-uuid with another uuid: conflict (%s)", err);
	ok(strstr(err, "assert-view-uuid"), "the message names the requirement");
	ok(commit(&m,
		  "{\"requirements\":[{\"type\":\"assert-view-uuid\",\"uuid\":\"6F2C4A1E-8A9B-4D5E-"
		  "9F10-2B3C4D5E6F70\"}],\"updates\":[]}",
		  NOW) == ICE_OK,
	   "assert-view-uuid compares uuids case-insensitively (%s)", err);
	ok(commit(&m, "{\"requirements\":[{\"type\":\"assert-table-uuid\",\"uuid\":\"" UUID "\"}]}",
		  NOW) == ICE_BAD,
	   "a table requirement is refused as malformed (%s)", err);
	ok(commit(&m, "{\"requirements\":[{\"type\":\"assert-create\"}]}", NOW) == ICE_BAD,
	   "assert-create is refused as malformed (%s)", err);
	ok(commit(&m,
		  "{\"requirements\":[{\"type\":\"assert-view-uuid\",\"uuid\":\"other\"},"
		  "{\"type\":\"assert-view-uuid\"}]}",
		  NOW) == ICE_BAD,
	   "a malformed requirement after a conflicting one: malformed (%s)", err);
	ok(commit(&m, "{\"requirements\":{}}", NOW) == ICE_BAD, "requirements not a list (%s)", err);
	ok(commit(&m, "{\"requirements\":[1]}", NOW) == ICE_BAD, "a requirement not an object (%s)",
	   err);
	jt_free(m);
}

static void bad_update(jt **m, const char *updates, const char *what)
{
	char body[2048];
	snprintf(body, sizeof(body), "{\"requirements\":[],\"updates\":[%s]}", updates);
	ok(commit(m, body, NOW) == ICE_BAD && err[0], "refused: %s (%s)", what, err);
}

static void test_updates(void)
{
	jt *m = create(create_req);
	if (!m)
		return;
	ok(commit(&m, "{\"updates\":[{\"action\":\"assign-uuid\",\"uuid\":\"" UUID "\"}]}", NOW) ==
		   ICE_OK,
	   "assign-uuid with the view's own uuid (%s)", err);
	bad_update(&m, "{\"action\":\"assign-uuid\",\"uuid\":\"another\"}", "assign-uuid: reassign");
	bad_update(&m, "{\"action\":\"assign-uuid\"}", "assign-uuid without uuid");

	ok(commit(&m, "{\"updates\":[{\"action\":\"upgrade-format-version\",\"format-version\":1}]}",
		  NOW) == ICE_OK,
	   "upgrade-format-version to 1 (%s)", err);
	bad_update(&m, "{\"action\":\"upgrade-format-version\",\"format-version\":2}",
		   "upgrade-format-version to 2 (views have only 1)");
	bad_update(&m, "{\"action\":\"upgrade-format-version\",\"format-version\":0}",
		   "upgrade-format-version down");
	bad_update(&m, "{\"action\":\"upgrade-format-version\",\"format-version\":\"1\"}",
		   "upgrade-format-version as a string");

	ok(commit(&m, "{\"updates\":[{\"action\":\"add-schema\",\"schema\":" SCHEMA2 "}]}", NOW) ==
		   ICE_OK,
	   "add-schema (%s)", err);
	is_int(geti(jt_at(jt_get(m, "schemas"), 1), "schema-id"), 1, "add-schema: id max + 1");
	ok(commit(&m, "{\"updates\":[{\"action\":\"add-schema\",\"schema\":" SCHEMA1 "}]}", NOW) ==
		   ICE_OK,
	   "add-schema of an existing schema (%s)", err);
	is_int(jt_len(jt_get(m, "schemas")), 2, "add-schema: an identical schema is not added again");
	bad_update(&m, "{\"action\":\"add-schema\"}", "add-schema without schema");
	bad_update(&m, "{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\",\"fields\":["
		       "{\"id\":1,\"name\":\"a\",\"required\":true,\"type\":\"int\"},"
		       "{\"id\":1,\"name\":\"b\",\"required\":true,\"type\":\"int\"}]}}",
		   "add-schema with a field id twice");
	bad_update(&m, "{\"action\":\"add-schema\",\"schema\":" SCHEMA2 ",\"last-column-id\":\"x\"}",
		   "add-schema with a last-column-id that is not a number");

	ok(commit(&m, "{\"updates\":[{\"action\":\"set-location\",\"location\":\"s3://new/v\"}]}",
		  NOW) == ICE_OK,
	   "set-location (%s)", err);
	is_str(jt_get_str(m, "location"), "s3://new/v", "set-location: the location is set");
	bad_update(&m, "{\"action\":\"set-location\",\"location\":\"\"}", "set-location empty");

	ok(commit(&m,
		  "{\"updates\":[{\"action\":\"set-properties\",\"updates\":{\"a\":\"1\",\"b\":\"2\"}},"
		  "{\"action\":\"remove-properties\",\"removals\":[\"comment\",\"b\",\"absent\"]}]}",
		  NOW) == ICE_OK,
	   "set-properties, remove-properties (%s)", err);
	is_str(jt_get_str(jt_get(m, "properties"), "a"), "1", "set-properties: a is set");
	ok(!jt_get(jt_get(m, "properties"), "b") && !jt_get(jt_get(m, "properties"), "comment"),
	   "remove-properties: b and comment are gone");
	bad_update(&m, "{\"action\":\"set-properties\",\"updates\":{\"a\":1}}",
		   "set-properties with a number");
	bad_update(&m, "{\"action\":\"remove-properties\",\"removals\":[1]}",
		   "remove-properties with a number");
	bad_update(&m, "{\"action\":\"set-properties\",\"updates\":{\"version.history.num-entries\":"
		       "\"ten\"}}",
		   "version.history.num-entries not a number");

	bad_update(&m, "{\"action\":\"add-view-version\",\"view-version\":{\"version-id\":5,"
		       "\"timestamp-ms\":1,\"schema-id\":-1,\"summary\":{},\"representations\":" SQL1
		       ",\"default-namespace\":[]}}",
		   "add-view-version on -1 when the commit added no schema");
	bad_update(&m, "{\"action\":\"add-view-version\",\"view-version\":{\"version-id\":5,"
		       "\"timestamp-ms\":1,\"schema-id\":9,\"summary\":{},\"representations\":" SQL1
		       ",\"default-namespace\":[]}}",
		   "add-view-version on a schema that does not exist");
	bad_update(&m, "{\"action\":\"add-view-version\",\"view-version\":{\"version-id\":5,"
		       "\"schema-id\":0,\"summary\":{},\"representations\":" SQL1
		       ",\"default-namespace\":[]}}",
		   "add-view-version without timestamp-ms");
	bad_update(&m, "{\"action\":\"add-view-version\"}", "add-view-version without a version");
	bad_update(&m, "{\"action\":\"set-current-view-version\",\"view-version-id\":-1}",
		   "set-current-view-version -1 when the commit added none");
	bad_update(&m, "{\"action\":\"set-current-view-version\",\"view-version-id\":4}",
		   "set-current-view-version to a version that does not exist");
	bad_update(&m, "{\"action\":\"set-current-view-version\"}",
		   "set-current-view-version without an id");

	bad_update(&m, "{\"action\":\"set-location\",\"location\":\"s3://ok\"},"
		       "{\"action\":\"add-snapshot\",\"snapshot\":{}}",
		   "a table update after a good one (nothing applied)");
	is_str(jt_get_str(m, "location"), "s3://new/v", "the good update was not applied");
	bad_update(&m, "{\"action\":\"remove-snapshots\",\"snapshot-ids\":[]}", "a table update");
	bad_update(&m, "{\"action\":\"frobnicate\"}", "an unknown update");
	bad_update(&m, "{}", "an update without action");
	bad_update(&m, "7", "an update not an object");
	ok(commit(&m, "{\"updates\":{}}", NOW) == ICE_BAD, "updates not a list (%s)", err);
	ok(commit(&m, "[]", NOW) == ICE_BAD, "a body not an object (%s)", err);
	jt_free(m);
}

static void test_dialects(void)
{
	jt *m = create(create_req);
	const char *trino_only =
		"{\"updates\":[{\"action\":\"add-view-version\",\"view-version\":{\"version-id\":2,"
		"\"timestamp-ms\":10,\"schema-id\":0,\"summary\":{},\"representations\":[{\"type\":"
		"\"sql\",\"sql\":\"SELECT 1\",\"dialect\":\"trino\"}],\"default-namespace\":[]}},"
		"{\"action\":\"set-current-view-version\",\"view-version-id\":-1}]}";
	if (!m)
		return;
	ok(commit(&m, trino_only, NOW) == ICE_BAD, "a replace dropping dialect spark is refused (%s)",
	   err);
	ok(commit(&m,
		  "{\"updates\":[{\"action\":\"add-view-version\",\"view-version\":{\"version-id\":2,"
		  "\"timestamp-ms\":10,\"schema-id\":0,\"summary\":{},\"representations\":[{\"type\":"
		  "\"sql\",\"sql\":\"SELECT 1\",\"dialect\":\"trino\"},{\"type\":\"sql\",\"sql\":"
		  "\"SELECT 1\",\"dialect\":\"SPARK\"}],\"default-namespace\":[]}},"
		  "{\"action\":\"set-current-view-version\",\"view-version-id\":-1}]}",
		  NOW) == ICE_OK,
	   "a replace keeping spark (in other case) and adding trino (%s)", err);
	ok(commit(&m,
		  "{\"updates\":[{\"action\":\"set-properties\",\"updates\":{"
		  "\"replace.drop-dialect.allowed\":\"true\"}},{\"action\":\"add-view-version\","
		  "\"view-version\":{\"version-id\":3,\"timestamp-ms\":11,\"schema-id\":0,"
		  "\"summary\":{},\"representations\":[{\"type\":\"sql\",\"sql\":\"SELECT 2\","
		  "\"dialect\":\"trino\"}],\"default-namespace\":[]}},"
		  "{\"action\":\"set-current-view-version\",\"view-version-id\":-1}]}",
		  NOW) == ICE_OK,
	   "with replace.drop-dialect.allowed a dialect may go (%s)", err);
	jt_free(m);
}

/* Adds version n with its own SQL and makes it current. */
static ice_rc add_version(jt **m, int n)
{
	char body[1024];
	snprintf(body, sizeof(body),
		 "{\"updates\":[{\"action\":\"add-view-version\",\"view-version\":{"
		 "\"version-id\":%d,\"timestamp-ms\":%d,\"schema-id\":0,\"summary\":{},"
		 "\"representations\":[{\"type\":\"sql\",\"sql\":\"SELECT %d\",\"dialect\":"
		 "\"spark\"}],\"default-namespace\":[]}},"
		 "{\"action\":\"set-current-view-version\",\"view-version-id\":-1}]}",
		 n, n, n);
	return commit(m, body, NOW + n);
}

static void test_history(void)
{
	jt *m = create(create_req), *log;
	int good = 1;
	if (!m)
		return;
	for (int n = 2; n <= 12; n++)
		good &= add_version(&m, n) == ICE_OK;
	ok(good, "eleven replaces commit (%s)", err);
	is_int(jt_len(jt_get(m, "versions")), 10, "default history: 10 versions kept");
	ok(!version(m, 1) && !version(m, 2) && version(m, 3) && version(m, 12),
	   "the oldest ones (1, 2) are dropped");
	log = jt_get(m, "version-log");
	is_int(jt_len(log), 10, "the version log starts after the dropped versions");
	is_int(geti(jt_at(log, 0), "version-id"), 3, "the log's first entry is version 3");

	ok(commit(&m,
		  "{\"updates\":[{\"action\":\"set-properties\",\"updates\":{"
		  "\"version.history.num-entries\":\"3\"}},"
		  "{\"action\":\"set-current-view-version\",\"view-version-id\":4}]}",
		  NOW + 100) == ICE_OK,
	   "history 3, an old version made current (%s)", err);
	is_int(jt_len(jt_get(m, "versions")), 3, "3 versions kept");
	ok(version(m, 4) && version(m, 11) && version(m, 12),
	   "the current (old) version is kept with the two newest");
	log = jt_get(m, "version-log");
	is_int(jt_len(log), 3, "the log keeps what follows its last dropped version (10)");
	ok(geti(jt_at(log, 0), "version-id") == 11 && geti(jt_at(log, 2), "version-id") == 4,
	   "the log is 11, 12, then 4");
	is_int(geti(m, "current-version-id"), 4, "version 4 is current");

	ok(commit(&m,
		  "{\"updates\":[{\"action\":\"set-properties\",\"updates\":{"
		  "\"version.history.num-entries\":\"1\"}}]}",
		  NOW + 200) == ICE_OK,
	   "history 1 (%s)", err);
	is_int(jt_len(jt_get(m, "versions")), 1, "only the current version is left");
	ok(version(m, 4) != NULL, "and it is the current one");
	jt_free(m);
}

static void bad_parse(const char *doc, const char *what)
{
	jt *m = ice_view_parse(doc, strlen(doc), err, sizeof(err));
	ok(m == NULL && err[0], "parse refused: %s (%s)", what, err);
	jt_free(m);
}

#define META(uuid_fv, cur, versions, log)                                                   \
	"{" uuid_fv ",\"location\":\"s3://w/v\",\"schemas\":[" SCHEMA1 "]," cur               \
	",\"versions\":[" versions "],\"version-log\":" log "}"
#define V7(id) "{\"version-id\":" id ",\"timestamp-ms\":1,\"schema-id\":7,\"summary\":{}," \
	       "\"representations\":" SQL1 ",\"default-namespace\":[]}"
#define UFV "\"view-uuid\":\"u\",\"format-version\":1"

static void test_parse(void)
{
	const char *good = META(UFV, "\"current-version-id\":1", V7("1"),
				"[{\"timestamp-ms\":1,\"version-id\":1}]");
	jt *m = ice_view_parse(good, strlen(good), err, sizeof(err));
	ok(m != NULL, "parse: a minimal view (%s)", m ? "" : err);
	jt_free(m);
	bad_parse("nonsense", "not JSON");
	bad_parse("[1]", "not an object");
	bad_parse(META("\"view-uuid\":\"u\",\"format-version\":2", "\"current-version-id\":1",
		       V7("1"), "[]"),
		  "format-version 2");
	bad_parse(META("\"format-version\":1", "\"current-version-id\":1", V7("1"), "[]"),
		  "no view-uuid");
	bad_parse(META(UFV, "\"current-version-id\":2", V7("1"), "[]"),
		  "current-version-id not in versions");
	bad_parse(META(UFV, "\"current-version-id\":1", V7("1") "," V7("1"), "[]"),
		  "a version id twice");
	bad_parse(META(UFV, "\"current-version-id\":1",
		       "{\"version-id\":1,\"timestamp-ms\":1,\"schema-id\":3,\"summary\":{},"
		       "\"representations\":" SQL1 ",\"default-namespace\":[]}",
		       "[]"),
		  "a version on a schema that does not exist");
	bad_parse(META(UFV, "\"current-version-id\":1", V7("1"), "{}"), "version-log not a list");
	bad_parse(META(UFV, "\"current-version-id\":1", V7("1"), "[{\"version-id\":1}]"),
		  "a version-log entry without timestamp-ms");
	bad_parse(META(UFV, "\"current-version-id\":1.5", V7("1"), "[]"),
		  "current-version-id not an integer");
	bad_parse(META(UFV, "\"current-version-id\":4294967297", V7("4294967297"), "[]"),
		  "a version id beyond 32 bits");
	bad_parse("{" UFV ",\"location\":\"s3://w/v\",\"schemas\":[" SCHEMA1 "," SCHEMA1 "],"
		  "\"current-version-id\":1,\"versions\":[" V7("1") "],\"version-log\":[]}",
		  "a schema id twice");
}

int main(void)
{
	test_create();
	test_create_bad();
	test_replace();
	test_requirements();
	test_updates();
	test_dialects();
	test_history();
	test_parse();
	return done_testing();
}
