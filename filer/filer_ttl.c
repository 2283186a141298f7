/*
 * TTL expiry of filer entries (uploads with ?ttl=).
 *
 * DESIGN: a file with ttl_sec > 0 expires ttl_sec after its last content
 * write (mtime). SeaweedFS counts from the entry's crtime, but its uploads
 * make a fresh entry each time; here an overwrite keeps crtime, so mtime is
 * what matches, and it is also when the volume servers start the chunks'
 * own TTL. TTLs are whole minutes or more (m h d w M y), as in SeaweedFS.
 * Expiry has two halves:
 *   - reads: the read path asks filer_ttl_expired and answers 404 at once, so
 *     an expired file is never served even before it is swept;
 *   - the sweep: a thread walks the namespace every interval (60 s) and
 *     deletes each expired file in a store transaction of its own that also
 *     logs the delete event and queues the file's chunks in the garbage queue
 *     (so the volume space is freed and a crash neither leaks nor frees a
 *     chunk still in use). Each delete re-reads the entry under the path lock
 *     inside the transaction, so a file rewritten meanwhile is left alone.
 *     Several filers sharing a database may sweep concurrently: the second
 *     finds the entry gone and does nothing.
 *
 * Testing: waiting out a one-minute TTL is too slow for tests, and a
 * sub-minute TTL unit would change what the API accepts. Instead two
 * environment variables, read once at start and documented as test hooks,
 * move only the expiry clock: WEEDFS_TEST_TTL_CLOCK_OFFSET_SECONDS adds that
 * many seconds to "now" when deciding expiry (a file written with ttl=1m
 * under an offset of 61 s is already expired, one with ttl=5m is not), and
 * WEEDFS_FILER_TTL_SWEEP_SECONDS sets the sweep interval. Stored times, the
 * TTL syntax and the code paths stay exactly those of production.
 *
 * Cost: a sweep lists every directory (page by page, without holding locks
 * between pages); it is linear in the namespace per interval.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "filer/filer_hardlink.h"
#include "filer/filer_int.h"
#include "log.h"
#include "util.h"

#define TTL_SWEEP_DEFAULT_S 60
#define TTL_PAGE            1000

struct filer_ttl {
	struct filer *f;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* wakes the sweeper early to stop */
	bool stop;         /* protected by mu */
	int interval_s;
};

/* Read once (first filer_ttl_start); shared by every filer in the process. */
static int64_t clock_offset_ns;

static int env_int(const char *name, int def, int lo, int hi)
{
	const char *s = getenv(name);
	int64_t v;
	if (!s || !*s)
		return def;
	if (!parse_i64(s, &v) || v < lo || v > hi) {
		log_warn("ignoring %s=%s (must be %d..%d)", name, s, lo, hi);
		return def;
	}
	return (int)v;
}

bool filer_ttl_expired(const struct filer_entry *e)
{
	int64_t now;
	if (!e->attr.ttl_sec || filer_entry_is_dir(e))
		return false;
	now = (int64_t)time_now_ns() + clock_offset_ns;
	return e->attr.mtime_ns + (int64_t)e->attr.ttl_sec * 1000000000 <= now;
}

static bool stopping(struct filer_ttl *t)
{
	bool s;
	pthread_mutex_lock(&t->mu);
	s = t->stop;
	pthread_mutex_unlock(&t->mu);
	return s;
}

/* Deletes dir/name if it is (still) an expired file. *freed counts deletes. Sweeper thread. */
static wfs_err expire_one(struct filer *f, const char *dir, const char *name, uint64_t *freed)
{
	struct filer_evs evs = {0};
	struct filer_entry *e = NULL;
	struct filer_tx *tx = NULL;
	char *full = filer_path_join(dir, name);
	bool gc = false;
	wfs_err err;

	filer_lock_path(f, full);
	err = filer_store_begin(f->store, &tx);
	if (err)
		goto out;
	err = filer_store_find(f->store, tx, dir, name, &e);
	if (err == WFS_ENOENT) {
		err = WFS_OK; /* gone meanwhile (a client, or another filer's sweep) */
		goto out;
	}
	if (err || !filer_ttl_expired(e))
		goto out;
	err = filer_store_delete(f->store, tx, dir, name);
	if (!err)
		err = filer_hardlink_release(f->store, tx, e);
	if (!err && e->n_chunks) {
		err = filer_gc_enqueue(f, tx, e->chunks, e->n_chunks);
		gc = true;
	}
	if (err)
		goto out;
	filer_evs_add(&evs, e, NULL);
	err = filer_commit(f, tx, &evs);
	tx = NULL;
	if (!err) {
		(*freed)++;
		if (gc)
			filer_gc_kick(f);
		log_debug("ttl: expired %s", full);
	}
out:
	filer_store_rollback(tx);
	filer_evs_clear(&evs);
	filer_unlock_path(f, full);
	filer_entry_free(e);
	free(full);
	return err;
}

struct page {
	struct filer_entry **v;
	size_t n;
};

static bool page_add(void *ctx, struct filer_entry *e)
{
	struct page *p = ctx;
	p->v[p->n++] = e;
	return true;
}

/* One pass over the whole namespace. Sweeper thread. */
static void sweep(struct filer_ttl *t)
{
	struct filer *f = t->f;
	char **stack = xmalloc(sizeof(char *));
	size_t nstack = 1, capstack = 1;
	struct page p = {xcalloc(TTL_PAGE, sizeof(struct filer_entry *)), 0};
	uint64_t freed = 0;
	wfs_err err = WFS_OK;

	stack[0] = xstrdup("/");
	while (nstack && !err && !stopping(t)) {
		char *dir = stack[--nstack], *start = NULL;
		size_t count;
		do {
			p.n = 0;
			err = filer_store_list(f->store, NULL, dir, start, false, TTL_PAGE, NULL,
					       page_add, &p, &count);
			for (size_t i = 0; i < p.n; i++) {
				struct filer_entry *e = p.v[i];
				if (!err && filer_entry_is_dir(e)) {
					if (nstack == capstack) {
						capstack *= 2;
						stack = xrealloc(stack, capstack * sizeof(char *));
					}
					stack[nstack++] = filer_entry_full_path(e);
				} else if (!err && filer_ttl_expired(e)) {
					err = expire_one(f, e->dir, e->name, &freed);
				}
				if (i + 1 == p.n) {
					free(start);
					start = xstrdup(e->name);
				}
				filer_entry_free(e);
			}
		} while (!err && p.n == TTL_PAGE && !stopping(t));
		free(start);
		free(dir);
	}
	if (err)
		log_warn("ttl sweep stopped early: %s", wfs_strerror(err));
	if (freed)
		log_info("ttl sweep: %llu expired entries deleted", (unsigned long long)freed);
	while (nstack)
		free(stack[--nstack]);
	free(stack);
	free(p.v);
}

static void *ttl_main(void *arg)
{
	struct filer_ttl *t = arg;
	pthread_setname_np(pthread_self(), "wfs-filer-ttl"); /* top -H, gdb, perf */
	for (;;) {
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += t->interval_s;
		pthread_mutex_lock(&t->mu);
		while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &dl) != ETIMEDOUT)
			;
		bool stop = t->stop;
		pthread_mutex_unlock(&t->mu);
		if (stop)
			break;
		sweep(t);
		filer_tus_sweep(t->f);
	}
	return NULL;
}

struct filer_ttl *filer_ttl_start(struct filer *f)
{
	struct filer_ttl *t = xcalloc(1, sizeof(*t));
	t->f = f;
	t->interval_s = env_int("WEEDFS_FILER_TTL_SWEEP_SECONDS", TTL_SWEEP_DEFAULT_S, 1, 86400);
	clock_offset_ns =
		(int64_t)env_int("WEEDFS_TEST_TTL_CLOCK_OFFSET_SECONDS", 0, 0, 10 * 365 * 86400) *
		1000000000;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	if (pthread_create(&t->th, NULL, ttl_main, t))
		fatal("could not start the ttl sweeper");
	return t;
}

void filer_ttl_stop(struct filer_ttl *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	t->stop = true;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->th, NULL);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	free(t);
}
