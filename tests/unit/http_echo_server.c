/*
 * A tiny server on lib/http_server for benchmarks (wrk) and manual poking.
 *   http_echo_server [port] [threads]
 * GET /bytes?n=N answers N bytes (default 1024); other methods echo the body.
 * Prints "port N" once listening; exits on SIGINT/SIGTERM.
 */
#include "config.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "http_server.h"
#include "util.h"

static char payload[1 << 20];

static void echo_body(http_req *req, const char *data, size_t len, void *arg)
{
	(void)arg;
	const char *ct = http_req_header(req, "Content-Type");
	if (ct)
		http_resp_header(req, "Content-Type", ct);
	http_resp_send(req, 200, data, len);
}

static void handler(http_req *req, void *ctx)
{
	(void)ctx;
	if (http_req_method(req) == HTTP_GET || http_req_method(req) == HTTP_HEAD) {
		const char *ns = http_req_query(req, "n");
		uint64_t n = 1024;
		if (ns && (!parse_u64(ns, &n) || n > sizeof(payload))) {
			http_resp_error(req, 400, "bad n");
			return;
		}
		http_resp_header(req, "Content-Type", "application/octet-stream");
		http_resp_send(req, 200, payload, (size_t)n);
		return;
	}
	http_req_read_body(req, 64 << 20, echo_body, NULL);
}

int main(int argc, char **argv)
{
	struct http_server_opts o = {0};
	sigset_t set;
	wfs_err err;
	int sig;

	memset(payload, 'x', sizeof(payload));
	o.port = argc > 1 ? atoi(argv[1]) : 0;
	o.threads = argc > 2 ? atoi(argv[2]) : 0;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	http_server *s = http_server_new(&o, handler, NULL, &err);
	if (!s)
		return 1;
	http_server_start(s);
	printf("port %d\n", http_server_port(s));
	fflush(stdout);
	sigwait(&set, &sig);
	http_server_free(s);
	return 0;
}
