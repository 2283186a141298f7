/*
 * ListObjects (v1) and ListObjectsV2 over the filer's directory tree.
 *
 * DESIGN: an object key is the path under the bucket directory, so a listing
 * is a depth-first walk of that tree in key order. Key order is byte order of
 * whole keys, and a directory "d" holds keys "d/...": it sorts as "d/", not
 * as "d" (the filer's name order): "d-x" < "d/y" since '-' < '/'. So a walk
 * keeps the directories it met pending until the names it reads pass "d/".
 * The walk starts where the page starts: at each level it lists from the
 * component of the marker (start-after, continuation token or marker; from
 * its first prefix that a directory could extend past it) and skips what is
 * not after it, and it reads only names beginning with the
 * component of the prefix. With delimiter "/" a directory under the prefix is
 * a common prefix and is not entered. Other delimiters are applied key by
 * key. A page ends after max-keys keys and common prefixes; the continuation
 * token is the last one returned (base64), and resuming skips everything up
 * to it, the whole common prefix included.
 *
 * Keys that are no plain path (s3_keypath.h) are stored under ".s3~" names,
 * which the filer sorts by the stored name: each directory's reserved names
 * are listed apart when the walk enters it and held with the pending
 * directories at their keys' places (the key "d/" of ".s3~empty" before any
 * other of "d/"); the key "d" of a directory "d" (its .s3~object) is looked up
 * when the walk meets "d", at the place of the name "d".
 *
 * ETags come from s3_meta.c (stored by S3 writes, else derived from the entry).
 */
#include "config.h"
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "client/filer_meta.h"
#include "s3/s3_int.h"
#include "s3/s3_keypath.h"
#include "s3/s3_meta.h"
#include "s3/sigv4.h"
#include "util.h"

#define LIST_PAGE 1000
#define MAX_KEYS  1000

struct list {
	struct s3_req *r;
	xml_w *w;
	bool v2, url, owner;
	/* what a key or common prefix found does (a listing writes it out) */
	void (*on_key)(struct list *l, const char *key, const struct filer_entry *e);
	void (*on_prefix)(struct list *l, const char *cp);
	void *arg;
	bool versions_tree;         /* walking .versions: a key is a directory holding files */
	const char *prefix, *delim; /* delim NULL: none */
	char *after;                /* list only what sorts after this ("" none) */
	size_t max, count;
	bool truncated;
	char *last;   /* the last key or common prefix returned */
	wfs_err err;  /* a filer error */
	bool stopped; /* the page is full (or failed): stop walking */
};

static bool starts_with(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

void s3_xml_key(xml_w *w, bool url, const char *name, const char *v)
{
	if (url) {
		buf b = BUF_INIT;
		sigv4_uri_encode(v, strlen(v), true, &b);
		xml_elem_len(w, name, b.data ? b.data : "", b.len);
		buf_free(&b);
	} else {
		xml_elem(w, name, v);
	}
}

static void elem_key(struct list *l, const char *name, const char *v)
{
	s3_xml_key(l->w, l->url, name, v);
}

/* Counts one more result; false (and truncated) when the page is already full. */
static bool take_slot(struct list *l)
{
	if (l->count == l->max) {
		l->truncated = true;
		l->stopped = true;
		return false;
	}
	l->count++;
	return true;
}

static void emit_prefix(struct list *l, const char *cp)
{
	/* a run of keys under one prefix: it was the last thing written */
	if ((l->last && !strcmp(l->last, cp)) || strcmp(cp, l->after) <= 0 ||
	    starts_with(l->after, cp))
		return; /* written already, on this page or an earlier one */
	if (!take_slot(l))
		return;
	l->on_prefix(l, cp);
	free(l->last);
	l->last = xstrdup(cp);
}

static void xml_prefix(struct list *l, const char *cp)
{
	/* written in key order among the Contents: clients collect both lists by name */
	xml_open(l->w, "CommonPrefixes");
	elem_key(l, "Prefix", cp);
	xml_close(l->w);
}

static void xml_key(struct list *l, const char *key, const struct filer_entry *e)
{
	char when[32], etag[S3_ETAG_MAX];
	s3_iso8601(e->attr.mtime_ns, when);
	s3_etag(e, etag);
	xml_open(l->w, "Contents");
	elem_key(l, "Key", key);
	xml_elem(l->w, "LastModified", when);
	xml_elem(l->w, "ETag", etag);
	s3_checksum_elems(l->w, e);
	xml_elem_u64(l->w, "Size", e->attr.size);
	xml_elem(l->w, "StorageClass", "STANDARD");
	if (l->owner) {
		const char *who = l->r->who ? s3_identity_name(l->r->who) : "anonymous";
		xml_open(l->w, "Owner");
		xml_elem(l->w, "ID", who);
		xml_elem(l->w, "DisplayName", who);
		xml_close(l->w);
	}
	xml_close(l->w);
}

static void emit_key(struct list *l, const char *key, const struct filer_entry *e)
{
	if (strcmp(key, l->after) <= 0 || !starts_with(key, l->prefix))
		return;
	if (l->delim && *l->delim) {
		const char *d = strstr(key + strlen(l->prefix), l->delim);
		if (d) {
			char *cp = xstrndup(key, (size_t)(d - key) + strlen(l->delim));
			emit_prefix(l, cp);
			free(cp);
			return;
		}
	}
	if (!take_slot(l))
		return;
	l->on_key(l, key, e);
	free(l->last);
	l->last = xstrdup(key);
}

static void walk(struct list *l, const char *dir_key, const char *dir_path);

/* A directory met in the walk: a common prefix, skipped, or walked into. */
static void visit_dir(struct list *l, const char *dir_key, const char *dir_path)
{
	size_t pl = strlen(l->prefix);
	/* every key inside sorts before after (which does not continue into it) */
	if (strcmp(dir_key, l->after) < 0 && !starts_with(l->after, dir_key))
		return;
	if (starts_with(dir_key, l->prefix) && l->delim && !strcmp(l->delim, "/") &&
	    strlen(dir_key) > pl) {
		emit_prefix(l, dir_key);
		return;
	}
	if (starts_with(dir_key, l->prefix) || starts_with(l->prefix, dir_key))
		walk(l, dir_key, dir_path);
}

/*
 * What one level of the walk holds back until the names it reads pass it,
 * in key order: directories (met at "name/"), and what reserved names stand
 * for (s3_keypath.h), which the filer lists at their stored names' place
 * rather than their keys': a key's file ("" for the key "d/"), a directory's
 * own object ("d" beside "d/x"), a .versions directory.
 */
enum pend_kind {
	PEND_DIR,   /* walked as "name/" */
	PEND_FILE,  /* the key "name", its entry in e */
	PEND_SELF,  /* the key "name" if directory stored holds it (S3_KEYPATH_SELF) */
	PEND_VDIR,  /* the .versions tree's directory stored of the key "name" */
};
struct pend_item {
	enum pend_kind kind;
	char *name;   /* the key component */
	char *stored; /* its name in the directory */
	struct filer_entry *e;
};
struct pending {
	struct pend_item *v;
	size_t n;
};

/* Whether item a sorts before item b as keys (a directory as "name/"). */
static bool pend_before(const struct pend_item *a, const struct pend_item *b)
{
	size_t i = 0;
	int ca, cb;
	while (a->name[i] && a->name[i] == b->name[i])
		i++;
	ca = a->name[i] ? (unsigned char)a->name[i] : a->kind == PEND_DIR ? '/' : -1;
	cb = b->name[i] ? (unsigned char)b->name[i] : b->kind == PEND_DIR ? '/' : -1;
	return ca < cb;
}

/* Adds an item (its strings copied; e taken). */
static void pending_add(struct pending *p, enum pend_kind kind, const char *name,
			const char *stored, struct filer_entry *e)
{
	struct pend_item it = {kind, xstrdup(name), xstrdup(stored), e};
	size_t at = p->n;
	while (at > 0 && pend_before(&it, &p->v[at - 1]))
		at--;
	p->v = xrealloc(p->v, (p->n + 1) * sizeof(*p->v));
	memmove(p->v + at + 1, p->v + at, (p->n - at) * sizeof(*p->v));
	p->v[at] = it;
	p->n++;
}

static void pend_item_free(struct pend_item *it)
{
	free(it->name);
	free(it->stored);
	filer_entry_free(it->e);
}

static void versions_dir(struct list *l, struct pending *pend, const char *name, const char *key,
			 const char *path, const struct filer_entry *en);

/* The key "name" of a directory's own object, emitted if the walk wants it and it exists. */
static void emit_self(struct list *l, const char *key, const char *dir_path)
{
	struct filer_entry *e = NULL;
	char *path;
	if (strcmp(key, l->after) <= 0 || !starts_with(key, l->prefix))
		return; /* not on this page: spare the lookup */
	path = xasprintf("%s/" S3_KEYPATH_SELF, dir_path);
	if (!filer_meta_lookup(l->r->g->filer, path, &e) && S_ISREG(e->attr.mode))
		emit_key(l, key, e);
	filer_entry_free(e);
	free(path);
}

static void pending_flush(struct list *l, struct pending *p, const char *dir_key,
			  const char *dir_path, const char *before)
{
	while (p->n && !l->stopped) {
		struct pend_item it = p->v[0];
		char *key = xasprintf("%s%s%s", dir_key, it.name, it.kind == PEND_DIR ? "/" : "");
		char *path;
		if (before && strcmp(key, before) >= 0) {
			free(key);
			return;
		}
		memmove(p->v, p->v + 1, --p->n * sizeof(*p->v));
		path = xasprintf("%s/%s", dir_path, it.stored);
		if (it.kind == PEND_DIR)
			visit_dir(l, key, path);
		else if (it.kind == PEND_FILE)
			emit_key(l, key, it.e);
		else if (it.kind == PEND_SELF)
			emit_self(l, key, path);
		else
			versions_dir(l, p, it.name, key, path, it.e);
		free(key);
		free(path);
		pend_item_free(&it);
	}
}

/*
 * In the .versions tree, the directory of key holds its versions (files) and
 * the directories of longer keys: key is met here, at its place in key order,
 * if it has versions; its directory is walked later (as "key/") if it holds
 * directories.
 */
static void versions_dir(struct list *l, struct pending *pend, const char *name, const char *key,
			 const char *path, const struct filer_entry *en)
{
	char *start = NULL;
	bool files = false, dirs = false;
	do {
		struct filer_meta_page pg;
		wfs_err e = filer_meta_list_from(l->r->g->filer, path, start ? start : "", false,
						 NULL, LIST_PAGE, &pg);
		free(start);
		start = NULL;
		if (e)
			break;
		for (size_t i = 0; i < pg.n; i++) {
			files |= S_ISREG(pg.entries[i]->attr.mode);
			dirs |= S_ISDIR(pg.entries[i]->attr.mode);
		}
		if (pg.more && pg.last_name && !(files && dirs))
			start = xstrdup(pg.last_name);
		filer_meta_page_free(&pg);
	} while (start);
	if (files && !l->stopped)
		emit_key(l, key, en);
	if (dirs)
		pending_add(pend, PEND_DIR, name, strrchr(path, '/') + 1, NULL);
}

/*
 * The reserved names of dir_path (s3_keypath.h) as pending items at their
 * keys' places: listed apart, since the filer sorts them by stored name.
 */
static void reserved_pending(struct list *l, struct pending *pend, const char *dir_path)
{
	char *start = NULL;
	do {
		struct filer_meta_page pg;
		wfs_err e = filer_meta_list_from(l->r->g->filer, dir_path, start, false,
						 S3_KEYPATH_PREFIX, LIST_PAGE, &pg);
		free(start);
		start = NULL;
		if (e) {
			if (e != WFS_ENOENT && e != WFS_ENOTDIR) {
				l->err = e;
				l->stopped = true;
			}
			break;
		}
		for (size_t i = 0; i < pg.n; i++) {
			struct filer_entry *en = pg.entries[i];
			char *name = s3_keypath_decode(en->name);
			bool dir = S_ISDIR(en->attr.mode);
			if (!name)
				; /* a directory's own object (its parent emits it), or none of ours */
			else if (dir && l->versions_tree)
				pending_add(pend, PEND_VDIR, name, en->name, filer_entry_dup(en));
			else if (dir) {
				pending_add(pend, PEND_SELF, name, en->name, NULL);
				pending_add(pend, PEND_DIR, name, en->name, NULL);
			} else if (S_ISREG(en->attr.mode) && !l->versions_tree) {
				pending_add(pend, PEND_FILE, name, en->name, filer_entry_dup(en));
			}
			free(name);
		}
		if (pg.more && pg.last_name)
			start = xstrdup(pg.last_name);
		filer_meta_page_free(&pg);
	} while (start);
}

/* Walks the directory dir_path whose keys begin with dir_key ("" or "a/b/"). */
static void walk(struct list *l, const char *dir_key, const char *dir_path)
{
	size_t kl = strlen(dir_key);
	struct pending pend = {0};
	char *name_prefix = NULL, *start = NULL;
	bool inclusive = false;

	reserved_pending(l, &pend, dir_path);
	/* names here must begin with the prefix's component at this level */
	if (starts_with(l->prefix, dir_key)) {
		const char *rest = l->prefix + kl, *slash = strchr(rest, '/');
		name_prefix = slash ? xstrndup(rest, (size_t)(slash - rest)) : xstrdup(rest);
	}
	/*
	 * and the page starts at the marker's component at this level, or rather
	 * at its first prefix followed by a byte below '/': a directory of that
	 * name ("a" for "a.b") sorts after the marker ("a/" > "a.b/...")
	 */
	if (*l->after && starts_with(l->after, dir_key)) {
		const char *rest = l->after + kl;
		size_t n = strcspn(rest, "/"), j = 0;
		while (j < n && (unsigned char)rest[j] >= '/')
			j++;
		start = xstrndup(rest, j < n && j > 0 ? j : n);
		inclusive = true;
		if (j == 0 && n > 0) { /* even the first byte sorts below '/': from the top */
			free(start);
			start = NULL;
			inclusive = false;
		}
	}
	while (!l->stopped) {
		struct filer_meta_page pg;
		wfs_err e = filer_meta_list_from(l->r->g->filer, dir_path, start, inclusive,
						 name_prefix, LIST_PAGE, &pg);
		free(start);
		start = NULL;
		inclusive = false;
		if (e == WFS_ENOENT || e == WFS_ENOTDIR)
			break; /* gone meanwhile: nothing to list */
		if (e) {
			l->err = e;
			l->stopped = true;
			break;
		}
		for (size_t i = 0; i < pg.n && !l->stopped; i++) {
			const struct filer_entry *en = pg.entries[i];
			char *key;
			if (s3_keypath_reserved(en->name))
				continue; /* reserved_pending has them */
			key = xasprintf("%s%s", dir_key, en->name);
			pending_flush(l, &pend, dir_key, dir_path, key);
			if (S_ISDIR(en->attr.mode) && !kl &&
			    (!strcmp(en->name, S3_UPLOADS_NAME) ||
			     !strcmp(en->name, S3_VERSIONS_NAME)))
				; /* multipart uploads in progress, older versions: not objects */
			else if (S_ISDIR(en->attr.mode) && l->versions_tree) {
				char *path = xasprintf("%s/%s", dir_path, en->name);
				versions_dir(l, &pend, en->name, key, path, en);
				free(path);
			} else if (S_ISDIR(en->attr.mode)) {
				char *path = xasprintf("%s/%s", dir_path, en->name);
				emit_self(l, key, path); /* the key "d" beside "d/..." */
				free(path);
				pending_add(&pend, PEND_DIR, en->name, en->name, NULL);
			} else if (!l->versions_tree) {
				emit_key(l, key, en);
			}
			free(key);
		}
		if (pg.more && pg.last_name)
			start = xstrdup(pg.last_name);
		filer_meta_page_free(&pg);
		if (!start)
			break;
	}
	pending_flush(l, &pend, dir_key, dir_path, NULL);
	for (size_t i = 0; i < pend.n; i++)
		pend_item_free(&pend.v[i]);
	free(pend.v);
	free(start);
	free(name_prefix);
}

/* Decodes a continuation token (base64 of the last key); NULL if malformed. */
static char *token_decode(const char *t)
{
	size_t n = strlen(t);
	unsigned char *out;
	int len;
	if (!n || n % 4 || n > 4 * 1024)
		return NULL;
	out = xmalloc(n / 4 * 3 + 1);
	len = EVP_DecodeBlock(out, (const unsigned char *)t, (int)n);
	if (len < 0) {
		free(out);
		return NULL;
	}
	len -= (t[n - 1] == '=') + (t[n - 2] == '=');
	out[len] = '\0';
	if (memchr(out, '\0', (size_t)len)) {
		free(out);
		return NULL;
	}
	return (char *)out;
}

static char *token_encode(const char *key)
{
	size_t n = strlen(key);
	char *out = xmalloc((n + 2) / 3 * 4 + 1);
	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)key, (int)n);
	return out;
}

/* Reads the listing's query parameters into l; false when r got an error answer. */
static bool read_params(struct s3_req *r, struct list *l)
{
	const char *lt = http_req_query(r->req, "list-type"), *v;
	uint64_t max = MAX_KEYS;

	l->v2 = lt && !strcmp(lt, "2");
	if (lt && !l->v2) {
		s3_error(r, S3_INVALID_ARGUMENT, "Invalid list-type: only 2 is supported");
		return false;
	}
	l->prefix = http_req_query(r->req, "prefix");
	if (!l->prefix)
		l->prefix = "";
	l->delim = http_req_query(r->req, "delimiter");
	if (l->delim && !*l->delim)
		l->delim = NULL;
	if ((v = http_req_query(r->req, "max-keys")) && (!parse_u64(v, &max))) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 "Provided max-keys not an integer or within "
			 "integer range");
		return false;
	}
	l->max = max > MAX_KEYS ? MAX_KEYS : (size_t)max;
	if ((v = http_req_query(r->req, "encoding-type"))) {
		if (strcmp(v, "url")) {
			s3_error(r, S3_INVALID_ARGUMENT,
				 "Invalid Encoding Method specified in Request");
			return false;
		}
		l->url = true;
	}
	l->owner = !l->v2 || ((v = http_req_query(r->req, "fetch-owner")) && !strcmp(v, "true"));
	/* an empty token is no token (S3; clients send one on their first page) */
	if (l->v2 && (v = http_req_query(r->req, "continuation-token")) && *v) {
		l->after = token_decode(v);
		if (!l->after) {
			s3_error(r, S3_INVALID_ARGUMENT,
				 "The continuation token provided is incorrect");
			return false;
		}
	} else if ((v = http_req_query(r->req, l->v2 ? "start-after" : "marker"))) {
		l->after = xstrdup(v);
	}
	if (!l->after)
		l->after = xstrdup("");
	return true;
}

static void collect_key(struct list *l, const char *key, const struct filer_entry *e)
{
	struct s3_walk_item *it = xcalloc(1, sizeof(*it));
	struct s3_walk_items *out = l->arg;
	it->key = xstrdup(key);
	it->e = l->versions_tree ? NULL : filer_entry_dup(e);
	out->v = xrealloc(out->v, (out->n + 1) * sizeof(*out->v));
	out->v[out->n++] = it;
}

static void collect_prefix(struct list *l, const char *cp)
{
	struct s3_walk_item *it = xcalloc(1, sizeof(*it));
	struct s3_walk_items *out = l->arg;
	it->key = xstrdup(cp);
	it->is_prefix = true;
	out->v = xrealloc(out->v, (out->n + 1) * sizeof(*out->v));
	out->v[out->n++] = it;
}

wfs_err s3_walk_keys(struct s3_req *r, const char *root, bool versions_tree, const char *prefix,
		     const char *delim, const char *after, size_t max, struct s3_walk_items *out)
{
	struct list l = {.r = r,
			 .on_key = collect_key,
			 .on_prefix = collect_prefix,
			 .arg = out,
			 .versions_tree = versions_tree,
			 .prefix = prefix,
			 .delim = delim,
			 .after = xstrdup(after),
			 .max = max};
	if (max > 0)
		walk(&l, "", root);
	free(l.after);
	free(l.last);
	out->more = l.truncated;
	return l.err;
}

void s3_walk_items_free(struct s3_walk_items *out)
{
	for (size_t i = 0; i < out->n; i++) {
		free(out->v[i]->key);
		filer_entry_free(out->v[i]->e);
		free(out->v[i]);
	}
	free(out->v);
	memset(out, 0, sizeof(*out));
}

void s3_list_objects(struct s3_req *r)
{
	struct list l = {.r = r, .on_key = xml_key, .on_prefix = xml_prefix};
	char *bucket_path;
	const char *v;

	if (!read_params(r, &l) || !s3_bucket_exists(r))
		goto out;
	l.w = xml_w_new(&r->body);
	xml_open_s3(l.w, "ListBucketResult");
	xml_elem(l.w, "Name", r->bucket);
	elem_key(&l, "Prefix", l.prefix);
	if (l.v2) {
		if ((v = http_req_query(r->req, "continuation-token")) && *v)
			xml_elem(l.w, "ContinuationToken", v);
		if ((v = http_req_query(r->req, "start-after")))
			elem_key(&l, "StartAfter", v);
	} else {
		elem_key(&l, "Marker", l.after);
	}
	if (l.delim)
		elem_key(&l, "Delimiter", l.delim);
	xml_elem_u64(l.w, "MaxKeys", l.max);
	if (l.url)
		xml_elem(l.w, "EncodingType", "url");
	bucket_path = s3_bucket_path(r->bucket);
	if (l.max > 0)
		walk(&l, "", bucket_path);
	free(bucket_path);
	if (l.err) {
		xml_w_free(l.w);
		s3_filer_error(r, l.err, "listing the bucket");
		goto out;
	}
	xml_elem_bool(l.w, "IsTruncated", l.truncated);
	if (l.v2) {
		xml_elem_u64(l.w, "KeyCount", l.count);
		if (l.truncated && l.last) {
			char *t = token_encode(l.last);
			xml_elem(l.w, "NextContinuationToken", t);
			free(t);
		}
	} else if (l.truncated && l.last && l.delim) {
		elem_key(&l, "NextMarker", l.last); /* v1 gives it only with a delimiter */
	}
	s3_xml_ok(r, l.w);
out:
	free(l.after);
	free(l.last);
}
