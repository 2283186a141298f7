/*
 * The entry JSON codec (entry_json.h).
 *
 * DESIGN: one table per object (entry_members, chunk_members) lists its
 * members in the order the writer emits them: the JSON key, a kind, the forms
 * that carry it and, for plain values, where the value lives in the struct
 * and its bound. The writer walks the table. The reader makes one pass over
 * the object's members, finding each in the table (the search starts after
 * the member found last, so an object in the writer's order costs one
 * comparison a member), then decodes what it found in table order. So each
 * key is spelt once, in this file, and what one side writes the other reads
 * back. Keys are camelCase and stable: they are a public interface.
 */
#include "config.h"
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base64.h"
#include "client/entry_json.h"
#include "client/filer_wire.h"
#include "utf8.h"
#include "util.h"

/* ---- byte fields ---------------------------------------------------------------------------- */

/* Writes key (NULL: at a value slot): the base64 of p[0..n) (p may be NULL when n is 0). */
void entry_json_base64(json_w *w, const char *key, const void *p, size_t n)
{
	buf b = BUF_INIT;
	base64_encode(p, n, &b);
	if (key)
		jw_key(w, key);
	jw_strn(w, b.data ? b.data : "", b.len);
	buf_free(&b);
}

/* k64[64] := key "B64". */
static const char *key64(char k64[64], const char *key)
{
	snprintf(k64, 64, "%sB64", key);
	return k64;
}

void entry_json_text(json_w *w, const char *key, const char *s)
{
	size_t n = strlen(s);
	char k64[64];

	jw_key(w, key);
	jw_strn(w, s, n);
	if (!utf8_valid(s, n))
		entry_json_base64(w, key64(k64, key), s, n);
}

void entry_json_kv_bytes(json_w *w, const char *key, const char *s)
{
	size_t n = strlen(s);
	char k64[64];

	if (utf8_valid(s, n))
		jw_kv_str(w, key, s);
	else
		entry_json_base64(w, key64(k64, key), s, n);
}

/* A byte field's value: b (base64) when present, else s; see entry_json_get_bytes. */
static bool bytes_value(yajl_val s, yajl_val b, size_t max, char **out)
{
	uint8_t *raw = NULL;
	size_t n;

	if (!s && !b) {
		free(*out);
		*out = NULL;
		return true;
	}
	if (!b) {
		if (!YAJL_IS_STRING(s) || strlen(s->u.string) > max)
			return false;
		free(*out);
		*out = xstrdup(s->u.string);
		return true;
	}
	if (!YAJL_IS_STRING(b) || !base64_decode(b->u.string, max, &raw, &n) ||
	    memchr(raw, '\0', n)) {
		free(raw);
		return false;
	}
	raw[n] = '\0'; /* the decoder leaves room for it */
	free(*out);
	*out = (char *)raw;
	return true;
}

bool entry_json_get_bytes(yajl_val v, const char *key, size_t max, char **out)
{
	char k64[64];
	return bytes_value(json_get(v, key), json_get(v, key64(k64, key)), max, out);
}

/* ---- reading: context and messages ---------------------------------------------------------- */

struct rd {
	unsigned flags; /* ENTRY_JSON_REQUEST: the request form, strict */
	char *msg;
	size_t msglen;
};

static wfs_err bad(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static wfs_err bad(struct rd *r, const char *fmt, ...)
{
	va_list ap;
	if (r->msglen) {
		va_start(ap, fmt);
		vsnprintf(r->msg, r->msglen, fmt, ap);
		va_end(ap);
	}
	return WFS_EINVAL;
}

static bool strict(const struct rd *r) { return r->flags & ENTRY_JSON_REQUEST; }

/* Byte field key from s / b (its keyB64); a request may not send both. */
static wfs_err read_bytes(struct rd *r, const char *key, yajl_val s, yajl_val b, size_t max,
			  char **out)
{
	if ((strict(r) && s && b) || !bytes_value(s, b, max, out))
		return bad(r,
			   "\"%s\" must be a string or \"%sB64\" base64 (not both) of at most %zu "
			   "bytes without NUL",
			   key, key, max);
	return WFS_OK;
}

/* A required absolute, canonical path from s / b, split. */
static wfs_err read_path(struct rd *r, const char *key, yajl_val s, yajl_val b, char **path,
			 char **dir, char **name)
{
	wfs_err err = read_bytes(r, key, s, b, FILER_PATH_MAX, path);
	if (err)
		return err;
	if (!*path)
		return bad(r, "\"%s\" is required", key);
	if (filer_path_split(*path, dir, name))
		return bad(r,
			   "\"%s\": invalid path (absolute, no \".\" or \"..\", no empty component "
			   "or trailing slash, names up to %d bytes)",
			   key, FILER_NAME_MAX);
	return WFS_OK;
}

wfs_err entry_json_req_bytes(yajl_val v, const char *key, size_t max, char **out, char *msg,
			     size_t msglen)
{
	struct rd r = {ENTRY_JSON_REQUEST, msg, msglen};
	char k64[64];
	return read_bytes(&r, key, json_get(v, key), json_get(v, key64(k64, key)), max, out);
}

wfs_err entry_json_req_path(yajl_val v, const char *key, char **path, char **dir, char **name,
			    char *msg, size_t msglen)
{
	struct rd r = {ENTRY_JSON_REQUEST, msg, msglen};
	char k64[64];
	return read_path(&r, key, json_get(v, key), json_get(v, key64(k64, key)), path, dir, name);
}

/* ---- the member tables ---------------------------------------------------------------------- */

enum kind {
	/* plain values at off in the struct */
	K_U32,  /* uint32_t */
	K_U64,  /* uint64_t, at most max */
	K_I64,  /* int64_t */
	K_BOOL, /* bool: written only when true */
	K_STR,  /* char *, owned, at most max bytes; "" and NULL are absent */
	K_REF,  /* char *, at most max bytes; read: borrowed from the JSON tree */
	K_BYTES, /* char *, owned byte field (see entry_json.h), at most max bytes */
	/* the entry's own */
	K_PATH,      /* byte field: the full path (dir and name) */
	K_NAME,      /* byte field: the name (derived: written, not read) */
	K_IS_DIR,    /* S_ISDIR(mode) (derived) */
	K_MTIME_SEC, /* the mtime in whole seconds (derived) */
	K_ATIME,     /* atime_ns; answers write the mtime when it was never set */
	K_HARD_LINK, /* hard_link_id, base64 */
	K_XATTRS,    /* {"name": "base64 value", ...} */
	K_CONTENT_LEN, /* bytes of inline content (also when its bytes are left out) */
	K_CONTENT,     /* inline content, base64 */
	K_CHUNKS,      /* the chunk list */
	K_CIPHER_KEY,  /* a chunk's cipher key, base64 of FILER_CHUNK_KEY_LEN bytes */
};

/* A member's forms and flags. */
#define M_ANSWER  0x01u /* in the answer form */
#define M_REQUEST 0x02u /* in the request form */
#define M_BOTH    (M_ANSWER | M_REQUEST)
#define M_ZERO    0x04u /* left out of a request when 0 */
#define M_ALIAS   0x08u /* another spelling of the next member: read, never written */

struct member {
	const char *key;
	enum kind kind;
	unsigned flags;
	size_t off;   /* plain values: offset in the struct */
	uint64_t max; /* K_U64: the largest value; strings: the most bytes */
	unsigned has; /* ENTRY_JSON_HAS_* when present */
};

#define A(f) offsetof(struct filer_entry, attr.f)
#define B     (M_BOTH | M_ZERO)

static const struct member entry_members[] = {
	{"fullPath", K_PATH, M_ANSWER, 0, 0, 0},
	{"name", K_NAME, M_ANSWER, 0, 0, 0},
	{"path", K_PATH, M_REQUEST, 0, 0, 0},
	{"isDirectory", K_IS_DIR, M_ANSWER, 0, 0, 0},
	{"mode", K_U32, M_BOTH, A(mode), 0, ENTRY_JSON_HAS_MODE},
	{"uid", K_U32, B, A(uid), 0, 0},
	{"gid", K_U32, B, A(gid), 0, 0},
	{"size", K_U64, M_ANSWER, A(size), UINT64_MAX, 0},
	{"mtime", K_MTIME_SEC, M_ANSWER, 0, 0, 0},
	{"mtimeNs", K_I64, B, A(mtime_ns), 0, ENTRY_JSON_HAS_MTIME},
	{"ctimeNs", K_I64, B, A(ctime_ns), 0, ENTRY_JSON_HAS_CTIME},
	{"crtimeNs", K_I64, B, A(crtime_ns), 0, ENTRY_JSON_HAS_CRTIME},
	{"atimeNs", K_ATIME, B, A(atime_ns), 0, ENTRY_JSON_HAS_ATIME},
	{"nlink", K_U32, M_ANSWER, A(nlink), 0, 0},
	{"inode", K_U64, M_ANSWER, A(inode), UINT64_MAX, 0},
	{"rdev", K_U64, B, A(rdev), UINT64_MAX, 0},
	{"ttlSec", K_U32, B, A(ttl_sec), 0, 0},
	{"mime", K_STR, M_BOTH, A(mime), FILER_SHORT_MAX, 0},
	{"collection", K_STR, M_ANSWER, A(collection), FILER_SHORT_MAX, 0},
	{"replication", K_STR, M_ANSWER, A(replication), FILER_SHORT_MAX, 0},
	{"symlinkTarget", K_BYTES, M_BOTH, A(symlink_target), FILER_SYMLINK_MAX, 0},
	{"hardLinkId", K_HARD_LINK, M_ANSWER, 0, 0, 0},
	{"xattrs", K_XATTRS, M_BOTH, 0, 0, 0},
	{"contentLength", K_CONTENT_LEN, M_ANSWER, 0, 0, 0},
	{"content", K_CONTENT, M_BOTH, 0, 0, ENTRY_JSON_HAS_CONTENT},
	{"chunks", K_CHUNKS, M_BOTH, 0, 0, 0},
};

#undef A
#undef B
#define EM_N ARRAY_LEN(entry_members)
#define C(f) offsetof(struct filer_chunk, f)

/* "etag" is how requests spelt "eTag" before the one codec: still read (entry_json.h). */
static const struct member chunk_members[] = {
	{"fileId", K_REF, M_BOTH, C(fid), FILER_FID_MAX, 0},
	{"offset", K_U64, M_BOTH, C(offset), INT64_MAX, 0},
	{"size", K_U64, M_BOTH, C(size), INT64_MAX, 0},
	{"mtimeNs", K_I64, M_BOTH, C(mtime_ns), 0, 0},
	{"etag", K_REF, M_BOTH | M_ALIAS, C(etag), FILER_ETAG_MAX, 0},
	{"eTag", K_REF, M_BOTH, C(etag), FILER_ETAG_MAX, 0},
	{"isManifest", K_BOOL, M_BOTH, C(is_manifest), 0, 0},
	{"cipherKey", K_CIPHER_KEY, M_BOTH, 0, 0, 0},
};

#undef C
#define CM_N ARRAY_LEN(chunk_members)

static bool is_byte_field(enum kind k) { return k == K_BYTES || k == K_PATH || k == K_NAME; }

#define FIELD(base, m, type) ((type *)((char *)(base) + (m)->off))
#define CFIELD(base, m, type) ((const type *)((const char *)(base) + (m)->off))

/* The reader's form: M_REQUEST (strict) or M_ANSWER. */
static unsigned form(const struct rd *r) { return strict(r) ? M_REQUEST : M_ANSWER; }

/* ---- writing -------------------------------------------------------------------------------- */

static void write_xattrs(json_w *w, const char *key, const struct filer_entry *e)
{
	if (!e->n_xattrs)
		return;
	jw_key(w, key);
	jw_obj_begin(w);
	for (size_t i = 0; i < e->n_xattrs; i++) {
		jw_str(w, e->xattrs[i].name);
		entry_json_base64(w, NULL, e->xattrs[i].value, e->xattrs[i].value_len);
	}
	jw_obj_end(w);
}

#define FULL_PATH_TMP 4097 /* most paths: longer ones are allocated */

/*
 * e's full path: in tmp[FULL_PATH_TMP] when it fits (nearly every path does),
 * else in *own (caller frees); cheaper than
 * filer_entry_full_path for every entry an answer or event writes.
 */
static const char *full_path(const struct filer_entry *e, char *tmp, char **own)
{
	size_t dl = strlen(e->dir), nl = strlen(e->name);
	bool slash = nl && strcmp(e->dir, "/");

	if (dl + slash + nl >= FULL_PATH_TMP)
		return *own = filer_entry_full_path(e);
	memcpy(tmp, e->dir, dl);
	tmp[dl] = '/';
	memcpy(tmp + dl + slash, e->name, nl);
	tmp[dl + slash + nl] = '\0';
	return tmp;
}

/*
 * Writes base's members of table t[0..n) that the form (M_ANSWER or M_REQUEST)
 * carries. Inlined and unrolled: with the chunk table (constant, 7 members)
 * the compiler folds the switch away, so the per-chunk writer, the hot one, is
 * straight-line code (as fast as the hand-written writers this replaced).
 */
static inline __attribute__((always_inline)) void
write_members(json_w *w, const struct member *t, size_t n, const void *base, unsigned form,
	      unsigned flags)
{
	const struct filer_entry *e = base; /* for the entry's own kinds */
	bool req = form == M_REQUEST;
	char tmp[FULL_PATH_TMP], *own = NULL;

#pragma GCC unroll 8
	for (const struct member *m = t; m < t + n; m++) {
		const char *s, *full;
		uint64_t u = 0;
		int64_t i = 0;

		if (!(m->flags & form) || (m->flags & M_ALIAS))
			continue;
		switch (m->kind) {
		case K_U32:
		case K_U64:
			u = m->kind == K_U32 ? *CFIELD(base, m, uint32_t)
					     : *CFIELD(base, m, uint64_t);
			if (u || !req || !(m->flags & M_ZERO))
				jw_kv_u64(w, m->key, u);
			break;
		case K_I64:
		case K_ATIME:
			i = *CFIELD(base, m, int64_t);
			/* the atime defaults to the mtime both ways: answers show the mtime
			   for one never stored, requests leave out one equal to it (create's
			   default) */
			if (m->kind == K_ATIME && (!i || i == e->attr.mtime_ns))
				i = req ? 0 : e->attr.mtime_ns;
			if (i || !req || !(m->flags & M_ZERO))
				jw_kv_i64(w, m->key, i);
			break;
		case K_BOOL:
			if (*CFIELD(base, m, bool))
				jw_kv_bool(w, m->key, true);
			break;
		case K_STR:
		case K_REF:
			s = *CFIELD(base, m, char *);
			if (s && *s)
				jw_kv_str(w, m->key, s);
			break;
		case K_BYTES:
			s = *CFIELD(base, m, char *);
			if (s && *s)
				(req ? entry_json_kv_bytes : entry_json_text)(w, m->key, s);
			break;
		case K_PATH:
			full = full_path(e, tmp, &own);
			(req ? entry_json_kv_bytes : entry_json_text)(w, m->key, full);
			free(own);
			own = NULL;
			break;
		case K_NAME:
			entry_json_text(w, m->key, e->name);
			break;
		case K_IS_DIR:
			jw_kv_bool(w, m->key, S_ISDIR(e->attr.mode));
			break;
		case K_MTIME_SEC:
			jw_kv_i64(w, m->key, e->attr.mtime_ns / 1000000000);
			break;
		case K_HARD_LINK:
			if (e->attr.hard_link_id_len)
				entry_json_base64(w, m->key, e->attr.hard_link_id,
						  e->attr.hard_link_id_len);
			break;
		case K_XATTRS:
			write_xattrs(w, m->key, e);
			break;
		case K_CONTENT_LEN:
			if (e->has_content || e->content_omitted)
				jw_kv_u64(w, m->key, e->content_len);
			break;
		case K_CONTENT:
			if (e->has_content && (flags & ENTRY_JSON_CONTENT))
				entry_json_base64(w, m->key, e->content, e->content_len);
			break;
		case K_CHUNKS:
			if (e->n_chunks || !req) /* answers always have the list, maybe empty */
				entry_json_chunks_write(w, m->key, e->chunks, e->n_chunks);
			break;
		case K_CIPHER_KEY: {
			const struct filer_chunk *c = base;
			if (c->has_cipher_key)
				entry_json_base64(w, m->key, c->cipher_key, FILER_CHUNK_KEY_LEN);
			break;
		}
		}
	}
}

void entry_json_chunks_write(json_w *w, const char *key, const struct filer_chunk *c, size_t n)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		write_members(w, chunk_members, CM_N, &c[i], M_ANSWER, 0);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

void entry_json_write(json_w *w, const struct filer_entry *e, unsigned flags)
{
	jw_obj_begin(w);
	write_members(w, entry_members, EM_N, e,
		      (flags & ENTRY_JSON_REQUEST) ? M_REQUEST : M_ANSWER, flags);
	jw_obj_end(w);
}

void entry_json(const struct filer_entry *e, unsigned flags, buf *out)
{
	json_w *w = jw_new(out, false);
	entry_json_write(w, e, flags);
	jw_free(w);
}

/* ---- reading -------------------------------------------------------------------------------- */

/*
 * The index in t[0..n) of key among the members of form, searched from *hint
 * on (and moved past it); *b64: key is keyB64 of a byte field. -1 when none.
 */
static ptrdiff_t member_find(const struct member *t, size_t n, unsigned form, const char *key,
			     size_t *hint, bool *b64)
{
	size_t kl;

	for (size_t k = 0, i = *hint; k < n; k++, i = i + 1 < n ? i + 1 : 0) {
		if ((t[i].flags & form) && !strcmp(t[i].key, key)) {
			*hint = i + 1 < n ? i + 1 : 0;
			*b64 = false;
			return (ptrdiff_t)i;
		}
	}
	kl = strlen(key);
	if (kl <= 3 || strcmp(key + kl - 3, "B64"))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if ((t[i].flags & form) && is_byte_field(t[i].kind) &&
		    !strncmp(t[i].key, key, kl - 3) && !t[i].key[kl - 3]) {
			*b64 = true;
			return (ptrdiff_t)i;
		}
	}
	return -1;
}

/*
 * Pass one: the members of obj (what: its name in messages) in val[] and, for
 * byte fields' keyB64, b64[] (both zeroed, indexed like t). A request refuses
 * an unknown or repeated member and two spellings of one; an answer skips
 * unknown members and nulls.
 */
static wfs_err members_find(struct rd *r, yajl_val obj, const char *what, const struct member *t,
			    size_t n, yajl_val *val, yajl_val *b64)
{
	size_t hint = 0;

	if (!obj || !YAJL_IS_OBJECT(obj))
		return bad(r, "%s must be a JSON object", what);
	for (size_t k = 0; k < obj->u.object.len; k++) {
		const char *key = obj->u.object.keys[k];
		yajl_val v = obj->u.object.values[k];
		bool is64;
		ptrdiff_t i = member_find(t, n, form(r), key, &hint, &is64);
		yajl_val *slot;

		if (i < 0) {
			if (strict(r))
				return bad(r, "unknown field \"%.64s\" in %s", key, what);
			continue;
		}
		if (!strict(r) && YAJL_IS_NULL(v))
			continue;
		slot = is64 ? &b64[i] : &val[i];
		if (*slot)
			return bad(r, "duplicate field \"%.64s\" in %s", key, what);
		*slot = v;
	}
	for (size_t i = 0; strict(r) && i + 1 < n; i++)
		if ((t[i].flags & M_ALIAS) && val[i] && val[i + 1])
			return bad(r, "\"%s\" and \"%s\" in %s are one field: send one", t[i].key,
				   t[i + 1].key, what);
	return WFS_OK;
}

static wfs_err read_xattrs(struct rd *r, const char *key, yajl_val v, struct filer_entry *e)
{
	if (!YAJL_IS_OBJECT(v))
		return bad(r, "\"%s\" must be an object of name: base64 value", key);
	if (v->u.object.len > FILER_XATTRS_MAX)
		return bad(r, "\"%s\": more than %d attributes", key, FILER_XATTRS_MAX);
	for (size_t i = 0; i < v->u.object.len; i++) {
		const char *name = v->u.object.keys[i];
		yajl_val x = v->u.object.values[i];
		size_t nl = strlen(name), len = 0;
		uint8_t *val = NULL;

		if (!nl || nl > FILER_SHORT_MAX || !utf8_valid(name, nl))
			return bad(r, "\"%s\": a name must be 1..%d bytes of UTF-8", key,
				   FILER_SHORT_MAX);
		if (filer_entry_xattr_get(e, name))
			return bad(r, "\"%s\": duplicate name \"%.64s\"", key, name);
		if (!YAJL_IS_STRING(x) ||
		    !base64_decode(x->u.string, FILER_XATTR_VALUE_MAX, &val, &len))
			return bad(r,
				   "\"%s\": the value of \"%.64s\" must be base64 of at most %u "
				   "bytes",
				   key, name, FILER_XATTR_VALUE_MAX);
		filer_entry_xattr_set(e, name, val, len);
		free(val);
	}
	return WFS_OK;
}

static wfs_err read_chunks(struct rd *r, const char *key, yajl_val v, struct filer_entry *e);

/* Pass two for one member m of base: v its value, b its keyB64 (byte fields). */
static wfs_err read_member(struct rd *r, const struct member *m, yajl_val v, yajl_val b,
			   void *base)
{
	struct filer_entry *e = base; /* for the entry's own kinds */
	uint64_t u, max;
	uint8_t *data = NULL;
	size_t len = 0;

	switch (m->kind) {
	case K_U32:
	case K_U64:
		max = m->kind == K_U32 ? UINT32_MAX : m->max;
		if (!json_as_u64(v, &u) || u > max)
			return bad(r, "\"%s\" must be an integer in 0..%llu", m->key,
				   (unsigned long long)max);
		if (m->kind == K_U32)
			*FIELD(base, m, uint32_t) = (uint32_t)u;
		else
			*FIELD(base, m, uint64_t) = u;
		break;
	case K_I64:
	case K_ATIME:
		if (!json_as_i64(v, FIELD(base, m, int64_t)))
			return bad(r, "\"%s\" must be a 64-bit integer", m->key);
		break;
	case K_BOOL:
		if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
			return bad(r, "\"%s\" must be true or false", m->key);
		*FIELD(base, m, bool) = YAJL_IS_TRUE(v);
		break;
	case K_STR:
	case K_REF:
		if (!YAJL_IS_STRING(v))
			return bad(r, "\"%s\" must be a string", m->key);
		len = strlen(v->u.string);
		if (len > m->max)
			return bad(r, "\"%s\" is longer than %llu bytes", m->key,
				   (unsigned long long)m->max);
		if (!utf8_valid(v->u.string, len)) /* what yajl lets through: overlong forms */
			return bad(r, "\"%s\" is not valid UTF-8", m->key);
		if (m->kind == K_REF) {
			*FIELD(base, m, const char *) = v->u.string;
			break;
		}
		free(*FIELD(base, m, char *));
		*FIELD(base, m, char *) = *v->u.string ? xstrdup(v->u.string) : NULL;
		break;
	case K_BYTES: {
		char **s = FIELD(base, m, char *);
		wfs_err err = read_bytes(r, m->key, v, b, m->max, s);
		if (err)
			return err;
		if (*s && !**s) {
			free(*s);
			*s = NULL;
		}
		break;
	}
	case K_PATH: /* read first, by entry_json_read */
	case K_NAME:
	case K_IS_DIR:
	case K_MTIME_SEC:
		break; /* derived: written, not read */
	case K_HARD_LINK:
		if (!YAJL_IS_STRING(v) ||
		    !base64_decode(v->u.string, FILER_HARDLINK_ID_MAX, &data, &len))
			return bad(r, "\"%s\" must be base64 of at most %d bytes", m->key,
				   FILER_HARDLINK_ID_MAX);
		free(e->attr.hard_link_id);
		e->attr.hard_link_id = len ? data : NULL;
		e->attr.hard_link_id_len = len;
		if (!len)
			free(data);
		break;
	case K_XATTRS:
		return read_xattrs(r, m->key, v, e);
	case K_CONTENT_LEN: /* the content's bytes left out; "content", read after, replaces it */
		if (!json_as_u64(v, &u) || u > FILER_CONTENT_MAX)
			return bad(r, "\"%s\" must be an integer in 0..%u", m->key,
				   FILER_CONTENT_MAX);
		e->content_omitted = true;
		e->content_len = (size_t)u;
		break;
	case K_CONTENT:
		max = strict(r) ? API_CONTENT_MAX : FILER_CONTENT_MAX;
		if (!YAJL_IS_STRING(v) || !base64_decode(v->u.string, max, &data, &len))
			return bad(r, "\"%s\" must be base64 of at most %llu bytes", m->key,
				   (unsigned long long)max);
		free(e->content);
		e->content = data;
		e->content_len = len;
		e->has_content = true;
		e->content_omitted = false;
		break;
	case K_CHUNKS:
		return read_chunks(r, m->key, v, e);
	case K_CIPHER_KEY: {
		struct filer_chunk *c = base;
		if (!YAJL_IS_STRING(v) ||
		    !base64_decode(v->u.string, FILER_CHUNK_KEY_LEN, &data, &len) ||
		    len != FILER_CHUNK_KEY_LEN) {
			free(data);
			return bad(r, "\"%s\" must be base64 of %d bytes", m->key,
				   FILER_CHUNK_KEY_LEN);
		}
		memcpy(c->cipher_key, data, FILER_CHUNK_KEY_LEN);
		c->has_cipher_key = true;
		free(data);
		break;
	}
	}
	return WFS_OK;
}

static wfs_err read_chunks(struct rd *r, const char *key, yajl_val v, struct filer_entry *e)
{
	size_t max = strict(r) ? API_CHUNKS_MAX : FILER_CHUNKS_MAX;
	yajl_val val[CM_N], b64[CM_N];

	if (!YAJL_IS_ARRAY(v))
		return bad(r, "\"%s\" must be an array", key);
	if (v->u.array.len > max || e->n_chunks + v->u.array.len > FILER_CHUNKS_MAX)
		return bad(r, "\"%s\": more than %zu chunks", key, max);
	for (size_t i = 0; i < v->u.array.len; i++) {
		struct filer_chunk c = {0}; /* its strings borrowed from the tree */
		wfs_err err;

		memset(val, 0, sizeof(val));
		memset(b64, 0, sizeof(b64));
		err = members_find(r, v->u.array.values[i], "a chunk", chunk_members, CM_N, val,
				   b64);
		for (size_t k = 0; !err && k < CM_N; k++)
			if (val[k])
				err = read_member(r, &chunk_members[k], val[k], NULL, &c);
		if (err)
			return err;
		if (!c.fid || !*c.fid)
			return bad(r, "a chunk needs a non-empty \"fileId\"");
		if (c.offset + c.size > INT64_MAX) /* each is at most INT64_MAX: no wrap */
			return bad(r, "a chunk's offset + size is over %lld",
				   (long long)INT64_MAX);
		filer_entry_push_chunk(e, &c);
	}
	return WFS_OK;
}

wfs_err entry_json_chunks_read(yajl_val obj, const char *key, unsigned flags,
			       struct filer_entry *e, char *msg, size_t msglen)
{
	struct rd r = {flags, msg, msglen};
	yajl_val v = json_get(obj, key);

	if (!v || (!strict(&r) && YAJL_IS_NULL(v)))
		return WFS_OK;
	return read_chunks(&r, key, v, e);
}

wfs_err entry_json_read(yajl_val v, unsigned flags, struct filer_entry **out, unsigned *has,
			char *msg, size_t msglen)
{
	struct rd r = {flags, msg, msglen};
	yajl_val val[EM_N] = {0}, b64[EM_N] = {0};
	size_t p = 0; /* the path member of the form: fullPath, or a request's path */
	char *path = NULL, *dir = NULL, *name = NULL;
	struct filer_entry *e = NULL;
	unsigned h = 0;
	wfs_err err;

	*out = NULL;
	while (entry_members[p].kind != K_PATH || !(entry_members[p].flags & form(&r)))
		p++;
	err = members_find(&r, v, "the entry", entry_members, EM_N, val, b64);
	if (!err)
		err = read_path(&r, entry_members[p].key, val[p], b64[p], &path, &dir, &name);
	if (!err)
		e = filer_entry_new(dir, name);
	for (size_t i = 0; !err && i < EM_N; i++) {
		if (!val[i] && !b64[i])
			continue;
		h |= entry_members[i].has;
		err = read_member(&r, &entry_members[i], val[i], b64[i], e);
	}
	if (!err && filer_entry_check(e))
		err = bad(&r, "the entry exceeds a size limit");
	free(path);
	free(dir);
	free(name);
	if (err) {
		filer_entry_free(e);
		return err;
	}
	*out = e;
	if (has)
		*has = h;
	return WFS_OK;
}
