/*
 * DESIGN: the SQLite store. One database file in WAL mode, a pool of
 * connections (one per concurrently running operation, opened on demand and
 * reused), each with its prepared statements cached. Readers run in parallel;
 * writers take the store's write mutex first so that at most one write
 * transaction is open in this process and our own threads never spin in
 * SQLite's busy handler (the busy timeout remains for other processes sharing
 * the file). Transactions are BEGIN IMMEDIATE under that mutex, so a
 * read-modify-write inside one can never fail to upgrade its lock.
 *
 * Schema (filer/store_sqlite_schema.sql): filemeta(dirhash, name,
 * directory, meta) with primary key (dirhash, name, directory): lookups and
 * listings are index range scans on (dirhash, name), and the directory
 * column keeps colliding hashes apart. TEXT compares with the BINARY
 * collation, i.e. bytewise.
 *
 * Checkpoints: a checkpoint copies the WAL's pages into the database file and
 * fsyncs both. SQLite's default runs one in the committing thread every 1000
 * WAL pages, and every writer waited for its fsyncs (7-11 ms each on a virtio
 * disk, every ~120 ms at 3,000 creates/s: a quarter of the write rate and a
 * p99 of 23 ms). Here commits only note the WAL's size (a WAL hook, which
 * turns the automatic checkpoint off) and a thread of the store's own, with
 * its own connection, runs PASSIVE checkpoints (they wait for no reader or
 * writer: the same kind SQLite's automatic one is) once the WAL holds
 * CHECKPOINT_PAGES, and within CHECKPOINT_IDLE_MS of any commit otherwise,
 * which also bounds how long a commit stays only in the unsynced WAL. While
 * writes go on, such checkpoints never quite catch up, and SQLite starts the
 * WAL over only once all of it is in the database; so when the WAL reaches
 * WAL_CATCH_UP_PAGES the checkpointer holds the write mutex for one (writers
 * wait for one checkpoint in four instead of every one). Between 1000 pages
 * and that one, the checkpointer runs a PASSIVE checkpoint each time the WAL
 * grew by CHECKPOINT_STEP pages (the hook reports the WAL's size, which only
 * falls when it starts over): that keeps what the held-off one has left to
 * copy small. Checkpointing only every 1000 new pages was tried: the held-off
 * checkpoint then had more to copy and the 4 KiB PUT's p99 doubled (38
 * against 17-19 ms). One after every commit, as before the step, cost two
 * fsyncs per few small commits, a sixth of a core at 10,000 commits/s and
 * stalls of the writers' WAL appends on pages under writeback.
 *
 * Commits are synchronous=NORMAL (durable at the next checkpoint), except a
 * durable transaction's (filer_store_tx_durable: an fsync): after its COMMIT
 * the WAL is synced through SQLite's own handle, what synchronous=FULL does
 * (the pragma cannot change inside a transaction), and with it every commit
 * before.
 *
 * Event log and garbage queue (store.h): filer_clock (one row, the last
 * event ts), filer_events keyed by ts, filer_gc(fid, due, attempts) indexed
 * by due. Writers are serialised anyway, so the clock bump is free of races.
 *
 * Inode blocks (store_impl.h, reserve_inodes) come from the one-row
 * filer_inode, inside the caller's transaction when there is one (the
 * writer holds the database). Other threads may take numbers of that block
 * before the transaction ends, and their writes queue behind it; so a
 * transaction that reserved and then rolls back raises the counter back to
 * the reserved high-water mark before it lets the next writer in.
 */
#include "config.h"
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "filer/store_impl.h"
#include "filer/store_schema.h"
#include "log.h"
#include "util.h"

enum {
	ST_INSERT,
	ST_UPDATE,
	ST_FIND,
	ST_DELETE,
	ST_DELETE_CHILDREN,
	ST_KV_PUT,
	ST_KV_GET,
	ST_KV_DELETE,
	ST_CLOCK_BUMP,
	ST_CLOCK_GET,
	ST_EV_INSERT,
	ST_EV_READ,
	ST_EV_READ_UNDER,
	ST_EV_TRIM,
	ST_GC_ENQUEUE,
	ST_GC_TAKE,
	ST_GC_DONE,
	ST_GC_DEFER,
	ST_GC_COUNT,
	ST_INO_RESERVE,
	ST_LIST, /* 6 variants: lo none/incl/excl x hi none/some */
	ST_COUNT = ST_LIST + 6
};

static const char *const stmt_sql[ST_LIST] = {
	[ST_INSERT] = "INSERT INTO filemeta(dirhash,name,directory,meta) VALUES(?1,?2,?3,?4) "
		      "ON CONFLICT DO NOTHING",
	[ST_UPDATE] = "UPDATE filemeta SET meta=?4 WHERE dirhash=?1 AND name=?2 AND directory=?3",
	[ST_FIND] = "SELECT meta FROM filemeta WHERE dirhash=?1 AND name=?2 AND directory=?3",
	[ST_DELETE] = "DELETE FROM filemeta WHERE dirhash=?1 AND name=?2 AND directory=?3",
	[ST_DELETE_CHILDREN] = "DELETE FROM filemeta WHERE dirhash=?1 AND directory=?2",
	[ST_KV_PUT] = "INSERT INTO filer_kv(k,v) VALUES(?1,?2) ON CONFLICT(k) DO UPDATE SET "
		      "v=excluded.v",
	[ST_KV_GET] = "SELECT v FROM filer_kv WHERE k=?1",
	[ST_KV_DELETE] = "DELETE FROM filer_kv WHERE k=?1",
	[ST_CLOCK_BUMP] = "UPDATE filer_clock SET ts=max(?1,ts+1) WHERE id=1 RETURNING ts",
	[ST_CLOCK_GET] = "SELECT ts FROM filer_clock WHERE id=1",
	[ST_EV_INSERT] =
		"INSERT INTO filer_events(ts,directory,old_path,old_meta,new_path,new_meta,sig) "
		"VALUES(?1,?2,?3,?4,?5,?6,nullif(?7,0))",
	/* ?6: the signature to leave out (0: none; unsigned rows hold NULL) */
	[ST_EV_READ] = "SELECT ts,directory,old_path,old_meta,new_path,new_meta FROM filer_events "
		       "WHERE ts>?1 AND sig IS NOT ?6 ORDER BY ts LIMIT ?5",
	[ST_EV_READ_UNDER] = "SELECT ts,directory,old_path,old_meta,new_path,new_meta FROM "
			     "filer_events WHERE ts>?1 AND sig IS NOT ?6 AND (old_path=?2 OR "
			     "(old_path>=?3 AND old_path<?4) OR new_path=?2 OR (new_path>=?3 AND "
			     "new_path<?4)) ORDER BY ts LIMIT ?5",
	[ST_EV_TRIM] = "DELETE FROM filer_events WHERE ts IN (SELECT ts FROM filer_events "
		       "WHERE ts<?1 ORDER BY ts LIMIT ?2)",
	[ST_GC_ENQUEUE] = "INSERT INTO filer_gc(fid,due,attempts) VALUES(?1,?2,0) "
			  "ON CONFLICT DO NOTHING",
	[ST_GC_TAKE] = "UPDATE filer_gc SET due=?1, attempts=attempts+1 WHERE fid IN (SELECT fid "
		       "FROM filer_gc WHERE due<=?2 ORDER BY due LIMIT ?3) RETURNING fid,attempts",
	[ST_GC_DONE] = "DELETE FROM filer_gc WHERE fid=?1",
	[ST_GC_DEFER] = "UPDATE filer_gc SET due=?2 WHERE fid=?1",
	[ST_GC_COUNT] = "SELECT count(*) FROM filer_gc",
	[ST_INO_RESERVE] = "UPDATE filer_inode SET next=max(next,?1)+?2 WHERE id=1 "
			   "RETURNING next-?2",
};

struct sq_conn {
	sqlite3 *db;
	sqlite3_stmt *st[ST_COUNT];
	struct sq_conn *next; /* in the idle list */
};

#define CHECKPOINT_PAGES   1000 /* SQLite's default automatic checkpoint size */
#define CHECKPOINT_IDLE_MS 1000
#define WAL_CATCH_UP_PAGES (4 * CHECKPOINT_PAGES)
#define CHECKPOINT_STEP    100 /* pages a large WAL grows by between two checkpoints */

struct sq_store {
	struct filer_store base;
	char *path;
	pthread_mutex_t mu;       /* protects idle */
	struct sq_conn *idle;     /* protected by mu */
	pthread_mutex_t write_mu; /* held for each write statement or write transaction */
	/* the checkpointer */
	pthread_t ckpt_thread;
	bool ckpt_started;
	pthread_mutex_t ckpt_mu;
	pthread_cond_t ckpt_wake;
	bool ckpt_stop;       /* protected by ckpt_mu */
	atomic_int wal_pages; /* the WAL's size after the last commit; 0: checkpointed */
	atomic_int ckpt_at;   /* the WAL's size the last checkpoint started at */
};

struct sq_tx {
	struct filer_tx base;
	struct sq_conn *c;
};

static wfs_err map_rc(sqlite3 *db, int rc, const char *what)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return WFS_OK;
	case SQLITE_CONSTRAINT:
		return WFS_EEXIST;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		log_warn("sqlite %s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		return WFS_ETIMEDOUT;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		log_error("sqlite %s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		return WFS_ECORRUPT;
	case SQLITE_FULL:
		return WFS_ENOSPC;
	case SQLITE_READONLY:
		return WFS_EREADONLY;
	default:
		log_warn("sqlite %s: %s", what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		return WFS_EIO;
	}
}

static void conn_free(struct sq_conn *c)
{
	if (!c)
		return;
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(c->st[i]);
	sqlite3_close(c->db);
	free(c);
}

/*
 * Whether a WAL of pages is worth a checkpoint now: it is large and grew by
 * CHECKPOINT_STEP since the last one (or started over), or must catch up.
 */
static bool ckpt_due(struct sq_store *s, int pages)
{
	int at = atomic_load(&s->ckpt_at);
	return pages >= CHECKPOINT_PAGES &&
	       (pages >= WAL_CATCH_UP_PAGES || pages < at || pages - at >= CHECKPOINT_STEP);
}

/* After each commit (SQLite's WAL hook): wakes the checkpointer when one is due. */
static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct sq_store *s = arg;
	(void)db, (void)name;
	atomic_store(&s->wal_pages, pages);
	if (ckpt_due(s, pages)) {
		pthread_mutex_lock(&s->ckpt_mu);
		pthread_cond_signal(&s->ckpt_wake);
		pthread_mutex_unlock(&s->ckpt_mu);
	}
	return SQLITE_OK;
}

static wfs_err conn_open(struct sq_store *s, struct sq_conn **out)
{
	struct sq_conn *c = xcalloc(1, sizeof(*c));
	int rc = sqlite3_open_v2(s->path, &c->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
				 NULL);
	wfs_err err;
	if (rc != SQLITE_OK) {
		log_error("could not open sqlite database \"%s\": %s", s->path,
			  c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
		conn_free(c);
		return WFS_EIO;
	}
	sqlite3_busy_timeout(c->db, 10000);
	rc = sqlite3_exec(c->db, "PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY;", NULL, NULL,
			  NULL);
	err = map_rc(c->db, rc, "pragma");
	if (err) {
		conn_free(c);
		return err;
	}
	sqlite3_wal_hook(c->db, wal_hook, s);
	*out = c;
	return WFS_OK;
}

static sqlite3_stmt *stmt(struct sq_conn *c, int which, wfs_err *err)
{
	static const char *const list_sql[6] = {
		"SELECT name,meta FROM filemeta WHERE dirhash=?1 AND directory=?2 "
		"ORDER BY name LIMIT ?5",
		"SELECT name,meta FROM filemeta WHERE dirhash=?1 AND directory=?2 AND name>=?3 "
		"ORDER BY name LIMIT ?5",
		"SELECT name,meta FROM filemeta WHERE dirhash=?1 AND directory=?2 AND name>?3 "
		"ORDER BY name LIMIT ?5",
		"SELECT name,meta FROM filemeta WHERE dirhash=?1 AND directory=?2 AND name<?4 "
		"ORDER BY name LIMIT ?5",
		"SELECT name,meta FROM filemeta WHERE dirhash=?1 AND directory=?2 AND name>=?3 "
		"AND name<?4 ORDER BY name LIMIT ?5",
		"SELECT name,meta FROM filemeta WHERE dirhash=?1 AND directory=?2 AND name>?3 "
		"AND name<?4 ORDER BY name LIMIT ?5",
	};
	const char *sql = which < ST_LIST ? stmt_sql[which] : list_sql[which - ST_LIST];
	int rc;
	*err = WFS_OK;
	if (c->st[which])
		return c->st[which];
	rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &c->st[which], NULL);
	if (rc != SQLITE_OK) {
		*err = map_rc(c->db, rc, "prepare");
		c->st[which] = NULL;
		return NULL;
	}
	return c->st[which];
}

static wfs_err conn_get(struct sq_store *s, struct sq_conn **out)
{
	pthread_mutex_lock(&s->mu);
	*out = s->idle;
	if (*out)
		s->idle = (*out)->next;
	pthread_mutex_unlock(&s->mu);
	if (*out)
		return WFS_OK;
	return conn_open(s, out);
}

static void conn_put(struct sq_store *s, struct sq_conn *c)
{
	pthread_mutex_lock(&s->mu);
	c->next = s->idle;
	s->idle = c;
	pthread_mutex_unlock(&s->mu);
}

/*
 * An operation's context: the connection to use (the transaction's, or one
 * from the pool) and whether it holds the write mutex for this call only.
 */
struct op {
	struct sq_store *s;
	struct sq_conn *c;
	bool pooled, locked;
};

static wfs_err op_begin(struct filer_store *fs, struct filer_tx *tx, bool write, struct op *op)
{
	op->s = (struct sq_store *)fs;
	op->pooled = op->locked = false;
	if (tx) {
		op->c = ((struct sq_tx *)tx)->c;
		return WFS_OK;
	}
	if (write) {
		pthread_mutex_lock(&op->s->write_mu);
		op->locked = true;
	}
	op->pooled = true;
	wfs_err err = conn_get(op->s, &op->c);
	if (err) {
		op->pooled = false;
		if (op->locked)
			pthread_mutex_unlock(&op->s->write_mu);
		op->locked = false;
	}
	return err;
}

static void op_end(struct op *op)
{
	if (op->pooled)
		conn_put(op->s, op->c);
	if (op->locked)
		pthread_mutex_unlock(&op->s->write_mu);
}

static void bind_key(sqlite3_stmt *st, const char *dir, const char *name)
{
	sqlite3_bind_int64(st, 1, (sqlite3_int64)filer_store_dir_hash(dir));
	if (name)
		sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, name ? 3 : 2, dir, -1, SQLITE_STATIC);
}

/* Steps a write statement to completion; *changes is the rows it changed. */
static wfs_err step_done(struct op *op, sqlite3_stmt *st, const char *what, int *changes)
{
	int rc = sqlite3_step(st);
	wfs_err err = rc == SQLITE_DONE ? WFS_OK : map_rc(op->c->db, rc, what);
	if (rc == SQLITE_ROW)
		err = WFS_EINTERNAL;
	if (changes)
		*changes = sqlite3_changes(op->c->db);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return err;
}

static wfs_err sq_put(struct filer_store *fs, struct filer_tx *tx, int which, const char *dir,
		      const char *name, const void *blob, size_t len)
{
	struct op op;
	sqlite3_stmt *st;
	int changes = 0;
	wfs_err err = op_begin(fs, tx, true, &op);
	if (err)
		return err;
	st = stmt(op.c, which, &err);
	if (st) {
		bind_key(st, dir, name);
		sqlite3_bind_blob(st, 4, blob, (int)len, SQLITE_STATIC);
		err = step_done(&op, st, which == ST_INSERT ? "insert" : "update", &changes);
		if (!err && changes == 0)
			err = which == ST_INSERT ? WFS_EEXIST : WFS_ENOENT;
	}
	op_end(&op);
	return err;
}

static wfs_err sq_insert(struct filer_store *fs, struct filer_tx *tx, const char *dir,
			 const char *name, const void *blob, size_t len)
{
	return sq_put(fs, tx, ST_INSERT, dir, name, blob, len);
}

static wfs_err sq_update(struct filer_store *fs, struct filer_tx *tx, const char *dir,
			 const char *name, const void *blob, size_t len)
{
	return sq_put(fs, tx, ST_UPDATE, dir, name, blob, len);
}

static wfs_err sq_find(struct filer_store *fs, struct filer_tx *tx, const char *dir,
		       const char *name, struct filer_entry **out)
{
	struct op op;
	sqlite3_stmt *st;
	int rc;
	wfs_err err = op_begin(fs, tx, false, &op);
	if (err)
		return err;
	st = stmt(op.c, ST_FIND, &err);
	if (st) {
		bind_key(st, dir, name);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			err = filer_entry_decode(sqlite3_column_blob(st, 0),
						 (size_t)sqlite3_column_bytes(st, 0), dir, name,
						 out);
		else if (rc == SQLITE_DONE)
			err = WFS_ENOENT;
		else
			err = map_rc(op.c->db, rc, "find");
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
	op_end(&op);
	return err;
}

static wfs_err sq_del(struct filer_store *fs, struct filer_tx *tx, const char *dir,
		      const char *name)
{
	struct op op;
	sqlite3_stmt *st;
	int changes = 0;
	wfs_err err = op_begin(fs, tx, true, &op);
	if (err)
		return err;
	st = stmt(op.c, ST_DELETE, &err);
	if (st) {
		bind_key(st, dir, name);
		err = step_done(&op, st, "delete", &changes);
		if (!err && changes == 0)
			err = WFS_ENOENT;
	}
	op_end(&op);
	return err;
}

static wfs_err sq_delete_children(struct filer_store *fs, struct filer_tx *tx, const char *dir,
				  uint64_t *deleted)
{
	struct op op;
	sqlite3_stmt *st;
	int changes = 0;
	wfs_err err = op_begin(fs, tx, true, &op);
	if (err)
		return err;
	st = stmt(op.c, ST_DELETE_CHILDREN, &err);
	if (st) {
		bind_key(st, dir, NULL);
		err = step_done(&op, st, "delete children", &changes);
		*deleted = err ? 0 : (uint64_t)changes;
	}
	op_end(&op);
	return err;
}

static wfs_err sq_list(struct filer_store *fs, struct filer_tx *tx, const char *dir, const char *lo,
		       bool lo_incl, const char *hi, const char *prefix, size_t limit,
		       filer_list_fn fn, void *ctx, size_t *count)
{
	struct op op;
	sqlite3_stmt *st;
	int variant = (lo ? (lo_incl ? 1 : 2) : 0) + (hi ? 3 : 0), rc;
	size_t plen = prefix ? strlen(prefix) : 0;
	wfs_err err = op_begin(fs, tx, false, &op);
	if (err)
		return err;
	st = stmt(op.c, ST_LIST + variant, &err);
	if (!st)
		goto out;
	bind_key(st, dir, NULL);
	if (lo)
		sqlite3_bind_text(st, 3, lo, -1, SQLITE_STATIC);
	if (hi)
		sqlite3_bind_text(st, 4, hi, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)limit);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		struct filer_entry *e;
		if (!name) {
			err = WFS_ECORRUPT;
			break;
		}
		/* names with the prefix are contiguous: the first one without ends the page */
		if (plen && strncmp(name, prefix, plen))
			break;
		err = filer_entry_decode(sqlite3_column_blob(st, 1),
					 (size_t)sqlite3_column_bytes(st, 1), dir, name, &e);
		if (err)
			break;
		(*count)++;
		if (!fn(ctx, e))
			break;
	}
	if (!err && rc != SQLITE_ROW && rc != SQLITE_DONE)
		err = map_rc(op.c->db, rc, "list");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
out:
	op_end(&op);
	return err;
}

static wfs_err sq_kv_put(struct filer_store *fs, struct filer_tx *tx, const void *key, size_t klen,
			 const void *val, size_t vlen)
{
	struct op op;
	sqlite3_stmt *st;
	wfs_err err = op_begin(fs, tx, true, &op);
	if (err)
		return err;
	st = stmt(op.c, ST_KV_PUT, &err);
	if (st) {
		sqlite3_bind_blob(st, 1, key, (int)klen, SQLITE_STATIC);
		/* a zero-length blob must not bind as NULL (the column is NOT NULL) */
		sqlite3_bind_blob(st, 2, vlen ? val : "", (int)vlen, SQLITE_STATIC);
		err = step_done(&op, st, "kv put", NULL);
	}
	op_end(&op);
	return err;
}

static wfs_err sq_kv_get(struct filer_store *fs, struct filer_tx *tx, const void *key, size_t klen,
			 void **val, size_t *vlen)
{
	struct op op;
	sqlite3_stmt *st;
	int rc;
	wfs_err err = op_begin(fs, tx, false, &op);
	if (err)
		return err;
	st = stmt(op.c, ST_KV_GET, &err);
	if (st) {
		sqlite3_bind_blob(st, 1, key, (int)klen, SQLITE_STATIC);
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			size_t n = (size_t)sqlite3_column_bytes(st, 0);
			if (n) {
				*val = xmalloc(n);
				memcpy(*val, sqlite3_column_blob(st, 0), n);
			}
			*vlen = n;
		} else if (rc == SQLITE_DONE) {
			err = WFS_ENOENT;
		} else {
			err = map_rc(op.c->db, rc, "kv get");
		}
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
	op_end(&op);
	return err;
}

static wfs_err sq_kv_delete(struct filer_store *fs, struct filer_tx *tx, const void *key,
			    size_t klen)
{
	struct op op;
	sqlite3_stmt *st;
	int changes = 0;
	wfs_err err = op_begin(fs, tx, true, &op);
	if (err)
		return err;
	st = stmt(op.c, ST_KV_DELETE, &err);
	if (st) {
		sqlite3_bind_blob(st, 1, key, (int)klen, SQLITE_STATIC);
		err = step_done(&op, st, "kv delete", &changes);
		if (!err && changes == 0)
			err = WFS_ENOENT;
	}
	op_end(&op);
	return err;
}

static wfs_err sq_begin(struct filer_store *fs, struct filer_tx **out)
{
	struct sq_store *s = (struct sq_store *)fs;
	struct sq_tx *tx = xcalloc(1, sizeof(*tx));
	wfs_err err;
	int rc;

	pthread_mutex_lock(&s->write_mu);
	err = conn_get(s, &tx->c);
	if (err)
		goto fail;
	rc = sqlite3_exec(tx->c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	err = map_rc(tx->c->db, rc, "begin");
	if (err) {
		conn_put(s, tx->c);
		goto fail;
	}
	tx->base.store = fs;
	*out = &tx->base;
	return WFS_OK;
fail:
	pthread_mutex_unlock(&s->write_mu);
	free(tx);
	return err;
}

/* The counter becomes max(counter, floor) + n; *first the old max (store_impl.h). */
static wfs_err ino_reserve(struct op *op, uint64_t floor, uint64_t n, uint64_t *first)
{
	wfs_err err;
	sqlite3_stmt *st = stmt(op->c, ST_INO_RESERVE, &err);
	int rc;
	if (!st)
		return err;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)floor);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)n);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*first = (uint64_t)sqlite3_column_int64(st, 0);
		rc = sqlite3_step(st);
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_CORRUPT; /* the counter row is missing */
	}
	err = rc == SQLITE_DONE ? WFS_OK : map_rc(op->c->db, rc, "inode reserve");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return err;
}

static void tx_end(struct sq_tx *tx)
{
	struct sq_store *s = (struct sq_store *)tx->base.store;
	conn_put(s, tx->c);
	pthread_mutex_unlock(&s->write_mu);
	free(tx);
}

/*
 * After tx rolled back, still holding the writer's mutex: puts back the inode
 * reservation it undid (see DESIGN), so the numbers of its block other
 * threads took stay reserved.
 */
static void ino_restore(struct sq_tx *tx)
{
	struct op op = {(struct sq_store *)tx->base.store, tx->c, false, false};
	uint64_t first;
	wfs_err err;
	if (!tx->base.inode_floor)
		return;
	err = ino_reserve(&op, tx->base.inode_floor, 0, &first);
	if (err)
		log_error("could not restore the inode counter to %llu: %s",
			  (unsigned long long)tx->base.inode_floor, wfs_strerror(err));
}

/*
 * Syncs the WAL, as synchronous=FULL would have at the last commit (the pragma
 * cannot change inside a transaction): SQLite's own handle of it, so every
 * frame written so far is on disk. The write mutex is held: no writer can start
 * the WAL over meanwhile.
 */
static wfs_err wal_sync(sqlite3 *db)
{
	sqlite3_file *wal = NULL;
	int rc = sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal);
	if (rc != SQLITE_OK || !wal || !wal->pMethods)
		return WFS_OK; /* no WAL: a rollback journal's commit syncs the database */
	rc = wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
	if (rc != SQLITE_OK) {
		log_error("sqlite: syncing the WAL failed: %s", sqlite3_errstr(rc));
		return WFS_EIO;
	}
	return WFS_OK;
}

static wfs_err sq_commit(struct filer_tx *ftx)
{
	struct sq_tx *tx = (struct sq_tx *)ftx;
	int rc = sqlite3_exec(tx->c->db, "COMMIT", NULL, NULL, NULL);
	wfs_err err = map_rc(tx->c->db, rc, "commit");

	if (!err && ftx->durable)
		err = wal_sync(tx->c->db);
	if (err == WFS_EEXIST) /* a deferred constraint: report it as a failed commit */
		err = WFS_EIO;
	if (!sqlite3_get_autocommit(tx->c->db))
		sqlite3_exec(tx->c->db, "ROLLBACK", NULL, NULL, NULL);
	if (err)
		ino_restore(tx);
	tx_end(tx);
	return err;
}

static void sq_rollback(struct filer_tx *ftx)
{
	struct sq_tx *tx = (struct sq_tx *)ftx;
	if (!sqlite3_get_autocommit(tx->c->db))
		sqlite3_exec(tx->c->db, "ROLLBACK", NULL, NULL, NULL);
	ino_restore(tx);
	tx_end(tx);
}

/* The checkpointer: PASSIVE checkpoints on its own connection (see DESIGN). */
static void *ckpt_main(void *arg)
{
	struct sq_store *s = arg;
	struct sq_conn *c = NULL;

	pthread_mutex_lock(&s->ckpt_mu);
	while (!s->ckpt_stop) {
		int pages = atomic_load(&s->wal_pages);
		if (!ckpt_due(s, pages)) {
			struct timespec until =
				time_deadline(CLOCK_MONOTONIC, CHECKPOINT_IDLE_MS * 1000000ull);
			pthread_cond_timedwait(&s->ckpt_wake, &s->ckpt_mu, &until);
			if (s->ckpt_stop || !atomic_load(&s->wal_pages))
				continue;
		}
		pthread_mutex_unlock(&s->ckpt_mu);
		pages = atomic_exchange(&s->wal_pages, 0); /* a commit meanwhile sets it again */
		atomic_store(&s->ckpt_at, pages);
		if (c || conn_open(s, &c) == WFS_OK) {
			/* with writers going on, a checkpoint never quite catches up, and the
			   WAL starts over only once all of it is in the database: now and
			   then, hold them off for one */
			bool catch_up = pages >= WAL_CATCH_UP_PAGES;
			int rc;
			if (catch_up)
				pthread_mutex_lock(&s->write_mu);
			rc = sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL,
						       NULL);
			if (catch_up)
				pthread_mutex_unlock(&s->write_mu);
			if (rc != SQLITE_OK && rc != SQLITE_BUSY)
				log_warn("sqlite checkpoint of \"%s\": %s", s->path,
					 sqlite3_errmsg(c->db));
		}
		pthread_mutex_lock(&s->ckpt_mu);
	}
	pthread_mutex_unlock(&s->ckpt_mu);
	if (c)
		conn_free(c);
	return NULL;
}

static void sq_close(struct filer_store *fs)
{
	struct sq_store *s = (struct sq_store *)fs;
	if (s->ckpt_started) {
		pthread_mutex_lock(&s->ckpt_mu);
		s->ckpt_stop = true;
		pthread_cond_signal(&s->ckpt_wake);
		pthread_mutex_unlock(&s->ckpt_mu);
		pthread_join(s->ckpt_thread, NULL);
	}
	while (s->idle) {
		struct sq_conn *c = s->idle;
		s->idle = c->next;
		conn_free(c);
	}
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->write_mu);
	pthread_mutex_destroy(&s->ckpt_mu);
	pthread_cond_destroy(&s->ckpt_wake);
	free(s->path);
	free(s);
}

/* Whether table has a column called col. */
static bool has_column(sqlite3 *db, const char *table, const char *col)
{
	char *sql = xasprintf("SELECT 1 FROM pragma_table_info('%s') WHERE name='%s'", table, col);
	sqlite3_stmt *st = NULL;
	bool found = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
		     sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	free(sql);
	return found;
}

static wfs_err sq_open(const char *path, struct filer_store **out)
{
	struct sq_store *s;
	struct sq_conn *c;
	pthread_condattr_t ca;
	char *errmsg = NULL;
	wfs_err err;
	int rc;

	if (!path[0] || !strcmp(path, ":memory:") || !sqlite3_threadsafe())
		return WFS_EINVAL;
	s = xcalloc(1, sizeof(*s));
	s->base.ops = &filer_store_sqlite_ops;
	s->path = xstrdup(path);
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->write_mu, NULL);
	pthread_mutex_init(&s->ckpt_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->ckpt_wake, &ca);
	pthread_condattr_destroy(&ca);
	err = conn_open(s, &c);
	if (err)
		goto fail;
	rc = sqlite3_exec(c->db, "PRAGMA journal_mode=WAL;", NULL, NULL, &errmsg);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(c->db, filer_store_sqlite_schema, NULL, NULL, &errmsg);
	if (rc == SQLITE_OK && !has_column(c->db, "filer_events", "sig"))
		/* a database made before events were signed */
		rc = sqlite3_exec(c->db, "ALTER TABLE filer_events ADD COLUMN sig INTEGER", NULL,
				  NULL, &errmsg);
	if (rc != SQLITE_OK) {
		log_error("could not initialise sqlite database \"%s\": %s", path,
			  errmsg ? errmsg : sqlite3_errstr(rc));
		sqlite3_free(errmsg);
		conn_free(c);
		err = rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT ? WFS_ECORRUPT : WFS_EIO;
		goto fail;
	}
	conn_put(s, c);
	if (thread_start(&s->ckpt_thread, NULL, ckpt_main, s, "wfs-sqlite-ckpt"))
		fatal("could not start the sqlite checkpointer");
	s->ckpt_started = true;
	*out = &s->base;
	return WFS_OK;
fail:
	sq_close(&s->base);
	return err;
}

/* ---- event log and garbage queue ---- */

static void stmt_end(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

static void bind_opt_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

static void bind_opt_blob(sqlite3_stmt *st, int i, const void *p, size_t len)
{
	if (p)
		sqlite3_bind_blob(st, i, len ? p : "", (int)len, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

static wfs_err sq_append_event(struct filer_store *fs, struct filer_tx *tx, int64_t now_ns,
			       const char *dir, const char *old_path, const void *old_blob,
			       size_t old_len, const char *new_path, const void *new_blob,
			       size_t new_len, int32_t sig, int64_t *ts)
{
	struct op op;
	sqlite3_stmt *st;
	int rc;
	wfs_err err = op_begin(fs, tx, true, &op);
	if (err)
		return err;
	/* the writer holds the database lock (BEGIN IMMEDIATE), so the clock is ours */
	st = stmt(op.c, ST_CLOCK_BUMP, &err);
	if (!st)
		goto out;
	sqlite3_bind_int64(st, 1, now_ns);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*ts = sqlite3_column_int64(st, 0);
		rc = sqlite3_step(st);
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_CORRUPT; /* the clock row is missing */
	}
	err = rc == SQLITE_DONE ? WFS_OK : map_rc(op.c->db, rc, "event clock");
	stmt_end(st);
	if (err)
		goto out;
	st = stmt(op.c, ST_EV_INSERT, &err);
	if (!st)
		goto out;
	sqlite3_bind_int64(st, 1, *ts);
	sqlite3_bind_text(st, 2, dir, -1, SQLITE_STATIC);
	bind_opt_text(st, 3, old_path);
	bind_opt_blob(st, 4, old_blob, old_len);
	bind_opt_text(st, 5, new_path);
	bind_opt_blob(st, 6, new_blob, new_len);
	sqlite3_bind_int(st, 7, sig);
	err = step_done(&op, st, "append event", NULL);
out:
	op_end(&op);
	return err;
}

/* Runs a one-integer query (st already bound); WFS_ENOENT if it yields no row. */
static wfs_err query_int(struct op *op, sqlite3_stmt *st, const char *what, int64_t *v)
{
	int rc = sqlite3_step(st);
	wfs_err err = WFS_OK;
	if (rc == SQLITE_ROW)
		*v = sqlite3_column_int64(st, 0);
	else if (rc == SQLITE_DONE)
		err = WFS_ENOENT;
	else
		err = map_rc(op->c->db, rc, what);
	stmt_end(st);
	return err;
}

static wfs_err sq_reserve_inodes(struct filer_store *fs, struct filer_tx *tx, uint64_t floor,
				 uint64_t n, uint64_t *first)
{
	struct op op;
	wfs_err err = op_begin(fs, tx, true, &op);
	if (err)
		return err;
	err = ino_reserve(&op, floor, n, first);
	op_end(&op);
	return err;
}

static wfs_err sq_event_clock(struct filer_store *fs, int64_t *ts)
{
	struct op op;
	sqlite3_stmt *st;
	wfs_err err = op_begin(fs, NULL, false, &op);
	if (err)
		return err;
	st = stmt(op.c, ST_CLOCK_GET, &err);
	if (st) {
		err = query_int(&op, st, "event clock", ts);
		if (err == WFS_ENOENT)
			err = WFS_ECORRUPT;
	}
	op_end(&op);
	return err;
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? NULL
							 : (const char *)sqlite3_column_text(st, i);
}

static wfs_err sq_read_events(struct filer_store *fs, int64_t since, const char *under,
			      const char *lo, const char *hi, int32_t skip_sig, size_t limit,
			      filer_event_row_fn fn, void *ctx)
{
	struct op op;
	sqlite3_stmt *st;
	int rc;
	wfs_err err = op_begin(fs, NULL, false, &op);
	if (err)
		return err;
	st = stmt(op.c, under ? ST_EV_READ_UNDER : ST_EV_READ, &err);
	if (!st)
		goto out;
	sqlite3_bind_int64(st, 1, since);
	if (under) {
		sqlite3_bind_text(st, 2, under, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, lo, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, hi, -1, SQLITE_STATIC);
	}
	sqlite3_bind_int64(st, 5, (sqlite3_int64)limit);
	sqlite3_bind_int(st, 6, skip_sig);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct filer_event_row r = {
			.ts = sqlite3_column_int64(st, 0),
			.dir = col_text(st, 1),
			.old_path = col_text(st, 2),
			.new_path = col_text(st, 4),
		};
		r.old_blob = sqlite3_column_blob(st, 3);
		r.old_len = (size_t)sqlite3_column_bytes(st, 3);
		r.new_blob = sqlite3_column_blob(st, 5);
		r.new_len = (size_t)sqlite3_column_bytes(st, 5);
		if (!r.dir) {
			err = WFS_ECORRUPT;
			break;
		}
		if (!fn(ctx, &r))
			break;
	}
	if (!err && rc != SQLITE_ROW && rc != SQLITE_DONE)
		err = map_rc(op.c->db, rc, "read events");
	stmt_end(st);
out:
	op_end(&op);
	return err;
}

static wfs_err sq_trim_events(struct filer_store *fs, int64_t before, size_t max, uint64_t *deleted)
{
	struct op op;
	sqlite3_stmt *st;
	int changes = 0;
	wfs_err err = op_begin(fs, NULL, true, &op);
	if (err)
		return err;
	st = stmt(op.c, ST_EV_TRIM, &err);
	if (st) {
		sqlite3_bind_int64(st, 1, before);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)max);
		err = step_done(&op, st, "trim events", &changes);
		*deleted = err ? 0 : (uint64_t)changes;
	}
	op_end(&op);
	return err;
}

/* Runs statement which once per fid: ?1 the fid, ?2 the value v. */
static wfs_err sq_per_fid(struct filer_store *fs, struct filer_tx *tx, int which,
			  const char *const *fids, size_t n, int64_t v, const char *what)
{
	struct op op;
	sqlite3_stmt *st;
	wfs_err err = op_begin(fs, tx, true, &op);
	if (err)
		return err;
	st = stmt(op.c, which, &err);
	for (size_t i = 0; st && i < n && !err; i++) {
		sqlite3_bind_text(st, 1, fids[i], -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, v);
		err = step_done(&op, st, what, NULL);
	}
	op_end(&op);
	return err;
}

static wfs_err sq_gc_enqueue(struct filer_store *fs, struct filer_tx *tx, const char *const *fids,
			     size_t n, int64_t due)
{
	return sq_per_fid(fs, tx, ST_GC_ENQUEUE, fids, n, due, "gc enqueue");
}

static wfs_err sq_gc_done(struct filer_store *fs, struct filer_tx *tx, const char *const *fids,
			  size_t n)
{
	return sq_per_fid(fs, tx, ST_GC_DONE, fids, n, 0, "gc done");
}

static wfs_err sq_gc_defer(struct filer_store *fs, struct filer_tx *tx, const char *const *fids,
			   size_t n, int64_t due)
{
	return sq_per_fid(fs, tx, ST_GC_DEFER, fids, n, due, "gc defer");
}

static wfs_err sq_gc_take(struct filer_store *fs, int64_t now, int64_t until, size_t max,
			  struct filer_gc_item **items, size_t *n)
{
	struct op op;
	sqlite3_stmt *st;
	size_t cap = 0;
	int rc;
	/* one statement under the write lock: atomic against other takers */
	wfs_err err = op_begin(fs, NULL, true, &op);
	if (err)
		return err;
	st = stmt(op.c, ST_GC_TAKE, &err);
	if (!st)
		goto out;
	sqlite3_bind_int64(st, 1, until);
	sqlite3_bind_int64(st, 2, now);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)max);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *fid = col_text(st, 0);
		if (!fid)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*items = xrealloc(*items, cap * sizeof(**items));
		}
		(*items)[*n].fid = xstrdup(fid);
		(*items)[*n].attempts = (uint32_t)sqlite3_column_int64(st, 1);
		(*n)++;
	}
	if (rc != SQLITE_DONE)
		err = map_rc(op.c->db, rc, "gc take");
	stmt_end(st);
	if (err) {
		/* the statement failed as a whole: nothing was leased */
		filer_gc_items_free(*items, *n);
		*items = NULL;
		*n = 0;
	}
out:
	op_end(&op);
	return err;
}

static wfs_err sq_gc_count(struct filer_store *fs, uint64_t *n)
{
	struct op op;
	sqlite3_stmt *st;
	int64_t v = 0;
	wfs_err err = op_begin(fs, NULL, false, &op);
	if (err)
		return err;
	st = stmt(op.c, ST_GC_COUNT, &err);
	if (st)
		err = query_int(&op, st, "gc count", &v);
	*n = (uint64_t)v;
	op_end(&op);
	return err;
}

const struct filer_store_ops filer_store_sqlite_ops = {
	.name = "sqlite",
	.local_reads = true, /* WAL: readers never wait for the writer */
	.open = sq_open,
	.close = sq_close,
	.begin = sq_begin,
	.commit = sq_commit,
	.rollback = sq_rollback,
	.insert = sq_insert,
	.update = sq_update,
	.find = sq_find,
	.del = sq_del,
	.delete_children = sq_delete_children,
	.list = sq_list,
	.kv_put = sq_kv_put,
	.kv_get = sq_kv_get,
	.kv_delete = sq_kv_delete,
	.append_event = sq_append_event,
	.event_clock = sq_event_clock,
	.read_events = sq_read_events,
	.trim_events = sq_trim_events,
	.gc_enqueue = sq_gc_enqueue,
	.gc_take = sq_gc_take,
	.gc_done = sq_gc_done,
	.gc_defer = sq_gc_defer,
	.gc_count = sq_gc_count,
	.reserve_inodes = sq_reserve_inodes,
	.reserve_in_tx = true,
};
