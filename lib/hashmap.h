/*
 * hashmap: the project's hash table, intrusive and chained.
 *
 * DESIGN: the table stores no entries of its own. The caller embeds a struct
 * hashmap_node (one pointer) in its struct and the table chains those nodes in
 * power-of-two buckets, so an entry costs no allocation and one pointer, and
 * the caller's struct stays wherever the caller keeps it. The caller gives the
 * hash function (map-wide: insert, remove and resize call it) and, per lookup,
 * the hash of the key and an equality function. Lookups, inserts and removals
 * are inline, so a table costs what a hand-written one does: a call site's
 * equality test compiles into the lookup loop, and only a resize is a call.
 * The table grows to twice its buckets when it holds more entries than
 * buckets and shrinks to half when it holds fewer than a quarter (never below
 * the minimum given at init), so lookups walk chains of about one node and a
 * table that emptied gives its buckets back. A resize relinks every node into
 * a new bucket array (the hash is recomputed, not stored, to keep nodes at one
 * pointer). Hashes should be mixed in their low bits: the bucket is hash &
 * (buckets - 1).
 *
 * Iteration walks the buckets in order. Removing the node the iteration just
 * returned (hashmap_unlink, which never resizes) is safe, and so is freeing
 * it; any other change during an iteration is not.
 *
 * Not thread-safe: the caller serialises every call on one map (its own lock).
 */
#ifndef WEEDFS_LIB_HASHMAP_H
#define WEEDFS_LIB_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap_node {
	struct hashmap_node *next; /* the bucket's chain; owned by the map while linked */
};

/* The hash of the key of the entry holding n. Pure. */
typedef uint64_t (*hashmap_hash_fn)(const struct hashmap_node *n);
/* Whether the entry holding n has the key key (what hashmap_find was given). Pure. */
typedef bool (*hashmap_eq_fn)(const struct hashmap_node *n, const void *key);

/* Embedded by value in its owner; the fields are read by the inline functions below only. */
struct hashmap {
	struct hashmap_node **buckets; /* cap chain heads */
	size_t cap;                    /* a power of two, at least min_cap */
	size_t count;                  /* linked nodes */
	size_t min_cap;
	hashmap_hash_fn hash;
};

/* The entry of type holding the node n in its field member; NULL when n is NULL. */
#define hashmap_entry(n, type, member) ((type *)hashmap_entry_((n), offsetof(type, member)))
static inline void *hashmap_entry_(const struct hashmap_node *n, size_t off)
{
	return n ? (char *)n - off : NULL;
}

/*
 * An empty map of min_cap buckets (rounded up to a power of two, at least 1)
 * whose nodes hash with hash.
 */
void hashmap_init(struct hashmap *m, size_t min_cap, hashmap_hash_fn hash);
/* Frees the buckets; the nodes still linked are the caller's and are not touched. */
void hashmap_destroy(struct hashmap *m);

/* For the inline functions below only: */
/* Relinks the nodes into the bucket count m->count calls for. */
void hashmap_resize(struct hashmap *m);
/* The fatal error of removing a node that is not in the map. */
void hashmap_missing(const struct hashmap_node *n) __attribute__((noreturn, cold));
/* Whether m holds more entries than buckets, or fewer than a quarter above its minimum. */
static inline bool hashmap_resize_due(const struct hashmap *m)
{
	return m->count > m->cap || (m->cap > m->min_cap && m->count < m->cap / 4);
}

/* Links n (not linked in any map); the map may grow. */
static inline void hashmap_insert(struct hashmap *m, struct hashmap_node *n)
{
	struct hashmap_node **b;

	m->count++;
	if (hashmap_resize_due(m))
		hashmap_resize(m);
	b = &m->buckets[m->hash(n) & (m->cap - 1)];
	n->next = *b;
	*b = n;
}

/*
 * Like hashmap_remove but never resizes: safe for the node an iteration just
 * returned. The next insert or remove brings the buckets back to size.
 */
static inline void hashmap_unlink(struct hashmap *m, struct hashmap_node *n)
{
	struct hashmap_node **pp = &m->buckets[m->hash(n) & (m->cap - 1)];

	while (*pp != n) {
		if (!*pp)
			hashmap_missing(n);
		pp = &(*pp)->next;
	}
	*pp = n->next;
	n->next = NULL;
	m->count--;
}

/* Unlinks n, which must be linked in m (else a fatal error); the map may shrink. */
static inline void hashmap_remove(struct hashmap *m, struct hashmap_node *n)
{
	hashmap_unlink(m, n);
	if (hashmap_resize_due(m))
		hashmap_resize(m);
}

static inline size_t hashmap_count(const struct hashmap *m) { return m->count; }

/* The first node of the chain hash falls in (for a caller walking it with ->next). */
static inline struct hashmap_node *hashmap_bucket(const struct hashmap *m, uint64_t hash)
{
	return m->buckets[hash & (m->cap - 1)];
}

/* The first node of hash's chain for which eq(node, key) holds, or NULL. */
static inline struct hashmap_node *hashmap_find(const struct hashmap *m, uint64_t hash,
						hashmap_eq_fn eq, const void *key)
{
	struct hashmap_node *n = hashmap_bucket(m, hash);

	while (n && !eq(n, key))
		n = n->next;
	return n;
}

/* An iteration's position; see hashmap_first. */
struct hashmap_iter {
	const struct hashmap *m;
	size_t bucket;             /* the next bucket to enter */
	struct hashmap_node *next; /* the node after the one returned last */
};

/*
 * The first node of an iteration over m (NULL when m is empty); hashmap_next
 * gives the others, then NULL. Each linked node comes once, in bucket order.
 */
struct hashmap_node *hashmap_first(const struct hashmap *m, struct hashmap_iter *it);
struct hashmap_node *hashmap_next(struct hashmap_iter *it);

/* for (each node n of m): n is a struct hashmap_node *, it a struct hashmap_iter. */
#define hashmap_foreach(m, it, n) \
	for ((n) = hashmap_first((m), &(it)); (n); (n) = hashmap_next(&(it)))

#endif
