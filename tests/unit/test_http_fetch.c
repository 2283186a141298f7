/*
 * The in-place client (lib/http_fetch.c) against a scripted peer on
 * 127.0.0.1: PUT bodies sent whole (small, 8 MiB, empty, again on a new
 * connection, refused early), bodies small and large (received in place), ranges, chunked
 * bodies, interim 100 answers, keep-alive and its limits, a kept connection
 * the peer dropped (sent again), refusal, silence (timeout), garbage, a
 * cut-off or oversized body, bad addresses, and threads sharing one fetcher.
 */
#include "config.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "http_fetch.h"
#include "http_peer.h"
#include "tap.h"
#include "util.h"

/* What the peer does with the requests it reads: a fault (http_peer.h) or these. */
enum mode {
	ANSWER = PEER_FAULTS, /* GET /size/N: 200 with N pattern bytes (206 for a Range) */
	CHUNKED,              /* the same body, chunked */
	CONTINUE,             /* an interim 100 first */
	CLOSE,                /* answers with Connection: close, then closes */
	REFUSE,               /* a PUT: 413 before reading its body, then drains it and closes */
};

static _Atomic int mode;
static atomic_int accepts;
static int lfd, port;

static uint8_t pattern_at(uint64_t i) { return (uint8_t)(i * 7 + (i >> 9)); }

static bool pattern_matches(const char *p, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((uint8_t)p[i] != pattern_at(off + i))
			return false;
	return true;
}

/*
 * Reads one request head into out (NUL-terminated); 0 at EOF, else the bytes
 * read, which may go on past the head into a body.
 */
static size_t read_request(int fd, char *out, size_t cap)
{
	size_t n = 0;
	while (!memmem(out, n, "\r\n\r\n", 4)) {
		ssize_t k = n + 1 < cap ? read(fd, out + n, cap - 1 - n) : -1;
		if (k <= 0)
			return 0;
		n += (size_t)k;
	}
	out[n] = '\0';
	return n;
}

/*
 * A PUT whose head (and maybe the body's first bytes) is req[0, n): reads
 * the rest of its body and answers 201 with "<length> ok" when the body is
 * the pattern ("<length> bad" when not). REFUSE answers 413 first.
 */
static bool serve_put(int fd, const char *req, size_t n, int m)
{
	unsigned long long cl = 0;
	const char *clh = strstr(req, "\r\nContent-Length: ");
	size_t head = (size_t)((const char *)memmem(req, n, "\r\n\r\n", 4) - req) + 4, have;
	char *body, answer[256], text[64];
	int h, t;
	bool good;

	if (!clh || sscanf(clh, "\r\nContent-Length: %llu", &cl) != 1 || cl > (64u << 20))
		return false;
	if (m == REFUSE) {
		static const char no[] = "HTTP/1.1 413 Payload Too Large\r\nConnection: "
					 "close\r\nContent-Length: 0\r\n\r\n";
		char sink[65536];
		peer_write_all(fd, no, strlen(no));
		while (read(fd, sink, sizeof(sink)) > 0)
			;
		return false;
	}
	body = xmalloc(cl + 1);
	have = MIN(n - head, (size_t)cl);
	memcpy(body, req + head, have);
	while (have < cl) {
		ssize_t k = read(fd, body + have, cl - have);
		if (k <= 0)
			break;
		have += (size_t)k;
	}
	good = have == cl && pattern_matches(body, 0, cl);
	free(body);
	t = snprintf(text, sizeof(text), "%llu %s", cl, good ? "ok" : "bad");
	h = snprintf(answer, sizeof(answer), "HTTP/1.1 201 Created\r\nContent-Length: %d\r\n\r\n%s",
		     t, text);
	peer_write_all(fd, answer, (size_t)h);
	return have == cl;
}

/* The pattern's bytes [off, off+len) as the body of an answer on fd. */
static void send_pattern(int fd, uint64_t off, size_t len, bool chunked)
{
	char *b = xmalloc(len ? len : 1);
	for (size_t i = 0; i < len; i++)
		b[i] = (char)pattern_at(off + i);
	if (!chunked) {
		peer_write_all(fd, b, len);
	} else {
		for (size_t at = 0; at < len; at += 1000) {
			char hex[32];
			size_t n = MIN((size_t)1000, len - at);
			int h = snprintf(hex, sizeof(hex), "%zx;ext=1\r\n", n);
			peer_write_all(fd, hex, (size_t)h);
			peer_write_all(fd, b + at, n);
			peer_write_all(fd, "\r\n", 2);
		}
		peer_write_all(fd, "0\r\nX-Trailer: t\r\n\r\n", 19);
	}
	free(b);
}

static void serve(int fd)
{
	char req[8192], head[512];
	size_t got;
	for (int nth = 1; (got = read_request(fd, req, sizeof(req))); nth++) {
		int m = mode;
		unsigned long long size = 0, a = 0, b = 0;
		const char *range = strstr(req, "\r\nRange: bytes=");
		bool ranged = range && sscanf(range, "\r\nRange: bytes=%llu-%llu", &a, &b) == 2;
		int h;
		enum peer_step step = peer_play(fd, m, nth);
		if (step == PEER_SKIP)
			continue;
		if (step == PEER_HANG_UP)
			return;
		if (!strncmp(req, "PUT ", 4)) {
			if (!serve_put(fd, req, got, m))
				return;
			continue;
		}
		sscanf(req, "GET /size/%llu", &size);
		if (ranged && (b >= size || a > b))
			ranged = false;
		if (m == CONTINUE)
			peer_write_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		if (m == CHUNKED)
			h = snprintf(head, sizeof(head),
				     "HTTP/1.1 200 OK\r\nX-Test: yes\r\nTransfer-Encoding: "
				     "chunked\r\n\r\n");
		else if (ranged)
			h = snprintf(head, sizeof(head),
				     "HTTP/1.1 206 Partial Content\r\nContent-Length: %llu\r\n\r\n",
				     b - a + 1);
		else
			h = snprintf(
				head, sizeof(head),
				"HTTP/1.1 200 OK\r\nX-Test: yes\r\n%sContent-Length: %llu\r\n\r\n",
				m == CLOSE ? "Connection: close\r\n" : "", size);
		peer_write_all(fd, head, (size_t)h);
		if (ranged)
			send_pattern(fd, a, (size_t)(b - a + 1), false);
		else
			send_pattern(fd, 0, (size_t)size, m == CHUNKED);
		if (m == CLOSE)
			return;
	}
}

static void *conn_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	serve(fd);
	close(fd);
	return NULL;
}

static void *peer_main(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_t t;
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		accepts++;
		pthread_create(&t, NULL, conn_main, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
}

static char host[64];

static wfs_err get(http_fetcher *f, const char *path, const char *const *hdr, long ms, uint64_t max,
		   struct http_result *r)
{
	return http_fetch_get(f, host, path, hdr, ms, max, r);
}

static void test_answers(http_fetcher *f)
{
	struct http_result r;
	char v[16];
	int a0;
	http_result_init(&r);

	mode = ANSWER;
	a0 = accepts;
	is_int(get(f, "/size/5", NULL, 2000, 1 << 20, &r), WFS_OK, "small GET");
	ok(r.status == 200 && r.body.len == 5 && pattern_matches(r.body.data, 0, 5) &&
		   r.body.data[5] == '\0',
	   "200, the body, NUL-terminated");
	ok(http_result_header(&r, "x-test", v, sizeof(v)) && !strcmp(v, "yes"), "headers kept");

	is_int(get(f, "/size/8388608", NULL, 5000, 64 << 20, &r), WFS_OK, "8 MiB GET");
	ok(r.body.len == 8 << 20 && pattern_matches(r.body.data, 0, 8 << 20), "8 MiB body");
	is_int(accepts - a0, 1, "one connection carried both (kept alive)");

	{
		const char *hdr[] = {"Range: bytes=1000-2000999", NULL};
		is_int(get(f, "/size/4000000", hdr, 5000, UINT64_MAX, &r), WFS_OK, "ranged GET");
		ok(r.status == 206 && r.body.len == 2000000 &&
			   pattern_matches(r.body.data, 1000, 2000000),
		   "206 with the range's bytes");
	}
	is_int(get(f, "/size/0", NULL, 2000, 10, &r), WFS_OK, "empty body");
	ok(r.status == 200 && r.body.len == 0, "no bytes");

	mode = CHUNKED;
	is_int(get(f, "/size/300000", NULL, 5000, 1 << 20, &r), WFS_OK, "chunked GET");
	ok(r.body.len == 300000 && pattern_matches(r.body.data, 0, 300000), "chunks joined");
	ok(http_result_header(&r, "X-Test", v, sizeof(v)), "header of a chunked answer");

	mode = CONTINUE;
	is_int(get(f, "/size/70000", NULL, 5000, 1 << 20, &r), WFS_OK, "after an interim 100");
	ok(r.status == 200 && r.body.len == 70000 && pattern_matches(r.body.data, 0, 70000),
	   "the final answer");

	mode = CLOSE;
	is_int(get(f, "/size/10", NULL, 2000, 1 << 20, &r), WFS_OK, "Connection: close answer");
	mode = ANSWER;
	a0 = accepts;
	is_int(get(f, "/size/10", NULL, 2000, 1 << 20, &r), WFS_OK, "next GET");
	is_int(accepts - a0, 1, "on a new connection");
	http_result_free(&r);
}

static void test_failures(http_fetcher *f)
{
	struct http_result r;
	uint64_t t0;
	int a0;
	http_result_init(&r);

	mode = ANSWER;
	is_int(get(f, "/size/1000", NULL, 2000, 999, &r), WFS_ETOOBIG, "body over max_body");
	ok(r.status == 0 && r.body.len == 0, "nothing kept");
	is_int(get(f, "/size/1000", NULL, 2000, 1000, &r), WFS_OK, "body of exactly max_body");

	mode = PEER_DROP_KEPT;
	a0 = accepts;
	is_int(get(f, "/size/10", NULL, 2000, 100, &r), WFS_OK, "first GET on a connection");
	is_int(get(f, "/size/20", NULL, 2000, 100, &r), WFS_OK,
	       "the peer dropped the kept connection: sent again");
	ok(r.body.len == 20 && pattern_matches(r.body.data, 0, 20), "the right answer");
	ok(accepts - a0 >= 2, "on a new connection (%d)", accepts - a0);

	mode = PEER_SILENT;
	t0 = time_mono_ns();
	is_int(get(f, "/size/10", NULL, 300, 100, &r), WFS_ETIMEDOUT, "silent peer: timeout");
	ok(time_mono_ns() - t0 < 3000000000ull, "after %.2f s",
	   (double)(time_mono_ns() - t0) / 1e9);

	mode = PEER_GARBAGE;
	is_int(get(f, "/size/10", NULL, 2000, 100, &r), WFS_EUNAVAIL, "not HTTP: unavailable");
	mode = PEER_CUT;
	is_int(get(f, "/size/10", NULL, 2000, 1000, &r), WFS_EUNAVAIL, "cut-off body");
	ok(r.status == 0 && r.body.len == 0, "no partial body handed over");

	{
		int s = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t al = sizeof(a);
		char dead[64];
		bind(s, (struct sockaddr *)&a, sizeof(a));
		getsockname(s, (struct sockaddr *)&a, &al);
		snprintf(dead, sizeof(dead), "127.0.0.1:%d", ntohs(a.sin_port));
		close(s); /* bound, never listening: refused */
		is_int(http_fetch_get(f, dead, "/x", NULL, 2000, 10, &r), WFS_EUNAVAIL,
		       "refused: unavailable");
	}
	is_int(http_fetch_get(f, "no-colon", "/x", NULL, 2000, 10, &r), WFS_EUNAVAIL,
	       "no port: unavailable");
	is_int(http_fetch_get(f, "no-such-host.invalid:80", "/x", NULL, 2000, 10, &r), WFS_EUNAVAIL,
	       "unknown host: unavailable");
	mode = ANSWER;
	is_int(get(f, "/size/3", NULL, 2000, 10, &r), WFS_OK, "fine again after the failures");
	http_result_free(&r);
}

/* A PUT of len pattern bytes to /put: the peer's answer, "" when none arrived. */
static wfs_err put(http_fetcher *f, size_t len, long ms, struct http_result *r)
{
	char *b = xmalloc(len ? len : 1);
	wfs_err err;
	for (size_t i = 0; i < len; i++)
		b[i] = (char)pattern_at(i);
	err = http_fetch_request(f, "PUT", host, "/put", NULL, b, len, ms, 1 << 10, r);
	free(b);
	return err;
}

static void test_put(http_fetcher *f)
{
	struct http_result r;
	int a0;
	http_result_init(&r);

	mode = ANSWER;
	a0 = accepts;
	is_int(put(f, 8 << 20, 5000, &r), WFS_OK, "8 MiB PUT");
	ok(r.status == 201 && !strcmp(r.body.data, "8388608 ok"), "the peer got every byte (%s)",
	   r.body.data ? r.body.data : "");
	is_int(put(f, 0, 5000, &r), WFS_OK, "empty PUT");
	ok(r.status == 201 && !strcmp(r.body.data, "0 ok"), "Content-Length: 0 sent");
	is_int(put(f, 100, 5000, &r), WFS_OK, "small PUT");
	ok(r.status == 201 && !strcmp(r.body.data, "100 ok"), "its 100 bytes");
	ok(accepts - a0 <= 1, "all on one kept connection");

	mode = PEER_DROP_KEPT;
	is_int(put(f, 1 << 20, 5000, &r), WFS_OK,
	       "the peer dropped the kept connection: PUT sent again");
	ok(r.status == 201 && !strcmp(r.body.data, "1048576 ok"), "the whole body, once more");

	mode = REFUSE;
	is_int(put(f, 4 << 20, 5000, &r), WFS_OK, "a PUT refused before its body was read");
	is_int(r.status, 413, "the early answer is returned");
	mode = ANSWER;
	a0 = accepts;
	is_int(put(f, 10, 5000, &r), WFS_OK, "next PUT");
	is_int(accepts - a0, 1, "on a new connection (the refusing one was not kept)");

	mode = PEER_SILENT;
	is_int(put(f, 10, 300, &r), WFS_ETIMEDOUT, "a PUT nobody answers: timeout");
	mode = ANSWER;
	http_result_free(&r);
}

static void test_idle_expiry(void)
{
	http_fetcher *f = http_fetcher_new(8, 200);
	struct http_result r;
	int a0;
	http_result_init(&r);
	mode = ANSWER;
	a0 = accepts;
	is_int(get(f, "/size/10", NULL, 2000, 100, &r), WFS_OK, "GET");
	is_int(get(f, "/size/10", NULL, 2000, 100, &r), WFS_OK, "GET at once");
	is_int(accepts - a0, 1, "the idle connection was reused");
	usleep(600 * 1000);
	is_int(get(f, "/size/10", NULL, 2000, 100, &r), WFS_OK, "GET after 600 ms");
	is_int(accepts - a0, 2, "the connection idle for longer than 200 ms was closed");
	http_result_free(&r);
	http_fetcher_free(f);
}

struct worker {
	http_fetcher *f;
	int id;
	bool good;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct http_result r;
	http_result_init(&r);
	w->good = true;
	for (int i = 0; i < 30 && w->good; i++) {
		size_t size = ((size_t)w->id * 7919 + (size_t)i * 104729) % (1 << 20);
		char path[64];
		snprintf(path, sizeof(path), "/size/%zu", size);
		w->good = get(w->f, path, NULL, 10000, 1 << 20, &r) == WFS_OK && r.status == 200 &&
			  r.body.len == size && pattern_matches(r.body.data, 0, size);
	}
	http_result_free(&r);
	return NULL;
}

static void test_threads(void)
{
	http_fetcher *f = http_fetcher_new(4, 5000); /* fewer idle slots than threads */
	pthread_t t[6];
	struct worker w[6];
	bool all = true;
	mode = ANSWER;
	for (int i = 0; i < 6; i++) {
		w[i] = (struct worker){f, i, false};
		pthread_create(&t[i], NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		all &= w[i].good;
	}
	ok(all, "6 threads x 30 GETs through one fetcher");
	http_fetcher_free(f); /* closes the idle connections */
}

int main(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	pthread_t peer;
	http_fetcher *f;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 64) ||
	    getsockname(lfd, (struct sockaddr *)&a, &al))
		return 1;
	port = ntohs(a.sin_port);
	snprintf(host, sizeof(host), "127.0.0.1:%d", port);
	pthread_create(&peer, NULL, peer_main, NULL);
	pthread_detach(peer);

	f = http_fetcher_new(8, 5000);
	test_answers(f);
	test_failures(f);
	test_put(f);
	http_fetcher_free(f);
	test_threads();
	test_idle_expiry();
	{
		/* keeping no idle connection: each GET on its own */
		http_fetcher *none = http_fetcher_new(0, 1000);
		struct http_result r;
		int a0 = accepts;
		http_result_init(&r);
		ok(get(none, "/size/7", NULL, 2000, 100, &r) == WFS_OK &&
			   get(none, "/size/7", NULL, 2000, 100, &r) == WFS_OK,
		   "a fetcher that keeps nothing idle");
		is_int(accepts - a0, 2, "one connection per GET");
		http_result_free(&r);
		http_fetcher_free(none);
	}
	http_fetcher_free(NULL);
	return done_testing();
}
