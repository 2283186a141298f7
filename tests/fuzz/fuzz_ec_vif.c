/*
 * libFuzzer target: an erasure-coded volume's side files from arbitrary bytes.
 * Input: u16 vif length, u16 ecx length, then the .vif, the .ecx and the .ecj bytes.
 * ec_vif_parse must accept or refuse without harm (and what it accepts must write and
 * read back the same); ec_volume_open over the files must open or refuse, and an open
 * volume must answer lookups, reads and deletions without crashing.
 */
#include "config.h"
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "log.h"
#include "util.h"
#include "server/volume/ec_volume.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void put_file(const char *name, const void *p, size_t len)
{
	char path[128];
	int fd;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || (len && write(fd, p, len) != (ssize_t)len))
		abort();
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct ec_blocks b = {4096, 512};
	struct ec_vif vif, back;
	size_t vlen, xlen;
	char base[96];
	ec_volume *v;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz_ec_vif.XXXXXX");
		if (!mkdtemp(dir))
			abort();
		log_set_level(LOG_LEVEL_ERROR);
	}
	if (size < 4)
		return 0;
	vlen = (size_t)(data[0] << 8 | data[1]);
	xlen = (size_t)(data[2] << 8 | data[3]);
	data += 4;
	size -= 4;
	vlen = vlen > size ? size : vlen;
	xlen = xlen > size - vlen ? size - vlen : xlen;
	snprintf(base, sizeof(base), "%s/1", dir);
	if (ec_vif_parse((const char *)data, vlen, &vif) == WFS_OK) {
		if (ec_vif_write(base, &vif) != WFS_OK || ec_vif_read(base, &back) != WFS_OK ||
		    back.dat_size != vif.dat_size || back.version != vif.version ||
		    strcmp(back.collection, vif.collection) || strcmp(back.ttl, vif.ttl) ||
		    strcmp(back.replication, vif.replication))
			abort();
	}
	put_file("1.vif", data, vlen);
	put_file("1.ecx", data + vlen, xlen);
	put_file("1.ecj", data + vlen + xlen, size - vlen - xlen);
	if (ec_volume_open_blocks(dir, "", 1, &b, &v) == WFS_OK) {
		buf s = BUF_INIT;
		struct needle n;
		uint32_t sz;
		for (size_t i = 0; i + 8 <= xlen && i < 16 * 8; i += 16) {
			uint64_t key = get_be64(data + vlen + i);
			/* no shards are here: a read reconstructs nothing, but sizes its buffer */
			if (ec_volume_has(v, key, &sz) && sz < (1u << 20))
				(void)ec_volume_read(v, key, 0, NULL, NULL, &s, &n);
			(void)ec_volume_delete(v, key);
		}
		buf_free(&s);
		ec_volume_unref(v);
	}
	return 0;
}
