#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "http_util.h"
#include "tap.h"

static void test_ranges(void)
{
	struct http_range r[HTTP_MAX_RANGES];
	int n = -1;

	is_int(http_parse_range("bytes=0-99", 1000, r, HTTP_MAX_RANGES, &n), WFS_OK,
	       "simple range");
	ok(n == 1 && r[0].start == 0 && r[0].len == 100, "0-99 is 100 bytes at 0");
	is_int(http_parse_range("bytes=100-", 1000, r, HTTP_MAX_RANGES, &n), WFS_OK, "open range");
	ok(n == 1 && r[0].start == 100 && r[0].len == 900, "100- runs to the end");
	is_int(http_parse_range("bytes=-50", 1000, r, HTTP_MAX_RANGES, &n), WFS_OK, "suffix");
	ok(n == 1 && r[0].start == 950 && r[0].len == 50, "-50 is the last 50");
	is_int(http_parse_range("bytes=-5000", 1000, r, HTTP_MAX_RANGES, &n), WFS_OK, "big suffix");
	ok(n == 1 && r[0].start == 0 && r[0].len == 1000, "suffix larger than entity is all");
	is_int(http_parse_range("bytes=900-2000", 1000, r, HTTP_MAX_RANGES, &n), WFS_OK, "clip");
	ok(n == 1 && r[0].start == 900 && r[0].len == 100, "end clipped to size");
	is_int(http_parse_range("bytes=0-0, 5-9 ,-1", 10, r, HTTP_MAX_RANGES, &n), WFS_OK, "multi");
	ok(n == 3 && r[0].len == 1 && r[1].start == 5 && r[1].len == 5 && r[2].start == 9,
	   "three ranges with spaces");
	is_int(http_parse_range("bytes=0-1,2000-3000", 1000, r, HTTP_MAX_RANGES, &n), WFS_OK,
	       "one satisfiable of two");
	is_int(n, 1, "unsatisfiable one dropped");
	is_int(http_parse_range("bytes=1000-", 1000, r, HTTP_MAX_RANGES, &n), WFS_ERANGE,
	       "start at size is unsatisfiable");
	is_int(http_parse_range("bytes=-0", 1000, r, HTTP_MAX_RANGES, &n), WFS_ERANGE,
	       "empty suffix unsatisfiable");
	is_int(http_parse_range("bytes=0-", 0, r, HTTP_MAX_RANGES, &n), WFS_ERANGE,
	       "empty entity unsatisfiable");
	const char *bad[] = {"bytes=",    "bytes=a-b",     "bytes=5-1",
			     "items=0-1", "bytes 0-1",     "bytes=0-1x",
			     "bytes=--1", "bytes=1",       "bytes=99999999999999999999-",
			     "",          "bytes=0-1;2-3", "bytes=-",
			     NULL};
	for (int i = 0; bad[i]; i++)
		is_int(http_parse_range(bad[i], 1000, r, HTTP_MAX_RANGES, &n), WFS_EINVAL, bad[i]);
	is_int(http_parse_range("bytes=0-0,1-1,2-2", 1000, r, 2, &n), WFS_EINVAL, "over max");
	is_int(http_parse_range("BYTES = 1-2", 1000, r, 2, &n), WFS_OK, "case and spaces");
}

static void test_dates(void)
{
	char s[40];
	time_t t;
	http_date_format(784111777, s, sizeof(s));
	is_str(s, "Sun, 06 Nov 1994 08:49:37 GMT", "format IMF-fixdate");
	ok(http_date_parse("Sun, 06 Nov 1994 08:49:37 GMT", &t) && t == 784111777, "parse IMF");
	ok(http_date_parse("Sunday, 06-Nov-94 08:49:37 GMT", &t) && t == 784111777, "parse 850");
	ok(http_date_parse("Sun Nov  6 08:49:37 1994", &t) && t == 784111777, "parse asctime");
	ok(http_date_parse("Thu, 01 Jan 1970 00:00:00 GMT", &t) && t == 0, "epoch");
	ok(!http_date_parse("Sun, 06 Nov 1994 08:49:37", &t), "missing GMT rejected");
	ok(iso8601_parse("1994-11-06T08:49:37Z", &t) && t == 784111777, "ISO 8601");
	ok(iso8601_parse("1994-11-06T08:49:37.123Z", &t) && t == 784111777, "ISO 8601 fraction");
	ok(!iso8601_parse("1994-11-06T08:49:37", &t), "ISO 8601 without Z rejected");
	ok(!iso8601_parse("1994-02-30T08:49:37Z", &t), "ISO 8601 Feb 30 rejected");
	ok(!iso8601_parse("1994-11-06T08:49:37Z+", &t), "ISO 8601 trailing bytes rejected");
	ok(!http_date_parse("Sun, 32 Nov 1994 08:49:37 GMT", &t), "bad day rejected");
	ok(!http_date_parse("Sun, 06 Foo 1994 08:49:37 GMT", &t), "bad month rejected");
	ok(!http_date_parse("Sun, 06 Nov 1994 25:49:37 GMT", &t), "bad hour rejected");
	ok(!http_date_parse("Sun, 06 Nov 1994 08:49:37 GMTx", &t), "trailing junk rejected");
	ok(!http_date_parse("", &t), "empty rejected");
	time_t now = 1700000000;
	http_date_format(now, s, sizeof(s));
	ok(http_date_parse(s, &t) && t == now, "round trip %s", s);
}

static void test_mime(void)
{
	is_str(http_mime_by_ext("a.png"), "image/png", "png");
	is_str(http_mime_by_ext("dir.x/photo.JPG"), "image/jpeg", "JPG case-insensitive");
	is_str(http_mime_by_ext("x.json"), "application/json", "json");
	is_str(http_mime_by_ext("x.wasm"), "application/wasm", "wasm");
	ok(!strncmp(http_mime_by_ext("i.html"), "text/html", 9), "html");
	ok(http_mime_by_ext("x.tar.gz") &&
		   !strcmp(http_mime_by_ext("x.tar.gz"), "application/gzip"),
	   "last extension counts");
	ok(!http_mime_by_ext("noext"), "no extension");
	ok(!http_mime_by_ext("a.b/noext"), "dot in directory only");
	ok(!http_mime_by_ext("x.unknownext"), "unknown");
	ok(!http_mime_by_ext("x."), "trailing dot");
}

static void test_url(void)
{
	buf b = BUF_INIT;
	ok(url_decode("a%20b+c", 7, true, &b) && !strcmp(b.data, "a b c"), "decode + as space");
	buf_reset(&b);
	ok(url_decode("a%2Fb+c", 7, false, &b) && !strcmp(b.data, "a/b+c"), "path keeps +");
	buf_reset(&b);
	ok(!url_decode("a%2", 3, false, &b), "truncated escape");
	ok(!url_decode("a%zz", 4, false, &b), "bad hex");
	ok(!url_decode("a%00b", 5, false, &b), "decoded NUL rejected");
	ok(b.len == 0, "nothing appended on failure");
	buf_reset(&b);
	ok(url_decode("%e2%82%ac", 9, false, &b) && !strcmp(b.data, "\xe2\x82\xac"), "utf-8");
	buf_reset(&b);
	url_encode_path("/a b/ü?&=", &b);
	is_str(b.data, "/a%20b/%C3%BC%3F%26%3D", "encode path");
	buf_reset(&b);
	url_encode_query("a/b c~", &b);
	is_str(b.data, "a%2Fb%20c~", "encode query");
	buf_reset(&b);
	url_encode_query("x&y=z", &b);
	buf tmp = BUF_INIT;
	ok(url_decode(b.data, b.len, true, &tmp) && !strcmp(tmp.data, "x&y=z"), "round trip");
	buf_free(&tmp);
	buf_free(&b);
}

/* ---- multipart ---- */

struct mp_rec {
	buf log; /* "P(name|filename|ctype)" "D" data... "E" */
	int parts;
};

static bool rec_part(const struct multipart_part *p, void *arg)
{
	struct mp_rec *r = arg;
	buf_printf(&r->log, "P(%s|%s|%s)", p->name, p->filename ? p->filename : "-",
		   p->content_type ? p->content_type : "-");
	r->parts++;
	return true;
}

static bool rec_data(const char *d, size_t n, void *arg)
{
	struct mp_rec *r = arg;
	buf_append(&r->log, d, n);
	return true;
}

static void rec_end(void *arg)
{
	struct mp_rec *r = arg;
	buf_append_str(&r->log, "E");
}

static const struct multipart_cb rec_cb = {rec_part, rec_data, rec_end};

/* Feeds body in pieces cut at a and b; returns the log and final status. */
static wfs_err mp_run(const char *ctype, const char *body, size_t len, size_t a, size_t b, buf *log)
{
	struct mp_rec r = {BUF_INIT, 0};
	multipart *m = multipart_new(ctype, &rec_cb, &r);
	wfs_err err = WFS_EINVAL;
	if (!m)
		goto out;
	size_t cuts[] = {0, a, b, len};
	err = WFS_OK;
	for (int i = 0; i < 3 && !err; i++)
		if (cuts[i + 1] > cuts[i])
			err = multipart_feed(m, body + cuts[i], cuts[i + 1] - cuts[i]);
	if (!err)
		err = multipart_finish(m);
out:
	multipart_free(m);
	buf_reset(log);
	if (r.log.len)
		buf_append(log, r.log.data, r.log.len);
	buf_free(&r.log);
	return err;
}

static void test_multipart(void)
{
	const char *ct = "multipart/form-data; boundary=\"--xYz0\"";
	const char *body = "preamble text\r\n"
			   "----xYz0\r\n"
			   "Content-Disposition: form-data; name=\"file\"; filename=\"a b.txt\"\r\n"
			   "Content-Type: text/plain\r\n"
			   "\r\n"
			   "hello\r\n--not-a-boundary\r\r\n\r\n"
			   "----xYz0  \r\n"
			   "Content-Disposition: form-data; name=f2; "
			   "filename*=UTF-8''%E2%82%AC.bin; filename=\"plain\"\r\n"
			   "\r\n"
			   "\r\n----xY\r\n"
			   "----xYz0--\r\nepilogue ----xYz0 junk";
	const char *want = "P(file|a b.txt|text/plain)hello\r\n--not-a-boundary\r\r\n"
			   "E"
			   "P(f2|\xe2\x82\xac.bin|-)\r\n----xY"
			   "E";
	size_t len = strlen(body);
	buf log = BUF_INIT;
	int bad = 0;

	is_int(mp_run(ct, body, len, len, len, &log), WFS_OK, "multipart in one piece");
	is_str(log.data, want, "parts, names, filenames and data");
	/* Every split position, and every pair of split positions. */
	for (size_t a = 0; a <= len; a++) {
		for (size_t b = a; b <= len; b++) {
			wfs_err e = mp_run(ct, body, len, a, b, &log);
			if (e || strcmp(log.data ? log.data : "", want))
				bad++;
		}
	}
	is_int(bad, 0, "same result for every pair of split points");

	/* No preamble, empty part, unquoted boundary, minimal body. */
	is_int(mp_run("multipart/form-data; boundary=b", "--b\r\n\r\n\r\n--b--", 15, 3, 9, &log),
	       WFS_OK, "minimal body with an empty headerless part");
	is_str(log.data, "P(|-|-)E", "empty part seen");
	is_int(mp_run("multipart/form-data; boundary=b", "--b--", 5, 1, 2, &log), WFS_OK,
	       "no parts at all");

	/* Malformed or truncated bodies. */
	const char *mct = "multipart/form-data; boundary=b";
	const char *bad_bodies[] = {
		"",                                       /* nothing */
		"--b\r\n\r\ndata",                        /* no closing boundary */
		"--b\r\n\r\ndata\r\n--b",                 /* closing boundary incomplete */
		"--bX\r\n\r\ndata\r\n--b--",              /* junk after the boundary */
		"--b\r\nNoColonHeader\r\n\r\nx\r\n--b--", /* bad header line */
		"--b\r\n\r\nx\r\n--b-x",                  /* half a close delimiter */
		"--b\nContent-Type: x\r\n\r\n\r\n--b--",  /* bare LF after boundary */
		"junk without any boundary",
		NULL};
	for (int i = 0; bad_bodies[i]; i++) {
		size_t l = strlen(bad_bodies[i]);
		ok(mp_run(mct, bad_bodies[i], l, l / 2, l, &log) == WFS_EINVAL, "malformed body %d",
		   i);
	}
	/* Oversized part headers. */
	buf big = BUF_INIT;
	buf_append_str(&big, "--b\r\nX-Big: ");
	for (int i = 0; i < 9000; i++)
		buf_append_byte(&big, 'a');
	buf_append_str(&big, "\r\n\r\nx\r\n--b--");
	ok(mp_run(mct, big.data, big.len, 100, 5000, &log) == WFS_EINVAL, "part headers bounded");
	buf_free(&big);

	ok(!multipart_new("text/plain; boundary=b", &rec_cb, NULL), "not multipart");
	ok(!multipart_new("multipart/form-data", &rec_cb, NULL), "no boundary");
	ok(!multipart_new("multipart/form-data; boundary=\"\"", &rec_cb, NULL), "empty boundary");
	ok(!multipart_new("multipart/form-data; boundary=\"unterminated", &rec_cb, NULL),
	   "unterminated quote");
	buf_free(&log);
}

int main(void)
{
	test_ranges();
	test_dates();
	test_mime();
	test_url();
	test_multipart();
	return done_testing();
}
