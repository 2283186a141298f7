/*
 * Tagging (?tagging): PUT or POST stores the request's "Seaweed-" headers as
 * extended attributes of the entry, names canonicalised the way Go's
 * net/http does (Seaweed-k1 becomes Seaweed-K1); DELETE ?tagging=K1,K2
 * removes "Seaweed-K1" and "Seaweed-K2" (matched case-sensitively), and a
 * bare DELETE ?tagging removes every tag: a read-modify-write of the entry
 * in the namespace core (ns_modify: one store transaction under the path's
 * lock, with its metadata event). Tags on a hard-linked name are the
 * shared file's (filer_hardlink.h), seen through every name.
 */
#include "config.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "filer/filer_int.h"
#include "filer/namespace.h"
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

/* Applies the request (the fjob ctx) to e (an ns_edit_fn); a bad tag name is WFS_EINVAL. */
static wfs_err apply(struct ns_tx *t, const struct filer_entry *old, struct filer_entry *e,
		     void *ctx)
{
	struct fjob *j = ctx;
	(void)old;
	if (j->method == HTTP_DELETE) {
		const char *list = fjob_query(j, "tagging");
		if (!list || !*list) {
			for (size_t i = e->n_xattrs; i-- > 0;)
				if (is_tag(e->xattrs[i].name))
					filer_entry_xattr_remove(e, e->xattrs[i].name);
			return WFS_OK;
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
		return WFS_OK;
	}
	for (size_t i = 0; i < j->nh; i++) {
		char *name;
		if (strncasecmp(j->h[i].name, TAG_PREFIX, strlen(TAG_PREFIX)))
			continue;
		if (strlen(j->h[i].name) > FILER_SHORT_MAX ||
		    strlen(j->h[i].name) == strlen(TAG_PREFIX)) {
			return ns_fail(t->res, WFS_EINVAL, "invalid tag name \"%.60s\"",
				       j->h[i].name);
		}
		name = canonical(j->h[i].name);
		filer_entry_xattr_set(e, name, j->h[i].value, strlen(j->h[i].value));
		free(name);
	}
	return WFS_OK;
}

static void tag_run(struct fjob *j)
{
	struct ns_result res = {0};

	if (j->too_many_tags) {
		fjob_error(j, 400, "more than %d Seaweed- tag headers", FILER_TAGS_MAX);
		return;
	}
	if (!*j->name) {
		fjob_error(j, 400, "the root directory carries no tags");
		return;
	}
	/* tags of a hard-linked name belong to the shared file (ns_modify) */
	if (ns_modify(j->f, j->signature, j->path, j->dir, j->name, NULL, apply, j, NULL, &res))
		fjob_ns_error(j, &res);
	else
		j->status = 202;
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
