/* Needle encoding (SeaweedFS v3 layout) and the needle map. */
#include "config.h"
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include "crc32c.h"
#include "tap.h"
#include "util.h"
#include "server/volume/needle.h"
#include "server/volume/needle_map.h"

static size_t flatten(const struct needle_enc *e, uint8_t *out)
{
	size_t n = 0;
	for (int i = 0; i < e->iovcnt; i++) {
		if (e->iov[i].iov_len)
			memcpy(out + n, e->iov[i].iov_base, e->iov[i].iov_len);
		n += e->iov[i].iov_len;
	}
	return n;
}

static void test_padding(void)
{
	/* 16 + size + 12 aligned to 8 still gets 8 bytes of padding */
	is_int(needle_padding(4), 8, "aligned needle gets 8 bytes padding");
	is_int(needle_padding(5), 7, "size 5 -> 7");
	is_int(needle_padding(0), 4, "deletion record padding 4");
	is_int(needle_disk_size(0), 32, "deletion record is 32 bytes");
	is_int(needle_disk_size(1029) % 8, 0, "disk size aligned");
}

static void test_layout(void)
{
	struct needle n = {0}, d;
	struct needle_enc e = {0};
	uint8_t out[256];
	const char *data = "hello";
	size_t len;

	n.cookie = 0x01020304;
	n.key = 0x1122334455667788ull;
	n.data = (const uint8_t *)data;
	n.data_size = 5;
	n.flags = NEEDLE_FLAG_HAS_NAME | NEEDLE_FLAG_HAS_MIME | NEEDLE_FLAG_HAS_LAST_MODIFIED |
		  NEEDLE_FLAG_HAS_TTL | NEEDLE_FLAG_HAS_PAIRS;
	n.name = "a.txt";
	n.name_len = 5;
	n.mime = "text/plain";
	n.mime_len = 10;
	n.last_modified = 0x0102030405ull;
	n.ttl[0] = 3;
	n.ttl[1] = 3;
	n.pairs = (const uint8_t *)"{\"a\":\"b\"}";
	n.pairs_len = 9;
	n.append_ns = 0xAABBCCDDEEFF0011ull;
	needle_encode(&n, &e);
	len = flatten(&e, out);
	/* body: 4 + 5 + 1 + (1+5) + (1+10) + 5 + 2 + (2+9) = 45 */
	is_int(n.size, 45, "body size");
	is_int(len, needle_disk_size(45), "encoded length = disk size");
	is_int(len % 8, 0, "aligned");
	is_int(get_be32(out), 0x01020304, "cookie BE");
	ok(get_be64(out + 4) == 0x1122334455667788ull, "key BE");
	is_int(get_be32(out + 12), 45, "size BE");
	is_int(get_be32(out + 16), 5, "data size");
	ok(!memcmp(out + 20, "hello", 5), "data");
	is_int(out[25], n.flags, "flags");
	is_int(out[26], 5, "name len");
	is_int(out[32], 10, "mime len");
	ok(!memcmp(out + 43, "\x01\x02\x03\x04\x05", 5), "last modified 5 bytes BE");
	is_int(get_be32(out + 16 + 45), crc32c_update(0, "hello", 5), "plain crc32c after body");
	ok(get_be64(out + 16 + 45 + 4) == 0xAABBCCDDEEFF0011ull, "append ns");

	ok(needle_decode(out, len, true, &d) == WFS_OK, "decodes");
	ok(d.key == n.key && d.cookie == n.cookie && d.data_size == 5, "header fields");
	ok(d.name_len == 5 && !memcmp(d.name, "a.txt", 5), "name");
	ok(d.mime_len == 10 && !memcmp(d.mime, "text/plain", 10), "mime");
	ok(d.last_modified == 0x0102030405ull, "last modified");
	ok(d.ttl[0] == 3 && d.ttl[1] == 3, "ttl");
	ok(d.pairs_len == 9 && !memcmp(d.pairs, "{\"a\":\"b\"}", 9), "pairs");
	ok(d.append_ns == n.append_ns, "append ns decoded");

	/* flipping a data byte breaks the CRC */
	out[21] ^= 1;
	ok(needle_decode(out, len, true, &d) == WFS_ECORRUPT, "bad crc detected");
	ok(needle_decode(out, len, false, &d) == WFS_OK, "crc check can be skipped");
	out[21] ^= 1;
	/* legacy masked CRC is accepted */
	{
		uint32_t c = crc32c_update(0, "hello", 5);
		put_be32(out + 16 + 45, ((c >> 15) | (c << 17)) + 0xa282ead8u);
		ok(needle_decode(out, len, true, &d) == WFS_OK, "legacy masked crc accepted");
	}
	/* truncated and lying lengths */
	ok(needle_decode(out, len - 13, true, &d) == WFS_ECORRUPT, "truncated needle rejected");
	put_be32(out + 16, 1000);
	ok(needle_decode(out, len, true, &d) == WFS_ECORRUPT, "data size past body rejected");
	needle_enc_free(&e);

	/* deletion record */
	needle_encode_delete(7, 42, 99, &e);
	len = flatten(&e, out);
	is_int(len, 32, "deletion record length");
	ok(needle_decode(out, len, true, &d) == WFS_OK && d.size == 0 && d.key == 42 &&
		   d.append_ns == 99,
	   "deletion record decodes");
	needle_enc_free(&e);

	/* empty data still has a body (so it is not mistaken for a deletion) */
	memset(&n, 0, sizeof(n));
	n.key = 5;
	needle_encode(&n, &e);
	len = flatten(&e, out);
	ok(n.size == 5 && needle_decode(out, len, true, &d) == WFS_OK && d.size == 5 &&
		   d.data_size == 0,
	   "empty needle has a 5-byte body");
	needle_enc_free(&e);

	/* big pairs go to the heap tail */
	{
		uint8_t *pairs = xcalloc(1, 60000), *big = xmalloc(70000);
		memset(&n, 0, sizeof(n));
		n.key = 6;
		n.flags = NEEDLE_FLAG_HAS_PAIRS;
		n.pairs = pairs;
		n.pairs_len = 60000;
		needle_encode(&n, &e);
		len = flatten(&e, big);
		ok(needle_decode(big, len, true, &d) == WFS_OK && d.pairs_len == 60000,
		   "large pairs round trip");
		needle_enc_free(&e);
		free(pairs);
		free(big);
	}
}

/* needle_encode_crc with the data elsewhere, and needle_decode_meta without the data. */
static void test_split(void)
{
	struct needle n = {0}, w = {0}, d, m;
	struct needle_enc e = {0}, ew = {0};
	uint8_t whole[256], split[256];
	const char *data = "0123456789abcdef";
	size_t len, hl, tl;

	n.cookie = 7;
	n.key = 42;
	n.data = (const uint8_t *)data;
	n.data_size = 16;
	n.flags = NEEDLE_FLAG_HAS_NAME | NEEDLE_FLAG_HAS_MIME | NEEDLE_FLAG_HAS_LAST_MODIFIED |
		  NEEDLE_FLAG_HAS_PAIRS;
	n.name = "big.bin";
	n.name_len = 7;
	n.mime = "image/png";
	n.mime_len = 9;
	n.last_modified = 1700000000;
	n.pairs = (const uint8_t *)"{}";
	n.pairs_len = 2;
	n.append_ns = 99;
	w = n;
	w.data = NULL;
	needle_encode(&n, &e);
	needle_encode_crc(&w, crc32c_update(0, data, 16), &ew);
	len = flatten(&e, whole);
	is_int(ew.total, e.total, "external data counts in the total");
	is_int(ew.iov[1].iov_len, 0, "external data is not in the iovecs");
	hl = ew.iov[0].iov_len;
	tl = ew.iov[2].iov_len;
	memcpy(split, ew.iov[0].iov_base, hl);
	memcpy(split + hl, data, 16);
	memcpy(split + hl + 16, ew.iov[2].iov_base, tl);
	ok(len == hl + 16 + tl && !memcmp(whole, split, len),
	   "header + data + tail equals the in-memory encoding");
	ok(needle_decode(whole, len, true, &d) == WFS_OK, "decode whole");
	ok(needle_decode_meta(whole, whole + NEEDLE_HEAD_SIZE + 16, len - NEEDLE_HEAD_SIZE - 16,
			      &m) == WFS_OK,
	   "decode fields without the data");
	ok(m.data == NULL && m.data_size == 16 && m.key == 42 && m.cookie == 7 && m.name_len == 7 &&
		   !memcmp(m.name, "big.bin", 7) && m.mime_len == 9 &&
		   m.last_modified == 1700000000 && m.pairs_len == 2 && m.crc == d.crc &&
		   m.append_ns == 99 && m.size == d.size,
	   "fields match the full decode");
	ok(needle_decode_meta(whole, whole + NEEDLE_HEAD_SIZE + 16, 5, &m) == WFS_ECORRUPT,
	   "short tail is corrupt");
	put_be32(whole + NEEDLE_HEADER_SIZE, 0xFFFFFF00u);
	ok(needle_decode_meta(whole, whole + NEEDLE_HEAD_SIZE + 16, len - NEEDLE_HEAD_SIZE - 16,
			      &m) == WFS_ECORRUPT,
	   "data size beyond the body is corrupt");
	needle_enc_free(&e);
	needle_enc_free(&ew);
}

static void test_idx_entry(void)
{
	uint8_t p[16];
	uint64_t k;
	uint32_t o, s;
	idx_entry_encode(p, 0x0102030405060708ull, 0x11223344, NEEDLE_TOMBSTONE);
	ok(p[0] == 1 && p[7] == 8 && p[8] == 0x11 && p[15] == 0xff, "idx entry layout");
	idx_entry_decode(p, &k, &o, &s);
	ok(k == 0x0102030405060708ull && o == 0x11223344 && s == NEEDLE_TOMBSTONE,
	   "idx entry round trip");
}

static uint64_t lcg(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 17;
}

static void test_map_small(void)
{
	needle_map *m = needle_map_new();
	struct nm_entry e;
	size_t n = 0;

	ok(!needle_map_get(m, 1, &e), "empty map");
	ok(!needle_map_set(m, 10, 1, 100, NULL), "new key");
	ok(!needle_map_set(m, 20, 2, 200, NULL), "new key 2");
	ok(!needle_map_set(m, 5, 3, 300, NULL), "out of order key");
	ok(needle_map_set(m, 10, 4, 400, &e) && e.offset == 1 && e.size == 100, "overwrite");
	ok(needle_map_get(m, 5, &e) && e.offset == 3, "out of order key found");
	ok(needle_map_delete(m, 20, &e) && e.size == 200, "delete");
	ok(needle_map_get(m, 20, &e) && (e.size & NM_DELETED) && e.offset == 2,
	   "deleted entry keeps its location");
	ok(!needle_map_delete(m, 20, NULL), "double delete");
	is_int(needle_map_live(m), 2, "live count");
	ok(!needle_map_set(m, 20, 9, 1, NULL), "re-create deleted key counts as new");
	is_int(needle_map_live(m), 3, "live count after re-create");
	ok(needle_map_max_key(m) == 20, "max key");
	needle_map_free(m);
	needle_map_free(NULL);
	(void)n;
}

struct fe_state {
	uint64_t last;
	size_t n;
	bool sorted;
};

static bool fe(const struct nm_entry *e, void *arg)
{
	struct fe_state *s = arg;
	if (s->n && e->key <= s->last)
		s->sorted = false;
	s->last = e->key;
	s->n++;
	return true;
}

/* Random keys against a reference array (out-of-order path and merges). */
static void test_map_random(void)
{
	enum { N = 200000, SPACE = 400000 };
	uint32_t *ref = xcalloc(SPACE, sizeof(uint32_t)); /* 0 absent, else offset */
	needle_map *m = needle_map_new();
	uint64_t x = 42;
	size_t live = 0, bad = 0;
	struct fe_state st = {0, 0, true};

	for (int i = 0; i < N; i++) {
		uint64_t k = lcg(&x) % SPACE + 1;
		if (k >= SPACE)
			continue;
		if (lcg(&x) % 5 == 0) {
			bool was = ref[k] != 0;
			if (needle_map_delete(m, k, NULL) != was)
				bad++;
			if (was)
				live--;
			ref[k] = 0;
		} else {
			bool was = ref[k] != 0;
			if (needle_map_set(m, k, (uint32_t)i + 1, 8, NULL) != was)
				bad++;
			if (!was)
				live++;
			ref[k] = (uint32_t)i + 1;
		}
	}
	for (uint64_t k = 1; k < SPACE; k++) {
		struct nm_entry e;
		bool got = needle_map_get(m, k, &e) && !(e.size & NM_DELETED);
		if (got != (ref[k] != 0) || (got && e.offset != ref[k]))
			bad++;
	}
	is_int(bad, 0, "random map agrees with reference");
	is_int(needle_map_live(m), live, "random map live count");
	needle_map_foreach(m, fe, &st);
	ok(st.sorted && st.n == live, "foreach visits live keys in order");
	needle_map_free(m);
	free(ref);
}

static void test_map_million(void)
{
	enum { N = 1000000 };
	struct mallinfo2 before = mallinfo2(), after;
	needle_map *m = needle_map_new();
	uint64_t x = 7;
	size_t heap, bad = 0;
	double per;

	/* increasing keys, with 1% arriving late (out of order) */
	for (uint64_t k = 1; k <= N; k++) {
		if (k % 100 == 50)
			continue;
		needle_map_set(m, k, (uint32_t)k, 1024, NULL);
	}
	for (uint64_t k = 50; k <= N; k += 100)
		needle_map_set(m, k, (uint32_t)k, 1024, NULL);
	after = mallinfo2();
	heap = after.uordblks + after.hblkhd - before.uordblks - before.hblkhd;
	per = (double)heap / N;
	is_int(needle_map_live(m), N, "1M live needles");
	for (int i = 0; i < 100000; i++) {
		uint64_t k = lcg(&x) % N + 1;
		struct nm_entry e;
		if (!needle_map_get(m, k, &e) || e.offset != k)
			bad++;
	}
	is_int(bad, 0, "1M lookups");
	printf("# needle map: %.2f bytes/needle (mallinfo2), %.2f by construction\n", per,
	       (double)needle_map_memory(m) / N);
	ok(per <= 24.0, "at most 24 bytes per needle (%.2f)", per);
	ok((double)needle_map_memory(m) / N <= 24.0, "by construction too");
	needle_map_free(m);
}

int main(void)
{
	test_padding();
	test_layout();
	test_split();
	test_idx_entry();
	test_map_small();
	test_map_random();
	test_map_million();
	return done_testing();
}
