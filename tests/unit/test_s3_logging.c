/*
 * Bucket logging (s3/s3_logging.c): the BucketLoggingStatus parser and its
 * stored form, the access-log record formatter and the log object keys.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "s3/s3_logging.h"
#include "tap.h"
#include "util.h"

#define STATUS(inner) \
	"<BucketLoggingStatus xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">" inner \
	"</BucketLoggingStatus>"
#define ENABLED(inner) STATUS("<LoggingEnabled>" inner "</LoggingEnabled>")

static enum s3_err parse(const char *doc, struct s3_logging_config *c)
{
	char msg[160];
	enum s3_err e = s3_logging_parse(doc, strlen(doc), c, msg, sizeof(msg));
	ok(e == S3_OK ? !msg[0] : msg[0] != '\0', "a refusal says why, an acceptance does not");
	return e;
}

/* The configuration's stored form read back, as GetBucketLogging writes it. */
static char *round_trip(const struct s3_logging_config *c)
{
	struct s3_logging_config back;
	buf stored = BUF_INIT, out = BUF_INIT;
	xml_w *w;
	char *v;

	s3_logging_encode(c, &stored);
	ok(s3_logging_decode((const char *)stored.data, stored.len, &back), "stored form reads");
	w = xml_w_new(&out);
	s3_logging_xml(w, &back);
	xml_w_free(w);
	buf_append(&out, "", 1);
	v = xstrdup(out.data);
	s3_logging_config_free(&back);
	buf_free(&stored);
	buf_free(&out);
	return v;
}

static void test_parse(void)
{
	struct s3_logging_config c;
	char *x;

	is_int(parse(STATUS(""), &c), S3_OK, "an empty status");
	ok(!c.target_bucket, "... turns logging off");
	is_int(parse("<BucketLoggingStatus/>", &c), S3_OK, "without a namespace too");

	is_int(parse(ENABLED("<TargetBucket>logs</TargetBucket><TargetPrefix>a/b/</TargetPrefix>"),
		     &c),
	       S3_OK, "target and prefix");
	is_str(c.target_bucket, "logs", "target");
	is_str(c.target_prefix, "a/b/", "prefix");
	is_int(c.keys, S3_LOG_KEYS_SIMPLE, "simple keys by default");
	c.owner = xstrdup("alice");
	x = round_trip(&c);
	ok(strstr(x, "<TargetBucket>logs</TargetBucket><TargetPrefix>a/b/</TargetPrefix>") != NULL,
	   "written back: %s", x);
	ok(!strstr(x, "TargetObjectKeyFormat") && !strstr(x, "TargetGrants"),
	   "nothing not configured");
	free(x);
	s3_logging_config_free(&c);

	is_int(parse(ENABLED("<TargetBucket>logs</TargetBucket><TargetPrefix></TargetPrefix>"
			     "<TargetObjectKeyFormat><PartitionedPrefix><PartitionDateSource>"
			     "DeliveryTime</PartitionDateSource></PartitionedPrefix>"
			     "</TargetObjectKeyFormat>"),
		     &c),
	       S3_OK, "partitioned by delivery time, empty prefix");
	is_int(c.keys, S3_LOG_KEYS_DELIVERY_TIME, "delivery time");
	x = round_trip(&c);
	ok(strstr(x, "<PartitionDateSource>DeliveryTime</PartitionDateSource>") != NULL,
	   "written back: %s", x);
	free(x);
	s3_logging_config_free(&c);

	is_int(parse(ENABLED("<TargetBucket>logs</TargetBucket><TargetPrefix>p</TargetPrefix>"
			     "<TargetObjectKeyFormat><SimplePrefix/></TargetObjectKeyFormat>"
			     "<TargetGrants><Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/"
			     "XMLSchema-instance\" xsi:type=\"CanonicalUser\"><ID>bob</ID>"
			     "</Grantee><Permission>READ</Permission></Grant><Grant><Grantee "
			     "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" "
			     "xsi:type=\"Group\"><URI>http://acs.amazonaws.com/groups/global/"
			     "AllUsers</URI></Grantee><Permission>FULL_CONTROL</Permission>"
			     "</Grant></TargetGrants>"),
		     &c),
	       S3_OK, "simple prefix and two grants");
	ok(c.grants != NULL, "grants kept");
	x = round_trip(&c);
	ok(strstr(x, "xsi:type=\"CanonicalUser\"><ID>bob</ID></Grantee><Permission>READ") != NULL,
	   "the user's grant written back: %s", x);
	ok(strstr(x, "<URI>http://acs.amazonaws.com/groups/global/AllUsers</URI></Grantee>"
		     "<Permission>FULL_CONTROL") != NULL,
	   "the group's grant written back");
	ok(strstr(x, "</TargetGrants><TargetPrefix>") != NULL, "grants before the prefix");
	free(x);
	s3_logging_config_free(&c);

	is_int(parse(ENABLED("<TargetPrefix>p</TargetPrefix>"), &c), S3_MALFORMED_XML,
	       "no TargetBucket");
	is_int(parse(ENABLED("<TargetBucket>logs</TargetBucket>"), &c), S3_MALFORMED_XML,
	       "no TargetPrefix");
	is_int(parse("<LoggingStatus/>", &c), S3_MALFORMED_XML, "another root");
	is_int(parse("<BucketLoggingStatus><LoggingEnabled>", &c), S3_MALFORMED_XML, "not XML");
	is_int(parse("", &c), S3_MALFORMED_XML, "no body");
	is_int(parse(ENABLED("<TargetBucket>l</TargetBucket><TargetPrefix>p</TargetPrefix>"
			     "<TargetObjectKeyFormat><SimplePrefix/><PartitionedPrefix/>"
			     "</TargetObjectKeyFormat>"),
		     &c),
	       S3_MALFORMED_XML, "both key formats");
	is_int(parse(ENABLED("<TargetBucket>l</TargetBucket><TargetPrefix>p</TargetPrefix>"
			     "<TargetObjectKeyFormat><PartitionedPrefix><PartitionDateSource>"
			     "Tomorrow</PartitionDateSource></PartitionedPrefix>"
			     "</TargetObjectKeyFormat>"),
		     &c),
	       S3_MALFORMED_XML, "an unknown date source");
	is_int(parse(ENABLED("<TargetBucket>l</TargetBucket><TargetPrefix>p</TargetPrefix>"
			     "<TargetGrants><Grant><Grantee><ID>x</ID></Grantee>"
			     "<Permission>WRITE_ACP</Permission></Grant></TargetGrants>"),
		     &c),
	       S3_MALFORMED_XML, "a permission logs cannot have");
	is_int(parse(ENABLED("<TargetBucket>l</TargetBucket><TargetPrefix>a&#10;b</TargetPrefix>"),
		     &c),
	       S3_INVALID_ARGUMENT, "a newline in the prefix");
	ok(!s3_logging_decode("logs\nprefix\nX\n\n", 16, &c), "a stored form with bad keys");
}

static void test_format(void)
{
	struct s3_log_record rec = {
		.owner = "alice",
		.bucket = "src",
		.time_ns = 1549411238000000000LL, /* 2019-02-06 00:00:38 */
		.remote_ip = "192.0.2.3",
		.requester = "bob",
		.request_id = "3E57427F3EXAMPLE",
		.operation = "REST.GET.OBJECT",
		.key = "dir/a b.txt",
		.method = "GET",
		.uri = "/src/dir/a%20b.txt?x=\"1\"",
		.status = 200,
		.bytes_sent = 113,
		.object_size = 113,
		.total_ms = 7,
		.turnaround_ms = 5,
		.user_agent = "Boto3/1.0 \"quoted\"",
		.signature_version = "SigV4",
		.auth_type = "AuthHeader",
		.host = "127.0.0.1:8333",
	};
	buf out = BUF_INIT;
	char op[48];

	s3_logging_format(&out, &rec);
	buf_append(&out, "", 1);
	is_str((const char *)out.data,
	       "alice src [06/Feb/2019:00:00:38 +0000] 192.0.2.3 bob 3E57427F3EXAMPLE "
	       "REST.GET.OBJECT dir/a%20b.txt \"GET /src/dir/a%20b.txt?x=\\\"1\\\" HTTP/1.1\" 200 "
	       "- 113 113 7 5 \"-\" \"Boto3/1.0 \\\"quoted\\\"\" - - SigV4 - AuthHeader "
	       "127.0.0.1:8333 - - -\n",
	       "every field, in order, '-' for the empty ones");
	buf_reset(&out);
	rec = (struct s3_log_record){.bucket = "b", .status = 404, .error_code = "NoSuchKey",
				     .bytes_sent = 0, .object_size = -1, .total_ms = -1,
				     .turnaround_ms = -1, .requester = "x y"};
	s3_logging_format(&out, &rec);
	buf_append(&out, "", 1);
	is_str((const char *)out.data,
	       "- b [01/Jan/1970:00:00:00 +0000] - x%20y - - - \"-\" 404 NoSuchKey - - - - \"-\" "
	       "\"-\" - - - - - - - - -\n",
	       "an error with nothing else known; a space in a field is encoded");
	buf_free(&out);

	s3_logging_operation("GET", true, NULL, op, sizeof(op));
	is_str(op, "REST.GET.OBJECT", "GetObject");
	s3_logging_operation("PUT", false, "logging", op, sizeof(op));
	is_str(op, "REST.PUT.LOGGING_STATUS", "PutBucketLogging");
	s3_logging_operation("GET", false, NULL, op, sizeof(op));
	is_str(op, "REST.GET.BUCKET", "ListObjects");
	s3_logging_operation("GET", true, "legal-hold", op, sizeof(op));
	is_str(op, "REST.GET.LEGAL_HOLD", "GetObjectLegalHold");
	s3_logging_operation("OPTIONS", true, NULL, op, sizeof(op));
	is_str(op, "REST.OPTIONS.PREFLIGHT", "a CORS preflight");
	s3_logging_operation("PUT", true, "tagging", op, sizeof(op));
	is_str(op, "REST.PUT.TAGGING", "PutObjectTagging");
}

static void uri_is(const char *uri, const char *want, const char *name)
{
	buf out = BUF_INIT;
	s3_logging_uri(uri, &out);
	buf_append(&out, "", 1);
	is_str((const char *)out.data, want, name);
	buf_free(&out);
}

static void test_uri(void)
{
	uri_is("/b/k", "/b/k", "no query");
	uri_is("/b/k?tagging", "/b/k?tagging", "a subresource");
	uri_is("/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=abc&x-id=GetObject",
	       "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=-&x-id=GetObject",
	       "a presigned URL's signature hidden");
	uri_is("/b?AWSAccessKeyId=AK&Signature=s%2B&Expires=1&x-amz-security-token=T",
	       "/b?AWSAccessKeyId=AK&Signature=-&Expires=1&x-amz-security-token=-",
	       "SigV2's signature and a session token hidden");
	uri_is("/b?Signature&SignatureX=1", "/b?Signature&SignatureX=1",
	       "a name alone, a longer name kept");
}

static void test_keys(void)
{
	struct s3_logging_config c = {.target_bucket = "logs", .target_prefix = "a/b/",
				      .owner = "alice"};
	buf out = BUF_INIT;

	s3_logging_object_key(&c, "src", 1549411238000000000LL, 0xABCDEF0123456789ULL,
			      "us-east-1", &out);
	buf_append(&out, "", 1);
	is_str((const char *)out.data, "a/b/2019-02-06-00-00-38-ABCDEF0123456789", "simple key");
	buf_reset(&out);
	c.keys = S3_LOG_KEYS_EVENT_TIME;
	s3_logging_object_key(&c, "src", 1549411238000000000LL, 1, "us-east-1", &out);
	buf_append(&out, "", 1);
	is_str((const char *)out.data,
	       "a/b/alice/us-east-1/src/2019/02/06/2019-02-06-00-00-38-0000000000000001",
	       "partitioned key");
	buf_free(&out);
}

int main(void)
{
	test_parse();
	test_format();
	test_keys();
	test_uri();
	return done_testing();
}
