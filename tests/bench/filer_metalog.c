/*
 * What the event log costs: creates/s where each create is a transaction of
 * one insert, without and with the event appended in the same transaction,
 * from 1 and 16 threads. Usage: filer_metalog [DSN] [N] (default: SQLite in
 * a temporary directory, N = 20000 per configuration). Prints figures.
 */
#include "config.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "filer/store.h"
#include "util.h"

static struct filer_store *st;
static int per_thread;
static char root[64];

struct job {
	int id;
	bool event;
	int errors;
	const char *tag;
};

static void *run(void *arg)
{
	struct job *j = arg;
	char *dir = xasprintf("%s/%s/%d", root, j->tag, j->id);
	for (int i = 0; i < per_thread; i++) {
		char name[32];
		struct filer_tx *tx;
		struct filer_entry *e;
		wfs_err err;
		snprintf(name, sizeof(name), "f%07d", i);
		e = filer_entry_new(dir, name);
		e->attr.mode = S_IFREG | 0644;
		e->attr.mtime_ns = (int64_t)time_now_ns();
		filer_entry_add_chunk(e, "3,01637037d6", 0, 1024, e->attr.mtime_ns, "abc", false);
		err = filer_store_begin(st, &tx);
		if (!err) {
			err = filer_store_insert(st, tx, e);
			if (!err && j->event)
				err = filer_store_append_event(st, tx, NULL, e, NULL);
			if (err)
				filer_store_rollback(tx);
			else
				err = filer_store_commit(tx);
		}
		if (err)
			j->errors++;
		filer_entry_free(e);
	}
	free(dir);
	return NULL;
}

static double measure(int threads, bool event, const char *tag)
{
	pthread_t th[64];
	struct job j[64];
	uint64_t t0 = time_mono_ns();
	int errors = 0;
	for (int i = 0; i < threads; i++) {
		j[i] = (struct job){i, event, 0, tag};
		pthread_create(&th[i], NULL, run, &j[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		errors += j[i].errors;
	}
	if (errors)
		fprintf(stderr, "%d errors\n", errors);
	return (double)threads * per_thread / ((time_mono_ns() - t0) / 1e9);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/bench_metalog.XXXXXX";
	char *own = NULL;
	const char *dsn = argc > 1 ? argv[1] : NULL;
	int n = argc > 2 ? atoi(argv[2]) : 20000;
	if (!dsn) {
		if (!mkdtemp(tmp))
			return 1;
		own = xasprintf("sqlite://%s/filer.db", tmp);
		dsn = own;
	}
	snprintf(root, sizeof(root), "/bench%d", (int)getpid());
	if (filer_store_open(dsn, &st)) {
		fprintf(stderr, "could not open %s\n", dsn);
		return 1;
	}
	printf("store %s, %d creates per configuration\n", filer_store_name(st), n);
	for (int threads = 1; threads <= 16; threads *= 16) {
		per_thread = n / threads;
		double plain = measure(threads, false, threads == 1 ? "p1" : "p16");
		double ev = measure(threads, true, threads == 1 ? "e1" : "e16");
		printf("threads %2d: insert %8.0f tx/s, insert+event %8.0f tx/s (%.0f%% of "
		       "plain)\n",
		       threads, plain, ev, 100 * ev / plain);
	}
	filer_store_close(st);
	if (own) {
		char *cmd = xasprintf("rm -rf %s", tmp);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", tmp);
		free(cmd);
		free(own);
	}
	return 0;
}
