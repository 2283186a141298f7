/* Numbering entries stored without an inode (see filer_inode.h). */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "filer/filer_hardlink.h"
#include "filer/filer_inode.h"
#include "log.h"
#include "util.h"

#define MARKER     "inode-numbered"
#define MARKER_LEN (sizeof(MARKER) - 1)
#define PAGE       1000

/* A list of owned strings (directories still to walk) or entries (one page). */
struct vec {
	void **v;
	size_t n, cap;
};

static void vec_push(struct vec *q, void *p)
{
	if (q->n == q->cap) {
		q->cap = q->cap ? q->cap * 2 : 16;
		q->v = xrealloc(q->v, q->cap * sizeof(*q->v));
	}
	q->v[q->n++] = p;
}

static bool page_add(void *ctx, struct filer_entry *e)
{
	vec_push(ctx, e);
	return true;
}

/* Numbers e (owned by the caller, as stored) if it has no inode. */
static wfs_err number(struct filer_store *s, struct filer_tx *tx, struct filer_entry *e,
		      uint64_t *numbered)
{
	struct filer_entry *rec;
	wfs_err err;

	if (e->attr.inode)
		return WFS_OK;
	if (!filer_hardlink_is_linked(e)) {
		err = filer_store_new_inode(s, tx, &e->attr.inode);
		if (!err)
			err = filer_store_update(s, tx, e);
		goto out;
	}
	/* a name of a hard-linked file: the shared record's number, given once */
	rec = filer_entry_dup(e);
	err = filer_hardlink_resolve(s, tx, &rec);
	if (!err && !rec->attr.inode) {
		err = filer_store_new_inode(s, tx, &rec->attr.inode);
		if (!err)
			err = filer_hardlink_save(s, tx, rec); /* the record and this name */
	} else if (!err) {
		e->attr.inode = rec->attr.inode;
		err = filer_store_update(s, tx, e);
	}
	filer_entry_free(rec);
out:
	if (!err)
		(*numbered)++;
	return err;
}

/* Numbers the children of dir, queueing the subdirectories on q. */
static wfs_err walk_dir(struct filer_store *s, struct filer_tx *tx, const char *dir,
			struct vec *q, uint64_t *numbered)
{
	char *start = xstrdup("");
	wfs_err err = WFS_OK;

	for (;;) {
		struct vec page = {0};
		size_t count = 0;
		err = filer_store_list(s, tx, dir, start, false, PAGE, NULL, page_add, &page,
				       &count);
		for (size_t i = 0; i < page.n; i++) {
			struct filer_entry *e = page.v[i];
			if (!err)
				err = number(s, tx, e, numbered);
			if (!err && S_ISDIR(e->attr.mode))
				vec_push(q, filer_entry_full_path(e));
			if (i + 1 == page.n) {
				free(start);
				start = xstrdup(e->name);
			}
			filer_entry_free(e);
		}
		free(page.v);
		if (err || count < PAGE)
			break;
	}
	free(start);
	return err;
}

wfs_err filer_inode_migrate(struct filer_store *s, uint64_t *numbered)
{
	struct filer_tx *tx = NULL;
	struct filer_entry *root = NULL;
	struct vec q = {0};
	void *val = NULL;
	size_t vlen = 0, head = 0;
	uint64_t n = 0;
	wfs_err err;

	if (numbered)
		*numbered = 0;
	err = filer_store_kv_get(s, NULL, MARKER, MARKER_LEN, &val, &vlen);
	free(val);
	if (err != WFS_ENOENT)
		return err; /* WFS_OK: numbered before */
	err = filer_store_begin(s, &tx);
	if (err)
		return err;
	/* first, so a second migrator waits on this row until we commit */
	err = filer_store_kv_put(s, tx, MARKER, MARKER_LEN, "1", 1);
	if (!err) {
		err = filer_store_find(s, tx, "/", "", &root);
		if (!err && !root->attr.inode) {
			err = filer_store_update(s, tx, root); /* the root is always 1 */
			n++;
		} else if (err == WFS_ENOENT) {
			err = WFS_OK; /* the root is not stored until it changes */
		}
	}
	vec_push(&q, xstrdup("/"));
	while (!err && head < q.n) {
		err = walk_dir(s, tx, q.v[head], &q, &n);
		free(q.v[head]);
		q.v[head++] = NULL;
	}
	for (size_t i = head; i < q.n; i++)
		free(q.v[i]);
	free(q.v);
	filer_entry_free(root);
	if (err) {
		filer_store_rollback(tx);
		return err;
	}
	err = filer_store_commit(tx);
	if (!err && n)
		log_info("gave inode numbers to %llu entries stored without one",
			 (unsigned long long)n);
	if (!err && numbered)
		*numbered = n;
	return err;
}
