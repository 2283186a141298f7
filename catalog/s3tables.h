/*
 * The S3 Tables API (the rest-json protocol awscli's `aws s3tables` and
 * boto3's `s3tables` client speak) over catalog/table_store.h. One call
 * answers one request; it blocks on the filer, so the catalog server runs it
 * on a worker thread. Errors have the protocol's shape: the status, the
 * header x-amzn-ErrorType naming the code and the body {"message": "..."}.
 */
#ifndef WEEDFS_CATALOG_S3TABLES_H
#define WEEDFS_CATALOG_S3TABLES_H

#include "catalog/catalog_authz.h"
#include <stddef.h>
#include "client/filer_rpc.h"
#include "lib/buf.h"

struct s3t_env {
	filer_rpc *rpc;
	const char *region;  /* the ARNs' region */
	const char *account; /* the ARNs' account id */
};

struct s3t_request {
	const char *method;    /* "GET", ... */
	const char *raw_path;  /* as received, still percent-encoded */
	const char *raw_query; /* as received, without '?'; NULL for none */
	const char *body;
	size_t body_len;
	const char *caller; /* the authenticated identity, or the account id */
	const struct catalog_authz *authz; /* NULL: everything allowed */
};

struct s3t_answer {
	int status;
	const char *error_type; /* NULL on success; static */
	buf body;               /* JSON (empty for 204) */
};

/* Whether raw_path is one of the API's paths (the rest is not S3 Tables). */
int s3t_is_api_path(const char *raw_path);
/* Answers q into a (a->body initialised by the call; the caller frees it). */
void s3t_handle(const struct s3t_env *env, const struct s3t_request *q, struct s3t_answer *a);

#endif
