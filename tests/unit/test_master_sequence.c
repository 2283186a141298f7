/* The master's file-key sequence: persistence across restarts and concurrency. */
#include "config.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "server/master/sequence.h"
#include "tap.h"
#include "util.h"

#define THREADS    8
#define PER_THREAD 20000

static sequence *shared;
static uint64_t got[THREADS][PER_THREAD];

static void *grab(void *arg)
{
	uint64_t *out = arg;
	for (int i = 0; i < PER_THREAD; i++)
		if (sequence_next_keys(shared, 1, &out[i]))
			out[i] = 0;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	char dir[] = "/tmp/test_master_seq.XXXXXX";
	char path[256];
	wfs_err err;
	sequence *s;
	uint64_t first = 0, k = 0, last = 0, max_seen = 0;
	uint32_t vid = 0;
	pthread_t th[THREADS];
	bool dup = false, zero = false;
	uint64_t *all;

	if (!mkdtemp(dir))
		return 1;
	s = sequence_open(dir, &err);
	ok(s != NULL, "open a fresh sequence");
	is_int(sequence_next_keys(s, 1, &first), WFS_OK, "first key");
	ok(first >= 1, "keys start at 1 or above");
	is_int(sequence_next_keys(s, 5, &k), WFS_OK, "count=5");
	is_int(k, first + 1, "a count reservation follows the previous key");
	is_int(sequence_next_keys(s, 1, &last), WFS_OK, "next");
	is_int(last, k + 5, "count=5 consumed five keys");
	is_int(sequence_next_keys(s, 0, &k), WFS_EINVAL, "count=0 refused");
	/* Cross a batch boundary: persistence happens mid-stream. */
	is_int(sequence_next_keys(s, SEQUENCE_BATCH + 7, &k), WFS_OK, "reserve past the ceiling");
	last = k + SEQUENCE_BATCH + 7 - 1;
	is_int(sequence_next_volume_id(s, &vid), WFS_OK, "allocate a volume id");
	is_int(vid, 1, "first volume id is 1");

	/* Simulated kill -9: reopen without closing; nothing handed out may repeat. */
	{
		sequence *s2 = sequence_open(dir, &err);
		uint64_t k2 = 0;
		uint32_t vid2 = 0;
		ok(s2 != NULL, "reopen after a crash");
		is_int(sequence_next_keys(s2, 1, &k2), WFS_OK, "key after reopen");
		ok(k2 > last, "a reopened sequence never repeats a key (%llu > %llu)",
		   (unsigned long long)k2, (unsigned long long)last);
		is_int(sequence_next_volume_id(s2, &vid2), WFS_OK, "volume id after reopen");
		is_int(vid2, 2, "volume ids are never reused");
		sequence_free(s2);
	}
	sequence_free(s);

	s = sequence_open(dir, &err);
	is_int(sequence_observe_key(s, 5000000), WFS_OK, "observe a heartbeat's maxFileKey");
	is_int(sequence_next_keys(s, 1, &k), WFS_OK, "key after observing");
	ok(k > 5000000, "sequence raised above maxFileKey");
	is_int(sequence_observe_key(s, 10), WFS_OK, "observing a small key");
	is_int(sequence_next_keys(s, 1, &first), WFS_OK, "key");
	is_int(first, k + 1, "a smaller maxFileKey changes nothing");
	is_int(sequence_observe_volume_id(s, 40), WFS_OK, "observe volume id 40");
	is_int(sequence_max_volume_id(s), 40, "max volume id raised");
	sequence_free(s);
	s = sequence_open(dir, &err);
	ok(sequence_peek(s) > 5000001, "raised sequence survives a restart");
	is_int(sequence_next_volume_id(s, &vid), WFS_OK, "volume id after observe+restart");
	is_int(vid, 41, "observed volume ids are persisted");

	/* Concurrent reservations are unique. */
	shared = s;
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, grab, got[i]);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	all = xmalloc(sizeof(got));
	memcpy(all, got, sizeof(got));
	qsort(all, THREADS * PER_THREAD, sizeof(uint64_t), cmp_u64);
	for (size_t i = 0; i < THREADS * PER_THREAD; i++) {
		zero |= all[i] == 0;
		if (i && all[i] == all[i - 1])
			dup = true;
		max_seen = MAX(max_seen, all[i]);
	}
	ok(!zero, "every concurrent reservation succeeded");
	ok(!dup, "%d concurrent reservations are unique", THREADS * PER_THREAD);
	free(all);
	sequence_free(s);

	/* A corrupt state file is refused rather than silently restarting at 1. */
	snprintf(path, sizeof(path), "%s/weedfs_master.seq", dir);
	{
		FILE *f = fopen(path, "w");
		fputs("garbage here\n", f);
		fclose(f);
	}
	s = sequence_open(dir, &err);
	ok(s == NULL, "corrupt state file refused");
	is_int(err, WFS_ECORRUPT, "with WFS_ECORRUPT");
	unlink(path);
	rmdir(dir);
	return done_testing();
}
