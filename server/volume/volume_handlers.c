/*
 * Needle requests: GET/HEAD (conditional, ranges), PUT/POST (raw or
 * multipart) and DELETE on the SeaweedFS URL forms, plus replication.
 *
 * DESIGN: everything local runs on the loop thread (a read is one pread, a
 * write two write calls to the page cache). Only a write or delete to a
 * replicated volume leaves the loop: the local change is made first, then a
 * pool job forwards the same request (with type=replicate) to the other
 * replicas, found through the master's /dir/lookup and cached for a few
 * seconds, and finishes the response through http_req_defer.
 *
 * Decisions where SeaweedFS is loose: a DELETE answers the needle's body
 * size as SeaweedFS does; an upload's Content-Type of
 * application/octet-stream is not stored (it is the default on reads); a
 * GET's Content-Type is the stored mime, else the URL's extension, else the
 * stored name's extension; a compressed needle (flag 0x01) is served as is
 * with Content-Encoding: gzip; the replica's copy gets the first server's
 * last-modified time (ts) so replicas stay byte-identical in content.
 */
#include "config.h"
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "common/fid.h"
#include "common/placement.h"
#include "http_client.h"
#include "http_util.h"
#include "json.h"
#include "log.h"
#include "util.h"
#include "vs_int.h"

#define LOOKUP_TTL_NS (5ull * 1000000000ull)
#define REPLICA_TIMEOUT_MS 30000
#define MULTIPART_SLACK (64u << 10)

/* Scratch buffer for reads, one per loop thread, freed when the thread exits. */
static pthread_key_t read_buf_key;
static pthread_once_t read_buf_once = PTHREAD_ONCE_INIT;

static void read_buf_free(void *p)
{
	buf_free(p);
	free(p);
}

static void read_buf_init(void)
{
	pthread_key_create(&read_buf_key, read_buf_free);
}

static buf *read_buf_get(void)
{
	buf *b;
	pthread_once(&read_buf_once, read_buf_init);
	b = pthread_getspecific(read_buf_key);
	if (!b) {
		b = xcalloc(1, sizeof(*b));
		pthread_setspecific(read_buf_key, b);
	}
	return b;
}

struct fid_path {
	uint32_t vid;
	uint64_t key;
	uint32_t cookie;
	const char *ext;      /* ".jpg" or NULL; points into the path */
	const char *filename; /* from /vid/fid/filename, or NULL */
	size_t filename_len;
};

/*
 * Parses /vid,keycookie[.ext], /vid/keycookie[.ext] and /vid/keycookie/filename
 * (each with an optional _N after the key). WFS_EINVAL when malformed.
 */
static wfs_err parse_fid_path(const char *path, struct fid_path *f)
{
	const char *p = path, *s1, *s2, *fid, *fid_end, *dot;
	int slashes = 0;

	memset(f, 0, sizeof(*f));
	if (*p != '/')
		return WFS_EINVAL;
	p++;
	for (const char *q = p; *q; q++)
		slashes += *q == '/';
	if (slashes == 0) {
		const char *comma = strchr(p, ',');
		if (!comma || !volume_id_parse(p, (size_t)(comma - p), &f->vid))
			return WFS_EINVAL;
		fid = comma + 1;
		dot = strrchr(fid, '.');
		fid_end = dot ? dot : fid + strlen(fid);
		f->ext = dot;
	} else if (slashes == 1 || slashes == 2) {
		s1 = strchr(p, '/');
		if (!volume_id_parse(p, (size_t)(s1 - p), &f->vid))
			return WFS_EINVAL;
		fid = s1 + 1;
		s2 = strchr(fid, '/');
		if (s2) {
			f->filename = s2 + 1;
			f->filename_len = strlen(s2 + 1);
			fid_end = s2;
			dot = strrchr(f->filename, '.');
			f->ext = dot;
		} else {
			dot = strrchr(fid, '.');
			fid_end = dot ? dot : fid + strlen(fid);
			f->ext = dot;
		}
	} else {
		return WFS_EINVAL;
	}
	if (f->ext && f->ext[1] == '\0') {
		if (!f->filename)
			return WFS_EINVAL; /* "3,01637037d6." */
		f->ext = NULL;
	}
	return fid_parse_key_cookie(fid, (size_t)(fid_end - fid), &f->key, &f->cookie);
}

/* ---- replication ---- */

static void free_urls(char **urls, int n)
{
	for (int i = 0; i < n; i++)
		free(urls[i]);
	free(urls);
}

/* The other replicas of vid (ip:port), from the cache or the master. Worker thread. */
static wfs_err lookup_replicas(struct volume_server *vs, uint32_t vid, char ***urls, int *n)
{
	struct http_result res;
	char url[512], err_text[128];
	uint64_t now = time_mono_ns();
	yajl_val root = NULL, locs;
	wfs_err err;

	*urls = NULL;
	*n = 0;
	pthread_mutex_lock(&vs->cache_lock);
	for (int i = 0; i < vs->ncache; i++) {
		struct lookup_cache_entry *c = &vs->cache[i];
		if (c->vid == vid && c->expires_ns > now) {
			*urls = xcalloc((size_t)c->nurls + 1, sizeof(char *));
			for (int j = 0; j < c->nurls; j++)
				(*urls)[j] = xstrdup(c->urls[j]);
			*n = c->nurls;
			pthread_mutex_unlock(&vs->cache_lock);
			return WFS_OK;
		}
	}
	pthread_mutex_unlock(&vs->cache_lock);
	if (!vs->mserver)
		return WFS_EUNAVAIL;
	snprintf(url, sizeof(url), "http://%s/dir/lookup?volumeId=%" PRIu32, vs->mserver, vid);
	http_result_init(&res);
	err = http_get(url, 10000, &res);
	if (!err && res.status != 200)
		err = WFS_EUNAVAIL;
	if (!err)
		root = json_parse(res.body.data, res.body.len, err_text, sizeof(err_text));
	locs = root ? json_get(root, "locations") : NULL;
	if (!err && (!locs || !YAJL_IS_ARRAY(locs)))
		err = WFS_EUNAVAIL;
	if (!err) {
		size_t len = YAJL_GET_ARRAY(locs)->len;
		*urls = xcalloc(len + 1, sizeof(char *));
		for (size_t i = 0; i < len; i++) {
			const char *u;
			if (json_get_str(YAJL_GET_ARRAY(locs)->values[i], "url", &u) &&
			    strcmp(u, vs->self))
				(*urls)[(*n)++] = xstrdup(u);
		}
		pthread_mutex_lock(&vs->cache_lock);
		for (int i = 0; i < vs->ncache; i++) {
			if (vs->cache[i].vid == vid) {
				free_urls(vs->cache[i].urls, vs->cache[i].nurls);
				vs->cache[i] = vs->cache[--vs->ncache];
				break;
			}
		}
		vs->cache = xrealloc(vs->cache, (size_t)(vs->ncache + 1) * sizeof(*vs->cache));
		vs->cache[vs->ncache].vid = vid;
		vs->cache[vs->ncache].expires_ns = now + LOOKUP_TTL_NS;
		vs->cache[vs->ncache].urls = xcalloc((size_t)*n + 1, sizeof(char *));
		for (int j = 0; j < *n; j++)
			vs->cache[vs->ncache].urls[j] = xstrdup((*urls)[j]);
		vs->cache[vs->ncache].nurls = *n;
		vs->ncache++;
		pthread_mutex_unlock(&vs->cache_lock);
	}
	if (root)
		yajl_tree_free(root);
	http_result_free(&res);
	return err;
}

struct repl_job {
	struct volume_server *vs;
	http_req *req;
	uint32_t vid;
	const char *method;
	char *uri;        /* path?query with type=replicate (and ts) added */
	char *headers[4]; /* NULL-terminated */
	char *body;
	size_t body_len;
	int status;      /* the local answer, sent when every replica succeeded */
	buf reply;       /* its body (JSON), empty for none */
	char etag[16];   /* ETag header for writes, "" for none */
	char *error;     /* set when a replica failed */
};

static void repl_job_free(struct repl_job *j)
{
	free(j->uri);
	for (int i = 0; j->headers[i]; i++)
		free(j->headers[i]);
	free(j->body);
	buf_free(&j->reply);
	free(j->error);
	free(j);
}

static void repl_finish(http_req *req, void *arg)
{
	struct repl_job *j = arg;
	if (j->error) {
		http_resp_error(req, 500, "%s", j->error);
	} else {
		if (j->etag[0])
			http_resp_header(req, "ETag", j->etag);
		if (j->reply.len)
			http_resp_send_json(req, j->status, &j->reply);
		else
			http_resp_send(req, j->status, NULL, 0);
	}
	repl_job_free(j);
}

static void repl_run(void *arg)
{
	struct repl_job *j = arg;
	char **urls;
	int n;
	wfs_err err = lookup_replicas(j->vs, j->vid, &urls, &n);

	if (err) {
		j->error = xasprintf("replication of volume %" PRIu32 ": lookup failed: %s", j->vid,
				     wfs_strerror(err));
	}
	for (int i = 0; !err && i < n && !j->error; i++) {
		struct http_result res;
		char *url = xasprintf("http://%s%s", urls[i], j->uri);
		http_result_init(&res);
		err = http_request(j->method, url, (const char *const *)j->headers, j->body,
				   j->body_len, REPLICA_TIMEOUT_MS, &res);
		if (err || res.status < 200 || res.status > 299)
			j->error = xasprintf("replica %s failed: %s", urls[i],
					     err ? wfs_strerror(err)
						 : (res.body.len ? res.body.data : "error status"));
		http_result_free(&res);
		free(url);
	}
	if (urls)
		free_urls(urls, n);
	http_req_defer(j->req, repl_finish, j);
}

/* True when this request must be forwarded to the other replicas of v. */
static bool needs_replication(http_req *req, volume *v)
{
	struct volume_info in;
	const char *type = http_req_query(req, "type");
	if (type && !strcmp(type, "replicate"))
		return false;
	volume_get_info(v, &in);
	return replica_placement_copies(&in.rp) > 1;
}

/* Builds the forwarded URI: the original path and query plus type=replicate (and ts). */
static char *replica_uri(http_req *req, uint64_t ts)
{
	const char *q = http_req_query_string(req);
	buf b = BUF_INIT;
	char *uri;
	const char *full = http_req_uri(req), *qm = strchr(full, '?');
	buf_append(&b, full, qm ? (size_t)(qm - full) : strlen(full));
	buf_append_str(&b, "?type=replicate");
	if (ts && !http_req_query(req, "ts"))
		buf_printf(&b, "&ts=%" PRIu64, ts);
	if (*q) {
		buf_append_byte(&b, '&');
		buf_append_str(&b, q);
	}
	uri = buf_steal(&b, NULL);
	return uri;
}

/* Hands the response of a local change to a replication job. Takes reply. */
static void replicate(struct volume_server *vs, http_req *req, uint32_t vid, uint64_t ts,
		      const char *data, size_t len, int status, buf *reply, const char *etag)
{
	struct repl_job *j = xcalloc(1, sizeof(*j));
	const char *ct = http_req_header(req, "Content-Type");
	const char *md5 = http_req_header(req, "Content-MD5");
	int h = 0;

	j->vs = vs;
	j->req = req;
	j->vid = vid;
	j->method = http_req_method(req) == HTTP_DELETE ? "DELETE"
		    : http_req_method(req) == HTTP_POST  ? "POST"
							 : "PUT";
	j->uri = replica_uri(req, ts);
	if (ct)
		j->headers[h++] = xasprintf("Content-Type: %s", ct);
	if (md5)
		j->headers[h++] = xasprintf("Content-MD5: %s", md5);
	j->headers[h++] = xstrdup("Expect:"); /* no 100-continue round trip */
	if (len) {
		j->body = xmalloc(len);
		memcpy(j->body, data, len);
		j->body_len = len;
	}
	j->status = status;
	j->reply = *reply;
	buf_init(reply);
	snprintf(j->etag, sizeof(j->etag), "%s", etag ? etag : "");
	if (!vs_submit(vs, repl_run, j)) {
		repl_job_free(j);
		http_resp_error(req, 503, "server is stopping");
	}
}

/* ---- upload ---- */

struct upload {
	bool in_file, done, seen_part;
	buf data;
	char filename[256];
	char mime[256];
};

static void copy_bounded(char *dst, size_t dstsz, const char *src)
{
	size_t n = src ? strlen(src) : 0;
	if (n >= dstsz)
		n = 0; /* SeaweedFS drops names and types of 256 bytes or more */
	memcpy(dst, src ? src : "", n);
	dst[n] = '\0';
}

static bool mp_on_part(const struct multipart_part *part, void *arg)
{
	struct upload *u = arg;
	/* the first part with a file name, else the very first part */
	if (u->done || (u->seen_part && !part->filename))
		return true;
	if (u->seen_part && part->filename)
		buf_reset(&u->data);
	u->seen_part = true;
	u->in_file = true;
	copy_bounded(u->filename, sizeof(u->filename), part->filename);
	copy_bounded(u->mime, sizeof(u->mime), part->content_type);
	return true;
}

static bool mp_on_data(const char *data, size_t len, void *arg)
{
	struct upload *u = arg;
	if (u->in_file)
		buf_append(&u->data, data, len);
	return true;
}

static void mp_on_part_end(void *arg)
{
	struct upload *u = arg;
	if (u->in_file && u->filename[0])
		u->done = true;
	u->in_file = false;
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

static void upload_done(http_req *req, const char *data, size_t len, void *arg)
{
	struct volume_server *vs = arg;
	struct fid_path f;
	struct upload u = {0};
	struct needle n = {0};
	struct ttl ttl;
	const char *ct = http_req_header(req, "Content-Type");
	const char *ts_s = http_req_query(req, "ts"), *ttl_s = http_req_query(req, "ttl");
	const char *cm = http_req_query(req, "cm"), *md5 = http_req_header(req, "Content-MD5");
	const uint8_t *body = (const uint8_t *)data;
	size_t body_len = len;
	volume *v = NULL;
	buf pairs = BUF_INIT, reply = BUF_INIT;
	bool unchanged, is_cm = false;
	uint64_t ts = 0;
	char etag[16];
	json_w *w;
	wfs_err err;

	if (parse_fid_path(http_req_path(req), &f)) {
		http_resp_error(req, 400, "malformed file id");
		goto out;
	}
	if ((ts_s && !parse_u64(ts_s, &ts)) || ts > 0xFFFFFFFFFFull) {
		http_resp_error(req, 400, "invalid ts \"%s\"", ts_s);
		goto out;
	}
	if (ttl_s && ttl_parse(ttl_s, &ttl)) {
		http_resp_error(req, 400, "invalid ttl \"%s\"", ttl_s);
		goto out;
	}
	if (cm && !parse_bool(cm, &is_cm)) {
		http_resp_error(req, 400, "invalid cm \"%s\"", cm);
		goto out;
	}
	if (ct && !strncasecmp(ct, "multipart/form-data", 19)) {
		static const struct multipart_cb cb = {mp_on_part, mp_on_data, mp_on_part_end};
		multipart *mp = multipart_new(ct, &cb, &u);
		if (!mp || multipart_feed(mp, data, len) || multipart_finish(mp) || !u.seen_part) {
			multipart_free(mp);
			http_resp_error(req, 400, "malformed multipart body");
			goto out;
		}
		multipart_free(mp);
		body = (const uint8_t *)u.data.data;
		body_len = u.data.len;
	} else {
		if (f.filename && f.filename_len < sizeof(u.filename)) {
			memcpy(u.filename, f.filename, f.filename_len);
			u.filename[f.filename_len] = '\0';
		}
		copy_bounded(u.mime, sizeof(u.mime), ct);
	}
	if (body_len > vs->file_size_limit) {
		http_resp_error(req, 413, "file over the %" PRIu64 " byte limit", vs->file_size_limit);
		goto out;
	}
	if (md5 && !md5_matches(md5, body, body_len)) {
		http_resp_error(req, 400, "Content-MD5 does not match the body");
		goto out;
	}
	if (!strcasecmp(u.mime, "application/octet-stream"))
		u.mime[0] = '\0';
	v = store_get(vs->store, f.vid);
	if (!v) {
		http_resp_error(req, 404, "volume %" PRIu32 " not found", f.vid);
		goto out;
	}
	n.key = f.key;
	n.cookie = f.cookie;
	n.data = body ? body : (const uint8_t *)"";
	n.data_size = (uint32_t)body_len;
	n.flags = NEEDLE_FLAG_HAS_LAST_MODIFIED;
	n.last_modified = ts ? ts : (uint64_t)time(NULL);
	if (u.filename[0]) {
		n.flags |= NEEDLE_FLAG_HAS_NAME;
		n.name = u.filename;
		n.name_len = (uint8_t)strlen(u.filename);
	}
	if (u.mime[0]) {
		n.flags |= NEEDLE_FLAG_HAS_MIME;
		n.mime = u.mime;
		n.mime_len = (uint8_t)strlen(u.mime);
	}
	if (ttl_s && ttl_is_set(&ttl)) {
		n.flags |= NEEDLE_FLAG_HAS_TTL;
		ttl_to_bytes(&ttl, n.ttl);
	}
	if (is_cm)
		n.flags |= NEEDLE_FLAG_CHUNK_MANIFEST;
	if (collect_pairs(req, &pairs)) {
		n.flags |= NEEDLE_FLAG_HAS_PAIRS;
		n.pairs = (const uint8_t *)pairs.data;
		n.pairs_len = (uint16_t)pairs.len;
	}
	err = volume_write(v, &n, &unchanged);
	if (err) {
		http_resp_error(req, wfs_err_http_status(err), "write to volume %" PRIu32 ": %s",
				f.vid, err == WFS_EPERM ? "mismatching cookie" : wfs_strerror(err));
		goto out;
	}
	snprintf(etag, sizeof(etag), "%08" PRIx32, n.crc);
	w = jw_new(&reply, false);
	jw_obj_begin(w);
	jw_kv_str(w, "name", u.filename);
	jw_kv_u64(w, "size", body_len);
	jw_kv_str(w, "eTag", etag);
	if (u.mime[0])
		jw_kv_str(w, "mime", u.mime);
	jw_obj_end(w);
	jw_free(w);
	{
		char qetag[20];
		snprintf(qetag, sizeof(qetag), "\"%s\"", etag);
		if (needs_replication(req, v)) {
			if (unchanged)
				buf_reset(&reply); /* 204 has no body */
			replicate(vs, req, f.vid, n.last_modified, data, len, unchanged ? 204 : 201,
				  &reply, qetag);
			goto out;
		}
		http_resp_header(req, "ETag", qetag);
	}
	if (unchanged)
		http_resp_send(req, 204, NULL, 0);
	else
		http_resp_send_json(req, 201, &reply);
out:
	volume_unref(v);
	buf_free(&u.data);
	buf_free(&pairs);
	buf_free(&reply);
}

/* ---- delete ---- */

static void handle_delete(struct volume_server *vs, http_req *req, const struct fid_path *f)
{
	const char *ts_s = http_req_query(req, "ts");
	buf reply = BUF_INIT;
	uint64_t ts = 0;
	uint32_t size = 0;
	volume *v;
	wfs_err err;

	if (ts_s && !parse_u64(ts_s, &ts)) {
		http_resp_error(req, 400, "invalid ts \"%s\"", ts_s);
		return;
	}
	v = store_get(vs->store, f->vid);
	if (!v) {
		http_resp_error(req, 404, "volume %" PRIu32 " not found", f->vid);
		return;
	}
	err = volume_delete(v, f->key, f->cookie, &size);
	if (err) {
		http_resp_error(req, wfs_err_http_status(err), "delete: %s", wfs_strerror(err));
		goto out;
	}
	buf_printf(&reply, "{\"size\":%" PRIu32 "}", size);
	if (needs_replication(req, v)) {
		replicate(vs, req, f->vid, 0, NULL, 0, 202, &reply, NULL);
		goto out;
	}
	http_resp_send_json(req, 202, &reply);
out:
	volume_unref(v);
	buf_free(&reply);
}

/* ---- read ---- */

static bool etag_matches(const char *header, const char *etag)
{
	/* etag is quoted; the header may list several, weak ones, or "*" */
	size_t n = strlen(etag);
	const char *p = header;
	if (!strcmp(header, "*"))
		return true;
	while ((p = strstr(p, etag))) {
		if ((p == header || p[-1] == ' ' || p[-1] == ',' || p[-1] == '/') &&
		    (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
			return true;
		p += n;
	}
	/* unquoted form */
	return strlen(header) == n - 2 && !strncmp(header, etag + 1, n - 2);
}

static void quote_filename(buf *b, const char *name, size_t len)
{
	buf_append_str(b, "inline; filename=\"");
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (c == '"' || c == '\\')
			buf_append_byte(b, '\\');
		if ((unsigned char)c >= 0x20 && c != 0x7f)
			buf_append_byte(b, c);
	}
	buf_append_byte(b, '"');
}

static void send_ranges(http_req *req, const struct needle *n, const char *range_h,
			const char *ctype)
{
	struct http_range r[HTTP_MAX_RANGES];
	uint64_t size = n->data_size;
	int nr = 0;
	char hdr[128];
	wfs_err err = http_parse_range(range_h, size, r, HTTP_MAX_RANGES, &nr);

	if (err) {
		snprintf(hdr, sizeof(hdr), "bytes */%" PRIu64, size);
		http_resp_header(req, "Content-Range", hdr);
		http_resp_error(req, 416, "%s range \"%s\"",
				err == WFS_ERANGE ? "unsatisfiable" : "malformed", range_h);
		return;
	}
	if (nr == 1) {
		snprintf(hdr, sizeof(hdr), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, r[0].start,
			 r[0].start + r[0].len - 1, size);
		http_resp_header(req, "Content-Range", hdr);
		http_resp_header(req, "Content-Type", ctype);
		http_resp_send(req, 206, n->data + r[0].start, r[0].len);
		return;
	}
	{
		static const char boundary[] = "weedfs3d6b6a416f9b5e5d";
		buf b = BUF_INIT;
		for (int i = 0; i < nr; i++) {
			buf_printf(&b,
				   "\r\n--%s\r\nContent-Type: %s\r\nContent-Range: bytes %" PRIu64
				   "-%" PRIu64 "/%" PRIu64 "\r\n\r\n",
				   boundary, ctype, r[i].start, r[i].start + r[i].len - 1, size);
			buf_append(&b, n->data + r[i].start, r[i].len);
		}
		buf_printf(&b, "\r\n--%s--\r\n", boundary);
		snprintf(hdr, sizeof(hdr), "multipart/byteranges; boundary=%s", boundary);
		http_resp_header(req, "Content-Type", hdr);
		http_resp_send(req, 206, b.data, b.len);
		buf_free(&b);
	}
}

static void handle_read(struct volume_server *vs, http_req *req, const struct fid_path *f)
{
	const char *rd = http_req_query(req, "readDeleted");
	const char *inm = http_req_header(req, "If-None-Match");
	const char *ims = http_req_header(req, "If-Modified-Since");
	const char *range_h = http_req_header(req, "Range");
	const char *ctype = NULL;
	char etag[16], date[40], mime[256], namebuf[256];
	bool read_deleted = false;
	buf *rb = NULL;
	struct needle n;
	uint64_t mtime;
	volume *v;
	wfs_err err;

	if (rd && !parse_bool(rd, &read_deleted)) {
		http_resp_error(req, 400, "invalid readDeleted \"%s\"", rd);
		return;
	}
	v = store_get(vs->store, f->vid);
	if (!v) {
		http_resp_error(req, 404, "volume %" PRIu32 " not found", f->vid);
		return;
	}
	rb = read_buf_get();
	err = volume_read(v, f->key, f->cookie, read_deleted, rb, &n);
	volume_unref(v);
	if (err) {
		if (err == WFS_ECORRUPT)
			log_error("volume %" PRIu32 ": needle %" PRIx64 " is corrupt", f->vid, f->key);
		http_resp_error(req, wfs_err_http_status(err), "%s", wfs_strerror(err));
		goto out;
	}
	snprintf(etag, sizeof(etag), "\"%08" PRIx32 "\"", n.crc);
	mtime = (n.flags & NEEDLE_FLAG_HAS_LAST_MODIFIED) ? n.last_modified
							  : n.append_ns / 1000000000u;
	http_resp_header(req, "ETag", etag);
	http_resp_header(req, "Accept-Ranges", "bytes");
	if (mtime) {
		http_date_format((time_t)mtime, date, sizeof(date));
		http_resp_header(req, "Last-Modified", date);
	}
	if (inm ? etag_matches(inm, etag) : false) {
		http_resp_send(req, 304, NULL, 0);
		goto out;
	}
	if (!inm && ims && mtime) {
		time_t t;
		if (http_date_parse(ims, &t) && (time_t)mtime <= t) {
			http_resp_send(req, 304, NULL, 0);
			goto out;
		}
	}
	if (n.mime_len) {
		memcpy(mime, n.mime, n.mime_len);
		mime[n.mime_len] = '\0';
		ctype = mime;
	}
	if (!ctype && f->ext)
		ctype = http_mime_by_ext(f->ext);
	if (!ctype && n.name_len) {
		memcpy(namebuf, n.name, n.name_len);
		namebuf[n.name_len] = '\0';
		ctype = http_mime_by_ext(namebuf);
	}
	if (!ctype)
		ctype = "application/octet-stream";
	if (n.name_len || f->filename) {
		buf cd = BUF_INIT;
		if (n.name_len)
			quote_filename(&cd, n.name, n.name_len);
		else
			quote_filename(&cd, f->filename, f->filename_len);
		http_resp_header(req, "Content-Disposition", cd.data);
		buf_free(&cd);
	}
	if (n.flags & NEEDLE_FLAG_COMPRESSED)
		http_resp_header(req, "Content-Encoding", "gzip");
	if (range_h && *range_h) {
		send_ranges(req, &n, range_h, ctype);
		goto out;
	}
	http_resp_header(req, "Content-Type", ctype);
	http_resp_send(req, 200, n.data, n.data_size);
out:
	/* keep the per-thread scratch small after a big needle */
	if (rb && rb->cap > (4u << 20))
		buf_free(rb);
}

void vs_handle_needle(struct volume_server *vs, http_req *req)
{
	struct fid_path f;
	enum http_method m = http_req_method(req);
	int64_t cl;

	if (parse_fid_path(http_req_path(req), &f)) {
		http_resp_error(req, 400, "malformed file id in \"%s\"", http_req_path(req));
		return;
	}
	switch (m) {
	case HTTP_GET:
	case HTTP_HEAD:
		handle_read(vs, req, &f);
		return;
	case HTTP_DELETE:
		handle_delete(vs, req, &f);
		return;
	case HTTP_PUT:
	case HTTP_POST: {
		volume *v = store_get(vs->store, f.vid);
		const char *ct = http_req_header(req, "Content-Type");
		uint64_t limit = vs->file_size_limit;
		if (!v) {
			http_resp_error(req, 404, "volume %" PRIu32 " not found", f.vid);
			return;
		}
		volume_unref(v);
		if (ct && !strncasecmp(ct, "multipart/", 10))
			limit += MULTIPART_SLACK;
		cl = http_req_content_length(req);
		if (cl >= 0 && (uint64_t)cl > limit) {
			http_resp_error(req, 413, "body over the %" PRIu64 " byte limit",
					vs->file_size_limit);
			return;
		}
		http_req_read_body(req, limit, upload_done, vs);
		return;
	}
	default:
		http_resp_error(req, 405, "method %s not allowed", http_req_method_str(req));
	}
}
