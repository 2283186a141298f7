/*
 * The volume server: lifecycle, routing, /status, the master's admin calls
 * and the heartbeat thread. Needle requests are in volume_handlers.c.
 *
 * DESIGN: the heartbeat thread owns all traffic to the master except
 * replica lookups. It posts at start, every -pulseSeconds, and at once when
 * woken (volume created, deleted or made read-only). While the master is
 * unreachable it retries with a back-off doubling from 1 s up to the pulse,
 * logging only when the state changes. It also removes TTL volumes that
 * have expired. Slow admin work (compact, commit) runs on the worker pool
 * and answers through http_req_defer.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "client/fid.h"
#include "daemon.h"
#include "flags.h"
#include "http_client.h"
#include "json.h"
#include "security.h"
#include "log.h"
#include "metrics.h"
#include "util.h"
#include "vs_int.h"

#define MAX_DIRS 16

void volume_server_opts_default(struct volume_server_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ip = "127.0.0.1";
	o->port = 8080;
	o->public_url = "";
	o->dir = "/tmp";
	o->max = "8";
	o->mserver = "127.0.0.1:9333";
	o->data_center = "DefaultDataCenter";
	o->rack = "DefaultRack";
	o->pulse_seconds = 5;
	o->file_size_limit_mb = 256;
	o->threads = 0;
	o->short_circuit = true;
}

/* Runs fn(arg) on *which unless the server is stopping (*which is NULL). */
static bool submit_to(struct volume_server *vs, pool *const *which, pool_fn fn, void *arg)
{
	bool ok = false;
	pthread_rwlock_rdlock(&vs->pool_lock);
	if (*which) {
		pool_submit(*which, fn, arg);
		ok = true;
	}
	pthread_rwlock_unlock(&vs->pool_lock);
	return ok;
}

bool vs_submit(struct volume_server *vs, pool_fn fn, void *arg)
{
	return submit_to(vs, &vs->pool, fn, arg);
}

bool vs_submit_read(struct volume_server *vs, pool_fn fn, void *arg)
{
	return submit_to(vs, &vs->read_pool, fn, arg);
}

void vs_heartbeat_now(struct volume_server *vs)
{
	pthread_mutex_lock(&vs->hb_lock);
	vs->hb_kick = true;
	pthread_cond_signal(&vs->hb_cond);
	pthread_mutex_unlock(&vs->hb_lock);
}

/* ---- status ---- */

static void write_volume_list(struct volume_server *vs, json_w *w, bool internal, uint64_t *max_key)
{
	volume **list;
	size_t n = volume_store_list(vs->store, &list);
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		struct volume_info in;
		char rp[8], ttl[16];
		volume_get_info(list[i], &in);
		replica_placement_format(&in.rp, rp);
		ttl_format(&in.ttl, ttl);
		if (max_key && in.max_key > *max_key)
			*max_key = in.max_key;
		jw_obj_begin(w);
		if (internal) {
			jw_kv_u64(w, "id", in.id);
			jw_kv_str(w, "collection", in.collection);
			jw_kv_str(w, "replication", rp);
			jw_kv_str(w, "ttl", ttl);
			jw_kv_u64(w, "size", in.size);
			jw_kv_u64(w, "fileCount", in.file_count);
			jw_kv_u64(w, "deleteCount", in.delete_count);
			jw_kv_u64(w, "deletedBytes", in.deleted_bytes);
			jw_kv_bool(w, "readOnly", in.read_only);
			jw_kv_u64(w, "compactRevision", in.compact_revision);
			jw_kv_u64(w, "version", in.version);
			jw_kv_u64(w, "modifiedAtSecond", in.modified_at_sec);
		} else {
			jw_kv_u64(w, "Id", in.id);
			jw_kv_u64(w, "Size", in.size);
			jw_kv_u64(w, "FileCount", in.file_count);
			jw_kv_u64(w, "DeleteCount", in.delete_count);
			jw_kv_u64(w, "DeletedByteCount", in.deleted_bytes);
			jw_kv_bool(w, "ReadOnly", in.read_only);
			jw_kv_str(w, "Collection", in.collection);
			jw_kv_str(w, "ReplicaPlacement", rp);
			jw_kv_str(w, "Ttl", ttl);
			jw_kv_u64(w, "CompactRevision", in.compact_revision);
			jw_kv_u64(w, "Version", in.version);
		}
		jw_obj_end(w);
		volume_unref(list[i]);
	}
	jw_arr_end(w);
	free(list);
}

static bool want_pretty(http_req *req)
{
	const char *p = http_req_query(req, "pretty");
	return p && *p && strcmp(p, "n") && strcmp(p, "false");
}

static void write_status(struct volume_server *vs, buf *b, bool pretty)
{
	struct volume_store_disk_status ds[MAX_DIRS];
	size_t nd = volume_store_disk_status(vs->store, ds, MAX_DIRS);
	json_w *w = jw_new(b, pretty);

	jw_obj_begin(w);
	jw_kv_str(w, "Version", PACKAGE_VERSION);
	jw_key(w, "Volumes");
	write_volume_list(vs, w, false, NULL);
	jw_key(w, "DiskStatuses");
	jw_arr_begin(w);
	for (size_t i = 0; i < nd; i++) {
		jw_obj_begin(w);
		jw_kv_str(w, "dir", ds[i].dir);
		jw_kv_u64(w, "all", ds[i].all);
		jw_kv_u64(w, "used", ds[i].used);
		jw_kv_u64(w, "free", ds[i].free);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_kv_i64(w, "MaxVolumeCount", volume_store_max_volumes(vs->store));
	vs_upload_status(w);
	vs_short_circuit_status(vs->sc, w);
	jw_obj_end(w);
	jw_free(w);
}

void vs_status_json(struct volume_server *vs, buf *out) { write_status(vs, out, false); }

static void handle_status(struct volume_server *vs, http_req *req)
{
	buf b = BUF_INIT;
	write_status(vs, &b, want_pretty(req));
	http_resp_send_json(req, 200, &b);
	buf_free(&b);
}

static void handle_ui(struct volume_server *vs, http_req *req)
{
	buf b = BUF_INIT;
	vs_status_html(vs, &b);
	http_resp_header(req, "Content-Type", "text/html; charset=utf-8");
	http_resp_send(req, 200, b.data, b.len);
	buf_free(&b);
}

/* ---- admin ---- */

static void send_empty(http_req *req) { http_resp_send(req, 200, "{}", 2); }

bool vs_query_vid(http_req *req, uint32_t *vid)
{
	const char *s = http_req_query(req, "volume");
	if (!s || !volume_id_parse(s, strlen(s), vid) || *vid == 0) {
		http_resp_error(req, 400, "missing or invalid volume \"%s\"", s ? s : "");
		return false;
	}
	return true;
}

/* An admin call that waits for the disk (compact, commit, sync): run on the pool. */
struct vacuum_job {
	struct volume_server *vs;
	http_req *req;
	volume *v;
	const char *what; /* "compact", "commit" or "sync" */
	wfs_err err;
};

static void vacuum_done(http_req *req, void *arg)
{
	struct vacuum_job *j = arg;
	if (j->err)
		http_resp_error(req, wfs_err_http_status(j->err), "%s failed: %s", j->what,
				wfs_strerror(j->err));
	else
		send_empty(req);
	free(j);
}

static void vacuum_run(void *arg)
{
	struct vacuum_job *j = arg;
	bool commit = !strcmp(j->what, "commit");
	j->err = commit ? volume_commit(j->v)
		 : !strcmp(j->what, "sync") ? volume_sync(j->v) : volume_compact(j->v);
	volume_unref(j->v);
	if (commit && !j->err)
		vs_heartbeat_now(j->vs);
	http_req_defer(j->req, vacuum_done, j);
}

static void handle_admin(struct volume_server *vs, http_req *req, const char *path)
{
	uint32_t vid = 0;
	volume *v;
	wfs_err err;

	if (!strcmp(path, "/admin/assign_volume")) {
		struct volume_create c = {0};
		const char *coll = http_req_query(req, "collection");
		const char *pre = http_req_query(req, "preallocate");
		if (!vs_query_vid(req, &vid))
			return;
		if (replica_placement_parse(http_req_query(req, "replication"), &c.rp) ||
		    ttl_parse(http_req_query(req, "ttl"), &c.ttl) ||
		    (pre && *pre && !parse_u64(pre, &c.preallocate)) ||
		    (coll && !volume_collection_valid(coll))) {
			http_resp_error(req, 400,
					"invalid replication, ttl, collection or preallocate");
			return;
		}
		err = volume_store_create_volume(vs->store, vid, coll, &c);
		if (err) {
			http_resp_error(req, wfs_err_http_status(err),
					"assign volume %" PRIu32 ": %s", vid, wfs_strerror(err));
			return;
		}
		vs_heartbeat_now(vs);
		send_empty(req);
		return;
	}
	if (!strcmp(path, "/admin/delete_collection")) {
		const char *coll = http_req_query(req, "collection");
		if (!coll || !*coll) {
			http_resp_error(req, 400, "missing collection");
			return;
		}
		if (volume_store_delete_collection(vs->store, coll) > 0)
			vs_heartbeat_now(vs);
		send_empty(req);
		return;
	}
	if (!vs_query_vid(req, &vid))
		return;
	if (!strcmp(path, "/admin/volume/delete")) {
		err = volume_store_delete_volume(vs->store, vid);
		if (err) {
			http_resp_error(req, 404, "volume %" PRIu32 " not found", vid);
			return;
		}
		vs_heartbeat_now(vs);
		send_empty(req);
		return;
	}
	v = volume_store_get(vs->store, vid);
	if (!v) {
		http_resp_error(req, 404, "volume %" PRIu32 " not found", vid);
		return;
	}
	if (!strcmp(path, "/admin/volume/readonly")) {
		const char *ro_s = http_req_query(req, "readonly");
		bool ro = true;
		if (ro_s && !parse_bool(ro_s, &ro)) {
			http_resp_error(req, 400, "invalid readonly \"%s\"", ro_s);
		} else {
			volume_set_read_only(v, ro);
			vs_heartbeat_now(vs);
			send_empty(req);
		}
	} else if (!strcmp(path, "/admin/vacuum/check")) {
		buf b = BUF_INIT;
		buf_printf(&b, "{\"garbageRatio\":%.6f}", volume_garbage_ratio(v));
		http_resp_send_json(req, 200, &b);
		buf_free(&b);
	} else if (!strcmp(path, "/admin/vacuum/compact") ||
		   !strcmp(path, "/admin/vacuum/commit") || !strcmp(path, "/admin/volume/sync")) {
		/* sync: what the volume holds is on disk (fdatasync) when it answers; the
		   client calls every replica (a mount's fsync of chunks uploaded earlier) */
		struct vacuum_job *j = xcalloc(1, sizeof(*j));
		j->vs = vs;
		j->req = req;
		j->v = v;
		j->what = strrchr(path, '/') + 1;
		volume_ref(v);
		if (!vs_submit(vs, vacuum_run, j)) {
			volume_unref(v);
			free(j);
			http_resp_error(req, 503, "server is stopping");
		}
	} else if (!strcmp(path, "/admin/vacuum/cleanup")) {
		volume_cleanup(v);
		send_empty(req);
	} else {
		http_resp_error(req, 404, "unknown admin endpoint");
	}
	volume_unref(v);
}

static void add_cors(http_req *req) { http_resp_header(req, "Access-Control-Allow-Origin", "*"); }

static void handler(http_req *req, void *ctx)
{
	struct volume_server *vs = ctx;
	const char *path = http_req_path(req);
	enum http_method m = http_req_method(req);

	http_req_set_route(req, vs_route(path));
	add_cors(req);
	if (m == HTTP_OPTIONS) {
		http_resp_header(req, "Access-Control-Allow-Methods",
				 "GET, HEAD, PUT, POST, DELETE, OPTIONS");
		http_resp_header(req, "Access-Control-Allow-Headers", "*");
		http_resp_header(req, "Access-Control-Max-Age", "86400");
		http_resp_send(req, 200, NULL, 0);
		return;
	}
	if (!strcmp(path, "/healthz")) {
		http_resp_send(req, 200, NULL, 0);
		return;
	}
	if (!strcmp(path, "/status") || !strcmp(path, "/stats/disk")) {
		handle_status(vs, req);
		return;
	}
	if ((m == HTTP_GET || m == HTTP_HEAD) &&
	    (!strcmp(path, "/") || !strcmp(path, "/ui/index.html"))) {
		handle_ui(vs, req);
		return;
	}
	if (!strncmp(path, "/admin/", 7)) {
		if (m != HTTP_POST && m != HTTP_GET && m != HTTP_PUT) {
			http_resp_error(req, 405, "method not allowed");
			return;
		}
		if (!vs_handle_volume_admin(vs, req, path) && !vs_ec_handle_admin(vs, req, path))
			handle_admin(vs, req, path);
		return;
	}
	vs_handle_needle(vs, req);
}

/* ---- heartbeat ---- */

static void heartbeat_body(struct volume_server *vs, buf *b)
{
	json_w *w = jw_new(b, false);
	uint64_t max_key = 0;
	jw_obj_begin(w);
	jw_kv_str(w, "ip", vs->ip);
	jw_kv_i64(w, "port", vs->port);
	jw_kv_str(w, "publicUrl", vs->public_url);
	jw_kv_str(w, "dataCenter", vs->data_center);
	jw_kv_str(w, "rack", vs->rack);
	jw_kv_i64(w, "maxVolumeCount", volume_store_max_volumes(vs->store));
	jw_key(w, "volumes");
	write_volume_list(vs, w, true, &max_key);
	jw_kv_u64(w, "maxFileKey", max_key);
	vs_ec_heartbeat(vs, w);
	jw_obj_end(w);
	jw_free(w);
}

/* The leader a master's answer names ({"leader": "host:port"}); "" if none. */
static void named_leader(const struct http_result *res, char *out, size_t outlen)
{
	char err_text[64];
	yajl_val root = json_parse(res->body.data ? res->body.data : "", res->body.len, err_text,
				   sizeof(err_text));
	const char *l = NULL;
	out[0] = '\0';
	if (root && json_get_str(root, "leader", &l) && l)
		snprintf(out, outlen, "%s", l);
	yajl_tree_free(root);
}

/*
 * One heartbeat; true if the master answered 200. It goes to the master that
 * answered last; a follower's "not the leader" names the leader, which is
 * tried at once, and a master that fails makes the others be tried in turn
 * (master_list_request). Heartbeat thread.
 */
static bool heartbeat_once(struct volume_server *vs, char *why, size_t whylen)
{
	static const char *const headers[] = {"Content-Type: application/json", NULL};
	struct http_result res;
	char err_text[128], lead[MASTER_ADDR_MAX], used[MASTER_ADDR_MAX];
	buf b = BUF_INIT;
	bool ok = false;
	/* a master silent for two pulses (paused, say) gives way to the next one */
	long timeout_ms = MIN(10000, MAX(2000, 2000L * vs->pulse_seconds));
	wfs_err err;

	heartbeat_body(vs, &b);
	http_result_init(&res);
	err = master_list_request(vs->masters, "POST", "/heartbeat", headers, b.data, b.len,
				  timeout_ms, &res, used, sizeof(used));
	if (!err && res.status != 200) {
		named_leader(&res, lead, sizeof(lead));
		if (lead[0] && strcmp(lead, used)) {
			master_list_prefer(vs->masters, lead);
			http_result_free(&res);
			http_result_init(&res);
			err = master_list_request(vs->masters, "POST", "/heartbeat", headers, b.data,
						  b.len, timeout_ms, &res, used, sizeof(used));
		}
	}
	if (err) {
		snprintf(why, whylen, "%s", wfs_strerror(err));
	} else if (res.status != 200) {
		snprintf(why, whylen, "status %d", res.status);
	} else {
		yajl_val root = json_parse(res.body.data, res.body.len, err_text, sizeof(err_text));
		uint64_t limit;
		if (root && json_get_u64(root, "volumeSizeLimit", &limit) && limit)
			volume_store_set_size_limit(vs->store, limit);
		if (root)
			yajl_tree_free(root);
		ok = true;
	}
	http_result_free(&res);
	buf_free(&b);
	return ok;
}

/* The heartbeat thread's body; see DESIGN. */
static void *heartbeat_main(void *arg)
{
	struct volume_server *vs = arg;
	int state = -1; /* -1 unknown, 0 down, 1 up */
	char last[MASTER_ADDR_MAX] = ""; /* the master of the last heartbeat */
	uint64_t backoff_ms = 1000;
	char why[128];


	for (;;) {
		struct timespec ts;
		uint64_t wait_ms;
		bool up;

		if (volume_store_expire(vs->store, (uint64_t)time(NULL)) > 0)
			log_info("expired TTL volumes removed");
		/* standalone (no -mserver): only the TTL sweep */
		up = !vs->masters || heartbeat_once(vs, why, sizeof(why));
		if (vs->masters) {
			char cur[MASTER_ADDR_MAX];
			master_list_current(vs->masters, cur, sizeof(cur));
			if (up && (state != 1 || strcmp(cur, last)))
				log_info("connected to master %s", cur);
			else if (!up && state != 0)
				log_warn("no master of %s took the heartbeat (%s); retrying",
					 vs->mserver, why);
			snprintf(last, sizeof(last), "%s", cur);
		}
		state = up;
		if (up) {
			backoff_ms = 1000;
			wait_ms = (uint64_t)vs->pulse_seconds * 1000;
		} else {
			wait_ms = backoff_ms;
			backoff_ms = MIN(backoff_ms * 2, (uint64_t)vs->pulse_seconds * 1000);
		}
		ts = time_deadline(CLOCK_REALTIME, wait_ms * 1000000u);
		pthread_mutex_lock(&vs->hb_lock);
		while (!vs->hb_stop && !vs->hb_kick)
			if (pthread_cond_timedwait(&vs->hb_cond, &vs->hb_lock, &ts) == ETIMEDOUT)
				break;
		if (vs->hb_stop) {
			pthread_mutex_unlock(&vs->hb_lock);
			return NULL;
		}
		vs->hb_kick = false;
		pthread_mutex_unlock(&vs->hb_lock);
	}
}

/* ---- lifecycle ---- */

static size_t split_list(const char *s, char **out, size_t max)
{
	size_t n = 0;
	const char *p = s;
	while (p && *p && n < max) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (len)
			out[n++] = xstrndup(p, len);
		p = c ? c + 1 : NULL;
	}
	return n;
}

/*
 * Checks a -dir at start, as SeaweedFS does: it must be a directory this
 * process can create files in (a probe file, since root passes every mode
 * check but not a read-only mount). A missing one is created when its parent
 * exists. Logs the directory and the reason when it is unusable.
 */
static wfs_err check_dir(const char *dir)
{
	struct stat st;
	char *probe;
	int fd, e;

	if (stat(dir, &st) < 0) {
		if (errno != ENOENT || mkdir(dir, 0755) < 0) {
			e = errno;
			log_error("-dir \"%s\" is unusable: %s%s", dir, strerror(e),
				  e == ENOENT ? " (its parent directory does not exist)" : "");
			return wfs_err_from_errno(e);
		}
		log_info("created -dir \"%s\"", dir);
	} else if (!S_ISDIR(st.st_mode)) {
		log_error("-dir \"%s\" is unusable: not a directory", dir);
		return WFS_ENOTDIR;
	}
	probe = xasprintf("%s/.weedfs-write-test.%ld", dir, (long)getpid());
	fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	e = errno;
	if (fd >= 0) {
		close(fd);
		unlink(probe);
	}
	free(probe);
	if (fd < 0) {
		log_error("-dir \"%s\" is unusable: not writable: %s", dir, strerror(e));
		return wfs_err_from_errno(e);
	}
	return WFS_OK;
}

struct volume_server *volume_server_start(const struct volume_server_opts *o, wfs_err *err)
{
	struct volume_server *vs = xcalloc(1, sizeof(*vs));
	struct http_server_opts ho = {0};
	struct volume_store_dir dirs[MAX_DIRS];
	char *dir_s[MAX_DIRS] = {0}, *max_s[MAX_DIRS] = {0};
	size_t nd, nm;

	*err = WFS_OK;
	pthread_rwlock_init(&vs->pool_lock, NULL);
	pthread_mutex_init(&vs->hb_lock, NULL);
	pthread_cond_init(&vs->hb_cond, NULL);
	pthread_mutex_init(&vs->cache_lock, NULL);
	vs->ip = xstrdup(o->ip && *o->ip ? o->ip : "127.0.0.1");
	vs->mserver = o->mserver && *o->mserver ? xstrdup(o->mserver) : NULL;
	if (vs->mserver) {
		char msg[512];
		vs->masters = master_list_new(vs->mserver, msg, sizeof(msg));
		if (!vs->masters) {
			log_error("invalid -mserver: %s", msg);
			*err = WFS_EINVAL;
			goto fail;
		}
	}
	vs->data_center =
		xstrdup(o->data_center && *o->data_center ? o->data_center : "DefaultDataCenter");
	vs->rack = xstrdup(o->rack && *o->rack ? o->rack : "DefaultRack");
	vs->pulse_seconds = o->pulse_seconds > 0 ? o->pulse_seconds : 5;
	if (o->file_size_limit_mb <= 0 || o->file_size_limit_mb > 4000) {
		log_error("-fileSizeLimitMB must be between 1 and 4000");
		*err = WFS_EINVAL;
		goto fail;
	}
	vs->file_size_limit = (uint64_t)o->file_size_limit_mb << 20;

	nd = split_list(o->dir, dir_s, MAX_DIRS);
	nm = split_list(o->max, max_s, MAX_DIRS);
	if (nd == 0) {
		log_error("no -dir given");
		*err = WFS_EINVAL;
		goto fail;
	}
	for (size_t i = 0; i < nd; i++) {
		uint32_t m = 8;
		const char *ms = i < nm ? max_s[i] : (nm ? max_s[nm - 1] : "8");
		if (!parse_u32(ms, &m) || m > 100000) {
			log_error("invalid -max \"%s\"", ms);
			*err = WFS_EINVAL;
			goto fail;
		}
		dirs[i].path = dir_s[i];
		dirs[i].max = (int)m;
		*err = check_dir(dir_s[i]);
		if (*err)
			goto fail;
	}
	*err = volume_store_open(dirs, nd, &vs->store);
	if (*err)
		goto fail;
	vs_ec_open(vs);

	ho.host = vs->ip;
	ho.port = o->port;
	ho.threads = o->threads;
	ho.thread_name = "wfs-vol-loop";
	if (!vs_metrics_start(vs, o->metrics_port, err))
		goto fail;
	ho.metrics_prefix = metrics_enabled() ? "weedfs_volume" : NULL;
	vs->http = http_server_new(&ho, handler, vs, err);
	if (!vs->http)
		goto fail;
	vs->port = http_server_port(vs->http);
	snprintf(vs->self, sizeof(vs->self), "%s:%d", vs->ip, vs->port);
	vs->public_url = xstrdup(o->public_url && *o->public_url ? o->public_url : vs->self);
	vs->pool = pool_new(MAX(4, cpu_count() * 2), "wfs-vol-work");
	vs->read_pool = pool_new(VS_READ_THREADS, "wfs-vol-read");
	if (o->short_circuit)
		vs->sc = vs_short_circuit_start(vs);
	http_server_start(vs->http);
	/* also runs without a master: it sweeps expired TTL volumes */
	if (thread_start(&vs->hb_thread, NULL, heartbeat_main, vs, "wfs-heartbeat") != 0) {
		*err = WFS_EINTERNAL;
		goto fail;
	}
	vs->hb_started = true;
	log_info("volume listening on %s", vs->self);
	for (size_t i = 0; i < MAX_DIRS; i++) {
		free(dir_s[i]);
		free(max_s[i]);
	}
	return vs;
fail:
	for (size_t i = 0; i < MAX_DIRS; i++) {
		free(dir_s[i]);
		free(max_s[i]);
	}
	if (!*err)
		*err = WFS_EINTERNAL;
	volume_server_stop(vs);
	return NULL;
}

int volume_server_port(const struct volume_server *vs) { return vs->port; }

void volume_server_stop(struct volume_server *vs)
{
	pool *p, *rp;
	if (!vs)
		return;
	if (vs->hb_started) {
		pthread_mutex_lock(&vs->hb_lock);
		vs->hb_stop = true;
		pthread_cond_signal(&vs->hb_cond);
		pthread_mutex_unlock(&vs->hb_lock);
		pthread_join(vs->hb_thread, NULL);
	}
	/* finish background jobs while the loops still run (they answer through them) */
	pthread_rwlock_wrlock(&vs->pool_lock);
	p = vs->pool;
	rp = vs->read_pool;
	vs->pool = vs->read_pool = NULL;
	pthread_rwlock_unlock(&vs->pool_lock);
	pool_free(p);
	pool_free(rp);
	vs_short_circuit_stop(vs->sc);
	vs_metrics_stop(vs);
	http_server_free(vs->http);
	vs_ec_close(vs);
	volume_store_free(vs->store);
	for (int i = 0; i < vs->ncache; i++) {
		vs_locations_free(vs->cache[i].locs, vs->cache[i].nlocs);
	}
	free(vs->cache);
	pthread_rwlock_destroy(&vs->pool_lock);
	pthread_mutex_destroy(&vs->hb_lock);
	pthread_cond_destroy(&vs->hb_cond);
	pthread_mutex_destroy(&vs->cache_lock);
	free(vs->ip);
	free(vs->public_url);
	free(vs->mserver);
	master_list_free(vs->masters);
	free(vs->data_center);
	free(vs->rack);
	free(vs);
	log_info("volume server stopped");
}

int volume_main(int argc, char **argv)
{
	struct volume_server_opts o;
	const char *level = "info";
	const char *security_file = NULL;
	struct volume_server *vs;
	sigset_t set;
	wfs_err err;
	int rc;

	volume_server_opts_default(&o);
	const struct flag flags[] = {
		{"ip", FLAG_STRING, &o.ip, "address to bind and advertise"},
		{"port", FLAG_INT, &o.port, "http listen port"},
		{"publicUrl", FLAG_STRING, &o.public_url,
		 "address clients are told (default ip:port)"},
		{"dir", FLAG_STRING, &o.dir, "directories to store volumes in, comma separated"},
		{"max", FLAG_STRING, &o.max,
		 "maximum volumes per directory, comma separated; 0 = from free space"},
		{"mserver", FLAG_STRING, &o.mserver,
		 "master address host:port, or every master of the cluster as a comma list"},
		{"dataCenter", FLAG_STRING, &o.data_center, "data center name"},
		{"rack", FLAG_STRING, &o.rack, "rack name"},
		{"pulseSeconds", FLAG_INT, &o.pulse_seconds, "heartbeat interval in seconds"},
		{"fileSizeLimitMB", FLAG_INT, &o.file_size_limit_mb, "largest upload in MiB"},
		{"threads", FLAG_INT, &o.threads, "HTTP loop threads (0 = cores)"},
		{"shortCircuit", FLAG_BOOL, &o.short_circuit,
		 "hand readers on this host the volume files' descriptors (a Unix socket)"},
		{"metricsPort", FLAG_INT, &o.metrics_port,
		 "serve /metrics and the status page on this port (0 = none)"},
		{"security", FLAG_STRING, &security_file, SECURITY_FLAG_HELP},
		{"v", FLAG_STRING, &level, "log level: error, warn, info, debug"},
	};

	rc = daemon_parse_flags("volume", "Run a volume server: stores file content in volumes.",
				flags, ARRAY_LEN(flags), argc, argv, &level);
	if (rc >= 0)
		return rc;
	daemon_block_stop_signals(&set);
	vs = volume_server_start(&o, &err);
	if (!vs) {
		fprintf(stderr, "weedfs volume: could not start: %s\n", wfs_strerror(err));
		return 1;
	}
	daemon_wait_for_stop(&set);
	volume_server_stop(vs);
	return 0;
}
