/*
 * The FUSE low-level operations (fuse_ops.h).
 *
 * DESIGN:
 * - Names: an operation on (parent, name) builds the filer path from the
 *   inode table and calls the filer's entry API; the answer's entry is cached
 *   on the node and handed to the kernel with the entry/attr timeouts. The
 *   mount's own cache (lookup, getattr, getxattr answer from it) is trusted
 *   for attrTimeout, or as long as the event follower is connected, since it
 *   drops an entry the moment someone else changes it (meta_follower.c). The
 *   mount signs its requests (mount_ctx.signature), so the filer does not
 *   send it the events of its own changes.
 * - Permissions: the mount runs with the kernel's default_permissions, so the
 *   kernel checks mode bits, sticky directories, chown/chmod rights and clears
 *   suid/sgid on write and chown (it sends the cleared mode in a setattr).
 *   The mount adds what the kernel leaves to the file system: setgid
 *   directories hand their group (and, to subdirectories, the setgid bit) to
 *   new entries, and a new file's setgid bit is dropped when its creator is
 *   not in the group. Parent directories get mtime/ctime on every change of
 *   their names.
 * - Data: one file_data per inode (file_data.h), created at the first open
 *   from a fresh lookup (close-to-open), shared by every handle, committed on
 *   flush, fsync and release as one update {appendChunks (or the whole list
 *   when file_data_flush_replaces), size, mtime}. A name of an open file that
 *   is unlinked (or replaced by a rename) is renamed into a hidden directory
 *   (MOUNT_TRASH_NAME) instead, so the file and its chunks stay until the
 *   last release deletes that name; st_nlink does not count it.
 * - Directories: readdir and readdirplus page through the filer's list; a
 *   handle keeps the current page, offsets are entry indexes (0 ".", 1 "..").
 * - Files: fuse_names.c (lookup, mknod/mkdir/symlink, unlink, rename, link,
 *   the hidden directory, readdir), fuse_data.c (open, create, the data path,
 *   commits), fuse_attrs.c (attributes, directory times and atimes, statfs,
 *   xattrs); this one holds the operation table, start/stop and the helpers
 *   they share (fuse_ops_int.h).
 */
#include "config.h"
#include "fuse_ops_int.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "fuse_locks.h"
#include "log.h"
#include "util.h"

struct fh *fuse_ops_fh_new(struct mount_ctx *m, struct inode *n, int flags)
{
	struct fh *h = xcalloc(1, sizeof(*h));

	h->node = n;
	h->flags = flags;
	pthread_mutex_lock(&m->fh_mu);
	h->next = m->handles;
	if (h->next)
		h->next->prev = h;
	m->handles = h;
	pthread_mutex_unlock(&m->fh_mu);
	return h;
}

void fuse_ops_fh_free(struct mount_ctx *m, struct fh *h)
{
	pthread_mutex_lock(&m->fh_mu);
	if (h->prev)
		h->prev->next = h->next;
	else
		m->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&m->fh_mu);
	free(h);
}

static void ns_to_ts(int64_t ns, struct timespec *ts)
{
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
	if (ts->tv_nsec < 0) {
		ts->tv_sec--;
		ts->tv_nsec += 1000000000;
	}
}

/*
 * The kernel's attributes of the entry e, with open data (size, mtime), a
 * read's atime and a setattr's attributes not yet stored winning.
 */
void fuse_ops_entry_stat(struct inode *n, const struct filer_entry *e, struct stat *st)
{
	const struct filer_attr *a = &e->attr;
	uint64_t alloc;
	int64_t ct;

	memset(st, 0, sizeof(*st));
	/* the filer's number, the same in every mount and after the kernel forgets n */
	st->st_ino = a->inode ? a->inode : n->ino;
	st->st_mode = a->mode;
	/* a directory: the filer's 2 + subdirectories; one it has not counted yet
	 * (nlink 0 or 1) shows 1, which find(1) takes as "unknown" */
	st->st_nlink = a->nlink ? a->nlink : 1;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_rdev = (dev_t)a->rdev;
	st->st_size = (off_t)a->size;
	if (S_ISLNK(a->mode) && a->symlink_target)
		st->st_size = (off_t)strlen(a->symlink_target);
	else if (S_ISDIR(a->mode))
		st->st_size = 4096;
	ns_to_ts(a->mtime_ns, &st->st_mtim);
	ns_to_ts(a->atime_ns ? a->atime_ns : a->mtime_ns, &st->st_atim);
	ct = a->ctime_ns;
	pthread_mutex_lock(&n->mu);
	if (!a->inode && n->attr.filer_ino)
		st->st_ino = n->attr.filer_ino;
	if (n->atime_pending_ns)
		ns_to_ts(n->atime_pending_ns, &st->st_atim);
	/* a directory's times from a name change not stored yet (fuse_attrs_touch_dir) */
	if (n->touch_pending_ns && n->touch_pending_ns > a->mtime_ns)
		ns_to_ts(n->touch_pending_ns, &st->st_mtim);
	if (n->touch_pending_ns && n->touch_pending_ns > a->ctime_ns)
		ct = n->touch_pending_ns;
	/* a setattr's, folded into the next commit (fuse_attrs_setattr) */
	if (n->pend_set & FM_SET_MODE)
		st->st_mode = (a->mode & S_IFMT) | n->pend_mode;
	if (n->pend_set & FM_SET_UID)
		st->st_uid = n->pend_uid;
	if (n->pend_set & FM_SET_GID)
		st->st_gid = n->pend_gid;
	if (n->unlinked && st->st_nlink)
		st->st_nlink--; /* the hidden name does not count */
	if (n->removed)
		st->st_nlink = 0;
	alloc = S_ISREG(a->mode) ? n->alloc_bytes : 0;
	if (n->fd) {
		st->st_size = (off_t)file_data_size(n->fd);
		/* dirty bytes may fill holes: never report fewer blocks than data (tar and
		 * cp take st_blocks 0 as "all holes") until the commit tells */
		if (file_data_dirty(n->fd))
			alloc = (uint64_t)st->st_size;
		if (n->data_mtime_ns) {
			ns_to_ts(n->data_mtime_ns, &st->st_mtim);
			if (!n->pend_mtime) /* a write's time, not a setattr's mtime */
				ct = n->data_mtime_ns;
		}
	}
	if (n->pend_ctime_ns > ct)
		ct = n->pend_ctime_ns;
	pthread_mutex_unlock(&n->mu);
	ns_to_ts(ct, &st->st_ctim);
	if (alloc > (uint64_t)st->st_size)
		alloc = (uint64_t)st->st_size;
	st->st_blksize = 1 << 20;
	/* what the chunks cover, not the size: a sparse file shows its holes */
	st->st_blocks = (blkcnt_t)((alloc + 511) / 512);
}

/*
 * Whether n's cached entry may be used (n->mu held): within attrTimeout, or
 * longer while the event follower is connected (it drops the entry as soon
 * as someone else changes it).
 */
bool fuse_ops_cache_fresh(struct mount_ctx *m, struct inode *n)
{
	uint64_t now = time_mono_ns();

	if (!n->cached_until || now >= n->cached_until)
		return false;
	return atomic_load(&m->following) || now < n->cached_at + m->attr_cache_ns;
}

/* The node's entry: the cached one while fresh (or any cached one with stale_ok), else a lookup. */
wfs_err fuse_ops_node_entry(struct mount_ctx *m, struct inode *n, bool stale_ok,
			    struct filer_entry **out)
{
	struct filer_entry *e = NULL;
	char *path;
	wfs_err rc;

	pthread_mutex_lock(&n->mu);
	if (n->cached && (stale_ok || fuse_ops_cache_fresh(m, n)))
		e = itable_cached_entry(n);
	pthread_mutex_unlock(&n->mu);
	if (e) {
		*out = e;
		return WFS_OK;
	}
	path = itable_path(m->it, n->ino);
	if (!path)
		return WFS_ENOENT;
	rc = filer_meta_lookup(m->rpc, path, &e);
	free(path);
	if (rc)
		return rc;
	itable_cache(n, e, m->follow_cache_ns);
	*out = e;
	return WFS_OK;
}

static bool name_ok(fuse_req_t req, const char *name)
{
	size_t len = strlen(name);

	/* any bytes: names that are not UTF-8 travel as base64 (entry_json.h) */
	if (len > FILER_NAME_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return false;
	}
	return true;
}

/* Path of (parent, name); replies the error itself and returns NULL on failure. */
char *fuse_ops_child_path(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct mount_ctx *m = ctx(req);
	char *p;

	if (!name_ok(req, name))
		return NULL;
	p = itable_child_path(m->it, parent, name);
	if (!p) {
		fuse_reply_err(req, ENOENT);
		return NULL;
	}
	if (strlen(p) > FILER_PATH_MAX) {
		free(p);
		fuse_reply_err(req, ENAMETOOLONG);
		return NULL;
	}
	return p;
}

/* Learns e as name in parent and fills ep (one lookup reference taken). */
wfs_err fuse_ops_learn(struct mount_ctx *m, fuse_ino_t parent, const char *name,
		       const struct filer_entry *e, struct fuse_entry_param *ep)
{
	uint64_t ino = itable_learn(m->it, parent, name, e, m->follow_cache_ns);
	struct inode *n;

	if (!ino)
		return WFS_ENOENT;
	n = itable_get(m->it, ino);
	memset(ep, 0, sizeof(*ep));
	ep->ino = ino;
	ep->generation = 1;
	fuse_ops_entry_stat(n, e, &ep->attr);
	ep->attr_timeout = m->attr_timeout;
	ep->entry_timeout = m->entry_timeout;
	itable_put(m->it, n);
	return WFS_OK;
}

void fuse_ops_reply_err(fuse_req_t req, wfs_err e) { fuse_reply_err(req, wfs_err_errno(e)); }

void fuse_ops_reply_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
			  const struct filer_entry *e)
{
	struct mount_ctx *m = ctx(req);
	struct fuse_entry_param ep;
	wfs_err rc = fuse_ops_learn(m, parent, name, e, &ep);

	if (rc) {
		fuse_ops_reply_err(req, rc);
		return;
	}
	if (fuse_reply_entry(req, &ep))
		itable_forget(m->it, ep.ino, 1);
}

/* Whether the caller is in group gid. */
bool fuse_ops_in_group(fuse_req_t req, gid_t gid)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	gid_t groups[64];
	int n;

	if (c->gid == gid)
		return true;
	n = fuse_req_getgroups(req, 64, groups);
	for (int i = 0; i < n && i < 64; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

void fuse_ops_start(struct mount_ctx *m)
{
	pthread_mutex_init(&m->touch_mu, NULL);
	pthread_cond_init(&m->touch_cv, NULL);
	m->touch_stop = false;
	if (thread_start(&m->touch_thread, NULL, fuse_attrs_touch_main, m, "wfs-touch")) {
		log_warn("no directory-time thread: name changes store them at once");
		pthread_cond_destroy(&m->touch_cv);
		pthread_mutex_destroy(&m->touch_mu);
		return;
	}
	m->touch_started = true;
	pthread_cond_init(&m->commit_cv, NULL);
	if (m->commit_age_ns &&
	    !thread_start(&m->commit_thread, NULL, fuse_data_commit_main, m, "wfs-commit"))
		m->commit_started = true;
	else if (m->commit_age_ns)
		log_warn("no background commit thread: files commit at close and fsync only");
}

void fuse_ops_stop(struct mount_ctx *m)
{
	if (!m->touch_started)
		return;
	pthread_mutex_lock(&m->touch_mu);
	m->touch_stop = true;
	pthread_cond_signal(&m->touch_cv);
	pthread_cond_signal(&m->commit_cv);
	pthread_mutex_unlock(&m->touch_mu);
	pthread_join(m->touch_thread, NULL);
	if (m->commit_started)
		pthread_join(m->commit_thread, NULL);
	m->commit_started = false;
	pthread_cond_destroy(&m->commit_cv);
	m->touch_started = false;
	free(m->touch);
	m->touch = NULL;
	pthread_cond_destroy(&m->touch_cv);
	pthread_mutex_destroy(&m->touch_mu);
}

/* ---- operations ---- */

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct mount_ctx *m = userdata;

	conn->max_write = 1u << 20;
	conn->max_readahead = 1u << 20;
	conn->time_gran = 1;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_READDIRPLUS) {
		conn->want |= FUSE_CAP_READDIRPLUS;
		conn->want &= ~(unsigned)FUSE_CAP_READDIRPLUS_AUTO;
	}
	if (m->writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	else
		conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
	/* O_TRUNC comes as a setattr before open; handle-kill-priv stays the kernel's */
	conn->want &= ~(unsigned)FUSE_CAP_ATOMIC_O_TRUNC;
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = fuse_names_lookup,
	.forget = fuse_names_forget,
	.forget_multi = fuse_names_forget_multi,
	.getattr = fuse_attrs_getattr,
	.setattr = fuse_attrs_setattr,
	.readlink = fuse_attrs_readlink,
	.mknod = fuse_names_mknod,
	.mkdir = fuse_names_mkdir,
	.unlink = fuse_names_unlink,
	.rmdir = fuse_names_rmdir,
	.symlink = fuse_names_symlink,
	.rename = fuse_names_rename,
	.link = fuse_names_link,
	.open = fuse_data_open,
	.read = fuse_data_read,
	.write = fuse_data_write,
	.flush = fuse_data_flush,
	.release = fuse_data_release,
	.fsync = fuse_data_fsync,
	.opendir = fuse_names_opendir,
	.readdir = fuse_names_readdir,
	.readdirplus = fuse_names_readdirplus,
	.releasedir = fuse_names_releasedir,
	.fsyncdir = fuse_names_fsyncdir,
	.statfs = fuse_attrs_statfs,
	.setxattr = fuse_attrs_setxattr,
	.getxattr = fuse_attrs_getxattr,
	.listxattr = fuse_attrs_listxattr,
	.removexattr = fuse_attrs_removexattr,
	.access = fuse_attrs_access,
	.create = fuse_data_create,
	.fallocate = fuse_data_fallocate,
	.lseek = fuse_data_lseek,
	.copy_file_range = fuse_data_copy_file_range,
	.getlk = fuse_locks_getlk,
	.setlk = fuse_locks_setlk,
	.flock = fuse_locks_flock,
};

const struct fuse_lowlevel_ops *fuse_ops_table(void) { return &ops; }

struct flush_all {
	struct inode **v;
	size_t n, cap;
};

static void collect_open(struct inode *n, void *arg)
{
	struct flush_all *f = arg;

	if (!n->fd)
		return;
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 16;
		f->v = xrealloc(f->v, f->cap * sizeof(*f->v));
	}
	f->v[f->n++] = n;
}

int fuse_ops_flush_all(struct mount_ctx *m)
{
	struct flush_all f = {0};
	int failed = 0;

	/* the loop has stopped: no operation runs and no node goes away */
	itable_foreach(m->it, collect_open, &f);
	for (size_t i = 0; i < f.n; i++) {
		wfs_err rc = fuse_data_commit_node(m, f.v[i], NULL, NULL);
		if (rc) {
			log_error("ino %llu: dirty data lost at unmount: %s",
				  (unsigned long long)f.v[i]->ino, wfs_strerror(rc));
			failed++;
		}
	}
	free(f.v);
	return failed;
}

void fuse_ops_drop_all(struct mount_ctx *m)
{
	struct flush_all f = {0};

	while (m->handles) {
		struct fh *h = m->handles;
		itable_put(m->it, h->node);
		fuse_ops_fh_free(m, h);
	}

	itable_foreach(m->it, collect_open, &f);
	for (size_t i = 0; i < f.n; i++) {
		file_data_free(f.v[i]->fd);
		f.v[i]->fd = NULL;
	}
	free(f.v);
}
