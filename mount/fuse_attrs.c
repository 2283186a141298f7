/*
 * The attribute operations of weedfs-mount (fuse_ops_int.h): getattr,
 * setattr, readlink, access, statfs and xattrs, the relatime of reads
 * (fuse_attrs_note_access) and the touch thread that stores directories'
 * times after name changes and deferred atimes. See the DESIGN comment in
 * fuse_ops.c.
 */
#include "config.h"
#include "fuse_ops_int.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include "json.h"
#include "util.h"

static int64_t ts_to_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static void touch_dir_now(struct mount_ctx *m, fuse_ino_t dir);

/* A burst of name changes in a directory costs one store of its times. */
#define TOUCH_DELAY_NS (50 * 1000000ll)

/*
 * Sets a directory's mtime and ctime to now (a name in it changed): at once
 * in the mount's cached entry (what stat shows here), in the filer within
 * TOUCH_DELAY_NS by the touch thread, so a create costs no extra round trip.
 * Without a cached entry (or before the thread runs) it stores them at once.
 * Best effort.
 */
/* Hands n (its reference taken) to the touch thread. */
void fuse_attrs_touch_queue(struct mount_ctx *m, struct inode *n)
{
	pthread_mutex_lock(&m->touch_mu);
	if (m->n_touch == m->cap_touch) {
		m->cap_touch = m->cap_touch ? m->cap_touch * 2 : 64;
		m->touch = xrealloc(m->touch, m->cap_touch * sizeof(*m->touch));
	}
	m->touch[m->n_touch++] = n; /* the list keeps the reference */
	pthread_cond_signal(&m->touch_cv);
	pthread_mutex_unlock(&m->touch_mu);
}

void fuse_attrs_touch_dir(struct mount_ctx *m, fuse_ino_t dir)
{
	struct inode *n;
	bool queued = false, first = false;
	int64_t now = now_ns();

	if (!m->touch_started) {
		touch_dir_now(m, dir);
		return;
	}
	n = itable_get(m->it, dir);
	if (!n)
		return;
	pthread_mutex_lock(&n->mu);
	if (n->cached) {
		n->attr.mtime_ns = now;
		if (n->attr.ctime_ns < now)
			n->attr.ctime_ns = now;
		first = !n->touch_pending_ns;
		n->touch_pending_ns = now;
		queued = true;
	}
	pthread_mutex_unlock(&n->mu);
	if (!queued) {
		itable_put(m->it, n);
		touch_dir_now(m, dir);
		return;
	}
	if (!first) {
		itable_put(m->it, n); /* already queued */
		return;
	}
	fuse_attrs_touch_queue(m, n);
}

/* Stores n's pending directory times, or a file's read atime (touch thread). */
static void touch_send(struct mount_ctx *m, struct inode *n)
{
	struct filer_meta_set s = {.set = FM_SET_MTIME | FM_SET_CTIME};
	char *path = NULL;

	if (!n->is_dir) {
		pthread_mutex_lock(&n->mu);
		n->atime_queued = false;
		pthread_mutex_unlock(&n->mu);
		fuse_data_commit_node_opt(m, n, NULL, NULL, false);
		return;
	}

	/* commit_mu: a setattr of the mtime (tar restoring it) is not overtaken */
	pthread_mutex_lock(&n->commit_mu);
	pthread_mutex_lock(&n->mu);
	s.mtime_ns = s.ctime_ns = n->touch_pending_ns;
	n->touch_pending_ns = 0;
	if (n->cached && n->attr.ctime_ns > s.ctime_ns)
		s.ctime_ns = n->attr.ctime_ns;
	pthread_mutex_unlock(&n->mu);
	if (s.mtime_ns)
		path = itable_path(m->it, n->ino);
	if (path)
		filer_meta_update(m->rpc, path, &s, NULL); /* WFS_ENOENT: removed since */
	pthread_mutex_unlock(&n->commit_mu);
	free(path);
}

void *fuse_attrs_touch_main(void *arg)
{
	struct mount_ctx *m = arg;

	pthread_mutex_lock(&m->touch_mu);
	for (;;) {
		struct inode **v;
		size_t nv;
		while (!m->n_touch && !m->touch_stop)
			pthread_cond_wait(&m->touch_cv, &m->touch_mu);
		if (!m->n_touch)
			break; /* stopping, nothing left */
		if (!m->touch_stop) {
			/* let the burst of changes gather */
			struct timespec until = time_deadline(CLOCK_REALTIME, TOUCH_DELAY_NS);
			while (!m->touch_stop &&
			       pthread_cond_timedwait(&m->touch_cv, &m->touch_mu, &until) == 0)
				;
		}
		v = m->touch;
		nv = m->n_touch;
		m->touch = NULL;
		m->n_touch = m->cap_touch = 0;
		pthread_mutex_unlock(&m->touch_mu);
		for (size_t i = 0; i < nv; i++) {
			touch_send(m, v[i]);
			itable_put(m->it, v[i]);
		}
		free(v);
		pthread_mutex_lock(&m->touch_mu);
	}
	pthread_mutex_unlock(&m->touch_mu);
	return NULL;
}

/* Stores a directory's mtime and ctime of now in the filer. Best effort. */
static void touch_dir_now(struct mount_ctx *m, fuse_ino_t dir)
{
	struct filer_meta_set s = {.set = FM_SET_MTIME | FM_SET_CTIME};
	struct filer_entry *e = NULL;
	struct inode *n;
	char *path = itable_path(m->it, dir);

	if (!path)
		return;
	s.mtime_ns = s.ctime_ns = now_ns();
	if (!filer_meta_update(m->rpc, path, &s, &e)) {
		n = itable_get(m->it, dir);
		if (n)
			itable_cache(n, e, m->follow_cache_ns);
		itable_put(m->it, n);
	}
	filer_entry_free(e);
	free(path);
}

/* Sets the ctime of the entry at path (node n, may be NULL) to now. Best effort. */
void fuse_attrs_touch_ctime(struct mount_ctx *m, struct inode *n, const char *path)
{
	struct filer_meta_set s = {.set = FM_SET_CTIME, .ctime_ns = now_ns()};
	struct filer_entry *e = NULL;

	if (!filer_meta_update(m->rpc, path, &s, &e) && n)
		itable_cache(n, e, m->follow_cache_ns);
	else if (n)
		itable_uncache(n);
	filer_entry_free(e);
}

void fuse_attrs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n = itable_get(m->it, ino);
	struct filer_entry *e = NULL;
	struct stat st;
	bool removed;
	wfs_err rc;

	(void)fi;
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	pthread_mutex_lock(&n->mu);
	removed = n->removed;
	pthread_mutex_unlock(&n->mu);
	/* a removed node (still open) has no path: its last entry, with nlink 0 */
	rc = fuse_ops_node_entry(m, n, removed, &e);
	if (rc) {
		fuse_ops_reply_err(req, rc);
	} else {
		fuse_ops_entry_stat(n, e, &st);
		fuse_reply_attr(req, &st, m->attr_timeout);
	}
	filer_entry_free(e);
	itable_put(m->it, n);
}

/*
 * DESIGN (attributes of a file being written): tar, cp -p and rsync create a
 * file, write it, then fchown, fchmod and futimens it before close. Each of
 * those would be a synchronous filer update, on top of the commit at close.
 * Instead, while an open handle holds dirty data (a commit is certain to
 * follow: flush, fsync, release, the background commit, unmount), a setattr
 * of mode, uid, gid, mtime or atime is kept on the node (pend_*, mtime in
 * data_mtime_ns with pend_mtime, atime in atime_pending_ns) and commit_node
 * sends it in the data's one update, the filer's copy getting them with the
 * data. The rules:
 * - This mount shows them at once (fuse_ops_entry_stat overlays them on every
 *   reply: setattr's, getattr, lookup); other mounts see them at close, as
 *   they see the data (close-to-open). Without dirty data, or with no open
 *   handle, the update is sent at once, as before; a size change always is.
 * - A setattr's mtime wins over the write time at the commit; a write after
 *   it makes the mtime the write's again (fuse_data_note_write), as on ext4.
 * - The kernel's permission checks and its suid/sgid clearing are unchanged:
 *   they arrive here as setattrs like any other and their result shows in the
 *   attributes this mount replies with.
 * - Deferring takes commit_mu: no commit is in flight, so the next one sees
 *   the attributes; a commit clears them only when it succeeded, so a failed
 *   one keeps them for the next try and its error reaches flush, close or
 *   fsync like the data's. A later synchronous setattr goes through the
 *   commit too while any are kept (its fields win), so none goes stale.
 */
bool fuse_attrs_defer(struct inode *n, const struct filer_meta_set *s)
{
	const unsigned ids = FM_SET_MODE | FM_SET_UID | FM_SET_GID;
	bool dirty;

	/* 0 is "none" in data_mtime_ns and atime_pending_ns: such a time goes at once */
	if ((s->set & ~(ids | FM_SET_MTIME | FM_SET_ATIME | FM_SET_CTIME)) ||
	    ((s->set & FM_SET_MTIME) && !s->mtime_ns) || ((s->set & FM_SET_ATIME) && !s->atime_ns))
		return false;
	pthread_mutex_lock(&n->commit_mu);
	pthread_mutex_lock(&n->mu);
	dirty = n->fd && n->open_count > 0 && file_data_dirty(n->fd);
	if (dirty) {
		n->pend_set |= s->set & ids;
		if (s->set & FM_SET_MODE)
			n->pend_mode = s->mode;
		if (s->set & FM_SET_UID)
			n->pend_uid = s->uid;
		if (s->set & FM_SET_GID)
			n->pend_gid = s->gid;
		if (s->set & FM_SET_MTIME) {
			n->data_mtime_ns = s->mtime_ns;
			n->pend_mtime = true;
		}
		if (s->set & FM_SET_ATIME)
			n->atime_pending_ns = s->atime_ns;
		n->pend_ctime_ns = (s->set & FM_SET_CTIME) ? s->ctime_ns : now_ns();
	}
	pthread_mutex_unlock(&n->mu);
	pthread_mutex_unlock(&n->commit_mu);
	return dirty;
}

void fuse_attrs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			struct fuse_file_info *fi)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n = itable_get(m->it, ino);
	struct filer_meta_set s = {0};
	struct filer_entry *e = NULL;
	file_data *fd = NULL;
	struct stat st;
	wfs_err rc = WFS_OK;

	(void)fi;
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (to_set & FUSE_SET_ATTR_MODE) {
		s.set |= FM_SET_MODE;
		s.mode = attr->st_mode & 07777;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		s.set |= FM_SET_UID;
		s.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		s.set |= FM_SET_GID;
		s.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
		s.set |= FM_SET_MTIME;
		s.mtime_ns = now_ns();
	} else if (to_set & FUSE_SET_ATTR_MTIME) {
		s.set |= FM_SET_MTIME;
		s.mtime_ns = ts_to_ns(&attr->st_mtim);
	}
	if (to_set & FUSE_SET_ATTR_CTIME) {
		s.set |= FM_SET_CTIME;
		s.ctime_ns = ts_to_ns(&attr->st_ctim);
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW)) {
		/* stored apart from the mtime: UTIME_OMIT of the other keeps it */
		s.set |= FM_SET_ATIME;
		s.atime_ns =
			(to_set & FUSE_SET_ATTR_ATIME_NOW) ? now_ns() : ts_to_ns(&attr->st_atim);
		pthread_mutex_lock(&n->mu);
		n->atime_pending_ns = 0; /* an explicit atime wins over a read's */
		pthread_mutex_unlock(&n->mu);
		if (!(s.set & FM_SET_CTIME)) {
			s.set |= FM_SET_CTIME; /* changing atime changes ctime */
			s.ctime_ns = now_ns();
		}
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (n->is_dir) {
			rc = WFS_EISDIR;
			goto out;
		}
		if (attr->st_size < 0) {
			rc = WFS_EINVAL;
			goto out;
		}
		pthread_mutex_lock(&n->commit_mu);
		pthread_mutex_lock(&n->mu);
		fd = n->fd;
		if (fd) {
			rc = file_data_truncate(fd, (uint64_t)attr->st_size);
			n->data_mtime_ns = now_ns();
			n->pend_mtime = false;
		}
		pthread_mutex_unlock(&n->mu);
		pthread_mutex_unlock(&n->commit_mu);
		if (rc)
			goto out;
		if (!fd) {
			s.set |= FM_SET_SIZE;
			s.size = (uint64_t)attr->st_size;
		}
		if (!(s.set & FM_SET_MTIME)) {
			s.set |= FM_SET_MTIME;
			s.mtime_ns = now_ns();
		}
	}
	if (!fd && s.set && fuse_attrs_defer(n, &s)) {
		rc = fuse_ops_node_entry(m, n, false, &e); /* shows them (entry_stat) */
		goto out;
	}
	if (!fd) {
		/* an explicit mtime must outlive data still buffered (no open handle: a
		   failed commit's): commit both now, or a later one would stamp the write
		   time; attributes kept for a commit go with it too, this setattr's winning */
		pthread_mutex_lock(&n->mu);
		if ((s.set & FM_SET_MTIME) || n->pend_set || n->pend_mtime || n->pend_ctime_ns)
			fd = n->fd;
		pthread_mutex_unlock(&n->mu);
	}
	if (fd) {
		rc = fuse_data_commit_node(m, n, &s, &e);
	} else if (s.set) {
		char *path = itable_path(m->it, ino);
		if (!(s.set & FM_SET_CTIME)) {
			s.set |= FM_SET_CTIME;
			s.ctime_ns = now_ns();
		}
		/* an explicit mtime wins over a pending directory touch (touch_send) */
		pthread_mutex_lock(&n->commit_mu);
		if (s.set & FM_SET_MTIME) {
			pthread_mutex_lock(&n->mu);
			n->touch_pending_ns = 0;
			pthread_mutex_unlock(&n->mu);
		}
		rc = path ? filer_meta_update(m->rpc, path, &s, &e) : WFS_ENOENT;
		pthread_mutex_unlock(&n->commit_mu);
		free(path);
		if (!rc)
			itable_cache(n, e, m->follow_cache_ns);
	}
	if (!rc && (to_set & FUSE_SET_ATTR_SIZE) && attr->st_size > 0) {
		fuse_data_clip_after_shrink(m, n, (uint64_t)attr->st_size);
		filer_entry_free(e);
		e = NULL;
	}
	if (!rc && !e)
		rc = fuse_ops_node_entry(m, n, false, &e);
out:
	if (rc) {
		fuse_ops_reply_err(req, rc);
	} else {
		fuse_ops_entry_stat(n, e, &st);
		fuse_reply_attr(req, &st, m->attr_timeout);
	}
	filer_entry_free(e);
	itable_put(m->it, n);
}

void fuse_attrs_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n = itable_get(m->it, ino);
	struct filer_entry *e = NULL;
	wfs_err rc;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	rc = fuse_ops_node_entry(m, n, true, &e);
	if (rc)
		fuse_ops_reply_err(req, rc);
	else if (!S_ISLNK(e->attr.mode) || !e->attr.symlink_target)
		fuse_reply_err(req, EINVAL);
	else
		fuse_reply_readlink(req, e->attr.symlink_target);
	filer_entry_free(e);
	itable_put(m->it, n);
}

#define RELATIME_MAX_AGE_NS (24 * 3600 * 1000000000ll)

/*
 * relatime after a read of n: a new atime when the current one is not after
 * the mtime or ctime, or is a day old. Kept on the node (stat shows it at
 * once) and stored with the next commit (flush, close), so a read costs no
 * round trip. Nothing with -o noatime.
 */
void fuse_attrs_note_access(struct mount_ctx *m, struct inode *n)
{
	int64_t now = now_ns(), at, mt, ct;

	if (m->noatime)
		return;
	pthread_mutex_lock(&n->mu);
	if (n->cached) {
		const struct inode_attr *a = &n->attr;
		at = n->atime_pending_ns ? n->atime_pending_ns
		     : a->atime_ns       ? a->atime_ns
					 : a->mtime_ns;
		mt = n->data_mtime_ns ? n->data_mtime_ns : a->mtime_ns;
		ct = n->data_mtime_ns > a->ctime_ns ? n->data_mtime_ns : a->ctime_ns;
		if (at <= mt || at <= ct || now - at > RELATIME_MAX_AGE_NS)
			n->atime_pending_ns = now;
	}
	pthread_mutex_unlock(&n->mu);
}

/*
 * The filer's statfs op: *total, *free bytes and *files in use. WFS_OK or the
 * call's error (WFS_ENOSYS from a filer without it).
 */
static wfs_err filer_statfs(struct mount_ctx *m, uint64_t *total, uint64_t *free_b,
			    uint64_t *files)
{
	yajl_val tree;
	char msg[128];
	buf resp;
	wfs_err rc;

	buf_init(&resp);
	rc = filer_rpc_call(m->rpc, "statfs", "{}", 2, &resp);
	if (rc)
		goto out;
	tree = json_parse(resp.data ? resp.data : "", resp.len, msg, sizeof(msg));
	if (!tree || !json_get_u64(tree, "totalBytes", total) ||
	    !json_get_u64(tree, "freeBytes", free_b) || !json_get_u64(tree, "files", files))
		rc = WFS_EIO;
	if (!rc && *free_b > *total)
		*free_b = *total;
	yajl_tree_free(tree);
out:
	buf_free(&resp);
	return rc;
}

void fuse_attrs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	uint64_t total, free_b, files;
	struct statvfs s;
	const uint64_t bs = 1 << 20;

	(void)ino;
	memset(&s, 0, sizeof(s));
	s.f_bsize = bs;
	s.f_frsize = bs;
	s.f_namemax = FILER_NAME_MAX;
	s.f_files = 1ull << 40;
	if (!filer_statfs(ctx(req), &total, &free_b, &files)) {
		/* the cluster's volumes (docs/mount.md) */
		s.f_blocks = total / bs;
		s.f_bfree = s.f_bavail = free_b / bs;
		s.f_ffree = s.f_favail = files < s.f_files ? s.f_files - files : 0;
	} else {
		/*
		 * A filer without the statfs op: report a fixed 1 PiB with all of
		 * it free, so tools that check free space before writing go ahead.
		 */
		s.f_blocks = 1ull << 30;
		s.f_bfree = s.f_bavail = 1ull << 30;
		s.f_ffree = s.f_favail = 1ull << 40;
	}
	fuse_reply_statfs(req, &s);
}

/* ---- extended attributes ---- */

/* The namespaces a local file system stores (system.* ones are the kernel's). */
static bool xattr_namespace_ok(const char *name)
{
	return !strncmp(name, "user.", 5) || !strncmp(name, "trusted.", 8) ||
	       !strncmp(name, "security.", 9);
}

void fuse_attrs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			 size_t size, int flags)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n;
	char *path;
	wfs_err rc;

	if (strlen(name) > FILER_SHORT_MAX) {
		fuse_reply_err(req, ERANGE);
		return;
	}
	if (!xattr_namespace_ok(name)) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	if ((flags & XATTR_CREATE) && (flags & XATTR_REPLACE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	path = itable_path(m->it, ino);
	rc = path ? filer_meta_set_xattr(m->rpc, path, name, value, size,
					 (flags & XATTR_CREATE)    ? FM_XATTR_CREATE
					 : (flags & XATTR_REPLACE) ? FM_XATTR_REPLACE
								   : FM_XATTR_ANY)
		  : WFS_ENOENT;
	free(path);
	n = itable_get(m->it, ino);
	if (n)
		itable_uncache(n);
	itable_put(m->it, n);
	fuse_ops_reply_err(req, rc); /* WFS_EEXIST (create), WFS_ENODATA (replace) */
}

void fuse_attrs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n = itable_get(m->it, ino);
	const struct filer_xattr *x;
	struct filer_entry *e = NULL;
	wfs_err rc;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (!xattr_namespace_ok(name)) {
		itable_put(m->it, n);
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	rc = fuse_ops_node_entry(m, n, false, &e);
	if (rc) {
		fuse_ops_reply_err(req, rc);
	} else if (!(x = filer_entry_xattr_get(e, name))) {
		fuse_reply_err(req, ENODATA);
	} else if (!size) {
		fuse_reply_xattr(req, x->value_len);
	} else if (x->value_len > size) {
		fuse_reply_err(req, ERANGE);
	} else {
		fuse_reply_buf(req, (const char *)x->value, x->value_len);
	}
	filer_entry_free(e);
	itable_put(m->it, n);
}

void fuse_attrs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n = itable_get(m->it, ino);
	struct filer_entry *e = NULL;
	buf b;
	wfs_err rc;

	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	buf_init(&b);
	rc = fuse_ops_node_entry(m, n, false, &e);
	if (!rc) {
		/* trusted.* is listed for privileged callers only (as the kernel's own xattr
		 * handlers do) */
		bool privileged = fuse_req_ctx(req)->uid == 0;
		for (size_t i = 0; i < e->n_xattrs; i++) {
			const char *xn = e->xattrs[i].name;
			if (!privileged && !strncmp(xn, "trusted.", 8))
				continue;
			buf_append(&b, xn, strlen(xn) + 1);
		}
	}
	if (rc)
		fuse_ops_reply_err(req, rc);
	else if (!size)
		fuse_reply_xattr(req, b.len);
	else if (b.len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, b.data, b.len);
	buf_free(&b);
	filer_entry_free(e);
	itable_put(m->it, n);
}

void fuse_attrs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	struct mount_ctx *m = ctx(req);
	struct inode *n;
	char *path = itable_path(m->it, ino);
	wfs_err rc = path ? filer_meta_remove_xattr(m->rpc, path, name) : WFS_ENOENT;

	free(path);
	n = itable_get(m->it, ino);
	if (n)
		itable_uncache(n);
	itable_put(m->it, n);
	fuse_ops_reply_err(req, rc); /* WFS_ENODATA: no such attribute */
}

void fuse_attrs_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	struct mount_ctx *m = ctx(req);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct inode *n = itable_get(m->it, ino);
	struct filer_entry *e = NULL;
	wfs_err rc;

	/* only reached without default_permissions: the mode bits, as the kernel would */
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	rc = fuse_ops_node_entry(m, n, false, &e);
	if (!rc && mask != F_OK && c->uid != 0) {
		struct stat st;
		fuse_ops_entry_stat(n, e, &st); /* with a setattr's not stored yet */
		unsigned bits = st.st_mode;
		unsigned have = c->uid == st.st_uid        ? (bits >> 6) & 7
				: fuse_ops_in_group(req, st.st_gid) ? (bits >> 3) & 7
							     : bits & 7;
		if ((unsigned)mask & ~have)
			rc = WFS_EACCES;
	}
	fuse_ops_reply_err(req, rc);
	filer_entry_free(e);
	itable_put(m->it, n);
}
