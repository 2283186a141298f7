/*
 * fcntl and flock locks through the filer (fuse_locks.h).
 *
 * DESIGN: every lock call is one filer "lock" / "getLock" request; the
 * filer's table is the only truth (no local fast path). The filer names the
 * file by a key it derives from the path at the first lock (the hard-link
 * id, else the path); the mount keeps that key per inode while its session
 * holds locks there, so the unlock at close reaches the same locks after a
 * rename, and a flush of a file this mount never locked costs no request.
 * The per-inode record serialises the inode's lock calls, so the "held"
 * count the filer answers with is current when the record is dropped.
 * Blocking requests poll (5 ms doubling to 200 ms) and end with EINTR when
 * the kernel interrupts them (a signal to the waiting process). A conflict is
 * WFS_EBUSY inside (the filer's 409), EAGAIN at the FUSE edge. State is
 * process-wide: a weedfs-mount process serves one mount.
 *
 * Restarts: each record also keeps what this mount holds there (the granted
 * requests applied with client/lock_ranges.h, the filer's own rules). When
 * the session turns out to be new to the filer (lockSession's or a lock
 * answer's "created") while the filer is in its grace period, the renewal
 * thread re-asserts every held lock ("reclaim") and then says so
 * ("reclaimed"); a new lock the filer defers meanwhile (WFS_EPRECOND) is
 * retried, a non-blocking one too (as NFS clients do). A lock that cannot be
 * re-asserted (refused, or the session was dropped outside a grace period)
 * is lost: the owner's next lock call on the inode fails with ENOLCK, so the
 * holder learns it no longer excludes the others. A lock call can be the
 * first to meet the new session (the renewal thread has not run yet): when
 * the filer grants it, it is outside a grace (which defers such locks), so
 * the record's older locks are lost there and then, and the record is left
 * out of the renewal thread's pass ("fresh"): the new lock stays recorded and
 * its close unlocks it.
 *
 * A loss is also told at the next I/O through the descriptor the lock was
 * taken through: a granted lock call notes its owner in the open file's
 * handle (fi->fh; the last POSIX and the last flock owner), and a write or an
 * fsync on the handle whose noted owner lost a lock there fails with ENOLCK.
 * One mark per owner and inode: the lock call or the I/O, whichever comes
 * first, is told, once. Not the I/O's own lock_owner: the kernel sets it only
 * for direct I/O (FUSE_READ_LOCKOWNER, FUSE_WRITE_LOCKOWNER); flush has it
 * always, but a close needs no telling (it unlocks). Not reads: buffered ones
 * go through the page cache (a cached page never reaches the mount, a failed
 * readahead is EIO). Not writebacks of cached pages (fi->writepage, mmap,
 * -writebackCache): failing one would drop data the writer already had
 * accepted; with -writebackCache only fsync tells.
 */
#include "config.h"
#include "fuse_locks.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include "client/entry_json.h"
#include "client/lock_ranges.h"
#include "fuse_ops_int.h"
#include "json.h"
#include "log.h"
#include "util.h"

#define LK_BUCKETS    256
#define RENEW_MAX_MS  3000 /* renewals: a fifth of the lease, at most this */
#define POLL_FIRST_MS 5
#define POLL_MAX_MS   200
#define LOCK_TO_EOF   0 /* length 0: to the end of the file */

/* A lock owner whose locks on an inode were lost (not re-asserted after a restart). */
struct lk_lost {
	uint64_t owner;
	bool flock;
};

/* This mount's locks on one inode. */
struct lk_ino {
	uint64_t ino;
	int refs;           /* protected by g.mu: calls using the record */
	size_t held;        /* protected by g.mu: locks the session holds under key */
	pthread_mutex_t mu; /* serialises the inode's lock calls; lock order mu, g.mu */
	char *key;          /* protected by mu: the filer's key, NULL until known */
	struct filer_lock *v; /* protected by mu: what the session holds under key */
	size_t n, cap;
	bool fresh; /* protected by mu: v was begun after the filer forgot the session */
	struct lk_lost *lost; /* protected by g.mu: owners to tell, at their next call */
	size_t nlost;
	struct lk_ino *next;
};

static struct {
	pthread_mutex_t mu;
	struct lk_ino *inos[LK_BUCKETS]; /* protected by mu */
	struct mount_ctx *m;             /* protected by mu: set with started */
	bool started, stop;              /* protected by mu */
	bool opened;     /* protected by mu: the filer answered a lockSession once */
	bool recheck;    /* protected by mu: a lock answer said the session was new */
	uint64_t lease_s;                /* the lease asked for */
	char *hidden_dir;                /* where hide_open_file puts files (the filer reclaims) */
	pthread_cond_t cv;               /* wakes the renewal thread (stop, recheck) */
	pthread_t thread;
	atomic_size_t nlost; /* written under mu: the marks of every record (I/O's fast path) */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t session_id(const struct mount_ctx *m) { return m->mount_id ? m->mount_id : 1; }

static void reassert_all(struct mount_ctx *m, bool grace);

/*
 * One lockSession call (renewal, with reclaimed after a re-assert). *created
 * and *grace from the answer. Renewal thread (or start).
 */
static wfs_err session_call(struct mount_ctx *m, bool reclaimed, bool *created, bool *grace)
{
	buf body, resp;
	json_w *w;
	wfs_err rc;

	*created = *grace = false;
	buf_init(&body);
	buf_init(&resp);
	w = jw_new(&body, false);
	jw_obj_begin(w);
	jw_kv_u64(w, "session", session_id(m));
	jw_kv_u64(w, "leaseSeconds", g.lease_s);
	if (g.hidden_dir)
		entry_json_kv_bytes(w, "hiddenDir", g.hidden_dir);
	if (reclaimed)
		jw_kv_bool(w, "reclaimed", true);
	jw_obj_end(w);
	jw_free(w);
	rc = filer_rpc_call(m->rpc, "lockSession", body.data, body.len, &resp);
	if (!rc) {
		yajl_val v = json_parse(resp.data, resp.len, NULL, 0);
		if (v) {
			json_get_bool(v, "created", created);
			json_get_bool(v, "grace", grace);
			yajl_tree_free(v);
		}
	}
	buf_free(&body);
	buf_free(&resp);
	return rc;
}

/* Renews the session; re-asserts the locks when the filer had forgotten it. */
static void renew_once(struct mount_ctx *m)
{
	bool created, grace, opened, recheck;
	wfs_err rc = session_call(m, false, &created, &grace);

	pthread_mutex_lock(&g.mu);
	opened = g.opened;
	recheck = g.recheck;
	g.recheck = false;
	if (!rc)
		g.opened = true;
	pthread_mutex_unlock(&g.mu);
	if (rc) {
		log_warn("lock session: renewal failed: %s", wfs_strerror(rc));
		return;
	}
	if (!opened || !(created || recheck))
		return;
	if (grace)
		log_info("lock session: the filer restarted: re-asserting this mount's locks");
	else
		log_warn("lock session: the filer had dropped it (lease expiry): locks held "
			 "before are lost; their holders get ENOLCK at their next lock call");
	reassert_all(m, grace);
	if (grace && session_call(m, true, &created, &grace))
		log_warn("lock session: could not tell the filer the locks are re-asserted");
}

static void *renew_main(void *arg)
{
	struct mount_ctx *m = arg;
	uint64_t every_ms = g.lease_s * 1000 / 5;
	struct timespec ts;

	if (every_ms > RENEW_MAX_MS)
		every_ms = RENEW_MAX_MS;
	pthread_mutex_lock(&g.mu);
	while (!g.stop) {
		ts = time_deadline(CLOCK_MONOTONIC, every_ms * 1000000u);
		while (!g.stop && !g.recheck &&
		       pthread_cond_timedwait(&g.cv, &g.mu, &ts) != ETIMEDOUT)
			;
		if (g.stop)
			break;
		pthread_mutex_unlock(&g.mu);
		renew_once(m);
		pthread_mutex_lock(&g.mu);
	}
	pthread_mutex_unlock(&g.mu);
	return NULL;
}

void fuse_locks_start(struct mount_ctx *m, unsigned lease_s)
{
	pthread_condattr_t ca;

	pthread_mutex_lock(&g.mu);
	if (g.started) {
		pthread_mutex_unlock(&g.mu);
		return;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g.cv, &ca);
	pthread_condattr_destroy(&ca);
	g.m = m;
	g.stop = false;
	g.lease_s = lease_s ? lease_s : 15;
	g.hidden_dir = itable_child_path(m->it, ITABLE_ROOT, MOUNT_TRASH_NAME);
	pthread_mutex_unlock(&g.mu);
	renew_once(m); /* the session exists before any file is hidden */
	pthread_mutex_lock(&g.mu);
	if (thread_start(&g.thread, NULL, renew_main, m, "wfs-locks"))
		fatal("could not start the lock session thread");
	g.started = true;
	pthread_mutex_unlock(&g.mu);
}

static void ino_free(struct lk_ino *e)
{
	pthread_mutex_destroy(&e->mu);
	free(e->key);
	free(e->v);
	free(e->lost);
	free(e);
}

void fuse_locks_stop(struct mount_ctx *m)
{
	buf body, resp;
	wfs_err rc;

	pthread_mutex_lock(&g.mu);
	if (!g.started) {
		pthread_mutex_unlock(&g.mu);
		return;
	}
	g.stop = true;
	pthread_cond_signal(&g.cv);
	pthread_mutex_unlock(&g.mu);
	pthread_join(g.thread, NULL);
	pthread_cond_destroy(&g.cv);

	/* the filer drops the locks and deletes the files this mount still hides */
	buf_init(&body);
	buf_init(&resp);
	buf_printf(&body, "{\"session\":%llu,\"release\":true}", (unsigned long long)session_id(m));
	rc = filer_rpc_call(m->rpc, "lockSession", body.data, body.len, &resp);
	if (rc)
		log_warn("lock session: release at unmount failed (the lease frees the locks and "
			 "the hidden files): %s",
			 wfs_strerror(rc));
	buf_free(&body);
	buf_free(&resp);

	pthread_mutex_lock(&g.mu);
	for (size_t b = 0; b < LK_BUCKETS; b++) {
		while (g.inos[b]) {
			struct lk_ino *e = g.inos[b];
			g.inos[b] = e->next;
			ino_free(e);
		}
	}
	free(g.hidden_dir);
	g.hidden_dir = NULL;
	atomic_store(&g.nlost, 0);
	g.started = false;
	pthread_mutex_unlock(&g.mu);
}

/* The record of ino with a reference; made (and the session started) when create. */
static struct lk_ino *ino_get(struct mount_ctx *m, uint64_t ino, bool create)
{
	struct lk_ino *e;

	pthread_mutex_lock(&g.mu);
	for (e = g.inos[ino % LK_BUCKETS]; e; e = e->next)
		if (e->ino == ino)
			break;
	(void)m;
	if (!e && create) {
		e = xcalloc(1, sizeof(*e));
		e->ino = ino;
		pthread_mutex_init(&e->mu, NULL);
		e->next = g.inos[ino % LK_BUCKETS];
		g.inos[ino % LK_BUCKETS] = e;
	}
	if (e)
		e->refs++;
	pthread_mutex_unlock(&g.mu);
	return e;
}

/* Drops a reference; the record goes when unused and no lock is left under it. */
static void ino_put(struct lk_ino *e)
{
	struct lk_ino **pp;
	bool drop;

	pthread_mutex_lock(&g.mu);
	drop = --e->refs == 0 && e->held == 0 && e->nlost == 0;
	if (drop) {
		for (pp = &g.inos[e->ino % LK_BUCKETS]; *pp != e; pp = &(*pp)->next)
			;
		*pp = e->next;
		ino_free(e);
	}
	pthread_mutex_unlock(&g.mu);
}

/* One request: what to ask the filer. */
struct lk_req {
	const char *type; /* "read", "write", "unlock" */
	uint64_t owner;
	int64_t start, length; /* length 0: to EOF */
	uint32_t pid;
	bool flock;
};

/* getLock's answer. */
struct lk_conflict {
	bool found;
	bool read; /* else write */
	int64_t start, length;
	uint64_t pid;
};

/* r as the filer's lock of this session. */
static struct filer_lock as_lock(struct mount_ctx *m, const struct lk_req *r)
{
	struct filer_lock l = {.session = session_id(m),
			       .owner = r->owner,
			       .start = r->start,
			       .end = r->length ? r->start + (r->length - 1) : FILER_LOCK_EOF,
			       .pid = r->pid,
			       .flock = r->flock};

	l.type = !strcmp(r->type, "read")    ? FILER_LOCK_READ
		 : !strcmp(r->type, "write") ? FILER_LOCK_WRITE
					     : FILER_LOCK_UNLOCK;
	return l;
}

/* Applies l (granted) to e's record of what the session holds. Under e->mu. */
static void record_apply(struct lk_ino *e, const struct filer_lock *l)
{
	struct filer_lock *out;
	size_t n, cap;

	lock_ranges_apply(e->v, e->n, l, &out, &n, &cap);
	free(e->v);
	e->v = out;
	e->n = n;
	e->cap = cap;
}

/* Whether owner's locks of its kind on e were lost; takes the mark (told once). */
static bool take_lost(struct lk_ino *e, uint64_t owner, bool flock)
{
	bool found = false;

	pthread_mutex_lock(&g.mu);
	for (size_t i = 0; i < e->nlost && !found; i++) {
		if (e->lost[i].owner == owner && e->lost[i].flock == flock) {
			e->lost[i] = e->lost[--e->nlost];
			atomic_fetch_sub(&g.nlost, 1);
			found = true;
		}
	}
	pthread_mutex_unlock(&g.mu);
	return found;
}

/* Marks owner's locks of its kind on e lost. */
static void mark_lost(struct lk_ino *e, uint64_t owner, bool flock)
{
	pthread_mutex_lock(&g.mu);
	for (size_t i = 0; i < e->nlost; i++) {
		if (e->lost[i].owner == owner && e->lost[i].flock == flock) {
			pthread_mutex_unlock(&g.mu);
			return;
		}
	}
	e->lost = xrealloc(e->lost, (e->nlost + 1) * sizeof(*e->lost));
	e->lost[e->nlost++] = (struct lk_lost){owner, flock};
	atomic_fetch_add(&g.nlost, 1);
	pthread_mutex_unlock(&g.mu);
}

/*
 * Marks the owners of e's recorded locks lost and empties the record: a lock
 * was granted outside a grace period to a session the filer did not know, so
 * it forgot them. Under e->mu.
 */
static void lose_record(struct lk_ino *e)
{
	for (size_t k = 0; k < e->n; k++)
		mark_lost(e, e->v[k].owner, e->v[k].flock);
	if (e->n)
		log_warn("ino %llu: the filer had dropped this mount's session: %zu lock(s) lost",
			 (unsigned long long)e->ino, e->n);
	free(e->v);
	e->v = NULL;
	e->n = e->cap = 0;
	e->fresh = true;
}

/*
 * One lock (get false) or getLock call (the answer in *c) for e's inode under
 * e->mu; reclaim: a re-assert after a filer restart. A granted lock or unlock
 * goes into e's record. WFS_OK, WFS_EBUSY (a conflict), WFS_EPRECOND (the
 * filer's grace period: try again), or the call's error.
 */
static wfs_err lk_call(struct mount_ctx *m, struct lk_ino *e, const struct lk_req *r, bool get,
		       bool reclaim, struct lk_conflict *c)
{
	buf body, resp;
	json_w *w;
	char *path = NULL;
	yajl_val v = NULL;
	char *key = NULL;
	uint64_t held;
	bool created = false, forgot = false;
	wfs_err rc = WFS_OK;

	buf_init(&body);
	buf_init(&resp);
	w = jw_new(&body, false);
	jw_obj_begin(w);
	if (e->key) {
		entry_json_kv_bytes(w, "key", e->key);
	} else {
		path = itable_path(m->it, e->ino);
		if (!path) {
			rc = WFS_ENOENT;
			jw_free(w);
			goto out;
		}
		entry_json_kv_bytes(w, "path", path);
	}
	jw_kv_u64(w, "session", session_id(m));
	jw_kv_u64(w, "owner", r->owner);
	jw_kv_u64(w, "pid", r->pid);
	jw_kv_str(w, "type", r->type);
	jw_kv_i64(w, "start", r->start);
	jw_kv_i64(w, "length", r->length);
	jw_kv_bool(w, "flock", r->flock);
	if (reclaim)
		jw_kv_bool(w, "reclaim", true);
	jw_obj_end(w);
	jw_free(w);
	rc = filer_rpc_call(m->rpc, get ? "getLock" : "lock", body.data, body.len, &resp);
	if (rc)
		goto out;
	v = json_parse(resp.data, resp.len, NULL, 0);
	if (!v || !entry_json_get_bytes(v, "key", FILER_PATH_MAX + 64, &key) || !key) {
		rc = WFS_EIO;
		goto out;
	}
	if (!reclaim && json_get_bool(v, "created", &created) && created) {
		/* the filer did not know the session: the renewal thread finds out why */
		pthread_mutex_lock(&g.mu);
		forgot = g.started && g.opened; /* else it is only opening */
		if (forgot) {
			g.recheck = true;
			pthread_cond_signal(&g.cv);
		}
		pthread_mutex_unlock(&g.mu);
	}
	if (!get && json_get_u64(v, "held", &held)) {
		struct filer_lock l = as_lock(m, r);
		if (!e->key) {
			e->key = key;
			key = NULL;
		}
		/* granted to a new session: no grace (it defers such locks), the older ones are
		 * gone, and this one is not for the renewal thread to re-assert or lose */
		if (forgot && l.type != FILER_LOCK_UNLOCK)
			lose_record(e);
		record_apply(e, &l);
		pthread_mutex_lock(&g.mu);
		e->held = (size_t)held;
		pthread_mutex_unlock(&g.mu);
	}
	if (get) {
		yajl_val x = json_get(v, "conflict");
		const char *ty = NULL;
		memset(c, 0, sizeof(*c));
		if (YAJL_IS_OBJECT(x)) {
			c->found = true;
			c->read = json_get_str(x, "type", &ty) && !strcmp(ty, "read");
			json_get_i64(x, "start", &c->start);
			json_get_i64(x, "length", &c->length);
			json_get_u64(x, "pid", &c->pid);
		}
	}
out:
	if (v)
		yajl_tree_free(v);
	free(key);
	free(path);
	buf_free(&body);
	buf_free(&resp);
	return rc;
}

/*
 * After the filer forgot the session: re-asserts (grace) or gives up every
 * lock of every record; each lock not re-asserted marks its owner lost and
 * leaves the record. Renewal thread.
 */
static void reassert_all(struct mount_ctx *m, bool grace)
{
	struct lk_ino **all = NULL;
	size_t n = 0, cap = 0, kept = 0, lost = 0;

	pthread_mutex_lock(&g.mu);
	for (size_t b = 0; b < LK_BUCKETS; b++) {
		for (struct lk_ino *e = g.inos[b]; e; e = e->next) {
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				all = xrealloc(all, cap * sizeof(*all));
			}
			e->refs++;
			all[n++] = e;
		}
	}
	pthread_mutex_unlock(&g.mu);
	for (size_t i = 0; i < n; i++) {
		struct lk_ino *e = all[i];
		struct filer_lock *v;
		size_t nv;
		pthread_mutex_lock(&e->mu);
		if (e->fresh) { /* recorded since the filer forgot the session (lk_call) */
			e->fresh = false;
			pthread_mutex_unlock(&e->mu);
			ino_put(e);
			continue;
		}
		v = e->v;
		nv = e->n;
		e->v = NULL;
		e->n = e->cap = 0;
		pthread_mutex_lock(&g.mu);
		e->held = 0; /* the filer forgot them: each re-assert answers the new count */
		pthread_mutex_unlock(&g.mu);
		for (size_t k = 0; k < nv; k++) {
			const struct filer_lock *l = &v[k];
			struct lk_req r = {.type = l->type == FILER_LOCK_READ ? "read" : "write",
					   .owner = l->owner,
					   .start = l->start,
					   .length = l->end == FILER_LOCK_EOF ? 0
									  : l->end - l->start + 1,
					   .pid = l->pid,
					   .flock = l->flock};
			wfs_err rc = grace && e->key ? lk_call(m, e, &r, false, true, NULL)
						     : WFS_ENOLCK;
			if (rc) {
				log_warn("ino %llu: a %s lock was not re-asserted (%s): its holder "
					 "is told at its next lock call",
					 (unsigned long long)e->ino, l->flock ? "flock" : "POSIX",
					 wfs_strerror(rc));
				mark_lost(e, l->owner, l->flock);
				lost++;
			} else {
				kept++;
			}
		}
		pthread_mutex_unlock(&e->mu);
		free(v);
		ino_put(e);
	}
	free(all);
	if (kept || lost)
		log_info("lock session: %zu lock(s) re-asserted, %zu lost", kept, lost);
}

/* An interruptible wait between two attempts of a blocking lock. */
struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool interrupted; /* protected by mu */
};

static void on_interrupt(fuse_req_t req, void *data)
{
	struct waiter *w = data;

	(void)req;
	pthread_mutex_lock(&w->mu);
	w->interrupted = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

/*
 * Calls lk_call for r on e until it is answered: with wait, a conflict is
 * retried until granted; a deferral of the filer's grace period is retried
 * also without wait. *interrupted: the kernel interrupted req (then EINTR).
 */
static wfs_err lk_attempts(fuse_req_t req, struct lk_ino *e, const struct lk_req *r, bool get,
			   bool wait, struct lk_conflict *c, bool *interrupted)
{
	struct mount_ctx *m = fuse_req_userdata(req);
	struct waiter w = {.interrupted = false};
	pthread_condattr_t ca;
	long backoff = POLL_FIRST_MS;
	bool armed = false;
	wfs_err rc;

	*interrupted = false;
	for (;;) {
		struct timespec ts;
		pthread_mutex_lock(&e->mu);
		rc = lk_call(m, e, r, get, false, c);
		pthread_mutex_unlock(&e->mu);
		if (!(rc == WFS_EBUSY && wait) && rc != WFS_EPRECOND)
			break;
		if (!armed) {
			pthread_mutex_init(&w.mu, NULL);
			pthread_condattr_init(&ca);
			pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
			pthread_cond_init(&w.cv, &ca);
			pthread_condattr_destroy(&ca);
			fuse_req_interrupt_func(req, on_interrupt, &w);
			armed = true;
		}
		ts = time_deadline(CLOCK_MONOTONIC, (uint64_t)backoff * 1000000u);
		pthread_mutex_lock(&w.mu);
		while (!w.interrupted && pthread_cond_timedwait(&w.cv, &w.mu, &ts) != ETIMEDOUT)
			;
		*interrupted = w.interrupted;
		pthread_mutex_unlock(&w.mu);
		if (*interrupted)
			break;
		backoff = backoff * 2 > POLL_MAX_MS ? POLL_MAX_MS : backoff * 2;
	}
	if (armed) {
		/* waits for a callback still running, so w may go away after */
		fuse_req_interrupt_func(req, NULL, NULL);
		pthread_cond_destroy(&w.cv);
		pthread_mutex_destroy(&w.mu);
	}
	return rc;
}

/* Notes in fi's handle that r's owner locked through it (its I/O is told of a loss). */
static void note_handle(struct fuse_file_info *fi, const struct lk_req *r)
{
	struct fh *h = (struct fh *)(uintptr_t)fi->fh;

	if (h)
		atomic_store(r->flock ? &h->lk_flock_owner : &h->lk_posix_owner, r->owner);
}

/*
 * Sets r on ino and replies to req: with wait, retries a conflict until
 * granted or the request is interrupted (EINTR); else a conflict is EAGAIN.
 * An owner whose locks were lost gets ENOLCK once (an unlock is done first).
 */
static void lk_set(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi,
		   const struct lk_req *r, bool wait)
{
	struct mount_ctx *m = fuse_req_userdata(req);
	bool unlock = !strcmp(r->type, "unlock"), interrupted = false, lost;
	struct lk_ino *e = ino_get(m, ino, !unlock);
	wfs_err rc = WFS_OK;

	if (!e) {
		fuse_reply_err(req, 0); /* nothing of this mount is locked there */
		return;
	}
	lost = take_lost(e, r->owner, r->flock);
	if (!lost || unlock)
		rc = lk_attempts(req, e, r, false, wait, NULL, &interrupted);
	ino_put(e);
	if (!rc && !unlock && !lost && !interrupted)
		note_handle(fi, r);
	/* flock(2) reports a conflict as EWOULDBLOCK (== EAGAIN on Linux): WFS_EBUSY's errno */
	if (interrupted)
		fuse_reply_err(req, EINTR);
	else if (lost)
		fuse_reply_err(req, ENOLCK);
	else
		fuse_ops_reply_err(req, rc);
}

/* struct flock's range as start and length (0: to EOF); false for a bad one. */
static bool flock_range(const struct flock *l, int64_t *start, int64_t *length)
{
	/* libfuse hands us SEEK_SET ranges with a non-negative length */
	if (l->l_start < 0 || l->l_len < 0)
		return false;
	*start = l->l_start;
	*length = l->l_len;
	return true;
}

void fuse_locks_getlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock)
{
	struct mount_ctx *m = fuse_req_userdata(req);
	struct lk_req r = {.owner = fi->lock_owner, .pid = (uint32_t)lock->l_pid};
	struct lk_ino *e;
	struct lk_conflict c;
	struct flock out = *lock;
	bool lost, interrupted = false;
	wfs_err rc;

	if (!flock_range(lock, &r.start, &r.length) ||
	    (lock->l_type != F_RDLCK && lock->l_type != F_WRLCK)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	r.type = lock->l_type == F_RDLCK ? "read" : "write";
	e = ino_get(m, ino, true);
	lost = take_lost(e, r.owner, false);
	rc = lost ? WFS_ENOLCK : lk_attempts(req, e, &r, true, false, &c, &interrupted);
	ino_put(e);
	if (interrupted) {
		fuse_reply_err(req, EINTR);
		return;
	}
	if (rc) {
		fuse_ops_reply_err(req, rc);
		return;
	}
	out.l_whence = SEEK_SET;
	if (c.found) {
		out.l_type = c.read ? F_RDLCK : F_WRLCK;
		out.l_start = c.start;
		out.l_len = c.length;
		out.l_pid = (pid_t)c.pid;
	} else {
		out.l_type = F_UNLCK;
	}
	fuse_reply_lock(req, &out);
}

void fuse_locks_setlk(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, struct flock *lock,
		      int sleep)
{
	struct lk_req r = {.owner = fi->lock_owner, .pid = (uint32_t)lock->l_pid};

	switch (lock->l_type) {
	case F_RDLCK:
		r.type = "read";
		break;
	case F_WRLCK:
		r.type = "write";
		break;
	case F_UNLCK:
		r.type = "unlock";
		break;
	}
	if (!r.type || !flock_range(lock, &r.start, &r.length)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	lk_set(req, ino, fi, &r, sleep != 0);
}

void fuse_locks_flock(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi, int op)
{
	struct lk_req r = {.owner = fi->lock_owner, .flock = true, .length = LOCK_TO_EOF};

	switch (op & ~LOCK_NB) {
	case LOCK_SH:
		r.type = "read";
		break;
	case LOCK_EX:
		r.type = "write";
		break;
	case LOCK_UN:
		r.type = "unlock";
		break;
	default:
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* the caller's pid: the filer reports it to other lockers' F_GETLK (never asked) */
	r.pid = (uint32_t)fuse_req_ctx(req)->pid;
	lk_set(req, ino, fi, &r, !(op & LOCK_NB));
}

/* Unlocks everything of owner (POSIX or flock) on ino if this mount holds locks there. */
static void unlock_all(struct mount_ctx *m, fuse_ino_t ino, uint64_t owner, bool flock)
{
	struct lk_req r = {.type = "unlock", .owner = owner, .flock = flock};
	struct lk_ino *e = ino_get(m, ino, false);
	wfs_err rc;

	if (!e)
		return;
	take_lost(e, owner, flock); /* closed: nobody is left to tell */
	pthread_mutex_lock(&e->mu);
	rc = lk_call(m, e, &r, false, false, NULL);
	pthread_mutex_unlock(&e->mu);
	if (rc)
		log_warn("ino %llu: unlock at close failed (held until unmount): %s",
			 (unsigned long long)ino, wfs_strerror(rc));
	ino_put(e);
}

void fuse_locks_flush(struct mount_ctx *m, fuse_ino_t ino, uint64_t owner)
{
	unlock_all(m, ino, owner, false);
}

void fuse_locks_release(struct mount_ctx *m, fuse_ino_t ino, uint64_t owner)
{
	unlock_all(m, ino, owner, true);
}

bool fuse_locks_io_lost(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fh *h = (struct fh *)(uintptr_t)fi->fh;
	uint64_t posix, flock;
	struct lk_ino *e;
	bool lost;

	if (!atomic_load_explicit(&g.nlost, memory_order_relaxed) || fi->writepage)
		return false; /* nothing lost anywhere: the common case costs one load */
	posix = atomic_load(&h->lk_posix_owner);
	flock = atomic_load(&h->lk_flock_owner);
	e = (posix || flock) ? ino_get(fuse_req_userdata(req), ino, false) : NULL;
	if (!e)
		return false;
	/* both marks go: the one failed call tells of either */
	lost = posix && take_lost(e, posix, false);
	if (flock && take_lost(e, flock, true))
		lost = true;
	ino_put(e);
	if (lost) {
		log_warn("ino %llu: an I/O through a descriptor whose lock was lost: ENOLCK",
			 (unsigned long long)ino);
		fuse_reply_err(req, ENOLCK);
	}
	return lost;
}
