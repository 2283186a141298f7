/*
 * The catalogs' storage model (catalog/table_store.h): the S3 Tables name
 * rules, the namespace flattening and the table attribute's JSON round trip.
 * The filer side runs in tests/integration/test_s3tables.py.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "catalog/table_store.h"
#include "client/entry.h"
#include "tap.h"

static void names(void)
{
	static const char *const good_buckets[] = {"abc", "my-bucket-1", "0x9",
						   "a23456789012345678901234567890123456789012345678901234567890123",
						   NULL};
	static const char *const bad_buckets[] = {"ab", "-abc", "abc-", "Abc", "a_b", "a.b", "a/b",
						  "xn--abc", "sthree-x", "amzn-s3-demo-x",
						  "abc-s3alias", "abc--ol-s3", "abc--x-s3",
						  "abc--table-s3", "..", "",
						  "a234567890123456789012345678901234567890123456789012345678901234",
						  NULL};
	static const char *const good_names[] = {"a", "sales", "t_1", "9z", NULL};
	static const char *const bad_names[] = {"", "_a", "a_", "A", "a-b", "a.b", "a/b", "..",
						"a b", NULL};
	char why[TS_WHY_MAX], big[300];

	for (size_t i = 0; good_buckets[i]; i++)
		ok(ts_valid_bucket_name(good_buckets[i], why), "bucket %s is valid", good_buckets[i]);
	for (size_t i = 0; bad_buckets[i]; i++)
		ok(!ts_valid_bucket_name(bad_buckets[i], why) && *why, "bucket '%s' refused: %s",
		   bad_buckets[i], why);
	for (size_t i = 0; good_names[i]; i++)
		ok(ts_valid_table_name(good_names[i], why) &&
			   ts_valid_namespace_name(good_names[i], why),
		   "name %s is valid", good_names[i]);
	for (size_t i = 0; bad_names[i]; i++)
		ok(!ts_valid_table_name(bad_names[i], why) &&
			   !ts_valid_namespace_name(bad_names[i], why),
		   "name '%s' refused: %s", bad_names[i], why);
	ok(!ts_valid_namespace_name("awsdata", why) && ts_valid_table_name("awsdata", why),
	   "the aws prefix is reserved for namespaces only");
	ok(!ts_valid_table_name("a\0b", why) || strlen("a\0b") == 1, "a NUL ends the name");
	memset(big, 'a', 256);
	big[256] = '\0';
	ok(!ts_valid_table_name(big, why), "256 characters refused");
	big[255] = '\0';
	ok(ts_valid_table_name(big, why), "255 characters taken");
}

static void flattening(void)
{
	const char *two[] = {"sales", "eu"}, *bad[] = {"sales", "e.u"};
	const char *many[TS_NS_LEVELS_MAX + 1];
	char why[TS_WHY_MAX], *d;

	d = ts_namespace_dir(two, 2, why);
	is_str(d, "sales.eu", "levels joined with a dot");
	free(d);
	ok(!ts_namespace_dir(bad, 2, why), "a level holding a dot refused");
	ok(!ts_namespace_dir(two, 0, why), "no level refused");
	for (size_t i = 0; i <= TS_NS_LEVELS_MAX; i++)
		many[i] = "x";
	ok(!ts_namespace_dir(many, TS_NS_LEVELS_MAX + 1, why), "too many levels refused");
}

static void table_json(void)
{
	struct ts_table t = {0}, back = {0};
	char *json;

	t.format = "ICEBERG";
	t.arn = "arn:aws:s3tables:us-east-1:000000000000:bucket/b/table/x";
	t.version_token = "tok";
	t.metadata_location = "s3://b/n/t/metadata/1.json";
	t.warehouse = "s3://b/n/t";
	t.created_by = t.modified_by = t.owner = "000000000000";
	t.created_ms = 1;
	t.modified_ms = 1700000000123;
	json = ts_table_json(&t);
	ok(ts_table_from_json(json, strlen(json), &back), "the attribute reads back");
	is_str(back.metadata_location, t.metadata_location, "metadata location kept");
	is_str(back.version_token, "tok", "version token kept");
	ok(back.modified_ms == 1700000000123, "times exact");
	free(json);
	ts_table_free(&back);
	ok(!ts_table_from_json("{\"format\": 1}", 13, &back), "a malformed attribute refused");
	ts_table_free(&back);
	ok(!ts_table_from_json("[", 1, &back), "broken JSON refused");
}

static void table_arns(void)
{
	static const char *const bad[] = {
		"arn:aws:s3tables:us-east-1:000000000000:bucket/b1x",
		"arn:aws:s3:us-east-1:000000000000:bucket/b1x/table/abc",
		"arn:aws:s3tables:us-east-1:000000000000:bucket/b1x/table/",
		"arn:aws:s3tables:us-east-1:000000000000:bucket/b1x/table/a.b",
		"arn:aws:s3tables:us-east-1:000000000000:bucket/b1x/table/a/b",
		"arn:aws:s3tables:us-east-1:000000000000:bucket/B_x/table/abc",
		"arn:aws:s3tables:us-east-1:000000000000:bucket//table/abc",
		NULL};
	struct filer_xattr mark = {TS_XATTR_TABLE, (uint8_t *)"{\"storageOf\":\"a\"}", 17};
	struct filer_xattr table = {TS_XATTR_TABLE, (uint8_t *)"{\"format\":\"ICEBERG\"}", 20};
	char *b = NULL, *id = NULL;

	ok(ts_table_arn_parse("arn:aws:s3tables:us-east-1:000000000000:bucket/b1x/table/Ab-9_z",
			      &b, &id),
	   "a table ARN parses");
	is_str(b, "b1x", "its bucket");
	is_str(id, "Ab-9_z", "its id");
	free(b);
	free(id);
	for (size_t i = 0; bad[i]; i++) {
		b = id = NULL;
		ok(!ts_table_arn_parse(bad[i], &b, &id) && !b && !id, "refused: %s", bad[i]);
	}
	ok(ts_is_storage(&mark), "a storage mark is one");
	ok(!ts_is_storage(&table) && !ts_is_storage(NULL), "a table attribute is none");
}

int main(void)
{
	names();
	flattening();
	table_json();
	table_arns();
	return done_testing();
}
