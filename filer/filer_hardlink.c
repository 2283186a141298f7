/* Hard links: the shared record and the per-name stubs (see filer_hardlink.h). */
#include "config.h"
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "buf.h"
#include "filer/filer_hardlink.h"
#include "util.h"

#define KEY_PREFIX     "hardlink:"
#define KEY_PREFIX_LEN (sizeof(KEY_PREFIX) - 1)
#define ID_LEN         16

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
		rec->attr.nlink--;
		rec->attr.ctime_ns = (int64_t)time_now_ns();
		err = record_put(s, tx, rec);
	} else {
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
	*made = filer_entry_dup(rec);
	filer_entry_set_path(*made, dir, name);
	*before = old;
	*after = rec;
	old = rec = NULL;
out:
	filer_entry_free(old);
	filer_entry_free(rec);
	filer_entry_free(st);
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
