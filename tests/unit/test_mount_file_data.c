/*
 * mount/file_data against a real filer and volume server
 * (WEEDFS_TEST_FILER=host:port; tests/integration/test_mount_data.py sets it,
 * and WEEDFS_TEST_VOLUME_PID for the upload-failure part, which kills that
 * volume server). Without WEEDFS_TEST_FILER everything is skipped.
 *
 * Commits go through the filer's update {appendChunks | chunks, size}, and a
 * fresh file_data from a re-looked-up entry (and the filer's own GET) must
 * show the same bytes as an in-memory model.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "client/entry.h"
#include "http_client.h"
#include "log.h"
#include "client/filer_meta.h"
#include "client/filer_rpc.h"
#include "mount/file_data.h"
#include "tap.h"
#include "util.h"

static const char *filer;
static filer_rpc *rpc;
static char root[64];
static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(rnd() >> 24);
}

/* ---- the filer through the client library, as the mount talks to it ---- */

static struct filer_entry *lookup(const char *path)
{
	struct filer_entry *e = NULL;
	return filer_meta_lookup(rpc, path, &e) ? NULL : e;
}

/* A regular file at path, with inline content (NULL: none). */
static wfs_err create(const char *path, const char *content)
{
	struct filer_meta_new nw = {
		.mode = 0100644,
		.content = (const uint8_t *)content,
		.content_len = content ? strlen(content) : 0,
		.has_content = content != NULL,
	};
	return filer_meta_create(rpc, path, &nw, NULL);
}

/* Flushes fd and commits like the mount does. Returns the flush's or the update's error. */
static wfs_err commit(file_data *fd, const char *path, bool *replaced)
{
	struct filer_meta_set s = {.set = FM_SET_SIZE};
	struct filer_chunk *c = NULL;
	size_t n = 0;
	wfs_err e = file_data_flush(fd, &c, &n);
	if (e)
		return e;
	/* as the mount: the chunks replace the list or are appended to it */
	s.set |= file_data_flush_replaces(fd) ? FM_SET_CHUNKS : FM_SET_APPEND;
	if (replaced)
		*replaced = s.set & FM_SET_CHUNKS;
	s.size = file_data_size(fd);
	s.append = c;
	s.n_append = n;
	e = filer_meta_update(rpc, path, &s, NULL);
	if (e)
		printf("# update failed: %s\n", wfs_strerror(e));
	file_data_committed(fd, e == 0);
	filer_chunks_free(c, n);
	return e;
}

/* Whether fd reads exactly model[0..size). */
static bool same_as(file_data *fd, const uint8_t *model, uint64_t size)
{
	size_t step = 200000, got;
	uint8_t *tmp = xmalloc(step);
	bool same = file_data_size(fd) == size;
	for (uint64_t off = 0; same && off < size; off += step) {
		size_t want = (size_t)MIN(step, size - off);
		wfs_err e = file_data_read(fd, off, step, tmp, &got);
		same = !e && got == want && !memcmp(tmp, model + off, want);
		if (!same)
			printf("# mismatch in [%" PRIu64 ", +%zu): %s, got %zu\n", off, want,
			       wfs_strerror(e), got);
	}
	free(tmp);
	return same;
}

/* Whether the filer's own GET of path gives model[0..size). */
static bool filer_has(const char *path, const uint8_t *model, uint64_t size)
{
	struct http_result r;
	char *url = xasprintf("http://%s%s", filer, path);
	bool same;
	http_result_init(&r);
	same = !http_get(url, 30000, &r) && r.status == 200 && r.body.len == size &&
	       (!size || !memcmp(r.body.data, model, size));
	if (!same)
		printf("# filer GET %s: status %d, %zu bytes (want %" PRIu64 ")\n", path, r.status,
		       r.body.len, size);
	http_result_free(&r);
	free(url);
	return same;
}

static file_data *reopen(mount_data *md, file_data *fd, const char *path)
{
	struct filer_entry *e = lookup(path);
	file_data_free(fd);
	if (!e)
		return NULL;
	fd = file_data_new(md, e);
	filer_entry_free(e);
	return fd;
}

/* Random overlapping writes, truncates, reads and commits against a model. */
static void test_model(mount_data *md)
{
	enum { MAXSZ = 3 << 20 };
	char path[128];
	uint8_t *model = xcalloc(1, MAXSZ), *tmp = xmalloc(MAXSZ), *src = xmalloc(400 << 10);
	uint64_t size = 0;
	int bad_reads = 0, bad_ops = 0, commits = 0;
	file_data *fd;
	struct filer_entry *e;

	snprintf(path, sizeof(path), "%s/model", root);
	is_int(create(path, NULL), 0, "model: create");
	e = lookup(path);
	ok(e != NULL, "model: lookup");
	fd = file_data_new(md, e);
	filer_entry_free(e);
	for (int op = 0; op < 400; op++) {
		int k = (int)(rnd() % 100);
		if (k < 55) {
			uint64_t off = rnd() % (MAXSZ - (400 << 10));
			size_t len = 1 + rnd() % (400 << 10);
			if (rnd() % 4 == 0)
				off = size; /* appends */
			if (off + len > MAXSZ)
				continue;
			fill(src, len);
			if (file_data_write(fd, off, src, len))
				bad_ops++;
			memcpy(model + off, src, len);
			size = MAX(size, off + len);
		} else if (k < 62) {
			uint64_t ns = rnd() % MAXSZ;
			if (file_data_truncate(fd, ns))
				bad_ops++;
			if (ns < size)
				memset(model + ns, 0, size - ns);
			size = ns;
		} else if (k < 92) {
			uint64_t off = rnd() % MAXSZ;
			size_t len = 1 + rnd() % (600 << 10), got = 0;
			size_t want = off >= size ? 0 : (size_t)MIN(len, size - off);
			if (off + len > MAXSZ)
				len = MAXSZ - off;
			want = off >= size ? 0 : (size_t)MIN(len, size - off);
			if (file_data_read(fd, off, len, tmp, &got) || got != want ||
			    memcmp(tmp, model + off, want))
				bad_reads++;
		} else if (k < 98) {
			if (commit(fd, path, NULL))
				bad_ops++;
			commits++;
		} else {
			if (commit(fd, path, NULL))
				bad_ops++;
			fd = reopen(md, fd, path);
			if (!fd)
				break;
		}
	}
	is_int(bad_ops, 0, "model: every write, truncate and commit succeeded");
	is_int(bad_reads, 0, "model: every read of dirty + base matched the model");
	ok(commits > 5, "model: %d commits in between", commits);
	is_int(commit(fd, path, NULL), 0, "model: final commit");
	ok(!file_data_dirty(fd), "model: clean after the commit");
	fd = reopen(md, fd, path);
	ok(fd && same_as(fd, model, size), "model: a fresh file_data reads the model");
	ok(filer_has(path, model, size), "model: the filer's GET serves the model");
	file_data_free(fd);
	free(model);
	free(tmp);
	free(src);
}

static void test_truncate(mount_data *md)
{
	char path[128];
	enum { SZ = 1 << 20 };
	uint8_t *data = xmalloc(SZ), *model = xcalloc(1, SZ);
	bool repl = false;
	file_data *fd;
	struct filer_entry *e;

	snprintf(path, sizeof(path), "%s/trunc", root);
	create(path, NULL);
	e = lookup(path);
	fd = file_data_new(md, e);
	filer_entry_free(e);
	fill(data, SZ);
	is_int(file_data_write(fd, 0, data, SZ), 0, "truncate: write 1 MiB");
	is_int(commit(fd, path, &repl), 0, "truncate: commit");
	ok(!repl, "truncate: a plain write commits with appendChunks");
	fd = reopen(md, fd, path);
	is_int(file_data_truncate(fd, 100000), 0, "truncate: shrink to 100000");
	is_int((int)file_data_size(fd), 100000, "truncate: size after shrink");
	ok(file_data_dirty(fd), "truncate: a size change is dirty");
	is_int(file_data_truncate(fd, 600000), 0, "truncate: extend to 600000");
	is_int(file_data_write(fd, 550000, "0123456789", 10), 0, "truncate: write at 550000");
	memcpy(model, data, 100000);
	memcpy(model + 550000, "0123456789", 10);
	ok(same_as(fd, model, 600000), "truncate: dirty view: zeros where the cut was");
	is_int(commit(fd, path, &repl), 0, "truncate: commit shrink + growth");
	ok(repl, "truncate: shrink then growth commits the whole list");
	fd = reopen(md, fd, path);
	ok(same_as(fd, model, 600000), "truncate: committed view after re-lookup");
	ok(filer_has(path, model, 600000), "truncate: filer GET agrees");
	/* a pure shrink commits with a size only */
	is_int(file_data_truncate(fd, 5000), 0, "truncate: shrink to 5000");
	{
		struct filer_chunk *c = NULL;
		size_t n = 9;
		is_int(file_data_flush(fd, &c, &n), 0, "truncate: flush of a size change");
		is_int((int)n, 0, "truncate: no chunks to commit");
		file_data_committed(fd, false);
		ok(file_data_dirty(fd), "truncate: still dirty after a failed commit");
		is_int(commit(fd, path, &repl), 0, "truncate: commit the size");
	}
	fd = reopen(md, fd, path);
	ok(same_as(fd, model, 5000), "truncate: 5000 bytes after re-lookup");
	file_data_free(fd);
	free(data);
	free(model);
}

static void test_inline(mount_data *md)
{
	char path[128];
	bool repl = false;
	file_data *fd;
	struct filer_entry *e;
	uint8_t got[32];
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/inline", root);
	is_int(create(path, "hello world"), 0, "inline: create with content");
	e = lookup(path);
	ok(e && e->has_content && e->content_len == 11, "inline: entry has inline content");
	fd = file_data_new(md, e);
	filer_entry_free(e);
	ok(!file_data_read(fd, 0, sizeof(got), got, &n) && n == 11 &&
		   !memcmp(got, "hello world", 11),
	   "inline: read the inline content");
	is_int(file_data_write(fd, 6, "XY", 2), 0, "inline: overwrite");
	is_int(file_data_write(fd, 11, "!", 1), 0, "inline: append");
	is_int(commit(fd, path, &repl), 0, "inline: commit");
	ok(repl, "inline: an inline file is committed by replacing its list");
	fd = reopen(md, fd, path);
	ok(fd && same_as(fd, (const uint8_t *)"hello XYrld!", 12), "inline: re-lookup reads it");
	ok(filer_has(path, (const uint8_t *)"hello XYrld!", 12), "inline: filer GET agrees");
	file_data_free(fd);
}

static void test_sparse(mount_data *md)
{
	char path[128];
	const uint64_t at = 12ull << 30;
	uint8_t buf4[4096], zero[4096] = {0}, tail[64];
	size_t n = 0;
	file_data *fd;
	struct filer_entry *e;

	snprintf(path, sizeof(path), "%s/sparse", root);
	create(path, NULL);
	e = lookup(path);
	fd = file_data_new(md, e);
	filer_entry_free(e);
	is_int(file_data_write(fd, at, "twelve GiB", 10), 0, "sparse: write at 12 GiB");
	ok(file_data_size(fd) == at + 10, "sparse: size is 12 GiB + 10");
	ok(!file_data_read(fd, 0, 4096, buf4, &n) && n == 4096 && !memcmp(buf4, zero, 4096),
	   "sparse: zeros at 0");
	ok(!file_data_read(fd, 7ull << 30, 4096, buf4, &n) && n == 4096 &&
		   !memcmp(buf4, zero, 4096),
	   "sparse: zeros at 7 GiB");
	ok(!file_data_read(fd, at - 6, 64, tail, &n) && n == 16 && !memcmp(tail, zero, 6) &&
		   !memcmp(tail + 6, "twelve GiB", 10),
	   "sparse: the tail reads zeros then the data");
	is_int(commit(fd, path, NULL), 0, "sparse: commit");
	fd = reopen(md, fd, path);
	ok(fd && file_data_size(fd) == at + 10, "sparse: committed size");
	ok(fd && !file_data_read(fd, at - 6, 64, tail, &n) && n == 16 && !memcmp(tail, zero, 6) &&
		   !memcmp(tail + 6, "twelve GiB", 10),
	   "sparse: re-looked-up entry reads the tail");
	ok(fd && !file_data_read(fd, 11ull << 30, 4096, buf4, &n) && n == 4096 &&
		   !memcmp(buf4, zero, 4096),
	   "sparse: and zeros before it");
	/* overwrite across the 4 GiB boundary: 64-bit offsets */
	{
		uint8_t big[8192];
		fill(big, sizeof(big));
		is_int(file_data_write(fd, (4ull << 30) - 4096, big, sizeof(big)), 0,
		       "sparse: write across 4 GiB");
		is_int(commit(fd, path, NULL), 0, "sparse: commit it");
		fd = reopen(md, fd, path);
		uint8_t back[8192];
		ok(fd && !file_data_read(fd, (4ull << 30) - 4096, sizeof(back), back, &n) &&
			   n == sizeof(back) && !memcmp(back, big, sizeof(big)),
		   "sparse: read across 4 GiB");
	}
	file_data_free(fd);
}

struct budget_arg {
	mount_data *md;
	int idx;
	wfs_err err;
	uint8_t *model;
};

enum { BUDGET_FILE = 3 << 20, BUDGET_WRITERS = 4 };

static void *budget_writer(void *arg)
{
	struct budget_arg *a = arg;
	char path[128];
	struct filer_entry *e;
	file_data *fd;
	uint64_t r = 0x9e3779b97f4a7c15ull * (uint64_t)(a->idx + 1);

	snprintf(path, sizeof(path), "%s/budget%d", root, a->idx);
	e = lookup(path);
	if (!e) {
		a->err = WFS_ENOENT;
		return NULL;
	}
	fd = file_data_new(a->md, e);
	filer_entry_free(e);
	for (int i = 0; i < 600 && !a->err; i++) {
		uint8_t chunk[16384];
		uint64_t off, len;
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		off = r % (BUDGET_FILE - sizeof(chunk));
		len = 1 + (r >> 40) % sizeof(chunk);
		for (size_t k = 0; k < len; k++)
			chunk[k] = (uint8_t)(r >> (k % 56));
		a->err = file_data_write(fd, off, chunk, len);
		memcpy(a->model + off, chunk, len);
	}
	if (!a->err)
		a->err = commit(fd, path, NULL);
	file_data_free(fd);
	return NULL;
}

static void test_budget(void)
{
	struct mount_data_opts o = {.filer = filer,
				    .chunk_size = 256 << 10,
				    .dirty_max = 1 << 20,
				    .mem_cache_bytes = 8 << 20};
	struct mount_data_stats st;
	struct budget_arg a[BUDGET_WRITERS];
	pthread_t th[BUDGET_WRITERS];
	wfs_err err;
	mount_data *md = mount_data_new(&o, &err);
	int errs = 0, same = 0;

	for (int i = 0; i < BUDGET_WRITERS; i++) {
		char path[128];
		snprintf(path, sizeof(path), "%s/budget%d", root, i);
		create(path, NULL);
		a[i] = (struct budget_arg){md, i, 0, xcalloc(1, BUDGET_FILE)};
		pthread_create(&th[i], NULL, budget_writer, &a[i]);
	}
	for (int i = 0; i < BUDGET_WRITERS; i++) {
		pthread_join(th[i], NULL);
		errs += a[i].err != 0;
	}
	is_int(errs, 0, "budget: 4 writers x 600 random writes, 1 MiB budget: no error, no hang");
	mount_data_get_stats(md, &st);
	ok(st.dirty_peak <= o.dirty_max, "budget: peak %" PRIu64 " <= %" PRIu64, st.dirty_peak,
	   o.dirty_max);
	ok(st.budget_waits > 0 && st.bg_uploads > 0,
	   "budget: writers waited (%" PRIu64 ") and uploads made room (%" PRIu64 ")",
	   st.budget_waits, st.bg_uploads);
	is_int((int)st.dirty, 0, "budget: nothing held after the commits");
	for (int i = 0; i < BUDGET_WRITERS; i++) {
		char path[128];
		struct filer_entry *e;
		file_data *fd;
		uint64_t size = BUDGET_FILE;
		snprintf(path, sizeof(path), "%s/budget%d", root, i);
		e = lookup(path);
		if (!e)
			continue;
		fd = file_data_new(md, e);
		/* the model's size: the end of the last non-zero byte written */
		size = e->attr.size;
		filer_entry_free(e);
		same += same_as(fd, a[i].model, size);
		file_data_free(fd);
		free(a[i].model);
	}
	is_int(same, BUDGET_WRITERS, "budget: every file reads back its model");
	mount_data_free(md);
}

struct conc_arg {
	file_data *fd;
	const uint8_t *data;
	size_t size;
	atomic_bool done; /* set by the writer, polled by the flusher */
	wfs_err err;
};

static void *conc_writer(void *arg)
{
	struct conc_arg *a = arg;
	/* overlapping passes: the second rewrites what the flusher may be committing */
	for (int pass = 0; pass < 2 && !a->err; pass++)
		for (size_t off = pass * 777; off < a->size && !a->err; off += 50000) {
			a->err = file_data_write(a->fd, off, a->data + off,
						 MIN(70000, a->size - off));
			usleep(2000); /* let commits interleave */
		}
	atomic_store(&a->done, true);
	return NULL;
}

/* Flushes and commits while a writer keeps writing: nothing written during a flush is lost. */
static void test_concurrent_flush(mount_data *md)
{
	enum { SZ = 6 << 20 };
	char path[128];
	uint8_t *data = xmalloc(SZ);
	struct conc_arg a = {0};
	pthread_t th;
	struct filer_entry *e;
	int commits = 0, bad = 0;

	snprintf(path, sizeof(path), "%s/concurrent", root);
	create(path, NULL);
	e = lookup(path);
	a.fd = file_data_new(md, e);
	filer_entry_free(e);
	fill(data, SZ);
	a.data = data;
	a.size = SZ;
	pthread_create(&th, NULL, conc_writer, &a);
	while (!atomic_load(&a.done)) {
		bad += commit(a.fd, path, NULL) != 0;
		commits++;
	}
	pthread_join(th, NULL);
	is_int(a.err, 0, "concurrent: writes succeeded");
	is_int(bad, 0, "concurrent: commits during the writes succeeded");
	is_int(commit(a.fd, path, NULL), 0, "concurrent: final commit");
	ok(commits >= 5, "concurrent: %d commits interleaved with the writes", commits);
	ok(same_as(a.fd, data, SZ), "concurrent: the file_data reads every byte");
	a.fd = reopen(md, a.fd, path);
	ok(a.fd && same_as(a.fd, data, SZ), "concurrent: so does a re-looked-up entry");
	ok(filer_has(path, data, SZ), "concurrent: and the filer");
	file_data_free(a.fd);
	free(data);
}

/* Cold random reads of a big chunk fetch only the range; sequential reads prefetch. */
static void test_read_paths(void)
{
	struct mount_data_opts o = {.filer = filer, .chunk_size = 4 << 20, .dirty_max = 64 << 20};
	struct mount_data_stats st;
	char path[128];
	enum { SZ = 16 << 20 };
	uint8_t *data = xmalloc(SZ), *back = xmalloc(SZ);
	wfs_err err;
	mount_data *md = mount_data_new(&o, &err);
	struct filer_entry *e;
	file_data *fd;
	size_t n;
	bool all = true;

	snprintf(path, sizeof(path), "%s/reads", root);
	create(path, NULL);
	e = lookup(path);
	fd = file_data_new(md, e);
	filer_entry_free(e);
	fill(data, SZ);
	file_data_write(fd, 0, data, SZ);
	is_int(commit(fd, path, NULL), 0, "reads: commit 16 MiB");
	file_data_free(fd);
	mount_data_free(md);

	md = mount_data_new(&o, &err); /* a cold cache */
	e = lookup(path);
	fd = file_data_new(md, e);
	filer_entry_free(e);
	ok(!file_data_read(fd, (5 << 20) + 12345, 4096, back, &n) && n == 4096 &&
		   !memcmp(back, data + (5 << 20) + 12345, 4096),
	   "reads: a random 4 KiB read");
	mount_data_get_stats(md, &st);
	is_int((int)st.fetched_bytes, 4096, "reads: it fetched only its 4 KiB");
	for (uint64_t off = 0; off < SZ && all; off += 128 << 10) {
		all = !file_data_read(fd, off, 128 << 10, back + off, &n) && n == (128 << 10);
		if (off == (4 << 20))
			usleep(200000); /* let the read-ahead land */
	}
	ok(all && !memcmp(back, data, SZ), "reads: sequential read of 16 MiB");
	mount_data_get_stats(md, &st);
	ok(st.prefetches >= 1, "reads: sequential reading prefetched %" PRIu64 " chunks",
	   st.prefetches);
	ok(st.fetched_bytes <= SZ + 4096 + (4 << 20),
	   "reads: no chunk fetched twice (%" PRIu64 " bytes)", st.fetched_bytes);
	file_data_free(fd);
	mount_data_free(md);
	free(data);
	free(back);
}

/* Write throughput through file_data (upload included), for the report. */
static void test_throughput(void)
{
	struct mount_data_opts o = {.filer = filer, .chunk_size = 4 << 20, .dirty_max = 64 << 20};
	char path[128];
	enum { TOTAL = 128 << 20, BLK = 1 << 20 };
	uint8_t *blk = xmalloc(BLK);
	wfs_err err;
	mount_data *md = mount_data_new(&o, &err);
	struct filer_entry *e;
	file_data *fd;
	uint64_t t0, t1;
	int bad = 0;
	size_t n;

	snprintf(path, sizeof(path), "%s/speed", root);
	create(path, NULL);
	e = lookup(path);
	fd = file_data_new(md, e);
	filer_entry_free(e);
	fill(blk, BLK);
	t0 = time_mono_ns();
	for (uint64_t off = 0; off < TOTAL; off += BLK)
		bad += file_data_write(fd, off, blk, BLK) != 0;
	bad += commit(fd, path, NULL) != 0;
	t1 = time_mono_ns();
	is_int(bad, 0, "speed: 128 MiB written and committed");
	printf("# file_data write: %.1f MiB/s (128 MiB, 1 MiB writes, 4 MiB chunks, with commit)\n",
	       128.0 / ((double)(t1 - t0) / 1e9));
	file_data_free(fd);
	mount_data_free(md);
	md = mount_data_new(&o, &err);
	e = lookup(path);
	fd = file_data_new(md, e);
	filer_entry_free(e);
	t0 = time_mono_ns();
	for (uint64_t off = 0; off < TOTAL; off += BLK)
		bad += file_data_read(fd, off, BLK, blk, &n) != 0 || n != BLK;
	t1 = time_mono_ns();
	is_int(bad, 0, "speed: 128 MiB read back");
	printf("# file_data cold sequential read: %.1f MiB/s\n", 128.0 / ((double)(t1 - t0) / 1e9));
	t0 = time_mono_ns();
	for (uint64_t off = 0; off < TOTAL; off += BLK)
		bad += file_data_read(fd, off, BLK, blk, &n) != 0 || n != BLK;
	t1 = time_mono_ns();
	printf("# file_data warm sequential read: %.1f MiB/s\n", 128.0 / ((double)(t1 - t0) / 1e9));
	file_data_free(fd);
	mount_data_free(md);
	free(blk);
}

/*
 * The volume server dies: flush fails with the blob client's WFS_EUNAVAIL (the cause, not a
 * generic EIO) and the data stays dirty and readable.
 */
static void test_upload_failure(mount_data *md, pid_t vpid)
{
	char path[128];
	uint8_t data[300000], back[300000];
	struct filer_chunk *c = NULL;
	size_t n = 0;
	file_data *fd;
	struct filer_entry *e;

	snprintf(path, sizeof(path), "%s/fail", root);
	create(path, NULL);
	e = lookup(path);
	fd = file_data_new(md, e);
	filer_entry_free(e);
	fill(data, sizeof(data));
	is_int(file_data_write(fd, 0, data, sizeof(data)), 0, "failure: write before the kill");
	is_int(kill(vpid, SIGKILL), 0, "failure: volume server killed");
	usleep(300000);
	is_str(wfs_err_name(file_data_flush(fd, &c, &n)), wfs_err_name(WFS_EUNAVAIL),
	       "failure: flush returns WFS_EUNAVAIL");
	ok(c == NULL && n == 0, "failure: no chunks handed out");
	ok(file_data_dirty(fd), "failure: the data stays dirty");
	ok(!file_data_read(fd, 0, sizeof(back), back, &n) && n == sizeof(back) &&
		   !memcmp(back, data, sizeof(back)),
	   "failure: and readable");
	file_data_free(fd);
}

int main(void)
{
	struct mount_data_opts o = {.chunk_size = 256 << 10, .dirty_max = 8 << 20};
	const char *vpid = getenv("WEEDFS_TEST_VOLUME_PID");
	mount_data *md;
	wfs_err err;
	buf b = BUF_INIT;

	filer = getenv("WEEDFS_TEST_FILER");
	log_set_level(LOG_LEVEL_ERROR);
	if (!filer || !*filer) {
		printf("1..0 # SKIP WEEDFS_TEST_FILER is unset\n");
		return 0;
	}
	http_client_global_init();
	rpc = filer_rpc_new(filer, 10000, 10, 0);
	snprintf(root, sizeof(root), "/fdt%u", (unsigned)(time_now_ns() % 1000000000u));
	buf_printf(&b, "{\"entry\":{\"path\":\"%s\",\"mode\":%u}}", root, 040755u);
	is_int(filer_rpc_call(rpc, "create", b.data, b.len, &b), 0, "test directory");
	o.filer = filer;
	md = mount_data_new(&o, &err);
	ok(md != NULL, "mount_data_new");
	test_model(md);
	test_truncate(md);
	test_inline(md);
	test_sparse(md);
	test_concurrent_flush(md);
	test_budget();
	test_read_paths();
	if (getenv("WEEDFS_TEST_SPEED"))
		test_throughput();
	if (vpid && *vpid)
		test_upload_failure(md, (pid_t)atoi(vpid));
	mount_data_free(md);
	filer_rpc_free(rpc);
	buf_free(&b);
	return done_testing();
}
