/*
 * PUT and POST of file content (raw body or the first file part of a
 * multipart form), op=append, and mkdir -p (POST or PUT of a path ending in
 * "/" without a form).
 *
 * DESIGN
 * - The body streams into -maxMB chunks through body_chunks.h (bounded
 *   memory, back-pressure); a multipart form's file part is picked out on the
 *   way. Chunks uploaded while the body streams are recorded in the garbage
 *   queue under a lease (body_chunks.c), so a filer killed mid-PUT leaks
 *   (almost) nothing.
 * - The commit (small bodies stay inline in the entry) runs under the path's
 *   lock and in one store transaction: makes the parents, reads the old
 *   entry, inserts or replaces it, queues the replaced entry's chunks in the
 *   garbage queue (the namespace scope, namespace.h) and claims the new ones
 *   off it. The chunks of a failed commit are queued at once
 *   (filer_free_chunks).
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include "filer/body_chunks.h"
#include "client/chunk_cipher.h"
#include "client/chunk_io.h"
#include "filer/filer_hardlink.h"
#include "client/entry_json.h"
#include "filer/filer_int.h"
#include "filer/namespace.h"
#include "http_util.h"
#include "log.h"
#include "util.h"

#define MAX_CHUNKS_PER_FILE 100000 /* bounds a single upload: maxMB * this */
#define MANIFEST_BATCH      1000   /* beyond this many chunks, lists go to manifests */

struct upload {
	struct filer_live live; /* first: drop() casts back */
	struct fjob *j;
	struct body_chunks *bc;
	struct chunk_writer_opts cwo;
	char *ttl_s, *dc, *rack, *collection, *replication;
	multipart *mp;
	/* multipart */
	bool in_file_part, seen_file_part;
	char *part_filename, *part_ctype;
	/* parameters */
	uint32_t mode;
	uint32_t ttl_sec;
	bool append, skip_parent;
	char *mime;
	uint64_t limit;
};

static void upload_free(struct upload *u)
{
	filer_live_remove(u->j->f, &u->live);
	body_chunks_free(u->bc);
	multipart_free(u->mp);
	free(u->part_filename);
	free(u->part_ctype);
	free(u->mime);
	free(u->ttl_s);
	free(u->dc);
	free(u->rack);
	free(u->collection);
	free(u->replication);
	free(u);
}

/* The server stopped mid-upload: abort the writer (deleting its chunks), free all. */
static void upload_drop(struct filer_live *l)
{
	struct upload *u = (struct upload *)l;
	struct fjob *j = u->j;
	upload_free(u);
	fjob_free(j);
}

/* ---- parameters ---- */

/* "3d", "12h", ... to seconds; false if malformed. */
static bool ttl_seconds(const char *s, uint32_t *out)
{
	static const struct {
		char unit;
		uint32_t sec;
	} units[] = {{'m', 60},     {'h', 3600},    {'d', 86400},
		     {'w', 604800}, {'M', 2592000}, {'y', 31536000}};
	size_t n = strlen(s);
	uint32_t v;
	char num[16];
	if (n < 2 || n > 10)
		return false;
	memcpy(num, s, n - 1);
	num[n - 1] = '\0';
	if (!parse_u32(num, &v) || v == 0 || v > 255)
		return false;
	for (size_t i = 0; i < ARRAY_LEN(units); i++)
		if (units[i].unit == s[n - 1]) {
			*out = v * units[i].sec;
			return true;
		}
	return false;
}

static bool replication_valid(const char *s)
{
	return strlen(s) == 3 && s[0] >= '0' && s[0] <= '9' && s[1] >= '0' && s[1] <= '9' &&
	       s[2] >= '0' && s[2] <= '9';
}

static bool short_param_ok(const char *s) { return strlen(s) <= FILER_SHORT_MAX; }

/*
 * Reads the upload parameters into u; answers 400 on the job and returns
 * false when one is malformed. Loop or worker thread (uses the copied query).
 */
static bool parse_params(struct upload *u)
{
	struct fjob *j = u->j;
	struct filer *f = j->f;
	const char *s;
	bool b;

	u->mode = 0660;
	if ((s = fjob_query(j, "mode")) && *s) {
		char *end;
		unsigned long m = strtoul(s, &end, 8);
		if (*end || m > 07777) {
			fjob_error(j, 400, "invalid mode \"%.20s\" (octal, at most 7777)", s);
			return false;
		}
		u->mode = (uint32_t)m;
	}
	u->cwo.chunk_size = f->chunk_size;
	u->cwo.encrypt = f->encrypt;
	if ((s = fjob_query(j, "maxMB")) && *s) {
		uint32_t mb;
		if (!parse_u32(s, &mb) || mb < 1 || mb > 256) {
			fjob_error(j, 400, "invalid maxMB \"%.20s\" (1..256)", s);
			return false;
		}
		u->cwo.chunk_size = (uint64_t)mb << 20;
	}
	if ((s = fjob_query(j, "ttl")) && *s) {
		if (!ttl_seconds(s, &u->ttl_sec)) {
			fjob_error(j, 400, "invalid ttl \"%.20s\" (e.g. 3d; units m h d w M y)", s);
			return false;
		}
		u->ttl_s = xstrdup(s);
	}
	s = fjob_query(j, "replication");
	if (!s || !*s)
		s = f->replication;
	if (*s && !replication_valid(s)) {
		fjob_error(j, 400, "invalid replication \"%.20s\" (three digits xyz)", s);
		return false;
	}
	u->replication = *s ? xstrdup(s) : NULL;
	s = fjob_query(j, "collection");
	if (!s || !*s)
		s = f->collection;
	if (!short_param_ok(s)) {
		fjob_error(j, 400, "collection name too long");
		return false;
	}
	u->collection = *s ? xstrdup(s) : NULL;
	if ((s = fjob_query(j, "dataCenter")) && *s) {
		if (!short_param_ok(s)) {
			fjob_error(j, 400, "dataCenter too long");
			return false;
		}
		u->dc = xstrdup(s);
	}
	if ((s = fjob_query(j, "rack")) && *s) {
		if (!short_param_ok(s)) {
			fjob_error(j, 400, "rack too long");
			return false;
		}
		u->rack = xstrdup(s);
	}
	if (!fjob_query_bool(j, "fsync", false, &u->cwo.fsync) ||
	    !fjob_query_bool(j, "skipCheckParentDir", false, &u->skip_parent) ||
	    !fjob_query_bool(j, "saveInside", false, &b))
		return false;
	u->append = fjob_query(j, "op") != NULL;
	/* appends always go to chunks: the old content decides what the file becomes */
	u->cwo.inline_max = u->append ? 0 : b ? FILER_CONTENT_MAX : FILER_INLINE_MAX;
	u->cwo.collection = u->collection;
	u->cwo.replication = u->replication;
	u->cwo.ttl = u->ttl_s;
	u->cwo.data_center = u->dc;
	u->cwo.rack = u->rack;
	u->limit = u->cwo.chunk_size * MAX_CHUNKS_PER_FILE;
	return true;
}

/* A content type worth keeping: what the client said, unless it said nothing useful. */
static char *useful_mime(const char *ct)
{
	size_t n;
	if (!ct || !*ct || !strncasecmp(ct, "application/octet-stream", 24) ||
	    !strncasecmp(ct, "application/x-www-form-urlencoded", 33) ||
	    !strncasecmp(ct, "multipart/", 10))
		return NULL;
	n = strlen(ct);
	return n <= FILER_SHORT_MAX ? xstrdup(ct) : NULL;
}

/* ---- the commit ---- */

static bool name_valid(const char *n)
{
	size_t len = strlen(n);
	return len > 0 && len <= FILER_NAME_MAX && !strchr(n, '/') && strcmp(n, ".") &&
	       strcmp(n, "..");
}

/* Uploads inline content as one chunk (an append to an inline file that outgrew it). */
static wfs_err inline_to_chunk(struct upload *u, struct filer_entry *e)
{
	struct blob_assign_params ap = {.collection = u->collection,
					.replication = u->replication,
					.ttl = u->ttl_s,
					.data_center = u->dc,
					.rack = u->rack};
	struct blob_upload_params up = {.ttl = u->ttl_s, .fsync = u->cwo.fsync};
	char etag[BLOB_ETAG_MAX] = "", *fid = NULL;
	struct filer_chunk key = {0};
	wfs_err err;
	if (e->content_len) {
		err = chunk_cipher_save(u->j->f->bc, &ap, &up, u->cwo.encrypt, e->content,
					e->content_len, &key, &fid, etag);
		if (err)
			return err;
		filer_chunk_copy_key(filer_entry_add_chunk(e, fid, 0, e->content_len,
							   e->attr.mtime_ns, *etag ? etag : NULL,
							   false),
				     &key);
		free(fid);
	}
	filer_entry_clear_content(e);
	return WFS_OK;
}

/*
 * Stores the entry for the finished upload (chunks: the new list, ownership
 * taken; or inline data). Sets the job's response; true once committed. I/O pool.
 */
static bool commit_entry(struct upload *u, struct filer_chunk *chunks, size_t n,
			 const uint8_t *idata, size_t ilen, bool is_inline, uint64_t size)
{
	struct fjob *j = u->j;
	struct filer *f = j->f;
	struct filer_entry *old = NULL, *e = NULL;
	struct ns_result res = {0};
	struct ns_tx t;
	const char *dir = j->dir, *name = j->name;
	char *dirbuf = NULL, *full = NULL;
	int64_t now = (int64_t)time_now_ns();
	bool committed = false;
	wfs_err err;

	ns_tx_init(&t, f, j->signature, &res); /* ns_end is safe from here on */
	if (j->trailing_slash) {
		/* a form posted to a directory: the part's file name names the entry */
		if (!u->part_filename || !name_valid(u->part_filename)) {
			fjob_error(j, 400, "a form posted to a directory needs a valid file name");
			goto out;
		}
		dirbuf = xstrdup(j->path);
		dir = dirbuf;
		name = u->part_filename;
	}
	if (!*name) {
		fjob_error(j, 400, "cannot write content to the root directory");
		goto out;
	}
	full = filer_path_join(dir, name);
	ns_lock_path(&t, full);
	if (ns_begin(&t)) {
		fjob_ns_error(j, &res);
		goto out;
	}
	if (filer_write_target(j, t.tx, &t.evs, dir, name, !u->skip_parent, &old))
		goto out;
	if (u->append && old && filer_hardlink_is_linked(old)) {
		/* The name holds a stub; the content is shared (filer_hardlink.h). */
		fjob_error(j, 409, "%s is a hard link: append through the JSON API (update)", full);
		goto out;
	}
	if (!u->append && old) {
		err = filer_hardlink_release(f->store, t.tx, old);
		if (err) {
			fjob_store_error(j, err, "dropping a hard link");
			goto out;
		}
	}
	if (u->append && old) {
		uint64_t base = old->has_content ? old->content_len : old->attr.size;
		e = filer_entry_dup(old);
		if (e->has_content) {
			err = inline_to_chunk(u, e);
			if (err) {
				fjob_store_error(j, err, "moving inline content to a chunk");
				goto out;
			}
		}
		for (size_t i = 0; i < n; i++)
			filer_entry_push_chunk(e, &chunks[i])->offset += base;
		e->attr.size = base + size;
	} else {
		e = filer_entry_new(dir, name);
		e->attr.mode = S_IFREG | u->mode;
		e->attr.crtime_ns = old ? old->attr.crtime_ns : now;
		e->attr.nlink = 1;
		e->attr.size = size;
		if (is_inline)
			filer_entry_set_content(e, idata, ilen);
		for (size_t i = 0; i < n; i++)
			filer_entry_push_chunk(e, &chunks[i]);
		if (old)
			ns_garbage_entry(&t.g, old);
	}
	e->attr.mtime_ns = e->attr.ctime_ns = now;
	e->attr.ttl_sec = u->ttl_sec ? u->ttl_sec : e->attr.ttl_sec;
	if (u->mime || u->part_ctype) {
		free(e->attr.mime);
		e->attr.mime = xstrdup(u->mime ? u->mime : u->part_ctype);
	}
	if (u->collection) {
		free(e->attr.collection);
		e->attr.collection = xstrdup(u->collection);
	}
	if (u->replication) {
		free(e->attr.replication);
		e->attr.replication = xstrdup(u->replication);
	}
	if (filer_entry_check(e)) {
		fjob_error(j, 400, "entry out of bounds (too many chunks or attributes)");
		goto out;
	}
	err = old ? filer_store_update(f->store, t.tx, e) : filer_store_insert(f->store, t.tx, e);
	if (err == WFS_EEXIST && !u->append) {
		/* created by a parallel transaction (another filer on PostgreSQL): replace it */
		err = filer_store_find(f->store, t.tx, dir, name, &old);
		if (!err && filer_entry_is_dir(old)) {
			fjob_error(j, 409, "%s is a directory", full);
			goto out;
		}
		if (!err)
			err = filer_hardlink_release(f->store, t.tx, old);
		if (!err) {
			ns_garbage_entry(&t.g, old);
			err = filer_store_update(f->store, t.tx, e);
		}
	}
	if (!err)
		err = body_chunks_claim(u->bc, t.tx);
	if (err) {
		fjob_store_error(j, err, "saving the entry");
		goto out;
	}
	filer_evs_add(&t.evs, old, e);
	if (ns_commit(&t)) {
		fjob_ns_error(j, &res);
		goto out;
	}
	/* the new chunks now belong to the entry */
	committed = true;
	filer_chunks_free(chunks, n);
	chunks = NULL;
	n = 0;
	{
		json_w *w = jw_new(&j->body, false);
		jw_obj_begin(w);
		entry_json_text(w, "name", name);
		jw_kv_u64(w, "size", size);
		jw_obj_end(w);
		jw_free(w);
		j->status = 201;
		j->ctype = "application/json";
	}
out:
	ns_end(&t);
	/* chunks still ours: the commit failed, so nothing references them */
	filer_free_chunks(f, chunks, n);
	filer_entry_free(old);
	filer_entry_free(e);
	free(dirbuf);
	free(full);
	return committed;
}

/* ---- body streaming (body_chunks.h) ---- */

/* I/O pool: the whole body is in chunks (or inline); stores the entry. */
static bool upload_commit(void *arg, struct filer_chunk *chunks, size_t n, uint64_t size)
{
	struct upload *u = arg;
	struct filer_chunk *packed = NULL;
	size_t npacked = 0;
	const uint8_t *idata = NULL;
	size_t ilen = 0;
	bool is_inline = body_chunks_inline(u->bc, &idata, &ilen);
	wfs_err err;

	if (n > MANIFEST_BATCH) {
		err = chunk_manifestize(u->j->f->bc, &u->cwo, chunks, n, MANIFEST_BATCH, &packed,
					&npacked);
		if (err) {
			fjob_error(u->j, 503, "could not store the chunk manifest: %s",
				   wfs_strerror(err));
			filer_free_chunks(u->j->f, chunks, n);
			return false;
		}
		filer_chunks_free(chunks, n);
		chunks = packed;
		n = npacked;
	}
	return commit_entry(u, chunks, n, idata, ilen, is_inline, size);
}

/* Answers on the loop: the commit's or the failure's response; frees u. */
static void upload_respond(void *arg)
{
	struct upload *u = arg;
	struct fjob *j = u->j;
	upload_free(u);
	fjob_respond(j);
}

static bool mp_on_part(const struct multipart_part *part, void *arg)
{
	struct upload *u = arg;
	if (u->seen_file_part)
		return true; /* later parts are ignored */
	if (!part->filename && strcmp(part->name, "file"))
		return true;
	u->in_file_part = true;
	u->seen_file_part = true;
	u->part_filename = part->filename && *part->filename ? xstrdup(part->filename) : NULL;
	u->part_ctype = useful_mime(part->content_type);
	return true;
}

static bool mp_on_data(const char *data, size_t len, void *arg)
{
	struct upload *u = arg;
	if (u->in_file_part)
		body_chunks_append(u->bc, data, len);
	return true;
}

static void mp_on_part_end(void *arg)
{
	struct upload *u = arg;
	u->in_file_part = false;
}

static const struct multipart_cb mp_cb = {mp_on_part, mp_on_data, mp_on_part_end};

static void upload_feed(void *arg, const char *data, size_t len)
{
	struct upload *u = arg;
	if (!u->mp)
		body_chunks_append(u->bc, data, len);
	else if (multipart_feed(u->mp, data, len))
		body_chunks_fail(u->bc, 400, "malformed multipart body");
}

static void upload_end(void *arg, wfs_err err)
{
	struct upload *u = arg;
	if (err == WFS_ETOOBIG)
		body_chunks_fail(u->bc, 413, "body over the %" PRIu64 " byte limit", u->limit);
	else if (err)
		body_chunks_fail(u->bc, 400, "upload interrupted: %s", wfs_strerror(err));
	else if (u->mp && (multipart_finish(u->mp) || !u->seen_file_part))
		body_chunks_fail(u->bc, 400, "malformed multipart body or no file part");
}

static const struct body_chunks_ops upload_ops = {
	.what = "the upload",
	.journal = true,
	.feed = upload_feed,
	.end = upload_end,
	.commit = upload_commit,
	.respond = upload_respond,
};

/* ---- mkdir ---- */

/* Inside t, makes the directory j->path (mode) unless it is one already. */
static wfs_err mkdir_leaf(struct ns_tx *t, struct fjob *j, uint32_t mode)
{
	struct filer_entry *e = NULL;
	wfs_err err = filer_find(t->f, t->tx, j->dir, j->name, &e);

	if (err == WFS_ENOENT) {
		e = filer_dir_entry_new(j->dir, j->name, mode);
		err = filer_store_insert(t->f->store, t->tx, e);
		if (!err) {
			filer_evs_add(&t->evs, NULL, e);
			err = filer_dir_links(t->f, t->tx, &t->evs, j->dir, 1);
		} else if (err == WFS_EEXIST) {
			/* made by a parallel transaction: fine if it is a directory */
			filer_entry_free(e);
			e = NULL;
			err = filer_find(t->f, t->tx, j->dir, j->name, &e);
		}
	}
	if (err)
		ns_fail_below(t->res, err, "mkdir");
	else if (!filer_entry_is_dir(e))
		err = ns_fail(t->res, WFS_EEXIST, "%s exists and is a file", j->path);
	filer_entry_free(e);
	return err;
}

static void mkdir_run(struct fjob *j)
{
	struct ns_result res = {0};
	struct ns_tx t;
	uint32_t mode = 0770;
	const char *s = fjob_query(j, "mode");
	wfs_err err;

	if (s && *s) {
		char *end;
		unsigned long m = strtoul(s, &end, 8);
		if (*end || m > 07777) {
			fjob_error(j, 400, "invalid mode \"%.20s\" (octal, at most 7777)", s);
			return;
		}
		mode = (uint32_t)m;
	}
	err = ns_begin_path(&t, j->f, j->signature, &res, j->path);
	if (!err)
		err = ns_make_parents(&t, j->dir, j->path);
	if (!err)
		err = mkdir_leaf(&t, j, mode);
	if (!err)
		err = ns_commit(&t);
	ns_end(&t);
	if (err) {
		fjob_ns_error(j, &res);
		return;
	}
	buf_printf(&j->body, "{}");
	j->status = 201;
	j->ctype = "application/json";
}

/* ---- entry point ---- */

void filer_handle_write(struct fjob *j)
{
	http_req *req = j->req;
	const char *ct = http_req_header(req, "Content-Type");
	bool is_mp = ct && !strncasecmp(ct, "multipart/form-data", 19);
	int64_t cl = http_req_content_length(req);
	struct upload *u;
	wfs_err err;

	if (j->trailing_slash && !is_mp) {
		if (cl > 0) {
			http_resp_error(req, 400,
					"a path ending in \"/\" takes a multipart form or no body "
					"(mkdir)");
			fjob_free(j);
			return;
		}
		j->run = mkdir_run;
		fjob_submit(j);
		return;
	}
	u = xcalloc(1, sizeof(*u));
	u->j = j;
	if (!parse_params(u)) {
		upload_free(u);
		fjob_respond(j);
		return;
	}
	if (cl >= 0 && (uint64_t)cl > u->limit) {
		http_resp_error(req, 413, "body over the %" PRIu64 " byte limit", u->limit);
		upload_free(u);
		fjob_free(j);
		return;
	}
	if (!is_mp)
		u->mime = useful_mime(ct);
	u->bc = body_chunks_new(j, &u->cwo, &upload_ops, u, &err);
	if (!u->bc) {
		http_resp_error(req, 400, "invalid upload parameters: %s", wfs_strerror(err));
		upload_free(u);
		fjob_free(j);
		return;
	}
	if (is_mp) {
		u->mp = multipart_new(ct, &mp_cb, u);
		if (!u->mp) {
			http_resp_error(req, 400, "malformed multipart Content-Type");
			upload_free(u);
			fjob_free(j);
			return;
		}
	}
	u->live.drop = upload_drop;
	filer_live_add(j->f, &u->live);
	body_chunks_start(u->bc, u->limit + (is_mp ? (64u << 10) : 0));
}
