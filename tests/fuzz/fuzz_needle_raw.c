/*
 * libFuzzer target: the raw needle record checks a replica applies before
 * appending what another replica sent (POST /admin/volume/needle_raw and a
 * volume copy's tail): the in-memory check and the one reading a file in
 * pieces must agree on every input, and an accepted record is exactly one
 * needle of the size its header declares.
 */
#include "config.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "server/volume/volume.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	uint8_t *copy = malloc(size ? size : 1);
	struct needle n;
	uint64_t key = 0;
	uint32_t body = 0;
	wfs_err mem, file;

	if (fd < 0 && (fd = memfd_create("fuzz_needle_raw", 0)) < 0)
		abort();
	/* a private copy so reads past the input are caught by ASan */
	memcpy(copy, data, size);
	mem = needle_raw_check(copy, size, &n);
	if (ftruncate(fd, 0) < 0 || pwrite(fd, copy, size, 0) != (ssize_t)size)
		abort();
	file = volume_check_record_fd(fd, 0, size, &key, &body);
	if (mem == WFS_OK) {
		/* one whole record: the file check sees the same one */
		if (needle_disk_size(n.size) != size || n.key == 0 || file != WFS_OK ||
		    key != n.key || body != n.size)
			abort();
	} else if (file == WFS_OK && needle_disk_size(body) == size) {
		abort(); /* the file check took what the memory check refused */
	}
	free(copy);
	return 0;
}
