/* Vacuum: compaction while readers and writers run, commit, and crash leftovers. */
#include "config.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tap.h"
#include "util.h"
#include "server/volume/volume.h"

enum { N = 2000 };

static char dir[256];
static volume *vol;
static atomic_bool stop;
static atomic_long read_errors, reads;

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

/* Runs a shell command inside the test directory. */
static int sh(const char *cmd)
{
	char full[1024];
	snprintf(full, sizeof(full), "cd %s && %s", dir, cmd);
	return system(full);
}

static void data_for(uint64_t key, char *out, size_t n)
{
	snprintf(out, n, "payload of needle %llu padded to be a bit longer",
		 (unsigned long long)key);
}

static wfs_err put(uint64_t key)
{
	char data[128];
	struct needle n = {0};
	bool u;
	data_for(key, data, sizeof(data));
	n.key = key;
	n.cookie = (uint32_t)key * 7;
	n.data = (const uint8_t *)data;
	n.data_size = (uint32_t)strlen(data);
	return volume_write(vol, &n, &u);
}

static bool check(volume *v, uint64_t key)
{
	char data[128];
	buf b = BUF_INIT;
	struct needle n;
	bool r;
	data_for(key, data, sizeof(data));
	r = volume_read(v, key, (uint32_t)key * 7, false, &b, &n) == WFS_OK &&
	    n.data_size == strlen(data) && !memcmp(n.data, data, n.data_size);
	buf_free(&b);
	return r;
}

/* Reads odd keys from 3 (never deleted) over and over. */
static void *reader(void *arg)
{
	uint64_t x = (uintptr_t)arg;
	while (!atomic_load(&stop)) {
		uint64_t key;
		x = x * 6364136223846793005ull + 1;
		key = ((x >> 20) % (N / 2 - 1)) * 2 + 3; /* odd keys but 1 */
		if (!check(vol, key))
			atomic_fetch_add(&read_errors, 1);
		atomic_fetch_add(&reads, 1);
	}
	return NULL;
}

static int count_live(volume *v, uint64_t from, uint64_t to)
{
	int c = 0;
	for (uint64_t k = from; k <= to; k++)
		c += check(v, k);
	return c;
}

int main(void)
{
	struct volume_create c = {0};
	struct volume_info in;
	pthread_t th[3];
	off_t before;
	uint32_t sz;
	char cmd[600];
	int bad = 0;

	snprintf(dir, sizeof(dir), "/tmp/test_vacuum.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	ok(volume_open(dir, "", 1, &c, &vol) == WFS_OK, "create");
	for (uint64_t k = 1; k <= N; k++)
		bad += put(k) != WFS_OK;
	for (uint64_t k = 2; k <= N; k += 2)
		bad += volume_delete(vol, k, (uint32_t)k * 7, 0, &sz) != WFS_OK;
	is_int(bad, 0, "filled and deleted half");
	ok(volume_garbage_ratio(vol) > 0.3, "garbage ratio %.2f", volume_garbage_ratio(vol));
	before = fsize("1.dat");

	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, reader, (void *)(uintptr_t)(i + 1));
	ok(volume_compact(vol) == WFS_OK, "compact while readers run");
	ok(fsize("1.cpd") > 0 && fsize("1.cpx") > 0, ".cpd and .cpx exist");
	/* writes and deletes during compaction must survive the commit */
	for (uint64_t k = N + 1; k <= N + 100; k++)
		bad += put(k) != WFS_OK;
	bad += volume_delete(vol, N + 1, (uint32_t)(N + 1) * 7, 0, &sz) != WFS_OK;
	bad += volume_delete(vol, 1, 7, 0, &sz) != WFS_OK; /* copied by compact, deleted after */
	is_int(bad, 0, "writes during compaction");
	ok(volume_commit(vol) == WFS_OK, "commit while readers run");
	usleep(50000);
	atomic_store(&stop, true);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ok(atomic_load(&reads) > 100, "readers ran (%ld reads)", atomic_load(&reads));
	is_int(atomic_load(&read_errors), 0, "readers never missed a needle");
	ok(fsize("1.dat") < before, "compacted .dat smaller (%lld < %lld)",
	   (long long)fsize("1.dat"), (long long)before);
	ok(fsize("1.cpd") < 0 && fsize("1.cpx") < 0, "no leftovers after commit");
	volume_get_info(vol, &in);
	is_int(in.compact_revision, 1, "compaction revision + 1");
	is_int(in.live_count, N / 2 - 1 + 99, "live count after commit");
	is_int(count_live(vol, 3, N), N / 2 - 1, "old odd needles readable");
	ok(!check(vol, 1) && !check(vol, 2), "deleted needles stay deleted");
	is_int(count_live(vol, N + 2, N + 100), 99, "needles written during compaction");
	ok(!check(vol, N + 1), "delete during compaction kept");
	ok(put(N + 200) == WFS_OK && check(vol, N + 200), "write after commit");
	volume_unref(vol);

	ok(volume_open(dir, "", 1, NULL, &vol) == WFS_OK, "reopen after commit");
	is_int(count_live(vol, 1, N + 200), N / 2 - 1 + 99 + 1, "everything there after reopen");
	volume_get_info(vol, &in);
	is_int(in.compact_revision, 1, "revision persisted in superblock");

	/* crash during compaction: leftover .cpd/.cpx are removed, old volume intact */
	ok(volume_compact(vol) == WFS_OK, "compact again");
	/* simulate the crash: keep copies of the leftovers, then close */
	ok(sh("cp 1.cpd 1.cpd.keep && cp 1.cpx 1.cpx.keep") == 0, "copy leftovers");
	volume_unref(vol);
	ok(sh("mv 1.cpd.keep 1.cpd && mv 1.cpx.keep 1.cpx") == 0, "leftovers back in place");
	ok(volume_open(dir, "", 1, NULL, &vol) == WFS_OK, "open with leftovers");
	ok(fsize("1.cpd") < 0 && fsize("1.cpx") < 0, "leftovers removed on load");
	is_int(count_live(vol, 1, N + 200), N / 2 - 1 + 99 + 1, "old volume intact");

	/* crash between the two renames: lone .cpx becomes the .idx */
	ok(volume_compact(vol) == WFS_OK, "compact a third time");
	ok(sh("cp 1.cpx 1.cpx.keep") == 0, "keep .cpx");
	ok(volume_commit(vol) == WFS_OK, "commit");
	volume_unref(vol);
	/* state after "rename(.cpd, .dat)" only: new .dat, a stale .idx, lone .cpx */
	ok(sh("mv 1.cpx.keep 1.cpx && : > 1.idx") == 0, "recreate lone .cpx");
	ok(volume_open(dir, "", 1, NULL, &vol) == WFS_OK, "open with lone .cpx");
	ok(fsize("1.cpx") < 0, ".cpx consumed");
	is_int(count_live(vol, 1, N + 200), N / 2 - 1 + 99 + 1, "new volume intact");
	volume_get_info(vol, &in);
	is_int(in.compact_revision, 2, "revision 2 (the crashed compaction never counted)");
	ok(volume_commit(vol) == WFS_EINVAL, "commit without compact refused");
	ok(volume_compact(vol) == WFS_OK && volume_cleanup(vol) == WFS_OK && fsize("1.cpd") < 0 &&
		   fsize("1.cpx") < 0,
	   "cleanup removes compaction files");
	volume_unref(vol);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# cleanup failed\n");
	return done_testing();
}
