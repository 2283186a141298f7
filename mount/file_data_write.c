/*
 * Write-back buffering of a file's data (file_data.h: file_data_write,
 * file_data_truncate, file_data_punch): the dirty ranges in memory and the
 * kept tail. Uploads are file_data_upload.c's, commits file_data_commit.c's.
 *
 * DESIGN
 * - Dirty ranges live in chunk-size slots (file offset / chunk_size): a range
 *   never crosses a slot boundary, so one range is at most one chunk and a
 *   range covering its whole slot is a full chunk, uploaded in the background
 *   (it then becomes a pending chunk and its memory is released). Ranges of a
 *   slot are sorted, non-overlapping and non-adjacent (writes merge).
 * - A slot with an upload running is frozen: writes and truncates touching it
 *   wait, so an upload reads a stable buffer without copying it.
 * - Every change of a range gives it a new generation (unique within the
 *   file): uploads and flushes remember the generation they saw, so a change
 *   that arrives meanwhile stays dirty (file_data_commit.c).
 * - Size changes: a truncate cuts the ranges, pending chunks and the base's
 *   view at once; its commit is file_data_commit.c's (a shrink followed by
 *   growth replaces the whole list).
 * - A writer first reserves its bytes in the mount's dirty budget
 *   (mount_data_budget_reserve), which may wait for uploads.
 * - Memory: large buffers (dirty ranges, chunk copies) are malloc'ed outside
 *   the heap arenas (M_MMAP_THRESHOLD fixed at 128 KiB by mount_data_new), so
 *   a freed range goes back to the kernel at once instead of staying in a
 *   thread's arena. Ranges over 128 KiB take chunk-size buffers from a pool
 *   (buf_pool.h) instead: reused without page faults; a background upload
 *   hands its buffer to the memory cache (no copy), which returns it on
 *   eviction.
 * - The kept tail: a small committed range keeps its buffer after the commit;
 *   a write right after it revives it as a dirty range that `supersedes` the
 *   committed chunk, and the next commit drops that chunk (update dropChunks,
 *   or leaves it out of a replaced list). fsync after each small sequential
 *   write then re-uploads at most TAIL_MAX bytes instead of adding one chunk
 *   per fsync to a list the filer rewrites every time.
 * - Punch hole and zero range store no zeros where they can avoid it: dirty
 *   bytes in [a, b) are cut, chunks inside leave the list, chunks crossing a
 *   are shortened to end at a. A chunk crossing b cannot be made to start at
 *   b (a chunk always begins at its blob's first byte), so zeros are written
 *   over [max(its offset, a), b) as a dirty range: at most one chunk's worth
 *   whatever the punch's length. The base being cut, the next commit replaces
 *   the whole list (holes_dirty) and the filer frees the chunks it no longer
 *   names; the pending chunks that left are orphans.
 */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "client/chunks.h"
#include "mount/file_data_int.h"
#include "util.h"

#define BIG_RANGE (128u << 10) /* range buffers over this come from the buffer pool */

/* ---- dirty slots ---- */

size_t file_data_slot_lower(file_data *fd, uint64_t idx)
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

struct slot *file_data_slot_find(file_data *fd, uint64_t idx)
{
	size_t i = file_data_slot_lower(fd, idx);
	return i < fd->nslots && fd->slots[i]->index == idx ? fd->slots[i] : NULL;
}

static struct slot *slot_get(file_data *fd, uint64_t idx)
{
	size_t i = file_data_slot_lower(fd, idx);
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

bool file_data_rbuf_pooled(mount_data *md, uint64_t cap)
{
	return cap > BIG_RANGE && cap == buf_pool_size(md->pool);
}

static void rbuf_free(mount_data *md, uint8_t *p, uint64_t cap)
{
	if (file_data_rbuf_pooled(md, cap))
		buf_pool_put(md->pool, p);
	else
		free(p);
}

/* Frees r's memory; its uploaded chunk, never committed, is freed on the filer. mu held. */
static void range_free(file_data *fd, struct drange *r)
{
	free(r->supersedes);
	rbuf_free(fd->md, r->data, r->cap);
	file_data_chunk_drop(fd, r->up.fid);
	filer_chunks_clear(&r->up, 1);
}

void file_data_slots_free(file_data *fd)
{
	for (size_t i = 0; i < fd->nslots; i++) {
		for (size_t k = 0; k < fd->slots[i]->n; k++)
			range_free(fd, &fd->slots[i]->r[k]);
		free(fd->slots[i]->r);
		free(fd->slots[i]);
	}
	free(fd->slots);
}

void file_data_slot_drop_if_empty(file_data *fd, struct slot *s)
{
	size_t i;
	if (s->n || s->busy)
		return;
	i = file_data_slot_lower(fd, s->index);
	memmove(&fd->slots[i], &fd->slots[i + 1], (fd->nslots - i - 1) * sizeof(*fd->slots));
	fd->nslots--;
	free(s->r);
	free(s);
}

void file_data_slot_remove_range(file_data *fd, struct slot *s, size_t k)
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

/* ---- the kept tail (see tail_data) ---- */

void file_data_tail_drop(file_data *fd)
{
	rbuf_free(fd->md, fd->tail_data, fd->tail_cap);
	free(fd->tail_fid);
	fd->tail_data = NULL;
	fd->tail_fid = NULL;
}

void file_data_tail_save(file_data *fd, struct drange *r, const char *fid)
{
	file_data_tail_drop(fd);
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
		file_data_tail_drop(fd);
		return 0;
	}
	while (i < s->n && s->r[i].off < fd->tail_off)
		i++;
	if ((i < s->n && s->r[i].off <= tend) ||
	    (i > 0 && s->r[i - 1].off + s->r[i - 1].len >= fd->tail_off)) {
		file_data_tail_drop(fd); /* dirty bytes touch it: not a plain append */
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

/* ---- API ---- */

wfs_err file_data_write(file_data *fd, uint64_t off, const void *src, size_t len)
{
	mount_data *md = fd->md;
	uint64_t cs = md->chunk_size, added = 0, revived = 0, pos = off, end;
	const uint8_t *p = src;
	wfs_err e;

	if (!len)
		return WFS_OK;
	if (off > INT64_MAX || len > INT64_MAX - off)
		return WFS_ETOOBIG;
	end = off + len;
	e = mount_data_budget_reserve(fd, len);
	if (e)
		return e;
	pthread_mutex_lock(&fd->mu);
	while (pos < end) {
		uint64_t idx = pos / cs, piece = MIN(end, (idx + 1) * cs) - pos;
		struct slot *s = file_data_slot_find(fd, idx);
		if (s && s->busy) {
			pthread_cond_wait(&fd->cond, &fd->mu);
			continue; /* the slot may be gone now */
		}
		s = slot_get(fd, idx);
		revived += tail_before_write(fd, s, pos, piece);
		added += slot_write(fd, s, pos, p + (pos - off), piece);
		if (s->n == 1 && s->r[0].len == cs && !fd->flushing) /* a full chunk: upload it now */
			file_data_upload_start(fd, s, 0, NULL, true);
		pos += piece;
	}
	if (end > fd->size)
		fd->size = end;
	pthread_mutex_unlock(&fd->mu);
	mount_data_budget_release(md, len - MIN(added, len));
	if (revived) /* a revived tail (at most TAIL_MAX) is charged without waiting */
		mount_data_budget_force(md, revived);
	return WFS_OK;
}

wfs_err file_data_truncate(file_data *fd, uint64_t size)
{
	uint64_t cs = fd->md->chunk_size, released = 0;
	wfs_err e = WFS_OK;

	if (size > INT64_MAX)
		return WFS_ETOOBIG;
	pthread_mutex_lock(&fd->mu);
	file_data_wait_quiet(fd);
	file_data_tail_drop(fd);
	if (size < fd->size) {
		struct filer_chunk *g = NULL;
		size_t ng = 0;
		e = file_data_base_resolve(fd);
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
					file_data_slot_remove_range(fd, s, k);
				} else if (r->off + r->len > size) {
					uint64_t cut = r->off + r->len - size;
					r->len -= cut;
					s->bytes -= cut;
					fd->dirty_bytes -= cut;
					released += cut;
					r->gen = ++fd->gen_next;
				}
			}
			file_data_slot_drop_if_empty(fd, s);
		}
		if (chunks_truncate(fd->pend.c, &fd->pend.n, size, &g, &ng))
			e = WFS_EIO; /* a manifest in a resolved list: cannot happen */
		for (size_t i = 0; i < ng; i++) /* pending chunks cut whole: never committed */
			file_data_chunk_drop(fd, g[i].fid);
		filer_chunks_free(g, ng);
		g = NULL;
		ng = 0;
		if (!e && chunks_truncate(fd->base.c, &fd->base.n, size, &g, &ng))
			e = WFS_EIO;
		filer_chunks_free(g, ng); /* the filer frees these at the commit */
		if (fd->has_inl && fd->inl_len > size)
			fd->inl_len = (size_t)size;
		fd->trunc_min = MIN(fd->trunc_min, size);
		fd->ra_until = 0;
	}
	fd->size = size;
	fd->size_dirty = true;
	fd->trunc_seq++;
	file_data_changed(fd);
out:
	pthread_mutex_unlock(&fd->mu);
	mount_data_budget_release(fd->md, released);
	return e;
}

/* ---- punch hole and zero range (see DESIGN) ---- */

/* Cuts [a, b) out of the dirty ranges (no slot busy). Returns the bytes released. mu held. */
static uint64_t dirty_cut(file_data *fd, uint64_t a, uint64_t b)
{
	uint64_t cs = fd->md->chunk_size, released = 0;

	for (size_t i = file_data_slot_lower(fd, a / cs); i < fd->nslots;) {
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
				file_data_slot_remove_range(fd, s, k);
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
		file_data_slot_drop_if_empty(fd, s);
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
			chunk_list_push(gone, c);
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

wfs_err file_data_punch(file_data *fd, uint64_t off, uint64_t len, bool keep_size)
{
	uint64_t cs = fd->md->chunk_size, released = 0, added = 0, a = off, b, z;
	struct chunk_list gone = {0};
	bool cut = false;
	wfs_err e;

	if (!len)
		return WFS_OK;
	if (off > INT64_MAX || len > INT64_MAX - off)
		return WFS_ETOOBIG;
	pthread_mutex_lock(&fd->mu);
	file_data_wait_quiet(fd);
	e = file_data_base_resolve(fd);
	if (e)
		goto out;
	file_data_tail_drop(fd); /* its bytes may be in the range */
	b = MIN(off + len, fd->size);
	if (a < b) {
		released = dirty_cut(fd, a, b);
		z = list_punch(&fd->base, a, b, &gone, &cut);
		chunk_list_clear(&gone); /* the filer frees these at the commit */
		if (cut)
			fd->holes_dirty = true; /* pending chunks go with an append as they are */
		z = MIN(z, list_punch(&fd->pend, a, b, &gone, &cut));
		for (size_t i = 0; i < gone.n; i++) /* never committed: orphans */
			file_data_chunk_drop(fd, gone.c[i].fid);
		chunk_list_clear(&gone);
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
	file_data_changed(fd);
out:
	pthread_mutex_unlock(&fd->mu);
	mount_data_budget_release(fd->md, released);
	if (added)
		mount_data_budget_force(fd->md, added);
	return e;
}
