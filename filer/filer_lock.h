/*
 * Advisory file locks shared by every mount of one filer: POSIX byte-range
 * locks (fcntl) and whole-file flock locks, held in memory by the filer
 * (docs/api-filer-json.md, "lock"). Not persisted, not shared between
 * several filers (each has its own table, also two in one process): a filer
 * restart drops every lock.
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
#include "err.h"

/* The end of a range that runs to the end of the file (and beyond). */
#define FILER_LOCK_EOF INT64_MAX
/* A session's lease unless it asks for another (seconds), and the bounds. */
#define FILER_LOCK_LEASE_S     15
#define FILER_LOCK_LEASE_MAX_S 3600
/* Locks in one table, sessions at most (beyond: WFS_ENOLCK). */
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
 * (creating the session with the default lease if unknown). Returns WFS_OK, WFS_EBUSY
 * with the conflicting lock in *conflict (nothing changed), or WFS_ENOLCK when the
 * table is full. *held: the locks req->session holds on key afterwards.
 * Thread-safe.
 */
wfs_err filer_locks_set(struct filer_locks *t, const char *key, const struct filer_lock *req,
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
 * held are gone), or WFS_ENOLCK when there are too many sessions. Thread-safe.
 */
wfs_err filer_locks_renew(struct filer_locks *t, uint64_t session, uint64_t lease_ns,
			  uint64_t now_ns, bool *created);
/* Drops session and all its locks now (a clean unmount). Thread-safe. */
void filer_locks_end(struct filer_locks *t, uint64_t session);
/* Locks in the table after expiring leases at now_ns (tests). Thread-safe. */
size_t filer_locks_count(struct filer_locks *t, uint64_t now_ns);

enum filer_lock_op { FILER_LOCK_OP_LOCK, FILER_LOCK_OP_GET, FILER_LOCK_OP_SESSION };

/* A parsed body of the lock ops (docs/api-filer-json.md). */
struct filer_lock_request {
	enum filer_lock_op op;
	/* lock, getLock: exactly one of path and key (owned); l's session (non-zero),
	   owner, pid, type (no UNLOCK for getLock) and range (whole file for flock) */
	char *path, *key;
	struct filer_lock l;
	/* lockSession */
	uint64_t session; /* non-zero */
	uint64_t lease_s; /* 1..FILER_LOCK_LEASE_MAX_S */
	bool release;
};

/*
 * Parses the body (len bytes, borrowed) of op "lock", "getLock" or
 * "lockSession" into *out; clear it with filer_lock_request_clear (a failed
 * parse leaves nothing to clear, clearing is harmless). WFS_ENOENT: op is no
 * lock op; WFS_EINVAL: a malformed body, why in msg ("<op>: <reason>").
 * Any thread.
 */
wfs_err filer_lock_parse_request(const char *op, const char *body, size_t len,
				 struct filer_lock_request *out, char *msg, size_t msglen);
/* Frees r's strings. */
void filer_lock_request_clear(struct filer_lock_request *r);

struct fjob;
/*
 * Serves the JSON API ops "lock", "getLock" and "lockSession" (body borrowed)
 * into j's response; false for any other op (left to the caller). The table
 * is j's filer's (struct filer's locks). Worker thread.
 */
bool filer_lock_api(struct fjob *j, const char *op, const char *body, size_t len);

#endif
