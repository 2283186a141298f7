/*
 * Internals shared by the filer's handler modules (filer_*.c). Not a public
 * interface.
 *
 * Requests: the router (filer_server.c) runs on a loop thread, validates the
 * path and parameters, and copies everything a handler needs into a
 * struct fjob, because http_req_* may only be called on the loop thread.
 * The job runs on a worker pool (store calls block), fills a response
 * (status, headers, body) and fjob_finish() sends it back on the loop
 * through http_req_defer. Content streaming (filer_read.c, filer_write.c)
 * keeps its own state and uses the same pools.
 *
 * Locking: every mutation of one path holds the read side of ns_lock and
 * that path's stripe mutex; a move or a recursive delete (which touch many
 * paths) holds the write side of ns_lock. Lock order: ns_lock, then
 * stripes in increasing index, then the store's own locks; path locks are
 * taken before the store transaction begins. The namespace core's scope
 * (namespace.h, struct ns_tx) takes and releases them all.
 */
#ifndef WEEDFS_FILER_FILER_INT_H
#define WEEDFS_FILER_FILER_INT_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include "buf.h"
#include "client/blob_client.h"
#include "client/entry.h"
#include "client/filer_wire.h"
#include "filer/filer.h"
#include "filer/store.h"
#include "http_server.h"
#include "json.h"
#include "pool.h"

#define FILER_STRIPES 256
/* Content up to this size is kept inside the entry rather than on a volume. */
#define FILER_INLINE_MAX 2048
/* Default and largest page of a directory listing. */
#define FILER_LIST_DEFAULT 1000
#define FILER_JOB_HEADERS  16
/* "Seaweed-" tag headers one request may carry. */
#define FILER_TAGS_MAX 64

/*
 * A request still streaming (an upload or a download). The HTTP server drops
 * such requests silently when it stops, so the filer keeps a list and frees
 * what is left after the server and the pools are gone (filer_stop).
 */
struct filer_live {
	struct filer_live *prev, *next;
	bool linked;
	void (*drop)(struct filer_live *l); /* frees the state and its job */
};

struct filer_locks;

struct filer {
	struct filer_store *store;
	blob_client *bc;
	struct gc_queue *gc;     /* deletes freed chunks from the store's garbage queue */
	struct metalog *metalog; /* the event log: appends and subscriber wake-ups */
	http_server *http;
	pool *meta_pool;            /* store work */
	pool *io_pool;              /* chunk uploads and reads */
	pthread_rwlock_t pool_lock; /* pools are NULL once stopping; protects meta_pool, io_pool */
	pthread_rwlock_t ns_lock;   /* see the locking note above */
	pthread_mutex_t stripes[FILER_STRIPES];
	pthread_mutex_t live_lock;
	struct filer_live live; /* list head; protected by live_lock */
	char *ip;
	int port;
	char self[300];
	uint64_t chunk_size;         /* -maxMB in bytes */
	bool encrypt;                /* -encryptVolumeData: new chunks are sealed */
	char *collection;            /* default, may be "" */
	char *replication;           /* default, may be "" */
	struct filer_events *events; /* filer_events.c: the event stream subscribers */
	struct filer_ttl *ttl;       /* filer_ttl.c: the expiry sweeper */
	int64_t tus_expire_s;        /* -tus.expireSeconds: idle TUS sessions expire */
	int64_t assign_lease_s;      /* -assignLeaseSeconds: assigned ids must be committed */
	struct filer_locks *locks;   /* filer_lock.c: the lock ops' table (thread-safe) */
	struct filer_reclaim *reclaim; /* filer_reclaim.c: dead mounts' hidden files */
	bool local_store;            /* SQLite: lookups and simple changes run on the loop thread */
	char *master;                         /* -master, for the status page */
	struct metrics_server *metrics;       /* -metricsPort; NULL: none */
	struct metric_collector *collector;   /* scrape-time gauges; NULL: metrics off */
};

struct filer_evs;

struct fjob_kv {
	char *name, *value;
};

struct fjob;
typedef void (*fjob_fn)(struct fjob *j);

/* One request's worth of copied input and produced output. */
struct fjob {
	struct filer *f;
	http_req *req;
	enum http_method method;
	char *path;          /* normalised, no trailing slash except "/" */
	char *dir, *name;    /* split of path ("/" and "" for the root) */
	bool trailing_slash; /* the request path ended in '/' */
	struct fjob_kv *q;   /* query parameters */
	size_t nq;
	struct fjob_kv *h; /* selected request headers, then the "Seaweed-" ones */
	size_t nh;
	bool too_many_tags;
	int32_t signature; /* the client's X-Weedfs-Signature, 0 when absent (ns_tx_init) */
	fjob_fn run;       /* on a worker */
	/* response */
	int status;
	buf body;
	const char *ctype; /* static or ctype_owned; NULL = no Content-Type unless a body */
	char *ctype_owned;
	struct fjob_kv rh[FILER_JOB_HEADERS];
	size_t nrh;
	/* handler state: called on the loop instead of sending the response; owns j */
	fjob_fn on_loop;
	void *ext;
};

/* ---- filer_server.c ---- */
/* Queues fn on the metadata (io=false) or I/O pool; false when stopping. Any thread. */
bool filer_submit(struct filer *f, bool io, pool_fn fn, void *arg);
/* Whether both pools have nothing queued or running (false when stopping). Any thread. */
bool filer_workers_idle(struct filer *f);
/* Registers and unregisters a streaming request (see struct filer_live). Any thread. */
void filer_live_add(struct filer *f, struct filer_live *l);
void filer_live_remove(struct filer *f, struct filer_live *l);

/* ---- filer_path.c: jobs, paths, common store operations ---- */
/* Copies the request's input into a new job. Loop thread. */
struct fjob *fjob_new(struct filer *f, http_req *req, const char *path, bool trailing_slash);
/* *sig is req's signature (0 when absent); false when the header is malformed. */
bool fjob_signature(http_req *req, int32_t *sig);
/* Parses a signature: a nonzero 32-bit integer in decimal. */
bool filer_signature_parse(const char *s, int32_t *sig);
void fjob_free(struct fjob *j);
/* A copied query parameter or NULL. Any thread. */
const char *fjob_query(const struct fjob *j, const char *name);
/* A copied request header (case-insensitive) or NULL. */
const char *fjob_header(const struct fjob *j, const char *name);
/* A boolean parameter: def when absent; false and a 400 set on j when malformed. */
bool fjob_query_bool(struct fjob *j, const char *name, bool def, bool *out);
/* Sets a {"error": msg, "code": code} response (no "code" when code is NULL). */
void fjob_verror(struct fjob *j, int status, const char *code, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
/* Sets a {"error": msg} response. */
void fjob_error(struct fjob *j, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Sets a response from a store error with context. */
void fjob_store_error(struct fjob *j, wfs_err err, const char *what);
struct ns_result;
/* Sets the REST answer to a failed namespace operation (namespace.h): its message, the status
   fjob_store_error would give its error. */
void fjob_ns_error(struct fjob *j, const struct ns_result *res);
/* Adds a response header (copied). */
void fjob_resp_header(struct fjob *j, const char *name, const char *value);
/* Runs j->run on the metadata pool, then sends the response on the loop. Loop thread. */
void fjob_submit(struct fjob *j);
/* Sends j's response (or calls j->on_loop) and frees j. Loop thread. */
void fjob_respond(struct fjob *j);
/* fjob_respond on the request's loop, from a worker. Any thread. */
void fjob_respond_deferred(struct fjob *j);

/*
 * Normalises a request path: collapses doubled slashes, strips a trailing
 * slash (reported in *trailing) and validates (no "." or "..", no NUL,
 * names <= 255 bytes). On WFS_OK *out is newly allocated.
 */
wfs_err filer_path_normalize(const char *raw, char **out, bool *trailing);
/* Joins dir and name into a newly allocated full path. */
char *filer_path_join(const char *dir, const char *name);

/* True if e is a directory. */
bool filer_entry_is_dir(const struct filer_entry *e);
/*
 * Finds dir/name; the root "/" always exists as a directory (a synthesized
 * entry when not stored). Inside tx when tx is not NULL.
 */
wfs_err filer_find(struct filer *f, struct filer_tx *tx, const char *dir, const char *name,
		   struct filer_entry **out);
/*
 * Makes dir and its missing parents as directories (mode 0770 | S_IFDIR),
 * inside tx, recording an event per directory made in evs. An existing directory is fine, also one
 * another transaction creates meanwhile; WFS_EPERM (409 for callers) when a component is a file.
 */
wfs_err filer_mkdir_p(struct filer *f, struct filer_tx *tx, struct filer_evs *evs, const char *dir);
/*
 * Inside tx, after a change of the directory dir's subdirectories was written
 * (one made, removed, moved in or out): its nlink, 2 plus its subdirectories as
 * on ext4, moves by delta, its ctime becomes now and the update is an event in
 * evs. A directory stored without a count (nlink 0 or 1: made before the filer
 * counted) is counted instead, the change included. The root, when not stored,
 * and a missing dir are left alone.
 */
wfs_err filer_dir_links(struct filer *f, struct filer_tx *tx, struct filer_evs *evs,
			const char *dir, int delta);
/*
 * Inside tx, for a write that makes the file dir/name: creates its parent
 * directories (unless make_parents is false) and finds what is there now
 * (*old, owned; NULL when nothing). A file among the parents (409), a
 * directory at the name (409) or a store error sets j's error and returns
 * non-zero. Worker thread.
 */
wfs_err filer_write_target(struct fjob *j, struct filer_tx *tx, struct filer_evs *evs,
			   const char *dir, const char *name, bool make_parents,
			   struct filer_entry **old);
/* A new directory entry at dir/name with the current time. */
struct filer_entry *filer_dir_entry_new(const char *dir, const char *name, uint32_t mode);

/*
 * Queues the chunks c[0..n) (borrowed) that no entry references any more in
 * the store's persistent garbage queue, inside tx: the transaction that drops
 * their last reference, so a crash neither leaks nor frees a chunk still in
 * use. Manifest chunks are resolved (fetched) and their members queued too.
 * Call filer_gc_kick after the commit. Worker threads only.
 */
wfs_err filer_gc_enqueue(struct filer *f, struct filer_tx *tx, const struct filer_chunk *c,
			 size_t n);
/* Wakes the garbage worker after a commit that queued chunks. Any thread. */
void filer_gc_kick(struct filer *f);
/*
 * Queues chunks that were never committed to an entry (a failed upload or
 * commit) in a transaction of their own, wakes the worker and frees c
 * (ownership moves here). Worker threads only.
 */
void filer_free_chunks(struct filer *f, struct filer_chunk *c, size_t n);
/*
 * Metadata events of one transaction, collected while it runs and handed to
 * the store last; the store writes them at commit, holding its event clock
 * only across the commit itself (store.h).
 */
struct filer_ev {
	struct filer_entry *old_e, *new_e; /* owned copies; one may be NULL */
};
struct filer_evs {
	struct filer_ev *v;
	size_t n, cap;
};
/* Records the event old_e -> new_e (both borrowed and copied; one may be NULL). */
void filer_evs_add(struct filer_evs *evs, const struct filer_entry *old_e,
		   const struct filer_entry *new_e);
/*
 * filer_evs_add with hard-linked names resolved to the shared file, so subscribers
 * see its size and chunks rather than the stubs (renames and moves). Inside tx, after
 * the store changes. A record that cannot be read leaves the stub (logged).
 */
void filer_evs_add_resolved(struct filer *f, struct filer_tx *tx, struct filer_evs *evs,
			    const struct filer_entry *old_e, const struct filer_entry *new_e);
/* Frees the recorded events; the list is empty and reusable afterwards. */
void filer_evs_clear(struct filer_evs *evs);
/* Writes e as the SeaweedFS-style entry JSON object. */
void filer_entry_json(json_w *w, const struct filer_entry *e);

/* ---- handler modules (loop thread; each ends or defers the response) ---- */
void filer_handle_get(struct fjob *j);   /* filer_read.c: files, dirs, metadata */
void filer_handle_proxy(struct fjob *j); /* filer_read.c: ?proxyChunkId */
void filer_list_run(struct fjob *j, const struct filer_entry *dir_e); /* filer_list.c (worker) */
void filer_handle_write(struct fjob *j);   /* filer_write.c: PUT/POST content, mkdir */
void filer_handle_delete(struct fjob *j);  /* filer_ops.c */
void filer_handle_tagging(struct fjob *j); /* filer_tag.c: ?tagging */
void filer_handle_move(struct fjob *j, const char *from, bool copy); /* filer_ops.c */

/* ---- filer_events.c: GET /.meta/subscribe, the metadata event stream ---- */
struct filer_events;
/* The subscriber registry; freed with filer_events_free. Control thread. */
struct filer_events *filer_events_new(void);
/*
 * Ends every stream's thread and refuses new streams; returns once no thread
 * is left. Call after metalog_shutdown and before the HTTP server stops.
 * Control thread.
 */
void filer_events_stop(struct filer *f);
/* Frees ev after filer_events_stop and the live-list drops. NULL does nothing. */
void filer_events_free(struct filer_events *ev);
/* Event-stream subscribers now (metrics). Any thread. */
int filer_events_subscribers(struct filer_events *ev);
/* Serves GET /.meta/subscribe (validates, then streams until the client leaves). Loop thread. */
void filer_handle_subscribe(struct filer *f, http_req *req);

/* ---- filer_api.c: the JSON entry API (POST /.api/v1/<op>, docs/api-filer-json.md) ---- */
/*
 * Serves req if its path is under /.api/ (then true: the request is answered
 * now or later); false leaves it to the other routes. Loop thread.
 */
bool filer_api_route(struct filer *f, http_req *req);

/* ---- filer_tus.c: resumable uploads (TUS 1.0.0) under /.tus ---- */
/* Serves req if its path is /.tus or under /.tus/ (then true); false otherwise. Loop thread. */
bool filer_tus_route(struct filer *f, http_req *req);
/*
 * Removes the TUS sessions idle for more than -tus.expireSeconds (their chunks
 * go to the garbage queue); returns how many. Blocking: the sweeper thread.
 */
size_t filer_tus_sweep(struct filer *f);

/* ---- filer_ttl.c: TTL expiry ---- */
struct filer_ttl;
/* True if e is a file whose TTL has run out (mtime + ttl_sec <= now). Any thread. */
bool filer_ttl_expired(const struct filer_entry *e);
/* Starts the sweeper thread (deletes expired files periodically). Control thread. */
struct filer_ttl *filer_ttl_start(struct filer *f);
/* Stops and joins the sweeper (a sweep in progress stops at its next entry). NULL does nothing. */
void filer_ttl_stop(struct filer_ttl *t);

#endif
