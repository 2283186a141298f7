/*
 * The master daemon: tracks volume servers through heartbeats, assigns file
 * ids, grows volumes, answers lookups and redirects, runs vacuum and serves
 * the status endpoints (see docs/internal-protocol.md and the SeaweedFS
 * master API).
 */
#ifndef WEEDFS_MASTER_MASTER_H
#define WEEDFS_MASTER_MASTER_H

#include <stdbool.h>
#include "err.h"

/* Options; field names follow the command-line flags. */
struct master_opts {
	const char *ip;                  /* bind and advertised address */
	int port;                        /* 0 picks a free port */
	const char *mdir;                /* where the sequence file lives */
	long long volume_size_limit_mb;  /* -volumeSizeLimitMB */
	const char *default_replication; /* -defaultReplication */
	double garbage_threshold;        /* -garbageThreshold */
	int pulse_seconds;               /* -pulseSeconds */
	bool volume_preallocate;         /* -volumePreallocate */
	int threads;                     /* HTTP loop threads, 0 = cores */
	int repair_delay_seconds;        /* -repairDelaySeconds: 0 = no automatic repair */
	int repair_mbps;                 /* -repairMBps: a repair copy's rate limit, 0 = none */
	int metrics_port;                /* -metricsPort: a second /metrics port, 0 = none */
	const char *peers;               /* -peers: every master's host:port, "" = single master */
	const char *postgres_dsn;        /* -postgres.dsn: the lease and sequence database */
	double lease_seconds;            /* -leaseSeconds: the leader lease's length */
};

struct master;

/* Fills the defaults of the CLI contract. */
void master_opts_default(struct master_opts *o);
/*
 * Validates o, opens the sequence, binds and starts serving; returns once
 * listening (logs "master listening on ip:port"). NULL with *err on failure.
 * Borrows nothing from o after returning. Call from one control thread.
 */
struct master *master_start(const struct master_opts *o, wfs_err *err);
/* The bound port. */
int master_port(const struct master *m);
/* Stops serving, finishes background work and frees. NULL does nothing. Control thread. */
void master_stop(struct master *m);

/* `weedfs master`: argv[0] is the first flag. Returns the exit status. Main thread. */
int master_main(int argc, char **argv);

#endif
