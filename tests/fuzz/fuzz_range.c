/* Fuzzes Range parsing: every accepted range lies inside the entity and is non-empty. */
#include "config.h"
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "http_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[256];
	struct http_range r[HTTP_MAX_RANGES];
	uint64_t entity;
	int n = -1;
	if (size < 8 || size - 8 >= sizeof(s))
		return 0;
	memcpy(&entity, data, 8);
	entity %= 1ull << 40;
	memcpy(s, data + 8, size - 8);
	s[size - 8] = '\0';
	wfs_err e = http_parse_range(s, entity, r, HTTP_MAX_RANGES, &n);
	assert(e == WFS_OK || e == WFS_ERANGE || e == WFS_EINVAL);
	if (e == WFS_OK) {
		assert(n >= 1 && n <= HTTP_MAX_RANGES);
		for (int i = 0; i < n; i++) {
			assert(r[i].len >= 1);
			assert(r[i].start < entity && r[i].len <= entity - r[i].start);
		}
	}
	return 0;
}
