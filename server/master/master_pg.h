/*
 * One PostgreSQL connection of the master (the lease, the shared sequence):
 * opened with its schema applied, reset in place when it breaks. Each user
 * owns its connection; libpq connections are not shared between threads.
 */
#ifndef WEEDFS_MASTER_PG_H
#define WEEDFS_MASTER_PG_H

#include <libpq-fe.h>
#include "err.h"

typedef struct master_pg master_pg;

/*
 * Connects to dsn (libpq conninfo or URI, copied) and runs schema (several
 * statements, may be NULL). NULL with *err = WFS_EUNAVAIL and the reason
 * logged when the server cannot be reached or refuses. Any one thread.
 */
master_pg *master_pg_open(const char *dsn, const char *schema, wfs_err *err);
/* NULL does nothing. */
void master_pg_close(master_pg *c);
/*
 * Runs sql with n text parameters; a result of PGRES_TUPLES_OK or
 * PGRES_COMMAND_OK (the caller PQclears it), or NULL after logging what
 * failed (what names the statement). Reconnects first if the connection broke.
 * The owning thread only.
 */
PGresult *master_pg_exec(master_pg *c, const char *what, const char *sql, int n,
			 const char *const *vals);

#endif
