/* Internals shared by the volume server's modules (not for other components). */
#ifndef WEEDFS_VOLUME_VS_INT_H
#define WEEDFS_VOLUME_VS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "client/master_list.h"
#include "http_server.h"
#include "json.h"
#include "pool.h"
#include "volume_store.h"
#include "volume_server.h"

/* Where a volume lives, as the master's /dir/lookup says. */
struct vs_location {
	char *url;        /* ip:port */
	char *public_url; /* host:port for clients */
};

struct lookup_cache_entry {
	uint32_t vid;
	uint64_t expires_ns;
	struct vs_location *locs; /* every server holding vid, this one included */
	int nlocs;
};

/* A parsed needle path (see parse_fid_path in volume_handlers.c). */
struct fid_path {
	uint32_t vid;
	uint64_t key;
	uint32_t cookie;
	const char *ext;      /* ".jpg" or NULL; points into the path */
	const char *filename; /* from /vid/fid/filename, or NULL */
	size_t filename_len;
	const char *vid_text, *key_text; /* the id as written, for a token's fid claim */
	size_t vid_text_len, key_text_len;
};

struct volume_server {
	master_list *masters; /* -mserver as a list; NULL = standalone */
	char *ip, *public_url, *mserver, *data_center, *rack;
	char self[300]; /* ip:port */
	int port;
	int pulse_seconds;
	uint64_t file_size_limit;
	volume_store *store;
	http_server *http;

	pthread_rwlock_t pool_lock; /* guards pool and read_pool against stop */
	pool *pool;                 /* protected by pool_lock; NULL once stopping */
	pool *read_pool;            /* disk reads that would block a loop; as pool */

	pthread_t hb_thread;
	bool hb_started;
	pthread_mutex_t hb_lock;
	pthread_cond_t hb_cond;
	bool hb_stop, hb_kick; /* protected by hb_lock */

	pthread_mutex_t cache_lock;
	struct lookup_cache_entry *cache; /* protected by cache_lock */
	int ncache;

	struct vs_short_circuit *sc; /* NULL: short-circuit reads off */
	struct vs_ec *ec;            /* the erasure-coded volumes held here (vs_ec.c) */

	struct metrics_server *metrics;     /* -metricsPort; NULL: none */
	struct metric_collector *collector; /* the volumes' gauges; NULL: metrics off */
};

/* Threads of the read pool: as deep a disk queue as 16 clients reading at once. */
#define VS_READ_THREADS 16

/* The boundary of multipart/byteranges answers. */
#define VS_RANGE_BOUNDARY "weedfs3d6b6a416f9b5e5d"

/* Metrics and status pages (vs_metrics.c). */
const char *vs_route(const char *path);
bool vs_metrics_start(struct volume_server *vs, int port, wfs_err *err);
void vs_metrics_stop(struct volume_server *vs);
void vs_status_html(struct volume_server *vs, buf *out);
/* The JSON of GET /status (volume_server.c). */
void vs_status_json(struct volume_server *vs, buf *out);

/* Runs fn(arg) on the worker pool; false if the server is stopping. Any thread. */
bool vs_submit(struct volume_server *vs, pool_fn fn, void *arg);
/*
 * Runs fn(arg) on the pool of disk reads (VS_READ_THREADS threads that only
 * wait for the disk, so slow admin jobs never hold them up); false if the
 * server is stopping. Any thread.
 */
bool vs_submit_read(struct volume_server *vs, pool_fn fn, void *arg);
/* Wakes the heartbeat thread for an immediate heartbeat. Any thread. */
void vs_heartbeat_now(struct volume_server *vs);

/*
 * Parses /vid,keycookie[.ext], /vid/keycookie[.ext] and /vid/keycookie/filename
 * (each with an optional _N after the key); f borrows path. WFS_EINVAL when malformed.
 */
wfs_err vs_parse_fid_path(const char *path, struct fid_path *f);

/*
 * Reads the fsync query parameter of a write or delete into *fsync (false
 * when absent). A value that is not a boolean answers 400 and returns false.
 * Loop thread.
 */
bool vs_query_fsync(http_req *req, bool *fsync);

/* Needle requests (GET/HEAD/PUT/POST/DELETE on a file id path). Loop thread. */
void vs_handle_needle(struct volume_server *vs, http_req *req);

/*
 * The servers holding vid (from a cache kept a few seconds, else the master's
 * /dir/lookup; an unknown volume gives none). The caller frees *locs with
 * vs_locations_free. Worker thread (blocking).
 */
wfs_err vs_lookup(struct volume_server *vs, uint32_t vid, struct vs_location **locs, int *n);
void vs_locations_free(struct vs_location *locs, int n);

/* WFS_OK if locs (from vs_lookup) name as many other holders of vid as its placement wants. */
wfs_err vs_check_replicas(struct volume_server *vs, uint32_t vid, const struct vs_location *locs,
			  int n);
/* True when this write or delete must be forwarded to the other replicas of v. Loop thread. */
bool vs_needs_replication(http_req *req, volume *v);
/*
 * Forwards a request to the other replicas of vid from a pool job and then
 * answers status with reply (taken) and etag (may be NULL), or 500 when a
 * replica failed. body (copied) is sent as is. Loop thread.
 */
void vs_replicate(struct volume_server *vs, http_req *req, uint32_t vid, uint64_t ts,
		  const char *body, size_t len, int status, buf *reply, const char *etag);

/*
 * Answers a GET/HEAD with needle n as read from volume f->vid (ETag, Last-Modified,
 * conditional requests, Content-Type, Content-Disposition, ranges); a blob's fd is taken.
 * Loop thread.
 */
void vs_answer_needle(struct volume_server *vs, http_req *req, const struct fid_path *f,
		      const struct needle *n, struct needle_blob *blob);

/* PUT/POST of a needle (vs_upload.c); the volume exists. Loop thread. */
void vs_handle_upload(struct volume_server *vs, http_req *req, const struct fid_path *f);
/*
 * Writes "UploadMemory": {held, budget, inMemory, spilled} into an open
 * object: the bytes in-memory uploads hold now, their budget, and how many
 * uploads took each path so far. Any thread.
 */
void vs_upload_status(json_w *w);

/*
 * Answers GET/HEAD of a needle too big to read whole (vs_download.c): takes
 * blob->fd; n's fields borrow memory valid for this call only. ctype and the
 * headers already added stay. Loop thread.
 */
void vs_stream_needle(struct volume_server *vs, http_req *req, const struct needle *n,
		      struct needle_blob *blob, const char *range_h, const char *ctype);

/*
 * Answers 200 with len bytes of fd from off, streamed as vs_stream_needle
 * does (unchecked: the caller vouches for the range). Takes fd. Loop thread.
 */
void vs_stream_file(struct volume_server *vs, http_req *req, int fd, uint64_t off, uint64_t len,
		    const char *ctype);

/*
 * The volume administration endpoints of vs_copy.c (/admin/volume/status,
 * file, tail, needles, needle_raw, copy): true if path is one of them (then
 * answered). Loop thread.
 */
bool vs_handle_volume_admin(struct volume_server *vs, http_req *req, const char *path);
/* Parses ?volume=N; answers 400 and returns false when missing or malformed. Loop thread. */
bool vs_query_vid(http_req *req, uint32_t *vid);

/*
 * Erasure-coded volumes (vs_ec.c). vs_ec_open finds the ones in the store's directories
 * (control thread, blocking); vs_ec_close drops them. vs_ec_read / vs_ec_delete answer a
 * needle GET/HEAD or DELETE when this server holds vid as an EC volume and return true,
 * else false (nothing answered). vs_ec_handle_admin answers /admin/ec/... (true if path is
 * one). vs_ec_heartbeat writes "ecShards": [...] into an open object. Loop thread unless
 * said otherwise; the heartbeat from any thread.
 */
void vs_ec_open(struct volume_server *vs);
void vs_ec_close(struct volume_server *vs);
bool vs_ec_read(struct volume_server *vs, http_req *req, const struct fid_path *f);
bool vs_ec_delete(struct volume_server *vs, http_req *req, const struct fid_path *f);
bool vs_ec_handle_admin(struct volume_server *vs, http_req *req, const char *path);
void vs_ec_heartbeat(struct volume_server *vs, json_w *w);

/* True for host:port (with a port) of another server: a copy's source=. Any thread. */
bool vs_source_valid(struct volume_server *vs, const char *s);

/*
 * GETs http://source<path> into fd from off (pwrite), with progress (may be NULL) counting
 * the bytes and limit_bps (0: none) throttling them; stops when the server stops. Returns
 * the HTTP status (msg set unless 200), 0 when the transfer failed, minus the status to
 * answer when writing failed (-507: disk full). *got: bytes written. Blocking (pool
 * threads).
 */
long vs_fetch_file(struct volume_server *vs, const char *source, const char *path, int fd,
		   uint64_t off, uint64_t limit_bps, _Atomic uint64_t *progress, uint64_t *got,
		   char *msg, size_t msglen);

/*
 * Starts serving short-circuit reads (vs_short_circuit.c) on the abstract
 * socket named after vs->self; NULL (logged) when it cannot listen. Control thread.
 */
struct vs_short_circuit *vs_short_circuit_start(struct volume_server *vs);
/* Closes the socket and every connection, waits for their threads. NULL does nothing. */
void vs_short_circuit_stop(struct vs_short_circuit *sc);
/* Writes "ShortCircuit": {enabled, connections, answered, descriptors, refusedPeers}. Any thread. */
void vs_short_circuit_status(struct vs_short_circuit *sc, json_w *w);

#endif
