/*
 * TUS session records and the Upload-Metadata check (filer/tus_codec.h):
 * round trips, the older "TUS1" form, and rejection of every truncation and
 * of garbage.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "filer/tus_codec.h"
#include "tap.h"
#include "util.h"

static void fill(struct tus_session *s, size_t nchunks)
{
	memset(s, 0, sizeof(*s));
	s->target = xstrdup("/dir/file.bin");
	s->meta = xstrdup("filename YmlnLmJpbg==,private");
	s->length = 5u << 20;
	s->offset = nchunks << 20;
	s->touched_ns = 1764460800123456789LL;
	s->n = nchunks;
	s->chunks = nchunks ? xcalloc(nchunks, sizeof(*s->chunks)) : NULL;
	for (size_t i = 0; i < nchunks; i++) {
		s->chunks[i].fid = xasprintf("3,%zx0badcafe", i + 1);
		s->chunks[i].offset = i << 20;
		s->chunks[i].size = 1u << 20;
		s->chunks[i].mtime_ns = 1000 + (int64_t)i;
	}
}

static bool same(const struct tus_session *a, const struct tus_session *b)
{
	if (strcmp(a->target, b->target) || strcmp(a->meta, b->meta) || a->length != b->length ||
	    a->offset != b->offset || a->touched_ns != b->touched_ns || a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->chunks[i].fid, b->chunks[i].fid) ||
		    a->chunks[i].offset != b->chunks[i].offset ||
		    a->chunks[i].size != b->chunks[i].size ||
		    a->chunks[i].mtime_ns != b->chunks[i].mtime_ns)
			return false;
	return true;
}

static void test_round_trip(size_t nchunks)
{
	struct tus_session s, d;
	buf b = BUF_INIT, b2 = BUF_INIT;
	size_t bad = 0;

	fill(&s, nchunks);
	tus_session_encode(&s, &b);
	ok(!memcmp(b.data, "TUS2", 4), "%zu chunks: TUS2 record", nchunks);
	is_int(tus_session_decode((const uint8_t *)b.data, b.len, &d), WFS_OK, "decodes");
	ok(same(&s, &d), "%zu chunks: every field survives", nchunks);
	tus_session_encode(&d, &b2);
	ok(b2.len == b.len && !memcmp(b2.data, b.data, b.len), "re-encodes to the same bytes");
	tus_session_clear(&d);
	/* every proper prefix, and one byte too many, is refused with nothing left over */
	for (size_t len = 0; len < b.len; len++) {
		if (tus_session_decode((const uint8_t *)b.data, len, &d) != WFS_ECORRUPT ||
		    d.target || d.meta || d.chunks || d.n)
			bad++;
	}
	is_int(bad, 0, "every truncation is WFS_ECORRUPT with an empty session");
	buf_append(&b, "x", 1);
	is_int(tus_session_decode((const uint8_t *)b.data, b.len, &d), WFS_ECORRUPT,
	       "trailing garbage refused");
	tus_session_clear(&s);
	buf_free(&b);
	buf_free(&b2);
}

static void test_tus1(void)
{
	/* the pre-expiry layout: no touched field */
	struct tus_session d;
	buf b = BUF_INIT;
	uint8_t h[24];
	memcpy(h, "TUS1", 4);
	put_be64(h + 4, 100);
	put_be64(h + 12, 40);
	put_be32(h + 20, 4);
	buf_append(&b, h, 24);
	buf_append(&b, "/a/b", 4);
	put_be32(h, 0);
	buf_append(&b, h, 4);
	filer_chunk_list_encode(&b, NULL, 0);
	is_int(tus_session_decode((const uint8_t *)b.data, b.len, &d), WFS_OK, "TUS1 decodes");
	is_str(d.target, "/a/b", "TUS1 target");
	ok(d.length == 100 && d.offset == 40 && d.touched_ns == 0 && d.n == 0 && !*d.meta,
	   "TUS1 fields, touched 0");
	tus_session_clear(&d);
	buf_free(&b);
}

static wfs_err decode_bytes(const void *p, size_t len)
{
	struct tus_session d;
	wfs_err err = tus_session_decode(p, len, &d);
	tus_session_clear(&d);
	return err;
}

static void test_garbage(void)
{
	struct tus_session s;
	buf b = BUF_INIT;
	uint8_t *p;
	is_int(decode_bytes("", 0), WFS_ECORRUPT, "empty");
	is_int(decode_bytes("TUS3xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 40), WFS_ECORRUPT,
	       "unknown version");
	is_int(decode_bytes("not a session at all, really not at all", 39), WFS_ECORRUPT,
	       "garbage");

	fill(&s, 2);
	tus_session_encode(&s, &b);
	p = (uint8_t *)b.data;
	put_be64(p + 12, s.length + 1); /* offset past the length */
	is_int(decode_bytes(p, b.len), WFS_ECORRUPT, "offset > length refused");
	put_be64(p + 12, s.offset);
	put_be32(p + 28, 0); /* empty target */
	is_int(decode_bytes(p, b.len), WFS_ECORRUPT, "empty target refused");
	put_be32(p + 28, 0xffffffffu); /* target longer than the record */
	is_int(decode_bytes(p, b.len), WFS_ECORRUPT, "huge target length refused");
	put_be32(p + 28, (uint32_t)strlen(s.target));
	put_be64(p + 20, (uint64_t)-5); /* negative touched time */
	is_int(decode_bytes(p, b.len), WFS_ECORRUPT, "negative touched refused");
	put_be64(p + 20, (uint64_t)s.touched_ns);
	p[32 + 3] = '\0'; /* a NUL inside the target (found by the fuzzer) */
	is_int(decode_bytes(p, b.len), WFS_ECORRUPT, "NUL in the target refused");
	p[32 + 3] = (uint8_t)s.target[3];
	p[32 + strlen(s.target) + 4 + 2] = '\0'; /* and inside the metadata */
	is_int(decode_bytes(p, b.len), WFS_ECORRUPT, "NUL in the metadata refused");
	p[32 + strlen(s.target) + 4 + 2] = (uint8_t)s.meta[2];
	is_int(decode_bytes(p, b.len), WFS_OK, "restored record decodes");
	tus_session_clear(&s);
	buf_free(&b);
}

static void test_metadata(void)
{
	char *big = xmalloc(TUS_META_MAX + 2);
	ok(tus_metadata_valid(""), "empty metadata");
	ok(tus_metadata_valid("filename YmlnLmJpbg==,private"), "key value, bare key");
	ok(tus_metadata_valid("a b, c ZA==,d"), "spaces after commas");
	ok(!tus_metadata_valid("bad key with spaces!"), "value not base64");
	ok(!tus_metadata_valid("k v@lue"), "@ in value");
	ok(!tus_metadata_valid(",,"), "empty keys");
	ok(!tus_metadata_valid("k\x01 dg=="), "control character in key");
	ok(!tus_metadata_valid("k\xc3\xa9 dg=="), "non-ASCII key");
	memset(big, 'k', TUS_META_MAX);
	big[TUS_META_MAX] = '\0';
	ok(tus_metadata_valid(big), "a key of TUS_META_MAX bytes");
	big[TUS_META_MAX] = 'k';
	big[TUS_META_MAX + 1] = '\0';
	ok(!tus_metadata_valid(big), "one byte over TUS_META_MAX");
	free(big);
}

int main(void)
{
	test_round_trip(0);
	test_round_trip(3);
	test_tus1();
	test_garbage();
	test_metadata();
	return done_testing();
}
