/*
 * The masters a client knows ("host:port,host:port,..."), with failover: a
 * request goes to the master that answered last, and on a connection error
 * or a 5xx to the next one, which is remembered when it answers. Used by
 * every caller of the master (the blob client, the volume server's
 * heartbeat and lookups, the filer's status calls), so the rule lives here.
 */
#ifndef WEEDFS_CLIENT_MASTER_LIST_H
#define WEEDFS_CLIENT_MASTER_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include "err.h"
#include "http_client.h"

#define MASTER_ADDR_MAX 256

typedef struct master_list master_list;

/*
 * Parses spec (copied): one or more comma-separated host:port entries, each
 * with a non-empty host and a port 1..65535. NULL with a message in msg on a
 * malformed spec. Any thread.
 */
master_list *master_list_new(const char *spec, char *msg, size_t msglen);
/* NULL does nothing. */
void master_list_free(master_list *ml);
/* The spec as given, borrowed for ml's lifetime. */
const char *master_list_spec(const master_list *ml);
size_t master_list_count(const master_list *ml);
/* Entry i (< count), borrowed for ml's lifetime. */
const char *master_list_at(const master_list *ml, size_t i);
/* The master requests go to first, copied into out. Any thread. */
void master_list_current(master_list *ml, char *out, size_t outlen);
/* Sends the next requests to addr first (a leader named in an answer); ignored unless
 * addr is in the list. Any thread. */
void master_list_prefer(master_list *ml, const char *addr);

/*
 * method on http://<master><path_query>: the current master first, then each
 * other once while the answer is a connection failure or a 5xx. Returns as
 * http_request does, for the last master tried; the one that answered below
 * 500 becomes current. used (may be NULL) gets the master of the answer.
 * Blocks: never from a server loop thread.
 */
wfs_err master_list_request(master_list *ml, const char *method, const char *path_query,
			    const char *const *headers, const void *body, size_t len,
			    long timeout_ms, struct http_result *res, char *used, size_t usedlen);

#endif
