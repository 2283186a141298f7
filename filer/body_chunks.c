/*
 * A request body streamed into a chunk writer (body_chunks.h).
 *
 * DESIGN
 * - Bytes collect in `fill` on the loop thread; once it holds PIECE bytes an
 *   I/O job hands them to the chunk writer (chunk_io.h), which cuts chunks and
 *   uploads several in parallel, blocking the job while its uploads are full.
 *   Meanwhile the loop fills the next piece; if that fills too before the job
 *   is back, the body is paused and resumed when it returns. A body thus
 *   holds two pieces plus the writer's bounded buffers, whatever its size.
 * - At most one job is in flight and respond is called only when none is,
 *   so a job never outlives its request.
 * - Crash safety: after a write job that cut a chunk, the chunks uploaded so
 *   far that are not yet recorded go into the persistent garbage queue, due
 *   only when a lease (1 h) runs out; the lease is renewed while the body
 *   lasts. The owner's commit takes them off the queue in the transaction
 *   that references them (body_chunks_claim); a failed commit or an aborted
 *   body makes them due at once. Recording waits for the writer's running
 *   uploads, which would serialise a fast body's uploads, so while the body
 *   is ahead of the job (the next piece already waits) it records at most
 *   once a second; a body that stalls or trickles records after every cut.
 *   A filer killed mid-body thus leaks at most the chunks still uploading,
 *   those cut in the last second of a fast body, or the tail cut by the
 *   commit job itself; the queue deletes the others when the lease runs out
 *   after the restart.
 * - The garbage queue is only touched when a chunk was cut while the body
 *   streamed: a body that fits one chunk costs no extra transaction.
 * - Recording is the owner's choice (ops->journal): TUS PATCH records; PUT
 *   does not yet, because waiting for the running uploads at each record
 *   cost about half the throughput of large PUTs (a record that takes only
 *   the finished uploads, without waiting, needs chunk_io.h support).
 *
 * Testing hook: WEEDFS_FILER_UPLOAD_LEASE_SECONDS (read once) sets the lease.
 */
#include "config.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "filer/body_chunks.h"
#include "filer/store_impl.h"
#include "log.h"
#include "util.h"

#define PIECE           (1u << 20)
#define LEASE_DEFAULT_S 3600
#define JOURNAL_GAP_NS  1000000000LL

struct body_chunks {
	struct fjob *j;
	const struct body_chunks_ops *ops;
	void *owner;
	chunk_writer *cw;
	uint64_t chunk_size;
	buf fill, wbuf;
	bool inflight, body_done;
	bool paused; /* a full piece waits for the job; atomic: jobs read it */
	int status;  /* a failure to answer, 0 while all is well */
	char errmsg[300];
	wfs_err job_err;
	/* the journal: chunks recorded in the garbage queue (I/O jobs only) */
	char **fids;
	size_t nfids, capfids;
	uint64_t journaled_cuts; /* chunk_size units written when last recorded */
	int64_t journaled_ns;    /* when */
	int64_t lease_until_ns;  /* the earliest lease among the recorded */
	bool claimed;
};

static pthread_once_t lease_once = PTHREAD_ONCE_INIT;
static int64_t lease_ns;

static void lease_init(void)
{
	const char *s = getenv("WEEDFS_FILER_UPLOAD_LEASE_SECONDS");
	int64_t v = LEASE_DEFAULT_S;
	if (s && *s && (!parse_i64(s, &v) || v < 1 || v > 30 * 86400)) {
		log_warn("ignoring WEEDFS_FILER_UPLOAD_LEASE_SECONDS=%s (1..2592000)", s);
		v = LEASE_DEFAULT_S;
	}
	lease_ns = v * 1000000000;
}

/* ---- the journal (I/O pool) ---- */

/* Calls fn on runs of at most FILER_GC_BATCH_MAX recorded ids; stops at an error. */
static wfs_err in_batches(struct body_chunks *b, size_t from,
			  wfs_err (*fn)(struct body_chunks *b, struct filer_tx *tx,
					const char *const *fids, size_t n, int64_t due),
			  struct filer_tx *tx, int64_t due)
{
	wfs_err err = WFS_OK;
	for (size_t i = from; i < b->nfids && !err; i += FILER_GC_BATCH_MAX) {
		size_t n = MIN(b->nfids - i, (size_t)FILER_GC_BATCH_MAX);
		err = fn(b, tx, (const char *const *)b->fids + i, n, due);
	}
	return err;
}

static wfs_err do_enqueue(struct body_chunks *b, struct filer_tx *tx, const char *const *fids,
			  size_t n, int64_t due)
{
	return filer_store_gc_enqueue(b->j->f->store, tx, fids, n, due);
}

static wfs_err do_defer(struct body_chunks *b, struct filer_tx *tx, const char *const *fids,
			size_t n, int64_t due)
{
	(void)tx;
	return filer_store_gc_defer(b->j->f->store, fids, n, due);
}

/*
 * Removes ids from the queue inside the caller's transaction. store.h offers
 * gc_done only in a transaction of its own, so this goes to the backend's
 * operation directly (the ids are valid: they came from the chunk writer).
 */
static wfs_err do_done(struct body_chunks *b, struct filer_tx *tx, const char *const *fids,
		       size_t n, int64_t due)
{
	struct filer_store *s = b->j->f->store;
	(void)due;
	return s->ops->gc_done(s, tx, fids, n);
}

/* Records the chunks uploaded so far, renewing the lease when half of it is gone. */
static void journal(struct body_chunks *b)
{
	struct filer_chunk *c = NULL;
	size_t n = 0, old = b->nfids;
	int64_t now = (int64_t)time_now_ns();
	wfs_err err = WFS_OK;

	pthread_once(&lease_once, lease_init);
	chunk_writer_uploaded(b->cw, &c, &n);
	/* the writer appends to its list as uploads finish: ours is a prefix */
	for (size_t i = old; i < n; i++) {
		if (b->nfids == b->capfids) {
			b->capfids = b->capfids ? 2 * b->capfids : 16;
			b->fids = xrealloc(b->fids, b->capfids * sizeof(*b->fids));
		}
		b->fids[b->nfids++] = xstrdup(c[i].fid);
	}
	filer_chunks_free(c, n);
	if (old && now >= b->lease_until_ns - lease_ns / 2) {
		err = in_batches(b, 0, do_defer, NULL, now + lease_ns);
		if (!err)
			b->lease_until_ns = now + lease_ns;
	}
	if (!err && b->nfids > old) {
		err = in_batches(b, old, do_enqueue, NULL, now + lease_ns);
		if (!err && !old)
			b->lease_until_ns = now + lease_ns;
	}
	if (err)
		log_warn("could not record %zu uploaded chunks in the garbage queue: %s",
			 b->nfids - old, wfs_strerror(err));
}

/* Makes the recorded chunks due now: nothing references them (a failure). */
static void journal_release(struct body_chunks *b)
{
	wfs_err err;
	if (!b->nfids || b->claimed)
		return;
	err = in_batches(b, 0, do_defer, NULL, (int64_t)time_now_ns());
	if (err)
		log_warn("could not free %zu recorded chunks now (freed when their lease ends): %s",
			 b->nfids, wfs_strerror(err));
	filer_gc_kick(b->j->f);
}

wfs_err body_chunks_claim(struct body_chunks *b, struct filer_tx *tx)
{
	wfs_err err = in_batches(b, 0, do_done, tx, 0);
	if (!err)
		b->claimed = true;
	return err;
}

/* ---- jobs ---- */

static void pump(struct body_chunks *b);

void body_chunks_fail(struct body_chunks *b, int status, const char *fmt, ...)
{
	va_list ap;
	if (b->status)
		return;
	b->status = status;
	va_start(ap, fmt);
	vsnprintf(b->errmsg, sizeof(b->errmsg), fmt, ap);
	va_end(ap);
}

static void respond_cb(http_req *req, void *arg)
{
	struct body_chunks *b = arg;
	(void)req;
	b->ops->respond(b->owner);
}

static void job_done(http_req *req, void *arg)
{
	struct body_chunks *b = arg;
	(void)req;
	b->inflight = false;
	if (b->job_err)
		body_chunks_fail(b, b->job_err == WFS_EINVAL ? 400 : 503, "could not store %s: %s",
				 b->ops->what, wfs_strerror(b->job_err));
	pump(b);
}

static void job_write(void *arg)
{
	struct body_chunks *b = arg;
	uint64_t cuts;
	b->job_err = chunk_writer_write(b->cw, b->wbuf.data, b->wbuf.len);
	buf_reset(&b->wbuf);
	cuts = chunk_writer_size(b->cw) / b->chunk_size;
	/*
	 * Recording waits for the running uploads, so a fast body (the next
	 * piece already waits, and another job follows at once) records at most
	 * every JOURNAL_GAP; a body that is not ahead records at once.
	 */
	if (b->ops->journal && !b->job_err && cuts > b->journaled_cuts &&
	    (!__atomic_load_n(&b->paused, __ATOMIC_ACQUIRE) ||
	     (int64_t)time_now_ns() - b->journaled_ns >= JOURNAL_GAP_NS)) {
		journal(b);
		b->journaled_cuts = cuts;
		b->journaled_ns = (int64_t)time_now_ns();
	}
	http_req_defer(b->j->req, job_done, b);
}

static void job_commit(void *arg)
{
	struct body_chunks *b = arg;
	struct filer_chunk *chunks = NULL;
	size_t n = 0;
	uint64_t size;
	wfs_err err;

	err = b->wbuf.len ? chunk_writer_write(b->cw, b->wbuf.data, b->wbuf.len) : WFS_OK;
	buf_reset(&b->wbuf);
	size = chunk_writer_size(b->cw);
	if (!err)
		err = chunk_writer_finish(b->cw, &chunks, &n);
	if (err)
		fjob_error(b->j, err == WFS_EINVAL ? 400 : 503, "could not store %s: %s",
			   b->ops->what, wfs_strerror(err));
	else if (b->ops->commit(b->owner, chunks, n, size))
		b->claimed = true;
	journal_release(b);
	http_req_defer(b->j->req, respond_cb, b);
}

static void job_abort(void *arg)
{
	struct body_chunks *b = arg;
	chunk_writer_free(b->cw); /* deletes what was uploaded */
	b->cw = NULL;
	journal_release(b);
	fjob_error(b->j, b->status, "%s", b->errmsg);
	http_req_defer(b->j->req, respond_cb, b);
}

/* Hands fill to a job. Loop thread; nothing in flight. */
static void submit(struct body_chunks *b, pool_fn fn)
{
	buf t = b->wbuf;
	b->wbuf = b->fill;
	b->fill = t;
	buf_reset(&b->fill);
	b->inflight = true;
	if (!filer_submit(b->j->f, true, fn, b)) {
		b->inflight = false;
		body_chunks_fail(b, 503, "filer is stopping");
	}
}

/*
 * Moves the body on after any change: a failure aborts the writer then
 * answers, a complete body commits, a full piece is written, a paused body
 * resumes. May free b (through respond): nothing touches b after it.
 */
static void pump(struct body_chunks *b)
{
	if (b->inflight)
		return;
	if (b->status) {
		b->inflight = true;
		if (!filer_submit(b->j->f, true, job_abort, b)) {
			fjob_error(b->j, b->status, "%s", b->errmsg);
			b->ops->respond(b->owner);
		}
		return;
	}
	if (b->body_done) {
		submit(b, job_commit);
		if (!b->inflight)
			pump(b);
		return;
	}
	if (b->fill.len >= PIECE) {
		submit(b, job_write);
		if (!b->inflight) {
			pump(b);
			return;
		}
	}
	if (__atomic_load_n(&b->paused, __ATOMIC_RELAXED) && b->fill.len < PIECE) {
		__atomic_store_n(&b->paused, false, __ATOMIC_RELEASE);
		http_req_resume_body(b->j->req);
	}
}

void body_chunks_append(struct body_chunks *b, const char *data, size_t len)
{
	buf_append(&b->fill, data, len);
}

static bool on_data(http_req *req, const char *data, size_t len, void *arg)
{
	struct body_chunks *b = arg;
	(void)req;
	if (b->status)
		return true; /* failing: drain quietly until the job is back */
	if (b->ops->feed)
		b->ops->feed(b->owner, data, len);
	else
		body_chunks_append(b, data, len);
	if (b->status) {
		pump(b); /* may free b */
		return false;
	}
	if (b->fill.len >= PIECE && !b->inflight)
		submit(b, job_write);
	if (b->status) {
		pump(b);
		return false;
	}
	if (b->fill.len >= PIECE) {
		__atomic_store_n(&b->paused, true, __ATOMIC_RELEASE);
		return false;
	}
	return true;
}

static void on_end(http_req *req, wfs_err err, void *arg)
{
	struct body_chunks *b = arg;
	(void)req;
	b->body_done = true;
	b->ops->end(b->owner, err);
	pump(b);
}

/* ---- life cycle ---- */

struct body_chunks *body_chunks_new(struct fjob *j, const struct chunk_writer_opts *o,
				    const struct body_chunks_ops *ops, void *owner, wfs_err *err)
{
	struct body_chunks *b = xcalloc(1, sizeof(*b));
	b->cw = chunk_writer_new(j->f->bc, o, err);
	if (!b->cw) {
		free(b);
		return NULL;
	}
	b->j = j;
	b->ops = ops;
	b->owner = owner;
	b->chunk_size = o->chunk_size ? o->chunk_size : CHUNK_SIZE_DEFAULT;
	return b;
}

void body_chunks_start(struct body_chunks *b, uint64_t limit)
{
	http_req_stream_body(b->j->req, limit, on_data, on_end, b);
}

bool body_chunks_inline(const struct body_chunks *b, const uint8_t **data, size_t *len)
{
	return chunk_writer_inline(b->cw, data, len);
}

void body_chunks_free(struct body_chunks *b)
{
	if (!b)
		return;
	chunk_writer_free(b->cw);
	buf_free(&b->fill);
	buf_free(&b->wbuf);
	for (size_t i = 0; i < b->nfids; i++)
		free(b->fids[i]);
	free(b->fids);
	free(b);
}
