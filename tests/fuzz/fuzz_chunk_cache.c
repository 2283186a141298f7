/*
 * Fuzzes the chunk cache's on-disk entry parser with arbitrary cache files.
 * The first input byte selects options, the rest is the file image:
 *   bit 0: patch the hash field with the xxh64 of what follows the header, so
 *          inputs get past the checksum and reach the field checks behind it;
 *   bit 1: also feed the image through the real disk path (a cache file
 *          overwritten with it, then read): a hit must return the parsed data,
 *          a miss must delete the file.
 * What parses must lie inside the input and re-encode to the same header.
 */
#include "config.h"
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include "mount/chunk_cache.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FID "3,01637037d6"

static chunk_cache *cache;
static char *cache_dir;

static void remove_cache_dir(void)
{
	char *cmd = xasprintf("rm -rf '%s'", cache_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", cache_dir);
	free(cmd);
}

static void disk_path(const uint8_t *img, size_t n, const struct chunk_cache_entry *parsed,
		      bool parsed_ok)
{
	if (!cache) {
		cache_dir = xasprintf("/tmp/fuzz_chunk_cache.%d", (int)getpid());
		wfs_err err;
		cache = chunk_cache_open(cache_dir, 0, 1 << 20, &err);
		if (!cache)
			abort();
		atexit(remove_cache_dir);
	}
	chunk_cache_put(cache, FID, "seed", 4);
	char *p = chunk_cache_entry_path(cache, FID);
	int fd = open(p, O_WRONLY | O_TRUNC);
	if (fd < 0)
		abort();
	if (n && write(fd, img, n) != (ssize_t)n)
		abort();
	close(fd);
	uint8_t dst[8];
	bool valid = parsed_ok && parsed->fid_len == strlen(FID) &&
		     !memcmp(parsed->fid, FID, parsed->fid_len);
	size_t want = valid ? (size_t)MIN(parsed->len, 8) : MIN(n, 8);
	bool hit = chunk_cache_read(cache, FID, 0, want, dst);
	if (hit && (!valid || memcmp(dst, parsed->data, want)))
		abort(); /* a hit must be exactly the verified data */
	if (!hit && valid)
		abort(); /* a valid file must be read */
	if (!hit && access(p, F_OK) == 0 && !valid)
		abort(); /* a bad file must be deleted */
	/* Leave the cache empty for the next input (the entry is re-put each time). */
	if (hit)
		unlink(p);
	uint8_t b;
	(void)chunk_cache_read(cache, FID, 0, 0, &b);
	free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1 << 16))
		return 0;
	uint8_t mode = data[0];
	size_t n = size - 1;
	uint8_t *img = xmalloc(n + 1);
	memcpy(img, data + 1, n);
	if ((mode & 1) && n >= CHUNK_CACHE_HEADER_MIN) {
		size_t hlen = CHUNK_CACHE_HEADER_MIN + get_be16(img + 6);
		if (hlen <= n)
			put_be64(img + 16, XXH64(img + hlen, n - hlen, 0));
	}
	struct chunk_cache_entry e;
	bool parsed_ok = chunk_cache_parse_entry(img, n, &e) == WFS_OK;
	if (parsed_ok) {
		const uint8_t *lo = img, *hi = img + n;
		if ((const uint8_t *)e.fid < lo || (const uint8_t *)e.fid + e.fid_len > hi ||
		    e.data < lo || e.data + e.len != hi || e.fid_len == 0 ||
		    e.fid_len > CHUNK_CACHE_FID_MAX)
			abort();
		char fid[CHUNK_CACHE_FID_MAX + 1];
		memcpy(fid, e.fid, e.fid_len);
		fid[e.fid_len] = 0;
		uint8_t hdr[CHUNK_CACHE_HEADER_MIN + CHUNK_CACHE_FID_MAX];
		size_t hlen = chunk_cache_encode_header(hdr, sizeof(hdr), fid, e.data, e.len);
		if (hlen != (size_t)(e.data - img) || memcmp(hdr, img, hlen))
			abort();
	}
	if (mode & 2)
		disk_path(img, n, &e, parsed_ok);
	free(img);
	return 0;
}
