/*
 * http_fetch: blocking HTTP/1.1 requests for the hot path of blobs, reads and
 * writes between the gateway, filer or mount and the volume servers
 * (blob_client.h); every other request uses http_client.h (libcurl).
 * - An answer's body is received straight into the result's buffer: libcurl
 *   hands a body over from its own receive buffer, a second copy of every
 *   byte after the kernel's (12% of the gateway's CPU on 64 MiB GETs).
 * - A request's body goes out with the head in one sendmsg() from the
 *   caller's buffer: libcurl copies an upload through its 64 KiB buffer and
 *   asks for 100 Continue first, a round trip per chunk.
 *
 * DESIGN: connections are kept alive in a small pool shared by the threads
 * of one fetcher, keyed by "host:port"; a request takes one and gives it back
 * after a complete answer that allows it, and one left idle for keep_idle_ms
 * is closed. hrp (http_response_parser.h)
 * parses; once the head is in and the body's length is known, recv() targets
 * the body buffer and hrp is fed those bytes in place (its body callback
 * finds them already where they belong). A request that fails on a kept-alive
 * connection before any byte of the answer arrived is sent once more on a new
 * connection (the server may have closed it while idle), so only idempotent
 * methods belong here (GET, HEAD, PUT, DELETE). An answer that arrives while
 * the body is still being sent (a server refusing it early) is read and
 * returned. timeout_ms bounds the connect and each wait for the peer, and the
 * exchange gives up once that much time has passed in all.
 *
 * Threads: any; a fetcher is shared (its pool has a lock), a request is not.
 */
#ifndef WEEDFS_HTTP_FETCH_H
#define WEEDFS_HTTP_FETCH_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "http_client.h"

typedef struct http_fetcher http_fetcher;

/*
 * A fetcher keeping at most max_idle idle connections, each for at most
 * keep_idle_ms (a thread closes older ones, so an idle process holds no
 * connections for long). Never NULL.
 */
http_fetcher *http_fetcher_new(size_t max_idle, long keep_idle_ms);
/* Closes the idle connections and frees f; no request may be running. NULL does nothing. */
void http_fetcher_free(http_fetcher *f);

/*
 * GET http://<host_port><path> (path starts with '/') with the extra header
 * lines in headers ("Name: value" each, NULL-terminated; may be NULL). Like
 * http_request: WFS_OK when an answer arrived (any status: res->status; body
 * and raw header lines in res, the body NUL-terminated), WFS_EUNAVAIL when the
 * peer cannot be reached, breaks off or does not answer HTTP, WFS_ETIMEDOUT,
 * WFS_ETOOBIG for a declared body (Content-Length) over max_body bytes (a
 * chunked one over it is WFS_EUNAVAIL). res must be initialised
 * (http_result_init) and is reset first.
 */
wfs_err http_fetch_get(http_fetcher *f, const char *host_port, const char *path,
		       const char *const *headers, long timeout_ms, uint64_t max_body,
		       struct http_result *res);
/*
 * The same for any idempotent method, with a body of len bytes when body is
 * not NULL (sent with its Content-Length; borrowed for the call).
 */
wfs_err http_fetch_request(http_fetcher *f, const char *method, const char *host_port,
			   const char *path, const char *const *headers, const void *body,
			   size_t len, long timeout_ms, uint64_t max_body, struct http_result *res);

#endif
