/*
 * Fuzzes the bucket encryption configuration parser (s3/sse_config.c): it
 * must never crash, and what it accepts must be a stored form the gateway
 * reads back: "AES256", "aws:kms", or "aws:kms <id>" with an id of at most
 * S3_SSE_KID_MAX bytes and no space.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "s3/s3_sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	buf out = BUF_INIT;
	bool malformed = false;
	const char *why = s3_sse_config_parse((const char *)data, size, &out, &malformed);

	if (why && out.len)
		abort(); /* a refusal stores nothing */
	if (!why) {
		buf_append(&out, "", 1);
		const char *v = out.data;
		if (strcmp(v, "AES256") && strcmp(v, "aws:kms") &&
		    (strncmp(v, "aws:kms ", 8) || !v[8] || strchr(v + 8, ' ') ||
		     strlen(v + 8) > S3_SSE_KID_MAX))
			abort();
	}
	buf_free(&out);
	return 0;
}
