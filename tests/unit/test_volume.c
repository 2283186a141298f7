/*
 * Volume files: write/read/delete, flags and limits, crash recovery on load,
 * volume_sync (group commit), the store.
 */
#include "config.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "tap.h"
#include "util.h"
#include "server/volume/volume_store.h"
#include "server/volume/volume.h"

static char dir[256];

static char *path(const char *name)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static off_t fsize(const char *name)
{
	struct stat st;
	return stat(path(name), &st) < 0 ? -1 : st.st_size;
}

static wfs_err put(volume *v, uint64_t key, uint32_t cookie, const char *data, bool *unchanged)
{
	struct needle n = {0};
	bool u;
	n.key = key;
	n.cookie = cookie;
	n.data = (const uint8_t *)data;
	n.data_size = (uint32_t)strlen(data);
	n.flags = NEEDLE_FLAG_HAS_NAME;
	n.name = "f.txt";
	n.name_len = 5;
	return volume_write(v, &n, unchanged ? unchanged : &u);
}

/* true if key reads back as data */
static bool has(volume *v, uint64_t key, uint32_t cookie, const char *data)
{
	buf b = BUF_INIT;
	struct needle n;
	bool r = volume_read(v, key, cookie, false, &b, &n) == WFS_OK &&
		 n.data_size == strlen(data) && !memcmp(n.data, data, n.data_size);
	buf_free(&b);
	return r;
}

static volume *open_v(uint32_t id)
{
	struct volume_create c = {0};
	volume *v = NULL;
	wfs_err err = volume_open(dir, "", id, &c, &v);
	if (err)
		printf("# open failed: %s\n", wfs_strerror(err));
	return v;
}

static void test_basic(void)
{
	volume *v = open_v(1);
	struct volume_info in;
	buf b = BUF_INIT;
	struct needle n;
	bool unchanged;
	uint32_t sz;

	ok(v != NULL, "create volume");
	is_int(fsize("1.dat"), 8, "new .dat holds the superblock");
	ok(put(v, 1, 0xabc, "hello", &unchanged) == WFS_OK && !unchanged, "write");
	ok(has(v, 1, 0xabc, "hello"), "read back");
	ok(volume_read(v, 1, 0xabd, false, &b, &n) == WFS_ENOENT, "wrong cookie is not found");
	ok(volume_read(v, 2, 0xabc, false, &b, &n) == WFS_ENOENT, "missing key");
	ok(put(v, 1, 0xabc, "hello", &unchanged) == WFS_OK && unchanged, "same content unchanged");
	is_int(fsize("1.idx"), 16, "unchanged write appends nothing");
	ok(put(v, 1, 0xbad, "other", NULL) == WFS_EPERM, "overwrite with other cookie refused");
	ok(put(v, 1, 0xabc, "hello2", &unchanged) == WFS_OK && !unchanged, "overwrite");
	ok(has(v, 1, 0xabc, "hello2"), "overwrite read back");
	ok(put(v, 2, 7, "two", NULL) == WFS_OK, "second needle");
	ok(volume_delete(v, 2, 8, 0, &sz) == WFS_ENOENT, "delete with wrong cookie");
	ok(volume_delete(v, 2, 7, 0, &sz) == WFS_OK, "delete");
	ok(!has(v, 2, 7, "two"), "deleted needle gone");
	ok(volume_read(v, 2, 7, true, &b, &n) == WFS_OK && n.data_size == 3,
	   "readDeleted finds it");
	ok(volume_delete(v, 2, 7, 0, &sz) == WFS_ENOENT, "double delete");
	is_int(fsize("1.idx"), 64, "idx has 4 entries (write, overwrite, write, delete)");
	volume_get_info(v, &in);
	is_int(in.file_count, 3, "file count");
	is_int(in.delete_count, 2, "delete count (overwrite + delete)");
	ok(in.deleted_bytes > 0, "deleted bytes");
	is_int(in.live_count, 1, "live count");
	is_int(in.max_key, 2, "max key");
	is_int(in.size, fsize("1.dat"), "size = .dat size");

	volume_set_read_only(v, true);
	ok(put(v, 3, 1, "x", NULL) == WFS_EREADONLY, "read-only refuses writes");
	ok(volume_delete(v, 1, 0xabc, 0, &sz) == WFS_EREADONLY, "read-only refuses deletes");
	volume_set_read_only(v, false);
	volume_set_size_limit(v, in.size + 40);
	ok(put(v, 3, 1, "0123456789012345678901234567890123456789", NULL) == WFS_ENOSPC,
	   "size limit");
	volume_set_size_limit(v, 0);
	volume_unref(v);

	v = open_v(1);
	ok(v && has(v, 1, 0xabc, "hello2") && !has(v, 2, 7, "two"), "state survives reopen");
	volume_get_info(v, &in);
	is_int(in.file_count, 3, "file count after reopen");
	is_int(in.delete_count, 2, "delete count after reopen");
	volume_unref(v);
	buf_free(&b);
}

static void test_ttl(void)
{
	struct volume_create c = {0};
	struct needle n = {0};
	volume *v;
	bool u;
	buf b = BUF_INIT;
	struct needle r;

	ttl_parse("1m", &c.ttl);
	ok(volume_open(dir, "ttl", 9, &c, &v) == WFS_OK, "ttl volume");
	n.key = 1;
	n.cookie = 1;
	n.data = (const uint8_t *)"x";
	n.data_size = 1;
	n.flags = NEEDLE_FLAG_HAS_LAST_MODIFIED;
	n.last_modified = (uint64_t)time(NULL) - 120; /* written "2 minutes ago" */
	ok(volume_write(v, &n, &u) == WFS_OK, "write to ttl volume");
	ok(n.flags & NEEDLE_FLAG_HAS_TTL, "volume ttl applied to needle");
	ok(volume_read(v, 1, 1, false, &b, &r) == WFS_ENOENT, "expired needle not found");
	n.key = 2;
	n.flags = NEEDLE_FLAG_HAS_LAST_MODIFIED;
	n.last_modified = (uint64_t)time(NULL);
	ok(volume_write(v, &n, &u) == WFS_OK && volume_read(v, 2, 1, false, &b, &r) == WFS_OK,
	   "fresh needle found");
	ok(!volume_expired(v, (uint64_t)time(NULL)), "volume not expired yet");
	ok(volume_expired(v, (uint64_t)time(NULL) + 61), "volume expires a TTL after last write");
	ok(fsize("ttl_9.dat") > 8, "collection file name");
	volume_destroy(v);
	volume_unref(v);
	ok(fsize("ttl_9.dat") < 0 && fsize("ttl_9.idx") < 0, "destroy removes files");
	buf_free(&b);
}

static void fill(uint32_t id, int n)
{
	volume *v = open_v(id);
	char data[64];
	for (int i = 1; i <= n; i++) {
		snprintf(data, sizeof(data), "needle number %d", i);
		put(v, (uint64_t)i, 100u + (uint32_t)i, data, NULL);
	}
	volume_unref(v);
}

static int count_good(uint32_t id, int n)
{
	volume *v = open_v(id);
	char data[64];
	int good = 0;
	if (!v)
		return -1;
	for (int i = 1; i <= n; i++) {
		snprintf(data, sizeof(data), "needle number %d", i);
		good += has(v, (uint64_t)i, 100u + (uint32_t)i, data);
	}
	volume_unref(v);
	return good;
}

static void test_recovery(void)
{
	off_t ds, is;
	int fd;

	/* torn last needle: truncated */
	fill(2, 10);
	ds = fsize("2.dat");
	is = fsize("2.idx");
	fd = open(path("2.dat"), O_WRONLY | O_APPEND);
	ok(write(fd, "\0\0\0\1\0\0\0\0\0\0\0\x0b\0\0\0\x30garbage", 23) == 23,
	   "append torn needle");
	close(fd);
	is_int(count_good(2, 10), 10, "torn tail: all needles readable");
	is_int(fsize("2.dat"), ds, "torn tail truncated");
	is_int(fsize("2.idx"), is, "idx unchanged");

	/* crash between the .dat and .idx writes: missing entries re-added */
	ok(truncate(path("2.idx"), is - 3 * 16) == 0, "drop 3 idx entries");
	is_int(count_good(2, 10), 10, "missing idx entries: all needles readable");
	is_int(fsize("2.idx"), is, "idx entries appended");

	/* bad CRC in the last needle: truncated, idx entry dropped by the rebuild */
	{
		uint8_t b;
		fd = open(path("2.dat"), O_RDWR);
		ok(pread(fd, &b, 1, ds - 20) == 1, "read a data byte of the last needle");
		b ^= 0xff;
		ok(pwrite(fd, &b, 1, ds - 20) == 1, "corrupt it");
		close(fd);
	}
	is_int(count_good(2, 10), 9, "corrupt last needle dropped, others readable");
	ok(fsize("2.dat") < ds, "corrupt last needle truncated");
	is_int(fsize("2.idx"), is - 16, "idx rebuilt without it");

	/* missing idx: rebuilt */
	fill(3, 20);
	is = fsize("3.idx");
	unlink(path("3.idx"));
	is_int(count_good(3, 20), 20, "idx deleted: rebuilt, all readable");
	is_int(fsize("3.idx"), is, "rebuilt idx same size");

	/* idx not a multiple of 16 */
	fd = open(path("3.idx"), O_WRONLY | O_APPEND);
	ok(write(fd, "abc", 3) == 3, "damage idx size");
	close(fd);
	is_int(count_good(3, 20), 20, "odd-sized idx rebuilt");
	is_int(fsize("3.idx"), is, "odd-sized idx repaired");

	/* entry pointing past the end */
	{
		uint8_t e[16];
		idx_entry_encode(e, 21, 0x100000, 50);
		fd = open(path("3.idx"), O_WRONLY | O_APPEND);
		ok(write(fd, e, 16) == 16, "append bogus idx entry");
		close(fd);
	}
	is_int(count_good(3, 20), 20, "idx entry past the end: rebuilt");
	is_int(fsize("3.idx"), is, "bogus entry gone");

	/* deletes survive an idx rebuild */
	{
		volume *v = open_v(3);
		uint32_t sz;
		ok(volume_delete(v, 5, 105, 0, &sz) == WFS_OK, "delete before rebuild");
		volume_unref(v);
		unlink(path("3.idx"));
		is_int(count_good(3, 20), 19, "delete survives idx rebuild");
	}
}

static void test_store(void)
{
	char d1[300], d2[300];
	struct volume_store_dir dirs[2];
	struct volume_create c = {0};
	volume_store *s;
	volume **list, *v;
	size_t n;

	snprintf(d1, sizeof(d1), "%s/s1", dir);
	snprintf(d2, sizeof(d2), "%s/s2", dir);
	dirs[0] = (struct volume_store_dir){d1, 2};
	dirs[1] = (struct volume_store_dir){d2, 1};
	ok(volume_store_open(dirs, 2, &s) == WFS_OK, "store open");
	is_int(volume_store_max_volumes(s), 3, "max volumes");
	ok(volume_store_create_volume(s, 1, "", &c) == WFS_OK, "create 1");
	ok(volume_store_create_volume(s, 1, "", &c) == WFS_OK, "create 1 again is idempotent");
	ok(volume_store_create_volume(s, 1, "other", &c) == WFS_EEXIST, "create 1 with other settings");
	ok(volume_store_create_volume(s, 2, "pics", &c) == WFS_OK, "create 2 in collection");
	ok(volume_store_create_volume(s, 3, "pics", &c) == WFS_OK, "create 3");
	ok(volume_store_create_volume(s, 4, "", &c) == WFS_ENOSPC, "no free slot");
	ok(volume_store_create_volume(s, 5, "../x", &c) == WFS_EINVAL, "bad collection name");
	v = volume_store_get(s, 2);
	ok(v && put(v, 1, 1, "data", NULL) == WFS_OK, "write via store");
	volume_unref(v);
	volume_store_free(s);

	ok(volume_store_open(dirs, 2, &s) == WFS_OK, "store reopen");
	n = volume_store_list(s, &list);
	is_int(n, 3, "volumes found on startup");
	ok(n == 3 && volume_id(list[0]) == 1 && volume_id(list[2]) == 3, "sorted by id");
	ok(n == 3 && !strcmp(volume_collection(list[1]), "pics"), "collection parsed from name");
	for (size_t i = 0; i < n; i++)
		volume_unref(list[i]);
	free(list);
	v = volume_store_get(s, 2);
	ok(v && has(v, 1, 1, "data"), "data after reopen");
	is_int(volume_store_delete_collection(s, "pics"), 2, "delete collection");
	ok(v && has(v, 1, 1, "data"), "held reference still readable after delete");
	volume_unref(v);
	ok(volume_store_get(s, 2) == NULL, "deleted volume gone");
	ok(volume_store_delete_volume(s, 1) == WFS_OK && volume_store_get(s, 1) == NULL, "delete volume");
	ok(volume_store_delete_volume(s, 1) == WFS_ENOENT, "delete unknown volume");
	volume_store_free(s);
	ok(volume_store_open(dirs, 2, &s) == WFS_OK, "store reopen 2");
	n = volume_store_list(s, &list);
	is_int(n, 0, "deleted volumes stay deleted");
	free(list);
	{
		struct volume_create tc = {0};
		ttl_parse("1m", &tc.ttl);
		ok(volume_store_create_volume(s, 7, "", &tc) == WFS_OK, "create TTL volume");
		is_int(volume_store_expire(s, (uint64_t)time(NULL)), 0, "fresh TTL volume kept");
		is_int(volume_store_expire(s, (uint64_t)time(NULL) + 61), 1, "expired TTL volume removed");
		ok(volume_store_get(s, 7) == NULL, "expired volume gone");
	}
	dirs[0].max = 0;
	volume_store_free(s);
	ok(volume_store_open(dirs, 1, &s) == WFS_OK && volume_store_max_volumes(s) >= 8,
	   "-max=0 derives a slot count");
	volume_store_free(s);
}

static struct volume_info info(volume *v)
{
	struct volume_info in;
	volume_get_info(v, &in);
	return in;
}

struct sync_writer {
	volume *v;
	uint64_t first_key;
	int n;
	atomic_int *failures;
};

/* Each write is followed by volume_sync; afterwards the write must be covered. Worker thread. */
static void *sync_writer_run(void *arg)
{
	struct sync_writer *w = arg;
	for (int i = 0; i < w->n; i++) {
		struct volume_info in;
		uint64_t mine;
		if (put(w->v, w->first_key + (uint64_t)i, 7, "durable", NULL)) {
			atomic_fetch_add(w->failures, 1);
			continue;
		}
		volume_get_info(w->v, &in);
		mine = in.appended; /* at least this write's generation */
		if (volume_sync(w->v) != WFS_OK || info(w->v).synced < mine)
			atomic_fetch_add(w->failures, 1);
	}
	return NULL;
}

static void test_sync(void)
{
	enum { THREADS = 8, PER = 40 };
	volume *v = open_v(20);
	struct sync_writer w[THREADS];
	pthread_t t[THREADS];
	atomic_int failures = 0;
	struct volume_info in;
	uint64_t syncs;
	uint32_t sz;

	ok(v != NULL, "sync: create volume");
	if (!v)
		return;
	in = info(v);
	ok(in.synced < in.appended, "a freshly opened volume is not known to be durable");
	ok(volume_sync(v) == WFS_OK, "sync the files as opened");
	in = info(v);
	is_int(in.synced, in.appended, "the open state is covered");
	is_int(in.syncs, 1, "one fdatasync round");

	ok(put(v, 1, 5, "one", NULL) == WFS_OK, "write");
	in = info(v);
	ok(in.synced < in.appended, "the write is not yet covered");
	ok(volume_sync(v) == WFS_OK, "sync after the write");
	in = info(v);
	is_int(in.synced, in.appended, "the synced generation covers the write");
	is_int(in.syncs, 2, "it took a round");
	ok(volume_sync(v) == WFS_OK && info(v).syncs == 2, "nothing new appended: no round");

	/* two writers, one sync: the second writer's sync is already done */
	ok(put(v, 2, 5, "two", NULL) == WFS_OK && put(v, 3, 5, "three", NULL) == WFS_OK,
	   "two writes");
	ok(volume_sync(v) == WFS_OK && volume_sync(v) == WFS_OK, "two syncs");
	in = info(v);
	is_int(in.syncs, 3, "the second sync shared the first one's round");
	is_int(in.synced, in.appended, "both writes covered");

	ok(volume_delete(v, 2, 5, 0, &sz) == WFS_OK && info(v).synced < info(v).appended,
	   "a delete is an append to sync");
	ok(volume_sync(v) == WFS_OK && info(v).synced == info(v).appended, "delete synced");

	/* across a vacuum commit the descriptors change under the syncs */
	ok(volume_compact(v) == WFS_OK, "compact");
	ok(put(v, 4, 5, "four", NULL) == WFS_OK, "write during compaction");
	ok(volume_commit(v) == WFS_OK, "commit");
	ok(put(v, 5, 5, "five", NULL) == WFS_OK, "write after commit");
	ok(volume_sync(v) == WFS_OK && info(v).synced == info(v).appended,
	   "sync after a vacuum covers the writes");

	/* concurrent writers, each waiting for its own write to be durable */
	syncs = info(v).syncs;
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct sync_writer){v, 1000 + (uint64_t)i * PER, PER, &failures};
		pthread_create(&t[i], NULL, sync_writer_run, &w[i]);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	is_int(atomic_load(&failures), 0, "every concurrent write covered by its sync");
	in = info(v);
	is_int(in.synced, in.appended, "all concurrent writes synced");
	ok(in.syncs - syncs <= THREADS * PER, "at most one round per write (%llu rounds)",
	   (unsigned long long)(in.syncs - syncs));
	volume_unref(v);

	v = open_v(20);
	ok(v && has(v, 1, 5, "one") && has(v, 5, 5, "five") &&
		   has(v, 1000 + THREADS * PER - 1, 7, "durable"),
	   "synced writes read back after reopening");
	volume_unref(v);
}

int main(void)
{
	char cmd[600];
	snprintf(dir, sizeof(dir), "/tmp/test_volume.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	test_basic();
	test_ttl();
	test_recovery();
	test_sync();
	test_store();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# cleanup failed\n");
	return done_testing();
}
