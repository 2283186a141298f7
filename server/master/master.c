/*
 * DESIGN: the master is one HTTP server whose handlers run on its loop
 * threads and only touch in-memory state (topology rwlock, sequence mutex):
 * assignments, lookups, redirects, status and heartbeats finish on the loop.
 * Anything that talks to volume servers (growth, /submit uploads, vacuum,
 * collection deletion) runs on a worker pool and hands the response back
 * with http_req_defer. A thread vacuums every 15 minutes with
 * -garbageThreshold, as SeaweedFS does. Shutdown: refuse new background work,
 * stop the vacuum thread, drain the pool (its jobs defer their answers into
 * still-running loops), then stop HTTP.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <openssl/rand.h>
#include "client/master_list.h"
#include "daemon.h"
#include "flags.h"
#include "json.h"
#include "security.h"
#include "log.h"
#include "server/master/master_int.h"
#include "server/master/parse.h"
#include "util.h"

#define HEARTBEAT_MAX_BODY (64u << 20)

void master_opts_default(struct master_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ip = "127.0.0.1";
	o->port = 9333;
	o->mdir = "/tmp";
	o->volume_size_limit_mb = 30000;
	o->default_replication = "000";
	o->garbage_threshold = 0.3;
	o->pulse_seconds = 5;
	o->volume_preallocate = false;
	o->threads = 0;
	o->repair_delay_seconds = 180;
	o->repair_mbps = 64;
	o->peers = "";
	o->postgres_dsn = "";
	o->lease_seconds = 5;
}

bool master_is_leader(struct master *m) { return !m->leader || leader_is_me(m->leader, NULL); }

uint64_t master_leader_age_ns(struct master *m)
{
	return m->leader ? leader_age_ns(m->leader) : UINT64_MAX;
}

bool master_warm(struct master *m)
{
	return master_leader_age_ns(m) >=
	       (uint64_t)MASTER_WARMUP_PULSES * (uint64_t)m->opts.pulse_seconds * 1000000000ull;
}

void master_known_leader(struct master *m, char *out, size_t outlen)
{
	if (master_is_leader(m)) {
		snprintf(out, outlen, "%s", m->self);
		return;
	}
	leader_current(m->leader, out, outlen);
	if (!strcmp(out, m->self))
		out[0] = '\0'; /* our own lapsed lease: no leader known until the lease says */
}

bool master_pretty(http_req *req)
{
	const char *p = http_req_query(req, "pretty");
	return p && *p;
}

static __thread unsigned char rand_buf[256];
static __thread size_t rand_pos = sizeof(rand_buf);

static void rand_fill(void *out, size_t n)
{
	if (rand_pos + n > sizeof(rand_buf)) {
		if (RAND_bytes(rand_buf, sizeof(rand_buf)) != 1) {
			/* OpenSSL's DRBG failing is not expected; keep cookies unpredictable-ish.
			 */
			uint64_t s = time_now_ns() ^ (uint64_t)(uintptr_t)&s;
			for (size_t i = 0; i < sizeof(rand_buf); i++) {
				s = s * 6364136223846793005ull + 1442695040888963407ull;
				rand_buf[i] = (unsigned char)(s >> 56);
			}
		}
		rand_pos = 0;
	}
	memcpy(out, rand_buf + rand_pos, n);
	rand_pos += n;
}

uint64_t master_rand64(void)
{
	uint64_t v;
	rand_fill(&v, sizeof(v));
	return v;
}

uint32_t master_rand32(void)
{
	uint32_t v;
	rand_fill(&v, sizeof(v));
	return v;
}

bool master_submit(struct master *m, pool_fn fn, void *arg)
{
	bool ok;
	pthread_mutex_lock(&m->lock);
	ok = !m->stopping;
	if (ok)
		pool_submit(m->pool, fn, arg);
	pthread_mutex_unlock(&m->lock);
	return ok;
}

/* ---- heartbeat ---- */

static void heartbeat_body(http_req *req, const char *data, size_t len, void *arg)
{
	struct master *m = arg;
	struct heartbeat_msg hm;
	char msg[256];
	uint32_t max_vid = 0;
	wfs_err err;
	buf out = BUF_INIT;
	json_w *w;

	if (!heartbeat_parse(data, len, http_req_peer(req), &hm, msg, sizeof(msg))) {
		http_resp_error(req, 400, "%s", msg);
		return;
	}
	/* the keys first: once the topology shows the server's volumes, an assignment may
	   reserve keys, and they must start above the server's largest */
	err = hm.hb.max_file_key ? sequence_observe_key(m->seq, hm.hb.max_file_key) : WFS_OK;
	if (!err)
		err = topology_heartbeat(m->topo, &hm.hb, time_mono_ns(), &max_vid);
	if (!err && max_vid)
		err = sequence_observe_volume_id(m->seq, max_vid);
	if (err) {
		http_resp_error(req, wfs_err_http_status(err), "heartbeat: %s", wfs_strerror(err));
		goto out;
	}
	log_debug("heartbeat from %s: %zu volumes, max %d", hm.url, hm.hb.nvols, hm.hb.max_volumes);
	w = jw_new(&out, false);
	jw_obj_begin(w);
	jw_kv_u64(w, "volumeSizeLimit", m->volume_size_limit);
	jw_kv_i64(w, "pulseSeconds", m->opts.pulse_seconds);
	jw_kv_str(w, "leader", m->self);
	jw_obj_end(w);
	jw_free(w);
	http_resp_send_json(req, 200, &out);
out:
	buf_free(&out);
	heartbeat_msg_free(&hm);
}

/* ---- status ---- */

typedef void (*status_fn)(topology *t, json_w *w, uint64_t now_ns);

static void send_status(struct master *m, http_req *req, status_fn fn)
{
	buf out = BUF_INIT;
	json_w *w = jw_new(&out, master_pretty(req));
	fn(m->topo, w, time_mono_ns());
	jw_free(w);
	http_resp_send_json(req, 200, &out);
	buf_free(&out);
}

static void h_collection_info(struct master *m, http_req *req)
{
	const char *coll = http_req_query(req, "collection");
	const char *detail = http_req_query(req, "detail");
	bool d = false;
	buf out = BUF_INIT;
	json_w *w;
	if (detail && *detail && !parse_bool(detail, &d)) {
		http_resp_error(req, 400, "invalid detail \"%s\"", detail);
		return;
	}
	if (coll && !master_collection_valid(coll)) {
		http_resp_error(req, 400, "invalid collection name");
		return;
	}
	w = jw_new(&out, master_pretty(req));
	topology_write_collection_info(m->topo, w, coll, d, time_mono_ns());
	jw_free(w);
	http_resp_send_json(req, 200, &out);
	buf_free(&out);
}

static void h_ui(struct master *m, http_req *req)
{
	buf out = BUF_INIT;
	topology_write_html(m->topo, &out, time_mono_ns());
	http_resp_header(req, "Content-Type", "text/html; charset=utf-8");
	http_resp_send(req, 200, out.data, out.len);
	buf_free(&out);
}

/* GET /cluster/status, as SeaweedFS answers it (a single master: itself the leader, no
   peers; with -peers: the lease's holder and the other masters). */
static void h_cluster_status(struct master *m, http_req *req)
{
	buf out = BUF_INIT;
	json_w *w = jw_new(&out, master_pretty(req));
	char lead[256];

	master_known_leader(m, lead, sizeof(lead));
	jw_obj_begin(w);
	jw_kv_bool(w, "IsLeader", master_is_leader(m));
	jw_kv_str(w, "Leader", lead);
	jw_key(w, "Peers");
	jw_arr_begin(w);
	for (size_t i = 0; i < m->npeers; i++)
		jw_str(w, m->peers[i]);
	jw_arr_end(w);
	jw_obj_end(w);
	jw_free(w);
	http_resp_send_json(req, 200, &out);
	buf_free(&out);
}

static void h_metrics(http_req *req)
{
	buf out = BUF_INIT;
	metrics_write(&out);
	http_resp_header(req, "Content-Type", METRICS_CONTENT_TYPE);
	http_resp_send(req, 200, out.data, out.len);
	buf_free(&out);
}

static bool method_is(http_req *req, bool get, bool post)
{
	enum http_method me = http_req_method(req);
	if ((get && (me == HTTP_GET || me == HTTP_HEAD)) || (post && me == HTTP_POST))
		return true;
	http_resp_error(req, 405, "method %s not allowed", http_req_method_str(req));
	return false;
}

/* The metrics' route labels; anything else (file-id redirects) is "other". */
static const char *const master_routes[] = {
	"/dir/assign",	"/dir/lookup",	    "/heartbeat",  "/submit",	      "/dir/status",
	"/vol/status",	"/collection/info", "/col/delete", "/vol/grow",	      "/vol/vacuum",
	"/healthz",	"/readyz",	    "/",	   "/ui/index.html", "/metrics",
	"/cluster/status", "/vol/ec/lookup", NULL};

static void master_handle(http_req *req, void *ctx)
{
	struct master *m = ctx;
	const char *p = http_req_path(req);

	http_req_set_route(req, http_route_of(master_routes, p));
	/* a follower answers only its own status; the rest is the leader's (forward.c) */
	if (m->leader && strcmp(p, "/cluster/status") && strcmp(p, "/metrics") &&
	    strcmp(p, "/healthz") && strcmp(p, "/readyz") && !leader_is_me(m->leader, NULL)) {
		master_forward(m, req);
		return;
	}
	if (!strcmp(p, "/dir/assign")) {
		if (method_is(req, true, true))
			master_h_assign(m, req);
	} else if (!strcmp(p, "/dir/lookup")) {
		if (method_is(req, true, true))
			master_h_lookup(m, req);
	} else if (!strcmp(p, "/vol/ec/lookup")) {
		if (method_is(req, true, false))
			master_h_ec_lookup(m, req);
	} else if (!strcmp(p, "/heartbeat")) {
		if (method_is(req, false, true))
			http_req_read_body(req, HEARTBEAT_MAX_BODY, heartbeat_body, m);
	} else if (!strcmp(p, "/submit")) {
		if (method_is(req, false, true))
			master_h_submit(m, req);
	} else if (!strcmp(p, "/dir/status")) {
		if (method_is(req, true, true))
			send_status(m, req, topology_write_dir_status);
	} else if (!strcmp(p, "/vol/status")) {
		if (method_is(req, true, true))
			send_status(m, req, topology_write_vol_status);
	} else if (!strcmp(p, "/collection/info")) {
		if (method_is(req, true, true))
			h_collection_info(m, req);
	} else if (!strcmp(p, "/col/delete")) {
		if (method_is(req, true, true))
			master_h_col_delete(m, req);
	} else if (!strcmp(p, "/vol/grow")) {
		if (method_is(req, true, true))
			master_h_grow(m, req);
	} else if (!strcmp(p, "/vol/vacuum")) {
		if (method_is(req, true, true))
			master_h_vacuum(m, req);
	} else if (!strcmp(p, "/metrics")) {
		if (method_is(req, true, false))
			h_metrics(req);
	} else if (!strcmp(p, "/cluster/status")) {
		if (method_is(req, true, false))
			h_cluster_status(m, req);
	} else if (admin_locks_handle(m->locks, req, p)) {
		/* answered: /admin/lease, /admin/release */
	} else if (!strcmp(p, "/healthz") || !strcmp(p, "/readyz")) {
		if (method_is(req, true, false))
			http_resp_send(req, 200, "OK\n", 3);
	} else if (!strcmp(p, "/") || !strcmp(p, "/ui/index.html")) {
		if (method_is(req, true, false))
			h_ui(m, req);
	} else if (method_is(req, true, false)) {
		master_h_redirect(m, req);
	}
}

/* ---- metrics ---- */

static void master_collect(metric_emit *e, void *ctx)
{
	struct master *m = ctx;
	struct topo_counts c;
	topology_counts(m->topo, time_mono_ns(), &c);
	metric_emit_sample(e, "weedfs_master_volumes", "Volumes the master knows of.", METRIC_GAUGE,
			   (double)c.volumes, NULL);
	metric_emit_sample(e, "weedfs_master_data_nodes", "Live volume servers.", METRIC_GAUGE,
			   (double)c.nodes, NULL);
	metric_emit_sample(e, "weedfs_master_volume_slots", "Volume slots of live servers.",
			   METRIC_GAUGE, (double)c.max_slots, NULL);
	metric_emit_sample(e, "weedfs_master_free_volume_slots",
			   "Free volume slots of live servers.", METRIC_GAUGE,
			   (double)c.free_slots, NULL);
	metric_emit_sample(e, "weedfs_master_is_leader", "1 while this master is the leader.",
			   METRIC_GAUGE, master_is_leader(m) ? 1 : 0, NULL);
}

/* The status page on -metricsPort: the cluster status (JSON) or the main page (HTML). */
static void master_page(buf *out, bool json, void *ctx)
{
	struct master *m = ctx;
	char lead[256];
	json_w *w;
	if (!json) {
		topology_write_html(m->topo, out, time_mono_ns());
		return;
	}
	w = jw_new(out, false);
	jw_obj_begin(w);
	master_known_leader(m, lead, sizeof(lead));
	jw_kv_bool(w, "IsLeader", master_is_leader(m));
	jw_kv_str(w, "Leader", lead);
	jw_kv_str(w, "Version", PACKAGE_VERSION);
	jw_kv_double(w, "UptimeSeconds", metrics_uptime_seconds());
	jw_obj_end(w);
	jw_free(w);
}

static bool master_metrics_start(struct master *m, wfs_err *err)
{
	metrics_enable(); /* the master's own port serves /metrics */
	m->m_assigns = metric_at(metric_counter("weedfs_master_assigns_total",
						"Successful /dir/assign answers.", NULL));
	m->collector = metrics_collector_add(master_collect, m);
	if (!m->opts.metrics_port)
		return true;
	m->metrics = metrics_server_start(m->ip, m->opts.metrics_port, master_page, m, err);
	return m->metrics != NULL;
}

/* ---- lifecycle ---- */

bool master_sleep(struct master *m, int seconds)
{
	struct timespec ts;
	bool stop;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += seconds;
	pthread_mutex_lock(&m->lock);
	while (!m->stopping && pthread_cond_timedwait(&m->stop_cond, &m->lock, &ts) != ETIMEDOUT)
		;
	stop = m->stopping;
	pthread_mutex_unlock(&m->lock);
	return !stop;
}

/* Runs vacuum every MASTER_VACUUM_INTERVAL_SEC with -garbageThreshold until stopped. */
static void *vacuum_thread_main(void *arg)
{
	struct master *m = arg;

	while (master_sleep(m, MASTER_VACUUM_INTERVAL_SEC))
		master_vacuum_all(m, m->opts.garbage_threshold);
	return NULL;
}

/* Checks -peers, -postgres.dsn and -leaseSeconds; false after logging what is wrong. */
static bool ha_check(struct master *m, const struct master_opts *o)
{
	char msg[512];
	master_list *ml;
	bool ha = o->peers && *o->peers, dsn = o->postgres_dsn && *o->postgres_dsn;

	if (!ha && dsn) {
		log_error("-postgres.dsn needs -peers (the masters that share it)");
		return false;
	}
	if (!ha)
		return true;
	if (!dsn) {
		log_error("-peers needs -postgres.dsn (the database holding the leader lease)");
		return false;
	}
	if (!(o->lease_seconds >= 0.3 && o->lease_seconds <= 600)) {
		log_error("invalid -leaseSeconds %g (want 0.3..600)", o->lease_seconds);
		return false;
	}
	ml = master_list_new(o->peers, msg, sizeof(msg));
	if (!ml) {
		log_error("invalid -peers: %s", msg);
		return false;
	}
	m->peers = xcalloc(master_list_count(ml), sizeof(*m->peers));
	for (size_t i = 0; i < master_list_count(ml); i++)
		m->peers[m->npeers++] = xstrdup(master_list_at(ml, i));
	master_list_free(ml);
	return true;
}

/*
 * The file sequence in -mdir for a single master; with -peers, the lease and the
 * shared sequence in PostgreSQL (self is known once the port is bound).
 */
static bool open_sequence(struct master *m, const struct master_opts *o, wfs_err *err)
{
	size_t j = 0;
	bool listed = false;

	if (!m->npeers) {
		m->seq = sequence_open(m->mdir, err);
		return m->seq != NULL;
	}
	for (size_t i = 0; i < m->npeers; i++) {
		if (!strcmp(m->peers[i], m->self)) {
			listed = true;
			free(m->peers[i]);
			continue;
		}
		m->peers[j++] = m->peers[i];
	}
	m->npeers = j;
	if (!listed)
		log_warn("-peers does not list this master (%s); the others may not know it", m->self);
	m->leader = leader_start(o->postgres_dsn, m->self,
				 (uint64_t)(o->lease_seconds * 1e9), err);
	if (!m->leader)
		return false;
	m->seq = sequence_open_pg(o->postgres_dsn, m->leader, err);
	if (!m->seq)
		return false;
	log_info("master %s: one of %zu masters, lease %.3g s in PostgreSQL", m->self, m->npeers + 1,
		 o->lease_seconds);
	return true;
}

struct master *master_start(const struct master_opts *o, wfs_err *err)
{
	struct master *m = xcalloc(1, sizeof(*m));
	struct http_server_opts ho = {0};

	m->opts = *o;
	m->ip = xstrdup(o->ip && *o->ip ? o->ip : "127.0.0.1");
	m->mdir = xstrdup(o->mdir && *o->mdir ? o->mdir : "/tmp");
	m->default_replication = xstrdup(o->default_replication ? o->default_replication : "");
	m->opts.ip = m->ip;
	m->opts.mdir = m->mdir;
	m->opts.default_replication = m->default_replication;
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->vacuum_lock, NULL);
	{
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&m->stop_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	*err = WFS_EINVAL;
	if (replica_placement_parse(m->default_replication, &m->default_rp)) {
		log_error("invalid -defaultReplication \"%s\"", m->default_replication);
		goto fail;
	}
	if (o->volume_size_limit_mb <= 0 || o->volume_size_limit_mb > 1024 * 1024) {
		log_error("invalid -volumeSizeLimitMB %lld", o->volume_size_limit_mb);
		goto fail;
	}
	if (o->pulse_seconds < 1 || o->pulse_seconds > 3600) {
		log_error("invalid -pulseSeconds %d", o->pulse_seconds);
		goto fail;
	}
	if (o->repair_delay_seconds < 0 || o->repair_mbps < 0) {
		log_error("invalid -repairDelaySeconds %d or -repairMBps %d (want >= 0)",
			  o->repair_delay_seconds, o->repair_mbps);
		goto fail;
	}
	if (!(o->garbage_threshold >= 0 && o->garbage_threshold <= 1)) {
		log_error("invalid -garbageThreshold %g (want 0..1)", o->garbage_threshold);
		goto fail;
	}
	m->volume_size_limit = (uint64_t)o->volume_size_limit_mb * 1024 * 1024;
	if (!ha_check(m, o))
		goto fail;
	m->locks = admin_locks_new();
	m->topo = topology_new(m->volume_size_limit, o->pulse_seconds);
	m->pool = pool_new(MAX(8, cpu_count()), "wfs-master-work");
	ho.host = m->ip;
	ho.port = o->port;
	ho.threads = o->threads;
	ho.thread_name = "wfs-master-loop";
	ho.metrics_prefix = "weedfs_master";
	if (!metrics_port_valid(o->metrics_port))
		goto fail;
	m->http = http_server_new(&ho, master_handle, m, err);
	if (!m->http)
		goto fail;
	snprintf(m->self, sizeof(m->self), "%s:%d", m->ip, http_server_port(m->http));
	if (!open_sequence(m, o, err))
		goto fail;
	m->growth = growth_new(m->topo, m->seq, m->pool,
			       o->volume_preallocate ? m->volume_size_limit : 0);
	if (!master_metrics_start(m, err))
		goto fail;
	http_server_start(m->http);
	if (thread_start(&m->vacuum_thread, NULL, vacuum_thread_main, m, "wfs-vacuum") == 0)
		m->vacuum_started = true;
	if (o->repair_delay_seconds > 0 &&
	    thread_start(&m->repair_thread, NULL, master_repair_main, m, "wfs-repair") == 0)
		m->repair_started = true;
	log_info("master listening on %s", m->self);
	*err = WFS_OK;
	return m;
fail:
	master_stop(m);
	return NULL;
}

int master_port(const struct master *m) { return http_server_port(m->http); }

void master_stop(struct master *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stopping = true;
	pthread_cond_broadcast(&m->stop_cond);
	pthread_mutex_unlock(&m->lock);
	if (m->vacuum_started)
		pthread_join(m->vacuum_thread, NULL);
	if (m->repair_started)
		pthread_join(m->repair_thread, NULL);
	if (m->growth)
		growth_shutdown(m->growth);
	pool_free(m->pool);
	metrics_server_stop(m->metrics);
	metrics_collector_remove(m->collector);
	http_server_free(m->http);
	/* nothing asks the lease any more; an orderly stop releases it for a quick handover */
	leader_stop(m->leader);
	growth_free(m->growth);
	topology_free(m->topo);
	admin_locks_free(m->locks);
	sequence_free(m->seq);
	for (size_t i = 0; i < m->npeers; i++)
		free(m->peers[i]);
	free(m->peers);
	pthread_mutex_destroy(&m->lock);
	pthread_mutex_destroy(&m->vacuum_lock);
	pthread_cond_destroy(&m->stop_cond);
	free(m->ip);
	free(m->mdir);
	free(m->default_replication);
	free(m);
}

int master_main(int argc, char **argv)
{
	struct master_opts o;
	const char *level = "info";
	const char *security_file = NULL;
	struct master *m;
	sigset_t set;
	wfs_err err;
	int rc;
	master_opts_default(&o);
	const struct flag flags[] = {
		{"ip", FLAG_STRING, &o.ip, "address to bind and advertise"},
		{"port", FLAG_INT, &o.port, "http listen port"},
		{"mdir", FLAG_STRING, &o.mdir, "directory for the file-key sequence"},
		{"volumeSizeLimitMB", FLAG_I64, &o.volume_size_limit_mb,
		 "stop writing to a volume beyond this size (MiB)"},
		{"defaultReplication", FLAG_STRING, &o.default_replication,
		 "replication when an assignment names none (xyz)"},
		{"garbageThreshold", FLAG_DOUBLE, &o.garbage_threshold,
		 "vacuum volumes whose deleted-bytes ratio exceeds this"},
		{"pulseSeconds", FLAG_INT, &o.pulse_seconds,
		 "expected heartbeat interval; a server silent for 3 pulses is dead"},
		{"volumePreallocate", FLAG_BOOL, &o.volume_preallocate,
		 "preallocate disk space for new volumes"},
		{"threads", FLAG_INT, &o.threads, "HTTP loop threads (0 = cores)"},
		{"repairDelaySeconds", FLAG_INT, &o.repair_delay_seconds,
		 "re-replicate a volume missing copies this long after its server went (0 = "
		 "never); also brings replicas that differ level"},
		{"repairMBps", FLAG_INT, &o.repair_mbps,
		 "rate limit of a repair's copy in MB/s (0 = none)"},
		{"metricsPort", FLAG_INT, &o.metrics_port,
		 "also serve /metrics and status on this port (0 = only the main port)"},
		{"peers", FLAG_STRING, &o.peers,
		 "every master of the cluster, host:port,host:port,... (this one included); "
		 "with -postgres.dsn, one of them leads (docs/master-ha.md)"},
		{"postgres.dsn", FLAG_STRING, &o.postgres_dsn,
		 "PostgreSQL conninfo or URI holding the leader lease and the file-key sequence "
		 "(with -peers)"},
		{"leaseSeconds", FLAG_DOUBLE, &o.lease_seconds,
		 "length of the leader lease; it is renewed every third of it (with -peers)"},
		{"security", FLAG_STRING, &security_file, SECURITY_FLAG_HELP},
		{"v", FLAG_STRING, &level, "log level: error, warn, info, debug"},
	};

	rc = daemon_parse_flags("master",
				"Run the master: volume placement, file ids and cluster status.",
				flags, ARRAY_LEN(flags), argc, argv, &level);
	if (rc >= 0)
		return rc;
	daemon_block_stop_signals(&set);
	m = master_start(&o, &err);
	if (!m) {
		fprintf(stderr, "weedfs master: could not start: %s\n", wfs_strerror(err));
		return 1;
	}
	daemon_wait_for_stop(&set);
	master_stop(m);
	return 0;
}
