/*
 * DESIGN: the cluster-changing endpoints (/vol/grow, /vol/vacuum,
 * /col/delete) validate on the loop thread, then do their outbound calls to
 * volume servers on a pool worker and answer through http_req_defer. Vacuum
 * runs are serialised by a mutex; a volume being vacuumed is kept out of the
 * writable lists so no new key is assigned into it meanwhile.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http_client.h"
#include "json.h"
#include "log.h"
#include "server/master/master_int.h"
#include "util.h"

#define GROW_MAX_COUNT    1000
#define ADMIN_TIMEOUT_MS  30000
#define VACUUM_TIMEOUT_MS (30 * 60 * 1000)

struct admin_ctx {
	struct master *m;
	http_req *req;
	/* grow */
	int created;
	wfs_err err;
	char msg[512];
	/* vacuum */
	double threshold;
	/* col/delete */
	char collection[TOPO_NAME_MAX];
};

static struct admin_ctx *admin_ctx_new(struct master *m, http_req *req)
{
	struct admin_ctx *c = xcalloc(1, sizeof(*c));
	c->m = m;
	c->req = req;
	return c;
}

/*
 * Calls a volume server admin endpoint. True on a 2xx reply; then *reply (if
 * non-NULL) gets the parsed JSON body or NULL when it is not JSON.
 */
static bool admin_call(const char *method, const char *url, const char *pq, long timeout_ms,
		       yajl_val *reply, char *msg, size_t msglen)
{
	struct http_result res;
	char *full = xasprintf("http://%s%s", url, pq);
	bool ok = false;
	wfs_err err;

	if (reply)
		*reply = NULL;
	http_result_init(&res);
	err = http_request(method, full, NULL, NULL, 0, timeout_ms, &res);
	if (err) {
		snprintf(msg, msglen, "%s %s: %s", method, full, wfs_strerror(err));
	} else if (res.status < 200 || res.status > 299) {
		snprintf(msg, msglen, "%s %s: status %d: %.200s", method, full, res.status,
			 res.body.data ? res.body.data : "");
	} else {
		ok = true;
		if (reply && res.body.len)
			*reply = json_parse(res.body.data, res.body.len, NULL, 0);
	}
	http_result_free(&res);
	free(full);
	return ok;
}

static bool admin_ok(const char *method, const char *url, const char *pq, long timeout_ms,
		     char *msg, size_t msglen)
{
	return admin_call(method, url, pq, timeout_ms, NULL, msg, msglen);
}

/* ---- /vol/grow ---- */

static void grow_answer(http_req *req, void *arg)
{
	struct admin_ctx *c = arg;
	if (c->created > 0) {
		buf out = BUF_INIT;
		json_w *w = jw_new(&out, master_pretty(req));
		jw_obj_begin(w);
		jw_kv_i64(w, "count", c->created);
		jw_obj_end(w);
		jw_free(w);
		http_resp_send_json(req, 200, &out);
		buf_free(&out);
	} else {
		http_resp_error(req, growth_error_status(c->err), "%s", c->msg);
	}
	free(c);
}

static void grow_done(void *arg, int created, wfs_err err, const char *msg)
{
	struct admin_ctx *c = arg;
	c->created = created;
	c->err = err;
	snprintf(c->msg, sizeof(c->msg), "%s", msg ? msg : "");
	http_req_defer(c->req, grow_answer, c);
}

void master_h_grow(struct master *m, http_req *req)
{
	const char *v = http_req_query(req, "count");
	struct assign_params p;
	struct topo_layout_key k;
	struct place_prefs pr;
	char msg[512];
	uint64_t count;

	if (!v || !*v) {
		http_resp_error(req, 400, "count is required");
		return;
	}
	if (!parse_u64(v, &count) || count == 0 || count > GROW_MAX_COUNT) {
		http_resp_error(req, 400, "invalid count \"%.24s\" (want 1..%d)", v,
				GROW_MAX_COUNT);
		return;
	}
	if (!assign_params_parse(m, req, &p, msg, sizeof(msg))) {
		http_resp_error(req, 400, "%s", msg);
		return;
	}
	if (!master_warm(m)) {
		/* a fresh leader places volumes only once it has heard its servers */
		http_resp_header(req, "Retry-After", "1");
		http_resp_error(req, 503, "this master became the leader moments ago and is still "
				"hearing from the volume servers; retry");
		return;
	}
	k.collection = p.collection;
	k.rp = p.rp;
	k.ttl = p.ttl;
	pr.dc = p.dc;
	pr.rack = p.rack;
	pr.node = p.node;
	growth_request(m->growth, &k, &pr, (int)count, p.preallocate, false, grow_done,
		       admin_ctx_new(m, req));
}

/* ---- /vol/vacuum ---- */

static void vacuum_answer(http_req *req, void *arg)
{
	struct admin_ctx *c = arg;
	buf out = BUF_INIT;
	json_w *w = jw_new(&out, master_pretty(req));
	topology_write_dir_status(c->m->topo, w, time_mono_ns());
	jw_free(w);
	http_resp_send_json(req, 200, &out);
	buf_free(&out);
	free(c);
}

/* Vacuums one volume if every live replica is above the threshold. Worker thread. */
static void vacuum_one(struct master *m, const struct topo_vacuum_item *it, double threshold)
{
	char q[96], msg[512];
	size_t compacted = 0, committed = 0;
	bool all = true;

	for (size_t i = 0; i < it->nurls && all; i++) {
		double ratio = 0;
		yajl_val v = NULL;
		snprintf(q, sizeof(q), "/admin/vacuum/check?volume=%" PRIu32, it->vid);
		if (!admin_call("GET", it->urls[i], q, ADMIN_TIMEOUT_MS, &v, msg, sizeof(msg))) {
			log_warn("vacuum check of volume %" PRIu32 " failed: %s", it->vid, msg);
			all = false;
		} else if (!json_get_double(v, "garbageRatio", &ratio) || !(ratio > threshold)) {
			all = false;
		}
		yajl_tree_free(v);
	}
	if (!all)
		return;
	log_info("vacuuming volume %" PRIu32 " on %zu server(s)", it->vid, it->nurls);
	topology_set_vacuuming(m->topo, it->vid, true);
	snprintf(q, sizeof(q), "/admin/vacuum/compact?volume=%" PRIu32, it->vid);
	for (; compacted < it->nurls; compacted++)
		if (!admin_ok("POST", it->urls[compacted], q, VACUUM_TIMEOUT_MS, msg, sizeof(msg)))
			break;
	if (compacted == it->nurls) {
		snprintf(q, sizeof(q), "/admin/vacuum/commit?volume=%" PRIu32, it->vid);
		for (; committed < it->nurls; committed++)
			if (!admin_ok("POST", it->urls[committed], q, VACUUM_TIMEOUT_MS, msg,
				      sizeof(msg)))
				break;
	}
	if (committed < it->nurls) {
		char ignored[256];
		log_warn("vacuum of volume %" PRIu32 " failed: %s", it->vid, msg);
		snprintf(q, sizeof(q), "/admin/vacuum/cleanup?volume=%" PRIu32, it->vid);
		for (size_t i = committed; i < it->nurls; i++)
			admin_ok("POST", it->urls[i], q, ADMIN_TIMEOUT_MS, ignored,
				 sizeof(ignored));
	}
	topology_set_vacuuming(m->topo, it->vid, false);
}

void master_vacuum_all(struct master *m, double threshold)
{
	struct topo_vacuum_item *items;
	size_t n;

	if (!master_is_leader(m))
		return; /* only the leader vacuums (a follower's topology is empty anyway) */
	pthread_mutex_lock(&m->vacuum_lock);
	items = topology_vacuum_list(m->topo, time_mono_ns(), &n);
	for (size_t i = 0; i < n && master_is_leader(m); i++)
		vacuum_one(m, &items[i], threshold);
	free(items);
	pthread_mutex_unlock(&m->vacuum_lock);
}

static void vacuum_run(void *arg)
{
	struct admin_ctx *c = arg;
	master_vacuum_all(c->m, c->threshold);
	http_req_defer(c->req, vacuum_answer, c);
}

void master_h_vacuum(struct master *m, http_req *req)
{
	const char *v = http_req_query(req, "garbageThreshold");
	double t = m->opts.garbage_threshold;
	struct admin_ctx *c;

	if (v && *v) {
		char *end;
		t = strtod(v, &end);
		if (*end || !(t >= 0 && t <= 1)) {
			http_resp_error(req, 400, "invalid garbageThreshold \"%.24s\" (want 0..1)",
					v);
			return;
		}
	}
	c = admin_ctx_new(m, req);
	c->threshold = t;
	if (!master_submit(m, vacuum_run, c)) {
		free(c);
		http_resp_error(req, 503, "master is shutting down");
	}
}

/* ---- /col/delete ---- */

static void col_delete_answer(http_req *req, void *arg)
{
	struct admin_ctx *c = arg;
	if (c->err)
		http_resp_error(req, 500, "%s", c->msg);
	else
		http_resp_send(req, 204, NULL, 0);
	free(c);
}

static void col_delete_run(void *arg)
{
	struct admin_ctx *c = arg;
	char q[TOPO_NAME_MAX + 48];
	size_t n;
	char **urls = topology_collection_nodes(c->m->topo, c->collection, time_mono_ns(), &n);

	snprintf(q, sizeof(q), "/admin/delete_collection?collection=%s", c->collection);
	for (size_t i = 0; i < n; i++) {
		if (!admin_ok("POST", urls[i], q, ADMIN_TIMEOUT_MS, c->msg, sizeof(c->msg)))
			c->err = WFS_EUNAVAIL;
		free(urls[i]);
	}
	free(urls);
	/* Volumes still held by a server that failed come back with its next heartbeat. */
	topology_remove_collection(c->m->topo, c->collection);
	if (!c->err)
		log_info("deleted collection \"%s\" on %zu server(s)", c->collection, n);
	http_req_defer(c->req, col_delete_answer, c);
}

void master_h_col_delete(struct master *m, http_req *req)
{
	const char *coll = http_req_query(req, "collection");
	struct admin_ctx *c;

	if (!coll || !*coll) {
		http_resp_error(req, 400, "collection is required");
		return;
	}
	if (!master_collection_valid(coll)) {
		http_resp_error(req, 400, "invalid collection name \"%.64s\"", coll);
		return;
	}
	if (!topology_has_collection(m->topo, coll)) {
		http_resp_error(req, 400, "collection %s does not exist", coll);
		return;
	}
	c = admin_ctx_new(m, req);
	snprintf(c->collection, sizeof(c->collection), "%s", coll);
	if (!master_submit(m, col_delete_run, c)) {
		free(c);
		http_resp_error(req, 503, "master is shutting down");
	}
}
