/*
 * The byte-range lock model of the filer's "lock" ops (docs/api-filer-json.md):
 * POSIX (fcntl) ranges and whole-file flock locks of owners inside sessions,
 * with the kernel's rules. The filer's table (filer/filer_lock.h) and the
 * mount's record of what it holds (mount/fuse_locks.c, which re-asserts it
 * after a filer restart) apply requests with the same code, so both agree on
 * what a session holds.
 *
 * Rules: an owner (session, owner) never conflicts with itself; a new lock
 * replaces the overlapping part of the owner's older ones of the same kind
 * (ranges split, same-type neighbours merged); flock and POSIX locks do not
 * meet (Linux); two locks conflict when they overlap and one is a write lock.
 */
#ifndef WEEDFS_CLIENT_LOCK_RANGES_H
#define WEEDFS_CLIENT_LOCK_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The end of a range that runs to the end of the file (and beyond). */
#define FILER_LOCK_EOF INT64_MAX

enum filer_lock_type { FILER_LOCK_UNLOCK, FILER_LOCK_READ, FILER_LOCK_WRITE };

struct filer_lock {
	uint64_t session, owner;
	int64_t start, end; /* inclusive; 0 <= start <= end <= FILER_LOCK_EOF */
	uint32_t pid;       /* the holder's pid, for F_GETLK */
	enum filer_lock_type type;
	bool flock; /* a flock(2) lock (whole file), else POSIX */
};

/*
 * The lock of v[0..n) of another owner that req (READ or WRITE; UNLOCK meets
 * nothing) conflicts with, the one with the lowest start; NULL when none.
 * Borrows everything; the result points into v. Any thread.
 */
const struct filer_lock *lock_ranges_conflict(const struct filer_lock *v, size_t n,
					      const struct filer_lock *req);
/*
 * The locks v[0..n) with req applied (no conflict left to check) into a new
 * array *out of *out_n locks (capacity *out_cap; the caller frees it, NULL
 * when empty): req's owner loses the part of its locks of req's kind that req
 * covers, and a lock of req's type that touches it is merged into it. Any
 * thread.
 */
void lock_ranges_apply(const struct filer_lock *v, size_t n, const struct filer_lock *req,
		       struct filer_lock **out, size_t *out_n, size_t *out_cap);

#endif
