/*
 * Fuzzes the bucket logging configuration parser (s3/s3_logging.c): it must
 * never crash; a refusal leaves nothing allocated and says why; what it
 * accepts stores in a form that reads back to the same configuration and
 * writes a BucketLoggingStatus that parses to it again. The same bytes, as a
 * request target and header, go through the record formatter: one line out.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "s3/s3_logging.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a request's URI and User-Agent: the record is one line, and the URI keeps its
 * path. */
static void record(const uint8_t *data, size_t size)
{
	char *s = strndup((const char *)data, size);
	struct s3_log_record rec = {.bucket = "b", .method = "GET", .user_agent = s, .key = s,
				    .requester = s, .bytes_sent = -1, .object_size = -1,
				    .total_ms = -1, .turnaround_ms = -1};
	buf uri = BUF_INIT, line = BUF_INIT;
	s3_logging_uri(s, &uri);
	if (strncmp(uri.data ? (const char *)uri.data : "", s, strcspn(s, "?")))
		abort();
	rec.uri = uri.data ? (const char *)uri.data : "";
	s3_logging_format(&line, &rec);
	if (!line.len || memchr(line.data, '\n', line.len - 1) || line.data[line.len - 1] != '\n')
		abort();
	buf_free(&uri);
	buf_free(&line);
	free(s);
}

static bool same(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s3_logging_config c, back, again;
	buf stored = BUF_INIT, doc = BUF_INIT;
	char msg[160];
	enum s3_err e = s3_logging_parse((const char *)data, size, &c, msg, sizeof(msg));
	xml_w *w;

	record(data, size);
	if (e) {
		if (c.target_bucket || c.target_prefix || c.grants || !msg[0])
			abort();
		return 0;
	}
	if (!c.target_bucket)
		return 0; /* logging off */
	s3_logging_encode(&c, &stored);
	if (!s3_logging_decode((const char *)stored.data, stored.len, &back) ||
	    !same(back.target_bucket, c.target_bucket) ||
	    !same(back.target_prefix, c.target_prefix) || back.keys != c.keys ||
	    !same(back.grants, c.grants))
		abort();
	w = xml_w_new(&doc);
	s3_logging_xml(w, &back);
	xml_w_free(w);
	if (s3_logging_parse((const char *)doc.data, doc.len, &again, msg, sizeof(msg)) ||
	    !same(again.target_bucket, c.target_bucket) ||
	    !same(again.target_prefix, c.target_prefix) || again.keys != c.keys ||
	    !same(again.grants, c.grants))
		abort();
	s3_logging_config_free(&again);
	s3_logging_config_free(&back);
	s3_logging_config_free(&c);
	buf_free(&stored);
	buf_free(&doc);
	return 0;
}
