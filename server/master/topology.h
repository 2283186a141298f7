/*
 * The master's view of the cluster: data nodes (grouped into data centers
 * and racks when reported), the volumes each holds with their statistics,
 * and per-(collection, replication, ttl) layouts with their writable volumes.
 *
 * Locking: one writer-preferring pthread rwlock guards everything. Readers
 * (assign, lookup, status) take it shared; heartbeats and changes take it
 * exclusive. No function calls out (I/O, callbacks) while holding it. Every
 * function may be called from any thread.
 *
 * Liveness is evaluated lazily against the caller's monotonic "now": a node
 * silent for 3 * pulseSeconds is skipped by lookups, picks and status, and
 * is reaped (its volumes forgotten) on the next exclusive operation.
 */
#ifndef WEEDFS_MASTER_TOPOLOGY_H
#define WEEDFS_MASTER_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "server/common/placement.h"
#include "err.h"
#include "json.h"
#include "server/master/placement.h"

typedef struct topology topology;

#define TOPO_URL_MAX  256
#define TOPO_NAME_MAX 128

/* A volume server's report of one volume (strings borrowed). */
struct topo_vol_report {
	uint32_t id;
	const char *collection;
	struct replica_placement rp;
	struct ttl ttl;
	uint64_t size, file_count, delete_count, deleted_bytes;
	bool read_only;
	uint32_t compact_revision;
	uint32_t version;
	int64_t modified_at;
};

/* A volume server's report of the erasure-coded shards it holds of one volume. */
struct topo_ec_report {
	uint32_t id;
	const char *collection;
	uint16_t shards; /* bit i: shard i */
};

/* One heartbeat (strings and vols borrowed). */
struct topo_heartbeat {
	const char *url; /* ip:port */
	const char *public_url;
	const char *dc;
	const char *rack;
	int max_volumes;
	uint64_t max_file_key;
	const struct topo_vol_report *vols;
	size_t nvols;
	const struct topo_ec_report *ecs;
	size_t necs;
};

/* Identifies a volume layout. */
struct topo_layout_key {
	const char *collection; /* "" for none */
	struct replica_placement rp;
	struct ttl ttl;
};

/* A location as clients see it. */
struct topo_location {
	char url[TOPO_URL_MAX];
	char public_url[TOPO_URL_MAX];
	char dc[TOPO_NAME_MAX];
};

#define TOPO_MAX_LOCATIONS 32

/* Where the shards of an erasure-coded volume are (live servers only). */
struct topo_ec_locations {
	char collection[TOPO_NAME_MAX];
	struct topo_location locs[14][8];
	size_t n[14];
};

/* volume_size_limit in bytes; pulse_seconds >= 1. */
topology *topology_new(uint64_t volume_size_limit, int pulse_seconds);
/* NULL does nothing. */
void topology_free(topology *t);

uint64_t topology_volume_size_limit(const topology *t);

/*
 * Applies a heartbeat at monotonic time now_ns: registers or refreshes the
 * node, replaces its volume list. *max_vid gets the largest volume id it
 * reported (0 if none). WFS_EINVAL if url is empty.
 */
wfs_err topology_heartbeat(topology *t, const struct topo_heartbeat *hb, uint64_t now_ns,
			   uint32_t *max_vid);

/*
 * Picks a writable volume of the layout for an assignment: not read-only, not
 * vacuuming, below the size limit by data_size bytes, with every copy on a live
 * node, and (when prefs are set) a copy on a matching node. Fills *vid and
 * *loc (the copy to write to). WFS_ENOENT if none.
 */
wfs_err topology_pick_writable(topology *t, const struct topo_layout_key *key,
			       const struct place_prefs *prefs, uint64_t data_size, uint64_t now_ns,
			       uint64_t rnd, uint32_t *vid, struct topo_location *loc);

/* Live locations of a volume into locs (up to max); returns the count, 0 if unknown. */
size_t topology_lookup(topology *t, uint32_t vid, uint64_t now_ns, struct topo_location *locs,
		       size_t max);
/*
 * The live servers holding shards of erasure-coded volume vid, shard by shard; false when
 * none does. (topology_lookup falls back to these servers for a volume with no normal
 * copy: any of them serves its reads.)
 */
bool topology_ec_lookup(topology *t, uint32_t vid, uint64_t now_ns, struct topo_ec_locations *out);


/*
 * Plans one new volume of the layout: chooses nodes by placement_choose over
 * live nodes' free slots (minus slots already reserved by plans in flight)
 * and reserves a slot on each. urls gets up to PLACEMENT_MAX_COPIES server
 * urls (each TOPO_URL_MAX). Returns WFS_ENOSPC with msg when nothing fits.
 * Every successful plan must be finished by topology_plan_done.
 */
wfs_err topology_plan_volume(topology *t, const struct topo_layout_key *key,
			     const struct place_prefs *prefs, uint64_t now_ns, uint64_t rnd,
			     char urls[][TOPO_URL_MAX], size_t *nurls, char *msg, size_t msglen);
/*
 * Releases a plan's reservations; when created, also adds volume vid of the
 * layout on those nodes (empty, writable) so assignments can use it before
 * the next heartbeats arrive.
 */
void topology_plan_done(topology *t, const struct topo_layout_key *key, uint32_t vid,
			char urls[][TOPO_URL_MAX], size_t nurls, bool created, uint64_t now_ns);

/* Number of volume servers heard from recently. Any thread. */
size_t topology_live_nodes(topology *t, uint64_t now_ns);
/* Totals for metrics: live nodes, known volumes, slots of live nodes. */
struct topo_counts {
	int64_t nodes, volumes, max_slots, free_slots;
};
void topology_counts(topology *t, uint64_t now_ns, struct topo_counts *c);
/* How long a silent server stays alive, in ns (3 pulses). */
uint64_t topology_dead_ns(const topology *t);

/* Number of writable volumes of a layout usable now (for tests and growth decisions). */
size_t topology_writable_count(topology *t, const struct topo_layout_key *key, uint64_t now_ns);

/* A volume to vacuum: its id and live replica urls. */
struct topo_vacuum_item {
	uint32_t vid;
	size_t nurls;
	char urls[TOPO_MAX_LOCATIONS][TOPO_URL_MAX];
};
/* Snapshots every volume with live replicas; *n gets the count. The caller frees the array. */
struct topo_vacuum_item *topology_vacuum_list(topology *t, uint64_t now_ns, size_t *n);
/* Keeps a volume out of (or returns it to) the writable lists during vacuum. */
void topology_set_vacuuming(topology *t, uint32_t vid, bool on);

/*
 * A volume the master's repair acts on: a copy to make (sync false: fewer live copies
 * than its placement asks for, for longer than the delay; target is where the new copy
 * goes, "" with msg when no server fits) or replicas to bring level (sync true: every
 * copy live, their figures differ and did not change for a whole scan).
 */
struct topo_repair_item {
	uint32_t vid;
	bool sync;
	size_t want; /* copies the placement asks for */
	char target[TOPO_URL_MAX];
	char msg[200];
	uint64_t fingerprint; /* sync: the figures seen */
	size_t nurls;
	char urls[TOPO_MAX_LOCATIONS][TOPO_URL_MAX]; /* live copies */
};
/*
 * The volumes due for repair (see above) at now_ns; *n gets the count, the caller frees
 * the array. Each listed item with a target or sync is marked as being repaired (and its
 * target's slot reserved) until topology_repair_done; the list says "no server fits"
 * once per volume until it has enough copies again. rnd breaks placement ties.
 */
struct topo_repair_item *topology_repair_list(topology *t, uint64_t now_ns, uint64_t delay_ns,
					      uint64_t rnd, size_t *n);
/* Ends an item's repair: releases the slot, counts a made copy at once (ok), and
   remembers a sync's figures so the same difference is not synced again. */
void topology_repair_done(topology *t, const struct topo_repair_item *it, bool ok,
			  uint64_t now_ns);

/* Live node urls holding volumes of collection; the caller frees each and the array. */
char **topology_collection_nodes(topology *t, const char *collection, uint64_t now_ns, size_t *n);
/* True if any volume belongs to collection. */
bool topology_has_collection(topology *t, const char *collection);
/* Forgets every volume of collection. */
void topology_remove_collection(topology *t, const char *collection);

/* JSON writers (SeaweedFS field names), live nodes only. */
void topology_write_dir_status(topology *t, json_w *w, uint64_t now_ns);
void topology_write_vol_status(topology *t, json_w *w, uint64_t now_ns);
/* collection NULL = every volume; detail splits per layout. */
void topology_write_collection_info(topology *t, json_w *w, const char *collection, bool detail,
				    uint64_t now_ns);
/* A plain HTML status page. */
void topology_write_html(topology *t, buf *out, uint64_t now_ns);

#endif
