/*
 * The in-memory index of one volume: needle key -> (offset in 8-byte units, size).
 *
 * DESIGN: keys mostly arrive in increasing order (the master hands them out
 * from a sequence), so entries live in sorted fixed-size segments of 16-byte
 * entries, found by binary search over the segments' first keys and then
 * inside the segment. A key above every stored key is appended to the last
 * segment (the fast path). An out-of-order new key goes to a small sorted
 * overflow array; when that grows past a bound, everything is merged into
 * fresh full segments. Deleted keys stay in place with a flag bit so their
 * old location is still known (readDeleted) until the map is rebuilt. Cost:
 * 16 bytes per entry plus one partly filled segment and 24 bytes per
 * segment of 4096 entries.
 *
 * Not thread-safe: the owning volume locks around every call.
 */
#ifndef WEEDFS_VOLUME_NEEDLE_MAP_H
#define WEEDFS_VOLUME_NEEDLE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct needle_map needle_map;

#define NM_DELETED 0x80000000u /* flag in nm_entry.size of a deleted entry */

struct nm_entry {
	uint64_t key;
	uint32_t offset; /* units of 8 bytes */
	uint32_t size;   /* body size; NM_DELETED set when deleted */
};

needle_map *needle_map_new(void);
/* needle_map_free(NULL) does nothing. */
void needle_map_free(needle_map *m);
/*
 * Stores key -> (offset, size) (size < NM_DELETED). If the key was present
 * and live, *old (if non-NULL) receives the previous entry and true is returned.
 */
bool needle_map_set(needle_map *m, uint64_t key, uint32_t offset, uint32_t size,
		    struct nm_entry *old);
/*
 * Marks key deleted, keeping its last location. Returns true with *old set if
 * it was live. A key never seen is recorded as deleted at offset 0.
 */
bool needle_map_delete(needle_map *m, uint64_t key, struct nm_entry *old);
/* Looks key up; returns false if absent. Deleted entries are returned with NM_DELETED set. */
bool needle_map_get(const needle_map *m, uint64_t key, struct nm_entry *out);
/* Live (not deleted) entries. */
size_t needle_map_live(const needle_map *m);
/* Largest key ever stored (0 if none). */
uint64_t needle_map_max_key(const needle_map *m);
/* Calls fn for every live entry in key order; stops early when fn returns false. */
void needle_map_foreach(const needle_map *m, bool (*fn)(const struct nm_entry *e, void *arg),
			void *arg);
/* Heap bytes the map holds (its own arrays and segments). */
size_t needle_map_memory(const needle_map *m);

#endif
