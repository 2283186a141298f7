/* libFuzzer target: the needle decoder, and re-encoding what it accepts. */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "volume/needle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct needle n;
	uint8_t *copy = malloc(size ? size : 1);

	/* a private copy so reads past the input are caught by ASan */
	memcpy(copy, data, size);
	(void)needle_decode(copy, size, false, &n);
	if (needle_decode(copy, size, true, &n) == WFS_OK && n.size > 0 &&
	    needle_body_size(&n) == n.size && !(n.flags & ~0xBFu)) {
		struct needle_enc e = {0};
		struct needle m = n;
		uint64_t off = 0;
		needle_encode(&m, &e);
		if (e.total != needle_disk_size(n.size))
			abort();
		/* header and body re-encode byte for byte (the stored crc may be the legacy one) */
		for (int i = 0; i < e.iovcnt; i++) {
			size_t len = e.iov[i].iov_len;
			if (off + len > NEEDLE_HEADER_SIZE + n.size)
				len = NEEDLE_HEADER_SIZE + n.size > off ? NEEDLE_HEADER_SIZE + n.size - off
									: 0;
			if (memcmp(copy + off, e.iov[i].iov_base, len))
				abort();
			off += e.iov[i].iov_len;
		}
		needle_enc_free(&e);
	}
	free(copy);
	return 0;
}
