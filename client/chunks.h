/*
 * Chunk lists: which chunk supplies each byte of a file, what an overwrite or
 * truncate leaves unreferenced, and manifest chunks (a blob on a volume that
 * lists further chunks, so a file with thousands of chunks keeps a few in its
 * entry).
 *
 * Overlap rule: where chunks overlap, the one with the larger mtime_ns wins;
 * on equal mtime_ns the later one in the list wins. So an overwrite appends a
 * chunk and never rewrites an old one.
 *
 * The interval functions work on resolved lists (no manifest chunks): resolve
 * first with chunks_resolve_manifests. All functions are pure and may be
 * called from any thread.
 */
#ifndef WEEDFS_CLIENT_CHUNKS_H
#define WEEDFS_CLIENT_CHUNKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "err.h"
#include "client/entry.h"

#define CHUNKS_MANIFEST_VERSION 1
/* Nesting depth of manifests (a manifest listing manifests) that resolution follows. */
#define CHUNKS_MANIFEST_DEPTH_MAX 4

/* One visible piece of a read: len bytes of chunk `chunk` at chunk_offset land at file_offset. */
struct chunk_view {
	size_t chunk; /* index into the list given */
	uint64_t file_offset;
	uint64_t chunk_offset; /* offset inside the chunk's data */
	uint64_t len;
};

/*
 * The visible pieces of [off, off+len), ascending by file_offset, adjacent
 * pieces of one chunk merged. Gaps between views are holes (read as zeros).
 * *views is newly allocated (caller frees; NULL when *nviews is 0).
 * WFS_EINVAL if the list holds a manifest chunk.
 */
wfs_err chunks_read_plan(const struct filer_chunk *c, size_t n, uint64_t off, uint64_t len,
			 struct chunk_view **views, size_t *nviews);

/*
 * mask[i] (n entries, caller's array) is set to whether chunk i supplies any
 * byte of [0, file_size). WFS_EINVAL if the list holds a manifest chunk.
 */
wfs_err chunks_visible_mask(const struct filer_chunk *c, size_t n, uint64_t file_size, bool *mask);

/*
 * Removes from the list (c, *n) every chunk that supplies no byte of
 * [0, file_size), keeping the order of the rest, and appends the removed
 * chunks (ownership moves) to *garbage, *n_garbage (a growable array the caller
 * frees with filer_chunks_free; start with NULL/0). WFS_EINVAL on a manifest.
 */
wfs_err chunks_compact(struct filer_chunk *c, size_t *n, uint64_t file_size,
		       struct filer_chunk **garbage, size_t *n_garbage);

/*
 * Cuts the list to a file of `size` bytes: chunks starting at or past size move
 * to the garbage array (as above), chunks crossing it are shortened so a later
 * extension reads zeros there. WFS_EINVAL on a manifest chunk.
 */
wfs_err chunks_truncate(struct filer_chunk *c, size_t *n, uint64_t size,
			struct filer_chunk **garbage, size_t *n_garbage);

/*
 * Indices (ascending, newly allocated into *idx, caller frees) of the chunks
 * of old whose file id appears nowhere in new_: what a caller must free after
 * replacing an entry's list old with new_ (compare file ids, not intervals).
 */
void chunks_unreferenced(const struct filer_chunk *old, size_t n_old,
			 const struct filer_chunk *new_, size_t n_new, size_t **idx, size_t *n_idx);

/* Appends the manifest blob listing c[0..n) to out (format: docs/filer-entry-format.md). */
void chunks_manifest_encode(const struct filer_chunk *c, size_t n, buf *out);
/* Parses a manifest blob; on WFS_OK the caller owns *out. WFS_ECORRUPT if malformed. */
wfs_err chunks_manifest_decode(const uint8_t *p, size_t len, struct filer_chunk **out, size_t *n);

/* Fetches the blob of file id fid into out (appending). Called synchronously. */
typedef wfs_err (*chunks_fetch_fn)(void *ctx, const char *fid, buf *out);
/* Stores blob and returns its new file id in *fid (newly allocated, the caller frees). */
typedef wfs_err (*chunks_save_fn)(void *ctx, const void *blob, size_t len, char **fid);

/*
 * Replaces every manifest chunk by the chunks it lists, recursively up to
 * CHUNKS_MANIFEST_DEPTH_MAX, keeping list order (so equal-mtime ties still
 * resolve the same way). *out is newly allocated. The first error from fetch,
 * WFS_ECORRUPT for a bad blob or too deep nesting, WFS_ETOOBIG beyond
 * FILER_CHUNKS_MAX resolved chunks.
 */
wfs_err chunks_resolve_manifests(const struct filer_chunk *c, size_t n, chunks_fetch_fn fetch,
				 void *ctx, struct filer_chunk **out, size_t *nout);

/*
 * Folds runs of `batch` consecutive non-manifest chunks into manifest chunks
 * (each blob stored through save), leaving shorter runs and existing manifests
 * in place. A manifest chunk spans its members (offset = lowest offset, size to
 * the highest end, mtime = the newest). *out is a new list; c is unchanged.
 * If nothing reaches batch chunks, *out is a copy.
 */
wfs_err chunks_manifestize(const struct filer_chunk *c, size_t n, size_t batch, chunks_save_fn save,
			   void *ctx, struct filer_chunk **out, size_t *nout);

#endif
