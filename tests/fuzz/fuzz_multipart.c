/*
 * Fuzzes the streaming multipart parser: the first bytes choose the split
 * points; the result (parts and data) must not depend on how the body is split.
 */
#include "config.h"
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "http_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool on_part(const struct multipart_part *p, void *arg)
{
	buf *log = arg;
	buf_printf(log, "P%s|%s|%s|", p->name, p->filename ? p->filename : "-",
		   p->content_type ? p->content_type : "-");
	return true;
}

static bool on_data(const char *d, size_t n, void *arg)
{
	buf_append(arg, d, n);
	return true;
}

static void on_end(void *arg) { buf_append_str(arg, "|E"); }

static const struct multipart_cb cb = {on_part, on_data, on_end};

static wfs_err run(const char *body, size_t len, const size_t *cuts, int ncuts, buf *log)
{
	multipart *m = multipart_new("multipart/form-data; boundary=\"b-1\"", &cb, log);
	size_t off = 0;
	wfs_err err = WFS_OK;
	assert(m);
	for (int i = 0; i <= ncuts && !err; i++) {
		size_t end = i < ncuts ? cuts[i] : len;
		if (end > off)
			err = multipart_feed(m, body + off, end - off);
		off = end > off ? end : off;
	}
	if (!err)
		err = multipart_finish(m);
	multipart_free(m);
	return err;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cuts[4];
	buf a = BUF_INIT, b = BUF_INIT;
	if (size < 4)
		return 0;
	const char *body = (const char *)data + 4;
	size_t len = size - 4;
	for (int i = 0; i < 4; i++)
		cuts[i] = len ? data[i] * len / 255 : 0;
	/* Cuts must ascend. */
	for (int i = 1; i < 4; i++)
		if (cuts[i] < cuts[i - 1])
			cuts[i] = cuts[i - 1];
	wfs_err e1 = run(body, len, NULL, 0, &a);
	wfs_err e2 = run(body, len, cuts, 4, &b);
	assert(e1 == e2);
	if (!e1)
		assert(a.len == b.len && (a.len == 0 || !memcmp(a.data, b.data, a.len)));
	buf_free(&a);
	buf_free(&b);
	return 0;
}
