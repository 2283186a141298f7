/*
 * Erasure coding of sealed volumes: RS(10,4) over the .dat, in SeaweedFS's shard layout.
 *
 * Layout: the .dat (superblock included) is cut into rows of 10 blocks; block j of a row
 * goes to shard j (.ec00 .. .ec09) and the row's 4 parity blocks to .ec10 .. .ec13. While
 * more than 10 large blocks (1 GiB) remain, rows are of large blocks; the rest is in rows
 * of small blocks (1 MiB), the last row zero-padded. Every shard therefore has the same
 * size. The matrix is the systematic Vandermonde one (the Vandermonde matrix times the
 * inverse of its top 10x10 square, GF(2^8) with polynomial 0x11d), fed to isa-l's
 * ec_encode_data. Files beside the shards: .ecx (the .idx's live entries, sorted by key,
 * 16 bytes each as in the .idx), .ecj (the keys of needles deleted since, 8 bytes each,
 * big endian) and .vif (JSON: version, datFileSize, collection, replication, ttl).
 *
 * Every file is written under a ".tmp" suffix, fsynced and then renamed, the .vif last:
 * a torn encode, rebuild or decode leaves at most .tmp leftovers (ec_remove_leftovers)
 * and never a file that looks finished but is not.
 */
#ifndef WEEDFS_VOLUME_EC_CODEC_H
#define WEEDFS_VOLUME_EC_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"

#define EC_DATA_SHARDS   10
#define EC_PARITY_SHARDS 4
#define EC_TOTAL_SHARDS  14
#define EC_ALL_SHARDS    ((uint16_t)((1u << EC_TOTAL_SHARDS) - 1))
#define EC_LARGE_BLOCK   (1024ull * 1024 * 1024)
#define EC_SMALL_BLOCK   (1024ull * 1024)

/* Block sizes; servers use {EC_LARGE_BLOCK, EC_SMALL_BLOCK}, unit tests smaller ones. */
struct ec_blocks {
	uint64_t large, small;
};
extern const struct ec_blocks ec_default_blocks;

/* What the .vif records about the volume the shards came from. */
struct ec_vif {
	uint32_t version;     /* needle version (3) */
	uint64_t dat_size;    /* the .dat's size: a decode truncates to it */
	char collection[128];
	char replication[4];  /* "000" form */
	char ttl[16];         /* "" or "3d" form */
};

/* A piece of a .dat range as it lies in one shard. */
struct ec_interval {
	int shard;             /* 0..9 */
	uint64_t shard_offset; /* where it starts in that shard */
	uint64_t size;
};

/* Shard file suffix: ".ec00" .. ".ec13" (static string). */
const char *ec_shard_ext(int shard);

/*
 * Size every shard has for a .dat of dat_size bytes (rows as described above).
 */
uint64_t ec_shard_size(const struct ec_blocks *b, uint64_t dat_size);

/*
 * The pieces of the .dat range [offset, offset + size) in the shards of a volume whose
 * shards are shard_size bytes; at most max written to out, returns how many there are
 * (a needle crossing a block edge has two or more). 0 if the range is outside the data.
 */
size_t ec_locate(const struct ec_blocks *b, uint64_t shard_size, uint64_t offset,
		 uint64_t size, struct ec_interval *out, size_t max);

/*
 * Reconstruction of equal-length pieces of the 14 shards at one shard offset: shards[i]
 * points to len bytes for every i; those in present (bit i = shard i) hold data, and the
 * ones in want are filled in. Needs at least 10 present shards (WFS_EINVAL otherwise).
 * Any thread.
 */
wfs_err ec_reconstruct(uint8_t *const shards[EC_TOTAL_SHARDS], uint16_t present, uint16_t want,
		       size_t len);

/*
 * Encodes base.dat (base = dir/[collection_]vid) into base.ec00 .. base.ec13 and writes
 * base.ecx from base.idx, an empty base.ecj and base.vif (vif->dat_size is filled in).
 * The volume must not change meanwhile (the caller has made it read-only). Blocking.
 * On failure nothing but .tmp leftovers remain; msg says why.
 */
wfs_err ec_encode_volume(const char *base, const struct ec_blocks *b, struct ec_vif *vif,
			 char *msg, size_t msglen);

/*
 * Regenerates every shard file missing in base's directory from the ones there (at least
 * 10 needed; WFS_ENOENT otherwise). *rebuilt gets the bits of the shards written. Blocking.
 */
wfs_err ec_rebuild_shards(const char *base, const struct ec_blocks *b, uint16_t *rebuilt,
			  char *msg, size_t msglen);

/*
 * Turns the shards back into base.dat and base.idx: needs .ec00 .. .ec09, .ecx, .ecj and
 * .vif in the directory; the .dat is cut to the .vif's datFileSize and the .idx lists
 * every .ecx entry, then a deletion entry for every key of the .ecj. Blocking.
 */
wfs_err ec_decode_volume(const char *base, const struct ec_blocks *b, char *msg,
			 size_t msglen);

/* Reads / writes base.vif. WFS_ENOENT when missing, WFS_ECORRUPT when unreadable. */
wfs_err ec_vif_read(const char *base, struct ec_vif *out);
wfs_err ec_vif_write(const char *base, const struct ec_vif *vif);
/* Parses len bytes of .vif text into out (WFS_ECORRUPT when it is not one). Any thread. */
wfs_err ec_vif_parse(const char *text, size_t len, struct ec_vif *out);

/* pread until len bytes or the end of the file; *got gets how many (shared by the EC files). */
wfs_err ec_pread(int fd, void *p, size_t len, uint64_t off, size_t *got);

/* Removes the .tmp leftovers of a torn encode, rebuild or decode of base. */
void ec_remove_leftovers(const char *base);

#endif
