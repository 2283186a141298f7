/*
 * The metalog (subscriptions, event JSON) and the garbage worker, over a real
 * store: SQLite in a temporary directory by default, PostgreSQL when
 * $WEEDFS_TEST_PG_DSN is set (tests/integration/test_filer_store_pg.py).
 * "Another filer" is a second store handle on the same database.
 */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "client/entry_json.h"
#include "filer/gc_queue.h"
#include "filer/metalog.h"
#include "json.h"
#include "tap.h"
#include "util.h"

#define MS 1000000LL
/*
 * How long a woken waiter may take to see its event, in a test run on a
 * loaded machine; the waits themselves time out later (WAIT_MS), so a
 * waiter nobody woke fails. The latency is measured by tests/bench/filer_metalog.
 */
#define WAKE_DEADLINE_NS (3000 * MS)
#define WAIT_MS 10000

static struct filer_store *st, *st2;
static char root[64];

static struct filer_entry *mk(const char *dir, const char *name)
{
	struct filer_entry *e = filer_entry_new(dir, name);
	e->attr.mode = S_IFREG | 0644;
	e->attr.size = 3;
	e->attr.mtime_ns = (int64_t)time_now_ns();
	filer_entry_set_content(e, "abc", 3);
	return e;
}

/*
 * insert + event in one transaction signed sig, committed through metalog m
 * (which wakes its waiters)
 */
static wfs_err create_signed(struct metalog *m, struct filer_store *s, const char *dir,
			     const char *name, int32_t sig)
{
	struct filer_tx *tx;
	struct filer_entry *e = mk(dir, name);
	wfs_err err = filer_store_begin(s, &tx);
	if (!err) {
		filer_store_tx_sign(tx, sig);
		err = filer_store_insert(s, tx, e);
		if (!err)
			err = metalog_append(m, tx, NULL, e, NULL);
		if (err)
			filer_store_rollback(tx);
		else
			err = metalog_commit(m, tx);
	}
	filer_entry_free(e);
	return err;
}

static wfs_err create(struct metalog *m, struct filer_store *s, const char *dir, const char *name)
{
	return create_signed(m, s, dir, name, 0);
}

struct waiter {
	struct metalog_cursor *c;
	int timeout_ms;
	uint64_t got_at; /* monotonic ns when the first event arrived */
	size_t n;
	char name[64];
	wfs_err err;
};

static bool take_first(void *ctx, struct filer_event *ev)
{
	struct waiter *w = ctx;
	if (!w->got_at) {
		w->got_at = time_mono_ns();
		snprintf(w->name, sizeof(w->name), "%s", ev->new_entry ? ev->new_entry->name : "?");
	}
	filer_event_free(ev);
	return true;
}

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	w->err = metalog_wait(w->c, w->timeout_ms, take_first, w, &w->n);
	return NULL;
}

static void test_local_wake(void)
{
	struct metalog_opts o;
	struct metalog *m;
	struct waiter w = {0};
	pthread_t th;
	int64_t clock;
	uint64_t t_commit;
	char *d = xasprintf("%s/local", root);

	metalog_opts_default(&o);
	o.poll_ms = 0; /* no poller: only the local notification can wake the waiter */
	m = metalog_new(st, &o);
	filer_store_event_clock(st, &clock);
	w.c = metalog_subscribe(m, d, clock, 0);
	w.timeout_ms = WAIT_MS;
	pthread_create(&th, NULL, wait_thread, &w);
	usleep(100000); /* let it block (the outcome does not depend on it) */
	is_int(create(m, st, d, "x1"), WFS_OK, "create with event, committed via metalog_commit");
	t_commit = time_mono_ns();
	pthread_join(th, NULL);
	is_int(w.err, WFS_OK, "wait returns");
	ok(w.n == 1 && !strcmp(w.name, "x1"), "the waiter got the event");
	ok(w.got_at && w.got_at < t_commit + WAKE_DEADLINE_NS,
	   "woken by the commit, not by its wait's timeout");
	ok(metalog_cursor_position(w.c) > clock, "position advanced");

	/* a cursor skipping signature 9 sleeps through a commit signed 9, wakes for the next */
	struct waiter ws = {.timeout_ms = WAIT_MS};
	char *ds = xasprintf("%s/local-signed", root);
	ws.c = metalog_subscribe(m, ds, metalog_cursor_position(w.c), 9);
	pthread_create(&th, NULL, wait_thread, &ws);
	usleep(50000);
	is_int(create_signed(m, st, ds, "mine", 9), WFS_OK, "a commit signed 9");
	usleep(100000);
	is_int(create(m, st, ds, "theirs"), WFS_OK, "an unsigned commit");
	t_commit = time_mono_ns();
	pthread_join(th, NULL);
	ok(ws.err == WFS_OK && ws.n == 1 && !strcmp(ws.name, "theirs"),
	   "the skipping waiter got only the unsigned event");
	ok(ws.got_at && ws.got_at < t_commit + WAKE_DEADLINE_NS, "woken by it");
	metalog_cursor_free(ws.c);
	free(ds);

	/* a timeout with nothing new */
	size_t n = 9;
	uint64_t t0 = time_mono_ns();
	is_int(metalog_wait(w.c, 100, take_first, &w, &n), WFS_OK, "wait with nothing new");
	ok(n == 0 && time_mono_ns() - t0 >= 90 * MS, "times out after ~100 ms with nothing");
	/* shutdown wakes waiters */
	struct waiter w2 = {.c = w.c, .timeout_ms = -1};
	pthread_create(&th, NULL, wait_thread, &w2);
	usleep(50000);
	metalog_shutdown(m);
	pthread_join(th, NULL);
	is_int(w2.err, WFS_EUNAVAIL, "shutdown ends an unlimited wait");
	metalog_cursor_free(w.c);
	metalog_free(m);
	free(d);
}

static void test_other_filer(void)
{
	struct metalog *m1, *m2;
	struct metalog_opts o;
	struct waiter w = {0};
	pthread_t th;
	int64_t clock;
	uint64_t t_commit;
	char *d = xasprintf("%s/other", root);

	m1 = metalog_new(st, NULL);
	metalog_opts_default(&o); /* poll every 200 ms */
	m2 = metalog_new(st2, &o);
	filer_store_event_clock(st, &clock);
	w.c = metalog_subscribe(m2, d, clock, 0);
	w.timeout_ms = WAIT_MS;
	pthread_create(&th, NULL, wait_thread, &w);
	usleep(100000);
	is_int(create(m1, st, d, "y1"), WFS_OK, "filer 1 creates");
	t_commit = time_mono_ns();
	pthread_join(th, NULL);
	ok(w.err == WFS_OK && w.n == 1 && !strcmp(w.name, "y1"), "filer 2's subscriber got it");
	ok(w.got_at && w.got_at < t_commit + WAKE_DEADLINE_NS,
	   "woken by filer 2's poller, not by its wait's timeout");
	metalog_cursor_free(w.c);
	metalog_free(m2);

	/* without the poller, filer 2 would not notice within a second */
	o.poll_ms = 0;
	m2 = metalog_new(st2, &o);
	filer_store_event_clock(st, &clock);
	memset(&w, 0, sizeof(w));
	w.c = metalog_subscribe(m2, d, clock, 0);
	w.timeout_ms = 1000;
	pthread_create(&th, NULL, wait_thread, &w);
	usleep(100000);
	create(m1, st, d, "y2");
	pthread_join(th, NULL);
	is_int(w.n, 0, "control: no poller, no wake-up from another filer");
	metalog_cursor_free(w.c);
	metalog_free(m2);
	metalog_free(m1);
	free(d);
}

struct seq {
	char **names;
	int64_t *ts;
	size_t n, cap, stop_after;
};

static bool seq_add(void *ctx, struct filer_event *ev)
{
	struct seq *s = ctx;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 128;
		s->names = xrealloc(s->names, s->cap * sizeof(*s->names));
		s->ts = xrealloc(s->ts, s->cap * sizeof(*s->ts));
	}
	s->names[s->n] = xstrdup(ev->new_entry ? ev->new_entry->name : "?");
	s->ts[s->n++] = ev->ts_ns;
	filer_event_free(ev);
	return !s->stop_after || s->n < s->stop_after;
}

static void test_resume(void)
{
	struct metalog_opts o;
	struct metalog *m, *m2;
	struct metalog_cursor *c;
	struct seq s = {0};
	char *d = xasprintf("%s/resume", root), *other = xasprintf("%s/resumeX", root);
	int64_t clock, pos;
	size_t n, bad = 0;
	wfs_err err = WFS_OK;

	metalog_opts_default(&o);
	o.batch = 13;
	m = metalog_new(st, &o);
	m2 = metalog_new(st2, &o);
	filer_store_event_clock(st, &clock);
	for (int i = 0; i < 100 && !err; i++) {
		char name[16];
		snprintf(name, sizeof(name), "r%03d", i);
		err = i % 3 ? create(m, st, i % 4 ? d : other, name)
			    : create(m2, st2, i % 4 ? d : other, name);
	}
	is_int(err, WFS_OK, "100 creates over two handles, a quarter outside the prefix");
	c = metalog_subscribe(m, d, clock, 0);
	s.stop_after = 37;
	is_int(metalog_wait(c, 0, seq_add, &s, &n), WFS_OK, "first wait");
	while (s.n < 37 && !metalog_wait(c, 0, seq_add, &s, &n) && n)
		;
	is_int(s.n, 37, "a client stops after 37 events");
	pos = metalog_cursor_position(c);
	ok(s.n == 37 && pos == s.ts[36], "the position is the last delivered event");
	metalog_cursor_free(c);
	/* the client reconnects with its token */
	c = metalog_subscribe(m, d, pos, 0);
	s.stop_after = 0;
	while (!metalog_wait(c, 0, seq_add, &s, &n) && n)
		;
	is_int(s.n, 75, "resumed: the 75 events under the prefix in all");
	for (size_t i = 0, k = 0; i < 100; i++) {
		char name[16];
		if (!(i % 4))
			continue;
		snprintf(name, sizeof(name), "r%03zu", i);
		if (k >= s.n || strcmp(s.names[k], name) || (k && s.ts[k] <= s.ts[k - 1]))
			bad++;
		k++;
	}
	is_int(bad, 0, "no gap, no duplicate, in order across the resume");
	ok(s.n && metalog_cursor_position(c) >= s.ts[s.n - 1],
	   "position at or past the last event");
	for (size_t i = 0; i < s.n; i++)
		free(s.names[i]);
	free(s.names);
	free(s.ts);
	metalog_cursor_free(c);
	metalog_free(m2);
	metalog_free(m);
	free(d);
	free(other);
}

static bool keep_first(void *ctx, struct filer_event *ev)
{
	struct filer_event **out = ctx;
	if (!*out)
		*out = ev;
	else
		filer_event_free(ev);
	return true;
}

static void test_json(void)
{
	struct filer_entry *e = filer_entry_new("/dir", "name\xff.txt");
	struct filer_event ev = {.ts_ns = 1234567890123456789LL, .dir = (char *)"/dir"};
	buf b = BUF_INIT;
	char err[128];
	yajl_val v, ne, ch;
	const char *s;
	int64_t i64;

	e->attr.mode = S_IFREG | 0640;
	e->attr.uid = 7;
	e->attr.size = 5;
	e->attr.mtime_ns = 2000000001LL;
	e->attr.symlink_target = xstrdup("/t");
	filer_entry_xattr_set(e, "user.a", "\x00\xff", 2);
	filer_entry_set_content(e, "hello", 5);
	filer_entry_add_chunk(e, "3,01ab", 0, 5, 42, "\"e\"", false);
	ev.new_entry = e;
	metalog_event_json(&ev, &b);
	ok(b.len && b.data[b.len - 1] == '\n' && !memchr(b.data, '\n', b.len - 1),
	   "one line per event");
	v = json_parse(b.data, b.len, err, sizeof(err));
	ok(v != NULL, "valid JSON even with a non-UTF-8 name (%s)", v ? "" : err);
	if (v) {
		ok(json_get_i64(v, "tsNs", &i64) && i64 == 1234567890123456789LL, "tsNs exact");
		ok(json_get_str(v, "directory", &s) && !strcmp(s, "/dir"), "directory");
		ok(json_get(v, "oldEntry") && YAJL_IS_NULL(json_get(v, "oldEntry")),
		   "oldEntry null");
		ne = json_get(v, "newEntry");
		ok(json_get_str(ne, "name", &s) && !strcmp(s, "name\xef\xbf\xbd.txt"),
		   "invalid byte rendered as U+FFFD");
		ok(json_get_str(ne, "fullPath", &s) && !strcmp(s, "/dir/name\xef\xbf\xbd.txt"),
		   "fullPath");
		ok(json_get_i64(ne, "mode", &i64) && i64 == (S_IFREG | 0640), "mode");
		ok(json_get_i64(ne, "uid", &i64) && i64 == 7, "uid");
		ok(json_get_i64(ne, "mtime", &i64) && i64 == 2, "mtime seconds");
		ok(json_get_i64(ne, "mtimeNs", &i64) && i64 == 2000000001LL, "mtimeNs");
		ok(json_get_str(ne, "symlinkTarget", &s) && !strcmp(s, "/t"), "symlinkTarget");
		ok(json_get_str(json_get(ne, "xattrs"), "user.a", &s) && !strcmp(s, "AP8="),
		   "xattr value in base64");
		ok(json_get_str(ne, "content", &s) && !strcmp(s, "aGVsbG8="), "content in base64");
		ch = json_get(ne, "chunks");
		ok(ch && YAJL_IS_ARRAY(ch) && ch->u.array.len == 1, "one chunk");
		if (ch && YAJL_IS_ARRAY(ch) && ch->u.array.len == 1) {
			yajl_val c0 = ch->u.array.values[0];
			ok(json_get_str(c0, "fileId", &s) && !strcmp(s, "3,01ab"), "fileId");
			ok(json_get_i64(c0, "mtimeNs", &i64) && i64 == 42, "chunk mtimeNs");
			ok(json_get_str(c0, "eTag", &s) && !strcmp(s, "\"e\""), "eTag escaped");
		}
		ok(json_get(ne, "isDirectory") && YAJL_IS_FALSE(json_get(ne, "isDirectory")),
		   "isDirectory false");
		yajl_tree_free(v);
	}
	buf_reset(&b);
	entry_json(e, 0, &b);
	ok(b.len && !strstr(b.data, "\"content\"") && strstr(b.data, "\"contentLength\":5"),
	   "without the flag: only the content length");
	buf_free(&b);
	filer_entry_free(e);

	/* an event read back from the store renders too */
	{
		struct metalog *m = metalog_new(st, NULL);
		char *d = xasprintf("%s/json", root);
		struct filer_event *got = NULL;
		int64_t clock, next;
		filer_store_event_clock(st, &clock);
		create(m, st, d, "j");
		filer_store_read_events(st, clock, d, 0, 10, keep_first, &got, &next);
		ok(got != NULL, "read back");
		if (got) {
			buf_init(&b);
			metalog_event_json(got, &b);
			v = json_parse(b.data, b.len, err, sizeof(err));
			ok(v && YAJL_IS_NULL(json_get(v, "oldEntry")) &&
				   json_get_str(json_get(v, "newEntry"), "name", &s) &&
				   !strcmp(s, "j"),
			   "stored event as JSON");
			ok(got->new_entry && got->new_entry->content_omitted &&
				   !got->new_entry->has_content && got->new_entry->content_len == 3,
			   "the event keeps the inline content's length, not its bytes");
			ok(v && !json_get(json_get(v, "newEntry"), "content") &&
				   json_get_i64(json_get(v, "newEntry"), "contentLength", &i64) &&
				   i64 == 3,
			   "as JSON: contentLength without content");
			yajl_tree_free(v);
			buf_free(&b);
			filer_event_free(got);
		}
		metalog_free(m);
		free(d);
	}
}

/* ---- the garbage worker ---- */

struct recorder {
	pthread_mutex_t mu;
	char **deleted; /* successful deletes, in order */
	int64_t *at;    /* the wall clock (the leases' clock) at each of them */
	size_t n, cap;
	int fail_first; /* fail each id this many times */
	char **seen;    /* ids attempted, with attempts counts */
	int *tries;
	size_t nseen;
	size_t calls;
	int sleep_ms; /* per call */
	bool started;
	pthread_cond_t cv;
};

static void rec_delete(void *ctx, const char *const *fids, size_t n, wfs_err *res)
{
	struct recorder *r = ctx;
	pthread_mutex_lock(&r->mu);
	r->calls++;
	r->started = true;
	pthread_cond_broadcast(&r->cv);
	for (size_t i = 0; i < n; i++) {
		size_t k;
		for (k = 0; k < r->nseen && strcmp(r->seen[k], fids[i]); k++)
			;
		if (k == r->nseen) {
			r->seen = xrealloc(r->seen, (k + 1) * sizeof(*r->seen));
			r->tries = xrealloc(r->tries, (k + 1) * sizeof(*r->tries));
			r->seen[k] = xstrdup(fids[i]);
			r->tries[k] = 0;
			r->nseen++;
		}
		if (r->tries[k]++ < r->fail_first) {
			res[i] = WFS_EUNAVAIL;
			continue;
		}
		res[i] = WFS_OK;
		if (r->n == r->cap) {
			r->cap = r->cap ? r->cap * 2 : 64;
			r->deleted = xrealloc(r->deleted, r->cap * sizeof(*r->deleted));
			r->at = xrealloc(r->at, r->cap * sizeof(*r->at));
		}
		r->at[r->n] = (int64_t)time_now_ns();
		r->deleted[r->n++] = xstrdup(fids[i]);
	}
	pthread_mutex_unlock(&r->mu);
	if (r->sleep_ms)
		usleep((useconds_t)r->sleep_ms * 1000);
}

static void rec_init(struct recorder *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
}

static void rec_free(struct recorder *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->deleted[i]);
	for (size_t i = 0; i < r->nseen; i++)
		free(r->seen[i]);
	free(r->deleted);
	free(r->at);
	free(r->seen);
	free(r->tries);
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
}

/* How many of r's deletions are of ids with tag; dups counts ids deleted twice. */
static size_t rec_own(struct recorder *r, const char *tag, size_t *dups)
{
	char *p = xasprintf("%s/%s/", root, tag);
	size_t c = 0;
	*dups = 0;
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->n; i++) {
		if (strncmp(r->deleted[i], p, strlen(p)))
			continue;
		c++;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(r->deleted[i], r->deleted[j]))
				(*dups)++;
	}
	pthread_mutex_unlock(&r->mu);
	free(p);
	return c;
}

/* When r first deleted an id with tag after the first skip such deletions (INT64_MAX: never). */
static int64_t rec_first_at(struct recorder *r, const char *tag, size_t skip)
{
	char *p = xasprintf("%s/%s/", root, tag);
	int64_t first = INT64_MAX;
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->n; i++) {
		if (strncmp(r->deleted[i], p, strlen(p)))
			continue;
		if (skip) {
			skip--;
			continue;
		}
		if (r->at[i] < first)
			first = r->at[i];
	}
	pthread_mutex_unlock(&r->mu);
	free(p);
	return first;
}

static char **mkfids(const char *tag, int n)
{
	char **f = xmalloc(sizeof(*f) * (size_t)n);
	for (int i = 0; i < n; i++)
		f[i] = xasprintf("%s/%s/%04d", root, tag, i);
	return f;
}

static void freefids(char **f, int n)
{
	for (int i = 0; i < n; i++)
		free(f[i]);
	free(f);
}

/* Waits up to ms for r to hold want own deletions of tag. */
static size_t wait_own(struct recorder *r, const char *tag, size_t want, int ms)
{
	size_t d, c = 0;
	for (int i = 0; i < ms / 10 && (c = rec_own(r, tag, &d)) < want; i++)
		usleep(10000);
	return rec_own(r, tag, &d);
}

static void test_gc_retries(void)
{
	struct recorder r;
	struct gc_queue_opts o;
	struct gc_queue *q;
	struct gc_queue_stats stats;
	char **f = mkfids("retry", 100);
	size_t dups;
	uint64_t t0;

	rec_init(&r);
	r.fail_first = 2;
	gc_queue_opts_default(&o);
	o.batch = 40;
	o.lease_ns = 10000 * MS;
	o.idle_ms = 20;
	o.backoff_min_ns = 20 * MS;
	o.backoff_max_ns = 100 * MS;
	q = gc_queue_start(st, &o, rec_delete, &r);
	is_int(filer_store_gc_enqueue(st, NULL, (const char *const *)f, 100, 0), WFS_OK,
	       "enqueue 100");
	gc_queue_kick(q);
	t0 = time_mono_ns();
	is_int(wait_own(&r, "retry", 100, 10000), 100, "all 100 deleted despite two failures each");
	printf("# 100 ids with 2 failures each done in %.0f ms\n", (time_mono_ns() - t0) / 1e6);
	rec_own(&r, "retry", &dups);
	is_int(dups, 0, "each deleted once");
	/* the counters follow the store's done/defer calls, a moment after the callback */
	for (int i = 0; i < 500; i++) {
		gc_queue_get_stats(q, &stats);
		if (stats.deleted >= 100)
			break;
		usleep(10000);
	}
	ok(stats.failed >= 200 && stats.deleted >= 100, "stats: %llu failed, %llu deleted",
	   (unsigned long long)stats.failed, (unsigned long long)stats.deleted);
	gc_queue_stop(q);
	{
		struct filer_gc_item *it;
		size_t n, mine = 0;
		filer_store_gc_take(st, FILER_GC_BATCH_MAX, 1000 * MS, &it, &n);
		for (size_t i = 0; i < n; i++)
			mine += strstr(it[i].fid, "/retry/") != NULL;
		is_int(mine, 0, "nothing of them left in the queue");
		filer_gc_items_free(it, n);
	}
	rec_free(&r);
	freefids(f, 100);
}

static void test_gc_crash(void)
{
	struct recorder r;
	struct gc_queue_opts o;
	struct gc_queue *q;
	char **f = mkfids("crash", 20), **g = mkfids("stop", 128);
	struct filer_gc_item *it;
	size_t n, dups;
	int64_t t0;

	/*
	 * (a) a worker took 20 ids and died: the lease is all that is left of it. A lease
	 * taken at t0 or later ends at t0 + lease or later, so a deletion before that time
	 * (the wall clock, which the leases use) ignored it, however slow the machine.
	 */
	is_int(filer_store_gc_enqueue(st, NULL, (const char *const *)f, 20, 0), WFS_OK,
	       "enqueue 20");
	t0 = (int64_t)time_now_ns();
	is_int(filer_store_gc_take(st2, 20, 600 * MS, &it, &n), WFS_OK,
	       "a worker on filer 2 takes");
	is_int(n, 20, "takes all 20, then crashes");
	filer_gc_items_free(it, n);
	rec_init(&r);
	gc_queue_opts_default(&o);
	o.lease_ns = 600 * MS;
	o.idle_ms = 20;
	q = gc_queue_start(st, &o, rec_delete, &r);
	is_int(wait_own(&r, "crash", 20, 10000), 20, "a new worker deletes them");
	ok(rec_first_at(&r, "crash", 0) >= t0 + o.lease_ns,
	   "it left them alone until their lease ran out");
	gc_queue_stop(q);
	rec_free(&r);

	/* (b) a worker stopped in the middle of a batch */
	rec_init(&r);
	r.sleep_ms = 100;
	o.batch = 128;
	o.lease_ns = 800 * MS;
	is_int(filer_store_gc_enqueue(st, NULL, (const char *const *)g, 128, 0), WFS_OK,
	       "enqueue 128");
	t0 = (int64_t)time_now_ns(); /* the worker takes them after this */
	q = gc_queue_start(st, &o, rec_delete, &r);
	pthread_mutex_lock(&r.mu);
	while (!r.started)
		pthread_cond_wait(&r.cv, &r.mu);
	pthread_mutex_unlock(&r.mu);
	gc_queue_stop(q); /* during the first slice of the batch */
	size_t first = rec_own(&r, "stop", &dups);
	ok(first > 0 && first < 128, "stopped mid-batch after %zu deletions", first);
	r.sleep_ms = 0;
	q = gc_queue_start(st2, &o, rec_delete, &r); /* "restart", on the other filer */
	is_int(wait_own(&r, "stop", 128, 10000), 128, "then all 128 are deleted");
	ok(rec_first_at(&r, "stop", first) >= t0 + o.lease_ns,
	   "the rest stayed leased until the lease ran out");
	rec_own(&r, "stop", &dups);
	is_int(dups, 0, "none twice (the finished ones were marked done)");
	gc_queue_stop(q);
	rec_free(&r);
	freefids(f, 20);
	freefids(g, 128);
}

int main(int argc, char **argv)
{
	const char *dsn = argc > 1 ? argv[1] : getenv("WEEDFS_TEST_PG_DSN");
	char tmpdir[] = "/tmp/test_filer_metalog.XXXXXX";
	char *own = NULL;

	if (!dsn || !dsn[0]) {
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			return 1;
		}
		own = xasprintf("sqlite://%s/filer.db", tmpdir);
		dsn = own;
	}
	snprintf(root, sizeof(root), "/m%d-%llu", (int)getpid(),
		 (unsigned long long)(time_now_ns() / 1000) % 1000000000ull);
	is_int(filer_store_open(dsn, &st), WFS_OK, "open store");
	is_int(st ? filer_store_open(dsn, &st2) : WFS_EINVAL, WFS_OK, "open a second handle");
	if (!st || !st2)
		return done_testing();
	printf("# store %s\n", filer_store_name(st));
	test_local_wake();
	test_other_filer();
	test_resume();
	test_json();
	test_gc_retries();
	test_gc_crash();
	filer_store_close(st2);
	filer_store_close(st);
	if (own) {
		static const char *const suffix[] = {"", "-wal", "-shm"};
		for (size_t i = 0; i < ARRAY_LEN(suffix); i++) {
			char *p = xasprintf("%s/filer.db%s", tmpdir, suffix[i]);
			unlink(p);
			free(p);
		}
		rmdir(tmpdir);
		free(own);
	}
	return done_testing();
}
