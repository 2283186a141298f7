/*
 * GET and HEAD: file content, ?metadata=true, and directories (handed to
 * filer_list.c).
 *
 * DESIGN: a metadata job finds the entry, answers conditional requests and
 * plans the read (manifests resolved, the Range cut into chunk views). Inline
 * content is answered from the job. Chunked content streams: an I/O job
 * fetches one piece (at most READ_PIECE bytes of one chunk, or zeros for a
 * hole) and defers it to the loop, which writes it and submits the next fetch
 * at once unless the connection's output is above its high-water mark, in
 * which case the drain callback submits it. The head goes out with the first
 * piece, so a first fetch that fails (a volume server down) still answers a
 * JSON 5xx rather than a 200 whose body breaks off. One fetch is in flight
 * per response, so a reader costs about two pieces of memory however large
 * the file, and a slow reader stalls only its own response.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>
#include "filer/chunks.h"
#include "filer/filer_hardlink.h"
#include "filer/filer_int.h"
#include "http_util.h"
#include "log.h"
#include "util.h"

#define READ_PIECE   (1u << 20)
#define MANIFEST_MAX (64u << 20)  /* largest manifest blob fetched whole */
#define PROXY_MAX    (256u << 20) /* largest chunk ?proxyChunkId relays (the -maxMB bound) */

struct rstream {
	struct filer_live live; /* first: drop() casts back */
	struct fjob *j;
	struct filer_chunk *chunks; /* resolved (no manifests) */
	size_t n;
	struct chunk_view *v;
	size_t nv, vi;
	uint64_t pos, end; /* next file offset to send, end of the range */
	int64_t length;    /* Content-Length */
	buf piece;
	wfs_err err;
	bool started; /* the head was sent (after the first piece arrived) */
};

static void rstream_free(struct rstream *s)
{
	if (!s)
		return;
	filer_live_remove(s->j->f, &s->live);
	filer_chunks_free(s->chunks, s->n);
	free(s->v);
	buf_free(&s->piece);
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

/* The server stopped mid-download: free the stream and its job. */
static void rstream_drop(struct filer_live *l)
{
	struct rstream *s = (struct rstream *)l;
	struct fjob *j = s->j;
	rstream_free(s);
	fjob_free(j);
}

static void fetch_run(void *arg);

static void rstream_finish(struct rstream *s, bool ok)
{
	struct fjob *j = s->j;
	if (ok)
		http_resp_end(j->req);
	else
		http_resp_abort(j->req);
	rstream_free(s);
	fjob_free(j);
}

static void rstream_next(struct rstream *s)
{
	if (!filer_submit(s->j->f, true, fetch_run, s))
		rstream_finish(s, false);
}

static void on_drain(http_req *req, void *arg)
{
	(void)req;
	rstream_next(arg);
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
 * The first piece failed, so nothing was sent yet: answer a JSON error a client
 * can act on (503 while a volume server is unreachable) instead of a 200 whose
 * body breaks off. Loop thread.
 */
static void stream_fail_early(struct rstream *s)
{
	struct fjob *j = s->j;
	int status = 500;
	if (s->err == WFS_EUNAVAIL || s->err == WFS_ETIMEDOUT)
		status = 503;
	log_warn("read of %s failed at offset %" PRIu64 ": %s", j->path, s->pos,
		 wfs_strerror(s->err));
	http_resp_error(j->req, status, "%s: reading the content: %s", j->path,
			wfs_strerror(s->err));
	rstream_free(s);
	fjob_free(j);
}

static void piece_done(http_req *req, void *arg)
{
	struct rstream *s = arg;
	bool more;
	if (s->err && !s->started && !http_req_closed(req)) {
		stream_fail_early(s);
		return;
	}
	if (s->err) {
		log_warn("read of %s failed at offset %" PRIu64 ": %s", s->j->path, s->pos,
			 wfs_strerror(s->err));
		rstream_finish(s, false);
		return;
	}
	if (http_req_closed(req)) {
		rstream_finish(s, false);
		return;
	}
	if (!s->started)
		stream_head(s);
	more = http_resp_write(req, s->piece.data, s->piece.len);
	s->pos += s->piece.len;
	buf_reset(&s->piece);
	if (s->pos >= s->end) {
		rstream_finish(s, true);
		return;
	}
	if (more)
		rstream_next(s);
	else
		http_resp_on_drain(req, on_drain, s);
}

/* Fills s->piece with the next bytes from s->pos. I/O pool. */
static void fetch_run(void *arg)
{
	struct rstream *s = arg;
	uint64_t want = MIN((uint64_t)READ_PIECE, s->end - s->pos);

	while (s->vi < s->nv && s->v[s->vi].file_offset + s->v[s->vi].len <= s->pos)
		s->vi++;
	if (s->vi < s->nv && s->v[s->vi].file_offset <= s->pos) {
		const struct chunk_view *cv = &s->v[s->vi];
		uint64_t in = s->pos - cv->file_offset;
		uint64_t n = MIN(want, cv->len - in);
		s->err = blob_client_read(s->j->f->bc, s->chunks[cv->chunk].fid,
					  cv->chunk_offset + in, n, 0, &s->piece);
		if (!s->err && s->piece.len != n)
			s->err = WFS_ECORRUPT;
	} else {
		/* a hole: zeros up to the next view or the end */
		uint64_t n = want;
		if (s->vi < s->nv)
			n = MIN(n, s->v[s->vi].file_offset - s->pos);
		buf_reserve(&s->piece, n);
		memset(s->piece.data, 0, n);
		s->piece.len = n;
	}
	http_req_defer(s->j->req, piece_done, s);
}

/* The head waits for the first piece, so that a failing first fetch can still answer 5xx. */
static void stream_start(struct fjob *j)
{
	struct rstream *s = j->ext;
	if (j->method == HTTP_HEAD || s->pos >= s->end) {
		stream_head(s);
		rstream_finish(s, true);
		return;
	}
	rstream_next(s);
}

/* ---- the metadata job ---- */

static void answer_metadata(struct fjob *j, const struct filer_entry *e)
{
	const char *p = fjob_query(j, "pretty");
	json_w *w = jw_new(&j->body, p && strcmp(p, "false") && strcmp(p, "n"));
	filer_entry_json(w, e);
	jw_free(w);
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
		s->j = j;
		err = chunks_resolve_manifests(e->chunks, e->n_chunks, fetch_blob, j->f, &s->chunks,
					       &s->n);
		if (!err)
			err = chunks_read_plan(s->chunks, s->n, r.start, r.len, &s->v, &s->nv);
		if (err) {
			rstream_free(s);
			fjob_store_error(j, err, "reading the chunk list");
			goto out;
		}
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

void filer_handle_get(struct fjob *j)
{
	j->run = get_run;
	fjob_submit(j);
}
