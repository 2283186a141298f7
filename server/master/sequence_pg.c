/*
 * DESIGN: the sequence shared by several masters. One row of
 * weedfs_master_sequence holds the next unreserved key and the largest volume
 * id. The leader reserves a batch of keys (SEQUENCE_BATCH, or more for a big
 * count) with one UPDATE ... FROM weedfs_master_lease ... RETURNING that
 * matches only while its own lease (holder, epoch, unexpired on the
 * database's clock) is in the row; the increment itself is serialised by the
 * row lock, so two batches never overlap whoever asks, and a master that lost
 * the lease gets no new one. The batch is then served from memory, tagged
 * with the epoch it was reserved in: once the epoch held differs, the rest is
 * dropped (a few skipped keys, never a repeat). Volume ids are reserved one
 * at a time the same way. Keys and volume ids seen in heartbeats are only
 * remembered and folded into the next reservation (GREATEST), so a heartbeat
 * on a loop thread never waits on the database.
 */
#include "config.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "server/master/master_pg.h"
#include "server/master/sequence_int.h"
#include "util.h"

#define SEQ_NAME "master"

static const char seq_schema[] =
	"BEGIN;"
	"SELECT pg_advisory_xact_lock(7333002);"
	"CREATE TABLE IF NOT EXISTS weedfs_master_sequence ("
	" name text PRIMARY KEY, next_key bigint NOT NULL, max_volume_id bigint NOT NULL);"
	"INSERT INTO weedfs_master_sequence VALUES ('" SEQ_NAME "', 1, 0)"
	" ON CONFLICT (name) DO NOTHING;"
	"COMMIT;";

/* $1 holder, $2 epoch, $3 smallest acceptable first key, $4 batch size */
static const char sql_keys[] =
	"UPDATE weedfs_master_sequence q SET next_key = GREATEST(q.next_key, $3::bigint) + $4::bigint"
	" FROM weedfs_master_lease l WHERE q.name = '" SEQ_NAME "' AND l.name = 'master'"
	" AND l.holder = $1 AND l.epoch = $2::bigint AND l.expires > now()"
	" RETURNING q.next_key - $4::bigint";

/* $1 holder, $2 epoch, $3 the largest volume id seen */
static const char sql_vid[] =
	"UPDATE weedfs_master_sequence q SET max_volume_id = GREATEST(q.max_volume_id, $3::bigint) + 1"
	" FROM weedfs_master_lease l WHERE q.name = '" SEQ_NAME "' AND l.name = 'master'"
	" AND l.holder = $1 AND l.epoch = $2::bigint AND l.expires > now()"
	" AND GREATEST(q.max_volume_id, $3::bigint) < 4294967295"
	" RETURNING q.max_volume_id";

struct seq_pg {
	struct sequence base;
	leader *lead;
	pthread_mutex_t db_lock; /* serialises the database calls; taken before lock */
	master_pg *pg;           /* protected by db_lock */
	pthread_mutex_t lock;
	uint64_t next, ceiling;  /* protected by lock: the batch [next, ceiling) */
	int64_t batch_epoch;     /* protected by lock: the epoch the batch belongs to */
	uint64_t seen_key;       /* protected by lock: largest key seen in heartbeats */
	uint32_t max_vid;        /* protected by lock: largest volume id reserved or seen */
};

static const struct sequence_ops pg_ops;

sequence *sequence_open_pg(const char *dsn, leader *l, wfs_err *err)
{
	struct seq_pg *s = xcalloc(1, sizeof(*s));
	s->base.ops = &pg_ops;
	s->lead = l;
	pthread_mutex_init(&s->db_lock, NULL);
	pthread_mutex_init(&s->lock, NULL);
	s->pg = master_pg_open(dsn, seq_schema, err);
	if (!s->pg) {
		sequence_free(&s->base);
		return NULL;
	}
	return &s->base;
}

static void pg_free(sequence *base)
{
	struct seq_pg *s = (struct seq_pg *)base;
	master_pg_close(s->pg);
	pthread_mutex_destroy(&s->db_lock);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Takes count keys from the batch when it belongs to epoch and is long enough. Lock held. */
static bool batch_take(struct seq_pg *s, int64_t epoch, uint64_t count, uint64_t *first)
{
	if (s->batch_epoch != epoch || s->ceiling - s->next < count)
		return false;
	if (first) {
		*first = s->next;
		s->next += count;
	}
	return true;
}

static wfs_err pg_next_keys(sequence *base, uint64_t count, uint64_t *first)
{
	struct seq_pg *s = (struct seq_pg *)base;
	int64_t epoch;
	wfs_err err = WFS_OK;

	if (count == 0 || count > UINT64_MAX / 4)
		return WFS_EINVAL;
	if (!leader_is_me(s->lead, &epoch))
		return WFS_EUNAVAIL;
	pthread_mutex_lock(&s->lock);
	if (!batch_take(s, epoch, count, first))
		err = WFS_EBUSY;
	pthread_mutex_unlock(&s->lock);
	return err;
}

/*
 * Runs one reservation (sql with $1 holder, $2 epoch, then a3 and a4 when not
 * NULL) under the lease of epoch; *out gets the single value it returns.
 * WFS_EUNAVAIL when the database cannot be reached or the lease is no longer
 * held. db_lock held.
 */
static wfs_err reserve(struct seq_pg *s, const char *what, const char *sql, int64_t epoch,
		       const char *a3, const char *a4, int64_t *out)
{
	char ep[24];
	const char *vals[] = {leader_self(s->lead), ep, a3, a4};
	PGresult *r;
	wfs_err err = WFS_OK;

	snprintf(ep, sizeof(ep), "%" PRId64, epoch);
	r = master_pg_exec(s->pg, what, sql, a4 ? 4 : 3, vals);
	if (!r)
		return WFS_EUNAVAIL;
	if (PQntuples(r) != 1 || !parse_i64(PQgetvalue(r, 0, 0), out) || *out < 1) {
		log_warn("%s refused: the lease of epoch %" PRId64 " is no longer held", what,
			 epoch);
		err = WFS_EUNAVAIL;
	}
	PQclear(r);
	return err;
}

static wfs_err pg_refill(sequence *base, uint64_t count)
{
	struct seq_pg *s = (struct seq_pg *)base;
	char from[24], n[24];
	uint64_t want = MAX(count, (uint64_t)SEQUENCE_BATCH), got = 0;
	int64_t epoch, first = 0;
	bool enough;
	wfs_err err = WFS_OK;

	pthread_mutex_lock(&s->db_lock);
	if (!leader_is_me(s->lead, &epoch)) {
		err = WFS_EUNAVAIL;
		goto out;
	}
	pthread_mutex_lock(&s->lock);
	enough = batch_take(s, epoch, count, NULL); /* another refill got there first */
	got = s->seen_key + 1;
	pthread_mutex_unlock(&s->lock);
	if (enough)
		goto out;
	if (want > INT64_MAX / 4 || got > INT64_MAX / 2) {
		err = WFS_ERANGE;
		goto out;
	}
	snprintf(from, sizeof(from), "%" PRIu64, got);
	snprintf(n, sizeof(n), "%" PRIu64, want);
	err = reserve(s, "file-key reservation", sql_keys, epoch, from, n, &first);
	if (err)
		goto out;
	pthread_mutex_lock(&s->lock);
	s->next = (uint64_t)first;
	s->ceiling = (uint64_t)first + want;
	s->batch_epoch = epoch;
	pthread_mutex_unlock(&s->lock);
	log_debug("file keys %" PRId64 "..%" PRIu64 " reserved in epoch %" PRId64, first,
		  (uint64_t)first + want - 1, epoch);
out:
	pthread_mutex_unlock(&s->db_lock);
	return err;
}

static wfs_err pg_observe_key(sequence *base, uint64_t max_key)
{
	struct seq_pg *s = (struct seq_pg *)base;
	if (max_key >= UINT64_MAX / 2)
		return WFS_EINVAL;
	pthread_mutex_lock(&s->lock);
	if (max_key > s->seen_key)
		s->seen_key = max_key;
	/* a key at or past the batch's start was handed out elsewhere: skip past it */
	if (max_key >= s->next)
		s->next = MIN(max_key + 1, s->ceiling);
	pthread_mutex_unlock(&s->lock);
	return WFS_OK;
}

/* The next key of the batch and the largest volume id, read together. */
static void snapshot(struct seq_pg *s, uint64_t *next, uint32_t *max_vid)
{
	pthread_mutex_lock(&s->lock);
	*next = s->next;
	*max_vid = s->max_vid;
	pthread_mutex_unlock(&s->lock);
}

static uint64_t pg_peek(sequence *base)
{
	uint64_t next;
	uint32_t vid;
	snapshot((struct seq_pg *)base, &next, &vid);
	return next;
}

static wfs_err pg_next_volume_id(sequence *base, uint32_t *vid)
{
	struct seq_pg *s = (struct seq_pg *)base;
	char seen[24];
	int64_t epoch, v = 0;
	uint64_t next;
	uint32_t max_vid;
	wfs_err err = WFS_OK;

	pthread_mutex_lock(&s->db_lock);
	if (!leader_is_me(s->lead, &epoch)) {
		err = WFS_EUNAVAIL;
		goto out;
	}
	snapshot(s, &next, &max_vid);
	snprintf(seen, sizeof(seen), "%" PRIu32, max_vid);
	err = reserve(s, "volume-id reservation", sql_vid, epoch, seen, NULL, &v);
	if (!err && v > UINT32_MAX)
		err = WFS_ENOSPC;
	if (err)
		goto out;
	*vid = (uint32_t)v;
	pthread_mutex_lock(&s->lock);
	s->max_vid = MAX(s->max_vid, *vid);
	pthread_mutex_unlock(&s->lock);
out:
	pthread_mutex_unlock(&s->db_lock);
	return err;
}

static wfs_err pg_observe_volume_id(sequence *base, uint32_t vid)
{
	struct seq_pg *s = (struct seq_pg *)base;
	pthread_mutex_lock(&s->lock);
	s->max_vid = MAX(s->max_vid, vid);
	pthread_mutex_unlock(&s->lock);
	return WFS_OK;
}

static uint32_t pg_max_volume_id(sequence *base)
{
	uint64_t next;
	uint32_t vid;
	snapshot((struct seq_pg *)base, &next, &vid);
	return vid;
}

static const struct sequence_ops pg_ops = {
	.free = pg_free,
	.next_keys = pg_next_keys,
	.refill = pg_refill,
	.observe_key = pg_observe_key,
	.peek = pg_peek,
	.next_volume_id = pg_next_volume_id,
	.observe_volume_id = pg_observe_volume_id,
	.max_volume_id = pg_max_volume_id,
};
