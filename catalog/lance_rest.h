/*
 * The Lance Namespace REST catalog (lance-namespace's OpenAPI specification,
 * docs/catalog.md "Lance") on its own port, over the table buckets of
 * catalog/table_store.h: the id "$" is the root, whose children are the
 * table buckets; "$bucket$a$b" the namespace a.b of bucket; a table id ends
 * in the table's name. A table is a directory s3://<bucket>/<ns>/<table>/
 * holding the Lance dataset, which clients write through the S3 gateway
 * (their commits are conditional PUTs of manifests the gateway makes atomic).
 * The catalog names, describes, lists, vends credentials for and removes
 * tables; the data plane and table versions answer Unsupported. One call
 * answers one request and blocks on the filer (a worker thread). Errors:
 * {"code", "error", "detail", "instance"} (lance_req.h's codes).
 */
#ifndef WEEDFS_CATALOG_LANCE_REST_H
#define WEEDFS_CATALOG_LANCE_REST_H

#include <stdbool.h>
#include <stddef.h>
#include "catalog/catalog_authz.h"
#include "catalog/lance_req.h"
#include "catalog/table_files.h"
#include "client/filer_rpc.h"
#include "lib/buf.h"
#include "lib/json.h"

struct lance_env {
	filer_rpc *rpc;
	table_files *files;
	const char *region;      /* aws_region of storage_options */
	const char *account;     /* the ARNs' account id */
	const char *s3_endpoint; /* aws_endpoint of storage_options ("http://h:p"); NULL: none */
};

/*
 * Vended credentials: mint writes the storage options aws_access_key_id,
 * aws_secret_access_key, aws_session_token and expires_at_millis of keys
 * limited to bucket's keys under prefix into w's open object; false with msg
 * when it cannot.
 */
struct lance_vend {
	bool (*mint)(void *ctx, const char *bucket, const char *prefix, json_w *w, char *msg,
		     size_t msglen);
	void *ctx;
};

struct lance_request {
	const char *method;
	const char *raw_path;  /* as received, still percent-encoded */
	const char *raw_query; /* without '?'; NULL for none */
	const char *body;
	size_t body_len;
	const char *caller;                /* the authenticated identity, or the account id */
	const struct lance_vend *vend; /* NULL: an open catalog (unsigned S3 access is told) */
	const struct catalog_authz *authz; /* NULL: everything allowed */
};

struct lance_answer {
	int status;
	buf body; /* JSON; empty for 204 */
};

/* Answers q into a (a->body initialised by the call; the caller frees it). */
void lance_rest_handle(const struct lance_env *env, const struct lance_request *q,
		       struct lance_answer *a);
/* An error answer's body {"code", "error", "detail", "instance"} into out (reset first). */
void lance_error_body(buf *out, enum lance_code code, const char *message, const char *instance);

#endif
