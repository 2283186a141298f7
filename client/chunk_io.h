/*
 * The filer's data path: a chunk writer that cuts a byte stream into chunks
 * and uploads them in parallel with bounded memory, and a chunk reader that
 * streams any byte range of a file from its chunk list (newest-wins overlaps,
 * holes as zeros, manifests resolved, replica failover).
 *
 * Both are blocking and meant for the filer's worker threads (never a libevent
 * loop thread, never a worker of the blob_client's own pool).
 */
#ifndef WEEDFS_CLIENT_CHUNK_IO_H
#define WEEDFS_CLIENT_CHUNK_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "client/blob_client.h"
#include "client/entry.h"

#define CHUNK_SIZE_DEFAULT      (4u << 20)
#define CHUNK_SIZE_MAX          (1024u << 20)
#define CHUNK_IN_FLIGHT_DEFAULT 4
#define CHUNK_IN_FLIGHT_MAX     64

struct chunk_writer_opts {
	uint64_t chunk_size;    /* bytes per chunk (the filer's -maxMB); 0 = CHUNK_SIZE_DEFAULT */
	uint64_t offset;        /* file offset of the first byte written (op=append, overwrites) */
	size_t inline_max;      /* a stream of at most this many bytes is kept inline instead of
				   uploaded (saveInside); 0 = never. Capped at chunk_size. */
	const char *collection; /* assignment parameters, NULL = master's default (all copied) */
	const char *replication;
	const char *ttl;
	const char *data_center;
	const char *rack;
	bool fsync;        /* ask volume servers to fsync each chunk */
	int max_in_flight; /* parallel uploads; 0 = CHUNK_IN_FLIGHT_DEFAULT */
	bool encrypt;      /* seal each chunk with its own key (-encryptVolumeData, chunk_cipher.h) */
	/* optional: called on the upload worker as soon as a chunk's blob is stored,
	   before the writer lists it (the filer records it in its garbage queue) */
	void (*on_uploaded)(void *arg, const char *fid);
	void *on_uploaded_arg;
};

typedef struct chunk_writer chunk_writer;

/*
 * A writer uploading through bc (borrowed; must outlive the writer). o is
 * copied (NULL = all defaults). WFS_EINVAL (NULL returned) when chunk_size or
 * max_in_flight is out of range. A writer is used by one thread at a time.
 */
chunk_writer *chunk_writer_new(blob_client *bc, const struct chunk_writer_opts *o, wfs_err *err);

/*
 * Appends len bytes (borrowed, copied). Whenever chunk_size bytes are buffered
 * they are handed to an upload worker; while max_in_flight uploads are running
 * this call waits, so the writer never holds more than
 * (max_in_flight + 1) * chunk_size bytes. Returns the first upload error
 * (after which the caller aborts); WFS_EINVAL after finish or abort.
 */
wfs_err chunk_writer_write(chunk_writer *cw, const void *data, size_t len);

/*
 * Uploads what is buffered, waits for every upload and hands the chunk list,
 * ascending by offset, to the caller (*chunks owned by the caller, free with
 * filer_chunks_free; NULL with *n = 0 for an empty or inline stream). On an
 * error every chunk already uploaded is deleted. Each chunk carries its fid,
 * offset, size, the mtime when it was cut and the volume's eTag.
 */
wfs_err chunk_writer_finish(chunk_writer *cw, struct filer_chunk **chunks, size_t *n);

/*
 * After a successful finish: true when the stream fit in inline_max and was not
 * uploaded; *data (borrowed from cw, valid until chunk_writer_free; may be NULL
 * when *len is 0) and *len are then the content to store in the entry.
 */
bool chunk_writer_inline(const chunk_writer *cw, const uint8_t **data, size_t *len);

/*
 * Waits for the running uploads and copies the chunks uploaded so far (not the
 * buffered tail) into *chunks (caller frees with filer_chunks_free).
 */
void chunk_writer_uploaded(chunk_writer *cw, struct filer_chunk **chunks, size_t *n);

/* Bytes written so far. */
uint64_t chunk_writer_size(const chunk_writer *cw);

/* Highest number of chunk-buffer bytes held at once (the memory bound, for tests). */
size_t chunk_writer_mem_peak(chunk_writer *cw);

/*
 * Waits for running uploads, then deletes every chunk uploaded so far. Returns the
 * first delete error (the chunks it could not delete are left for the garbage
 * queue: log lines name them). The writer accepts no more writes.
 */
wfs_err chunk_writer_abort(chunk_writer *cw);

/* Frees the writer; if neither finish nor abort succeeded it aborts first. NULL does nothing. */
void chunk_writer_free(chunk_writer *cw);

#define CHUNK_READ_PIECE_DEFAULT (4u << 20)
#define CHUNK_READ_AHEAD_DEFAULT 4

/*
 * One piece of a planned read: len bytes landing at file_offset, taken from
 * blob fid at chunk_off, or zeros (a hole) when fid is NULL. A piece of a
 * sealed chunk is its whole view, whatever the piece size (the blob is opened
 * whole).
 */
struct chunk_piece {
	uint64_t file_offset, len;
	const char *fid; /* borrowed from the chunk list given to chunk_pieces_new */
	const struct filer_chunk *chunk; /* the same chunk (borrowed), NULL for a hole */
	uint64_t chunk_off;
	bool whole; /* the piece is its whole chunk: read without Range (the volume checks CRC) */
};

typedef struct chunk_pieces chunk_pieces;

/*
 * Plans bytes [offset, offset+len) of a file described by chunks (borrowed,
 * must be resolved: no manifest chunks, and must outlive the plan) as pieces of
 * at most piece_size bytes (0 = CHUNK_READ_PIECE_DEFAULT), in file order, holes
 * included. WFS_EINVAL on a manifest chunk. Any thread; one thread at a time.
 */
wfs_err chunk_pieces_new(const struct filer_chunk *chunks, size_t n, uint64_t offset, uint64_t len,
			 size_t piece_size, chunk_pieces **out);
/* The next piece into *p; false once the range is covered. */
bool chunk_pieces_next(chunk_pieces *it, struct chunk_piece *p);
/* NULL does nothing. */
void chunk_pieces_free(chunk_pieces *it);

/*
 * Appends piece p's bytes to out (zeros for a hole), with replica failover
 * (blob_client_read). WFS_ECORRUPT when a blob is shorter than its chunk says.
 * Blocking: a worker thread (for a filer, its I/O pool).
 */
wfs_err chunk_piece_fetch(blob_client *bc, const struct chunk_piece *p, buf *out);

/* Receives the bytes of a read in file order; a non-OK return stops the read. */
typedef wfs_err (*chunk_sink_fn)(void *arg, const void *data, size_t len);

struct chunk_read_opts {
	size_t piece_size; /* bytes per GET; 0 = CHUNK_READ_PIECE_DEFAULT, at most CHUNK_SIZE_MAX */
	int read_ahead;    /* pieces fetched in parallel; 0 = CHUNK_READ_AHEAD_DEFAULT, at most
			      CHUNK_IN_FLIGHT_MAX */
};

/*
 * Streams bytes [offset, offset+len) of a file of file_size bytes described by
 * chunks (borrowed; may hold manifest chunks, which are fetched and resolved
 * first) to sink, clipped to file_size: exactly min(len, file_size - offset)
 * bytes, holes as zeros. Only the needed byte ranges are fetched, piece by piece,
 * at most read_ahead pieces held at once. A failed replica is skipped (and its
 * location forgotten); WFS_EUNAVAIL when no replica of a chunk answers,
 * WFS_ENOENT when a chunk's blob is gone, or the sink's error.
 */
wfs_err chunk_read(blob_client *bc, const struct filer_chunk *chunks, size_t n, uint64_t file_size,
		   uint64_t offset, uint64_t len, chunk_sink_fn sink, void *arg);
/* chunk_read with explicit tuning; o may be NULL. */
wfs_err chunk_read_ex(blob_client *bc, const struct filer_chunk *chunks, size_t n,
		      uint64_t file_size, uint64_t offset, uint64_t len, chunk_sink_fn sink,
		      void *arg, const struct chunk_read_opts *o);

/*
 * Replaces manifest chunks by the chunks they list (fetched through bc). *out is
 * newly allocated (free with filer_chunks_free). Errors as chunks_resolve_manifests
 * and blob_client_read.
 */
wfs_err chunk_resolve_manifests(blob_client *bc, const struct filer_chunk *chunks, size_t n,
				struct filer_chunk **out, size_t *nout);

/*
 * Packs runs of `batch` chunks (0 = 1000) into manifest chunks, each manifest blob
 * uploaded with o's assignment parameters (o may be NULL). *out is a new list
 * (free with filer_chunks_free); chunks is unchanged. On an error the manifests
 * already uploaded are deleted.
 */
wfs_err chunk_manifestize(blob_client *bc, const struct chunk_writer_opts *o,
			  const struct filer_chunk *chunks, size_t n, size_t batch,
			  struct filer_chunk **out, size_t *nout);

#endif
