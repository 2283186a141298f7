/*
 * Advisory file locks shared by every mount of one filer: POSIX byte-range
 * locks (fcntl) and whole-file flock locks, held in memory by the filer
 * (docs/api-filer-json.md, "lock"). Not shared between several filers (each
 * has its own table, also two in one process).
 *
 * DESIGN: a table maps a file key to the locks on it. The key is
 * "hardlink:<hex id>" for a hard-linked file (every name shares its locks)
 * and "path:<full path>" otherwise, fixed when the lock is taken: a rename
 * while locked leaves the locks under the old key (the holder keeps using
 * the key it was given; a new locker through the new name does not see
 * them until they are released). A lock belongs to an owner (session,
 * owner): the session is a client (one mount) that renews a lease; an owner
 * is the kernel's lock owner inside it (an fd table for POSIX, an open file
 * description for flock). The range rules are client/lock_ranges.h's. A
 * session whose lease runs out loses all its locks at the next call that
 * looks at the table, so a crashed client never blocks the others for longer
 * than its lease.
 *
 * A restart keeps the locks through their holders, as NFS does: the table
 * stays in memory (no store write per lock call, nothing to go stale in a
 * store shared by several filers), and a filer that starts opens a grace
 * period (-lockGraceSeconds, longer than a lease) in which it grants only
 * reclaims: a mount that sees its session was created anew while the filer
 * is in grace re-asserts every lock it holds ("reclaim": true). Other new
 * locks wait for the grace to end (WFS_EPRECOND, "grace" in the answer)
 * unless a reclaimed lock already conflicts; a reclaim outside the grace is
 * refused (WFS_ENOLCK: someone may have held the lock meanwhile), and the
 * mount then fails the holder's next lock call instead of sharing the lock
 * silently. Unlocks and getLock's answers need no grace.
 */
#ifndef WEEDFS_FILER_FILER_LOCK_H
#define WEEDFS_FILER_FILER_LOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "client/lock_ranges.h"
#include "err.h"

/* A session's lease unless it asks for another (seconds), and the bounds. */
#define FILER_LOCK_LEASE_S     15
#define FILER_LOCK_LEASE_MAX_S 3600
/* The grace period after a start (-lockGraceSeconds): a lease and the mounts' renewal. */
#define FILER_LOCK_GRACE_S 20
/* Locks in one table, sessions at most (beyond: WFS_ENOLCK). */
#define FILER_LOCKS_MAX    (1u << 20)
#define FILER_SESSIONS_MAX 65536u

struct filer_locks;

/* An empty table. Free with filer_locks_free (NULL does nothing). */
struct filer_locks *filer_locks_new(void);
void filer_locks_free(struct filer_locks *t);

/*
 * Sets, changes or releases (FILER_LOCK_UNLOCK) req's range for its owner on
 * key (borrowed) at time now_ns (monotonic), renewing req->session's lease
 * (creating the session with the default lease if unknown: then *created, may
 * be NULL). reclaim: a lock the session held before the filer restarted.
 * Returns WFS_OK, WFS_EBUSY with the conflicting lock in *conflict (nothing
 * changed), WFS_EPRECOND in the grace period for a lock that is no reclaim and
 * meets no conflict yet (try again), or WFS_ENOLCK when the table is full or
 * a reclaim comes outside the grace period. *held: the locks req->session holds
 * on key afterwards. Thread-safe.
 */
wfs_err filer_locks_set(struct filer_locks *t, const char *key, const struct filer_lock *req,
			bool reclaim, uint64_t now_ns, struct filer_lock *conflict, size_t *held,
			bool *created);
/*
 * The conflicting lock req (type READ or WRITE) would meet on key with the
 * lowest start, into *conflict: true if there is one. Thread-safe.
 */
bool filer_locks_test(struct filer_locks *t, const char *key, const struct filer_lock *req,
		      uint64_t now_ns, struct filer_lock *conflict);
/* Starts the grace period after a start: only reclaims until until_ns (monotonic). */
void filer_locks_set_grace(struct filer_locks *t, uint64_t until_ns);
/* Whether now_ns is in the grace period; its time left into *left_ns (may be NULL). */
bool filer_locks_in_grace(struct filer_locks *t, uint64_t now_ns, uint64_t *left_ns);
/* Whether session is known with a lease running at now_ns. Thread-safe. */
bool filer_locks_session_live(struct filer_locks *t, uint64_t session, uint64_t now_ns);
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
	bool reclaim; /* lock: re-asserted after a filer restart */
	/* lockSession */
	uint64_t session; /* non-zero */
	uint64_t lease_s; /* 1..FILER_LOCK_LEASE_MAX_S */
	bool release;
	bool reclaimed;   /* the session's mount has re-asserted all its locks */
	char *hidden_dir; /* owned, may be NULL: where the session's mount hides open
			     files it unlinked (filer_reclaim.h) */
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
