/*
 * The exclusive admin lease `weedfs shell` takes (`lock`) before it changes the
 * cluster, so two operators cannot move the same volume at once.
 */
#ifndef WEEDFS_MASTER_ADMIN_LOCK_H
#define WEEDFS_MASTER_ADMIN_LOCK_H

#include <stdbool.h>
#include "http_server.h"

/* Seconds a lease lasts unless renewed; the shell renews every few seconds. */
#define ADMIN_LEASE_SEC 10

typedef struct admin_locks admin_locks;

admin_locks *admin_locks_new(void);
/* NULL does nothing. */
void admin_locks_free(admin_locks *l);
/*
 * Answers /admin/lease (GET: who holds it; POST: take or renew) and
 * /admin/release (POST) when path is one of them; false otherwise. Loop thread.
 */
bool admin_locks_handle(admin_locks *l, http_req *req, const char *path);

#endif
