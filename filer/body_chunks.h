/*
 * A request body streamed into a chunk writer with back-pressure: the shared
 * data path of PUT/POST uploads (filer_write.c) and TUS PATCH (filer_tus.c).
 *
 * The owner makes one per request, starts it, and gets called back: feed and
 * end on the loop thread while the body arrives, commit on the I/O pool once
 * the whole body is in chunks, respond on the loop thread when the job's
 * response is set (after commit, or after a failure that aborted the writer).
 * With ops->journal, chunks uploaded while the body streams are recorded in
 * the garbage queue under a lease, so a filer killed mid-body leaks none; the
 * owner's commit claims them (body_chunks_claim) in the transaction that
 * references them.
 */
#ifndef WEEDFS_FILER_BODY_CHUNKS_H
#define WEEDFS_FILER_BODY_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "client/chunk_io.h"
#include "filer/filer_int.h"

struct body_chunks;

struct body_chunks_ops {
	/* names the data in errors: "could not store <what>: <error>" */
	const char *what;
	/* record uploaded chunks in the garbage queue while the body streams */
	bool journal;
	/*
	 * Loop thread, optional: one piece of the body (borrowed). Keeps what it
	 * wants with body_chunks_append; a malformed body: body_chunks_fail.
	 * NULL appends every byte.
	 */
	void (*feed)(void *owner, const char *data, size_t len);
	/* Loop thread: the body ended (err as http_end_fn); may call body_chunks_fail. */
	void (*end)(void *owner, wfs_err err);
	/*
	 * I/O pool: the body is stored; chunks (owned by the callee, ascending by
	 * offset; NULL when n is 0) hold size bytes. Sets the job's response.
	 * Returns true when a committed transaction that called body_chunks_claim
	 * now references the chunks; false leaves the recorded chunks to be freed.
	 */
	bool (*commit)(void *owner, struct filer_chunk *chunks, size_t n, uint64_t size);
	/* Loop thread: the job's response is set; send it and free all (body_chunks_free too). */
	void (*respond)(void *owner);
};

/*
 * A writer for j's body with o's chunking (copied). ops (static) and owner are
 * kept. NULL with *err (WFS_EINVAL) when o is out of range. Loop thread.
 */
struct body_chunks *body_chunks_new(struct fjob *j, const struct chunk_writer_opts *o,
				    const struct body_chunks_ops *ops, void *owner, wfs_err *err);

/* Streams the body (at most limit bytes, else end gets WFS_ETOOBIG). Loop thread. */
void body_chunks_start(struct body_chunks *b, uint64_t limit);

/* Keeps len body bytes (borrowed, copied). From ops->feed. Loop thread. */
void body_chunks_append(struct body_chunks *b, const char *data, size_t len);

/*
 * Fails the request with status and message (the first failure wins): the
 * writer is aborted, its chunks deleted, and respond is called. From feed or
 * end. Loop thread.
 */
void body_chunks_fail(struct body_chunks *b, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Inside the owner's commit transaction tx: takes the chunks recorded while
 * the body streamed off the garbage queue, so they are kept if tx commits and
 * stay queued if it does not. Nothing to do without ops->journal. From ops->commit.
 */
wfs_err body_chunks_claim(struct body_chunks *b, struct filer_tx *tx);

/*
 * After the body is stored: true if it fit the writer's inline_max; *data
 * (borrowed, valid until body_chunks_free) and *len are the content. From ops->commit.
 */
bool body_chunks_inline(const struct body_chunks *b, const uint8_t **data, size_t *len);

/*
 * Frees b; an unfinished writer is aborted (its chunks deleted). NULL does
 * nothing. Loop thread, or any thread once the server stopped.
 */
void body_chunks_free(struct body_chunks *b);

#endif
