/*
 * DESIGN: the stash is a short list of (block, usable size) under one mutex,
 * at most KEEP_BYTES in all: a few dozen blocks of a MiB or more, so a linear
 * best-fit scan costs nothing beside the megabyte copied into the block. A
 * block's pages that a body touched stay resident while it waits; the bound
 * is what that costs in RSS at most.
 */
#include "config.h"
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include "bigbuf.h"
#include "util.h"

#define KEEP_BYTES (64u << 20)
#define KEEP_MAX   64          /* blocks */
#define GRAIN      (64u << 10) /* new blocks are rounded up to this */

static pthread_mutex_t stash_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *p;
	size_t size;
} stash[KEEP_MAX];          /* protected by stash_mu */
static size_t nstash, kept; /* protected by stash_mu */

void *bigbuf_get(size_t n, size_t *cap)
{
	void *p = NULL;
	size_t best = 0, size = 0;

	if (n < BIGBUF_MIN) {
		if (cap)
			*cap = n;
		return xmalloc(n ? n : 1);
	}
	pthread_mutex_lock(&stash_mu);
	for (size_t i = 0; i < nstash; i++)
		if (stash[i].size >= n && stash[i].size / 2 <= n &&
		    (!p || stash[i].size < stash[best].size)) {
			p = stash[i].p;
			best = i;
		}
	if (p) {
		size = stash[best].size;
		kept -= size;
		stash[best] = stash[--nstash];
	}
	pthread_mutex_unlock(&stash_mu);
	if (!p) {
		p = xmalloc((n + GRAIN - 1) / GRAIN * GRAIN);
		size = malloc_usable_size(p);
	}
	if (cap)
		*cap = size;
	return p;
}

void bigbuf_put(void *p)
{
	size_t size;
	if (!p)
		return;
	size = malloc_usable_size(p);
	if (size >= BIGBUF_MIN) {
		pthread_mutex_lock(&stash_mu);
		if (nstash < KEEP_MAX && kept + size <= KEEP_BYTES) {
			stash[nstash].p = p;
			stash[nstash++].size = size;
			kept += size;
			p = NULL;
		}
		pthread_mutex_unlock(&stash_mu);
	}
	free(p);
}

size_t bigbuf_kept_bytes(void)
{
	size_t n;
	pthread_mutex_lock(&stash_mu);
	n = kept;
	pthread_mutex_unlock(&stash_mu);
	return n;
}

void bigbuf_presize(buf *b, uint64_t total)
{
	if (total > BIGBUF_PRESIZE_MAX)
		return;
	if (!b->data) {
		b->data = bigbuf_get((size_t)total + 1, &b->cap);
		b->data[0] = '\0';
	} else if (total > b->len) {
		buf_reserve_exact(b, (size_t)total - b->len);
	}
}
