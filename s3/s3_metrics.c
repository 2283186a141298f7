/*
 * The gateway's metrics and status page. Requests are counted by
 * lib/http_server under their S3 operation name (s3_op_name: from the method,
 * whether a bucket and key are named, and the subresource), so the route
 * label is a small fixed set and never a key. -metricsPort serves /metrics,
 * /status and an HTML page; the main port's paths are buckets and keys.
 */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "log.h"
#include "metrics.h"
#include "s3/s3_iam_store.h"
#include "s3/s3_int.h"
#include "s3/s3_session_gw.h"
#include "util.h"

struct subres {
	const char *param, *get, *put, *del, *post;
};

/* A bucket's subresources, in route()'s order of precedence. */
static const struct subres bucket_subres[] = {
	{"tagging", "GetBucketTagging", "PutBucketTagging", "DeleteBucketTagging", NULL},
	{"lifecycle", "GetBucketLifecycleConfiguration", "PutBucketLifecycleConfiguration",
	 "DeleteBucketLifecycle", NULL},
	{"cors", "GetBucketCors", "PutBucketCors", "DeleteBucketCors", NULL},
	{"encryption", "GetBucketEncryption", "PutBucketEncryption", "DeleteBucketEncryption", NULL},
	{"versioning", "GetBucketVersioning", "PutBucketVersioning", NULL, NULL},
	{"policyStatus", "GetBucketPolicyStatus", NULL, NULL, NULL},
	{"policy", "GetBucketPolicy", "PutBucketPolicy", "DeleteBucketPolicy", NULL},
	{"object-lock", "GetObjectLockConfiguration", "PutObjectLockConfiguration", NULL, NULL},
	{"logging", "GetBucketLogging", "PutBucketLogging", NULL, NULL},
	{"delete", NULL, NULL, NULL, "DeleteObjects"},
	{"uploads", "ListMultipartUploads", NULL, NULL, NULL},
	{"versions", "ListObjectVersions", NULL, NULL, NULL},
	{"location", "GetBucketLocation", NULL, NULL, NULL},
	{"acl", "GetBucketAcl", "PutBucketAcl", NULL, NULL},
	{"ownershipControls", "GetBucketOwnershipControls", "PutBucketOwnershipControls",
	 "DeleteBucketOwnershipControls", NULL},
	{"publicAccessBlock", "GetPublicAccessBlock", "PutPublicAccessBlock",
	 "DeletePublicAccessBlock", NULL},
};

/* A key's subresources. */
static const struct subres object_subres[] = {
	{"tagging", "GetObjectTagging", "PutObjectTagging", "DeleteObjectTagging", NULL},
	{"retention", "GetObjectRetention", "PutObjectRetention", NULL, NULL},
	{"legal-hold", "GetObjectLegalHold", "PutObjectLegalHold", NULL, NULL},
	{"attributes", "GetObjectAttributes", NULL, NULL, NULL},
	{"acl", "GetObjectAcl", "PutObjectAcl", NULL, NULL},
	{"uploads", NULL, NULL, NULL, "CreateMultipartUpload"},
};

static const char *by_method(const struct subres *s, enum http_method m)
{
	const char *op = m == HTTP_GET || m == HTTP_HEAD ? s->get
			 : m == HTTP_PUT		 ? s->put
			 : m == HTTP_DELETE		 ? s->del
			 : m == HTTP_POST		 ? s->post
							 : NULL;
	return op ? op : "Unknown";
}

static const char *object_op(struct s3_req *r, enum http_method m)
{
	bool upload = http_req_query(r->req, "uploadId") != NULL;
	bool copy = http_req_header(r->req, "x-amz-copy-source") != NULL;

	for (size_t i = 0; i < ARRAY_LEN(object_subres); i++)
		if (http_req_query(r->req, object_subres[i].param))
			return by_method(&object_subres[i], m);
	switch (m) {
	case HTTP_GET:
		return upload ? "ListParts" : "GetObject";
	case HTTP_HEAD:
		return "HeadObject";
	case HTTP_PUT:
		if (upload)
			return copy ? "UploadPartCopy" : "UploadPart";
		return copy ? "CopyObject" : "PutObject";
	case HTTP_DELETE:
		return upload ? "AbortMultipartUpload" : "DeleteObject";
	case HTTP_POST:
		return upload ? "CompleteMultipartUpload" : "Unknown";
	case HTTP_OPTIONS:
		return "PreflightRequest";
	default:
		return "Unknown";
	}
}

const char *s3_op_name(struct s3_req *r)
{
	enum http_method m = http_req_method(r->req);

	if (s3_sts_is(r))
		return "AssumeRole";
	if (!r->bucket)
		return m == HTTP_GET ? "ListBuckets" : "Unknown";
	if (r->key)
		return object_op(r, m);
	if (m == HTTP_OPTIONS)
		return "PreflightRequest";
	for (size_t i = 0; i < ARRAY_LEN(bucket_subres); i++)
		if (http_req_query(r->req, bucket_subres[i].param))
			return by_method(&bucket_subres[i], m);
	switch (m) {
	case HTTP_GET: {
		const char *lt = http_req_query(r->req, "list-type");
		return lt && !strcmp(lt, "2") ? "ListObjectsV2" : "ListObjects";
	}
	case HTTP_HEAD:
		return "HeadBucket";
	case HTTP_PUT:
		return "CreateBucket";
	case HTTP_DELETE:
		return "DeleteBucket";
	case HTTP_POST:
		return "PostObject";
	default:
		return "Unknown";
	}
}

static void s3_page(buf *out, bool json, void *ctx)
{
	struct s3_gateway *g = ctx;
	char url[300];
	struct s3_iam *iam = s3_iam_store_get(g->iam_store);
	bool open = s3_iam_is_open(iam);
	s3_iam_free(iam);
	snprintf(url, sizeof(url), "%s:%d", g->ip, g->port);
	const struct metrics_status_item items[] = {
		{"Url", url},
		{"Filer", g->filer_addr},
		{"Region", g->region},
		{"Identities", open ? "none (open)" : "configured"},
	};
	const char *peers[] = {g->filer_addr};
	metrics_status_write(out, json, "s3", items, ARRAY_LEN(items), peers, 1);
}

bool s3_metrics_start(struct s3_gateway *g, int port, wfs_err *err)
{
	if (!metrics_port_valid(port)) {
		*err = WFS_EINVAL;
		return false;
	}
	if (port && !(g->metrics = metrics_server_start(g->ip, port, s3_page, g, err)))
		return false;
	return true;
}
