/*
 * GET and HEAD: file content, ?metadata=true, and directories (handed to
 * filer_list.c).
 *
 * DESIGN: a metadata job finds the entry, answers conditional requests and
 * plans the read (manifests resolved, the Range checked). Inline content is
 * answered from the job. Chunked content streams through chunk_stream.h (its
 * DESIGN comment: the window of pieces fetched on the I/O pool, back-pressure,
 * the head sent with the first piece so a failing first fetch still answers a
 * JSON 5xx); this file only adds the job's headers, the error answer and the
 * registration that frees a download the stopping server dropped.
 */
#include "config.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>
#include "client/chunk_cipher.h"
#include "client/chunk_io.h"
#include "client/chunk_stream.h"
#include "client/chunks.h"
#include "filer/filer_hardlink.h"
#include "filer/filer_int.h"
#include "http_util.h"
#include "log.h"
#include "util.h"

#define READ_PIECE   CHUNK_READ_PIECE_DEFAULT   /* bytes per fetch, at most */
#define READ_AHEAD   CHUNK_READ_AHEAD_DEFAULT   /* READ_AHEAD * READ_PIECE bytes in the window */
#define READ_SLOTS   CHUNK_STREAM_SLOTS_DEFAULT /* fetches in flight (small chunks: small pieces) */
#define MANIFEST_MAX (64u << 20)                /* largest manifest blob fetched whole */
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

/* A download in flight: owns the job and the stream. */
struct rdl {
	struct filer_live live; /* first: rdl_drop() casts back */
	struct fjob *j;
	chunk_stream *cs;
};

static void rdl_free(struct rdl *d)
{
	filer_live_remove(d->j->f, &d->live);
	chunk_stream_free(d->cs);
	fjob_free(d->j);
	free(d);
}

static wfs_err fetch_blob(void *ctx, const char *fid, buf *out)
{
	struct filer *f = ctx;
	return blob_client_read(f->bc, fid, 0, 0, MANIFEST_MAX + CHUNK_CIPHER_OVERHEAD, out);
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

/* ---- streaming (chunk_stream's owner) ---- */

/* The server stopped mid-download (pools joined, loops gone): free the stream and its job. */
static void rdl_drop(struct filer_live *l) { rdl_free((struct rdl *)l); }

static bool rdl_submit(void *owner, void (*fn)(void *arg), void *arg)
{
	struct rdl *d = owner;
	return filer_submit(d->j->f, true, fn, arg);
}

/* The status line and the job's headers, once the first piece is in hand. Loop thread. */
static void rdl_head(void *owner, int64_t length)
{
	struct fjob *j = ((struct rdl *)owner)->j;
	for (size_t i = 0; i < j->nrh; i++)
		http_resp_header(j->req, j->rh[i].name, j->rh[i].value);
	http_resp_start(j->req, j->status, length);
}

/*
 * Ends the response. The first piece failed, so nothing was sent yet: answer
 * a JSON error a client can act on (503 while a volume server is unreachable)
 * instead of a 200 whose body breaks off. Later failures abort the
 * connection. A client that went away needs neither an answer nor a log
 * line. Loop thread.
 */
static void rdl_done(void *owner, wfs_err err, uint64_t err_pos, bool started)
{
	struct rdl *d = owner;
	struct fjob *j = d->j;
	http_req *req = j->req;
	bool closed = http_req_closed(req);
	if (err && !closed)
		log_warn("read of %s failed at offset %" PRIu64 ": %s", j->path, err_pos,
			 wfs_strerror(err));
	if (err && !started && !closed) {
		int status = 500;
		if (err == WFS_EUNAVAIL || err == WFS_ETIMEDOUT)
			status = 503;
		http_resp_error(req, status, "%s: reading the content: %s", j->path,
				wfs_strerror(err));
	} else if (!err) {
		http_resp_end(req);
	} else {
		http_resp_abort(req);
	}
	rdl_free(d);
}

static const struct chunk_stream_ops rdl_ops = {
	.submit = rdl_submit,
	.head = rdl_head,
	.done = rdl_done,
};

static void rdl_start(struct fjob *j)
{
	struct rdl *d = j->ext;
	chunk_stream_start(d->cs);
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
		struct chunk_stream_opts o = {.slots = READ_SLOTS,
					      .head_only = j->method == HTTP_HEAD};
		struct filer_chunk *chunks = NULL;
		size_t n = 0;
		struct rdl *d = xcalloc(1, sizeof(*d));
		pthread_once(&tune_once, tune_load);
		o.piece_size = read_piece;
		o.read_ahead = read_ahead;
		err = chunks_resolve_manifests(e->chunks, e->n_chunks, fetch_blob, j->f, &chunks,
					       &n);
		if (err)
			filer_chunks_free(chunks, n);
		else
			d->cs = chunk_stream_new(j->req, j->f->bc, chunks, n, r.start, r.len, &o,
						 &rdl_ops, d, &err);
		if (err) {
			free(d); /* the job answers the error */
			fjob_store_error(j, err, "reading the chunk list");
			goto out;
		}
		d->j = j;
		d->live.drop = rdl_drop;
		filer_live_add(j->f, &d->live);
		fjob_resp_header(j, "Content-Type", j->ctype);
		j->ctype = NULL;
		j->ext = d;
		j->on_loop = rdl_start;
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
