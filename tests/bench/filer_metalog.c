/*
 * What the event log costs: creates/s where each create is a transaction of
 * one insert, without and with the event appended in the same transaction,
 * from 1 and 16 threads; then how soon a subscriber blocked in metalog_wait
 * gets an event: woken by the local commit (no poller), and by the poller
 * (every 200 ms) when another store handle ("another filer") commits it.
 * Usage: filer_metalog [DSN] [N] [W] (default: SQLite in a temporary
 * directory, N = 20000 creates per configuration, W = 200 events for the
 * local wake-up and W / 10 for the poller's). Prints figures.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "filer/metalog.h"
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

/* ---- wake-up latency ---- */

/* The subscriber thread of one wake-up run and what it saw. */
struct wake {
	struct metalog_cursor *c;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	size_t got;       /* protected by mu: events delivered so far */
	uint64_t *got_at; /* protected by mu: monotonic ns of each delivery, by index */
	size_t n;
};

static bool wake_take(void *ctx, struct filer_event *ev)
{
	struct wake *w = ctx;
	uint64_t now = time_mono_ns();
	pthread_mutex_lock(&w->mu);
	if (w->got < w->n)
		w->got_at[w->got] = now;
	w->got++;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	filer_event_free(ev);
	return true;
}

static void *wake_main(void *arg)
{
	struct wake *w = arg;
	while (metalog_wait(w->c, 5000, wake_take, w, NULL) != WFS_EUNAVAIL)
		;
	return NULL;
}

/* Waits until w has delivered want events; false after 10 s without them. */
static bool wake_wait_for(struct wake *w, size_t want)
{
	struct timespec dl = time_deadline(CLOCK_REALTIME, 10000000000ull);
	bool ok;
	pthread_mutex_lock(&w->mu);
	while (w->got < want && pthread_cond_timedwait(&w->cv, &w->mu, &dl) != ETIMEDOUT)
		;
	ok = w->got >= want;
	pthread_mutex_unlock(&w->mu);
	return ok;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The nearest-rank q-quantile of v[0..n) (sorted here), in ms. */
static double quantile_ms(uint64_t *v, size_t n, double q)
{
	size_t r = (size_t)(q * (double)n + 0.999999);
	qsort(v, n, sizeof(*v), cmp_u64);
	return (double)v[r ? MIN(r, n) - 1 : 0] / 1e6;
}

/*
 * n events committed one at a time through mw's store handle (sw) while a
 * subscriber of mr waits for them; each is committed once the previous one
 * arrived and the subscriber had a moment to block again, plus a random
 * 0..spread_ms (so that the commits do not keep step with a poller). Prints
 * the time from the commit call to the delivery, and the commit alone.
 */
static void wake_run(const char *what, struct metalog *mr, struct metalog *mw,
		     struct filer_store *sw, size_t n, int spread_ms, const char *tag)
{
	struct wake w = {.n = n};
	uint64_t *t0 = xcalloc(n, sizeof(*t0)), *lat = xcalloc(n, sizeof(*lat));
	uint64_t *commit = xcalloc(n, sizeof(*commit));
	char *dir = xasprintf("%s/%s", root, tag);
	int64_t clock = 0;
	size_t i;
	bool failed = false;
	unsigned seed = 1;
	pthread_t th;

	w.got_at = xcalloc(n, sizeof(*w.got_at));
	pthread_mutex_init(&w.mu, NULL);
	pthread_cond_init(&w.cv, NULL);
	filer_store_event_clock(sw, &clock);
	w.c = metalog_subscribe(mr, dir, clock, 0);
	pthread_create(&th, NULL, wake_main, &w);
	for (i = 0; i < n; i++) {
		char name[32];
		struct filer_tx *tx;
		struct filer_entry *e;
		wfs_err err;
		/* the subscriber reads, finds nothing and blocks */
		usleep(2000 + (spread_ms ? (useconds_t)(rand_r(&seed) % (spread_ms * 1000)) : 0));
		snprintf(name, sizeof(name), "w%06zu", i);
		e = filer_entry_new(dir, name);
		e->attr.mode = S_IFREG | 0644;
		e->attr.mtime_ns = (int64_t)time_now_ns();
		err = filer_store_begin(sw, &tx);
		if (!err) {
			err = filer_store_insert(sw, tx, e);
			if (!err)
				err = metalog_append(mw, tx, NULL, e, NULL);
			if (err) {
				filer_store_rollback(tx);
			} else {
				t0[i] = time_mono_ns();
				err = metalog_commit(mw, tx);
				commit[i] = time_mono_ns() - t0[i];
			}
		}
		filer_entry_free(e);
		if (err || !wake_wait_for(&w, i + 1)) {
			failed = true;
			break;
		}
	}
	metalog_shutdown(mr);
	pthread_join(th, NULL);
	for (size_t k = 0; k < i; k++)
		lat[k] = w.got_at[k] - t0[k];
	if (failed || !i)
		printf("%s: failed after %zu events\n", what, i);
	else
		printf("%s, %zu events: commit to delivery median %.2f ms, p99 %.2f ms, max "
		       "%.2f ms (the commit alone: median %.2f ms)\n",
		       what, i, quantile_ms(lat, i, 0.5), quantile_ms(lat, i, 0.99),
		       quantile_ms(lat, i, 1.0), quantile_ms(commit, i, 0.5));
	metalog_cursor_free(w.c);
	pthread_mutex_destroy(&w.mu);
	pthread_cond_destroy(&w.cv);
	free(w.got_at);
	free(t0);
	free(lat);
	free(commit);
	free(dir);
}

/* The local wake-up (poller off) and the other filer's, through the poller. */
static void measure_wakeups(const char *dsn, size_t n)
{
	struct metalog_opts o;
	struct metalog *m, *m2;
	struct filer_store *st2;

	metalog_opts_default(&o);
	o.poll_ms = 0;
	m = metalog_new(st, &o);
	wake_run("local wake-up (poller off)", m, m, st, n, 0, "wl");
	metalog_free(m);
	if (filer_store_open(dsn, &st2)) {
		fprintf(stderr, "could not open a second handle on %s\n", dsn);
		return;
	}
	metalog_opts_default(&o);
	m = metalog_new(st, NULL);
	m2 = metalog_new(st2, &o);
	printf("(poll every %d ms)\n", o.poll_ms);
	wake_run("another filer's event, through the poller", m2, m, st, MAX(n / 10, 10),
		 o.poll_ms, "wp");
	metalog_free(m2);
	metalog_free(m);
	filer_store_close(st2);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/bench_metalog.XXXXXX";
	char *own = NULL;
	const char *dsn = argc > 1 ? argv[1] : NULL;
	int n = argc > 2 ? atoi(argv[2]) : 20000;
	int wakes = argc > 3 ? atoi(argv[3]) : 200;
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
	if (wakes > 0)
		measure_wakeups(dsn, (size_t)wakes);
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
