/*
 * The filer daemon: life cycle, the request router and `weedfs filer`.
 *
 * DESIGN: the router runs on the loop thread that parsed the request. It
 * rejects bad paths and unknown parameters before anything else, copies the
 * request into a job (filer_int.h) and hands it to the module for its
 * concern: filer_read.c (GET/HEAD of files, directories, metadata),
 * filer_list.c (listings), filer_write.c (uploads and mkdir), filer_ops.c
 * (delete, move, copy). Store work runs on the metadata pool; chunk
 * transfers run on the I/O pool, so a slow volume server never delays a stat.
 */
#include "config.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client/master_list.h"
#include "daemon.h"
#include "filer/filer_inode.h"
#include "filer/filer_int.h"
#include "filer/filer_lock.h"
#include "filer/filer_reclaim.h"
#include "filer/gc_queue.h"
#include "filer/metalog.h"
#include "flags.h"
#include "jwt.h"
#include "security.h"
#include "log.h"
#include "metrics.h"
#include "util.h"

/* Every query parameter the API knows; anything else is refused with 400. */
static const char *const known_params[] = {
	"jwt", /* filer signing, checked before (lib/jwt.h) */
	"collection",
	"replication",
	"ttl",
	"disk",
	"fsync",
	"dataCenter",
	"rack",
	"dataNode",
	"saveInside",
	"maxMB",
	"mode",
	"op",
	"skipCheckParentDir",
	"metadata",
	"resolveManifest",
	"limit",
	"lastFileName",
	"namePattern",
	"namePatternExclude",
	"mv.from",
	"cp.from",
	"recursive",
	"ignoreRecursiveError",
	"skipChunkDeletion",
	"pretty",
	"tagging",
	"proxyChunkId",
	"cm",
};

void filer_opts_default(struct filer_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ip = "127.0.0.1";
	o->port = 8888;
	o->master = "127.0.0.1:9333";
	o->dir = ".";
	o->store = "sqlite";
	o->postgres_dsn = "";
	o->max_mb = 4;
	o->collection = "";
	o->default_replication = "";
	o->threads = 0;
	o->tus_expire_seconds = 86400;
	o->assign_lease_seconds = 3600;
	o->lock_grace_seconds = FILER_LOCK_GRACE_S;
	o->short_circuit = true;
}

bool filer_submit(struct filer *f, bool io, pool_fn fn, void *arg)
{
	bool ok = false;
	pthread_rwlock_rdlock(&f->pool_lock);
	pool *p = io ? f->io_pool : f->meta_pool;
	if (p) {
		pool_submit(p, fn, arg);
		ok = true;
	}
	pthread_rwlock_unlock(&f->pool_lock);
	return ok;
}

bool filer_workers_idle(struct filer *f)
{
	pthread_rwlock_rdlock(&f->pool_lock);
	bool idle = f->meta_pool && f->io_pool && pool_idle(f->meta_pool) && pool_idle(f->io_pool);
	pthread_rwlock_unlock(&f->pool_lock);
	return idle;
}

void filer_live_add(struct filer *f, struct filer_live *l)
{
	pthread_mutex_lock(&f->live_lock);
	l->prev = &f->live;
	l->next = f->live.next;
	f->live.next->prev = l;
	f->live.next = l;
	l->linked = true;
	pthread_mutex_unlock(&f->live_lock);
}

void filer_live_remove(struct filer *f, struct filer_live *l)
{
	pthread_mutex_lock(&f->live_lock);
	if (l->linked) {
		l->prev->next = l->next;
		l->next->prev = l->prev;
		l->linked = false;
	}
	pthread_mutex_unlock(&f->live_lock);
}

static bool param_known(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(known_params); i++)
		if (!strcmp(known_params[i], name))
			return true;
	return false;
}

/* The metrics' route label: fixed endpoints, else the API family; file paths are "path". */
static const char *filer_route(const char *raw)
{
	static const char *const routes[] = {"/healthz", "/readyz", "/.meta/subscribe", NULL};
	const char *r = http_route_of(routes, raw);
	if (strcmp(r, "other"))
		return r;
	if (!strncmp(raw, "/.tus", 5) && (!raw[5] || raw[5] == '/'))
		return "/.tus";
	if (!strncmp(raw, "/.api/", 6))
		return "/.api";
	return "path";
}

static void handler(http_req *req, void *ctx)
{
	struct filer *f = ctx;
	const char *raw = http_req_path(req), *name, *value, *op;
	enum http_method m = http_req_method(req);
	struct fjob *j;
	char *path = NULL;
	bool trailing;

	http_req_set_route(req, filer_route(raw));
	http_resp_header(req, "Access-Control-Allow-Origin", "*");
	if (!strcmp(raw, "/healthz") || !strcmp(raw, "/readyz")) {
		http_resp_send(req, 200, "OK", 2);
		return;
	}
	/* filer signing (jwt.filer_signing(.read), exp only, no fid); a CORS
	   preflight neither changes nor shows anything */
	if (m != HTTP_OPTIONS &&
	    !jwt_req_allowed(req, jwt_filer_key(http_req_method_str(req), raw), NULL))
		return;
	if (!strcmp(raw, "/.meta/subscribe")) {
		filer_handle_subscribe(f, req);
		return;
	}
	{
		int32_t sig;
		if (!fjob_signature(req, &sig)) {
			http_resp_error(req, 400, "%s must be a nonzero 32-bit integer",
					FILER_SIGNATURE_HEADER);
			return;
		}
	}
	if (filer_tus_route(f, req))
		return;
	if (filer_api_route(f, req))
		return;
	if (m == HTTP_OPTIONS) {
		http_resp_header(req, "Access-Control-Allow-Methods",
				 "GET, HEAD, PUT, POST, DELETE, OPTIONS");
		http_resp_header(req, "Access-Control-Allow-Headers", "*");
		http_resp_send(req, 200, NULL, 0);
		return;
	}
	if (filer_path_normalize(raw, &path, &trailing)) {
		http_resp_error(
			req, 400,
			"invalid path: components must be 1..%d bytes, not \".\" or \"..\", "
			"without NUL, and the path at most %d bytes",
			FILER_NAME_MAX, FILER_PATH_MAX);
		return;
	}
	for (size_t i = 0; http_req_query_at(req, i, &name, &value); i++) {
		if (!param_known(name)) {
			http_resp_error(req, 400, "unknown parameter \"%.100s\"", name);
			goto out;
		}
	}
	op = http_req_query(req, "op");
	if (op && strcmp(op, "append")) {
		http_resp_error(req, 400, "unknown op \"%.100s\" (only op=append)", op);
		goto out;
	}
	j = fjob_new(f, req, path, trailing);
	if (http_req_query(req, "proxyChunkId")) {
		filer_handle_proxy(j);
		goto out;
	}
	if (http_req_query(req, "tagging")) {
		filer_handle_tagging(j);
		goto out;
	}
	switch (m) {
	case HTTP_GET:
	case HTTP_HEAD:
		filer_handle_get(j);
		break;
	case HTTP_DELETE:
		filer_handle_delete(j);
		break;
	case HTTP_PUT:
	case HTTP_POST: {
		const char *mv = http_req_query(req, "mv.from");
		const char *cp = http_req_query(req, "cp.from");
		if (mv && cp) {
			http_resp_error(req, 400, "mv.from and cp.from exclude each other");
			fjob_free(j);
		} else if (mv || cp) {
			filer_handle_move(j, mv ? mv : cp, cp != NULL);
		} else {
			filer_handle_write(j);
		}
		break;
	}
	default:
		http_resp_error(req, 405, "method %s not allowed", http_req_method_str(req));
		fjob_free(j);
		break;
	}
out:
	free(path);
}

/* ---- metrics ---- */

static void filer_collect(metric_emit *e, void *ctx)
{
	struct filer *f = ctx;
	metric_emit_sample(e, "weedfs_filer_subscribers", "Event-stream (/.meta/subscribe) clients.",
			   METRIC_GAUGE, (double)filer_events_subscribers(f->events), NULL);
}

static void filer_page(buf *out, bool json, void *ctx)
{
	struct filer *f = ctx;
	char subs[16];
	snprintf(subs, sizeof(subs), "%d", filer_events_subscribers(f->events));
	const struct metrics_status_item items[] = {
		{"Url", f->self},
		{"Store", filer_store_name(f->store)},
		{"Master", f->master},
		{"Subscribers", subs},
	};
	const char *peers[] = {f->master};
	metrics_status_write(out, json, "filer", items, ARRAY_LEN(items), peers, 1);
}

static bool filer_metrics_start(struct filer *f, int port, wfs_err *err)
{
	if (!metrics_port_valid(port)) {
		*err = WFS_EINVAL;
		return false;
	}
	if (port && !(f->metrics = metrics_server_start(f->ip, port, filer_page, f, err)))
		return false;
	if (metrics_enabled())
		f->collector = metrics_collector_add(filer_collect, f);
	return true;
}

/* ---- life cycle ---- */

/* The garbage worker's delete: one blob at a time; a missing blob counts as done. */
static void gc_delete(void *ctx, const char *const *fids, size_t n, wfs_err *results)
{
	struct filer *f = ctx;
	for (size_t i = 0; i < n; i++)
		results[i] = blob_client_delete(f->bc, fids[i]);
}

static wfs_err open_store(const struct filer_opts *o, struct filer_store **out)
{
	char *dsn = NULL, real[PATH_MAX];
	wfs_err err;

	if (!strcmp(o->store, "postgres")) {
		if (!o->postgres_dsn || !*o->postgres_dsn) {
			log_error("-store=postgres needs -postgres.dsn");
			return WFS_EINVAL;
		}
		dsn = xstrdup(o->postgres_dsn);
	} else if (!strcmp(o->store, "sqlite")) {
		if (!o->dir || !*o->dir || !mkdir_p(o->dir) || !realpath(o->dir, real)) {
			log_error("could not create the filer directory \"%s\"",
				  o->dir ? o->dir : "");
			return WFS_EIO;
		}
		dsn = xasprintf("sqlite://%s/filer.db", real);
	} else {
		log_error("unknown -store \"%s\" (sqlite or postgres)", o->store);
		return WFS_EINVAL;
	}
	err = filer_store_open(dsn, out);
	if (err)
		log_error("could not open the %s store: %s", o->store, wfs_strerror(err));
	free(dsn);
	return err;
}

struct filer *filer_start(const struct filer_opts *o, wfs_err *err)
{
	struct filer *f = xcalloc(1, sizeof(*f));
	struct http_server_opts ho = {0};
	int nthreads = MAX(8, cpu_count() * 2);

	*err = WFS_OK;
	pthread_rwlock_init(&f->pool_lock, NULL);
	pthread_rwlock_init(&f->ns_lock, NULL);
	pthread_mutex_init(&f->live_lock, NULL);
	f->live.next = f->live.prev = &f->live;
	for (int i = 0; i < FILER_STRIPES; i++)
		pthread_mutex_init(&f->stripes[i], NULL);
	f->locks = filer_locks_new();
	f->ip = xstrdup(o->ip && *o->ip ? o->ip : "127.0.0.1");
	f->collection = xstrdup(o->collection ? o->collection : "");
	f->replication = xstrdup(o->default_replication ? o->default_replication : "");
	if (o->max_mb < 1 || o->max_mb > 256) {
		log_error("-maxMB must be between 1 and 256");
		*err = WFS_EINVAL;
		goto fail;
	}
	f->chunk_size = (uint64_t)o->max_mb << 20;
	f->encrypt = o->encrypt_volume_data;
	if (o->tus_expire_seconds < 1) {
		log_error("-tus.expireSeconds must be at least 1");
		*err = WFS_EINVAL;
		goto fail;
	}
	f->tus_expire_s = o->tus_expire_seconds;
	/* an id leased past 30 days would outlive any client that could still commit it */
	if (o->assign_lease_seconds < 1 || o->assign_lease_seconds > 30 * 86400) {
		log_error("-assignLeaseSeconds must be between 1 and 2592000");
		*err = WFS_EINVAL;
		goto fail;
	}
	f->assign_lease_s = o->assign_lease_seconds;
	if (o->lock_grace_seconds < 0 || o->lock_grace_seconds > 2 * FILER_LOCK_LEASE_MAX_S) {
		log_error("-lockGraceSeconds must be between 0 and %d", 2 * FILER_LOCK_LEASE_MAX_S);
		*err = WFS_EINVAL;
		goto fail;
	}
	filer_locks_set_grace(f->locks,
			      time_mono_ns() + (uint64_t)o->lock_grace_seconds * 1000000000u);
	if (!o->master || !*o->master) {
		log_error("-master is required");
		*err = WFS_EINVAL;
		goto fail;
	}
	{
		char msg[512];
		master_list *ml = master_list_new(o->master, msg, sizeof(msg));
		if (!ml) {
			log_error("invalid -master: %s", msg);
			*err = WFS_EINVAL;
			goto fail;
		}
		master_list_free(ml);
	}
	f->master = xstrdup(o->master);
	*err = open_store(o, &f->store);
	f->local_store = !strcmp(o->store, "sqlite");
	if (!*err)
		*err = filer_inode_migrate(f->store, NULL);
	if (*err)
		goto fail;
	f->bc = blob_client_new(o->master,
				&(struct blob_client_opts){.short_circuit_off = !o->short_circuit});
	f->gc = gc_queue_start(f->store, NULL, gc_delete, f);
	f->metalog = metalog_new(f->store, NULL);
	f->meta_pool = pool_new(nthreads, "wfs-filer-meta");
	f->io_pool = pool_new(MAX(16, nthreads), "wfs-filer-io");
	f->events = filer_events_new();
	f->ttl = filer_ttl_start(f);

	ho.host = f->ip;
	ho.port = o->port;
	ho.threads = o->threads;
	ho.thread_name = "wfs-filer-loop";
	/* a full path percent-encoded (3 bytes a byte at worst) and its query */
	ho.max_uri_bytes = 3 * (size_t)FILER_PATH_MAX + 8192;
	ho.max_header_bytes = ho.max_uri_bytes + 64 * 1024;
	if (!filer_metrics_start(f, o->metrics_port, err))
		goto fail;
	ho.metrics_prefix = metrics_enabled() ? "weedfs_filer" : NULL;
	f->http = http_server_new(&ho, handler, f, err);
	if (!f->http)
		goto fail;
	f->port = http_server_port(f->http);
	snprintf(f->self, sizeof(f->self), "%s:%d", f->ip, f->port);
	f->reclaim = filer_reclaim_start(f);
	http_server_start(f->http);
	log_info("filer listening on %s (store %s, master %s)", f->self, filer_store_name(f->store),
		 o->master);
	return f;
fail:
	if (!*err)
		*err = WFS_EINTERNAL;
	filer_stop(f);
	return NULL;
}

int filer_port(const struct filer *f) { return f->port; }

void filer_stop(struct filer *f)
{
	pool *mp, *iop;
	if (!f)
		return;
	filer_ttl_stop(f->ttl);
	filer_reclaim_stop(f->reclaim);
	/* Wake event-stream waiters so nothing blocks the pools below. */
	if (f->metalog)
		metalog_shutdown(f->metalog);
	filer_events_stop(f);
	/* Finish queued jobs while the loops still run: they answer through them. */
	pthread_rwlock_wrlock(&f->pool_lock);
	mp = f->meta_pool;
	iop = f->io_pool;
	f->meta_pool = NULL;
	f->io_pool = NULL;
	pthread_rwlock_unlock(&f->pool_lock);
	pool_free(mp);
	pool_free(iop);
	metrics_server_stop(f->metrics);
	metrics_collector_remove(f->collector);
	http_server_free(f->http);
	/* requests the server dropped mid-stream: nothing can touch them any more */
	while (f->live.next != &f->live) {
		struct filer_live *l = f->live.next;
		filer_live_remove(f, l);
		l->drop(l);
	}
	filer_events_free(f->events);
	gc_queue_stop(f->gc);
	metalog_free(f->metalog);
	blob_client_free(f->bc);
	filer_store_close(f->store);
	filer_locks_free(f->locks);
	pthread_rwlock_destroy(&f->pool_lock);
	pthread_rwlock_destroy(&f->ns_lock);
	pthread_mutex_destroy(&f->live_lock);
	for (int i = 0; i < FILER_STRIPES; i++)
		pthread_mutex_destroy(&f->stripes[i]);
	free(f->ip);
	free(f->collection);
	free(f->replication);
	free(f->master);
	free(f);
	log_info("filer stopped");
}

int filer_main(int argc, char **argv)
{
	struct filer_opts o;
	const char *level = "info";
	const char *security_file = NULL;
	struct filer *f;
	sigset_t set;
	wfs_err err;
	int rc;

	filer_opts_default(&o);
	const struct flag flags[] = {
		{"ip", FLAG_STRING, &o.ip, "address to bind and advertise"},
		{"port", FLAG_INT, &o.port, "http listen port"},
		{"master", FLAG_STRING, &o.master,
		 "master address host:port, or every master as a comma list (failover)"},
		{"dir", FLAG_STRING, &o.dir, "directory for the SQLite store (DIR/filer.db)"},
		{"store", FLAG_STRING, &o.store, "metadata store: sqlite or postgres"},
		{"postgres.dsn", FLAG_STRING, &o.postgres_dsn,
		 "PostgreSQL connection: URI or libpq conninfo (with -store=postgres)"},
		{"maxMB", FLAG_INT, &o.max_mb, "split uploads into chunks of this many MiB"},
		{"encryptVolumeData", FLAG_BOOL, &o.encrypt_volume_data,
		 "encrypt every new chunk with its own AES-256-GCM key, kept in the entry"},
		{"collection", FLAG_STRING, &o.collection, "default collection of new chunks"},
		{"defaultReplication", FLAG_STRING, &o.default_replication,
		 "replication of new chunks when none is asked for (\"\" = master's default)"},
		{"threads", FLAG_INT, &o.threads, "HTTP loop threads (0 = cores)"},
		{"shortCircuit", FLAG_BOOL, &o.short_circuit,
		 "read blobs of volume servers on this host from their files (a Unix socket), not over HTTP"},
		{"tus.expireSeconds", FLAG_INT, &o.tus_expire_seconds,
		 "remove resumable (TUS) uploads idle this long, with their chunks"},
		{"assignLeaseSeconds", FLAG_INT, &o.assign_lease_seconds,
		 "ids handed out by the JSON API's assign and not referenced by an entry within "
		 "this long are deleted from their volume"},
		{"lockGraceSeconds", FLAG_INT, &o.lock_grace_seconds,
		 "after a start, grant only the locks mounts held before (they reclaim them) for "
		 "this long; longer than the mounts' lock lease"},
		{"metricsPort", FLAG_INT, &o.metrics_port,
		 "serve /metrics and the status page on this port (0 = none)"},
		{"security", FLAG_STRING, &security_file, SECURITY_FLAG_HELP},
		{"v", FLAG_STRING, &level, "log level: error, warn, info, debug"},
	};

	rc = daemon_parse_flags("filer",
				"Run a filer: directories and files over the volume servers.",
				flags, ARRAY_LEN(flags), argc, argv, &level);
	if (rc >= 0)
		return rc;
	daemon_block_stop_signals(&set);
	f = filer_start(&o, &err);
	if (!f) {
		fprintf(stderr, "weedfs filer: could not start: %s\n", wfs_strerror(err));
		return 1;
	}
	daemon_wait_for_stop(&set);
	filer_stop(f);
	return 0;
}
