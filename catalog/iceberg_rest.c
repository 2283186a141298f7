/* The Iceberg REST catalog: see iceberg_rest.h and docs/catalog.md. */
#include "config.h"
#include "catalog/iceberg_rest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "catalog/iceberg_meta.h"
#include "catalog/iceberg_view_meta.h"
#include "catalog/table_store.h"
#include "client/filer_meta.h"
#include "lib/http_util.h"
#include "lib/jtree.h"
#include "lib/json.h"
#include "lib/util.h"

#define SEGS_MAX     8
#define PAGE_MAX     1000 /* the largest pageSize */
#define NS_SEP       '\x1f'
#define COMMIT_TRIES 8 /* rounds of a commit that lost the pointer's race */
#define ERR_MAX      512

/*
 * What a catalog entry is: an Iceberg table or an Iceberg view. Both are
 * table entries of the storage model (one name space, as Iceberg wants),
 * told apart by their format.
 */
struct kind {
	const char *format;  /* ts_table.format */
	const char *missing; /* the exception type of a missing one */
	const char *what;
	char *(*file_name)(const jt *meta, int version, const char *uuid);
	void (*write)(const jt *meta, buf *out);
};
static const struct kind TABLE = {"ICEBERG", "NoSuchTableException", "table",
				  ice_meta_file_name, ice_meta_write};
static const struct kind VIEW = {"ICEBERG_VIEW", "NoSuchViewException", "view",
				 ice_view_file_name, ice_view_write};

/* One request being answered. */
struct call {
	const struct kind *kind; /* what the route is about */
	const struct ice_env *env;
	const struct ice_request *q;
	struct ice_answer *a;
	char *seg[SEGS_MAX]; /* the decoded path segments after /v1/ */
	size_t nseg;
	jt *body; /* the JSON body, NULL when empty */
	const char *bucket;
	char bucket_format[16]; /* its declared format ("" when undeclared) */
	/* the namespace of the path (seg[2]): its levels and directory */
	char *levels[TS_NS_LEVELS_MAX];
	size_t nlev;
	char *ns;
	bool vend; /* a load or create, whose answer carries vended credentials if asked */
};

/* ---- answers ---- */

static void fail(struct call *c, int code, const char *type, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void fail(struct call *c, int code, const char *type, const char *fmt, ...)
{
	char msg[ERR_MAX];
	va_list ap;
	json_w *w;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	buf_reset(&c->a->body);
	c->a->status = code;
	w = jw_new(&c->a->body, false);
	jw_obj_begin(w);
	jw_key(w, "error");
	jw_obj_begin(w);
	jw_kv_str(w, "message", msg);
	jw_kv_str(w, "type", type);
	jw_kv_i64(w, "code", code);
	jw_obj_end(w);
	jw_obj_end(w);
	jw_free(w);
}

static void bad(struct call *c, const char *why)
{
	fail(c, 400, "BadRequestException", "%s", why);
}

/* The answer to a filer error about what (a table, a namespace, ...). */
static void fail_err(struct call *c, wfs_err err, const char *missing_type, const char *what)
{
	switch (err) {
	case WFS_EINVAL:
		fail(c, 400, "BadRequestException", "%s: invalid request", what);
		break;
	case WFS_ENOENT:
	case WFS_ENOTDIR:
		fail(c, 404, missing_type, "%s does not exist", what);
		break;
	case WFS_EEXIST:
		fail(c, 409, "AlreadyExistsException", "%s already exists", what);
		break;
	case WFS_ENOTEMPTY:
		fail(c, 409, "NamespaceNotEmptyException", "%s is not empty", what);
		break;
	case WFS_EPRECOND:
		fail(c, 409, "CommitFailedException", "%s changed meanwhile; reload and retry", what);
		break;
	case WFS_EPERM:
	case WFS_EACCES:
		fail(c, 403, "ForbiddenException", "%s: access denied", what);
		break;
	case WFS_EUNAVAIL:
	case WFS_ETIMEDOUT:
		fail(c, 503, "ServiceUnavailableException", "%s: the filer is unavailable", what);
		break;
	default:
		fail(c, 500, "ServerErrorException", "%s: %s", what, wfs_strerror(err));
	}
}

/*
 * Whether the caller may do S3 Tables' action (Iceberg's routes map onto
 * them as S3 Tables' own Iceberg endpoint does) on c's bucket, namespace ns
 * and table; false answered (403 ForbiddenException).
 */
static bool may(struct call *c, const char *action, const char *ns, const char *table)
{
	char msg[512] = "";
	if (catalog_may(c->q->authz, action, c->bucket, ns, table, msg, sizeof(msg)))
		return true;
	fail(c, 403, "ForbiddenException", "%s", msg);
	return false;
}

/* The answer's JSON writer (status 200); the caller ends the object and frees it. */
static json_w *answer(struct call *c)
{
	json_w *w;
	c->a->status = 200;
	w = jw_new(&c->a->body, false);
	jw_obj_begin(w);
	return w;
}

static void done(json_w *w)
{
	jw_obj_end(w);
	jw_free(w);
}

static bool is(const struct call *c, const char *m) { return !strcmp(c->q->method, m); }

/* ---- request pieces ---- */

/* The query parameter name decoded (caller frees), or NULL; "" when malformed. */
static char *query(struct call *c, const char *name)
{
	return url_query_param(c->q->raw_query, name);
}

/* pageSize (1..PAGE_MAX, default PAGE_MAX); false (answered) when malformed. */
static bool page_size(struct call *c, size_t *out)
{
	char *s = query(c, "pageSize");
	uint64_t v = PAGE_MAX;
	bool ok = !s || (parse_u64(s, &v) && v >= 1 && v <= PAGE_MAX);
	free(s);
	if (!ok)
		fail(c, 400, "BadRequestException", "pageSize must be 1 to %d", PAGE_MAX);
	*out = (size_t)v;
	return ok;
}

/* Whether query parameter name is "true" (false when absent); answered when malformed. */
static bool query_bool(struct call *c, const char *name, bool *out, bool *ok)
{
	char *s = query(c, name);
	*out = false;
	*ok = !s || parse_bool(s, out);
	if (!*ok)
		fail(c, 400, "BadRequestException", "%s must be true or false", name);
	free(s);
	return *out;
}

static void free_levels(char **levels, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		free(levels[i]);
	*n = 0;
}

/* Parses the levels of a namespace given joined by 0x1F; false (answered) when invalid. */
static bool split_levels(struct call *c, const char *s, char **levels, size_t *n)
{
	char why[TS_WHY_MAX];
	*n = 0;
	for (const char *p = s;;) {
		size_t len = strcspn(p, "\x1f");
		char *level = xstrndup(p, len);
		if (*n == TS_NS_LEVELS_MAX) {
			free(level);
			free_levels(levels, n);
			fail(c, 400, "BadRequestException", "a namespace has at most %d levels",
			     TS_NS_LEVELS_MAX);
			return false;
		}
		levels[(*n)++] = level;
		if (!ts_valid_namespace_name(level, why)) {
			free_levels(levels, n);
			fail(c, 400, "BadRequestException", "invalid namespace level: %s", why);
			return false;
		}
		if (!p[len])
			return true;
		p += len + 1;
	}
}

/* Levels from a JSON array of strings; false (answered) when invalid. */
static bool json_levels(struct call *c, const jt *arr, char **levels, size_t *n)
{
	buf b;
	bool ok;
	*n = 0;
	if (!jt_is(arr, JT_ARR) || !jt_len(arr)) {
		bad(c, "a namespace is a non-empty array of strings");
		return false;
	}
	buf_init(&b);
	for (size_t i = 0; i < jt_len(arr); i++) {
		const char *s = jt_as_str(jt_at(arr, i));
		if (!s || strlen(s) != jt_at(arr, i)->slen || strchr(s, NS_SEP)) {
			buf_free(&b);
			bad(c, "a namespace level is a string without NUL or 0x1F");
			return false;
		}
		if (i)
			buf_append_byte(&b, NS_SEP);
		buf_append_str(&b, s);
	}
	buf_append_byte(&b, '\0');
	ok = split_levels(c, b.data, levels, n);
	buf_free(&b);
	return ok;
}

/* The directory name of levels (valid ones). */
static char *levels_dir(char *const *levels, size_t n)
{
	char why[TS_WHY_MAX];
	return ts_namespace_dir((const char *const *)levels, n, why);
}

static void write_levels(json_w *w, char *const *levels, size_t n)
{
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++)
		jw_str(w, levels[i]);
	jw_arr_end(w);
}

/* The levels of namespace directory dir (split at '.'), into levels. */
static size_t dir_levels(const char *dir, char **levels)
{
	size_t n = 0;
	for (const char *p = dir; n < TS_NS_LEVELS_MAX;) {
		size_t len = strcspn(p, ".");
		levels[n++] = xstrndup(p, len);
		if (!p[len])
			break;
		p += len + 1;
	}
	return n;
}

/* The path's namespace (seg[2]) into c; false (answered) when invalid. */
static bool path_namespace(struct call *c)
{
	if (!split_levels(c, c->seg[2], c->levels, &c->nlev))
		return false;
	c->ns = levels_dir(c->levels, c->nlev);
	return true;
}

static bool valid_table_name(struct call *c, const char *name)
{
	char why[TS_WHY_MAX];
	if (name && ts_valid_table_name(name, why))
		return true;
	fail(c, 400, "BadRequestException", "invalid table name: %s", name ? why : "missing");
	return false;
}

/* The table name of obj's "name" into *name; false (answered) when invalid. */
static bool json_table_name(struct call *c, const jt *obj, const char **name)
{
	const jt *v = jt_get(obj, "name");
	*name = jt_as_str(v);
	if (*name && strlen(*name) != v->slen) {
		/* a NUL would cut the name short: "a\u0000b" must not become "a" */
		bad(c, "invalid table name: it holds NUL");
		return false;
	}
	return valid_table_name(c, *name);
}

/* A table identifier {"namespace": [...], "name"} into levels, *dir and *name. */
static bool json_identifier(struct call *c, const jt *id, char **levels, size_t *n, char **dir,
			    const char **name)
{
	if (!jt_is(id, JT_OBJ)) {
		bad(c, "a table identifier is {\"namespace\": [...], \"name\": \"...\"}");
		return false;
	}
	if (!json_table_name(c, id, name) || !json_levels(c, jt_get(id, "namespace"), levels, n))
		return false;
	*dir = levels_dir(levels, *n);
	return true;
}

/* ---- storage ---- */

/* The table bucket of the prefix; false (answered) when there is none. */
static bool check_bucket(struct call *c)
{
	struct ts_bucket b = {0};
	char why[TS_WHY_MAX];
	wfs_err err;
	if (!ts_valid_bucket_name(c->bucket, why)) {
		fail(c, 400, "BadRequestException", "invalid warehouse (table bucket) %s", why);
		return false;
	}
	err = ts_bucket_get(c->env->rpc, c->bucket, &b);
	snprintf(c->bucket_format, sizeof(c->bucket_format), "%s", b.format ? b.format : "");
	ts_bucket_free(&b);
	if (err)
		fail_err(c, err, "NoSuchWarehouseException", "the table bucket");
	return !err;
}

/*
 * Whether c's bucket may hold Iceberg tables and views: an ICEBERG one, or
 * one older than declared formats; false (answered) in a LANCE one.
 */
static bool iceberg_bucket(struct call *c)
{
	if (!*c->bucket_format || !strcmp(c->bucket_format, "ICEBERG"))
		return true;
	fail(c, 400, "BadRequestException", "table bucket %s is a %s bucket: no Iceberg %ss",
	     c->bucket, c->bucket_format, c->kind->what);
	return false;
}

/* Whether the path's namespace exists; false (answered) when not. */
static bool check_namespace(struct call *c)
{
	struct ts_namespace n = {0};
	wfs_err err = ts_namespace_get(c->env->rpc, c->bucket, c->ns, &n);
	ts_namespace_free(&n);
	if (err)
		fail_err(c, err, "NoSuchNamespaceException", "the namespace");
	return !err;
}

/* A table's answer for a filer error: a missing table in a missing namespace says so. */
static void fail_table(struct call *c, wfs_err err, const char *ns)
{
	if (err == WFS_ENOENT) {
		struct ts_namespace n = {0};
		wfs_err e2 = ts_namespace_get(c->env->rpc, c->bucket, ns, &n);
		ts_namespace_free(&n);
		if (e2 == WFS_ENOENT)
			return fail(c, 404, "NoSuchNamespaceException", "namespace %s does not exist",
				    ns);
	}
	fail_err(c, err, "NoSuchTableException", "the table");
}

/* The answer to a filer error about the route's table or view. */
static void fail_entry(struct call *c, wfs_err err)
{
	fail_err(c, err, c->kind->missing, c->kind == &VIEW ? "the view" : "the table");
}

/* An Iceberg table's entry and its current metadata text; false (answered) when none. */
static bool load_table(struct call *c, const char *ns, const char *name, struct ts_table *t,
		       buf *text)
{
	wfs_err err = ts_table_get(c->env->rpc, c->bucket, ns, name, t);
	if (err) {
		/* NoSuchTable even when the namespace is missing too: Spark, reading
		   ns.t.snapshots, first tries table "snapshots" of namespace ns.t and
		   takes only that answer as "a metadata table, then" */
		fail_entry(c, err);
		return false;
	}
	if (strcmp(t->format, c->kind->format)) {
		fail(c, 404, c->kind->missing, "%s.%s is a %s entry, not an Iceberg %s", ns, name,
		     t->format, c->kind->what);
		return false;
	}
	if (!t->metadata_location) {
		fail(c, 404, c->kind->missing, "%s.%s has no Iceberg metadata yet", ns, name);
		return false;
	}
	if (!text)
		return true;
	err = tf_get(c->env->files, t->metadata_location, text);
	if (err)
		fail(c, 500, "ServerErrorException", "the metadata file %s cannot be read: %s",
		     t->metadata_location, wfs_strerror(err));
	return !err;
}

/* ---- config ---- */

static void kv_endpoints(json_w *w)
{
	static const char *const endpoints[] = {
		"GET /v1/{prefix}/namespaces",
		"POST /v1/{prefix}/namespaces",
		"GET /v1/{prefix}/namespaces/{namespace}",
		"HEAD /v1/{prefix}/namespaces/{namespace}",
		"DELETE /v1/{prefix}/namespaces/{namespace}",
		"POST /v1/{prefix}/namespaces/{namespace}/properties",
		"GET /v1/{prefix}/namespaces/{namespace}/tables",
		"POST /v1/{prefix}/namespaces/{namespace}/tables",
		"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
		"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
		"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
		"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
		"POST /v1/{prefix}/namespaces/{namespace}/register",
		"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
		"POST /v1/{prefix}/tables/rename",
		"POST /v1/{prefix}/transactions/commit",
		"GET /v1/{prefix}/namespaces/{namespace}/views",
		"POST /v1/{prefix}/namespaces/{namespace}/views",
		"GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
		"HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
		"POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
		"DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
		"POST /v1/{prefix}/views/rename",
	};
	jw_key(w, "endpoints");
	jw_arr_begin(w);
	for (size_t i = 0; i < sizeof(endpoints) / sizeof(*endpoints); i++)
		jw_str(w, endpoints[i]);
	jw_arr_end(w);
}

/* The table bucket a warehouse names: "b", "s3://b" or a table bucket ARN. */
static char *warehouse_bucket(const char *wh)
{
	const char *at = strstr(wh, ":bucket/");
	if (!strncmp(wh, "arn:", 4) && at)
		return xstrdup(at + 8);
	if (!strncmp(wh, "s3://", 5))
		wh += 5;
	return xstrndup(wh, strcspn(wh, "/"));
}

static void get_config(struct call *c)
{
	char *wh = query(c, "warehouse"), *bucket;
	json_w *w;

	if (!wh || !*wh) {
		free(wh);
		return bad(c, "give the table bucket as the warehouse (?warehouse=<bucket>)");
	}
	bucket = warehouse_bucket(wh);
	free(wh);
	c->bucket = bucket;
	if (check_bucket(c) && may(c, "GetTableBucket", NULL, NULL)) {
		w = answer(c);
		jw_key(w, "defaults");
		jw_obj_begin(w);
		if (c->env->s3_endpoint)
			jw_kv_str(w, "s3.endpoint", c->env->s3_endpoint);
		jw_kv_str(w, "s3.path-style-access", "true");
		jw_kv_str(w, "client.region", c->env->region);
		jw_kv_str(w, "s3.region", c->env->region);
		jw_obj_end(w);
		jw_key(w, "overrides");
		jw_obj_begin(w);
		jw_kv_str(w, "prefix", bucket);
		jw_obj_end(w);
		kv_endpoints(w);
		done(w);
	}
	c->bucket = NULL;
	free(bucket);
}

/* ---- namespaces ---- */

/* A namespace directory's properties (an object; empty when it has none). */
static jt *ns_properties(const struct filer_entry *e)
{
	const struct filer_xattr *x = filer_entry_xattr_get(e, TS_XATTR_PROPERTIES);
	char msg[64];
	jt *v = x ? jt_parse((const char *)x->value, x->value_len, msg, sizeof(msg)) : NULL;
	if (!jt_is(v, JT_OBJ)) {
		jt_free(v);
		v = jt_obj();
	}
	return v;
}

static char *ns_path(const char *bucket, const char *ns)
{
	return xasprintf(TS_BUCKETS_DIR "/%s/%s", bucket, ns);
}

/*
 * The namespaces directly under parent (the top without one), after the
 * pageToken (a directory name), as {"namespaces": [[...]], "next-page-token"}.
 */
static void list_namespaces(struct call *c)
{
	char *parent_s = query(c, "parent"), *token = query(c, "pageToken");
	char *levels[TS_NS_LEVELS_MAX], *parent = NULL, *prefix = NULL, *dir, *from, *last = NULL;
	size_t depth = 0, max, count = 0, k;
	bool more = true, cut = false, any_below = false;
	wfs_err err = WFS_OK;
	json_w *w;
	buf out;

	if (!page_size(c, &max))
		goto out;
	if (parent_s && *parent_s) {
		if (!split_levels(c, parent_s, levels, &depth))
			goto out;
		parent = levels_dir(levels, depth);
		prefix = xasprintf("%s.", parent);
		k = depth;
		free_levels(levels, &k);
	}
	dir = xasprintf(TS_BUCKETS_DIR "/%s", c->bucket);
	from = xstrdup(token ? token : "");
	buf_init(&out);
	w = jw_new(&out, false);
	jw_obj_begin(w);
	jw_key(w, "namespaces");
	jw_arr_begin(w);
	while (more && !cut && !err) {
		struct filer_meta_page p = {0};
		err = filer_meta_list_from(c->env->rpc, dir, from, false, prefix, PAGE_MAX, &p);
		more = !err && p.more && p.n;
		for (size_t i = 0; !err && i < p.n && !cut; i++) {
			const struct filer_entry *e = p.entries[i];
			free(from);
			from = xstrdup(e->name);
			if (!S_ISDIR(e->attr.mode) || !filer_entry_xattr_get(e, TS_XATTR_NAMESPACE))
				continue;
			any_below = true;
			k = dir_levels(e->name, levels);
			if (k == depth + 1 && count == max) {
				cut = true;
			} else if (k == depth + 1) {
				write_levels(w, levels, k);
				count++;
				free(last);
				last = xstrdup(e->name);
			}
			free_levels(levels, &k);
		}
		filer_meta_page_free(&p);
	}
	jw_arr_end(w);
	if (cut)
		jw_kv_str(w, "next-page-token", last);
	jw_obj_end(w);
	jw_free(w);
	if (err) {
		fail_err(c, err, "NoSuchNamespaceException", "the table bucket");
	} else if (parent && !any_below) {
		/* a parent with nothing below must at least exist itself */
		c->ns = xstrdup(parent);
		if (check_namespace(c))
			buf_append(&c->a->body, out.data, out.len), c->a->status = 200;
	} else {
		c->a->status = 200;
		buf_append(&c->a->body, out.data, out.len);
	}
	buf_free(&out);
	free(from);
	free(last);
	free(dir);
out:
	free(parent_s);
	free(token);
	free(parent);
	free(prefix);
}

static void namespace_json(json_w *w, char *const *levels, size_t n, const jt *props)
{
	jw_key(w, "namespace");
	write_levels(w, levels, n);
	jw_key(w, "properties");
	jt_write(props, w);
}

/* A properties object of string values; false (answered) when it is not one. */
static bool check_properties(struct call *c, const jt *props)
{
	if (props && !jt_is(props, JT_OBJ)) {
		bad(c, "properties must be an object of strings");
		return false;
	}
	for (size_t i = 0; i < jt_len(props); i++)
		if (!jt_is(jt_at(props, i), JT_STR)) {
			fail(c, 400, "BadRequestException", "property %s is not a string",
			     props->keys[i]);
			return false;
		}
	return true;
}

static void create_namespace(struct call *c)
{
	const jt *props = jt_get(c->body, "properties");
	char *levels[TS_NS_LEVELS_MAX];
	size_t n = 0;
	wfs_err err;

	if (!jt_is(c->body, JT_OBJ))
		return bad(c, "CreateNamespaceRequest is a JSON object");
	if (!json_levels(c, jt_get(c->body, "namespace"), levels, &n))
		return;
	if (!check_properties(c, props))
		goto out;
	err = ts_namespace_create(c->env->rpc, c->bucket, (const char *const *)levels, n,
				  c->q->caller, c->env->account, NULL);
	if (!err && jt_len(props)) {
		char *dir = levels_dir(levels, n), *path = ns_path(c->bucket, dir);
		buf b;
		buf_init(&b);
		jt_to_buf(props, &b, false);
		err = filer_meta_set_xattr(c->env->rpc, path, TS_XATTR_PROPERTIES, b.data, b.len,
					   FM_XATTR_CREATE);
		buf_free(&b);
		free(path);
		free(dir);
	}
	if (err) {
		fail_err(c, err, "NoSuchWarehouseException", "the namespace");
	} else {
		json_w *w = answer(c);
		jt *empty = jt_obj();
		namespace_json(w, levels, n, props ? props : empty);
		jt_free(empty);
		done(w);
	}
out:
	free_levels(levels, &n);
}

/* The namespace directory's entry and etag; false (answered) when it is no namespace. */
static bool ns_entry(struct call *c, struct filer_entry **e, char etag[17])
{
	char *path = ns_path(c->bucket, c->ns);
	wfs_err err = filer_meta_lookup_etag(c->env->rpc, path, e, etag);
	free(path);
	if (!err && (!S_ISDIR((*e)->attr.mode) || !filer_entry_xattr_get(*e, TS_XATTR_NAMESPACE)))
		err = WFS_ENOENT;
	if (err) {
		filer_entry_free(*e);
		*e = NULL;
		fail_err(c, err, "NoSuchNamespaceException", "the namespace");
	}
	return !err;
}

static void load_namespace(struct call *c)
{
	struct filer_entry *e = NULL;
	char etag[17];
	if (!ns_entry(c, &e, etag))
		return;
	if (is(c, "HEAD")) {
		c->a->status = 204;
	} else {
		json_w *w = answer(c);
		jt *props = ns_properties(e);
		namespace_json(w, c->levels, c->nlev, props);
		jt_free(props);
		done(w);
	}
	filer_entry_free(e);
}

/*
 * Whether a namespace below c's exists (its directory "<ns>.<level>..."):
 * the levels live side by side, so dropping a parent would orphan them.
 */
static wfs_err has_child_namespace(struct call *c, bool *yes)
{
	char *dir = xasprintf(TS_BUCKETS_DIR "/%s", c->bucket), *prefix = xasprintf("%s.", c->ns);
	char *from = xstrdup("");
	bool more = true;
	wfs_err err = WFS_OK;

	*yes = false;
	while (more && !*yes && !err) {
		struct filer_meta_page p = {0};
		err = filer_meta_list_from(c->env->rpc, dir, from, false, prefix, PAGE_MAX, &p);
		more = !err && p.more && p.n;
		for (size_t i = 0; !err && i < p.n && !*yes; i++) {
			const struct filer_entry *e = p.entries[i];
			*yes = S_ISDIR(e->attr.mode) && filer_entry_xattr_get(e, TS_XATTR_NAMESPACE);
			free(from);
			from = xstrdup(e->name);
		}
		filer_meta_page_free(&p);
	}
	free(from);
	free(prefix);
	free(dir);
	return err;
}

static void drop_namespace(struct call *c)
{
	bool below = false;
	wfs_err err = has_child_namespace(c, &below);
	if (!err && below)
		err = WFS_ENOTEMPTY;
	if (!err)
		err = ts_namespace_delete(c->env->rpc, c->bucket, c->ns);
	if (err)
		return fail_err(c, err, "NoSuchNamespaceException", "the namespace");
	c->a->status = 204;
}

/* Writes the names of props's keys that are (in) or are not (!in) in keys. */
static void key_list(json_w *w, const char *key, const jt *names, const jt *props, bool in)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t i = 0; i < jt_len(names); i++) {
		const char *k = jt_as_str(jt_at(names, i));
		if (!!jt_get(props, k) == in)
			jw_str(w, k);
	}
	jw_arr_end(w);
}

/* UpdateNamespaceProperties: {"removals", "updates"}, by compare-and-swap. */
static void update_properties(struct call *c)
{
	const jt *rm = jt_get(c->body, "removals"), *up = jt_get(c->body, "updates");
	char *path;
	wfs_err err = WFS_EPRECOND;

	if (!jt_is(c->body, JT_OBJ) || (rm && !jt_is(rm, JT_ARR)) || !check_properties(c, up))
		return c->a->status ? (void)0 : bad(c, "removals is an array, updates an object");
	for (size_t i = 0; i < jt_len(rm); i++) {
		const char *k = jt_as_str(jt_at(rm, i));
		if (!k)
			return bad(c, "removals must be strings");
		if (jt_get(up, k))
			return fail(c, 422, "UnprocessableEntityException",
				    "property %s is both updated and removed", k);
	}
	path = ns_path(c->bucket, c->ns);
	for (int round = 0; round < COMMIT_TRIES && err == WFS_EPRECOND; round++) {
		struct filer_entry *e = NULL;
		char etag[17];
		jt *props, *before;
		buf b;
		if (!ns_entry(c, &e, etag))
			goto out;
		props = ns_properties(e);
		filer_entry_free(e);
		before = jt_copy(props);
		for (size_t i = 0; i < jt_len(rm); i++)
			jt_remove(props, jt_as_str(jt_at(rm, i)));
		for (size_t i = 0; i < jt_len(up); i++)
			jt_set(props, up->keys[i], jt_copy(jt_at(up, i)));
		buf_init(&b);
		jt_to_buf(props, &b, false);
		err = filer_meta_set_xattr_if(c->env->rpc, path, TS_XATTR_PROPERTIES, b.data, b.len,
					      FM_XATTR_ANY, etag, NULL, NULL);
		buf_free(&b);
		jt_free(props);
		if (!err) {
			json_w *w = answer(c);
			jt *up_names = jt_arr();
			for (size_t i = 0; i < jt_len(up); i++)
				jt_append(up_names, jt_str(up->keys[i]));
			key_list(w, "updated", up_names, up, true);
			key_list(w, "removed", rm, before, true);
			key_list(w, "missing", rm, before, false);
			done(w);
			jt_free(up_names);
		}
		jt_free(before);
	}
	if (err)
		fail_err(c, err, "NoSuchNamespaceException", "the namespace");
out:
	free(path);
}

/* ---- tables ---- */

static void list_tables(struct call *c)
{
	char *token = query(c, "pageToken"), *dir, *from;
	size_t max, count = 0;
	bool more = true, cut = false;
	wfs_err err = WFS_OK;
	json_w *w;
	buf out;

	if (!page_size(c, &max) || !check_namespace(c)) {
		free(token);
		return;
	}
	buf_init(&out);
	dir = ns_path(c->bucket, c->ns);
	from = xstrdup(token ? token : "");
	w = jw_new(&out, false);
	jw_obj_begin(w);
	jw_key(w, "identifiers");
	jw_arr_begin(w);
	while (more && !cut) {
		struct filer_meta_page p = {0};
		err = filer_meta_list_from(c->env->rpc, dir, from, false, NULL, PAGE_MAX, &p);
		if (err)
			break;
		more = p.more && p.n;
		for (size_t i = 0; i < p.n && !cut; i++) {
			const struct filer_entry *e = p.entries[i];
			const struct filer_xattr *x = filer_entry_xattr_get(e, TS_XATTR_TABLE);
			struct ts_table t = {0};
			if (!S_ISDIR(e->attr.mode) || !x ||
			    !ts_table_from_json((const char *)x->value, x->value_len, &t) ||
			    strcmp(t.format, c->kind->format)) {
				ts_table_free(&t);
				continue;
			}
			ts_table_free(&t);
			if (count == max) {
				cut = true;
				break;
			}
			free(from);
			from = xstrdup(e->name);
			jw_obj_begin(w);
			jw_key(w, "namespace");
			write_levels(w, c->levels, c->nlev);
			jw_kv_str(w, "name", e->name);
			jw_obj_end(w);
			count++;
		}
		filer_meta_page_free(&p);
	}
	jw_arr_end(w);
	if (cut)
		jw_kv_str(w, "next-page-token", from);
	jw_obj_end(w);
	jw_free(w);
	if (err) {
		fail_err(c, err, "NoSuchNamespaceException", "the namespace");
	} else {
		c->a->status = 200;
		buf_append(&c->a->body, out.data, out.len);
	}
	buf_free(&out);
	free(from);
	free(dir);
	free(token);
}

/* The table's own location: s3://<bucket>/<ns>/<name>. */
static char *table_location(const struct call *c, const char *ns, const char *name)
{
	return xasprintf("s3://%s/%s/%s", c->bucket, ns, name);
}

/*
 * Whether the metadata stays inside the table's warehouse (where, a
 * directory location): its location and write.metadata.path, and so every
 * file the server writes for it. Answered when not.
 */
static bool inside_table(struct call *c, const jt *meta, const char *where)
{
	const char *loc = jt_get_str(meta, "location");
	const char *mdir = jt_get_str(jt_get(meta, "properties"), "write.metadata.path");
	char *dir;
	bool ok;
	if (!loc)
		return true;
	dir = xstrdup(loc);
	while (*dir && dir[strlen(dir) - 1] == '/')
		dir[strlen(dir) - 1] = '\0';
	ok = tf_location_under(dir, where) && (!mdir || tf_location_under(mdir, where));
	if (!ok)
		fail(c, 403, "ForbiddenException",
		     "a table's location and metadata path stay inside its directory %s", where);
	free(dir);
	return ok;
}

/* Whether c's answer carries vended credentials: a table's load or create that asked. */
static bool vending(const struct call *c) { return c->vend && c->q->vend && c->kind == &TABLE; }

/* Whether location is no table location to vend credentials for (answered). */
static bool vend_refused(struct call *c, const char *location)
{
	const char *key = location && !strncmp(location, "s3://", 5) ? location + 5 : NULL;
	if (key && strchr(key, '/') && strchr(key, '/')[1] && !strpbrk(key, "*?"))
		return false;
	fail(c, 400, "BadRequestException",
	     "no credentials are vended for the location %s: an s3:// location "
	     "without '*' or '?' is needed",
	     location ? location : "(none)");
	return true;
}

/*
 * The LoadTableResult's ",config": nothing beyond the catalog's defaults,
 * unless the client asked for vended credentials on a load or create (c->vend
 * and c->q->vend): then keys limited to the table's location, in "config" and
 * once more in "storage-credentials" under the location as prefix. A location
 * with '*' or '?' is refused, never widened into a pattern. false answered.
 */
static bool write_config(struct call *c, buf *b, const char *location)
{
	const char *key;
	char msg[256] = "", *bucket, *prefix;
	bool ok;
	json_w *w;
	buf cfg;

	if (!vending(c)) {
		buf_append_str(b, ",\"config\":{}");
		return true;
	}
	if (vend_refused(c, location))
		return false;
	key = location + 5;
	bucket = xstrndup(key, strcspn(key, "/"));
	prefix = xasprintf("%s/", key + strlen(bucket) + 1);
	while (strlen(prefix) > 1 && prefix[strlen(prefix) - 2] == '/')
		prefix[strlen(prefix) - 1] = '\0';
	buf_init(&cfg);
	w = jw_new(&cfg, false);
	jw_obj_begin(w);
	ok = c->q->vend->mint(c->q->vend->ctx, bucket, prefix, w, msg, sizeof(msg));
	if (c->env->s3_endpoint)
		jw_kv_str(w, "s3.endpoint", c->env->s3_endpoint);
	jw_kv_str(w, "s3.path-style-access", "true");
	jw_kv_str(w, "client.region", c->env->region);
	jw_obj_end(w);
	jw_free(w);
	if (!ok) {
		fail(c, 403, "ForbiddenException", "no credentials are vended for %s: %s", location,
		     msg);
	} else {
		buf_append_str(b, ",\"config\":");
		buf_append(b, cfg.data, cfg.len);
		buf_append_str(b, ",\"storage-credentials\":[{\"prefix\":");
		w = jw_new(b, false);
		jw_strn(w, location, strlen(location));
		jw_free(w);
		buf_append_str(b, ",\"config\":");
		buf_append(b, cfg.data, cfg.len);
		buf_append_str(b, "}]");
	}
	buf_free(&cfg);
	free(prefix);
	free(bucket);
	return ok;
}

/* Appends s as a JSON string. */
static void append_json_str(buf *b, const char *s)
{
	json_w *w = jw_new(b, false);
	jw_str(w, s);
	jw_free(w);
}

/*
 * Answers the LoadTableResult of metadata text (the file at location), the
 * text spliced in as it is stored; with refs_only, only the snapshots the
 * refs point at.
 */
static void load_result(struct call *c, const char *location, const char *text, size_t len,
			bool refs_only)
{
	buf *b = &c->a->body;
	char msg[64];
	jt *m = refs_only || vending(c) ? jt_parse(text, len, msg, sizeof(msg)) : NULL;

	c->a->status = 200;
	buf_append_str(b, "{\"metadata-location\":");
	append_json_str(b, location);
	buf_append_str(b, ",\"metadata\":");
	if (refs_only) {
		jt *snaps = jt_get(m, "snapshots");
		const jt *refs = jt_get(m, "refs");
		for (size_t i = jt_len(snaps); i-- > 0;) {
			const jt *id = jt_get(jt_at(snaps, i), "snapshot-id");
			bool referenced = false;
			for (size_t k = 0; k < jt_len(refs) && !referenced; k++)
				referenced = jt_equal(jt_get(jt_at(refs, k), "snapshot-id"), id);
			if (!referenced)
				jt_remove_at(snaps, i);
		}
		jt_to_buf(m, b, false);
	} else {
		buf_append(b, text, len);
	}
	if (write_config(c, b, jt_get_str(m, "location")))
		buf_append_byte(b, '}');
	jt_free(m);
}

static void load(struct call *c, const char *name)
{
	struct ts_table t = {0};
	char *snaps = query(c, "snapshots");
	buf text;

	buf_init(&text);
	c->vend = true;
	if (snaps && strcmp(snaps, "all") && strcmp(snaps, "refs"))
		bad(c, "snapshots must be all or refs");
	else if (load_table(c, c->ns, name, &t, is(c, "HEAD") ? NULL : &text)) {
		if (is(c, "HEAD"))
			c->a->status = 204;
		else
			load_result(c, t.metadata_location, text.data, text.len,
				    snaps && !strcmp(snaps, "refs"));
	}
	buf_free(&text);
	ts_table_free(&t);
	free(snaps);
}

/*
 * Writes meta as version `version` of the table under a fresh name; *file is
 * its location (caller frees). false (answered) on failure.
 */
static bool write_metadata(struct call *c, const jt *meta, int version, char **file)
{
	char uuid[37];
	wfs_err err;
	buf b;

	tf_uuid(uuid);
	*file = c->kind->file_name(meta, version, uuid);
	buf_init(&b);
	c->kind->write(meta, &b);
	err = tf_put(c->env->files, *file, b.data, b.len);
	buf_free(&b);
	if (err) {
		fail(c, err == WFS_EINVAL ? 400 : 503,
		     err == WFS_EINVAL ? "BadRequestException" : "ServiceUnavailableException",
		     "the metadata file %s cannot be written: %s", *file, wfs_strerror(err));
		free(*file);
		*file = NULL;
	}
	return !err;
}

/* The answer {"metadata-location", "metadata", "config"} for meta at file. */
static void meta_result(struct call *c, const jt *meta, const char *file)
{
	buf b;
	buf_init(&b);
	c->kind->write(meta, &b);
	load_result(c, file, b.data, b.len, false);
	buf_free(&b);
}

/*
 * What a pointer swap that failed with err (not WFS_EIO) did, read back. The
 * filer client repeats a conditional update whose answer was lost, so a swap
 * of ours that landed comes back as a lost race; and one it gave up on (the
 * filer unreachable, or holding the request) may still land while the pointer
 * is where it was. WFS_OK: the pointer is file. WFS_EPRECOND: it moved to
 * another, so ours never lands (a lost race). WFS_EIO: unknown, file must stay.
 * Otherwise err (the table is gone, ...).
 */
static wfs_err swap_outcome(struct call *c, const struct ts_table *seen, const char *file,
			    wfs_err err)
{
	struct ts_table now = {0};
	wfs_err e = ts_table_get(c->env->rpc, c->bucket, seen->ns, seen->name, &now);
	bool ours = !e && now.metadata_location && !strcmp(now.metadata_location, file);
	bool moved = !e && (!now.version_token || strcmp(now.version_token, seen->version_token));
	ts_table_free(&now);
	if (ours)
		return WFS_OK;
	if (e == WFS_ENOENT)
		return err;
	if (e)
		return WFS_EIO;
	if (moved)
		return WFS_EPRECOND;
	return err == WFS_EPRECOND ? err : WFS_EIO;
}

/*
 * Makes the table ns.name pointing at meta's first metadata file (version
 * `version`): the directory first (which a racing create loses), then the
 * file, then the pointer. false (answered) on failure, nothing left behind.
 */
static bool make_table(struct call *c, const char *ns, const char *name, const jt *meta,
		       int version)
{
	struct ts_table t = {0};
	char *file = NULL;
	wfs_err err;

	if (!iceberg_bucket(c))
		return false;
	err = ts_table_create(c->env->rpc, c->env->region, c->bucket, ns, name, c->kind->format,
			      c->q->caller, c->env->account, &t);
	if (err) {
		if (err == WFS_EEXIST)
			fail(c, 409, "AlreadyExistsException", "%s.%s already exists", ns, name);
		else
			fail_table(c, err, ns);
		return false;
	}
	if (write_metadata(c, meta, version, &file)) {
		err = ts_table_set_location(c->env->rpc, c->bucket, ns, name, t.version_token, file,
					    c->q->caller, NULL);
		if (err && err != WFS_EIO && swap_outcome(c, &t, file, err) == WFS_OK)
			err = WFS_OK; /* it landed: the filer's answer was lost */
		if (err) {
			fail_err(c, err, "NoSuchTableException", "the new table");
			tf_delete(c->env->files, file, false);
		}
	}
	if (!file || err) {
		ts_table_delete(c->env->rpc, c->bucket, ns, name, NULL);
	} else {
		meta_result(c, meta, file);
	}
	ts_table_free(&t);
	free(file);
	return file && !err;
}

static void create_table(struct call *c)
{
	const char *name, *loc;
	char uuid[37], msg[ERR_MAX], *own;
	bool stage = false;
	jt *meta = NULL;
	ice_rc rc;

	if (!jt_is(c->body, JT_OBJ))
		return bad(c, "CreateTableRequest is a JSON object");
	if (!json_table_name(c, c->body, &name) || !check_namespace(c))
		return;
	own = table_location(c, c->ns, name);
	loc = jt_get_str(c->body, "location");
	jt_as_bool(jt_get(c->body, "stage-create"), &stage);
	tf_uuid(uuid);
	rc = ice_meta_create(c->body, uuid, own, (int64_t)(time_now_ns() / 1000000), &meta, msg,
			     sizeof(msg));
	if (rc) {
		bad(c, msg);
	} else if (loc && !tf_location_under(loc, own)) {
		fail(c, 403, "ForbiddenException", "a table's location is its directory %s", own);
	} else if (c->q->vend && vend_refused(c, jt_get_str(meta, "location"))) {
		/* answered before anything is made: the location the credentials would be
		   for (the request's own, when it gives one) is checked, not only the default */
	} else if (inside_table(c, meta, own)) {
		c->vend = true;
		if (stage) {
			/* nothing is made: the commit with assert-create makes it */
			c->a->status = 200;
			buf_append_str(&c->a->body, "{\"metadata\":");
			jt_to_buf(meta, &c->a->body, false);
			if (write_config(c, &c->a->body, jt_get_str(meta, "location")))
				buf_append_byte(&c->a->body, '}');
		} else {
			make_table(c, c->ns, name, meta, 0);
		}
	}
	jt_free(meta);
	free(own);
}

static void drop_table(struct call *c, const char *name)
{
	struct ts_table t = {0};
	bool purge, ok;
	wfs_err err;

	query_bool(c, "purgeRequested", &purge, &ok);
	if (!ok || !load_table(c, c->ns, name, &t, NULL)) {
		ts_table_free(&t);
		return;
	}
	if (purge || c->kind == &VIEW) /* a view's files are only its metadata */
		err = ts_table_delete(c->env->rpc, c->bucket, c->ns, name, t.version_token);
	else
		err = ts_table_forget(c->env->rpc, c->bucket, c->ns, name, t.version_token);
	ts_table_free(&t);
	if (err)
		return fail_entry(c, err);
	c->a->status = 204;
}

/* RegisterTable: a table pointing at an existing metadata file of this bucket. */
static void register_table(struct call *c)
{
	const char *name, *file = jt_get_str(c->body, "metadata-location");
	char msg[ERR_MAX], *bucket_dir = NULL, *path;
	bool overwrite = false, in_bucket;
	jt *meta = NULL;

	c->vend = true;
	wfs_err err;
	buf text;

	if (!jt_is(c->body, JT_OBJ))
		return bad(c, "RegisterTableRequest is a JSON object");
	if (!json_table_name(c, c->body, &name) || !check_namespace(c))
		return;
	jt_as_bool(jt_get(c->body, "overwrite"), &overwrite);
	bucket_dir = xasprintf("s3://%s", c->bucket);
	buf_init(&text);
	path = file ? tf_location_path(file) : NULL; /* only whether it names a file */
	in_bucket = path && tf_location_under(file, bucket_dir);
	free(path);
	if (!in_bucket) {
		fail(c, 400, "BadRequestException",
		     "metadata-location must be a metadata file in s3://%s/", c->bucket);
		goto out;
	}
	err = tf_get(c->env->files, file, &text);
	if (err) {
		fail(c, err == WFS_ENOENT ? 404 : 500,
		     err == WFS_ENOENT ? "NotFoundException" : "ServerErrorException",
		     "the metadata file %s cannot be read: %s", file, wfs_strerror(err));
		goto out;
	}
	if (!(meta = ice_meta_parse(text.data, text.len, msg, sizeof(msg)))) {
		fail(c, 400, "BadRequestException", "%s is no table metadata: %s", file, msg);
		goto out;
	}
	if (c->q->vend && vend_refused(c, jt_get_str(meta, "location")))
		goto out; /* before the table is made: its answer could not carry them */
	err = WFS_EEXIST;
	for (int round = 0; round < COMMIT_TRIES && overwrite && err; round++) {
		struct ts_table t = {0};
		err = ts_table_get(c->env->rpc, c->bucket, c->ns, name, &t);
		if (!err)
			err = ts_table_set_location(c->env->rpc, c->bucket, c->ns, name,
						    t.version_token, file, c->q->caller, NULL);
		ts_table_free(&t);
		if (err == WFS_ENOENT)
			break;
	}
	if (!err) {
		load_result(c, file, text.data, text.len, false);
	} else if (overwrite && err != WFS_ENOENT) {
		fail_err(c, err, "NoSuchTableException", "the table");
	} else {
		struct ts_table t = {0};
		err = ts_table_create(c->env->rpc, c->env->region, c->bucket, c->ns, name,
				      "ICEBERG", c->q->caller, c->env->account, &t);
		if (!err)
			err = ts_table_set_location(c->env->rpc, c->bucket, c->ns, name,
						    t.version_token, file, c->q->caller, NULL);
		if (err && err != WFS_EIO && err != WFS_EEXIST && t.ns &&
		    swap_outcome(c, &t, file, err) == WFS_OK)
			err = WFS_OK; /* it landed: the filer's answer was lost */
		if (err == WFS_EEXIST)
			fail(c, 409, "AlreadyExistsException", "table %s.%s already exists", c->ns,
			     name);
		else if (err)
			fail_table(c, err, c->ns);
		else
			load_result(c, file, text.data, text.len, false);
		ts_table_free(&t);
	}
out:
	jt_free(meta);
	buf_free(&text);
	free(bucket_dir);
}

static void rename_table(struct call *c)
{
	char *from_lv[TS_NS_LEVELS_MAX], *to_lv[TS_NS_LEVELS_MAX], *from_ns = NULL, *to_ns = NULL;
	const char *from, *to;
	size_t nf = 0, nt = 0;
	struct ts_table t = {0};
	wfs_err err;

	if (!jt_is(c->body, JT_OBJ))
		return bad(c, "RenameTableRequest is a JSON object");
	if (!json_identifier(c, jt_get(c->body, "source"), from_lv, &nf, &from_ns, &from) ||
	    !json_identifier(c, jt_get(c->body, "destination"), to_lv, &nt, &to_ns, &to) ||
	    !may(c, "RenameTable", from_ns, from) || !may(c, "CreateTable", to_ns, NULL))
		goto out;
	if (load_table(c, from_ns, from, &t, NULL)) {
		struct ts_namespace dest = {0};
		err = ts_namespace_get(c->env->rpc, c->bucket, to_ns, &dest);
		ts_namespace_free(&dest);
		if (!err)
			err = ts_table_rename(c->env->rpc, c->bucket, from_ns, from, to_ns, to, NULL);
		if (err == WFS_EEXIST)
			fail(c, 409, "AlreadyExistsException", "table %s.%s already exists", to_ns,
			     to);
		else if (err == WFS_ENOENT)
			fail_table(c, err, to_ns);
		else if (err)
			fail_entry(c, err);
		else
			c->a->status = 204;
	}
out:
	ts_table_free(&t);
	free_levels(from_lv, &nf);
	free_levels(to_lv, &nt);
	free(from_ns);
	free(to_ns);
}

/* Whether a commit's requirements include assert-create. */
static bool asserts_create(const jt *body)
{
	const jt *reqs = jt_get(body, "requirements");
	for (size_t i = 0; i < jt_len(reqs); i++) {
		const char *type = jt_get_str(jt_at(reqs, i), "type");
		if (type && !strcmp(type, "assert-create"))
			return true;
	}
	return false;
}

/* The version number of the next metadata file after file (of meta). */
static int next_version(const char *file, const jt *meta)
{
	int v = ice_meta_file_version(file);
	return v >= 0 ? v + 1 : (int)jt_len(jt_get(meta, "metadata-log")) + 1;
}

static int64_t now_ms(void) { return (int64_t)(time_now_ns() / 1000000); }

/* Answers a failed ice_* call. */
static void fail_ice(struct call *c, ice_rc rc, const char *msg)
{
	if (rc == ICE_CONFLICT)
		fail(c, 409, "CommitFailedException", "%s", msg);
	else
		fail(c, 400, "BadRequestException", "%s", msg);
}

enum prepared { PREP_WRITTEN, PREP_UNCHANGED, PREP_FAILED };

/*
 * One table's part of a commit (change: requirements and updates) against
 * its current metadata: *t the table as loaded, *text its metadata; when
 * PREP_WRITTEN, *meta the new metadata, written to *file (both the caller
 * frees). PREP_UNCHANGED: no updates and the requirements hold. PREP_FAILED:
 * answered.
 */
static enum prepared prepare(struct call *c, const char *ns, const char *name, const jt *change,
			     struct ts_table *t, buf *text, jt **meta, char **file)
{
	char msg[ERR_MAX], *where;
	ice_rc rc;
	bool ok;

	*meta = NULL;
	*file = NULL;
	if (!load_table(c, ns, name, t, text))
		return PREP_FAILED;
	*meta = c->kind == &VIEW ? ice_view_parse(text->data, text->len, msg, sizeof(msg))
				 : ice_meta_parse(text->data, text->len, msg, sizeof(msg));
	if (!*meta) {
		fail(c, 500, "ServerErrorException", "the current metadata %s: %s",
		     t->metadata_location, msg);
		return PREP_FAILED;
	}
	if (!jt_len(jt_get(change, "updates")) && c->kind == &TABLE) {
		/* nothing to change: the requirements alone decide, no new version */
		rc = ice_check_requirements(*meta, jt_get(change, "requirements"), msg, sizeof(msg));
		if (rc)
			fail_ice(c, rc, msg);
		return rc ? PREP_FAILED : PREP_UNCHANGED;
	}
	rc = c->kind == &VIEW ? ice_view_commit(meta, change, now_ms(), msg, sizeof(msg))
			      : ice_commit(meta, change, t->metadata_location, now_ms(), msg, sizeof(msg));
	if (rc) {
		fail_ice(c, rc, msg);
		return PREP_FAILED;
	}
	where = ts_location_dir(t->warehouse); /* only whether it is valid */
	ok = where != NULL;
	free(where);
	where = ok ? xstrdup(t->warehouse) : table_location(c, ns, name);
	ok = inside_table(c, *meta, where) &&
	     write_metadata(c, *meta, next_version(t->metadata_location, *meta), file);
	free(where);
	return ok ? PREP_WRITTEN : PREP_FAILED;
}

/* The answer to a pointer swap that failed other than by a lost race. */
static void fail_swap(struct call *c, wfs_err err)
{
	if (err == WFS_EIO)
		fail(c, 500, "CommitStateUnknownException",
		     "the table pointer: the filer's answer was lost; the commit may have landed");
	else
		fail_err(c, err, "NoSuchTableException", "the table");
}

/* The staged create's commit (assert-create, no table yet): the table is made. */
static void commit_create(struct call *c, const char *ns, const char *name)
{
	char msg[ERR_MAX], *own = table_location(c, ns, name);
	jt *meta = NULL;
	ice_rc rc = ice_commit(&meta, c->body, NULL, now_ms(), msg, sizeof(msg));
	if (rc)
		fail_ice(c, rc, msg);
	else if (inside_table(c, meta, own))
		make_table(c, ns, name, meta, 0);
	jt_free(meta);
	free(own);
}

/*
 * One commit to ns.name: the requirements checked and the updates applied
 * to the current metadata, the new file written, the pointer swapped; a lost
 * race redone against the new current metadata (the requirements decide
 * again), so concurrent writers of different things all land.
 */
static void commit_table(struct call *c, const char *ns, const char *name)
{
	wfs_err err = WFS_EPRECOND;
	int round;

	for (round = 0; round < COMMIT_TRIES && err == WFS_EPRECOND; round++) {
		struct ts_table t = {0};
		char *file;
		jt *meta;
		buf text;

		if (c->kind == &TABLE && asserts_create(c->body)) {
			err = ts_table_get(c->env->rpc, c->bucket, ns, name, &t);
			ts_table_free(&t);
			if (err == WFS_ENOENT)
				return commit_create(c, ns, name);
		}
		buf_init(&text);
		switch (prepare(c, ns, name, c->body, &t, &text, &meta, &file)) {
		case PREP_FAILED:
			err = WFS_OK; /* answered */
			break;
		case PREP_UNCHANGED:
			load_result(c, t.metadata_location, text.data, text.len, false);
			err = WFS_OK;
			break;
		case PREP_WRITTEN:
			err = ts_table_advance(c->env->rpc, &t, file, c->q->caller, NULL);
			if (err && err != WFS_EIO)
				err = swap_outcome(c, &t, file, err);
			if (!err)
				meta_result(c, meta, file);
			else if (err != WFS_EIO)
				tf_delete(c->env->files, file, false);
			if (err && err != WFS_EPRECOND)
				fail_swap(c, err);
		}
		jt_free(meta);
		free(file);
		ts_table_free(&t);
		buf_free(&text);
	}
	if (err == WFS_EPRECOND)
		fail(c, 409, "CommitFailedException",
		     "the table changed %d times during this commit; reload and retry", round);
}

/* One table of a multi-table transaction. */
struct change {
	char *levels[TS_NS_LEVELS_MAX], *ns;
	size_t nlev;
	const char *name;
	const jt *body;
	struct ts_table t;
	char *file;
};

static void change_reset(struct change *ch, struct call *c)
{
	if (ch->file)
		tf_delete(c->env->files, ch->file, false);
	free(ch->file);
	ch->file = NULL;
	ts_table_free(&ch->t);
}

/* Parses the transaction's table changes into chs; false (answered) when malformed. */
static bool parse_changes(struct call *c, const jt *arr, struct change *chs, size_t *n)
{
	*n = 0;
	if (!jt_is(arr, JT_ARR) || !jt_len(arr) || jt_len(arr) > TS_SWAP_MAX) {
		fail(c, 400, "BadRequestException", "table-changes is an array of 1 to %d commits",
		     TS_SWAP_MAX);
		return false;
	}
	for (size_t i = 0; i < jt_len(arr); i++) {
		struct change *ch = &chs[(*n)++];
		const jt *b = jt_at(arr, i);
		ch->body = b;
		if (!jt_is(jt_get(b, "updates"), JT_ARR) || !jt_is(jt_get(b, "requirements"), JT_ARR)) {
			bad(c, "each table change has requirements, updates and an identifier");
			return false;
		}
		if (!json_identifier(c, jt_get(b, "identifier"), ch->levels, &ch->nlev, &ch->ns,
				     &ch->name))
			return false;
		if (asserts_create(b)) {
			bad(c, "a transaction commits existing tables; create a table on its own");
			return false;
		}
		for (size_t k = 0; k + 1 < *n; k++)
			if (!strcmp(chs[k].ns, ch->ns) && !strcmp(chs[k].name, ch->name)) {
				fail(c, 400, "BadRequestException", "table %s.%s changes twice",
				     ch->ns, ch->name);
				return false;
			}
	}
	return true;
}

/*
 * POST /v1/{prefix}/transactions/commit: every table's change prepared (its
 * new metadata written), then all the pointers swapped in one filer
 * transaction: every table moves on or none does. A lost race redoes it all.
 */
static void commit_transaction(struct call *c)
{
	struct change *chs = xcalloc(TS_SWAP_MAX, sizeof(*chs));
	struct ts_swap swaps[TS_SWAP_MAX];
	wfs_err err = WFS_EPRECOND;
	size_t n = 0, ns = 0, failed = SIZE_MAX;
	char lost[TS_NS_LEVELS_MAX * 256 + 256] = "?";
	int round;

	if (!jt_is(c->body, JT_OBJ)) {
		bad(c, "CommitTransactionRequest is {\"table-changes\": [...]}");
		goto out;
	}
	if (!parse_changes(c, jt_get(c->body, "table-changes"), chs, &n))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (!may(c, "UpdateTableMetadataLocation", chs[i].ns, chs[i].name))
			goto out;
	for (round = 0; round < COMMIT_TRIES && err == WFS_EPRECOND; round++) {
		bool answered = false;
		ns = 0;
		for (size_t i = 0; i < n && !answered; i++) {
			struct change *ch = &chs[i];
			jt *meta = NULL;
			buf text;
			buf_init(&text);
			switch (prepare(c, ch->ns, ch->name, ch->body, &ch->t, &text, &meta,
					&ch->file)) {
			case PREP_FAILED:
				answered = true;
				break;
			case PREP_UNCHANGED:
				break;
			case PREP_WRITTEN:
				swaps[ns++] = (struct ts_swap){ch->ns, ch->name, ch->t.version_token,
							       ch->file};
			}
			jt_free(meta);
			buf_free(&text);
		}
		if (answered) {
			err = WFS_OK;
			break;
		}
		err = ns ? ts_tables_set_locations(c->env->rpc, c->bucket, swaps, ns, c->q->caller,
						   &failed)
			 : WFS_OK;
		if (!err) {
			for (size_t i = 0; i < n; i++) {
				free(chs[i].file); /* they are the tables' metadata now */
				chs[i].file = NULL;
			}
			c->a->status = 204;
		} else if (err != WFS_EPRECOND) {
			fail_swap(c, err);
		}
		if (err == WFS_EPRECOND && failed < ns)
			snprintf(lost, sizeof(lost), "%s.%s", swaps[failed].ns, swaps[failed].name);
		for (size_t i = 0; i < n; i++) {
			if (err == WFS_EIO) {
				free(chs[i].file); /* it may be a table's metadata now */
				chs[i].file = NULL;
			}
			change_reset(&chs[i], c);
		}
	}
	if (err == WFS_EPRECOND)
		fail(c, 409, "CommitFailedException",
		     "table %s changed %d times during this transaction; reload and retry", lost,
		     round);
out:
	for (size_t i = 0; i < n; i++) {
		change_reset(&chs[i], c);
		free_levels(chs[i].levels, &chs[i].nlev);
		free(chs[i].ns);
	}
	free(chs);
}

/*
 * Whether the commit body's identifier, when it has one, is the path's
 * ns.name: a commit must never land on another entry than the one it names.
 * false answered.
 */
static bool body_names_path(struct call *c, const char *name)
{
	const jt *id = jt_get(c->body, "identifier");
	char *lv[TS_NS_LEVELS_MAX], *dir = NULL;
	const char *n;
	size_t k = 0;
	bool ok;
	if (!id)
		return true;
	ok = json_identifier(c, id, lv, &k, &dir, &n);
	if (ok && (strcmp(dir, c->ns) || strcmp(n, name))) {
		fail(c, 400, "BadRequestException", "the body's identifier is not the %s of the path",
		     c->kind->what);
		ok = false;
	}
	free_levels(lv, &k);
	free(dir);
	return ok;
}

/* POST .../tables/{table}: CommitTableRequest. */
static void commit(struct call *c, const char *name)
{
	if (!jt_is(c->body, JT_OBJ) || !jt_is(jt_get(c->body, "updates"), JT_ARR) ||
	    !jt_is(jt_get(c->body, "requirements"), JT_ARR))
		return bad(c, "CommitTableRequest is {\"requirements\": [...], \"updates\": [...]}");
	if (body_names_path(c, name))
		commit_table(c, c->ns, name);
}

/* A metrics report is taken and dropped, for a table that exists (else 404). */
static void metrics(struct call *c, const char *name)
{
	struct ts_table t = {0};
	if (!jt_is(c->body, JT_OBJ))
		bad(c, "a metrics report is a JSON object");
	else if (load_table(c, c->ns, name, &t, NULL))
		c->a->status = 204;
	ts_table_free(&t);
}

/* ---- views ---- */

static void create_view(struct call *c)
{
	const char *name, *loc;
	char uuid[37], msg[ERR_MAX], *own;
	jt *meta = NULL;
	ice_rc rc;

	if (!jt_is(c->body, JT_OBJ))
		return bad(c, "CreateViewRequest is a JSON object");
	if (!json_table_name(c, c->body, &name) || !check_namespace(c))
		return;
	own = table_location(c, c->ns, name);
	loc = jt_get_str(c->body, "location");
	tf_uuid(uuid);
	rc = ice_view_create(c->body, uuid, own, now_ms(), &meta, msg, sizeof(msg));
	if (rc)
		fail_ice(c, rc, msg);
	else if (loc && !tf_location_under(loc, own))
		fail(c, 403, "ForbiddenException", "a view's location is its directory %s", own);
	else if (inside_table(c, meta, own))
		make_table(c, c->ns, name, meta, 0);
	jt_free(meta);
	free(own);
}

/* ReplaceView: a CommitViewRequest, applied like a table's commit. */
static void commit_view(struct call *c, const char *name)
{
	if (!jt_is(c->body, JT_OBJ) || !jt_is(jt_get(c->body, "updates"), JT_ARR))
		return bad(c, "CommitViewRequest is {\"requirements\": [...], \"updates\": [...]}");
	if (body_names_path(c, name))
		commit_table(c, c->ns, name);
}

/* ---- routing ---- */

/* Splits the path after /v1/ into decoded segments; false (answered) when malformed. */
static bool split_path(struct call *c)
{
	const char *p = c->q->raw_path + 4;
	while (*p) {
		size_t len = strcspn(p, "/");
		buf b;
		if (c->nseg == SEGS_MAX) {
			fail(c, 404, "NotFoundException", "no such route");
			return false;
		}
		buf_init(&b);
		if (!len || !url_decode(p, len, false, &b) || memchr(b.data, '\0', b.len) ||
		    memchr(b.data, '/', b.len)) {
			buf_free(&b);
			bad(c, "a path segment is empty or holds NUL or '/'");
			return false;
		}
		buf_append_byte(&b, '\0');
		c->seg[c->nseg++] = b.data;
		p += len;
		p += *p == '/';
	}
	return true;
}

bool ice_rest_is_path(const char *raw_path)
{
	return !strncmp(raw_path, "/v1/", 4) || !strcmp(raw_path, "/v1");
}

static bool seg_is(const struct call *c, size_t i, const char *s)
{
	return i < c->nseg && !strcmp(c->seg[i], s);
}

static void method_not_allowed(struct call *c)
{
	fail(c, 405, "MethodNotAllowedException", "%s is not allowed here", c->q->method);
}

/* /v1/{prefix}/namespaces/{ns}/tables/{table}[/metrics] */
static void route_table(struct call *c)
{
	const char *name = c->seg[4];
	const char *action = is(c, "POST") && c->nseg == 5 ? "UpdateTableMetadataLocation"
			     : is(c, "DELETE")		     ? "DeleteTable"
							     : "GetTableMetadataLocation";
	if (!valid_table_name(c, name) || !may(c, action, c->ns, name))
		return;
	if (c->nseg == 6 && seg_is(c, 5, "metrics"))
		return is(c, "POST") ? metrics(c, name) : method_not_allowed(c);
	if (c->nseg != 5)
		return fail(c, 404, "NotFoundException", "no such route");
	if (is(c, "GET") || is(c, "HEAD"))
		load(c, name);
	else if (is(c, "POST"))
		commit(c, name);
	else if (is(c, "DELETE"))
		drop_table(c, name);
	else
		method_not_allowed(c);
}

/* /v1/{prefix}/namespaces/{ns}/views[/{view}] */
static void route_views(struct call *c)
{
	c->kind = &VIEW;
	if (!iceberg_bucket(c))
		return;
	if (c->nseg == 4) {
		if (is(c, "GET"))
			return may(c, "ListTables", c->ns, NULL) ? list_tables(c) : (void)0;
		return !is(c, "POST")			   ? method_not_allowed(c)
		       : may(c, "CreateTable", c->ns, NULL) ? create_view(c)
							    : (void)0;
	}
	if (c->nseg != 5 || !valid_table_name(c, c->seg[4]))
		return c->a->status ? (void)0 : fail(c, 404, "NotFoundException", "no such route");
	if (!may(c,
		 is(c, "POST")	   ? "UpdateTableMetadataLocation"
		 : is(c, "DELETE") ? "DeleteTable"
				   : "GetTableMetadataLocation",
		 c->ns, c->seg[4]))
		return;
	if (is(c, "GET") || is(c, "HEAD"))
		load(c, c->seg[4]);
	else if (is(c, "POST"))
		commit_view(c, c->seg[4]);
	else if (is(c, "DELETE"))
		drop_table(c, c->seg[4]);
	else
		method_not_allowed(c);
}

/* /v1/{prefix}/namespaces[/...] */
static void route_namespaces(struct call *c)
{
	if (c->nseg == 2) {
		if (is(c, "GET"))
			return may(c, "ListNamespaces", NULL, NULL) ? list_namespaces(c) : (void)0;
		return !is(c, "POST")			      ? method_not_allowed(c)
		       : may(c, "CreateNamespace", NULL, NULL) ? create_namespace(c)
							       : (void)0;
	}
	if (!path_namespace(c))
		return;
	if (c->nseg == 3) {
		if (is(c, "GET") || is(c, "HEAD"))
			return may(c, "GetNamespace", c->ns, NULL) ? load_namespace(c) : (void)0;
		return !is(c, "DELETE")			      ? method_not_allowed(c)
		       : may(c, "DeleteNamespace", c->ns, NULL) ? drop_namespace(c)
								: (void)0;
	}
	/* S3 Tables has no action of its own for namespace properties: its create's */
	if (c->nseg == 4 && seg_is(c, 3, "properties"))
		return !is(c, "POST")			      ? method_not_allowed(c)
		       : may(c, "CreateNamespace", c->ns, NULL) ? update_properties(c)
								: (void)0;
	if (c->nseg == 4 && seg_is(c, 3, "register"))
		return !is(c, "POST")			  ? method_not_allowed(c)
		       : may(c, "CreateTable", c->ns, NULL) ? register_table(c)
							    : (void)0;
	if (c->nseg == 4 && seg_is(c, 3, "tables")) {
		if (is(c, "GET"))
			return may(c, "ListTables", c->ns, NULL) ? list_tables(c) : (void)0;
		return !is(c, "POST")			  ? method_not_allowed(c)
		       : may(c, "CreateTable", c->ns, NULL) ? create_table(c)
							    : (void)0;
	}
	if (c->nseg >= 5 && seg_is(c, 3, "tables"))
		return route_table(c);
	if (c->nseg >= 4 && seg_is(c, 3, "views"))
		return route_views(c);
	fail(c, 404, "NotFoundException", "no such route");
}

static void route(struct call *c)
{
	if (c->nseg == 1 && seg_is(c, 0, "config"))
		return is(c, "GET") ? get_config(c) : method_not_allowed(c);
	if (c->nseg < 2)
		return fail(c, 404, "NotFoundException",
			    "no such route (the paths are /v1/config and /v1/{prefix}/...)");
	c->bucket = c->seg[0];
	if (!check_bucket(c))
		return;
	if (seg_is(c, 1, "namespaces"))
		return route_namespaces(c);
	if (c->nseg == 3 && seg_is(c, 1, "tables") && seg_is(c, 2, "rename"))
		return is(c, "POST") ? rename_table(c) : method_not_allowed(c);
	if (c->nseg == 3 && seg_is(c, 1, "views") && seg_is(c, 2, "rename")) {
		c->kind = &VIEW;
		return is(c, "POST") ? rename_table(c) : method_not_allowed(c);
	}
	if (c->nseg == 3 && seg_is(c, 1, "transactions") && seg_is(c, 2, "commit"))
		return is(c, "POST") ? commit_transaction(c) : method_not_allowed(c);
	fail(c, 404, "NotFoundException", "no such route");
}

void ice_rest_handle(const struct ice_env *env, const struct ice_request *q, struct ice_answer *a)
{
	struct call c = {.kind = &TABLE, .env = env, .q = q, .a = a};
	char msg[128];

	buf_init(&a->body);
	a->status = 0;
	if (!split_path(&c))
		goto out;
	if (q->body_len && (is(&c, "POST") || is(&c, "PUT"))) {
		c.body = jt_parse(q->body, q->body_len, msg, sizeof(msg));
		if (!c.body) {
			fail(&c, 400, "BadRequestException", "the body is not JSON: %s", msg);
			goto out;
		}
	}
	route(&c);
out:
	for (size_t i = 0; i < c.nseg; i++)
		free(c.seg[i]);
	free_levels(c.levels, &c.nlev);
	free(c.ns);
	jt_free(c.body);
}
