/*
 * The garbage worker thread (DESIGN in gc_queue.h).
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include "filer/gc_queue.h"
#include "filer/store_impl.h"
#include "log.h"
#include "util.h"

struct gc_queue {
	struct filer_store *store;
	struct gc_queue_opts opts;
	gc_delete_fn del;
	void *ctx;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;                   /* protected by mu */
	bool kicked;                 /* protected by mu */
	struct gc_queue_stats stats; /* protected by mu */
};

void gc_queue_opts_default(struct gc_queue_opts *o)
{
	o->batch = 256;
	o->lease_ns = 300 * 1000000000LL;
	o->idle_ms = 1000;
	o->backoff_min_ns = 1000000000LL;
	o->backoff_max_ns = 600 * 1000000000LL;
}

static int64_t backoff(const struct gc_queue_opts *o, uint32_t attempts)
{
	int64_t d = o->backoff_min_ns;
	for (uint32_t i = 1; i < attempts && d < o->backoff_max_ns; i++)
		d *= 2;
	return d < o->backoff_max_ns ? d : o->backoff_max_ns;
}

static bool stopping(struct gc_queue *q)
{
	pthread_mutex_lock(&q->mu);
	bool s = q->stop;
	pthread_mutex_unlock(&q->mu);
	return s;
}

static void count(struct gc_queue *q, uint64_t deleted, uint64_t failed, uint64_t errors)
{
	pthread_mutex_lock(&q->mu);
	q->stats.deleted += deleted;
	q->stats.failed += failed;
	q->stats.errors += errors;
	pthread_mutex_unlock(&q->mu);
}

/*
 * Deletes one taken batch. Ids are passed to the callback in slices so a stop
 * request is honoured between slices; ids never passed stay leased.
 */
static void run_batch(struct gc_queue *q, struct filer_gc_item *it, size_t n)
{
	const size_t slice = 32;
	const char **fids = xcalloc(n, sizeof(*fids));
	wfs_err *res = xcalloc(n, sizeof(*res));
	const char **done = xcalloc(n, sizeof(*done));
	size_t passed = 0, ndone = 0, nfail = 0, errors = 0;
	int64_t now;

	for (size_t i = 0; i < n; i++)
		fids[i] = it[i].fid;
	while (passed < n && !stopping(q)) {
		size_t k = n - passed < slice ? n - passed : slice;
		q->del(q->ctx, fids + passed, k, res + passed);
		passed += k;
	}
	for (size_t i = 0; i < passed; i++)
		if (res[i] == WFS_OK || res[i] == WFS_ENOENT)
			done[ndone++] = fids[i];
	if (ndone && filer_store_gc_done(q->store, done, ndone)) {
		errors++; /* they come due again after the lease: deleted twice, harmlessly */
		ndone = 0;
	}
	now = (int64_t)time_now_ns();
	for (size_t i = 0; i < passed; i++) {
		if (res[i] == WFS_OK || res[i] == WFS_ENOENT)
			continue;
		nfail++;
		log_debug("gc: delete %s failed (%s), attempt %u", fids[i], wfs_strerror(res[i]),
			  it[i].attempts);
		if (filer_store_gc_defer(q->store, &fids[i], 1,
					 now + backoff(&q->opts, it[i].attempts)))
			errors++; /* the lease still expires: it is retried anyway */
	}
	count(q, ndone, nfail, errors);
	free(fids);
	free(res);
	free(done);
}

static void *worker_main(void *arg)
{
	struct gc_queue *q = arg;
	while (!stopping(q)) {
		struct filer_gc_item *it = NULL;
		size_t n = 0;
		wfs_err err =
			filer_store_gc_take(q->store, q->opts.batch, q->opts.lease_ns, &it, &n);
		if (err) {
			log_warn("gc: could not take from the queue: %s", wfs_strerror(err));
			count(q, 0, 0, 1);
		} else if (n) {
			pthread_mutex_lock(&q->mu);
			q->stats.batches++;
			pthread_mutex_unlock(&q->mu);
			run_batch(q, it, n);
		}
		filer_gc_items_free(it, n);
		if (!err && n == q->opts.batch)
			continue; /* more may be due right now */
		pthread_mutex_lock(&q->mu);
		if (!q->kicked && !q->stop) {
			struct timespec dl = time_deadline(CLOCK_MONOTONIC,
							   (uint64_t)q->opts.idle_ms * 1000000u);
			while (!q->kicked && !q->stop &&
			       pthread_cond_timedwait(&q->cv, &q->mu, &dl) != ETIMEDOUT)
				;
		}
		q->kicked = false;
		pthread_mutex_unlock(&q->mu);
	}
	return NULL;
}

struct gc_queue *gc_queue_start(struct filer_store *s, const struct gc_queue_opts *opts,
				gc_delete_fn del, void *ctx)
{
	struct gc_queue *q = xcalloc(1, sizeof(*q));
	pthread_condattr_t ca;
	q->store = s;
	gc_queue_opts_default(&q->opts);
	if (opts)
		q->opts = *opts;
	if (q->opts.batch == 0 || q->opts.batch > FILER_GC_BATCH_MAX)
		q->opts.batch = 256;
	if (q->opts.lease_ns <= 0)
		q->opts.lease_ns = 300 * 1000000000LL;
	if (q->opts.idle_ms <= 0)
		q->opts.idle_ms = 1000;
	if (q->opts.backoff_min_ns <= 0)
		q->opts.backoff_min_ns = 1000000;
	if (q->opts.backoff_max_ns < q->opts.backoff_min_ns)
		q->opts.backoff_max_ns = q->opts.backoff_min_ns;
	q->del = del;
	q->ctx = ctx;
	pthread_mutex_init(&q->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (thread_start(&q->thread, NULL, worker_main, q, "wfs-filer-gc"))
		fatal("could not start the gc worker");
	return q;
}

void gc_queue_stop(struct gc_queue *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->mu);
	q->stop = true;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	pthread_join(q->thread, NULL);
	pthread_cond_destroy(&q->cv);
	pthread_mutex_destroy(&q->mu);
	free(q);
}

void gc_queue_kick(struct gc_queue *q)
{
	pthread_mutex_lock(&q->mu);
	q->kicked = true;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}

void gc_queue_get_stats(struct gc_queue *q, struct gc_queue_stats *st)
{
	pthread_mutex_lock(&q->mu);
	*st = q->stats;
	pthread_mutex_unlock(&q->mu);
}

/* ---- leases ---- */

static bool fids_valid(const char *const *fids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t l = fids[i] ? strlen(fids[i]) : 0;
		if (l == 0 || l > FILER_FID_MAX)
			return false;
	}
	return true;
}

enum lease_step { STEP_ENQUEUE, STEP_CLAIM, STEP_DUE_NOW };

/* Runs step on fids in runs of at most FILER_GC_BATCH_MAX inside tx; stops at an error. */
static wfs_err in_batches(struct filer_store *s, struct filer_tx *tx, enum lease_step step,
			  const char *const *fids, size_t n, int64_t due_ns)
{
	wfs_err err = WFS_OK;
	for (size_t i = 0; i < n && !err; i += FILER_GC_BATCH_MAX) {
		size_t k = MIN(n - i, (size_t)FILER_GC_BATCH_MAX);
		switch (step) {
		case STEP_ENQUEUE:
			err = s->ops->gc_enqueue(s, tx, fids + i, k, due_ns);
			break;
		case STEP_CLAIM:
			err = s->ops->gc_done(s, tx, fids + i, k);
			break;
		case STEP_DUE_NOW:
			/* the row enqueue kept (a lease, or a pending retry) is due now too */
			err = s->ops->gc_enqueue(s, tx, fids + i, k, 0);
			if (!err)
				err = s->ops->gc_defer(s, tx, fids + i, k, 0);
			break;
		}
	}
	return err;
}

/* One transaction of its own around in_batches. */
static wfs_err in_own_tx(struct filer_store *s, enum lease_step step, const char *const *fids,
			 size_t n, int64_t due_ns)
{
	struct filer_tx *tx = NULL;
	wfs_err err;

	if (!n)
		return WFS_OK;
	if (!fids_valid(fids, n) || due_ns < 0)
		return WFS_EINVAL;
	err = filer_store_begin(s, &tx);
	if (err)
		return err;
	err = in_batches(s, tx, step, fids, n, due_ns);
	if (err) {
		filer_store_rollback(tx);
		return err;
	}
	return filer_store_commit(tx);
}

wfs_err gc_lease_add(struct filer_store *s, const char *const *fids, size_t n, int64_t due_ns)
{
	return in_own_tx(s, STEP_ENQUEUE, fids, n, due_ns);
}

wfs_err gc_lease_claim(struct filer_store *s, struct filer_tx *tx, const char *const *fids,
		       size_t n)
{
	if (!n)
		return WFS_OK;
	if (!tx || !fids_valid(fids, n))
		return WFS_EINVAL;
	/* a deferred claim rides on the commit: no round trip of its own */
	if (s->ops->gc_claim)
		return s->ops->gc_claim(s, tx, fids, n);
	return in_batches(s, tx, STEP_CLAIM, fids, n, 0);
}

wfs_err gc_queue_free_now(struct filer_store *s, const char *const *fids, size_t n)
{
	return in_own_tx(s, STEP_DUE_NOW, fids, n, 0);
}
