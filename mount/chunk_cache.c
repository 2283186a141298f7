/*
 * DESIGN
 * Two levels keyed by the xxh64 of the file id ("key"):
 *
 * Memory: a hash table (lib/hashmap.h) of whole blobs plus an LRU list,
 * bounded by mem_bytes of blob data (a blob larger than the bound is not
 * kept). Entries are reference counted: a reader takes a reference under the
 * lock and copies outside it, so a 1 MiB copy never holds up other threads;
 * an evicted entry is freed by whoever drops the last reference. Copies of
 * at most COPY_UNDER_LOCK_MAX are done under the lock, which is cheaper than
 * the two atomic operations for small ranges (tests/bench/chunk_cache.c
 * measures both).
 *
 * Disk (optional): one file per blob at DIR/hh/<key in hex>, header + data (see
 * chunk_cache.h), written to a temp name and renamed, so the real name never
 * holds a half entry after a process crash. There is no fsync: after a power
 * loss a renamed file may be short or zeroed, which verification catches (every
 * load checks the header, the size, the key of the fid and the xxh64 of the
 * data; a bad file is deleted and counted as corrupt). The index (key -> size,
 * state, LRU position) lives in memory and is rebuilt at open from a directory
 * scan ordered by each file's max(atime, mtime); disk hits set the atime so
 * that order survives a reopen. A flock on DIR/.lock keeps two processes from
 * sharing a directory (each would delete the other's temp files).
 *
 * All file I/O runs outside the lock. Disk accounting is by reservation:
 * disk_used counts every indexed file, including one being written (PENDING)
 * and one being deleted (EVICTING) until its unlink is done; a put reserves its
 * size after choosing READY victims, unlinks them, then writes. So the bytes in
 * DIR never exceed disk_bytes, even with concurrent puts (a put that cannot
 * find enough READY victims is simply not written to disk). A key that is
 * PENDING or EVICTING is neither read nor written again until it settles.
 *
 * A disk hit loads the whole file into the memory level (verified once per
 * load) and then copies the range. Lock order: only c->mu.
 */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include "bigbuf.h"
#include <unistd.h>
#include <xxhash.h>
#include "hashmap.h"
#include "log.h"
#include "mount/buf_pool.h"
#include "mount/chunk_cache.h"
#include "util.h"

#ifndef COPY_UNDER_LOCK_MAX
#define COPY_UNDER_LOCK_MAX (16u << 10)
#endif
#define TABLE_MIN      64
#define TMP_PREFIX     ".tmp-"
#define MAGIC          "WCCB"
#define FORMAT_VERSION 1

struct list {
	struct list *prev, *next;
};

static void list_init(struct list *l) { l->prev = l->next = l; }
static bool list_empty(const struct list *l) { return l->next == l; }
static void list_del(struct list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}
static void list_add_head(struct list *l, struct list *n)
{
	n->next = l->next;
	n->prev = l;
	l->next->prev = n;
	l->next = n;
}
static void list_add_tail(struct list *l, struct list *n)
{
	n->prev = l->prev;
	n->next = l;
	l->prev->next = n;
	l->prev = n;
}

#define container_of(p, type, member) ((type *)((char *)(p)-offsetof(type, member)))

/* A blob in memory. */
struct mentry {
	struct list lru;           /* protected by mu */
	struct hashmap_node hnode; /* in mtab; protected by mu */
	struct mentry *vnext;      /* victim chain of one insert */
	uint64_t key;
	int refs; /* atomic: 1 while in the table, +1 per reader copying */
	char *fid;
	void *alloc;    /* owns data */
	buf_pool *pool; /* alloc goes back there, not to free(); NULL = free() */
	const uint8_t *data;
	size_t len;
};

enum dstate { D_READY, D_PENDING, D_EVICTING };

/* A file in the cache directory. Every field is protected by mu. */
struct dentry {
	struct list lru;           /* in disk_lru only while READY */
	struct hashmap_node hnode; /* in dtab */
	struct dentry *vnext; /* victim chain of one put */
	uint64_t key, gen, size;
	uint64_t stamp; /* ns, only during the open scan */
	enum dstate state;
};

struct chunk_cache {
	pthread_mutex_t mu;
	char *dir; /* NULL: memory only */
	int lock_fd;
	uint64_t mem_cap, disk_cap;

	struct hashmap mtab; /* of struct mentry by key and fid; protected by mu */
	struct list mem_lru; /* head = most recent; protected by mu */
	uint64_t mem_used;   /* protected by mu */

	struct hashmap dtab; /* of struct dentry by key; protected by mu */
	struct list disk_lru; /* protected by mu */
	uint64_t disk_used;   /* protected by mu */
	uint64_t next_gen;    /* protected by mu */
	uint64_t tmp_seq;     /* protected by mu */

	uint64_t mem_hits, disk_hits, misses, corrupt; /* protected by mu */
};

/* ---- entry format ---- */

uint64_t chunk_cache_fid_key(const char *fid, size_t fid_len) { return XXH64(fid, fid_len, 0); }

size_t chunk_cache_encode_header(uint8_t *out, size_t cap, const char *fid, const void *data,
				 size_t len)
{
	size_t flen = strlen(fid);
	if (flen == 0 || flen > CHUNK_CACHE_FID_MAX || cap < CHUNK_CACHE_HEADER_MIN + flen)
		return 0;
	memcpy(out, MAGIC, 4);
	put_be16(out + 4, FORMAT_VERSION);
	put_be16(out + 6, (uint16_t)flen);
	put_be64(out + 8, len);
	put_be64(out + 16, XXH64(data, len, 0));
	memcpy(out + CHUNK_CACHE_HEADER_MIN, fid, flen);
	return CHUNK_CACHE_HEADER_MIN + flen;
}

wfs_err chunk_cache_parse_entry(const void *raw, size_t len, struct chunk_cache_entry *out)
{
	const uint8_t *p = raw;
	if (len < CHUNK_CACHE_HEADER_MIN || memcmp(p, MAGIC, 4) != 0 ||
	    get_be16(p + 4) != FORMAT_VERSION)
		return WFS_ECORRUPT;
	size_t flen = get_be16(p + 6);
	if (flen == 0 || flen > CHUNK_CACHE_FID_MAX || len - CHUNK_CACHE_HEADER_MIN < flen)
		return WFS_ECORRUPT;
	size_t hlen = CHUNK_CACHE_HEADER_MIN + flen;
	uint64_t dlen = get_be64(p + 8);
	if (dlen != len - hlen) /* also bounds dlen by the buffer */
		return WFS_ECORRUPT;
	const char *fid = (const char *)p + CHUNK_CACHE_HEADER_MIN;
	if (memchr(fid, '\0', flen))
		return WFS_ECORRUPT;
	if (XXH64(p + hlen, (size_t)dlen, 0) != get_be64(p + 16))
		return WFS_ECORRUPT;
	out->fid = fid;
	out->fid_len = flen;
	out->data = p + hlen;
	out->len = dlen;
	return WFS_OK;
}

/* ---- the two indexes (callers hold mu) ---- */

static uint64_t mentry_hash(const struct hashmap_node *n)
{
	return hashmap_entry(n, struct mentry, hnode)->key;
}

struct mkey {
	uint64_t key;
	const char *fid;
};

static bool mentry_eq(const struct hashmap_node *n, const void *key)
{
	const struct mentry *e = hashmap_entry(n, struct mentry, hnode);
	const struct mkey *k = key;

	return e->key == k->key && !strcmp(e->fid, k->fid);
}

static inline struct mentry *mtab_find(chunk_cache *c, uint64_t key, const char *fid)
{
	struct mkey k = {key, fid};

	return hashmap_entry(hashmap_find(&c->mtab, key, mentry_eq, &k), struct mentry, hnode);
}

static uint64_t dentry_hash(const struct hashmap_node *n)
{
	return hashmap_entry(n, struct dentry, hnode)->key;
}

static bool dentry_eq(const struct hashmap_node *n, const void *key)
{
	return hashmap_entry(n, struct dentry, hnode)->key == *(const uint64_t *)key;
}

static inline struct dentry *dtab_find(chunk_cache *c, uint64_t key)
{
	return hashmap_entry(hashmap_find(&c->dtab, key, dentry_eq, &key), struct dentry, hnode);
}

/* ---- memory level ---- */

/*
 * A blob's buffer back where it came from: its pool, else the big-buffer
 * stash (lib/bigbuf.h), which the next fetch's body takes again instead of
 * faulting in fresh pages (a small one is just freed).
 */
static void release(buf_pool *pool, void *alloc)
{
	if (pool)
		buf_pool_put(pool, alloc);
	else
		bigbuf_put(alloc);
}

static void mentry_unref(struct mentry *e)
{
	if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		release(e->pool, e->alloc);
		free(e->fid);
		free(e);
	}
}

/*
 * Inserts a blob whose bytes are data[0, len) inside alloc (taken; released to pool, or
 * freed when pool is NULL). Counts a disk hit when disk_hit. Evicts least recently used
 * blobs; frees them outside the lock.
 */
static void mem_insert(chunk_cache *c, uint64_t key, const char *fid, void *alloc, buf_pool *pool,
		       const uint8_t *data, size_t len, bool disk_hit)
{
	struct mentry *e = NULL, *victims = NULL;
	if (len <= c->mem_cap) {
		e = xcalloc(1, sizeof(*e));
		e->key = key;
		e->refs = 1;
		e->fid = xstrdup(fid);
		e->alloc = alloc;
		e->pool = pool;
		e->data = data;
		e->len = len;
		list_init(&e->lru);
	}
	pthread_mutex_lock(&c->mu);
	if (disk_hit)
		c->disk_hits++;
	if (e) {
		struct mentry *old = mtab_find(c, key, fid);
		if (old) {
			list_del(&old->lru);
			list_add_head(&c->mem_lru, &old->lru);
			victims = e; /* ours is the duplicate */
		} else {
			hashmap_insert(&c->mtab, &e->hnode);
			list_add_head(&c->mem_lru, &e->lru);
			c->mem_used += len;
			while (c->mem_used > c->mem_cap) {
				struct mentry *v =
					container_of(c->mem_lru.prev, struct mentry, lru);
				list_del(&v->lru);
				hashmap_remove(&c->mtab, &v->hnode);
				c->mem_used -= v->len;
				v->vnext = victims;
				victims = v;
			}
		}
	}
	pthread_mutex_unlock(&c->mu);
	if (!e)
		release(pool, alloc);
	while (victims) {
		struct mentry *next = victims->vnext;
		mentry_unref(victims);
		victims = next;
	}
}

/* ---- disk level ---- */

static char *entry_path(const chunk_cache *c, uint64_t key)
{
	return xasprintf("%s/%02x/%016llx", c->dir, (unsigned)(key >> 56), (unsigned long long)key);
}

char *chunk_cache_entry_path(chunk_cache *c, const char *fid)
{
	if (!c || !c->dir)
		return NULL;
	return entry_path(c, chunk_cache_fid_key(fid, strlen(fid)));
}

static void disk_touch_locked(chunk_cache *c, uint64_t key)
{
	struct dentry *d = dtab_find(c, key);
	if (d && d->state == D_READY) {
		list_del(&d->lru);
		list_add_head(&c->disk_lru, &d->lru);
	}
}

/* Finishes deletions: drops victims' index entries and their bytes. Under mu. */
static void disk_forget_locked(chunk_cache *c, struct dentry *victims)
{
	while (victims) {
		struct dentry *next = victims->vnext;
		hashmap_remove(&c->dtab, &victims->hnode);
		c->disk_used -= victims->size;
		free(victims);
		victims = next;
	}
}

/*
 * Deletes the file of (key, gen) found bad or missing by a reader, unless the index has
 * moved on (evicted, or replaced by a newer file).
 */
static void disk_drop(chunk_cache *c, uint64_t key, uint64_t gen, bool corrupt)
{
	pthread_mutex_lock(&c->mu);
	if (corrupt)
		c->corrupt++;
	struct dentry *d = dtab_find(c, key);
	if (!d || d->gen != gen || d->state != D_READY) {
		pthread_mutex_unlock(&c->mu);
		return;
	}
	d->state = D_EVICTING;
	list_del(&d->lru);
	d->vnext = NULL;
	pthread_mutex_unlock(&c->mu);

	char *path = entry_path(c, key);
	if (unlink(path) != 0 && errno != ENOENT)
		log_warn("could not delete cache file \"%s\": %s", path, strerror(errno));
	free(path);

	pthread_mutex_lock(&c->mu);
	disk_forget_locked(c, d);
	pthread_mutex_unlock(&c->mu);
}

enum load_result { LOAD_OK, LOAD_GONE, LOAD_CORRUPT, LOAD_OTHER };

/*
 * Reads and verifies key's file. On LOAD_OK *alloc (caller frees) holds the file and
 * *data and *len the blob. LOAD_OTHER: a valid file of another fid with the same key.
 */
static enum load_result disk_load(chunk_cache *c, uint64_t key, const char *fid, void **alloc,
				  const uint8_t **data, size_t *len)
{
	enum load_result res = LOAD_CORRUPT;
	uint8_t *file = NULL;
	char *path = entry_path(c, key);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return LOAD_GONE;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		res = LOAD_GONE;
		goto out;
	}
	/* The size comes from the disk: bound it by what the cache may hold. */
	if (st.st_size < CHUNK_CACHE_HEADER_MIN || (uint64_t)st.st_size > c->disk_cap)
		goto out;
	size_t n = (size_t)st.st_size, got = 0;
	file = xmalloc(n);
	while (got < n) {
		ssize_t r = pread(fd, file + got, n - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			log_warn("could not read cache file of %s: %s", fid, strerror(errno));
			res = LOAD_GONE; /* an I/O error is not evidence of a bad file */
			goto out;
		}
		if (r == 0)
			goto out; /* shrank under us: treat as corrupt */
		got += (size_t)r;
	}
	struct chunk_cache_entry e;
	if (chunk_cache_parse_entry(file, n, &e) != WFS_OK ||
	    chunk_cache_fid_key(e.fid, e.fid_len) != key)
		goto out;
	if (e.fid_len != strlen(fid) || memcmp(e.fid, fid, e.fid_len) != 0) {
		res = LOAD_OTHER;
		goto out;
	}
	/* Recency for the next open's scan. */
	struct timespec ts[2] = {{.tv_nsec = UTIME_NOW}, {.tv_nsec = UTIME_OMIT}};
	(void)futimens(fd, ts);
	*alloc = file;
	*data = e.data;
	*len = (size_t)e.len;
	file = NULL;
	res = LOAD_OK;
out:
	free(file);
	close(fd);
	return res;
}

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes the entry file for key via a temp name; 0 or an errno. */
static int disk_write(chunk_cache *c, uint64_t key, uint64_t seq, const uint8_t *hdr, size_t hlen,
		      const void *data, size_t len)
{
	char *tmp = xasprintf("%s/%02x/" TMP_PREFIX "%016llx-%llu", c->dir, (unsigned)(key >> 56),
			      (unsigned long long)key, (unsigned long long)seq);
	char *path = entry_path(c, key);
	int err = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 && errno == ENOENT) {
		char *sub = xasprintf("%s/%02x", c->dir, (unsigned)(key >> 56));
		if (mkdir(sub, 0755) != 0 && errno != EEXIST)
			log_warn("could not create \"%s\": %s", sub, strerror(errno));
		free(sub);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	}
	if (fd < 0) {
		err = errno;
		goto out;
	}
	err = write_all(fd, hdr, hlen);
	if (!err)
		err = write_all(fd, data, len);
	if (close(fd) != 0 && !err)
		err = errno;
	if (!err && rename(tmp, path) != 0)
		err = errno;
	if (err)
		unlink(tmp);
out:
	if (err)
		log_warn("could not write cache file \"%s\": %s", path, strerror(err));
	free(tmp);
	free(path);
	return err;
}

static void disk_put(chunk_cache *c, uint64_t key, const char *fid, const void *data, size_t len)
{
	uint8_t hdr[CHUNK_CACHE_HEADER_MIN + CHUNK_CACHE_FID_MAX];
	size_t hlen = chunk_cache_encode_header(hdr, sizeof(hdr), fid, data, len);
	if (!hlen)
		return;
	uint64_t fsize = hlen + (uint64_t)len;
	if (fsize > c->disk_cap)
		return;

	pthread_mutex_lock(&c->mu);
	if (dtab_find(c, key)) { /* already there, or being written or deleted */
		pthread_mutex_unlock(&c->mu);
		return;
	}
	struct dentry *victims = NULL;
	uint64_t need = c->disk_used + fsize;
	while (need > c->disk_cap && !list_empty(&c->disk_lru)) {
		struct dentry *v = container_of(c->disk_lru.prev, struct dentry, lru);
		list_del(&v->lru);
		v->state = D_EVICTING;
		v->vnext = victims;
		victims = v;
		need -= v->size;
	}
	if (need > c->disk_cap) {
		/* Others' writes and deletions hold the space: skip, restoring the order. */
		for (struct dentry *v = victims; v; v = v->vnext) {
			v->state = D_READY;
			list_add_tail(&c->disk_lru, &v->lru);
		}
		pthread_mutex_unlock(&c->mu);
		return;
	}
	struct dentry *d = xcalloc(1, sizeof(*d));
	d->key = key;
	d->gen = ++c->next_gen;
	d->size = fsize;
	d->state = D_PENDING;
	list_init(&d->lru);
	hashmap_insert(&c->dtab, &d->hnode);
	c->disk_used += fsize;
	uint64_t seq = ++c->tmp_seq;
	pthread_mutex_unlock(&c->mu);

	for (struct dentry *v = victims; v; v = v->vnext) {
		char *path = entry_path(c, v->key);
		if (unlink(path) != 0 && errno != ENOENT)
			log_warn("could not delete cache file \"%s\": %s", path, strerror(errno));
		free(path);
	}
	int err = disk_write(c, key, seq, hdr, hlen, data, len);

	pthread_mutex_lock(&c->mu);
	disk_forget_locked(c, victims);
	if (err) {
		hashmap_remove(&c->dtab, &d->hnode);
		c->disk_used -= fsize;
		free(d);
	} else {
		d->state = D_READY;
		list_add_head(&c->disk_lru, &d->lru);
	}
	pthread_mutex_unlock(&c->mu);
}

static int stamp_cmp(const void *a, const void *b)
{
	const struct dentry *x = *(struct dentry *const *)a, *y = *(struct dentry *const *)b;
	return x->stamp < y->stamp ? -1 : x->stamp > y->stamp;
}

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

static bool parse_hex_key(const char *name, uint64_t *key)
{
	uint64_t k = 0;
	for (int i = 0; i < 16; i++) {
		char ch = name[i];
		int v = (ch >= '0' && ch <= '9')   ? ch - '0'
			: (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10
						   : -1;
		if (v < 0)
			return false;
		k = k << 4 | (uint64_t)v;
	}
	if (name[16])
		return false;
	*key = k;
	return true;
}

/* Rebuilds the index from DIR/hh/ at open (single-threaded); deletes stray temp files. */
static void disk_scan(chunk_cache *c)
{
	struct dentry **all = NULL;
	size_t n = 0, cap = 0;
	for (unsigned sub = 0; sub < 256; sub++) {
		char *sp = xasprintf("%s/%02x", c->dir, sub);
		DIR *dh = opendir(sp);
		free(sp);
		if (!dh)
			continue;
		struct dirent *de;
		while ((de = readdir(dh)) != NULL) {
			const char *name = de->d_name;
			uint64_t key;
			struct stat st;
			if (!strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX))) {
				unlinkat(dirfd(dh), name, 0);
				continue;
			}
			if (!parse_hex_key(name, &key) || (key >> 56) != sub)
				continue; /* not ours */
			if (fstatat(dirfd(dh), name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
			    !S_ISREG(st.st_mode))
				continue;
			if (st.st_size < CHUNK_CACHE_HEADER_MIN + 1) {
				unlinkat(dirfd(dh), name, 0);
				c->corrupt++;
				continue;
			}
			struct dentry *d = xcalloc(1, sizeof(*d));
			d->key = key;
			d->gen = ++c->next_gen;
			d->size = (uint64_t)st.st_size;
			d->stamp = MAX(ts_ns(&st.st_atim), ts_ns(&st.st_mtim));
			d->state = D_READY;
			list_init(&d->lru);
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				all = xrealloc(all, cap * sizeof(*all));
			}
			all[n++] = d;
		}
		closedir(dh);
	}
	if (n)
		qsort(all, n, sizeof(*all), stamp_cmp);
	for (size_t i = 0; i < n; i++) { /* oldest first, so the newest ends at the head */
		hashmap_insert(&c->dtab, &all[i]->hnode);
		list_add_head(&c->disk_lru, &all[i]->lru);
		c->disk_used += all[i]->size;
	}
	free(all);
	/* The capacity may have shrunk since the last run. */
	while (c->disk_used > c->disk_cap) {
		struct dentry *v = container_of(c->disk_lru.prev, struct dentry, lru);
		list_del(&v->lru);
		char *path = entry_path(c, v->key);
		unlink(path);
		free(path);
		v->vnext = NULL;
		disk_forget_locked(c, v);
	}
}

/* ---- API ---- */

chunk_cache *chunk_cache_open(const char *dir, uint64_t mem_bytes, uint64_t disk_bytes,
			      wfs_err *err)
{
	chunk_cache *c = xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	c->lock_fd = -1;
	c->mem_cap = mem_bytes;
	c->disk_cap = disk_bytes;
	hashmap_init(&c->mtab, TABLE_MIN, mentry_hash);
	hashmap_init(&c->dtab, TABLE_MIN, dentry_hash);
	list_init(&c->mem_lru);
	list_init(&c->disk_lru);
	*err = WFS_OK;
	if (!dir || !*dir) /* an empty -cacheDir means memory only too */
		return c;

	c->dir = xstrdup(dir);
	if (!mkdir_p(dir)) {
		log_error("could not create cache dir \"%s\": %s", dir, strerror(errno));
		*err = WFS_EIO;
		goto fail;
	}
	char *lp = xasprintf("%s/.lock", dir);
	c->lock_fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	free(lp);
	if (c->lock_fd < 0) {
		log_error("could not open cache dir \"%s\": %s", dir, strerror(errno));
		*err = WFS_EIO;
		goto fail;
	}
	if (flock(c->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		log_error("cache dir \"%s\" is in use by another cache", dir);
		*err = WFS_EUNAVAIL;
		goto fail;
	}
	disk_scan(c);
	return c;
fail:
	chunk_cache_close(c);
	return NULL;
}

void chunk_cache_close(chunk_cache *c)
{
	struct hashmap_iter it;
	struct hashmap_node *n;

	if (!c)
		return;
	hashmap_foreach(&c->mtab, it, n)
		mentry_unref(hashmap_entry(n, struct mentry, hnode));
	hashmap_foreach(&c->dtab, it, n)
		free(hashmap_entry(n, struct dentry, hnode));
	hashmap_destroy(&c->mtab);
	hashmap_destroy(&c->dtab);
	if (c->lock_fd >= 0)
		close(c->lock_fd); /* releases the flock */
	free(c->dir);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static bool range_ok(uint64_t off, size_t len, size_t blob_len)
{
	return off <= blob_len && len <= blob_len - off;
}

bool chunk_cache_read(chunk_cache *c, const char *fid, uint64_t off, size_t len, void *dst)
{
	size_t flen = strlen(fid);
	if (flen == 0 || flen > CHUNK_CACHE_FID_MAX) {
		pthread_mutex_lock(&c->mu);
		c->misses++;
		pthread_mutex_unlock(&c->mu);
		return false;
	}
	uint64_t key = chunk_cache_fid_key(fid, flen);

	pthread_mutex_lock(&c->mu);
	struct mentry *e = mtab_find(c, key, fid);
	if (e) {
		if (!range_ok(off, len, e->len)) {
			c->misses++;
			pthread_mutex_unlock(&c->mu);
			return false;
		}
		list_del(&e->lru);
		list_add_head(&c->mem_lru, &e->lru);
		if (c->dir)
			disk_touch_locked(c, key);
		c->mem_hits++;
		if (len <= COPY_UNDER_LOCK_MAX) {
			if (len)
				memcpy(dst, e->data + off, len);
			pthread_mutex_unlock(&c->mu);
			return true;
		}
		__atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&c->mu);
		memcpy(dst, e->data + off, len);
		mentry_unref(e);
		return true;
	}
	struct dentry *d = c->dir ? dtab_find(c, key) : NULL;
	if (!d || d->state != D_READY) {
		c->misses++;
		pthread_mutex_unlock(&c->mu);
		return false;
	}
	uint64_t gen = d->gen;
	list_del(&d->lru);
	list_add_head(&c->disk_lru, &d->lru);
	pthread_mutex_unlock(&c->mu);

	void *alloc = NULL;
	const uint8_t *data = NULL;
	size_t blen = 0;
	enum load_result r = disk_load(c, key, fid, &alloc, &data, &blen);
	if (r == LOAD_CORRUPT || r == LOAD_GONE)
		disk_drop(c, key, gen, r == LOAD_CORRUPT);
	if (r == LOAD_CORRUPT)
		log_warn("cache file of %s failed verification; deleted", fid);
	if (r != LOAD_OK || !range_ok(off, len, blen)) {
		free(alloc);
		pthread_mutex_lock(&c->mu);
		c->misses++;
		pthread_mutex_unlock(&c->mu);
		return false;
	}
	if (len)
		memcpy(dst, data + off, len);
	mem_insert(c, key, fid, alloc, NULL, data, blen, true);
	return true;
}

void chunk_cache_put(chunk_cache *c, const char *fid, const void *data, size_t len)
{
	void *copy = xmalloc(len ? len : 1);
	memcpy(copy, data, len);
	chunk_cache_put_take(c, fid, copy, len);
}

void chunk_cache_put_take(chunk_cache *c, const char *fid, void *data, size_t len)
{
	size_t flen = strlen(fid);
	uint64_t key;

	if (flen == 0 || flen > CHUNK_CACHE_FID_MAX) {
		free(data);
		return;
	}
	key = chunk_cache_fid_key(fid, flen);
	if (c->dir)
		disk_put(c, key, fid, data, len); /* before the insert: once in, it may go */
	mem_insert(c, key, fid, data, NULL, data, len, false); /* frees it when not kept */
}

void chunk_cache_put_pooled(chunk_cache *c, const char *fid, void *data, size_t len, buf_pool *pool)
{
	size_t flen = strlen(fid);
	if (flen == 0 || flen > CHUNK_CACHE_FID_MAX) {
		buf_pool_put(pool, data);
		return;
	}
	uint64_t key = chunk_cache_fid_key(fid, flen);
	if (c->dir)
		disk_put(c, key, fid, data, len);
	mem_insert(c, key, fid, data, pool, data, len, false);
}

void chunk_cache_get_stats(chunk_cache *c, struct chunk_cache_stats *out)
{
	pthread_mutex_lock(&c->mu);
	out->mem_hits = c->mem_hits;
	out->disk_hits = c->disk_hits;
	out->misses = c->misses;
	out->corrupt = c->corrupt;
	out->mem_bytes = c->mem_used;
	out->disk_bytes = c->disk_used;
	pthread_mutex_unlock(&c->mu);
}
