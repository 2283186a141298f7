/* CRC32C (Castagnoli), as SeaweedFS stores in needles; computed by isa-l. */
#ifndef WEEDFS_CRC32C_H
#define WEEDFS_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Extends crc (0 to start) over data; crc32c_update(0, "123456789", 9) == 0xe3069283. */
uint32_t crc32c_update(uint32_t crc, const void *data, size_t len);

/* True if a needle's stored checksum is crc, plainly or in SeaweedFS's legacy masked form. */
bool crc32c_stored_matches(uint32_t stored, uint32_t crc);

#endif
