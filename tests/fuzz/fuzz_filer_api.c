/*
 * Fuzzes the JSON entry API's request parser: the first byte picks the
 * operation (its top bit: the body ends in raw content, the second byte says
 * how much), the rest is the body. Never crashes or leaks; whatever parses
 * names only canonical paths and bounded values.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "filer/filer_api_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const ops[] = {"lookup", "list",         "create",   "update",
				  "delete", "rename",       "setXattr", "removeXattr",
				  "assign", "lookupVolume", "link",     "bogus"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct api_req *r = NULL;
	const uint8_t *raw = NULL;
	size_t raw_len = 0;
	char msg[256];
	if (size < 2)
		return 0;
	const char *op = ops[(data[0] & 0x7f) % (sizeof(ops) / sizeof(ops[0]))];
	if (data[0] & 0x80) { /* the body's last data[1] bytes (at most) are raw content */
		raw_len = data[1] % (size - 1);
		raw = data + size - raw_len;
	}
	if (api_req_parse(op, (const char *)data + 2, size - 2 - raw_len, raw, raw_len, &r, msg,
			  sizeof(msg)) == WFS_OK) {
		char *d = NULL, *n = NULL;
		if (!r->path || filer_path_split(r->path, &d, &n) != WFS_OK)
			if (r->op != API_ASSIGN && r->op != API_LOOKUP_VOLUME)
				abort();
		free(d);
		free(n);
		if (r->op == API_LIST && (r->limit < 1 || r->limit > API_LIST_MAX))
			abort();
		if (r->entry && filer_entry_check(r->entry) != WFS_OK)
			abort();
		api_req_free(r);
	} else if (!memchr(msg, '\0', sizeof(msg))) {
		abort();
	}
	return 0;
}
