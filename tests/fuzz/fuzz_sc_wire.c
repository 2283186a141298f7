/*
 * Fuzzes the short-circuit wire parsers (lib/sc_wire.h), both directions: never
 * crashes, and whatever parses formats back to a line that parses to the same thing.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "sc_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char line[SC_LINE_MAX];
	struct sc_request rq, rq2;
	struct sc_answer a, a2;
	size_t n;

	if (sc_parse_request((const char *)data, size, &rq) == WFS_OK) {
		n = sc_format_request(&rq, line);
		if (sc_parse_request(line, n, &rq2) != WFS_OK || strcmp(rq.fid, rq2.fid) ||
		    rq.want_fd != rq2.want_fd)
			abort();
	}
	if (sc_parse_answer((const char *)data, size, &a) == WFS_OK) {
		n = sc_format_answer(&a, line);
		if (sc_parse_answer(line, n, &a2) != WFS_OK || a.err != a2.err)
			abort();
		if (!a.err && (a.dev != a2.dev || a.ino != a2.ino || a.data_off != a2.data_off ||
			       a.data_size != a2.data_size || a.crc != a2.crc))
			abort();
	}
	return 0;
}
