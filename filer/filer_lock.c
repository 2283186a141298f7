/*
 * The filer's lock table and its JSON API ops (filer_lock.h).
 *
 * DESIGN: one mutex over the table (lock calls are rare and short next to
 * the store work around them). Files hash by key into fixed buckets, each
 * with an unsorted array of ranges; sessions are a small array (one per
 * mount). Leases are checked lazily: every call first drops the sessions
 * whose lease ran out (only when the earliest expiry has passed), so no
 * thread is needed and an expired lock is never seen.
 */
#include "config.h"
#include "filer/filer_lock.h"
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "client/entry_json.h"
#include "filer/filer_int.h"
#include "filer/filer_reclaim.h"
#include "json.h"
#include "util.h"

#define LOCK_BUCKETS 4096
/* A key: "path:" + a path, or "hardlink:" + 2 hex digits per id byte. */
#define LOCK_KEY_MAX (FILER_PATH_MAX + 16)

struct lk_file {
	char *key;
	struct filer_lock *v;
	size_t n, cap;
	struct lk_file *next; /* hash chain */
};

struct lk_session {
	uint64_t id;
	uint64_t lease_ns;
	uint64_t expires_ns; /* monotonic */
};

struct filer_locks {
	pthread_mutex_t mu;
	struct lk_file *files[LOCK_BUCKETS]; /* protected by mu */
	size_t nlocks;                       /* protected by mu */
	struct lk_session *sessions;         /* protected by mu */
	size_t nsessions, capsessions;       /* protected by mu */
	uint64_t next_expiry_ns;             /* protected by mu: earliest expires_ns */
	uint64_t grace_until_ns;             /* protected by mu: 0, or the grace's end */
};

struct filer_locks *filer_locks_new(void)
{
	struct filer_locks *t = xcalloc(1, sizeof(*t));

	pthread_mutex_init(&t->mu, NULL);
	t->next_expiry_ns = UINT64_MAX;
	return t;
}

static void file_free(struct lk_file *f)
{
	free(f->key);
	free(f->v);
	free(f);
}

void filer_locks_free(struct filer_locks *t)
{
	if (!t)
		return;
	for (size_t b = 0; b < LOCK_BUCKETS; b++) {
		while (t->files[b]) {
			struct lk_file *f = t->files[b];
			t->files[b] = f->next;
			file_free(f);
		}
	}
	free(t->sessions);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static size_t key_bucket(const char *key)
{
	uint64_t h = 1469598103934665603ull;

	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		h ^= *p;
		h *= 1099511628211ull;
	}
	return (size_t)(h % LOCK_BUCKETS);
}

/* The file of key, made when create; NULL when absent. Under mu. */
static struct lk_file *file_get(struct filer_locks *t, const char *key, bool create)
{
	size_t b = key_bucket(key);
	struct lk_file *f;

	for (f = t->files[b]; f; f = f->next)
		if (!strcmp(f->key, key))
			return f;
	if (!create)
		return NULL;
	f = xcalloc(1, sizeof(*f));
	f->key = xstrdup(key);
	f->next = t->files[b];
	t->files[b] = f;
	return f;
}

/* Unlinks and frees f if it holds no lock. Under mu. */
static void file_gc(struct filer_locks *t, struct lk_file *f)
{
	struct lk_file **pp;

	if (f->n)
		return;
	for (pp = &t->files[key_bucket(f->key)]; *pp; pp = &(*pp)->next) {
		if (*pp == f) {
			*pp = f->next;
			file_free(f);
			return;
		}
	}
}

static struct lk_session *session_find(struct filer_locks *t, uint64_t id)
{
	for (size_t i = 0; i < t->nsessions; i++)
		if (t->sessions[i].id == id)
			return &t->sessions[i];
	return NULL;
}

/* Removes every lock for which drop(lock, arg) holds. Under mu. */
static void locks_drop_if(struct filer_locks *t, bool (*drop)(const struct filer_lock *, void *),
			  void *arg)
{
	for (size_t b = 0; b < LOCK_BUCKETS; b++) {
		struct lk_file *f = t->files[b];
		while (f) {
			struct lk_file *next = f->next;
			size_t k = 0;
			for (size_t i = 0; i < f->n; i++) {
				if (drop(&f->v[i], arg))
					t->nlocks--;
				else
					f->v[k++] = f->v[i];
			}
			f->n = k;
			file_gc(t, f);
			f = next;
		}
	}
}

struct id_set {
	uint64_t *v;
	size_t n;
};

static bool lock_in_sessions(const struct filer_lock *l, void *arg)
{
	const struct id_set *s = arg;

	for (size_t i = 0; i < s->n; i++)
		if (s->v[i] == l->session)
			return true;
	return false;
}

/* Drops the sessions whose lease ran out at now_ns, with their locks. Under mu. */
static void expire(struct filer_locks *t, uint64_t now_ns)
{
	struct id_set gone = {0};
	uint64_t next = UINT64_MAX;
	size_t k = 0;

	if (now_ns < t->next_expiry_ns)
		return;
	gone.v = xmalloc(t->nsessions * sizeof(*gone.v) + 1);
	for (size_t i = 0; i < t->nsessions; i++) {
		struct lk_session *s = &t->sessions[i];
		if (s->expires_ns <= now_ns) {
			gone.v[gone.n++] = s->id;
			continue;
		}
		if (s->expires_ns < next)
			next = s->expires_ns;
		t->sessions[k++] = *s;
	}
	t->nsessions = k;
	t->next_expiry_ns = next;
	if (gone.n)
		locks_drop_if(t, lock_in_sessions, &gone);
	free(gone.v);
}

/* Renews (creating with lease_ns, 0 = keep or default) id. Under mu. */
static wfs_err renew(struct filer_locks *t, uint64_t id, uint64_t lease_ns, uint64_t now_ns,
		     bool *created)
{
	struct lk_session *s = session_find(t, id);

	*created = !s;
	if (!s) {
		if (t->nsessions >= FILER_SESSIONS_MAX)
			return WFS_ENOLCK;
		if (t->nsessions == t->capsessions) {
			t->capsessions = t->capsessions ? t->capsessions * 2 : 8;
			t->sessions = xrealloc(t->sessions, t->capsessions * sizeof(*t->sessions));
		}
		s = &t->sessions[t->nsessions++];
		s->id = id;
		s->lease_ns = (uint64_t)FILER_LOCK_LEASE_S * 1000000000u;
	}
	if (lease_ns)
		s->lease_ns = lease_ns;
	s->expires_ns = now_ns + s->lease_ns;
	if (s->expires_ns < t->next_expiry_ns)
		t->next_expiry_ns = s->expires_ns;
	return 0;
}

static size_t session_held(const struct lk_file *f, uint64_t session)
{
	size_t n = 0;

	for (size_t i = 0; f && i < f->n; i++)
		n += f->v[i].session == session;
	return n;
}

/* Applies req to f's locks (no conflict left to check). Under mu. */
static wfs_err apply(struct filer_locks *t, struct lk_file *f, const struct filer_lock *req)
{
	struct filer_lock *out;
	size_t n, cap;

	lock_ranges_apply(f->v, f->n, req, &out, &n, &cap);
	if (n > f->n && t->nlocks + (n - f->n) > FILER_LOCKS_MAX) {
		free(out);
		return WFS_ENOLCK;
	}
	t->nlocks = t->nlocks - f->n + n;
	free(f->v);
	f->v = out;
	f->n = n;
	f->cap = cap;
	return 0;
}

static const struct filer_lock *find_conflict(const struct lk_file *f, const struct filer_lock *req)
{
	return f ? lock_ranges_conflict(f->v, f->n, req) : NULL;
}

void filer_locks_set_grace(struct filer_locks *t, uint64_t until_ns)
{
	pthread_mutex_lock(&t->mu);
	t->grace_until_ns = until_ns;
	pthread_mutex_unlock(&t->mu);
}

/* Whether now_ns is in the grace period; its time left in *left_ns (may be NULL). Under mu. */
static bool in_grace(const struct filer_locks *t, uint64_t now_ns, uint64_t *left_ns)
{
	bool g = now_ns < t->grace_until_ns;

	if (left_ns)
		*left_ns = g ? t->grace_until_ns - now_ns : 0;
	return g;
}

bool filer_locks_in_grace(struct filer_locks *t, uint64_t now_ns, uint64_t *left_ns)
{
	bool g;

	pthread_mutex_lock(&t->mu);
	g = in_grace(t, now_ns, left_ns);
	pthread_mutex_unlock(&t->mu);
	return g;
}

wfs_err filer_locks_set(struct filer_locks *t, const char *key, const struct filer_lock *req,
			bool reclaim, uint64_t now_ns, struct filer_lock *conflict, size_t *held,
			bool *created)
{
	struct lk_file *f;
	const struct filer_lock *c;
	bool grace, made = false;
	wfs_err rc;

	pthread_mutex_lock(&t->mu);
	expire(t, now_ns);
	grace = in_grace(t, now_ns, NULL);
	*held = 0;
	if (reclaim && !grace) {
		rc = WFS_ENOLCK; /* whoever held it may have taken it meanwhile */
		goto out;
	}
	rc = renew(t, req->session, 0, now_ns, &made);
	if (rc)
		goto out;
	f = file_get(t, key, req->type != FILER_LOCK_UNLOCK);
	c = find_conflict(f, req);
	if (c) {
		*conflict = *c;
		rc = WFS_EBUSY;
	} else if (grace && !reclaim && req->type != FILER_LOCK_UNLOCK) {
		rc = WFS_EPRECOND; /* a lock not reclaimed yet may be in the way */
	} else if (f) {
		rc = apply(t, f, req);
	}
	*held = session_held(f, req->session);
	if (f)
		file_gc(t, f);
out:
	pthread_mutex_unlock(&t->mu);
	if (created)
		*created = made;
	return rc;
}

bool filer_locks_test(struct filer_locks *t, const char *key, const struct filer_lock *req,
		      uint64_t now_ns, struct filer_lock *conflict)
{
	const struct filer_lock *c;

	pthread_mutex_lock(&t->mu);
	expire(t, now_ns);
	c = find_conflict(file_get(t, key, false), req);
	if (c)
		*conflict = *c;
	pthread_mutex_unlock(&t->mu);
	return c != NULL;
}

bool filer_locks_session_live(struct filer_locks *t, uint64_t session, uint64_t now_ns)
{
	bool live;

	pthread_mutex_lock(&t->mu);
	expire(t, now_ns);
	live = session_find(t, session) != NULL;
	pthread_mutex_unlock(&t->mu);
	return live;
}

wfs_err filer_locks_renew(struct filer_locks *t, uint64_t session, uint64_t lease_ns,
			  uint64_t now_ns, bool *created)
{
	wfs_err rc;

	pthread_mutex_lock(&t->mu);
	expire(t, now_ns);
	rc = renew(t, session, lease_ns, now_ns, created);
	pthread_mutex_unlock(&t->mu);
	return rc;
}

void filer_locks_end(struct filer_locks *t, uint64_t session)
{
	struct id_set one = {&session, 1};
	struct lk_session *s;

	pthread_mutex_lock(&t->mu);
	s = session_find(t, session);
	if (s)
		*s = t->sessions[--t->nsessions];
	locks_drop_if(t, lock_in_sessions, &one);
	pthread_mutex_unlock(&t->mu);
}

size_t filer_locks_count(struct filer_locks *t, uint64_t now_ns)
{
	size_t n;

	pthread_mutex_lock(&t->mu);
	expire(t, now_ns);
	n = t->nlocks;
	pthread_mutex_unlock(&t->mu);
	return n;
}

/* ---- the JSON API ---- */

/* An error answer with status and err's wire name (the JSON API's convention). */
static void lock_error_at(struct fjob *j, int status, wfs_err err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void lock_error_at(struct fjob *j, int status, wfs_err err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fjob_verror(j, status, wfs_err_name(err), fmt, ap);
	va_end(ap);
}

/* An error answer: err's status and wire name. */
#define lock_error(j, err, ...) lock_error_at(j, wfs_err_http_status(err), err, __VA_ARGS__)

static const char *type_name(enum filer_lock_type ty)
{
	return ty == FILER_LOCK_READ ? "read" : ty == FILER_LOCK_WRITE ? "write" : "unlock";
}

/* Whether every key of obj is in names (NULL-terminated); the first other one in *bad. */
static bool only_keys(yajl_val obj, const char *const *names, const char **bad)
{
	for (size_t i = 0; i < obj->u.object.len; i++) {
		const char *k = obj->u.object.keys[i];
		bool ok = false;
		for (size_t n = 0; names[n] && !ok; n++)
			ok = !strcmp(k, names[n]);
		if (!ok) {
			*bad = k;
			return false;
		}
	}
	return true;
}

/* Whether name is present in v but not valid (ok false): then a message in msg. */
static bool bad_field(yajl_val v, const char *name, bool ok, char *msg, size_t msglen)
{
	if (ok || !json_get(v, name))
		return false;
	snprintf(msg, msglen, "bad \"%s\"", name);
	return true;
}

/* Whether path is a canonical absolute path other than the root. */
static bool canonical_path(const char *path)
{
	char *d = NULL, *n = NULL;
	bool ok = filer_path_split(path, &d, &n) == WFS_OK;

	free(d);
	free(n);
	return ok;
}

/* Parses a lock or getLock body into *r (strings copied); a message in msg. */
static bool parse_lock(yajl_val v, bool get, struct filer_lock_request *r, char *msg, size_t msglen)
{
	static const char *const names[] = {"path",  "key",  "pathB64", "keyB64", "session",
					    "owner", "pid",  "type",    "start",  "length",
					    "flock", "wait", "reclaim", NULL};
	const char *bad = NULL, *ty = NULL;
	char *path = NULL, *key = NULL;
	int64_t start = 0, length = 0;
	uint64_t pid = 0;
	bool wait = false, has_session, has_owner, has_type;

	if (!only_keys(v, names, &bad)) {
		snprintf(msg, msglen, "unknown field \"%s\"", bad);
		goto fail;
	}
	/* path and key are byte fields (entry_json.h): a path need not be UTF-8 */
	if (!entry_json_get_bytes(v, "path", FILER_PATH_MAX, &path) ||
	    !entry_json_get_bytes(v, "key", LOCK_KEY_MAX, &key)) {
		snprintf(msg, msglen, "bad \"path\" or \"key\"");
		goto fail;
	}
	if (bad_field(v, "session", (has_session = json_get_u64(v, "session", &r->l.session)), msg,
		      msglen) ||
	    bad_field(v, "owner", (has_owner = json_get_u64(v, "owner", &r->l.owner)), msg,
		      msglen) ||
	    bad_field(v, "pid", json_get_u64(v, "pid", &pid) && pid <= INT32_MAX, msg, msglen) ||
	    bad_field(v, "type", (has_type = json_get_str(v, "type", &ty)), msg, msglen) ||
	    bad_field(v, "start", json_get_i64(v, "start", &start) && start >= 0, msg, msglen) ||
	    bad_field(v, "length", json_get_i64(v, "length", &length) && length >= 0, msg,
		      msglen) ||
	    bad_field(v, "flock", json_get_bool(v, "flock", &r->l.flock), msg, msglen) ||
	    bad_field(v, "wait", json_get_bool(v, "wait", &wait), msg, msglen) ||
	    bad_field(v, "reclaim", json_get_bool(v, "reclaim", &r->reclaim) && !get, msg, msglen))
		goto fail;
	if (!path == !key) {
		snprintf(msg, msglen, "exactly one of \"path\" and \"key\" is needed");
		goto fail;
	}
	if (path && !canonical_path(path)) {
		snprintf(msg, msglen, "\"path\" is not a canonical absolute path");
		goto fail;
	}
	if (key && (strlen(key) > LOCK_KEY_MAX ||
		    (strncmp(key, "path:/", 6) && strncmp(key, "hardlink:", 9)))) {
		snprintf(msg, msglen, "\"key\" is not a key this filer gave");
		goto fail;
	}
	if (!has_session || !r->l.session) {
		snprintf(msg, msglen, "\"session\" (a non-zero integer) is needed");
		goto fail;
	}
	if (!has_owner) {
		snprintf(msg, msglen, "\"owner\" is needed");
		goto fail;
	}
	if (!has_type) {
		snprintf(msg, msglen, "\"type\" is needed");
		goto fail;
	}
	if (!strcmp(ty, "read"))
		r->l.type = FILER_LOCK_READ;
	else if (!strcmp(ty, "write"))
		r->l.type = FILER_LOCK_WRITE;
	else if (!strcmp(ty, "unlock") && !get)
		r->l.type = FILER_LOCK_UNLOCK;
	else {
		snprintf(msg, msglen, "\"type\" must be \"read\", \"write\"%s",
			 get ? "" : " or \"unlock\"");
		goto fail;
	}
	if (wait) {
		snprintf(msg, msglen, "\"wait\": true is not supported (retry on EAGAIN)");
		goto fail;
	}
	if (r->l.flock && (start || length)) {
		snprintf(msg, msglen, "a flock lock covers the whole file (no start or length)");
		goto fail;
	}
	if (length && length - 1 > FILER_LOCK_EOF - start) {
		snprintf(msg, msglen, "start + length is past the largest offset");
		goto fail;
	}
	r->l.start = start;
	r->l.end = length ? start + (length - 1) : FILER_LOCK_EOF;
	r->l.pid = (uint32_t)pid;
	r->path = path;
	r->key = key;
	return true;
fail:
	free(path);
	free(key);
	return false;
}

/* Parses a lockSession body into *r; a message in msg. */
static bool parse_session(yajl_val v, struct filer_lock_request *r, char *msg, size_t msglen)
{
	static const char *const names[] = {"session",   "leaseSeconds", "release",
					    "hiddenDir", "reclaimed",    NULL};
	const char *bad = NULL;

	r->lease_s = FILER_LOCK_LEASE_S;
	if (!only_keys(v, names, &bad)) {
		snprintf(msg, msglen, "unknown field \"%s\"", bad);
		return false;
	}
	if (!json_get_u64(v, "session", &r->session) || !r->session) {
		snprintf(msg, msglen, "\"session\" (a non-zero integer) is needed");
		return false;
	}
	if (json_get(v, "leaseSeconds") && (!json_get_u64(v, "leaseSeconds", &r->lease_s) ||
					    !r->lease_s || r->lease_s > FILER_LOCK_LEASE_MAX_S)) {
		snprintf(msg, msglen, "\"leaseSeconds\" must be 1..%d", FILER_LOCK_LEASE_MAX_S);
		return false;
	}
	if (json_get(v, "release") && !json_get_bool(v, "release", &r->release)) {
		snprintf(msg, msglen, "bad \"release\"");
		return false;
	}
	if (json_get(v, "reclaimed") && !json_get_bool(v, "reclaimed", &r->reclaimed)) {
		snprintf(msg, msglen, "bad \"reclaimed\"");
		return false;
	}
	if (!entry_json_get_bytes(v, "hiddenDir", FILER_PATH_MAX, &r->hidden_dir) ||
	    (r->hidden_dir && !canonical_path(r->hidden_dir))) {
		snprintf(msg, msglen, "\"hiddenDir\" is not a canonical absolute path");
		free(r->hidden_dir);
		r->hidden_dir = NULL;
		return false;
	}
	return true;
}

wfs_err filer_lock_parse_request(const char *op, const char *body, size_t len,
				 struct filer_lock_request *out, char *msg, size_t msglen)
{
	char why[200] = "";
	yajl_val v;
	bool ok;

	memset(out, 0, sizeof(*out));
	if (!strcmp(op, "lock"))
		out->op = FILER_LOCK_OP_LOCK;
	else if (!strcmp(op, "getLock"))
		out->op = FILER_LOCK_OP_GET;
	else if (!strcmp(op, "lockSession"))
		out->op = FILER_LOCK_OP_SESSION;
	else
		return WFS_ENOENT;
	v = json_parse(body, len, why, sizeof(why));
	if (!v || !YAJL_IS_OBJECT(v)) {
		snprintf(msg, msglen, "%s: the body must be a JSON object%s%s", op,
			 why[0] ? ": " : "", why);
		if (v)
			yajl_tree_free(v);
		return WFS_EINVAL;
	}
	ok = out->op == FILER_LOCK_OP_SESSION
		     ? parse_session(v, out, why, sizeof(why))
		     : parse_lock(v, out->op == FILER_LOCK_OP_GET, out, why, sizeof(why));
	yajl_tree_free(v);
	if (!ok) {
		snprintf(msg, msglen, "%s: %s", op, why);
		filer_lock_request_clear(out);
		return WFS_EINVAL;
	}
	return WFS_OK;
}

void filer_lock_request_clear(struct filer_lock_request *r)
{
	free(r->path);
	free(r->key);
	free(r->hidden_dir);
	r->path = r->key = r->hidden_dir = NULL;
}

/*
 * The lock key of path into *key (allocated): its hard-link id when linked,
 * else the path. False with an error set on j.
 */
static bool path_key(struct fjob *j, const char *path, char **key)
{
	char *dir = NULL, *name = NULL;
	struct filer_entry *e = NULL;
	wfs_err err = filer_path_split(path, &dir, &name); /* canonical: checked by the parser */

	if (!err)
		err = filer_find(j->f, NULL, dir, name, &e);
	if (err == WFS_ENOENT) {
		lock_error(j, WFS_ENOENT, "%s: no such entry", path);
		goto out;
	}
	if (err) {
		fjob_store_error(j, err, path);
		goto out;
	}
	if (e->attr.hard_link_id_len) {
		buf b;
		buf_init(&b);
		buf_printf(&b, "hardlink:");
		for (size_t i = 0; i < e->attr.hard_link_id_len; i++)
			buf_printf(&b, "%02x", e->attr.hard_link_id[i]);
		*key = xstrndup(b.data, b.len);
		buf_free(&b);
	} else {
		*key = xasprintf("path:%s", path);
	}
out:
	filer_entry_free(e);
	free(dir);
	free(name);
	return *key != NULL;
}

static void write_lock(json_w *w, const struct filer_lock *l)
{
	jw_obj_begin(w);
	jw_kv_str(w, "type", type_name(l->type));
	jw_kv_i64(w, "start", l->start);
	/* length 0: to the end of the file, as in struct flock */
	jw_kv_i64(w, "length", l->end == FILER_LOCK_EOF ? 0 : l->end - l->start + 1);
	jw_kv_u64(w, "pid", l->pid);
	jw_kv_bool(w, "flock", l->flock);
	jw_obj_end(w);
}

/* The grace period's answer: try again in a moment (the lock changed nothing). */
static void grace_answer(struct fjob *j, const char *op, uint64_t left_ns)
{
	json_w *w;

	buf_reset(&j->body);
	w = jw_new(&j->body, false);
	jw_obj_begin(w);
	jw_kv_str(w, "error", op);
	jw_kv_str(w, "code", wfs_err_name(WFS_EPRECOND));
	jw_kv_bool(w, "grace", true);
	jw_kv_u64(w, "retryMs", left_ns / 1000000u + 1);
	jw_obj_end(w);
	jw_free(w);
	j->status = 409; /* not 503: a client must not take it for an unreachable store */
	j->ctype = "application/json";
}

static void op_lock(struct fjob *j, const struct filer_lock_request *r)
{
	struct filer_locks *t = j->f->locks;
	bool get = r->op == FILER_LOCK_OP_GET;
	struct filer_lock c;
	char *key = NULL;
	size_t held = 0;
	uint64_t now = time_mono_ns(), left = 0;
	bool busy, created = false;
	wfs_err rc = WFS_OK;
	json_w *w;

	if (r->key)
		key = xstrdup(r->key);
	else if (!path_key(j, r->path, &key))
		return;
	if (get) {
		busy = filer_locks_test(t, key, &r->l, now, &c);
		if (!busy && filer_locks_in_grace(t, now, &left))
			rc = WFS_EPRECOND;
	} else {
		rc = filer_locks_set(t, key, &r->l, r->reclaim, now, &c, &held, &created);
		busy = rc == WFS_EBUSY;
		filer_locks_in_grace(t, now, &left);
	}
	if (rc == WFS_EPRECOND) {
		grace_answer(j, "lock: the filer restarted: waiting for its holders to reclaim their "
			     "locks", left);
		goto out;
	}
	if (rc == WFS_ENOLCK && r->reclaim) {
		/* 409, not ENOLCK's 503 (which clients repeat): final, the lock is lost */
		lock_error_at(j, 409, WFS_ENOLCK,
			      "lock: a reclaim outside the grace period (it may have been taken "
			      "since)");
		goto out;
	}
	if (rc == WFS_ENOLCK) {
		lock_error(j, WFS_ENOLCK, "lock: the lock table is full");
		goto out;
	}
	buf_reset(&j->body);
	w = jw_new(&j->body, false);
	jw_obj_begin(w);
	if (busy && !get) {
		jw_kv_str(w, "error", "lock: held by another owner");
		/* fcntl's word for it; clients before the EBUSY code know only this one */
		jw_kv_str(w, "code", "EAGAIN");
	}
	entry_json_text(w, "key", key);
	if (!get)
		jw_kv_u64(w, "held", held);
	if (created)
		jw_kv_bool(w, "created", true); /* the session was unknown (see lockSession) */
	if (busy || get) {
		jw_key(w, "conflict");
		if (busy)
			write_lock(w, &c);
		else
			jw_null(w);
	}
	jw_obj_end(w);
	jw_free(w);
	j->status = busy && !get ? 409 : 200;
	j->ctype = "application/json";
out:
	free(key);
}

static void op_session(struct fjob *j, const struct filer_lock_request *r)
{
	struct filer_locks *t = j->f->locks;
	uint64_t now = time_mono_ns();
	bool created = false;
	json_w *w;

	if (r->release) {
		filer_locks_end(t, r->session);
		filer_reclaim_end(j->f, r->session); /* its hidden files go now */
	} else if (filer_locks_renew(t, r->session, r->lease_s * 1000000000u, now, &created)) {
		lock_error(j, WFS_ENOLCK, "lockSession: too many sessions");
		return;
	} else if (r->hidden_dir) {
		filer_reclaim_session(j->f, r->session, r->hidden_dir, r->reclaimed);
	}
	buf_reset(&j->body);
	w = jw_new(&j->body, false);
	jw_obj_begin(w);
	if (!r->release) {
		jw_kv_u64(w, "leaseSeconds", r->lease_s);
		jw_kv_bool(w, "created", created);
		jw_kv_bool(w, "grace", filer_locks_in_grace(t, now, NULL));
	}
	jw_obj_end(w);
	jw_free(w);
	j->status = 200;
	j->ctype = "application/json";
}

bool filer_lock_api(struct fjob *j, const char *op, const char *body, size_t len)
{
	struct filer_lock_request r;
	char msg[512] = "";
	wfs_err err = filer_lock_parse_request(op, body, len, &r, msg, sizeof(msg));

	if (err == WFS_ENOENT)
		return false;
	if (err)
		lock_error(j, WFS_EINVAL, "%s", msg);
	else if (r.op == FILER_LOCK_OP_SESSION)
		op_session(j, &r);
	else
		op_lock(j, &r);
	filer_lock_request_clear(&r);
	return true;
}
