/*
 * Fuzzes the lock ops' body parser (filer_lock_parse_request) and the lock
 * table behind it. The input is a list of requests separated by NUL bytes;
 * each one's first byte picks the op, the rest is its JSON body. What parses
 * must be in range (one of path or key, a canonical path, a session, a range
 * inside 0..EOF, flock over the whole file); a failure must say why. Every
 * parsed request is applied to one table: a lock taken must then conflict
 * with another owner's write lock over the same range.
 */
#include "config.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "client/entry.h"
#include "filer/filer_lock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const ops[] = {"lock", "getLock", "lockSession", "unlock"};

static void check(const struct filer_lock_request *r)
{
	const struct filer_lock *l = &r->l;
	char *d = NULL, *n = NULL;

	if (r->op == FILER_LOCK_OP_SESSION) {
		if (!r->session || !r->lease_s || r->lease_s > FILER_LOCK_LEASE_MAX_S)
			abort();
		return;
	}
	if (!r->path == !r->key || !l->session || l->start < 0 || l->start > l->end ||
	    l->type > FILER_LOCK_WRITE || l->pid > INT32_MAX)
		abort();
	if (r->op == FILER_LOCK_OP_GET && l->type == FILER_LOCK_UNLOCK)
		abort();
	if (l->flock && (l->start != 0 || l->end != FILER_LOCK_EOF))
		abort();
	if (r->path && filer_path_split(r->path, &d, &n) != WFS_OK)
		abort();
	if (r->key && strncmp(r->key, "path:/", 6) && strncmp(r->key, "hardlink:", 9))
		abort();
	free(d);
	free(n);
}

/* Applies r to t at now; checks that a lock taken keeps another owner out. */
static void apply(struct filer_locks *t, const struct filer_lock_request *r, uint64_t now)
{
	const char *key = r->key ? r->key : r->path;
	struct filer_lock c, other;
	bool created;
	size_t held;
	wfs_err rc;

	switch (r->op) {
	case FILER_LOCK_OP_SESSION:
		if (r->release)
			filer_locks_end(t, r->session);
		else if (filer_locks_renew(t, r->session, r->lease_s * 1000000000u, now, &created))
			abort(); /* far below FILER_SESSIONS_MAX */
		return;
	case FILER_LOCK_OP_GET:
		if (filer_locks_test(t, key, &r->l, now, &c) &&
		    (c.session == r->l.session && c.owner == r->l.owner))
			abort(); /* an owner never conflicts with itself */
		return;
	case FILER_LOCK_OP_LOCK:
		rc = filer_locks_set(t, key, &r->l, r->reclaim, now, &c, &held, NULL);
		if (r->reclaim && rc == WFS_ENOLCK)
			return; /* no grace period here: reclaims are refused */
		if (rc == WFS_EBUSY && c.session == r->l.session && c.owner == r->l.owner)
			abort();
		if (rc && rc != WFS_EBUSY)
			abort();
		if (rc || r->l.type == FILER_LOCK_UNLOCK)
			return;
		if (!held)
			abort();
		other = r->l;
		other.owner++;
		other.type = FILER_LOCK_WRITE;
		if (!filer_locks_test(t, key, &other, now, &c))
			abort();
		return;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct filer_locks *t = filer_locks_new();
	uint64_t now = 1000000000ull;
	size_t at = 0;

	while (at < size) {
		const uint8_t *end = memchr(data + at, '\0', size - at);
		size_t len = end ? (size_t)(end - (data + at)) : size - at;
		struct filer_lock_request r;
		char msg[256];
		wfs_err err;

		if (len >= 1) {
			const char *op = ops[data[at] % (sizeof(ops) / sizeof(ops[0]))];
			memset(msg, 'x', sizeof(msg));
			err = filer_lock_parse_request(op, (const char *)data + at + 1, len - 1, &r,
						       msg, sizeof(msg));
			if (err == WFS_OK) {
				check(&r);
				apply(t, &r, now);
			} else if (err == WFS_ENOENT) {
				if (strcmp(op, "unlock"))
					abort(); /* the three lock ops are all known */
			} else if (err != WFS_EINVAL || !memchr(msg, '\0', sizeof(msg)) ||
				   !msg[0]) {
				abort();
			}
			filer_lock_request_clear(&r);
		}
		now += 1000000000ull; /* a second per request: short leases run out */
		at += len + 1;
	}
	filer_locks_free(t);
	return 0;
}
