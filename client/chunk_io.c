/*
 * DESIGN
 * Writer: the caller's thread fills one chunk buffer; a full buffer becomes an
 * upload job on the blob_client's worker pool (assign + PUT, retried on a new
 * assignment) and the caller continues with a recycled buffer. A counter of
 * running uploads, waited on before a hand-off, bounds memory to
 * (max_in_flight + 1) chunk buffers; buffers are recycled rather than freed so
 * a long stream does not keep faulting in fresh pages. The first buffer grows
 * geometrically, so a small file costs what it holds, not a whole chunk.
 *
 * Reader: chunks_read_plan (client/chunks.h) gives the visible pieces of the
 * range; they are cut into pieces of at most piece_size, the holes between
 * them become zero pieces, and a window of read_ahead pieces is fetched in
 * parallel on the worker pool while the caller's thread hands finished pieces
 * to the sink strictly in order. A piece that covers a whole chunk is read
 * without a Range header so the volume server verifies its CRC. The planning
 * (chunk_pieces) and the fetch of one piece (chunk_piece_fetch) are exported
 * so the filer's HTTP download (filer_read.c), which cannot block its loop on
 * a sink, drives the same window from loop callbacks.
 */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "client/chunk_cipher.h"
#include "client/chunk_io.h"
#include "client/chunks.h"
#include "log.h"
#include "util.h"

#define FIRST_BUF              (64u << 10)
#define MANIFEST_BLOB_MAX      (64u << 20)
#define MANIFEST_BATCH_DEFAULT 1000

enum cw_state { CW_OPEN, CW_FINISHED, CW_ABORTED };

struct chunk_writer {
	blob_client *bc;
	uint64_t chunk_size;
	uint64_t base;
	size_t inline_max;
	int max_in_flight;
	bool encrypt;
	void (*on_uploaded)(void *arg, const char *fid);
	void *on_uploaded_arg;
	struct blob_assign_params ap; /* strings owned */
	struct blob_upload_params up; /* ttl borrowed from ap */
	enum cw_state state;
	bool submitted; /* a chunk was handed to an upload */
	bool is_inline;
	uint8_t *cur; /* the buffer being filled */
	size_t cur_len, cur_cap;
	uint64_t pos; /* bytes written */

	pthread_mutex_t mu;
	pthread_cond_t cv;
	int in_flight;            /* protected by mu */
	wfs_err err;              /* first upload error, protected by mu */
	struct filer_chunk *done; /* uploaded chunks, protected by mu */
	size_t n_done, cap_done;  /* protected by mu */
	uint8_t **spare;          /* recycled full-size buffers, protected by mu */
	size_t n_spare;           /* protected by mu */
	size_t mem, mem_peak;     /* bytes of buffers allocated, protected by mu */
};

struct upload_job {
	chunk_writer *cw;
	uint8_t *data;
	size_t len, cap;
	uint64_t offset;
	int64_t mtime_ns;
};

static char *dup_opt(const char *s) { return s && *s ? xstrdup(s) : NULL; }

chunk_writer *chunk_writer_new(blob_client *bc, const struct chunk_writer_opts *o, wfs_err *err)
{
	static const struct chunk_writer_opts defaults;
	chunk_writer *cw;
	uint64_t cs;
	int mif;

	o = o ? o : &defaults;
	cs = o->chunk_size ? o->chunk_size : CHUNK_SIZE_DEFAULT;
	mif = o->max_in_flight ? o->max_in_flight : CHUNK_IN_FLIGHT_DEFAULT;

	if (cs > CHUNK_SIZE_MAX || mif < 1 || mif > CHUNK_IN_FLIGHT_MAX) {
		*err = WFS_EINVAL;
		return NULL;
	}
	cw = xcalloc(1, sizeof(*cw));
	cw->bc = bc;
	cw->chunk_size = cs;
	cw->base = o->offset;
	cw->inline_max = MIN(o->inline_max, cs);
	cw->max_in_flight = mif;
	cw->encrypt = o->encrypt;
	cw->on_uploaded = o->on_uploaded;
	cw->on_uploaded_arg = o->on_uploaded_arg;
	cw->ap.collection = dup_opt(o->collection);
	cw->ap.replication = dup_opt(o->replication);
	cw->ap.ttl = dup_opt(o->ttl);
	cw->ap.data_center = dup_opt(o->data_center);
	cw->ap.rack = dup_opt(o->rack);
	cw->up.ttl = cw->ap.ttl;
	cw->up.fsync = o->fsync;
	cw->spare = xcalloc((size_t)mif + 1, sizeof(*cw->spare));
	pthread_mutex_init(&cw->mu, NULL);
	pthread_cond_init(&cw->cv, NULL);
	*err = WFS_OK;
	return cw;
}

/* Accounts a buffer allocation of n bytes (negative n for a release). Caller holds mu. */
static void mem_add(chunk_writer *cw, size_t n, bool release)
{
	if (release) {
		cw->mem -= n;
		return;
	}
	cw->mem += n;
	cw->mem_peak = MAX(cw->mem_peak, cw->mem);
}

/* Makes room for at least one more byte in cur (a recycled or grown buffer). */
static void cur_grow(chunk_writer *cw)
{
	size_t ncap;
	pthread_mutex_lock(&cw->mu);
	if (!cw->cur && cw->n_spare) {
		cw->cur = cw->spare[--cw->n_spare];
		cw->cur_cap = cw->chunk_size;
		pthread_mutex_unlock(&cw->mu);
		return;
	}
	/* only a stream's first buffer grows: it may be a small file; later ones are full */
	ncap = cw->cur_cap ? cw->cur_cap * 2 : cw->submitted ? cw->chunk_size : FIRST_BUF;
	ncap = MIN(ncap, cw->chunk_size);
	mem_add(cw, ncap, false);
	pthread_mutex_unlock(&cw->mu);
	cw->cur = xrealloc(cw->cur, ncap);
	pthread_mutex_lock(&cw->mu);
	mem_add(cw, cw->cur_cap, true);
	pthread_mutex_unlock(&cw->mu);
	cw->cur_cap = ncap;
}

static void done_push(chunk_writer *cw, char *fid, uint64_t off, uint64_t size, int64_t mtime,
		      const char *etag, const struct filer_chunk *key)
{
	struct filer_chunk *c;
	if (cw->n_done == cw->cap_done) {
		cw->cap_done = cw->cap_done ? cw->cap_done * 2 : 16;
		cw->done = xrealloc(cw->done, cw->cap_done * sizeof(*cw->done));
	}
	c = &cw->done[cw->n_done++];
	memset(c, 0, sizeof(*c));
	c->fid = fid;
	c->offset = off;
	c->size = size;
	c->mtime_ns = mtime;
	c->etag = etag && *etag ? xstrdup(etag) : NULL;
	filer_chunk_copy_key(c, key);
}

/* Worker thread: uploads one chunk, records it, recycles the buffer. */
static void upload_run(void *arg)
{
	struct upload_job *j = arg;
	chunk_writer *cw = j->cw;
	char etag[BLOB_ETAG_MAX] = "";
	char *fid = NULL;
	struct filer_chunk key = {0};
	wfs_err err = WFS_OK;
	bool skip;

	pthread_mutex_lock(&cw->mu);
	skip = cw->err != WFS_OK;
	pthread_mutex_unlock(&cw->mu);
	if (!skip)
		err = chunk_cipher_save(cw->bc, &cw->ap, &cw->up, cw->encrypt, j->data, j->len,
					&key, &fid, etag);

	if (!skip && !err && cw->on_uploaded)
		cw->on_uploaded(cw->on_uploaded_arg, fid);
	pthread_mutex_lock(&cw->mu);
	if (!skip && !err)
		done_push(cw, fid, j->offset, j->len, j->mtime_ns, etag, &key);
	else if (!skip && !cw->err)
		cw->err = err;
	if (j->cap == cw->chunk_size && cw->n_spare <= (size_t)cw->max_in_flight) {
		cw->spare[cw->n_spare++] = j->data;
		j->data = NULL;
	} else {
		mem_add(cw, j->cap, true);
	}
	cw->in_flight--;
	pthread_cond_broadcast(&cw->cv);
	pthread_mutex_unlock(&cw->mu);
	free(j->data);
	free(j);
}

/* Hands cur to an upload worker, waiting while max_in_flight uploads run. */
static void submit_cur(chunk_writer *cw)
{
	struct upload_job *j = xmalloc(sizeof(*j));
	j->cw = cw;
	j->data = cw->cur;
	j->len = cw->cur_len;
	j->cap = cw->cur_cap;
	j->offset = cw->base + cw->pos - cw->cur_len;
	j->mtime_ns = (int64_t)time_now_ns();
	cw->cur = NULL;
	cw->cur_len = cw->cur_cap = 0;
	cw->submitted = true;
	pthread_mutex_lock(&cw->mu);
	while (cw->in_flight >= cw->max_in_flight)
		pthread_cond_wait(&cw->cv, &cw->mu);
	cw->in_flight++;
	pthread_mutex_unlock(&cw->mu);
	pool_submit(blob_client_pool(cw->bc), upload_run, j);
}

static wfs_err upload_error(chunk_writer *cw)
{
	wfs_err err;
	pthread_mutex_lock(&cw->mu);
	err = cw->err;
	pthread_mutex_unlock(&cw->mu);
	return err;
}

wfs_err chunk_writer_write(chunk_writer *cw, const void *data, size_t len)
{
	const uint8_t *p = data;
	wfs_err err;

	if (cw->state != CW_OPEN)
		return WFS_EINVAL;
	while (len) {
		size_t n;
		err = upload_error(cw);
		if (err)
			return err;
		if (cw->cur_len == cw->cur_cap)
			cur_grow(cw);
		n = MIN(len, cw->cur_cap - cw->cur_len);
		memcpy(cw->cur + cw->cur_len, p, n);
		cw->cur_len += n;
		cw->pos += n;
		p += n;
		len -= n;
		if (cw->cur_len == cw->chunk_size)
			submit_cur(cw);
	}
	return upload_error(cw);
}

static void wait_idle(chunk_writer *cw)
{
	pthread_mutex_lock(&cw->mu);
	while (cw->in_flight)
		pthread_cond_wait(&cw->cv, &cw->mu);
	pthread_mutex_unlock(&cw->mu);
}

static int cmp_chunk_offset(const void *a, const void *b)
{
	const struct filer_chunk *x = a, *y = b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

wfs_err chunk_writer_finish(chunk_writer *cw, struct filer_chunk **chunks, size_t *n)
{
	wfs_err err;

	*chunks = NULL;
	*n = 0;
	if (cw->state != CW_OPEN)
		return WFS_EINVAL;
	if (!cw->submitted && cw->inline_max && cw->pos <= cw->inline_max) {
		cw->is_inline = true;
		cw->state = CW_FINISHED;
		return WFS_OK;
	}
	if (cw->cur_len)
		submit_cur(cw);
	wait_idle(cw);
	err = upload_error(cw);
	if (err) {
		chunk_writer_abort(cw);
		return err;
	}
	if (cw->n_done)
		qsort(cw->done, cw->n_done, sizeof(*cw->done), cmp_chunk_offset);
	*chunks = cw->done;
	*n = cw->n_done;
	cw->done = NULL;
	cw->n_done = cw->cap_done = 0;
	cw->state = CW_FINISHED;
	return WFS_OK;
}

bool chunk_writer_inline(const chunk_writer *cw, const uint8_t **data, size_t *len)
{
	if (!cw->is_inline)
		return false;
	*data = cw->cur;
	*len = cw->cur_len;
	return true;
}

void chunk_writer_uploaded(chunk_writer *cw, struct filer_chunk **chunks, size_t *n)
{
	wait_idle(cw);
	*n = cw->n_done;
	*chunks = cw->n_done ? xcalloc(cw->n_done, sizeof(**chunks)) : NULL;
	for (size_t i = 0; i < cw->n_done; i++)
		filer_chunk_copy(&(*chunks)[i], &cw->done[i]);
}

uint64_t chunk_writer_size(const chunk_writer *cw) { return cw->pos; }

size_t chunk_writer_mem_peak(chunk_writer *cw)
{
	size_t peak;
	pthread_mutex_lock(&cw->mu);
	peak = cw->mem_peak;
	pthread_mutex_unlock(&cw->mu);
	return peak;
}

wfs_err chunk_writer_abort(chunk_writer *cw)
{
	wfs_err err = WFS_OK;

	if (cw->state == CW_OPEN)
		cw->state = CW_ABORTED;
	wait_idle(cw);
	/* no upload runs now: done is ours */
	for (size_t i = 0; i < cw->n_done; i++) {
		wfs_err e = blob_client_delete(cw->bc, cw->done[i].fid);
		if (e) {
			log_warn("abort: could not delete chunk %s: %s", cw->done[i].fid,
				 wfs_strerror(e));
			if (!err)
				err = e;
		}
	}
	filer_chunks_free(cw->done, cw->n_done);
	cw->done = NULL;
	cw->n_done = cw->cap_done = 0;
	cw->state = CW_ABORTED;
	return err;
}

void chunk_writer_free(chunk_writer *cw)
{
	if (!cw)
		return;
	if (cw->state == CW_OPEN || cw->n_done)
		chunk_writer_abort(cw);
	wait_idle(cw);
	for (size_t i = 0; i < cw->n_spare; i++)
		free(cw->spare[i]);
	free(cw->spare);
	free(cw->cur);
	free((char *)cw->ap.collection);
	free((char *)cw->ap.replication);
	free((char *)cw->ap.ttl);
	free((char *)cw->ap.data_center);
	free((char *)cw->ap.rack);
	pthread_cond_destroy(&cw->cv);
	pthread_mutex_destroy(&cw->mu);
	free(cw);
}

/* ---- reader ---- */

struct chunk_pieces {
	const struct filer_chunk *c;
	struct chunk_view *v;
	size_t nv, vi;
	uint64_t at, end; /* next file offset to produce; end of the read */
	uint64_t in_view; /* bytes of view vi already produced */
	size_t piece_size;
};

wfs_err chunk_pieces_new(const struct filer_chunk *chunks, size_t n, uint64_t offset, uint64_t len,
			 size_t piece_size, chunk_pieces **out)
{
	chunk_pieces *it = xcalloc(1, sizeof(*it));
	wfs_err err = chunks_read_plan(chunks, n, offset, len, &it->v, &it->nv);
	if (err) {
		free(it);
		*out = NULL;
		return err;
	}
	it->c = chunks;
	it->at = offset;
	it->end = offset + len;
	it->piece_size = piece_size ? MIN(piece_size, CHUNK_SIZE_MAX) : CHUNK_READ_PIECE_DEFAULT;
	*out = it;
	return WFS_OK;
}

/* Views cut to piece_size, zero pieces for the holes between them. */
bool chunk_pieces_next(chunk_pieces *it, struct chunk_piece *p)
{
	const struct chunk_view *v;
	memset(p, 0, sizeof(*p));
	if (it->at >= it->end)
		return false;
	p->file_offset = it->at;
	v = it->vi < it->nv ? &it->v[it->vi] : NULL;
	if (!v || it->at < v->file_offset) {
		uint64_t stop = v ? v->file_offset : it->end;
		p->len = MIN(stop - it->at, it->piece_size);
		it->at += p->len;
		return true;
	}
	p->fid = it->c[v->chunk].fid;
	p->chunk = &it->c[v->chunk];
	p->chunk_off = v->chunk_offset + it->in_view;
	/* a sealed chunk is opened whole: one piece per view, not one fetch per slice */
	p->len = p->chunk->has_cipher_key ? v->len - it->in_view
					  : MIN(v->len - it->in_view, it->piece_size);
	p->whole = p->chunk_off == 0 && p->len == it->c[v->chunk].size;
	it->in_view += p->len;
	it->at += p->len;
	if (it->in_view == v->len) {
		it->vi++;
		it->in_view = 0;
	}
	return true;
}

void chunk_pieces_free(chunk_pieces *it)
{
	if (!it)
		return;
	free(it->v);
	free(it);
}

wfs_err chunk_piece_fetch(blob_client *bc, const struct chunk_piece *p, buf *out)
{
	size_t mark = out->len;
	wfs_err err;

	if (!p->fid) {
		buf_reserve(out, p->len);
		memset(out->data + out->len, 0, p->len);
		out->len += p->len;
		out->data[out->len] = '\0';
		return WFS_OK;
	}
	if (p->chunk && p->chunk->has_cipher_key) {
		/* GCM authenticates the whole blob: open it into out, then keep the slice */
		size_t got;
		err = chunk_cipher_read(bc, p->chunk, CHUNK_SIZE_MAX, out);
		got = err ? 0 : out->len - mark;
		if (!err && (got < p->chunk_off || got - p->chunk_off < p->len))
			err = WFS_ECORRUPT;
		if (!err) {
			memmove(out->data + mark, out->data + mark + p->chunk_off, p->len);
			out->len = mark + p->len;
			out->data[out->len] = '\0';
		} else {
			out->len = mark;
		}
		return err;
	}
	if (p->whole) {
		err = blob_client_read(bc, p->fid, 0, 0, p->len, out);
		/* a blob longer than its chunk (a truncated chunk): fall back to a range */
		if (err == WFS_ETOOBIG) {
			out->len = mark;
			err = blob_client_read(bc, p->fid, p->chunk_off, p->len, 0, out);
		} else if (!err && out->len - mark != p->len) {
			err = WFS_ECORRUPT;
		}
	} else {
		err = blob_client_read(bc, p->fid, p->chunk_off, p->len, 0, out);
	}
	if (err)
		out->len = mark;
	return err;
}

struct read_slot {
	struct chunk_piece p;
	buf data;
	wfs_err err;
	bool ready; /* protected by read_op.mu */
};

struct read_op {
	blob_client *bc;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int running; /* fetch jobs not yet finished, protected by mu */
};

struct fetch_job {
	struct read_op *op;
	struct read_slot *slot;
};

static void fetch_run(void *arg)
{
	struct fetch_job *j = arg;
	struct read_slot *sl = j->slot;
	struct read_op *op = j->op;
	wfs_err err = chunk_piece_fetch(op->bc, &sl->p, &sl->data);

	pthread_mutex_lock(&op->mu);
	sl->err = err;
	sl->ready = true;
	op->running--;
	pthread_cond_broadcast(&op->cv);
	pthread_mutex_unlock(&op->mu);
	free(j);
}

static wfs_err sink_zeros(chunk_sink_fn sink, void *arg, uint64_t len)
{
	static const uint8_t zeros[64 << 10];
	while (len) {
		size_t n = (size_t)MIN(len, sizeof(zeros));
		wfs_err err = sink(arg, zeros, n);
		if (err)
			return err;
		len -= n;
	}
	return WFS_OK;
}

static wfs_err fetch_manifest(void *ctx, const char *fid, buf *out)
{
	return blob_client_read(ctx, fid, 0, 0, MANIFEST_BLOB_MAX + CHUNK_CIPHER_OVERHEAD, out);
}

wfs_err chunk_resolve_manifests(blob_client *bc, const struct filer_chunk *chunks, size_t n,
				struct filer_chunk **out, size_t *nout)
{
	return chunks_resolve_manifests(chunks, n, fetch_manifest, bc, out, nout);
}

wfs_err chunk_read_ex(blob_client *bc, const struct filer_chunk *chunks, size_t n,
		      uint64_t file_size, uint64_t offset, uint64_t len, chunk_sink_fn sink,
		      void *arg, const struct chunk_read_opts *o)
{
	struct filer_chunk *resolved = NULL;
	size_t nresolved = 0, window, head = 0, tail = 0;
	const struct filer_chunk *c = chunks;
	struct read_slot *ring = NULL;
	chunk_pieces *it = NULL;
	struct read_op op;
	bool more = true, has_manifest = false;
	wfs_err err = WFS_OK;

	if (offset >= file_size)
		return WFS_OK;
	len = MIN(len, file_size - offset);
	if (!len)
		return WFS_OK;
	for (size_t i = 0; i < n; i++)
		has_manifest |= chunks[i].is_manifest;
	if (has_manifest) {
		err = chunk_resolve_manifests(bc, chunks, n, &resolved, &nresolved);
		if (err)
			return err;
		c = resolved;
		n = nresolved;
	}
	err = chunk_pieces_new(c, n, offset, len, o ? o->piece_size : 0, &it);
	if (err)
		goto out;

	window = o && o->read_ahead > 0 ? (size_t)MIN(o->read_ahead, CHUNK_IN_FLIGHT_MAX)
					: CHUNK_READ_AHEAD_DEFAULT;
	ring = xcalloc(window, sizeof(*ring));
	op.bc = bc;
	op.running = 0;
	pthread_mutex_init(&op.mu, NULL);
	pthread_cond_init(&op.cv, NULL);

	/* head: next piece for the sink; tail: next free slot (counters, ring index % window) */
	for (;;) {
		struct read_slot *sl;
		while (more && !err && tail - head < window) {
			sl = &ring[tail % window];
			more = chunk_pieces_next(it, &sl->p);
			if (!more)
				break;
			tail++;
			sl->err = WFS_OK;
			sl->ready = !sl->p.fid;
			if (sl->ready)
				continue;
			struct fetch_job *j = xmalloc(sizeof(*j));
			j->op = &op;
			j->slot = sl;
			pthread_mutex_lock(&op.mu);
			op.running++;
			pthread_mutex_unlock(&op.mu);
			pool_submit(blob_client_pool(bc), fetch_run, j);
		}
		if (head == tail || err)
			break;
		sl = &ring[head % window];
		pthread_mutex_lock(&op.mu);
		while (!sl->ready)
			pthread_cond_wait(&op.cv, &op.mu);
		pthread_mutex_unlock(&op.mu);
		if (sl->err)
			err = sl->err;
		else if (!sl->p.fid)
			err = sink_zeros(sink, arg, sl->p.len);
		else
			err = sink(arg, sl->data.data, sl->data.len);
		buf_reset(&sl->data); /* kept: the next piece in this slot reuses it */
		head++;
	}
	/* jobs point into ring and op: let them finish */
	pthread_mutex_lock(&op.mu);
	while (op.running)
		pthread_cond_wait(&op.cv, &op.mu);
	pthread_mutex_unlock(&op.mu);
	for (size_t i = 0; i < window; i++)
		buf_free(&ring[i].data);
	pthread_cond_destroy(&op.cv);
	pthread_mutex_destroy(&op.mu);
out:
	free(ring);
	chunk_pieces_free(it);
	filer_chunks_free(resolved, nresolved);
	return err;
}

wfs_err chunk_read(blob_client *bc, const struct filer_chunk *chunks, size_t n, uint64_t file_size,
		   uint64_t offset, uint64_t len, chunk_sink_fn sink, void *arg)
{
	return chunk_read_ex(bc, chunks, n, file_size, offset, len, sink, arg, NULL);
}

/* ---- manifests ---- */

struct manifest_save {
	blob_client *bc;
	struct blob_assign_params ap;
	struct blob_upload_params up;
	char **fids; /* manifests saved so far, to delete on failure */
	size_t n, cap;
};

static wfs_err manifest_save(void *ctx, const void *blob, size_t len, char **fid)
{
	struct manifest_save *ms = ctx;
	wfs_err err = blob_client_save(ms->bc, &ms->ap, &ms->up, blob, len, fid, NULL);
	if (err)
		return err;
	if (ms->n == ms->cap) {
		ms->cap = ms->cap ? ms->cap * 2 : 8;
		ms->fids = xrealloc(ms->fids, ms->cap * sizeof(*ms->fids));
	}
	ms->fids[ms->n++] = xstrdup(*fid);
	return WFS_OK;
}

wfs_err chunk_manifestize(blob_client *bc, const struct chunk_writer_opts *o,
			  const struct filer_chunk *chunks, size_t n, size_t batch,
			  struct filer_chunk **out, size_t *nout)
{
	struct manifest_save ms;
	wfs_err err;

	memset(&ms, 0, sizeof(ms));
	ms.bc = bc;
	if (o) {
		ms.ap.collection = o->collection;
		ms.ap.replication = o->replication;
		ms.ap.ttl = o->ttl;
		ms.ap.data_center = o->data_center;
		ms.ap.rack = o->rack;
		ms.up.ttl = o->ttl;
		ms.up.fsync = o->fsync;
	}
	err = chunks_manifestize(chunks, n, batch ? batch : MANIFEST_BATCH_DEFAULT, manifest_save,
				 &ms, out, nout);
	if (err)
		blob_client_delete_many(bc, (const char *const *)ms.fids, ms.n);
	for (size_t i = 0; i < ms.n; i++)
		free(ms.fids[i]);
	free(ms.fids);
	return err;
}
