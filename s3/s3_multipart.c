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
 *
 * CHECKSUMS: an upload may name a checksum algorithm and type at creation
 * (x-amz-checksum-algorithm, x-amz-checksum-type; the type defaults to
 * FULL_OBJECT for CRC64NVME and COMPOSITE otherwise, FULL_OBJECT only for the
 * CRCs). Each part then carries that checksum: UploadPart stores it with the
 * part like PutObject does, and refuses a part without it when it checks its
 * upload (s3_upload_check, at commit). Completing takes the parts' stored
 * checksums, never their bytes: COMPOSITE is the checksum of the parts' raw
 * checksums followed by "-N"; FULL_OBJECT is the CRC of the whole object,
 * combined from the parts' CRCs and sizes (s3_crc_combine). A checksum a
 * <Part> names must equal the stored one (InvalidPart).
 *
 * PARTS: the completed object records its part sizes (s3_meta_stamp_parts)
 * and, with a checksum algorithm, its parts' checksums, so GetObject/HeadObject
 * ?partNumber=N can answer one part (with its checksum) and GetObjectAttributes
 * list the parts.
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
#include "s3/s3_sse.h"
#include "util.h"

#define UPLOAD_ID_LEN 32
#define X_KEY         "s3.upload.key"
#define X_CTYPE       "s3.upload.content-type"
#define X_CKSUM_ALG   "s3.upload.checksum-algorithm"
#define X_CKSUM_TYPE  "s3.upload.checksum-type" /* COMPOSITE or FULL_OBJECT */
#define X_COMPLETED   "s3.upload.completed" /* an object's: the upload it was completed from */
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

/*
 * The checksum an upload's directory names (NONE: none), and in *full whether
 * its type is FULL_OBJECT. An upload made before types were recorded has the
 * default type.
 */
static enum s3_cksum upload_cksum(const struct filer_entry *dir, bool *full)
{
	char *alg = xattr_str(dir, X_CKSUM_ALG), *type = xattr_str(dir, X_CKSUM_TYPE);
	enum s3_cksum a = s3_cksum_from_name(alg);
	*full = a && (type ? !strcmp(type, "FULL_OBJECT") : a == S3_CKSUM_CRC64NVME);
	free(alg);
	free(type);
	return a;
}

static const char *type_name(bool full) { return full ? "FULL_OBJECT" : "COMPOSITE"; }

enum s3_cksum s3_upload_checksum(const struct filer_entry *dir)
{
	bool full;
	return upload_cksum(dir, &full);
}

/*
 * UploadPart (a PUT that checks its upload): in an upload with a checksum
 * algorithm each part carries that checksum, as a header, a trailer or
 * x-amz-sdk-checksum-algorithm (the gateway computes it then), which
 * s3_put.c stores with the part. UploadPartCopy sends no bytes: s3_copy.c
 * computes the part's checksum from the bytes it copies. False with r's answer.
 */
static bool part_checksum_ok(struct s3_req *r, const struct filer_entry *dir)
{
	bool full;
	enum s3_cksum want = upload_cksum(dir, &full), got = S3_CKSUM_NONE;
	const char *name, *value;

	if (!want || http_req_header(r->req, "x-amz-copy-source"))
		return true;
	if (r->trailer[0])
		got = s3_cksum_from_header(r->trailer);
	for (size_t i = 0; !got && http_req_header_at(r->req, i, &name, &value); i++)
		got = s3_cksum_from_header(name);
	if (!got)
		got = s3_cksum_from_name(http_req_header(r->req, "x-amz-sdk-checksum-algorithm"));
	if (got == want)
		return true;
	if (!got)
		s3_error(r, S3_INVALID_REQUEST,
			 "The upload was created with the %s checksum algorithm: %s is required "
			 "for each part",
			 s3_cksum_name(want), s3_cksum_header(want));
	else
		s3_error(r, S3_INVALID_REQUEST,
			 "Checksum Type mismatch occurred, expected checksum Type: %s, actual "
			 "checksum Type: %s",
			 s3_cksum_header(want) + 15, s3_cksum_header(got) + 15);
	return false;
}

bool s3_upload_check(struct s3_req *r, const char *id, struct filer_entry **dir)
{
	struct filer_entry *e = NULL;
	char *path, *key = NULL;
	bool ok;
	wfs_err rc;

	if (dir)
		*dir = NULL;
	if (!upload_id_ok(id)) {
		no_such_upload(r);
		return false;
	}
	path = upload_dir(r, id);
	rc = filer_meta_lookup(r->g->filer, path, &e);
	free(path);
	if (rc && rc != WFS_ENOENT && rc != WFS_ENOTDIR) {
		s3_filer_error(r, rc, "looking the upload up");
		return false;
	}
	key = e ? xattr_str(e, X_KEY) : NULL;
	ok = !rc && S_ISDIR(e->attr.mode) && key && !strcmp(key, r->key);
	free(key);
	if (!ok) {
		if (rc == WFS_ENOENT && !s3_bucket_exists(r))
			; /* NoSuchBucket answered */
		else
			no_such_upload(r);
		filer_entry_free(e);
		return false;
	}
	if (http_req_method(r->req) == HTTP_PUT && !part_checksum_ok(r, e)) {
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
	const char *type = http_req_header(r->req, "x-amz-checksum-type");
	enum s3_cksum a = s3_cksum_from_name(alg);
	bool full = false;
	char *path = s3_object_path(r->bucket, r->key), *dir = NULL;
	struct filer_entry *bucket = NULL;
	struct s3_sse *sse = NULL;
	uint8_t rnd[UPLOAD_ID_LEN / 2];
	char id[UPLOAD_ID_LEN + 1];
	xml_w *w;
	wfs_err rc;

	if (!path) {
		s3_error(r, S3_INVALID_ARGUMENT, "The key cannot name a file here");
		goto out;
	}
	if (alg && a == S3_CKSUM_NONE) {
		s3_error(r, S3_INVALID_REQUEST, S3_MSG_UNKNOWN_CKSUM_ALG, alg);
		goto out;
	}
	if (type && strcasecmp(type, "COMPOSITE") && strcasecmp(type, "FULL_OBJECT")) {
		s3_error(r, S3_INVALID_REQUEST, "Value for x-amz-checksum-type header is invalid.");
		goto out;
	}
	if (type && !alg) {
		s3_error(r, S3_INVALID_REQUEST,
			 "The x-amz-checksum-type header can only be used with the "
			 "x-amz-checksum-algorithm header.");
		goto out;
	}
	if (a) {
		full = type ? !strcasecmp(type, "FULL_OBJECT") : a == S3_CKSUM_CRC64NVME;
		/* FULL_OBJECT needs a CRC; S3 makes CRC64NVME checksums FULL_OBJECT only */
		if ((full && !s3_cksum_is_crc(a)) || (!full && a == S3_CKSUM_CRC64NVME)) {
			s3_error(r, S3_INVALID_REQUEST,
				 "The %s checksum type cannot be used with the %s checksum "
				 "algorithm.",
				 type_name(full), s3_cksum_name(a));
			goto out;
		}
	}
	if (!s3_meta_from_request(r, &m) || !s3_bucket_exists(r))
		goto out;
	/* the upload's encryption decides its parts' (the data key is wrapped once, here) */
	if (!s3_sse_requested(r) && (rc = s3_bucket_lookup(r->g, r->bucket, &bucket))) {
		s3_filer_error(r, rc, "reading the bucket's encryption");
		goto out;
	}
	if (!s3_sse_for_write(r, bucket, &sse) || (sse && !s3_sse_seal(r, sse, m.e)))
		goto out;
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		s3_error(r, S3_INTERNAL, "no randomness for an upload id");
		goto out;
	}
	hex_encode(rnd, sizeof(rnd), id);
	filer_entry_xattr_set(m.e, X_KEY, r->key, strlen(r->key));
	if (m.mime)
		filer_entry_xattr_set(m.e, X_CTYPE, m.mime, strlen(m.mime));
	if (a) {
		filer_entry_xattr_set(m.e, X_CKSUM_ALG, s3_cksum_name(a), strlen(s3_cksum_name(a)));
		filer_entry_xattr_set(m.e, X_CKSUM_TYPE, type_name(full), strlen(type_name(full)));
	}
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
	s3_sse_headers(r, sse);
	if (a) {
		s3_header(r, "x-amz-checksum-algorithm", s3_cksum_name(a));
		s3_header(r, "x-amz-checksum-type", type_name(full));
	}
out:
	s3_meta_free(&m);
	s3_sse_free(sse);
	filer_entry_free(bucket);
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
		wfs_err rc = filer_meta_list(r->g->filer, dir, start, LIST_MAX, &pg);
		free(start);
		start = NULL;
		if (rc) {
			if (rc == WFS_ENOENT)
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

/* The object's checksum, made from the parts' stored ones. */
struct mp_sum {
	enum s3_cksum alg;              /* the upload's; NONE: the object gets none */
	bool full;                      /* FULL_OBJECT (a CRC), else COMPOSITE */
	struct s3_cksum_ctx comp;       /* COMPOSITE: the checksum of the parts' raw checksums */
	uint64_t crc;                   /* FULL_OBJECT: the CRC of the parts so far */
	char value[S3_CKSUM_VALUE_MAX]; /* the result, as stored and answered */
	buf parts;                      /* the parts' own values, joined by ',' */
};

/* The Checksum<ALG> elements a <Part> may carry must equal the part's stored checksums. */
static bool part_checksums_match(struct s3_req *r, const struct xml_node *part,
				 const struct filer_entry *e, uint32_t num)
{
	for (int a = S3_CKSUM_NONE + 1; a < S3_CKSUM_COUNT; a++) {
		char elem[32], have[S3_CKSUM_VALUE_MAX];
		const char *want;
		snprintf(elem, sizeof(elem), "Checksum%s", s3_cksum_name((enum s3_cksum)a));
		want = xml_child_text(part, elem);
		if (want &&
		    (!s3_meta_checksum_alg(e, (enum s3_cksum)a, have) || strcmp(have, want))) {
			s3_error(r, S3_INVALID_PART,
				 "One or more of the specified parts could not be found. The part "
				 "may not have been uploaded, or the specified entity tag may not "
				 "match the part's entity tag (part %u: its %s checksum is not "
				 "the one given).",
				 num, s3_cksum_name((enum s3_cksum)a));
			return false;
		}
	}
	return true;
}

/* Adds part e (the count-th) to the object's checksum; false with r's answer. */
static bool sum_part(struct s3_req *r, struct mp_sum *sum, const struct filer_entry *e,
		     uint32_t num, size_t count)
{
	char v[S3_CKSUM_VALUE_MAX];
	uint8_t d[S3_CKSUM_DIGEST_MAX];
	size_t n;

	if (!sum->alg)
		return true;
	if (!s3_meta_checksum_alg(e, sum->alg, v) || !(n = s3_cksum_b64_decode(sum->alg, v, d))) {
		s3_error(r, S3_INVALID_PART,
			 "Part %u has no %s checksum: the upload was created with that checksum "
			 "algorithm, so each part must be uploaded with %s",
			 num, s3_cksum_name(sum->alg), s3_cksum_header(sum->alg));
		return false;
	}
	if (sum->parts.len)
		buf_append(&sum->parts, ",", 1);
	buf_append(&sum->parts, v, strlen(v));
	if (!sum->full)
		s3_cksum_update(&sum->comp, d, n);
	else if (count == 1)
		sum->crc = s3_crc_from_digest(sum->alg, d);
	else
		sum->crc = s3_crc_combine(sum->alg, sum->crc, s3_crc_from_digest(sum->alg, d),
					  e->attr.size);
	return true;
}

/* The object's checksum value of count parts into sum->value. */
static void sum_finish(struct mp_sum *sum, size_t count)
{
	char b64[S3_CKSUM_B64_SIZE];
	uint8_t d[S3_CKSUM_DIGEST_MAX];

	if (!sum->alg)
		return;
	if (sum->full) {
		s3_crc_to_digest(sum->alg, sum->crc, d);
		s3_cksum_digest_b64(sum->alg, d, sum->value);
		return;
	}
	s3_cksum_final_b64(&sum->comp, b64);
	snprintf(sum->value, sizeof(sum->value), "%s-%u", b64, (unsigned)count);
}

/*
 * Checks the request's part list against the stored parts and builds the
 * object's chunk list, ETag, checksum (into sum) and part sizes (sizes[],
 * one per <Part>); false with r's error answer.
 */
static bool assemble(struct s3_req *r, const struct xml_node *root, const struct parts *stored,
		     struct filer_entry *obj, char etag[S3_ETAG_MAX], struct mp_sum *sum,
		     uint64_t *sizes)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char digest[EVP_MAX_MD_SIZE];
	uint64_t base = 0;
	uint32_t last = 0;
	size_t count = 0, total = xml_count(root, "Part");
	bool ok = false;
	char hex[33];

	EVP_DigestInit_ex(md, EVP_md5(), NULL);
	if (sum->alg && !sum->full)
		s3_cksum_init(&sum->comp, sum->alg);
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
		if (!part_checksums_match(r, part, e, num) || !sum_part(r, sum, e, num, count))
			goto out;
		sizes[count - 1] = e->attr.size;
		if (count < total && e->attr.size < PART_MIN) {
			s3_error(r, S3_ENTITY_TOO_SMALL,
				 "Your proposed upload is smaller than the minimum allowed size "
				 "(part %u: %" PRIu64 " bytes; parts but the last need 5 MiB)",
				 num, e->attr.size);
			goto out;
		}
		for (size_t i = 0; i < e->n_chunks; i++) {
			const struct filer_chunk *c = &e->chunks[i];
			filer_entry_push_chunk(obj, c)->offset += base;
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
	EVP_DigestFinal_ex(md, digest, NULL);
	hex_encode(digest, 16, hex);
	snprintf(etag, S3_ETAG_MAX, "%s-%zu", hex, count);
	sum_finish(sum, count);
	obj->attr.size = base;
	ok = true;
out:
	s3_cksum_clear(&sum->comp);
	EVP_MD_CTX_free(md);
	return ok;
}

/*
 * What the Complete request says of the object's checksum, against what the
 * parts made of it: x-amz-checksum-type must be the upload's, an
 * x-amz-checksum-<alg> header (the whole object's checksum; for COMPOSITE its
 * value with or without "-N") must be the upload's algorithm and equal the
 * result (else BadDigest). False with r's answer.
 */
static bool complete_claims_ok(struct s3_req *r, const struct mp_sum *sum)
{
	const char *type = http_req_header(r->req, "x-amz-checksum-type"), *name, *value;

	if (type && (!sum->alg || strcasecmp(type, type_name(sum->full)))) {
		s3_error(r, S3_INVALID_REQUEST,
			 "The upload was created with %s%s checksum type, not %.32s",
			 sum->alg ? "the " : "no", sum->alg ? type_name(sum->full) : "", type);
		return false;
	}
	for (size_t i = 0; http_req_header_at(r->req, i, &name, &value); i++) {
		enum s3_cksum a = s3_cksum_from_header(name);
		size_t n = strcspn(sum->value, "-");
		if (!a)
			continue;
		if (a != sum->alg) {
			s3_error(r, S3_INVALID_REQUEST,
				 "The upload was created with %s%s checksum algorithm: %s does "
				 "not apply",
				 sum->alg ? "the " : "no", sum->alg ? s3_cksum_name(sum->alg) : "",
				 s3_cksum_header(a));
			return false;
		}
		value = value ? value : "";
		if (strcmp(value, sum->value) &&
		    (strlen(value) != n || strncmp(value, sum->value, n))) {
			s3_error(r, S3_BAD_DIGEST,
				 "The %s you specified did not match the calculated checksum.",
				 s3_cksum_name(a));
			return false;
		}
	}
	return true;
}

/* The Complete answer of the object at r's key: its ETag (quoted) and checksum. */
static void complete_answer(struct s3_req *r, const char *etag, enum s3_cksum alg,
			    const char *cksum, bool full)
{
	xml_w *w = xml_w_new(&r->body);
	char *loc = xasprintf("/%s/%s", r->bucket, r->key);
	xml_open_s3(w, "CompleteMultipartUploadResult");
	xml_elem(w, "Location", loc);
	free(loc);
	xml_elem(w, "Bucket", r->bucket);
	xml_elem(w, "Key", r->key);
	xml_elem(w, "ETag", etag);
	if (alg) {
		char elem[32];
		snprintf(elem, sizeof(elem), "Checksum%s", s3_cksum_name(alg));
		xml_elem(w, elem, cksum);
		xml_elem(w, "ChecksumType", type_name(full));
	}
	s3_xml_ok(r, w);
}

/*
 * A Complete repeated once it succeeded (a client retrying after a lost
 * answer): S3 answers it again with the same result. So while the object at
 * path is the one upload id made (X_COMPLETED names it) and the request
 * lists the same parts (their ETags give its ETag), r's NoSuchUpload becomes
 * that answer; true then. A different list keeps NoSuchUpload.
 */
static bool completed_again(struct s3_req *r, const char *id, const char *path,
			    const struct xml_node *root)
{
	struct filer_entry *e = NULL;
	EVP_MD_CTX *md;
	unsigned char digest[EVP_MAX_MD_SIZE];
	char *done, want[S3_ETAG_MAX], have[S3_ETAG_MAX], hex[33], cksum[S3_CKSUM_VALUE_MAX];
	size_t count = 0;
	bool ok = true;
	enum s3_cksum alg;

	if (filer_meta_lookup(r->g->filer, path, &e))
		return false;
	done = xattr_str(e, X_COMPLETED);
	if (!done || strcmp(done, id)) {
		free(done);
		filer_entry_free(e);
		return false;
	}
	free(done);
	md = EVP_MD_CTX_new();
	EVP_DigestInit_ex(md, EVP_md5(), NULL);
	xml_foreach(part, root, "Part")
	{
		const char *et = xml_child_text(part, "ETag");
		size_t n = et ? strlen(et) : 0;
		if (n == 34 && et[0] == '"' && et[33] == '"')
			et++, n -= 2;
		for (size_t i = 0; ok && i < 16; i++) {
			int hi = n == 32 ? hex_digit_value(et[2 * i]) : -1,
			    lo = n == 32 ? hex_digit_value(et[2 * i + 1]) : -1;
			uint8_t b = (uint8_t)(hi << 4 | lo);
			ok = hi >= 0 && lo >= 0;
			if (ok)
				EVP_DigestUpdate(md, &b, 1);
		}
		count++;
	}
	EVP_DigestFinal_ex(md, digest, NULL);
	EVP_MD_CTX_free(md);
	hex_encode(digest, 16, hex);
	snprintf(want, sizeof(want), "\"%s-%zu\"", hex, count);
	s3_etag(e, have);
	ok = ok && count && !strcmp(want, have);
	if (ok) {
		buf_reset(&r->body); /* the NoSuchUpload it replaces */
		alg = s3_meta_checksum(e, cksum);
		complete_answer(r, have, alg, cksum,
				alg && !strcmp(s3_meta_checksum_type(cksum), "FULL_OBJECT"));
		s3_version_headers(r, e);
	}
	filer_entry_free(e);
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
	struct mp_sum sum = {0};
	uint64_t *sizes = NULL;
	wfs_err rc;

	if (xml_parse(r->in.data ? r->in.data : "", r->in.len, NULL, &root, msg, sizeof(msg)) ||
	    strcmp(root->name, "CompleteMultipartUpload") ||
	    xml_count(root, "Part") > S3_PARTS_MAX) {
		s3_error(r, S3_MALFORMED_XML,
			 "The XML you provided was not well-formed or did not validate against "
			 "our published schema");
		goto out;
	}
	if (!path || !s3_cond_read(r, &c))
		goto out;
	if (!s3_upload_check(r, id, &dir)) {
		if (r->status == 404 && upload_id_ok(id))
			(void)completed_again(r, id, path, root);
		goto out;
	}
	if (!parts_read(r, id, &stored))
		goto out;
	sum.alg = upload_cksum(dir, &sum.full);
	sizes = xcalloc(xml_count(root, "Part") + 1, sizeof(*sizes));
	if (!assemble(r, root, &stored, obj, etag, &sum, sizes)) {
		if (r->status == 404) /* a racing Complete took the parts: maybe this one's */
			(void)completed_again(r, id, path, root);
		goto out;
	}
	if (!complete_claims_ok(r, &sum) || !s3_cond_check(r, path, &c))
		goto out;
	m.e = filer_entry_new("/", "object");
	s3_meta_from_entry(&m, dir);
	s3_lock_inherit(m.e, dir);
	filer_entry_xattr_set(m.e, X_COMPLETED, id, strlen(id)); /* for a repeated Complete */
	{
		/* the ACL CreateMultipartUpload's headers gave, its writer the owner */
		const struct filer_xattr *acl = filer_entry_xattr_get(dir, S3_XATTR_ACL);
		if (acl)
			filer_entry_xattr_set(m.e, S3_XATTR_ACL, acl->value, acl->value_len);
	}
	{
		size_t np = 0;
		const struct filer_entry **in_order =
			xcalloc(xml_count(root, "Part") + 1, sizeof(*in_order));
		bool ok;
		xml_foreach(part, root, "Part")
		{
			uint32_t num = 0;
			parse_u32(xml_child_text(part, "PartNumber"), &num);
			in_order[np++] = part_find(&stored, num);
		}
		ok = s3_sse_inherit(r, dir, in_order, np, m.e);
		free(in_order);
		if (!ok)
			goto out;
	}
	ctype = xattr_str(dir, X_CTYPE);
	nw.mode = S_IFREG | 0644;
	nw.time_ns = (int64_t)time_now_ns();
	s3_meta_stamp(&m, nw.time_ns, etag, sum.alg, sum.value);
	s3_meta_stamp_parts(&m, nw.time_ns, sizes, xml_count(root, "Part"));
	if (sum.alg) {
		buf_append(&sum.parts, "", 1);
		s3_meta_stamp_part_checksums(&m, nw.time_ns, sum.parts.data);
	}
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
	if (rc == WFS_ENOENT && !c.if_match) {
		no_such_upload(r); /* a racing complete or abort took the parts */
		(void)completed_again(r, id, path, root);
	}
	if (rc)
		goto out;
	dpath = upload_dir(r, id);
	(void)filer_meta_delete(r->g->filer, dpath, true); /* empty now */
	{
		char q[S3_ETAG_MAX + 2];
		snprintf(q, sizeof(q), "\"%s\"", etag);
		complete_answer(r, q, sum.alg, sum.value, sum.full);
	}
	s3_sse_stored_headers(r, dir);
out:
	buf_free(&sum.parts);
	free(sizes);
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
	wfs_err rc;
	if (!s3_upload_check(r, id, NULL))
		return;
	dir = upload_dir(r, id);
	rc = filer_meta_delete(r->g->filer, dir, true); /* frees the parts' chunks */
	free(dir);
	if (rc == WFS_ENOENT)
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
	char when[32], etag[S3_ETAG_MAX], *alg = NULL, cksum[S3_CKSUM_VALUE_MAX];
	enum s3_cksum a;
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
	if ((alg = xattr_str(dir, X_CKSUM_ALG))) {
		bool full;
		upload_cksum(dir, &full);
		xml_elem(w, "ChecksumAlgorithm", alg);
		xml_elem(w, "ChecksumType", type_name(full));
	}
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
		if ((a = s3_meta_checksum(p.v[i], cksum))) {
			char elem[32];
			snprintf(elem, sizeof(elem), "Checksum%s", s3_cksum_name(a));
			xml_elem(w, elem, cksum);
		}
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
	enum s3_cksum alg;
	bool full;
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
	wfs_err rc = WFS_OK;

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
			u[n].alg = upload_cksum(pg.entries[k], &u[n].full);
			u[n++].initiated = pg.entries[k]->attr.crtime_ns;
		}
		if (pg.more && pg.last_name)
			start = xstrdup(pg.last_name);
		filer_meta_page_free(&pg);
	}
	if (rc && rc != WFS_ENOENT) {
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
		if (u[i].alg) {
			xml_elem(w, "ChecksumAlgorithm", s3_cksum_name(u[i].alg));
			xml_elem(w, "ChecksumType", type_name(u[i].full));
		}
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
