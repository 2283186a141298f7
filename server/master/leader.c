/*
 * DESIGN: the leader lease. One row (name 'master') of weedfs_master_lease
 * says who leads, until when (on the database's clock, so the masters' own
 * clocks never matter) and in which epoch. A thread per master works it every
 * lease/3:
 * - a follower tries to take the row when it is missing or expired, in one
 *   INSERT ... ON CONFLICT DO UPDATE ... WHERE expires <= now(); taking it
 *   bumps the epoch. Otherwise it reads the holder, to know where to send
 *   requests.
 * - the leader renews with an UPDATE that matches only its own holder, epoch
 *   and an unexpired row. Before sending, it notes its monotonic clock; when
 *   the renewal succeeds, it holds the lease until that instant plus the
 *   lease length. The database's expiry is at least that late, since the
 *   database set it after the request left.
 * leader_is_me compares the monotonic clock with that deadline on every call,
 * so a leader whose renewals fail, or which was paused (SIGSTOP) past its
 * lease, stops acting the moment the deadline passes, without waiting for
 * this thread to notice; it acts again only after taking the lease anew
 * (a new epoch). The key and volume-id reservations (sequence_pg.c) are
 * conditioned on the same row in the database, which is what makes them safe
 * even in the instant between a check and a use.
 * The connection belongs to this thread (and to leader_start before the
 * thread runs); no HTTP loop thread ever waits on the database.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>
#include "log.h"
#include "server/master/leader.h"
#include "server/master/master_pg.h"
#include "util.h"

#define LEASE_NAME "master"
#define ADDR_MAX   256

static const char lease_schema[] =
	"BEGIN;"
	"SELECT pg_advisory_xact_lock(7333001);"
	"CREATE TABLE IF NOT EXISTS weedfs_master_lease ("
	" name text PRIMARY KEY, holder text NOT NULL, expires timestamptz NOT NULL,"
	" epoch bigint NOT NULL);"
	"COMMIT;";

static const char sql_acquire[] =
	"INSERT INTO weedfs_master_lease AS l (name, holder, expires, epoch)"
	" VALUES ($1, $2, now() + make_interval(secs => $3::float8), 1)"
	" ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder,"
	" expires = EXCLUDED.expires, epoch = l.epoch + 1 WHERE l.expires <= now()"
	" RETURNING l.epoch";

static const char sql_renew[] =
	"UPDATE weedfs_master_lease SET expires = now() + make_interval(secs => $3::float8)"
	" WHERE name = $1 AND holder = $2 AND epoch = $4::bigint AND expires > now()"
	" RETURNING epoch";

static const char sql_holder[] =
	"SELECT holder FROM weedfs_master_lease WHERE name = $1 AND expires > now()";

static const char sql_release[] =
	"UPDATE weedfs_master_lease SET expires = now()"
	" WHERE name = $1 AND holder = $2 AND epoch = $3::bigint";

struct leader {
	char *self;
	uint64_t lease_ns;
	char lease_secs[32]; /* the lease length for make_interval */
	master_pg *pg;       /* the lease thread's (leader_start's before it runs) */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;      /* signalled when stopping is set */
	bool stopping;            /* protected by lock */
	bool held;                /* protected by lock; written by the lease thread only */
	int64_t epoch;            /* protected by lock: the epoch held */
	uint64_t deadline_ns;     /* protected by lock: monotonic; held only before it */
	uint64_t since_ns;        /* protected by lock: when the lease held was taken */
	char current[ADDR_MAX];   /* protected by lock: the known leader, "" if none */
};

bool leader_is_me(leader *l, int64_t *epoch)
{
	bool me;
	uint64_t now = time_mono_ns();
	pthread_mutex_lock(&l->lock);
	me = l->held && now < l->deadline_ns;
	if (epoch)
		*epoch = me ? l->epoch : 0;
	pthread_mutex_unlock(&l->lock);
	return me;
}

uint64_t leader_age_ns(leader *l)
{
	uint64_t now = time_mono_ns(), age = 0;
	pthread_mutex_lock(&l->lock);
	if (l->held && now < l->deadline_ns)
		age = MAX(now - l->since_ns, 1);
	pthread_mutex_unlock(&l->lock);
	return age;
}

void leader_current(leader *l, char *out, size_t outlen)
{
	pthread_mutex_lock(&l->lock);
	snprintf(out, outlen, "%s", l->current);
	pthread_mutex_unlock(&l->lock);
}

const char *leader_self(const leader *l) { return l->self; }

/* Drops the lease (the thread found it lapsed or taken). Lease thread. */
static void step_down(leader *l, int64_t epoch, const char *why)
{
	bool was = false;
	pthread_mutex_lock(&l->lock);
	if (l->held && l->epoch == epoch) {
		was = true;
		l->held = false;
		l->epoch = 0;
		l->current[0] = '\0';
	}
	pthread_mutex_unlock(&l->lock);
	if (was)
		log_warn("master %s is no longer the leader (epoch %" PRId64 "): %s", l->self,
			 epoch, why);
}

static void renew(leader *l, int64_t epoch, uint64_t sent_ns)
{
	char ep[24];
	const char *vals[] = {LEASE_NAME, l->self, l->lease_secs, ep};
	PGresult *r;

	snprintf(ep, sizeof(ep), "%" PRId64, epoch);
	r = master_pg_exec(l->pg, "lease renewal", sql_renew, 4, vals);
	if (!r)
		return; /* the deadline stands; leader_is_me turns false when it passes */
	if (PQntuples(r) == 1) {
		pthread_mutex_lock(&l->lock);
		if (l->held && l->epoch == epoch)
			l->deadline_ns = sent_ns + l->lease_ns;
		pthread_mutex_unlock(&l->lock);
	} else {
		step_down(l, epoch, "the lease was taken over");
	}
	PQclear(r);
}

static void try_acquire(leader *l, uint64_t sent_ns)
{
	const char *vals[] = {LEASE_NAME, l->self, l->lease_secs};
	int64_t epoch = 0;
	PGresult *r = master_pg_exec(l->pg, "lease acquisition", sql_acquire, 3, vals);

	if (!r)
		return;
	if (PQntuples(r) == 1 && parse_i64(PQgetvalue(r, 0, 0), &epoch)) {
		PQclear(r);
		pthread_mutex_lock(&l->lock);
		l->held = true;
		l->epoch = epoch;
		l->deadline_ns = sent_ns + l->lease_ns;
		l->since_ns = time_mono_ns();
		snprintf(l->current, sizeof(l->current), "%s", l->self);
		pthread_mutex_unlock(&l->lock);
		log_info("master %s is the leader (epoch %" PRId64 ")", l->self, epoch);
		return;
	}
	PQclear(r);
	r = master_pg_exec(l->pg, "lease lookup", sql_holder, 1, vals);
	if (!r)
		return;
	pthread_mutex_lock(&l->lock);
	if (PQntuples(r) == 1)
		snprintf(l->current, sizeof(l->current), "%s", PQgetvalue(r, 0, 0));
	else
		l->current[0] = '\0';
	pthread_mutex_unlock(&l->lock);
	PQclear(r);
}

static void tick(leader *l)
{
	uint64_t now = time_mono_ns();
	bool held;
	int64_t epoch;

	pthread_mutex_lock(&l->lock);
	held = l->held;
	epoch = l->epoch;
	if (held && now >= l->deadline_ns)
		held = false;
	pthread_mutex_unlock(&l->lock);
	if (!held && epoch)
		step_down(l, epoch, "the lease lapsed before it could be renewed");
	if (held)
		renew(l, epoch, now);
	else
		try_acquire(l, now);
}

static void *lease_main(void *arg)
{
	leader *l = arg;
	for (;;) {
		struct timespec ts;
		bool stop;
		tick(l);
		ts = time_deadline(CLOCK_MONOTONIC, l->lease_ns / 3);
		pthread_mutex_lock(&l->lock);
		while (!l->stopping && pthread_cond_timedwait(&l->cond, &l->lock, &ts) != ETIMEDOUT)
			;
		stop = l->stopping;
		pthread_mutex_unlock(&l->lock);
		if (stop)
			return NULL;
	}
}

leader *leader_start(const char *dsn, const char *self, uint64_t lease_ns, wfs_err *err)
{
	leader *l = xcalloc(1, sizeof(*l));
	pthread_condattr_t ca;

	l->self = xstrdup(self);
	l->lease_ns = lease_ns;
	snprintf(l->lease_secs, sizeof(l->lease_secs), "%.3f", (double)lease_ns / 1e9);
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cond, &ca);
	pthread_condattr_destroy(&ca);
	l->pg = master_pg_open(dsn, lease_schema, err);
	if (!l->pg)
		goto fail;
	if (thread_start(&l->thread, NULL, lease_main, l, "wfs-lease") != 0) {
		*err = WFS_EINTERNAL;
		goto fail;
	}
	l->started = true;
	*err = WFS_OK;
	return l;
fail:
	leader_stop(l);
	return NULL;
}

void leader_stop(leader *l)
{
	bool held;
	char ep[24];
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->stopping = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	if (l->started)
		pthread_join(l->thread, NULL);
	held = leader_is_me(l, NULL);
	if (held) {
		/* an orderly stop hands over at once instead of after a lease */
		const char *vals[] = {LEASE_NAME, l->self, ep};
		PGresult *r;
		snprintf(ep, sizeof(ep), "%" PRId64, l->epoch);
		r = master_pg_exec(l->pg, "lease release", sql_release, 3, vals);
		PQclear(r);
		log_info("master %s released the lease", l->self);
	}
	master_pg_close(l->pg);
	pthread_mutex_destroy(&l->lock);
	pthread_cond_destroy(&l->cond);
	free(l->self);
	free(l);
}
