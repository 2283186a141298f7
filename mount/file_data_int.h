/*
 * Private to the file data layer (file_data.h): what its modules share.
 *   file_data.c         one file's data: lifecycle, the base, state queries;
 *                       the model every module builds on (its DESIGN)
 *   file_data_write.c   write-back buffering: dirty slots and ranges, the kept
 *                       tail; write, truncate, punch
 *   file_data_upload.c  uploads of dirty ranges, in the background or for a flush
 *   file_data_commit.c  flush and commit: the list a commit sends, and what the
 *                       commit's result does to the file
 *   file_data_read.c    reads, read-ahead, SEEK_DATA / SEEK_HOLE
 *   mount_data.c        mount-wide state: the dirty budget, statistics,
 *                       pre-assigned file ids and uploads, orphaned chunks
 * Names: mount_data_* work on the mount-wide state, file_data_* on one file.
 * Functions return WFS_OK or a wfs_err keeping the cause, as file_data.h's do.
 * "mu held" means the file's mu.
 */
#ifndef WEEDFS_MOUNT_FILE_DATA_INT_H
#define WEEDFS_MOUNT_FILE_DATA_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "client/blob_client.h"
#include "client/entry.h"
#include "client/filer_rpc.h"
#include "mount/buf_pool.h"
#include "mount/chunk_cache.h"
#include "mount/file_data.h"
#include "util.h"

#define FID_POOL 16 /* ids asked for per refill */

/* A file id the filer pre-assigned (mount_data.c). */
struct pre_fid {
	struct blob_assignment a;
	uint64_t at; /* time_mono_ns when assigned */
};

/* The mount-wide state (mount_data.c). */
struct mount_data {
	uint64_t chunk_size, dirty_max, inline_max;
	bool cipher; /* seal every chunk uploaded (mount_data_opts.cipher) */
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

/* Dirty bytes of a file, inside one slot (file_data_write.c). */
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

/* The dirty ranges of one chunk-size piece of a file. */
struct slot {
	uint64_t index; /* file offset / chunk_size */
	struct drange *r;
	size_t n, cap;
	uint64_t bytes; /* sum of the ranges' lengths */
	int busy;       /* uploads running: the slot is frozen */
};

/* A range a flush sent: its slot and generation. */
struct flushed {
	uint64_t slot, gen;
};

/* Chunks (owned). */
struct chunk_list {
	struct filer_chunk *c;
	size_t n, cap;
};

/* One open file's data (file_data.c). */
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
	wfs_err bg_err; /* a background upload failed since the last writer looked */

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

	/* fsync (file_data_sync_volumes): volumes holding chunks of the file uploaded
	   without fsync=true, whether the base's chunks may be unsynced too (another
	   close or mount wrote them), and whether data and entry are durable as they are */
	uint32_t *unsynced;
	size_t nunsynced;
	bool base_unsynced;
	bool durable;
	int64_t durable_ctime; /* the entry's ctime after that durable commit */

	uint64_t ino;        /* file_data_set_ino: the inode, for mount_data_stale_files */
	uint64_t dirty_seen; /* time_mono_ns a scan first saw it dirty; 0 = clean then */

	uint64_t last_end; /* end of the last read: sequential detection */
	int seq_reads;
	uint64_t ra_until; /* read-ahead scheduled up to this offset */
};

/* ---- chunk and file id lists ---- */

static inline void chunk_list_push(struct chunk_list *l, const struct filer_chunk *c)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->c = xrealloc(l->c, l->cap * sizeof(*l->c));
	}
	filer_chunk_copy(&l->c[l->n++], c);
}

static inline void chunk_list_clear(struct chunk_list *l)
{
	filer_chunks_free(l->c, l->n);
	memset(l, 0, sizeof(*l));
}

static inline void fid_list_push(struct fid_list *l, const char *fid)
{
	l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = xstrdup(fid);
}

/* Frees the first n ids of l and moves the rest to the front. */
static inline void fid_list_shift(struct fid_list *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l->v[i]);
	if (n && n < l->n) /* l->v is NULL when empty: memmove must not see it */
		memmove(l->v, l->v + n, (l->n - n) * sizeof(*l->v));
	l->n -= n;
}

static inline void fid_list_clear(struct fid_list *l)
{
	fid_list_shift(l, l->n);
	free(l->v);
	l->v = NULL;
}

static inline bool fid_list_has(const struct fid_list *l, const char *fid)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], fid))
			return true;
	return false;
}

/* ---- mount_data.c ---- */

/* Charges n dirty bytes to the mount's budget without waiting. */
void mount_data_budget_force(mount_data *md, uint64_t n);
/* Gives n dirty bytes back to the budget and wakes the writers waiting for it. */
void mount_data_budget_release(mount_data *md, uint64_t n);
/*
 * Waits until want more dirty bytes fit the mount's budget, starting uploads to make room.
 * Called without fd->mu. WFS_OK, the error of an upload of this file that failed meanwhile
 * (WFS_ENOSPC...), or WFS_EIO when no upload made progress at all for BUDGET_WAIT_NS.
 */
wfs_err mount_data_budget_reserve(file_data *fd, uint64_t want);
/* Adds n to the counter field of md->st (under md->bmu). */
void mount_data_stat_add(mount_data *md, uint64_t *field, uint64_t n);
/* Queues fid (taken) to be freed by the filer (freeChunks, batched). Any lock may be held. */
void mount_data_orphan(mount_data *md, char *fid);
/*
 * Stores len bytes as a new blob (a pre-assigned file id when one is pooled): *fid (caller
 * frees), etag and, when the mount seals chunks (mount_data_opts.cipher), key's cipher key
 * (else key->has_cipher_key is false); with fsync, durable on every replica when it returns. WFS_OK or blob_client_save's error (WFS_ENOSPC: no room in the cluster).
 * Any thread; no lock held.
 */
wfs_err mount_data_upload(mount_data *md, const void *data, size_t len, bool fsync, char **fid,
			  char *etag, struct filer_chunk *key);

/* ---- file_data.c ---- */

/* An mtime newer than every chunk of the file seen so far. mu held. */
int64_t file_data_next_mtime(file_data *fd);
/* Notes that the base or the pending chunks changed (the read plan is rebuilt). mu held. */
void file_data_changed(file_data *fd);
/* Frees fid (borrowed; NULL: nothing) unless a commit may have referenced it. mu held. */
void file_data_chunk_drop(file_data *fd, const char *fid);
/* Resolves manifests and cuts chunks past the base size. mu held (network!). WFS_OK or
   file_data_blob_err of the manifests' fetch. */
wfs_err file_data_base_resolve(file_data *fd);
/*
 * What a failure to read a blob the file names means to a reader: a blob no volume
 * server has (WFS_ENOENT) is damaged data (WFS_ECORRUPT, EIO), not a missing file;
 * anything else (WFS_EUNAVAIL, WFS_ETIMEDOUT...) stays.
 */
static inline wfs_err file_data_blob_err(wfs_err e) { return e == WFS_ENOENT ? WFS_ECORRUPT : e; }
/* Notes that chunk fid was uploaded without fsync (file_data_sync_volumes syncs its
   volume). mu held. */
void file_data_note_unsynced(file_data *fd, const char *fid);
/* Whether fd holds anything the filer has not got. mu held. */
bool file_data_dirty_locked(const file_data *fd);
/* Waits until no upload runs and no flush awaits its commit. mu held. */
void file_data_wait_quiet(file_data *fd);

/* ---- file_data_write.c ---- */

/* Index of the first slot with index >= idx. mu held. */
size_t file_data_slot_lower(file_data *fd, uint64_t idx);
/* The slot of index idx, or NULL. mu held. */
struct slot *file_data_slot_find(file_data *fd, uint64_t idx);
/* Frees s when it holds no range and no upload runs on it. mu held. */
void file_data_slot_drop_if_empty(file_data *fd, struct slot *s);
/* Removes range k of s and frees it (its uploaded chunk, never committed, too). mu held. */
void file_data_slot_remove_range(file_data *fd, struct slot *s, size_t k);
/* Frees every slot and range (file_data_free). mu held or fd unshared. */
void file_data_slots_free(file_data *fd);
/* Whether a range buffer of capacity cap is a pooled chunk-size buffer. */
bool file_data_rbuf_pooled(mount_data *md, uint64_t cap);
/* Drops the kept tail (see tail_data). mu held. */
void file_data_tail_drop(file_data *fd);
/* Keeps committed range r (its chunk in the base now) as the tail: takes its buffer. */
void file_data_tail_save(file_data *fd, struct drange *r, const char *fid);

/* ---- file_data_upload.c ---- */

struct flush_wait {
	int remaining; /* protected by the file's mu */
	wfs_err err;   /* protected by the file's mu: an upload's failure */
	bool fsync;    /* the uploads ask for fsync=true (an fsync's flush) */
};

struct up_job;

/*
 * Starts the upload of range k of slot s (the slot is busy until it ends): queued on the
 * pool, or, unless submit, returned for the caller to run with file_data_upload_run. fw
 * NULL: a background upload (the chunk goes pending and the range's memory is released).
 * mu held.
 */
struct up_job *file_data_upload_start(file_data *fd, struct slot *s, size_t k,
				      struct flush_wait *fw, bool submit);
/* Runs job (taken), on a pool worker or the caller's thread. Takes mu; no lock held. */
void file_data_upload_run(void *job);
/* Starts background uploads of the idle slots' ranges (only full ones unless `all`). mu held. */
size_t file_data_upload_background(file_data *fd, bool all);

#endif
