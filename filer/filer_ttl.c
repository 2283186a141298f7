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
#include "filer/filer_int.h"
#include "filer/namespace.h"
#include "log.h"
#include "util.h"

#define TTL_SWEEP_DEFAULT_S 60

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
	struct ns_result res = {0};
	struct ns_tx t;
	struct filer_entry *e = NULL;
	char *full = filer_path_join(dir, name);
	wfs_err err;

	err = ns_begin_path(&t, f, 0, &res, full);
	if (!err)
		err = filer_store_find(f->store, t.tx, dir, name, &e);
	if (err == WFS_ENOENT) {
		err = WFS_OK; /* gone meanwhile (a client, or another filer's sweep) */
		goto out;
	}
	if (err || !filer_ttl_expired(e))
		goto out;
	err = filer_store_delete(f->store, t.tx, dir, name);
	if (!err)
		err = ns_drop_name(&t, e);
	if (err)
		goto out;
	ns_garbage_entry(&t.g, e);
	filer_evs_add(&t.evs, e, NULL);
	err = ns_commit(&t);
	if (!err) {
		(*freed)++;
		log_debug("ttl: expired %s", full);
	}
out:
	ns_end(&t);
	filer_entry_free(e);
	free(full);
	return err;
}

struct sweep_dir {
	struct filer_ttl *t;
	char **stack; /* directories still to sweep */
	size_t n, cap;
	uint64_t freed;
};

/* One child of a swept directory: a directory is queued, an expired file deleted. */
static wfs_err sweep_child(void *ctx, struct filer_tx *tx, struct filer_entry *e)
{
	struct sweep_dir *s = ctx;
	(void)tx;
	if (stopping(s->t))
		return WFS_EUNAVAIL; /* ends the walk; not an error of the sweep */
	if (filer_entry_is_dir(e)) {
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 16;
			s->stack = xrealloc(s->stack, s->cap * sizeof(*s->stack));
		}
		s->stack[s->n++] = filer_entry_full_path(e);
		return WFS_OK;
	}
	return filer_ttl_expired(e) ? expire_one(s->t->f, e->dir, e->name, &s->freed) : WFS_OK;
}

/* One pass over the whole namespace (ns_walk, no transaction). Sweeper thread. */
static void sweep(struct filer_ttl *t)
{
	struct sweep_dir s = {.t = t};
	wfs_err err = WFS_OK;

	s.stack = xmalloc(sizeof(*s.stack));
	s.cap = 1;
	s.stack[s.n++] = xstrdup("/");
	while (s.n && !err && !stopping(t)) {
		char *dir = s.stack[--s.n];
		err = ns_walk(t->f, NULL, dir, sweep_child, &s, false);
		free(dir);
	}
	if (err && !stopping(t))
		log_warn("ttl sweep stopped early: %s", wfs_strerror(err));
	if (s.freed)
		log_info("ttl sweep: %llu expired entries deleted", (unsigned long long)s.freed);
	while (s.n)
		free(s.stack[--s.n]);
	free(s.stack);
}

static void *ttl_main(void *arg)
{
	struct filer_ttl *t = arg;
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
	if (thread_start(&t->th, NULL, ttl_main, t, "wfs-filer-ttl"))
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
