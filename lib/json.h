/*
 * JSON on yajl: a writer that appends to a buf, and tree-parser accessors.
 * 64-bit integers round-trip exactly: the writer emits them as digits and the
 * readers parse yajl's raw number text, never a double.
 */
#ifndef WEEDFS_JSON_H
#define WEEDFS_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>
#include "buf.h"

typedef struct json_w json_w;

/* A writer appending to out (borrowed; must outlive the writer). */
json_w *jw_new(buf *out, bool pretty);
void jw_free(json_w *w);
void jw_obj_begin(json_w *w);
void jw_obj_end(json_w *w);
void jw_arr_begin(json_w *w);
void jw_arr_end(json_w *w);
void jw_key(json_w *w, const char *key);
void jw_str(json_w *w, const char *s); /* NULL writes null */
/* Strings that are not valid UTF-8 have each bad byte written as U+FFFD. */
void jw_strn(json_w *w, const char *s, size_t n);
void jw_i64(json_w *w, int64_t v);
void jw_u64(json_w *w, uint64_t v);
void jw_double(json_w *w, double v);
/* A number given as its JSON text (the caller checked the syntax). */
void jw_number(json_w *w, const char *text, size_t len);
void jw_bool(json_w *w, bool v);
void jw_null(json_w *w);
/* Key-value shorthands inside an object. */
void jw_kv_str(json_w *w, const char *key, const char *v);
void jw_kv_i64(json_w *w, const char *key, int64_t v);
void jw_kv_u64(json_w *w, const char *key, uint64_t v);
void jw_kv_double(json_w *w, const char *key, double v);
void jw_kv_bool(json_w *w, const char *key, bool v);

/*
 * Parses len bytes of text (need not be NUL-terminated). Returns a tree the
 * caller frees with yajl_tree_free, or NULL with a message in err.
 */
yajl_val json_parse(const char *text, size_t len, char *err, size_t errlen);
/* Member of an object, or NULL if v is not an object or has no such key. */
yajl_val json_get(yajl_val v, const char *key);
/* Typed member readers: true and *out set if present with the right type. */
bool json_get_str(yajl_val obj, const char *key, const char **out);
bool json_get_i64(yajl_val obj, const char *key, int64_t *out);
bool json_get_u64(yajl_val obj, const char *key, uint64_t *out);
bool json_get_double(yajl_val obj, const char *key, double *out);
bool json_get_bool(yajl_val obj, const char *key, bool *out);
/* The value as an exact integer. */
bool json_as_i64(yajl_val v, int64_t *out);
bool json_as_u64(yajl_val v, uint64_t *out);

#endif
