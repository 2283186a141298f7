/*
 * The filer's data path against a real master and two real volume servers
 * started in-process on loopback ports: assignment and the location cache,
 * chunk writes of awkward sizes read back whole and at random ranges against
 * a model, newest-wins overwrites and holes, inline data, abort, manifests,
 * bounded writer memory on a 256 MiB stream, concurrent writers, replica
 * failover and WFS_EUNAVAIL (without hanging) once every replica is down.
 */
#include "config.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "client/blob_client.h"
#include "client/chunk_cipher.h"
#include "client/chunk_io.h"
#include "client/chunks.h"
#include "http_client.h"
#include "log.h"
#include "server/master/master.h"
#include "tap.h"
#include "util.h"
#include "server/volume/volume_server.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

static char dir[] = "/tmp/test_filer_chunk_io.XXXXXX";
static char mserver[64];
static struct master *master;
static struct volume_server *vs[2];
static int vs_port[2];

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void diag(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("# ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
}

/* per thread: the writer threads of test_threads draw their bytes at once */
static _Thread_local uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static struct volume_server *start_volume(int i, int port)
{
	struct volume_server_opts o;
	char *d = xasprintf("%s/vol%d", dir, i);
	wfs_err err;
	struct volume_server *v;
	mkdir_p(d);
	volume_server_opts_default(&o);
	o.port = port;
	o.dir = d;
	o.max = "16";
	o.mserver = mserver;
	o.pulse_seconds = 1;
	o.threads = 2;
	v = volume_server_start(&o, &err);
	free(d);
	return v;
}

/* A sink collecting into a buf. */
static wfs_err sink_buf(void *arg, const void *data, size_t len)
{
	buf_append(arg, data, len);
	return WFS_OK;
}

/* Writes data in uneven pieces through a new writer; returns the chunks (or NULL on error). */
static wfs_err write_file(blob_client *bc, const struct chunk_writer_opts *o, const uint8_t *data,
			  size_t len, struct filer_chunk **chunks, size_t *n)
{
	wfs_err err;
	chunk_writer *cw = chunk_writer_new(bc, o, &err);
	size_t at = 0;
	if (!cw)
		return err;
	while (at < len && !err) {
		size_t r = 1 + (size_t)(rnd() % (50 * KiB)); /* MIN evaluates twice */
		size_t k = MIN(len - at, r);
		err = chunk_writer_write(cw, data + at, k);
		at += k;
	}
	if (!err)
		err = chunk_writer_finish(cw, chunks, n);
	chunk_writer_free(cw);
	return err;
}

/* Reads [off, off+len) and compares it with model[off..]; true if equal. */
static bool read_matches(blob_client *bc, const struct filer_chunk *c, size_t n, uint64_t size,
			 const uint8_t *model, uint64_t off, uint64_t len)
{
	buf out = BUF_INIT;
	uint64_t want = off >= size ? 0 : MIN(len, size - off);
	struct chunk_read_opts ro = {16 * KiB + 3, 3}; /* small pieces: many ranges per chunk */
	wfs_err err = chunk_read_ex(bc, c, n, size, off, len, sink_buf, &out, &ro);
	bool good = !err && out.len == want && (!want || !memcmp(out.data, model + off, want));
	if (!good)
		diag("read %" PRIu64 "+%" PRIu64 " of %" PRIu64 ": %s, got %zu bytes", off, len,
		     size, wfs_strerror(err), out.len);
	buf_free(&out);
	return good;
}

static void test_master_client(blob_client *bc)
{
	struct blob_assignment a;
	struct blob_location *locs = NULL;
	struct blob_client_stats st0, st;
	size_t n = 0;
	uint32_t vid;
	blob_client *shortlived;
	struct blob_client_opts so = {.timeout_ms = 5000, .location_ttl_ms = 50, .threads = 1};

	is_int(blob_client_assign(bc, NULL, &a), WFS_OK, "assign");
	ok(strchr(a.fid, ',') && strstr(a.url, "127.0.0.1:"), "fid %s at %s", a.fid, a.url);
	vid = (uint32_t)strtoul(a.fid, NULL, 10);
	{
		struct blob_assign_params p = {.replication = "0x1"};
		is_int(blob_client_assign(bc, &p, &a), WFS_EINVAL, "bad replication is refused");
		p.replication = "200";
		is_int(blob_client_assign(bc, &p, &a), WFS_ENOSPC,
		       "impossible placement: no room for it");
	}

	blob_client_get_stats(bc, &st0);
	is_int(blob_client_lookup(bc, vid, false, &locs, &n), WFS_OK, "lookup");
	ok(n == 1 && strstr(locs[0].url, "127.0.0.1:"), "one location");
	free(locs);
	is_int(blob_client_lookup(bc, vid, false, &locs, &n), WFS_OK, "lookup again");
	free(locs);
	blob_client_get_stats(bc, &st);
	ok(st.lookups == st0.lookups + 1 && st.cache_hits == st0.cache_hits + 1,
	   "second lookup from the cache (%" PRIu64 " lookups)", st.lookups - st0.lookups);
	blob_client_invalidate(bc, vid);
	is_int(blob_client_lookup(bc, vid, false, &locs, &n), WFS_OK, "lookup after invalidate");
	free(locs);
	blob_client_get_stats(bc, &st);
	is_int(st.lookups, st0.lookups + 2, "invalidation sends the next lookup to the master");
	is_int(blob_client_lookup(bc, 99999, false, &locs, &n), WFS_ENOENT, "unknown volume");

	/* expiry: a 50 ms location TTL */
	shortlived = blob_client_new(mserver, &so);
	blob_client_lookup(shortlived, vid, false, &locs, &n);
	free(locs);
	blob_client_lookup(shortlived, vid, false, &locs, &n);
	free(locs);
	usleep(120 * 1000);
	blob_client_lookup(shortlived, vid, false, &locs, &n);
	free(locs);
	blob_client_get_stats(shortlived, &st);
	ok(st.lookups == 2 && st.cache_hits == 1,
	   "an expired location is looked up again "
	   "(%" PRIu64 " lookups, %" PRIu64 " hits)",
	   st.lookups, st.cache_hits);
	blob_client_free(shortlived);

	{
		/* upload, read, delete one blob by hand */
		char *fid = NULL, etag[BLOB_ETAG_MAX];
		buf out = BUF_INIT;
		is_int(blob_client_save(bc, NULL, NULL, "hello world", 11, &fid, etag), WFS_OK,
		       "save a blob");
		ok(etag[0] != '\0', "etag %s", etag);
		is_int(blob_client_read(bc, fid, 6, 5, 0, &out), WFS_OK, "ranged read");
		ok(out.len == 5 && !memcmp(out.data, "world", 5), "range content");
		buf_reset(&out);
		is_int(blob_client_read(bc, fid, 0, 0, 5, &out), WFS_ETOOBIG,
		       "whole read over max");
		is_int(blob_client_read(bc, fid, 0, 0, 100, &out), WFS_OK, "whole read");
		ok(out.len == 11 && !memcmp(out.data, "hello world", 11), "whole content");
		is_int(blob_client_delete(bc, fid), WFS_OK, "delete");
		is_int(blob_client_delete(bc, fid), WFS_OK, "delete again is fine");
		buf_reset(&out);
		is_int(blob_client_read(bc, fid, 0, 0, 100, &out), WFS_ENOENT, "deleted blob 404s");
		is_int(blob_client_read(bc, "junk", 0, 0, 100, &out), WFS_EINVAL, "bad fid");
		buf_free(&out);
		free(fid);
	}
}

static void test_sizes(blob_client *bc)
{
	const uint64_t cs = 64 * KiB;
	const uint64_t sizes[] = {0, 1, cs - 1, cs, cs + 1, cs * 7 / 2};
	const size_t want_chunks[] = {0, 1, 1, 1, 2, 4};
	struct chunk_writer_opts o = {.chunk_size = cs, .max_in_flight = 3};

	for (size_t s = 0; s < ARRAY_LEN(sizes); s++) {
		uint64_t size = sizes[s];
		uint8_t *model = xmalloc(size + 1);
		struct filer_chunk *c = NULL;
		size_t n = 0;
		bool layout = true, all = true;
		fill_random(model, size);
		ok(write_file(bc, &o, model, size, &c, &n) == WFS_OK, "write %" PRIu64 " bytes",
		   size);
		is_int(n, want_chunks[s], "chunk count");
		for (size_t i = 0; i < n; i++) {
			layout &= c[i].offset == i * cs && c[i].size == MIN(cs, size - i * cs) &&
				  c[i].mtime_ns > 0 && c[i].etag && *c[i].etag && c[i].fid &&
				  !c[i].is_manifest;
		}
		ok(layout, "chunks in offset order with sizes, mtimes and etags");
		for (size_t i = 0; i < n && !layout; i++)
			diag("chunk %zu: %s off %" PRIu64 " size %" PRIu64 " mtime %" PRId64
			     " etag %s",
			     i, c[i].fid, c[i].offset, c[i].size, c[i].mtime_ns,
			     c[i].etag ? c[i].etag : "(null)");
		ok(read_matches(bc, c, n, size, model, 0, size), "whole read of %" PRIu64, size);
		ok(read_matches(bc, c, n, size, model, 0, UINT64_MAX), "open-ended read");
		for (int k = 0; k < 40 && size; k++) {
			uint64_t off = rnd() % size, len = 1 + rnd() % (size - off + 10);
			all &= read_matches(bc, c, n, size, model, off, len);
		}
		ok(all, "40 random ranges of %" PRIu64, size);
		ok(read_matches(bc, c, n, size, model, size, 10), "read at the end is empty");
		filer_chunks_free(c, n);
		free(model);
	}
}

static void test_inline(blob_client *bc)
{
	struct chunk_writer_opts o = {.chunk_size = 64 * KiB, .inline_max = 4096};
	uint8_t data[5000];
	const uint8_t *p;
	size_t len, n;
	struct filer_chunk *c;
	wfs_err err;
	chunk_writer *cw;

	fill_random(data, sizeof(data));
	cw = chunk_writer_new(bc, &o, &err);
	chunk_writer_write(cw, data, 100);
	chunk_writer_write(cw, data + 100, 3996);
	is_int(chunk_writer_finish(cw, &c, &n), WFS_OK, "finish a 4096-byte stream");
	ok(n == 0 && !c, "no chunks");
	ok(chunk_writer_inline(cw, &p, &len) && len == 4096 && !memcmp(p, data, 4096),
	   "kept inline");
	is_int(chunk_writer_write(cw, data, 1), WFS_EINVAL, "no writes after finish");
	chunk_writer_free(cw);

	cw = chunk_writer_new(bc, &o, &err);
	chunk_writer_write(cw, data, 4097);
	is_int(chunk_writer_finish(cw, &c, &n), WFS_OK, "finish a 4097-byte stream");
	ok(n == 1 && !chunk_writer_inline(cw, &p, &len), "over the threshold: uploaded");
	ok(read_matches(bc, c, n, 4097, data, 0, 4097), "read back");
	chunk_writer_free(cw);
	filer_chunks_free(c, n);

	cw = chunk_writer_new(bc, &o, &err);
	is_int(chunk_writer_finish(cw, &c, &n), WFS_OK, "empty stream");
	ok(n == 0 && chunk_writer_inline(cw, &p, &len) && len == 0, "empty is inline");
	chunk_writer_free(cw);

	o.chunk_size = 2 * CHUNK_SIZE_MAX;
	ok(!chunk_writer_new(bc, &o, &err) && err == WFS_EINVAL, "absurd chunk size refused");
	o.chunk_size = 0;
	o.max_in_flight = 1000;
	ok(!chunk_writer_new(bc, &o, &err) && err == WFS_EINVAL, "absurd parallelism refused");
}

/* Appends list b to list a (ownership moves). */
static void chunks_concat(struct filer_chunk **a, size_t *na, struct filer_chunk *b, size_t nb)
{
	*a = xrealloc(*a, (*na + nb + 1) * sizeof(**a));
	if (nb)
		memcpy(*a + *na, b, nb * sizeof(*b));
	*na += nb;
	free(b);
}

static void test_overwrite(blob_client *bc)
{
	const uint64_t cs = 64 * KiB, size1 = cs * 7 / 2;
	const uint64_t off2 = cs / 2 + 100, size2 = cs * 13 / 10;
	const uint64_t off3 = size1 + 10000, size3 = 3000; /* past the end: leaves a hole */
	const uint64_t total = off3 + size3;
	uint8_t *model = xcalloc(1, total), *d2 = xmalloc(size2), *d3 = xmalloc(size3);
	struct filer_chunk *all = NULL, *c;
	size_t nall = 0, n;
	struct chunk_writer_opts o = {.chunk_size = cs};
	bool ok_ranges = true;

	fill_random(model, size1);
	fill_random(d2, size2);
	fill_random(d3, size3);
	is_int(write_file(bc, &o, model, size1, &c, &n), WFS_OK, "first write");
	chunks_concat(&all, &nall, c, n);
	o.offset = off2;
	is_int(write_file(bc, &o, d2, size2, &c, &n), WFS_OK, "overwrite at an offset");
	ok(n == 2 && c[0].offset == off2 && c[1].offset == off2 + cs, "chunks carry the offset");
	chunks_concat(&all, &nall, c, n);
	memcpy(model + off2, d2, size2);
	o.offset = off3;
	is_int(write_file(bc, &o, d3, size3, &c, &n), WFS_OK, "write past the end");
	chunks_concat(&all, &nall, c, n);
	memcpy(model + off3, d3, size3);

	ok(read_matches(bc, all, nall, total, model, 0, total), "newest wins, hole reads zeros");
	for (int k = 0; k < 60; k++) {
		uint64_t off = rnd() % total, len = 1 + rnd() % (total - off);
		ok_ranges &= read_matches(bc, all, nall, total, model, off, len);
	}
	ok(ok_ranges, "60 random ranges over the overwritten file");
	ok(read_matches(bc, all, nall, size1 + 5000, model, size1 - 10, 10000),
	   "file size shorter than the chunks clips the read and zeros the gap");
	{
		/* the overwrite's chunks reversed in the list still win by mtime */
		struct filer_chunk tmp = all[0];
		memmove(all, all + 1, (nall - 1) * sizeof(*all));
		all[nall - 1] = tmp;
		ok(read_matches(bc, all, nall, total, model, 0, total), "order-independent");
	}
	{
		/* a file size beyond every chunk: zeros at the tail */
		uint8_t *big = xcalloc(1, total + 50000);
		memcpy(big, model, total);
		ok(read_matches(bc, all, nall, total + 50000, big, 0, total + 50000),
		   "sparse tail reads zeros");
		free(big);
	}
	filer_chunks_free(all, nall);
	free(model);
	free(d2);
	free(d3);
}

static int vol_get_status(const char *fid)
{
	struct http_result r;
	char url[128];
	int status;
	/* any server: a volume held elsewhere is redirected; count a redirect as present */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/%s", vs_port[0], fid);
	http_result_init(&r);
	if (http_get(url, 5000, &r))
		status = -1;
	else
		status = r.status;
	http_result_free(&r);
	if (status == 302) {
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/%s", vs_port[1], fid);
		http_result_init(&r);
		status = http_get(url, 5000, &r) ? -1 : r.status;
		http_result_free(&r);
	}
	return status;
}

struct seen {
	pthread_mutex_t mu;
	char *fids[8];
	size_t n;
};

static void on_uploaded(void *arg, const char *fid)
{
	struct seen *s = arg;
	pthread_mutex_lock(&s->mu);
	if (s->n < 8)
		s->fids[s->n] = xstrdup(fid);
	s->n++;
	pthread_mutex_unlock(&s->mu);
}

static void test_abort(blob_client *bc)
{
	struct seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
	struct chunk_writer_opts o = {.chunk_size = 64 * KiB,
				      .max_in_flight = 2,
				      .on_uploaded = on_uploaded,
				      .on_uploaded_arg = &seen};
	size_t len = 3 * 64 * KiB + 500, n = 0;
	uint8_t *data = xmalloc(len);
	struct filer_chunk *up = NULL;
	wfs_err err;
	chunk_writer *cw = chunk_writer_new(bc, &o, &err);
	bool before = true, after = true;
	buf out = BUF_INIT;

	fill_random(data, len);
	is_int(chunk_writer_write(cw, data, len), WFS_OK, "write 3.x chunks");
	chunk_writer_uploaded(cw, &up, &n);
	is_int(n, 3, "three full chunks uploaded, the tail still buffered");
	is_int(seen.n, 3, "on_uploaded called once per stored chunk");
	for (size_t i = 0; i < n && i < seen.n; i++) {
		bool found = false;
		for (size_t k = 0; k < seen.n; k++)
			found |= !strcmp(seen.fids[k], up[i].fid);
		ok(found, "on_uploaded named chunk %zu", i);
	}
	for (size_t i = 0; i < seen.n && i < 8; i++)
		free(seen.fids[i]);
	o.on_uploaded = NULL; /* the rest of the test does not watch */
	for (size_t i = 0; i < n; i++)
		before &= vol_get_status(up[i].fid) == 200;
	ok(before, "uploaded chunks readable on the volume server");
	is_int(chunk_writer_abort(cw), WFS_OK, "abort");
	for (size_t i = 0; i < n; i++) {
		after &= vol_get_status(up[i].fid) == 404;
		after &= blob_client_read(bc, up[i].fid, 0, 0, len, &out) == WFS_ENOENT;
	}
	ok(after, "aborted chunks are gone (404)");
	is_int(chunk_writer_write(cw, data, 1), WFS_EINVAL, "no writes after abort");
	chunk_writer_free(cw);
	filer_chunks_free(up, n);

	/* freeing an unfinished writer aborts too */
	cw = chunk_writer_new(bc, &o, &err);
	chunk_writer_write(cw, data, len);
	chunk_writer_uploaded(cw, &up, &n);
	chunk_writer_free(cw);
	after = n == 3;
	for (size_t i = 0; i < n; i++)
		after &= vol_get_status(up[i].fid) == 404;
	ok(after, "free without finish deletes the uploaded chunks");
	filer_chunks_free(up, n);
	buf_free(&out);
	free(data);
}

static void test_manifest(blob_client *bc)
{
	const uint64_t cs = 4 * KiB;
	size_t len = 31 * cs + 123, n, nm, nr;
	uint8_t *data = xmalloc(len);
	struct filer_chunk *c, *m = NULL, *r = NULL;
	struct chunk_writer_opts o = {.chunk_size = cs, .max_in_flight = 8};
	bool all = true;

	fill_random(data, len);
	is_int(write_file(bc, &o, data, len, &c, &n), WFS_OK, "write 32 small chunks");
	is_int(n, 32, "32 chunks");
	is_int(chunk_manifestize(bc, &o, c, n, 10, &m, &nm), WFS_OK, "manifestize by 10");
	ok(nm == 5 && m[0].is_manifest && m[1].is_manifest && m[2].is_manifest &&
		   !m[3].is_manifest && !m[4].is_manifest && m[0].offset == 0 &&
		   m[0].size == 10 * cs,
	   "3 manifests and 2 plain chunks");
	ok(read_matches(bc, m, nm, len, data, 0, len), "read through manifests");
	for (int k = 0; k < 20; k++) {
		uint64_t off = rnd() % len;
		all &= read_matches(bc, m, nm, len, data, off, 1 + rnd() % (len - off));
	}
	ok(all, "random ranges through manifests");
	is_int(chunk_resolve_manifests(bc, m, nm, &r, &nr), WFS_OK, "resolve");
	ok(nr == 32 && !strcmp(r[31].fid, c[31].fid) && !strcmp(r[5].fid, c[5].fid),
	   "resolution gives the original list");
	{
		/* a manifest whose blob is gone fails the read instead of returning zeros */
		buf out = BUF_INIT;
		blob_client_delete(bc, m[1].fid);
		ok(chunk_read(bc, m, nm, len, 0, len, sink_buf, &out) == WFS_ENOENT,
		   "missing manifest blob: WFS_ENOENT");
		buf_free(&out);
	}
	filer_chunks_free(r, nr);
	filer_chunks_free(m, nm);
	filer_chunks_free(c, n);
	free(data);
}


/* Whether needle (n bytes) occurs in hay. */
static bool contains(const void *hay, size_t hn, const void *needle, size_t n)
{
	return n <= hn && memmem(hay, hn, needle, n) != NULL;
}

/*
 * -encryptVolumeData: sealed chunks read back byte-exact through every path
 * (whole, ranges, manifests), the stored blobs hold neither the plaintext nor
 * (for a sealed manifest) the members' ids and keys, and a damaged blob is an
 * error, never other bytes.
 */
static void test_sealed(blob_client *bc)
{
	const uint64_t cs = 4 * KiB;
	size_t len = 23 * cs + 777, n, nm, nr;
	uint8_t *data = xmalloc(len);
	struct filer_chunk *c, *m = NULL, *r = NULL;
	struct chunk_writer_opts o = {.chunk_size = cs, .max_in_flight = 8, .encrypt = true};
	buf raw = BUF_INIT, out = BUF_INIT;
	bool all = true, sealed = true, clear = false;

	fill_random(data, len);
	memcpy(data + cs - 5, "PLAINTEXT-MARKER", 16); /* across a chunk boundary */
	memcpy(data + 3 * cs + 9, "PLAINTEXT-MARKER", 16);
	is_int(write_file(bc, &o, data, len, &c, &n), WFS_OK, "write sealed chunks");
	is_int(n, 24, "24 chunks");
	for (size_t i = 0; i < n; i++) {
		sealed &= c[i].has_cipher_key && c[i].size == (i + 1 < n ? cs : 777);
		buf_reset(&raw);
		if (blob_client_read(bc, c[i].fid, 0, 0, CHUNK_SIZE_MAX, &raw) ||
		    raw.len != c[i].size + CHUNK_CIPHER_OVERHEAD ||
		    contains(raw.data, raw.len, data + c[i].offset, 64))
			clear = true;
	}
	ok(sealed, "every chunk has a key; sizes are the plaintext's");
	ok(!clear, "every blob is nonce+ciphertext+tag, without the plaintext");
	ok(read_matches(bc, c, n, len, data, 0, len), "sealed: whole read");
	for (int k = 0; k < 30; k++) {
		uint64_t off = rnd() % len;
		all &= read_matches(bc, c, n, len, data, off, 1 + rnd() % (len - off));
	}
	ok(all, "sealed: random ranges");

	is_int(chunk_manifestize(bc, &o, c, n, 10, &m, &nm), WFS_OK, "manifestize sealed chunks");
	ok(nm == 6 && m[0].is_manifest && m[0].has_cipher_key && m[1].has_cipher_key &&
		   !m[2].is_manifest,
	   "a manifest of sealed chunks is sealed with its own key");
	buf_reset(&raw);
	is_int(blob_client_read(bc, m[0].fid, 0, 0, CHUNK_SIZE_MAX, &raw), WFS_OK,
	       "the manifest blob");
	ok(!contains(raw.data, raw.len, c[0].fid, strlen(c[0].fid)) &&
		   !contains(raw.data, raw.len, c[0].cipher_key, FILER_CHUNK_KEY_LEN),
	   "the stored manifest shows no member id or key");
	ok(read_matches(bc, m, nm, len, data, 0, len), "read through sealed manifests");
	ok(read_matches(bc, m, nm, len, data, 5 * cs + 3, 12 * cs), "a range across manifests");
	is_int(chunk_resolve_manifests(bc, m, nm, &r, &nr), WFS_OK, "resolve sealed manifests");
	ok(nr == n && r[7].has_cipher_key &&
		   !memcmp(r[7].cipher_key, c[7].cipher_key, FILER_CHUNK_KEY_LEN),
	   "resolution keeps the members' keys");

	{
		/* a record with another key, or without its key, never yields the plaintext */
		struct filer_chunk bad = c[2];
		bad.offset = 0;
		bad.cipher_key[0] ^= 1;
		buf_reset(&out);
		is_int(chunk_read(bc, &bad, 1, cs, 0, cs, sink_buf, &out), WFS_ECORRUPT,
		       "wrong key: WFS_ECORRUPT");
		is_int(out.len, 0, "wrong key: no bytes");
		bad = c[2];
		bad.offset = 0;
		bad.has_cipher_key = false;
		buf_reset(&out);
		chunk_read(bc, &bad, 1, cs, 0, cs, sink_buf, &out);
		ok(!contains(out.data, out.len, data + 2 * cs, 64), "without the key: ciphertext");
	}
	buf_free(&raw);
	buf_free(&out);
	filer_chunks_free(r, nr);
	filer_chunks_free(m, nm);
	filer_chunks_free(c, n);
	free(data);
}

/* Deterministic content by offset, so a big file needs no model in memory. */
static uint8_t gen_byte(uint64_t seed, uint64_t off)
{
	uint64_t z = (seed << 40 ^ off >> 3) + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint8_t)((z ^ (z >> 31)) >> ((off & 7) * 8));
}

static void gen_fill(uint64_t seed, uint64_t off, uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = gen_byte(seed, off + i);
}

struct check_sink {
	uint64_t seed, at;
	bool good;
};

static wfs_err sink_check(void *arg, const void *data, size_t len)
{
	struct check_sink *cs = arg;
	const uint8_t *p = data;
	for (size_t i = 0; i < len && cs->good; i += 4093)
		cs->good = p[i] == gen_byte(cs->seed, cs->at + i);
	if (len)
		cs->good &= p[len - 1] == gen_byte(cs->seed, cs->at + len - 1);
	cs->at += len;
	return WFS_OK;
}

static void test_big(blob_client *bc)
{
	const uint64_t cs = 4 * MiB, total = 256 * MiB;
	struct chunk_writer_opts o = {.chunk_size = cs, .max_in_flight = 4};
	uint8_t *piece = xmalloc(1 * MiB + 7);
	struct filer_chunk *c = NULL;
	size_t n = 0, peak;
	uint64_t at = 0;
	wfs_err err = WFS_OK;
	chunk_writer *cw = chunk_writer_new(bc, &o, &err);
	struct check_sink ck = {7, 0, true};

	while (at < total && !err) {
		size_t k = (size_t)MIN(total - at, 1 * MiB + 7);
		gen_fill(7, at, piece, k);
		err = chunk_writer_write(cw, piece, k);
		at += k;
	}
	is_int(err, WFS_OK, "256 MiB written");
	is_int(chunk_writer_finish(cw, &c, &n), WFS_OK, "finished");
	is_int(n, 64, "64 chunks of 4 MiB");
	peak = chunk_writer_mem_peak(cw);
	ok(peak <= 5 * cs && peak >= cs, "writer memory peak %zu <= (4 + 1) * 4 MiB", peak);
	chunk_writer_free(cw);
	is_int(chunk_read(bc, c, n, total, 0, total, sink_check, &ck), WFS_OK, "read 256 MiB");
	ok(ck.good && ck.at == total, "content checked (%" PRIu64 " bytes)", ck.at);
	ck.at = 100 * MiB + 12345;
	ck.good = true;
	is_int(chunk_read(bc, c, n, total, ck.at, 9 * MiB, sink_check, &ck), WFS_OK,
	       "ranged read across chunks");
	ok(ck.good && ck.at == 109 * MiB + 12345, "range content");
	{
		const char **fids = xcalloc(n, sizeof(*fids));
		for (size_t i = 0; i < n; i++)
			fids[i] = c[i].fid;
		is_int(blob_client_delete_many(bc, fids, n), WFS_OK,
		       "delete the big file's chunks");
		free(fids);
	}
	filer_chunks_free(c, n);
	free(piece);
}

struct thread_arg {
	blob_client *bc;
	int id;
	bool good;
};

static void *writer_thread(void *p)
{
	struct thread_arg *ta = p;
	size_t len = 1 * MiB + 333 * (size_t)ta->id, n = 0;
	uint8_t *data = xmalloc(len);
	struct filer_chunk *c = NULL;
	struct chunk_writer_opts o = {.chunk_size = 64 * KiB, .max_in_flight = 2};
	struct check_sink ck = {100 + (uint64_t)ta->id, 0, true};
	gen_fill(ck.seed, 0, data, len);
	ta->good = write_file(ta->bc, &o, data, len, &c, &n) == WFS_OK &&
		   n == (len + o.chunk_size - 1) / o.chunk_size &&
		   chunk_read(ta->bc, c, n, len, 0, len, sink_check, &ck) == WFS_OK && ck.good &&
		   ck.at == len;
	filer_chunks_free(c, n);
	free(data);
	return NULL;
}

static void test_threads(blob_client *bc)
{
	pthread_t t[6];
	struct thread_arg a[6];
	bool all = true;
	for (int i = 0; i < 6; i++) {
		a[i].bc = bc;
		a[i].id = i;
		pthread_create(&t[i], NULL, writer_thread, &a[i]);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		all &= a[i].good;
	}
	ok(all, "6 threads write and read back through one client");
}

static void test_failover(blob_client *bc)
{
	const uint64_t cs = 64 * KiB;
	size_t len = 41 * cs / 2, n = 0; /* 21 chunks: some read from each replica */
	uint8_t *data = xmalloc(len);
	struct filer_chunk *c = NULL;
	struct chunk_writer_opts o = {.chunk_size = cs, .replication = "001"};
	struct blob_client_stats st0, st;
	buf out = BUF_INIT;
	uint64_t t0;
	wfs_err err;

	fill_random(data, len);
	is_int(write_file(bc, &o, data, len, &c, &n), WFS_OK, "write with replication 001");
	ok(read_matches(bc, c, n, len, data, 0, len), "read with both replicas up");
	{
		struct blob_location *locs = NULL;
		size_t nl = 0;
		uint32_t vid = (uint32_t)strtoul(c[0].fid, NULL, 10);
		blob_client_lookup(bc, vid, true, &locs, &nl);
		is_int(nl, 2, "two replicas");
		free(locs);
	}

	blob_client_get_stats(bc, &st0);
	volume_server_stop(vs[0]);
	vs[0] = NULL;
	ok(read_matches(bc, c, n, len, data, 0, len), "read with one replica stopped");
	blob_client_get_stats(bc, &st);
	ok(st.read_failovers > st0.read_failovers && st.invalidations > st0.invalidations,
	   "failed over (%" PRIu64 ") and invalidated the cache (%" PRIu64 ")",
	   st.read_failovers - st0.read_failovers, st.invalidations - st0.invalidations);

	{
		/* the master still assigns to the stopped server: uploads move elsewhere */
		size_t len2 = 20 * cs, n2 = 0;
		uint8_t *d2 = xmalloc(len2);
		struct filer_chunk *c2 = NULL;
		struct chunk_writer_opts w = {.chunk_size = cs, .max_in_flight = 4};
		fill_random(d2, len2);
		is_int(write_file(bc, &w, d2, len2, &c2, &n2), WFS_OK,
		       "20 chunks written with one of two servers stopped");
		ok(n2 == 20 && read_matches(bc, c2, n2, len2, d2, 0, len2), "and read back");
		blob_client_get_stats(bc, &st);
		diag("upload retries %" PRIu64 ", assignments skipped %" PRIu64,
		     st.upload_retries - st0.upload_retries, st.down_skips - st0.down_skips);
		filer_chunks_free(c2, n2);
		free(d2);
	}

	volume_server_stop(vs[1]);
	vs[1] = NULL;
	t0 = time_mono_ns();
	err = chunk_read(bc, c, n, len, 0, len, sink_buf, &out);
	is_int(err, WFS_EUNAVAIL, "every replica stopped: WFS_EUNAVAIL");
	ok(time_mono_ns() - t0 < 10000000000ull, "failed in %.2f s, not hanging",
	   (double)(time_mono_ns() - t0) / 1e9);
	{
		struct chunk_writer_opts w = {.chunk_size = cs};
		struct filer_chunk *c2 = NULL;
		size_t n2 = 0;
		t0 = time_mono_ns();
		err = write_file(bc, &w, data, len, &c2, &n2);
		ok(err == WFS_EUNAVAIL || err == WFS_ETIMEDOUT, "writes fail too: %s",
		   wfs_strerror(err));
		ok(time_mono_ns() - t0 < 30000000000ull, "write failed in %.2f s",
		   (double)(time_mono_ns() - t0) / 1e9);
	}
	buf_free(&out);
	filer_chunks_free(c, n);
	free(data);
}

int main(void)
{
	struct master_opts mo;
	wfs_err err;
	blob_client *bc;
	struct blob_client_opts bo = {.timeout_ms = 5000, .threads = 8};

	if (!mkdtemp(dir))
		return 1;
	log_set_level(LOG_LEVEL_ERROR);
	http_client_global_init();
	master_opts_default(&mo);
	mo.port = 0;
	mo.mdir = dir;
	mo.threads = 2;
	mo.pulse_seconds = 1;
	master = master_start(&mo, &err);
	ok(master != NULL, "master starts");
	if (!master)
		return done_testing();
	snprintf(mserver, sizeof(mserver), "127.0.0.1:%d", master_port(master));
	for (int i = 0; i < 2; i++) {
		vs[i] = start_volume(i, 0);
		ok(vs[i] != NULL, "volume server %d starts", i);
		if (!vs[i])
			return done_testing();
		vs_port[i] = volume_server_port(vs[i]);
	}
	bc = blob_client_new(mserver, &bo);

	test_master_client(bc);
	test_sizes(bc);
	test_inline(bc);
	test_overwrite(bc);
	test_abort(bc);
	test_manifest(bc);
	test_sealed(bc);
	test_big(bc);
	test_threads(bc);
	test_failover(bc);

	blob_client_free(bc);
	for (int i = 0; i < 2; i++)
		volume_server_stop(vs[i]);
	master_stop(master);
	{
		char *cmd = xasprintf("rm -rf %s", dir);
		if (system(cmd) != 0)
			diag("could not remove %s", dir);
		free(cmd);
	}
	return done_testing();
}
