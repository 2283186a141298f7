/*
 * DESIGN
 * - The master is only asked for assignments and for volume locations; the
 *   locations are cached per volume id for location_ttl (SeaweedFS keeps them
 *   10 minutes) because the master is never in the read path. A replica that
 *   fails (unreachable, 5xx, redirect) drops its volume from the cache so the
 *   next attempt asks the master again: a moved or dead server is forgotten at
 *   the first failure, not at expiry. An answer still naming a server that just
 *   failed (the master notices only after missed heartbeats) is kept briefly.
 * - In filer mode the filer answers lookupVolume from the master, not from its
 *   own cache, so a client that lost a replica learns the current locations.
 * - Every transfer has a bounded timeout (connect and total), so a dead or
 *   stalled server turns into WFS_EUNAVAIL / WFS_ETIMEDOUT, never a hang.
 * - A server that failed is "down" for DOWN_NS: reads try it last (a cached
 *   location list may still name it after the master forgot it) and uploads
 *   skip it a few times; any success marks it up again.
 * - Uploads go to a fresh assignment on retry: a failing volume server is not
 *   asked again for the same file id; its half-stored id is deleted best-effort.
 * - The worker pool lives here so every chunk writer and reader of a filer
 *   shares one bounded set of transfer threads.
 */
#include "config.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "client/fid.h"
#include "client/blob_client.h"
#include "client/master_list.h"
#include "client/short_circuit.h"
#include "http_client.h"
#include "http_fetch.h"
#include "http_util.h"
#include "json.h"
#include "jwt.h"
#include "log.h"
#include "security.h"
#include "util.h"

#define LOC_BUCKETS 256
#define SAVE_TRIES  4 /* uploads (and failed assignments) per blob */
#define DOWN_SLOTS  16
#define DOWN_NS     (60 * 1000000000ull)
/* Assignments to servers known down skipped per blob. With half the writable
   volumes on a dead server, 8 skips and 4 failed uploads in a row ended ~1 in
   100 writes of 20 blobs; 32 + 4 in a row is a 2^-36 chance per blob. */
#define DOWN_SKIPS_MAX    32
#define FETCH_IDLE_MAX    64          /* kept-alive connections to volume servers */
#define FETCH_KEEP_MS     2000        /* how long one may stay idle */
#define UPLOAD_ANSWER_MAX (64u << 10) /* an upload's JSON answer */

/* A volume server that did not answer: uploads avoid it and reads try it last for a while,
 * since the master only notices after several missed heartbeats. */
struct down_server {
	char url[BLOB_URL_MAX];
	uint64_t until_ns; /* monotonic */
};

struct loc_entry {
	uint32_t vid;
	uint64_t expires_ns; /* monotonic */
	struct blob_location *locs;
	size_t n;
	struct loc_entry *next;
};

struct blob_client {
	char *master;   /* the masters' list as given, or in filer mode the filer's host:port */
	master_list *masters; /* master mode: the masters, with failover; NULL if malformed */
	bool via_filer; /* assign and lookupVolume through the filer's JSON API */
	long timeout_ms;
	uint64_t ttl_ns;
	pool *workers;
	http_fetcher *fetch; /* blob reads and uploads (no libcurl: no copies, see http_fetch.h) */
	short_circuit *sc;   /* reads from volume servers on this host; NULL when off */
	pthread_mutex_t mu;
	struct loc_entry *buckets[LOC_BUCKETS]; /* protected by mu */
	struct blob_client_stats stats;         /* protected by mu */
	struct down_server down[DOWN_SLOTS];    /* protected by mu */
};

blob_client *blob_client_new(const char *master, const struct blob_client_opts *opts)
{
	blob_client *bc = xcalloc(1, sizeof(*bc));
	char msg[512];
	bc->master = xstrdup(master);
	bc->masters = master_list_new(master, msg, sizeof(msg));
	if (!bc->masters)
		log_error("blob client: %s", msg);
	bc->timeout_ms = opts && opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
	bc->ttl_ns = (opts && opts->location_ttl_ms ? opts->location_ttl_ms : 600000) * 1000000ull;
	bc->workers = pool_new(opts && opts->threads > 0 ? opts->threads : 16, "wfs-blob-io");
	bc->fetch = http_fetcher_new(FETCH_IDLE_MAX, FETCH_KEEP_MS);
	if (!opts || !opts->short_circuit_off)
		bc->sc = short_circuit_new(MIN(bc->timeout_ms, 5000));
	pthread_mutex_init(&bc->mu, NULL);
	return bc;
}

blob_client *blob_client_new_filer(const char *filer, const struct blob_client_opts *opts)
{
	blob_client *bc = blob_client_new(filer, opts);
	bc->via_filer = true;
	return bc;
}

void blob_client_free(blob_client *bc)
{
	if (!bc)
		return;
	pool_free(bc->workers);
	http_fetcher_free(bc->fetch);
	short_circuit_free(bc->sc);
	for (size_t i = 0; i < LOC_BUCKETS; i++) {
		struct loc_entry *e = bc->buckets[i], *next;
		for (; e; e = next) {
			next = e->next;
			free(e->locs);
			free(e);
		}
	}
	pthread_mutex_destroy(&bc->mu);
	free(bc->master);
	master_list_free(bc->masters);
	free(bc);
}

pool *blob_client_pool(blob_client *bc) { return bc->workers; }

const char *blob_client_master(const blob_client *bc) { return bc->master; }

wfs_err blob_client_master_get(blob_client *bc, const char *path_query, struct http_result *res)
{
	if (bc->via_filer || !bc->masters)
		return WFS_EINVAL;
	return master_list_request(bc->masters, "GET", path_query, NULL, NULL, 0, bc->timeout_ms,
				   res, NULL, 0);
}

long blob_client_timeout_ms(const blob_client *bc) { return bc->timeout_ms; }

void blob_client_get_stats(blob_client *bc, struct blob_client_stats *out)
{
	struct short_circuit_stats sc = {0};
	pthread_mutex_lock(&bc->mu);
	*out = bc->stats;
	pthread_mutex_unlock(&bc->mu);
	if (bc->sc)
		short_circuit_get_stats(bc->sc, &sc);
	out->short_circuit_reads = sc.reads;
	out->short_circuit_fallbacks = sc.fallbacks;
}

#define STAT_INC(bc, field)                      \
	do {                                     \
		pthread_mutex_lock(&(bc)->mu);   \
		(bc)->stats.field++;             \
		pthread_mutex_unlock(&(bc)->mu); \
	} while (0)

/* Remembers url as unreachable for DOWN_NS (replacing the oldest entry when full). */
static void server_mark_down(blob_client *bc, const char *url)
{
	size_t slot = 0;
	if (strlen(url) >= BLOB_URL_MAX)
		return;
	pthread_mutex_lock(&bc->mu);
	for (size_t i = 0; i < DOWN_SLOTS; i++) {
		if (!strcmp(bc->down[i].url, url)) {
			slot = i;
			break;
		}
		if (bc->down[i].until_ns < bc->down[slot].until_ns)
			slot = i;
	}
	memcpy(bc->down[slot].url, url, strlen(url) + 1);
	bc->down[slot].until_ns = time_mono_ns() + DOWN_NS;
	pthread_mutex_unlock(&bc->mu);
}

/* url answered: it is not down any more. */
static void server_mark_up(blob_client *bc, const char *url)
{
	pthread_mutex_lock(&bc->mu);
	for (size_t i = 0; i < DOWN_SLOTS; i++)
		if (!strcmp(bc->down[i].url, url))
			bc->down[i].until_ns = 0;
	pthread_mutex_unlock(&bc->mu);
}

static bool server_is_down(blob_client *bc, const char *url)
{
	bool down = false;
	uint64_t now = time_mono_ns();
	pthread_mutex_lock(&bc->mu);
	for (size_t i = 0; i < DOWN_SLOTS && !down; i++)
		down = bc->down[i].until_ns > now && !strcmp(bc->down[i].url, url);
	pthread_mutex_unlock(&bc->mu);
	return down;
}

/* Copies a JSON string member into out (size outlen); false if absent or too long. */
static bool json_copy_str(yajl_val v, const char *key, char *out, size_t outlen)
{
	const char *s;
	if (!json_get_str(v, key, &s) || strlen(s) >= outlen)
		return false;
	memcpy(out, s, strlen(s) + 1);
	return true;
}

static void query_param(buf *url, const char *name, const char *value)
{
	if (!value || !*value)
		return;
	buf_printf(url, "&%s=", name);
	url_encode_query(value, url);
}

/* The master's {"error": "..."} message, for logs. */
static const char *error_message(const struct http_result *r, yajl_val *tree)
{
	const char *msg = NULL;
	*tree = r->body.len ? json_parse(r->body.data, r->body.len, NULL, 0) : NULL;
	if (*tree && json_get_str(*tree, "error", &msg))
		return msg;
	return r->body.data ? r->body.data : "";
}

/* Maps a transfer outcome to "try elsewhere" errors. */
static wfs_err status_err(int status)
{
	if (status >= 200 && status < 300)
		return WFS_OK;
	if (status == 404)
		return WFS_ENOENT;
	if (status == 413)
		return WFS_ETOOBIG;
	if (status == 416)
		return WFS_ERANGE;
	if (status == 507)
		return WFS_ENOSPC; /* this volume is full: another may have room */
	if (status >= 400 && status < 500)
		return WFS_EINVAL;
	return WFS_EUNAVAIL; /* 3xx (volume moved) and 5xx */
}

/*
 * Filer mode: POST /.api/v1/<op> with body, the reply in r. Maps the transport and the
 * filer's answer: WFS_OK (2xx), WFS_ENOENT (404), WFS_ENOSPC (507: the cluster is full),
 * WFS_EINVAL (other 4xx), else WFS_EUNAVAIL.
 */
static wfs_err filer_post(blob_client *bc, const char *op, const buf *body, struct http_result *r)
{
	char *url = xasprintf("http://%s/.api/v1/%s", bc->master, op), auth[JWT_AUTH_HEADER_MAX];
	const char *hdr[] = {"Content-Type: application/json",
			     jwt_filer_auth("POST", strstr(url, "/.api/"), auth), NULL};
	wfs_err err = http_request("POST", url, hdr, body->data, body->len, bc->timeout_ms, r);
	yajl_val v = NULL;
	free(url);
	if (err) {
		log_warn("%s on filer %s: %s", op, bc->master, wfs_strerror(err));
		return err == WFS_ETIMEDOUT ? err : WFS_EUNAVAIL;
	}
	if (r->status >= 200 && r->status < 300)
		return WFS_OK;
	if (r->status != 404)
		log_warn("%s on filer %s: %d %s", op, bc->master, r->status, error_message(r, &v));
	if (v)
		yajl_tree_free(v);
	err = status_err(r->status);
	return err == WFS_ETOOBIG || err == WFS_ERANGE ? WFS_EINVAL : err;
}

/* blob_client_assign through the filer: {"count": 1, ...} -> {"fids": [{fid, url, publicUrl}]}. */
static wfs_err filer_assign(blob_client *bc, const struct blob_assign_params *p,
			    struct blob_assignment *out)
{
	buf body = BUF_INIT;
	struct http_result r;
	yajl_val v = NULL, arr;
	json_w *w = jw_new(&body, false);
	wfs_err err;

	jw_obj_begin(w);
	jw_kv_u64(w, "count", 1);
	if (p && p->collection && *p->collection)
		jw_kv_str(w, "collection", p->collection);
	if (p && p->replication && *p->replication)
		jw_kv_str(w, "replication", p->replication);
	if (p && p->ttl && *p->ttl)
		jw_kv_str(w, "ttl", p->ttl);
	jw_obj_end(w);
	jw_free(w);
	http_result_init(&r);
	err = filer_post(bc, "assign", &body, &r);
	if (err == WFS_ENOENT)
		err = WFS_EUNAVAIL;
	if (err)
		goto out;
	v = json_parse(r.body.data, r.body.len, NULL, 0);
	arr = v ? json_get(v, "fids") : NULL;
	if (!arr || !YAJL_IS_ARRAY(arr) || arr->u.array.len < 1 ||
	    !json_copy_str(arr->u.array.values[0], "fid", out->fid, sizeof(out->fid)) ||
	    !json_copy_str(arr->u.array.values[0], "url", out->url, sizeof(out->url))) {
		log_warn("assign on filer %s: malformed reply", bc->master);
		err = WFS_EUNAVAIL;
		goto out;
	}
	if (!json_copy_str(arr->u.array.values[0], "auth", out->auth, sizeof(out->auth)))
		out->auth[0] = '\0';
	if (!json_copy_str(arr->u.array.values[0], "publicUrl", out->public_url,
			   sizeof(out->public_url)))
		memcpy(out->public_url, out->url, sizeof(out->url));
	STAT_INC(bc, assigns);
out:
	if (v)
		yajl_tree_free(v);
	http_result_free(&r);
	buf_free(&body);
	return err;
}

wfs_err blob_client_assign(blob_client *bc, const struct blob_assign_params *p,
			   struct blob_assignment *out)
{
	buf url = BUF_INIT;
	struct http_result r;
	yajl_val v = NULL;
	wfs_err err;

	if (bc->via_filer)
		return filer_assign(bc, p, out);
	if (!bc->masters)
		return WFS_EINVAL;
	buf_printf(&url, "/dir/assign?count=1");
	if (p) {
		query_param(&url, "collection", p->collection);
		query_param(&url, "replication", p->replication);
		query_param(&url, "ttl", p->ttl);
		query_param(&url, "dataCenter", p->data_center);
		query_param(&url, "rack", p->rack);
		query_param(&url, "dataNode", p->data_node);
	}
	http_result_init(&r);
	err = master_list_request(bc->masters, "GET", url.data, NULL, NULL, 0, bc->timeout_ms, &r,
				  NULL, 0);
	if (err) {
		log_warn("assign on master %s: %s", bc->master, wfs_strerror(err));
		err = err == WFS_ETIMEDOUT ? err : WFS_EUNAVAIL;
		goto out;
	}
	if (r.status != 200) {
		log_warn("assign on master %s: %d %s", bc->master, r.status, error_message(&r, &v));
		/* 507: no free slot for a new volume, the cluster is full */
		if (r.status == 507)
			err = WFS_ENOSPC;
		else
			err = r.status >= 400 && r.status < 500 ? WFS_EINVAL : WFS_EUNAVAIL;
		goto out;
	}
	v = json_parse(r.body.data, r.body.len, NULL, 0);
	if (!v || !json_copy_str(v, "fid", out->fid, sizeof(out->fid)) ||
	    !json_copy_str(v, "url", out->url, sizeof(out->url))) {
		log_warn("assign on master %s: malformed reply", bc->master);
		err = WFS_EUNAVAIL;
		goto out;
	}
	if (!json_copy_str(v, "publicUrl", out->public_url, sizeof(out->public_url)))
		memcpy(out->public_url, out->url, sizeof(out->url));
	if (!json_copy_str(v, "auth", out->auth, sizeof(out->auth)))
		out->auth[0] = '\0';
	STAT_INC(bc, assigns);
out:
	if (v)
		yajl_tree_free(v);
	http_result_free(&r);
	buf_free(&url);
	return err;
}

static struct loc_entry **loc_slot(blob_client *bc, uint32_t vid)
{
	struct loc_entry **pe = &bc->buckets[vid % LOC_BUCKETS];
	while (*pe && (*pe)->vid != vid)
		pe = &(*pe)->next;
	return pe;
}

void blob_client_invalidate(blob_client *bc, uint32_t vid)
{
	struct loc_entry **pe, *e;
	pthread_mutex_lock(&bc->mu);
	pe = loc_slot(bc, vid);
	e = *pe;
	if (e) {
		*pe = e->next;
		bc->stats.invalidations++;
	}
	pthread_mutex_unlock(&bc->mu);
	if (e) {
		free(e->locs);
		free(e);
	}
}

/* Parses a /dir/lookup reply into a new array. */
static wfs_err parse_lookup(const struct http_result *r, struct blob_location **locs, size_t *n)
{
	yajl_val v = json_parse(r->body.data, r->body.len, NULL, 0), arr;
	struct blob_location *l = NULL;
	size_t k = 0;
	wfs_err err = WFS_EUNAVAIL;

	arr = v ? json_get(v, "locations") : NULL;
	if (!arr || !YAJL_IS_ARRAY(arr))
		goto out;
	l = xcalloc(arr->u.array.len ? arr->u.array.len : 1, sizeof(*l));
	for (size_t i = 0; i < arr->u.array.len; i++) {
		yajl_val o = arr->u.array.values[i];
		if (!json_copy_str(o, "url", l[k].url, sizeof(l[k].url)))
			continue;
		if (!json_copy_str(o, "publicUrl", l[k].public_url, sizeof(l[k].public_url)))
			memcpy(l[k].public_url, l[k].url, sizeof(l[k].url));
		json_copy_str(o, "dataCenter", l[k].data_center, sizeof(l[k].data_center));
		k++;
	}
	if (!k) {
		err = WFS_ENOENT;
		goto out;
	}
	*locs = l;
	*n = k;
	l = NULL;
	err = WFS_OK;
out:
	free(l);
	if (v)
		yajl_tree_free(v);
	return err;
}

wfs_err blob_client_lookup(blob_client *bc, uint32_t vid, bool fresh, struct blob_location **locs,
			   size_t *n)
{
	struct loc_entry *e, **pe;
	struct http_result r;
	char url[BLOB_URL_MAX + 64];
	struct blob_location *l = NULL;
	size_t nl = 0;
	wfs_err err;
	bool degraded = false;
	uint64_t now = time_mono_ns();

	pthread_mutex_lock(&bc->mu);
	e = *loc_slot(bc, vid);
	if (e && !fresh && e->expires_ns > now) {
		*n = e->n;
		*locs = xmalloc(e->n * sizeof(**locs));
		memcpy(*locs, e->locs, e->n * sizeof(**locs));
		bc->stats.cache_hits++;
		pthread_mutex_unlock(&bc->mu);
		return WFS_OK;
	}
	bc->stats.lookups++;
	pthread_mutex_unlock(&bc->mu);

	http_result_init(&r);
	if (bc->via_filer) {
		buf body = BUF_INIT;
		buf_printf(&body, "{\"volumeId\":%" PRIu32 "}", vid);
		err = filer_post(bc, "lookupVolume", &body, &r);
		buf_free(&body);
		if (!err)
			err = parse_lookup(&r, &l, &nl);
		goto looked_up;
	}
	if (!bc->masters) {
		err = WFS_EINVAL;
		goto looked_up;
	}
	snprintf(url, sizeof(url), "/dir/lookup?volumeId=%" PRIu32, vid);
	err = master_list_request(bc->masters, "GET", url, NULL, NULL, 0, bc->timeout_ms, &r, NULL,
				  0);
	if (err) {
		log_warn("lookup of volume %" PRIu32 " on master %s: %s", vid, bc->master,
			 wfs_strerror(err));
		err = WFS_EUNAVAIL;
	} else if (r.status == 404) {
		err = WFS_ENOENT;
	} else if (r.status != 200) {
		err = WFS_EUNAVAIL;
	} else {
		err = parse_lookup(&r, &l, &nl);
	}
looked_up:
	http_result_free(&r);
	if (err) {
		blob_client_invalidate(bc, vid);
		return err;
	}

	*locs = xmalloc(nl * sizeof(**locs));
	memcpy(*locs, l, nl * sizeof(**locs));
	*n = nl;
	/* the master still lists a server that just failed (it notices only after missed
	   heartbeats): ask again soon instead of keeping it for the whole ttl */
	for (size_t i = 0; i < nl && !degraded; i++)
		degraded = server_is_down(bc, l[i].url);
	pthread_mutex_lock(&bc->mu);
	pe = loc_slot(bc, vid);
	if (!*pe) {
		*pe = xcalloc(1, sizeof(**pe));
		(*pe)->vid = vid;
	}
	free((*pe)->locs);
	(*pe)->locs = l;
	(*pe)->n = nl;
	(*pe)->expires_ns = time_mono_ns() + (degraded ? MIN(bc->ttl_ns, DOWN_NS) : bc->ttl_ns);
	pthread_mutex_unlock(&bc->mu);
	return WFS_OK;
}

wfs_err blob_client_upload(blob_client *bc, const char *url, const char *fid, const void *data,
			   size_t len, const struct blob_upload_params *p, char *etag)
{
	char auth[JWT_AUTH_HEADER_MAX];
	/* a token minted here is fresh; an assignment's may have aged in a pool */
	const char *hdr[] = {"Content-Type: application/octet-stream",
			     security()->volume_write.key
				     ? jwt_auth_header(&security()->volume_write, fid, auth)
				     : jwt_auth_header_of(p ? p->auth : NULL, auth),
			     NULL};
	buf u = BUF_INIT;
	struct http_result r;
	yajl_val v = NULL;
	wfs_err err;

	buf_printf(&u, "/%s", fid);
	if (p && p->ttl && *p->ttl) {
		buf_append_str(&u, "?ttl=");
		url_encode_query(p->ttl, &u);
	}
	if (p && p->fsync)
		buf_append_str(&u, strchr(u.data, '?') ? "&fsync=true" : "?fsync=true");
	http_result_init(&r);
	/* A non-NULL body even for 0 bytes, so that Content-Length: 0 is sent. */
	err = http_fetch_request(bc->fetch, "PUT", url, u.data, hdr, data ? data : "", len,
				 bc->timeout_ms, UPLOAD_ANSWER_MAX, &r);
	if (err) {
		log_warn("upload of %s to %s: %s", fid, url, wfs_strerror(err));
		if (err != WFS_ETIMEDOUT)
			err = WFS_EUNAVAIL;
		server_mark_down(bc, url);
		goto out;
	}
	err = status_err(r.status);
	if (err) {
		log_warn("upload of %s to %s: %d %s", fid, url, r.status, error_message(&r, &v));
		goto out;
	}
	if (etag) {
		etag[0] = '\0';
		v = json_parse(r.body.data, r.body.len, NULL, 0);
		if (!v || !json_copy_str(v, "eTag", etag, BLOB_ETAG_MAX)) {
			char h[BLOB_ETAG_MAX];
			if (http_result_header(&r, "ETag", h, sizeof(h))) {
				/* the header is quoted, the JSON member is not */
				size_t hl = strlen(h);
				if (hl >= 2 && h[0] == '"' && h[hl - 1] == '"') {
					memcpy(etag, h + 1, hl - 2);
					etag[hl - 2] = '\0';
				} else {
					memcpy(etag, h, hl + 1);
				}
			}
		}
	}
out:
	if (v)
		yajl_tree_free(v);
	http_result_free(&r);
	buf_free(&u);
	return err;
}

/* Best-effort removal of a file id an upload may have half-stored. */
static void forget_upload(blob_client *bc, const char *url, const char *fid)
{
	struct http_result r;
	char *u = xasprintf("http://%s/%s", url, fid), auth[JWT_AUTH_HEADER_MAX];
	const char *hdr[] = {jwt_auth_header(&security()->volume_write, fid, auth), NULL};
	http_result_init(&r);
	(void)http_request("DELETE", u, hdr, NULL, 0, MIN(bc->timeout_ms, 2000), &r);
	http_result_free(&r);
	free(u);
}

wfs_err blob_client_save(blob_client *bc, const struct blob_assign_params *ap,
			 const struct blob_upload_params *up, const void *data, size_t len,
			 char **fid, char *etag)
{
	wfs_err err = WFS_EUNAVAIL;
	int tries = 0, skips = 0;
	bool back_off = false; /* the last attempt failed: wait before the next */
	while (tries < SAVE_TRIES) {
		struct blob_assignment a;
		if (back_off) {
			struct timespec ts = {0, 100000000L * tries};
			nanosleep(&ts, NULL);
			back_off = false;
		}
		err = blob_client_assign(bc, ap, &a);
		if (err == WFS_EINVAL || err == WFS_ENOSPC)
			return err; /* asking again cannot help */
		if (err) {
			tries++;
			back_off = true;
			continue;
		}
		if (skips < DOWN_SKIPS_MAX && server_is_down(bc, a.url)) {
			/* the master has not noticed yet: ask for another id at once (a
			   bounded number of times: when it keeps naming that server, it
			   may be the only one, and back) */
			skips++;
			STAT_INC(bc, down_skips);
			err = WFS_EUNAVAIL;
			continue;
		}
		if (tries)
			STAT_INC(bc, upload_retries);
		tries++;
		struct blob_upload_params upa = {0};
		if (up)
			upa = *up;
		upa.auth = a.auth; /* the master's token, when this node has no key */
		err = blob_client_upload(bc, a.url, a.fid, data, len, &upa, etag);
		if (!err) {
			server_mark_up(bc, a.url);
			*fid = xstrdup(a.fid);
			return WFS_OK;
		}
		if (err != WFS_EUNAVAIL && err != WFS_ETIMEDOUT && err != WFS_ENOSPC)
			return err;
		/* a full volume: another assignment may name one with room */
		if (!server_is_down(bc, a.url))
			forget_upload(bc, a.url, a.fid); /* it answered 5xx: drop what it kept */
		back_off = true;
	}
	return err;
}

/* Appends r's body[off, off+len) to out, taking the body's storage when that is all of it. */
static void take_body(buf *out, struct http_result *r, size_t off, size_t len)
{
	if (!out->len && !off && len == r->body.len && r->body.data) {
		buf_free(out);
		*out = r->body;
		buf_init(&r->body);
		return;
	}
	buf_append(out, r->body.data + off, len);
}

/* One attempt at one replica: appends [off, off+len) (len 0 = all) to out. */
static wfs_err read_one(blob_client *bc, const char *url, const char *fid, uint64_t off,
			uint64_t len, size_t max_whole, buf *out)
{
	char range[80], auth[JWT_AUTH_HEADER_MAX];
	const char *a = jwt_auth_header(&security()->volume_read, fid, auth);
	/* a NULL ends the list: the token goes after the range when both are sent */
	const char *hdr[] = {range, a, NULL}, *hdr_whole[] = {a, NULL};
	struct http_result r;
	char *path;
	wfs_err err;

	/* a replica on this host: its bytes straight from the volume file, else over HTTP */
	if (bc->sc) {
		err = short_circuit_read(bc->sc, url, fid, off, len, max_whole, out);
		if (err != WFS_ENOSYS)
			return err;
	}
	path = xasprintf("/%s", fid);
	snprintf(range, sizeof(range), "Range: bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
	http_result_init(&r);
	/* A whole-blob read (len 0) sends no Range: the volume server then checks its CRC. */
	err = http_fetch_get(bc->fetch, url, path, len ? hdr : hdr_whole, bc->timeout_ms,
			     len ? UINT64_MAX : max_whole, &r);
	if (err == WFS_ETOOBIG)
		goto out; /* it answered, with more than the caller takes whole */
	if (err) {
		log_warn("read of %s from %s: %s", fid, url, wfs_strerror(err));
		if (err != WFS_ETIMEDOUT)
			err = WFS_EUNAVAIL;
		server_mark_down(bc, url);
		goto out;
	}
	server_mark_up(bc, url); /* it answered */
	err = status_err(r.status);
	if (err)
		goto out;
	if (!len) {
		if (r.body.len > max_whole) {
			err = WFS_ETOOBIG;
			goto out;
		}
		take_body(out, &r, 0, r.body.len);
	} else if (r.status == 200) {
		/* the server ignored the range: cut it out of the whole blob */
		if (r.body.len < off + len) {
			err = WFS_ECORRUPT;
			goto out;
		}
		take_body(out, &r, off, len);
	} else {
		if (r.body.len != len) {
			err = WFS_ECORRUPT;
			goto out;
		}
		take_body(out, &r, 0, len);
	}
out:
	if (err && err != WFS_ENOENT)
		log_debug("read of %s from %s: %s (status %d)", fid, url, wfs_strerror(err),
			  r.status);
	http_result_free(&r);
	free(path);
	return err;
}

/* Whether url is among the n first entries of tried. */
static bool url_in(char (*tried)[BLOB_URL_MAX], size_t n, const char *url)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(tried[i], url))
			return true;
	return false;
}

wfs_err blob_client_read(blob_client *bc, const char *fid, uint64_t off, uint64_t len,
			 size_t max_whole, buf *out)
{
	struct fid f;
	wfs_err err = WFS_OK, last = WFS_EUNAVAIL;
	bool any_answer = false, failed_once = false;
	char(*tried)[BLOB_URL_MAX] = NULL; /* servers that failed, not asked again */
	size_t ntried = 0;

	if (fid_parse(fid, &f, NULL))
		return WFS_EINVAL;
	for (int round = 0; round < 2; round++) {
		struct blob_location *locs = NULL;
		size_t n = 0, start;
		bool *down;
		err = blob_client_lookup(bc, f.volume_id, round > 0, &locs, &n);
		if (err == WFS_ENOENT)
			/* the volume exists (a chunk names it) but no live server holds it */
			err = WFS_EUNAVAIL;
		if (err)
			goto out;
		tried = xrealloc(tried, (ntried + n) * sizeof(*tried));
		down = xcalloc(n, sizeof(*down));
		for (size_t i = 0; i < n; i++)
			down[i] = server_is_down(bc, locs[i].url);
		/* spread reads over the replicas; servers known down go last */
		start = (size_t)(f.key % n);
		err = WFS_EUNAVAIL;
		for (size_t k = 0; k < 2 * n && err; k++) {
			size_t i = (start + k) % n, mark = out->len;
			if ((k < n) == down[i] || url_in(tried, ntried, locs[i].url))
				continue;
			err = read_one(bc, locs[i].url, fid, off, len, max_whole, out);
			if (!err || err == WFS_ETOOBIG || err == WFS_ERANGE || err == WFS_EINVAL)
				break;
			out->len = mark;
			memcpy(tried[ntried++], locs[i].url, BLOB_URL_MAX);
			if (err == WFS_ENOENT || err == WFS_ECORRUPT) {
				any_answer = true;
				last = err;
			}
			/* the next read asks the master again: the server may have moved or died */
			if (!failed_once) {
				blob_client_invalidate(bc, f.volume_id);
				failed_once = true;
			}
			STAT_INC(bc, read_failovers);
		}
		free(down);
		free(locs);
		if (!err || err == WFS_ETOOBIG || err == WFS_ERANGE || err == WFS_EINVAL)
			goto out;
		/* every known replica failed: ask the master once more for new ones */
		blob_client_invalidate(bc, f.volume_id);
	}
	err = WFS_EUNAVAIL;
out:
	free(tried);
	if (err == WFS_EUNAVAIL && any_answer)
		err = last;
	return err;
}

wfs_err blob_client_delete(blob_client *bc, const char *fid)
{
	struct fid f;
	wfs_err err;
	struct blob_location *locs = NULL;
	size_t n = 0;

	if (fid_parse(fid, &f, NULL))
		return WFS_EINVAL;
	for (int round = 0; round < 2; round++) {
		err = blob_client_lookup(bc, f.volume_id, round > 0, &locs, &n);
		if (err)
			return err == WFS_ENOENT ? WFS_EUNAVAIL : err;
		for (size_t i = 0; i < n; i++) {
			struct http_result r;
			char *u = xasprintf("http://%s/%s", locs[i].url, fid);
			char auth[JWT_AUTH_HEADER_MAX];
			const char *hdr[] = {jwt_auth_header(&security()->volume_write, fid, auth),
					     NULL};
			http_result_init(&r);
			err = http_request("DELETE", u, hdr, NULL, 0, bc->timeout_ms, &r);
			if (!err)
				err = r.status == 404 ? WFS_OK : status_err(r.status);
			else if (err != WFS_ETIMEDOUT)
				err = WFS_EUNAVAIL;
			http_result_free(&r);
			free(u);
			if (err != WFS_EUNAVAIL && err != WFS_ETIMEDOUT) {
				free(locs);
				return err;
			}
		}
		free(locs);
		locs = NULL;
		blob_client_invalidate(bc, f.volume_id);
	}
	log_warn("delete of %s: no replica answered", fid);
	return err;
}

wfs_err blob_client_sync_volume(blob_client *bc, uint32_t vid)
{
	struct blob_location *locs = NULL;
	size_t n = 0;
	wfs_err err = blob_client_lookup(bc, vid, false, &locs, &n);
	char path[64];

	if (err)
		return err == WFS_ENOENT ? WFS_EUNAVAIL : err;
	snprintf(path, sizeof(path), "/admin/volume/sync?volume=%" PRIu32, vid);
	for (size_t i = 0; i < n && !err; i++) {
		struct http_result r;
		http_result_init(&r);
		err = http_fetch_request(bc->fetch, "POST", locs[i].url, path, NULL, "", 0,
					 bc->timeout_ms, UPLOAD_ANSWER_MAX, &r);
		if (err) {
			if (err != WFS_ETIMEDOUT)
				err = WFS_EUNAVAIL;
			server_mark_down(bc, locs[i].url);
		} else {
			err = status_err(r.status);
		}
		if (err)
			log_warn("sync of volume %" PRIu32 " on %s: %s", vid, locs[i].url,
				 wfs_strerror(err));
		http_result_free(&r);
	}
	if (err)
		blob_client_invalidate(bc, vid); /* the next try asks the master again */
	free(locs);
	return err;
}

wfs_err blob_client_delete_many(blob_client *bc, const char *const *fids, size_t n)
{
	wfs_err first = WFS_OK;
	for (size_t i = 0; i < n; i++) {
		wfs_err err = blob_client_delete(bc, fids[i]);
		if (err && !first)
			first = err;
	}
	return first;
}
