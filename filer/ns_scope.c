/*
 * The namespace core's transaction scope and its shared helpers: results,
 * the garbage list, the directory walk, the removal of a name, the entry
 * etag (namespace.h has the DESIGN and the locking rules).
 */
#include "config.h"
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>
#include "filer/filer_hardlink.h"
#include "filer/metalog.h"
#include "filer/namespace.h"
#include "util.h"

#define WALK_PAGE 1024

/* ---- results ---- */

wfs_err ns_fail(struct ns_result *res, wfs_err err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
	res->err = err;
	res->below = false;
	return err;
}

wfs_err ns_fail_below(struct ns_result *res, wfs_err err, const char *what)
{
	snprintf(res->msg, sizeof(res->msg), "%s: %s", what, wfs_strerror(err));
	res->err = err;
	res->below = true;
	return err;
}

/* ---- garbage ---- */

void ns_garbage_add(struct ns_garbage *g, const struct filer_chunk *c)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 16;
		g->c = xrealloc(g->c, g->cap * sizeof(*g->c));
	}
	filer_chunk_copy(&g->c[g->n++], c);
}

void ns_garbage_entry(struct ns_garbage *g, const struct filer_entry *e)
{
	for (size_t i = 0; i < e->n_chunks; i++)
		ns_garbage_add(g, &e->chunks[i]);
}

void ns_garbage_clear(struct ns_garbage *g)
{
	filer_chunks_free(g->c, g->n);
	g->c = NULL;
	g->n = g->cap = 0;
}

/* ---- the scope ---- */

void ns_tx_init(struct ns_tx *t, struct filer *f, int32_t sig, struct ns_result *res)
{
	memset(t, 0, sizeof(*t));
	t->f = f;
	t->sig = sig;
	t->res = res;
}

/* The stripe index of a full path. */
static unsigned stripe_of(const char *path)
{
	return (unsigned)(filer_store_dir_hash(path) % FILER_STRIPES);
}

void ns_lock_paths(struct ns_tx *t, const char *const *paths, size_t n)
{
	bool seen[FILER_STRIPES] = {false};
	assert(!t->tx && t->lock == NS_LOCK_NONE); /* locks before the transaction */
	for (size_t i = 0; i < n; i++)
		seen[stripe_of(paths[i])] = true;
	t->stripes = xcalloc(n ? n : 1, sizeof(*t->stripes));
	for (unsigned i = 0; i < FILER_STRIPES; i++)
		if (seen[i])
			t->stripes[t->nstripes++] = i;
	pthread_rwlock_rdlock(&t->f->ns_lock);
	for (size_t i = 0; i < t->nstripes; i++)
		pthread_mutex_lock(&t->f->stripes[t->stripes[i]]);
	t->lock = NS_LOCK_PATHS;
}

void ns_lock_path(struct ns_tx *t, const char *path) { ns_lock_paths(t, &path, 1); }

void ns_lock_tree(struct ns_tx *t)
{
	assert(!t->tx && t->lock == NS_LOCK_NONE);
	pthread_rwlock_wrlock(&t->f->ns_lock);
	t->lock = NS_LOCK_TREE;
}

wfs_err ns_begin(struct ns_tx *t)
{
	wfs_err err = filer_store_begin(t->f->store, &t->tx);
	if (err)
		ns_fail_below(t->res, err, "begin");
	return err;
}

static void fanout_add(void *ctx, const struct filer_entry *old_e, const struct filer_entry *new_e)
{
	filer_evs_add(ctx, old_e, new_e);
}

/*
 * Appends evs (and the events the other names of hard-linked files it
 * changed are owed) to the event log inside tx, commits tx (released either
 * way) and wakes subscribers; clears evs.
 */
static wfs_err commit_events(struct filer *f, struct filer_tx *tx, struct filer_evs *evs)
{
	wfs_err err = WFS_OK;
	if (evs->n) {
		/* the other names of hard-linked files this tx changed (filer_hardlink.h) */
		size_t n = evs->n;
		struct filer_hardlink_change *ch = xmalloc(n * sizeof(*ch));
		for (size_t i = 0; i < n; i++) {
			ch[i].old_e = evs->v[i].old_e;
			ch[i].new_e = evs->v[i].new_e;
		}
		err = filer_hardlink_fanout(f->store, tx, ch, n, fanout_add, evs);
		free(ch);
	}
	for (size_t i = 0; !err && i < evs->n; i++)
		err = metalog_append(f->metalog, tx, evs->v[i].old_e, evs->v[i].new_e, NULL);
	if (err)
		filer_store_rollback(tx);
	else
		err = metalog_commit(f->metalog, tx);
	filer_evs_clear(evs);
	return err;
}

wfs_err ns_begin_path(struct ns_tx *t, struct filer *f, int32_t sig, struct ns_result *res,
		      const char *path)
{
	ns_tx_init(t, f, sig, res);
	ns_lock_path(t, path);
	return ns_begin(t);
}

wfs_err ns_begin_tree(struct ns_tx *t, struct filer *f, int32_t sig, struct ns_result *res)
{
	ns_tx_init(t, f, sig, res);
	ns_lock_tree(t);
	return ns_begin(t);
}

wfs_err ns_commit(struct ns_tx *t)
{
	bool queued = !t->keep_chunks && t->g.n;
	wfs_err err = queued ? filer_gc_enqueue(t->f, t->tx, t->g.c, t->g.n) : WFS_OK;
	if (!err) {
		filer_store_tx_sign(t->tx, t->sig);
		err = t->evs.n ? commit_events(t->f, t->tx, &t->evs) : filer_store_commit(t->tx);
		t->tx = NULL;
	}
	if (err)
		ns_fail_below(t->res, err, "commit");
	else if (queued)
		filer_gc_kick(t->f);
	return err;
}

void ns_rollback(struct ns_tx *t)
{
	filer_store_rollback(t->tx);
	t->tx = NULL;
}

void ns_end(struct ns_tx *t)
{
	ns_rollback(t);
	if (t->lock == NS_LOCK_PATHS) {
		for (size_t i = t->nstripes; i > 0; i--)
			pthread_mutex_unlock(&t->f->stripes[t->stripes[i - 1]]);
		pthread_rwlock_unlock(&t->f->ns_lock);
	} else if (t->lock == NS_LOCK_TREE) {
		pthread_rwlock_unlock(&t->f->ns_lock);
	}
	t->lock = NS_LOCK_NONE;
	free(t->stripes);
	t->stripes = NULL;
	t->nstripes = 0;
	filer_evs_clear(&t->evs);
	ns_garbage_clear(&t->g);
}

/* ---- walks ---- */

bool ns_page_add(void *ctx, struct filer_entry *e)
{
	struct ns_page *p = ctx;
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 64;
		p->v = xrealloc(p->v, p->cap * sizeof(*p->v));
	}
	p->v[p->n++] = e;
	return true;
}

void ns_page_free(struct ns_page *p)
{
	for (size_t i = 0; i < p->n; i++)
		filer_entry_free(p->v[i]);
	free(p->v);
	p->v = NULL;
	p->n = p->cap = 0;
}

wfs_err ns_walk(struct filer *f, struct filer_tx *tx, const char *dir, ns_child_fn fn, void *ctx,
		bool ignore)
{
	struct ns_page p = {0};
	char *start = NULL;
	wfs_err err = WFS_OK, first = WFS_OK;
	size_t got = 0;

	for (;;) {
		err = filer_store_list(f->store, tx, dir, start, false, WALK_PAGE, NULL, ns_page_add,
				       &p, &got);
		for (size_t i = 0; !err && i < p.n; i++) {
			wfs_err e2 = fn(ctx, tx, p.v[i]);
			if (e2 && !first)
				first = e2;
			if (e2 && !ignore)
				err = e2;
		}
		if (err || got < WALK_PAGE)
			break;
		free(start);
		start = xstrdup(p.v[p.n - 1]->name);
		ns_page_free(&p);
	}
	ns_page_free(&p);
	free(start);
	return err ? err : first;
}

wfs_err ns_find(struct ns_tx *t, const char *path, const char *dir, const char *name,
		struct filer_entry **e)
{
	wfs_err err = filer_find(t->f, t->tx, dir, name, e);
	if (err == WFS_ENOENT)
		ns_fail(t->res, err, "%s: not found", path);
	else if (err)
		ns_fail_below(t->res, err, "lookup");
	return err;
}

wfs_err ns_dir_is_empty(struct filer *f, struct filer_tx *tx, const char *path, bool *empty)
{
	struct ns_page p = {0};
	wfs_err err =
		filer_store_list(f->store, tx, path, NULL, false, 1, NULL, ns_page_add, &p, NULL);
	*empty = p.n == 0;
	ns_page_free(&p);
	return err;
}

/* ---- names, etags, parents ---- */

wfs_err ns_drop_name(struct ns_tx *t, const struct filer_entry *e)
{
	struct filer_chunk *c = NULL;
	size_t n = 0;
	wfs_err err = filer_hardlink_drop(t->f->store, t->tx, e, &c, &n);
	for (size_t i = 0; i < n; i++)
		ns_garbage_add(&t->g, &c[i]);
	filer_chunks_free(c, n);
	return err;
}

void ns_etag(const struct filer_entry *e, char out[NS_ETAG_SIZE])
{
	buf b = BUF_INIT;
	uint64_t h = 0;
	if (filer_entry_encode(e, &b) == WFS_OK)
		h = XXH64(b.data, b.len, 0);
	snprintf(out, NS_ETAG_SIZE, "%016" PRIx64, h);
	buf_free(&b);
}

wfs_err ns_etag_check(struct ns_tx *t, const struct filer_entry *e, const char *path,
		      const char *want)
{
	struct filer_entry *m = filer_entry_dup(e);
	char etag[NS_ETAG_SIZE];
	wfs_err err = filer_hardlink_resolve(t->f->store, t->tx, &m);
	if (err) {
		ns_fail_below(t->res, err, path);
	} else {
		ns_etag(m, etag);
		if (strcasecmp(etag, want))
			err = ns_fail(t->res, WFS_EPRECOND, "%s: etag is %s, not %s", path, etag,
				      want);
	}
	filer_entry_free(m);
	return err;
}

wfs_err ns_parent_check(struct ns_tx *t, const char *dir)
{
	struct filer_entry *p = NULL;
	char *pd = NULL, *pn = NULL;
	wfs_err err = filer_path_split(dir, &pd, &pn);
	if (!err)
		err = filer_find(t->f, t->tx, pd, pn, &p);
	if (err == WFS_ENOENT)
		ns_fail(t->res, err, "parent directory %s does not exist", dir);
	else if (err)
		ns_fail_below(t->res, err, "parent lookup");
	else if (!filer_entry_is_dir(p))
		err = ns_fail(t->res, WFS_ENOTDIR, "parent %s is not a directory", dir);
	filer_entry_free(p);
	free(pd);
	free(pn);
	return err;
}

wfs_err ns_make_parents(struct ns_tx *t, const char *dir, const char *what)
{
	wfs_err err = filer_mkdir_p(t->f, t->tx, &t->evs, dir);
	if (err == WFS_EPERM)
		err = ns_fail(t->res, WFS_ENOTDIR, "a parent of %s is not a directory", what);
	else if (err)
		ns_fail_below(t->res, err, "creating parent directories");
	return err;
}
