/*
 * Erasure coding: the layout (ec_locate against the encoder), reconstruction of every
 * combination of up to four lost shards, and real volumes (written with volume.c) encoded,
 * read back through ec_volume_read with shards lost, damaged or on "another server",
 * rebuilt, deleted from and decoded back into a volume; torn runs and bad files.
 */
#include "config.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "log.h"
#include "tap.h"
#include "util.h"
#include "server/volume/ec_codec.h"
#include "server/volume/ec_volume.h"
#include "server/volume/volume.h"

static char dir[256];
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static char *sub(const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *p;
	int fd = open(path, O_RDONLY);
	*len = 0;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return NULL;
	}
	p = xmalloc((size_t)st.st_size + 1);
	if (pread(fd, p, (size_t)st.st_size, 0) != st.st_size) {
		free(p);
		p = NULL;
	} else {
		*len = (size_t)st.st_size;
	}
	close(fd);
	return p;
}

static void put_file(const char *path, const void *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || (len && write(fd, p, len) != (ssize_t)len))
		abort();
	close(fd);
}

static bool same_files(const char *a, const char *b)
{
	size_t la, lb;
	uint8_t *pa = slurp(a, &la), *pb = slurp(b, &lb);
	bool same = pa && pb && la == lb && !memcmp(pa, pb, la);
	free(pa);
	free(pb);
	return same;
}

static void copy_file(const char *from, const char *to)
{
	size_t n;
	uint8_t *p = slurp(from, &n);
	if (!p)
		abort();
	put_file(to, p, n);
	free(p);
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

static char *shard_path(const char *base, int i) { return xasprintf("%s%s", base, ec_shard_ext(i)); }

/* ---- the layout ---- */

/* Encodes a random .dat of size bytes; every range ec_locate gives must read back. */
static void check_layout(const struct ec_blocks *b, uint64_t size)
{
	char *d = sub("layout"), *base = xasprintf("%s/1", d), *p;
	uint8_t *dat = xmalloc(size + 1), *shard[EC_TOTAL_SHARDS], *got = xmalloc(size + 1);
	struct ec_vif vif = {0};
	struct ec_interval iv[64];
	size_t len, n;
	char msg[256] = "";
	bool good = true, sizes = true;
	uint64_t ssize = ec_shard_size(b, size);

	mkdir(d, 0755);
	fill(dat, size);
	p = xasprintf("%s.dat", base);
	put_file(p, dat, size);
	free(p);
	p = xasprintf("%s.idx", base);
	put_file(p, "", 0);
	free(p);
	if (!ok(ec_encode_volume(base, b, &vif, msg, sizeof(msg)) == WFS_OK,
		"encode a .dat of %" PRIu64 " bytes (%s)", size, msg))
		goto out;
	is_int(vif.dat_size, size, "the .vif has the .dat's size");
	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		p = shard_path(base, i);
		shard[i] = slurp(p, &len);
		sizes = sizes && shard[i] && len == ssize;
		free(p);
	}
	ok(sizes, "every shard has ec_shard_size = %" PRIu64 " bytes", ssize);
	/* whole blocks, single bytes at every block edge, and random ranges */
	for (int t = 0; t < 400 && sizes && size; t++) {
		uint64_t off, sz, at = 0;
		if (t < 200) {
			uint64_t edge = (t / 2) * b->small;
			off = MIN(size - 1, edge + (t % 2 ? 0 : b->small - 1));
			sz = MIN(size - off, (uint64_t)(t % 3 + 1));
		} else {
			off = rnd() % size;
			sz = 1 + rnd() % (size - off);
		}
		n = ec_locate(b, ssize, off, sz, iv, ARRAY_LEN(iv));
		if (n == 0 || n > ARRAY_LEN(iv)) {
			good = n > ARRAY_LEN(iv); /* too many pieces to check here, not wrong */
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			if (iv[i].shard_offset + iv[i].size > ssize) {
				good = false;
				break;
			}
			memcpy(got + at, shard[iv[i].shard] + iv[i].shard_offset, iv[i].size);
			at += iv[i].size;
		}
		if (at != sz || memcmp(got, dat + off, sz)) {
			printf("# range %" PRIu64 "+%" PRIu64 " of %" PRIu64 " reads wrong\n", off, sz,
			       size);
			good = false;
			break;
		}
	}
	ok(good, "every located range of the %" PRIu64 "-byte .dat reads back", size);
	ok(ec_locate(b, ssize, ssize * EC_DATA_SHARDS, 1, iv, 1) == 0,
	   "a range past the data has no pieces");
	{
		/* two shards lost and rebuilt, then the .dat decoded back */
		char *s2 = shard_path(base, 2), *s11 = shard_path(base, 11),
		     *dp = xasprintf("%s.dat", base);
		uint16_t rebuilt = 0;
		size_t l2, l11, dl;
		uint8_t *r2, *r11, *back;
		unlink(s2);
		unlink(s11);
		ok(ec_rebuild_shards(base, b, &rebuilt, msg, sizeof(msg)) == WFS_OK &&
			   rebuilt == (1u << 2 | 1u << 11),
		   "rebuild shards 2 and 11 (%s)", msg);
		r2 = slurp(s2, &l2);
		r11 = slurp(s11, &l11);
		ok(r2 && r11 && l2 == ssize && l11 == ssize && !memcmp(r2, shard[2], ssize) &&
			   !memcmp(r11, shard[11], ssize),
		   "both as encoded");
		unlink(dp);
		ok(ec_decode_volume(base, b, msg, sizeof(msg)) == WFS_OK, "decode (%s)", msg);
		back = slurp(dp, &dl);
		ok(back && dl == size && !memcmp(back, dat, size), "the .dat decodes back");
		free(r2);
		free(r11);
		free(back);
		free(s2);
		free(s11);
		free(dp);
	}
	for (int i = 0; i < EC_TOTAL_SHARDS; i++)
		free(shard[i]);
out:
	free(got);
	free(dat);
	free(base);
	free(d);
}

static void test_layout(void)
{
	struct ec_blocks b = {4096, 512};
	struct ec_interval iv[4];
	uint64_t sizes[] = {8, 5120, 5121, 40960, 40961, 81920, 81921, 3 * 40960 + 7, 40960 - 1};

	is_int(ec_shard_size(&b, 8), 512, "superblock only: one small row");
	is_int(ec_shard_size(&b, 5120), 512, "exactly one small row");
	is_int(ec_shard_size(&b, 5121), 1024, "one byte more: two small rows");
	is_int(ec_shard_size(&b, 40960), 4096, "ten large blocks exactly: small rows only");
	is_int(ec_shard_size(&b, 40961), 4096 + 512, "one byte more: one large row and a small one");
	is_int(ec_shard_size(&b, 81920), 8192, "twenty large blocks: one large row, then small");
	is_int(ec_shard_size(&b, 0), 0, "an empty .dat has empty shards");
	is_int(ec_shard_size(&ec_default_blocks, 8), EC_SMALL_BLOCK, "default: 1 MiB shards");
	/* a .dat of 40961: a large row, then a small one; byte 40960 is shard 0 at 4096 */
	is_int(ec_locate(&b, 4608, 40960, 1, iv, 4), 1, "first byte of the small rows");
	ok(iv[0].shard == 0 && iv[0].shard_offset == 4096, "lies in shard 0 after the large row");
	is_int(ec_locate(&b, 4608, 4095, 2, iv, 4), 2, "a range over a large block edge");
	ok(iv[0].shard == 0 && iv[0].shard_offset == 4095 && iv[0].size == 1 && iv[1].shard == 1 &&
		   iv[1].shard_offset == 0 && iv[1].size == 1,
	   "its pieces end shard 0's block and start shard 1's");
	is_int(ec_locate(&b, 4608, 40959, 2, iv, 4), 2, "a range from the large into the small rows");
	ok(iv[0].shard == 9 && iv[0].shard_offset == 4095 && iv[1].shard == 0 &&
		   iv[1].shard_offset == 4096,
	   "its pieces are shard 9's last large byte and shard 0's first small one");
	for (size_t i = 0; i < ARRAY_LEN(sizes); i++)
		check_layout(&b, sizes[i]);
	/* large blocks of several 1 MiB stripes, as the real 1 GiB ones */
	b.large = 3u << 20;
	b.small = 1u << 20;
	check_layout(&b, 2 * 10 * b.large + 4 * 10 * b.small + 12345);
}

/* ---- the codec ---- */

/*
 * SeaweedFS's shards: the parity its Go library (klauspost/reedsolomon, New(10, 4), default
 * options) computes for data shard i byte j = i * 31 + j * 7 + 1.
 */
static void test_seaweedfs_parity(void)
{
	static const uint8_t want[EC_PARITY_SHARDS][8] = {
		{0x0b, 0x17, 0x45, 0x24, 0xe3, 0x2a, 0x0e, 0xbc},
		{0x8c, 0xb4, 0x64, 0xce, 0xc2, 0x71, 0xef, 0x8e},
		{0x8c, 0x3b, 0x83, 0x2a, 0xf6, 0x8e, 0x57, 0x70},
		{0x8c, 0x4b, 0xa2, 0xa0, 0xd7, 0xc7, 0x36, 0xba}};
	uint8_t mem[EC_TOTAL_SHARDS][8], *sh[EC_TOTAL_SHARDS];
	bool same = true;

	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		sh[i] = mem[i];
		for (int j = 0; j < 8; j++)
			mem[i][j] = i < EC_DATA_SHARDS ? (uint8_t)(i * 31 + j * 7 + 1) : 0;
	}
	ok(ec_reconstruct(sh, 0x3ff, 0x3c00, 8) == WFS_OK, "parity of the reference data");
	for (int i = 0; i < EC_PARITY_SHARDS; i++)
		same = same && !memcmp(mem[EC_DATA_SHARDS + i], want[i], 8);
	ok(same, "the parity is byte for byte SeaweedFS's");
}

static void test_reconstruct(void)
{
	enum { LEN = 777 };
	uint8_t *orig[EC_TOTAL_SHARDS], *work[EC_TOTAL_SHARDS];
	int combos = 0, bad = 0;

	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		orig[i] = xmalloc(LEN);
		work[i] = xmalloc(LEN);
		if (i < EC_DATA_SHARDS)
			fill(orig[i], LEN);
	}
	ok(ec_reconstruct(orig, 0x3ff, 0x3c00, LEN) == WFS_OK, "encode parity from the data");
	for (uint32_t lost = 1; lost < (1u << EC_TOTAL_SHARDS); lost++) {
		if (__builtin_popcount(lost) > EC_PARITY_SHARDS)
			continue;
		for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
			memcpy(work[i], orig[i], LEN);
			if (lost & (1u << i))
				memset(work[i], 0xa5, LEN);
		}
		combos++;
		if (ec_reconstruct(work, (uint16_t)(EC_ALL_SHARDS & ~lost), (uint16_t)lost, LEN)) {
			bad++;
			continue;
		}
		for (int i = 0; i < EC_TOTAL_SHARDS; i++)
			if (memcmp(work[i], orig[i], LEN)) {
				bad++;
				break;
			}
	}
	is_int(combos, 14 + 91 + 364 + 1001, "every set of up to four lost shards tried");
	is_int(bad, 0, "every one reconstructed exactly");
	ok(ec_reconstruct(work, 0x1ff, 0x200, LEN) == WFS_EINVAL, "nine shards are not enough");
	ok(ec_reconstruct(work, EC_ALL_SHARDS, 0, LEN) == WFS_OK, "nothing wanted is fine");
	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		free(orig[i]);
		free(work[i]);
	}
}

/* ---- volumes ---- */

struct item {
	uint64_t key;
	uint32_t cookie;
	uint8_t *data;
	uint32_t len;
	bool live;
};

#define NITEMS 400
static struct item items[NITEMS];

static void set_data(struct item *it, uint32_t len)
{
	free(it->data);
	it->data = xmalloc(len + 1);
	it->len = len;
	fill(it->data, len);
}

static wfs_err put(volume *v, struct item *it)
{
	struct needle n = {0};
	bool unchanged;
	n.key = it->key;
	n.cookie = it->cookie;
	n.data = it->data;
	n.data_size = it->len;
	n.flags = NEEDLE_FLAG_HAS_NAME;
	n.name = "x.bin";
	n.name_len = 5;
	return volume_write(v, &n, &unchanged);
}

/* Writes volume vid in d: needles of assorted sizes, some deleted, some overwritten. */
static bool make_volume(const char *d, uint32_t vid)
{
	struct volume_create c = {0};
	volume *v;
	bool good = true;
	uint32_t sz;

	if (volume_open(d, "", vid, &c, &v))
		return false;
	for (int i = 0; i < NITEMS; i++) {
		uint64_t r = rnd();
		items[i].key = 1000 + (uint64_t)i * 7;
		items[i].cookie = (uint32_t)rnd();
		/* mostly small, some over a 64 KiB block, a few empty */
		set_data(&items[i], r % 10 == 0   ? (uint32_t)(70000 + rnd() % 150000)
				    : r % 13 == 0 ? 0
						  : (uint32_t)(rnd() % 9000));
		good = good && put(v, &items[i]) == WFS_OK;
		items[i].live = true;
	}
	for (int i = 0; i < NITEMS; i += 9) { /* overwritten: the new data wins */
		set_data(&items[i], (uint32_t)(rnd() % 20000));
		good = good && put(v, &items[i]) == WFS_OK;
	}
	for (int i = 3; i < NITEMS; i += 11) {
		good = good && volume_delete(v, items[i].key, items[i].cookie, 0, &sz) == WFS_OK;
		items[i].live = false;
	}
	volume_set_read_only(v, true);
	volume_unref(v);
	return good;
}

/* Reads every item; counts those that do not come back as they should. */
static int read_all(ec_volume *ev, ec_fetch_fn fetch, void *ctx, int *unavail)
{
	buf b = BUF_INIT;
	struct needle n;
	int wrong = 0;
	if (unavail)
		*unavail = 0;
	for (int i = 0; i < NITEMS; i++) {
		wfs_err err = ec_volume_read(ev, items[i].key, items[i].cookie, fetch, ctx, &b, &n);
		if (err == WFS_EUNAVAIL && unavail) {
			(*unavail)++;
			continue;
		}
		if (!items[i].live) {
			wrong += err != WFS_ENOENT;
			continue;
		}
		if (err || n.data_size != items[i].len ||
		    (items[i].len && memcmp(n.data, items[i].data, items[i].len))) {
			if (wrong < 3)
				printf("# key %" PRIu64 ": %s\n", items[i].key, wfs_strerror(err));
			wrong++;
		}
	}
	buf_free(&b);
	return wrong;
}

/* "Another server": serves the shards in serve from the files of base. */
struct remote {
	const char *base;
	uint16_t serve;
	atomic_int calls;
};

static wfs_err fetch_remote(void *ctx, uint32_t vid, int shard, uint64_t offset, uint64_t size,
			    uint8_t *out)
{
	struct remote *r = ctx;
	char *p = shard_path(r->base, shard);
	int fd = open(p, O_RDONLY);
	wfs_err err = WFS_EUNAVAIL;
	(void)vid;
	atomic_fetch_add(&r->calls, 1);
	if ((r->serve & (1u << shard)) && fd >= 0 &&
	    pread(fd, out, size, (off_t)offset) == (ssize_t)size)
		err = WFS_OK;
	if (fd >= 0)
		close(fd);
	free(p);
	return err;
}

/* The first live item with at least min data bytes. */
static struct item *live_item(uint32_t min)
{
	for (int i = 0; i < NITEMS; i++)
		if (items[i].live && items[i].len >= min)
			return &items[i];
	return NULL;
}

struct reader {
	ec_volume *ev;
	atomic_bool *stop;
	int wrong;
};

static void *reader_thread(void *arg)
{
	struct reader *r = arg;
	while (!atomic_load(r->stop))
		r->wrong += read_all(r->ev, NULL, NULL, NULL);
	return NULL;
}

static void test_concurrent(ec_volume *ev)
{
	atomic_bool stop = false;
	struct reader r[2] = {{ev, &stop, 0}, {ev, &stop, 0}};
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, reader_thread, &r[i]);
	for (int k = 0; k < 200; k++) {
		ec_volume_unmount_shards(ev, 1u << (k % EC_TOTAL_SHARDS), false);
		ec_volume_mount_shards(ev, EC_ALL_SHARDS);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	is_int(r[0].wrong + r[1].wrong, 0, "reads during mounts and unmounts are all right");
}

static void test_volume_ec(const struct ec_blocks *b, const char *name)
{
	char *d = sub(name), *rd = xasprintf("%s/remote", d), *base, *rbase, *orig, *p;
	struct ec_vif vif = {0};
	struct ec_volume_info info;
	ec_volume *ev = NULL;
	struct remote rem = {0};
	struct item *it;
	char msg[256] = "";
	int unavail, wrong;
	uint16_t rebuilt = 0;
	bool same = true;

	mkdir(d, 0755);
	mkdir(rd, 0755);
	base = xasprintf("%s/5", d);
	rbase = xasprintf("%s/5", rd);
	orig = xasprintf("%s/orig", d);
	mkdir(orig, 0755);
	if (!ok(make_volume(d, 5), "%s: write a volume", name))
		goto out;
	snprintf(vif.collection, sizeof(vif.collection), "%s", "");
	snprintf(vif.replication, sizeof(vif.replication), "000");
	if (!ok(ec_encode_volume(base, b, &vif, msg, sizeof(msg)) == WFS_OK, "%s: encode (%s)",
		name, msg))
		goto out;
	for (int i = 0; i < EC_TOTAL_SHARDS; i++) { /* keep the originals to compare with */
		char *from = shard_path(base, i), *to = xasprintf("%s/5%s", orig, ec_shard_ext(i)),
		     *rto = shard_path(rbase, i);
		copy_file(from, to);
		copy_file(from, rto);
		free(from);
		free(to);
		free(rto);
	}
	p = xasprintf("%s.dat", base);
	{
		char *od = xasprintf("%s/5.dat", orig);
		copy_file(p, od);
		free(od);
	}
	free(p);
	if (!ok(ec_volume_open_blocks(d, "", 5, b, &ev) == WFS_OK, "%s: open the ec volume", name))
		goto out;
	ec_volume_get_info(ev, &info);
	is_int(info.shard_bits, EC_ALL_SHARDS, "all 14 shards mounted");
	ok(info.shard_size > (b->large == EC_LARGE_BLOCK ? 0 : 2 * b->large) &&
		   info.shard_size % b->large,
	   "%s: shards of %" PRIu64 " bytes: %s", name, info.shard_size,
	   b->large == EC_LARGE_BLOCK ? "small rows" : "large rows and small ones");
	is_int(info.vif.dat_size, vif.dat_size, "the .vif's .dat size");
	is_int(read_all(ev, NULL, NULL, NULL), 0, "every needle reads back, deleted ones ENOENT");
	it = live_item(1);
	{
		buf bb = BUF_INIT;
		struct needle n;
		ok(ec_volume_read(ev, it->key, it->cookie + 1, NULL, NULL, &bb, &n) == WFS_ENOENT,
		   "a wrong cookie is ENOENT");
		ok(ec_volume_read(ev, 999999, 0, NULL, NULL, &bb, &n) == WFS_ENOENT,
		   "an unknown key is ENOENT");
		buf_free(&bb);
	}

	/* four shards lost: reconstruction */
	ec_volume_unmount_shards(ev, 1u << 0 | 1u << 3 | 1u << 7 | 1u << 12, false);
	is_int(read_all(ev, NULL, NULL, NULL), 0, "four shards unmounted: every needle still reads");
	ec_volume_unmount_shards(ev, 1u << 5, false);
	wrong = read_all(ev, NULL, NULL, &unavail);
	ok(wrong == 0 && unavail > 0, "five lost: %d needles unavailable, none wrong", unavail);
	ok(ec_volume_mount_shards(ev, EC_ALL_SHARDS) == EC_ALL_SHARDS, "all shards mounted again");

	/* a damaged byte in a needle's data: the CRC catches it, the read reconstructs */
	it = live_item(5000);
	if (it) {
		struct ec_interval iv[8];
		uint64_t off = 0;
		int fd;
		uint8_t byte = 0;
		/* find the needle's .dat offset from the original .dat */
		size_t dl;
		char *od = xasprintf("%s/5.dat", orig);
		uint8_t *dat = slurp(od, &dl);
		free(od);
		for (size_t o = 8; dat && o + 20 + 64 <= dl; o += 8)
			if (get_be64(dat + o + 4) == it->key && get_be32(dat + o) == it->cookie &&
			    get_be32(dat + o + 12) && !memcmp(dat + o + 20, it->data, 64))
				off = o;
		free(dat);
		ec_volume_get_info(ev, &info);
		ok(off > 0, "find the needle in the .dat");
		off += NEEDLE_HEADER_SIZE + 4 + it->len / 2;
		ok(ec_locate(b, info.shard_size, off, 1, iv, 8) == 1,
		   "locate a byte in the middle of a needle's data");
		p = shard_path(base, iv[0].shard);
		fd = open(p, O_RDWR);
		free(p);
		ok(fd >= 0 && pread(fd, &byte, 1, (off_t)iv[0].shard_offset) == 1,
		   "read the byte from its shard");
		byte ^= 0x40;
		ok(pwrite(fd, &byte, 1, (off_t)iv[0].shard_offset) == 1, "damage it");
		is_int(read_all(ev, NULL, NULL, NULL), 0, "the damaged needle still reads right");
		byte ^= 0x40;
		ok(pwrite(fd, &byte, 1, (off_t)iv[0].shard_offset) == 1, "repair it");
		close(fd);
	}

	/* shards on another server */
	ec_volume_unmount_shards(ev, 0x7f, false);
	rem.base = rbase;
	rem.serve = EC_ALL_SHARDS;
	is_int(read_all(ev, fetch_remote, &rem, NULL), 0, "seven shards fetched from elsewhere");
	ok(atomic_load(&rem.calls) > 0, "the fetch function was used (%d calls)",
	   atomic_load(&rem.calls));
	rem.serve = 0x3; /* only 0 and 1 remotely: with 7..13 here, 9 shards */
	wrong = read_all(ev, fetch_remote, &rem, &unavail);
	ok(wrong == 0 && unavail > 0, "nine reachable shards: %d unavailable, none wrong", unavail);
	rem.serve = 0x7; /* 0, 1 and 2: ten */
	is_int(read_all(ev, fetch_remote, &rem, NULL), 0, "ten reachable: all read");
	ec_volume_mount_shards(ev, EC_ALL_SHARDS);
	test_concurrent(ev);

	/* rebuild four deleted shard files */
	ec_volume_unmount_shards(ev, 1u << 1 | 1u << 6 | 1u << 10 | 1u << 13, true);
	msg[0] = '\0';
	ok(ec_rebuild_shards(base, b, &rebuilt, msg, sizeof(msg)) == WFS_OK, "rebuild (%s)", msg);
	is_int(rebuilt, 1u << 1 | 1u << 6 | 1u << 10 | 1u << 13, "the four lost shards rebuilt");
	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		char *a = shard_path(base, i), *o = xasprintf("%s/5%s", orig, ec_shard_ext(i));
		same = same && same_files(a, o);
		free(a);
		free(o);
	}
	ok(same, "every shard is byte-identical to the encoded one");
	is_int(ec_volume_mount_shards(ev, EC_ALL_SHARDS), EC_ALL_SHARDS, "and mounts");
	ec_volume_unmount_shards(ev, 0x1f, true);
	ok(ec_rebuild_shards(base, b, &rebuilt, msg, sizeof(msg)) == WFS_ENOENT,
	   "nine shards cannot rebuild: %s", msg);
	for (int i = 0; i < 5; i++) {
		char *a = shard_path(base, i), *o = xasprintf("%s/5%s", orig, ec_shard_ext(i));
		copy_file(o, a);
		free(a);
		free(o);
	}
	ec_volume_mount_shards(ev, EC_ALL_SHARDS);

	/* deletions: journaled, applied at open, also after a crash before the tombstone */
	{
		struct item *a = live_item(1), *c;
		uint32_t sz;
		uint8_t k[8];
		int fd;
		ok(ec_volume_has(ev, a->key, &sz), "has a live needle");
		ok(ec_volume_delete(ev, a->key) == WFS_OK, "delete it");
		a->live = false;
		ok(!ec_volume_has(ev, a->key, &sz), "no longer has it");
		ok(ec_volume_delete(ev, a->key) == WFS_OK, "deleting it again is fine");
		ok(ec_volume_delete(ev, 424242) == WFS_ENOENT, "deleting an unknown key: ENOENT");
		is_int(read_all(ev, NULL, NULL, NULL), 0, "it reads as deleted");
		ec_volume_unref(ev);
		c = live_item(1);
		c->live = false;
		p = xasprintf("%s.ecj", base);
		fd = open(p, O_WRONLY | O_APPEND);
		put_be64(k, c->key);
		ok(fd >= 0 && write(fd, k, 8) == 8 && write(fd, "xyz", 3) == 3,
		   "journal a deletion the .ecx never saw, and a torn key");
		close(fd);
		ok(ec_volume_open_blocks(d, "", 5, b, &ev) == WFS_OK, "reopen");
		is_int(read_all(ev, NULL, NULL, NULL), 0, "both deletions hold after the reopen");
		ec_volume_get_info(ev, &info);
		is_int(info.deleted, 2, "two .ecx entries deleted");
		{
			struct stat st;
			ok(stat(p, &st) == 0 && st.st_size == 16, "the torn key was cut off the .ecj");
		}
		free(p);
	}
	ec_volume_unref(ev);
	ev = NULL;

	/* decode back into a volume */
	{
		char *dat = xasprintf("%s.dat", base), *idx = xasprintf("%s.idx", base),
		     *od = xasprintf("%s/5.dat", orig);
		volume *v;
		int bad = 0;
		unlink(dat);
		unlink(idx);
		msg[0] = '\0';
		ok(ec_decode_volume(base, b, msg, sizeof(msg)) == WFS_OK, "decode (%s)", msg);
		ok(same_files(dat, od), "the .dat is byte-identical to the original");
		if (ok(volume_open(d, "", 5, NULL, &v) == WFS_OK, "volume_open loads the decoded volume")) {
			buf bb = BUF_INIT;
			struct needle n;
			struct volume_info vi;
			for (int i = 0; i < NITEMS; i++) {
				wfs_err e = volume_read(v, items[i].key, items[i].cookie, false, &bb, &n);
				if (items[i].live ? e || n.data_size != items[i].len ||
							    memcmp(n.data, items[i].data, items[i].len)
						  : e != WFS_ENOENT)
					bad++;
			}
			is_int(bad, 0, "the same live needles, the deletions kept");
			volume_get_info(v, &vi);
			is_int(vi.size, vif.dat_size, "nothing cut off or added");
			buf_free(&bb);
			volume_unref(v);
		}
		free(dat);
		free(idx);
		free(od);
	}
out:
	if (ev)
		ec_volume_unref(ev);
	free(base);
	free(rbase);
	free(orig);
	free(rd);
	free(d);
}

/* ---- torn runs and bad files ---- */

static void test_bad(void)
{
	struct ec_blocks b = {65536, 4096};
	char *d = sub("bad"), *base = xasprintf("%s/9", d), *p, msg[256] = "";
	struct ec_vif vif = {0}, got;
	ec_volume *ev;
	bool leftover = false, final = false;
	static const char *const garbage[] = {
		"", "{", "[]", "null", "{\"version\":3}", "{\"datFileSize\":-1}",
		"{\"datFileSize\":\"12x\"}", "{\"datFileSize\":1,\"collection\":5}",
		"{\"datFileSize\":1,\"replication\":\"00000\"}", "{\"datFileSize\":1e3}",
		"{\"datFileSize\":1,\"version\":1000}", "\xff\xfe"};
	int refused = 0;

	mkdir(d, 0755);
	if (!ok(make_volume(d, 9), "write a volume"))
		goto out;
	/* an .idx that is not whole entries: the encode fails and leaves nothing */
	p = xasprintf("%s.idx", base);
	{
		int fd = open(p, O_WRONLY | O_APPEND);
		ok(fd >= 0 && write(fd, "abc", 3) == 3, "tear the .idx");
		close(fd);
	}
	ok(ec_encode_volume(base, &b, &vif, msg, sizeof(msg)) == WFS_ECORRUPT,
	   "the encode refuses it: %s", msg);
	for (int i = 0; i < EC_TOTAL_SHARDS + 3; i++) {
		char *f = i < EC_TOTAL_SHARDS ? shard_path(base, i)
					      : xasprintf("%s%s", base,
							  (const char *[]){".ecx", ".ecj",
									   ".vif"}[i - EC_TOTAL_SHARDS]),
		     *t = xasprintf("%s.tmp", f);
		final = final || exists(f);
		leftover = leftover || exists(t);
		free(f);
		free(t);
	}
	ok(!final && !leftover, "no shard, .ecx, .ecj or .vif left, finished or not");
	{
		struct stat st;
		ok(stat(p, &st) == 0 && truncate(p, st.st_size - 3) == 0, "mend the .idx");
	}
	free(p);
	ok(ec_encode_volume(base, &b, &vif, msg, sizeof(msg)) == WFS_OK, "encode (%s)", msg);

	/* a torn encode: .tmp files and no .vif */
	for (int i = 0; i < EC_TOTAL_SHARDS; i += 3) {
		char *f = shard_path(base, i), *t = xasprintf("%s.tmp", f);
		copy_file(f, t);
		free(f);
		free(t);
	}
	p = xasprintf("%s.vif", base);
	{
		char *t = xasprintf("%s.tmp", p);
		copy_file(p, t);
		free(t);
	}
	ec_remove_leftovers(base);
	leftover = false;
	for (int i = 0; i < EC_TOTAL_SHARDS; i++) {
		char *f = shard_path(base, i), *t = xasprintf("%s.tmp", f);
		leftover = leftover || exists(t) || !exists(f);
		free(f);
		free(t);
	}
	ok(!leftover, "ec_remove_leftovers removes the .tmp files and only them");

	/* .vif garbage */
	ok(ec_vif_read(base, &got) == WFS_OK && got.dat_size == vif.dat_size &&
		   !strcmp(got.replication, vif.replication),
	   "the .vif reads back");
	for (size_t i = 0; i < ARRAY_LEN(garbage); i++) {
		put_file(p, garbage[i], strlen(garbage[i]));
		refused += ec_vif_read(base, &got) == WFS_ECORRUPT;
	}
	is_int(refused, (int)ARRAY_LEN(garbage), "every malformed .vif is ECORRUPT");
	ok(ec_volume_open_blocks(d, "", 9, &b, &ev) == WFS_ECORRUPT, "open refuses a bad .vif");
	put_file(p, "{\"datFileSize\":\"123\"}", 21);
	ok(ec_vif_read(base, &got) == WFS_OK && got.dat_size == 123 && got.version == 3,
	   "a size as a string (protobuf JSON) and no version read");
	ok(ec_vif_write(base, &vif) == WFS_OK, "write the .vif back");
	unlink(p);
	ok(ec_vif_read(base, &got) == WFS_ENOENT, "a missing .vif is ENOENT");
	ok(ec_vif_write(base, &vif) == WFS_OK, "write the .vif back");
	free(p);

	/* .ecx not whole entries */
	p = xasprintf("%s.ecx", base);
	{
		int fd = open(p, O_WRONLY | O_APPEND);
		ok(fd >= 0 && write(fd, "12345", 5) == 5, "tear the .ecx");
		close(fd);
		ok(ec_volume_open_blocks(d, "", 9, &b, &ev) == WFS_ECORRUPT, "open refuses it");
		struct stat st;
		ok(stat(p, &st) == 0 && truncate(p, st.st_size - 5) == 0, "mend the .ecx");
	}
	free(p);

	/* shards of unequal sizes */
	p = shard_path(base, 4);
	{
		struct stat st;
		struct ec_volume_info info;
		ok(stat(p, &st) == 0 && truncate(p, st.st_size - 1) == 0, "shorten shard 4");
		ok(ec_rebuild_shards(base, &b, &(uint16_t){0}, msg, sizeof(msg)) == WFS_ECORRUPT,
		   "rebuild refuses: %s", msg);
		ok(ec_decode_volume(base, &b, msg, sizeof(msg)) == WFS_ECORRUPT,
		   "decode refuses: %s", msg);
		if (ok(ec_volume_open_blocks(d, "", 9, &b, &ev) == WFS_OK, "open still works")) {
			ec_volume_get_info(ev, &info);
			is_int(info.shard_bits, EC_ALL_SHARDS & ~(1u << 4), "without shard 4");
			is_int(read_all(ev, NULL, NULL, NULL), 0, "and reads everything");
			ec_volume_destroy(ev);
			ec_volume_unref(ev);
		}
	}
	{
		char *x = xasprintf("%s.ecx", base), *s0 = shard_path(base, 0);
		ok(!exists(x) && !exists(s0), "destroy removed the .ecx and the shards it held");
		ok(exists(p), "but not the shard it did not hold");
		free(x);
		free(s0);
	}
	free(p);
out:
	free(base);
	free(d);
}

int main(void)
{
	char cmd[600];
	struct ec_blocks small = {65536, 4096};
	snprintf(dir, sizeof(dir), "/tmp/test_ec.XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	log_set_level(LOG_LEVEL_ERROR);
	test_layout();
	test_seaweedfs_parity();
	test_reconstruct();
	test_volume_ec(&small, "small");
	test_volume_ec(&ec_default_blocks, "default");
	test_bad();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# cleanup failed\n");
	return done_testing();
}
