/*
 * An erasure-coded volume as one volume server holds it: its .ecx, .ecj and .vif and
 * whichever of its 14 shard files are in the directory.
 *
 * DESIGN: a read looks the key up in the .ecx (binary search with pread: the index stays
 * on disk, as sealed data is warm, not hot), skips keys the .ecj or an in-place tombstone
 * in the .ecx marks deleted, locates the needle's bytes (ec_locate) and reads each piece
 * from the local shard or, through the caller's fetch function, from the server holding
 * that shard. A piece whose shard cannot be had is reconstructed from any 10 others
 * (local or fetched). The needle's CRC is checked; on a mismatch after a direct read the
 * pieces are reconstructed once more without the shards they came from, so a damaged
 * byte is never served. A delete appends the key to the .ecj and overwrites the .ecx
 * entry's size with the tombstone, under a lock. Reference counted like volume.
 */
#ifndef WEEDFS_VOLUME_EC_VOLUME_H
#define WEEDFS_VOLUME_EC_VOLUME_H

#include <stdbool.h>
#include <stdint.h>
#include "buf.h"
#include "ec_codec.h"
#include "err.h"
#include "needle.h"

typedef struct ec_volume ec_volume;

/*
 * Reads size bytes at offset of shard `shard` of volume vid from another server into out.
 * WFS_OK only when all size bytes were read; any error means "not available there".
 * Called from the reading thread; may block (a network round trip).
 */
typedef wfs_err (*ec_fetch_fn)(void *ctx, uint32_t vid, int shard, uint64_t offset,
			       uint64_t size, uint8_t *out);

struct ec_volume_info {
	uint32_t id;
	char collection[128];
	struct ec_vif vif;
	uint64_t shard_size;
	uint16_t shard_bits; /* bit i: .ec<i> is here and open */
	uint64_t entries;    /* .ecx entries */
	uint64_t deleted;    /* of those, deleted */
};

/*
 * Opens the EC volume vid of collection in dir: its .ecx, .ecj and .vif must be there;
 * every shard file present is opened. Returns one reference. Blocking.
 */
wfs_err ec_volume_open(const char *dir, const char *collection, uint32_t vid, ec_volume **out);
/* The same for shards cut in blocks other than ec_default_blocks (unit tests); b is copied. */
wfs_err ec_volume_open_blocks(const char *dir, const char *collection, uint32_t vid,
			      const struct ec_blocks *b, ec_volume **out);
void ec_volume_ref(ec_volume *v);
void ec_volume_unref(ec_volume *v);
/* The files (.ecNN of the shards held, .ecx, .ecj, .vif) are unlinked when the last reference
 * goes. */
void ec_volume_destroy(ec_volume *v);

uint32_t ec_volume_id(const ec_volume *v);
const char *ec_volume_collection(const ec_volume *v);
const char *ec_volume_dir(const ec_volume *v);
void ec_volume_get_info(ec_volume *v, struct ec_volume_info *out);

/* Opens the shard files of bits now present in the directory (after a copy or rebuild);
 * returns the bits opened. */
uint16_t ec_volume_mount_shards(ec_volume *v, uint16_t bits);
/* Closes the shards of bits; with remove also unlinks their files. */
void ec_volume_unmount_shards(ec_volume *v, uint16_t bits, bool remove);

/*
 * Reads needle key (cookie checked) into storage and decodes it into n, as volume_read:
 * deleted or wrong cookie WFS_ENOENT; WFS_EUNAVAIL when fewer than 10 shards of a piece
 * can be had; WFS_ECORRUPT only if even the reconstruction fails the CRC. fetch may be
 * NULL (local shards only). Any thread; blocking.
 */
wfs_err ec_volume_read(ec_volume *v, uint64_t key, uint32_t cookie, ec_fetch_fn fetch,
		       void *ctx, buf *storage, struct needle *n);

/* Whether key is in the .ecx and not deleted; *size gets its .ecx size. */
bool ec_volume_has(ec_volume *v, uint64_t key, uint32_t *size);

/*
 * Journals the deletion of key: .ecj append, .ecx tombstone. The caller checked the cookie
 * (by a read). Deleting a deleted key is WFS_OK (idempotent); an unknown key WFS_ENOENT.
 */
wfs_err ec_volume_delete(ec_volume *v, uint64_t key);

/* Reads [offset, offset + size) of local shard `shard` into out; *got gets the bytes read
 * (short at the shard's end). WFS_ENOENT when the shard is not here. */
wfs_err ec_volume_read_shard(ec_volume *v, int shard, uint64_t offset, uint64_t size,
			     uint8_t *out, uint64_t *got);

#endif
