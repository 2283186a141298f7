/* Iceberg view metadata: validation, create, requirements, updates (see iceberg_view_meta.h). */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include "iceberg_view_meta.h"
#include "util.h"

/* snprintf with size 0 writes nothing, so err may be NULL when errlen is 0. */
#define BAD(...) ((void)snprintf(err, errlen, __VA_ARGS__), ICE_BAD)
#define CONFLICT(...) ((void)snprintf(err, errlen, __VA_ARGS__), ICE_CONFLICT)

/* ---- validation ---- */

/* obj[key] of type t (an integer when t is JT_NUM); absence is fine unless required. */
static ice_rc field(const jt *obj, const char *key, jt_type t, bool required, const char *what,
		    char *err, size_t errlen)
{
	static const char *names[] = {"null", "a boolean", "an integer", "a string", "an array",
				      "an object"};
	jt *v = jt_get(obj, key);
	int64_t n;
	if (!v)
		return required ? BAD("%s: missing \"%s\"", what, key) : ICE_OK;
	if (v->type != t || (t == JT_NUM && !jt_as_i64(v, &n)))
		return BAD("%s: \"%s\" must be %s", what, key, names[t]);
	return ICE_OK;
}

#define REQ(o, k, t, what)                                                    \
	do {                                                                  \
		if (field(o, k, t, true, what, err, errlen) != ICE_OK)       \
			return ICE_BAD;                                       \
	} while (0)

/* An id (schema, version): an integer from 0 to INT32_MAX, as Java's ints hold them. */
static bool get_id(const jt *obj, const char *key, int64_t *out)
{
	int64_t v;
	if (!jt_get_i64(obj, key, &v) || v < 0 || v > INT32_MAX)
		return false;
	*out = v;
	return true;
}

static ice_rc need_id(const jt *obj, const char *key, int64_t *out, const char *what, char *err,
		      size_t errlen)
{
	if (!jt_get(obj, key))
		return BAD("%s: missing \"%s\"", what, key);
	if (!get_id(obj, key, out))
		return BAD("%s: \"%s\" must be an integer from 0 to %d", what, key, INT32_MAX);
	return ICE_OK;
}

static int64_t max_id(const jt *arr, const char *key)
{
	int64_t v, m = -1;
	for (size_t i = 0; i < jt_len(arr); i++)
		if (jt_get_i64(jt_at(arr, i), key, &v) && v > m)
			m = v;
	return m;
}

static bool is_sql(const jt *rep)
{
	const char *type = jt_get_str(rep, "type");
	return type && !strcasecmp(type, "sql");
}

/* A representation: "sql" needs its text and dialect; another type is kept as it is. */
static ice_rc check_representation(const jt *r, char *err, size_t errlen)
{
	if (!jt_is(r, JT_OBJ))
		return BAD("view version: a representation must be an object");
	REQ(r, "type", JT_STR, "view representation");
	if (!is_sql(r))
		return ICE_OK;
	REQ(r, "sql", JT_STR, "sql representation");
	REQ(r, "dialect", JT_STR, "sql representation");
	return ICE_OK;
}

/* Does version v have a SQL representation in dialect d (case-insensitive), before index end? */
static bool has_dialect(const jt *v, const char *d, size_t end)
{
	jt *reps = jt_get(v, "representations");
	for (size_t i = 0; i < jt_len(reps) && i < end; i++) {
		const char *rd = jt_get_str(jt_at(reps, i), "dialect");
		if (is_sql(jt_at(reps, i)) && rd && !strcasecmp(rd, d))
			return true;
	}
	return false;
}

/* What a version says, apart from its ids and time: what a client sends and reuse compares. */
static ice_rc check_version_body(const jt *v, char *err, size_t errlen)
{
	jt *reps = jt_get(v, "representations"), *ns = jt_get(v, "default-namespace");
	jt *cat = jt_get(v, "default-catalog");
	if (!jt_is(v, JT_OBJ))
		return BAD("view version must be an object");
	REQ(v, "summary", JT_OBJ, "view version");
	if (ice_string_map_check(jt_get(v, "summary"), "view version summary", err, errlen))
		return ICE_BAD;
	REQ(v, "representations", JT_ARR, "view version");
	if (!jt_len(reps))
		return BAD("view version: no representations");
	for (size_t i = 0; i < jt_len(reps); i++) {
		jt *r = jt_at(reps, i);
		if (check_representation(r, err, errlen))
			return ICE_BAD;
		if (is_sql(r) && has_dialect(v, jt_get_str(r, "dialect"), i))
			return BAD("view version: two queries for dialect %s", jt_get_str(r, "dialect"));
	}
	REQ(v, "default-namespace", JT_ARR, "view version");
	for (size_t i = 0; i < jt_len(ns); i++)
		if (!jt_is(jt_at(ns, i), JT_STR))
			return BAD("view version: \"default-namespace\" must be a list of strings");
	if (cat && !jt_is(cat, JT_NULL) && !jt_is(cat, JT_STR))
		return BAD("view version: \"default-catalog\" must be a string");
	return ICE_OK;
}

/* A stored version: its body, ids and timestamp, and schema-id naming a schema that exists. */
static ice_rc check_version(const jt *v, const jt *schemas, char *err, size_t errlen)
{
	int64_t id, sid;
	if (check_version_body(v, err, errlen) ||
	    need_id(v, "version-id", &id, "view version", err, errlen) ||
	    need_id(v, "schema-id", &sid, "view version", err, errlen))
		return ICE_BAD;
	REQ(v, "timestamp-ms", JT_NUM, "view version");
	if (ice_find_id(schemas, "schema-id", sid) < 0)
		return BAD("view version %" PRId64 ": schema %" PRId64 " does not exist", id, sid);
	return ICE_OK;
}

/* Each element of arr has an id under key that no other has. */
static ice_rc unique_ids(const jt *arr, const char *key, const char *what, char *err,
			 size_t errlen)
{
	int64_t id;
	for (size_t i = 0; i < jt_len(arr); i++) {
		if (need_id(jt_at(arr, i), key, &id, what, err, errlen))
			return ICE_BAD;
		if (ice_find_id(arr, key, id) != (ssize_t)i)
			return BAD("view metadata: %s %" PRId64 " appears twice", key, id);
	}
	return ICE_OK;
}

ice_rc ice_view_validate(const jt *m, char *err, size_t errlen)
{
	jt *schemas = jt_get(m, "schemas"), *versions = jt_get(m, "versions");
	jt *log = jt_get(m, "version-log");
	int64_t fv, cur;

	if (!jt_is(m, JT_OBJ))
		return BAD("view metadata must be a JSON object");
	REQ(m, "format-version", JT_NUM, "view metadata");
	if (!jt_get_i64(m, "format-version", &fv) || fv < 1 || fv > ICE_VIEW_MAX_FORMAT_VERSION)
		return BAD("view metadata: unsupported format-version %s", jt_get(m, "format-version")->s);
	REQ(m, "view-uuid", JT_STR, "view metadata");
	if (!*jt_get_str(m, "view-uuid"))
		return BAD("view metadata: \"view-uuid\" is empty");
	REQ(m, "location", JT_STR, "view metadata");
	REQ(m, "schemas", JT_ARR, "view metadata");
	for (size_t i = 0; i < jt_len(schemas); i++)
		if (ice_schema_check(jt_at(schemas, i), true, NULL, err, errlen))
			return ICE_BAD;
	if (unique_ids(schemas, "schema-id", "schema", err, errlen))
		return ICE_BAD;
	REQ(m, "versions", JT_ARR, "view metadata");
	for (size_t i = 0; i < jt_len(versions); i++)
		if (check_version(jt_at(versions, i), schemas, err, errlen))
			return ICE_BAD;
	if (unique_ids(versions, "version-id", "view version", err, errlen) ||
	    need_id(m, "current-version-id", &cur, "view metadata", err, errlen))
		return ICE_BAD;
	if (ice_find_id(versions, "version-id", cur) < 0)
		return BAD("view metadata: current-version-id %" PRId64 " is not in versions", cur);
	REQ(m, "version-log", JT_ARR, "view metadata");
	for (size_t i = 0; i < jt_len(log); i++) {
		jt *e = jt_at(log, i);
		if (!jt_is(e, JT_OBJ))
			return BAD("version-log: entries must be objects");
		REQ(e, "timestamp-ms", JT_NUM, "version-log");
		REQ(e, "version-id", JT_NUM, "version-log");
	}
	if (field(m, "properties", JT_OBJ, false, "view metadata", err, errlen) ||
	    (jt_get(m, "properties") &&
	     ice_string_map_check(jt_get(m, "properties"), "properties", err, errlen)))
		return ICE_BAD;
	return ICE_OK;
}

jt *ice_view_parse(const char *text, size_t len, char *err, size_t errlen)
{
	jt *m = jt_parse(text, len, err, errlen);
	if (m && ice_view_validate(m, err, errlen) != ICE_OK) {
		jt_free(m);
		return NULL;
	}
	return m;
}

void ice_view_write(const jt *meta, buf *out) { jt_to_buf(meta, out, false); }

/* ---- create ---- */

/* A (checked) version as stored: the spec's fields in its order, with ids and time set. */
static jt *stored_version(const jt *given, int64_t id, int64_t schema_id, int64_t ts)
{
	jt *v = jt_obj(), *cat = jt_get(given, "default-catalog");
	jt_set(v, "version-id", jt_i64(id));
	jt_set(v, "timestamp-ms", jt_i64(ts));
	jt_set(v, "schema-id", jt_i64(schema_id));
	jt_set(v, "summary", jt_copy(jt_get(given, "summary")));
	jt_set(v, "representations", jt_copy(jt_get(given, "representations")));
	if (jt_is(cat, JT_STR))
		jt_set(v, "default-catalog", jt_copy(cat));
	jt_set(v, "default-namespace", jt_copy(jt_get(given, "default-namespace")));
	return v;
}

/* A (checked) schema as stored, with its id. */
static jt *stored_schema(const jt *given, int64_t id)
{
	jt *s = jt_copy(given);
	jt_set(s, "type", jt_str("struct"));
	jt_set(s, "schema-id", jt_i64(id));
	return s;
}

static jt *log_entry(int64_t ts, int64_t version)
{
	jt *e = jt_obj();
	jt_set(e, "timestamp-ms", jt_i64(ts));
	jt_set(e, "version-id", jt_i64(version));
	return e;
}

static jt *list1(jt *v)
{
	jt *a = jt_arr();
	jt_append(a, v);
	return a;
}

/* version.history.num-entries: how many versions to keep (a positive integer). */
static ice_rc history_size(const jt *props, int64_t *n, char *err, size_t errlen)
{
	const char *p = jt_get_str(props, "version.history.num-entries");
	*n = ICE_VIEW_HISTORY_DEFAULT;
	if (p && (!parse_i64(p, n) || *n < 1))
		return BAD("properties: version.history.num-entries must be a positive integer, "
			   "not \"%s\"",
			   p);
	return ICE_OK;
}

ice_rc ice_view_create(const jt *req, const char *uuid, const char *location, int64_t now_ms,
		       jt **out, char *err, size_t errlen)
{
	const jt *schema = jt_get(req, "schema"), *given = jt_get(req, "view-version");
	const jt *props = jt_get(req, "properties"), *lv = jt_get(req, "location");
	const char *loc = jt_get_str(req, "location");
	int64_t keep;
	jt *m;

	*out = NULL;
	if (!jt_is(req, JT_OBJ))
		return BAD("create view: the body must be a JSON object");
	if (!jt_get_str(req, "name") || !*jt_get_str(req, "name"))
		return BAD("create view: missing \"name\"");
	if (!schema)
		return BAD("create view: missing \"schema\"");
	if (ice_schema_check(schema, false, NULL, err, errlen))
		return ICE_BAD;
	if (!given)
		return BAD("create view: missing \"view-version\"");
	if (check_version_body(given, err, errlen))
		return ICE_BAD;
	if (lv && !jt_is(lv, JT_NULL) && !loc)
		return BAD("create view: \"location\" must be a string");
	if (!loc || !*loc)
		loc = location;
	if (!loc || !*loc)
		return BAD("create view: no location");
	if (jt_is(props, JT_NULL))
		props = NULL;
	if ((props && ice_string_map_check(props, "properties", err, errlen)) ||
	    history_size(props, &keep, err, errlen))
		return ICE_BAD;

	m = jt_obj();
	jt_set(m, "view-uuid", jt_str(uuid));
	jt_set(m, "format-version", jt_i64(1));
	jt_set(m, "location", jt_str(loc));
	jt_set(m, "schemas", list1(stored_schema(schema, 0)));
	jt_set(m, "current-version-id", jt_i64(1));
	jt_set(m, "versions", list1(stored_version(given, 1, 0, now_ms)));
	jt_set(m, "version-log", list1(log_entry(now_ms, 1)));
	jt_set(m, "properties", props ? jt_copy(props) : jt_obj());
	if (ice_view_validate(m, err, errlen) != ICE_OK) {
		jt_free(m);
		return ICE_BAD;
	}
	*out = m;
	return ICE_OK;
}

/* ---- requirements ---- */

static ice_rc check_requirement(const jt *m, const jt *r, char *err, size_t errlen)
{
	const char *type = jt_get_str(r, "type"), *want, *have;
	if (!type)
		return BAD("requirement: missing \"type\"");
	/* The table requirements (assert-create, assert-table-uuid, ...) have no meaning here. */
	if (strcmp(type, "assert-view-uuid"))
		return BAD("requirement \"%s\" is not a view requirement", type);
	if (!(want = jt_get_str(r, "uuid")))
		return BAD("assert-view-uuid: \"uuid\" must be a string");
	have = jt_get_str(m, "view-uuid");
	if (!have || strcasecmp(have, want))
		return CONFLICT("assert-view-uuid failed: the view's uuid is %s, expected %s",
				have ? have : "unset", want);
	return ICE_OK;
}

/* ---- updates ---- */

typedef struct {
	jt *m;                /* the copy being changed */
	int64_t now;
	int64_t last_schema;  /* added (or reused) by this commit, or -1 */
	int64_t last_version; /* likewise */
	jt *added;            /* ids of the versions this commit added */
	jt *log;              /* the version-log entry this commit makes, or NULL */
	char *err;
	size_t errlen;
} vctx;

#define UBAD(...) ((void)snprintf(c->err, c->errlen, __VA_ARGS__), ICE_BAD)

static ice_rc u_assign_uuid(vctx *c, const jt *u)
{
	const char *uuid = jt_get_str(u, "uuid"), *have = jt_get_str(c->m, "view-uuid");
	if (!uuid || !*uuid)
		return UBAD("assign-uuid: \"uuid\" must be a non-empty string");
	/* A view has its uuid from create on; Java refuses to change it. */
	if (have && strcasecmp(uuid, have))
		return UBAD("assign-uuid: cannot reassign the view's uuid %s to %s", have, uuid);
	jt_set(c->m, "view-uuid", jt_str(uuid));
	return ICE_OK;
}

static ice_rc u_upgrade_format_version(vctx *c, const jt *u)
{
	int64_t to, from = 1;
	jt_get_i64(c->m, "format-version", &from);
	if (!jt_get_i64(u, "format-version", &to))
		return UBAD("upgrade-format-version: \"format-version\" must be an integer");
	if (to < from)
		return UBAD("upgrade-format-version: cannot downgrade from %" PRId64 " to %" PRId64,
			    from, to);
	if (to > ICE_VIEW_MAX_FORMAT_VERSION)
		return UBAD("upgrade-format-version: unsupported view format-version %" PRId64, to);
	jt_set(c->m, "format-version", jt_i64(to));
	return ICE_OK;
}

/* Same columns and identifier fields (an absent list is an empty one). */
static bool same_schema(const jt *a, const jt *b)
{
	jt *ia = jt_get(a, "identifier-field-ids"), *ib = jt_get(b, "identifier-field-ids");
	return jt_equal(jt_get(a, "fields"), jt_get(b, "fields")) &&
	       ((!jt_len(ia) && !jt_len(ib)) || jt_equal(ia, ib));
}

static ice_rc u_add_schema(vctx *c, const jt *u)
{
	jt *schemas = jt_get(c->m, "schemas"), *s = jt_get(u, "schema"), *lc;
	int64_t id;
	if (!s)
		return UBAD("add-schema: missing \"schema\"");
	if (ice_schema_check(s, false, NULL, c->err, c->errlen))
		return ICE_BAD;
	/* Deprecated in the spec and meaningless for a view (it has no last-column-id). */
	if ((lc = jt_get(u, "last-column-id")) && !jt_is(lc, JT_NULL) && !jt_as_i64(lc, &id))
		return UBAD("add-schema: \"last-column-id\" must be an integer");
	for (size_t i = 0; i < jt_len(schemas); i++)
		if (same_schema(jt_at(schemas, i), s) && get_id(jt_at(schemas, i), "schema-id", &id)) {
			c->last_schema = id;
			return ICE_OK;
		}
	id = max_id(schemas, "schema-id") + 1;
	jt_append(schemas, stored_schema(s, id));
	c->last_schema = id;
	return ICE_OK;
}

static ice_rc u_set_location(vctx *c, const jt *u)
{
	const char *loc = jt_get_str(u, "location");
	if (!loc || !*loc)
		return UBAD("set-location: \"location\" must be a non-empty string");
	jt_set(c->m, "location", jt_str(loc));
	return ICE_OK;
}

static ice_rc u_set_properties(vctx *c, const jt *u)
{
	return ice_set_properties(c->m, u, c->err, c->errlen);
}

static ice_rc u_remove_properties(vctx *c, const jt *u)
{
	return ice_remove_properties(c->m, u, c->err, c->errlen);
}

/* v, or NULL when it is JSON null (a null default-catalog is none). */
static const jt *present(const jt *v) { return jt_is(v, JT_NULL) ? NULL : v; }

/* A version that behaves the same as v (ids and time aside), or -1. */
static ssize_t find_same_version(const jt *versions, const jt *v)
{
	static const char *keys[] = {"schema-id", "summary", "representations", "default-catalog",
				     "default-namespace"};
	for (size_t i = 0; i < jt_len(versions); i++) {
		size_t k = 0;
		while (k < sizeof(keys) / sizeof(*keys) &&
		       jt_equal(present(jt_get(jt_at(versions, i), keys[k])),
				present(jt_get(v, keys[k]))))
			k++;
		if (k == sizeof(keys) / sizeof(*keys))
			return (ssize_t)i;
	}
	return -1;
}

static ice_rc u_add_view_version(vctx *c, const jt *u)
{
	jt *given = jt_get(u, "view-version"), *versions = jt_get(c->m, "versions"), *v;
	int64_t id, sid, ts;
	ssize_t same;
	if (!given)
		return UBAD("add-view-version: missing \"view-version\"");
	if (check_version_body(given, c->err, c->errlen))
		return ICE_BAD;
	if (!jt_get_i64(given, "version-id", &id) || id < INT32_MIN || id > INT32_MAX)
		return UBAD("add-view-version: \"version-id\" must be an integer");
	if (!jt_get_i64(given, "timestamp-ms", &ts))
		return UBAD("add-view-version: \"timestamp-ms\" must be an integer");
	if (!jt_get_i64(given, "schema-id", &sid) || sid < -1 || sid > INT32_MAX)
		return UBAD("add-view-version: \"schema-id\" must be a schema id or -1");
	if (sid == -1 && (sid = c->last_schema) < 0)
		return UBAD("add-view-version: schema-id -1 (the last added) but this commit added "
			    "no schema");
	if (ice_find_id(jt_get(c->m, "schemas"), "schema-id", sid) < 0)
		return UBAD("add-view-version: schema %" PRId64 " does not exist", sid);
	v = stored_version(given, id, sid, ts);
	/* A version identical to an existing one is that one, as the Java reference has it. */
	if ((same = find_same_version(versions, v)) >= 0) {
		jt_free(v);
		get_id(jt_at(versions, (size_t)same), "version-id", &c->last_version);
		return ICE_OK;
	}
	/* The client's id, unless taken or below one in use: then the highest + 1. */
	if (id <= max_id(versions, "version-id"))
		id = max_id(versions, "version-id") + 1;
	jt_set(v, "version-id", jt_i64(id));
	jt_append(versions, v);
	jt_append(c->added, jt_i64(id));
	c->last_version = id;
	return ICE_OK;
}

static bool added_here(const vctx *c, int64_t id)
{
	int64_t v;
	for (size_t i = 0; i < jt_len(c->added); i++)
		if (jt_as_i64(jt_at(c->added, i), &v) && v == id)
			return true;
	return false;
}

static ice_rc u_set_current_view_version(vctx *c, const jt *u)
{
	jt *versions = jt_get(c->m, "versions");
	int64_t id, cur = -1, ts = c->now;
	ssize_t at;
	if (!jt_get_i64(u, "view-version-id", &id))
		return UBAD("set-current-view-version: \"view-version-id\" must be an integer");
	if (id == -1 && (id = c->last_version) < 0)
		return UBAD("set-current-view-version: -1 (the last added) but this commit added no "
			    "version");
	if ((at = ice_find_id(versions, "version-id", id)) < 0)
		return UBAD("set-current-view-version: version %" PRId64 " does not exist", id);
	jt_get_i64(c->m, "current-version-id", &cur);
	if (id == cur)
		return ICE_OK;
	jt_set(c->m, "current-version-id", jt_i64(id));
	/* A version new in this commit became current when it was made; an old one, now. */
	if (added_here(c, id))
		jt_get_i64(jt_at(versions, (size_t)at), "timestamp-ms", &ts);
	jt_free(c->log);
	c->log = log_entry(ts, id); /* one entry a commit, for the last change (as Java) */
	return ICE_OK;
}

static const struct {
	const char *action;
	ice_rc (*apply)(vctx *c, const jt *u);
} updates[] = {
	{"assign-uuid", u_assign_uuid},
	{"upgrade-format-version", u_upgrade_format_version},
	{"add-schema", u_add_schema},
	{"set-location", u_set_location},
	{"set-properties", u_set_properties},
	{"remove-properties", u_remove_properties},
	{"add-view-version", u_add_view_version},
	{"set-current-view-version", u_set_current_view_version},
};

#define N_UPDATES (sizeof(updates) / sizeof(*updates))

/* The index of u's action in updates, or N_UPDATES with a message when u is not one. */
static size_t find_update(const jt *u, char *err, size_t errlen)
{
	const char *action = jt_get_str(u, "action");
	size_t k = 0;
	if (!jt_is(u, JT_OBJ))
		snprintf(err, errlen, "an update must be an object");
	else if (!action)
		snprintf(err, errlen, "update: missing \"action\"");
	else
		while (k < N_UPDATES && strcmp(action, updates[k].action))
			k++;
	if (!action)
		return N_UPDATES;
	if (k == N_UPDATES)
		snprintf(err, errlen, "update \"%s\" is not a view update", action);
	return k;
}

/* ---- finishing the commit ---- */

/* Java refuses a new current version without one of the old one's SQL dialects. */
static ice_rc check_dialects(const jt *before, const jt *after, char *err, size_t errlen)
{
	jt *reps = jt_get(before, "representations");
	const char *allow = jt_get_str(jt_get(after, "properties"), "replace.drop-dialect.allowed");
	int64_t id = -1;
	ssize_t at;
	if (allow && !strcasecmp(allow, "true"))
		return ICE_OK;
	jt_get_i64(after, "current-version-id", &id);
	if ((at = ice_find_id(jt_get(after, "versions"), "version-id", id)) < 0)
		return ICE_OK; /* validation says what is wrong */
	for (size_t i = 0; i < jt_len(reps); i++) {
		const char *d = jt_get_str(jt_at(reps, i), "dialect");
		if (is_sql(jt_at(reps, i)) && d &&
		    !has_dialect(jt_at(jt_get(after, "versions"), (size_t)at), d, SIZE_MAX))
			return BAD("cannot replace the view: the new version drops dialect %s "
				   "(replace.drop-dialect.allowed is false)",
				   d);
	}
	return ICE_OK;
}

/*
 * Keeps the `keep` versions with the highest ids, and always the current one
 * and those this commit added. The version log then starts after its last
 * entry for a dropped version, so it never names one.
 */
static void trim_versions(vctx *c, int64_t keep)
{
	jt *versions = jt_get(c->m, "versions"), *log = jt_get(c->m, "version-log");
	int64_t cur = -1, id, low;
	size_t must = jt_len(c->added), keep_from = 0;
	ssize_t drop;
	bool dropped = false;

	jt_get_i64(c->m, "current-version-id", &cur);
	if (!added_here(c, cur))
		must++;
	if ((int64_t)must > keep)
		keep = (int64_t)must;
	while ((int64_t)jt_len(versions) > keep) {
		drop = -1;
		low = INT64_MAX;
		for (size_t i = 0; i < jt_len(versions); i++)
			if (jt_get_i64(jt_at(versions, i), "version-id", &id) && id != cur && id < low) {
				low = id;
				drop = (ssize_t)i;
			}
		if (drop < 0)
			break;
		jt_remove_at(versions, (size_t)drop);
		dropped = true;
	}
	if (!dropped)
		return;
	for (size_t i = 0; i < jt_len(log); i++)
		if (!jt_get_i64(jt_at(log, i), "version-id", &id) ||
		    ice_find_id(versions, "version-id", id) < 0)
			keep_from = i + 1;
	while (keep_from-- > 0)
		jt_remove_at(log, 0);
}

static ice_rc finish(vctx *c, const jt *before, char *err, size_t errlen)
{
	int64_t cur = -1, keep;
	char msg[256];
	jt_get_i64(before, "current-version-id", &cur);
	if (c->log) {
		if (!jt_is(jt_get(c->m, "version-log"), JT_ARR))
			jt_set(c->m, "version-log", jt_arr());
		jt_append(jt_get(c->m, "version-log"), c->log);
		c->log = NULL;
	}
	if (check_dialects(jt_at(jt_get(before, "versions"),
				 (size_t)ice_find_id(jt_get(before, "versions"), "version-id", cur)),
			   c->m, err, errlen) ||
	    history_size(jt_get(c->m, "properties"), &keep, err, errlen))
		return ICE_BAD;
	trim_versions(c, keep);
	if (ice_view_validate(c->m, msg, sizeof(msg)) != ICE_OK)
		return BAD("the commit leaves invalid view metadata: %s", msg);
	return ICE_OK;
}

ice_rc ice_view_commit(jt **meta, const jt *body, int64_t now_ms, char *err, size_t errlen)
{
	const jt *reqs = jt_get(body, "requirements"), *ups = jt_get(body, "updates");
	vctx c = {.now = now_ms, .last_schema = -1, .last_version = -1, .err = err,
		  .errlen = errlen};
	ice_rc rc;

	if (!jt_is(body, JT_OBJ))
		return BAD("commit view: the body must be a JSON object");
	if (!jt_is(*meta, JT_OBJ))
		return BAD("commit view: no view metadata");
	if ((rc = ice_check_each(*meta, reqs, check_requirement, err, errlen)) != ICE_OK)
		return rc;
	if (ups && !jt_is(ups, JT_NULL) && !jt_is(ups, JT_ARR))
		return BAD("\"updates\" must be an array");
	/* An unknown update anywhere is 400 before anything is tried. */
	for (size_t i = 0; i < jt_len(ups); i++)
		if (find_update(jt_at(ups, i), err, errlen) == N_UPDATES)
			return ICE_BAD;
	c.m = jt_copy(*meta);
	c.added = jt_arr();
	for (size_t i = 0; i < jt_len(ups) && rc == ICE_OK; i++)
		rc = updates[find_update(jt_at(ups, i), err, errlen)].apply(&c, jt_at(ups, i));
	if (rc == ICE_OK)
		rc = finish(&c, *meta, err, errlen);
	jt_free(c.added);
	jt_free(c.log);
	if (rc != ICE_OK) {
		jt_free(c.m);
		return rc;
	}
	jt_free(*meta);
	*meta = c.m;
	return ICE_OK;
}

char *ice_view_file_name(const jt *meta, int version, const char *uuid)
{
	/* A view's location and properties name its files as a table's do. */
	return ice_meta_file_name(meta, version, uuid);
}
