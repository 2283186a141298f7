/*
 * The master's leader lease in PostgreSQL (several masters, -peers): one row
 * of weedfs_master_lease names the holder, an expiry on the database's clock
 * and an epoch that grows with every new holder. See docs/master-ha.md.
 */
#ifndef WEEDFS_MASTER_LEADER_H
#define WEEDFS_MASTER_LEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"

typedef struct leader leader;

/*
 * Connects to dsn (a libpq conninfo string or URI), creates the table if
 * missing and starts the lease thread, which tries to take the lease for
 * self ("host:port") at once. lease_ns is the lease length. NULL with *err
 * (WFS_EUNAVAIL: the database cannot be reached) and a logged reason on
 * failure. Borrows nothing after returning. Control thread.
 */
leader *leader_start(const char *dsn, const char *self, uint64_t lease_ns, wfs_err *err);
/* Stops the thread and frees; the lease is left to expire. NULL does nothing. Control thread. */
void leader_stop(leader *l);

/*
 * True while this master holds the lease by its own monotonic clock: the
 * last renewal that succeeded was sent less than a lease ago. *epoch (may be
 * NULL) gets the epoch held. Checked before every leader action. Any thread.
 */
bool leader_is_me(leader *l, int64_t *epoch);
/* Nanoseconds since this master took the lease it holds now; 0 when it holds none. Any thread. */
uint64_t leader_age_ns(leader *l);
/* The known leader's "host:port" ("" when none is known). Any thread. */
void leader_current(leader *l, char *out, size_t outlen);
/* This master's own "host:port", borrowed for l's lifetime. */
const char *leader_self(const leader *l);

#endif
