/*
 * A small mutable JSON tree. Objects keep their members in insertion order;
 * numbers keep their exact text, so 64-bit ids (signed or unsigned) round-trip
 * byte for byte. Parsing goes through yajl, writing through json_w.
 */
#ifndef WEEDFS_JTREE_H
#define WEEDFS_JTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "json.h"

typedef enum { JT_NULL, JT_BOOL, JT_NUM, JT_STR, JT_ARR, JT_OBJ } jt_type;

typedef struct jt jt;
struct jt {
	jt_type type;
	bool b;       /* JT_BOOL */
	char *s;      /* JT_NUM text, JT_STR bytes (NUL-terminated; owned) */
	size_t slen;  /* length of s */
	size_t n;     /* members or elements */
	size_t cap;
	char **keys;  /* JT_OBJ: n keys */
	jt **items;   /* JT_ARR, JT_OBJ: n values (owned) */
};

/* The deepest nesting jt_parse accepts (the tree functions recurse). */
#define JT_MAX_DEPTH 64

jt *jt_null(void);
jt *jt_bool(bool v);
jt *jt_str(const char *s);
jt *jt_strn(const char *s, size_t n);
jt *jt_i64(int64_t v);
jt *jt_u64(uint64_t v);
/* A number from its text; NULL if text is not a JSON number. */
jt *jt_num_text(const char *text);
jt *jt_arr(void);
jt *jt_obj(void);
void jt_free(jt *v);
jt *jt_copy(const jt *v);
/* Deep equality; object members compare regardless of order, numbers by text. */
bool jt_equal(const jt *a, const jt *b);

/* Parses len bytes (need not be NUL-terminated); NULL with a message in err. */
jt *jt_parse(const char *text, size_t len, char *err, size_t errlen);
void jt_write(const jt *v, json_w *w);
/* Appends v's JSON text to out. */
void jt_to_buf(const jt *v, buf *out, bool pretty);

/*
 * Object members. jt_set takes ownership of v and replaces a member in place
 * (v is freed when obj is not an object).
 */
jt *jt_get(const jt *obj, const char *key);
void jt_set(jt *obj, const char *key, jt *v);
/* True if the member existed (it is freed). */
bool jt_remove(jt *obj, const char *key);
/* Takes the member out without freeing it (NULL if absent). */
jt *jt_take(jt *obj, const char *key);

/* Arrays. jt_append takes ownership of v (freed when arr is not an array). */
void jt_append(jt *arr, jt *v);
void jt_remove_at(jt *arr, size_t i);
size_t jt_len(const jt *v); /* elements or members; 0 for scalars and NULL */
jt *jt_at(const jt *v, size_t i);

/* Typed readers: false (out untouched) when v is NULL or of another type. */
bool jt_is(const jt *v, jt_type t);
const char *jt_as_str(const jt *v); /* NULL if not a string */
bool jt_as_i64(const jt *v, int64_t *out);
bool jt_as_u64(const jt *v, uint64_t *out);
bool jt_as_bool(const jt *v, bool *out);
/* The same, for an object's member. */
const char *jt_get_str(const jt *obj, const char *key);
bool jt_get_i64(const jt *obj, const char *key, int64_t *out);

#endif
