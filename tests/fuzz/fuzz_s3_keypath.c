/*
 * Fuzzes the S3 gateway's key to path mapping (s3/s3_keypath.h) with the
 * bytes as a key (cut at the first NUL, never empty): the path must consist
 * of names the filer takes (none empty, ".", ".." or the directory object's
 * name), must decode component by component back to the key, and must equal
 * the key when no component is empty, "." or ".." or begins with the prefix.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "s3/s3_keypath.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *key = xstrndup((const char *)data, size), *path;
	buf back = BUF_INIT;
	bool plain = true;
	if (!*key) {
		free(key);
		return 0;
	}
	path = s3_keypath_encode(key);
	for (const char *p = path, *k = key;;) {
		const char *slash = strchr(p, '/'), *kslash = strchr(k, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		size_t kn = kslash ? (size_t)(kslash - k) : strlen(k);
		char *name = xstrndup(p, n), *c;
		if (!n || !strcmp(name, ".") || !strcmp(name, "..") ||
		    !strcmp(name, S3_KEYPATH_SELF) || !(c = s3_keypath_decode(name)))
			abort();
		if (!kn || (kn == 1 && k[0] == '.') || (kn == 2 && !strncmp(k, "..", 2)) ||
		    !strncmp(k, S3_KEYPATH_PREFIX, strlen(S3_KEYPATH_PREFIX)))
			plain = false;
		buf_append_str(&back, c);
		free(c);
		free(name);
		if (!slash != !kslash)
			abort();
		if (!slash)
			break;
		buf_append(&back, "/", 1);
		p = slash + 1;
		k = kslash + 1;
	}
	buf_append(&back, "", 1);
	if (strcmp(back.data, key) || (plain && strcmp(path, key)))
		abort();
	buf_free(&back);
	free(path);
	free(key);
	return 0;
}
