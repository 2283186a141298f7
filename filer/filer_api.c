/*
 * The JSON entry API: POST /.api/v1/<op> with a JSON body, a JSON answer
 * (docs/api-filer-json.md). The mount and the gateways use it.
 *
 * DESIGN: the loop thread reads the body (bounded), a metadata worker parses
 * it (filer_api_parse.c) and runs the operation. Each mutation runs in one
 * store transaction under the namespace locks of filer_int.h: a single-path
 * change (create, update, xattrs) holds that path's stripe, a delete or
 * rename holds the tree lock. Conditions (exclusive create, ifEtag) are
 * checked inside that transaction, so they are atomic against every other
 * writer of this filer and, through the store's own insert/update rules,
 * against other filers. Events go last (filer_commit), and chunks that lose
 * their last reference are queued for deletion in the same transaction.
 * The ids assign hands out are leased in that queue (gc_queue.h), so a
 * client that dies before its commit leaks no blob; the create or update
 * that references them claims them in its transaction.
 * Errors carry a POSIX-like "code" so a client maps them to errno.
 *
 * The entry etag is xxh64 of the stored encoding (16 hex digits): any change
 * to an entry changes it, and it is cheap to recompute.
 */
#include "config.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <xxhash.h>
#include "client/chunk_io.h"
#include "client/chunks.h"
#include "client/entry_json.h"
#include "filer/filer_api_parse.h"
#include "filer/filer_hardlink.h"
#include "filer/filer_int.h"
#include "filer/filer_lock.h"
#include "filer/gc_queue.h"
#include "http_client.h"
#include "log.h"
#include "util.h"

#define WALK_PAGE  1024

struct api_job {
	char *op;
	char *body;
	size_t len;
	struct api_req *r;
};

static void api_error(struct fjob *j, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void api_error(struct fjob *j, int status, const char *code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fjob_verror(j, status, code, fmt, ap);
	va_end(ap);
}

static void api_store_error(struct fjob *j, wfs_err err, const char *what)
{
	switch (err) {
	case WFS_ENOENT:
		api_error(j, 404, "ENOENT", "%s: no such entry", what);
		break;
	case WFS_EEXIST:
		api_error(j, 409, "EEXIST", "%s: already exists", what);
		break;
	case WFS_EUNAVAIL:
	case WFS_ETIMEDOUT:
		api_error(j, 503, "EAGAIN", "%s: %s", what, wfs_strerror(err));
		break;
	case WFS_EINVAL:
		api_error(j, 400, "EINVAL", "%s: %s", what, wfs_strerror(err));
		break;
	default:
		api_error(j, 500, "EIO", "%s: %s", what, wfs_strerror(err));
		break;
	}
}

/* The entry etag (see DESIGN) into out[17]. */
static void entry_etag(const struct filer_entry *e, char out[17])
{
	buf b = BUF_INIT;
	uint64_t h = 0;
	if (filer_entry_encode(e, &b) == WFS_OK)
		h = XXH64(b.data, b.len, 0);
	snprintf(out, 17, "%016" PRIx64, h);
	buf_free(&b);
}

/* Appends e as entry JSON with "etag" added. */
static void entry_out(const struct filer_entry *e, buf *out)
{
	char etag[17];
	size_t at = out->len;
	entry_json(e, ENTRY_JSON_CONTENT, out);
	entry_etag(e, etag);
	if (out->len > at && out->data[out->len - 1] == '}') {
		out->len--; /* reopen the object to add the etag */
		buf_printf(out, ",\"etag\":\"%s\"}", etag);
	}
}

static void respond_entry(struct fjob *j, const struct filer_entry *e)
{
	buf_reset(&j->body);
	entry_out(e, &j->body);
	j->status = 200;
	j->ctype = "application/json";
}

/*
 * The entry in its stored encoding (docs/filer-entry-format.md), for a client
 * that asked for it: decoding it costs a client far less than the JSON form,
 * and the etag is the xxh64 of these very bytes.
 */
static void respond_entry_encoded(struct fjob *j, const struct filer_entry *e)
{
	buf_reset(&j->body);
	if (filer_entry_encode(e, &j->body)) {
		api_error(j, 500, "EIO", "the entry does not encode");
		return;
	}
	j->status = 200;
	j->ctype = FILER_ENTRY_MEDIA_TYPE;
}

static bool wants_encoded_entry(const struct fjob *j)
{
	const char *a = fjob_header(j, "Accept");
	return a && strstr(a, FILER_ENTRY_MEDIA_TYPE);
}

static void respond_ok(struct fjob *j)
{
	buf_reset(&j->body);
	buf_append(&j->body, "{}", 2);
	j->status = 200;
	j->ctype = "application/json";
}

/* ---- shared walks ---- */

struct page {
	struct filer_entry **v;
	size_t n, cap;
};

static bool page_add(void *ctx, struct filer_entry *e)
{
	struct page *p = ctx;
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 64;
		p->v = xrealloc(p->v, p->cap * sizeof(*p->v));
	}
	p->v[p->n++] = e;
	return true;
}

static void page_free(struct page *p)
{
	for (size_t i = 0; i < p->n; i++)
		filer_entry_free(p->v[i]);
	free(p->v);
	p->v = NULL;
	p->n = p->cap = 0;
}

static wfs_err dir_is_empty(struct filer *f, struct filer_tx *tx, const char *path, bool *empty)
{
	struct page p = {0};
	wfs_err err =
		filer_store_list(f->store, tx, path, NULL, false, 1, NULL, page_add, &p, NULL);
	*empty = p.n == 0;
	page_free(&p);
	return err;
}

struct garbage {
	struct filer_chunk *c;
	size_t n, cap;
};

static void garbage_add(struct garbage *g, const struct filer_chunk *c)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 16;
		g->c = xrealloc(g->c, g->cap * sizeof(*g->c));
	}
	filer_chunk_copy(&g->c[g->n++], c);
}

static void garbage_entry(struct garbage *g, const struct filer_entry *e)
{
	for (size_t i = 0; i < e->n_chunks; i++)
		garbage_add(g, &e->chunks[i]);
}

/*
 * Accounts for removing the name e (a hard link drops nlink; the last one
 * frees the shared chunks into g). Unlinked entries: nothing.
 */
static wfs_err drop_name(struct filer *f, struct filer_tx *tx, const struct filer_entry *e,
			 struct garbage *g)
{
	struct filer_chunk *c = NULL;
	size_t n = 0;
	wfs_err err = filer_hardlink_drop(f->store, tx, e, &c, &n);
	for (size_t i = 0; i < n; i++)
		garbage_add(g, &c[i]);
	filer_chunks_free(c, n);
	return err;
}

/* Same file: both names of one hard link. */
static bool same_link(const struct filer_entry *a, const struct filer_entry *b)
{
	return filer_hardlink_is_linked(a) && filer_hardlink_is_linked(b) &&
	       a->attr.hard_link_id_len == b->attr.hard_link_id_len &&
	       !memcmp(a->attr.hard_link_id, b->attr.hard_link_id, a->attr.hard_link_id_len);
}

/* Deletes everything under dir (recording events and chunks); not dir itself. */
static wfs_err delete_below(struct filer *f, struct filer_tx *tx, const char *dir,
			    struct filer_evs *evs, struct garbage *g)
{
	char *start = NULL;
	wfs_err err = WFS_OK;
	for (;;) {
		struct page p = {0};
		size_t got = 0;
		err = filer_store_list(f->store, tx, dir, start, false, WALK_PAGE, NULL, page_add,
				       &p, &got);
		for (size_t i = 0; !err && i < p.n; i++) {
			struct filer_entry *c = p.v[i];
			if (filer_entry_is_dir(c)) {
				char *sub = filer_entry_full_path(c);
				err = delete_below(f, tx, sub, evs, g);
				free(sub);
			} else {
				err = drop_name(f, tx, c, g);
			}
			garbage_entry(g, c);
			filer_evs_add(evs, c, NULL);
		}
		free(start);
		start = !err && got == WALK_PAGE ? xstrdup(p.v[p.n - 1]->name) : NULL;
		page_free(&p);
		if (err || !start)
			break;
	}
	free(start);
	if (!err)
		err = filer_store_delete_children(f->store, tx, dir, NULL);
	return err;
}

/* Re-keys every descendant of from under to (entries are keyed by their parent path). */
static wfs_err move_below(struct filer *f, struct filer_tx *tx, const char *from, const char *to)
{
	char *start = NULL;
	wfs_err err = WFS_OK;
	for (;;) {
		struct page p = {0};
		size_t got = 0;
		err = filer_store_list(f->store, tx, from, start, false, WALK_PAGE, NULL, page_add,
				       &p, &got);
		for (size_t i = 0; !err && i < p.n; i++) {
			struct filer_entry *c = p.v[i];
			char *name = xstrdup(c->name);
			filer_entry_set_path(c, to, name);
			err = filer_store_insert(f->store, tx, c);
			if (!err && filer_hardlink_is_linked(c)) {
				char *a = filer_path_join(from, name),
				     *b = filer_path_join(to, name);
				err = filer_hardlink_moved(f->store, tx, c, a, b);
				free(a);
				free(b);
			}
			if (!err && filer_entry_is_dir(c)) {
				char *a = filer_path_join(from, name),
				     *b = filer_path_join(to, name);
				err = move_below(f, tx, a, b);
				free(a);
				free(b);
			}
			free(name);
		}
		free(start);
		start = !err && got == WALK_PAGE ? xstrdup(p.v[p.n - 1]->name) : NULL;
		page_free(&p);
		if (err || !start)
			break;
	}
	free(start);
	if (!err)
		err = filer_store_delete_children(f->store, tx, from, NULL);
	return err;
}

/* Checks that dir exists as a directory; sets the error response if not. */
static bool parent_ok(struct fjob *j, struct filer_tx *tx, const char *dir)
{
	struct filer_entry *p = NULL;
	char *pd = NULL, *pn = NULL;
	wfs_err err = filer_path_split(dir, &pd, &pn);
	bool ok = false;
	if (!err)
		err = filer_find(j->f, tx, pd, pn, &p);
	if (err == WFS_ENOENT)
		api_error(j, 404, "ENOENT", "parent directory %s does not exist", dir);
	else if (err)
		api_store_error(j, err, "parent lookup");
	else if (!filer_entry_is_dir(p))
		api_error(j, 409, "ENOTDIR", "parent %s is not a directory", dir);
	else
		ok = true;
	filer_entry_free(p);
	free(pd);
	free(pn);
	return ok;
}

/* Commits tx with evs and, after, wakes the garbage worker if g queued chunks. */
static wfs_err finish_tx(struct fjob *j, struct filer_tx **tx, struct filer_evs *evs,
			 struct garbage *g)
{
	wfs_err err = g->n ? filer_gc_enqueue(j->f, *tx, g->c, g->n) : WFS_OK;
	if (!err) {
		err = fjob_commit(j, *tx, evs);
		*tx = NULL;
	}
	if (!err && g->n)
		filer_gc_kick(j->f);
	return err;
}

/* Whether fid names one of e's chunks (e may be NULL). */
static bool has_fid(const struct filer_entry *e, const char *fid)
{
	for (size_t i = 0; e && i < e->n_chunks; i++)
		if (!strcmp(e->chunks[i].fid, fid))
			return true;
	return false;
}

/* Whether fid names a chunk of any of e[0..n). */
static bool any_has_fid(struct filer_entry *const *e, size_t n, const char *fid)
{
	for (size_t i = 0; i < n; i++)
		if (has_fid(e[i], fid))
			return true;
	return false;
}

/*
 * Inside tx, which makes an entry reference c[0..n): claims their ids off the
 * garbage queue, where assign leased them (gc_queue.h), so they are kept from
 * this commit on. A manifest's members are claimed too (resolved through the
 * volume servers), except for manifests old (may be NULL) or one of
 * prev[0..nprev) (the files a create consumes) already referenced: claimed
 * when they were committed. Ids that are not queued (committed ones, taken
 * over from old or a consumed file) are left alone: the claim of an id not in
 * the queue deletes nothing and does not fail.
 */
static wfs_err claim_chunks(struct filer *f, struct filer_tx *tx, const struct filer_chunk *c,
			    size_t n, const struct filer_entry *old,
			    struct filer_entry *const *prev, size_t nprev)
{
	struct filer_chunk *mf = NULL, *leaves = NULL;
	size_t nmf = 0, nleaves = 0, nf = 0;
	const char **fids;
	wfs_err err = WFS_OK;

	if (!n)
		return WFS_OK;
	for (size_t i = 0; i < n; i++) {
		if (!c[i].is_manifest || has_fid(old, c[i].fid) ||
		    any_has_fid(prev, nprev, c[i].fid))
			continue;
		if (!mf)
			mf = xcalloc(n, sizeof(*mf));
		mf[nmf++] = c[i]; /* borrowed fields: not freed below */
	}
	if (nmf) {
		/* members left leased would be deleted under a live manifest: refuse instead */
		err = chunk_resolve_manifests(f->bc, mf, nmf, &leaves, &nleaves);
		free(mf);
		if (err)
			return err;
	}
	fids = xcalloc(n + nleaves, sizeof(*fids));
	for (size_t i = 0; i < n; i++)
		fids[nf++] = c[i].fid;
	for (size_t i = 0; i < nleaves; i++)
		fids[nf++] = leaves[i].fid;
	err = gc_lease_claim(f->store, tx, fids, nf);
	free(fids);
	filer_chunks_free(leaves, nleaves);
	return err;
}

/* ---- operations (metadata worker) ---- */

static void op_lookup(struct fjob *j, struct api_req *r)
{
	struct filer_entry *e = NULL;
	wfs_err err = filer_find(j->f, NULL, r->dir, r->name, &e);
	if (!err)
		err = filer_hardlink_resolve(j->f->store, NULL, &e);
	if (err)
		api_store_error(j, err, r->path);
	else if (wants_encoded_entry(j))
		respond_entry_encoded(j, e);
	else
		respond_entry(j, e);
	filer_entry_free(e);
}

static void op_list(struct fjob *j, struct api_req *r)
{
	struct filer_entry *d = NULL;
	struct page p = {0};
	json_w *w;
	wfs_err err = filer_find(j->f, NULL, r->dir, r->name, &d);
	if (err) {
		api_store_error(j, err, r->path);
		goto out;
	}
	if (!filer_entry_is_dir(d)) {
		api_error(j, 409, "ENOTDIR", "%s is not a directory", r->path);
		goto out;
	}
	/* one more than asked tells whether there are more */
	err = filer_store_list(j->f->store, NULL, r->path, r->start, r->inclusive, r->limit + 1,
			       r->prefix, page_add, &p, NULL);
	if (err) {
		api_store_error(j, err, "listing");
		goto out;
	}
	{
		buf tail = BUF_INIT;
		size_t shown = MIN(p.n, r->limit);
		buf_reset(&j->body);
		buf_append(&j->body, "{\"entries\":[", 12);
		for (size_t i = 0; i < shown; i++) {
			/* a name of a hard link shows the shared file; a bad record its stub */
			(void)filer_hardlink_resolve(j->f->store, NULL, &p.v[i]);
			if (i)
				buf_append(&j->body, ",", 1);
			entry_out(p.v[i], &j->body);
		}
		buf_append(&j->body, "],", 2);
		/* the rest as its own object, spliced in without its opening brace */
		w = jw_new(&tail, false);
		jw_obj_begin(w);
		entry_json_text(w, "lastName", shown ? p.v[shown - 1]->name : "");
		jw_kv_bool(w, "more", p.n > r->limit);
		jw_obj_end(w);
		jw_free(w);
		buf_append(&j->body, tail.data + 1, tail.len - 1);
		buf_free(&tail);
	}
	j->status = 200;
	j->ctype = "application/json";
out:
	page_free(&p);
	filer_entry_free(d);
}

/* ---- create ---- */

/* The distinct lock stripes of some paths, in increasing index. */
struct stripe_set {
	unsigned idx[FILER_STRIPES];
	size_t n;
};

static void stripes_of(struct stripe_set *s, const char *path, char *const *more, size_t nmore,
		       const struct api_move *mv, size_t nmv)
{
	bool seen[FILER_STRIPES] = {false};
	seen[filer_stripe(path)] = true;
	for (size_t i = 0; i < nmore; i++)
		seen[filer_stripe(more[i])] = true;
	for (size_t i = 0; i < nmv; i++) {
		seen[filer_stripe(mv[i].from)] = true;
		seen[filer_stripe(mv[i].to)] = true;
	}
	s->n = 0;
	for (unsigned i = 0; i < FILER_STRIPES; i++)
		if (seen[i])
			s->idx[s->n++] = i;
}

/*
 * filer_lock_path for several paths at once: the read side of ns_lock, then
 * each distinct stripe in increasing index (the lock order of filer_int.h).
 * Two requests locking overlapping sets take their common stripes in the same
 * order, so they cannot deadlock, and two paths sharing a stripe take it once.
 */
static void lock_stripes(struct filer *f, const struct stripe_set *s)
{
	pthread_rwlock_rdlock(&f->ns_lock);
	for (size_t i = 0; i < s->n; i++)
		pthread_mutex_lock(&f->stripes[s->idx[i]]);
}

static void unlock_stripes(struct filer *f, const struct stripe_set *s)
{
	for (size_t i = s->n; i > 0; i--)
		pthread_mutex_unlock(&f->stripes[s->idx[i - 1]]);
	pthread_rwlock_unlock(&f->ns_lock);
}

/* The file ids of one entry's chunks, sorted for lookups (borrowed from it). */
struct fid_set {
	const char **v;
	size_t n;
};

static int cmp_fid(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void fid_set_init(struct fid_set *s, const struct filer_entry *e)
{
	s->n = e->n_chunks;
	s->v = xcalloc(s->n ? s->n : 1, sizeof(*s->v));
	for (size_t i = 0; i < s->n; i++)
		s->v[i] = e->chunks[i].fid;
	qsort(s->v, s->n, sizeof(*s->v), cmp_fid);
}

static bool fid_set_has(const struct fid_set *s, const char *fid)
{
	return s->n && bsearch(&fid, s->v, s->n, sizeof(*s->v), cmp_fid) != NULL;
}

/* Queues the chunks of c[0..n) that keep does not hold into g. */
static void garbage_unkept(struct garbage *g, const struct filer_chunk *c, size_t n,
			   const struct fid_set *keep)
{
	for (size_t i = 0; i < n; i++)
		if (!fid_set_has(keep, c[i].fid))
			garbage_add(g, &c[i]);
}

/*
 * Queues the chunks of a consumed file e that the new entry (keep) does not
 * list into g. An unlisted manifest is resolved here rather than by the
 * garbage queue (which would free every member): its members the new entry
 * lists (a client that resolved the part's manifest itself) are kept, the
 * manifest blob and its other members go. Fetches manifests through f->bc.
 */
static wfs_err garbage_consumed(struct filer *f, struct garbage *g, const struct filer_entry *e,
				const struct fid_set *keep)
{
	struct filer_chunk *mf = NULL, *leaves = NULL;
	size_t nmf = 0, nleaves = 0;
	wfs_err err;

	for (size_t i = 0; i < e->n_chunks; i++) {
		if (fid_set_has(keep, e->chunks[i].fid))
			continue;
		if (!e->chunks[i].is_manifest) {
			garbage_add(g, &e->chunks[i]);
			continue;
		}
		if (!mf)
			mf = xcalloc(e->n_chunks, sizeof(*mf));
		mf[nmf++] = e->chunks[i]; /* borrowed fields: not freed below */
	}
	if (!nmf)
		return WFS_OK;
	err = chunk_resolve_manifests(f->bc, mf, nmf, &leaves, &nleaves);
	if (!err) {
		for (size_t i = 0; i < nmf; i++) {
			garbage_add(g, &mf[i]);
			g->c[g->n - 1].is_manifest = false; /* its members are queued one by one */
		}
		garbage_unkept(g, leaves, nleaves, keep);
	}
	free(mf);
	filer_chunks_free(leaves, nleaves);
	return err;
}

/* The etag lookup shows for e as stored (a hard-linked name: the shared file). */
static wfs_err shown_etag(struct filer *f, struct filer_tx *tx, const struct filer_entry *e,
			  char out[17])
{
	struct filer_entry *m = filer_entry_dup(e);
	wfs_err err = filer_hardlink_resolve(f->store, tx, &m);
	if (!err)
		entry_etag(m, out);
	filer_entry_free(m);
	return err;
}

/*
 * Whether e (at path, as stored) shows the etag want, inside tx. False with j's
 * error set when not (412 EPRECOND) or on a store error.
 */
static bool etag_matches(struct fjob *j, struct filer_tx *tx, const struct filer_entry *e,
			 const char *path, const char *want)
{
	char etag[17];
	wfs_err err = shown_etag(j->f, tx, e, etag);
	if (err) {
		api_store_error(j, err, path);
		return false;
	}
	if (strcasecmp(etag, want)) {
		api_error(j, 412, "EPRECOND", "%s: etag is %s, not %s", path, etag, want);
		return false;
	}
	return true;
}

/*
 * Inside tx, finds the files create consumes (r->consume) into gone[0..*ngone)
 * (owned by the caller, freed even on failure). False with j's error set when
 * one is missing (404), a directory (409 EISDIR), not a regular file or
 * hard-linked (400).
 */
static bool consume_find(struct fjob *j, struct filer_tx *tx, struct api_req *r,
			 struct filer_entry **gone, size_t *ngone)
{
	for (size_t i = 0; i < r->nconsume; i++) {
		const char *p = r->consume[i];
		char *d = NULL, *n = NULL;
		struct filer_entry *e = NULL;
		wfs_err err = filer_path_split(p, &d, &n);
		if (!err)
			err = filer_store_find(j->f->store, tx, d, n, &e);
		free(d);
		free(n);
		if (err == WFS_ENOENT) {
			api_error(j, 404, "ENOENT", "consume: %s does not exist", p);
			return false;
		}
		if (err) {
			api_store_error(j, err, p);
			return false;
		}
		gone[(*ngone)++] = e;
		if (filer_entry_is_dir(e)) {
			api_error(j, 409, "EISDIR", "consume: %s is a directory", p);
			return false;
		}
		if (!S_ISREG(e->attr.mode)) {
			api_error(j, 400, "EINVAL", "consume: %s is not a regular file", p);
			return false;
		}
		if (filer_hardlink_is_linked(e) || e->attr.nlink > 1) {
			api_error(j, 400, "EINVAL", "consume: %s is hard-linked", p);
			return false;
		}
	}
	return true;
}

/*
 * Inside tx, makes dir and its missing parents (for what, named in errors):
 * false with j's error (409 ENOTDIR when a file is in the way).
 */
static bool make_parents(struct fjob *j, struct filer_tx *tx, struct filer_evs *evs,
			 const char *dir, const char *what)
{
	wfs_err err = filer_mkdir_p(j->f, tx, evs, dir);
	if (err == WFS_EPERM)
		api_error(j, 409, "ENOTDIR", "a parent of %s is not a directory", what);
	else if (err)
		api_store_error(j, err, "creating parent directories");
	return !err;
}

/*
 * Inside tx, renames the regular file m->from to m->to for create's "moves",
 * making to's missing parents (0770, an event each): the entry keeps its
 * chunks (neither freed nor claimed), content, xattrs and times but ctime,
 * which becomes now, and one event (old at from, new at to) goes into evs.
 * False with j's error set when from is missing (404), a directory (409
 * EISDIR), another kind of file or hard-linked (400), not at m->if_etag (412),
 * when to exists (409 EEXIST) or a parent of it is a file (409 ENOTDIR).
 */
static bool move_file(struct fjob *j, struct filer_tx *tx, const struct api_move *m,
		      struct filer_evs *evs)
{
	struct filer *f = j->f;
	struct filer_entry *src = NULL, *dst = NULL, *moved = NULL;
	char *d = NULL, *n = NULL, *d2 = NULL, *n2 = NULL;
	char etag[17];
	bool ok = false;
	wfs_err err = filer_path_split(m->from, &d, &n);
	if (!err)
		err = filer_path_split(m->to, &d2, &n2);
	if (!err)
		err = filer_store_find(f->store, tx, d, n, &src);
	if (err == WFS_ENOENT) {
		api_error(j, 404, "ENOENT", "move: %s does not exist", m->from);
		goto out;
	}
	if (err) {
		api_store_error(j, err, m->from);
		goto out;
	}
	if (filer_entry_is_dir(src)) {
		api_error(j, 409, "EISDIR", "move: %s is a directory", m->from);
		goto out;
	}
	if (!S_ISREG(src->attr.mode)) {
		api_error(j, 400, "EINVAL", "move: %s is not a regular file", m->from);
		goto out;
	}
	if (filer_hardlink_is_linked(src) || src->attr.nlink > 1) {
		api_error(j, 400, "EINVAL", "move: %s is hard-linked", m->from);
		goto out;
	}
	if (m->if_etag) {
		entry_etag(src, etag); /* not linked: what lookup shows */
		if (strcasecmp(etag, m->if_etag)) {
			api_error(j, 412, "EPRECOND", "move: %s: etag is %s, not %s", m->from, etag,
				  m->if_etag);
			goto out;
		}
	}
	if (!make_parents(j, tx, evs, d2, m->to))
		goto out;
	err = filer_store_find(f->store, tx, d2, n2, &dst);
	if (!err) {
		api_error(j, 409, "EEXIST", "move: %s already exists", m->to);
		goto out;
	}
	if (err != WFS_ENOENT) {
		api_store_error(j, err, m->to);
		goto out;
	}
	moved = filer_entry_dup(src);
	filer_entry_set_path(moved, d2, n2);
	moved->attr.ctime_ns = (int64_t)time_now_ns();
	err = filer_store_insert(f->store, tx, moved);
	if (!err)
		err = filer_store_delete(f->store, tx, d, n);
	if (err) {
		api_store_error(j, err, "move");
		goto out;
	}
	filer_evs_add(evs, src, moved);
	ok = true;
out:
	filer_entry_free(src);
	filer_entry_free(dst);
	filer_entry_free(moved);
	free(d);
	free(n);
	free(d2);
	free(n2);
	return ok;
}

/*
 * create: the new entry at r->path, in one transaction with its options:
 * parents (missing directories made), moves (files renamed first, which may
 * make room at the target), ifEtag (replace only that version), consume
 * (files deleted, their chunks the entry lists taken over). Every condition
 * is checked before the entry is written (a refusal rolls back the
 * directories parents made and the moves), under the locks of the target
 * and of every moved and consumed path.
 */
static void op_create(struct fjob *j, struct api_req *r)
{
	struct filer *f = j->f;
	struct filer_entry *old = NULL, *e = r->entry, **gone = NULL;
	struct filer_tx *tx = NULL;
	struct filer_evs evs = {0};
	struct garbage g = {0};
	struct stripe_set *locks = xmalloc(sizeof(*locks));
	struct fid_set keep = {0};
	size_t ngone = 0;
	wfs_err err;

	stripes_of(locks, r->path, r->consume, r->nconsume, r->moves, r->nmoves);
	lock_stripes(f, locks);
	err = filer_store_begin(f->store, &tx);
	if (err) {
		api_store_error(j, err, "begin");
		goto out;
	}
	if (r->parents) {
		if (!make_parents(j, tx, &evs, r->dir, r->path))
			goto out;
	} else if (!parent_ok(j, tx, r->dir)) {
		goto out;
	}
	for (size_t i = 0; i < r->nmoves; i++)
		if (!move_file(j, tx, &r->moves[i], &evs))
			goto out;
	err = filer_store_find(f->store, tx, r->dir, r->name, &old);
	if (err && err != WFS_ENOENT) {
		api_store_error(j, err, "lookup");
		goto out;
	}
	if (r->if_etag) {
		char etag[17];
		if (!old) {
			api_error(j, 404, "ENOENT", "%s does not exist (ifEtag)", r->path);
			goto out;
		}
		err = shown_etag(f, tx, old, etag);
		if (err) {
			api_store_error(j, err, r->path);
			goto out;
		}
		if (strcasecmp(etag, r->if_etag)) {
			api_error(j, 412, "EPRECOND", "%s: etag is %s, not %s", r->path, etag,
				  r->if_etag);
			goto out;
		}
	}
	if (old && (r->exclusive || filer_entry_is_dir(old) || filer_entry_is_dir(e))) {
		api_error(j, 409, "EEXIST", "%s already exists", r->path);
		goto out;
	}
	if (r->nconsume) {
		gone = xcalloc(r->nconsume, sizeof(*gone));
		if (!consume_find(j, tx, r, gone, &ngone))
			goto out;
	}
	fid_set_init(&keep, e);
	if (old) {
		struct filer_chunk *lc = NULL;
		size_t ln = 0;
		/* a replaced hard link loses one name; its last frees the shared chunks */
		err = filer_hardlink_drop(f->store, tx, old, &lc, &ln);
		if (err) {
			api_store_error(j, err, "unlinking the old entry");
			goto out;
		}
		for (size_t i = 0; i < ln; i++)
			filer_entry_add_chunk(old, lc[i].fid, lc[i].offset, lc[i].size,
					      lc[i].mtime_ns, lc[i].etag, lc[i].is_manifest);
		filer_chunks_free(lc, ln);
		e->attr.crtime_ns = old->attr.crtime_ns;
		/* free only what the new entry does not reference again */
		garbage_unkept(&g, old->chunks, old->n_chunks, &keep);
		err = filer_store_update(f->store, tx, e);
	} else {
		err = filer_store_insert(f->store, tx, e);
	}
	if (!err)
		err = claim_chunks(f, tx, e->chunks, e->n_chunks, old, gone, ngone);
	if (err) {
		api_store_error(j, err, r->path);
		goto out;
	}
	filer_evs_add(&evs, old, e);
	/* consumed files: their chunks move to the new entry, or are freed */
	for (size_t i = 0; i < ngone; i++) {
		err = filer_store_delete(f->store, tx, gone[i]->dir, gone[i]->name);
		if (!err)
			err = garbage_consumed(f, &g, gone[i], &keep);
		if (err) {
			api_store_error(j, err, r->consume[i]);
			goto out;
		}
		filer_evs_add(&evs, gone[i], NULL);
	}
	err = finish_tx(j, &tx, &evs, &g);
	if (err) {
		api_store_error(j, err, "commit");
		goto out;
	}
	if (r->quiet) {
		char etag[17];
		entry_etag(e, etag);
		buf_reset(&j->body);
		buf_printf(&j->body, "{\"etag\":\"%s\"}", etag);
		j->ctype = "application/json";
	} else {
		respond_entry(j, e);
	}
	j->status = old ? 200 : 201;
out:
	filer_store_rollback(tx);
	unlock_stripes(f, locks);
	free(locks);
	free(keep.v);
	filer_evs_clear(&evs);
	filer_chunks_free(g.c, g.n);
	filer_entry_free(old);
	for (size_t i = 0; i < ngone; i++)
		filer_entry_free(gone[i]);
	free(gone);
}

/*
 * Cuts e to size bytes (chunks_truncate): chunks at or past size go to g and a
 * chunk crossing it is shortened, so growing the file later reads zeros there
 * rather than the old bytes; inline content is cut. Manifest chunks are first
 * replaced by their members (fetched through f->bc); the manifest blobs alone
 * are freed (queued as plain chunks so the garbage queue keeps the members).
 */
static wfs_err truncate_entry(struct filer *f, struct filer_entry *e, uint64_t size,
			      struct garbage *g)
{
	struct filer_chunk *c = NULL, *cut = NULL;
	size_t n = 0, ncut = 0;
	bool manifests = false, past = false;
	wfs_err err = WFS_OK;

	for (size_t i = 0; i < e->n_chunks; i++) {
		manifests |= e->chunks[i].is_manifest;
		past |= e->chunks[i].offset + e->chunks[i].size > size;
	}
	if (e->has_content && e->content_len > size)
		e->content_len = (size_t)size;
	if (!past)
		return WFS_OK;
	if (manifests) {
		err = chunk_resolve_manifests(f->bc, e->chunks, e->n_chunks, &c, &n);
		if (err)
			return err;
		for (size_t i = 0; i < e->n_chunks; i++) {
			if (!e->chunks[i].is_manifest)
				continue;
			garbage_add(g, &e->chunks[i]);
			g->c[g->n - 1].is_manifest = false;
		}
	} else {
		c = xmalloc((e->n_chunks ? e->n_chunks : 1) * sizeof(*c));
		for (size_t i = 0; i < e->n_chunks; i++)
			filer_chunk_copy(&c[i], &e->chunks[i]);
		n = e->n_chunks;
	}
	err = chunks_truncate(c, &n, size, &cut, &ncut);
	if (err)
		goto out;
	for (size_t i = 0; i < ncut; i++)
		garbage_add(g, &cut[i]);
	filer_chunks_clear(e->chunks, e->n_chunks);
	e->n_chunks = 0;
	for (size_t i = 0; i < n; i++)
		filer_entry_add_chunk(e, c[i].fid, c[i].offset, c[i].size, c[i].mtime_ns, c[i].etag,
				      false);
out:
	filer_chunks_free(c, n);
	filer_chunks_free(cut, ncut);
	return err;
}

static void op_update(struct fjob *j, struct api_req *r)
{
	struct filer *f = j->f;
	struct filer_entry *old = NULL, *e = NULL;
	struct filer_tx *tx = NULL;
	struct filer_evs evs = {0};
	struct garbage g = {0};
	char etag[17];
	wfs_err err;

	filer_lock_path(f, r->path);
	err = filer_store_begin(f->store, &tx);
	if (err) {
		api_store_error(j, err, "begin");
		goto out;
	}
	err = filer_store_find(f->store, tx, r->dir, r->name, &old);
	if (!err)
		err = filer_hardlink_resolve(f->store, tx, &old);
	if (err) {
		api_store_error(j, err, r->path);
		goto out;
	}
	if (r->if_etag) {
		entry_etag(old, etag);
		if (strcmp(etag, r->if_etag)) {
			api_error(j, 412, "EPRECOND", "%s: etag is %s, not %s", r->path, etag,
				  r->if_etag);
			goto out;
		}
	}
	if ((r->set & (API_SET_SIZE | API_SET_CHUNKS | API_SET_APPEND | API_SET_CONTENT)) &&
	    !S_ISREG(old->attr.mode)) {
		api_error(j, 409, "EISDIR", "%s: size, chunks and content apply to regular files",
			  r->path);
		goto out;
	}
	e = filer_entry_dup(old);
	if (r->set & API_SET_MODE)
		e->attr.mode = (e->attr.mode & S_IFMT) | (r->attr.mode & 07777);
	if (r->set & API_SET_UID)
		e->attr.uid = r->attr.uid;
	if (r->set & API_SET_GID)
		e->attr.gid = r->attr.gid;
	/* an entry without a stored atime reads its mtime as atime: keep that value */
	if ((r->set & API_SET_MTIME) && !e->attr.atime_ns)
		e->attr.atime_ns = e->attr.mtime_ns;
	if (r->set & API_SET_ATIME)
		e->attr.atime_ns = r->attr.atime_ns;
	if (r->set & API_SET_MTIME)
		e->attr.mtime_ns = r->attr.mtime_ns;
	e->attr.ctime_ns = (r->set & API_SET_CTIME) ? r->attr.ctime_ns : (int64_t)time_now_ns();
	if (r->set & API_SET_CONTENT) {
		/* small files are committed inline: every chunk goes */
		for (size_t i = 0; i < e->n_chunks; i++)
			garbage_add(&g, &e->chunks[i]);
		filer_chunks_clear(e->chunks, e->n_chunks);
		e->n_chunks = 0;
		filer_entry_set_content(e, r->content, r->content_len);
		e->attr.size = r->content_len;
	}
	if (r->set & API_SET_CHUNKS) {
		/* replaced: free what the new list no longer names */
		for (size_t i = 0; i < e->n_chunks; i++) {
			bool kept = false;
			for (size_t k = 0; k < r->chunks->n_chunks && !kept; k++)
				kept = !strcmp(e->chunks[i].fid, r->chunks->chunks[k].fid);
			if (!kept)
				garbage_add(&g, &e->chunks[i]);
		}
		filer_chunks_clear(e->chunks, e->n_chunks);
		e->n_chunks = 0;
		filer_entry_clear_content(e);
		e->attr.size = 0;
	}
	if (r->set & API_SET_DROP) {
		/* chunks the appended ones cover whole (the mount re-uploads a growing tail) */
		size_t kept = 0;
		for (size_t i = 0; i < e->n_chunks; i++) {
			bool drop = false;
			for (size_t k = 0; k < r->nfids && !drop; k++)
				drop = !strcmp(e->chunks[i].fid, r->fids[k]);
			/* never free what the same request appends */
			for (size_t k = 0; k < r->chunks->n_chunks && drop; k++)
				drop = strcmp(e->chunks[i].fid, r->chunks->chunks[k].fid) != 0;
			if (drop) {
				garbage_add(&g, &e->chunks[i]);
				filer_chunks_clear(&e->chunks[i], 1);
			} else {
				e->chunks[kept++] = e->chunks[i];
			}
		}
		e->n_chunks = kept;
	}
	if (r->set & (API_SET_CHUNKS | API_SET_APPEND)) {
		if (e->has_content && r->chunks->n_chunks) {
			api_error(j, 400, "EINVAL", "%s has inline content; replace its chunks",
				  r->path);
			goto out;
		}
		for (size_t k = 0; k < r->chunks->n_chunks; k++) {
			const struct filer_chunk *c = &r->chunks->chunks[k];
			filer_entry_add_chunk(e, c->fid, c->offset, c->size, c->mtime_ns, c->etag,
					      c->is_manifest);
			if (c->offset + c->size > e->attr.size)
				e->attr.size = c->offset + c->size;
		}
	}
	if (r->set & API_SET_SIZE) {
		/*
		 * Growing cuts at the old end first: a chunk an older truncate left
		 * crossing it must not show through the new range.
		 */
		err = truncate_entry(f, e, MIN(r->attr.size, e->attr.size), &g);
		if (err) {
			api_store_error(j, err, r->path);
			goto out;
		}
		/* readers size inline files by their content: zero-fill it (bounded) */
		if (e->has_content && r->attr.size > e->content_len &&
		    r->attr.size <= FILER_CONTENT_MAX) {
			uint8_t *z = xcalloc(1, (size_t)r->attr.size);
			if (e->content_len)
				memcpy(z, e->content, e->content_len);
			filer_entry_set_content(e, z, (size_t)r->attr.size);
			free(z);
		}
		e->attr.size = r->attr.size;
	}
	if (filer_entry_check(e)) {
		api_error(j, 400, "EINVAL", "%s: the entry would exceed a size limit", r->path);
		goto out;
	}
	err = filer_hardlink_is_linked(e) ? filer_hardlink_save(f->store, tx, e)
					  : filer_store_update(f->store, tx, e);
	if (!err && (r->set & (API_SET_CHUNKS | API_SET_APPEND)))
		err = claim_chunks(f, tx, r->chunks->chunks, r->chunks->n_chunks, old, NULL, 0);
	if (err) {
		api_store_error(j, err, r->path);
		goto out;
	}
	filer_evs_add(&evs, old, e);
	err = finish_tx(j, &tx, &evs, &g);
	if (err) {
		api_store_error(j, err, "commit");
		goto out;
	}
	respond_entry(j, e);
out:
	filer_store_rollback(tx);
	filer_unlock_path(f, r->path);
	filer_evs_clear(&evs);
	filer_chunks_free(g.c, g.n);
	filer_entry_free(old);
	filer_entry_free(e);
}

static void op_delete(struct fjob *j, struct api_req *r)
{
	struct filer *f = j->f;
	struct filer_entry *e = NULL;
	struct filer_tx *tx = NULL;
	struct filer_evs evs = {0};
	struct garbage g = {0};
	wfs_err err;

	if (!*r->name) {
		api_error(j, 400, "EINVAL", "the root directory cannot be deleted");
		return;
	}
	filer_lock_tree(f);
	err = filer_store_begin(f->store, &tx);
	if (err) {
		api_store_error(j, err, "begin");
		goto out;
	}
	err = filer_store_find(f->store, tx, r->dir, r->name, &e);
	if (err) {
		api_store_error(j, err, r->path);
		goto out;
	}
	if (r->if_etag && !etag_matches(j, tx, e, r->path, r->if_etag))
		goto out;
	if (filer_entry_is_dir(e)) {
		bool empty;
		err = dir_is_empty(f, tx, r->path, &empty);
		if (err) {
			api_store_error(j, err, "listing");
			goto out;
		}
		if (!empty && !r->recursive) {
			api_error(j, 409, "ENOTEMPTY", "%s is not empty", r->path);
			goto out;
		}
		if (!empty)
			err = delete_below(f, tx, r->path, &evs, &g);
	} else {
		err = drop_name(f, tx, e, &g);
	}
	if (!err)
		err = filer_store_delete(f->store, tx, r->dir, r->name);
	if (!err) {
		garbage_entry(&g, e);
		filer_evs_add(&evs, e, NULL);
		err = finish_tx(j, &tx, &evs, &g);
	}
	if (err) {
		api_store_error(j, err, "delete");
		goto out;
	}
	respond_ok(j);
out:
	filer_store_rollback(tx);
	filer_unlock_tree(f);
	filer_evs_clear(&evs);
	filer_chunks_free(g.c, g.n);
	filer_entry_free(e);
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(path, dir, n) && path[n] == '/';
}

static void op_rename(struct fjob *j, struct api_req *r)
{
	struct filer *f = j->f;
	struct filer_entry *src = NULL, *dst = NULL, *a = NULL, *b = NULL;
	struct filer_tx *tx = NULL;
	struct filer_evs evs = {0};
	struct garbage g = {0};
	int64_t now = (int64_t)time_now_ns();
	wfs_err err;

	filer_lock_tree(f);
	err = filer_store_begin(f->store, &tx);
	if (err) {
		api_store_error(j, err, "begin");
		goto out;
	}
	err = filer_store_find(f->store, tx, r->dir, r->name, &src);
	if (err) {
		api_store_error(j, err, r->path);
		goto out;
	}
	if (!parent_ok(j, tx, r->dir2))
		goto out;
	err = filer_store_find(f->store, tx, r->dir2, r->name2, &dst);
	if (err && err != WFS_ENOENT) {
		api_store_error(j, err, r->path2);
		goto out;
	}
	if (r->if_etag) {
		/* replace only that version of to (the parser refused noReplace, exchange) */
		if (!dst) {
			api_error(j, 404, "ENOENT", "%s does not exist (ifEtag)", r->path2);
			goto out;
		}
		if (!etag_matches(j, tx, dst, r->path2, r->if_etag))
			goto out;
	}
	if (filer_entry_is_dir(src) && under(r->path2, r->path)) {
		api_error(j, 400, "EINVAL", "cannot move %s into itself", r->path);
		goto out;
	}
	if (!strcmp(r->path, r->path2) || (dst && same_link(src, dst) && !r->exchange)) {
		respond_ok(j); /* POSIX: renaming onto itself (or its own hard link) does nothing */
		goto out;
	}
	if (r->exchange) {
		if (!dst) {
			api_error(j, 404, "ENOENT", "exchange: %s does not exist", r->path2);
			goto out;
		}
		if (filer_entry_is_dir(dst) && under(r->path, r->path2)) {
			api_error(j, 400, "EINVAL", "cannot exchange %s with its ancestor",
				  r->path);
			goto out;
		}
		a = filer_entry_dup(src);
		filer_entry_set_path(a, r->dir2, r->name2);
		a->attr.ctime_ns = now;
		b = filer_entry_dup(dst);
		filer_entry_set_path(b, r->dir, r->name);
		b->attr.ctime_ns = now;
		err = filer_store_update(f->store, tx, a);
		if (!err)
			err = filer_store_update(f->store, tx, b);
		if (!err)
			err = filer_hardlink_moved(f->store, tx, a, r->path, r->path2);
		if (!err)
			err = filer_hardlink_moved(f->store, tx, b, r->path2, r->path);
		if (!err && (filer_entry_is_dir(src) || filer_entry_is_dir(dst))) {
			/*
			 * Swap the subtrees through a parking directory key below
			 * the source: the source is a directory without a child of
			 * that name (checked), so no entry lives there.
			 */
			char *tmp = xasprintf("%s/.weedfs-exchange-%" PRId64, r->path, now);
			bool empty = true;
			if (filer_entry_is_dir(src)) {
				struct filer_entry *clash = NULL;
				err = filer_store_find(f->store, tx, r->path,
						       tmp + strlen(r->path) + 1, &clash);
				filer_entry_free(clash);
				err = err == WFS_ENOENT ? dir_is_empty(f, tx, tmp, &empty)
							: (err ? err : WFS_EEXIST);
			}
			if (!err && !empty)
				err = WFS_EEXIST;
			if (!err && filer_entry_is_dir(src))
				err = move_below(f, tx, r->path, tmp);
			if (!err && filer_entry_is_dir(dst))
				err = move_below(f, tx, r->path2, r->path);
			if (!err && filer_entry_is_dir(src))
				err = move_below(f, tx, tmp, r->path2);
			free(tmp);
		}
		if (!err) {
			filer_evs_add_resolved(f, tx, &evs, src, a);
			filer_evs_add_resolved(f, tx, &evs, dst, b);
			err = finish_tx(j, &tx, &evs, &g);
		}
		if (err) {
			api_store_error(j, err, "exchange");
			goto out;
		}
		respond_ok(j);
		goto out;
	}
	if (dst) {
		bool sd = filer_entry_is_dir(src), dd = filer_entry_is_dir(dst);
		if (r->no_replace) {
			api_error(j, 409, "EEXIST", "%s exists", r->path2);
			goto out;
		}
		if (!sd && dd) {
			api_error(j, 409, "EISDIR", "%s is a directory", r->path2);
			goto out;
		}
		if (sd && !dd) {
			api_error(j, 409, "ENOTDIR", "%s is not a directory", r->path2);
			goto out;
		}
		if (dd) {
			bool empty;
			err = dir_is_empty(f, tx, r->path2, &empty);
			if (err) {
				api_store_error(j, err, "listing");
				goto out;
			}
			if (!empty) {
				api_error(j, 409, "ENOTEMPTY", "%s is not empty", r->path2);
				goto out;
			}
		}
		garbage_entry(&g, dst);
		filer_evs_add(&evs, dst, NULL);
		err = dd ? WFS_OK : drop_name(f, tx, dst, &g);
		if (!err)
			err = filer_store_delete(f->store, tx, r->dir2, r->name2);
		if (err) {
			api_store_error(j, err, "replacing the target");
			goto out;
		}
	}
	a = filer_entry_dup(src);
	filer_entry_set_path(a, r->dir2, r->name2);
	a->attr.ctime_ns = now;
	err = filer_store_insert(f->store, tx, a);
	if (!err)
		err = filer_hardlink_moved(f->store, tx, a, r->path, r->path2);
	if (!err && filer_entry_is_dir(src))
		err = move_below(f, tx, r->path, r->path2);
	if (!err)
		err = filer_store_delete(f->store, tx, r->dir, r->name);
	if (!err) {
		filer_evs_add_resolved(f, tx, &evs, src, a);
		err = finish_tx(j, &tx, &evs, &g);
	}
	if (err) {
		api_store_error(j, err, "rename");
		goto out;
	}
	respond_ok(j);
out:
	filer_store_rollback(tx);
	filer_unlock_tree(f);
	filer_evs_clear(&evs);
	filer_chunks_free(g.c, g.n);
	filer_entry_free(src);
	filer_entry_free(dst);
	filer_entry_free(a);
	filer_entry_free(b);
}

/* link: newPath becomes another name of target's file (filer_hardlink.h). */
static void op_link(struct fjob *j, struct api_req *r)
{
	struct filer *f = j->f;
	struct filer_entry *t = NULL, *d = NULL, *before = NULL, *after = NULL, *made = NULL;
	struct filer_tx *tx = NULL;
	struct filer_evs evs = {0};
	struct garbage g = {0};
	wfs_err err;

	/* two paths and a shared record: the tree lock, like rename */
	filer_lock_tree(f);
	err = filer_store_begin(f->store, &tx);
	if (err) {
		api_store_error(j, err, "begin");
		goto out;
	}
	err = filer_find(f, tx, r->dir, r->name, &t);
	if (err) {
		api_store_error(j, err, r->path);
		goto out;
	}
	if (filer_entry_is_dir(t)) {
		api_error(j, 409, "EPERM", "%s is a directory; directories cannot be linked",
			  r->path);
		goto out;
	}
	if (!parent_ok(j, tx, r->dir2))
		goto out;
	err = filer_store_find(f->store, tx, r->dir2, r->name2, &d);
	if (err != WFS_ENOENT) {
		if (err)
			api_store_error(j, err, r->path2);
		else
			api_error(j, 409, "EEXIST", "%s already exists", r->path2);
		goto out;
	}
	err = filer_hardlink_make(f->store, tx, t, r->dir2, r->name2, &before, &after, &made);
	if (!err) {
		filer_evs_add(&evs, before, after);
		filer_evs_add(&evs, NULL, made);
		err = finish_tx(j, &tx, &evs, &g);
	}
	if (err) {
		api_store_error(j, err, "link");
		goto out;
	}
	respond_entry(j, made);
	j->status = 201;
out:
	filer_store_rollback(tx);
	filer_unlock_tree(f);
	filer_evs_clear(&evs);
	filer_entry_free(t);
	filer_entry_free(d);
	filer_entry_free(before);
	filer_entry_free(after);
	filer_entry_free(made);
}

static void op_xattr(struct fjob *j, struct api_req *r)
{
	struct filer *f = j->f;
	struct filer_entry *old = NULL, *e = NULL;
	struct filer_tx *tx = NULL;
	struct filer_evs evs = {0};
	struct garbage g = {0};
	wfs_err err;

	filer_lock_path(f, r->path);
	err = filer_store_begin(f->store, &tx);
	if (err) {
		api_store_error(j, err, "begin");
		goto out;
	}
	err = filer_store_find(f->store, tx, r->dir, r->name, &old);
	if (!err)
		err = filer_hardlink_resolve(f->store, tx, &old);
	if (err) {
		api_store_error(j, err, r->path);
		goto out;
	}
	e = filer_entry_dup(old);
	if (r->op == API_SET_XATTR) {
		bool has = filer_entry_xattr_get(e, r->xname) != NULL;
		if (has && r->xflag == API_XATTR_CREATE) {
			api_error(j, 409, "EEXIST", "attribute %s exists", r->xname);
			goto out;
		}
		if (!has && r->xflag == API_XATTR_REPLACE) {
			api_error(j, 404, "ENODATA", "no attribute %s", r->xname);
			goto out;
		}
		if (!has && e->n_xattrs >= FILER_XATTRS_MAX) {
			api_error(j, 400, "ENOSPC", "too many attributes");
			goto out;
		}
		filer_entry_xattr_set(e, r->xname, r->xvalue, r->xvalue_len);
	} else if (filer_entry_xattr_remove(e, r->xname)) {
		api_error(j, 404, "ENODATA", "no attribute %s", r->xname);
		goto out;
	}
	e->attr.ctime_ns = (int64_t)time_now_ns();
	err = filer_hardlink_is_linked(e) ? filer_hardlink_save(f->store, tx, e)
					  : filer_store_update(f->store, tx, e);
	if (!err) {
		filer_evs_add(&evs, old, e);
		err = finish_tx(j, &tx, &evs, &g);
	}
	if (err) {
		api_store_error(j, err, r->path);
		goto out;
	}
	respond_entry(j, e);
out:
	filer_store_rollback(tx);
	filer_unlock_path(f, r->path);
	filer_evs_clear(&evs);
	filer_entry_free(old);
	filer_entry_free(e);
}

static void op_assign(struct fjob *j, struct api_req *r)
{
	struct blob_assign_params ap = {
		.collection = r->collection ? r->collection : j->f->collection,
		.replication = r->replication ? r->replication : j->f->replication,
		.ttl = r->ttl,
	};
	struct blob_assignment *a = xcalloc(r->count ? r->count : 1, sizeof(*a));
	const char **fids = xcalloc(r->count ? r->count : 1, sizeof(*fids));
	wfs_err err = WFS_OK;
	json_w *w;

	if (ap.collection && !*ap.collection)
		ap.collection = NULL;
	if (ap.replication && !*ap.replication)
		ap.replication = NULL;
	for (uint32_t i = 0; i < r->count; i++) {
		err = blob_client_assign(j->f->bc, &ap, &a[i]);
		if (err) {
			api_store_error(j, err == WFS_ENOENT ? WFS_EUNAVAIL : err, "assign");
			goto out;
		}
		fids[i] = a[i].fid;
	}
	/*
	 * Leased before the client sees them: a blob stored under an id that no
	 * entry claims within the lease is deleted (the client died before its
	 * commit). One transaction for the whole request.
	 */
	err = gc_lease_add(j->f->store, fids, r->count,
			   (int64_t)time_now_ns() + j->f->assign_lease_s * 1000000000);
	if (err) {
		api_store_error(j, err, "assign: recording the lease");
		goto out;
	}
	buf_reset(&j->body);
	w = jw_new(&j->body, false);
	jw_obj_begin(w);
	jw_key(w, "fids");
	jw_arr_begin(w);
	for (uint32_t i = 0; i < r->count; i++) {
		jw_obj_begin(w);
		jw_kv_str(w, "fid", a[i].fid);
		jw_kv_str(w, "url", a[i].url);
		jw_kv_str(w, "publicUrl", a[i].public_url);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	jw_free(w);
	j->status = 200;
	j->ctype = "application/json";
out:
	free(a);
	free(fids);
}

static void op_lookup_volume(struct fjob *j, struct api_req *r)
{
	struct blob_location *locs = NULL;
	size_t n = 0;
	json_w *w;
	/* always the master's current view: a client asks after its own cached copy failed,
	   and the filer's cache may predate a server's death or return */
	wfs_err err = blob_client_lookup(j->f->bc, r->volume_id, true, &locs, &n);
	if (err == WFS_ENOENT) {
		api_error(j, 404, "ENOENT", "volume %" PRIu32 " not found", r->volume_id);
		return;
	}
	if (err) {
		api_store_error(j, err, "volume lookup");
		return;
	}
	buf_reset(&j->body);
	w = jw_new(&j->body, false);
	jw_obj_begin(w);
	jw_kv_u64(w, "volumeId", r->volume_id);
	jw_key(w, "locations");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		jw_kv_str(w, "url", locs[i].url);
		jw_kv_str(w, "publicUrl", locs[i].public_url);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	jw_free(w);
	free(locs);
	j->status = 200;
	j->ctype = "application/json";
}

/*
 * freeChunks: the caller (a mount) stored these blobs but will never reference them (a
 * range rewritten after its upload, a truncate, a failed commit, a file deleted before
 * its flush). Queued due at once in the persistent garbage queue, so a filer restart
 * loses none; an id still under its assign lease is due at once too (not at the end of
 * the lease). The API trusts its clients, as it does for update {chunks}:
 * nothing checks that no entry references them, so a client must name only blobs it
 * never committed.
 */
static void op_free_chunks(struct fjob *j, struct api_req *r)
{
	wfs_err err = gc_queue_free_now(j->f->store, (const char *const *)r->fids, r->nfids);
	if (err) {
		api_store_error(j, err, "freeChunks");
		return;
	}
	filer_gc_kick(j->f);
	buf_reset(&j->body);
	buf_printf(&j->body, "{\"queued\":%zu}", r->nfids);
	j->status = 200;
	j->ctype = "application/json";
}

/* Sums one server's replica list of /vol/status into the statfs figures. */
static void statfs_add(yajl_val vols, uint64_t *used, uint64_t *files, uint32_t **seen,
		       size_t *nseen)
{
	if (!YAJL_IS_ARRAY(vols))
		return;
	for (size_t i = 0; i < vols->u.array.len; i++) {
		yajl_val v = vols->u.array.values[i];
		uint64_t id = 0, size = 0, fc = 0, dc = 0;
		bool dup = false;
		if (!json_get_u64(v, "Id", &id) || !json_get_u64(v, "Size", &size))
			continue;
		*used += size; /* every copy takes space */
		for (size_t k = 0; k < *nseen && !dup; k++)
			dup = (*seen)[k] == id;
		if (dup)
			continue; /* a replica holds the same files */
		if ((*nseen & (*nseen - 1)) == 0)
			*seen = xrealloc(*seen, (*nseen ? *nseen * 2 : 1) * sizeof(**seen));
		(*seen)[(*nseen)++] = (uint32_t)id;
		json_get_u64(v, "FileCount", &fc);
		json_get_u64(v, "DeleteCount", &dc);
		*files += fc > dc ? fc - dc : 0;
	}
}

/*
 * statfs: the cluster's capacity from the master's /vol/status. Total is the
 * volume size limit times the volume slots of the live servers, used the sum
 * of every volume copy's size, files the live needles of each volume once.
 */
static void op_statfs(struct fjob *j)
{
	struct http_result res;
	char *url = xasprintf("http://%s/vol/status", blob_client_master(j->f->bc));
	char msg[128];
	yajl_val root = NULL, vols, dcs;
	uint64_t limit = 0, max = 0, used = 0, files = 0, total;
	uint32_t *seen = NULL;
	size_t nseen = 0;
	json_w *w;
	wfs_err err;

	http_result_init(&res);
	err = http_get(url, blob_client_timeout_ms(j->f->bc), &res);
	if (err || res.status != 200) {
		api_error(j, 503, "EAGAIN", "the master %s did not answer /vol/status (%s)",
			  blob_client_master(j->f->bc), err ? wfs_strerror(err) : "bad status");
		goto out;
	}
	root = json_parse(res.body.data, res.body.len, msg, sizeof(msg));
	vols = root ? json_get(root, "Volumes") : NULL;
	if (!vols || !json_get_u64(root, "VolumeSizeLimit", &limit) ||
	    !json_get_u64(vols, "Max", &max)) {
		api_error(j, 503, "EAGAIN", "malformed /vol/status from the master");
		goto out;
	}
	dcs = json_get(vols, "DataCenters");
	for (size_t d = 0; YAJL_IS_OBJECT(dcs) && d < dcs->u.object.len; d++) {
		yajl_val racks = dcs->u.object.values[d];
		for (size_t r = 0; YAJL_IS_OBJECT(racks) && r < racks->u.object.len; r++) {
			yajl_val nodes = racks->u.object.values[r];
			for (size_t n = 0; YAJL_IS_OBJECT(nodes) && n < nodes->u.object.len; n++)
				statfs_add(nodes->u.object.values[n], &used, &files, &seen, &nseen);
		}
	}
	total = max && limit > UINT64_MAX / max ? UINT64_MAX : limit * max;
	buf_reset(&j->body);
	w = jw_new(&j->body, false);
	jw_obj_begin(w);
	jw_kv_u64(w, "totalBytes", total);
	jw_kv_u64(w, "usedBytes", used);
	jw_kv_u64(w, "freeBytes", total > used ? total - used : 0);
	jw_kv_u64(w, "files", files);
	jw_obj_end(w);
	jw_free(w);
	j->status = 200;
	j->ctype = "application/json";
out:
	yajl_tree_free(root);
	http_result_free(&res);
	free(seen);
	free(url);
}

static void api_run(struct fjob *j)
{
	struct api_job *a = j->ext;
	char msg[256] = "";
	struct api_req *r = NULL;
	const char *raw_header = fjob_header(j, API_RAW_CONTENT_HEADER);
	uint64_t raw_len = 0;
	wfs_err err;

	if (filer_lock_api(j, a->op, a->body, a->len))
		return; /* lock, getLock, lockSession: filer_lock.c */
	if (raw_header && (!parse_u64(raw_header, &raw_len) || raw_len > a->len)) {
		api_error(j, 400, "EINVAL", "%s: \"%.32s\" is not a count of the body's bytes",
			  API_RAW_CONTENT_HEADER, raw_header);
		return;
	}
	err = api_req_parse(a->op, a->body, a->len - raw_len,
			    raw_header ? (const uint8_t *)a->body + a->len - raw_len : NULL,
			    (size_t)raw_len, &r, msg, sizeof(msg));
	if (err == WFS_ENOENT) {
		api_error(j, 404, "ENOSYS", "%s", msg);
		return;
	}
	if (err) {
		api_error(j, 400, "EINVAL", "%s", msg);
		return;
	}
	switch (r->op) {
	case API_LOOKUP:
		op_lookup(j, r);
		break;
	case API_LIST:
		op_list(j, r);
		break;
	case API_CREATE:
		op_create(j, r);
		break;
	case API_UPDATE:
		op_update(j, r);
		break;
	case API_DELETE:
		op_delete(j, r);
		break;
	case API_RENAME:
		op_rename(j, r);
		break;
	case API_SET_XATTR:
	case API_REMOVE_XATTR:
		op_xattr(j, r);
		break;
	case API_ASSIGN:
		op_assign(j, r);
		break;
	case API_LOOKUP_VOLUME:
		op_lookup_volume(j, r);
		break;
	case API_LINK:
		op_link(j, r);
		break;
	case API_STATFS:
		op_statfs(j);
		break;
	case API_FREE_CHUNKS:
		op_free_chunks(j, r);
		break;
	}
	api_req_free(r);
}

/* Runs j's operation and frees its request (the answer is left in j). */
static void api_job_do(struct fjob *j)
{
	struct api_job *a = j->ext;
	api_run(j);
	j->ext = NULL;
	free(a->op);
	free(a->body);
	free(a);
}

static void api_job_run(void *arg)
{
	struct fjob *j = arg;
	api_job_do(j);
	fjob_respond_deferred(j);
}

static void api_body(http_req *req, const char *data, size_t len, void *arg)
{
	struct filer *f = arg;
	struct api_job *a = xcalloc(1, sizeof(*a));
	struct fjob *j = fjob_new(f, req, "/", true);

	{
		const char *op = http_req_path(req) + strlen(API_PREFIX);
		a->op = xstrndup(op, strnlen(op, 64)); /* xstrndup copies exactly n bytes */
	}
	a->body = xmalloc(len + 1);
	memcpy(a->body, data, len);
	a->body[len] = '\0';
	a->len = len;
	j->ext = a;
	if (f->local_store && !strcmp(a->op, "lookup")) {
		/* a read of a local database: cheaper here than two thread hops */
		api_job_do(j);
		fjob_respond(j);
		return;
	}
	if (!filer_submit(f, false, api_job_run, j)) {
		http_resp_error(req, 503, "filer is stopping");
		free(a->op);
		free(a->body);
		free(a);
		fjob_free(j);
	}
}

bool filer_api_route(struct filer *f, http_req *req)
{
	const char *raw = http_req_path(req);
	const char *name, *value;

	if (strncmp(raw, "/.api/", 6))
		return false;
	if (strncmp(raw, API_PREFIX, strlen(API_PREFIX))) {
		http_resp_error(req, 404, "unknown API version (use %s<op>)", API_PREFIX);
		return true;
	}
	if (http_req_method(req) != HTTP_POST) {
		http_resp_header(req, "Allow", "POST");
		http_resp_error(req, 405, "the entry API takes POST");
		return true;
	}
	if (http_req_query_at(req, 0, &name, &value)) {
		http_resp_error(req, 400, "the entry API takes no query parameters");
		return true;
	}
	/* the job is made once the body is in: a dropped connection leaves nothing behind */
	http_req_read_body(req, API_BODY_MAX, api_body, f);
	return true;
}
