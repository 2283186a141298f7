#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "needle_map.h"
#include "util.h"

#define SEG_CAP 4096
#define OVF_MAX 4096

struct seg {
	struct nm_entry *e; /* SEG_CAP entries, sorted */
	uint64_t min;       /* e[0].key */
	uint32_t n;
};

struct needle_map {
	struct seg *segs;
	size_t nsegs, segs_cap;
	struct nm_entry *ovf; /* sorted; every key below the last segment's last key */
	size_t novf, ovf_cap;
	size_t live;
	uint64_t max_key;
};

needle_map *needle_map_new(void) { return xcalloc(1, sizeof(needle_map)); }

void needle_map_free(needle_map *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nsegs; i++)
		free(m->segs[i].e);
	free(m->segs);
	free(m->ovf);
	free(m);
}

/* Index of the first entry with key >= k in e[0..n). */
static size_t lower_bound(const struct nm_entry *e, size_t n, uint64_t k)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e[mid].key < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The stored entry for k, or NULL. */
static struct nm_entry *find(const needle_map *m, uint64_t k)
{
	size_t lo = 0, hi = m->nsegs, i;
	/* last segment whose min <= k */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->segs[mid].min <= k)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0) {
		const struct seg *s = &m->segs[lo - 1];
		i = lower_bound(s->e, s->n, k);
		if (i < s->n && s->e[i].key == k)
			return &s->e[i];
	}
	i = lower_bound(m->ovf, m->novf, k);
	if (i < m->novf && m->ovf[i].key == k)
		return &m->ovf[i];
	return NULL;
}

static bool seg_tail_below(const needle_map *m, uint64_t k)
{
	const struct seg *s;
	if (m->nsegs == 0)
		return m->novf == 0 || m->ovf[m->novf - 1].key < k;
	s = &m->segs[m->nsegs - 1];
	return s->e[s->n - 1].key < k;
}

static struct seg *new_seg(needle_map *m)
{
	struct seg *s;
	if (m->nsegs == m->segs_cap) {
		m->segs_cap = m->segs_cap ? m->segs_cap * 2 : 16;
		m->segs = xrealloc(m->segs, m->segs_cap * sizeof(*m->segs));
	}
	s = &m->segs[m->nsegs++];
	s->e = xmalloc(SEG_CAP * sizeof(struct nm_entry));
	s->n = 0;
	s->min = 0;
	return s;
}

static void seg_push(needle_map *m, const struct nm_entry *e)
{
	struct seg *s = m->nsegs ? &m->segs[m->nsegs - 1] : NULL;
	if (!s || s->n == SEG_CAP)
		s = new_seg(m);
	if (s->n == 0)
		s->min = e->key;
	s->e[s->n++] = *e;
}

/* Merges the segments and the overflow into fresh full segments. */
static void merge(needle_map *m)
{
	struct seg *old = m->segs;
	size_t nold = m->nsegs, si = 0, sj = 0, oi = 0;

	m->segs = NULL;
	m->nsegs = m->segs_cap = 0;
	for (;;) {
		const struct nm_entry *a = si < nold ? &old[si].e[sj] : NULL;
		const struct nm_entry *b = oi < m->novf ? &m->ovf[oi] : NULL;
		if (!a && !b)
			break;
		if (a && (!b || a->key < b->key)) {
			seg_push(m, a);
			if (++sj == old[si].n) {
				free(old[si].e);
				si++;
				sj = 0;
			}
		} else {
			seg_push(m, b);
			oi++;
		}
	}
	free(old);
	m->novf = 0;
	if (m->ovf_cap > 64) {
		free(m->ovf);
		m->ovf = NULL;
		m->ovf_cap = 0;
	}
}

static void insert_new(needle_map *m, const struct nm_entry *e)
{
	size_t i;
	if (e->key > m->max_key)
		m->max_key = e->key;
	if (seg_tail_below(m, e->key)) {
		/* the overflow only holds keys below the segments' tail, so it must be merged
		 * first if it has keys above (only possible before the first segment exists) */
		if (m->novf && m->nsegs == 0)
			merge(m);
		seg_push(m, e);
		return;
	}
	if (m->novf == m->ovf_cap) {
		m->ovf_cap = m->ovf_cap ? m->ovf_cap * 2 : 64;
		m->ovf = xrealloc(m->ovf, m->ovf_cap * sizeof(*m->ovf));
	}
	i = lower_bound(m->ovf, m->novf, e->key);
	memmove(&m->ovf[i + 1], &m->ovf[i], (m->novf - i) * sizeof(*m->ovf));
	m->ovf[i] = *e;
	m->novf++;
	if (m->novf >= OVF_MAX)
		merge(m);
}

bool needle_map_set(needle_map *m, uint64_t key, uint32_t offset, uint32_t size,
		    struct nm_entry *old)
{
	struct nm_entry *e = find(m, key), ne = {key, offset, size & ~NM_DELETED};
	bool was_live = false;

	if (e) {
		was_live = !(e->size & NM_DELETED);
		if (was_live && old)
			*old = *e;
		*e = ne;
	} else {
		insert_new(m, &ne);
	}
	if (!was_live)
		m->live++;
	return was_live;
}

bool needle_map_delete(needle_map *m, uint64_t key, struct nm_entry *old)
{
	struct nm_entry *e = find(m, key), ne = {key, 0, NM_DELETED};

	if (!e) {
		insert_new(m, &ne);
		return false;
	}
	if (e->size & NM_DELETED)
		return false;
	if (old)
		*old = *e;
	e->size |= NM_DELETED;
	m->live--;
	return true;
}

bool needle_map_get(const needle_map *m, uint64_t key, struct nm_entry *out)
{
	const struct nm_entry *e = find(m, key);
	if (!e)
		return false;
	*out = *e;
	return true;
}

size_t needle_map_live(const needle_map *m) { return m->live; }

uint64_t needle_map_max_key(const needle_map *m) { return m->max_key; }

void needle_map_foreach(const needle_map *m, bool (*fn)(const struct nm_entry *e, void *arg),
			void *arg)
{
	size_t si = 0, sj = 0, oi = 0;
	for (;;) {
		const struct nm_entry *a = si < m->nsegs ? &m->segs[si].e[sj] : NULL;
		const struct nm_entry *b = oi < m->novf ? &m->ovf[oi] : NULL;
		const struct nm_entry *e;
		if (!a && !b)
			return;
		if (a && (!b || a->key < b->key)) {
			e = a;
			if (++sj == m->segs[si].n) {
				si++;
				sj = 0;
			}
		} else {
			e = b;
			oi++;
		}
		if (!(e->size & NM_DELETED) && !fn(e, arg))
			return;
	}
}

size_t needle_map_memory(const needle_map *m)
{
	return sizeof(*m) + m->segs_cap * sizeof(struct seg) +
	       m->nsegs * SEG_CAP * sizeof(struct nm_entry) + m->ovf_cap * sizeof(struct nm_entry);
}
