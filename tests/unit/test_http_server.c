/* A real http_server on 127.0.0.1, driven by the http_client and by raw sockets. */
#include "config.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "http_client.h"
#include "http_server.h"
#include "pool.h"
#include "tap.h"
#include "util.h"

static int port;
static pool *workers;
static atomic_int stream_errors, stream_oks, big_done;

/* ---- handlers ---- */

static void body_echo(http_req *req, const char *data, size_t len, void *arg)
{
	(void)arg;
	ok(data[len] == '\0', "body is NUL-terminated past len");
	http_resp_send(req, 200, data, len);
}

struct stream_state {
	uint64_t n, sum;
	int pieces;
};

static void resume_later(http_req *req, void *arg)
{
	(void)arg;
	http_req_resume_body(req);
}

static bool stream_data(http_req *req, const char *data, size_t len, void *arg)
{
	struct stream_state *st = arg;
	for (size_t i = 0; i < len; i++)
		st->sum += (unsigned char)data[i];
	st->n += len;
	/* Pause on every other piece and resume from the defer queue: back-pressure path. */
	if (++st->pieces % 2 == 0) {
		http_req_defer(req, resume_later, NULL);
		return false;
	}
	return true;
}

static void stream_end(http_req *req, wfs_err err, void *arg)
{
	struct stream_state *st = arg;
	if (err) {
		atomic_fetch_add(&stream_errors, 1);
		http_resp_error(req, err == WFS_ETOOBIG ? 413 : 400, "%s", wfs_strerror(err));
	} else {
		char out[64];
		atomic_fetch_add(&stream_oks, 1);
		snprintf(out, sizeof(out), "%llu %llu", (unsigned long long)st->n,
			 (unsigned long long)st->sum);
		http_resp_send(req, 200, out, strlen(out));
	}
	free(st);
}

struct big_state {
	size_t left;
	char chunk[65536];
};

static void big_pump(http_req *req, void *arg)
{
	struct big_state *st = arg;
	while (st->left) {
		size_t n = MIN(st->left, sizeof(st->chunk));
		st->left -= n;
		if (!http_resp_write(req, st->chunk, n) && st->left) {
			http_resp_on_drain(req, big_pump, st);
			return;
		}
	}
	http_resp_end(req);
	free(st);
	atomic_fetch_add(&big_done, 1);
}

static void deferred_reply(http_req *req, void *arg)
{
	(void)arg;
	http_resp_send(req, 200, "deferred", 8);
}

static void worker_job(void *arg)
{
	usleep(10000);
	http_req_defer(arg, deferred_reply, NULL);
}

static void handler(http_req *req, void *ctx)
{
	const char *path = http_req_path(req);
	(void)ctx;
	if (!strncmp(path, "/echo", 5)) {
		buf b = BUF_INIT;
		const char *a = http_req_query(req, "a"), *bb = http_req_query(req, "b");
		const char *name, *value;
		size_t nq = 0;
		while (http_req_query_at(req, nq, &name, &value))
			nq++;
		buf_printf(&b, "%s path=%s a=%s b=%s n=%zu q=%s", http_req_uri(req), path,
			   a ? a : "(null)", bb ? bb : "(null)", nq, http_req_query_string(req));
		const char *x = http_req_header(req, "X-Multi");
		if (x)
			buf_printf(&b, " multi=%s", x);
		http_resp_header(req, "Content-Type", "text/plain");
		http_resp_send(req, 200, b.data, b.len);
		buf_free(&b);
	} else if (!strcmp(path, "/thread-name")) {
		char name[16] = "";
		pthread_getname_np(pthread_self(), name, sizeof(name));
		http_resp_send(req, 200, name, strlen(name));
	} else if (!strcmp(path, "/body")) {
		const char *l = http_req_query(req, "limit");
		http_req_read_body(req, l ? strtoul(l, NULL, 10) : 1 << 20, body_echo, NULL);
	} else if (!strcmp(path, "/stream")) {
		struct stream_state *st = xcalloc(1, sizeof(*st));
		const char *l = http_req_query(req, "limit");
		http_req_stream_body(req, l ? strtoull(l, NULL, 10) : UINT64_MAX, stream_data,
				     stream_end, st);
	} else if (!strcmp(path, "/chunked")) {
		http_resp_start(req, 200, -1);
		for (int i = 0; i < 5; i++) {
			char piece[32];
			snprintf(piece, sizeof(piece), "piece%d;", i);
			http_resp_write(req, piece, strlen(piece));
		}
		http_resp_end(req);
	} else if (!strcmp(path, "/announced")) {
		/* a HEAD answer streamed: the length announced, no body written */
		http_resp_start(req, 200, 1234);
		http_resp_end(req);
	} else if (!strcmp(path, "/big")) {
		struct big_state *st = xmalloc(sizeof(*st));
		st->left = 8u << 20;
		memset(st->chunk, 'b', sizeof(st->chunk));
		http_resp_start(req, 200, (int64_t)st->left);
		big_pump(req, st);
	} else if (!strcmp(path, "/defer")) {
		pool_submit(workers, worker_job, req);
	} else if (!strcmp(path, "/error")) {
		const char *m = http_req_query(req, "msg");
		http_resp_error(req, 404, "%s", m ? m : "none");
	} else {
		http_resp_error(req, 404, "not found");
	}
}

/* ---- raw socket helpers ---- */

static int raw_connect(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void raw_send(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void raw_sends(int fd, const char *s) { raw_send(fd, s, strlen(s)); }

/* Counts complete responses in out (Content-Length or chunked bodies). */
static int count_responses(const buf *out)
{
	const char *p = out->data, *end = p ? p + out->len : NULL;
	int n = 0;
	while (p && p < end) {
		const char *he = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
		if (!he)
			break;
		he += 4;
		if (!strncmp(p, "HTTP/1.1 100 ", 13)) {
			p = he;
			continue;
		}
		const char *cl = memmem(p, (size_t)(he - p), "Content-Length: ", 16);
		if (cl) {
			size_t len = strtoul(cl + 16, NULL, 10);
			if ((size_t)(end - he) < len)
				break;
			p = he + len;
		} else if (memmem(p, (size_t)(he - p), "chunked", 7)) {
			const char *z = memmem(he, (size_t)(end - he), "0\r\n\r\n", 5);
			if (!z)
				break;
			p = z + 5;
		} else {
			p = he;
		}
		n++;
	}
	return n;
}

/* Reads until n complete responses arrived, the peer closed, or 3 s passed.
 * Returns true if the peer closed the connection. */
static bool raw_read(int fd, int n, buf *out)
{
	char tmp[65536];
	buf_reset(out);
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		if (n > 0 && count_responses(out) >= n) {
			/* See whether a close follows right away. */
			if (poll(&pfd, 1, 50) <= 0)
				return false;
		} else if (poll(&pfd, 1, 3000) <= 0) {
			return false;
		}
		ssize_t r = recv(fd, tmp, sizeof(tmp), 0);
		if (r <= 0)
			return true;
		buf_append(out, tmp, (size_t)r);
	}
}

static bool has(const buf *b, const char *s) { return b->data && strstr(b->data, s); }

/* ---- tests ---- */

static void test_client(void)
{
	struct http_result res;
	char url[256], v[64];
	http_result_init(&res);

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo/a%%20b?a=1&b=x+y%%21&c", port);
	is_int(http_get(url, 5000, &res), WFS_OK, "GET with query");
	is_int(res.status, 200, "200");
	ok(has(&res.body, "path=/echo/a b a=1 b=x y! n=3 q=a=1&b=x+y%21&c"),
	   "path decoded, query decoded, raw query kept: %s", res.body.data);
	ok(http_result_header(&res, "server", v, sizeof(v)) && !strcmp(v, "weedfs"), "Server");
	ok(http_result_header(&res, "Date", v, sizeof(v)) && strstr(v, " GMT"), "Date header");
	char clen[32];
	http_result_header(&res, "Content-Length", clen, sizeof(clen));

	const char *hdrs[] = {"X-Multi: one", "X-Multi: two", NULL};
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo/a%%20b?a=1&b=x+y%%21&c", port);
	is_int(http_request("GET", url, hdrs, NULL, 0, 5000, &res), WFS_OK, "GET with headers");
	ok(has(&res.body, "multi=one, two"), "repeated headers joined");

	is_int(http_request("HEAD", url, NULL, NULL, 0, 5000, &res), WFS_OK, "HEAD");
	is_int(res.status, 200, "HEAD 200");
	is_int(res.body.len, 0, "HEAD has no body");
	ok(http_result_header(&res, "Content-Length", v, sizeof(v)) && !strcmp(v, clen),
	   "HEAD keeps Content-Length (%s)", v);

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/body", port);
	is_int(http_request("PUT", url, NULL, "payload", 7, 5000, &res), WFS_OK, "PUT body");
	ok(res.status == 200 && res.body.len == 7 && !strcmp(res.body.data, "payload"), "echoed");

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/chunked", port);
	is_int(http_get(url, 5000, &res), WFS_OK, "chunked response");
	is_str(res.body.data, "piece0;piece1;piece2;piece3;piece4;", "chunks reassembled");
	ok(http_result_header(&res, "Transfer-Encoding", v, sizeof(v)) && !strcmp(v, "chunked"),
	   "Transfer-Encoding: chunked");

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/big", port);
	is_int(http_get(url, 20000, &res), WFS_OK, "8 MiB streamed response with drain");
	is_int(res.body.len, 8 << 20, "all bytes arrived");

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/defer", port);
	is_int(http_get(url, 5000, &res), WFS_OK, "deferred from a pool thread");
	is_str(res.body.data, "deferred", "deferred reply");

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/error?msg=a%%22b%%5Cc", port);
	is_int(http_get(url, 5000, &res), WFS_OK, "error response");
	is_int(res.status, 404, "404");
	is_str(res.body.data, "{\"error\":\"a\\\"b\\\\c\"}", "JSON error escaped");
	ok(http_result_header(&res, "Content-Type", v, sizeof(v)) && !strcmp(v, "application/json"),
	   "JSON content type");

	/* Streamed upload with pauses. */
	size_t n = 3 << 20;
	char *up = xmalloc(n);
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		up[i] = (char)(i * 7);
		sum += (unsigned char)up[i];
	}
	char want[64];
	snprintf(want, sizeof(want), "%zu %llu", n, (unsigned long long)sum);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/stream", port);
	is_int(http_request("POST", url, NULL, up, n, 20000, &res), WFS_OK, "streamed upload");
	is_str(res.body.data, want, "every byte seen once, in order");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/stream?limit=1000", port);
	is_int(http_request("POST", url, NULL, up, n, 20000, &res), WFS_OK, "stream over limit");
	is_int(res.status, 413, "stream limit -> handler 413");
	free(up);

	is_int(http_get("http://127.0.0.1:1/x", 2000, &res), WFS_EUNAVAIL, "refused -> EUNAVAIL");
	is_int(http_get("http://no-such-host.invalid/x", 2000, &res), WFS_EUNAVAIL,
	       "unresolvable -> EUNAVAIL");
	http_result_free(&res);
}

static void test_raw(void)
{
	buf out = BUF_INIT;
	int fd;
	bool closed;

	/* Keep-alive: two requests, one after the other, on one connection. */
	fd = raw_connect();
	raw_sends(fd, "GET /echo?a=1 HTTP/1.1\r\nHost: x\r\n\r\n");
	closed = raw_read(fd, 1, &out);
	ok(!closed && has(&out, "200 OK") && has(&out, "a=1"), "first keep-alive response");
	ok(!has(&out, "Connection: close"), "no close on keep-alive");
	raw_sends(fd, "GET /echo?a=2 HTTP/1.1\r\nHost: x\r\n\r\n");
	closed = raw_read(fd, 1, &out);
	ok(!closed && has(&out, "a=2"), "second request on the same connection");

	/* The handler runs on a loop thread named by the options (top -H, perf). */
	raw_sends(fd, "GET /thread-name HTTP/1.1\r\nHost: x\r\n\r\n");
	closed = raw_read(fd, 1, &out);
	ok(!closed && has(&out, "\r\n\r\nwfs-test-loop"), "loop threads carry the server's name");

	/* A streamed HEAD answer owes no body: the connection stays open for the next. */
	raw_sends(fd, "HEAD /announced HTTP/1.1\r\nHost: x\r\n\r\n");
	closed = raw_read(fd, 1, &out);
	ok(!closed && has(&out, "Content-Length: 1234") && !has(&out, "Connection: close"),
	   "streamed HEAD: length announced, connection kept");
	raw_sends(fd, "GET /echo?a=3 HTTP/1.1\r\nHost: x\r\n\r\n");
	closed = raw_read(fd, 1, &out);
	ok(!closed && has(&out, "a=3"), "a request after a streamed HEAD on the same connection");

	/* Pipelining: three requests in one write, answered in order. */
	const char *pipe3 = "GET /echo?a=p1 HTTP/1.1\r\nHost: x\r\n\r\n"
			    "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nHELLO"
			    "GET /echo?a=p3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	raw_sends(fd, pipe3);
	closed = raw_read(fd, 3, &out);
	is_int(count_responses(&out), 3, "three pipelined responses");
	const char *p1 = strstr(out.data ? out.data : "", "a=p1");
	const char *p2 = strstr(out.data ? out.data : "", "HELLO");
	const char *p3 = strstr(out.data ? out.data : "", "a=p3");
	ok(p1 && p2 && p3 && p1 < p2 && p2 < p3, "in order");
	ok(closed && has(&out, "Connection: close"), "Connection: close honoured");
	close(fd);

	/*
	 * A 3 MiB body streamed with pauses, the next request right behind it in
	 * the same write: the server reads past libevent's 4 KiB per event
	 * (read_more) yet stops at the paused body's watermark, and the bytes
	 * after the body stay for the next request.
	 */
	{
		buf big = BUF_INIT;
		uint64_t sum = 0;
		char want[64];
		const size_t n = 3u << 20;
		buf_printf(&big, "POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
			   n);
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)(i * 7 % 251);
			buf_append_byte(&big, (char)c);
			sum += c;
		}
		buf_append_str(&big, "GET /echo?a=after HTTP/1.1\r\nHost: x\r\n\r\n");
		fd = raw_connect();
		raw_send(fd, big.data, big.len);
		raw_read(fd, 2, &out);
		snprintf(want, sizeof(want), "\r\n\r\n%zu %llu", n, (unsigned long long)sum);
		ok(has(&out, want), "a 3 MiB streamed body arrives whole");
		ok(has(&out, "a=after"), "the request behind it is answered");
		close(fd);
		buf_free(&big);
	}

	/* Chunked upload, decoded for read_body. */
	fd = raw_connect();
	const char *ch = "POST /body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
			 "4\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n\r\n";
	raw_sends(fd, ch);
	raw_read(fd, 1, &out);
	ok(has(&out, "Content-Length: 23\r\n") && has(&out, "\r\n\r\nWikipedia in\r\n\r\nchunks."),
	   "chunked body decoded");
	close(fd);

	/* 100-continue: the interim response comes only once the handler reads. */
	fd = raw_connect();
	const char *ex = "PUT /body HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
			 "Content-Length: 5\r\n\r\n";
	raw_sends(fd, ex);
	raw_read(fd, 0, &out);
	ok(has(&out, "HTTP/1.1 100 Continue\r\n\r\n") && !has(&out, "200 OK"), "100 Continue sent");
	raw_sends(fd, "abcde");
	raw_read(fd, 1, &out);
	ok(has(&out, "200 OK") && has(&out, "abcde"), "body after 100 Continue");
	close(fd);

	/* read_body limit: 413 without 100 Continue, connection closed. */
	fd = raw_connect();
	const char *big = "PUT /body?limit=10 HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
			  "Content-Length: 20\r\n\r\n";
	raw_sends(fd, big);
	closed = raw_read(fd, 1, &out);
	ok(has(&out, "HTTP/1.1 413 ") && !has(&out, "100 Continue"), "413 for Content-Length");
	ok(closed && has(&out, "Connection: close"), "closed after 413");
	close(fd);
	fd = raw_connect();
	const char *bigch = "POST /body?limit=10 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked"
			    "\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n";
	raw_sends(fd, bigch);
	raw_read(fd, 1, &out);
	ok(has(&out, "HTTP/1.1 413 "), "413 for a chunked body over the limit");
	close(fd);

	/* Limits and garbage. */
	buf req = BUF_INIT;
	buf_append_str(&req, "GET /echo HTTP/1.1\r\nHost: x\r\nX-Big: ");
	for (int i = 0; i < 5000; i++)
		buf_append_byte(&req, 'h');
	buf_append_str(&req, "\r\n\r\n");
	fd = raw_connect();
	raw_send(fd, req.data, req.len);
	closed = raw_read(fd, 1, &out);
	ok(has(&out, "HTTP/1.1 431 ") && closed, "431 for headers over the limit");
	close(fd);
	buf_reset(&req);
	buf_append_str(&req, "GET /echo?");
	for (int i = 0; i < 2000; i++)
		buf_append_byte(&req, 'u');
	buf_append_str(&req, " HTTP/1.1\r\nHost: x\r\n\r\n");
	fd = raw_connect();
	raw_send(fd, req.data, req.len);
	closed = raw_read(fd, 1, &out);
	ok(has(&out, "HTTP/1.1 414 ") && closed, "414 for a long URI");
	close(fd);
	buf_free(&req);
	fd = raw_connect();
	raw_sends(fd, "\x01\x02garbage\r\n\r\n");
	closed = raw_read(fd, 1, &out);
	ok(has(&out, "HTTP/1.1 400 ") && has(&out, "{\"error\":") && closed, "400 for garbage");
	close(fd);
	fd = raw_connect();
	raw_sends(fd, "GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n");
	raw_read(fd, 1, &out);
	ok(has(&out, "HTTP/1.1 400 "), "400 for a bad escape in the path");
	close(fd);

	/* HTTP/1.0 closes by default. */
	fd = raw_connect();
	raw_sends(fd, "GET /echo HTTP/1.0\r\n\r\n");
	closed = raw_read(fd, 1, &out);
	ok(closed && has(&out, "Connection: close") && has(&out, "200 OK"), "HTTP/1.0 close");
	close(fd);

	/* The peer leaves mid-body (read and stream): no crash, server keeps serving. */
	int errs_before = atomic_load(&stream_errors);
	for (int i = 0; i < 2; i++) {
		fd = raw_connect();
		const char *h =
			i ? "POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
			  : "POST /body HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n";
		raw_sends(fd, h);
		raw_sends(fd, "0123456789");
		usleep(20000);
		close(fd);
	}
	/* An abortive close (RST) in the middle of a chunked body. */
	fd = raw_connect();
	const char *rh = "POST /stream HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
			 "10\r\n0123";
	raw_sends(fd, rh);
	usleep(20000);
	struct linger lg = {1, 0};
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
	for (int i = 0; i < 100 && atomic_load(&stream_errors) < errs_before + 2; i++)
		usleep(10000);
	is_int(atomic_load(&stream_errors) - errs_before, 2, "stream on_end saw both failures");
	/*
	 * A peer that sends part of a streamed body and leaves at once: the EOF
	 * arrives while the handler has paused the body with bytes still
	 * buffered; feeding those later must still end the body with an error.
	 */
	for (int i = 0; i < 20; i++) {
		buf part = BUF_INIT;
		int before = atomic_load(&stream_errors);
		buf_append_str(
			&part,
			"POST /stream HTTP/1.1\r\nHost: x\r\nContent-Length: 4000000\r\n\r\n");
		for (int k = 0; k < 600000; k++)
			buf_append_byte(&part, 'x');
		fd = raw_connect();
		raw_send(fd, part.data, part.len);
		close(fd);
		buf_free(&part);
		for (int k = 0; k < 300 && atomic_load(&stream_errors) == before; k++)
			usleep(10000);
		if (!ok(atomic_load(&stream_errors) == before + 1,
			"a body cut short behind a pause ends in an error (%d)", i))
			break;
	}

	/* A download abandoned while the producer waits for drain still ends its response. */
	int big_before = atomic_load(&big_done);
	fd = raw_connect();
	int small = 4096;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	raw_sends(fd, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
	usleep(100000);
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
	for (int i = 0; i < 200 && atomic_load(&big_done) == big_before; i++)
		usleep(10000);
	is_int(atomic_load(&big_done) - big_before, 1, "abandoned streamed response still ended");
	fd = raw_connect();
	raw_sends(fd, "GET /echo?a=alive HTTP/1.1\r\nHost: x\r\n\r\n");
	raw_read(fd, 1, &out);
	ok(has(&out, "a=alive"), "server still serves after peers vanished");
	close(fd);
	buf_free(&out);
}

/* A second server with a 1 s idle timeout and room for one connection. */
static void test_limits(void)
{
	struct http_server_opts o = {
		.port = 0, .threads = 1, .idle_timeout_sec = 1, .max_connections = 1};
	buf out = BUF_INIT;
	wfs_err err;
	int saved = port;
	http_server *s = http_server_new(&o, handler, NULL, &err);
	ok(s != NULL, "second server");
	if (!s)
		return;
	port = http_server_port(s);
	http_server_start(s);
	int a = raw_connect();
	raw_sends(a, "GET /echo?a=1 HTTP/1.1\r\nHost: x\r\n\r\n");
	ok(!raw_read(a, 1, &out) && has(&out, "a=1"), "first connection served");
	int b = raw_connect();
	raw_sends(b, "GET /echo?a=2 HTTP/1.1\r\nHost: x\r\n\r\n");
	ok(raw_read(b, 1, &out) && !has(&out, "a=2"), "over max_connections: closed unserved");
	close(b);
	uint64_t t0 = time_mono_ns();
	ok(raw_read(a, 0, &out), "idle connection closed by the server");
	uint64_t ms = (time_mono_ns() - t0) / 1000000;
	ok(ms >= 500 && ms < 2900, "after about the idle timeout (%llu ms)",
	   (unsigned long long)ms);
	close(a);
	struct http_server_opts busy = {.port = port, .threads = 1};
	ok(http_server_new(&busy, handler, NULL, &err) == NULL, "a busy port is an error");
	http_server_free(s);
	port = saved;
	buf_free(&out);
}

int main(void)
{
	struct http_server_opts o = {
		.host = "127.0.0.1",
		.port = 0,
		.threads = 2,
		.max_header_bytes = 4096,
		.max_uri_bytes = 1024,
		.idle_timeout_sec = 10,
		.thread_name = "wfs-test-loop",
	};
	wfs_err err;

	signal(SIGPIPE, SIG_IGN);
	http_client_global_init();
	workers = pool_new(2, NULL);
	http_server *s = http_server_new(&o, handler, NULL, &err);
	ok(s != NULL, "server created");
	if (!s)
		return done_testing();
	port = http_server_port(s);
	ok(port > 0, "bound port %d", port);
	http_server_start(s);

	test_client();
	test_raw();
	test_limits();

	pool_free(workers);
	http_server_free(s);
	return done_testing();
}
