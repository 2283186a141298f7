/*
 * The mount's chunk cache: whole chunk blobs by file id, in a bounded memory
 * LRU and, optionally, in a persistent cache directory with its own capacity.
 * A file id names one immutable blob forever, so the cache never invalidates;
 * it only evicts the least recently used. Entries on disk carry a header with
 * the xxh64 of the data; an entry that fails verification is deleted and
 * counts as a miss. Reopening a directory reuses its verified entries.
 *
 * All functions are thread-safe.
 */
#ifndef WEEDFS_MOUNT_CHUNK_CACHE_H
#define WEEDFS_MOUNT_CHUNK_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "mount/buf_pool.h"

typedef struct chunk_cache chunk_cache;

/*
 * A cache of at most mem_bytes in memory and, when dir is not NULL, at most
 * disk_bytes in dir (created if missing). NULL with *err on an unusable dir.
 * (M3: an empty dir string also means memory only; a dir already open in another
 * cache, in this or another process, is refused with WFS_EUNAVAIL.) Any thread.
 */
chunk_cache *chunk_cache_open(const char *dir, uint64_t mem_bytes, uint64_t disk_bytes,
			      wfs_err *err);
/* Frees the memory level (the directory stays for the next open). NULL does nothing. */
void chunk_cache_close(chunk_cache *c);

/* Copies [off, off+len) of blob fid into dst if that whole range is cached (a hit). */
bool chunk_cache_read(chunk_cache *c, const char *fid, uint64_t off, size_t len, void *dst);

/* Stores a whole blob (copied). Over capacity, least recently used blobs go. */
void chunk_cache_put(chunk_cache *c, const char *fid, const void *data, size_t len);
/*
 * The same, taking data (malloc'd; freed by the cache, at once when it is not
 * kept): a fetched blob goes in without a second buffer and a copy.
 */
void chunk_cache_put_take(chunk_cache *c, const char *fid, void *data, size_t len);
/* Like chunk_cache_put, taking data, a buffer of pool: it goes back there when evicted
   (or at once when not kept). No copy. */
void chunk_cache_put_pooled(chunk_cache *c, const char *fid, void *data, size_t len,
			    buf_pool *pool);

struct chunk_cache_stats {
	uint64_t mem_hits, disk_hits, misses, corrupt; /* corrupt: failed verification */
	uint64_t mem_bytes, disk_bytes;                /* held now */
};
void chunk_cache_get_stats(chunk_cache *c, struct chunk_cache_stats *out);

/*
 * Added by M3 (the on-disk entry format, exported for tests and the fuzz target).
 * A cache file is a header followed by the blob:
 *   "WCCB" | version u16 | fid_len u16 | data_len u64 | xxh64(data) u64 | fid | data
 * (big-endian). It lives at DIR/hh/kkkkkkkkkkkkkkkk where k is chunk_cache_fid_key(fid)
 * in hex and hh its first two digits.
 */
#define CHUNK_CACHE_FID_MAX    255 /* longer file ids are never cached */
#define CHUNK_CACHE_HEADER_MIN 24  /* header bytes before the fid */

/* A parsed entry; the pointers borrow the buffer given to chunk_cache_parse_entry. */
struct chunk_cache_entry {
	const char *fid; /* not NUL-terminated */
	size_t fid_len;
	const uint8_t *data;
	uint64_t len;
};

/* The 64-bit key a file id is stored under (names the file). Pure. */
uint64_t chunk_cache_fid_key(const char *fid, size_t fid_len);

/*
 * Parses and verifies a whole cache file image buf[0, len): magic, version, bounded fid
 * length, data length equal to what follows the header, xxh64 of the data. WFS_OK with
 * *out pointing into buf, or WFS_ECORRUPT. Pure; any thread.
 */
wfs_err chunk_cache_parse_entry(const void *buf, size_t len, struct chunk_cache_entry *out);

/*
 * Writes the header for (fid, data, len) into out (cap bytes) and returns its length
 * (CHUNK_CACHE_HEADER_MIN + fid length), or 0 if the fid is empty, too long or cap too small.
 */
size_t chunk_cache_encode_header(uint8_t *out, size_t cap, const char *fid, const void *data,
				 size_t len);

/* The path of fid's cache file (newly allocated, caller frees), NULL without a dir. */
char *chunk_cache_entry_path(chunk_cache *c, const char *fid);

#endif
