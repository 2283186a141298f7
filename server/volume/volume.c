#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "crc32c.h"
#include "log.h"
#include "needle_map.h"
#include "util.h"
#include "volume.h"

struct vstats {
	uint64_t file_count, delete_count, deleted_bytes;
};

struct volume {
	char *dir, *collection;
	char *path_dat, *path_idx, *path_cpd, *path_cpx;
	char *path_ro; /* exists while an operator has the volume read-only */
	uint32_t id;
	atomic_int refs;
	atomic_bool destroyed;
	atomic_bool read_only;
	_Atomic uint64_t size_limit;
	_Atomic uint64_t modified_sec;
	_Atomic uint64_t last_append_ns; /* append time of the newest record */
	atomic_bool disk_full;           /* an append hit ENOSPC/EDQUOT: read-only since */

	/* superblock */
	uint8_t version, rp_byte, ttl_bytes[2];
	uint16_t extra_size;
	uint32_t data_start;

	pthread_mutex_t vacuum_lock;
	pthread_mutex_t write_lock;
	pthread_rwlock_t map_lock;

	int dat_fd, idx_fd; /* protected by map_lock (swapped by commit) */
	uint16_t revision;  /* protected by map_lock */
	uint64_t dat_size;  /* written under write_lock + map_lock */
	uint64_t idx_size;  /* written under write_lock + map_lock (a snapshot pairs it with dat_size) */
	needle_map *map;    /* protected by map_lock */
	struct vstats st;   /* protected by map_lock */

	/* group commit, see DESIGN in volume.h; lock order: sync_lock, then map_lock */
	_Atomic uint64_t appended; /* written under write_lock, read anywhere */
	pthread_mutex_t sync_lock; /* one fdatasync round at a time */
	_Atomic uint64_t synced;   /* written under sync_lock, read anywhere */
	_Atomic uint64_t syncs;    /* written under sync_lock, read anywhere */
	bool sync_failed;          /* protected by sync_lock */

	/* an unfinished compaction; protected by vacuum_lock */
	bool compacting;
	int cpd_fd, cpx_fd;
	uint64_t snap_idx_size, cdat_size, cidx_size;
	needle_map *cmap;
	struct vstats cst;
};

bool volume_collection_valid(const char *name)
{
	size_t n = strlen(name);
	if (n >= VOLUME_COLLECTION_MAX || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return false;
	}
	return true;
}

static void apply_put(needle_map *m, struct vstats *st, uint64_t key, uint32_t off, uint32_t size)
{
	struct nm_entry old;
	if (needle_map_set(m, key, off, size, &old)) {
		st->delete_count++;
		st->deleted_bytes += needle_disk_size(old.size);
	}
	st->file_count++;
}

static bool apply_delete(needle_map *m, struct vstats *st, uint64_t key, struct nm_entry *old)
{
	struct nm_entry o;
	if (!needle_map_delete(m, key, &o))
		return false;
	st->delete_count++;
	st->deleted_bytes += needle_disk_size(o.size);
	if (old)
		*old = o;
	return true;
}

static wfs_err pread_all(int fd, void *p, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, (char *)p + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return WFS_EIO;
		if (r == 0)
			return WFS_ECORRUPT; /* past the end */
		done += (size_t)r;
	}
	return WFS_OK;
}

static wfs_err pwritev_all(int fd, struct iovec *iov, int cnt, uint64_t off)
{
	while (cnt > 0) {
		ssize_t r = pwritev(fd, iov, cnt, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? wfs_err_from_errno(errno) : WFS_EIO;
		off += (uint64_t)r;
		while (cnt > 0 && (size_t)r >= iov->iov_len) {
			r -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->iov_base = (char *)iov->iov_base + r;
			iov->iov_len -= (size_t)r;
		}
	}
	return WFS_OK;
}

static wfs_err write_all(int fd, const void *p, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = write(fd, (const char *)p + done, len - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? wfs_err_from_errno(errno) : WFS_EIO;
		done += (size_t)r;
	}
	return WFS_OK;
}

#define COPY_PIECE (1u << 20)

/*
 * pwritev_all in calls of at most COPY_PIECE bytes: a bigger write lets the
 * page cache use 2 MiB folios, which cost several times more CPU per byte to
 * fill (measured: 4 MiB needles written whole took ~7x the system time of
 * the same needles in 1 MiB calls).
 */
static wfs_err pwritev_pieces(int fd, const struct iovec *iov, int cnt, uint64_t off)
{
	struct iovec part[8];
	size_t in = 0; /* bytes of iov[0] already written */
	wfs_err err = WFS_OK;

	while (!err && cnt > 0) {
		size_t bytes = 0;
		int n = 0;
		while (cnt > 0 && bytes < COPY_PIECE && n < (int)(sizeof(part) / sizeof(part[0]))) {
			size_t take = MIN(iov->iov_len - in, COPY_PIECE - bytes);
			part[n++] = (struct iovec){(char *)iov->iov_base + in, take};
			bytes += take;
			in += take;
			if (in == iov->iov_len) {
				iov++;
				cnt--;
				in = 0;
			}
		}
		err = pwritev_all(fd, part, n, off);
		off += bytes;
	}
	return err;
}

/* Copies len bytes between files at the given offsets with pread/pwrite. */
static wfs_err copy_slow(int in, uint64_t in_off, int out, uint64_t out_off, uint64_t len)
{
	char *p = xmalloc(COPY_PIECE);
	wfs_err err = WFS_OK;

	while (!err && len) {
		size_t n = (size_t)MIN(len, (uint64_t)COPY_PIECE);
		struct iovec iov = {p, n};
		err = pread_all(in, p, n, in_off);
		if (!err)
			err = pwritev_all(out, &iov, 1, out_off);
		in_off += n, out_off += n, len -= n;
	}
	free(p);
	return err;
}

/*
 * Copies len bytes from in to out. copy_file_range keeps the data in the
 * kernel (or shares extents on file systems that can); pread/pwrite in 1 MiB
 * pieces where it is not supported.
 */
static wfs_err copy_range(int in, uint64_t in_off, int out, uint64_t out_off, uint64_t len)
{
	while (len) {
		loff_t io = (loff_t)in_off, oo = (loff_t)out_off;
		ssize_t r = copy_file_range(in, &io, out, &oo, (size_t)MIN(len, 1ull << 30), 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
			      errno == EOPNOTSUPP || errno == EBADF))
			return copy_slow(in, in_off, out, out_off, len);
		if (r <= 0)
			return r < 0 ? wfs_err_from_errno(errno) : WFS_ECORRUPT;
		in_off += (uint64_t)r, out_off += (uint64_t)r, len -= (uint64_t)r;
	}
	return WFS_OK;
}

/* CRC32C of len bytes of fd from off, read in pieces (bounded memory). */
static wfs_err crc_range(int fd, uint64_t off, uint64_t len, uint32_t *crc)
{
	char *p = xmalloc(MIN(len, (uint64_t)COPY_PIECE) + 1);
	wfs_err err = WFS_OK;

	*crc = 0;
	while (!err && len) {
		size_t n = (size_t)MIN(len, (uint64_t)COPY_PIECE);
		err = pread_all(fd, p, n, off);
		if (!err)
			*crc = crc32c_update(*crc, p, n);
		off += n, len -= n;
	}
	free(p);
	return err;
}

/*
 * Reads the fields of the needle with body size `size` at off without its data
 * (storage holds them). check_crc streams the data through CRC32C and sets
 * n->crc to the plain value.
 */
static wfs_err read_meta(int fd, uint64_t off, uint32_t size, bool check_crc, buf *storage,
			 struct needle *n)
{
	uint8_t head[NEEDLE_HEAD_SIZE];
	uint32_t dsize, tail_len;
	uint32_t crc;
	wfs_err err;

	if (size < 5 || size > NEEDLE_MAX_BODY)
		return WFS_ECORRUPT;
	err = pread_all(fd, head, sizeof(head), off);
	if (err)
		return err;
	dsize = get_be32(head + NEEDLE_HEADER_SIZE);
	if ((uint64_t)dsize + 5 > size)
		return WFS_ECORRUPT;
	tail_len = size - 4 - dsize + NEEDLE_TRAILER_SIZE;
	buf_reset(storage);
	buf_reserve(storage, tail_len);
	err = pread_all(fd, storage->data, tail_len, off + NEEDLE_HEAD_SIZE + dsize);
	if (err)
		return err;
	storage->len = tail_len;
	err = needle_decode_meta(head, (uint8_t *)storage->data, tail_len, n);
	if (err || !check_crc)
		return err;
	err = crc_range(fd, off + NEEDLE_HEAD_SIZE, dsize, &crc);
	if (err)
		return err;
	if (!crc32c_stored_matches(n->crc, crc))
		return WFS_ECORRUPT;
	n->crc = crc;
	return WFS_OK;
}

static void fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

static void superblock_encode(const volume *v, uint16_t revision, uint8_t *p)
{
	p[0] = NEEDLE_VERSION;
	p[1] = v->rp_byte;
	p[2] = v->ttl_bytes[0];
	p[3] = v->ttl_bytes[1];
	put_be16(p + 4, revision);
	put_be16(p + 6, 0);
}

/* ---- scanning the .dat ---- */

/*
 * Checks the needle record at off in fd, which must end by end: a sane
 * header, the whole record present, its fields well formed and its data's
 * CRC right (read 1 MiB at a time: big needles cost a bounded buffer). n's
 * fields borrow b.
 */
static wfs_err check_record_at(int fd, uint64_t off, uint64_t end, buf *b, struct needle *n)
{
	uint8_t h[NEEDLE_HEADER_SIZE];
	uint32_t cookie, size;
	uint64_t key, len;

	if (off + NEEDLE_HEADER_SIZE > end || pread_all(fd, h, sizeof(h), off))
		return WFS_ECORRUPT;
	needle_parse_header(h, &cookie, &key, &size);
	if (key == 0 || size > NEEDLE_MAX_BODY)
		return WFS_ECORRUPT;
	len = needle_disk_size(size);
	if (off + len > end)
		return WFS_ECORRUPT;
	if (size > 0)
		return read_meta(fd, off, size, true, b, n);
	buf_reset(b);
	buf_reserve(b, len);
	if (pread_all(fd, b->data, len, off))
		return WFS_ECORRUPT;
	return needle_decode((uint8_t *)b->data, len, true, n);
}

wfs_err volume_check_record_fd(int fd, uint64_t off, uint64_t end, uint64_t *key, uint32_t *size)
{
	buf b = BUF_INIT;
	struct needle n;
	wfs_err err = check_record_at(fd, off, end, &b, &n);
	if (!err) {
		*key = n.key;
		*size = n.size;
	}
	buf_free(&b);
	return err;
}

wfs_err needle_raw_check(const uint8_t *p, size_t len, struct needle *n)
{
	uint32_t cookie, size;
	uint64_t key;

	if (len < NEEDLE_HEADER_SIZE)
		return WFS_ECORRUPT;
	needle_parse_header(p, &cookie, &key, &size);
	if (key == 0 || size > NEEDLE_MAX_BODY || len != needle_disk_size(size))
		return WFS_ECORRUPT;
	return needle_decode(p, len, true, n);
}

typedef void (*scan_fn)(volume *v, uint64_t off, const struct needle *n, void *arg);

/*
 * Walks valid needles from off to the end of the .dat, calling fn for each.
 * Returns the end of the last valid needle: anything beyond is a torn write.
 */
static uint64_t scan_dat(volume *v, uint64_t off, scan_fn fn, void *arg)
{
	buf b = BUF_INIT;
	struct needle n;

	while (!check_record_at(v->dat_fd, off, v->dat_size, &b, &n)) {
		fn(v, off, &n, arg);
		off += needle_disk_size(n.size);
	}
	buf_free(&b);
	return off;
}

struct idx_out {
	buf pending; /* .idx entries not yet written */
	int fd;
	wfs_err err;
	uint64_t written;
};

static void idx_out_flush(struct idx_out *o)
{
	if (!o->err && o->pending.len)
		o->err = write_all(o->fd, o->pending.data, o->pending.len);
	o->written += o->pending.len;
	buf_reset(&o->pending);
}

static void idx_out_add(struct idx_out *o, uint64_t key, uint32_t off, uint32_t size)
{
	uint8_t e[IDX_ENTRY_SIZE];
	idx_entry_encode(e, key, off, size);
	buf_append(&o->pending, e, sizeof(e));
	if (o->pending.len >= (1 << 20))
		idx_out_flush(o);
}

/* Applies a scanned needle to the map and queues its .idx entry. */
static void scan_apply(volume *v, uint64_t off, const struct needle *n, void *arg)
{
	struct idx_out *o = arg;
	uint32_t uoff = (uint32_t)(off / NEEDLE_ALIGN);
	if (n->size == 0) {
		apply_delete(v->map, &v->st, n->key, NULL);
		idx_out_add(o, n->key, uoff, NEEDLE_TOMBSTONE);
	} else {
		apply_put(v->map, &v->st, n->key, uoff, n->size);
		idx_out_add(o, n->key, uoff, n->size);
	}
}

static wfs_err truncate_dat(volume *v, uint64_t end)
{
	if (end == v->dat_size)
		return WFS_OK;
	log_warn("volume %" PRIu32 ": truncating torn tail of %s from %" PRIu64 " to %" PRIu64,
		 v->id, v->path_dat, v->dat_size, end);
	if (ftruncate(v->dat_fd, (off_t)end) < 0)
		return wfs_err_from_errno(errno);
	v->dat_size = end;
	return WFS_OK;
}

/* Rebuilds the .idx from the .dat (into a temporary file renamed over the .idx). */
static wfs_err rebuild_idx(volume *v)
{
	struct idx_out o = {BUF_INIT, -1, WFS_OK, 0};
	char *tmp = xasprintf("%s.tmp", v->path_idx);
	uint64_t end;
	wfs_err err;

	log_warn("volume %" PRIu32 ": rebuilding %s from %s", v->id, v->path_idx, v->path_dat);
	needle_map_free(v->map);
	v->map = needle_map_new();
	memset(&v->st, 0, sizeof(v->st));
	o.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (o.fd < 0) {
		err = wfs_err_from_errno(errno);
		goto out;
	}
	end = scan_dat(v, v->data_start, scan_apply, &o);
	idx_out_flush(&o);
	err = o.err;
	if (!err && fsync(o.fd) < 0)
		err = WFS_EIO;
	if (err)
		goto out;
	err = truncate_dat(v, end);
	if (err)
		goto out;
	if (rename(tmp, v->path_idx) < 0) {
		err = wfs_err_from_errno(errno);
		goto out;
	}
	if (v->idx_fd >= 0)
		close(v->idx_fd);
	v->idx_fd = open(v->path_idx, O_RDWR | O_APPEND);
	if (v->idx_fd < 0)
		err = wfs_err_from_errno(errno);
	v->idx_size = o.written;
out:
	if (o.fd >= 0)
		close(o.fd);
	unlink(tmp);
	free(tmp);
	buf_free(&o.pending);
	return err;
}

/* True if the needle at off (in bytes) is key with this body size, intact. */
static bool needle_at_ok(volume *v, uint64_t off, uint64_t key, uint32_t size)
{
	uint64_t len = needle_disk_size(size);
	struct needle n;
	buf b = BUF_INIT;
	bool good;

	if (off < v->data_start || off + len > v->dat_size)
		return false;
	if (size == 0) {
		uint8_t h[NEEDLE_HEADER_SIZE];
		uint32_t c, s;
		uint64_t k;
		if (pread_all(v->dat_fd, h, sizeof(h), off))
			return false;
		needle_parse_header(h, &c, &k, &s);
		return k == key && s == 0;
	}
	good = !read_meta(v->dat_fd, off, size, true, &b, &n) && n.key == key && n.size == size;
	buf_free(&b);
	return good;
}

/*
 * Loads the .idx into the map. Returns WFS_ECORRUPT when it cannot be trusted
 * (then the caller rebuilds it), else sets *tail to where unindexed needles start.
 */
static wfs_err load_idx(volume *v, uint64_t *tail)
{
	enum { CHUNK = 1 << 20 };
	uint8_t *chunk = xmalloc(CHUNK);
	uint64_t pos = 0, end = v->data_start, last_key = 0;
	uint32_t last_size = 0;
	bool have_last = false;
	struct stat sb;
	wfs_err err = WFS_OK;

	if (fstat(v->idx_fd, &sb) < 0 || sb.st_size % IDX_ENTRY_SIZE) {
		err = WFS_ECORRUPT;
		goto out;
	}
	v->idx_size = (uint64_t)sb.st_size;
	while (pos < v->idx_size) {
		size_t n = (size_t)MIN((uint64_t)CHUNK, v->idx_size - pos);
		err = pread_all(v->idx_fd, chunk, n, pos);
		if (err) {
			err = WFS_ECORRUPT;
			goto out;
		}
		for (size_t i = 0; i < n; i += IDX_ENTRY_SIZE) {
			uint64_t key, off;
			uint32_t uoff, size;
			idx_entry_decode(chunk + i, &key, &uoff, &size);
			off = (uint64_t)uoff * NEEDLE_ALIGN;
			if (size == NEEDLE_TOMBSTONE || size == 0) {
				/* size 0 is an old-style deletion */
				apply_delete(v->map, &v->st, key, NULL);
				if (uoff == 0)
					continue;
				size = 0;
			} else {
				apply_put(v->map, &v->st, key, uoff, size);
			}
			if (size > NEEDLE_MAX_BODY || off < v->data_start ||
			    off + needle_disk_size(size) > v->dat_size) {
				err = WFS_ECORRUPT;
				goto out;
			}
			if (off + needle_disk_size(size) >= end) {
				end = off + needle_disk_size(size);
				last_key = key;
				last_size = size;
				have_last = true;
			}
		}
		pos += n;
	}
	if (have_last && !needle_at_ok(v, end - needle_disk_size(last_size), last_key, last_size)) {
		err = WFS_ECORRUPT;
		goto out;
	}
	*tail = end;
out:
	free(chunk);
	return err;
}

static wfs_err load(volume *v)
{
	struct idx_out o = {BUF_INIT, v->idx_fd, WFS_OK, 0};
	uint64_t tail = 0, end;
	wfs_err err;

	if (load_idx(v, &tail) != WFS_OK)
		return rebuild_idx(v);
	/* needles written after the last .idx entry (a crash between the two writes) */
	end = scan_dat(v, tail, scan_apply, &o);
	idx_out_flush(&o);
	buf_free(&o.pending);
	if (o.err)
		return o.err;
	if (o.written)
		log_warn("volume %" PRIu32 ": added %" PRIu64 " missing index entries", v->id,
			 o.written / IDX_ENTRY_SIZE);
	v->idx_size += o.written;
	err = truncate_dat(v, end);
	return err;
}

static char *vpath(const char *dir, const char *collection, uint32_t id, const char *ext)
{
	if (collection && *collection)
		return xasprintf("%s/%s_%" PRIu32 "%s", dir, collection, id, ext);
	return xasprintf("%s/%" PRIu32 "%s", dir, id, ext);
}

char *volume_file_path(const char *dir, const char *collection, uint32_t id, const char *ext)
{
	return vpath(dir, collection, id, ext);
}

static bool file_exists(const char *p) { return access(p, F_OK) == 0; }

/* Reads the append time of the record named by the last .idx entry (0 if none). */
static void load_last_append(volume *v)
{
	uint8_t e[IDX_ENTRY_SIZE], t[8];
	uint64_t key, off;
	uint32_t uoff, size;

	if (v->idx_size < IDX_ENTRY_SIZE ||
	    pread_all(v->idx_fd, e, sizeof(e), v->idx_size - IDX_ENTRY_SIZE))
		return;
	idx_entry_decode(e, &key, &uoff, &size);
	if (size == NEEDLE_TOMBSTONE)
		size = 0;
	off = (uint64_t)uoff * NEEDLE_ALIGN + NEEDLE_HEADER_SIZE + size + 4;
	if (uoff && size <= NEEDLE_MAX_BODY && off + 8 <= v->dat_size &&
	    !pread_all(v->dat_fd, t, sizeof(t), off))
		atomic_store(&v->last_append_ns, get_be64(t));
}

static void volume_free(volume *v)
{
	if (v->compacting) {
		close(v->cpd_fd);
		close(v->cpx_fd);
		unlink(v->path_cpx);
		unlink(v->path_cpd);
		needle_map_free(v->cmap);
	}
	if (v->dat_fd >= 0)
		close(v->dat_fd);
	if (v->idx_fd >= 0)
		close(v->idx_fd);
	if (atomic_load(&v->destroyed)) {
		unlink(v->path_dat);
		unlink(v->path_idx);
		unlink(v->path_cpx);
		unlink(v->path_cpd);
		unlink(v->path_ro);
		log_info("volume %" PRIu32 " deleted", v->id);
	}
	needle_map_free(v->map);
	pthread_mutex_destroy(&v->vacuum_lock);
	pthread_mutex_destroy(&v->write_lock);
	pthread_mutex_destroy(&v->sync_lock);
	pthread_rwlock_destroy(&v->map_lock);
	free(v->dir);
	free(v->collection);
	free(v->path_dat);
	free(v->path_idx);
	free(v->path_cpd);
	free(v->path_cpx);
	free(v->path_ro);
	free(v);
}

wfs_err volume_open(const char *dir, const char *collection, uint32_t id,
		    const struct volume_create *create, volume **out)
{
	volume *v = xcalloc(1, sizeof(*v));
	pthread_rwlockattr_t ra;
	pthread_mutexattr_t ma;
	uint8_t sbuf[SUPERBLOCK_SIZE];
	struct stat st;
	bool fresh = false;
	wfs_err err = WFS_OK;

	*out = NULL;
	if (!collection)
		collection = "";
	if (!volume_collection_valid(collection)) {
		free(v);
		return WFS_EINVAL;
	}
	v->dir = xstrdup(dir);
	v->collection = xstrdup(collection);
	v->id = id;
	v->path_dat = vpath(dir, collection, id, ".dat");
	v->path_idx = vpath(dir, collection, id, ".idx");
	v->path_cpd = vpath(dir, collection, id, ".cpd");
	v->path_cpx = vpath(dir, collection, id, ".cpx");
	v->path_ro = vpath(dir, collection, id, VOLUME_READONLY_MARK);
	v->dat_fd = v->idx_fd = v->cpd_fd = v->cpx_fd = -1;
	atomic_init(&v->refs, 1);
	atomic_init(&v->appended, 1); /* what load finds is not known to be on disk */
	pthread_mutex_init(&v->vacuum_lock, NULL);
	pthread_mutex_init(&v->sync_lock, NULL);
	/* adaptive: the critical section is two short syscalls, so spin before sleeping */
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&v->write_lock, &ma);
	pthread_mutexattr_destroy(&ma);
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&v->map_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	v->map = needle_map_new();

	/* leftovers of a vacuum, see DESIGN */
	if (file_exists(v->path_cpd)) {
		log_warn("volume %" PRIu32 ": removing unfinished compaction", id);
		unlink(v->path_cpx);
		unlink(v->path_cpd);
	} else if (file_exists(v->path_cpx)) {
		log_warn("volume %" PRIu32 ": completing an interrupted compaction commit", id);
		if (rename(v->path_cpx, v->path_idx) < 0) {
			err = wfs_err_from_errno(errno);
			goto out;
		}
	}
	if (file_exists(v->path_ro))
		atomic_store(&v->read_only, true);
	v->dat_fd = open(v->path_dat, O_RDWR | (create ? O_CREAT : 0), 0644);
	if (v->dat_fd < 0) {
		err = wfs_err_from_errno(errno);
		goto out;
	}
	if (fstat(v->dat_fd, &st) < 0) {
		err = WFS_EIO;
		goto out;
	}
	v->modified_sec = (uint64_t)st.st_mtime;
	if (st.st_size == 0 && create) {
		v->rp_byte = replica_placement_byte(&create->rp);
		ttl_to_bytes(&create->ttl, v->ttl_bytes);
		superblock_encode(v, 0, sbuf);
		err = write_all(v->dat_fd, sbuf, sizeof(sbuf));
		if (err)
			goto out;
		if (create->preallocate)
			(void)fallocate(v->dat_fd, FALLOC_FL_KEEP_SIZE, 0,
					(off_t)create->preallocate);
		st.st_size = SUPERBLOCK_SIZE;
		v->modified_sec = (uint64_t)time(NULL);
		fresh = true;
	}
	v->dat_size = (uint64_t)st.st_size;
	if (pread_all(v->dat_fd, sbuf, sizeof(sbuf), 0) || sbuf[0] != NEEDLE_VERSION) {
		log_error("volume %" PRIu32 ": %s has no version 3 superblock", id, v->path_dat);
		err = WFS_ECORRUPT;
		goto out;
	}
	v->version = sbuf[0];
	v->rp_byte = sbuf[1];
	v->ttl_bytes[0] = sbuf[2];
	v->ttl_bytes[1] = sbuf[3];
	v->revision = get_be16(sbuf + 4);
	v->extra_size = get_be16(sbuf + 6);
	v->data_start = SUPERBLOCK_SIZE + v->extra_size;
	if (v->data_start % NEEDLE_ALIGN)
		v->data_start += NEEDLE_ALIGN - v->data_start % NEEDLE_ALIGN;
	if (v->dat_size < v->data_start) {
		err = WFS_ECORRUPT;
		goto out;
	}
	/* a stale .idx without its .dat means nothing */
	v->idx_fd = open(v->path_idx, O_RDWR | O_APPEND | (fresh ? O_CREAT | O_TRUNC : 0), 0644);
	if (fresh && v->idx_fd >= 0) {
		err = WFS_OK;
	} else if (v->idx_fd < 0 && errno == ENOENT) {
		err = rebuild_idx(v);
	} else if (v->idx_fd < 0) {
		err = wfs_err_from_errno(errno);
	} else {
		err = load(v);
	}
	if (!err)
		load_last_append(v);
out:
	if (err) {
		volume_free(v);
		return err;
	}
	*out = v;
	return WFS_OK;
}

void volume_ref(volume *v) { atomic_fetch_add(&v->refs, 1); }

void volume_unref(volume *v)
{
	if (v && atomic_fetch_sub(&v->refs, 1) == 1)
		volume_free(v);
}

void volume_destroy(volume *v) { atomic_store(&v->destroyed, true); }

uint32_t volume_id(const volume *v) { return v->id; }

const char *volume_dir(const volume *v) { return v->dir; }

const char *volume_collection(const volume *v) { return v->collection; }

void volume_get_info(volume *v, struct volume_info *out)
{
	memset(out, 0, sizeof(*out));
	out->id = v->id;
	snprintf(out->collection, sizeof(out->collection), "%s", v->collection);
	replica_placement_from_byte(v->rp_byte, &out->rp);
	ttl_from_bytes(v->ttl_bytes, &out->ttl);
	out->version = v->version;
	out->read_only = atomic_load(&v->read_only);
	out->disk_full = atomic_load(&v->disk_full);
	out->last_append_ns = atomic_load(&v->last_append_ns);
	out->modified_at_sec = atomic_load(&v->modified_sec);
	pthread_rwlock_rdlock(&v->map_lock);
	out->compact_revision = v->revision;
	out->size = v->dat_size;
	out->file_count = v->st.file_count;
	out->delete_count = v->st.delete_count;
	out->deleted_bytes = v->st.deleted_bytes;
	out->live_count = needle_map_live(v->map);
	out->max_key = needle_map_max_key(v->map);
	pthread_rwlock_unlock(&v->map_lock);
	out->appended = atomic_load(&v->appended);
	out->synced = atomic_load(&v->synced);
	out->syncs = atomic_load(&v->syncs);
}

void volume_set_read_only(volume *v, bool ro)
{
	atomic_store(&v->read_only, ro);
	/* kept across a restart: a sealed volume (say, one waiting for ec.encode) stays sealed */
	if (ro) {
		int fd = open(v->path_ro, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			log_warn("volume %" PRIu32 ": could not record read-only in %s: %s", v->id,
				 v->path_ro, strerror(errno));
		else
			close(fd);
	} else if (unlink(v->path_ro) < 0 && errno != ENOENT) {
		log_warn("volume %" PRIu32 ": could not remove %s: %s", v->id, v->path_ro,
			 strerror(errno));
	}
}

bool volume_read_only(volume *v) { return atomic_load(&v->read_only); }

void volume_set_size_limit(volume *v, uint64_t limit) { atomic_store(&v->size_limit, limit); }

bool needle_expired(const struct needle *n, uint64_t now_sec)
{
	struct ttl t;
	uint64_t base;
	if (!(n->flags & NEEDLE_FLAG_HAS_TTL))
		return false;
	ttl_from_bytes(n->ttl, &t);
	if (!ttl_is_set(&t))
		return false;
	base = (n->flags & NEEDLE_FLAG_HAS_LAST_MODIFIED) ? n->last_modified
							  : n->append_ns / 1000000000u;
	return now_sec >= base + ttl_seconds(&t);
}

bool volume_expired(volume *v, uint64_t now_sec)
{
	struct ttl t;
	ttl_from_bytes(v->ttl_bytes, &t);
	if (!ttl_is_set(&t))
		return false;
	return now_sec >= atomic_load(&v->modified_sec) + ttl_seconds(&t);
}

/* Reads the live needle e into storage; caller holds map_lock (read). */
static wfs_err read_entry(volume *v, const struct nm_entry *e, buf *storage, struct needle *n)
{
	uint32_t size = e->size & ~NM_DELETED;
	uint64_t len = needle_disk_size(size);
	wfs_err err;

	buf_reset(storage);
	buf_reserve(storage, len);
	err = pread_all(v->dat_fd, storage->data, len, (uint64_t)e->offset * NEEDLE_ALIGN);
	if (err)
		return err;
	storage->len = len;
	err = needle_decode((uint8_t *)storage->data, len, true, n);
	if (!err && n->key != e->key)
		err = WFS_ECORRUPT;
	return err;
}

/*
 * Compares the len data bytes at off in the .dat with mem (when non-NULL) or
 * with fd from 0, in pieces. Caller holds write_lock.
 */
static bool same_data(volume *v, uint64_t off, uint64_t len, const uint8_t *mem, int fd)
{
	size_t piece = (size_t)MIN(len, (uint64_t)COPY_PIECE);
	char *a = xmalloc(piece + 1), *b = mem ? NULL : xmalloc(piece + 1);
	bool same = true;

	for (uint64_t done = 0; same && done < len; done += piece) {
		piece = (size_t)MIN(len - done, (uint64_t)COPY_PIECE);
		same = !pread_all(v->dat_fd, a, piece, off + done) &&
		       (mem ? !memcmp(a, mem + done, piece)
			    : !pread_all(fd, b, piece, done) && !memcmp(a, b, piece));
	}
	free(a);
	free(b);
	return same;
}

/*
 * Checks a write of n (crc of its data) against the live needle old: the
 * cookie must match (WFS_EPERM) and *unchanged tells whether the content is
 * the same. Reads at most 1 MiB at a time. Caller holds write_lock.
 */
static wfs_err check_existing(volume *v, const struct nm_entry *old, const struct needle *n,
			      uint32_t crc, int fd, bool *unchanged)
{
	uint64_t off = (uint64_t)old->offset * NEEDLE_ALIGN;
	struct needle on;
	buf b = BUF_INIT;
	wfs_err err;

	err = read_meta(v->dat_fd, off, old->size, false, &b, &on);
	if (err) {
		buf_free(&b);
		return WFS_OK; /* overwrite a damaged needle */
	}
	if (on.cookie != n->cookie) {
		buf_free(&b);
		return WFS_EPERM;
	}
	*unchanged = on.data_size == n->data_size && crc32c_stored_matches(on.crc, crc) &&
		     on.name_len == n->name_len && on.mime_len == n->mime_len &&
		     (!n->name_len || !memcmp(on.name, n->name, n->name_len)) &&
		     (!n->mime_len || !memcmp(on.mime, n->mime, n->mime_len)) &&
		     same_data(v, off + NEEDLE_HEAD_SIZE, n->data_size, n->data, fd);
	buf_free(&b);
	return WFS_OK;
}

/*
 * A failed append: cuts both files back to their last good ends (a needle
 * left without its .idx entry would come back at the next load) and, when
 * the disk or the quota is full, turns the volume read-only, logged once: the
 * heartbeat reports it and the master stops assigning to it. Caller holds
 * write_lock.
 */
static void append_failed(volume *v, uint64_t dat_end, wfs_err err)
{
	if (ftruncate(v->dat_fd, (off_t)dat_end) < 0 || ftruncate(v->idx_fd, (off_t)v->idx_size) < 0)
		log_error("volume %" PRIu32 ": cannot cut back a failed append: %s", v->id,
			  strerror(errno));
	volume_note_full(v, err);
}

void volume_note_full(volume *v, wfs_err err)
{
	if ((err == WFS_ENOSPC || err == WFS_EQUOTA) && !atomic_exchange(&v->disk_full, true)) {
		atomic_store(&v->read_only, true);
		log_error("volume %" PRIu32 ": %s is full (%s); the volume is read-only now",
			  v->id, v->dir, wfs_strerror(err));
	}
}

/*
 * Records an append of a record of len bytes at off (size 0: a deletion) in
 * the map and the statistics. Caller holds write_lock.
 */
static void appended(volume *v, uint64_t key, uint64_t off, uint32_t size, uint64_t len,
		     uint64_t append_ns)
{
	pthread_rwlock_wrlock(&v->map_lock);
	if (size)
		apply_put(v->map, &v->st, key, (uint32_t)(off / NEEDLE_ALIGN), size);
	else
		apply_delete(v->map, &v->st, key, NULL);
	v->dat_size = off + len;
	v->idx_size += IDX_ENTRY_SIZE;
	pthread_rwlock_unlock(&v->map_lock);
	atomic_fetch_add(&v->appended, 1);
	atomic_store(&v->modified_sec, append_ns / 1000000000u);
	atomic_store(&v->last_append_ns, append_ns);
}

/* volume_write and volume_write_fd: the data is n->data, or fd's first data_size bytes. */
static wfs_err write_needle(volume *v, struct needle *n, uint32_t crc, int fd, bool *unchanged)
{
	struct needle_enc enc = {0};
	struct nm_entry old;
	bool have_old;
	uint64_t off, limit;
	uint32_t body;
	wfs_err err = WFS_OK;

	*unchanged = false;
	if (atomic_load(&v->read_only))
		return WFS_EREADONLY;
	if (n->key == 0)
		return WFS_EINVAL;
	if (!(n->flags & NEEDLE_FLAG_HAS_TTL) && (v->ttl_bytes[0] || v->ttl_bytes[1])) {
		n->flags |= NEEDLE_FLAG_HAS_TTL;
		n->ttl[0] = v->ttl_bytes[0];
		n->ttl[1] = v->ttl_bytes[1];
	}
	body = needle_body_size(n);
	if (body > NEEDLE_MAX_BODY)
		return WFS_ETOOBIG;

	pthread_mutex_lock(&v->write_lock);
	pthread_rwlock_rdlock(&v->map_lock);
	have_old = needle_map_get(v->map, n->key, &old) && !(old.size & NM_DELETED);
	pthread_rwlock_unlock(&v->map_lock);
	if (have_old) {
		/* dat_fd cannot change: swaps need write_lock */
		err = check_existing(v, &old, n, crc, fd, unchanged);
		if (err || *unchanged) {
			n->crc = crc;
			goto out;
		}
	}
	n->append_ns = time_now_ns();
	needle_encode_crc(n, crc, &enc);
	off = v->dat_size;
	limit = atomic_load(&v->size_limit);
	if ((limit && off + enc.total > limit) || (off + enc.total) / NEEDLE_ALIGN > UINT32_MAX) {
		err = WFS_ENOSPC;
		goto out;
	}
	if (fd < 0) {
		err = pwritev_pieces(v->dat_fd, enc.iov, enc.iovcnt, off);
	} else {
		err = pwritev_all(v->dat_fd, &enc.iov[0], 1, off);
		if (!err)
			err = copy_range(fd, 0, v->dat_fd, off + NEEDLE_HEAD_SIZE, n->data_size);
		if (!err)
			err = pwritev_all(v->dat_fd, &enc.iov[2], 1,
					  off + NEEDLE_HEAD_SIZE + n->data_size);
	}
	if (!err) {
		uint8_t e[IDX_ENTRY_SIZE];
		idx_entry_encode(e, n->key, (uint32_t)(off / NEEDLE_ALIGN), n->size);
		err = write_all(v->idx_fd, e, sizeof(e));
	}
	if (err) {
		log_error("volume %" PRIu32 ": write failed: %s", v->id, wfs_strerror(err));
		append_failed(v, off, err);
		goto out;
	}
	appended(v, n->key, off, n->size, enc.total, n->append_ns);
out:
	pthread_mutex_unlock(&v->write_lock);
	needle_enc_free(&enc);
	return err;
}

wfs_err volume_write(volume *v, struct needle *n, bool *unchanged)
{
	uint32_t crc = n->data_size ? crc32c_update(0, n->data, n->data_size) : 0;
	return write_needle(v, n, crc, -1, unchanged);
}

wfs_err volume_write_crc(volume *v, struct needle *n, uint32_t crc, bool *unchanged)
{
	return write_needle(v, n, crc, -1, unchanged);
}

wfs_err volume_write_fd(volume *v, struct needle *n, int fd, uint32_t crc, bool *unchanged)
{
	n->data = NULL;
	return write_needle(v, n, crc, fd, unchanged);
}

wfs_err volume_delete(volume *v, uint64_t key, uint32_t cookie, uint64_t append_ns, uint32_t *size)
{
	struct needle_enc enc = {0};
	struct nm_entry old;
	uint8_t h[NEEDLE_HEADER_SIZE], e[IDX_ENTRY_SIZE];
	uint32_t c, s;
	uint64_t k, off, now;
	wfs_err err;

	if (atomic_load(&v->read_only))
		return WFS_EREADONLY;
	pthread_mutex_lock(&v->write_lock);
	pthread_rwlock_rdlock(&v->map_lock);
	err = needle_map_get(v->map, key, &old) && !(old.size & NM_DELETED) ? WFS_OK : WFS_ENOENT;
	pthread_rwlock_unlock(&v->map_lock);
	if (err)
		goto out;
	err = pread_all(v->dat_fd, h, sizeof(h), (uint64_t)old.offset * NEEDLE_ALIGN);
	if (err)
		goto out;
	needle_parse_header(h, &c, &k, &s);
	if (c != cookie || k != key) {
		err = WFS_ENOENT;
		goto out;
	}
	now = append_ns ? append_ns : time_now_ns();
	needle_encode_delete(cookie, key, now, &enc);
	off = v->dat_size;
	err = pwritev_all(v->dat_fd, enc.iov, enc.iovcnt, off);
	if (!err) {
		idx_entry_encode(e, key, (uint32_t)(off / NEEDLE_ALIGN), NEEDLE_TOMBSTONE);
		err = write_all(v->idx_fd, e, sizeof(e));
	}
	if (err) {
		append_failed(v, off, err);
		goto out;
	}
	appended(v, key, off, 0, enc.total, now);
	*size = old.size;
out:
	pthread_mutex_unlock(&v->write_lock);
	needle_enc_free(&enc);
	return err;
}

wfs_err volume_sync(volume *v)
{
	uint64_t want = atomic_load(&v->appended), upto;
	int dfd = -1, ifd = -1;
	wfs_err err = WFS_OK;

	pthread_mutex_lock(&v->sync_lock);
	if (v->sync_failed) {
		err = WFS_EIO;
		goto out;
	}
	if (atomic_load(&v->synced) >= want)
		goto out; /* a round that started after our appends covered them */
	/* everything appended by now rides along; its writes are complete */
	upto = atomic_load(&v->appended);
	pthread_rwlock_rdlock(&v->map_lock);
	dfd = fcntl(v->dat_fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		err = wfs_err_from_errno(errno);
	else if ((ifd = fcntl(v->idx_fd, F_DUPFD_CLOEXEC, 0)) < 0)
		err = wfs_err_from_errno(errno);
	pthread_rwlock_unlock(&v->map_lock);
	if (err)
		goto out;
	if (fdatasync(dfd) < 0 || fdatasync(ifd) < 0) {
		log_error("volume %" PRIu32 ": fdatasync failed: %s; later syncs fail too", v->id,
			  strerror(errno));
		v->sync_failed = true;
		err = WFS_EIO;
		goto out;
	}
	atomic_store(&v->synced, upto);
	atomic_fetch_add(&v->syncs, 1);
out:
	pthread_mutex_unlock(&v->sync_lock);
	if (dfd >= 0)
		close(dfd);
	if (ifd >= 0)
		close(ifd);
	return err;
}

wfs_err volume_read_ex(volume *v, uint64_t key, uint32_t cookie, bool read_deleted,
		       uint64_t inline_max, buf *storage, struct needle *n,
		       struct needle_blob *blob)
{
	struct nm_entry e;
	uint32_t size;
	wfs_err err;

	if (blob)
		blob->fd = -1;
	pthread_rwlock_rdlock(&v->map_lock);
	if (!needle_map_get(v->map, key, &e) || ((e.size & NM_DELETED) && !read_deleted) ||
	    e.offset == 0) {
		pthread_rwlock_unlock(&v->map_lock);
		return WFS_ENOENT;
	}
	size = e.size & ~NM_DELETED;
	if (blob && needle_disk_size(size) > inline_max) {
		uint64_t off = (uint64_t)e.offset * NEEDLE_ALIGN;
		err = read_meta(v->dat_fd, off, size, false, storage, n);
		if (!err && n->key != key)
			err = WFS_ECORRUPT;
		/* the dup keeps this .dat readable even if a vacuum swaps the files */
		if (!err && (blob->fd = fcntl(v->dat_fd, F_DUPFD_CLOEXEC, 0)) < 0)
			err = wfs_err_from_errno(errno);
		blob->off = off + NEEDLE_HEAD_SIZE;
	} else {
		err = read_entry(v, &e, storage, n);
	}
	pthread_rwlock_unlock(&v->map_lock);
	if (!err &&
	    (n->cookie != cookie || n->size == 0 || needle_expired(n, (uint64_t)time(NULL))))
		err = WFS_ENOENT;
	if (err && blob && blob->fd >= 0) {
		close(blob->fd);
		blob->fd = -1;
	}
	return err;
}

wfs_err volume_read(volume *v, uint64_t key, uint32_t cookie, bool read_deleted, buf *storage,
		    struct needle *n)
{
	return volume_read_ex(v, key, cookie, read_deleted, UINT64_MAX, storage, n, NULL);
}

wfs_err volume_snapshot(volume *v, bool fds, uint64_t key, struct volume_snapshot *s)
{
	struct nm_entry e;
	wfs_err err = WFS_OK;

	memset(s, 0, sizeof(*s));
	s->dat_fd = s->idx_fd = -1;
	pthread_rwlock_rdlock(&v->map_lock);
	s->revision = v->revision;
	s->dat_size = v->dat_size;
	s->idx_size = v->idx_size;
	s->data_start = v->data_start;
	if (key && needle_map_get(v->map, key, &e) && e.offset) {
		s->found = true;
		s->deleted = (e.size & NM_DELETED) != 0;
		s->off = (uint64_t)e.offset * NEEDLE_ALIGN;
		s->size = e.size & ~NM_DELETED;
	}
	/* dups: the files stay readable as they are now even if a vacuum swaps them */
	if (fds && ((s->dat_fd = fcntl(v->dat_fd, F_DUPFD_CLOEXEC, 0)) < 0 ||
		    (s->idx_fd = fcntl(v->idx_fd, F_DUPFD_CLOEXEC, 0)) < 0))
		err = wfs_err_from_errno(errno);
	pthread_rwlock_unlock(&v->map_lock);
	s->last_append_ns = atomic_load(&v->last_append_ns);
	if (err)
		volume_snapshot_close(s);
	return err;
}

void volume_snapshot_close(struct volume_snapshot *s)
{
	if (s->dat_fd >= 0)
		close(s->dat_fd);
	if (s->idx_fd >= 0)
		close(s->idx_fd);
	s->dat_fd = s->idx_fd = -1;
}

/*
 * True if the live needle e is the record rec (cookie, size and append time
 * agree: the same write). Caller holds write_lock.
 */
static bool same_record(volume *v, const struct nm_entry *e, const struct needle *rec)
{
	uint64_t off = (uint64_t)e->offset * NEEDLE_ALIGN;
	uint8_t h[NEEDLE_HEADER_SIZE], t[NEEDLE_TRAILER_SIZE];
	uint32_t cookie, size;
	uint64_t key;

	if (e->size != rec->size || pread_all(v->dat_fd, h, sizeof(h), off) ||
	    pread_all(v->dat_fd, t, sizeof(t), off + NEEDLE_HEADER_SIZE + e->size))
		return false;
	needle_parse_header(h, &cookie, &key, &size);
	return cookie == rec->cookie && key == rec->key && get_be64(t + 4) == rec->append_ns;
}

wfs_err volume_append_raw(volume *v, const uint8_t *rec, size_t len, bool *unchanged)
{
	struct needle n;
	struct nm_entry e;
	struct iovec iov = {(void *)rec, len};
	uint8_t ie[IDX_ENTRY_SIZE];
	bool have, live;
	uint64_t off;
	wfs_err err;

	*unchanged = false;
	if (needle_raw_check(rec, len, &n))
		return WFS_EINVAL;
	if (atomic_load(&v->read_only))
		return WFS_EREADONLY;
	pthread_mutex_lock(&v->write_lock);
	pthread_rwlock_rdlock(&v->map_lock);
	have = needle_map_get(v->map, n.key, &e);
	pthread_rwlock_unlock(&v->map_lock);
	live = have && !(e.size & NM_DELETED);
	/* a deletion of what is not here, or the very write already here: nothing to do */
	if ((n.size == 0 && !live) || (n.size && live && same_record(v, &e, &n))) {
		*unchanged = true;
		err = WFS_OK;
		goto out;
	}
	off = v->dat_size;
	if ((off + len) / NEEDLE_ALIGN > UINT32_MAX) {
		err = WFS_ENOSPC;
		goto out;
	}
	err = pwritev_pieces(v->dat_fd, &iov, 1, off);
	if (!err) {
		idx_entry_encode(ie, n.key, (uint32_t)(off / NEEDLE_ALIGN),
				 n.size ? n.size : NEEDLE_TOMBSTONE);
		err = write_all(v->idx_fd, ie, sizeof(ie));
	}
	if (err) {
		log_error("volume %" PRIu32 ": raw append failed: %s", v->id, wfs_strerror(err));
		append_failed(v, off, err);
		goto out;
	}
	appended(v, n.key, off, n.size, len, n.append_ns);
out:
	pthread_mutex_unlock(&v->write_lock);
	return err;
}

double volume_garbage_ratio(volume *v)
{
	double r;
	pthread_rwlock_rdlock(&v->map_lock);
	r = v->dat_size > v->data_start ? (double)v->st.deleted_bytes / (double)v->dat_size : 0;
	pthread_rwlock_unlock(&v->map_lock);
	return r;
}

/* ---- vacuum ---- */

static void compaction_drop(volume *v)
{
	if (!v->compacting)
		return;
	close(v->cpd_fd);
	close(v->cpx_fd);
	unlink(v->path_cpx); /* .cpx first: a lone .cpx means "commit done" */
	unlink(v->path_cpd);
	needle_map_free(v->cmap);
	v->cmap = NULL;
	v->cpd_fd = v->cpx_fd = -1;
	v->compacting = false;
}

struct snap {
	struct nm_entry *e;
	size_t n, cap;
};

static bool snap_add(const struct nm_entry *e, void *arg)
{
	struct snap *s = arg;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->e = xrealloc(s->e, s->cap * sizeof(*s->e));
	}
	s->e[s->n++] = *e;
	return true;
}

/*
 * Appends a raw needle to the .cpd (from memory p, else the .dat's bytes at
 * src) and its entry to the map and out (compaction files).
 */
static wfs_err copy_needle(volume *v, const uint8_t *p, uint64_t src, uint64_t len, uint64_t key,
			   uint32_t size, struct idx_out *o)
{
	struct iovec iov = {(void *)p, len};
	uint32_t uoff = (uint32_t)(v->cdat_size / NEEDLE_ALIGN);
	wfs_err err = p ? pwritev_all(v->cpd_fd, &iov, 1, v->cdat_size)
			: copy_range(v->dat_fd, src, v->cpd_fd, v->cdat_size, len);
	if (err)
		return err;
	v->cdat_size += len;
	if (size == 0) {
		apply_delete(v->cmap, &v->cst, key, NULL);
		idx_out_add(o, key, uoff, NEEDLE_TOMBSTONE);
	} else {
		apply_put(v->cmap, &v->cst, key, uoff, size);
		idx_out_add(o, key, uoff, size);
	}
	return WFS_OK;
}

wfs_err volume_compact(volume *v)
{
	struct snap s = {0};
	struct idx_out o = {BUF_INIT, -1, WFS_OK, 0};
	uint8_t sbuf[SUPERBLOCK_SIZE];
	uint64_t now = (uint64_t)time(NULL);
	buf b = BUF_INIT;
	uint16_t rev;
	wfs_err err = WFS_OK;

	pthread_mutex_lock(&v->vacuum_lock);
	compaction_drop(v);
	pthread_mutex_lock(&v->write_lock);
	pthread_rwlock_rdlock(&v->map_lock);
	needle_map_foreach(v->map, snap_add, &s);
	rev = v->revision;
	pthread_rwlock_unlock(&v->map_lock);
	v->snap_idx_size = v->idx_size;
	pthread_mutex_unlock(&v->write_lock);

	/* .cpd before .cpx, see DESIGN */
	v->cpd_fd = open(v->path_cpd, O_RDWR | O_CREAT | O_TRUNC, 0644);
	v->cpx_fd =
		v->cpd_fd < 0 ? -1 : open(v->path_cpx, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (v->cpd_fd < 0 || v->cpx_fd < 0) {
		err = wfs_err_from_errno(errno);
		if (v->cpd_fd >= 0)
			close(v->cpd_fd);
		unlink(v->path_cpd);
		goto out;
	}
	v->compacting = true;
	v->cmap = needle_map_new();
	memset(&v->cst, 0, sizeof(v->cst));
	superblock_encode(v, (uint16_t)(rev + 1), sbuf);
	err = write_all(v->cpd_fd, sbuf, sizeof(sbuf));
	v->cdat_size = SUPERBLOCK_SIZE;
	o.fd = v->cpx_fd;
	for (size_t i = 0; i < s.n && !err; i++) {
		struct needle n;
		uint64_t off = (uint64_t)s.e[i].offset * NEEDLE_ALIGN;
		/* the fds only change in commit, which needs vacuum_lock */
		if (read_meta(v->dat_fd, off, s.e[i].size, false, &b, &n) || n.key != s.e[i].key) {
			log_warn("volume %" PRIu32 ": compaction skips damaged needle %" PRIx64,
				 v->id, s.e[i].key);
			continue;
		}
		if (needle_expired(&n, now))
			continue;
		err = copy_needle(v, NULL, off, needle_disk_size(n.size), n.key, n.size, &o);
	}
	idx_out_flush(&o);
	if (!err)
		err = o.err;
	v->cidx_size = o.written;
	if (err)
		compaction_drop(v);
out:
	pthread_mutex_unlock(&v->vacuum_lock);
	free(s.e);
	buf_free(&b);
	buf_free(&o.pending);
	if (err)
		log_error("volume %" PRIu32 ": compaction failed: %s", v->id, wfs_strerror(err));
	return err;
}

/* Copies the needles behind .idx entries [snap_idx_size, idx_size) into the compaction. */
static wfs_err replay(volume *v, struct idx_out *o)
{
	uint64_t pos = v->snap_idx_size;
	buf b = BUF_INIT;
	wfs_err err = WFS_OK;

	while (!err && pos < v->idx_size) {
		uint8_t e[IDX_ENTRY_SIZE];
		uint64_t key, len;
		uint32_t uoff, size;
		err = pread_all(v->idx_fd, e, sizeof(e), pos);
		if (err)
			break;
		pos += IDX_ENTRY_SIZE;
		idx_entry_decode(e, &key, &uoff, &size);
		if (size == NEEDLE_TOMBSTONE) {
			struct needle_enc enc = {0};
			struct nm_entry cur;
			if (!needle_map_get(v->cmap, key, &cur) || (cur.size & NM_DELETED))
				continue;
			needle_encode_delete(0, key, time_now_ns(), &enc);
			buf_reset(&b);
			for (int i = 0; i < enc.iovcnt; i++)
				buf_append(&b, enc.iov[i].iov_base, enc.iov[i].iov_len);
			needle_enc_free(&enc);
			err = copy_needle(v, (uint8_t *)b.data, 0, b.len, key, 0, o);
			continue;
		}
		len = needle_disk_size(size);
		err = copy_needle(v, NULL, (uint64_t)uoff * NEEDLE_ALIGN, len, key, size, o);
	}
	buf_free(&b);
	return err;
}

wfs_err volume_commit(volume *v)
{
	struct idx_out o = {BUF_INIT, -1, WFS_OK, 0};
	wfs_err err;
	int old_dat, old_idx;

	pthread_mutex_lock(&v->vacuum_lock);
	if (!v->compacting) {
		pthread_mutex_unlock(&v->vacuum_lock);
		return WFS_EINVAL;
	}
	pthread_mutex_lock(&v->write_lock);
	o.fd = v->cpx_fd;
	err = replay(v, &o);
	idx_out_flush(&o);
	if (!err)
		err = o.err;
	if (!err && (fsync(v->cpd_fd) < 0 || fsync(v->cpx_fd) < 0))
		err = WFS_EIO;
	if (err) {
		compaction_drop(v);
		goto out;
	}
	pthread_rwlock_wrlock(&v->map_lock);
	if (rename(v->path_cpd, v->path_dat) < 0) {
		err = wfs_err_from_errno(errno);
		pthread_rwlock_unlock(&v->map_lock);
		compaction_drop(v);
		goto out;
	}
	/* committed; a failure from here on is repaired by the next load */
	if (rename(v->path_cpx, v->path_idx) < 0)
		log_error("volume %" PRIu32 ": rename %s: %s", v->id, v->path_cpx, strerror(errno));
	fsync_dir(v->dir);
	old_dat = v->dat_fd;
	old_idx = v->idx_fd;
	v->dat_fd = v->cpd_fd;
	v->idx_fd = v->cpx_fd;
	needle_map_free(v->map);
	v->map = v->cmap;
	v->st = v->cst;
	v->dat_size = v->cdat_size;
	v->idx_size = v->cidx_size + o.written;
	v->revision++;
	pthread_rwlock_unlock(&v->map_lock);
	close(old_dat);
	close(old_idx);
	v->cmap = NULL;
	v->cpd_fd = v->cpx_fd = -1;
	v->compacting = false;
	log_info("volume %" PRIu32 ": compacted to revision %u", v->id, v->revision);
out:
	pthread_mutex_unlock(&v->write_lock);
	pthread_mutex_unlock(&v->vacuum_lock);
	buf_free(&o.pending);
	return err;
}

wfs_err volume_cleanup(volume *v)
{
	pthread_mutex_lock(&v->vacuum_lock);
	compaction_drop(v);
	unlink(v->path_cpx);
	unlink(v->path_cpd);
	pthread_mutex_unlock(&v->vacuum_lock);
	return WFS_OK;
}
