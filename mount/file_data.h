/*
 * The data of a file open on the mount: the clean base the filer last
 * described (size, inline content, chunk list) plus the dirty bytes written
 * since, which win over the base. One per INODE, shared by every open handle
 * of it (created at the first open, freed when the last handle is released
 * and nothing is dirty).
 *
 * Reads: dirty bytes, else the base's chunks through the chunk cache
 * (memory, then the cache directory), else the volume servers (any replica,
 * with failover), with sequential read-ahead; holes read as zeros.
 * Writes: buffered, cut into chunks and uploaded in parallel straight to the
 * volume servers; the caller commits the new chunks to the filer on flush,
 * fsync and release. Dirty memory is bounded per mount: a writer waits.
 *
 * Functions return WFS_OK or a wfs_err that keeps the cause: an upload the
 * cluster refused for want of space is WFS_ENOSPC (WFS_EQUOTA for a quota),
 * not a generic error, so write(), fsync() and close() say ENOSPC. A
 * file_data is thread-safe.
 * file_data_int.h lists the modules that implement this interface.
 */
#ifndef WEEDFS_MOUNT_FILE_DATA_H
#define WEEDFS_MOUNT_FILE_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "client/entry.h"

struct mount_data_opts {
	const char *filer;         /* "host:port": assign and lookupVolume go through it */
	uint64_t chunk_size;       /* bytes per uploaded chunk; 0 = 4 MiB */
	uint64_t dirty_max;        /* dirty bytes held by the whole mount; 0 = 256 MiB */
	uint64_t mem_cache_bytes;  /* chunk cache in memory; 0 = 128 MiB */
	const char *cache_dir;     /* persistent chunk cache, NULL = none */
	uint64_t cache_disk_bytes; /* its capacity; 0 = 1 GiB */
	const char *collection;    /* assignment parameters, NULL = the filer's defaults */
	const char *replication;
	const char *ttl;
	long timeout_ms;     /* one request to a volume server or the filer; 0 = 30 s */
	uint64_t inline_max; /* files up to this size commit inline (file_data_flush_inline);
				0 = never */
	bool short_circuit_off; /* chunks only over HTTP (blob_client_opts) */
	bool cipher; /* seal every chunk (the filer's -encryptVolumeData, chunk_cipher.h) */
};

/* The data path of one mount. */
typedef struct mount_data mount_data;

/*
 * NULL with *err when the options are unusable (e.g. the cache dir). o's strings are
 * copied. http_client_global_init() must have run. Starts the transfer threads.
 */
mount_data *mount_data_new(const struct mount_data_opts *o, wfs_err *err);
/* No file_data may remain. NULL does nothing. */
void mount_data_free(mount_data *md);

typedef struct file_data file_data;

/* e (borrowed) is the filer's entry: size, inline content, chunks (manifests allowed). */
file_data *file_data_new(mount_data *md, const struct filer_entry *e);
/* Frees fd; dirty data not committed is lost (the caller flushes first). NULL does nothing. */
void file_data_free(file_data *fd);

/* Replaces the clean base (another client changed the file); keeps the dirty bytes. */
void file_data_reset(file_data *fd, const struct filer_entry *e);

/*
 * Reads up to len bytes at off into dst; *got < len only at end of file. A chunk
 * no replica has (WFS_ENOENT from the volume servers) is WFS_ECORRUPT: the
 * file's data is damaged.
 */
wfs_err file_data_read(file_data *fd, uint64_t off, size_t len, void *dst, size_t *got);
/*
 * Buffers a write; may block while the mount's dirty budget is spent. WFS_ETOOBIG past
 * the largest offset; the error of a background upload of this file that failed while
 * it waited (WFS_ENOSPC...), or WFS_EIO when no upload made progress for minutes.
 */
wfs_err file_data_write(file_data *fd, uint64_t off, const void *src, size_t len);
/* Sets the size (cuts dirty and base data beyond it; a larger size is a hole). Waits for
   a flush awaiting file_data_committed, so call neither between those two. */
wfs_err file_data_truncate(file_data *fd, uint64_t size);
/* The size including buffered writes and truncates. */
uint64_t file_data_size(file_data *fd);
/* Whether anything (data or a size change) awaits a commit. */
bool file_data_dirty(file_data *fd);
/* Names fd's inode (for mount_data_stale_files). Any thread. */
void file_data_set_ino(file_data *fd, uint64_t ino);
/*
 * The inodes (at most max, into inos) of files dirty for at least age_ns, as seen by
 * earlier calls (a scan every second or so: a file's age starts at the first scan
 * that sees it dirty, and again after each commit). Any thread.
 */
size_t mount_data_stale_files(mount_data *md, uint64_t age_ns, uint64_t *inos, size_t max);

/*
 * Uploads every dirty byte. On WFS_OK, *chunks / *n (caller frees with
 * filer_chunks_free; NULL/0 when only the size changed) are the chunks to
 * commit with update {appendChunks, size: file_data_size(fd)}; the caller then
 * calls file_data_committed with whether the commit succeeded (the dirty data
 * is dropped, and the chunks join the base, only then). An upload error is
 * returned as the blob client gave it (WFS_ENOSPC, WFS_EUNAVAIL, ...), never
 * swallowed; the dirty data stays.
 */
wfs_err file_data_flush(file_data *fd, struct filer_chunk **chunks, size_t *n);
void file_data_committed(file_data *fd, bool ok);
/*
 * file_data_flush for fsync: every chunk it uploads is durable on every replica
 * (fsync=true) before it returns. Follow it with file_data_sync_volumes.
 */
wfs_err file_data_flush_sync(file_data *fd, struct filer_chunk **chunks, size_t *n);
/*
 * fsync's data half: makes the file's chunks uploaded without fsync=true durable on
 * every replica of their volumes (blob_client_sync_volume): this mount's background
 * uploads and plain closes' flushes, and, the first time, the base's (the closes of
 * others may not have synced them). Call it before the durable commit. WFS_OK, or
 * the blob client's error (the volumes stay noted for the next try).
 */
wfs_err file_data_sync_volumes(file_data *fd);
/*
 * Whether nothing changed since file_data_set_durable(fd, true, ctime_ns) with this
 * ctime_ns (the entry's as the caller knows it now; 0 = unknown: false): an fsync
 * has nothing to do.
 */
bool file_data_durable(file_data *fd, int64_t ctime_ns);
/*
 * After a commit: durable when it was an fsync's (synced volumes, an fsync update)
 * and nothing was noted unsynced since; false after any other commit. ctime_ns is
 * the entry's ctime after the commit.
 */
void file_data_set_durable(file_data *fd, bool durable, int64_t ctime_ns);
/*
 * Like file_data_flush, for a file whose whole data fits the mount's inline_max
 * and is known here (no bytes only in chunks: a new, rewritten or inline file):
 * true with *content (caller frees; NULL when *len is 0) = every byte of the
 * file, to commit with update {content} (no upload); finish with
 * file_data_commit_result as after file_data_flush. False: not such a file (or
 * nothing dirty); use file_data_flush.
 */
bool file_data_flush_inline(file_data *fd, uint8_t **content, size_t *len);
/*
 * Like file_data_committed(fd, rc == WFS_OK), with the commit's error: one that says
 * the filer changed nothing (WFS_ENOENT, WFS_EINVAL, WFS_EPERM, WFS_EEXIST, WFS_ENOTDIR,
 * WFS_EISDIR, WFS_ENOSPC, WFS_EQUOTA...) lets the mount free the flushed chunks once it
 * drops them (they can never be referenced), while WFS_EIO, WFS_EUNAVAIL, WFS_EPRECOND
 * (the update may have committed before a retry) and timeouts keep them forever.
 * file_data_committed(fd, false) counts as WFS_EIO.
 */
void file_data_commit_result(file_data *fd, wfs_err rc);

/*
 * Between a successful file_data_flush and file_data_committed: true when the
 * chunks are the file's WHOLE new list, to commit with update {chunks, size}
 * (replace) instead of {appendChunks, size}. That is the case when the filer's
 * entry has inline content (which appendChunks refuses) or when the file was
 * cut below its committed size and then grew again (a size-only shrink cannot
 * express that). Thread-safe.
 */
bool file_data_flush_replaces(file_data *fd);
/*
 * Between a successful file_data_flush and file_data_committed: the committed chunks
 * the flushed data covers whole (a small tail re-uploaded with what was appended to
 * it). An append commit sends them as update {dropChunks}; a replace already leaves
 * them out of its list. Returns their number; *fids (caller frees each and the array).
 */
size_t file_data_flush_drops(file_data *fd, char ***fids);

/*
 * lseek SEEK_DATA / SEEK_HOLE from off: *out = the first byte of data (a base or pending
 * chunk's visible piece, a dirty range, inline content) or of a hole (the end of the file
 * counts as one) at or after off, or FILE_DATA_SEEK_NONE when off is at or past the end,
 * or (SEEK_DATA) only a hole follows (lseek's ENXIO). WFS_EINVAL for another whence; the
 * blob client's error when manifests cannot be read.
 */
#define FILE_DATA_SEEK_NONE UINT64_MAX
wfs_err file_data_seek(file_data *fd, uint64_t off, int whence, uint64_t *out);
/*
 * Zeros [off, off+len) (fallocate PUNCH_HOLE, ZERO_RANGE) without storing zeros where it
 * can: the range becomes a hole except under a chunk that crosses its end, where at most
 * one chunk's worth of zeros is buffered. Unless keep_size, the size grows to off+len.
 * The change waits for the next commit like a write (then update {chunks} replaces the
 * list). Waits for a running flush, as file_data_truncate does. WFS_OK, WFS_ETOOBIG, or
 * the error of reading the base's manifests.
 */
wfs_err file_data_punch(file_data *fd, uint64_t off, uint64_t len, bool keep_size);

/* Counters of a mount's data path (for tests and status). */
struct mount_data_stats {
	uint64_t dirty;         /* dirty bytes held now (the budget in use) */
	uint64_t dirty_peak;    /* the most held at once */
	uint64_t budget_waits;  /* times a writer waited for the budget */
	uint64_t uploads;       /* chunks uploaded */
	uint64_t bg_uploads;    /* of which uploaded before a flush (full chunks, budget) */
	uint64_t flushes;       /* successful file_data_flush calls */
	uint64_t fetched_bytes; /* bytes read from volume servers */
	uint64_t uploaded_bytes; /* bytes of the chunks uploaded */
	uint64_t prefetches;    /* chunks fetched by read-ahead */
	uint64_t preassigned;   /* uploads to a pre-assigned file id (no assign round trip) */
	uint64_t freed;         /* orphaned chunks handed to the filer's freeChunks */
};
/* A snapshot of the counters. Any thread. */
void mount_data_get_stats(mount_data *md, struct mount_data_stats *out);
/* The chunk cache's counters (hits, misses, bytes held). Any thread. */
struct chunk_cache_stats;
void mount_data_cache_stats(mount_data *md, struct chunk_cache_stats *out);

#endif
