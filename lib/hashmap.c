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

void hashmap_resize(struct hashmap *m)
{
	size_t cap = target_cap(m);
	struct hashmap_node **b = xcalloc(cap, sizeof(*b));

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

void hashmap_missing(const struct hashmap_node *n)
{
	fatal("hashmap: removing node %p, which is not in the map", (const void *)n);
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
