#include "config.h"
#include <limits.h>
#include <isa-l/crc.h>
#include "crc32c.h"

uint32_t crc32c_update(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;
	/* isa-l's crc32_iscsi neither pre- nor post-inverts; the standard CRC32C does both. */
	crc = ~crc;
	while (len > 0) {
		int n = len > INT_MAX ? INT_MAX : (int)len;
		crc = crc32_iscsi((unsigned char *)p, n, crc);
		p += n;
		len -= (size_t)n;
	}
	return ~crc;
}

bool crc32c_stored_matches(uint32_t stored, uint32_t crc)
{
	uint32_t legacy = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
	return stored == crc || stored == legacy;
}
