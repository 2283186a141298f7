/*
 * Fuzzes client-side response parsing (lib/http_response_parser.c) as a
 * keep-alive client drives it: pipelined responses are parsed one after the
 * other until an error or the end of input, then EOF is signalled. The input
 * is parsed twice, in one piece and in pieces of a size chosen from its first
 * byte, and both runs must agree; limits and callback contracts are asserted.
 */
#include "config.h"
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "http_response_parser.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_BODY      4096
#define MAX_HEADER    1024
#define MAX_RESPONSES 64

struct summary {
	int n; /* responses completed */
	int status[MAX_RESPONSES];
	uint64_t body_len[MAX_RESPONSES];
	uint64_t body_hash[MAX_RESPONSES];
	bool keep_alive[MAX_RESPONSES];
	uint64_t header_hash;
	size_t header_bytes;
	enum hrp_result last; /* of the final feed or eof */
	size_t consumed;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 0x100000001b3ULL;
	return h;
}

static bool fz_header(void *arg, const char *name, size_t nlen, const char *value, size_t vlen)
{
	struct summary *s = arg;
	assert(strlen(name) == nlen && strlen(value) == vlen);
	assert(vlen == 0 || (value[vlen - 1] != ' ' && value[vlen - 1] != '\t'));
	s->header_bytes += nlen + vlen;
	assert(s->header_bytes <= (size_t)(s->n + 1) * MAX_HEADER);
	s->header_hash = fnv(fnv(s->header_hash, name, nlen), value, vlen);
	return true;
}

static void run(const uint8_t *data, size_t size, size_t step, unsigned flags, struct summary *s)
{
	struct hrp_opts o = {.max_header = MAX_HEADER, .on_header = fz_header, .arg = s};
	hrp_parser *p = hrp_new(&o);
	size_t off = 0;
	enum hrp_result res = HRP_MORE;

	memset(s, 0, sizeof(*s));
	s->header_hash = 0xcbf29ce484222325ULL;
	hrp_begin(p, flags, MAX_BODY);
	while (off < size && s->n < MAX_RESPONSES) {
		size_t n = size - off < step ? size - off : step, used;
		res = hrp_feed(p, (const char *)data + off, n, &used);
		assert(used <= n);
		off += used;
		if (res == HRP_ERROR) {
			assert(hrp_error(p) != NULL);
			break;
		}
		assert(hrp_error(p) == NULL);
		if (res == HRP_MORE) {
			assert(used == n);
			continue;
		}
		/* A complete response: check it and go on with the next one. */
		size_t blen;
		const char *body = hrp_body(p, &blen);
		int st = hrp_status(p);
		assert(st >= 200 && st <= 999);
		assert(hrp_body_len(p) <= MAX_BODY && blen == hrp_body_len(p));
		assert(body[blen] == '\0');
		if ((flags & 1) || st == 204 || st == 304)
			assert(blen == 0);
		if (hrp_content_length(p) >= 0 && !(flags & 1) && st != 204 && st != 304)
			assert((uint64_t)hrp_content_length(p) == blen);
		assert(hrp_body_pending(p) == 0);
		s->status[s->n] = st;
		s->body_len[s->n] = blen;
		s->body_hash[s->n] = fnv(0xcbf29ce484222325ULL, body, blen);
		s->keep_alive[s->n] = hrp_keep_alive(p);
		s->n++;
		/* Finished responses consume nothing more. */
		if (off < size) {
			assert(hrp_feed(p, (const char *)data + off, size - off, &used) ==
			       HRP_DONE);
			assert(used == 0);
		}
		hrp_begin(p, flags, MAX_BODY);
		res = HRP_MORE;
	}
	if (res == HRP_MORE && s->n < MAX_RESPONSES) {
		res = hrp_eof(p);
		if (res == HRP_DONE) {
			size_t blen;
			hrp_body(p, &blen);
			/* Only a body that runs until close ends at EOF. */
			assert(!hrp_keep_alive(p) && hrp_content_length(p) == -1);
			assert(blen <= MAX_BODY);
			s->status[s->n] = hrp_status(p);
			s->body_len[s->n] = blen;
			s->n++;
		}
	}
	s->last = res;
	s->consumed = off;
	hrp_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct summary *a, *b;
	size_t step;
	unsigned flags;

	if (size < 1)
		return 0;
	step = (size_t)(data[0] >> 1) % 23 + 1;
	flags = data[0] & 1; /* HRP_HEAD */
	data++, size--;
	a = malloc(sizeof(*a));
	b = malloc(sizeof(*b));
	run(data, size, size ? size : 1, flags, a);
	run(data, size, step, flags, b);
	/* The split must not change what was parsed. */
	assert(a->last == b->last && a->n == b->n);
	/* Where an error stops, and so which headers of the failed response were reported,
	 * depends on the split (http-parser runs callbacks at the end of each piece). */
	if (a->last != HRP_ERROR)
		assert(a->consumed == b->consumed && a->header_hash == b->header_hash);
	for (int i = 0; i < a->n; i++) {
		assert(a->status[i] == b->status[i] && a->body_len[i] == b->body_len[i]);
		assert(a->body_hash[i] == b->body_hash[i]);
		assert(a->keep_alive[i] == b->keep_alive[i]);
	}
	free(a);
	free(b);
	return 0;
}
