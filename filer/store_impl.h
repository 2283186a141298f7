/*
 * For store backends only: the operations table behind struct filer_store.
 * store.c validates arguments (names, limits, sizes) before calling a backend,
 * so backends may assume them bounded.
 */
#ifndef WEEDFS_FILER_STORE_IMPL_H
#define WEEDFS_FILER_STORE_IMPL_H

#include <pthread.h>
#include "buf.h"
#include "filer/store.h"

/* One stored event as a backend reads it (all borrowed for the call). */
struct filer_event_row {
	int64_t ts;
	const char *dir;
	const char *old_path, *new_path; /* NULL when absent */
	const uint8_t *old_blob, *new_blob;
	size_t old_len, new_len;
	int32_t sig; /* the signature (filer_store_tx_sign), 0 when unsigned */
};
/* Receives one row; false stops the read. */
typedef bool (*filer_event_row_fn)(void *ctx, const struct filer_event_row *r);

struct filer_store_ops {
	const char *name;
	/* point reads without a transaction are local and never wait on the network or
	   on writers, so an event loop thread may make them (filer_store_local_reads) */
	bool local_reads;
	/* Opens the store; dsn is what follows the backend's scheme selection in store.c. */
	wfs_err (*open)(const char *dsn, struct filer_store **out);
	void (*close)(struct filer_store *s);
	wfs_err (*begin)(struct filer_store *s, struct filer_tx **tx);
	wfs_err (*commit)(struct filer_tx *tx);
	void (*rollback)(struct filer_tx *tx);
	/* blob: the encoded entry. */
	wfs_err (*insert)(struct filer_store *s, struct filer_tx *tx, const char *dir,
			  const char *name, const void *blob, size_t len);
	wfs_err (*update)(struct filer_store *s, struct filer_tx *tx, const char *dir,
			  const char *name, const void *blob, size_t len);
	wfs_err (*find)(struct filer_store *s, struct filer_tx *tx, const char *dir,
			const char *name, struct filer_entry **out);
	wfs_err (*del)(struct filer_store *s, struct filer_tx *tx, const char *dir,
		       const char *name);
	wfs_err (*delete_children)(struct filer_store *s, struct filer_tx *tx, const char *dir,
				   uint64_t *deleted);
	/* lo: first name (inclusive if lo_incl; NULL = none); hi: exclusive bound or NULL. */
	wfs_err (*list)(struct filer_store *s, struct filer_tx *tx, const char *dir, const char *lo,
			bool lo_incl, const char *hi, const char *prefix, size_t limit,
			filer_list_fn fn, void *ctx, size_t *count);
	wfs_err (*kv_put)(struct filer_store *s, struct filer_tx *tx, const void *key, size_t klen,
			  const void *val, size_t vlen);
	wfs_err (*kv_get)(struct filer_store *s, struct filer_tx *tx, const void *key, size_t klen,
			  void **val, size_t *vlen);
	wfs_err (*kv_delete)(struct filer_store *s, struct filer_tx *tx, const void *key,
			     size_t klen);
	/*
	 * Event log. append_event, gc_enqueue, gc_done and gc_defer always get
	 * a transaction (store.c opens one when the caller passed NULL).
	 * old/new paths are full paths (NULL when the side is absent); sig 0 is
	 * stored as NULL.
	 */
	wfs_err (*append_event)(struct filer_store *s, struct filer_tx *tx, int64_t now_ns,
				const char *dir, const char *old_path, const void *old_blob,
				size_t old_len, const char *new_path, const void *new_blob,
				size_t new_len, int32_t sig, int64_t *ts);
	/*
	 * Optional: appends rows[0..n) (n >= 1; their ts is unused) and commits
	 * tx, releasing it either way; ts[i] receives row i's time. It lets a
	 * backend take the event clock as late as possible (PostgreSQL sends
	 * the appends and the COMMIT in one pipeline, so the clock's row lock is
	 * held only while the server runs them). Without it store.c calls
	 * append_event per row and then commit.
	 */
	wfs_err (*commit_events)(struct filer_tx *tx, int64_t now_ns,
				 const struct filer_event_row *rows, size_t n, int64_t *ts);
	wfs_err (*event_clock)(struct filer_store *s, int64_t *ts);
	/*
	 * under == NULL: no filter; else paths equal to under or in [lo, hi).
	 * Rows signed skip_sig are left out (0: none is).
	 */
	wfs_err (*read_events)(struct filer_store *s, int64_t since, const char *under,
			       const char *lo, const char *hi, int32_t skip_sig, size_t limit,
			       filer_event_row_fn fn, void *ctx);
	/* Deletes up to max events with ts < before; *deleted is how many. */
	wfs_err (*trim_events)(struct filer_store *s, int64_t before, size_t max,
			       uint64_t *deleted);
	wfs_err (*gc_enqueue)(struct filer_store *s, struct filer_tx *tx, const char *const *fids,
			      size_t n, int64_t due);
	wfs_err (*gc_take)(struct filer_store *s, int64_t now, int64_t until, size_t max,
			   struct filer_gc_item **items, size_t *n);
	wfs_err (*gc_done)(struct filer_store *s, struct filer_tx *tx, const char *const *fids,
			   size_t n);
	wfs_err (*gc_defer)(struct filer_store *s, struct filer_tx *tx, const char *const *fids,
			    size_t n, int64_t due);
	/*
	 * Optional: gc_done of n (>= 1, valid) ids inside tx, deferred: the
	 * backend buffers them and sends the delete with tx's next garbage-queue
	 * statement or with its commit, in order, costing no round trip of its
	 * own. A failing delete fails that statement or the commit (which then
	 * rolls back). gc_queue.c uses it for claims when present, else gc_done.
	 */
	wfs_err (*gc_claim)(struct filer_store *s, struct filer_tx *tx, const char *const *fids,
			    size_t n);
	wfs_err (*gc_count)(struct filer_store *s, uint64_t *n);
	/*
	 * Reserves n inode numbers for this filer: the counter row becomes
	 * max(counter, floor) + n, atomically against every filer sharing the
	 * database, and *first is the old max(counter, floor). n may be 0 (only
	 * raises the counter to floor). With reserve_in_tx the backend runs it in
	 * tx when one is given (SQLite: the writer holds the database, a second
	 * write would wait for itself) and, when tx rolls back or its commit
	 * fails, raises the counter back to tx->inode_floor before releasing the
	 * database; otherwise it ignores tx and commits the reservation at once.
	 */
	wfs_err (*reserve_inodes)(struct filer_store *s, struct filer_tx *tx, uint64_t floor,
				  uint64_t n, uint64_t *first);
	bool reserve_in_tx;
};

/* Every backend's store and transaction begin with these. */
struct filer_store {
	const struct filer_store_ops *ops;
	/* store.c's inode allocator: this filer's reserved block [ino_next, ino_end), and
	   the end of the highest block it ever reserved; protected by ino_mu */
	pthread_mutex_t ino_mu;
	uint64_t ino_next, ino_end, ino_high;
};

/* An event appended in a transaction, written when it commits (store.c). */
struct filer_pending_event {
	char *dir, *old_path, *new_path; /* owned; paths NULL when the side is absent */
	buf old_blob, new_blob;
	int64_t *ts_out; /* the caller's, or NULL */
};

/* Backends allocate their transaction zeroed, with this first. */
struct filer_tx {
	struct filer_store *store;
	struct filer_pending_event *pending; /* owned by store.c */
	size_t npending, cappending;
	int32_t sig; /* filer_store_tx_sign */
	/* reserve_in_tx backends: the counter's floor to restore if tx does not commit (0: it
	   reserved no inodes) */
	uint64_t inode_floor;
	bool durable; /* filer_store_tx_durable: the commit is synced to disk */
};

extern const struct filer_store_ops filer_store_sqlite_ops;
extern const struct filer_store_ops filer_store_postgres_ops;

#endif
