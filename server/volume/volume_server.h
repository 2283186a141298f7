/*
 * The volume server daemon: serves needles over HTTP (SeaweedFS volume API),
 * replicates writes, heartbeats to the master and answers its admin calls
 * (docs/internal-protocol.md).
 */
#ifndef WEEDFS_VOLUME_SERVER_H
#define WEEDFS_VOLUME_SERVER_H

#include "err.h"

/* Options; field names follow the command-line flags. */
struct volume_server_opts {
	const char *ip;          /* bind and advertised address */
	int port;                /* 0 picks a free port */
	const char *public_url;  /* -publicUrl; NULL or "" = ip:port */
	const char *dir;         /* -dir: comma-separated directories */
	const char *max;         /* -max: comma-separated counts per dir ("0" = from free space) */
	const char *mserver;     /* -mserver host:port; NULL or "" = no master (standalone) */
	const char *data_center; /* -dataCenter */
	const char *rack;        /* -rack */
	int pulse_seconds;       /* -pulseSeconds */
	int file_size_limit_mb;  /* -fileSizeLimitMB */
	int threads;             /* HTTP loop threads, 0 = cores */
	bool short_circuit;      /* -shortCircuit: serve local readers descriptors (default on) */
	int metrics_port;        /* -metricsPort: /metrics and status there; 0 = none */
};

struct volume_server;

/* Fills the defaults of the CLI contract. */
void volume_server_opts_default(struct volume_server_opts *o);
/*
 * Opens the store, binds and starts serving and heartbeating; returns once
 * listening (logs "volume listening on ip:port"). NULL with *err on failure.
 * Borrows nothing from o after returning. Call from one control thread.
 */
struct volume_server *volume_server_start(const struct volume_server_opts *o, wfs_err *err);
/* The bound port. */
int volume_server_port(const struct volume_server *vs);
/* Stops the heartbeat, the HTTP server and background work, closes volumes, frees. NULL does
 * nothing. Control thread. */
void volume_server_stop(struct volume_server *vs);

/* `weedfs volume`: argv[0] is the first flag. Returns the exit status. Main thread. */
int volume_main(int argc, char **argv);

#endif
