/*
 * The memory uploads may hold at once in one gateway (-uploadMemoryMB).
 *
 * DESIGN: each PutObject, UploadPart and POST upload reserves, before its
 * body is read, the most it can hold: two pieces being hashed and the chunk
 * writer's buffers, or its length when that is smaller. While the budget is
 * spent, new uploads wait in arrival order without reading their bodies (TCP
 * pushes back on the clients) and start, on their own loop thread, as earlier
 * ones finish. One upload always gets in, so a budget smaller than a single
 * reservation slows uploads down to one at a time rather than stopping them.
 * Any thread.
 */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include "s3/s3_int.h"
#include "util.h"

struct waiter {
	struct waiter *next;
	http_req *req;
	uint64_t n;
	http_defer_fn go;
	void *arg;
};

struct s3_budget {
	pthread_mutex_t mu;
	uint64_t total, used;
	struct waiter *head, *tail; /* waiting uploads, oldest first */
};

struct s3_budget *s3_budget_new(uint64_t bytes)
{
	struct s3_budget *b = xcalloc(1, sizeof(*b));
	pthread_mutex_init(&b->mu, NULL);
	b->total = bytes;
	return b;
}

void s3_budget_free(struct s3_budget *b)
{
	if (!b)
		return;
	while (b->head) {
		struct waiter *w = b->head;
		b->head = w->next;
		free(w);
	}
	pthread_mutex_destroy(&b->mu);
	free(b);
}

static bool fits(const struct s3_budget *b, uint64_t n)
{
	return b->used == 0 || b->used + n <= b->total;
}

bool s3_budget_take(struct s3_budget *b, http_req *req, uint64_t n, http_defer_fn go, void *arg)
{
	struct waiter *w;
	bool now;
	pthread_mutex_lock(&b->mu);
	now = !b->head && fits(b, n); /* no overtaking the ones already waiting */
	if (now) {
		b->used += n;
	} else {
		w = xcalloc(1, sizeof(*w));
		*w = (struct waiter){.req = req, .n = n, .go = go, .arg = arg};
		if (b->tail)
			b->tail->next = w;
		else
			b->head = w;
		b->tail = w;
	}
	pthread_mutex_unlock(&b->mu);
	return now;
}

void s3_budget_give(struct s3_budget *b, uint64_t n)
{
	struct waiter *ready = NULL, **last = &ready;
	pthread_mutex_lock(&b->mu);
	b->used -= n;
	while (b->head && fits(b, b->head->n)) {
		struct waiter *w = b->head;
		b->head = w->next;
		if (!b->head)
			b->tail = NULL;
		b->used += w->n;
		w->next = NULL;
		*last = w;
		last = &w->next;
	}
	pthread_mutex_unlock(&b->mu);
	while (ready) {
		struct waiter *w = ready;
		ready = w->next;
		http_req_defer(w->req, w->go, w->arg); /* on the upload's own loop thread */
		free(w);
	}
}

uint64_t s3_budget_used(struct s3_budget *b)
{
	uint64_t u;
	pthread_mutex_lock(&b->mu);
	u = b->used;
	pthread_mutex_unlock(&b->mu);
	return u;
}
