/*
 * PUT/POST of a needle: a raw body or the file part of a multipart form.
 *
 * DESIGN
 * - Fast path: a body whose Content-Length is at most INLINE_MAX (plus
 *   multipart slack) is read whole and written on the loop thread, unless
 *   the request asks for fsync (below).
 * - In-memory path: a body whose Content-Length is at most MEMORY_MAX (plus
 *   slack) collects in one buffer of that length, if reserving it keeps all
 *   such uploads of the process within MEMORY_BUDGET (an atomic counter;
 *   the reservation returns when the upload ends, answered or not). Each
 *   PIECE that arrives goes to a pool job that extends the CRC32C (and MD5)
 *   while the loop keeps reading; the commit job hashes the tail and writes
 *   the needle from the buffer with one pwritev. So a mount's 4 MiB chunk
 *   is written to the page cache once, not spilled and copied again. The
 *   buffer never grows, so it never moves under a running job, and the
 *   body needs no pausing: its size is bounded by the reservation.
 * - Every other body (over MEMORY_MAX, chunked, or over the budget) streams
 *   through a spill file. The data (the raw body, or the chosen part of a
 *   multipart form) collects in `fill`; once it reaches PIECE a pool job
 *   appends it to a spill file (spill.h), hashing as it goes, while the loop
 *   fills the next piece. If that fills too before the job is done, the body
 *   is paused (back-pressure) and resumed when the job finishes. An upload
 *   so holds about two pieces whatever its size.
 * - The commit is one more pool job: volume_write_fd copies the spill into
 *   the .dat under the volume lock (a body that stayed under INLINE_MAX, or
 *   an in-memory one, is written from memory), then the data is streamed to
 *   the other replicas with a curl read callback, as a raw PUT that carries
 *   the needle's name in the path (/vid/fid/name), its mime as Content-Type,
 *   its pairs and ts, so each replica stores the same needle. The answer
 *   returns to the loop through http_req_defer.
 * - fsync=true: the upload never takes the fast path, so its write and the
 *   volume_sync after it run in the commit job (in-memory or spilled alike),
 *   never on the loop; replicas are forwarded to only after the local sync,
 *   and get fsync=true themselves, so every copy is durable before the
 *   client hears 201.
 * - At most one job per upload is in flight and the response is sent only
 *   when none is, so a job never outlives its request. A failure (size
 *   limit, malformed form, hang-up, disk) answers once the job is back; the
 *   spill file has no name, so closing it leaves nothing behind.
 */
#include "config.h"
#include <curl/curl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "client/fid.h"
#include "server/common/placement.h"
#include "bigbuf.h"
#include "crc32c.h"
#include "http_util.h"
#include "json.h"
#include "log.h"
#include "spill.h"
#include "util.h"
#include "vs_int.h"

#define INLINE_MAX         (1u << 20)    /* bodies up to this are read whole */
#define MEMORY_MAX         (8u << 20)    /* bodies up to this may stay in memory */
#define MEMORY_BUDGET      (64ull << 20) /* bytes all in-memory uploads may reserve */
#define PIECE              (1u << 20)    /* bytes handed to the disk (or hashed) per job */
#define MULTIPART_SLACK    (64u << 10)
#define FORWARD_CONNECT_MS 10000
#define FORWARD_STALL_SEC  30 /* a replica slower than 1 KiB/s this long fails */

/*
 * Bytes reserved by in-memory uploads, process-wide: memory is per process,
 * so one budget bounds them all whatever the number of servers in it.
 */
static _Atomic uint64_t mem_held;
static _Atomic uint64_t mem_uploads, spill_uploads; /* uploads that took each path */

/* Reserves n bytes of the budget; false (nothing reserved) when they do not fit. */
static bool mem_reserve(uint64_t n)
{
	uint64_t cur = atomic_load(&mem_held);
	do {
		if (n > MEMORY_BUDGET - cur)
			return false;
	} while (!atomic_compare_exchange_weak(&mem_held, &cur, cur + n));
	return true;
}

void vs_upload_status(json_w *w)
{
	jw_key(w, "UploadMemory");
	jw_obj_begin(w);
	jw_kv_u64(w, "held", atomic_load(&mem_held));
	jw_kv_u64(w, "budget", MEMORY_BUDGET);
	jw_kv_u64(w, "inMemory", atomic_load(&mem_uploads));
	jw_kv_u64(w, "spilled", atomic_load(&spill_uploads));
	jw_obj_end(w);
}

/* The largest data an upload may store: the flag, within what a needle can hold. */
static uint64_t data_limit(const struct volume_server *vs)
{
	return MIN(vs->file_size_limit, (uint64_t)NEEDLE_MAX_BODY - 1024);
}

/* What a needle stores besides its data, from the request head (and multipart part). */
struct upload_meta {
	struct fid_path f;
	uint64_t last_modified;
	bool has_ttl, cm, has_pairs;
	bool fsync; /* make the write durable (volume_sync) before answering */
	struct ttl ttl;
	char filename[256], mime[256];
	char *md5;   /* Content-MD5, or NULL */
	char *ttl_s; /* the ttl parameter, or NULL */
	buf pairs;
};

static void copy_bounded(char *dst, size_t dstsz, const char *src)
{
	size_t n = src ? strlen(src) : 0;
	if (n >= dstsz)
		n = 0; /* SeaweedFS drops names and types of 256 bytes or more */
	memcpy(dst, src ? src : "", n);
	dst[n] = '\0';
}

/* Builds the pairs JSON from "Seaweed-*" headers; false when there are none. */
static bool collect_pairs(http_req *req, buf *out)
{
	const char *name, *value;
	json_w *w = NULL;
	for (size_t i = 0; http_req_header_at(req, i, &name, &value); i++) {
		if (strncasecmp(name, "Seaweed-", 8) || !name[8])
			continue;
		if (!w) {
			w = jw_new(out, false);
			jw_obj_begin(w);
		}
		jw_kv_str(w, name + 8, value);
	}
	if (!w)
		return false;
	jw_obj_end(w);
	jw_free(w);
	return out->len <= UINT16_MAX;
}

/* Fills m from the request head; answers 400 and returns false when a parameter is bad. */
static bool meta_init(http_req *req, const struct fid_path *f, bool is_mp, struct upload_meta *m)
{
	const char *ts_s = http_req_query(req, "ts"), *ttl_s = http_req_query(req, "ttl");
	const char *cm = http_req_query(req, "cm"), *md5 = http_req_header(req, "Content-MD5");
	uint64_t ts = 0;

	memset(m, 0, sizeof(*m));
	m->f = *f;
	if ((ts_s && !parse_u64(ts_s, &ts)) || ts > 0xFFFFFFFFFFull) {
		http_resp_error(req, 400, "invalid ts \"%s\"", ts_s);
		return false;
	}
	if (ttl_s && ttl_parse(ttl_s, &m->ttl)) {
		http_resp_error(req, 400, "invalid ttl \"%s\"", ttl_s);
		return false;
	}
	if (cm && !parse_bool(cm, &m->cm)) {
		http_resp_error(req, 400, "invalid cm \"%s\"", cm);
		return false;
	}
	m->has_ttl = ttl_s && ttl_is_set(&m->ttl);
	m->last_modified = ts ? ts : (uint64_t)time(NULL);
	m->md5 = md5 ? xstrdup(md5) : NULL;
	m->ttl_s = ttl_s ? xstrdup(ttl_s) : NULL;
	m->has_pairs = collect_pairs(req, &m->pairs);
	if (!is_mp) {
		if (f->filename && f->filename_len < sizeof(m->filename)) {
			memcpy(m->filename, f->filename, f->filename_len);
			m->filename[f->filename_len] = '\0';
		}
		copy_bounded(m->mime, sizeof(m->mime), http_req_header(req, "Content-Type"));
	}
	m->f.filename = NULL; /* borrowed the request; the copy above is what lasts */
	m->f.ext = NULL;
	return true;
}

static void meta_free(struct upload_meta *m)
{
	free(m->md5);
	free(m->ttl_s);
	buf_free(&m->pairs);
}

/* The needle for m's data (data and data_size are the caller's). */
static void meta_needle(struct upload_meta *m, struct needle *n)
{
	if (!strcasecmp(m->mime, "application/octet-stream"))
		m->mime[0] = '\0';
	memset(n, 0, sizeof(*n));
	n->key = m->f.key;
	n->cookie = m->f.cookie;
	n->flags = NEEDLE_FLAG_HAS_LAST_MODIFIED;
	n->last_modified = m->last_modified;
	if (m->filename[0]) {
		n->flags |= NEEDLE_FLAG_HAS_NAME;
		n->name = m->filename;
		n->name_len = (uint8_t)strlen(m->filename);
	}
	if (m->mime[0]) {
		n->flags |= NEEDLE_FLAG_HAS_MIME;
		n->mime = m->mime;
		n->mime_len = (uint8_t)strlen(m->mime);
	}
	if (m->has_ttl) {
		n->flags |= NEEDLE_FLAG_HAS_TTL;
		ttl_to_bytes(&m->ttl, n->ttl);
	}
	if (m->cm)
		n->flags |= NEEDLE_FLAG_CHUNK_MANIFEST;
	if (m->has_pairs) {
		n->flags |= NEEDLE_FLAG_HAS_PAIRS;
		n->pairs = (const uint8_t *)m->pairs.data;
		n->pairs_len = (uint16_t)m->pairs.len;
	}
}

/* The 201 answer's JSON. */
static void meta_reply(const struct upload_meta *m, uint64_t size, const char *etag, buf *reply)
{
	json_w *w = jw_new(reply, false);
	jw_obj_begin(w);
	jw_kv_str(w, "name", m->filename);
	jw_kv_u64(w, "size", size);
	jw_kv_str(w, "eTag", etag);
	if (m->mime[0])
		jw_kv_str(w, "mime", m->mime);
	jw_obj_end(w);
	jw_free(w);
}

static bool md5_matches(const char *b64, const void *data, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE], enc[64];
	unsigned int mdlen = 0;
	if (!EVP_Digest(data, len, md, &mdlen, EVP_md5(), NULL))
		return false;
	EVP_EncodeBlock(enc, md, (int)mdlen);
	return !strcmp((const char *)enc, b64);
}

/* True if the MD5 that ctx has hashed is b64; ends ctx's use. */
static bool md5_final_matches(EVP_MD_CTX *ctx, const char *b64)
{
	unsigned char md[EVP_MAX_MD_SIZE], enc[64];
	unsigned int mdlen = 0;
	if (!EVP_DigestFinal_ex(ctx, md, &mdlen))
		return false;
	EVP_EncodeBlock(enc, md, (int)mdlen);
	return !strcmp((const char *)enc, b64);
}

static int write_status(wfs_err err) { return wfs_err_http_status(err); }

/*
 * A full disk made the volume read-only (volume.c; WFS_ENOSPC may also be its
 * size limit, which does not): the master hears it now, not a pulse later.
 */
static void note_write_error(struct volume_server *vs, volume *v, wfs_err err)
{
	if ((err == WFS_ENOSPC || err == WFS_EQUOTA) && volume_read_only(v))
		vs_heartbeat_now(vs);
}

static const char *write_error_text(wfs_err err)
{
	return err == WFS_EPERM ? "mismatching cookie" : wfs_strerror(err);
}

/* ---- multipart part selection (shared by both paths) ---- */

/* The stored data: the first part with a file name, else the very first part. */
struct part_pick {
	bool in_file, done, seen_part;
	struct upload_meta *m;
	/* where the chosen part's bytes go; reset drops what an earlier part gave */
	bool (*append)(void *sink, const char *data, size_t len);
	void (*reset)(void *sink);
	void *sink;
};

static bool pick_on_part(const struct multipart_part *part, void *arg)
{
	struct part_pick *p = arg;
	if (p->done || (p->seen_part && !part->filename))
		return true;
	if (p->seen_part && part->filename)
		p->reset(p->sink);
	p->seen_part = true;
	p->in_file = true;
	copy_bounded(p->m->filename, sizeof(p->m->filename), part->filename);
	copy_bounded(p->m->mime, sizeof(p->m->mime), part->content_type);
	return true;
}

static bool pick_on_data(const char *data, size_t len, void *arg)
{
	struct part_pick *p = arg;
	return !p->in_file || p->append(p->sink, data, len);
}

static void pick_on_part_end(void *arg)
{
	struct part_pick *p = arg;
	if (p->in_file && p->m->filename[0])
		p->done = true;
	p->in_file = false;
}

static const struct multipart_cb pick_cb = {pick_on_part, pick_on_data, pick_on_part_end};

/* ---- fast path: the whole body in memory ---- */

static bool buf_sink_append(void *sink, const char *data, size_t len)
{
	buf_append(sink, data, len);
	return true;
}

static void buf_sink_reset(void *sink) { buf_reset(sink); }

static void upload_whole(http_req *req, const char *data, size_t len, void *arg)
{
	struct volume_server *vs = arg;
	struct upload_meta m;
	struct fid_path f;
	struct needle n;
	const char *ct = http_req_header(req, "Content-Type");
	bool is_mp = ct && !strncasecmp(ct, "multipart/form-data", 19);
	buf part = BUF_INIT, reply = BUF_INIT;
	const char *body = data;
	size_t body_len = len;
	char etag[16], qetag[20];
	volume *v = NULL;
	bool unchanged;
	wfs_err err;

	if (vs_parse_fid_path(http_req_path(req), &f)) {
		http_resp_error(req, 400, "malformed file id");
		return;
	}
	if (!meta_init(req, &f, is_mp, &m)) {
		meta_free(&m);
		return;
	}
	if (is_mp) {
		struct part_pick p = {
			.m = &m, .append = buf_sink_append, .reset = buf_sink_reset, .sink = &part};
		multipart *mp = multipart_new(ct, &pick_cb, &p);
		if (!mp || multipart_feed(mp, data, len) || multipart_finish(mp) || !p.seen_part) {
			multipart_free(mp);
			http_resp_error(req, 400, "malformed multipart body");
			goto out;
		}
		multipart_free(mp);
		body = part.data ? part.data : "";
		body_len = part.len;
	}
	if (body_len > data_limit(vs)) {
		http_resp_error(req, 413, "file over the %" PRIu64 " byte limit", data_limit(vs));
		goto out;
	}
	if (m.md5 && !md5_matches(m.md5, body, body_len)) {
		http_resp_error(req, 400, "Content-MD5 does not match the body");
		goto out;
	}
	v = volume_store_get(vs->store, f.vid);
	if (!v) {
		http_resp_error(req, 404, "volume %" PRIu32 " not found", f.vid);
		goto out;
	}
	meta_needle(&m, &n);
	n.data = (const uint8_t *)body;
	n.data_size = (uint32_t)body_len;
	err = volume_write(v, &n, &unchanged);
	if (err) {
		note_write_error(vs, v, err);
		http_resp_error(req, write_status(err), "write to volume %" PRIu32 ": %s", f.vid,
				write_error_text(err));
		goto out;
	}
	snprintf(etag, sizeof(etag), "%08" PRIx32, n.crc);
	snprintf(qetag, sizeof(qetag), "\"%s\"", etag);
	if (!unchanged)
		meta_reply(&m, body_len, etag, &reply);
	if (vs_needs_replication(req, v)) {
		vs_replicate(vs, req, f.vid, m.last_modified, data, len, unchanged ? 204 : 201,
			     &reply, qetag);
		goto out;
	}
	http_resp_header(req, "ETag", qetag);
	if (unchanged)
		http_resp_send(req, 204, NULL, 0);
	else
		http_resp_send_json(req, 201, &reply);
out:
	volume_unref(v);
	meta_free(&m);
	buf_free(&part);
	buf_free(&reply);
}

/* ---- streaming path ---- */

struct upload {
	struct volume_server *vs;
	http_req *req;
	volume *v; /* referenced */
	struct upload_meta m;
	multipart *mp; /* NULL for a raw body */
	struct part_pick pick;
	uint64_t data_len; /* bytes of the chosen data so far */

	/*
	 * In-memory mode (mem != NULL): every data byte lands in mem, which
	 * holds the whole declared body (mem_cap bytes, reserved from the
	 * budget), so it never moves while a job reads from it. A restart of
	 * the data (a later multipart part) begins after the old bytes instead
	 * of over them: a job may still be hashing those.
	 */
	char *mem;
	size_t mem_cap, mem_len; /* loop thread until the commit */
	size_t data_start;       /* where the current data begins in mem */
	size_t hashed;           /* loop thread: the end of what jobs were given to hash */
	bool rehash_pending;     /* the data restarted: the next job restarts the hashes */
	size_t job_from, job_to; /* the running job's share of mem */
	bool job_rehash;
	uint32_t mem_crc;    /* CRC32C (and MD5) of mem[data_start, job_to): jobs only */
	EVP_MD_CTX *mem_md5; /* NULL unless Content-MD5 was sent */

	/* spill mode */
	buf fill;           /* loop thread: bytes not yet handed to a job */
	buf wbuf;           /* the running job's piece */
	spill *sp;          /* created by the first job; used by one job at a time */
	bool spilled;       /* a job has taken data */
	bool reset_pending; /* the data restarted (a later multipart part): the spill is stale */
	bool job_reset;     /* the job must empty the spill first */
	bool inflight, paused, body_done;

	int status; /* first failure, 0 for none */
	char *errmsg;

	/* the commit job's results */
	wfs_err job_err;
	bool unchanged;
	uint32_t crc;
	bool replicate;
	char *repl_error;
};

/* Frees the in-memory data and returns its reservation. Loop thread, no job in flight. */
static void mem_release(struct upload *u)
{
	if (!u->mem)
		return;
	bigbuf_put(u->mem); /* the next body reuses its pages, already faulted in */
	u->mem = NULL;
	atomic_fetch_sub(&mem_held, (uint64_t)u->mem_cap);
}

static void upload_free(struct upload *u)
{
	mem_release(u);
	EVP_MD_CTX_free(u->mem_md5);
	volume_unref(u->v);
	meta_free(&u->m);
	multipart_free(u->mp);
	buf_free(&u->fill);
	buf_free(&u->wbuf);
	spill_free(u->sp);
	free(u->errmsg);
	free(u->repl_error);
	free(u);
}

static void fail(struct upload *u, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fail(struct upload *u, int status, const char *fmt, ...)
{
	va_list ap;
	if (u->status)
		return;
	u->status = status;
	va_start(ap, fmt);
	if (vasprintf(&u->errmsg, fmt, ap) < 0)
		fatal("out of memory");
	va_end(ap);
}

static bool stream_append(void *sink, const char *data, size_t len)
{
	struct upload *u = sink;
	u->data_len += len;
	if (u->data_len > data_limit(u->vs)) {
		fail(u, 413, "file over the %" PRIu64 " byte limit", data_limit(u->vs));
		return false;
	}
	if (!u->mem) {
		buf_append(&u->fill, data, len);
		return true;
	}
	if (len > u->mem_cap - u->mem_len) {
		/* the data is part of a body the server has checked against its length */
		fail(u, 500, "upload data beyond its Content-Length");
		return false;
	}
	memcpy(u->mem + u->mem_len, data, len);
	u->mem_len += len;
	return true;
}

static void stream_reset(void *sink)
{
	struct upload *u = sink;
	u->data_len = 0;
	if (u->mem) {
		u->data_start = u->hashed = u->mem_len;
		u->rehash_pending = true;
		return;
	}
	buf_reset(&u->fill);
	if (u->spilled)
		u->reset_pending = true;
}

/* Job step of in-memory mode: extends the hashes over the job's share of mem. Pool thread. */
static void job_hash_mem(struct upload *u)
{
	size_t len = u->job_to - u->job_from;
	if (u->job_rehash) {
		u->mem_crc = 0;
		if (u->mem_md5)
			EVP_DigestInit_ex(u->mem_md5, EVP_md5(), NULL);
	}
	u->mem_crc = crc32c_update(u->mem_crc, u->mem + u->job_from, len);
	if (u->mem_md5)
		EVP_DigestUpdate(u->mem_md5, u->mem + u->job_from, len);
}

/* Job step: appends wbuf to the spill (created on first use). Pool thread. */
static wfs_err job_flush(struct upload *u)
{
	wfs_err err = WFS_OK;
	if (u->mem) {
		job_hash_mem(u);
		return WFS_OK;
	}
	if (!u->sp) {
		err = spill_new(volume_dir(u->v), u->m.md5 != NULL, &u->sp);
		if (!err)
			atomic_fetch_add(&spill_uploads, 1);
	}
	if (!err && u->job_reset)
		err = spill_reset(u->sp);
	if (!err && u->wbuf.len)
		err = spill_write(u->sp, u->wbuf.data, u->wbuf.len);
	buf_reset(&u->wbuf);
	if (err) {
		/* the spill file is on the volume's disk: full for it is full for the volume */
		volume_note_full(u->v, err);
		note_write_error(u->vs, u->v, err);
	}
	return err;
}

static void pump(struct upload *u);

static void job_write_done(http_req *req, void *arg)
{
	struct upload *u = arg;
	(void)req;
	u->inflight = false;
	if (u->job_err)
		fail(u, write_status(u->job_err), "could not spill upload: %s",
		     wfs_strerror(u->job_err));
	pump(u);
}

static void job_write(void *arg)
{
	struct upload *u = arg;
	u->job_err = job_flush(u);
	http_req_defer(u->req, job_write_done, u);
}

/* ---- forwarding to replicas ---- */

struct fwd_src {
	const char *mem; /* or fd */
	int fd;
	uint64_t off, len;
	bool failed;
};

static size_t fwd_read(char *p, size_t size, size_t nmemb, void *arg)
{
	struct fwd_src *s = arg;
	size_t n = (size_t)MIN((uint64_t)size * nmemb, s->len - s->off);
	if (s->mem) {
		memcpy(p, s->mem + s->off, n);
	} else if (n) {
		ssize_t r = pread(s->fd, p, n, (off_t)s->off);
		if (r <= 0) {
			s->failed = true;
			return CURL_READFUNC_ABORT;
		}
		n = (size_t)r;
	}
	s->off += n;
	return n;
}

static size_t fwd_write(char *p, size_t size, size_t nmemb, void *arg)
{
	buf *b = arg;
	size_t n = size * nmemb;
	if (b->len < 1024)
		buf_append(b, p, MIN(n, 1024 - b->len)); /* an error message at most */
	return n;
}

/* PUTs src to url; NULL on success, else an error text (caller frees). Pool thread. */
static char *forward_one(const char *url, struct curl_slist *headers, struct fwd_src *src)
{
	CURL *c = curl_easy_init();
	buf resp = BUF_INIT;
	long status = 0;
	char *error = NULL;
	CURLcode rc;

	if (!c)
		return xstrdup("curl_easy_init failed");
	src->off = 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, fwd_read);
	curl_easy_setopt(c, CURLOPT_READDATA, src);
	curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)src->len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fwd_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)FORWARD_CONNECT_MS);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)FORWARD_STALL_SEC);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK)
		error = xasprintf("%s", src->failed ? "could not read the spill file"
						    : curl_easy_strerror(rc));
	else if (status < 200 || status > 299)
		error = xasprintf("status %ld %.*s", status, (int)resp.len,
				  resp.data ? resp.data : "");
	curl_easy_cleanup(c);
	buf_free(&resp);
	return error;
}

/*
 * The replicas' URI: /vid/keycookie[/name]?type=replicate&ts=..[&ttl=..][&cm=true],
 * so a raw PUT stores the same needle there.
 */
static void replica_uri(const struct upload_meta *m, buf *out)
{
	struct fid fd = {m->f.vid, m->f.key, m->f.cookie};
	char fs[FID_STR_MAX];

	fid_format(&fd, fs, sizeof(fs));
	*strchr(fs, ',') = '/';
	buf_printf(out, "/%s", fs);
	if (m->filename[0]) {
		buf_append_byte(out, '/');
		url_encode_query(m->filename, out);
	}
	buf_printf(out, "?type=replicate&ts=%" PRIu64, m->last_modified);
	if (m->ttl_s) {
		buf_append_str(out, "&ttl=");
		url_encode_query(m->ttl_s, out);
	}
	if (m->cm)
		buf_append_str(out, "&cm=true");
	if (m->fsync)
		buf_append_str(out, "&fsync=true");
}

/* Sends the stored data to every other replica; sets u->repl_error on failure. Pool thread. */
static void forward(struct upload *u, struct fwd_src *src)
{
	struct vs_location *locs = NULL;
	struct curl_slist *h = NULL;
	buf uri = BUF_INIT;
	char line[320];
	int n = 0;
	wfs_err err = vs_lookup(u->vs, u->m.f.vid, &locs, &n);

	if (!err)
		err = vs_check_replicas(u->vs, u->m.f.vid, locs, n);
	if (err) {
		u->repl_error =
			xasprintf("replication of volume %" PRIu32 ": %s", u->m.f.vid,
				  err == WFS_EUNAVAIL ? "lookup failed" : "replicas missing");
		vs_locations_free(locs, n);
		return;
	}
	snprintf(line, sizeof(line), "Content-Type: %s",
		 u->m.mime[0] ? u->m.mime : "application/octet-stream");
	h = curl_slist_append(h, line);
	h = curl_slist_append(h, "Expect:");
	if (u->m.has_pairs) {
		/* the pairs travel as the Seaweed-* headers they came from */
		char err_text[64];
		yajl_val root =
			json_parse(u->m.pairs.data, u->m.pairs.len, err_text, sizeof(err_text));
		for (size_t i = 0; root && YAJL_IS_OBJECT(root) && i < root->u.object.len; i++) {
			const char *val = YAJL_GET_STRING(root->u.object.values[i]);
			char *hl =
				xasprintf("Seaweed-%s: %s", root->u.object.keys[i], val ? val : "");
			h = curl_slist_append(h, hl);
			free(hl);
		}
		if (root)
			yajl_tree_free(root);
	}
	replica_uri(&u->m, &uri);
	for (int i = 0; i < n && !u->repl_error; i++) {
		char *url, *e;
		if (!strcmp(locs[i].url, u->vs->self))
			continue;
		url = xasprintf("http://%s%s", locs[i].url, uri.data);
		e = forward_one(url, h, src);
		if (e) {
			u->repl_error = xasprintf("replica %s failed: %s", locs[i].url, e);
			free(e);
		}
		free(url);
	}
	curl_slist_free_all(h);
	vs_locations_free(locs, n);
	buf_free(&uri);
}

/* ---- commit ---- */

static void job_commit_done(http_req *req, void *arg)
{
	struct upload *u = arg;
	char etag[16], qetag[20];
	buf reply = BUF_INIT;

	u->inflight = false;
	mem_release(u); /* before the answer: a client that saw it finds the budget back */
	if (u->status) {
		http_resp_error(req, u->status, "%s", u->errmsg);
	} else if (u->job_err) {
		http_resp_error(req, write_status(u->job_err), "write to volume %" PRIu32 ": %s",
				u->m.f.vid, write_error_text(u->job_err));
	} else if (u->repl_error) {
		http_resp_error(req, 500, "%s", u->repl_error);
	} else {
		snprintf(etag, sizeof(etag), "%08" PRIx32, u->crc);
		snprintf(qetag, sizeof(qetag), "\"%s\"", etag);
		http_resp_header(req, "ETag", qetag);
		if (u->unchanged) {
			http_resp_send(req, 204, NULL, 0);
		} else {
			meta_reply(&u->m, u->data_len, etag, &reply);
			http_resp_send_json(req, 201, &reply);
		}
	}
	buf_free(&reply);
	upload_free(u);
}

static void job_commit(void *arg)
{
	struct upload *u = arg;
	struct fwd_src src = {0};
	struct needle n;
	wfs_err err = WFS_OK;

	meta_needle(&u->m, &n);
	if (u->mem) {
		job_hash_mem(u); /* the tail no earlier job took */
		if (u->mem_md5 && !md5_final_matches(u->mem_md5, u->m.md5)) {
			fail(u, 400, "Content-MD5 does not match the body");
			goto out;
		}
		n.data = (const uint8_t *)u->mem + u->data_start;
		n.data_size = (uint32_t)(u->mem_len - u->data_start);
		err = volume_write_crc(u->v, &n, u->mem_crc, &u->unchanged);
		src.mem = (const char *)n.data;
	} else if (u->spilled) {
		err = job_flush(u);
		if (err) {
			fail(u, write_status(err), "could not spill upload: %s", wfs_strerror(err));
			goto out;
		}
		if (u->m.md5 && !spill_md5_matches(u->sp, u->m.md5)) {
			fail(u, 400, "Content-MD5 does not match the body");
			goto out;
		}
		n.data_size = (uint32_t)spill_size(u->sp);
		err = volume_write_fd(u->v, &n, spill_fd(u->sp), spill_crc(u->sp), &u->unchanged);
		src.fd = spill_fd(u->sp);
	} else {
		if (u->m.md5 &&
		    !md5_matches(u->m.md5, u->wbuf.data ? u->wbuf.data : "", u->wbuf.len)) {
			fail(u, 400, "Content-MD5 does not match the body");
			goto out;
		}
		n.data = (const uint8_t *)(u->wbuf.data ? u->wbuf.data : "");
		n.data_size = (uint32_t)u->wbuf.len;
		err = volume_write(u->v, &n, &u->unchanged);
		src.mem = (const char *)n.data;
	}
	note_write_error(u->vs, u->v, err);
	if (!err && u->m.fsync)
		err = volume_sync(u->v); /* an unchanged needle may be unsynced too */
	u->job_err = err;
	u->crc = n.crc;
	src.len = n.data_size;
	if (!err && u->replicate)
		forward(u, &src);
out:
	http_req_defer(u->req, job_commit_done, u);
}

/* Bytes that wait for a job: in fill, or in mem past what jobs have hashed. */
static size_t pending(const struct upload *u)
{
	return u->mem ? u->mem_len - u->hashed : u->fill.len;
}

/* Hands fill, or mem's unhashed bytes, to a job (write or commit). Loop thread; none in flight. */
static void submit(struct upload *u, bool commit)
{
	buf t = u->wbuf;
	if (u->mem) {
		u->job_from = u->hashed;
		u->job_to = u->hashed = u->mem_len;
		u->job_rehash = u->rehash_pending;
		u->rehash_pending = false;
	} else {
		u->wbuf = u->fill;
		u->fill = t;
		buf_reset(&u->fill);
		if (commit && (!u->spilled || u->reset_pending) && u->wbuf.len <= INLINE_MAX) {
			u->spilled = false; /* small after all: written from memory */
		} else {
			u->job_reset = u->reset_pending;
			u->reset_pending = false;
			u->spilled = true;
		}
	}
	u->inflight = true;
	if (!vs_submit(u->vs, commit ? job_commit : job_write, u)) {
		u->inflight = false;
		fail(u, 503, "server is stopping");
	}
}

/*
 * Moves the upload on after any change: answers a failure, commits a
 * complete body, flushes a full piece and resumes a paused body. May free u
 * (and resuming may re-enter on_data/on_end): nothing touches u after it.
 */
static void pump(struct upload *u)
{
	if (u->inflight)
		return;
	if (!u->status && u->body_done)
		submit(u, true);
	else if (!u->status && pending(u) >= PIECE)
		submit(u, false);
	if (u->inflight)
		return;
	if (u->status) {
		mem_release(u);
		/* mid-body this also closes the connection: the rest is never read */
		http_resp_error(u->req, u->status, "%s", u->errmsg);
		upload_free(u);
		return;
	}
	if (u->paused) {
		u->paused = false;
		http_req_resume_body(u->req);
	}
}

static bool on_data(http_req *req, const char *data, size_t len, void *arg)
{
	struct upload *u = arg;
	(void)req;
	if (u->mp) {
		if (multipart_feed(u->mp, data, len) && !u->status)
			fail(u, 400, "malformed multipart body");
	} else {
		stream_append(u, data, len);
	}
	if (!u->status && pending(u) >= PIECE && !u->inflight)
		submit(u, false);
	/* in memory the body is bounded by its reservation: no need to pause */
	if (u->status || (!u->mem && u->fill.len >= PIECE)) {
		u->paused = true;
		if (u->status)
			pump(u); /* may free u */
		return false;
	}
	return true;
}

static void on_end(http_req *req, wfs_err err, void *arg)
{
	struct upload *u = arg;
	(void)req;
	u->body_done = true;
	if (err == WFS_ETOOBIG)
		fail(u, 413, "body over the %" PRIu64 " byte limit", data_limit(u->vs));
	else if (err)
		fail(u, 400, "upload interrupted: %s", wfs_strerror(err));
	else if (u->mp && (multipart_finish(u->mp) || !u->pick.seen_part))
		fail(u, 400, "malformed multipart body");
	pump(u);
}

void vs_handle_upload(struct volume_server *vs, http_req *req, const struct fid_path *f)
{
	const char *ct = http_req_header(req, "Content-Type");
	bool is_mp = ct && !strncasecmp(ct, "multipart/form-data", 19);
	uint64_t limit = data_limit(vs) + (is_mp ? MULTIPART_SLACK : 0);
	int64_t cl = http_req_content_length(req);
	struct upload *u;
	bool fsync;

	if (!vs_query_fsync(req, &fsync))
		return;
	if (cl >= 0 && (uint64_t)cl > limit) {
		http_resp_error(req, 413, "body over the %" PRIu64 " byte limit", data_limit(vs));
		return;
	}
	/* the fast path writes on the loop thread: no place for an fdatasync */
	if (!fsync && cl >= 0 && (uint64_t)cl <= INLINE_MAX + (is_mp ? MULTIPART_SLACK : 0)) {
		http_req_read_body(req, (size_t)limit, upload_whole, vs);
		return;
	}
	u = xcalloc(1, sizeof(*u));
	u->vs = vs;
	u->req = req;
	if (!meta_init(req, f, is_mp, &u->m)) {
		upload_free(u);
		return;
	}
	u->m.fsync = fsync;
	u->v = volume_store_get(vs->store, f->vid);
	if (!u->v || volume_read_only(u->v)) {
		/* refused before the body is read */
		if (u->v)
			http_resp_error(req, write_status(WFS_EREADONLY),
					"write to volume %" PRIu32 ": %s", f->vid,
					wfs_strerror(WFS_EREADONLY));
		else
			http_resp_error(req, 404, "volume %" PRIu32 " not found", f->vid);
		upload_free(u);
		return;
	}
	if (is_mp) {
		u->pick = (struct part_pick){
			.m = &u->m, .append = stream_append, .reset = stream_reset, .sink = u};
		u->mp = multipart_new(ct, &pick_cb, &u->pick);
		if (!u->mp) {
			http_resp_error(req, 400, "malformed multipart body");
			upload_free(u);
			return;
		}
	}
	/* a body of known, moderate length collects in memory if the budget has room */
	if (cl > 0 && (uint64_t)cl <= MEMORY_MAX + (is_mp ? MULTIPART_SLACK : 0) &&
	    mem_reserve((uint64_t)cl)) {
		u->mem_cap = (size_t)cl;
		u->mem = bigbuf_get(u->mem_cap, NULL);
		if (u->m.md5) {
			u->mem_md5 = EVP_MD_CTX_new();
			if (!u->mem_md5 || !EVP_DigestInit_ex(u->mem_md5, EVP_md5(), NULL))
				fatal("out of memory (MD5)");
		}
		atomic_fetch_add(&mem_uploads, 1);
	}
	u->replicate = vs_needs_replication(req, u->v);
	http_req_stream_body(req, limit, on_data, on_end, u);
}
