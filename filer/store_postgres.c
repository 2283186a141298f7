/*
 * DESIGN: the PostgreSQL store (libpq). A small pool of connections (up to
 * PG_POOL_MAX, opened on demand); each operation borrows one, waiting if all
 * are busy. Statements are prepared once per connection and run with binary
 * parameters and results, so names and blobs never pass through quoting.
 *
 * Reconnection: before a borrowed connection is used it is polled
 * (PQconsumeInput), which notices a server that went away while the
 * connection sat idle; a broken connection is reset (PQreset) in place. An
 * operation outside a transaction whose connection breaks mid-call is retried
 * once on a fresh connection, so after a server restart the next call
 * succeeds. (If the server died after applying the statement but before
 * answering, the retry may report WFS_EEXIST for an insert or WFS_ENOENT for a
 * delete that did happen; it never applies a change twice.) When the server
 * cannot be reached the call fails with WFS_EUNAVAIL.
 *
 * Schema (filer/store_postgres_schema.sql): like the SQLite store, with the
 * name and directory columns in the "C" collation so ordering is bytewise and
 * the primary key index serves the listing range scans. Inside a transaction, find takes the row lock
 * (SELECT ... FOR UPDATE) so a compare-and-swap is safe across filers that
 * share the database.
 *
 * Event log: appending bumps the one-row filer_clock (ts = greatest(now,
 * ts + 1)) in the same statement that inserts the event; the row lock it
 * takes is held to the end of the transaction, so appends from every filer
 * serialise there and commit in ts order (a reader never sees ts N+1 before
 * N). store.c hands a transaction's events over at commit
 * (pg_commit_events), which pipelines the appends with the COMMIT so the
 * lock is held only for the server's work, not for client round trips.
 * Claims (gc_claim: ids taken off the garbage queue by the transaction that
 * references them) are buffered the same way and their DELETE leads that
 * pipeline, or the one of the transaction's next garbage-queue statement so
 * the queue sees the changes in the order they were made.
 * Garbage queue: a take is one UPDATE over a SELECT ... FOR UPDATE SKIP
 * LOCKED, so concurrent takers lease disjoint ids; id lists travel as one
 * binary text[] parameter.
 * Inode blocks: one UPDATE ... RETURNING of the filer_inode row, committed on
 * its own (autocommit on a connection kept for it), so a block is reserved
 * for good before any number of it is used, whatever the caller's
 * transaction does, and the row lock is held only for that statement.
 */
#include "config.h"
#include <libpq-fe.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "filer/store_impl.h"
#include "filer/store_schema.h"
#include "log.h"
#include "util.h"

#define PG_POOL_MAX 16
/* Bytes of deferred claims a transaction buffers before sending them (pg_gc_claim). */
#define PG_CLAIMS_MAX (16u << 20)

/* Type OIDs of the parameters we send. */
#define OID_BYTEA 17
#define OID_INT8  20
#define OID_TEXT  25

enum {
	PS_INSERT,
	PS_UPDATE,
	PS_FIND,
	PS_FIND_LOCK,
	PS_DELETE,
	PS_DELETE_CHILDREN,
	PS_KV_PUT,
	PS_KV_GET,
	PS_KV_GET_LOCK,
	PS_KV_DELETE,
	PS_EV_APPEND,
	PS_CLOCK_GET,
	PS_EV_READ,
	PS_EV_READ_UNDER,
	PS_EV_TRIM,
	PS_GC_ENQUEUE,
	PS_GC_TAKE,
	PS_GC_DONE,
	PS_GC_DEFER,
	PS_GC_COUNT,
	PS_INO_RESERVE,
	PS_LIST, /* 6 variants: lo none/incl/excl, then the same with an upper bound */
	PS_COUNT = PS_LIST + 6
};

#define KEYP "dirhash=$1::int8 AND name=$2::text COLLATE \"C\" AND directory=$3::text COLLATE \"C\""
/* $2: the signature to leave out (0: none; unsigned rows hold NULL) */
#define EVSEL                                                                        \
	"SELECT ts,directory,old_path,old_meta,new_path,new_meta FROM filer_events " \
	"WHERE ts>$1::int8 AND sig IS DISTINCT FROM $2::int8 "
#define LISTP                                                        \
	"SELECT name,meta FROM filemeta WHERE dirhash=$1::int8 AND " \
	"directory=$2::text COLLATE \"C\" "
static const char *const ps_sql[PS_COUNT] = {
	[PS_INSERT] = "INSERT INTO filemeta(dirhash,name,directory,meta) VALUES($1::int8,$2::text,"
		      "$3::text,$4::bytea) ON CONFLICT DO NOTHING",
	[PS_UPDATE] = "UPDATE filemeta SET meta=$4::bytea WHERE " KEYP,
	[PS_FIND] = "SELECT meta FROM filemeta WHERE " KEYP,
	[PS_FIND_LOCK] = "SELECT meta FROM filemeta WHERE " KEYP " FOR UPDATE",
	[PS_DELETE] = "DELETE FROM filemeta WHERE " KEYP,
	[PS_DELETE_CHILDREN] = "DELETE FROM filemeta WHERE dirhash=$1::int8 AND "
			       "directory=$2::text COLLATE \"C\"",
	[PS_KV_PUT] = "INSERT INTO filer_kv(k,v) VALUES($1::bytea,$2::bytea) ON CONFLICT (k) DO "
		      "UPDATE SET v=EXCLUDED.v",
	[PS_KV_GET] = "SELECT v FROM filer_kv WHERE k=$1::bytea",
	[PS_KV_GET_LOCK] = "SELECT v FROM filer_kv WHERE k=$1::bytea FOR UPDATE",
	[PS_KV_DELETE] = "DELETE FROM filer_kv WHERE k=$1::bytea",
	/*
	 * The clock row's lock, taken by the UPDATE, is held until the
	 * transaction ends: appends serialise on it, so ts order is commit order.
	 */
	[PS_EV_APPEND] = "WITH c AS (UPDATE filer_clock SET ts=greatest($1::int8,ts+1) WHERE id=1 "
			 "RETURNING ts) INSERT INTO filer_events(ts,directory,old_path,old_meta,"
			 "new_path,new_meta,sig) SELECT c.ts,$2::text,$3::text,$4::bytea,$5::text,"
			 "$6::bytea,nullif($7::int8,0) FROM c RETURNING ts",
	[PS_CLOCK_GET] = "SELECT ts FROM filer_clock WHERE id=1",
	[PS_EV_READ] = EVSEL "ORDER BY ts LIMIT $3::int8",
	[PS_EV_READ_UNDER] =
		EVSEL "AND (old_path=$3::text COLLATE \"C\" OR (old_path>=$4::text "
		      "COLLATE \"C\" AND old_path<$5::text COLLATE \"C\") OR "
		      "new_path=$3::text COLLATE \"C\" OR (new_path>=$4::text COLLATE \"C\" "
		      "AND new_path<$5::text COLLATE \"C\")) ORDER BY ts LIMIT $6::int8",
	[PS_EV_TRIM] = "DELETE FROM filer_events WHERE ts IN (SELECT ts FROM filer_events WHERE "
		       "ts<$1::int8 ORDER BY ts LIMIT $2::int8)",
	[PS_GC_ENQUEUE] = "INSERT INTO filer_gc(fid,due,attempts) SELECT unnest($1::text[]),"
			  "$2::int8,0 ON CONFLICT DO NOTHING",
	/* SKIP LOCKED: a concurrent taker passes over rows another one is leasing */
	[PS_GC_TAKE] = "UPDATE filer_gc g SET due=$1::int8, attempts=g.attempts+1 FROM (SELECT fid "
		       "FROM filer_gc WHERE due<=$2::int8 ORDER BY due LIMIT $3::int8 FOR UPDATE "
		       "SKIP LOCKED) t WHERE g.fid=t.fid RETURNING g.fid, g.attempts",
	[PS_GC_DONE] = "DELETE FROM filer_gc WHERE fid=ANY($1::text[])",
	[PS_GC_DEFER] = "UPDATE filer_gc SET due=$2::int8 WHERE fid=ANY($1::text[])",
	[PS_GC_COUNT] = "SELECT count(*) FROM filer_gc",
	[PS_INO_RESERVE] = "UPDATE filer_inode SET next=greatest(next,$1::int8)+$2::int8 WHERE id=1 "
			   "RETURNING next-$2::int8",
	[PS_LIST + 0] = LISTP "ORDER BY name LIMIT $3::int8",
	[PS_LIST + 1] = LISTP "AND name>=$3::text COLLATE \"C\" ORDER BY name LIMIT $4::int8",
	[PS_LIST + 2] = LISTP "AND name>$3::text COLLATE \"C\" ORDER BY name LIMIT $4::int8",
	[PS_LIST + 3] = LISTP "AND name<$3::text COLLATE \"C\" ORDER BY name LIMIT $4::int8",
	[PS_LIST + 4] = LISTP "AND name>=$3::text COLLATE \"C\" AND name<$4::text COLLATE \"C\" "
			      "ORDER BY name LIMIT $5::int8",
	[PS_LIST + 5] = LISTP "AND name>$3::text COLLATE \"C\" AND name<$4::text COLLATE \"C\" "
			      "ORDER BY name LIMIT $5::int8",
};

struct pg_conn {
	PGconn *pg;
	uint32_t prepared; /* bit i: statement i is prepared on this connection */
	struct pg_conn *next;
};

struct pg_store {
	struct filer_store base;
	char *dsn;
	pthread_mutex_t mu;
	pthread_cond_t cv;    /* signalled when a connection returns to idle */
	struct pg_conn *idle; /* protected by mu */
	int total;            /* connections in existence; protected by mu */
	/* inode reservations run alone on their own connection (not the pool's: a
	   caller may hold the last pooled one in a transaction) */
	pthread_mutex_t ino_mu;
	struct pg_conn *ino_conn; /* protected by ino_mu; NULL until the first reservation */
};

struct pg_tx {
	struct filer_tx base;
	struct pg_conn *c;
	/* deferred claims (pg_gc_claim): a binary text[], its header filled when sent */
	buf claims;
	uint32_t nclaims;
};

static void quiet_notice(void *arg, const char *msg) { log_debug("postgres: %s", msg); }

static PGconn *pg_connect(const char *dsn)
{
	/* dsn last, so a connect_timeout inside it overrides ours */
	const char *keys[] = {"connect_timeout", "dbname", NULL};
	const char *vals[] = {"5", dsn, NULL};
	PGconn *pg = PQconnectdbParams(keys, vals, 1);
	if (pg)
		PQsetNoticeProcessor(pg, quiet_notice, NULL);
	return pg;
}

static bool conn_ok(struct pg_conn *c)
{
	if (PQstatus(c->pg) != CONNECTION_OK)
		return false;
	/* notices a server that closed the connection while it was idle */
	if (!PQconsumeInput(c->pg))
		return false;
	return PQstatus(c->pg) == CONNECTION_OK;
}

/* Makes c usable: resets it if it is broken. WFS_EUNAVAIL if the server cannot be reached. */
static wfs_err conn_ensure(struct pg_conn *c)
{
	if (conn_ok(c))
		return WFS_OK;
	c->prepared = 0;
	PQreset(c->pg);
	if (PQstatus(c->pg) != CONNECTION_OK) {
		log_warn("postgres unavailable: %s", PQerrorMessage(c->pg));
		return WFS_EUNAVAIL;
	}
	PQsetNoticeProcessor(c->pg, quiet_notice, NULL);
	return WFS_OK;
}

static wfs_err conn_get(struct pg_store *s, struct pg_conn **out)
{
	struct pg_conn *c = NULL;
	bool create = false;

	pthread_mutex_lock(&s->mu);
	while (!s->idle && s->total >= PG_POOL_MAX)
		pthread_cond_wait(&s->cv, &s->mu);
	if (s->idle) {
		c = s->idle;
		s->idle = c->next;
	} else {
		s->total++;
		create = true;
	}
	pthread_mutex_unlock(&s->mu);
	if (create) {
		c = xcalloc(1, sizeof(*c));
		c->pg = pg_connect(s->dsn);
		if (!c->pg)
			fatal("out of memory");
	}
	*out = c;
	return conn_ensure(c);
}

static void conn_put(struct pg_store *s, struct pg_conn *c)
{
	pthread_mutex_lock(&s->mu);
	c->next = s->idle;
	s->idle = c;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* Maps a failed result (or none) to a wfs_err. */
static wfs_err map_result(struct pg_conn *c, PGresult *res, const char *what)
{
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	if (PQstatus(c->pg) != CONNECTION_OK || !state || !strncmp(state, "08", 2) ||
	    !strncmp(state, "57P", 3)) {
		log_warn("postgres %s: %s", what, PQerrorMessage(c->pg));
		return WFS_EUNAVAIL;
	}
	if (!strcmp(state, "23505"))
		return WFS_EEXIST;
	if (!strncmp(state, "22", 2))
		return WFS_EINVAL; /* e.g. a name that is not valid in the database encoding */
	if (!strcmp(state, "40001") || !strcmp(state, "40P01"))
		return WFS_EUNAVAIL; /* serialization failure, deadlock: retry later */
	if (!strncmp(state, "53", 2))
		return WFS_ENOSPC;
	log_warn("postgres %s: %s (%s)", what, PQresultErrorMessage(res), state);
	return WFS_EIO;
}

/* Prepares statement ps on c (as "s<ps>") unless it is already. */
static wfs_err prepare(struct pg_conn *c, int ps)
{
	char name[8];
	PGresult *r;
	wfs_err err = WFS_OK;

	if (c->prepared & (1u << ps))
		return WFS_OK;
	snprintf(name, sizeof(name), "s%d", ps);
	r = PQprepare(c->pg, name, ps_sql[ps], 0, NULL);
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		err = map_result(c, r, "prepare");
	else
		c->prepared |= 1u << ps;
	PQclear(r);
	return err;
}

/*
 * Runs statement ps with n binary parameters on c. *res (caller clears) is the
 * result on WFS_OK.
 */
static wfs_err run(struct pg_conn *c, int ps, int n, const char *const *vals, const int *lens,
		   PGresult **res)
{
	static const int formats[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	char name[8];
	PGresult *r;
	wfs_err err;
	ExecStatusType st;

	*res = NULL;
	snprintf(name, sizeof(name), "s%d", ps);
	err = prepare(c, ps);
	if (err)
		return err;
	r = PQexecPrepared(c->pg, name, n, vals, lens, formats, 1);
	st = PQresultStatus(r);
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		*res = r;
		return WFS_OK;
	}
	err = map_result(c, r, "query");
	PQclear(r);
	return err;
}

/* Parameters of one call: values and lengths, with room for the key. */
struct params {
	const char *v[8];
	int l[8];
	int n;
	uint8_t hash[8], limit[8], i64[3][8];
};

static void p_add(struct params *p, const void *v, size_t len)
{
	p->v[p->n] = v;
	p->l[p->n] = (int)len;
	p->n++;
}

static void p_key(struct params *p, const char *dir, const char *name)
{
	put_be64(p->hash, filer_store_dir_hash(dir));
	p_add(p, p->hash, 8);
	if (name)
		p_add(p, name, strlen(name));
	p_add(p, dir, strlen(dir));
}

static wfs_err run_after_claims(struct pg_tx *tx, int ps, struct params *p, PGresult **res);

/*
 * Runs ps on the transaction's connection or on a pooled one (retrying once
 * on a fresh connection if it broke). *res is for the caller to clear.
 */
static wfs_err exec(struct filer_store *fs, struct filer_tx *tx, int ps, struct params *p,
		    PGresult **res)
{
	struct pg_store *s = (struct pg_store *)fs;
	struct pg_conn *c;
	wfs_err err;

	*res = NULL;
	if (tx) {
		struct pg_tx *t = (struct pg_tx *)tx;
		/* the claims go first, so a queue change after them sees them made */
		if (t->nclaims && (ps == PS_GC_ENQUEUE || ps == PS_GC_DONE || ps == PS_GC_DEFER))
			return run_after_claims(t, ps, p, res);
		return run(t->c, ps, p->n, p->v, p->l, res);
	}
	err = conn_get(s, &c);
	if (!err) {
		err = run(c, ps, p->n, p->v, p->l, res);
		if (err == WFS_EUNAVAIL && PQstatus(c->pg) != CONNECTION_OK) {
			err = conn_ensure(c);
			if (!err)
				err = run(c, ps, p->n, p->v, p->l, res);
		}
	}
	conn_put(s, c);
	return err;
}

static uint64_t affected(PGresult *res)
{
	uint64_t n = 0;
	parse_u64(PQcmdTuples(res), &n);
	return n;
}

static wfs_err pg_put(struct filer_store *fs, struct filer_tx *tx, int ps, const char *dir,
		      const char *name, const void *blob, size_t len)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err;
	p_key(&p, dir, name);
	p_add(&p, blob, len);
	err = exec(fs, tx, ps, &p, &res);
	if (!err && affected(res) == 0)
		err = ps == PS_INSERT ? WFS_EEXIST : WFS_ENOENT;
	PQclear(res);
	return err;
}

static wfs_err pg_insert(struct filer_store *fs, struct filer_tx *tx, const char *dir,
			 const char *name, const void *blob, size_t len)
{
	return pg_put(fs, tx, PS_INSERT, dir, name, blob, len);
}

static wfs_err pg_update(struct filer_store *fs, struct filer_tx *tx, const char *dir,
			 const char *name, const void *blob, size_t len)
{
	return pg_put(fs, tx, PS_UPDATE, dir, name, blob, len);
}

static wfs_err pg_find(struct filer_store *fs, struct filer_tx *tx, const char *dir,
		       const char *name, struct filer_entry **out)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err;
	p_key(&p, dir, name);
	err = exec(fs, tx, tx ? PS_FIND_LOCK : PS_FIND, &p, &res);
	if (err)
		return err;
	if (PQntuples(res) == 0)
		err = WFS_ENOENT;
	else
		err = filer_entry_decode((const uint8_t *)PQgetvalue(res, 0, 0),
					 (size_t)PQgetlength(res, 0, 0), dir, name, out);
	PQclear(res);
	return err;
}

static wfs_err pg_del(struct filer_store *fs, struct filer_tx *tx, const char *dir,
		      const char *name)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err;
	p_key(&p, dir, name);
	err = exec(fs, tx, PS_DELETE, &p, &res);
	if (!err && affected(res) == 0)
		err = WFS_ENOENT;
	PQclear(res);
	return err;
}

static wfs_err pg_delete_children(struct filer_store *fs, struct filer_tx *tx, const char *dir,
				  uint64_t *deleted)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err;
	p_key(&p, dir, NULL);
	err = exec(fs, tx, PS_DELETE_CHILDREN, &p, &res);
	*deleted = err ? 0 : affected(res);
	PQclear(res);
	return err;
}

static wfs_err pg_list(struct filer_store *fs, struct filer_tx *tx, const char *dir, const char *lo,
		       bool lo_incl, const char *hi, const char *prefix, size_t limit,
		       filer_list_fn fn, void *ctx, size_t *count)
{
	struct params p = {.n = 0};
	int variant = (lo ? (lo_incl ? 1 : 2) : 0) + (hi ? 3 : 0), rows;
	size_t plen = prefix ? strlen(prefix) : 0;
	PGresult *res;
	wfs_err err;

	p_key(&p, dir, NULL);
	if (lo)
		p_add(&p, lo, strlen(lo));
	if (hi)
		p_add(&p, hi, strlen(hi));
	put_be64(p.limit, limit);
	p_add(&p, p.limit, 8);
	err = exec(fs, tx, PS_LIST + variant, &p, &res);
	if (err)
		return err;
	rows = PQntuples(res);
	for (int i = 0; i < rows; i++) {
		char *name = xstrndup(PQgetvalue(res, i, 0), (size_t)PQgetlength(res, i, 0));
		struct filer_entry *e;
		bool more;
		if (plen && strncmp(name, prefix, plen)) {
			free(name);
			break;
		}
		err = filer_entry_decode((const uint8_t *)PQgetvalue(res, i, 1),
					 (size_t)PQgetlength(res, i, 1), dir, name, &e);
		free(name);
		if (err)
			break;
		(*count)++;
		more = fn(ctx, e);
		if (!more)
			break;
	}
	PQclear(res);
	return err;
}

static wfs_err pg_kv_put(struct filer_store *fs, struct filer_tx *tx, const void *key, size_t klen,
			 const void *val, size_t vlen)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err;
	p_add(&p, key, klen);
	p_add(&p, vlen ? val : "", vlen);
	err = exec(fs, tx, PS_KV_PUT, &p, &res);
	PQclear(res);
	return err;
}

static wfs_err pg_kv_get(struct filer_store *fs, struct filer_tx *tx, const void *key, size_t klen,
			 void **val, size_t *vlen)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err;
	p_add(&p, key, klen);
	/* Inside a transaction the read locks the row, as find does, so a
	 * read-modify-write of a kv record (hard links, TUS sessions) is atomic
	 * across filers sharing the database. */
	err = exec(fs, tx, tx ? PS_KV_GET_LOCK : PS_KV_GET, &p, &res);
	if (err)
		return err;
	if (PQntuples(res) == 0) {
		err = WFS_ENOENT;
	} else {
		size_t n = (size_t)PQgetlength(res, 0, 0);
		if (n) {
			*val = xmalloc(n);
			memcpy(*val, PQgetvalue(res, 0, 0), n);
		}
		*vlen = n;
	}
	PQclear(res);
	return err;
}

static wfs_err pg_kv_delete(struct filer_store *fs, struct filer_tx *tx, const void *key,
			    size_t klen)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err;
	p_add(&p, key, klen);
	err = exec(fs, tx, PS_KV_DELETE, &p, &res);
	if (!err && affected(res) == 0)
		err = WFS_ENOENT;
	PQclear(res);
	return err;
}

/* Runs a plain command (BEGIN, COMMIT, ROLLBACK) on c. */
static wfs_err simple(struct pg_conn *c, const char *sql, const char *expect_status)
{
	PGresult *r = PQexec(c->pg, sql);
	wfs_err err = WFS_OK;
	if (PQresultStatus(r) != PGRES_COMMAND_OK)
		err = map_result(c, r, sql);
	else if (expect_status && strcmp(PQcmdStatus(r), expect_status))
		err = WFS_EPRECOND; /* COMMIT of an aborted transaction answers ROLLBACK */
	PQclear(r);
	return err;
}

static wfs_err pg_begin(struct filer_store *fs, struct filer_tx **out)
{
	struct pg_store *s = (struct pg_store *)fs;
	struct pg_tx *tx = xcalloc(1, sizeof(*tx));
	wfs_err err = conn_get(s, &tx->c);
	if (!err) {
		err = simple(tx->c, "BEGIN", NULL);
		if (err == WFS_EUNAVAIL && conn_ensure(tx->c) == WFS_OK)
			err = simple(tx->c, "BEGIN", NULL);
	}
	if (err) {
		conn_put(s, tx->c);
		free(tx);
		return err;
	}
	tx->base.store = fs;
	*out = &tx->base;
	return WFS_OK;
}

/* Returns tx's connection to the pool and frees tx. */
static void tx_release(struct pg_tx *tx)
{
	conn_put((struct pg_store *)tx->base.store, tx->c);
	buf_free(&tx->claims);
	free(tx);
}

static wfs_err commit_piped(struct pg_tx *tx, int64_t now_ns, const struct filer_event_row *rows,
			    size_t n, int64_t *ts);

/* A durable tx commits with synchronous_commit on, whatever the server's default. */
static wfs_err pg_durable(struct pg_tx *tx)
{
	return tx->base.durable ? simple(tx->c, "SET LOCAL synchronous_commit TO on", "SET")
				: WFS_OK;
}

static wfs_err pg_commit(struct filer_tx *ftx)
{
	struct pg_tx *tx = (struct pg_tx *)ftx;
	wfs_err err;
	if (tx->nclaims)
		return commit_piped(tx, 0, NULL, 0, NULL);
	err = pg_durable(tx);
	if (!err)
		err = simple(tx->c, "COMMIT", "COMMIT");
	if (err && PQtransactionStatus(tx->c->pg) != PQTRANS_IDLE &&
	    PQstatus(tx->c->pg) == CONNECTION_OK)
		simple(tx->c, "ROLLBACK", NULL);
	tx_release(tx);
	return err;
}

static void pg_rollback(struct filer_tx *ftx)
{
	struct pg_tx *tx = (struct pg_tx *)ftx;
	if (PQstatus(tx->c->pg) == CONNECTION_OK)
		simple(tx->c, "ROLLBACK", NULL);
	tx_release(tx);
}

static int64_t get_i64(PGresult *res, int row, int col);

static wfs_err pg_reserve_inodes(struct filer_store *fs, struct filer_tx *tx, uint64_t floor,
				 uint64_t n, uint64_t *first)
{
	struct pg_store *s = (struct pg_store *)fs;
	struct params p = {.n = 0};
	PGresult *res = NULL;
	wfs_err err;

	(void)tx; /* committed at once (see DESIGN) */
	put_be64(p.i64[0], floor);
	put_be64(p.i64[1], n);
	p_add(&p, p.i64[0], 8);
	p_add(&p, p.i64[1], 8);
	pthread_mutex_lock(&s->ino_mu);
	if (!s->ino_conn) {
		s->ino_conn = xcalloc(1, sizeof(*s->ino_conn));
		s->ino_conn->pg = pg_connect(s->dsn);
		if (!s->ino_conn->pg)
			fatal("out of memory");
	}
	err = conn_ensure(s->ino_conn);
	if (!err)
		err = run(s->ino_conn, PS_INO_RESERVE, p.n, p.v, p.l, &res);
	if (err == WFS_EUNAVAIL && PQstatus(s->ino_conn->pg) != CONNECTION_OK &&
	    conn_ensure(s->ino_conn) == WFS_OK)
		err = run(s->ino_conn, PS_INO_RESERVE, p.n, p.v, p.l, &res);
	pthread_mutex_unlock(&s->ino_mu);
	if (!err && PQntuples(res) != 1)
		err = WFS_ECORRUPT; /* the counter row is missing */
	if (!err)
		*first = (uint64_t)get_i64(res, 0, 0);
	PQclear(res);
	return err;
}

static void pg_close(struct filer_store *fs)
{
	struct pg_store *s = (struct pg_store *)fs;
	if (s->ino_conn) {
		PQfinish(s->ino_conn->pg);
		free(s->ino_conn);
	}
	pthread_mutex_destroy(&s->ino_mu);
	while (s->idle) {
		struct pg_conn *c = s->idle;
		s->idle = c->next;
		PQfinish(c->pg);
		free(c);
	}
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s->dsn);
	free(s);
}

static wfs_err pg_open(const char *dsn, struct filer_store **out)
{
	struct pg_store *s = xcalloc(1, sizeof(*s));
	struct pg_conn *c;
	PGresult *r;
	wfs_err err;

	s->base.ops = &filer_store_postgres_ops;
	s->dsn = xstrdup(dsn);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_mutex_init(&s->ino_mu, NULL);
	s->total = 1;
	c = xcalloc(1, sizeof(*c));
	c->pg = pg_connect(dsn);
	if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
		log_error("could not connect to postgres: %s",
			  c->pg ? PQerrorMessage(c->pg) : "out of memory");
		err = WFS_EUNAVAIL;
		goto fail;
	}
	r = PQexec(c->pg, filer_store_postgres_schema);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		log_error("could not create the filer tables: %s", PQresultErrorMessage(r));
		err = map_result(c, r, "schema");
		PQclear(r);
		goto fail;
	}
	PQclear(r);
	conn_put(s, c);
	*out = &s->base;
	return WFS_OK;
fail:
	PQfinish(c->pg);
	free(c);
	pg_close(&s->base);
	return err;
}

/* ---- event log and garbage queue ---- */

/* Adds an int8 parameter (slot k of the three scratch slots). */
static void p_i64(struct params *p, int k, int64_t v)
{
	put_be64(p->i64[k], (uint64_t)v);
	p_add(p, p->i64[k], 8);
}

/* Adds an optional parameter: SQL NULL when v is NULL. */
static void p_opt(struct params *p, const void *v, size_t len)
{
	p_add(p, v ? (len ? v : "") : NULL, v ? len : 0);
}

static int64_t get_i64(PGresult *res, int row, int col)
{
	if (PQgetisnull(res, row, col) || PQgetlength(res, row, col) != 8)
		return 0;
	return (int64_t)get_be64((const uint8_t *)PQgetvalue(res, row, col));
}

static wfs_err pg_append_event(struct filer_store *fs, struct filer_tx *tx, int64_t now_ns,
			       const char *dir, const char *old_path, const void *old_blob,
			       size_t old_len, const char *new_path, const void *new_blob,
			       size_t new_len, int32_t sig, int64_t *ts)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err;
	p_i64(&p, 0, now_ns);
	p_add(&p, dir, strlen(dir));
	p_opt(&p, old_path, old_path ? strlen(old_path) : 0);
	p_opt(&p, old_blob, old_len);
	p_opt(&p, new_path, new_path ? strlen(new_path) : 0);
	p_opt(&p, new_blob, new_len);
	p_i64(&p, 1, sig);
	err = exec(fs, tx, PS_EV_APPEND, &p, &res);
	if (err)
		return err;
	if (PQntuples(res) != 1)
		err = WFS_ECORRUPT; /* the clock row is missing */
	else
		*ts = get_i64(res, 0, 0);
	PQclear(res);
	return err;
}

/*
 * Events sent per pipeline round. Each answers one small row, so a round's
 * answers fit the socket buffers and neither side blocks writing while the
 * other is still writing.
 */
#define PG_PIPE_BATCH 64

/* Queues the append of row r in the pipeline. */
static bool pipe_send_append(struct pg_conn *c, int64_t now, const struct filer_event_row *r)
{
	static const int formats[7] = {1, 1, 1, 1, 1, 1, 1};
	struct params p = {.n = 0};
	char name[8];
	p_i64(&p, 0, now);
	p_add(&p, r->dir, strlen(r->dir));
	p_opt(&p, r->old_path, r->old_path ? strlen(r->old_path) : 0);
	p_opt(&p, r->old_blob, r->old_len);
	p_opt(&p, r->new_path, r->new_path ? strlen(r->new_path) : 0);
	p_opt(&p, r->new_blob, r->new_len);
	p_i64(&p, 1, r->sig);
	snprintf(name, sizeof(name), "s%d", PS_EV_APPEND);
	return PQsendQueryPrepared(c->pg, name, p.n, p.v, p.l, formats, 1) == 1;
}

/* Queues the DELETE of tx's deferred claims in the pipeline and forgets them. */
static bool pipe_send_claims(struct pg_tx *tx)
{
	static const int formats[1] = {1};
	const char *v[1];
	int l[1];
	char name[8];
	bool sent;

	put_be32((uint8_t *)tx->claims.data + 12, tx->nclaims);
	v[0] = tx->claims.data;
	l[0] = (int)tx->claims.len;
	snprintf(name, sizeof(name), "s%d", PS_GC_DONE);
	/* libpq copies the parameters into its output buffer here */
	sent = PQsendQueryPrepared(tx->c->pg, name, 1, v, l, formats, 1) == 1;
	buf_reset(&tx->claims);
	tx->nclaims = 0;
	return sent;
}

/*
 * Takes the next query's result in a pipeline (*r, caller clears; NULL on
 * error) and consumes the NULL that ends it. Once err is set, the server has
 * skipped the rest of the pipeline: results are consumed and err is kept.
 */
static wfs_err pipe_next(struct pg_conn *c, wfs_err err, PGresult **r)
{
	PGresult *x;
	*r = PQgetResult(c->pg);
	if (!*r)
		return err ? err : map_result(c, NULL, "pipeline");
	while ((x = PQgetResult(c->pg)))
		PQclear(x);
	if (err || PQresultStatus(*r) == PGRES_PIPELINE_ABORTED) {
		PQclear(*r);
		*r = NULL;
		return err ? err : WFS_EIO;
	}
	return WFS_OK;
}

/* Consumes the answer to PQpipelineSync. */
static wfs_err pipe_sync(struct pg_conn *c, wfs_err err)
{
	PGresult *r = PQgetResult(c->pg);
	if ((!r || PQresultStatus(r) != PGRES_PIPELINE_SYNC) && !err)
		err = map_result(c, r, "pipeline sync");
	PQclear(r);
	return err;
}

/* Reads the answer to a claims DELETE sent by pipe_send_claims. */
static wfs_err pipe_read_claims(struct pg_conn *c, wfs_err err)
{
	PGresult *r;
	err = pipe_next(c, err, &r);
	if (!err && PQresultStatus(r) != PGRES_COMMAND_OK)
		err = map_result(c, r, "claim");
	PQclear(r);
	return err;
}

/*
 * Reads one round's answers: the claims when claims, n appends (times into
 * ts), then the COMMIT when commit, then the sync.
 */
static wfs_err pipe_read(struct pg_conn *c, bool claims, size_t n, int64_t *ts, bool commit)
{
	wfs_err err = claims ? pipe_read_claims(c, WFS_OK) : WFS_OK;
	PGresult *r;

	for (size_t q = 0; q < n + (commit ? 1 : 0); q++) {
		err = pipe_next(c, err, &r);
		if (err)
			continue;
		if (q == n) {
			if (PQresultStatus(r) != PGRES_COMMAND_OK)
				err = map_result(c, r, "COMMIT");
			else if (strcmp(PQcmdStatus(r), "COMMIT"))
				err = WFS_EPRECOND; /* an aborted transaction answers ROLLBACK */
		} else if (PQresultStatus(r) != PGRES_TUPLES_OK) {
			err = map_result(c, r, "append event");
		} else if (PQntuples(r) != 1) {
			err = WFS_ECORRUPT; /* the clock row is missing */
		} else {
			ts[q] = get_i64(r, 0, 0);
		}
		PQclear(r);
	}
	return pipe_sync(c, err);
}

/*
 * The deferred claims, the appends and the COMMIT go out in one pipeline:
 * the claims cost no round trip of their own, and the clock's row lock (taken
 * by the first append) is held only while the server runs the appends and
 * the commit, not across client round trips. A transaction with more than
 * PG_PIPE_BATCH events sends them in rounds; the first carries the claims,
 * the last the COMMIT. An error anywhere fails the commit and rolls back.
 */
static wfs_err commit_piped(struct pg_tx *tx, int64_t now_ns, const struct filer_event_row *rows,
			    size_t n, int64_t *ts)
{
	struct pg_conn *c = tx->c;
	wfs_err err = WFS_OK;
	bool piped = false;
	size_t at = 0;

	err = pg_durable(tx);
	if (!err && tx->nclaims)
		err = prepare(c, PS_GC_DONE);
	if (!err && n)
		err = prepare(c, PS_EV_APPEND);
	if (!err && !PQenterPipelineMode(c->pg))
		err = map_result(c, NULL, "pipeline mode");
	piped = !err;
	while (!err) {
		size_t k = MIN((size_t)PG_PIPE_BATCH, n - at);
		bool last = at + k == n;
		bool claims = tx->nclaims > 0;
		bool sent = !claims || pipe_send_claims(tx);
		for (size_t i = 0; sent && i < k; i++)
			sent = pipe_send_append(c, now_ns, &rows[at + i]);
		if (sent && last)
			sent = PQsendQueryParams(c->pg, "COMMIT", 0, NULL, NULL, NULL, NULL, 1) ==
			       1;
		if (sent)
			sent = PQpipelineSync(c->pg) == 1;
		if (!sent) {
			err = map_result(c, NULL, "pipeline send");
			break;
		}
		err = pipe_read(c, claims, k, ts ? ts + at : NULL, last);
		at += k;
		if (last)
			break;
	}
	if (piped && !PQexitPipelineMode(c->pg) && !err)
		err = map_result(c, NULL, "pipeline end");
	if (err && PQstatus(c->pg) == CONNECTION_OK && PQpipelineStatus(c->pg) == PQ_PIPELINE_OFF &&
	    PQtransactionStatus(c->pg) != PQTRANS_IDLE)
		simple(c, "ROLLBACK", NULL);
	tx_release(tx);
	return err;
}

static wfs_err pg_commit_events(struct filer_tx *ftx, int64_t now_ns,
				const struct filer_event_row *rows, size_t n, int64_t *ts)
{
	return commit_piped((struct pg_tx *)ftx, now_ns, rows, n, ts);
}

/*
 * Runs ps (a garbage-queue change) in tx right after tx's deferred claims,
 * both in one pipeline: the order of the changes is kept (an id claimed and
 * then queued again ends up queued) at no extra round trip. A failed claim
 * fails ps with the claim's error; the transaction is then aborted and the
 * caller rolls back.
 */
static wfs_err run_after_claims(struct pg_tx *tx, int ps, struct params *p, PGresult **res)
{
	static const int formats[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	struct pg_conn *c = tx->c;
	char name[8];
	PGresult *r = NULL;
	wfs_err err = prepare(c, PS_GC_DONE);
	bool sent;

	if (!err)
		err = prepare(c, ps);
	if (!err && !PQenterPipelineMode(c->pg))
		err = map_result(c, NULL, "pipeline mode");
	if (err)
		return err;
	snprintf(name, sizeof(name), "s%d", ps);
	sent = pipe_send_claims(tx) &&
	       PQsendQueryPrepared(c->pg, name, p->n, p->v, p->l, formats, 1) == 1 &&
	       PQpipelineSync(c->pg) == 1;
	if (!sent) {
		err = map_result(c, NULL, "pipeline send");
	} else {
		err = pipe_read_claims(c, WFS_OK);
		err = pipe_next(c, err, &r);
		if (!err && PQresultStatus(r) != PGRES_COMMAND_OK &&
		    PQresultStatus(r) != PGRES_TUPLES_OK) {
			err = map_result(c, r, "query");
			PQclear(r);
			r = NULL;
		}
		err = pipe_sync(c, err);
	}
	if (!PQexitPipelineMode(c->pg) && !err)
		err = map_result(c, NULL, "pipeline end");
	if (err) {
		PQclear(r);
		r = NULL;
	}
	*res = r;
	return err;
}

static wfs_err pg_event_clock(struct filer_store *fs, int64_t *ts)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err = exec(fs, NULL, PS_CLOCK_GET, &p, &res);
	if (err)
		return err;
	if (PQntuples(res) != 1)
		err = WFS_ECORRUPT;
	else
		*ts = get_i64(res, 0, 0);
	PQclear(res);
	return err;
}

static const char *get_opt(PGresult *res, int row, int col, size_t *len)
{
	if (PQgetisnull(res, row, col)) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = (size_t)PQgetlength(res, row, col);
	return PQgetvalue(res, row, col); /* libpq terminates every value with a NUL */
}

static wfs_err pg_read_events(struct filer_store *fs, int64_t since, const char *under,
			      const char *lo, const char *hi, int32_t skip_sig, size_t limit,
			      filer_event_row_fn fn, void *ctx)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err;
	int rows;

	p_i64(&p, 0, since);
	p_i64(&p, 1, skip_sig);
	if (under) {
		p_add(&p, under, strlen(under));
		p_add(&p, lo, strlen(lo));
		p_add(&p, hi, strlen(hi));
	}
	p_i64(&p, 2, (int64_t)limit);
	err = exec(fs, NULL, under ? PS_EV_READ_UNDER : PS_EV_READ, &p, &res);
	if (err)
		return err;
	rows = PQntuples(res);
	for (int i = 0; i < rows; i++) {
		struct filer_event_row r = {.ts = get_i64(res, i, 0)};
		r.dir = get_opt(res, i, 1, NULL);
		r.old_path = get_opt(res, i, 2, NULL);
		r.old_blob = (const uint8_t *)get_opt(res, i, 3, &r.old_len);
		r.new_path = get_opt(res, i, 4, NULL);
		r.new_blob = (const uint8_t *)get_opt(res, i, 5, &r.new_len);
		if (!r.dir) {
			err = WFS_ECORRUPT;
			break;
		}
		if (!fn(ctx, &r))
			break;
	}
	PQclear(res);
	return err;
}

static wfs_err pg_trim_events(struct filer_store *fs, int64_t before, size_t max, uint64_t *deleted)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err;
	p_i64(&p, 0, before);
	p_i64(&p, 1, (int64_t)max);
	err = exec(fs, NULL, PS_EV_TRIM, &p, &res);
	*deleted = err ? 0 : affected(res);
	PQclear(res);
	return err;
}

/* Appends the header of a binary one-dimensional text[] of n elements to b. */
static void text_array_header(buf *b, size_t n)
{
	uint8_t h[20];
	put_be32(h, 1);            /* dimensions */
	put_be32(h + 4, 0);        /* no NULLs */
	put_be32(h + 8, OID_TEXT); /* element type */
	put_be32(h + 12, (uint32_t)n);
	put_be32(h + 16, 1); /* lower bound */
	buf_append(b, h, sizeof(h));
}

/* Appends fids[0..n) as text[] elements to b. */
static void text_array_items(buf *b, const char *const *fids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t h[4];
		size_t l = strlen(fids[i]);
		put_be32(h, (uint32_t)l);
		buf_append(b, h, 4);
		buf_append(b, fids[i], l);
	}
}

/* Appends the binary form of a one-dimensional text[] holding fids[0..n) to b. */
static void text_array(buf *b, const char *const *fids, size_t n)
{
	text_array_header(b, n);
	text_array_items(b, fids, n);
}

/* Runs ps with ($1 = the fids as text[], $2 = v when with_v). */
static wfs_err pg_fid_array(struct filer_store *fs, struct filer_tx *tx, int ps,
			    const char *const *fids, size_t n, bool with_v, int64_t v)
{
	struct params p = {.n = 0};
	buf arr = BUF_INIT;
	PGresult *res;
	wfs_err err;
	text_array(&arr, fids, n);
	p_add(&p, arr.data, arr.len);
	if (with_v)
		p_i64(&p, 0, v);
	err = exec(fs, tx, ps, &p, &res);
	PQclear(res);
	buf_free(&arr);
	return err;
}

static wfs_err pg_gc_enqueue(struct filer_store *fs, struct filer_tx *tx, const char *const *fids,
			     size_t n, int64_t due)
{
	return pg_fid_array(fs, tx, PS_GC_ENQUEUE, fids, n, true, due);
}

static wfs_err pg_gc_done(struct filer_store *fs, struct filer_tx *tx, const char *const *fids,
			  size_t n)
{
	return pg_fid_array(fs, tx, PS_GC_DONE, fids, n, false, 0);
}

/* Runs the DELETE of tx's deferred claims now, on its own (a bounded buffer). */
static wfs_err claims_run_now(struct pg_tx *tx)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err;
	put_be32((uint8_t *)tx->claims.data + 12, tx->nclaims);
	p_add(&p, tx->claims.data, tx->claims.len);
	err = run(tx->c, PS_GC_DONE, p.n, p.v, p.l, &res);
	PQclear(res);
	buf_reset(&tx->claims);
	tx->nclaims = 0;
	return err;
}

/*
 * Buffers the ids in tx: their DELETE goes out with tx's next garbage-queue
 * statement or its COMMIT (run_after_claims, commit_piped), in one pipeline.
 * A buffer past PG_CLAIMS_MAX bytes is sent on its own first.
 */
static wfs_err pg_gc_claim(struct filer_store *fs, struct filer_tx *ftx, const char *const *fids,
			   size_t n)
{
	struct pg_tx *tx = (struct pg_tx *)ftx;
	(void)fs;
	for (size_t i = 0; i < n; i += FILER_GC_BATCH_MAX) {
		size_t k = MIN(n - i, (size_t)FILER_GC_BATCH_MAX);
		if (tx->nclaims && tx->claims.len + k * (4 + FILER_FID_MAX) > PG_CLAIMS_MAX) {
			wfs_err err = claims_run_now(tx);
			if (err)
				return err;
		}
		if (!tx->nclaims)
			text_array_header(&tx->claims, 0); /* the count is filled in when sent */
		text_array_items(&tx->claims, fids + i, k);
		tx->nclaims += (uint32_t)k;
	}
	return WFS_OK;
}

static wfs_err pg_gc_defer(struct filer_store *fs, struct filer_tx *tx, const char *const *fids,
			   size_t n, int64_t due)
{
	return pg_fid_array(fs, tx, PS_GC_DEFER, fids, n, true, due);
}

static wfs_err pg_gc_take(struct filer_store *fs, int64_t now, int64_t until, size_t max,
			  struct filer_gc_item **items, size_t *n)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err;
	int rows;
	p_i64(&p, 0, until);
	p_i64(&p, 1, now);
	p_i64(&p, 2, (int64_t)max);
	err = exec(fs, NULL, PS_GC_TAKE, &p, &res);
	if (err)
		return err;
	rows = PQntuples(res);
	if (rows > 0) {
		*items = xcalloc((size_t)rows, sizeof(**items));
		for (int i = 0; i < rows; i++) {
			(*items)[i].fid =
				xstrndup(PQgetvalue(res, i, 0), (size_t)PQgetlength(res, i, 0));
			(*items)[i].attempts = (uint32_t)get_i64(res, i, 1);
		}
		*n = (size_t)rows;
	}
	PQclear(res);
	return err;
}

static wfs_err pg_gc_count(struct filer_store *fs, uint64_t *n)
{
	struct params p = {.n = 0};
	PGresult *res;
	wfs_err err = exec(fs, NULL, PS_GC_COUNT, &p, &res);
	if (err)
		return err;
	*n = PQntuples(res) == 1 ? (uint64_t)get_i64(res, 0, 0) : 0;
	PQclear(res);
	return err;
}

const struct filer_store_ops filer_store_postgres_ops = {
	.name = "postgres",
	.open = pg_open,
	.close = pg_close,
	.begin = pg_begin,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.insert = pg_insert,
	.update = pg_update,
	.find = pg_find,
	.del = pg_del,
	.delete_children = pg_delete_children,
	.list = pg_list,
	.kv_put = pg_kv_put,
	.kv_get = pg_kv_get,
	.kv_delete = pg_kv_delete,
	.append_event = pg_append_event,
	.commit_events = pg_commit_events,
	.event_clock = pg_event_clock,
	.read_events = pg_read_events,
	.trim_events = pg_trim_events,
	.gc_enqueue = pg_gc_enqueue,
	.gc_take = pg_gc_take,
	.gc_done = pg_gc_done,
	.gc_defer = pg_gc_defer,
	.gc_claim = pg_gc_claim,
	.gc_count = pg_gc_count,
	.reserve_inodes = pg_reserve_inodes,
};
