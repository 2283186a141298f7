/*
 * The garbage worker: deletes, from the volume servers, the chunks that the
 * store's garbage queue holds (store.h, "The garbage queue").
 *
 * DESIGN: one background thread takes a batch of due file ids (leasing them
 * in the store), deletes them through the caller's callback, then marks the
 * deleted ones done and defers the failed ones with exponential back-off
 * (backoff_min * 2^(attempts-1), at most backoff_max). Nothing is kept in
 * memory between batches: what a crashed or stopped worker took but did not
 * finish comes due again when its lease expires, so no id is lost, and ids
 * are only deleted, never re-referenced, so a repeated delete is harmless.
 * Several filers sharing a database each run a worker; the store's leases
 * keep them from taking the same id.
 */
#ifndef WEEDFS_FILER_GC_QUEUE_H
#define WEEDFS_FILER_GC_QUEUE_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "filer/store.h"

struct gc_queue;

/*
 * Deletes fids[0..n) (borrowed), writing one result per id into results:
 * WFS_OK or WFS_ENOENT (already gone) count as deleted; anything else is
 * retried later. Called from the worker thread only, one call at a time.
 */
typedef void (*gc_delete_fn)(void *ctx, const char *const *fids, size_t n, wfs_err *results);

struct gc_queue_opts {
	size_t batch;           /* ids per take (1..FILER_GC_BATCH_MAX) */
	int64_t lease_ns;       /* how long a taken batch is ours */
	int idle_ms;            /* sleep when nothing is due (a kick wakes it earlier) */
	int64_t backoff_min_ns; /* first retry delay after a failed delete */
	int64_t backoff_max_ns; /* longest retry delay */
};

/* Defaults: batch 256, lease 5 min, idle 1 s, back-off 1 s .. 10 min. */
void gc_queue_opts_default(struct gc_queue_opts *o);

/*
 * Starts the worker over s (borrowed; must outlive the queue). opts may be
 * NULL. del and ctx are kept until gc_queue_stop. Any thread.
 */
struct gc_queue *gc_queue_start(struct filer_store *s, const struct gc_queue_opts *opts,
				gc_delete_fn del, void *ctx);

/*
 * Stops the worker and frees q: the delete in progress finishes, the ids it
 * deleted are marked done, the rest of its batch stays leased in the store
 * and comes due after the lease. NULL does nothing. Not from the worker.
 */
void gc_queue_stop(struct gc_queue *q);

/* Wakes the worker now (e.g. after committing a transaction that enqueued). Any thread. */
void gc_queue_kick(struct gc_queue *q);

struct gc_queue_stats {
	uint64_t deleted; /* ids deleted and marked done */
	uint64_t failed;  /* failed delete attempts (each deferred) */
	uint64_t batches; /* non-empty batches taken */
	uint64_t errors;  /* store errors (take/done/defer) */
};

/* A snapshot of the counters. Any thread. */
void gc_queue_get_stats(struct gc_queue *q, struct gc_queue_stats *st);

/*
 * ---- Leases ----
 *
 * A file id handed to a client that stores a blob under it and references it
 * later (the JSON API's assign) is queued under a lease: due only when the
 * lease runs out. The transaction that makes an entry reference the id claims
 * it (takes it off the queue), so a committed id is kept and an id whose
 * client died before its commit comes due and is deleted (or, never stored,
 * found missing: also done). The functions below take any n (batched inside)
 * and run on worker threads (they block on the store).
 */

/*
 * Queues fids[0..n) (borrowed; 1..FILER_FID_MAX bytes each) due at due_ns,
 * all in one transaction of their own. An id already queued keeps its state.
 */
wfs_err gc_lease_add(struct filer_store *s, const char *const *fids, size_t n, int64_t due_ns);

/*
 * Inside tx, the transaction that makes an entry reference fids[0..n)
 * (borrowed): takes them off the queue, so they stay if tx commits and stay
 * leased if it does not. Ids not queued cost an indexed delete each (SQLite)
 * or a share of one statement (PostgreSQL). WFS_EINVAL for a malformed id.
 * PostgreSQL defers the delete: it goes out in one pipeline with tx's next
 * garbage-queue statement or its COMMIT, so a failure in it is reported
 * there (the commit fails and rolls back), not here.
 */
wfs_err gc_lease_claim(struct filer_store *s, struct filer_tx *tx, const char *const *fids,
		       size_t n);

/*
 * Queues fids[0..n) (borrowed) due at once, ending any lease they were under
 * (a client gives back blobs it will never reference), in one transaction.
 */
wfs_err gc_queue_free_now(struct filer_store *s, const char *const *fids, size_t n);

#endif
