/*
 * Reclaims the files a mount hid and can no longer delete: weedfs-mount
 * renames a file unlinked while open to "<hidden dir>/<mount id>-<inode>"
 * (docs/mount.md, "Unlink while open") and deletes it at the last close. A
 * mount that dies (kill -9, a crash, a lost machine) leaves them behind; the
 * filer deletes them, with their chunks, once the mount's lock session
 * (filer_lock.h; the session id is the mount id) has ended.
 *
 * DESIGN: a mount tells its hidden directory when it renews its session
 * (lockSession "hiddenDir"). The filer keeps a record (session, directory)
 * per such session, persisted in the store's key-value space under
 * "lockSessions:<ip:port>" (one value, a line per session; written only when
 * a session first names its directory, so renewals cost no store write), so
 * a restarted filer still knows where to look. Records are per filer, never
 * shared by several filers on one store, so a filer reclaims only the
 * sessions it served. A thread checks the records every second: a session
 * that is not live in the lock table is reclaimed (its "<16 hex id>-*"
 * entries deleted through the namespace core, chunks to the garbage queue,
 * then the record dropped) when this filer saw it live and its lease ran out,
 * or when it was only loaded from the store and the restart's grace period
 * (longer than a lease, in which every live mount renews) has passed. A clean
 * unmount's release reclaims at once (filer_reclaim_end).
 */
#ifndef WEEDFS_FILER_FILER_RECLAIM_H
#define WEEDFS_FILER_FILER_RECLAIM_H

#include <stdbool.h>
#include <stdint.h>

struct filer;
struct filer_reclaim;

/*
 * Loads f's records from its store and starts the checking thread; f->self,
 * f->store and f->locks (with its grace period set) are ready. Control thread.
 */
struct filer_reclaim *filer_reclaim_start(struct filer *f);
/* Stops and joins the thread, frees r. NULL does nothing. Control thread. */
void filer_reclaim_stop(struct filer_reclaim *r);
/*
 * Records that session (live) hides files in dir (borrowed, a canonical
 * path), persisting the record when it is new; reclaimed: its mount has
 * re-asserted its locks after the start. The grace period of the lock table
 * ends early once every recorded session has (none recorded: no grace at
 * all). Worker thread.
 */
void filer_reclaim_session(struct filer *f, uint64_t session, const char *dir, bool reclaimed);
/* The session ended cleanly: deletes its hidden files now, drops its record. Worker thread. */
void filer_reclaim_end(struct filer *f, uint64_t session);

#endif
