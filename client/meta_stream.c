/*
 * The metadata event stream client (meta_stream.h).
 *
 * DESIGN: one thread, one libcurl stream at a time (lib/http_client.h
 * buffers whole bodies, a stream never ends). Lines are split in the write
 * callback and handled at once; a line longer than any event can be drops
 * the stream. libcurl's progress callback polls the stop flag, and a
 * condition variable ends the back-off sleep, so stopping takes at most
 * about a second.
 */
#include "config.h"
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "buf.h"
#include "client/filer_meta.h"
#include "client/meta_stream.h"
#include "json.h"
#include "jwt.h"
#include "log.h"
#include "util.h"

#define LINE_MAX_BYTES    (64u << 20)
#define BACKOFF_FIRST_MS  100
#define BACKOFF_MAX_MS    2000

struct meta_stream {
	char *filer, *prefix, *thread_name;
	int32_t signature;
	int heartbeat_s, stall_s;
	const struct meta_stream_ops *ops;
	void *arg;
	pthread_t th;
	atomic_bool stop;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* signalled by stop: ends a back-off sleep */
	int64_t last_ts;   /* thread only: resume point, -1 = none yet */
	bool got_line;     /* thread only: this stream delivered something */
	buf line;          /* thread only: a partial line */
};

static void handle_line(struct meta_stream *s, const char *p, size_t len)
{
	struct filer_entry *oe = NULL, *ne = NULL;
	yajl_val tree, ov, nv;
	char msg[128];
	int64_t ts;

	tree = json_parse(p, len, msg, sizeof(msg));
	if (!tree) {
		log_warn("event stream: bad line: %s", msg);
		return;
	}
	if (json_get_i64(tree, "tsNs", &ts))
		s->last_ts = ts;
	if (!s->got_line && s->ops->connected)
		s->ops->connected(s->arg);
	s->got_line = true;
	if (!json_get(tree, "directory")) {
		if (s->ops->heartbeat)
			s->ops->heartbeat(s->arg);
		goto out;
	}
	ov = json_get(tree, "oldEntry");
	nv = json_get(tree, "newEntry");
	if (ov && !YAJL_IS_NULL(ov))
		oe = filer_meta_entry_from_json(ov);
	if (nv && !YAJL_IS_NULL(nv))
		ne = filer_meta_entry_from_json(nv);
	if (oe || ne)
		s->ops->event(s->arg, oe, ne);
out:
	filer_entry_free(oe);
	filer_entry_free(ne);
	yajl_tree_free(tree);
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct meta_stream *s = arg;
	size_t n = size * nmemb, start = 0;

	if (atomic_load(&s->stop))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (ptr[i] != '\n')
			continue;
		if (s->line.len) {
			buf_append(&s->line, ptr + start, i - start);
			handle_line(s, s->line.data, s->line.len);
			buf_reset(&s->line);
		} else if (i > start) {
			handle_line(s, ptr + start, i - start);
		}
		start = i + 1;
	}
	if (start < n) {
		if (s->line.len + (n - start) > LINE_MAX_BYTES)
			return 0; /* no event is that large: drop the stream */
		buf_append(&s->line, ptr + start, n - start);
	}
	return n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct meta_stream *s = arg;

	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return atomic_load(&s->stop) ? 1 : 0;
}

/* One stream until it ends. */
static void follow_once(struct meta_stream *s, CURL *c)
{
	char *prefix = curl_easy_escape(c, s->prefix, 0);
	buf url = BUF_INIT;
	long status = 0;
	CURLcode cc;
	char auth[JWT_AUTH_HEADER_MAX];
	struct curl_slist *hdrs = NULL;

	buf_printf(&url, "http://%s/.meta/subscribe?pathPrefix=%s&heartbeatSeconds=%d", s->filer,
		   prefix, s->heartbeat_s);
	if (s->signature)
		buf_printf(&url, "&signature=%d", (int)s->signature);
	if (s->last_ts >= 0)
		buf_printf(&url, "&sinceNs=%lld", (long long)s->last_ts);
	curl_free(prefix);
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url.data);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)s->stall_s);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, s);
	/* filer signing: the stream is a read (a fresh token each time it reconnects) */
	if (jwt_filer_auth("GET", "/.meta/subscribe", auth)) {
		hdrs = curl_slist_append(NULL, auth);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	}
	buf_reset(&s->line);
	s->got_line = false;
	cc = curl_easy_perform(c);
	curl_slist_free_all(hdrs);
	if (s->ops->disconnected)
		s->ops->disconnected(s->arg);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (!atomic_load(&s->stop)) {
		if (cc != CURLE_OK)
			log_debug("event stream from %s ended: %s", s->filer,
				  curl_easy_strerror(cc));
		else if (status != 200)
			log_warn("event stream from %s: HTTP %ld", s->filer, status);
	}
	buf_free(&url);
}

static void *stream_main(void *arg)
{
	struct meta_stream *s = arg;
	CURL *c = curl_easy_init();
	long backoff_ms = BACKOFF_FIRST_MS;

	if (!c) {
		log_error("event stream: no curl handle; changes by others show after the cache "
			  "timeouts only");
		return NULL;
	}
	while (!atomic_load(&s->stop)) {
		struct timespec dl;
		follow_once(s, c);
		if (s->got_line)
			backoff_ms = BACKOFF_FIRST_MS;
		pthread_mutex_lock(&s->mu);
		dl = time_deadline(CLOCK_REALTIME, (uint64_t)backoff_ms * 1000000u);
		while (!atomic_load(&s->stop))
			if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT)
				break;
		pthread_mutex_unlock(&s->mu);
		backoff_ms = MIN(backoff_ms * 2, BACKOFF_MAX_MS);
	}
	curl_easy_cleanup(c);
	return NULL;
}

meta_stream *meta_stream_start(const struct meta_stream_opts *o, const struct meta_stream_ops *ops,
			       void *arg)
{
	struct meta_stream *s = xcalloc(1, sizeof(*s));

	s->filer = xstrdup(o->filer);
	s->prefix = xstrdup(o->path_prefix);
	s->thread_name = xstrdup(o->thread_name ? o->thread_name : "wfs-events");
	s->signature = o->signature;
	s->heartbeat_s = o->heartbeat_seconds > 0 ? o->heartbeat_seconds : 2;
	s->stall_s = o->stall_seconds > 0 ? o->stall_seconds : 10;
	s->ops = ops;
	s->arg = arg;
	s->last_ts = -1;
	atomic_init(&s->stop, false);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	buf_init(&s->line);
	if (thread_start(&s->th, NULL, stream_main, s, s->thread_name))
		fatal("could not start the event stream thread");
	return s;
}

void meta_stream_stop(meta_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	atomic_store(&s->stop, true);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->th, NULL);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	buf_free(&s->line);
	free(s->filer);
	free(s->prefix);
	free(s->thread_name);
	free(s);
}
