/*
 * Tagging (?tagging): PUT or POST stores the request's "Seaweed-" headers as
 * extended attributes of the entry, names canonicalised the way Go's
 * net/http does (Seaweed-k1 becomes Seaweed-K1); DELETE ?tagging=K1,K2
 * removes "Seaweed-K1" and "Seaweed-K2" (matched case-sensitively), and a
 * bare DELETE ?tagging removes every tag. One store transaction under the
 * path's lock, with its metadata event. Tags on a hard-linked name are the
 * shared file's (filer_hardlink.h), seen through every name.
 */
#include "config.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "filer/filer_hardlink.h"
#include "filer/filer_int.h"
#include "log.h"
#include "util.h"

#define TAG_PREFIX "Seaweed-"

/* "seaweed-my-key" -> "Seaweed-My-Key" (newly allocated). */
static char *canonical(const char *name)
{
	char *s = xstrdup(name);
	bool up = true;
	for (char *p = s; *p; p++) {
		*p = up ? (char)toupper((unsigned char)*p) : (char)tolower((unsigned char)*p);
		up = *p == '-';
	}
	return s;
}

static bool is_tag(const char *name) { return !strncmp(name, TAG_PREFIX, strlen(TAG_PREFIX)); }

/* Applies the request to e; false with the job's error set when refused. */
static bool apply(struct fjob *j, struct filer_entry *e)
{
	if (j->method == HTTP_DELETE) {
		const char *list = fjob_query(j, "tagging");
		if (!list || !*list) {
			for (size_t i = e->n_xattrs; i-- > 0;)
				if (is_tag(e->xattrs[i].name))
					filer_entry_xattr_remove(e, e->xattrs[i].name);
			return true;
		}
		for (const char *p = list; *p;) {
			size_t n = strcspn(p, ",");
			if (n && n <= FILER_SHORT_MAX - strlen(TAG_PREFIX)) {
				char *name = xasprintf(TAG_PREFIX "%.*s", (int)n, p);
				filer_entry_xattr_remove(e, name); /* an absent tag is fine */
				free(name);
			}
			p += n;
			if (*p == ',')
				p++;
		}
		return true;
	}
	for (size_t i = 0; i < j->nh; i++) {
		char *name;
		if (strncasecmp(j->h[i].name, TAG_PREFIX, strlen(TAG_PREFIX)))
			continue;
		if (strlen(j->h[i].name) > FILER_SHORT_MAX ||
		    strlen(j->h[i].name) == strlen(TAG_PREFIX)) {
			fjob_error(j, 400, "invalid tag name \"%.60s\"", j->h[i].name);
			return false;
		}
		name = canonical(j->h[i].name);
		filer_entry_xattr_set(e, name, j->h[i].value, strlen(j->h[i].value));
		free(name);
	}
	return true;
}

static void tag_run(struct fjob *j)
{
	struct filer *f = j->f;
	struct filer_entry *old = NULL, *e = NULL;
	struct filer_tx *tx = NULL;
	struct filer_evs evs = {0};
	wfs_err err;

	if (j->too_many_tags) {
		fjob_error(j, 400, "more than %d Seaweed- tag headers", FILER_TAGS_MAX);
		return;
	}
	if (!*j->name) {
		fjob_error(j, 400, "the root directory carries no tags");
		return;
	}
	filer_lock_path(f, j->path);
	err = filer_store_begin(f->store, &tx);
	if (!err)
		err = filer_store_find(f->store, tx, j->dir, j->name, &old);
	if (!err) /* tags of a hard-linked name belong to the shared file */
		err = filer_hardlink_resolve(f->store, tx, &old);
	if (err == WFS_ENOENT) {
		fjob_error(j, 404, "%s: not found", j->path);
		goto out;
	}
	if (err) {
		fjob_store_error(j, err, "lookup");
		goto out;
	}
	e = filer_entry_dup(old);
	if (!apply(j, e))
		goto out;
	if (filer_entry_check(e)) {
		fjob_error(j, 400, "tags out of bounds (names <= 255 bytes, <= %d attributes)",
			   FILER_XATTRS_MAX);
		goto out;
	}
	e->attr.ctime_ns = (int64_t)time_now_ns();
	err = filer_hardlink_is_linked(e) ? filer_hardlink_save(f->store, tx, e)
					  : filer_store_update(f->store, tx, e);
	if (!err) {
		filer_evs_add(&evs, old, e);
		err = fjob_commit(j, tx, &evs);
		tx = NULL;
	}
	if (err) {
		fjob_store_error(j, err, "tagging");
		goto out;
	}
	j->status = 202;
out:
	filer_store_rollback(tx);
	filer_unlock_path(f, j->path);
	filer_evs_clear(&evs);
	filer_entry_free(old);
	filer_entry_free(e);
}

void filer_handle_tagging(struct fjob *j)
{
	if (j->method != HTTP_PUT && j->method != HTTP_POST && j->method != HTTP_DELETE) {
		http_resp_error(j->req, 405, "tagging takes PUT, POST or DELETE");
		fjob_free(j);
		return;
	}
	j->run = tag_run;
	fjob_submit(j);
}
