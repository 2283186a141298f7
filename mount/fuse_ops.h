/*
 * The FUSE low-level operations of weedfs-mount: every operation turns into
 * filer entry calls (filer_meta.h) and the data path (file_data.h). See the
 * DESIGN comment in fuse_ops.c and docs/mount.md for the semantics.
 */
#ifndef WEEDFS_MOUNT_FUSE_OPS_H
#define WEEDFS_MOUNT_FUSE_OPS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "err.h"
#include "file_data.h"
#include "client/filer_rpc.h"
#include "inode_table.h"

struct fh;

/* Hidden directory under the mount's root holding files unlinked while open. */
#define MOUNT_TRASH_NAME ".weedfs-unlinked"
/* A hidden file's name: the mount id (its lock session, whose expiry lets the filer
 * reclaim a dead mount's hidden files) in 16 hex digits, '-', the inode number. */
#define MOUNT_HIDDEN_FMT "%016llx-%llu"

/* One mount: shared by every FUSE worker thread and the event follower. */
struct mount_ctx {
	filer_rpc *rpc;          /* borrowed */
	mount_data *md;          /* borrowed */
	itable *it;              /* borrowed */
	struct fuse_session *se; /* set before the loop starts */
	const char *root;        /* -filer.path, canonical */
	double entry_timeout, attr_timeout;
	uint64_t attr_cache_ns;   /* how long the mount caches an entry without events */
	uint64_t follow_cache_ns; /* ... and while the event follower is connected */
	atomic_bool following;    /* the event follower's stream is up */
	bool writeback_cache;
	bool noatime;      /* -o noatime: reads leave the atime alone */
	uint64_t mount_id; /* random: names this mount's hidden files */
	pthread_mutex_t trash_mu;
	uint64_t trash_ino; /* protected by trash_mu; 0 until first used */
	/* random, nonzero: sent with every filer request; the event stream leaves out its events */
	int32_t signature;
	pthread_mutex_t fh_mu;
	struct fh *handles; /* protected by fh_mu: open files (freed at unmount) */
	/* directories whose mtime/ctime a name change moved, sent in the background */
	bool touch_started; /* set before the loop starts, cleared after it stopped */
	pthread_t touch_thread;
	pthread_mutex_t touch_mu;
	pthread_cond_t touch_cv;
	struct inode **touch; /* protected by touch_mu: a reference each */
	size_t n_touch, cap_touch;
	bool touch_stop; /* protected by touch_mu */
	/* files dirty longer than commit_age_ns are committed in the background (0 = never) */
	uint64_t commit_age_ns;
	bool commit_started;
	pthread_t commit_thread;
	pthread_cond_t commit_cv; /* with touch_mu; signalled at stop */
};

/* The operation table (static). */
const struct fuse_lowlevel_ops *fuse_ops_table(void);

/*
 * Replies e to req as its errno (wfs_err_errno; 0 for WFS_OK): the one place
 * where an error of the filer, the client library or the data path becomes an
 * errno. An operation's own POSIX decisions (EINVAL for bad flags, ERANGE for
 * a small buffer, EINTR...) reply their errno directly. FUSE worker thread.
 */
void fuse_ops_reply_err(fuse_req_t req, wfs_err e);

/*
 * Starts the thread that stores directories' new mtime/ctime after name
 * changes (until then, each change stores them itself). Main thread, before
 * the loop.
 */
void fuse_ops_start(struct mount_ctx *m);
/* Stores the pending directory times and stops that thread. Main thread, after the loop. */
void fuse_ops_stop(struct mount_ctx *m);

/*
 * Commits the dirty data of every open file (at shutdown, after the loop has
 * stopped). Returns how many files failed. Main thread.
 */
int fuse_ops_flush_all(struct mount_ctx *m);
/*
 * Frees the handles the kernel never released and the file data of every node
 * (after fuse_ops_flush_all). Main thread.
 */
void fuse_ops_drop_all(struct mount_ctx *m);

#endif
