/*
 * Fuzzes what the TUS endpoint reads: the stored session decoder (a "TUS2"
 * record that decodes re-encodes to exactly the input; any record that
 * decodes survives a round trip field for field) and the Upload-Metadata
 * check (never reads past the header; what it accepts is bounded and holds
 * only printable ASCII).
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "filer/tus_codec.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_session(const uint8_t *data, size_t size)
{
	struct tus_session s, s2;
	buf b = BUF_INIT;

	if (tus_session_decode(data, size, &s) != WFS_OK)
		return;
	if (!s.target || !s.meta || s.offset > s.length || strlen(s.meta) > TUS_META_MAX)
		abort();
	tus_session_encode(&s, &b);
	if (size >= 4 && !memcmp(data, "TUS2", 4) && (b.len != size || memcmp(b.data, data, size)))
		abort();
	if (tus_session_decode((const uint8_t *)b.data, b.len, &s2) != WFS_OK)
		abort();
	if (s2.length != s.length || s2.offset != s.offset || s2.touched_ns != s.touched_ns ||
	    strcmp(s2.target, s.target) || strcmp(s2.meta, s.meta) || s2.n != s.n)
		abort();
	for (size_t i = 0; i < s.n; i++)
		if (strcmp(s.chunks[i].fid, s2.chunks[i].fid) ||
		    s.chunks[i].offset != s2.chunks[i].offset ||
		    s.chunks[i].size != s2.chunks[i].size)
			abort();
	tus_session_clear(&s);
	tus_session_clear(&s2);
	buf_free(&b);
}

static void check_metadata(const uint8_t *data, size_t size)
{
	/* an exact-size heap copy: ASan catches a read past the terminator */
	char *m = xmalloc(size + 1);
	memcpy(m, data, size);
	m[size] = '\0';
	if (tus_metadata_valid(m)) {
		size_t n = strlen(m);
		if (n > TUS_META_MAX)
			abort();
		for (size_t i = 0; i < n; i++)
			if (m[i] < ' ' || m[i] > '~')
				abort();
	}
	free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_session(data, size);
	check_metadata(data, size);
	return 0;
}
