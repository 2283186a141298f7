/* The filer's lock table (filer/filer_lock.h): POSIX range rules, flock, leases, the
 * grace period after a restart. */
#include "config.h"
#include <errno.h>
#include "filer/filer_lock.h"
#include "tap.h"

#define S 1000000000ull /* one second in ns */

static struct filer_lock lk(uint64_t session, uint64_t owner, enum filer_lock_type ty,
			    int64_t start, int64_t end)
{
	struct filer_lock l = {.session = session,
			       .owner = owner,
			       .start = start,
			       .end = end,
			       .pid = (uint32_t)(100 + owner),
			       .type = ty};
	return l;
}

static wfs_err set(struct filer_locks *t, const char *key, struct filer_lock l, uint64_t now,
		   struct filer_lock *c, size_t *held)
{
	struct filer_lock dummy;
	size_t h;
	return filer_locks_set(t, key, &l, false, now, c ? c : &dummy, held ? held : &h, NULL);
}

static bool busy(struct filer_locks *t, const char *key, struct filer_lock l, uint64_t now,
		 struct filer_lock *c)
{
	struct filer_lock dummy;
	return filer_locks_test(t, key, &l, now, c ? c : &dummy);
}

int main(void)
{
	struct filer_locks *t = filer_locks_new();
	struct filer_lock c;
	size_t held;
	bool created;
	uint64_t now = 10 * S;

	/* write lock by (1,1) excludes another session's and another owner's locks */
	is_int(set(t, "k", lk(1, 1, FILER_LOCK_WRITE, 0, 99), now, NULL, &held), 0, "write lock");
	is_int((long long)held, 1, "held 1");
	is_int(set(t, "k", lk(2, 1, FILER_LOCK_READ, 50, 60), now, &c, NULL), WFS_EBUSY,
	       "other session conflicts");
	is_int(c.type, FILER_LOCK_WRITE, "conflict type");
	is_int(c.start, 0, "conflict start");
	is_int(c.end, 99, "conflict end");
	is_int(c.pid, 101, "conflict pid");
	is_int(set(t, "k", lk(1, 2, FILER_LOCK_READ, 99, 99), now, NULL, NULL), WFS_EBUSY,
	       "other owner of the same session conflicts");
	is_int(set(t, "k", lk(2, 1, FILER_LOCK_WRITE, 100, FILER_LOCK_EOF), now, NULL, NULL), 0,
	       "disjoint range is fine");
	is_int(set(t, "other", lk(2, 1, FILER_LOCK_WRITE, 0, 10), now, NULL, NULL), 0,
	       "other key is independent");
	is_int((long long)filer_locks_count(t, now), 3, "three locks");

	/* the owner's own locks: split by an unlock in the middle, merged again */
	is_int(set(t, "k", lk(1, 1, FILER_LOCK_UNLOCK, 40, 59), now, NULL, &held), 0, "unlock mid");
	is_int((long long)held, 2, "split in two");
	ok(!busy(t, "k", lk(2, 1, FILER_LOCK_WRITE, 40, 59), now, NULL), "hole is free");
	ok(busy(t, "k", lk(2, 1, FILER_LOCK_WRITE, 39, 39), now, &c) && c.end == 39,
	   "left piece kept [0,39]");
	ok(busy(t, "k", lk(2, 1, FILER_LOCK_READ, 60, 60), now, &c) && c.start == 60 && c.end == 99,
	   "right piece kept [60,99]");
	is_int(set(t, "k", lk(1, 1, FILER_LOCK_WRITE, 40, 59), now, NULL, &held), 0, "refill");
	is_int((long long)held, 1, "merged back into one");
	/* downgrade part of it: the read range replaces the write range there */
	is_int(set(t, "k", lk(1, 1, FILER_LOCK_READ, 10, 19), now, NULL, &held), 0, "downgrade");
	is_int((long long)held, 3, "write, read, write");
	ok(!busy(t, "k", lk(2, 1, FILER_LOCK_READ, 10, 19), now, NULL), "read part shares");
	ok(busy(t, "k", lk(2, 1, FILER_LOCK_WRITE, 10, 19), now, &c) && c.type == FILER_LOCK_READ,
	   "write meets the read part");
	is_int(set(t, "k", lk(1, 1, FILER_LOCK_UNLOCK, 0, FILER_LOCK_EOF), now, NULL, &held), 0,
	       "unlock all");
	is_int((long long)held, 0, "nothing held");
	ok(!busy(t, "k", lk(3, 1, FILER_LOCK_WRITE, 0, 99), now, NULL), "range free");
	/* adjacent same-type ranges merge; EOF ends do not overflow */
	set(t, "m", lk(1, 1, FILER_LOCK_READ, 0, 9), now, NULL, NULL);
	set(t, "m", lk(1, 1, FILER_LOCK_READ, 10, FILER_LOCK_EOF), now, NULL, &held);
	is_int((long long)held, 1, "adjacent read ranges merge");
	set(t, "m", lk(1, 1, FILER_LOCK_UNLOCK, 5, FILER_LOCK_EOF), now, NULL, &held);
	is_int((long long)held, 1, "unlock to EOF keeps [0,4]");
	ok(busy(t, "m", lk(2, 1, FILER_LOCK_WRITE, 4, 4), now, NULL), "[0,4] still read-locked");
	ok(!busy(t, "m", lk(2, 1, FILER_LOCK_WRITE, 5, FILER_LOCK_EOF), now, NULL), "rest free");
	/* read locks are shared between owners */
	is_int(set(t, "m", lk(2, 1, FILER_LOCK_READ, 0, 4), now, NULL, NULL), 0, "shared read");

	/* flock and POSIX locks do not meet */
	{
		struct filer_lock f = lk(4, 7, FILER_LOCK_WRITE, 0, FILER_LOCK_EOF);
		f.flock = true;
		is_int(set(t, "m", f, now, NULL, NULL), 0, "flock beside POSIX read locks");
		f.session = 5;
		is_int(set(t, "m", f, now, &c, NULL), WFS_EBUSY, "flock vs flock conflicts");
		ok(c.flock, "conflict is the flock");
		f.type = FILER_LOCK_READ;
		is_int(set(t, "m", f, now, NULL, NULL), WFS_EBUSY, "shared flock vs exclusive");
		f.session = 4;
		is_int(set(t, "m", f, now, NULL, NULL), 0, "owner converts its flock to shared");
		f.session = 5;
		is_int(set(t, "m", f, now, NULL, NULL), 0, "shared flocks coexist");
	}

	/* leases: session 3 holds "k"; it expires 15 s later unless renewed */
	is_int(set(t, "k", lk(3, 1, FILER_LOCK_WRITE, 0, 0), now, NULL, NULL), 0, "session 3");
	is_int(filer_locks_renew(t, 3, 0, now + 10 * S, &created), 0, "renew");
	ok(!created, "known session");
	ok(busy(t, "k", lk(9, 1, FILER_LOCK_WRITE, 0, 0), now + 20 * S, NULL),
	   "renewed lock still held at +20 s");
	ok(!busy(t, "k", lk(9, 1, FILER_LOCK_WRITE, 0, 0), now + 26 * S, NULL),
	   "gone after the lease ran out");
	is_int(filer_locks_renew(t, 3, 0, now + 27 * S, &created), 0, "renew again");
	ok(created, "the filer forgot it");
	is_int((long long)filer_locks_count(t, now + 27 * S), 0, "every old session expired");

	/* end releases at once */
	set(t, "z", lk(7, 1, FILER_LOCK_WRITE, 0, 5), now + 30 * S, NULL, NULL);
	set(t, "y", lk(7, 2, FILER_LOCK_READ, 0, 5), now + 30 * S, NULL, NULL);
	is_int((long long)filer_locks_count(t, now + 30 * S), 2, "two locks of session 7");
	filer_locks_end(t, 7);
	is_int((long long)filer_locks_count(t, now + 30 * S), 0, "end drops them");

	filer_locks_free(t);
	filer_locks_free(NULL);

	/* a restarted filer: only reclaims until the grace period ends */
	t = filer_locks_new();
	filer_locks_set_grace(t, now + 20 * S);
	{
		struct filer_lock a = lk(1, 1, FILER_LOCK_WRITE, 0, 9), b = lk(2, 1, FILER_LOCK_WRITE,
									       5, 5);
		bool made = false;
		size_t h = 0;
		ok(filer_locks_in_grace(t, now, NULL), "in grace");
		is_int(filer_locks_set(t, "g", &b, false, now, &c, &h, &made), WFS_EPRECOND,
		       "a new lock waits for the grace");
		ok(made && h == 0, "its session is new, holding nothing");
		is_int(filer_locks_set(t, "g", &a, true, now + S, &c, &h, &made), 0, "reclaim");
		ok(made && h == 1, "the reclaimer's session made, one lock held");
		is_int(filer_locks_set(t, "g", &b, false, now + 2 * S, &c, &h, NULL), WFS_EBUSY,
		       "a new lock meeting a reclaimed one conflicts at once");
		is_int((long long)c.session, 1, "with the reclaimed lock");
		b.type = FILER_LOCK_UNLOCK;
		is_int(filer_locks_set(t, "g", &b, false, now + 2 * S, &c, &h, NULL), 0,
		       "unlocks need no grace");
		b = lk(2, 1, FILER_LOCK_WRITE, 50, 60);
		a.start = 100;
		a.end = 100;
		filer_locks_renew(t, 1, 0, now + 10 * S, &made);
		filer_locks_renew(t, 2, 0, now + 10 * S, &made);
		ok(!filer_locks_in_grace(t, now + 21 * S, NULL), "grace over");
		is_int(filer_locks_set(t, "g", &b, false, now + 21 * S, &c, &h, NULL), 0,
		       "new locks granted after the grace");
		is_int(filer_locks_set(t, "g", &a, true, now + 21 * S, &c, &h, NULL), WFS_ENOLCK,
		       "a reclaim after the grace is refused");
		ok(filer_locks_session_live(t, 1, now + 21 * S), "session 1 live");
		ok(!filer_locks_session_live(t, 1, now + 40 * S), "session 1 expired");
		ok(!filer_locks_session_live(t, 77, now + 21 * S), "unknown session");
	}
	filer_locks_free(t);
	return done_testing();
}
