/*
 * DELETE (files, empty and, with recursive=true, whole directory trees),
 * mv.from (rename or move, directories included) and cp.from (file copy).
 *
 * DESIGN: a directory delete or a move touches many entries, so it holds the
 * namespace's tree lock (filer_int.h) and runs in one store transaction:
 * readers see the tree before or after, never half moved. A directory move
 * re-inserts every descendant under the new path (entries are keyed by their
 * parent directory) and removes the old ones level by level. Chunks that no
 * entry references any more go to the garbage queue in the same transaction
 * (filer_gc_enqueue), so they are freed only if the change commits. A copy
 * duplicates the content (new blobs), so the two files never share a chunk
 * and deleting one cannot free the other's data.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client/chunk_io.h"
#include "filer/filer_hardlink.h"
#include "filer/filer_int.h"
#include "log.h"
#include "util.h"

#define WALK_PAGE      1024
#define COPY_MAX_CHUNK (256u << 20)

/* A growable list of chunks to free after the commit. */
struct garbage {
	struct filer_chunk *c;
	size_t n, cap;
};

static void garbage_take(struct garbage *g, struct filer_entry *e)
{
	for (size_t i = 0; i < e->n_chunks; i++) {
		if (g->n == g->cap) {
			g->cap = g->cap ? g->cap * 2 : 16;
			g->c = xrealloc(g->c, g->cap * sizeof(*g->c));
		}
		g->c[g->n++] = e->chunks[i]; /* moves the strings */
	}
	free(e->chunks);
	e->chunks = NULL;
	e->n_chunks = e->cap_chunks = 0;
}

/*
 * Accounts for removing the name e: a hard link drops nlink, and the last
 * name moves the shared chunks into g (filer_hardlink.h). Unlinked: nothing.
 */
static wfs_err drop_name(struct filer *f, struct filer_tx *tx, const struct filer_entry *e,
			 struct garbage *g)
{
	struct filer_entry tmp = {0};
	wfs_err err = filer_hardlink_drop(f->store, tx, e, &tmp.chunks, &tmp.n_chunks);
	garbage_take(g, &tmp);
	return err;
}

struct page {
	struct filer_entry **v;
	size_t n;
};

static bool page_add(void *ctx, struct filer_entry *e)
{
	struct page *p = ctx;
	p->v[p->n++] = e;
	return true;
}

static void page_clear(struct page *p)
{
	for (size_t i = 0; i < p->n; i++)
		filer_entry_free(p->v[i]);
	p->n = 0;
}

/*
 * Visits every child of dir page by page: fn(ctx, child) for each. Stops at
 * the first error unless ignore is set (then the first error is returned at
 * the end).
 */
typedef wfs_err (*child_fn)(void *ctx, struct filer_tx *tx, struct filer_entry *child);
static wfs_err for_children(struct filer *f, struct filer_tx *tx, const char *dir, child_fn fn,
			    void *ctx, bool ignore)
{
	struct page p = {xcalloc(WALK_PAGE, sizeof(struct filer_entry *)), 0};
	char *start = NULL;
	wfs_err err = WFS_OK, first = WFS_OK;
	size_t got;

	for (;;) {
		err = filer_store_list(f->store, tx, dir, start, false, WALK_PAGE, NULL, page_add,
				       &p, &got);
		if (err)
			break;
		for (size_t i = 0; i < p.n; i++) {
			wfs_err e2 = fn(ctx, tx, p.v[i]);
			if (e2 && !first)
				first = e2;
			if (e2 && !ignore) {
				err = e2;
				goto out;
			}
		}
		if (got < WALK_PAGE)
			break;
		free(start);
		start = xstrdup(p.v[p.n - 1]->name);
		page_clear(&p);
	}
out:
	page_clear(&p);
	free(p.v);
	free(start);
	return err ? err : first;
}

/* ---- delete ---- */

struct del_ctx {
	struct filer *f;
	struct garbage g;
	struct filer_evs evs;
	bool ignore;
	uint64_t removed;
};

static wfs_err delete_tree(struct del_ctx *d, struct filer_tx *tx, const char *dir);

static wfs_err delete_child(void *ctx, struct filer_tx *tx, struct filer_entry *child)
{
	struct del_ctx *d = ctx;
	wfs_err err = WFS_OK;
	if (filer_entry_is_dir(child)) {
		char *p = filer_entry_full_path(child);
		err = delete_tree(d, tx, p);
		free(p);
	} else {
		filer_evs_add(&d->evs, child, NULL);
		garbage_take(&d->g, child);
		return drop_name(d->f, tx, child, &d->g);
	}
	filer_evs_add(&d->evs, child, NULL);
	return err;
}

/* Deletes everything below dir (not dir itself). */
static wfs_err delete_tree(struct del_ctx *d, struct filer_tx *tx, const char *dir)
{
	uint64_t n = 0;
	wfs_err err = for_children(d->f, tx, dir, delete_child, d, d->ignore);
	if (err && !d->ignore)
		return err;
	err = filer_store_delete_children(d->f->store, tx, dir, &n);
	d->removed += n;
	return err;
}

static void delete_run(struct fjob *j)
{
	struct filer *f = j->f;
	struct del_ctx d = {.f = f};
	struct filer_entry *e = NULL;
	struct filer_tx *tx = NULL;
	bool recursive, skip_chunks, tree = false;
	wfs_err err;

	if (!fjob_query_bool(j, "recursive", false, &recursive) ||
	    !fjob_query_bool(j, "ignoreRecursiveError", false, &d.ignore) ||
	    !fjob_query_bool(j, "skipChunkDeletion", false, &skip_chunks))
		return;
	if (!strcmp(j->path, "/")) {
		fjob_error(j, 400, "the root directory cannot be deleted");
		return;
	}
	/* a directory needs the tree lock; take it up front rather than upgrade */
	filer_lock_tree(f);
	tree = true;
	err = filer_store_begin(f->store, &tx);
	if (err) {
		fjob_store_error(j, err, "begin");
		goto out;
	}
	err = filer_store_find(f->store, tx, j->dir, j->name, &e);
	if (err == WFS_ENOENT) {
		fjob_error(j, 404, "%s: not found", j->path);
		goto out;
	}
	if (err) {
		fjob_store_error(j, err, "lookup");
		goto out;
	}
	if (filer_entry_is_dir(e)) {
		struct page p = {xcalloc(1, sizeof(struct filer_entry *)), 0};
		err = filer_store_list(f->store, tx, j->path, NULL, false, 1, NULL, page_add, &p,
				       NULL);
		bool empty = p.n == 0;
		page_clear(&p);
		free(p.v);
		if (err) {
			fjob_store_error(j, err, "listing");
			goto out;
		}
		if (!empty && !recursive) {
			fjob_error(j, 409,
				   "%s is a non-empty directory; delete with recursive=true",
				   j->path);
			goto out;
		}
		if (!empty) {
			err = delete_tree(&d, tx, j->path);
			if (err) {
				fjob_store_error(j, err, "deleting the directory tree");
				goto out;
			}
		}
	}
	filer_evs_add(&d.evs, e, NULL);
	garbage_take(&d.g, e);
	err = filer_entry_is_dir(e) ? WFS_OK : drop_name(f, tx, e, &d.g);
	if (!err)
		err = filer_store_delete(f->store, tx, j->dir, j->name);
	if (!err && !skip_chunks)
		err = filer_gc_enqueue(f, tx, d.g.c, d.g.n);
	if (!err) {
		err = fjob_commit(j, tx, &d.evs);
		tx = NULL;
	}
	if (err) {
		fjob_store_error(j, err, "delete");
		goto out;
	}
	if (!skip_chunks && d.g.n)
		filer_gc_kick(f);
	j->status = 204;
out:
	filer_store_rollback(tx);
	if (tree)
		filer_unlock_tree(f);
	filer_chunks_free(d.g.c, d.g.n);
	filer_evs_clear(&d.evs);
	filer_entry_free(e);
}

void filer_handle_delete(struct fjob *j)
{
	j->run = delete_run;
	fjob_submit(j);
}

/* ---- move ---- */

struct mv_ctx {
	struct filer *f;
	const char *from, *to; /* the moved directory's old and new full paths */
};

static wfs_err move_tree(struct mv_ctx *m, struct filer_tx *tx, const char *old_dir,
			 const char *new_dir);

static wfs_err move_child(void *ctx, struct filer_tx *tx, struct filer_entry *child)
{
	struct mv_ctx *m = ctx;
	char *old_dir = xstrdup(child->dir);
	wfs_err err;
	/* child->dir lies below m->from: rebase it onto m->to */
	char *nd = xasprintf("%s%s", m->to, old_dir + strlen(m->from));
	filer_entry_set_path(child, nd, child->name);
	err = filer_store_insert(m->f->store, tx, child);
	if (!err && filer_hardlink_is_linked(child)) {
		char *op = filer_path_join(old_dir, child->name);
		char *np = filer_path_join(nd, child->name);
		err = filer_hardlink_moved(m->f->store, tx, child, op, np);
		free(op);
		free(np);
	}
	if (!err && filer_entry_is_dir(child)) {
		char *op = filer_path_join(old_dir, child->name);
		char *np = filer_path_join(nd, child->name);
		err = move_tree(m, tx, op, np);
		free(op);
		free(np);
	}
	free(nd);
	free(old_dir);
	return err;
}

static wfs_err move_tree(struct mv_ctx *m, struct filer_tx *tx, const char *old_dir,
			 const char *new_dir)
{
	wfs_err err = for_children(m->f, tx, old_dir, move_child, m, false);
	(void)new_dir;
	if (!err)
		err = filer_store_delete_children(m->f->store, tx, old_dir, NULL);
	return err;
}

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

/*
 * The target of a move or copy of `src_name`: the request path, or inside it
 * when it is an existing directory. Sets *tdir and *tname (newly allocated) and
 * *existing (the entry there, or NULL). Inside tx.
 */
static wfs_err resolve_target(struct fjob *j, struct filer_tx *tx, const char *src_name,
			      char **tdir, char **tname, struct filer_entry **existing)
{
	struct filer_entry *e = NULL;
	wfs_err err = filer_find(j->f, tx, j->dir, j->name, &e);
	*existing = NULL;
	if (err && err != WFS_ENOENT)
		return err;
	if (!err && filer_entry_is_dir(e)) {
		filer_entry_free(e);
		e = NULL;
		*tdir = xstrdup(j->path);
		*tname = xstrdup(src_name);
		err = filer_store_find(j->f->store, tx, *tdir, *tname, &e);
		if (err && err != WFS_ENOENT) {
			free(*tdir);
			free(*tname);
			return err;
		}
	} else {
		*tdir = xstrdup(j->dir);
		*tname = xstrdup(j->name);
	}
	*existing = e;
	return WFS_OK;
}

static void move_run(struct fjob *j)
{
	struct filer *f = j->f;
	struct filer_entry *src = NULL, *dst = NULL, *moved = NULL;
	struct filer_tx *tx = NULL;
	struct filer_evs evs = {0};
	struct garbage g = {0};
	char *from = NULL, *sdir = NULL, *sname = NULL, *tdir = NULL, *tname = NULL, *to = NULL;
	wfs_err err;

	if (!source_path(j, "mv.from", &from, &sdir, &sname))
		goto out_nolock;
	filer_lock_tree(f);
	err = filer_store_begin(f->store, &tx);
	if (err) {
		fjob_store_error(j, err, "begin");
		goto out;
	}
	err = filer_store_find(f->store, tx, sdir, sname, &src);
	if (err == WFS_ENOENT) {
		fjob_error(j, 404, "%s: not found", from);
		goto out;
	}
	if (err) {
		fjob_store_error(j, err, "lookup");
		goto out;
	}
	err = resolve_target(j, tx, sname, &tdir, &tname, &dst);
	if (err) {
		fjob_store_error(j, err, "lookup");
		goto out;
	}
	to = filer_path_join(tdir, tname);
	if (!strcmp(to, from)) {
		j->status = 204; /* onto itself: nothing to do */
		goto out;
	}
	if (!*tname) {
		fjob_error(j, 400, "cannot move onto the root directory");
		goto out;
	}
	if (filer_entry_is_dir(src)) {
		size_t fl = strlen(from);
		if (!strncmp(to, from, fl) && to[fl] == '/') {
			fjob_error(j, 400, "cannot move %s into itself", from);
			goto out;
		}
	}
	if (dst) {
		if (filer_entry_is_dir(dst) || filer_entry_is_dir(src)) {
			fjob_error(j, 409, "%s exists; only a file replaces a file", to);
			goto out;
		}
		filer_evs_add(&evs, dst, NULL);
		garbage_take(&g, dst);
		err = drop_name(f, tx, dst, &g);
		if (!err)
			err = filer_store_delete(f->store, tx, tdir, tname);
		if (err) {
			fjob_store_error(j, err, "replacing the target");
			goto out;
		}
	}
	err = filer_mkdir_p(f, tx, &evs, tdir);
	if (err == WFS_EPERM) {
		fjob_error(j, 409, "a parent of %s is a file", to);
		goto out;
	}
	if (err) {
		fjob_store_error(j, err, "creating parent directories");
		goto out;
	}
	moved = filer_entry_dup(src);
	filer_entry_set_path(moved, tdir, tname);
	moved->attr.ctime_ns = (int64_t)time_now_ns();
	err = filer_store_insert(f->store, tx, moved);
	if (!err)
		err = filer_hardlink_moved(f->store, tx, moved, from, to);
	if (!err && filer_entry_is_dir(src)) {
		struct mv_ctx m = {f, from, to};
		err = move_tree(&m, tx, from, to);
	}
	if (!err)
		err = filer_store_delete(f->store, tx, sdir, sname);
	if (!err)
		err = filer_gc_enqueue(f, tx, g.c, g.n);
	if (!err) {
		/* one rename event for the whole tree (store.h: old and new entry) */
		filer_evs_add_resolved(f, tx, &evs, src, moved);
		err = fjob_commit(j, tx, &evs);
		tx = NULL;
	}
	if (err) {
		fjob_store_error(j, err, "move");
		goto out;
	}
	if (g.n)
		filer_gc_kick(f);
	j->status = 204;
out:
	filer_store_rollback(tx);
	filer_unlock_tree(f);
out_nolock:
	filer_chunks_free(g.c, g.n);
	filer_evs_clear(&evs);
	filer_entry_free(src);
	filer_entry_free(dst);
	filer_entry_free(moved);
	free(from);
	free(sdir);
	free(sname);
	free(tdir);
	free(tname);
	free(to);
}

/* ---- copy ---- */

/* Copies each chunk's bytes into a new blob. I/O pool. */
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
		if (c[i].size > COPY_MAX_CHUNK) {
			err = WFS_ETOOBIG;
			break;
		}
		buf_reset(&b);
		err = blob_client_read(f->bc, c[i].fid, 0, 0, COPY_MAX_CHUNK, &b);
		if (!err)
			err = blob_client_save(f->bc, &ap, NULL, b.data, b.len, &fid, etag);
		if (!err)
			filer_entry_add_chunk(dst, fid, c[i].offset, c[i].size, c[i].mtime_ns,
					      *etag ? etag : NULL, false);
		free(fid);
	}
	buf_free(&b);
	filer_chunks_free(c, n);
	return err;
}

static void copy_run(struct fjob *j)
{
	struct filer *f = j->f;
	struct filer_entry *src = NULL, *dst = NULL, *copy = NULL;
	struct filer_tx *tx = NULL;
	struct filer_evs evs = {0};
	struct garbage g = {0};
	char *from = NULL, *sdir = NULL, *sname = NULL, *tdir = NULL, *tname = NULL, *to = NULL;
	bool locked = false;
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
		garbage_take(&g, copy);
		goto out;
	}
	err = resolve_target(j, NULL, sname, &tdir, &tname, &dst);
	if (err) {
		fjob_store_error(j, err, "lookup");
		goto out;
	}
	to = filer_path_join(tdir, tname);
	filer_entry_free(dst);
	dst = NULL;
	if (!strcmp(to, from) || !*tname) {
		fjob_error(j, 400, "cannot copy %s onto itself", from);
		garbage_take(&g, copy);
		goto out;
	}
	filer_lock_path(f, to);
	locked = true;
	err = filer_store_begin(f->store, &tx);
	if (!err)
		err = filer_mkdir_p(f, tx, &evs, tdir);
	if (!err) {
		err = filer_store_find(f->store, tx, tdir, tname, &dst);
		if (err == WFS_ENOENT)
			err = WFS_OK;
	}
	if (!err && dst && filer_entry_is_dir(dst)) {
		fjob_error(j, 409, "%s is a directory", to);
		garbage_take(&g, copy);
		goto out;
	}
	if (!err) {
		int64_t now = (int64_t)time_now_ns();
		filer_entry_set_path(copy, tdir, tname);
		copy->attr.mtime_ns = copy->attr.ctime_ns = copy->attr.crtime_ns = now;
		err = dst ? filer_store_update(f->store, tx, copy)
			  : filer_store_insert(f->store, tx, copy);
	}
	if (!err && dst) {
		struct garbage lg = {0};
		err = drop_name(f, tx, dst, &lg); /* a replaced hard link loses a name */
		if (!err && lg.n)
			err = filer_gc_enqueue(f, tx, lg.c, lg.n);
		filer_chunks_free(lg.c, lg.n);
	}
	if (!err && dst)
		err = filer_gc_enqueue(f, tx, dst->chunks, dst->n_chunks);
	if (!err) {
		filer_evs_add(&evs, dst, copy);
		err = fjob_commit(j, tx, &evs);
		tx = NULL;
	}
	if (err) {
		fjob_store_error(j, err, err == WFS_EPERM ? "a parent is a file" : "copy");
		garbage_take(&g, copy);
		goto out;
	}
	if (dst && dst->n_chunks)
		filer_gc_kick(f);
	j->status = 204;
out:
	filer_store_rollback(tx);
	if (locked)
		filer_unlock_path(f, to);
	filer_free_chunks(f, g.c, g.n);
	filer_evs_clear(&evs);
	filer_entry_free(src);
	filer_entry_free(dst);
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
