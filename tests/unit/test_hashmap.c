/*
 * lib/hashmap: lookups, growth and shrink with their bounds, colliding hashes,
 * removal, iteration (every node once, removing the current node on the way),
 * and a long run of random operations checked against a plain array.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "hashmap.h"
#include "tap.h"

struct item {
	int key;
	bool linked;
	struct hashmap_node node;
};

static unsigned hash_mask = ~0u; /* the mask a test narrows to force collisions */

static uint64_t item_hash(const struct hashmap_node *n)
{
	const struct item *it = hashmap_entry(n, struct item, node);
	uint64_t h = (uint64_t)it->key * 0x9e3779b97f4a7c15ull;

	return (h ^ (h >> 32)) & hash_mask;
}

static bool item_eq(const struct hashmap_node *n, const void *key)
{
	return hashmap_entry(n, struct item, node)->key == *(const int *)key;
}

static uint64_t key_hash(int key)
{
	struct item probe = {.key = key};
	return item_hash(&probe.node);
}

static struct item *find(const struct hashmap *m, int key)
{
	return hashmap_entry(hashmap_find(m, key_hash(key), item_eq, &key), struct item, node);
}

/* Whether every linked item is found and appears exactly once in an iteration. */
static bool consistent(const struct hashmap *m, struct item *items, int n)
{
	struct hashmap_iter it;
	struct hashmap_node *p;
	int *seen = calloc((size_t)n, sizeof(*seen));
	size_t linked = 0, iterated = 0;
	bool good = true;

	hashmap_foreach(m, it, p) {
		struct item *x = hashmap_entry(p, struct item, node);
		iterated++;
		if (x < items || x >= items + n || seen[x - items]++ || !x->linked)
			good = false;
	}
	for (int i = 0; i < n; i++) {
		struct item *f = find(m, items[i].key);
		if (items[i].linked)
			linked++;
		if (items[i].linked ? f != &items[i] : f != NULL)
			good = false;
	}
	free(seen);
	return good && linked == iterated && hashmap_count(m) == linked;
}

static void test_basics(void)
{
	struct hashmap m;
	struct item a = {.key = 1}, b = {.key = 2};
	struct hashmap_iter it;

	hashmap_init(&m, 5, item_hash);
	is_int(m.cap, 8, "the minimum rounds up to a power of two");
	ok(!hashmap_first(&m, &it), "an empty map iterates nothing");
	ok(!find(&m, 1), "an empty map finds nothing");
	ok(hashmap_entry(NULL, struct item, node) == NULL, "hashmap_entry of NULL is NULL");
	hashmap_insert(&m, &a.node);
	hashmap_insert(&m, &b.node);
	ok(find(&m, 1) == &a && find(&m, 2) == &b, "inserted items are found");
	ok(!find(&m, 3), "a missing key is not");
	is_int(hashmap_count(&m), 2, "count");
	hashmap_remove(&m, &a.node);
	ok(!find(&m, 1) && find(&m, 2) == &b, "a removed item is gone, the other stays");
	ok(a.node.next == NULL, "a removed node is cleared");
	hashmap_remove(&m, &b.node);
	is_int(hashmap_count(&m), 0, "empty again");
	hashmap_destroy(&m);

	hashmap_init(&m, 0, item_hash);
	is_int(m.cap, 1, "a zero minimum is one bucket");
	hashmap_insert(&m, &a.node);
	ok(find(&m, 1) == &a, "a one-bucket map works");
	hashmap_destroy(&m);
}

static void test_grow_shrink(void)
{
	enum { N = 10000 };
	struct item *items = calloc(N, sizeof(*items));
	struct hashmap m;
	bool bound = true;

	hashmap_init(&m, 16, item_hash);
	for (int i = 0; i < N; i++) {
		items[i].key = i;
		items[i].linked = true;
		hashmap_insert(&m, &items[i].node);
		if (m.count > m.cap || (m.cap > 16 && m.count <= m.cap / 2))
			bound = false;
	}
	ok(bound, "growing: never more entries than buckets, never under half full");
	is_int(m.cap, 16384, "10000 entries sit in 16384 buckets");
	ok(consistent(&m, items, N), "every entry found after growth");
	for (int i = 0; i < N; i++) {
		items[i].linked = false;
		hashmap_remove(&m, &items[i].node);
		if (m.cap > 16 && m.count < m.cap / 4)
			bound = false;
		if (m.count > m.cap)
			bound = false;
	}
	ok(bound, "shrinking: never under a quarter full above the minimum");
	is_int(m.cap, 16, "emptied, the map is back to its minimum");
	ok(consistent(&m, items, N), "nothing left");
	hashmap_destroy(&m);
	free(items);
}

static void test_collisions(void)
{
	enum { N = 300 };
	struct item items[N];
	struct hashmap m;

	memset(items, 0, sizeof(items));
	hash_mask = 3; /* four distinct hashes for every key */
	hashmap_init(&m, 4, item_hash);
	for (int i = 0; i < N; i++) {
		items[i] = (struct item){.key = i * 7, .linked = true};
		hashmap_insert(&m, &items[i].node);
	}
	ok(consistent(&m, items, N), "colliding keys are told apart by equality");
	for (int i = 0; i < N; i += 2) {
		items[i].linked = false;
		hashmap_remove(&m, &items[i].node);
	}
	ok(consistent(&m, items, N), "removal from the middle of long chains");
	for (int i = 0; i < N; i++)
		if (items[i].linked) {
			items[i].linked = false;
			hashmap_remove(&m, &items[i].node);
		}
	hash_mask = 0; /* one hash for all (changed only while nothing is linked) */
	for (int i = 0; i < N; i++) {
		items[i].linked = true;
		hashmap_insert(&m, &items[i].node);
	}
	ok(consistent(&m, items, N), "one chain holding everything");
	hashmap_destroy(&m);
	hash_mask = ~0u;
}

static void test_remove_while_iterating(void)
{
	enum { N = 1000 };
	struct item *items = calloc(N, sizeof(*items));
	struct hashmap_iter it;
	struct hashmap_node *p;
	struct hashmap m;
	size_t cap, visited = 0;

	hashmap_init(&m, 8, item_hash);
	for (int i = 0; i < N; i++) {
		items[i] = (struct item){.key = i, .linked = true};
		hashmap_insert(&m, &items[i].node);
	}
	cap = m.cap;
	hashmap_foreach(&m, it, p) {
		struct item *x = hashmap_entry(p, struct item, node);
		visited++;
		if (x->key % 3) {
			x->linked = false;
			hashmap_unlink(&m, p);
		}
	}
	is_int(visited, N, "removing the current node keeps the iteration whole");
	is_int(m.cap, cap, "unlink does not resize");
	ok(consistent(&m, items, N), "the kept third is intact");
	hashmap_foreach(&m, it, p) {
		hashmap_entry(p, struct item, node)->linked = false;
		hashmap_unlink(&m, p);
	}
	is_int(hashmap_count(&m), 0, "all unlinked");
	items[0].linked = true;
	hashmap_insert(&m, &items[0].node);
	is_int(m.cap, 8, "the next insert shrinks what the unlinks left");
	ok(consistent(&m, items, N), "and the map still works");
	hashmap_destroy(&m);
	free(items);
}

/* Random inserts and removes of 2000 keys, checked against the items' own flags. */
static void test_random(void)
{
	enum { N = 2000, ROUNDS = 200000 };
	struct item *items = calloc(N, sizeof(*items));
	struct hashmap m;
	unsigned seed = 42;
	bool good = true;

	hashmap_init(&m, 32, item_hash);
	for (int i = 0; i < N; i++)
		items[i].key = i * 1000003;
	for (int r = 0; r < ROUNDS; r++) {
		struct item *x = &items[rand_r(&seed) % N];
		if (x->linked)
			hashmap_remove(&m, &x->node);
		else
			hashmap_insert(&m, &x->node);
		x->linked = !x->linked;
		if (find(&m, x->key) != (x->linked ? x : NULL))
			good = false;
		if (r % 20000 == 0 && !consistent(&m, items, N))
			good = false;
	}
	ok(good && consistent(&m, items, N), "random inserts and removes match a plain array");
	hashmap_destroy(&m);
	free(items);
}

int main(void)
{
	test_basics();
	test_grow_shrink();
	test_collisions();
	test_remove_while_iterating();
	test_random();
	return done_testing();
}
