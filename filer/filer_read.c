/*
 * GET and HEAD: file content, ?metadata=true, and directories (handed to
 * filer_list.c).
 *
 * DESIGN: a metadata job finds the entry, answers conditional requests and
 * plans the read (manifests resolved, the Range cut into pieces by
 * chunk_io.h's chunk_pieces). Inline content is answered from the job.
 * Chunked content streams through a window of up to READ_SLOTS pieces and
 * READ_AHEAD * READ_PIECE bytes (so a file of small chunks keeps as many
 * bytes in flight). Each piece (at most READ_PIECE bytes of one chunk) is
 * fetched by an I/O worker (chunk_piece_fetch: replica failover, whole-chunk
 * CRC reads), which defers its completion to the loop; the loop writes
 * finished pieces strictly in file order and refills the window. Holes need
 * no worker: their zeros are written from a static block. Every rstream field
 * is touched on the loop thread only, except a slot's data and err, which
 * belong to the worker while it fetches (the defer hands them back).
 *
 * Back-pressure: while the connection's output is above its high-water mark no
 * piece is written and no fetch is started until the drain callback, so a
 * download holds at most its window plus the output buffer however large the
 * file and however slow the reader, and a worker never waits for a client.
 * The head goes out with the first piece, so a first fetch that fails (a
 * volume server down) still answers a JSON 5xx rather than a 200 whose body
 * breaks off; a later failure aborts the connection (the body is short). The
 * response ends only after every fetch in flight has come back, since each
 * fetch defers through the request.
 */
#include "config.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>
#include "filer/chunk_io.h"
#include "filer/chunks.h"
#include "filer/filer_hardlink.h"
#include "filer/filer_int.h"
#include "http_util.h"
#include "log.h"
#include "util.h"

#define READ_PIECE   CHUNK_READ_PIECE_DEFAULT /* bytes per fetch, at most */
#define READ_AHEAD   CHUNK_READ_AHEAD_DEFAULT /* READ_AHEAD * READ_PIECE bytes in the window */
#define READ_SLOTS   16                       /* fetches in flight (small chunks: small pieces) */
#define MANIFEST_MAX (64u << 20)              /* largest manifest blob fetched whole */
#define PROXY_MAX    (256u << 20) /* largest chunk ?proxyChunkId relays (the -maxMB bound) */

/* Tuning for benchmarks: WEEDFS_READ_AHEAD (1..16 pieces) and WEEDFS_READ_PIECE_KB (64..65536). */
static size_t read_ahead = READ_AHEAD, read_piece = READ_PIECE;
static pthread_once_t tune_once = PTHREAD_ONCE_INIT;

static void tune_load(void)
{
	const char *a = getenv("WEEDFS_READ_AHEAD"), *p = getenv("WEEDFS_READ_PIECE_KB");
	uint32_t v;
	if (a && parse_u32(a, &v) && v >= 1 && v <= READ_SLOTS)
		read_ahead = v;
	if (p && parse_u32(p, &v) && v >= 64 && v <= 65536)
		read_piece = (size_t)v << 10;
}

struct rslot {
	struct rstream *s;
	struct chunk_piece p;
	buf data;    /* the worker's while fetching */
	wfs_err err; /* the worker's while fetching */
	bool ready;
};

struct rstream {
	struct filer_live live; /* first: drop() casts back */
	struct fjob *j;
	struct filer_chunk *chunks; /* resolved (no manifests) */
	size_t n;
	chunk_pieces *plan;
	struct rslot *slots;
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

static void rstream_free(struct rstream *s)
{
	if (!s)
		return;
	filer_live_remove(s->j->f, &s->live);
	filer_chunks_free(s->chunks, s->n);
	chunk_pieces_free(s->plan);
	for (size_t i = 0; s->slots && i < s->window; i++)
		buf_free(&s->slots[i].data);
	free(s->slots);
	free(s);
}

static wfs_err fetch_blob(void *ctx, const char *fid, buf *out)
{
	struct filer *f = ctx;
	return blob_client_read(f->bc, fid, 0, 0, MANIFEST_MAX, out);
}

static void entry_etag(const struct filer_entry *e, char *out, size_t outlen)
{
	XXH64_state_t *st = XXH64_createState();
	XXH64_reset(st, 0);
	if (e->has_content) {
		XXH64_update(st, e->content, e->content_len);
	} else {
		for (size_t i = 0; i < e->n_chunks; i++) {
			const struct filer_chunk *c = &e->chunks[i];
			XXH64_update(st, c->fid, strlen(c->fid) + 1);
			XXH64_update(st, &c->offset, sizeof(c->offset));
			XXH64_update(st, &c->size, sizeof(c->size));
		}
		XXH64_update(st, &e->attr.size, sizeof(e->attr.size));
	}
	snprintf(out, outlen, "\"%016llx\"", (unsigned long long)XXH64_digest(st));
	XXH64_freeState(st);
}

/* ---- streaming ---- */

/* The server stopped mid-download (pools joined, loops gone): free the stream and its job. */
static void rstream_drop(struct filer_live *l)
{
	struct rstream *s = (struct rstream *)l;
	struct fjob *j = s->j;
	rstream_free(s);
	fjob_free(j);
}

/* Sends the status line and headers: once, when the first piece is in hand. Loop thread. */
static void stream_head(struct rstream *s)
{
	struct fjob *j = s->j;
	for (size_t i = 0; i < j->nrh; i++)
		http_resp_header(j->req, j->rh[i].name, j->rh[i].value);
	http_resp_start(j->req, j->status, s->length);
	s->started = true;
}

/*
 * Ends the response once no fetch is out. The first piece failed, so nothing
 * was sent yet: answer a JSON error a client can act on (503 while a volume
 * server is unreachable) instead of a 200 whose body breaks off. Later
 * failures abort the connection. Loop thread.
 */
static void stream_end(struct rstream *s)
{
	struct fjob *j = s->j;
	http_req *req = j->req;
	if (s->err)
		log_warn("read of %s failed at offset %" PRIu64 ": %s", j->path, s->err_pos,
			 wfs_strerror(s->err));
	if (s->err && !s->started && !http_req_closed(req)) {
		int status = 500;
		if (s->err == WFS_EUNAVAIL || s->err == WFS_ETIMEDOUT)
			status = 503;
		http_resp_error(req, status, "%s: reading the content: %s", j->path,
				wfs_strerror(s->err));
	} else if (s->ok) {
		http_resp_end(req);
	} else {
		http_resp_abort(req);
	}
	rstream_free(s);
	fjob_free(j);
}

static void stream_stop(struct rstream *s, bool ok)
{
	s->stopping = true;
	s->ok = ok;
	if (!s->running)
		stream_end(s);
}

static void fail(struct rstream *s, wfs_err err, uint64_t at)
{
	if (!s->err) {
		s->err = err;
		s->err_pos = at;
	}
	stream_stop(s, false);
}

static void piece_done(http_req *req, void *arg);

/* Fetches one piece. I/O pool. */
static void fetch_run(void *arg)
{
	struct rslot *sl = arg;
	sl->err = chunk_piece_fetch(sl->s->j->f->bc, &sl->p, &sl->data);
	http_req_defer(sl->s->j->req, piece_done, sl);
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

static void pump(struct rstream *s);

static void on_drain(http_req *req, void *arg)
{
	struct rstream *s = arg;
	(void)req;
	s->draining = false;
	pump(s);
}

/* Starts fetches until the window is full or the range is planned. Loop thread. */
static bool fill(struct rstream *s)
{
	while (!s->planned_all && s->tail - s->head < s->window && s->wbytes < s->cap) {
		struct rslot *sl = &s->slots[s->tail % s->window];
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
		if (!filer_submit(s->j->f, true, fetch_run, sl)) {
			s->running--;
			fail(s, WFS_EUNAVAIL, sl->p.file_offset); /* the filer is stopping */
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
static void pump(struct rstream *s)
{
	http_req *req = s->j->req;
	for (;;) {
		struct rslot *sl;
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
	struct rslot *sl = arg;
	struct rstream *s = sl->s;
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
static void stream_start(struct fjob *j)
{
	struct rstream *s = j->ext;
	if (j->method == HTTP_HEAD || s->pos >= s->end) {
		stream_head(s);
		stream_stop(s, true);
		return;
	}
	pump(s);
}

/* ---- the metadata job ---- */

/*
 * ?metadata=true: the entry as JSON; with resolveManifest=true its manifest
 * chunks are replaced by the data chunks they list (nested manifests too), as
 * a read sees them. Worker thread (fetches manifest blobs).
 */
static void answer_metadata(struct fjob *j, struct filer_entry *e)
{
	const char *p = fjob_query(j, "pretty");
	struct filer_chunk *resolved = NULL, *saved_c = e->chunks;
	size_t nresolved = 0, saved_n = e->n_chunks;
	bool resolve, has_manifest = false;
	json_w *w;

	if (!fjob_query_bool(j, "resolveManifest", false, &resolve))
		return;
	for (size_t i = 0; i < e->n_chunks; i++)
		has_manifest |= e->chunks[i].is_manifest;
	if (resolve && has_manifest) {
		wfs_err err = chunks_resolve_manifests(e->chunks, e->n_chunks, fetch_blob, j->f,
						       &resolved, &nresolved);
		if (err) {
			fjob_store_error(j, err, "resolving the chunk manifests");
			return;
		}
		e->chunks = resolved; /* lent to the JSON writer, given back below */
		e->n_chunks = nresolved;
	}
	w = jw_new(&j->body, p && strcmp(p, "false") && strcmp(p, "n"));
	filer_entry_json(w, e);
	jw_free(w);
	e->chunks = saved_c;
	e->n_chunks = saved_n;
	filer_chunks_free(resolved, nresolved);
	j->ctype = "application/json";
	j->status = 200;
}

/*
 * Echoes extended attributes as response headers (the reference's rule: all
 * but the internal "Seaweed-" and "xattr-" ones), when name and value are
 * safe in a header.
 */
static void echo_xattrs(struct fjob *j, const struct filer_entry *e)
{
	for (size_t i = 0; i < e->n_xattrs; i++) {
		const struct filer_xattr *x = &e->xattrs[i];
		char *v;
		bool safe = x->value_len <= 4096;
		if (j->nrh + 4 >= FILER_JOB_HEADERS)
			break; /* keep room for Content-Range and Content-Type */
		if (!strncasecmp(x->name, "Seaweed-", 8) || !strncasecmp(x->name, "xattr-", 6))
			continue;
		for (const char *p = x->name; safe && *p; p++)
			safe = *p > ' ' && *p < 127 && *p != ':';
		for (size_t k = 0; safe && k < x->value_len; k++)
			safe = x->value[k] >= ' ' && x->value[k] != 127;
		if (!safe)
			continue;
		v = xstrndup((const char *)x->value, x->value_len);
		fjob_resp_header(j, x->name, v);
		free(v);
	}
}

/* Answers 304 when the client's copy is current; true if it did. */
static bool not_modified(struct fjob *j, const struct filer_entry *e, const char *etag)
{
	const char *inm = fjob_header(j, "If-None-Match");
	const char *ims = fjob_header(j, "If-Modified-Since");
	time_t t;
	if (inm)
		return strstr(inm, etag) != NULL || !strcmp(inm, "*");
	if (ims && http_date_parse(ims, &t))
		return (int64_t)t >= e->attr.mtime_ns / 1000000000;
	return false;
}

static void get_run(struct fjob *j)
{
	struct filer_entry *e = NULL;
	struct http_range r = {0, 0};
	const char *range, *mime;
	char etag[40], date[40], cr[96];
	uint64_t size;
	bool meta, partial = false;
	int nr = 0;
	wfs_err err;

	if (!fjob_query_bool(j, "metadata", false, &meta))
		return;
	err = filer_find(j->f, NULL, j->dir, j->name, &e);
	if (!err)
		err = filer_hardlink_resolve(j->f->store, NULL,
					     &e); /* a link reads the shared file */
	if (!err && filer_ttl_expired(e)) {
		filer_entry_free(e); /* the sweep deletes it; until then it is gone for readers */
		e = NULL;
		err = WFS_ENOENT;
	}
	if (err == WFS_ENOENT) {
		fjob_error(j, 404, "%s: not found", j->path);
		return;
	}
	if (err) {
		fjob_store_error(j, err, "lookup");
		return;
	}
	if (meta) {
		answer_metadata(j, e);
		goto out;
	}
	if (filer_entry_is_dir(e)) {
		filer_list_run(j, e);
		goto out;
	}
	entry_etag(e, etag, sizeof(etag));
	http_date_format((time_t)(e->attr.mtime_ns / 1000000000), date, sizeof(date));
	fjob_resp_header(j, "ETag", etag);
	fjob_resp_header(j, "Last-Modified", date);
	fjob_resp_header(j, "Accept-Ranges", "bytes");
	echo_xattrs(j, e);
	if (not_modified(j, e, etag)) {
		j->status = 304;
		goto out;
	}
	mime = e->attr.mime ? e->attr.mime : http_mime_by_ext(e->name);
	size = e->has_content ? e->content_len : e->attr.size;
	range = fjob_header(j, "Range");
	r.len = size;
	if (range) {
		err = http_parse_range(range, size, &r, 1, &nr);
		if (err == WFS_ERANGE) {
			snprintf(cr, sizeof(cr), "bytes */%" PRIu64, size);
			fjob_resp_header(j, "Content-Range", cr);
			fjob_error(j, 416, "range not satisfiable for a %" PRIu64 " byte file",
				   size);
			goto out;
		}
		if (!err && nr == 1) {
			partial = true;
			snprintf(cr, sizeof(cr), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, r.start,
				 r.start + r.len - 1, size);
			fjob_resp_header(j, "Content-Range", cr);
		} else {
			r.start = 0; /* malformed or several ranges: the whole file (RFC 9110) */
			r.len = size;
		}
	}
	j->status = partial ? 206 : 200;
	j->ctype_owned = xstrdup(mime ? mime : "application/octet-stream");
	j->ctype = j->ctype_owned;
	if (e->has_content || size == 0) {
		buf_reset(&j->body);
		if (e->has_content && r.len)
			buf_append(&j->body, e->content + r.start, (size_t)r.len);
		goto out;
	}
	{
		struct rstream *s = xcalloc(1, sizeof(*s));
		pthread_once(&tune_once, tune_load);
		s->j = j;
		err = chunks_resolve_manifests(e->chunks, e->n_chunks, fetch_blob, j->f, &s->chunks,
					       &s->n);
		if (!err)
			err = chunk_pieces_new(s->chunks, s->n, r.start, r.len, read_piece,
					       &s->plan);
		if (err) {
			rstream_free(s);
			fjob_store_error(j, err, "reading the chunk list");
			goto out;
		}
		s->window = READ_SLOTS;
		s->cap = (uint64_t)read_ahead * read_piece;
		s->slots = xcalloc(s->window, sizeof(*s->slots));
		for (size_t i = 0; i < s->window; i++)
			s->slots[i].s = s;
		s->pos = r.start;
		s->end = r.start + r.len;
		s->length = (int64_t)r.len;
		s->live.drop = rstream_drop;
		filer_live_add(j->f, &s->live);
		fjob_resp_header(j, "Content-Type", j->ctype);
		j->ctype = NULL;
		j->ext = s;
		j->on_loop = stream_start;
	}
out:
	filer_entry_free(e);
}

/* ?proxyChunkId=fid: the blob, fetched by the filer (replica failover included). I/O pool. */
static void proxy_job(void *arg)
{
	struct fjob *j = arg;
	const char *fid = fjob_query(j, "proxyChunkId");
	size_t n = fid ? strlen(fid) : 0;
	wfs_err err;

	if (n == 0 || n >= FILER_FID_MAX || strspn(fid, "0123456789abcdefABCDEF,_") != n ||
	    !strchr(fid, ',')) {
		fjob_error(j, 400, "invalid proxyChunkId");
	} else {
		err = blob_client_read(j->f->bc, fid, 0, 0, PROXY_MAX, &j->body);
		if (err == WFS_ENOENT)
			fjob_error(j, 404, "chunk %s not found", fid);
		else if (err)
			fjob_store_error(j, err, "reading the chunk");
		else
			j->ctype = "application/octet-stream";
	}
	fjob_respond_deferred(j);
}

void filer_handle_proxy(struct fjob *j)
{
	if (j->method != HTTP_GET && j->method != HTTP_HEAD) {
		http_resp_error(j->req, 405, "proxyChunkId takes GET or HEAD");
		fjob_free(j);
		return;
	}
	if (!filer_submit(j->f, true, proxy_job, j)) {
		http_resp_error(j->req, 503, "filer is stopping");
		fjob_free(j);
	}
}

/*
 * A stat (?metadata=true, manifests left as stored) on a store with local reads
 * is answered right here on the loop: a point read costs less than handing the
 * job to a worker and back, which doubled the context switches of a stat.
 */
static bool stat_on_loop(struct fjob *j)
{
	const char *meta = fjob_query(j, "metadata"), *resolve = fjob_query(j, "resolveManifest");
	bool b;
	if (!filer_store_local_reads(j->f->store) || !meta)
		return false;
	if (*meta && (!parse_bool(meta, &b) || !b))
		return false; /* malformed values get their 400 from the worker path */
	return !resolve || (*resolve && parse_bool(resolve, &b) && !b);
}

void filer_handle_get(struct fjob *j)
{
	j->run = get_run;
	if (stat_on_loop(j)) {
		get_run(j);
		fjob_respond(j);
		return;
	}
	fjob_submit(j);
}
