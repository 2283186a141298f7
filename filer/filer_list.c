/*
 * Directory listings: JSON (SeaweedFS's shape) or HTML for browsers, paged by
 * limit and lastFileName, filtered by namePattern / namePatternExclude
 * (shell wildcards, fnmatch(3)).
 *
 * DESIGN: the store pages by name. A pattern's literal head (before the first
 * wildcard) becomes the store's prefix, so "img_*.jpg" costs the page of
 * "img_" names only; other filtering reads further pages until the page is
 * full or the directory ends. One extra match is fetched to know whether
 * more follow (ShouldDisplayLoadMore).
 */
#include "config.h"
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "filer/filer_hardlink.h"
#include "client/entry_json.h"
#include "filer/filer_int.h"
#include "http_util.h"
#include "log.h"
#include "util.h"

#define PATTERN_MAX 1024
#define STORE_PAGE  1024

struct collect {
	const char *pattern, *exclude;
	struct filer_entry **v;
	size_t n, want;
	char *last_seen; /* last name the store passed, matched or not */
	size_t seen;
};

static bool collect_one(void *ctx, struct filer_entry *e)
{
	struct collect *c = ctx;
	free(c->last_seen);
	c->last_seen = xstrdup(e->name);
	c->seen++;
	if ((c->pattern && fnmatch(c->pattern, e->name, 0) != 0) ||
	    (c->exclude && fnmatch(c->exclude, e->name, 0) == 0)) {
		filer_entry_free(e);
		return true;
	}
	c->v[c->n++] = e;
	return c->n < c->want;
}

/* The literal head of a shell pattern (newly allocated, may be ""). */
static char *pattern_prefix(const char *p)
{
	size_t n = strcspn(p, "*?[\\");
	return xstrndup(p, n);
}

static void html_escape(buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			buf_append_str(b, "&lt;");
			break;
		case '>':
			buf_append_str(b, "&gt;");
			break;
		case '&':
			buf_append_str(b, "&amp;");
			break;
		case '"':
			buf_append_str(b, "&quot;");
			break;
		case '\'':
			buf_append_str(b, "&#39;");
			break;
		default:
			buf_append_byte(b, *s);
		}
	}
}

static void render_html(struct fjob *j, struct filer_entry **v, size_t n, bool more, size_t limit)
{
	buf *b = &j->body;
	buf href = BUF_INIT;
	buf_append_str(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
	html_escape(b, j->path);
	buf_append_str(b, "</title></head><body>\n<h1>");
	html_escape(b, j->path);
	buf_append_str(b, "</h1>\n<table>\n<tr><th>Name</th><th>Size</th><th>Modified</th></tr>\n");
	if (strcmp(j->path, "/")) {
		buf_append_str(b, "<tr><td><a href=\"../\">..</a></td><td></td><td></td></tr>\n");
	}
	for (size_t i = 0; i < n; i++) {
		const struct filer_entry *e = v[i];
		bool dir = filer_entry_is_dir(e);
		char date[40];
		time_t t = (time_t)(e->attr.mtime_ns / 1000000000);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
		buf_reset(&href);
		url_encode_path(e->name, &href);
		buf_append_str(b, "<tr><td><a href=\"");
		html_escape(b, href.data ? href.data : "");
		if (dir)
			buf_append_byte(b, '/');
		buf_append_str(b, "\">");
		html_escape(b, e->name);
		if (dir)
			buf_append_byte(b, '/');
		buf_printf(b, "</a></td><td>%" PRIu64 "</td><td>%s</td></tr>\n",
			   dir ? 0 : e->attr.size, date);
	}
	buf_append_str(b, "</table>\n");
	if (more && n) {
		buf_reset(&href);
		url_encode_query(v[n - 1]->name, &href);
		buf_printf(b, "<p><a href=\"?limit=%zu&amp;lastFileName=", limit);
		html_escape(b, href.data ? href.data : "");
		buf_append_str(b, "\">more</a></p>\n");
	}
	buf_append_str(b, "</body></html>\n");
	buf_free(&href);
	j->ctype = "text/html; charset=utf-8";
}

static bool wants_html(const struct fjob *j)
{
	const char *a = fjob_header(j, "Accept");
	return a && strstr(a, "text/html") && !strstr(a, "application/json");
}

/* Drops what c collected, keeping its filters and capacity. */
static void collect_reset(struct collect *c)
{
	for (size_t i = 0; i < c->n; i++)
		filer_entry_free(c->v[i]);
	c->n = 0;
	c->seen = 0;
	free(c->last_seen);
	c->last_seen = NULL;
}

/* Reads store pages of j->path after last into c until c is full or the directory ends. */
static wfs_err collect_pages(struct fjob *j, struct collect *c, const char *last,
			     const char *prefix)
{
	char *start = last && *last ? xstrdup(last) : NULL;
	wfs_err err;

	collect_reset(c);
	for (;;) {
		size_t page = MIN((size_t)STORE_PAGE, c->want - c->n), before = c->seen;
		if (!c->pattern && !c->exclude)
			page = MIN((size_t)FILER_LIST_LIMIT_MAX, c->want - c->n);
		err = filer_store_list(j->f->store, NULL, j->path, start, false, page, prefix,
				       collect_one, c, NULL);
		if (err || c->n >= c->want || c->seen - before < page)
			break;
		free(start);
		start = xstrdup(c->last_seen);
	}
	free(start);
	return err;
}

/*
 * Merges the shared record into every hard-linked name, so a listing shows
 * the same nlink, size, mode, times and chunks as lookups of each name. A
 * record that cannot be read leaves the name's stub (logged): the listing
 * still answers.
 */
static void resolve_links(struct fjob *j, struct filer_entry **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		wfs_err err = filer_hardlink_resolve(j->f->store, NULL, &v[i]);
		if (err)
			log_warn("listing %s: hard link %s: %s", j->path, v[i]->name,
				 wfs_strerror(err));
	}
}

enum dir_state { DIR_SAME, DIR_GONE, DIR_CHANGED };

/*
 * Whether the directory the request looked up (dir_e) is still the one at
 * j->path. The lookup and the store's pages are separate reads, so a rename
 * of the directory between them would otherwise answer an empty or partial
 * listing of a path that no longer exists; checking after the pages makes a
 * concurrent rename show as "before" (the same directory, all its entries:
 * a rename moves every child in one transaction) or as 404, never half.
 * (A directory moved away and back between the reads is not detected; a
 * read-only snapshot transaction in the store would close that too.)
 */
static enum dir_state dir_state_now(struct fjob *j, const struct filer_entry *dir_e, wfs_err *err)
{
	struct filer_entry *now = NULL;
	enum dir_state st;

	*err = WFS_OK;
	if (!strcmp(j->path, "/"))
		return DIR_SAME; /* the root never moves (and may be synthesized) */
	*err = filer_find(j->f, NULL, j->dir, j->name, &now);
	if (*err == WFS_ENOENT) {
		*err = WFS_OK;
		return DIR_GONE;
	}
	if (*err)
		return DIR_SAME;
	if (!filer_entry_is_dir(now))
		st = DIR_GONE;
	else if (dir_e && now->attr.crtime_ns != dir_e->attr.crtime_ns)
		st = DIR_CHANGED;
	else
		st = DIR_SAME;
	filer_entry_free(now);
	return st;
}

void filer_list_run(struct fjob *j, const struct filer_entry *dir_e)
{
	struct collect c = {0};
	const char *s, *last;
	char *prefix = NULL;
	uint64_t limit = FILER_LIST_DEFAULT;
	bool more = false;
	wfs_err err = WFS_OK;

	if ((s = fjob_query(j, "limit")) && *s) {
		if (!parse_u64(s, &limit) || limit < 1 || limit > FILER_LIST_LIMIT_MAX) {
			fjob_error(j, 400, "invalid limit \"%.30s\" (1..%d)", s,
				   FILER_LIST_LIMIT_MAX);
			return;
		}
	}
	last = fjob_query(j, "lastFileName");
	if (last && strlen(last) > FILER_NAME_MAX) {
		fjob_error(j, 400, "lastFileName longer than %d bytes", FILER_NAME_MAX);
		return;
	}
	c.pattern = fjob_query(j, "namePattern");
	c.exclude = fjob_query(j, "namePatternExclude");
	if ((c.pattern && strlen(c.pattern) > PATTERN_MAX) ||
	    (c.exclude && strlen(c.exclude) > PATTERN_MAX)) {
		fjob_error(j, 400, "name pattern longer than %d bytes", PATTERN_MAX);
		return;
	}
	if (c.pattern && !*c.pattern)
		c.pattern = NULL;
	if (c.exclude && !*c.exclude)
		c.exclude = NULL;
	if (c.pattern)
		prefix = pattern_prefix(c.pattern);
	c.want = (size_t)limit + 1;
	c.v = xcalloc(c.want, sizeof(*c.v));
	for (int attempt = 0;; attempt++) {
		enum dir_state st;
		err = collect_pages(j, &c, last, prefix);
		if (err)
			break;
		st = dir_state_now(j, dir_e, &err);
		if (err || st == DIR_SAME)
			break;
		if (st == DIR_GONE || attempt == 2) {
			fjob_error(j, 404, "%s: not found", j->path);
			goto out;
		}
	}
	if (err) {
		fjob_store_error(j, err, "listing");
		goto out;
	}
	if (c.n > limit) {
		more = true;
		filer_entry_free(c.v[--c.n]);
	}
	resolve_links(j, c.v, c.n);
	if (wants_html(j)) {
		render_html(j, c.v, c.n, more, (size_t)limit);
	} else {
		const char *p = fjob_query(j, "pretty");
		json_w *w = jw_new(&j->body, p && strcmp(p, "false") && strcmp(p, "n"));
		jw_obj_begin(w);
		entry_json_text(w, "Path", j->path);
		jw_key(w, "Entries");
		if (c.n) {
			jw_arr_begin(w);
			for (size_t i = 0; i < c.n; i++)
				filer_entry_json(w, c.v[i]);
			jw_arr_end(w);
		} else {
			jw_null(w);
		}
		jw_kv_u64(w, "Limit", limit);
		jw_kv_str(w, "LastFileName", c.n ? c.v[c.n - 1]->name : "");
		jw_kv_bool(w, "ShouldDisplayLoadMore", more);
		jw_kv_bool(w, "EmptyFolder", c.n == 0 && !(last && *last));
		jw_obj_end(w);
		jw_free(w);
		j->ctype = "application/json";
	}
	j->status = 200;
out:
	for (size_t i = 0; i < c.n; i++)
		filer_entry_free(c.v[i]);
	free(c.v);
	free(c.last_seen);
	free(prefix);
}
