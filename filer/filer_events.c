/*
 * GET /.meta/subscribe: the metadata event stream over HTTP
 * (docs/api-filer.md, docs/filer-events.md).
 *
 * DESIGN: each subscriber has a thread of its own (metalog_wait blocks, and a
 * pool thread held for hours would starve store work). The thread pulls
 * events from a metalog cursor, renders them as lines into a buffer shared
 * with the loop and asks the loop, through http_req_defer, to "pump" that
 * buffer into the chunked response. Back-pressure works in two steps: the
 * loop stops writing while http_resp_write reports the connection's buffer
 * full and resumes on drain; the thread stops pulling while the shared buffer
 * holds SUB_BUF_HIGH bytes. The loop checks http_req_closed at every pump and
 * the thread pumps at least once per heartbeat, so a stream whose client left
 * ends within one heartbeat. Only the loop ends the response, and only after
 * the thread has finished; it frees the state then. filer_events_stop (before
 * the HTTP server stops) ends every thread, so none defers into a stopped
 * server; streams whose last pump the server dropped are freed through the
 * filer's live list.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "filer/filer_int.h"
#include "filer/metalog.h"
#include "log.h"
#include "util.h"

/* The thread stops pulling while this many bytes wait for the loop. */
#define SUB_BUF_HIGH          (1u << 20)
#define SUB_HEARTBEAT_DEFAULT 10
#define SUB_HEARTBEAT_MAX     3600
/* Concurrent streams per filer; more get 503 (each holds a thread). */
#define SUB_MAX 1024

struct filer_events {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* broadcast when running drops */
	int running;       /* protected by mu: subscriber threads not yet finished */
	bool stopping;     /* protected by mu */
};

struct sub {
	struct filer_live live; /* first: drop() casts back */
	struct filer *f;
	http_req *req;
	char *prefix;
	int64_t since;    /* -1: from now */
	int32_t skip_sig; /* leave out events signed with it (0: none) */
	int heartbeat_ms;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* the thread waits here for room or for gone */
	buf out;           /* protected by mu: lines for the loop */
	bool pump_queued;  /* protected by mu: a sub_pump is deferred and has not run */
	bool gone;         /* protected by mu: stop pulling (client left or filer stopping) */
	bool ended;        /* protected by mu: the thread has finished with everything */
	bool blocked;      /* loop only: waiting for the drain callback */
};

static void sub_drop(struct filer_live *l);
static void sub_drained(http_req *req, void *arg);

struct filer_events *filer_events_new(void)
{
	struct filer_events *ev = xcalloc(1, sizeof(*ev));
	pthread_mutex_init(&ev->mu, NULL);
	pthread_cond_init(&ev->cv, NULL);
	return ev;
}

void filer_events_stop(struct filer *f)
{
	struct filer_events *ev = f->events;
	struct filer_live *l;

	if (!ev)
		return;
	pthread_mutex_lock(&ev->mu);
	ev->stopping = true;
	pthread_mutex_unlock(&ev->mu);
	/* Tell every stream to stop; streams are on the live list with other requests. */
	pthread_mutex_lock(&f->live_lock);
	for (l = f->live.next; l != &f->live; l = l->next) {
		if (l->drop == sub_drop) {
			struct sub *s = (struct sub *)l;
			pthread_mutex_lock(&s->mu);
			s->gone = true;
			pthread_cond_broadcast(&s->cv);
			pthread_mutex_unlock(&s->mu);
		}
	}
	pthread_mutex_unlock(&f->live_lock);
	pthread_mutex_lock(&ev->mu);
	while (ev->running > 0)
		pthread_cond_wait(&ev->cv, &ev->mu);
	pthread_mutex_unlock(&ev->mu);
}

int filer_events_subscribers(struct filer_events *ev)
{
	int n;
	pthread_mutex_lock(&ev->mu);
	n = ev->running;
	pthread_mutex_unlock(&ev->mu);
	return n;
}

void filer_events_free(struct filer_events *ev)
{
	if (!ev)
		return;
	pthread_cond_destroy(&ev->cv);
	pthread_mutex_destroy(&ev->mu);
	free(ev);
}

static void sub_free(struct sub *s)
{
	pthread_join(s->th, NULL);
	buf_free(&s->out);
	free(s->prefix);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* The live list's drop: the server went away with this stream's last pump pending. */
static void sub_drop(struct filer_live *l) { sub_free((struct sub *)l); }

/* Moves pending lines to the response; ends it once the thread has finished. Loop thread. */
static void sub_flush(struct sub *s)
{
	http_req *req = s->req;
	bool closed = http_req_closed(req), finish;
	buf take;

	buf_init(&take);
	pthread_mutex_lock(&s->mu);
	if (closed && !s->gone) {
		s->gone = true;
		pthread_cond_broadcast(&s->cv);
	}
	if (!s->blocked || s->ended) {
		take = s->out;
		buf_init(&s->out);
		pthread_cond_broadcast(&s->cv); /* room again */
	}
	/* a deferred pump still queued must find s alive: it finishes instead */
	finish = s->ended && !s->pump_queued;
	pthread_mutex_unlock(&s->mu);
	if (take.len && !closed && !http_resp_write(req, take.data, take.len) && !finish) {
		s->blocked = true;
		http_resp_on_drain(req, sub_drained, s);
	}
	buf_free(&take);
	if (!finish)
		return;
	http_resp_end(req);
	filer_live_remove(s->f, &s->live);
	sub_free(s);
}

static void sub_drained(http_req *req, void *arg)
{
	struct sub *s = arg;
	(void)req;
	s->blocked = false;
	sub_flush(s);
}

static void sub_pump(http_req *req, void *arg)
{
	struct sub *s = arg;
	(void)req;
	pthread_mutex_lock(&s->mu);
	s->pump_queued = false;
	pthread_mutex_unlock(&s->mu);
	sub_flush(s);
}

/* Queues a pump unless one is queued. s->mu held. */
static void request_pump_locked(struct sub *s)
{
	if (s->pump_queued)
		return;
	s->pump_queued = true;
	http_req_defer(s->req, sub_pump, s);
}

static void heartbeat_line(buf *out, int64_t pos)
{
	buf_printf(out, "{\"tsNs\":%lld}\n", (long long)pos);
}

static bool collect(void *ctx, struct filer_event *ev)
{
	metalog_event_json(ev, ctx);
	filer_event_free(ev);
	/* stop pulling after a full buffer's worth; the cursor resumes after this one */
	return ((buf *)ctx)->len < SUB_BUF_HIGH;
}

static void *sub_main(void *arg)
{
	struct sub *s = arg;
	struct filer_events *fe = s->f->events;
	struct metalog_cursor *c = NULL;
	uint64_t hb_ns = (uint64_t)s->heartbeat_ms * 1000000u, last;
	int64_t since = s->since;
	wfs_err err = WFS_OK;
	buf lines;

	buf_init(&lines);
	if (since < 0) {
		err = filer_store_event_clock(s->f->store, &since);
		if (err) {
			log_warn("event stream: reading the event clock: %s", wfs_strerror(err));
			goto out;
		}
	}
	c = metalog_subscribe(s->f->metalog, s->prefix, since, s->skip_sig);
	/* the first line is the resume point: the client knows it is subscribed */
	heartbeat_line(&lines, since);
	last = time_mono_ns();
	for (;;) {
		uint64_t now;
		size_t n = 0;
		bool stop;
		int wait_ms;

		pthread_mutex_lock(&s->mu);
		if (lines.len) {
			buf_append(&s->out, lines.data, lines.len);
			buf_reset(&lines);
			request_pump_locked(s);
		}
		while (!s->gone && s->out.len >= SUB_BUF_HIGH) {
			struct timespec dl =
				time_deadline(CLOCK_REALTIME, (uint64_t)s->heartbeat_ms * 1000000u);
			if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT)
				request_pump_locked(s); /* lets the loop notice a client gone */
		}
		stop = s->gone;
		pthread_mutex_unlock(&s->mu);
		if (stop)
			break;
		now = time_mono_ns();
		wait_ms = now - last >= hb_ns ? 0 : (int)((hb_ns - (now - last)) / 1000000u) + 1;
		err = metalog_wait(c, wait_ms, collect, &lines, &n);
		if (err == WFS_EUNAVAIL) {
			err = WFS_OK; /* the filer is stopping */
			break;
		}
		if (err) {
			/* the client resumes from its last tsNs once the store is back */
			log_warn("event stream: reading events: %s", wfs_strerror(err));
			break;
		}
		now = time_mono_ns();
		if (n == 0 && now - last >= hb_ns)
			heartbeat_line(&lines, metalog_cursor_position(c));
		if (lines.len)
			last = now;
	}
out:
	metalog_cursor_free(c);
	buf_free(&lines);
	pthread_mutex_lock(&s->mu);
	s->ended = true;
	request_pump_locked(s);
	pthread_mutex_unlock(&s->mu);
	/* s may be freed from here on (after our return: sub_free joins) */
	pthread_mutex_lock(&fe->mu);
	fe->running--;
	pthread_cond_broadcast(&fe->cv);
	pthread_mutex_unlock(&fe->mu);
	return NULL;
}

void filer_handle_subscribe(struct filer *f, http_req *req)
{
	const char *name, *value, *prefix = NULL, *since_s = NULL, *hb_s = NULL, *sig_s = NULL;
	struct filer_events *fe = f->events;
	char *norm = NULL;
	int64_t since = -1;
	int32_t sig = 0;
	uint32_t hb = SUB_HEARTBEAT_DEFAULT;
	bool trailing, full;
	struct sub *s;

	if (http_req_method(req) != HTTP_GET) {
		http_resp_error(req, 405, "method %s not allowed (GET)", http_req_method_str(req));
		return;
	}
	for (size_t i = 0; http_req_query_at(req, i, &name, &value); i++) {
		if (!strcmp(name, "pathPrefix")) {
			prefix = value;
		} else if (!strcmp(name, "sinceNs")) {
			since_s = value;
		} else if (!strcmp(name, "heartbeatSeconds")) {
			hb_s = value;
		} else if (!strcmp(name, "signature")) {
			sig_s = value;
		} else if (strcmp(name, "clientName")) {
			http_resp_error(req, 400, "unknown parameter \"%.100s\"", name);
			return;
		}
	}
	if (prefix && *prefix) {
		if (filer_path_normalize(prefix, &norm, &trailing)) {
			http_resp_error(
				req, 400,
				"pathPrefix must be an absolute path without \".\" or \"..\"");
			return;
		}
	}
	if (since_s && (!parse_i64(since_s, &since) || since < 0)) {
		http_resp_error(req, 400,
				"sinceNs must be a time in ns since the epoch (0 = oldest)");
		goto out;
	}
	if (hb_s && (!parse_u32(hb_s, &hb) || hb < 1 || hb > SUB_HEARTBEAT_MAX)) {
		http_resp_error(req, 400, "heartbeatSeconds must be 1..%d", SUB_HEARTBEAT_MAX);
		goto out;
	}
	if (sig_s && !filer_signature_parse(sig_s, &sig)) {
		http_resp_error(req, 400, "signature must be a nonzero 32-bit integer");
		goto out;
	}
	pthread_mutex_lock(&fe->mu);
	full = fe->stopping || fe->running >= SUB_MAX;
	if (!full)
		fe->running++;
	pthread_mutex_unlock(&fe->mu);
	if (full) {
		http_resp_error(req, 503, "too many event streams (at most %d)", SUB_MAX);
		goto out;
	}

	s = xcalloc(1, sizeof(*s));
	s->f = f;
	s->req = req;
	s->prefix = norm;
	norm = NULL;
	s->since = since;
	s->skip_sig = sig;
	s->heartbeat_ms = (int)hb * 1000;
	s->live.drop = sub_drop;
	buf_init(&s->out);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	http_resp_header(req, "Content-Type", "application/x-ndjson");
	http_resp_header(req, "Cache-Control", "no-cache");
	http_resp_header(req, "X-Accel-Buffering", "no");
	http_resp_start(req, 200, -1);
	filer_live_add(f, &s->live);
	if (thread_start(&s->th, NULL, sub_main, s, "wfs-filer-sub"))
		fatal("could not start an event stream thread");
out:
	free(norm);
}
