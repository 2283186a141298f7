/*
 * The filer store: where entries and the filer's own small state live.
 *
 * Two backends sit behind one const table of operations (store_impl.h):
 * SQLite ("sqlite:///path/file.db", the embedded default) and PostgreSQL
 * ("postgres://..." / "postgresql://..." URIs or a libpq conninfo string such
 * as "host=... dbname=..."). Entries are keyed by (directory, name); the table
 * is indexed by a 64-bit xxh64 hash of the directory plus the name, and stores
 * the directory text as well so a hash collision never mixes two directories.
 * The entry itself is one blob in filer/entry.h's encoding.
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
#include "filer/entry.h"

struct filer_store;
struct filer_tx;

/* Longest page list_directory returns in one call. */
#define FILER_LIST_LIMIT_MAX 100000
/* Bounds of the key-value space. */
#define FILER_KV_KEY_MAX 1024
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

/* Inserts e (borrowed) at e->dir/e->name. WFS_EEXIST if present (nothing changes). */
wfs_err filer_store_insert(struct filer_store *s, struct filer_tx *tx, const struct filer_entry *e);
/* Replaces the stored entry at e->dir/e->name. WFS_ENOENT if absent. */
wfs_err filer_store_update(struct filer_store *s, struct filer_tx *tx, const struct filer_entry *e);
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
wfs_err filer_store_kv_put(struct filer_store *s, struct filer_tx *tx, const void *key,
			   size_t klen, const void *val, size_t vlen);
/* *val (caller frees; NULL when *vlen is 0) is the value; WFS_ENOENT if absent. */
wfs_err filer_store_kv_get(struct filer_store *s, struct filer_tx *tx, const void *key,
			   size_t klen, void **val, size_t *vlen);
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

#endif
