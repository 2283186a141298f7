/*
 * ListObjectVersions (GET /bucket?versions): every version and delete marker
 * of the keys, in key order and newest first within a key.
 *
 * DESIGN: a key has a current version (the plain file) and/or older ones (the
 * files of .versions/<key>/, s3_version.c). The keys are those of two walks
 * (s3_walk_keys): the bucket's tree for current versions and the .versions
 * tree for keys with history, both from the key marker, merged by key. Each
 * walk gives at most max-keys + 2 items, enough for a page: every key but the
 * marker's has at least one version to show. A key's versions are its current
 * file, then its .versions directory in name order (newest first).
 */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "client/filer_meta.h"
#include "s3/s3_int.h"
#include "s3/s3_meta.h"
#include "util.h"

#define MAX_KEYS 1000

struct vlist {
	struct s3_req *r;
	xml_w *w;
	bool url;
	size_t max, count;
	bool truncated;
	char *next_key, *next_version; /* where the next page starts */
	const char *skip_through;      /* the key marker's versions up to this id are shown */
	wfs_err err;                   /* a filer error */
};

static void elem_key(struct vlist *l, const char *name, const char *v)
{
	s3_xml_key(l->w, l->url, name, v);
}

/* Counts one more result; false (and truncated) when the page is full. */
static bool take_slot(struct vlist *l, const char *key, const char *version)
{
	if (l->count == l->max) {
		l->truncated = true;
		return false;
	}
	l->count++;
	free(l->next_key);
	free(l->next_version);
	l->next_key = xstrdup(key);
	l->next_version = version ? xstrdup(version) : NULL;
	return true;
}

/* One version of key: false when the page is full. */
static bool emit_version(struct vlist *l, const char *key, const struct filer_entry *e, bool latest)
{
	char vid[S3_VERSION_ID_SIZE], when[32], etag[S3_ETAG_MAX];
	const char *who = l->r->who ? s3_identity_name(l->r->who) : "anonymous";
	bool marker = s3_is_delete_marker(e);

	s3_version_of(e, vid);
	if (l->skip_through) {
		if (!strcmp(vid, l->skip_through))
			l->skip_through = NULL; /* shown on an earlier page; from the next one on */
		return true;
	}
	if (!take_slot(l, key, vid))
		return false;
	s3_iso8601(e->attr.mtime_ns, when);
	xml_open(l->w, marker ? "DeleteMarker" : "Version");
	elem_key(l, "Key", key);
	xml_elem(l->w, "VersionId", vid);
	xml_elem_bool(l->w, "IsLatest", latest);
	xml_elem(l->w, "LastModified", when);
	if (!marker) {
		s3_etag(e, etag);
		xml_elem(l->w, "ETag", etag);
		s3_checksum_elems(l->w, e);
		xml_elem_u64(l->w, "Size", e->attr.size);
		xml_elem(l->w, "StorageClass", "STANDARD");
	}
	xml_open(l->w, "Owner");
	xml_elem(l->w, "ID", who);
	xml_elem(l->w, "DisplayName", who);
	xml_close(l->w);
	xml_close(l->w);
	return true;
}

/* The older versions of one key being written out. */
struct older {
	struct vlist *l;
	const char *key;
	bool latest; /* the next one is the latest version (the key has no current file) */
};

static bool older_entry(const struct filer_entry *e, void *arg)
{
	struct older *o = arg;
	if (!S_ISREG(e->attr.mode))
		return true; /* the directory of a longer key */
	if (!emit_version(o->l, o->key, e, o->latest))
		return false;
	o->latest = false;
	return true;
}

/* Every version of key, cur (may be NULL) first: false when the page filled up. */
static bool emit_key(struct vlist *l, const char *key, const struct filer_entry *cur)
{
	struct older o = {.l = l, .key = key, .latest = !cur};
	char *vdir;
	wfs_err rc;

	if (cur && !emit_version(l, key, cur, true))
		return false;
	vdir = s3_versions_dir(l->r->bucket, key);
	rc = filer_meta_each(l->r->g->filer, vdir, older_entry, &o);
	if (rc && rc != WFS_ENOENT && rc != WFS_ENOTDIR)
		l->err = rc;
	free(vdir);
	return !l->truncated && !l->err;
}

static bool emit_prefix(struct vlist *l, const char *cp)
{
	if (!take_slot(l, cp, NULL))
		return false;
	xml_open(l->w, "CommonPrefixes");
	elem_key(l, "Prefix", cp);
	xml_close(l->w);
	return true;
}

/* The current file of key (NULL: none). */
static struct filer_entry *current_of(struct vlist *l, const char *key)
{
	char *path = s3_object_path(l->r->bucket, key);
	struct filer_entry *e = NULL;
	if (path && s3_object_inside(l->r->g, &path, &e,
				     filer_meta_lookup(l->r->g->filer, path, &e)) == 0 &&
	    !S_ISREG(e->attr.mode)) {
		filer_entry_free(e);
		e = NULL;
	}
	free(path);
	return e;
}

/* Emits the items of both walks merged in key order, each key once. */
static void emit_merged(struct vlist *l, struct s3_walk_items *cur, struct s3_walk_items *old)
{
	size_t i = 0, j = 0;
	while ((i < cur->n || j < old->n) && !l->truncated && !l->err) {
		struct s3_walk_item *a = i < cur->n ? cur->v[i] : NULL;
		struct s3_walk_item *b = j < old->n ? old->v[j] : NULL;
		int c = !a ? 1 : !b ? -1 : strcmp(a->key, b->key);
		struct s3_walk_item *it = c <= 0 ? a : b;
		if (c == 0 && a->is_prefix != b->is_prefix)
			c = a->is_prefix ? 1 : -1, it = c < 0 ? a : b; /* cannot share a name */
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
		if (it->is_prefix)
			emit_prefix(l, it->key);
		else
			emit_key(l, it->key, c <= 0 ? a->e : NULL);
	}
	/* a walk that stopped early may hold more than the page showed */
	if (!l->truncated && ((cur->more && i == cur->n) || (old->more && j == old->n)))
		l->truncated = true;
}

void s3_list_versions(struct s3_req *r)
{
	struct vlist l = {.r = r};
	struct s3_walk_items cur = {0}, old = {0};
	const char *prefix = http_req_query(r->req, "prefix");
	const char *delim = http_req_query(r->req, "delimiter");
	const char *km = http_req_query(r->req, "key-marker");
	const char *vm = http_req_query(r->req, "version-id-marker");
	const char *v;
	char *root, *vroot;
	uint64_t max = MAX_KEYS;
	enum s3_versioning state;

	if (!prefix)
		prefix = "";
	if (delim && !*delim)
		delim = NULL;
	if (!km)
		km = "";
	if ((v = http_req_query(r->req, "max-keys")) && !parse_u64(v, &max)) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 "Provided max-keys not an integer or within integer range");
		return;
	}
	if ((v = http_req_query(r->req, "encoding-type"))) {
		if (strcmp(v, "url")) {
			s3_error(r, S3_INVALID_ARGUMENT,
				 "Invalid Encoding Method specified in Request");
			return;
		}
		l.url = true;
	}
	if (vm && (!*km || !s3_version_id_ok(vm))) {
		s3_error(r, S3_INVALID_ARGUMENT,
			 !*km ? "A version-id marker cannot be specified without a key marker."
			      : "Invalid version id specified");
		return;
	}
	if (!s3_versioning_of(r, &state))
		return;
	l.max = max > MAX_KEYS ? MAX_KEYS : (size_t)max;
	l.w = xml_w_new(&r->body);
	xml_open_s3(l.w, "ListVersionsResult");
	xml_elem(l.w, "Name", r->bucket);
	elem_key(&l, "Prefix", prefix);
	elem_key(&l, "KeyMarker", km);
	xml_elem(l.w, "VersionIdMarker", vm ? vm : "");
	xml_elem_u64(l.w, "MaxKeys", l.max);
	if (delim)
		elem_key(&l, "Delimiter", delim);
	if (l.url)
		xml_elem(l.w, "EncodingType", "url");

	if (vm && !strncmp(km, prefix, strlen(prefix))) {
		/* the rest of the marker key's versions first */
		struct filer_entry *e = current_of(&l, km);
		l.skip_through = vm;
		emit_key(&l, km, e);
		l.skip_through = NULL;
		filer_entry_free(e);
	}
	root = s3_bucket_path(r->bucket);
	vroot = xasprintf("%s/" S3_VERSIONS_NAME, root);
	if (!l.truncated && !l.err && l.max > 0) {
		l.err = s3_walk_keys(r, root, false, prefix, delim, km, l.max + 2, &cur);
		if (!l.err)
			l.err = s3_walk_keys(r, vroot, true, prefix, delim, km, l.max + 2, &old);
		if (!l.err)
			emit_merged(&l, &cur, &old);
	}
	s3_walk_items_free(&cur);
	s3_walk_items_free(&old);
	free(root);
	free(vroot);
	if (l.err) {
		xml_w_free(l.w);
		s3_filer_error(r, l.err, "listing the versions");
	} else {
		xml_elem_bool(l.w, "IsTruncated", l.truncated);
		if (l.truncated && l.next_key) {
			elem_key(&l, "NextKeyMarker", l.next_key);
			if (l.next_version)
				xml_elem(l.w, "NextVersionIdMarker", l.next_version);
		}
		s3_xml_ok(r, l.w);
	}
	free(l.next_key);
	free(l.next_version);
}
