/*
 * weedfs mini: one node, one data directory, no external service. Starts the
 * master (metadata under DIR/master), a volume server (volumes under
 * DIR/volume) and a filer (SQLite store in DIR/filer) inside this process,
 * then waits for SIGINT or SIGTERM. With -mount.dir it also mounts the filer
 * there: a weedfs-mount child process (the binary next to this one), stopped
 * with SIGTERM (it commits dirty data and unmounts) before the servers stop.
 */
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "catalog/catalog_server.h"
#include "daemon.h"
#include "filer/filer.h"
#include "s3/s3_server.h"
#include "log.h"
#include "security.h"
#include "metrics.h"
#include "server/master/master.h"
#include "mini.h"
#include "util.h"
#include "server/volume/volume_server.h"

extern char **environ;

/* Starts weedfs-mount (next to /proc/self/exe) on dir against the filer. 0 on failure. */
static pid_t mount_spawn(const char *dir, const char *ip, int fport, const char *level,
			 bool short_circuit)
{
	char exe[PATH_MAX], *slash, *bin = NULL, *filer = NULL, *lv = NULL;
	char *argv[7], *sec = NULL;
	posix_spawnattr_t attr;
	sigset_t none, def;
	ssize_t n;
	pid_t pid = 0;
	int rc;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return 0;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return 0;
	*slash = '\0';
	bin = xasprintf("%s/weedfs-mount", exe);
	filer = xasprintf("-filer=%s:%d", ip, fport);
	lv = xasprintf("-v=%s", level);
	argv[0] = bin;
	argv[1] = filer;
	argv[2] = lv;
	argv[3] = short_circuit ? "-shortCircuit=true" : "-shortCircuit=false";
	argv[4] = (char *)dir;
	argv[5] = NULL;
	if (security_path()) /* the mount is a client of this node: the same keys and certificates */
		argv[5] = sec = xasprintf("-security=%s", security_path());
	argv[6] = NULL;
	/* mini blocks SIGTERM/SIGINT for its own waiting; the child must get them */
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGINT);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &def);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawn(&pid, bin, NULL, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	if (rc) {
		log_error("could not start %s: %s", bin, strerror(rc));
		pid = 0;
	} else {
		log_info("mounting the filer on %s (weedfs-mount pid %d)", dir, (int)pid);
	}
	free(bin);
	free(filer);
	free(lv);
	free(sec);
	return pid;
}

/* SIGTERM, then waits up to 60 s (dirty data is being committed), then SIGKILL. */
static void mount_stop(pid_t pid)
{
	struct timespec ts = {0, 20 * 1000 * 1000};
	int status;

	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	for (int i = 0; i < 60 * 50; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid || (r < 0 && errno != EINTR))
			return;
		nanosleep(&ts, NULL);
	}
	log_warn("weedfs-mount (pid %d) did not stop in 60 s: killed", (int)pid);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* "ip:port" in a static buffer (for the ready line). */
static const char *mini_s3_url(const char *ip, int port)
{
	static char url[300];
	snprintf(url, sizeof(url), "%s:%d", ip, port);
	return url;
}

/*
 * Starts the S3 gateway over the filer: identities from config, plus an admin
 * one from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, and the buckets named in
 * S3_BUCKET (comma list) made now. NULL on failure (logged).
 */
static struct s3_gateway *mini_s3_start(const char *ip, int fport, struct s3_opts *so)
{
	struct s3_gateway *g;
	char *filer = xasprintf("%s:%d", ip, fport);
	const char *buckets = getenv("S3_BUCKET");
	wfs_err err;

	so->ip = ip;
	so->filer = filer;
	so->admin_access_key = getenv("AWS_ACCESS_KEY_ID");
	so->admin_secret_key = getenv("AWS_SECRET_ACCESS_KEY");
	g = s3_start(so, &err);
	if (!g)
		log_error("could not start the S3 gateway: %s", wfs_strerror(err));
	else if (buckets && *buckets && s3_make_buckets(g, buckets))
		log_warn("S3_BUCKET: some buckets could not be made (see above)");
	free(filer);
	return g;
}

/* The catalog beside the gateway, with its identities; NULL on failure (logged). */
static struct catalog_server *mini_catalog_start(const char *ip, int fport, int port,
						 int lance_port, const struct s3_opts *so,
						 int s3port)
{
	char *filer = xasprintf("%s:%d", ip, fport);
	char *s3 = xasprintf("http://%s", mini_s3_url(ip, s3port));
	struct catalog_opts co = {.ip = ip, .port = port > 0 ? port : -1,
				  .lance_port = lance_port, .filer = filer, .config = so->config,
				  .region = so->region, .s3_endpoint = s3,
				  .admin_access_key = so->admin_access_key,
				  .admin_secret_key = so->admin_secret_key};
	struct catalog_server *c;
	wfs_err err;

	c = catalog_start(&co, &err);
	if (!c)
		log_error("could not start the catalog: %s", wfs_strerror(err));
	free(filer);
	free(s3);
	return c;
}

static const char mini_summary[] =
	"Runs a master, a volume server, a filer and an S3 gateway in one process: a one-node "
	"cluster\n"
	"for development, tests and small deployments. Master metadata goes to\n"
	"DIR/master, volumes to DIR/volume and the filer's SQLite store to DIR/filer.";

/* The components' addresses, for the status page of -metricsPort (set before it starts). */
struct mini_status {
	char master[300], volume[300], filer[300], s3[300];
};

static void mini_page(buf *out, bool json, void *ctx)
{
	const struct mini_status *st = ctx;
	const struct metrics_status_item items[] = {
		{"Master", st->master},
		{"Volume", st->volume},
		{"Filer", st->filer},
		{"S3", st->s3},
	};
	metrics_status_write(out, json, "mini", items, ARRAY_LEN(items), NULL, 0);
}

int mini_main(int argc, char **argv)
{
	const char *dir = NULL, *ip = "127.0.0.1", *level = "info", *replication = "000";
	const char *security_file = NULL;
	const char *mount_dir = NULL;
	bool encrypt = false;
	struct s3_opts so; /* -s3.* flags */
	pid_t mount_pid = 0;
	bool s3_on = true, short_circuit = true;
	int mport = 9333, vport = 8080, fport = 8888, volume_max = 0, pulse = 5, max_mb = 4;
	int iceberg_port = 8181, lance_port = 9101, metrics_port = 0;
	long long size_limit_mb = 30000;
	struct mini_status st;
	metrics_server *ms = NULL;
	const struct flag flags[] = {
		{"dir", FLAG_STRING, &dir, "data directory (required)"},
		{"ip", FLAG_STRING, &ip, "address to bind and advertise"},
		{"master.port", FLAG_INT, &mport, "master port"},
		{"volume.port", FLAG_INT, &vport, "volume server port"},
		{"filer.port", FLAG_INT, &fport, "filer port"},
		{"filer.maxMB", FLAG_INT, &max_mb, "filer: chunk size of uploads in MiB"},
		{"encryptVolumeData", FLAG_BOOL, &encrypt,
		 "filer: encrypt every new chunk (AES-256-GCM, its key in the entry)"},
		{"volume.max", FLAG_INT, &volume_max, "maximum volumes, 0 = from free disk space"},
		{"volumeSizeLimitMB", FLAG_I64, &size_limit_mb,
		 "a volume stops taking writes at this size"},
		{"defaultReplication", FLAG_STRING, &replication,
		 "replication when none is asked for"},
		{"pulseSeconds", FLAG_INT, &pulse, "heartbeat interval"},
		{"mount.dir", FLAG_STRING, &mount_dir,
		 "also mount the filer at this directory (weedfs-mount)"},
		{"s3", FLAG_BOOL, &s3_on, "serve S3 over the filer (-s3=false: do not)"},
		{"s3.port", FLAG_INT, &so.port, "S3 port"},
		{"s3.config", FLAG_STRING, &so.config,
		 "S3 identities file (weedfs-s3(1)); AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
		 "in the environment add an admin identity, S3_BUCKET (comma list) buckets"},
		{"s3.domainName", FLAG_STRING, &so.domain,
		 "S3 domains (comma list) for virtual-hosted requests: Host <bucket>.<domain>"},
		{"iam.port", FLAG_INT, &so.iam_port,
		 "IAM API port beside S3 (users, access keys, user policies), 0: none"},
		{"s3.sse.keyFile", FLAG_STRING, &so.sse_key_file,
		 "SSE-S3 master key file (weedfs-s3(1) -sse.keyFile)"},
		{"s3.sse.kmsKeys", FLAG_STRING, &so.sse_kms_keys,
		 "SSE-KMS key store (weedfs-s3(1) -sse.kmsKeys)"},
		{"s3.uploadMemoryMB", FLAG_INT, &so.upload_mem_mb,
		 "MiB the S3 uploads in progress may hold together; more wait their turn"},
		{"s3.logging.flushSeconds", FLAG_INT, &so.logging_flush_s,
		 "seconds between deliveries of S3 access logs (weedfs-s3(1))"},
		{"iceberg.port", FLAG_INT, &iceberg_port,
		 "catalog port (S3 Tables API; Iceberg REST) beside S3, 0: no catalog"},
		{"lance.port", FLAG_INT, &lance_port,
		 "Lance Namespace REST catalog port beside S3, 0: none"},
		{"shortCircuit", FLAG_BOOL, &short_circuit,
		 "readers (filer, S3, the mount) take blobs straight from the volume files"},
		{"metricsPort", FLAG_INT, &metrics_port,
		 "serve /metrics of every component and a status page on this port (0 = none)"},
		{"security", FLAG_STRING, &security_file, SECURITY_FLAG_HELP},
		{"v", FLAG_STRING, &level, "log level: error, warn, info or debug"},
	};
	struct master_opts mo;
	struct volume_server_opts vo;
	struct master *m = NULL;
	struct volume_server *vs = NULL;
	struct filer_opts fo;
	struct filer *fl = NULL;
	struct s3_gateway *gw = NULL;
	struct catalog_server *cat = NULL;
	char *filer_dir = NULL, catalog_url[320] = "";
	char *master_dir = NULL, *volume_dir = NULL, *mserver = NULL, max[16];
	sigset_t stop;
	wfs_err err = WFS_OK;
	int rc;

	s3_opts_default(&so);
	rc = daemon_parse_flags("mini", mini_summary, flags, ARRAY_LEN(flags), argc, argv, &level);
	if (rc >= 0)
		return rc;
	rc = 1;
	memset(&st, 0, sizeof(st));
	so.short_circuit = short_circuit;
	if (!dir || !*dir) {
		fprintf(stderr, "weedfs mini: -dir is required (see weedfs mini -h)\n");
		return 2;
	}

	master_dir = xasprintf("%s/master", dir);
	volume_dir = xasprintf("%s/volume", dir);
	filer_dir = xasprintf("%s/filer", dir);
	if (!mkdir_p(master_dir) || !mkdir_p(volume_dir) || !mkdir_p(filer_dir)) {
		log_error("could not create data directories under -dir \"%s\": %s", dir,
			  strerror(errno));
		goto out;
	}
	if (!metrics_port_valid(metrics_port) ||
	    (metrics_port && !metrics_port_probe(ip, metrics_port)))
		goto out;
	if (metrics_port)
		metrics_enable(); /* the components count their requests from the start */
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
	vo.short_circuit = short_circuit;
	vs = volume_server_start(&vo, &err);
	if (!vs) {
		log_error("could not start the volume server: %s", wfs_strerror(err));
		goto out;
	}
	filer_opts_default(&fo);
	fo.ip = ip;
	fo.port = fport;
	fo.master = mserver;
	fo.dir = filer_dir;
	fo.max_mb = max_mb;
	fo.encrypt_volume_data = encrypt;
	fo.default_replication = "";
	fo.short_circuit = short_circuit;
	fl = filer_start(&fo, &err);
	if (!fl) {
		log_error("could not start the filer: %s", wfs_strerror(err));
		goto out;
	}
	if (s3_on) {
		gw = mini_s3_start(ip, filer_port(fl), &so);
		if (!gw)
			goto out;
	}
	if (gw && (iceberg_port > 0 || lance_port > 0)) {
		cat = mini_catalog_start(ip, filer_port(fl), iceberg_port, lance_port, &so,
					 s3_port(gw));
		if (!cat)
			goto out;
		if (catalog_port(cat))
			snprintf(catalog_url, sizeof(catalog_url), "catalog http://%s:%d, ", ip,
				 catalog_port(cat));
		if (catalog_lance_port(cat))
			snprintf(catalog_url + strlen(catalog_url),
				 sizeof(catalog_url) - strlen(catalog_url),
				 "Lance namespace http://%s:%d, ", ip, catalog_lance_port(cat));
	}
	snprintf(st.master, sizeof(st.master), "%s:%d", ip, master_port(m));
	snprintf(st.volume, sizeof(st.volume), "%s:%d", ip, volume_server_port(vs));
	snprintf(st.filer, sizeof(st.filer), "%s:%d", ip, filer_port(fl));
	if (gw)
		snprintf(st.s3, sizeof(st.s3), "%s", mini_s3_url(ip, s3_port(gw)));
	if (metrics_port && !(ms = metrics_server_start(ip, metrics_port, mini_page, &st, &err)))
		goto out;
	log_info("mini ready: master http://%s:%d, volume server http://%s:%d, "
		 "filer http://%s:%d, %s%s%s%sdata in %s",
		 ip, master_port(m), ip, volume_server_port(vs), ip, filer_port(fl),
		 gw ? "S3 http://" : "", gw ? mini_s3_url(ip, s3_port(gw)) : "", gw ? ", " : "",
		 catalog_url, dir);
	if (mount_dir && *mount_dir) {
		mount_pid = mount_spawn(mount_dir, ip, filer_port(fl), level, short_circuit);
		if (!mount_pid)
			goto out;
	}

	daemon_wait_for_stop(&stop);
	rc = 0;
out:
	/* the mount first: it commits its dirty data through the filer */
	mount_stop(mount_pid);
	metrics_server_stop(ms);
	catalog_stop(cat);
	s3_stop(gw);
	/* The filer first (it uses both), then the volume server, so its last heartbeat
	 * still finds the master. */
	filer_stop(fl);
	volume_server_stop(vs);
	master_stop(m);
	free(mserver);
	free(master_dir);
	free(volume_dir);
	free(filer_dir);
	return rc;
}
