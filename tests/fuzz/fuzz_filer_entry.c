/*
 * Fuzzes the filer entry decoder and the manifest decoder: never crashes, and
 * whatever decodes re-encodes to exactly the input bytes (the encoding is
 * canonical), and decodes again to the same entry.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "client/chunks.h"
#include "client/entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct filer_entry *e = NULL, *e2 = NULL;
	struct filer_chunk *c = NULL;
	size_t n = 0;
	buf b = BUF_INIT, b2 = BUF_INIT;

	if (filer_entry_decode(data, size, "/fuzz", "x", &e) == WFS_OK) {
		if (filer_entry_encode(e, &b) != WFS_OK || b.len != size ||
		    memcmp(b.data, data, size))
			abort();
		if (filer_entry_decode((const uint8_t *)b.data, b.len, "/fuzz", "x", &e2) != WFS_OK)
			abort();
		/* the fields at the end (atime, inode) survive, and 0 means absent */
		if (e2->attr.inode != e->attr.inode || e2->attr.atime_ns != e->attr.atime_ns ||
		    (size >= 2 && !!(data[1] & 0x08) != (e->attr.inode != 0)))
			abort();
		if (filer_entry_encode(e2, &b2) != WFS_OK || b2.len != b.len ||
		    memcmp(b2.data, b.data, b.len))
			abort();
	}
	if (chunks_manifest_decode(data, size, &c, &n) == WFS_OK) {
		buf_reset(&b);
		chunks_manifest_encode(c, n, &b);
		if (b.len != size || memcmp(b.data, data, size))
			abort();
		filer_chunks_free(c, n);
	}
	filer_entry_free(e);
	filer_entry_free(e2);
	buf_free(&b);
	buf_free(&b2);
	return 0;
}
