/* The catalogs' storage model on the filer: see table_store.h. */
#include "config.h"
#include "catalog/table_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include "client/filer_meta.h"
#include "lib/buf.h"
#include "lib/json.h"
#include "lib/util.h"

/* ---- names ---- */

static bool alnum_lower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* 1..max chars of [a-z0-9] and extra, a letter or digit at both ends. */
static bool valid_chars(const char *s, size_t min, size_t max, char extra, const char *what,
			char why[TS_WHY_MAX])
{
	size_t n = s ? strlen(s) : 0;
	if (n < min || n > max) {
		snprintf(why, TS_WHY_MAX, "%s must be %zu to %zu characters", what, min, max);
		return false;
	}
	for (size_t i = 0; i < n; i++)
		if (!alnum_lower(s[i]) && s[i] != extra) {
			snprintf(why, TS_WHY_MAX,
				 "%s may hold only lowercase letters, digits and '%c'", what, extra);
			return false;
		}
	if (!alnum_lower(s[0]) || !alnum_lower(s[n - 1])) {
		snprintf(why, TS_WHY_MAX, "%s must begin and end with a letter or digit", what);
		return false;
	}
	return true;
}

static bool has_prefix(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

static bool has_suffix(const char *s, const char *x)
{
	size_t n = strlen(s), m = strlen(x);
	return n >= m && !strcmp(s + n - m, x);
}

bool ts_valid_bucket_name(const char *s, char why[TS_WHY_MAX])
{
	static const char *const prefixes[] = {"xn--", "sthree-", "amzn-s3-demo-", NULL};
	static const char *const suffixes[] = {"-s3alias", "--ol-s3", "--x-s3", "--table-s3", NULL};
	if (!valid_chars(s, 3, 63, '-', "a table bucket name", why))
		return false;
	for (size_t i = 0; prefixes[i]; i++)
		if (has_prefix(s, prefixes[i])) {
			snprintf(why, TS_WHY_MAX, "a table bucket name must not begin with %s",
				 prefixes[i]);
			return false;
		}
	for (size_t i = 0; suffixes[i]; i++)
		if (has_suffix(s, suffixes[i])) {
			snprintf(why, TS_WHY_MAX, "a table bucket name must not end with %s",
				 suffixes[i]);
			return false;
		}
	return true;
}

bool ts_valid_namespace_name(const char *s, char why[TS_WHY_MAX])
{
	if (!valid_chars(s, 1, 255, '_', "a namespace name", why))
		return false;
	if (has_prefix(s, "aws")) {
		snprintf(why, TS_WHY_MAX, "a namespace name must not begin with \"aws\"");
		return false;
	}
	return true;
}

bool ts_valid_table_name(const char *s, char why[TS_WHY_MAX])
{
	return valid_chars(s, 1, 255, '_', "a table name", why);
}

char *ts_namespace_dir(const char *const *levels, size_t n, char why[TS_WHY_MAX])
{
	buf b;

	if (n < 1 || n > TS_NS_LEVELS_MAX) {
		snprintf(why, TS_WHY_MAX, "a namespace has 1 to %d levels", TS_NS_LEVELS_MAX);
		return NULL;
	}
	buf_init(&b);
	for (size_t i = 0; i < n; i++) {
		if (!ts_valid_namespace_name(levels[i], why)) {
			buf_free(&b);
			return NULL;
		}
		buf_printf(&b, "%s%s", i ? "." : "", levels[i]);
	}
	if (b.len > 255) {
		snprintf(why, TS_WHY_MAX, "a namespace's levels together exceed 255 characters");
		buf_free(&b);
		return NULL;
	}
	return b.data;
}

/* ---- attribute JSON ---- */

static char *bucket_path(const char *b) { return xasprintf(TS_BUCKETS_DIR "/%s", b); }

static char *ns_path(const char *b, const char *ns)
{
	return xasprintf(TS_BUCKETS_DIR "/%s/%s", b, ns);
}

static char *table_path(const char *b, const char *ns, const char *t)
{
	return xasprintf(TS_BUCKETS_DIR "/%s/%s/%s", b, ns, t);
}

/* The ARN index and the storage of renamed tables (the block at the end). */
static void arn_index_set(filer_rpc *r, const char *arn, const char *bucket, const char *ns,
			  const char *name);
static void arn_index_drop(filer_rpc *r, const char *arn);
static bool is_storage_of(filer_rpc *r, const char *path, const char *arn);

static int64_t now_ms(void) { return (int64_t)(time_now_ns() / 1000000); }

static char *dup_str(yajl_val v, const char *key)
{
	const char *s;
	return json_get_str(v, key, &s) ? xstrdup(s) : NULL;
}

/* The attribute xname of e parsed, or NULL when absent or malformed. */
static yajl_val xattr_json(const struct filer_entry *e, const char *xname)
{
	const struct filer_xattr *x = filer_entry_xattr_get(e, xname);
	char msg[64];
	if (!x)
		return NULL;
	return json_parse((const char *)x->value, x->value_len, msg, sizeof(msg));
}

/* The entry at path and its attribute xname; WFS_ENOENT when either is missing. */
static wfs_err load(filer_rpc *r, const char *path, const char *xname, yajl_val *v,
		    char etag[17])
{
	struct filer_entry *e = NULL;
	wfs_err err = filer_meta_lookup_etag(r, path, &e, etag);
	if (err)
		return err;
	*v = S_ISDIR(e->attr.mode) ? xattr_json(e, xname) : NULL;
	filer_entry_free(e);
	return *v ? WFS_OK : WFS_ENOENT;
}

/*
 * Creates the directory path carrying the attribute xname = json[0..len),
 * exclusively; parents: its missing parents too (/buckets before the first).
 */
static wfs_err make_dir(filer_rpc *r, const char *path, const char *xname, const buf *json,
			bool parents)
{
	struct filer_xattr x = {(char *)xname, (uint8_t *)json->data, json->len};
	struct filer_meta_new n = {.mode = S_IFDIR | 0755, .exclusive = true, .parents = parents};
	if (xname) {
		n.xattrs = &x;
		n.n_xattrs = 1;
	}
	return filer_meta_create(r, path, &n, NULL);
}

/* WFS_ENOTEMPTY when dir has an entry. */
static wfs_err check_empty(filer_rpc *r, const char *dir)
{
	struct filer_meta_page p = {0};
	wfs_err err = filer_meta_list(r, dir, "", 1, &p);
	if (!err && p.n)
		err = WFS_ENOTEMPTY;
	filer_meta_page_free(&p);
	return err;
}

/* ---- table buckets ---- */

void ts_bucket_free(struct ts_bucket *b)
{
	free(b->name);
	free(b->arn);
	free(b->owner);
	free(b->format);
	memset(b, 0, sizeof(*b));
}

static void bucket_from(yajl_val v, const char *name, struct ts_bucket *out)
{
	out->name = xstrdup(name);
	out->arn = dup_str(v, "arn");
	out->owner = dup_str(v, "owner");
	out->format = dup_str(v, "format");
	json_get_i64(v, "createdAt", &out->created_ms);
}

wfs_err ts_bucket_create(filer_rpc *r, const char *name, const char *region, const char *owner,
			 const char *format, struct ts_bucket *out)
{
	char *path = bucket_path(name);
	int64_t now = now_ms();
	json_w *w;
	wfs_err err;
	buf b;

	buf_init(&b);
	w = jw_new(&b, false);
	jw_obj_begin(w);
	jw_key(w, "arn");
	{
		char *arn = xasprintf("arn:aws:s3tables:%s:%s:bucket/%s", region, owner, name);
		jw_str(w, arn);
		free(arn);
	}
	jw_kv_str(w, "owner", owner);
	jw_kv_i64(w, "createdAt", now);
	jw_kv_str(w, "format", format ? format : "ICEBERG");
	jw_obj_end(w);
	jw_free(w);
	err = make_dir(r, path, TS_XATTR_BUCKET, &b, true);
	if (!err && out) {
		char msg[64];
		yajl_val v = json_parse(b.data, b.len, msg, sizeof(msg));
		bucket_from(v, name, out);
		yajl_tree_free(v);
	}
	buf_free(&b);
	free(path);
	return err;
}

wfs_err ts_bucket_get(filer_rpc *r, const char *name, struct ts_bucket *out)
{
	char *path = bucket_path(name);
	yajl_val v = NULL;
	wfs_err err = load(r, path, TS_XATTR_BUCKET, &v, NULL);
	if (!err)
		bucket_from(v, name, out);
	yajl_tree_free(v);
	free(path);
	return err;
}

/*
 * Deletes the directory path (freed) marked with xname if it is empty, at the
 * etag it was checked at: an entry made in it meanwhile keeps it.
 */
static wfs_err delete_empty(filer_rpc *r, char *path, const char *xname)
{
	char etag[17];
	yajl_val v = NULL;
	wfs_err err = load(r, path, xname, &v, etag);
	yajl_tree_free(v);
	if (!err)
		err = check_empty(r, path);
	if (!err)
		err = filer_meta_delete_if(r, path, etag);
	free(path);
	return err;
}

wfs_err ts_bucket_delete(filer_rpc *r, const char *name)
{
	wfs_err err = delete_empty(r, bucket_path(name), TS_XATTR_BUCKET);
	if (!err) {
		char *index = xasprintf(TS_ARN_DIR "/%s", name);
		filer_meta_delete(r, index, true); /* its tables' ARNs, gone with them */
		free(index);
	}
	return err;
}

/* ---- namespaces ---- */

void ts_namespace_free(struct ts_namespace *ns)
{
	free(ns->dir);
	for (size_t i = 0; i < ns->n_levels; i++)
		free(ns->levels[i]);
	free(ns->created_by);
	free(ns->owner);
	memset(ns, 0, sizeof(*ns));
}

static void namespace_from(yajl_val v, const char *dir, struct ts_namespace *out)
{
	yajl_val levels = json_get(v, "levels");
	out->dir = xstrdup(dir);
	if (YAJL_IS_ARRAY(levels))
		for (size_t i = 0; i < levels->u.array.len && i < TS_NS_LEVELS_MAX; i++)
			if (YAJL_IS_STRING(levels->u.array.values[i]))
				out->levels[out->n_levels++] =
					xstrdup(levels->u.array.values[i]->u.string);
	out->created_by = dup_str(v, "createdBy");
	out->owner = dup_str(v, "ownerAccountId");
	json_get_i64(v, "createdAt", &out->created_ms);
}

wfs_err ts_namespace_create(filer_rpc *r, const char *bucket, const char *const *levels, size_t n,
			    const char *created_by, const char *owner, struct ts_namespace *out)
{
	char why[TS_WHY_MAX];
	char *dir = ts_namespace_dir(levels, n, why), *path;
	struct ts_bucket tb = {0};
	json_w *w;
	wfs_err err;
	buf b;

	if (!dir)
		return WFS_EINVAL;
	err = ts_bucket_get(r, bucket, &tb);
	ts_bucket_free(&tb);
	if (err) {
		free(dir);
		return err;
	}
	buf_init(&b);
	w = jw_new(&b, false);
	jw_obj_begin(w);
	jw_key(w, "levels");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++)
		jw_str(w, levels[i]);
	jw_arr_end(w);
	jw_kv_str(w, "createdBy", created_by);
	jw_kv_str(w, "ownerAccountId", owner);
	jw_kv_i64(w, "createdAt", now_ms());
	jw_obj_end(w);
	jw_free(w);
	path = ns_path(bucket, dir);
	err = make_dir(r, path, TS_XATTR_NAMESPACE, &b, false);
	if (!err && out) {
		char msg[64];
		yajl_val v = json_parse(b.data, b.len, msg, sizeof(msg));
		namespace_from(v, dir, out);
		yajl_tree_free(v);
	}
	buf_free(&b);
	free(path);
	free(dir);
	return err;
}

wfs_err ts_namespace_get(filer_rpc *r, const char *bucket, const char *ns,
			 struct ts_namespace *out)
{
	char *path = ns_path(bucket, ns);
	yajl_val v = NULL;
	wfs_err err = load(r, path, TS_XATTR_NAMESPACE, &v, NULL);
	if (!err)
		namespace_from(v, ns, out);
	yajl_tree_free(v);
	free(path);
	return err;
}

wfs_err ts_namespace_delete(filer_rpc *r, const char *bucket, const char *ns)
{
	return delete_empty(r, ns_path(bucket, ns), TS_XATTR_NAMESPACE);
}

/* ---- tables ---- */

void ts_table_free(struct ts_table *t)
{
	char **s[] = {&t->bucket,	     &t->ns,	    &t->name,	     &t->format,
		      &t->arn,		     &t->version_token, &t->metadata_location,
		      &t->warehouse,	     &t->created_by,	&t->modified_by, &t->owner};
	for (size_t i = 0; i < sizeof(s) / sizeof(*s); i++)
		free(*s[i]);
	memset(t, 0, sizeof(*t));
}

char *ts_table_json(const struct ts_table *t)
{
	json_w *w;
	buf b;

	buf_init(&b);
	w = jw_new(&b, false);
	jw_obj_begin(w);
	jw_kv_str(w, "format", t->format);
	jw_kv_str(w, "tableARN", t->arn);
	jw_kv_str(w, "versionToken", t->version_token);
	if (t->metadata_location)
		jw_kv_str(w, "metadataLocation", t->metadata_location);
	jw_kv_str(w, "warehouseLocation", t->warehouse);
	jw_kv_i64(w, "createdAt", t->created_ms);
	jw_kv_i64(w, "modifiedAt", t->modified_ms);
	jw_kv_str(w, "createdBy", t->created_by);
	jw_kv_str(w, "modifiedBy", t->modified_by);
	jw_kv_str(w, "ownerAccountId", t->owner);
	jw_obj_end(w);
	jw_free(w);
	buf_append_byte(&b, '\0');
	return b.data;
}

bool ts_table_from_json(const char *s, size_t len, struct ts_table *t)
{
	char msg[64];
	yajl_val v = json_parse(s, len, msg, sizeof(msg));
	if (!YAJL_IS_OBJECT(v)) {
		yajl_tree_free(v);
		return false;
	}
	t->format = dup_str(v, "format");
	t->arn = dup_str(v, "tableARN");
	t->version_token = dup_str(v, "versionToken");
	t->metadata_location = dup_str(v, "metadataLocation");
	t->warehouse = dup_str(v, "warehouseLocation");
	t->created_by = dup_str(v, "createdBy");
	t->modified_by = dup_str(v, "modifiedBy");
	t->owner = dup_str(v, "ownerAccountId");
	json_get_i64(v, "createdAt", &t->created_ms);
	json_get_i64(v, "modifiedAt", &t->modified_ms);
	yajl_tree_free(v);
	return t->version_token && t->arn && t->format;
}

/* A fresh version token: 128 random bits in hex. */
static char *new_token(void)
{
	uint8_t raw[16];
	char hex[33];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		uint64_t t = time_now_ns();
		memcpy(raw, &t, 8);
		memcpy(raw + 8, &t, 8);
	}
	hex_encode(raw, sizeof(raw), hex);
	hex[32] = '\0';
	return xstrdup(hex);
}

/*
 * The table at path with the etag of its entry, and the entry itself into
 * *keep (NULL: not kept); WFS_ENOENT when no table is there.
 */
static wfs_err table_load_entry(filer_rpc *r, const char *path, struct ts_table *t,
				char etag[17], struct filer_entry **keep)
{
	struct filer_entry *e = NULL;
	const struct filer_xattr *x;
	char seen[17];
	wfs_err err = filer_meta_lookup_etag(r, path, &e, seen);
	if (err)
		return err;
	x = S_ISDIR(e->attr.mode) ? filer_entry_xattr_get(e, TS_XATTR_TABLE) : NULL;
	if (!x || !ts_table_from_json((const char *)x->value, x->value_len, t))
		err = WFS_ENOENT;
	if (err || !keep)
		filer_entry_free(e);
	else
		*keep = e;
	if (err) {
		ts_table_free(t);
		return err;
	}
	memcpy(t->etag, seen, sizeof(seen));
	if (etag)
		memcpy(etag, seen, sizeof(seen));
	return WFS_OK;
}

static wfs_err table_load(filer_rpc *r, const char *path, struct ts_table *t, char etag[17])
{
	return table_load_entry(r, path, t, etag, NULL);
}

static void set_names(struct ts_table *t, const char *bucket, const char *ns, const char *name)
{
	t->bucket = xstrdup(bucket);
	t->ns = xstrdup(ns);
	t->name = xstrdup(name);
}

/*
 * A create found a directory at the table's path: it becomes the table (its
 * attribute set, exclusively against other creates) when it is no table and
 * holds no renamed table's files, the leftovers of a drop that kept them.
 */
static wfs_err adopt_dir(filer_rpc *r, const char *path, const buf *json)
{
	struct filer_entry *e = NULL;
	char etag[17];
	wfs_err err = filer_meta_lookup_etag(r, path, &e, etag);
	if (!err && (!S_ISDIR(e->attr.mode) || filer_entry_xattr_get(e, TS_XATTR_TABLE)))
		err = WFS_EEXIST;
	filer_entry_free(e);
	if (!err)
		err = filer_meta_set_xattr_if(r, path, TS_XATTR_TABLE, json->data, json->len,
					      FM_XATTR_CREATE, etag, NULL, NULL);
	return err == WFS_EPRECOND || err == WFS_ENOENT ? WFS_EEXIST : err;
}

wfs_err ts_table_create(filer_rpc *r, const char *region, const char *bucket, const char *ns,
			const char *name, const char *format, const char *created_by,
			const char *owner, struct ts_table *out)
{
	struct ts_namespace n = {0};
	struct ts_table t = {0};
	char *path, *sub, *json;
	wfs_err err = ts_namespace_get(r, bucket, ns, &n);
	buf b;

	ts_namespace_free(&n);
	if (err)
		return err;
	t.format = xstrdup(format ? format : "ICEBERG");
	t.version_token = new_token();
	/* the ARN names the table by a fresh id, as AWS's does: a rename keeps it */
	{
		char *id = new_token();
		t.arn = xasprintf("arn:aws:s3tables:%s:%s:bucket/%s/table/%s", region, owner,
				  bucket, id);
		free(id);
	}
	t.warehouse = xasprintf("s3://%s/%s/%s", bucket, ns, name);
	t.created_ms = t.modified_ms = now_ms();
	t.created_by = xstrdup(created_by);
	t.modified_by = xstrdup(created_by);
	t.owner = xstrdup(owner);
	json = ts_table_json(&t);
	buf_init(&b);
	buf_append_str(&b, json);
	free(json);
	path = table_path(bucket, ns, name);
	err = make_dir(r, path, TS_XATTR_TABLE, &b, false);
	if (err == WFS_EEXIST)
		err = adopt_dir(r, path, &b);
	buf_free(&b);
	for (int i = 0; !err && i < 2; i++) {
		bool lance = !strcmp(t.format, "LANCE");
		buf none = {0};
		sub = xasprintf("%s/%s", path, i ? "data" : lance ? "_versions" : "metadata");
		err = make_dir(r, sub, NULL, &none, false);
		if (err == WFS_EEXIST)
			err = WFS_OK;
		free(sub);
	}
	free(path);
	if (!err)
		arn_index_set(r, t.arn, bucket, ns, name);
	if (!err && out) {
		set_names(&t, bucket, ns, name);
		*out = t;
	} else {
		ts_table_free(&t);
	}
	return err;
}

wfs_err ts_table_get_entry(filer_rpc *r, const char *bucket, const char *ns, const char *name,
			   struct ts_table *out, struct filer_entry **entry)
{
	char *path = table_path(bucket, ns, name);
	wfs_err err = table_load_entry(r, path, out, NULL, entry);
	free(path);
	if (!err)
		set_names(out, bucket, ns, name);
	return err;
}

wfs_err ts_table_get(filer_rpc *r, const char *bucket, const char *ns, const char *name,
		     struct ts_table *out)
{
	return ts_table_get_entry(r, bucket, ns, name, out, NULL);
}

char *ts_location_dir(const char *location)
{
	char why[TS_WHY_MAX], *bucket;
	const char *p, *c;
	size_t n;
	bool ok;

	if (!location || strncmp(location, "s3://", 5))
		return NULL;
	p = location + 5;
	n = strlen(p);
	while (n && p[n - 1] == '/')
		n--; /* a directory may be named with its trailing '/' */
	bucket = xstrndup(p, strcspn(p, "/"));
	ok = ts_valid_bucket_name(bucket, why);
	for (c = p + strlen(bucket); ok && c < p + n; c += strcspn(c, "/")) {
		size_t len;
		c++; /* the '/' */
		len = strcspn(c, "/");
		if (c + len > p + n)
			len = (size_t)(p + n - c);
		ok = len > 0 && !(len == 1 && c[0] == '.') && !(len == 2 && !strncmp(c, "..", 2));
	}
	free(bucket);
	return ok ? xasprintf(TS_BUCKETS_DIR "/%.*s", (int)n, p) : NULL;
}

wfs_err ts_table_forget(filer_rpc *r, const char *bucket, const char *ns, const char *name,
			const char *expect)
{
	char *path = table_path(bucket, ns, name);
	struct ts_table t = {0};
	wfs_err err = table_load(r, path, &t, NULL);
	if (!err && expect && strcmp(t.version_token, expect))
		err = WFS_EPRECOND;
	ts_table_free(&t);
	if (!err)
		err = filer_meta_remove_xattr(r, path, TS_XATTR_TABLE);
	free(path);
	return err == WFS_ENODATA ? WFS_ENOENT : err;
}

/*
 * Rounds of the compare-and-swap: the entry's etag also moves when something
 * else about the directory changes (a file made in it), which is no conflict
 * while the version token still matches.
 */
#define CAS_ROUNDS 8

/*
 * The swap of ts_table_set_location; seen (NULL: none) spares the first
 * round its lookup.
 */
static wfs_err set_location(filer_rpc *r, const char *bucket, const char *ns, const char *name,
			    const char *expect, const struct ts_table *seen, const char *location,
			    const char *by, struct ts_table *out)
{
	char *path = table_path(bucket, ns, name);
	wfs_err err = WFS_EPRECOND;

	for (int round = 0; round < CAS_ROUNDS && err == WFS_EPRECOND; round++) {
		struct ts_table t = {0};
		char etag[17], *json;
		if (round == 0 && seen) {
			json = ts_table_json(seen); /* a deep copy */
			err = ts_table_from_json(json, strlen(json), &t) ? WFS_OK : WFS_EINVAL;
			free(json);
			memcpy(etag, seen->etag, sizeof(etag));
		} else {
			err = table_load(r, path, &t, etag);
		}
		if (err)
			break;
		if (strcmp(t.version_token, expect)) {
			ts_table_free(&t);
			err = WFS_EPRECOND;
			break;
		}
		free(t.version_token);
		free(t.metadata_location);
		free(t.modified_by);
		t.version_token = new_token();
		t.metadata_location = xstrdup(location);
		t.modified_by = xstrdup(by);
		t.modified_ms = now_ms();
		json = ts_table_json(&t);
		err = filer_meta_set_xattr_if(r, path, TS_XATTR_TABLE, json, strlen(json),
					      FM_XATTR_REPLACE, etag, NULL, NULL);
		free(json);
		if (!err && out) {
			set_names(&t, bucket, ns, name);
			t.etag[0] = '\0'; /* the swap moved the entry's etag on */
			*out = t;
		} else {
			ts_table_free(&t);
		}
	}
	free(path);
	return err;
}

wfs_err ts_table_set_location(filer_rpc *r, const char *bucket, const char *ns, const char *name,
			      const char *expect, const char *location, const char *by,
			      struct ts_table *out)
{
	return set_location(r, bucket, ns, name, expect, NULL, location, by, out);
}

wfs_err ts_table_advance(filer_rpc *r, const struct ts_table *seen, const char *location,
			 const char *by, struct ts_table *out)
{
	return set_location(r, seen->bucket, seen->ns, seen->name, seen->version_token, seen,
			    location, by, out);
}

wfs_err ts_tables_set_locations(filer_rpc *r, const char *bucket, const struct ts_swap *s,
				size_t n, const char *by, size_t *failed)
{
	struct filer_meta_xattr_op ops[TS_SWAP_MAX];
	char *paths[TS_SWAP_MAX], *json[TS_SWAP_MAX] = {0}, etags[TS_SWAP_MAX][17];
	wfs_err err = WFS_EPRECOND;
	size_t at = SIZE_MAX;

	if (!n || n > TS_SWAP_MAX)
		return WFS_EINVAL;
	for (size_t i = 0; i < n; i++)
		paths[i] = table_path(bucket, s[i].ns, s[i].name);
	for (int round = 0; round < CAS_ROUNDS && err == WFS_EPRECOND; round++) {
		err = WFS_OK;
		for (size_t i = 0; i < n && !err; i++) {
			struct ts_table t = {0};
			err = table_load(r, paths[i], &t, etags[i]);
			if (!err && strcmp(t.version_token, s[i].expect))
				err = WFS_EPRECOND;
			if (err) {
				at = i;
				ts_table_free(&t);
				break;
			}
			free(t.version_token);
			free(t.metadata_location);
			free(t.modified_by);
			t.version_token = new_token();
			t.metadata_location = xstrdup(s[i].location);
			t.modified_by = xstrdup(by);
			t.modified_ms = now_ms();
			free(json[i]);
			json[i] = ts_table_json(&t);
			ops[i] = (struct filer_meta_xattr_op){paths[i], TS_XATTR_TABLE, json[i],
							      strlen(json[i]), FM_XATTR_REPLACE, etags[i]};
			ts_table_free(&t);
		}
		if (err)
			break; /* a token moved on, or a table is gone: no retry helps */
		/* a lost race on an etag is retried: the tokens decide on the next round */
		err = filer_meta_set_xattrs_if(r, ops, n, NULL, NULL);
	}
	for (size_t i = 0; i < n; i++) {
		free(paths[i]);
		free(json[i]);
	}
	if (failed)
		*failed = at;
	return err;
}

wfs_err ts_table_delete(filer_rpc *r, const char *bucket, const char *ns, const char *name,
			const char *expect)
{
	char *path = table_path(bucket, ns, name);
	struct ts_table t = {0};
	char etag[17];
	wfs_err err = table_load(r, path, &t, etag);
	char *storage = err ? NULL : ts_location_dir(t.warehouse);
	if (!err && expect && strcmp(t.version_token, expect))
		err = WFS_EPRECOND;
	if (!err)
		err = filer_meta_delete(r, path, true);
	/* a renamed table's files are in its storage directory */
	if (!err && storage && strcmp(storage, path) && is_storage_of(r, storage, t.arn))
		err = filer_meta_delete(r, storage, true);
	if (!err)
		arn_index_drop(r, t.arn);
	ts_table_free(&t);
	free(storage);
	free(path);
	return err;
}

/* ---- table ARNs and renames ---- */

#define STORAGE_MARK "{\"storageOf\":"

bool ts_is_storage(const struct filer_xattr *x)
{
	size_t n = strlen(STORAGE_MARK);
	return x && x->value_len >= n && !memcmp(x->value, STORAGE_MARK, n);
}

/* The table attribute of a directory holding the files of the renamed table arn. */
static char *storage_mark(const char *arn) { return xasprintf(STORAGE_MARK "\"%s\"}", arn); }

char *ts_table_path(const char *bucket, const char *ns, const char *name)
{
	return table_path(bucket, ns, name);
}

bool ts_table_arn_parse(const char *arn, char **bucket, char **id)
{
	const char *b = arn ? strstr(arn, ":bucket/") : NULL, *t;
	char why[TS_WHY_MAX];
	size_t n;

	if (!b || strncmp(arn, "arn:aws:s3tables:", 17) || !(t = strstr(b, "/table/")))
		return false;
	b += strlen(":bucket/");
	t += strlen("/table/");
	n = strlen(t);
	if (n < 1 || n > 255 || strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					  "0123456789-_") != n)
		return false;
	*bucket = xstrndup(b, (size_t)(t - strlen("/table/") - b));
	if (!ts_valid_bucket_name(*bucket, why)) {
		free(*bucket);
		*bucket = NULL;
		return false;
	}
	*id = xstrdup(t);
	return true;
}

static char *arn_index_path(const char *bucket, const char *id)
{
	return xasprintf(TS_ARN_DIR "/%s/%s", bucket, id);
}

/*
 * Records that the table arn is bucket/ns/name. Best effort: a missing or
 * stale record only costs ts_table_by_arn a scan, which rewrites it.
 */
static void arn_index_set(filer_rpc *r, const char *arn, const char *bucket, const char *ns,
			  const char *name)
{
	char *b = NULL, *id = NULL, *path, *where;
	buf v;

	if (!ts_table_arn_parse(arn, &b, &id))
		return;
	path = arn_index_path(bucket, id);
	where = xasprintf("%s/%s", ns, name);
	buf_init(&v);
	buf_append_str(&v, where);
	if (make_dir(r, path, TS_XATTR_ARN, &v, true) == WFS_EEXIST)
		filer_meta_set_xattr(r, path, TS_XATTR_ARN, where, strlen(where), FM_XATTR_ANY);
	buf_free(&v);
	free(where);
	free(path);
	free(b);
	free(id);
}

static void arn_index_drop(filer_rpc *r, const char *arn)
{
	char *b = NULL, *id = NULL, *path;
	if (!ts_table_arn_parse(arn, &b, &id))
		return;
	path = arn_index_path(b, id);
	filer_meta_delete(r, path, false);
	free(path);
	free(b);
	free(id);
}

/* The table at bucket/ns/name if it has the ARN arn. */
static wfs_err table_with_arn(filer_rpc *r, const char *bucket, const char *ns, const char *name,
			      const char *arn, struct ts_table *out)
{
	wfs_err err = ts_table_get(r, bucket, ns, name, out);
	if (!err && strcmp(out->arn, arn)) {
		ts_table_free(out);
		err = WFS_ENOENT;
	}
	return err;
}

struct arn_scan {
	filer_rpc *r;
	const char *bucket, *ns, *arn;
	char *found_ns, *found_name;
};

static bool scan_table(const struct filer_entry *e, void *arg)
{
	struct arn_scan *s = arg;
	const struct filer_xattr *x = filer_entry_xattr_get(e, TS_XATTR_TABLE);
	struct ts_table t = {0};
	if (!S_ISDIR(e->attr.mode) || !x || ts_is_storage(x))
		return true;
	if (ts_table_from_json((const char *)x->value, x->value_len, &t) && !strcmp(t.arn, s->arn)) {
		s->found_ns = xstrdup(s->ns);
		s->found_name = xstrdup(e->name);
	}
	ts_table_free(&t);
	return !s->found_name;
}

static bool scan_namespace(const struct filer_entry *e, void *arg)
{
	struct arn_scan *s = arg;
	char *dir;
	if (!S_ISDIR(e->attr.mode) || !filer_entry_xattr_get(e, TS_XATTR_NAMESPACE))
		return true;
	dir = ns_path(s->bucket, e->name);
	s->ns = e->name;
	filer_meta_each(s->r, dir, scan_table, s);
	free(dir);
	return !s->found_name;
}

wfs_err ts_table_by_arn(filer_rpc *r, const char *arn, struct ts_table *out)
{
	struct arn_scan s = {.r = r, .arn = arn};
	struct filer_entry *e = NULL;
	char *bucket = NULL, *id = NULL, *path, *dir;
	wfs_err err;

	if (!ts_table_arn_parse(arn, &bucket, &id))
		return WFS_EINVAL;
	path = arn_index_path(bucket, id);
	err = filer_meta_lookup(r, path, &e);
	free(path);
	free(id);
	if (!err) {
		const struct filer_xattr *x = filer_entry_xattr_get(e, TS_XATTR_ARN);
		char *where = x ? xstrndup((const char *)x->value, x->value_len) : NULL;
		char *slash = where ? strchr(where, '/') : NULL;
		err = WFS_ENOENT;
		if (slash) {
			*slash = '\0';
			err = table_with_arn(r, bucket, where, slash + 1, arn, out);
		}
		free(where);
		filer_entry_free(e);
	}
	if (err == WFS_ENOENT) {
		s.bucket = bucket;
		dir = bucket_path(bucket);
		err = filer_meta_each(r, dir, scan_namespace, &s);
		free(dir);
		if (!err && !s.found_name)
			err = WFS_ENOENT;
		if (!err)
			err = table_with_arn(r, bucket, s.found_ns, s.found_name, arn, out);
		if (!err)
			arn_index_set(r, arn, bucket, s.found_ns, s.found_name);
		free(s.found_ns);
		free(s.found_name);
	}
	free(bucket);
	return err;
}

/* The filer directory of an s3://<bucket>/<key> location (caller frees), or NULL. */
/*
 * The catalog attributes of e (all TS_XATTR_PREFIX ones but the ARN
 * index's), borrowed from e into xs (of e->n_xattrs); their number.
 */
static size_t catalog_xattrs(const struct filer_entry *e, struct filer_xattr *xs)
{
	size_t n = 0;
	for (size_t i = 0; i < e->n_xattrs; i++)
		if (has_prefix(e->xattrs[i].name, TS_XATTR_PREFIX) &&
		    strcmp(e->xattrs[i].name, TS_XATTR_ARN))
			xs[n++] = e->xattrs[i];
	return n;
}

/* Removes the catalog attributes of e but the table's from path (best effort). */
static void drop_catalog_xattrs(filer_rpc *r, const char *path, const struct filer_entry *e)
{
	for (size_t i = 0; i < e->n_xattrs; i++)
		if (has_prefix(e->xattrs[i].name, TS_XATTR_PREFIX) &&
		    strcmp(e->xattrs[i].name, TS_XATTR_TABLE))
			filer_meta_remove_xattr(r, path, e->xattrs[i].name);
}

/*
 * The first rename of a table whose directory from holds its files: a new
 * entry directory to with the table's attributes, then, at the etag they
 * were read at, from's table attribute becomes the storage mark. A change of
 * from in between (a commit) undoes the new entry: WFS_EPRECOND, to retry.
 */
static wfs_err split_entry(filer_rpc *r, const char *from, const char *to,
			   const struct filer_entry *e, const char *etag, const char *arn)
{
	struct filer_xattr *xs = xcalloc(e->n_xattrs ? e->n_xattrs : 1, sizeof(*xs));
	struct filer_meta_new n = {.mode = S_IFDIR | 0755, .exclusive = true};
	char *mark = storage_mark(arn);
	wfs_err err;

	n.xattrs = xs;
	n.n_xattrs = catalog_xattrs(e, xs);
	err = filer_meta_create(r, to, &n, NULL);
	if (!err) {
		err = filer_meta_set_xattr_if(r, from, TS_XATTR_TABLE, mark, strlen(mark),
					      FM_XATTR_REPLACE, etag, NULL, NULL);
		if (err)
			filer_meta_delete(r, to, false);
		else
			drop_catalog_xattrs(r, from, e);
	}
	free(mark);
	free(xs);
	return err;
}

/*
 * A rename of the entry from back onto its storage directory to: the other
 * attributes go back first; then from's table attribute becomes a storage
 * mark at from_etag (commits are refused from then on: none is lost), to's
 * becomes the table's (from then on to is the table), and the entry goes.
 */
static wfs_err join_entry(filer_rpc *r, const char *from, const char *to,
			  const struct filer_entry *e, const char *from_etag, const char *arn)
{
	const struct filer_xattr *t = filer_entry_xattr_get(e, TS_XATTR_TABLE);
	char *mark = storage_mark(arn), etag[17];
	wfs_err err = filer_meta_lookup_etag(r, to, NULL, etag);

	for (size_t i = 0; !err && i < e->n_xattrs; i++) {
		const struct filer_xattr *x = &e->xattrs[i];
		if (has_prefix(x->name, TS_XATTR_PREFIX) && x != t)
			err = filer_meta_set_xattr_if(r, to, x->name, x->value, x->value_len,
						      FM_XATTR_ANY, etag, NULL, etag);
	}
	if (!err)
		err = filer_meta_set_xattr_if(r, from, TS_XATTR_TABLE, mark, strlen(mark),
					      FM_XATTR_REPLACE, from_etag, NULL, NULL);
	if (!err) {
		err = filer_meta_set_xattr_if(r, to, TS_XATTR_TABLE, t->value, t->value_len,
					      FM_XATTR_REPLACE, etag, NULL, NULL);
		if (err) /* from is the table again */
			filer_meta_set_xattr(r, from, TS_XATTR_TABLE, t->value, t->value_len,
					     FM_XATTR_REPLACE);
		else if (filer_meta_delete(r, from, false)) /* holding files: a plain directory */
			drop_catalog_xattrs(r, from, e);
	}
	free(mark);
	return err;
}

/* Whether the directory path is the storage of the table arn. */
static bool is_storage_of(filer_rpc *r, const char *path, const char *arn)
{
	struct filer_entry *e = NULL;
	const struct filer_xattr *x;
	char *want;
	bool yes;

	if (filer_meta_lookup(r, path, &e))
		return false;
	x = filer_entry_xattr_get(e, TS_XATTR_TABLE);
	want = storage_mark(arn);
	yes = ts_is_storage(x) && x->value_len == strlen(want) && !memcmp(x->value, want,
									  x->value_len);
	free(want);
	filer_entry_free(e);
	return yes;
}

wfs_err ts_table_rename(filer_rpc *r, const char *bucket, const char *ns, const char *name,
			const char *to_ns, const char *to_name, const char *expect)
{
	char *from = table_path(bucket, ns, name), *to = table_path(bucket, to_ns, to_name);
	wfs_err err = WFS_EPRECOND;

	for (int round = 0; round < CAS_ROUNDS && err == WFS_EPRECOND; round++) {
		struct filer_entry *e = NULL;
		struct ts_table t = {0};
		char etag[17];
		const struct filer_xattr *x;

		err = filer_meta_lookup_etag(r, from, &e, etag);
		x = err ? NULL : filer_entry_xattr_get(e, TS_XATTR_TABLE);
		if (!err && (!S_ISDIR(e->attr.mode) || !x ||
			     !ts_table_from_json((const char *)x->value, x->value_len, &t)))
			err = WFS_ENOENT;
		if (!err && expect && strcmp(t.version_token, expect)) {
			filer_entry_free(e);
			ts_table_free(&t);
			err = WFS_EPRECOND;
			break;
		}
		if (!err) {
			char *storage = ts_location_dir(t.warehouse);
			if (!strcmp(from, to))
				err = WFS_EEXIST;
			else if (storage && !strcmp(storage, from))
				err = split_entry(r, from, to, e, etag, t.arn);
			else if (storage && !strcmp(storage, to) && is_storage_of(r, to, t.arn))
				err = join_entry(r, from, to, e, etag, t.arn);
			else /* the entry alone; its files are elsewhere */
				err = filer_meta_rename(r, from, to, true, false);
			free(storage);
		}
		if (!err)
			arn_index_set(r, t.arn, bucket, to_ns, to_name);
		ts_table_free(&t);
		filer_entry_free(e);
	}
	free(from);
	free(to);
	return err;
}
