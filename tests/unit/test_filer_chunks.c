/*
 * Chunk lists against a byte-array model: random overwrites, truncates and
 * extensions; every read plan must reproduce the model, compaction must keep
 * every visible byte, and manifests must round-trip.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client/chunk_cipher.h"
#include "client/chunks.h"
#include "tap.h"
#include "util.h"

#define FILE_MAX 4096

/* The byte at offset i of chunk id k: a function of both, so misplaced reads show. */
static uint8_t chunk_byte(unsigned k, uint64_t i) { return (uint8_t)(k * 131 + i * 7 + (i >> 8)); }

static unsigned chunk_id(const struct filer_chunk *c)
{
	unsigned k = 0;
	sscanf(c->fid, "1,%x", &k);
	return k;
}

/* Reads [off, off+len) through a read plan; holes read as zero. */
static bool read_via_plan(const struct filer_chunk *c, size_t n, uint64_t off, uint64_t len,
			  uint8_t *out)
{
	struct chunk_view *v = NULL;
	size_t nv = 0;
	uint64_t prev_end = off;
	if (chunks_read_plan(c, n, off, len, &v, &nv))
		return false;
	memset(out, 0, len);
	for (size_t i = 0; i < nv; i++) {
		if (v[i].file_offset < prev_end || v[i].file_offset + v[i].len > off + len ||
		    v[i].len == 0 || v[i].chunk_offset + v[i].len > c[v[i].chunk].size) {
			free(v);
			return false; /* views must be ordered, disjoint, inside the window */
		}
		for (uint64_t j = 0; j < v[i].len; j++)
			out[v[i].file_offset - off + j] =
				chunk_byte(chunk_id(&c[v[i].chunk]), v[i].chunk_offset + j);
		prev_end = v[i].file_offset + v[i].len;
	}
	free(v);
	return true;
}

static void test_basic(void)
{
	struct filer_entry *e = filer_entry_new("/", "f");
	struct chunk_view *v;
	size_t nv;
	filer_entry_add_chunk(e, "1,1", 0, 100, 10, NULL, false);
	filer_entry_add_chunk(e, "1,2", 50, 100, 20, NULL, false); /* newer, overlaps the tail */
	filer_entry_add_chunk(e, "1,3", 20, 10, 5, NULL, false);   /* older: hidden by 1 */
	chunks_read_plan(e->chunks, e->n_chunks, 0, 200, &v, &nv);
	is_int(nv, 2, "two views");
	ok(nv == 2 && v[0].chunk == 0 && v[0].len == 50 && v[1].chunk == 1 &&
		   v[1].file_offset == 50 && v[1].len == 100 && v[1].chunk_offset == 0,
	   "newest wins on overlap");
	free(v);
	chunks_read_plan(e->chunks, e->n_chunks, 60, 10, &v, &nv);
	ok(nv == 1 && v[0].chunk == 1 && v[0].chunk_offset == 10 && v[0].len == 10,
	   "window inside one chunk");
	free(v);

	/* equal mtime: later in the list wins */
	filer_entry_add_chunk(e, "1,4", 0, 10, 20, NULL, false);
	filer_entry_add_chunk(e, "1,5", 5, 10, 20, NULL, false);
	chunks_read_plan(e->chunks, e->n_chunks, 0, 20, &v, &nv);
	ok(nv >= 2 && v[0].chunk == 3 && v[0].len == 5 && v[1].chunk == 4 && v[1].len == 10,
	   "equal mtime: list order decides");
	free(v);

	bool mask[5];
	chunks_visible_mask(e->chunks, e->n_chunks, 200, mask);
	ok(mask[0] && mask[1] && !mask[2] && mask[3] && mask[4], "visibility mask");

	struct filer_chunk *g = NULL;
	size_t ng = 0, n = e->n_chunks;
	is_int(chunks_compact(e->chunks, &n, 200, &g, &ng), WFS_OK, "compact");
	is_int(ng, 1, "one invisible chunk");
	ok(ng == 1 && !strcmp(g[0].fid, "1,3"), "the hidden chunk is garbage");
	e->n_chunks = n;
	is_int(chunks_truncate(e->chunks, &n, 55, &g, &ng), WFS_OK, "truncate");
	e->n_chunks = n;
	is_int(ng, 1, "truncate to 55 drops no chunk (garbage still holds only 1,3)");
	filer_chunks_free(g, ng);
	g = NULL;
	ng = 0;
	chunks_truncate(e->chunks, &n, 40, &g, &ng);
	e->n_chunks = n;
	ok(ng == 1 && !strcmp(g[0].fid, "1,2"), "chunk starting at 50 dropped by truncate to 40");
	ok(e->chunks[0].size == 40, "crossing chunk shortened");
	filer_chunks_free(g, ng);

	e->chunks[0].is_manifest = true;
	is_int(chunks_read_plan(e->chunks, e->n_chunks, 0, 10, &v, &nv), WFS_EINVAL,
	       "read plan refuses unresolved manifests");
	filer_entry_free(e);
}

/* The model: for each byte, which chunk id and offset inside it supplies it (0 = hole). */
struct model {
	unsigned id[FILE_MAX];
	uint32_t off[FILE_MAX];
	uint64_t size;
};

static void model_bytes(const struct model *m, uint64_t off, uint64_t len, uint8_t *out)
{
	for (uint64_t i = 0; i < len; i++) {
		uint64_t p = off + i;
		out[i] = p < m->size && m->id[p] ? chunk_byte(m->id[p], m->off[p]) : 0;
	}
}

static void test_random(void)
{
	struct model *m = xcalloc(1, sizeof(*m));
	struct filer_entry *e = filer_entry_new("/", "r");
	uint8_t got[FILE_MAX], want[FILE_MAX];
	size_t mismatches = 0, plan_errors = 0, compact_lost = 0, freed_visible = 0, ops = 0;
	unsigned next_id = 1;
	int64_t clock = 0;
	srand(12345);

	for (int round = 0; round < 3000; round++) {
		int op = rand() % 10;
		if (op < 7) {
			/* overwrite or append: a new chunk; sometimes with an equal mtime */
			uint64_t off = (uint64_t)rand() % (FILE_MAX - 1);
			uint64_t len = 1 + (uint64_t)rand() % MIN(600, FILE_MAX - off);
			unsigned k = next_id++;
			char fid[32];
			if (rand() % 4)
				clock++;
			snprintf(fid, sizeof(fid), "1,%x", k);
			filer_entry_add_chunk(e, fid, off, len, clock, NULL, false);
			for (uint64_t i = 0; i < len; i++) {
				m->id[off + i] = k;
				m->off[off + i] = (uint32_t)i;
			}
			if (off + len > m->size)
				m->size = off + len;
		} else if (op < 9) {
			/* truncate (down or up) */
			uint64_t size = (uint64_t)rand() % FILE_MAX;
			struct filer_chunk *g = NULL;
			size_t ng = 0, n = e->n_chunks;
			chunks_truncate(e->chunks, &n, size, &g, &ng);
			e->n_chunks = n;
			for (uint64_t i = size; i < FILE_MAX; i++)
				m->id[i] = 0;
			m->size = size;
			filer_chunks_free(g, ng);
		} else {
			/* compaction must never drop a chunk that supplies a byte */
			struct filer_chunk *g = NULL;
			size_t ng = 0, n = e->n_chunks;
			chunks_compact(e->chunks, &n, m->size, &g, &ng);
			e->n_chunks = n;
			for (size_t i = 0; i < ng; i++)
				for (uint64_t p = 0; p < m->size; p++)
					if (m->id[p] == chunk_id(&g[i]))
						freed_visible++;
			filer_chunks_free(g, ng);
		}
		ops++;
		/* read a random window and the whole file */
		uint64_t off = (uint64_t)rand() % FILE_MAX,
			 len = (uint64_t)rand() % (FILE_MAX - off);
		uint64_t rlen = m->size > off ? MIN(len, m->size - off) : 0;
		if (!read_via_plan(e->chunks, e->n_chunks, off, rlen, got))
			plan_errors++;
		model_bytes(m, off, rlen, want);
		if (memcmp(got, want, rlen))
			mismatches++;
		if (round % 50 == 0) {
			struct filer_chunk *g = NULL;
			size_t ng = 0, n = e->n_chunks;
			uint8_t before[FILE_MAX], after[FILE_MAX];
			read_via_plan(e->chunks, e->n_chunks, 0, m->size, before);
			chunks_compact(e->chunks, &n, m->size, &g, &ng);
			e->n_chunks = n;
			read_via_plan(e->chunks, e->n_chunks, 0, m->size, after);
			if (memcmp(before, after, m->size))
				compact_lost++;
			filer_chunks_free(g, ng);
		}
	}
	is_int(plan_errors, 0, "read plans well-formed over 3000 random operations");
	is_int(mismatches, 0, "read plans match the byte model");
	is_int(freed_visible, 0, "compaction never frees a visible chunk");
	is_int(compact_lost, 0, "compaction keeps every byte");
	ok(e->n_chunks < 3000, "compaction keeps the list short (%zu chunks)", e->n_chunks);
	filer_entry_free(e);
	free(m);
}

static void test_unreferenced(void)
{
	struct filer_entry *a = filer_entry_new("/", "a"), *b = filer_entry_new("/", "b");
	size_t *idx, n;
	filer_entry_add_chunk(a, "1,1", 0, 1, 0, NULL, false);
	filer_entry_add_chunk(a, "1,2", 0, 1, 0, NULL, false);
	filer_entry_add_chunk(a, "1,3", 0, 1, 0, NULL, false);
	filer_entry_add_chunk(b, "1,3", 0, 1, 0, NULL, false);
	filer_entry_add_chunk(b, "1,1", 0, 1, 0, NULL, false);
	filer_entry_add_chunk(b, "1,9", 0, 1, 0, NULL, false);
	chunks_unreferenced(a->chunks, a->n_chunks, b->chunks, b->n_chunks, &idx, &n);
	ok(n == 1 && idx[0] == 1, "only 1,2 is unreferenced");
	free(idx);
	chunks_unreferenced(a->chunks, a->n_chunks, NULL, 0, &idx, &n);
	is_int(n, 3, "all unreferenced when the new list is empty (delete)");
	free(idx);
	filer_entry_free(a);
	filer_entry_free(b);
}

/* An in-memory blob store standing in for volume servers. */
struct blobs {
	buf b[64];
	int n;
	int fetches;
};

static wfs_err blob_save(void *ctx, const void *blob, size_t len, char **fid)
{
	struct blobs *s = ctx;
	if (s->n == 64)
		return WFS_ENOSPC;
	buf_init(&s->b[s->n]);
	buf_append(&s->b[s->n], blob, len);
	*fid = xasprintf("9,%x", s->n++);
	return WFS_OK;
}

static wfs_err blob_fetch(void *ctx, const char *fid, buf *out)
{
	struct blobs *s = ctx;
	unsigned k;
	s->fetches++;
	if (sscanf(fid, "9,%x", &k) != 1 || (int)k >= s->n)
		return WFS_ENOENT;
	buf_append(out, s->b[k].data, s->b[k].len);
	return WFS_OK;
}

static void test_manifest(void)
{
	struct blobs *bs = xcalloc(1, sizeof(*bs));
	struct filer_entry *e = filer_entry_new("/", "big");
	struct filer_chunk *man = NULL, *res = NULL, *man2 = NULL;
	size_t nman = 0, nres = 0, nman2 = 0;
	char fid[32];

	for (unsigned i = 0; i < 2500; i++) {
		snprintf(fid, sizeof(fid), "1,%x", i + 1);
		/* a few overwrites among sequential chunks */
		uint64_t off = i % 100 == 99 ? (uint64_t)(i - 50) * 10 : (uint64_t)i * 10;
		filer_entry_add_chunk(e, fid, off, 10, i % 7 == 0 ? 5 : (int64_t)i, "e", false);
	}
	is_int(chunks_manifestize(e->chunks, e->n_chunks, 1000, blob_save, bs, &man, &nman), WFS_OK,
	       "manifestize 2500 chunks in batches of 1000");
	is_int(nman, 2 + 500, "two manifests and the 500 left over");
	ok(man[0].is_manifest && man[1].is_manifest && !man[2].is_manifest, "manifests first");
	ok(man[0].offset == 0 && man[0].size == 9990 && man[0].mtime_ns == 999,
	   "manifest spans its members");
	/* a second level: fold the manifests plus rest again */
	is_int(chunks_manifestize(man, nman, 400, blob_save, bs, &man2, &nman2), WFS_OK,
	       "second manifestize");
	is_int(chunks_resolve_manifests(man2, nman2, blob_fetch, bs, &res, &nres), WFS_OK,
	       "resolve manifests");
	is_int(nres, 2500, "all chunks back");
	bool same = nres == e->n_chunks;
	for (size_t i = 0; same && i < nres; i++)
		same = !strcmp(res[i].fid, e->chunks[i].fid) &&
		       res[i].offset == e->chunks[i].offset &&
		       res[i].mtime_ns == e->chunks[i].mtime_ns && !res[i].is_manifest;
	ok(same, "resolved list equals the original, in order");
	uint8_t a[25000], b[25000];
	read_via_plan(e->chunks, e->n_chunks, 0, 25000, a);
	read_via_plan(res, nres, 0, 25000, b);
	ok(!memcmp(a, b, sizeof(a)), "same bytes through manifests");
	filer_chunks_free(res, nres);

	/* a corrupt blob and a manifest cycle are errors, not crashes or loops */
	bs->b[0].data[0] = 9;
	is_int(chunks_resolve_manifests(man, nman, blob_fetch, bs, &res, &nres), WFS_ECORRUPT,
	       "bad manifest version");
	{
		struct filer_chunk self = {.fid = (char *)"9,2", .is_manifest = true};
		buf cyc = BUF_INIT;
		chunks_manifest_encode(&self, 1, &cyc);
		buf_reset(&bs->b[2]);
		buf_append(&bs->b[2], cyc.data, cyc.len);
		buf_free(&cyc);
		is_int(chunks_resolve_manifests(&self, 1, blob_fetch, bs, &res, &nres),
		       WFS_ECORRUPT, "self-referencing manifest stops at the depth limit");
	}
	uint8_t junk[3] = {1, 0, 0};
	is_int(chunks_manifest_decode(junk, sizeof(junk), &res, &nres), WFS_ECORRUPT,
	       "truncated manifest");
	filer_chunks_free(man, nman);
	filer_chunks_free(man2, nman2);
	for (int i = 0; i < bs->n; i++)
		buf_free(&bs->b[i]);
	free(bs);
	filer_entry_free(e);
}

/* chunk_cipher: round trip, wrong key, a flipped byte anywhere, truncation. */
static void test_cipher(void)
{
	uint8_t key[FILER_CHUNK_KEY_LEN], key2[FILER_CHUNK_KEY_LEN], data[5000];
	buf sealed = BUF_INIT, sealed2 = BUF_INIT, out = BUF_INIT;
	bool all = true;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31 + 7);
	is_int(chunk_cipher_seal(data, sizeof(data), key, &sealed), WFS_OK, "seal");
	is_int(sealed.len, sizeof(data) + CHUNK_CIPHER_OVERHEAD, "nonce + ciphertext + tag");
	ok(!memmem(sealed.data, sealed.len, data + 100, 32), "no plaintext in the blob");
	is_int(chunk_cipher_open(key, (const uint8_t *)sealed.data, sealed.len, &out), WFS_OK,
	       "open");
	ok(out.len == sizeof(data) && !memcmp(out.data, data, sizeof(data)), "round trip");
	is_int(chunk_cipher_seal(data, sizeof(data), key2, &sealed2), WFS_OK, "seal again");
	ok(memcmp(key, key2, sizeof(key)) && memcmp(sealed.data, sealed2.data, 64),
	   "a fresh key and nonce each time");
	buf_reset(&out);
	is_int(chunk_cipher_open(key2, (const uint8_t *)sealed.data, sealed.len, &out),
	       WFS_ECORRUPT, "wrong key");
	is_int(out.len, 0, "wrong key: nothing appended");
	for (size_t at = 0; at < sealed.len; at += 97) {
		sealed.data[at] ^= 0x10;
		buf_reset(&out);
		all &= chunk_cipher_open(key, (const uint8_t *)sealed.data, sealed.len, &out) ==
			       WFS_ECORRUPT &&
		       out.len == 0;
		sealed.data[at] ^= 0x10;
	}
	sealed.data[sealed.len - 1] ^= 1; /* the tag's last byte */
	all &= chunk_cipher_open(key, (const uint8_t *)sealed.data, sealed.len, &out) ==
	       WFS_ECORRUPT;
	sealed.data[sealed.len - 1] ^= 1;
	ok(all, "a flipped byte anywhere (nonce, ciphertext, tag) fails");
	is_int(chunk_cipher_open(key, (const uint8_t *)sealed.data, sealed.len - 1, &out),
	       WFS_ECORRUPT, "truncated by one byte");
	is_int(chunk_cipher_open(key, (const uint8_t *)sealed.data, CHUNK_CIPHER_OVERHEAD - 1, &out),
	       WFS_ECORRUPT, "shorter than the overhead");
	buf_reset(&sealed);
	buf_reset(&out);
	is_int(chunk_cipher_seal("", 0, key, &sealed), WFS_OK, "seal 0 bytes");
	ok(sealed.len == CHUNK_CIPHER_OVERHEAD &&
		   chunk_cipher_open(key, (const uint8_t *)sealed.data, sealed.len, &out) ==
			   WFS_OK &&
		   out.len == 0,
	   "0 bytes round trip");
	buf_free(&sealed);
	buf_free(&sealed2);
	buf_free(&out);
}

/* Manifests carry their members' keys; a manifest of sealed chunks is stored sealed. */
static void test_manifest_keys(void)
{
	struct blobs *bs = xcalloc(1, sizeof(*bs));
	struct filer_chunk *man = NULL, *res = NULL, *dec = NULL;
	size_t nman = 0, nres = 0, ndec = 0;
	struct filer_entry *e = filer_entry_new("/", "sealed");
	buf plain = BUF_INIT;
	bool same = true;
	char fid[32];

	for (unsigned i = 0; i < 6; i++) {
		struct filer_chunk *c;
		snprintf(fid, sizeof(fid), "1,%x", i + 1);
		c = filer_entry_add_chunk(e, fid, (uint64_t)i * 10, 10, 1, NULL, false);
		c->has_cipher_key = i != 3; /* one plain chunk among sealed ones */
		memset(c->cipher_key, (int)(0xa0 + i), FILER_CHUNK_KEY_LEN);
	}
	chunks_manifest_encode(e->chunks, e->n_chunks, &plain);
	is_int(chunks_manifest_decode((const uint8_t *)plain.data, plain.len, &dec, &ndec), WFS_OK,
	       "manifest with keys decodes");
	for (size_t i = 0; i < ndec; i++)
		same &= dec[i].has_cipher_key == e->chunks[i].has_cipher_key &&
			(!dec[i].has_cipher_key ||
			 !memcmp(dec[i].cipher_key, e->chunks[i].cipher_key, FILER_CHUNK_KEY_LEN));
	ok(ndec == 6 && same, "each member's key (or none) survives");
	is_int(chunks_manifestize(e->chunks, e->n_chunks, 3, blob_save, bs, &man, &nman), WFS_OK,
	       "manifestize sealed chunks");
	ok(nman == 2 && man[0].has_cipher_key && man[1].has_cipher_key,
	   "manifests of sealed chunks are sealed");
	ok(!memmem(bs->b[0].data, bs->b[0].len, "1,1", 3) &&
		   !memmem(bs->b[0].data, bs->b[0].len, e->chunks[0].cipher_key, 8),
	   "the stored manifest blob shows no member id or key");
	is_int(chunks_resolve_manifests(man, nman, blob_fetch, bs, &res, &nres), WFS_OK,
	       "resolve sealed manifests");
	ok(nres == 6 && res[5].has_cipher_key && !res[3].has_cipher_key &&
		   !memcmp(res[5].cipher_key, e->chunks[5].cipher_key, FILER_CHUNK_KEY_LEN),
	   "resolution gives the members with their keys");
	filer_chunks_free(res, nres);
	man[1].cipher_key[0] ^= 1;
	is_int(chunks_resolve_manifests(man, nman, blob_fetch, bs, &res, &nres), WFS_ECORRUPT,
	       "a manifest under a wrong key does not resolve");
	filer_chunks_free(man, nman);
	filer_chunks_free(dec, ndec);
	buf_free(&plain);
	for (int i = 0; i < bs->n; i++)
		buf_free(&bs->b[i]);
	free(bs);
	filer_entry_free(e);
}

int main(void)
{
	test_basic();
	test_random();
	test_unreferenced();
	test_manifest();
	test_cipher();
	test_manifest_keys();
	return done_testing();
}
