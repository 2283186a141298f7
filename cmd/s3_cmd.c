/*
 * weedfs s3: the S3 gateway (s3/s3_server.h) and the catalog listener
 * (catalog/catalog_server.h) on its own port over the same filer and
 * identities. Here, above both layers, since s3/ knows nothing of catalog/.
 */
#include "config.h"
#include "s3_cmd.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "catalog/catalog_server.h"
#include "daemon.h"
#include "flags.h"
#include "security.h"
#include "log.h"
#include "s3/s3_server.h"
#include "util.h"

int s3_main(int argc, char **argv)
{
	struct s3_opts o;
	const char *level = "info";
	const char *security_file = NULL;
	struct s3_gateway *g;
	struct catalog_server *cat = NULL;
	int iceberg_port = 8181, lance_port = 9101;
	const char *s3_endpoint = "";
	char *endpoint = NULL;
	sigset_t set;
	wfs_err err;
	int rc;

	s3_opts_default(&o);
	const struct flag flags[] = {
		{"ip", FLAG_STRING, &o.ip, "address to bind"},
		{"port", FLAG_INT, &o.port, "S3 listen port"},
		{"filer", FLAG_STRING, &o.filer, "filer address host:port"},
		{"config", FLAG_STRING, &o.config,
		 "identities file (JSON; see weedfs-s3(1)); none: the gateway is open"},
		{"region", FLAG_STRING, &o.region, "the region signatures must name"},
		{"domainName", FLAG_STRING, &o.domain,
		 "domains (comma list) of virtual-hosted requests: Host <bucket>.<domain>"},
		{"threads", FLAG_INT, &o.threads, "HTTP loop threads (0 = cores)"},
		{"shortCircuit", FLAG_BOOL, &o.short_circuit,
		 "read blobs of volume servers on this host from their files (a Unix socket), not over HTTP"},
		{"chunkSizeMB", FLAG_INT, &o.chunk_mb,
		 "object data goes in chunks of this many MiB"},
		{"lifecycleSeconds", FLAG_INT, &o.lifecycle_s,
		 "seconds between passes that carry out lifecycle expiration (0: never)"},
		{"logging.flushSeconds", FLAG_INT, &o.logging_flush_s,
		 "seconds between deliveries of buffered access logs (bucket logging)"},
		{"inlineKB", FLAG_INT, &o.inline_kb,
		 "objects up to this many KiB (0..64) are kept in their filer entry"},
		{"uploadMemoryMB", FLAG_INT, &o.upload_mem_mb,
		 "MiB the uploads in progress may hold together; more wait their turn"},
		{"iceberg.port", FLAG_INT, &iceberg_port,
		 "catalog port (S3 Tables API; Iceberg REST), 0: no catalog"},
		{"lance.port", FLAG_INT, &lance_port,
		 "Lance Namespace REST catalog port, 0: none"},
		{"iceberg.s3Endpoint", FLAG_STRING, &s3_endpoint,
		 "the S3 endpoint the catalogs give clients (default http://<ip>:<port>)"},
		{"sse.keyFile", FLAG_STRING, &o.sse_key_file,
		 "SSE-S3 master keys, lines \"<id> <64 hex digits>\", the first current "
		 "(none: one generated and kept in the filer)"},
		{"sse.kmsKeys", FLAG_STRING, &o.sse_kms_keys,
		 "SSE-KMS key store (JSON: {\"default\": id, \"keys\": {id: base64 key}})"},
		{"metricsPort", FLAG_INT, &o.metrics_port,
		 "serve /metrics and the status page on this port (0 = none)"},
		{"iam.port", FLAG_INT, &o.iam_port,
		 "IAM API port (users, access keys, user policies; admin identities), 0: none"},
		{"security", FLAG_STRING, &security_file, SECURITY_FLAG_HELP},
		{"v", FLAG_STRING, &level, "log level: error, warn, info, debug"},
	};

	rc = daemon_parse_flags("s3", "Run an S3 gateway over a filer.", flags, ARRAY_LEN(flags),
				argc, argv, &level);
	if (rc >= 0)
		return rc;
	daemon_block_stop_signals(&set);
	g = s3_start(&o, &err);
	if (!g) {
		fprintf(stderr, "weedfs s3: could not start: %s\n", wfs_strerror(err));
		return 1;
	}
	if (iceberg_port > 0 || lance_port > 0) {
		struct catalog_opts co = {.ip = o.ip, .port = iceberg_port > 0 ? iceberg_port : -1,
					  .lance_port = lance_port, .filer = o.filer,
					  .config = o.config, .region = o.region};
		endpoint = *s3_endpoint ? xstrdup(s3_endpoint)
					: xasprintf("http://%s:%d",
						    strcmp(o.ip, "0.0.0.0") ? o.ip : "127.0.0.1",
						    s3_port(g));
		co.s3_endpoint = endpoint;
		cat = catalog_start(&co, &err);
		if (!cat) {
			fprintf(stderr, "weedfs s3: could not start the catalog: %s\n",
				wfs_strerror(err));
			s3_stop(g);
			return 1;
		}
	}
	daemon_wait_for_stop(&set);
	catalog_stop(cat);
	s3_stop(g);
	free(endpoint);
	return 0;
}
