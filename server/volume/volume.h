/*
 * One volume: a [<collection>_]<vid>.dat file of needles plus its .idx, and
 * the in-memory needle map.
 *
 * DESIGN
 * - Locks: write_lock serializes everything that appends (writes, deletes,
 *   the commit of a vacuum) and guards the file ends. map_lock (a
 *   writer-preferring rwlock) guards the map, the statistics and the file
 *   descriptors; a read holds it shared across its single pread so a vacuum
 *   commit can swap the files underneath safely. The file ends move under
 *   both locks, so a snapshot (volume_snapshot) reads a matching pair under
 *   map_lock alone. Lock order: vacuum_lock, then write_lock, then map_lock.
 * - A failed append is cut back off both files; ENOSPC or EDQUOT also makes
 *   the volume read-only (disk_full), logged once.
 * - A write is pwritev() of the needle at the .dat end (in 1 MiB calls: see
 *   pwritev_pieces), then write() of the .idx entry, then the map update. No fsync by default: a
 * killed process loses nothing the kernel has, and load() repairs a torn tail after a crash.
 * volume_sync makes appends durable on request (fsync=true).
 * - Group commit: every append bumps a generation counter (under
 *   write_lock, after both writes). volume_sync notes the generation its
 *   caller must see durable, then takes sync_lock; if a sync that started
 *   later already covered it, it returns at once, else it syncs everything
 *   appended so far (fdatasync of .dat then .idx, on dups of the
 *   descriptors so no lock is held across the disk wait and a vacuum commit
 *   may swap the files meanwhile: it fsyncs what it swaps in). Writers keep
 *   appending during a sync; the next one in line covers them all. A failed
 *   fdatasync is sticky for the volume: the kernel may have dropped the
 *   dirty pages, so no later sync can vouch for them.
 * - Load: .idx -> map; the needle named by the last entry must be intact,
 *   complete needles after it get their missing .idx entries, a torn tail is
 *   truncated; a missing or damaged .idx is rebuilt by scanning the .dat.
 * - Vacuum: compact copies live needles to .cpd/.cpx while serving; commit
 *   replays the .idx entries appended meanwhile, fsyncs, then
 *   rename(.cpd -> .dat) is the commit point and rename(.cpx -> .idx)
 *   follows. On load a .cpd means an unfinished vacuum (both leftovers
 *   removed); a lone .cpx means the crash hit between the two renames, and
 *   it becomes the .idx. Cleanup removes .cpx before .cpd to keep that rule.
 * - Big needles cost bounded memory: volume_write_fd copies data from a
 *   file (copy_file_range), volume_read_ex hands out a dup of the .dat to
 *   stream from, and the "unchanged" check, load's CRC check of the last
 *   needle, the .idx rebuild scan and vacuum all read 1 MiB at a time (or
 *   only a needle's fields, copying its bytes file to file).
 * - Reference counted: the store and each request hold a reference.
 */
#ifndef WEEDFS_VOLUME_VOLUME_H
#define WEEDFS_VOLUME_VOLUME_H

#include <stdbool.h>
#include <stdint.h>
#include "buf.h"
#include "server/common/placement.h"
#include "err.h"
#include "needle.h"

typedef struct volume volume;

#define VOLUME_COLLECTION_MAX 128

struct volume_info {
	uint32_t id;
	char collection[VOLUME_COLLECTION_MAX];
	struct replica_placement rp;
	struct ttl ttl;
	uint16_t compact_revision;
	uint32_t version;
	uint64_t size;          /* .dat bytes */
	uint64_t file_count;    /* needles ever written (overwrites included) */
	uint64_t delete_count;  /* needles deleted or overwritten */
	uint64_t deleted_bytes; /* bytes of those */
	uint64_t live_count;
	uint64_t max_key;
	bool read_only;
	bool disk_full;           /* an append hit ENOSPC/EDQUOT and made it read-only */
	uint64_t last_append_ns;  /* append time of the newest record (0: none) */
	uint64_t modified_at_sec; /* last write (or file mtime at load) */
	uint64_t appended;        /* append generation: 1 at open, +1 per write or delete */
	uint64_t synced;          /* the generation volume_sync last made durable */
	uint64_t syncs;           /* fdatasync rounds volume_sync has run */
};

struct volume_create {
	struct replica_placement rp;
	struct ttl ttl;
	uint64_t preallocate; /* bytes, 0 for none */
};

/* True if name is a valid collection name (letters, digits, '-', '.', '_'? no: see .c). */
bool volume_collection_valid(const char *name);

/*
 * Opens the volume in dir, creating it when create is non-NULL and no .dat
 * exists. Repairs the files as described above. Returns a volume with one
 * reference. Any thread; blocking (may scan the whole .dat).
 */
wfs_err volume_open(const char *dir, const char *collection, uint32_t id,
		    const struct volume_create *create, volume **out);
/* dir/[collection_]id<ext>, malloc'ed. */
char *volume_file_path(const char *dir, const char *collection, uint32_t id, const char *ext);
void volume_ref(volume *v);
/* Drops a reference; the last one closes the files (and removes them after volume_destroy). */
void volume_unref(volume *v);
/* Marks the volume for removal: its files are unlinked when the last reference goes. */
void volume_destroy(volume *v);

uint32_t volume_id(const volume *v);
const char *volume_collection(const volume *v);
/* The directory holding the volume's files. */
const char *volume_dir(const volume *v);
void volume_get_info(volume *v, struct volume_info *out);
/* The file whose presence keeps a volume read-only across restarts. */
#define VOLUME_READONLY_MARK ".readonly"
/* Read-only (or writable again) by an operator's decision, recorded in the volume's
 * .readonly file so it survives a restart. Blocking (one file create or unlink). */
void volume_set_read_only(volume *v, bool ro);
bool volume_read_only(volume *v);
/*
 * Turns the volume read-only when err (a failed write to its directory) says
 * the disk or the quota is full (WFS_ENOSPC, WFS_EQUOTA); logged once. Any thread.
 */
void volume_note_full(volume *v, wfs_err err);
/* The .dat size a write may not exceed (0 = unlimited). Any thread. */
void volume_set_size_limit(volume *v, uint64_t limit);

/*
 * Appends needle n (key, cookie, data and optional fields set; size, crc and
 * append_ns are filled in). If the same key already holds a needle with the
 * same cookie, data, name and mime, nothing is written and *unchanged is set.
 * An existing live needle with a different cookie refuses the write
 * (WFS_EPERM). WFS_EREADONLY, WFS_ENOSPC (size limit or disk full: the
 * latter, like WFS_EQUOTA, makes the volume read-only), WFS_EIO. The volume's
 * TTL is applied when n has none. Any thread.
 */
wfs_err volume_write(volume *v, struct needle *n, bool *unchanged);

/*
 * volume_write where crc, the CRC32C of n->data, was computed by the caller
 * (as the data arrived), so the data is not read once more. Any thread.
 */
wfs_err volume_write_crc(volume *v, struct needle *n, uint32_t crc, bool *unchanged);

/*
 * Like volume_write for data that is not in memory: the needle's data is the
 * first n->data_size bytes of fd (borrowed, read with pread), crc their
 * CRC32C. The data is copied into the .dat with copy_file_range (pread/pwrite
 * in 1 MiB pieces where unsupported) under the write lock; the "unchanged"
 * check compares in 1 MiB pieces. n->data is ignored. Blocking; any thread.
 */
wfs_err volume_write_fd(volume *v, struct needle *n, int fd, uint32_t crc, bool *unchanged);

/*
 * Deletes key if its cookie matches (cookie mismatch or absent: WFS_ENOENT).
 * The deletion record's append time is append_ns (0 = now). *size gets the
 * deleted needle's body size. Any thread.
 */
wfs_err volume_delete(volume *v, uint64_t key, uint32_t cookie, uint64_t append_ns, uint32_t *size);

/*
 * Makes every write and delete that returned before this call durable
 * (fdatasync of the .dat and the .idx; the files as found at open count as
 * one append). Concurrent callers share rounds: a caller whose appends a
 * round already covered returns without syncing (group commit, see DESIGN).
 * WFS_EIO when a sync failed, now or earlier (sticky). Blocking (waits for
 * the disk): pool threads only, never an HTTP loop thread.
 */
wfs_err volume_sync(volume *v);

/*
 * Reads key into storage (reset first) and decodes it into n (fields borrow
 * storage). Wrong cookie, deleted (unless read_deleted and still in the
 * .dat), expired TTL: WFS_ENOENT. CRC mismatch: WFS_ECORRUPT. Any thread.
 */
wfs_err volume_read(volume *v, uint64_t key, uint32_t cookie, bool read_deleted, buf *storage,
		    struct needle *n);

/* A big needle's data left on disk for the caller to stream. */
struct needle_blob {
	int fd;       /* owned by the caller (close it): a dup of the .dat, or -1 */
	uint64_t off; /* where the data starts in it */
};

/*
 * volume_read for needles of any size: one whose on-disk size is at most
 * inline_max is read whole as by volume_read (blob->fd = -1); a bigger one
 * gets only its fields decoded (n->data NULL, n->crc as stored, not checked)
 * and blob receives a descriptor to pread the data_size bytes from. The dup
 * stays valid across a vacuum. Any thread.
 */
wfs_err volume_read_ex(volume *v, uint64_t key, uint32_t cookie, bool read_deleted,
		       uint64_t inline_max, buf *storage, struct needle *n,
		       struct needle_blob *blob);

/*
 * A consistent view of the volume's files for copying them: their sizes now
 * (every needle the .idx prefix names lies inside the .dat prefix, and every
 * needle of the .dat prefix has its entry in the .idx prefix), the
 * compaction revision, and with fds dups of both files that stay as they are
 * across a vacuum. key (0: none) is looked up in the same instant: found,
 * deleted (then off/size are of the needle it deleted) and its place.
 */
struct volume_snapshot {
	uint16_t revision;
	uint64_t dat_size, idx_size, data_start, last_append_ns;
	int dat_fd, idx_fd; /* -1 unless fds; close with volume_snapshot_close */
	bool found, deleted;
	uint64_t off;  /* bytes */
	uint32_t size; /* body size */
};
/* Takes the snapshot (never blocks on writers, only on a vacuum's swap). Any thread. */
wfs_err volume_snapshot(volume *v, bool fds, uint64_t key, struct volume_snapshot *s);
void volume_snapshot_close(struct volume_snapshot *s);

/*
 * Appends rec, one raw needle record as another replica stores it (header,
 * body, CRC, append time, padding), byte for byte: id, cookie and times are
 * kept. A deletion record (size 0) deletes the id. Checked first
 * (needle_raw_check): WFS_EINVAL and nothing written when bad. *unchanged when
 * there was nothing to do (the same write already live, or a deletion of an
 * id not live). WFS_EREADONLY, WFS_ENOSPC, WFS_EIO. Any thread.
 */
wfs_err volume_append_raw(volume *v, const uint8_t *rec, size_t len, bool *unchanged);

/*
 * Checks one raw needle record of exactly len bytes: a header with a key,
 * len matching its size, well-formed fields and the data's CRC. Fields of n
 * borrow p. WFS_ECORRUPT when bad. Any thread.
 */
wfs_err needle_raw_check(const uint8_t *p, size_t len, struct needle *n);

/*
 * The same check for the record at off in fd, which must end by end; reads
 * at most 1 MiB at a time. Sets *key and *size (body; 0 for a deletion). Any thread.
 */
wfs_err volume_check_record_fd(int fd, uint64_t off, uint64_t end, uint64_t *key, uint32_t *size);

/* deleted bytes / size. */
double volume_garbage_ratio(volume *v);
/* Copies live needles to .cpd/.cpx; the volume keeps serving. Blocking; any thread. */
wfs_err volume_compact(volume *v);
/* Replays writes made since compact, swaps the files in. Blocking; any thread. */
wfs_err volume_commit(volume *v);
/* Removes the files of an unfinished compaction. */
wfs_err volume_cleanup(volume *v);

/* True if the volume has a TTL and nothing was written to it for that long. */
bool volume_expired(volume *v, uint64_t now_sec);

/* Needle expiry by its TTL and last-modified time (or append time). */
bool needle_expired(const struct needle *n, uint64_t now_sec);

#endif
