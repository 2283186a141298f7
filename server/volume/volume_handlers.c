/*
 * Needle requests: GET/HEAD (conditional, ranges), DELETE, the dispatch of
 * PUT/POST (vs_upload.c) and replication.
 *
 * DESIGN: everything local runs on the loop thread (a read of a needle up to
 * READ_INLINE_MAX is one pread; a bigger one is streamed by vs_download.c;
 * a delete is two write calls to the page cache), except a delete with
 * fsync=true: it deletes and waits for volume_sync on a pool job, then
 * answers (or forwards, fsync=true kept) from the loop. A write or delete to a
 * replicated volume leaves the loop: the local change is made first, then a
 * pool job forwards the same request (with type=replicate) to the other
 * replicas, found through the master's /dir/lookup and cached for a few
 * seconds, and finishes the response through http_req_defer. A read of a
 * volume this server does not hold looks the volume up the same way and
 * answers 302 to a holder (path and query kept) or 404.
 *
 * Decisions where SeaweedFS is loose: a DELETE answers the needle's body
 * size as SeaweedFS does; an upload's Content-Type of
 * application/octet-stream is not stored (it is the default on reads); a
 * GET's Content-Type is the stored mime, else the URL's extension, else the
 * stored name's extension; a compressed needle (flag 0x01) is served as is
 * with Content-Encoding: gzip; the replica's copy gets the first server's
 * last-modified time (ts) so replicas stay byte-identical in content; a
 * DELETE's ts (seconds) becomes the deletion record's append time, as in
 * SeaweedFS.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "client/fid.h"
#include "server/common/placement.h"
#include "http_client.h"
#include "http_util.h"
#include "json.h"
#include "jwt.h"
#include "log.h"
#include "security.h"
#include "util.h"
#include "vs_int.h"

#define LOOKUP_TTL_NS      (5ull * 1000000000ull)
#define REPLICA_TIMEOUT_MS 30000
#define READ_INLINE_MAX    (1u << 20) /* bigger needles are streamed (vs_download.c) */

/* Scratch buffer for reads, one per loop thread, freed when the thread exits. */
static pthread_key_t read_buf_key;
static pthread_once_t read_buf_once = PTHREAD_ONCE_INIT;

static void read_buf_free(void *p)
{
	buf_free(p);
	free(p);
}

static void read_buf_init(void) { pthread_key_create(&read_buf_key, read_buf_free); }

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

/*
 * Parses /vid,keycookie[.ext], /vid/keycookie[.ext] and /vid/keycookie/filename
 * (each with an optional _N after the key). WFS_EINVAL when malformed.
 */
wfs_err vs_parse_fid_path(const char *path, struct fid_path *f)
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
	f->vid_text = p;
	f->vid_text_len = strcspn(p, ",/");
	f->key_text = fid;
	f->key_text_len = (size_t)(fid_end - fid);
	return fid_parse_key_cookie(fid, (size_t)(fid_end - fid), &f->key, &f->cookie);
}

/*
 * Signed access (jwt.signing / jwt.signing.read): a needle's write, delete or
 * read needs a token for exactly "<vid>,<key+cookie>" as the path wrote it
 * (jwt_verify strips a batch's "_N"). Replicas get the token forwarded with
 * the write. Only needles are checked, as SeaweedFS: /admin/ traffic between
 * servers is trusted (mTLS protects it, docs/security.md).
 */
static bool needle_allowed(http_req *req, const struct fid_path *f, const struct security_key *k)
{
	char fid[FID_STR_MAX + 64];

	if (!k->key)
		return true;
	if (f->vid_text_len + f->key_text_len + 2 > sizeof(fid)) {
		http_resp_error(req, 400, "file id too long");
		return false;
	}
	snprintf(fid, sizeof(fid), "%.*s,%.*s", (int)f->vid_text_len, f->vid_text,
		 (int)f->key_text_len, f->key_text);
	return jwt_req_allowed(req, k, fid);
}

/* ---- replication ---- */

void vs_locations_free(struct vs_location *locs, int n)
{
	for (int i = 0; i < n; i++) {
		free(locs[i].url);
		free(locs[i].public_url);
	}
	free(locs);
}

static struct vs_location *locations_copy(const struct vs_location *l, int n)
{
	struct vs_location *c = xcalloc((size_t)n + 1, sizeof(*c));
	for (int i = 0; i < n; i++) {
		c[i].url = xstrdup(l[i].url);
		c[i].public_url = xstrdup(l[i].public_url);
	}
	return c;
}

/* Parses /dir/lookup's answer; an unknown volume (404) has no locations. */
static wfs_err parse_lookup(const struct http_result *res, struct vs_location **locs, int *n)
{
	char err_text[128];
	yajl_val root, arr;

	if (res->status == 404)
		return WFS_OK;
	if (res->status != 200)
		return WFS_EUNAVAIL;
	root = json_parse(res->body.data, res->body.len, err_text, sizeof(err_text));
	arr = root ? json_get(root, "locations") : NULL;
	if (!arr || !YAJL_IS_ARRAY(arr)) {
		if (root)
			yajl_tree_free(root);
		return WFS_EUNAVAIL;
	}
	*locs = xcalloc(YAJL_GET_ARRAY(arr)->len + 1, sizeof(**locs));
	for (size_t i = 0; i < YAJL_GET_ARRAY(arr)->len; i++) {
		const char *u, *pu;
		yajl_val l = YAJL_GET_ARRAY(arr)->values[i];
		if (!json_get_str(l, "url", &u))
			continue;
		if (!json_get_str(l, "publicUrl", &pu) || !*pu)
			pu = u;
		(*locs)[*n].url = xstrdup(u);
		(*locs)[*n].public_url = xstrdup(pu);
		(*n)++;
	}
	yajl_tree_free(root);
	return WFS_OK;
}

wfs_err vs_lookup(struct volume_server *vs, uint32_t vid, struct vs_location **locs, int *n)
{
	struct http_result res;
	char url[512];
	uint64_t now = time_mono_ns();
	struct lookup_cache_entry *c;
	wfs_err err;

	*locs = NULL;
	*n = 0;
	pthread_mutex_lock(&vs->cache_lock);
	for (int i = 0; i < vs->ncache; i++) {
		c = &vs->cache[i];
		if (c->vid == vid && c->expires_ns > now) {
			*locs = locations_copy(c->locs, c->nlocs);
			*n = c->nlocs;
			pthread_mutex_unlock(&vs->cache_lock);
			return WFS_OK;
		}
	}
	pthread_mutex_unlock(&vs->cache_lock);
	if (!vs->masters)
		return WFS_EUNAVAIL;
	snprintf(url, sizeof(url), "/dir/lookup?volumeId=%" PRIu32, vid);
	http_result_init(&res);
	err = master_list_request(vs->masters, "GET", url, NULL, NULL, 0, 10000, &res, NULL, 0);
	if (!err)
		err = parse_lookup(&res, locs, n);
	http_result_free(&res);
	if (err)
		return err;
	pthread_mutex_lock(&vs->cache_lock);
	for (int i = 0; i < vs->ncache; i++) {
		if (vs->cache[i].vid == vid) {
			vs_locations_free(vs->cache[i].locs, vs->cache[i].nlocs);
			vs->cache[i] = vs->cache[--vs->ncache];
			break;
		}
	}
	vs->cache = xrealloc(vs->cache, (size_t)(vs->ncache + 1) * sizeof(*vs->cache));
	c = &vs->cache[vs->ncache++];
	c->vid = vid;
	c->expires_ns = now + LOOKUP_TTL_NS;
	c->locs = locations_copy(*locs, *n);
	c->nlocs = *n;
	pthread_mutex_unlock(&vs->cache_lock);
	return WFS_OK;
}

wfs_err vs_check_replicas(struct volume_server *vs, uint32_t vid, const struct vs_location *locs,
			  int n)
{
	struct volume_info in;
	volume *v = volume_store_get(vs->store, vid);
	int others = 0;

	if (!v)
		return WFS_ENOENT;
	volume_get_info(v, &in);
	volume_unref(v);
	for (int i = 0; i < n; i++)
		others += strcmp(locs[i].url, vs->self) != 0;
	/* as SeaweedFS: fewer holders than the placement asks for fails the write */
	return others + 1 < replica_placement_copies(&in.rp) ? WFS_ENOENT : WFS_OK;
}

struct repl_job {
	struct volume_server *vs;
	http_req *req;
	uint32_t vid;
	const char *method;
	char *uri;        /* path?query with type=replicate (and ts) added */
	char *headers[5]; /* NULL-terminated */
	char *body;
	size_t body_len;
	int status;    /* the local answer, sent when every replica succeeded */
	buf reply;     /* its body (JSON), empty for none */
	char etag[16]; /* ETag header for writes, "" for none */
	char *error;   /* set when a replica failed */
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

/* Drops vid's cached locations, so the next lookup asks the master. */
static void lookup_forget(struct volume_server *vs, uint32_t vid)
{
	pthread_mutex_lock(&vs->cache_lock);
	for (int i = 0; i < vs->ncache; i++)
		if (vs->cache[i].vid == vid)
			vs->cache[i].expires_ns = 0;
	pthread_mutex_unlock(&vs->cache_lock);
}

static bool url_in(char **done, int ndone, const char *url)
{
	for (int i = 0; i < ndone; i++)
		if (!strcmp(done[i], url))
			return true;
	return false;
}

/*
 * One pass over the replicas the lookup names, skipping those already done (added to
 * done); false with j->error set at the first failure.
 */
static bool repl_pass(struct repl_job *j, char ***done, int *ndone)
{
	struct vs_location *locs;
	int n;
	wfs_err err = vs_lookup(j->vs, j->vid, &locs, &n);

	free(j->error);
	j->error = NULL;
	if (!err)
		err = vs_check_replicas(j->vs, j->vid, locs, n);
	if (err) {
		j->error = xasprintf("replication of volume %" PRIu32 ": %s", j->vid,
				     err == WFS_EUNAVAIL ? "lookup failed" : "replicas missing");
	}
	for (int i = 0; !err && i < n && !j->error; i++) {
		struct http_result res;
		char *url;
		if (!strcmp(locs[i].url, j->vs->self) || url_in(*done, *ndone, locs[i].url))
			continue;
		url = xasprintf("http://%s%s", locs[i].url, j->uri);
		http_result_init(&res);
		err = http_request(j->method, url, (const char *const *)j->headers, j->body,
				   j->body_len, REPLICA_TIMEOUT_MS, &res);
		if (err || res.status < 200 || res.status > 299) {
			j->error = xasprintf("replica %s failed: %s", locs[i].url,
					     err ? wfs_strerror(err)
						 : (res.body.len ? res.body.data : "error status"));
		} else {
			*done = xrealloc(*done, (size_t)(*ndone + 1) * sizeof(**done));
			(*done)[(*ndone)++] = xstrdup(locs[i].url);
		}
		http_result_free(&res);
		free(url);
	}
	vs_locations_free(locs, n);
	return !j->error;
}

/*
 * Forwards to every other replica. A failure may come from locations cached before the
 * topology changed (a dead server replaced by a repaired copy): the cache is dropped and
 * the master asked once more; replicas that already took the write are not sent it again.
 */
static void repl_run(void *arg)
{
	struct repl_job *j = arg;
	char **done = NULL;
	int ndone = 0;

	if (!repl_pass(j, &done, &ndone)) {
		lookup_forget(j->vs, j->vid);
		repl_pass(j, &done, &ndone);
	}
	for (int i = 0; i < ndone; i++)
		free(done[i]);
	free(done);
	http_req_defer(j->req, repl_finish, j);
}

bool vs_needs_replication(http_req *req, volume *v)
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

void vs_replicate(struct volume_server *vs, http_req *req, uint32_t vid, uint64_t ts,
		  const char *data, size_t len, int status, buf *reply, const char *etag)
{
	struct repl_job *j = xcalloc(1, sizeof(*j));
	const char *ct = http_req_header(req, "Content-Type");
	const char *md5 = http_req_header(req, "Content-MD5");
	const char *auth = http_req_header(req, "Authorization");
	int h = 0;

	j->vs = vs;
	j->req = req;
	j->vid = vid;
	j->method = http_req_method(req) == HTTP_DELETE ? "DELETE"
		    : http_req_method(req) == HTTP_POST ? "POST"
							: "PUT";
	j->uri = replica_uri(req, ts);
	if (ct)
		j->headers[h++] = xasprintf("Content-Type: %s", ct);
	if (md5)
		j->headers[h++] = xasprintf("Content-MD5: %s", md5);
	if (auth) /* the client's token goes on to the replicas (?jwt= rides in the URI) */
		j->headers[h++] = xasprintf("Authorization: %s", auth);
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

/* ---- delete ---- */

bool vs_query_fsync(http_req *req, bool *fsync)
{
	const char *s = http_req_query(req, "fsync");
	*fsync = false;
	if (s && !parse_bool(s, fsync)) {
		http_resp_error(req, 400, "invalid fsync \"%s\"", s);
		return false;
	}
	return true;
}

/* Answers a local delete's outcome, forwarding it to the replicas first. Loop thread. */
static void delete_answer(struct volume_server *vs, http_req *req, volume *v, uint32_t vid,
			  wfs_err err, uint32_t size)
{
	buf reply = BUF_INIT;

	if (err) {
		http_resp_error(req, wfs_err_http_status(err), "delete: %s", wfs_strerror(err));
		return;
	}
	buf_printf(&reply, "{\"size\":%" PRIu32 "}", size);
	if (vs_needs_replication(req, v))
		vs_replicate(vs, req, vid, 0, NULL, 0, 202, &reply, NULL);
	else
		http_resp_send_json(req, 202, &reply);
	buf_free(&reply);
}

/* A delete with fsync=true: the delete and its sync run on the pool. */
struct delete_job {
	struct volume_server *vs;
	http_req *req;
	volume *v; /* referenced */
	uint32_t vid, cookie;
	uint64_t key, append_ns;
	uint32_t size;
	wfs_err err;
};

static void delete_job_done(http_req *req, void *arg)
{
	struct delete_job *j = arg;
	delete_answer(j->vs, req, j->v, j->vid, j->err, j->size);
	volume_unref(j->v);
	free(j);
}

static void delete_job_run(void *arg)
{
	struct delete_job *j = arg;
	j->err = volume_delete(j->v, j->key, j->cookie, j->append_ns, &j->size);
	if (!j->err)
		j->err = volume_sync(j->v);
	http_req_defer(j->req, delete_job_done, j);
}

static void handle_delete(struct volume_server *vs, http_req *req, const struct fid_path *f)
{
	const char *ts_s = http_req_query(req, "ts");
	struct delete_job *j;
	uint64_t ts = 0;
	uint32_t size = 0;
	bool fsync;
	volume *v;
	wfs_err err;

	/* SeaweedFS keeps ts as the deletion record's append time */
	if ((ts_s && !parse_u64(ts_s, &ts)) || ts > UINT64_MAX / 1000000000u) {
		http_resp_error(req, 400, "invalid ts \"%s\"", ts_s);
		return;
	}
	if (!vs_query_fsync(req, &fsync))
		return;
	v = volume_store_get(vs->store, f->vid);
	if (!v) {
		if (!vs_ec_delete(vs, req, f))
			http_resp_error(req, 404, "volume %" PRIu32 " not found", f->vid);
		return;
	}
	if (!fsync) {
		err = volume_delete(v, f->key, f->cookie, ts * 1000000000u, &size);
		delete_answer(vs, req, v, f->vid, err, size);
		volume_unref(v);
		return;
	}
	j = xcalloc(1, sizeof(*j));
	j->vs = vs;
	j->req = req;
	j->v = v;
	j->vid = f->vid;
	j->key = f->key;
	j->cookie = f->cookie;
	j->append_ns = ts * 1000000000u;
	if (!vs_submit(vs, delete_job_run, j)) {
		http_resp_error(req, 503, "server is stopping");
		volume_unref(v);
		free(j);
	}
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
		static const char boundary[] = VS_RANGE_BOUNDARY;
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

/* ---- redirect for a volume held elsewhere ---- */

struct redirect_job {
	struct volume_server *vs;
	http_req *req;
	uint32_t vid;
	char *location; /* result, NULL for none */
};

static void redirect_done(http_req *req, void *arg)
{
	struct redirect_job *j = arg;
	if (j->location) {
		char *loc = xasprintf("%s%s", j->location, http_req_uri(req));
		http_resp_header(req, "Location", loc);
		free(loc);
		http_resp_send(req, 302, NULL, 0);
	} else {
		http_resp_error(req, 404, "volume %" PRIu32 " not found", j->vid);
	}
	free(j->location);
	free(j);
}

static void redirect_run(void *arg)
{
	struct redirect_job *j = arg;
	struct vs_location *locs;
	int n;

	if (!vs_lookup(j->vs, j->vid, &locs, &n)) {
		for (int i = 0; i < n && !j->location; i++)
			if (strcmp(locs[i].url, j->vs->self))
				j->location = xasprintf("http://%s", locs[i].public_url);
		vs_locations_free(locs, n);
	}
	http_req_defer(j->req, redirect_done, j);
}

/*
 * Answers a read of a volume this server does not hold: 302 to a server that
 * holds it (path and query kept), from the master's lookup on a pool thread,
 * or 404. The request's URI is appended on the loop thread, afterwards.
 */
static void redirect(struct volume_server *vs, http_req *req, uint32_t vid)
{
	struct redirect_job *j = xcalloc(1, sizeof(*j));
	j->vs = vs;
	j->req = req;
	j->vid = vid;
	if (!vs_submit(vs, redirect_run, j)) {
		free(j);
		http_resp_error(req, 503, "server is stopping");
	}
}

static void handle_read(struct volume_server *vs, http_req *req, const struct fid_path *f)
{
	const char *rd = http_req_query(req, "readDeleted");
	bool read_deleted = false;
	struct needle_blob blob = {-1, 0};
	buf *rb;
	struct needle n;
	volume *v;
	wfs_err err;

	if (rd && !parse_bool(rd, &read_deleted)) {
		http_resp_error(req, 400, "invalid readDeleted \"%s\"", rd);
		return;
	}
	v = volume_store_get(vs->store, f->vid);
	if (!v) {
		if (!vs_ec_read(vs, req, f))
			redirect(vs, req, f->vid);
		return;
	}
	rb = read_buf_get();
	err = volume_read_ex(v, f->key, f->cookie, read_deleted, READ_INLINE_MAX, rb, &n, &blob);
	volume_unref(v);
	if (err) {
		if (err == WFS_ECORRUPT)
			log_error("volume %" PRIu32 ": needle %" PRIx64 " is corrupt", f->vid,
				  f->key);
		http_resp_error(req, wfs_err_http_status(err), "%s", wfs_strerror(err));
	} else {
		vs_answer_needle(vs, req, f, &n, &blob);
	}
	if (blob.fd >= 0)
		close(blob.fd);
	/* keep the per-thread scratch small after a big needle */
	if (rb->cap > (4u << 20))
		buf_free(rb);
}

void vs_answer_needle(struct volume_server *vs, http_req *req, const struct fid_path *f,
		      const struct needle *np, struct needle_blob *blob)
{
	const char *inm = http_req_header(req, "If-None-Match");
	const char *ims = http_req_header(req, "If-Modified-Since");
	const char *range_h = http_req_header(req, "Range");
	const char *ctype = NULL;
	char etag[16], date[40], mime[256], namebuf[256];
	struct needle n = *np;
	uint64_t mtime;

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
		return;
	}
	if (!inm && ims && mtime) {
		time_t t;
		if (http_date_parse(ims, &t) && (time_t)mtime <= t) {
			http_resp_send(req, 304, NULL, 0);
			return;
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
	if (blob->fd >= 0) {
		vs_stream_needle(vs, req, &n, blob, range_h, ctype);
		return;
	}
	if (range_h && *range_h) {
		send_ranges(req, &n, range_h, ctype);
		return;
	}
	http_resp_header(req, "Content-Type", ctype);
	http_resp_send(req, 200, n.data, n.data_size);
}

void vs_handle_needle(struct volume_server *vs, http_req *req)
{
	struct fid_path f;
	enum http_method m = http_req_method(req);

	if (vs_parse_fid_path(http_req_path(req), &f)) {
		http_resp_error(req, 400, "malformed file id in \"%s\"", http_req_path(req));
		return;
	}
	if (!needle_allowed(req, &f,
			    m == HTTP_GET || m == HTTP_HEAD ? &security()->volume_read
							    : &security()->volume_write))
		return;
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
		volume *v = volume_store_get(vs->store, f.vid);
		if (!v) {
			http_resp_error(req, 404, "volume %" PRIu32 " not found", f.vid);
			return;
		}
		volume_unref(v);
		vs_handle_upload(vs, req, &f);
		return;
	}
	default:
		http_resp_error(req, 405, "method %s not allowed", http_req_method_str(req));
	}
}
