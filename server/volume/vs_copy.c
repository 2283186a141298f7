/*
 * Volume administration: the primitives volume.copy / volume.move /
 * volume.fix.replication / volume.check.disk and the master's repair build
 * on. docs/internal-protocol.md ("Volume administration") gives every
 * request and answer exactly.
 *
 * DESIGN
 * - Source side: status, file, tail, needles and needle_raw read a
 *   volume_snapshot: the .dat and .idx sizes taken together (so an .idx
 *   prefix names only needles inside the .dat prefix) plus dups of both
 *   files, which keep showing the files as they were even if a vacuum swaps
 *   them meanwhile. A caller passes the compaction revision its status showed
 *   (revision=); once a vacuum changed it the offsets mean nothing any more:
 *   409. File contents are streamed from the dups in pieces
 *   (vs_stream_file), never held whole.
 * - Target side (copy): a pool job (it waits for the network and the disk
 *   for as long as the copy takes) pulls the status, the .dat prefix and the
 *   .idx prefix into <base>.dat.copying / <base>.idx.copying in the chosen
 *   directory, then asks for the tail (the raw records appended after the
 *   .dat prefix), checks each record, appends it and its .idx entry, and
 *   repeats until a tail is empty. Then fsync, rename .idx then .dat (the
 *   commit point: a .dat is a volume) and load. The temporary names never
 *   end in ".dat", so a copy cut off by kill -9 is never taken for a volume;
 *   the store removes them at the next start. The source only ever answers
 *   GETs: it is unchanged whatever happens.
 * - Copies in progress are listed (one per volume id per server: a second
 *   gets 409) with their bytes so far, shown by status while the volume is
 *   not loaded yet.
 */
#include "config.h"
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "http_client.h"
#include "json.h"
#include "log.h"
#include "needle_map.h"
#include "util.h"
#include "vs_int.h"

#define TAIL_ROUNDS_MAX 1000 /* a source written faster than it can be tailed */
#define OCTETS "application/octet-stream"

/* ---- copies in progress ---- */

struct copy_entry {
	struct volume_server *vs;
	uint32_t vid;
	char source[256];
	_Atomic uint64_t done, total; /* bytes received so far; of the files' prefixes */
	struct copy_entry *next;
};

static pthread_mutex_t copies_lock = PTHREAD_MUTEX_INITIALIZER;
static struct copy_entry *copies; /* protected by copies_lock */

static struct copy_entry *copy_find(struct volume_server *vs, uint32_t vid)
{
	for (struct copy_entry *c = copies; c; c = c->next)
		if (c->vs == vs && c->vid == vid)
			return c;
	return NULL;
}

/* Registers a copy of vid; NULL when one is already running. */
static struct copy_entry *copy_begin(struct volume_server *vs, uint32_t vid, const char *source)
{
	struct copy_entry *c = NULL;
	pthread_mutex_lock(&copies_lock);
	if (!copy_find(vs, vid)) {
		c = xcalloc(1, sizeof(*c));
		c->vs = vs;
		c->vid = vid;
		snprintf(c->source, sizeof(c->source), "%s", source);
		c->next = copies;
		copies = c;
	}
	pthread_mutex_unlock(&copies_lock);
	return c;
}

static void copy_end(struct copy_entry *c)
{
	pthread_mutex_lock(&copies_lock);
	for (struct copy_entry **p = &copies; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	pthread_mutex_unlock(&copies_lock);
	free(c);
}

/* Writes "copy": {...} for a copy of vid in progress; false if there is none. */
static bool copy_status(struct volume_server *vs, uint32_t vid, json_w *w)
{
	struct copy_entry *c;
	pthread_mutex_lock(&copies_lock);
	c = copy_find(vs, vid);
	if (c) {
		jw_key(w, "copy");
		jw_obj_begin(w);
		jw_kv_str(w, "source", c->source);
		jw_kv_u64(w, "bytesCopied", atomic_load(&c->done));
		jw_kv_u64(w, "bytesTotal", atomic_load(&c->total));
		jw_obj_end(w);
	}
	pthread_mutex_unlock(&copies_lock);
	return c != NULL;
}

/* ---- parameters ---- */

/* Reads an unsigned parameter; a missing required or malformed one answers 400. */
static bool query_u64(http_req *req, const char *name, bool required, uint64_t *out)
{
	const char *s = http_req_query(req, name);
	if (!s && !required)
		return true;
	if (!s || !parse_u64(s, out)) {
		http_resp_error(req, 400, "missing or invalid %s \"%s\"", name, s ? s : "");
		return false;
	}
	return true;
}

/* The snapshot of vid (with the files' dups when fds), or an answer (404, 409, 500) and false. */
static volume *take_snapshot(struct volume_server *vs, http_req *req, uint32_t vid, bool fds,
			     uint64_t key, struct volume_snapshot *s)
{
	uint64_t want = UINT64_MAX;
	char rev[16];
	volume *v;
	wfs_err err;

	if (!query_u64(req, "revision", false, &want))
		return NULL;
	v = volume_store_get(vs->store, vid);
	if (!v) {
		http_resp_error(req, 404, "volume %" PRIu32 " not found", vid);
		return NULL;
	}
	err = volume_snapshot(v, fds, key, s);
	if (err) {
		volume_unref(v);
		http_resp_error(req, wfs_err_http_status(err), "snapshot: %s", wfs_strerror(err));
		return NULL;
	}
	if (want != UINT64_MAX && want != s->revision) {
		volume_snapshot_close(s);
		volume_unref(v);
		http_resp_error(req, 409,
				"volume %" PRIu32 " was compacted: revision %u, not %" PRIu64, vid,
				s->revision, want);
		return NULL;
	}
	snprintf(rev, sizeof(rev), "%u", s->revision);
	http_resp_header(req, "X-Volume-Revision", rev);
	return v;
}

/* ---- status, file, tail ---- */

static void handle_status(struct volume_server *vs, http_req *req, uint32_t vid)
{
	struct volume_snapshot s;
	struct volume_info in;
	char rp[8], ttl[16];
	buf b = BUF_INIT;
	json_w *w = jw_new(&b, false);
	volume *v = volume_store_get(vs->store, vid);

	jw_obj_begin(w);
	jw_kv_u64(w, "volume", vid);
	if (!v || volume_snapshot(v, false, 0, &s)) {
		bool copying = copy_status(vs, vid, w);
		jw_kv_str(w, "error", copying ? "volume is being copied in" : "volume not found");
		jw_obj_end(w);
		jw_free(w);
		http_resp_send_json(req, 404, &b);
		buf_free(&b);
		volume_unref(v);
		return;
	}
	volume_get_info(v, &in);
	replica_placement_format(&in.rp, rp);
	ttl_format(&in.ttl, ttl);
	jw_kv_str(w, "collection", in.collection);
	jw_kv_str(w, "replication", rp);
	jw_kv_str(w, "ttl", ttl);
	jw_kv_bool(w, "readOnly", in.read_only);
	jw_kv_bool(w, "diskFull", in.disk_full);
	jw_kv_u64(w, "compactRevision", s.revision);
	jw_kv_u64(w, "version", in.version);
	jw_kv_u64(w, "datSize", s.dat_size);
	jw_kv_u64(w, "idxSize", s.idx_size);
	jw_kv_u64(w, "fileCount", in.file_count);
	jw_kv_u64(w, "deleteCount", in.delete_count);
	jw_kv_u64(w, "deletedBytes", in.deleted_bytes);
	jw_kv_u64(w, "liveCount", in.live_count);
	jw_kv_u64(w, "lastAppendAtNs", s.last_append_ns);
	jw_obj_end(w);
	jw_free(w);
	http_resp_send_json(req, 200, &b);
	buf_free(&b);
	volume_unref(v);
}

static void handle_file(struct volume_server *vs, http_req *req, uint32_t vid)
{
	const char *ext = http_req_query(req, "ext");
	struct volume_snapshot s;
	bool dat = ext && !strcmp(ext, "dat");
	uint64_t size = 0, have;
	volume *v;

	if (!dat && !(ext && !strcmp(ext, "idx"))) {
		http_resp_error(req, 400, "ext must be dat or idx, not \"%s\"", ext ? ext : "");
		return;
	}
	if (!query_u64(req, "size", true, &size))
		return;
	v = take_snapshot(vs, req, vid, true, 0, &s);
	if (!v)
		return;
	have = dat ? s.dat_size : s.idx_size;
	if (size > have || (!dat && size % IDX_ENTRY_SIZE)) {
		http_resp_error(req, 400, "size %" PRIu64 " is not a prefix of the .%s (%" PRIu64
				" bytes)", size, ext, have);
	} else {
		vs_stream_file(vs, req, dat ? s.dat_fd : s.idx_fd, 0, size, OCTETS);
		if (dat)
			s.dat_fd = -1;
		else
			s.idx_fd = -1;
	}
	volume_snapshot_close(&s);
	volume_unref(v);
}

static void handle_tail(struct volume_server *vs, http_req *req, uint32_t vid)
{
	struct volume_snapshot s;
	uint64_t since = 0;
	char end[24];
	volume *v;

	if (!query_u64(req, "since", true, &since))
		return;
	v = take_snapshot(vs, req, vid, true, 0, &s);
	if (!v)
		return;
	if (since < s.data_start || since > s.dat_size || since % NEEDLE_ALIGN) {
		http_resp_error(req, 400, "since %" PRIu64 " is not a needle boundary of the .dat"
				" (%" PRIu64 " bytes)", since, s.dat_size);
	} else {
		/* dat_size always ends a whole record: only complete appends move it */
		snprintf(end, sizeof(end), "%" PRIu64, s.dat_size);
		http_resp_header(req, "X-Volume-Dat-Size", end);
		vs_stream_file(vs, req, s.dat_fd, since, s.dat_size - since, OCTETS);
		s.dat_fd = -1;
	}
	volume_snapshot_close(&s);
	volume_unref(v);
}

/* ---- needles ---- */

/* Runs job j (malloc'ed, holding snapshot s) on the read pool, or answers 503 and frees it. */
static void submit_read(struct volume_server *vs, http_req *req, pool_fn fn, void *j,
			struct volume_snapshot *s)
{
	if (!vs_submit_read(vs, fn, j)) {
		volume_snapshot_close(s);
		free(j);
		http_resp_error(req, 503, "server is stopping");
	}
}

struct idx_rec {
	uint64_t key;
	uint32_t uoff, size;
	uint64_t pos; /* entry number: later wins */
};

static int idx_rec_cmp(const void *a, const void *b)
{
	const struct idx_rec *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Reads the .idx prefix of s; the entries in file order. */
static wfs_err read_idx(const struct volume_snapshot *s, struct idx_rec **out, size_t *n)
{
	enum { CHUNK = 1 << 20 };
	uint8_t *chunk = xmalloc(CHUNK);
	size_t cnt = (size_t)(s->idx_size / IDX_ENTRY_SIZE);
	struct idx_rec *r = xmalloc((cnt ? cnt : 1) * sizeof(*r));
	wfs_err err = WFS_OK;

	for (uint64_t pos = 0; !err && pos < s->idx_size;) {
		size_t len = (size_t)MIN((uint64_t)CHUNK, s->idx_size - pos);
		ssize_t got = pread(s->idx_fd, chunk, len, (off_t)pos);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0 || (size_t)got % IDX_ENTRY_SIZE) {
			err = WFS_EIO;
			break;
		}
		for (size_t i = 0; i < (size_t)got; i += IDX_ENTRY_SIZE) {
			size_t k = (size_t)((pos + i) / IDX_ENTRY_SIZE);
			idx_entry_decode(chunk + i, &r[k].key, &r[k].uoff, &r[k].size);
			r[k].pos = k;
		}
		pos += (uint64_t)got;
	}
	free(chunk);
	if (err) {
		free(r);
		return err;
	}
	*out = r;
	*n = cnt;
	return WFS_OK;
}

/* Cookie and append time of the record an .idx entry names (0, 0 when there is none). */
static void record_stamp(int fd, const struct idx_rec *r, uint32_t *cookie, uint64_t *ts)
{
	uint8_t h[NEEDLE_HEADER_SIZE], t[8];
	uint64_t off = (uint64_t)r->uoff * NEEDLE_ALIGN, key;
	uint32_t size = r->size == NEEDLE_TOMBSTONE ? 0 : r->size;

	*cookie = 0;
	*ts = 0;
	if (!r->uoff || pread(fd, h, sizeof(h), (off_t)off) != (ssize_t)sizeof(h))
		return;
	needle_parse_header(h, cookie, &key, &size);
	size = r->size == NEEDLE_TOMBSTONE ? 0 : r->size;
	if (pread(fd, t, sizeof(t), (off_t)(off + NEEDLE_HEADER_SIZE + size + 4)) ==
	    (ssize_t)sizeof(t))
		*ts = get_be64(t);
}

struct needles_job {
	struct volume_server *vs;
	http_req *req;
	struct volume_snapshot s;
	buf out;
	wfs_err err;
};

static void needles_done(http_req *req, void *arg)
{
	struct needles_job *j = arg;
	if (j->err) {
		http_resp_error(req, wfs_err_http_status(j->err), "reading the index: %s",
				wfs_strerror(j->err));
	} else {
		http_resp_header(req, "Content-Type", "application/x-ndjson");
		http_resp_send(req, 200, j->out.data, j->out.len);
	}
	volume_snapshot_close(&j->s);
	buf_free(&j->out);
	free(j);
}

/* One NDJSON line per id, its latest state. Read pool. */
static void needles_run(void *arg)
{
	struct needles_job *j = arg;
	struct idx_rec *r = NULL;
	size_t n = 0;

	j->err = read_idx(&j->s, &r, &n);
	if (!j->err)
		qsort(r, n, sizeof(*r), idx_rec_cmp);
	for (size_t i = 0; !j->err && i < n; i++) {
		bool tomb = r[i].size == NEEDLE_TOMBSTONE || r[i].size == 0;
		uint32_t cookie;
		uint64_t ts;
		if (i + 1 < n && r[i + 1].key == r[i].key)
			continue;
		record_stamp(j->s.dat_fd, &r[i], &cookie, &ts);
		buf_printf(&j->out,
			   "{\"id\":%" PRIu64 ",\"cookie\":%" PRIu32 ",\"size\":%" PRIu32
			   ",\"offset\":%" PRIu64 ",\"appendAtNs\":%" PRIu64 ",\"deleted\":%s}\n",
			   r[i].key, cookie, tomb ? 0 : r[i].size, (uint64_t)r[i].uoff * NEEDLE_ALIGN,
			   ts, tomb ? "true" : "false");
	}
	free(r);
	http_req_defer(j->req, needles_done, j);
}

static void handle_needles(struct volume_server *vs, http_req *req, uint32_t vid)
{
	struct needles_job *j = xcalloc(1, sizeof(*j));
	volume *v = take_snapshot(vs, req, vid, true, 0, &j->s);
	if (!v) {
		free(j);
		return;
	}
	volume_unref(v);
	j->vs = vs;
	j->req = req;
	submit_read(vs, req, needles_run, j, &j->s);
}

/* ---- needle_raw ---- */

/* Parses id= (decimal, as /admin/volume/needles lists it); answers 400 when bad. */
static bool query_key(http_req *req, uint64_t *key)
{
	if (!query_u64(req, "id", true, key))
		return false;
	if (*key == 0) {
		http_resp_error(req, 400, "id 0 is not a needle");
		return false;
	}
	return true;
}

struct raw_get_job {
	struct volume_server *vs;
	http_req *req;
	struct volume_snapshot s;
	uint64_t key, off, len;
	bool found;
};

static void raw_get_done(http_req *req, void *arg)
{
	struct raw_get_job *j = arg;
	if (!j->found) {
		http_resp_error(req, 404, "needle %" PRIu64 " has no deletion record", j->key);
	} else {
		http_resp_header(req, "X-Needle-Deleted", "true");
		vs_stream_file(j->vs, req, j->s.dat_fd, j->off, j->len, OCTETS);
		j->s.dat_fd = -1;
	}
	volume_snapshot_close(&j->s);
	free(j);
}

/* Finds the deletion record of a deleted key: its last .idx entry. Read pool. */
static void raw_get_run(void *arg)
{
	struct raw_get_job *j = arg;
	struct idx_rec *r = NULL;
	size_t n = 0;

	if (!read_idx(&j->s, &r, &n))
		for (size_t i = n; i-- > 0;) {
			if (r[i].key != j->key)
				continue;
			j->found = r[i].uoff && (r[i].size == NEEDLE_TOMBSTONE || r[i].size == 0);
			j->off = (uint64_t)r[i].uoff * NEEDLE_ALIGN;
			j->len = needle_disk_size(0);
			break;
		}
	free(r);
	http_req_defer(j->req, raw_get_done, j);
}

static void handle_raw_get(struct volume_server *vs, http_req *req, uint32_t vid)
{
	struct raw_get_job *j;
	struct volume_snapshot s;
	uint64_t key;
	volume *v;

	if (!query_key(req, &key))
		return;
	v = take_snapshot(vs, req, vid, true, key, &s);
	if (!v)
		return;
	volume_unref(v);
	if (!s.found) {
		volume_snapshot_close(&s);
		http_resp_error(req, 404, "needle %" PRIu64 " not in volume %" PRIu32, key, vid);
		return;
	}
	if (!s.deleted) {
		http_resp_header(req, "X-Needle-Deleted", "false");
		vs_stream_file(vs, req, s.dat_fd, s.off, needle_disk_size(s.size), OCTETS);
		s.dat_fd = -1;
		volume_snapshot_close(&s);
		return;
	}
	j = xcalloc(1, sizeof(*j));
	j->vs = vs;
	j->req = req;
	j->s = s;
	j->key = key;
	submit_read(vs, req, raw_get_run, j, &j->s);
}

struct raw_put_job {
	struct volume_server *vs;
	http_req *req;
	volume *v;
	buf body; /* the record */
	bool unchanged;
	wfs_err err;
};

static void raw_put_done(http_req *req, void *arg)
{
	struct raw_put_job *j = arg;
	if (j->err == WFS_EINVAL) {
		http_resp_error(req, 400, "not a valid needle record (header, size or CRC)");
	} else if (j->err) {
		http_resp_error(req, wfs_err_http_status(j->err), "append: %s",
				wfs_strerror(j->err));
	} else {
		buf b = BUF_INIT;
		buf_printf(&b, "{\"written\":%s}", j->unchanged ? "false" : "true");
		http_resp_send_json(req, 200, &b);
		buf_free(&b);
	}
	buf_free(&j->body);
	free(j);
}

static void raw_put_run(void *arg)
{
	struct raw_put_job *j = arg;
	j->err = volume_append_raw(j->v, (const uint8_t *)j->body.data, j->body.len,
				   &j->unchanged);
	if (!j->err && !j->unchanged)
		log_debug("volume %" PRIu32 ": appended a raw record of %zu bytes", volume_id(j->v),
			  j->body.len);
	volume_unref(j->v);
	http_req_defer(j->req, raw_put_done, j);
}

static bool raw_put_data(http_req *req, const char *data, size_t len, void *arg)
{
	struct raw_put_job *j = arg;
	(void)req;
	buf_append(&j->body, data, len);
	return true;
}

/* The whole record is in (or the body failed: then it is answered here). Loop thread. */
static void raw_put_end(http_req *req, wfs_err err, void *arg)
{
	struct raw_put_job *j = arg;
	if (err || j->body.len == 0) {
		if (err == WFS_ETOOBIG)
			http_resp_error(req, 413, "a needle record over the upload limit");
		else
			http_resp_error(req, 400, err ? "body: %s" : "empty body: a needle record is needed",
					wfs_strerror(err));
	} else if (vs_submit(j->vs, raw_put_run, j)) {
		return;
	} else {
		http_resp_error(req, 503, "server is stopping");
	}
	volume_unref(j->v);
	buf_free(&j->body);
	free(j);
}

static void handle_raw_put(struct volume_server *vs, http_req *req, uint32_t vid)
{
	struct raw_put_job *j;
	volume *v = volume_store_get(vs->store, vid);

	if (!v) {
		http_resp_error(req, 404, "volume %" PRIu32 " not found", vid);
		return;
	}
	j = xcalloc(1, sizeof(*j));
	j->vs = vs;
	j->req = req;
	j->v = v;
	/* a record is its body plus at most 36 bytes of header, trailer and padding */
	http_req_stream_body(req, needle_disk_size((uint32_t)MIN(vs->file_size_limit + 65536,
								(uint64_t)NEEDLE_MAX_BODY)),
			     raw_put_data, raw_put_end, j);
}

/* ---- copy (target side) ---- */

struct fetch {
	struct volume_server *vs;
	_Atomic uint64_t *progress; /* may be NULL */
	int fd;
	uint64_t off, got;
	wfs_err werr;
};

static size_t fetch_write(char *data, size_t size, size_t n, void *arg)
{
	struct fetch *f = arg;
	size_t len = size * n, done = 0;
	while (done < len) {
		ssize_t r = pwrite(f->fd, data + done, len - done, (off_t)(f->off + f->got + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			f->werr = r < 0 ? wfs_err_from_errno(errno) : WFS_EIO;
			return 0; /* curl stops */
		}
		done += (size_t)r;
	}
	f->got += len;
	if (f->progress)
		atomic_fetch_add(f->progress, len);
	return len;
}

/* Stops the transfer once the server is stopping. */
static int fetch_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct fetch *f = arg;
	bool stopping;
	(void)dt, (void)dn, (void)ut, (void)un;
	pthread_rwlock_rdlock(&f->vs->pool_lock);
	stopping = f->vs->pool == NULL;
	pthread_rwlock_unlock(&f->vs->pool_lock);
	return stopping;
}

long vs_fetch_file(struct volume_server *vs, const char *source, const char *path, int fd,
		   uint64_t off, uint64_t limit_bps, _Atomic uint64_t *progress, uint64_t *got,
		   char *msg, size_t msglen)
{
	struct fetch f = {vs, progress, fd, off, 0, WFS_OK};
	char url[512];
	long status = 0;
	CURLcode rc;
	CURL *h = curl_easy_init();

	*got = 0;
	if (!h) {
		snprintf(msg, msglen, "curl_easy_init failed");
		return 0;
	}
	snprintf(url, sizeof(url), "http://%s%s", source, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, fetch_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &f);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, fetch_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, &f);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	/* a stalled source: less than 1 byte/s for 60 s */
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
	if (limit_bps)
		curl_easy_setopt(h, CURLOPT_MAX_RECV_SPEED_LARGE, (curl_off_t)limit_bps);
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	*got = f.got;
	if (f.werr) {
		snprintf(msg, msglen, "writing: %s", wfs_strerror(f.werr));
		return -(long)wfs_err_http_status(f.werr);
	}
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		snprintf(msg, msglen, "server is stopping");
		return 0;
	}
	if (rc != CURLE_OK && status < 400) {
		snprintf(msg, msglen, "GET %s: %s", url, curl_easy_strerror(rc));
		return 0;
	}
	if (status != 200)
		snprintf(msg, msglen, "GET %s: status %ld", url, status);
	return status;
}

struct copy_job {
	struct volume_server *vs;
	http_req *req;
	struct copy_entry *c;
	uint32_t vid;
	char source[256];
	uint64_t limit_bps; /* 0: unthrottled */
	/* the result */
	int status;
	char msg[300];
	char collection[VOLUME_COLLECTION_MAX];
	uint64_t dat_size, idx_size, rounds;
	bool read_only;
};

/* Sets the job's failure answer; returns false (for `return fail(...)`). */
static bool fail(struct copy_job *j, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool fail(struct copy_job *j, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(j->msg, sizeof(j->msg), fmt, ap);
	va_end(ap);
	j->status = status;
	return false;
}

/*
 * GETs http://source<path> into fd from off; *got gets the body's bytes. A
 * status other than 200 fails the job (409 passes through: the source was
 * compacted).
 */
static bool fetch_to(struct copy_job *j, const char *path, int fd, uint64_t off, uint64_t *got)
{
	char msg[400];
	long status = vs_fetch_file(j->vs, j->source, path, fd, off, j->limit_bps, &j->c->done,
				    got, msg, sizeof(msg));
	if (status == 409)
		return fail(j, 409, "volume %" PRIu32 " was compacted on %s during the copy; retry",
			    j->vid, j->source);
	if (status < 0)
		return fail(j, (int)-status, "%s", msg);
	if (!status && !strcmp(msg, "server is stopping"))
		return fail(j, 503, "%s", msg);
	if (status != 200)
		return fail(j, 502, "%s", msg);
	return true;
}

/* The source's status of the volume; fills the job's collection, sizes and flags. */
static bool fetch_status(struct copy_job *j, uint64_t *revision)
{
	struct http_result res;
	char url[512], err_text[128];
	const char *coll = "";
	yajl_val root = NULL;
	bool ok = false;
	wfs_err err;

	snprintf(url, sizeof(url), "http://%s/admin/volume/status?volume=%" PRIu32, j->source,
		 j->vid);
	http_result_init(&res);
	err = http_get(url, 10000, &res);
	if (err)
		fail(j, 502, "source %s: %s", j->source, wfs_strerror(err));
	else if (res.status == 404)
		fail(j, 404, "source %s has no volume %" PRIu32, j->source, j->vid);
	else if (res.status != 200)
		fail(j, 502, "source %s: status %d", j->source, res.status);
	else if (!(root = json_parse(res.body.data, res.body.len, err_text, sizeof(err_text))) ||
		 !json_get_u64(root, "datSize", &j->dat_size) ||
		 !json_get_u64(root, "idxSize", &j->idx_size) ||
		 !json_get_u64(root, "compactRevision", revision) ||
		 (json_get_str(root, "collection", &coll) && !volume_collection_valid(coll)) ||
		 j->idx_size % IDX_ENTRY_SIZE || j->dat_size < SUPERBLOCK_SIZE)
		fail(j, 502, "source %s: malformed status", j->source);
	else
		ok = true;
	if (ok) {
		snprintf(j->collection, sizeof(j->collection), "%s", coll);
		json_get_bool(root, "readOnly", &j->read_only);
	}
	if (root)
		yajl_tree_free(root);
	http_result_free(&res);
	return ok;
}

/*
 * Checks the records received at [from, to) of the .dat copy and appends
 * their .idx entries.
 */
static bool index_tail(struct copy_job *j, int dfd, int ifd, uint64_t from, uint64_t to)
{
	buf entries = BUF_INIT;
	bool ok = true;

	while (ok && from < to) {
		uint8_t e[IDX_ENTRY_SIZE];
		uint64_t key;
		uint32_t size;
		if (volume_check_record_fd(dfd, from, to, &key, &size)) {
			ok = fail(j, 502, "source %s sent a bad record at offset %" PRIu64, j->source,
				  from);
			break;
		}
		idx_entry_encode(e, key, (uint32_t)(from / NEEDLE_ALIGN),
				 size ? size : NEEDLE_TOMBSTONE);
		buf_append(&entries, e, sizeof(e));
		from += needle_disk_size(size);
	}
	if (ok && entries.len &&
	    pwrite(ifd, entries.data, entries.len, (off_t)j->idx_size) != (ssize_t)entries.len)
		ok = fail(j, 507, "writing the index copy: %s", strerror(errno));
	if (ok)
		j->idx_size += entries.len;
	buf_free(&entries);
	return ok;
}

/* Pulls the files (the prefixes the status showed, of revision rev) and the tail into dfd/ifd. */
static bool pull(struct copy_job *j, uint64_t rev, int dfd, int ifd)
{
	uint64_t got;
	char path[256];

	snprintf(path, sizeof(path), "/admin/volume/file?volume=%" PRIu32 "&ext=dat&size=%" PRIu64
		 "&revision=%" PRIu64, j->vid, j->dat_size, rev);
	if (!fetch_to(j, path, dfd, 0, &got))
		return false;
	if (got != j->dat_size)
		return fail(j, 502, "source sent %" PRIu64 " of %" PRIu64 " .dat bytes", got,
			    j->dat_size);
	snprintf(path, sizeof(path), "/admin/volume/file?volume=%" PRIu32 "&ext=idx&size=%" PRIu64
		 "&revision=%" PRIu64, j->vid, j->idx_size, rev);
	if (!fetch_to(j, path, ifd, 0, &got))
		return false;
	if (got != j->idx_size)
		return fail(j, 502, "source sent %" PRIu64 " of %" PRIu64 " .idx bytes", got,
			    j->idx_size);
	/* the needles appended meanwhile, until the source has nothing new */
	for (j->rounds = 1;; j->rounds++) {
		if (j->rounds > TAIL_ROUNDS_MAX)
			return fail(j, 503, "source keeps writing faster than it can be copied");
		snprintf(path, sizeof(path), "/admin/volume/tail?volume=%" PRIu32
			 "&since=%" PRIu64 "&revision=%" PRIu64, j->vid, j->dat_size, rev);
		if (!fetch_to(j, path, dfd, j->dat_size, &got))
			return false;
		if (got == 0)
			return true;
		if (!index_tail(j, dfd, ifd, j->dat_size, j->dat_size + got))
			return false;
		j->dat_size += got;
	}
}

static void fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Makes the copy durable and moves it into place; then loads it. */
static bool install(struct copy_job *j, const char *dir, int dfd, int ifd, char *const tmp[2])
{
	char *dat = volume_file_path(dir, j->collection, j->vid, ".dat");
	char *idx = volume_file_path(dir, j->collection, j->vid, ".idx");
	volume *v = NULL;
	bool ok = false;
	wfs_err err;

	if (fsync(dfd) < 0 || fsync(ifd) < 0)
		fail(j, 500, "fsync of the copy: %s", strerror(errno));
	else if (access(dat, F_OK) == 0)
		fail(j, 409, "%s exists already", dat);
	/* .idx first: a .dat is a volume, so its rename is the commit point */
	else if (rename(tmp[1], idx) < 0 || rename(tmp[0], dat) < 0)
		fail(j, 500, "rename into %s: %s", dir, strerror(errno));
	else
		ok = true;
	if (ok) {
		fsync_dir(dir);
		err = volume_store_load_volume(j->vs->store, dir, j->vid, j->collection, &v);
		if (err) {
			/* not loaded: the files go too, or the next start would load them */
			unlink(dat);
			unlink(idx);
			ok = fail(j, err == WFS_EEXIST ? 409 : 500, "loading the copy: %s",
				  wfs_strerror(err));
		} else {
			volume_set_read_only(v, j->read_only);
			volume_unref(v);
		}
	}
	free(dat);
	free(idx);
	return ok;
}

static void copy_done(http_req *req, void *arg)
{
	struct copy_job *j = arg;
	if (j->status != 200) {
		http_resp_error(req, j->status, "copy of volume %" PRIu32 " from %s: %s", j->vid,
				j->source, j->msg);
	} else {
		buf b = BUF_INIT;
		json_w *w = jw_new(&b, false);
		jw_obj_begin(w);
		jw_kv_u64(w, "volume", j->vid);
		jw_kv_str(w, "source", j->source);
		jw_kv_str(w, "collection", j->collection);
		jw_kv_u64(w, "datSize", j->dat_size);
		jw_kv_u64(w, "idxSize", j->idx_size);
		jw_kv_u64(w, "bytesCopied", atomic_load(&j->c->done));
		jw_kv_u64(w, "tailRounds", j->rounds);
		jw_kv_bool(w, "readOnly", j->read_only);
		jw_obj_end(w);
		jw_free(w);
		http_resp_send_json(req, 200, &b);
		buf_free(&b);
	}
	copy_end(j->c);
	free(j);
}

/* The whole copy; see DESIGN. Worker pool. */
static void copy_run(void *arg)
{
	struct copy_job *j = arg;
	char *dir = volume_store_pick_dir(j->vs->store);
	char *tmp[2] = {NULL, NULL};
	int dfd = -1, ifd = -1;
	uint64_t rev = 0;

	j->status = 200;
	if (!dir) {
		fail(j, 507, "no free volume slot");
		goto out;
	}
	if (!fetch_status(j, &rev))
		goto out;
	atomic_store(&j->c->total, j->dat_size + j->idx_size);
	tmp[0] = volume_file_path(dir, j->collection, j->vid, VOLUME_COPY_DAT);
	tmp[1] = volume_file_path(dir, j->collection, j->vid, VOLUME_COPY_IDX);
	dfd = open(tmp[0], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ifd = dfd < 0 ? -1 : open(tmp[1], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (ifd < 0) {
		fail(j, 500, "create in %s: %s", dir, strerror(errno));
		goto out;
	}
	if (pull(j, rev, dfd, ifd) && install(j, dir, dfd, ifd, tmp)) {
		log_info("volume %" PRIu32 " copied from %s: %" PRIu64 " bytes, %" PRIu64
			 " tail rounds", j->vid, j->source, j->dat_size + j->idx_size, j->rounds);
		vs_heartbeat_now(j->vs);
	}
out:
	if (dfd >= 0)
		close(dfd);
	if (ifd >= 0)
		close(ifd);
	for (int i = 0; i < 2; i++)
		if (tmp[i]) {
			unlink(tmp[i]); /* gone already after a successful install */
			free(tmp[i]);
		}
	free(dir);
	if (j->status != 200)
		log_warn("copy of volume %" PRIu32 " from %s failed: %s", j->vid, j->source, j->msg);
	http_req_defer(j->req, copy_done, j);
}

bool vs_source_valid(struct volume_server *vs, const char *s)
{
	const char *colon = s ? strrchr(s, ':') : NULL;
	uint32_t port;
	if (!colon || colon == s || strlen(s) >= 256 || !parse_u32(colon + 1, &port) ||
	    port == 0 || port > 65535 || strcmp(s, vs->self) == 0)
		return false;
	for (const char *p = s; p < colon; p++)
		if (!(*p == '.' || *p == '-' || *p == '[' || *p == ']' || *p == ':' ||
		      (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			return false;
	return true;
}

static void handle_copy(struct volume_server *vs, http_req *req, uint32_t vid)
{
	const char *source = http_req_query(req, "source");
	struct copy_job *j;
	uint64_t mbps = 0;
	volume *v;

	if (!vs_source_valid(vs, source)) {
		http_resp_error(req, 400, "invalid source \"%s\" (host:port of another server)",
				source ? source : "");
		return;
	}
	if (!query_u64(req, "limitMBps", false, &mbps))
		return;
	v = volume_store_get(vs->store, vid);
	if (v) {
		volume_unref(v);
		http_resp_error(req, 409, "volume %" PRIu32 " is already here", vid);
		return;
	}
	j = xcalloc(1, sizeof(*j));
	j->vs = vs;
	j->req = req;
	j->vid = vid;
	j->limit_bps = mbps << 20;
	snprintf(j->source, sizeof(j->source), "%s", source);
	j->c = copy_begin(vs, vid, source);
	if (!j->c) {
		free(j);
		http_resp_error(req, 409, "volume %" PRIu32 " is being copied already", vid);
		return;
	}
	if (!vs_submit(vs, copy_run, j)) {
		copy_end(j->c);
		free(j);
		http_resp_error(req, 503, "server is stopping");
	}
}

/* ---- routing ---- */

bool vs_handle_volume_admin(struct volume_server *vs, http_req *req, const char *path)
{
	static const char *const names[] = {"status", "file", "tail", "needles", "needle_raw",
					    "copy"};
	enum http_method m = http_req_method(req);
	bool get = m == HTTP_GET || m == HTTP_HEAD;
	const char *name;
	uint32_t vid;
	size_t i;

	if (strncmp(path, "/admin/volume/", 14))
		return false;
	name = path + 14;
	for (i = 0; i < ARRAY_LEN(names) && strcmp(name, names[i]); i++)
		;
	if (i == ARRAY_LEN(names))
		return false;
	if (!vs_query_vid(req, &vid))
		return true;
	if (!strcmp(name, "needle_raw") && m == HTTP_POST)
		handle_raw_put(vs, req, vid);
	else if (!strcmp(name, "copy") && m == HTTP_POST)
		handle_copy(vs, req, vid);
	else if (!get || !strcmp(name, "copy"))
		http_resp_error(req, 405, "method not allowed for %s", path);
	else if (!strcmp(name, "status"))
		handle_status(vs, req, vid);
	else if (!strcmp(name, "file"))
		handle_file(vs, req, vid);
	else if (!strcmp(name, "tail"))
		handle_tail(vs, req, vid);
	else if (!strcmp(name, "needles"))
		handle_needles(vs, req, vid);
	else
		handle_raw_get(vs, req, vid);
	return true;
}
