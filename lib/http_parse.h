/*
 * Internal to the HTTP server: incremental parsing of requests on one
 * connection, without sockets, so a fuzz target can drive it with raw bytes.
 *
 * DESIGN: http-parser does the tokenising; this module enforces the limits
 * (URI, header bytes, header count), keeps every string of a request head in
 * one reused buffer (no per-header malloc), joins repeated headers, splits
 * and decodes path and query, and pauses the parser at the two points where
 * the server must wait: after a head (until the handler asks for the body)
 * and after a message (until its response has ended, so pipelined requests
 * run one at a time).
 *
 * <http_parser.h> is not included here: its enum http_method clashes with
 * the one in http_server.h.
 */
#ifndef WEEDFS_HTTP_PARSE_H
#define WEEDFS_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"

/* Same order as enum http_method in http_server.h (checked there). */
enum hp_method { HP_GET, HP_HEAD, HP_POST, HP_PUT, HP_DELETE, HP_OPTIONS, HP_PATCH, HP_OTHER };

#define HP_MAX_HEADERS 256

struct hp_kv {
	const char *name;
	const char *value;
};

enum hp_event {
	HP_EV_NEED_MORE, /* every byte consumed; feed more */
	HP_EV_HEAD,      /* a request head is complete (see msg_done for a body-less request) */
	HP_EV_PAUSED,    /* on_body asked to pause; feed again to continue */
	HP_EV_DONE,      /* the request's body is complete */
	HP_EV_ERROR      /* malformed or over a limit; see error_status */
};

/* Called with each piece of body; returning false pauses (HP_EV_PAUSED). */
typedef bool (*hp_body_fn)(void *arg, const char *data, size_t len);

struct hp_raw {
	uint32_t noff, nlen, voff, vlen;
};

typedef struct http_parse {
	struct http_parser *p; /* owned */
	size_t max_header, max_uri;
	hp_body_fn on_body;
	void *body_arg;

	/* The current head; strings point into strs, valid until http_parse_next(). */
	int method;             /* enum hp_method */
	const char *method_str; /* static */
	const char *uri;        /* as sent */
	const char *path;       /* percent-decoded, without query */
	const char *query;      /* raw, "" if none */
	struct hp_kv *headers;
	size_t nheaders;
	struct hp_kv *params; /* decoded query parameters */
	size_t nparams;
	int64_t content_length; /* -1 if absent or chunked */
	bool chunked;
	bool keep_alive;
	bool expect_continue;
	bool has_body;
	int http_major, http_minor;

	bool head_done;   /* head parsed (fields above valid) */
	bool msg_done;    /* whole request including body parsed */
	int error_status; /* 400, 413, 414 or 431 after HP_EV_ERROR */

	/* private */
	buf strs;           /* every string of the head, NUL-separated */
	struct hp_raw *raw; /* header offsets into strs while parsing */
	size_t nraw, raw_cap, kv_cap, param_cap;
	size_t uri_len, head_bytes, raw_bytes;
	int last_cb; /* 0 none, 1 field, 2 value */
	bool failed;
} http_parse;

/* Prepares hp for a new connection. Limits as in http_server_opts. */
void http_parse_init(http_parse *hp, size_t max_header, size_t max_uri);
/* Releases hp's storage. */
void http_parse_free(http_parse *hp);
/* Forgets the current request (keeping storage) so the next head can be fed.
 * Call after HP_EV_DONE. */
void http_parse_next(http_parse *hp);
/*
 * Feeds up to len bytes (len > 0); returns how many were consumed and sets
 * *ev. Unconsumed bytes must be fed again later. After HP_EV_HEAD, feeding
 * continues with the body (on_body); after HP_EV_DONE, call http_parse_next()
 * before feeding more. After HP_EV_ERROR the parser stays failed.
 */
size_t http_parse_feed(http_parse *hp, const char *data, size_t len, enum hp_event *ev);

#endif
