/*
 * Fuzzes the POST policy checker: the input is the policy text (base64 made
 * here, so the JSON is what gets exercised) followed, after a NUL, by form
 * fields as "name=value" lines. Any input gives an answer and, when refused,
 * a message; an accepted one has a sane content-length-range.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include "s3/post_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t plen = nul ? (size_t)(nul - data) : size;
	char *b64 = malloc(4 * (plen / 3 + 1) + 1), *fields, *save = NULL;
	struct post_field f[16];
	size_t n = 0;
	uint64_t lo, hi;
	char msg[256] = "";
	enum s3_err e;

	EVP_EncodeBlock((unsigned char *)b64, data, (int)plen);
	fields = nul ? strndup((const char *)nul + 1, size - plen - 1) : strdup("");
	for (char *l = strtok_r(fields, "\n", &save); l && n < 16;
	     l = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(l, '=');
		if (!eq)
			continue;
		*eq = '\0';
		f[n].name = l;
		f[n++].value = eq + 1;
	}
	e = post_policy_check(b64, strlen(b64), "bucket", f, n, 1796000000, &lo, &hi, msg,
			      sizeof(msg));
	if (e != S3_OK && !msg[0])
		abort(); /* a refusal always says why */
	if (e == S3_OK && lo > hi)
		abort();
	free(fields);
	free(b64);
	return 0;
}
