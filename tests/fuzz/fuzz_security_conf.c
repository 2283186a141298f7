/* Fuzzes the security file parser: never crashes or leaks, and what parses has its invariants. */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "security.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct security_conf c;
	char msg[256];

	if (security_conf_parse((const char *)data, size, &c, msg, sizeof(msg)) != WFS_OK) {
		if (!msg[0])
			abort(); /* a refusal always says why */
		return 0;
	}
	for (int r = 0; r < SECURITY_ROLE_COUNT; r++)
		if (!c.https[r].cert != !c.https[r].key || (c.https[r].verify_client && !c.https[r].ca))
			abort();
	if (c.volume_write.key && strlen(c.volume_write.key) != c.volume_write.key_len)
		abort();
	if (c.volume_write.expires_after_sec < 1 || c.filer_read.expires_after_sec < 1)
		abort();
	security_conf_free(&c);
	return 0;
}
