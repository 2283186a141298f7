/* Unit tests for mount/chunk_cache: both levels, LRU, capacity, reopen, corruption, threads. */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "mount/chunk_cache.h"
#include "tap.h"
#include "util.h"

static char root[] = "/tmp/test_chunk_cache.XXXXXX";

/* Blob content that differs per fid index and per position. */
static uint8_t pat(unsigned idx, size_t i) { return (uint8_t)(i * 131 + idx * 7 + (i >> 9)); }

static uint8_t *blob(unsigned idx, size_t len)
{
	uint8_t *b = xmalloc(len ? len : 1);
	for (size_t i = 0; i < len; i++)
		b[i] = pat(idx, i);
	return b;
}

static void fid_of(unsigned idx, char *out, size_t cap)
{
	snprintf(out, cap, "%u,%08x%08x", idx % 7 + 1, idx * 2654435761u, idx);
}

/* Sum of regular file sizes under dir (recursive), counting temp files too; .lock excluded. */
static uint64_t du(const char *dir, int *nfiles)
{
	uint64_t sum = 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, ".lock"))
			continue;
		char *p = xasprintf("%s/%s", dir, de->d_name);
		struct stat st;
		if (lstat(p, &st) == 0) {
			if (S_ISDIR(st.st_mode)) {
				sum += du(p, nfiles);
			} else if (S_ISREG(st.st_mode)) {
				sum += (uint64_t)st.st_size;
				if (nfiles)
					(*nfiles)++;
			}
		}
		free(p);
	}
	closedir(d);
	return sum;
}

static bool file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static bool read_matches(chunk_cache *c, unsigned idx, uint64_t off, size_t len)
{
	char fid[64];
	fid_of(idx, fid, sizeof(fid));
	uint8_t *dst = xmalloc(len ? len : 1);
	bool hit = chunk_cache_read(c, fid, off, len, dst);
	bool same = true;
	for (size_t i = 0; hit && i < len; i++)
		if (dst[i] != pat(idx, off + i))
			same = false;
	free(dst);
	return hit && same;
}

static bool is_hit(chunk_cache *c, unsigned idx)
{
	char fid[64];
	uint8_t b;
	fid_of(idx, fid, sizeof(fid));
	return chunk_cache_read(c, fid, 0, 1, &b);
}

static void put_idx(chunk_cache *c, unsigned idx, size_t len)
{
	char fid[64];
	fid_of(idx, fid, sizeof(fid));
	uint8_t *b = blob(idx, len);
	chunk_cache_put(c, fid, b, len);
	free(b);
}

static char *idx_path(chunk_cache *c, unsigned idx)
{
	char fid[64];
	fid_of(idx, fid, sizeof(fid));
	return chunk_cache_entry_path(c, fid);
}

static uint64_t fsize_of(unsigned idx, size_t len)
{
	char fid[64];
	fid_of(idx, fid, sizeof(fid));
	return CHUNK_CACHE_HEADER_MIN + strlen(fid) + len;
}

static void test_format(void)
{
	const char *fid = "3,01637037d6";
	size_t len = 300;
	uint8_t *data = blob(1, len);
	uint8_t hdr[CHUNK_CACHE_HEADER_MIN + CHUNK_CACHE_FID_MAX];
	size_t hlen = chunk_cache_encode_header(hdr, sizeof(hdr), fid, data, len);
	is_int(hlen, CHUNK_CACHE_HEADER_MIN + strlen(fid), "header length");
	size_t n = hlen + len;
	uint8_t *img = xmalloc(n);
	memcpy(img, hdr, hlen);
	memcpy(img + hlen, data, len);
	struct chunk_cache_entry e;
	is_int(chunk_cache_parse_entry(img, n, &e), WFS_OK, "valid image parses");
	ok(e.fid_len == strlen(fid) && !memcmp(e.fid, fid, e.fid_len), "fid parsed");
	ok(e.len == len && e.data == img + hlen, "data located");

	int flips_caught = 0;
	for (size_t i = 0; i < n; i++) {
		img[i] ^= 0x40;
		if (chunk_cache_parse_entry(img, n, &e) != WFS_OK ||
		    chunk_cache_fid_key(e.fid, e.fid_len) != chunk_cache_fid_key(fid, strlen(fid)))
			flips_caught++;
		img[i] ^= 0x40;
	}
	is_int(flips_caught, n, "every single-byte flip is caught (parse or fid key)");
	int short_caught = 0;
	for (size_t i = 0; i < n; i++)
		short_caught += chunk_cache_parse_entry(img, i, &e) == WFS_ECORRUPT;
	is_int(short_caught, n, "every truncation is caught");

	char longfid[CHUNK_CACHE_FID_MAX + 2];
	memset(longfid, 'a', sizeof(longfid) - 1);
	longfid[sizeof(longfid) - 1] = 0;
	is_int(chunk_cache_encode_header(hdr, sizeof(hdr), longfid, data, len), 0,
	       "a too long fid has no header");
	is_int(chunk_cache_encode_header(hdr, sizeof(hdr), "", data, len), 0, "empty fid refused");
	free(img);
	free(data);
}

static void test_memory(void)
{
	wfs_err err;
	chunk_cache *c = chunk_cache_open(NULL, 3000, 0, &err);
	ok(c && err == WFS_OK, "memory-only open");
	ok(!is_hit(c, 1), "empty cache misses");
	put_idx(c, 1, 1000);
	ok(read_matches(c, 1, 0, 1000), "whole blob hit");
	ok(read_matches(c, 1, 999, 1), "last byte hit");
	ok(read_matches(c, 1, 1000, 0), "empty range at the end hits");
	ok(read_matches(c, 1, 0, 0), "empty range at the start hits");
	uint8_t buf[16];
	ok(!chunk_cache_read(c, "1,nope", 0, 1, buf), "unknown fid misses");
	char fid[64];
	fid_of(1, fid, sizeof(fid));
	ok(!chunk_cache_read(c, fid, 999, 2, buf), "range past the end misses");
	ok(!chunk_cache_read(c, fid, 1001, 0, buf), "offset past the end misses");
	ok(!chunk_cache_read(c, fid, UINT64_MAX, 2, buf), "huge offset misses (no overflow)");

	/* LRU: 1, 2, 3 fill it; touching 1 makes 2 the oldest. */
	put_idx(c, 2, 1000);
	put_idx(c, 3, 1000);
	ok(is_hit(c, 1), "1 still there");
	put_idx(c, 4, 1000);
	ok(!is_hit(c, 2), "least recently used (2) evicted");
	ok(is_hit(c, 1) && is_hit(c, 3) && is_hit(c, 4), "1, 3, 4 kept");
	struct chunk_cache_stats st;
	chunk_cache_get_stats(c, &st);
	is_int(st.mem_bytes, 3000, "mem_bytes held");
	put_idx(c, 5, 3001);
	ok(!is_hit(c, 5), "a blob larger than the memory bound is not kept");
	ok(is_hit(c, 1) && is_hit(c, 3) && is_hit(c, 4), "and evicts nothing");
	put_idx(c, 6, 3000);
	ok(read_matches(c, 6, 0, 3000), "a blob of exactly the bound is kept");
	chunk_cache_get_stats(c, &st);
	ok(st.mem_bytes <= 3000, "mem_bytes within bound");
	ok(!is_hit(c, 1), "and evicted the rest");
	ok(st.mem_hits > 0 && st.misses > 0 && st.disk_hits == 0, "stats count hits and misses");
	put_idx(c, 7, 0);
	ok(read_matches(c, 7, 0, 0), "empty blob cached");

	/* taken buffers: kept as they are, or freed (ASan's leak check tells) */
	fid_of(8, fid, sizeof(fid));
	chunk_cache_put_take(c, fid, blob(8, 500), 500);
	ok(read_matches(c, 8, 0, 500), "a taken blob is cached");
	chunk_cache_put_take(c, fid, blob(8, 500), 500);
	ok(read_matches(c, 8, 0, 500), "a taken duplicate leaves the first");
	fid_of(9, fid, sizeof(fid));
	chunk_cache_put_take(c, fid, blob(9, 3001), 3001);
	ok(!is_hit(c, 9), "a taken blob over the bound is not kept");
	chunk_cache_put_take(c, "", blob(9, 10), 10);
	ok(!chunk_cache_read(c, "", 0, 1, buf), "a taken blob without a fid is dropped");

	char longfid[CHUNK_CACHE_FID_MAX + 2];
	memset(longfid, 'a', sizeof(longfid) - 1);
	longfid[sizeof(longfid) - 1] = 0;
	chunk_cache_put(c, longfid, "x", 1);
	ok(!chunk_cache_read(c, longfid, 0, 1, buf), "a too long fid is never cached");
	chunk_cache_close(c);
	chunk_cache_close(NULL);

	c = chunk_cache_open("", 1000, 1000, &err);
	ok(c && err == WFS_OK && !chunk_cache_entry_path(c, "1,ab"), "empty dir means memory only");
	put_idx(c, 1, 10);
	ok(read_matches(c, 1, 0, 10), "memory-only cache from an empty dir works");
	chunk_cache_close(c);

	/* Copies above the under-lock threshold go through the reference path. */
	c = chunk_cache_open(NULL, 1 << 20, 0, &err);
	put_idx(c, 9, 200000);
	ok(read_matches(c, 9, 1000, 150000), "large range copied");
	ok(read_matches(c, 9, 0, 200000), "whole large blob copied");
	chunk_cache_close(c);
}

static void test_disk(void)
{
	char *dir = xasprintf("%s/disk", root);
	wfs_err err;
	/* Memory level off so every hit comes from disk. */
	uint64_t cap = fsize_of(1, 1000) + fsize_of(2, 1000) + fsize_of(3, 1000);
	chunk_cache *c = chunk_cache_open(dir, 0, cap, &err);
	ok(c && err == WFS_OK, "disk open");
	put_idx(c, 1, 1000);
	char *p1 = idx_path(c, 1);
	ok(file_exists(p1), "entry file written");
	struct stat st;
	ok(stat(p1, &st) == 0 && (uint64_t)st.st_size == fsize_of(1, 1000), "file = header + data");
	ok(read_matches(c, 1, 0, 1000), "disk hit, whole");
	ok(read_matches(c, 1, 500, 500), "disk hit, tail range");
	ok(read_matches(c, 1, 1000, 0), "disk hit, empty range at the end");
	char fid[64];
	uint8_t b[4];
	fid_of(1, fid, sizeof(fid));
	ok(!chunk_cache_read(c, fid, 999, 2, b), "disk: range past the end misses");
	struct chunk_cache_stats s;
	chunk_cache_get_stats(c, &s);
	is_int(s.disk_hits, 3, "disk hits counted");
	is_int(s.mem_hits, 0, "no memory hits with mem_bytes 0");

	put_idx(c, 2, 1000);
	put_idx(c, 3, 1000);
	ok(is_hit(c, 1), "touch 1");
	put_idx(c, 4, 1000);
	char *p2 = idx_path(c, 2);
	ok(!file_exists(p2), "disk LRU: 2 deleted");
	ok(is_hit(c, 1) && is_hit(c, 3) && is_hit(c, 4), "disk LRU: 1, 3, 4 kept");
	ok(du(dir, NULL) <= cap, "sum of file sizes <= disk_bytes");
	chunk_cache_get_stats(c, &s);
	is_int(s.disk_bytes, du(dir, NULL), "disk_bytes matches the files");

	put_idx(c, 5, (size_t)cap);
	ok(!is_hit(c, 5), "a blob larger than disk_bytes is not written");
	ok(is_hit(c, 1), "and evicts nothing");

	/* Random sizes: the bound holds after every put. */
	bool bounded = true;
	for (unsigned i = 100; i < 160; i++) {
		put_idx(c, i, (size_t)(rand() % 1500));
		if (du(dir, NULL) > cap)
			bounded = false;
	}
	ok(bounded, "capacity never exceeded over 60 puts of random sizes");

	wfs_err err2;
	chunk_cache *c2 = chunk_cache_open(dir, 0, cap, &err2);
	ok(!c2 && err2 != WFS_OK, "a second open of a dir in use fails");
	chunk_cache_close(c);

	/* Reopen reuses the entries; recency from the files' times. */
	c = chunk_cache_open(dir, 0, cap, &err);
	put_idx(c, 11, 1000);
	put_idx(c, 12, 1000);
	put_idx(c, 13, 1000);
	chunk_cache_close(c);
	/* Make 12 the oldest, 11 the newest. */
	struct timespec ts[2];
	const unsigned order[3] = {12, 13, 11};
	for (int i = 0; i < 3; i++) {
		ts[0].tv_sec = ts[1].tv_sec = 1000000000 + i * 100;
		ts[0].tv_nsec = ts[1].tv_nsec = 0;
		char f[64];
		fid_of(order[i], f, sizeof(f));
		uint64_t key = chunk_cache_fid_key(f, strlen(f));
		char *p = xasprintf("%s/%02x/%016llx", dir, (unsigned)(key >> 56),
				    (unsigned long long)key);
		ok(utimensat(AT_FDCWD, p, ts, 0) == 0, "set times of %u", order[i]);
		free(p);
	}
	/* A stray temp file from a crash. */
	char *sub = xasprintf("%s/ab", dir);
	mkdir(sub, 0755);
	char *tmpf = xasprintf("%s/.tmp-00000000000000ab-7", sub);
	int fd = open(tmpf, O_WRONLY | O_CREAT, 0644);
	ok(fd >= 0 && write(fd, "half", 4) == 4, "stray temp file made");
	close(fd);

	c = chunk_cache_open(dir, 0, cap, &err);
	ok(c != NULL, "reopen");
	ok(!file_exists(tmpf), "stray temp file deleted at open");
	chunk_cache_get_stats(c, &s);
	is_int(s.disk_bytes, du(dir, NULL), "index size rebuilt from the files");
	put_idx(c, 14, 1000); /* evicts the oldest: 12 */
	ok(!is_hit(c, 12), "reopen: oldest by file time (12) evicted first");
	ok(read_matches(c, 11, 0, 1000) && read_matches(c, 13, 0, 1000),
	   "reopen: 11 and 13 reused");
	ok(read_matches(c, 14, 0, 1000), "new entry");
	chunk_cache_get_stats(c, &s);
	is_int(s.corrupt, 0, "nothing corrupt");
	chunk_cache_close(c);

	/* Smaller capacity at the next open: trimmed to fit. */
	c = chunk_cache_open(dir, 0, fsize_of(11, 1000), &err);
	ok(du(dir, NULL) <= fsize_of(11, 1000), "reopen with less capacity trims the dir");
	chunk_cache_close(c);

	free(sub);
	free(tmpf);
	free(p1);
	free(p2);
	free(dir);
}

static void corrupt_case(const char *name, void (*damage)(const char *path))
{
	char *dir = xasprintf("%s/corrupt-%s", root, name);
	wfs_err err;
	chunk_cache *c = chunk_cache_open(dir, 1 << 20, 1 << 20, &err);
	put_idx(c, 21, 5000);
	put_idx(c, 22, 5000);
	chunk_cache_close(c);
	/* Reopen so the memory level is empty and the read must come from disk. */
	c = chunk_cache_open(dir, 1 << 20, 1 << 20, &err);
	char *p = idx_path(c, 21);
	damage(p);
	ok(!read_matches(c, 21, 0, 10), "%s: read is a miss", name);
	ok(!file_exists(p), "%s: file deleted", name);
	struct chunk_cache_stats s;
	chunk_cache_get_stats(c, &s);
	is_int(s.corrupt, 1, "counted in stats.corrupt");
	is_int(s.disk_bytes, fsize_of(22, 5000), "its bytes no longer counted");
	ok(read_matches(c, 22, 100, 4900), "%s: the other entry still reads", name);
	ok(!read_matches(c, 21, 0, 10), "%s: still a miss", name);
	put_idx(c, 21, 5000);
	chunk_cache_close(c);
	c = chunk_cache_open(dir, 0, 1 << 20, &err);
	ok(read_matches(c, 21, 0, 5000), "%s: put again, read back from disk", name);
	chunk_cache_close(c);
	free(p);
	free(dir);
}

static void flip_data(const char *p)
{
	int fd = open(p, O_RDWR);
	uint8_t b;
	off_t off = 4000;
	if (pread(fd, &b, 1, off) == 1) {
		b ^= 1;
		if (pwrite(fd, &b, 1, off) != 1)
			perror("pwrite");
	}
	close(fd);
}
static void truncate_file(const char *p)
{
	if (truncate(p, 3000) != 0)
		perror("truncate");
}
static void garbage_header(const char *p)
{
	int fd = open(p, O_RDWR);
	if (pwrite(fd, "garbage garbage garbage!", 24, 0) != 24)
		perror("pwrite");
	close(fd);
}
static void flip_fid(const char *p)
{
	int fd = open(p, O_RDWR);
	uint8_t b;
	if (pread(fd, &b, 1, CHUNK_CACHE_HEADER_MIN) == 1) {
		b ^= 2;
		if (pwrite(fd, &b, 1, CHUNK_CACHE_HEADER_MIN) != 1)
			perror("pwrite");
	}
	close(fd);
}
static void huge_length(const char *p)
{
	int fd = open(p, O_RDWR);
	uint8_t l[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf0};
	if (pwrite(fd, l, 8, 8) != 8)
		perror("pwrite");
	close(fd);
}

static void test_tiny_file_at_open(void)
{
	char *dir = xasprintf("%s/tiny", root);
	wfs_err err;
	chunk_cache *c = chunk_cache_open(dir, 0, 1 << 20, &err);
	put_idx(c, 31, 100);
	char *p = idx_path(c, 31);
	chunk_cache_close(c);
	ok(truncate(p, 5) == 0, "truncate to 5 bytes");
	c = chunk_cache_open(dir, 0, 1 << 20, &err);
	ok(!file_exists(p), "a file shorter than a header is deleted at open");
	struct chunk_cache_stats s;
	chunk_cache_get_stats(c, &s);
	is_int(s.corrupt, 1, "and counted as corrupt");
	is_int(s.disk_bytes, 0, "and not counted as held");
	chunk_cache_close(c);
	free(p);
	free(dir);
}

/* Mixed readers/writers over both levels with evictions; every hit must be the right bytes. */
struct worker {
	chunk_cache *c;
	unsigned seed;
	int bad, hits, puts;
};

#define NBLOBS 48

static size_t blob_len(unsigned idx) { return 2000 + (idx * 7919u) % 60000; }

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint8_t *dst = xmalloc(70000);
	for (int it = 0; it < 3000; it++) {
		unsigned idx = (unsigned)rand_r(&w->seed) % NBLOBS;
		size_t len = blob_len(idx);
		char fid[64];
		fid_of(idx, fid, sizeof(fid));
		uint64_t off = (uint64_t)rand_r(&w->seed) % len;
		size_t n = (size_t)rand_r(&w->seed) % (len - off + 1);
		if (chunk_cache_read(w->c, fid, off, n, dst)) {
			w->hits++;
			for (size_t i = 0; i < n; i++)
				if (dst[i] != pat(idx, off + i)) {
					w->bad++;
					break;
				}
		} else {
			uint8_t *b = blob(idx, len);
			chunk_cache_put(w->c, fid, b, len);
			free(b);
			w->puts++;
		}
	}
	free(dst);
	return NULL;
}

static void test_threads(void)
{
	char *dir = xasprintf("%s/threads", root);
	wfs_err err;
	uint64_t disk_cap = 500000, mem_cap = 300000;
	chunk_cache *c = chunk_cache_open(dir, mem_cap, disk_cap, &err);
	pthread_t th[8];
	struct worker w[8];
	for (int i = 0; i < 8; i++) {
		w[i] = (struct worker){.c = c, .seed = 1234u + (unsigned)i};
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	int bad = 0, hits = 0, puts = 0;
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		bad += w[i].bad;
		hits += w[i].hits;
		puts += w[i].puts;
	}
	is_int(bad, 0, "8 threads: every hit returned the right bytes");
	ok(hits > 1000 && puts > 100, "8 threads: hits %d, puts %d", hits, puts);
	struct chunk_cache_stats s;
	chunk_cache_get_stats(c, &s);
	ok(s.mem_bytes <= mem_cap, "8 threads: memory bound held");
	ok(du(dir, NULL) <= disk_cap, "8 threads: disk bound held");
	is_int(s.disk_bytes, du(dir, NULL), "8 threads: disk accounting matches the files");
	ok(s.disk_hits > 0 && s.mem_hits > 0, "8 threads: both levels hit");
	is_int(s.corrupt, 0, "8 threads: nothing corrupt");
	chunk_cache_close(c);

	/* Reopen after the storm: every file still verifies. */
	c = chunk_cache_open(dir, 0, disk_cap, &err);
	int good = 0, files = 0;
	du(dir, &files);
	for (unsigned i = 0; i < NBLOBS; i++)
		good += read_matches(c, i, 0, blob_len(i));
	chunk_cache_get_stats(c, &s);
	is_int(good, files, "reopen: every file on disk is a verified hit");
	is_int(s.corrupt, 0, "reopen: nothing corrupt");
	chunk_cache_close(c);
	free(dir);
}

/* Pooled puts: no copy, and every buffer comes back to its pool when evicted or refused. */
static void test_pooled(void)
{
	wfs_err err;
	const size_t sz = 4096;
	chunk_cache *c = chunk_cache_open(NULL, 3 * sz, 0, &err);
	buf_pool *p = buf_pool_new(sz, 8);
	uint8_t *b[5];
	char fid[64];

	for (unsigned i = 0; i < 5; i++)
		b[i] = buf_pool_get(p); /* all first: an evicted one would come out again */
	for (unsigned i = 0; i < 5; i++) {
		for (size_t k = 0; k < sz; k++)
			b[i][k] = pat(100 + i, k);
		fid_of(100 + i, fid, sizeof(fid));
		chunk_cache_put_pooled(c, fid, b[i], sz, p);
	}
	/* 3 fit: the two oldest went back to the pool (newest first out of it) */
	uint8_t *r1 = buf_pool_get(p), *r2 = buf_pool_get(p);
	ok((r1 == b[1] && r2 == b[0]) || (r1 == b[0] && r2 == b[1]),
	   "pooled: evicted buffers return to the pool");
	uint8_t *dst = xmalloc(sz);
	fid_of(104, fid, sizeof(fid));
	ok(chunk_cache_read(c, fid, 0, sz, dst) && dst[7] == pat(104, 7) &&
		   dst[sz - 1] == pat(104, sz - 1),
	   "pooled: the newest blob reads back");
	/* a duplicate is refused: its buffer returns at once */
	uint8_t *dup = buf_pool_get(p);
	chunk_cache_put_pooled(c, fid, dup, sz, p);
	ok(buf_pool_get(p) == dup, "pooled: a duplicate's buffer returns at once");
	/* too big for the memory level: returned too */
	buf_pool *big = buf_pool_new(4 * sz, 1);
	uint8_t *huge = buf_pool_get(big);
	fid_of(200, fid, sizeof(fid));
	chunk_cache_put_pooled(c, fid, huge, 4 * sz, big);
	ok(buf_pool_get(big) == huge, "pooled: a blob over capacity returns at once");
	buf_pool_put(big, huge);
	buf_pool_free(big);
	buf_pool_put(p, dup);
	buf_pool_put(p, r1);
	buf_pool_put(p, r2);
	chunk_cache_close(c); /* gives the cached buffers back */
	size_t n = 0;
	void *got[8];
	while (n < 8 && (got[n] = buf_pool_get(p)) != NULL &&
	       (got[n] == b[0] || got[n] == b[1] || got[n] == b[2] || got[n] == b[3] ||
		got[n] == b[4] || got[n] == dup))
		n++;
	is_int((int)n, 6, "pooled: closing the cache returns every buffer (5 + the duplicate)");
	if (n < 8)
		free(got[n]);
	for (size_t i = 0; i < n; i++)
		free(got[i]);
	buf_pool_free(p);
	free(dst);
}

/* The pool keeps at most `keep` idle buffers and reuses them last in, first out. */
static void test_buf_pool(void)
{
	buf_pool *p = buf_pool_new(1000, 2);
	void *a = buf_pool_get(p), *b = buf_pool_get(p), *c = buf_pool_get(p);
	is_int((int)buf_pool_size(p), 1000, "buf_pool: size");
	ok(a && b && c && a != b && b != c, "buf_pool: distinct buffers");
	buf_pool_put(p, a);
	buf_pool_put(p, b);
	buf_pool_put(p, c); /* over keep: freed */
	ok(buf_pool_get(p) == b, "buf_pool: last in, first out");
	ok(buf_pool_get(p) == a, "buf_pool: then the older one");
	void *d = buf_pool_get(p);
	ok(d != NULL, "buf_pool: a new buffer when empty");
	buf_pool_put(p, NULL);
	free(a);
	free(b);
	free(d);
	buf_pool_free(p);
}

int main(void)
{
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	srand(42);
	test_format();
	test_memory();
	test_disk();
	corrupt_case("flip", flip_data);
	corrupt_case("truncate", truncate_file);
	corrupt_case("garbage", garbage_header);
	corrupt_case("fid", flip_fid);
	corrupt_case("length", huge_length);
	test_tiny_file_at_open();
	test_threads();
	test_pooled();
	test_buf_pool();
	char *cmd = xasprintf("rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
	free(cmd);
	return done_testing();
}
