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
#include "client/entry_json.h"
#include "filer/metalog.h"
#include "json.h"
#include "log.h"
#include "util.h"

/*
 * A cursor's thread while it reads and sleeps in metalog_wait: listed so that
 * a commit wakes exactly the waiters that may have something to read (a
 * commit signed with a waiter's skip_sig leaves that waiter asleep).
 */
struct waiter {
	struct waiter *next; /* protected by m->mu */
	pthread_cond_t cv;
	int32_t skip_sig;
	bool woken; /* protected by m->mu: a relevant notification came since registering */
};

struct metalog {
	struct filer_store *store;
	struct metalog_opts opts;
	pthread_mutex_t mu;
	struct waiter *waiters; /* protected by mu */
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
	struct waiter w;
};

void metalog_opts_default(struct metalog_opts *o)
{
	o->poll_ms = 200;
	o->batch = 1000;
}

/* Wakes the waiters that do not skip sig (all of them for sig 0). */
static void bump(struct metalog *m, int32_t sig)
{
	pthread_mutex_lock(&m->mu);
	for (struct waiter *w = m->waiters; w; w = w->next) {
		if (sig && w->skip_sig == sig)
			continue;
		w->woken = true;
		pthread_cond_signal(&w->cv);
	}
	pthread_mutex_unlock(&m->mu);
}

static void *poller_main(void *arg)
{
	struct metalog *m = arg;
	int64_t last = -1, clock;
	pthread_mutex_lock(&m->mu);
	while (!m->poller_stop) {
		struct timespec dl =
			time_deadline(CLOCK_MONOTONIC, (uint64_t)m->opts.poll_ms * 1000000u);
		pthread_mutex_unlock(&m->mu);
		if (filer_store_event_clock(m->store, &clock) == WFS_OK && clock != last) {
			if (last != -1)
				bump(m, 0);
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
	pthread_cond_init(&m->poll_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (m->opts.poll_ms > 0) {
		if (thread_start(&m->poller, NULL, poller_main, m, "wfs-metalog"))
			fatal("could not start the metalog poller");
		m->has_poller = true;
	}
	return m;
}

void metalog_shutdown(struct metalog *m)
{
	pthread_mutex_lock(&m->mu);
	m->stopping = true;
	for (struct waiter *w = m->waiters; w; w = w->next)
		pthread_cond_signal(&w->cv);
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
	int32_t sig = filer_store_tx_signature(tx); /* tx is gone after the commit */
	wfs_err err = filer_store_commit(tx);
	if (!err)
		bump(m, sig);
	return err;
}

void metalog_notify(struct metalog *m) { bump(m, 0); }

struct metalog_cursor *metalog_subscribe(struct metalog *m, const char *prefix, int64_t since_ns,
					 int32_t skip_sig)
{
	struct metalog_cursor *c = xcalloc(1, sizeof(*c));
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->w.cv, &ca);
	pthread_condattr_destroy(&ca);
	c->w.skip_sig = skip_sig;
	c->m = m;
	c->prefix = prefix ? xstrdup(prefix) : NULL;
	c->pos = since_ns < 0 ? 0 : since_ns;
	return c;
}

void metalog_cursor_free(struct metalog_cursor *c)
{
	if (!c)
		return;
	pthread_cond_destroy(&c->w.cv);
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
	struct timespec dl = time_deadline(CLOCK_MONOTONIC,
					   timeout_ms > 0 ? (uint64_t)timeout_ms * 1000000u : 0);
	wfs_err err = WFS_OK;

	for (;;) {
		struct waiter *w = &c->w, **pp;
		int64_t next;
		bool more;
		/* listed before the read: a relevant notification from here on makes us read again
		 */
		pthread_mutex_lock(&m->mu);
		if (m->stopping)
			err = WFS_EUNAVAIL;
		w->woken = false;
		w->next = m->waiters;
		m->waiters = w;
		pthread_mutex_unlock(&m->mu);
		if (!err) {
			err = filer_store_read_events(m->store, c->pos, c->prefix, w->skip_sig,
						      m->opts.batch, deliver_one, &d, &next);
			c->pos = next;
		}
		pthread_mutex_lock(&m->mu);
		while (!err && !d.n && !w->woken && !m->stopping && timeout_ms != 0) {
			int rc = timeout_ms < 0 ? pthread_cond_wait(&w->cv, &m->mu)
						: pthread_cond_timedwait(&w->cv, &m->mu, &dl);
			if (rc == ETIMEDOUT)
				break;
		}
		more = w->woken || m->stopping;
		for (pp = &m->waiters; *pp != w; pp = &(*pp)->next)
			;
		*pp = w->next;
		pthread_mutex_unlock(&m->mu);
		if (err || d.n || !more)
			break; /* delivered, failed, or timed out with nothing new */
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
