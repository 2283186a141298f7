/*
 * The filer's client of the blob store: file-id assignment on the master,
 * volume lookup through a location cache, uploads, ranged reads with replica
 * failover, and deletes. It also owns the worker threads that chunk_io.h runs
 * parallel uploads and read-ahead on.
 *
 * Every function is blocking (libcurl, one handle per thread, see
 * lib/http_client.h) and may be called from any thread except a libevent loop
 * thread and the client's own worker threads. http_client_global_init() must
 * have run before the first call.
 */
#ifndef WEEDFS_CLIENT_BLOB_CLIENT_H
#define WEEDFS_CLIENT_BLOB_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "err.h"
#include "http_client.h"
#include "pool.h"

struct blob_client_opts {
	long timeout_ms;          /* per HTTP request (connect and transfer); 0 = 30000 */
	uint64_t location_ttl_ms; /* how long a looked-up volume location is trusted; 0 = 600000 */
	int threads;              /* worker threads for uploads and read-ahead; 0 = 16 */
	bool short_circuit_off;   /* never read through a local volume server's descriptors
				     (client/short_circuit.h); they are tried first by default */
};

typedef struct blob_client blob_client;

/* Parameters of /dir/assign; NULL or "" leaves one out (the master's default). */
struct blob_assign_params {
	const char *collection;
	const char *replication; /* "xyz" */
	const char *ttl;         /* "3d" */
	const char *data_center;
	const char *rack;
	const char *data_node;
};

#define BLOB_URL_MAX  256
#define BLOB_FID_MAX  64
#define BLOB_ETAG_MAX 128
#define BLOB_AUTH_MAX 512

struct blob_assignment {
	char fid[BLOB_FID_MAX];
	char url[BLOB_URL_MAX]; /* host:port of the volume server to upload to */
	char public_url[BLOB_URL_MAX];
	char auth[BLOB_AUTH_MAX]; /* the master's write token for fid (jwt.signing), or "" */
};

struct blob_location {
	char url[BLOB_URL_MAX];
	char public_url[BLOB_URL_MAX];
	char data_center[BLOB_URL_MAX];
};

/* Counters, for tests and status pages. */
struct blob_client_stats {
	uint64_t assigns;        /* /dir/assign requests answered */
	uint64_t lookups;        /* /dir/lookup requests sent to the master */
	uint64_t cache_hits;     /* lookups answered from the location cache */
	uint64_t invalidations;  /* cache entries dropped after a failure */
	uint64_t upload_retries; /* uploads repeated on a new assignment */
	uint64_t read_failovers; /* reads that moved on to another replica */
	uint64_t down_skips;     /* assignments skipped: their server failed moments ago */
	uint64_t short_circuit_reads;     /* reads served from a local volume file */
	uint64_t short_circuit_fallbacks; /* reads of a local server that went to HTTP after all */
};

/*
 * A client of the master at "host:port" (copied). opts may be NULL (defaults).
 * Starts the worker threads. Caller frees with blob_client_free.
 */
blob_client *blob_client_new(const char *master, const struct blob_client_opts *opts);
/*
 * Filer mode: like blob_client_new, but assignments and volume lookups go through the
 * filer at "host:port" (POST /.api/v1/assign and /.api/v1/lookupVolume,
 * docs/api-filer-json.md) instead of the master, for clients (the mount) that know only
 * the filer. Uploads and reads still go straight to the volume servers.
 */
blob_client *blob_client_new_filer(const char *filer, const struct blob_client_opts *opts);
/* Joins the workers and frees. No call may be in progress. NULL does nothing. */
void blob_client_free(blob_client *bc);
/* The client's worker pool (borrowed): chunk_io.c submits transfers to it. Never block a
 * worker on another job of the same pool. */
pool *blob_client_pool(blob_client *bc);
/* The masters (as given: one host:port or a comma list) or in filer mode the filer's
   host:port, borrowed for bc's lifetime. */
const char *blob_client_master(const blob_client *bc);
/*
 * GET path_query ("/vol/status") on the masters with failover (master mode only,
 * else WFS_EINVAL). res as http_request's. Blocks: workers only.
 */
wfs_err blob_client_master_get(blob_client *bc, const char *path_query, struct http_result *res);
/* The per-request timeout in ms. */
long blob_client_timeout_ms(const blob_client *bc);
/* A snapshot of the counters. */
void blob_client_get_stats(blob_client *bc, struct blob_client_stats *out);

/*
 * Asks the master for one file id. p may be NULL. WFS_ENOSPC when no volume can be
 * grown for it (the cluster is full: the master's 507), WFS_EUNAVAIL if the master is
 * unreachable or cannot grow a volume now (its message is logged), WFS_EINVAL if it
 * refused the parameters (4xx).
 */
wfs_err blob_client_assign(blob_client *bc, const struct blob_assign_params *p,
			   struct blob_assignment *out);

/*
 * The live locations of volume vid, from the cache unless expired (or `fresh`).
 * *locs is a newly allocated copy the caller frees; *n >= 1 on WFS_OK.
 * WFS_ENOENT if the master knows no live server for it, WFS_EUNAVAIL if the master
 * is unreachable.
 */
wfs_err blob_client_lookup(blob_client *bc, uint32_t vid, bool fresh, struct blob_location **locs,
			   size_t *n);
/* Drops vid from the location cache (after a replica failed). */
void blob_client_invalidate(blob_client *bc, uint32_t vid);

struct blob_upload_params {
	const char *ttl; /* NULL or the assignment's ttl */
	bool fsync;      /* ask the volume server to fsync before answering */
	const char *auth; /* the assignment's token, sent when this node has no jwt.signing
			     key (with the key a fresh one is minted, lib/jwt.h); may be NULL */
};

/*
 * PUTs len bytes (borrowed) to http://url/fid. On WFS_OK etag (BLOB_ETAG_MAX bytes,
 * may be NULL) holds the volume's eTag. WFS_EUNAVAIL / WFS_ETIMEDOUT when the
 * server is unreachable or answered 5xx, WFS_ENOSPC when its volume is full (507;
 * all worth retrying elsewhere), WFS_ETOOBIG on 413, WFS_EINVAL on other 4xx.
 */
wfs_err blob_client_upload(blob_client *bc, const char *url, const char *fid, const void *data,
			   size_t len, const struct blob_upload_params *p, char *etag);

/*
 * Assigns and uploads, retrying on a new assignment (up to 4 tries, with back-off)
 * when the master or the volume server fails or the volume is full; an assignment
 * refused for want of space (WFS_ENOSPC) or parameters ends it at once. A volume server that failed in the
 * last few seconds is skipped (a new id is asked for at once), since the master
 * keeps assigning to it until it misses several heartbeats. On WFS_OK *fid is newly allocated
 * (the caller frees) and etag as for blob_client_upload.
 */
wfs_err blob_client_save(blob_client *bc, const struct blob_assign_params *ap,
			 const struct blob_upload_params *up, const void *data, size_t len,
			 char **fid, char *etag);

/*
 * Appends bytes [off, off+len) of blob fid to out; len 0 means the whole blob
 * (at most max_whole bytes, else WFS_ETOOBIG). Tries every replica, invalidating
 * the cache and asking the master again once when all cached ones fail.
 * WFS_EUNAVAIL when no replica answers, WFS_ENOENT when every replica that
 * answered lacks the blob, WFS_ECORRUPT when the data is short.
 */
wfs_err blob_client_read(blob_client *bc, const char *fid, uint64_t off, uint64_t len,
			 size_t max_whole, buf *out);

/*
 * Deletes blob fid (on one replica; the volume server replicates deletes).
 * An already-missing blob is WFS_OK.
 */
wfs_err blob_client_delete(blob_client *bc, const char *fid);
/* Deletes n blobs; returns the first error but tries every one. */
wfs_err blob_client_delete_many(blob_client *bc, const char *const *fids, size_t n);

/*
 * Makes everything volume vid holds durable on every replica the master lists
 * (POST /admin/volume/sync on each: their fdatasync), e.g. blobs uploaded
 * earlier without fsync. WFS_OK only when every replica answered; else the first
 * failure (WFS_EUNAVAIL when one is unreachable, WFS_EIO when its disk failed).
 */
wfs_err blob_client_sync_volume(blob_client *bc, uint32_t vid);

#endif
