#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <fcntl.h>
#include <unistd.h>
#include "client/fid.h"
#include "log.h"
#include "volume_store.h"
#include "util.h"

struct sdir {
	char *path;
	int max_flag; /* as configured; 0 = from free space */
	int max;      /* current slot count */
	int count;    /* protected by store.lock */
};

struct slot {
	uint32_t id;
	volume *v;
	int dir;
};

struct volume_store {
	pthread_rwlock_t lock;
	struct sdir *dirs;
	size_t ndirs;
	struct slot *vols; /* protected by lock */
	size_t nvols, cap;
	_Atomic uint64_t size_limit;
};

#define DEFAULT_SIZE_LIMIT (30000ull << 20)
#define MIN_AUTO_SLOTS     8

static void size_dirs(volume_store *s)
{
	uint64_t limit = atomic_load(&s->size_limit);
	for (size_t i = 0; i < s->ndirs; i++) {
		struct statvfs sv;
		uint64_t free_b;
		int n;
		if (s->dirs[i].max_flag > 0) {
			s->dirs[i].max = s->dirs[i].max_flag;
			continue;
		}
		if (statvfs(s->dirs[i].path, &sv) < 0)
			free_b = 0;
		else
			free_b = (uint64_t)sv.f_bavail * sv.f_frsize;
		n = s->dirs[i].count + (int)MIN(free_b / (limit ? limit : 1), 10000);
		s->dirs[i].max = MAX(n, MIN_AUTO_SLOTS);
	}
}

static void add_slot(volume_store *s, uint32_t id, volume *v, int dir)
{
	size_t i;
	if (s->nvols == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->vols = xrealloc(s->vols, s->cap * sizeof(*s->vols));
	}
	for (i = s->nvols; i > 0 && s->vols[i - 1].id > id; i--)
		s->vols[i] = s->vols[i - 1];
	s->vols[i] = (struct slot){id, v, dir};
	s->nvols++;
	s->dirs[dir].count++;
	volume_set_size_limit(v, atomic_load(&s->size_limit));
}

static ssize_t find_slot(const volume_store *s, uint32_t id)
{
	size_t lo = 0, hi = s->nvols;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->vols[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nvols && s->vols[lo].id == id ? (ssize_t)lo : -1;
}

bool volume_file_name_parse(const char *name, const char *ext, char *coll, size_t collsz,
			    uint32_t *id)
{
	size_t n = strlen(name), k = strlen(ext);
	const char *us, *num;
	if (n < k + 1 || strcmp(name + n - k, ext))
		return false;
	n -= k;
	us = memrchr(name, '_', n);
	num = us ? us + 1 : name;
	if (!volume_id_parse(num, (size_t)(name + n - num), id))
		return false;
	if (us) {
		size_t cl = (size_t)(us - name);
		if (cl == 0 || cl >= collsz)
			return false;
		memcpy(coll, name, cl);
		coll[cl] = '\0';
	} else {
		coll[0] = '\0';
	}
	return true;
}

/* True if name ends with suffix. */
static bool ends_with(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);
	return n > k && !strcmp(name + n - k, suffix);
}

static void load_dir(volume_store *s, int di)
{
	DIR *d = opendir(s->dirs[di].path);
	struct dirent *de;
	if (!d)
		return;
	while ((de = readdir(d))) {
		char coll[VOLUME_COLLECTION_MAX];
		uint32_t id;
		volume *v;
		wfs_err err;
		if (ends_with(de->d_name, VOLUME_COPY_DAT) || ends_with(de->d_name, VOLUME_COPY_IDX)) {
			/* a copy that was cut off: its volume was never loaded */
			log_warn("removing %s/%s left by an unfinished volume copy", s->dirs[di].path,
				 de->d_name);
			unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (!volume_file_name_parse(de->d_name, ".dat", coll, sizeof(coll), &id))
			continue;
		if (find_slot(s, id) >= 0) {
			log_warn("volume %" PRIu32 " found twice; ignoring %s/%s", id,
				 s->dirs[di].path, de->d_name);
			continue;
		}
		err = volume_open(s->dirs[di].path, coll, id, NULL, &v);
		if (err) {
			log_error("could not open volume %s/%s: %s", s->dirs[di].path, de->d_name,
				  wfs_strerror(err));
			continue;
		}
		add_slot(s, id, v, di);
		log_info("loaded volume %" PRIu32 " from %s", id, s->dirs[di].path);
	}
	closedir(d);
}

wfs_err volume_store_open(const struct volume_store_dir *dirs, size_t ndirs, volume_store **out)
{
	volume_store *s = xcalloc(1, sizeof(*s));
	pthread_rwlock_init(&s->lock, NULL);
	atomic_init(&s->size_limit, DEFAULT_SIZE_LIMIT);
	s->dirs = xcalloc(ndirs, sizeof(*s->dirs));
	s->ndirs = ndirs;
	for (size_t i = 0; i < ndirs; i++) {
		s->dirs[i].path = xstrdup(dirs[i].path);
		s->dirs[i].max_flag = dirs[i].max;
		if (!mkdir_p(dirs[i].path)) {
			log_error("could not create directory \"%s\": %s", dirs[i].path,
				  strerror(errno));
			volume_store_free(s);
			*out = NULL;
			return WFS_EIO;
		}
	}
	for (size_t i = 0; i < ndirs; i++)
		load_dir(s, (int)i);
	size_dirs(s);
	*out = s;
	return WFS_OK;
}

void volume_store_free(volume_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nvols; i++)
		volume_unref(s->vols[i].v);
	for (size_t i = 0; i < s->ndirs; i++)
		free(s->dirs[i].path);
	free(s->dirs);
	free(s->vols);
	pthread_rwlock_destroy(&s->lock);
	free(s);
}

volume *volume_store_get(volume_store *s, uint32_t vid)
{
	volume *v = NULL;
	ssize_t i;
	pthread_rwlock_rdlock(&s->lock);
	i = find_slot(s, vid);
	if (i >= 0) {
		v = s->vols[i].v;
		volume_ref(v);
	}
	pthread_rwlock_unlock(&s->lock);
	return v;
}

/* The directory with the most free slots, or -1. Caller holds lock. */
static int best_dir(const volume_store *s)
{
	int best = -1, best_free = 0;
	for (size_t d = 0; d < s->ndirs; d++) {
		int f = s->dirs[d].max - s->dirs[d].count;
		if (f > best_free) {
			best_free = f;
			best = (int)d;
		}
	}
	return best;
}

wfs_err volume_store_create_volume(volume_store *s, uint32_t vid, const char *collection,
			    const struct volume_create *c)
{
	int best;
	volume *v;
	ssize_t i;
	wfs_err err;

	if (!collection)
		collection = "";
	if (!volume_collection_valid(collection) || vid == 0)
		return WFS_EINVAL;
	pthread_rwlock_wrlock(&s->lock);
	i = find_slot(s, vid);
	if (i >= 0) {
		struct volume_info in;
		volume_get_info(s->vols[i].v, &in);
		err = strcmp(in.collection, collection) ||
				      replica_placement_byte(&in.rp) !=
					      replica_placement_byte(&c->rp) ||
				      in.ttl.count != c->ttl.count || in.ttl.unit != c->ttl.unit
			      ? WFS_EEXIST
			      : WFS_OK;
		goto out;
	}
	best = best_dir(s);
	if (best < 0) {
		err = WFS_ENOSPC;
		goto out;
	}
	err = volume_open(s->dirs[best].path, collection, vid, c, &v);
	if (err)
		goto out;
	add_slot(s, vid, v, best);
	log_info("created volume %" PRIu32 " collection \"%s\" in %s", vid, collection,
		 s->dirs[best].path);
out:
	pthread_rwlock_unlock(&s->lock);
	return err;
}

char *volume_store_pick_dir(volume_store *s)
{
	char *path = NULL;
	int d;
	pthread_rwlock_rdlock(&s->lock);
	d = best_dir(s);
	if (d >= 0)
		path = xstrdup(s->dirs[d].path);
	pthread_rwlock_unlock(&s->lock);
	return path;
}

wfs_err volume_store_load_volume(volume_store *s, const char *dir, uint32_t vid,
				 const char *collection, volume **out)
{
	ssize_t di = -1;
	volume *v;
	wfs_err err;

	*out = NULL;
	pthread_rwlock_wrlock(&s->lock);
	for (size_t d = 0; d < s->ndirs; d++)
		if (!strcmp(s->dirs[d].path, dir))
			di = (ssize_t)d;
	if (di < 0) {
		err = WFS_EINVAL;
		goto out;
	}
	if (find_slot(s, vid) >= 0) {
		err = WFS_EEXIST;
		goto out;
	}
	err = volume_open(dir, collection, vid, NULL, &v);
	if (err)
		goto out;
	add_slot(s, vid, v, (int)di);
	volume_ref(v);
	*out = v;
	log_info("loaded volume %" PRIu32 " collection \"%s\" in %s", vid, collection, dir);
out:
	pthread_rwlock_unlock(&s->lock);
	return err;
}

static void remove_at(volume_store *s, size_t i)
{
	volume *v = s->vols[i].v;
	s->dirs[s->vols[i].dir].count--;
	memmove(&s->vols[i], &s->vols[i + 1], (s->nvols - i - 1) * sizeof(*s->vols));
	s->nvols--;
	volume_destroy(v);
	volume_unref(v);
}

wfs_err volume_store_delete_volume(volume_store *s, uint32_t vid)
{
	ssize_t i;
	pthread_rwlock_wrlock(&s->lock);
	i = find_slot(s, vid);
	if (i >= 0)
		remove_at(s, (size_t)i);
	pthread_rwlock_unlock(&s->lock);
	return i >= 0 ? WFS_OK : WFS_ENOENT;
}

int volume_store_delete_collection(volume_store *s, const char *collection)
{
	int n = 0;
	pthread_rwlock_wrlock(&s->lock);
	for (size_t i = 0; i < s->nvols;) {
		if (!strcmp(volume_collection(s->vols[i].v), collection)) {
			remove_at(s, i);
			n++;
		} else {
			i++;
		}
	}
	pthread_rwlock_unlock(&s->lock);
	return n;
}

size_t volume_store_list(volume_store *s, volume ***out)
{
	size_t n;
	pthread_rwlock_rdlock(&s->lock);
	n = s->nvols;
	*out = xmalloc((n ? n : 1) * sizeof(volume *));
	for (size_t i = 0; i < n; i++) {
		(*out)[i] = s->vols[i].v;
		volume_ref(s->vols[i].v);
	}
	pthread_rwlock_unlock(&s->lock);
	return n;
}

int volume_store_max_volumes(volume_store *s)
{
	int n = 0;
	pthread_rwlock_rdlock(&s->lock);
	for (size_t i = 0; i < s->ndirs; i++)
		n += s->dirs[i].max;
	pthread_rwlock_unlock(&s->lock);
	return n;
}

void volume_store_set_size_limit(volume_store *s, uint64_t limit)
{
	if (!limit || atomic_load(&s->size_limit) == limit)
		return;
	atomic_store(&s->size_limit, limit);
	pthread_rwlock_wrlock(&s->lock);
	for (size_t i = 0; i < s->nvols; i++)
		volume_set_size_limit(s->vols[i].v, limit);
	size_dirs(s);
	pthread_rwlock_unlock(&s->lock);
}

uint64_t volume_store_size_limit(volume_store *s) { return atomic_load(&s->size_limit); }

size_t volume_store_disk_status(volume_store *s, struct volume_store_disk_status *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < s->ndirs && n < max; i++) {
		struct statvfs sv;
		struct volume_store_disk_status *d = &out[n++];
		memset(d, 0, sizeof(*d));
		snprintf(d->dir, sizeof(d->dir), "%s", s->dirs[i].path);
		if (statvfs(s->dirs[i].path, &sv) == 0) {
			d->all = (uint64_t)sv.f_blocks * sv.f_frsize;
			d->free = (uint64_t)sv.f_bavail * sv.f_frsize;
			d->used = d->all - (uint64_t)sv.f_bfree * sv.f_frsize;
		}
	}
	return n;
}

int volume_store_expire(volume_store *s, uint64_t now_sec)
{
	int n = 0;
	pthread_rwlock_wrlock(&s->lock);
	for (size_t i = 0; i < s->nvols;) {
		if (volume_expired(s->vols[i].v, now_sec)) {
			log_info("volume %" PRIu32 " expired (TTL)", s->vols[i].id);
			remove_at(s, i);
			n++;
		} else {
			i++;
		}
	}
	pthread_rwlock_unlock(&s->lock);
	return n;
}

size_t volume_store_dirs(volume_store *s, const char **paths, size_t max)
{
	for (size_t i = 0; i < s->ndirs && i < max; i++)
		paths[i] = s->dirs[i].path;
	return s->ndirs;
}
