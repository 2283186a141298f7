/*
 * DESIGN
 * - The registry is a list of families under one mutex, taken only to
 *   register a family, create a series, add or remove a collector, and to
 *   scrape. Families and series live until the process exits: daemons keep
 *   pointers to them, and a restarted daemon in the same process (tests,
 *   mini) finds its families again by name.
 * - A family's series sit in an open-addressed table of atomic pointers
 *   (METRIC_TABLE slots, load under 3/4). Lookup hashes the label values and
 *   probes without a lock; a miss takes the mutex, probes again and publishes
 *   the new series with a release store, so a reader sees it whole.
 * - Values are 64-bit atomics: counters count integers; gauges and a
 *   histogram's sum hold a double's bits (updated by compare-and-swap);
 *   a histogram's buckets are non-cumulative counts and its count is their
 *   sum, so _count always equals the +Inf bucket.
 */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http_server.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "util.h"

#define METRIC_TABLE 512 /* power of two, > METRIC_SERIES_MAX * 4 / 3 */

struct metric_series {
	const struct metric *fam;
	uint64_t hash;
	metric_series *next; /* creation order (under the registry lock) */
	char *values[METRIC_LABELS_MAX];
	_Atomic uint64_t v;   /* counter; gauge's double bits */
	_Atomic uint64_t sum; /* histogram: double bits */
	_Atomic uint64_t buckets[];
};

struct metric {
	struct metric *next;
	char *name, *help;
	enum metric_type type;
	size_t nlabels;
	char *labels[METRIC_LABELS_MAX];
	size_t nbounds;
	double *bounds;
	size_t nseries;
	metric_series *first, *last;
	_Atomic(metric_series *) table[METRIC_TABLE];
	metric_series *sink; /* updates beyond METRIC_SERIES_MAX */
};

struct metric_collector {
	struct metric_collector *next;
	metric_collect_fn fn;
	void *ctx;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static metric *families, *families_last;
static metric_collector *collectors;
static atomic_bool enabled;
static uint64_t start_ns;

__attribute__((constructor)) static void metrics_init(void) { start_ns = time_mono_ns(); }

static const double latency_bounds[] = {0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
					0.05,   0.1,    0.25,  0.5,    1,     2.5,  5,
					10,     30};

static uint64_t dbits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}

static double bitsd(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

/* ---- registration ---- */

static size_t split_labels(const char *labels, char **out)
{
	size_t n = 0;
	const char *p = labels;
	while (p && *p) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (n == METRIC_LABELS_MAX)
			fatal("metric: more than %d labels in \"%s\"", METRIC_LABELS_MAX, labels);
		if (len)
			out[n++] = xstrndup(p, len);
		p = c ? c + 1 : NULL;
	}
	return n;
}

static metric_series *series_new(const metric *m)
{
	size_t nb = m->type == METRIC_HISTOGRAM ? m->nbounds + 1 : 0;
	metric_series *s = xcalloc(1, sizeof(*s) + nb * sizeof(s->buckets[0]));
	s->fam = m;
	return s;
}

static metric *family_get(const char *name, const char *help, enum metric_type type,
			  const char *labels, const double *bounds, size_t nbounds)
{
	metric *m;
	pthread_mutex_lock(&reg_lock);
	for (m = families; m; m = m->next)
		if (!strcmp(m->name, name))
			break;
	if (m) {
		pthread_mutex_unlock(&reg_lock);
		if (m->type != type)
			fatal("metric %s registered with two types", name);
		return m;
	}
	m = xcalloc(1, sizeof(*m));
	m->name = xstrdup(name);
	m->help = xstrdup(help ? help : "");
	m->type = type;
	m->nlabels = split_labels(labels, m->labels);
	if (type == METRIC_HISTOGRAM) {
		if (!bounds || !nbounds) {
			bounds = latency_bounds;
			nbounds = ARRAY_LEN(latency_bounds);
		}
		m->nbounds = nbounds;
		m->bounds = xmalloc(nbounds * sizeof(double));
		memcpy(m->bounds, bounds, nbounds * sizeof(double));
	}
	m->sink = series_new(m);
	if (families_last)
		families_last->next = m;
	else
		families = m;
	families_last = m;
	pthread_mutex_unlock(&reg_lock);
	return m;
}

metric *metric_counter(const char *name, const char *help, const char *labels)
{
	return family_get(name, help, METRIC_COUNTER, labels, NULL, 0);
}

metric *metric_gauge(const char *name, const char *help, const char *labels)
{
	return family_get(name, help, METRIC_GAUGE, labels, NULL, 0);
}

metric *metric_histogram(const char *name, const char *help, const char *labels,
			 const double *bounds, size_t nbounds)
{
	return family_get(name, help, METRIC_HISTOGRAM, labels, bounds, nbounds);
}

/* ---- series lookup ---- */

static uint64_t values_hash(const metric *m, const char *const *values)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a, a 0xff between values */
	for (size_t i = 0; i < m->nlabels; i++) {
		for (const unsigned char *p = (const unsigned char *)values[i]; *p; p++)
			h = (h ^ *p) * 1099511628211ull;
		h = (h ^ 0xff) * 1099511628211ull;
	}
	return h;
}

static bool series_matches(const metric *m, const metric_series *s, uint64_t h,
			   const char *const *values)
{
	if (s->hash != h)
		return false;
	for (size_t i = 0; i < m->nlabels; i++)
		if (strcmp(s->values[i], values[i]))
			return false;
	return true;
}

/* The slot holding the series, or the empty slot where it would go. */
static _Atomic(metric_series *) *probe(metric *m, uint64_t h, const char *const *values)
{
	for (size_t i = h & (METRIC_TABLE - 1);; i = (i + 1) & (METRIC_TABLE - 1)) {
		metric_series *s = atomic_load_explicit(&m->table[i], memory_order_acquire);
		if (!s || series_matches(m, s, h, values))
			return &m->table[i];
	}
}

metric_series *metric_at_v(metric *m, const char *const *values)
{
	uint64_t h = values_hash(m, values);
	_Atomic(metric_series *) *slot = probe(m, h, values);
	metric_series *s = atomic_load_explicit(slot, memory_order_acquire);

	if (s)
		return s;
	pthread_mutex_lock(&reg_lock);
	slot = probe(m, h, values); /* another thread may have added it */
	s = atomic_load_explicit(slot, memory_order_acquire);
	if (!s && m->nseries >= METRIC_SERIES_MAX) {
		if (m->nseries++ == METRIC_SERIES_MAX)
			log_warn("metric %s: more than %d label sets; dropping new ones", m->name,
				 METRIC_SERIES_MAX);
		s = m->sink;
	} else if (!s) {
		s = series_new(m);
		s->hash = h;
		for (size_t i = 0; i < m->nlabels; i++)
			s->values[i] = xstrdup(values[i]);
		if (m->last)
			m->last->next = s;
		else
			m->first = s;
		m->last = s;
		m->nseries++;
		atomic_store_explicit(slot, s, memory_order_release);
	}
	pthread_mutex_unlock(&reg_lock);
	return s;
}

metric_series *metric_at(metric *m, ...)
{
	const char *values[METRIC_LABELS_MAX];
	va_list ap;
	va_start(ap, m);
	for (size_t i = 0; i < m->nlabels; i++) {
		values[i] = va_arg(ap, const char *);
		if (!values[i])
			values[i] = "";
	}
	va_end(ap);
	return metric_at_v(m, values);
}

/* ---- updates ---- */

void metric_add(metric_series *s, uint64_t n)
{
	atomic_fetch_add_explicit(&s->v, n, memory_order_relaxed);
}

void metric_set(metric_series *s, double v)
{
	atomic_store_explicit(&s->v, dbits(v), memory_order_relaxed);
}

static void atomic_add_double(_Atomic uint64_t *a, double d)
{
	uint64_t old = atomic_load_explicit(a, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(a, &old, dbits(bitsd(old) + d),
						      memory_order_relaxed, memory_order_relaxed))
		;
}

void metric_gauge_add(metric_series *s, double d) { atomic_add_double(&s->v, d); }

void metric_observe(metric_series *s, double v)
{
	const metric *m = s->fam;
	size_t i = 0;
	while (i < m->nbounds && v > m->bounds[i])
		i++;
	atomic_fetch_add_explicit(&s->buckets[i], 1, memory_order_relaxed);
	atomic_add_double(&s->sum, v);
}

static uint64_t hist_count(const metric_series *s)
{
	uint64_t n = 0;
	for (size_t i = 0; i <= s->fam->nbounds; i++)
		n += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
	return n;
}

double metric_value(metric_series *s)
{
	uint64_t v = atomic_load_explicit(&s->v, memory_order_relaxed);
	switch (s->fam->type) {
	case METRIC_COUNTER:
		return (double)v;
	case METRIC_GAUGE:
		return bitsd(v);
	default:
		return (double)hist_count(s);
	}
}

/* ---- exposition ---- */

void metrics_escape_label(buf *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\')
			buf_append(out, "\\\\", 2);
		else if (*v == '"')
			buf_append(out, "\\\"", 2);
		else if (*v == '\n')
			buf_append(out, "\\n", 2);
		else
			buf_append_byte(out, *v);
	}
}

/* HELP text: only \\ and \n are escaped. */
static void escape_help(buf *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\')
			buf_append(out, "\\\\", 2);
		else if (*v == '\n')
			buf_append(out, "\\n", 2);
		else
			buf_append_byte(out, *v);
	}
}

static void write_double(buf *out, double v)
{
	if (isnan(v))
		buf_append_str(out, "NaN");
	else if (isinf(v))
		buf_append_str(out, v > 0 ? "+Inf" : "-Inf");
	else if (v > -9007199254740992.0 && v < 9007199254740992.0 && v == (double)(int64_t)v)
		buf_printf(out, "%.0f", v);
	else
		buf_printf(out, "%.17g", v);
}

static void write_head(buf *out, const char *name, const char *help, enum metric_type type)
{
	static const char *const types[] = {"counter", "gauge", "histogram"};
	buf_printf(out, "# HELP %s ", name);
	escape_help(out, help);
	buf_printf(out, "\n# TYPE %s %s\n", name, types[type]);
}

/* {a="x",b="y"} with an extra le="..." when le is given; nothing for no labels. */
static void write_labels(buf *out, const metric *m, const metric_series *s, const char *le)
{
	if (!m->nlabels && !le)
		return;
	buf_append_byte(out, '{');
	for (size_t i = 0; i < m->nlabels; i++) {
		buf_printf(out, "%s%s=\"", i ? "," : "", m->labels[i]);
		metrics_escape_label(out, s->values[i]);
		buf_append_byte(out, '"');
	}
	if (le)
		buf_printf(out, "%sle=\"%s\"", m->nlabels ? "," : "", le);
	buf_append_byte(out, '}');
}

static void write_histogram(buf *out, const metric *m, const metric_series *s)
{
	uint64_t cum = 0;
	char le[32];
	for (size_t i = 0; i <= m->nbounds; i++) {
		cum += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
		if (i < m->nbounds)
			snprintf(le, sizeof(le), "%g", m->bounds[i]);
		else
			snprintf(le, sizeof(le), "+Inf");
		buf_printf(out, "%s_bucket", m->name);
		write_labels(out, m, s, le);
		buf_printf(out, " %" PRIu64 "\n", cum);
	}
	buf_printf(out, "%s_sum", m->name);
	write_labels(out, m, s, NULL);
	buf_append_byte(out, ' ');
	write_double(out, bitsd(atomic_load_explicit(&s->sum, memory_order_relaxed)));
	buf_printf(out, "\n%s_count", m->name);
	write_labels(out, m, s, NULL);
	buf_printf(out, " %" PRIu64 "\n", cum);
}

static void write_family(buf *out, const metric *m)
{
	write_head(out, m->name, m->help, m->type);
	for (const metric_series *s = m->first; s; s = s->next) {
		if (m->type == METRIC_HISTOGRAM) {
			write_histogram(out, m, s);
			continue;
		}
		buf_append_str(out, m->name);
		write_labels(out, m, s, NULL);
		buf_append_byte(out, ' ');
		write_double(out, metric_value((metric_series *)s));
		buf_append_byte(out, '\n');
	}
}

/* A collector family being gathered: its samples' lines. */
struct emit_fam {
	char *name, *help;
	enum metric_type type;
	buf lines;
};

struct metric_emit {
	struct emit_fam *fams;
	size_t n, cap;
};

void metric_emit_sample(metric_emit *e, const char *name, const char *help,
			enum metric_type type, double value, ...)
{
	struct emit_fam *f = NULL;
	const char *k;
	bool first = true;
	va_list ap;

	for (size_t i = 0; i < e->n && !f; i++)
		if (!strcmp(e->fams[i].name, name))
			f = &e->fams[i];
	if (!f) {
		if (e->n == e->cap) {
			e->cap = e->cap ? e->cap * 2 : 16;
			e->fams = xrealloc(e->fams, e->cap * sizeof(*e->fams));
		}
		f = &e->fams[e->n++];
		f->name = xstrdup(name);
		f->help = xstrdup(help ? help : "");
		f->type = type == METRIC_HISTOGRAM ? METRIC_GAUGE : type; /* no histograms here */
		buf_init(&f->lines);
	}
	buf_append_str(&f->lines, name);
	va_start(ap, value);
	while ((k = va_arg(ap, const char *))) {
		const char *v = va_arg(ap, const char *);
		buf_printf(&f->lines, "%s%s=\"", first ? "{" : ",", k);
		metrics_escape_label(&f->lines, v ? v : "");
		buf_append_byte(&f->lines, '"');
		first = false;
	}
	va_end(ap);
	if (!first)
		buf_append_byte(&f->lines, '}');
	buf_append_byte(&f->lines, ' ');
	write_double(&f->lines, value);
	buf_append_byte(&f->lines, '\n');
}

metric_collector *metrics_collector_add(metric_collect_fn fn, void *ctx)
{
	metric_collector *c = xcalloc(1, sizeof(*c));
	c->fn = fn;
	c->ctx = ctx;
	pthread_mutex_lock(&reg_lock);
	c->next = collectors;
	collectors = c;
	pthread_mutex_unlock(&reg_lock);
	return c;
}

void metrics_collector_remove(metric_collector *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&reg_lock);
	for (metric_collector **p = &collectors; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	pthread_mutex_unlock(&reg_lock);
	free(c);
}

void metrics_write(buf *out)
{
	metric_emit e = {0};
	pthread_mutex_lock(&reg_lock);
	for (const metric *m = families; m; m = m->next)
		write_family(out, m);
	/* oldest collector first: the order daemons started in */
	for (size_t depth = 0;; depth++) {
		metric_collector *c = collectors;
		size_t n = 0;
		for (metric_collector *x = collectors; x; x = x->next)
			n++;
		if (depth >= n)
			break;
		for (size_t i = 0; i + 1 < n - depth; i++)
			c = c->next;
		c->fn(&e, c->ctx);
	}
	pthread_mutex_unlock(&reg_lock);
	for (size_t i = 0; i < e.n; i++) {
		write_head(out, e.fams[i].name, e.fams[i].help, e.fams[i].type);
		buf_append(out, e.fams[i].lines.data, e.fams[i].lines.len);
		free(e.fams[i].name);
		free(e.fams[i].help);
		buf_free(&e.fams[i].lines);
	}
	free(e.fams);
}

/* ---- the metrics port ---- */

struct metrics_server {
	http_server *http;
	metrics_page_fn page;
	void *ctx;
};

bool metrics_enabled(void) { return atomic_load_explicit(&enabled, memory_order_relaxed); }
void metrics_enable(void) { atomic_store(&enabled, true); }

double metrics_uptime_seconds(void) { return (double)(time_mono_ns() - start_ns) / 1e9; }

bool metrics_port_valid(int port)
{
	if (port >= 0 && port <= 65535)
		return true;
	log_error("invalid -metricsPort %d (want 1..65535, or 0 for none)", port);
	return false;
}

bool metrics_port_probe(const char *host, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int fd, one = 1;
	bool ok;

	if (inet_pton(AF_INET, host && *host ? host : "127.0.0.1", &sa.sin_addr) != 1)
		return true; /* not IPv4: the real bind reports */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return true;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	if (!ok)
		log_error("-metricsPort %d: could not listen on %s:%d: %s", port,
			  host && *host ? host : "127.0.0.1", port, strerror(errno));
	close(fd);
	return ok;
}

static void send_page(http_req *req, const metrics_server *ms, bool json)
{
	buf b = BUF_INIT;
	ms->page(&b, json, ms->ctx);
	http_resp_header(req, "Content-Type", json ? "application/json" : "text/html; charset=utf-8");
	http_resp_send(req, 200, b.data, b.len);
	buf_free(&b);
}

static void metrics_handle(http_req *req, void *ctx)
{
	metrics_server *ms = ctx;
	const char *p = http_req_path(req);
	enum http_method me = http_req_method(req);

	if (me != HTTP_GET && me != HTTP_HEAD) {
		http_resp_error(req, 405, "method %s not allowed", http_req_method_str(req));
	} else if (!strcmp(p, "/metrics")) {
		buf b = BUF_INIT;
		metrics_write(&b);
		http_resp_header(req, "Content-Type", METRICS_CONTENT_TYPE);
		http_resp_send(req, 200, b.data, b.len);
		buf_free(&b);
	} else if (ms->page && !strcmp(p, "/status")) {
		send_page(req, ms, true);
	} else if (ms->page && (!strcmp(p, "/") || !strcmp(p, "/ui/index.html"))) {
		send_page(req, ms, false);
	} else {
		http_resp_error(req, 404, "not found (this port serves /metrics%s)",
				ms->page ? ", /status and /" : "");
	}
}

metrics_server *metrics_server_start(const char *host, int port, metrics_page_fn page,
				     void *ctx, wfs_err *err)
{
	metrics_server *ms;
	struct http_server_opts ho = {0};

	if (port <= 0 || port > 65535) {
		log_error("invalid -metricsPort %d (want 1..65535)", port);
		*err = WFS_EINVAL;
		return NULL;
	}
	ms = xcalloc(1, sizeof(*ms));
	ms->page = page;
	ms->ctx = ctx;
	ho.host = host;
	ho.port = port;
	ho.threads = 1;
	ho.thread_name = "wfs-metrics";
	ms->http = http_server_new(&ho, metrics_handle, ms, err);
	if (!ms->http) {
		log_error("-metricsPort %d: could not listen on %s:%d: %s", port,
			  host && *host ? host : "127.0.0.1", port, wfs_strerror(*err));
		free(ms);
		return NULL;
	}
	http_server_start(ms->http);
	metrics_enable();
	log_info("metrics on http://%s:%d/metrics", host && *host ? host : "127.0.0.1",
		 http_server_port(ms->http));
	return ms;
}

int metrics_server_port(const metrics_server *ms) { return ms ? http_server_port(ms->http) : 0; }

void metrics_server_stop(metrics_server *ms)
{
	if (!ms)
		return;
	http_server_free(ms->http);
	free(ms);
}

/* ---- status pages ---- */

void metrics_html_escape(buf *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			buf_append_str(out, "&amp;");
			break;
		case '<':
			buf_append_str(out, "&lt;");
			break;
		case '>':
			buf_append_str(out, "&gt;");
			break;
		case '"':
			buf_append_str(out, "&quot;");
			break;
		default:
			buf_append_byte(out, *s);
		}
	}
}

void metrics_html_begin(buf *out, const char *title)
{
	buf_append_str(out, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
	metrics_html_escape(out, title);
	buf_append_str(out, "</title><style>body{font-family:sans-serif}"
			    "td,th{padding:2px 8px;text-align:left}</style></head><body>\n<h1>");
	metrics_html_escape(out, title);
	buf_printf(out, "</h1>\n<p>version %s, up %.0f s</p>\n", PACKAGE_VERSION,
		   metrics_uptime_seconds());
}

void metrics_html_end(buf *out) { buf_append_str(out, "</body></html>\n"); }

static void status_json(buf *out, const char *daemon, const struct metrics_status_item *items,
			size_t nitems, const char *const *peers, size_t npeers)
{
	json_w *w = jw_new(out, false);
	jw_obj_begin(w);
	jw_kv_str(w, "Daemon", daemon);
	for (size_t i = 0; i < nitems; i++)
		jw_kv_str(w, items[i].key, items[i].value ? items[i].value : "");
	jw_key(w, "Peers");
	jw_arr_begin(w);
	for (size_t i = 0; i < npeers; i++)
		jw_str(w, peers[i]);
	jw_arr_end(w);
	jw_kv_str(w, "Version", PACKAGE_VERSION);
	jw_kv_double(w, "UptimeSeconds", metrics_uptime_seconds());
	jw_obj_end(w);
	jw_free(w);
}

void metrics_status_write(buf *out, bool json, const char *daemon,
			  const struct metrics_status_item *items, size_t nitems,
			  const char *const *peers, size_t npeers)
{
	char title[64];
	if (json) {
		status_json(out, daemon, items, nitems, peers, npeers);
		return;
	}
	snprintf(title, sizeof(title), "weedfs %s", daemon);
	metrics_html_begin(out, title);
	buf_append_str(out, "<table>\n");
	for (size_t i = 0; i < nitems; i++) {
		buf_append_str(out, "<tr><th>");
		metrics_html_escape(out, items[i].key);
		buf_append_str(out, "</th><td>");
		metrics_html_escape(out, items[i].value ? items[i].value : "");
		buf_append_str(out, "</td></tr>\n");
	}
	buf_append_str(out, "<tr><th>Peers</th><td>");
	for (size_t i = 0; i < npeers; i++) {
		buf_append_str(out, i ? ", " : "");
		metrics_html_escape(out, peers[i]);
	}
	buf_append_str(out, "</td></tr>\n</table>\n");
	metrics_html_end(out);
}
