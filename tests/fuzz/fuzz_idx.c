/*
 * libFuzzer target: loading a volume from arbitrary .dat and .idx bytes.
 * Input: u16 idx length, then the .idx bytes, then the .dat after a valid
 * superblock. Whatever load repairs, a needle written afterwards must be
 * readable after a reopen.
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
#include "server/volume/volume.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void put_file(const char *name, const void *a, size_t alen, const void *b, size_t blen)
{
	char p[128];
	int fd;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		abort();
	if ((alen && write(fd, a, alen) != (ssize_t)alen) ||
	    (blen && write(fd, b, blen) != (ssize_t)blen))
		abort();
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t sb[8] = {3, 0, 0, 0, 0, 0, 0, 0};
	struct needle n = {0}, r;
	size_t idx_len;
	volume *v;
	buf b = BUF_INIT;
	bool unchanged;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz_idx.XXXXXX");
		if (!mkdtemp(dir))
			abort();
		log_set_level(LOG_LEVEL_ERROR);
	}
	if (size < 2)
		return 0;
	idx_len = (size_t)(data[0] << 8 | data[1]);
	data += 2;
	size -= 2;
	if (idx_len > size)
		idx_len = size;
	put_file("1.idx", data, idx_len, NULL, 0);
	put_file("1.dat", sb, sizeof(sb), data + idx_len, size - idx_len);
	if (volume_open(dir, "", 1, NULL, &v) != WFS_OK)
		return 0;
	for (uint64_t k = 1; k < 8; k++)
		(void)volume_read(v, k, 0, true, &b, &r);
	n.key = 0x7fffffffull;
	n.cookie = 0x1234;
	n.data = (const uint8_t *)"fuzz";
	n.data_size = 4;
	switch (volume_write(v, &n, &unchanged)) {
	case WFS_OK:
		break;
	case WFS_EPERM: /* the input already holds that key with another cookie */
		volume_unref(v);
		buf_free(&b);
		return 0;
	default:
		abort();
	}
	volume_unref(v);
	if (volume_open(dir, "", 1, NULL, &v) != WFS_OK)
		abort();
	if (volume_read(v, n.key, n.cookie, false, &b, &r) != WFS_OK || r.data_size != 4 ||
	    memcmp(r.data, "fuzz", 4))
		abort();
	volume_unref(v);
	buf_free(&b);
	return 0;
}
