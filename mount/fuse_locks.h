/*
 * fcntl and flock locks of weedfs-mount, held by the filer so they exclude
 * other mounts too (the filer's "lock" ops, docs/api-filer-json.md).
 *
 * The mount is one lock session (its random mount id), opened at the start; a
 * thread renews its lease (a fifth of it, at most every 3 s), so the filer
 * drops this mount's locks when it dies, and deletes the files it hid
 * (fuse_names.c's hide_open_file names them after the mount id; the session
 * tells the filer their directory). The FUSE lock owner (an fd table for
 * POSIX locks, an open file description for flock) is the owner inside the
 * session. After a filer restart the locks are re-asserted (fuse_locks.c);
 * one that cannot be fails its owner's next lock call, or the next write or
 * fsync through the descriptor it was taken through, with ENOLCK.
 */
#ifndef WEEDFS_MOUNT_FUSE_LOCKS_H
#define WEEDFS_MOUNT_FUSE_LOCKS_H

#include "fuse_ops.h"

/* The FUSE operations (any FUSE worker thread). F_SETLKW and a flock without
 * LOCK_NB poll the filer until granted or interrupted (EINTR). */
void fuse_locks_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		      struct flock *lock);
void fuse_locks_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
		      int sleep);
void fuse_locks_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op);

/*
 * Releases the POSIX locks owner holds on ino (flush: a close drops the
 * process's locks on the file). Costs nothing when this mount holds no lock
 * on ino. Does not reply. FUSE worker thread.
 */
void fuse_locks_flush(struct mount_ctx *m, fuse_ino_t ino, uint64_t owner);
/* Releases owner's flock lock on ino (release with fi->flock_release). FUSE worker thread. */
void fuse_locks_release(struct mount_ctx *m, fuse_ino_t ino, uint64_t owner);

/*
 * Whether fi's handle took a lock (its last POSIX or flock owner) that was
 * lost on ino since the owner was last told: then replies ENOLCK to req (the
 * caller does nothing else) and clears the mark. False for a writeback of
 * cached pages (never failed). write and fsync; FUSE worker thread.
 */
bool fuse_locks_io_lost(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/*
 * Opens the mount's session with a lease of lease_s seconds (1..3600) and
 * starts the renewal thread. Main thread, before the FUSE loop starts (m->it
 * and m->rpc set).
 */
void fuse_locks_start(struct mount_ctx *m, unsigned lease_s);
/*
 * Stops the renewal thread and ends the session at the filer at once (a clean
 * unmount): it drops every lock of this mount and deletes the files the mount
 * still hides. Main thread, after the FUSE loop stopped and every open file
 * was committed, before m->rpc is freed.
 */
void fuse_locks_stop(struct mount_ctx *m);

#endif
