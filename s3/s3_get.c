/*
 * GetObject and HeadObject: the entry's metadata answers the head (ETag,
 * Last-Modified, Content-Type, stored headers, conditional requests, one
 * Range), then the bytes stream from the volume servers.
 *
 * DESIGN: a worker looks the object up and decides the answer. Small objects
 * live inline in their entry and are answered whole from there. Chunked ones
 * go through chunk_stream.h: a window of pieces fetched in parallel on the
 * gateway's pool and written in order while the client keeps up, so a GET
 * holds at most the window and the connection's output buffer, whatever the
 * object's size. The head goes out with the first piece: a volume server that
 * is down answers a 503 rather than a 200 whose body breaks off; a later
 * failure closes the connection, which clients see as a short body.
 *
 * ?partNumber=N reads part N of an object made by CompleteMultipartUpload
 * (its part sizes are recorded: s3_meta_part) as a 206 with Content-Range and
 * x-amz-mp-parts-count, and with x-amz-checksum-mode the part's own checksum;
 * any other object is one part, answered whole.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include "client/filer_meta.h"
#include "client/chunk_io.h"
#include "client/chunk_stream.h"
#include "http_util.h"
#include "log.h"
#include "s3/s3_int.h"
#include "s3/s3_logging.h"
#include "s3/s3_meta.h"
#include "s3/s3_sse.h"
#include "util.h"

/* Query parameters of a GET that override the answer's headers (presigned links use them). */
static const char *const overrides[][2] = {
	{"response-content-type", "Content-Type"},
	{"response-content-language", "Content-Language"},
	{"response-expires", "Expires"},
	{"response-cache-control", "Cache-Control"},
	{"response-content-disposition", "Content-Disposition"},
	{"response-content-encoding", "Content-Encoding"},
};

bool s3_is_response_override(const char *param)
{
	for (size_t i = 0; i < ARRAY_LEN(overrides); i++)
		if (!strcmp(param, overrides[i][0]))
			return true;
	return false;
}

/*
 * The conditional headers of a read against the object (RFC 7232 order, as
 * S3 applies them): 0 to go on, or the status to answer (304, 412).
 */
static int preconditions(struct s3_req *r, const char *etag, time_t mtime)
{
	const char *im = http_req_header(r->req, "If-Match");
	const char *inm = http_req_header(r->req, "If-None-Match");
	const char *ims = http_req_header(r->req, "If-Modified-Since");
	const char *ius = http_req_header(r->req, "If-Unmodified-Since");
	time_t t;

	if (im && !s3_etag_listed(im, etag))
		return 412;
	if (!im && ius && http_date_parse(ius, &t) && mtime > t)
		return 412;
	if (inm && s3_etag_listed(inm, etag))
		return 304;
	if (!inm && ims && http_date_parse(ims, &t) && mtime <= t)
		return 304;
	return 0;
}

/* The Range to answer into *rg (the whole object when none); false: r holds the 416. */
static bool pick_range(struct s3_req *r, uint64_t size, struct http_range *rg, bool *partial)
{
	const char *range = http_req_header(r->req, "Range");
	char cr[96];
	int nr = 0;
	wfs_err err;

	rg->start = 0;
	rg->len = size;
	*partial = false;
	if (!range)
		return true;
	err = http_parse_range(range, size, rg, 1, &nr);
	if (err == WFS_ERANGE) {
		snprintf(cr, sizeof(cr), "bytes */%" PRIu64, size);
		s3_header(r, "Content-Range", cr);
		s3_error(r, S3_INVALID_RANGE, "The requested range is not satisfiable");
		return false;
	}
	if (err || nr != 1) {
		/* malformed or several ranges: the whole object, as S3 answers */
		rg->start = 0;
		rg->len = size;
		return true;
	}
	*partial = true;
	snprintf(cr, sizeof(cr), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, rg->start,
		 rg->start + rg->len - 1, size);
	s3_header(r, "Content-Range", cr);
	return true;
}

/* ?partNumber: an integer 1..10000, and no Range with it; false with r's answer. */
static bool part_param(struct s3_req *r, uint32_t *n)
{
	const char *pn = http_req_query(r->req, "partNumber");
	*n = 0;
	if (!pn)
		return true;
	if (!parse_u32(pn, n) || *n < 1 || *n > S3_PARTS_MAX) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 "Part number must be an integer between 1 and %d, inclusive",
			 S3_PARTS_MAX);
		return false;
	}
	if (http_req_header(r->req, "Range")) {
		s3_error(r, S3_INVALID_REQUEST,
			 "Cannot specify both Range header and partNumber query parameter");
		return false;
	}
	return true;
}

/* With x-amz-checksum-mode: ENABLED, part n's own checksum, when recorded. */
static void part_checksum_header(struct s3_req *r, const struct filer_entry *e, uint32_t n)
{
	const char *mode = http_req_header(r->req, "x-amz-checksum-mode");
	char whole[S3_CKSUM_VALUE_MAX], part[S3_CKSUM_B64_SIZE];
	enum s3_cksum alg;

	if (mode && !strcasecmp(mode, "ENABLED") && (alg = s3_meta_checksum(e, whole)) &&
	    s3_meta_part_checksum(e, n, part))
		s3_header(r, s3_cksum_header(alg), part);
}

/* Part n of e into *rg (size: the object's); false: r holds the 416. */
static bool pick_part(struct s3_req *r, const struct filer_entry *e, uint32_t n, uint64_t size,
		      struct http_range *rg, bool *partial)
{
	uint64_t off = 0, len = size;
	uint32_t count = s3_meta_part(e, n, &off, &len);
	char v[96];

	rg->start = 0;
	rg->len = size;
	*partial = false;
	if (n > (count ? count : 1)) {
		s3_error(r, S3_INVALID_PART_NUMBER, "The requested partnumber is not satisfiable");
		return false;
	}
	if (!count)
		return true; /* not multipart: part 1 is the whole object */
	rg->start = off;
	rg->len = len;
	*partial = true;
	snprintf(v, sizeof(v), "%" PRIu32, count);
	s3_header(r, "x-amz-mp-parts-count", v);
	part_checksum_header(r, e, n);
	if (len) {
		snprintf(v, sizeof(v), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, off, off + len - 1,
			 size);
		s3_header(r, "Content-Range", v);
	}
	return true;
}

/* ---- streaming (loop thread) ---- */

static bool stream_submit(void *owner, void (*fn)(void *arg), void *arg)
{
	struct s3_req *r = owner;
	pool_submit(r->g->work, fn, arg);
	return true;
}

static void stream_head(void *owner, int64_t length)
{
	struct s3_req *r = owner;
	r->log_sent = length;
	s3_logging_note(r);
	s3_answer_headers(r);
	http_resp_start(r->req, r->status, length);
}

static void stream_done(void *owner, wfs_err err, uint64_t err_pos, bool started)
{
	struct s3_req *r = owner;
	chunk_stream_free(r->stream);
	r->stream = NULL;
	if (err && http_req_closed(r->req))
		log_debug("GET /%s/%s: the client left at offset %" PRIu64, r->bucket, r->key,
			  err_pos);
	else if (err)
		log_warn("GET /%s/%s failed at offset %" PRIu64 ": %s", r->bucket, r->key, err_pos,
			 wfs_strerror(err));
	if (err && !started) {
		s3_headers_clear(r); /* the object's headers do not describe an error */
		if (err == WFS_EUNAVAIL || err == WFS_ETIMEDOUT)
			s3_error(r, S3_SERVICE_UNAVAILABLE,
				 "A volume server holding the object is unavailable: %s",
				 wfs_strerror(err));
		else
			s3_error(r, S3_INTERNAL, "Reading the object failed: %s",
				 wfs_strerror(err));
		s3_send_answer(r);
		return;
	}
	if (err)
		http_resp_abort(r->req);
	else
		http_resp_end(r->req);
	s3_req_free(r);
}

/* An encrypted object's piece, decrypted on the worker that fetched it. */
static void stream_decrypt(void *owner, uint64_t off, void *data, size_t len)
{
	struct s3_req *r = owner;
	if (r->sse)
		s3_sse_crypt(r->sse, off, data, len);
}

static const struct chunk_stream_ops stream_ops = {
	.submit = stream_submit,
	.head = stream_head,
	.done = stream_done,
	.transform = stream_decrypt,
};

static void stream_start(struct s3_req *r) { chunk_stream_start(r->stream); }

/* ---- the worker ---- */

/* Plans the stream of rg for the loop to start; false: r holds the error answer. */
static bool plan_stream(struct s3_req *r, const struct filer_entry *e, struct http_range rg)
{
	struct filer_chunk *chunks = NULL;
	size_t n = 0;
	wfs_err err = chunk_resolve_manifests(r->g->bc, e->chunks, e->n_chunks, &chunks, &n);
	if (!err)
		r->stream = chunk_stream_new(r->req, r->g->bc, chunks, n, rg.start, rg.len, NULL,
					     &stream_ops, r, &err);
	if (err) {
		s3_error(r, err == WFS_EUNAVAIL ? S3_SERVICE_UNAVAILABLE : S3_INTERNAL,
			 "Reading the object's chunk list failed: %s", wfs_strerror(err));
		return false;
	}
	r->on_loop = stream_start;
	return true;
}

/* The entry of version id of r's object; NULL with r's answer (NoSuchVersion, a marker: 405). */
static struct filer_entry *version_lookup(struct s3_req *r, const char *id)
{
	struct filer_entry *e = NULL;
	wfs_err rc;
	if (!s3_version_id_ok(id)) {
		s3_error(r, S3_INVALID_ARGUMENT, "Invalid version id specified");
		return NULL;
	}
	rc = s3_version_read(r->g, r->bucket, r->key, id, &e);
	if (!rc && s3_is_delete_marker(e)) {
		s3_version_headers(r, e);
		s3_error(r, S3_METHOD_NOT_ALLOWED,
			 "The specified method is not allowed against this resource "
			 "(the version is a delete marker).");
	} else if (!rc) {
		return e;
	} else if (rc != WFS_ENOENT || s3_bucket_exists(r)) {
		if (rc == WFS_ENOENT)
			s3_error(r, S3_NO_SUCH_VERSION, "The specified version does not exist.");
		else
			s3_filer_error(r, rc, "looking the version up");
	}
	filer_entry_free(e);
	return NULL;
}

/* The entry of r's object; NULL with r's answer (NoSuchKey, NoSuchBucket, a filer error). */
static struct filer_entry *object_lookup(struct s3_req *r)
{
	char *path = s3_object_path(r->bucket, r->key);
	const char *id = http_req_query(r->req, "versionId");
	struct filer_entry *e = NULL;
	wfs_err rc;

	if (id) {
		free(path);
		return version_lookup(r, id);
	}
	if (r->looked_up) { /* on the loop (s3_loop.c) */
		r->looked_up = false;
		rc = r->lookup_rc;
		e = r->found;
		r->found = NULL;
	} else {
		rc = path ? filer_meta_lookup(r->g->filer, path, &e) : WFS_ENOENT;
	}
	if (path)
		rc = s3_object_inside(r->g, &path, &e, rc); /* "a" beside "a/b" */
	free(path);
	if (!rc && S_ISREG(e->attr.mode))
		return e;
	filer_entry_free(e);
	if (rc && rc != WFS_ENOENT && rc != WFS_ENOTDIR) {
		s3_filer_error(r, rc, "looking the object up");
	} else if (rc != WFS_ENOENT || s3_bucket_exists(r)) {
		/* a miss costs one more lookup, to tell a missing bucket from a missing key */
		s3_error(r, S3_NO_SUCH_KEY, "The specified key does not exist.");
		s3_version_missing(r);
	}
	return NULL;
}

/* GetObject (head false) and HeadObject. */
static void object_read(struct s3_req *r, bool head)
{
	struct filer_entry *e;
	struct http_range rg;
	char etag[S3_ETAG_MAX], when[64];
	const char *v;
	uint64_t size;
	uint32_t part;
	bool partial;
	time_t mtime;
	int cond;

	if (!part_param(r, &part) || !(e = object_lookup(r)))
		return;
	if (!s3_sse_for_read(r, e, false, &r->sse)) {
		filer_entry_free(e);
		return;
	}
	s3_sse_headers(r, r->sse);
	s3_etag(e, etag);
	mtime = (time_t)(e->attr.mtime_ns / 1000000000);
	http_date_format(mtime, when, sizeof(when));
	s3_header(r, "ETag", etag);
	s3_header(r, "Last-Modified", when);
	s3_version_headers(r, e);
	s3_lock_headers(r, e);
	cond = preconditions(r, etag, mtime);
	if (cond == 412) {
		s3_error(r, S3_PRECONDITION_FAILED,
			 "At least one of the pre-conditions you specified did not hold");
		goto out;
	}
	if (cond) {
		r->status = cond;
		goto out;
	}
	size = e->has_content ? e->content_len : e->attr.size;
	if (part ? !pick_part(r, e, part, size, &rg, &partial)
		 : !pick_range(r, size, &rg, &partial))
		goto out;
	s3_meta_answer(r, e, !partial); /* a whole-object checksum does not fit a range or part */
	for (size_t i = 0; !head && i < ARRAY_LEN(overrides); i++)
		if ((v = http_req_query(r->req, overrides[i][0])))
			s3_header_replace(r, overrides[i][1], v);
	s3_header(r, "Accept-Ranges", "bytes");
	r->status = partial ? 206 : 200;
	if (head)
		r->head_length = (int64_t)rg.len;
	else if (e->has_content && rg.len) {
		buf_append(&r->body, e->content + rg.start, (size_t)rg.len); /* inline bytes */
		if (r->sse)
			s3_sse_crypt(r->sse, rg.start, r->body.data + r->body.len - rg.len,
				     (size_t)rg.len);
	}
	else if (!e->has_content && rg.len)
		plan_stream(r, e, rg);
out:
	filer_entry_free(e);
}

void s3_get_object(struct s3_req *r) { object_read(r, false); }

/* Whether the comma list of x-amz-object-attributes names attr. */
static bool asked(const char *list, const char *attr)
{
	size_t n = strlen(attr);
	for (const char *p = list; (p = strstr(p, attr)); p += n)
		if ((p == list || p[-1] == ',' || p[-1] == ' ') &&
		    (!p[n] || p[n] == ',' || p[n] == ' '))
			return true;
	return false;
}

/* x-amz-max-parts and x-amz-part-number-marker (GetObjectAttributes); false: r answered. */
static bool parts_window(struct s3_req *r, uint32_t *max, uint32_t *marker)
{
	const char *m = http_req_header(r->req, "x-amz-max-parts");
	const char *k = http_req_header(r->req, "x-amz-part-number-marker");

	*max = 1000;
	*marker = 0;
	if (m && !parse_u32(m, max)) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 "Argument max-parts must be an integer between 0 and 2147483647");
		return false;
	}
	if (k && !parse_u32(k, marker)) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 "Argument part-number-marker must be an integer between 0 and 2147483647");
		return false;
	}
	*max = MIN(*max, 1000u);
	return true;
}

/*
 * ObjectParts: the part count, and when the parts' checksums are recorded the
 * parts themselves (number, size, checksum) from after marker, at most max
 * (S3 lists parts only for objects with checksums).
 */
static void object_parts(xml_w *w, const struct filer_entry *e, const char *count, size_t count_len,
			 uint32_t max, uint32_t marker)
{
	char whole[S3_CKSUM_VALUE_MAX], elem[32];
	enum s3_cksum alg = s3_meta_checksum(e, whole);
	uint64_t off, len;
	uint32_t n = s3_meta_part(e, 1, &off, &len), listed = 0, last = marker;
	size_t vlen;
	const char *v = alg && n ? s3_meta_part_checksums(e, &vlen) : NULL;

	xml_open(w, "ObjectParts");
	xml_elem_len(w, "PartsCount", count, count_len); /* boto3's TotalPartsCount */
	if (v) {
		snprintf(elem, sizeof(elem), "Checksum%s", s3_cksum_name(alg));
		xml_elem_u64(w, "PartNumberMarker", marker);
		xml_elem_u64(w, "MaxParts", max);
		for (uint32_t i = 1; i <= n && v && listed < max; i++) {
			size_t item_len;
			const char *item = s3_meta_list_next(&v, &vlen, &item_len);
			if (i <= marker)
				continue;
			s3_meta_part(e, i, &off, &len);
			xml_open(w, "Part");
			xml_elem_u64(w, "PartNumber", i);
			xml_elem_u64(w, "Size", len);
			xml_elem_len(w, elem, item, item_len);
			xml_close(w);
			listed++;
			last = i;
		}
		/* (a record with fewer checksums than parts ends the listing: no next page) */
		xml_elem(w, "IsTruncated", last < n && v ? "true" : "false");
		if (last < n && v)
			xml_elem_u64(w, "NextPartNumberMarker", last);
	}
	xml_close(w);
}

void s3_get_object_attributes(struct s3_req *r)
{
	const char *want = http_req_header(r->req, "x-amz-object-attributes");
	char etag[S3_ETAG_MAX], when[64], cksum[S3_CKSUM_VALUE_MAX], elem[32];
	struct filer_entry *e;
	enum s3_cksum alg;
	const char *dash;
	uint32_t max_parts, marker;
	xml_w *w;

	if (!want || !*want) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 "The x-amz-object-attributes header specifying the attributes to be "
			 "retrieved is either missing or empty");
		return;
	}
	struct s3_sse *sse = NULL;

	if (!parts_window(r, &max_parts, &marker) || !(e = object_lookup(r)))
		return;
	/* S3 asks an SSE-C object's key here too, though no byte is read */
	if (!s3_sse_for_read(r, e, false, &sse)) {
		filer_entry_free(e);
		return;
	}
	s3_sse_free(sse);
	s3_etag(e, etag);
	http_date_format((time_t)(e->attr.mtime_ns / 1000000000), when, sizeof(when));
	s3_header(r, "Last-Modified", when);
	s3_version_headers(r, e);
	w = xml_w_new(&r->body);
	xml_open_s3(w, "GetObjectAttributesResponse");
	if (asked(want, "ETag"))
		xml_elem_len(w, "ETag", etag + 1, strlen(etag) - 2); /* unquoted, as S3 gives it */
	if (asked(want, "Checksum") && (alg = s3_meta_checksum(e, cksum))) {
		snprintf(elem, sizeof(elem), "Checksum%s", s3_cksum_name(alg));
		xml_open(w, "Checksum");
		/* a COMPOSITE value without its "-N": the part count is in ObjectParts */
		xml_elem_len(w, elem, cksum, strcspn(cksum, "-"));
		xml_elem(w, "ChecksumType", s3_meta_checksum_type(cksum));
		xml_close(w);
	}
	if (asked(want, "ObjectParts") && (dash = strchr(etag, '-')))
		object_parts(w, e, dash + 1, strlen(dash + 1) - 1, max_parts, marker); /* "N\"" */
	if (asked(want, "StorageClass"))
		xml_elem(w, "StorageClass", "STANDARD");
	if (asked(want, "ObjectSize"))
		xml_elem_u64(w, "ObjectSize", e->has_content ? e->content_len : e->attr.size);
	s3_xml_ok(r, w);
	filer_entry_free(e);
}

void s3_head_object(struct s3_req *r) { object_read(r, true); }
