/*
 * Large transient buffers (request bodies, file pieces) recycled through a
 * bounded process-wide stash. glibc gives blocks this large back to the kernel
 * when they are freed, so each new one faulted in and zeroed every page the
 * next body was copied into: as much CPU as the copy itself.
 */
#ifndef WEEDFS_BIGBUF_H
#define WEEDFS_BIGBUF_H

#include <stddef.h>
#include <stdint.h>
#include "buf.h"

/* Requests below this are plain mallocs (glibc reuses those itself). */
#define BIGBUF_MIN (256u << 10)

/*
 * A block of at least n bytes (*cap, unless cap is NULL: its usable size), a
 * recycled one when the stash has one no larger than 2n. Free it with
 * bigbuf_put, or with free(). Any thread.
 */
void *bigbuf_get(size_t n, size_t *cap);
/*
 * Makes room in b for a body of total bytes announced before it arrives
 * (Content-Length), in one allocation instead of a chain of doublings, a
 * recycled block when b is still empty. Over BIGBUF_PRESIZE_MAX nothing is
 * reserved (the body grows as it comes), so a bogus length asks for nothing.
 */
#define BIGBUF_PRESIZE_MAX (256u << 20)
void bigbuf_presize(buf *b, uint64_t total);
/* Keeps p (from bigbuf_get or any malloc) for reuse while the stash has room, else frees it. */
void bigbuf_put(void *p);
/* The bytes the stash keeps now (for tests and status pages). Any thread. */
size_t bigbuf_kept_bytes(void);

#endif
