/*
 * weedfs s3: the S3 gateway daemon over a filer (docs/s3-gateway.md).
 * Stateless: buckets are the filer's /buckets/<name> directories.
 */
#ifndef WEEDFS_S3_SERVER_H
#define WEEDFS_S3_SERVER_H

#include <stdbool.h>
#include "err.h"

struct s3_opts {
	const char *ip;     /* bind address */
	int port;           /* 0: a free port */
	const char *filer;  /* host:port of the filer */
	const char *config; /* identities file (s3_iam.h); NULL or "": none */
	const char *region; /* the region the gateway answers for */
	const char *domain; /* comma list: Host <bucket>.<domain> is virtual-hosted; NULL none */
	int threads;        /* HTTP loop threads, 0 = cores */
	int chunk_mb;       /* object data is uploaded in chunks of this many MiB */
	int inline_kb;      /* objects up to this many KiB (0..64) live in their filer entry */
	int lifecycle_s;    /* seconds between lifecycle expiration passes; 0: none */
	int upload_mem_mb;  /* MiB that uploads in progress may hold together */
	bool short_circuit; /* read local volume servers' files (client/short_circuit.h) */
	/* an admin identity added to the file's (weedfs mini's environment); NULL: none */
	const char *admin_access_key, *admin_secret_key;
	int metrics_port; /* -metricsPort: /metrics and status there; 0 = none */
	int iam_port;     /* -iam.port: the IAM API there; 0 = none, -1 = a free port */
	/* -sse.keyFile: SSE-S3 master keys (NULL: generated, kept in the filer);
	   -sse.kmsKeys: the SSE-KMS key store (NULL: none) (s3_sse.h) */
	const char *sse_key_file, *sse_kms_keys;
	int logging_flush_s; /* -logging.flushSeconds: access logs are delivered this often */
};

void s3_opts_default(struct s3_opts *o);

struct s3_gateway;
/* Starts the gateway; NULL with *err on failure (logged). */
struct s3_gateway *s3_start(const struct s3_opts *o, wfs_err *err);
int s3_port(const struct s3_gateway *g);
/* The IAM API's port, 0 when it is not served. */
int s3_iam_port(const struct s3_gateway *g);
/*
 * Makes the buckets named in csv (comma separated; existing ones are fine).
 * 0, or the number that could not be made (each logged). Blocks on the filer.
 */
int s3_make_buckets(struct s3_gateway *g, const char *csv);
/* Stops serving and frees g. NULL does nothing. */
void s3_stop(struct s3_gateway *g);

#endif
