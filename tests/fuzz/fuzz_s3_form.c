/*
 * Fuzzes the browser POST form reader (s3/s3_post.c) over lib's multipart
 * parser: the first 4 bytes choose where the body is split, the rest is a
 * multipart/form-data body with boundary "b-1". Whatever the splits, the
 * answer, the fields read before the file and the file's bytes are the same;
 * a form that is accepted has seen exactly one part named file.
 */
#include "config.h"
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "s3/s3_int.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	struct s3_form *f;
	buf log;
	int starts;
};

static bool on_start(void *ctx)
{
	struct seen *s = ctx;
	const char *name, *value;
	s->starts++;
	for (size_t i = 0; s3_form_field_at(s->f, i, &name, &value); i++)
		buf_printf(&s->log, "F%s=%s|", name, value);
	return true;
}

static void on_file(void *ctx, const char *data, size_t len)
{
	struct seen *s = ctx;
	buf_append(&s->log, data, len);
}

static enum s3_err run(const char *body, size_t len, const size_t *cuts, int ncuts,
		       struct seen *s)
{
	size_t off = 0;
	enum s3_err e = S3_OK;
	s->f = s3_form_new("multipart/form-data; boundary=b-1", on_start, on_file, s);
	assert(s->f);
	for (int i = 0; i <= ncuts && !e; i++) {
		size_t end = i < ncuts ? cuts[i] : len;
		if (end > off)
			e = s3_form_feed(s->f, body + off, end - off);
		off = end > off ? end : off;
	}
	if (!e)
		e = s3_form_finish(s->f);
	if (!e) {
		char *key = s3_form_key(s->f);
		assert(s->starts == 1);
		buf_printf(&s->log, "|K%s", key ? key : "-");
		free(key);
	}
	s3_form_free(s->f);
	return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cuts[4];
	struct seen a = {0}, b = {0};
	enum s3_err ea, eb;
	if (size < 4)
		return 0;
	const char *body = (const char *)data + 4;
	size_t len = size - 4;
	for (int i = 0; i < 4; i++)
		cuts[i] = len ? data[i] * len / 255 : 0;
	for (int i = 1; i < 4; i++) /* ascending */
		if (cuts[i] < cuts[i - 1])
			cuts[i] = cuts[i - 1];
	ea = run(body, len, NULL, 0, &a);
	eb = run(body, len, cuts, 4, &b);
	assert(ea == eb);
	assert(ea || (a.log.len == b.log.len && !memcmp(a.log.data, b.log.data, a.log.len)));
	buf_free(&a.log);
	buf_free(&b.log);
	return 0;
}
