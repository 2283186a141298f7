/*
 * Brings the replicas of one volume level, needle by needle, over the volume servers'
 * administration endpoints (docs/internal-protocol.md "Volume administration"): the
 * master's automatic repair after a replicated write that missed a copy, and
 * `weedfs shell`'s volume.check.disk. Synchronous (libcurl); call it from a worker.
 */
#ifndef WEEDFS_REPLICA_SYNC_H
#define WEEDFS_REPLICA_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"

#define REPLICA_SYNC_REPORT 32

struct replica_sync_stats {
	size_t ids;       /* distinct needle ids seen over all replicas */
	size_t copied;    /* records written (a record to two replicas counts twice) */
	uint64_t bytes;   /* their bytes */
	size_t deletions; /* of which deletions */
	/* records urls[i] lacked (copied to it), for the first REPLICA_SYNC_REPORT urls */
	size_t lacking[REPLICA_SYNC_REPORT];
};

/*
 * For every needle id, the newest record any of the n replicas (host:port) holds, by
 * append time, a deletion being a record too, is copied to each replica whose own
 * record of that id is missing or an older, different one (another cookie or size; a
 * deletion only where the needle is live).
 * dry_run counts what it would copy and writes nothing. The replicas must be at the
 * same compaction revision (WFS_EPRECOND otherwise: vacuum first). Errors name the
 * replica in msg; what was copied before stays (every record is a whole append).
 * Caveat: an id one replica's vacuum dropped with its deletion looks missing there,
 * so a replica that missed that deletion gives the needle back.
 */
wfs_err replica_sync(uint32_t vid, const char *const *urls, size_t n, bool dry_run,
		     struct replica_sync_stats *st, char *msg, size_t msglen);

#endif
