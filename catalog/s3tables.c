/* The S3 Tables API: see s3tables.h and docs/catalog.md. */
#include "config.h"
#include "catalog/s3tables.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "catalog/catalog_authz.h"
#include "catalog/table_store.h"
#include "client/filer_meta.h"
#include "lib/http_util.h"
#include "lib/json.h"
#include "lib/util.h"
#include "s3/bucket_policy.h"
#include "s3/sigv4.h"

#define SEGS_MAX      7
#define LIST_MAX      1000 /* the model's bound on maxBuckets, maxNamespaces, maxTables */
#define BUCKET_ARN_AT ":bucket/"

/* One request being answered. */
struct call {
	const struct s3t_env *env;
	const struct s3t_request *q;
	struct s3t_answer *a;
	char *seg[SEGS_MAX]; /* the decoded path segments */
	size_t nseg;
	yajl_val body; /* the JSON body, NULL when empty */
};

/* ---- answers ---- */

static void fail(struct call *c, int status, const char *type, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void fail(struct call *c, int status, const char *type, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	json_w *w;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	buf_reset(&c->a->body);
	c->a->status = status;
	c->a->error_type = type;
	w = jw_new(&c->a->body, false);
	jw_obj_begin(w);
	jw_kv_str(w, "message", msg);
	jw_obj_end(w);
	jw_free(w);
}

static void bad(struct call *c, const char *why) { fail(c, 400, "BadRequestException", "%s", why); }

/* The answer for a table store verdict on what. */
static void fail_err(struct call *c, wfs_err err, const char *what)
{
	switch (err) {
	case WFS_EINVAL:
		fail(c, 400, "BadRequestException", "%s: invalid request", what);
		break;
	case WFS_ENOENT:
	case WFS_ENOTDIR:
		fail(c, 404, "NotFoundException", "%s does not exist", what);
		break;
	case WFS_EEXIST:
		fail(c, 409, "ConflictException", "%s already exists", what);
		break;
	case WFS_ENOTEMPTY:
		fail(c, 409, "ConflictException", "%s is not empty", what);
		break;
	case WFS_EPRECOND:
		fail(c, 409, "ConflictException",
		     "%s: the version token does not match the current one", what);
		break;
	case WFS_EPERM:
	case WFS_EACCES:
		fail(c, 403, "AccessDeniedException", "%s: access denied", what);
		break;
	default:
		fail(c, 500, "InternalServerErrorException", "%s: %s", what, wfs_strerror(err));
	}
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

static void no_content(struct call *c) { c->a->status = 204; }

static void kv_time(json_w *w, const char *key, int64_t ms)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	char out[96];
	gmtime_r(&s, &tm);
	snprintf(out, sizeof(out), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
	jw_kv_str(w, key, out);
}

/* ---- request pieces ---- */

static bool is(const struct call *c, const char *m) { return !strcmp(c->q->method, m); }

/* The query parameter name decoded (caller frees), or NULL; "" when malformed. */
static char *query(struct call *c, const char *name)
{
	return url_query_param(c->q->raw_query, name);
}

/* A page size parameter (1..LIST_MAX, default LIST_MAX); false (answered) when malformed. */
static bool page_size(struct call *c, const char *name, size_t *out)
{
	char *s = query(c, name);
	uint64_t v = LIST_MAX;
	bool ok = !s || (parse_u64(s, &v) && v >= 1 && v <= LIST_MAX);
	free(s);
	if (!ok)
		fail(c, 400, "BadRequestException", "%s must be 1 to %d", name, LIST_MAX);
	*out = (size_t)v;
	return ok;
}

static const char *body_str(struct call *c, const char *key)
{
	const char *s = NULL;
	return json_get_str(c->body, key, &s) ? s : NULL;
}

/*
 * The table bucket a bucket ARN names ("arn:aws:s3tables:<region>:<account>:
 * bucket/<name>"), validated; NULL (answered) when it is malformed.
 */
static const char *arn_bucket(struct call *c, const char *arn)
{
	const char *at = arn ? strstr(arn, BUCKET_ARN_AT) : NULL;
	char why[TS_WHY_MAX];
	if (!arn || strncmp(arn, "arn:aws:s3tables:", 17) || !at) {
		bad(c, "the table bucket ARN is malformed");
		return NULL;
	}
	at += strlen(BUCKET_ARN_AT);
	if (!ts_valid_bucket_name(at, why)) {
		bad(c, why);
		return NULL;
	}
	return at;
}

/* A namespace as the path names it (levels joined with "."): its directory, or NULL. */
static char *path_namespace(struct call *c, const char *ns)
{
	const char *levels[TS_NS_LEVELS_MAX];
	char why[TS_WHY_MAX], *copy = xstrdup(ns), *save = NULL, *dir = NULL;
	size_t n = 0;
	bool ok = *ns && ns[strlen(ns) - 1] != '.';

	for (char *p = strtok_r(copy, ".", &save); ok && p; p = strtok_r(NULL, ".", &save)) {
		if (n == TS_NS_LEVELS_MAX)
			ok = false;
		else
			levels[n++] = p;
	}
	if (ok && n && *ns != '.')
		dir = ts_namespace_dir(levels, n, why);
	else
		snprintf(why, sizeof(why), "a namespace name must be 1 to 255 characters of "
					   "lowercase letters, digits and '_'");
	free(copy);
	if (!dir)
		bad(c, why);
	return dir;
}

static bool valid_table(struct call *c, const char *name)
{
	char why[TS_WHY_MAX];
	if (ts_valid_table_name(name, why))
		return true;
	bad(c, why);
	return false;
}

/* The tags and encryption configuration of a create (with the catalog attributes below). */
static bool valid_create_extras(struct call *c);
static bool store_create_extras(struct call *c, const char *path, const char *inherit);

/* ---- authorization ---- */

/* Whether the caller may do S3 Tables' action on bucket (ns, table); false answered (403). */
static bool may(struct call *c, const char *action, const char *bucket, const char *ns,
		const char *table)
{
	char msg[512] = "";
	if (catalog_may(c->q->authz, action, bucket, ns, table, msg, sizeof(msg)))
		return true;
	fail(c, 403, "AccessDeniedException", "%s", msg);
	return false;
}

/* may() for the action named by the method's verb (Put, Delete, Get) and noun. */
static bool may_verb(struct call *c, const char *noun, const char *bucket, const char *ns,
		     const char *table)
{
	char action[80];
	snprintf(action, sizeof(action), "%s%s",
		 is(c, "PUT") ? "Put" : is(c, "DELETE") ? "Delete" : "Get", noun);
	return may(c, action, bucket, ns, table);
}

/* ---- table buckets ---- */

static void bucket_json(json_w *w, const struct ts_bucket *b)
{
	jw_kv_str(w, "arn", b->arn);
	jw_kv_str(w, "name", b->name);
	jw_kv_str(w, "ownerAccountId", b->owner);
	kv_time(w, "createdAt", b->created_ms);
	jw_kv_str(w, "tableBucketId", b->name);
	jw_kv_str(w, "type", "customer");
}

static void create_bucket(struct call *c)
{
	const char *name = body_str(c, "name");
	struct ts_bucket b = {0};
	char why[TS_WHY_MAX], *path;
	wfs_err err;
	json_w *w;
	bool ok;

	if (!ts_valid_bucket_name(name, why))
		return bad(c, why);
	if (!valid_create_extras(c) || !may(c, "CreateTableBucket", name, NULL, NULL))
		return;
	err = ts_bucket_create(c->env->rpc, name, c->env->region, c->env->account, "ICEBERG", &b);
	if (err)
		return fail_err(c, err, "the bucket");
	path = xasprintf(TS_BUCKETS_DIR "/%s", name);
	ok = store_create_extras(c, path, NULL);
	free(path);
	if (!ok)
		return ts_bucket_free(&b);
	w = answer(c);
	jw_kv_str(w, "arn", b.arn);
	done(w);
	ts_bucket_free(&b);
}

static void get_bucket(struct call *c, const char *name)
{
	struct ts_bucket b = {0};
	wfs_err err = ts_bucket_get(c->env->rpc, name, &b);
	json_w *w;
	if (err)
		return fail_err(c, err, "the table bucket");
	w = answer(c);
	bucket_json(w, &b);
	done(w);
	ts_bucket_free(&b);
}

static void delete_bucket(struct call *c, const char *name)
{
	wfs_err err = ts_bucket_delete(c->env->rpc, name);
	if (err)
		return fail_err(c, err, "the table bucket");
	no_content(c);
}

/*
 * Lists the directories of dir carrying the attribute xname, after the
 * continuationToken start (at it: inclusive) and beginning with prefix, into up to max entries
 * (owned, into *out); *next is the next page's token or NULL.
 */
static wfs_err list_marked(struct call *c, const char *dir, const char *xname, const char *start,
			   bool inclusive, const char *prefix, size_t max, struct filer_entry ***out, size_t *n,
			   char **next)
{
	char *from = xstrdup(start ? start : "");
	wfs_err err = WFS_OK;
	bool more = true;

	*out = xcalloc(max, sizeof(**out));
	*n = 0;
	*next = NULL;
	while (more && *n < max) {
		struct filer_meta_page p = {0};
		err = filer_meta_list_from(c->env->rpc, dir, from, inclusive, prefix, max, &p);
		inclusive = false;
		if (err)
			break;
		more = p.more;
		for (size_t i = 0; i < p.n && *n < max; i++) {
			struct filer_entry *e = p.entries[i];
			free(from);
			from = xstrdup(e->name);
			const struct filer_xattr *x = filer_entry_xattr_get(e, xname);
			/* a renamed table's storage directory is no table */
			if (!S_ISDIR(e->attr.mode) || !x ||
			    (!strcmp(xname, TS_XATTR_TABLE) && ts_is_storage(x)))
				continue;
			(*out)[(*n)++] = e;
			p.entries[i] = NULL;
			if (*n == max && (i + 1 < p.n || p.more))
				*next = xstrdup(e->name);
		}
		if (p.n == 0)
			more = false;
		filer_meta_page_free(&p);
	}
	free(from);
	if (err) {
		for (size_t i = 0; i < *n; i++)
			filer_entry_free((*out)[i]);
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return err;
}

/* Ends a list answer's array and the answer, with the next page's token (freed). */
static void end_page(json_w *w, char *next)
{
	jw_arr_end(w);
	if (next)
		jw_kv_str(w, "continuationToken", next);
	done(w);
	free(next);
}

static void free_entries(struct filer_entry **es, size_t n)
{
	for (size_t i = 0; i < n; i++)
		filer_entry_free(es[i]);
	free(es);
}

/* The attribute xname of e as JSON (caller frees), or NULL. */
static yajl_val entry_attr(const struct filer_entry *e, const char *xname)
{
	const struct filer_xattr *x = filer_entry_xattr_get(e, xname);
	char msg[64];
	return x ? json_parse((const char *)x->value, x->value_len, msg, sizeof(msg)) : NULL;
}

/* Writes one listed entry, e, whose attribute the listing asked for is attr (may be NULL). */
typedef void item_writer(json_w *w, const char *bucket, const struct filer_entry *e, yajl_val attr);

/*
 * A page of dir's entries marked with xname, as the array key of objects
 * item writes: the prefix, continuationToken and page-size (size_param)
 * query parameters of every S3 Tables list. A missing dir is an empty list
 * when empty_if_missing, else its error names what.
 */
static void list_page(struct call *c, const char *dir, const char *xname, const char *size_param,
		      const char *key, const char *bucket, bool empty_if_missing, const char *what,
		      item_writer *item)
{
	char *prefix = query(c, "prefix"), *token = query(c, "continuationToken"), *next = NULL;
	struct filer_entry **es = NULL;
	size_t max, n = 0;
	wfs_err err;
	json_w *w;

	if (!page_size(c, size_param, &max))
		goto out;
	err = list_marked(c, dir, xname, token, false, prefix, max, &es, &n, &next);
	if (err == WFS_ENOENT && empty_if_missing) {
		err = WFS_OK;
		es = NULL;
		n = 0;
		next = NULL;
	}
	if (err) {
		fail_err(c, err, what);
		goto out;
	}
	w = answer(c);
	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		yajl_val v = entry_attr(es[i], xname);
		jw_obj_begin(w);
		item(w, bucket, es[i], v);
		jw_obj_end(w);
		yajl_tree_free(v);
	}
	end_page(w, next);
	free_entries(es, n);
out:
	free(prefix);
	free(token);
}

static void bucket_item(json_w *w, const char *bucket, const struct filer_entry *e, yajl_val v)
{
	struct ts_bucket b = {0};
	int64_t t = 0;
	const char *s;

	(void)bucket;
	b.name = e->name;
	b.arn = json_get_str(v, "arn", &s) ? (char *)s : "";
	b.owner = json_get_str(v, "owner", &s) ? (char *)s : "";
	json_get_i64(v, "createdAt", &t);
	b.created_ms = t;
	bucket_json(w, &b);
}

static void list_buckets(struct call *c)
{
	list_page(c, TS_BUCKETS_DIR, TS_XATTR_BUCKET, "maxBuckets", "tableBuckets", NULL, true,
		  "the bucket list", bucket_item); /* no bucket yet: none */
}

/* ---- namespaces ---- */

/* "namespace": the one-level list the API names a namespace by. */
static void ns_list(json_w *w, const char *ns)
{
	jw_key(w, "namespace");
	jw_arr_begin(w);
	jw_str(w, ns);
	jw_arr_end(w);
}

static void namespace_json(json_w *w, const char *bucket, const struct ts_namespace *ns)
{
	ns_list(w, ns->dir);
	kv_time(w, "createdAt", ns->created_ms);
	jw_kv_str(w, "createdBy", ns->created_by ? ns->created_by : "");
	jw_kv_str(w, "ownerAccountId", ns->owner ? ns->owner : "");
	jw_kv_str(w, "namespaceId", ns->dir);
	jw_kv_str(w, "tableBucketId", bucket);
}

static void create_namespace(struct call *c, const char *arn, const char *bucket)
{
	yajl_val list = json_get(c->body, "namespace");
	struct ts_namespace ns = {0};
	char *dir;
	wfs_err err;
	json_w *w;

	/* the API names one level; a dotted one is our multi-level form */
	if (!YAJL_IS_ARRAY(list) || list->u.array.len != 1 ||
	    !YAJL_IS_STRING(list->u.array.values[0]))
		return bad(c, "\"namespace\" must be a list of one name");
	dir = path_namespace(c, list->u.array.values[0]->u.string);
	if (!dir)
		return;
	{
		const char *levels[TS_NS_LEVELS_MAX];
		char *copy = xstrdup(dir), *save = NULL;
		size_t n = 0;
		for (char *p = strtok_r(copy, ".", &save); p; p = strtok_r(NULL, ".", &save))
			levels[n++] = p;
		err = ts_namespace_create(c->env->rpc, bucket, levels, n, c->q->caller,
					  c->env->account, &ns);
		free(copy);
	}
	if (err)
		fail_err(c, err, err == WFS_ENOENT ? "the table bucket" : "the namespace");
	else {
		w = answer(c);
		jw_kv_str(w, "tableBucketARN", arn);
		jw_key(w, "namespace");
		jw_arr_begin(w);
		jw_str(w, dir);
		jw_arr_end(w);
		done(w);
	}
	ts_namespace_free(&ns);
	free(dir);
}

static void get_namespace(struct call *c, const char *bucket, const char *dir)
{
	struct ts_namespace ns = {0};
	wfs_err err = ts_namespace_get(c->env->rpc, bucket, dir, &ns);
	json_w *w;
	if (err)
		return fail_err(c, err, "the namespace");
	w = answer(c);
	namespace_json(w, bucket, &ns);
	done(w);
	ts_namespace_free(&ns);
}

static void delete_namespace(struct call *c, const char *bucket, const char *dir)
{
	wfs_err err = ts_namespace_delete(c->env->rpc, bucket, dir);
	if (err)
		return fail_err(c, err, "the namespace");
	no_content(c);
}

/* WFS_ENOENT (answered) unless bucket is a table bucket. */
static bool bucket_exists(struct call *c, const char *bucket)
{
	struct ts_bucket b = {0};
	wfs_err err = ts_bucket_get(c->env->rpc, bucket, &b);
	ts_bucket_free(&b);
	if (err)
		fail_err(c, err, "the table bucket");
	return !err;
}

static void namespace_item(json_w *w, const char *bucket, const struct filer_entry *e,
			   yajl_val v)
{
	struct ts_namespace ns = {0};
	const char *s;

	ns.dir = e->name;
	ns.created_by = json_get_str(v, "createdBy", &s) ? (char *)s : NULL;
	ns.owner = json_get_str(v, "ownerAccountId", &s) ? (char *)s : NULL;
	json_get_i64(v, "createdAt", &ns.created_ms);
	namespace_json(w, bucket, &ns);
}

static void list_namespaces(struct call *c, const char *bucket)
{
	char *dir;

	if (!bucket_exists(c, bucket))
		return;
	dir = xasprintf(TS_BUCKETS_DIR "/%s", bucket);
	list_page(c, dir, TS_XATTR_NAMESPACE, "maxNamespaces", "namespaces", bucket, false,
		  "the table bucket", namespace_item);
	free(dir);
}

/* ---- tables ---- */

/* Whether the directory of the table name is the storage of a renamed table. */
static bool holds_renamed(struct call *c, const char *bucket, const char *dir, const char *name)
{
	char *path = ts_table_path(bucket, dir, name);
	struct filer_entry *e = NULL;
	bool yes = !filer_meta_lookup(c->env->rpc, path, &e) &&
		   ts_is_storage(filer_entry_xattr_get(e, TS_XATTR_TABLE));
	filer_entry_free(e);
	free(path);
	return yes;
}

/* Whether bucket may take Iceberg tables (not a LANCE one); false answered. */
static bool iceberg_bucket(struct call *c, const char *bucket)
{
	struct ts_bucket b = {0};
	wfs_err err = ts_bucket_get(c->env->rpc, bucket, &b);
	bool ok = !err && (!b.format || !strcmp(b.format, "ICEBERG"));
	if (err)
		fail_err(c, err, "the table bucket");
	else if (!ok)
		bad(c, "the table bucket is a LANCE bucket: its tables are made through the Lance "
		       "catalog");
	ts_bucket_free(&b);
	return ok;
}

static void create_table(struct call *c, const char *bucket, const char *dir)
{
	const char *name = body_str(c, "name"), *format = body_str(c, "format");
	struct ts_table t = {0};
	char *path, *bpath;
	wfs_err err;
	json_w *w;
	bool ok;

	if (!valid_table(c, name))
		return;
	if (!format || strcmp(format, "ICEBERG"))
		return bad(c, "\"format\" must be ICEBERG");
	if (!valid_create_extras(c) || !iceberg_bucket(c, bucket))
		return;
	err = ts_table_create(c->env->rpc, c->env->region, bucket, dir, name, format,
			      c->q->caller, c->env->account, &t);
	if (err == WFS_EEXIST && holds_renamed(c, bucket, dir, name))
		return fail(c, 409, "ConflictException",
			    "%s holds the files of a renamed table: the name is free once that "
			    "table is deleted or renamed back", name);
	if (err)
		return fail_err(c, err, err == WFS_ENOENT ? "the namespace" : "the table");
	path = ts_table_path(bucket, dir, name);
	bpath = xasprintf(TS_BUCKETS_DIR "/%s", bucket);
	ok = store_create_extras(c, path, bpath);
	free(path);
	free(bpath);
	if (!ok)
		return ts_table_free(&t);
	w = answer(c);
	jw_kv_str(w, "tableARN", t.arn);
	jw_kv_str(w, "versionToken", t.version_token);
	done(w);
	ts_table_free(&t);
}

static void table_json(json_w *w, const struct ts_table *t)
{
	jw_kv_str(w, "name", t->name);
	jw_kv_str(w, "type", "customer");
	jw_kv_str(w, "tableARN", t->arn);
	ns_list(w, t->ns);
	jw_kv_str(w, "namespaceId", t->ns);
	jw_kv_str(w, "versionToken", t->version_token);
	if (t->metadata_location)
		jw_kv_str(w, "metadataLocation", t->metadata_location);
	jw_kv_str(w, "warehouseLocation", t->warehouse);
	kv_time(w, "createdAt", t->created_ms);
	jw_kv_str(w, "createdBy", t->created_by ? t->created_by : "");
	kv_time(w, "modifiedAt", t->modified_ms);
	jw_kv_str(w, "modifiedBy", t->modified_by ? t->modified_by : "");
	jw_kv_str(w, "ownerAccountId", t->owner ? t->owner : "");
	jw_kv_str(w, "format", t->format);
	jw_kv_str(w, "tableBucketId", t->bucket);
}

/* GetTable names the table in its query. */
static void get_table(struct call *c)
{
	char *arn = query(c, "tableBucketARN"), *ns = query(c, "namespace"),
	     *name = query(c, "name"), *table_arn = query(c, "tableArn"), *dir = NULL;
	const char *bucket;
	struct ts_table t = {0};
	wfs_err err;
	json_w *w;

	if ((!arn || !ns || !name) && !table_arn) {
		bad(c, "GetTable needs tableArn, or tableBucketARN, namespace and name");
		goto out;
	}
	if (table_arn)
		err = ts_table_by_arn(c->env->rpc, table_arn, &t);
	else if (!(bucket = arn_bucket(c, arn)) || !(dir = path_namespace(c, ns)) ||
		 !valid_table(c, name))
		goto out;
	else
		err = ts_table_get(c->env->rpc, bucket, dir, name, &t);
	if (err == WFS_EINVAL) {
		bad(c, "the table ARN is malformed");
		goto out;
	}
	if (err) {
		fail_err(c, err, "the table");
		goto out;
	}
	if (may(c, "GetTable", t.bucket, t.ns, t.name)) {
		w = answer(c);
		table_json(w, &t);
		done(w);
	}
	ts_table_free(&t);
out:
	free(arn);
	free(ns);
	free(name);
	free(table_arn);
	free(dir);
}

static void delete_table(struct call *c, const char *bucket, const char *dir, const char *name)
{
	char *token = query(c, "versionToken");
	wfs_err err = ts_table_delete(c->env->rpc, bucket, dir, name, token);
	free(token);
	if (err)
		return fail_err(c, err, "the table");
	no_content(c);
}

static void get_location(struct call *c, const char *bucket, const char *dir, const char *name)
{
	struct ts_table t = {0};
	wfs_err err = ts_table_get(c->env->rpc, bucket, dir, name, &t);
	json_w *w;
	if (err)
		return fail_err(c, err, "the table");
	w = answer(c);
	jw_kv_str(w, "versionToken", t.version_token);
	if (t.metadata_location)
		jw_kv_str(w, "metadataLocation", t.metadata_location);
	jw_kv_str(w, "warehouseLocation", t.warehouse);
	done(w);
	ts_table_free(&t);
}

static void update_location(struct call *c, const char *bucket, const char *dir,
			    const char *name)
{
	const char *token = body_str(c, "versionToken"), *loc = body_str(c, "metadataLocation");
	struct ts_table t = {0};
	wfs_err err;
	json_w *w;

	if (!token || !*token || strlen(token) > 2048)
		return bad(c, "\"versionToken\" is required");
	if (!loc || !*loc || strlen(loc) > 2048)
		return bad(c, "\"metadataLocation\" must be 1 to 2048 characters");
	err = ts_table_set_location(c->env->rpc, bucket, dir, name, token, loc, c->q->caller, &t);
	if (err)
		return fail_err(c, err, "the table");
	w = answer(c);
	jw_kv_str(w, "name", name);
	jw_kv_str(w, "tableARN", t.arn);
	ns_list(w, dir);
	jw_kv_str(w, "versionToken", t.version_token);
	jw_kv_str(w, "metadataLocation", t.metadata_location);
	done(w);
	ts_table_free(&t);
}

/*
 * The table's name changes, its files stay: its warehouseLocation and
 * metadataLocation (and the paths inside its Iceberg metadata) stay valid.
 */
static void rename_table(struct call *c, const char *bucket, const char *dir, const char *name)
{
	const char *new_ns = body_str(c, "newNamespaceName"), *new_name = body_str(c, "newName");
	const char *token = body_str(c, "versionToken");
	struct ts_namespace ns = {0};
	char *to_dir = NULL;
	wfs_err err;

	if (!new_ns && !new_name)
		return bad(c, "RenameTable needs newNamespaceName or newName");
	if (new_name && !valid_table(c, new_name))
		return;
	to_dir = new_ns ? path_namespace(c, new_ns) : xstrdup(dir);
	if (!to_dir)
		return;
	new_name = new_name ? new_name : name;
	err = ts_namespace_get(c->env->rpc, bucket, to_dir, &ns);
	ts_namespace_free(&ns);
	if (err) {
		free(to_dir);
		return fail_err(c, err, "the new namespace");
	}
	err = ts_table_rename(c->env->rpc, bucket, dir, name, to_dir, new_name, token);
	free(to_dir);
	if (err)
		return fail_err(c, err, err == WFS_EEXIST ? "the new table" : "the table");
	no_content(c);
}

/* The tables of one namespace dir, after start, into the open "tables" array. */
static wfs_err list_ns_tables(struct call *c, json_w *w, const char *bucket, const char *dir,
			      const char *start, const char *prefix, size_t *left, char **next)
{
	char *path = xasprintf(TS_BUCKETS_DIR "/%s/%s", bucket, dir), *more;
	struct filer_entry **es;
	size_t n;
	wfs_err err = list_marked(c, path, TS_XATTR_TABLE, start, false, prefix, *left, &es, &n, &more);
	free(path);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		const struct filer_xattr *x = filer_entry_xattr_get(es[i], TS_XATTR_TABLE);
		struct ts_table t = {0};
		if (!ts_table_from_json((const char *)x->value, x->value_len, &t)) {
			ts_table_free(&t);
			continue;
		}
		jw_obj_begin(w);
		ns_list(w, dir);
		jw_kv_str(w, "name", es[i]->name);
		jw_kv_str(w, "type", "customer");
		jw_kv_str(w, "tableARN", t.arn);
		kv_time(w, "createdAt", t.created_ms);
		kv_time(w, "modifiedAt", t.modified_ms);
		jw_kv_str(w, "namespaceId", dir);
		jw_kv_str(w, "tableBucketId", bucket);
		jw_obj_end(w);
		ts_table_free(&t);
	}
	*left -= n;
	if (more)
		*next = xasprintf("%s/%s", dir, more);
	free(more);
	free_entries(es, n);
	return WFS_OK;
}

/*
 * ListTables: of one namespace (the query's) or of all of them; the
 * continuation token is "<namespace>/<table>", the last one answered.
 */
static void list_tables(struct call *c, const char *bucket)
{
	char *ns = query(c, "namespace"), *prefix = query(c, "prefix");
	char *token = query(c, "continuationToken"), *dir = NULL, *next = NULL, *slash;
	struct filer_entry **nss = NULL;
	size_t max, left, nns = 0;
	const char *tstart = NULL;
	char *nstart = NULL;
	wfs_err err = WFS_OK;
	json_w *w;

	if (!page_size(c, "maxTables", &max) || !bucket_exists(c, bucket))
		goto out;
	if (ns && !(dir = path_namespace(c, ns)))
		goto out;
	if (token && (slash = strchr(token, '/'))) {
		*slash = '\0';
		nstart = token;
		tstart = slash + 1;
	}
	if (!dir) {
		char *bdir = xasprintf(TS_BUCKETS_DIR "/%s", bucket), *unused = NULL;
		/* from the token's namespace on: it may have tables left */
		err = list_marked(c, bdir, TS_XATTR_NAMESPACE, nstart, true, NULL, LIST_MAX, &nss,
				  &nns, &unused);
		free(unused);
		free(bdir);
	}
	if (err) {
		fail_err(c, err, "the table bucket");
		goto out;
	}
	w = answer(c);
	jw_key(w, "tables");
	jw_arr_begin(w);
	left = max;
	if (dir)
		err = list_ns_tables(c, w, bucket, dir,
				     nstart && !strcmp(nstart, dir) ? tstart : NULL, prefix, &left,
				     &next);
	for (size_t i = 0; !dir && i < nns && left && !err && !next; i++) {
		const char *d = nss[i]->name;
		if (nstart && strcmp(d, nstart) < 0)
			continue;
		err = list_ns_tables(c, w, bucket, d, nstart && !strcmp(d, nstart) ? tstart : NULL,
				     prefix, &left, &next);
		/* the page is full at a namespace's end: the next page begins with the next one */
		if (!err && !left && !next && i + 1 < nns)
			next = xasprintf("%s/", nss[i + 1]->name);
	}
	end_page(w, next);
	if (err)
		fail_err(c, err, "the namespace");
	next = NULL;
out:
	free_entries(nss, nns);
	free(ns);
	free(prefix);
	free(token);
	free(dir);
	free(next);
}

/* ---- resource policies (enforced by catalog_authz.c) ---- */

#define POLICY_XATTR TS_XATTR_POLICY

/*
 * Put, Get or Delete the policy of the directory path (a bucket or table
 * checked to exist) of bucket. A policy is parsed as it will be evaluated
 * (catalog_authz.h): one that would not be is refused here.
 */
static void policy(struct call *c, const char *bucket, const char *path, const char *what)
{
	const char *doc = body_str(c, "resourcePolicy");
	struct filer_entry *e = NULL;
	const struct filer_xattr *x;
	wfs_err err;
	json_w *w;

	if (is(c, "PUT")) {
		char msg[256] = "", *prefix = xasprintf("arn:aws:s3tables:%s:%s:bucket/",
							 c->env->region, c->env->account);
		struct bucket_policy *p =
			doc ? bucket_policy_parse_for(doc, strlen(doc), &POLICY_S3TABLES, prefix,
						      bucket, msg, sizeof(msg))
			    : NULL;
		free(prefix);
		if (!p)
			return bad(c, doc ? msg : "\"resourcePolicy\" must be a JSON policy document");
		bucket_policy_free(p);
		err = filer_meta_set_xattr(c->env->rpc, path, POLICY_XATTR, doc, strlen(doc),
					   FM_XATTR_ANY);
		catalog_authz_forget(path);
		if (err)
			return fail_err(c, err, what);
		done(answer(c));
	} else if (is(c, "DELETE")) {
		err = filer_meta_remove_xattr(c->env->rpc, path, POLICY_XATTR);
		catalog_authz_forget(path);
		if (err && err != WFS_ENODATA)
			return fail_err(c, err, what);
		no_content(c);
	} else if (is(c, "GET")) {
		err = filer_meta_lookup(c->env->rpc, path, &e);
		x = err ? NULL : filer_entry_xattr_get(e, POLICY_XATTR);
		if (!x)
			fail(c, 404, "NotFoundException", "%s has no policy", what);
		else {
			w = answer(c);
			jw_key(w, "resourcePolicy");
			jw_strn(w, (const char *)x->value, x->value_len);
			done(w);
		}
		filer_entry_free(e);
	}
}

static void bucket_policy(struct call *c, const char *bucket)
{
	char *path;
	if (!bucket_exists(c, bucket))
		return;
	path = xasprintf(TS_BUCKETS_DIR "/%s", bucket);
	policy(c, bucket, path, "the table bucket");
	free(path);
}

static void table_policy(struct call *c, const char *bucket, const char *dir, const char *name)
{
	struct ts_table t = {0};
	wfs_err err = ts_table_get(c->env->rpc, bucket, dir, name, &t);
	char *path;
	ts_table_free(&t);
	if (err)
		return fail_err(c, err, "the table");
	path = xasprintf(TS_BUCKETS_DIR "/%s/%s/%s", bucket, dir, name);
	policy(c, bucket, path, "the table");
	free(path);
}

/* ---- catalog attributes: tags, encryption, maintenance ---- */

#define TAGS_XATTR       "weedfs.catalog.tags"
#define ENCRYPTION_XATTR "weedfs.catalog.encryption"
#define MAINT_XATTR      "weedfs.catalog.maintenance"
#define TAGS_MAX         50 /* S3 Tables' limits on a resource's tags */
#define TAG_KEY_MAX      128
#define TAG_VALUE_MAX    256
#define EDIT_ROUNDS      8 /* of an attribute's compare-and-swap (the etag moves with any change) */

/* The JSON attribute xname of the directory path: *out NULL when it has none; false (answered). */
static bool read_attr(struct call *c, const char *path, const char *xname, const char *what,
		      yajl_val *out)
{
	struct filer_entry *e = NULL;
	wfs_err err = filer_meta_lookup(c->env->rpc, path, &e);
	if (err) {
		fail_err(c, err, what);
		return false;
	}
	*out = entry_attr(e, xname);
	filer_entry_free(e);
	return true;
}

/* Writes the new value of an attribute from its old one (NULL: none); false (answered) stops. */
typedef bool attr_edit(struct call *c, yajl_val old, json_w *w, const void *arg);

/*
 * Rewrites the JSON attribute xname of the directory path with edit, by
 * compare-and-swap at the entry's etag (two callers editing at once both
 * land). false when answered.
 */
static bool edit_attr(struct call *c, const char *path, const char *xname, const char *what,
		      attr_edit *edit, const void *arg)
{
	wfs_err err = WFS_EPRECOND;

	for (int round = 0; round < EDIT_ROUNDS && err == WFS_EPRECOND; round++) {
		struct filer_entry *e = NULL;
		char etag[17];
		yajl_val old;
		json_w *w;
		bool ok;
		buf b;

		err = filer_meta_lookup_etag(c->env->rpc, path, &e, etag);
		if (err)
			break;
		old = entry_attr(e, xname);
		filer_entry_free(e);
		buf_init(&b);
		w = jw_new(&b, false);
		ok = edit(c, old, w, arg);
		jw_free(w);
		yajl_tree_free(old);
		if (ok)
			err = filer_meta_set_xattr_if(c->env->rpc, path, xname, b.data, b.len,
						      FM_XATTR_ANY, etag, NULL, NULL);
		buf_free(&b);
		if (!ok)
			return false;
	}
	if (err)
		fail_err(c, err, what);
	return !err;
}

/* UTF-8 characters of s. */
static size_t chars(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* A Tags map of the request; false (answered) when it breaks the limits. */
static bool valid_tags(struct call *c, yajl_val tags)
{
	if (!YAJL_IS_OBJECT(tags)) {
		bad(c, "\"tags\" must be a map of keys to values");
		return false;
	}
	if (tags->u.object.len > TAGS_MAX) {
		fail(c, 400, "BadRequestException", "a resource has at most %d tags", TAGS_MAX);
		return false;
	}
	for (size_t i = 0; i < tags->u.object.len; i++) {
		const char *k = tags->u.object.keys[i];
		yajl_val v = tags->u.object.values[i];
		if (chars(k) < 1 || chars(k) > TAG_KEY_MAX || !strncmp(k, "aws:", 4)) {
			fail(c, 400, "BadRequestException",
			     "a tag key is 1 to %d characters, not beginning \"aws:\"", TAG_KEY_MAX);
			return false;
		}
		if (!YAJL_IS_STRING(v) || chars(v->u.string) > TAG_VALUE_MAX) {
			fail(c, 400, "BadRequestException", "a tag value is 0 to %d characters",
			     TAG_VALUE_MAX);
			return false;
		}
	}
	return true;
}

static bool tag_in(yajl_val tags, const char *key) { return json_get(tags, key) != NULL; }

/* The old tags with arg's (a valid Tags map) added or replacing. */
static bool tags_merge(struct call *c, yajl_val old, json_w *w, const void *arg)
{
	yajl_val add = (yajl_val)arg;
	size_t n = add->u.object.len;

	jw_obj_begin(w);
	for (size_t i = 0; YAJL_IS_OBJECT(old) && i < old->u.object.len; i++)
		if (YAJL_IS_STRING(old->u.object.values[i]) && !tag_in(add, old->u.object.keys[i])) {
			jw_kv_str(w, old->u.object.keys[i], old->u.object.values[i]->u.string);
			n++;
		}
	for (size_t i = 0; i < add->u.object.len; i++)
		jw_kv_str(w, add->u.object.keys[i], add->u.object.values[i]->u.string);
	jw_obj_end(w);
	if (n > TAGS_MAX)
		fail(c, 400, "BadRequestException", "a resource has at most %d tags", TAGS_MAX);
	return n <= TAGS_MAX;
}

struct key_list {
	char **keys;
	size_t n;
};

/* The old tags without arg's keys (a struct key_list). */
static bool tags_drop(struct call *c, yajl_val old, json_w *w, const void *arg)
{
	const struct key_list *drop = arg;
	(void)c;
	jw_obj_begin(w);
	for (size_t i = 0; YAJL_IS_OBJECT(old) && i < old->u.object.len; i++) {
		bool gone = false;
		for (size_t j = 0; j < drop->n && !gone; j++)
			gone = !strcmp(drop->keys[j], old->u.object.keys[i]);
		if (!gone && YAJL_IS_STRING(old->u.object.values[i]))
			jw_kv_str(w, old->u.object.keys[i], old->u.object.values[i]->u.string);
	}
	jw_obj_end(w);
	return true;
}

/* Every value of the query parameter name, decoded (caller frees each and the array). */
static size_t query_all(struct call *c, const char *name, char ***out)
{
	const char *p = c->q->raw_query;
	size_t n = strlen(name), count = 0;

	*out = NULL;
	while (p && *p) {
		const char *end = strchr(p, '&'), *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		buf b;
		eq = memchr(p, '=', len);
		buf_init(&b);
		if (eq && (size_t)(eq - p) == n && !strncmp(p, name, n) &&
		    sigv4_pct_decode(eq + 1, len - n - 1, &b)) {
			buf_append_byte(&b, '\0');
			*out = xrealloc(*out, (count + 1) * sizeof(**out));
			(*out)[count++] = b.data;
		} else {
			buf_free(&b);
		}
		p = end ? end + 1 : NULL;
	}
	return count;
}

/*
 * The directory of the resource a tag request names (a table bucket's or a
 * table's ARN; caller frees), or NULL (answered).
 */
static char *resource_dir(struct call *c, const char *arn)
{
	struct ts_table t = {0};
	const char *bucket;
	char *path;
	wfs_err err;

	if (arn && strstr(arn, "/table/")) {
		err = ts_table_by_arn(c->env->rpc, arn, &t);
		if (err == WFS_EINVAL)
			bad(c, "the table ARN is malformed");
		else if (err)
			fail_err(c, err, "the table");
		if (err)
			return NULL;
		path = ts_table_path(t.bucket, t.ns, t.name);
		ts_table_free(&t);
		return path;
	}
	if (!(bucket = arn_bucket(c, arn)) || !bucket_exists(c, bucket))
		return NULL;
	return xasprintf(TS_BUCKETS_DIR "/%s", bucket);
}

/* POST, GET, DELETE /tag/{resourceArn}. */
static void tag_resource(struct call *c, const char *arn)
{
	char *path = resource_dir(c, arn), *bucket = NULL, *id = NULL;
	yajl_val tags = json_get(c->body, "tags"), old = NULL;
	bool allowed;
	json_w *w;

	if (!path)
		return;
	/* a bucket's tags or a table's: the bucket's grants and policy decide */
	if (!ts_table_arn_parse(arn, &bucket, &id))
		bucket = xstrdup(path + strlen(TS_BUCKETS_DIR "/"));
	allowed = may(c, is(c, "POST") ? "TagResource" : is(c, "DELETE") ? "UntagResource"
									 : "ListTagsForResource",
		      bucket, NULL, NULL);
	free(bucket);
	free(id);
	if (!allowed) {
		free(path);
		return;
	}
	if (is(c, "POST") && valid_tags(c, tags)) {
		if (edit_attr(c, path, TAGS_XATTR, "the resource", tags_merge, tags))
			done(answer(c));
	} else if (is(c, "DELETE")) {
		struct key_list drop;
		drop.n = query_all(c, "tagKeys", &drop.keys);
		if (!drop.n)
			bad(c, "UntagResource needs tagKeys");
		else if (edit_attr(c, path, TAGS_XATTR, "the resource", tags_drop, &drop))
			no_content(c);
		for (size_t i = 0; i < drop.n; i++)
			free(drop.keys[i]);
		free(drop.keys);
	} else if (is(c, "GET") && read_attr(c, path, TAGS_XATTR, "the resource", &old)) {
		w = answer(c);
		jw_key(w, "tags");
		tags_drop(c, old, w, &(struct key_list){0});
		done(w);
		yajl_tree_free(old);
	}
	free(path);
}

static void encryption_obj(json_w *w, const char *alg, const char *key)
{
	jw_obj_begin(w);
	jw_kv_str(w, "sseAlgorithm", alg);
	if (key)
		jw_kv_str(w, "kmsKeyArn", key);
	jw_obj_end(w);
}

/*
 * Writes an EncryptionConfiguration v once checked (the model's: sseAlgorithm
 * AES256, or aws:kms with a KMS key ARN); false (answered) when malformed.
 */
static bool encryption_value(struct call *c, yajl_val v, json_w *w)
{
	const char *alg = NULL, *key = NULL;

	for (size_t i = 0; YAJL_IS_OBJECT(v) && i < v->u.object.len; i++) {
		const char *k = v->u.object.keys[i];
		if (strcmp(k, "sseAlgorithm") && strcmp(k, "kmsKeyArn")) {
			fail(c, 400, "BadRequestException", "encryptionConfiguration has no member %s",
			     k);
			return false;
		}
	}
	json_get_str(v, "sseAlgorithm", &alg);
	json_get_str(v, "kmsKeyArn", &key);
	if (!alg || (strcmp(alg, "AES256") && strcmp(alg, "aws:kms"))) {
		bad(c, "\"sseAlgorithm\" must be AES256 or aws:kms");
		return false;
	}
	if (!strcmp(alg, "aws:kms") != (key != NULL) ||
	    (key && (strncmp(key, "arn:aws", 7) || !strstr(key, ":kms:") || !strstr(key, ":key/") ||
		     strlen(key) > 2048))) {
		bad(c, "aws:kms needs \"kmsKeyArn\" (arn:aws:kms:<region>:<account>:key/<id>), "
		       "AES256 none");
		return false;
	}
	encryption_obj(w, alg, key);
	return true;
}

/* Replaces the attribute with the value arg (a valid EncryptionConfiguration). */
static bool encryption_set(struct call *c, yajl_val old, json_w *w, const void *arg)
{
	(void)old;
	return encryption_value(c, (yajl_val)arg, w);
}

/* {"encryptionConfiguration": ...}: the stored one, else the default AES256. */
static void encryption_answer(struct call *c, const char *path, const char *what)
{
	const char *alg = "AES256", *key = NULL;
	yajl_val v = NULL;
	json_w *w;

	if (!read_attr(c, path, ENCRYPTION_XATTR, what, &v))
		return;
	if (json_get_str(v, "sseAlgorithm", &alg))
		json_get_str(v, "kmsKeyArn", &key);
	w = answer(c);
	jw_key(w, "encryptionConfiguration");
	encryption_obj(w, alg, key);
	done(w);
	yajl_tree_free(v);
}

/* Get/Put/DeleteTableBucketEncryption. */
static void bucket_encryption(struct call *c, const char *bucket)
{
	char *path;
	wfs_err err;

	if (!bucket_exists(c, bucket))
		return;
	path = xasprintf(TS_BUCKETS_DIR "/%s", bucket);
	if (is(c, "GET")) {
		encryption_answer(c, path, "the table bucket");
	} else if (is(c, "PUT")) {
		yajl_val v = json_get(c->body, "encryptionConfiguration");
		if (edit_attr(c, path, ENCRYPTION_XATTR, "the table bucket", encryption_set, v))
			done(answer(c));
	} else if (is(c, "DELETE")) {
		err = filer_meta_remove_xattr(c->env->rpc, path, ENCRYPTION_XATTR);
		if (err && err != WFS_ENODATA)
			fail_err(c, err, "the table bucket");
		else
			no_content(c);
	}
	free(path);
}

/*
 * The settings the model defines for each maintenance type, all of them
 * PositiveInteger but compaction's strategy.
 */
static const struct maint_type {
	const char *type;
	bool bucket; /* a table bucket's, else a table's */
	const char *fields[3];
} maint_types[] = {
	{"icebergUnreferencedFileRemoval", true, {"unreferencedDays", "nonCurrentDays", NULL}},
	{"icebergCompaction", false, {"targetFileSizeMB", "strategy", NULL}},
	{"icebergSnapshotManagement", false, {"minSnapshotsToKeep", "maxSnapshotAgeHours", NULL}},
};
#define N_MAINT_TYPES (sizeof(maint_types) / sizeof(*maint_types))

static const struct maint_type *maint_type(const char *type, bool bucket)
{
	for (size_t i = 0; type && i < N_MAINT_TYPES; i++)
		if (!strcmp(maint_types[i].type, type) && maint_types[i].bucket == bucket)
			return &maint_types[i];
	return NULL;
}

/* One setting of mt checked and written; false (answered) when malformed. */
static bool maint_setting(struct call *c, const struct maint_type *mt, const char *k, yajl_val v,
			  json_w *w)
{
	static const char *const strategies[] = {"auto", "binpack", "sort", "z-order", NULL};
	int64_t n;
	size_t i = 0;

	while (mt->fields[i] && strcmp(mt->fields[i], k))
		i++;
	if (!mt->fields[i]) {
		fail(c, 400, "BadRequestException", "%s has no setting %s", mt->type, k);
		return false;
	}
	if (!strcmp(k, "strategy")) {
		for (i = 0; YAJL_IS_STRING(v) && strategies[i]; i++)
			if (!strcmp(v->u.string, strategies[i])) {
				jw_kv_str(w, k, v->u.string);
				return true;
			}
		bad(c, "\"strategy\" must be auto, binpack, sort or z-order");
		return false;
	}
	if (!json_as_i64(v, &n) || n < 1 || n > 2147483647) {
		fail(c, 400, "BadRequestException", "%s must be 1 to 2147483647", k);
		return false;
	}
	jw_kv_i64(w, k, n);
	return true;
}

/*
 * Writes a maintenance configuration value ({status?, settings?: {<type>:
 * {...}}}) of the type mt once checked; false (answered) when malformed.
 */
static bool maint_value(struct call *c, const struct maint_type *mt, yajl_val v, json_w *w)
{
	const char *status = NULL;
	yajl_val settings = json_get(v, "settings"), mine = json_get(settings, mt->type);

	if (!YAJL_IS_OBJECT(v) || (json_get(v, "status") && !json_get_str(v, "status", &status)) ||
	    (status && strcmp(status, "enabled") && strcmp(status, "disabled"))) {
		bad(c, "\"value\" must be an object whose \"status\" is enabled or disabled");
		return false;
	}
	for (size_t i = 0; i < v->u.object.len; i++)
		if (strcmp(v->u.object.keys[i], "status") && strcmp(v->u.object.keys[i], "settings")) {
			fail(c, 400, "BadRequestException", "\"value\" has no member %s",
			     v->u.object.keys[i]);
			return false;
		}
	if (settings && (!YAJL_IS_OBJECT(settings) || settings->u.object.len != 1 ||
			 !YAJL_IS_OBJECT(mine))) {
		fail(c, 400, "BadRequestException", "\"settings\" must hold exactly %s", mt->type);
		return false;
	}
	jw_obj_begin(w);
	if (status)
		jw_kv_str(w, "status", status);
	if (settings) {
		jw_key(w, "settings");
		jw_obj_begin(w);
		jw_key(w, mt->type);
		jw_obj_begin(w);
		for (size_t i = 0; i < mine->u.object.len; i++)
			if (!maint_setting(c, mt, mine->u.object.keys[i], mine->u.object.values[i], w))
				return false;
		jw_obj_end(w);
		jw_obj_end(w);
	}
	jw_obj_end(w);
	return true;
}

/* The stored configuration map (its types of the bucket's or a table's kind) written. */
static void maint_map(struct call *c, yajl_val old, bool bucket, const char *skip, json_w *w)
{
	jw_obj_begin(w);
	for (size_t i = 0; YAJL_IS_OBJECT(old) && i < old->u.object.len; i++) {
		const struct maint_type *mt = maint_type(old->u.object.keys[i], bucket);
		if (!mt || (skip && !strcmp(skip, mt->type)))
			continue;
		jw_key(w, mt->type);
		maint_value(c, mt, old->u.object.values[i], w); /* stored ones are valid */
	}
}

struct maint_put {
	const struct maint_type *mt;
	yajl_val value;
};

/* The stored map with arg's type set to its value (both checked already). */
static bool maint_set(struct call *c, yajl_val old, json_w *w, const void *arg)
{
	const struct maint_put *p = arg;
	maint_map(c, old, p->mt->bucket, p->mt->type, w);
	jw_key(w, p->mt->type);
	maint_value(c, p->mt, p->value, w);
	jw_obj_end(w);
	return true;
}

/* PUT .../maintenance/{type}: false (answered) when the type or value is wrong. */
static void maint_put(struct call *c, const char *path, const char *type, bool bucket,
		      const char *what)
{
	struct maint_put p = {maint_type(type, bucket), json_get(c->body, "value")};
	json_w *w;
	bool ok;
	buf b;

	if (!p.mt) {
		fail(c, 400, "BadRequestException", "no maintenance type %s for a %s", type,
		     bucket ? "table bucket" : "table");
		return;
	}
	buf_init(&b);
	w = jw_new(&b, false);
	ok = maint_value(c, p.mt, p.value, w); /* checked before anything changes */
	jw_free(w);
	buf_free(&b);
	if (ok && edit_attr(c, path, MAINT_XATTR, what, maint_set, &p))
		no_content(c);
}

/* GET .../maintenance: {<arn_key>: arn, "configuration": {...}}. */
static void maint_get(struct call *c, const char *path, bool bucket, const char *arn_key,
		      const char *arn, const char *what)
{
	yajl_val old = NULL;
	json_w *w;
	if (!read_attr(c, path, MAINT_XATTR, what, &old))
		return;
	w = answer(c);
	jw_kv_str(w, arn_key, arn);
	jw_key(w, "configuration");
	maint_map(c, old, bucket, NULL, w);
	jw_obj_end(w);
	done(w);
	yajl_tree_free(old);
}

static void bucket_maintenance(struct call *c, const char *arn, const char *bucket,
			       const char *type)
{
	char *path;
	if (!bucket_exists(c, bucket))
		return;
	path = xasprintf(TS_BUCKETS_DIR "/%s", bucket);
	if (type && is(c, "PUT"))
		maint_put(c, path, type, true, "the table bucket");
	else if (!type && is(c, "GET"))
		maint_get(c, path, true, "tableBucketARN", arn, "the table bucket");
	free(path);
}

/* A configured type's job: Disabled when its status says so, else Not_Yet_Run (none runs). */
static void job_status(json_w *w, yajl_val config, const char *type)
{
	const char *status = NULL;
	json_get_str(json_get(config, type), "status", &status);
	jw_key(w, type);
	jw_obj_begin(w);
	jw_kv_str(w, "status", status && !strcmp(status, "disabled") ? "Disabled" : "Not_Yet_Run");
	jw_obj_end(w);
}

/* GetTableMaintenanceJobStatus: no maintenance job runs here yet. */
static void maint_jobs(struct call *c, const char *bucket, const char *path, const char *arn)
{
	char *bpath = xasprintf(TS_BUCKETS_DIR "/%s", bucket);
	yajl_val mine = NULL, theirs = NULL;
	json_w *w;

	if (read_attr(c, path, MAINT_XATTR, "the table", &mine) &&
	    read_attr(c, bpath, MAINT_XATTR, "the table bucket", &theirs)) {
		w = answer(c);
		jw_kv_str(w, "tableARN", arn);
		jw_key(w, "status");
		jw_obj_begin(w);
		for (size_t i = 0; i < N_MAINT_TYPES; i++)
			job_status(w, maint_types[i].bucket ? theirs : mine, maint_types[i].type);
		jw_obj_end(w);
		done(w);
	}
	yajl_tree_free(mine);
	yajl_tree_free(theirs);
	free(bpath);
}

/* .../maintenance[/{type}], .../maintenance-job-status and .../encryption of a table. */
static void table_settings(struct call *c, const char *bucket, const char *dir,
			   const char *name, const char *op, const char *type)
{
	struct ts_table t = {0};
	wfs_err err = ts_table_get(c->env->rpc, bucket, dir, name, &t);
	char *path;

	if (err)
		return fail_err(c, err, "the table");
	path = ts_table_path(bucket, dir, name);
	if (!strcmp(op, "maintenance") && type && is(c, "PUT"))
		maint_put(c, path, type, false, "the table");
	else if (!strcmp(op, "maintenance") && !type && is(c, "GET"))
		maint_get(c, path, false, "tableARN", t.arn, "the table");
	else if (!strcmp(op, "maintenance-job-status") && !type && is(c, "GET"))
		maint_jobs(c, bucket, path, t.arn);
	else if (!strcmp(op, "encryption") && !type && is(c, "GET"))
		encryption_answer(c, path, "the table");
	free(path);
	ts_table_free(&t);
}

/*
 * The tags and encryption configuration a CreateTableBucket or CreateTable
 * body carries, checked before anything is made; false (answered).
 */
static bool valid_create_extras(struct call *c)
{
	yajl_val tags = json_get(c->body, "tags"), enc = json_get(c->body, "encryptionConfiguration");
	bool ok = true;
	if (tags)
		ok = valid_tags(c, tags);
	if (ok && enc) {
		buf b;
		json_w *w;
		buf_init(&b);
		w = jw_new(&b, false);
		ok = encryption_value(c, enc, w);
		jw_free(w);
		buf_free(&b);
	}
	return ok;
}

/*
 * Stores them on the new directory path; a table without an encryption
 * configuration of its own takes its bucket's (inherit: that directory, or
 * NULL), as S3 Tables does at creation.
 */
static bool store_create_extras(struct call *c, const char *path, const char *inherit)
{
	yajl_val tags = json_get(c->body, "tags"), enc = json_get(c->body, "encryptionConfiguration");
	yajl_val from = NULL;
	bool ok = true;

	if (tags)
		ok = edit_attr(c, path, TAGS_XATTR, "the new resource", tags_merge, tags);
	if (ok && !enc && inherit)
		ok = read_attr(c, inherit, ENCRYPTION_XATTR, "the table bucket", &from);
	if (ok && (enc || from))
		ok = edit_attr(c, path, ENCRYPTION_XATTR, "the new resource", encryption_set,
			       enc ? enc : from);
	yajl_tree_free(from);
	return ok;
}

/* ---- routing ---- */

static void split_path(struct call *c)
{
	const char *p = c->q->raw_path;
	while (*p == '/' && c->nseg < SEGS_MAX) {
		const char *end = strchr(p + 1, '/');
		size_t len = end ? (size_t)(end - p - 1) : strlen(p + 1);
		buf b;
		buf_init(&b);
		if (!sigv4_pct_decode(p + 1, len, &b) || memchr(b.data ? b.data : "", 0, b.len)) {
			buf_free(&b);
			c->nseg = SEGS_MAX + 1; /* refused by the routes */
			return;
		}
		buf_append_byte(&b, '\0');
		c->seg[c->nseg++] = b.data;
		if (!end)
			break;
		p = end;
	}
	if (*p == '/' && c->nseg == SEGS_MAX)
		c->nseg = SEGS_MAX + 1;
}

int s3t_is_api_path(const char *raw_path)
{
	static const char *const roots[] = {"/buckets", "/namespaces", "/tables", "/get-table",
					    "/tag/", NULL};
	for (size_t i = 0; roots[i]; i++) {
		size_t n = strlen(roots[i]);
		if (!strncmp(raw_path, roots[i], n) &&
		    (raw_path[n] == '\0' || raw_path[n] == '/' || roots[i][n - 1] == '/'))
			return 1;
	}
	return 0;
}

/* The action of a table's operation op ("" for the table itself), as S3 Tables names it. */
static const char *table_action(struct call *c, const char *op)
{
	static const struct {
		const char *op, *put, *get, *del;
	} ops[] = {
		{"", NULL, NULL, "DeleteTable"},
		{"metadata-location", "UpdateTableMetadataLocation", "GetTableMetadataLocation", NULL},
		{"rename", "RenameTable", NULL, NULL},
		{"policy", "PutTablePolicy", "GetTablePolicy", "DeleteTablePolicy"},
		{"maintenance", "PutTableMaintenanceConfiguration", "GetTableMaintenanceConfiguration",
		 NULL},
		{"maintenance-job-status", NULL, "GetTableMaintenanceJobStatus", NULL},
		{"encryption", NULL, "GetTableEncryption", NULL},
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		const char *a = is(c, "PUT") ? ops[i].put : is(c, "DELETE") ? ops[i].del : ops[i].get;
		if (!strcmp(op, ops[i].op) && a)
			return a;
	}
	return "GetTable"; /* no such operation: answered 404 once allowed to look */
}

/* /tables/{arn}/{ns}/{name}[/op] */
static void route_table(struct call *c, const char *bucket)
{
	char *dir;
	const char *name = c->seg[3], *op = c->nseg > 4 ? c->seg[4] : "";

	if (!(dir = path_namespace(c, c->seg[2])))
		return;
	if (!valid_table(c, name) || !may(c, table_action(c, op), bucket, dir, name))
		goto out;
	if (c->nseg > 5 && strcmp(op, "maintenance"))
		fail(c, 404, "NotFoundException", "no such operation: %s %s", c->q->method,
		     c->q->raw_path);
	else if (!*op && is(c, "DELETE"))
		delete_table(c, bucket, dir, name);
	else if (!strcmp(op, "metadata-location") && is(c, "GET"))
		get_location(c, bucket, dir, name);
	else if (!strcmp(op, "metadata-location") && is(c, "PUT"))
		update_location(c, bucket, dir, name);
	else if (!strcmp(op, "rename") && is(c, "PUT"))
		rename_table(c, bucket, dir, name);
	else if (!strcmp(op, "policy") && !is(c, "POST") && c->nseg == 5)
		table_policy(c, bucket, dir, name);
	else if (!strcmp(op, "maintenance") || !strcmp(op, "maintenance-job-status") ||
		 !strcmp(op, "encryption"))
		table_settings(c, bucket, dir, name, op, c->nseg > 5 ? c->seg[5] : NULL);
	else
		fail(c, 404, "NotFoundException", "no such operation: %s %s", c->q->method,
		     c->q->raw_path);
out:
	free(dir);
}

static void route(struct call *c)
{
	const char *root = c->nseg ? c->seg[0] : "", *bucket = NULL;
	size_t n = c->nseg;

	if (n > SEGS_MAX)
		return bad(c, "the path is malformed");
	if (!strcmp(root, "buckets") && n == 1)
		return is(c, "PUT") ? create_bucket(c) : is(c, "GET") ? list_buckets(c) : (void)0;
	if (!strcmp(root, "get-table") && n == 1 && is(c, "GET"))
		return get_table(c);
	if (!strcmp(root, "tag") && n == 2)
		return tag_resource(c, c->seg[1]);
	if (n >= 2 && (!strcmp(root, "buckets") || !strcmp(root, "namespaces") ||
		       !strcmp(root, "tables")) &&
	    !(bucket = arn_bucket(c, c->seg[1])))
		return;
	if (!strcmp(root, "buckets") && n == 2) {
		if (is(c, "GET") && may(c, "GetTableBucket", bucket, NULL, NULL))
			return get_bucket(c, bucket);
		if (is(c, "DELETE") && may(c, "DeleteTableBucket", bucket, NULL, NULL))
			return delete_bucket(c, bucket);
		if (is(c, "GET") || is(c, "DELETE"))
			return;
	}
	if (!strcmp(root, "buckets") && n == 3 && !strcmp(c->seg[2], "policy") && !is(c, "POST"))
		return may_verb(c, "TableBucketPolicy", bucket, NULL, NULL)
			       ? bucket_policy(c, bucket)
			       : (void)0;
	if (!strcmp(root, "buckets") && n == 3 && !strcmp(c->seg[2], "encryption"))
		return may_verb(c, "TableBucketEncryption", bucket, NULL, NULL)
			       ? bucket_encryption(c, bucket)
			       : (void)0;
	if (!strcmp(root, "buckets") && (n == 3 || n == 4) && !strcmp(c->seg[2], "maintenance"))
		return may_verb(c, "TableBucketMaintenanceConfiguration", bucket, NULL, NULL)
			       ? bucket_maintenance(c, c->seg[1], bucket, n == 4 ? c->seg[3] : NULL)
			       : (void)0;
	if (!strcmp(root, "namespaces") && n == 2) {
		if (is(c, "PUT"))
			return may(c, "CreateNamespace", bucket, NULL, NULL)
				       ? create_namespace(c, c->seg[1], bucket)
				       : (void)0;
		if (is(c, "GET"))
			return may(c, "ListNamespaces", bucket, NULL, NULL)
				       ? list_namespaces(c, bucket)
				       : (void)0;
	}
	if (!strcmp(root, "namespaces") && n == 3) {
		char *dir = path_namespace(c, c->seg[2]);
		if (dir && is(c, "GET") && may(c, "GetNamespace", bucket, dir, NULL))
			get_namespace(c, bucket, dir);
		else if (dir && is(c, "DELETE") && may(c, "DeleteNamespace", bucket, dir, NULL))
			delete_namespace(c, bucket, dir);
		else if (dir && !is(c, "GET") && !is(c, "DELETE"))
			fail(c, 405, "MethodNotAllowedException", "no such operation");
		free(dir);
		return;
	}
	if (!strcmp(root, "tables") && n == 2 && is(c, "GET"))
		return may(c, "ListTables", bucket, NULL, NULL) ? list_tables(c, bucket) : (void)0;
	if (!strcmp(root, "tables") && n == 3 && is(c, "PUT")) {
		char *dir = path_namespace(c, c->seg[2]);
		if (dir && may(c, "CreateTable", bucket, dir, NULL))
			create_table(c, bucket, dir);
		free(dir);
		return;
	}
	if (!strcmp(root, "tables") && n >= 4 && n <= 6)
		return route_table(c, bucket);
	fail(c, 404, "NotFoundException", "no such operation: %s %s", c->q->method,
	     c->q->raw_path);
}

void s3t_handle(const struct s3t_env *env, const struct s3t_request *q, struct s3t_answer *a)
{
	struct call c = {.env = env, .q = q, .a = a};
	char msg[128];

	buf_init(&a->body);
	a->status = 0;
	a->error_type = NULL;
	if (q->body_len) {
		c.body = json_parse(q->body, q->body_len, msg, sizeof(msg));
		if (!YAJL_IS_OBJECT(c.body)) {
			fail(&c, 400, "BadRequestException", "the body is no JSON object: %s",
			     c.body ? "not an object" : msg);
			goto out;
		}
	}
	split_path(&c);
	route(&c);
	if (!a->status)
		fail(&c, 405, "MethodNotAllowedException", "no such operation: %s %s", q->method,
		     q->raw_path);
out:
	yajl_tree_free(c.body);
	for (size_t i = 0; i < c.nseg && i < SEGS_MAX; i++)
		free(c.seg[i]);
}
