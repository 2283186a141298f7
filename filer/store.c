/*
 * Store dispatch: picks a backend from the DSN, validates every argument once
 * (so backends may trust them), encodes entries, and turns a name prefix into
 * a byte range so listing stays an index range scan.
 *
 * Inode numbers: an entry inserted without one gets the next number of this
 * filer's block, a block of INODE_BLOCK numbers reserved from the store's
 * counter row at a time (reserve_inodes: atomic across the filers sharing a
 * PostgreSQL database), so most inserts cost no extra statement. A number is
 * never handed out twice: a restarted filer reserves past the counter, and
 * the numbers left in a block at exit are simply never used.
 */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include "filer/store.h"
#include "utf8.h"
#include "filer/store_impl.h"
#include "metrics.h"
#include "util.h"

#define INODE_BLOCK 1024

static uint64_t (*hash_hook)(const char *dir);

uint64_t filer_store_dir_hash(const char *dir)
{
	if (hash_hook)
		return hash_hook(dir);
	return XXH64(dir, strlen(dir), 0);
}

void filer_store_set_hash_for_testing(uint64_t (*fn)(const char *dir)) { hash_hook = fn; }

/* Store operation latency and failures in the process's metrics. */
static metric *m_store_seconds, *m_store_errors;
static pthread_once_t store_metrics_once = PTHREAD_ONCE_INIT;

static void store_metrics_init(void)
{
	m_store_seconds = metric_histogram("weedfs_filer_store_duration_seconds",
					   "Filer store operation latency.", "op", NULL, 0);
	m_store_errors = metric_counter("weedfs_filer_store_errors_total",
					"Filer store operations that failed (not-found excluded).",
					"op");
}

/* Records one operation that started at t0 (time_mono_ns) and returns its result. */
static wfs_err store_observed(const char *op, uint64_t t0, wfs_err err)
{
	pthread_once(&store_metrics_once, store_metrics_init);
	metric_observe(metric_at(m_store_seconds, op), (double)(time_mono_ns() - t0) / 1e9);
	if (err && err != WFS_ENOENT && err != WFS_EEXIST)
		metric_inc(metric_at(m_store_errors, op));
	return err;
}

static bool has_prefix(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

wfs_err filer_store_open(const char *dsn, struct filer_store **out)
{
	wfs_err err = WFS_EINVAL;

	*out = NULL;
	if (!dsn)
		return WFS_EINVAL;
	if (has_prefix(dsn, "sqlite://"))
		err = filer_store_sqlite_ops.open(dsn + strlen("sqlite://"), out);
	else if (has_prefix(dsn, "postgres://") || has_prefix(dsn, "postgresql://") ||
		 (strchr(dsn, '=') && !strstr(dsn, "://")))
		err = filer_store_postgres_ops.open(dsn, out);
	if (!err)
		pthread_mutex_init(&(*out)->ino_mu, NULL);
	return err;
}

void filer_store_close(struct filer_store *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->ino_mu);
	s->ops->close(s);
}

wfs_err filer_store_new_inode(struct filer_store *s, struct filer_tx *tx, uint64_t *ino)
{
	uint64_t floor, first = 0;
	wfs_err err;

	pthread_mutex_lock(&s->ino_mu);
	if (s->ino_next < s->ino_end) {
		*ino = s->ino_next++;
		pthread_mutex_unlock(&s->ino_mu);
		return WFS_OK;
	}
	floor = s->ino_high;
	pthread_mutex_unlock(&s->ino_mu);
	/* not under ino_mu: a SQLite reservation without tx waits for the writer, who
	   may be waiting for ino_mu; two threads reserving at once get two blocks */
	err = s->ops->reserve_inodes(s, tx, floor, INODE_BLOCK, &first);
	if (err)
		return err;
	if (first < 2 || first > UINT64_MAX - 2 * INODE_BLOCK)
		return WFS_ECORRUPT; /* the counter row was tampered with */
	pthread_mutex_lock(&s->ino_mu);
	/* another thread may have installed a block meanwhile: then ours goes unused */
	if (s->ino_next >= s->ino_end) {
		s->ino_next = first;
		s->ino_end = first + INODE_BLOCK;
	}
	if (first + INODE_BLOCK > s->ino_high)
		s->ino_high = first + INODE_BLOCK;
	if (tx && s->ops->reserve_in_tx)
		tx->inode_floor = s->ino_high;
	*ino = s->ino_next++;
	pthread_mutex_unlock(&s->ino_mu);
	return WFS_OK;
}

const char *filer_store_name(const struct filer_store *s) { return s->ops->name; }

bool filer_store_local_reads(const struct filer_store *s) { return s->ops->local_reads; }

wfs_err filer_store_begin(struct filer_store *s, struct filer_tx **tx)
{
	*tx = NULL;
	return s->ops->begin(s, tx);
}

/* Takes tx's pending events out of it (the backend frees tx at commit or rollback). */
static struct filer_pending_event *pending_take(struct filer_tx *tx, size_t *n)
{
	struct filer_pending_event *p = tx->pending;
	*n = tx->npending;
	tx->pending = NULL;
	tx->npending = tx->cappending = 0;
	return p;
}

static void pending_free(struct filer_pending_event *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(p[i].dir);
		free(p[i].old_path);
		free(p[i].new_path);
		buf_free(&p[i].old_blob);
		buf_free(&p[i].new_blob);
	}
	free(p);
}

/*
 * Writes the events appended in tx and commits it, with the backend's
 * commit_events when it has one (the clock is then taken as late as
 * possible), else by appending each and committing.
 */
static wfs_err commit_with_events(struct filer_tx *tx, struct filer_pending_event *p, size_t n)
{
	const struct filer_store_ops *ops = tx->store->ops;
	int64_t now = (int64_t)time_now_ns();
	int64_t *ts = xcalloc(n, sizeof(*ts));
	wfs_err err = WFS_OK;

	if (ops->commit_events) {
		struct filer_event_row *rows = xcalloc(n, sizeof(*rows));
		for (size_t i = 0; i < n; i++) {
			rows[i].dir = p[i].dir;
			rows[i].old_path = p[i].old_path;
			rows[i].new_path = p[i].new_path;
			rows[i].old_blob =
				p[i].old_path ? (const uint8_t *)p[i].old_blob.data : NULL;
			rows[i].old_len = p[i].old_blob.len;
			rows[i].new_blob =
				p[i].new_path ? (const uint8_t *)p[i].new_blob.data : NULL;
			rows[i].new_len = p[i].new_blob.len;
			rows[i].sig = tx->sig;
		}
		err = ops->commit_events(tx, now, rows, n, ts);
		free(rows);
	} else {
		struct filer_store *s = tx->store;
		for (size_t i = 0; !err && i < n; i++)
			err = ops->append_event(s, tx, now, p[i].dir, p[i].old_path,
						p[i].old_path ? p[i].old_blob.data : NULL,
						p[i].old_blob.len, p[i].new_path,
						p[i].new_path ? p[i].new_blob.data : NULL,
						p[i].new_blob.len, tx->sig, &ts[i]);
		if (err)
			ops->rollback(tx);
		else
			err = ops->commit(tx);
	}
	for (size_t i = 0; !err && i < n; i++)
		if (p[i].ts_out)
			*p[i].ts_out = ts[i];
	free(ts);
	return err;
}

wfs_err filer_store_commit(struct filer_tx *tx)
{
	uint64_t t0 = time_mono_ns();
	size_t n;
	struct filer_pending_event *p = pending_take(tx, &n);
	wfs_err err = n ? commit_with_events(tx, p, n) : tx->store->ops->commit(tx);
	pending_free(p, n);
	return store_observed("commit", t0, err);
}

void filer_store_tx_durable(struct filer_tx *tx) { tx->durable = true; }

wfs_err filer_store_sync(struct filer_store *s)
{
	static const char key[] = "fsync-barrier";
	struct filer_tx *tx = NULL;
	uint8_t one = 1;
	/* a commit that writes nothing syncs nothing: rewrite a record */
	wfs_err err = filer_store_begin(s, &tx);
	if (err)
		return err;
	filer_store_tx_durable(tx);
	err = filer_store_kv_put(s, tx, key, sizeof(key) - 1, &one, 1);
	if (err) {
		filer_store_rollback(tx);
		return err;
	}
	return filer_store_commit(tx);
}

void filer_store_rollback(struct filer_tx *tx)
{
	struct filer_pending_event *p;
	size_t n = 0;
	if (!tx)
		return;
	p = pending_take(tx, &n);
	pending_free(p, n);
	tx->store->ops->rollback(tx);
}

/* A stored directory: "/" or "/a/b" (no trailing slash, no empty/./.. components). */
static bool dir_ok(const char *dir)
{
	char *d, *n;
	if (!dir)
		return false;
	if (filer_path_split(dir, &d, &n))
		return false;
	free(d);
	free(n);
	return true;
}

/* A name inside dir: one component, or "" for the root entry itself. */
static bool name_ok(const char *dir, const char *name)
{
	size_t n;
	if (!name)
		return false;
	n = strlen(name);
	if (n == 0)
		return !strcmp(dir, "/");
	return n <= FILER_NAME_MAX && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, "..");
}

static bool tx_matches(struct filer_store *s, struct filer_tx *tx) { return !tx || tx->store == s; }

static bool same_link(const struct filer_attr *a, const struct filer_attr *b)
{
	return a->hard_link_id_len == b->hard_link_id_len &&
	       (!a->hard_link_id_len ||
		!memcmp(a->hard_link_id, b->hard_link_id, a->hard_link_id_len));
}

/*
 * The inode e is stored with (store.h, filer_store_insert/update): the root's,
 * e's own, or for an update without one the stored entry's unless e replaces
 * one name of a hard-linked file by a file of its own; else a new one.
 */
static wfs_err put_inode(struct filer_store *s, struct filer_tx *tx, struct filer_entry *e,
			 bool insert)
{
	struct filer_entry *old = NULL;
	wfs_err err;

	if (!strcmp(e->dir, "/") && !e->name[0]) {
		e->attr.inode = FILER_ROOT_INODE;
		return WFS_OK;
	}
	if (e->attr.inode)
		return WFS_OK;
	if (!insert) {
		err = s->ops->find(s, tx, e->dir, e->name, &old);
		if (err)
			return err;
		if (old->attr.inode && same_link(&old->attr, &e->attr))
			e->attr.inode = old->attr.inode;
		filer_entry_free(old);
		if (e->attr.inode)
			return WFS_OK;
	}
	return filer_store_new_inode(s, tx, &e->attr.inode);
}

static wfs_err put_entry(struct filer_store *s, struct filer_tx *tx, struct filer_entry *e,
			 bool insert)
{
	buf b = BUF_INIT;
	wfs_err err;
	if (!tx_matches(s, tx) || !dir_ok(e->dir) || !name_ok(e->dir, e->name))
		return WFS_EINVAL;
	err = filer_entry_check(e);
	if (!err)
		err = put_inode(s, tx, e, insert);
	if (!err)
		err = filer_entry_encode(e, &b);
	if (!err)
		err = insert ? s->ops->insert(s, tx, e->dir, e->name, b.data, b.len)
			     : s->ops->update(s, tx, e->dir, e->name, b.data, b.len);
	buf_free(&b);
	return err;
}

wfs_err filer_store_insert(struct filer_store *s, struct filer_tx *tx, struct filer_entry *e)
{
	uint64_t t0 = time_mono_ns();
	return store_observed("insert", t0, put_entry(s, tx, e, true));
}

wfs_err filer_store_update(struct filer_store *s, struct filer_tx *tx, struct filer_entry *e)
{
	uint64_t t0 = time_mono_ns();
	return store_observed("update", t0, put_entry(s, tx, e, false));
}

wfs_err filer_store_find(struct filer_store *s, struct filer_tx *tx, const char *dir,
			 const char *name, struct filer_entry **out)
{
	*out = NULL;
	uint64_t t0 = time_mono_ns();
	if (!tx_matches(s, tx) || !dir_ok(dir) || !name_ok(dir, name))
		return WFS_EINVAL;
	return store_observed("find", t0, s->ops->find(s, tx, dir, name, out));
}

wfs_err filer_store_delete(struct filer_store *s, struct filer_tx *tx, const char *dir,
			   const char *name)
{
	uint64_t t0 = time_mono_ns();
	if (!tx_matches(s, tx) || !dir_ok(dir) || !name_ok(dir, name))
		return WFS_EINVAL;
	return store_observed("delete", t0, s->ops->del(s, tx, dir, name));
}

wfs_err filer_store_delete_children(struct filer_store *s, struct filer_tx *tx, const char *dir,
				    uint64_t *deleted)
{
	uint64_t n = 0;
	wfs_err err;
	if (!tx_matches(s, tx) || !dir_ok(dir))
		return WFS_EINVAL;
	err = s->ops->delete_children(s, tx, dir, &n);
	if (deleted)
		*deleted = n;
	return err;
}

static size_t utf8_put(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | (c >> 6 & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | (c >> 12 & 0x3f));
	out[2] = (char)(0x80 | (c >> 6 & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

char *filer_store_prefix_end(const char *prefix)
{
	const unsigned char *p = (const unsigned char *)prefix;
	size_t n = strlen(prefix), pos = 0, nchars = 0;
	size_t *starts = xmalloc((n + 1) * sizeof(*starts));
	uint32_t *cps = xmalloc((n + 1) * sizeof(*cps));
	char *out = NULL;
	bool valid = true;

	while (pos < n) {
		size_t l = utf8_decode(p + pos, n - pos, &cps[nchars]);
		if (!l) {
			valid = false;
			break;
		}
		starts[nchars++] = pos;
		pos += l;
	}
	if (valid) {
		/* drop trailing U+10FFFF, then increment the last code point (skipping surrogates)
		 */
		while (nchars && cps[nchars - 1] == 0x10ffff)
			nchars--;
		if (nchars) {
			uint32_t c = cps[nchars - 1] + 1;
			if (c == 0xd800)
				c = 0xe000;
			out = xmalloc(starts[nchars - 1] + 5);
			memcpy(out, prefix, starts[nchars - 1]);
			out[starts[nchars - 1] + utf8_put(out + starts[nchars - 1], c)] = '\0';
		}
	} else {
		/* arbitrary bytes: drop trailing 0xff, then increment the last byte */
		while (n && p[n - 1] == 0xff)
			n--;
		if (n) {
			out = xstrndup(prefix, n);
			out[n - 1] = (char)(p[n - 1] + 1);
		}
	}
	free(starts);
	free(cps);
	return out;
}

wfs_err filer_store_list(struct filer_store *s, struct filer_tx *tx, const char *dir,
			 const char *start, bool inclusive, size_t limit, const char *prefix,
			 filer_list_fn fn, void *ctx, size_t *count)
{
	const char *lo = start && start[0] ? start : NULL;
	bool lo_incl = inclusive;
	char *hi = NULL;
	size_t got = 0;
	wfs_err err;

	if (count)
		*count = 0;
	if (!tx_matches(s, tx) || !dir_ok(dir) || limit == 0 || limit > FILER_LIST_LIMIT_MAX ||
	    (lo && strlen(lo) > FILER_NAME_MAX) || (prefix && strlen(prefix) > FILER_NAME_MAX))
		return WFS_EINVAL;
	if (prefix && prefix[0]) {
		/* the range starts at the later of start and prefix */
		if (!lo || strcmp(prefix, lo) > 0) {
			lo = prefix;
			lo_incl = true;
		}
		hi = filer_store_prefix_end(prefix);
	} else {
		prefix = NULL;
	}
	uint64_t t0 = time_mono_ns();
	err = store_observed("list", t0,
			     s->ops->list(s, tx, dir, lo, lo_incl, hi, prefix, limit, fn, ctx, &got));
	free(hi);
	if (count)
		*count = got;
	return err;
}

static bool kv_args_ok(struct filer_store *s, struct filer_tx *tx, const void *key, size_t klen)
{
	return tx_matches(s, tx) && key && klen >= 1 && klen <= FILER_KV_KEY_MAX;
}

wfs_err filer_store_kv_put(struct filer_store *s, struct filer_tx *tx, const void *key, size_t klen,
			   const void *val, size_t vlen)
{
	if (!kv_args_ok(s, tx, key, klen) || vlen > FILER_KV_VALUE_MAX || (vlen && !val))
		return WFS_EINVAL;
	return s->ops->kv_put(s, tx, key, klen, val, vlen);
}

wfs_err filer_store_kv_get(struct filer_store *s, struct filer_tx *tx, const void *key, size_t klen,
			   void **val, size_t *vlen)
{
	*val = NULL;
	*vlen = 0;
	if (!kv_args_ok(s, tx, key, klen))
		return WFS_EINVAL;
	return s->ops->kv_get(s, tx, key, klen, val, vlen);
}

wfs_err filer_store_kv_delete(struct filer_store *s, struct filer_tx *tx, const void *key,
			      size_t klen)
{
	if (!kv_args_ok(s, tx, key, klen))
		return WFS_EINVAL;
	return s->ops->kv_delete(s, tx, key, klen);
}

/* ---- event log ---- */

void filer_event_free(struct filer_event *ev)
{
	if (!ev)
		return;
	free(ev->dir);
	filer_entry_free(ev->old_entry);
	filer_entry_free(ev->new_entry);
	free(ev);
}

/*
 * Runs a multi-statement write in tx, or in a transaction of its own when tx
 * is NULL (so the statements stay atomic).
 */
struct own_tx {
	struct filer_tx *tx;
	bool own;
};

static wfs_err own_begin(struct filer_store *s, struct filer_tx *tx, struct own_tx *o)
{
	o->tx = tx;
	o->own = !tx;
	return tx ? WFS_OK : filer_store_begin(s, &o->tx);
}

static wfs_err own_end(struct own_tx *o, wfs_err err)
{
	if (!o->own)
		return err;
	if (err) {
		filer_store_rollback(o->tx);
		return err;
	}
	return filer_store_commit(o->tx);
}

static bool entry_ok(const struct filer_entry *e)
{
	return !e || (dir_ok(e->dir) && name_ok(e->dir, e->name));
}

/*
 * Encodes e as events keep it: without its inline bytes, only their length.
 * The bytes would be the bulk of a small file's event row (written, and
 * logged by SQLite's WAL, once more for every create and overwrite: 4 KiB S3
 * PUTs ran about 10% faster without them); a follower that needs them looks
 * the entry up (docs/filer-events.md).
 */
static wfs_err encode_for_event(const struct filer_entry *e, buf *out)
{
	struct filer_entry t = *e; /* shallow: the encoder only reads it */
	if (t.has_content) {
		t.has_content = false;
		t.content = NULL;
		t.content_omitted = true;
	}
	return filer_entry_encode(&t, out);
}

wfs_err filer_store_append_event(struct filer_store *s, struct filer_tx *tx,
				 const struct filer_entry *old_entry,
				 const struct filer_entry *new_entry, int64_t *ts_ns)
{
	struct filer_pending_event *p;
	struct own_tx o;
	wfs_err err;

	if (ts_ns)
		*ts_ns = 0;
	if (!tx_matches(s, tx) || (!old_entry && !new_entry) || !entry_ok(old_entry) ||
	    !entry_ok(new_entry))
		return WFS_EINVAL;
	err = own_begin(s, tx, &o);
	if (err)
		return err;
	tx = o.tx;
	if (tx->npending == tx->cappending) {
		tx->cappending = tx->cappending ? tx->cappending * 2 : 4;
		tx->pending = xrealloc(tx->pending, tx->cappending * sizeof(*tx->pending));
	}
	p = &tx->pending[tx->npending];
	memset(p, 0, sizeof(*p));
	p->dir = xstrdup(old_entry ? old_entry->dir : new_entry->dir);
	p->ts_out = ts_ns;
	tx->npending++;
	if (old_entry) {
		err = encode_for_event(old_entry, &p->old_blob);
		p->old_path = filer_entry_full_path(old_entry);
	}
	if (!err && new_entry) {
		err = encode_for_event(new_entry, &p->new_blob);
		p->new_path = filer_entry_full_path(new_entry);
	}
	if (err) {
		/* not queued after all (the caller's transaction stays usable) */
		struct filer_pending_event *last = &tx->pending[--tx->npending];
		free(last->dir);
		free(last->old_path);
		free(last->new_path);
		buf_free(&last->old_blob);
		buf_free(&last->new_blob);
	}
	return own_end(&o, err);
}

wfs_err filer_store_event_clock(struct filer_store *s, int64_t *ts_ns)
{
	*ts_ns = 0;
	return s->ops->event_clock(s, ts_ns);
}

struct read_ctx {
	filer_event_fn fn;
	void *ctx;
	size_t rows;  /* rows the backend passed */
	int64_t last; /* ts of the last row passed to fn */
	bool stopped; /* fn asked to stop */
	wfs_err err;
};

/* Decodes one side of a row; *out stays NULL when the side is absent. */
static wfs_err decode_side(const char *path, const uint8_t *blob, size_t len,
			   struct filer_entry **out)
{
	char *d, *n;
	wfs_err err;
	*out = NULL;
	if (!path)
		return WFS_OK;
	if (filer_path_split(path, &d, &n))
		return WFS_ECORRUPT;
	err = filer_entry_decode(blob, len, d, n, out);
	free(d);
	free(n);
	return err;
}

static bool read_row(void *arg, const struct filer_event_row *r)
{
	struct read_ctx *rc = arg;
	struct filer_event *ev = xcalloc(1, sizeof(*ev));
	rc->rows++;
	ev->ts_ns = r->ts;
	ev->dir = xstrdup(r->dir);
	rc->err = decode_side(r->old_path, r->old_blob, r->old_len, &ev->old_entry);
	if (!rc->err)
		rc->err = decode_side(r->new_path, r->new_blob, r->new_len, &ev->new_entry);
	if (rc->err) {
		filer_event_free(ev);
		return false;
	}
	rc->last = r->ts;
	if (!rc->fn(rc->ctx, ev)) {
		rc->stopped = true;
		return false;
	}
	return true;
}

void filer_store_tx_sign(struct filer_tx *tx, int32_t sig) { tx->sig = sig; }
int32_t filer_store_tx_signature(const struct filer_tx *tx) { return tx->sig; }

wfs_err filer_store_read_events(struct filer_store *s, int64_t since_ns, const char *prefix,
				int32_t skip_sig, size_t limit, filer_event_fn fn, void *ctx,
				int64_t *next_since)
{
	struct read_ctx rc = {.fn = fn, .ctx = ctx, .last = since_ns};
	char *under = NULL, *lo = NULL, *hi = NULL;
	int64_t clock = 0;
	size_t plen;
	wfs_err err;

	*next_since = since_ns;
	if (limit == 0 || limit > FILER_EVENTS_LIMIT_MAX || since_ns < 0)
		return WFS_EINVAL;
	if (prefix && prefix[0]) {
		if (prefix[0] != '/' || strlen(prefix) > FILER_PATH_MAX)
			return WFS_EINVAL;
		plen = strlen(prefix);
		while (plen > 1 && prefix[plen - 1] == '/')
			plen--;
		if (plen > 1) {
			/* "/a/b": the path itself, or anything in ["/a/b/", "/a/b0") */
			under = xstrndup(prefix, plen);
			lo = xasprintf("%s/", under);
			hi = xasprintf("%s0", under);
		}
	}
	/*
	 * The clock first: every event up to it is committed, so the read below
	 * (a later snapshot) sees all of them. That bounds how far the token may
	 * advance past rows the filter skipped.
	 */
	err = s->ops->event_clock(s, &clock);
	if (!err)
		err = s->ops->read_events(s, since_ns, under, lo, hi, skip_sig, limit, read_row,
					  &rc);
	if (!err)
		err = rc.err;
	if (!err) {
		if (rc.stopped || rc.rows == limit)
			*next_since = rc.last;
		else
			*next_since = clock > rc.last ? clock : rc.last;
	} else if (rc.last > since_ns) {
		*next_since = rc.last; /* what was delivered stays delivered */
	}
	free(under);
	free(lo);
	free(hi);
	return err;
}

wfs_err filer_store_trim_events(struct filer_store *s, int64_t before_ns, uint64_t *deleted)
{
	const size_t batch = 10000;
	uint64_t total = 0, n;
	wfs_err err;
	do {
		n = 0;
		err = s->ops->trim_events(s, before_ns, batch, &n);
		total += n;
	} while (!err && n == batch);
	if (deleted)
		*deleted = total;
	return err;
}

/* ---- garbage queue ---- */

void filer_gc_items_free(struct filer_gc_item *items, size_t n)
{
	if (!items)
		return;
	for (size_t i = 0; i < n; i++)
		free(items[i].fid);
	free(items);
}

static bool fids_ok(const char *const *fids, size_t n)
{
	if (!fids || n == 0 || n > FILER_GC_BATCH_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		size_t l = fids[i] ? strlen(fids[i]) : 0;
		if (l == 0 || l > FILER_FID_MAX)
			return false;
	}
	return true;
}

wfs_err filer_store_gc_enqueue(struct filer_store *s, struct filer_tx *tx, const char *const *fids,
			       size_t n, int64_t not_before_ns)
{
	struct own_tx o;
	wfs_err err;
	if (!tx_matches(s, tx) || !fids_ok(fids, n) || not_before_ns < 0)
		return WFS_EINVAL;
	err = own_begin(s, tx, &o);
	if (err)
		return err;
	return own_end(&o, s->ops->gc_enqueue(s, o.tx, fids, n, not_before_ns));
}

wfs_err filer_store_gc_take(struct filer_store *s, size_t max, int64_t lease_ns,
			    struct filer_gc_item **items, size_t *n)
{
	int64_t now = (int64_t)time_now_ns();
	*items = NULL;
	*n = 0;
	if (max == 0 || max > FILER_GC_BATCH_MAX || lease_ns <= 0 || lease_ns > INT64_MAX - now)
		return WFS_EINVAL;
	return s->ops->gc_take(s, now, now + lease_ns, max, items, n);
}

wfs_err filer_store_gc_done(struct filer_store *s, const char *const *fids, size_t n)
{
	struct own_tx o;
	wfs_err err;
	if (!fids_ok(fids, n))
		return WFS_EINVAL;
	err = own_begin(s, NULL, &o);
	if (err)
		return err;
	return own_end(&o, s->ops->gc_done(s, o.tx, fids, n));
}

wfs_err filer_store_gc_defer(struct filer_store *s, const char *const *fids, size_t n,
			     int64_t due_ns)
{
	struct own_tx o;
	wfs_err err;
	if (!fids_ok(fids, n) || due_ns < 0)
		return WFS_EINVAL;
	err = own_begin(s, NULL, &o);
	if (err)
		return err;
	return own_end(&o, s->ops->gc_defer(s, o.tx, fids, n, due_ns));
}

wfs_err filer_store_gc_count(struct filer_store *s, uint64_t *n)
{
	*n = 0;
	return s->ops->gc_count(s, n);
}
