/* lib/metrics: the text exposition format, label escaping, histograms, and increments
 * from several threads at once. */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "metrics.h"
#include "tap.h"

static bool has_line(const buf *b, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = b->data; p && (p = strstr(p, line)); p++)
		if ((p == b->data || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

static void test_counter_and_escaping(void)
{
	metric *c = metric_counter("t_requests_total", "Requests with a \\ and\na newline.",
				   "route,code");
	buf b = BUF_INIT;

	ok(metric_counter("t_requests_total", "other help", "route,code") == c,
	   "registering a name again returns the family");
	metric_add(metric_at(c, "a\"b\\c\nd", "200"), 3);
	metric_inc(metric_at(c, "a\"b\\c\nd", "200"));
	metric_inc(metric_at(c, "/x", "404"));
	is_int((long long)metric_value(metric_at(c, "/x", "404")), 1, "value read back");
	metrics_write(&b);
	ok(has_line(&b, "# HELP t_requests_total Requests with a \\\\ and\\na newline."),
	   "HELP escapes backslash and newline");
	ok(has_line(&b, "# TYPE t_requests_total counter"), "TYPE counter");
	ok(has_line(&b, "t_requests_total{route=\"a\\\"b\\\\c\\nd\",code=\"200\"} 4"),
	   "label values escape quote, backslash and newline");
	ok(has_line(&b, "t_requests_total{route=\"/x\",code=\"404\"} 1"), "second series");
	buf_free(&b);
}

static void test_gauge_and_unlabelled(void)
{
	metric *g = metric_gauge("t_temperature", "A gauge.", NULL);
	buf b = BUF_INIT;
	metric_set(metric_at(g), 2.5);
	metric_gauge_add(metric_at(g), -1);
	metrics_write(&b);
	ok(has_line(&b, "# TYPE t_temperature gauge"), "TYPE gauge");
	ok(has_line(&b, "t_temperature 1.5"), "no braces without labels; a fraction");
	metric_set(metric_at(g), 1e300 * 1e300);
	buf_reset(&b);
	metrics_write(&b);
	ok(has_line(&b, "t_temperature +Inf"), "infinity written as +Inf");
	buf_free(&b);
}

static void test_histogram(void)
{
	static const double bounds[] = {0.1, 1, 10};
	metric *h = metric_histogram("t_latency_seconds", "A histogram.", "op", bounds, 3);
	metric_series *s = metric_at(h, "get");
	buf b = BUF_INIT;

	metric_observe(s, 0.05);
	metric_observe(s, 0.1); /* le is inclusive */
	metric_observe(s, 5);
	metric_observe(s, 100);
	metrics_write(&b);
	ok(has_line(&b, "# TYPE t_latency_seconds histogram"), "TYPE histogram");
	ok(has_line(&b, "t_latency_seconds_bucket{op=\"get\",le=\"0.1\"} 2"), "le=0.1 inclusive");
	ok(has_line(&b, "t_latency_seconds_bucket{op=\"get\",le=\"1\"} 2"), "cumulative le=1");
	ok(has_line(&b, "t_latency_seconds_bucket{op=\"get\",le=\"10\"} 3"), "cumulative le=10");
	ok(has_line(&b, "t_latency_seconds_bucket{op=\"get\",le=\"+Inf\"} 4"), "+Inf bucket");
	ok(has_line(&b, "t_latency_seconds_count{op=\"get\"} 4"), "_count equals +Inf");
	ok(has_line(&b, "t_latency_seconds_sum{op=\"get\"} 105.15000000000001") ||
		   has_line(&b, "t_latency_seconds_sum{op=\"get\"} 105.15"),
	   "_sum");
	is_int((long long)metric_value(s), 4, "a histogram's value is its count");
	buf_free(&b);
}

static void collect(metric_emit *e, void *ctx)
{
	metric_emit_sample(e, "t_volume_bytes", "Per volume.", METRIC_GAUGE, *(double *)ctx,
			   "volume", "7", NULL);
	metric_emit_sample(e, "t_volume_bytes", NULL, METRIC_GAUGE, 2, "volume", "8", NULL);
}

static void test_collector(void)
{
	double v = 42;
	metric_collector *c = metrics_collector_add(collect, &v);
	buf b = BUF_INIT;
	metrics_write(&b);
	ok(has_line(&b, "# TYPE t_volume_bytes gauge"), "collector family typed once");
	ok(has_line(&b, "t_volume_bytes{volume=\"7\"} 42") &&
		   has_line(&b, "t_volume_bytes{volume=\"8\"} 2"),
	   "collector samples, evaluated at scrape time");
	metrics_collector_remove(c);
	buf_reset(&b);
	metrics_write(&b);
	ok(!strstr(b.data, "t_volume_bytes"), "removed collector is gone");
	buf_free(&b);
}

#define THREADS 4
#define PER     200000

static metric *conc, *conc_h;

static void *hammer(void *arg)
{
	const char *route = arg;
	for (int i = 0; i < PER; i++) {
		/* looked up every time, as a request does, so creation races too */
		metric_inc(metric_at(conc, route, i & 1 ? "200" : "500"));
		metric_observe(metric_at(conc_h, route), 0.001);
	}
	return NULL;
}

static void test_concurrency(void)
{
	pthread_t th[THREADS];
	const char *routes[THREADS] = {"a", "b", "a", "b"};
	conc = metric_counter("t_conc_total", "Concurrent increments.", "route,code");
	conc_h = metric_histogram("t_conc_seconds", "Concurrent observations.", "route", NULL, 0);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, hammer, (void *)routes[i]);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	is_int((long long)metric_value(metric_at(conc, "a", "200")), PER, "no increment lost (a)");
	is_int((long long)metric_value(metric_at(conc, "b", "500")), PER, "no increment lost (b)");
	is_int((long long)metric_value(metric_at(conc_h, "a")), 2 * PER,
	       "no observation lost");
	{
		buf b = BUF_INIT;
		metrics_write(&b);
		ok(has_line(&b, "t_conc_seconds_count{route=\"b\"} 400000"), "histogram count");
		ok(has_line(&b, "t_conc_seconds_sum{route=\"b\"} 400") ||
			   strstr(b.data, "t_conc_seconds_sum{route=\"b\"} 399.99"),
		   "histogram sum (CAS adds)");
		buf_free(&b);
	}
}

static void test_cardinality_cap(void)
{
	metric *c = metric_counter("t_many_total", "Capped.", "k");
	char k[16];
	for (int i = 0; i < METRIC_SERIES_MAX + 50; i++) {
		snprintf(k, sizeof(k), "%d", i);
		metric_inc(metric_at(c, k));
	}
	snprintf(k, sizeof(k), "%d", METRIC_SERIES_MAX + 10);
	{
		buf b = BUF_INIT;
		char line[64];
		metrics_write(&b);
		snprintf(line, sizeof(line), "t_many_total{k=\"%s\"} 1", k);
		ok(!has_line(&b, line), "series past the cap are not written");
		ok(has_line(&b, "t_many_total{k=\"0\"} 1"), "series under the cap are");
		buf_free(&b);
	}
}

int main(void)
{
	test_counter_and_escaping();
	test_gauge_and_unlabelled();
	test_histogram();
	test_collector();
	test_concurrency();
	test_cardinality_cap();
	ok(metrics_port_valid(0) && metrics_port_valid(65535) && !metrics_port_valid(-1) &&
		   !metrics_port_valid(65536),
	   "port range");
	return done_testing();
}
