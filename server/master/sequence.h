/*
 * The master's persistent counters: the file-key sequence and the largest
 * volume id ever handed out or seen. Both live in one small file in -mdir.
 */
#ifndef WEEDFS_MASTER_SEQUENCE_H
#define WEEDFS_MASTER_SEQUENCE_H

#include <stdint.h>
#include "err.h"

typedef struct sequence sequence;

/* Keys reserved on disk ahead of use; a restart skips at most this many. */
#define SEQUENCE_BATCH 100000

/*
 * Opens (creating if needed) the state file in dir and persists a fresh
 * ceiling, so keys handed out by an earlier process are never repeated even
 * after kill -9. Returns NULL with *err set on failure. Any thread.
 */
sequence *sequence_open(const char *dir, wfs_err *err);
/* NULL does nothing. */
void sequence_free(sequence *s);

/*
 * Reserves count (>= 1) consecutive keys; *first is the first. Persists a new
 * ceiling (one fsync) only when the reserved batch runs out. WFS_EIO if that
 * write fails (nothing is handed out then). Any thread.
 */
wfs_err sequence_next_keys(sequence *s, uint64_t count, uint64_t *first);
/* Raises the sequence above max_key (a heartbeat's maxFileKey). Any thread. */
wfs_err sequence_observe_key(sequence *s, uint64_t max_key);
/* The next key that would be handed out (for tests and status). */
uint64_t sequence_peek(sequence *s);

/* Allocates a never-used volume id, persisted before it is returned. Any thread. */
wfs_err sequence_next_volume_id(sequence *s, uint32_t *vid);
/* Records a volume id seen in a heartbeat; persists only when it raises the maximum. */
wfs_err sequence_observe_volume_id(sequence *s, uint32_t vid);
uint32_t sequence_max_volume_id(sequence *s);

#endif
