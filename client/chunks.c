/*
 * DESIGN: visibility is a sweep over the sorted chunk boundaries with a
 * max-heap of the chunks that have started, ordered by (mtime_ns, list index).
 * Between two consecutive boundaries the heap's top (after dropping chunks that
 * ended) supplies the bytes. O(n log n) for n chunks, so a read plan over a
 * file with thousands of chunks stays cheap.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "client/chunk_cipher.h"
#include "client/chunks.h"
#include "util.h"

struct span {
	uint64_t start, stop; /* clipped to the window */
	size_t idx;
};

/* true if chunk a is newer than chunk b (wins where they overlap). */
static bool newer(const struct filer_chunk *c, size_t a, size_t b)
{
	if (c[a].mtime_ns != c[b].mtime_ns)
		return c[a].mtime_ns > c[b].mtime_ns;
	return a > b;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_span_start(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

struct heap {
	const struct filer_chunk *c;
	const struct span *spans; /* indexed by heap element */
	size_t *v;                /* indices into spans */
	size_t n;
};

static bool heap_above(struct heap *h, size_t i, size_t j)
{
	return newer(h->c, h->spans[h->v[i]].idx, h->spans[h->v[j]].idx);
}

static void heap_swap(struct heap *h, size_t i, size_t j)
{
	size_t t = h->v[i];
	h->v[i] = h->v[j];
	h->v[j] = t;
}

static void heap_push(struct heap *h, size_t s)
{
	size_t i = h->n++;
	h->v[i] = s;
	while (i > 0 && heap_above(h, i, (i - 1) / 2)) {
		heap_swap(h, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_pop(struct heap *h)
{
	size_t i = 0;
	h->v[0] = h->v[--h->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && heap_above(h, l, m))
			m = l;
		if (r < h->n && heap_above(h, r, m))
			m = r;
		if (m == i)
			break;
		heap_swap(h, i, m);
		i = m;
	}
}

typedef void (*emit_fn)(void *ctx, size_t chunk, uint64_t start, uint64_t stop);

/* Calls emit for each maximal-by-boundary piece of [lo, hi) and the chunk supplying it. */
static wfs_err sweep(const struct filer_chunk *c, size_t n, uint64_t lo, uint64_t hi, emit_fn emit,
		     void *ctx)
{
	struct span *spans;
	uint64_t *pts;
	size_t ns = 0, np = 0, si = 0;
	struct heap h;

	for (size_t i = 0; i < n; i++)
		if (c[i].is_manifest)
			return WFS_EINVAL;
	if (lo >= hi || n == 0)
		return WFS_OK;
	spans = xmalloc(n * sizeof(*spans));
	pts = xmalloc(2 * n * sizeof(*pts));
	for (size_t i = 0; i < n; i++) {
		uint64_t s = MAX(c[i].offset, lo), e = MIN(c[i].offset + c[i].size, hi);
		if (s >= e)
			continue;
		spans[ns].start = s;
		spans[ns].stop = e;
		spans[ns].idx = i;
		ns++;
		pts[np++] = s;
		pts[np++] = e;
	}
	qsort(spans, ns, sizeof(*spans), cmp_span_start);
	qsort(pts, np, sizeof(*pts), cmp_u64);
	h.c = c;
	h.spans = spans;
	h.v = xmalloc((ns ? ns : 1) * sizeof(*h.v));
	h.n = 0;
	for (size_t k = 0; k + 1 < np; k++) {
		uint64_t p = pts[k], q = pts[k + 1];
		if (p == q)
			continue;
		while (si < ns && spans[si].start <= p)
			heap_push(&h, si++);
		while (h.n && spans[h.v[0]].stop <= p)
			heap_pop(&h);
		if (h.n)
			emit(ctx, spans[h.v[0]].idx, p, q);
	}
	free(h.v);
	free(pts);
	free(spans);
	return WFS_OK;
}

struct plan_ctx {
	const struct filer_chunk *c;
	struct chunk_view *v;
	size_t n, cap;
};

static void plan_emit(void *ctx, size_t chunk, uint64_t start, uint64_t stop)
{
	struct plan_ctx *pc = ctx;
	struct chunk_view *last = pc->n ? &pc->v[pc->n - 1] : NULL;
	if (last && last->chunk == chunk && last->file_offset + last->len == start) {
		last->len += stop - start;
		return;
	}
	if (pc->n == pc->cap) {
		pc->cap = pc->cap ? pc->cap * 2 : 8;
		pc->v = xrealloc(pc->v, pc->cap * sizeof(*pc->v));
	}
	pc->v[pc->n].chunk = chunk;
	pc->v[pc->n].file_offset = start;
	pc->v[pc->n].chunk_offset = start - pc->c[chunk].offset;
	pc->v[pc->n].len = stop - start;
	pc->n++;
}

wfs_err chunks_read_plan(const struct filer_chunk *c, size_t n, uint64_t off, uint64_t len,
			 struct chunk_view **views, size_t *nviews)
{
	struct plan_ctx pc = {c, NULL, 0, 0};
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	wfs_err err = sweep(c, n, off, end, plan_emit, &pc);
	if (err) {
		free(pc.v);
		return err;
	}
	*views = pc.v;
	*nviews = pc.n;
	return WFS_OK;
}

static void mask_emit(void *ctx, size_t chunk, uint64_t start, uint64_t stop)
{
	bool *mask = ctx;
	mask[chunk] = true;
}

wfs_err chunks_visible_mask(const struct filer_chunk *c, size_t n, uint64_t file_size, bool *mask)
{
	for (size_t i = 0; i < n; i++)
		mask[i] = false;
	return sweep(c, n, 0, file_size, mask_emit, mask);
}

static void garbage_push(struct filer_chunk **g, size_t *ng, const struct filer_chunk *ch)
{
	/* grow in powers of two; the capacity is implied by the count */
	if ((*ng & (*ng - 1)) == 0)
		*g = xrealloc(*g, (*ng ? *ng * 2 : 1) * sizeof(**g));
	(*g)[(*ng)++] = *ch;
}

wfs_err chunks_compact(struct filer_chunk *c, size_t *n, uint64_t file_size,
		       struct filer_chunk **garbage, size_t *n_garbage)
{
	bool *mask = xmalloc((*n ? *n : 1) * sizeof(*mask));
	size_t w = 0;
	wfs_err err = chunks_visible_mask(c, *n, file_size, mask);
	if (err)
		goto out;
	for (size_t i = 0; i < *n; i++) {
		if (mask[i])
			c[w++] = c[i];
		else
			garbage_push(garbage, n_garbage, &c[i]);
	}
	*n = w;
out:
	free(mask);
	return err;
}

wfs_err chunks_truncate(struct filer_chunk *c, size_t *n, uint64_t size,
			struct filer_chunk **garbage, size_t *n_garbage)
{
	size_t w = 0;
	for (size_t i = 0; i < *n; i++)
		if (c[i].is_manifest)
			return WFS_EINVAL;
	for (size_t i = 0; i < *n; i++) {
		if (c[i].offset >= size) {
			garbage_push(garbage, n_garbage, &c[i]);
			continue;
		}
		if (c[i].offset + c[i].size > size)
			c[i].size = size - c[i].offset;
		c[w++] = c[i];
	}
	*n = w;
	return WFS_OK;
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void chunks_unreferenced(const struct filer_chunk *old, size_t n_old,
			 const struct filer_chunk *new_, size_t n_new, size_t **idx, size_t *n_idx)
{
	char **ids = xmalloc((n_new ? n_new : 1) * sizeof(*ids));
	size_t *out = xmalloc((n_old ? n_old : 1) * sizeof(*out)), k = 0;
	for (size_t i = 0; i < n_new; i++)
		ids[i] = new_[i].fid;
	qsort(ids, n_new, sizeof(*ids), cmp_strp);
	for (size_t i = 0; i < n_old; i++) {
		char *key = old[i].fid;
		if (!n_new || !bsearch(&key, ids, n_new, sizeof(*ids), cmp_strp))
			out[k++] = i;
	}
	free(ids);
	*idx = out;
	*n_idx = k;
}

/* ---- manifests ----------------------------------------------------------------------------- */

void chunks_manifest_encode(const struct filer_chunk *c, size_t n, buf *out)
{
	uint8_t v = CHUNKS_MANIFEST_VERSION;
	buf_append(out, &v, 1);
	filer_chunk_list_encode(out, c, n);
}

wfs_err chunks_manifest_decode(const uint8_t *p, size_t len, struct filer_chunk **out, size_t *n)
{
	size_t used;
	wfs_err err;
	if (len < 1 || p[0] != CHUNKS_MANIFEST_VERSION)
		return WFS_ECORRUPT;
	err = filer_chunk_list_decode(p + 1, len - 1, &used, out, n);
	if (err)
		return err;
	if (used != len - 1) {
		filer_chunks_free(*out, *n);
		*out = NULL;
		*n = 0;
		return WFS_ECORRUPT;
	}
	return WFS_OK;
}

struct list {
	struct filer_chunk *c;
	size_t n, cap;
};

static void list_push_copy(struct list *l, const struct filer_chunk *ch)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->c = xrealloc(l->c, l->cap * sizeof(*l->c));
	}
	filer_chunk_copy(&l->c[l->n++], ch);
}

static wfs_err resolve(const struct filer_chunk *c, size_t n, chunks_fetch_fn fetch, void *ctx,
		       int depth, struct list *out)
{
	wfs_err err = WFS_OK;
	for (size_t i = 0; i < n && !err; i++) {
		struct filer_chunk *sub = NULL;
		size_t nsub = 0;
		buf b = BUF_INIT;
		if (!c[i].is_manifest) {
			if (out->n >= FILER_CHUNKS_MAX)
				return WFS_ETOOBIG;
			list_push_copy(out, &c[i]);
			continue;
		}
		if (depth >= CHUNKS_MANIFEST_DEPTH_MAX)
			return WFS_ECORRUPT;
		err = fetch(ctx, c[i].fid, &b);
		if (!err && c[i].has_cipher_key) {
			buf plain = BUF_INIT;
			err = chunk_cipher_open(c[i].cipher_key, (const uint8_t *)b.data, b.len,
						&plain);
			buf_free(&b);
			b = plain;
		}
		if (!err)
			err = chunks_manifest_decode((const uint8_t *)b.data, b.len, &sub, &nsub);
		buf_free(&b);
		if (!err)
			err = resolve(sub, nsub, fetch, ctx, depth + 1, out);
		filer_chunks_free(sub, nsub);
	}
	return err;
}

wfs_err chunks_resolve_manifests(const struct filer_chunk *c, size_t n, chunks_fetch_fn fetch,
				 void *ctx, struct filer_chunk **out, size_t *nout)
{
	struct list l = {NULL, 0, 0};
	wfs_err err = resolve(c, n, fetch, ctx, 0, &l);
	if (err) {
		filer_chunks_free(l.c, l.n);
		return err;
	}
	*out = l.c;
	*nout = l.n;
	return WFS_OK;
}

wfs_err chunks_manifestize(const struct filer_chunk *c, size_t n, size_t batch, chunks_save_fn save,
			   void *ctx, struct filer_chunk **out, size_t *nout)
{
	struct list l = {NULL, 0, 0};
	wfs_err err = WFS_OK;
	size_t i = 0;

	if (batch < 2)
		return WFS_EINVAL;
	while (i < n) {
		size_t run = 0;
		while (i + run < n && !c[i + run].is_manifest && run < batch)
			run++;
		if (run < batch) {
			/* a short run (or a manifest) stays as it is */
			size_t k = run ? run : 1;
			for (size_t j = 0; j < k; j++)
				list_push_copy(&l, &c[i + j]);
			i += k;
			continue;
		}
		buf blob = BUF_INIT;
		struct filer_chunk m = {0};
		uint64_t lo = UINT64_MAX, hi = 0;
		int64_t mt = INT64_MIN;
		bool seal = false;
		chunks_manifest_encode(&c[i], batch, &blob);
		for (size_t j = i; j < i + batch; j++) {
			lo = MIN(lo, c[j].offset);
			hi = MAX(hi, c[j].offset + c[j].size);
			mt = MAX(mt, c[j].mtime_ns);
			seal |= c[j].has_cipher_key;
		}
		/* the members' keys must not sit in clear next to their ciphertext: a
		   manifest listing a sealed chunk is sealed too, its key in m */
		if (seal) {
			buf sealed = BUF_INIT;
			err = chunk_cipher_seal(blob.data, blob.len, m.cipher_key, &sealed);
			buf_free(&blob);
			blob = sealed;
			m.has_cipher_key = !err;
		}
		if (!err)
			err = save(ctx, blob.data, blob.len, &m.fid);
		buf_free(&blob);
		if (err)
			break;
		m.offset = lo;
		m.size = hi - lo;
		m.mtime_ns = mt;
		m.is_manifest = true;
		if (l.n == l.cap) {
			l.cap = l.cap ? l.cap * 2 : 16;
			l.c = xrealloc(l.c, l.cap * sizeof(*l.c));
		}
		l.c[l.n++] = m;
		i += batch;
	}
	if (err) {
		filer_chunks_free(l.c, l.n);
		return err;
	}
	*out = l.c;
	*nout = l.n;
	return WFS_OK;
}
