#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "fid.h"
#include "util.h"

bool volume_id_parse(const char *s, size_t n, uint32_t *out)
{
	uint64_t v = 0;
	if (n == 0 || n > 10)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

wfs_err fid_parse_key_cookie(const char *s, size_t n, uint64_t *key, uint32_t *cookie)
{
	const char *us = memchr(s, '_', n);
	size_t hexlen = us ? (size_t)(us - s) : n;
	uint64_t k = 0, delta = 0;
	uint32_t c = 0;

	/* At least one key digit; key is u64 (16 digits) and cookie 8 digits. */
	if (hexlen <= 8 || hexlen > 24)
		return WFS_EINVAL;
	for (size_t i = 0; i < hexlen; i++) {
		int h = hex_digit_value((unsigned char)s[i]);
		if (h < 0)
			return WFS_EINVAL;
		if (i < hexlen - 8)
			k = k << 4 | (uint64_t)h;
		else
			c = c << 4 | (uint32_t)h;
	}
	if (us) {
		size_t dn = n - hexlen - 1;
		if (dn == 0 || dn > 10)
			return WFS_EINVAL;
		for (size_t i = 0; i < dn; i++) {
			char d = us[1 + i];
			if (d < '0' || d > '9')
				return WFS_EINVAL;
			delta = delta * 10 + (uint64_t)(d - '0');
		}
		if (k + delta < k)
			return WFS_EINVAL;
		k += delta;
	}
	*key = k;
	*cookie = c;
	return WFS_OK;
}

wfs_err fid_parse(const char *s, struct fid *out, const char **ext)
{
	const char *comma = strchr(s, ','), *dot, *end;
	wfs_err err;

	if (!comma || !volume_id_parse(s, (size_t)(comma - s), &out->volume_id))
		return WFS_EINVAL;
	dot = strchr(comma + 1, '.');
	end = dot ? dot : comma + strlen(comma);
	if (dot && (strchr(dot, '/') || !dot[1]))
		return WFS_EINVAL;
	err = fid_parse_key_cookie(comma + 1, (size_t)(end - comma - 1), &out->key, &out->cookie);
	if (err)
		return err;
	if (ext)
		*ext = dot;
	return WFS_OK;
}

void fid_format(const struct fid *f, char *out, size_t outlen)
{
	/* SeaweedFS hex-encodes the 8 key bytes with leading zero bytes dropped,
	 * so the key part always has an even number of digits ("3,01637037d6"). */
	char key[17];
	int n = snprintf(key, sizeof(key), "%" PRIx64, f->key);
	if (f->key == 0)
		n = 0, key[0] = '\0';
	snprintf(out, outlen, "%" PRIu32 ",%s%s%08" PRIx32, f->volume_id, n % 2 ? "0" : "", key,
		 f->cookie);
}
