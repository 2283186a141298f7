/*
 * MD5's rate, the figure that bounds a large PUT through the gateway (its
 * ETag is the MD5 of the body): THREADS threads (default 16, like s3.sh's
 * c=16) each hash their own 64 MiB buffer ROUNDS times in 1 MiB updates, as
 * the gateway does, three ways: OpenSSL's MD5 (each stream alone), weedfs's
 * md5 with its hashing groups (streams share AVX2 lanes) and weedfs's md5
 * with the lanes off. Prints MiB/s over all threads, one line per way.
 *
 * Usage: md5_rate [THREADS] [ROUNDS]
 */
#include "config.h"
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "md5.h"

#define BUF_MIB 64
#define PIECE   (1u << 20)

static int rounds = 2;
static bool use_openssl;

static void *hash_thread(void *arg)
{
	uint8_t *b = arg, d[EVP_MAX_MD_SIZE];
	for (int r = 0; r < rounds; r++) {
		if (use_openssl) {
			EVP_MD_CTX *c = EVP_MD_CTX_new();
			EVP_DigestInit_ex(c, EVP_md5(), NULL);
			for (size_t off = 0; off < (size_t)BUF_MIB << 20; off += PIECE)
				EVP_DigestUpdate(c, b + off, PIECE);
			EVP_DigestFinal_ex(c, d, NULL);
			EVP_MD_CTX_free(c);
		} else {
			struct md5_ctx c;
			md5_init(&c);
			for (size_t off = 0; off < (size_t)BUF_MIB << 20; off += PIECE)
				md5_update(&c, b + off, PIECE);
			md5_final(&c, d);
		}
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void measure(const char *name, int nthreads, uint8_t **bufs)
{
	pthread_t *t = calloc((size_t)nthreads, sizeof(*t));
	double t0 = now(), secs;
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, hash_thread, bufs[i]);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	secs = now() - t0;
	printf("%-28s threads=%d mib_s=%.0f\n", name, nthreads,
	       (double)nthreads * rounds * BUF_MIB / secs);
	free(t);
}

int main(int argc, char **argv)
{
	int nthreads = argc > 1 ? atoi(argv[1]) : 16;
	uint8_t **bufs;

	if (argc > 2)
		rounds = atoi(argv[2]);
	if (nthreads < 1 || nthreads > 256 || rounds < 1) {
		fprintf(stderr, "usage: md5_rate [THREADS 1-256] [ROUNDS >= 1]\n");
		return 2;
	}
	bufs = calloc((size_t)nthreads, sizeof(*bufs));
	for (int i = 0; i < nthreads; i++) {
		bufs[i] = malloc((size_t)BUF_MIB << 20);
		memset(bufs[i], i + 1, (size_t)BUF_MIB << 20);
	}
	use_openssl = true;
	measure("openssl md5, each alone", nthreads, bufs);
	use_openssl = false;
	md5_use_lanes(true);
	measure(md5_lanes_available() ? "weedfs md5, lanes (AVX2)" : "weedfs md5 (no AVX2)",
		nthreads, bufs);
	md5_use_lanes(false);
	measure("weedfs md5, each alone", nthreads, bufs);
	for (int i = 0; i < nthreads; i++)
		free(bufs[i]);
	free(bufs);
	return 0;
}
