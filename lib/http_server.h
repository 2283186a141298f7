/*
 * HTTP/1.1 server on libevent bufferevents with http-parser.
 *
 * N loop threads each own an event_base; an acceptor spreads connections over
 * them. A request's handler runs on its connection's loop thread once the head
 * is parsed. The body is either collected up to a limit (http_req_read_body)
 * or streamed in pieces with back-pressure (http_req_stream_body). Responses
 * are sent whole (http_resp_send) or streamed (http_resp_start/write/end).
 *
 * Threading: every http_req_* / http_resp_* call must happen on the request's
 * loop thread. Work on another thread finishes by http_req_defer(), which runs
 * a function back on that loop. A request stays valid until its response has
 * ended, even if the peer hung up meanwhile (responses then go nowhere).
 *
 * Limits (header bytes, URI length, idle time, body size) are enforced before
 * any handler runs or while the body arrives; violations answer 4xx and close.
 */
#ifndef WEEDFS_HTTP_SERVER_H
#define WEEDFS_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "err.h"

typedef struct http_server http_server;
typedef struct http_req http_req;

enum http_method {
	HTTP_GET,
	HTTP_HEAD,
	HTTP_POST,
	HTTP_PUT,
	HTTP_DELETE,
	HTTP_OPTIONS,
	HTTP_PATCH,
	HTTP_OTHER
};

struct http_server_opts {
	const char *host;        /* bind address, default "127.0.0.1"; "0.0.0.0" for all */
	int port;                /* 0 picks a free port; see http_server_port() */
	int threads;             /* loop threads; 0 = number of cores */
	size_t max_header_bytes; /* request line + headers; default 64 KiB (431 beyond) */
	size_t max_uri_bytes;    /* default 8 KiB (414 beyond) */
	int idle_timeout_sec;    /* close idle keep-alive connections; default 120 */
	int max_connections;     /* default 16384; beyond it new connections are closed */
	const char *thread_name; /* the loop threads' name (top -H, perf; 15 characters kept) */
	/*
	 * The answers the server gives by itself (a head it cannot parse, 431, 414,
	 * a body over its limit): NULL sends {"error": msg} as JSON; a server
	 * speaking another protocol's errors (S3's XML) writes its own with
	 * http_resp_header / http_resp_send. ctx is http_server_new's.
	 */
	void (*error_answer)(http_req *req, int status, const char *msg, void *ctx);
	/* Frees what the handler kept in a loop's slot (http_req_loop_data), on
	 * http_server_free, before that loop's event_base goes. NULL: nothing kept. */
	void (*loop_data_free)(void *data, void *ctx);
	/* Non-NULL: every request is counted in the process's metrics (lib/metrics.h) as
	 * <prefix>_http_requests_total{method,route,code}, a latency histogram and bytes in
	 * and out, under the route the handler names (http_req_set_route). */
	const char *metrics_prefix;
};

/*
 * Called on the loop thread when a request head has been parsed. The handler
 * must eventually end the response (now or later via http_req_defer).
 */
typedef void (*http_handler_fn)(http_req *req, void *ctx);

/* Binds and listens (errors reported via the return value and log), starts no thread yet. */
http_server *http_server_new(const struct http_server_opts *opts, http_handler_fn handler,
			     void *ctx, wfs_err *err);
/* Starts the loop threads; returns at once. */
void http_server_start(http_server *s);
/* The bound port (useful with port 0). */
int http_server_port(const http_server *s);
/* Stops accepting, closes connections, joins threads, frees. NULL does nothing. */
void http_server_free(http_server *s);

/* ---- request ---- */
enum http_method http_req_method(const http_req *req);
const char *http_req_method_str(const http_req *req);
/* The percent-decoded path without the query, e.g. "/3,01637037d6". */
const char *http_req_path(const http_req *req);
/* The request target exactly as sent, query included. */
const char *http_req_uri(const http_req *req);
/* The raw query string after '?', or "" if none. */
const char *http_req_query_string(const http_req *req);
/* A decoded query parameter (first occurrence), or NULL. "" for "?a" or "?a=". */
const char *http_req_query(const http_req *req, const char *name);
/* Iterates query parameters: i from 0 while it returns true. */
bool http_req_query_at(const http_req *req, size_t i, const char **name, const char **value);
/* A header value (case-insensitive name), or NULL. Repeated headers are joined with ", ". */
const char *http_req_header(const http_req *req, const char *name);
bool http_req_header_at(const http_req *req, size_t i, const char **name, const char **value);
/* Content-Length, or -1 when absent or chunked. */
int64_t http_req_content_length(const http_req *req);
/* The peer's address as text, e.g. "127.0.0.1". */
const char *http_req_peer(const http_req *req);
/* True once the peer has closed or the connection failed. */
bool http_req_closed(const http_req *req);
/* A per-request slot for the handler's state; never touched by the server. */
void http_req_set_data(http_req *req, void *data);
void *http_req_data(const http_req *req);

/* Names the request's route in metrics: a string that lives for the process (a literal),
 * from a small fixed set, never the raw path. Unset: "other". */
void http_req_set_route(http_req *req, const char *route);
/* Returns the entry of routes (NULL-terminated) equal to path, or "other". */
const char *http_route_of(const char *const *routes, const char *path);

/* The request's loop's event_base: I/O a handler starts there runs on this thread. */
struct event_base;
struct event_base *http_req_event_base(const http_req *req);
/* The handler's slot on the request's loop (what it keeps per loop thread, such as client
 * connections): NULL until it stores something; freed by opts.loop_data_free. */
void **http_req_loop_data(http_req *req);

/* ---- request body ---- */
/*
 * Called once the whole body is in memory. data is borrowed for the call and
 * NUL-terminated past len. Not called if the body exceeded the limit (the
 * server answered 413) or the connection failed (then the request is dropped).
 */
typedef void (*http_body_fn)(http_req *req, const char *data, size_t len, void *arg);
void http_req_read_body(http_req *req, size_t limit, http_body_fn done, void *arg);

/*
 * Streaming: on_data is called for each piece as it arrives (data borrowed).
 * Returning false pauses reading (back-pressure) until http_req_resume_body().
 * on_end is called once with WFS_OK after the last piece, or with an error if
 * the connection failed or the body broke a limit. After an error on_end, the
 * handler must still end the response (it goes nowhere if the peer is gone).
 */
typedef bool (*http_data_fn)(http_req *req, const char *data, size_t len, void *arg);
typedef void (*http_end_fn)(http_req *req, wfs_err err, void *arg);
void http_req_stream_body(http_req *req, uint64_t limit, http_data_fn on_data, http_end_fn on_end,
			  void *arg);
void http_req_resume_body(http_req *req);

/* Runs fn(req, arg) on the request's loop thread soon. Any thread. */
typedef void (*http_defer_fn)(http_req *req, void *arg);
void http_req_defer(http_req *req, http_defer_fn fn, void *arg);

/* ---- response ---- */
/* Adds a response header (copied). Date, Server, Content-Length and Connection are automatic. */
void http_resp_header(http_req *req, const char *name, const char *value);
/* Sends a whole response; body copied. For HEAD the body is omitted but its length kept. */
void http_resp_send(http_req *req, int status, const void *body, size_t len);
/* Sends b's contents as application/json (Content-Type added) and frees nothing. */
void http_resp_send_json(http_req *req, int status, const buf *b);
/* {"error":"<message>"} with the given status. */
void http_resp_error(http_req *req, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Streaming: content_length >= 0 sets Content-Length, -1 uses chunked encoding. */
void http_resp_start(http_req *req, int status, int64_t content_length);
/* Queues data (copied). Returns false if the output buffer is above its high-water mark:
 * the caller should stop and wait for the drain callback. */
bool http_resp_write(http_req *req, const void *data, size_t len);
/*
 * Like http_resp_write, but takes data (malloc'ed; ownership moves): it is queued
 * without a copy and handed to bigbuf_put once sent or dropped (on the loop thread).
 */
bool http_resp_write_take(http_req *req, void *data, size_t len);
/* Called once when queued output falls below the low-water mark. */
typedef void (*http_drain_fn)(http_req *req, void *arg);
void http_resp_on_drain(http_req *req, http_drain_fn fn, void *arg);
/* Ends a streamed response. After this the request must not be touched. */
void http_resp_end(http_req *req);
/* Ends the response and closes the connection afterwards (e.g. on upstream failure mid-body). */
void http_resp_abort(http_req *req);

/* Reason phrase for a status code, e.g. "Not Found". */
const char *http_status_text(int status);

#endif
