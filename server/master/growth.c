/*
 * DESIGN: a job holds the layout, the preferences and a list of waiters. Jobs
 * that may be shared sit in a list keyed by "collection/replication/ttl/dc/
 * rack/node" until they finish; a new shareable request for the same key
 * just adds a waiter. The job runs on the pool: for each volume it plans the
 * servers (reserving slots in the topology), allocates a persisted volume id,
 * asks every server to create the volume, and either records the volume in
 * the topology or deletes the partial copies. Waiters are told afterwards,
 * outside every lock.
 */
#include "config.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/rand.h>
#include "http_client.h"
#include "log.h"
#include "server/master/growth.h"
#include "util.h"

#define GROW_TIMEOUT_MS 60000

struct waiter {
	growth_done_fn fn;
	void *arg;
	struct waiter *next;
};

struct job {
	growth *g;
	char *collection, *dc, *rack, *node, *id;
	struct topo_layout_key key;
	struct place_prefs prefs;
	int count;
	uint64_t preallocate;
	bool shared;
	struct waiter *waiters; /* protected by g->lock */
	struct job *next;       /* protected by g->lock: in g->inflight */
};

struct growth {
	topology *topo;
	sequence *seq;
	pool *pool;
	uint64_t preallocate;
	pthread_mutex_t lock;
	struct job *inflight; /* protected by lock: shareable jobs in progress */
	bool stopping;        /* protected by lock */
};

growth *growth_new(topology *t, sequence *s, pool *p, uint64_t preallocate)
{
	growth *g = xcalloc(1, sizeof(*g));
	g->topo = t;
	g->seq = s;
	g->pool = p;
	g->preallocate = preallocate;
	pthread_mutex_init(&g->lock, NULL);
	return g;
}

void growth_free(growth *g)
{
	if (!g)
		return;
	pthread_mutex_destroy(&g->lock);
	free(g);
}

void growth_shutdown(growth *g)
{
	pthread_mutex_lock(&g->lock);
	g->stopping = true;
	pthread_mutex_unlock(&g->lock);
}

int growth_default_count(const struct replica_placement *rp)
{
	switch (replica_placement_copies(rp)) {
	case 1:
		return 7;
	case 2:
		return 6;
	case 3:
		return 3;
	default:
		return 1;
	}
}

static void job_free(struct job *j)
{
	free(j->collection);
	free(j->dc);
	free(j->rack);
	free(j->node);
	free(j->id);
	free(j);
}

static uint64_t rnd64(void)
{
	uint64_t v = 0;
	if (RAND_bytes((unsigned char *)&v, sizeof(v)) != 1)
		v = time_mono_ns();
	return v;
}

/* POSTs to a volume server's admin endpoint; msg gets the failure. */
static wfs_err admin_post(const char *url, const char *path_query, char *msg, size_t msglen)
{
	struct http_result res;
	char *full = xasprintf("http://%s%s", url, path_query);
	wfs_err err;
	http_result_init(&res);
	err = http_request("POST", full, NULL, NULL, 0, GROW_TIMEOUT_MS, &res);
	if (err)
		snprintf(msg, msglen, "%s: %s", full, wfs_strerror(err));
	else if (res.status < 200 || res.status > 299) {
		snprintf(msg, msglen, "%s: status %d: %.200s", full, res.status,
			 res.body.data ? res.body.data : "");
		err = WFS_EUNAVAIL;
	}
	http_result_free(&res);
	free(full);
	return err;
}

/* Creates one volume. Returns WFS_OK, or an error with msg set. */
static wfs_err grow_one(struct job *j, char *msg, size_t msglen)
{
	growth *g = j->g;
	char urls[PLACEMENT_MAX_COPIES][TOPO_URL_MAX], rps[4], ttls[8], q[512];
	size_t nurls, ok = 0;
	uint32_t vid = 0;
	wfs_err err;

	err = topology_plan_volume(g->topo, &j->key, &j->prefs, time_mono_ns(), rnd64(), urls,
				   &nurls, msg, msglen);
	if (err)
		return err;
	err = sequence_next_volume_id(g->seq, &vid);
	if (err) {
		snprintf(msg, msglen, "could not allocate a volume id: %s", wfs_strerror(err));
		goto out;
	}
	replica_placement_format(&j->key.rp, rps);
	ttl_format(&j->key.ttl, ttls);
	snprintf(q, sizeof(q),
		 "/admin/assign_volume?volume=%" PRIu32 "&collection=%s&replication=%s&ttl=%s"
		 "&preallocate=%" PRIu64,
		 vid, j->collection, rps, ttls, j->preallocate);
	for (ok = 0; ok < nurls; ok++) {
		err = admin_post(urls[ok], q, msg, msglen);
		if (err)
			break;
	}
	if (err) {
		/* Undo the copies already made so no half-replicated volume lingers. */
		char dq[64], ignored[256];
		snprintf(dq, sizeof(dq), "/admin/volume/delete?volume=%" PRIu32, vid);
		for (size_t i = 0; i < ok; i++)
			admin_post(urls[i], dq, ignored, sizeof(ignored));
		log_warn("growing volume %" PRIu32 " failed: %s", vid, msg);
	} else {
		log_info("grew volume %" PRIu32
			 " collection \"%s\" replication %s ttl \"%s\" on %zu "
			 "server(s), first %s",
			 vid, j->collection, rps, ttls, nurls, urls[0]);
	}
out:
	topology_plan_done(g->topo, &j->key, vid, urls, nurls, !err, time_mono_ns());
	return err;
}

/*
 * A master that has just started (or lost every server) may get an assignment
 * before the first heartbeat arrives: wait up to one dead interval for a
 * server to join rather than fail the cold start. False if none came.
 */
static bool wait_for_a_server(growth *g)
{
	uint64_t deadline = time_mono_ns() + topology_dead_ns(g->topo);
	while (topology_live_nodes(g->topo, time_mono_ns()) == 0) {
		bool stopping;
		pthread_mutex_lock(&g->lock);
		stopping = g->stopping;
		pthread_mutex_unlock(&g->lock);
		if (stopping || time_mono_ns() > deadline)
			return false;
		usleep(20 * 1000);
	}
	return true;
}

static void job_run(void *arg)
{
	struct job *j = arg;
	growth *g = j->g;
	char msg[512] = "";
	int created = 0;
	wfs_err err = WFS_OK;
	struct waiter *w, *next;

	wait_for_a_server(g);
	for (int i = 0; i < j->count; i++) {
		err = grow_one(j, msg, sizeof(msg));
		if (err)
			break;
		created++;
	}
	if (created > 0)
		err = WFS_OK;
	pthread_mutex_lock(&g->lock);
	if (j->shared) {
		struct job **pp = &g->inflight;
		while (*pp && *pp != j)
			pp = &(*pp)->next;
		if (*pp)
			*pp = j->next;
	}
	w = j->waiters;
	j->waiters = NULL;
	pthread_mutex_unlock(&g->lock);
	for (; w; w = next) {
		next = w->next;
		w->fn(w->arg, created, err, msg);
		free(w);
	}
	job_free(j);
}

static char *opt_dup(const char *s) { return xstrdup(s ? s : ""); }

void growth_request(growth *g, const struct topo_layout_key *key, const struct place_prefs *prefs,
		    int count, int64_t preallocate, bool share, growth_done_fn done, void *arg)
{
	static const struct place_prefs none = {NULL, NULL, NULL};
	struct waiter *w = xcalloc(1, sizeof(*w));
	struct job *j;
	char rps[4], ttls[8];
	char *id;

	if (!prefs)
		prefs = &none;
	w->fn = done;
	w->arg = arg;
	replica_placement_format(&key->rp, rps);
	ttl_format(&key->ttl, ttls);
	id = xasprintf("%s/%s/%s/%s/%s/%s/%" PRId64, key->collection ? key->collection : "", rps,
		       ttls, prefs->dc ? prefs->dc : "", prefs->rack ? prefs->rack : "",
		       prefs->node ? prefs->node : "", preallocate);
	pthread_mutex_lock(&g->lock);
	if (g->stopping) {
		pthread_mutex_unlock(&g->lock);
		free(id);
		free(w);
		done(arg, 0, WFS_EUNAVAIL, "master is shutting down");
		return;
	}
	if (share)
		for (j = g->inflight; j; j = j->next)
			if (!strcmp(j->id, id)) {
				w->next = j->waiters;
				j->waiters = w;
				pthread_mutex_unlock(&g->lock);
				free(id);
				return;
			}
	j = xcalloc(1, sizeof(*j));
	j->g = g;
	j->id = id;
	j->collection = opt_dup(key->collection);
	j->dc = opt_dup(prefs->dc);
	j->rack = opt_dup(prefs->rack);
	j->node = opt_dup(prefs->node);
	j->key = *key;
	j->key.collection = j->collection;
	j->prefs.dc = j->dc;
	j->prefs.rack = j->rack;
	j->prefs.node = j->node;
	j->count = count > 0 ? count : growth_default_count(&key->rp);
	j->preallocate = preallocate >= 0 ? (uint64_t)preallocate : g->preallocate;
	j->shared = share;
	j->waiters = w;
	if (share) {
		j->next = g->inflight;
		g->inflight = j;
	}
	/* Submitting under the lock keeps shutdown (which takes it) from racing pool_free. */
	pool_submit(g->pool, job_run, j);
	pthread_mutex_unlock(&g->lock);
}

int growth_error_status(wfs_err err)
{
	return err == WFS_ENOSPC ? 507 : err == WFS_EIO ? 500 : 503;
}
