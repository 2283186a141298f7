/*
 * The volume server's erasure-coded volumes: the registry of those held here, needle reads
 * and deletes on them, and the /admin/ec/... endpoints weedfs shell's ec.* commands drive.
 * docs/internal-protocol.md ("Erasure coding") gives every request and answer.
 *
 * DESIGN
 * - An EC volume is registered when its .ecx, .ecj and .vif are here, whatever shards are
 *   (a server may hold any subset). A server holding vid both as a normal volume and as
 *   shards (between ec.encode's generate and the removal of the original, or after a
 *   decode) serves the normal volume: it is the one that is complete for sure.
 * - Reads run on the worker pool: a piece on a shard held elsewhere is fetched from that
 *   server (/admin/ec/shard_read), the shards' locations coming from the master's
 *   /vol/ec/lookup, kept a few seconds. Missing pieces are rebuilt by ec_volume_read.
 * - A delete is journaled here, then forwarded to every other server holding shards of
 *   the volume (each keeps its own .ecx/.ecj); like a replicated write it is acknowledged
 *   only when they all have it, and a failure leaves the local journal entry standing.
 * - generate, copy, rebuild and to_volume are pool jobs; one at a time per volume (409).
 *   Files are received under ".tmp" names and renamed once complete, the .vif last, so a
 *   job cut off by kill -9 never leaves files that pass for an EC volume; vs_ec_open
 *   removes the leftovers.
 */
#include "config.h"
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ec_volume.h"
#include "http_client.h"
#include "log.h"
#include "util.h"
#include "vs_int.h"

#define OCTETS           "application/octet-stream"
#define EC_LOCS_TTL_NS   (5ull * 1000000000ull)
#define SHARD_READ_MAX   (64u << 20)
#define EC_HOLDERS_MAX   8 /* locations remembered per shard */
#define EC_FILE_MAX_DIRS 64

struct ec_locs {
	uint32_t vid;
	uint64_t expires_ns;
	char *urls[EC_TOTAL_SHARDS][EC_HOLDERS_MAX];
	int n[EC_TOTAL_SHARDS];
};

struct vs_ec {
	pthread_rwlock_t lock; /* guards vols */
	ec_volume **vols;
	size_t nvols, capvols;
	pthread_mutex_t busy_lock; /* guards busy, locs */
	uint32_t *busy;            /* volumes with a job running */
	size_t nbusy, capbusy;
	struct ec_locs *locs;
	size_t nlocs;
};

/* ---- registry ---- */

static ssize_t find(struct vs_ec *e, uint32_t vid)
{
	for (size_t i = 0; i < e->nvols; i++)
		if (ec_volume_id(e->vols[i]) == vid)
			return (ssize_t)i;
	return -1;
}

/* The EC volume vid with a reference, or NULL. */
static ec_volume *ec_get(struct volume_server *vs, uint32_t vid)
{
	struct vs_ec *e = vs->ec;
	ec_volume *v = NULL;
	ssize_t i;
	if (!e)
		return NULL;
	pthread_rwlock_rdlock(&e->lock);
	i = find(e, vid);
	if (i >= 0) {
		v = e->vols[i];
		ec_volume_ref(v);
	}
	pthread_rwlock_unlock(&e->lock);
	return v;
}

/* Registers v (takes the reference); an existing entry of the same id is replaced. */
static void ec_add(struct volume_server *vs, ec_volume *v)
{
	struct vs_ec *e = vs->ec;
	ec_volume *old = NULL;
	ssize_t i;
	pthread_rwlock_wrlock(&e->lock);
	i = find(e, ec_volume_id(v));
	if (i >= 0) {
		old = e->vols[i];
		e->vols[i] = v;
	} else {
		if (e->nvols == e->capvols)
			e->vols = xrealloc(e->vols, (e->capvols = e->capvols ? e->capvols * 2 : 8) *
							    sizeof(*e->vols));
		e->vols[e->nvols++] = v;
	}
	pthread_rwlock_unlock(&e->lock);
	if (old)
		ec_volume_unref(old);
}

/* Unregisters vid; returns its reference (NULL when unknown). */
static ec_volume *ec_take(struct volume_server *vs, uint32_t vid)
{
	struct vs_ec *e = vs->ec;
	ec_volume *v = NULL;
	ssize_t i;
	pthread_rwlock_wrlock(&e->lock);
	i = find(e, vid);
	if (i >= 0) {
		v = e->vols[i];
		e->vols[i] = e->vols[--e->nvols];
	}
	pthread_rwlock_unlock(&e->lock);
	return v;
}

/* Marks vid busy; false when a job on it is running already. */
static bool busy_begin(struct vs_ec *e, uint32_t vid)
{
	bool ok = true;
	pthread_mutex_lock(&e->busy_lock);
	for (size_t i = 0; i < e->nbusy && ok; i++)
		ok = e->busy[i] != vid;
	if (ok) {
		if (e->nbusy == e->capbusy)
			e->busy = xrealloc(e->busy, (e->capbusy = e->capbusy ? e->capbusy * 2 : 8) *
							    sizeof(*e->busy));
		e->busy[e->nbusy++] = vid;
	}
	pthread_mutex_unlock(&e->busy_lock);
	return ok;
}

static void busy_end(struct vs_ec *e, uint32_t vid)
{
	pthread_mutex_lock(&e->busy_lock);
	for (size_t i = 0; i < e->nbusy; i++)
		if (e->busy[i] == vid) {
			e->busy[i] = e->busy[--e->nbusy];
			break;
		}
	pthread_mutex_unlock(&e->busy_lock);
}

/* Removes what a torn job left in dir (".tmp" files of EC volumes). */
static bool is_ec_leftover(const char *name)
{
	size_t n = strlen(name);
	return n > 4 && !strcmp(name + n - 4, ".tmp") &&
	       (strstr(name, ".ec") || strstr(name, ".vif"));
}

static void open_dir(struct volume_server *vs, const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	if (!d)
		return;
	while ((de = readdir(d))) {
		char coll[VOLUME_COLLECTION_MAX];
		struct ec_volume_info in;
		ec_volume *v;
		uint32_t id;
		wfs_err err;
		if (is_ec_leftover(de->d_name)) {
			log_warn("removing %s/%s left by an unfinished erasure-coding job", path,
				 de->d_name);
			unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (!volume_file_name_parse(de->d_name, ".ecx", coll, sizeof(coll), &id))
			continue;
		err = ec_volume_open(path, coll, id, &v);
		if (err) {
			log_error("could not open EC volume %s/%s: %s", path, de->d_name,
				  wfs_strerror(err));
			continue;
		}
		ec_volume_get_info(v, &in);
		if (!in.shard_bits) {
			/* its shards are gone (a lost disk): nothing to serve, the index goes too */
			log_warn("EC volume %" PRIu32 " in %s has no shard left; removing its index",
				 id, path);
			ec_volume_destroy(v);
			ec_volume_unref(v);
			continue;
		}
		ec_add(vs, v);
		log_info("loaded EC volume %" PRIu32 " from %s (shards 0x%04x)", id, path,
			 in.shard_bits);
	}
	closedir(d);
}

void vs_ec_open(struct volume_server *vs)
{
	const char *dirs[EC_FILE_MAX_DIRS];
	size_t n;
	vs->ec = xcalloc(1, sizeof(*vs->ec));
	pthread_rwlock_init(&vs->ec->lock, NULL);
	pthread_mutex_init(&vs->ec->busy_lock, NULL);
	n = volume_store_dirs(vs->store, dirs, EC_FILE_MAX_DIRS);
	for (size_t i = 0; i < n && i < EC_FILE_MAX_DIRS; i++)
		open_dir(vs, dirs[i]);
}

static void locs_free(struct ec_locs *l)
{
	for (int s = 0; s < EC_TOTAL_SHARDS; s++)
		for (int i = 0; i < l->n[s]; i++)
			free(l->urls[s][i]);
}

void vs_ec_close(struct volume_server *vs)
{
	struct vs_ec *e = vs->ec;
	if (!e)
		return;
	for (size_t i = 0; i < e->nvols; i++)
		ec_volume_unref(e->vols[i]);
	for (size_t i = 0; i < e->nlocs; i++)
		locs_free(&e->locs[i]);
	free(e->locs);
	free(e->vols);
	free(e->busy);
	pthread_rwlock_destroy(&e->lock);
	pthread_mutex_destroy(&e->busy_lock);
	free(e);
	vs->ec = NULL;
}

void vs_ec_heartbeat(struct volume_server *vs, json_w *w)
{
	struct vs_ec *e = vs->ec;
	jw_key(w, "ecShards");
	jw_arr_begin(w);
	if (e) {
		pthread_rwlock_rdlock(&e->lock);
		for (size_t i = 0; i < e->nvols; i++) {
			struct ec_volume_info in;
			ec_volume_get_info(e->vols[i], &in);
			jw_obj_begin(w);
			jw_kv_u64(w, "id", in.id);
			jw_kv_str(w, "collection", in.collection);
			jw_kv_u64(w, "shards", in.shard_bits);
			jw_kv_u64(w, "shardSize", in.shard_size);
			jw_kv_u64(w, "entries", in.entries);
			jw_kv_u64(w, "deleted", in.deleted);
			jw_obj_end(w);
		}
		pthread_rwlock_unlock(&e->lock);
	}
	jw_arr_end(w);
}

/* ---- where the other shards are ---- */

/* Fills l from the master's /vol/ec/lookup. Blocking. */
static wfs_err locs_fetch(struct volume_server *vs, uint32_t vid, struct ec_locs *l)
{
	struct http_result res;
	char url[512], err_text[128];
	yajl_val root = NULL, shards;
	wfs_err err;

	memset(l, 0, sizeof(*l));
	l->vid = vid;
	if (!vs->masters)
		return WFS_ENOENT;
	snprintf(url, sizeof(url), "/vol/ec/lookup?volumeId=%" PRIu32, vid);
	http_result_init(&res);
	err = master_list_request(vs->masters, "GET", url, NULL, NULL, 0, 10000, &res, NULL, 0);
	if (!err && res.status != 200)
		err = res.status == 404 ? WFS_ENOENT : WFS_EUNAVAIL;
	if (!err)
		root = json_parse(res.body.data, res.body.len, err_text, sizeof(err_text));
	shards = root ? json_get(root, "shards") : NULL;
	if (!err && !YAJL_IS_ARRAY(shards))
		err = WFS_ECORRUPT;
	for (size_t i = 0; !err && i < shards->u.array.len; i++) {
		yajl_val sh = shards->u.array.values[i], ls = json_get(sh, "locations");
		uint64_t id;
		if (!json_get_u64(sh, "shard", &id) || id >= EC_TOTAL_SHARDS || !YAJL_IS_ARRAY(ls))
			continue;
		for (size_t k = 0; k < ls->u.array.len && l->n[id] < EC_HOLDERS_MAX; k++) {
			const char *u;
			if (json_get_str(ls->u.array.values[k], "url", &u) && strcmp(u, vs->self))
				l->urls[id][l->n[id]++] = xstrdup(u);
		}
	}
	if (root)
		yajl_tree_free(root);
	http_result_free(&res);
	return err;
}

/* A copy of vid's shard locations, from the cache or the master. Blocking. */
static wfs_err locs_get(struct volume_server *vs, uint32_t vid, struct ec_locs *out)
{
	struct vs_ec *e = vs->ec;
	uint64_t now = time_mono_ns();
	struct ec_locs fresh;
	wfs_err err;

	pthread_mutex_lock(&e->busy_lock);
	for (size_t i = 0; i < e->nlocs; i++)
		if (e->locs[i].vid == vid && e->locs[i].expires_ns > now) {
			*out = e->locs[i];
			for (int s = 0; s < EC_TOTAL_SHARDS; s++)
				for (int k = 0; k < out->n[s]; k++)
					out->urls[s][k] = xstrdup(out->urls[s][k]);
			pthread_mutex_unlock(&e->busy_lock);
			return WFS_OK;
		}
	pthread_mutex_unlock(&e->busy_lock);
	err = locs_fetch(vs, vid, &fresh);
	if (err) {
		locs_free(&fresh);
		return err;
	}
	fresh.expires_ns = now + EC_LOCS_TTL_NS;
	*out = fresh;
	for (int s = 0; s < EC_TOTAL_SHARDS; s++)
		for (int k = 0; k < out->n[s]; k++)
			out->urls[s][k] = xstrdup(fresh.urls[s][k]);
	pthread_mutex_lock(&e->busy_lock);
	for (size_t i = 0; i < e->nlocs; i++)
		if (e->locs[i].vid == vid) {
			locs_free(&e->locs[i]);
			e->locs[i] = e->locs[--e->nlocs];
			break;
		}
	e->locs = xrealloc(e->locs, (e->nlocs + 1) * sizeof(*e->locs));
	e->locs[e->nlocs++] = fresh;
	pthread_mutex_unlock(&e->busy_lock);
	return WFS_OK;
}

/* One piece fetched ahead for a reconstruction. */
struct prefetched {
	int shard;
	uint64_t offset, size;
	buf data;
	bool ok;
};

/*
 * The state of one read or delete: its shard locations, fetched once when first needed,
 * and the pieces a reconstruction asked for. A reconstruction asks for the same range of
 * shard after shard; at the second such request every other remote shard's piece of that
 * range is fetched at once, in parallel, instead of one round trip after another.
 */
struct remote {
	struct volume_server *vs;
	struct ec_locs locs;
	bool loaded;
	wfs_err load_err;
	int last_shard;
	uint64_t last_offset, last_size;
	struct prefetched pre[EC_TOTAL_SHARDS];
	size_t npre;
};

static wfs_err remote_load(struct remote *r, uint32_t vid)
{
	if (!r->loaded) {
		r->loaded = true;
		r->load_err = locs_get(r->vs, vid, &r->locs);
	}
	return r->load_err;
}

static char *shard_read_url(const char *host, uint32_t vid, int shard, uint64_t offset,
			    uint64_t size)
{
	return xasprintf("http://%s/admin/ec/shard_read?volume=%" PRIu32 "&shard=%d&offset=%" PRIu64
			 "&size=%" PRIu64, host, vid, shard, offset, size);
}

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
	buf_append(arg, data, size * n);
	return size * n;
}

/* One curl multi handle per worker thread, kept: its connection cache makes the parallel
 * fetches of the next reconstruction reuse the connections of this one. */
static pthread_key_t multi_key;
static pthread_once_t multi_once = PTHREAD_ONCE_INIT;

static void multi_free(void *m) { curl_multi_cleanup(m); }
static void multi_key_init(void) { pthread_key_create(&multi_key, multi_free); }

static CURLM *thread_multi(void)
{
	CURLM *m;
	pthread_once(&multi_once, multi_key_init);
	m = pthread_getspecific(multi_key);
	if (!m && (m = curl_multi_init())) {
		curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, 4L * EC_TOTAL_SHARDS);
		pthread_setspecific(multi_key, m);
	}
	return m;
}

/* Fetches [offset, offset + size) of every remote shard but `except` and those held here,
 * all at once (curl multi), into r->pre. */
static void prefetch(struct remote *r, uint32_t vid, int except, uint64_t offset, uint64_t size)
{
	CURLM *multi = thread_multi();
	CURL *easy[EC_TOTAL_SHARDS] = {0};
	int running = 0;
	char *urls[EC_TOTAL_SHARDS] = {0};

	if (!multi)
		return;
	for (int s = 0; s < EC_TOTAL_SHARDS; s++) {
		struct prefetched *p;
		if (s == except || !r->locs.n[s])
			continue;
		p = &r->pre[r->npre++];
		p->shard = s;
		p->offset = offset;
		p->size = size;
		buf_init(&p->data);
		urls[s] = shard_read_url(r->locs.urls[s][0], vid, s, offset, size);
		easy[s] = curl_easy_init();
		if (!easy[s])
			continue;
		curl_easy_setopt(easy[s], CURLOPT_URL, urls[s]);
		curl_easy_setopt(easy[s], CURLOPT_WRITEFUNCTION, collect);
		curl_easy_setopt(easy[s], CURLOPT_WRITEDATA, &p->data);
		curl_easy_setopt(easy[s], CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(easy[s], CURLOPT_TIMEOUT_MS, 10000L);
		curl_easy_setopt(easy[s], CURLOPT_PRIVATE, p);
		curl_multi_add_handle(multi, easy[s]);
	}
	do {
		if (curl_multi_perform(multi, &running) != CURLM_OK)
			break;
		if (running)
			curl_multi_poll(multi, NULL, 0, 1000, NULL);
	} while (running);
	for (CURLMsg *msg; (msg = curl_multi_info_read(multi, &running));) {
		struct prefetched *p = NULL;
		long status = 0;
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&p);
		curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
		p->ok = msg->data.result == CURLE_OK && status == 200 && p->data.len == p->size;
	}
	for (int s = 0; s < EC_TOTAL_SHARDS; s++) {
		if (easy[s]) {
			curl_multi_remove_handle(multi, easy[s]);
			curl_easy_cleanup(easy[s]);
		}
		free(urls[s]);
	}
}

/* The prefetched piece of shard at [offset, offset + size), or NULL. */
static struct prefetched *prefetched_find(struct remote *r, int shard, uint64_t offset,
					  uint64_t size)
{
	for (size_t i = 0; i < r->npre; i++)
		if (r->pre[i].shard == shard && r->pre[i].offset == offset && r->pre[i].size == size)
			return &r->pre[i];
	return NULL;
}

/* ec_fetch_fn: the piece from a server holding the shard. */
static wfs_err fetch_remote(void *ctx, uint32_t vid, int shard, uint64_t offset, uint64_t size,
			    uint8_t *out)
{
	struct remote *r = ctx;
	wfs_err err = remote_load(r, vid);
	struct prefetched *p;
	int prev = r->last_shard;

	if (err)
		return err;
	p = prefetched_find(r, shard, offset, size);
	if (!p && r->last_size == size && r->last_offset == offset && prev != shard) {
		/* a reconstruction: the other shards' pieces of this range come next */
		for (size_t i = 0; i < r->npre; i++)
			buf_free(&r->pre[i].data);
		r->npre = 0;
		prefetch(r, vid, prev, offset, size);
		p = prefetched_find(r, shard, offset, size);
	}
	r->last_shard = shard;
	r->last_offset = offset;
	r->last_size = size;
	if (p && p->ok) {
		memcpy(out, p->data.data, size);
		return WFS_OK;
	}
	err = WFS_ENOENT; /* not prefetched, or that holder failed: every holder in turn */
	for (int i = 0; i < r->locs.n[shard]; i++) {
		struct http_result res;
		char *url = shard_read_url(r->locs.urls[shard][i], vid, shard, offset, size);
		http_result_init(&res);
		if (!http_get(url, 10000, &res) && res.status == 200 && res.body.len == size) {
			memcpy(out, res.body.data, size);
			err = WFS_OK;
		}
		http_result_free(&res);
		free(url);
		if (!err)
			break;
	}
	return err;
}

static void remote_free(struct remote *r)
{
	if (r->loaded && !r->load_err)
		locs_free(&r->locs);
	for (size_t i = 0; i < r->npre; i++)
		buf_free(&r->pre[i].data);
}

/* ---- needle reads and deletes ---- */

struct needle_job {
	struct volume_server *vs;
	http_req *req;
	ec_volume *v;
	struct fid_path f;
	struct remote remote;
	buf storage;
	struct needle n;
	wfs_err err;
	int status; /* deletes: the answer */
	char msg[300];
};

static void needle_job_free(struct needle_job *j)
{
	remote_free(&j->remote);
	ec_volume_unref(j->v);
	buf_free(&j->storage);
	free(j);
}

static struct needle_job *needle_job_new(struct volume_server *vs, http_req *req, ec_volume *v,
					 const struct fid_path *f)
{
	struct needle_job *j = xcalloc(1, sizeof(*j));
	j->vs = vs;
	j->req = req;
	j->v = v;
	j->f = *f;
	j->remote.vs = vs;
	j->remote.last_shard = -1;
	buf_init(&j->storage);
	return j;
}

static void read_done(http_req *req, void *arg)
{
	struct needle_job *j = arg;
	if (j->err) {
		if (j->err == WFS_ECORRUPT)
			log_error("EC volume %" PRIu32 ": needle %" PRIx64 " is corrupt beyond repair",
				  j->f.vid, j->f.key);
		http_resp_error(req, wfs_err_http_status(j->err), "%s", wfs_strerror(j->err));
	} else {
		struct needle_blob blob = {-1, 0};
		vs_answer_needle(j->vs, req, &j->f, &j->n, &blob);
	}
	needle_job_free(j);
}

static void read_run(void *arg)
{
	struct needle_job *j = arg;
	j->err = ec_volume_read(j->v, j->f.key, j->f.cookie, fetch_remote, &j->remote, &j->storage,
				&j->n);
	http_req_defer(j->req, read_done, j);
}

bool vs_ec_read(struct volume_server *vs, http_req *req, const struct fid_path *f)
{
	ec_volume *v = ec_get(vs, f->vid);
	struct needle_job *j;
	if (!v)
		return false;
	j = needle_job_new(vs, req, v, f);
	if (!vs_submit(vs, read_run, j)) {
		needle_job_free(j);
		http_resp_error(req, 503, "server is stopping");
	}
	return true;
}

static void delete_done(http_req *req, void *arg)
{
	struct needle_job *j = arg;
	if (j->status == 202) {
		buf b = BUF_INIT;
		buf_printf(&b, "{\"size\":%" PRIu32 "}", j->n.size);
		http_resp_send_json(req, 202, &b);
		buf_free(&b);
	} else {
		http_resp_error(req, j->status, "delete: %s", j->msg);
	}
	needle_job_free(j);
}

/* POSTs /admin/ec/blob_delete of the key to every other server holding shards. */
static bool forward_delete(struct needle_job *j)
{
	char *done[EC_TOTAL_SHARDS * EC_HOLDERS_MAX];
	int ndone = 0;
	bool ok = true;

	if (remote_load(&j->remote, j->f.vid)) {
		snprintf(j->msg, sizeof(j->msg), "no shard locations for the other servers: %s",
			 wfs_strerror(j->remote.load_err));
		return false;
	}
	for (int s = 0; s < EC_TOTAL_SHARDS; s++)
		for (int i = 0; i < j->remote.locs.n[s]; i++) {
			const char *u = j->remote.locs.urls[s][i];
			struct http_result res;
			char url[512];
			bool seen = false;
			for (int k = 0; k < ndone && !seen; k++)
				seen = !strcmp(done[k], u);
			if (seen)
				continue;
			done[ndone++] = (char *)u;
			snprintf(url, sizeof(url),
				 "http://%s/admin/ec/blob_delete?volume=%" PRIu32 "&key=%" PRIu64, u,
				 j->f.vid, j->f.key);
			http_result_init(&res);
			if (http_request("POST", url, NULL, NULL, 0, 10000, &res) ||
			    (res.status != 202 && res.status != 404)) {
				snprintf(j->msg, sizeof(j->msg), "journaling on %s failed (status %d)", u,
					 res.status);
				ok = false;
			}
			http_result_free(&res);
		}
	return ok;
}

static void delete_run(void *arg)
{
	struct needle_job *j = arg;
	wfs_err err = ec_volume_read(j->v, j->f.key, j->f.cookie, fetch_remote, &j->remote,
				     &j->storage, &j->n);
	if (!err)
		err = ec_volume_delete(j->v, j->f.key);
	if (err) {
		j->status = wfs_err_http_status(err);
		snprintf(j->msg, sizeof(j->msg), "%s", wfs_strerror(err));
	} else {
		j->status = forward_delete(j) ? 202 : 500;
	}
	http_req_defer(j->req, delete_done, j);
}

bool vs_ec_delete(struct volume_server *vs, http_req *req, const struct fid_path *f)
{
	ec_volume *v = ec_get(vs, f->vid);
	struct needle_job *j;
	if (!v)
		return false;
	j = needle_job_new(vs, req, v, f);
	if (!vs_submit(vs, delete_run, j)) {
		needle_job_free(j);
		http_resp_error(req, 503, "server is stopping");
	}
	return true;
}

/* ---- admin jobs ---- */

struct ec_job {
	struct volume_server *vs;
	http_req *req;
	uint32_t vid;
	uint16_t shards;
	uint64_t key, offset, size;
	char collection[VOLUME_COLLECTION_MAX], source[256];
	void (*run)(struct ec_job *);
	bool busy; /* holds the volume's busy mark */
	/* the answer */
	int status;
	char msg[400];
	buf out; /* the JSON (status 200/202) or the bytes (shard_read) */
	bool bytes;
};

static void job_fail(struct ec_job *j, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void job_fail(struct ec_job *j, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(j->msg, sizeof(j->msg), fmt, ap);
	va_end(ap);
	j->status = status;
}

static void job_done(http_req *req, void *arg)
{
	struct ec_job *j = arg;
	if (j->status >= 300)
		http_resp_error(req, j->status, "%s", j->msg);
	else if (j->bytes)
		http_resp_send(req, j->status, j->out.data, j->out.len);
	else
		http_resp_send_json(req, j->status, &j->out);
	if (j->busy)
		busy_end(j->vs->ec, j->vid);
	buf_free(&j->out);
	free(j);
}

static void job_main(void *arg)
{
	struct ec_job *j = arg;
	j->status = 200;
	j->run(j);
	http_req_defer(j->req, job_done, j);
}

/* Writes {"volume": vid, "shards": bits of v, ...} as the job's answer. */
static void answer_info(struct ec_job *j, ec_volume *v, const char *extra_key, uint64_t extra)
{
	struct ec_volume_info in;
	json_w *w = jw_new(&j->out, false);
	ec_volume_get_info(v, &in);
	jw_obj_begin(w);
	jw_kv_u64(w, "volume", in.id);
	jw_kv_str(w, "collection", in.collection);
	jw_kv_u64(w, "shards", in.shard_bits);
	jw_kv_u64(w, "shardSize", in.shard_size);
	jw_kv_u64(w, "datSize", in.vif.dat_size);
	jw_kv_u64(w, "entries", in.entries);
	jw_kv_u64(w, "deleted", in.deleted);
	if (extra_key)
		jw_kv_u64(w, extra_key, extra);
	jw_obj_end(w);
	jw_free(w);
}

static char *base_of(const char *dir, const char *collection, uint32_t vid)
{
	return volume_file_path(dir, collection, vid, "");
}

static void fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* generate: the shards of a sealed normal volume held here, in its directory. */
static void run_generate(struct ec_job *j)
{
	volume *v = volume_store_get(j->vs->store, j->vid);
	struct volume_info in;
	struct ec_vif vif;
	ec_volume *ev;
	char *base;
	wfs_err err;

	if (!v) {
		job_fail(j, 404, "volume %" PRIu32 " not found", j->vid);
		return;
	}
	ev = ec_get(j->vs, j->vid);
	if (ev) {
		ec_volume_unref(ev);
		volume_unref(v);
		job_fail(j, 409, "volume %" PRIu32 " has EC shards here already", j->vid);
		return;
	}
	volume_get_info(v, &in);
	if (!in.read_only) {
		volume_unref(v);
		job_fail(j, 409, "volume %" PRIu32 " is writable: seal it first (volume.mark "
			 "-readonly)", j->vid);
		return;
	}
	memset(&vif, 0, sizeof(vif));
	vif.version = in.version;
	snprintf(vif.collection, sizeof(vif.collection), "%s", in.collection);
	replica_placement_format(&in.rp, vif.replication);
	ttl_format(&in.ttl, vif.ttl);
	base = base_of(volume_dir(v), in.collection, j->vid);
	ec_remove_leftovers(base);
	err = ec_encode_volume(base, &ec_default_blocks, &vif, j->msg, sizeof(j->msg));
	if (!err)
		err = ec_volume_open(volume_dir(v), in.collection, j->vid, &ev);
	if (err) {
		if (!j->msg[0])
			snprintf(j->msg, sizeof(j->msg), "%s", wfs_strerror(err));
		j->status = wfs_err_http_status(err);
	} else {
		ec_add(j->vs, ev);
		answer_info(j, ev, NULL, 0);
		log_info("volume %" PRIu32 " erasure coded: 14 shards of %" PRIu64 " bytes",
			 j->vid, ec_shard_size(&ec_default_blocks, vif.dat_size));
		vs_heartbeat_now(j->vs);
	}
	free(base);
	volume_unref(v);
}

/* Pulls base<ext> of vid from the source into base<ext>.tmp, then renames it. */
static bool pull_file(struct ec_job *j, const char *base, const char *ext)
{
	char path[256], msg[400];
	char *tmp = xasprintf("%s%s.tmp", base, ext), *dst = xasprintf("%s%s", base, ext);
	uint64_t got;
	long status = 0;
	int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	bool ok = false;

	if (fd < 0) {
		job_fail(j, errno == ENOSPC ? 507 : 500, "create %s: %s", tmp, strerror(errno));
		goto out;
	}
	snprintf(path, sizeof(path), "/admin/ec/file?volume=%" PRIu32 "&ext=%s", j->vid, ext + 1);
	status = vs_fetch_file(j->vs, j->source, path, fd, 0, 0, NULL, &got, msg, sizeof(msg));
	if (status != 200)
		job_fail(j, status < 0 ? (int)-status : 502, "%s", msg);
	else if (fsync(fd) || rename(tmp, dst))
		job_fail(j, 500, "install %s: %s", dst, strerror(errno));
	else
		ok = true;
out:
	if (fd >= 0)
		close(fd);
	if (!ok)
		unlink(tmp);
	free(tmp);
	free(dst);
	return ok;
}

/* copy: shards (and, for a volume new here, its .ecx, .ecj and .vif) from the source. */
static void run_copy(struct ec_job *j)
{
	ec_volume *ev = ec_get(j->vs, j->vid);
	char *dir = ev ? xstrdup(ec_volume_dir(ev)) : volume_store_pick_dir(j->vs->store);
	const char *coll = ev ? ec_volume_collection(ev) : j->collection;
	char *base = NULL;
	uint16_t bits = j->shards, have = 0;
	wfs_err err;

	if (!dir) {
		job_fail(j, 507, "no free volume slot");
		goto out;
	}
	base = base_of(dir, coll, j->vid);
	if (ev) {
		struct ec_volume_info in;
		ec_volume_get_info(ev, &in);
		have = in.shard_bits;
	} else if (!pull_file(j, base, ".ecx") || !pull_file(j, base, ".ecj") ||
		   !pull_file(j, base, ".vif")) {
		goto out;
	}
	for (int s = 0; s < EC_TOTAL_SHARDS; s++)
		if ((bits & (1u << s)) && !(have & (1u << s)) && !pull_file(j, base, ec_shard_ext(s)))
			goto out;
	fsync_dir(dir);
	if (ev) {
		ec_volume_mount_shards(ev, bits);
	} else {
		err = ec_volume_open(dir, coll, j->vid, &ev);
		if (err) {
			job_fail(j, 500, "open the copied EC volume: %s", wfs_strerror(err));
			goto out;
		}
		ec_volume_ref(ev);
		ec_add(j->vs, ev);
	}
	answer_info(j, ev, NULL, 0);
	vs_heartbeat_now(j->vs);
out:
	if (j->status >= 300 && !ev && base) {
		/* nothing half-copied stays to pass for a volume */
		static const char *const exts[] = {".ecx", ".ecj", ".vif"};
		for (size_t i = 0; i < ARRAY_LEN(exts); i++) {
			char *p = xasprintf("%s%s", base, exts[i]);
			unlink(p);
			free(p);
		}
		for (int s = 0; s < EC_TOTAL_SHARDS; s++) {
			char *p = xasprintf("%s%s", base, ec_shard_ext(s));
			unlink(p);
			free(p);
		}
	}
	if (ev)
		ec_volume_unref(ev);
	free(base);
	free(dir);
}

/* delete: unmounts and removes shards; the last one takes the volume's files along. */
static void run_delete(struct ec_job *j)
{
	ec_volume *ev = ec_get(j->vs, j->vid);
	struct ec_volume_info in;
	if (!ev) {
		job_fail(j, 404, "EC volume %" PRIu32 " not found", j->vid);
		return;
	}
	ec_volume_unmount_shards(ev, j->shards, true);
	ec_volume_get_info(ev, &in);
	answer_info(j, ev, NULL, 0);
	if (!in.shard_bits) {
		ec_volume *reg = ec_take(j->vs, j->vid);
		ec_volume_destroy(ev);
		if (reg)
			ec_volume_unref(reg);
		log_info("EC volume %" PRIu32 " removed (no shard left here)", j->vid);
	}
	ec_volume_unref(ev);
	vs_heartbeat_now(j->vs);
}

/* rebuild: every missing shard from the ones here (at least 10). */
static void run_rebuild(struct ec_job *j)
{
	ec_volume *ev = ec_get(j->vs, j->vid);
	uint16_t rebuilt = 0;
	char *base;
	wfs_err err;
	if (!ev) {
		job_fail(j, 404, "EC volume %" PRIu32 " not found", j->vid);
		return;
	}
	base = base_of(ec_volume_dir(ev), ec_volume_collection(ev), j->vid);
	err = ec_rebuild_shards(base, &ec_default_blocks, &rebuilt, j->msg, sizeof(j->msg));
	if (err) {
		if (!j->msg[0])
			snprintf(j->msg, sizeof(j->msg), "%s", wfs_strerror(err));
		j->status = err == WFS_ENOENT ? 409 : wfs_err_http_status(err);
	} else {
		ec_volume_mount_shards(ev, rebuilt);
		answer_info(j, ev, "rebuilt", rebuilt);
		vs_heartbeat_now(j->vs);
	}
	free(base);
	ec_volume_unref(ev);
}

/* to_volume: the data shards here back into a normal volume, loaded. */
static void run_to_volume(struct ec_job *j)
{
	ec_volume *ev = ec_get(j->vs, j->vid);
	struct ec_volume_info in;
	volume *v;
	char *base;
	wfs_err err;

	if (!ev) {
		job_fail(j, 404, "EC volume %" PRIu32 " not found", j->vid);
		return;
	}
	ec_volume_get_info(ev, &in);
	v = volume_store_get(j->vs->store, j->vid);
	if (v) {
		volume_unref(v);
		job_fail(j, 409, "volume %" PRIu32 " is already here as a normal volume", j->vid);
	} else if ((in.shard_bits & 0x3ff) != 0x3ff) {
		job_fail(j, 409, "decoding needs the data shards 0..9 here; shards here: 0x%04x",
			 in.shard_bits);
	} else {
		base = base_of(ec_volume_dir(ev), in.collection, j->vid);
		err = ec_decode_volume(base, &ec_default_blocks, j->msg, sizeof(j->msg));
		if (!err)
			err = volume_store_load_volume(j->vs->store, ec_volume_dir(ev), j->vid,
						       in.collection, &v);
		if (err) {
			if (!j->msg[0])
				snprintf(j->msg, sizeof(j->msg), "%s", wfs_strerror(err));
			j->status = wfs_err_http_status(err);
		} else {
			volume_unref(v);
			answer_info(j, ev, NULL, 0);
			log_info("EC volume %" PRIu32 " decoded into a normal volume", j->vid);
			vs_heartbeat_now(j->vs);
		}
		free(base);
	}
	ec_volume_unref(ev);
}

static void run_blob_delete(struct ec_job *j)
{
	ec_volume *ev = ec_get(j->vs, j->vid);
	wfs_err err;
	if (!ev) {
		job_fail(j, 404, "EC volume %" PRIu32 " not found", j->vid);
		return;
	}
	err = ec_volume_delete(ev, j->key);
	ec_volume_unref(ev);
	if (err)
		job_fail(j, wfs_err_http_status(err), "%s", wfs_strerror(err));
	else
		buf_append_str(&j->out, "{}");
	if (!err)
		j->status = 202;
}

static void run_shard_read(struct ec_job *j)
{
	ec_volume *ev = ec_get(j->vs, j->vid);
	uint64_t got = 0;
	wfs_err err;
	if (!ev) {
		job_fail(j, 404, "EC volume %" PRIu32 " not found", j->vid);
		return;
	}
	buf_reserve(&j->out, (size_t)j->size);
	err = ec_volume_read_shard(ev, (int)j->key, j->offset, j->size, (uint8_t *)j->out.data,
				   &got);
	ec_volume_unref(ev);
	if (err) {
		job_fail(j, wfs_err_http_status(err), "shard %d: %s", (int)j->key, wfs_strerror(err));
		return;
	}
	j->out.len = (size_t)got;
	j->bytes = true;
}

/* ---- parameters ---- */

/* shards=0,1,13 into bits; false (400 answered) when malformed or empty. */
static bool query_shards(http_req *req, uint16_t *bits)
{
	const char *s = http_req_query(req, "shards");
	*bits = 0;
	if (!s || !*s)
		goto bad;
	for (const char *p = s; *p;) {
		char *end;
		unsigned long n;
		if (*p < '0' || *p > '9')
			goto bad;
		n = strtoul(p, &end, 10);
		if (n >= EC_TOTAL_SHARDS || (*end && *end != ','))
			goto bad;
		*bits |= (uint16_t)(1u << n);
		p = *end ? end + 1 : end;
	}
	return true;
bad:
	http_resp_error(req, 400, "invalid shards \"%s\" (ids 0..13, comma separated)", s ? s : "");
	return false;
}

static bool query_num(http_req *req, const char *name, uint64_t *out)
{
	const char *s = http_req_query(req, name);
	if (!s || !parse_u64(s, out)) {
		http_resp_error(req, 400, "missing or invalid %s \"%s\"", name, s ? s : "");
		return false;
	}
	return true;
}

/* source=host:port of another server. */
static bool query_source(struct volume_server *vs, http_req *req, char *out, size_t outlen)
{
	const char *s = http_req_query(req, "source");
	if (!vs_source_valid(vs, s) || strlen(s) >= outlen) {
		http_resp_error(req, 400, "invalid source \"%s\" (host:port of another server)",
				s ? s : "");
		return false;
	}
	snprintf(out, outlen, "%s", s);
	return true;
}

/* GET /admin/ec/file: one of the files of an EC volume held here, whole. */
static void handle_file(struct volume_server *vs, http_req *req, uint32_t vid)
{
	const char *ext = http_req_query(req, "ext");
	bool ok = ext && (!strcmp(ext, "ecx") || !strcmp(ext, "ecj") || !strcmp(ext, "vif"));
	ec_volume *ev;
	struct stat st;
	char *path, dotted[8];
	int fd;

	for (int s = 0; !ok && ext && s < EC_TOTAL_SHARDS; s++)
		ok = !strcmp(ext, ec_shard_ext(s) + 1);
	if (!ok) {
		http_resp_error(req, 400, "ext must be ecx, ecj, vif or ec00..ec13, not \"%s\"",
				ext ? ext : "");
		return;
	}
	ev = ec_get(vs, vid);
	if (!ev) {
		http_resp_error(req, 404, "EC volume %" PRIu32 " not found", vid);
		return;
	}
	snprintf(dotted, sizeof(dotted), ".%s", ext);
	path = volume_file_path(ec_volume_dir(ev), ec_volume_collection(ev), vid, dotted);
	ec_volume_unref(ev);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		http_resp_error(req, errno == ENOENT ? 404 : 500, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
	} else {
		vs_stream_file(vs, req, fd, 0, (uint64_t)st.st_size, OCTETS);
	}
	free(path);
}

static void handle_status(struct volume_server *vs, http_req *req, uint32_t vid)
{
	ec_volume *ev = ec_get(vs, vid);
	struct ec_job j = {0};
	if (!ev) {
		http_resp_error(req, 404, "EC volume %" PRIu32 " not found", vid);
		return;
	}
	buf_init(&j.out);
	answer_info(&j, ev, NULL, 0);
	ec_volume_unref(ev);
	http_resp_send_json(req, 200, &j.out);
	buf_free(&j.out);
}

bool vs_ec_handle_admin(struct volume_server *vs, http_req *req, const char *path)
{
	static const struct {
		const char *name;
		void (*run)(struct ec_job *);
		bool busy; /* one job per volume at a time */
	} posts[] = {
		{"generate", run_generate, true}, {"copy", run_copy, true},
		{"delete", run_delete, true},     {"rebuild", run_rebuild, true},
		{"to_volume", run_to_volume, true}, {"blob_delete", run_blob_delete, false},
	};
	enum http_method m = http_req_method(req);
	const char *name;
	struct ec_job *j;
	uint32_t vid;
	size_t i;

	if (strncmp(path, "/admin/ec/", 10))
		return false;
	name = path + 10;
	if (!vs_query_vid(req, &vid))
		return true;
	if (!strcmp(name, "status") || !strcmp(name, "file") || !strcmp(name, "shard_read")) {
		if (m != HTTP_GET && m != HTTP_HEAD) {
			http_resp_error(req, 405, "method not allowed for %s", path);
			return true;
		}
		if (!strcmp(name, "status")) {
			handle_status(vs, req, vid);
			return true;
		}
		if (!strcmp(name, "file")) {
			handle_file(vs, req, vid);
			return true;
		}
		j = xcalloc(1, sizeof(*j));
		j->run = run_shard_read;
		if (!query_num(req, "shard", &j->key) || !query_num(req, "offset", &j->offset) ||
		    !query_num(req, "size", &j->size)) {
			free(j);
			return true;
		}
		if (j->key >= EC_TOTAL_SHARDS || j->size > SHARD_READ_MAX) {
			free(j);
			http_resp_error(req, 400, "shard must be 0..13 and size at most %u", SHARD_READ_MAX);
			return true;
		}
	} else {
		for (i = 0; i < ARRAY_LEN(posts) && strcmp(name, posts[i].name); i++)
			;
		if (i == ARRAY_LEN(posts)) {
			http_resp_error(req, 404, "no such EC endpoint %s", path);
			return true;
		}
		if (m != HTTP_POST) {
			http_resp_error(req, 405, "method not allowed for %s", path);
			return true;
		}
		j = xcalloc(1, sizeof(*j));
		j->run = posts[i].run;
		if ((posts[i].run == run_copy || posts[i].run == run_delete) &&
		    !query_shards(req, &j->shards)) {
			free(j);
			return true;
		}
		if (posts[i].run == run_copy) {
			const char *c = http_req_query(req, "collection");
			if (!query_source(vs, req, j->source, sizeof(j->source))) {
				free(j);
				return true;
			}
			if (c && *c && !volume_collection_valid(c)) {
				free(j);
				http_resp_error(req, 400, "invalid collection \"%s\"", c);
				return true;
			}
			snprintf(j->collection, sizeof(j->collection), "%s", c ? c : "");
		}
		if (posts[i].run == run_blob_delete && !query_num(req, "key", &j->key)) {
			free(j);
			return true;
		}
		if (posts[i].busy) {
			if (!busy_begin(vs->ec, vid)) {
				free(j);
				http_resp_error(req, 409, "an erasure-coding job on volume %" PRIu32
						" is running already", vid);
				return true;
			}
			j->busy = true;
		}
	}
	j->vs = vs;
	j->req = req;
	j->vid = vid;
	buf_init(&j->out);
	if (!(j->run == run_shard_read ? vs_submit_read(vs, job_main, j)
				       : vs_submit(vs, job_main, j))) {
		if (j->busy)
			busy_end(vs->ec, vid);
		free(j);
		http_resp_error(req, 503, "server is stopping");
	}
	return true;
}
