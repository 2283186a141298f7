/*
 * hlc, an HTTP/1.1 client on a libevent loop: requests to one peer made from
 * that loop's thread without blocking it, answered through a callback on the
 * same thread. The gateway's loops use it for the filer requests of their
 * fastest answers (no worker hop, no curl); anything long or streamed stays
 * on the synchronous client (http_client.h) on workers.
 *
 * DESIGN: one hlc per (loop, peer). It keeps the connections that finished a
 * request for the next one (keep-alive, at most max_idle), opens another when
 * all are busy, and parses answers with hrp (http_response_parser.h), bodies
 * collected whole up to a limit. A request that fails on a kept-alive
 * connection before any byte of its answer came back is sent once more on a
 * new connection: the peer may have closed it while idle. So requests must
 * be safe to repeat (lookups).
 *
 * Threads: every call on the loop's thread; an hlc shares nothing.
 */
#ifndef WEEDFS_HTTP_LOOP_CLIENT_H
#define WEEDFS_HTTP_LOOP_CLIENT_H

#include <stddef.h>
#include "err.h"

struct event_base;
typedef struct hlc hlc;

/*
 * Called once per request on the loop: err WFS_OK with the answer's status
 * and body (borrowed for the call, NUL-terminated), WFS_EUNAVAIL when the peer
 * cannot be reached or broke off, WFS_ETIMEDOUT, WFS_ECORRUPT for an answer
 * that is not HTTP or over the body limit, WFS_EINTERNAL when the hlc is
 * freed with the request in flight (then touch nothing the loop owns).
 */
typedef void (*hlc_done_fn)(void *arg, wfs_err err, int status, const char *body, size_t len);

/*
 * A client of "host:port" (numeric or resolved now, which may block: make it
 * once) on base; NULL with *err when the address does not resolve.
 */
hlc *hlc_new(struct event_base *base, const char *host_port, wfs_err *err);
/* Closes its connections; requests in flight are answered WFS_EINTERNAL. NULL does nothing. */
void hlc_free(hlc *c);

/*
 * Sends method path with body (len bytes, copied; NULL for none) and the
 * given header lines ("Name: value\r\n" each, or NULL). The answer's body may
 * be at most max_body bytes; timeout_ms bounds the wait for it.
 */
void hlc_request(hlc *c, const char *method, const char *path, const char *headers,
		 const void *body, size_t len, size_t max_body, long timeout_ms, hlc_done_fn done,
		 void *arg);

#endif
