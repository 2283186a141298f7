#include "config.h"
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include "json.h"
#include "utf8.h"
#include "util.h"

struct json_w {
	yajl_gen g;
	buf *out;
};

static void jw_print(void *ctx, const char *s, size_t len) { buf_append(ctx, s, len); }

json_w *jw_new(buf *out, bool pretty)
{
	json_w *w = xmalloc(sizeof(*w));
	w->out = out;
	w->g = yajl_gen_alloc(NULL);
	if (!w->g)
		abort();
	yajl_gen_config(w->g, yajl_gen_print_callback, jw_print, out);
	yajl_gen_config(w->g, yajl_gen_beautify, pretty ? 1 : 0);
	/* Keep multi-byte UTF-8 as is; escape nothing beyond what JSON requires. */
	yajl_gen_config(w->g, yajl_gen_validate_utf8, 0);
	return w;
}

void jw_free(json_w *w)
{
	if (!w)
		return;
	yajl_gen_free(w->g);
	free(w);
}

void jw_obj_begin(json_w *w) { yajl_gen_map_open(w->g); }
void jw_obj_end(json_w *w) { yajl_gen_map_close(w->g); }
void jw_arr_begin(json_w *w) { yajl_gen_array_open(w->g); }
void jw_arr_end(json_w *w) { yajl_gen_array_close(w->g); }
void jw_key(json_w *w, const char *key) { jw_str(w, key); }
void jw_null(json_w *w) { yajl_gen_null(w->g); }
void jw_bool(json_w *w, bool v) { yajl_gen_bool(w->g, v); }

void jw_str(json_w *w, const char *s)
{
	if (s)
		jw_strn(w, s, strlen(s));
	else
		yajl_gen_null(w->g);
}

void jw_strn(json_w *w, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	buf b = BUF_INIT;
	size_t l;

	if (utf8_valid(s, n)) {
		yajl_gen_string(w->g, p, n); /* the common case */
		return;
	}
	/* JSON text is UTF-8: a byte that does not decode becomes U+FFFD */
	for (size_t i = 0; i < n; i += l ? l : 1) {
		l = utf8_decode(p + i, n - i, NULL);
		if (l)
			buf_append(&b, p + i, l);
		else
			buf_append(&b, "\xef\xbf\xbd", 3);
	}
	yajl_gen_string(w->g, (const unsigned char *)b.data, b.len);
	buf_free(&b);
}

void jw_i64(json_w *w, int64_t v)
{
	char t[24];
	int n = snprintf(t, sizeof(t), "%" PRId64, v);
	yajl_gen_number(w->g, t, (size_t)n);
}

void jw_u64(json_w *w, uint64_t v)
{
	char t[24];
	int n = snprintf(t, sizeof(t), "%" PRIu64, v);
	yajl_gen_number(w->g, t, (size_t)n);
}

void jw_double(json_w *w, double v)
{
	if (!isfinite(v))
		v = 0;
	yajl_gen_double(w->g, v);
}

void jw_number(json_w *w, const char *text, size_t len) { yajl_gen_number(w->g, text, len); }

void jw_kv_str(json_w *w, const char *key, const char *v) { jw_key(w, key), jw_str(w, v); }
void jw_kv_i64(json_w *w, const char *key, int64_t v) { jw_key(w, key), jw_i64(w, v); }
void jw_kv_u64(json_w *w, const char *key, uint64_t v) { jw_key(w, key), jw_u64(w, v); }
void jw_kv_double(json_w *w, const char *key, double v) { jw_key(w, key), jw_double(w, v); }
void jw_kv_bool(json_w *w, const char *key, bool v) { jw_key(w, key), jw_bool(w, v); }

yajl_val json_parse(const char *text, size_t len, char *err, size_t errlen)
{
	char *copy = xstrndup(text, len);
	yajl_val v;
	if (memchr(text, '\0', len)) {
		free(copy);
		snprintf(err, errlen, "NUL byte in JSON");
		return NULL;
	}
	v = yajl_tree_parse(copy, err, errlen);
	free(copy);
	if (!v && err && errlen) {
		/* yajl's message spans lines; keep the first for a one-line error. */
		char *nl = strchr(err, '\n');
		if (nl)
			*nl = '\0';
	}
	return v;
}

yajl_val json_get(yajl_val v, const char *key)
{
	if (!v || !YAJL_IS_OBJECT(v))
		return NULL;
	for (size_t i = 0; i < v->u.object.len; i++)
		if (!strcmp(v->u.object.keys[i], key))
			return v->u.object.values[i];
	return NULL;
}

bool json_get_str(yajl_val obj, const char *key, const char **out)
{
	yajl_val v = json_get(obj, key);
	if (!v || !YAJL_IS_STRING(v))
		return false;
	*out = v->u.string;
	return true;
}

bool json_as_i64(yajl_val v, int64_t *out)
{
	return v && YAJL_IS_NUMBER(v) && parse_i64(v->u.number.r, out);
}

bool json_as_u64(yajl_val v, uint64_t *out)
{
	return v && YAJL_IS_NUMBER(v) && parse_u64(v->u.number.r, out);
}

bool json_get_i64(yajl_val obj, const char *key, int64_t *out)
{
	return json_as_i64(json_get(obj, key), out);
}

bool json_get_u64(yajl_val obj, const char *key, uint64_t *out)
{
	return json_as_u64(json_get(obj, key), out);
}

bool json_get_double(yajl_val obj, const char *key, double *out)
{
	yajl_val v = json_get(obj, key);
	if (!v || !YAJL_IS_NUMBER(v))
		return false;
	*out = strtod(v->u.number.r, NULL);
	return true;
}

bool json_get_bool(yajl_val obj, const char *key, bool *out)
{
	yajl_val v = json_get(obj, key);
	if (!v || (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v)))
		return false;
	*out = YAJL_IS_TRUE(v);
	return true;
}
