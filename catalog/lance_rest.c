/* The Lance Namespace REST catalog: see lance_rest.h and docs/catalog.md. */
#include "config.h"
#include "catalog/lance_rest.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "catalog/lance_store.h"
#include "catalog/table_store.h"
#include "client/filer_meta.h"
#include "lib/jtree.h"
#include "lib/log.h"
#include "lib/util.h"

#define LIST_PAGE 1000 /* entries asked of the filer at a time */

/* One request being answered. */
struct call {
	const struct lance_env *env;
	const struct lance_request *q;
	struct lance_answer *a;
	struct lance_op op;
	size_t list_page; /* entries asked of the filer at a time (0: LIST_PAGE) */
	/* what the id names: bucket, the namespace's levels and directory, the table */
	const char *bucket;
	const char *levels[TS_NS_LEVELS_MAX];
	size_t nlev;
	char *ns;
	const char *table;
	char *state; /* the table's state attribute, as load_lance read it (NULL: none) */
};

/* ---- answers ---- */

void lance_error_body(buf *out, enum lance_code code, const char *message, const char *instance)
{
	char detail[64];
	json_w *w;

	buf_reset(out);
	snprintf(detail, sizeof(detail), "%s (code %d)", lance_code_name(code), (int)code);
	w = jw_new(out, false);
	jw_obj_begin(w);
	jw_kv_i64(w, "code", code);
	jw_kv_str(w, "error", message);
	jw_kv_str(w, "detail", detail);
	jw_kv_str(w, "instance", instance ? instance : "");
	jw_obj_end(w);
	jw_free(w);
}

static void fail(struct call *c, enum lance_code code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct call *c, enum lance_code code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->a->status = lance_code_status(code);
	lance_error_body(&c->a->body, code, msg, c->q->raw_path);
}

/* The answer to a filer error about what; missing is the code of ENOENT. */
static void fail_err(struct call *c, wfs_err err, enum lance_code missing, const char *what)
{
	switch (err) {
	case WFS_EINVAL:
		return fail(c, LANCE_INVALID_INPUT, "%s: invalid request", what);
	case WFS_ENOENT:
	case WFS_ENOTDIR:
		return fail(c, missing, "%s does not exist", what);
	case WFS_EEXIST:
		return fail(c, missing == LANCE_TABLE_NOT_FOUND ? LANCE_TABLE_EXISTS
								: LANCE_NAMESPACE_EXISTS,
			    "%s already exists", what);
	case WFS_ENOTEMPTY:
		return fail(c, LANCE_NAMESPACE_NOT_EMPTY, "%s is not empty", what);
	case WFS_EPRECOND:
		return fail(c, LANCE_CONCURRENT_MODIFICATION, "%s changed meanwhile; retry", what);
	case WFS_EPERM:
	case WFS_EACCES:
		return fail(c, LANCE_PERMISSION_DENIED, "%s: access denied", what);
	case WFS_EUNAVAIL:
	case WFS_ETIMEDOUT:
		return fail(c, LANCE_SERVICE_UNAVAILABLE, "%s: the filer is unavailable", what);
	default:
		fail(c, LANCE_INTERNAL, "%s: %s", what, wfs_strerror(err));
	}
}

/* Whether the caller may do S3 Tables' action; false answered (PermissionDenied). */
static bool may(struct call *c, const char *action, const char *bucket, const char *ns,
		const char *table)
{
	char msg[512] = "";
	if (catalog_may(c->q->authz, action, bucket, ns, table, msg, sizeof(msg)))
		return true;
	fail(c, LANCE_PERMISSION_DENIED, "%s", msg);
	return false;
}

/* The same, asked quietly: whether a listing shows the bucket. */
static bool sees(struct call *c, const char *action, const char *bucket)
{
	char msg[64];
	return catalog_may(c->q->authz, action, bucket, NULL, NULL, msg, sizeof(msg));
}

static json_w *answer(struct call *c)
{
	json_w *w;
	c->a->status = 200;
	buf_reset(&c->a->body);
	w = jw_new(&c->a->body, false);
	jw_obj_begin(w);
	return w;
}

static void done(json_w *w)
{
	jw_obj_end(w);
	jw_free(w);
}

static void answer_empty(struct call *c) { done(answer(c)); }

/* The id's text for messages (caller frees). */
static char *id_text(const struct call *c)
{
	return lance_id_join(&c->op.id, 0, c->op.delim);
}

/* ---- what an id names ---- */

/* The bucket (part 0) and namespace levels (parts 1..to-1) of the id into c; false answered. */
static bool map_id(struct call *c, size_t to)
{
	char why[TS_WHY_MAX];
	const struct lance_id *id = &c->op.id;

	c->bucket = id->parts[0];
	if (!ts_valid_bucket_name(c->bucket, why)) {
		fail(c, LANCE_INVALID_INPUT, "invalid table bucket name: %s", why);
		return false;
	}
	if (to - 1 > TS_NS_LEVELS_MAX) {
		fail(c, LANCE_INVALID_INPUT, "a namespace has at most %d levels", TS_NS_LEVELS_MAX);
		return false;
	}
	c->nlev = 0;
	for (size_t i = 1; i < to; i++) {
		if (!ts_valid_namespace_name(id->parts[i], why)) {
			fail(c, LANCE_INVALID_INPUT, "invalid namespace level: %s", why);
			return false;
		}
		c->levels[c->nlev++] = id->parts[i];
	}
	if (c->nlev && !(c->ns = ts_namespace_dir(c->levels, c->nlev, why))) {
		/* valid levels may still be too long together: no namespace, not the bucket */
		fail(c, LANCE_INVALID_INPUT, "invalid namespace: %s", why);
		return false;
	}
	return true;
}

/* A table's id ($bucket$ns...$table) into c; false answered. */
static bool map_table(struct call *c)
{
	char why[TS_WHY_MAX];
	if (c->op.id.n < 3) {
		fail(c, LANCE_INVALID_INPUT,
		     "a table id is <table bucket>%s<namespace>...%s<table>", c->op.delim,
		     c->op.delim);
		return false;
	}
	if (!map_id(c, c->op.id.n - 1))
		return false;
	c->table = c->op.id.parts[c->op.id.n - 1];
	if (!ts_valid_table_name(c->table, why)) {
		fail(c, LANCE_INVALID_INPUT, "invalid table name: %s", why);
		return false;
	}
	return true;
}

static char *bucket_path(const char *bucket) { return xasprintf(TS_BUCKETS_DIR "/%s", bucket); }

static char *ns_path(const struct call *c)
{
	return xasprintf(TS_BUCKETS_DIR "/%s/%s", c->bucket, c->ns);
}

/* The table bucket of c; false answered (NamespaceNotFound) when there is none. */
static bool get_bucket(struct call *c, struct ts_bucket *b)
{
	wfs_err err = ts_bucket_get(c->env->rpc, c->bucket, b);
	if (err)
		fail_err(c, err, LANCE_NAMESPACE_NOT_FOUND, "the table bucket");
	return !err;
}

/* The namespace entry of c (bucket, ns) when it is one; WFS_ENOENT when not. */
static wfs_err ns_entry(struct call *c, struct filer_entry **e)
{
	char *path = ns_path(c);
	wfs_err err = filer_meta_lookup(c->env->rpc, path, e);
	free(path);
	if (!err && (!S_ISDIR((*e)->attr.mode) || !filer_entry_xattr_get(*e, TS_XATTR_NAMESPACE)))
		err = WFS_ENOENT;
	if (err) {
		filer_entry_free(*e);
		*e = NULL;
	}
	return err;
}

/* Whether c's namespace exists; false answered. */
static bool check_namespace(struct call *c)
{
	struct filer_entry *e = NULL;
	wfs_err err = ns_entry(c, &e);
	filer_entry_free(e);
	if (err)
		fail_err(c, err, LANCE_NAMESPACE_NOT_FOUND, "the namespace");
	return !err;
}

/* The properties of an entry: its stored object, or {} when it has none. */
static jt *entry_properties(const struct filer_entry *e)
{
	const struct filer_xattr *x = e ? filer_entry_xattr_get(e, TS_XATTR_PROPERTIES) : NULL;
	char msg[64];
	jt *v = x ? jt_parse((const char *)x->value, x->value_len, msg, sizeof(msg)) : NULL;
	if (!jt_is(v, JT_OBJ)) {
		jt_free(v);
		v = jt_obj();
	}
	return v;
}

/* Stores props (NULL or empty: none) on the entry at path. */
static wfs_err set_properties(struct call *c, const char *path, const jt *props)
{
	wfs_err err;
	buf b;
	if (!jt_len(props)) {
		err = filer_meta_remove_xattr(c->env->rpc, path, TS_XATTR_PROPERTIES);
		return err == WFS_ENODATA ? WFS_OK : err;
	}
	buf_init(&b);
	jt_to_buf(props, &b, false);
	err = filer_meta_set_xattr(c->env->rpc, path, TS_XATTR_PROPERTIES, b.data, b.len,
				   FM_XATTR_ANY);
	buf_free(&b);
	return err;
}

static void write_properties(json_w *w, const jt *props)
{
	jw_key(w, "properties");
	if (props) {
		jt_write(props, w);
	} else {
		jw_obj_begin(w);
		jw_obj_end(w);
	}
}

/* ---- listing pages ---- */

/*
 * A page of a listing: names added in order up to op.limit; once full, the
 * next name that would be added only says there is more.
 */
struct page {
	json_w *w;
	size_t count, limit;
	char *last; /* the token of the last name added */
	bool cut;
};

/* Adds name (token: where the next page starts after it); false once the page is full. */
static bool page_add(struct page *p, const char *name, const char *token)
{
	if (p->count == p->limit) {
		p->cut = true;
		return false;
	}
	jw_str(p->w, name);
	p->count++;
	free(p->last);
	p->last = xstrdup(token);
	return true;
}

static void page_begin(struct call *c, struct page *p, const char *key)
{
	memset(p, 0, sizeof(*p));
	p->limit = c->op.limit;
	/* the page and the one entry that tells there is more: a listing costs its page */
	c->list_page = p->limit + 1 < LIST_PAGE ? p->limit + 1 : LIST_PAGE;
	p->w = answer(c);
	jw_key(p->w, key);
	jw_arr_begin(p->w);
}

static void page_end(struct page *p)
{
	jw_arr_end(p->w);
	if (p->cut && p->last) /* limit 0 is an empty page without a token */
		jw_kv_str(p->w, "page_token", p->last);
	done(p->w);
	free(p->last);
}

/*
 * Calls each(e) for the entries of dir from `from` on (itself too when
 * inclusive) whose names start with prefix, while it answers true.
 */
typedef bool (*entry_fn)(struct call *c, const struct filer_entry *e, void *arg);
static wfs_err walk_entries(struct call *c, const char *dir, const char *from, bool inclusive,
			    const char *prefix, entry_fn each, void *arg)
{
	char *at = xstrdup(from ? from : "");
	bool more = true, go = true;
	wfs_err err = WFS_OK;

	while (more && go && !err) {
		struct filer_meta_page p = {0};
		err = filer_meta_list_from(c->env->rpc, dir, at, inclusive, prefix,
					   c->list_page ? c->list_page : LIST_PAGE, &p);
		inclusive = false;
		more = !err && p.more && p.n;
		for (size_t i = 0; !err && go && i < p.n; i++) {
			free(at);
			at = xstrdup(p.entries[i]->name);
			go = each(c, p.entries[i], arg);
		}
		filer_meta_page_free(&p);
	}
	free(at);
	return err;
}

/* The same after from (exclusive). */
static wfs_err each_entry(struct call *c, const char *dir, const char *from, const char *prefix,
			  entry_fn each, void *arg)
{
	return walk_entries(c, dir, from, false, prefix, each, arg);
}

/* ---- namespaces ---- */

static bool list_bucket(struct call *c, const struct filer_entry *e, void *arg)
{
	struct page *p = arg;
	if (!S_ISDIR(e->attr.mode) || !filer_entry_xattr_get(e, TS_XATTR_BUCKET) ||
	    !sees(c, "GetTableBucket", e->name))
		return true;
	return page_add(p, e->name, e->name);
}

struct ns_walk {
	struct page *p;
	size_t depth; /* levels of the parent */
};

static bool list_child(struct call *c, const struct filer_entry *e, void *arg)
{
	struct ns_walk *nw = arg;
	const char *dot = e->name;
	size_t levels = 1;

	(void)c;
	if (!S_ISDIR(e->attr.mode) || !filer_entry_xattr_get(e, TS_XATTR_NAMESPACE))
		return true;
	for (const char *s = e->name; *s; s++)
		if (*s == '.') {
			levels++;
			dot = s + 1;
		}
	if (levels != nw->depth + 1)
		return true; /* a grandchild: levels live side by side, "a.b.c" */
	return page_add(nw->p, dot, e->name);
}

static void list_namespaces(struct call *c)
{
	struct page p;
	wfs_err err;
	size_t n = c->op.id.n;

	if (n == 0) {
		/* the root: the buckets the caller may see, however few */
		page_begin(c, &p, "namespaces");
		err = each_entry(c, TS_BUCKETS_DIR, c->op.page_token, NULL, list_bucket, &p);
		if (err == WFS_ENOENT)
			err = WFS_OK; /* no bucket yet */
	} else {
		struct ts_bucket b = {0};
		struct ns_walk nw = {&p, c->nlev};
		char *dir = bucket_path(c->bucket), *prefix = c->ns ? xasprintf("%s.", c->ns) : NULL;
		bool ok = get_bucket(c, &b) && may(c, "ListNamespaces", c->bucket, NULL, NULL) &&
			  (!c->ns || check_namespace(c));
		ts_bucket_free(&b);
		if (!ok) {
			free(dir);
			free(prefix);
			return;
		}
		page_begin(c, &p, "namespaces");
		err = each_entry(c, dir, c->op.page_token, prefix, list_child, &nw);
		free(dir);
		free(prefix);
	}
	page_end(&p);
	if (err)
		fail_err(c, err, LANCE_NAMESPACE_NOT_FOUND, "the namespace");
}

/* Whether c's namespace (or bucket, one part) exists; its entry; false answered. */
static bool find_namespace(struct call *c, const char *action, struct filer_entry **e)
{
	wfs_err err;
	*e = NULL;
	if (c->op.id.n == 0)
		return true; /* the root always exists */
	if (c->op.id.n == 1) {
		char *path = bucket_path(c->bucket);
		err = filer_meta_lookup(c->env->rpc, path, e);
		free(path);
		if (!err && !filer_entry_xattr_get(*e, TS_XATTR_BUCKET))
			err = WFS_ENOENT;
	} else {
		err = ns_entry(c, e);
	}
	if (err) {
		filer_entry_free(*e);
		*e = NULL;
		fail_err(c, err, LANCE_NAMESPACE_NOT_FOUND,
			 c->op.id.n == 1 ? "the table bucket" : "the namespace");
		return false;
	}
	return may(c, action, c->bucket, c->ns, NULL);
}

static void describe_namespace(struct call *c)
{
	struct filer_entry *e = NULL;
	if (find_namespace(c, c->op.id.n == 1 ? "GetTableBucket" : "GetNamespace", &e)) {
		json_w *w = answer(c);
		jt *props = entry_properties(e);
		write_properties(w, props);
		jt_free(props);
		done(w);
	}
	filer_entry_free(e);
}

static void namespace_exists(struct call *c)
{
	struct filer_entry *e = NULL;
	if (find_namespace(c, c->op.id.n == 1 ? "GetTableBucket" : "GetNamespace", &e))
		c->a->status = 204;
	filer_entry_free(e);
}

/* Deletes every table entry of the namespace directory dir (a cascade). */
static bool drop_table_entry(struct call *c, const struct filer_entry *e, void *arg)
{
	wfs_err *err = arg;
	const struct filer_xattr *x = filer_entry_xattr_get(e, TS_XATTR_TABLE);
	if (S_ISDIR(e->attr.mode) && x && !ts_is_storage(x))
		*err = ts_table_delete(c->env->rpc, c->bucket, c->ns, e->name, NULL);
	return !*err;
}

/* Drops the namespace directory nsdir of c's bucket with its tables. */
static wfs_err drop_namespace_dir(struct call *c, const char *nsdir)
{
	char *saved = c->ns, *path;
	wfs_err err = WFS_OK, walk;

	c->ns = (char *)nsdir;
	path = ns_path(c);
	walk = each_entry(c, path, NULL, NULL, drop_table_entry, &err);
	c->ns = saved;
	if (!err)
		err = walk;
	if (!err)
		err = filer_meta_delete(c->env->rpc, path, true); /* deregistered datasets too */
	free(path);
	return err == WFS_ENOENT ? WFS_OK : err;
}

struct ns_names {
	char **names;
	size_t n;
};

static bool collect_namespace(struct call *c, const struct filer_entry *e, void *arg)
{
	struct ns_names *all = arg;
	(void)c;
	if (S_ISDIR(e->attr.mode) && filer_entry_xattr_get(e, TS_XATTR_NAMESPACE)) {
		all->names = xrealloc(all->names, (all->n + 1) * sizeof(*all->names));
		all->names[all->n++] = xstrdup(e->name);
	}
	return true;
}

/*
 * The namespaces below c's (its children at every depth, or with no
 * namespace every namespace of the bucket); deepest first.
 */
static wfs_err namespaces_below(struct call *c, struct ns_names *all)
{
	char *dir = bucket_path(c->bucket), *prefix = c->ns ? xasprintf("%s.", c->ns) : NULL;
	wfs_err err = each_entry(c, dir, NULL, prefix, collect_namespace, all);
	free(dir);
	free(prefix);
	/* "a.b" sorts before "a.b.c": backwards, children come before parents */
	for (size_t i = 0; i < all->n / 2; i++) {
		char *t = all->names[i];
		all->names[i] = all->names[all->n - 1 - i];
		all->names[all->n - 1 - i] = t;
	}
	return err;
}

static void free_names(struct ns_names *all)
{
	for (size_t i = 0; i < all->n; i++)
		free(all->names[i]);
	free(all->names);
	memset(all, 0, sizeof(*all));
}

/* Empties c's namespace or bucket for a cascade: tables and namespaces below. */
static wfs_err drop_contents(struct call *c)
{
	struct ns_names all = {0};
	wfs_err err = namespaces_below(c, &all);
	for (size_t i = 0; !err && i < all.n; i++)
		err = drop_namespace_dir(c, all.names[i]);
	free_names(&all);
	if (!err && c->ns) {
		/* the namespace's own tables; its directory stays for the delete */
		char *path = ns_path(c);
		wfs_err walk = each_entry(c, path, NULL, NULL, drop_table_entry, &err);
		free(path);
		if (!err)
			err = walk;
	}
	return err;
}

/* Restrict: whether c's namespace holds a namespace below it. */
static wfs_err has_children(struct call *c, bool *yes)
{
	struct ns_names all = {0};
	wfs_err err = namespaces_below(c, &all);
	*yes = all.n > 0;
	free_names(&all);
	return err;
}

/* Drops c's namespace (or bucket); the answer on failure, WFS_OK or the error. */
static wfs_err remove_namespace(struct call *c)
{
	wfs_err err = WFS_OK;
	bool below = false;

	if (c->op.cascade)
		err = drop_contents(c);
	else if (c->ns && !(err = has_children(c, &below)) && below)
		err = WFS_ENOTEMPTY;
	if (!err && c->op.cascade && c->ns) {
		char *path = ns_path(c);
		err = filer_meta_delete(c->env->rpc, path, true);
		free(path);
	} else if (!err) {
		err = c->ns ? ts_namespace_delete(c->env->rpc, c->bucket, c->ns)
			    : ts_bucket_delete(c->env->rpc, c->bucket);
	}
	return err;
}

static void drop_namespace(struct call *c)
{
	struct filer_entry *e = NULL;
	const char *what = c->op.id.n == 1 ? "the table bucket" : "the namespace";
	wfs_err err;

	if (c->op.id.n == 0)
		return fail(c, LANCE_INVALID_INPUT, "the root namespace cannot be dropped");
	if (!find_namespace(c, c->op.id.n == 1 ? "DeleteTableBucket" : "DeleteNamespace", &e)) {
		if (c->a->status == 404 && c->op.drop_mode == LD_SKIP)
			answer_empty(c); /* Skip: a missing namespace is dropped already */
		return;
	}
	filer_entry_free(e);
	err = remove_namespace(c);
	if (err == WFS_ENOTEMPTY)
		return fail(c, LANCE_NAMESPACE_NOT_EMPTY,
			    "%s is not empty: drop its tables and namespaces first, or use "
			    "behavior Cascade", what);
	if (err)
		return fail_err(c, err, LANCE_NAMESPACE_NOT_FOUND, what);
	answer_empty(c);
}

/* Makes c's namespace or (one part) table bucket; the filer's answer. */
static wfs_err make_namespace(struct call *c)
{
	struct filer_entry *parent = NULL;
	wfs_err err;

	if (c->op.id.n == 1)
		return ts_bucket_create(c->env->rpc, c->bucket, c->env->region, c->env->account,
					LANCE_FORMAT, NULL);
	if (c->nlev > 1) {
		/* the parent first: a namespace never appears below a missing one */
		char *saved = c->ns, why[TS_WHY_MAX];
		c->ns = ts_namespace_dir(c->levels, c->nlev - 1, why);
		err = ns_entry(c, &parent);
		filer_entry_free(parent);
		free(c->ns);
		c->ns = saved;
		if (err)
			return err == WFS_ENOENT ? WFS_ENOTDIR : err;
	}
	return ts_namespace_create(c->env->rpc, c->bucket, c->levels, c->nlev, c->q->caller,
				   c->env->account, NULL);
}

static void create_namespace(struct call *c)
{
	bool bucket = c->op.id.n == 1;
	const char *what = bucket ? "the table bucket" : "the namespace";
	char *path;
	wfs_err err;

	if (c->op.id.n == 0)
		return fail(c, LANCE_INVALID_INPUT, "the root namespace always exists");
	if (bucket ? !may(c, "CreateTableBucket", c->bucket, NULL, NULL)
		   : !may(c, "CreateNamespace", c->bucket, c->ns, NULL))
		return;
	err = make_namespace(c);
	if (err == WFS_EEXIST && c->op.mode == LM_OVERWRITE) {
		/* Overwrite: the namespace is dropped with everything in it, then made anew */
		struct filer_entry *e = NULL;
		bool there = find_namespace(c, bucket ? "DeleteTableBucket" : "DeleteNamespace", &e);
		filer_entry_free(e);
		if (!there)
			return; /* no table bucket of that name (a plain S3 bucket?), or not allowed */
		c->op.cascade = true;
		err = remove_namespace(c);
		if (!err)
			err = make_namespace(c);
	} else if (err == WFS_EEXIST && c->op.mode == LM_EXIST_OK) {
		return describe_namespace(c);
	}
	if (err == WFS_ENOTDIR)
		return fail(c, LANCE_NAMESPACE_NOT_FOUND, "the parent namespace does not exist");
	if (err == WFS_ENOENT && !bucket)
		return fail(c, LANCE_NAMESPACE_NOT_FOUND, "table bucket %s does not exist",
			    c->bucket);
	if (err)
		return fail_err(c, err, LANCE_NAMESPACE_NOT_FOUND, what);
	path = bucket ? bucket_path(c->bucket) : ns_path(c);
	err = set_properties(c, path, c->op.properties);
	free(path);
	if (err)
		return fail_err(c, err, LANCE_NAMESPACE_NOT_FOUND, what);
	{
		json_w *w = answer(c);
		write_properties(w, c->op.properties);
		done(w);
	}
}

/* ---- tables ---- */

/*
 * c's bucket and namespace, for a table being made: the bucket must take
 * Lance tables (LANCE, or undeclared); false answered.
 */
static bool lance_home(struct call *c)
{
	struct ts_bucket b = {0};
	bool ok = get_bucket(c, &b);
	if (ok && b.format && strcmp(b.format, LANCE_FORMAT)) {
		fail(c, LANCE_INVALID_INPUT, "table bucket %s is a %s bucket: no Lance tables",
		     c->bucket, b.format);
		ok = false;
	}
	ts_bucket_free(&b);
	return ok && check_namespace(c);
}

/*
 * The Lance table of c, and its properties into *props (NULL: not wanted)
 * from the same lookup; false answered (TableNotFound: none, or another
 * format's entry).
 */
static bool load_lance(struct call *c, struct ts_table *t, jt **props)
{
	struct filer_entry *e = NULL;
	wfs_err err = ts_table_get_entry(c->env->rpc, c->bucket, c->ns, c->table, t, &e);
	const struct filer_xattr *st = err ? NULL : filer_entry_xattr_get(e, TS_XATTR_LANCE);
	if (props)
		*props = err ? NULL : entry_properties(e);
	free(c->state);
	c->state = st ? xstrndup((const char *)st->value, st->value_len) : NULL;
	filer_entry_free(e);
	if (!err && strcmp(t->format, LANCE_FORMAT)) {
		char *id = id_text(c);
		fail(c, LANCE_TABLE_NOT_FOUND, "%s is an %s entry, not a Lance table", id,
		     t->format);
		free(id);
		return false;
	}
	if (err == WFS_ENOENT) {
		/* TableNotFound all the same (clients' exists checks take only that), but a
		   missing namespace is said */
		struct filer_entry *ne = NULL;
		wfs_err ns_err = ns_entry(c, &ne);
		filer_entry_free(ne);
		if (ns_err == WFS_ENOENT) {
			fail(c, LANCE_TABLE_NOT_FOUND, "the table does not exist: namespace %s of "
			     "table bucket %s does not exist either", c->ns, c->bucket);
			return false;
		}
	}
	if (err)
		fail_err(c, err, LANCE_TABLE_NOT_FOUND, "the table");
	return !err;
}

/* The table's own location s3://<bucket>/<ns>/<table> (caller frees). */
static char *own_location(const struct call *c)
{
	return xasprintf("s3://%s/%s/%s", c->bucket, c->ns, c->table);
}

/*
 * Whether location (given by the client) names the table's directory, with
 * or without a trailing '/'; false answered.
 */
static bool location_ok(struct call *c, const char *location, const char *own)
{
	size_t n = strlen(own);
	if (strpbrk(location, "*?")) {
		fail(c, LANCE_INVALID_INPUT, "a location may not hold '*' or '?'");
		return false;
	}
	if (!strncmp(location, own, n) && (!location[n] || !strcmp(location + n, "/")))
		return true;
	fail(c, LANCE_INVALID_INPUT,
	     "a table's location is its directory %s (tables live at "
	     "s3://<table bucket>/<namespace>/<table>)",
	     own);
	return false;
}

/*
 * The storage_options object: where the gateway is, and with
 * vend_credentials session keys for the table's prefix. false with msg when
 * none can be vended (w is then mid-object: the caller drops the answer).
 */
static bool storage_options(struct call *c, json_w *w, const char *location, char *msg,
			    size_t msglen)
{
	const char *ep = c->env->s3_endpoint;
	bool ok = true;

	jw_key(w, "storage_options");
	jw_obj_begin(w);
	if (ep)
		jw_kv_str(w, "aws_endpoint", ep);
	jw_kv_str(w, "aws_region", c->env->region);
	if (ep && !strncmp(ep, "http://", 7))
		jw_kv_str(w, "allow_http", "true");
	if (!c->q->vend) {
		/* an open catalog's gateway is open too (one identities file): unsigned
		   requests do, and the client does not go looking for credentials */
		jw_kv_str(w, "aws_skip_signature", "true");
	} else if (c->op.vend_credentials) {
		const char *key = location + 5; /* after s3:// */
		char *bucket = xstrndup(key, strcspn(key, "/"));
		char *prefix = xasprintf("%s/", key + strlen(bucket) + 1);
		if (strpbrk(location, "*?")) {
			snprintf(msg, msglen, "the location holds '*' or '?'");
			ok = false;
		} else {
			ok = c->q->vend->mint(c->q->vend->ctx, bucket, prefix, w, msg, msglen);
		}
		free(bucket);
		free(prefix);
	}
	jw_obj_end(w);
	return ok;
}

/* The answer {location, storage_options, properties, managed_versioning}; false answered. */
static void table_answer(struct call *c, const char *location, const jt *props)
{
	char msg[256] = "";
	json_w *w = answer(c);
	jw_kv_str(w, "location", location);
	if (!storage_options(c, w, location, msg, sizeof(msg))) {
		jw_free(w);
		return fail(c, LANCE_PERMISSION_DENIED, "no credentials are vended for %s: %s",
			    location, msg);
	}
	write_properties(w, props);
	jw_kv_bool(w, "managed_versioning", false);
	done(w);
}

/*
 * Records a state of the table entry at path whose dataset is at location:
 * the attribute and the marker files (reserved or deregistered).
 */
static wfs_err record_state(struct call *c, const char *path, const char *location,
			    const char *state)
{
	wfs_err err = lance_state_set(c->env->rpc, path, state);
	if (!err)
		err = lance_marker(c->env->files, location, LANCE_MARK_DEREG,
				   !strcmp(state, LANCE_DEREGISTERED));
	if (!err)
		err = lance_marker(c->env->files, location, LANCE_MARK_RESERVED,
				   !strcmp(state, LANCE_DECLARED));
	return err;
}

/* The same for c's table. */
static wfs_err set_state(struct call *c, const char *location, const char *state)
{
	char *path = ts_table_path(c->bucket, c->ns, c->table);
	wfs_err err = record_state(c, path, location, state);
	free(path);
	return err;
}

/*
 * A declared table a client has committed a version to is created: the
 * catalog has no hook on the S3 write, so it records that when it first sees
 * the version (a describe that reads the versions, a listing that leaves out
 * declared tables), then answers from the attribute. Best effort: a failure
 * only leaves the work to the next reader.
 */
static void note_created(struct call *c, const char *bucket, const char *ns, const char *name,
			 const char *location)
{
	char *path = ts_table_path(bucket, ns, name);
	wfs_err err = record_state(c, path, location, LANCE_CREATED);
	if (err)
		log_warn("lance: recording %s created: %s", path, wfs_strerror(err));
	free(path);
}

/* Whether c's table directory is the storage a renamed table left behind. */
static bool renamed_storage(struct call *c)
{
	struct filer_entry *e = NULL;
	char *path = ts_table_path(c->bucket, c->ns, c->table);
	bool yes = filer_meta_lookup(c->env->rpc, path, &e) == WFS_OK &&
		   ts_is_storage(filer_entry_xattr_get(e, TS_XATTR_TABLE));
	filer_entry_free(e);
	free(path);
	return yes;
}

/* Makes the table entry (format LANCE) with its properties; false answered. */
static bool make_table(struct call *c, struct ts_table *t)
{
	char *path;
	wfs_err err = ts_table_create(c->env->rpc, c->env->region, c->bucket, c->ns, c->table,
				      LANCE_FORMAT, c->q->caller, c->env->account, t);
	if (err == WFS_EEXIST) {
		char *id = id_text(c);
		fail(c, LANCE_TABLE_EXISTS, "table %s already exists%s", id,
		     renamed_storage(c) ? ": its directory holds the files of a table renamed "
					  "from that name"
					: "");
		free(id);
		return false;
	}
	if (err) {
		fail_err(c, err, LANCE_TABLE_NOT_FOUND, "the table");
		return false;
	}
	path = ts_table_path(c->bucket, c->ns, c->table);
	err = set_properties(c, path, c->op.properties);
	free(path);
	if (err) {
		ts_table_delete(c->env->rpc, c->bucket, c->ns, c->table, NULL);
		fail_err(c, err, LANCE_TABLE_NOT_FOUND, "the table");
	}
	return !err;
}

static void declare_table(struct call *c)
{
	struct ts_table t = {0};
	char *own = own_location(c);
	wfs_err err;

	if (!may(c, "CreateTable", c->bucket, c->ns, NULL) || !lance_home(c) ||
	    (c->op.location && !location_ok(c, c->op.location, own)) || !make_table(c, &t))
		goto out;
	err = set_state(c, t.warehouse, LANCE_DECLARED);
	if (err) {
		ts_table_delete(c->env->rpc, c->bucket, c->ns, c->table, NULL);
		fail_err(c, err, LANCE_TABLE_NOT_FOUND, "the table");
		goto out;
	}
	table_answer(c, t.warehouse, c->op.properties);
out:
	ts_table_free(&t);
	free(own);
}

static void register_table(struct call *c)
{
	struct ts_table t = {0};
	char *own = own_location(c);
	uint64_t latest;
	bool any = false, made = false;
	wfs_err err;

	if (!may(c, "CreateTable", c->bucket, c->ns, NULL) || !lance_home(c))
		goto out;
	if (!c->op.location) {
		fail(c, LANCE_INVALID_INPUT, "RegisterTable needs the dataset's location");
		goto out;
	}
	if (!location_ok(c, c->op.location, own))
		goto out;
	err = lance_latest_version(c->env->rpc, own, &latest, &any);
	if (err || !any) {
		if (err)
			fail_err(c, err, LANCE_TABLE_NOT_FOUND, "the dataset");
		else
			fail(c, LANCE_INVALID_INPUT, "no Lance dataset is at %s (_versions/ holds "
			     "no manifest)", own);
		goto out;
	}
	err = ts_table_get(c->env->rpc, c->bucket, c->ns, c->table, &t);
	if (!err && c->op.mode == LM_OVERWRITE && !strcmp(t.format, LANCE_FORMAT)) {
		/* Overwrite: the registration (properties, state) is replaced */
		char *path = ts_table_path(c->bucket, c->ns, c->table);
		err = set_properties(c, path, c->op.properties);
		free(path);
		if (err) {
			fail_err(c, err, LANCE_TABLE_NOT_FOUND, "the table");
			goto out;
		}
	} else {
		ts_table_free(&t);
		if (!make_table(c, &t)) /* a deregistered table's directory is adopted: an undrop */
			goto out;
		made = true;
	}
	err = set_state(c, t.warehouse, LANCE_REGISTERED);
	if (err) {
		if (made)
			ts_table_forget(c->env->rpc, c->bucket, c->ns, c->table, NULL);
		fail_err(c, err, LANCE_TABLE_NOT_FOUND, "the table");
		goto out;
	}
	{
		json_w *w = answer(c);
		jw_kv_str(w, "location", t.warehouse);
		write_properties(w, c->op.properties);
		done(w);
	}
out:
	ts_table_free(&t);
	free(own);
}

static void describe_table(struct call *c)
{
	struct ts_table t = {0};
	bool detailed = c->op.load_detailed_metadata, any = false;
	uint64_t version = 0;
	char msg[256] = "";
	wfs_err err = WFS_OK;
	jt *props = NULL;
	json_w *w;

	if (!may(c, "GetTable", c->bucket, c->ns, c->table) || !load_lance(c, &t, &props))
		goto out;
	if (c->op.has_version) {
		err = lance_version_exists(c->env->rpc, t.warehouse, c->op.version, &any);
		version = c->op.version;
		if (!err && !any) {
			fail(c, LANCE_TABLE_VERSION_NOT_FOUND, "version %llu of the table does not "
			     "exist", (unsigned long long)c->op.version);
			goto out;
		}
	} else if (detailed || c->op.check_declared) {
		/* the version and the declared state are read; a plain describe stays one lookup */
		err = lance_latest_version(c->env->rpc, t.warehouse, &version, &any);
		if (!err && any && c->state && !strcmp(c->state, LANCE_DECLARED))
			note_created(c, c->bucket, c->ns, c->table, t.warehouse);
	}
	if (err) {
		fail_err(c, err, LANCE_TABLE_NOT_FOUND, "the table's versions");
		goto out;
	}
	w = answer(c);
	if (detailed) {
		jw_kv_str(w, "table", c->table);
		jw_key(w, "namespace");
		jw_arr_begin(w);
		for (size_t i = 0; i + 1 < c->op.id.n; i++)
			jw_str(w, c->op.id.parts[i]);
		jw_arr_end(w);
	}
	if ((detailed || c->op.has_version) && any)
		jw_kv_u64(w, "version", version);
	jw_kv_str(w, "location", t.warehouse);
	if (c->op.with_table_uri)
		jw_kv_str(w, "table_uri", t.warehouse);
	if (!storage_options(c, w, t.warehouse, msg, sizeof(msg))) {
		jw_free(w);
		fail(c, LANCE_PERMISSION_DENIED, "no credentials are vended for %s: %s",
		     t.warehouse, msg);
		goto out;
	}
	write_properties(w, props);
	jw_kv_bool(w, "managed_versioning", false);
	if ((detailed || c->op.check_declared) && !c->op.has_version)
		jw_kv_bool(w, "is_only_declared", !any);
	done(w);
out:
	jt_free(props);
	ts_table_free(&t);
}

static void table_exists(struct call *c)
{
	struct ts_table t = {0};
	if (may(c, "GetTable", c->bucket, c->ns, c->table) && load_lance(c, &t, NULL))
		c->a->status = 204;
	ts_table_free(&t);
}

/* The answer {id, location, properties} of a deregister or drop. */
static void gone_answer(struct call *c, const char *location, const jt *props)
{
	json_w *w = answer(c);
	jw_key(w, "id");
	jw_arr_begin(w);
	for (size_t i = 0; i < c->op.id.n; i++)
		jw_str(w, c->op.id.parts[i]);
	jw_arr_end(w);
	jw_kv_str(w, "location", location);
	write_properties(w, props);
	done(w);
}

/*
 * Deregister (keep_data: the catalog forgets the table, its dataset stays,
 * marked) or drop (the directory and its data go).
 */
static void remove_table(struct call *c, bool keep_data)
{
	struct ts_table t = {0};
	jt *props = NULL;
	wfs_err err;

	if (!may(c, "DeleteTable", c->bucket, c->ns, c->table) || !load_lance(c, &t, &props))
		goto out;
	if (keep_data) {
		err = ts_table_forget(c->env->rpc, c->bucket, c->ns, c->table, t.version_token);
		if (!err)
			err = set_state(c, t.warehouse, LANCE_DEREGISTERED);
	} else {
		err = ts_table_delete(c->env->rpc, c->bucket, c->ns, c->table, t.version_token);
	}
	if (err) {
		fail_err(c, err, LANCE_TABLE_NOT_FOUND, "the table");
		goto out;
	}
	gone_answer(c, t.warehouse, props);
out:
	jt_free(props);
	ts_table_free(&t);
}

static void rename_table(struct call *c)
{
	const struct lance_id *to = &c->op.new_namespace;
	struct ts_table t = {0};
	char why[TS_WHY_MAX], *to_ns = NULL;
	const char *levels[TS_NS_LEVELS_MAX];
	wfs_err err;

	if (!c->op.new_table_name || !ts_valid_table_name(c->op.new_table_name, why)) {
		fail(c, LANCE_INVALID_INPUT, "new_table_name: %s",
		     c->op.new_table_name ? why : "missing");
		return;
	}
	if (c->op.has_new_namespace) {
		if (to->n < 2 || to->n - 1 > TS_NS_LEVELS_MAX || strcmp(to->parts[0], c->bucket))
			return fail(c, LANCE_INVALID_INPUT,
				    "new_namespace_id is a namespace of the same table bucket "
				    "([\"%s\", level, ...])", c->bucket);
		for (size_t i = 1; i < to->n; i++)
			levels[i - 1] = to->parts[i];
		if (!(to_ns = ts_namespace_dir(levels, to->n - 1, why)))
			return fail(c, LANCE_INVALID_INPUT, "new_namespace_id: %s", why);
	}
	if (!may(c, "RenameTable", c->bucket, c->ns, c->table) || !load_lance(c, &t, NULL))
		goto out;
	err = ts_table_rename(c->env->rpc, c->bucket, c->ns, c->table, to_ns ? to_ns : c->ns,
			      c->op.new_table_name, t.version_token);
	if (err == WFS_EEXIST)
		fail(c, LANCE_TABLE_EXISTS, "table %s already exists there", c->op.new_table_name);
	else if (err == WFS_ENOENT && to_ns)
		fail(c, LANCE_NAMESPACE_NOT_FOUND, "the new namespace does not exist");
	else if (err)
		fail_err(c, err, LANCE_TABLE_NOT_FOUND, "the table");
	else
		answer_empty(c);
out:
	ts_table_free(&t);
	free(to_ns);
}

/* ---- table lists ---- */

/*
 * Whether the table entry e is listed: a Lance table (not a renamed one's
 * storage), and with include_declared false one with a version.
 */
static bool listed_table(struct call *c, const struct filer_entry *e, const char *bucket,
			 const char *ns)
{
	const struct filer_xattr *x = filer_entry_xattr_get(e, TS_XATTR_TABLE);
	const struct filer_xattr *st = filer_entry_xattr_get(e, TS_XATTR_LANCE);
	struct ts_table t = {0};
	bool yes;

	if (!S_ISDIR(e->attr.mode) || !x || ts_is_storage(x) ||
	    !ts_table_from_json((const char *)x->value, x->value_len, &t))
		return false;
	yes = !strcmp(t.format, LANCE_FORMAT);
	if (yes && !c->op.include_declared && st && st->value_len == strlen(LANCE_DECLARED) &&
	    !memcmp(st->value, LANCE_DECLARED, st->value_len)) {
		/* declared: listed once a client committed its first version */
		uint64_t v;
		bool any = false;
		yes = !lance_latest_version(c->env->rpc, t.warehouse, &v, &any) && any;
		if (yes)
			note_created(c, bucket, ns, e->name, t.warehouse);
	}
	ts_table_free(&t);
	return yes;
}

static bool list_table(struct call *c, const struct filer_entry *e, void *arg)
{
	struct page *p = arg;
	return !listed_table(c, e, c->bucket, c->ns) || page_add(p, e->name, e->name);
}

static void list_tables(struct call *c)
{
	struct ts_bucket b = {0};
	struct page p;
	char *dir;
	wfs_err err;
	bool ok;

	if (c->op.id.n < 2)
		return fail(c, LANCE_INVALID_INPUT,
			    "ListTables lists a namespace (<table bucket>%s<namespace>); "
			    "GET /v1/table lists them all",
			    c->op.delim);
	ok = get_bucket(c, &b) && may(c, "ListTables", c->bucket, c->ns, NULL) &&
	     check_namespace(c);
	ts_bucket_free(&b);
	if (!ok)
		return;
	dir = ns_path(c);
	page_begin(c, &p, "tables");
	err = each_entry(c, dir, c->op.page_token, NULL, list_table, &p);
	page_end(&p);
	free(dir);
	if (err)
		fail_err(c, err, LANCE_NAMESPACE_NOT_FOUND, "the namespace");
}

/*
 * ListAllTables walks buckets, their namespaces and tables in name order;
 * its page token is "<bucket>/<namespace>/<table>" of the last one listed,
 * and the next page resumes inside that bucket and namespace.
 */
struct all_walk {
	struct page *p;
	char *from[3]; /* the token's bucket, namespace and table; NULL: from the start */
	const char *bucket, *ns;
	wfs_err err;
};

/* The full id of table name in the walk's namespace, joined (caller frees). */
static char *full_id(struct call *c, const struct all_walk *aw, const char *name)
{
	struct lance_id id = {0};
	char *text;
	id.parts[id.n++] = xstrdup(aw->bucket);
	for (const char *s = aw->ns; *s && id.n + 1 < LANCE_ID_PARTS_MAX;) {
		size_t len = strcspn(s, ".");
		id.parts[id.n++] = xstrndup(s, len);
		s += len + (s[len] == '.');
	}
	id.parts[id.n++] = xstrdup(name);
	text = lance_id_join(&id, 0, c->op.delim);
	lance_id_free(&id);
	return text;
}

static bool all_table(struct call *c, const struct filer_entry *e, void *arg)
{
	struct all_walk *aw = arg;
	char *id, *token;
	bool go;

	if (!listed_table(c, e, aw->bucket, aw->ns))
		return true;
	id = full_id(c, aw, e->name);
	token = xasprintf("%s/%s/%s", aw->bucket, aw->ns, e->name);
	go = page_add(aw->p, id, token);
	free(token);
	free(id);
	return go;
}

/* Whether the walk resumes inside this bucket (and namespace, with ns). */
static bool resumes(const struct all_walk *aw, const char *ns)
{
	return aw->from[0] && !strcmp(aw->from[0], aw->bucket) &&
	       (!ns || !strcmp(aw->from[1], ns));
}

static bool all_namespace(struct call *c, const struct filer_entry *e, void *arg)
{
	struct all_walk *aw = arg;
	char *dir;
	wfs_err err;

	if (!S_ISDIR(e->attr.mode) || !filer_entry_xattr_get(e, TS_XATTR_NAMESPACE))
		return true;
	aw->ns = e->name;
	dir = xasprintf(TS_BUCKETS_DIR "/%s/%s", aw->bucket, e->name);
	err = each_entry(c, dir, resumes(aw, e->name) ? aw->from[2] : NULL, NULL, all_table, aw);
	free(dir);
	if (err && err != WFS_ENOENT)
		aw->err = err;
	return !aw->err && !aw->p->cut;
}

static bool all_bucket(struct call *c, const struct filer_entry *e, void *arg)
{
	struct all_walk *aw = arg;
	char *dir;
	wfs_err err;

	if (!S_ISDIR(e->attr.mode) || !filer_entry_xattr_get(e, TS_XATTR_BUCKET) ||
	    !sees(c, "ListTables", e->name))
		return true;
	aw->bucket = e->name;
	dir = bucket_path(e->name);
	err = resumes(aw, NULL) ? walk_entries(c, dir, aw->from[1], true, NULL, all_namespace, aw)
				: each_entry(c, dir, NULL, NULL, all_namespace, aw);
	free(dir);
	if (err && err != WFS_ENOENT)
		aw->err = err;
	return !aw->err && !aw->p->cut;
}

static void list_all_tables(struct call *c)
{
	struct all_walk aw = {0};
	struct page p;
	wfs_err err;
	const char *tok = c->op.page_token;

	if (tok) {
		/* <bucket>/<namespace>/<table>, names that hold no '/' */
		const char *s1 = strchr(tok, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
		if (!s2 || strchr(s2 + 1, '/'))
			return fail(c, LANCE_INVALID_INPUT, "page_token is not one this catalog gave");
		aw.from[0] = xstrndup(tok, (size_t)(s1 - tok));
		aw.from[1] = xstrndup(s1 + 1, (size_t)(s2 - s1 - 1));
		aw.from[2] = xstrdup(s2 + 1);
	}
	aw.p = &p;
	page_begin(c, &p, "tables");
	err = walk_entries(c, TS_BUCKETS_DIR, aw.from[0], true, NULL, all_bucket, &aw);
	if (err == WFS_ENOENT)
		err = WFS_OK; /* no bucket yet */
	page_end(&p);
	if (!err)
		err = aw.err;
	if (err)
		fail_err(c, err, LANCE_NAMESPACE_NOT_FOUND, "a table bucket");
	for (int i = 0; i < 3; i++)
		free(aw.from[i]);
}

/* ---- dispatch ---- */

static void route(struct call *c)
{
	enum lance_route r = c->op.route;
	bool table = r >= LR_DECLARE;

	if (r == LR_TABLE_LIST_ALL)
		return list_all_tables(c);
	if (table ? !map_table(c) : c->op.id.n && !map_id(c, c->op.id.n))
		return;
	switch (r) {
	case LR_NS_CREATE:
		return create_namespace(c);
	case LR_NS_LIST:
		return list_namespaces(c);
	case LR_NS_DESCRIBE:
		return describe_namespace(c);
	case LR_NS_DROP:
		return drop_namespace(c);
	case LR_NS_EXISTS:
		return namespace_exists(c);
	case LR_TABLE_LIST:
		return list_tables(c);
	case LR_DECLARE:
		return declare_table(c);
	case LR_DESCRIBE:
		return describe_table(c);
	case LR_EXISTS:
		return table_exists(c);
	case LR_REGISTER:
		return register_table(c);
	case LR_DEREGISTER:
		return remove_table(c, true);
	case LR_DROP:
		return remove_table(c, false);
	case LR_RENAME:
		return rename_table(c);
	case LR_TABLE_LIST_ALL:
		break;
	}
}

void lance_rest_handle(const struct lance_env *env, const struct lance_request *q,
		       struct lance_answer *a)
{
	struct call c = {.env = env, .q = q, .a = a};
	struct lance_refusal r;

	buf_init(&a->body);
	a->status = 0;
	if (!lance_parse(q->method, q->raw_path, q->raw_query, q->body, q->body_len, &c.op, &r))
		fail(&c, r.code, "%s", r.detail);
	else
		route(&c);
	if (!a->status)
		fail(&c, LANCE_INTERNAL, "the request was not answered");
	lance_op_free(&c.op);
	free(c.ns);
	free(c.state);
}
