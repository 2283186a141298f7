/*
 * Chunk cache micro-benchmark: read throughput of memory hits and disk hits for
 * 1 MiB and 4 KiB ranges of 4 MiB blobs, against a plain pread of the same
 * range from the same cache file (page cache warm). Also memory hits from 8
 * threads. Then the cost of the cache's index with many small blobs (memory
 * only): puts that grow it, hits spread over it, and puts that evict as they
 * insert. Prints one line per figure.
 *
 *   tests/bench/chunk_cache [DIR] [SECONDS_PER_FIGURE]
 */
#include "config.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mount/chunk_cache.h"
#include "util.h"

#define BLOB   (4u << 20)
#define NBLOBS 16

static double secs = 0.5;
static char fids[NBLOBS][32];

enum mode { M_CACHE, M_PREAD };

struct run {
	chunk_cache *c;
	enum mode mode;
	size_t range;
	int fds[NBLOBS];
	unsigned seed;
	uint64_t ops;
	int fail;
};

static void *run_main(void *arg)
{
	struct run *r = arg;
	uint8_t *dst = xmalloc(r->range);
	uint64_t end = time_mono_ns() + (uint64_t)(secs * 1e9);
	size_t hdr = CHUNK_CACHE_HEADER_MIN + strlen(fids[0]);
	while (time_mono_ns() < end) {
		for (int k = 0; k < 16; k++) {
			unsigned i = (unsigned)rand_r(&r->seed) % NBLOBS;
			uint64_t off = ((uint64_t)rand_r(&r->seed) % (BLOB / r->range)) * r->range;
			if (r->mode == M_CACHE) {
				if (!chunk_cache_read(r->c, fids[i], off, r->range, dst))
					r->fail++;
			} else if (pread(r->fds[i], dst, r->range, (off_t)(hdr + off)) !=
				   (ssize_t)r->range) {
				r->fail++;
			}
			r->ops++;
		}
	}
	free(dst);
	return NULL;
}

static void figure(const char *name, chunk_cache *c, enum mode mode, size_t range, int threads)
{
	struct run r[8];
	pthread_t th[8];
	uint64_t t0 = time_mono_ns();
	for (int t = 0; t < threads; t++) {
		r[t] = (struct run){.c = c, .mode = mode, .range = range, .seed = 7u + (unsigned)t};
		if (mode == M_PREAD)
			for (int i = 0; i < NBLOBS; i++) {
				char *p = chunk_cache_entry_path(c, fids[i]);
				r[t].fds[i] = open(p, O_RDONLY);
				free(p);
			}
		pthread_create(&th[t], NULL, run_main, &r[t]);
	}
	uint64_t ops = 0;
	int fail = 0;
	for (int t = 0; t < threads; t++) {
		pthread_join(th[t], NULL);
		ops += r[t].ops;
		fail += r[t].fail;
		if (mode == M_PREAD)
			for (int i = 0; i < NBLOBS; i++)
				close(r[t].fds[i]);
	}
	double s = (double)(time_mono_ns() - t0) / 1e9;
	printf("%-34s %4zu KiB x%d: %10.0f ops/s %9.1f MiB/s%s\n", name, range >> 10, threads,
	       (double)ops / s, (double)ops * (double)range / s / (1 << 20),
	       fail ? "  (MISSES!)" : "");
	fflush(stdout);
}

#define SMALL_BLOB 256
#define SMALL_N    200000

static void small_figure(const char *name, uint64_t t0, size_t ops, size_t fail)
{
	double s = (double)(time_mono_ns() - t0) / 1e9;
	printf("%-34s %6u B   x1: %10.0f ops/s %7.1f ns/op%s\n", name, SMALL_BLOB,
	       (double)ops / s, s * 1e9 / (double)ops, fail ? "  (MISSES!)" : "");
	fflush(stdout);
}

/* Many small blobs in a memory-only cache: what the index costs per operation. */
static void small_blobs(void)
{
	uint8_t b[SMALL_BLOB], dst[SMALL_BLOB];
	char fid[32];
	wfs_err err;
	unsigned seed = 11;
	size_t fail = 0;
	uint64_t t0;
	chunk_cache *c = chunk_cache_open(NULL, 1ull << 30, 0, &err);

	memset(b, 0x5a, sizeof(b));
	t0 = time_mono_ns();
	for (int i = 0; i < SMALL_N; i++) {
		snprintf(fid, sizeof(fid), "5,%08x%08x", i, 0x1234abcd);
		chunk_cache_put(c, fid, b, sizeof(b));
	}
	small_figure("small blobs: put (index grows)", t0, SMALL_N, 0);
	t0 = time_mono_ns();
	for (int k = 0; k < 4 * SMALL_N; k++) {
		snprintf(fid, sizeof(fid), "5,%08x%08x", (unsigned)rand_r(&seed) % SMALL_N,
			 0x1234abcd);
		fail += !chunk_cache_read(c, fid, 0, sizeof(dst), dst);
	}
	small_figure("small blobs: memory hit", t0, 4 * SMALL_N, fail);
	chunk_cache_close(c);

	/* A quarter of them fit: every put past the first quarter evicts one. */
	c = chunk_cache_open(NULL, (uint64_t)SMALL_BLOB * SMALL_N / 4, 0, &err);
	t0 = time_mono_ns();
	for (int i = 0; i < 2 * SMALL_N; i++) {
		snprintf(fid, sizeof(fid), "6,%08x%08x", i, 0x1234abcd);
		chunk_cache_put(c, fid, b, sizeof(b));
	}
	small_figure("small blobs: put evicting", t0, 2 * SMALL_N, 0);
	chunk_cache_close(c);
}

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/bench_chunk_cache.XXXXXX";
	const char *dir = argc > 1 && *argv[1] ? argv[1] : mkdtemp(tmpl);
	if (argc > 2)
		secs = atof(argv[2]);
	if (!dir)
		return 1;
	uint8_t *b = xmalloc(BLOB);
	for (size_t i = 0; i < BLOB; i++)
		b[i] = (uint8_t)(i * 2654435761u >> 13);
	wfs_err err;
	chunk_cache *c = chunk_cache_open(dir, 128ull << 20, 1ull << 30, &err);
	if (!c)
		return 1;
	for (int i = 0; i < NBLOBS; i++) {
		snprintf(fids[i], sizeof(fids[i]), "3,%010x%08x", i * 77777, 0x1234abcd);
		b[0] = (uint8_t)i;
		chunk_cache_put(c, fids[i], b, BLOB);
	}
	figure("memory hit", c, M_CACHE, 1 << 20, 1);
	figure("memory hit", c, M_CACHE, 4 << 10, 1);
	figure("memory hit", c, M_CACHE, 1 << 20, 8);
	figure("memory hit", c, M_CACHE, 4 << 10, 8);
	chunk_cache_close(c);

	/* No memory level: every read loads and verifies the whole 4 MiB file. */
	c = chunk_cache_open(dir, 0, 1ull << 30, &err);
	figure("disk hit (load+verify 4 MiB)", c, M_CACHE, 1 << 20, 1);
	figure("disk hit (load+verify 4 MiB)", c, M_CACHE, 4 << 10, 1);
	figure("plain pread of the cache file", c, M_PREAD, 1 << 20, 1);
	figure("plain pread of the cache file", c, M_PREAD, 4 << 10, 1);
	struct chunk_cache_stats st;
	chunk_cache_get_stats(c, &st);
	printf("disk hits %llu, misses %llu, corrupt %llu\n", (unsigned long long)st.disk_hits,
	       (unsigned long long)st.misses, (unsigned long long)st.corrupt);
	chunk_cache_close(c);
	small_blobs();
	free(b);
	if (dir == tmpl) {
		char *cmd = xasprintf("rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
		free(cmd);
	}
	return 0;
}
