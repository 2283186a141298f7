/* The project's intrusive hash table (hashmap.h has the design). */
#include "config.h"
#include <stdlib.h>
#include "hashmap.h"
#include "log.h"
#include "util.h"

void hashmap_init(struct hashmap *m, size_t min_cap, hashmap_hash_fn hash)
{
	size_t cap = 1;

	while (cap < min_cap)
		cap *= 2;
	m->buckets = xcalloc(cap, sizeof(*m->buckets));
	m->cap = m->min_cap = cap;
	m->count = 0;
	m->hash = hash;
}

void hashmap_destroy(struct hashmap *m)
{
	free(m->buckets);
	m->buckets = NULL;
	m->cap = m->count = 0;
}

/* The bucket count for the map's entries: doubled past one per bucket, halved under 1/4. */
static size_t target_cap(const struct hashmap *m)
{
	size_t cap = m->cap;

	while (m->count > cap)
		cap *= 2;
	while (cap > m->min_cap && m->count < cap / 4)
		cap /= 2;
	return cap;
}

/* Relinks every node into buckets of the target size (bucket order, each chain head first). */
static void resize(struct hashmap *m)
{
	size_t cap = target_cap(m);
	struct hashmap_node **b;

	if (cap == m->cap)
		return;
	b = xcalloc(cap, sizeof(*b));
	for (size_t i = 0; i < m->cap; i++) {
		struct hashmap_node *n = m->buckets[i], *next;
		for (; n; n = next) {
			size_t k = m->hash(n) & (cap - 1);
			next = n->next;
			n->next = b[k];
			b[k] = n;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->cap = cap;
}

void hashmap_insert(struct hashmap *m, struct hashmap_node *n)
{
	struct hashmap_node **b;

	m->count++;
	resize(m);
	b = &m->buckets[m->hash(n) & (m->cap - 1)];
	n->next = *b;
	*b = n;
}

void hashmap_unlink(struct hashmap *m, struct hashmap_node *n)
{
	struct hashmap_node **pp = &m->buckets[m->hash(n) & (m->cap - 1)];

	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (!*pp)
		fatal("%s:%d: hashmap: removing a node that is not in the map", __FILE__, __LINE__);
	*pp = n->next;
	n->next = NULL;
	m->count--;
}

void hashmap_remove(struct hashmap *m, struct hashmap_node *n)
{
	hashmap_unlink(m, n);
	resize(m);
}

struct hashmap_node *hashmap_first(const struct hashmap *m, struct hashmap_iter *it)
{
	it->m = m;
	it->bucket = 0;
	it->next = NULL;
	return hashmap_next(it);
}

struct hashmap_node *hashmap_next(struct hashmap_iter *it)
{
	struct hashmap_node *n = it->next;

	while (!n && it->bucket < it->m->cap)
		n = it->m->buckets[it->bucket++];
	if (n)
		it->next = n->next;
	return n;
}
