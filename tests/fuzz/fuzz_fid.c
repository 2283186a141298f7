/* Fuzzes the file id parser: never crashes, and what parses formats back to a parsable id. */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "client/fid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[128], out[FID_STR_MAX];
	struct fid f, g;
	const char *ext;
	if (size >= sizeof(s))
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (fid_parse(s, &f, &ext) != WFS_OK || f.key == 0)
		return 0;
	fid_format(&f, out, sizeof(out));
	if (fid_parse(out, &g, NULL) != WFS_OK || g.key != f.key || g.cookie != f.cookie ||
	    g.volume_id != f.volume_id)
		abort();
	return 0;
}
