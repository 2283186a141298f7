/*
 * Resumable uploads: the TUS 1.0.0 protocol (core, creation, termination,
 * expiration) at /.tus. See docs/api-filer.md, "Resumable uploads (TUS)".
 *
 * DESIGN
 * - POST /.tus/<target> makes a session; HEAD, PATCH and DELETE address it at
 *   /.tus/.uploads/<id>. A session lives in the store's key-value space under
 *   "tus/<id>" (tus_codec.h): target path, length, offset, metadata, when it
 *   was last touched and the chunks uploaded so far, so it survives a filer
 *   restart (and is shared by filers on one PostgreSQL database). Its id is
 *   also listed in one of 256 index records "tus/i/<first two hex digits>",
 *   so the sweep can find every session (the key-value space has no scan).
 * - A PATCH first checks its Upload-Offset against the session (409 before
 *   reading a byte), then streams the body into chunks (body_chunks.h) that
 *   carry absolute file offsets (the writer starts at the session offset).
 *   Chunks uploaded while the body streams sit in the garbage queue under a
 *   lease, so a filer killed mid-PATCH leaks none of them.
 * - The commit re-reads the session inside one store transaction, under
 *   tus_lock, and appends only if the offset is still the one the PATCH began
 *   at (two racing PATCHes: the loser gets 409 and its chunks are freed); the
 *   same transaction claims the PATCH's chunks off the garbage queue. When
 *   the offset reaches the length, that transaction makes the entry at the
 *   target (parents, replaced entry's chunks to the garbage queue, metadata
 *   events) and deletes the session, so the file appears atomically.
 * - A PATCH that fails mid-body keeps nothing of it (its chunks are deleted);
 *   the client resumes from the offset HEAD reports.
 * - Expiry: a session not touched (created or PATCHed) for -tus.expireSeconds
 *   is gone: HEAD and PATCH answer 404 (and remove it), and the filer's
 *   periodic sweep (filer_ttl.c) removes the others, its chunks going to the
 *   garbage queue in the removing transaction.
 * - Lock order: tus_lock, then the target's path lock (filer_int.h order).
 */
#include "config.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include "filer/body_chunks.h"
#include "client/chunk_io.h"
#include "filer/filer_hardlink.h"
#include "filer/filer_int.h"
#include "filer/namespace.h"
#include "filer/tus_codec.h"
#include "log.h"
#include "util.h"

#define TUS_PREFIX       "/.tus"
#define TUS_UPLOADS      "/.tus/.uploads/"
#define TUS_VERSION      "1.0.0"
#define TUS_ID_BYTES     16
#define TUS_ID_LEN       (TUS_ID_BYTES * 2)
#define TUS_CHUNKS_MAX   100000 /* Tus-Max-Size is -maxMB times this */
#define TUS_SESSION_CAP  10000  /* stored chunks before a PATCH is refused */
#define TUS_MANIFEST_MAX 1000   /* beyond this many chunks, the entry lists manifests */
#define TUS_INDEX_MAX    100000 /* sessions one index record lists (3.2 MB) */

/* Serialises session read-modify-writes of this process (see DESIGN). */
static pthread_mutex_t tus_lock = PTHREAD_MUTEX_INITIALIZER;

static void session_key(const char *id, char *key, size_t *klen)
{
	*klen = (size_t)snprintf(key, 64, "tus/%s", id);
}

/* Loads session id; WFS_ENOENT if there is none. */
static wfs_err session_load(struct filer *f, struct filer_tx *tx, const char *id,
			    struct tus_session *s)
{
	char key[64];
	size_t klen, vlen = 0;
	void *val = NULL;
	wfs_err err;
	memset(s, 0, sizeof(*s));
	session_key(id, key, &klen);
	err = filer_store_kv_get(f->store, tx, key, klen, &val, &vlen);
	if (!err)
		err = tus_session_decode(val, vlen, s);
	free(val);
	return err;
}

static wfs_err session_save(struct filer *f, struct filer_tx *tx, const char *id,
			    const struct tus_session *s)
{
	char key[64];
	size_t klen;
	buf b = {0};
	wfs_err err;
	session_key(id, key, &klen);
	tus_session_encode(s, &b);
	err = b.len > FILER_KV_VALUE_MAX
		      ? WFS_ETOOBIG
		      : filer_store_kv_put(f->store, tx, key, klen, b.data, b.len);
	buf_free(&b);
	return err;
}

static wfs_err session_delete(struct filer *f, struct filer_tx *tx, const char *id)
{
	char key[64];
	size_t klen;
	session_key(id, key, &klen);
	return filer_store_kv_delete(f->store, tx, key, klen);
}

/* ---- the session index: "tus/i/<xx>" lists the ids starting with xx ---- */

static size_t index_key(const char *id, char *key)
{
	return (size_t)snprintf(key, 16, "tus/i/%.2s", id);
}

/* The ids of index record key (a multiple of TUS_ID_LEN bytes); *ids caller frees. */
static wfs_err index_get(struct filer *f, struct filer_tx *tx, const char *key, size_t klen,
			 char **ids, size_t *len)
{
	void *val = NULL;
	wfs_err err = filer_store_kv_get(f->store, tx, key, klen, &val, len);
	if (err == WFS_ENOENT) {
		*len = 0;
		err = WFS_OK;
	}
	if (!err && *len % TUS_ID_LEN) {
		log_warn("tus: index record %.*s is corrupt (%zu bytes): rebuilt", (int)klen, key,
			 *len);
		*len -= *len % TUS_ID_LEN;
	}
	*ids = val;
	return err;
}

/* Adds (add) or removes id in its index record, inside tx. */
static wfs_err index_update(struct filer *f, struct filer_tx *tx, const char *id, bool add)
{
	char key[16], *ids = NULL;
	size_t klen = index_key(id, key), len = 0, i;
	wfs_err err = index_get(f, tx, key, klen, &ids, &len);
	if (err)
		return err;
	for (i = 0; i < len; i += TUS_ID_LEN)
		if (!memcmp(ids + i, id, TUS_ID_LEN))
			break;
	if (add && i == len) {
		if (len / TUS_ID_LEN >= TUS_INDEX_MAX) {
			free(ids);
			return WFS_ETOOBIG;
		}
		ids = xrealloc(ids, len + TUS_ID_LEN);
		memcpy(ids + len, id, TUS_ID_LEN);
		err = filer_store_kv_put(f->store, tx, key, klen, ids, len + TUS_ID_LEN);
	} else if (!add && i < len) {
		memmove(ids + i, ids + i + TUS_ID_LEN, len - i - TUS_ID_LEN);
		len -= TUS_ID_LEN;
		err = len ? filer_store_kv_put(f->store, tx, key, klen, ids, len)
			  : filer_store_kv_delete(f->store, tx, key, klen);
	}
	free(ids);
	return err;
}

/* ---- expiry ---- */

static int64_t session_expires_ns(const struct filer *f, const struct tus_session *s)
{
	/* a "TUS1" record (touched 0) predates expiry: it counts as expired */
	return s->touched_ns + f->tus_expire_s * 1000000000;
}

static bool session_expired(const struct filer *f, const struct tus_session *s)
{
	return session_expires_ns(f, s) <= (int64_t)time_now_ns();
}

/*
 * Removes session id (when only_expired, only if it expired), its chunks to
 * the garbage queue, in one transaction under tus_lock; *removed tells whether
 * it went. WFS_ENOENT if there is none (a stale index entry is dropped).
 * Worker or sweeper thread.
 */
static wfs_err session_remove(struct filer *f, const char *id, bool only_expired, bool *removed)
{
	struct ns_result res = {0};
	struct ns_tx nt;
	struct tus_session s = {0};
	wfs_err err;

	*removed = false;
	pthread_mutex_lock(&tus_lock);
	ns_tx_init(&nt, f, 0, &res); /* the session's records only: no path lock */
	err = ns_begin(&nt);
	if (!err)
		err = session_load(f, nt.tx, id, &s);
	if (err == WFS_ENOENT) {
		wfs_err e2 = index_update(f, nt.tx, id, false);
		if (!e2)
			e2 = ns_commit(&nt);
		if (e2)
			err = e2;
	} else if (!err && (!only_expired || session_expired(f, &s))) {
		for (size_t i = 0; i < s.n; i++)
			ns_garbage_add(&nt.g, &s.chunks[i]);
		err = session_delete(f, nt.tx, id);
		if (!err)
			err = index_update(f, nt.tx, id, false);
		if (!err)
			err = ns_commit(&nt);
		*removed = !err;
	}
	ns_end(&nt);
	pthread_mutex_unlock(&tus_lock);
	if (*removed && only_expired)
		log_info("tus: upload %s to %s expired (%" PRIu64 " of %" PRIu64 " bytes, %zu chunks)",
			 id, s.target, s.offset, s.length, s.n);
	tus_session_clear(&s);
	return err;
}

size_t filer_tus_sweep(struct filer *f)
{
	size_t removed = 0;
	for (unsigned b = 0; b < 256; b++) {
		char key[16], *ids = NULL, id[TUS_ID_LEN + 1];
		size_t klen, len = 0;
		wfs_err err;
		snprintf(id, sizeof(id), "%02x", b);
		klen = index_key(id, key);
		err = index_get(f, NULL, key, klen, &ids, &len);
		for (size_t i = 0; !err && i < len; i += TUS_ID_LEN) {
			struct tus_session s;
			bool gone;
			memcpy(id, ids + i, TUS_ID_LEN);
			id[TUS_ID_LEN] = '\0';
			err = session_load(f, NULL, id, &s);
			if (err == WFS_ENOENT || (!err && session_expired(f, &s))) {
				err = session_remove(f, id, true, &gone);
				removed += gone;
			}
			if (err == WFS_ENOENT)
				err = WFS_OK;
			if (err == WFS_ECORRUPT) {
				log_warn("tus: session %s is corrupt; left alone", id);
				err = WFS_OK;
			}
			tus_session_clear(&s);
		}
		free(ids);
		if (err) {
			log_warn("tus sweep stopped early: %s", wfs_strerror(err));
			break;
		}
	}
	return removed;
}

/* An RFC 7231 IMF-fixdate. */
static void http_date(int64_t ns, char out[40])
{
	static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
	static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
					   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	gmtime_r(&t, &tm);
	snprintf(out, 40, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday % 7], tm.tm_mday,
		 months[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* ---- request state ---- */

struct tus_req {
	struct filer_live live; /* first: drop() casts back */
	struct fjob *j;
	char id[TUS_ID_LEN + 1];
	struct tus_session s; /* POST: the new session */
	/* PATCH */
	uint64_t start, length;
	struct body_chunks *bc;
};

static void tus_req_free(struct tus_req *t)
{
	filer_live_remove(t->j->f, &t->live);
	body_chunks_free(t->bc);
	tus_session_clear(&t->s);
	free(t);
}

static void tus_drop(struct filer_live *l)
{
	struct tus_req *t = (struct tus_req *)l;
	struct fjob *j = t->j;
	tus_req_free(t);
	fjob_free(j);
}

static struct tus_req *tus_req_new(struct filer *f, http_req *req)
{
	struct tus_req *t = xcalloc(1, sizeof(*t));
	t->j = fjob_new(f, req, "/", false);
	t->j->ext = t;
	t->live.drop = tus_drop;
	filer_live_add(f, &t->live);
	return t;
}

/* Sends the job's response and frees t. Loop thread. */
static void tus_respond(http_req *req, void *arg)
{
	struct tus_req *t = arg;
	struct fjob *j = t->j;
	(void)req;
	tus_req_free(t);
	fjob_respond(j);
}

static void tus_offset_header(struct fjob *j, uint64_t off)
{
	char v[24];
	snprintf(v, sizeof(v), "%" PRIu64, off);
	fjob_resp_header(j, "Upload-Offset", v);
}

static void tus_expires_header(struct fjob *j, const struct tus_session *s)
{
	char v[40];
	http_date(session_expires_ns(j->f, s), v);
	fjob_resp_header(j, "Upload-Expires", v);
}

/* Runs fn on a pool; answers 503 when the filer is stopping. Loop thread. */
static void tus_submit(struct tus_req *t, bool io, pool_fn fn)
{
	if (!filer_submit(t->j->f, io, fn, t)) {
		fjob_error(t->j, 503, "filer is stopping");
		tus_respond(t->j->req, t);
	}
}

static uint64_t tus_max_size(const struct filer *f) { return f->chunk_size * TUS_CHUNKS_MAX; }

/* ---- completing: the entry at the target ---- */

/*
 * Inside nt (tus_lock and the target's path lock held, the path lock taken
 * before the transaction began, as namespace.h requires): makes the file s
 * describes at its target, deletes session id and commits nt. Sets the job's
 * error on failure (nt is rolled back then). Worker thread.
 */
static wfs_err finalize(struct tus_req *t, struct ns_tx *nt, struct tus_session *s)
{
	struct fjob *j = t->j;
	struct filer *f = j->f;
	struct filer_tx *tx = nt->tx;
	struct filer_entry *old = NULL, *e = NULL;
	struct filer_chunk *packed = NULL, *list = s->chunks;
	size_t npacked = 0, nlist = s->n;
	char *dir = NULL, *name = NULL;
	int64_t now = (int64_t)time_now_ns();
	wfs_err err;

	err = filer_path_split(s->target, &dir, &name);
	if (err) {
		fjob_error(j, 400, "invalid target path");
		goto out;
	}
	if (s->n > TUS_MANIFEST_MAX) {
		struct chunk_writer_opts o = {.chunk_size = f->chunk_size,
					      .collection = *f->collection ? f->collection : NULL,
					      .replication =
						      *f->replication ? f->replication : NULL};
		err = chunk_manifestize(f->bc, &o, s->chunks, s->n, TUS_MANIFEST_MAX, &packed,
					&npacked);
		if (err) {
			fjob_error(j, 503, "could not store the chunk manifest: %s",
				   wfs_strerror(err));
			goto out;
		}
		list = packed;
		nlist = npacked;
	}
	err = filer_write_target(j, tx, &nt->evs, dir, name, true, &old);
	if (err)
		goto out;
	if (old) {
		/* a linked name leaves its group; the last name frees the shared chunks */
		err = filer_hardlink_release(f->store, tx, old);
		if (err) {
			fjob_store_error(j, err, "dropping a hard link");
			goto out;
		}
	}
	e = filer_entry_new(dir, name);
	e->attr.mode = S_IFREG | 0660;
	e->attr.crtime_ns = old ? old->attr.crtime_ns : now;
	e->attr.mtime_ns = e->attr.ctime_ns = now;
	e->attr.nlink = 1;
	e->attr.size = s->length;
	if (*f->collection)
		e->attr.collection = xstrdup(f->collection);
	if (*f->replication)
		e->attr.replication = xstrdup(f->replication);
	for (size_t i = 0; i < nlist; i++)
		filer_entry_push_chunk(e, &list[i]);
	err = filer_entry_check(e);
	if (err) {
		fjob_error(j, 400, "entry out of bounds (too many chunks)");
		goto out;
	}
	err = old ? filer_store_update(f->store, tx, e) : filer_store_insert(f->store, tx, e);
	if (!err && old)
		ns_garbage_entry(&nt->g, old);
	if (!err) {
		err = session_delete(f, tx, t->id);
		if (err == WFS_ENOENT) /* an empty upload never stored a session */
			err = WFS_OK;
		else if (!err)
			err = index_update(f, tx, t->id, false);
	}
	if (err) {
		fjob_store_error(j, err, "saving the entry");
		goto out;
	}
	filer_evs_add(&nt->evs, old, e);
	err = ns_commit(nt);
	if (err) {
		fjob_ns_error(j, nt->res);
		goto out;
	}
	log_debug("tus upload %s complete: %s (%" PRIu64 " bytes)", t->id, s->target, s->length);
out:
	if (err)
		ns_rollback(nt); /* before the writes without a transaction below */
	if (err && npacked) {
		/* only the manifest blobs go: their members still belong to the session */
		const char **fids = xcalloc(npacked, sizeof(*fids));
		for (size_t i = 0; i < npacked; i++)
			fids[i] = packed[i].fid;
		if (filer_store_gc_enqueue(f->store, NULL, fids, npacked, 0))
			log_warn("could not queue %zu unused manifest chunks", npacked);
		filer_gc_kick(f);
		free(fids);
	}
	filer_chunks_free(packed, npacked);
	filer_entry_free(old);
	filer_entry_free(e);
	free(dir);
	free(name);
	return err;
}

/* ---- POST: creation ---- */

static bool id_new(char *id)
{
	uint8_t r[TUS_ID_BYTES];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return false;
	hex_encode(r, sizeof(r), id);
	return true;
}

static void create_run(void *arg)
{
	struct tus_req *t = arg;
	struct fjob *j = t->j;
	struct ns_result res = {0};
	struct ns_tx nt;
	char loc[sizeof(TUS_UPLOADS) + TUS_ID_LEN];
	wfs_err err;

	if (!id_new(t->id)) {
		fjob_error(j, 503, "no randomness for an upload id");
		goto out;
	}
	pthread_mutex_lock(&tus_lock);
	ns_tx_init(&nt, j->f, j->signature, &res);
	if (t->s.length == 0) {
		/* nothing to wait for: the empty file exists at once */
		ns_lock_path(&nt, t->s.target);
		err = ns_begin(&nt);
		if (!err)
			err = finalize(t, &nt, &t->s);
		else
			fjob_ns_error(j, &res);
	} else {
		err = ns_begin(&nt);
		t->s.touched_ns = (int64_t)time_now_ns();
		if (!err)
			err = session_save(j->f, nt.tx, t->id, &t->s);
		if (!err)
			err = index_update(j->f, nt.tx, t->id, true);
		if (!err)
			err = ns_commit(&nt);
		if (!err)
			tus_expires_header(j, &t->s);
		else
			fjob_store_error(j, err, "saving the upload session");
	}
	ns_end(&nt);
	pthread_mutex_unlock(&tus_lock);
	if (err)
		goto out;
	snprintf(loc, sizeof(loc), "%s%s", TUS_UPLOADS, t->id);
	fjob_resp_header(j, "Location", loc);
	tus_offset_header(j, 0);
	j->status = 201;
out:
	http_req_defer(j->req, tus_respond, t);
}

static void handle_create(struct filer *f, http_req *req, const char *raw)
{
	const char *ls = http_req_header(req, "Upload-Length");
	const char *md = http_req_header(req, "Upload-Metadata");
	char *path = NULL;
	uint64_t len;
	bool trailing;
	struct tus_req *t;

	if (http_req_header(req, "Upload-Defer-Length")) {
		http_resp_error(req, 400, "Upload-Defer-Length is not supported");
		return;
	}
	if (!ls || !parse_u64(ls, &len)) {
		http_resp_error(req, 400, "missing or malformed Upload-Length");
		return;
	}
	if (len > tus_max_size(f)) {
		http_resp_error(req, 413, "Upload-Length over Tus-Max-Size %" PRIu64,
				tus_max_size(f));
		return;
	}
	if (md && !tus_metadata_valid(md)) {
		http_resp_error(req, 400, "malformed Upload-Metadata");
		return;
	}
	if (http_req_content_length(req) > 0) {
		http_resp_error(req, 400, "creation-with-upload is not supported: PATCH the data");
		return;
	}
	if (filer_path_normalize(*raw ? raw : "/", &path, &trailing) || trailing ||
	    !strcmp(path, "/")) {
		free(path);
		http_resp_error(req, 400, "POST %s<path of a file to create>", TUS_PREFIX);
		return;
	}
	t = tus_req_new(f, req);
	t->s.target = path;
	t->s.length = len;
	t->s.meta = xstrdup(md ? md : "");
	tus_submit(t, false, create_run);
}

/* ---- HEAD and DELETE ---- */

static void head_run(void *arg)
{
	struct tus_req *t = arg;
	struct fjob *j = t->j;
	struct tus_session s;
	char v[24];
	wfs_err err = session_load(j->f, NULL, t->id, &s);
	bool gone;

	fjob_resp_header(j, "Cache-Control", "no-store");
	if (!err && session_expired(j->f, &s)) {
		tus_session_clear(&s);
		err = session_remove(j->f, t->id, true, &gone);
		if (!err)
			err = WFS_ENOENT;
	}
	if (err == WFS_ENOENT) {
		j->status = 404;
	} else if (err) {
		fjob_store_error(j, err, "loading the upload session");
	} else {
		tus_offset_header(j, s.offset);
		snprintf(v, sizeof(v), "%" PRIu64, s.length);
		fjob_resp_header(j, "Upload-Length", v);
		if (*s.meta)
			fjob_resp_header(j, "Upload-Metadata", s.meta);
		tus_expires_header(j, &s);
		j->status = 200;
		tus_session_clear(&s);
	}
	http_req_defer(j->req, tus_respond, t);
}

static void delete_run(void *arg)
{
	struct tus_req *t = arg;
	struct fjob *j = t->j;
	bool gone;
	wfs_err err = session_remove(j->f, t->id, false, &gone);

	if (err == WFS_ENOENT)
		fjob_error(j, 404, "no such upload");
	else if (err)
		fjob_store_error(j, err, "terminating the upload");
	else
		j->status = 204;
	http_req_defer(j->req, tus_respond, t);
}

/* ---- PATCH ---- */

/* Records the PATCH's chunks in the session (and completes it). I/O pool. */
static bool patch_commit(void *arg, struct filer_chunk *chunks, size_t n, uint64_t size)
{
	struct tus_req *t = arg;
	struct fjob *j = t->j;
	struct filer *f = j->f;
	struct ns_result res = {0};
	struct ns_tx nt;
	struct tus_session s = {0};
	char *target = NULL; /* path-locked: this PATCH completes the upload */
	wfs_err err;

	pthread_mutex_lock(&tus_lock);
	ns_tx_init(&nt, f, j->signature, &res);
	/* this filer changes sessions only under tus_lock, so the transaction's read below
	   finds the same (another filer sharing the store may race: see there) */
	if (!session_load(f, NULL, t->id, &s) && s.offset == t->start &&
	    s.offset + size == s.length) {
		target = xstrdup(s.target);
		ns_lock_path(&nt, target); /* before the transaction (finalize) */
	}
	tus_session_clear(&s);
	err = ns_begin(&nt);
	if (!err)
		err = session_load(f, nt.tx, t->id, &s);
	if (err == WFS_ENOENT) {
		fjob_error(j, 404, "the upload was terminated, completed or expired meanwhile");
	} else if (err) {
		fjob_store_error(j, err, "loading the upload session");
	} else if (s.offset != t->start) {
		err = WFS_EEXIST;
		tus_offset_header(j, s.offset);
		fjob_error(j, 409, "a concurrent PATCH moved the offset to %" PRIu64, s.offset);
	} else {
		s.chunks = xrealloc(s.chunks, (s.n + n + 1) * sizeof(*s.chunks));
		for (size_t i = 0; i < n; i++)
			filer_chunk_copy(&s.chunks[s.n + i], &chunks[i]);
		s.n += n;
		s.offset += size;
		s.touched_ns = (int64_t)time_now_ns();
		err = body_chunks_claim(t->bc, nt.tx);
		if (err) {
			fjob_store_error(j, err, "claiming the uploaded chunks");
		} else if (s.offset == s.length) {
			if (target && !strcmp(target, s.target)) {
				err = finalize(t, &nt, &s);
			} else { /* another filer on the same store moved it between the reads */
				err = WFS_EINTERNAL;
				fjob_error(j, 503, "the upload changed meanwhile: retry the PATCH");
			}
		} else {
			err = session_save(f, nt.tx, t->id, &s);
			if (!err)
				err = ns_commit(&nt);
			if (err)
				fjob_store_error(j, err, "saving the upload session");
			else
				tus_expires_header(j, &s);
		}
		if (!err) {
			tus_offset_header(j, s.offset);
			j->status = 204;
		}
	}
	ns_end(&nt);
	free(target);
	pthread_mutex_unlock(&tus_lock);
	if (!err) {
		/* the session (or the entry) references them now */
		filer_chunks_free(chunks, n);
		chunks = NULL;
		n = 0;
	}
	filer_free_chunks(f, chunks, n);
	tus_session_clear(&s);
	return !err;
}

static void patch_respond(void *arg)
{
	struct tus_req *t = arg;
	tus_respond(t->j->req, t);
}

static void patch_end(void *arg, wfs_err err)
{
	struct tus_req *t = arg;
	if (err == WFS_ETOOBIG)
		body_chunks_fail(t->bc, 413, "the body goes past Upload-Length %" PRIu64,
				 t->length);
	else if (err)
		body_chunks_fail(t->bc, 400, "body interrupted: %s", wfs_strerror(err));
}

static const struct body_chunks_ops patch_ops = {
	.what = "the data",
	.journal = true,
	.end = patch_end,
	.commit = patch_commit,
	.respond = patch_respond,
};

/* After the offset check: streams the body or answers. Loop thread. */
static void patch_checked(http_req *req, void *arg)
{
	struct tus_req *t = arg;
	struct filer *f = t->j->f;
	int64_t cl = http_req_content_length(req);
	struct chunk_writer_opts cwo = {0};
	wfs_err err;

	if (t->j->status != 100) {
		tus_respond(req, t);
		return;
	}
	if (cl >= 0 && (uint64_t)cl > t->length - t->start) {
		fjob_error(t->j, 413, "the body goes past Upload-Length %" PRIu64, t->length);
		tus_respond(req, t);
		return;
	}
	cwo.chunk_size = f->chunk_size;
	cwo.encrypt = f->encrypt;
	cwo.offset = t->start;
	cwo.collection = *f->collection ? f->collection : NULL;
	cwo.replication = *f->replication ? f->replication : NULL;
	t->bc = body_chunks_new(t->j, &cwo, &patch_ops, t, &err);
	if (!t->bc) {
		fjob_error(t->j, 500, "chunk writer: %s", wfs_strerror(err));
		tus_respond(req, t);
		return;
	}
	body_chunks_start(t->bc, t->length - t->start);
}

static void patch_check_run(void *arg)
{
	struct tus_req *t = arg;
	struct fjob *j = t->j;
	struct tus_session s;
	wfs_err err = session_load(j->f, NULL, t->id, &s);
	bool gone;

	if (!err && session_expired(j->f, &s)) {
		tus_session_clear(&s);
		err = session_remove(j->f, t->id, true, &gone);
		if (!err)
			err = WFS_ENOENT;
	}
	if (err == WFS_ENOENT) {
		fjob_error(j, 404, "no such upload");
	} else if (err) {
		fjob_store_error(j, err, "loading the upload session");
	} else {
		if (s.offset != t->start) {
			tus_offset_header(j, s.offset);
			fjob_error(j, 409,
				   "Upload-Offset %" PRIu64 " is not the upload's offset %" PRIu64,
				   t->start, s.offset);
		} else if (s.n >= TUS_SESSION_CAP) {
			fjob_error(j, 400, "too many pieces in this upload");
		} else {
			t->length = s.length;
			j->status = 100; /* go on: stream the body */
		}
		tus_session_clear(&s);
	}
	http_req_defer(j->req, patch_checked, t);
}

static void handle_patch(struct filer *f, http_req *req, const char *id)
{
	const char *ct = http_req_header(req, "Content-Type");
	const char *os = http_req_header(req, "Upload-Offset");
	uint64_t off;
	struct tus_req *t;

	if (!os || !parse_u64(os, &off)) {
		http_resp_error(req, 400, "missing or malformed Upload-Offset");
		return;
	}
	if (!ct || strcasecmp(ct, "application/offset+octet-stream")) {
		http_resp_error(req, 415,
				"PATCH takes Content-Type application/offset+octet-stream");
		return;
	}
	t = tus_req_new(f, req);
	memcpy(t->id, id, TUS_ID_LEN + 1);
	t->start = off;
	tus_submit(t, false, patch_check_run);
}

/* ---- routing ---- */

static bool id_valid(const char *id)
{
	size_t n = strlen(id);
	if (n != TUS_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

bool filer_tus_route(struct filer *f, http_req *req)
{
	const char *raw = http_req_path(req), *v, *id = NULL;
	enum http_method m = http_req_method(req);
	char max[24];
	struct tus_req *t;

	if (strncmp(raw, TUS_PREFIX, 5) || (raw[5] && raw[5] != '/'))
		return false;
	http_resp_header(req, "Tus-Resumable", TUS_VERSION);
	if (m == HTTP_OPTIONS) {
		snprintf(max, sizeof(max), "%" PRIu64, tus_max_size(f));
		http_resp_header(req, "Tus-Version", TUS_VERSION);
		http_resp_header(req, "Tus-Extension", "creation,termination,expiration");
		http_resp_header(req, "Tus-Max-Size", max);
		http_resp_header(req, "Access-Control-Allow-Methods",
				 "POST, HEAD, PATCH, DELETE, OPTIONS");
		http_resp_header(req, "Access-Control-Allow-Headers", "*");
		http_resp_header(req, "Access-Control-Expose-Headers",
				 "Location, Upload-Offset, Upload-Length, Upload-Metadata, "
				 "Upload-Expires, Tus-Resumable, Tus-Version, Tus-Extension, "
				 "Tus-Max-Size");
		http_resp_send(req, 204, NULL, 0);
		return true;
	}
	v = http_req_header(req, "Tus-Resumable");
	if (!v || strcmp(v, TUS_VERSION)) {
		http_resp_header(req, "Tus-Version", TUS_VERSION);
		http_resp_error(req, 412, "Tus-Resumable: %s required", TUS_VERSION);
		return true;
	}
	if (m == HTTP_POST) {
		handle_create(f, req, raw + 5);
		return true;
	}
	if (!strncmp(raw, TUS_UPLOADS, strlen(TUS_UPLOADS)))
		id = raw + strlen(TUS_UPLOADS);
	if (m != HTTP_HEAD && m != HTTP_PATCH && m != HTTP_DELETE) {
		http_resp_header(req, "Allow", "POST, HEAD, PATCH, DELETE, OPTIONS");
		http_resp_error(req, 405, "method %s not allowed here", http_req_method_str(req));
		return true;
	}
	if (!id || !id_valid(id)) {
		http_resp_error(req, 404, "no such upload");
		return true;
	}
	if (m == HTTP_PATCH) {
		handle_patch(f, req, id);
		return true;
	}
	t = tus_req_new(f, req);
	memcpy(t->id, id, TUS_ID_LEN + 1);
	tus_submit(t, false, m == HTTP_HEAD ? head_run : delete_run);
	return true;
}
