/*
 * The namespace core's tree operations: delete (a file, an empty directory
 * or a whole tree), rename (a move of a name with its tree, an exchange) and
 * link. Each touches several paths, so each holds the tree lock and runs in
 * one store transaction (namespace.h): readers see the tree before or after,
 * never half moved.
 *
 * DESIGN: entries are keyed by their parent directory, so a directory's move
 * re-inserts every descendant under the new path and deletes the old ones
 * level by level (move_below), and a recursive delete records each
 * descendant's event and chunks before deleting each level (delete_below).
 * A hard-linked name that moves tells its link group (filer_hardlink_moved);
 * one that goes drops a link (ns_drop_name).
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "filer/filer_hardlink.h"
#include "filer/namespace.h"
#include "util.h"

/* Whether path lies below dir. */
static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && path[n] == '/';
}

/* Same file: both names of one hard link. */
static bool same_link(const struct filer_entry *a, const struct filer_entry *b)
{
	return filer_hardlink_is_linked(a) && filer_hardlink_is_linked(b) &&
	       a->attr.hard_link_id_len == b->attr.hard_link_id_len &&
	       !memcmp(a->attr.hard_link_id, b->attr.hard_link_id, a->attr.hard_link_id_len);
}

/* ---- delete ---- */

struct del_walk {
	struct ns_tx *t;
	bool ignore;
};

static wfs_err delete_below(struct ns_tx *t, const char *dir, bool ignore);

static wfs_err delete_child(void *ctx, struct filer_tx *tx, struct filer_entry *c)
{
	struct del_walk *d = ctx;
	wfs_err err;
	(void)tx;
	if (filer_entry_is_dir(c)) {
		char *sub = filer_entry_full_path(c);
		err = delete_below(d->t, sub, d->ignore);
		free(sub);
	} else {
		err = ns_drop_name(d->t, c);
	}
	ns_garbage_entry(&d->t->g, c);
	filer_evs_add(&d->t->evs, c, NULL);
	return err;
}

/*
 * Deletes everything below dir, not dir itself, recording each entry's event
 * (descendants before their directory) and chunks. With ignore a child that
 * fails is passed over.
 */
static wfs_err delete_below(struct ns_tx *t, const char *dir, bool ignore)
{
	struct del_walk d = {t, ignore};
	wfs_err err = ns_walk(t->f, t->tx, dir, delete_child, &d, ignore);
	if (!err || ignore)
		err = filer_store_delete_children(t->f->store, t->tx, dir, NULL);
	return err;
}

wfs_err ns_delete(struct filer *f, int32_t sig, const struct ns_delete *d, struct ns_result *res)
{
	struct ns_tx t;
	struct filer_entry *e = NULL;
	bool empty = true;
	wfs_err err;

	if (!*d->name)
		return ns_fail(res, WFS_EINVAL, "the root directory cannot be deleted");
	/* a directory needs the tree lock: taken up front rather than upgraded */
	err = ns_begin_tree(&t, f, sig, res);
	t.keep_chunks = d->keep_chunks;
	if (!err)
		err = ns_find(&t, d->path, d->dir, d->name, &e);
	if (err)
		goto out;
	if (d->if_etag)
		err = ns_etag_check(&t, e, d->path, d->if_etag);
	if (err)
		goto out;
	if (filer_entry_is_dir(e)) {
		err = ns_dir_is_empty(f, t.tx, d->path, &empty);
		if (err) {
			ns_fail_below(res, err, "listing");
			goto out;
		}
		if (!empty && !d->recursive) {
			err = ns_fail(res, WFS_ENOTEMPTY,
				      "%s is a non-empty directory; delete it recursively", d->path);
			goto out;
		}
		if (!empty)
			err = delete_below(&t, d->path, d->ignore_errors);
	} else {
		err = ns_drop_name(&t, e);
	}
	if (!err)
		err = filer_store_delete(f->store, t.tx, d->dir, d->name);
	if (err) {
		ns_fail_below(res, err, "delete");
		goto out;
	}
	ns_garbage_entry(&t.g, e);
	filer_evs_add(&t.evs, e, NULL);
	if (filer_entry_is_dir(e)) {
		err = filer_dir_links(f, t.tx, &t.evs, d->dir, -1);
		if (err) {
			ns_fail_below(res, err, "counting the parent's links");
			goto out;
		}
	}
	err = ns_commit(&t);
out:
	ns_end(&t);
	filer_entry_free(e);
	return err;
}

/* ---- rename ---- */

/*
 * Inside t, after a rename took gone subdirectories out of from_dir (net, -1..1)
 * and put added into to_dir (net, -1..1): both directories' link counts.
 */
static wfs_err rename_links(struct ns_tx *t, const char *from_dir, int gone, const char *to_dir,
			    int added)
{
	wfs_err err = WFS_OK;

	if (!strcmp(from_dir, to_dir)) {
		added -= gone;
		gone = 0;
	}
	if (gone)
		err = filer_dir_links(t->f, t->tx, &t->evs, from_dir, -gone);
	if (!err && added)
		err = filer_dir_links(t->f, t->tx, &t->evs, to_dir, added);
	if (err)
		ns_fail_below(t->res, err, "counting the parents' links");
	return err;
}

struct mv_walk {
	struct ns_tx *t;
	const char *from, *to;
};

static wfs_err move_below(struct ns_tx *t, const char *from, const char *to);

static wfs_err move_child(void *ctx, struct filer_tx *tx, struct filer_entry *c)
{
	struct mv_walk *m = ctx;
	char *a = filer_path_join(m->from, c->name), *b = filer_path_join(m->to, c->name);
	wfs_err err;

	filer_entry_set_path(c, m->to, c->name);
	err = filer_store_insert(m->t->f->store, tx, c);
	if (!err)
		err = filer_hardlink_moved(m->t->f->store, tx, c, a, b);
	if (!err && filer_entry_is_dir(c))
		err = move_below(m->t, a, b);
	free(a);
	free(b);
	return err;
}

/* Re-keys every descendant of the directory from under to. */
static wfs_err move_below(struct ns_tx *t, const char *from, const char *to)
{
	struct mv_walk m = {t, from, to};
	wfs_err err = ns_walk(t->f, t->tx, from, move_child, &m, false);
	if (!err)
		err = filer_store_delete_children(t->f->store, t->tx, from, NULL);
	return err;
}

wfs_err ns_target_into(struct filer *f, struct filer_tx *tx, const char *dir, const char *name,
		       const char *src_name, char **tdir, char **tname)
{
	struct filer_entry *e = NULL;
	wfs_err err = filer_find(f, tx, dir, name, &e);
	bool into = !err && filer_entry_is_dir(e);

	filer_entry_free(e);
	*tdir = *tname = NULL;
	if (err && err != WFS_ENOENT)
		return err;
	*tdir = into ? filer_path_join(dir, name) : xstrdup(dir);
	*tname = xstrdup(into ? src_name : name);
	return WFS_OK;
}

/*
 * Where r moves from, inside t (*dir, *name: newly allocated; NULL on
 * failure): to, or for SEAWEED ns_target_into's; *dst is the entry there
 * (NULL: none). POSIX checks to's parent.
 */
static wfs_err rename_target(struct ns_tx *t, const struct ns_rename *r, char **dir, char **name,
			     struct filer_entry **dst)
{
	wfs_err err;

	*dst = NULL;
	*dir = *name = NULL;
	if (r->style == NS_RENAME_POSIX) {
		err = ns_parent_check(t, r->to_dir);
		if (err)
			return err;
		*dir = xstrdup(r->to_dir);
		*name = xstrdup(r->to_name);
	} else {
		err = ns_target_into(t->f, t->tx, r->to_dir, r->to_name, r->from_name, dir, name);
		if (err)
			return ns_fail_below(t->res, err, "lookup");
	}
	err = filer_store_find(t->f->store, t->tx, *dir, *name, dst);
	if (err == WFS_ENOENT)
		err = WFS_OK;
	else if (err)
		ns_fail_below(t->res, err, "lookup");
	return err;
}

/* Whether dst (at to) may be replaced by src under r's rules, inside t. */
static wfs_err replace_check(struct ns_tx *t, const struct ns_rename *r,
			     const struct filer_entry *src, const struct filer_entry *dst,
			     const char *to)
{
	bool sd = filer_entry_is_dir(src), dd = filer_entry_is_dir(dst), empty;
	wfs_err err;

	if (r->style == NS_RENAME_SEAWEED)
		return sd || dd ? ns_fail(t->res, WFS_EEXIST,
					  "%s exists; only a file replaces a file", to)
				: WFS_OK;
	if (r->no_replace)
		return ns_fail(t->res, WFS_EEXIST, "%s exists", to);
	if (!sd && dd)
		return ns_fail(t->res, WFS_EISDIR, "%s is a directory", to);
	if (sd && !dd)
		return ns_fail(t->res, WFS_ENOTDIR, "%s is not a directory", to);
	if (!dd)
		return WFS_OK;
	err = ns_dir_is_empty(t->f, t->tx, to, &empty);
	if (err)
		return ns_fail_below(t->res, err, "listing");
	return empty ? WFS_OK : ns_fail(t->res, WFS_ENOTEMPTY, "%s is not empty", to);
}

/*
 * Swaps the subtrees of r->from and r->to (src and dst, at least one a
 * directory) through a parking directory key below the source: the source
 * is then a directory without a child of that name (checked), so no entry
 * lives there.
 */
static wfs_err swap_trees(struct ns_tx *t, const struct ns_rename *r, bool sd, bool dd,
			  int64_t now)
{
	char *tmp = xasprintf("%s/.weedfs-exchange-%" PRId64, r->from, now);
	bool empty = true;
	wfs_err err = WFS_OK;

	if (sd) {
		struct filer_entry *clash = NULL;
		err = filer_store_find(t->f->store, t->tx, r->from, tmp + strlen(r->from) + 1,
				       &clash);
		filer_entry_free(clash);
		err = err == WFS_ENOENT ? ns_dir_is_empty(t->f, t->tx, tmp, &empty)
					: (err ? err : WFS_EEXIST);
	}
	if (!err && !empty)
		err = WFS_EEXIST;
	if (!err && sd)
		err = move_below(t, r->from, tmp);
	if (!err && dd)
		err = move_below(t, r->to, r->from);
	if (!err && sd)
		err = move_below(t, tmp, r->to);
	free(tmp);
	return err;
}

/* r->exchange: src (at from) and dst (at to, NULL when missing) trade places, inside t. */
static wfs_err exchange(struct ns_tx *t, const struct ns_rename *r, const struct filer_entry *src,
			const struct filer_entry *dst, int64_t now)
{
	struct filer *f = t->f;
	struct filer_entry *a = NULL, *b = NULL;
	bool sd = filer_entry_is_dir(src), dd;
	wfs_err err;

	if (!dst)
		return ns_fail(t->res, WFS_ENOENT, "exchange: %s does not exist", r->to);
	dd = filer_entry_is_dir(dst);
	if (dd && under(r->from, r->to))
		return ns_fail(t->res, WFS_EINVAL, "cannot exchange %s with its ancestor", r->from);
	a = filer_entry_dup(src);
	filer_entry_set_path(a, r->to_dir, r->to_name);
	a->attr.ctime_ns = now;
	b = filer_entry_dup(dst);
	filer_entry_set_path(b, r->from_dir, r->from_name);
	b->attr.ctime_ns = now;
	err = filer_store_update(f->store, t->tx, a);
	if (!err)
		err = filer_store_update(f->store, t->tx, b);
	if (!err)
		err = filer_hardlink_moved(f->store, t->tx, a, r->from, r->to);
	if (!err)
		err = filer_hardlink_moved(f->store, t->tx, b, r->to, r->from);
	if (!err && (sd || dd))
		err = swap_trees(t, r, sd, dd, now);
	if (err) {
		ns_fail_below(t->res, err, "exchange");
	} else {
		filer_evs_add_resolved(f, t->tx, &t->evs, src, a);
		filer_evs_add_resolved(f, t->tx, &t->evs, dst, b);
		/* from's parent now holds dst, to's holds src */
		err = rename_links(t, r->from_dir, (int)sd - (int)dd, r->to_dir, (int)sd - (int)dd);
		if (!err)
			err = ns_commit(t);
	}
	filer_entry_free(a);
	filer_entry_free(b);
	return err;
}

wfs_err ns_rename(struct filer *f, int32_t sig, const struct ns_rename *r, struct ns_result *res)
{
	struct ns_tx t;
	struct filer_entry *src = NULL, *dst = NULL, *moved = NULL;
	char *to_dir = NULL, *to_name = NULL, *to = NULL;
	int64_t now = (int64_t)time_now_ns();
	wfs_err err;

	err = ns_begin_tree(&t, f, sig, res);
	if (!err)
		err = ns_find(&t, r->from, r->from_dir, r->from_name, &src);
	if (!err)
		err = rename_target(&t, r, &to_dir, &to_name, &dst);
	if (err)
		goto out;
	to = filer_path_join(to_dir, to_name);
	if (r->if_etag) {
		/* replace only that version of to */
		if (!dst) {
			err = ns_fail(res, WFS_ENOENT, "%s does not exist (ifEtag)", to);
			goto out;
		}
		err = ns_etag_check(&t, dst, to, r->if_etag);
		if (err)
			goto out;
	}
	if (!*to_name) {
		err = ns_fail(res, WFS_EINVAL, "cannot move onto the root directory");
		goto out;
	}
	if (filer_entry_is_dir(src) && under(to, r->from)) {
		err = ns_fail(res, WFS_EINVAL, "cannot move %s into itself", r->from);
		goto out;
	}
	/* POSIX: renaming onto itself (or its own hard link) does nothing */
	if (!strcmp(to, r->from) ||
	    (r->style == NS_RENAME_POSIX && dst && same_link(src, dst) && !r->exchange))
		goto out;
	if (r->exchange) {
		err = exchange(&t, r, src, dst, now);
		goto out;
	}
	if (dst) {
		err = replace_check(&t, r, src, dst, to);
		if (err)
			goto out;
		ns_garbage_entry(&t.g, dst);
		filer_evs_add(&t.evs, dst, NULL);
		err = filer_entry_is_dir(dst) ? WFS_OK : ns_drop_name(&t, dst);
		if (!err)
			err = filer_store_delete(f->store, t.tx, to_dir, to_name);
		if (err) {
			ns_fail_below(res, err, "replacing the target");
			goto out;
		}
	}
	if (r->style == NS_RENAME_SEAWEED)
		err = ns_make_parents(&t, to_dir, to);
	if (err)
		goto out;
	moved = filer_entry_dup(src);
	filer_entry_set_path(moved, to_dir, to_name);
	moved->attr.ctime_ns = now;
	err = filer_store_insert(f->store, t.tx, moved);
	if (!err)
		err = filer_hardlink_moved(f->store, t.tx, moved, r->from, to);
	if (!err && filer_entry_is_dir(src))
		err = move_below(&t, r->from, to);
	if (!err)
		err = filer_store_delete(f->store, t.tx, r->from_dir, r->from_name);
	if (err) {
		ns_fail_below(res, err, "rename");
		goto out;
	}
	/* one rename event for the whole tree (store.h: old and new entry) */
	filer_evs_add_resolved(f, t.tx, &t.evs, src, moved);
	/* a replaced directory leaves to's parent, a moved one goes there from from's */
	err = rename_links(&t, r->from_dir, filer_entry_is_dir(src), to_dir,
			   (int)filer_entry_is_dir(src) - (int)(dst && filer_entry_is_dir(dst)));
	if (!err)
		err = ns_commit(&t);
out:
	ns_end(&t);
	filer_entry_free(src);
	filer_entry_free(dst);
	filer_entry_free(moved);
	free(to_dir);
	free(to_name);
	free(to);
	return err;
}

/* ---- link ---- */

wfs_err ns_link(struct filer *f, int32_t sig, const char *path, const char *dir, const char *name,
		const char *new_path, const char *new_dir, const char *new_name,
		struct filer_entry **made, struct ns_result *res)
{
	struct ns_tx t;
	struct filer_entry *target = NULL, *d = NULL, *before = NULL, *after = NULL;
	wfs_err err;

	*made = NULL;
	/* two paths and a shared record: the tree lock, like rename */
	err = ns_begin_tree(&t, f, sig, res);
	if (!err)
		err = ns_find(&t, path, dir, name, &target);
	if (err)
		goto out;
	if (filer_entry_is_dir(target)) {
		err = ns_fail(res, WFS_EPERM, "%s is a directory; directories cannot be linked",
			      path);
		goto out;
	}
	err = ns_parent_check(&t, new_dir);
	if (err)
		goto out;
	err = filer_store_find(f->store, t.tx, new_dir, new_name, &d);
	if (err != WFS_ENOENT) {
		if (err)
			ns_fail_below(res, err, new_path);
		else
			err = ns_fail(res, WFS_EEXIST, "%s already exists", new_path);
		goto out;
	}
	err = filer_hardlink_make(f->store, t.tx, target, new_dir, new_name, &before, &after, made);
	if (err) {
		ns_fail_below(res, err, "link");
		goto out;
	}
	filer_evs_add(&t.evs, before, after);
	filer_evs_add(&t.evs, NULL, *made);
	err = ns_commit(&t);
out:
	ns_end(&t);
	if (err) {
		filer_entry_free(*made);
		*made = NULL;
	}
	filer_entry_free(target);
	filer_entry_free(d);
	filer_entry_free(before);
	filer_entry_free(after);
	return err;
}
