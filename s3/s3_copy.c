/*
 * CopyObject and UploadPartCopy: a PUT naming its source in
 * x-amz-copy-source.
 *
 * DESIGN: the filer has no shared chunks (a chunk belongs to one entry), so a
 * copy reads the source's bytes from the volume servers and writes them as
 * new chunks, streaming through a chunk reader and a chunk writer on one
 * worker with bounded memory; small sources are copied inline. The copy's
 * ETag is the MD5 of what was copied, and its checksum, computed from the
 * same bytes, is of the algorithm x-amz-checksum-algorithm names, else the
 * source's (S3's default: a copy keeps its source's checksum algorithm); a
 * part's is its upload's. Metadata comes from the source
 * (x-amz-metadata-directive COPY, the default) or from the request (REPLACE);
 * x-amz-copy-source-if-* test the source, If-None-Match / If-Match the
 * destination, both before anything is written.
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
#include "http_util.h"
#include "md5.h"
#include "s3/s3_int.h"
#include "s3/s3_meta.h"
#include "s3/s3_sse.h"
#include "util.h"

struct source {
	char *bucket, *key, *path;
	char *version; /* ?versionId=; NULL: the current version */
	struct filer_entry *e;
	uint64_t start, len; /* the bytes copied */
};

static void source_free(struct source *s)
{
	free(s->bucket);
	free(s->key);
	free(s->path);
	free(s->version);
	filer_entry_free(s->e);
}

/* Parses x-amz-copy-source ("[/]bucket/key[?versionId=id]", URL-encoded); false: r answered. */
static bool source_parse(struct s3_req *r, struct source *s)
{
	const char *v = http_req_header(r->req, "x-amz-copy-source"), *q, *slash;
	buf b = BUF_INIT;
	bool ok = false;
	char *d;

	q = strchr(v, '?');
	if (q && (strncmp(q, "?versionId=", 11) || !s3_version_id_ok(q + 11))) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 "The copy source may only name a version (?versionId=<a version id>)");
		return false;
	}
	if (q)
		s->version = xstrdup(q + 11);
	if (*v == '/')
		v++;
	if (!url_decode(v, q ? (size_t)(q - v) : strlen(v), false, &b))
		goto bad;
	buf_append(&b, "", 1);
	d = (char *)b.data;
	slash = strchr(d, '/');
	if (!slash || slash == d || !slash[1])
		goto bad;
	s->bucket = xstrndup(d, (size_t)(slash - d));
	s->key = xstrdup(slash + 1);
	ok = s3_bucket_name_ok(s->bucket) && strlen(s->key) <= 1024;
bad:
	buf_free(&b);
	if (!ok)
		s3_error(r, S3_INVALID_ARGUMENT,
			 "Copy Source must mention the source bucket and key: "
			 "sourcebucket/sourcekey");
	return ok;
}

/* The x-amz-copy-source-if-* headers against the source; false: r holds the 412. */
static bool source_conditions(struct s3_req *r, const struct filer_entry *e)
{
	const char *im = http_req_header(r->req, "x-amz-copy-source-if-match");
	const char *inm = http_req_header(r->req, "x-amz-copy-source-if-none-match");
	const char *ims = http_req_header(r->req, "x-amz-copy-source-if-modified-since");
	const char *ius = http_req_header(r->req, "x-amz-copy-source-if-unmodified-since");
	time_t mtime = (time_t)(e->attr.mtime_ns / 1000000000), t;
	char etag[S3_ETAG_MAX];
	bool ok = true;

	s3_etag(e, etag);
	/* S3: a matching if-match wins over a failing if-unmodified-since, and a failing
	   if-none-match over a passing if-modified-since */
	if (im)
		ok = s3_etag_listed(im, etag);
	else if (ius && http_date_parse(ius, &t))
		ok = mtime <= t;
	if (ok && inm)
		ok = !s3_etag_listed(inm, etag);
	else if (ok && ims && http_date_parse(ims, &t))
		ok = mtime > t;
	if (!ok)
		s3_error(r, S3_PRECONDITION_FAILED,
			 "At least one of the pre-conditions you specified did not hold");
	return ok;
}

/* Finds the source and the bytes to copy; false: r answered. */
static bool source_open(struct s3_req *r, struct source *s, bool part)
{
	const char *range = http_req_header(r->req, "x-amz-copy-source-range");
	uint64_t size;
	wfs_err rc;

	if (!source_parse(r, s))
		return false;
	if (!s3_authorize(r, s->bucket, s->key, s->version ? "s3:GetObjectVersion" : "s3:GetObject",
			  S3_ACT_READ))
		return false;
	s->path = s3_object_path(s->bucket, s->key);
	if (s->version)
		rc = s3_version_read(r->g, s->bucket, s->key, s->version, &s->e);
	else
		rc = s->path ? s3_object_inside(r->g, &s->path, &s->e,
						filer_meta_lookup(r->g->filer, s->path, &s->e))
			     : WFS_ENOENT;
	if (rc == WFS_ENOENT || rc == WFS_ENOTDIR || (!rc && !S_ISREG(s->e->attr.mode))) {
		if (s->version)
			s3_error(r, S3_NO_SUCH_VERSION, "The specified version does not exist.");
		else
			s3_error(r, S3_NO_SUCH_KEY, "The specified copy source does not exist.");
		return false;
	}
	if (!rc && s3_is_delete_marker(s->e)) {
		s3_error(r, S3_INVALID_REQUEST,
			 "The source of a copy request may not specifically refer to a delete "
			 "marker by version id.");
		return false;
	}
	if (s->version)
		s3_header(r, "x-amz-copy-source-version-id", s->version);
	if (rc) {
		s3_filer_error(r, rc, "looking the copy source up");
		return false;
	}
	if (!source_conditions(r, s->e))
		return false;
	size = s->e->has_content ? s->e->content_len : s->e->attr.size;
	s->start = 0;
	s->len = size;
	if (range && part) {
		uint64_t a, b;
		char tail;
		if (sscanf(range, "bytes=%" SCNu64 "-%" SCNu64 "%c", &a, &b, &tail) != 2 || a > b ||
		    b >= size) {
			s3_error(r, S3_INVALID_ARGUMENT,
				 "The x-amz-copy-source-range value must be of the form "
				 "bytes=first-last where first and last are the zero-based offsets "
				 "of the first and last bytes to copy, within the source");
			return false;
		}
		s->start = a;
		s->len = b - a + 1;
	}
	if (s->len > S3_OBJECT_MAX) {
		s3_error(r, S3_INVALID_REQUEST,
			 "The specified copy source is larger than the maximum allowable size for "
			 "a copy source: %llu",
			 (unsigned long long)S3_OBJECT_MAX);
		return false;
	}
	return true;
}

struct copy_sink {
	chunk_writer *cw;
	struct md5_ctx md5;
	struct s3_cksum_ctx ck; /* alg NONE: no checksum wanted */
	/* encryption: the source's bytes are decrypted, the copy's encrypted (NULL: none) */
	const struct s3_sse *src, *dst;
	uint64_t src_off, dst_off; /* plaintext offsets of the next bytes */
	buf scratch;               /* the bytes between the two */
};

static wfs_err sink(void *arg, const void *data, size_t len)
{
	struct copy_sink *k = arg;
	if (k->src || k->dst) {
		buf_reset(&k->scratch);
		buf_append(&k->scratch, data, len);
		data = k->scratch.data;
		if (k->src)
			s3_sse_crypt(k->src, k->src_off, k->scratch.data, len);
		k->src_off += len;
	}
	md5_update(&k->md5, data, len);
	if (k->ck.alg)
		s3_cksum_update(&k->ck, data, len);
	if (k->dst)
		s3_sse_crypt(k->dst, k->dst_off, k->scratch.data, len);
	k->dst_off += len;
	return chunk_writer_write(k->cw, data, len);
}

/*
 * Copies the source's bytes into new chunks (or inline bytes), with their
 * MD5 and, unless alg is NONE, their checksum of alg into cksum: 0, or r
 * answered.
 */
static bool copy_bytes(struct s3_req *r, const struct source *s, bool may_inline,
		       struct filer_meta_new *nw, struct filer_chunk **chunks, size_t *n,
		       chunk_writer **cwp, char md5_hex[33], enum s3_cksum alg,
		       char cksum[S3_CKSUM_B64_SIZE], const struct s3_sse *src,
		       const struct s3_sse *dst)
{
	struct chunk_writer_opts wo = {.chunk_size = r->g->chunk_size};
	struct copy_sink k = {.src = src, .dst = dst, .src_off = s->start};
	unsigned char sum[MD5_SIZE];
	const uint8_t *data;
	size_t len;
	wfs_err err;

	wo.inline_max = may_inline ? r->g->inline_max : 0;
	if (!s3_cipher(r->g, &wo.encrypt, &err)) {
		s3_error(r, S3_SERVICE_UNAVAILABLE,
			 "the filer did not say whether it encrypts volume data");
		return false;
	}
	k.cw = *cwp = chunk_writer_new(r->g->bc, &wo, &err);
	if (!k.cw) {
		s3_error(r, S3_INTERNAL, "could not start the copy: %s", wfs_strerror(err));
		return false;
	}
	md5_init(&k.md5);
	if (alg)
		s3_cksum_init(&k.ck, alg);
	if (s->e->has_content)
		err = sink(&k, s->e->content + s->start, (size_t)s->len);
	else
		err = chunk_read(r->g->bc, s->e->chunks, s->e->n_chunks, s->e->attr.size, s->start,
				 s->len, sink, &k);
	if (!err)
		err = chunk_writer_finish(k.cw, chunks, n);
	buf_free(&k.scratch);
	md5_final(&k.md5, sum);
	if (err) {
		s3_cksum_clear(&k.ck);
		s3_error(r, err == WFS_EUNAVAIL ? S3_SERVICE_UNAVAILABLE : S3_INTERNAL,
			 "Copying the source failed: %s", wfs_strerror(err));
		return false;
	}
	hex_encode(sum, 16, md5_hex);
	cksum[0] = '\0';
	if (alg)
		s3_cksum_final_b64(&k.ck, cksum);
	if (chunk_writer_inline(k.cw, &data, &len)) {
		nw->has_content = true;
		nw->content = data;
		nw->content_len = len;
	} else {
		nw->chunks = *chunks;
		nw->n_chunks = *n;
	}
	return true;
}

/*
 * x-amz-tagging-directive: the source's tags (COPY, the default, whatever the
 * metadata directive) or x-amz-tagging's (REPLACE). False: r answered.
 */
static bool copy_tags(struct s3_req *r, struct s3_meta *m, const struct filer_entry *src)
{
	const char *d = http_req_header(r->req, "x-amz-tagging-directive");
	const struct filer_xattr *x = filer_entry_xattr_get(src, S3_XATTR_TAGGING);
	bool replace = d && !strcasecmp(d, "REPLACE");

	if (d && !replace && strcasecmp(d, "COPY")) {
		s3_error(r, S3_INVALID_ARGUMENT, "Unknown tagging directive.");
		return false;
	}
	(void)filer_entry_xattr_remove(m->e, S3_XATTR_TAGGING);
	if (replace)
		return s3_tagging_header(r, m->e);
	if (x)
		filer_entry_xattr_set(m->e, S3_XATTR_TAGGING, x->value, x->value_len);
	return true;
}

/*
 * Where the copy goes: the object, or a part; sets *upload_id and *part_alg
 * (the upload's checksum algorithm) for parts. NULL: r answered.
 */
static char *copy_target(struct s3_req *r, const char **upload_id, enum s3_cksum *part_alg,
			 struct s3_sse **sse)
{
	struct filer_entry *dir = NULL;
	const char *pn = http_req_query(r->req, "partNumber");
	char *path;
	uint32_t n;

	*upload_id = http_req_query(r->req, "uploadId");
	if (!*upload_id) {
		path = s3_object_path(r->bucket, r->key);
		if (!path)
			s3_error(r, S3_INVALID_ARGUMENT, "The key cannot name a file here");
		return path;
	}
	if (!pn || !parse_u32(pn, &n) || n < 1 || n > S3_PARTS_MAX) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 "Part number must be an integer between 1 and %d, inclusive",
			 S3_PARTS_MAX);
		return NULL;
	}
	path = s3_part_path(r, *upload_id, n);
	if (!path || !s3_upload_check(r, *upload_id, &dir)) {
		if (!path)
			s3_error(r, S3_NO_SUCH_UPLOAD, "The specified upload does not exist.");
		free(path);
		return NULL;
	}
	*part_alg = s3_upload_checksum(dir);
	/* the part is encrypted as its upload is, with an IV of its own */
	if (!s3_sse_for_read(r, dir, false, sse) || (*sse && !s3_sse_fresh_iv(*sse))) {
		if (!r->status)
			s3_error(r, S3_INTERNAL, "no randomness for an IV");
		free(path);
		path = NULL;
	}
	filer_entry_free(dir);
	return path;
}

/*
 * The checksum algorithm of a CopyObject (see DESIGN) into *alg, NONE for
 * none. False: r answered.
 */
static bool copy_checksum(struct s3_req *r, const struct source *s, enum s3_cksum *alg)
{
	const char *name = http_req_header(r->req, "x-amz-checksum-algorithm");
	char stored[S3_CKSUM_VALUE_MAX];

	if (!name) {
		*alg = s3_meta_checksum(s->e, stored);
		return true;
	}
	*alg = s3_cksum_from_name(name);
	if (!*alg)
		s3_error(r, S3_INVALID_REQUEST, S3_MSG_UNKNOWN_CKSUM_ALG, name);
	return *alg != S3_CKSUM_NONE;
}

void s3_copy_object(struct s3_req *r)
{
	const char *dir = http_req_header(r->req, "x-amz-metadata-directive"), *upload_id;
	struct source s = {0};
	struct s3_meta m = {0};
	struct s3_cond c = {0};
	struct filer_meta_new nw = {0};
	struct filer_chunk *chunks = NULL;
	chunk_writer *cw = NULL;
	char md5_hex[33], etag[36], when[32], cksum[S3_CKSUM_B64_SIZE], *path = NULL;
	enum s3_cksum alg = S3_CKSUM_NONE;
	bool replace = dir && !strcasecmp(dir, "REPLACE"), committed = false;
	struct s3_sse *src_sse = NULL, *dst_sse = NULL;
	struct filer_entry *bucket = NULL;
	size_t n = 0;
	wfs_err rc;
	xml_w *w;

	if (dir && !replace && strcasecmp(dir, "COPY")) {
		s3_error(r, S3_INVALID_ARGUMENT, "Unknown metadata directive.");
		return;
	}
	path = copy_target(r, &upload_id, &alg, &dst_sse);
	if (!path || (!upload_id && !s3_cond_read(r, &c)) || !source_open(r, &s, upload_id) ||
	    (!upload_id && !copy_checksum(r, &s, &alg)) ||
	    !s3_sse_for_read(r, s.e, true, &src_sse))
		goto out;
	/* a copy is encrypted as the request asks, else as the bucket's default says */
	if (!upload_id) {
		if (!s3_sse_requested(r) && (rc = s3_bucket_lookup(r->g, r->bucket, &bucket))) {
			s3_filer_error(r, rc, "reading the bucket's encryption");
			goto out;
		}
		if (!s3_sse_for_write(r, bucket, &dst_sse))
			goto out;
	}
	if (!upload_id && !replace && !strcmp(s.path, path) && !s3_sse_requested(r)) {
		s3_error(r, S3_INVALID_REQUEST,
			 "This copy request is illegal because it is trying to copy an object to "
			 "itself without changing the object's metadata, storage class, website "
			 "redirect location or encryption attributes.");
		goto out;
	}
	if (upload_id) {
		m.e = filer_entry_new("/", "part");
	} else if (replace) {
		if (!s3_meta_from_request(r, &m))
			goto out;
	} else {
		m.e = filer_entry_new("/", "object");
		s3_meta_from_entry(&m, s.e);
		/* a copy's lock and ACL are its own, never the source's */
		if (!s3_lock_header(r, m.e) || !s3_acl_header(r, m.e))
			goto out;
	}
	if (!upload_id && !copy_tags(r, &m, s.e))
		goto out;
	if (!s3_cond_check(r, path, &c) ||
	    !copy_bytes(r, &s, !upload_id, &nw, &chunks, &n, &cw, md5_hex, alg, cksum, src_sse,
			dst_sse) ||
	    (dst_sse && !s3_sse_seal(r, dst_sse, m.e)))
		goto out;
	nw.mode = S_IFREG | 0644;
	nw.time_ns = (int64_t)time_now_ns();
	s3_meta_stamp(&m, nw.time_ns, md5_hex, alg, cksum);
	nw.mime = m.mime;
	nw.xattrs = m.e->xattrs;
	nw.n_xattrs = m.e->n_xattrs;
	if (upload_id) {
		rc = filer_meta_create(r->g->filer, path, &nw, NULL);
		if (rc)
			s3_filer_error(r, rc, "storing the part");
	} else {
		rc = s3_commit_object(r, path, &nw, &c);
	}
	if (rc)
		goto out;
	committed = true;
	snprintf(etag, sizeof(etag), "\"%s\"", md5_hex);
	s3_iso8601(nw.time_ns, when);
	w = xml_w_new(&r->body);
	xml_open_s3(w, upload_id ? "CopyPartResult" : "CopyObjectResult");
	xml_elem(w, "LastModified", when);
	xml_elem(w, "ETag", etag);
	if (alg) {
		char elem[32];
		snprintf(elem, sizeof(elem), "Checksum%s", s3_cksum_name(alg));
		xml_elem(w, elem, cksum);
		if (!upload_id)
			xml_elem(w, "ChecksumType", "FULL_OBJECT");
	}
	s3_xml_ok(r, w);
	s3_sse_headers(r, dst_sse);
out:
	s3_sse_free(src_sse);
	s3_sse_free(dst_sse);
	filer_entry_free(bucket);
	if (!committed && n)
		s3_free_chunks(r->g, chunks, n); /* stored, referenced by nothing */
	filer_chunks_free(chunks, n);
	chunk_writer_free(cw);
	source_free(&s);
	s3_meta_free(&m);
	s3_cond_free(&c);
	free(path);
}
