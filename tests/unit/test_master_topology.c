/* The master's topology: heartbeats, writable picks, liveness, growth plans, status. */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server/master/topology.h"
#include "tap.h"
#include "util.h"

#define SEC   1000000000ull
#define LIMIT 1000000ull

static struct topo_vol_report V(uint32_t id, const char *coll, const char *rp, uint64_t size) {
	struct topo_vol_report r;
	memset(&r, 0, sizeof(r));
	r.id = id;
	r.collection = coll;
	replica_placement_parse(rp, &r.rp);
	r.size = size;
	r.version = 3;
	return r;
}

static void
hb(topology *t, const char *url, const char *dc, const char *rack, int max,
   const struct topo_vol_report *vols, size_t n, uint64_t now)
{
	struct topo_heartbeat h = {url, url, dc, rack, max, 0, vols, n, NULL, 0};
	uint32_t max_vid;
	topology_heartbeat(t, &h, now, &max_vid);
}

static char *dump(topology *t, int which, uint64_t now)
{
	buf b = BUF_INIT;
	json_w *w = jw_new(&b, false);
	if (which == 0)
		topology_write_dir_status(t, w, now);
	else if (which == 1)
		topology_write_vol_status(t, w, now);
	else
		topology_write_collection_info(t, w, NULL, true, now);
	jw_free(w);
	return buf_steal(&b, NULL);
}

int main(void)
{
	topology *t = topology_new(LIMIT, 5);
	struct topo_layout_key k = {"", {0, 0, 0}, {0, 0}};
	struct topo_layout_key k1 = {"", {0, 0, 1}, {0, 0}};
	struct topo_location loc, locs[8];
	uint32_t vid = 0, max_vid = 0;
	uint64_t now = 100 * SEC;
	char urls[PLACEMENT_MAX_COPIES][TOPO_URL_MAX];
	char msg[256];
	size_t nurls;
	char *s;

	is_int(topology_pick_writable(t, &k, NULL, 0, now, 1, &vid, &loc), WFS_ENOENT,
	       "empty topology has nothing writable");

	{
		struct topo_vol_report a[] = {V(1, "", "000", 10), V(2, "", "000", LIMIT),
					      V(3, "pics", "000", 0)};
		struct topo_heartbeat h = {"127.0.0.1:8080", "pub:8080", "", "", 8, 77, a, 3, NULL, 0};
		is_int(topology_heartbeat(t, &h, now, &max_vid), WFS_OK, "first heartbeat");
		is_int(max_vid, 3, "largest reported volume id");
	}
	is_int(topology_pick_writable(t, &k, NULL, 0, now, 7, &vid, &loc), WFS_OK, "pick");
	is_int(vid, 1, "the full volume 2 is never picked");
	is_str(loc.url, "127.0.0.1:8080", "url");
	is_str(loc.public_url, "pub:8080", "publicUrl");
	is_str(loc.dc, "DefaultDataCenter", "default data center");
	is_int(topology_writable_count(t, &k, now), 1, "one writable default volume");
	is_int(topology_pick_writable(t, &k, NULL, LIMIT, now, 7, &vid, &loc), WFS_ENOENT,
	       "dataSize that does not fit");
	{
		struct topo_layout_key kp = {"pics", {0, 0, 0}, {0, 0}};
		is_int(topology_pick_writable(t, &kp, NULL, 0, now, 3, &vid, &loc), WFS_OK,
		       "collection layout");
		is_int(vid, 3, "collection volume");
	}
	is_int(topology_lookup(t, 2, now, locs, 8), 1, "lookup of a full volume still works");
	is_int(topology_lookup(t, 9, now, locs, 8), 0, "unknown volume");

	/* Read-only and volumes dropped from a later heartbeat. */
	{
		struct topo_vol_report a[] = {V(1, "", "000", 10), V(3, "pics", "000", 0)};
		a[0].read_only = true;
		hb(t, "127.0.0.1:8080", "", "", 8, a, 2, now + SEC);
	}
	is_int(topology_pick_writable(t, &k, NULL, 0, now + SEC, 7, &vid, &loc), WFS_ENOENT,
	       "read-only volume is not writable");
	is_int(topology_lookup(t, 2, now + SEC, locs, 8), 0, "unreported volume is gone");
	is_int(topology_lookup(t, 1, now + SEC, locs, 8), 1, "read-only volume still readable");

	/* Replicated layout: both copies must be live. */
	{
		struct topo_vol_report a[] = {V(1, "", "000", 10), V(3, "pics", "000", 0),
					      V(5, "", "001", 0)};
		struct topo_vol_report b[] = {V(5, "", "001", 0)};
		hb(t, "127.0.0.1:8080", "", "", 8, a, 3, now + 2 * SEC);
		is_int(topology_pick_writable(t, &k1, NULL, 0, now + 2 * SEC, 1, &vid, &loc),
		       WFS_ENOENT, "001 volume with one copy is not writable");
		hb(t, "127.0.0.1:8081", "", "", 8, b, 1, now + 3 * SEC);
		is_int(topology_pick_writable(t, &k1, NULL, 0, now + 3 * SEC, 1, &vid, &loc),
		       WFS_OK, "001 volume with two copies is writable");
		is_int(topology_lookup(t, 5, now + 3 * SEC, locs, 8), 2, "two locations");
		/* 8080 dies (no heartbeat for > 15 s); 8081 keeps beating. */
		hb(t, "127.0.0.1:8081", "", "", 8, b, 1, now + 18 * SEC);
		is_int(topology_lookup(t, 5, now + 18 * SEC, locs, 8), 1,
		       "dead node left the lookup answer");
		is_str(locs[0].url, "127.0.0.1:8081", "the live copy remains");
		is_int(topology_lookup(t, 3, now + 18 * SEC, locs, 8), 0,
		       "volume only on the dead node is not found");
		is_int(topology_pick_writable(t, &k1, NULL, 0, now + 18 * SEC, 1, &vid, &loc),
		       WFS_ENOENT, "a copy on a dead node makes the volume unwritable");
		/* It rejoins. */
		hb(t, "127.0.0.1:8080", "", "", 8, a, 3, now + 19 * SEC);
		is_int(topology_lookup(t, 3, now + 19 * SEC, locs, 8), 1, "node rejoined");
		is_int(topology_pick_writable(t, &k1, NULL, 0, now + 19 * SEC, 1, &vid, &loc),
		       WFS_OK, "writable again after the rejoin");
		is_int(topology_lookup(t, 5, now + 19 * SEC, locs, 8), 2, "both copies again");
	}
	now += 19 * SEC;

	/* Preferences on picks. */
	{
		struct place_prefs pr = {"", "", "127.0.0.1:8081"};
		is_int(topology_pick_writable(t, &k1, &pr, 0, now, 1, &vid, &loc), WFS_OK,
		       "pick with dataNode");
		is_str(loc.url, "127.0.0.1:8081", "target copy on the preferred node");
		pr.node = "";
		pr.dc = "elsewhere";
		is_int(topology_pick_writable(t, &k1, &pr, 0, now, 1, &vid, &loc), WFS_ENOENT,
		       "no volume in the preferred data center");
	}

	/* Growth plan: reserves slots, adds the volume, survives a stale heartbeat. */
	is_int(topology_plan_volume(t, &k1, NULL, now, 5, urls, &nurls, msg, sizeof(msg)), WFS_OK,
	       "plan a 001 volume");
	is_int(nurls, 2, "two servers");
	ok(strcmp(urls[0], urls[1]), "distinct servers");
	topology_plan_done(t, &k1, 50, urls, nurls, true, now);
	is_int(topology_lookup(t, 50, now, locs, 8), 2, "grown volume is visible at once");
	is_int(topology_writable_count(t, &k1, now), 2, "and writable");
	{
		struct topo_vol_report a[] = {V(1, "", "000", 10), V(3, "pics", "000", 0),
					      V(5, "", "001", 0)};
		hb(t, "127.0.0.1:8080", "", "", 8, a, 3, now + SEC);
		is_int(topology_lookup(t, 50, now + SEC, locs, 8), 2,
		       "a heartbeat sent before the growth does not drop it");
		hb(t, "127.0.0.1:8080", "", "", 8, a, 3, now + 20 * SEC);
		hb(t, "127.0.0.1:8081", "", "", 8, NULL, 0, now + 20 * SEC);
		is_int(topology_lookup(t, 50, now + 20 * SEC, locs, 8), 0,
		       "after the grace period an unreported volume is gone");
	}
	now += 20 * SEC;

	/* Free slots: an 8081 with max 1 and one planned slot has no room left. */
	{
		struct topo_heartbeat h = {"127.0.0.1:8081", NULL, NULL, NULL, 1, 0, NULL, 0, NULL, 0};
		topology_heartbeat(t, &h, now, &max_vid);
		is_int(topology_plan_volume(t, &k1, NULL, now, 5, urls, &nurls, msg, sizeof(msg)),
		       WFS_OK, "plan takes the last slot of 8081");
		is_int(topology_plan_volume(t, &k1, NULL, now, 5, urls + 2, &nurls, msg,
					    sizeof(msg)),
		       WFS_ENOSPC, "reserved slots are not handed out twice");
		is_str(msg,
		       "not enough servers on a rack for replication 001: have 1 with free slots, "
		       "need 2",
		       "message");
		topology_plan_done(t, &k1, 0, urls, 2, false, now);
		is_int(topology_plan_volume(t, &k1, NULL, now, 5, urls, &nurls, msg, sizeof(msg)),
		       WFS_OK, "a released plan frees its slots");
		topology_plan_done(t, &k1, 0, urls, nurls, false, now);
	}

	/* Vacuum flag. */
	{
		struct topo_vol_report a[] = {V(1, "", "000", 10), V(3, "pics", "000", 0),
					      V(7, "", "000", 0)};
		hb(t, "127.0.0.1:8080", "", "", 8, a, 3, now);
		is_int(topology_writable_count(t, &k, now), 2, "volumes 1 and 7 writable");
		topology_set_vacuuming(t, 7, true);
		is_int(topology_writable_count(t, &k, now), 1, "vacuuming volume is not writable");
		topology_set_vacuuming(t, 7, false);
		is_int(topology_writable_count(t, &k, now), 2, "writable again after vacuum");
	}

	s = dump(t, 0, now);
	ok(strstr(s, "\"Topology\":{\"Max\":9,\"Free\":6,\"DataCenters\":[{\"Id\":"
		     "\"DefaultDataCenter\"") != NULL,
	   "dir/status tree: %s", s);
	ok(strstr(s, "{\"Url\":\"127.0.0.1:8080\",\"PublicUrl\":\"127.0.0.1:8080\",\"Volumes\":3,"
		     "\"Max\":8,\"Free\":5,\"EcShards\":[]}") != NULL,
	   "dir/status data node");
	ok(strstr(s, "\"Layouts\":[") && strstr(s, "\"writables\":[1,7]"), "layouts");
	free(s);
	s = dump(t, 1, now);
	ok(strstr(s, "\"DefaultRack\":{\"127.0.0.1:8080\":[") && strstr(s, "\"Id\":7,"),
	   "vol/status: %s", s);
	free(s);
	s = dump(t, 2, now);
	ok(strstr(s, "\"VolumeCount\":3") != NULL, "collection info counts volumes: %s", s);
	free(s);

	/* Collections. */
	ok(topology_has_collection(t, "pics"), "pics exists");
	{
		size_t n;
		char **u = topology_collection_nodes(t, "pics", now, &n);
		is_int(n, 1, "one node holds pics");
		for (size_t i = 0; i < n; i++)
			free(u[i]);
		free(u);
	}
	topology_remove_collection(t, "pics");
	ok(!topology_has_collection(t, "pics"), "pics removed");
	is_int(topology_lookup(t, 3, now, locs, 8), 0, "its volume is gone");

	{
		size_t n;
		struct topo_vacuum_item *it = topology_vacuum_list(t, now, &n);
		is_int(n, 2, "vacuum list holds the live volumes");
		free(it);
	}
	/* Everything dies: nothing is listed any more. */
	is_int(topology_lookup(t, 1, now + 16 * SEC, locs, 8), 0, "dead cluster answers nothing");
	s = dump(t, 0, now + 16 * SEC);
	ok(strstr(s, "\"DataCenters\":[]") != NULL, "dead nodes leave dir/status");
	free(s);
	topology_free(t);

	/* erasure-coded shards: lookups by shard, /dir/lookup's fallback, slots */
	t = topology_new(LIMIT, 5);
	{
		struct topo_ec_report ea[] = {{9, "c", 0x00ff}}, eb[] = {{9, "c", 0x3f00 | 0x0001}};
		struct topo_heartbeat a = {"127.0.0.1:9001", NULL, "dc", "r1", 2, 0, NULL, 0, ea, 1};
		struct topo_heartbeat b = {"127.0.0.1:9002", NULL, "dc", "r2", 2, 0, NULL, 0, eb, 1};
		struct topo_ec_locations *ec = malloc(sizeof(*ec));
		struct topo_counts c;
		topology_heartbeat(t, &a, now, &max_vid);
		topology_heartbeat(t, &b, now, &max_vid);
		ok(topology_ec_lookup(t, 9, now, ec), "EC volume found");
		is_str(ec->collection, "c", "its collection");
		is_int(ec->n[0], 2, "shard 0 on both servers");
		is_int(ec->n[7], 1, "shard 7 on one");
		is_str(ec->locs[13][0].url, "127.0.0.1:9002", "shard 13 where it was reported");
		ok(!topology_ec_lookup(t, 8, now, ec), "an unknown EC volume");
		is_int(topology_lookup(t, 9, now, locs, 8), 2, "/dir/lookup falls back to the holders");
		topology_counts(t, now, &c);
		is_int(c.free_slots, 2, "eight and seven shards take a slot each");
		ok(!topology_ec_lookup(t, 9, now + 100 * SEC, ec), "dead holders are not listed");
		free(ec);
	}
	topology_free(t);
	return done_testing();
}
