/*
 * Prometheus metrics: a process-wide registry of counters, gauges and
 * histograms with label sets, and its text exposition (format 0.0.4).
 *
 * A family (metric) is registered once by name (registering it again returns
 * the same one); metric_at() finds or creates the series for a set of label
 * values. Finding an existing series and updating it take no lock (an
 * open-addressed table of atomic pointers and atomic values), so the hot path
 * of a request is a hash, a probe and an atomic add. Creating a series takes
 * the registry lock; a family holds at most METRIC_SERIES_MAX series, beyond
 * which updates go to a sink that is never written (label values must come
 * from a small fixed set: routes, status codes, operation names; never paths).
 *
 * Values that are cheaper to compute at scrape time (volume sizes, free slots,
 * subscribers) come from collectors: functions called by metrics_write() with
 * an emitter they hand their samples to.
 */
#ifndef WEEDFS_METRICS_H
#define WEEDFS_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "err.h"

#define METRIC_SERIES_MAX 384
#define METRIC_LABELS_MAX 4

enum metric_type { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM };

typedef struct metric metric;
typedef struct metric_series metric_series;

/*
 * labels: the label names, comma separated ("method,route,code"), or NULL.
 * A histogram's bounds are its buckets' upper bounds, ascending (+Inf is
 * implicit); NULL/0 takes the request-latency buckets (seconds).
 */
metric *metric_counter(const char *name, const char *help, const char *labels);
metric *metric_gauge(const char *name, const char *help, const char *labels);
metric *metric_histogram(const char *name, const char *help, const char *labels,
			 const double *bounds, size_t nbounds);

/* The series for the family's label values, in the order of its label names. */
metric_series *metric_at(metric *m, ...);
metric_series *metric_at_v(metric *m, const char *const *values);

void metric_add(metric_series *s, uint64_t n); /* counter */
static inline void metric_inc(metric_series *s) { metric_add(s, 1); }
void metric_set(metric_series *s, double v); /* gauge */
void metric_gauge_add(metric_series *s, double d);
void metric_observe(metric_series *s, double v); /* histogram */
/* A series' value (counter or gauge); a histogram's count. For tests and status pages. */
double metric_value(metric_series *s);

/* ---- collectors (scrape-time values) ---- */
typedef struct metric_emit metric_emit;
/*
 * One sample: value with label name/value pairs ending in NULL, e.g.
 * metric_emit_sample(e, "weedfs_volume_size_bytes", "...", METRIC_GAUGE, 42.0,
 *                    "volume", "3", NULL). Samples of one name are written together.
 */
void metric_emit_sample(metric_emit *e, const char *name, const char *help,
			enum metric_type type, double value, ...) __attribute__((sentinel));
typedef void (*metric_collect_fn)(metric_emit *e, void *ctx);
typedef struct metric_collector metric_collector;
metric_collector *metrics_collector_add(metric_collect_fn fn, void *ctx);
/* Waits for a scrape running fn to finish. NULL does nothing. */
void metrics_collector_remove(metric_collector *c);

/* The whole registry in the text format; appended to out. */
void metrics_write(buf *out);
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Appends v with \\, \" and \n escaped (a label value). */
void metrics_escape_label(buf *out, const char *v);

/* ---- the metrics port ---- */
/* A status page: appends JSON (json = true) or HTML to out. */
typedef void (*metrics_page_fn)(buf *out, bool json, void *ctx);
typedef struct metrics_server metrics_server;
/*
 * Serves GET /metrics, and /status (JSON) and / (HTML) when page is given, on
 * host:port. port must be 1..65535 (0 means no metrics port: callers skip
 * this). The flag is named in errors ("-metricsPort").
 */
metrics_server *metrics_server_start(const char *host, int port, metrics_page_fn page,
				     void *ctx, wfs_err *err);
int metrics_server_port(const metrics_server *ms);
void metrics_server_stop(metrics_server *ms);
/* True once a metrics server runs in this process: daemons record per-request metrics then. */
bool metrics_enabled(void);
/* A daemon serving /metrics itself (the master) turns recording on. */
void metrics_enable(void);
/* Whether host:port can be bound now (a daemon about to fork checks before it). Logs why not. */
bool metrics_port_probe(const char *host, int port);
/* Checks -metricsPort's value: 0..65535; logs and returns false otherwise. */
bool metrics_port_valid(int port);

/* Seconds since the process started (status pages). */
double metrics_uptime_seconds(void);
/* Appends s with &, <, >, " escaped. */
void metrics_html_escape(buf *out, const char *s);

/*
 * A daemon's status page: {"Daemon":..., "<key>":"<value>"..., "Peers":[...],
 * "Version":..., "UptimeSeconds":...} as JSON, or the same as an HTML table.
 */
struct metrics_status_item {
	const char *key, *value;
};
void metrics_status_write(buf *out, bool json, const char *daemon,
			  const struct metrics_status_item *items, size_t nitems,
			  const char *const *peers, size_t npeers);
/* The HTML page's head (title, style) and end, for pages of their own. */
void metrics_html_begin(buf *out, const char *title);
void metrics_html_end(buf *out);

#endif
