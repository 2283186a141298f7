/*
 * Request parser of the JSON entry API (filer_api_parse.h).
 *
 * DESIGN: yajl builds a tree; each operation has a table of allowed member
 * names, checked before any member is read, so an unknown (misspelt) field
 * is a 400 rather than silently ignored. yajl hands strings over as C
 * strings, which would hide an escaped NUL (\u0000), so the raw body is
 * scanned for that escape first and refused.
 */
#include "config.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base64.h"
#include "client/fid.h"
#include "client/entry_json.h"
#include "filer/filer_api_parse.h"
#include "json.h"
#include "util.h"

struct pctx {
	char *msg;
	size_t msglen;
	const uint8_t *raw; /* content sent raw after the JSON, NULL for none */
	size_t raw_len;
	bool raw_taken; /* an operation took raw as its content */
};

static bool fail(struct pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(struct pctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->msg, c->msglen, fmt, ap);
	va_end(ap);
	return false;
}


/* ---- members ---- */

/*
 * Fields naming paths or names, which a client may send as <field>B64 instead
 * (base64 of the raw bytes): how names that are not valid UTF-8 travel.
 * "consume" is an array of paths: consumeB64 is the array of their base64.
 */
static const char *const byte_fields[] = {"path",    "dir",    "from",      "to",     "target",
					  "newPath", "prefix", "startName", "consume"};

/* Whether key is one of allowed, or <field>B64 for an allowed byte field. */
static bool key_allowed(const char *key, const char *const *allowed)
{
	size_t n = strlen(key);
	bool b64 = n > 3 && !strcmp(key + n - 3, "B64");
	for (size_t a = 0; allowed[a]; a++) {
		if (!strcmp(allowed[a], key))
			return true;
		if (!b64 || strlen(allowed[a]) != n - 3 || strncmp(allowed[a], key, n - 3))
			continue;
		for (size_t i = 0; i < ARRAY_LEN(byte_fields); i++)
			if (!strcmp(byte_fields[i], allowed[a]))
				return true;
	}
	return false;
}

static bool check_keys(struct pctx *c, yajl_val obj, const char *what, const char *const *allowed)
{
	if (!YAJL_IS_OBJECT(obj))
		return fail(c, "%s must be a JSON object", what);
	for (size_t i = 0; i < obj->u.object.len; i++) {
		const char *k = obj->u.object.keys[i];
		bool ok = key_allowed(k, allowed);
		if (!ok)
			return fail(c, "unknown field \"%.64s\" in %s", k, what);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(obj->u.object.keys[j], k))
				return fail(c, "duplicate field \"%.64s\" in %s", k, what);
	}
	return true;
}

/* Optional string; *out stays NULL when absent. */
static bool get_str(struct pctx *c, yajl_val obj, const char *key, size_t max, char **out)
{
	yajl_val v = json_get(obj, key);
	if (!v)
		return true;
	if (!YAJL_IS_STRING(v))
		return fail(c, "\"%s\" must be a string", key);
	if (strlen(v->u.string) > max)
		return fail(c, "\"%s\" is longer than %zu bytes", key, max);
	free(*out);
	*out = xstrdup(v->u.string);
	return true;
}

/*
 * Where a content comes from: the raw bytes after the JSON, or else field's
 * base64 in obj. *data (caller frees) stays NULL when there is neither.
 */
static bool get_content(struct pctx *c, yajl_val obj, const char *field, uint8_t **data,
			size_t *len)
{
	char *text = NULL;
	bool ok;

	*data = NULL;
	*len = 0;
	if (c->raw) {
		if (json_get(obj, field))
			return fail(c,
				    "the content is sent raw after the JSON (%s), not also "
				    "as \"%s\"",
				    API_RAW_CONTENT_HEADER, field);
		if (c->raw_len > API_CONTENT_MAX)
			return fail(c, "the raw content is over %u bytes", API_CONTENT_MAX);
		*data = xmalloc(c->raw_len + 1);
		memcpy(*data, c->raw, c->raw_len);
		*len = c->raw_len;
		c->raw_taken = true;
		return true;
	}
	if (!get_str(c, obj, field, API_CONTENT_MAX * 4 / 3 + 4, &text))
		return false;
	ok = !text || base64_decode(text, API_CONTENT_MAX, data, len);
	free(text);
	if (!ok)
		return fail(c, "\"%s\" must be base64 of at most %u bytes", field, API_CONTENT_MAX);
	return true;
}

static bool get_bool(struct pctx *c, yajl_val obj, const char *key, bool *out)
{
	yajl_val v = json_get(obj, key);
	if (!v)
		return true;
	if (!YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
		return fail(c, "\"%s\" must be true or false", key);
	*out = YAJL_IS_TRUE(v);
	return true;
}

/* Optional unsigned integer <= max; *present (may be NULL) says whether it was there. */
static bool get_u64(struct pctx *c, yajl_val obj, const char *key, uint64_t max, uint64_t *out,
		    bool *present)
{
	yajl_val v = json_get(obj, key);
	if (present)
		*present = v != NULL;
	if (!v)
		return true;
	if (!json_as_u64(v, out) || *out > max)
		return fail(c, "\"%s\" must be an integer in 0..%llu", key,
			    (unsigned long long)max);
	return true;
}

static bool get_i64(struct pctx *c, yajl_val obj, const char *key, int64_t *out, bool *present)
{
	yajl_val v = json_get(obj, key);
	if (present)
		*present = v != NULL;
	if (!v)
		return true;
	if (!json_as_i64(v, out))
		return fail(c, "\"%s\" must be a 64-bit integer", key);
	return true;
}

/* An optional byte field (byte_fields; entry_json_req_bytes). *out stays NULL when absent. */
static bool get_bytes_str(struct pctx *c, yajl_val obj, const char *key, size_t max, char **out)
{
	return !entry_json_req_bytes(obj, key, max, out, c->msg, c->msglen);
}

/* A required absolute, canonical path, split into *dir and *name (entry_json_req_path). */
static bool get_path(struct pctx *c, yajl_val obj, const char *key, char **path, char **dir,
		     char **name)
{
	return !entry_json_req_path(obj, key, path, dir, name, c->msg, c->msglen);
}

/* A chunk list (entry_json_chunks_read), appended to e's chunks. */
static bool get_chunks(struct pctx *c, yajl_val obj, const char *key, struct filer_entry *e)
{
	return !entry_json_chunks_read(obj, key, ENTRY_JSON_REQUEST, e, c->msg, c->msglen);
}

/* ---- operations ---- */

static const char *const k_lookup[] = {"path", NULL};
static const char *const k_list[] = {"dir", "startName", "inclusive", "limit", "prefix", NULL};
static const char *const k_create[] = {"entry",  "quiet",   "exclusive", "parents",
				       "ifEtag", "consume", "moves",     NULL};
static const char *const k_move[] = {"from", "to", "ifEtag", NULL};
static const char *const k_update[] = {"path", "set", "ifEtag", "fsync", NULL};
static const char *const k_set[] = {"mode",         "uid",     "gid",        "size",
				    "mtimeNs",      "atimeNs", "ctimeNs",    "chunks",
				    "appendChunks", "content", "dropChunks", NULL};
static const char *const k_delete[] = {"path", "recursive", "ifEtag", NULL};
static const char *const k_rename[] = {"from", "to", "noReplace", "exchange", "ifEtag", NULL};
static const char *const k_link[] = {"target", "newPath", NULL};
static const char *const k_setx[] = {"path", "name", "value", "flags", "ifEtag", NULL};
static const char *const k_rmx[] = {"path", "name", "ifEtag", NULL};
static const char *const k_setxs[] = {"ops", NULL};
static const char *const k_assign[] = {"count", "collection", "replication", "ttl", NULL};
static const char *const k_lookupv[] = {"volumeId", NULL};
static const char *const k_none[] = {NULL};
static const char *const k_free[] = {"fileIds", NULL};

/* obj.key: an array of 1..API_FREE_MAX well-formed file ids, into r->fids. */
static bool get_fids(struct pctx *c, yajl_val obj, const char *key, struct api_req *r)
{
	yajl_val v = json_get(obj, key);
	if (!v)
		return fail(c, "\"%s\" is required", key);
	if (!YAJL_IS_ARRAY(v) || !v->u.array.len || v->u.array.len > API_FREE_MAX)
		return fail(c, "\"%s\" must be an array of 1..%u file ids", key, API_FREE_MAX);
	r->fids = xcalloc(v->u.array.len, sizeof(*r->fids));
	for (size_t i = 0; i < v->u.array.len; i++) {
		yajl_val s = v->u.array.values[i];
		struct fid f;
		const char *ext = NULL;
		if (!YAJL_IS_STRING(s) || strlen(s->u.string) > FILER_FID_MAX ||
		    fid_parse(s->u.string, &f, &ext) || (ext && *ext))
			return fail(c, "\"%s\"[%zu] is not a file id", key, i);
		r->fids[r->nfids++] = xstrdup(s->u.string);
	}
	return true;
}

/* freeChunks: {"fileIds": ["3,01637037d6", ...]}, each a well-formed file id. */
static bool parse_free(struct pctx *c, struct api_req *r, yajl_val root)
{
	return check_keys(c, root, "the request", k_free) && get_fids(c, root, "fileIds", r);
}

static bool is_etag(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f') ||
		      (s[n] >= 'A' && s[n] <= 'F')))
			return false;
	return n == 16;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * create's "consume" (strings) or "consumeB64" (base64 of the bytes): 1..
 * API_CONSUME_MAX canonical paths of files, none the root or r->path, no
 * duplicates; into r->consume, sorted.
 */
static bool get_consume(struct pctx *c, struct api_req *r, yajl_val root)
{
	yajl_val s = json_get(root, "consume"), b = json_get(root, "consumeB64");
	yajl_val v = b ? b : s;
	const char *key = b ? "consumeB64" : "consume";
	if (!v)
		return true;
	if (s && b)
		return fail(c, "\"consume\" and \"consumeB64\" exclude each other");
	if (!YAJL_IS_ARRAY(v) || !v->u.array.len || v->u.array.len > API_CONSUME_MAX)
		return fail(c, "\"%s\" must be an array of 1..%u paths", key, API_CONSUME_MAX);
	r->consume = xcalloc(v->u.array.len, sizeof(*r->consume));
	for (size_t i = 0; i < v->u.array.len; i++) {
		yajl_val p = v->u.array.values[i];
		char *path = NULL, *d = NULL, *n = NULL;
		bool ok = YAJL_IS_STRING(p);
		if (ok && b) {
			uint8_t *raw = NULL;
			size_t len = 0;
			ok = strlen(p->u.string) <= FILER_PATH_MAX / 3 * 4 + 8 &&
			     base64_decode(p->u.string, FILER_PATH_MAX, &raw, &len) &&
			     !memchr(raw, '\0', len);
			if (raw)
				raw[len] = '\0'; /* the decoder leaves room for it */
			path = (char *)raw;
		} else if (ok) {
			ok = strlen(p->u.string) <= FILER_PATH_MAX;
			path = ok ? xstrdup(p->u.string) : NULL;
		}
		ok = ok && !filer_path_split(path, &d, &n) && *n;
		free(d);
		free(n);
		if (!ok) {
			free(path);
			return fail(c, "\"%s\"[%zu] is not a valid path of a file", key, i);
		}
		r->consume[r->nconsume++] = path;
	}
	qsort(r->consume, r->nconsume, sizeof(*r->consume), cmp_str);
	for (size_t i = 0; i < r->nconsume; i++) {
		if (i && !strcmp(r->consume[i - 1], r->consume[i]))
			return fail(c, "\"%s\" names \"%.64s\" twice", key, r->consume[i]);
		if (!strcmp(r->consume[i], r->path))
			return fail(c, "\"%s\" names the entry's own path", key);
	}
	return true;
}

/* Whether path is one of r's consumed paths (sorted). */
static bool consumed(const struct api_req *r, const char *path)
{
	return r->nconsume &&
	       bsearch(&path, r->consume, r->nconsume, sizeof(*r->consume), cmp_str) != NULL;
}

/* An optional "ifEtag" of obj: 16 hex digits. */
static bool get_if_etag(struct pctx *c, yajl_val obj, char **out)
{
	if (!get_str(c, obj, "ifEtag", 64, out))
		return false;
	if (*out && !is_etag(*out))
		return fail(c, "\"ifEtag\" must be an entry etag (16 hex digits)");
	return true;
}

/*
 * create's "moves": 1..API_MOVES_MAX objects {"from", "to", "ifEtag"} (from and
 * to also as fromB64 / toB64), canonical paths other than the root; no path
 * twice among all of them, no to equal to r->path, none consumed. After
 * get_consume. Into r->moves, in the given order.
 */
static bool get_moves(struct pctx *c, struct api_req *r, yajl_val root)
{
	yajl_val v = json_get(root, "moves");
	if (!v)
		return true;
	if (!YAJL_IS_ARRAY(v) || !v->u.array.len || v->u.array.len > API_MOVES_MAX)
		return fail(c, "\"moves\" must be an array of 1..%u objects", API_MOVES_MAX);
	r->moves = xcalloc(v->u.array.len, sizeof(*r->moves));
	for (size_t i = 0; i < v->u.array.len; i++) {
		yajl_val m = v->u.array.values[i];
		struct api_move *mv = &r->moves[r->nmoves++];
		char *d = NULL, *n = NULL, *d2 = NULL, *n2 = NULL;
		bool ok = check_keys(c, m, "a move", k_move) &&
			  get_path(c, m, "from", &mv->from, &d, &n) &&
			  get_path(c, m, "to", &mv->to, &d2, &n2) &&
			  get_if_etag(c, m, &mv->if_etag);
		if (ok && (!*n || !*n2))
			ok = fail(c,
				  "\"moves\"[%zu]: the root directory cannot be moved or "
				  "replaced",
				  i);
		free(d);
		free(n);
		free(d2);
		free(n2);
		if (!ok)
			return false;
		if (!strcmp(mv->to, r->path))
			return fail(c, "\"moves\"[%zu]: \"to\" is the entry's own path", i);
		if (consumed(r, mv->from) || consumed(r, mv->to))
			return fail(c, "\"moves\"[%zu] names a consumed path", i);
		for (size_t k = 0; k < i; k++) {
			const struct api_move *o = &r->moves[k];
			if (!strcmp(o->from, mv->from) || !strcmp(o->from, mv->to) ||
			    !strcmp(o->to, mv->from) || !strcmp(o->to, mv->to))
				return fail(c, "\"moves\"[%zu] names a path of \"moves\"[%zu]", i,
					    k);
		}
		if (!strcmp(mv->from, mv->to))
			return fail(c, "\"moves\"[%zu]: \"from\" and \"to\" are the same", i);
	}
	return true;
}

/* ---- extended attributes ---- */

/* An attribute's "name" of obj: required, 1..FILER_SHORT_MAX bytes. */
static bool get_xname(struct pctx *c, yajl_val obj, char **out)
{
	if (!get_str(c, obj, "name", FILER_SHORT_MAX, out))
		return false;
	if (!*out || !**out)
		return fail(c, "\"name\" is required (1..%d bytes)", FILER_SHORT_MAX);
	return true;
}

/* An attribute's optional "value" of obj, decoded; *v stays NULL when absent. */
static bool get_xvalue(struct pctx *c, yajl_val obj, uint8_t **v, size_t *len)
{
	char *text = NULL;
	bool ok;

	if (!get_str(c, obj, "value", FILER_XATTR_VALUE_MAX / 3 * 4 + 8, &text))
		return false;
	ok = !text || base64_decode(text, FILER_XATTR_VALUE_MAX, v, len);
	free(text);
	if (!ok)
		return fail(c, "\"value\" must be base64 of at most %u bytes",
			    FILER_XATTR_VALUE_MAX);
	return true;
}

/* An attribute's optional "flags" of obj: "create", "replace" or "" (absent: ""). */
static bool get_xflag(struct pctx *c, yajl_val obj, enum api_xattr_flag *out)
{
	char *flags = NULL;
	bool ok = get_str(c, obj, "flags", 16, &flags);

	*out = API_XATTR_ANY;
	if (ok && flags && !strcmp(flags, "create"))
		*out = API_XATTR_CREATE;
	else if (ok && flags && !strcmp(flags, "replace"))
		*out = API_XATTR_REPLACE;
	else if (ok && flags && *flags)
		ok = fail(c, "\"flags\" must be \"create\", \"replace\" or \"\"");
	free(flags);
	return ok;
}

/* One of setXattrs' "ops" (k_setx's fields; no "value": a remove, which takes no flag). */
static bool get_xattr_op(struct pctx *c, yajl_val obj, struct api_xattr_op *op)
{
	if (!check_keys(c, obj, "an op", k_setx) ||
	    !get_path(c, obj, "path", &op->path, &op->dir, &op->name) ||
	    !get_xname(c, obj, &op->xname) || !get_xvalue(c, obj, &op->value, &op->len) ||
	    !get_xflag(c, obj, &op->flag) || !get_if_etag(c, obj, &op->if_etag))
		return false;
	op->remove = !op->value;
	if (op->remove && op->flag != API_XATTR_ANY)
		return fail(c, "\"flags\" goes with \"value\" (a remove has none)");
	return true;
}

/* Whether no two of r's ops name one attribute of one path (at most 64: pairwise). */
static bool xattr_ops_distinct(struct pctx *c, const struct api_req *r)
{
	for (size_t i = 1; i < r->nxops; i++)
		for (size_t k = 0; k < i; k++)
			if (!strcmp(r->xops[k].path, r->xops[i].path) &&
			    !strcmp(r->xops[k].xname, r->xops[i].xname))
				return fail(c,
					    "\"ops\"[%zu] and \"ops\"[%zu] change the same "
					    "attribute",
					    k, i);
	return true;
}

/*
 * setXattrs' "ops": 1..API_XATTR_OPS_MAX attribute changes, no (path, name)
 * twice; into r->xops in the given order. A bad op's message names its index.
 */
static bool get_xattr_ops(struct pctx *c, struct api_req *r, yajl_val root)
{
	yajl_val v = json_get(root, "ops");

	if (!v)
		return fail(c, "\"ops\" is required");
	if (!YAJL_IS_ARRAY(v) || !v->u.array.len || v->u.array.len > API_XATTR_OPS_MAX)
		return fail(c, "\"ops\" must be an array of 1..%u objects", API_XATTR_OPS_MAX);
	r->xops = xcalloc(v->u.array.len, sizeof(*r->xops));
	for (size_t i = 0; i < v->u.array.len; i++) {
		if (!get_xattr_op(c, v->u.array.values[i], &r->xops[r->nxops++])) {
			char *why = xstrdup(c->msg);
			fail(c, "\"ops\"[%zu]: %s", i, why);
			free(why);
			return false;
		}
	}
	return xattr_ops_distinct(c, r);
}

/*
 * create's "entry", in entry_json.h's request form (its members are that
 * codec's), made whole: the content (raw or in the JSON), the size, nlink 1
 * and the times it leaves out ("now"; the atime: the mtime).
 */
static bool parse_entry(struct pctx *c, struct api_req *r, yajl_val ev)
{
	struct filer_entry *e;
	unsigned has;
	int64_t now;

	if (entry_json_read(ev, ENTRY_JSON_REQUEST, &r->entry, &has, c->msg, c->msglen))
		return false;
	e = r->entry;
	r->path = filer_entry_full_path(e);
	r->dir = xstrdup(e->dir);
	r->name = xstrdup(e->name);
	if (!*r->name)
		return fail(c, "the root directory cannot be created");
	if (c->raw) {
		uint8_t *data;
		size_t len;
		if (!get_content(c, ev, "content", &data, &len))
			return false;
		free(e->content);
		e->content = data;
		e->content_len = len;
		e->has_content = true;
	}
	if (!(has & ENTRY_JSON_HAS_MODE))
		return fail(c, "\"entry.mode\" is required (type and permission bits)");
	switch (e->attr.mode & S_IFMT) {
	case S_IFREG:
	case S_IFDIR:
	case S_IFLNK:
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFCHR:
	case S_IFBLK:
		break;
	default:
		return fail(c, "\"entry.mode\" has no valid file type (S_IFMT bits)");
	}
	if (S_ISLNK(e->attr.mode) != (e->attr.symlink_target != NULL))
		return fail(c, "a symlink needs a non-empty \"symlinkTarget\", others none");
	if (!S_ISREG(e->attr.mode) && (e->has_content || e->n_chunks))
		return fail(c, "only regular files have content or chunks");
	if (e->has_content && e->n_chunks)
		return fail(c, "\"content\" and \"chunks\" exclude each other");
	if (e->has_content)
		e->attr.size = e->content_len;
	for (size_t i = 0; i < e->n_chunks; i++)
		if (e->chunks[i].offset + e->chunks[i].size > e->attr.size)
			e->attr.size = e->chunks[i].offset + e->chunks[i].size;
	e->attr.nlink = 1;
	now = (int64_t)time_now_ns();
	if (!(has & ENTRY_JSON_HAS_MTIME))
		e->attr.mtime_ns = now;
	/* 0 is also the stored "not set", which reads as the mtime anyway */
	if (!(has & ENTRY_JSON_HAS_ATIME))
		e->attr.atime_ns = e->attr.mtime_ns;
	if (!(has & ENTRY_JSON_HAS_CTIME))
		e->attr.ctime_ns = now;
	if (!(has & ENTRY_JSON_HAS_CRTIME))
		e->attr.crtime_ns = now;
	return true;
}

static bool parse_update(struct pctx *c, struct api_req *r, yajl_val root)
{
	yajl_val s = json_get(root, "set");
	uint64_t v = 0;
	int64_t t = 0;
	bool p, pa, pc;

	if (!get_path(c, root, "path", &r->path, &r->dir, &r->name) ||
	    !get_str(c, root, "ifEtag", 64, &r->if_etag) ||
	    !get_bool(c, root, "fsync", &r->fsync))
		return false;
	if (!s)
		return fail(c, "\"set\" is required");
	if (!check_keys(c, s, "\"set\"", k_set))
		return false;
#define U(key, bit, field, max)                       \
	do {                                          \
		if (!get_u64(c, s, key, max, &v, &p)) \
			return false;                 \
		if (p) {                              \
			r->set |= bit;                \
			r->attr.field = v;            \
		}                                     \
	} while (0)
	U("mode", API_SET_MODE, mode, 07777);
	U("uid", API_SET_UID, uid, UINT32_MAX);
	U("gid", API_SET_GID, gid, UINT32_MAX);
	U("size", API_SET_SIZE, size, INT64_MAX);
#undef U
	if (!get_i64(c, s, "mtimeNs", &t, &p))
		return false;
	if (p) {
		r->set |= API_SET_MTIME;
		r->attr.mtime_ns = t;
	}
	if (!get_i64(c, s, "atimeNs", &t, &p))
		return false;
	if (p) {
		r->set |= API_SET_ATIME;
		r->attr.atime_ns = t;
	}
	if (!get_i64(c, s, "ctimeNs", &t, &p))
		return false;
	if (p) {
		r->set |= API_SET_CTIME;
		r->attr.ctime_ns = t;
	}
	pc = json_get(s, "chunks") != NULL;
	pa = json_get(s, "appendChunks") != NULL;
	if (pc && pa)
		return fail(c, "\"chunks\" and \"appendChunks\" exclude each other");
	if (pc || pa) {
		r->chunks = filer_entry_new("/", "x");
		if (!get_chunks(c, s, pc ? "chunks" : "appendChunks", r->chunks))
			return false;
		r->set |= pc ? API_SET_CHUNKS : API_SET_APPEND;
	}
	if (json_get(s, "dropChunks")) {
		if (!pa)
			return fail(c, "\"dropChunks\" goes with \"appendChunks\"");
		if (!get_fids(c, s, "dropChunks", r))
			return false;
		r->set |= API_SET_DROP;
	}
	if (json_get(s, "content") || c->raw) {
		if (r->set & (API_SET_CHUNKS | API_SET_APPEND | API_SET_SIZE))
			return fail(c, "\"content\" excludes \"chunks\", \"appendChunks\" and "
				       "\"size\" (it sets them)");
		if (!get_content(c, s, "content", &r->content, &r->content_len))
			return false;
		r->set |= API_SET_CONTENT;
	}
	return true;
}

static bool parse_body(struct pctx *c, struct api_req *r, yajl_val root)
{
	uint64_t v = 0;
	bool ok;

	switch (r->op) {
	case API_LOOKUP:
		return check_keys(c, root, "the request", k_lookup) &&
		       get_path(c, root, "path", &r->path, &r->dir, &r->name);
	case API_LIST:
		r->limit = 1000;
		if (!check_keys(c, root, "the request", k_list) ||
		    !get_path(c, root, "dir", &r->path, &r->dir, &r->name) ||
		    !get_bytes_str(c, root, "startName", FILER_NAME_MAX, &r->start) ||
		    !get_bytes_str(c, root, "prefix", FILER_NAME_MAX, &r->prefix) ||
		    !get_bool(c, root, "inclusive", &r->inclusive))
			return false;
		v = r->limit;
		if (!get_u64(c, root, "limit", API_LIST_MAX, &v, NULL))
			return false;
		if (v == 0)
			return fail(c, "\"limit\" must be 1..%u", API_LIST_MAX);
		r->limit = (size_t)v;
		return true;
	case API_CREATE: {
		yajl_val ev = json_get(root, "entry");
		if (!check_keys(c, root, "the request", k_create) ||
		    !get_bool(c, root, "exclusive", &r->exclusive) ||
		    !get_bool(c, root, "parents", &r->parents) ||
		    !get_bool(c, root, "quiet", &r->quiet) ||
		    !get_str(c, root, "ifEtag", 64, &r->if_etag))
			return false;
		if (r->if_etag && !is_etag(r->if_etag))
			return fail(c, "\"ifEtag\" must be an entry etag (16 hex digits)");
		if (r->if_etag && r->exclusive)
			return fail(c, "\"ifEtag\" and \"exclusive\" exclude each other");
		if (!ev)
			return fail(c, "\"entry\" is required");
		return parse_entry(c, r, ev) && get_consume(c, r, root) && get_moves(c, r, root);
	}
	case API_UPDATE:
		return check_keys(c, root, "the request", k_update) && parse_update(c, r, root);
	case API_DELETE:
		return check_keys(c, root, "the request", k_delete) &&
		       get_path(c, root, "path", &r->path, &r->dir, &r->name) &&
		       get_bool(c, root, "recursive", &r->recursive) &&
		       get_if_etag(c, root, &r->if_etag);
	case API_RENAME:
		if (!check_keys(c, root, "the request", k_rename) ||
		    !get_path(c, root, "from", &r->path, &r->dir, &r->name) ||
		    !get_path(c, root, "to", &r->path2, &r->dir2, &r->name2) ||
		    !get_bool(c, root, "noReplace", &r->no_replace) ||
		    !get_bool(c, root, "exchange", &r->exchange) ||
		    !get_if_etag(c, root, &r->if_etag))
			return false;
		if (r->no_replace && r->exchange)
			return fail(c, "\"noReplace\" and \"exchange\" exclude each other");
		if (r->if_etag && (r->no_replace || r->exchange))
			return fail(c, "\"ifEtag\" excludes \"noReplace\" and \"exchange\"");
		if (!*r->name || !*r->name2)
			return fail(c, "the root directory cannot be renamed or replaced");
		return true;
	case API_LINK:
		if (!check_keys(c, root, "the request", k_link) ||
		    !get_path(c, root, "target", &r->path, &r->dir, &r->name) ||
		    !get_path(c, root, "newPath", &r->path2, &r->dir2, &r->name2))
			return false;
		if (!*r->name2)
			return fail(c, "the root directory cannot be a link");
		return true;
	case API_SET_XATTR:
	case API_REMOVE_XATTR:
		ok = check_keys(c, root, "the request", r->op == API_SET_XATTR ? k_setx : k_rmx) &&
		     get_path(c, root, "path", &r->path, &r->dir, &r->name) &&
		     get_xname(c, root, &r->xname) &&
		     get_xvalue(c, root, &r->xvalue, &r->xvalue_len) &&
		     get_xflag(c, root, &r->xflag) && get_if_etag(c, root, &r->if_etag);
		if (ok && r->op == API_SET_XATTR && !r->xvalue)
			ok = fail(c, "\"value\" is required (base64)");
		return ok;
	case API_SET_XATTRS:
		return check_keys(c, root, "the request", k_setxs) && get_xattr_ops(c, r, root);
	case API_ASSIGN:
		v = 1;
		if (!check_keys(c, root, "the request", k_assign) ||
		    !get_u64(c, root, "count", API_ASSIGN_MAX, &v, NULL) ||
		    !get_str(c, root, "collection", FILER_SHORT_MAX, &r->collection) ||
		    !get_str(c, root, "replication", 8, &r->replication) ||
		    !get_str(c, root, "ttl", 16, &r->ttl))
			return false;
		if (v == 0)
			return fail(c, "\"count\" must be 1..%u", API_ASSIGN_MAX);
		r->count = (uint32_t)v;
		return true;
	case API_LOOKUP_VOLUME: {
		bool p;
		if (!check_keys(c, root, "the request", k_lookupv) ||
		    !get_u64(c, root, "volumeId", UINT32_MAX, &v, &p))
			return false;
		if (!p)
			return fail(c, "\"volumeId\" is required");
		r->volume_id = (uint32_t)v;
		return true;
	}
	case API_STATFS:
	case API_CONFIGURATION:
		return check_keys(c, root, "the request", k_none);
	case API_FREE_CHUNKS:
		return parse_free(c, r, root);
	}
	return fail(c, "unknown operation");
}

static const struct {
	const char *name;
	enum api_op op;
} ops[] = {
	{"lookup", API_LOOKUP},
	{"list", API_LIST},
	{"create", API_CREATE},
	{"update", API_UPDATE},
	{"delete", API_DELETE},
	{"rename", API_RENAME},
	{"setXattr", API_SET_XATTR},
	{"removeXattr", API_REMOVE_XATTR},
	{"assign", API_ASSIGN},
	{"lookupVolume", API_LOOKUP_VOLUME},
	{"link", API_LINK},
	{"statfs", API_STATFS},
	{"freeChunks", API_FREE_CHUNKS},
	{"setXattrs", API_SET_XATTRS},
	{"configuration", API_CONFIGURATION},
};

/* True if the JSON text holds an escaped NUL (\u0000) inside a string. */
static bool has_nul_escape(const char *s, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (s[i] != '\\')
			continue;
		if (s[i + 1] == 'u' && i + 5 < len && s[i + 2] == '0' && s[i + 3] == '0' &&
		    s[i + 4] == '0' && s[i + 5] == '0')
			return true;
		i++; /* skip the escaped character */
	}
	return false;
}

wfs_err api_req_parse(const char *op, const char *body, size_t len, const uint8_t *raw,
		      size_t raw_len, struct api_req **out, char *msg, size_t msglen)
{
	struct pctx c = {msg, msglen, raw, raw_len, false};
	struct api_req *r;
	yajl_val root;
	size_t i;

	*out = NULL;
	for (i = 0; i < ARRAY_LEN(ops); i++)
		if (!strcmp(ops[i].name, op))
			break;
	if (i == ARRAY_LEN(ops)) {
		fail(&c, "unknown operation \"%.64s\"", op);
		return WFS_ENOENT;
	}
	if (len > API_BODY_MAX) {
		fail(&c, "request body over %u bytes", API_BODY_MAX);
		return WFS_EINVAL;
	}
	if (memchr(body, '\0', len) || has_nul_escape(body, len)) {
		fail(&c, "NUL bytes are not allowed");
		return WFS_EINVAL;
	}
	root = json_parse(body, len, msg, msglen);
	if (!root)
		return WFS_EINVAL;
	r = xcalloc(1, sizeof(*r));
	r->op = ops[i].op;
	if (!parse_body(&c, r, root) ||
	    (raw && !c.raw_taken &&
	     !fail(&c, "%s: this request has no content to send raw", API_RAW_CONTENT_HEADER))) {
		api_req_free(r);
		yajl_tree_free(root);
		return WFS_EINVAL;
	}
	yajl_tree_free(root);
	*out = r;
	return WFS_OK;
}

void api_req_free(struct api_req *r)
{
	if (!r)
		return;
	free(r->path);
	free(r->dir);
	free(r->name);
	free(r->content);
	free(r->path2);
	free(r->dir2);
	free(r->name2);
	free(r->start);
	free(r->prefix);
	filer_entry_free(r->entry);
	filer_entry_free(r->chunks);
	free(r->if_etag);
	free(r->xname);
	free(r->xvalue);
	free(r->collection);
	free(r->replication);
	free(r->ttl);
	for (size_t i = 0; i < r->nfids; i++)
		free(r->fids[i]);
	free(r->fids);
	for (size_t i = 0; i < r->nconsume; i++)
		free(r->consume[i]);
	free(r->consume);
	for (size_t i = 0; i < r->nmoves; i++) {
		free(r->moves[i].from);
		free(r->moves[i].to);
		free(r->moves[i].if_etag);
	}
	free(r->moves);
	for (size_t i = 0; i < r->nxops; i++) {
		struct api_xattr_op *x = &r->xops[i];
		free(x->path);
		free(x->dir);
		free(x->name);
		free(x->xname);
		free(x->value);
		free(x->if_etag);
	}
	free(r->xops);
	free(r);
}
