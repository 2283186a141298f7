/* Hard links: the shared record and the per-name stubs (see filer_hardlink.h). */
#include "config.h"
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "buf.h"
#include "filer/filer_hardlink.h"
#include "log.h"
#include "util.h"

#define KEY_PREFIX       "hardlink:"
#define KEY_PREFIX_LEN   (sizeof(KEY_PREFIX) - 1)
#define ID_LEN           16
#define NAMES_PREFIX     "hardlink-names:"
#define NAMES_PREFIX_LEN (sizeof(NAMES_PREFIX) - 1)

bool filer_hardlink_is_linked(const struct filer_entry *e)
{
	return e && e->attr.hard_link_id && e->attr.hard_link_id_len;
}

/* The kv key of id into key (at least KEY_PREFIX_LEN + FILER_HARDLINK_ID_MAX bytes). */
static size_t record_key(const struct filer_entry *e, uint8_t *key)
{
	memcpy(key, KEY_PREFIX, KEY_PREFIX_LEN);
	memcpy(key + KEY_PREFIX_LEN, e->attr.hard_link_id, e->attr.hard_link_id_len);
	return KEY_PREFIX_LEN + e->attr.hard_link_id_len;
}

/* ---- the names of a group ---- */

/* A group's names, as full paths (owned). */
struct names {
	char **v;
	size_t n, cap;
};

static void names_free(struct names *nm)
{
	for (size_t i = 0; i < nm->n; i++)
		free(nm->v[i]);
	free(nm->v);
	nm->v = NULL;
	nm->n = nm->cap = 0;
}

static void names_push(struct names *nm, const char *path)
{
	if (nm->n == nm->cap) {
		nm->cap = nm->cap ? nm->cap * 2 : 4;
		nm->v = xrealloc(nm->v, nm->cap * sizeof(*nm->v));
	}
	nm->v[nm->n++] = xstrdup(path);
}

static ssize_t names_find(const struct names *nm, const char *path)
{
	for (size_t i = 0; i < nm->n; i++)
		if (!strcmp(nm->v[i], path))
			return (ssize_t)i;
	return -1;
}

static size_t names_key(const struct filer_entry *e, uint8_t *key)
{
	memcpy(key, NAMES_PREFIX, NAMES_PREFIX_LEN);
	memcpy(key + NAMES_PREFIX_LEN, e->attr.hard_link_id, e->attr.hard_link_id_len);
	return NAMES_PREFIX_LEN + e->attr.hard_link_id_len;
}

/* The recorded names of e's group; none (not an error) when there is no list. */
static wfs_err names_get(struct filer_store *s, struct filer_tx *tx, const struct filer_entry *e,
			 struct names *nm)
{
	uint8_t key[NAMES_PREFIX_LEN + FILER_HARDLINK_ID_MAX];
	void *val = NULL;
	size_t vlen = 0, off = 0;
	wfs_err err = filer_store_kv_get(s, tx, key, names_key(e, key), &val, &vlen);

	memset(nm, 0, sizeof(*nm));
	if (err == WFS_ENOENT)
		return WFS_OK;
	if (err)
		return err;
	while (off < vlen) {
		const char *p = (const char *)val + off;
		const char *z = memchr(p, 0, vlen - off);
		if (!z || *p != '/') {
			err = WFS_ECORRUPT;
			names_free(nm);
			break;
		}
		names_push(nm, p);
		off += (size_t)(z - p) + 1;
	}
	free(val);
	return err;
}

/* Stores nm as e's group's names (no names: deletes the list). */
static wfs_err names_put(struct filer_store *s, struct filer_tx *tx, const struct filer_entry *e,
			 const struct names *nm)
{
	uint8_t key[NAMES_PREFIX_LEN + FILER_HARDLINK_ID_MAX];
	size_t klen = names_key(e, key);
	buf b = BUF_INIT;
	wfs_err err;

	if (!nm->n) {
		err = filer_store_kv_delete(s, tx, key, klen);
		return err == WFS_ENOENT ? WFS_OK : err;
	}
	for (size_t i = 0; i < nm->n; i++)
		buf_append(&b, nm->v[i], strlen(nm->v[i]) + 1);
	err = b.len > FILER_KV_VALUE_MAX ? WFS_EINVAL
					 : filer_store_kv_put(s, tx, key, klen, b.data, b.len);
	buf_free(&b);
	return err;
}

static wfs_err record_get(struct filer_store *s, struct filer_tx *tx, const struct filer_entry *e,
			  struct filer_entry **rec)
{
	uint8_t key[KEY_PREFIX_LEN + FILER_HARDLINK_ID_MAX];
	void *val = NULL;
	size_t vlen = 0;
	wfs_err err = filer_store_kv_get(s, tx, key, record_key(e, key), &val, &vlen);
	if (err == WFS_ENOENT)
		err = WFS_ECORRUPT; /* a stub without its record */
	if (!err)
		err = filer_entry_decode(val, vlen, e->dir, e->name, rec);
	free(val);
	return err;
}

static wfs_err record_put(struct filer_store *s, struct filer_tx *tx, const struct filer_entry *rec)
{
	uint8_t key[KEY_PREFIX_LEN + FILER_HARDLINK_ID_MAX];
	buf b = BUF_INIT;
	wfs_err err = filer_entry_encode(rec, &b);
	if (!err)
		err = filer_store_kv_put(s, tx, key, record_key(rec, key), b.data, b.len);
	buf_free(&b);
	return err;
}

/* The stub stored at a name: merged without what only the record holds. */
static struct filer_entry *stub_of(const struct filer_entry *merged)
{
	struct filer_entry *st = filer_entry_dup(merged);
	filer_chunks_free(st->chunks, st->n_chunks);
	st->chunks = NULL;
	st->n_chunks = st->cap_chunks = 0;
	filer_entry_clear_content(st);
	return st;
}

wfs_err filer_hardlink_resolve(struct filer_store *s, struct filer_tx *tx, struct filer_entry **e)
{
	struct filer_entry *rec = NULL;
	wfs_err err;
	if (!filer_hardlink_is_linked(*e))
		return WFS_OK;
	err = record_get(s, tx, *e, &rec);
	if (err)
		return err;
	filer_entry_free(*e);
	*e = rec;
	return WFS_OK;
}

wfs_err filer_hardlink_save(struct filer_store *s, struct filer_tx *tx,
			    const struct filer_entry *merged)
{
	struct filer_entry *st;
	wfs_err err = record_put(s, tx, merged);
	if (err)
		return err;
	st = stub_of(merged);
	err = filer_store_update(s, tx, st);
	filer_entry_free(st);
	return err;
}

wfs_err filer_hardlink_drop(struct filer_store *s, struct filer_tx *tx, const struct filer_entry *e,
			    struct filer_chunk **freed, size_t *nfreed)
{
	struct filer_entry *rec = NULL;
	uint8_t key[KEY_PREFIX_LEN + FILER_HARDLINK_ID_MAX];
	wfs_err err;

	*freed = NULL;
	*nfreed = 0;
	if (!filer_hardlink_is_linked(e))
		return WFS_OK;
	err = record_get(s, tx, e, &rec);
	if (err)
		return err;
	if (rec->attr.nlink > 1) {
		struct names nm;
		rec->attr.nlink--;
		rec->attr.ctime_ns = (int64_t)time_now_ns();
		err = record_put(s, tx, rec);
		if (!err)
			err = names_get(s, tx, e, &nm);
		if (!err) {
			char *path = filer_entry_full_path(e);
			ssize_t i = names_find(&nm, path);
			free(path);
			if (i >= 0) {
				free(nm.v[i]);
				nm.v[i] = nm.v[--nm.n];
				err = names_put(s, tx, e, &nm);
			}
			names_free(&nm);
		}
	} else {
		struct names none = {0};
		err = names_put(s, tx, e, &none);
		if (!err)
			err = filer_store_kv_delete(s, tx, key, record_key(e, key));
		if (!err) {
			*freed = rec->chunks;
			*nfreed = rec->n_chunks;
			rec->chunks = NULL;
			rec->n_chunks = rec->cap_chunks = 0;
		}
	}
	filer_entry_free(rec);
	return err;
}

wfs_err filer_hardlink_make(struct filer_store *s, struct filer_tx *tx,
			    const struct filer_entry *target, const char *dir, const char *name,
			    struct filer_entry **before, struct filer_entry **after,
			    struct filer_entry **made)
{
	struct filer_entry *old = filer_entry_dup(target), *rec = NULL, *st = NULL;
	struct names nm = {0};
	char *tpath = NULL, *npath = NULL;
	wfs_err err = WFS_OK;

	*before = *after = *made = NULL;
	if (filer_hardlink_is_linked(old)) {
		err = filer_hardlink_resolve(s, tx, &old);
		if (err)
			goto out;
		rec = filer_entry_dup(old);
	} else {
		uint8_t id[ID_LEN];
		if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id)) {
			err = WFS_EIO;
			goto out;
		}
		rec = filer_entry_dup(old);
		rec->attr.hard_link_id = xmalloc(sizeof(id));
		memcpy(rec->attr.hard_link_id, id, sizeof(id));
		rec->attr.hard_link_id_len = sizeof(id);
		rec->attr.nlink = 1;
	}
	rec->attr.nlink++;
	rec->attr.ctime_ns = (int64_t)time_now_ns();
	/* the record and the target's stub (also turns an unlinked target into a stub) */
	err = filer_hardlink_save(s, tx, rec);
	if (err)
		goto out;
	st = stub_of(rec);
	filer_entry_set_path(st, dir, name);
	err = filer_store_insert(s, tx, st);
	if (err)
		goto out;
	err = names_get(s, tx, rec, &nm);
	if (err)
		goto out;
	tpath = filer_entry_full_path(target);
	if (names_find(&nm, tpath) < 0)
		names_push(&nm, tpath); /* a new group, or one linked before names were kept */
	npath = filer_entry_full_path(st);
	if (names_find(&nm, npath) < 0)
		names_push(&nm, npath);
	err = names_put(s, tx, rec, &nm);
	if (err)
		goto out;
	*made = filer_entry_dup(rec);
	filer_entry_set_path(*made, dir, name);
	*before = old;
	*after = rec;
	old = rec = NULL;
out:
	filer_entry_free(old);
	filer_entry_free(rec);
	filer_entry_free(st);
	names_free(&nm);
	free(tpath);
	free(npath);
	return err;
}

wfs_err filer_hardlink_release(struct filer_store *s, struct filer_tx *tx, struct filer_entry *e)
{
	struct filer_chunk *freed = NULL;
	size_t nfreed = 0;
	wfs_err err;

	if (!filer_hardlink_is_linked(e))
		return WFS_OK;
	err = filer_hardlink_drop(s, tx, e, &freed, &nfreed);
	if (err)
		return err;
	assert(e->n_chunks == 0); /* a stub keeps no chunks of its own */
	free(e->chunks);
	e->chunks = freed;
	e->n_chunks = e->cap_chunks = nfreed;
	return WFS_OK;
}

wfs_err filer_hardlink_moved(struct filer_store *s, struct filer_tx *tx,
			     const struct filer_entry *e, const char *from_path,
			     const char *to_path)
{
	struct names nm;
	ssize_t i;
	wfs_err err;

	if (!filer_hardlink_is_linked(e))
		return WFS_OK;
	err = names_get(s, tx, e, &nm);
	if (err)
		return err;
	/*
	 * Replace in place, without de-duplicating: an exchange of two names of
	 * one file moves a to b and then b to a, which must leave both.
	 */
	i = names_find(&nm, from_path);
	if (i >= 0) {
		free(nm.v[i]);
		nm.v[i] = xstrdup(to_path);
	} else if (nm.n && names_find(&nm, to_path) < 0) {
		names_push(&nm, to_path); /* from_path was not recorded: keep what we learn */
	}
	if (nm.n)
		err = names_put(s, tx, e, &nm);
	names_free(&nm);
	return err;
}

wfs_err filer_hardlink_names(struct filer_store *s, struct filer_tx *tx,
			     const struct filer_entry *e, char ***paths, size_t *n)
{
	struct names nm = {0};
	wfs_err err = WFS_OK;

	if (filer_hardlink_is_linked(e))
		err = names_get(s, tx, e, &nm);
	*paths = nm.n ? nm.v : NULL;
	*n = nm.n;
	if (!nm.n)
		free(nm.v);
	return err;
}

/* ---- fan-out ---- */

/* A link group a transaction touched, and the change that touched it first. */
struct group {
	const struct filer_entry *id;      /* borrowed: an entry carrying the id */
	const struct filer_entry *trigger; /* borrowed: the old side, or NULL */
};

static bool same_id(const struct filer_entry *a, const struct filer_entry *b)
{
	return a->attr.hard_link_id_len == b->attr.hard_link_id_len &&
	       !memcmp(a->attr.hard_link_id, b->attr.hard_link_id, a->attr.hard_link_id_len);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the group of e (linked) unless known; trigger is the change's old side. */
static void group_add(struct group **g, size_t *n, size_t *cap, const struct filer_entry *e,
		      const struct filer_entry *trigger)
{
	for (size_t i = 0; i < *n; i++) {
		if (same_id((*g)[i].id, e)) {
			if (!(*g)[i].trigger && trigger && filer_hardlink_is_linked(trigger) &&
			    same_id(trigger, e))
				(*g)[i].trigger = trigger;
			return;
		}
	}
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		*g = xrealloc(*g, *cap * sizeof(**g));
	}
	(*g)[*n].id = e;
	(*g)[*n].trigger = trigger && filer_hardlink_is_linked(trigger) && same_id(trigger, e)
				   ? trigger
				   : NULL;
	(*n)++;
}

/* Events for the names of group gr that ch has no event for (sorted in seen[0..nseen)). */
static wfs_err fan_group(struct filer_store *s, struct filer_tx *tx, const struct group *gr,
			 char **seen, size_t nseen, filer_hardlink_event_fn fn, void *ctx)
{
	struct names nm;
	wfs_err err = names_get(s, tx, gr->id, &nm);

	for (size_t i = 0; !err && i < nm.n; i++) {
		struct filer_entry *stub = NULL, *now = NULL, *old = NULL;
		char *dir = NULL, *name = NULL;
		if (bsearch(&nm.v[i], seen, nseen, sizeof(*seen), cmp_str))
			continue; /* this name has an event of its own */
		err = filer_path_split(nm.v[i], &dir, &name);
		if (!err)
			err = filer_store_find(s, tx, dir, name, &stub);
		if (err == WFS_ENOENT || err == WFS_EINVAL ||
		    (!err && (!filer_hardlink_is_linked(stub) || !same_id(stub, gr->id)))) {
			/* a stale name: the list is kept in step, so this is only a warning */
			log_warn("hard link name %s is no longer in its group", nm.v[i]);
			err = WFS_OK;
			goto next;
		}
		if (err)
			goto next;
		now = filer_entry_dup(stub);
		err = filer_hardlink_resolve(s, tx, &now);
		if (err == WFS_ECORRUPT) {
			err = WFS_OK; /* the record went with the last name: nothing to tell */
			goto next;
		}
		if (err)
			goto next;
		old = filer_entry_dup(gr->trigger ? gr->trigger : stub);
		filer_entry_set_path(old, dir, name);
		fn(ctx, old, now);
next:
		filer_entry_free(stub);
		filer_entry_free(now);
		filer_entry_free(old);
		free(dir);
		free(name);
	}
	names_free(&nm);
	return err;
}

wfs_err filer_hardlink_fanout(struct filer_store *s, struct filer_tx *tx,
			      const struct filer_hardlink_change *ch, size_t n,
			      filer_hardlink_event_fn fn, void *ctx)
{
	struct group *g = NULL;
	size_t ng = 0, capg = 0, nseen = 0;
	char **seen = NULL;
	wfs_err err = WFS_OK;

	for (size_t i = 0; i < n; i++) {
		const struct filer_entry *o = ch[i].old_e, *e = ch[i].new_e;
		bool ol = filer_hardlink_is_linked(o), nl = filer_hardlink_is_linked(e);
		if (ol && nl && same_id(o, e) &&
		    (strcmp(o->dir, e->dir) || strcmp(o->name, e->name)))
			continue; /* a rename of one name: the file did not change */
		if (ol)
			group_add(&g, &ng, &capg, o, o);
		if (nl)
			group_add(&g, &ng, &capg, e, o);
	}
	if (!ng)
		return WFS_OK;
	seen = xmalloc(2 * n * sizeof(*seen));
	for (size_t i = 0; i < n; i++) {
		if (ch[i].old_e)
			seen[nseen++] = filer_entry_full_path(ch[i].old_e);
		if (ch[i].new_e)
			seen[nseen++] = filer_entry_full_path(ch[i].new_e);
	}
	qsort(seen, nseen, sizeof(*seen), cmp_str);
	for (size_t i = 0; !err && i < ng; i++)
		err = fan_group(s, tx, &g[i], seen, nseen, fn, ctx);
	for (size_t i = 0; i < nseen; i++)
		free(seen[i]);
	free(seen);
	free(g);
	return err;
}
