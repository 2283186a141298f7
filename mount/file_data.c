/*
 * DESIGN
 * - A file's bytes = the base (what the filer last described: inline content
 *   or a resolved chunk list, plus its size) overlaid by "pending" chunks
 *   (uploaded by this mount but not yet committed) overlaid by dirty ranges
 *   in memory. Chunk overlap is the filer's newest-wins rule, so every chunk
 *   this mount uploads gets an mtime above anything it has seen.
 * - Dirty ranges live in chunk-size slots (file offset / chunk_size): a range
 *   never crosses a slot boundary, so one range is at most one chunk and a
 *   range covering its whole slot is a full chunk, uploaded in the background
 *   (it then becomes a pending chunk and its memory is released). Ranges of a
 *   slot are sorted, non-overlapping and non-adjacent (writes merge).
 * - A slot with an upload running is frozen: writes and truncates touching it
 *   wait, so an upload reads a stable buffer without copying it.
 * - Every change of a range gives it a new generation. A flush uploads each
 *   range (reusing an upload of the same generation) and remembers the
 *   generations; committed(ok) drops only the ranges still at them, so writes
 *   that arrived during the flush stay dirty.
 * - Size changes: a truncate cuts the ranges, pending chunks and the base's
 *   view at once. A commit with appendChunks + size cannot express a shrink
 *   followed by growth (the filer would show the old bytes again), nor add
 *   chunks to an entry with inline content: those commits replace the whole
 *   list instead (file_data_flush_replaces).
 * - The dirty budget is mount-wide. A writer over it starts uploads (its own
 *   file's ranges first, partial ones too, else other files') and waits on a
 *   condvar; an upload failure of its own file ends the wait with EIO.
 * - Reads plan the base + pending list once per change (chunks_read_plan over
 *   the whole file), then copy pieces from the chunk cache, from a whole-blob
 *   fetch (small chunks, sequential readers; put in the cache; concurrent
 *   fetches of one blob are merged) or from a ranged GET (random reads of big
 *   chunks). Sequential readers prefetch the next chunks on the pool.
 * - Network I/O never runs under a file's lock, except manifest resolution
 *   (rare: only lists of over a thousand chunks have manifests).
 * - Orphans: a chunk this mount uploaded and then dropped without committing
 *   it (its range rewritten and uploaded again, cut by a truncate, merged
 *   into another range, the file freed with data the filer refused) is sent
 *   to the filer's freeChunks op (batched, on the pool), which queues it for
 *   deletion. A chunk handed out by a flush whose commit failed ambiguously
 *   (EIO, ESTALE: it may have committed) is remembered in the file's `sent`
 *   list and never freed by the mount (a leak, not a loss); a committed chunk
 *   is never in a range or the pending list afterwards, so it is never freed.
 * - Small uploads skip the assign round trip: the mount keeps a pool of file
 *   ids pre-assigned through the filer (assign with count, refilled on the
 *   pool when low, dropped after FID_POOL_TTL_NS or any failure) and PUTs
 *   straight to the volume server; without a pooled id (or when its upload
 *   fails) the upload assigns as before (blob_client_save, with retries).
 * - Memory: large buffers (dirty ranges, chunk copies) are malloc'ed outside
 *   the heap arenas (M_MMAP_THRESHOLD fixed at 128 KiB), so a freed range
 *   goes back to the kernel at once instead of staying in a thread's arena.
 *   Ranges over 128 KiB take chunk-size buffers from a pool (buf_pool.h)
 *   instead: reused without page faults; a background upload hands its
 *   buffer to the memory cache (no copy), which returns it on eviction.
 * - Small files: a file whose whole data fits inline_max and is known here
 *   (no bytes only in base chunks) commits as update {content}: no upload.
 * - The kept tail: a small committed range keeps its buffer after the commit;
 *   a write right after it revives it as a dirty range that `supersedes` the
 *   committed chunk, and the next commit drops that chunk (update dropChunks,
 *   or leaves it out of a replaced list). fsync after each small sequential
 *   write then re-uploads at most TAIL_MAX bytes instead of adding one chunk
 *   per fsync to a list the filer rewrites every time. A background upload of
 *   a range that supersedes a chunk carries the drop in pend_drop.
 * - mount_data_stale_files lists files dirty for a while (the mount commits
 *   them in the background: -commitSeconds).
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "client/blob_client.h"
#include "client/chunk_io.h"
#include "client/chunks.h"
#include "json.h"
#include "log.h"
#include "mount/buf_pool.h"
#include "mount/chunk_cache.h"
#include "mount/file_data.h"
#include "client/filer_rpc.h"
#include "util.h"

#define SMALL_CHUNK       (1u << 20) /* chunks up to this are always fetched whole */
#define READ_AHEAD_CHUNKS 2
#define READ_AHEAD_JOBS   8
#define BUDGET_WAIT_NS    (120 * 1000000000ull) /* no progress this long: EIO */
#define FID_POOL          16                    /* ids asked for per refill */
#define FID_POOL_LOW      4                     /* refill when fewer are left */
#define FID_POOL_TTL_NS   (20 * 1000000000ull)  /* older pooled ids are dropped */
#define GC_BATCH          1000                  /* ids per freeChunks request */
#define GC_MAX            100000                /* orphans kept for a retry while the filer fails */
#define INLINE_LIMIT      (64u << 10)           /* the filer's limit of update {content} */
#define BIG_RANGE         (128u << 10) /* range buffers over this come from the buffer pool */
#define POOL_KEEP_MAX     8            /* idle chunk-size buffers the pool holds at most... */
#define POOL_KEEP_SHARE   4            /* ... and no more than a quarter of the dirty budget */
#define TAIL_MAX          (64u << 10)  /* committed tails up to this are kept to merge */

struct pre_fid {
	struct blob_assignment a;
	uint64_t at; /* time_mono_ns when assigned */
};

struct mount_data {
	uint64_t chunk_size, dirty_max, inline_max;
	char *collection, *replication, *ttl;
	blob_client *bc;
	chunk_cache *cache;
	buf_pool *pool; /* chunk-size buffers: big ranges, chunks handed to the cache */

	pthread_mutex_t list_mu; /* order: list_mu, then a file's mu, then bmu */
	struct file_data *files; /* protected by list_mu */

	pthread_mutex_t bmu;
	pthread_cond_t bcond;
	uint64_t dirty;             /* protected by bmu */
	struct mount_data_stats st; /* protected by bmu */

	pthread_mutex_t ifmu;
	pthread_cond_t ifcond;
	struct inflight *inflight; /* whole-blob fetches running; protected by ifmu */
	int ra_jobs;               /* protected by ifmu */

	filer_rpc *rpc; /* assign with count, freeChunks */

	pthread_mutex_t fmu;
	struct pre_fid fids[FID_POOL]; /* oldest first; protected by fmu */
	size_t nfids;                  /* protected by fmu */
	bool refilling;                /* a refill job is queued or running; protected by fmu */

	pthread_mutex_t gmu;
	char **garbage; /* orphaned fids to free; protected by gmu */
	size_t ngarbage, capgarbage;
	bool gc_running; /* a gc_run job is queued or running; protected by gmu */
};

struct inflight {
	char *fid;
	struct inflight *next;
};

struct drange {
	uint64_t off, len, cap;
	uint8_t *data;
	uint64_t gen;          /* new at every change; unique within the file */
	uint64_t up_gen;       /* the generation `up` holds; 0 = none */
	struct filer_chunk up; /* its uploaded chunk (fid NULL when none) */
	char *supersedes;      /* a committed chunk this range covers whole (a revived tail) */
};

/* File ids (owned). */
struct fid_list {
	char **v;
	size_t n;
};

struct slot {
	uint64_t index; /* file offset / chunk_size */
	struct drange *r;
	size_t n, cap;
	uint64_t bytes; /* sum of the ranges' lengths */
	int busy;       /* uploads running: the slot is frozen */
};

struct flushed {
	uint64_t slot, gen;
};

struct chunk_list {
	struct filer_chunk *c;
	size_t n, cap;
};

struct file_data {
	mount_data *md;
	struct file_data *prev, *next; /* protected by md->list_mu */
	pthread_mutex_t mu;
	pthread_cond_t cond;

	/* everything below is protected by mu */
	struct chunk_list base;
	bool base_resolved;
	uint8_t *inl; /* inline content of the base */
	size_t inl_len;
	bool has_inl;
	bool filer_inline; /* the filer's entry holds inline content */
	uint64_t base_size;
	int64_t max_mtime; /* the newest chunk mtime seen or given */
	struct chunk_list pend;

	struct slot **slots; /* sorted by index */
	size_t nslots, capslots;
	uint64_t dirty_bytes;
	uint64_t gen_next;

	uint64_t size;
	bool size_dirty;
	bool holes_dirty;   /* a punch cut the base: the next commit replaces the list */
	uint64_t trunc_min; /* smallest size since the last commit; UINT64_MAX = none */
	uint64_t trunc_seq;

	int jobs;   /* uploads running */
	int bg_err; /* a background upload failed since the last writer looked */

	uint64_t version; /* changes whenever base or pending change */
	uint64_t views_version;
	bool views_ok;
	struct filer_chunk *comb; /* base + pending, borrowing their strings */
	size_t ncomb;
	struct chunk_view *views;
	size_t nviews;

	bool flushing;
	struct flushed *fl;
	size_t nfl;
	size_t fl_npend;
	uint64_t fl_size, fl_trunc_seq;
	bool fl_replace;
	struct chunk_list fl_new; /* chunks of the flushed ranges */
	bool fl_inline;           /* the flush commits fl_content (file_data_flush_inline) */
	uint8_t *fl_content;
	struct fid_list fl_drop; /* committed chunks the flushed data supersedes */
	size_t fl_npend_drop;    /* of which the first ones come from pend_drop */

	/* the last commit's chunk while small: its bytes are kept so that a write right
	   after it revives them as a dirty range whose chunk replaces it (fsync after each
	   sequential write would otherwise add one chunk per fsync). Any other write over
	   its bytes, a truncate or a new base drops it. */
	uint8_t *tail_data; /* NULL = none */
	uint64_t tail_off, tail_len, tail_cap;
	char *tail_fid;
	struct fid_list pend_drop; /* chunks that pending chunks supersede */

	struct fid_list sent; /* fids of commits that failed ambiguously: never freed */

	uint64_t ino;        /* file_data_set_ino: the inode, for mount_data_stale_files */
	uint64_t dirty_seen; /* time_mono_ns a scan first saw it dirty; 0 = clean then */

	uint64_t last_end; /* end of the last read: sequential detection */
	int seq_reads;
	uint64_t ra_until; /* read-ahead scheduled up to this offset */
};

/* ---- small helpers ---- */

static void list_push(struct chunk_list *l, const struct filer_chunk *c)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->c = xrealloc(l->c, l->cap * sizeof(*l->c));
	}
	filer_chunk_copy(&l->c[l->n++], c);
}

static void list_clear(struct chunk_list *l)
{
	filer_chunks_free(l->c, l->n);
	memset(l, 0, sizeof(*l));
}

static void fids_push(struct fid_list *l, const char *fid)
{
	l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = xstrdup(fid);
}

/* Frees the first n ids of l and moves the rest to the front. */
static void fids_shift(struct fid_list *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l->v[i]);
	if (n && n < l->n) /* l->v is NULL when empty: memmove must not see it */
		memmove(l->v, l->v + n, (l->n - n) * sizeof(*l->v));
	l->n -= n;
}

static void fids_clear(struct fid_list *l)
{
	fids_shift(l, l->n);
	free(l->v);
	l->v = NULL;
}

static bool fids_has(const struct fid_list *l, const char *fid)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], fid))
			return true;
	return false;
}

/* Charges n dirty bytes. bmu held. */
static void budget_add_locked(mount_data *md, uint64_t n)
{
	md->dirty += n;
	if (md->dirty > md->st.dirty_peak)
		md->st.dirty_peak = md->dirty;
}

static void budget_force(mount_data *md, uint64_t n)
{
	pthread_mutex_lock(&md->bmu);
	budget_add_locked(md, n);
	pthread_mutex_unlock(&md->bmu);
}

static void budget_release(mount_data *md, uint64_t n)
{
	if (!n)
		return;
	pthread_mutex_lock(&md->bmu);
	md->dirty -= MIN(n, md->dirty);
	pthread_cond_broadcast(&md->bcond);
	pthread_mutex_unlock(&md->bmu);
}

static void stat_add(mount_data *md, uint64_t *field, uint64_t n)
{
	pthread_mutex_lock(&md->bmu);
	*field += n;
	pthread_mutex_unlock(&md->bmu);
}

/* An mtime newer than every chunk of the file seen so far. */
static int64_t next_mtime(file_data *fd)
{
	int64_t now = (int64_t)time_now_ns();
	fd->max_mtime = now > fd->max_mtime ? now : fd->max_mtime + 1;
	return fd->max_mtime;
}

static void note_mtimes(file_data *fd, const struct filer_chunk *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (c[i].mtime_ns > fd->max_mtime)
			fd->max_mtime = c[i].mtime_ns;
}

static void changed(file_data *fd)
{
	fd->version++;
	fd->views_ok = false;
}

/* ---- mount_data ---- */

static void gc_drain(mount_data *md);

mount_data *mount_data_new(const struct mount_data_opts *o, wfs_err *err)
{
	mount_data *md = xcalloc(1, sizeof(*md));
	struct blob_client_opts bo = {.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 30000,
				      .threads = 16};

	md->chunk_size = o->chunk_size ? o->chunk_size : CHUNK_SIZE_DEFAULT;
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

/* ---- orphaned chunks: freeChunks ---- */

/* POSTs freeChunks for fids[0..n). 0 or an errno. Any thread but a pool worker waiting. */
static int gc_send(mount_data *md, char **fids, size_t n)
{
	buf req = BUF_INIT, resp = BUF_INIT;
	json_w *w = jw_new(&req, false);
	int e;

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
		int e;

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
				 batch[0], strerror(e));
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
			md->st.freed += n;
			for (size_t i = 0; i < n; i++)
				free(batch[i]);
		}
		pthread_mutex_unlock(&md->gmu);
		free(batch);
		if (e)
			return; /* retried at the next orphan or at mount_data_free */
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

/* Queues fid (taken) to be freed by the filer. Any lock may be held. */
static void gc_add(mount_data *md, char *fid)
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

/* Frees fid (borrowed; NULL: nothing) unless a commit may have referenced it. fd->mu held. */
static void chunk_drop(file_data *fd, const char *fid)
{
	if (!fid)
		return;
	if (!fids_has(&fd->sent, fid))
		gc_add(fd->md, xstrdup(fid));
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
	int e;

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
		log_debug("mount: pre-assigning file ids: %s", strerror(e));
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

/* Stores len bytes as a new blob: *fid (caller frees) and etag. 0 or EIO. */
static int upload(mount_data *md, const void *data, size_t len, char **fid, char *etag)
{
	struct blob_assign_params ap = {
		.collection = md->collection, .replication = md->replication, .ttl = md->ttl};
	struct blob_upload_params up = {.ttl = md->ttl};
	struct pre_fid p;
	wfs_err err;

	if (fid_take(md, &p)) {
		err = blob_client_upload(md->bc, p.a.url, p.a.fid, data, len, &up, etag);
		if (!err) {
			*fid = xstrdup(p.a.fid);
			pthread_mutex_lock(&md->bmu);
			md->st.uploads++;
			md->st.preassigned++;
			pthread_mutex_unlock(&md->bmu);
			return 0;
		}
		/* the server may be full or gone: forget its ids, assign afresh; the id may hold
		   a partial write, so it is freed too */
		log_debug("mount: upload to pre-assigned %s failed: %s", p.a.fid,
			  wfs_strerror(err));
		fid_pool_clear(md);
		gc_add(md, xstrdup(p.a.fid));
	}
	err = blob_client_save(md->bc, &ap, &up, data, len, fid, etag);
	if (err) {
		log_warn("mount: upload of %zu bytes failed: %s", len, wfs_strerror(err));
		return EIO;
	}
	stat_add(md, &md->st.uploads, 1);
	return 0;
}

/* ---- reading blobs ---- */

/* Fetches blob fid whole into the cache, merged with a fetch of it already running. */
static wfs_err fetch_whole(mount_data *md, const char *fid)
{
	struct inflight *f, **pf;
	buf b = BUF_INIT;
	wfs_err err;

	pthread_mutex_lock(&md->ifmu);
	for (;;) {
		for (f = md->inflight; f && strcmp(f->fid, fid); f = f->next)
			;
		if (!f)
			break;
		pthread_cond_wait(&md->ifcond, &md->ifmu);
		pthread_mutex_unlock(&md->ifmu);
		return WFS_OK; /* the caller looks in the cache again */
	}
	f = xcalloc(1, sizeof(*f));
	f->fid = xstrdup(fid);
	f->next = md->inflight;
	md->inflight = f;
	pthread_mutex_unlock(&md->ifmu);

	err = blob_client_read(md->bc, fid, 0, 0, CHUNK_SIZE_MAX, &b);
	if (!err) {
		chunk_cache_put(md->cache, fid, b.data, b.len);
		stat_add(md, &md->st.fetched_bytes, b.len);
	}
	buf_free(&b);

	pthread_mutex_lock(&md->ifmu);
	for (pf = &md->inflight; *pf != f; pf = &(*pf)->next)
		;
	*pf = f->next;
	pthread_cond_broadcast(&md->ifcond);
	pthread_mutex_unlock(&md->ifmu);
	free(f->fid);
	free(f);
	return err;
}

/* Copies [off, off+len) of blob fid into dst: cache, whole fetch (if `whole`), or a range. */
static int read_blob(mount_data *md, const char *fid, uint64_t off, size_t len, bool whole,
		     uint8_t *dst)
{
	wfs_err err = WFS_OK;
	buf b = BUF_INIT;

	for (int i = 0; whole && i < 3; i++) {
		if (chunk_cache_read(md->cache, fid, off, len, dst))
			return 0;
		err = fetch_whole(md, fid);
		if (err)
			break;
	}
	if (chunk_cache_read(md->cache, fid, off, len, dst))
		return 0;
	/* random access to a big chunk (or the cache cannot hold it): just the range */
	err = blob_client_read(md->bc, fid, off, len, 0, &b);
	if (!err && b.len != len)
		err = WFS_ECORRUPT;
	if (!err) {
		memcpy(dst, b.data, len);
		stat_add(md, &md->st.fetched_bytes, len);
	}
	buf_free(&b);
	if (err) {
		log_warn("mount: read of %s [%" PRIu64 ", +%zu): %s", fid, off, len,
			 wfs_strerror(err));
		return EIO;
	}
	return 0;
}

struct ra_job {
	mount_data *md;
	char *fid;
};

static void ra_run(void *arg)
{
	struct ra_job *j = arg;
	uint8_t probe;
	if (!chunk_cache_read(j->md->cache, j->fid, 0, 1, &probe) && !fetch_whole(j->md, j->fid))
		stat_add(j->md, &j->md->st.prefetches, 1);
	pthread_mutex_lock(&j->md->ifmu);
	j->md->ra_jobs--;
	pthread_mutex_unlock(&j->md->ifmu);
	free(j->fid);
	free(j);
}

/* Queues a prefetch of fid (taken) unless too many run. */
static void ra_submit(mount_data *md, char *fid)
{
	struct ra_job *j;
	pthread_mutex_lock(&md->ifmu);
	if (md->ra_jobs >= READ_AHEAD_JOBS) {
		pthread_mutex_unlock(&md->ifmu);
		free(fid);
		return;
	}
	md->ra_jobs++;
	pthread_mutex_unlock(&md->ifmu);
	j = xcalloc(1, sizeof(*j));
	j->md = md;
	j->fid = fid;
	pool_submit(blob_client_pool(md->bc), ra_run, j);
}

/* ---- file_data: base ---- */

static void tail_drop(file_data *fd);

static void base_set(file_data *fd, const struct filer_entry *e)
{
	tail_drop(fd); /* its chunk may be gone from the new base */
	list_clear(&fd->base);
	for (size_t i = 0; i < e->n_chunks; i++)
		list_push(&fd->base, &e->chunks[i]);
	note_mtimes(fd, e->chunks, e->n_chunks);
	fd->base_resolved = false;
	free(fd->inl);
	fd->inl = NULL;
	fd->inl_len = 0;
	fd->has_inl = e->has_content;
	fd->filer_inline = e->has_content;
	if (e->has_content && e->content_len) {
		fd->inl_len = MIN(e->content_len, (size_t)MIN(e->attr.size, SIZE_MAX));
		fd->inl = xmalloc(fd->inl_len ? fd->inl_len : 1);
		memcpy(fd->inl, e->content, fd->inl_len);
	}
	fd->base_size = e->attr.size;
	changed(fd);
}

/* Resolves manifests and cuts chunks past the base size. Called with mu held (network!). */
static int base_resolve(file_data *fd)
{
	struct filer_chunk *garbage = NULL;
	size_t ng = 0;
	bool manifests = false;
	if (fd->base_resolved)
		return 0;
	for (size_t i = 0; i < fd->base.n; i++)
		manifests |= fd->base.c[i].is_manifest;
	if (manifests) {
		struct filer_chunk *out = NULL;
		size_t n = 0;
		wfs_err err = chunk_resolve_manifests(fd->md->bc, fd->base.c, fd->base.n, &out, &n);
		if (err) {
			log_warn("mount: resolving manifests: %s", wfs_strerror(err));
			return EIO;
		}
		list_clear(&fd->base);
		fd->base.c = out;
		fd->base.n = fd->base.cap = n;
		note_mtimes(fd, out, n);
	}
	/* a list reaching past the size would show stale bytes after an extension */
	if (chunks_truncate(fd->base.c, &fd->base.n, fd->base_size, &garbage, &ng))
		return EIO;
	filer_chunks_free(garbage, ng);
	fd->base_resolved = true;
	changed(fd);
	return 0;
}

/* ---- file_data: dirty slots ---- */

/* Index of the first slot with index >= idx. */
static size_t slot_lower(file_data *fd, uint64_t idx)
{
	size_t lo = 0, hi = fd->nslots;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (fd->slots[mid]->index < idx)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct slot *slot_find(file_data *fd, uint64_t idx)
{
	size_t i = slot_lower(fd, idx);
	return i < fd->nslots && fd->slots[i]->index == idx ? fd->slots[i] : NULL;
}

static struct slot *slot_get(file_data *fd, uint64_t idx)
{
	size_t i = slot_lower(fd, idx);
	struct slot *s;
	if (i < fd->nslots && fd->slots[i]->index == idx)
		return fd->slots[i];
	if (fd->nslots == fd->capslots) {
		fd->capslots = fd->capslots ? fd->capslots * 2 : 16;
		fd->slots = xrealloc(fd->slots, fd->capslots * sizeof(*fd->slots));
	}
	memmove(&fd->slots[i + 1], &fd->slots[i], (fd->nslots - i) * sizeof(*fd->slots));
	s = xcalloc(1, sizeof(*s));
	s->index = idx;
	fd->slots[i] = s;
	fd->nslots++;
	return s;
}

/* A range buffer for need bytes; *cap gets its size. Big ones are pooled chunk buffers. */
static uint8_t *rbuf_alloc(mount_data *md, uint64_t need, uint64_t *cap)
{
	if (need > BIG_RANGE) {
		*cap = buf_pool_size(md->pool);
		return buf_pool_get(md->pool);
	}
	*cap = need;
	return xmalloc(need ? need : 1);
}

static bool rbuf_pooled(mount_data *md, uint64_t cap)
{
	return cap > BIG_RANGE && cap == buf_pool_size(md->pool);
}

static void rbuf_free(mount_data *md, uint8_t *p, uint64_t cap)
{
	if (rbuf_pooled(md, cap))
		buf_pool_put(md->pool, p);
	else
		free(p);
}

/* Frees r's memory; its uploaded chunk, never committed, is freed on the filer. mu held. */
static void range_free(file_data *fd, struct drange *r)
{
	free(r->supersedes);
	rbuf_free(fd->md, r->data, r->cap);
	chunk_drop(fd, r->up.fid);
	filer_chunks_clear(&r->up, 1);
}

static void slot_drop_if_empty(file_data *fd, struct slot *s)
{
	size_t i;
	if (s->n || s->busy)
		return;
	i = slot_lower(fd, s->index);
	memmove(&fd->slots[i], &fd->slots[i + 1], (fd->nslots - i - 1) * sizeof(*fd->slots));
	fd->nslots--;
	free(s->r);
	free(s);
}

static void slot_remove_range(file_data *fd, struct slot *s, size_t k)
{
	s->bytes -= s->r[k].len;
	fd->dirty_bytes -= s->r[k].len;
	range_free(fd, &s->r[k]);
	memmove(&s->r[k], &s->r[k + 1], (s->n - k - 1) * sizeof(*s->r));
	s->n--;
}

/* Inserts nr (taken) as range i of slot s. */
static void slot_insert(struct slot *s, size_t i, struct drange nr)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4;
		s->r = xrealloc(s->r, s->cap * sizeof(*s->r));
	}
	memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof(*s->r));
	s->r[i] = nr;
	s->n++;
}

/* ---- file_data: the kept tail (see tail_data) ---- */

static void tail_drop(file_data *fd)
{
	rbuf_free(fd->md, fd->tail_data, fd->tail_cap);
	free(fd->tail_fid);
	fd->tail_data = NULL;
	fd->tail_fid = NULL;
}

/* Keeps committed range r (its chunk in the base now) as the tail: takes its buffer. */
static void tail_save(file_data *fd, struct drange *r, const char *fid)
{
	tail_drop(fd);
	fd->tail_data = r->data;
	fd->tail_cap = r->cap;
	fd->tail_off = r->off;
	fd->tail_len = r->len;
	fd->tail_fid = xstrdup(fid);
	r->data = NULL;
	r->cap = 0;
}

/*
 * Before a write of [off, off+len) into slot s: a write right after the tail revives it
 * as a dirty range that supersedes its chunk (the write then merges with it); any other
 * write over the tail's bytes drops it. Returns the bytes made dirty. mu held.
 */
static uint64_t tail_before_write(file_data *fd, struct slot *s, uint64_t off, uint64_t len)
{
	uint64_t tend = fd->tail_off + fd->tail_len, cs = fd->md->chunk_size;
	struct drange nr = {0};
	size_t i = 0;

	if (!fd->tail_data || off > tend || off + len < fd->tail_off)
		return 0;
	if (off != tend || s->index != fd->tail_off / cs) {
		tail_drop(fd);
		return 0;
	}
	while (i < s->n && s->r[i].off < fd->tail_off)
		i++;
	if ((i < s->n && s->r[i].off <= tend) ||
	    (i > 0 && s->r[i - 1].off + s->r[i - 1].len >= fd->tail_off)) {
		tail_drop(fd); /* dirty bytes touch it: not a plain append */
		return 0;
	}
	nr.off = fd->tail_off;
	nr.len = fd->tail_len;
	nr.cap = fd->tail_cap;
	nr.data = fd->tail_data;
	nr.gen = ++fd->gen_next;
	nr.supersedes = fd->tail_fid;
	fd->tail_data = NULL;
	fd->tail_fid = NULL;
	slot_insert(s, i, nr);
	s->bytes += nr.len;
	fd->dirty_bytes += nr.len;
	return nr.len;
}

/* Writes src over [off, off+len) inside slot s (merging); returns the bytes newly dirty. */
static uint64_t slot_write(file_data *fd, struct slot *s, uint64_t off, const uint8_t *src,
			   uint64_t len)
{
	uint64_t end = off + len, before = s->bytes, nstart, nend;
	size_t i = 0, j;
	struct drange *r;

	while (i < s->n && s->r[i].off + s->r[i].len < off)
		i++;
	j = i;
	while (j < s->n && s->r[j].off <= end)
		j++;
	/* ranges i..j-1 overlap or touch [off, end) */
	if (i == j) {
		struct drange nr = {.off = off, .len = len};
		nr.data = rbuf_alloc(fd->md, len, &nr.cap);
		memcpy(nr.data, src, len);
		nr.gen = ++fd->gen_next;
		slot_insert(s, i, nr);
		s->bytes += len;
		fd->dirty_bytes += len;
		return len;
	}
	nstart = MIN(off, s->r[i].off);
	nend = MAX(end, s->r[j - 1].off + s->r[j - 1].len);
	r = &s->r[i];
	if (nstart == r->off) {
		/* grow the first range in place (appends are the common case) */
		if (r->cap < nend - nstart && nend - nstart > BIG_RANGE) {
			uint64_t cap;
			uint8_t *d = rbuf_alloc(fd->md, nend - nstart, &cap);
			memcpy(d, r->data, r->len);
			rbuf_free(fd->md, r->data, r->cap);
			r->data = d;
			r->cap = cap;
		} else if (r->cap < nend - nstart) {
			uint64_t cap = MAX(nend - nstart, MIN(r->cap * 2, (uint64_t)BIG_RANGE));
			r->data = xrealloc(r->data, cap);
			r->cap = cap;
		}
	} else {
		uint64_t cap;
		uint8_t *d = rbuf_alloc(fd->md, nend - nstart, &cap);
		memcpy(d + (r->off - nstart), r->data, r->len);
		rbuf_free(fd->md, r->data, r->cap);
		r->data = d;
		r->cap = cap;
	}
	for (size_t k = i + 1; k < j; k++)
		memcpy(r->data + (s->r[k].off - nstart), s->r[k].data, s->r[k].len);
	memcpy(r->data + (off - nstart), src, len);
	s->bytes -= r->len;
	fd->dirty_bytes -= r->len;
	for (size_t k = i + 1; k < j; k++) {
		s->bytes -= s->r[k].len;
		fd->dirty_bytes -= s->r[k].len;
		if (!r->supersedes) {
			r->supersedes = s->r[k].supersedes;
			s->r[k].supersedes = NULL;
		}
		range_free(fd, &s->r[k]);
	}
	memmove(&s->r[i + 1], &s->r[j], (s->n - j) * sizeof(*s->r));
	s->n -= j - i - 1;
	r->off = nstart;
	r->len = nend - nstart;
	r->gen = ++fd->gen_next;
	s->bytes += r->len;
	fd->dirty_bytes += r->len;
	return s->bytes > before ? s->bytes - before : 0;
}

/* ---- uploads ---- */

struct flush_wait {
	int remaining; /* protected by the file's mu */
	int err;
};

struct up_job {
	file_data *fd;
	uint64_t slot, gen, off;
	const uint8_t *data; /* the range's buffer: stable while the slot is busy */
	size_t len;
	bool pooled; /* data is a pool buffer (a background upload hands it to the cache) */
	int64_t mtime;
	struct flush_wait *fw; /* NULL: a background upload */
};

static void up_run(void *arg)
{
	struct up_job *j = arg;
	file_data *fd = j->fd;
	mount_data *md = fd->md; /* fd may be freed once jobs drops below */
	char *fid = NULL, etag[BLOB_ETAG_MAX] = "";
	int e = upload(fd->md, j->data, j->len, &fid, etag);
	uint64_t released = 0;
	bool give = !j->fw && j->pooled; /* the range goes: its buffer moves to the cache */
	uint8_t *given = NULL;
	char *given_fid = NULL;
	struct slot *s;

	if (!e && !give) /* read-after-write is served from memory */
		chunk_cache_put(fd->md->cache, fid, j->data, j->len);

	pthread_mutex_lock(&fd->mu);
	s = slot_find(fd, j->slot);
	if (s) {
		size_t k = 0;
		while (k < s->n && s->r[k].gen != j->gen)
			k++;
		if (!e && k < s->n) {
			struct drange *r = &s->r[k];
			chunk_drop(fd, r->up.fid); /* an older upload of the range */
			filer_chunks_clear(&r->up, 1);
			r->up = (struct filer_chunk){.fid = fid,
						     .offset = j->off,
						     .size = j->len,
						     .mtime_ns = j->mtime,
						     .etag = *etag ? xstrdup(etag) : NULL};
			fid = NULL;
			r->up_gen = j->gen;
			if (!j->fw) {
				/* background: the chunk now stands for the bytes */
				list_push(&fd->pend, &r->up);
				if (r->supersedes)
					fids_push(&fd->pend_drop, r->supersedes);
				if (give) {
					given = r->data;
					given_fid = xstrdup(r->up.fid);
					r->data = NULL;
				}
				filer_chunks_clear(&r->up, 1); /* lives on in pend */
				released = r->len;
				slot_remove_range(fd, s, k);
				changed(fd);
			}
		}
		s->busy--;
		slot_drop_if_empty(fd, s);
	}
	if (fid) /* its range is gone: nothing will reference it */
		chunk_drop(fd, fid);
	if (e) {
		if (j->fw)
			j->fw->err = e;
		else
			fd->bg_err = e;
	}
	if (j->fw)
		j->fw->remaining--;
	fd->jobs--;
	pthread_cond_broadcast(&fd->cond);
	pthread_mutex_unlock(&fd->mu);
	if (released) {
		budget_release(md, released);
		stat_add(md, &md->st.bg_uploads, 1);
	}
	if (given)
		chunk_cache_put_pooled(md->cache, given_fid, given, j->len, md->pool);
	free(given_fid);
	free(fid);
	free(j);
}

/* Queues the upload of range k of slot s (or, unless submit, returns the job for the caller
   to run with up_run). mu held. */
static struct up_job *up_start(file_data *fd, struct slot *s, size_t k, struct flush_wait *fw,
			       bool submit)
{
	struct up_job *j = xcalloc(1, sizeof(*j));
	struct drange *r = &s->r[k];
	j->fd = fd;
	j->slot = s->index;
	j->gen = r->gen;
	j->off = r->off;
	j->data = r->data;
	j->len = r->len;
	j->pooled = rbuf_pooled(fd->md, r->cap);
	j->mtime = next_mtime(fd);
	j->fw = fw;
	s->busy++;
	fd->jobs++;
	if (!submit)
		return j;
	pool_submit(blob_client_pool(fd->md->bc), up_run, j);
	return NULL;
}

/* Starts background uploads of the idle slots' ranges (only full ones unless `all`). mu held. */
static size_t bg_start(file_data *fd, bool all)
{
	size_t started = 0;
	if (fd->flushing)
		return 0;
	for (size_t i = 0; i < fd->nslots; i++) {
		struct slot *s = fd->slots[i];
		if (s->busy)
			continue;
		for (size_t k = 0; k < s->n; k++) {
			if (!all && s->r[k].len != fd->md->chunk_size)
				continue;
			up_start(fd, s, k, NULL, true);
			started++;
		}
	}
	return started;
}

/*
 * Waits until want more dirty bytes fit the mount's budget, starting uploads to make room.
 * Called without fd->mu. 0 or EIO (an upload of this file failed, or no progress at all).
 */
static int budget_reserve(file_data *fd, uint64_t want)
{
	mount_data *md = fd->md;
	uint64_t last_dirty = UINT64_MAX, since = time_mono_ns();
	int e = 0;

	pthread_mutex_lock(&md->bmu);
	while (md->dirty > 0 && md->dirty + want > md->dirty_max) {
		struct timespec ts;
		uint64_t now = time_mono_ns();
		if (md->dirty != last_dirty) {
			last_dirty = md->dirty;
			since = now;
		} else if (now - since > BUDGET_WAIT_NS) {
			e = EIO;
			break;
		}
		pthread_mutex_unlock(&md->bmu);

		pthread_mutex_lock(&fd->mu);
		if (fd->bg_err) {
			e = fd->bg_err;
			fd->bg_err = 0;
			pthread_mutex_unlock(&fd->mu);
			return e;
		}
		bool mine = fd->dirty_bytes > 0;
		bg_start(fd, true);
		pthread_mutex_unlock(&fd->mu);
		if (!mine) {
			/* other files hold the budget: make them upload too */
			pthread_mutex_lock(&md->list_mu);
			for (file_data *o = md->files; o; o = o->next) {
				pthread_mutex_lock(&o->mu);
				bg_start(o, true);
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

/* ---- file_data: API ---- */

file_data *file_data_new(mount_data *md, const struct filer_entry *e)
{
	file_data *fd = xcalloc(1, sizeof(*fd));
	fd->md = md;
	pthread_mutex_init(&fd->mu, NULL);
	pthread_cond_init(&fd->cond, NULL);
	base_set(fd, e);
	fd->size = e->attr.size;
	fd->trunc_min = UINT64_MAX;
	pthread_mutex_lock(&md->list_mu);
	fd->next = md->files;
	if (md->files)
		md->files->prev = fd;
	md->files = fd;
	pthread_mutex_unlock(&md->list_mu);
	return fd;
}

void file_data_free(file_data *fd)
{
	mount_data *md;
	if (!fd)
		return;
	md = fd->md;
	pthread_mutex_lock(&fd->mu);
	while (fd->jobs)
		pthread_cond_wait(&fd->cond, &fd->mu);
	pthread_mutex_unlock(&fd->mu);
	pthread_mutex_lock(&md->list_mu);
	if (fd->prev)
		fd->prev->next = fd->next;
	else
		md->files = fd->next;
	if (fd->next)
		fd->next->prev = fd->prev;
	pthread_mutex_unlock(&md->list_mu);
	budget_release(md, fd->dirty_bytes);
	for (size_t i = 0; i < fd->nslots; i++) {
		for (size_t k = 0; k < fd->slots[i]->n; k++)
			range_free(fd, &fd->slots[i]->r[k]);
		free(fd->slots[i]->r);
		free(fd->slots[i]);
	}
	free(fd->slots);
	for (size_t i = 0; i < fd->pend.n; i++)
		chunk_drop(fd, fd->pend.c[i].fid);
	fids_clear(&fd->sent);
	list_clear(&fd->base);
	list_clear(&fd->pend);
	list_clear(&fd->fl_new);
	free(fd->fl);
	free(fd->fl_content);
	fids_clear(&fd->fl_drop);
	fids_clear(&fd->pend_drop);
	tail_drop(fd);
	free(fd->inl);
	free(fd->comb);
	free(fd->views);
	pthread_mutex_destroy(&fd->mu);
	pthread_cond_destroy(&fd->cond);
	free(fd);
}

/* The end of the dirty and pending data. mu held. */
static uint64_t data_end(file_data *fd)
{
	uint64_t end = 0;
	if (fd->nslots) {
		struct slot *s = fd->slots[fd->nslots - 1];
		if (s->n)
			end = s->r[s->n - 1].off + s->r[s->n - 1].len;
	}
	for (size_t i = 0; i < fd->pend.n; i++)
		end = MAX(end, fd->pend.c[i].offset + fd->pend.c[i].size);
	return end;
}

void file_data_reset(file_data *fd, const struct filer_entry *e)
{
	pthread_mutex_lock(&fd->mu);
	base_set(fd, e);
	if (!fd->size_dirty)
		fd->size = MAX(e->attr.size, data_end(fd));
	pthread_mutex_unlock(&fd->mu);
}

uint64_t file_data_size(file_data *fd)
{
	uint64_t s;
	pthread_mutex_lock(&fd->mu);
	s = fd->size;
	pthread_mutex_unlock(&fd->mu);
	return s;
}

/* Whether fd holds anything the filer has not got. mu held. */
static bool dirty_locked(const file_data *fd)
{
	return fd->nslots || fd->pend.n || fd->size_dirty || fd->holes_dirty;
}

void file_data_set_ino(file_data *fd, uint64_t ino)
{
	pthread_mutex_lock(&fd->mu);
	fd->ino = ino;
	pthread_mutex_unlock(&fd->mu);
}

size_t mount_data_stale_files(mount_data *md, uint64_t age_ns, uint64_t *inos, size_t max)
{
	uint64_t now = time_mono_ns();
	size_t n = 0;

	pthread_mutex_lock(&md->list_mu);
	for (file_data *fd = md->files; fd; fd = fd->next) {
		pthread_mutex_lock(&fd->mu);
		if (!dirty_locked(fd))
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

bool file_data_dirty(file_data *fd)
{
	bool d;
	pthread_mutex_lock(&fd->mu);
	d = dirty_locked(fd);
	pthread_mutex_unlock(&fd->mu);
	return d;
}

/* The plan of base + pending over the whole file. mu held. */
static int views_build(file_data *fd)
{
	if (fd->views_ok && fd->views_version == fd->version)
		return 0;
	free(fd->views);
	fd->views = NULL;
	fd->nviews = 0;
	fd->ncomb = fd->base.n + fd->pend.n;
	fd->comb = xrealloc(fd->comb, (fd->ncomb ? fd->ncomb : 1) * sizeof(*fd->comb));
	if (fd->base.n)
		memcpy(fd->comb, fd->base.c, fd->base.n * sizeof(*fd->comb));
	if (fd->pend.n)
		memcpy(fd->comb + fd->base.n, fd->pend.c, fd->pend.n * sizeof(*fd->comb));
	if (chunks_read_plan(fd->comb, fd->ncomb, 0, UINT64_MAX, &fd->views, &fd->nviews))
		return EIO;
	fd->views_ok = true;
	fd->views_version = fd->version;
	return 0;
}

/* Index of the first view ending after off. */
static size_t view_lower(file_data *fd, uint64_t off)
{
	size_t lo = 0, hi = fd->nviews;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (fd->views[mid].file_offset + fd->views[mid].len <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Whether dirty ranges cover all of [off, off+len). mu held. */
static bool dirty_covers(file_data *fd, uint64_t off, uint64_t len)
{
	uint64_t pos = off, end = off + len, cs = fd->md->chunk_size;
	for (size_t i = slot_lower(fd, off / cs); i < fd->nslots && pos < end; i++) {
		struct slot *s = fd->slots[i];
		for (size_t k = 0; k < s->n && pos < end; k++) {
			if (s->r[k].off + s->r[k].len <= pos)
				continue;
			if (s->r[k].off > pos)
				return false;
			pos = s->r[k].off + s->r[k].len;
		}
	}
	return pos >= end;
}

/* Copies the dirty bytes of [off, off+len) over dst. mu held. */
static void dirty_overlay(file_data *fd, uint64_t off, uint64_t len, uint8_t *dst)
{
	uint64_t end = off + len, cs = fd->md->chunk_size;
	for (size_t i = slot_lower(fd, off / cs); i < fd->nslots; i++) {
		struct slot *s = fd->slots[i];
		if (s->index * cs >= end)
			break;
		for (size_t k = 0; k < s->n; k++) {
			uint64_t a = MAX(off, s->r[k].off), b = MIN(end, s->r[k].off + s->r[k].len);
			if (a < b)
				memcpy(dst + (a - off), s->r[k].data + (a - s->r[k].off), b - a);
		}
	}
}

struct piece {
	char *fid;
	uint64_t chunk_off, len, dst_off;
	bool whole;
};

int file_data_read(file_data *fd, uint64_t off, size_t len, void *dst, size_t *got)
{
	mount_data *md = fd->md;
	uint8_t *out = dst;
	struct piece *pc = NULL;
	size_t npc = 0, ra_n = 0;
	char *ra[READ_AHEAD_CHUNKS + 1];
	uint64_t n, version;
	bool seq;
	int e = 0;

	*got = 0;
	pthread_mutex_lock(&fd->mu);
	e = base_resolve(fd);
	if (e || off >= fd->size || !len)
		goto out_locked;
	seq = off == fd->last_end;
	fd->seq_reads = seq ? fd->seq_reads + 1 : 0;
retry:
	if (off >= fd->size)
		goto out_locked; /* cut by a truncate meanwhile */
	n = MIN((uint64_t)len, fd->size - off);
	e = views_build(fd);
	if (e)
		goto out_locked;
	memset(out, 0, n);
	if (fd->has_inl && off < fd->inl_len)
		memcpy(out, fd->inl + off, MIN(n, fd->inl_len - off));
	pc = xrealloc(pc, sizeof(*pc) * (fd->nviews ? fd->nviews : 1));
	npc = 0;
	for (size_t i = view_lower(fd, off); i < fd->nviews; i++) {
		const struct chunk_view *v = &fd->views[i];
		const struct filer_chunk *c = &fd->comb[v->chunk];
		uint64_t a = MAX(off, v->file_offset), b = MIN(off + n, v->file_offset + v->len);
		if (v->file_offset >= off + n)
			break;
		if (a >= b || dirty_covers(fd, a, b - a))
			continue;
		pc[npc++] = (struct piece){
			.fid = xstrdup(c->fid),
			.chunk_off = v->chunk_offset + (a - v->file_offset),
			.len = b - a,
			.dst_off = a - off,
			.whole = c->size <= SMALL_CHUNK || seq || fd->seq_reads > 0,
		};
	}
	/* sequential: prefetch the chunks after this read */
	if (fd->seq_reads >= 1 && ra_n == 0) {
		uint64_t from = MAX(off + n, fd->ra_until);
		uint64_t to = off + n + READ_AHEAD_CHUNKS * md->chunk_size;
		for (size_t i = view_lower(fd, from); i < fd->nviews && ra_n < READ_AHEAD_CHUNKS;
		     i++) {
			const struct chunk_view *v = &fd->views[i];
			if (v->file_offset >= to || v->file_offset >= fd->size)
				break;
			ra[ra_n++] = xstrdup(fd->comb[v->chunk].fid);
			fd->ra_until = v->file_offset + v->len;
		}
	}
	version = fd->version;
	pthread_mutex_unlock(&fd->mu);

	for (size_t i = 0; i < npc && !e; i++)
		e = read_blob(md, pc[i].fid, pc[i].chunk_off, pc[i].len, pc[i].whole,
			      out + pc[i].dst_off);
	for (size_t i = 0; i < npc; i++)
		free(pc[i].fid);
	npc = 0;

	pthread_mutex_lock(&fd->mu);
	if (!e && fd->version != version)
		goto retry; /* a commit or upload changed the base under the read */
	if (!e) {
		n = MIN(n, fd->size > off ? fd->size - off : 0);
		dirty_overlay(fd, off, n, out);
		*got = n;
		fd->last_end = off + n;
	}
out_locked:
	pthread_mutex_unlock(&fd->mu);
	for (size_t i = 0; i < ra_n; i++)
		ra_submit(md, ra[i]);
	free(pc);
	return e;
}

int file_data_write(file_data *fd, uint64_t off, const void *src, size_t len)
{
	mount_data *md = fd->md;
	uint64_t cs = md->chunk_size, added = 0, revived = 0, pos = off, end;
	const uint8_t *p = src;
	int e;

	if (!len)
		return 0;
	if (off > INT64_MAX || len > INT64_MAX - off)
		return EFBIG;
	end = off + len;
	e = budget_reserve(fd, len);
	if (e)
		return e;
	pthread_mutex_lock(&fd->mu);
	while (pos < end) {
		uint64_t idx = pos / cs, piece = MIN(end, (idx + 1) * cs) - pos;
		struct slot *s = slot_find(fd, idx);
		if (s && s->busy) {
			pthread_cond_wait(&fd->cond, &fd->mu);
			continue; /* the slot may be gone now */
		}
		s = slot_get(fd, idx);
		revived += tail_before_write(fd, s, pos, piece);
		added += slot_write(fd, s, pos, p + (pos - off), piece);
		if (s->n == 1 && s->r[0].len == cs && !fd->flushing)
			up_start(fd, s, 0, NULL, true); /* a full chunk: upload it now */
		pos += piece;
	}
	if (end > fd->size)
		fd->size = end;
	pthread_mutex_unlock(&fd->mu);
	budget_release(md, len - MIN(added, len));
	if (revived) /* a revived tail (at most TAIL_MAX) is charged without waiting */
		budget_force(md, revived);
	return 0;
}

/* Waits until no upload runs and no flush awaits its commit. mu held. */
static void wait_quiet(file_data *fd)
{
	while (fd->jobs || fd->flushing)
		pthread_cond_wait(&fd->cond, &fd->mu);
}

int file_data_truncate(file_data *fd, uint64_t size)
{
	uint64_t cs = fd->md->chunk_size, released = 0;
	int e = 0;

	if (size > INT64_MAX)
		return EFBIG;
	pthread_mutex_lock(&fd->mu);
	wait_quiet(fd);
	tail_drop(fd);
	if (size < fd->size) {
		struct filer_chunk *g = NULL;
		size_t ng = 0;
		e = base_resolve(fd);
		if (e)
			goto out;
		for (size_t i = fd->nslots; i-- > 0;) {
			struct slot *s = fd->slots[i];
			if (s->index * cs + cs <= size)
				break;
			for (size_t k = s->n; k-- > 0;) {
				struct drange *r = &s->r[k];
				if (r->off >= size) {
					released += r->len;
					slot_remove_range(fd, s, k);
				} else if (r->off + r->len > size) {
					uint64_t cut = r->off + r->len - size;
					r->len -= cut;
					s->bytes -= cut;
					fd->dirty_bytes -= cut;
					released += cut;
					r->gen = ++fd->gen_next;
				}
			}
			slot_drop_if_empty(fd, s);
		}
		if (chunks_truncate(fd->pend.c, &fd->pend.n, size, &g, &ng))
			e = EIO;
		for (size_t i = 0; i < ng; i++) /* pending chunks cut whole: never committed */
			chunk_drop(fd, g[i].fid);
		filer_chunks_free(g, ng);
		g = NULL;
		ng = 0;
		if (!e && chunks_truncate(fd->base.c, &fd->base.n, size, &g, &ng))
			e = EIO;
		filer_chunks_free(g, ng); /* the filer frees these at the commit */
		if (fd->has_inl && fd->inl_len > size)
			fd->inl_len = (size_t)size;
		fd->trunc_min = MIN(fd->trunc_min, size);
		fd->ra_until = 0;
	}
	fd->size = size;
	fd->size_dirty = true;
	fd->trunc_seq++;
	changed(fd);
out:
	pthread_mutex_unlock(&fd->mu);
	budget_release(fd->md, released);
	return e;
}

bool file_data_flush_replaces(file_data *fd)
{
	bool r;
	pthread_mutex_lock(&fd->mu);
	r = fd->flushing && fd->fl_replace;
	pthread_mutex_unlock(&fd->mu);
	return r;
}

int file_data_flush(file_data *fd, struct filer_chunk **chunks, size_t *n)
{
	struct flush_wait fw = {0};
	struct chunk_list out = {0};
	bool replace;
	int e = 0;

	*chunks = NULL;
	*n = 0;
	pthread_mutex_lock(&fd->mu);
	wait_quiet(fd);
	fd->bg_err = 0;
	replace = fd->filer_inline && (fd->nslots || fd->pend.n);
	replace |= fd->trunc_min < fd->base_size && fd->trunc_min < fd->size;
	replace |= fd->holes_dirty;
	if (replace) {
		e = base_resolve(fd);
		if (e)
			goto out;
	}
	if (fd->has_inl && replace && fd->inl_len) {
		/* the inline bytes become the oldest chunk of the new list */
		size_t l = fd->inl_len;
		uint8_t *copy = xmalloc(l);
		char *fid = NULL, etag[BLOB_ETAG_MAX] = "";
		memcpy(copy, fd->inl, l);
		fd->jobs++; /* keeps truncates and other flushes out while unlocked */
		pthread_mutex_unlock(&fd->mu);
		e = upload(fd->md, copy, l, &fid, etag);
		free(copy);
		pthread_mutex_lock(&fd->mu);
		fd->jobs--;
		pthread_cond_broadcast(&fd->cond);
		if (e)
			goto out;
		struct filer_chunk c = {.fid = fid,
					.offset = 0,
					.size = l,
					.mtime_ns = 1,
					.etag = *etag ? etag : NULL};
		/* oldest: first in the pending list, so later ones win even on equal mtime */
		struct chunk_list np = {0};
		list_push(&np, &c);
		for (size_t i = 0; i < fd->pend.n; i++)
			list_push(&np, &fd->pend.c[i]);
		list_clear(&fd->pend);
		fd->pend = np;
		free(fid);
		free(fd->inl);
		fd->inl = NULL;
		fd->inl_len = 0;
		fd->has_inl = false;
		changed(fd);
	} else if (fd->has_inl && replace) {
		fd->has_inl = false;
	}
	/* background uploads started while the inline bytes went out would race ours */
	while (fd->jobs)
		pthread_cond_wait(&fd->cond, &fd->mu);
	/* upload every range not uploaded at its current generation; the last one in this
	   thread (an fsync of one small write then costs no thread hand-off) */
	{
		struct slot *ls = NULL;
		size_t lk = 0;
		for (size_t i = 0; i < fd->nslots; i++) {
			struct slot *s = fd->slots[i];
			for (size_t k = 0; k < s->n; k++) {
				if (s->r[k].up_gen == s->r[k].gen)
					continue;
				if (ls)
					up_start(fd, ls, lk, &fw, true);
				fw.remaining++;
				ls = s;
				lk = k;
			}
		}
		if (ls) {
			struct up_job *j = up_start(fd, ls, lk, &fw, false);
			pthread_mutex_unlock(&fd->mu);
			up_run(j);
			pthread_mutex_lock(&fd->mu);
		}
	}
	while (fw.remaining)
		pthread_cond_wait(&fd->cond, &fd->mu);
	if (fw.err) {
		e = fw.err;
		goto out;
	}
	/* the commit list: [base if replacing] + pending + the ranges' chunks */
	free(fd->fl);
	fd->fl = NULL;
	fd->nfl = 0;
	list_clear(&fd->fl_new);
	fids_clear(&fd->fl_drop);
	for (size_t i = 0; i < fd->pend_drop.n; i++)
		fids_push(&fd->fl_drop, fd->pend_drop.v[i]);
	fd->fl_npend_drop = fd->pend_drop.n;
	for (size_t i = 0; i < fd->nslots; i++)
		for (size_t k = 0; k < fd->slots[i]->n; k++)
			if (fd->slots[i]->r[k].supersedes &&
			    fd->slots[i]->r[k].up_gen == fd->slots[i]->r[k].gen)
				fids_push(&fd->fl_drop, fd->slots[i]->r[k].supersedes);
	if (replace) /* the whole list: what is superseded is simply left out */
		for (size_t i = 0; i < fd->base.n; i++)
			if (!fids_has(&fd->fl_drop, fd->base.c[i].fid))
				list_push(&out, &fd->base.c[i]);
	for (size_t i = 0; i < fd->pend.n; i++)
		list_push(&out, &fd->pend.c[i]);
	for (size_t i = 0; i < fd->nslots; i++) {
		struct slot *s = fd->slots[i];
		for (size_t k = 0; k < s->n; k++) {
			if (s->r[k].up_gen != s->r[k].gen)
				continue; /* changed since its upload: stays dirty */
			fd->fl = xrealloc(fd->fl, (fd->nfl + 1) * sizeof(*fd->fl));
			fd->fl[fd->nfl++] = (struct flushed){s->index, s->r[k].gen};
			list_push(&out, &s->r[k].up);
			list_push(&fd->fl_new, &s->r[k].up);
		}
	}
	fd->fl_npend = fd->pend.n;
	fd->fl_size = fd->size;
	fd->fl_trunc_seq = fd->trunc_seq;
	fd->fl_replace = replace;
	fd->flushing = true;
	*chunks = out.c;
	*n = out.n;
	out.c = NULL;
	stat_add(fd->md, &fd->md->st.flushes, 1);
out:
	pthread_mutex_unlock(&fd->mu);
	list_clear(&out);
	return e;
}

size_t file_data_flush_drops(file_data *fd, char ***fids)
{
	size_t n;
	pthread_mutex_lock(&fd->mu);
	n = fd->flushing ? fd->fl_drop.n : 0;
	*fids = n ? xcalloc(n, sizeof(**fids)) : NULL;
	for (size_t i = 0; i < n; i++)
		(*fids)[i] = xstrdup(fd->fl_drop.v[i]);
	pthread_mutex_unlock(&fd->mu);
	return n;
}

bool file_data_flush_inline(file_data *fd, uint8_t **content, size_t *len)
{
	uint64_t keep;
	uint8_t *c;
	bool ok = false;

	*content = NULL;
	*len = 0;
	pthread_mutex_lock(&fd->mu);
	wait_quiet(fd);
	if (fd->size > fd->md->inline_max || fd->pend.n || fd->holes_dirty || !dirty_locked(fd))
		goto out;
	/* the bytes below keep come from the base: known only when it has no chunks */
	keep = MIN(MIN(fd->base_size, fd->trunc_min), fd->size);
	if (keep && fd->base.n)
		goto out;
	c = xcalloc(1, fd->size ? fd->size : 1);
	if (keep && fd->has_inl && fd->inl_len) /* inl is NULL when empty */
		memcpy(c, fd->inl, MIN(keep, fd->inl_len));
	free(fd->fl);
	fd->fl = NULL;
	fd->nfl = 0;
	for (size_t i = 0; i < fd->nslots; i++) {
		struct slot *s = fd->slots[i];
		for (size_t k = 0; k < s->n; k++) {
			const struct drange *r = &s->r[k];
			if (r->off < fd->size)
				memcpy(c + r->off, r->data, MIN(r->len, fd->size - r->off));
			fd->fl = xrealloc(fd->fl, (fd->nfl + 1) * sizeof(*fd->fl));
			fd->fl[fd->nfl++] = (struct flushed){s->index, r->gen};
		}
	}
	list_clear(&fd->fl_new);
	fd->fl_npend = 0;
	fd->fl_size = fd->size;
	fd->fl_trunc_seq = fd->trunc_seq;
	fd->fl_replace = false;
	fd->fl_inline = true;
	fd->fl_content = c;
	fd->flushing = true;
	*len = fd->size;
	if (*len) {
		*content = xmalloc(*len);
		memcpy(*content, c, *len);
	}
	stat_add(fd->md, &fd->md->st.flushes, 1);
	ok = true;
out:
	pthread_mutex_unlock(&fd->mu);
	return ok;
}

void file_data_committed(file_data *fd, bool ok) { file_data_commit_result(fd, ok ? 0 : EIO); }

/* Whether a failed commit's error says the filer changed nothing (see the header). */
static bool commit_refused(int rc)
{
	switch (rc) {
	case ENOENT:
	case EEXIST:
	case ENOTDIR:
	case EISDIR:
	case EPERM:
	case EACCES:
	case EINVAL:
	case ENOSYS:
	case EFBIG:
	case ENOSPC:
	case EROFS:
		return true;
	default:
		return false; /* EIO, ESTALE, timeouts: it may have committed */
	}
}

void file_data_commit_result(file_data *fd, int rc)
{
	uint64_t released = 0;
	bool ok = rc == 0;
	pthread_mutex_lock(&fd->mu);
	if (!fd->flushing) {
		pthread_mutex_unlock(&fd->mu);
		return;
	}
	if (!ok && !commit_refused(rc)) {
		for (size_t i = 0; i < fd->fl_npend; i++)
			if (!fids_has(&fd->sent, fd->pend.c[i].fid))
				fids_push(&fd->sent, fd->pend.c[i].fid);
		for (size_t i = 0; i < fd->fl_new.n; i++)
			if (!fids_has(&fd->sent, fd->fl_new.c[i].fid))
				fids_push(&fd->sent, fd->fl_new.c[i].fid);
	}
	if (ok) {
		/* the superseded chunks left the filer's list */
		size_t kept = 0;
		for (size_t i = 0; i < fd->base.n; i++) {
			if (fids_has(&fd->fl_drop, fd->base.c[i].fid))
				filer_chunks_clear(&fd->base.c[i], 1);
			else
				fd->base.c[kept++] = fd->base.c[i];
		}
		fd->base.n = kept;
		if (fd->tail_fid && fids_has(&fd->fl_drop, fd->tail_fid))
			tail_drop(fd);
		fids_shift(&fd->pend_drop, fd->fl_npend_drop);
		for (size_t i = 0; i < fd->nfl; i++) {
			struct slot *s = slot_find(fd, fd->fl[i].slot);
			if (!s)
				continue;
			for (size_t k = 0; k < s->n; k++) {
				struct drange *r = &s->r[k];
				if (r->gen != fd->fl[i].gen)
					continue;
				released += r->len;
				/* a small last chunk: kept to merge with the next append */
				if (!fd->fl_inline && r->up.fid && r->len < TAIL_MAX && s->n == 1)
					tail_save(fd, r, r->up.fid);
				filer_chunks_clear(&r->up, 1); /* in the base now */
				slot_remove_range(fd, s, k);
				break;
			}
			slot_drop_if_empty(fd, s);
		}
		/* a range written again during the commit still holds its committed chunk: it
		   is referenced now, so it must never be freed as an orphan */
		for (size_t i = 0; i < fd->nslots; i++) {
			struct slot *s = fd->slots[i];
			for (size_t k = 0; k < s->n; k++) {
				struct drange *r = &s->r[k];
				for (size_t c = 0; r->up.fid && c < fd->fl_new.n; c++) {
					if (!strcmp(r->up.fid, fd->fl_new.c[c].fid)) {
						filer_chunks_clear(&r->up, 1);
						r->up_gen = 0;
					}
				}
			}
		}
		if (fd->fl_replace) {
			/* the base already holds what the list repeated of it */
			fd->filer_inline = false;
		}
		if (fd->fl_inline) {
			/* the filer freed the old chunks; the bytes are the new base */
			tail_drop(fd);
			list_clear(&fd->base);
			free(fd->inl);
			fd->inl = fd->fl_content;
			fd->inl_len = fd->fl_size;
			fd->fl_content = NULL;
			fd->has_inl = fd->filer_inline = true;
			fd->base_resolved = true;
		}
		for (size_t i = 0; i < fd->fl_npend; i++)
			list_push(&fd->base, &fd->pend.c[i]);
		for (size_t i = 0; i < fd->fl_new.n; i++)
			list_push(&fd->base, &fd->fl_new.c[i]);
		filer_chunks_clear(fd->pend.c, fd->fl_npend);
		if (fd->pend.n > fd->fl_npend)
			memmove(fd->pend.c, fd->pend.c + fd->fl_npend,
				(fd->pend.n - fd->fl_npend) * sizeof(*fd->pend.c));
		fd->pend.n -= fd->fl_npend;
		fd->base_size = fd->fl_size;
		if (fd->trunc_seq == fd->fl_trunc_seq) {
			fd->trunc_min = UINT64_MAX;
			fd->size_dirty = false;
			fd->holes_dirty = false;
		}
		changed(fd);
	}
	list_clear(&fd->fl_new);
	free(fd->fl);
	fd->fl = NULL;
	fd->nfl = 0;
	free(fd->fl_content);
	fd->fl_content = NULL;
	fd->fl_inline = false;
	fids_clear(&fd->fl_drop);
	fd->fl_npend_drop = 0;
	fd->flushing = false;
	fd->dirty_seen = 0; /* what stays dirty ages from the next scan */
	pthread_cond_broadcast(&fd->cond);
	pthread_mutex_unlock(&fd->mu);
	budget_release(fd->md, released);
}

/* ---- holes: SEEK_DATA / SEEK_HOLE, punch hole and zero range ----
 *
 * Data is what a visible piece of a base or pending chunk, a dirty range or the
 * inline content covers; the rest below the size is a hole (manifests are
 * resolved first, so a manifest's own span is not taken for data).
 *
 * A punch of [a, b) stores no zeros where it can avoid it: dirty bytes there are
 * cut, chunks inside leave the list, chunks crossing a are shortened to end at a.
 * A chunk crossing b cannot be made to start at b (a chunk always begins at its
 * blob's first byte), so zeros are written over [max(its offset, a), b) as a dirty
 * range: at most one chunk's worth whatever the punch's length. The base being cut,
 * the next commit replaces the whole list (holes_dirty) and the filer frees the
 * chunks it no longer names; the pending chunks that left are orphans.
 */

/* Cuts [a, b) out of the dirty ranges (no slot busy). Returns the bytes released. mu held. */
static uint64_t dirty_cut(file_data *fd, uint64_t a, uint64_t b)
{
	uint64_t cs = fd->md->chunk_size, released = 0;

	for (size_t i = slot_lower(fd, a / cs); i < fd->nslots;) {
		struct slot *s = fd->slots[i];
		size_t before = fd->nslots;

		if (s->index * cs >= b)
			break;
		for (size_t k = 0; k < s->n;) {
			struct drange *r = &s->r[k];
			uint64_t rend = r->off + r->len, lo = MAX(a, r->off), hi = MIN(b, rend);

			if (lo >= hi) {
				k++;
				continue;
			}
			if (lo == r->off && hi == rend) {
				released += r->len;
				slot_remove_range(fd, s, k);
				continue;
			}
			/* it no longer covers the chunk it superseded whole: that one stays listed
			   (older, so the range still wins where both remain) */
			free(r->supersedes);
			r->supersedes = NULL;
			s->bytes -= hi - lo;
			fd->dirty_bytes -= hi - lo;
			released += hi - lo;
			r->gen = ++fd->gen_next;
			if (lo > r->off && hi < rend) {
				/* the middle: the right part gets a buffer of its own */
				struct drange nr = {.off = hi, .len = rend - hi};
				nr.data = rbuf_alloc(fd->md, nr.len, &nr.cap);
				memcpy(nr.data, r->data + (hi - r->off), nr.len);
				nr.gen = ++fd->gen_next;
				r->len = lo - r->off;
				slot_insert(s, k + 1, nr);
				k += 2;
			} else if (lo > r->off) {
				r->len = lo - r->off;
				k++;
			} else {
				memmove(r->data, r->data + (hi - r->off), rend - hi);
				r->off = hi;
				r->len = rend - hi;
				k++;
			}
		}
		slot_drop_if_empty(fd, s);
		if (fd->nslots == before)
			i++;
	}
	return released;
}

/*
 * Takes [a, b) out of list l: chunks inside it move to *gone, chunks crossing a (only)
 * end there. Returns the lowest byte of [a, b) that a chunk crossing b still covers (b:
 * none); *cut tells whether anything changed. mu held.
 */
static uint64_t list_punch(struct chunk_list *l, uint64_t a, uint64_t b, struct chunk_list *gone,
			   bool *cut)
{
	uint64_t z = b;
	size_t w = 0;

	for (size_t i = 0; i < l->n; i++) {
		struct filer_chunk *c = &l->c[i];
		uint64_t end = c->offset + c->size;

		if (c->offset < b && end > b) {
			z = MIN(z, MAX(c->offset, a));
		} else if (c->offset >= a && end <= b) {
			list_push(gone, c);
			filer_chunks_clear(c, 1);
			*cut = true;
			continue;
		} else if (c->offset < a && end > a) {
			c->size = a - c->offset;
			*cut = true;
		}
		l->c[w++] = *c;
	}
	l->n = w;
	return z;
}

int file_data_punch(file_data *fd, uint64_t off, uint64_t len, bool keep_size)
{
	uint64_t cs = fd->md->chunk_size, released = 0, added = 0, a = off, b, z;
	struct chunk_list gone = {0};
	bool cut = false;
	int e;

	if (!len)
		return 0;
	if (off > INT64_MAX || len > INT64_MAX - off)
		return EFBIG;
	pthread_mutex_lock(&fd->mu);
	wait_quiet(fd);
	e = base_resolve(fd);
	if (e)
		goto out;
	tail_drop(fd); /* its bytes may be in the range */
	b = MIN(off + len, fd->size);
	if (a < b) {
		released = dirty_cut(fd, a, b);
		z = list_punch(&fd->base, a, b, &gone, &cut);
		list_clear(&gone); /* the filer frees these at the commit */
		if (cut)
			fd->holes_dirty = true; /* pending chunks go with an append as they are */
		z = MIN(z, list_punch(&fd->pend, a, b, &gone, &cut));
		for (size_t i = 0; i < gone.n; i++) /* never committed: orphans */
			chunk_drop(fd, gone.c[i].fid);
		list_clear(&gone);
		if (fd->has_inl && a < fd->inl_len) {
			memset(fd->inl + a, 0, MIN(b, (uint64_t)fd->inl_len) - a);
			fd->holes_dirty = true;
		}
		if (z < b) {
			/* zeros where a chunk crossing b still shows (see above): one chunk at most
			 */
			uint8_t *zero = xcalloc(1, MIN(b - z, cs));
			for (uint64_t pos = z; pos < b;) {
				uint64_t idx = pos / cs, piece = MIN(b, (idx + 1) * cs) - pos;
				added += slot_write(fd, slot_get(fd, idx), pos, zero, piece);
				pos += piece;
			}
			free(zero);
		}
		fd->ra_until = 0;
	}
	if (!keep_size && off + len > fd->size)
		fd->size = off + len; /* the growth is a hole */
	fd->size_dirty = true;
	fd->trunc_seq++;
	changed(fd);
out:
	pthread_mutex_unlock(&fd->mu);
	budget_release(fd->md, released);
	if (added)
		budget_force(fd->md, added);
	return e;
}

/* The end of the data interval holding pos, or pos when pos is in a hole. mu held, views
   built. */
static uint64_t data_through(file_data *fd, uint64_t pos)
{
	uint64_t end = pos, cs = fd->md->chunk_size;
	size_t i;
	struct slot *s;

	if (fd->has_inl && pos < fd->inl_len)
		end = fd->inl_len;
	i = view_lower(fd, pos);
	if (i < fd->nviews && fd->views[i].file_offset <= pos)
		end = MAX(end, fd->views[i].file_offset + fd->views[i].len);
	s = slot_find(fd, pos / cs);
	for (size_t k = 0; s && k < s->n; k++)
		if (s->r[k].off <= pos && pos < s->r[k].off + s->r[k].len)
			end = MAX(end, s->r[k].off + s->r[k].len);
	return end;
}

/* The first byte of data at or after pos (UINT64_MAX: none). mu held, views built. */
static uint64_t data_next(file_data *fd, uint64_t pos)
{
	uint64_t best = UINT64_MAX, cs = fd->md->chunk_size;
	size_t i;

	if (fd->has_inl && pos < fd->inl_len)
		return pos;
	i = view_lower(fd, pos);
	if (i < fd->nviews)
		best = MAX(fd->views[i].file_offset, pos);
	/* slots and their ranges are sorted: the first range ending after pos is the lowest */
	for (i = slot_lower(fd, pos / cs); i < fd->nslots; i++) {
		struct slot *s = fd->slots[i];
		if (s->index * cs >= best)
			break;
		for (size_t k = 0; k < s->n; k++) {
			if (s->r[k].off + s->r[k].len > pos)
				return MIN(best, MAX(s->r[k].off, pos));
		}
	}
	return best;
}

int file_data_seek(file_data *fd, uint64_t off, int whence, uint64_t *out)
{
	int e;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return EINVAL;
	pthread_mutex_lock(&fd->mu);
	e = base_resolve(fd);
	if (!e && off >= fd->size)
		e = ENXIO;
	if (!e)
		e = views_build(fd);
	if (e)
		goto out;
	if (whence == SEEK_DATA) {
		uint64_t d = data_next(fd, off);
		if (d >= fd->size)
			e = ENXIO; /* only a hole up to the end */
		else
			*out = d;
	} else {
		uint64_t pos = off, next;
		while (pos < fd->size && (next = data_through(fd, pos)) > pos)
			pos = next;
		*out = MIN(pos, fd->size); /* the end of the file is a hole */
	}
out:
	pthread_mutex_unlock(&fd->mu);
	return e;
}
