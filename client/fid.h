/*
 * File ids: "<volume id>,<key hex><cookie hex, 8 digits>", e.g. "3,01637037d6",
 * with an optional "_N" suffix (the Nth extra id of a count=N assignment,
 * key + N) and an optional ".ext" that only sets the Content-Type on reads.
 */
#ifndef WEEDFS_CLIENT_FID_H
#define WEEDFS_CLIENT_FID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"

struct fid {
	uint32_t volume_id;
	uint64_t key;
	uint32_t cookie;
};

/* Longest formatted fid: 10 digits, comma, 16+8 hex digits, NUL. */
#define FID_STR_MAX 40

/*
 * Parses a fid in "vid,keycookie[_N][.ext]" form. *ext (if ext non-NULL) points
 * into s at the extension's dot or is NULL. WFS_EINVAL on anything malformed.
 */
wfs_err fid_parse(const char *s, struct fid *out, const char **ext);
/* Parses the "keycookie[_N]" part alone (n bytes). */
wfs_err fid_parse_key_cookie(const char *s, size_t n, uint64_t *key, uint32_t *cookie);
/* Formats as SeaweedFS does: key hex without leading zeros, then 8 cookie digits. */
void fid_format(const struct fid *f, char *out, size_t outlen);
/* Parses a decimal volume id; false if malformed or zero-length. */
bool volume_id_parse(const char *s, size_t n, uint32_t *out);

#endif
