/*
 * Advisory file locks shared by every mount of one filer: POSIX byte-range
 * locks (fcntl) and whole-file flock locks, held in memory by the filer
 * (docs/api-filer-json.md, "lock"). Not persisted, not shared between
 * several filers: a filer restart drops every lock.
 *
 * DESIGN: a table maps a file key to the locks on it. The key is
 * "hardlink:<hex id>" for a hard-linked file (every name shares its locks)
 * and "path:<full path>" otherwise, fixed when the lock is taken: a rename
 * while locked leaves the locks under the old key (the holder keeps using
 * the key it was given; a new locker through the new name does not see
 * them until they are released). A lock belongs to an owner (session,
 * owner): the session is a client (one mount) that renews a lease; an owner
 * is the kernel's lock owner inside it (an fd table for POSIX, an open file
 * description for flock). As in the kernel an owner never conflicts with
 * itself and a new lock replaces the overlapping part of its own older ones
 * (ranges are split and same-type neighbours merged). flock and POSIX locks
 * do not conflict with each other (Linux). A session whose lease runs out
 * loses all its locks at the next call that looks at the table, so a
 * crashed client never blocks the others for longer than its lease.
 */
#ifndef WEEDFS_FILER_FILER_LOCK_H
#define WEEDFS_FILER_FILER_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The end of a range that runs to the end of the file (and beyond). */
#define FILER_LOCK_EOF INT64_MAX
/* A session's lease unless it asks for another (seconds), and the bounds. */
#define FILER_LOCK_LEASE_S     15
#define FILER_LOCK_LEASE_MAX_S 3600
/* Locks in one table, sessions at most (beyond: ENOLCK). */
#define FILER_LOCKS_MAX    (1u << 20)
#define FILER_SESSIONS_MAX 65536u

enum filer_lock_type { FILER_LOCK_UNLOCK, FILER_LOCK_READ, FILER_LOCK_WRITE };

struct filer_lock {
	uint64_t session, owner;
	int64_t start, end; /* inclusive; 0 <= start <= end <= FILER_LOCK_EOF */
	uint32_t pid;       /* the holder's pid, for F_GETLK */
	enum filer_lock_type type;
	bool flock; /* a flock(2) lock (whole file), else POSIX */
};

struct filer_locks;

/* An empty table. Free with filer_locks_free (NULL does nothing). */
struct filer_locks *filer_locks_new(void);
void filer_locks_free(struct filer_locks *t);

/*
 * Sets, changes or releases (FILER_LOCK_UNLOCK) req's range for its owner on
 * key (borrowed) at time now_ns (monotonic), renewing req->session's lease
 * (creating the session with the default lease if unknown). Returns 0, EAGAIN
 * with the conflicting lock in *conflict (nothing changed), or ENOLCK when the
 * table is full. *held: the locks req->session holds on key afterwards.
 * Thread-safe.
 */
int filer_locks_set(struct filer_locks *t, const char *key, const struct filer_lock *req,
		    uint64_t now_ns, struct filer_lock *conflict, size_t *held);
/*
 * The conflicting lock req (type READ or WRITE) would meet on key with the
 * lowest start, into *conflict: true if there is one. Thread-safe.
 */
bool filer_locks_test(struct filer_locks *t, const char *key, const struct filer_lock *req,
		      uint64_t now_ns, struct filer_lock *conflict);
/*
 * Renews (or creates) session with a lease of lease_ns from now_ns. Returns
 * 0 and *created (true: the session was unknown, so any locks it thought it
 * held are gone), or ENOLCK when there are too many sessions. Thread-safe.
 */
int filer_locks_renew(struct filer_locks *t, uint64_t session, uint64_t lease_ns, uint64_t now_ns,
		      bool *created);
/* Drops session and all its locks now (a clean unmount). Thread-safe. */
void filer_locks_end(struct filer_locks *t, uint64_t session);
/* Locks in the table after expiring leases at now_ns (tests). Thread-safe. */
size_t filer_locks_count(struct filer_locks *t, uint64_t now_ns);

struct fjob;
/*
 * Serves the JSON API ops "lock", "getLock" and "lockSession" (body borrowed)
 * into j's response; false for any other op (left to the caller). The
 * process's one lock table (a process runs one filer). Worker thread.
 */
bool filer_lock_api(struct fjob *j, const char *op, const char *body, size_t len);

#endif
