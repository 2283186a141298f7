/*
 * DESIGN: the master's database calls are few and small (a lease renewal
 * every lease/3, a key batch every SEQUENCE_BATCH keys), so one plain
 * connection per user with PQexecParams is enough: no pool, no prepared
 * statements. A failure is logged once when it starts and once when it ends,
 * not on every retry.
 */
#include "config.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "server/master/master_pg.h"
#include "util.h"

struct master_pg {
	PGconn *pg;
	bool failing; /* the last call failed (logged once) */
};

static void quiet_notice(void *arg, const char *msg) { log_debug("postgres: %s", msg); }

master_pg *master_pg_open(const char *dsn, const char *schema, wfs_err *err)
{
	/* dsn last, so a connect_timeout inside it overrides ours */
	const char *keys[] = {"connect_timeout", "dbname", NULL};
	const char *vals[] = {"3", dsn, NULL};
	master_pg *c = xcalloc(1, sizeof(*c));
	PGresult *r;

	c->pg = PQconnectdbParams(keys, vals, 1);
	if (!c->pg || PQstatus(c->pg) != CONNECTION_OK) {
		log_error("could not connect to PostgreSQL (-postgres.dsn): %s",
			  c->pg ? PQerrorMessage(c->pg) : "out of memory");
		goto fail;
	}
	PQsetNoticeProcessor(c->pg, quiet_notice, NULL);
	if (schema) {
		r = PQexec(c->pg, schema);
		if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) {
			log_error("could not create the master's tables in PostgreSQL: %s",
				  PQresultErrorMessage(r));
			PQclear(r);
			goto fail;
		}
		PQclear(r);
	}
	*err = WFS_OK;
	return c;
fail:
	master_pg_close(c);
	*err = WFS_EUNAVAIL;
	return NULL;
}

void master_pg_close(master_pg *c)
{
	if (!c)
		return;
	PQfinish(c->pg);
	free(c);
}

PGresult *master_pg_exec(master_pg *c, const char *what, const char *sql, int n,
			 const char *const *vals)
{
	PGresult *r = NULL;
	ExecStatusType st;

	if (PQstatus(c->pg) != CONNECTION_OK) {
		PQreset(c->pg);
		if (PQstatus(c->pg) != CONNECTION_OK) {
			if (!c->failing)
				log_warn("postgres unavailable (%s): %s", what,
					 PQerrorMessage(c->pg));
			c->failing = true;
			return NULL;
		}
		PQsetNoticeProcessor(c->pg, quiet_notice, NULL);
	}
	r = PQexecParams(c->pg, sql, n, NULL, vals, NULL, NULL, 0);
	st = PQresultStatus(r);
	if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
		if (c->failing)
			log_info("postgres available again (%s)", what);
		c->failing = false;
		return r;
	}
	if (!c->failing)
		log_warn("postgres %s failed: %s", what,
			 r ? PQresultErrorMessage(r) : PQerrorMessage(c->pg));
	c->failing = true;
	PQclear(r);
	return NULL;
}
