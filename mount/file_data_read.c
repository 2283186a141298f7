/*
 * Reads of a file's data (file_data.h: file_data_read, file_data_seek):
 * dirty bytes, else the base and pending chunks through the chunk cache,
 * else the volume servers; holes read as zeros.
 *
 * DESIGN
 * - Reads plan the base + pending list once per change (chunks_read_plan over
 *   the whole file), then copy pieces from the chunk cache, from a whole-blob
 *   fetch (small chunks, sequential readers; put in the cache; concurrent
 *   fetches of one blob are merged) or from a ranged GET (random reads of big
 *   chunks), outside the file's lock; a change of the plan meanwhile (a commit,
 *   an upload) makes the read start over. Dirty bytes are copied over last.
 *   Sequential readers prefetch the next chunks on the pool.
 * - SEEK_DATA / SEEK_HOLE: data is what a visible piece of a base or pending
 *   chunk, a dirty range or the inline content covers; the rest below the size
 *   is a hole (manifests are resolved first, so a manifest's own span is not
 *   taken for data).
 * - Sealed chunks (-encryptVolumeData, chunk_cipher.h) are always fetched whole
 *   and opened before they reach the cache, so the cache holds plaintext that
 *   passed authentication only: a read slices it like any other chunk, where
 *   caching the ciphertext would mean opening the whole chunk again for every
 *   4 KiB read. A blob that fails authentication is never cached (EIO).
 */
#include "config.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "client/chunk_cipher.h"
#include "client/chunk_io.h"
#include "client/chunks.h"
#include "log.h"
#include "mount/file_data_int.h"
#include "util.h"

#define SMALL_CHUNK       (1u << 20) /* chunks up to this are always fetched whole */
#define READ_AHEAD_CHUNKS 2
#define READ_AHEAD_JOBS   8

/* ---- reading blobs ---- */

struct inflight {
	char *fid;
	struct inflight *next;
};

/* A chunk's blob to read: its file id and key (copied from the plan, which may change). */
struct blob_ref {
	char *fid;
	bool sealed;
	uint8_t key[FILER_CHUNK_KEY_LEN];
};

static void blob_ref_set(struct blob_ref *r, const struct filer_chunk *c)
{
	r->fid = xstrdup(c->fid);
	r->sealed = c->has_cipher_key;
	memcpy(r->key, c->cipher_key, sizeof(r->key));
}

/* Appends the plaintext of r's whole blob to b (opened when sealed). */
static wfs_err blob_ref_read(mount_data *md, const struct blob_ref *r, buf *b)
{
	struct filer_chunk c = {.fid = r->fid, .has_cipher_key = r->sealed};
	memcpy(c.cipher_key, r->key, sizeof(c.cipher_key));
	return chunk_cipher_read(md->bc, &c, CHUNK_SIZE_MAX, b);
}

/* Fetches blob r whole into the cache, merged with a fetch of it already running. */
static wfs_err fetch_whole(mount_data *md, const struct blob_ref *r)
{
	const char *fid = r->fid;
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

	err = blob_ref_read(md, r, &b);
	if (!err) {
		mount_data_stat_add(md, &md->st.fetched_bytes, b.len);
		chunk_cache_put_take(md->cache, fid, b.data ? b.data : xmalloc(1), b.len);
		buf_init(&b); /* the cache has the bytes now */
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

/*
 * Copies [off, off+len) of blob fid into dst: cache, whole fetch (if `whole`), or a range.
 * WFS_OK or file_data_blob_err of the read's failure.
 */
static wfs_err read_blob(mount_data *md, const struct blob_ref *r, uint64_t off, size_t len,
			 bool whole, uint8_t *dst)
{
	const char *fid = r->fid;
	wfs_err err = WFS_OK;
	buf b = BUF_INIT;

	whole |= r->sealed;
	for (int i = 0; whole && i < 3; i++) {
		if (chunk_cache_read(md->cache, fid, off, len, dst))
			return WFS_OK;
		err = fetch_whole(md, r);
		if (err == WFS_ETOOBIG)
			break; /* a chunk bigger than the cache takes: ranges of it */
		if (err)
			goto out; /* not a range instead: only a whole read checks the CRC */
	}
	if (chunk_cache_read(md->cache, fid, off, len, dst))
		return WFS_OK;
	/* random access to a big chunk (or the cache cannot hold it): just the range; of a
	   sealed chunk, the slice of its opened blob */
	if (r->sealed) {
		err = blob_ref_read(md, r, &b);
		if (!err && (b.len < off || b.len - off < len))
			err = WFS_ECORRUPT;
	} else {
		err = blob_client_read(md->bc, fid, off, len, 0, &b);
		if (!err && b.len != len)
			err = WFS_ECORRUPT;
		off = 0;
	}
	if (!err) {
		memcpy(dst, b.data + off, len);
		mount_data_stat_add(md, &md->st.fetched_bytes, len);
	}
	buf_free(&b);
out:
	if (err) {
		log_warn("mount: read of %s [%" PRIu64 ", +%zu): %s", fid, off, len,
			 wfs_strerror(err));
		return file_data_blob_err(err);
	}
	return WFS_OK;
}

struct ra_job {
	mount_data *md;
	struct blob_ref r;
};

static void ra_run(void *arg)
{
	struct ra_job *j = arg;
	uint8_t probe;
	if (!chunk_cache_read(j->md->cache, j->r.fid, 0, 1, &probe) && !fetch_whole(j->md, &j->r))
		mount_data_stat_add(j->md, &j->md->st.prefetches, 1);
	pthread_mutex_lock(&j->md->ifmu);
	j->md->ra_jobs--;
	pthread_mutex_unlock(&j->md->ifmu);
	free(j->r.fid);
	free(j);
}

/* Queues a prefetch of r (its fid taken) unless too many run. */
static void ra_submit(mount_data *md, struct blob_ref *r)
{
	struct ra_job *j;
	pthread_mutex_lock(&md->ifmu);
	if (md->ra_jobs >= READ_AHEAD_JOBS) {
		pthread_mutex_unlock(&md->ifmu);
		free(r->fid);
		return;
	}
	md->ra_jobs++;
	pthread_mutex_unlock(&md->ifmu);
	j = xcalloc(1, sizeof(*j));
	j->md = md;
	j->r = *r;
	pool_submit(blob_client_pool(md->bc), ra_run, j);
}

/* ---- the read plan ---- */

/* The plan of base + pending over the whole file. mu held. */
static wfs_err views_build(file_data *fd)
{
	if (fd->views_ok && fd->views_version == fd->version)
		return WFS_OK;
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
		return WFS_EIO; /* a manifest in a resolved list: cannot happen */
	fd->views_ok = true;
	fd->views_version = fd->version;
	return WFS_OK;
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
	for (size_t i = file_data_slot_lower(fd, off / cs); i < fd->nslots && pos < end; i++) {
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
	for (size_t i = file_data_slot_lower(fd, off / cs); i < fd->nslots; i++) {
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
	struct blob_ref r;
	uint64_t chunk_off, len, dst_off;
	bool whole;
};

wfs_err file_data_read(file_data *fd, uint64_t off, size_t len, void *dst, size_t *got)
{
	mount_data *md = fd->md;
	uint8_t *out = dst;
	struct piece *pc = NULL;
	size_t npc = 0, ra_n = 0;
	struct blob_ref ra[READ_AHEAD_CHUNKS + 1];
	uint64_t n, version;
	bool seq;
	wfs_err e = WFS_OK;

	*got = 0;
	pthread_mutex_lock(&fd->mu);
	e = file_data_base_resolve(fd);
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
		pc[npc] = (struct piece){
			.chunk_off = v->chunk_offset + (a - v->file_offset),
			.len = b - a,
			.dst_off = a - off,
			.whole = c->size <= SMALL_CHUNK || seq || fd->seq_reads > 0,
		};
		blob_ref_set(&pc[npc++].r, c);
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
			blob_ref_set(&ra[ra_n++], &fd->comb[v->chunk]);
			fd->ra_until = v->file_offset + v->len;
		}
	}
	version = fd->version;
	pthread_mutex_unlock(&fd->mu);

	for (size_t i = 0; i < npc && !e; i++)
		e = read_blob(md, &pc[i].r, pc[i].chunk_off, pc[i].len, pc[i].whole,
			      out + pc[i].dst_off);
	for (size_t i = 0; i < npc; i++)
		free(pc[i].r.fid);
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
		ra_submit(md, &ra[i]);
	free(pc);
	return e;
}

/* ---- SEEK_DATA / SEEK_HOLE ---- */

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
	s = file_data_slot_find(fd, pos / cs);
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
	for (i = file_data_slot_lower(fd, pos / cs); i < fd->nslots; i++) {
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

wfs_err file_data_seek(file_data *fd, uint64_t off, int whence, uint64_t *out)
{
	wfs_err e;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return WFS_EINVAL;
	*out = FILE_DATA_SEEK_NONE;
	pthread_mutex_lock(&fd->mu);
	e = file_data_base_resolve(fd);
	if (!e && off < fd->size)
		e = views_build(fd);
	if (e || off >= fd->size)
		goto out;
	if (whence == SEEK_DATA) {
		uint64_t d = data_next(fd, off);
		if (d < fd->size) /* else only a hole up to the end */
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
