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
 * - Crash safety: the moment a chunk's blob is stored, the upload worker
 *   records its file id in the persistent garbage queue, due only when a
 *   lease (1 h) runs out (chunk_writer_opts.on_uploaded); write jobs renew
 *   the lease while the body lasts. The owner's commit takes the ids off the
 *   queue in the transaction that references them (body_chunks_claim); a
 *   failed commit or an aborted body makes them due at once. A filer killed
 *   mid-body thus leaks only a blob stored in the instant before its record;
 *   the queue deletes the rest when the lease runs out after the restart.
 *   Recording costs one small store transaction per chunk, on the upload
 *   worker, so it never holds the body back.
 * - A body that fits one chunk costs no extra transaction: the tail chunk is
 *   cut by the commit job, which is not recorded (the commit follows at once).
 * - Recording is the owner's choice (ops->journal); PUT and TUS PATCH both
 *   record.
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
#include "filer/gc_queue.h"
#include "log.h"
#include "util.h"

#define PIECE           (1u << 20)
#define LEASE_DEFAULT_S 3600

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
	/* the journal: chunks recorded in the garbage queue */
	pthread_mutex_t jmu;    /* upload workers append while write jobs renew */
	char **fids;            /* protected by jmu */
	size_t nfids, capfids;  /* protected by jmu */
	int64_t lease_until_ns; /* the earliest lease among the recorded, protected by jmu */
	bool tail;              /* the commit job cuts the last chunk: not recorded */
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

/* Moves every recorded id's lease to due, in runs of at most FILER_GC_BATCH_MAX. */
static wfs_err defer_all(struct body_chunks *b, int64_t due)
{
	wfs_err err = WFS_OK;
	for (size_t i = 0; i < b->nfids && !err; i += FILER_GC_BATCH_MAX) {
		size_t n = MIN(b->nfids - i, (size_t)FILER_GC_BATCH_MAX);
		err = filer_store_gc_defer(b->j->f->store, (const char *const *)b->fids + i, n,
					   due);
	}
	return err;
}

/* Upload worker: records one stored chunk under a lease (chunk_writer_opts.on_uploaded). */
static void journal_add(void *arg, const char *fid)
{
	struct body_chunks *b = arg;
	int64_t due;
	wfs_err err;

	pthread_once(&lease_once, lease_init);
	pthread_mutex_lock(&b->jmu);
	if (b->tail) {
		pthread_mutex_unlock(&b->jmu);
		return;
	}
	due = (int64_t)time_now_ns() + lease_ns;
	err = filer_store_gc_enqueue(b->j->f->store, NULL, &fid, 1, due);
	if (err) {
		log_warn("could not record uploaded chunk %s in the garbage queue: %s", fid,
			 wfs_strerror(err));
	} else {
		if (b->nfids == b->capfids) {
			b->capfids = b->capfids ? 2 * b->capfids : 16;
			b->fids = xrealloc(b->fids, b->capfids * sizeof(*b->fids));
		}
		if (!b->nfids)
			b->lease_until_ns = due;
		b->fids[b->nfids++] = xstrdup(fid);
	}
	pthread_mutex_unlock(&b->jmu);
}

/* Write job: renews the lease of the recorded chunks once half of it is gone. */
static void journal_renew(struct body_chunks *b)
{
	int64_t now = (int64_t)time_now_ns();
	pthread_mutex_lock(&b->jmu);
	if (b->nfids && now >= b->lease_until_ns - lease_ns / 2) {
		wfs_err err = defer_all(b, now + lease_ns);
		if (err)
			log_warn("could not renew the lease of %zu uploaded chunks: %s", b->nfids,
				 wfs_strerror(err));
		else
			b->lease_until_ns = now + lease_ns;
	}
	pthread_mutex_unlock(&b->jmu);
}

/* Makes the recorded chunks due now: nothing references them (a failure). */
static void journal_release(struct body_chunks *b)
{
	wfs_err err;
	if (!b->nfids || b->claimed)
		return;
	err = defer_all(b, (int64_t)time_now_ns());
	if (err)
		log_warn("could not free %zu recorded chunks now (freed when their lease ends): %s",
			 b->nfids, wfs_strerror(err));
	filer_gc_kick(b->j->f);
}

wfs_err body_chunks_claim(struct body_chunks *b, struct filer_tx *tx)
{
	wfs_err err = gc_lease_claim(b->j->f->store, tx, (const char *const *)b->fids, b->nfids);
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
	b->job_err = chunk_writer_write(b->cw, b->wbuf.data, b->wbuf.len);
	buf_reset(&b->wbuf);
	if (b->ops->journal && !b->job_err)
		journal_renew(b);
	http_req_defer(b->j->req, job_done, b);
}

static void job_commit(void *arg)
{
	struct body_chunks *b = arg;
	struct filer_chunk *chunks = NULL;
	size_t n = 0;
	uint64_t size;
	wfs_err err;

	/* what is cut from here on is referenced by the commit that follows at once */
	pthread_mutex_lock(&b->jmu);
	b->tail = true;
	pthread_mutex_unlock(&b->jmu);
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
	struct chunk_writer_opts wo = *o;
	if (ops->journal) {
		wo.on_uploaded = journal_add;
		wo.on_uploaded_arg = b;
	}
	b->cw = chunk_writer_new(j->f->bc, &wo, err);
	if (!b->cw) {
		free(b);
		return NULL;
	}
	pthread_mutex_init(&b->jmu, NULL);
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
	chunk_writer_free(b->cw); /* no upload runs after this: the journal is ours */
	pthread_mutex_destroy(&b->jmu);
	buf_free(&b->fill);
	buf_free(&b->wbuf);
	for (size_t i = 0; i < b->nfids; i++)
		free(b->fids[i]);
	free(b->fids);
	free(b);
}
