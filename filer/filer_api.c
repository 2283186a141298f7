/*
 * The JSON entry API: POST /.api/v1/<op> with a JSON body, a JSON answer
 * (docs/api-filer-json.md). The mount and the gateways use it.
 *
 * DESIGN: the loop thread reads the body (bounded), a metadata worker parses
 * it (filer_api_parse.c), runs the operation and writes the answer; on a
 * local store the loop thread itself does for lookups and simple changes
 * (api_try_inline: two thread hand-offs cost more than those). The
 * namespace changes (create, update, delete, rename, link, xattrs, a batch of
 * xattrs) are the namespace core's (namespace.h: locks, transaction,
 * conditions, events, garbage queue); this module turns a request into a
 * core call and the core's result into the answer. Reads (lookup, list) and
 * the blob-side operations (assign, lookupVolume, freeChunks, statfs) are
 * served here.
 * The ids assign hands out are leased in the garbage queue (gc_queue.h), so
 * a client that dies before its commit leaks no blob; the create or update
 * that references them claims them.
 *
 * Errors carry the wfs_err's name as a POSIX-like "code" (wfs_err_name), so
 * a client maps them to errno, with the status of wfs_err_http_status. The
 * entry etag is xxh64 of the stored encoding (ns_etag).
 */
#include "config.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client/entry_json.h"
#include "filer/filer_api_parse.h"
#include "filer/filer_hardlink.h"
#include "filer/filer_int.h"
#include "filer/filer_lock.h"
#include "filer/gc_queue.h"
#include "filer/namespace.h"
#include "http_client.h"
#include "log.h"
#include "util.h"

struct api_job {
	char *op;
	char *body;
	size_t len;
	struct api_req *r;
};

/* ---- answers ---- */

/* An error answer: code's name and status (a linked directory is 409 EPERM, as documented). */
static void api_error(struct fjob *j, wfs_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void api_error(struct fjob *j, wfs_err code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fjob_verror(j, code == WFS_EPERM ? 409 : wfs_err_http_status(code), wfs_err_name(code),
		    fmt, ap);
	va_end(ap);
}

/*
 * The code of a failure of the store or the blob client: a timeout is EAGAIN
 * (retry); a missing or existing entry, a bad argument and a cluster or disk
 * out of space (ENOSPC, EDQUOT: the mount's write fails with them) keep
 * theirs; anything else is EIO.
 */
static wfs_err below_code(wfs_err err)
{
	switch (err) {
	case WFS_ETIMEDOUT:
		return WFS_EUNAVAIL;
	case WFS_ENOENT:
	case WFS_EEXIST:
	case WFS_EINVAL:
	case WFS_EUNAVAIL:
	case WFS_ENOSPC:
	case WFS_EQUOTA:
		return err;
	default:
		return WFS_EIO;
	}
}

/* The answer to a failure of the store or the blob client while doing what. */
static void api_below(struct fjob *j, wfs_err err, const char *what)
{
	api_error(j, below_code(err), "%s: %s", what, wfs_strerror(err));
}

/* The answer to a namespace operation that failed. */
static void api_fail(struct fjob *j, const struct ns_result *res)
{
	api_error(j, res->below ? below_code(res->err) : res->err, "%s", res->msg);
}

/* Appends e as entry JSON with "etag" added. */
static void entry_out(const struct filer_entry *e, buf *out)
{
	char etag[NS_ETAG_SIZE];
	size_t at = out->len;
	entry_json(e, ENTRY_JSON_CONTENT, out);
	ns_etag(e, etag);
	if (out->len > at && out->data[out->len - 1] == '}') {
		out->len--; /* reopen the object to add the etag */
		buf_printf(out, ",\"etag\":\"%s\"}", etag);
	}
}

static void respond_entry(struct fjob *j, const struct filer_entry *e)
{
	buf_reset(&j->body);
	entry_out(e, &j->body);
	j->status = 200;
	j->ctype = "application/json";
}

/*
 * The entry in its stored encoding (docs/filer-entry-format.md), for a client
 * that asked for it: decoding it costs a client far less than the JSON form,
 * and the etag is the xxh64 of these very bytes.
 */
static void respond_entry_encoded(struct fjob *j, const struct filer_entry *e)
{
	buf_reset(&j->body);
	if (filer_entry_encode(e, &j->body)) {
		api_error(j, WFS_EIO, "the entry does not encode");
		return;
	}
	j->status = 200;
	j->ctype = FILER_ENTRY_MEDIA_TYPE;
}

static bool wants_encoded_entry(const struct fjob *j)
{
	const char *a = fjob_header(j, "Accept");
	return a && strstr(a, FILER_ENTRY_MEDIA_TYPE);
}

static void respond_ok(struct fjob *j)
{
	buf_reset(&j->body);
	buf_append(&j->body, "{}", 2);
	j->status = 200;
	j->ctype = "application/json";
}

/* ---- reads ---- */

static void op_lookup(struct fjob *j, struct api_req *r)
{
	struct filer_entry *e = NULL;
	wfs_err err = filer_find(j->f, NULL, r->dir, r->name, &e);
	if (!err)
		err = filer_hardlink_resolve(j->f->store, NULL, &e);
	if (err)
		api_below(j, err, r->path);
	else if (wants_encoded_entry(j))
		respond_entry_encoded(j, e);
	else
		respond_entry(j, e);
	filer_entry_free(e);
}

static void op_list(struct fjob *j, struct api_req *r)
{
	struct filer_entry *d = NULL;
	struct ns_page p = {0};
	json_w *w;
	wfs_err err = filer_find(j->f, NULL, r->dir, r->name, &d);
	if (err) {
		api_below(j, err, r->path);
		goto out;
	}
	if (!filer_entry_is_dir(d)) {
		api_error(j, WFS_ENOTDIR, "%s is not a directory", r->path);
		goto out;
	}
	/* one more than asked tells whether there are more */
	err = filer_store_list(j->f->store, NULL, r->path, r->start, r->inclusive, r->limit + 1,
			       r->prefix, ns_page_add, &p, NULL);
	if (err) {
		api_below(j, err, "listing");
		goto out;
	}
	{
		buf tail = BUF_INIT;
		size_t shown = MIN(p.n, r->limit);
		buf_reset(&j->body);
		buf_append(&j->body, "{\"entries\":[", 12);
		for (size_t i = 0; i < shown; i++) {
			/* a name of a hard link shows the shared file; a bad record its stub */
			(void)filer_hardlink_resolve(j->f->store, NULL, &p.v[i]);
			if (i)
				buf_append(&j->body, ",", 1);
			entry_out(p.v[i], &j->body);
		}
		buf_append(&j->body, "],", 2);
		/* the rest as its own object, spliced in without its opening brace */
		w = jw_new(&tail, false);
		jw_obj_begin(w);
		entry_json_text(w, "lastName", shown ? p.v[shown - 1]->name : "");
		jw_kv_bool(w, "more", p.n > r->limit);
		jw_obj_end(w);
		jw_free(w);
		buf_append(&j->body, tail.data + 1, tail.len - 1);
		buf_free(&tail);
	}
	j->status = 200;
	j->ctype = "application/json";
out:
	ns_page_free(&p);
	filer_entry_free(d);
}


/* ---- namespace changes (namespace.h) ---- */

static void op_create(struct fjob *j, struct api_req *r)
{
	struct ns_move *mv = xcalloc(r->nmoves ? r->nmoves : 1, sizeof(*mv));
	struct ns_create c = {
		.path = r->path,
		.dir = r->dir,
		.name = r->name,
		.exclusive = r->exclusive,
		.parents = r->parents,
		.if_etag = r->if_etag,
		.consume = (const char *const *)r->consume,
		.nconsume = r->nconsume,
		.moves = mv,
		.nmoves = r->nmoves,
	};
	struct ns_result res = {0};
	bool replaced;

	for (size_t i = 0; i < r->nmoves; i++)
		mv[i] = (struct ns_move){r->moves[i].from, r->moves[i].to, r->moves[i].if_etag};
	if (ns_create(j->f, j->signature, &c, r->entry, &replaced, &res)) {
		api_fail(j, &res);
	} else if (r->quiet) {
		char etag[NS_ETAG_SIZE];
		ns_etag(r->entry, etag);
		buf_reset(&j->body);
		buf_printf(&j->body, "{\"etag\":\"%s\"}", etag);
		j->ctype = "application/json";
	} else {
		respond_entry(j, r->entry);
	}
	if (!res.err)
		j->status = replaced ? 200 : 201;
	free(mv);
}

/* update's "set" fields as the core's. */
static const struct {
	unsigned api, ns;
} set_bits[] = {
	{API_SET_MODE, NS_SET_MODE},   {API_SET_UID, NS_SET_UID},
	{API_SET_GID, NS_SET_GID},     {API_SET_SIZE, NS_SET_SIZE},
	{API_SET_MTIME, NS_SET_MTIME}, {API_SET_CTIME, NS_SET_CTIME},
	{API_SET_CHUNKS, NS_SET_CHUNKS}, {API_SET_APPEND, NS_SET_APPEND},
	{API_SET_ATIME, NS_SET_ATIME}, {API_SET_CONTENT, NS_SET_CONTENT},
	{API_SET_DROP, NS_SET_DROP},
};

static void op_update(struct fjob *j, struct api_req *r)
{
	struct ns_update u = {
		.path = r->path,
		.dir = r->dir,
		.name = r->name,
		.if_etag = r->if_etag,
		.attr = &r->attr,
		.chunks = r->chunks ? r->chunks->chunks : NULL,
		.nchunks = r->chunks ? r->chunks->n_chunks : 0,
		.content = r->content,
		.content_len = r->content_len,
		.drop = (const char *const *)r->fids,
		.ndrop = r->nfids,
		.durable = r->fsync,
	};
	struct ns_result res = {0};
	struct filer_entry *e = NULL;

	if (!r->set && r->fsync && !r->if_etag) {
		/* an fsync of a file with nothing to commit: the entry stays as it is (no
		   ctime), the commits before are made durable */
		wfs_err err = filer_store_sync(j->f->store);
		if (err)
			api_below(j, err, "store sync");
		else
			op_lookup(j, r);
		return;
	}
	for (size_t i = 0; i < ARRAY_LEN(set_bits); i++)
		if (r->set & set_bits[i].api)
			u.set |= set_bits[i].ns;
	if (ns_update(j->f, j->signature, &u, &e, &res))
		api_fail(j, &res);
	else
		respond_entry(j, e);
	filer_entry_free(e);
}

static void op_delete(struct fjob *j, struct api_req *r)
{
	struct ns_delete d = {
		.path = r->path,
		.dir = r->dir,
		.name = r->name,
		.recursive = r->recursive,
		.if_etag = r->if_etag,
	};
	struct ns_result res = {0};

	if (ns_delete(j->f, j->signature, &d, &res))
		api_fail(j, &res);
	else
		respond_ok(j);
}

static void op_rename(struct fjob *j, struct api_req *r)
{
	struct ns_rename rn = {
		.style = NS_RENAME_POSIX,
		.from = r->path,
		.from_dir = r->dir,
		.from_name = r->name,
		.to = r->path2,
		.to_dir = r->dir2,
		.to_name = r->name2,
		.no_replace = r->no_replace,
		.exchange = r->exchange,
		.if_etag = r->if_etag,
	};
	struct ns_result res = {0};

	if (ns_rename(j->f, j->signature, &rn, &res))
		api_fail(j, &res);
	else
		respond_ok(j);
}

/* link: newPath becomes another name of target's file (filer_hardlink.h). */
static void op_link(struct fjob *j, struct api_req *r)
{
	struct ns_result res = {0};
	struct filer_entry *made = NULL;

	if (ns_link(j->f, j->signature, r->path, r->dir, r->name, r->path2, r->dir2, r->name2,
		    &made, &res)) {
		api_fail(j, &res);
	} else {
		respond_entry(j, made);
		j->status = 201;
	}
	filer_entry_free(made);
}

/* The parser's xattr flags as the core's. */
static const enum ns_xattr_flag xflags[] = {
	[API_XATTR_ANY] = NS_XATTR_ANY,
	[API_XATTR_CREATE] = NS_XATTR_CREATE,
	[API_XATTR_REPLACE] = NS_XATTR_REPLACE,
};

static void op_xattr(struct fjob *j, struct api_req *r)
{
	struct ns_result res = {0};
	struct filer_entry *e = NULL;
	wfs_err err;

	if (r->op == API_SET_XATTR)
		err = ns_xattr_set(j->f, j->signature, r->path, r->dir, r->name, r->xname,
				   r->xvalue, r->xvalue_len, xflags[r->xflag], r->if_etag, &e,
				   &res);
	else
		err = ns_xattr_remove(j->f, j->signature, r->path, r->dir, r->name, r->xname,
				      r->if_etag, &e, &res);
	if (err)
		api_fail(j, &res);
	else
		respond_entry(j, e);
	filer_entry_free(e);
}

/*
 * setXattrs: the ops all or nothing (ns_xattrs_set) → {"etags": [...]}, each
 * op's entry's etag after, in op order. A refusal names the op it concerns:
 * {"error", "code", "index"}.
 */
static void op_xattrs(struct fjob *j, struct api_req *r)
{
	struct ns_xattr_op *ops = xcalloc(r->nxops, sizeof(*ops));
	char(*etags)[NS_ETAG_SIZE] = xcalloc(r->nxops, sizeof(*etags));
	struct ns_result res = {0};
	size_t failed = SIZE_MAX;

	for (size_t i = 0; i < r->nxops; i++) {
		const struct api_xattr_op *x = &r->xops[i];
		ops[i] = (struct ns_xattr_op){x->path,   x->dir,          x->name,
					      x->xname,  x->remove,       x->value,
					      x->len,    xflags[x->flag], x->if_etag};
	}
	if (ns_xattrs_set(j->f, j->signature, ops, r->nxops, etags, &failed, &res)) {
		api_fail(j, &res);
		if (failed != SIZE_MAX && j->body.len && j->body.data[j->body.len - 1] == '}') {
			j->body.len--; /* reopen the error object to add the index */
			buf_printf(&j->body, ",\"index\":%zu}", failed);
		}
	} else {
		buf_reset(&j->body);
		buf_append(&j->body, "{\"etags\":[", 10);
		for (size_t i = 0; i < r->nxops; i++)
			buf_printf(&j->body, "%s\"%s\"", i ? "," : "", etags[i]);
		buf_append(&j->body, "]}", 2);
		j->status = 200;
		j->ctype = "application/json";
	}
	free(etags);
	free(ops);
}

/* ---- blobs ---- */

static void op_assign(struct fjob *j, struct api_req *r)
{
	struct blob_assign_params ap = {
		.collection = r->collection ? r->collection : j->f->collection,
		.replication = r->replication ? r->replication : j->f->replication,
		.ttl = r->ttl,
	};
	struct blob_assignment *a = xcalloc(r->count ? r->count : 1, sizeof(*a));
	const char **fids = xcalloc(r->count ? r->count : 1, sizeof(*fids));
	wfs_err err = WFS_OK;
	json_w *w;

	if (ap.collection && !*ap.collection)
		ap.collection = NULL;
	if (ap.replication && !*ap.replication)
		ap.replication = NULL;
	for (uint32_t i = 0; i < r->count; i++) {
		err = blob_client_assign(j->f->bc, &ap, &a[i]);
		if (err) {
			api_below(j, err == WFS_ENOENT ? WFS_EUNAVAIL : err, "assign");
			goto out;
		}
		fids[i] = a[i].fid;
	}
	/*
	 * Leased before the client sees them: a blob stored under an id that no
	 * entry claims within the lease is deleted (the client died before its
	 * commit). One transaction for the whole request.
	 */
	err = gc_lease_add(j->f->store, fids, r->count,
			   (int64_t)time_now_ns() + j->f->assign_lease_s * 1000000000);
	if (err) {
		api_below(j, err, "assign: recording the lease");
		goto out;
	}
	buf_reset(&j->body);
	w = jw_new(&j->body, false);
	jw_obj_begin(w);
	jw_key(w, "fids");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < r->count; i++) {
		jw_obj_begin(w);
		jw_kv_str(w, "fid", a[i].fid);
		jw_kv_str(w, "url", a[i].url);
		jw_kv_str(w, "publicUrl", a[i].public_url);
		if (a[i].auth[0]) /* the master's write token, for a client without the key */
			jw_kv_str(w, "auth", a[i].auth);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	jw_free(w);
	j->status = 200;
	j->ctype = "application/json";
out:
	free(a);
	free(fids);
}

static void op_lookup_volume(struct fjob *j, struct api_req *r)
{
	struct blob_location *locs = NULL;
	size_t n = 0;
	json_w *w;
	/* always the master's current view: a client asks after its own cached copy failed,
	   and the filer's cache may predate a server's death or return */
	wfs_err err = blob_client_lookup(j->f->bc, r->volume_id, true, &locs, &n);
	if (err == WFS_ENOENT) {
		api_error(j, WFS_ENOENT, "volume %" PRIu32 " not found", r->volume_id);
		return;
	}
	if (err) {
		api_below(j, err, "volume lookup");
		return;
	}
	buf_reset(&j->body);
	w = jw_new(&j->body, false);
	jw_obj_begin(w);
	jw_kv_u64(w, "volumeId", r->volume_id);
	jw_key(w, "locations");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		jw_kv_str(w, "url", locs[i].url);
		jw_kv_str(w, "publicUrl", locs[i].public_url);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	jw_free(w);
	free(locs);
	j->status = 200;
	j->ctype = "application/json";
}

/*
 * freeChunks: the caller (a mount) stored these blobs but will never reference them (a
 * range rewritten after its upload, a truncate, a failed commit, a file deleted before
 * its flush). Queued due at once in the persistent garbage queue, so a filer restart
 * loses none; an id still under its assign lease is due at once too (not at the end of
 * the lease). The API trusts its clients, as it does for update {chunks}:
 * nothing checks that no entry references them, so a client must name only blobs it
 * never committed.
 */
static void op_free_chunks(struct fjob *j, struct api_req *r)
{
	wfs_err err = gc_queue_free_now(j->f->store, (const char *const *)r->fids, r->nfids);
	if (err) {
		api_below(j, err, "freeChunks");
		return;
	}
	filer_gc_kick(j->f);
	buf_reset(&j->body);
	buf_printf(&j->body, "{\"queued\":%zu}", r->nfids);
	j->status = 200;
	j->ctype = "application/json";
}

/* Sums one server's replica list of /vol/status into the statfs figures. */
static void statfs_add(yajl_val vols, uint64_t *used, uint64_t *files, uint32_t **seen,
		       size_t *nseen)
{
	if (!YAJL_IS_ARRAY(vols))
		return;
	for (size_t i = 0; i < vols->u.array.len; i++) {
		yajl_val v = vols->u.array.values[i];
		uint64_t id = 0, size = 0, fc = 0, dc = 0;
		bool dup = false;
		if (!json_get_u64(v, "Id", &id) || !json_get_u64(v, "Size", &size))
			continue;
		*used += size; /* every copy takes space */
		for (size_t k = 0; k < *nseen && !dup; k++)
			dup = (*seen)[k] == id;
		if (dup)
			continue; /* a replica holds the same files */
		if ((*nseen & (*nseen - 1)) == 0)
			*seen = xrealloc(*seen, (*nseen ? *nseen * 2 : 1) * sizeof(**seen));
		(*seen)[(*nseen)++] = (uint32_t)id;
		json_get_u64(v, "FileCount", &fc);
		json_get_u64(v, "DeleteCount", &dc);
		*files += fc > dc ? fc - dc : 0;
	}
}

/*
 * statfs: the cluster's capacity from the master's /vol/status. Total is the
 * volume size limit times the volume slots of the live servers, used the sum
 * of every volume copy's size, files the live needles of each volume once.
 */
static void op_statfs(struct fjob *j)
{
	struct http_result res;
	char msg[128];
	yajl_val root = NULL, vols, dcs;
	uint64_t limit = 0, max = 0, used = 0, files = 0, total;
	uint32_t *seen = NULL;
	size_t nseen = 0;
	json_w *w;
	wfs_err err;

	http_result_init(&res);
	err = blob_client_master_get(j->f->bc, "/vol/status", &res);
	if (err || res.status != 200) {
		api_error(j, WFS_EUNAVAIL, "the master %s did not answer /vol/status (%s)",
			  blob_client_master(j->f->bc), err ? wfs_strerror(err) : "bad status");
		goto out;
	}
	root = json_parse(res.body.data, res.body.len, msg, sizeof(msg));
	vols = root ? json_get(root, "Volumes") : NULL;
	if (!vols || !json_get_u64(root, "VolumeSizeLimit", &limit) ||
	    !json_get_u64(vols, "Max", &max)) {
		api_error(j, WFS_EUNAVAIL, "malformed /vol/status from the master");
		goto out;
	}
	dcs = json_get(vols, "DataCenters");
	for (size_t d = 0; YAJL_IS_OBJECT(dcs) && d < dcs->u.object.len; d++) {
		yajl_val racks = dcs->u.object.values[d];
		for (size_t r = 0; YAJL_IS_OBJECT(racks) && r < racks->u.object.len; r++) {
			yajl_val nodes = racks->u.object.values[r];
			for (size_t n = 0; YAJL_IS_OBJECT(nodes) && n < nodes->u.object.len; n++)
				statfs_add(nodes->u.object.values[n], &used, &files, &seen, &nseen);
		}
	}
	total = max && limit > UINT64_MAX / max ? UINT64_MAX : limit * max;
	buf_reset(&j->body);
	w = jw_new(&j->body, false);
	jw_obj_begin(w);
	jw_kv_u64(w, "totalBytes", total);
	jw_kv_u64(w, "usedBytes", used);
	jw_kv_u64(w, "freeBytes", total > used ? total - used : 0);
	jw_kv_u64(w, "files", files);
	jw_obj_end(w);
	jw_free(w);
	j->status = 200;
	j->ctype = "application/json";
out:
	yajl_tree_free(root);
	http_result_free(&res);
	free(seen);
}

/*
 * configuration: what a client writing chunks itself (the mount, the S3
 * gateway) must do as this filer does (SeaweedFS's GetFilerConfiguration):
 * "cipher" (-encryptVolumeData: seal every chunk) and "maxMB".
 */
static void op_configuration(struct fjob *j)
{
	json_w *w;

	buf_reset(&j->body);
	w = jw_new(&j->body, false);
	jw_obj_begin(w);
	jw_kv_bool(w, "cipher", j->f->encrypt);
	jw_kv_u64(w, "maxMB", j->f->chunk_size >> 20);
	jw_obj_end(w);
	jw_free(w);
	j->status = 200;
	j->ctype = "application/json";
}

/* Parses j's request into a->r; false when it answered the request instead (a bad body). */
static bool api_parse(struct fjob *j)
{
	struct api_job *a = j->ext;
	char msg[256] = "";
	const char *raw_header = fjob_header(j, API_RAW_CONTENT_HEADER);
	uint64_t raw_len = 0;
	wfs_err err;

	if (raw_header && (!parse_u64(raw_header, &raw_len) || raw_len > a->len)) {
		api_error(j, WFS_EINVAL, "%s: \"%.32s\" is not a count of the body's bytes",
			  API_RAW_CONTENT_HEADER, raw_header);
		return false;
	}
	err = api_req_parse(a->op, a->body, a->len - raw_len,
			    raw_header ? (const uint8_t *)a->body + a->len - raw_len : NULL,
			    (size_t)raw_len, &a->r, msg, sizeof(msg));
	if (err == WFS_ENOENT) {
		api_error(j, WFS_ENOSYS, "%s", msg);
		return false;
	}
	if (err) {
		api_error(j, WFS_EINVAL, "%s", msg);
		return false;
	}
	return true;
}

static void api_dispatch(struct fjob *j, struct api_req *r)
{
	switch (r->op) {
	case API_LOOKUP:
		op_lookup(j, r);
		break;
	case API_LIST:
		op_list(j, r);
		break;
	case API_CREATE:
		op_create(j, r);
		break;
	case API_UPDATE:
		op_update(j, r);
		break;
	case API_DELETE:
		op_delete(j, r);
		break;
	case API_RENAME:
		op_rename(j, r);
		break;
	case API_SET_XATTR:
	case API_REMOVE_XATTR:
		op_xattr(j, r);
		break;
	case API_ASSIGN:
		op_assign(j, r);
		break;
	case API_LOOKUP_VOLUME:
		op_lookup_volume(j, r);
		break;
	case API_LINK:
		op_link(j, r);
		break;
	case API_STATFS:
		op_statfs(j);
		break;
	case API_CONFIGURATION:
		op_configuration(j);
		break;
	case API_FREE_CHUNKS:
		op_free_chunks(j, r);
		break;
	case API_SET_XATTRS:
		op_xattrs(j, r);
		break;
	}
}

/* Runs j's operation (parsing it unless the loop did) and leaves the answer in j. */
static void api_run(struct fjob *j)
{
	struct api_job *a = j->ext;

	if (!a->r && filer_lock_api(j, a->op, a->body, a->len))
		return; /* lock, getLock, lockSession: filer_lock.c */
	if (a->r || api_parse(j))
		api_dispatch(j, a->r);
}

static void api_job_drop(struct api_job *a)
{
	api_req_free(a->r);
	free(a->op);
	free(a->body);
	free(a);
}

/* Runs j's operation and frees its request (the answer is left in j). */
static void api_job_do(struct fjob *j)
{
	struct api_job *a = j->ext;
	api_run(j);
	j->ext = NULL;
	api_job_drop(a);
}

static void api_job_run(void *arg)
{
	struct fjob *j = arg;
	api_job_do(j);
	fjob_respond_deferred(j);
}

/* Whether e (NULL: none) lists a manifest chunk. */
static bool has_manifest(const struct filer_entry *e)
{
	for (size_t i = 0; e && i < e->n_chunks; i++)
		if (e->chunks[i].is_manifest)
			return true;
	return false;
}

/*
 * Whether r is quick enough for the loop thread of a filer with a local
 * store: a lookup, or a change that does nothing but local store work of a
 * bounded size (no manifest fetch from a volume server: no consume, no new
 * manifest chunk, whose members the claim reads, no size, which may cut a
 * manifest; no fsync's disk flush; no tree).
 */
static bool api_inline_op(const struct api_req *r)
{
	switch (r->op) {
	case API_LOOKUP:
		return true;
	case API_CREATE:
		return !r->nconsume && !has_manifest(r->entry);
	case API_UPDATE:
		return !r->fsync && !(r->set & API_SET_SIZE) && !has_manifest(r->chunks);
	case API_DELETE:
		return !r->recursive;
	default:
		return false;
	}
}

/*
 * Handing a request to a worker and its answer back costs two thread
 * wake-ups, more than a small change of a local database takes. So on a
 * filer with a local store, short bodies of the ops that may qualify are
 * parsed here and run here when api_inline_op says they are quick and, for
 * changes, no worker of either pool is busy: a change here could otherwise
 * wait for the locks or the store's writer behind a worker's long change (a
 * recursive delete; an upload's commit that sends a blob while it holds
 * them) and stall the loop's other connections. Everything else goes to the
 * metadata pool as before.
 */
#define API_INLINE_BODY_MAX (64u << 10)

static bool api_try_inline(struct fjob *j)
{
	struct api_job *a = j->ext;
	static const char *const ops[] = {"lookup", "create", "update", "delete"};
	bool known = false;

	if (!j->f->local_store || a->len > API_INLINE_BODY_MAX)
		return false;
	for (size_t i = 0; i < ARRAY_LEN(ops) && !known; i++)
		known = !strcmp(a->op, ops[i]);
	if (!known)
		return false;
	if (!api_parse(j))
		return true; /* answered: a bad body */
	if (!api_inline_op(a->r) || (a->r->op != API_LOOKUP && !filer_workers_idle(j->f)))
		return false; /* parsed: the worker runs it */
	api_dispatch(j, a->r);
	return true;
}

static void api_body(http_req *req, const char *data, size_t len, void *arg)
{
	struct filer *f = arg;
	struct api_job *a = xcalloc(1, sizeof(*a));
	struct fjob *j = fjob_new(f, req, "/", true);

	{
		const char *op = http_req_path(req) + strlen(API_PREFIX);
		a->op = xstrndup(op, strnlen(op, 64)); /* xstrndup copies exactly n bytes */
	}
	a->body = xmalloc(len + 1);
	memcpy(a->body, data, len);
	a->body[len] = '\0';
	a->len = len;
	j->ext = a;
	if (api_try_inline(j)) {
		j->ext = NULL;
		api_job_drop(a);
		fjob_respond(j);
		return;
	}
	if (!filer_submit(f, false, api_job_run, j)) {
		http_resp_error(req, 503, "filer is stopping");
		api_job_drop(a);
		fjob_free(j);
	}
}

bool filer_api_route(struct filer *f, http_req *req)
{
	const char *raw = http_req_path(req);
	const char *name, *value;

	if (strncmp(raw, "/.api/", 6))
		return false;
	if (strncmp(raw, API_PREFIX, strlen(API_PREFIX))) {
		http_resp_error(req, 404, "unknown API version (use %s<op>)", API_PREFIX);
		return true;
	}
	if (http_req_method(req) != HTTP_POST) {
		http_resp_header(req, "Allow", "POST");
		http_resp_error(req, 405, "the entry API takes POST");
		return true;
	}
	for (size_t i = 0; http_req_query_at(req, i, &name, &value); i++) {
		if (strcmp(name, "jwt")) { /* ?jwt= is filer signing's, checked already */
			http_resp_error(req, 400, "the entry API takes no query parameters");
			return true;
		}
	}
	/* the job is made once the body is in: a dropped connection leaves nothing behind */
	http_req_read_body(req, API_BODY_MAX, api_body, f);
	return true;
}
