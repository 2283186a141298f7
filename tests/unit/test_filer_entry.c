/* Filer entries: paths, xattrs, the versioned encoding and its hostile-input handling. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <openssl/evp.h>
#include "base64.h"
#include "client/entry.h"
#include "entry_fixture.h"
#include "tap.h"
#include "util.h"

static void test_path_split(void)
{
	static const struct {
		const char *path, *dir, *name;
	} good[] = {
		{"/", "/", ""},          {"/a", "/", "a"},
		{"/a/b", "/a", "b"},     {"/a/b/c.txt", "/a/b", "c.txt"},
		{"/ünï/ß", "/ünï", "ß"}, {"/.hidden/..x", "/.hidden", "..x"},
	};
	static const char *const bad[] = {"",      "a",    "a/b",   "//",   "/a/",
					  "/a//b", "/./a", "/a/..", "/a/.", "/.."};
	char *d, *n;
	for (size_t i = 0; i < ARRAY_LEN(good); i++) {
		wfs_err err = filer_path_split(good[i].path, &d, &n);
		is_int(err, WFS_OK, good[i].path);
		if (!err) {
			ok(!strcmp(d, good[i].dir) && !strcmp(n, good[i].name),
			   "split %s -> %s + %s", good[i].path, d, n);
			free(d);
			free(n);
		}
	}
	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		is_int(filer_path_split(bad[i], &d, &n), WFS_EINVAL, bad[i]);

	char longname[300];
	memset(longname, 'x', sizeof(longname));
	longname[0] = '/';
	longname[257] = '\0'; /* a 256-byte component */
	is_int(filer_path_split(longname, &d, &n), WFS_EINVAL, "component over 255 bytes");
	longname[256] = '\0'; /* exactly 255 */
	is_int(filer_path_split(longname, &d, &n), WFS_OK, "component of 255 bytes");
	free(d);
	free(n);
}

static bool str_eq(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static bool entries_equal(const struct filer_entry *a, const struct filer_entry *b)
{
	const struct filer_attr *x = &a->attr, *y = &b->attr;
	if (strcmp(a->dir, b->dir) || strcmp(a->name, b->name) || x->mode != y->mode ||
	    x->uid != y->uid || x->gid != y->gid || x->size != y->size ||
	    x->mtime_ns != y->mtime_ns || x->ctime_ns != y->ctime_ns ||
	    x->crtime_ns != y->crtime_ns || x->atime_ns != y->atime_ns || x->nlink != y->nlink ||
	    x->inode != y->inode ||
	    x->rdev != y->rdev || x->ttl_sec != y->ttl_sec || !str_eq(x->mime, y->mime) ||
	    !str_eq(x->collection, y->collection) || !str_eq(x->replication, y->replication) ||
	    !str_eq(x->symlink_target, y->symlink_target) ||
	    x->hard_link_id_len != y->hard_link_id_len ||
	    (x->hard_link_id_len && memcmp(x->hard_link_id, y->hard_link_id, x->hard_link_id_len)))
		return false;
	if (a->n_xattrs != b->n_xattrs || a->has_content != b->has_content ||
	    a->content_omitted != b->content_omitted || a->content_len != b->content_len ||
	    a->n_chunks != b->n_chunks)
		return false;
	for (size_t i = 0; i < a->n_xattrs; i++)
		if (strcmp(a->xattrs[i].name, b->xattrs[i].name) ||
		    a->xattrs[i].value_len != b->xattrs[i].value_len ||
		    (a->xattrs[i].value_len &&
		     memcmp(a->xattrs[i].value, b->xattrs[i].value, a->xattrs[i].value_len)))
			return false;
	if (a->has_content && a->content_len && memcmp(a->content, b->content, a->content_len))
		return false;
	for (size_t i = 0; i < a->n_chunks; i++) {
		const struct filer_chunk *p = &a->chunks[i], *q = &b->chunks[i];
		if (strcmp(p->fid, q->fid) || p->offset != q->offset || p->size != q->size ||
		    p->mtime_ns != q->mtime_ns || !str_eq(p->etag, q->etag) ||
		    p->is_manifest != q->is_manifest)
			return false;
	}
	return true;
}

static void test_roundtrip(void)
{
	struct filer_entry *e = full_entry(), *d = NULL, *c;
	buf b = BUF_INIT, b2 = BUF_INIT;

	is_int(e->n_xattrs, 3, "three xattrs");
	is_str(e->xattrs[0].name, "Seaweed-X-Amz-Meta-A", "xattrs kept sorted");
	is_int(filer_entry_encode(e, &b), WFS_OK, "encode");
	is_int(filer_entry_encoded_version((uint8_t *)b.data, b.len), FILER_ENTRY_VERSION,
	       "version byte first");
	is_int(filer_entry_decode((uint8_t *)b.data, b.len, "/dir/sub", "file.bin", &d), WFS_OK,
	       "decode");
	ok(d && entries_equal(e, d), "decoded entry equals the original");
	if (d) {
		is_int(filer_entry_encode(d, &b2), WFS_OK, "re-encode");
		ok(b.len == b2.len && !memcmp(b.data, b2.data, b.len), "encoding is canonical");
		const struct filer_xattr *x = filer_entry_xattr_get(d, "user.empty");
		ok(x && x->value_len == 0, "empty xattr value survives");
	}
	c = filer_entry_dup(e);
	ok(entries_equal(e, c), "dup is equal");
	char *fp = filer_entry_full_path(c);
	is_str(fp, "/dir/sub/file.bin", "full path");
	free(fp);
	is_int(filer_entry_xattr_remove(c, "user.z"), WFS_OK, "xattr remove");
	is_int(filer_entry_xattr_remove(c, "user.z"), WFS_ENOENT, "xattr remove twice");
	ok(!filer_entry_xattr_get(c, "user.z"), "removed xattr gone");
	filer_entry_xattr_set(c, "user.empty", "v", 1);
	ok(filer_entry_xattr_get(c, "user.empty")->value_len == 1, "xattr replaced");
	is_int(c->n_xattrs, 2, "replace does not add");
	filer_entry_free(c);
	filer_entry_free(d);
	filer_entry_free(e);
	buf_free(&b);
	buf_free(&b2);

	/* the empty entry: 80 bytes, all fixed fields and zero counts (docs/filer-entry-format.md)
	 */
	e = filer_entry_new("/", "x");
	filer_entry_encode(e, &b);
	is_int(b.len, 80, "empty entry encodes to 80 bytes");
	ok(b.data[0] == 1 && b.data[1] == 0, "version 1, no flags");
	d = NULL;
	is_int(filer_entry_decode((uint8_t *)b.data, b.len, "/", "x", &d), WFS_OK, "decode empty");
	ok(d && !d->has_content && !d->attr.mime && d->n_chunks == 0, "empty decodes empty");
	filer_entry_free(d);
	/* inline content of zero bytes is distinct from no content */
	filer_entry_set_content(e, "", 0);
	buf_reset(&b);
	filer_entry_encode(e, &b);
	is_int(b.len, 84, "empty inline content adds its length field");
	is_int(filer_entry_decode((uint8_t *)b.data, b.len, "/", "x", &d), WFS_OK, "decode");
	ok(d && d->has_content && d->content_len == 0, "empty inline content survives");
	filer_entry_free(d);
	filer_entry_free(e);
	buf_free(&b);
}

/* Events keep an inline file's content length without its bytes. */
static void test_content_omitted(void)
{
	struct filer_entry *e = filer_entry_new("/d", "f"), *d = NULL, *c;
	buf b = BUF_INIT;

	e->attr.mode = S_IFREG | 0644;
	e->attr.size = 4096;
	e->content_omitted = true;
	e->content_len = 4096;
	is_int(filer_entry_encode(e, &b), WFS_OK, "omitted content encodes");
	is_int(b.len, 84, "as its length only");
	ok(b.data[1] == 0x04, "flag 0x04");
	is_int(filer_entry_decode((uint8_t *)b.data, b.len, "/d", "f", &d), WFS_OK, "decodes");
	ok(d && entries_equal(e, d) && !d->content, "round trip");
	c = filer_entry_dup(e);
	ok(entries_equal(e, c), "dup keeps it");
	filer_entry_free(c);
	filer_entry_free(d);
	d = NULL;
	b.data[1] = 0x05; /* content and omitted content at once */
	is_int(filer_entry_decode((uint8_t *)b.data, b.len, "/d", "f", &d), WFS_ECORRUPT,
	       "both content flags: refused");
	filer_entry_set_content(e, "x", 1);
	ok(!e->content_omitted, "setting content clears the flag");
	e->content_omitted = true;
	buf_reset(&b);
	is_int(filer_entry_encode(e, &b), WFS_EINVAL, "content and omitted at once: not encoded");
	filer_entry_free(e);
	buf_free(&b);
}

static void test_hostile(void)
{
	struct filer_entry *e = full_entry(), *d;
	buf b = BUF_INIT, r = BUF_INIT;
	size_t bad_trunc = 0, mut_ok = 0, mut_bad_roundtrip = 0;
	uint8_t *m;

	filer_entry_encode(e, &b);
	for (size_t n = 0; n < b.len; n++) {
		d = NULL;
		if (filer_entry_decode((uint8_t *)b.data, n, "/", "x", &d) != WFS_ECORRUPT || d)
			bad_trunc++;
		filer_entry_free(d);
	}
	is_int(bad_trunc, 0, "every truncation is rejected");

	m = xmalloc(b.len + 1);
	memcpy(m, b.data, b.len);
	m[b.len] = 0;
	is_int(filer_entry_decode(m, b.len + 1, "/", "x", &d), WFS_ECORRUPT, "trailing byte");
	m[0] = 2;
	is_int(filer_entry_decode(m, b.len, "/", "x", &d), WFS_ECORRUPT, "newer version rejected");
	m[0] = 0;
	is_int(filer_entry_decode(m, b.len, "/", "x", &d), WFS_ECORRUPT, "version 0 rejected");
	memcpy(m, b.data, b.len);
	m[1] = 0x80;
	is_int(filer_entry_decode(m, b.len, "/", "x", &d), WFS_ECORRUPT, "unknown flag rejected");

	/* every single-byte change: rejected, or decodes to something that re-encodes identically
	 */
	for (size_t i = 0; i < b.len; i++) {
		for (int v = 0; v < 256; v += 51) {
			memcpy(m, b.data, b.len);
			m[i] ^= (uint8_t)(v | 1);
			d = NULL;
			if (filer_entry_decode(m, b.len, "/", "x", &d) == WFS_OK) {
				mut_ok++;
				buf_reset(&r);
				if (filer_entry_encode(d, &r) || r.len != b.len ||
				    memcmp(r.data, m, b.len))
					mut_bad_roundtrip++;
			}
			filer_entry_free(d);
		}
	}
	ok(mut_ok > 0, "some mutations decode (%zu)", mut_ok);
	is_int(mut_bad_roundtrip, 0, "every decodable mutation re-encodes to the same bytes");
	free(m);

	/* a tiny input claiming a huge chunk count is rejected before allocating */
	{
		struct filer_entry *z = filer_entry_new("/", "z");
		buf zb = BUF_INIT;
		filer_entry_encode(z, &zb);
		put_be32((uint8_t *)zb.data + zb.len - 4, 0x00100000);
		is_int(filer_entry_decode((uint8_t *)zb.data, zb.len, "/", "z", &d), WFS_ECORRUPT,
		       "chunk count beyond the bytes left");
		put_be32((uint8_t *)zb.data + zb.len - 4, 0xffffffff);
		is_int(filer_entry_decode((uint8_t *)zb.data, zb.len, "/", "z", &d), WFS_ECORRUPT,
		       "chunk count beyond the bound");
		/* xattr count field sits just before the chunk count */
		put_be32((uint8_t *)zb.data + zb.len - 4, 0);
		put_be32((uint8_t *)zb.data + zb.len - 8, 0x7fffffff);
		is_int(filer_entry_decode((uint8_t *)zb.data, zb.len, "/", "z", &d), WFS_ECORRUPT,
		       "xattr count beyond the bound");
		buf_free(&zb);
		filer_entry_free(z);
	}

	/* the encoder refuses what the decoder would reject */
	d = filer_entry_new("/", "y");
	d->attr.mime = xmalloc(300);
	memset(d->attr.mime, 'm', 299);
	d->attr.mime[299] = '\0';
	buf_reset(&r);
	is_int(filer_entry_encode(d, &r), WFS_EINVAL, "over-long mime refused");
	is_int(r.len, 0, "nothing appended on refusal");
	free(d->attr.mime);
	d->attr.mime = NULL;
	filer_entry_add_chunk(d, "1,1", UINT64_MAX - 1, 10, 0, NULL, false);
	is_int(filer_entry_encode(d, &r), WFS_EINVAL, "chunk end overflow refused");
	filer_entry_free(d);
	filer_entry_free(e);
	buf_free(&b);
	buf_free(&r);
}

static void test_chunk_list_codec(void)
{
	struct filer_entry *e = full_entry();
	struct filer_chunk *c = NULL;
	size_t n = 0, used = 0;
	buf b = BUF_INIT;
	filer_chunk_list_encode(&b, e->chunks, e->n_chunks);
	is_int(filer_chunk_list_decode((uint8_t *)b.data, b.len, &used, &c, &n), WFS_OK,
	       "chunk list decode");
	is_int(used, b.len, "consumed all");
	is_int(n, 3, "three chunks");
	ok(n == 3 && c[2].is_manifest && c[2].size == 1ull << 40 && !c[1].etag, "fields kept");
	filer_chunks_free(c, n);
	filer_entry_free(e);
	buf_free(&b);
}

/* Cipher keys: chunk flag bit 1 and 32 key bytes after the flag; entries without keys are
   unchanged (old blobs decode as before); the encoding stays canonical. */
static void test_cipher_keys(void)
{
	struct filer_entry *e = full_entry(), *d = NULL, *c;
	buf plain = BUF_INIT, keyed = BUF_INIT, again = BUF_INIT;

	is_int(filer_entry_encode(e, &plain), WFS_OK, "encode without keys");
	c = filer_entry_dup(e);
	c->chunks[0].has_cipher_key = true;
	memset(c->chunks[0].cipher_key, 0x5a, FILER_CHUNK_KEY_LEN);
	c->chunks[2].has_cipher_key = true;
	memset(c->chunks[2].cipher_key, 0xc3, FILER_CHUNK_KEY_LEN);
	is_int(filer_entry_encode(c, &keyed), WFS_OK, "encode with keys");
	is_int(keyed.len, plain.len + 2 * FILER_CHUNK_KEY_LEN, "32 bytes per key, nothing else");
	is_int(filer_entry_decode((uint8_t *)keyed.data, keyed.len, "/d", "f", &d), WFS_OK,
	       "decode with keys");
	ok(d && d->chunks[0].has_cipher_key && !d->chunks[1].has_cipher_key &&
		   d->chunks[2].has_cipher_key && d->chunks[2].is_manifest &&
		   !memcmp(d->chunks[2].cipher_key, c->chunks[2].cipher_key, FILER_CHUNK_KEY_LEN),
	   "keys back on their chunks");
	if (d)
		filer_entry_encode(d, &again);
	ok(again.len == keyed.len && !memcmp(again.data, keyed.data, keyed.len), "canonical");
	filer_entry_free(d);
	d = NULL;
	is_int(filer_entry_decode((uint8_t *)plain.data, plain.len, "/d", "f", &d), WFS_OK,
	       "an entry without keys decodes as before");
	ok(d && !d->chunks[0].has_cipher_key && !d->chunks[2].has_cipher_key, "no keys");
	filer_entry_free(d);
	d = NULL;
	/* a key cut short is corrupt, never a shorter key */
	{
		bool all = true;
		for (size_t cut = 1; cut <= 40 && all; cut++) {
			all = filer_entry_decode((uint8_t *)keyed.data, keyed.len - cut, "/d", "f",
						 &d) == WFS_ECORRUPT;
			filer_entry_free(d);
			d = NULL;
		}
		ok(all, "every truncation is WFS_ECORRUPT");
	}
	{
		/* dup and push_chunk keep the key */
		struct filer_entry *p = filer_entry_new("/d", "g");
		struct filer_entry *q = filer_entry_dup(c);
		filer_entry_push_chunk(p, &c->chunks[0]);
		ok(p->chunks[0].has_cipher_key && q->chunks[0].has_cipher_key &&
			   !memcmp(p->chunks[0].cipher_key, c->chunks[0].cipher_key,
				   FILER_CHUNK_KEY_LEN),
		   "dup and push_chunk copy the key");
		filer_entry_free(p);
		filer_entry_free(q);
	}
	filer_entry_free(c);
	filer_entry_free(e);
	buf_free(&plain);
	buf_free(&keyed);
	buf_free(&again);
}

/* hex of an encoding */
static char *hex_of(const buf *b)
{
	buf hex = BUF_INIT;
	for (size_t i = 0; i < b->len; i++)
		buf_printf(&hex, "%02x", (uint8_t)b->data[i]);
	return hex.data ? hex.data : xstrdup("");
}

/* The documented example (a 0644 file of uid/gid 1000, one link) with atime_ns and
   inode set, encoded into *r; returns the encoding in hex (caller frees). */
static char *example_hex(int64_t atime_ns, uint64_t inode, buf *r)
{
	struct filer_entry *z = filer_entry_new("/", "z");
	char *h;
	z->attr.mode = S_IFREG | 0644;
	z->attr.uid = z->attr.gid = 1000;
	z->attr.nlink = 1;
	z->attr.atime_ns = atime_ns;
	z->attr.inode = inode;
	buf_reset(r);
	filer_entry_encode(z, r);
	h = hex_of(r);
	filer_entry_free(z);
	return h;
}

/* The access time: flags bit 1 and an i64 after the chunk list, only when set. */
static void test_atime(void)
{
	struct filer_entry *e = full_entry(), *d = NULL, *c;
	buf without = BUF_INIT, with = BUF_INIT, r = BUF_INIT;
	size_t bad_trunc = 0, mut_ok = 0, mut_bad = 0;
	uint8_t *m;

	is_int(filer_entry_encode(e, &without), WFS_OK, "encode without atime");
	ok((without.data[1] & 0x02) == 0, "no atime: flag bit 1 clear");
	e->attr.atime_ns = 1750000000987654321ll;
	is_int(filer_entry_encode(e, &with), WFS_OK, "encode with atime");
	ok(with.data[1] == 0x03, "atime and content: flags 0x03 (got 0x%02x)",
	   (uint8_t)with.data[1]);
	is_int(with.len, without.len + 8, "atime adds 8 bytes");
	ok(!memcmp(with.data + 2, without.data + 2, without.len - 2),
	   "everything else is unchanged, atime is last");
	ok(get_be64((uint8_t *)with.data + with.len - 8) == 1750000000987654321ull,
	   "the last 8 bytes are the atime, big-endian");
	is_int(filer_entry_decode((uint8_t *)with.data, with.len, "/dir/sub", "file.bin", &d),
	       WFS_OK, "decode with atime");
	ok(d && d->attr.atime_ns == 1750000000987654321ll, "atime decoded");
	ok(d && entries_equal(e, d), "the whole entry round-trips");
	if (d) {
		is_int(filer_entry_encode(d, &r), WFS_OK, "re-encode");
		ok(r.len == with.len && !memcmp(r.data, with.data, r.len), "canonical with atime");
	}
	filer_entry_free(d);
	c = filer_entry_dup(e);
	ok(c->attr.atime_ns == e->attr.atime_ns, "dup keeps atime");
	filer_entry_free(c);

	/* before the epoch is a stored time like any other */
	e->attr.atime_ns = -1;
	buf_reset(&r);
	filer_entry_encode(e, &r);
	is_int(filer_entry_decode((uint8_t *)r.data, r.len, "/", "x", &d), WFS_OK,
	       "decode negative atime");
	ok(d && d->attr.atime_ns == -1, "negative atime round-trips");
	filer_entry_free(d);

	/* an entry written before atime existed decodes with atime 0 */
	e->attr.atime_ns = 0;
	is_int(filer_entry_decode((uint8_t *)without.data, without.len, e->dir, e->name, &d),
	       WFS_OK, "old-format blob decodes");
	ok(d && d->attr.atime_ns == 0, "old blob: atime 0");
	ok(d && entries_equal(e, d), "old blob: every other field as before");
	filer_entry_free(d);

	/* canonical rejections */
	m = xmalloc(with.len + 8);
	memcpy(m, without.data, without.len);
	m[1] |= 0x02;
	is_int(filer_entry_decode(m, without.len, "/", "x", &d), WFS_ECORRUPT,
	       "atime bit without the atime");
	memset(m + without.len, 0, 8);
	is_int(filer_entry_decode(m, without.len + 8, "/", "x", &d), WFS_ECORRUPT,
	       "atime bit with atime 0 (not canonical)");
	memcpy(m, with.data, with.len);
	m[1] &= (uint8_t)~0x02;
	is_int(filer_entry_decode(m, with.len, "/", "x", &d), WFS_ECORRUPT,
	       "an atime without its bit is trailing bytes");
	memcpy(m, with.data, with.len);
	m[with.len] = 0;
	is_int(filer_entry_decode(m, with.len + 1, "/", "x", &d), WFS_ECORRUPT,
	       "a byte after the atime");
	m[1] |= 0x04;
	is_int(filer_entry_decode(m, with.len, "/", "x", &d), WFS_ECORRUPT,
	       "bit 2 is still unknown");
	for (size_t n = 0; n < with.len; n++) {
		d = NULL;
		if (filer_entry_decode((uint8_t *)with.data, n, "/", "x", &d) != WFS_ECORRUPT || d)
			bad_trunc++;
		filer_entry_free(d);
	}
	is_int(bad_trunc, 0, "every truncation of an entry with atime is rejected");
	for (size_t i = 0; i < with.len; i++) {
		for (int v = 0; v < 256; v += 51) {
			memcpy(m, with.data, with.len);
			m[i] ^= (uint8_t)(v | 1);
			d = NULL;
			if (filer_entry_decode(m, with.len, "/", "x", &d) == WFS_OK) {
				mut_ok++;
				buf_reset(&r);
				if (filer_entry_encode(d, &r) || r.len != with.len ||
				    memcmp(r.data, m, with.len))
					mut_bad++;
			}
			filer_entry_free(d);
		}
	}
	ok(mut_ok > 0, "some mutations decode (%zu)", mut_ok);
	is_int(mut_bad, 0, "every decodable mutation re-encodes to the same bytes");
	free(m);

	/* the documented example with atime 1 ns: flags 0x02, then 8 bytes after the chunks */
	{
		char *h = example_hex(1, 0, &r);
		is_int(r.len, 88, "empty entry with atime is 88 bytes");
		ok(!strncmp(h, "0102000081a4", 12), "version 1, flags 0x02");
		is_str(h + 2 * 80, "0000000000000001", "atime last");
		free(h);
	}
	filer_entry_free(e);
	buf_free(&without);
	buf_free(&with);
	buf_free(&r);
}

/* The example in docs/filer-entry-format.md, byte for byte. */
static void test_golden(void)
{
	static const char want[] = "0100"
				   "000081a4"
				   "000003e8"
				   "000003e8"
				   "0000000000000000"
				   "000000000000000000000000000000000000000000000000"
				   "00000001"
				   "0000000000000000"
				   "00000000"
				   "0000000000000000"
				   "0000"
				   "00000000"
				   "00000000";
	struct filer_entry *e = filer_entry_new("/", "empty");
	buf b = BUF_INIT, hex = BUF_INIT;
	e->attr.mode = S_IFREG | 0644;
	e->attr.uid = e->attr.gid = 1000;
	e->attr.nlink = 1;
	filer_entry_encode(e, &b);
	for (size_t i = 0; i < b.len; i++)
		buf_printf(&hex, "%02x", (uint8_t)b.data[i]);
	is_str(hex.data, want, "documented example encodes byte for byte");
	buf_free(&b);
	buf_free(&hex);
	filer_entry_free(e);
}

/* The JSON API's base64: every length round-trips, bad digits and padding are refused. */
static void test_base64(void)
{
	unsigned char raw[300], enc[401];
	uint8_t *out;
	size_t len;
	bool all = true;

	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (unsigned char)(i * 37 + 11);
	for (size_t n = 0; n <= sizeof(raw); n++) {
		EVP_EncodeBlock(enc, raw, (int)n);
		if (!base64_decode((const char *)enc, sizeof(raw), &out, &len) || len != n ||
		    memcmp(out, raw, n))
			all = false;
		free(out);
	}
	ok(all, "base64: lengths 0..300 round-trip");
	ok(!base64_decode("QUJD*EVG", 16, &out, &len), "base64: a bad digit is refused");
	ok(!base64_decode("QQ==QUJD", 16, &out, &len), "base64: data after padding is refused");
	ok(!base64_decode("QUJ", 16, &out, &len), "base64: a short group is refused");
	ok(!base64_decode("QUJDREVG", 5, &out, &len), "base64: over max is refused");
	ok(base64_decode("QQ==", 16, &out, &len) && len == 1 && out[0] == 'A',
	   "base64: padding");
	free(out);
}

/* The inode number: flags bit 3 and a u64 at the very end (after any atime), only when set. */
static void test_inode(void)
{
	struct filer_entry *e = full_entry(), *d = NULL, *c;
	buf without = BUF_INIT, with = BUF_INIT, both = BUF_INIT, r = BUF_INIT;
	uint8_t *m;

	is_int(filer_entry_encode(e, &without), WFS_OK, "encode without inode");
	ok((without.data[1] & 0x08) == 0, "no inode: flag bit 3 clear");
	e->attr.inode = 0x0102030405060708ull;
	is_int(filer_entry_encode(e, &with), WFS_OK, "encode with inode");
	ok(with.data[1] == 0x09, "inode and content: flags 0x09 (got 0x%02x)",
	   (uint8_t)with.data[1]);
	is_int(with.len, without.len + 8, "inode adds 8 bytes");
	ok(!memcmp(with.data + 2, without.data + 2, without.len - 2),
	   "everything else is unchanged, inode is last");
	ok(get_be64((uint8_t *)with.data + with.len - 8) == 0x0102030405060708ull,
	   "the last 8 bytes are the inode, big-endian");
	is_int(filer_entry_decode((uint8_t *)with.data, with.len, "/dir/sub", "file.bin", &d),
	       WFS_OK, "decode with inode");
	ok(d && d->attr.inode == 0x0102030405060708ull, "inode decoded");
	ok(d && entries_equal(e, d), "the whole entry round-trips");
	if (d) {
		is_int(filer_entry_encode(d, &r), WFS_OK, "re-encode");
		ok(r.len == with.len && !memcmp(r.data, with.data, r.len), "canonical with inode");
	}
	filer_entry_free(d);
	c = filer_entry_dup(e);
	ok(c->attr.inode == e->attr.inode, "dup keeps the inode");
	filer_entry_free(c);

	/* with an atime too: the atime first, then the inode */
	e->attr.atime_ns = 77;
	is_int(filer_entry_encode(e, &both), WFS_OK, "encode with atime and inode");
	ok(both.data[1] == 0x0b, "flags 0x0b (got 0x%02x)", (uint8_t)both.data[1]);
	is_int(both.len, without.len + 16, "16 bytes more");
	ok(get_be64((uint8_t *)both.data + both.len - 16) == 77 &&
		   get_be64((uint8_t *)both.data + both.len - 8) == 0x0102030405060708ull,
	   "atime, then inode");
	is_int(filer_entry_decode((uint8_t *)both.data, both.len, "/dir/sub", "file.bin", &d),
	       WFS_OK, "decode with both");
	ok(d && entries_equal(e, d), "both round-trip");
	filer_entry_free(d);
	e->attr.atime_ns = 0;

	/* an entry written before inodes existed decodes with inode 0 */
	e->attr.inode = 0;
	is_int(filer_entry_decode((uint8_t *)without.data, without.len, e->dir, e->name, &d),
	       WFS_OK, "old-format blob decodes");
	ok(d && d->attr.inode == 0, "old blob: inode 0");
	filer_entry_free(d);

	/* canonical rejections */
	m = xmalloc(both.len + 8);
	memcpy(m, without.data, without.len);
	m[1] |= 0x08;
	is_int(filer_entry_decode(m, without.len, "/", "x", &d), WFS_ECORRUPT,
	       "inode bit without the inode");
	memset(m + without.len, 0, 8);
	is_int(filer_entry_decode(m, without.len + 8, "/", "x", &d), WFS_ECORRUPT,
	       "inode bit with inode 0 (not canonical)");
	memcpy(m, with.data, with.len);
	m[1] &= (uint8_t)~0x08;
	is_int(filer_entry_decode(m, with.len, "/", "x", &d), WFS_ECORRUPT,
	       "an inode without its bit is trailing bytes");
	memcpy(m, with.data, with.len);
	m[with.len] = 0;
	is_int(filer_entry_decode(m, with.len + 1, "/", "x", &d), WFS_ECORRUPT,
	       "a byte after the inode");
	memcpy(m, with.data, with.len);
	m[1] |= 0x10;
	is_int(filer_entry_decode(m, with.len, "/", "x", &d), WFS_ECORRUPT,
	       "bit 4 is unknown");
	{
		size_t bad = 0;
		for (size_t n = without.len; n < with.len; n++)
			bad += filer_entry_decode((uint8_t *)with.data, n, "/", "x", &d) == WFS_ECORRUPT;
		is_int(bad, with.len - without.len, "every truncation of the inode is refused");
	}
	free(m);

	/* the documented example stored as inode 42: flags 0x08, then 8 bytes; with atime 1 */
	{
		char *h = example_hex(0, 42, &r);
		is_int(r.len, 88, "empty entry with an inode is 88 bytes");
		ok(!strncmp(h, "0108000081a4", 12), "version 1, flags 0x08");
		is_str(h + 2 * 80, "000000000000002a", "inode last");
		free(h);
		h = example_hex(1, 42, &r);
		is_int(r.len, 96, "with an atime too: 96 bytes");
		ok(!strncmp(h, "010a", 4), "flags 0x0a");
		is_str(h + 2 * 80, "0000000000000001000000000000002a", "atime, then inode");
		free(h);
	}
	filer_entry_free(e);
	buf_free(&without);
	buf_free(&with);
	buf_free(&both);
	buf_free(&r);
}

int main(void)
{
	test_cipher_keys();
	test_base64();
	test_golden();
	test_path_split();
	test_roundtrip();
	test_content_omitted();
	test_hostile();
	test_chunk_list_codec();
	test_atime();
	test_inode();
	return done_testing();
}
