/*
 * The metalog: local wake-ups plus a poller for other filers' appends (the
 * DESIGN is in metalog.h).
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "filer/entry_json.h"
#include "filer/metalog.h"
#include "json.h"
#include "log.h"
#include "util.h"

struct metalog {
	struct filer_store *store;
	struct metalog_opts opts;
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* broadcast when seq changes or on shutdown */
	uint64_t seq;           /* bumped on every notification; protected by mu */
	bool stopping;          /* protected by mu */
	bool poller_stop;       /* protected by mu */
	pthread_cond_t poll_cv; /* wakes the poller early to stop */
	pthread_t poller;
	bool has_poller;
};

struct metalog_cursor {
	struct metalog *m;
	char *prefix;
	int64_t pos;
	int32_t skip_sig;
};

void metalog_opts_default(struct metalog_opts *o)
{
	o->poll_ms = 200;
	o->batch = 1000;
}

/* An absolute CLOCK_MONOTONIC time ms from now. */
static struct timespec deadline_in(int64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

static void bump(struct metalog *m)
{
	pthread_mutex_lock(&m->mu);
	m->seq++;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

static void *poller_main(void *arg)
{
	struct metalog *m = arg;
	int64_t last = -1, clock;
	pthread_mutex_lock(&m->mu);
	while (!m->poller_stop) {
		struct timespec dl = deadline_in(m->opts.poll_ms);
		pthread_mutex_unlock(&m->mu);
		if (filer_store_event_clock(m->store, &clock) == WFS_OK && clock != last) {
			if (last != -1)
				bump(m);
			last = clock;
		}
		pthread_mutex_lock(&m->mu);
		while (!m->poller_stop &&
		       pthread_cond_timedwait(&m->poll_cv, &m->mu, &dl) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

struct metalog *metalog_new(struct filer_store *s, const struct metalog_opts *opts)
{
	struct metalog *m = xcalloc(1, sizeof(*m));
	pthread_condattr_t ca;
	m->store = s;
	metalog_opts_default(&m->opts);
	if (opts)
		m->opts = *opts;
	if (m->opts.batch == 0 || m->opts.batch > FILER_EVENTS_LIMIT_MAX)
		m->opts.batch = 1000;
	pthread_mutex_init(&m->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cv, &ca);
	pthread_cond_init(&m->poll_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (m->opts.poll_ms > 0) {
		if (pthread_create(&m->poller, NULL, poller_main, m))
			fatal("could not start the metalog poller");
		m->has_poller = true;
	}
	return m;
}

void metalog_shutdown(struct metalog *m)
{
	pthread_mutex_lock(&m->mu);
	m->stopping = true;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
}

void metalog_free(struct metalog *m)
{
	if (!m)
		return;
	if (m->has_poller) {
		pthread_mutex_lock(&m->mu);
		m->poller_stop = true;
		pthread_cond_broadcast(&m->poll_cv);
		pthread_mutex_unlock(&m->mu);
		pthread_join(m->poller, NULL);
	}
	pthread_cond_destroy(&m->cv);
	pthread_cond_destroy(&m->poll_cv);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

wfs_err metalog_append(struct metalog *m, struct filer_tx *tx, const struct filer_entry *old_entry,
		       const struct filer_entry *new_entry, int64_t *ts_ns)
{
	return filer_store_append_event(m->store, tx, old_entry, new_entry, ts_ns);
}

wfs_err metalog_commit(struct metalog *m, struct filer_tx *tx)
{
	wfs_err err = filer_store_commit(tx);
	if (!err)
		bump(m);
	return err;
}

void metalog_notify(struct metalog *m) { bump(m); }

struct metalog_cursor *metalog_subscribe(struct metalog *m, const char *prefix, int64_t since_ns,
					 int32_t skip_sig)
{
	struct metalog_cursor *c = xcalloc(1, sizeof(*c));
	c->skip_sig = skip_sig;
	c->m = m;
	c->prefix = prefix ? xstrdup(prefix) : NULL;
	c->pos = since_ns < 0 ? 0 : since_ns;
	return c;
}

void metalog_cursor_free(struct metalog_cursor *c)
{
	if (!c)
		return;
	free(c->prefix);
	free(c);
}

int64_t metalog_cursor_position(const struct metalog_cursor *c) { return c->pos; }

struct deliver {
	filer_event_fn fn;
	void *ctx;
	size_t n;
};

static bool deliver_one(void *arg, struct filer_event *ev)
{
	struct deliver *d = arg;
	d->n++;
	return d->fn(d->ctx, ev);
}

wfs_err metalog_wait(struct metalog_cursor *c, int timeout_ms, filer_event_fn fn, void *ctx,
		     size_t *n)
{
	struct metalog *m = c->m;
	struct deliver d = {.fn = fn, .ctx = ctx};
	struct timespec dl = deadline_in(timeout_ms > 0 ? timeout_ms : 0);
	wfs_err err = WFS_OK;

	for (;;) {
		uint64_t seq;
		int64_t next;
		pthread_mutex_lock(&m->mu);
		seq = m->seq;
		if (m->stopping)
			err = WFS_EUNAVAIL;
		pthread_mutex_unlock(&m->mu);
		if (err)
			break;
		/* read after sampling seq: a notification from here on makes us read again */
		err = filer_store_read_events(m->store, c->pos, c->prefix, c->skip_sig,
					      m->opts.batch, deliver_one, &d, &next);
		c->pos = next;
		if (err || d.n)
			break;
		pthread_mutex_lock(&m->mu);
		while (m->seq == seq && !m->stopping && timeout_ms != 0) {
			int rc = timeout_ms < 0 ? pthread_cond_wait(&m->cv, &m->mu)
						: pthread_cond_timedwait(&m->cv, &m->mu, &dl);
			if (rc == ETIMEDOUT)
				break;
		}
		bool more = m->seq != seq || m->stopping;
		pthread_mutex_unlock(&m->mu);
		if (!more)
			break; /* timed out with nothing new */
	}
	if (n)
		*n = d.n;
	return err;
}

void metalog_event_json(const struct filer_event *ev, buf *out)
{
	json_w *w = jw_new(out, false);
	jw_obj_begin(w);
	jw_kv_i64(w, "tsNs", ev->ts_ns);
	entry_json_text(w, "directory", ev->dir);
	jw_key(w, "oldEntry");
	if (ev->old_entry)
		entry_json_write(w, ev->old_entry, ENTRY_JSON_CONTENT);
	else
		jw_null(w);
	jw_key(w, "newEntry");
	if (ev->new_entry)
		entry_json_write(w, ev->new_entry, ENTRY_JSON_CONTENT);
	else
		jw_null(w);
	jw_obj_end(w);
	jw_free(w);
	buf_append_byte(out, '\n');
}
