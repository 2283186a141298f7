/*
 * The rate of one loopback TCP hop, the figure that bounds a large transfer
 * through the gateway on one machine: every byte of a 64 MiB PUT crosses two
 * hops (client -> gateway -> volume server) and so does every byte of a GET
 * (volume server -> gateway -> client), each a copy into the kernel and one
 * out of it on the same cores. THREADS connections (default 16, like s3.sh's
 * c=16) on 127.0.0.1 each carry ROUNDS x 64 MiB in 1 MiB writes and reads, a
 * sender and a receiver thread per connection, nothing else done with the
 * bytes. Prints MiB/s over all connections.
 *
 * Usage: tcp_hop [THREADS] [ROUNDS]
 */
#include "config.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define STREAM_BYTES ((size_t)64 << 20)
#define IO_SIZE      ((size_t)1 << 20)

static int rounds = 2;

struct conn {
	int send_fd, recv_fd;
	pthread_t sender, receiver;
	int send_failed, recv_failed; /* each written by its own thread only */
};

static void *send_all(void *arg)
{
	struct conn *c = arg;
	char *b = malloc(IO_SIZE);
	memset(b, 0x5a, IO_SIZE);
	for (size_t left = STREAM_BYTES * (size_t)rounds; left && !c->send_failed;) {
		ssize_t n = write(c->send_fd, b, left < IO_SIZE ? left : IO_SIZE);
		if (n <= 0)
			c->send_failed = 1;
		else
			left -= (size_t)n;
	}
	shutdown(c->send_fd, SHUT_WR);
	free(b);
	return NULL;
}

static void *recv_all(void *arg)
{
	struct conn *c = arg;
	char *b = malloc(IO_SIZE);
	size_t got = 0;
	for (;;) {
		ssize_t n = read(c->recv_fd, b, IO_SIZE);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got != STREAM_BYTES * (size_t)rounds)
		c->recv_failed = 1;
	free(b);
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Connects n pairs of sockets through a listener on 127.0.0.1: 0, or -1. */
static int connect_pairs(struct conn *c, int n)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(l, (struct sockaddr *)&a, &alen) || listen(l, n))
		return -1;
	for (int i = 0; i < n; i++) {
		c[i].send_fd = socket(AF_INET, SOCK_STREAM, 0);
		if (c[i].send_fd < 0 || connect(c[i].send_fd, (struct sockaddr *)&a, sizeof(a)))
			return -1;
		c[i].recv_fd = accept(l, NULL, NULL);
		if (c[i].recv_fd < 0)
			return -1;
	}
	close(l);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 16;
	struct conn *c;
	double t0, secs;
	int failed = 0;

	if (argc > 2)
		rounds = atoi(argv[2]);
	if (n < 1 || n > 1024 || rounds < 1) {
		fprintf(stderr, "usage: tcp_hop [THREADS 1-1024] [ROUNDS >= 1]\n");
		return 2;
	}
	c = calloc((size_t)n, sizeof(*c));
	if (connect_pairs(c, n)) {
		perror("tcp_hop: loopback connection");
		return 1;
	}
	t0 = now();
	for (int i = 0; i < n; i++) {
		pthread_create(&c[i].receiver, NULL, recv_all, &c[i]);
		pthread_create(&c[i].sender, NULL, send_all, &c[i]);
	}
	for (int i = 0; i < n; i++) {
		pthread_join(c[i].sender, NULL);
		pthread_join(c[i].receiver, NULL);
		failed |= c[i].send_failed | c[i].recv_failed;
		close(c[i].send_fd);
		close(c[i].recv_fd);
	}
	secs = now() - t0;
	free(c);
	if (failed) {
		fprintf(stderr, "tcp_hop: a connection broke off\n");
		return 1;
	}
	printf("tcp_hop streams=%d mib_s=%.0f\n", n,
	       (double)n * rounds * (double)(STREAM_BYTES >> 20) / secs);
	return 0;
}
