/*
 * weedfs mini: one node, one data directory, no external service. Starts the
 * master (metadata under DIR/master) and a volume server (volumes under
 * DIR/volume) inside this process, then waits for SIGINT or SIGTERM.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include "daemon.h"
#include "log.h"
#include "master/master.h"
#include "mini.h"
#include "util.h"
#include "volume/volume_server.h"

static const char mini_summary[] =
	"Runs a master and a volume server in one process: a one-node cluster for\n"
	"development, tests and small deployments. Metadata goes to DIR/master and\n"
	"volumes to DIR/volume.";

int mini_main(int argc, char **argv)
{
	const char *dir = NULL, *ip = "127.0.0.1", *level = "info", *replication = "000";
	int mport = 9333, vport = 8080, volume_max = 0, pulse = 5;
	long long size_limit_mb = 30000;
	const struct flag flags[] = {
		{"dir", FLAG_STRING, &dir, "data directory (required)"},
		{"ip", FLAG_STRING, &ip, "address to bind and advertise"},
		{"master.port", FLAG_INT, &mport, "master port"},
		{"volume.port", FLAG_INT, &vport, "volume server port"},
		{"volume.max", FLAG_INT, &volume_max, "maximum volumes, 0 = from free disk space"},
		{"volumeSizeLimitMB", FLAG_I64, &size_limit_mb, "a volume stops taking writes at this size"},
		{"defaultReplication", FLAG_STRING, &replication, "replication when none is asked for"},
		{"pulseSeconds", FLAG_INT, &pulse, "heartbeat interval"},
		{"v", FLAG_STRING, &level, "log level: error, warn, info or debug"},
	};
	struct master_opts mo;
	struct volume_server_opts vo;
	struct master *m = NULL;
	struct volume_server *vs = NULL;
	char *master_dir = NULL, *volume_dir = NULL, *mserver = NULL, max[16];
	sigset_t stop;
	wfs_err err = WFS_OK;
	int rc;

	rc = daemon_parse_flags("mini", mini_summary, flags, ARRAY_LEN(flags), argc, argv, &level);
	if (rc >= 0)
		return rc;
	rc = 1;
	if (!dir || !*dir) {
		fprintf(stderr, "weedfs mini: -dir is required (see weedfs mini -h)\n");
		return 2;
	}

	master_dir = xasprintf("%s/master", dir);
	volume_dir = xasprintf("%s/volume", dir);
	if (!mkdir_p(master_dir) || !mkdir_p(volume_dir)) {
		log_error("could not create data directories under \"%s\"", dir);
		goto out;
	}
	daemon_block_stop_signals(&stop);

	master_opts_default(&mo);
	mo.ip = ip;
	mo.port = mport;
	mo.mdir = master_dir;
	mo.volume_size_limit_mb = size_limit_mb;
	mo.default_replication = replication;
	mo.pulse_seconds = pulse;
	m = master_start(&mo, &err);
	if (!m) {
		log_error("could not start the master: %s", wfs_strerror(err));
		goto out;
	}

	mserver = xasprintf("%s:%d", ip, master_port(m));
	snprintf(max, sizeof(max), "%d", volume_max);
	volume_server_opts_default(&vo);
	vo.ip = ip;
	vo.port = vport;
	vo.dir = volume_dir;
	vo.max = max;
	vo.mserver = mserver;
	vo.pulse_seconds = pulse;
	vs = volume_server_start(&vo, &err);
	if (!vs) {
		log_error("could not start the volume server: %s", wfs_strerror(err));
		goto out;
	}
	log_info("mini ready: master http://%s:%d, volume server http://%s:%d, data in %s", ip,
		 master_port(m), ip, volume_server_port(vs), dir);

	daemon_wait_for_stop(&stop);
	rc = 0;
out:
	/* Volume server first, so its last heartbeat still finds the master. */
	volume_server_stop(vs);
	master_stop(m);
	free(mserver);
	free(master_dir);
	free(volume_dir);
	return rc;
}
