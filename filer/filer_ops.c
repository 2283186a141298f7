/*
 * The REST API's DELETE (files, empty and, with recursive=true, whole
 * directory trees), mv.from (rename or move, directories included) and
 * cp.from (file copy).
 *
 * DESIGN: a delete and a move are the namespace core's (namespace.h: the tree
 * lock, one transaction, an event per change, the freed chunks to the garbage
 * queue in it); this module reads their parameters and answers with
 * SeaweedFS's statuses. A copy duplicates the content (new blobs, on the I/O
 * pool), so the two files never share a chunk and deleting one cannot free
 * the other's data; its commit runs in a namespace scope under the target's
 * lock.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client/chunk_cipher.h"
#include "client/chunk_io.h"
#include "filer/filer_hardlink.h"
#include "filer/filer_int.h"
#include "filer/namespace.h"
#include "log.h"
#include "util.h"

#define COPY_MAX_CHUNK (256u << 20)

/* ---- delete ---- */

static void delete_run(struct fjob *j)
{
	struct ns_delete d = {.path = j->path, .dir = j->dir, .name = j->name};
	struct ns_result res = {0};

	if (!fjob_query_bool(j, "recursive", false, &d.recursive) ||
	    !fjob_query_bool(j, "ignoreRecursiveError", false, &d.ignore_errors) ||
	    !fjob_query_bool(j, "skipChunkDeletion", false, &d.keep_chunks))
		return;
	if (ns_delete(j->f, j->signature, &d, &res))
		fjob_ns_error(j, &res);
	else
		j->status = 204;
}

void filer_handle_delete(struct fjob *j)
{
	j->run = delete_run;
	fjob_submit(j);
}

/* ---- move ---- */

/* Parses the source of mv.from or cp.from; 400 set on failure. */
static bool source_path(struct fjob *j, const char *param, char **out, char **dir, char **name)
{
	const char *s = fjob_query(j, param);
	bool trailing;
	*out = *dir = *name = NULL;
	if (!s || filer_path_normalize(s, out, &trailing) || filer_path_split(*out, dir, name)) {
		fjob_error(j, 400, "invalid %s path", param);
		free(*out);
		*out = NULL;
		return false;
	}
	if (!**name) {
		fjob_error(j, 400, "the root directory cannot be moved or copied");
		return false;
	}
	return true;
}

static void move_run(struct fjob *j)
{
	struct ns_rename r = {
		.style = NS_RENAME_SEAWEED,
		.to = j->path,
		.to_dir = j->dir,
		.to_name = j->name,
	};
	struct ns_result res = {0};
	char *from = NULL, *sdir = NULL, *sname = NULL;

	if (source_path(j, "mv.from", &from, &sdir, &sname)) {
		r.from = from;
		r.from_dir = sdir;
		r.from_name = sname;
		if (ns_rename(j->f, j->signature, &r, &res))
			fjob_ns_error(j, &res);
		else
			j->status = 204;
	}
	free(from);
	free(sdir);
	free(sname);
}

/* ---- copy ---- */

/*
 * Copies each chunk's blob into a new one. A sealed blob is copied as it is and
 * keeps its key (the copy reads it the same way); a plain one is sealed on the
 * way when this filer encrypts. I/O pool.
 */
static wfs_err copy_chunks(struct filer *f, const struct filer_entry *src, struct filer_entry *dst)
{
	struct filer_chunk *c = NULL;
	size_t n = 0;
	buf b = BUF_INIT;
	struct blob_assign_params ap = {.collection = src->attr.collection,
					.replication = src->attr.replication};
	wfs_err err = chunk_resolve_manifests(f->bc, src->chunks, src->n_chunks, &c, &n);
	for (size_t i = 0; !err && i < n; i++) {
		char etag[BLOB_ETAG_MAX] = "", *fid = NULL;
		struct filer_chunk key = c[i];
		if (c[i].size > COPY_MAX_CHUNK) {
			err = WFS_ETOOBIG;
			break;
		}
		buf_reset(&b);
		err = blob_client_read(f->bc, c[i].fid, 0, 0, COPY_MAX_CHUNK + CHUNK_CIPHER_OVERHEAD,
				       &b);
		if (!err && c[i].has_cipher_key)
			err = blob_client_save(f->bc, &ap, NULL, b.data, b.len, &fid, etag);
		else if (!err)
			err = chunk_cipher_save(f->bc, &ap, NULL, f->encrypt, b.data, b.len, &key,
						&fid, etag);
		if (!err)
			filer_chunk_copy_key(filer_entry_add_chunk(dst, fid, c[i].offset, c[i].size,
								   c[i].mtime_ns,
								   *etag ? etag : NULL, false),
					     &key);
		free(fid);
	}
	buf_free(&b);
	filer_chunks_free(c, n);
	return err;
}

/* Queues the blobs of the copy that will not be committed and forgets them. */
static void copy_discard(struct filer *f, struct filer_entry *copy)
{
	filer_free_chunks(f, copy->chunks, copy->n_chunks);
	copy->chunks = NULL;
	copy->n_chunks = copy->cap_chunks = 0;
}

/* Stores copy (its new blobs) at tdir/tname (to), replacing a file there. Sets j's answer. */
static void copy_commit(struct fjob *j, struct filer_entry *copy, const char *tdir,
			const char *tname, const char *to)
{
	struct filer *f = j->f;
	struct filer_entry *dst = NULL;
	struct ns_result res = {0};
	struct ns_tx t;
	int64_t now = (int64_t)time_now_ns();
	wfs_err err;

	err = ns_begin_path(&t, f, j->signature, &res, to);
	if (err)
		goto out;
	err = filer_mkdir_p(f, t.tx, &t.evs, tdir);
	if (!err)
		err = filer_store_find(f->store, t.tx, tdir, tname, &dst);
	if (err == WFS_ENOENT)
		err = WFS_OK;
	if (err) {
		ns_fail_below(&res, err, err == WFS_EPERM ? "a parent is a file" : "copy");
		goto out;
	}
	if (dst && filer_entry_is_dir(dst)) {
		err = ns_fail(&res, WFS_EEXIST, "%s is a directory", to);
		goto out;
	}
	filer_entry_set_path(copy, tdir, tname);
	copy->attr.mtime_ns = copy->attr.ctime_ns = copy->attr.crtime_ns = now;
	copy->attr.inode = 0; /* a new file: the store numbers it (or keeps dst's) */
	err = dst ? filer_store_update(f->store, t.tx, copy) : filer_store_insert(f->store, t.tx, copy);
	if (!err && dst) {
		err = ns_drop_name(&t, dst); /* a replaced hard link loses a name */
		ns_garbage_entry(&t.g, dst);
	}
	if (err) {
		ns_fail_below(&res, err, "copy");
		goto out;
	}
	filer_evs_add(&t.evs, dst, copy);
	err = ns_commit(&t);
out:
	ns_end(&t);
	if (err) {
		fjob_ns_error(j, &res);
		copy_discard(f, copy);
	} else {
		j->status = 204;
	}
	filer_entry_free(dst);
}

static void copy_run(struct fjob *j)
{
	struct filer *f = j->f;
	struct filer_entry *src = NULL, *copy = NULL;
	char *from = NULL, *sdir = NULL, *sname = NULL, *tdir = NULL, *tname = NULL, *to = NULL;
	wfs_err err;

	if (!source_path(j, "cp.from", &from, &sdir, &sname))
		goto out;
	err = filer_store_find(f->store, NULL, sdir, sname, &src);
	if (!err)
		err = filer_hardlink_resolve(f->store, NULL, &src); /* copy the shared file */
	if (err == WFS_ENOENT) {
		fjob_error(j, 404, "%s: not found", from);
		goto out;
	}
	if (err) {
		fjob_store_error(j, err, "lookup");
		goto out;
	}
	if (filer_entry_is_dir(src)) {
		fjob_error(j, 400, "cp.from copies files only; %s is a directory", from);
		goto out;
	}
	copy = filer_entry_dup(src);
	free(copy->attr.hard_link_id); /* a copy is a file of its own */
	copy->attr.hard_link_id = NULL;
	copy->attr.hard_link_id_len = 0;
	copy->attr.nlink = 1;
	filer_chunks_free(copy->chunks, copy->n_chunks);
	copy->chunks = NULL;
	copy->n_chunks = copy->cap_chunks = 0;
	err = copy_chunks(f, src, copy);
	if (err) {
		fjob_store_error(j, err, "copying content");
		copy_discard(f, copy);
		goto out;
	}
	err = ns_target_into(f, NULL, j->dir, j->name, sname, &tdir, &tname);
	if (err) {
		fjob_store_error(j, err, "lookup");
		copy_discard(f, copy);
		goto out;
	}
	to = filer_path_join(tdir, tname);
	if (!strcmp(to, from) || !*tname) {
		fjob_error(j, 400, "cannot copy %s onto itself", from);
		copy_discard(f, copy);
		goto out;
	}
	copy_commit(j, copy, tdir, tname, to);
out:
	filer_entry_free(src);
	filer_entry_free(copy);
	free(from);
	free(sdir);
	free(sname);
	free(tdir);
	free(tname);
	free(to);
}

static void copy_job(void *arg)
{
	struct fjob *j = arg;
	copy_run(j);
	fjob_respond_deferred(j);
}

void filer_handle_move(struct fjob *j, const char *from, bool copy)
{
	(void)from; /* read again from the copied query on the worker */
	if (copy) {
		/* copies move data: the I/O pool */
		if (!filer_submit(j->f, true, copy_job, j)) {
			http_resp_error(j->req, 503, "filer is stopping");
			fjob_free(j);
		}
		return;
	}
	j->run = move_run;
	fjob_submit(j);
}
