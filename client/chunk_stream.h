/*
 * A byte range of a chunked file streamed into an HTTP response: a window of
 * pieces fetched in parallel on an I/O pool and written strictly in file
 * order, paused while the connection's output is above its high-water mark.
 * The filer's GET (filer_read.c) and the S3 gateway's GetObject share it.
 * chunk_stream.c's DESIGN comment says how the window works.
 */
#ifndef WEEDFS_CLIENT_CHUNK_STREAM_H
#define WEEDFS_CLIENT_CHUNK_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "client/blob_client.h"
#include "client/entry.h"
#include "http_server.h"

#define CHUNK_STREAM_SLOTS_DEFAULT 16

struct chunk_stream_opts {
	size_t piece_size; /* bytes per fetch at most; 0 = CHUNK_READ_PIECE_DEFAULT */
	size_t read_ahead; /* the window holds at most read_ahead * piece_size bytes;
			      0 = CHUNK_READ_AHEAD_DEFAULT; more than slots counts as slots */
	size_t slots;      /* fetches in flight at most; 0 = CHUNK_STREAM_SLOTS_DEFAULT */
	bool head_only;    /* HEAD: head(length) then done(WFS_OK) without fetching */
};

struct chunk_stream_ops {
	/* Runs fn(arg) on an I/O worker; false when the pool is stopping. Loop thread. */
	bool (*submit)(void *owner, void (*fn)(void *arg), void *arg);
	/*
	 * The first piece is in hand (or the range is empty, or head_only): the owner
	 * adds its headers and calls http_resp_start(req, status, length). Once. Loop.
	 */
	void (*head)(void *owner, int64_t length);
	/*
	 * The stream is over, no fetch is running: err is WFS_OK when the whole
	 * range was sent, else the first failure (err_pos its file offset); a
	 * client that went away ends with WFS_EUNAVAIL at the offset reached
	 * (http_req_closed(req) then tells it from a failed fetch: no answer can
	 * reach anyone, nothing worth a log line). started tells whether head
	 * ran. The owner ends the response
	 * (http_resp_end on success; an error answer when !started, since nothing
	 * was sent; http_resp_abort otherwise) and frees the stream
	 * (chunk_stream_free) and its own state; the stream touches nothing
	 * after done returns. Loop thread.
	 */
	void (*done)(void *owner, wfs_err err, uint64_t err_pos, bool started);
	/* Optional: rewrites a fetched piece (len bytes at file offset off) in place before it
	   is written, e.g. decrypts it. I/O worker. */
	void (*transform)(void *owner, uint64_t off, void *data, size_t len);
};

typedef struct chunk_stream chunk_stream;

/*
 * A stream of bytes [offset, offset+len) of the file described by chunks
 * (taken: resolved, no manifest chunk; freed with the stream) into req's
 * response, fetching through bc (borrowed, must outlive the stream; the
 * fetches block, so submit's pool must not be bc's own). o may be NULL
 * (defaults) and is copied; ops is kept (static), owner passed to it.
 * NULL with *err (WFS_EINVAL: a manifest chunk; chunks are then freed too).
 * Any thread.
 */
chunk_stream *chunk_stream_new(http_req *req, blob_client *bc, struct filer_chunk *chunks, size_t n,
			       uint64_t offset, uint64_t len, const struct chunk_stream_opts *o,
			       const struct chunk_stream_ops *ops, void *owner, wfs_err *err);
/* Starts streaming; ops->done may run before it returns. Loop thread of req. */
void chunk_stream_start(chunk_stream *s);
/*
 * Frees s: from ops->done, or after the server stopped (loops gone, pools
 * joined) to drop a stream that never finished. NULL does nothing.
 */
void chunk_stream_free(chunk_stream *s);

#endif
