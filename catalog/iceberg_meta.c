/* Iceberg table metadata: validation, create, requirements, updates (see iceberg_meta.h). */
#include "config.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include "iceberg_meta.h"
#include "util.h"

static ice_rc fail(char *err, size_t errlen, ice_rc rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static ice_rc fail(char *err, size_t errlen, ice_rc rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (errlen)
		vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return rc;
}

#define BAD(...) fail(err, errlen, ICE_BAD, __VA_ARGS__)
#define CONFLICT(...) fail(err, errlen, ICE_CONFLICT, __VA_ARGS__)

/*
 * Ids (snapshot ids above all) are compared as their number text: DuckDB writes
 * unsigned 64-bit ids that no int64_t holds. JSON integers have one spelling,
 * so equal text is equal value.
 */
static bool is_id(const jt *v)
{
	const char *p;
	if (!jt_is(v, JT_NUM))
		return false;
	p = v->s + (v->s[0] == '-');
	return strspn(p, "0123456789") == strlen(p) && strlen(p) <= 20;
}

static bool streq(const char *a, const char *b) { return a && b && !strcmp(a, b); }

static bool id_eq(const jt *a, const jt *b) { return is_id(a) && is_id(b) && !strcmp(a->s, b->s); }

/* An id of -1 or null: "none" for current-snapshot-id. */
static bool id_none(const jt *v) { return !v || jt_is(v, JT_NULL) || (is_id(v) && !strcmp(v->s, "-1")); }

/* The index in arr of the object whose key equals id (by text), or -1. */
static ssize_t find_id(const jt *arr, const char *key, const jt *id)
{
	for (size_t i = 0; i < jt_len(arr); i++)
		if (id_eq(jt_get(jt_at(arr, i), key), id))
			return (ssize_t)i;
	return -1;
}

static ssize_t find_i64(const jt *arr, const char *key, int64_t id)
{
	int64_t v;
	for (size_t i = 0; i < jt_len(arr); i++)
		if (jt_get_i64(jt_at(arr, i), key, &v) && v == id)
			return (ssize_t)i;
	return -1;
}

/* The largest key among arr's objects (floor when there are none or all are smaller). */
static int64_t max_i64(const jt *arr, const char *key, int64_t floor)
{
	int64_t v, m = floor;
	for (size_t i = 0; i < jt_len(arr); i++)
		if (jt_get_i64(jt_at(arr, i), key, &v) && v > m)
			m = v;
	return m;
}

static int format_version(const jt *meta)
{
	int64_t v = 0;
	jt_get_i64(meta, "format-version", &v);
	return (int)v;
}

/* ---- validation ---- */

/* A field of obj that must be there with type t. */
static ice_rc need(const jt *obj, const char *key, jt_type t, const char *what, char *err,
		   size_t errlen)
{
	static const char *names[] = {"null", "a boolean", "a number", "a string", "an array",
				      "an object"};
	jt *v = jt_get(obj, key);
	if (!v)
		return BAD("%s: missing \"%s\"", what, key);
	if (v->type != t)
		return BAD("%s: \"%s\" must be %s", what, key, names[t]);
	if (t == JT_NUM && !is_id(v))
		return BAD("%s: \"%s\" must be an integer", what, key);
	return ICE_OK;
}

/* Like need, but absence is fine. */
static ice_rc maybe(const jt *obj, const char *key, jt_type t, const char *what, char *err,
		    size_t errlen)
{
	return jt_get(obj, key) ? need(obj, key, t, what, err, errlen) : ICE_OK;
}

/* need when required, else maybe; returns ICE_BAD from the caller (which has err, errlen). */
#define NEED_IF(required, o, k, t, what)                                                   \
	do {                                                                               \
		if (((required) ? need : maybe)(o, k, t, what, err, errlen) != ICE_OK)    \
			return ICE_BAD;                                                    \
	} while (0)
#define NEED(o, k, t, what) NEED_IF(true, o, k, t, what)
#define MAYBE(o, k, t, what) NEED_IF(false, o, k, t, what)

typedef struct {
	int64_t *ids;
	size_t n, cap;
} idset;

static bool idset_has(const idset *s, int64_t id)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ids[i] == id)
			return true;
	return false;
}

/* Adds a field id; false if it is already there. */
static bool idset_add(idset *s, int64_t id)
{
	if (idset_has(s, id))
		return false;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->ids = xrealloc(s->ids, s->cap * sizeof(*s->ids));
	}
	s->ids[s->n++] = id;
	return true;
}

static int64_t idset_max(const idset *s)
{
	int64_t m = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->ids[i] > m)
			m = s->ids[i];
	return m;
}

static ice_rc check_type(const jt *type, idset *ids, char *err, size_t errlen);

/* A nested id (field id, element-id, key-id, value-id): an integer > 0, unique in the schema. */
static ice_rc check_field_id(const jt *obj, const char *key, idset *ids, char *err, size_t errlen)
{
	int64_t id;
	NEED(obj, key, JT_NUM, "schema");
	if (!jt_get_i64(obj, key, &id) || id < 0)
		return BAD("schema: \"%s\" must be a non-negative integer", key);
	if (!idset_add(ids, id))
		return BAD("schema: field id %" PRId64 " used twice", id);
	return ICE_OK;
}

static ice_rc check_struct(const jt *st, idset *ids, char *err, size_t errlen)
{
	jt *fields = jt_get(st, "fields");
	NEED(st, "fields", JT_ARR, "schema struct");
	for (size_t i = 0; i < jt_len(fields); i++) {
		jt *f = jt_at(fields, i);
		if (!jt_is(f, JT_OBJ))
			return BAD("schema: a field must be an object");
		if (check_field_id(f, "id", ids, err, errlen) != ICE_OK)
			return ICE_BAD;
		NEED(f, "name", JT_STR, "schema field");
		NEED(f, "required", JT_BOOL, "schema field");
		if (!jt_get(f, "type"))
			return BAD("schema field \"%s\": missing \"type\"", jt_get_str(f, "name"));
		if (check_type(jt_get(f, "type"), ids, err, errlen) != ICE_OK)
			return ICE_BAD;
	}
	return ICE_OK;
}

static ice_rc check_type(const jt *type, idset *ids, char *err, size_t errlen)
{
	const char *kind;
	if (jt_is(type, JT_STR))
		return ICE_OK; /* a primitive: long, string, decimal(9,2), ... */
	if (!jt_is(type, JT_OBJ) || !(kind = jt_get_str(type, "type")))
		return BAD("schema: a type must be a string or an object with \"type\"");
	if (!strcmp(kind, "struct"))
		return check_struct(type, ids, err, errlen);
	if (!strcmp(kind, "list")) {
		if (check_field_id(type, "element-id", ids, err, errlen) != ICE_OK)
			return ICE_BAD;
		NEED(type, "element-required", JT_BOOL, "schema list");
		if (!jt_get(type, "element"))
			return BAD("schema list: missing \"element\"");
		return check_type(jt_get(type, "element"), ids, err, errlen);
	}
	if (!strcmp(kind, "map")) {
		if (check_field_id(type, "key-id", ids, err, errlen) != ICE_OK ||
		    check_field_id(type, "value-id", ids, err, errlen) != ICE_OK)
			return ICE_BAD;
		NEED(type, "value-required", JT_BOOL, "schema map");
		if (!jt_get(type, "key") || !jt_get(type, "value"))
			return BAD("schema map: missing \"key\" or \"value\"");
		if (check_type(jt_get(type, "key"), ids, err, errlen) != ICE_OK)
			return ICE_BAD;
		return check_type(jt_get(type, "value"), ids, err, errlen);
	}
	return BAD("schema: unknown nested type \"%s\"", kind);
}

/* A schema object; its field ids go to ids (may be NULL) and the highest to *highest. */
static ice_rc check_schema(const jt *s, bool need_id, int64_t *highest, char *err, size_t errlen)
{
	idset ids = {0};
	const char *t;
	ice_rc rc;
	if (!jt_is(s, JT_OBJ))
		return BAD("schema must be an object");
	if ((t = jt_get_str(s, "type")) && strcmp(t, "struct"))
		return BAD("schema: \"type\" must be \"struct\"");
	NEED_IF(need_id, s, "schema-id", JT_NUM, "schema");
	MAYBE(s, "identifier-field-ids", JT_ARR, "schema");
	rc = check_struct(s, &ids, err, errlen);
	if (highest)
		*highest = idset_max(&ids);
	free(ids.ids);
	return rc;
}

/* A partition spec or sort order: an object with its id and a list of field objects. */
static ice_rc check_fields(const jt *obj, const char *id_key, bool need_ids, const char *what,
			   ice_rc (*field)(const jt *f, bool need_ids, char *err, size_t errlen),
			   char *err, size_t errlen)
{
	jt *fields = jt_get(obj, "fields");
	if (!jt_is(obj, JT_OBJ))
		return BAD("%s must be an object", what);
	NEED_IF(need_ids, obj, id_key, JT_NUM, what);
	NEED(obj, "fields", JT_ARR, what);
	for (size_t i = 0; i < jt_len(fields); i++) {
		if (!jt_is(jt_at(fields, i), JT_OBJ))
			return BAD("%s: a field must be an object", what);
		if (field(jt_at(fields, i), need_ids, err, errlen))
			return ICE_BAD;
	}
	return ICE_OK;
}

static ice_rc check_spec_field(const jt *f, bool need_ids, char *err, size_t errlen)
{
	if (!jt_get(f, "source-ids"))
		NEED(f, "source-id", JT_NUM, "partition field");
	MAYBE(f, "source-ids", JT_ARR, "partition field");
	NEED_IF(need_ids, f, "field-id", JT_NUM, "partition field");
	NEED(f, "name", JT_STR, "partition field");
	NEED(f, "transform", JT_STR, "partition field");
	return ICE_OK;
}

static ice_rc check_sort_field(const jt *f, bool need_ids, char *err, size_t errlen)
{
	const char *dir = jt_get_str(f, "direction"), *nulls = jt_get_str(f, "null-order");
	NEED(f, "transform", JT_STR, "sort field");
	if (!jt_get(f, "source-ids"))
		NEED(f, "source-id", JT_NUM, "sort field");
	if (!dir || (strcmp(dir, "asc") && strcmp(dir, "desc")))
		return BAD("sort field: \"direction\" must be \"asc\" or \"desc\"");
	if (!nulls || (strcmp(nulls, "nulls-first") && strcmp(nulls, "nulls-last")))
		return BAD("sort field: \"null-order\" must be \"nulls-first\" or \"nulls-last\"");
	return ICE_OK;
}

static ice_rc check_spec(const jt *spec, bool need_ids, char *err, size_t errlen)
{
	return check_fields(spec, "spec-id", need_ids, "partition spec", check_spec_field, err,
			    errlen);
}

static ice_rc check_order(const jt *order, bool need_id, char *err, size_t errlen)
{
	return check_fields(order, "order-id", need_id, "sort order", check_sort_field, err, errlen);
}

static ice_rc check_snapshot(const jt *s, char *err, size_t errlen)
{
	jt *sum;
	if (!jt_is(s, JT_OBJ))
		return BAD("snapshot must be an object");
	NEED(s, "snapshot-id", JT_NUM, "snapshot");
	MAYBE(s, "parent-snapshot-id", JT_NUM, "snapshot");
	NEED(s, "timestamp-ms", JT_NUM, "snapshot");
	MAYBE(s, "schema-id", JT_NUM, "snapshot");
	/* Snapshots from before an upgrade from v1 keep their v1 shape (sequence number 0). */
	if (!jt_get(s, "manifest-list"))
		NEED(s, "manifests", JT_ARR, "snapshot");
	MAYBE(s, "sequence-number", JT_NUM, "snapshot");
	MAYBE(s, "manifest-list", JT_STR, "snapshot");
	if ((sum = jt_get(s, "summary"))) {
		NEED(s, "summary", JT_OBJ, "snapshot");
		NEED(sum, "operation", JT_STR, "snapshot summary");
	}
	MAYBE(s, "first-row-id", JT_NUM, "snapshot");
	MAYBE(s, "added-rows", JT_NUM, "snapshot");
	return ICE_OK;
}

static ice_rc check_ref(const char *name, const jt *ref, const jt *snapshots, char *err,
			size_t errlen)
{
	const char *type;
	if (!jt_is(ref, JT_OBJ))
		return BAD("ref \"%s\" must be an object", name);
	NEED(ref, "snapshot-id", JT_NUM, "ref");
	type = jt_get_str(ref, "type");
	if (!type || (strcmp(type, "branch") && strcmp(type, "tag")))
		return BAD("ref \"%s\": \"type\" must be \"branch\" or \"tag\"", name);
	MAYBE(ref, "min-snapshots-to-keep", JT_NUM, "ref");
	MAYBE(ref, "max-snapshot-age-ms", JT_NUM, "ref");
	MAYBE(ref, "max-ref-age-ms", JT_NUM, "ref");
	if (find_id(snapshots, "snapshot-id", jt_get(ref, "snapshot-id")) < 0)
		return BAD("ref \"%s\": snapshot %s does not exist", name, jt_get(ref, "snapshot-id")->s);
	return ICE_OK;
}

/* Every element of obj[key] (if present) an object with these fields. */
static ice_rc check_list(const jt *obj, const char *key, const char *f1, jt_type t1,
			 const char *f2, jt_type t2, char *err, size_t errlen)
{
	jt *arr = jt_get(obj, key);
	MAYBE(obj, key, JT_ARR, "table metadata");
	for (size_t i = 0; i < jt_len(arr); i++) {
		jt *e = jt_at(arr, i);
		if (!jt_is(e, JT_OBJ))
			return BAD("%s: entries must be objects", key);
		NEED(e, f1, t1, key);
		NEED(e, f2, t2, key);
	}
	return ICE_OK;
}

static ice_rc check_string_map(const jt *obj, const char *what, char *err, size_t errlen)
{
	if (!jt_is(obj, JT_OBJ))
		return BAD("%s must be an object", what);
	for (size_t i = 0; i < obj->n; i++)
		if (!jt_is(obj->items[i], JT_STR))
			return BAD("%s: \"%s\" must be a string", what, obj->keys[i]);
	return ICE_OK;
}

/* Version 1 may give only the current schema, spec and no sort orders: fill the lists. */
static ice_rc fill_v1(jt *m, char *err, size_t errlen)
{
	jt *v;
	if (!jt_get(m, "schemas")) {
		if (!jt_is(v = jt_get(m, "schema"), JT_OBJ))
			return BAD("table metadata: missing \"schemas\" (or \"schema\" in version 1)");
		v = jt_copy(v);
		if (!jt_get(v, "schema-id"))
			jt_set(v, "schema-id", jt_i64(0));
		jt_set(m, "current-schema-id", jt_copy(jt_get(v, "schema-id")));
		jt_set(m, "schemas", jt_arr());
		jt_append(jt_get(m, "schemas"), v);
	}
	if (!jt_get(m, "partition-specs")) {
		jt *spec = jt_obj(), *fields;
		if (!jt_is(v = jt_get(m, "partition-spec"), JT_ARR)) {
			jt_free(spec);
			return BAD("table metadata: missing \"partition-specs\" "
				   "(or \"partition-spec\" in version 1)");
		}
		fields = jt_copy(v);
		for (size_t i = 0; i < jt_len(fields); i++)
			if (jt_is(jt_at(fields, i), JT_OBJ) && !jt_get(jt_at(fields, i), "field-id"))
				jt_set(jt_at(fields, i), "field-id", jt_i64(1000 + (int64_t)i));
		jt_set(spec, "spec-id", jt_i64(0));
		jt_set(spec, "fields", fields);
		jt_set(m, "default-spec-id", jt_i64(0));
		jt_set(m, "partition-specs", jt_arr());
		jt_append(jt_get(m, "partition-specs"), spec);
	}
	if (!jt_get(m, "last-partition-id")) {
		int64_t last = 999, id;
		jt *specs = jt_get(m, "partition-specs");
		for (size_t i = 0; i < jt_len(specs); i++) {
			jt *fields = jt_get(jt_at(specs, i), "fields");
			for (size_t j = 0; j < jt_len(fields); j++)
				if (jt_get_i64(jt_at(fields, j), "field-id", &id) && id > last)
					last = id;
		}
		jt_set(m, "last-partition-id", jt_i64(last));
	}
	if (!jt_get(m, "sort-orders")) {
		jt *order = jt_obj();
		jt_set(order, "order-id", jt_i64(0));
		jt_set(order, "fields", jt_arr());
		jt_set(m, "sort-orders", jt_arr());
		jt_append(jt_get(m, "sort-orders"), order);
		jt_set(m, "default-sort-order-id", jt_i64(0));
	}
	return ICE_OK;
}

/* A list whose current (or default) entry, named by cur_key, must exist. */
static ice_rc check_current(const jt *m, const char *list, const char *id_key,
			    const char *cur_key, char *err, size_t errlen)
{
	int64_t cur;
	NEED(m, list, JT_ARR, "table metadata");
	NEED(m, cur_key, JT_NUM, "table metadata");
	jt_get_i64(m, cur_key, &cur);
	if (find_i64(jt_get(m, list), id_key, cur) < 0)
		return BAD("table metadata: %s %" PRId64 " is not in %s", cur_key, cur, list);
	return ICE_OK;
}

ice_rc ice_meta_validate(jt *m, char *err, size_t errlen)
{
	int64_t fv;
	jt *v, *snaps, *refs;

	if (!jt_is(m, JT_OBJ))
		return BAD("table metadata must be a JSON object");
	NEED(m, "format-version", JT_NUM, "table metadata");
	if (!jt_get_i64(m, "format-version", &fv) || fv < 1 || fv > ICE_MAX_FORMAT_VERSION)
		return BAD("table metadata: unsupported format-version %s", jt_get(m, "format-version")->s);
	if (fv >= 2) {
		NEED(m, "table-uuid", JT_STR, "table metadata");
		NEED(m, "last-sequence-number", JT_NUM, "table metadata");
		NEED(m, "schemas", JT_ARR, "table metadata");
		NEED(m, "partition-specs", JT_ARR, "table metadata");
		NEED(m, "last-partition-id", JT_NUM, "table metadata");
		NEED(m, "sort-orders", JT_ARR, "table metadata");
	} else {
		MAYBE(m, "table-uuid", JT_STR, "table metadata");
		MAYBE(m, "last-sequence-number", JT_NUM, "table metadata");
		if (fill_v1(m, err, errlen) != ICE_OK)
			return ICE_BAD;
	}
	if (fv >= 3)
		NEED(m, "next-row-id", JT_NUM, "table metadata");
	NEED(m, "location", JT_STR, "table metadata");
	NEED(m, "last-updated-ms", JT_NUM, "table metadata");
	NEED(m, "last-column-id", JT_NUM, "table metadata");
	NEED(m, "last-partition-id", JT_NUM, "table metadata");

	if (check_current(m, "schemas", "schema-id", "current-schema-id", err, errlen) ||
	    check_current(m, "partition-specs", "spec-id", "default-spec-id", err, errlen) ||
	    check_current(m, "sort-orders", "order-id", "default-sort-order-id", err, errlen))
		return ICE_BAD;
	v = jt_get(m, "schemas");
	for (size_t i = 0; i < jt_len(v); i++)
		if (check_schema(jt_at(v, i), true, NULL, err, errlen))
			return ICE_BAD;
	v = jt_get(m, "partition-specs");
	for (size_t i = 0; i < jt_len(v); i++)
		if (check_spec(jt_at(v, i), true, err, errlen))
			return ICE_BAD;
	v = jt_get(m, "sort-orders");
	for (size_t i = 0; i < jt_len(v); i++)
		if (check_order(jt_at(v, i), true, err, errlen))
			return ICE_BAD;
	if ((v = jt_get(m, "properties")) && check_string_map(v, "properties", err, errlen))
		return ICE_BAD;

	MAYBE(m, "snapshots", JT_ARR, "table metadata");
	snaps = jt_get(m, "snapshots");
	for (size_t i = 0; i < jt_len(snaps); i++)
		if (check_snapshot(jt_at(snaps, i), err, errlen))
			return ICE_BAD;
	v = jt_get(m, "current-snapshot-id");
	if (v && !jt_is(v, JT_NULL))
		NEED(m, "current-snapshot-id", JT_NUM, "table metadata");
	if (!id_none(v) && find_id(snaps, "snapshot-id", v) < 0)
		return BAD("table metadata: current-snapshot-id %s is not in snapshots", v->s);
	MAYBE(m, "refs", JT_OBJ, "table metadata");
	if (!(refs = jt_get(m, "refs"))) {
		jt_set(m, "refs", jt_obj());
		refs = jt_get(m, "refs");
	}
	for (size_t i = 0; i < refs->n; i++)
		if (check_ref(refs->keys[i], refs->items[i], snaps, err, errlen))
			return ICE_BAD;
	/* Older writers leave the main branch implicit in current-snapshot-id. */
	if (!id_none(v) && !jt_get(refs, "main")) {
		jt *ref = jt_obj();
		jt_set(ref, "snapshot-id", jt_copy(v));
		jt_set(ref, "type", jt_str("branch"));
		jt_set(refs, "main", ref);
	}
	if (check_list(m, "snapshot-log", "timestamp-ms", JT_NUM, "snapshot-id", JT_NUM, err, errlen) ||
	    check_list(m, "metadata-log", "timestamp-ms", JT_NUM, "metadata-file", JT_STR, err,
		       errlen) ||
	    check_list(m, "statistics", "snapshot-id", JT_NUM, "statistics-path", JT_STR, err,
		       errlen) ||
	    check_list(m, "partition-statistics", "snapshot-id", JT_NUM, "statistics-path", JT_STR,
		       err, errlen) ||
	    check_list(m, "encryption-keys", "key-id", JT_STR, "encrypted-key-metadata", JT_STR, err,
		       errlen))
		return ICE_BAD;
	return ICE_OK;
}

jt *ice_meta_parse(const char *text, size_t len, char *err, size_t errlen)
{
	jt *m = jt_parse(text, len, err, errlen);
	if (m && ice_meta_validate(m, err, errlen) != ICE_OK) {
		jt_free(m);
		return NULL;
	}
	return m;
}

void ice_meta_write(const jt *meta, buf *out) { jt_to_buf(meta, out, false); }

ice_rc ice_schema_check(const jt *schema, bool need_id, int64_t *highest, char *err,
			size_t errlen)
{
	return check_schema(schema, need_id, highest, err, errlen);
}

ice_rc ice_string_map_check(const jt *obj, const char *what, char *err, size_t errlen)
{
	return check_string_map(obj, what, err, errlen);
}

ssize_t ice_find_id(const jt *arr, const char *key, int64_t id) { return find_i64(arr, key, id); }

/* ---- create ---- */

/* Version 1 also carries the current schema and the default spec's fields on their own. */
static void sync_v1(jt *m)
{
	int64_t id;
	ssize_t i;
	if (format_version(m) != 1)
		return;
	if (jt_get_i64(m, "current-schema-id", &id) &&
	    (i = find_i64(jt_get(m, "schemas"), "schema-id", id)) >= 0)
		jt_set(m, "schema", jt_copy(jt_at(jt_get(m, "schemas"), (size_t)i)));
	if (jt_get_i64(m, "default-spec-id", &id) &&
	    (i = find_i64(jt_get(m, "partition-specs"), "spec-id", id)) >= 0)
		jt_set(m, "partition-spec",
		       jt_copy(jt_get(jt_at(jt_get(m, "partition-specs"), (size_t)i), "fields")));
}

/* Collects every field id of a (checked) schema. */
static void schema_ids(const jt *type, idset *ids)
{
	static const char *id_keys[] = {"element-id", "key-id", "value-id"};
	static const char *sub_keys[] = {"element", "key", "value"};
	jt *fields = jt_get(type, "fields");
	int64_t id;
	if (!jt_is(type, JT_OBJ))
		return; /* a primitive */
	for (size_t i = 0; i < jt_len(fields); i++) {
		if (jt_get_i64(jt_at(fields, i), "id", &id))
			idset_add(ids, id);
		schema_ids(jt_get(jt_at(fields, i), "type"), ids);
	}
	for (size_t k = 0; k < 3; k++) {
		if (jt_get_i64(type, id_keys[k], &id))
			idset_add(ids, id);
		schema_ids(jt_get(type, sub_keys[k]), ids);
	}
}

/* The request's spec with spec-id 0 and field ids assigned; NULL on a bad spec. */
static jt *create_spec(const jt *given, const idset *ids, int64_t *last, char *err, size_t errlen)
{
	jt *spec = jt_obj(), *fields = jt_arr();
	int64_t next = 1000, id;

	jt_set(spec, "spec-id", jt_i64(0));
	jt_set(spec, "fields", fields);
	*last = 999;
	if (!given || jt_is(given, JT_NULL))
		return spec;
	if (check_spec(given, false, err, errlen))
		goto bad;
	for (size_t i = 0; i < jt_len(jt_get(given, "fields")); i++) {
		jt *f = jt_copy(jt_at(jt_get(given, "fields"), i));
		jt_append(fields, f);
		if (jt_get_i64(f, "source-id", &id) && !idset_has(ids, id)) {
			BAD("partition-spec: source-id %" PRId64 " is not a schema field", id);
			goto bad;
		}
		if (!jt_get_i64(f, "field-id", &id)) {
			jt_set(f, "field-id", jt_i64(id = next));
		}
		next = id + 1;
		if (id > *last)
			*last = id;
	}
	return spec;
bad:
	jt_free(spec);
	return NULL;
}

/* The request's write order: id 0 when unsorted, its own id (or 1) when sorted. */
static jt *create_order(const jt *given, const idset *ids, char *err, size_t errlen)
{
	jt *order;
	int64_t id = 1;
	if (!given || jt_is(given, JT_NULL) || !jt_len(jt_get(given, "fields"))) {
		order = jt_obj();
		jt_set(order, "order-id", jt_i64(0));
		jt_set(order, "fields", jt_arr());
		if (given && !jt_is(given, JT_NULL) && check_order(given, false, err, errlen)) {
			jt_free(order);
			return NULL;
		}
		return order;
	}
	if (check_order(given, false, err, errlen))
		return NULL;
	for (size_t i = 0; i < jt_len(jt_get(given, "fields")); i++)
		if (jt_get_i64(jt_at(jt_get(given, "fields"), i), "source-id", &id) &&
		    !idset_has(ids, id)) {
			BAD("write-order: source-id %" PRId64 " is not a schema field", id);
			return NULL;
		}
	id = 1;
	order = jt_copy(given);
	if (!jt_get_i64(order, "order-id", &id) || id <= 0)
		id = 1;
	jt_set(order, "order-id", jt_i64(id));
	return order;
}

/* Reads properties["format-version"] (a string, or a number) and drops it. */
static ice_rc take_format_version(jt *props, int *fv, char *err, size_t errlen)
{
	jt *v = jt_take(props, "format-version");
	int64_t n = 2;
	bool good = !v || (jt_is(v, JT_STR) ? parse_i64(v->s, &n) : jt_as_i64(v, &n));
	jt_free(v);
	if (!good || n < 1 || n > ICE_MAX_FORMAT_VERSION)
		return BAD("properties: format-version must be 1, 2 or 3");
	*fv = (int)n;
	return ICE_OK;
}

/* A new table's snapshot state: none, no refs, empty logs; v3 rows start at 0. */
static void no_snapshots(jt *m, int64_t fv)
{
	jt_set(m, "current-snapshot-id", jt_i64(-1));
	jt_set(m, "refs", jt_obj());
	jt_set(m, "snapshots", jt_arr());
	jt_set(m, "statistics", jt_arr());
	jt_set(m, "partition-statistics", jt_arr());
	jt_set(m, "snapshot-log", jt_arr());
	jt_set(m, "metadata-log", jt_arr());
	if (fv >= 3)
		jt_set(m, "next-row-id", jt_i64(0));
}

/* A list holding one element. */
static jt *list1(jt *v)
{
	jt *a = jt_arr();
	jt_append(a, v);
	return a;
}

ice_rc ice_meta_create(const jt *req, const char *uuid, const char *location, int64_t now_ms,
		       jt **out, char *err, size_t errlen)
{
	const jt *schema = jt_get(req, "schema");
	jt *m = NULL, *props = NULL, *spec = NULL, *order = NULL, *s;
	idset ids = {0};
	int64_t highest, last_part;
	int fv = 2;
	ice_rc rc = ICE_BAD;
	const char *loc;

	*out = NULL;
	if (!jt_is(req, JT_OBJ))
		return BAD("create table: the body must be a JSON object");
	if (!jt_get_str(req, "name") || !*jt_get_str(req, "name"))
		return BAD("create table: missing \"name\"");
	if (check_schema(schema, false, &highest, err, errlen))
		return ICE_BAD;
	loc = jt_get_str(req, "location");
	if (jt_get(req, "location") && !jt_is(jt_get(req, "location"), JT_NULL) && !loc)
		return BAD("create table: \"location\" must be a string");
	if (!loc || !*loc)
		loc = location;
	if (!loc || !*loc)
		return BAD("create table: no location");
	props = jt_copy(jt_get(req, "properties"));
	if (!props || jt_is(props, JT_NULL)) {
		jt_free(props);
		props = jt_obj();
	}
	if (check_string_map(props, "properties", err, errlen) ||
	    take_format_version(props, &fv, err, errlen))
		goto out;
	schema_ids(schema, &ids);
	if (!(spec = create_spec(jt_get(req, "partition-spec"), &ids, &last_part, err, errlen)) ||
	    !(order = create_order(jt_get(req, "write-order"), &ids, err, errlen)))
		goto out;

	m = jt_obj();
	jt_set(m, "format-version", jt_i64(fv));
	jt_set(m, "table-uuid", jt_str(uuid));
	jt_set(m, "location", jt_str(loc));
	if (fv >= 2)
		jt_set(m, "last-sequence-number", jt_i64(0));
	jt_set(m, "last-updated-ms", jt_i64(now_ms));
	jt_set(m, "last-column-id", jt_i64(highest));
	jt_set(m, "current-schema-id", jt_i64(0));
	s = jt_copy(schema);
	jt_set(s, "type", jt_str("struct"));
	jt_set(s, "schema-id", jt_i64(0));
	jt_set(m, "schemas", list1(s));
	jt_set(m, "default-spec-id", jt_i64(0));
	jt_set(m, "partition-specs", list1(spec));
	spec = NULL;
	jt_set(m, "last-partition-id", jt_i64(last_part));
	jt_set(m, "default-sort-order-id", jt_copy(jt_get(order, "order-id")));
	jt_set(m, "sort-orders", list1(order));
	order = NULL;
	jt_set(m, "properties", props);
	props = NULL;
	no_snapshots(m, fv);
	sync_v1(m);
	if ((rc = ice_meta_validate(m, err, errlen)) == ICE_OK) {
		*out = m;
		m = NULL;
	}
out:
	jt_free(m);
	jt_free(props);
	jt_free(spec);
	jt_free(order);
	free(ids.ids);
	return rc;
}

/* ---- requirements ---- */

/* A requirement's integer field, compared with the table's. */
static ice_rc assert_int(const jt *meta, const jt *r, const char *rkey, const char *mkey,
			 const char *type, char *err, size_t errlen)
{
	int64_t want, have = -1;
	if (!jt_get_i64(r, rkey, &want))
		return BAD("%s: \"%s\" must be an integer", type, rkey);
	jt_get_i64(meta, mkey, &have);
	if (want != have)
		return CONFLICT("%s failed: %s is %" PRId64 ", expected %" PRId64, type, mkey, have,
				want);
	return ICE_OK;
}

static ice_rc check_one(const jt *meta, const jt *r, char *err, size_t errlen)
{
	static const struct {
		const char *type, *rkey, *mkey;
	} ints[] = {
		{"assert-last-assigned-field-id", "last-assigned-field-id", "last-column-id"},
		{"assert-current-schema-id", "current-schema-id", "current-schema-id"},
		{"assert-last-assigned-partition-id", "last-assigned-partition-id",
		 "last-partition-id"},
		{"assert-default-spec-id", "default-spec-id", "default-spec-id"},
		{"assert-default-sort-order-id", "default-sort-order-id", "default-sort-order-id"},
	};
	const char *type = jt_get_str(r, "type");

	if (!type)
		return BAD("requirement: missing \"type\"");
	if (!strcmp(type, "assert-create"))
		return meta ? CONFLICT("assert-create failed: the table already exists") : ICE_OK;
	for (size_t i = 0; i < sizeof(ints) / sizeof(*ints); i++)
		if (!strcmp(type, ints[i].type))
			return meta ? assert_int(meta, r, ints[i].rkey, ints[i].mkey, type, err, errlen)
				    : CONFLICT("%s failed: the table does not exist", type);
	if (!strcmp(type, "assert-table-uuid")) {
		const char *want = jt_get_str(r, "uuid"), *have;
		if (!want)
			return BAD("assert-table-uuid: \"uuid\" must be a string");
		if (!meta)
			return CONFLICT("assert-table-uuid failed: the table does not exist");
		have = jt_get_str(meta, "table-uuid");
		if (!have || strcasecmp(have, want))
			return CONFLICT("assert-table-uuid failed: the table's uuid is %s, expected %s",
					have ? have : "unset", want);
		return ICE_OK;
	}
	if (!strcmp(type, "assert-ref-snapshot-id")) {
		const char *ref = jt_get_str(r, "ref");
		jt *want = jt_get(r, "snapshot-id"), *have;
		if (!ref)
			return BAD("assert-ref-snapshot-id: \"ref\" must be a string");
		if (want && !jt_is(want, JT_NULL) && !is_id(want))
			return BAD("assert-ref-snapshot-id: \"snapshot-id\" must be an integer or null");
		if (!meta)
			return CONFLICT("assert-ref-snapshot-id failed: the table does not exist");
		have = jt_get(jt_get(jt_get(meta, "refs"), ref), "snapshot-id");
		if (!want || jt_is(want, JT_NULL))
			return have ? CONFLICT("assert-ref-snapshot-id failed: ref %s exists (at "
					       "snapshot %s), expected none",
					       ref, have->s)
				    : ICE_OK;
		if (!have)
			return CONFLICT("assert-ref-snapshot-id failed: ref %s does not exist, "
					"expected snapshot %s",
					ref, want->s);
		if (!id_eq(have, want))
			return CONFLICT("assert-ref-snapshot-id failed: ref %s is at snapshot %s, "
					"expected %s",
					ref, have->s, want->s);
		return ICE_OK;
	}
	return BAD("unknown requirement type \"%s\"", type);
}

ice_rc ice_check_each(const jt *meta, const jt *reqs, ice_check_fn one, char *err, size_t errlen)
{
	ice_rc rc, first = ICE_OK;
	char msg[256];
	if (!reqs || jt_is(reqs, JT_NULL))
		return ICE_OK;
	if (!jt_is(reqs, JT_ARR))
		return BAD("\"requirements\" must be an array");
	/* A malformed requirement anywhere is 400 even when an earlier one conflicts. */
	for (size_t i = 0; i < jt_len(reqs); i++) {
		if (!jt_is(jt_at(reqs, i), JT_OBJ))
			return BAD("a requirement must be an object");
		rc = one(meta, jt_at(reqs, i), msg, sizeof(msg));
		if (rc == ICE_BAD)
			return BAD("%s", msg);
		if (rc == ICE_CONFLICT && first == ICE_OK) {
			first = rc;
			fail(err, errlen, rc, "%s", msg);
		}
	}
	return first;
}

ice_rc ice_check_requirements(const jt *meta, const jt *reqs, char *err, size_t errlen)
{
	return ice_check_each(meta, reqs, check_one, err, errlen);
}

/* ---- updates ---- */

typedef struct {
	jt *m;             /* the copy being changed */
	int64_t now;
	int64_t updated;   /* last-updated-ms so far: now, or an added snapshot's timestamp */
	int64_t last_schema, last_spec, last_order; /* added by this commit, or -1 */
	char *err;
	size_t errlen;
} ice_ctx;

#define UBAD(...) fail(c->err, c->errlen, ICE_BAD, __VA_ARGS__)
#define UCONFLICT(...) fail(c->err, c->errlen, ICE_CONFLICT, __VA_ARGS__)

/* m[key] as an array or object, created when absent. */
static jt *member(jt *m, const char *key, jt_type t)
{
	jt *v = jt_get(m, key);
	if (!jt_is(v, t))
		jt_set(m, key, v = t == JT_ARR ? jt_arr() : jt_obj());
	return v;
}

/* assign-uuid, set-location: a non-empty string into the metadata. */
static ice_rc set_string(ice_ctx *c, const jt *u, const char *ukey, const char *mkey)
{
	const char *s = jt_get_str(u, ukey);
	if (!s || !*s)
		return UBAD("%s: \"%s\" must be a non-empty string", jt_get_str(u, "action"), ukey);
	jt_set(c->m, mkey, jt_str(s));
	return ICE_OK;
}

static ice_rc u_assign_uuid(ice_ctx *c, const jt *u)
{
	return set_string(c, u, "uuid", "table-uuid");
}

static ice_rc u_upgrade_format_version(ice_ctx *c, const jt *u)
{
	int64_t to;
	int from = format_version(c->m);
	if (!jt_get_i64(u, "format-version", &to))
		return UBAD("upgrade-format-version: \"format-version\" must be an integer");
	if (to < from)
		return UBAD("upgrade-format-version: cannot downgrade from %d to %" PRId64, from, to);
	if (to > ICE_MAX_FORMAT_VERSION)
		return UBAD("upgrade-format-version: unsupported format-version %" PRId64, to);
	if (to == from)
		return ICE_OK;
	if (from == 1) {
		if (!jt_get(c->m, "last-sequence-number"))
			jt_set(c->m, "last-sequence-number", jt_i64(0));
		jt_remove(c->m, "schema");
		jt_remove(c->m, "partition-spec");
	}
	if (to >= 3 && !jt_get(c->m, "next-row-id"))
		jt_set(c->m, "next-row-id", jt_i64(0));
	jt_set(c->m, "format-version", jt_i64(to));
	return ICE_OK;
}

/* The id of an existing entry whose `same` member equals the new one's, or -1. */
static int64_t reuse_id(const jt *list, const char *id_key, const jt *e, const char *same,
			const char *same2)
{
	int64_t id;
	for (size_t i = 0; i < jt_len(list); i++) {
		jt *o = jt_at(list, i);
		if (jt_equal(jt_get(o, same), jt_get(e, same)) &&
		    (!same2 || jt_equal(jt_get(o, same2), jt_get(e, same2))) &&
		    jt_get_i64(o, id_key, &id))
			return id;
	}
	return -1;
}

static ice_rc u_add_schema(ice_ctx *c, const jt *u)
{
	jt *schemas = member(c->m, "schemas", JT_ARR), *s = jt_get(u, "schema");
	int64_t highest, given, last = 0, id;
	if (check_schema(s, false, &highest, c->err, c->errlen))
		return ICE_BAD;
	jt_get_i64(c->m, "last-column-id", &last);
	if (jt_get(u, "last-column-id")) {
		if (!jt_get_i64(u, "last-column-id", &given))
			return UBAD("add-schema: \"last-column-id\" must be an integer");
		if (given < last)
			return UBAD("add-schema: last-column-id %" PRId64 " is below the table's %" PRId64,
				    given, last);
		if (given > highest)
			highest = given;
	}
	if (highest > last)
		jt_set(c->m, "last-column-id", jt_i64(highest));
	/* An identical schema is reused (set-current-schema -1 then points at it). */
	if ((id = reuse_id(schemas, "schema-id", s, "fields", "identifier-field-ids")) >= 0) {
		c->last_schema = id;
		return ICE_OK;
	}
	id = max_i64(schemas, "schema-id", -1) + 1;
	s = jt_copy(s);
	jt_set(s, "type", jt_str("struct"));
	jt_set(s, "schema-id", jt_i64(id));
	jt_append(schemas, s);
	c->last_schema = id;
	return ICE_OK;
}

/* set-current-schema, set-default-spec, set-default-sort-order: -1 is this commit's last added. */
static ice_rc set_current(ice_ctx *c, const jt *u, const char *ukey, const char *list,
			  const char *id_key, const char *cur_key, int64_t last_added)
{
	const char *action = jt_get_str(u, "action");
	int64_t id;
	if (!jt_get_i64(u, ukey, &id))
		return UBAD("%s: \"%s\" must be an integer", action, ukey);
	if (id == -1 && (id = last_added) < 0)
		return UBAD("%s: -1 (the last added) but this commit added none", action);
	if (find_i64(jt_get(c->m, list), id_key, id) < 0)
		return UBAD("%s: %s %" PRId64 " does not exist", action, ukey, id);
	jt_set(c->m, cur_key, jt_i64(id));
	return ICE_OK;
}

static ice_rc u_set_current_schema(ice_ctx *c, const jt *u)
{
	return set_current(c, u, "schema-id", "schemas", "schema-id", "current-schema-id",
			   c->last_schema);
}

/* Every field's source-id names a column of one of the table's schemas. */
static ice_rc sources_exist(ice_ctx *c, const jt *fields, const char *action)
{
	idset ids = {0};
	jt *schemas = jt_get(c->m, "schemas");
	int64_t id;
	ice_rc rc = ICE_OK;
	for (size_t i = 0; i < jt_len(schemas); i++)
		schema_ids(jt_at(schemas, i), &ids);
	for (size_t i = 0; i < jt_len(fields) && rc == ICE_OK; i++)
		if (jt_get_i64(jt_at(fields, i), "source-id", &id) && !idset_has(&ids, id))
			rc = UBAD("%s: source-id %" PRId64 " is not a column of the table", action, id);
	free(ids.ids);
	return rc;
}

static ice_rc u_add_spec(ice_ctx *c, const jt *u)
{
	jt *specs = member(c->m, "partition-specs", JT_ARR), *spec = jt_get(u, "spec"), *fields;
	int64_t last = 999, id;
	if (check_spec(spec, false, c->err, c->errlen) ||
	    sources_exist(c, jt_get(spec, "fields"), "add-spec"))
		return ICE_BAD;
	jt_get_i64(c->m, "last-partition-id", &last);
	spec = jt_copy(spec);
	fields = jt_get(spec, "fields");
	/* New partition fields without an id get the next ones after last-partition-id. */
	for (size_t i = 0; i < jt_len(fields); i++) {
		if (!jt_get_i64(jt_at(fields, i), "field-id", &id))
			jt_set(jt_at(fields, i), "field-id", jt_i64(id = last + 1));
		if (id > last)
			last = id;
	}
	jt_set(c->m, "last-partition-id", jt_i64(last));
	if ((id = reuse_id(specs, "spec-id", spec, "fields", NULL)) < 0) {
		id = max_i64(specs, "spec-id", -1) + 1;
		jt_set(spec, "spec-id", jt_i64(id));
		jt_append(specs, spec);
	} else {
		jt_free(spec);
	}
	c->last_spec = id;
	return ICE_OK;
}

static ice_rc u_set_default_spec(ice_ctx *c, const jt *u)
{
	return set_current(c, u, "spec-id", "partition-specs", "spec-id", "default-spec-id",
			   c->last_spec);
}

static ice_rc u_add_sort_order(ice_ctx *c, const jt *u)
{
	jt *orders = member(c->m, "sort-orders", JT_ARR), *o = jt_get(u, "sort-order");
	int64_t id;
	if (check_order(o, false, c->err, c->errlen) ||
	    sources_exist(c, jt_get(o, "fields"), "add-sort-order"))
		return ICE_BAD;
	if ((id = reuse_id(orders, "order-id", o, "fields", NULL)) < 0) {
		/* Order id 0 is reserved for the unsorted order. */
		id = jt_len(jt_get(o, "fields")) ? max_i64(orders, "order-id", 0) + 1 : 0;
		o = jt_copy(o);
		jt_set(o, "order-id", jt_i64(id));
		jt_append(orders, o);
	}
	c->last_order = id;
	return ICE_OK;
}

static ice_rc u_set_default_sort_order(ice_ctx *c, const jt *u)
{
	return set_current(c, u, "sort-order-id", "sort-orders", "order-id",
			   "default-sort-order-id", c->last_order);
}

static ice_rc u_add_snapshot(ice_ctx *c, const jt *u)
{
	jt *snaps = member(c->m, "snapshots", JT_ARR), *s = jt_get(u, "snapshot");
	int fv = format_version(c->m);
	int64_t seq, last_seq = 0, ts, first, added, next = 0;
	if (check_snapshot(s, c->err, c->errlen))
		return ICE_BAD;
	if (find_id(snaps, "snapshot-id", jt_get(s, "snapshot-id")) >= 0)
		return UBAD("add-snapshot: snapshot %s already exists", jt_get(s, "snapshot-id")->s);
	if (!jt_get_i64(s, "timestamp-ms", &ts))
		return UBAD("add-snapshot: \"timestamp-ms\" out of range");
	if (fv >= 2) {
		jt_get_i64(c->m, "last-sequence-number", &last_seq);
		if (!jt_get_i64(s, "sequence-number", &seq) || !jt_get_str(s, "manifest-list") ||
		    !jt_is(jt_get(s, "summary"), JT_OBJ))
			return UBAD("add-snapshot: format version %d needs sequence-number, "
				    "manifest-list and summary",
				    fv);
		/* A stale sequence number means the client built on old metadata: retry. */
		if (seq <= last_seq)
			return UCONFLICT("add-snapshot: sequence number %" PRId64
					 " is not above the table's %" PRId64,
					 seq, last_seq);
	}
	if (fv >= 3) {
		jt_get_i64(c->m, "next-row-id", &next);
		if (!jt_get_i64(s, "first-row-id", &first) || !jt_get_i64(s, "added-rows", &added) ||
		    added < 0)
			return UBAD("add-snapshot: format version 3 needs first-row-id and added-rows");
		if (first < next)
			return UCONFLICT("add-snapshot: first-row-id %" PRId64
					 " is behind the table's next-row-id %" PRId64,
					 first, next);
		if (added > INT64_MAX - first)
			return UBAD("add-snapshot: added-rows overflows next-row-id");
		jt_set(c->m, "next-row-id", jt_i64(first + added));
	}
	if (fv >= 2)
		jt_set(c->m, "last-sequence-number", jt_i64(seq));
	jt_append(snaps, jt_copy(s));
	c->updated = ts;
	return ICE_OK;
}

static void log_snapshot(ice_ctx *c, const jt *id)
{
	jt *e = jt_obj();
	jt_set(e, "timestamp-ms", jt_i64(c->updated));
	jt_set(e, "snapshot-id", jt_copy(id));
	jt_append(member(c->m, "snapshot-log", JT_ARR), e);
}

static ice_rc u_set_snapshot_ref(ice_ctx *c, const jt *u)
{
	static const char *retention[] = {"max-ref-age-ms", "max-snapshot-age-ms",
					  "min-snapshots-to-keep"};
	const char *name = jt_get_str(u, "ref-name"), *type = jt_get_str(u, "type");
	jt *id = jt_get(u, "snapshot-id"), *refs = member(c->m, "refs", JT_OBJ), *ref, *old;
	if (!name || !*name)
		return UBAD("set-snapshot-ref: \"ref-name\" must be a string");
	if (!type || (strcmp(type, "branch") && strcmp(type, "tag")))
		return UBAD("set-snapshot-ref: \"type\" must be \"branch\" or \"tag\"");
	if (!strcmp(name, "main") && strcmp(type, "branch"))
		return UBAD("set-snapshot-ref: main must be a branch");
	if (!is_id(id))
		return UBAD("set-snapshot-ref: \"snapshot-id\" must be an integer");
	if (find_id(jt_get(c->m, "snapshots"), "snapshot-id", id) < 0)
		return UBAD("set-snapshot-ref: snapshot %s does not exist", id->s);
	ref = jt_obj();
	jt_set(ref, "snapshot-id", jt_copy(id));
	jt_set(ref, "type", jt_str(type));
	for (size_t i = 0; i < 3; i++) {
		jt *v = jt_get(u, retention[i]);
		if (v && !jt_is(v, JT_NULL)) {
			if (!is_id(v)) {
				jt_free(ref);
				return UBAD("set-snapshot-ref: \"%s\" must be an integer", retention[i]);
			}
			jt_set(ref, retention[i], jt_copy(v));
		}
	}
	old = jt_get(refs, name);
	if (old && jt_equal(old, ref)) {
		jt_free(ref);
		return ICE_OK;
	}
	jt_set(refs, name, ref);
	if (!strcmp(name, "main")) {
		jt_set(c->m, "current-snapshot-id", jt_copy(id));
		log_snapshot(c, id);
	}
	return ICE_OK;
}

/* Drops from m[key] the entries whose snapshot-id is id. */
static void drop_by_snapshot(jt *m, const char *key, const jt *id)
{
	jt *arr = jt_get(m, key);
	for (size_t i = jt_len(arr); i-- > 0;)
		if (id_eq(jt_get(jt_at(arr, i), "snapshot-id"), id))
			jt_remove_at(arr, i);
}

static void drop_ref(jt *m, const char *name)
{
	bool is_main = !strcmp(name, "main"); /* name may be the key being freed */
	if (jt_remove(jt_get(m, "refs"), name) && is_main)
		jt_set(m, "current-snapshot-id", jt_i64(-1));
}

/*
 * The snapshot log keeps only the history after the last entry whose snapshot
 * is gone, so it never points at a removed snapshot.
 */
static void trim_snapshot_log(jt *m)
{
	jt *log = jt_get(m, "snapshot-log"), *snaps = jt_get(m, "snapshots");
	size_t keep_from = 0;
	for (size_t i = 0; i < jt_len(log); i++)
		if (find_id(snaps, "snapshot-id", jt_get(jt_at(log, i), "snapshot-id")) < 0)
			keep_from = i + 1;
	while (keep_from-- > 0)
		jt_remove_at(log, 0);
}

static ice_rc u_remove_snapshots(ice_ctx *c, const jt *u)
{
	jt *ids = jt_get(u, "snapshot-ids"), *snaps = jt_get(c->m, "snapshots");
	jt *refs = jt_get(c->m, "refs");
	ssize_t at;
	if (!jt_is(ids, JT_ARR))
		return UBAD("remove-snapshots: \"snapshot-ids\" must be an array");
	for (size_t i = 0; i < jt_len(ids); i++)
		if (!is_id(jt_at(ids, i)))
			return UBAD("remove-snapshots: snapshot ids must be integers");
	for (size_t i = 0; i < jt_len(ids); i++) {
		jt *id = jt_at(ids, i);
		if ((at = find_id(snaps, "snapshot-id", id)) < 0)
			continue; /* already gone */
		jt_remove_at(snaps, (size_t)at);
		drop_by_snapshot(c->m, "statistics", id);
		drop_by_snapshot(c->m, "partition-statistics", id);
		/* A ref cannot outlive its snapshot. */
		for (size_t r = jt_len(refs); r-- > 0;)
			if (id_eq(jt_get(refs->items[r], "snapshot-id"), id))
				drop_ref(c->m, refs->keys[r]);
	}
	trim_snapshot_log(c->m);
	return ICE_OK;
}

static ice_rc u_remove_snapshot_ref(ice_ctx *c, const jt *u)
{
	const char *name = jt_get_str(u, "ref-name");
	if (!name)
		return UBAD("remove-snapshot-ref: \"ref-name\" must be a string");
	drop_ref(c->m, name);
	return ICE_OK;
}

static ice_rc u_set_location(ice_ctx *c, const jt *u)
{
	return set_string(c, u, "location", "location");
}

ice_rc ice_set_properties(jt *m, const jt *u, char *err, size_t errlen)
{
	jt *up = jt_get(u, "updates"), *props;
	if (check_string_map(up, "set-properties: \"updates\"", err, errlen))
		return ICE_BAD;
	props = member(m, "properties", JT_OBJ);
	for (size_t i = 0; i < up->n; i++)
		jt_set(props, up->keys[i], jt_copy(up->items[i]));
	return ICE_OK;
}

ice_rc ice_remove_properties(jt *m, const jt *u, char *err, size_t errlen)
{
	jt *rm = jt_get(u, "removals");
	if (!jt_is(rm, JT_ARR))
		return BAD("remove-properties: \"removals\" must be an array");
	for (size_t i = 0; i < jt_len(rm); i++)
		if (!jt_is(jt_at(rm, i), JT_STR))
			return BAD("remove-properties: removals must be strings");
	for (size_t i = 0; i < jt_len(rm); i++)
		jt_remove(jt_get(m, "properties"), jt_at(rm, i)->s);
	return ICE_OK;
}

static ice_rc u_set_properties(ice_ctx *c, const jt *u)
{
	return ice_set_properties(c->m, u, c->err, c->errlen);
}

static ice_rc u_remove_properties(ice_ctx *c, const jt *u)
{
	return ice_remove_properties(c->m, u, c->err, c->errlen);
}

/* set-statistics, set-partition-statistics: one file per snapshot, replaced. */
static ice_rc set_stats(ice_ctx *c, const jt *u, const char *ukey, const char *list)
{
	const char *action = jt_get_str(u, "action");
	jt *st = jt_get(u, ukey), *arr;
	char *err = c->err;
	size_t errlen = c->errlen;
	if (!jt_is(st, JT_OBJ))
		return UBAD("%s: \"%s\" must be an object", action, ukey);
	NEED(st, "snapshot-id", JT_NUM, action);
	NEED(st, "statistics-path", JT_STR, action);
	NEED(st, "file-size-in-bytes", JT_NUM, action);
	arr = member(c->m, list, JT_ARR);
	drop_by_snapshot(c->m, list, jt_get(st, "snapshot-id"));
	jt_append(arr, jt_copy(st));
	return ICE_OK;
}

static ice_rc remove_stats(ice_ctx *c, const jt *u, const char *list)
{
	jt *id = jt_get(u, "snapshot-id");
	if (!is_id(id))
		return UBAD("%s: \"snapshot-id\" must be an integer", jt_get_str(u, "action"));
	drop_by_snapshot(c->m, list, id);
	return ICE_OK;
}

static ice_rc u_set_statistics(ice_ctx *c, const jt *u)
{
	return set_stats(c, u, "statistics", "statistics");
}

static ice_rc u_remove_statistics(ice_ctx *c, const jt *u)
{
	return remove_stats(c, u, "statistics");
}

static ice_rc u_set_partition_statistics(ice_ctx *c, const jt *u)
{
	return set_stats(c, u, "partition-statistics", "partition-statistics");
}

static ice_rc u_remove_partition_statistics(ice_ctx *c, const jt *u)
{
	return remove_stats(c, u, "partition-statistics");
}

/* remove-schemas, remove-partition-specs: never the one in use. */
static ice_rc remove_ids(ice_ctx *c, const jt *u, const char *ukey, const char *list,
			 const char *id_key, const char *cur_key)
{
	const char *action = jt_get_str(u, "action");
	jt *ids = jt_get(u, ukey), *arr = jt_get(c->m, list);
	int64_t id, cur = -1;
	ssize_t at;
	if (!jt_is(ids, JT_ARR))
		return UBAD("%s: \"%s\" must be an array", action, ukey);
	jt_get_i64(c->m, cur_key, &cur);
	for (size_t i = 0; i < jt_len(ids); i++) {
		if (!jt_as_i64(jt_at(ids, i), &id))
			return UBAD("%s: ids must be integers", action);
		if (id == cur)
			return UBAD("%s: cannot remove %s %" PRId64 ", it is the %s", action, id_key, id,
				    cur_key);
		if ((at = find_i64(arr, id_key, id)) >= 0)
			jt_remove_at(arr, (size_t)at);
	}
	return ICE_OK;
}

static ice_rc u_remove_schemas(ice_ctx *c, const jt *u)
{
	return remove_ids(c, u, "schema-ids", "schemas", "schema-id", "current-schema-id");
}

static ice_rc u_remove_partition_specs(ice_ctx *c, const jt *u)
{
	return remove_ids(c, u, "spec-ids", "partition-specs", "spec-id", "default-spec-id");
}

/* Row lineage is always on in version 3 (the update came from an early 1.8 draft). */
static ice_rc u_enable_row_lineage(ice_ctx *c, const jt *u)
{
	if (format_version(c->m) < 3)
		return UBAD("enable-row-lineage: needs format-version 3");
	return ICE_OK;
}

static ice_rc u_add_encryption_key(ice_ctx *c, const jt *u)
{
	jt *key = jt_get(u, "encryption-key"), *keys;
	char *err = c->err;
	size_t errlen = c->errlen;
	ssize_t at;
	if (format_version(c->m) < 3)
		return UBAD("add-encryption-key: needs format-version 3");
	if (!jt_is(key, JT_OBJ))
		return UBAD("add-encryption-key: \"encryption-key\" must be an object");
	NEED(key, "key-id", JT_STR, "add-encryption-key");
	NEED(key, "encrypted-key-metadata", JT_STR, "add-encryption-key");
	keys = member(c->m, "encryption-keys", JT_ARR);
	for (at = (ssize_t)jt_len(keys); at-- > 0;)
		if (streq(jt_get_str(jt_at(keys, (size_t)at), "key-id"), jt_get_str(key, "key-id")))
			jt_remove_at(keys, (size_t)at);
	jt_append(keys, jt_copy(key));
	return ICE_OK;
}

static ice_rc u_remove_encryption_key(ice_ctx *c, const jt *u)
{
	const char *id = jt_get_str(u, "key-id");
	jt *keys = jt_get(c->m, "encryption-keys");
	if (!id)
		return UBAD("remove-encryption-key: \"key-id\" must be a string");
	for (size_t i = jt_len(keys); i-- > 0;)
		if (streq(jt_get_str(jt_at(keys, i), "key-id"), id))
			jt_remove_at(keys, i);
	return ICE_OK;
}

static const struct {
	const char *action;
	ice_rc (*apply)(ice_ctx *c, const jt *u);
} updates[] = {
	{"assign-uuid", u_assign_uuid},
	{"upgrade-format-version", u_upgrade_format_version},
	{"add-schema", u_add_schema},
	{"set-current-schema", u_set_current_schema},
	{"add-spec", u_add_spec},
	{"set-default-spec", u_set_default_spec},
	{"add-sort-order", u_add_sort_order},
	{"set-default-sort-order", u_set_default_sort_order},
	{"add-snapshot", u_add_snapshot},
	{"set-snapshot-ref", u_set_snapshot_ref},
	{"remove-snapshots", u_remove_snapshots},
	{"remove-snapshot-ref", u_remove_snapshot_ref},
	{"set-location", u_set_location},
	{"set-properties", u_set_properties},
	{"remove-properties", u_remove_properties},
	{"set-statistics", u_set_statistics},
	{"remove-statistics", u_remove_statistics},
	{"set-partition-statistics", u_set_partition_statistics},
	{"remove-partition-statistics", u_remove_partition_statistics},
	{"remove-partition-specs", u_remove_partition_specs},
	{"remove-schemas", u_remove_schemas},
	{"enable-row-lineage", u_enable_row_lineage},
	{"add-encryption-key", u_add_encryption_key},
	{"remove-encryption-key", u_remove_encryption_key},
};

static ice_rc apply_one(ice_ctx *c, const jt *u)
{
	const char *action = jt_get_str(u, "action");
	if (!jt_is(u, JT_OBJ))
		return UBAD("an update must be an object");
	if (!action)
		return UBAD("update: missing \"action\"");
	for (size_t i = 0; i < sizeof(updates) / sizeof(*updates); i++)
		if (!strcmp(action, updates[i].action))
			return updates[i].apply(c, u);
	return UBAD("unknown update action \"%s\"", action);
}

ice_rc ice_apply_updates(jt **meta, const jt *ups, int64_t now_ms, int64_t *updated_ms, char *err,
			 size_t errlen)
{
	ice_ctx c = {.now = now_ms, .updated = now_ms, .last_schema = -1, .last_spec = -1,
		     .last_order = -1, .err = err, .errlen = errlen};
	char msg[256];
	ice_rc rc = ICE_OK;

	if (!jt_is(*meta, JT_OBJ))
		return BAD("no table metadata to update");
	if (ups && !jt_is(ups, JT_NULL) && !jt_is(ups, JT_ARR))
		return BAD("\"updates\" must be an array");
	/* An unknown action anywhere is 400 before anything is tried. */
	for (size_t i = 0; i < jt_len(ups); i++) {
		const char *action = jt_get_str(jt_at(ups, i), "action");
		size_t k = 0;
		while (action && k < sizeof(updates) / sizeof(*updates) &&
		       strcmp(action, updates[k].action))
			k++;
		if (!action || k == sizeof(updates) / sizeof(*updates))
			return apply_one(&c, jt_at(ups, i));
	}
	c.m = jt_copy(*meta);
	for (size_t i = 0; i < jt_len(ups) && rc == ICE_OK; i++)
		rc = apply_one(&c, jt_at(ups, i));
	if (rc == ICE_OK) {
		sync_v1(c.m);
		if (ice_meta_validate(c.m, msg, sizeof(msg)) != ICE_OK)
			rc = BAD("the commit leaves invalid metadata: %s", msg);
	}
	if (rc != ICE_OK) {
		jt_free(c.m);
		return rc;
	}
	jt_free(*meta);
	*meta = c.m;
	if (updated_ms)
		*updated_ms = c.updated;
	return ICE_OK;
}

/* ---- finishing a version ---- */

void ice_meta_finish(jt *m, int64_t updated_ms, const char *prev_file, int64_t prev_ms)
{
	int64_t max = 100;
	const char *p = jt_get_str(jt_get(m, "properties"), "write.metadata.previous-versions-max");
	jt *log;
	if (p && (!parse_i64(p, &max) || max < 1))
		max = 1;
	jt_set(m, "last-updated-ms", jt_i64(updated_ms));
	if (!prev_file)
		return;
	log = member(m, "metadata-log", JT_ARR);
	jt *e = jt_obj();
	jt_set(e, "timestamp-ms", jt_i64(prev_ms));
	jt_set(e, "metadata-file", jt_str(prev_file));
	jt_append(log, e);
	while (jt_len(log) > (size_t)max)
		jt_remove_at(log, 0);
}

/* What a staged create starts from; its updates supply the rest. */
static jt *empty_meta(const jt *ups, int64_t now_ms)
{
	jt *m = jt_obj();
	int64_t fv = 2;
	for (size_t i = 0; i < jt_len(ups); i++)
		if (streq(jt_get_str(jt_at(ups, i), "action"), "upgrade-format-version"))
			jt_get_i64(jt_at(ups, i), "format-version", &fv);
	if (fv < 1 || fv > ICE_MAX_FORMAT_VERSION)
		fv = 2; /* the update itself then says what is wrong */
	jt_set(m, "format-version", jt_i64(fv));
	jt_set(m, "location", jt_str(""));
	if (fv >= 2)
		jt_set(m, "last-sequence-number", jt_i64(0));
	jt_set(m, "last-updated-ms", jt_i64(now_ms));
	jt_set(m, "last-column-id", jt_i64(0));
	jt_set(m, "current-schema-id", jt_i64(-1));
	jt_set(m, "schemas", jt_arr());
	jt_set(m, "default-spec-id", jt_i64(-1));
	jt_set(m, "partition-specs", jt_arr());
	jt_set(m, "last-partition-id", jt_i64(999));
	jt_set(m, "default-sort-order-id", jt_i64(-1));
	jt_set(m, "sort-orders", jt_arr());
	jt_set(m, "properties", jt_obj());
	no_snapshots(m, fv);
	return m;
}

static bool has_assert_create(const jt *reqs)
{
	for (size_t i = 0; i < jt_len(reqs); i++)
		if (streq(jt_get_str(jt_at(reqs, i), "type"), "assert-create"))
			return true;
	return false;
}

ice_rc ice_commit(jt **meta, const jt *body, const char *prev_file, int64_t now_ms, char *err,
		  size_t errlen)
{
	const jt *reqs = jt_get(body, "requirements"), *ups = jt_get(body, "updates");
	int64_t updated, prev_ms = 0;
	jt *m;
	ice_rc rc;

	if (!jt_is(body, JT_OBJ))
		return BAD("commit: the body must be a JSON object");
	if ((rc = ice_check_requirements(*meta, reqs, err, errlen)) != ICE_OK)
		return rc;
	if (!*meta && !has_assert_create(reqs))
		return BAD("commit: no table, and no assert-create requirement");
	if (*meta) {
		m = jt_copy(*meta);
		jt_get_i64(*meta, "last-updated-ms", &prev_ms);
	} else {
		m = empty_meta(jt_is(ups, JT_ARR) ? ups : NULL, now_ms);
	}
	if ((rc = ice_apply_updates(&m, ups, now_ms, &updated, err, errlen)) != ICE_OK) {
		jt_free(m);
		return rc;
	}
	ice_meta_finish(m, updated, *meta ? prev_file : NULL, prev_ms);
	jt_free(*meta);
	*meta = m;
	return ICE_OK;
}

/* ---- metadata file names ---- */

char *ice_meta_file_name(const jt *meta, int version, const char *uuid)
{
	const char *dir = jt_get_str(jt_get(meta, "properties"), "write.metadata.path");
	const char *loc = jt_get_str(meta, "location");
	buf b = BUF_INIT;
	buf_append_str(&b, dir && *dir ? dir : loc ? loc : "");
	/* One slash between the parts, whatever the location ends with. */
	while (b.len && b.data[b.len - 1] == '/')
		b.data[--b.len] = '\0';
	if (!dir || !*dir)
		buf_append_str(&b, "/metadata");
	buf_append_byte(&b, '/');
	buf_printf(&b, "%05d-%s.metadata.json", version, uuid);
	return buf_steal(&b, NULL);
}

int ice_meta_file_version(const char *path)
{
	const char *name = strrchr(path, '/');
	const char *dash;
	int64_t v;
	char num[16];
	name = name ? name + 1 : path;
	dash = strchr(name, '-');
	if (!dash || dash == name || (size_t)(dash - name) >= sizeof(num) ||
	    strspn(name, "0123456789") != (size_t)(dash - name) ||
	    !strstr(dash, ".metadata.json"))
		return -1;
	memcpy(num, name, (size_t)(dash - name));
	num[dash - name] = '\0';
	if (!parse_i64(num, &v) || v > INT32_MAX)
		return -1;
	return (int)v;
}
