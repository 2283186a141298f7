/*
 * Private to the FUSE operations: what fuse_ops.c (table, start/stop, shared
 * helpers), fuse_names.c (names, directories), fuse_data.c (open files,
 * commits) and fuse_attrs.c (attributes, times, xattrs) share; fuse_locks.c
 * notes lock owners in struct fh. Every function runs on a FUSE worker thread
 * unless it says otherwise; see the DESIGN comment in fuse_ops.c. A function
 * is named after its file (fuse_names_* lives in fuse_names.c); an operation
 * of the table is its file's prefix and the fuse_lowlevel_ops member it fills
 * (fuse_data_read is .read).
 */
#ifndef WEEDFS_MOUNT_FUSE_OPS_INT_H
#define WEEDFS_MOUNT_FUSE_OPS_INT_H

#include <stdatomic.h>
#include <sys/stat.h>
#include "client/filer_meta.h"
#include "fuse_ops.h"
#include "util.h"

/* An open file. */
struct fh {
	struct inode *node;     /* a reference (itable_put at release) */
	int flags;              /* open(2) flags */
	struct fh *prev, *next; /* m->handles, protected by m->fh_mu */
	/* fuse_locks.c: the owners that last took a POSIX / flock lock through this
	 * handle (0: none), told at its next I/O when their locks were lost */
	_Atomic uint64_t lk_posix_owner, lk_flock_owner;
};

static inline struct mount_ctx *ctx(fuse_req_t req) { return fuse_req_userdata(req); }

static inline int64_t now_ns(void) { return (int64_t)time_now_ns(); }

/* ---- fuse_ops.c ---- */

/* A new handle on n (takes the caller's reference), listed in m->handles. */
struct fh *fuse_ops_fh_new(struct mount_ctx *m, struct inode *n, int flags);
/* Unlists and frees h (its node reference is the caller's to put). */
void fuse_ops_fh_free(struct mount_ctx *m, struct fh *h);
/* Fills st from n and its entry e (borrowed); takes n->mu. */
void fuse_ops_entry_stat(struct inode *n, const struct filer_entry *e, struct stat *st);
/* Whether n's cached entry may be used (n->mu held). */
bool fuse_ops_cache_fresh(struct mount_ctx *m, struct inode *n);
/* n's entry into *out (the caller frees it): WFS_OK or the lookup's error. */
wfs_err fuse_ops_node_entry(struct mount_ctx *m, struct inode *n, bool stale_ok,
			    struct filer_entry **out);
/* Path of (parent, name) (the caller frees it); NULL after replying the error. */
char *fuse_ops_child_path(fuse_req_t req, fuse_ino_t parent, const char *name);
/* Learns e (borrowed) as name in parent and fills ep (one lookup reference): WFS_OK or
   WFS_ENOENT (parent is gone). */
wfs_err fuse_ops_learn(struct mount_ctx *m, fuse_ino_t parent, const char *name,
		       const struct filer_entry *e, struct fuse_entry_param *ep);
/* Learns e (borrowed) as name in parent and replies with it (or the error). */
void fuse_ops_reply_entry(fuse_req_t req, fuse_ino_t parent, const char *name,
			  const struct filer_entry *e);
/* Whether the caller of req is in group gid. */
bool fuse_ops_in_group(fuse_req_t req, gid_t gid);

/* ---- fuse_names.c ---- */

/* The hidden directory's inode (made at first use); 0 when it cannot be made. */
uint64_t fuse_names_trash_ino(struct mount_ctx *m);
/* The common start of every create (path the caller frees, NULL after replying). */
char *fuse_names_new_child(fuse_req_t req, fuse_ino_t parent, const char *name,
			   struct filer_meta_new *nw);
/* Operations (fuse_ops.c's table): each replies to req. */
void fuse_names_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void fuse_names_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void fuse_names_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void fuse_names_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void fuse_names_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fuse_names_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void fuse_names_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fuse_names_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fuse_names_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		       const char *newname, unsigned int flags);
void fuse_names_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void fuse_names_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fuse_names_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi);
void fuse_names_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			    struct fuse_file_info *fi);
void fuse_names_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fuse_names_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);

/* ---- fuse_data.c ---- */

/*
 * Commits n's dirty data with extra (borrowed, may be NULL); *out (may be
 * NULL) gets the entry after (the caller frees it). WFS_OK, or the upload's or
 * the update's error as it came (WFS_ENOSPC, WFS_EQUOTA: the cluster is full).
 * Any thread.
 */
wfs_err fuse_data_commit_node_opt(struct mount_ctx *m, struct inode *n,
				  const struct filer_meta_set *extra, struct filer_entry **out,
				  bool defer_atime);
/* fuse_data_commit_node_opt deferring a lone read atime to the touch thread. Any thread. */
wfs_err fuse_data_commit_node(struct mount_ctx *m, struct inode *n,
			      const struct filer_meta_set *extra, struct filer_entry **out);
/* A change of n's data now: its mtime at the next commit (after any setattr's). */
void fuse_data_note_write(struct inode *n);
/* The background commit thread (arg: the mount_ctx); started by fuse_ops_start. */
void *fuse_data_commit_main(void *arg);
/* Shortens chunks crossing a new end at size after a shrink. Best effort. */
void fuse_data_clip_after_shrink(struct mount_ctx *m, struct inode *n, uint64_t size);
/* Operations (fuse_ops.c's table): each replies to req. */
void fuse_data_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fuse_data_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi);
void fuse_data_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void fuse_data_write(fuse_req_t req, fuse_ino_t ino, const char *data, size_t size, off_t off,
		     struct fuse_file_info *fi);
void fuse_data_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fuse_data_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void fuse_data_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fuse_data_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi);
void fuse_data_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
		     struct fuse_file_info *fi);
void fuse_data_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out, off_t off_out,
			       struct fuse_file_info *fi_out, size_t len, int flags);

/* ---- fuse_attrs.c ---- */

/* Hands n (takes the caller's reference) to the touch thread. Any thread. */
void fuse_attrs_touch_queue(struct mount_ctx *m, struct inode *n);
/* Sets directory dir's mtime and ctime to now (a name in it changed). Best effort. */
void fuse_attrs_touch_dir(struct mount_ctx *m, fuse_ino_t dir);
/* Sets the ctime of the entry at path (node n, may be NULL) to now. Best effort. */
void fuse_attrs_touch_ctime(struct mount_ctx *m, struct inode *n, const char *path);
/* The touch thread (arg: the mount_ctx); started by fuse_ops_start. */
void *fuse_attrs_touch_main(void *arg);
/*
 * Keeps the attributes of s (mode, uid, gid, mtime, atime; no size) on n for
 * its next commit when one is certain to follow (an open handle holds dirty
 * data): true, nothing sent. False, nothing kept: the caller sends them.
 */
bool fuse_attrs_defer(struct inode *n, const struct filer_meta_set *s);
/* relatime after a read of n: notes a new atime on the node when due. */
void fuse_attrs_note_access(struct mount_ctx *m, struct inode *n);
/* Operations (fuse_ops.c's table): each replies to req. */
void fuse_attrs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fuse_attrs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			struct fuse_file_info *fi);
void fuse_attrs_readlink(fuse_req_t req, fuse_ino_t ino);
void fuse_attrs_statfs(fuse_req_t req, fuse_ino_t ino);
void fuse_attrs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			 size_t size, int flags);
void fuse_attrs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void fuse_attrs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void fuse_attrs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
void fuse_attrs_access(fuse_req_t req, fuse_ino_t ino, int mask);

#endif
