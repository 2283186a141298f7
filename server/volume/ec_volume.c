/*
 * An erasure-coded volume on one server (see ec_volume.h for the design).
 *
 * Locks: shard_lock (writer-preferring rwlock) guards fds[] and bits; a read holds it
 * shared only across one pread of a local shard, never across a fetch from another server,
 * so a mount or unmount waits for a disk read at most. del_lock serializes deletions (the
 * .ecj append and the .ecx tombstone); lookups pread the .ecx without it (a tombstone is
 * one aligned 4-byte write).
 */
#include "config.h"
#include "server/volume/ec_volume.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "log.h"
#include "server/volume/volume.h"
#include "util.h"

#define PIECE (1u << 20) /* bytes per shard of one reconstruction step */

struct ec_volume {
	atomic_int refs;
	atomic_bool destroyed;
	uint32_t id;
	char *dir, *collection, *base;
	struct ec_blocks blocks;
	struct ec_vif vif;
	uint64_t shard_size; /* what every shard must hold for vif.dat_size */

	pthread_rwlock_t shard_lock;
	int fds[EC_TOTAL_SHARDS]; /* protected by shard_lock */
	uint16_t bits;            /* protected by shard_lock */

	pthread_mutex_t del_lock;
	int ecx_fd, ecj_fd;
	uint64_t entries;         /* .ecx entries; fixed */
	atomic_uint_fast64_t deleted;
};

static char *ext_path(const ec_volume *v, const char *ext)
{
	return xasprintf("%s%s", v->base, ext);
}

/* ---- the .ecx ---- */

static wfs_err ecx_entry(ec_volume *v, uint64_t i, uint64_t *key, uint32_t *off, uint32_t *size)
{
	uint8_t e[IDX_ENTRY_SIZE];
	size_t got;
	wfs_err err = ec_pread(v->ecx_fd, e, sizeof(e), i * IDX_ENTRY_SIZE, &got);
	if (!err && got != sizeof(e))
		err = WFS_ECORRUPT;
	if (!err)
		idx_entry_decode(e, key, off, size);
	return err;
}

/* Binary search of the sorted .ecx; *pos gets the entry's index. */
static wfs_err ecx_find(ec_volume *v, uint64_t key, uint64_t *pos, uint32_t *off, uint32_t *size)
{
	uint64_t lo = 0, hi = v->entries;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2, k;
		wfs_err err = ecx_entry(v, mid, &k, off, size);
		if (err)
			return err;
		if (k == key) {
			*pos = mid;
			return WFS_OK;
		}
		if (k < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return WFS_ENOENT;
}

static wfs_err ecx_tombstone(ec_volume *v, uint64_t pos)
{
	uint8_t t[4];
	put_be32(t, NEEDLE_TOMBSTONE);
	if (pwrite(v->ecx_fd, t, sizeof(t), (off_t)(pos * IDX_ENTRY_SIZE + 12)) != sizeof(t))
		return WFS_EIO;
	return WFS_OK;
}

/*
 * Applies the .ecj to the .ecx (a crash may have come between the append and the
 * tombstone) and counts the deletions. A torn last key is cut off: it was never journaled.
 */
static wfs_err apply_journal(ec_volume *v)
{
	enum { CHUNK = 1 << 16 };
	uint8_t *p = xmalloc(CHUNK);
	struct stat st;
	uint64_t len, pos = 0, del = 0;
	size_t got;
	wfs_err err = WFS_OK;

	if (fstat(v->ecj_fd, &st) < 0) {
		err = wfs_err_from_errno(errno);
		goto out;
	}
	len = (uint64_t)st.st_size / 8 * 8;
	if (len != (uint64_t)st.st_size) {
		log_warn("ec volume %" PRIu32 ": cutting a torn key off the .ecj", v->id);
		if (ftruncate(v->ecj_fd, (off_t)len) < 0) {
			err = wfs_err_from_errno(errno);
			goto out;
		}
	}
	while (pos < len) {
		size_t want = (size_t)MIN((uint64_t)CHUNK, len - pos);
		if ((err = ec_pread(v->ecj_fd, p, want, pos, &got)) || got != want) {
			err = err ? err : WFS_ECORRUPT;
			goto out;
		}
		for (size_t i = 0; i < got; i += 8) {
			uint64_t at;
			uint32_t off, size;
			err = ecx_find(v, get_be64(p + i), &at, &off, &size);
			if (err == WFS_ENOENT) {
				err = WFS_OK;
				continue;
			}
			if (!err && size != NEEDLE_TOMBSTONE)
				err = ecx_tombstone(v, at);
			if (err)
				goto out;
		}
		pos += got;
	}
	/* count what the .ecx has tombstoned, checking the order on the way */
	for (uint64_t i = 0, prev = 0; i < v->entries; i += CHUNK / IDX_ENTRY_SIZE) {
		size_t want = (size_t)MIN((uint64_t)CHUNK, (v->entries - i) * IDX_ENTRY_SIZE);
		if ((err = ec_pread(v->ecx_fd, p, want, i * IDX_ENTRY_SIZE, &got)) || got != want) {
			err = err ? err : WFS_ECORRUPT;
			goto out;
		}
		for (size_t j = 0; j < got; j += IDX_ENTRY_SIZE) {
			uint64_t key;
			uint32_t off, size;
			idx_entry_decode(p + j, &key, &off, &size);
			if ((i || j) && key <= prev) {
				log_error("ec volume %" PRIu32 ": the .ecx is not sorted", v->id);
				err = WFS_ECORRUPT;
				goto out;
			}
			prev = key;
			del += size == NEEDLE_TOMBSTONE;
		}
	}
	atomic_store(&v->deleted, del);
out:
	free(p);
	return err;
}

/* ---- opening ---- */

static void ec_volume_free(ec_volume *v)
{
	bool gone = atomic_load(&v->destroyed);
	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		if (v->fds[i] < 0)
			continue;
		close(v->fds[i]);
		if (gone) {
			char *p = ext_path(v, ec_shard_ext(i));
			unlink(p);
			free(p);
		}
	}
	if (v->ecx_fd >= 0)
		close(v->ecx_fd);
	if (v->ecj_fd >= 0)
		close(v->ecj_fd);
	if (gone) {
		static const char *const ext[] = {".ecx", ".ecj", ".vif"};
		for (size_t i = 0; i < ARRAY_LEN(ext); i++) {
			char *p = ext_path(v, ext[i]);
			unlink(p);
			free(p);
		}
		log_info("ec volume %" PRIu32 " deleted", v->id);
	}
	pthread_rwlock_destroy(&v->shard_lock);
	pthread_mutex_destroy(&v->del_lock);
	free(v->dir);
	free(v->collection);
	free(v->base);
	free(v);
}

wfs_err ec_volume_open_blocks(const char *dir, const char *collection, uint32_t vid,
			      const struct ec_blocks *b, ec_volume **out)
{
	ec_volume *v = xcalloc(1, sizeof(*v));
	pthread_rwlockattr_t ra;
	char *p = NULL;
	struct stat st;
	wfs_err err;

	*out = NULL;
	atomic_init(&v->refs, 1);
	v->id = vid;
	v->dir = xstrdup(dir);
	v->collection = xstrdup(collection ? collection : "");
	v->base = volume_file_path(dir, v->collection, vid, "");
	v->blocks = *b;
	v->ecx_fd = v->ecj_fd = -1;
	for (int i = 0; i < EC_TOTAL_SHARDS; i++)
		v->fds[i] = -1;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&v->shard_lock, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&v->del_lock, NULL);

	err = ec_vif_read(v->base, &v->vif);
	if (err) {
		log_error("ec volume %" PRIu32 ": could not read its .vif: %s", vid,
			  wfs_strerror(err));
		goto out;
	}
	v->shard_size = ec_shard_size(&v->blocks, v->vif.dat_size);
	p = ext_path(v, ".ecx");
	v->ecx_fd = open(p, O_RDWR | O_CLOEXEC);
	if (v->ecx_fd < 0 || fstat(v->ecx_fd, &st) < 0) {
		err = errno == ENOENT ? WFS_ENOENT : wfs_err_from_errno(errno);
		log_error("could not open \"%s\": %s", p, strerror(errno));
		goto out;
	}
	if (st.st_size % IDX_ENTRY_SIZE) {
		log_error("\"%s\" is not a whole number of entries", p);
		err = WFS_ECORRUPT;
		goto out;
	}
	v->entries = (uint64_t)st.st_size / IDX_ENTRY_SIZE;
	free(p);
	p = ext_path(v, ".ecj");
	v->ecj_fd = open(p, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (v->ecj_fd < 0) {
		err = wfs_err_from_errno(errno);
		log_error("could not open \"%s\": %s", p, strerror(errno));
		goto out;
	}
	err = apply_journal(v);
	if (err) {
		log_error("ec volume %" PRIu32 ": bad .ecx or .ecj: %s", vid, wfs_strerror(err));
		goto out;
	}
	ec_volume_mount_shards(v, EC_ALL_SHARDS);
	*out = v;
	v = NULL;
out:
	free(p);
	if (v)
		ec_volume_free(v);
	return err;
}

wfs_err ec_volume_open(const char *dir, const char *collection, uint32_t vid, ec_volume **out)
{
	return ec_volume_open_blocks(dir, collection, vid, &ec_default_blocks, out);
}

void ec_volume_ref(ec_volume *v) { atomic_fetch_add(&v->refs, 1); }

void ec_volume_unref(ec_volume *v)
{
	if (v && atomic_fetch_sub(&v->refs, 1) == 1)
		ec_volume_free(v);
}

void ec_volume_destroy(ec_volume *v) { atomic_store(&v->destroyed, true); }

uint32_t ec_volume_id(const ec_volume *v) { return v->id; }
const char *ec_volume_collection(const ec_volume *v) { return v->collection; }
const char *ec_volume_dir(const ec_volume *v) { return v->dir; }

void ec_volume_get_info(ec_volume *v, struct ec_volume_info *out)
{
	memset(out, 0, sizeof(*out));
	out->id = v->id;
	snprintf(out->collection, sizeof(out->collection), "%s", v->collection);
	out->vif = v->vif;
	out->shard_size = v->shard_size;
	pthread_rwlock_rdlock(&v->shard_lock);
	out->shard_bits = v->bits;
	pthread_rwlock_unlock(&v->shard_lock);
	out->entries = v->entries;
	out->deleted = atomic_load(&v->deleted);
}

uint16_t ec_volume_mount_shards(ec_volume *v, uint16_t bits)
{
	uint16_t now;
	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		char *p;
		struct stat st;
		int fd;
		bool have;
		if (!(bits & (1u << i)))
			continue;
		pthread_rwlock_rdlock(&v->shard_lock);
		have = v->bits & (1u << i);
		pthread_rwlock_unlock(&v->shard_lock);
		if (have)
			continue;
		p = ext_path(v, ec_shard_ext(i));
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) < 0 || (uint64_t)st.st_size != v->shard_size)) {
			log_error("\"%s\" has %" PRIu64 " bytes, not the %" PRIu64
				  " its .vif implies: not mounted",
				  p, (uint64_t)st.st_size, v->shard_size);
			close(fd);
			fd = -1;
		}
		free(p);
		if (fd < 0)
			continue;
		pthread_rwlock_wrlock(&v->shard_lock);
		if (v->fds[i] < 0) {
			v->fds[i] = fd;
			v->bits |= (uint16_t)(1u << i);
			fd = -1;
		}
		pthread_rwlock_unlock(&v->shard_lock);
		if (fd >= 0)
			close(fd); /* mounted meanwhile by another caller */
	}
	pthread_rwlock_rdlock(&v->shard_lock);
	now = v->bits & bits;
	pthread_rwlock_unlock(&v->shard_lock);
	return now;
}

void ec_volume_unmount_shards(ec_volume *v, uint16_t bits, bool remove)
{
	int fds[EC_TOTAL_SHARDS];
	pthread_rwlock_wrlock(&v->shard_lock);
	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		fds[i] = -1;
		if (!(bits & (1u << i)))
			continue;
		fds[i] = v->fds[i];
		v->fds[i] = -1;
		v->bits &= (uint16_t)~(1u << i);
	}
	pthread_rwlock_unlock(&v->shard_lock);
	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		if (remove && (bits & (1u << i))) {
			char *p = ext_path(v, ec_shard_ext(i));
			unlink(p);
			free(p);
		}
	}
}

/* ---- reading ---- */

wfs_err ec_volume_read_shard(ec_volume *v, int shard, uint64_t offset, uint64_t size,
			     uint8_t *out, uint64_t *got)
{
	size_t n = 0;
	wfs_err err;
	*got = 0;
	if (shard < 0 || shard >= EC_TOTAL_SHARDS)
		return WFS_EINVAL;
	pthread_rwlock_rdlock(&v->shard_lock);
	if (v->fds[shard] < 0)
		err = WFS_ENOENT;
	else
		err = ec_pread(v->fds[shard], out, (size_t)size, offset, &n);
	pthread_rwlock_unlock(&v->shard_lock);
	*got = n;
	return err;
}

/* The whole range of one shard, from here or through fetch. */
static wfs_err get_range(ec_volume *v, int shard, uint64_t off, size_t len, ec_fetch_fn fetch,
			 void *ctx, uint8_t *out)
{
	uint64_t got;
	wfs_err err = ec_volume_read_shard(v, shard, off, len, out, &got);
	if (!err && got == len)
		return WFS_OK;
	if (!fetch)
		return WFS_EUNAVAIL;
	return fetch(ctx, v->id, shard, off, len, out) ? WFS_EUNAVAIL : WFS_OK;
}

/*
 * Rebuilds len bytes at off of shard `want` into out from ten other shards that are not in
 * exclude, PIECE bytes at a time. WFS_EUNAVAIL when ten cannot be had.
 */
static wfs_err reconstruct_range(ec_volume *v, int want, uint64_t off, uint64_t len,
				 uint16_t exclude, ec_fetch_fn fetch, void *ctx, uint8_t *out)
{
	uint8_t *bufs[EC_TOTAL_SHARDS] = {0};
	uint16_t bad = exclude | (uint16_t)(1u << want);
	wfs_err err = WFS_OK;

	for (uint64_t done = 0; done < len && !err; done += PIECE) {
		size_t n = (size_t)MIN((uint64_t)PIECE, len - done);
		uint16_t present = 0;
		for (int s = 0; s < EC_TOTAL_SHARDS && __builtin_popcount(present) < EC_DATA_SHARDS;
		     s++) {
			if (bad & (1u << s))
				continue;
			if (!bufs[s])
				bufs[s] = xmalloc(MIN((uint64_t)PIECE, len));
			if (get_range(v, s, off + done, n, fetch, ctx, bufs[s]) == WFS_OK)
				present |= (uint16_t)(1u << s);
			else
				bad |= (uint16_t)(1u << s); /* not for the next pieces either */
		}
		if (__builtin_popcount(present) < EC_DATA_SHARDS) {
			err = WFS_EUNAVAIL;
			break;
		}
		bufs[want] = out + done;
		err = ec_reconstruct(bufs, present, (uint16_t)(1u << want), n);
		bufs[want] = NULL;
	}
	for (int s = 0; s < EC_TOTAL_SHARDS; s++)
		free(bufs[s]);
	return err;
}

/*
 * Reads the needle's pieces into p. direct: each piece from its own shard where it can be
 * had (*used gets those shards), else reconstructed; not direct: every piece reconstructed
 * without the shards of exclude.
 */
static wfs_err read_pieces(ec_volume *v, const struct ec_interval *iv, size_t n, bool direct,
			   uint16_t exclude, ec_fetch_fn fetch, void *ctx, uint8_t *p,
			   uint16_t *used)
{
	for (size_t i = 0; i < n; i++) {
		wfs_err err = WFS_EUNAVAIL;
		if (direct &&
		    get_range(v, iv[i].shard, iv[i].shard_offset, iv[i].size, fetch, ctx, p) == WFS_OK) {
			*used |= (uint16_t)(1u << iv[i].shard);
			err = WFS_OK;
		}
		if (err)
			err = reconstruct_range(v, iv[i].shard, iv[i].shard_offset, iv[i].size,
						exclude, fetch, ctx, p);
		if (err)
			return err;
		p += iv[i].size;
	}
	return WFS_OK;
}

wfs_err ec_volume_read(ec_volume *v, uint64_t key, uint32_t cookie, ec_fetch_fn fetch,
		       void *ctx, buf *storage, struct needle *n)
{
	struct ec_interval one[4], *iv = one;
	uint64_t pos, len, off;
	uint32_t uoff, size;
	uint16_t used = 0;
	bool cookie_only = false;
	size_t cnt;
	wfs_err err;

	err = ecx_find(v, key, &pos, &uoff, &size);
	if (err)
		return err;
	if (size == NEEDLE_TOMBSTONE || size == 0 || uoff == 0 || size > NEEDLE_MAX_BODY)
		return WFS_ENOENT;
	off = (uint64_t)uoff * NEEDLE_ALIGN;
	len = needle_disk_size(size);
	if (off + len > v->vif.dat_size)
		return WFS_ECORRUPT; /* the .ecx names bytes the .dat never had */
	cnt = ec_locate(&v->blocks, v->shard_size, off, len, one, ARRAY_LEN(one));
	if (cnt == 0)
		return WFS_ECORRUPT; /* the .ecx names bytes the shards do not have */
	if (cnt > ARRAY_LEN(one)) {
		iv = xmalloc(cnt * sizeof(*iv));
		ec_locate(&v->blocks, v->shard_size, off, len, iv, cnt);
	}
	buf_reset(storage);
	buf_reserve(storage, len);
	storage->len = len;
	for (int pass = 0; pass < 2; pass++) {
		wfs_err e = read_pieces(v, iv, cnt, pass == 0, used, fetch, ctx,
					(uint8_t *)storage->data, &used);
		if (e) {
			/* a retry that cannot be made leaves the first answer standing */
			if (pass == 0)
				err = e;
			else if (cookie_only)
				err = WFS_ENOENT; /* it decoded fine: the cookie was just wrong */
			break;
		}
		err = needle_decode((uint8_t *)storage->data, len, true, n);
		if (!err && (n->key != key || n->size != size))
			err = WFS_ECORRUPT;
		/* the cookie is outside the CRC: a damaged one is retried as well */
		if (!err && n->cookie != cookie && pass == 0 && used) {
			cookie_only = true;
			err = WFS_ECORRUPT;
		}
		if (err != WFS_ECORRUPT || !used)
			break;
		if (!cookie_only)
			log_warn("ec volume %" PRIu32 ": needle %" PRIx64
				 " failed its check, reconstructing it",
				 v->id, key);
	}
	if (iv != one)
		free(iv);
	if (!err && (n->cookie != cookie || needle_expired(n, (uint64_t)time(NULL))))
		err = WFS_ENOENT;
	return err;
}

bool ec_volume_has(ec_volume *v, uint64_t key, uint32_t *size)
{
	uint64_t pos;
	uint32_t off, s;
	if (ecx_find(v, key, &pos, &off, &s) || s == NEEDLE_TOMBSTONE || s == 0 || off == 0)
		return false;
	if (size)
		*size = s;
	return true;
}

wfs_err ec_volume_delete(ec_volume *v, uint64_t key)
{
	uint8_t k[8];
	uint64_t pos;
	uint32_t off, size;
	wfs_err err;

	pthread_mutex_lock(&v->del_lock);
	err = ecx_find(v, key, &pos, &off, &size);
	if (err || size == NEEDLE_TOMBSTONE)
		goto out;
	/* journal first: a crash before the tombstone is replayed at the next open */
	put_be64(k, key);
	if (write(v->ecj_fd, k, sizeof(k)) != sizeof(k)) {
		err = WFS_EIO;
		log_error("ec volume %" PRIu32 ": could not append to the .ecj: %s", v->id,
			  strerror(errno));
		goto out;
	}
	err = ecx_tombstone(v, pos);
	if (!err)
		atomic_fetch_add(&v->deleted, 1);
out:
	pthread_mutex_unlock(&v->del_lock);
	return err;
}
