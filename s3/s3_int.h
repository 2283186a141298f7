/*
 * Internals shared by the gateway's modules: the gateway, one request, and
 * the helpers that answer it (s3_server.c).
 */
#ifndef WEEDFS_S3_INT_H
#define WEEDFS_S3_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include "buf.h"
#include "client/filer_rpc.h"
#include "http_server.h"
#include "pool.h"
#include "s3/s3_err.h"
#include "s3/s3_iam.h"
#include "s3/xml.h"

/* The filer directory that holds the buckets. */
#define S3_BUCKETS_DIR "/buckets"

struct s3_gateway {
	struct s3_iam *iam;
	filer_rpc *filer;
	pool *work; /* filer calls (they block) */
	http_server *http;
	char *region;
	int port;
	_Atomic uint64_t next_id; /* request ids: a random start, then counting */
};

/* One request, from its head to its answer. */
struct s3_req {
	struct s3_gateway *g;
	http_req *req;
	char id[17];                   /* x-amz-request-id */
	char *bucket, *key;            /* decoded; NULL when the path names none */
	const struct s3_identity *who; /* NULL: anonymous or an open gateway */
	buf in;                        /* a small request body (bucket configuration) */
	/* what the signature says of the body: SIGV4_PAYLOAD_HASH checks payload_sha256 */
	int payload; /* enum sigv4_payload; -1 when unsigned */
	uint8_t payload_sha256[32];
	int64_t head_length; /* HEAD answers: the Content-Length to announce; -1 none */
	/* the answer, built on a worker and sent on the loop */
	int status;
	buf body;
	const char *ctype;
	char *hnames[8], *hvalues[8];
	size_t nh;
	void (*run)(struct s3_req *r);  /* on a worker */
	void (*then)(struct s3_req *r); /* on the loop, once a body read whole is in */
};

/* Adds a response header (copied). */
void s3_header(struct s3_req *r, const char *name, const char *value);
/* Sets an S3 error answer (XML body with Code, Message, Resource, RequestId). */
void s3_error(struct s3_req *r, enum s3_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Sets a 200 answer whose XML body w wrote into r->body (w freed). */
void s3_xml_ok(struct s3_req *r, xml_w *w);
/* The filer path of the bucket (caller frees). */
char *s3_bucket_path(const char *bucket);
/* Maps a filer errno (filer_rpc.h) to an answer, naming what failed. */
void s3_filer_error(struct s3_req *r, int e, const char *what);

/* Bucket operations (s3_bucket.c), on a worker. */
void s3_list_buckets(struct s3_req *r);
void s3_create_bucket(struct s3_req *r);
void s3_delete_bucket(struct s3_req *r);
void s3_head_bucket(struct s3_req *r);
void s3_bucket_location(struct s3_req *r);
/* Makes the bucket's directory (and /buckets); 0 or a filer errno (EEXIST). Any thread. */
int s3_bucket_make(struct s3_gateway *g, const char *bucket);
/* Looks r's bucket up: true if it exists, else r holds the error answer. */
bool s3_bucket_exists(struct s3_req *r);
/* Whether name follows S3's bucket naming rules. */
bool s3_bucket_name_ok(const char *name);

/*
 * Whether r->in is the body the request vouches for: the signed
 * x-amz-content-sha256, Content-MD5 and any x-amz-checksum-* header; else r
 * holds the error answer (XAmzContentSHA256Mismatch, InvalidDigest, BadDigest).
 */
bool s3_body_ok(struct s3_req *r);

/* Object operations without a data path (s3_object.c), on a worker. */
void s3_head_object(struct s3_req *r);
void s3_delete_object(struct s3_req *r);
/* DeleteObjects, its body in r->in (checked). */
void s3_delete_objects(struct s3_req *r);
/* Whether r's key is short enough (else r holds KeyTooLongError). Any thread. */
bool s3_key_ok(struct s3_req *r);

/* ListObjects and ListObjectsV2 (s3_list.c), on a worker. */
void s3_list_objects(struct s3_req *r);
/*
 * The object's ETag, quoted: the one stored when S3 wrote it, else derived
 * from its metadata (stable until the object changes).
 */
#define S3_ETAG_MAX 72
struct filer_entry;
void s3_etag(const struct filer_entry *e, char out[S3_ETAG_MAX]);

#endif
