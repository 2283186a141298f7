#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include "mount/buf_pool.h"
#include "util.h"

struct buf_pool {
	size_t size, keep;
	pthread_mutex_t mu;
	void **idle; /* protected by mu */
	size_t nidle;
};

buf_pool *buf_pool_new(size_t size, size_t keep)
{
	buf_pool *p = xcalloc(1, sizeof(*p));
	p->size = size ? size : 1;
	p->keep = keep;
	p->idle = xcalloc(keep ? keep : 1, sizeof(*p->idle));
	pthread_mutex_init(&p->mu, NULL);
	return p;
}

void buf_pool_free(buf_pool *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nidle; i++)
		free(p->idle[i]);
	free(p->idle);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

size_t buf_pool_size(const buf_pool *p) { return p->size; }

void *buf_pool_get(buf_pool *p)
{
	void *b = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->nidle)
		b = p->idle[--p->nidle];
	pthread_mutex_unlock(&p->mu);
	return b ? b : xmalloc(p->size);
}

void buf_pool_put(buf_pool *p, void *b)
{
	if (!b)
		return;
	pthread_mutex_lock(&p->mu);
	if (p->nidle < p->keep) {
		p->idle[p->nidle++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	free(b);
}
