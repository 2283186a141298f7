/* Replica placement ("xyz") and TTL ("3d"), as stored in a volume superblock. */
#ifndef WEEDFS_PLACEMENT_H
#define WEEDFS_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>
#include "err.h"

struct replica_placement {
	uint8_t dc;     /* x: copies in other data centers */
	uint8_t rack;   /* y: copies on other racks of the same data center */
	uint8_t server; /* z: copies on other servers of the same rack */
};

/* "" or NULL means "000". WFS_EINVAL unless exactly three digits. */
wfs_err replica_placement_parse(const char *s, struct replica_placement *out);
/* The superblock byte: x*100 + y*10 + z. */
uint8_t replica_placement_byte(const struct replica_placement *rp);
void replica_placement_from_byte(uint8_t b, struct replica_placement *out);
/* "xyz" into out (>= 4 bytes). */
void replica_placement_format(const struct replica_placement *rp, char *out);
/* Total copies including the first. */
int replica_placement_copies(const struct replica_placement *rp);

enum ttl_unit { TTL_NONE = 0, TTL_MINUTE, TTL_HOUR, TTL_DAY, TTL_WEEK, TTL_MONTH, TTL_YEAR };
struct ttl {
	uint8_t count;
	uint8_t unit; /* enum ttl_unit */
};

/* "" or NULL means no TTL; "15m", "3h", "3d", "2w", "1M", "1y"; a bare number is minutes.
 * A count over 255 is carried into a larger unit when exact. */
wfs_err ttl_parse(const char *s, struct ttl *out);
/* "" for no TTL, else e.g. "3d"; out >= 8 bytes. */
void ttl_format(const struct ttl *t, char *out);
/* Two superblock/needle bytes: count then unit. */
void ttl_to_bytes(const struct ttl *t, uint8_t out[2]);
void ttl_from_bytes(const uint8_t in[2], struct ttl *out);
/* Length in seconds, 0 for no TTL. */
uint64_t ttl_seconds(const struct ttl *t);
bool ttl_is_set(const struct ttl *t);

#endif
