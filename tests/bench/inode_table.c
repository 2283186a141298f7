/*
 * Inode table micro-benchmark: the rate of the table's operations on a tree of
 * FILES plain files in directories of 1000 (one thread, so the figures are the
 * table's own work, not its mutex): learning new names, looking names up
 * (itable_get_name), getting nodes by ino (itable_get), building full paths,
 * resolving paths, renaming names and forgetting every node. Prints one line
 * per figure.
 *
 *   tests/bench/inode_table [FILES]
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "mount/inode_table.h"
#include "util.h"

#define PER_DIR 1000

static size_t files = 1000000, n_dirs;
static uint64_t *inos, *dirs;
static uint64_t t0;

static void start(void) { t0 = time_mono_ns(); }

static void figure(const char *name, size_t ops)
{
	double s = (double)(time_mono_ns() - t0) / 1e9;
	printf("%-28s %9zu ops: %10.0f ops/s %7.1f ns/op\n", name, ops, (double)ops / s,
	       s * 1e9 / (double)ops);
	fflush(stdout);
}

static void file_name(char *out, size_t cap, size_t i)
{
	snprintf(out, cap, "file.%zu", i % PER_DIR);
}

/* A fixed pseudo-random permutation step, so lookups do not walk the table in order. */
static size_t scramble(size_t i, size_t n) { return (size_t)((i * 2654435761ull) % n); }

int main(int argc, char **argv)
{
	struct filer_entry *e = filer_entry_new("/d", "f");
	char name[32];
	itable *t;
	size_t fails = 0;

	if (argc > 1 && atol(argv[1]) > 0)
		files = (size_t)atol(argv[1]);
	n_dirs = (files + PER_DIR - 1) / PER_DIR;
	inos = xcalloc(files, sizeof(*inos));
	dirs = xcalloc(n_dirs, sizeof(*dirs));
	t = itable_new("/");
	e->attr.nlink = 1;

	start();
	for (size_t i = 0; i < files; i++) {
		if (i % PER_DIR == 0) {
			snprintf(name, sizeof(name), "dir%05zu", i / PER_DIR);
			e->attr.mode = S_IFDIR | 0755;
			dirs[i / PER_DIR] = itable_learn(t, ITABLE_ROOT, name, e, 1000000000ull);
		}
		file_name(name, sizeof(name), i);
		e->attr.mode = S_IFREG | 0644;
		e->attr.size = i;
		inos[i] = itable_learn(t, dirs[i / PER_DIR], name, e, 1000000000ull);
	}
	figure("learn (new names)", files + n_dirs);

	start();
	for (size_t k = 0; k < files; k++) {
		size_t i = scramble(k, files);
		struct inode *n;
		file_name(name, sizeof(name), i);
		n = itable_get_name(t, dirs[i / PER_DIR], name);
		fails += !n;
		itable_put(t, n);
	}
	figure("get_name + put", files);

	start();
	for (size_t k = 0; k < files; k++) {
		struct inode *n = itable_get(t, inos[scramble(k, files)]);
		fails += !n;
		itable_put(t, n);
	}
	figure("get (by ino) + put", files);

	start();
	for (size_t k = 0; k < files; k++)
		fails += !itable_ref(t, inos[scramble(k, files)]);
	figure("ref (a cached lookup)", files);

	start();
	for (size_t k = 0; k < files; k++) {
		char *p = itable_path(t, inos[scramble(k, files)]);
		fails += !p;
		free(p);
	}
	figure("path", files);

	start();
	for (size_t k = 0; k < files; k++) {
		size_t i = scramble(k, files);
		char path[64];
		snprintf(path, sizeof(path), "/dir%05zu/file.%zu", i / PER_DIR, i % PER_DIR);
		fails += itable_resolve(t, path) != inos[i];
	}
	figure("resolve", files);

	start();
	for (size_t i = 0; i < files; i++) {
		char to[32];
		file_name(name, sizeof(name), i);
		snprintf(to, sizeof(to), "moved.%zu", i % PER_DIR);
		itable_rename(t, dirs[i / PER_DIR], name, dirs[i / PER_DIR], to, false);
	}
	figure("rename", files);

	start();
	for (size_t i = 0; i < files; i++)
		itable_forget(t, inos[i], 2); /* the learn's and the ref's lookups */
	for (size_t d = 0; d < n_dirs; d++)
		itable_forget(t, dirs[d], 1);
	figure("forget (node freed)", files + n_dirs);

	if (fails || itable_count(t) != 1)
		printf("FAILURES: %zu, %zu nodes left\n", fails, itable_count(t));
	itable_free(t);
	filer_entry_free(e);
	free(inos);
	free(dirs);
	return fails ? 1 : 0;
}
