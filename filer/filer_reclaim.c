/*
 * The hidden files of mounts that died (filer_reclaim.h).
 */
#include "config.h"
#include "filer/filer_reclaim.h"
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "filer/filer_int.h"
#include "filer/filer_lock.h"
#include "filer/namespace.h"
#include "log.h"
#include "util.h"

#define RECLAIM_POLL_MS 1000
#define RECLAIM_PAGE    1000

struct rc_rec {
	uint64_t session;
	char *dir;
	bool seen_live; /* renewed with this filer since it started */
	bool reclaimed; /* its mount has re-asserted its locks (or is new since the start) */
};

struct filer_reclaim {
	struct filer *f;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* wakes the thread early to stop */
	bool stop;           /* protected by mu */
	struct rc_rec *recs; /* protected by mu */
	size_t n, cap;       /* protected by mu */
	char *kv_key;
};

/* Writes the records to the store. Under mu. */
static void persist(struct filer_reclaim *r)
{
	buf b;
	wfs_err err;

	buf_init(&b);
	for (size_t i = 0; i < r->n; i++)
		buf_printf(&b, "%016" PRIx64 " %s\n", r->recs[i].session, r->recs[i].dir);
	if (b.len > FILER_KV_VALUE_MAX)
		err = WFS_ETOOBIG;
	else if (b.len)
		err = filer_store_kv_put(r->f->store, NULL, r->kv_key, strlen(r->kv_key), b.data,
					 b.len);
	else
		err = filer_store_kv_delete(r->f->store, NULL, r->kv_key, strlen(r->kv_key));
	if (err && err != WFS_ENOENT)
		log_warn("hidden files: could not store the mount sessions: %s", wfs_strerror(err));
	buf_free(&b);
}

static void rec_add(struct filer_reclaim *r, uint64_t session, const char *dir, bool live)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 8;
		r->recs = xrealloc(r->recs, r->cap * sizeof(*r->recs));
	}
	r->recs[r->n++] = (struct rc_rec){session, xstrdup(dir), live, live};
}

static struct rc_rec *rec_find(struct filer_reclaim *r, uint64_t session)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->recs[i].session == session)
			return &r->recs[i];
	return NULL;
}

/* Drops session's record (if any) and stores the rest. Under mu. */
static void rec_drop(struct filer_reclaim *r, uint64_t session)
{
	struct rc_rec *x = rec_find(r, session);

	if (!x)
		return;
	free(x->dir);
	*x = r->recs[--r->n];
	persist(r);
}

/* Loads the stored records. Control thread, before the thread starts. */
static void load(struct filer_reclaim *r)
{
	void *val = NULL;
	size_t len = 0;
	wfs_err err = filer_store_kv_get(r->f->store, NULL, r->kv_key, strlen(r->kv_key), &val,
					 &len);
	char *s, *line, *save = NULL;

	if (err) {
		if (err != WFS_ENOENT)
			log_warn("hidden files: could not load the mount sessions: %s",
				 wfs_strerror(err));
		return;
	}
	s = xstrndup(val, len);
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' '), *end = NULL;
		uint64_t id;
		if (!sp || sp - line != 16 || sp[1] != '/')
			continue;
		*sp = '\0';
		id = strtoull(line, &end, 16);
		if (end != sp || !id)
			continue;
		rec_add(r, id, sp + 1, false);
	}
	free(s);
	free(val);
	if (r->n)
		log_info("hidden files: %zu mount session(s) from before the start", r->n);
}

/*
 * Deletes the "<16 hex session>-*" files in dir. Returns WFS_OK when none is
 * left (also when dir is gone). Any worker or the reclaim thread.
 */
static wfs_err reclaim_files(struct filer *f, uint64_t session, const char *dir)
{
	char prefix[20];
	size_t done = 0;
	wfs_err err = WFS_OK;

	snprintf(prefix, sizeof(prefix), "%016" PRIx64 "-", session);
	for (;;) {
		struct ns_page page = {0};
		size_t got = 0, before = done;
		err = filer_store_list(f->store, NULL, dir, NULL, false, RECLAIM_PAGE, prefix,
				       ns_page_add, &page, &got);
		if (err == WFS_ENOENT)
			err = WFS_OK;
		for (size_t i = 0; !err && i < page.n; i++) {
			struct filer_entry *e = page.v[i];
			char *full = filer_path_join(dir, e->name);
			struct ns_delete d = {.path = full, .dir = dir, .name = e->name};
			struct ns_result res = {0};
			wfs_err de = filer_entry_is_dir(e) ? WFS_OK : ns_delete(f, 0, &d, &res);
			if (de && de != WFS_ENOENT) {
				log_warn("hidden files: could not delete %s: %s", full, res.msg);
				err = de;
			} else if (!filer_entry_is_dir(e)) {
				done++;
			}
			free(full);
		}
		ns_page_free(&page);
		/* directories (none a mount makes) are left: a page of them ends it */
		if (err || got < RECLAIM_PAGE || done == before)
			break;
	}
	if (done)
		log_info("hidden files: %zu left by mount %016" PRIx64 " deleted from %s", done,
			 session, dir);
	return err;
}

void filer_reclaim_session(struct filer *f, uint64_t session, const char *dir, bool reclaimed)
{
	struct filer_reclaim *r = f->reclaim;
	struct rc_rec *x;

	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	x = rec_find(r, session);
	if (!x) {
		rec_add(r, session, dir, true);
		persist(r);
	} else if (strcmp(x->dir, dir)) {
		free(x->dir);
		x->dir = xstrdup(dir);
		persist(r);
	}
	x = rec_find(r, session);
	x->seen_live = true;
	x->reclaimed |= reclaimed;
	pthread_mutex_unlock(&r->mu);
}

void filer_reclaim_end(struct filer *f, uint64_t session)
{
	struct filer_reclaim *r = f->reclaim;
	struct rc_rec *x;
	char *dir = NULL;

	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	x = rec_find(r, session);
	if (x)
		dir = xstrdup(x->dir);
	pthread_mutex_unlock(&r->mu);
	if (dir && !reclaim_files(f, session, dir)) {
		pthread_mutex_lock(&r->mu);
		rec_drop(r, session);
		pthread_mutex_unlock(&r->mu);
	}
	free(dir);
}

/* One check of every record. Reclaim thread. */
static void check(struct filer_reclaim *r)
{
	struct rc_rec *due = NULL;
	size_t n = 0;
	uint64_t now = time_mono_ns();
	bool grace;

	pthread_mutex_lock(&r->mu);
	grace = filer_locks_in_grace(r->f->locks, now, NULL);
	if (grace) {
		/* every mount that may hold locks has re-asserted them: no need to wait */
		bool all = true;
		for (size_t i = 0; i < r->n && all; i++)
			all = r->recs[i].reclaimed;
		if (all) {
			filer_locks_set_grace(r->f->locks, 0);
			log_info("locks: every mount session reclaimed its locks: grace period over");
			grace = false;
		}
	}
	for (size_t i = 0; i < r->n; i++) {
		struct rc_rec *x = &r->recs[i];
		if ((!x->seen_live && grace) ||
		    filer_locks_session_live(r->f->locks, x->session, now))
			continue;
		due = xrealloc(due, (n + 1) * sizeof(*due));
		due[n++] = (struct rc_rec){x->session, xstrdup(x->dir), x->seen_live, false};
	}
	pthread_mutex_unlock(&r->mu);
	for (size_t i = 0; i < n; i++) {
		wfs_err err = reclaim_files(r->f, due[i].session, due[i].dir);
		pthread_mutex_lock(&r->mu);
		/* a mount that came back meanwhile keeps its record (and what is left) */
		if (!err && !filer_locks_session_live(r->f->locks, due[i].session, time_mono_ns()))
			rec_drop(r, due[i].session);
		pthread_mutex_unlock(&r->mu);
		free(due[i].dir);
	}
	free(due);
}

static void *reclaim_main(void *arg)
{
	struct filer_reclaim *r = arg;

	pthread_mutex_lock(&r->mu);
	while (!r->stop) {
		struct timespec ts = time_deadline(CLOCK_MONOTONIC, RECLAIM_POLL_MS * 1000000ull);
		while (!r->stop && pthread_cond_timedwait(&r->cv, &r->mu, &ts) != ETIMEDOUT)
			;
		if (r->stop)
			break;
		pthread_mutex_unlock(&r->mu);
		check(r);
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

struct filer_reclaim *filer_reclaim_start(struct filer *f)
{
	struct filer_reclaim *r = xcalloc(1, sizeof(*r));
	pthread_condattr_t ca;

	r->f = f;
	r->kv_key = xasprintf("lockSessions:%s", f->self);
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	load(r);
	if (!r->n) /* no mount had a session when this filer stopped: no lock to wait for */
		filer_locks_set_grace(f->locks, 0);
	if (thread_start(&r->th, NULL, reclaim_main, r, "wfs-filer-rclm"))
		fatal("could not start the hidden-file reclaimer");
	return r;
}

void filer_reclaim_stop(struct filer_reclaim *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->th, NULL);
	for (size_t i = 0; i < r->n; i++)
		free(r->recs[i].dir);
	free(r->recs);
	free(r->kv_key);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}
