/*
 * MD5, as S3 needs it for ETags and Content-MD5 (not for security).
 *
 * A stream of bytes can only be hashed one block after another, so one MD5
 * runs at one core's speed (~600-700 MiB/s), and the gateway hashes every
 * byte of every PUT. But many streams hash at once (c=16 uploads): large
 * updates from different threads are hashed together, eight streams in the
 * eight 32-bit lanes of AVX2 registers (md5_x8.c), several times the rate
 * of hashing them one by one. A thread with a large update joins one of
 * the process's hashing groups (one per CPU) and waits; whichever waiting
 * thread finds its group idle drives it (runs the lanes) until its own
 * update is done, then hands over. Small updates, and CPUs without AVX2,
 * hash in the calling thread.
 *
 * A context belongs to one thread at a time; any thread may call these.
 */
#ifndef WEEDFS_MD5_H
#define WEEDFS_MD5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MD5_SIZE 16

struct md5_ctx {
	uint32_t h[4];
	uint64_t total;   /* bytes hashed so far */
	uint8_t tail[64]; /* a partial block waiting for more bytes */
	size_t tail_len;
};

void md5_init(struct md5_ctx *ctx);
/* Extends the hash over data; blocks while a hashing group runs it. */
void md5_update(struct md5_ctx *ctx, const void *data, size_t len);
/* Writes the digest; ctx must be initialised again before further use. */
void md5_final(struct md5_ctx *ctx, uint8_t out[MD5_SIZE]);
/* One-shot digest of data. */
void md5_digest(const void *data, size_t len, uint8_t out[MD5_SIZE]);

/* Blocks (of 64 bytes) hashed so far in the lanes and one stream at a time. */
struct md5_stats {
	uint64_t lane_blocks;  /* in a group, several streams at once */
	uint64_t alone_blocks; /* one stream at a time (small updates, a group of one) */
};
void md5_get_stats(struct md5_stats *out);

/* For tests: whether large updates may use the lanes (true when the CPU has AVX2). */
bool md5_lanes_available(void);
/* For tests: false hashes everything one stream at a time, as on a CPU without AVX2. */
void md5_use_lanes(bool on);

#endif
