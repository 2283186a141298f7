/*
 * The namespace core's entry operations: create (with its moves, consumed
 * files, parents and conditions) and the read-modify-writes of one entry
 * (update, xattrs, and through ns_modify the REST API's tags), and the
 * batch of attribute changes over several entries (ns_xattrs_set).
 *
 * DESIGN: a create's conditions (exclusive, ifEtag, the moves' and consumed
 * files' rules) are all checked inside its transaction before anything is
 * written, under the stripes of every path it touches, so they are atomic
 * against every other writer of this filer and, through the store's own
 * insert/update rules, against other filers. Chunks: the ids assign hands
 * out are leased in the garbage queue (gc_queue.h); the create or update that
 * references them claims them in its transaction (claim_chunks), and the
 * chunks a change stops referencing go to the garbage queue in the same
 * transaction (the scope's t->g), so a crash neither leaks nor frees a chunk
 * still in use.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include "client/chunk_io.h"
#include "client/chunks.h"
#include "filer/filer_hardlink.h"
#include "filer/gc_queue.h"
#include "filer/namespace.h"
#include "util.h"

/* ---- chunk bookkeeping ---- */

/* Whether fid names one of e's chunks (e may be NULL). */
static bool has_fid(const struct filer_entry *e, const char *fid)
{
	for (size_t i = 0; e && i < e->n_chunks; i++)
		if (!strcmp(e->chunks[i].fid, fid))
			return true;
	return false;
}

/* Whether fid names a chunk of any of e[0..n). */
static bool any_has_fid(struct filer_entry *const *e, size_t n, const char *fid)
{
	for (size_t i = 0; i < n; i++)
		if (has_fid(e[i], fid))
			return true;
	return false;
}

/*
 * Inside tx, which makes an entry reference c[0..n): claims their ids off the
 * garbage queue, where assign leased them (gc_queue.h), so they are kept from
 * this commit on. A manifest's members are claimed too (resolved through the
 * volume servers), except for manifests old (may be NULL) or one of
 * prev[0..nprev) (the files a create consumes) already referenced: claimed
 * when they were committed. Ids that are not queued (committed ones, taken
 * over from old or a consumed file) are left alone: the claim of an id not in
 * the queue deletes nothing and does not fail.
 */
static wfs_err claim_chunks(struct filer *f, struct filer_tx *tx, const struct filer_chunk *c,
			    size_t n, const struct filer_entry *old,
			    struct filer_entry *const *prev, size_t nprev)
{
	struct filer_chunk *mf = NULL, *leaves = NULL;
	size_t nmf = 0, nleaves = 0, nf = 0;
	const char **fids;
	wfs_err err = WFS_OK;

	if (!n)
		return WFS_OK;
	for (size_t i = 0; i < n; i++) {
		if (!c[i].is_manifest || has_fid(old, c[i].fid) ||
		    any_has_fid(prev, nprev, c[i].fid))
			continue;
		if (!mf)
			mf = xcalloc(n, sizeof(*mf));
		mf[nmf++] = c[i]; /* borrowed fields: not freed below */
	}
	if (nmf) {
		/* members left leased would be deleted under a live manifest: refuse instead */
		err = chunk_resolve_manifests(f->bc, mf, nmf, &leaves, &nleaves);
		free(mf);
		if (err)
			return err;
	}
	fids = xcalloc(n + nleaves, sizeof(*fids));
	for (size_t i = 0; i < n; i++)
		fids[nf++] = c[i].fid;
	for (size_t i = 0; i < nleaves; i++)
		fids[nf++] = leaves[i].fid;
	err = gc_lease_claim(f->store, tx, fids, nf);
	free(fids);
	filer_chunks_free(leaves, nleaves);
	return err;
}

/* The file ids of one entry's chunks, sorted for lookups (borrowed from it). */
struct fid_set {
	const char **v;
	size_t n;
};

static int cmp_fid(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void fid_set_init(struct fid_set *s, const struct filer_entry *e)
{
	s->n = e->n_chunks;
	s->v = xcalloc(s->n ? s->n : 1, sizeof(*s->v));
	for (size_t i = 0; i < s->n; i++)
		s->v[i] = e->chunks[i].fid;
	qsort(s->v, s->n, sizeof(*s->v), cmp_fid);
}

static bool fid_set_has(const struct fid_set *s, const char *fid)
{
	return s->n && bsearch(&fid, s->v, s->n, sizeof(*s->v), cmp_fid) != NULL;
}

/* Queues the chunks of c[0..n) that keep does not hold into g. */
static void garbage_unkept(struct ns_garbage *g, const struct filer_chunk *c, size_t n,
			   const struct fid_set *keep)
{
	for (size_t i = 0; i < n; i++)
		if (!fid_set_has(keep, c[i].fid))
			ns_garbage_add(g, &c[i]);
}

/* Queues manifest chunk c into g as a plain blob: its members are queued one by one. */
static void garbage_manifest_blob(struct ns_garbage *g, const struct filer_chunk *c)
{
	ns_garbage_add(g, c);
	g->c[g->n - 1].is_manifest = false;
}

/*
 * Queues the chunks of a consumed file e that the new entry (keep) does not
 * list into g. An unlisted manifest is resolved here rather than by the
 * garbage queue (which would free every member): its members the new entry
 * lists (a client that resolved the part's manifest itself) are kept, the
 * manifest blob and its other members go. Fetches manifests through f->bc.
 */
static wfs_err garbage_consumed(struct filer *f, struct ns_garbage *g, const struct filer_entry *e,
				const struct fid_set *keep)
{
	struct filer_chunk *mf = NULL, *leaves = NULL;
	size_t nmf = 0, nleaves = 0;
	wfs_err err;

	for (size_t i = 0; i < e->n_chunks; i++) {
		if (fid_set_has(keep, e->chunks[i].fid))
			continue;
		if (!e->chunks[i].is_manifest) {
			ns_garbage_add(g, &e->chunks[i]);
			continue;
		}
		if (!mf)
			mf = xcalloc(e->n_chunks, sizeof(*mf));
		mf[nmf++] = e->chunks[i]; /* borrowed fields: not freed below */
	}
	if (!nmf)
		return WFS_OK;
	err = chunk_resolve_manifests(f->bc, mf, nmf, &leaves, &nleaves);
	if (!err) {
		for (size_t i = 0; i < nmf; i++)
			garbage_manifest_blob(g, &mf[i]);
		garbage_unkept(g, leaves, nleaves, keep);
	}
	free(mf);
	filer_chunks_free(leaves, nleaves);
	return err;
}

/* ---- create ---- */

/*
 * Inside t, finds the regular file path for a create's what ("move",
 * "consume") into *out (caller frees). Verdicts: missing (WFS_ENOENT), a
 * directory (WFS_EISDIR), another kind of file or hard-linked (WFS_EINVAL).
 */
static wfs_err find_plain_file(struct ns_tx *t, const char *what, const char *path,
			       struct filer_entry **out)
{
	char *d = NULL, *n = NULL;
	struct filer_entry *e = NULL;
	wfs_err err = filer_path_split(path, &d, &n);

	if (!err)
		err = filer_store_find(t->f->store, t->tx, d, n, &e);
	if (err == WFS_ENOENT)
		ns_fail(t->res, err, "%s: %s does not exist", what, path);
	else if (err)
		ns_fail_below(t->res, err, path);
	else if (filer_entry_is_dir(e))
		err = ns_fail(t->res, WFS_EISDIR, "%s: %s is a directory", what, path);
	else if (!S_ISREG(e->attr.mode))
		err = ns_fail(t->res, WFS_EINVAL, "%s: %s is not a regular file", what, path);
	else if (filer_hardlink_is_linked(e) || e->attr.nlink > 1)
		err = ns_fail(t->res, WFS_EINVAL, "%s: %s is hard-linked", what, path);
	*out = e;
	free(d);
	free(n);
	return err;
}

/* Whether path lies below dir ("a/x" below "a"). */
static bool below(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && path[n] == '/';
}

/*
 * Inside t, renames the regular file m->from to m->to for a create's moves,
 * making to's missing parents (0770, an event each): the entry keeps its
 * chunks (neither freed nor claimed), content, xattrs and times but ctime,
 * which becomes now, and one event (old at from, new at to) is recorded.
 * to may lie below from ("a" to "a/x"): the file becomes a directory that
 * holds it (the S3 gateway's object "a" beside "a/b"); from goes first, so
 * two events are recorded (its delete, then the create at to) with the
 * directory's between them.
 * Verdicts: find_plain_file's, WFS_EPRECOND (not at m->if_etag), WFS_EEXIST
 * (to exists), WFS_ENOTDIR (a parent of to is a file).
 */
static wfs_err move_file(struct ns_tx *t, const struct ns_move *m)
{
	struct filer *f = t->f;
	struct filer_entry *src = NULL, *dst = NULL, *moved = NULL;
	char *d2 = NULL, *n2 = NULL;
	wfs_err err = find_plain_file(t, "move", m->from, &src);

	if (err)
		goto out;
	if (m->if_etag) {
		char *what = xasprintf("move: %s", m->from);
		err = ns_etag_check(t, src, what, m->if_etag); /* not linked: lookup's etag */
		free(what);
		if (err)
			goto out;
	}
	err = filer_path_split(m->to, &d2, &n2);
	if (!err && below(m->to, m->from)) {
		err = filer_store_delete(f->store, t->tx, src->dir, src->name);
		if (err) {
			ns_fail_below(t->res, err, "move");
			goto out;
		}
		filer_evs_add(&t->evs, src, NULL);
	}
	if (!err)
		err = ns_make_parents(t, d2, m->to);
	if (err)
		goto out;
	err = filer_store_find(f->store, t->tx, d2, n2, &dst);
	if (!err) {
		err = ns_fail(t->res, WFS_EEXIST, "move: %s already exists", m->to);
		goto out;
	}
	if (err != WFS_ENOENT) {
		ns_fail_below(t->res, err, m->to);
		goto out;
	}
	moved = filer_entry_dup(src);
	filer_entry_set_path(moved, d2, n2);
	moved->attr.ctime_ns = (int64_t)time_now_ns();
	err = filer_store_insert(f->store, t->tx, moved);
	if (!err && !below(m->to, m->from))
		err = filer_store_delete(f->store, t->tx, src->dir, src->name);
	if (err) {
		ns_fail_below(t->res, err, "move");
		goto out;
	}
	filer_evs_add(&t->evs, below(m->to, m->from) ? NULL : src, moved);
out:
	filer_entry_free(src);
	filer_entry_free(dst);
	filer_entry_free(moved);
	free(d2);
	free(n2);
	return err;
}

/* Locks every path c touches (target, moves' both ends, consumed files). */
static void create_lock(struct ns_tx *t, const struct ns_create *c)
{
	size_t n = 0;
	const char **paths = xcalloc(1 + c->nconsume + 2 * c->nmoves, sizeof(*paths));
	paths[n++] = c->path;
	for (size_t i = 0; i < c->nconsume; i++)
		paths[n++] = c->consume[i];
	for (size_t i = 0; i < c->nmoves; i++) {
		paths[n++] = c->moves[i].from;
		paths[n++] = c->moves[i].to;
	}
	ns_lock_paths(t, paths, n);
	free(paths);
}

/* Inside t: the entry at c->path now (*old, NULL for none) and whether c may replace it. */
static wfs_err create_target(struct ns_tx *t, const struct ns_create *c,
			     const struct filer_entry *e, struct filer_entry **old)
{
	wfs_err err = filer_store_find(t->f->store, t->tx, c->dir, c->name, old);
	if (err == WFS_ENOENT)
		err = WFS_OK;
	else if (err)
		return ns_fail_below(t->res, err, "lookup");
	if (c->if_etag) {
		if (!*old)
			return ns_fail(t->res, WFS_ENOENT, "%s does not exist (ifEtag)", c->path);
		err = ns_etag_check(t, *old, c->path, c->if_etag);
		if (err)
			return err;
	}
	if (*old && (c->exclusive || filer_entry_is_dir(*old) || filer_entry_is_dir(e)))
		return ns_fail(t->res, WFS_EEXIST, "%s already exists", c->path);
	return WFS_OK;
}

wfs_err ns_create(struct filer *f, int32_t sig, const struct ns_create *c, struct filer_entry *e,
		  bool *replaced, struct ns_result *res)
{
	struct ns_tx t;
	struct filer_entry *old = NULL, **gone = NULL;
	struct fid_set keep = {0};
	size_t ngone = 0;
	wfs_err err;

	*replaced = false;
	e->attr.inode = 0; /* the filer numbers entries, never a client */
	ns_tx_init(&t, f, sig, res);
	create_lock(&t, c);
	err = ns_begin(&t);
	if (err)
		goto out;
	/* the moves first: one may turn a file on the target's path into its directory */
	for (size_t i = 0; !err && i < c->nmoves; i++)
		err = move_file(&t, &c->moves[i]);
	if (!err)
		err = c->parents ? ns_make_parents(&t, c->dir, c->path)
				 : ns_parent_check(&t, c->dir);
	if (!err)
		err = create_target(&t, c, e, &old);
	gone = xcalloc(c->nconsume ? c->nconsume : 1, sizeof(*gone));
	for (size_t i = 0; !err && i < c->nconsume; i++)
		err = find_plain_file(&t, "consume", c->consume[i], &gone[ngone++]);
	if (err)
		goto out;
	fid_set_init(&keep, e);
	if (old) {
		/* a replaced hard link loses one name; its last frees the shared chunks */
		err = filer_hardlink_release(f->store, t.tx, old);
		if (err) {
			ns_fail_below(res, err, "unlinking the old entry");
			goto out;
		}
		e->attr.crtime_ns = old->attr.crtime_ns;
		/* the same file, renewed; a name of a linked file becomes a file of its own
		   (the store numbers it) */
		if (!filer_hardlink_is_linked(old))
			e->attr.inode = old->attr.inode;
		/* free only what the new entry does not reference again */
		garbage_unkept(&t.g, old->chunks, old->n_chunks, &keep);
		err = filer_store_update(f->store, t.tx, e);
	} else {
		if (filer_entry_is_dir(e))
			e->attr.nlink = 2; /* new, so no subdirectory (it never replaces one) */
		err = filer_store_insert(f->store, t.tx, e);
	}
	if (!err)
		err = claim_chunks(f, t.tx, e->chunks, e->n_chunks, old, gone, ngone);
	if (err) {
		ns_fail_below(res, err, c->path);
		goto out;
	}
	filer_evs_add(&t.evs, old, e);
	if (!old && filer_entry_is_dir(e)) {
		err = filer_dir_links(f, t.tx, &t.evs, c->dir, 1);
		if (err) {
			ns_fail_below(res, err, "counting the parent's links");
			goto out;
		}
	}
	/* consumed files: their chunks move to the new entry, or are freed */
	for (size_t i = 0; i < ngone; i++) {
		err = filer_store_delete(f->store, t.tx, gone[i]->dir, gone[i]->name);
		if (!err)
			err = garbage_consumed(f, &t.g, gone[i], &keep);
		if (err) {
			ns_fail_below(res, err, c->consume[i]);
			goto out;
		}
		filer_evs_add(&t.evs, gone[i], NULL);
	}
	err = ns_commit(&t);
	*replaced = !err && old != NULL;
out:
	ns_end(&t);
	free(keep.v);
	filer_entry_free(old);
	for (size_t i = 0; i < ngone; i++)
		filer_entry_free(gone[i]);
	free(gone);
	return err;
}

/* ---- read-modify-write ---- */

wfs_err ns_modify(struct filer *f, int32_t sig, const char *path, const char *dir,
		  const char *name, const char *if_etag, ns_edit_fn edit, void *ctx,
		  struct filer_entry **out, struct ns_result *res)
{
	struct ns_tx t;
	struct filer_entry *old = NULL, *e = NULL;
	char etag[NS_ETAG_SIZE];
	wfs_err err;

	err = ns_begin_path(&t, f, sig, res, path);
	if (!err)
		err = ns_find(&t, path, dir, name, &old);
	if (err)
		goto out;
	err = filer_hardlink_resolve(f->store, t.tx, &old); /* a linked name: the shared file */
	if (err) {
		ns_fail_below(res, err, path);
		goto out;
	}
	if (if_etag) {
		ns_etag(old, etag);
		if (strcmp(etag, if_etag)) {
			err = ns_fail(res, WFS_EPRECOND, "%s: etag is %s, not %s", path, etag,
				      if_etag);
			goto out;
		}
	}
	e = filer_entry_dup(old);
	e->attr.ctime_ns = (int64_t)time_now_ns();
	err = edit(&t, old, e, ctx);
	if (err)
		goto out;
	if (filer_entry_check(e)) {
		err = ns_fail(res, WFS_EINVAL, "%s: the entry would exceed a size limit", path);
		goto out;
	}
	err = filer_hardlink_is_linked(e) ? filer_hardlink_save(f->store, t.tx, e)
					  : filer_store_update(f->store, t.tx, e);
	if (err) {
		ns_fail_below(res, err, path);
		goto out;
	}
	filer_evs_add(&t.evs, old, e);
	err = ns_commit(&t);
out:
	ns_end(&t);
	filer_entry_free(old);
	if (!err && out)
		*out = e;
	else
		filer_entry_free(e);
	return err;
}

/* ---- update ---- */

/* Empties e's chunk list. */
static void chunks_reset(struct filer_entry *e)
{
	filer_chunks_clear(e->chunks, e->n_chunks);
	e->n_chunks = 0;
}

/*
 * Cuts e to size bytes (chunks_truncate): chunks at or past size go to g and a
 * chunk crossing it is shortened, so growing the file later reads zeros there
 * rather than the old bytes; inline content is cut. Manifest chunks are first
 * replaced by their members (fetched through f->bc); the manifest blobs alone
 * are freed (queued as plain chunks so the garbage queue keeps the members).
 */
static wfs_err truncate_entry(struct filer *f, struct filer_entry *e, uint64_t size,
			      struct ns_garbage *g)
{
	struct filer_chunk *c = NULL, *cut = NULL;
	size_t n = 0, ncut = 0;
	bool manifests = false, past = false;
	wfs_err err = WFS_OK;

	for (size_t i = 0; i < e->n_chunks; i++) {
		manifests |= e->chunks[i].is_manifest;
		past |= e->chunks[i].offset + e->chunks[i].size > size;
	}
	if (e->has_content && e->content_len > size)
		e->content_len = (size_t)size;
	if (!past)
		return WFS_OK;
	if (manifests) {
		err = chunk_resolve_manifests(f->bc, e->chunks, e->n_chunks, &c, &n);
		if (err)
			return err;
		for (size_t i = 0; i < e->n_chunks; i++)
			if (e->chunks[i].is_manifest)
				garbage_manifest_blob(g, &e->chunks[i]);
	} else {
		c = xmalloc((e->n_chunks ? e->n_chunks : 1) * sizeof(*c));
		for (size_t i = 0; i < e->n_chunks; i++)
			filer_chunk_copy(&c[i], &e->chunks[i]);
		n = e->n_chunks;
	}
	err = chunks_truncate(c, &n, size, &cut, &ncut);
	if (err)
		goto out;
	for (size_t i = 0; i < ncut; i++)
		ns_garbage_add(g, &cut[i]);
	chunks_reset(e);
	for (size_t i = 0; i < n; i++)
		filer_entry_push_chunk(e, &c[i]);
out:
	filer_chunks_free(c, n);
	filer_chunks_free(cut, ncut);
	return err;
}

/* Whether fid is one of c[0..n). */
static bool chunks_have(const struct filer_chunk *c, size_t n, const char *fid)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(c[i].fid, fid))
			return true;
	return false;
}

/* Removes from e the chunks u->drop names that u does not append again (they go to g). */
static void drop_superseded(struct filer_entry *e, const struct ns_update *u, struct ns_garbage *g)
{
	size_t kept = 0;
	for (size_t i = 0; i < e->n_chunks; i++) {
		bool drop = false;
		for (size_t k = 0; k < u->ndrop && !drop; k++)
			drop = !strcmp(e->chunks[i].fid, u->drop[k]);
		/* never free what the same request appends */
		if (drop && !chunks_have(u->chunks, u->nchunks, e->chunks[i].fid)) {
			ns_garbage_add(g, &e->chunks[i]);
			filer_chunks_clear(&e->chunks[i], 1);
		} else {
			e->chunks[kept++] = e->chunks[i];
		}
	}
	e->n_chunks = kept;
}

/* Sets e's size to size: a truncate or an extension (inline content is zero-filled). */
static wfs_err resize(struct ns_tx *t, struct filer_entry *e, uint64_t size, const char *path)
{
	/*
	 * Growing cuts at the old end first: a chunk an older truncate left
	 * crossing it must not show through the new range.
	 */
	wfs_err err = truncate_entry(t->f, e, MIN(size, e->attr.size), &t->g);
	if (err)
		return ns_fail_below(t->res, err, path);
	/* readers size inline files by their content: zero-fill it (bounded) */
	if (e->has_content && size > e->content_len && size <= FILER_CONTENT_MAX) {
		uint8_t *z = xcalloc(1, (size_t)size);
		if (e->content_len)
			memcpy(z, e->content, e->content_len);
		filer_entry_set_content(e, z, (size_t)size);
		free(z);
	}
	e->attr.size = size;
	return WFS_OK;
}

static wfs_err update_edit(struct ns_tx *t, const struct filer_entry *old, struct filer_entry *e,
			   void *ctx)
{
	const struct ns_update *u = ctx;
	const struct filer_attr *a = u->attr;
	wfs_err err = WFS_OK;

	if (u->durable)
		filer_store_tx_durable(t->tx);
	if ((u->set & (NS_SET_SIZE | NS_SET_CHUNKS | NS_SET_APPEND | NS_SET_CONTENT)) &&
	    !S_ISREG(old->attr.mode))
		return ns_fail(t->res, WFS_EISDIR,
			       "%s: size, chunks and content apply to regular files", u->path);
	if (u->set & NS_SET_MODE)
		e->attr.mode = (e->attr.mode & S_IFMT) | (a->mode & 07777);
	if (u->set & NS_SET_UID)
		e->attr.uid = a->uid;
	if (u->set & NS_SET_GID)
		e->attr.gid = a->gid;
	/* an entry without a stored atime reads its mtime as atime: keep that value */
	if ((u->set & NS_SET_MTIME) && !e->attr.atime_ns)
		e->attr.atime_ns = e->attr.mtime_ns;
	if (u->set & NS_SET_ATIME)
		e->attr.atime_ns = a->atime_ns;
	if (u->set & NS_SET_MTIME)
		e->attr.mtime_ns = a->mtime_ns;
	if (u->set & NS_SET_CTIME)
		e->attr.ctime_ns = a->ctime_ns;
	if (u->set & NS_SET_CONTENT) {
		/* small files are committed inline: every chunk goes */
		ns_garbage_entry(&t->g, e);
		chunks_reset(e);
		filer_entry_set_content(e, u->content, u->content_len);
		e->attr.size = u->content_len;
	}
	if (u->set & NS_SET_CHUNKS) {
		/* replaced: free what the new list no longer names */
		for (size_t i = 0; i < e->n_chunks; i++)
			if (!chunks_have(u->chunks, u->nchunks, e->chunks[i].fid))
				ns_garbage_add(&t->g, &e->chunks[i]);
		chunks_reset(e);
		filer_entry_clear_content(e);
		e->attr.size = 0;
	}
	if (u->set & NS_SET_DROP)
		drop_superseded(e, u, &t->g);
	if (u->set & (NS_SET_CHUNKS | NS_SET_APPEND)) {
		if (e->has_content && u->nchunks)
			return ns_fail(t->res, WFS_EINVAL,
				       "%s has inline content; replace its chunks", u->path);
		for (size_t k = 0; k < u->nchunks; k++) {
			const struct filer_chunk *c = &u->chunks[k];
			filer_entry_push_chunk(e, c);
			if (c->offset + c->size > e->attr.size)
				e->attr.size = c->offset + c->size;
		}
		err = claim_chunks(t->f, t->tx, u->chunks, u->nchunks, old, NULL, 0);
		if (err)
			return ns_fail_below(t->res, err, u->path);
	}
	if (u->set & NS_SET_SIZE)
		err = resize(t, e, a->size, u->path);
	return err;
}

wfs_err ns_update(struct filer *f, int32_t sig, const struct ns_update *u,
		  struct filer_entry **out, struct ns_result *res)
{
	return ns_modify(f, sig, u->path, u->dir, u->name, u->if_etag, update_edit, (void *)u, out,
			 res);
}

/* ---- xattrs ---- */

struct xattr_req {
	bool remove;
	const char *xname;
	const uint8_t *value;
	size_t len;
	enum ns_xattr_flag flag;
};

static wfs_err xattr_edit(struct ns_tx *t, const struct filer_entry *old, struct filer_entry *e,
			  void *ctx)
{
	const struct xattr_req *x = ctx;
	bool has = filer_entry_xattr_get(e, x->xname) != NULL;
	(void)old;
	if (x->remove) {
		if (filer_entry_xattr_remove(e, x->xname))
			return ns_fail(t->res, WFS_ENODATA, "no attribute %s", x->xname);
		return WFS_OK;
	}
	if (has && x->flag == NS_XATTR_CREATE)
		return ns_fail(t->res, WFS_EEXIST, "attribute %s exists", x->xname);
	if (!has && x->flag == NS_XATTR_REPLACE)
		return ns_fail(t->res, WFS_ENODATA, "no attribute %s", x->xname);
	if (!has && e->n_xattrs >= FILER_XATTRS_MAX)
		return ns_fail(t->res, WFS_ENOSPC, "too many attributes");
	filer_entry_xattr_set(e, x->xname, x->value, x->len);
	return WFS_OK;
}

wfs_err ns_xattr_set(struct filer *f, int32_t sig, const char *path, const char *dir,
		     const char *name, const char *xname, const uint8_t *value, size_t len,
		     enum ns_xattr_flag flag, const char *if_etag, struct filer_entry **out,
		     struct ns_result *res)
{
	struct xattr_req x = {false, xname, value, len, flag};
	return ns_modify(f, sig, path, dir, name, if_etag, xattr_edit, &x, out, res);
}

wfs_err ns_xattr_remove(struct filer *f, int32_t sig, const char *path, const char *dir,
			const char *name, const char *xname, const char *if_etag,
			struct filer_entry **out, struct ns_result *res)
{
	struct xattr_req x = {true, xname, NULL, 0, NS_XATTR_ANY};
	return ns_modify(f, sig, path, dir, name, if_etag, xattr_edit, &x, out, res);
}

/* ---- a batch of attribute changes ---- */

/*
 * One entry of a batch: read once, edited by each of its ops, written once.
 * A second name of a hard-linked file another slot holds edits that slot's
 * entry (own false), so the shared file is written once with every change.
 */
struct xslot {
	const struct ns_xattr_op *op; /* an op of its path: path, dir, name */
	size_t first;                 /* the index of its path's first op */
	struct filer_entry *old;      /* as lookup shows it (hard links resolved); NULL: missing */
	struct filer_entry *e;        /* after: its own, or the slot's of the same file */
	bool own;
};

static int cmp_xop_path(const void *a, const void *b)
{
	const struct ns_xattr_op *x = *(const struct ns_xattr_op *const *)a;
	const struct ns_xattr_op *y = *(const struct ns_xattr_op *const *)b;
	return strcmp(x->path, y->path);
}

/* Whether a and b (both hard links resolved) are the same linked file. */
static bool same_linked(const struct filer_entry *a, const struct filer_entry *b)
{
	return filer_hardlink_is_linked(a) && filer_hardlink_is_linked(b) &&
	       a->attr.hard_link_id_len == b->attr.hard_link_id_len &&
	       !memcmp(a->attr.hard_link_id, b->attr.hard_link_id, a->attr.hard_link_id_len);
}

/*
 * Inside t, reads the entry of every slot (sorted by path: stores that lock
 * rows as they read them lock in one order on every filer) and gives it its
 * entry after. A missing entry is left NULL (the caller's verdict).
 */
static wfs_err xslots_read(struct ns_tx *t, struct xslot *slot, size_t nslot)
{
	for (size_t k = 0; k < nslot; k++) {
		const struct ns_xattr_op *op = slot[k].op;
		wfs_err err = filer_find(t->f, t->tx, op->dir, op->name, &slot[k].old);
		if (err == WFS_ENOENT)
			continue;
		if (!err)
			err = filer_hardlink_resolve(t->f->store, t->tx, &slot[k].old);
		if (err)
			return ns_fail_below(t->res, err, op->path);
		slot[k].own = true;
		for (size_t p = 0; p < k && slot[k].own; p++)
			if (slot[p].own && same_linked(slot[p].old, slot[k].old)) {
				slot[k].e = slot[p].e;
				slot[k].own = false;
			}
		if (slot[k].own) {
			slot[k].e = filer_entry_dup(slot[k].old);
			slot[k].e->attr.ctime_ns = (int64_t)time_now_ns();
		}
	}
	return WFS_OK;
}

/* Inside t, the conditions of every op in op order, before anything changes. */
static wfs_err xops_check(struct ns_tx *t, const struct ns_xattr_op *ops, size_t n,
			  struct xslot *const *of, size_t *failed)
{
	char etag[NS_ETAG_SIZE];

	for (size_t i = 0; i < n; i++) {
		*failed = i;
		if (!of[i]->old)
			return ns_fail(t->res, WFS_ENOENT, "%s: not found", ops[i].path);
		if (!ops[i].if_etag)
			continue;
		ns_etag(of[i]->old, etag);
		if (strcasecmp(etag, ops[i].if_etag))
			return ns_fail(t->res, WFS_EPRECOND, "%s: etag is %s, not %s",
				       ops[i].path, etag, ops[i].if_etag);
	}
	*failed = SIZE_MAX;
	return WFS_OK;
}

/* Inside t, edits the entries in op order, then writes each once with its event. */
static wfs_err xops_apply(struct ns_tx *t, const struct ns_xattr_op *ops, size_t n,
			  struct xslot *const *of, struct xslot *slot, size_t nslot,
			  size_t *failed)
{
	wfs_err err;

	for (size_t i = 0; i < n; i++) {
		const struct ns_xattr_op *op = &ops[i];
		struct xattr_req x = {op->remove, op->xname, op->value, op->len, op->flag};
		*failed = i;
		err = xattr_edit(t, of[i]->old, of[i]->e, &x);
		if (err)
			return err;
	}
	for (size_t k = 0; k < nslot; k++) {
		struct xslot *s = &slot[k];
		if (!s->own)
			continue;
		*failed = s->first;
		if (filer_entry_check(s->e))
			return ns_fail(t->res, WFS_EINVAL,
				       "%s: the entry would exceed a size limit", s->op->path);
		*failed = SIZE_MAX;
		err = filer_hardlink_is_linked(s->e) ? filer_hardlink_save(t->f->store, t->tx, s->e)
						     : filer_store_update(t->f->store, t->tx, s->e);
		if (err)
			return ns_fail_below(t->res, err, s->op->path);
		filer_evs_add(&t->evs, s->old, s->e);
	}
	*failed = SIZE_MAX;
	return WFS_OK;
}

wfs_err ns_xattrs_set(struct filer *f, int32_t sig, const struct ns_xattr_op *ops, size_t n,
		      char (*etags)[NS_ETAG_SIZE], size_t *failed, struct ns_result *res)
{
	const struct ns_xattr_op **by_path = xcalloc(n ? n : 1, sizeof(*by_path));
	const char **paths = xcalloc(n ? n : 1, sizeof(*paths));
	struct xslot *slot = xcalloc(n ? n : 1, sizeof(*slot));
	struct xslot **of = xcalloc(n ? n : 1, sizeof(*of)); /* op i's slot */
	size_t nslot = 0;
	struct ns_tx t;
	wfs_err err;

	*failed = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		by_path[i] = &ops[i];
		paths[i] = ops[i].path;
	}
	qsort(by_path, n, sizeof(*by_path), cmp_xop_path);
	for (size_t k = 0; k < n; k++) {
		size_t i = (size_t)(by_path[k] - ops);
		if (!nslot || strcmp(slot[nslot - 1].op->path, by_path[k]->path))
			slot[nslot++] = (struct xslot){.op = by_path[k], .first = i};
		slot[nslot - 1].first = MIN(slot[nslot - 1].first, i);
		of[i] = &slot[nslot - 1];
	}
	ns_tx_init(&t, f, sig, res);
	ns_lock_paths(&t, paths, n);
	err = ns_begin(&t);
	if (!err)
		err = xslots_read(&t, slot, nslot);
	if (!err)
		err = xops_check(&t, ops, n, of, failed);
	if (!err)
		err = xops_apply(&t, ops, n, of, slot, nslot, failed);
	if (!err)
		err = ns_commit(&t);
	for (size_t i = 0; !err && etags && i < n; i++)
		ns_etag(of[i]->e, etags[i]);
	ns_end(&t);
	for (size_t k = 0; k < nslot; k++) {
		filer_entry_free(slot[k].old);
		if (slot[k].own)
			filer_entry_free(slot[k].e);
	}
	free(of);
	free(slot);
	free(paths);
	free(by_path);
	return err;
}
