/*
 * The entry JSON codec (client/entry_json.h) in both directions and both
 * forms: entry -> JSON -> entry gives the same entry (compared by its
 * canonical binary encoding, which covers every field), for the answer form
 * the filer writes and its clients read, and for create's request form the
 * clients write (filer_meta_create_body) and the filer parses
 * (api_req_parse); chunk lists; the two spellings of a chunk's eTag; and the
 * strictness the filer's parser relies on.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base64.h"
#include "client/entry_json.h"
#include "client/filer_meta.h"
#include "client/filer_wire.h"
#include "entry_fixture.h"
#include "filer/filer_api_parse.h"
#include "tap.h"
#include "util.h"

/*
 * full_entry with what JSON makes hard: a path and a symlink target that are
 * not valid UTF-8, a quote in an etag, a NUL in the content, extreme numbers.
 */
static struct filer_entry *json_entry(void)
{
	struct filer_entry *e = full_entry();
	filer_entry_set_path(e, "/dir/s\xffub", "fi\xfe\xc0le.bin");
	free(e->attr.symlink_target);
	e->attr.symlink_target = xstrdup("../t\xff\"arget");
	e->attr.atime_ns = 1700000000999999999ll;
	e->attr.rdev = UINT64_MAX;
	e->attr.ttl_sec = UINT32_MAX;
	filer_entry_set_content(e, "he\0llo", 6);
	filer_entry_add_chunk(e, "6,0102030405", 0, (uint64_t)INT64_MAX, -200, "etag-\"2", false);
	return e;
}

/* Whether a and b are the same entry: path, and the canonical encoding of the rest. */
static bool same(const struct filer_entry *a, const struct filer_entry *b)
{
	buf x = BUF_INIT, y = BUF_INIT;
	bool eq = a && b && !strcmp(a->dir, b->dir) && !strcmp(a->name, b->name) &&
		  !filer_entry_encode(a, &x) && !filer_entry_encode(b, &y) && x.len == y.len &&
		  !memcmp(x.data, y.data, x.len);
	buf_free(&x);
	buf_free(&y);
	return eq;
}

/* Parses text and reads it as an entry of form flags; NULL (msg says why) when refused. */
static struct filer_entry *read_text(const char *text, unsigned flags, unsigned *has, char *msg,
				     size_t msglen)
{
	yajl_val v = json_parse(text, strlen(text), msg, msglen);
	struct filer_entry *e = NULL;
	if (v)
		entry_json_read(v, flags, &e, has, msg, msglen);
	yajl_tree_free(v);
	return e;
}

/* e written in form flags and read back. */
static struct filer_entry *round_trip(const struct filer_entry *e, unsigned flags)
{
	char msg[256] = "";
	buf b = BUF_INIT;
	struct filer_entry *d;

	entry_json(e, flags, &b);
	d = read_text(b.data, flags & ENTRY_JSON_REQUEST, NULL, msg, sizeof(msg));
	if (!d)
		printf("# %s\n# %s\n", msg, b.data);
	buf_free(&b);
	return d;
}

static void test_answer_round_trip(void)
{
	struct filer_entry *e = json_entry(), *d;
	buf b = BUF_INIT;

	e->attr.inode = UINT64_MAX;
	d = round_trip(e, ENTRY_JSON_CONTENT);
	ok(same(e, d), "every field, bad UTF-8 names, binary xattrs, content, manifests");
	filer_entry_free(d);

	entry_json(e, ENTRY_JSON_CONTENT, &b);
	ok(strstr(b.data, "\"fullPathB64\":\"L2Rpci9z/3ViL2Zp/sBsZS5iaW4=\"") &&
		   strstr(b.data, "\"nameB64\":") && strstr(b.data, "\"symlinkTargetB64\":"),
	   "bad UTF-8 also travels as base64");
	ok(strstr(b.data, "\"eTag\":\"etag-\\\"2\"") && !strstr(b.data, "\"etag\""),
	   "chunks say eTag");
	buf_free(&b);

	/* without the content flag: the length stays, the bytes are left out */
	d = round_trip(e, 0);
	ok(d && !d->has_content && d->content_omitted && d->content_len == 6 && !d->content,
	   "content left out: contentLength only");
	filer_entry_clear_content(e);
	e->content_omitted = true;
	e->content_len = 6;
	ok(same(e, d), "an entry whose content was left out round-trips");
	filer_entry_free(d);

	/* an empty inline file is not a file without content */
	filer_entry_set_content(e, NULL, 0);
	d = round_trip(e, ENTRY_JSON_CONTENT);
	ok(d && d->has_content && !d->content_len && same(e, d), "empty inline content");
	filer_entry_free(d);
	filer_entry_free(e);

	/* the root; an atime never stored reads as the mtime */
	e = filer_entry_new("/", "");
	e->attr.mode = S_IFDIR | 0755;
	e->attr.mtime_ns = 42;
	d = round_trip(e, 0);
	ok(d && !strcmp(d->dir, "/") && !*d->name && d->attr.atime_ns == 42, "the root");
	e->attr.atime_ns = 42;
	ok(same(e, d), "the root round-trips");
	filer_entry_free(d);
	filer_entry_free(e);
}

/* The answer form, pinned: it is a public interface (docs/filer-events.md). */
static void test_answer_golden(void)
{
	struct filer_entry *e = filer_entry_new("/docs", "a.txt");
	buf b = BUF_INIT;

	e->attr.mode = S_IFREG | 0644;
	e->attr.uid = e->attr.gid = 1000;
	e->attr.size = 5;
	e->attr.mtime_ns = e->attr.ctime_ns = e->attr.crtime_ns = 1764460000120000000ll;
	e->attr.nlink = 1;
	e->attr.inode = 42;
	e->attr.mime = xstrdup("text/plain");
	filer_entry_xattr_set(e, "user.tag", "value", 5);
	filer_entry_add_chunk(e, "3,01637037d6", 0, 5, 1764460000120000000ll,
			      "5d41402abc4b2a76b9719d911017c592", false);
	entry_json(e, 0, &b);
	is_str(b.data,
	       "{\"fullPath\":\"/docs/a.txt\",\"name\":\"a.txt\",\"isDirectory\":false,"
	       "\"mode\":33188,\"uid\":1000,\"gid\":1000,\"size\":5,\"mtime\":1764460000,"
	       "\"mtimeNs\":1764460000120000000,\"ctimeNs\":1764460000120000000,\"crtimeNs\":"
	       "1764460000120000000,\"atimeNs\":1764460000120000000,\"nlink\":1,\"inode\":42,"
	       "\"rdev\":0,\"ttlSec\":0,\"mime\":\"text/plain\",\"xattrs\":{\"user.tag\":\"dmFsdWU=\"},"
	       "\"chunks\":[{\"fileId\":\"3,01637037d6\",\"offset\":0,\"size\":5,\"mtimeNs\":"
	       "1764460000120000000,\"eTag\":\"5d41402abc4b2a76b9719d911017c592\"}]}",
	       "the answer form of docs/filer-events.md");
	buf_free(&b);
	filer_entry_free(e);
}

/* Readers of answers tolerate what a newer filer may add. */
static void test_answer_tolerant(void)
{
	char msg[256] = "";
	struct filer_entry *e;

	e = read_text("{\"fullPath\":\"/a/b\",\"mode\":33188,\"newField\":{\"x\":[1]},"
		      "\"etag\":\"0123456789abcdef\",\"xattrs\":null,"
		      "\"chunks\":[{\"fileId\":\"1,02\",\"size\":3,\"later\":true}]}",
		      0, NULL, msg, sizeof(msg));
	ok(e && e->n_chunks == 1 && e->chunks[0].size == 3 && !e->n_xattrs,
	   "answers: unknown members ignored, null is absent (%s)", msg);
	filer_entry_free(e);
	e = read_text("{\"fullPath\":\"/a/\\u00fcb\",\"fullPathB64\":\"L2Evx\"}", 0, NULL, msg,
		      sizeof(msg));
	ok(!e, "a bad fullPathB64 is refused, not ignored");
	e = read_text("{\"fullPath\":\"/a/b\",\"chunks\":[{\"fileId\":\"1,02\",\"etag\":\"old\","
		      "\"eTag\":\"new\"}]}",
		      0, NULL, msg, sizeof(msg));
	ok(e && e->n_chunks == 1 && !strcmp(e->chunks[0].etag, "new"), "answers: eTag wins");
	filer_entry_free(e);

	static const char *const bad[] = {
		"[]",
		"{\"name\":\"b\"}",
		"{\"fullPath\":\"a/b\"}",
		"{\"fullPath\":\"/a/b\",\"mode\":4294967296}",
		"{\"fullPath\":\"/a/b\",\"mode\":\"1\"}",
		"{\"fullPath\":\"/a/b\",\"size\":-1}",
		"{\"fullPath\":\"/a/b\",\"mtimeNs\":1.5}",
		"{\"fullPath\":\"/a/b\",\"hardLinkId\":\"!!\"}",
		"{\"fullPath\":\"/a/b\",\"xattrs\":{\"\":\"\"}}",
		"{\"fullPath\":\"/a/b\",\"xattrs\":{\"a\":1}}",
		"{\"fullPath\":\"/a/b\",\"contentLength\":4194305}",
		"{\"fullPath\":\"/a/b\",\"chunks\":{}}",
		"{\"fullPath\":\"/a/b\",\"chunks\":[{\"size\":1}]}",
		"{\"fullPath\":\"/a/b\",\"chunks\":[{\"fileId\":\"1,2\","
		"\"offset\":9223372036854775808}]}",
		"{\"fullPath\":\"/a/b\",\"chunks\":[{\"fileId\":\"1,2\","
		"\"offset\":9223372036854775807,\"size\":9223372036854775807}]}",
		"{\"fullPath\":\"/a/b\",\"mode\":1,\"mode\":2}",
	};
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		e = read_text(bad[i], 0, NULL, msg, sizeof(msg));
		ok(!e && *msg, "answer refused: %s (%s)", bad[i], msg);
		filer_entry_free(e);
	}
}

/* The request form: what create takes, written and read by the codec. */
static void test_request_round_trip(void)
{
	struct filer_entry *e = json_entry(), *d;
	buf b = BUF_INIT;
	unsigned has = 0;
	char msg[256];

	/* what a create does not carry (the filer sets it) */
	e->attr.size = 0;
	e->attr.nlink = 0;
	free(e->attr.collection);
	free(e->attr.replication);
	free(e->attr.hard_link_id);
	e->attr.collection = e->attr.replication = NULL;
	e->attr.hard_link_id = NULL;
	e->attr.hard_link_id_len = 0;
	d = round_trip(e, ENTRY_JSON_REQUEST | ENTRY_JSON_CONTENT);
	ok(same(e, d), "request form: every field create takes");
	filer_entry_free(d);

	entry_json(e, ENTRY_JSON_REQUEST | ENTRY_JSON_CONTENT, &b);
	ok(strstr(b.data, "\"pathB64\":") && !strstr(b.data, "\"path\":") &&
		   strstr(b.data, "\"symlinkTargetB64\":") && !strstr(b.data, "\"symlinkTarget\":"),
	   "request form: a byte field travels one way, not both");
	d = read_text(b.data, ENTRY_JSON_REQUEST, &has, msg, sizeof(msg));
	is_int(has, ENTRY_JSON_HAS_MODE | ENTRY_JSON_HAS_MTIME | ENTRY_JSON_HAS_ATIME |
			    ENTRY_JSON_HAS_CTIME | ENTRY_JSON_HAS_CRTIME | ENTRY_JSON_HAS_CONTENT,
	       "every member create needs to know about is reported");
	filer_entry_free(d);
	buf_free(&b);

	/* zeros and an atime equal to the mtime are create's defaults: left out */
	filer_entry_free(e);
	e = filer_entry_new("/a", "b");
	e->attr.mode = S_IFREG;
	e->attr.mtime_ns = e->attr.atime_ns = 7;
	entry_json(e, ENTRY_JSON_REQUEST, &b);
	is_str(b.data, "{\"path\":\"/a/b\",\"mode\":32768,\"mtimeNs\":7}", "defaults left out");
	d = read_text(b.data, ENTRY_JSON_REQUEST, &has, msg, sizeof(msg));
	ok(d && has == (ENTRY_JSON_HAS_MODE | ENTRY_JSON_HAS_MTIME) && !d->attr.atime_ns,
	   "and reported absent");
	filer_entry_free(d);
	buf_free(&b);
	filer_entry_free(e);
}

/* Members in any order (the reader's search starts after the last one found). */
static void test_any_order(void)
{
	char msg[256] = "";
	struct filer_entry *e;

	e = read_text("{\"chunks\":[{\"isManifest\":true,\"eTag\":\"t\",\"fileId\":\"1,2\","
		      "\"size\":2}],\"xattrs\":{\"a\":\"YQ==\"},\"content\":\"\",\"mode\":32768,"
		      "\"pathB64\":\"L2E=\",\"ttlSec\":1}",
		      ENTRY_JSON_REQUEST, NULL, msg, sizeof(msg));
	ok(e && !strcmp(e->name, "a") && e->attr.mode == S_IFREG && e->attr.ttl_sec == 1 &&
		   e->n_xattrs == 1 && e->has_content && e->n_chunks == 1 &&
		   e->chunks[0].is_manifest && !strcmp(e->chunks[0].etag, "t"),
	   "a request in reverse order (%s)", msg);
	filer_entry_free(e);
	e = read_text("{\"chunks\":[],\"x\":1,\"chunks2\":2,\"name\":\"z\",\"fullPath\":\"/y\"}",
		      0, NULL, msg, sizeof(msg));
	ok(e && !strcmp(e->name, "y"), "an answer in another order (%s)", msg);
	filer_entry_free(e);
}

/* Requests are refused when anything is off: the filer's parser relies on it. */
static void test_request_strict(void)
{
	static const struct {
		const char *json, *why;
	} bad[] = {
		{"{\"mode\":33188}", "\"path\" is required"},
		{"{\"fullPath\":\"/a\",\"mode\":33188}", "unknown field \"fullPath\""},
		{"{\"path\":\"/a\",\"size\":1}", "unknown field \"size\""},
		{"{\"path\":\"/a\",\"inode\":7}", "unknown field \"inode\""},
		{"{\"path\":\"/a\",\"nameB64\":\"YQ==\"}", "unknown field \"nameB64\""},
		{"{\"path\":\"/a\",\"mode\":1,\"mode\":1}", "duplicate field \"mode\""},
		{"{\"path\":\"/a\",\"pathB64\":\"L2E=\"}", "(not both)"},
		{"{\"path\":\"/a/../b\"}", "invalid path"},
		{"{\"path\":\"/a\",\"mode\":null}", "\"mode\" must be an integer in 0..4294967295"},
		{"{\"path\":\"/a\",\"uid\":-1}", "\"uid\" must be an integer"},
		{"{\"path\":\"/a\",\"mtimeNs\":9223372036854775808}",
		 "\"mtimeNs\" must be a 64-bit"},
		{"{\"path\":\"/a\",\"mime\":1}", "\"mime\" must be a string"},
		{"{\"path\":\"/a\",\"mime\":\"\xc1\x81\"}", "\"mime\" is not valid UTF-8"},
		{"{\"path\":\"/a\",\"xattrs\":{\"\xe0\x80\x80\":\"\"}}", "bytes of UTF-8"},
		{"{\"path\":\"/a\",\"symlinkTargetB64\":\"AGE=\"}", "without NUL"},
		{"{\"path\":\"/a\",\"content\":\"@@@@\"}", "\"content\" must be base64"},
		{"{\"path\":\"/a\",\"xattrs\":[]}", "\"xattrs\" must be an object"},
		{"{\"path\":\"/a\",\"xattrs\":{\"a\":\"YQ==\",\"a\":\"Yg==\"}}", "duplicate name"},
		{"{\"path\":\"/a\",\"chunks\":[1]}", "a chunk must be a JSON object"},
		{"{\"path\":\"/a\",\"chunks\":[{\"fileId\":\"\"}]}", "non-empty \"fileId\""},
		{"{\"path\":\"/a\",\"chunks\":[{\"fileId\":\"1,2\",\"crc\":1}]}",
		 "unknown field \"crc\" in a chunk"},
		{"{\"path\":\"/a\",\"chunks\":[{\"fileId\":\"1,2\",\"etag\":\"x\","
		 "\"eTag\":\"x\"}]}",
		 "are one field"},
		{"{\"path\":\"/a\",\"chunks\":[{\"fileId\":\"1,2\",\"isManifest\":1}]}",
		 "\"isManifest\" must be true or false"},
		{"{\"path\":\"/a\",\"chunks\":[{\"fileId\":\"1,2\",\"size\":9223372036854775808}]}",
		 "\"size\" must be an integer in 0..9223372036854775807"},
	};
	char msg[256];
	struct filer_entry *e;

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		*msg = '\0';
		e = read_text(bad[i].json, ENTRY_JSON_REQUEST, NULL, msg, sizeof(msg));
		ok(!e && strstr(msg, bad[i].why), "request refused: %s (%s)", bad[i].json, msg);
		filer_entry_free(e);
	}

	/* bounds of client/entry.h and of the API */
	buf b = BUF_INIT, v64 = BUF_INIT;
	char *big = xmalloc(API_CONTENT_MAX + 1);
	memset(big, 'x', API_CONTENT_MAX + 1);
	base64_encode(big, API_CONTENT_MAX + 1, &v64);
	buf_printf(&b, "{\"path\":\"/a\",\"content\":\"%s\"}", v64.data);
	e = read_text(b.data, ENTRY_JSON_REQUEST, NULL, msg, sizeof(msg));
	ok(!e && strstr(msg, "at most 65536 bytes"), "content over the API's bound (%s)", msg);
	e = read_text(b.data, 0, NULL, msg, sizeof(msg));
	ok(!e, "an answer has no path");
	buf_reset(&b);
	buf_printf(&b, "{\"fullPath\":\"/a\",\"content\":\"%s\"}", v64.data);
	e = read_text(b.data, 0, NULL, msg, sizeof(msg));
	ok(e && e->content_len == API_CONTENT_MAX + 1, "an answer's inline content may be larger");
	filer_entry_free(e);
	free(big);

	buf_reset(&b);
	buf_printf(&b, "{\"path\":\"/a\",\"chunks\":[{\"fileId\":\"%065d\"}]}", 1);
	e = read_text(b.data, ENTRY_JSON_REQUEST, NULL, msg, sizeof(msg));
	ok(!e && strstr(msg, "\"fileId\" is longer than 64 bytes"), "fileId bound (%s)", msg);
	buf_reset(&b);
	buf_printf(&b, "{\"path\":\"/a\",\"xattrs\":{\"%0256d\":\"\"}}", 1);
	e = read_text(b.data, ENTRY_JSON_REQUEST, NULL, msg, sizeof(msg));
	ok(!e && strstr(msg, "1..255 bytes"), "xattr name bound (%s)", msg);
	buf_reset(&b);
	buf_append_str(&b, "{\"path\":\"/a\",\"chunks\":[");
	for (size_t i = 0; i <= API_CHUNKS_MAX; i++)
		buf_append_str(&b, i ? ",{\"fileId\":\"1,2\"}" : "{\"fileId\":\"1,2\"}");
	buf_append_str(&b, "]}");
	e = read_text(b.data, ENTRY_JSON_REQUEST, NULL, msg, sizeof(msg));
	ok(!e && strstr(msg, "more than 65536 chunks"), "chunks per request (%s)", msg);
	buf_free(&b);
	buf_free(&v64);
}

/* Chunk lists alone (update's chunks and appendChunks), and the old spelling etag. */
static void test_chunks(void)
{
	struct filer_entry *e = json_entry(), *d = filer_entry_new("/", "x");
	buf b = BUF_INIT;
	char msg[256] = "";
	json_w *w = jw_new(&b, false);
	yajl_val v;

	jw_obj_begin(w);
	entry_json_chunks_write(w, "appendChunks", e->chunks, e->n_chunks);
	entry_json_chunks_write(w, "none", NULL, 0);
	jw_obj_end(w);
	jw_free(w);
	v = json_parse(b.data, b.len, NULL, 0);
	is_int(entry_json_chunks_read(v, "appendChunks", ENTRY_JSON_REQUEST, d, msg, sizeof(msg)),
	       WFS_OK, "a chunk list reads back");
	is_int(entry_json_chunks_read(v, "none", ENTRY_JSON_REQUEST, d, msg, sizeof(msg)), WFS_OK,
	       "an empty list");
	is_int(entry_json_chunks_read(v, "absent", ENTRY_JSON_REQUEST, d, msg, sizeof(msg)),
	       WFS_OK, "an absent list");
	ok(d->n_chunks == e->n_chunks, "all of them, nothing more");
	for (size_t i = 0; i < d->n_chunks && i < e->n_chunks; i++) {
		const struct filer_chunk *p = &e->chunks[i], *q = &d->chunks[i];
		ok(!strcmp(p->fid, q->fid) && p->offset == q->offset && p->size == q->size &&
			   p->mtime_ns == q->mtime_ns && !p->etag == !q->etag &&
			   (!p->etag || !strcmp(p->etag, q->etag)) &&
			   p->is_manifest == q->is_manifest,
		   "chunk %zu equal", i);
	}
	yajl_tree_free(v);
	buf_free(&b);
	filer_entry_free(d);
	filer_entry_free(e);

	/* requests written before the one codec say etag: still taken, in both forms */
	for (unsigned form = 0; form <= ENTRY_JSON_REQUEST; form += ENTRY_JSON_REQUEST) {
		const char *text = form ? "{\"path\":\"/a\",\"chunks\":[{\"fileId\":\"1,2\","
					  "\"etag\":\"abc\"}]}"
					: "{\"fullPath\":\"/a\",\"chunks\":[{\"fileId\":\"1,2\","
					  "\"etag\":\"abc\"}]}";
		e = read_text(text, form, NULL, msg, sizeof(msg));
		ok(e && e->n_chunks == 1 && !strcmp(e->chunks[0].etag, "abc"),
		   "\"etag\" is read as \"eTag\" (%s form)", form ? "request" : "answer");
		filer_entry_free(e);
	}
}

/* "cipherKey": base64 of the 32 key bytes, both forms; anything else is refused. */
static void test_cipher_key(void)
{
	struct filer_entry *e = filer_entry_new("/d", "sealed"), *d;
	struct filer_chunk *c;
	char msg[256] = "";
	buf b = BUF_INIT;
	static const char *const bad[] = {
		"{\"path\":\"/a\",\"chunks\":[{\"fileId\":\"1,2\",\"cipherKey\":\"AAAA\"}]}",
		"{\"path\":\"/a\",\"chunks\":[{\"fileId\":\"1,2\",\"cipherKey\":\"not base64!\"}]}",
		"{\"path\":\"/a\",\"chunks\":[{\"fileId\":\"1,2\",\"cipherKey\":7}]}",
		"{\"path\":\"/a\",\"chunks\":[{\"fileId\":\"1,2\",\"cipherKey\":"
		"\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}]}",
	};

	e->attr.mode = S_IFREG | 0644;
	c = filer_entry_add_chunk(e, "3,0abc", 0, 10, 5, NULL, false);
	c->has_cipher_key = true;
	for (int i = 0; i < FILER_CHUNK_KEY_LEN; i++)
		c->cipher_key[i] = (uint8_t)(i * 7 + 1);
	filer_entry_add_chunk(e, "3,0abd", 10, 10, 6, NULL, false);
	entry_json(e, 0, &b);
	ok(strstr(b.data, "\"cipherKey\":\"AQgPFh0kKzI5QEdOVVxjanF4f4aNlJuiqbC3vsXM09o=\"") &&
		   !strstr(strstr(b.data, "cipherKey") + 1, "cipherKey"),
	   "the answer has the key, base64, on the sealed chunk only");
	for (unsigned form = 0; form <= ENTRY_JSON_REQUEST; form += ENTRY_JSON_REQUEST) {
		d = round_trip(e, form);
		ok(same(e, d), "a sealed chunk round-trips (%s form)", form ? "request" : "answer");
		filer_entry_free(d);
	}
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		d = read_text(bad[i], ENTRY_JSON_REQUEST, NULL, msg, sizeof(msg));
		ok(!d && strstr(msg, "cipherKey"), "refused: %s (%s)", bad[i], msg);
		filer_entry_free(d);
	}
	buf_free(&b);
	filer_entry_free(e);
}

/*
 * Both sides: what a client's create body says (filer_meta_create_body) is what
 * the filer's parser (api_req_parse) gets, with create's defaults filled in.
 */
static void test_create_both_sides(void)
{
	struct filer_entry *e = json_entry();
	const char *path = "/dir/s\xffub/fi\xfe\xc0le.bin";
	struct filer_meta_new n = {
		.mode = e->attr.mode,
		.uid = e->attr.uid,
		.gid = e->attr.gid,
		.time_ns = e->attr.mtime_ns,
		.mime = e->attr.mime,
		.chunks = e->chunks,
		.n_chunks = e->n_chunks,
		.xattrs = e->xattrs,
		.n_xattrs = e->n_xattrs,
	};
	struct api_req *r = NULL;
	char msg[256] = "";
	buf b = BUF_INIT;
	int64_t raw;

	raw = filer_meta_create_body(&b, path, &n, true);
	is_int(raw, -1, "chunks: no raw content");
	is_int(api_req_parse("create", b.data, b.len, NULL, 0, &r, msg, sizeof(msg)), WFS_OK,
	       "the filer parses the client's create");
	if (r) {
		ok(r->quiet && !strcmp(r->path, path), "the path's bytes arrive (%s)", msg);
		/* what the filer fills in */
		e->attr.size = (uint64_t)INT64_MAX;
		e->attr.nlink = 1;
		e->attr.atime_ns = e->attr.ctime_ns = e->attr.crtime_ns = e->attr.mtime_ns;
		free(e->attr.collection);
		free(e->attr.replication);
		free(e->attr.symlink_target);
		free(e->attr.hard_link_id);
		e->attr.collection = e->attr.replication = e->attr.symlink_target = NULL;
		e->attr.hard_link_id = NULL;
		e->attr.hard_link_id_len = 0;
		e->attr.rdev = e->attr.ttl_sec = 0;
		filer_entry_clear_content(e);
		ok(same(e, r->entry), "the entry the filer gets is the client's");
	}
	api_req_free(r);
	r = NULL;
	buf_reset(&b);

	/* inline content goes raw after the JSON */
	n.chunks = NULL;
	n.n_chunks = 0;
	n.has_content = true;
	n.content = (const uint8_t *)"raw\0bytes";
	n.content_len = 9;
	raw = filer_meta_create_body(&b, "/a/b", &n, false);
	is_int(raw, 9, "content: 9 raw bytes");
	is_int(api_req_parse("create", b.data, b.len - 9, (uint8_t *)b.data + b.len - 9, 9, &r,
			     msg, sizeof(msg)),
	       WFS_OK, "the filer parses it");
	ok(r && r->entry->has_content && r->entry->content_len == 9 &&
		   !memcmp(r->entry->content, "raw\0bytes", 9) && r->entry->attr.size == 9,
	   "the content arrives (%s)", msg);
	api_req_free(r);
	buf_free(&b);
	filer_entry_free(e);
}

/* setXattrs: {"ops": [...]}, each op a set (value) or a remove (none). */
static void test_set_xattrs_parse(void)
{
	static const char good[] =
		"{\"ops\":[{\"path\":\"/t/a\",\"name\":\"user.p\",\"value\":\"djE=\","
		"\"ifEtag\":\"0123456789ABCDEF\"},"
		"{\"pathB64\":\"L3QvYv8=\",\"name\":\"user.p\"},"
		"{\"path\":\"/t/a\",\"name\":\"user.q\",\"value\":\"\",\"flags\":\"create\"},"
		"{\"path\":\"/t/a\",\"name\":\"user.r\",\"value\":\"eA==\",\"flags\":\"\"}]}";
	static const struct {
		const char *json, *why;
	} bad[] = {
		{"{}", "\"ops\" is required"},
		{"{\"ops\":[]}", "1..64 objects"},
		{"{\"ops\":{}}", "1..64 objects"},
		{"{\"ops\":[5]}", "\"ops\"[0]: an op must be a JSON object"},
		{"{\"ops\":[{\"path\":\"/a\",\"name\":\"k\"}],\"path\":\"/a\"}",
		 "unknown field \"path\""},
		{"{\"ops\":[{\"path\":\"/a\",\"name\":\"k\"},{\"path\":\"/a\",\"name\":\"k\","
		 "\"color\":1}]}",
		 "\"ops\"[1]: unknown field \"color\" in an op"},
		{"{\"ops\":[{\"path\":\"/a\",\"name\":\"k\",\"name\":\"j\"}]}", "duplicate field"},
		{"{\"ops\":[{\"path\":\"/a\"}]}", "\"ops\"[0]: \"name\" is required"},
		{"{\"ops\":[{\"path\":\"/a\",\"name\":\"\"}]}", "\"name\" is required"},
		{"{\"ops\":[{\"name\":\"k\"}]}", "\"ops\"[0]: \"path\""},
		{"{\"ops\":[{\"path\":\"/a/../b\",\"name\":\"k\"}]}", "\"ops\"[0]:"},
		{"{\"ops\":[{\"path\":\"/a\",\"name\":\"k\",\"value\":\"@@@@\"}]}",
		 "\"value\" must be base64"},
		{"{\"ops\":[{\"path\":\"/a\",\"name\":\"k\",\"value\":5}]}",
		 "\"value\" must be a string"},
		{"{\"ops\":[{\"path\":\"/a\",\"name\":\"k\",\"value\":\"\",\"flags\":\"both\"}]}",
		 "\"flags\" must be"},
		{"{\"ops\":[{\"path\":\"/a\",\"name\":\"k\",\"flags\":\"create\"}]}",
		 "\"flags\" goes with \"value\""},
		{"{\"ops\":[{\"path\":\"/a\",\"name\":\"k\",\"ifEtag\":\"xyz\"}]}",
		 "\"ifEtag\" must be an entry etag"},
		{"{\"ops\":[{\"path\":\"/a\",\"name\":\"k\",\"value\":\"\"},"
		 "{\"path\":\"/b\",\"name\":\"k\"},{\"path\":\"/a\",\"name\":\"k\"}]}",
		 "\"ops\"[0] and \"ops\"[2] change the same attribute"},
	};
	struct api_req *r = NULL;
	char msg[256] = "";
	buf b = BUF_INIT, v = BUF_INIT;
	char *big;

	is_int(api_req_parse("setXattrs", good, strlen(good), NULL, 0, &r, msg, sizeof(msg)),
	       WFS_OK, "setXattrs parses");
	if (r) {
		const struct api_xattr_op *x = r->xops;
		is_int(r->op, API_SET_XATTRS, "the op");
		is_int(r->nxops, 4, "four ops, in order");
		ok(!strcmp(x[0].path, "/t/a") && !strcmp(x[0].dir, "/t") &&
			   !strcmp(x[0].name, "a") && !strcmp(x[0].xname, "user.p") &&
			   !x[0].remove && x[0].len == 2 && !memcmp(x[0].value, "v1", 2) &&
			   !strcmp(x[0].if_etag, "0123456789ABCDEF") && x[0].flag == API_XATTR_ANY,
		   "a set with its etag");
		ok(!strcmp(x[1].path, "/t/b\xff") && x[1].remove && !x[1].value && !x[1].if_etag,
		   "a remove, its path in bytes");
		ok(!x[2].remove && x[2].value && x[2].len == 0 && x[2].flag == API_XATTR_CREATE,
		   "an empty value is a set");
		ok(x[3].flag == API_XATTR_ANY && x[3].len == 1, "flags \"\" is any");
	}
	api_req_free(r);
	r = NULL;
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		*msg = '\0';
		ok(api_req_parse("setXattrs", bad[i].json, strlen(bad[i].json), NULL, 0, &r, msg,
				 sizeof(msg)) == WFS_EINVAL &&
			   !r && strstr(msg, bad[i].why),
		   "setXattrs refused: %s (%s)", bad[i].json, msg);
		api_req_free(r);
		r = NULL;
	}

	/* bounds: 64 ops, a name of 255 bytes, a value of 1 MiB */
	for (size_t n = API_XATTR_OPS_MAX; n <= API_XATTR_OPS_MAX + 1; n++) {
		buf_reset(&b);
		buf_append_str(&b, "{\"ops\":[");
		for (size_t i = 0; i < n; i++)
			buf_printf(&b, "%s{\"path\":\"/p%zu\",\"name\":\"k\"}", i ? "," : "", i);
		buf_append_str(&b, "]}");
		is_int(api_req_parse("setXattrs", b.data, b.len, NULL, 0, &r, msg, sizeof(msg)),
		       n == API_XATTR_OPS_MAX ? WFS_OK : WFS_EINVAL, "ops at the bound");
		api_req_free(r);
		r = NULL;
	}
	for (size_t n = FILER_SHORT_MAX; n <= FILER_SHORT_MAX + 1; n++) {
		buf_reset(&b);
		buf_printf(&b, "{\"ops\":[{\"path\":\"/a\",\"name\":\"%0*d\"}]}", (int)n, 1);
		is_int(api_req_parse("setXattrs", b.data, b.len, NULL, 0, &r, msg, sizeof(msg)),
		       n == FILER_SHORT_MAX ? WFS_OK : WFS_EINVAL, "name length at the bound");
		api_req_free(r);
		r = NULL;
	}
	big = xcalloc(1, FILER_XATTR_VALUE_MAX + 1);
	for (size_t n = FILER_XATTR_VALUE_MAX; n <= FILER_XATTR_VALUE_MAX + 1; n++) {
		buf_reset(&v);
		base64_encode(big, n, &v);
		buf_reset(&b);
		buf_printf(&b, "{\"ops\":[{\"path\":\"/a\",\"name\":\"k\",\"value\":\"%s\"}]}",
			   v.data);
		is_int(api_req_parse("setXattrs", b.data, b.len, NULL, 0, &r, msg, sizeof(msg)),
		       n == FILER_XATTR_VALUE_MAX ? WFS_OK : WFS_EINVAL, "value size at the bound");
		ok(n > FILER_XATTR_VALUE_MAX || (r && r->xops[0].len == n), "the 1 MiB value (%s)",
		   msg);
		api_req_free(r);
		r = NULL;
	}
	free(big);
	buf_free(&b);
	buf_free(&v);
}

/* Both sides: the client's setXattrs body (filer_meta_set_xattrs_body) is what the filer gets. */
static void test_set_xattrs_both_sides(void)
{
	const struct filer_meta_xattr_op ops[] = {
		{"/t/\xfe", "user.p", "\0v", 2, FM_XATTR_REPLACE, "0123456789abcdef"},
		{"/t/b", "user.p", NULL, 0, FM_XATTR_ANY, NULL},
		{"/t/b", "user.q", "", 0, FM_XATTR_CREATE, NULL},
	};
	struct api_req *r = NULL;
	char msg[256] = "";
	buf b = BUF_INIT;

	filer_meta_set_xattrs_body(&b, ops, ARRAY_LEN(ops));
	is_int(api_req_parse("setXattrs", b.data, b.len, NULL, 0, &r, msg, sizeof(msg)), WFS_OK,
	       "the filer parses the client's setXattrs");
	ok(r && r->nxops == 3, "three ops arrive (%s)", msg);
	for (size_t i = 0; r && i < r->nxops && i < ARRAY_LEN(ops); i++) {
		const struct api_xattr_op *x = &r->xops[i];
		static const enum api_xattr_flag flag[] = {API_XATTR_ANY, API_XATTR_CREATE,
							   API_XATTR_REPLACE};
		ok(!strcmp(x->path, ops[i].path) && !strcmp(x->xname, ops[i].name) &&
			   x->remove == !ops[i].value && x->len == ops[i].len &&
			   (!x->len || !memcmp(x->value, ops[i].value, x->len)) &&
			   x->flag == flag[ops[i].flag] && !x->if_etag == !ops[i].if_etag &&
			   (!x->if_etag || !strcmp(x->if_etag, ops[i].if_etag)),
		   "op %zu arrives as sent", i);
	}
	api_req_free(r);
	buf_free(&b);
}

int main(void)
{
	test_cipher_key();
	test_answer_round_trip();
	test_answer_golden();
	test_answer_tolerant();
	test_request_round_trip();
	test_any_order();
	test_request_strict();
	test_chunks();
	test_create_both_sides();
	test_set_xattrs_parse();
	test_set_xattrs_both_sides();
	return done_testing();
}
