/* Filer entries: paths, xattrs, the versioned encoding and its hostile-input handling. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "filer/entry.h"
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

static struct filer_entry *full_entry(void)
{
	struct filer_entry *e = filer_entry_new("/dir/sub", "file.bin");
	static const uint8_t bin[] = {0, 1, 2, 0xff, 0};
	e->attr.mode = S_IFREG | 0640;
	e->attr.uid = 1000;
	e->attr.gid = 100;
	e->attr.size = 123456789012ull;
	e->attr.mtime_ns = 1700000000123456789ll;
	e->attr.ctime_ns = -5; /* before the epoch */
	e->attr.crtime_ns = 1600000000000000000ll;
	e->attr.nlink = 3;
	e->attr.rdev = 0x0801;
	e->attr.ttl_sec = 86400;
	e->attr.mime = xstrdup("application/octet-stream");
	e->attr.collection = xstrdup("photos");
	e->attr.replication = xstrdup("001");
	e->attr.symlink_target = xstrdup("../target");
	e->attr.hard_link_id = xmalloc(16);
	memcpy(e->attr.hard_link_id, "0123456789abcdef", 16);
	e->attr.hard_link_id_len = 16;
	filer_entry_xattr_set(e, "user.z", "zz", 2);
	filer_entry_xattr_set(e, "Seaweed-X-Amz-Meta-A", bin, sizeof(bin));
	filer_entry_xattr_set(e, "user.empty", NULL, 0);
	filer_entry_set_content(e, "hello", 5);
	filer_entry_add_chunk(e, "3,01637037d6", 0, 1024, 100, "etag-1", false);
	filer_entry_add_chunk(e, "4,0a1b2c3d4e", 512, 4096, 200, NULL, false);
	filer_entry_add_chunk(e, "5,ff00ff00ff", 0, 1ull << 40, 300, "m", true);
	return e;
}

static bool str_eq(const char *a, const char *b) { return (!a && !b) || (a && b && !strcmp(a, b)); }

static bool entries_equal(const struct filer_entry *a, const struct filer_entry *b)
{
	const struct filer_attr *x = &a->attr, *y = &b->attr;
	if (strcmp(a->dir, b->dir) || strcmp(a->name, b->name) || x->mode != y->mode ||
	    x->uid != y->uid || x->gid != y->gid || x->size != y->size ||
	    x->mtime_ns != y->mtime_ns || x->ctime_ns != y->ctime_ns ||
	    x->crtime_ns != y->crtime_ns || x->nlink != y->nlink || x->rdev != y->rdev ||
	    x->ttl_sec != y->ttl_sec || !str_eq(x->mime, y->mime) ||
	    !str_eq(x->collection, y->collection) || !str_eq(x->replication, y->replication) ||
	    !str_eq(x->symlink_target, y->symlink_target) ||
	    x->hard_link_id_len != y->hard_link_id_len ||
	    (x->hard_link_id_len && memcmp(x->hard_link_id, y->hard_link_id, x->hard_link_id_len)))
		return false;
	if (a->n_xattrs != b->n_xattrs || a->has_content != b->has_content ||
	    a->content_len != b->content_len || a->n_chunks != b->n_chunks)
		return false;
	for (size_t i = 0; i < a->n_xattrs; i++)
		if (strcmp(a->xattrs[i].name, b->xattrs[i].name) ||
		    a->xattrs[i].value_len != b->xattrs[i].value_len ||
		    (a->xattrs[i].value_len &&
		     memcmp(a->xattrs[i].value, b->xattrs[i].value, a->xattrs[i].value_len)))
			return false;
	if (a->content_len && memcmp(a->content, b->content, a->content_len))
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

int main(void)
{
	test_golden();
	test_path_split();
	test_roundtrip();
	test_hostile();
	test_chunk_list_codec();
	return done_testing();
}
