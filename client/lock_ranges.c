/* The byte-range lock model (lock_ranges.h). */
#include "config.h"
#include "client/lock_ranges.h"
#include <stdlib.h>
#include "util.h"

static bool same_owner(const struct filer_lock *a, const struct filer_lock *b)
{
	return a->session == b->session && a->owner == b->owner;
}

static bool overlap(const struct filer_lock *a, const struct filer_lock *b)
{
	return a->start <= b->end && b->start <= a->end;
}

const struct filer_lock *lock_ranges_conflict(const struct filer_lock *v, size_t n,
					      const struct filer_lock *req)
{
	const struct filer_lock *best = NULL;

	if (req->type == FILER_LOCK_UNLOCK)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const struct filer_lock *l = &v[i];
		if (l->flock != req->flock || same_owner(l, req) || !overlap(l, req))
			continue;
		if (l->type != FILER_LOCK_WRITE && req->type != FILER_LOCK_WRITE)
			continue;
		if (!best || l->start < best->start)
			best = l;
	}
	return best;
}

static void push(struct filer_lock **v, size_t *n, size_t *cap, const struct filer_lock *l)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	(*v)[(*n)++] = *l;
}

void lock_ranges_apply(const struct filer_lock *v, size_t n, const struct filer_lock *req,
		       struct filer_lock **out, size_t *out_n, size_t *out_cap)
{
	struct filer_lock nl = *req;

	*out = NULL;
	*out_n = *out_cap = 0;
	for (size_t i = 0; i < n; i++) {
		const struct filer_lock *l = &v[i];
		bool touches = l->start - 1 <= req->end && l->end >= req->start - 1;
		struct filer_lock piece;
		if (!same_owner(l, req) || l->flock != req->flock || !touches) {
			push(out, out_n, out_cap, l);
			continue;
		}
		if (req->type != FILER_LOCK_UNLOCK && l->type == req->type) {
			nl.start = l->start < nl.start ? l->start : nl.start;
			nl.end = l->end > nl.end ? l->end : nl.end;
			continue;
		}
		if (l->start < req->start) {
			piece = *l;
			piece.end = l->end < req->start - 1 ? l->end : req->start - 1;
			push(out, out_n, out_cap, &piece);
		}
		if (l->end > req->end) { /* req->end < EOF here, so +1 cannot overflow */
			piece = *l;
			piece.start = l->start > req->end + 1 ? l->start : req->end + 1;
			push(out, out_n, out_cap, &piece);
		}
	}
	if (req->type != FILER_LOCK_UNLOCK)
		push(out, out_n, out_cap, &nl);
}
