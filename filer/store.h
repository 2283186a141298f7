/*
 * The filer store: where entries and the filer's own small state live.
 *
 * Two backends sit behind one const table of operations (store_impl.h):
 * SQLite ("sqlite:///path/file.db", the embedded default) and PostgreSQL
 * ("postgres://..." / "postgresql://..." URIs or a libpq conninfo string such
 * as "host=... dbname=..."). Entries are keyed by (directory, name); the table
 * is indexed by a 64-bit xxh64 hash of the directory plus the name, and stores
 * the directory text as well so a hash collision never mixes two directories.
 * The entry itself is one blob in client/entry.h's encoding.
 *
 * Threads: a store is shared by all threads. Every operation may be called
 * from any thread at any time; each borrows a database connection from the
 * store's pool for its duration. A transaction (filer_tx) keeps one connection
 * for itself and belongs to the thread that began it until commit/rollback.
 * In SQLite one writer runs at a time (writes queue on a mutex, readers run in
 * parallel under WAL); PostgreSQL runs writers in parallel.
 *
 * Errors: WFS_ENOENT (no such entry or key), WFS_EEXIST (insert of an existing
 * entry), WFS_EINVAL (bad argument, name or DSN), WFS_EUNAVAIL (the database
 * is unreachable; PostgreSQL connections are re-established on the next call,
 * so a server restart costs at most the calls in flight), WFS_ECORRUPT (a
 * stored entry failed to decode), WFS_EIO (any other database failure).
 */
#ifndef WEEDFS_FILER_STORE_H
#define WEEDFS_FILER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "client/entry.h"

struct filer_store;
struct filer_tx;

/* Longest page list_directory returns in one call. */
#define FILER_LIST_LIMIT_MAX 100000
/* Bounds of the key-value space. */
#define FILER_KV_KEY_MAX   1024
#define FILER_KV_VALUE_MAX (16u << 20)

/*
 * Opens (creating the schema if needed) the store a DSN names. *out is owned
 * by the caller (filer_store_close). WFS_EINVAL for an unknown scheme or bad
 * DSN, WFS_EUNAVAIL if the database cannot be reached. Any thread.
 */
wfs_err filer_store_open(const char *dsn, struct filer_store **out);
/* Closes every connection and frees s. No operation may be in flight. NULL does nothing. */
void filer_store_close(struct filer_store *s);
/* The backend name ("sqlite" or "postgres"). */
const char *filer_store_name(const struct filer_store *s);
/*
 * Whether a find or kv_get without a transaction is a local read that never
 * waits on the network or on writers (SQLite in WAL mode), cheap enough for
 * an event loop thread.
 */
bool filer_store_local_reads(const struct filer_store *s);

/*
 * Begins a transaction; *tx is owned by the calling thread until
 * filer_store_commit or filer_store_rollback, which both release it. Pass tx to
 * the operations below to run them inside it; pass NULL to run an operation on
 * its own. Do not run NULL-tx writes on the same store from the thread that
 * holds a transaction (SQLite would wait for itself).
 */
wfs_err filer_store_begin(struct filer_store *s, struct filer_tx **tx);
/* Commits and releases tx (also when the commit fails, which rolls back). */
wfs_err filer_store_commit(struct filer_tx *tx);
/* Rolls back and releases tx. NULL does nothing. */
void filer_store_rollback(struct filer_tx *tx);
/*
 * Makes tx's commit durable before it returns (an fsync'ed file's entry): SQLite
 * syncs the WAL after it (as synchronous=FULL would; others stay NORMAL), PostgreSQL
 * commits it with synchronous_commit on. Either way every earlier commit is
 * durable too. The thread that holds tx.
 */
void filer_store_tx_durable(struct filer_tx *tx);
/*
 * Makes every commit so far durable: a durable transaction that rewrites one
 * key-value record ("fsync-barrier"). Any thread.
 */
wfs_err filer_store_sync(struct filer_store *s);

/*
 * Inode numbers (attr.inode): the root ("/", "") is always FILER_ROOT_INODE.
 * An entry inserted with inode 0 gets a new number, never handed out before by
 * any filer of the store (e->attr.inode is set, so the caller's events and
 * answers show it); one inserted with a number keeps it (a rename or move
 * re-inserts the entry as it was, a new name of a hard link carries its
 * file's). An update with inode 0 keeps the stored entry's number (one read
 * more), unless the stored entry is a name of a hard-linked file and e is not
 * that file: then e is a new file and gets a new number. An update with a
 * number stores it as given.
 */

/* Inserts e (borrowed; only its inode may be set) at e->dir/e->name. WFS_EEXIST if present. */
wfs_err filer_store_insert(struct filer_store *s, struct filer_tx *tx, struct filer_entry *e);
/* Replaces the stored entry at e->dir/e->name (e as for insert). WFS_ENOENT if absent. */
wfs_err filer_store_update(struct filer_store *s, struct filer_tx *tx, struct filer_entry *e);
/*
 * *ino is a new inode number from this filer's reserved block, reserving the
 * next block first when it is used up (inside tx when given). Any thread.
 */
wfs_err filer_store_new_inode(struct filer_store *s, struct filer_tx *tx, uint64_t *ino);
/* *out (caller frees) is the entry at dir/name; WFS_ENOENT if absent. */
wfs_err filer_store_find(struct filer_store *s, struct filer_tx *tx, const char *dir,
			 const char *name, struct filer_entry **out);
/* Deletes the entry at dir/name. WFS_ENOENT if absent. */
wfs_err filer_store_delete(struct filer_store *s, struct filer_tx *tx, const char *dir,
			   const char *name);
/*
 * Deletes every direct child of dir (not grandchildren: the caller walks
 * subdirectories first). *deleted (may be NULL) is the count removed.
 */
wfs_err filer_store_delete_children(struct filer_store *s, struct filer_tx *tx, const char *dir,
				    uint64_t *deleted);

/* Receives one listed entry and takes ownership of it. Return false to stop early. */
typedef bool (*filer_list_fn)(void *ctx, struct filer_entry *e);
/*
 * Lists the children of dir in byte order of their names: those after start
 * (or at start if inclusive; start NULL or "" lists from the beginning) whose
 * name begins with prefix (NULL or "" for all; matched as bytes, '%' and '_'
 * are plain characters), at most limit (1..FILER_LIST_LIMIT_MAX) of them. Cost
 * is linear in the page, not in the directory. *count (may be NULL) is how
 * many were passed to fn.
 */
wfs_err filer_store_list(struct filer_store *s, struct filer_tx *tx, const char *dir,
			 const char *start, bool inclusive, size_t limit, const char *prefix,
			 filer_list_fn fn, void *ctx, size_t *count);

/* The filer's own state: binary keys (1..FILER_KV_KEY_MAX) to binary values. */
wfs_err filer_store_kv_put(struct filer_store *s, struct filer_tx *tx, const void *key, size_t klen,
			   const void *val, size_t vlen);
/* *val (caller frees; NULL when *vlen is 0) is the value; WFS_ENOENT if absent. */
wfs_err filer_store_kv_get(struct filer_store *s, struct filer_tx *tx, const void *key, size_t klen,
			   void **val, size_t *vlen);
/* WFS_ENOENT if absent. */
wfs_err filer_store_kv_delete(struct filer_store *s, struct filer_tx *tx, const void *key,
			      size_t klen);

/* The hash the stores index directories by (xxh64 of the path, seed 0). Any thread. */
uint64_t filer_store_dir_hash(const char *dir);
/*
 * Test hook: replaces the directory hash (NULL restores xxh64), e.g. with a
 * constant to force collisions. Call before opening stores, from one thread.
 */
void filer_store_set_hash_for_testing(uint64_t (*fn)(const char *dir));

/*
 * The exclusive upper bound of the names that begin with prefix, in byte order:
 * the prefix with its last character incremented (as a UTF-8 code point when
 * the prefix is valid UTF-8, so the bound is valid text too). Newly allocated;
 * NULL when no bound exists (the prefix is all maximal characters).
 */
char *filer_store_prefix_end(const char *prefix);

/*
 * ---- The metadata event log ----
 *
 * Every mutation appends an event in the transaction that makes it, so the log
 * never disagrees with the namespace (docs/filer-events.md). ts_ns is unique
 * and strictly increasing per store, also across filers sharing one
 * PostgreSQL database: it is max(now, last + 1), taken from a one-row clock
 * whose row lock is held until the appending transaction ends. Events are
 * therefore visible in ts order, so ts alone is a gap-free resume token.
 * The events of a transaction are kept in memory and written by its commit,
 * as late as possible: the clock is taken right before COMMIT (PostgreSQL
 * sends the appends and the COMMIT in one pipeline), so the serialised part
 * is only the server's work for the appends and the commit, and taking the
 * clock after every entry change cannot deadlock against entry row locks.
 */
struct filer_event {
	int64_t ts_ns;                 /* unique, strictly increasing per store */
	char *dir;                     /* owned: old_entry's directory, else new_entry's */
	struct filer_entry *old_entry; /* owned; NULL for a create */
	struct filer_entry *new_entry; /* owned; NULL for a delete */
};

/* Longest page read_events returns in one call. */
#define FILER_EVENTS_LIMIT_MAX 10000

/* Frees ev and what it owns. NULL does nothing. */
void filer_event_free(struct filer_event *ev);

/*
 * Appends the event old_entry -> new_entry (both borrowed, encoded now;
 * either may be NULL, not both) inside tx (NULL: in a transaction of its
 * own). A rename is one event with both. Inline content is left out of
 * both (content_omitted: its length only). The event is written when tx
 * commits (its time is taken then) and is visible to readers from that
 * commit on; a rollback drops it. *ts_ns (may be NULL) receives the event's
 * time: with tx, when filer_store_commit succeeds (so the pointer must stay
 * valid until then; it holds 0 before and after a failed commit), without
 * tx, on return. Any thread (the one holding tx).
 */
wfs_err filer_store_append_event(struct filer_store *s, struct filer_tx *tx,
				 const struct filer_entry *old_entry,
				 const struct filer_entry *new_entry, int64_t *ts_ns);

/*
 * Signs tx with sig, the id of the client whose request it carries out (0:
 * none): the events tx commits carry it, and a reader passing the same id as
 * skip_sig passes over them, so a client is not told about its own changes.
 * The thread holding tx.
 */
void filer_store_tx_sign(struct filer_tx *tx, int32_t sig);
/* tx's signature (0: unsigned). */
int32_t filer_store_tx_signature(const struct filer_tx *tx);

/* Receives one event and takes ownership of it. Return false to stop early. */
typedef bool (*filer_event_fn)(void *ctx, struct filer_event *ev);

/*
 * Passes to fn, in ts order, up to limit (1..FILER_EVENTS_LIMIT_MAX) events
 * with ts > since_ns whose old or new full path is prefix or lies under it
 * (prefix NULL, "" or "/" for all; a trailing slash is ignored; "/a/b"
 * matches "/a/b" and "/a/b/c" but not "/a/bc"), except those signed with
 * skip_sig (filer_store_tx_sign; 0 skips none).
 *
 * *next_since (required) is the resume token: call again with it as since_ns
 * to continue without a gap or a duplicate. It advances past events that did
 * not match the filters too, up to the newest event committed when the call
 * began, so a filtered reader does not rescan them. Any thread; no tx (reads
 * only committed events).
 */
wfs_err filer_store_read_events(struct filer_store *s, int64_t since_ns, const char *prefix,
				int32_t skip_sig, size_t limit, filer_event_fn fn, void *ctx,
				int64_t *next_since);

/*
 * *ts_ns is the time of the newest committed event (0 if none ever). Cheap:
 * the metalog polls it to notice other filers' appends. Any thread.
 */
wfs_err filer_store_event_clock(struct filer_store *s, int64_t *ts_ns);

/*
 * Retention: deletes events with ts < before_ns, in batches (so neither store
 * holds a long write lock). *deleted (may be NULL) is the count. The clock is
 * kept, so ts stays increasing after a trim. Any thread; the daemon calls it
 * periodically with before_ns = now - retention.
 */
wfs_err filer_store_trim_events(struct filer_store *s, int64_t before_ns, uint64_t *deleted);

/*
 * ---- The garbage queue ----
 *
 * File ids of chunks no longer referenced, waiting to be deleted from the
 * volume servers. An item is due at its `due` time; taking it leases it (due
 * moves to now + lease) so no other worker, in this filer or another one
 * sharing the database, gets it until the lease runs out. A worker that
 * crashes after taking but before gc_done loses nothing: the item comes due
 * again when the lease expires. Deleting a blob twice is harmless (the second
 * delete finds nothing), deleting one still referenced is prevented by
 * enqueuing only in the transaction that drops the last reference.
 */
#define FILER_GC_BATCH_MAX 10000

struct filer_gc_item {
	char *fid;         /* owned */
	uint32_t attempts; /* times taken so far, this one included */
};

/* Frees items[0..n) and the array. NULL does nothing. */
void filer_gc_items_free(struct filer_gc_item *items, size_t n);

/*
 * Queues n (1..FILER_GC_BATCH_MAX) file ids (borrowed, 1..FILER_FID_MAX bytes),
 * due at not_before_ns (0: at once), inside tx (NULL: a transaction of its
 * own). An id already queued keeps its state. Any thread.
 */
wfs_err filer_store_gc_enqueue(struct filer_store *s, struct filer_tx *tx, const char *const *fids,
			       size_t n, int64_t not_before_ns);

/*
 * Takes up to max (1..FILER_GC_BATCH_MAX) due items, oldest due first, and
 * leases them for lease_ns (> 0). *items (caller frees with
 * filer_gc_items_free; NULL when *n is 0). Two concurrent takers never get the
 * same id while its lease runs. Any thread; no tx.
 */
wfs_err filer_store_gc_take(struct filer_store *s, size_t max, int64_t lease_ns,
			    struct filer_gc_item **items, size_t *n);

/* Removes n (1..FILER_GC_BATCH_MAX) ids from the queue (absent ones are ignored). Any thread. */
wfs_err filer_store_gc_done(struct filer_store *s, const char *const *fids, size_t n);

/* Makes n ids due at due_ns (a failed delete's back-off). Absent ids are ignored. Any thread. */
wfs_err filer_store_gc_defer(struct filer_store *s, const char *const *fids, size_t n,
			     int64_t due_ns);

/* *n is the number of queued ids (due or not). Any thread. */
wfs_err filer_store_gc_count(struct filer_store *s, uint64_t *n);

#endif
