/*
 * The name operations of weedfs-mount (fuse_ops_int.h): lookup and forget,
 * mknod/mkdir/symlink, unlink, rmdir, rename, link, the hidden directory of
 * files unlinked while open, and directory handles (opendir, readdir(plus)).
 * See the DESIGN comment in fuse_ops.c.
 */
#include "config.h"
#include "fuse_ops_int.h"
#include <errno.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"

#define LIST_PAGE 1024

/* An open directory. */
struct dirh {
	pthread_mutex_t mu;
	uint64_t ino;
	struct filer_meta_page page; /* protected by mu: the current page */
	uint64_t page_base;          /* index (without . and ..) of page.entries[0] */
	bool fetched;                /* page holds a real answer */
};

/* ---- the hidden directory of files unlinked while open ---- */

uint64_t fuse_names_trash_ino(struct mount_ctx *m)
{
	struct filer_meta_new nw = {.mode = S_IFDIR | 0700, .exclusive = true};
	struct filer_entry *e = NULL;
	uint64_t ino;
	char *path;
	wfs_err rc;

	pthread_mutex_lock(&m->trash_mu);
	ino = m->trash_ino;
	if (ino)
		goto out;
	path = itable_child_path(m->it, ITABLE_ROOT, MOUNT_TRASH_NAME);
	rc = filer_meta_create(m->rpc, path, &nw, &e);
	if (rc == WFS_EEXIST)
		rc = filer_meta_lookup(m->rpc, path, &e);
	free(path);
	if (!rc && (e->attr.mode & S_IFMT) == S_IFDIR)
		ino = m->trash_ino = itable_learn(m->it, ITABLE_ROOT, MOUNT_TRASH_NAME, e, 0);
	filer_entry_free(e);
out:
	pthread_mutex_unlock(&m->trash_mu);
	return ino;
}

static bool is_trash(fuse_ino_t parent, const char *name)
{
	return parent == ITABLE_ROOT && !strcmp(name, MOUNT_TRASH_NAME);
}

/*
 * Moves n, known as (parent, name) at path, into the hidden directory if it
 * is an open file (also a linked one, whose other names this mount may not
 * know: a node without a name could not commit). Returns WFS_OK when hidden;
 * WFS_ENOENT when it is not open (or already hidden), or the error that
 * stopped it: the caller then deletes as usual.
 *
 * The check and the mark happen under n->commit_mu, which the last release
 * also holds to count its close (fuse_data_release): FUSE sends release
 * asynchronously, so a close(2) followed at once by unlink(2) races it. Held
 * across the rename, either the release counts first (then nothing is open
 * and the name is deleted) or it comes after the mark and deletes the hidden
 * name. Checked before and marked after the rename without the lock, a release
 * in between saw nothing to delete and the file stayed hidden for good.
 * fuse_ops_entry_stat takes the hidden name out of st_nlink.
 */
static wfs_err hide_open_file(struct mount_ctx *m, struct inode *n, fuse_ino_t parent,
			      const char *name, const char *path)
{
	uint64_t tino;
	char hidden[64], *to = NULL;
	bool open;
	wfs_err rc;

	pthread_mutex_lock(&n->mu);
	open = n->open_count > 0 && !n->is_dir && !n->unlinked;
	pthread_mutex_unlock(&n->mu);
	if (!open)
		return WFS_ENOENT; /* the common case: no lock, no hidden directory */
	tino = fuse_names_trash_ino(m);
	if (!tino)
		return WFS_EIO;
	snprintf(hidden, sizeof(hidden), MOUNT_HIDDEN_FMT, (unsigned long long)m->mount_id,
		 (unsigned long long)n->ino);
	to = itable_child_path(m->it, tino, hidden);
	if (!to)
		return WFS_EIO;
	pthread_mutex_lock(&n->commit_mu);
	pthread_mutex_lock(&n->mu);
	open = n->open_count > 0 && !n->unlinked;
	pthread_mutex_unlock(&n->mu);
	rc = open ? filer_meta_rename(m->rpc, path, to, false, false) : WFS_ENOENT;
	if (!rc) {
		itable_rename(m->it, parent, name, tino, hidden, false);
		pthread_mutex_lock(&n->mu);
		n->unlinked = true;
		free(n->hidden_name);
		n->hidden_name = xstrdup(hidden);
		pthread_mutex_unlock(&n->mu);
	}
	pthread_mutex_unlock(&n->commit_mu);
	free(to);
	if (!rc)
		itable_uncache(n);
	return rc;
}

/*
 * Whether name in parent cannot exist: parent is a directory this mount made
 * and knows every name of (itable_known_absent), its entry is fresh, and the
 * event follower is connected (another client's new name there drops that).
 */
static bool known_absent(struct mount_ctx *m, fuse_ino_t parent, const char *name)
{
	struct inode *pn;
	bool fresh = false;

	if (!atomic_load(&m->following))
		return false;
	pn = itable_get(m->it, parent);
	if (!pn)
		return false;
	pthread_mutex_lock(&pn->mu);
	fresh = pn->cached && fuse_ops_cache_fresh(m, pn);
	pthread_mutex_unlock(&pn->mu);
	itable_put(m->it, pn);
	return fresh && itable_known_absent(m->it, parent, name);
}

void fuse_names_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount_ctx *m = ctx(req);
	struct filer_entry *e = NULL;
	struct inode *n;
	char *path;
	wfs_err rc;

	if (is_trash(parent, name)) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	path = fuse_ops_child_path(req, parent, name);
	if (!path)
		return;
	/* a name this mount knows, with an entry still fresh: no round trip */
	n = itable_get_name(m->it, parent, name);
	if (n) {
		pthread_mutex_lock(&n->mu);
		if (n->cached && fuse_ops_cache_fresh(m, n))
			e = itable_cached_entry(n);
		pthread_mutex_unlock(&n->mu);
		if (e && itable_ref(m->it, n->ino)) {
			struct fuse_entry_param ep = {.ino = n->ino,
						      .generation = 1,
						      .attr_timeout = m->attr_timeout,
						      .entry_timeout = m->entry_timeout};
			fuse_ops_entry_stat(n, e, &ep.attr);
			if (fuse_reply_entry(req, &ep))
				itable_forget(m->it, n->ino, 1);
			itable_put(m->it, n);
			filer_entry_free(e);
			free(path);
			return;
		}
		itable_put(m->it, n);
		filer_entry_free(e);
		e = NULL;
		rc = filer_meta_lookup(m->rpc, path, &e);
	} else if (known_absent(m, parent, name)) {
		rc = WFS_ENOENT; /* e.g. the lookup before every create: no round trip */
	} else {
		rc = filer_meta_lookup(m->rpc, path, &e);
	}
	free(path);
	if (rc == WFS_ENOENT) {
		/* a negative entry the kernel may cache (the follower invalidates it) */
		struct fuse_entry_param ep = {.entry_timeout = m->entry_timeout};
		fuse_reply_entry(req, &ep);
		return;
	}
	if (rc) {
		fuse_ops_reply_err(req, rc); /* WFS_ENOTDIR: a parent is a file */
		return;
	}
	fuse_ops_reply_entry(req, parent, name, e);
	filer_entry_free(e);
}

void fuse_names_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	itable_forget(ctx(req)->it, ino, nlookup);
	fuse_reply_none(req);
}

void fuse_names_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct mount_ctx *m = ctx(req);

	for (size_t i = 0; i < count; i++)
		itable_forget(m->it, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* Creates a new entry named name in parent and replies with it (or the error). */
/*
 * The common start of every create: refuses the hidden trash name, builds the
 * new child's path (NULL after replying an error) and applies the set-group-ID
 * rules of the parent directory to nw (group inherited, a subdirectory keeps the
 * bit, a file's bit dropped when its creator is not in the group). The caller
 * frees the path.
 */
char *fuse_names_new_child(fuse_req_t req, fuse_ino_t parent, const char *name,
			   struct filer_meta_new *nw)
{
	struct mount_ctx *m = ctx(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct filer_entry *pe = NULL;
	struct inode *pn;
	char *path;

	if (is_trash(parent, name)) {
		fuse_reply_err(req, EEXIST);
		return NULL;
	}
	path = fuse_ops_child_path(req, parent, name);
	if (!path)
		return NULL;
	pn = itable_get(m->it, parent);
	if (pn && !fuse_ops_node_entry(m, pn, true, &pe) && (pe->attr.mode & S_ISGID)) {
		nw->gid = pe->attr.gid;
		if (S_ISDIR(nw->mode))
			nw->mode |= S_ISGID;
	}
	itable_put(m->it, pn);
	filer_entry_free(pe);
	if (!S_ISDIR(nw->mode) && (nw->mode & S_ISGID) && c->uid != 0 &&
	    !fuse_ops_in_group(req, nw->gid))
		nw->mode &= ~(mode_t)S_ISGID;
	nw->time_ns = now_ns();
	return path;
}

/*
 * After the mount's own change of dir's subdirectories (delta, the filer
 * counts the same in its nlink, filer_int.h): the cached count follows, as
 * the change's events do not come back to this mount. A count the filer had
 * not made yet (below 2), or delta INT_MIN, makes it read again instead.
 */
static void dir_links_add(struct mount_ctx *m, fuse_ino_t dir, int delta)
{
	struct inode *n = itable_get(m->it, dir);
	bool stale = false;

	if (!n || !delta)
		goto out;
	pthread_mutex_lock(&n->mu);
	if (delta != INT_MIN && n->attr.nlink >= 2 && (int64_t)n->attr.nlink + delta >= 2)
		n->attr.nlink = (uint32_t)((int64_t)n->attr.nlink + delta);
	else
		stale = true;
	pthread_mutex_unlock(&n->mu);
	if (stale)
		itable_uncache(n);
out:
	itable_put(m->it, n);
}

static void make_node(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev,
		      const char *target)
{
	struct mount_ctx *m = ctx(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct filer_meta_new nw = {.mode = mode,
				    .uid = c->uid,
				    .gid = c->gid,
				    .rdev = rdev,
				    .symlink_target = target,
				    .exclusive = true};
	struct filer_entry *e = NULL;
	char *path = fuse_names_new_child(req, parent, name, &nw);
	wfs_err rc;

	if (!path)
		return;
	rc = filer_meta_create(m->rpc, path, &nw, &e);
	free(path);
	if (rc) {
		fuse_ops_reply_err(req, rc);
		return;
	}
	fuse_attrs_touch_dir(m, parent);
	if (S_ISDIR(mode))
		dir_links_add(m, parent, 1);
	if (S_ISDIR(mode) && atomic_load(&m->following)) {
		/* new and empty: every name it gets from now on passes through the
		 * table or comes as an event (which clears this) */
		struct fuse_entry_param ep;
		struct inode *n;
		if (!fuse_ops_learn(m, parent, name, e, &ep)) {
			n = itable_get(m->it, ep.ino);
			if (n)
				atomic_store(&n->dir_complete, true);
			itable_put(m->it, n);
			if (fuse_reply_entry(req, &ep))
				itable_forget(m->it, ep.ino, 1);
			filer_entry_free(e);
			return;
		}
	}
	fuse_ops_reply_entry(req, parent, name, e);
	filer_entry_free(e);
}

void fuse_names_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFCHR:
	case S_IFBLK:
		break;
	case 0:
		mode |= S_IFREG;
		break;
	default:
		fuse_reply_err(req, EINVAL);
		return;
	}
	make_node(req, parent, name, mode,
		  (mode & S_IFMT) == S_IFCHR || (mode & S_IFMT) == S_IFBLK ? rdev : 0, NULL);
}

void fuse_names_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	make_node(req, parent, name, S_IFDIR | (mode & 07777), 0, NULL);
}

void fuse_names_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	if (strlen(link) >= FILER_SYMLINK_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	make_node(req, parent, name, S_IFLNK | 0777, 0, link);
}

/*
 * After unlink or rmdir: a node (may be NULL) left without any name (not
 * hidden for an open file) reports nlink 0 to fstat on a handle still open,
 * from the entry it last had.
 */
static void mark_removed(struct mount_ctx *m, struct inode *n)
{
	char *path;

	if (!n)
		return;
	path = itable_path(m->it, n->ino);
	if (!path) {
		pthread_mutex_lock(&n->mu);
		if (!n->unlinked)
			n->removed = true;
		pthread_mutex_unlock(&n->mu);
	}
	free(path);
}

void fuse_names_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n;
	char *path;
	wfs_err rc = WFS_EIO;

	if (is_trash(parent, name)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	path = fuse_ops_child_path(req, parent, name);
	if (!path)
		return;
	n = itable_get_name(m->it, parent, name);
	if (n)
		rc = hide_open_file(m, n, parent, name, path);
	if (rc) /* not open, or it could not be hidden */
		rc = filer_meta_delete(m->rpc, path, false);
	if (!rc) {
		itable_unlink(m->it, parent, name);
		if (n)
			itable_uncache(n);
		mark_removed(m, n);
		fuse_attrs_touch_dir(m, parent);
	}
	itable_put(m->it, n);
	free(path);
	fuse_ops_reply_err(req, rc);
}

void fuse_names_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount_ctx *m = ctx(req);
	struct filer_meta_page pg;
	char *path;
	wfs_err rc;

	if (is_trash(parent, name)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	path = fuse_ops_child_path(req, parent, name);
	if (!path)
		return;
	/* the filer's delete takes files too: make sure it is an (empty) directory */
	rc = filer_meta_list(m->rpc, path, "", 1, &pg);
	if (!rc && pg.n)
		rc = WFS_ENOTEMPTY;
	filer_meta_page_free(&pg);
	if (!rc)
		rc = filer_meta_delete(m->rpc, path, false);
	if (!rc) {
		struct inode *n = itable_get_name(m->it, parent, name);
		itable_unlink(m->it, parent, name);
		mark_removed(m, n);
		itable_put(m->it, n);
		fuse_attrs_touch_dir(m, parent);
		dir_links_add(m, parent, -1);
	}
	free(path);
	fuse_ops_reply_err(req, rc);
}

void fuse_names_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		       const char *newname, unsigned int flags)
{
	struct mount_ctx *m = ctx(req);
	bool noreplace = flags & RENAME_NOREPLACE, exchange = flags & RENAME_EXCHANGE;
	struct inode *a = NULL, *b = NULL;
	char *from = NULL, *to = NULL;
	int moved, replaced;
	wfs_err rc;

	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (is_trash(parent, name) || is_trash(newparent, newname)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	from = fuse_ops_child_path(req, parent, name);
	if (!from)
		return;
	to = fuse_ops_child_path(req, newparent, newname);
	if (!to)
		goto out_nr;
	a = itable_get_name(m->it, parent, name);
	b = itable_get_name(m->it, newparent, newname);
	/* an open file replaced by the rename keeps its data until closed */
	if (!exchange && !noreplace && b && b != a) {
		if (hide_open_file(m, b, newparent, newname, to) == WFS_OK) {
			itable_put(m->it, b);
			b = NULL;
		}
	}
	/* what the rename moves between the parents' subdirectory counts (before
	 * the table renames: b is the replaced name's node) */
	moved = a ? a->is_dir : -1;
	replaced = b && b != a ? b->is_dir : 0;
	rc = filer_meta_rename(m->rpc, from, to, noreplace, exchange);
	if (!rc && moved < 0) {
		dir_links_add(m, parent, INT_MIN); /* not known: both are read again */
		dir_links_add(m, newparent, INT_MIN);
	} else if (!rc) {
		int gone = exchange ? moved - replaced : moved, added = moved - replaced;
		if (parent == newparent) {
			dir_links_add(m, parent, added - gone);
		} else {
			dir_links_add(m, parent, -gone);
			dir_links_add(m, newparent, added);
		}
	}
	if (!rc) {
		itable_rename(m->it, parent, name, newparent, newname, exchange);
		/* rename changes the moved entries' ctime (as ext4 does) */
		fuse_attrs_touch_ctime(m, a, to);
		if (exchange)
			fuse_attrs_touch_ctime(m, b, from);
		else if (b)
			itable_uncache(b);
		fuse_attrs_touch_dir(m, parent);
		if (newparent != parent)
			fuse_attrs_touch_dir(m, newparent);
	}
	fuse_ops_reply_err(req, rc);
	goto out;
out_nr:;
out:
	itable_put(m->it, a);
	itable_put(m->it, b);
	free(from);
	free(to);
}

void fuse_names_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	struct mount_ctx *m = ctx(req);
	struct filer_entry *e = NULL;
	struct inode *n;
	char *target, *to;
	wfs_err rc;

	if (is_trash(newparent, newname)) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	to = fuse_ops_child_path(req, newparent, newname);
	if (!to)
		return;
	target = itable_path(m->it, ino);
	rc = target ? filer_meta_link(m->rpc, target, to, &e) : WFS_ENOENT;
	free(target);
	free(to);
	if (rc) {
		fuse_ops_reply_err(req, rc);
		return;
	}
	if (e->attr.hard_link_id_len)
		itable_set_hardlink(m->it, ino, e->attr.hard_link_id, e->attr.hard_link_id_len);
	n = itable_get(m->it, ino);
	if (n)
		itable_cache(n, e, m->follow_cache_ns);
	itable_put(m->it, n);
	fuse_attrs_touch_dir(m, newparent);
	fuse_ops_reply_entry(req, newparent, newname, e);
	filer_entry_free(e);
}

/* ---- directories ---- */

void fuse_names_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirh *d = xcalloc(1, sizeof(*d));

	pthread_mutex_init(&d->mu, NULL);
	d->ino = ino;
	fi->fh = (uint64_t)(uintptr_t)d;
	if (fuse_reply_open(req, fi)) {
		pthread_mutex_destroy(&d->mu);
		free(d);
	}
}

/* Makes d->page hold index i (without . and ..), or sets *end when i is past the end. */
static wfs_err dir_seek(struct mount_ctx *m, struct dirh *d, const char *path, uint64_t i,
			bool *end)
{
	wfs_err rc;

	*end = false;
	if (d->fetched && i < d->page_base) {
		filer_meta_page_free(&d->page);
		d->fetched = false;
	}
	while (!d->fetched || i >= d->page_base + d->page.n) {
		struct filer_meta_page next;
		const char *start = "";
		if (d->fetched) {
			if (!d->page.more || !d->page.last_name) {
				*end = true;
				return WFS_OK;
			}
			start = d->page.last_name;
		}
		rc = filer_meta_list(m->rpc, path, start, LIST_PAGE, &next);
		if (rc)
			return rc;
		if (d->fetched)
			d->page_base += d->page.n;
		else
			d->page_base = 0;
		filer_meta_page_free(&d->page);
		d->page = next;
		d->fetched = true;
		if (!d->page.n) {
			*end = true;
			return WFS_OK;
		}
	}
	return WFS_OK;
}

/* The d_ino of the node ino: its filer inode number (as stat's st_ino), else ino. */
static uint64_t dirent_ino(struct mount_ctx *m, uint64_t ino)
{
	struct inode *n = itable_get(m->it, ino);
	uint64_t v = 0;
	if (n) {
		pthread_mutex_lock(&n->mu);
		v = n->attr.filer_ino;
		pthread_mutex_unlock(&n->mu);
		itable_put(m->it, n);
	}
	return v ? v : ino;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi, bool plus)
{
	struct mount_ctx *m = ctx(req);
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;
	char *out = xmalloc(size), *path = NULL;
	size_t pos = 0;
	uint64_t idx = off < 0 ? 0 : (uint64_t)off;
	wfs_err rc = WFS_OK;

	pthread_mutex_lock(&d->mu);
	path = itable_path(m->it, ino);
	if (!path) {
		rc = WFS_ENOENT;
		goto out;
	}
	for (;; idx++) {
		struct fuse_entry_param ep;
		struct stat st;
		const char *name;
		size_t need;
		bool end;

		memset(&ep, 0, sizeof(ep));
		memset(&st, 0, sizeof(st));
		if (idx < 2) {
			name = idx == 0 ? "." : "..";
			st.st_ino = dirent_ino(m, idx == 0 ? ino : itable_parent(m->it, ino));
			st.st_mode = S_IFDIR;
			ep.attr = st;
			need = plus ? fuse_add_direntry_plus(req, NULL, 0, name, &ep, 0)
				    : fuse_add_direntry(req, NULL, 0, name, &st, 0);
			if (pos + need > size)
				break;
			pos += plus ? fuse_add_direntry_plus(req, out + pos, size - pos, name, &ep,
							     (off_t)idx + 1)
				    : fuse_add_direntry(req, out + pos, size - pos, name, &st,
							(off_t)idx + 1);
			continue;
		}
		rc = dir_seek(m, d, path, idx - 2, &end);
		if (rc || end)
			break;
		const struct filer_entry *e = d->page.entries[idx - 2 - d->page_base];
		name = e->name;
		if (is_trash(ino, name))
			continue;
		st.st_mode = e->attr.mode;
		if (plus) {
			/* measure first: an entry that does not fit must not take a reference */
			ep.attr = st;
			ep.ino = 1;
			need = fuse_add_direntry_plus(req, NULL, 0, name, &ep, 0);
			if (pos + need > size)
				break;
			if (fuse_ops_learn(m, ino, name, e, &ep))
				continue; /* the directory went away meanwhile */
			pos += fuse_add_direntry_plus(req, out + pos, size - pos, name, &ep,
						      (off_t)idx + 1);
		} else {
			/* the filer's number, as stat says; an older filer sends none */
			st.st_ino = e->attr.inode;
			if (!st.st_ino) {
				struct inode *n = itable_get_name(m->it, ino, name);
				st.st_ino = n ? n->ino : ((uint64_t)1 << 62) + idx;
				itable_put(m->it, n);
			}
			need = fuse_add_direntry(req, NULL, 0, name, &st, 0);
			if (pos + need > size)
				break;
			pos += fuse_add_direntry(req, out + pos, size - pos, name, &st,
						 (off_t)idx + 1);
		}
	}
out:
	pthread_mutex_unlock(&d->mu);
	free(path);
	/* entries already added were learned: send them even after a later error */
	if (rc && pos == 0)
		fuse_ops_reply_err(req, rc);
	else
		fuse_reply_buf(req, out, pos);
	free(out);
}

void fuse_names_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, false);
}

void fuse_names_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			    struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, fi, true);
}

void fuse_names_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirh *d = (struct dirh *)(uintptr_t)fi->fh;

	(void)ino;
	filer_meta_page_free(&d->page);
	pthread_mutex_destroy(&d->mu);
	free(d);
	fuse_reply_err(req, 0);
}

/*
 * A namespace change is committed when its call returns, but synced only by
 * the store's own schedule (SQLite synchronous=NORMAL): fsyncdir asks the filer
 * for a durable empty update, which syncs every earlier commit (the
 * write-fsync-rename-fsyncdir pattern of atomic replacement relies on it).
 */
void fuse_names_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct mount_ctx *m = ctx(req);
	struct filer_meta_set s = {.fsync = true};
	char *path = itable_path(m->it, ino);
	wfs_err rc;

	(void)datasync;
	(void)fi;
	if (!path) /* removed while open: its removal is what there is to sync */
		path = itable_path(m->it, FUSE_ROOT_ID);
	rc = path ? filer_meta_update(m->rpc, path, &s, NULL) : WFS_ENOENT;
	free(path);
	if (rc)
		fuse_ops_reply_err(req, rc);
	else
		fuse_reply_err(req, 0);
}
