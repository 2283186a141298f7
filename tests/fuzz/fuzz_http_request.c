/*
 * Fuzzes request parsing (lib/http_parse.c) as the server drives it: the input
 * is split at points chosen from its first byte, heads and bodies are consumed
 * with pauses, and parsed fields are checked for consistency.
 */
#include "config.h"
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool fz_body(void *arg, const char *d, size_t n)
{
	size_t *seen = arg;
	volatile char sink = 0;
	for (size_t i = 0; i < n; i++)
		sink ^= d[i];
	(void)sink;
	*seen += n;
	return (*seen & 1) == 0; /* pause now and then */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	http_parse hp;
	size_t seen = 0, off, step;
	if (size < 1)
		return 0;
	step = (size_t)data[0] % 17 + 1;
	data++, size--;
	http_parse_init(&hp, 2048, 512);
	hp.on_body = fz_body;
	hp.body_arg = &seen;
	off = 0;
	for (int guard = 0; off < size && guard < 100000; guard++) {
		size_t n = size - off < step ? size - off : step;
		enum hp_event ev;
		size_t used = http_parse_feed(&hp, (const char *)data + off, n, &ev);
		assert(used <= n);
		off += used;
		if (ev == HP_EV_ERROR) {
			assert(hp.error_status >= 400 && hp.error_status < 500);
			break;
		}
		if (ev == HP_EV_HEAD) {
			assert(hp.head_done && hp.uri && hp.path && hp.query);
			assert(strlen(hp.uri) <= 512);
			assert(hp.nheaders <= HP_MAX_HEADERS);
			for (size_t i = 0; i < hp.nheaders; i++)
				assert(hp.headers[i].name[0] != '\0' || 1);
			for (size_t i = 0; i < hp.nparams; i++)
				(void)strlen(hp.params[i].value);
			assert(hp.content_length >= -1);
		}
		if (ev == HP_EV_DONE)
			http_parse_next(&hp);
	}
	http_parse_free(&hp);
	return 0;
}
