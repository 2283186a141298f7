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
#include "json.h"
#include "log.h"
#include "util.h"

#define LK_BUCKETS    256
#define RENEW_MS      3000 /* a fifth of the filer's default lease (15 s) */
#define POLL_FIRST_MS 5
#define POLL_MAX_MS   200
#define LOCK_TO_EOF   0 /* length 0: to the end of the file */

/* This mount's locks on one inode. */
struct lk_ino {
	uint64_t ino;
	int refs;           /* protected by g.mu: calls using the record */
	size_t held;        /* protected by g.mu: locks the session holds under key */
	pthread_mutex_t mu; /* serialises the inode's lock calls; lock order mu, g.mu */
	char *key;          /* protected by mu: the filer's key, NULL until known */
	struct lk_ino *next;
};

static struct {
	pthread_mutex_t mu;
	struct lk_ino *inos[LK_BUCKETS]; /* protected by mu */
	struct mount_ctx *m;             /* protected by mu: set with started */
	bool started, stop;              /* protected by mu */
	pthread_cond_t cv;               /* wakes the renewal thread at stop */
	pthread_t thread;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t session_id(const struct mount_ctx *m) { return m->mount_id ? m->mount_id : 1; }

/* Renews the session; warns when the filer had forgotten it (its locks are gone). */
static void renew_once(struct mount_ctx *m)
{
	buf body, resp;
	bool created = false;
	wfs_err rc;

	buf_init(&body);
	buf_init(&resp);
	buf_printf(&body, "{\"session\":%llu}", (unsigned long long)session_id(m));
	rc = filer_rpc_call(m->rpc, "lockSession", body.data, body.len, &resp);
	if (rc) {
		log_warn("lock session: renewal failed: %s", wfs_strerror(rc));
	} else {
		yajl_val v = json_parse(resp.data, resp.len, NULL, 0);
		if (v && json_get_bool(v, "created", &created) && created)
			log_warn("lock session: the filer had dropped it (restart or lease "
				 "expiry): locks held before are lost");
		if (v)
			yajl_tree_free(v);
	}
	buf_free(&body);
	buf_free(&resp);
}

static void *renew_main(void *arg)
{
	struct mount_ctx *m = arg;
	struct timespec ts;

	pthread_setname_np(pthread_self(), "wfs-locks"); /* top -H, gdb, tests */
	pthread_mutex_lock(&g.mu);
	while (!g.stop) {
		ts = time_deadline(CLOCK_MONOTONIC, (uint64_t)RENEW_MS * 1000000u);
		while (!g.stop && pthread_cond_timedwait(&g.cv, &g.mu, &ts) != ETIMEDOUT)
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

/* Starts the renewal thread at the first lock call. Under g.mu. */
static void start_locked(struct mount_ctx *m)
{
	pthread_condattr_t ca;

	if (g.started)
		return;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g.cv, &ca);
	pthread_condattr_destroy(&ca);
	g.m = m;
	g.stop = false;
	if (pthread_create(&g.thread, NULL, renew_main, m))
		fatal("could not start the lock session thread");
	g.started = true;
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

	buf_init(&body);
	buf_init(&resp);
	buf_printf(&body, "{\"session\":%llu,\"release\":true}", (unsigned long long)session_id(m));
	rc = filer_rpc_call(m->rpc, "lockSession", body.data, body.len, &resp);
	if (rc)
		log_warn("lock session: release at unmount failed (the lease frees the locks): %s",
			 wfs_strerror(rc));
	buf_free(&body);
	buf_free(&resp);

	pthread_mutex_lock(&g.mu);
	for (size_t b = 0; b < LK_BUCKETS; b++) {
		while (g.inos[b]) {
			struct lk_ino *e = g.inos[b];
			g.inos[b] = e->next;
			pthread_mutex_destroy(&e->mu);
			free(e->key);
			free(e);
		}
	}
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
	if (!e && create) {
		start_locked(m);
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
	drop = --e->refs == 0 && e->held == 0;
	if (drop) {
		for (pp = &g.inos[e->ino % LK_BUCKETS]; *pp != e; pp = &(*pp)->next)
			;
		*pp = e->next;
		pthread_mutex_destroy(&e->mu);
		free(e->key);
		free(e);
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

/*
 * One lock (get false) or getLock call (the answer in *c) for e's inode under
 * e->mu. WFS_OK, WFS_EBUSY (a conflict), or the call's error.
 */
static wfs_err lk_call(struct mount_ctx *m, struct lk_ino *e, const struct lk_req *r, bool get,
		       struct lk_conflict *c)
{
	buf body, resp;
	json_w *w;
	char *path = NULL;
	yajl_val v = NULL;
	char *key = NULL;
	uint64_t held;
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
	if (!get && json_get_u64(v, "held", &held)) {
		if (!e->key) {
			e->key = key;
			key = NULL;
		}
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
 * Sets r on ino and replies to req: with wait, retries a conflict until
 * granted or the request is interrupted (EINTR); else a conflict is EAGAIN.
 */
static void lk_set(fuse_req_t req, fuse_ino_t ino, const struct lk_req *r, bool wait)
{
	struct mount_ctx *m = fuse_req_userdata(req);
	bool unlock = !strcmp(r->type, "unlock");
	struct lk_ino *e = ino_get(m, ino, !unlock);
	struct waiter w = {.interrupted = false};
	pthread_condattr_t ca;
	long backoff = POLL_FIRST_MS;
	bool interrupted = false;
	wfs_err rc;

	if (!e) {
		fuse_reply_err(req, 0); /* nothing of this mount is locked there */
		return;
	}
	if (wait) {
		pthread_mutex_init(&w.mu, NULL);
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&w.cv, &ca);
		pthread_condattr_destroy(&ca);
		fuse_req_interrupt_func(req, on_interrupt, &w);
	}
	for (;;) {
		struct timespec ts;
		pthread_mutex_lock(&e->mu);
		rc = lk_call(m, e, r, false, NULL);
		pthread_mutex_unlock(&e->mu);
		if (rc != WFS_EBUSY || !wait)
			break;
		ts = time_deadline(CLOCK_MONOTONIC, (uint64_t)backoff * 1000000u);
		pthread_mutex_lock(&w.mu);
		while (!w.interrupted && pthread_cond_timedwait(&w.cv, &w.mu, &ts) != ETIMEDOUT)
			;
		interrupted = w.interrupted;
		pthread_mutex_unlock(&w.mu);
		if (interrupted)
			break;
		backoff = backoff * 2 > POLL_MAX_MS ? POLL_MAX_MS : backoff * 2;
	}
	if (wait) {
		/* waits for a callback still running, so w may go away after */
		fuse_req_interrupt_func(req, NULL, NULL);
		pthread_cond_destroy(&w.cv);
		pthread_mutex_destroy(&w.mu);
	}
	ino_put(e);
	/* flock(2) reports a conflict as EWOULDBLOCK (== EAGAIN on Linux): WFS_EBUSY's errno */
	if (interrupted)
		fuse_reply_err(req, EINTR);
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
	wfs_err rc;

	if (!flock_range(lock, &r.start, &r.length) ||
	    (lock->l_type != F_RDLCK && lock->l_type != F_WRLCK)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	r.type = lock->l_type == F_RDLCK ? "read" : "write";
	e = ino_get(m, ino, true);
	pthread_mutex_lock(&e->mu);
	rc = lk_call(m, e, &r, true, &c);
	pthread_mutex_unlock(&e->mu);
	ino_put(e);
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
	lk_set(req, ino, &r, sleep != 0);
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
	lk_set(req, ino, &r, !(op & LOCK_NB));
}

/* Unlocks everything of owner (POSIX or flock) on ino if this mount holds locks there. */
static void unlock_all(struct mount_ctx *m, fuse_ino_t ino, uint64_t owner, bool flock)
{
	struct lk_req r = {.type = "unlock", .owner = owner, .flock = flock};
	struct lk_ino *e = ino_get(m, ino, false);
	wfs_err rc;

	if (!e)
		return;
	pthread_mutex_lock(&e->mu);
	rc = lk_call(m, e, &r, false, NULL);
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
