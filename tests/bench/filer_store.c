/*
 * Filer store micro-benchmark: inserts/s, finds/s and list pages/s from N
 * threads against any store DSN. Prints figures; not a pass/fail test.
 *
 *   tests/bench/filer_store [-t THREADS] [-n ENTRIES] DSN
 *   e.g. tests/bench/filer_store -t 16 -n 100000 sqlite:///tmp/bench.db
 */
#include "config.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "filer/store.h"
#include "util.h"

static struct filer_store *st;
static char dir[64];
static int nthreads = 16;
static long n_entries = 50000;

struct worker {
	int id;
	long done, errors;
};

static void *insert_worker(void *arg)
{
	struct worker *w = arg;
	for (long i = w->id; i < n_entries; i += nthreads) {
		char name[32];
		struct filer_entry *e;
		snprintf(name, sizeof(name), "file-%08ld", i);
		e = filer_entry_new(dir, name);
		e->attr.mode = S_IFREG | 0644;
		e->attr.size = 1024;
		e->attr.mtime_ns = e->attr.crtime_ns = (int64_t)time_now_ns();
		e->attr.mime = xstrdup("application/octet-stream");
		filer_entry_add_chunk(e, "3,01637037d6", 0, 1024, e->attr.mtime_ns, "abc", false);
		if (filer_store_insert(st, NULL, e))
			w->errors++;
		else
			w->done++;
		filer_entry_free(e);
	}
	return NULL;
}

static void *find_worker(void *arg)
{
	struct worker *w = arg;
	unsigned seed = (unsigned)w->id * 2654435761u;
	for (long i = 0; i < n_entries / nthreads; i++) {
		char name[32];
		struct filer_entry *e;
		snprintf(name, sizeof(name), "file-%08ld", (long)(rand_r(&seed) % n_entries));
		if (filer_store_find(st, NULL, dir, name, &e))
			w->errors++;
		else
			w->done++;
		filer_entry_free(e);
	}
	return NULL;
}

static bool count_fn(void *ctx, struct filer_entry *e)
{
	filer_entry_free(e);
	return true;
}

static void *list_worker(void *arg)
{
	struct worker *w = arg;
	unsigned seed = (unsigned)w->id * 40503u;
	for (int i = 0; i < 200; i++) {
		char start[32];
		size_t n;
		snprintf(start, sizeof(start), "file-%08ld", (long)(rand_r(&seed) % n_entries));
		if (filer_store_list(st, NULL, dir, start, false, 100, NULL, count_fn, NULL, &n))
			w->errors++;
		else
			w->done++;
	}
	return NULL;
}

static double run(void *(*fn)(void *), const char *what)
{
	pthread_t *t = xcalloc((size_t)nthreads, sizeof(*t));
	struct worker *w = xcalloc((size_t)nthreads, sizeof(*w));
	long done = 0, errors = 0;
	uint64_t t0 = time_mono_ns();
	double secs, rate;
	for (int i = 0; i < nthreads; i++) {
		w[i].id = i;
		pthread_create(&t[i], NULL, fn, &w[i]);
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		done += w[i].done;
		errors += w[i].errors;
	}
	secs = (time_mono_ns() - t0) / 1e9;
	rate = done / secs;
	printf("%-8s %-9s threads=%d ops=%ld errors=%ld seconds=%.2f ops/s=%.0f\n",
	       filer_store_name(st), what, nthreads, done, errors, secs, rate);
	free(t);
	free(w);
	return rate;
}

int main(int argc, char **argv)
{
	int opt;
	wfs_err err;
	while ((opt = getopt(argc, argv, "t:n:")) != -1) {
		if (opt == 't')
			nthreads = atoi(optarg);
		else if (opt == 'n')
			n_entries = atol(optarg);
		else
			goto usage;
	}
	if (optind != argc - 1 || nthreads < 1 || n_entries < nthreads)
		goto usage;
	err = filer_store_open(argv[optind], &st);
	if (err) {
		fprintf(stderr, "could not open store: %s\n", wfs_strerror(err));
		return 1;
	}
	snprintf(dir, sizeof(dir), "/bench-%d-%llu", (int)getpid(),
		 (unsigned long long)(time_now_ns() / 1000000) % 1000000ull);
	run(insert_worker, "insert");
	run(find_worker, "find");
	run(list_worker, "list100");
	filer_store_delete_children(st, NULL, dir, NULL);
	filer_store_close(st);
	return 0;
usage:
	fprintf(stderr, "usage: %s [-t THREADS] [-n ENTRIES] DSN\n", argv[0]);
	return 2;
}
