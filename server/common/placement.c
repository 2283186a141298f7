#include "config.h"
#include <stdio.h>
#include <string.h>
#include "placement.h"

wfs_err replica_placement_parse(const char *s, struct replica_placement *out)
{
	if (!s || !*s) {
		memset(out, 0, sizeof(*out));
		return WFS_OK;
	}
	if (strlen(s) != 3)
		return WFS_EINVAL;
	for (int i = 0; i < 3; i++)
		if (s[i] < '0' || s[i] > '9')
			return WFS_EINVAL;
	out->dc = (uint8_t)(s[0] - '0');
	out->rack = (uint8_t)(s[1] - '0');
	out->server = (uint8_t)(s[2] - '0');
	return WFS_OK;
}

uint8_t replica_placement_byte(const struct replica_placement *rp)
{
	return (uint8_t)(rp->dc * 100 + rp->rack * 10 + rp->server);
}

void replica_placement_from_byte(uint8_t b, struct replica_placement *out)
{
	out->dc = b / 100;
	out->rack = (b / 10) % 10;
	out->server = b % 10;
}

void replica_placement_format(const struct replica_placement *rp, char *out)
{
	out[0] = (char)('0' + rp->dc);
	out[1] = (char)('0' + rp->rack);
	out[2] = (char)('0' + rp->server);
	out[3] = '\0';
}

int replica_placement_copies(const struct replica_placement *rp)
{
	return 1 + rp->dc + rp->rack + rp->server;
}

static const char ttl_letters[] = {0, 'm', 'h', 'd', 'w', 'M', 'y'};
static const uint64_t ttl_unit_seconds[] = {0, 60, 3600, 86400, 7 * 86400, 30 * 86400, 365 * 86400};

wfs_err ttl_parse(const char *s, struct ttl *out)
{
	uint64_t count = 0;
	size_t n, i;
	int unit = TTL_MINUTE;

	memset(out, 0, sizeof(*out));
	if (!s || !*s)
		return WFS_OK;
	n = strlen(s);
	for (i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
		count = count * 10 + (uint64_t)(s[i] - '0');
		if (count > 1000000)
			return WFS_EINVAL;
	}
	if (i == 0)
		return WFS_EINVAL;
	if (i < n) {
		const char *p;
		if (i + 1 != n || !(p = memchr(ttl_letters + 1, s[i], sizeof(ttl_letters) - 1)))
			return WFS_EINVAL;
		unit = (int)(p - ttl_letters);
	}
	if (count == 0)
		return WFS_OK;
	/* Carry an oversized count into a larger unit where that is exact. */
	while (count > 255) {
		static const int next[] = {0, TTL_HOUR, TTL_DAY, TTL_WEEK, 0, 0, 0};
		static const uint64_t ratio[] = {0, 60, 24, 7, 0, 0, 0};
		if (!next[unit] || count % ratio[unit])
			return WFS_EINVAL;
		count /= ratio[unit];
		unit = next[unit];
	}
	out->count = (uint8_t)count;
	out->unit = (uint8_t)unit;
	return WFS_OK;
}

bool ttl_is_set(const struct ttl *t)
{
	return t->count && t->unit > TTL_NONE && t->unit <= TTL_YEAR;
}

void ttl_format(const struct ttl *t, char *out)
{
	if (!ttl_is_set(t)) {
		out[0] = '\0';
		return;
	}
	snprintf(out, 8, "%u%c", t->count, ttl_letters[t->unit]);
}

void ttl_to_bytes(const struct ttl *t, uint8_t out[2])
{
	out[0] = t->count;
	out[1] = t->unit;
}

void ttl_from_bytes(const uint8_t in[2], struct ttl *out)
{
	out->count = in[0];
	out->unit = in[1];
}

uint64_t ttl_seconds(const struct ttl *t)
{
	return ttl_is_set(t) ? t->count * ttl_unit_seconds[t->unit] : 0;
}
