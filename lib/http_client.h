/*
 * HTTP client on libcurl: one easy handle per thread, reused so connections
 * stay alive. Synchronous; call it from worker threads, never from a server
 * loop thread (it would stall every connection on that loop).
 */
#ifndef WEEDFS_HTTP_CLIENT_H
#define WEEDFS_HTTP_CLIENT_H

#include <stddef.h>
#include "buf.h"
#include "err.h"

struct http_result {
	int status;  /* 0 if no response arrived */
	buf body;    /* response body */
	buf headers; /* raw "Name: value\r\n" lines of the final response */
};

/* Call once at process start, before any thread uses the client. */
void http_client_global_init(void);

/*
 * Performs method on url (e.g. "http://127.0.0.1:8080/3,01637037d6"). body may
 * be NULL. headers is a NULL-terminated list of "Name: value" strings, or NULL.
 * Returns WFS_OK when a response arrived (any status; check res->status),
 * WFS_EUNAVAIL when the peer could not be reached, WFS_ETIMEDOUT on timeout.
 * res must be initialised with http_result_init and freed with http_result_free.
 */
wfs_err http_request(const char *method, const char *url, const char *const *headers,
		     const void *body, size_t len, long timeout_ms, struct http_result *res);
/* GET shorthand. */
wfs_err http_get(const char *url, long timeout_ms, struct http_result *res);

void http_result_init(struct http_result *res);
void http_result_free(struct http_result *res);
/* A response header's value (case-insensitive), copied into out; false if absent. */
int http_result_header(const struct http_result *res, const char *name, char *out, size_t outlen);

#endif
