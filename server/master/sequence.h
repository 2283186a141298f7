/*
 * The master's persistent counters: the file-key sequence and the largest
 * volume id ever handed out or seen. A single master keeps both in one small
 * file in -mdir (sequence.c); several masters (-peers) share one row in
 * PostgreSQL that only the lease holder can advance (sequence_pg.c). Both sit
 * behind the functions below (a table of operations, sequence_int.h).
 */
#ifndef WEEDFS_MASTER_SEQUENCE_H
#define WEEDFS_MASTER_SEQUENCE_H

#include <stdint.h>
#include "err.h"
#include "server/master/leader.h"

typedef struct sequence sequence;

/* Keys reserved on disk ahead of use; a restart skips at most this many. */
#define SEQUENCE_BATCH 100000

/*
 * Opens (creating if needed) the state file in dir and persists a fresh
 * ceiling, so keys handed out by an earlier process are never repeated even
 * after kill -9. Returns NULL with *err set on failure. Any thread.
 */
sequence *sequence_open(const char *dir, wfs_err *err);
/*
 * The shared sequence of several masters: a row of weedfs_master_sequence in
 * the database at dsn (created if missing). Keys and volume ids are reserved
 * there in batches, each by one UPDATE that succeeds only while l's lease
 * (holder, epoch, expiry) is held, so the batches of two leaders never
 * overlap. Borrows l, which must outlive the sequence. NULL with *err
 * (WFS_EUNAVAIL) when the database cannot be reached. Control thread.
 */
sequence *sequence_open_pg(const char *dsn, leader *l, wfs_err *err);
/* NULL does nothing. */
void sequence_free(sequence *s);

/*
 * Reserves count (>= 1) consecutive keys; *first is the first. The file
 * sequence persists a new ceiling (one fsync) only when the reserved batch
 * runs out; WFS_EIO if that write fails (nothing is handed out then). The
 * shared sequence never blocks: WFS_EBUSY when its batch (of this epoch) is
 * short, to be refilled with sequence_refill off the loop; WFS_EUNAVAIL when
 * this master does not hold the lease. Any thread.
 */
wfs_err sequence_next_keys(sequence *s, uint64_t count, uint64_t *first);
/*
 * Makes sure the next count keys are reserved for this master (the shared
 * sequence: one database round trip when they are not). WFS_EUNAVAIL when the
 * lease is not held or the database cannot be reached. Blocks: workers and the
 * lease thread only. The file sequence does nothing.
 */
wfs_err sequence_refill(sequence *s, uint64_t count);
/* Raises the sequence above max_key (a heartbeat's maxFileKey). Any thread. */
wfs_err sequence_observe_key(sequence *s, uint64_t max_key);
/* The next key that would be handed out (for tests and status). */
uint64_t sequence_peek(sequence *s);

/* Allocates a never-used volume id, persisted before it is returned. May block on
 * the file or the database: not on a loop thread. WFS_EUNAVAIL (shared sequence)
 * when the lease is not held. */
wfs_err sequence_next_volume_id(sequence *s, uint32_t *vid);
/* Records a volume id seen in a heartbeat; the file sequence persists it when it
 * raises the maximum, the shared one only remembers it for the next allocation.
 * Any thread. */
wfs_err sequence_observe_volume_id(sequence *s, uint32_t vid);
uint32_t sequence_max_volume_id(sequence *s);

#endif
