/*
 * Bucket logging (S3 server access logs): the ?logging configuration of a
 * bucket, the record each request on a logged bucket leaves, and their
 * delivery as objects of the target bucket.
 *
 * DESIGN: the configuration is one xattr of the source bucket's directory
 * (S3_XATTR_LOGGING) in a line form the request path reads without an XML
 * parse: "<target>\n<prefix>\n<S|PE|PD>\n<owner>\n<TargetGrants XML>". It is
 * read through the bucket entry cache, so a request costs no filer call to
 * learn whether its bucket is logged. The record is formatted when the
 * answer is sent (s3_logging_note, loop thread) and appended to the buffer
 * of its target under one short lock; a thread of the gateway writes each
 * buffer as one object through the gateway's object commit path
 * (s3_commit_object: versioning, Object Lock defaults and parent directories
 * as for any PUT) every flush interval, when a buffer grows past
 * S3_LOG_FLUSH_BYTES, and when the gateway stops. Those writes are no
 * requests, so they leave no record. Delivery is best effort, as S3's: a
 * buffer the cluster could not take (unavailable, timed out) is tried again
 * at the next passes, DELIVERY_TRIES in all; one refused, or still failing,
 * is dropped with a warning.
 */
#ifndef WEEDFS_S3_LOGGING_H
#define WEEDFS_S3_LOGGING_H

#include <stdbool.h>
#include <stdint.h>
#include "buf.h"
#include "s3/s3_err.h"
#include "s3/xml.h"

/* The xattr of the source bucket's directory that holds its logging configuration. */
#define S3_XATTR_LOGGING "s3.logging"
/* A buffer this large is delivered without waiting for the interval. */
#define S3_LOG_FLUSH_BYTES (1u << 20)

/* TargetObjectKeyFormat. */
enum s3_log_keys {
	S3_LOG_KEYS_SIMPLE,        /* <prefix>YYYY-mm-DD-HH-MM-SS-<unique> */
	S3_LOG_KEYS_EVENT_TIME,    /* partitioned, dated by the first record's time */
	S3_LOG_KEYS_DELIVERY_TIME, /* partitioned, dated by the delivery */
};

/* A bucket's BucketLoggingStatus. */
struct s3_logging_config {
	char *target_bucket; /* NULL: logging is off */
	char *target_prefix; /* "" when empty */
	enum s3_log_keys keys;
	char *owner;  /* the identity that configured it (the records' bucket owner) */
	char *grants; /* TargetGrants as this module writes it; NULL: none */
};

/*
 * Parses a PutBucketLogging body (data[0..len), borrowed) into c (free with
 * s3_logging_config_free): S3_OK, S3_MALFORMED_XML (not well formed, not a
 * BucketLoggingStatus, a required element missing, an unknown permission or
 * grantee type), or S3_INVALID_ARGUMENT (a prefix with control characters),
 * with a message in msg. An empty BucketLoggingStatus leaves
 * c->target_bucket NULL. Any thread.
 */
enum s3_err s3_logging_parse(const char *data, size_t len, struct s3_logging_config *c,
			     char *msg, size_t msglen);
void s3_logging_config_free(struct s3_logging_config *c);
/* The stored form of c (appended to out). */
void s3_logging_encode(const struct s3_logging_config *c, buf *out);
/* Reads the stored form v[0..len) into c (free with s3_logging_config_free); false when
 * it is not one (c then empty). */
bool s3_logging_decode(const char *v, size_t len, struct s3_logging_config *c);
/* Writes c as a BucketLoggingStatus document (GetBucketLogging's answer). */
void s3_logging_xml(xml_w *w, const struct s3_logging_config *c);

/* One request, as its access-log record describes it (strings borrowed; NULL or "": '-'). */
struct s3_log_record {
	const char *owner, *bucket;
	int64_t time_ns; /* when the request arrived */
	const char *remote_ip, *requester, *request_id, *operation, *key;
	const char *method, *uri, *protocol; /* the request line */
	int status;
	const char *error_code;
	int64_t bytes_sent, object_size; /* -1: '-' */
	int64_t total_ms, turnaround_ms; /* -1: '-' */
	const char *referer, *user_agent, *version_id, *host_id, *signature_version;
	const char *cipher_suite, *auth_type, *host, *tls_version, *access_point_arn;
	const char *acl_required;
};

/* Appends rec as one line of S3's server access log format (with its '\n'). */
void s3_logging_format(buf *out, const struct s3_log_record *rec);
/* The request target uri with the values of its signature and session token query
 * parameters replaced by "-" (a log reader must not be able to replay them), into out. */
void s3_logging_uri(const char *uri, buf *out);
/* The record's operation, REST.<METHOD>.<resource> (REST.GET.OBJECT), into out. */
void s3_logging_operation(const char *method, bool has_key, const char *subresource,
			  char *out, size_t outlen);
/* The key a delivery writes: the configured prefix and keys, the source bucket and owner,
 * the time (ns since the epoch) and 8 random bytes, appended to out. */
void s3_logging_object_key(const struct s3_logging_config *c, const char *source,
			   int64_t when_ns, uint64_t unique, const char *region, buf *out);

/* ---- delivery (s3_logging_deliver.c) ---- */
struct s3_gateway;
struct s3_req;
struct s3_logging;
/* The buffers and their delivery thread; flush_s seconds between deliveries (>= 1). */
struct s3_logging *s3_logging_new(struct s3_gateway *g, int flush_s);
/* Delivers what is buffered and frees lg (NULL does nothing). The gateway's filer and blob
 * clients must still work; no request may be noted any more. */
void s3_logging_free(struct s3_logging *lg);
/*
 * r's answer is about to be sent (status, r->log_sent bytes): when its bucket
 * is logged, its record goes to the target's buffer (the configuration read
 * from the bucket cache; a worker reads it when the cache holds none). Loop
 * thread, before the response is ended.
 */
void s3_logging_note(struct s3_req *r);
/* PutBucketLogging (body in r->in) and GetBucketLogging, on a worker. */
void s3_put_logging(struct s3_req *r);
void s3_get_logging(struct s3_req *r);

#endif
