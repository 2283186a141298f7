/*
 * Where a new volume's copies go: picks servers honouring a replica
 * placement xyz (x other data centers, y other racks of the main data center,
 * z other servers of the main rack), optional preferences and free slots.
 * Pure logic over a snapshot of candidate servers; no locking, any thread.
 */
#ifndef WEEDFS_MASTER_PLACEMENT_H
#define WEEDFS_MASTER_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "server/common/placement.h"
#include "err.h"

struct place_node {
	const char *url; /* ip:port, the server's identity */
	const char *public_url;
	const char *dc;
	const char *rack;
	int free; /* free volume slots; servers with none are never chosen */
};

struct place_prefs {
	const char *dc;   /* NULL or "" = any */
	const char *rack; /* NULL or "" = any */
	const char *node; /* url or publicUrl; NULL or "" = any */
};

/*
 * Chooses replica_placement_copies(rp) distinct servers for one volume:
 * out[0] is the main copy (in the preferred dc/rack/node when given), then
 * the same-rack copies, the other-rack copies and the other-dc copies. out
 * holds indices into nodes and must have room for 1 + 9 + 9 + 9 entries.
 * rnd breaks ties between equally free servers. Returns WFS_OK, or
 * WFS_ENOSPC with a human message in msg (e.g. "not enough data centers for
 * replication 100: have 1, need 2"). Borrows everything.
 */
wfs_err placement_choose(const struct place_node *nodes, size_t n,
			 const struct replica_placement *rp, const struct place_prefs *prefs,
			 uint64_t rnd, size_t *out, char *msg, size_t msglen);

/*
 * True if the distinct servers set[0..n) (indices into nodes) can all hold copies of one
 * volume under rp: some member as the main copy, at most z others in its rack, at most y
 * in other racks of its data center (one a rack), at most x in other data centers (one a
 * center). The empty set fits.
 */
bool placement_fits(const struct place_node *nodes, const size_t *set, size_t n,
		    const struct replica_placement *rp);
/*
 * Repair: one more server (free > 0, not in have) such that have plus it still fits rp,
 * the freest first (rnd rotates ties). *out gets its index; WFS_ENOSPC with msg when
 * none does.
 */
wfs_err placement_extend(const struct place_node *nodes, size_t n, const size_t *have,
			 size_t nhave, const struct replica_placement *rp, uint64_t rnd,
			 size_t *out, char *msg, size_t msglen);

#define PLACEMENT_MAX_COPIES 28

#endif
