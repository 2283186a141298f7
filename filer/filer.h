/*
 * The filer daemon: the SeaweedFS filer HTTP API (paths, directories,
 * uploads cut into chunks on volume servers, listings, moves, deletes) over
 * the filer store (store.h). See docs/api-filer.md and weedfs-filer(1).
 */
#ifndef WEEDFS_FILER_FILER_H
#define WEEDFS_FILER_FILER_H

#include <stdbool.h>
#include "err.h"

/* Options; field names follow the command-line flags. */
struct filer_opts {
	const char *ip;                  /* -ip: bind and advertised address */
	int port;                        /* -port; 0 picks a free port */
	const char *master;              /* -master host:port */
	const char *dir;                 /* -dir: the SQLite database is DIR/filer.db */
	const char *store;               /* -store: "sqlite" or "postgres" */
	const char *postgres_dsn;        /* -postgres.dsn: libpq URI or conninfo */
	int max_mb;                      /* -maxMB: chunk size of uploads, 1..256 */
	const char *collection;          /* -collection: default collection, "" = none */
	const char *default_replication; /* -defaultReplication, "" = the master's */
	int threads;                     /* -threads: HTTP loop threads, 0 = cores */
	int tus_expire_seconds;          /* -tus.expireSeconds: idle TUS uploads expire */
	int assign_lease_seconds;        /* -assignLeaseSeconds: assigned ids unreferenced this
					    long are deleted */
	int lock_grace_seconds;          /* -lockGraceSeconds: after a start, only locks held
					    before are granted (their mounts reclaim them) */
	bool short_circuit;              /* -shortCircuit: local volume servers' files (default) */
	int metrics_port;                /* -metricsPort: /metrics and status there; 0 = none */
	bool encrypt_volume_data;        /* -encryptVolumeData: seal every new chunk (chunk_cipher.h) */
};

struct filer;

/* Fills the defaults of the CLI contract. */
void filer_opts_default(struct filer_opts *o);
/*
 * Validates o, opens the store, binds and starts serving; returns once
 * listening (logs "filer listening on ip:port"). NULL with *err on failure.
 * Borrows nothing from o after returning. Control thread.
 */
struct filer *filer_start(const struct filer_opts *o, wfs_err *err);
/* The bound port. Any thread. */
int filer_port(const struct filer *f);
/* Stops serving, finishes queued work, closes the store, frees. NULL does nothing.
 * Control thread. */
void filer_stop(struct filer *f);

/* `weedfs filer`: argv[0] is the first flag. Returns the exit status. Main thread. */
int filer_main(int argc, char **argv);

#endif
