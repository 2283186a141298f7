/*
 * Volume growth: creates new volumes on volume servers (POST
 * /admin/assign_volume) from worker threads and adds them to the topology.
 * Concurrent requests for the same layout and preferences share one growth.
 */
#ifndef WEEDFS_MASTER_GROWTH_H
#define WEEDFS_MASTER_GROWTH_H

#include <stdbool.h>
#include <stdint.h>
#include "err.h"
#include "server/master/placement.h"
#include "server/master/sequence.h"
#include "server/master/topology.h"
#include "pool.h"

typedef struct growth growth;

/*
 * Called exactly once per request, on a pool worker thread (or on the
 * requesting thread when growth is shut down): created volumes, and on
 * failure (created == 0) an error and a message.
 */
typedef void (*growth_done_fn)(void *arg, int created, wfs_err err, const char *msg);

/* Borrows t, s and p, which must outlive the growth. preallocate: bytes, 0 for none. */
growth *growth_new(topology *t, sequence *s, pool *p, uint64_t preallocate);
/* NULL does nothing. Call after the pool has drained. */
void growth_free(growth *g);
/* From now on requests fail at once with WFS_EUNAVAIL. Any thread. */
void growth_shutdown(growth *g);

/* The default number of volumes to grow for a replica placement (7, 6, 3 or 1). */
int growth_default_count(const struct replica_placement *rp);

/*
 * Grows count volumes of the layout (0 = growth_default_count), each placed
 * by placement_choose; stops early when slots run out (success if at least
 * one was created). preallocate overrides the default when >= 0. With share,
 * joins a growth already in flight for the same layout and preferences.
 * Copies key and prefs. Any thread; never blocks on I/O.
 */
void growth_request(growth *g, const struct topo_layout_key *key, const struct place_prefs *prefs,
		    int count, int64_t preallocate, bool share, growth_done_fn done, void *arg);

/*
 * The HTTP status of a failed growth (assign, /vol/grow): 507 when no free slot
 * can take the volume (WFS_ENOSPC: the cluster is full for that placement, as a
 * full volume server answers), 500 for a local failure, else 503 (a volume
 * server could not be reached: worth retrying).
 */
int growth_error_status(wfs_err err);

#endif
