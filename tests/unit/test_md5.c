/* MD5: RFC 1321's vectors, every length and split against OpenSSL, and many threads at once. */
#include "config.h"
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "md5.h"
#include "tap.h"
#include "util.h"

static bool matches_openssl(const uint8_t *data, size_t len, const uint8_t got[MD5_SIZE])
{
	uint8_t want[EVP_MAX_MD_SIZE];
	EVP_Digest(data, len, want, NULL, EVP_md5(), NULL);
	return !memcmp(got, want, MD5_SIZE);
}

/* The digest of data fed in pieces of pseudo-random sizes up to max_piece. */
static void digest_in_pieces(const uint8_t *data, size_t len, size_t max_piece, unsigned *seed,
			     uint8_t out[MD5_SIZE])
{
	struct md5_ctx ctx;
	md5_init(&ctx);
	for (size_t off = 0; off < len;) {
		size_t n = 1 + (size_t)rand_r(seed) % max_piece;
		if (n > len - off)
			n = len - off;
		md5_update(&ctx, data + off, n);
		off += n;
	}
	md5_final(&ctx, out);
}

static uint8_t *random_bytes(size_t len, unsigned seed)
{
	uint8_t *b = malloc(len ? len : 1);
	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)rand_r(&seed);
	return b;
}

#define THREADS 12
#define ROUNDS  4

struct worker {
	unsigned seed;
	int wrong;
};

/* Hashes ROUNDS buffers of 64 KiB to 3 MiB in pieces large and small; counts wrong digests. */
static void *worker_run(void *arg)
{
	struct worker *w = arg;
	for (int r = 0; r < ROUNDS; r++) {
		size_t len = (64u << 10) + (size_t)rand_r(&w->seed) % (3u << 20);
		uint8_t *b = random_bytes(len, w->seed), d[MD5_SIZE];
		digest_in_pieces(b, len, 1u << 20, &w->seed, d);
		w->wrong += !matches_openssl(b, len, d);
		free(b);
	}
	return NULL;
}

/* THREADS threads hashing at once; the number of wrong digests. */
static int run_threads(unsigned seed)
{
	pthread_t t[THREADS];
	struct worker w[THREADS];
	int wrong = 0;
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){.seed = seed + (unsigned)i};
		pthread_create(&t[i], NULL, worker_run, &w[i]);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		wrong += w[i].wrong;
	}
	return wrong;
}

int main(void)
{
	static const struct {
		const char *in, *md5;
	} rfc[] = {
		{"", "d41d8cd98f00b204e9800998ecf8427e"},
		{"a", "0cc175b9c0f1b6a831c399e269772661"},
		{"abc", "900150983cd24fb0d6963f7d28e17f72"},
		{"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
		{"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
		 "d174ab98d277d9f5a5611c2c9f419d9f"},
		{"1234567890123456789012345678901234567890123456789012345678901234567890123456789"
		 "0",
		 "57edf4a22be3c955ac49da2e2107b67a"},
	};
	uint8_t d[MD5_SIZE], *b;
	char h[33];
	unsigned seed = 42;
	int wrong = 0;
	struct md5_stats s0, s1;

	for (size_t i = 0; i < sizeof(rfc) / sizeof(rfc[0]); i++) {
		md5_digest(rfc[i].in, strlen(rfc[i].in), d);
		hex_encode(d, MD5_SIZE, h);
		is_str(h, rfc[i].md5, "RFC 1321 test suite");
	}

	/* every length across the padding's boundaries, whole and byte by byte */
	b = random_bytes(300, 7);
	for (size_t len = 0; len <= 300; len++) {
		uint8_t d1[MD5_SIZE];
		md5_digest(b, len, d);
		digest_in_pieces(b, len, 1, &seed, d1);
		wrong += !matches_openssl(b, len, d) + !!memcmp(d, d1, MD5_SIZE);
	}
	free(b);
	is_int(wrong, 0, "lengths 0-300, whole and a byte at a time, as OpenSSL hashes them");

	/* large updates in one thread (a group of one) and split at odd places */
	b = random_bytes((5u << 20) + 13, 8);
	md5_digest(b, (5u << 20) + 13, d);
	ok(matches_openssl(b, (5u << 20) + 13, d), "5 MiB + 13 in one update");
	digest_in_pieces(b, (5u << 20) + 13, 300000, &seed, d);
	ok(matches_openssl(b, (5u << 20) + 13, d), "5 MiB + 13 in pieces of up to 300,000 bytes");
	free(b);

	md5_get_stats(&s0);
	ok(run_threads(100) == 0, "%d threads hashing 64 KiB-3 MiB buffers at once", THREADS);
	md5_get_stats(&s1);
	if (md5_lanes_available())
		ok(s1.lane_blocks > s0.lane_blocks,
		   "with AVX2 the threads shared the lanes (%llu blocks)",
		   (unsigned long long)(s1.lane_blocks - s0.lane_blocks));
	else
		ok(s1.lane_blocks == s0.lane_blocks, "without AVX2 nothing went through lanes");

	md5_use_lanes(false);
	md5_get_stats(&s0);
	is_int(run_threads(200), 0, "the same with the lanes turned off");
	md5_get_stats(&s1);
	ok(s1.lane_blocks == s0.lane_blocks && s1.alone_blocks > s0.alone_blocks,
	   "and each stream was hashed alone");
	md5_use_lanes(true);
	return done_testing();
}
