/* Eight MD5 streams at once in AVX2 registers (internal to md5.c). */
#ifndef WEEDFS_MD5_X8_H
#define WEEDFS_MD5_X8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MD5_LANES 8

/* Whether this CPU can run md5_x8_blocks. */
bool md5_x8_supported(void);
/*
 * Advances the eight states h[l] over nblocks 64-byte blocks at p[l] each.
 * A lane without a stream may repeat another lane's pointer and ignore its
 * state. Only where md5_x8_supported().
 */
void md5_x8_blocks(uint32_t h[MD5_LANES][4], const uint8_t *const p[MD5_LANES], size_t nblocks);

#endif
