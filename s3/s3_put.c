/*
 * PutObject: the body streams to the volume servers as it arrives, and the
 * object's entry is committed once all of it is stored and checked.
 *
 * DESIGN
 * - The loop thread takes the body off the connection, decodes aws-chunked
 *   framing (chunk signatures are checked as they pass) and collects the
 *   payload in `fill`. Once fill holds PIECE bytes a job on the gateway's pool
 *   hashes them (MD5 for the ETag, SHA-256 when the payload hash is signed,
 *   the checksum the client named in a header) and hands them to a chunk
 *   writer, which cuts chunks and uploads several at once with bounded memory.
 *   If the next piece fills before the job is back, the body pauses until it
 *   is: an upload holds two pieces plus the writer's buffers, whatever its
 *   size, and at most one job per upload is ever out.
 * - Nothing is visible until every check has passed: the last job checks the
 *   digests, then commits the entry with one filer create that carries the
 *   chunk list (or, for small objects, the bytes inline) and the metadata. A
 *   failed check, a broken connection or a refused create deletes what was
 *   uploaded; the filer's assign leases the ids, so a gateway killed
 *   mid-upload leaks nothing either. A client thus sees an error or the
 *   whole object, never a part of it.
 * - The commit and its conditions (If-None-Match, If-Match) are s3_commit.c's.
 *   UploadPart takes the same path into a part file of the upload's
 *   directory (s3_multipart.c), never inline, since parts become the chunks
 *   of the completed object.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include "client/filer_meta.h"
#include "client/chunk_io.h"
#include "client/filer_wire.h"
#include "http_loop_client.h"
#include "jwt.h"
#include "log.h"
#include "md5.h"
#include "s3/aws_chunked.h"
#include "s3/s3_int.h"
#include "s3/s3_meta.h"
#include "s3/s3_sse.h"
#include "util.h"

#define PIECE (1u << 20)

struct s3_put {
	struct s3_req *r;
	char *path;
	struct s3_meta meta;
	chunk_writer *cw;
	aws_chunked *dec; /* aws-chunked bodies */
	buf fill, wbuf;
	bool inflight, body_done;
	bool paused;     /* a full piece waits for the job */
	enum s3_err err; /* the first failure, S3_OK while all is well (loop thread) */
	char msg[256];
	wfs_err job_err; /* a write job's failure, handed to the loop with the job */
	/* digests, advanced by the jobs in body order */
	struct md5_ctx md5;
	EVP_MD_CTX *sha256;     /* only when the payload hash is signed */
	struct s3_cksum_ctx ck; /* a checksum named by header (a trailer's is the decoder's) */
	enum s3_cksum ck_alg;
	char *ck_claim; /* the x-amz-checksum-* header's value; NULL: none or a trailer */
	struct s3_cond cond;
	char *upload_id;           /* UploadPart: the upload the part belongs to */
	struct s3_form *form;      /* PostObject: the form around the file */
	uint64_t len_min, len_max; /* PostObject: the policy's content-length-range */
	bool answered;             /* r already holds the error answer of err */
	uint64_t reserved;         /* bytes of the upload memory budget held (s3_budget.c) */
	struct s3_gateway *g;      /* (r is freed with the answer, before p) */
	/* the commit: the entry (its bytes or chunks borrowed) and the answer's digests */
	struct filer_meta_new nw;
	char md5_hex[33], cksum[S3_CKSUM_B64_SIZE];
	/* encryption (s3_sse.h): bytes are encrypted after hashing; NULL: none */
	struct s3_sse *sse;
	uint64_t enc_off;  /* the plaintext offset of the next byte stored */
	bool sse_pending;  /* the bucket's default (or the upload's mode) is read on a worker */
	bool post_sse_read; /* PostObject: the bucket's default was read (by the first job) */
};

static void put_free(struct s3_put *p)
{
	if (p->reserved)
		s3_budget_give(p->g->upload_mem, p->reserved);
	free(p->path);
	s3_meta_free(&p->meta);
	chunk_writer_free(p->cw); /* deletes what an unfinished writer uploaded */
	aws_chunked_free(p->dec);
	buf_free(&p->fill);
	buf_free(&p->wbuf);
	EVP_MD_CTX_free(p->sha256);
	s3_cksum_clear(&p->ck);
	free(p->ck_claim);
	s3_cond_free(&p->cond);
	free(p->upload_id);
	s3_form_free(p->form);
	s3_sse_free(p->sse);
	free(p);
}

/* r->drop: an upload the stopped gateway left half done (its memory budget goes too). */
static void put_drop(void *state)
{
	struct s3_put *p = state;
	p->reserved = 0;
	put_free(p);
}

/* Records the first failure; the loop answers it once no job is out. */
static void put_fail(struct s3_put *p, enum s3_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void put_fail(struct s3_put *p, enum s3_err e, const char *fmt, ...)
{
	va_list ap;
	if (p->err)
		return;
	p->err = e;
	va_start(ap, fmt);
	vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
	va_end(ap);
}

/* ---- the request head (loop thread) ---- */

/* The x-amz-checksum-* header, if any: at most one, well-formed. */
static bool checksum_header(struct s3_put *p)
{
	struct s3_req *r = p->r;
	const char *name, *value;
	for (size_t i = 0; http_req_header_at(r->req, i, &name, &value); i++) {
		enum s3_cksum a = s3_cksum_from_header(name);
		if (a == S3_CKSUM_NONE)
			continue;
		if (p->ck_claim) {
			s3_error(r, S3_INVALID_REQUEST,
				 "Expecting a single x-amz-checksum- header");
			return false;
		}
		if (!value || !s3_cksum_b64_valid(a, value, strlen(value))) {
			s3_error(r, S3_INVALID_REQUEST, "Value for %s header is invalid.", name);
			return false;
		}
		p->ck_alg = a;
		p->ck_claim = xstrdup(value);
	}
	return true;
}

/* Which checksum the object gets: a header's, a trailer's, or the one the SDK names. */
static bool checksum_choice(struct s3_put *p, enum s3_cksum *trailer)
{
	struct s3_req *r = p->r;
	const char *sdk = http_req_header(r->req, "x-amz-sdk-checksum-algorithm");
	enum s3_cksum named = s3_cksum_from_name(sdk);

	*trailer = s3_cksum_from_header(r->trailer[0] ? r->trailer : NULL);
	if (r->trailer[0] && *trailer == S3_CKSUM_NONE) {
		s3_error(r, S3_INVALID_REQUEST,
			 "The value specified in the x-amz-trailer header "
			 "is not supported");
		return false;
	}
	if (sdk && named == S3_CKSUM_NONE) {
		s3_error(r, S3_INVALID_REQUEST,
			 "Value for x-amz-sdk-checksum-algorithm header is invalid.");
		return false;
	}
	if (!checksum_header(p))
		return false;
	if (*trailer && p->ck_claim) {
		s3_error(r, S3_INVALID_REQUEST,
			 "Expecting a single x-amz-checksum- header: one is also in the trailer");
		return false;
	}
	if (named && ((*trailer && named != *trailer) || (p->ck_claim && named != p->ck_alg))) {
		s3_error(r, S3_INVALID_REQUEST,
			 "x-amz-sdk-checksum-algorithm names another checksum than the one sent");
		return false;
	}
	if (*trailer)
		p->ck_alg = *trailer;
	else if (!p->ck_claim)
		p->ck_alg = named; /* named but not sent: computed and stored */
	if (p->ck_alg && !*trailer)
		s3_cksum_init(&p->ck, p->ck_alg);
	return true;
}

/* An open gateway verifies no signature: chunk signatures pass unchecked there. */
static bool verify_chunk(void *ctx, const uint8_t sha256[32], const char *sig)
{
	struct s3_req *r = ctx;
	return !r->chain || sigv4_chunk_check(r->chain, sha256, sig);
}

static bool verify_trailer(void *ctx, const uint8_t sha256[32], const char *sig)
{
	struct s3_req *r = ctx;
	return !r->chain || sigv4_trailer_check(r->chain, sha256, sig);
}

/* The body's framing and length: false with r's error answer. */
static bool body_form(struct s3_put *p, enum s3_cksum trailer)
{
	struct s3_req *r = p->r;
	int64_t raw = http_req_content_length(r->req);
	int64_t len = raw;
	bool streaming = r->payload >= SIGV4_STREAMING_SIGNED;

	const char *te = http_req_header(r->req, "transfer-encoding");

	if (streaming)
		len = r->decoded_length;
	/* the AWS C++ SDK (pyarrow's S3) sends aws-chunked parts with HTTP chunking and
	   no Content-Length: x-amz-decoded-content-length still gives the length */
	if (streaming && raw < 0 && te && strcasestr(te, "chunked"))
		raw = 0;
	/* a plain body of unknown length (curl -T -, HTTP chunking): taken up to
	   S3_OBJECT_MAX and stored as it comes, inline if it turns out small */
	if (!streaming && raw < 0 && te && strcasestr(te, "chunked"))
		raw = len = 0;
	if (raw < 0 || len < 0) {
		s3_error(r, S3_MISSING_CONTENT_LENGTH,
			 "You must provide the Content-Length HTTP "
			 "header%s.",
			 streaming ? " and x-amz-decoded-content-length" : "");
		return false;
	}
	if ((uint64_t)len > S3_OBJECT_MAX) {
		s3_error(r, S3_ENTITY_TOO_LARGE,
			 "Your proposed upload exceeds the maximum allowed size (5 GiB); use a "
			 "multipart upload");
		return false;
	}
	if (streaming) {
		struct aws_chunked_opts o = {0};
		o.signed_chunks = r->payload != SIGV4_STREAMING_UNSIGNED_TRAILER;
		o.trailer = r->payload != SIGV4_STREAMING_SIGNED;
		o.trailer_signed = r->payload == SIGV4_STREAMING_SIGNED_TRAILER;
		o.trailer_cksum = trailer;
		o.decoded_length = (uint64_t)len;
		o.min_chunk = o.signed_chunks ? AWS_CHUNKED_MIN_CHUNK : 0;
		o.verify_chunk = verify_chunk;
		o.verify_trailer = verify_trailer;
		o.ctx = r;
		p->dec = aws_chunked_new(&o);
	} else if (trailer) {
		s3_error(r, S3_INVALID_REQUEST, "x-amz-trailer needs an aws-chunked body");
		return false;
	}
	return true;
}

/* Headers S3 would act on that this gateway does not: refused rather than ignored. */
static bool unsupported(struct s3_req *r)
{
	static const char *const refused[] = {
		"x-amz-website-redirect-location",
	};
	for (size_t i = 0; i < ARRAY_LEN(refused); i++)
		if (http_req_header(r->req, refused[i])) {
			s3_error(r, S3_NOT_IMPLEMENTED,
				 "A header you provided implies functionality that is not "
				 "implemented (%s)",
				 refused[i]);
			return false;
		}
	return true;
}

/* Where the body goes: the object, or a part of a multipart upload. */
static bool target(struct s3_put *p)
{
	struct s3_req *r = p->r;
	const char *id = http_req_query(r->req, "uploadId");
	const char *pn = http_req_query(r->req, "partNumber");
	uint32_t n;

	if (!id) {
		p->path = s3_object_path(r->bucket, r->key);
		if (!p->path)
			s3_error(r, S3_INVALID_ARGUMENT,
				 "This gateway stores keys as file paths: a key may not be empty, "
				 "end in '/', hold \"//\" or have \".\" or \"..\" components, or "
				 "begin with \"" S3_UPLOADS_NAME "/\"");
		return p->path != NULL;
	}
	if (!pn || !parse_u32(pn, &n) || n < 1 || n > S3_PARTS_MAX) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 "Part number must be an integer between 1 and %d, inclusive",
			 S3_PARTS_MAX);
		return false;
	}
	p->path = s3_part_path(r, id, n);
	if (!p->path) {
		s3_error(r, S3_NO_SUCH_UPLOAD, "The specified upload does not exist.");
		return false;
	}
	p->upload_id = xstrdup(id);
	return true;
}

/* The chunk writer and the digests; false with r's error answer. */
static bool start_writer(struct s3_put *p, bool may_inline)
{
	struct s3_req *r = p->r;
	struct chunk_writer_opts wo = {0};
	wfs_err err;

	wo.chunk_size = r->g->chunk_size;
	wo.inline_max = may_inline ? r->g->inline_max : 0;
	if (!s3_cipher(r->g, &wo.encrypt, &err)) {
		s3_error(r, S3_SERVICE_UNAVAILABLE,
			 "the filer did not say whether it encrypts volume data");
		return false;
	}
	p->cw = chunk_writer_new(r->g->bc, &wo, &err);
	if (!p->cw) {
		s3_error(r, S3_INTERNAL, "could not start the upload: %s", wfs_strerror(err));
		return false;
	}
	md5_init(&p->md5);
	if (r->payload == SIGV4_PAYLOAD_HASH) {
		p->sha256 = EVP_MD_CTX_new();
		EVP_DigestInit_ex(p->sha256, sigv4_sha256_md(), NULL);
	}
	return true;
}

/*
 * The object's encryption: the request's headers decide, else the bucket's
 * default when its entry is cached; otherwise (and for a part, whose
 * upload decides) sse_pending: a worker reads it before the body streams.
 */
static bool sse_choose(struct s3_put *p)
{
	struct s3_req *r = p->r;
	struct filer_entry *b = NULL;
	bool ok;

	if (p->upload_id) {
		p->sse_pending = true;
		return true;
	}
	if (s3_sse_requested(r))
		return s3_sse_for_write(r, NULL, &p->sse);
	if (!s3_bucket_peek(p->g, r->bucket, &b)) {
		p->sse_pending = true;
		return true;
	}
	ok = s3_sse_for_write(r, b, &p->sse);
	filer_entry_free(b);
	return ok;
}

static bool prepare(struct s3_put *p)
{
	struct s3_req *r = p->r;
	enum s3_cksum trailer;

	if (!target(p) || !unsupported(r) || !s3_content_md5_valid(r) ||
	    !checksum_choice(p, &trailer) || !body_form(p, trailer))
		return false;
	/* a part takes no metadata or conditions (the upload has them) */
	if (!p->upload_id && (!s3_cond_read(r, &p->cond) || !s3_meta_from_request(r, &p->meta)))
		return false;
	if (p->upload_id)
		p->meta.e = filer_entry_new("/", "part");
	if (!sse_choose(p))
		return false;
	/* parts become chunks of the object: never inline */
	return start_writer(p, !p->upload_id);
}

/* ---- jobs (the gateway's pool) ---- */

static void pump(struct s3_put *p);

/*
 * PostObject: the encryption its x-amz-server-side-encryption* fields ask
 * for, else the bucket's default, read by the first job (a worker: the form's
 * fields came on the loop, which cannot wait for the filer). A refusal is r's
 * answer (p->answered).
 */
static wfs_err post_sse(struct s3_put *p)
{
	struct filer_entry *b = NULL;
	wfs_err rc;

	p->post_sse_read = true;
	rc = s3_bucket_lookup(p->g, p->r->bucket, &b);
	if (rc == WFS_ENOENT)
		return WFS_OK; /* the commit answers NoSuchBucket */
	p->r->post_form = p->form; /* the fields stand for the headers */
	if (!rc && !s3_sse_for_write(p->r, b, &p->sse)) {
		p->answered = true;
		rc = WFS_EINVAL;
	}
	p->r->post_form = NULL;
	filer_entry_free(b);
	return rc;
}

/* Hashes and stores n body bytes, in body order. */
static wfs_err store(struct s3_put *p, const void *data, size_t n)
{
	wfs_err rc;

	if (p->form && !p->post_sse_read && (rc = post_sse(p)))
		return rc;
	if (!n)
		return WFS_OK;
	md5_update(&p->md5, data, n);
	if (p->sha256)
		EVP_DigestUpdate(p->sha256, data, n);
	if (p->ck.alg)
		s3_cksum_update(&p->ck, data, n);
	if (p->sse) { /* data is p's own fill or wbuf: encrypted in place once hashed */
		s3_sse_crypt(p->sse, p->enc_off, (void *)data, n);
		p->enc_off += n;
	}
	return chunk_writer_write(p->cw, data, n);
}

static void job_done(http_req *req, void *arg)
{
	struct s3_put *p = arg;
	(void)req;
	p->inflight = false;
	if (p->job_err)
		put_fail(p, S3_SERVICE_UNAVAILABLE, "could not store the object: %s",
			 wfs_strerror(p->job_err));
	pump(p);
}

static void job_write(void *arg)
{
	struct s3_put *p = arg;
	p->job_err = store(p, p->wbuf.data, p->wbuf.len);
	buf_reset(&p->wbuf);
	http_req_defer(p->r->req, job_done, p);
}

static void respond(http_req *req, void *arg)
{
	struct s3_put *p = arg;
	(void)req;
	s3_send_answer(p->r);
	put_free(p);
}

/* The digests the request vouched for: false with r's error answer. */
static bool digests_ok(struct s3_put *p, char md5_hex[33], char cksum[S3_CKSUM_B64_SIZE])
{
	struct s3_req *r = p->r;
	unsigned char md5[MD5_SIZE], sha[EVP_MAX_MD_SIZE];
	const char *trailer;

	md5_final(&p->md5, md5);
	hex_encode(md5, 16, md5_hex);
	if (p->sha256) {
		EVP_DigestFinal_ex(p->sha256, sha, NULL);
		if (memcmp(sha, r->payload_sha256, 32)) {
			s3_error(r, S3_SHA256_MISMATCH,
				 "The provided 'x-amz-content-sha256' header "
				 "does not match what was computed.");
			return false;
		}
	}
	if (!s3_content_md5_matches(r, md5))
		return false;
	cksum[0] = '\0';
	if (p->ck.alg)
		s3_cksum_final_b64(&p->ck, cksum);
	else if (p->dec && (trailer = aws_chunked_checksum(p->dec)))
		snprintf(cksum, S3_CKSUM_B64_SIZE, "%s", trailer); /* checked by the decoder */
	if (p->ck_claim && strcmp(cksum, p->ck_claim)) {
		s3_error(r, S3_BAD_DIGEST,
			 "The %s you specified did not match the calculated checksum.",
			 s3_cksum_name(p->ck_alg));
		return false;
	}
	return true;
}

/* PostObject: the file's size against the policy's content-length-range. */
static bool size_in_range(struct s3_put *p)
{
	uint64_t size = chunk_writer_size(p->cw);
	if (size > p->len_max)
		s3_error(p->r, S3_ENTITY_TOO_LARGE,
			 "Your proposed upload exceeds the maximum allowed size");
	else if (size < p->len_min)
		s3_error(p->r, S3_ENTITY_TOO_SMALL,
			 "Your proposed upload is smaller than the minimum allowed size");
	return size >= p->len_min && size <= p->len_max;
}

/* The entry of the stored body into p->nw. */
static void entry_build(struct s3_put *p, const struct filer_chunk *chunks, size_t n)
{
	struct filer_meta_new *nw = &p->nw;
	const uint8_t *data;
	size_t len;

	memset(nw, 0, sizeof(*nw));
	nw->mode = S_IFREG | 0644;
	nw->time_ns = (int64_t)time_now_ns();
	s3_meta_stamp(&p->meta, nw->time_ns, p->md5_hex, p->ck_alg, p->cksum);
	nw->mime = p->meta.mime;
	nw->xattrs = p->meta.e->xattrs;
	nw->n_xattrs = p->meta.e->n_xattrs;
	if (chunk_writer_inline(p->cw, &data, &len)) {
		nw->has_content = true;
		nw->content = data;
		nw->content_len = len;
	} else {
		nw->chunks = chunks;
		nw->n_chunks = n;
	}
}

/* The answer of a committed object. */
static void answer_stored(struct s3_put *p)
{
	struct s3_req *r = p->r;
	char etag[36];

	r->status = 200;
	snprintf(etag, sizeof(etag), "\"%s\"", p->md5_hex);
	s3_header(r, "ETag", etag);
	if (p->form)
		s3_post_answer(r, p->form, etag);
	if (p->ck_alg) {
		s3_header(r, s3_cksum_header(p->ck_alg), p->cksum);
		if (!p->upload_id) /* a part's is the upload's */
			s3_header(r, "x-amz-checksum-type", "FULL_OBJECT");
	}
	s3_sse_headers(r, p->sse);
}

/*
 * A form's bucket policy (which may need a filer read), with its fields standing for the
 * headers: its ACL and tagging fields are judged and stored as PutObject's headers are.
 * False: r answered. Worker.
 */
static bool form_commit_ok(struct s3_put *p)
{
	struct s3_req *r = p->r;
	bool ok;

	if (!size_in_range(p))
		return false;
	r->post_form = p->form;
	ok = s3_authorize(r, r->bucket, r->key, "s3:PutObject", S3_ACT_WRITE) &&
	     s3_tagging_header(r, p->meta.e) && s3_acl_header(r, p->meta.e);
	r->post_form = NULL;
	return ok;
}

/* Commits the entry of the stored body: true when it is visible. */
static bool commit(struct s3_put *p, const struct filer_chunk *chunks, size_t n)
{
	struct s3_req *r = p->r;

	/* a form's identity was checked before its file (s3_form_authorize) */
	if (p->form && !form_commit_ok(p))
		return false;
	if (!digests_ok(p, p->md5_hex, p->cksum) || !s3_cond_check(r, p->path, &p->cond))
		return false;
	if (p->upload_id && !s3_upload_check(r, p->upload_id, NULL))
		return false;
	if (p->sse && !s3_sse_seal(r, p->sse, p->meta.e))
		return false;
	entry_build(p, chunks, n);
	if (p->upload_id) {
		/* a part replaces an earlier upload of the same number */
		wfs_err rc = filer_meta_create(r->g->filer, p->path, &p->nw, NULL);
		if (rc == WFS_ENOENT)
			s3_error(r, S3_NO_SUCH_UPLOAD, "The specified upload does not exist.");
		else if (rc)
			s3_filer_error(r, rc, "storing the part");
		if (rc)
			return false;
	} else if (s3_commit_object(r, p->path, &p->nw, &p->cond)) {
		return false;
	}
	answer_stored(p);
	return true;
}

static void job_commit(void *arg)
{
	struct s3_put *p = arg;
	struct s3_req *r = p->r;
	struct filer_chunk *chunks = NULL;
	size_t n = 0;
	wfs_err err = store(p, p->wbuf.data, p->wbuf.len);

	buf_reset(&p->wbuf);
	if (!err)
		err = chunk_writer_finish(p->cw, &chunks, &n);
	if (err) {
		if (!p->answered) /* else r holds post_sse's refusal */
			s3_error(r, S3_SERVICE_UNAVAILABLE, "could not store the object: %s",
				 wfs_strerror(err));
	} else if (!commit(p, chunks, n)) {
		s3_free_chunks(r->g, chunks, n); /* stored but not referenced */
	}
	filer_chunks_free(chunks, n);
	s3_cors_answer(r);
	http_req_defer(r->req, respond, p);
}

static void job_abort(void *arg)
{
	struct s3_put *p = arg;
	if (p->cw)
		chunk_writer_abort(p->cw); /* deletes what was uploaded */
	if (!p->answered)
		s3_error(p->r, p->err, "%s", p->msg);
	http_req_defer(p->r->req, respond, p);
}

/* ---- a small object's commit from the loop ---- */

/* The create the loop could not settle, on a worker: the whole commit path (a missing
 * parent directory made, the filer's retries). The create is a plain one, so a repeat
 * after one that may have been applied leaves the same object. */
static void job_create(void *arg)
{
	struct s3_put *p = arg;
	if (!s3_commit_object(p->r, p->path, &p->nw, &p->cond))
		answer_stored(p);
	http_req_defer(p->r->req, respond, p);
}

static void created(void *arg, wfs_err err, int status, const char *body, size_t len)
{
	struct s3_put *p = arg;
	wfs_err rc;

	if (err == WFS_EINTERNAL || atomic_load(&p->g->closing)) { /* the gateway is stopping */
		s3_req_free(p->r);
		put_free(p);
		return;
	}
	rc = err || status == 503 ? WFS_EUNAVAIL
	     : status / 100 == 2  ? WFS_OK
				  : filer_rpc_answer_err(status, body, len);
	/* a directory on the key's path ("a" beside "a/b") is the worker's too (s3_keypath.h) */
	if (rc == WFS_EUNAVAIL || rc == WFS_ENOENT || rc == WFS_ENOTDIR || rc == WFS_EEXIST ||
	    rc == WFS_EISDIR) {
		pool_submit(p->g->work, job_create, p);
		return;
	}
	if (rc)
		s3_commit_error(p->r, rc, &p->cond);
	else
		answer_stored(p);
	respond(p->r->req, p);
}

/*
 * The commonest PUT, a small object (kept inline in its entry) without
 * conditions in an unversioned bucket whose entry is cached, is committed by
 * one filer create sent from the loop (s3_loop.c's client): no worker hop, no
 * curl. Its body is all in fill: hashing and keeping it inline do no I/O.
 * False when the upload does not qualify (job_commit takes it); true once the
 * loop has it (p may be freed already).
 */
static bool commit_on_loop(struct s3_put *p)
{
	struct s3_req *r = p->r;
	struct filer_xattr *lock_x;
	struct filer_meta_new nw;
	struct filer_entry *b = NULL;
	struct filer_chunk *none;
	struct hlc *c;
	char *lock_v;
	char headers[128 + JWT_AUTH_HEADER_MAX] = "Content-Type: application/json\r\n";
	char auth[JWT_AUTH_HEADER_MAX];
	size_t hlen, nn;

	if (jwt_filer_auth("POST", "/.api/v1/create", auth)) /* filer signing */
		snprintf(headers + strlen(headers), sizeof(headers) - strlen(headers), "%s\r\n",
			 auth);
	hlen = strlen(headers);
	int64_t raw;
	wfs_err err;
	bool ok;
	buf body;

	if (p->form || p->upload_id || (p->sse && !s3_sse_write_ready(p->g, p->sse)) ||
	    p->cond.if_absent || p->cond.if_match || p->cond.if_none_match ||
	    p->fill.len > p->g->inline_max || chunk_writer_size(p->cw) ||
	    http_req_header(r->req, "Origin") || !(c = s3_loop_filer(r)) ||
	    !s3_bucket_peek(p->g, r->bucket, &b) || !b)
		return false;
	if (s3_versioning_in(b) != S3_UNVERSIONED) {
		filer_entry_free(b);
		return false;
	}
	err = store(p, p->fill.data, p->fill.len);
	buf_reset(&p->fill);
	if (!err)
		err = chunk_writer_finish(p->cw, &none, &nn); /* inline: no chunks */
	ok = !err && digests_ok(p, p->md5_hex, p->cksum);
	if (ok && p->sse) /* its key is at hand (s3_sse_write_ready): no I/O */
		ok = s3_sse_seal(r, p->sse, p->meta.e);
	if (err)
		s3_error(r, S3_INTERNAL, "could not store the object: %s", wfs_strerror(err));
	if (ok) {
		entry_build(p, NULL, 0);
		nw = p->nw; /* with the bucket's default retention, for this create only */
		ok = s3_lock_apply(r, b, &nw, &lock_x, &lock_v);
	}
	filer_entry_free(b);
	if (!ok) {
		respond(r->req, p);
		return true;
	}
	buf_init(&body);
	raw = filer_meta_create_body(&body, p->path, &nw, true);
	free(lock_x);
	free(lock_v);
	if (raw >= 0) /* the content follows the JSON */
		snprintf(headers + hlen, sizeof(headers) - hlen, "%s: %" PRId64 "\r\n",
			 API_RAW_CONTENT_HEADER, raw);
	p->inflight = true;
	hlc_request(c, "POST", "/.api/v1/create", headers, body.data, body.len, 1u << 20,
		    S3_FILER_TIMEOUT_MS, created, p);
	buf_free(&body);
	return true;
}

/* ---- the body (loop thread) ---- */

/* Hands fill to a job. Nothing in flight. */
static void submit(struct s3_put *p, pool_fn fn)
{
	buf t = p->wbuf;
	p->wbuf = p->fill;
	p->fill = t;
	buf_reset(&p->fill);
	p->inflight = true;
	pool_submit(p->r->g->work, fn, p);
}

/*
 * Moves the upload on after any change: a failure aborts the writer and
 * answers, a complete body commits, a full piece is written, a paused body
 * resumes. May free p: nothing touches it after.
 */
static void pump(struct s3_put *p)
{
	if (p->inflight)
		return;
	if (p->err) {
		p->inflight = true;
		pool_submit(p->r->g->work, job_abort, p);
		return;
	}
	if (p->body_done) {
		if (!commit_on_loop(p))
			submit(p, job_commit);
		return;
	}
	if (p->fill.len >= PIECE)
		submit(p, job_write);
	if (p->paused && p->fill.len < PIECE) {
		p->paused = false;
		http_req_resume_body(p->r->req);
	}
}

static enum s3_err decoded(void *ctx, const char *data, size_t len)
{
	struct s3_put *p = ctx;
	buf_append(&p->fill, data, len);
	return S3_OK;
}

static bool on_data(http_req *req, const char *data, size_t len, void *arg)
{
	struct s3_put *p = arg;
	(void)req;
	if (p->err)
		return false; /* failing: the answer ends the request */
	if (p->form) {
		enum s3_err e = s3_form_feed(p->form, data, len);
		if (e == S3_MAX_POST_PRE_DATA)
			put_fail(p, e,
				 "Your POST request fields preceeding the upload file were too "
				 "large.");
		else if (e)
			put_fail(p, e,
				 "The body of your POST request is not well-formed "
				 "multipart/form-data.");
	} else if (p->dec) {
		char msg[64];
		enum s3_err e = aws_chunked_feed(p->dec, data, len, decoded, p);
		if (e) {
			snprintf(msg, sizeof(msg), "%s", s3_err_code(e));
			put_fail(p, e, "The aws-chunked body is not valid (%s)", msg);
		}
	} else {
		buf_append(&p->fill, data, len);
	}
	if (p->err) {
		pump(p);
		return false;
	}
	if (p->fill.len >= PIECE && !p->inflight)
		submit(p, job_write);
	if (p->fill.len >= PIECE) {
		p->paused = true;
		return false;
	}
	return true;
}

static void on_end(http_req *req, wfs_err err, void *arg)
{
	struct s3_put *p = arg;
	enum s3_err e;
	(void)req;
	p->body_done = true;
	if (err == WFS_ETOOBIG)
		put_fail(p, S3_ENTITY_TOO_LARGE, "Your proposed upload exceeds the maximum size");
	else if (err)
		put_fail(p, S3_INCOMPLETE_BODY,
			 "You did not provide the number of bytes specified by the "
			 "Content-Length HTTP header");
	else if (p->dec && (e = aws_chunked_finish(p->dec)))
		put_fail(p, e, "The aws-chunked body is not valid (%s)", s3_err_code(e));
	else if (p->form && (e = s3_form_finish(p->form)))
		put_fail(p, e, "%s",
			 e == S3_INVALID_ARGUMENT
				 ? "POST requires exactly one file upload per request."
				 : "The body of your POST request is not well-formed "
				   "multipart/form-data.");
	pump(p);
}

/* The body may stream now: its memory is reserved. Loop thread. */
static void body_start(http_req *req, void *arg)
{
	struct s3_put *p = arg;
	int64_t n = http_req_content_length(req);
	/* the server holds the body to Content-Length (aws-chunked framing adds to the
	   payload); a chunked body's length shows as it comes, bound by the object's */
	uint64_t limit = n >= 0 ? (uint64_t)n : p->dec ? UINT64_MAX : S3_OBJECT_MAX;
	http_req_stream_body(req, limit, on_data, on_end, p);
}

/*
 * Reserves what the upload can hold at most (two pieces and the chunk
 * writer's buffers, or its length when smaller), then streams its body, now
 * or when earlier uploads have made room.
 */
static void reserve_then_stream(struct s3_put *p, int64_t payload)
{
	struct s3_gateway *g = p->g;
	uint64_t writer = (CHUNK_IN_FLIGHT_DEFAULT + 1) * g->chunk_size, n = writer + 2 * PIECE;
	if (payload >= 0)
		n = MIN((uint64_t)payload, writer) + MIN((uint64_t)payload, 2 * PIECE);
	p->reserved = n;
	if (s3_budget_take(g->upload_mem, p->r->req, n, body_start, p))
		body_start(p->r->req, p);
}

/* The encryption read on the worker is in: the body may come (or r answers). Loop thread. */
static void sse_known(http_req *req, void *arg)
{
	struct s3_put *p = arg;
	(void)req;
	if (p->r->status) {
		respond(req, p);
		return;
	}
	reserve_then_stream(p, p->r->decoded_length >= 0 ? p->r->decoded_length
							 : http_req_content_length(p->r->req));
}

/*
 * sse_pending: a PUT's bucket default encryption from the bucket's entry, or
 * a part's from its upload's directory (the part then gets its own IV and,
 * for SSE-C, the request must carry the upload's key). Worker.
 */
static void job_sse(void *arg)
{
	struct s3_put *p = arg;
	struct s3_req *r = p->r;
	struct filer_entry *e = NULL;
	wfs_err rc;

	if (!p->upload_id) {
		rc = s3_bucket_lookup(p->g, r->bucket, &e);
		if (rc && rc != WFS_ENOENT)
			s3_filer_error(r, rc, "reading the bucket's encryption");
		else
			(void)s3_sse_for_write(r, rc ? NULL : e, &p->sse);
	} else {
		if (s3_upload_check(r, p->upload_id, &e) &&
		    s3_sse_for_read(r, e, false, &p->sse) && p->sse &&
		    !s3_sse_fresh_iv(p->sse)) {
			s3_error(r, S3_INTERNAL, "no randomness for an IV");
		}
	}
	filer_entry_free(e);
	http_req_defer(r->req, sse_known, p);
}

/* PutObject and UploadPart: the target comes from the query. */
void s3_put_object(struct s3_req *r)
{
	struct s3_put *p = xcalloc(1, sizeof(*p));
	p->r = r;
	p->g = r->g;
	r->drop = put_drop;
	r->drop_state = p;
	if (!prepare(p)) {
		s3_send_answer(r);
		put_free(p);
		return;
	}
	if (p->sse_pending) {
		pool_submit(p->g->work, job_sse, p);
		return;
	}
	reserve_then_stream(p, r->decoded_length >= 0 ? r->decoded_length
						      : http_req_content_length(r->req));
}

/* ---- PostObject ---- */

/* The file part begins: the form's fields are all in. Loop thread. */
static bool post_start(void *ctx)
{
	struct s3_put *p = ctx;
	struct s3_req *r = p->r;
	char msg[300];
	enum s3_err e = s3_form_authorize(r, p->form, &p->len_min, &p->len_max, msg, sizeof(msg));

	if (e) {
		put_fail(p, e, "%s", msg);
		return false;
	}
	r->key = s3_form_key(p->form);
	if (!r->key) {
		put_fail(p, S3_INVALID_ARGUMENT, "Bucket POST must contain a field named 'key'.");
		return false;
	}
	if (!s3_key_ok(r) || !(p->path = s3_object_path(r->bucket, r->key))) {
		if (!r->status)
			s3_error(r, S3_INVALID_ARGUMENT, "The key cannot name a file here");
		p->answered = true;
		put_fail(p, S3_INVALID_ARGUMENT, "-");
		return false;
	}
	if (!s3_meta_from_pairs(r, &p->meta, s3_form_field_at, p->form) || !start_writer(p, true)) {
		p->answered = true;
		put_fail(p, S3_INVALID_ARGUMENT, "-");
		return false;
	}
	if (!p->meta.mime && s3_form_file_type(p->form))
		p->meta.mime = xstrdup(s3_form_file_type(p->form));
	return true;
}

static void post_file(void *ctx, const char *data, size_t len)
{
	struct s3_put *p = ctx;
	if (!p->err)
		buf_append(&p->fill, data, len);
}

void s3_post_object(struct s3_req *r)
{
	struct s3_put *p = xcalloc(1, sizeof(*p));
	int64_t len = http_req_content_length(r->req);

	p->r = r;
	p->g = r->g;
	r->drop = put_drop;
	r->drop_state = p;
	p->form = s3_form_new(http_req_header(r->req, "Content-Type"), post_start, post_file, p);
	if (!p->form)
		s3_error(r, S3_MALFORMED_POST,
			 "The body of your POST request is not well-formed multipart/form-data.");
	else if (len < 0)
		s3_error(r, S3_MISSING_CONTENT_LENGTH,
			 "You must provide the Content-Length HTTP header.");
	if (!p->form || len < 0) {
		s3_send_answer(r);
		put_free(p);
		return;
	}
	reserve_then_stream(p, len);
}
