/*
 * A byte range of a chunked file streamed into an HTTP response (see
 * chunk_stream.h).
 *
 * DESIGN: the range is cut into pieces by chunk_io.h's chunk_pieces (each at
 * most piece_size bytes of one chunk, or a hole). They stream through a window
 * of up to `slots` pieces and read_ahead * piece_size bytes (so a file of
 * small chunks keeps as many bytes in flight). Each piece is fetched by an I/O
 * worker the owner's submit hands it to (chunk_piece_fetch: replica failover,
 * whole-chunk pieces read without Range so the volume checks the CRC), which
 * defers its completion to the loop; the loop writes finished pieces strictly
 * in file order and refills the window. Holes need no worker: their zeros are
 * written from a static block. Every chunk_stream field is touched on the loop
 * thread only, except a slot's data and err, which belong to the worker while
 * it fetches (the defer hands them back), and req and bc, which never change
 * after chunk_stream_new.
 *
 * Back-pressure: while the connection's output is above its high-water mark no
 * piece is written and no fetch is started until the drain callback, so a
 * download holds at most its window plus the output buffer however large the
 * file and however slow the reader, and a worker never waits for a client.
 * The head goes out with the first piece, so a first fetch that fails (a
 * volume server down) still lets the owner answer a 5xx rather than a 200
 * whose body breaks off; after a later failure the owner aborts the connection
 * (the body is short). The stream ends (ops->done) only after every fetch in
 * flight has come back, since each fetch defers through the request.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "client/chunk_io.h"
#include "client/chunk_stream.h"
#include "util.h"

struct slot {
	struct chunk_stream *s;
	struct chunk_piece p;
	buf data;    /* the worker's while fetching */
	wfs_err err; /* the worker's while fetching */
	bool ready;
};

struct chunk_stream {
	http_req *req;
	blob_client *bc;
	const struct chunk_stream_ops *ops;
	void *owner;
	bool head_only;
	struct filer_chunk *chunks; /* resolved (no manifests) */
	size_t n;
	chunk_pieces *plan;
	struct slot *slots;
	size_t window;
	uint64_t head, tail;  /* pieces: next to write, next to plan (slot = index % window) */
	uint64_t wbytes, cap; /* bytes of the pieces in the window, and their bound */
	bool planned_all;
	int running;       /* fetches on workers */
	uint64_t pos, end; /* next file offset to send, end of the range */
	int64_t length;    /* Content-Length */
	wfs_err err;       /* the first failure; ends the response */
	uint64_t err_pos;  /* where it happened */
	bool started;      /* the head was sent (after the first piece arrived) */
	bool draining;     /* waiting for the drain callback */
	bool stopping;     /* no more pieces: end once running is 0 */
	bool ok;           /* with stopping: the whole range was sent */
};

chunk_stream *chunk_stream_new(http_req *req, blob_client *bc, struct filer_chunk *chunks, size_t n,
			       uint64_t offset, uint64_t len, const struct chunk_stream_opts *o,
			       const struct chunk_stream_ops *ops, void *owner, wfs_err *err)
{
	static const struct chunk_stream_opts defaults = {0};
	chunk_stream *s;
	size_t piece, ahead;

	if (!o)
		o = &defaults;
	piece = o->piece_size ? MIN(o->piece_size, CHUNK_SIZE_MAX) : CHUNK_READ_PIECE_DEFAULT;
	s = xcalloc(1, sizeof(*s));
	*err = chunk_pieces_new(chunks, n, offset, len, piece, &s->plan);
	if (*err) {
		filer_chunks_free(chunks, n);
		free(s);
		return NULL;
	}
	s->req = req;
	s->bc = bc;
	s->ops = ops;
	s->owner = owner;
	s->head_only = o->head_only;
	s->chunks = chunks;
	s->n = n;
	s->window = o->slots ? o->slots : CHUNK_STREAM_SLOTS_DEFAULT;
	/* more than the window's pieces never fit: the bound also keeps cap from overflowing */
	ahead = o->read_ahead ? MIN(o->read_ahead, s->window) : CHUNK_READ_AHEAD_DEFAULT;
	s->cap = (uint64_t)ahead * piece;
	s->slots = xcalloc(s->window, sizeof(*s->slots));
	for (size_t i = 0; i < s->window; i++)
		s->slots[i].s = s;
	s->pos = offset;
	s->end = offset + len;
	s->length = (int64_t)len;
	return s;
}

void chunk_stream_free(chunk_stream *s)
{
	if (!s)
		return;
	filer_chunks_free(s->chunks, s->n);
	chunk_pieces_free(s->plan);
	for (size_t i = 0; i < s->window; i++)
		buf_free(&s->slots[i].data);
	free(s->slots);
	free(s);
}

/* Sends the status line and headers through the owner: once. Loop thread. */
static void stream_head(chunk_stream *s)
{
	s->ops->head(s->owner, s->length);
	s->started = true;
}

/*
 * Hands the end to the owner once no fetch is out; the owner frees s. A client
 * that went away ends with WFS_EUNAVAIL at the offset reached. Loop thread.
 */
static void stream_end(chunk_stream *s)
{
	wfs_err err = s->err;
	uint64_t at = s->err_pos;
	if (!err && !s->ok) {
		err = WFS_EUNAVAIL;
		at = s->pos;
	}
	s->ops->done(s->owner, err, at, s->started);
}

static void stream_stop(chunk_stream *s, bool ok)
{
	s->stopping = true;
	s->ok = ok;
	if (!s->running)
		stream_end(s);
}

static void fail(chunk_stream *s, wfs_err err, uint64_t at)
{
	if (!s->err) {
		s->err = err;
		s->err_pos = at;
	}
	stream_stop(s, false);
}

static void piece_done(http_req *req, void *arg);

/* Fetches one piece. I/O worker. */
static void fetch_run(void *arg)
{
	struct slot *sl = arg;
	sl->err = chunk_piece_fetch(sl->s->bc, &sl->p, &sl->data);
	if (!sl->err && sl->s->ops->transform)
		sl->s->ops->transform(sl->s->owner, sl->p.file_offset, sl->data.data, sl->data.len);
	http_req_defer(sl->s->req, piece_done, sl);
}

/* Writes a hole's zeros (copied into the output by http_resp_write). */
static bool write_zeros(http_req *req, uint64_t len)
{
	static const uint8_t zeros[64 << 10];
	bool more = true;
	while (len) {
		size_t n = (size_t)MIN(len, sizeof(zeros));
		more = http_resp_write(req, zeros, n);
		len -= n;
	}
	return more;
}

static void pump(chunk_stream *s);

static void on_drain(http_req *req, void *arg)
{
	chunk_stream *s = arg;
	(void)req;
	s->draining = false;
	pump(s);
}

/* Starts fetches until the window is full or the range is planned. Loop thread. */
static bool fill(chunk_stream *s)
{
	while (!s->planned_all && s->tail - s->head < s->window && s->wbytes < s->cap) {
		struct slot *sl = &s->slots[s->tail % s->window];
		if (!chunk_pieces_next(s->plan, &sl->p)) {
			s->planned_all = true;
			break;
		}
		s->tail++;
		s->wbytes += sl->p.len;
		sl->err = WFS_OK;
		sl->ready = !sl->p.fid;
		if (sl->ready)
			continue;
		s->running++;
		if (!s->ops->submit(s->owner, fetch_run, sl)) {
			s->running--;
			fail(s, WFS_EUNAVAIL, sl->p.file_offset); /* the pool is stopping */
			return false;
		}
	}
	return true;
}

/*
 * Writes the finished pieces at the head of the window in order, then refills
 * it; stops at the output's high-water mark until the drain callback. Loop
 * thread.
 */
static void pump(chunk_stream *s)
{
	http_req *req = s->req;
	for (;;) {
		struct slot *sl;
		bool more;
		if (http_req_closed(req)) {
			stream_stop(s, false);
			return;
		}
		while (s->head < s->tail && s->slots[s->head % s->window].ready) {
			sl = &s->slots[s->head % s->window];
			if (sl->err) {
				fail(s, sl->err, sl->p.file_offset);
				return;
			}
			if (!s->started)
				stream_head(s);
			if (sl->p.fid && sl->data.len) {
				size_t n;
				char *d = buf_steal(&sl->data, &n);
				more = http_resp_write_take(req, d, n);
			} else if (sl->p.fid)
				more = true;
			else
				more = write_zeros(req, sl->p.len);
			/* a fetch takes its body's storage: nothing to keep for reuse */
			buf_free(&sl->data);
			s->pos += sl->p.len;
			s->wbytes -= sl->p.len;
			s->head++;
			if (s->pos >= s->end) {
				stream_stop(s, true);
				return;
			}
			if (!more) {
				s->draining = true;
				http_resp_on_drain(req, on_drain, s);
				return;
			}
		}
		if (!fill(s))
			return;
		/* holes are ready at once: go round while one is at the head */
		if (s->head == s->tail || !s->slots[s->head % s->window].ready)
			return;
	}
}

/* A fetch came back. Loop thread. */
static void piece_done(http_req *req, void *arg)
{
	struct slot *sl = arg;
	chunk_stream *s = sl->s;
	(void)req;
	s->running--;
	sl->ready = true;
	if (s->stopping) {
		if (!s->running)
			stream_end(s);
		return;
	}
	if (!s->draining)
		pump(s);
}

/* The head waits for the first piece, so that a failing first fetch can still answer 5xx. */
void chunk_stream_start(chunk_stream *s)
{
	if (s->head_only || s->pos >= s->end) {
		stream_head(s);
		stream_stop(s, true);
		return;
	}
	pump(s);
}
