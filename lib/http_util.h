/* Pieces of HTTP that servers and clients share: ranges, dates, MIME types, URL coding, multipart.
 */
#ifndef WEEDFS_HTTP_UTIL_H
#define WEEDFS_HTTP_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "buf.h"
#include "err.h"

struct http_range {
	uint64_t start; /* first byte */
	uint64_t len;   /* bytes, >= 1 */
};

#define HTTP_MAX_RANGES 16

/*
 * Parses a Range header ("bytes=0-99", "bytes=100-", "bytes=-50", several
 * comma-separated) against an entity of size bytes, clipping ends to size.
 * Returns WFS_OK with *n >= 1, WFS_ERANGE when no range is satisfiable, or
 * WFS_EINVAL when the header is malformed or lists more than max ranges.
 */
wfs_err http_parse_range(const char *header, uint64_t size, struct http_range *out, int max,
			 int *n);

/* Formats t as an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") into out (>= 30 bytes). */
void http_date_format(time_t t, char *out, size_t outlen);
/* Parses an HTTP date (IMF-fixdate, RFC 850 or asctime); false if malformed. */
bool http_date_parse(const char *s, time_t *out);
/* An ISO 8601 UTC time as S3 writes it, "2026-12-01T12:00:00.000Z" (fraction optional). */
bool iso8601_parse(const char *s, time_t *out);

/* A MIME type for a file name by its extension, or NULL if unknown. */
const char *http_mime_by_ext(const char *name);

/* Percent-decodes n bytes of s into out (appended); '+' becomes ' ' when plus_is_space.
 * Returns false on a malformed escape or a decoded NUL byte. */
bool url_decode(const char *s, size_t n, bool plus_is_space, buf *out);
/*
 * The value of parameter name in raw_query (without '?'; may be NULL),
 * percent-decoded with '+' as a space: "" when it has no '=' or a malformed
 * escape, NULL when absent. Caller frees.
 */
char *url_query_param(const char *raw_query, const char *name);
/* Percent-encodes s for a URL path (keeps unreserved characters and '/'). */
void url_encode_path(const char *s, buf *out);
/* Percent-encodes s for a query component (keeps only unreserved characters). */
void url_encode_query(const char *s, buf *out);

/* "host:port" ("[v6]:port" too) resolved into *ss (its length in *len); false when it
 * has no port or does not resolve. May block on DNS. */
struct sockaddr_storage;
bool host_port_resolve(const char *host_port, struct sockaddr_storage *ss, unsigned *len);

/*
 * Streaming multipart/form-data parser. Feed the body in pieces of any size;
 * callbacks fire as parts are recognised. Part headers are bounded (8 KiB).
 */
typedef struct multipart multipart;
struct multipart_part {
	const char *name;         /* form field name, or "" */
	const char *filename;     /* file name from Content-Disposition, or NULL */
	const char *content_type; /* part Content-Type, or NULL */
};
struct multipart_cb {
	/* A part begins; returning false stops parsing with WFS_EINVAL. */
	bool (*on_part)(const struct multipart_part *part, void *arg);
	/* Bytes of the current part's body; returning false stops with WFS_EINVAL. */
	bool (*on_data)(const char *data, size_t len, void *arg);
	/* The current part ended. */
	void (*on_part_end)(void *arg);
};
/* Returns NULL (WFS_EINVAL) if content_type is not multipart with a usable boundary. */
multipart *multipart_new(const char *content_type, const struct multipart_cb *cb, void *arg);
/* Feeds len bytes; WFS_EINVAL once the body is malformed (the parser then stays failed). */
wfs_err multipart_feed(multipart *m, const char *data, size_t len);
/* Checks the closing boundary was seen; WFS_EINVAL for a truncated body. */
wfs_err multipart_finish(multipart *m);
void multipart_free(multipart *m);

#endif
