/*
 * The Iceberg metadata engine: create, then the commits pyiceberg, Spark and
 * DuckDB send (append, overwrite, schema and partition evolution, expiry),
 * conflicts, malformed and unknown input changing nothing, and v1 and v3 tables.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "catalog/iceberg_meta.h"
#include "tap.h"
#include "util.h"

#define UUID "9c12d441-03fe-4693-9a96-a0705ddf69c1"
#define LOC "s3://warehouse/db/events"
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
	ice_meta_write(v, &b);
	return buf_steal(&b, NULL);
}

/* A commit body given as text, applied to *m; the metadata text is kept unless it is ICE_OK. */
static ice_rc commit(jt **m, const char *body, const char *prev, int64_t now)
{
	jt *b = parse(body);
	char *before = *m ? text(*m) : NULL, *after;
	ice_rc rc;
	err[0] = '\0';
	rc = ice_commit(m, b, prev, now, err, sizeof(err));
	if (rc != ICE_OK && before) {
		after = text(*m);
		ok(!strcmp(before, after), "failed commit leaves the metadata as it was (%s)", err);
		free(after);
	}
	free(before);
	jt_free(b);
	return rc;
}

static int64_t geti(const jt *m, const char *key)
{
	int64_t v = -12345;
	jt_get_i64(m, key, &v);
	return v;
}

/* The metadata survives being written and read back. */
static void reparses(const jt *m, const char *what)
{
	char *t = text(m);
	jt *back = ice_meta_parse(t, strlen(t), err, sizeof(err));
	ok(back && jt_equal(back, m), "%s: written metadata reads back the same (%s)", what,
	   back ? "" : err);
	jt_free(back);
	free(t);
}

static const char *create_v2 =
	"{\"name\":\"events\",\"location\":null,"
	"\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"identifier-field-ids\":[],\"fields\":["
	"{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":true},"
	"{\"id\":2,\"name\":\"ts\",\"type\":\"timestamptz\",\"required\":false},"
	"{\"id\":3,\"name\":\"tags\",\"required\":false,\"type\":{\"type\":\"list\","
	"\"element-id\":4,\"element\":\"string\",\"element-required\":false}}]},"
	"\"partition-spec\":{\"spec-id\":0,\"fields\":[{\"source-id\":2,\"field-id\":1000,"
	"\"transform\":\"day\",\"name\":\"ts_day\"}]},"
	"\"write-order\":{\"order-id\":0,\"fields\":[]},"
	"\"stage-create\":false,\"properties\":{\"owner\":\"alice\"}}";

static jt *make_table(const char *req_text, char *msg)
{
	jt *req = parse(req_text), *m = NULL;
	ice_rc rc = ice_meta_create(req, UUID, LOC, NOW, &m, msg, 256);
	jt_free(req);
	return rc == ICE_OK ? m : NULL;
}

/* The v2 table of create_v2, reported as a test point. */
static jt *v2_table(const char *what)
{
	char msg[256] = "";
	jt *m = make_table(create_v2, msg);
	ok(m != NULL, "%s: create (%s)", what, msg);
	return m;
}

static void test_create(void)
{
	char msg[256] = "";
	jt *m = make_table(create_v2, msg), *req;
	char *name;

	ok(m != NULL, "create v2 (%s)", msg);
	if (!m)
		return;
	is_int(geti(m, "format-version"), 2, "format-version defaults to 2");
	is_str(jt_get_str(m, "table-uuid"), UUID, "table-uuid from the caller");
	is_str(jt_get_str(m, "location"), LOC, "location from the caller when the request has none");
	is_int(geti(m, "last-column-id"), 4, "last-column-id counts nested ids");
	is_int(geti(m, "last-partition-id"), 1000, "last-partition-id from the spec");
	is_int(geti(m, "last-sequence-number"), 0, "last-sequence-number 0");
	is_int(geti(m, "current-snapshot-id"), -1, "no current snapshot");
	is_int(geti(m, "default-sort-order-id"), 0, "unsorted order is id 0");
	is_int(jt_len(jt_get(m, "snapshots")), 0, "no snapshots");
	is_int(jt_len(jt_get(m, "refs")), 0, "no refs");
	is_str(jt_get_str(jt_get(m, "properties"), "owner"), "alice", "properties kept");
	reparses(m, "created v2");

	name = ice_meta_file_name(m, 0, "f00d");
	is_str(name, LOC "/metadata/00000-f00d.metadata.json", "first metadata file name");
	free(name);
	name = ice_meta_file_name(m, 123456, "f00d");
	is_int(ice_meta_file_version(name), 123456, "a version past 5 digits still parses");
	free(name);
	is_int(ice_meta_file_version("s3://b/t/metadata/00042-abc.metadata.json"), 42,
	       "version of a file name");
	is_int(ice_meta_file_version("s3://b/t/metadata/v3.metadata.json"), -1,
	       "a name not in that form is -1");
	jt_set(m, "location", jt_str("s3://b/t/"));
	name = ice_meta_file_name(m, 7, "u");
	is_str(name, "s3://b/t/metadata/00007-u.metadata.json", "location with a trailing slash");
	free(name);
	jt_free(m);

	/* Sorted write order, no partition-spec, location in the request. */
	m = make_table("{\"name\":\"t\",\"location\":\"s3://x/y\",\"schema\":{\"type\":\"struct\","
		       "\"fields\":[{\"id\":1,\"name\":\"a\",\"type\":\"int\",\"required\":true}]},"
		       "\"write-order\":{\"order-id\":1,\"fields\":[{\"transform\":\"identity\","
		       "\"source-id\":1,\"direction\":\"asc\",\"null-order\":\"nulls-first\"}]}}",
		       msg);
	ok(m && geti(m, "default-sort-order-id") == 1 && geti(m, "last-partition-id") == 999 &&
		   !strcmp(jt_get_str(m, "location"), "s3://x/y"),
	   "create: sorted order is id 1, unpartitioned last-partition-id 999 (%s)", msg);
	jt_free(m);

	/* Refused requests. */
	const char *bad[] = {
		"[]",
		"{\"schema\":{\"type\":\"struct\",\"fields\":[]}}",
		"{\"name\":\"t\"}",
		"{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\","
		"\"type\":\"int\",\"required\":true},{\"id\":1,\"name\":\"b\",\"type\":\"int\","
		"\"required\":true}]}}",
		"{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[]},"
		"\"partition-spec\":{\"fields\":[{\"source-id\":9,\"name\":\"p\","
		"\"transform\":\"identity\"}]}}",
		"{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[]},"
		"\"properties\":{\"format-version\":\"4\"}}",
		"{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[]},"
		"\"properties\":{\"n\":1}}",
		"{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[]},"
		"\"write-order\":{\"fields\":[{\"transform\":\"identity\",\"source-id\":3,"
		"\"direction\":\"asc\",\"null-order\":\"nulls-last\"}]}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		req = parse(bad[i]);
		m = NULL;
		is_int(ice_meta_create(req, UUID, LOC, NOW, &m, msg, sizeof(msg)), ICE_BAD,
		       "create refused");
		ok(!m && msg[0], "  with a message: %s", msg);
		jt_free(req);
	}
}

#define APPEND(id, seq, ts, req_id)                                                             \
	"{\"identifier\":{\"namespace\":[\"db\"],\"name\":\"events\"},\"requirements\":["       \
	"{\"type\":\"assert-table-uuid\",\"uuid\":\"" UUID "\"},"                                  \
	"{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\",\"snapshot-id\":" req_id "}],"     \
	"\"updates\":[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":" id ","         \
	"\"sequence-number\":" seq ",\"timestamp-ms\":" ts ",\"manifest-list\":\"" LOC            \
	"/metadata/snap-" id ".avro\",\"summary\":{\"operation\":\"append\",\"added-records\":"   \
	"\"3\"},\"schema-id\":0}},{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\","         \
	"\"type\":\"branch\",\"snapshot-id\":" id "}]}"

static void test_appends(void)
{
	jt *m = v2_table("appends"), *snap;
	char *t;
	const char *f0 = LOC "/metadata/00000-a.metadata.json";

	if (!m)
		return;
	/* pyiceberg's first append: main must not exist yet. */
	is_int(commit(&m, APPEND("3051729675574597004", "1", "1733000001000", "null"), f0,
		      NOW + 5000),
	       ICE_OK, "first append commits");
	is_str(jt_get(m, "current-snapshot-id")->s, "3051729675574597004", "main moved");
	is_int(geti(m, "last-sequence-number"), 1, "last-sequence-number 1");
	is_int(geti(m, "last-updated-ms"), 1733000001000LL, "last-updated-ms is the snapshot's");
	is_int(jt_len(jt_get(m, "snapshot-log")), 1, "snapshot-log has the snapshot");
	is_int(jt_len(jt_get(m, "metadata-log")), 1, "metadata-log has the previous file");
	is_str(jt_get_str(jt_at(jt_get(m, "metadata-log"), 0), "metadata-file"), f0,
	       "metadata-log names it");
	is_int(geti(jt_at(jt_get(m, "metadata-log"), 0), "timestamp-ms"), NOW,
	       "with its last-updated-ms");

	/* A second writer that also saw no snapshot loses. */
	is_int(commit(&m, APPEND("111", "1", "1733000002000", "null"), f0, NOW), ICE_CONFLICT,
	       "stale 'main must not exist' conflicts");
	ok(strstr(err, "assert-ref-snapshot-id") != NULL, "message names the requirement: %s", err);
	is_int(commit(&m, APPEND("111", "2", "1733000002000", "42"), f0, NOW), ICE_CONFLICT,
	       "stale snapshot id conflicts");

	/* DuckDB: an unsigned 64-bit id above INT64_MAX stays exact. */
	is_int(commit(&m, APPEND("18446744073709551557", "2", "1733000003000",
				 "3051729675574597004"),
		      LOC "/metadata/00001-b.metadata.json", NOW),
	       ICE_OK, "append with a u64 snapshot id");
	t = text(m);
	ok(strstr(t, "\"current-snapshot-id\":18446744073709551557") != NULL,
	   "u64 current-snapshot-id written exactly");
	free(t);
	is_int(commit(&m, APPEND("5", "3", "1733000004000", "18446744073709551557"), "f2", NOW),
	       ICE_OK, "assert-ref-snapshot-id matches a u64 id");
	is_int(commit(&m, APPEND("6", "3", "1733000004000", "5"), "f3", NOW), ICE_CONFLICT,
	       "a sequence number not above the table's conflicts");
	is_int(commit(&m, APPEND("5", "9", "1733000004000", "5"), "f3", NOW), ICE_BAD,
	       "adding an existing snapshot id is refused");

	/* Tags, expiry (Spark's expire_snapshots), ref removal. */
	is_int(commit(&m, "{\"requirements\":[],\"updates\":[{\"action\":\"set-snapshot-ref\","
			  "\"ref-name\":\"v1\",\"type\":\"tag\",\"snapshot-id\":3051729675574597004,"
			  "\"max-ref-age-ms\":86400000}]}",
		      "f3", NOW),
	       ICE_OK, "tag an old snapshot");
	is_str(jt_get_str(jt_get(jt_get(m, "refs"), "v1"), "type"), "tag", "tag ref written");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"remove-snapshots\",\"snapshot-ids\":"
			  "[3051729675574597004, 18446744073709551557, 77]}]}",
		      "f4", NOW),
	       ICE_OK, "remove snapshots");
	is_int(jt_len(jt_get(m, "snapshots")), 1, "one snapshot left");
	ok(!jt_get(jt_get(m, "refs"), "v1"), "the tag of a removed snapshot is gone");
	is_int(jt_len(jt_get(m, "snapshot-log")), 1, "snapshot-log keeps only what follows removals");
	is_str(jt_get(jt_at(jt_get(m, "snapshot-log"), 0), "snapshot-id")->s, "5",
	       "snapshot-log entry is the live snapshot");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\","
			  "\"type\":\"branch\",\"snapshot-id\":3051729675574597004}]}",
		      "f5", NOW),
	       ICE_BAD, "a ref to a missing snapshot is refused");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"remove-snapshot-ref\",\"ref-name\":\"main\"}]}",
		      "f5", NOW),
	       ICE_OK, "remove main");
	is_int(geti(m, "current-snapshot-id"), -1, "no current snapshot without main");
	snap = jt_get(jt_get(m, "refs"), "main");
	ok(!snap, "main ref gone");
	reparses(m, "after appends");
	jt_free(m);
}

static void test_schema_evolution(void)
{
	jt *m = v2_table("schema evolution");
	const char *evolve =
		"{\"requirements\":[{\"type\":\"assert-current-schema-id\",\"current-schema-id\":0},"
		"{\"type\":\"assert-last-assigned-field-id\",\"last-assigned-field-id\":4}],"
		"\"updates\":[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\","
		"\"schema-id\":1,\"fields\":[{\"id\":1,\"name\":\"id\",\"type\":\"long\","
		"\"required\":true},{\"id\":2,\"name\":\"ts\",\"type\":\"timestamptz\","
		"\"required\":false},{\"id\":3,\"name\":\"tags\",\"required\":false,\"type\":{"
		"\"type\":\"list\",\"element-id\":4,\"element\":\"string\",\"element-required\":"
		"false}},{\"id\":5,\"name\":\"country\",\"type\":\"string\",\"required\":false}]},"
		"\"last-column-id\":5},{\"action\":\"set-current-schema\",\"schema-id\":-1}]}";

	if (!m)
		return;
	is_int(commit(&m, evolve, "f0", NOW + 1), ICE_OK, "Spark ADD COLUMN commits");
	is_int(geti(m, "current-schema-id"), 1, "current schema is the added one");
	is_int(geti(m, "last-column-id"), 5, "last-column-id 5");
	is_int(jt_len(jt_get(m, "schemas")), 2, "two schemas");
	is_int(geti(m, "last-updated-ms"), NOW + 1, "last-updated-ms is now without a snapshot");
	is_int(commit(&m, evolve, "f1", NOW + 2), ICE_CONFLICT, "the same change again conflicts");
	ok(strstr(err, "assert-current-schema-id") != NULL, "names the requirement: %s", err);

	/* Back to schema 0: re-adding an identical schema reuses its id. */
	is_int(commit(&m, "{\"updates\":[{\"action\":\"set-current-schema\",\"schema-id\":0}]}",
		      "f1", NOW),
	       ICE_OK, "set-current-schema by id");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"set-current-schema\",\"schema-id\":-1}]}",
		      "f1", NOW),
	       ICE_BAD, "-1 without an added schema is refused");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"remove-schemas\",\"schema-ids\":[0]}]}", "f1",
		      NOW),
	       ICE_BAD, "the current schema cannot be removed");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"remove-schemas\",\"schema-ids\":[1]}]}", "f1",
		      NOW),
	       ICE_OK, "remove an old schema");
	is_int(jt_len(jt_get(m, "schemas")), 1, "one schema left");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\","
			  "\"fields\":[]},\"last-column-id\":2}]}",
		      "f1", NOW),
	       ICE_BAD, "last-column-id going backwards is refused");

	/* Partition evolution and sort orders. */
	is_int(commit(&m, "{\"requirements\":[{\"type\":\"assert-last-assigned-partition-id\","
			  "\"last-assigned-partition-id\":1000},{\"type\":\"assert-default-spec-id\","
			  "\"default-spec-id\":0}],\"updates\":[{\"action\":\"add-spec\",\"spec\":{"
			  "\"fields\":[{\"source-id\":2,\"field-id\":1000,\"transform\":\"day\","
			  "\"name\":\"ts_day\"},{\"source-id\":1,\"transform\":\"bucket[16]\","
			  "\"name\":\"id_bucket\"}]}},{\"action\":\"set-default-spec\",\"spec-id\":-1},"
			  "{\"action\":\"add-sort-order\",\"sort-order\":{\"order-id\":1,\"fields\":[{"
			  "\"transform\":\"identity\",\"source-id\":1,\"direction\":\"desc\","
			  "\"null-order\":\"nulls-last\"}]}},{\"action\":\"set-default-sort-order\","
			  "\"sort-order-id\":-1}]}",
		      "f2", NOW),
	       ICE_OK, "partition evolution and a sort order");
	is_int(geti(m, "default-spec-id"), 1, "new default spec 1");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"add-spec\",\"spec\":{\"fields\":[{"
			  "\"source-id\":99,\"transform\":\"identity\",\"name\":\"x\"}]}}]}",
		      "f2", NOW),
	       ICE_BAD, "a partition field on a missing column is refused");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"add-sort-order\",\"sort-order\":{"
			  "\"fields\":[{\"transform\":\"identity\",\"source-id\":99,\"direction\":"
			  "\"asc\",\"null-order\":\"nulls-first\"}]}}]}",
		      "f2", NOW),
	       ICE_BAD, "a sort field on a missing column is refused");
	is_int(geti(m, "last-partition-id"), 1001, "the new partition field got 1001");
	is_int(geti(m, "default-sort-order-id"), 1, "new default sort order 1");
	is_int(commit(&m, "{\"requirements\":[{\"type\":\"assert-default-sort-order-id\","
			  "\"default-sort-order-id\":0}],\"updates\":[]}",
		      "f3", NOW),
	       ICE_CONFLICT, "assert-default-sort-order-id stale");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"remove-partition-specs\",\"spec-ids\":[0]}]}",
		      "f3", NOW),
	       ICE_OK, "remove the old spec");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"remove-partition-specs\",\"spec-ids\":[1]}]}",
		      "f3", NOW),
	       ICE_BAD, "the default spec cannot be removed");

	/* Properties and location. */
	is_int(commit(&m, "{\"updates\":[{\"action\":\"set-properties\",\"updates\":{\"a\":\"1\","
			  "\"owner\":\"bob\"}},{\"action\":\"remove-properties\",\"removals\":[\"a\","
			  "\"nope\"]},{\"action\":\"set-location\",\"location\":\"s3://w/new\"}]}",
		      "f3", NOW),
	       ICE_OK, "properties and location");
	is_str(jt_get_str(jt_get(m, "properties"), "owner"), "bob", "property replaced");
	ok(!jt_get(jt_get(m, "properties"), "a"), "property removed");
	is_str(jt_get_str(m, "location"), "s3://w/new", "location set");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"set-properties\",\"updates\":{\"a\":1}}]}",
		      "f3", NOW),
	       ICE_BAD, "a non-string property is refused");
	reparses(m, "after evolution");
	jt_free(m);
}

static void test_bad_commits(void)
{
	jt *m = v2_table("bad commits");
	if (!m)
		return;
	is_int(commit(&m, "{\"updates\":[{\"action\":\"set-properties\",\"updates\":{\"a\":\"1\"}},"
			  "{\"action\":\"frobnicate\"}]}",
		      "f", NOW),
	       ICE_BAD, "an unknown update action is 400");
	ok(strstr(err, "frobnicate") != NULL, "named: %s", err);
	ok(!jt_get(jt_get(m, "properties"), "a"), "the update before it did not land");
	is_int(commit(&m, "{\"requirements\":[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\","
			  "\"snapshot-id\":1},{\"type\":\"assert-magic\"}],\"updates\":[]}",
		      "f", NOW),
	       ICE_BAD, "an unknown requirement is 400 even after a conflicting one");
	is_int(commit(&m, "{\"requirements\":[{\"type\":\"assert-create\"}],\"updates\":[]}", "f",
		      NOW),
	       ICE_CONFLICT, "assert-create on an existing table conflicts");
	is_int(commit(&m, "{\"requirements\":[{\"type\":\"assert-table-uuid\",\"uuid\":"
			  "\"00000000-0000-0000-0000-000000000000\"}],\"updates\":[]}",
		      "f", NOW),
	       ICE_CONFLICT, "assert-table-uuid mismatch conflicts");
	is_int(commit(&m, "{\"requirements\":{},\"updates\":[]}", "f", NOW), ICE_BAD,
	       "requirements not an array");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"upgrade-format-version\","
			  "\"format-version\":1}]}",
		      "f", NOW),
	       ICE_BAD, "downgrade refused");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\","
			  "\"fields\":[{\"id\":1,\"name\":\"x\",\"type\":{\"type\":\"weird\"},"
			  "\"required\":true}]}}]}",
		      "f", NOW),
	       ICE_BAD, "a malformed schema is refused");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"enable-row-lineage\"}]}", "f", NOW), ICE_BAD,
	       "row lineage needs v3");
	is_int(commit(&m, "[1]", "f", NOW), ICE_BAD, "a body that is not an object");
	jt_free(m);
}

static void test_statistics(void)
{
	jt *m = v2_table("statistics");
	if (!m)
		return;
	is_int(commit(&m, APPEND("10", "1", "1733000001000", "null"), "f", NOW), ICE_OK, "append");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"set-statistics\",\"snapshot-id\":10,"
			  "\"statistics\":{\"snapshot-id\":10,\"statistics-path\":\"s3://w/s.puffin\","
			  "\"file-size-in-bytes\":100,\"file-footer-size-in-bytes\":10,"
			  "\"blob-metadata\":[]}},{\"action\":\"set-statistics\",\"statistics\":{"
			  "\"snapshot-id\":10,\"statistics-path\":\"s3://w/s2.puffin\","
			  "\"file-size-in-bytes\":200,\"file-footer-size-in-bytes\":10,"
			  "\"blob-metadata\":[]}},{\"action\":\"set-partition-statistics\","
			  "\"partition-statistics\":{\"snapshot-id\":10,\"statistics-path\":"
			  "\"s3://w/p.parquet\",\"file-size-in-bytes\":5}}]}",
		      "f", NOW),
	       ICE_OK, "set statistics");
	is_int(jt_len(jt_get(m, "statistics")), 1, "one statistics file per snapshot");
	is_str(jt_get_str(jt_at(jt_get(m, "statistics"), 0), "statistics-path"), "s3://w/s2.puffin",
	       "the later replaced the earlier");
	is_int(jt_len(jt_get(m, "partition-statistics")), 1, "partition statistics set");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"remove-statistics\",\"snapshot-id\":10},"
			  "{\"action\":\"remove-partition-statistics\",\"snapshot-id\":10}]}",
		      "f", NOW),
	       ICE_OK, "remove statistics");
	ok(!jt_len(jt_get(m, "statistics")) && !jt_len(jt_get(m, "partition-statistics")),
	   "statistics gone");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"set-statistics\",\"statistics\":{}}]}", "f",
		      NOW),
	       ICE_BAD, "malformed statistics refused");

	/* Only write.metadata.previous-versions-max entries are kept. */
	is_int(commit(&m, "{\"updates\":[{\"action\":\"set-properties\",\"updates\":{"
			  "\"write.metadata.previous-versions-max\":\"2\"}}]}",
		      "g1", NOW),
	       ICE_OK, "cap the metadata log");
	is_int(commit(&m, "{\"updates\":[]}", "g2", NOW), ICE_OK, "an empty commit");
	is_int(jt_len(jt_get(m, "metadata-log")), 2, "metadata-log capped at 2");
	is_str(jt_get_str(jt_at(jt_get(m, "metadata-log"), 1), "metadata-file"), "g2",
	       "newest entry last");
	jt_free(m);
}

static const char *v1_doc =
	"{\"format-version\":1,\"table-uuid\":\"" UUID "\",\"location\":\"s3://w/v1\","
	"\"last-updated-ms\":1600000000000,\"last-column-id\":2,"
	"\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":true,"
	"\"type\":\"long\"},{\"id\":2,\"name\":\"b\",\"required\":false,\"type\":\"string\"}]},"
	"\"partition-spec\":[{\"name\":\"b\",\"transform\":\"identity\",\"source-id\":2}],"
	"\"properties\":{},\"current-snapshot-id\":-1,\"snapshots\":[]}";

static void test_v1(void)
{
	jt *m = ice_meta_parse(v1_doc, strlen(v1_doc), err, sizeof(err));
	if (!ok(m != NULL, "v1 metadata parses (%s)", m ? "" : err))
		return;
	is_int(jt_len(jt_get(m, "schemas")), 1, "v1: schemas filled from schema");
	is_int(geti(m, "default-spec-id"), 0, "v1: default spec 0");
	is_int(geti(m, "last-partition-id"), 1000, "v1: partition field ids from 1000");
	is_int(geti(m, "default-sort-order-id"), 0, "v1: unsorted order");
	is_int(commit(&m, "{\"requirements\":[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\","
			  "\"snapshot-id\":null}],\"updates\":[{\"action\":\"add-snapshot\","
			  "\"snapshot\":{\"snapshot-id\":1,\"timestamp-ms\":1600000001000,"
			  "\"manifest-list\":\"s3://w/v1/metadata/snap-1.avro\"}},{\"action\":"
			  "\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"branch\","
			  "\"snapshot-id\":1}]}",
		      "s3://w/v1/metadata/00000-x.metadata.json", NOW),
	       ICE_OK, "v1 append without sequence numbers");
	ok(!jt_get(m, "last-sequence-number"), "v1 has no last-sequence-number");
	ok(jt_get(m, "schema") && jt_get(m, "partition-spec"), "v1 keeps schema and partition-spec");
	reparses(m, "v1 after append");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"upgrade-format-version\","
			  "\"format-version\":2}]}",
		      "f", NOW),
	       ICE_OK, "upgrade v1 -> v2");
	is_int(geti(m, "format-version"), 2, "now v2");
	is_int(geti(m, "last-sequence-number"), 0, "last-sequence-number appears");
	ok(!jt_get(m, "schema"), "v1-only schema field dropped");
	reparses(m, "upgraded v2");
	jt_free(m);
}

static void test_v3(void)
{
	char msg[256];
	jt *m = make_table("{\"name\":\"t\",\"schema\":{\"type\":\"struct\",\"fields\":[{\"id\":1,"
			   "\"name\":\"a\",\"type\":\"long\",\"required\":true}]},"
			   "\"properties\":{\"format-version\":\"3\"}}",
			   msg);
	char body[512];
#define SNAP3 "{\"updates\":[{\"action\":\"add-snapshot\",\"snapshot\":{\"snapshot-id\":" \
	      "%d,\"sequence-number\":%d,\"timestamp-ms\":1733000001000,"             \
	      "\"manifest-list\":\"s3://w/m.avro\",\"summary\":{\"operation\":"         \
	      "\"append\"}%s}}]}"

	if (!ok(m != NULL, "v3 create (%s)", msg))
		return;
	is_int(geti(m, "format-version"), 3, "format-version 3 from the property");
	ok(!jt_get(jt_get(m, "properties"), "format-version"), "the property itself is not kept");
	is_int(geti(m, "next-row-id"), 0, "next-row-id 0");
	snprintf(body, sizeof(body), SNAP3, 1, 1, "");
	is_int(commit(&m, body, "f", NOW), ICE_BAD, "v3 snapshot without first-row-id refused");
	snprintf(body, sizeof(body), SNAP3, 1, 1, ",\"first-row-id\":0,\"added-rows\":10");
	is_int(commit(&m, body, "f", NOW), ICE_OK, "v3 snapshot with row lineage");
	is_int(geti(m, "next-row-id"), 10, "next-row-id advanced by added-rows");
	snprintf(body, sizeof(body), SNAP3, 2, 2, ",\"first-row-id\":5,\"added-rows\":1");
	is_int(commit(&m, body, "f", NOW), ICE_CONFLICT, "first-row-id behind next-row-id conflicts");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"enable-row-lineage\"},{\"action\":"
			  "\"add-encryption-key\",\"encryption-key\":{\"key-id\":\"k1\","
			  "\"encrypted-key-metadata\":\"AAAA\"}}]}",
		      "f", NOW),
	       ICE_OK, "row lineage and an encryption key on v3");
	is_int(jt_len(jt_get(m, "encryption-keys")), 1, "key added");
	is_int(commit(&m, "{\"updates\":[{\"action\":\"remove-encryption-key\",\"key-id\":\"k1\"}]}",
		      "f", NOW),
	       ICE_OK, "key removed");
	is_int(jt_len(jt_get(m, "encryption-keys")), 0, "no keys");
	reparses(m, "v3");
	jt_free(m);
}

static void test_staged_create(void)
{
	jt *m = NULL;
	const char *body =
		"{\"requirements\":[{\"type\":\"assert-create\"}],\"updates\":["
		"{\"action\":\"assign-uuid\",\"uuid\":\"" UUID "\"},"
		"{\"action\":\"upgrade-format-version\",\"format-version\":2},"
		"{\"action\":\"add-schema\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,"
		"\"fields\":[{\"id\":1,\"name\":\"a\",\"type\":\"int\",\"required\":false}]},"
		"\"last-column-id\":1},{\"action\":\"set-current-schema\",\"schema-id\":-1},"
		"{\"action\":\"add-spec\",\"spec\":{\"spec-id\":0,\"fields\":[]}},"
		"{\"action\":\"set-default-spec\",\"spec-id\":-1},"
		"{\"action\":\"add-sort-order\",\"sort-order\":{\"order-id\":0,\"fields\":[]}},"
		"{\"action\":\"set-default-sort-order\",\"sort-order-id\":-1},"
		"{\"action\":\"set-location\",\"location\":\"s3://w/staged\"},"
		"{\"action\":\"set-properties\",\"updates\":{\"k\":\"v\"}}]}";

	ok(commit(&m, body, NULL, NOW) == ICE_OK, "staged create commits from empty (%s)", err);
	ok(m && !strcmp(jt_get_str(m, "table-uuid"), UUID) && geti(m, "last-column-id") == 1 &&
		   geti(m, "current-schema-id") == 0 && geti(m, "last-partition-id") == 999,
	   "staged create built the table");
	ok(m && !jt_len(jt_get(m, "metadata-log")), "a new table has no metadata-log");
	if (m)
		reparses(m, "staged create");
	jt_free(m);
	m = NULL;
	is_int(commit(&m, "{\"requirements\":[{\"type\":\"assert-create\"}],\"updates\":[]}", NULL,
		      NOW),
	       ICE_BAD, "staged create with no schema is refused");
	ok(!m, "and builds nothing");
	is_int(commit(&m, "{\"requirements\":[{\"type\":\"assert-current-schema-id\","
			  "\"current-schema-id\":0}],\"updates\":[]}",
		      NULL, NOW),
	       ICE_CONFLICT, "a requirement on a missing table conflicts");
}

static void test_bad_metadata(void)
{
	const char *bad[] = {
		"not json",
		"[]",
		"{\"format-version\":4}",
		"{\"format-version\":2,\"location\":\"s3://w\",\"last-updated-ms\":1,"
		"\"last-column-id\":0,\"schemas\":[],\"current-schema-id\":0}",
		/* v1 without schema */
		"{\"format-version\":1,\"location\":\"s3://w\",\"last-updated-ms\":1,"
		"\"last-column-id\":0,\"partition-spec\":[]}",
	};
	jt *m;
	char *t, *p;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		err[0] = '\0';
		m = ice_meta_parse(bad[i], strlen(bad[i]), err, sizeof(err));
		ok(!m && err[0], "bad metadata refused: %s", err);
		jt_free(m);
	}
	/* A ref to a snapshot that is not there. */
	t = xstrdup(v1_doc);
	p = strstr(t, "\"snapshots\":[]}");
	*p = '\0';
	{
		char doc[2048];
		snprintf(doc, sizeof(doc), "%s\"snapshots\":[],\"refs\":{\"main\":{\"snapshot-id\":9,"
					   "\"type\":\"branch\"}}}",
			 t);
		m = ice_meta_parse(doc, strlen(doc), err, sizeof(err));
		ok(!m && strstr(err, "does not exist"), "dangling ref refused: %s", err);
		jt_free(m);
	}
	free(t);
}

int main(void)
{
	test_create();
	test_appends();
	test_schema_evolution();
	test_bad_commits();
	test_statistics();
	test_v1();
	test_v3();
	test_staged_create();
	test_bad_metadata();
	return done_testing();
}
