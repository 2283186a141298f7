/*
 * The mount-wide state of the data path (file_data.h: mount_data_*): the
 * options, the chunk cache and buffer pool, the list of open files, the dirty
 * budget, the statistics, the pool of pre-assigned file ids that uploads use,
 * and the queue of orphaned chunks.
 *
 * DESIGN
 * - The dirty budget is mount-wide. A writer over it starts uploads (its own
 *   file's ranges first, partial ones too, else other files') and waits on a
 *   condvar; an upload failure of its own file ends the wait with that
 *   upload's error (WFS_ENOSPC when the cluster is full), and a budget that
 *   has not moved for BUDGET_WAIT_NS ends it with WFS_EIO.
 * - Orphans: a chunk this mount uploaded and then dropped without committing
 *   it (its range rewritten and uploaded again, cut by a truncate, merged
 *   into another range, the file freed with data the filer refused) is sent
 *   to the filer's freeChunks op (batched, on the pool), which queues it for
 *   deletion. When the filer fails, up to GC_MAX ids wait for the next try
 *   (the next orphan, or mount_data_free). The files decide what is an orphan
 *   (file_data_chunk_drop).
 * - Small uploads skip the assign round trip: the mount keeps a pool of file
 *   ids pre-assigned through the filer (assign with count, refilled on the
 *   pool when low, dropped after FID_POOL_TTL_NS or any failure) and PUTs
 *   straight to the volume server; without a pooled id (or when its upload
 *   fails) the upload assigns as before (blob_client_save, with retries).
 * - Memory: big buffers come from mmap (M_MMAP_THRESHOLD fixed at 128 KiB)
 *   and the buffer pool keeps a few chunk-size buffers (file_data_write.c).
 * - mount_data_stale_files lists files dirty for a while (the mount commits
 *   them in the background: -commitSeconds).
 * - Lock order: list_mu, then a file's mu, then bmu; fmu, gmu and ifmu are
 *   taken last (nothing is locked under them).
 */
#include "config.h"
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "client/chunk_cipher.h"
#include "client/chunk_io.h"
#include "json.h"
#include "log.h"
#include "mount/file_data_int.h"
#include "util.h"

#define BUDGET_WAIT_NS  (120 * 1000000000ull) /* no progress this long: EIO */
#define FID_POOL_LOW    4                     /* refill when fewer are left */
#define FID_POOL_TTL_NS (20 * 1000000000ull)  /* older pooled ids are dropped */
#define GC_BATCH        1000                  /* ids per freeChunks request */
#define GC_MAX          100000                /* orphans kept for a retry while the filer fails */
#define INLINE_LIMIT    (64u << 10)           /* the filer's limit of update {content} */
#define POOL_KEEP_MAX   8 /* idle chunk-size buffers the pool holds at most... */
#define POOL_KEEP_SHARE 4 /* ... and no more than a quarter of the dirty budget */

static void gc_drain(mount_data *md);

mount_data *mount_data_new(const struct mount_data_opts *o, wfs_err *err)
{
	mount_data *md = xcalloc(1, sizeof(*md));
	struct blob_client_opts bo = {.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000,
				      .threads = 16,
				      .short_circuit_off = o->short_circuit_off};

	md->chunk_size = o->chunk_size ? o->chunk_size : CHUNK_SIZE_DEFAULT;
	md->cipher = o->cipher;
	md->dirty_max = o->dirty_max ? o->dirty_max : 256ull << 20;
	md->inline_max = MIN(o->inline_max, (uint64_t)INLINE_LIMIT);
	if (md->chunk_size > CHUNK_SIZE_MAX || !o->filer) {
		*err = WFS_EINVAL;
		free(md);
		return NULL;
	}
	md->cache = chunk_cache_open(o->cache_dir,
				     o->mem_cache_bytes ? o->mem_cache_bytes : 128ull << 20,
				     o->cache_disk_bytes ? o->cache_disk_bytes : 1ull << 30, err);
	if (!md->cache) {
		free(md);
		return NULL;
	}
	md->collection = o->collection && *o->collection ? xstrdup(o->collection) : NULL;
	md->replication = o->replication && *o->replication ? xstrdup(o->replication) : NULL;
	md->ttl = o->ttl && *o->ttl ? xstrdup(o->ttl) : NULL;
	/* big buffers come from mmap and go back at free (DESIGN); a fixed threshold also
	   stops glibc from raising it after the first large free */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	md->pool = buf_pool_new(
		md->chunk_size,
		MAX(1, MIN(POOL_KEEP_MAX, md->dirty_max / md->chunk_size / POOL_KEEP_SHARE)));
	md->bc = blob_client_new_filer(o->filer, &bo);
	md->rpc = filer_rpc_new(o->filer, 10000, 2, 0); /* assign, freeChunks: no events */
	pthread_mutex_init(&md->fmu, NULL);
	pthread_mutex_init(&md->gmu, NULL);
	pthread_mutex_init(&md->list_mu, NULL);
	pthread_mutex_init(&md->bmu, NULL);
	pthread_cond_init(&md->bcond, NULL);
	pthread_mutex_init(&md->ifmu, NULL);
	pthread_cond_init(&md->ifcond, NULL);
	*err = WFS_OK;
	return md;
}

void mount_data_free(mount_data *md)
{
	if (!md)
		return;
	blob_client_free(md->bc); /* runs the queued read-aheads, which use the cache */
	gc_drain(md);             /* a last try for orphans a failure kept */
	for (size_t i = 0; i < md->ngarbage; i++)
		free(md->garbage[i]);
	free(md->garbage);
	filer_rpc_free(md->rpc);
	pthread_mutex_destroy(&md->fmu);
	pthread_mutex_destroy(&md->gmu);
	chunk_cache_close(md->cache); /* gives its pooled buffers back first */
	buf_pool_free(md->pool);
	pthread_mutex_destroy(&md->list_mu);
	pthread_mutex_destroy(&md->bmu);
	pthread_cond_destroy(&md->bcond);
	pthread_mutex_destroy(&md->ifmu);
	pthread_cond_destroy(&md->ifcond);
	free(md->collection);
	free(md->replication);
	free(md->ttl);
	free(md);
}

void mount_data_get_stats(mount_data *md, struct mount_data_stats *out)
{
	pthread_mutex_lock(&md->bmu);
	*out = md->st;
	out->dirty = md->dirty;
	pthread_mutex_unlock(&md->bmu);
}

void mount_data_cache_stats(mount_data *md, struct chunk_cache_stats *out)
{
	chunk_cache_get_stats(md->cache, out);
}

size_t mount_data_stale_files(mount_data *md, uint64_t age_ns, uint64_t *inos, size_t max)
{
	uint64_t now = time_mono_ns();
	size_t n = 0;

	pthread_mutex_lock(&md->list_mu);
	for (file_data *fd = md->files; fd; fd = fd->next) {
		pthread_mutex_lock(&fd->mu);
		if (!file_data_dirty_locked(fd))
			fd->dirty_seen = 0;
		else if (!fd->dirty_seen)
			fd->dirty_seen = now;
		else if (now - fd->dirty_seen >= age_ns && fd->ino && !fd->flushing && n < max)
			inos[n++] = fd->ino;
		pthread_mutex_unlock(&fd->mu);
	}
	pthread_mutex_unlock(&md->list_mu);
	return n;
}

/* ---- the dirty budget and the counters ---- */

/* Charges n dirty bytes. bmu held. */
static void budget_add_locked(mount_data *md, uint64_t n)
{
	md->dirty += n;
	if (md->dirty > md->st.dirty_peak)
		md->st.dirty_peak = md->dirty;
}

void mount_data_budget_force(mount_data *md, uint64_t n)
{
	pthread_mutex_lock(&md->bmu);
	budget_add_locked(md, n);
	pthread_mutex_unlock(&md->bmu);
}

void mount_data_budget_release(mount_data *md, uint64_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&md->bmu);
	md->dirty -= MIN(n, md->dirty);
	pthread_cond_broadcast(&md->bcond);
	pthread_mutex_unlock(&md->bmu);
}

wfs_err mount_data_budget_reserve(file_data *fd, uint64_t want)
{
	mount_data *md = fd->md;
	uint64_t last_dirty = UINT64_MAX, since = time_mono_ns();
	wfs_err e = WFS_OK;

	pthread_mutex_lock(&md->bmu);
	while (md->dirty > 0 && md->dirty + want > md->dirty_max) {
		struct timespec ts;
		uint64_t now = time_mono_ns();
		if (md->dirty != last_dirty) {
			last_dirty = md->dirty;
			since = now;
		} else if (now - since > BUDGET_WAIT_NS) {
			e = WFS_EIO;
			break;
		}
		pthread_mutex_unlock(&md->bmu);

		pthread_mutex_lock(&fd->mu);
		if (fd->bg_err) {
			e = fd->bg_err; /* its own cause: WFS_ENOSPC when the cluster is full */
			fd->bg_err = WFS_OK;
			pthread_mutex_unlock(&fd->mu);
			return e;
		}
		bool mine = fd->dirty_bytes > 0;
		file_data_upload_background(fd, true);
		pthread_mutex_unlock(&fd->mu);
		if (!mine) {
			/* other files hold the budget: make them upload too */
			pthread_mutex_lock(&md->list_mu);
			for (file_data *o = md->files; o; o = o->next) {
				pthread_mutex_lock(&o->mu);
				file_data_upload_background(o, true);
				pthread_mutex_unlock(&o->mu);
			}
			pthread_mutex_unlock(&md->list_mu);
		}

		pthread_mutex_lock(&md->bmu);
		md->st.budget_waits++;
		ts = time_deadline(CLOCK_REALTIME, 100 * 1000000u);
		if (md->dirty > 0 && md->dirty + want > md->dirty_max)
			pthread_cond_timedwait(&md->bcond, &md->bmu, &ts);
	}
	if (!e)
		budget_add_locked(md, want);
	pthread_mutex_unlock(&md->bmu);
	return e;
}

void mount_data_stat_add(mount_data *md, uint64_t *field, uint64_t n)
{
	pthread_mutex_lock(&md->bmu);
	*field += n;
	pthread_mutex_unlock(&md->bmu);
}

/* ---- orphaned chunks: freeChunks ---- */

/* POSTs freeChunks for fids[0..n): WFS_OK or the call's error. Any thread but a pool worker
   waiting. */
static wfs_err gc_send(mount_data *md, char **fids, size_t n)
{
	buf req = BUF_INIT, resp = BUF_INIT;
	json_w *w = jw_new(&req, false);
	wfs_err e;

	jw_obj_begin(w);
	jw_key(w, "fileIds");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++)
		jw_str(w, fids[i]);
	jw_arr_end(w);
	jw_obj_end(w);
	jw_free(w);
	e = filer_rpc_call(md->rpc, "freeChunks", (const char *)req.data, req.len, &resp);
	buf_free(&req);
	buf_free(&resp);
	return e;
}

/* Sends the queued orphans in batches; on a failure keeps them for the next try. */
static void gc_drain(mount_data *md)
{
	for (;;) {
		char **batch;
		size_t n;
		wfs_err e;

		pthread_mutex_lock(&md->gmu);
		n = MIN(md->ngarbage, (size_t)GC_BATCH);
		if (!n) {
			pthread_mutex_unlock(&md->gmu);
			return;
		}
		batch = xmalloc(n * sizeof(*batch));
		md->ngarbage -= n;
		memcpy(batch, md->garbage + md->ngarbage, n * sizeof(*batch));
		pthread_mutex_unlock(&md->gmu);

		e = gc_send(md, batch, n);
		pthread_mutex_lock(&md->gmu);
		if (e) {
			log_warn("mount: could not free %zu orphaned chunks (first %s): %s", n,
				 batch[0], wfs_strerror(e));
			for (size_t i = 0; i < n; i++) {
				if (md->ngarbage < GC_MAX) { /* else leaked: the filer is gone */
					if (md->ngarbage == md->capgarbage) {
						md->capgarbage = md->capgarbage * 2 + 64;
						md->garbage = xrealloc(
							md->garbage,
							md->capgarbage * sizeof(*md->garbage));
					}
					md->garbage[md->ngarbage++] = batch[i];
				} else {
					free(batch[i]);
				}
			}
		} else {
			for (size_t i = 0; i < n; i++)
				free(batch[i]);
		}
		pthread_mutex_unlock(&md->gmu);
		free(batch);
		if (e)
			return; /* retried at the next orphan or at mount_data_free */
		pthread_mutex_lock(&md->bmu); /* st is bmu's (nothing is locked under gmu) */
		md->st.freed += n;
		pthread_mutex_unlock(&md->bmu);
	}
}

static void gc_run(void *arg)
{
	mount_data *md = arg;
	gc_drain(md);
	pthread_mutex_lock(&md->gmu);
	md->gc_running = false;
	pthread_mutex_unlock(&md->gmu);
}

void mount_data_orphan(mount_data *md, char *fid)
{
	bool start;
	pthread_mutex_lock(&md->gmu);
	if (md->ngarbage == md->capgarbage) {
		md->capgarbage = md->capgarbage * 2 + 64;
		md->garbage = xrealloc(md->garbage, md->capgarbage * sizeof(*md->garbage));
	}
	md->garbage[md->ngarbage++] = fid;
	start = !md->gc_running;
	md->gc_running = true;
	pthread_mutex_unlock(&md->gmu);
	if (start)
		pool_submit(blob_client_pool(md->bc), gc_run, md);
}

/* ---- pre-assigned file ids ---- */

/* Asks the filer for FID_POOL ids and adds them to the pool. On a pool worker. */
static void fid_refill(void *arg)
{
	mount_data *md = arg;
	buf req = BUF_INIT, resp = BUF_INIT;
	yajl_val v = NULL, arr;
	char msg[128];
	uint64_t now;
	wfs_err e;

	buf_printf(&req, "{\"count\":%d", FID_POOL);
	if (md->collection)
		buf_printf(&req, ",\"collection\":\"%s\"", md->collection);
	if (md->replication)
		buf_printf(&req, ",\"replication\":\"%s\"", md->replication);
	if (md->ttl)
		buf_printf(&req, ",\"ttl\":\"%s\"", md->ttl);
	buf_printf(&req, "}");
	e = filer_rpc_call(md->rpc, "assign", (const char *)req.data, req.len, &resp);
	now = time_mono_ns();
	if (!e)
		v = json_parse((const char *)resp.data, resp.len, msg, sizeof(msg));
	arr = v ? json_get(v, "fids") : NULL;
	pthread_mutex_lock(&md->fmu);
	for (size_t i = 0; arr && YAJL_IS_ARRAY(arr) && i < arr->u.array.len; i++) {
		const char *fid, *url, *pub = "";
		yajl_val o = arr->u.array.values[i];
		if (md->nfids == FID_POOL || !json_get_str(o, "fid", &fid) ||
		    !json_get_str(o, "url", &url) || strlen(fid) >= BLOB_FID_MAX ||
		    strlen(url) >= BLOB_URL_MAX)
			break;
		json_get_str(o, "publicUrl", &pub);
		struct pre_fid *p = &md->fids[md->nfids++];
		memset(p, 0, sizeof(*p));
		memcpy(p->a.fid, fid, strlen(fid) + 1);
		memcpy(p->a.url, url, strlen(url) + 1);
		snprintf(p->a.public_url, sizeof(p->a.public_url), "%s", pub);
		p->at = now;
	}
	md->refilling = false;
	pthread_mutex_unlock(&md->fmu);
	if (e)
		log_debug("mount: pre-assigning file ids: %s", wfs_strerror(e));
	if (v)
		yajl_tree_free(v);
	buf_free(&req);
	buf_free(&resp);
}

/* Takes a pooled id into *out (false: none); starts a refill when the pool runs low. */
static bool fid_take(mount_data *md, struct pre_fid *out)
{
	uint64_t now = time_mono_ns();
	size_t stale = 0;
	bool got = false, refill = false;

	pthread_mutex_lock(&md->fmu);
	while (stale < md->nfids && now - md->fids[stale].at > FID_POOL_TTL_NS)
		stale++;
	if (stale < md->nfids) {
		*out = md->fids[stale++];
		got = true;
	}
	memmove(md->fids, md->fids + stale, (md->nfids - stale) * sizeof(*md->fids));
	md->nfids -= stale;
	if (md->nfids < FID_POOL_LOW && !md->refilling) {
		md->refilling = true;
		refill = true;
	}
	pthread_mutex_unlock(&md->fmu);
	if (refill)
		pool_submit(blob_client_pool(md->bc), fid_refill, md);
	return got;
}

static void fid_pool_clear(mount_data *md)
{
	pthread_mutex_lock(&md->fmu);
	md->nfids = 0;
	pthread_mutex_unlock(&md->fmu);
}

/* Stores len bytes (already sealed if they are to be) in a pre-assigned id or a new one. */
static wfs_err upload_blob(mount_data *md, const struct blob_assign_params *ap,
			   const struct blob_upload_params *up, struct pre_fid *pp, const void *data,
			   size_t len, char **fid, char *etag)
{
	wfs_err err;

	if (fid_take(md, pp)) {
		struct blob_upload_params with_auth = *up;
		with_auth.auth = pp->a.auth; /* the master's token for this id, when it signs */
		err = blob_client_upload(md->bc, pp->a.url, pp->a.fid, data, len, &with_auth, etag);
		if (!err) {
			*fid = xstrdup(pp->a.fid);
			mount_data_stat_add(md, &md->st.preassigned, 1);
			return WFS_OK;
		}
		/* the server may be full or gone: forget its ids, assign afresh; the id may hold
		   a partial write, so it is freed too */
		log_debug("mount: upload to pre-assigned %s failed: %s", pp->a.fid,
			  wfs_strerror(err));
		fid_pool_clear(md);
		mount_data_orphan(md, xstrdup(pp->a.fid));
	}
	err = blob_client_save(md->bc, ap, up, data, len, fid, etag);
	if (err) {
		log_warn("mount: upload of %zu bytes failed: %s", len, wfs_strerror(err));
		return err; /* WFS_ENOSPC: the cluster is full (write, fsync and close say so) */
	}
	return WFS_OK;
}

wfs_err mount_data_upload(mount_data *md, const void *data, size_t len, bool fsync, char **fid,
			  char *etag, struct filer_chunk *key)
{
	struct blob_assign_params ap = {
		.collection = md->collection, .replication = md->replication, .ttl = md->ttl};
	struct blob_upload_params up = {.ttl = md->ttl, .fsync = fsync};
	size_t plain_len = len;
	buf sealed = BUF_INIT;
	struct pre_fid p;
	wfs_err err;

	key->has_cipher_key = false;
	if (md->cipher) {
		err = chunk_cipher_seal(data, len, key->cipher_key, &sealed);
		if (err)
			return err;
		key->has_cipher_key = true;
		data = sealed.data;
		len = sealed.len;
	}
	err = upload_blob(md, &ap, &up, &p, data, len, fid, etag);
	buf_free(&sealed);
	if (!err) {
		mount_data_stat_add(md, &md->st.uploads, 1);
		mount_data_stat_add(md, &md->st.uploaded_bytes, plain_len);
	}
	return err;
}

