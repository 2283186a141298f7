/*
 * DESIGN: nodes live in a flat array (clusters have tens to hundreds of
 * servers); data centers and racks are attributes of a node and grouped when
 * printed or placed. Volumes sit in a hash map by id (lib/hashmap.h), each
 * with up to TOPO_MAX_LOCATIONS replicas (node + that copy's statistics). A
 * layout keeps the ids of its writable volumes in an array so an assignment
 * is one random index plus a short scan that skips copies on dead nodes.
 * Writability is recomputed whenever a volume's replicas change; liveness is
 * checked at read time, and dead nodes are reaped on the next exclusive
 * operation.
 *
 * A volume created by growth is added at once (unconfirmed); a heartbeat that
 * was already in flight and does not list it yet does not remove it during a
 * grace period of one dead interval.
 */
#include "config.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include "hashmap.h"
#include "metrics.h"
#include "server/master/topology.h"
#include "util.h"

struct dnode {
	char *url, *public_url, *dc, *rack;
	int max;
	int pending;      /* slots reserved by plans in flight */
	uint64_t last_ns; /* monotonic time of the last heartbeat */
	uint32_t *vids;   /* volumes on this node */
	size_t nvids, capvids;
	struct ec_hold *ecs; /* erasure-coded shards on this node, as last reported */
	size_t necs;
};

struct ec_hold {
	uint32_t vid;
	char collection[TOPO_NAME_MAX];
	uint16_t shards;
};

struct replica {
	struct dnode *node;
	uint64_t size, file_count, delete_count, deleted_bytes;
	bool read_only;
	bool confirmed;    /* reported by a heartbeat (not only added by growth) */
	uint64_t added_ns; /* when growth added it */
	uint32_t compact_revision, version;
	int64_t modified_at;
};

struct layout {
	char *collection;
	struct replica_placement rp;
	struct ttl ttl;
	uint32_t *writable;
	size_t nwritable, capwritable;
};

struct volume {
	uint32_t id;
	struct layout *layout;
	struct replica reps[TOPO_MAX_LOCATIONS];
	size_t nreps;
	bool vacuuming;
	bool writable;             /* listed in layout->writable */
	bool repairing;            /* listed by topology_repair_list, not done yet */
	bool no_target_said;       /* the repair list said once that no server fits */
	uint64_t under_since_ns;   /* first seen with too few live copies; 0 = enough */
	uint64_t figures_fp;       /* the replicas' figures at the last repair scan */
	uint64_t settled_fp;       /* figures a sync already brought as level as it can */
	struct hashmap_node hnode; /* in topology.volumes */
};

struct topology {
	pthread_rwlock_t lock;
	uint64_t limit;   /* volume size limit in bytes */
	uint64_t dead_ns; /* silence after which a node is dead */
	/* everything below is protected by lock */
	struct dnode **nodes;
	size_t nnodes, capnodes;
	struct layout **layouts;
	size_t nlayouts, caplayouts;
	struct hashmap volumes; /* of struct volume by id */
};

/* ---- small helpers ---- */

static void set_str(char **dst, const char *src)
{
	if (*dst && !strcmp(*dst, src))
		return;
	free(*dst);
	*dst = xstrdup(src);
}

static void copy_str(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static bool node_alive(const topology *t, const struct dnode *d, uint64_t now_ns)
{
	return now_ns < d->last_ns + t->dead_ns;
}

/* EC shards take slots too: ten shards (a volume's worth of data) per slot, rounded up. */
static int node_ec_slots(const struct dnode *d)
{
	int n = 0;
	for (size_t i = 0; i < d->necs; i++)
		n += __builtin_popcount(d->ecs[i].shards);
	return (n + 9) / 10;
}

static int node_free(const struct dnode *d)
{
	int f = d->max - (int)d->nvids - node_ec_slots(d) - d->pending;
	return f > 0 ? f : 0;
}

static bool ttl_eq(const struct ttl *a, const struct ttl *b)
{
	return a->count == b->count && a->unit == b->unit;
}

static bool rp_eq(const struct replica_placement *a, const struct replica_placement *b)
{
	return a->dc == b->dc && a->rack == b->rack && a->server == b->server;
}

static void vid_array_add(uint32_t **arr, size_t *n, size_t *cap, uint32_t vid)
{
	for (size_t i = 0; i < *n; i++)
		if ((*arr)[i] == vid)
			return;
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		*arr = xrealloc(*arr, *cap * sizeof(**arr));
	}
	(*arr)[(*n)++] = vid;
}

static void vid_array_del(uint32_t *arr, size_t *n, uint32_t vid)
{
	for (size_t i = 0; i < *n; i++)
		if (arr[i] == vid) {
			arr[i] = arr[--*n];
			return;
		}
}

/* ---- volumes hash ---- */

/* The id itself: ids are small and dense, so their low bits spread them. */
static uint64_t vol_hash(const struct hashmap_node *n)
{
	return hashmap_entry(n, struct volume, hnode)->id;
}

static bool vol_eq(const struct hashmap_node *n, const void *key)
{
	return hashmap_entry(n, struct volume, hnode)->id == *(const uint32_t *)key;
}

static struct volume *vol_find(const topology *t, uint32_t vid)
{
	return hashmap_entry(hashmap_find(&t->volumes, vid, vol_eq, &vid), struct volume, hnode);
}

/* ---- layouts ---- */

static struct layout *layout_find(const topology *t, const char *collection,
				  const struct replica_placement *rp, const struct ttl *ttl)
{
	for (size_t i = 0; i < t->nlayouts; i++) {
		struct layout *l = t->layouts[i];
		if (rp_eq(&l->rp, rp) && ttl_eq(&l->ttl, ttl) && !strcmp(l->collection, collection))
			return l;
	}
	return NULL;
}

static struct layout *layout_get(topology *t, const char *collection,
				 const struct replica_placement *rp, const struct ttl *ttl)
{
	struct layout *l = layout_find(t, collection, rp, ttl);
	if (l)
		return l;
	l = xcalloc(1, sizeof(*l));
	l->collection = xstrdup(collection);
	l->rp = *rp;
	l->ttl = *ttl;
	if (t->nlayouts == t->caplayouts) {
		t->caplayouts = t->caplayouts ? t->caplayouts * 2 : 8;
		t->layouts = xrealloc(t->layouts, t->caplayouts * sizeof(*t->layouts));
	}
	t->layouts[t->nlayouts++] = l;
	return l;
}

/* Recomputes whether v belongs in its layout's writable list. */
static void vol_refresh(topology *t, struct volume *v)
{
	bool w = !v->vacuuming && v->nreps >= (size_t)replica_placement_copies(&v->layout->rp);
	for (size_t i = 0; w && i < v->nreps; i++)
		if (v->reps[i].read_only || v->reps[i].size >= t->limit)
			w = false;
	if (w == v->writable)
		return;
	v->writable = w;
	if (w)
		vid_array_add(&v->layout->writable, &v->layout->nwritable, &v->layout->capwritable,
			      v->id);
	else
		vid_array_del(v->layout->writable, &v->layout->nwritable, v->id);
}

static void vol_set_layout(topology *t, struct volume *v, struct layout *l)
{
	if (v->layout == l)
		return;
	if (v->layout && v->writable)
		vid_array_del(v->layout->writable, &v->layout->nwritable, v->id);
	v->writable = false;
	v->layout = l;
}

static struct volume *vol_get(topology *t, uint32_t vid, struct layout *l)
{
	struct volume *v = vol_find(t, vid);
	if (!v) {
		v = xcalloc(1, sizeof(*v));
		v->id = vid;
		v->layout = l;
		hashmap_insert(&t->volumes, &v->hnode);
	}
	vol_set_layout(t, v, l);
	return v;
}

/* Frees v, no longer in the map. */
static void vol_free(topology *t, struct volume *v)
{
	vol_set_layout(t, v, NULL);
	free(v);
}

static void vol_delete(topology *t, struct volume *v)
{
	hashmap_remove(&t->volumes, &v->hnode);
	vol_free(t, v);
}

static struct replica *vol_replica(struct volume *v, const struct dnode *d)
{
	for (size_t i = 0; i < v->nreps; i++)
		if (v->reps[i].node == d)
			return &v->reps[i];
	return NULL;
}

/* Removes d's copy of v; deletes v when no copy remains. */
static void vol_drop_replica(topology *t, struct volume *v, const struct dnode *d)
{
	for (size_t i = 0; i < v->nreps; i++)
		if (v->reps[i].node == d) {
			v->reps[i] = v->reps[--v->nreps];
			break;
		}
	if (v->nreps == 0)
		vol_delete(t, v);
	else
		vol_refresh(t, v);
}

/* ---- nodes ---- */

static struct dnode *node_find(const topology *t, const char *url)
{
	for (size_t i = 0; i < t->nnodes; i++)
		if (!strcmp(t->nodes[i]->url, url))
			return t->nodes[i];
	return NULL;
}

static void node_free_one(struct dnode *d)
{
	free(d->url);
	free(d->public_url);
	free(d->dc);
	free(d->rack);
	free(d->vids);
	free(d->ecs);
	free(d);
}

static void node_remove(topology *t, size_t idx)
{
	struct dnode *d = t->nodes[idx];
	for (size_t i = 0; i < d->nvids; i++) {
		struct volume *v = vol_find(t, d->vids[i]);
		if (v)
			vol_drop_replica(t, v, d);
	}
	t->nodes[idx] = t->nodes[--t->nnodes];
	node_free_one(d);
}

/* Forgets nodes that stopped heartbeating (and plans hold no slot on). */
size_t topology_live_nodes(topology *t, uint64_t now_ns)
{
	size_t n = 0;
	pthread_rwlock_rdlock(&t->lock);
	for (size_t i = 0; i < t->nnodes; i++)
		n += node_alive(t, t->nodes[i], now_ns);
	pthread_rwlock_unlock(&t->lock);
	return n;
}

uint64_t topology_dead_ns(const topology *t) { return t->dead_ns; }

static void reap_dead(topology *t, uint64_t now_ns)
{
	for (size_t i = 0; i < t->nnodes;) {
		if (!node_alive(t, t->nodes[i], now_ns) && t->nodes[i]->pending == 0)
			node_remove(t, i);
		else
			i++;
	}
}

/* ---- public API ---- */

topology *topology_new(uint64_t volume_size_limit, int pulse_seconds)
{
	topology *t = xcalloc(1, sizeof(*t));
	pthread_rwlockattr_t attr;
	/* glibc prefers readers by default: a stream of assigns would starve heartbeats. */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&t->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	t->limit = volume_size_limit;
	t->dead_ns = 3ull * (uint64_t)(pulse_seconds > 0 ? pulse_seconds : 1) * 1000000000ull;
	hashmap_init(&t->volumes, 64, vol_hash);
	return t;
}

void topology_free(topology *t)
{
	struct hashmap_iter it;
	struct hashmap_node *n;

	if (!t)
		return;
	hashmap_foreach(&t->volumes, it, n)
		free(hashmap_entry(n, struct volume, hnode));
	hashmap_destroy(&t->volumes);
	for (size_t i = 0; i < t->nnodes; i++)
		node_free_one(t->nodes[i]);
	free(t->nodes);
	for (size_t i = 0; i < t->nlayouts; i++) {
		free(t->layouts[i]->collection);
		free(t->layouts[i]->writable);
		free(t->layouts[i]);
	}
	free(t->layouts);
	pthread_rwlock_destroy(&t->lock);
	free(t);
}

uint64_t topology_volume_size_limit(const topology *t) { return t->limit; }

static bool report_has(const struct topo_heartbeat *hb, uint32_t vid)
{
	for (size_t i = 0; i < hb->nvols; i++)
		if (hb->vols[i].id == vid)
			return true;
	return false;
}

wfs_err topology_heartbeat(topology *t, const struct topo_heartbeat *hb, uint64_t now_ns,
			   uint32_t *max_vid)
{
	struct dnode *d;
	uint32_t *old;
	size_t nold;

	*max_vid = 0;
	if (!hb->url || !*hb->url)
		return WFS_EINVAL;
	pthread_rwlock_wrlock(&t->lock);
	d = node_find(t, hb->url);
	if (d && !node_alive(t, d, now_ns)) {
		/* Rejoining after death: start from the report alone. */
		for (size_t i = 0; i < t->nnodes; i++)
			if (t->nodes[i] == d) {
				d->pending = 0;
				node_remove(t, i);
				break;
			}
		d = NULL;
	}
	reap_dead(t, now_ns);
	if (!d) {
		d = xcalloc(1, sizeof(*d));
		d->url = xstrdup(hb->url);
		if (t->nnodes == t->capnodes) {
			t->capnodes = t->capnodes ? t->capnodes * 2 : 8;
			t->nodes = xrealloc(t->nodes, t->capnodes * sizeof(*t->nodes));
		}
		t->nodes[t->nnodes++] = d;
	}
	set_str(&d->public_url, hb->public_url && *hb->public_url ? hb->public_url : hb->url);
	set_str(&d->dc, hb->dc && *hb->dc ? hb->dc : "DefaultDataCenter");
	set_str(&d->rack, hb->rack && *hb->rack ? hb->rack : "DefaultRack");
	d->max = hb->max_volumes > 0 ? hb->max_volumes : 0;
	d->last_ns = now_ns;
	free(d->ecs);
	d->ecs = xcalloc(hb->necs + 1, sizeof(*d->ecs));
	d->necs = 0;
	for (size_t i = 0; i < hb->necs; i++)
		if (hb->ecs[i].id && hb->ecs[i].shards) {
			struct ec_hold *e = &d->ecs[d->necs++];
			e->vid = hb->ecs[i].id;
			copy_str(e->collection, sizeof(e->collection), hb->ecs[i].collection);
			e->shards = hb->ecs[i].shards;
		}

	/* Copies this node no longer reports are gone, unless growth just made them. */
	old = d->vids;
	nold = d->nvids;
	d->vids = NULL;
	d->nvids = d->capvids = 0;
	for (size_t i = 0; i < nold; i++) {
		struct volume *v = vol_find(t, old[i]);
		struct replica *r;
		if (!v || report_has(hb, old[i]))
			continue;
		r = vol_replica(v, d);
		if (r && !r->confirmed && now_ns < r->added_ns + t->dead_ns)
			vid_array_add(&d->vids, &d->nvids, &d->capvids, old[i]);
		else
			vol_drop_replica(t, v, d);
	}
	free(old);

	for (size_t i = 0; i < hb->nvols; i++) {
		const struct topo_vol_report *vr = &hb->vols[i];
		struct layout *l;
		struct volume *v;
		struct replica *r;
		if (vr->id == 0)
			continue;
		l = layout_get(t, vr->collection ? vr->collection : "", &vr->rp, &vr->ttl);
		v = vol_get(t, vr->id, l);
		r = vol_replica(v, d);
		if (!r) {
			if (v->nreps == TOPO_MAX_LOCATIONS)
				continue;
			r = &v->reps[v->nreps++];
			memset(r, 0, sizeof(*r));
			r->node = d;
		}
		r->size = vr->size;
		r->file_count = vr->file_count;
		r->delete_count = vr->delete_count;
		r->deleted_bytes = vr->deleted_bytes;
		r->read_only = vr->read_only;
		r->confirmed = true;
		r->compact_revision = vr->compact_revision;
		r->version = vr->version;
		r->modified_at = vr->modified_at;
		vid_array_add(&d->vids, &d->nvids, &d->capvids, vr->id);
		vol_refresh(t, v);
		if (vr->id > *max_vid)
			*max_vid = vr->id;
	}
	pthread_rwlock_unlock(&t->lock);
	return WFS_OK;
}

static bool rep_matches(const struct replica *r, const struct place_prefs *p)
{
	const struct dnode *d = r->node;
	if (!p)
		return true;
	if (p->dc && *p->dc && strcmp(d->dc, p->dc))
		return false;
	if (p->rack && *p->rack && strcmp(d->rack, p->rack))
		return false;
	if (p->node && *p->node && strcmp(d->url, p->node) && strcmp(d->public_url, p->node))
		return false;
	return true;
}

static void fill_loc(struct topo_location *loc, const struct dnode *d)
{
	copy_str(loc->url, sizeof(loc->url), d->url);
	copy_str(loc->public_url, sizeof(loc->public_url), d->public_url);
	copy_str(loc->dc, sizeof(loc->dc), d->dc);
}

wfs_err topology_pick_writable(topology *t, const struct topo_layout_key *key,
			       const struct place_prefs *prefs, uint64_t data_size, uint64_t now_ns,
			       uint64_t rnd, uint32_t *vid, struct topo_location *loc)
{
	wfs_err err = WFS_ENOENT;
	struct layout *l;

	pthread_rwlock_rdlock(&t->lock);
	l = layout_find(t, key->collection ? key->collection : "", &key->rp, &key->ttl);
	if (l && l->nwritable) {
		size_t n = l->nwritable, start = (size_t)(rnd % n);
		size_t copies = (size_t)replica_placement_copies(&l->rp);
		for (size_t k = 0; k < n && err; k++) {
			struct volume *v = vol_find(t, l->writable[(start + k) % n]);
			const struct replica *target = NULL;
			size_t live = 0;
			bool fits = true;
			if (!v)
				continue;
			for (size_t i = 0; i < v->nreps; i++) {
				const struct replica *r = &v->reps[i];
				if (!node_alive(t, r->node, now_ns))
					continue;
				live++;
				if (r->size + data_size > t->limit)
					fits = false;
				if (!target && rep_matches(r, prefs))
					target = r;
			}
			if (live < copies || !fits || !target)
				continue;
			*vid = v->id;
			fill_loc(loc, target->node);
			err = WFS_OK;
		}
	}
	pthread_rwlock_unlock(&t->lock);
	return err;
}

size_t topology_writable_count(topology *t, const struct topo_layout_key *key, uint64_t now_ns)
{
	size_t count = 0;
	struct layout *l;
	pthread_rwlock_rdlock(&t->lock);
	l = layout_find(t, key->collection ? key->collection : "", &key->rp, &key->ttl);
	for (size_t k = 0; l && k < l->nwritable; k++) {
		struct volume *v = vol_find(t, l->writable[k]);
		size_t live = 0;
		for (size_t i = 0; v && i < v->nreps; i++)
			live += node_alive(t, v->reps[i].node, now_ns);
		if (live >= (size_t)replica_placement_copies(&l->rp))
			count++;
	}
	pthread_rwlock_unlock(&t->lock);
	return count;
}

size_t topology_lookup(topology *t, uint32_t vid, uint64_t now_ns, struct topo_location *locs,
		       size_t max)
{
	size_t n = 0;
	struct volume *v;
	pthread_rwlock_rdlock(&t->lock);
	v = vol_find(t, vid);
	for (size_t i = 0; v && i < v->nreps && n < max; i++)
		if (node_alive(t, v->reps[i].node, now_ns))
			fill_loc(&locs[n++], v->reps[i].node);
	for (size_t i = 0; !v && i < t->nnodes && n < max; i++) {
		const struct dnode *d = t->nodes[i];
		for (size_t k = 0; k < d->necs && node_alive(t, d, now_ns); k++)
			if (d->ecs[k].vid == vid) {
				fill_loc(&locs[n++], d);
				break;
			}
	}
	pthread_rwlock_unlock(&t->lock);
	return n;
}

bool topology_ec_lookup(topology *t, uint32_t vid, uint64_t now_ns, struct topo_ec_locations *out)
{
	bool found = false;
	memset(out, 0, sizeof(*out));
	pthread_rwlock_rdlock(&t->lock);
	for (size_t i = 0; i < t->nnodes; i++) {
		const struct dnode *d = t->nodes[i];
		if (!node_alive(t, d, now_ns))
			continue;
		for (size_t k = 0; k < d->necs; k++) {
			if (d->ecs[k].vid != vid)
				continue;
			found = true;
			copy_str(out->collection, sizeof(out->collection), d->ecs[k].collection);
			for (int s = 0; s < 14; s++)
				if ((d->ecs[k].shards & (1u << s)) && out->n[s] < ARRAY_LEN(out->locs[s]))
					fill_loc(&out->locs[s][out->n[s]++], d);
		}
	}
	pthread_rwlock_unlock(&t->lock);
	return found;
}

wfs_err topology_plan_volume(topology *t, const struct topo_layout_key *key,
			     const struct place_prefs *prefs, uint64_t now_ns, uint64_t rnd,
			     char urls[][TOPO_URL_MAX], size_t *nurls, char *msg, size_t msglen)
{
	struct place_node *cand;
	struct dnode **live;
	size_t n = 0, out[PLACEMENT_MAX_COPIES];
	wfs_err err;

	*nurls = 0;
	pthread_rwlock_wrlock(&t->lock);
	reap_dead(t, now_ns);
	cand = xcalloc(t->nnodes ? t->nnodes : 1, sizeof(*cand));
	live = xcalloc(t->nnodes ? t->nnodes : 1, sizeof(*live));
	for (size_t i = 0; i < t->nnodes; i++) {
		struct dnode *d = t->nodes[i];
		if (!node_alive(t, d, now_ns))
			continue;
		live[n] = d;
		cand[n].url = d->url;
		cand[n].public_url = d->public_url;
		cand[n].dc = d->dc;
		cand[n].rack = d->rack;
		cand[n].free = node_free(d);
		n++;
	}
	err = placement_choose(cand, n, &key->rp, prefs, rnd, out, msg, msglen);
	if (!err) {
		size_t copies = (size_t)replica_placement_copies(&key->rp);
		for (size_t i = 0; i < copies; i++) {
			live[out[i]]->pending++;
			copy_str(urls[i], TOPO_URL_MAX, live[out[i]]->url);
		}
		*nurls = copies;
	}
	free(cand);
	free(live);
	pthread_rwlock_unlock(&t->lock);
	return err;
}

void topology_plan_done(topology *t, const struct topo_layout_key *key, uint32_t vid,
			char urls[][TOPO_URL_MAX], size_t nurls, bool created, uint64_t now_ns)
{
	struct volume *v = NULL;
	pthread_rwlock_wrlock(&t->lock);
	if (created)
		v = vol_get(
			t, vid,
			layout_get(t, key->collection ? key->collection : "", &key->rp, &key->ttl));
	for (size_t i = 0; i < nurls; i++) {
		struct dnode *d = node_find(t, urls[i]);
		struct replica *r;
		if (!d)
			continue;
		if (d->pending > 0)
			d->pending--;
		if (!v || vol_replica(v, d) || v->nreps == TOPO_MAX_LOCATIONS)
			continue;
		r = &v->reps[v->nreps++];
		memset(r, 0, sizeof(*r));
		r->node = d;
		r->added_ns = now_ns;
		r->version = 3;
		vid_array_add(&d->vids, &d->nvids, &d->capvids, vid);
	}
	if (v) {
		if (v->nreps == 0)
			vol_delete(t, v);
		else
			vol_refresh(t, v);
	}
	pthread_rwlock_unlock(&t->lock);
}

struct topo_vacuum_item *topology_vacuum_list(topology *t, uint64_t now_ns, size_t *n)
{
	struct topo_vacuum_item *items;
	struct hashmap_iter hi;
	struct hashmap_node *hn;
	size_t k = 0;
	pthread_rwlock_rdlock(&t->lock);
	items = xcalloc(MAX(hashmap_count(&t->volumes), 1), sizeof(*items));
	hashmap_foreach(&t->volumes, hi, hn) {
		const struct volume *v = hashmap_entry(hn, struct volume, hnode);
		struct topo_vacuum_item *it = &items[k];
		it->vid = v->id;
		it->nurls = 0;
		for (size_t i = 0; i < v->nreps; i++)
			if (node_alive(t, v->reps[i].node, now_ns))
				copy_str(it->urls[it->nurls++], TOPO_URL_MAX, v->reps[i].node->url);
		if (it->nurls)
			k++;
	}
	pthread_rwlock_unlock(&t->lock);
	*n = k;
	return items;
}

void topology_set_vacuuming(topology *t, uint32_t vid, bool on)
{
	struct volume *v;
	pthread_rwlock_wrlock(&t->lock);
	v = vol_find(t, vid);
	if (v) {
		v->vacuuming = on;
		vol_refresh(t, v);
	}
	pthread_rwlock_unlock(&t->lock);
}

char **topology_collection_nodes(topology *t, const char *collection, uint64_t now_ns, size_t *n)
{
	char **urls;
	size_t k = 0;
	pthread_rwlock_rdlock(&t->lock);
	urls = xcalloc(t->nnodes ? t->nnodes : 1, sizeof(*urls));
	for (size_t i = 0; i < t->nnodes; i++) {
		struct dnode *d = t->nodes[i];
		bool has = false;
		if (!node_alive(t, d, now_ns))
			continue;
		for (size_t j = 0; j < d->nvids && !has; j++) {
			struct volume *v = vol_find(t, d->vids[j]);
			has = v && !strcmp(v->layout->collection, collection);
		}
		if (has)
			urls[k++] = xstrdup(d->url);
	}
	pthread_rwlock_unlock(&t->lock);
	*n = k;
	return urls;
}

bool topology_has_collection(topology *t, const char *collection)
{
	struct hashmap_iter it;
	struct hashmap_node *n;
	bool has = false;
	pthread_rwlock_rdlock(&t->lock);
	for (n = hashmap_first(&t->volumes, &it); n && !has; n = hashmap_next(&it))
		has = !strcmp(hashmap_entry(n, struct volume, hnode)->layout->collection,
			      collection);
	pthread_rwlock_unlock(&t->lock);
	return has;
}

void topology_remove_collection(topology *t, const char *collection)
{
	struct hashmap_iter it;
	struct hashmap_node *n;
	pthread_rwlock_wrlock(&t->lock);
	hashmap_foreach(&t->volumes, it, n) {
		struct volume *v = hashmap_entry(n, struct volume, hnode);
		if (strcmp(v->layout->collection, collection))
			continue;
		for (size_t i = 0; i < v->nreps; i++) {
			struct dnode *d = v->reps[i].node;
			vid_array_del(d->vids, &d->nvids, v->id);
		}
		hashmap_unlink(&t->volumes, n); /* the iteration's current node */
		vol_free(t, v);
	}
	pthread_rwlock_unlock(&t->lock);
}

/* ---- status output ---- */

/* Distinct values of a node field among live nodes, in first-seen order. */
static size_t distinct(const topology *t, uint64_t now_ns, const char *dc, const char **out)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nnodes; i++) {
		const struct dnode *d = t->nodes[i];
		const char *v = dc ? d->rack : d->dc;
		bool seen = false;
		if (!node_alive(t, d, now_ns) || (dc && strcmp(d->dc, dc)))
			continue;
		for (size_t j = 0; j < n && !seen; j++)
			seen = !strcmp(out[j], v);
		if (!seen)
			out[n++] = v;
	}
	return n;
}

static bool node_in(const struct dnode *d, const char *dc, const char *rack)
{
	return (!dc || !strcmp(d->dc, dc)) && (!rack || !strcmp(d->rack, rack));
}

static void sum_slots(const topology *t, uint64_t now_ns, const char *dc, const char *rack,
		      int64_t *max, int64_t *free_slots)
{
	*max = *free_slots = 0;
	for (size_t i = 0; i < t->nnodes; i++) {
		const struct dnode *d = t->nodes[i];
		if (node_alive(t, d, now_ns) && node_in(d, dc, rack)) {
			*max += d->max;
			*free_slots += node_free(d);
		}
	}
}

void topology_counts(topology *t, uint64_t now_ns, struct topo_counts *c)
{
	pthread_rwlock_rdlock(&t->lock);
	sum_slots(t, now_ns, NULL, NULL, &c->max_slots, &c->free_slots);
	c->nodes = 0;
	for (size_t i = 0; i < t->nnodes; i++)
		c->nodes += node_alive(t, t->nodes[i], now_ns);
	c->volumes = (int64_t)t->volumes.count;
	pthread_rwlock_unlock(&t->lock);
}

static void write_slots(const topology *t, json_w *w, uint64_t now_ns, const char *dc,
			const char *rack)
{
	int64_t max, fr;
	sum_slots(t, now_ns, dc, rack, &max, &fr);
	jw_kv_i64(w, "Max", max);
	jw_kv_i64(w, "Free", fr);
}

void topology_write_dir_status(topology *t, json_w *w, uint64_t now_ns)
{
	const char **dcs, **racks;
	size_t ndc;
	pthread_rwlock_rdlock(&t->lock);
	dcs = xcalloc(t->nnodes + 1, sizeof(*dcs));
	racks = xcalloc(t->nnodes + 1, sizeof(*racks));
	jw_obj_begin(w);
	jw_key(w, "Topology");
	jw_obj_begin(w);
	write_slots(t, w, now_ns, NULL, NULL);
	jw_key(w, "DataCenters");
	jw_arr_begin(w);
	ndc = distinct(t, now_ns, NULL, dcs);
	for (size_t i = 0; i < ndc; i++) {
		size_t nr = distinct(t, now_ns, dcs[i], racks);
		jw_obj_begin(w);
		jw_kv_str(w, "Id", dcs[i]);
		write_slots(t, w, now_ns, dcs[i], NULL);
		jw_key(w, "Racks");
		jw_arr_begin(w);
		for (size_t j = 0; j < nr; j++) {
			jw_obj_begin(w);
			jw_kv_str(w, "Id", racks[j]);
			write_slots(t, w, now_ns, dcs[i], racks[j]);
			jw_key(w, "DataNodes");
			jw_arr_begin(w);
			for (size_t k = 0; k < t->nnodes; k++) {
				const struct dnode *d = t->nodes[k];
				if (!node_alive(t, d, now_ns) || !node_in(d, dcs[i], racks[j]))
					continue;
				jw_obj_begin(w);
				jw_kv_str(w, "Url", d->url);
				jw_kv_str(w, "PublicUrl", d->public_url);
				jw_kv_i64(w, "Volumes", (int64_t)d->nvids);
				jw_kv_i64(w, "Max", d->max);
				jw_kv_i64(w, "Free", node_free(d));
				jw_key(w, "EcShards");
				jw_arr_begin(w);
				for (size_t e = 0; e < d->necs; e++) {
					jw_obj_begin(w);
					jw_kv_u64(w, "Id", d->ecs[e].vid);
					jw_kv_str(w, "Collection", d->ecs[e].collection);
					jw_kv_u64(w, "Shards", d->ecs[e].shards);
					jw_obj_end(w);
				}
				jw_arr_end(w);
				jw_obj_end(w);
			}
			jw_arr_end(w);
			jw_obj_end(w);
		}
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "Layouts");
	jw_arr_begin(w);
	for (size_t i = 0; i < t->nlayouts; i++) {
		const struct layout *l = t->layouts[i];
		char rps[4], ttls[8];
		replica_placement_format(&l->rp, rps);
		ttl_format(&l->ttl, ttls);
		jw_obj_begin(w);
		jw_kv_str(w, "collection", l->collection);
		jw_kv_str(w, "replication", rps);
		jw_kv_str(w, "ttl", ttls);
		jw_key(w, "writables");
		jw_arr_begin(w);
		for (size_t k = 0; k < l->nwritable; k++)
			jw_u64(w, l->writable[k]);
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	jw_kv_str(w, "Version", PACKAGE_NAME " " PACKAGE_VERSION);
	jw_obj_end(w);
	pthread_rwlock_unlock(&t->lock);
	free(dcs);
	free(racks);
}

static void write_volume(json_w *w, const struct volume *v, const struct replica *r)
{
	char ttls[8];
	ttl_format(&v->layout->ttl, ttls);
	jw_obj_begin(w);
	jw_kv_u64(w, "Id", v->id);
	jw_kv_u64(w, "Size", r->size);
	jw_key(w, "ReplicaPlacement");
	jw_obj_begin(w);
	jw_kv_i64(w, "SameRackCount", v->layout->rp.server);
	jw_kv_i64(w, "DiffRackCount", v->layout->rp.rack);
	jw_kv_i64(w, "DiffDataCenterCount", v->layout->rp.dc);
	jw_obj_end(w);
	jw_kv_str(w, "Ttl", ttls);
	jw_kv_str(w, "Collection", v->layout->collection);
	jw_kv_u64(w, "Version", r->version);
	jw_kv_u64(w, "FileCount", r->file_count);
	jw_kv_u64(w, "DeleteCount", r->delete_count);
	jw_kv_u64(w, "DeletedByteCount", r->deleted_bytes);
	jw_kv_bool(w, "ReadOnly", r->read_only);
	jw_kv_u64(w, "CompactRevision", r->compact_revision);
	jw_kv_i64(w, "ModifiedAtSecond", r->modified_at);
	jw_obj_end(w);
}

void topology_write_vol_status(topology *t, json_w *w, uint64_t now_ns)
{
	const char **dcs, **racks;
	size_t ndc;
	pthread_rwlock_rdlock(&t->lock);
	dcs = xcalloc(t->nnodes + 1, sizeof(*dcs));
	racks = xcalloc(t->nnodes + 1, sizeof(*racks));
	jw_obj_begin(w);
	jw_kv_str(w, "Version", PACKAGE_NAME " " PACKAGE_VERSION);
	jw_kv_u64(w, "VolumeSizeLimit", t->limit);
	jw_key(w, "Volumes");
	jw_obj_begin(w);
	write_slots(t, w, now_ns, NULL, NULL);
	jw_key(w, "DataCenters");
	jw_obj_begin(w);
	ndc = distinct(t, now_ns, NULL, dcs);
	for (size_t i = 0; i < ndc; i++) {
		size_t nr = distinct(t, now_ns, dcs[i], racks);
		jw_key(w, dcs[i]);
		jw_obj_begin(w);
		for (size_t j = 0; j < nr; j++) {
			jw_key(w, racks[j]);
			jw_obj_begin(w);
			for (size_t k = 0; k < t->nnodes; k++) {
				struct dnode *d = t->nodes[k];
				if (!node_alive(t, d, now_ns) || !node_in(d, dcs[i], racks[j]))
					continue;
				jw_key(w, d->url);
				jw_arr_begin(w);
				for (size_t m = 0; m < d->nvids; m++) {
					const struct volume *v = vol_find(t, d->vids[m]);
					const struct replica *r =
						v ? vol_replica((struct volume *)v, d) : NULL;
					if (r)
						write_volume(w, v, r);
				}
				jw_arr_end(w);
			}
			jw_obj_end(w);
		}
		jw_obj_end(w);
	}
	jw_obj_end(w);
	jw_obj_end(w);
	jw_obj_end(w);
	pthread_rwlock_unlock(&t->lock);
	free(dcs);
	free(racks);
}

struct coll_sum {
	int64_t volumes, files, total, used, deleted;
};

/* Adds v: TotalSize counts every live copy, the rest count the volume once. */
static void coll_add(const topology *t, struct coll_sum *s, const struct volume *v, uint64_t now_ns)
{
	const struct replica *best = NULL;
	for (size_t i = 0; i < v->nreps; i++) {
		const struct replica *r = &v->reps[i];
		if (!node_alive(t, r->node, now_ns))
			continue;
		s->total += (int64_t)r->size;
		if (!best || r->size > best->size)
			best = r;
	}
	if (!best)
		return;
	s->volumes++;
	s->files += (int64_t)(best->file_count - MIN(best->delete_count, best->file_count));
	s->used += (int64_t)(best->size - MIN(best->deleted_bytes, best->size));
	s->deleted += (int64_t)best->deleted_bytes;
}

static void coll_write(json_w *w, const struct coll_sum *s)
{
	jw_kv_i64(w, "VolumeCount", s->volumes);
	jw_kv_i64(w, "FileCount", s->files);
	jw_kv_i64(w, "TotalSize", s->total);
	jw_kv_i64(w, "UsedSize", s->used);
	jw_kv_i64(w, "DeletedBytes", s->deleted);
}

void topology_write_collection_info(topology *t, json_w *w, const char *collection, bool detail,
				    uint64_t now_ns)
{
	struct coll_sum all = {0};
	struct hashmap_iter it;
	struct hashmap_node *n;
	pthread_rwlock_rdlock(&t->lock);
	jw_obj_begin(w);
	if (collection)
		jw_kv_str(w, "Collection", collection);
	hashmap_foreach(&t->volumes, it, n) {
		const struct volume *v = hashmap_entry(n, struct volume, hnode);
		if (!collection || !strcmp(v->layout->collection, collection))
			coll_add(t, &all, v, now_ns);
	}
	coll_write(w, &all);
	if (detail) {
		jw_key(w, "Layouts");
		jw_arr_begin(w);
		for (size_t i = 0; i < t->nlayouts; i++) {
			const struct layout *l = t->layouts[i];
			struct coll_sum s = {0};
			char rps[4], ttls[8];
			if (collection && strcmp(l->collection, collection))
				continue;
			hashmap_foreach(&t->volumes, it, n) {
				const struct volume *v = hashmap_entry(n, struct volume, hnode);
				if (v->layout == l)
					coll_add(t, &s, v, now_ns);
			}
			replica_placement_format(&l->rp, rps);
			ttl_format(&l->ttl, ttls);
			jw_obj_begin(w);
			jw_kv_str(w, "Collection", l->collection);
			jw_kv_str(w, "Replication", rps);
			jw_kv_str(w, "Ttl", ttls);
			coll_write(w, &s);
			jw_kv_i64(w, "WritableVolumeCount", (int64_t)l->nwritable);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	}
	jw_obj_end(w);
	pthread_rwlock_unlock(&t->lock);
}

void topology_write_html(topology *t, buf *out, uint64_t now_ns)
{
	struct hashmap_iter it;
	struct hashmap_node *n;
	int64_t max, fr;
	pthread_rwlock_rdlock(&t->lock);
	sum_slots(t, now_ns, NULL, NULL, &max, &fr);
	buf_printf(out,
		   "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>weedfs master"
		   "</title></head><body>\n<h1>weedfs master</h1>\n"
		   "<p>Volumes: %zu, slots: %" PRId64 " of which %" PRId64 " free, volume size "
		   "limit %" PRIu64 " bytes</p>\n",
		   hashmap_count(&t->volumes), max, fr, t->limit);
	buf_append_str(out, "<h2>Data nodes</h2>\n<table border=\"1\"><tr><th>Data center</th>"
			    "<th>Rack</th><th>Url</th><th>Public url</th><th>Volumes</th>"
			    "<th>Max</th><th>Free</th></tr>\n");
	for (size_t i = 0; i < t->nnodes; i++) {
		const struct dnode *d = t->nodes[i];
		if (!node_alive(t, d, now_ns))
			continue;
		buf_append_str(out, "<tr><td>");
		metrics_html_escape(out, d->dc);
		buf_append_str(out, "</td><td>");
		metrics_html_escape(out, d->rack);
		buf_append_str(out, "</td><td>");
		metrics_html_escape(out, d->url);
		buf_append_str(out, "</td><td>");
		metrics_html_escape(out, d->public_url);
		buf_printf(out, "</td><td>%zu</td><td>%d</td><td>%d</td></tr>\n", d->nvids, d->max,
			   node_free(d));
	}
	buf_append_str(out, "</table>\n<h2>Volumes</h2>\n<table border=\"1\"><tr><th>Id</th>"
			    "<th>Collection</th><th>Replication</th><th>TTL</th><th>Size</th>"
			    "<th>Files</th><th>Deleted bytes</th><th>Writable</th>"
			    "<th>Locations</th></tr>\n");
	hashmap_foreach(&t->volumes, it, n) {
		const struct volume *v = hashmap_entry(n, struct volume, hnode);
		char rps[4], ttls[8];
		const struct replica *r = &v->reps[0];
		replica_placement_format(&v->layout->rp, rps);
		ttl_format(&v->layout->ttl, ttls);
		buf_printf(out, "<tr><td>%" PRIu32 "</td><td>", v->id);
		metrics_html_escape(out, v->layout->collection);
		buf_printf(out,
			   "</td><td>%s</td><td>%s</td><td>%" PRIu64 "</td><td>%" PRIu64
			   "</td><td>%" PRIu64 "</td><td>%s</td><td>",
			   rps, ttls, r->size, r->file_count, r->deleted_bytes,
			   v->writable ? "yes" : "no");
		for (size_t i = 0; i < v->nreps; i++) {
			if (i)
				buf_append_str(out, ", ");
			metrics_html_escape(out, v->reps[i].node->url);
			if (!node_alive(t, v->reps[i].node, now_ns))
				buf_append_str(out, " (dead)");
		}
		buf_append_str(out, "</td></tr>\n");
	}
	buf_append_str(out, "</table>\n</body></html>\n");
	pthread_rwlock_unlock(&t->lock);
}

/* ---- repair ---- */

/* Order-independent hash of every replica's figures; 0 when they all agree. */
static uint64_t figures_fingerprint(const struct volume *v)
{
	uint64_t fp = 0;
	bool differ = false;
	for (size_t i = 0; i < v->nreps; i++) {
		const struct replica *r = &v->reps[i], *a = &v->reps[0];
		uint64_t fig[3] = {r->size, r->file_count, r->delete_count};
		fp += XXH3_64bits_withSeed(fig, sizeof(fig),
					   XXH3_64bits(r->node->url, strlen(r->node->url)));
		differ |= r->size != a->size || r->file_count != a->file_count ||
			  r->delete_count != a->delete_count;
	}
	return differ ? fp | 1 : 0;
}

/* True when v is due for repair now (*sync says which kind); updates its scan state. */
static bool repair_due(topology *t, struct volume *v, uint64_t now_ns, uint64_t delay_ns,
		       size_t *live, bool *sync, uint64_t *fp)
{
	size_t want = (size_t)replica_placement_copies(&v->layout->rp);
	bool confirmed = true, same_rev = true;

	*live = 0;
	for (size_t i = 0; i < v->nreps; i++) {
		*live += node_alive(t, v->reps[i].node, now_ns);
		confirmed &= v->reps[i].confirmed;
		same_rev &= v->reps[i].compact_revision == v->reps[0].compact_revision;
	}
	if (*live == 0 || v->vacuuming || v->repairing || !confirmed)
		return false;
	if (*live < want) {
		if (!v->under_since_ns)
			v->under_since_ns = now_ns;
		*sync = false;
		return now_ns - v->under_since_ns >= delay_ns;
	}
	v->under_since_ns = 0;
	v->no_target_said = false;
	if (*live != v->nreps || !same_rev)
		return false;
	/* figures only from servers heard within half the dead time: a server that just
	   died still counts as live, with its last figures */
	for (size_t i = 0; i < v->nreps; i++)
		if (now_ns - v->reps[i].node->last_ns > t->dead_ns / 2)
			return false;
	/* replicas that differ and stayed unchanged for a whole scan: not writes in flight */
	*fp = figures_fingerprint(v);
	*sync = *fp && *fp == v->figures_fp && *fp != v->settled_fp;
	v->figures_fp = *fp;
	return *sync;
}

/* A target for one more copy of v: its index in live[], or SIZE_MAX with msg. */
static size_t repair_target(topology *t, const struct volume *v, struct dnode **live, size_t nlive,
			    uint64_t now_ns, uint64_t rnd, char *msg, size_t msglen)
{
	struct place_node *cand = xcalloc(nlive ? nlive : 1, sizeof(*cand));
	size_t have[TOPO_MAX_LOCATIONS], nhave = 0, out = SIZE_MAX;

	for (size_t i = 0; i < nlive; i++) {
		cand[i].url = live[i]->url;
		cand[i].public_url = live[i]->public_url;
		cand[i].dc = live[i]->dc;
		cand[i].rack = live[i]->rack;
		cand[i].free = node_free(live[i]);
		for (size_t r = 0; r < v->nreps; r++)
			if (v->reps[r].node == live[i] && node_alive(t, live[i], now_ns))
				have[nhave++] = i;
	}
	if (placement_extend(cand, nlive, have, nhave, &v->layout->rp, rnd, &out, msg, msglen))
		out = SIZE_MAX;
	free(cand);
	return out;
}

struct topo_repair_item *topology_repair_list(topology *t, uint64_t now_ns, uint64_t delay_ns,
					      uint64_t rnd, size_t *n)
{
	struct topo_repair_item *items;
	struct hashmap_iter hi;
	struct hashmap_node *hn;
	struct dnode **live;
	size_t k = 0, nlive = 0;

	pthread_rwlock_wrlock(&t->lock);
	reap_dead(t, now_ns);
	live = xcalloc(t->nnodes ? t->nnodes : 1, sizeof(*live));
	for (size_t i = 0; i < t->nnodes; i++)
		if (node_alive(t, t->nodes[i], now_ns))
			live[nlive++] = t->nodes[i];
	items = xcalloc(MAX(hashmap_count(&t->volumes), 1), sizeof(*items));
	hashmap_foreach(&t->volumes, hi, hn) {
		struct volume *v = hashmap_entry(hn, struct volume, hnode);
		struct topo_repair_item *it = &items[k];
		size_t nl, target = SIZE_MAX;
		bool sync = false;
		uint64_t fp = 0;

		if (!repair_due(t, v, now_ns, delay_ns, &nl, &sync, &fp))
			continue;
		memset(it, 0, sizeof(*it));
		it->vid = v->id;
		it->sync = sync;
		it->fingerprint = fp;
		it->want = (size_t)replica_placement_copies(&v->layout->rp);
		for (size_t i = 0; i < v->nreps; i++)
			if (node_alive(t, v->reps[i].node, now_ns))
				copy_str(it->urls[it->nurls++], TOPO_URL_MAX, v->reps[i].node->url);
		if (!sync) {
			target = repair_target(t, v, live, nlive, now_ns, rnd++, it->msg,
					       sizeof(it->msg));
			if (target == SIZE_MAX) {
				/* said once per episode: the list runs every few seconds */
				if (v->no_target_said)
					continue;
				v->no_target_said = true;
			} else {
				live[target]->pending++;
				copy_str(it->target, TOPO_URL_MAX, live[target]->url);
			}
		}
		if (sync || target != SIZE_MAX)
			v->repairing = true;
		k++;
	}
	free(live);
	pthread_rwlock_unlock(&t->lock);
	*n = k;
	return items;
}

void topology_repair_done(topology *t, const struct topo_repair_item *it, bool ok,
			  uint64_t now_ns)
{
	struct volume *v;
	struct dnode *d = NULL;

	pthread_rwlock_wrlock(&t->lock);
	v = vol_find(t, it->vid);
	if (it->target[0]) {
		d = node_find(t, it->target);
		if (d && d->pending > 0)
			d->pending--;
	}
	if (v) {
		v->repairing = false;
		if (it->sync)
			v->settled_fp = ok ? it->fingerprint : 0;
		if (ok && d && !vol_replica(v, d) && v->nreps < TOPO_MAX_LOCATIONS) {
			/* the copy counts at once; the target's heartbeat confirms it */
			struct replica *r = &v->reps[v->nreps++];
			memset(r, 0, sizeof(*r));
			r->node = d;
			r->added_ns = now_ns;
			r->version = 3;
			vid_array_add(&d->vids, &d->nvids, &d->capvids, v->id);
			vol_refresh(t, v);
		}
	}
	pthread_rwlock_unlock(&t->lock);
}
