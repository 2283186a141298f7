/* The large-buffer stash: reuse, best fit, and its bound. */
#include "config.h"
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include "bigbuf.h"
#include "tap.h"

int main(void)
{
	size_t cap, cap2, kept;
	void *a, *b, *c, *blocks[100], *again[100];
	int reused = 0;

	a = bigbuf_get(100, &cap);
	ok(a && cap == 100, "a small request is a plain block of its size");
	bigbuf_put(a);

	a = bigbuf_get(1u << 20, &cap);
	ok(a && cap >= 1u << 20 && cap <= malloc_usable_size(a), "a large block: cap is usable");
	memset(a, 1, cap); /* all of it is ours */
	bigbuf_put(a);
	b = bigbuf_get((1u << 20) - 4096, &cap2);
	ok(b == a && cap2 >= cap, "a freed block serves the next request of about its size");
	bigbuf_put(b);
	c = bigbuf_get(BIGBUF_MIN, &cap);
	ok(c != a, "a request under half its size does not take a large block");
	b = bigbuf_get(1u << 20, &cap2);
	ok(b == a, "which is still there for a request that fits");
	bigbuf_put(b);
	bigbuf_put(c);
	b = bigbuf_get(3u << 20, &cap);
	ok(b != a && cap >= 3u << 20, "a larger request gets a new block");
	bigbuf_put(b);
	bigbuf_put(NULL);

	/* 100 blocks of 1 MiB go back: the stash keeps no more than 64 MiB of them */
	for (int i = 0; i < 100; i++)
		blocks[i] = bigbuf_get(1u << 20, &cap);
	for (int i = 0; i < 100; i++)
		bigbuf_put(blocks[i]);
	kept = bigbuf_kept_bytes();
	ok(kept > 32u << 20 && kept <= 64u << 20, "the stash keeps %zu MiB of 100 (at most 64)",
	   kept >> 20);
	for (int i = 0; i < 100; i++) {
		again[i] = bigbuf_get(1u << 20, &cap);
		for (int j = 0; j < 100; j++)
			if (again[i] == blocks[j]) {
				reused++;
				break;
			}
	}
	/* the stash's blocks come back (malloc may hand out freed addresses again too) */
	ok(reused > 32, "%d of 100 blocks reused", reused);
	for (int i = 0; i < 100; i++)
		free(again[i]); /* free() is fine for a stash block too */

	/* last: its blocks go to free(), which moves glibc's mmap threshold */
	{
		buf body = BUF_INIT;
		bigbuf_presize(&body, 2u << 20);
		ok(body.data && body.cap > 2u << 20 && body.len == 0 && body.data[0] == '\0',
		   "a declared 2 MiB body: room for all of it and the NUL, empty");
		buf_append(&body, "abc", 3);
		bigbuf_presize(&body, 3u << 20);
		ok(body.cap > 3u << 20 && !memcmp(body.data, "abc", 3),
		   "more declared later: grown, the bytes kept");
		buf_free(&body);
		bigbuf_presize(&body, (uint64_t)BIGBUF_PRESIZE_MAX + 1);
		ok(!body.data, "an absurd length reserves nothing");
	}
	return done_testing();
}
