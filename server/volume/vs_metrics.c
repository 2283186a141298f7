/*
 * The volume server's metrics and status page: the volumes' gauges are read
 * at scrape time (a collector over the store's list), the per-request ones
 * come from lib/http_server under the route vs_route() names. -metricsPort
 * serves /metrics, /status and the HTML page; the main port serves only the
 * HTML page (its other paths are file ids).
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "metrics.h"
#include "util.h"
#include "vs_int.h"

#define VS_DIRS_MAX 16

const char *vs_route(const char *path)
{
	static const char *const routes[] = {"/healthz",
					     "/status",
					     "/stats/disk",
					     "/",
					     "/ui/index.html",
					     "/admin/assign_volume",
					     "/admin/delete_collection",
					     "/admin/volume/delete",
					     "/admin/volume/readonly",
					     "/admin/vacuum/check",
					     "/admin/vacuum/compact",
					     "/admin/vacuum/commit",
					     "/admin/vacuum/cleanup",
					     "/admin/volume/sync",
					     NULL};
	const char *r = http_route_of(routes, path);
	if (strcmp(r, "other"))
		return r;
	/* an admin call we do not list, or a needle: never the path itself */
	return !strncmp(path, "/admin/", 7) ? "/admin" : "fid";
}

static void vs_collect(metric_emit *e, void *ctx)
{
	struct volume_server *vs = ctx;
	volume **list;
	size_t n = volume_store_list(vs->store, &list);
	double ro = 0;

	for (size_t i = 0; i < n; i++) {
		struct volume_info in;
		char id[16];
		volume_get_info(list[i], &in);
		snprintf(id, sizeof(id), "%" PRIu32, in.id);
		metric_emit_sample(e, "weedfs_volume_volume_size_bytes", "A volume's .dat size.",
				   METRIC_GAUGE, (double)in.size, "volume", id, "collection",
				   in.collection, NULL);
		metric_emit_sample(e, "weedfs_volume_volume_files",
				   "Live files (needles) in a volume.", METRIC_GAUGE,
				   (double)in.live_count, "volume", id, "collection",
				   in.collection, NULL);
		ro += in.read_only;
		volume_unref(list[i]);
	}
	free(list);
	metric_emit_sample(e, "weedfs_volume_volumes", "Volumes on this server.", METRIC_GAUGE,
			   (double)n, NULL);
	metric_emit_sample(e, "weedfs_volume_read_only_volumes", "Read-only volumes on this server.",
			   METRIC_GAUGE, ro, NULL);
	metric_emit_sample(e, "weedfs_volume_max_volumes", "Volume slots of this server.",
			   METRIC_GAUGE, (double)volume_store_max_volumes(vs->store), NULL);
	metric_emit_sample(e, "weedfs_volume_free_volume_slots", "Volume slots not used yet.",
			   METRIC_GAUGE,
			   (double)MAX(0, volume_store_max_volumes(vs->store) - (int)n), NULL);
}

void vs_status_html(struct volume_server *vs, buf *out)
{
	struct volume_store_disk_status ds[VS_DIRS_MAX];
	size_t nd = volume_store_disk_status(vs->store, ds, VS_DIRS_MAX);
	volume **list;
	size_t n = volume_store_list(vs->store, &list);

	metrics_html_begin(out, "weedfs volume server");
	buf_append_str(out, "<p>");
	metrics_html_escape(out, vs->self);
	buf_append_str(out, ", master ");
	metrics_html_escape(out, vs->mserver ? vs->mserver : "(none)");
	buf_printf(out, ", %zu of %d volume slots used</p>\n<h2>Disks</h2>\n<table>\n"
			"<tr><th>Dir</th><th>All</th><th>Used</th><th>Free</th></tr>\n",
		   n, volume_store_max_volumes(vs->store));
	for (size_t i = 0; i < nd; i++) {
		buf_append_str(out, "<tr><td>");
		metrics_html_escape(out, ds[i].dir);
		buf_printf(out, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64
				"</td></tr>\n",
			   ds[i].all, ds[i].used, ds[i].free);
	}
	buf_append_str(out, "</table>\n<h2>Volumes</h2>\n<table>\n<tr><th>Id</th><th>Collection"
			    "</th><th>Size</th><th>Files</th><th>Deleted</th><th>ReadOnly</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		struct volume_info in;
		volume_get_info(list[i], &in);
		buf_printf(out, "<tr><td>%" PRIu32 "</td><td>", in.id);
		metrics_html_escape(out, in.collection);
		buf_printf(out, "</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td><td>%" PRIu64
				"</td><td>%s</td></tr>\n",
			   in.size, in.live_count, in.delete_count, in.read_only ? "true" : "false");
		volume_unref(list[i]);
	}
	free(list);
	buf_append_str(out, "</table>\n");
	metrics_html_end(out);
}

/* /status on the metrics port is the main port's /status; "/" the HTML page. */
static void vs_page(buf *out, bool json, void *ctx)
{
	struct volume_server *vs = ctx;
	if (json)
		vs_status_json(vs, out);
	else
		vs_status_html(vs, out);
}

bool vs_metrics_start(struct volume_server *vs, int port, wfs_err *err)
{
	if (!metrics_port_valid(port)) {
		*err = WFS_EINVAL;
		return false;
	}
	if (port) {
		vs->metrics = metrics_server_start(vs->ip, port, vs_page, vs, err);
		if (!vs->metrics)
			return false;
	}
	if (metrics_enabled())
		vs->collector = metrics_collector_add(vs_collect, vs);
	return true;
}

void vs_metrics_stop(struct volume_server *vs)
{
	metrics_server_stop(vs->metrics);
	metrics_collector_remove(vs->collector);
	vs->metrics = NULL;
	vs->collector = NULL;
}
