/*
 * A request body spilled to an anonymous temporary file while its CRC32C
 * (and, when asked, MD5) are computed, so a big upload costs a bounded buffer.
 *
 * DESIGN: the file is opened with O_TMPFILE in the volume's directory (or
 * created there and unlinked at once where O_TMPFILE is unsupported), so it
 * never has a name: a crash, a client that hangs up or a refused upload
 * leaves nothing behind, and closing it frees its blocks. Being on the
 * volume's file system lets copy_file_range move the data into the .dat
 * without a trip through user space.
 * Not thread-safe: one thread at a time (an upload hands it from pool job
 * to pool job, one in flight).
 */
#ifndef WEEDFS_VOLUME_SPILL_H
#define WEEDFS_VOLUME_SPILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"

typedef struct spill spill;

/* Creates an empty spill file in dir; md5 also hashes with MD5. Blocking. */
wfs_err spill_new(const char *dir, bool md5, spill **out);
/* Appends len bytes (borrowed) and extends the hashes. WFS_ENOSPC, WFS_EIO. Blocking. */
wfs_err spill_write(spill *s, const void *data, size_t len);
/* Empties the file and restarts the hashes. */
wfs_err spill_reset(spill *s);
/* The file (borrowed; data from offset 0), its size and the data's CRC32C. */
int spill_fd(const spill *s);
uint64_t spill_size(const spill *s);
uint32_t spill_crc(const spill *s);
/* True if the data's MD5 is b64 (base64, as in Content-MD5). Needs md5 at spill_new. */
bool spill_md5_matches(spill *s, const char *b64);
/* Closes (and so removes) the file. NULL does nothing. */
void spill_free(spill *s);

#endif
