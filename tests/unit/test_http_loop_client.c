/*
 * The loop client (lib/http_loop_client.c) against a scripted peer on
 * 127.0.0.1: answers, keep-alive, a kept connection the peer dropped (sent
 * again), refusal, silence (timeout), garbage, an oversized or cut-off body,
 * and requests in flight when the client is freed.
 */
#include "config.h"
#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "http_loop_client.h"
#include "http_peer.h"
#include "tap.h"
#include "util.h"

/* What the peer does with the requests it reads: a fault (http_peer.h) or these. */
enum mode {
	ANSWER = PEER_FAULTS, /* 200 with "<path>|<body>", kept alive */
	BIG,                  /* a 100000-byte body */
};

static _Atomic int mode;
static atomic_int accepts;
static int lfd, port;

/* Reads one request (head and Content-Length body) into out; false at EOF. */
static bool read_request(int fd, char *out, size_t cap, size_t *len)
{
	size_t n = 0;
	char *end;
	long clen;
	while (!(end = memmem(out, n, "\r\n\r\n", 4))) {
		ssize_t k = n < cap ? read(fd, out + n, cap - n) : -1;
		if (k <= 0)
			return false;
		n += (size_t)k;
	}
	const char *cl = strcasestr(out, "Content-Length: ");
	clen = cl ? strtol(cl + 16, NULL, 10) : 0;
	while (n < (size_t)(end + 4 - out) + (size_t)clen) {
		ssize_t k = read(fd, out + n, cap - n);
		if (k <= 0)
			return false;
		n += (size_t)k;
	}
	*len = n;
	return true;
}

static void serve(int fd)
{
	static char req[1 << 16], resp[200000];
	size_t len;
	for (int nth = 1; read_request(fd, req, sizeof(req), &len); nth++) {
		int m = mode;
		enum peer_step step = peer_play(fd, m, nth);
		if (step == PEER_SKIP)
			continue;
		if (step == PEER_HANG_UP)
			return;
		if (m == BIG) {
			int h = snprintf(resp, sizeof(resp),
					 "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
			memset(resp + h, 'x', 100000);
			peer_write_all(fd, resp, (size_t)h + 100000);
			continue;
		}
		/* "<path>|<body>" */
		char *sp = strchr(req, ' '), *sp2 = sp ? strchr(sp + 1, ' ') : NULL;
		char *body = (char *)memmem(req, len, "\r\n\r\n", 4) + 4;
		char payload[4096];
		int pl = snprintf(payload, sizeof(payload), "%.*s|%.*s", (int)(sp2 - sp - 1),
				  sp + 1, (int)(req + len - body), body);
		int h = snprintf(resp, sizeof(resp),
				 "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", pl, payload);
		peer_write_all(fd, resp, (size_t)h);
	}
}

static void *peer_main(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		accepts++;
		serve(fd);
		close(fd);
	}
}

/* ---- the client side ---- */

struct answer {
	bool done;
	wfs_err err;
	int status;
	char body[256];
	size_t len;
	struct event_base *base;
};

static void on_done(void *arg, wfs_err err, int status, const char *body, size_t len)
{
	struct answer *a = arg;
	a->done = true;
	a->err = err;
	a->status = status;
	a->len = len;
	snprintf(a->body, sizeof(a->body), "%.*s", (int)MIN(len, 255), body);
	if (a->base)
		event_base_loopbreak(a->base);
}

/* One request, waited for. */
static struct answer call(struct event_base *base, hlc *c, const char *path, const char *body,
			  long timeout_ms)
{
	struct answer a = {.base = base};
	hlc_request(c, "POST", path, "X-Test: 1\r\n", body, body ? strlen(body) : 0, 65536,
		    timeout_ms, on_done, &a);
	while (!a.done)
		event_base_loop(base, EVLOOP_ONCE);
	a.base = NULL;
	return a;
}

int main(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	struct event_base *base = event_base_new();
	char addr[64];
	pthread_t peer;
	struct answer a;
	wfs_err err;
	hlc *c;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 16) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl))
		return 1;
	port = ntohs(sa.sin_port);
	pthread_create(&peer, NULL, peer_main, NULL);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);

	ok(!hlc_new(base, "no-port-here", &err) && err == WFS_EINVAL, "an address without a port");
	c = hlc_new(base, addr, &err);
	ok(c && !err, "a client of %s", addr);

	mode = ANSWER;
	a = call(base, c, "/a", "hello", 0);
	ok(!a.err && a.status == 200, "answered 200");
	is_str(a.body, "/a|hello", "the path and body reached the peer, the answer came back");
	a = call(base, c, "/b", NULL, 0);
	is_str(a.body, "/b|", "a second request, no body");
	is_int(accepts, 1, "on the same connection (kept alive)");

	mode = PEER_DROP_KEPT;
	a = call(base, c, "/c", "x", 0);
	ok(!a.err && a.status == 200, "a kept connection the peer closed unanswered: sent again");
	is_str(a.body, "/c|x", "and answered on a new connection");
	is_int(accepts, 2, "one more connection");

	mode = PEER_DROP_FIRST;
	a = call(base, c, "/d", NULL, 0);
	is_int(a.err, WFS_EUNAVAIL,
	       "dropped on the kept connection and on the new one: unavailable");
	is_int(accepts, 3, "sent once more, not again");
	a = call(base, c, "/e", NULL, 0);
	is_int(a.err, WFS_EUNAVAIL, "a new connection closed unanswered: not repeated");
	is_int(accepts, 4, "one connection for it");

	mode = PEER_SILENT;
	uint64_t t0 = time_mono_ns();
	a = call(base, c, "/f", NULL, 300);
	is_int(a.err, WFS_ETIMEDOUT, "a silent peer: timed out");
	ok(time_mono_ns() - t0 < 5000000000ull, "after about the timeout");

	mode = PEER_GARBAGE;
	a = call(base, c, "/g", NULL, 0);
	is_int(a.err, WFS_ECORRUPT, "an answer that is not HTTP: corrupt");
	mode = BIG;
	a = call(base, c, "/h", NULL, 0);
	is_int(a.err, WFS_ECORRUPT, "a body over the limit: corrupt");
	mode = PEER_CUT;
	a = call(base, c, "/i", NULL, 0);
	is_int(a.err, WFS_EUNAVAIL, "a body cut off: unavailable");

	mode = ANSWER;
	a = call(base, c, "/j", "again", 0);
	is_str(a.body, "/j|again", "answers again after the failures");

	/* a request in flight when the client goes */
	mode = PEER_SILENT;
	struct answer pending = {0};
	hlc_request(c, "GET", "/k", NULL, NULL, 0, 1024, 10000, on_done, &pending);
	event_base_loop(base, EVLOOP_NONBLOCK);
	hlc_free(c);
	ok(pending.done && pending.err == WFS_EINTERNAL,
	   "freed with a request in flight: answered");

	/* nothing listens */
	c = hlc_new(base, "127.0.0.1:1", &err);
	a = call(base, c, "/l", NULL, 0);
	is_int(a.err, WFS_EUNAVAIL, "connection refused: unavailable");
	hlc_free(c);

	shutdown(lfd, SHUT_RDWR);
	close(lfd);
	pthread_join(peer, NULL);
	event_base_free(base);
	return done_testing();
}
