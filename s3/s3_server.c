/*
 * The S3 gateway daemon (s3_server.h).
 *
 * DESIGN: requests arrive on the HTTP server's loop threads. The loop reads
 * the head, names the bucket and key (path style: /bucket/key), authenticates
 * (SigV4 is CPU only, so it runs right there), checks the identity's grant for
 * the action, and hands the operation to a worker pool, because every filer
 * call blocks (libcurl, one handle per thread). The worker builds the whole
 * answer (status, headers, XML body) into the request and defers back to the
 * loop, which sends it. Every answer carries x-amz-request-id; errors are S3's
 * XML <Error> bodies. With no identity configured the gateway is open and
 * says so loudly at start.
 */
#include "config.h"
#include "s3/s3_server.h"
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include "daemon.h"
#include "client/blob_client.h"
#include "client/chunk_io.h"
#include "client/chunk_stream.h"
#include "log.h"
#include "metrics.h"
#include "s3/s3_iam_store.h"
#include "s3/s3_int.h"
#include "s3/s3_logging.h"
#include "s3/s3_sse.h"
#include "s3/s3_session_gw.h"
#include "s3/sigv2.h"
#include "s3/sigv4.h"
#include "util.h"

/* Request bodies the gateway reads whole: bucket configuration documents... */
#define S3_CONFIG_BODY_MAX (64u << 10)
/* ... and DeleteObjects (1,000 keys of up to 1 KiB, escaped) and
   CompleteMultipartUpload (10,000 parts). */
#define S3_DELETE_BODY_MAX (8u << 20)

void s3_opts_default(struct s3_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ip = "127.0.0.1";
	o->port = 8333;
	o->filer = "127.0.0.1:8888";
	o->region = "us-east-1";
	o->chunk_mb = 4;
	o->inline_kb = 4;
	o->lifecycle_s = 3600;
	o->upload_mem_mb = 256;
	o->short_circuit = true;
	o->iam_port = 8111;
	o->logging_flush_s = 60;
}

/* ---- answers ---- */

void s3_header(struct s3_req *r, const char *name, const char *value)
{
	if (r->nh == r->caph) {
		r->caph = r->caph ? 2 * r->caph : 8;
		r->hnames = xrealloc(r->hnames, r->caph * sizeof(*r->hnames));
		r->hvalues = xrealloc(r->hvalues, r->caph * sizeof(*r->hvalues));
	}
	r->hnames[r->nh] = xstrdup(name);
	r->hvalues[r->nh] = xstrdup(value);
	r->nh++;
}

static char *resource_of(const struct s3_req *r)
{
	if (!r->bucket)
		return xstrdup("/");
	return r->key ? xasprintf("/%s/%s", r->bucket, r->key) : xasprintf("/%s", r->bucket);
}

void s3_error(struct s3_req *r, enum s3_err e, const char *fmt, ...)
{
	char msg[512];
	char *res = resource_of(r);
	va_list ap;
	xml_w *w;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	buf_reset(&r->body);
	w = xml_w_new(&r->body);
	xml_open(w, "Error");
	xml_elem(w, "Code", s3_err_code(e));
	xml_elem(w, "Message", msg);
	if (r->bucket)
		xml_elem(w, "BucketName", r->bucket);
	if (r->key)
		xml_elem(w, "Key", r->key);
	xml_elem(w, "Resource", res);
	xml_elem(w, "RequestId", r->id);
	xml_w_free(w);
	free(res);
	r->status = s3_err_status(e);
	r->ctype = "application/xml";
}

void s3_xml_ok(struct s3_req *r, xml_w *w)
{
	xml_w_free(w);
	r->status = 200;
	r->ctype = "application/xml";
}

void s3_iso8601(int64_t ns, char out[32])
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	size_t n;
	gmtime_r(&t, &tm);
	n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 32 - n, ".%03dZ", (int)(ns / 1000000 % 1000));
}

char *s3_bucket_path(const char *bucket) { return xasprintf(S3_BUCKETS_DIR "/%s", bucket); }

void s3_filer_error(struct s3_req *r, wfs_err e, const char *what)
{
	enum s3_err code = s3_err_of(e);

	if (code == S3_SERVICE_UNAVAILABLE)
		s3_error(r, code, "%s: %s, retry", what, wfs_strerror(e));
	else
		s3_error(r, code, "%s: %s", what, wfs_strerror(e));
}

void s3_header_replace(struct s3_req *r, const char *name, const char *value)
{
	for (size_t i = 0; i < r->nh; i++)
		if (!strcasecmp(r->hnames[i], name)) {
			free(r->hvalues[i]);
			r->hvalues[i] = xstrdup(value);
			return;
		}
	s3_header(r, name, value);
}

void s3_headers_clear(struct s3_req *r)
{
	for (size_t i = 0; i < r->nh; i++) {
		free(r->hnames[i]);
		free(r->hvalues[i]);
	}
	r->nh = 0;
}

static void live_add(struct s3_req *r)
{
	struct s3_gateway *g = r->g;
	pthread_mutex_lock(&g->live_mu);
	r->live_next = g->live;
	if (g->live)
		g->live->live_prev = r;
	g->live = r;
	pthread_mutex_unlock(&g->live_mu);
}

static void live_remove(struct s3_req *r)
{
	struct s3_gateway *g = r->g;
	pthread_mutex_lock(&g->live_mu);
	if (r->live_prev)
		r->live_prev->live_next = r->live_next;
	else
		g->live = r->live_next;
	if (r->live_next)
		r->live_next->live_prev = r->live_prev;
	pthread_mutex_unlock(&g->live_mu);
}

void s3_req_free(struct s3_req *r)
{
	live_remove(r);
	free(r->bucket);
	free(r->key);
	buf_free(&r->in);
	buf_free(&r->body);
	s3_headers_clear(r);
	free(r->hnames);
	free(r->hvalues);
	free(r->chain);
	if (r->session)
		OPENSSL_cleanse(r->session, sizeof(*r->session));
	free(r->session);
	filer_entry_free(r->found);
	s3_sse_free(r->sse);
	free(r->lookup_path);
	s3_iam_free(r->iam);
	free(r);
}

void s3_answer_headers(struct s3_req *r)
{
	http_resp_header(r->req, "x-amz-request-id", r->id);
	for (size_t i = 0; i < r->nh; i++)
		http_resp_header(r->req, r->hnames[i], r->hvalues[i]);
}

void s3_send_answer(struct s3_req *r)
{
	http_req *req = r->req;
	bool head = r->head_length >= 0 && (r->status == 200 || r->status == 206);
	r->log_sent = head ? 0 : (int64_t)r->body.len;
	s3_logging_note(r);
	s3_answer_headers(r);
	if (r->ctype && r->body.len)
		http_resp_header(req, "Content-Type", r->ctype);
	if (head) {
		/* HEAD of an object: its length, no body */
		http_resp_start(req, r->status, r->head_length);
		http_resp_end(req);
	} else {
		http_resp_send(req, r->status, r->body.data, r->body.len);
	}
	s3_req_free(r);
}

static void answer_deferred(http_req *req, void *arg)
{
	struct s3_req *r = arg;
	(void)req;
	if (r->on_loop)
		r->on_loop(r);
	else
		s3_send_answer(r);
}

/* PutObject and UploadPart, authorized: the body streams on the loop (s3_put.c). */
static void put_start(struct s3_req *r) { r->on_loop = s3_put_object; }

static void work_run(void *arg)
{
	struct s3_req *r = arg;
	bool ok = true;
	if (r->authorize) {
		r->authorize = false;
		ok = s3_authorize(r, r->bucket, r->key, s3_policy_action(r), r->act);
	}
	if (ok)
		r->run(r);
	/* a browser's request (Origin): the bucket's CORS headers (a PUT adds them at its end) */
	if (r->run != s3_cors_preflight && (r->run != put_start || !ok))
		s3_cors_answer(r);
	http_req_defer(r->req, answer_deferred, r);
}

void s3_submit(struct s3_req *r, void (*fn)(struct s3_req *r))
{
	r->run = fn;
	pool_submit(r->g->work, work_run, r);
}

/* ---- authentication ---- */

/* The identity of access_key with its secret, or an error in msg: S3_OK or the error. */
static enum s3_err identify(struct s3_req *r, const char *access_key, const char **secret,
			    char *msg, size_t msglen)
{
	if (s3_session_presented(r, access_key))
		return s3_session_identify(r, access_key, secret, msg, msglen);
	r->who = s3_iam_lookup(r->iam, access_key, secret);
	if (!r->who && !s3_iam_is_open(r->iam)) {
		snprintf(msg, msglen, S3_MSG_UNKNOWN_KEY);
		return S3_INVALID_ACCESS_KEY;
	}
	return S3_OK;
}

#define MSG_SIGNATURE_MISMATCH                                                            \
	"The request signature we calculated does not match the signature you provided. " \
	"Check your key and signing method."

/* SigV2 (legacy clients, boto3's default presigned URLs): no payload is signed. */
static bool authenticate_v2(struct s3_req *r, const struct sigv4_input *in)
{
	struct sigv2_auth a;
	char msg[512];
	const char *secret;
	enum s3_err e = sigv2_parse(in, &a, msg, sizeof(msg));
	if (!e)
		e = identify(r, a.access_key, &secret, msg, sizeof(msg));
	if (!e && r->who &&
	    sigv2_verify(in, &a, r->virtual_host ? r->bucket : NULL, secret) != S3_OK) {
		e = S3_SIGNATURE_MISMATCH;
		snprintf(msg, sizeof(msg), MSG_SIGNATURE_MISMATCH);
	}
	if (e) {
		s3_error(r, e, "%s", msg);
		return false;
	}
	r->payload = SIGV4_PAYLOAD_UNSIGNED;
	return true;
}

/* Loop thread: false when r got an error answer. */
static bool authenticate(struct s3_req *r)
{
	struct sigv4_header hs[SIGV4_MAX_HEADERS];
	struct sigv4_input in = {0};
	struct sigv4_auth a;
	const char *name, *value, *secret, *uri = http_req_uri(r->req), *q;
	char msg[512], *raw_path, body_hash[65];
	uint8_t key[32] = {0};
	bool anonymous;
	enum s3_err e;
	size_t n = 0, count;

	for (size_t i = 0; http_req_header_at(r->req, i, &name, &value); i++) {
		if (n == ARRAY_LEN(hs)) {
			s3_error(r, S3_HEADER_TOO_LARGE, "more than %d headers", SIGV4_MAX_HEADERS);
			return false;
		}
		hs[n].name = name;
		hs[n].value = value ? value : "";
		n++;
	}
	q = strchr(uri, '?');
	raw_path = q ? xstrndup(uri, (size_t)(q - uri)) : xstrdup(uri);
	in.method = http_req_method_str(r->req);
	in.raw_path = raw_path;
	in.raw_query = q ? q + 1 : NULL;
	in.headers = hs;
	in.nheaders = n;
	in.now = (int64_t)time(NULL);
	in.region = r->g->region;
	if (r->sts || r->iam_call) {
		/* botocore signs STS's and IAM's body without sending its hash: the hash is
		   then the one the signature covers (s3_sts, s3_iam_api check the body) */
		in.service = r->iam_call ? "iam" : "sts";
		if (!sigv4_header_find(&in, "x-amz-content-sha256", &count) && n < ARRAY_LEN(hs)) {
			sigv4_sha256_hex(r->in.data ? r->in.data : "", r->in.len, body_hash);
			hs[n++] = (struct sigv4_header){"x-amz-content-sha256", body_hash};
			in.nheaders = n;
		}
	}
	if (sigv2_present(&in)) {
		bool ok = authenticate_v2(r, &in);
		free(raw_path);
		return ok;
	}
	e = sigv4_parse(&in, &a, &anonymous, msg, sizeof(msg));
	/* an unsigned request goes on as anonymous: a bucket policy may allow it */
	if (!e && !anonymous) {
		e = identify(r, a.access_key, &secret, msg, sizeof(msg));
		if (!e && r->who && sigv4_verify(&in, &a, secret, key) != S3_OK) {
			e = S3_SIGNATURE_MISMATCH;
			snprintf(msg, sizeof(msg), MSG_SIGNATURE_MISMATCH);
		}
	}
	free(raw_path);
	if (e) {
		s3_error(r, e, "%s", msg);
		return false;
	}
	if (!anonymous) {
		r->payload = (int)a.payload;
		memcpy(r->payload_sha256, a.payload_sha256, sizeof(r->payload_sha256));
		r->decoded_length = a.decoded_length;
		snprintf(r->trailer, sizeof(r->trailer), "%s", a.trailer);
		/* an open gateway verifies no signature, chunk signatures included */
		if (r->who && (a.payload == SIGV4_STREAMING_SIGNED ||
			       a.payload == SIGV4_STREAMING_SIGNED_TRAILER)) {
			r->chain = xmalloc(sizeof(*r->chain));
			sigv4_chunk_init(r->chain, &a, key);
		}
	}
	OPENSSL_cleanse(key, sizeof(key));
	return true;
}

/* Loop thread: false (with an AccessDenied answer) when the identity lacks the grant. */
static bool allowed(struct s3_req *r, enum s3_action act)
{
	if (r->bucket) {
		/* with the bucket's policy: here when its entry is cached, else on the worker */
		int now = s3_authorize_cached(r, act);
		r->authorize = now < 0;
		r->act = act;
		return now != 0;
	}
	if (s3_iam_is_open(r->iam) || (r->who && s3_identity_allows(r->who, act, r->bucket)))
		return true;
	s3_error(r, S3_ACCESS_DENIED, "Access Denied");
	return false;
}

/* ---- routing ---- */

/*
 * Virtual-hosted style: a Host of "<bucket>.<domain>[:port]", for one of the
 * -domainName domains, names the bucket; the whole path is then the key.
 */
static bool virtual_host(struct s3_req *r)
{
	const char *host = http_req_header(r->req, "Host"), *d = r->g->domains, *p;
	size_t hl;

	if (!d || !host)
		return false;
	hl = strcspn(host, ":");
	while (*d) {
		size_t dl = strcspn(d, ",");
		if (dl && hl > dl + 1 && host[hl - dl - 1] == '.' &&
		    !strncasecmp(host + hl - dl, d, dl)) {
			r->bucket = xstrndup(host, hl - dl - 1);
			r->virtual_host = true;
			p = http_req_path(r->req) + 1;
			if (*p)
				r->key = xstrdup(p);
			return true;
		}
		d += dl + (d[dl] == ',');
	}
	return false;
}

/* Splits the decoded path into bucket and key (NULL when absent), or takes them from Host. */
static void name_target(struct s3_req *r)
{
	const char *p = http_req_path(r->req) + 1, *slash;
	if (virtual_host(r) || !*p)
		return;
	slash = strchr(p, '/');
	r->bucket = slash ? xstrndup(p, (size_t)(slash - p)) : xstrdup(p);
	if (slash && slash[1])
		r->key = xstrdup(slash + 1);
}

/* Whether the request names a subresource the gateway does not serve yet. */
static const char *unsupported_param(const struct s3_req *r)
{
	static const char *const served[] = {
		"location",
		"list-type",
		"prefix",
		"delimiter",
		"max-keys",
		"encoding-type",
		"continuation-token",
		"start-after",
		"fetch-owner",
		"marker",
		"x-id",
		"delete",
		"uploads",
		"uploadId",
		"partNumber",
		"max-parts",
		"part-number-marker",
		"max-uploads",
		"key-marker",
		"upload-id-marker",
		"tagging",
		"attributes",
		"cors",
		"encryption",
		"lifecycle",
		"versioning",
		"versions",
		"versionId",
		"version-id-marker",
		"policy",
		"policyStatus",
		"object-lock",
		"retention",
		"legal-hold",
		"logging",
		"acl",
		"ownershipControls",
		"publicAccessBlock",
		"AWSAccessKeyId", /* a SigV2 presigned URL's */
		"Signature",
		"Expires",
	};
	const char *name, *value;
	for (size_t i = 0; http_req_query_at(r->req, i, &name, &value); i++) {
		/* x-amz-*: SigV2 presigned URLs carry x-amz-security-token and kin */
		bool ok = !strncasecmp(name, "X-Amz-", 6) || s3_is_response_override(name);
		for (size_t k = 0; k < ARRAY_LEN(served) && !ok; k++)
			ok = !strcmp(name, served[k]);
		if (!ok)
			return name;
	}
	return NULL;
}

static bool body_data(http_req *req, const char *data, size_t len, void *arg)
{
	struct s3_req *r = arg;
	(void)req;
	buf_append(&r->in, data, len);
	return true;
}

/* The whole body is in (streamed: on_end always comes, so r is never lost). */
static void body_end(http_req *req, wfs_err err, void *arg)
{
	struct s3_req *r = arg;
	(void)req;
	if (err == WFS_ETOOBIG)
		s3_error(r, S3_MAX_MESSAGE_LENGTH, "Your request was too big");
	else if (err)
		s3_error(r, S3_INCOMPLETE_BODY, "The request body was cut short");
	if (err || !s3_body_ok(r)) {
		/* the query protocols answer in their own form */
		if (r->iam_call)
			s3_iam_auth_failed(r);
		else if (r->sts)
			s3_sts_auth_failed(r);
		s3_send_answer(r);
		return;
	}
	r->then(r);
}

/* Reads a small body whole into r->in, checks it (s3_body_ok), then calls then on the loop. */
static void read_body(struct s3_req *r, size_t limit, void (*then)(struct s3_req *r))
{
	r->then = then;
	http_req_stream_body(r->req, limit, body_data, body_end, r);
}

/* CreateBucketConfiguration: the LocationConstraint must name the gateway's region. */
static void create_bucket_parsed(struct s3_req *r)
{
	struct xml_node *root = NULL;
	const char *loc;
	char msg[128];

	if (!r->in.len) {
		s3_submit(r, s3_create_bucket);
		return;
	}
	if (xml_parse(r->in.data, r->in.len, NULL, &root, msg, sizeof(msg)) ||
	    strcmp(root->name, "CreateBucketConfiguration")) {
		s3_error(r, S3_MALFORMED_XML, "The XML you provided was not well-formed");
	} else if ((loc = xml_child_text(root, "LocationConstraint")) && *loc &&
		   strcmp(loc, r->g->region)) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 "The specified location-constraint (%.64s) is not valid here (%s)", loc,
			 r->g->region);
	} else {
		xml_free(root);
		s3_submit(r, s3_create_bucket);
		return;
	}
	xml_free(root);
	s3_send_answer(r);
}

static void delete_objects(struct s3_req *r)
{
	if (s3_authorize_keys(r))
		s3_delete_objects(r);
}
static void delete_objects_read(struct s3_req *r) { s3_submit(r, delete_objects); }

static void complete_read(struct s3_req *r) { s3_submit(r, s3_complete_multipart); }
static void lifecycle_read(struct s3_req *r) { s3_submit(r, s3_put_lifecycle); }
static void cors_read(struct s3_req *r) { s3_submit(r, s3_put_cors); }
static void encryption_read(struct s3_req *r) { s3_submit(r, s3_put_encryption); }
static void tagging_read(struct s3_req *r) { s3_submit(r, s3_put_tagging); }
/* PutObjectTagging, its body in: authorized now, as a policy may judge the tags it sets
   (s3:RequestObjectTag) */
static void object_tagging_read(struct s3_req *r)
{
	r->authorize = true;
	r->act = S3_ACT_TAGGING;
	s3_submit(r, s3_put_tagging);
}
static void versioning_read(struct s3_req *r) { s3_submit(r, s3_put_versioning); }
static void policy_read(struct s3_req *r) { s3_submit(r, s3_put_policy); }
static void lock_config_read(struct s3_req *r) { s3_submit(r, s3_put_lock_config); }
static void logging_read(struct s3_req *r) { s3_submit(r, s3_put_logging); }
static void retention_read(struct s3_req *r) { s3_submit(r, s3_put_retention); }
static void legal_hold_read(struct s3_req *r) { s3_submit(r, s3_put_legal_hold); }
static void acl_read(struct s3_req *r) { s3_submit(r, s3_put_acl); }
static void ownership_read(struct s3_req *r) { s3_submit(r, s3_put_ownership); }
static void pab_read(struct s3_req *r) { s3_submit(r, s3_put_pab); }

/* An object's ?retention or ?legal-hold: GET (Read) or PUT (Write, its body read whole). */
static void route_lock(struct s3_req *r, enum http_method m, void (*put_read)(struct s3_req *r),
		       void (*get)(struct s3_req *r))
{
	if (m == HTTP_GET && allowed(r, S3_ACT_READ)) {
		s3_submit(r, get);
		return;
	}
	if (m == HTTP_PUT && allowed(r, S3_ACT_WRITE)) {
		read_body(r, S3_CONFIG_BODY_MAX, put_read);
		return;
	}
	if (m != HTTP_GET && m != HTTP_PUT)
		s3_error(r, S3_METHOD_NOT_ALLOWED,
			 "The specified method is not allowed against this resource.");
	s3_send_answer(r);
}

/* ?tagging of an object or a bucket: Read (GET) or Tagging (PUT, DELETE). */
static void route_tagging(struct s3_req *r, enum http_method m)
{
	if (m == HTTP_GET && allowed(r, r->key ? S3_ACT_READ : S3_ACT_LIST)) {
		s3_submit(r, s3_get_tagging);
		return;
	}
	if (m == HTTP_PUT && r->key) {
		read_body(r, S3_CONFIG_BODY_MAX, object_tagging_read);
		return;
	}
	if ((m == HTTP_PUT || m == HTTP_DELETE) && allowed(r, S3_ACT_TAGGING)) {
		if (m == HTTP_PUT)
			read_body(r, S3_CONFIG_BODY_MAX, tagging_read);
		else
			s3_submit(r, s3_delete_tagging);
		return;
	}
	if (m != HTTP_GET && m != HTTP_PUT && m != HTTP_DELETE)
		s3_error(r, S3_METHOD_NOT_ALLOWED,
			 "The specified method is not allowed against this resource.");
	s3_send_answer(r);
}

/* A key's operations, told apart by method and subresource. */
static void route_object(struct s3_req *r, enum http_method m)
{
	bool upload = http_req_query(r->req, "uploadId") != NULL;
	void (*run)(struct s3_req * r) = NULL;
	enum s3_action act = S3_ACT_READ;

	if (!s3_key_ok(r)) {
		s3_send_answer(r);
		return;
	}
	/* partNumber: UploadPart(Copy), or GetObject/HeadObject of one part */
	if (http_req_query(r->req, "partNumber") && !(m == HTTP_PUT && upload) &&
	    !((m == HTTP_GET || m == HTTP_HEAD) && !upload &&
	      !http_req_query(r->req, "attributes") && !http_req_query(r->req, "tagging") &&
	      !http_req_query(r->req, "retention") && !http_req_query(r->req, "legal-hold"))) {
		s3_error(r, S3_NOT_IMPLEMENTED,
			 "This gateway does not implement partNumber with this request");
		s3_send_answer(r);
		return;
	}
	if (http_req_query(r->req, "acl")) {
		/* reading an ACL takes Read, changing it Admin (or the owner's, an ACL's right) */
		if (m == HTTP_GET && allowed(r, S3_ACT_READ)) {
			s3_submit(r, s3_get_acl);
			return;
		}
		if (m == HTTP_PUT && allowed(r, S3_ACT_ADMIN)) {
			read_body(r, S3_CONFIG_BODY_MAX, acl_read);
			return;
		}
		if (m != HTTP_GET && m != HTTP_PUT)
			s3_error(r, S3_METHOD_NOT_ALLOWED,
				 "The specified method is not allowed against this resource.");
		s3_send_answer(r);
		return;
	}
	if (http_req_query(r->req, "tagging")) {
		route_tagging(r, m);
		return;
	}
	if (http_req_query(r->req, "retention")) {
		route_lock(r, m, retention_read, s3_get_retention);
		return;
	}
	if (http_req_query(r->req, "legal-hold")) {
		route_lock(r, m, legal_hold_read, s3_get_legal_hold);
		return;
	}
	if (http_req_query(r->req, "attributes") && m != HTTP_GET) {
		s3_error(r, S3_METHOD_NOT_ALLOWED,
			 "The specified method is not allowed against this resource.");
		s3_send_answer(r);
		return;
	}
	switch (m) {
	case HTTP_GET:
		run = upload                                 ? s3_list_parts
		      : http_req_query(r->req, "attributes") ? s3_get_object_attributes
							     : s3_get_object;
		break;
	case HTTP_HEAD:
		run = s3_head_object;
		break;
	case HTTP_DELETE:
		act = S3_ACT_WRITE;
		run = upload ? s3_abort_multipart : s3_delete_object;
		break;
	case HTTP_PUT:
		if (http_req_header(r->req, "x-amz-copy-source")) {
			act = S3_ACT_WRITE; /* and Read on the source, checked by the copy */
			run = s3_copy_object;
			break;
		}
		/* PutObject or UploadPart: authorized (on a worker if need be), then the body
		   streams on the loop */
		act = S3_ACT_WRITE;
		run = put_start;
		break;
	case HTTP_POST:
		act = S3_ACT_WRITE;
		if (http_req_query(r->req, "uploads")) {
			run = s3_create_multipart;
		} else if (upload) {
			if (allowed(r, act))
				read_body(r, S3_DELETE_BODY_MAX, complete_read);
			else
				s3_send_answer(r);
			return;
		}
		break;
	default:
		break;
	}
	if (!run) {
		s3_error(r, S3_METHOD_NOT_ALLOWED,
			 "The specified method is not allowed against this resource.");
	} else if (allowed(r, act)) {
		if (run == put_start && !r->authorize)
			s3_put_object(r); /* authorized already: no worker hop */
		else if ((run == s3_get_object || run == s3_head_object) && !r->authorize &&
			 s3_read_on_loop(r))
			; /* looked up from the loop */
		else
			s3_submit(r, run);
		return;
	}
	s3_send_answer(r);
}

/*
 * A bucket configuration (?cors, ?lifecycle, ?versioning, ...): GET, PUT (its
 * body read whole; put_read NULL: none), DELETE (del NULL: none); Admin.
 */
static void route_config(struct s3_req *r, enum http_method m, void (*put_read)(struct s3_req *r),
			 void (*get)(struct s3_req *r), void (*del)(struct s3_req *r))
{
	if (m != HTTP_GET && (m != HTTP_PUT || !put_read) && (m != HTTP_DELETE || !del)) {
		s3_error(r, S3_METHOD_NOT_ALLOWED,
			 "The specified method is not allowed against this resource.");
	} else if (allowed(r, S3_ACT_ADMIN)) {
		if (m == HTTP_PUT)
			read_body(r, S3_CONFIG_BODY_MAX, put_read);
		else
			s3_submit(r, m == HTTP_GET ? get : del);
		return;
	}
	s3_send_answer(r);
}

static void route(struct s3_req *r)
{
	enum http_method m = http_req_method(r->req);
	const char *param = unsupported_param(r);

	if (!r->bucket) {
		if (m != HTTP_GET) {
			s3_error(r, S3_METHOD_NOT_ALLOWED,
				 "The specified method is not allowed against this resource.");
		} else if (!r->who && !s3_iam_is_open(r->iam)) {
			s3_error(r, S3_ACCESS_DENIED, "Access Denied: the request is not signed");
		} else if (!s3_session_gate(r, NULL, NULL, "s3:ListAllMyBuckets")) {
			s3_error(r, S3_ACCESS_DENIED, "Access Denied: the session may not list buckets");
		} else {
			/* any identity may list; it sees the buckets it has a grant on */
			s3_submit(r, s3_list_buckets);
			return;
		}
		s3_send_answer(r);
		return;
	}
	if (!s3_bucket_name_ok(r->bucket)) {
		s3_error(r, S3_INVALID_BUCKET_NAME, "The specified bucket is not valid.");
	} else if (param) {
		s3_error(r, S3_NOT_IMPLEMENTED, "This gateway does not implement %s yet", param);
	} else if (!r->key &&
		   (http_req_query(r->req, "attributes") || http_req_query(r->req, "uploadId") ||
		    http_req_query(r->req, "partNumber"))) {
		s3_error(r, S3_INVALID_REQUEST, "This operation needs an object key");
	} else if (r->key) {
		route_object(r, m);
		return;
	} else if (http_req_query(r->req, "tagging")) {
		route_tagging(r, m);
		return;
	} else if (http_req_query(r->req, "lifecycle")) {
		route_config(r, m, lifecycle_read, s3_get_lifecycle, s3_delete_lifecycle);
		return;
	} else if (http_req_query(r->req, "cors")) {
		route_config(r, m, cors_read, s3_get_cors, s3_delete_cors);
		return;
	} else if (http_req_query(r->req, "encryption")) {
		route_config(r, m, encryption_read, s3_get_encryption, s3_delete_encryption);
		return;
	} else if (http_req_query(r->req, "versioning")) {
		route_config(r, m, versioning_read, s3_get_versioning, NULL);
		return;
	} else if (http_req_query(r->req, "policyStatus")) {
		route_config(r, m, NULL, s3_get_policy_status, NULL);
		return;
	} else if (http_req_query(r->req, "policy")) {
		route_config(r, m, policy_read, s3_get_policy, s3_delete_policy);
		return;
	} else if (http_req_query(r->req, "object-lock")) {
		route_config(r, m, lock_config_read, s3_get_lock_config, NULL);
		return;
	} else if (http_req_query(r->req, "logging")) {
		route_config(r, m, logging_read, s3_get_logging, NULL);
		return;
	} else if (http_req_query(r->req, "acl")) {
		route_config(r, m, acl_read, s3_get_acl, NULL);
		return;
	} else if (http_req_query(r->req, "ownershipControls")) {
		route_config(r, m, ownership_read, s3_get_ownership, s3_delete_ownership);
		return;
	} else if (http_req_query(r->req, "publicAccessBlock")) {
		route_config(r, m, pab_read, s3_get_pab, s3_delete_pab);
		return;
	} else if (m == HTTP_PUT) {
		if (allowed(r, S3_ACT_WRITE)) {
			read_body(r, S3_CONFIG_BODY_MAX, create_bucket_parsed);
			return;
		}
	} else if (m == HTTP_DELETE) {
		if (allowed(r, S3_ACT_WRITE)) {
			s3_submit(r, s3_delete_bucket);
			return;
		}
	} else if (m == HTTP_HEAD) {
		if (allowed(r, S3_ACT_LIST)) {
			s3_submit(r, s3_head_bucket);
			return;
		}
	} else if (m == HTTP_POST && http_req_query(r->req, "delete")) {
		/* authorized key by key (s3_delete_objects): a policy may name some keys */
		read_body(r, S3_DELETE_BODY_MAX, delete_objects_read);
		return;
	} else if (m == HTTP_GET && http_req_query(r->req, "uploads")) {
		if (allowed(r, S3_ACT_LIST)) {
			s3_submit(r, s3_list_uploads);
			return;
		}
	} else if (m == HTTP_GET && http_req_query(r->req, "versions")) {
		if (allowed(r, S3_ACT_LIST)) {
			s3_submit(r, s3_list_versions);
			return;
		}
	} else if (m == HTTP_GET && http_req_query(r->req, "location")) {
		if (allowed(r, S3_ACT_LIST)) {
			s3_submit(r, s3_bucket_location);
			return;
		}
	} else if (m == HTTP_GET) {
		if (allowed(r, S3_ACT_LIST)) {
			s3_submit(r, s3_list_objects);
			return;
		}
	} else {
		s3_error(r, S3_METHOD_NOT_ALLOWED,
			 "The specified method is not allowed against this resource.");
	}
	s3_send_answer(r);
}

/* An STS call's body is in: authenticated with it, answered on a worker. */
static void sts_read(struct s3_req *r)
{
	if (authenticate(r)) {
		s3_submit(r, s3_sts);
		return;
	}
	s3_sts_auth_failed(r);
	s3_send_answer(r);
}

/* Whether the body is a multipart/form-data form (a browser POST upload). */
static bool is_form(http_req *req)
{
	const char *ct = http_req_header(req, "Content-Type");
	return ct && !strncasecmp(ct, "multipart/form-data", 19);
}

/* The HTTP server's own refusals (a head over 64 KiB, an unparsable request) as S3 XML. */
static void server_error(http_req *req, int status, const char *msg, void *ctx)
{
	struct s3_gateway *g = ctx;
	const char *code = status == 431   ? "RequestHeaderSectionTooLarge"
			   : status == 414 ? "InvalidURI"
			   : status == 413 ? "EntityTooLarge"
					   : "InvalidRequest";
	char id[17];
	buf b = BUF_INIT;
	xml_w *w = xml_w_new(&b);

	snprintf(id, sizeof(id), "%016llX", (unsigned long long)atomic_fetch_add(&g->next_id, 1));
	xml_open(w, "Error");
	xml_elem(w, "Code", code);
	xml_elem(w, "Message", msg);
	xml_elem(w, "RequestId", id);
	xml_w_free(w);
	http_resp_header(req, "x-amz-request-id", id);
	http_resp_header(req, "Content-Type", "application/xml");
	http_resp_send(req, status, b.data, b.len);
	buf_free(&b);
}

/* A new request of g, with the identities known now. */
static struct s3_req *req_new(struct s3_gateway *g, http_req *req)
{
	struct s3_req *r = xcalloc(1, sizeof(*r));
	uint64_t id = atomic_fetch_add(&g->next_id, 1);

	r->g = g;
	r->req = req;
	r->iam = s3_iam_store_get(g->iam_store);
	live_add(r);
	snprintf(r->id, sizeof(r->id), "%016llX", (unsigned long long)id);
	buf_init(&r->body);
	buf_init(&r->in);
	r->payload = -1;
	r->decoded_length = -1;
	r->head_length = -1;
	r->t0_ns = time_now_ns();
	return r;
}

/* An IAM call's body is in: authenticated with it, answered on a worker. */
static void iam_read(struct s3_req *r)
{
	if (authenticate(r)) {
		s3_submit(r, s3_iam_api);
		return;
	}
	s3_iam_auth_failed(r);
	s3_send_answer(r);
}

/* The IAM API's port: every request is a query-protocol call (POST / with a form). */
static void iam_handler(http_req *req, void *ctx)
{
	struct s3_req *r = req_new(ctx, req);
	const char *ct = http_req_header(req, "Content-Type");
	r->iam_call = true;
	http_req_set_route(req, "IAM");
	if (http_req_method(req) != HTTP_POST || strcmp(http_req_path(req), "/") || !ct ||
	    strncasecmp(ct, "application/x-www-form-urlencoded", 33)) {
		s3_error(r, S3_INVALID_REQUEST,
			 "IAM calls are form-encoded POSTs of / (Action=...&Version=2010-05-08)");
		s3_iam_auth_failed(r);
		s3_send_answer(r);
		return;
	}
	read_body(r, S3_CONFIG_BODY_MAX, iam_read);
}

static void handler(http_req *req, void *ctx)
{
	struct s3_gateway *g = ctx;
	struct s3_req *r;

	/* health checks (as SeaweedFS's gateway answers them): unsigned GET /healthz only,
	   so a signed request for a bucket called "healthz" still reaches the bucket */
	if (http_req_method(req) == HTTP_GET && !strcmp(http_req_uri(req), "/healthz") &&
	    !http_req_header(req, "Authorization")) {
		http_resp_send(req, 200, "OK", 2);
		return;
	}
	r = req_new(g, req);
	name_target(r);
	http_req_set_route(req, s3_op_name(r));
	if (http_req_method(req) == HTTP_POST && r->bucket && !r->key && is_form(req) &&
	    !http_req_header(req, "Authorization") && s3_bucket_name_ok(r->bucket)) {
		/* a browser upload: the form's policy and signature authorize it */
		s3_post_object(r);
		return;
	}
	if (http_req_method(req) == HTTP_OPTIONS && r->bucket) {
		/* a CORS preflight: browsers send it without credentials */
		s3_submit(r, s3_cors_preflight);
		return;
	}
	if (s3_sts_is(r)) {
		/* STS (AssumeRole): the signature covers the form body, so it is read first */
		read_body(r, S3_CONFIG_BODY_MAX, sts_read);
		return;
	}
	if (!authenticate(r)) {
		s3_send_answer(r);
		return;
	}
	route(r);
}

/* ---- start and stop ---- */

/* The lifecycle sweeper: a pass, then a wait of lifecycle_s seconds, until the gateway stops. */
static void *sweeper_main(void *arg)
{
	struct s3_gateway *g = arg;
	pthread_mutex_lock(&g->sweep_mu);
	while (!g->stopping) {
		struct timespec until;
		pthread_mutex_unlock(&g->sweep_mu);
		s3_lifecycle_sweep(g);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += g->lifecycle_s;
		pthread_mutex_lock(&g->sweep_mu);
		while (!g->stopping &&
		       pthread_cond_timedwait(&g->sweep_cv, &g->sweep_mu, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&g->sweep_mu);
	return NULL;
}

bool s3_cipher(struct s3_gateway *g, bool *on, wfs_err *err)
{
	int known = atomic_load(&g->cipher);
	bool cipher;

	*err = WFS_OK;
	if (!known) {
		*err = filer_rpc_configuration(g->filer, &cipher);
		if (*err) {
			log_warn("S3 gateway: the filer's configuration: %s", wfs_strerror(*err));
			*err = WFS_EUNAVAIL;
			*on = false;
			return false;
		}
		known = cipher ? 2 : 1;
		atomic_store(&g->cipher, known);
	}
	*on = known == 2;
	return true;
}

struct s3_gateway *s3_start(const struct s3_opts *o, wfs_err *err)
{
	struct s3_gateway *g = xcalloc(1, sizeof(*g));
	struct http_server_opts ho = {0};

	pthread_mutex_init(&g->sweep_mu, NULL);
	pthread_mutex_init(&g->live_mu, NULL);
	pthread_cond_init(&g->sweep_cv, NULL);
	g->buckets = s3_bucket_cache_new();
	/*
	 * Bodies pass through in pieces of up to a chunk (4 MiB) allocated on one
	 * thread and freed on another. glibc raises its mmap threshold after the
	 * first such free, and from then on keeps the freed pieces in each worker's
	 * arena: ~100 MB that never goes back. A fixed threshold keeps them mapped
	 * and returned at free (measured: tests/bench/s3_rss.py).
	 */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	char msg[256] = "";
	struct s3_iam *statics = NULL, *now;
	bool open;

	*err = WFS_OK;
	statics = s3_iam_load(o->config, msg, sizeof(msg));
	if (!statics) {
		log_error("identities: %s", msg);
		*err = WFS_EINVAL;
		goto fail;
	}
	if (o->admin_access_key && *o->admin_access_key && o->admin_secret_key &&
	    *o->admin_secret_key)
		s3_iam_add_admin(statics, "admin", o->admin_access_key, o->admin_secret_key);
	g->region = xstrdup(o->region && *o->region ? o->region : "us-east-1");
	g->domains = o->domain && *o->domain ? xstrdup(o->domain) : NULL;
	{
		uint64_t start = time_now_ns() ^ ((uint64_t)getpid() << 40);
		if (getrandom(&start, sizeof(start), 0) != (ssize_t)sizeof(start))
			log_debug("getrandom failed: request ids start from the clock");
		atomic_init(&g->next_id, start);
	}
	if (o->chunk_mb < 1 || (uint64_t)o->chunk_mb << 20 > CHUNK_SIZE_MAX || o->inline_kb < 0 ||
	    o->inline_kb > 64) {
		log_error("-chunkSizeMB must be 1..%u and -inlineKB 0..64", CHUNK_SIZE_MAX >> 20);
		*err = WFS_EINVAL;
		goto fail;
	}
	if (o->upload_mem_mb < 1) {
		log_error("-uploadMemoryMB must be at least 1");
		*err = WFS_EINVAL;
		goto fail;
	}
	if (o->logging_flush_s < 1) {
		log_error("-logging.flushSeconds must be at least 1");
		*err = WFS_EINVAL;
		goto fail;
	}
	g->upload_mem = s3_budget_new((uint64_t)o->upload_mem_mb << 20);
	g->chunk_size = (uint64_t)o->chunk_mb << 20;
	g->inline_max = (size_t)o->inline_kb << 10;
	g->filer = filer_rpc_new(o->filer, S3_FILER_TIMEOUT_MS, 10, 0);
	g->bc = blob_client_new_filer(o->filer,
				      &(struct blob_client_opts){.short_circuit_off = !o->short_circuit});
	{
		bool on;
		wfs_err cerr;
		if (!s3_cipher(g, &on, &cerr))
			log_warn("S3 gateway: the filer %s did not say whether it encrypts chunks: "
				 "uploads ask again and fail until it does",
				 o->filer);
		else if (on)
			log_info("S3 gateway: the filer encrypts volume data: chunks are sealed");
	}
	g->work = pool_new(16, "wfs-s3-work");
	g->logging = s3_logging_new(g, o->logging_flush_s);
	/* the file's identities and the IAM API's users of the filer (read now, then followed) */
	g->iam_store = s3_iam_store_new(g->filer, o->filer, statics, true);
	now = s3_iam_store_get(g->iam_store);
	open = s3_iam_is_open(now);
	if (open)
		log_warn("S3 gateway is OPEN: no identities configured (-config), so every "
			 "request is allowed, signed or not");
	else
		log_info("S3 gateway: %zu identities", s3_iam_count(now));
	s3_iam_free(now);
	g->sessions = s3_session_gw_new(g->filer, !open);
	g->sse = s3_sse_keys_new(o->sse_key_file, o->sse_kms_keys, g->filer, msg, sizeof(msg));
	if (!g->sse) {
		log_error("encryption keys: %s", msg);
		*err = WFS_EINVAL;
		goto fail;
	}
	ho.host = o->ip;
	ho.port = o->port;
	ho.threads = o->threads;
	ho.thread_name = "wfs-s3-loop";
	ho.error_answer = server_error;
	ho.loop_data_free = s3_loop_data_free;
	g->ip = xstrdup(o->ip && *o->ip ? o->ip : "127.0.0.1");
	g->filer_addr = xstrdup(o->filer ? o->filer : "");
	if (!s3_metrics_start(g, o->metrics_port, err))
		goto fail;
	ho.metrics_prefix = metrics_enabled() ? "weedfs_s3" : NULL;
	g->http = http_server_new(&ho, handler, g, err);
	if (!g->http)
		goto fail;
	g->port = http_server_port(g->http);
	if (o->iam_port) {
		struct http_server_opts io = ho;
		io.port = o->iam_port < 0 ? 0 : o->iam_port;
		io.threads = 1;
		io.thread_name = "wfs-s3-iam-loop";
		io.metrics_prefix = NULL;
		g->iam_http = http_server_new(&io, iam_handler, g, err);
		if (!g->iam_http)
			goto fail;
		g->iam_port = http_server_port(g->iam_http);
		if (open)
			log_warn("IAM API: the gateway has no identity with the Admin action, so "
				 "no one can call it");
	}
	http_server_start(g->http);
	if (g->iam_http) {
		http_server_start(g->iam_http);
		log_info("IAM API listening on %s:%d", o->ip, g->iam_port);
	}
	g->lifecycle_s = o->lifecycle_s;
	if (g->lifecycle_s > 0)
		g->sweeper_started = !thread_start(&g->sweeper, NULL, sweeper_main, g, "wfs-s3-sweep");
	log_info("S3 gateway listening on %s:%d (filer %s, region %s)", o->ip, g->port, o->filer,
		 g->region);
	return g;
fail:
	if (!*err)
		*err = WFS_EINTERNAL;
	if (!g->iam_store)
		s3_iam_free(statics);
	s3_stop(g);
	return NULL;
}

int s3_port(const struct s3_gateway *g) { return g->port; }

int s3_iam_port(const struct s3_gateway *g) { return g->iam_port; }

int s3_make_buckets(struct s3_gateway *g, const char *csv)
{
	char *list = xstrdup(csv), *save = NULL;
	int failed = 0;
	for (char *b = strtok_r(list, ", ", &save); b; b = strtok_r(NULL, ", ", &save)) {
		wfs_err e = s3_bucket_name_ok(b) ? s3_bucket_make(g, b) : WFS_EINVAL;
		if (e && e != WFS_EEXIST) {
			log_error("bucket \"%s\": %s", b,
				  e == WFS_EINVAL ? "not a valid bucket name" : wfs_strerror(e));
			failed++;
		} else {
			log_info("bucket %s ready", b);
		}
	}
	free(list);
	return failed;
}

void s3_stop(struct s3_gateway *g)
{
	if (!g)
		return;
	pthread_mutex_lock(&g->sweep_mu);
	g->stopping = true;
	pthread_cond_signal(&g->sweep_cv);
	pthread_mutex_unlock(&g->sweep_mu);
	if (g->sweeper_started)
		pthread_join(g->sweeper, NULL);
	pthread_mutex_destroy(&g->sweep_mu);
	pthread_cond_destroy(&g->sweep_cv);
	/* queued work answers through the loops: finish it while they still run; what the
	   loops hand over meanwhile runs at once (pool_stop), and filer answers arriving at
	   the loops now are dropped (closing) */
	atomic_store(&g->closing, true);
	pool_stop(g->work);
	metrics_server_stop(g->metrics);
	http_server_free(g->iam_http);
	http_server_free(g->http);
	pool_free(g->work);
	g->work = NULL;
	/* requests the loops left half done (a body still coming, an upload waiting for
	   memory, a stream): nothing can touch them any more */
	while (g->live) {
		struct s3_req *r = g->live;
		void (*drop)(void *state) = r->drop;
		void *state = r->drop_state;
		chunk_stream_free(r->stream);
		s3_req_free(r);
		if (drop)
			drop(state);
	}
	pthread_mutex_destroy(&g->live_mu);
	/* the last access-log records go out while the filer and volume clients still work */
	s3_logging_free(g->logging);
	blob_client_free(g->bc);
	filer_rpc_free(g->filer);
	s3_iam_store_free(g->iam_store);
	s3_session_gw_free(g->sessions);
	s3_sse_keys_free(g->sse);
	s3_bucket_cache_free(g->buckets);
	s3_budget_free(g->upload_mem);
	free(g->region);
	free(g->domains);
	free(g->ip);
	free(g->filer_addr);
	free(g);
}
