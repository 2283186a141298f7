/*
 * lib/http_response_parser: every split of whole responses, framing (length,
 * chunked, until close, none), 1xx, HEAD, keep-alive, limits, callbacks,
 * malformed input and pipelined responses.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "http_response_parser.h"
#include "tap.h"
#include "util.h"

/* What the callbacks saw. */
struct seen {
	buf headers; /* "name=value;" per header */
	buf body;
	bool reject_header; /* on_header fails on "X-Reject" */
	size_t body_limit;  /* on_body fails past this many bytes; 0 = never */
};

static bool on_header(void *arg, const char *name, size_t nlen, const char *value, size_t vlen)
{
	struct seen *s = arg;
	if (strlen(name) != nlen || strlen(value) != vlen)
		return false; /* NUL-termination must match the lengths */
	if (s->reject_header && !strcmp(name, "X-Reject"))
		return false;
	buf_printf(&s->headers, "%s=%s;", name, value);
	return true;
}

static bool on_body(void *arg, const char *data, size_t len)
{
	struct seen *s = arg;
	buf_append(&s->body, data, len);
	return !s->body_limit || s->body.len <= s->body_limit;
}

static void seen_reset(struct seen *s)
{
	buf_reset(&s->headers);
	buf_reset(&s->body);
}

struct tcase {
	const char *name;
	const char *in;
	unsigned flags;
	uint64_t max_body;
	bool needs_eof; /* the body runs until close */
	/* expected */
	int status;
	const char *body;
	int64_t clen;
	bool keep_alive;
	const char *headers;
};

static const struct tcase cases[] = {
	{"content-length",
	 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Fid: 3,01637037d6  \r\n"
	 "Content-Type: text/plain\r\n\r\nhello",
	 0, 100, false, 200, "hello", 5, true,
	 "Content-Length=5;X-Fid=3,01637037d6;Content-Type=text/plain;"},
	{"chunked with extensions and trailers",
	 "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
	 "5;name=val;x=\"q\"\r\nhello\r\nA\r\n world 123\r\n0\r\nX-Trailer: t\r\nX-Two: 2\r\n\r\n",
	 0, 100, false, 201, "hello world 123", -1, true, "Transfer-Encoding=chunked;"},
	{"204 without body despite a length",
	 "HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n", 0, 0, false, 204, "", 3, true,
	 "Content-Length=3;"},
	{"304 without body", "HTTP/1.1 304 Not Modified\r\nETag: \"abc\"\r\n\r\n", 0, 0, false, 304,
	 "", -1, true, "ETag=\"abc\";"},
	{"100-continue then 200",
	 "HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\n"
	 "HTTP/1.1 102 Processing\r\n\r\n"
	 "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	 0, 10, false, 200, "ok", 2, true, "Content-Length=2;"},
	{"close-delimited", "HTTP/1.1 200 OK\r\nContent-Type: a\r\n\r\nuntil close, all of it", 0,
	 100, true, 200, "until close, all of it", -1, false, "Content-Type=a;"},
	{"HEAD response has no body", "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", HRP_HEAD,
	 0, false, 200, "", 100000, true, "Content-Length=100000;"},
	{"HTTP/1.0 closes", "HTTP/1.0 404 Not Found\r\nContent-Length: 2\r\n\r\n{}", 0, 10, false,
	 404, "{}", 2, false, "Content-Length=2;"},
	{"HTTP/1.0 keep-alive",
	 "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", 0, 10, false,
	 200, "x", 1, true, "Connection=keep-alive;Content-Length=1;"},
	{"Connection: close", "HTTP/1.1 500 Oops\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
	 0, 10, false, 500, "", 0, false, "connection=close;content-length=0;"},
	{"status line without reason", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", 0, 0, false,
	 200, "", 0, true, "Content-Length=0;"},
	{"body exactly at the cap", "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nabcd", 0, 4, false,
	 200, "abcd", 4, true, "Content-Length=4;"},
};

/* Feeds in[0..len) in pieces ending at the given cut positions (ascending), then EOF if
 * needed. Returns the final result; *consumed is how many bytes were used in total. */
static enum hrp_result feed_cuts(hrp_parser *p, const char *in, size_t len, const size_t *cuts,
				 size_t ncuts, bool eof, size_t *consumed)
{
	size_t off = 0;
	enum hrp_result res = HRP_MORE;
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;
		size_t used = 0;
		if (end < off)
			continue;
		res = hrp_feed(p, in + off, end - off, &used);
		if (res != HRP_MORE) {
			*consumed = off + used;
			return res;
		}
		if (used != end - off) {
			*consumed = off + used;
			return HRP_ERROR; /* MORE must consume everything */
		}
		off = end;
	}
	*consumed = off;
	if (eof)
		res = hrp_eof(p);
	return res;
}

/* Checks the parser's state after one run of tc; returns a reason or NULL. */
static const char *check_case(const struct tcase *tc, hrp_parser *p, struct seen *s,
			      enum hrp_result res, size_t consumed, bool collected)
{
	size_t blen;
	const char *body = collected ? hrp_body(p, &blen) : s->body.data ? s->body.data : "";
	if (!collected)
		blen = s->body.len;
	if (res != HRP_DONE)
		return hrp_error(p) ? hrp_error(p) : "not done";
	if (consumed != strlen(tc->in))
		return "consumed";
	if (hrp_status(p) != tc->status)
		return "status";
	if (blen != strlen(tc->body) || memcmp(body, tc->body, blen))
		return "body";
	if (hrp_body_len(p) != strlen(tc->body))
		return "body_len";
	if (hrp_content_length(p) != tc->clen)
		return "content length";
	if (hrp_keep_alive(p) != tc->keep_alive)
		return "keep-alive";
	if (strcmp(s->headers.data ? s->headers.data : "", tc->headers))
		return "headers";
	if (hrp_error(p))
		return "error set";
	return NULL;
}

static void test_splits(void)
{
	struct seen s = {BUF_INIT, BUF_INIT, false, 0};
	struct hrp_opts o = {.on_header = on_header, .arg = &s};
	hrp_parser *p = hrp_new(&o);

	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		const struct tcase *tc = &cases[ci];
		size_t len = strlen(tc->in), consumed = 0, runs = 0;
		const char *why = NULL;
		size_t cuts[2], bad_a = 0, bad_b = 0;

		/* Every split into up to three pieces (a <= b), so every byte boundary and
		 * every pair of them is crossed. */
		for (size_t a = 0; a <= len && !why; a++) {
			for (size_t b = a; b <= len && !why; b++) {
				cuts[0] = a;
				cuts[1] = b;
				seen_reset(&s);
				hrp_begin(p, tc->flags, tc->max_body);
				enum hrp_result res = feed_cuts(p, tc->in, len, cuts, 2,
								tc->needs_eof, &consumed);
				why = check_case(tc, p, &s, res, consumed, true);
				bad_a = a, bad_b = b;
				runs++;
			}
		}
		ok(!why, "%s: %zu splits into up to 3 pieces", tc->name, runs);
		if (why)
			printf("#   %s with cuts at %zu and %zu\n", why, bad_a, bad_b);

		/* One byte at a time. */
		seen_reset(&s);
		hrp_begin(p, tc->flags, tc->max_body);
		size_t *all = malloc(len * sizeof(*all));
		for (size_t i = 0; i < len; i++)
			all[i] = i + 1;
		enum hrp_result res = feed_cuts(p, tc->in, len, all, len, tc->needs_eof, &consumed);
		free(all);
		why = check_case(tc, p, &s, res, consumed, true);
		ok(!why, "%s: byte by byte (%s)", tc->name, why ? why : "ok");
	}
	hrp_free(p);

	/* The same cases with the body passed to a callback instead of collected. */
	struct hrp_opts ob = {.on_header = on_header, .on_body = on_body, .arg = &s};
	p = hrp_new(&ob);
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		const struct tcase *tc = &cases[ci];
		size_t len = strlen(tc->in), consumed = 0;
		const char *why = NULL;
		for (size_t a = 0; a <= len && !why; a++) {
			seen_reset(&s);
			hrp_begin(p, tc->flags, tc->max_body);
			enum hrp_result res =
				feed_cuts(p, tc->in, len, &a, 1, tc->needs_eof, &consumed);
			why = check_case(tc, p, &s, res, consumed, false);
			if (!why && hrp_body(p, NULL)[0] != '\0')
				why = "body also collected";
		}
		ok(!why, "%s: body callback (%s)", tc->name, why ? why : "ok");
	}
	hrp_free(p);
	buf_free(&s.headers);
	buf_free(&s.body);
}

/* Runs one whole input through a fresh parser; returns the result and the error. */
static enum hrp_result run_one(const char *in, size_t len, unsigned flags, uint64_t max_body,
			       size_t max_header, bool eof, const char **err)
{
	struct hrp_opts o = {.max_header = max_header};
	hrp_parser *p = hrp_new(&o);
	size_t used;
	hrp_begin(p, flags, max_body);
	enum hrp_result res = hrp_feed(p, in, len, &used);
	if (res == HRP_MORE && eof)
		res = hrp_eof(p);
	*err = hrp_error(p);
	if (res == HRP_ERROR && !*err)
		*err = "(no reason)";
	/* A failed parser stays failed. */
	if (res == HRP_ERROR && hrp_feed(p, "HTTP/1.1 200 OK\r\n\r\n", 19, &used) != HRP_ERROR)
		res = HRP_MORE;
	hrp_free(p);
	return res;
}

static void test_malformed(void)
{
	static const struct {
		const char *name;
		const char *in;
		uint64_t max_body;
		bool eof;
	} bad[] = {
		{"bad status code", "HTTP/1.1 2x0 OK\r\n\r\n", 10, false},
		{"not HTTP", "HTTX/1.1 200 OK\r\n\r\n", 10, false},
		{"garbage", "hello world\r\n\r\n", 10, false},
		{"status below 100", "HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n", 10, false},
		{"four-digit status", "HTTP/1.1 2000 OK\r\n\r\n", 10, false},
		{"bad version", "HTTP/x.1 200 OK\r\n\r\n", 10, false},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		 10, false},
		{"negative chunk size",
		 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", 10, false},
		{"chunk size overflow",
		 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\n",
		 UINT64_MAX, false},
		{"not HTTP/ after H", "HXTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 10, false},
		{"bad prefix of a final answer after a 100",
		 "HTTP/1.1 100 Continue\r\n\r\nHTTP 200 OK\r\nContent-Length: 0\r\n\r\n", 10,
		 false},
		{"bad content-length", "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", 10, false},
		{"two different lengths",
		 "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 10, false},
		{"length and chunked",
		 "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 10,
		 false},
		{"declared body over the cap", "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", 10,
		 false},
		{"chunk over the cap",
		 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n5\r\n", 10,
		 false},
		{"close-delimited body over the cap", "HTTP/1.1 200 OK\r\n\r\n0123456789A", 10,
		 false},
		{"101 not asked for",
		 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n",
		 10, false},
		{"closed in the head", "HTTP/1.1 200 OK\r\nContent-Le", 10, true},
		{"closed in the body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", 10, true},
		{"closed in a chunk",
		 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", 10, true},
		{"closed after a 100", "HTTP/1.1 100 Continue\r\n\r\n", 10, true},
		{"closed before any byte", "", 10, true},
		{"control byte in a header value", "HTTP/1.1 200 OK\r\nX-A: a\001b\r\n\r\n", 10,
		 false},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *err = NULL;
		enum hrp_result res = run_one(bad[i].in, strlen(bad[i].in), 0, bad[i].max_body, 0,
					      bad[i].eof, &err);
		ok(res == HRP_ERROR && err, "%s -> error (%s)", bad[i].name, err ? err : "none");
	}

	/* Header too long: one huge value against the default limit, and a small limit. */
	buf big = BUF_INIT;
	buf_append_str(&big, "HTTP/1.1 200 OK\r\nX-Big: ");
	for (int i = 0; i < 70000; i++)
		buf_append_byte(&big, 'a');
	buf_append_str(&big, "\r\nContent-Length: 0\r\n\r\n");
	const char *err = NULL;
	enum hrp_result res;
	res = run_one(big.data, big.len, 0, 10, 0, false, &err);
	ok(res == HRP_ERROR, "70000-byte header over the default 65536 (%s)", err ? err : "none");
	res = run_one(big.data, big.len, 0, 10, 100000, false, &err);
	ok(res == HRP_DONE, "the same head passes a 100000-byte limit");
	const char *h = "HTTP/1.1 200 OK\r\nX-A: 0123456789012345678901234567890123456789\r\n"
			"Content-Length: 0\r\n\r\n";
	res = run_one(h, strlen(h), 0, 10, 40, false, &err);
	ok(res == HRP_ERROR && err && strstr(err, "head"), "head over a 40-byte limit (%s)",
	   err ? err : "none");
	res = run_one(h, strlen(h), 0, 10, 80, false, &err);
	ok(res == HRP_DONE, "same head under an 80-byte limit");
	const char *t = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
			"X-T: 0123456789012345678901234567890123456789\r\n\r\n";
	res = run_one(t, strlen(t), 0, 10, 42, false, &err);
	ok(res == HRP_ERROR && err && strstr(err, "trailers"), "trailers over the limit (%s)",
	   err ? err : "none");
	res = run_one(t, strlen(t), 0, 10, 50, false, &err);
	ok(res == HRP_DONE, "same trailers under a 50-byte limit");
	/* Many small headers add up. */
	buf_reset(&big);
	buf_append_str(&big, "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i < 5000; i++)
		buf_printf(&big, "X-%d: v\r\n", i);
	buf_append_str(&big, "\r\n");
	res = run_one(big.data, big.len, 0, 10, 20000, false, &err);
	ok(res == HRP_ERROR, "5000 headers over a 20000-byte limit (%s)", err ? err : "none");

	/* Endless 1xx answers. */
	buf_reset(&big);
	for (int i = 0; i < 40; i++)
		buf_append_str(&big, "HTTP/1.1 100 Continue\r\n\r\n");
	res = run_one(big.data, big.len, 0, 10, 0, false, &err);
	ok(res == HRP_ERROR && err && strstr(err, "1xx"), "40 interim answers (%s)",
	   err ? err : "none");
	buf_free(&big);

	/* Callbacks can refuse. */
	struct seen s = {BUF_INIT, BUF_INIT, true, 3};
	struct hrp_opts o = {.on_header = on_header, .on_body = on_body, .arg = &s};
	hrp_parser *p = hrp_new(&o);
	size_t used;
	const char *r1 = "HTTP/1.1 200 OK\r\nX-Reject: 1\r\nContent-Length: 0\r\n\r\n";
	hrp_begin(p, 0, 10);
	ok(hrp_feed(p, r1, strlen(r1), &used) == HRP_ERROR &&
		   !strcmp(hrp_error(p), "rejected by caller"),
	   "header callback refuses");
	/* http-parser (lenient) lets a NUL open a value; C-string headers must refuse it. */
	static const char r0[] = "HTTP/1.1 200 OK\r\nX-A:\0;\r\nContent-Length: 0\r\n\r\n";
	hrp_begin(p, 0, 10);
	ok(hrp_feed(p, r0, sizeof(r0) - 1, &used) == HRP_ERROR &&
		   !strcmp(hrp_error(p), "NUL byte in a header"),
	   "NUL in a header value refused");
	const char *r2 = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabcde";
	hrp_begin(p, 0, 10);
	ok(hrp_feed(p, r2, strlen(r2), &used) == HRP_ERROR, "body callback refuses");
	/* The same parser works again after begin. */
	s.reject_header = false;
	s.body_limit = 0;
	seen_reset(&s);
	hrp_begin(p, 0, 10);
	ok(hrp_feed(p, r2, strlen(r2), &used) == HRP_DONE && used == strlen(r2) &&
		   s.body.len == 5 && !hrp_error(p),
	   "begin clears a failure");
	hrp_free(p);
	buf_free(&s.headers);
	buf_free(&s.body);

	/* Feeding before begin: the default cap is 0, so a body is refused. */
	p = hrp_new(NULL);
	ok(hrp_feed(p, r2, strlen(r2), &used) == HRP_ERROR, "a new parser accepts no body");
	hrp_free(p);
	hrp_free(NULL);
}

static void test_pipelined(void)
{
	static const char in[] =
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"
		"\r\n" /* stray CRLF between responses is tolerated */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		"3\r\ntwo\r\n0\r\n\r\n"
		"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n" /* answers a HEAD */
		"HTTP/1.1 100 Continue\r\n\r\n"
		"HTTP/1.1 204 No Content\r\n\r\n"
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nfour";
	static const struct {
		unsigned flags;
		int status;
		const char *body;
		bool keep_alive;
	} want[] = {
		{0, 200, "one", true}, {0, 200, "two", true},   {HRP_HEAD, 200, "", true},
		{0, 204, "", true},    {0, 200, "four", false},
	};
	size_t len = sizeof(in) - 1;
	hrp_parser *p = hrp_new(NULL);

	/* Whole buffer at once, then in 7-byte pieces. */
	for (int mode = 0; mode < 2; mode++) {
		size_t off = 0, k;
		bool good = true;
		for (k = 0; k < sizeof(want) / sizeof(want[0]) && good; k++) {
			enum hrp_result res = HRP_MORE;
			size_t used;
			hrp_begin(p, want[k].flags, 100);
			while (res == HRP_MORE && off < len) {
				size_t n = mode == 0 ? len - off : MIN((size_t)7, len - off);
				res = hrp_feed(p, in + off, n, &used);
				off += used;
			}
			if (res == HRP_MORE)
				res = hrp_eof(p);
			size_t blen;
			const char *body = hrp_body(p, &blen);
			good = res == HRP_DONE && hrp_status(p) == want[k].status &&
			       blen == strlen(want[k].body) && !memcmp(body, want[k].body, blen) &&
			       hrp_keep_alive(p) == want[k].keep_alive;
			/* Feeding a finished response consumes nothing. */
			if (good && off < len)
				good = hrp_feed(p, in + off, len - off, &used) == HRP_DONE &&
				       used == 0;
		}
		ok(good && off == len, "pipelined, %s: %zu responses, %zu of %zu bytes",
		   mode ? "7-byte pieces" : "one buffer", k, off, len);
	}
	hrp_free(p);
}

static void test_pending_and_discard(void)
{
	hrp_parser *p = hrp_new(NULL);
	size_t used;
	const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123";
	hrp_begin(p, 0, 100);
	is_int(hrp_body_pending(p), 0, "nothing pending before the head");
	ok(hrp_feed(p, h, strlen(h), &used) == HRP_MORE, "head and part of the body");
	is_int(hrp_body_pending(p), 6, "6 bytes of the declared body pending");
	is_int(hrp_status(p), 200, "status known once the head is complete");
	ok(hrp_feed(p, "456789", 6, &used) == HRP_DONE, "rest of the body");
	is_int(hrp_body_pending(p), 0, "nothing pending when done");

	const char *c = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n20\r\nabc";
	hrp_begin(p, 0, 100);
	ok(hrp_feed(p, c, strlen(c), &used) == HRP_MORE, "chunked, part of a chunk");
	is_int(hrp_body_pending(p), 29, "rest of the 0x20 chunk pending");

	const char *d = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n01234567";
	hrp_begin(p, HRP_DISCARD, 100);
	ok(hrp_feed(p, d, strlen(d), &used) == HRP_DONE, "discarded body");
	size_t blen;
	hrp_body(p, &blen);
	ok(blen == 0 && hrp_body_len(p) == 8, "discarded body counted, not kept");

	/* Interim answers are not the status. */
	const char *i = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 O";
	hrp_begin(p, 0, 100);
	ok(hrp_feed(p, i, strlen(i), &used) == HRP_MORE && hrp_status(p) == 0,
	   "status stays 0 after a 100 until the final head");
	hrp_free(p);
}

int main(void)
{
	test_splits();
	test_malformed();
	test_pipelined();
	test_pending_and_discard();
	return done_testing();
}
