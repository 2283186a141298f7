/*
 * Multipart uploads: CreateMultipartUpload, UploadPart (through s3_put.c),
 * CompleteMultipartUpload, AbortMultipartUpload, ListParts and
 * ListMultipartUploads.
 *
 * DESIGN: an upload is the directory /buckets/<bucket>/.uploads/<id>, where
 * id is 32 random hex digits; its extended attributes hold the key, the
 * object's metadata and the checksum algorithm named at creation. Each part
 * is the file <id>/<number, 5 digits> (so the filer lists parts in order),
 * streamed to the volume servers like a PutObject body and never inline,
 * carrying its MD5 ETag. Completing checks the parts named against those
 * stored, then makes the object with ONE filer create that lists the parts'
 * chunks at shifted offsets and consumes every part file of the upload in the
 * same transaction: the chunks of the parts named pass to the object, those
 * of parts left out are freed, and no byte is copied. Two racing completes
 * cannot both win: the second finds its parts consumed (NoSuchUpload).
 * Listings of the bucket never show the .uploads directory.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include "client/filer_meta.h"
#include "s3/s3_int.h"
#include "s3/s3_meta.h"
#include "util.h"

#define UPLOAD_ID_LEN 32
#define X_KEY         "s3.upload.key"
#define X_CTYPE       "s3.upload.content-type"
#define X_CKSUM_ALG   "s3.upload.checksum-algorithm"
/* S3's smallest part but the last. */
#define PART_MIN (5u << 20)
#define LIST_MAX 1000

static bool upload_id_ok(const char *id)
{
	return id && strlen(id) == UPLOAD_ID_LEN && strspn(id, "0123456789abcdef") == UPLOAD_ID_LEN;
}

static char *upload_dir(const struct s3_req *r, const char *id)
{
	return xasprintf(S3_BUCKETS_DIR "/%s/" S3_UPLOADS_NAME "/%s", r->bucket, id);
}

char *s3_part_path(const struct s3_req *r, const char *id, uint32_t n)
{
	return upload_id_ok(id) ? xasprintf(S3_BUCKETS_DIR "/%s/" S3_UPLOADS_NAME "/%s/%05u",
					    r->bucket, id, n)
				: NULL;
}

static void no_such_upload(struct s3_req *r)
{
	s3_error(r, S3_NO_SUCH_UPLOAD,
		 "The specified upload does not exist. The upload ID may be invalid, or the "
		 "upload may have been aborted or completed.");
}

/* An xattr's value as a new string; NULL when absent. */
static char *xattr_str(const struct filer_entry *e, const char *name)
{
	const struct filer_xattr *x = filer_entry_xattr_get(e, name);
	return x ? xstrndup((const char *)x->value, x->value_len) : NULL;
}

bool s3_upload_check(struct s3_req *r, const char *id, struct filer_entry **dir)
{
	struct filer_entry *e = NULL;
	char *path, *key = NULL;
	bool ok;
	int rc;

	if (dir)
		*dir = NULL;
	if (!upload_id_ok(id)) {
		no_such_upload(r);
		return false;
	}
	path = upload_dir(r, id);
	rc = filer_meta_lookup(r->g->filer, path, &e);
	free(path);
	if (rc && rc != ENOENT && rc != ENOTDIR) {
		s3_filer_error(r, rc, "looking the upload up");
		return false;
	}
	key = e ? xattr_str(e, X_KEY) : NULL;
	ok = !rc && S_ISDIR(e->attr.mode) && key && !strcmp(key, r->key);
	free(key);
	if (!ok) {
		if (rc == ENOENT && !s3_bucket_exists(r))
			; /* NoSuchBucket answered */
		else
			no_such_upload(r);
		filer_entry_free(e);
		return false;
	}
	if (dir)
		*dir = e;
	else
		filer_entry_free(e);
	return true;
}

/* ---- create ---- */

void s3_create_multipart(struct s3_req *r)
{
	struct s3_meta m = {0};
	struct filer_meta_new nw = {0};
	const char *alg = http_req_header(r->req, "x-amz-checksum-algorithm");
	char *path = s3_object_path(r->bucket, r->key), *dir = NULL;
	uint8_t rnd[UPLOAD_ID_LEN / 2];
	char id[UPLOAD_ID_LEN + 1];
	xml_w *w;
	int rc;

	if (!path) {
		s3_error(r, S3_INVALID_ARGUMENT, "The key cannot name a file here");
		goto out;
	}
	if (alg && s3_cksum_from_name(alg) == S3_CKSUM_NONE) {
		s3_error(r, S3_INVALID_REQUEST, "Checksum algorithm %.32s is not supported", alg);
		goto out;
	}
	if (!s3_meta_from_request(r, &m) || !s3_bucket_exists(r))
		goto out;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		s3_error(r, S3_INTERNAL, "no randomness for an upload id");
		goto out;
	}
	hex_encode(rnd, sizeof(rnd), id);
	filer_entry_xattr_set(m.e, X_KEY, r->key, strlen(r->key));
	if (m.mime)
		filer_entry_xattr_set(m.e, X_CTYPE, m.mime, strlen(m.mime));
	if (alg)
		filer_entry_xattr_set(m.e, X_CKSUM_ALG, s3_cksum_name(s3_cksum_from_name(alg)),
				      strlen(s3_cksum_name(s3_cksum_from_name(alg))));
	dir = upload_dir(r, id);
	nw.mode = S_IFDIR | 0755;
	nw.xattrs = m.e->xattrs;
	nw.n_xattrs = m.e->n_xattrs;
	nw.parents = true; /* .uploads itself on the first upload */
	nw.exclusive = true;
	rc = filer_meta_create(r->g->filer, dir, &nw, NULL);
	if (rc) {
		s3_filer_error(r, rc, "starting the upload");
		goto out;
	}
	w = xml_w_new(&r->body);
	xml_open_s3(w, "InitiateMultipartUploadResult");
	xml_elem(w, "Bucket", r->bucket);
	xml_elem(w, "Key", r->key);
	xml_elem(w, "UploadId", id);
	s3_xml_ok(r, w);
	if (alg)
		s3_header(r, "x-amz-checksum-algorithm", s3_cksum_name(s3_cksum_from_name(alg)));
out:
	s3_meta_free(&m);
	free(dir);
	free(path);
}

/* ---- the parts of an upload ---- */

struct parts {
	struct filer_entry **v; /* by number, ascending */
	uint32_t *num;
	size_t n;
};

static void parts_free(struct parts *p)
{
	for (size_t i = 0; i < p->n; i++)
		filer_entry_free(p->v[i]);
	free(p->v);
	free(p->num);
	memset(p, 0, sizeof(*p));
}

/* Reads the part files of upload id (numbered names only) into p; false: r answered. */
static bool parts_read(struct s3_req *r, const char *id, struct parts *p)
{
	char *dir = upload_dir(r, id), *start = xstrdup("");
	bool ok = true;

	memset(p, 0, sizeof(*p));
	while (ok && start) {
		struct filer_meta_page pg;
		int rc = filer_meta_list(r->g->filer, dir, start, LIST_MAX, &pg);
		free(start);
		start = NULL;
		if (rc) {
			if (rc == ENOENT)
				no_such_upload(r);
			else
				s3_filer_error(r, rc, "listing the parts");
			ok = false;
			break;
		}
		for (size_t i = 0; i < pg.n; i++) {
			uint32_t num;
			if (!S_ISREG(pg.entries[i]->attr.mode) ||
			    strlen(pg.entries[i]->name) != 5 ||
			    !parse_u32(pg.entries[i]->name, &num))
				continue;
			p->v = xrealloc(p->v, (p->n + 1) * sizeof(*p->v));
			p->num = xrealloc(p->num, (p->n + 1) * sizeof(*p->num));
			p->v[p->n] = pg.entries[i];
			p->num[p->n++] = num;
			pg.entries[i] = NULL;
		}
		if (pg.more && pg.last_name)
			start = xstrdup(pg.last_name);
		filer_meta_page_free(&pg);
	}
	free(start);
	free(dir);
	if (!ok)
		parts_free(p);
	return ok;
}

static const struct filer_entry *part_find(const struct parts *p, uint32_t num)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->num[i] == num)
			return p->v[i];
	return NULL;
}

/* ---- complete ---- */

/* One <Part> of the request: its number and ETag (unquoted), checked against the stored part. */
static bool part_matches(const struct filer_entry *e, const char *etag)
{
	char have[S3_ETAG_MAX];
	size_t n = strlen(etag);
	s3_etag(e, have);
	if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"')
		return strlen(have) == n && !memcmp(have, etag, n);
	return strlen(have) == n + 2 && !memcmp(have + 1, etag, n);
}

/*
 * Checks the request's part list against the stored parts and builds the
 * object's chunk list and ETag; false with r's error answer.
 */
static bool assemble(struct s3_req *r, const struct xml_node *root, const struct parts *stored,
		     struct filer_entry *obj, char etag[S3_ETAG_MAX])
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char sum[EVP_MAX_MD_SIZE];
	uint64_t base = 0;
	uint32_t last = 0;
	size_t count = 0, total = xml_count(root, "Part");
	bool ok = false;
	char hex[33];

	EVP_DigestInit_ex(md, EVP_md5(), NULL);
	/* the list's form first: numbers, then their order */
	xml_foreach(part, root, "Part")
	{
		const char *pn = xml_child_text(part, "PartNumber"),
			   *et = xml_child_text(part, "ETag");
		uint32_t num;
		if (!pn || !et || !parse_u32(pn, &num) || num < 1 || num > S3_PARTS_MAX) {
			s3_error(r, S3_MALFORMED_XML,
				 "Every Part needs a PartNumber (1..%d) and an "
				 "ETag",
				 S3_PARTS_MAX);
			goto out;
		}
		if (num <= last) {
			s3_error(r, S3_INVALID_PART_ORDER,
				 "The list of parts was not in ascending order. Parts must be "
				 "ordered by part number.");
			goto out;
		}
		last = num;
	}
	xml_foreach(part, root, "Part")
	{
		const char *et = xml_child_text(part, "ETag");
		const struct filer_entry *e;
		uint32_t num = 0;
		char quoted[S3_ETAG_MAX];

		count++;
		parse_u32(xml_child_text(part, "PartNumber"), &num);
		e = part_find(stored, num);
		if (!stored->n) {
			/* every part consumed: a racing complete won (its directory goes next) */
			no_such_upload(r);
			goto out;
		}
		if (!e || !part_matches(e, et)) {
			s3_error(r, S3_INVALID_PART,
				 "One or more of the specified parts could not be found. The part "
				 "may not have been uploaded, or the specified entity tag may not "
				 "match the part's entity tag (part %u).",
				 num);
			goto out;
		}
		if (count < total && e->attr.size < PART_MIN) {
			s3_error(r, S3_ENTITY_TOO_SMALL,
				 "Your proposed upload is smaller than the minimum allowed size "
				 "(part %u: %" PRIu64 " bytes; parts but the last need 5 MiB)",
				 num, e->attr.size);
			goto out;
		}
		for (size_t i = 0; i < e->n_chunks; i++) {
			const struct filer_chunk *c = &e->chunks[i];
			filer_entry_add_chunk(obj, c->fid, base + c->offset, c->size, c->mtime_ns,
					      c->etag, c->is_manifest);
		}
		base += e->attr.size;
		/* the ETag: MD5 over the parts' binary MD5s */
		s3_etag(e, quoted);
		if (strlen(quoted) != 34) {
			s3_error(r, S3_INVALID_PART,
				 "Part %u was changed outside S3 and has no MD5 any more", num);
			goto out;
		}
		for (size_t i = 0; i < 16; i++) {
			int hi = hex_digit_value(quoted[1 + 2 * i]),
			    lo = hex_digit_value(quoted[2 + 2 * i]);
			uint8_t b = (uint8_t)((hi < 0 ? 0 : hi) << 4 | (lo < 0 ? 0 : lo));
			EVP_DigestUpdate(md, &b, 1);
		}
	}
	if (!count) {
		s3_error(r, S3_MALFORMED_XML, "You must specify at least one part");
		goto out;
	}
	EVP_DigestFinal_ex(md, sum, NULL);
	hex_encode(sum, 16, hex);
	snprintf(etag, S3_ETAG_MAX, "%s-%zu", hex, count);
	obj->attr.size = base;
	ok = true;
out:
	EVP_MD_CTX_free(md);
	return ok;
}

void s3_complete_multipart(struct s3_req *r)
{
	const char *id = http_req_query(r->req, "uploadId");
	struct filer_entry *dir = NULL, *obj = filer_entry_new("/", "object");
	struct xml_node *root = NULL;
	struct parts stored = {0};
	struct s3_meta m = {0};
	struct filer_meta_new nw = {0};
	struct s3_cond c = {0};
	char **consume = NULL, *path = s3_object_path(r->bucket, r->key), msg[128],
	     etag[S3_ETAG_MAX];
	char *ctype = NULL, *dpath = NULL;
	xml_w *w;
	int rc;

	if (xml_parse(r->in.data ? r->in.data : "", r->in.len, NULL, &root, msg, sizeof(msg)) ||
	    strcmp(root->name, "CompleteMultipartUpload") ||
	    xml_count(root, "Part") > S3_PARTS_MAX) {
		s3_error(r, S3_MALFORMED_XML,
			 "The XML you provided was not well-formed or did not validate against "
			 "our published schema");
		goto out;
	}
	if (!path || !s3_cond_read(r, &c) || !s3_upload_check(r, id, &dir) ||
	    !parts_read(r, id, &stored) || !assemble(r, root, &stored, obj, etag) ||
	    !s3_cond_check(r, path, &c))
		goto out;
	m.e = filer_entry_new("/", "object");
	s3_meta_from_entry(&m, dir);
	s3_lock_inherit(m.e, dir);
	ctype = xattr_str(dir, X_CTYPE);
	nw.mode = S_IFREG | 0644;
	nw.time_ns = (int64_t)time_now_ns();
	s3_meta_stamp(&m, nw.time_ns, etag, S3_CKSUM_NONE, NULL);
	nw.mime = ctype;
	nw.xattrs = m.e->xattrs;
	nw.n_xattrs = m.e->n_xattrs;
	nw.chunks = obj->chunks;
	nw.n_chunks = obj->n_chunks;
	consume = xcalloc(stored.n ? stored.n : 1, sizeof(*consume));
	for (size_t i = 0; i < stored.n; i++)
		consume[i] = s3_part_path(r, id, stored.num[i]);
	nw.consume = (const char *const *)consume;
	nw.n_consume = stored.n;
	nw.parents = true; /* the bucket is there: the upload is in it */
	rc = s3_commit_object(r, path, &nw, &c);
	if (rc == ENOENT && !c.if_match)
		no_such_upload(r); /* a racing complete or abort took the parts */
	if (rc)
		goto out;
	dpath = upload_dir(r, id);
	(void)filer_meta_delete(r->g->filer, dpath, true); /* empty now */
	w = xml_w_new(&r->body);
	xml_open_s3(w, "CompleteMultipartUploadResult");
	{
		char *loc = xasprintf("/%s/%s", r->bucket, r->key);
		xml_elem(w, "Location", loc);
		free(loc);
	}
	xml_elem(w, "Bucket", r->bucket);
	xml_elem(w, "Key", r->key);
	{
		char q[S3_ETAG_MAX + 2];
		snprintf(q, sizeof(q), "\"%s\"", etag);
		xml_elem(w, "ETag", q);
	}
	s3_xml_ok(r, w);
out:
	for (size_t i = 0; consume && i < stored.n; i++)
		free(consume[i]);
	free(consume);
	free(ctype);
	free(dpath);
	free(path);
	xml_free(root);
	parts_free(&stored);
	s3_meta_free(&m);
	s3_cond_free(&c);
	filer_entry_free(dir);
	filer_entry_free(obj);
}

/* ---- abort and listings ---- */

void s3_abort_multipart(struct s3_req *r)
{
	const char *id = http_req_query(r->req, "uploadId");
	char *dir;
	int rc;
	if (!s3_upload_check(r, id, NULL))
		return;
	dir = upload_dir(r, id);
	rc = filer_meta_delete(r->g->filer, dir, true); /* frees the parts' chunks */
	free(dir);
	if (rc == ENOENT)
		no_such_upload(r);
	else if (rc)
		s3_filer_error(r, rc, "aborting the upload");
	else
		r->status = 204;
}

static void owner(struct s3_req *r, xml_w *w, const char *elem)
{
	const char *who = r->who ? s3_identity_name(r->who) : "anonymous";
	xml_open(w, elem);
	xml_elem(w, "ID", who);
	xml_elem(w, "DisplayName", who);
	xml_close(w);
}

/* A max-* or *-marker parameter: false with r's answer when malformed. */
static bool uint_param(struct s3_req *r, const char *name, uint64_t *v)
{
	const char *s = http_req_query(r->req, name);
	if (!s)
		return true;
	if (parse_u64(s, v))
		return true;
	s3_error(r, S3_INVALID_ARGUMENT, "Provided %s not an integer or within integer range",
		 name);
	return false;
}

void s3_list_parts(struct s3_req *r)
{
	const char *id = http_req_query(r->req, "uploadId");
	uint64_t max = LIST_MAX, marker = 0;
	struct parts p = {0};
	struct filer_entry *dir = NULL;
	size_t shown = 0, i;
	char when[32], etag[S3_ETAG_MAX], *alg = NULL;
	xml_w *w;

	if (!uint_param(r, "max-parts", &max) || !uint_param(r, "part-number-marker", &marker) ||
	    !s3_upload_check(r, id, &dir) || !parts_read(r, id, &p))
		goto out;
	max = MIN(max, (uint64_t)LIST_MAX);
	w = xml_w_new(&r->body);
	xml_open_s3(w, "ListPartsResult");
	xml_elem(w, "Bucket", r->bucket);
	xml_elem(w, "Key", r->key);
	xml_elem(w, "UploadId", id);
	owner(r, w, "Initiator");
	owner(r, w, "Owner");
	xml_elem(w, "StorageClass", "STANDARD");
	xml_elem_u64(w, "PartNumberMarker", marker);
	if ((alg = xattr_str(dir, X_CKSUM_ALG)))
		xml_elem(w, "ChecksumAlgorithm", alg);
	xml_elem_u64(w, "MaxParts", max);
	for (i = 0; i < p.n && p.num[i] <= marker; i++)
		;
	for (; i < p.n && shown < max; i++, shown++) {
		s3_iso8601(p.v[i]->attr.mtime_ns, when);
		s3_etag(p.v[i], etag);
		xml_open(w, "Part");
		xml_elem_u64(w, "PartNumber", p.num[i]);
		xml_elem(w, "LastModified", when);
		xml_elem(w, "ETag", etag);
		xml_elem_u64(w, "Size", p.v[i]->attr.size);
		xml_close(w);
	}
	if (shown)
		xml_elem_u64(w, "NextPartNumberMarker", p.num[i - 1]);
	xml_elem_bool(w, "IsTruncated", i < p.n);
	s3_xml_ok(r, w);
out:
	free(alg);
	parts_free(&p);
	filer_entry_free(dir);
}

/* One upload of a bucket listing. */
struct upload {
	char *key, *id;
	int64_t initiated;
};

static int upload_cmp(const void *a, const void *b)
{
	const struct upload *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	if (c)
		return c;
	return x->initiated < y->initiated ? -1 : x->initiated > y->initiated;
}

void s3_list_uploads(struct s3_req *r)
{
	const char *prefix = http_req_query(r->req, "prefix");
	const char *km = http_req_query(r->req, "key-marker");
	const char *im = http_req_query(r->req, "upload-id-marker");
	char *dir = xasprintf(S3_BUCKETS_DIR "/%s/" S3_UPLOADS_NAME, r->bucket), *start = NULL;
	struct upload *u = NULL;
	size_t n = 0, shown = 0, i = 0;
	uint64_t max = LIST_MAX;
	char when[32];
	xml_w *w;
	int rc = 0;

	prefix = prefix ? prefix : "";
	if (!uint_param(r, "max-uploads", &max) || !s3_bucket_exists(r))
		goto out;
	max = MIN(max, (uint64_t)LIST_MAX);
	start = xstrdup("");
	while (start) {
		struct filer_meta_page pg;
		rc = filer_meta_list(r->g->filer, dir, start, LIST_MAX, &pg);
		free(start);
		start = NULL;
		if (rc)
			break;
		for (size_t k = 0; k < pg.n; k++) {
			char *key = xattr_str(pg.entries[k], X_KEY);
			if (!key || strncmp(key, prefix, strlen(prefix))) {
				free(key);
				continue;
			}
			u = xrealloc(u, (n + 1) * sizeof(*u));
			u[n].key = key;
			u[n].id = xstrdup(pg.entries[k]->name);
			u[n++].initiated = pg.entries[k]->attr.crtime_ns;
		}
		if (pg.more && pg.last_name)
			start = xstrdup(pg.last_name);
		filer_meta_page_free(&pg);
	}
	if (rc && rc != ENOENT) {
		s3_filer_error(r, rc, "listing the uploads");
		goto out;
	}
	if (n)
		qsort(u, n, sizeof(*u), upload_cmp);
	/* resume after key-marker (and, within that key, after upload-id-marker) */
	while (km && i < n) {
		int c = strcmp(u[i].key, km);
		if (c > 0 || (c == 0 && im && *im && strcmp(u[i].id, im) > 0))
			break;
		i++;
	}
	w = xml_w_new(&r->body);
	xml_open_s3(w, "ListMultipartUploadsResult");
	xml_elem(w, "Bucket", r->bucket);
	xml_elem(w, "KeyMarker", km ? km : "");
	xml_elem(w, "UploadIdMarker", im ? im : "");
	xml_elem(w, "Prefix", prefix);
	xml_elem_u64(w, "MaxUploads", max);
	for (; i < n && shown < max; i++, shown++) {
		s3_iso8601(u[i].initiated, when);
		xml_open(w, "Upload");
		xml_elem(w, "Key", u[i].key);
		xml_elem(w, "UploadId", u[i].id);
		owner(r, w, "Initiator");
		owner(r, w, "Owner");
		xml_elem(w, "StorageClass", "STANDARD");
		xml_elem(w, "Initiated", when);
		xml_close(w);
	}
	if (shown) {
		xml_elem(w, "NextKeyMarker", u[i - 1].key);
		xml_elem(w, "NextUploadIdMarker", u[i - 1].id);
	}
	xml_elem_bool(w, "IsTruncated", i < n);
	s3_xml_ok(r, w);
out:
	for (size_t k = 0; k < n; k++) {
		free(u[k].key);
		free(u[k].id);
	}
	free(u);
	free(start);
	free(dir);
}
