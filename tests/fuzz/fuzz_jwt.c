/* Fuzzes token verification: never crashes or leaks, only a correctly signed token passes, and base64url round-trips. */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base64.h"
#include "jwt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *t = (const char *)data;
	enum jwt_status st = jwt_verify("k", 1, t, size, size % 2 ? "3,01637037d6" : NULL, 1700000000);
	uint8_t *raw;
	size_t n;

	if (st == JWT_OK) {
		/* a pass under key "k" must fail under any other key */
		if (jwt_verify("K", 1, t, size, NULL, 1700000000) == JWT_OK)
			abort();
	}
	if (base64url_decode(t, size, 4096, &raw, &n)) {
		buf b = {0};
		base64url_encode(raw, n, &b);
		if (b.len != size || memcmp(b.data, t, size))
			abort(); /* only canonical encodings decode */
		buf_free(&b);
		free(raw);
	}
	return 0;
}
