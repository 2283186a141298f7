/*
 * The round trip of one metadata call of the filer's JSON entry API
 * (docs/api-filer-json.md), the figure that bounds a mount's small-file work:
 * N sequential creates of fresh files in one directory, then N updates (set
 * mode, as chmod does), N lookups and N deletes of them, over one keep-alive
 * connection, one call in flight, each timed from its write to the end of its
 * answer. The client is a plain socket with TCP_NODELAY and one write per
 * request, so nearly all of the time measured is the filer's. Starts nothing:
 * it takes a running filer's address (tests/bench/filer_rtt.sh starts one).
 * Prints p50, p99 and mean in microseconds and calls per second for each kind.
 * With CLIENT=rpc the calls go through client/filer_rpc.h instead (what
 * weedfs-mount and the gateway use): the difference is that client's cost.
 *
 * Usage: filer_rtt HOST:PORT [N] [DIR]
 *   N    calls of each kind (default 5000)
 *   DIR  the directory the files go in (default /rtt-<pid>; made, and removed at the end)
 * Environment: FSYNC=1 sends the updates with "fsync": true; CLIENT=rpc (see above).
 */
#include "config.h"
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "client/filer_rpc.h"
#include "http_client.h"

#define BUF_SIZE (64u << 10)

static int fd = -1;
static char host[256];
static char in[BUF_SIZE];
static size_t in_len;
static filer_rpc *rpc; /* CLIENT=rpc */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int connect_to(const char *addr)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
	const char *colon = strrchr(addr, ':');
	int one = 1;

	if (!colon || (size_t)(colon - addr) >= sizeof(host)) {
		fprintf(stderr, "filer_rtt: address must be HOST:PORT\n");
		return -1;
	}
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	if (getaddrinfo(host, colon + 1, &hints, &ai)) {
		fprintf(stderr, "filer_rtt: cannot resolve %s\n", addr);
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		perror("filer_rtt: connect");
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

/* Reads one answer: returns its status (0: broken) and leaves what follows it buffered. */
static int read_answer(void)
{
	size_t head = 0, clen = 0, need;
	int status = 0;

	for (;;) {
		char *end = in_len >= 4 ? memmem(in, in_len, "\r\n\r\n", 4) : NULL;
		if (end && !head) {
			head = (size_t)(end - in) + 4;
			if (sscanf(in, "HTTP/1.%*d %d", &status) != 1)
				return 0;
			for (char *p = in; p && p < end; p = strstr(p, "\r\n"), p = p ? p + 2 : NULL)
				if (!strncasecmp(p, "Content-Length:", 15))
					clen = strtoul(p + 15, NULL, 10);
		}
		if (head && in_len >= head + clen)
			break;
		need = sizeof(in) - in_len;
		if (!need)
			return 0; /* an answer larger than the buffer: not one of ours */
		ssize_t n = read(fd, in + in_len, need);
		if (n <= 0)
			return 0;
		in_len += (size_t)n;
	}
	memmove(in, in + head + clen, in_len - head - clen);
	in_len -= head + clen;
	return status;
}

/* The same through filer_rpc: 200 for any success, else 500 (or 0: transport). */
static int call_rpc(const char *op, const char *body)
{
	buf resp;
	buf_init(&resp);
	wfs_err e = filer_rpc_call(rpc, op, body, strlen(body), &resp);
	buf_free(&resp);
	return e == WFS_OK ? 200 : e == WFS_EIO || e == WFS_EUNAVAIL ? 0 : 500;
}

/* POST /.api/v1/op with body: the answer's status, 0 when the connection broke. */
static int call(const char *op, const char *body)
{
	char req[8192];
	if (rpc)
		return call_rpc(op, body);
	size_t blen = strlen(body);
	int n = snprintf(req, sizeof(req),
			 "POST /.api/v1/%s HTTP/1.1\r\nHost: %s\r\n"
			 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
			 op, host, blen, body);
	if (n < 0 || (size_t)n >= sizeof(req))
		return 0;
	for (size_t off = 0; off < (size_t)n;) {
		ssize_t w = write(fd, req + off, (size_t)n - off);
		if (w <= 0)
			return 0;
		off += (size_t)w;
	}
	return read_answer();
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *kind, uint64_t *t, size_t n, uint64_t wall_ns)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += t[i];
	qsort(t, n, sizeof(*t), cmp_u64);
	printf("%-7s n=%zu  p50 %6.1f us  p99 %6.1f us  mean %6.1f us  %7.0f ops/s\n", kind, n,
	       t[n / 2] / 1e3, t[n * 99 / 100] / 1e3, sum / 1e3 / n, n * 1e9 / wall_ns);
}

enum kind { K_CREATE, K_UPDATE, K_LOOKUP, K_DELETE, K_N };
static const char *const kind_op[K_N] = {"create", "update", "lookup", "delete"};

static void body_of(enum kind k, const char *dir, size_t i, bool fsync, char *b, size_t cap)
{
	switch (k) {
	case K_CREATE:
		snprintf(b, cap,
			 "{\"entry\":{\"path\":\"%s/f%zu\",\"mode\":33188,\"uid\":0,\"gid\":0},"
			 "\"exclusive\":true}",
			 dir, i);
		break;
	case K_UPDATE:
		snprintf(b, cap, "{\"path\":\"%s/f%zu\",\"set\":{\"mode\":%d}%s}", dir, i,
			 i % 2 ? 0600 : 0640, fsync ? ",\"fsync\":true" : "");
		break;
	case K_LOOKUP:
		snprintf(b, cap, "{\"path\":\"%s/f%zu\"}", dir, i);
		break;
	default:
		snprintf(b, cap, "{\"path\":\"%s/f%zu\"}", dir, i);
		break;
	}
}

int main(int argc, char **argv)
{
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 5000;
	bool fsync = getenv("FSYNC") && !strcmp(getenv("FSYNC"), "1");
	char dir[256], body[1024];
	uint64_t *t;

	if (argc < 2 || !n) {
		fprintf(stderr, "usage: filer_rtt HOST:PORT [N] [DIR]\n");
		return 2;
	}
	if (argc > 3)
		snprintf(dir, sizeof(dir), "%s", argv[3]);
	else
		snprintf(dir, sizeof(dir), "/rtt-%d", (int)getpid());
	if (getenv("CLIENT") && !strcmp(getenv("CLIENT"), "rpc")) {
		http_client_global_init();
		rpc = filer_rpc_new(argv[1], 0, 1, 0);
	} else if (connect_to(argv[1])) {
		return 1;
	}
	snprintf(body, sizeof(body), "{\"entry\":{\"path\":\"%s\",\"mode\":16877},\"parents\":true}",
		 dir);
	int st = call("create", body);
	if (st / 100 != 2) {
		fprintf(stderr, "filer_rtt: creating %s: status %d\n", dir, st);
		return 1;
	}
	t = calloc(n, sizeof(*t));
	printf("filer_rtt: %s, %zu calls of each kind in %s, one connection%s%s\n", argv[1], n,
	       dir, rpc ? " through filer_rpc" : "", fsync ? ", updates with fsync" : "");
	for (enum kind k = 0; k < K_N; k++) {
		uint64_t start = now_ns();
		for (size_t i = 0; i < n; i++) {
			body_of(k, dir, i, fsync, body, sizeof(body));
			uint64_t t0 = now_ns();
			st = call(kind_op[k], body);
			t[i] = now_ns() - t0;
			if (st / 100 != 2) {
				fprintf(stderr, "filer_rtt: %s %zu: status %d\n", kind_op[k], i, st);
				return 1;
			}
		}
		report(kind_op[k], t, n, now_ns() - start);
	}
	snprintf(body, sizeof(body), "{\"path\":\"%s\",\"recursive\":true}", dir);
	call("delete", body);
	free(t);
	filer_rpc_free(rpc);
	if (fd >= 0)
		close(fd);
	return 0;
}
