/*
 * Bucket logging's requests and delivery (s3_logging.h): ?logging of a
 * bucket, the record of each request on a logged bucket, and the thread that
 * writes the buffered records into their target buckets.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include "client/blob_client.h"
#include "client/chunk_io.h"
#include "client/filer_meta.h"
#include "log.h"
#include "md5.h"
#include "s3/s3_iam.h"
#include "s3/s3_int.h"
#include "s3/s3_logging.h"
#include "s3/s3_meta.h"
#include "util.h"

/* Deliveries a buffer gets when the cluster is unavailable, a flush interval apart. */
#define DELIVERY_TRIES 3

/* The records bound for one log object: one source, one target and key form. */
struct target {
	struct s3_logging_config c; /* target, prefix, keys, owner (no grants) */
	char *source;
	int64_t first_ns; /* the first record's time (EventTime partitions) */
	int tries;        /* deliveries that failed for a moment (the filer, a volume away) */
	buf data;
	struct target *next;
};

struct s3_logging {
	struct s3_gateway *g;
	int flush_s;
	pthread_t th;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct target *pending; /* protected by mu */
	bool stopping, full;    /* protected by mu */
};

/* ---- delivery ---- */

static void target_free(struct target *t)
{
	s3_logging_config_free(&t->c);
	free(t->source);
	buf_free(&t->data);
	free(t);
}

/*
 * Writes t's records as one object of its target bucket, through the object
 * commit path any PUT takes. A scratch request carries the gateway and the
 * bucket (as the lifecycle sweeper's); it answers no one. WFS_OK or the
 * error (logged). Blocks.
 */
static wfs_err deliver(struct s3_gateway *g, struct target *t)
{
	struct s3_req *r = xcalloc(1, sizeof(*r));
	struct chunk_writer_opts wo = {.chunk_size = g->chunk_size, .inline_max = g->inline_max};
	struct filer_meta_new nw = {0};
	struct filer_chunk *chunks = NULL;
	struct s3_meta m = {0};
	chunk_writer *cw = NULL;
	const uint8_t *data;
	uint8_t sum[MD5_SIZE];
	char md5_hex[33], *path = NULL;
	uint64_t unique;
	buf key = BUF_INIT;
	size_t n = 0, len;
	bool committed = false;
	wfs_err rc;

	r->g = g;
	r->bucket = t->c.target_bucket;
	buf_init(&r->body);
	buf_init(&r->in);
	snprintf(r->id, sizeof(r->id), "%016llX", (unsigned long long)atomic_fetch_add(&g->next_id, 1));
	if (getrandom(&unique, sizeof(unique), 0) != (ssize_t)sizeof(unique))
		unique = time_now_ns() ^ (uint64_t)(uintptr_t)t;
	nw.time_ns = (int64_t)time_now_ns();
	s3_logging_object_key(&t->c, t->source,
			      t->c.keys == S3_LOG_KEYS_EVENT_TIME ? t->first_ns : nw.time_ns, unique,
			      g->region, &key);
	path = s3_object_path(t->c.target_bucket, (const char *)key.data);
	if (!path) {
		rc = WFS_EINVAL;
		goto out;
	}
	if (!s3_cipher(g, &wo.encrypt, &rc))
		goto out;
	cw = chunk_writer_new(g->bc, &wo, &rc);
	if (!cw)
		goto out;
	rc = chunk_writer_write(cw, t->data.data, t->data.len);
	if (!rc)
		rc = chunk_writer_finish(cw, &chunks, &n);
	if (rc)
		goto out;
	md5_digest(t->data.data, t->data.len, sum);
	hex_encode(sum, MD5_SIZE, md5_hex);
	if (chunk_writer_inline(cw, &data, &len)) {
		nw.has_content = true;
		nw.content = data;
		nw.content_len = len;
	} else {
		nw.chunks = chunks;
		nw.n_chunks = n;
	}
	m.e = filer_entry_new("/", "object");
	s3_meta_stamp(&m, nw.time_ns, md5_hex, S3_CKSUM_NONE, NULL);
	nw.mode = S_IFREG | 0644;
	nw.mime = "text/plain";
	nw.xattrs = m.e->xattrs;
	nw.n_xattrs = m.e->n_xattrs;
	rc = s3_commit_object(r, path, &nw, NULL);
	committed = !rc;
out:
	if (rc)
		log_warn("access log for bucket %s: could not write %s/%s (%zu bytes): %s",
			 t->source, t->c.target_bucket, key.data ? (const char *)key.data : "",
			 t->data.len, wfs_strerror(rc));
	else
		log_debug("access log for bucket %s: %s/%s, %zu bytes", t->source,
			  t->c.target_bucket, (const char *)key.data, t->data.len);
	if (!committed && n)
		s3_free_chunks(g, chunks, n);
	filer_chunks_free(chunks, n);
	chunk_writer_free(cw);
	s3_meta_free(&m);
	buf_free(&key);
	free(path);
	buf_free(&r->body);
	buf_free(&r->in);
	s3_headers_clear(r);
	free(r->hnames);
	free(r->hvalues);
	free(r);
	return rc;
}

/* Delivers every buffer taken from the pending list. */
static void deliver_all(struct s3_logging *lg)
{
	struct target *t;
	pthread_mutex_lock(&lg->mu);
	t = lg->pending;
	lg->pending = NULL;
	lg->full = false;
	pthread_mutex_unlock(&lg->mu);
	while (t) {
		struct target *next = t->next;
		wfs_err rc = deliver(lg->g, t);
		bool again = (rc == WFS_EUNAVAIL || rc == WFS_ETIMEDOUT) && ++t->tries < DELIVERY_TRIES;
		pthread_mutex_lock(&lg->mu);
		again = again && !lg->stopping;
		if (again) {
			/* kept for the next pass; records that come meanwhile join it */
			t->next = lg->pending;
			lg->pending = t;
		}
		pthread_mutex_unlock(&lg->mu);
		if (!again && rc)
			log_warn("access log for bucket %s: %zu bytes of records dropped", t->source,
				 t->data.len);
		if (!again)
			target_free(t);
		t = next;
	}
}

/* The delivery thread: every flush_s seconds, or sooner when a buffer is full; once more at
 * the stop. */
static void *deliver_main(void *arg)
{
	struct s3_logging *lg = arg;
	bool stop = false;
	while (!stop) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += lg->flush_s;
		pthread_mutex_lock(&lg->mu);
		while (!lg->stopping && !lg->full &&
		       pthread_cond_timedwait(&lg->cv, &lg->mu, &until) != ETIMEDOUT)
			;
		stop = lg->stopping;
		pthread_mutex_unlock(&lg->mu);
		deliver_all(lg);
	}
	return NULL;
}

struct s3_logging *s3_logging_new(struct s3_gateway *g, int flush_s)
{
	struct s3_logging *lg = xcalloc(1, sizeof(*lg));
	lg->g = g;
	lg->flush_s = flush_s < 1 ? 1 : flush_s;
	pthread_mutex_init(&lg->mu, NULL);
	pthread_cond_init(&lg->cv, NULL);
	lg->started = !thread_start(&lg->th, NULL, deliver_main, lg, "wfs-s3-logs");
	if (!lg->started)
		log_warn("access logs: no delivery thread; they are delivered at the stop only");
	return lg;
}

void s3_logging_free(struct s3_logging *lg)
{
	if (!lg)
		return;
	pthread_mutex_lock(&lg->mu);
	lg->stopping = true;
	pthread_cond_signal(&lg->cv);
	pthread_mutex_unlock(&lg->mu);
	if (lg->started)
		pthread_join(lg->th, NULL);
	deliver_all(lg); /* what came after the thread's last pass */
	pthread_mutex_destroy(&lg->mu);
	pthread_cond_destroy(&lg->cv);
	free(lg);
}

/* Appends one record line (without its owner field) to the buffer of c's target. */
static void buffer_add(struct s3_logging *lg, const struct s3_logging_config *c,
		       const char *source, int64_t when_ns, const char *line, size_t len)
{
	struct target *t;
	const char *owner = c->owner && *c->owner ? c->owner : "-";

	pthread_mutex_lock(&lg->mu);
	for (t = lg->pending; t; t = t->next)
		if (!strcmp(t->c.target_bucket, c->target_bucket) &&
		    !strcmp(t->c.target_prefix, c->target_prefix) && t->c.keys == c->keys &&
		    !strcmp(t->source, source) && !strcmp(t->c.owner, owner))
			break;
	if (!t) {
		t = xcalloc(1, sizeof(*t));
		t->c.target_bucket = xstrdup(c->target_bucket);
		t->c.target_prefix = xstrdup(c->target_prefix);
		t->c.keys = c->keys;
		t->c.owner = xstrdup(owner);
		t->source = xstrdup(source);
		t->first_ns = when_ns;
		buf_init(&t->data);
		t->next = lg->pending;
		lg->pending = t;
	}
	buf_append_str(&t->data, owner);
	buf_append_byte(&t->data, ' ');
	buf_append(&t->data, line, len);
	if (t->data.len >= S3_LOG_FLUSH_BYTES && !lg->full) {
		lg->full = true;
		pthread_cond_signal(&lg->cv);
	}
	pthread_mutex_unlock(&lg->mu);
}

/* ---- the record of a request ---- */

/* The subresource the request names (the first of the query that S3 logs by), or NULL. */
static const char *subresource_of(struct s3_req *r)
{
	static const char *const subs[] = {
		"logging",    "tagging",    "lifecycle", "cors",       "encryption",
		"versioning", "policyStatus", "policy",  "object-lock", "retention",
		"legal-hold", "attributes", "acl",       "delete",     "uploads",
		"versions",   "location",   "uploadId",  "ownershipControls", "publicAccessBlock",
	};
	for (size_t i = 0; i < ARRAY_LEN(subs); i++)
		if (http_req_query(r->req, subs[i]))
			/* UploadPart(Copy): S3 names it PART, the upload's other calls UPLOAD */
			return !strcmp(subs[i], "uploadId") && http_req_method(r->req) == HTTP_PUT
				       ? "part"
				       : subs[i];
	return NULL;
}

/* The error code of r's XML error answer into out ("" when none). */
static void error_code(const struct s3_req *r, char *out, size_t outlen)
{
	const char *b = (const char *)r->body.data, *s, *e;
	out[0] = '\0';
	if (r->status < 300 || !b)
		return;
	s = strstr(b, "<Code>");
	e = s ? strstr(s, "</Code>") : NULL;
	if (s && e)
		snprintf(out, outlen, "%.*s", (int)(e - s - 6), s + 6);
}

static const char *answer_header(const struct s3_req *r, const char *name)
{
	for (size_t i = 0; i < r->nh; i++)
		if (!strcasecmp(r->hnames[i], name))
			return r->hvalues[i];
	return NULL;
}

/* The object's size as the answer tells it: Content-Range's total, else what was sent for a
 * GET, what came for a PUT; -1 when the request has no object. */
static int64_t object_size(const struct s3_req *r, enum http_method m)
{
	const char *range = answer_header(r, "Content-Range"), *slash;
	if (!r->key || r->status >= 300)
		return -1;
	if (range && (slash = strrchr(range, '/')) && slash[1] != '*')
		return strtoll(slash + 1, NULL, 10);
	if (m == HTTP_GET)
		return r->log_sent;
	if (m == HTTP_HEAD)
		return r->head_length;
	if (m == HTTP_PUT && !http_req_header(r->req, "x-amz-copy-source"))
		return r->decoded_length >= 0 ? r->decoded_length
					      : http_req_content_length(r->req);
	return -1;
}

/* SigV4 or SigV2, and how the signature came: from the request's headers and query. */
static void signature_of(struct s3_req *r, const char **version, const char **how)
{
	const char *auth = http_req_header(r->req, "Authorization");
	*version = *how = NULL;
	if (auth) {
		*version = !strncmp(auth, "AWS4-", 5) ? "SigV4" : "SigV2";
		*how = "AuthHeader";
	} else if (http_req_query(r->req, "X-Amz-Algorithm")) {
		*version = "SigV4";
		*how = "QueryString";
	} else if (http_req_query(r->req, "Signature")) {
		*version = "SigV2";
		*how = "QueryString";
	}
}

/* A record waiting for its bucket's configuration, read on a worker. */
struct late {
	struct s3_gateway *g;
	char *bucket;
	int64_t when_ns;
	buf line;
};

/* Reads the bucket's logging configuration out of its entry; false: not logged. */
static bool config_of(const struct filer_entry *e, struct s3_logging_config *c)
{
	const struct filer_xattr *x = e ? filer_entry_xattr_get(e, S3_XATTR_LOGGING) : NULL;
	return x && s3_logging_decode((const char *)x->value, x->value_len, c);
}

static void late_run(void *arg)
{
	struct late *l = arg;
	struct filer_entry *e = NULL;
	struct s3_logging_config c;
	if (!s3_bucket_lookup(l->g, l->bucket, &e) && config_of(e, &c)) {
		buffer_add(l->g->logging, &c, l->bucket, l->when_ns, (const char *)l->line.data,
			   l->line.len);
		s3_logging_config_free(&c);
	}
	filer_entry_free(e);
	free(l->bucket);
	buf_free(&l->line);
	free(l);
}

void s3_logging_note(struct s3_req *r)
{
	struct s3_gateway *g = r->g;
	struct s3_logging_config c;
	struct s3_log_record rec = {0};
	enum http_method m;
	char op[48], code[64];
	bool logged;
	int found;
	uint64_t now = time_now_ns();
	buf line = BUF_INIT, stored = BUF_INIT, uri = BUF_INIT;

	if (!r->bucket || !r->req || !g->logging || atomic_load(&g->closing) ||
	    !s3_bucket_name_ok(r->bucket))
		return;
	found = s3_bucket_peek_xattr(g, r->bucket, S3_XATTR_LOGGING, &stored);
	logged = found > 0 && s3_logging_decode((const char *)stored.data, stored.len, &c);
	buf_free(&stored);
	if (found >= 0 && !logged)
		return; /* the common case: a bucket without logging */
	error_code(r, code, sizeof(code));
	if (found < 0 && !strcmp(code, "NoSuchBucket"))
		return; /* nothing to log for, and no filer call per request to learn it */
	m = http_req_method(r->req);
	/* a copy is REST.COPY.OBJECT (or .PART) in S3's records */
	s3_logging_operation(m == HTTP_PUT && http_req_header(r->req, "x-amz-copy-source")
				     ? "COPY"
				     : http_req_method_str(r->req),
			     r->key != NULL, subresource_of(r), op, sizeof(op));
	rec.bucket = r->bucket;
	rec.time_ns = (int64_t)r->t0_ns;
	rec.remote_ip = http_req_peer(r->req);
	rec.requester = r->who ? s3_identity_name(r->who) : NULL;
	rec.request_id = r->id;
	rec.operation = op;
	rec.key = r->key;
	rec.method = http_req_method_str(r->req);
	s3_logging_uri(http_req_uri(r->req), &uri);
	rec.uri = (const char *)uri.data;
	rec.protocol = "HTTP/1.1";
	rec.status = r->status;
	rec.error_code = code;
	rec.bytes_sent = r->log_sent;
	rec.object_size = object_size(r, m);
	/* measured as the answer starts (a streamed GET's record does not wait for its last
	   byte), so the total and the turn-around time are one figure */
	rec.total_ms = (int64_t)((now - r->t0_ns) / 1000000);
	rec.turnaround_ms = rec.total_ms;
	rec.referer = http_req_header(r->req, "Referer");
	rec.user_agent = http_req_header(r->req, "User-Agent");
	rec.version_id = answer_header(r, "x-amz-version-id");
	signature_of(r, &rec.signature_version, &rec.auth_type);
	rec.host = http_req_header(r->req, "Host");
	/* the owner field is the configuration's: it is written when the record is buffered */
	rec.owner = "";
	s3_logging_format(&line, &rec);
	buf_free(&uri);
	/* drop the "- " of the empty owner: buffer_add writes the owner in front */
	if (logged) {
		buffer_add(g->logging, &c, r->bucket, rec.time_ns, (const char *)line.data + 2,
			   line.len - 2);
		s3_logging_config_free(&c);
		buf_free(&line);
	} else {
		/* the bucket's entry is not cached: a worker reads it (a filer call at most
		   once a second per bucket, as the cache keeps it) */
		struct late *l = xcalloc(1, sizeof(*l));
		l->g = g;
		l->bucket = xstrdup(r->bucket);
		l->when_ns = rec.time_ns;
		buf_init(&l->line);
		buf_append(&l->line, line.data + 2, line.len - 2);
		buf_free(&line);
		pool_submit(g->work, late_run, l);
	}
}

/* ---- ?logging ---- */

/*
 * Whether logs may be delivered into the target bucket (its entry te), as S3
 * judges it: the target's bucket policy allows the service principal
 * logging.s3.amazonaws.com s3:PutObject under the prefix (for logs of this
 * bucket), or, the legacy way, its ACL gives the LogDelivery group WRITE.
 * Short of both, an identity that may itself write there may point its logs
 * at it: the logs are written for it. Worker.
 */
static bool logging_delivery_allowed(struct s3_req *r, const struct filer_entry *te,
				     const struct s3_logging_config *c)
{
	return s3_service_permitted(r->g, POLICY_SERVICE_LOGGING, r->bucket, c->target_bucket,
				    c->target_prefix, "s3:PutObject") ||
	       s3_acl_log_delivery_writes(te) ||
	       s3_permitted(r, c->target_bucket, *c->target_prefix ? c->target_prefix : NULL,
			    "s3:PutObject", S3_ACT_WRITE);
}

void s3_put_logging(struct s3_req *r)
{
	struct s3_logging_config c;
	struct filer_entry *te = NULL;
	char msg[160];
	enum s3_err e;
	buf doc = BUF_INIT;
	wfs_err rc;

	if (!s3_bucket_exists(r))
		return;
	e = s3_logging_parse((const char *)r->in.data, r->in.len, &c, msg, sizeof(msg));
	if (e) {
		s3_error(r, e, "%s", msg);
		return;
	}
	if (!c.target_bucket) {
		/* an empty BucketLoggingStatus: logging off (200, as S3 answers it) */
		s3_bucket_config_remove(r, S3_XATTR_LOGGING, "removing the logging configuration");
		if (r->status == 204)
			r->status = 200;
		return;
	}
	if (!s3_bucket_name_ok(c.target_bucket) ||
	    (rc = s3_bucket_lookup(r->g, c.target_bucket, &te)) == WFS_ENOENT ||
	    rc == WFS_ENOTDIR) {
		s3_error(r, S3_INVALID_TARGET_BUCKET_FOR_LOGGING,
			 "The target bucket for logging does not exist");
	} else if (rc) {
		s3_filer_error(r, rc, "looking the target bucket up");
	} else if (!logging_delivery_allowed(r, te, &c)) {
		s3_error(r, S3_INVALID_TARGET_BUCKET_FOR_LOGGING,
			 "You must have permission to write to the target bucket %.64s for "
			 "log delivery",
			 c.target_bucket);
	} else {
		c.owner = xstrdup(r->who ? s3_identity_name(r->who) : "");
		s3_logging_encode(&c, &doc);
		s3_bucket_config_set(r, S3_XATTR_LOGGING, &doc, "storing the logging configuration");
	}
	filer_entry_free(te);
	buf_free(&doc);
	s3_logging_config_free(&c);
}

void s3_get_logging(struct s3_req *r)
{
	struct filer_entry *e = s3_bucket_entry(r);
	struct s3_logging_config c;
	bool on;
	xml_w *w;

	if (!e)
		return;
	on = config_of(e, &c);
	w = xml_w_new(&r->body);
	s3_logging_xml(w, on ? &c : NULL);
	s3_xml_ok(r, w);
	if (on)
		s3_logging_config_free(&c);
	filer_entry_free(e);
}
