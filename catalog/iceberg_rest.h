/*
 * The Iceberg REST catalog (the Apache Iceberg REST OpenAPI specification,
 * docs/catalog.md) under /v1/ of the catalog port, over the table buckets of
 * catalog/table_store.h: the prefix is the table bucket, a namespace its
 * directory, a table a directory whose attribute points at the current
 * metadata file. The server writes every metadata file itself
 * (catalog/iceberg_meta.h applies a commit) and swaps the pointer by
 * compare-and-swap, so any number of stateless servers share one filer.
 * One call answers one request and blocks on the filer: the catalog server
 * runs it on a worker thread. Errors: {"error": {"message", "type", "code"}}.
 */
#ifndef WEEDFS_CATALOG_ICEBERG_REST_H
#define WEEDFS_CATALOG_ICEBERG_REST_H

#include <stdbool.h>
#include <stddef.h>
#include "catalog/catalog_authz.h"
#include "catalog/table_files.h"
#include "client/filer_rpc.h"
#include "lib/buf.h"
#include "lib/json.h"

struct ice_env {
	filer_rpc *rpc;
	table_files *files;
	const char *region;      /* client.region of the config */
	const char *account;     /* the ARNs' account id */
	const char *s3_endpoint; /* the S3 gateway clients read and write through ("http://h:p") */
};

/*
 * Vended credentials (X-Iceberg-Access-Delegation: vended-credentials): mint
 * writes the S3 client properties ("s3.access-key-id", "s3.secret-access-key",
 * "s3.session-token", ...) of keys limited to the keys of bucket under prefix
 * into w's open object; false with msg when it cannot. The catalog server's
 * are S3 session credentials of the caller (s3/s3_session_key.h).
 */
struct ice_vend {
	bool (*mint)(void *ctx, const char *bucket, const char *prefix, json_w *w, char *msg,
		     size_t msglen);
	void *ctx;
};

struct ice_request {
	const char *method;    /* "GET", ... */
	const char *raw_path;  /* as received, still percent-encoded */
	const char *raw_query; /* without '?'; NULL for none */
	const char *body;
	size_t body_len;
	const char *caller; /* the authenticated identity, or the account id */
	const struct ice_vend *vend; /* NULL: the client keeps its own S3 keys */
	const struct catalog_authz *authz; /* NULL: everything allowed */
};

struct ice_answer {
	int status;
	buf body; /* JSON; empty for 204 */
};

/* Whether raw_path is under /v1/ (the Iceberg REST catalog's). */
bool ice_rest_is_path(const char *raw_path);
/* Answers q into a (a->body initialised by the call; the caller frees it). */
void ice_rest_handle(const struct ice_env *env, const struct ice_request *q, struct ice_answer *a);

#endif
