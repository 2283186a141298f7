/*
 * hrp, the HTTP response parser: incremental parsing of HTTP/1.x responses on
 * one client connection, without sockets, so unit tests and a fuzz target can
 * drive it with raw bytes. (The prefix is short because http_resp_* is the
 * server's response API in http_server.h.)
 *
 * DESIGN: http-parser (HTTP_RESPONSE mode) does the tokenising and the body
 * framing (Content-Length, chunked with extensions and trailers, body until
 * the connection closes). This module adds what a client needs on top: it
 * skips interim 1xx responses, knows that a response to HEAD and a 204 or 304
 * have no body, bounds the status line + headers and the body, hands the
 * caller only complete headers (through a callback, so nothing is stored that
 * nobody asked for), and collects the body into one reused buffer or passes it
 * to a callback. It stops right after each final response, so bytes of a
 * pipelined next response stay unconsumed until hrp_begin() is called
 * again. Steady state allocates nothing: a parser is made once per connection.
 *
 * http-parser as distributions build it is lenient (not HTTP_PARSER_STRICT):
 * it checks only the 'H' of "HTTP/" (this module checks the rest), and it does
 * not check the CRLF after chunk data or spaces in header names; framing still
 * follows the declared sizes.
 *
 * <http_parser.h> is not included here: its enum http_method clashes with the
 * one in http_server.h.
 *
 * Threads: a parser is used by one thread at a time; parsers share nothing.
 */
#ifndef WEEDFS_HTTP_RESPONSE_PARSER_H
#define WEEDFS_HTTP_RESPONSE_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hrp_parser hrp_parser;

/*
 * Called once per header of the final response (not for 1xx or trailers), once
 * the whole header has arrived. name and value are NUL-terminated, the value
 * without surrounding blanks, and valid only during the call. Returning false
 * fails the response (hrp_error() says "rejected by caller"). When a response
 * fails, which of its headers were reported before depends on how the input
 * was split.
 */
typedef bool (*hrp_header_fn)(void *arg, const char *name, size_t nlen, const char *value,
			      size_t vlen);
/* Called with each piece of body, in order; returning false fails the response. */
typedef bool (*hrp_body_fn)(void *arg, const char *data, size_t len);

struct hrp_opts {
	/* Bytes of status line, header names and values (and, separately, trailers);
	 * more is an error. 0 means 65536. */
	size_t max_header;
	hrp_header_fn on_header; /* NULL: headers are not reported */
	hrp_body_fn on_body;     /* NULL: the body is collected (see hrp_body) */
	void *arg;               /* passed to both callbacks */
};

/* Flags of hrp_begin(). */
enum {
	HRP_HEAD = 1,    /* the request was HEAD: the response has no body */
	HRP_DISCARD = 2, /* count body bytes but neither keep nor pass them */
};

enum hrp_result {
	HRP_MORE,  /* everything given was consumed; the response is not complete */
	HRP_DONE,  /* a final response is complete; bytes after it were not consumed */
	HRP_ERROR, /* malformed or over a limit (see hrp_error); close the connection */
};

/* A new parser (never NULL); o may be NULL for defaults. Call hrp_begin() before feeding. */
hrp_parser *hrp_new(const struct hrp_opts *o);
/* Releases r; NULL is a no-op. */
void hrp_free(hrp_parser *r);
/*
 * Prepares r for the response to the next request: flags HRP_*, and the
 * largest body accepted (a longer one is an error; a declared Content-Length
 * over it fails as soon as the head is complete). Forgets the previous
 * response and any failure. Call it before each response, also after a
 * reconnect; on a kept-alive connection, unconsumed bytes are fed again after.
 */
void hrp_begin(hrp_parser *r, unsigned flags, uint64_t max_body);
/*
 * Feeds len bytes of the connection; *used says how many were consumed (all of
 * them unless the result is DONE or ERROR). Any split of the input works.
 * After DONE or ERROR, feeding returns the same result and consumes nothing
 * until hrp_begin().
 */
enum hrp_result hrp_feed(hrp_parser *r, const char *data, size_t len, size_t *used);
/*
 * The connection was closed by the server. DONE if that ends a response whose
 * body runs until close (or one already complete), else ERROR.
 */
enum hrp_result hrp_eof(hrp_parser *r);

/* Status code of the final response; 0 until its head is complete. */
int hrp_status(const hrp_parser *r);
/* After DONE: whether the connection may carry another request. */
bool hrp_keep_alive(const hrp_parser *r);
/* The declared Content-Length of the final response, -1 if none (chunked or until close). */
int64_t hrp_content_length(const hrp_parser *r);
/* Body bytes received so far (also when discarded or passed to on_body). */
uint64_t hrp_body_len(const hrp_parser *r);
/*
 * The collected body (when on_body is NULL and HRP_DISCARD not given),
 * NUL-terminated, never NULL; owned by r, valid until the next begin/free.
 */
const char *hrp_body(const hrp_parser *r, size_t *len);
/* Body bytes known to follow in the current body part (Content-Length or chunk), else 0:
 * lets a caller size its next read. */
uint64_t hrp_body_pending(const hrp_parser *r);
/* A short static description of the failure after ERROR, else NULL. */
const char *hrp_error(const hrp_parser *r);

#endif
