/* Big needles: spill files, writes from a file, streamed reads, repair and vacuum of them. */
#include "config.h"
#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crc32c.h"
#include "tap.h"
#include "util.h"
#include "server/volume/spill.h"
#include "server/volume/volume.h"

#define MiB (1u << 20)
#define BIG (3 * MiB + 12345)

static char dir[256];

static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

/* Entries of dir other than . and .. */
static int dir_entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

static off_t fsize(const char *name)
{
	char p[512];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) < 0 ? -1 : st.st_size;
}

static void test_spill(const uint8_t *data)
{
	unsigned char md[16], b64[32];
	spill *s = NULL;
	uint8_t *back = xmalloc(BIG);
	int before = dir_entries();

	ok(spill_new(dir, true, &s) == WFS_OK, "spill created");
	is_int(dir_entries(), before, "the spill file has no name");
	for (size_t off = 0; off < BIG; off += 100000)
		spill_write(s, data + off, MIN((size_t)100000, BIG - off));
	is_int(spill_size(s), BIG, "size");
	ok(spill_crc(s) == crc32c_update(0, data, BIG), "incremental CRC32C");
	EVP_Digest(data, BIG, md, NULL, EVP_md5(), NULL);
	EVP_EncodeBlock(b64, md, 16);
	ok(spill_md5_matches(s, (const char *)b64), "incremental MD5");
	ok(!spill_md5_matches(s, "AAAAAAAAAAAAAAAAAAAAAA=="), "wrong MD5");
	ok(pread(spill_fd(s), back, BIG, 0) == BIG && !memcmp(back, data, BIG), "content");
	ok(spill_reset(s) == WFS_OK && spill_size(s) == 0 && spill_crc(s) == 0, "reset");
	spill_write(s, "abc", 3);
	ok(spill_crc(s) == crc32c_update(0, "abc", 3), "hashes restart after reset");
	spill_free(s);
	spill_free(NULL);
	is_int(dir_entries(), before, "nothing left behind");
	free(back);
}

static wfs_err write_big(volume *v, uint64_t key, uint32_t cookie, const uint8_t *data, size_t len,
			 bool *unchanged)
{
	struct needle n = {0};
	spill *s = NULL;
	wfs_err err = spill_new(dir, false, &s);
	if (err)
		return err;
	spill_write(s, data, len);
	n.key = key;
	n.cookie = cookie;
	n.data_size = (uint32_t)len;
	n.flags = NEEDLE_FLAG_HAS_NAME;
	n.name = "big.bin";
	n.name_len = 7;
	err = volume_write_fd(v, &n, spill_fd(s), spill_crc(s), unchanged);
	spill_free(s);
	return err;
}

/* Reads key through volume_read_ex with a 1 MiB inline limit; true if it holds data. */
static bool reads_back(volume *v, uint64_t key, uint32_t cookie, const uint8_t *data, size_t len,
		       bool *streamed)
{
	struct needle_blob blob;
	struct needle n;
	buf b = BUF_INIT;
	bool good = false;
	uint8_t *p;

	if (volume_read_ex(v, key, cookie, false, MiB, &b, &n, &blob))
		goto out;
	*streamed = blob.fd >= 0;
	if (blob.fd < 0) {
		good = n.data_size == len && !memcmp(n.data, data, len);
		goto out;
	}
	p = xmalloc(len);
	good = n.data == NULL && n.data_size == len && n.name_len == 7 &&
	       !memcmp(n.name, "big.bin", 7) &&
	       pread(blob.fd, p, len, (off_t)blob.off) == (ssize_t)len && !memcmp(p, data, len) &&
	       n.crc == crc32c_update(0, data, len);
	free(p);
	close(blob.fd);
out:
	buf_free(&b);
	return good;
}

static void test_volume(const uint8_t *data, const uint8_t *other)
{
	struct volume_create c = {0};
	struct needle n = {0};
	volume *v = NULL;
	bool unchanged = false, streamed = false;
	off_t size;
	uint8_t rec[32];
	uint32_t sz;
	int fd;

	ok(volume_open(dir, "", 1, &c, &v) == WFS_OK, "open volume");
	ok(write_big(v, 1, 11, data, BIG, &unchanged) == WFS_OK && !unchanged, "write from a file");
	ok(reads_back(v, 1, 11, data, BIG, &streamed) && streamed, "big needle streams");
	n.key = 2;
	n.cookie = 22;
	n.data = (const uint8_t *)"small";
	n.data_size = 5;
	ok(volume_write(v, &n, &unchanged) == WFS_OK, "small write");
	ok(reads_back(v, 2, 22, (const uint8_t *)"small", 5, &streamed) && !streamed,
	   "small needle is read inline");

	size = fsize("1.dat");
	ok(write_big(v, 1, 11, data, BIG, &unchanged) == WFS_OK && unchanged,
	   "same big content is unchanged");
	is_int(fsize("1.dat"), size, "and appends nothing");
	ok(write_big(v, 1, 11, other, BIG, &unchanged) == WFS_OK && !unchanged,
	   "same size, other content is a change");
	ok(reads_back(v, 1, 11, other, BIG, &streamed), "the new content reads back");
	ok(write_big(v, 1, 12, data, BIG, &unchanged) == WFS_EPERM, "other cookie refused");
	n.key = 1;
	n.cookie = 11;
	n.data = (const uint8_t *)"tiny";
	n.data_size = 4;
	ok(volume_write(v, &n, &unchanged) == WFS_OK && !unchanged,
	   "small overwrite of a big needle");
	ok(write_big(v, 3, 33, data, BIG, &unchanged) == WFS_OK, "another big needle");

	/* reopening checks the last needle's CRC without reading it whole */
	volume_unref(v);
	v = NULL;
	ok(volume_open(dir, "", 1, &c, &v) == WFS_OK, "reopen");
	ok(reads_back(v, 3, 33, data, BIG, &streamed), "big needle survives a reopen");
	/* a torn big needle at the end is cut off on load */
	volume_unref(v);
	size = fsize("1.dat");
	{
		char p[512];
		snprintf(p, sizeof(p), "%s/1.dat", dir);
		fd = open(p, O_RDWR);
		ok(fd >= 0 && pwrite(fd, "X", 1, size - 100) == 1, "damage the last needle");
		close(fd);
	}
	v = NULL;
	ok(volume_open(dir, "", 1, &c, &v) == WFS_OK, "reopen after damage");
	ok(!reads_back(v, 3, 33, data, BIG, &streamed) && fsize("1.dat") < size,
	   "the torn needle is cut off");
	ok(reads_back(v, 2, 22, (const uint8_t *)"small", 5, &streamed), "earlier needles stay");
	ok(write_big(v, 3, 33, data, BIG, &unchanged) == WFS_OK, "write it again");

	/* vacuum copies big needles without reading them whole */
	ok(volume_compact(v) == WFS_OK && volume_commit(v) == WFS_OK, "vacuum");
	ok(reads_back(v, 3, 33, data, BIG, &streamed) && streamed, "big needle after vacuum");
	ok(fsize("1.dat") < size, "vacuum dropped the overwritten needles");

	/* DELETE ?ts= is the deletion record's append time */
	ok(volume_delete(v, 3, 33, 1700000000ull * 1000000000ull, &sz) == WFS_OK, "delete at ts");
	{
		char p[512];
		snprintf(p, sizeof(p), "%s/1.dat", dir);
		fd = open(p, O_RDONLY);
		ok(pread(fd, rec, sizeof(rec), fsize("1.dat") - 32) == 32 &&
			   get_be32(rec + 12) == 0 &&
			   get_be64(rec + 20) == 1700000000ull * 1000000000ull,
		   "deletion record carries the given time");
		close(fd);
	}
	volume_unref(v);
}

int main(void)
{
	char cmd[600];
	uint8_t *data = xmalloc(BIG), *other = xmalloc(BIG);

	snprintf(dir, sizeof(dir), "/tmp/test_volume_large.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	pattern(data, BIG, 1);
	pattern(other, BIG, 2);
	test_spill(data);
	test_volume(data, other);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# cleanup failed\n");
	free(data);
	free(other);
	return done_testing();
}
