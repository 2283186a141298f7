/*
 * libFuzzer target: the needle decoder, re-encoding what it accepts, and the
 * decoder of a needle's fields without its data (used for big needles), which
 * must agree with the full decoder.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "server/volume/needle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct needle n;
	uint8_t *copy = malloc(size ? size : 1);

	/* a private copy so reads past the input are caught by ASan */
	memcpy(copy, data, size);
	if (size >= NEEDLE_HEAD_SIZE) {
		/* any bytes as head + tail; the tail in its own allocation */
		uint8_t *tail = malloc(size - NEEDLE_HEAD_SIZE + 1);
		memcpy(tail, copy + NEEDLE_HEAD_SIZE, size - NEEDLE_HEAD_SIZE);
		(void)needle_decode_meta(copy, tail, size - NEEDLE_HEAD_SIZE, &n);
		free(tail);
	}
	if (needle_decode(copy, size, false, &n) == WFS_OK && n.size > 0) {
		struct needle m;
		size_t after = NEEDLE_HEAD_SIZE + (size_t)n.data_size;
		if (needle_decode_meta(copy, copy + after, size - after, &m) != WFS_OK ||
		    m.data_size != n.data_size || m.flags != n.flags || m.name_len != n.name_len ||
		    m.mime_len != n.mime_len || m.pairs_len != n.pairs_len || m.crc != n.crc ||
		    m.append_ns != n.append_ns || m.last_modified != n.last_modified)
			abort();
	}
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
				len = NEEDLE_HEADER_SIZE + n.size > off
					      ? NEEDLE_HEADER_SIZE + n.size - off
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
