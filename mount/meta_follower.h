/*
 * The mount's follower of the filer's metadata event stream
 * (GET /.meta/subscribe, docs/filer-events.md): a thread that reads the
 * events under the mount's root and, for each name an event touches, drops
 * the mount's cached entry, tells the kernel to forget the name and the
 * inode's attributes and pages, and gives open files that someone else
 * changed their new base (file_data_reset) unless they hold dirty data.
 * A change made through another mount or the filer's HTTP API is therefore
 * seen within about the stream's latency (milliseconds), well within a
 * second. The stream, its resume after a disconnect and its back-off are
 * client/meta_stream.h's.
 */
#ifndef WEEDFS_MOUNT_META_FOLLOWER_H
#define WEEDFS_MOUNT_META_FOLLOWER_H

#include "fuse_ops.h"

typedef struct meta_follower meta_follower;

/* Starts following filer_addr ("host:port", copied) for the mount m (borrowed; m->se set). */
meta_follower *meta_follower_start(struct mount_ctx *m, const char *filer_addr);
/* Stops the thread (within about a second: libcurl's progress tick) and frees f. NULL does nothing.
 */
void meta_follower_stop(meta_follower *f);

#endif
