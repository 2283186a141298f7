/*
 * Pieces of the scripted HTTP peers on 127.0.0.1 that the client tests
 * (test_http_loop_client.c, test_http_fetch.c) talk to: writing it all, and
 * the ways a peer misbehaves. A test's own answer modes are numbered from
 * PEER_FAULTS on, so one mode variable holds either.
 */
#ifndef WEEDFS_TESTS_HTTP_PEER_H
#define WEEDFS_TESTS_HTTP_PEER_H

#include <stddef.h>
#include <string.h>
#include <unistd.h>

enum peer_fault {
	PEER_DROP_KEPT,  /* answers a connection's first request, closes at a later one */
	PEER_DROP_FIRST, /* closes at a connection's first request, unanswered */
	PEER_SILENT,     /* reads, never answers */
	PEER_GARBAGE,    /* not HTTP */
	PEER_CUT,        /* declares 100 bytes, sends 3, closes */
	PEER_FAULTS
};

/* What the peer does after peer_play. */
enum peer_step { PEER_ANSWER, PEER_SKIP, PEER_HANG_UP };

static void peer_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t k = write(fd, c, n);
		if (k <= 0)
			return;
		c += k;
		n -= (size_t)k;
	}
}

/* Plays mode's fault, if it is one, on request nth (from 1) of connection fd. */
static enum peer_step peer_play(int fd, int mode, int nth)
{
	static const char cut[] = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc";
	switch (mode) {
	case PEER_DROP_KEPT:
		return nth > 1 ? PEER_HANG_UP : PEER_ANSWER;
	case PEER_DROP_FIRST:
		return PEER_HANG_UP;
	case PEER_SILENT:
		return PEER_SKIP;
	case PEER_GARBAGE:
		peer_write_all(fd, "NOT HTTP AT ALL\r\n\r\n", 19);
		return PEER_HANG_UP;
	case PEER_CUT:
		peer_write_all(fd, cut, strlen(cut));
		return PEER_HANG_UP;
	default:
		return PEER_ANSWER;
	}
}

#endif
