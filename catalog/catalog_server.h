/*
 * The catalog listener (docs/catalog.md): an HTTP server on its own port,
 * beside the S3 gateway, that answers the S3 Tables API (s3tables.h) and,
 * under /v1/, the Iceberg REST catalog (iceberg_rest.h); and on a second
 * port the Lance Namespace REST catalog (lance_rest.h) over the same tables.
 * Stateless: every state is in the filer, so any number of them may serve
 * one cluster. Requests are SigV4-signed for the service "s3tables" with the
 * gateway's identities; with none the catalog is open (and says so).
 */
#ifndef WEEDFS_CATALOG_SERVER_H
#define WEEDFS_CATALOG_SERVER_H

#include "lib/err.h"

struct catalog_opts {
	const char *ip;     /* bind address */
	int port;           /* S3 Tables and Iceberg REST; 0: a free port, < 0: none */
	int lance_port;     /* Lance Namespace REST (lance_rest.h); 0: none */
	const char *filer;  /* host:port of the filer */
	const char *config; /* identities file (s3/s3_iam.h); NULL or "": none */
	const char *region; /* the region signatures and ARNs name; NULL: us-east-1 */
	const char *s3_endpoint; /* the S3 gateway's URL Iceberg clients are told; NULL: none */
	int threads;        /* HTTP loop threads, 0 = cores */
	/* an admin identity added to the file's (weedfs mini's environment); NULL: none */
	const char *admin_access_key, *admin_secret_key;
};

struct catalog_server;
/* Starts the listener; NULL with *err on failure (logged). */
struct catalog_server *catalog_start(const struct catalog_opts *o, wfs_err *err);
/* The listeners' ports; 0 for one not served. */
int catalog_port(const struct catalog_server *c);
int catalog_lance_port(const struct catalog_server *c);
/* Stops serving and frees c. NULL does nothing. */
void catalog_stop(struct catalog_server *c);

#endif
