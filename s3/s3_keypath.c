/*
 * Key to path mapping of the S3 gateway (s3_keypath.h).
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "s3/s3_keypath.h"
#include "util.h"

#define PREFIX_LEN (sizeof(S3_KEYPATH_PREFIX) - 1)

/* The components that are escaped by a fixed name, and those names. */
static const struct {
	const char *component, *name;
} fixed[] = {
	{"", S3_KEYPATH_PREFIX "empty"},
	{".", S3_KEYPATH_PREFIX "dot"},
	{"..", S3_KEYPATH_PREFIX "dotdot"},
};

bool s3_keypath_reserved(const char *name)
{
	return !strncmp(name, S3_KEYPATH_PREFIX, PREFIX_LEN);
}

/* Appends the stored name of component c[0..n). */
static void encode_component(buf *b, const char *c, size_t n)
{
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (strlen(fixed[i].component) == n && !strncmp(c, fixed[i].component, n)) {
			buf_append(b, fixed[i].name, strlen(fixed[i].name));
			return;
		}
	}
	if (n >= PREFIX_LEN && !strncmp(c, S3_KEYPATH_PREFIX, PREFIX_LEN))
		buf_append(b, S3_KEYPATH_PREFIX, PREFIX_LEN);
	buf_append(b, c, n);
}

char *s3_keypath_encode(const char *key)
{
	buf b = BUF_INIT;
	for (const char *p = key;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		encode_component(&b, p, n);
		if (!slash)
			break;
		buf_append(&b, "/", 1);
		p = slash + 1;
	}
	return buf_steal(&b, NULL);
}

char *s3_keypath_decode(const char *name)
{
	if (!s3_keypath_reserved(name))
		return xstrdup(name);
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (!strcmp(name, fixed[i].name))
			return xstrdup(fixed[i].component);
	if (s3_keypath_reserved(name + PREFIX_LEN))
		return xstrdup(name + PREFIX_LEN);
	return NULL;
}
