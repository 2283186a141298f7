/*
 * Internals shared by the gateway's modules: the gateway, one request, and
 * the helpers that answer it (s3_server.c).
 */
#ifndef WEEDFS_S3_INT_H
#define WEEDFS_S3_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "buf.h"
#include "client/filer_rpc.h"
#include "http_server.h"
#include "pool.h"
#include "s3/checksum.h"
#include "s3/s3_err.h"
#include "s3/s3_iam.h"
#include "s3/sigv4.h"
#include "s3/xml.h"

/* S3's largest single PUT (larger objects are multipart uploads). */
#define S3_OBJECT_MAX (5ULL << 30)

/* The filer directory that holds the buckets. */
#define S3_BUCKETS_DIR "/buckets"

/* How long a call to the filer may take, from a worker or a loop. */
#define S3_FILER_TIMEOUT_MS 30000
/* InvalidAccessKeyId's message (header, query and form authentication). */
#define S3_MSG_UNKNOWN_KEY "The AWS Access Key Id you provided does not exist in our records."
/* An x-amz-checksum-algorithm S3 does not have (a printf format taking the name). */
#define S3_MSG_UNKNOWN_CKSUM_ALG "Checksum algorithm %.32s is not supported"

struct blob_client;
struct s3_bucket_cache;
struct s3_iam_store;
struct s3_logging;
struct s3_budget;
struct s3_session_auth;
struct s3_session_gw;
struct s3_sse;
struct s3_sse_keys;

/*
 * Whether chunks written now are sealed (the filer's -encryptVolumeData, asked
 * once it answers); false with WFS_EUNAVAIL in *err while the filer cannot say.
 * Blocks on the first call(s).
 */
struct s3_gateway;
bool s3_cipher(struct s3_gateway *g, bool *on, wfs_err *err);

struct s3_gateway {
	char *ip, *filer_addr;          /* -ip, -filer: for the status page */
	struct metrics_server *metrics; /* -metricsPort; NULL: none */
	struct s3_iam_store *iam_store; /* the identities (s3_iam_store.h) */
	http_server *iam_http;          /* -iam.port: the IAM API; NULL: none */
	int iam_port;
	filer_rpc *filer;
	struct blob_client *bc; /* object data: ids assigned through the filer, volume servers */
	pool *work;             /* filer calls and body jobs (they block) */
	uint64_t chunk_size;    /* bytes per uploaded chunk */
	size_t inline_max;      /* objects up to this size live in their filer entry */
	/* the filer's -encryptVolumeData, learnt from its configuration op: 0 not yet
	   known (asked again by the next upload), 1 plain, 2 seal every chunk */
	atomic_int cipher;
	http_server *http;
	char *region;
	char *domains; /* -domainName: virtual-hosted requests; NULL: path style only */
	int port;
	/* the lifecycle sweeper: every lifecycle_s seconds until stopping */
	int lifecycle_s;
	pthread_t sweeper;
	bool sweeper_started, stopping; /* stopping: protected by sweep_mu */
	pthread_mutex_t sweep_mu;
	pthread_cond_t sweep_cv;
	_Atomic uint64_t next_id;        /* request ids: a random start, then counting */
	struct s3_bucket_cache *buckets; /* bucket entries read lately (s3_bucket_cache.c) */
	struct s3_budget *upload_mem;    /* what uploads may hold at once (s3_budget.c) */
	atomic_bool closing;             /* s3_stop has begun: loops start no more work */
	pthread_mutex_t live_mu;
	struct s3_req *live; /* requests not answered yet (protected by live_mu) */
	struct s3_session_gw *sessions; /* session credentials (s3_session_gw.h) */
	struct s3_sse_keys *sse;        /* encryption keys (s3_sse.h) */
	struct s3_logging *logging;     /* access-log buffers and delivery (s3_logging.h) */
};

/* One request, from its head to its answer. */
struct s3_req {
	struct s3_gateway *g;
	http_req *req;
	char id[17];                   /* x-amz-request-id */
	char *bucket, *key;            /* decoded; NULL when the path names none */
	bool virtual_host;             /* the bucket came from the Host header */
	struct s3_iam *iam;            /* the identities when r arrived (a reference) */
	const struct s3_identity *who; /* in iam; NULL: anonymous or an open gateway */
	struct s3_session_auth *session; /* session credentials' (who: its parent); freed with r */
	bool sts;                        /* an STS call (s3_session_gw.h) */
	const char *form_sigver;         /* a browser POST's: "AWS" or "AWS4-HMAC-SHA256" */
	bool iam_call;                   /* an IAM API call (s3_iam_api.c) */
	const struct s3_form *post_form; /* PostObject: fields standing for headers (s3_req_field) */
	buf in;                        /* a small request body (bucket configuration) */
	/* what the signature says of the body: SIGV4_PAYLOAD_HASH checks payload_sha256 */
	int payload; /* enum sigv4_payload; -1 when unsigned */
	uint8_t payload_sha256[32];
	int64_t decoded_length;              /* x-amz-decoded-content-length, -1 when absent */
	char trailer[SIGV4_MAX_TRAILER + 1]; /* x-amz-trailer, "" when absent */
	struct sigv4_chunk_ctx *chain;       /* signed streaming: the chunk signature chain */
	int64_t head_length; /* HEAD answers: the Content-Length to announce; -1 none */
	uint64_t t0_ns;      /* when the request arrived (its access-log record) */
	int64_t log_sent;    /* the answer's body bytes, for the access log */
	/* the answer, built on a worker and sent on the loop */
	int status;
	buf body;
	const char *ctype;
	char **hnames, **hvalues;
	size_t nh, caph;
	void (*run)(struct s3_req *r);     /* on a worker */
	void (*on_loop)(struct s3_req *r); /* set by run: takes over the answer on the loop */
	struct chunk_stream *stream;       /* GetObject's bytes */
	struct s3_sse *sse;                /* GetObject: decrypts the pieces; freed with r */
	/* authorization on a bucket waits for the worker, where its policy is read */
	bool authorize;
	enum s3_action act; /* the grant the identity needs (without a policy's Allow) */
	void (*then)(struct s3_req *r); /* on the loop, once a body read whole is in */
	/* GetObject/HeadObject: the object's lookup, made from the loop (s3_loop.c) */
	bool looked_up;
	wfs_err lookup_rc;         /* WFS_OK (found set) or the filer's error */
	char *lookup_path;         /* the loop's lookup: the object's filer path; freed with r */
	struct filer_entry *found; /* freed with r */
	/* in g->live until freed: s3_stop frees what the stopped loops left half done,
	   with drop(drop_state) for a module's state that outlives r (an upload's) */
	struct s3_req *live_prev, *live_next;
	void (*drop)(void *state);
	void *drop_state;
};

/* Loop thread: runs fn(r) on a worker, then answers (CORS headers, r->on_loop). */
void s3_submit(struct s3_req *r, void (*fn)(struct s3_req *r));
/* Loop thread: sends r's answer and frees r. */
void s3_send_answer(struct s3_req *r);
/* Loop thread: adds x-amz-request-id and r's headers to the response (streamed answers). */
void s3_answer_headers(struct s3_req *r);
/* Frees r (its answer sent). */
void s3_req_free(struct s3_req *r);
/* Adds a response header (copied). */
void s3_header(struct s3_req *r, const char *name, const char *value);
/* Drops the response headers added so far. */
void s3_headers_clear(struct s3_req *r);
/* Sets a response header, replacing one of the same name (any case). */
void s3_header_replace(struct s3_req *r, const char *name, const char *value);
/* Sets an S3 error answer (XML body with Code, Message, Resource, RequestId). */
void s3_error(struct s3_req *r, enum s3_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Sets a 200 answer whose XML body w wrote into r->body (w freed). */
void s3_xml_ok(struct s3_req *r, xml_w *w);
/* ns since the epoch as S3 writes times in XML: 2006-02-03T16:45:09.000Z (out >= 32 bytes). */
void s3_iso8601(int64_t ns, char out[32]);
/* The filer path of the bucket (caller frees). */
char *s3_bucket_path(const char *bucket);
/* Sets r's answer to the filer's or the client library's error e (s3_err_of), naming what
   failed. */
void s3_filer_error(struct s3_req *r, wfs_err e, const char *what);

/* Bucket operations (s3_bucket.c), on a worker. */
void s3_list_buckets(struct s3_req *r);
void s3_create_bucket(struct s3_req *r);
void s3_delete_bucket(struct s3_req *r);
void s3_head_bucket(struct s3_req *r);
void s3_bucket_location(struct s3_req *r);
/* Makes the bucket's directory (and /buckets); WFS_OK or a filer error (WFS_EEXIST). Any
   thread. */
wfs_err s3_bucket_make(struct s3_gateway *g, const char *bucket);
/* The same with the directory's first xattrs (its configuration). */
struct filer_xattr;
wfs_err s3_bucket_make_with(struct s3_gateway *g, const char *bucket, const struct filer_xattr *x,
			    size_t nx);
/* Looks r's bucket up: true if it exists, else r holds the error answer. */
bool s3_bucket_exists(struct s3_req *r);
/* Whether name follows S3's bucket naming rules. */
bool s3_bucket_name_ok(const char *name);
/* The upload memory budget (s3_budget.c): any thread. */
struct s3_budget *s3_budget_new(uint64_t bytes);
void s3_budget_free(struct s3_budget *b);
/*
 * Reserves n bytes for the upload of req: true when taken now; false when it
 * must wait: go(req, arg) then runs on req's loop thread once they are taken.
 */
bool s3_budget_take(struct s3_budget *b, http_req *req, uint64_t n, http_defer_fn go, void *arg);
/* Returns n bytes taken; starts the waiting uploads they make room for. */
void s3_budget_give(struct s3_budget *b, uint64_t n);
/* The bytes reserved now. */
uint64_t s3_budget_used(struct s3_budget *b);

/* The bucket entry cache (s3_bucket_cache.c): any thread. */
struct s3_bucket_cache *s3_bucket_cache_new(void);
void s3_bucket_cache_free(struct s3_bucket_cache *c);
/*
 * r's bucket's directory entry (caller frees), read at most a second ago:
 * its xattrs hold the bucket's configuration. NULL with r's error answer
 * (NoSuchBucket, a filer error). Worker.
 */
struct filer_entry;
struct filer_entry *s3_bucket_entry(struct s3_req *r);
/* The cached entry of bucket, if the cache holds a fresh one (no filer request). */
bool s3_bucket_peek(struct s3_gateway *g, const char *bucket, struct filer_entry **out);
/* Only the xattr name of bucket's cached entry, appended to out (no copy of the entry):
   1 found, 0 the entry has none, -1 no fresh entry cached. Any thread. */
int s3_bucket_peek_xattr(struct s3_gateway *g, const char *bucket, const char *name, buf *out);
/* The same for any bucket: WFS_OK (*out set), WFS_ENOENT, or a filer error. Worker. */
wfs_err s3_bucket_lookup(struct s3_gateway *g, const char *bucket, struct filer_entry **out);
/* Drops what the cache holds of bucket (its configuration changed here). */
void s3_bucket_forget(struct s3_gateway *g, const char *bucket);
/*
 * A bucket configuration document (CORS, lifecycle) is one extended attribute
 * of the bucket's directory, set or removed atomically: 200 / 204,
 * NoSuchBucket, or a filer error naming what. Worker.
 */
void s3_bucket_config_set(struct s3_req *r, const char *xattr, const buf *doc, const char *what);
void s3_bucket_config_remove(struct s3_req *r, const char *xattr, const char *what);

/*
 * Whether r->in is the body the request vouches for: the signed
 * x-amz-content-sha256, Content-MD5 and any x-amz-checksum-* header; else r
 * holds the error answer (XAmzContentSHA256Mismatch, InvalidDigest, BadDigest).
 */
bool s3_body_ok(struct s3_req *r);
/* Whether a Content-MD5 header, if any, is well-formed; else r holds InvalidDigest. */
bool s3_content_md5_valid(struct s3_req *r);
/* Whether md5 matches the Content-MD5 header, if any; else r holds BadDigest/InvalidDigest. */
bool s3_content_md5_matches(struct s3_req *r, const unsigned char md5[16]);

/* GetObject and HeadObject (s3_get.c), on a worker; on the loop once r->looked_up holds a
 * regular file's entry and the answer needs no stream (inline bytes, or HEAD). */
void s3_get_object(struct s3_req *r);
void s3_head_object(struct s3_req *r);
/*
 * Loop thread: answers GetObject or HeadObject (by the method) through an
 * asynchronous lookup (s3_loop.c), on the loop when it can, else on a worker;
 * false when the request does not qualify (the caller submits it).
 */
bool s3_read_on_loop(struct s3_req *r);
/* The filer client of r's loop (s3_loop.c), made on first use; NULL if its address does
 * not resolve. Loop thread. */
struct hlc;
struct hlc *s3_loop_filer(struct s3_req *r);
/* http_server_opts.loop_data_free: the loop's filer connections. */
void s3_loop_data_free(void *data, void *ctx);
/* GetObjectAttributes (GET ?attributes), on a worker. */
void s3_get_object_attributes(struct s3_req *r);
/* Whether a query parameter is one of GetObject's response-* header overrides. */
bool s3_is_response_override(const char *param);

/* Object operations without a data path (s3_object.c), on a worker. */
void s3_delete_object(struct s3_req *r);
/* DeleteObjects, its body in r->in (checked). */
void s3_delete_objects(struct s3_req *r);
/* Whether r's key is short enough (else r holds KeyTooLongError). Any thread. */
bool s3_key_ok(struct s3_req *r);
/* The filer path of key in bucket, or NULL when the key cannot name one (caller frees). */
char *s3_object_path(const char *bucket, const char *key);
/*
 * After the lookup of an object's path (rc, *e): when it found a directory,
 * the object that directory holds as S3_KEYPATH_SELF (key "a" beside "a/b"),
 * *path then its path; else rc unchanged. Worker.
 */
wfs_err s3_object_inside(struct s3_gateway *g, char **path, struct filer_entry **e, wfs_err rc);
/* filer_meta_lookup_etag of an object's path, looking inside a directory found there as
   s3_object_inside does (the entry and etag are the object's). Worker. */
wfs_err s3_object_lookup_etag(struct s3_gateway *g, const char *path, struct filer_entry **e,
			      char etag[17]);
/*
 * After the delete of the object at path (a bucket's file; path is cut in
 * place): its parent directories that are now empty go too, up to the bucket,
 * since in S3 a prefix exists only while keys under it do. The first that is
 * not empty (or any failure) ends it; a PUT racing into one makes it anew.
 */
void s3_drop_empty_parents(struct s3_gateway *g, const char *bucket, char *path);
/* Whether etag (quoted) is in the If-Match / If-None-Match list v ("*" matches any). */
bool s3_etag_listed(const char *v, const char *etag);

/* PutObject (s3_put.c): streams the body to the volume servers. Loop thread. */
void s3_put_object(struct s3_req *r);
/* PostObject (s3_put.c, s3_post.c): a browser's multipart/form-data upload. Loop thread. */
void s3_post_object(struct s3_req *r);
struct s3_form;
struct s3_form *s3_form_new(const char *content_type, bool (*on_start)(void *ctx),
			    void (*on_file)(void *ctx, const char *data, size_t len), void *ctx);
void s3_form_free(struct s3_form *f);
/* Feeds body bytes: S3_OK, S3_MAX_POST_PRE_DATA or S3_MALFORMED_POST. */
enum s3_err s3_form_feed(struct s3_form *f, const char *data, size_t len);
/* The body ended: S3_OK, S3_MALFORMED_POST, or S3_INVALID_ARGUMENT (no file part). */
enum s3_err s3_form_finish(struct s3_form *f);
/* The value of the field name read before the file (any case), or NULL. */
const char *s3_form_get(const struct s3_form *f, const char *name);
/* Iterates the fields read before the file (s3_meta_from_pairs's iterator). */
bool s3_form_field_at(const void *src, size_t i, const char **name, const char **value);
const char *s3_form_file_type(const struct s3_form *f);
/* Header name of r, or, while r->post_form is set, the form's field that stands for it
   (x-amz-acl: the "acl" field). Borrowed from r. Any thread. */
const char *s3_req_field(const struct s3_req *r, const char *name);
/* The object key: the "key" field with ${filename} replaced; NULL when missing. */
char *s3_form_key(const struct s3_form *f);
/* The signature and the policy of the form: S3_OK (r->who set), or an error with msg. */
enum s3_err s3_form_authorize(struct s3_req *r, const struct s3_form *f, uint64_t *len_min,
			      uint64_t *len_max, char *msg, size_t msglen);
/* A stored POST's answer: success_action_redirect or success_action_status. */
void s3_post_answer(struct s3_req *r, const struct s3_form *f, const char *etag);

/* Multipart uploads (s3_multipart.c): parts are files of /buckets/<b>/.uploads/<id>/. */
#define S3_UPLOADS_NAME ".uploads"
#define S3_PARTS_MAX    10000
/* The path of part n of upload id in r's bucket; NULL when id is malformed. */
char *s3_part_path(const struct s3_req *r, const char *id, uint32_t n);
/*
 * Whether upload id exists for r's key (else r holds NoSuchUpload); *dir (may
 * be NULL) its entry. For UploadPart also whether the part carries the
 * upload's checksum algorithm (else InvalidRequest); UploadPartCopy computes it.
 */
struct filer_entry;
bool s3_upload_check(struct s3_req *r, const char *id, struct filer_entry **dir);
/* The checksum algorithm an upload (its directory, from s3_upload_check) was created with. */
enum s3_cksum s3_upload_checksum(const struct filer_entry *dir);
void s3_create_multipart(struct s3_req *r);   /* POST ?uploads, worker */
void s3_complete_multipart(struct s3_req *r); /* POST ?uploadId, body in r->in, worker */
void s3_abort_multipart(struct s3_req *r);    /* DELETE ?uploadId, worker */
void s3_list_parts(struct s3_req *r);         /* GET ?uploadId, worker */
void s3_list_uploads(struct s3_req *r);       /* GET /bucket?uploads, worker */

/* Tagging (s3_tagging.c): ?tagging on an object or a bucket, body in r->in; worker. */
void s3_put_tagging(struct s3_req *r);
void s3_get_tagging(struct s3_req *r);
void s3_delete_tagging(struct s3_req *r);
/* x-amz-tagging of a write (a POST form's tagging field while r->post_form is set) into
   entry into's xattrs; false with r's error answer. */
bool s3_tagging_header(struct s3_req *r, struct filer_entry *into);
/* The number of tags stored on e. */
size_t s3_tag_count(const struct filer_entry *e);
/* Whether e carries tag k with value v. */
bool s3_tags_have(const struct filer_entry *e, const char *k, const char *v);
/*
 * Each tag of a set, for the bucket policy's condition keys (s3_policy.c):
 * fn(arg, key, value) for the tags write r gives its object (s3_tagging_header's),
 * the tags stored on e, a PutObjectTagging body. A set the write would refuse has none.
 */
typedef void (*s3_tag_fn)(void *arg, const char *k, const char *v);
void s3_tags_each_write(const struct s3_req *r, s3_tag_fn fn, void *arg);
void s3_tags_each_entry(const struct filer_entry *e, s3_tag_fn fn, void *arg);
void s3_tags_each_body(const buf *in, s3_tag_fn fn, void *arg);

/* Lifecycle (s3_lifecycle.c): ?lifecycle of a bucket (body in r->in), on a worker. */
void s3_put_lifecycle(struct s3_req *r);
void s3_get_lifecycle(struct s3_req *r);
void s3_delete_lifecycle(struct s3_req *r);
/* One pass of expiration over every bucket with rules. Blocks; any thread but a loop. */
void s3_lifecycle_sweep(struct s3_gateway *g);

/* CORS (s3_cors.c), on a worker: ?cors of a bucket (body in r->in), the OPTIONS
   preflight, and the CORS headers added to any answer to a request with Origin. */
void s3_put_cors(struct s3_req *r);
void s3_get_cors(struct s3_req *r);
void s3_delete_cors(struct s3_req *r);
void s3_cors_preflight(struct s3_req *r);
void s3_cors_answer(struct s3_req *r);

/* CopyObject and UploadPartCopy (s3_copy.c), on a worker. */
void s3_copy_object(struct s3_req *r);

/* Conditional writes (s3_commit.c): If-None-Match (* or ETags) and If-Match. */
struct s3_cond {
	bool if_absent;
	char *if_match;      /* the ETag list; NULL: none */
	char *if_none_match; /* an ETag list (not *: that is if_absent); NULL: none */
	bool none_there;     /* If-None-Match with ETags: the check found no object */
	char filer_etag[17]; /* the entry version the check read ("" when none) */
};
/* Reads r's conditional headers into c; false with r's error answer. Any thread. */
bool s3_cond_read(struct s3_req *r, struct s3_cond *c);
void s3_cond_free(struct s3_cond *c);
/* Whether cur (the object now; NULL: none) meets c (may be NULL); else r answered. */
struct filer_entry;
bool s3_cond_holds(struct s3_req *r, const struct filer_entry *cur, const struct s3_cond *c);
/* If-Match, If-None-Match with ETags: whether the object at path meets them (else r
   answered), remembering the version read for the commit. Worker. */
bool s3_cond_check(struct s3_req *r, const char *path, struct s3_cond *c);
/*
 * Creates the object entry nw at path under c's conditions (c may be NULL),
 * making missing parent directories when the bucket exists. WFS_OK, or the
 * error with r's answer set (a failed condition, the filer's WFS_EPRECOND
 * included, is PreconditionFailed). Worker.
 */
struct filer_meta_new;
wfs_err s3_commit_object(struct s3_req *r, const char *path, struct filer_meta_new *nw,
			 const struct s3_cond *c);
/* Frees chunks that were stored but are referenced by no entry (their leases end). Worker. */
struct filer_chunk;
void s3_free_chunks(struct s3_gateway *g, const struct filer_chunk *c, size_t n);

/* Maps a refused create of the object (the filer's error) to r's answer: WFS_EPRECOND, or
   WFS_EEXIST under If-None-Match: *, is PreconditionFailed; under If-None-Match with
   ETags a racing writer's change is ConditionalRequestConflict. */
void s3_commit_error(struct s3_req *r, wfs_err rc, const struct s3_cond *c);

/* Bucket policies (s3_policy.c): ?policy of a bucket (PUT body in r->in), on a worker. */
void s3_put_policy(struct s3_req *r);
void s3_get_policy(struct s3_req *r);
void s3_delete_policy(struct s3_req *r);
void s3_get_policy_status(struct s3_req *r); /* GET ?policyStatus: IsPublic */
/* The policy action r performs ("s3:GetObject"). Any thread. */
const char *s3_policy_action(const struct s3_req *r);
/*
 * Whether r may perform action on key (NULL: the bucket itself) of bucket:
 * the bucket policy's Deny wins, its Allow or the identity's grant act lets
 * it through. s3_authorize sets r's AccessDenied answer when not. Worker.
 */
bool s3_permitted(struct s3_req *r, const char *bucket, const char *key, const char *action,
		  enum s3_action act);
bool s3_authorize(struct s3_req *r, const char *bucket, const char *key, const char *action,
		  enum s3_action act);
/*
 * A request judged key by key (DeleteObjects): true for any identity (its
 * denied keys are per-key errors, as in S3); for an anonymous request, false
 * with r's AccessDenied (NoSuchBucket) when neither a bucket policy nor an
 * ACL could allow any key.
 */
bool s3_authorize_keys(struct s3_req *r);
/*
 * The gateway's own work done as an AWS service (service: POLICY_SERVICE_LOGGING
 * for access-log delivery, bucket_policy.h): whether the policy of bucket
 * allows it action ("s3:PutObject") on key. Only an Allow of a statement whose
 * Principal is "*" or {"Service": service} does; no policy, a Deny or no match
 * refuses. The request carries aws:SourceArn (arn:aws:s3:::<source_bucket>,
 * the bucket whose log it is; NULL: none), aws:SourceAccount "000000000000"
 * (the gateway's one account), aws:PrincipalServiceName and the time keys.
 * Worker (a filer read).
 */
bool s3_service_permitted(struct s3_gateway *g, const char *service, const char *source_bucket,
			  const char *bucket, const char *key, const char *action);
/*
 * s3_authorize of r's own operation when its bucket's entry is cached: 1
 * allowed, 0 denied (r answered), -1 not cached (authorize on a worker).
 * Any thread (the loop: no filer request).
 */
int s3_authorize_cached(struct s3_req *r, enum s3_action act);

/* The bucket directory's xattr holding its policy (s3_policy.c). */
#define S3_XATTR_POLICY "s3.policy"

/* Owners, ACLs, Object Ownership, Public Access Block (s3_acl.c). */
#define S3_XATTR_ACL "s3.acl"
enum s3_ownership { S3_OWN_NONE, S3_OWN_ENFORCED, S3_OWN_PREFERRED, S3_OWN_WRITER };
enum s3_pab { S3_PAB_BLOCK_ACLS, S3_PAB_IGNORE_ACLS, S3_PAB_BLOCK_POLICY, S3_PAB_RESTRICT };
/* The Object Ownership rule of bucket entry b (NONE: none set). Any thread. */
enum s3_ownership s3_bucket_ownership(const struct filer_entry *b);
/* Whether b's Public Access Block has flag f on. Any thread. */
bool s3_pab_flag(const struct filer_entry *b, enum s3_pab f);
/* Whether r's identity is the recorded owner of bucket entry b. Any thread. */
bool s3_owns_bucket(const struct s3_req *r, const struct filer_entry *b);
/*
 * Whether ownership or an ACL lets r perform action on key (NULL: the bucket)
 * of bucket (its entry b): 1 yes, 0 no, -1 the object's ACL must be read and
 * may_block is false (the loop: decide on a worker).
 */
int s3_acl_decide(struct s3_req *r, const struct filer_entry *b, const char *bucket,
		  const char *key, const char *action, bool may_block);
/* Whether bucket entry b's ACL grants the LogDelivery group WRITE (legacy log delivery). */
bool s3_acl_log_delivery_writes(const struct filer_entry *b);
/* Whether ListBuckets shows b to r for its ownership or an ACL grant. */
bool s3_acl_lists_bucket(const struct s3_req *r, const struct filer_entry *b);
/* Whether the ACL headers of a write (a POST form's fields while r->post_form is set), if
   any, may be set in bucket b; else r answered. */
bool s3_acl_write_ok(struct s3_req *r, const struct filer_entry *b);
/* The ACL headers of a write (a POST form's fields while r->post_form is set; the writer
   owning the object) into into's xattrs; false with r's error answer. */
bool s3_acl_header(struct s3_req *r, struct filer_entry *into);
/* CreateBucket's owner, Object Ownership and ACL into into's xattrs; false with r's answer. */
bool s3_bucket_create_xattrs(struct s3_req *r, struct filer_entry *into);
/* Whose an existing bucket (entry b) is, as CreateBucket tells it to r. */
enum s3_bucket_claim { S3_CLAIM_MINE, S3_CLAIM_OTHERS };
enum s3_bucket_claim s3_bucket_claim(const struct s3_req *r, const struct filer_entry *b);
/* ?acl of a bucket or an object (PUT: headers or body in r->in), ?ownershipControls and
   ?publicAccessBlock of a bucket; on a worker. */
void s3_get_acl(struct s3_req *r);
void s3_put_acl(struct s3_req *r);
void s3_put_ownership(struct s3_req *r);
void s3_get_ownership(struct s3_req *r);
void s3_delete_ownership(struct s3_req *r);
void s3_put_pab(struct s3_req *r);
void s3_get_pab(struct s3_req *r);
void s3_delete_pab(struct s3_req *r);

/* What r's identity's inline policies say of action on bucket/key (NULL key: the bucket;
   NULL bucket: no resource, "*"). Any thread, but when they name s3:ExistingObjectTag a
   key's stored tags are read from the filer: a worker then (s3_authorize_cached leaves
   such requests to one). */
enum policy_effect s3_identity_says(struct s3_req *r, const char *bucket, const char *key,
				    const char *action);

/* Writes a key-like element, URL-encoded when url (encoding-type=url). */
void s3_xml_key(xml_w *w, bool url, const char *name, const char *v);

/* ListObjects and ListObjectsV2 (s3_list.c), on a worker. */
void s3_list_objects(struct s3_req *r);
/* What s3_walk_keys found, in key order. */
struct s3_walk_item {
	char *key; /* a key, or a common prefix */
	bool is_prefix;
	struct filer_entry *e; /* a key's file (NULL in the .versions tree) */
};
struct s3_walk_items {
	struct s3_walk_item **v;
	size_t n;
	bool more; /* stopped at max with more to come */
};
/*
 * The first max keys and common prefixes after `after` of the tree at root
 * (a bucket, or its .versions tree: versions_tree), as ListObjects finds
 * them: WFS_OK or a filer error. Worker.
 */
wfs_err s3_walk_keys(struct s3_req *r, const char *root, bool versions_tree, const char *prefix,
		     const char *delim, const char *after, size_t max, struct s3_walk_items *out);
void s3_walk_items_free(struct s3_walk_items *out);

/*
 * Versioning (s3_version.c): the current version is the plain file, older
 * ones and delete markers are files of /buckets/<b>/.versions/<key>/.
 */
#define S3_VERSIONS_NAME   ".versions"
#define S3_VERSION_ID_SIZE 25 /* 24 hex digits and a NUL */
enum s3_versioning { S3_UNVERSIONED, S3_VERSIONING_ENABLED, S3_VERSIONING_SUSPENDED };
/* The state a bucket's directory entry records. */
enum s3_versioning s3_versioning_in(const struct filer_entry *bucket);
/* r's bucket's state (cached: s3_bucket_entry); false with r's error answer. Worker. */
bool s3_versioning_of(struct s3_req *r, enum s3_versioning *v);
void s3_put_versioning(struct s3_req *r); /* PUT ?versioning, body in r->in; worker */
void s3_get_versioning(struct s3_req *r); /* GET ?versioning; worker */
/* Whether id is "null" or one this gateway makes (any thread). */
bool s3_version_id_ok(const char *id);
/* e's version id: its s3.version-id, else "null". */
void s3_version_of(const struct filer_entry *e, char out[S3_VERSION_ID_SIZE]);
bool s3_is_delete_marker(const struct filer_entry *e);
/* /buckets/<bucket>/.versions/<key> (caller frees). */
char *s3_versions_dir(const char *bucket, const char *key);
/*
 * A create at path was refused with WFS_ENOTDIR (rc): a prefix of the key is an
 * object ("a" when "a/b" is written). In the create's transaction that file
 * moves into the directory it becomes ("a/.s3~object"), so GET a never
 * misses it (nw carries no moves of its own: path is absent). A racing
 * change of it (its etag), or a racing writer that moved it first (it is a
 * directory now), makes it try again, a few times (s3_commit.c). Worker.
 */
wfs_err s3_commit_below(struct s3_req *r, const char *path, struct filer_meta_new *nw, wfs_err rc);
/* s3_commit_object in a bucket with versioning (v not UNVERSIONED). */
wfs_err s3_commit_versioned(struct s3_req *r, const char *path, struct filer_meta_new *nw,
			    const struct s3_cond *c, enum s3_versioning v);
/* The file holding version id of key: WFS_OK, WFS_ENOENT, or a filer error. Worker. */
wfs_err s3_version_read(struct s3_gateway *g, const char *bucket, const char *key, const char *id,
			struct filer_entry **out);
/*
 * The version of r's key that r's ?versionId names (else the current one)
 * and its file's path (caller frees both); NULL with r's answer: bad id
 * (InvalidArgument), NoSuchVersion, NoSuchKey, a delete marker
 * (MethodNotAllowed). Worker.
 */
struct filer_entry *s3_version_target(struct s3_req *r, char **path);
/* x-amz-version-id (real ids, or any asked for) and x-amz-delete-marker of e, on r's answer. */
void s3_version_headers(struct s3_req *r, const struct filer_entry *e);
/* A key found missing: when its latest version is a delete marker, say so in r's headers. */
void s3_version_missing(struct s3_req *r);
/* What a versioned delete did. */
struct s3_deleted {
	char version_id[S3_VERSION_ID_SIZE]; /* the marker made, or the version deleted */
	bool marker;                         /* a marker was made, or the deleted one was one */
};
/*
 * DELETE of key (id NULL: the current version) in a bucket with versioning:
 * WFS_OK, WFS_EACCES (Object Lock keeps the version), WFS_EBUSY (other
 * writers kept changing the key), or a filer error; r's answer is left alone,
 * and only r->g and r->bucket are used (the lifecycle sweeper passes a
 * request of its own). if_etag (an If-Match delete of the current version:
 * the filer etag its check read; NULL: none): the marker only over that
 * version, WFS_EPRECOND when another writer came between. Worker.
 */
wfs_err s3_delete_versioned(struct s3_req *r, const char *key, const char *id, enum s3_versioning v,
			    const char *if_etag, struct s3_deleted *out);
/* ListObjectVersions (GET /bucket?versions), on a worker. */
void s3_list_versions(struct s3_req *r);

/* Object Lock (s3_lock.c): bucket ?object-lock, object ?retention and ?legal-hold (PUT
   bodies in r->in); on a worker. */
void s3_get_lock_config(struct s3_req *r);
void s3_put_lock_config(struct s3_req *r);
void s3_get_retention(struct s3_req *r);
void s3_put_retention(struct s3_req *r);
void s3_get_legal_hold(struct s3_req *r);
void s3_put_legal_hold(struct s3_req *r);
/* Whether the bucket (its directory entry) has Object Lock. */
bool s3_lock_enabled(const struct filer_entry *bucket);
/* The xattrs (out[0..2)) of a bucket made with Object Lock (and versioning) on: 2. */
size_t s3_lock_bucket_xattrs(struct filer_xattr *out);
/* A write's x-amz-object-lock-* headers into into's xattrs; false with r's answer. */
bool s3_lock_header(struct s3_req *r, struct filer_entry *into);
/* Copies the lock xattrs of from (a multipart upload) to into. */
void s3_lock_inherit(struct filer_entry *into, const struct filer_entry *from);
/*
 * The lock of a new version nw in bucket: refused (false, r answered) when the
 * write asks for one the bucket lacks Object Lock for; the bucket's default
 * retention added when the write names none (nw->xattrs then points at
 * *scratch, its values in *values: the caller frees both).
 */
bool s3_lock_apply(struct s3_req *r, const struct filer_entry *bucket, struct filer_meta_new *nw,
		   struct filer_xattr **scratch, char **values);
/* Whether e (a version of key) may not be deleted now. */
bool s3_lock_forbids_delete(struct s3_req *r, const char *key, const struct filer_entry *e);
/* e's lock in GET/HEAD answer headers. */
void s3_lock_headers(struct s3_req *r, const struct filer_entry *e);

/* The IAM API (s3_iam_api.c): the call in r->in, authenticated for service "iam"; worker. */
void s3_iam_api(struct s3_req *r);
/* Loop thread: r's authentication failed; its S3 error answer becomes IAM's form. */
void s3_iam_auth_failed(struct s3_req *r);

/* Metrics (s3_metrics.c): the request's S3 operation name (a literal), and -metricsPort. */
const char *s3_op_name(struct s3_req *r);
bool s3_metrics_start(struct s3_gateway *g, int port, wfs_err *err);

#endif
