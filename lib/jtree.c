#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <yajl/yajl_parse.h>
#include "jtree.h"
#include "utf8.h"
#include "util.h"

static jt *jt_new(jt_type t)
{
	jt *v = xcalloc(1, sizeof(*v));
	v->type = t;
	return v;
}

jt *jt_null(void) { return jt_new(JT_NULL); }
jt *jt_arr(void) { return jt_new(JT_ARR); }
jt *jt_obj(void) { return jt_new(JT_OBJ); }

jt *jt_bool(bool b)
{
	jt *v = jt_new(JT_BOOL);
	v->b = b;
	return v;
}

jt *jt_strn(const char *s, size_t n)
{
	jt *v = jt_new(JT_STR);
	v->s = xstrndup(s, n);
	v->slen = n;
	return v;
}

jt *jt_str(const char *s) { return jt_strn(s, strlen(s)); }

static jt *jt_num_raw(const char *text, size_t n)
{
	jt *v = jt_new(JT_NUM);
	v->s = xstrndup(text, n);
	v->slen = n;
	return v;
}

jt *jt_i64(int64_t x)
{
	char t[24];
	return jt_num_raw(t, (size_t)snprintf(t, sizeof(t), "%" PRId64, x));
}

jt *jt_u64(uint64_t x)
{
	char t[24];
	return jt_num_raw(t, (size_t)snprintf(t, sizeof(t), "%" PRIu64, x));
}

static size_t digits(const char *p)
{
	size_t n = 0;
	while (p[n] >= '0' && p[n] <= '9')
		n++;
	return n;
}

/* JSON's number grammar: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)? */
static bool num_syntax(const char *p)
{
	size_t n;
	if (*p == '-')
		p++;
	n = digits(p);
	if (!n || (p[0] == '0' && n > 1))
		return false;
	p += n;
	if (*p == '.') {
		if (!(n = digits(++p)))
			return false;
		p += n;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(n = digits(p)))
			return false;
		p += n;
	}
	return !*p;
}

jt *jt_num_text(const char *text)
{
	return num_syntax(text) ? jt_num_raw(text, strlen(text)) : NULL;
}

void jt_free(jt *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		if (v->keys)
			free(v->keys[i]);
		jt_free(v->items[i]);
	}
	free(v->keys);
	free(v->items);
	free(v->s);
	free(v);
}

static void jt_grow(jt *v)
{
	if (v->n < v->cap)
		return;
	v->cap = v->cap ? v->cap * 2 : 4;
	v->items = xrealloc(v->items, v->cap * sizeof(*v->items));
	if (v->type == JT_OBJ)
		v->keys = xrealloc(v->keys, v->cap * sizeof(*v->keys));
}

jt *jt_copy(const jt *v)
{
	jt *c;
	if (!v)
		return NULL;
	c = jt_new(v->type);
	c->b = v->b;
	if (v->s) {
		c->s = xstrndup(v->s, v->slen);
		c->slen = v->slen;
	}
	for (size_t i = 0; i < v->n; i++) {
		if (v->type == JT_OBJ)
			jt_set(c, v->keys[i], jt_copy(v->items[i]));
		else
			jt_append(c, jt_copy(v->items[i]));
	}
	return c;
}

bool jt_equal(const jt *a, const jt *b)
{
	if (!a || !b)
		return a == b;
	if (a->type != b->type || a->n != b->n)
		return false;
	switch (a->type) {
	case JT_NULL:
		return true;
	case JT_BOOL:
		return a->b == b->b;
	case JT_NUM:
	case JT_STR:
		return a->slen == b->slen && !memcmp(a->s, b->s, a->slen);
	case JT_ARR:
		for (size_t i = 0; i < a->n; i++)
			if (!jt_equal(a->items[i], b->items[i]))
				return false;
		return true;
	case JT_OBJ:
		for (size_t i = 0; i < a->n; i++)
			if (!jt_equal(a->items[i], jt_get(b, a->keys[i])))
				return false;
		return true;
	}
	return false;
}

static ssize_t jt_find(const jt *obj, const char *key)
{
	if (!obj || obj->type != JT_OBJ)
		return -1;
	for (size_t i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return (ssize_t)i;
	return -1;
}

jt *jt_get(const jt *obj, const char *key)
{
	ssize_t i = jt_find(obj, key);
	return i < 0 ? NULL : obj->items[i];
}

void jt_set(jt *obj, const char *key, jt *v)
{
	ssize_t i = jt_find(obj, key);
	if (!jt_is(obj, JT_OBJ)) {
		jt_free(v); /* not an object: nothing to hold it */
		return;
	}
	if (i >= 0) {
		jt_free(obj->items[i]);
		obj->items[i] = v;
		return;
	}
	jt_grow(obj);
	obj->keys[obj->n] = xstrdup(key);
	obj->items[obj->n++] = v;
}

jt *jt_take(jt *obj, const char *key)
{
	ssize_t i = jt_find(obj, key);
	jt *v;
	if (i < 0)
		return NULL;
	v = obj->items[i];
	free(obj->keys[i]);
	memmove(obj->keys + i, obj->keys + i + 1, (obj->n - i - 1) * sizeof(*obj->keys));
	memmove(obj->items + i, obj->items + i + 1, (obj->n - i - 1) * sizeof(*obj->items));
	obj->n--;
	return v;
}

bool jt_remove(jt *obj, const char *key)
{
	jt *v = jt_take(obj, key);
	jt_free(v);
	return v != NULL;
}

void jt_append(jt *arr, jt *v)
{
	if (!jt_is(arr, JT_ARR)) {
		jt_free(v);
		return;
	}
	jt_grow(arr);
	arr->items[arr->n++] = v;
}

void jt_remove_at(jt *arr, size_t i)
{
	if (!arr || arr->type != JT_ARR || i >= arr->n)
		return;
	jt_free(arr->items[i]);
	memmove(arr->items + i, arr->items + i + 1, (arr->n - i - 1) * sizeof(*arr->items));
	arr->n--;
}

size_t jt_len(const jt *v) { return v && (v->type == JT_ARR || v->type == JT_OBJ) ? v->n : 0; }
jt *jt_at(const jt *v, size_t i) { return i < jt_len(v) ? v->items[i] : NULL; }
bool jt_is(const jt *v, jt_type t) { return v && v->type == t; }
const char *jt_as_str(const jt *v) { return jt_is(v, JT_STR) ? v->s : NULL; }
const char *jt_get_str(const jt *obj, const char *key) { return jt_as_str(jt_get(obj, key)); }
bool jt_as_i64(const jt *v, int64_t *out) { return jt_is(v, JT_NUM) && parse_i64(v->s, out); }
bool jt_as_u64(const jt *v, uint64_t *out) { return jt_is(v, JT_NUM) && parse_u64(v->s, out); }
bool jt_get_i64(const jt *obj, const char *key, int64_t *out)
{
	return jt_as_i64(jt_get(obj, key), out);
}

bool jt_as_bool(const jt *v, bool *out)
{
	if (!jt_is(v, JT_BOOL))
		return false;
	*out = v->b;
	return true;
}

void jt_write(const jt *v, json_w *w)
{
	switch (v->type) {
	case JT_NULL:
		jw_null(w);
		break;
	case JT_BOOL:
		jw_bool(w, v->b);
		break;
	case JT_NUM:
		jw_number(w, v->s, v->slen);
		break;
	case JT_STR:
		jw_strn(w, v->s, v->slen);
		break;
	case JT_ARR:
		jw_arr_begin(w);
		for (size_t i = 0; i < v->n; i++)
			jt_write(v->items[i], w);
		jw_arr_end(w);
		break;
	case JT_OBJ:
		jw_obj_begin(w);
		for (size_t i = 0; i < v->n; i++) {
			jw_key(w, v->keys[i]);
			jt_write(v->items[i], w);
		}
		jw_obj_end(w);
		break;
	}
}

void jt_to_buf(const jt *v, buf *out, bool pretty)
{
	json_w *w = jw_new(out, pretty);
	jt_write(v, w);
	jw_free(w);
}

/* Parsing: yajl's event parser builds the tree on an explicit stack. */
typedef struct {
	jt *root;
	jt *stack[JT_MAX_DEPTH];
	int depth;
	char *key; /* the pending member name inside an object */
	const char *why; /* our own reason to stop, if any */
} jt_parser;

static int jp_add(jt_parser *p, jt *v)
{
	jt *top;
	if (!p->depth) {
		p->root = v;
		return 1;
	}
	top = p->stack[p->depth - 1];
	if (top->type == JT_ARR) {
		jt_append(top, v);
	} else {
		jt_set(top, p->key, v); /* a repeated name keeps the last value */
		free(p->key);
		p->key = NULL;
	}
	return 1;
}

static int jp_open(jt_parser *p, jt *v)
{
	if (p->depth == JT_MAX_DEPTH) {
		jt_free(v);
		p->why = "JSON nested too deeply";
		return 0;
	}
	jp_add(p, v);
	p->stack[p->depth++] = v;
	return 1;
}

static int jp_null(void *ctx) { return jp_add(ctx, jt_null()); }
static int jp_boolean(void *ctx, int b) { return jp_add(ctx, jt_bool(b)); }
static int jp_number(void *ctx, const char *s, size_t n) { return jp_add(ctx, jt_num_raw(s, n)); }
/*
 * yajl lets overlong and surrogate encodings through; the writer would turn
 * them into U+FFFD, so what was read would not write back the same.
 */
static int jp_utf8(jt_parser *p, const unsigned char *s, size_t n)
{
	if (utf8_valid((const char *)s, n))
		return 1;
	p->why = "invalid UTF-8 in a JSON string";
	return 0;
}

static int jp_string(void *ctx, const unsigned char *s, size_t n)
{
	if (!jp_utf8(ctx, s, n))
		return 0;
	return jp_add(ctx, jt_strn((const char *)s, n));
}
static int jp_start_map(void *ctx) { return jp_open(ctx, jt_obj()); }
static int jp_start_array(void *ctx) { return jp_open(ctx, jt_arr()); }
static int jp_end(void *ctx)
{
	((jt_parser *)ctx)->depth--;
	return 1;
}

static int jp_map_key(void *ctx, const unsigned char *s, size_t n)
{
	jt_parser *p = ctx;
	if (memchr(s, '\0', n)) {
		p->why = "NUL in a JSON member name";
		return 0;
	}
	if (!jp_utf8(p, s, n))
		return 0;
	free(p->key);
	p->key = xstrndup((const char *)s, n);
	return 1;
}

static const yajl_callbacks jp_callbacks = {
	.yajl_null = jp_null,
	.yajl_boolean = jp_boolean,
	.yajl_number = jp_number,
	.yajl_string = jp_string,
	.yajl_start_map = jp_start_map,
	.yajl_map_key = jp_map_key,
	.yajl_end_map = jp_end,
	.yajl_start_array = jp_start_array,
	.yajl_end_array = jp_end,
};

jt *jt_parse(const char *text, size_t len, char *err, size_t errlen)
{
	jt_parser p = {0};
	yajl_handle h = yajl_alloc(&jp_callbacks, NULL, &p);
	yajl_status st;

	if (!h)
		abort();
	st = yajl_parse(h, (const unsigned char *)text, len);
	if (st == yajl_status_ok)
		st = yajl_complete_parse(h);
	if (st != yajl_status_ok) {
		if (p.why) {
			snprintf(err, errlen, "%s", p.why);
		} else {
			unsigned char *m = yajl_get_error(h, 0, NULL, 0);
			snprintf(err, errlen, "bad JSON: %s", (const char *)m);
			yajl_free_error(h, m);
		}
		if (errlen && strchr(err, '\n')) /* yajl's message spans lines */
			*strchr(err, '\n') = '\0';
		/* Everything built hangs off the root, so one free releases it. */
		jt_free(p.root);
		p.root = NULL;
	} else if (!p.root) {
		snprintf(err, errlen, "empty JSON");
	}
	free(p.key);
	yajl_free(h);
	return p.root;
}
