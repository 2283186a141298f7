/*
 * Who may do what in the catalogs (docs/catalog.md, "Authentication"): both
 * APIs name each request by S3 Tables' action ("s3tables:GetTable") on a
 * table bucket, a namespace or a table, and ask the hook; the catalog server
 * answers from the identity's grants and the resource policies of the table
 * bucket and the table (catalog_authorize).
 */
#ifndef WEEDFS_CATALOG_AUTHZ_H
#define WEEDFS_CATALOG_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>
#include "client/filer_rpc.h"

struct catalog_access {
	const char *action; /* "s3tables:GetTable" */
	const char *bucket; /* NULL: none (ListTableBuckets) */
	const char *ns;     /* the namespace's directory, NULL: none */
	const char *table;  /* NULL: none */
};

/* The hook: whether the caller may do a; false with msg (the answer is 403). */
struct catalog_authz {
	bool (*allow)(void *ctx, const struct catalog_access *a, char *msg, size_t msglen);
	void *ctx;
};

/*
 * Asks z (NULL: everything allowed) whether S3 Tables' action (the name
 * after "s3tables:") may be done on bucket (ns, table); false with msg.
 */
bool catalog_may(const struct catalog_authz *z, const char *action, const char *bucket,
		 const char *ns, const char *table, char *msg, size_t msglen);

struct s3_identity;
/*
 * The server's answer for identity id (NULL: an open catalog, always true):
 * a Deny of the bucket's or the table's policy refuses; an Allow of either
 * permits; else the grants decide (reads: Read or List on the bucket;
 * policies: Admin; the rest: Write). Resources are the bucket's ARN
 * ("arn:aws:s3tables:<region>:<account>:bucket/<name>") or, for a table's
 * action, the table's. A policy stored malformed refuses (it cannot be
 * evaluated). Blocks on the filer (one lookup per resource, kept for a
 * second: catalog_authz.c): workers.
 */
bool catalog_authorize(filer_rpc *r, const char *region, const char *account,
		       const struct s3_identity *id, const struct catalog_access *a, char *msg,
		       size_t msglen);
/*
 * Forgets what catalog_authorize kept of the entry at path (a bucket's or a
 * table's directory): its policy changed through this process.
 */
void catalog_authz_forget(const char *path);

#endif
