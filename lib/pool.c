#include "config.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include "pool.h"
#include "util.h"

struct job {
	pool_fn fn;
	void *arg;
	struct job *next;
};

struct pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *head, *tail; /* protected by lock */
	bool stopping;           /* protected by lock */
	bool stopped;            /* workers joined: submits run inline; protected by lock */
	int idle;                /* workers waiting for a job; protected by lock */
	int nthreads;
	pthread_t *threads;
	char name[16]; /* the workers' thread name; "" for none */
};

static void *pool_worker(void *arg)
{
	pool *p = arg;
	for (;;) {
		struct job *j;
		pthread_mutex_lock(&p->lock);
		while (!p->head && !p->stopping) {
			p->idle++;
			pthread_cond_wait(&p->cond, &p->lock);
			p->idle--;
		}
		j = p->head;
		if (!j) {
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		p->head = j->next;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->lock);
		j->fn(j->arg);
		free(j);
	}
}

pool *pool_new(int nthreads, const char *name)
{
	pool *p = xcalloc(1, sizeof(*p));
	if (name)
		snprintf(p->name, sizeof(p->name), "%s", name);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->nthreads = nthreads > 0 ? nthreads : 1;
	p->threads = xcalloc((size_t)p->nthreads, sizeof(pthread_t));
	for (int i = 0; i < p->nthreads; i++)
		if (thread_start(&p->threads[i], NULL, pool_worker, p, p->name))
			abort();
	return p;
}

void pool_submit(pool *p, pool_fn fn, void *arg)
{
	struct job *j = xmalloc(sizeof(*j));
	j->fn = fn, j->arg = arg, j->next = NULL;
	pthread_mutex_lock(&p->lock);
	if (p->stopped) {
		pthread_mutex_unlock(&p->lock);
		free(j);
		fn(arg);
		return;
	}
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	/* Signal after unlocking so the woken worker does not block on the lock we hold;
	   no signal when every worker is busy (one will find the job before sleeping). */
	bool wake = p->idle > 0;
	pthread_mutex_unlock(&p->lock);
	if (wake)
		pthread_cond_signal(&p->cond);
}

bool pool_idle(pool *p)
{
	pthread_mutex_lock(&p->lock);
	bool idle = !p->head && !p->stopping && p->idle == p->nthreads;
	pthread_mutex_unlock(&p->lock);
	return idle;
}

void pool_stop(pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->stopped) {
		pthread_mutex_unlock(&p->lock);
		return;
	}
	p->stopping = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	/* a job queued after the last worker looked: run here, then submits run inline */
	pthread_mutex_lock(&p->lock);
	p->stopped = true;
	struct job *j = p->head;
	p->head = p->tail = NULL;
	pthread_mutex_unlock(&p->lock);
	while (j) {
		struct job *next = j->next;
		j->fn(j->arg);
		free(j);
		j = next;
	}
}

void pool_free(pool *p)
{
	if (!p)
		return;
	pool_stop(p);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->threads);
	free(p);
}
