/*
 * Fuzzes the ACL parsers (s3/acl.c): the AccessControlPolicy body, a grant
 * header and the stored form must never crash, and what the body parser
 * accepts must store and read back to the same grants.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "s3/acl.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static enum s3_err resolve(void *ctx, bool email, const char *value, char **name)
{
	(void)ctx;
	if (!email && !strcmp(value, "known")) {
		*name = xstrdup("someone");
		return S3_OK;
	}
	return email ? S3_UNRESOLVABLE_EMAIL : S3_INVALID_ARGUMENT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s3_acl a = {0}, back;
	char msg[256], *text = xstrndup((const char *)data, size);
	buf enc = BUF_INIT;

	if (acl_parse_xml((const char *)data, size, resolve, NULL, &a, msg, sizeof(msg)) == S3_OK) {
		acl_encode(&a, &enc);
		if (!acl_decode(enc.data ? enc.data : "", enc.len, &back) || back.n != a.n)
			abort();
		acl_free(&back);
	}
	acl_free(&a);
	(void)acl_parse_grant_header(text, ACL_READ, resolve, NULL, &a, msg, sizeof(msg));
	acl_free(&a);
	if (acl_decode((const char *)data, size, &a))
		(void)acl_perms(&a, "someone", "o", "b", false);
	acl_free(&a);
	buf_free(&enc);
	free(text);
	return 0;
}
