/*
 * The client of the filer's metadata event stream (GET /.meta/subscribe,
 * docs/filer-events.md): a thread that keeps one stream open under a path
 * prefix, decodes each event line into its old and new entry and hands them
 * to the owner's callbacks. After a disconnect it resumes from the last tsNs
 * it saw, with exponential back-off (100 ms doubling, at most 2 s); a stream
 * silent for longer than the stall timeout (the filer sends heartbeats) is
 * dropped and reopened.
 *
 * Every callback runs on the stream's own thread, one at a time.
 */
#ifndef WEEDFS_CLIENT_META_STREAM_H
#define WEEDFS_CLIENT_META_STREAM_H

#include <stdint.h>
#include "client/entry.h"

struct meta_stream_opts {
	const char *filer;       /* "host:port" (copied) */
	const char *path_prefix; /* events under this path (copied) */
	int32_t signature;       /* leave out the events of requests that carried it; 0 = none */
	int heartbeat_seconds;   /* asked of the filer; 0 = 2 */
	int stall_seconds;       /* a silent stream is dropped after this; 0 = 10 */
	const char *thread_name; /* at most 15 bytes; NULL = "wfs-events" */
};

struct meta_stream_ops {
	/*
	 * A stream (re)opened and delivered its first line: what the owner cached
	 * while no event could arrive is suspect. May be NULL.
	 */
	void (*connected)(void *arg);
	/* A heartbeat: the stream is up and nothing happened. May be NULL. */
	void (*heartbeat)(void *arg);
	/*
	 * One event: old_e -> new_e (borrowed for the call; one may be NULL: a
	 * create or a delete). Entries leave inline content out
	 * (content_omitted).
	 */
	void (*event)(void *arg, const struct filer_entry *old_e, const struct filer_entry *new_e);
	/* The stream ended (it is reopened after the back-off). May be NULL. */
	void (*disconnected)(void *arg);
};

typedef struct meta_stream meta_stream;

/*
 * Starts the stream's thread (o's strings copied, ops kept: static). Aborts
 * when no thread can be made. http_client_global_init() must have run.
 */
meta_stream *meta_stream_start(const struct meta_stream_opts *o, const struct meta_stream_ops *ops,
			       void *arg);
/*
 * Stops the thread (within about a second: libcurl's progress tick) and
 * frees s; no callback runs after it returns. Not from a callback. NULL does
 * nothing.
 */
void meta_stream_stop(meta_stream *s);

#endif
