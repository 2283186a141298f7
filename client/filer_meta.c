/*
 * Typed calls of the filer's JSON entry API (filer_meta.h).
 *
 * DESIGN: request bodies are written with lib/json.h's writer, their entries
 * and chunk lists by client/entry_json.h's codec (create's entry in its
 * request form), which the filer's request parser reads with too; answers
 * are parsed into a yajl tree and their entries decoded by the same codec
 * (the answer form). Lookups ask for the entry in its stored encoding
 * instead, which decodes in a fraction of the JSON's time; a filer that
 * answers JSON anyway is still understood.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include "client/entry_json.h"
#include "client/filer_wire.h"
#include "client/filer_meta.h"
#include "json.h"
#include "utf8.h"
#include "util.h"

struct filer_entry *filer_meta_entry_from_json(yajl_val v)
{
	struct filer_entry *e;
	return entry_json_read(v, 0, &e, NULL, NULL, 0) ? NULL : e;
}

/* Calls op with the body in req; on success parses the answer into *tree. */
static wfs_err call(filer_rpc *r, const char *op, buf *req, yajl_val *tree)
{
	char msg[128];
	buf resp;
	wfs_err rc;

	buf_init(&resp);
	rc = filer_rpc_call(r, op, req->data, req->len, &resp);
	if (!rc && tree) {
		*tree = json_parse(resp.data ? resp.data : "", resp.len, msg, sizeof(msg));
		if (!*tree)
			rc = WFS_EIO;
	}
	buf_free(&resp);
	buf_free(req);
	return rc;
}

/*
 * Calls op (its body's last raw_content bytes sent raw; -1: none) and decodes
 * its entry answer into *out and etag (each may be NULL; path names the entry
 * when the answer is in the stored encoding).
 */
static wfs_err call_entry_etag(filer_rpc *r, const char *op, const char *path, buf *req,
			       int64_t raw_content, struct filer_entry **out, char etag[17])
{
	buf resp;
	wfs_err rc;

	buf_init(&resp);
	rc = filer_rpc_call_as(r, op, req->data, req->len,
			       strcmp(op, "lookup") ? "application/json" : FILER_ENTRY_MEDIA_TYPE,
			       raw_content, &resp);
	buf_free(req);
	if (!rc && (out || etag))
		rc = filer_meta_entry_answer(resp.data ? resp.data : "", resp.len, path, out, etag);
	buf_free(&resp);
	return rc;
}

static wfs_err call_entry(filer_rpc *r, const char *op, buf *req, int64_t raw_content,
			  struct filer_entry **out)
{
	return call_entry_etag(r, op, NULL, req, raw_content, out, NULL);
}

wfs_err filer_meta_lookup(filer_rpc *r, const char *path, struct filer_entry **out)
{
	return filer_meta_lookup_etag(r, path, out, NULL);
}

void filer_meta_lookup_body(buf *b, const char *path)
{
	json_w *w = jw_new(b, false);
	jw_obj_begin(w);
	entry_json_kv_bytes(w, "path", path);
	jw_obj_end(w);
	jw_free(w);
}

/* The stored encoding's answer: the etag is the xxh64 of its bytes. */
static wfs_err entry_answer_encoded(const uint8_t *body, size_t len, const char *path,
				    struct filer_entry **out, char etag[17])
{
	char *dir = NULL, *name = NULL;
	struct filer_entry *e = NULL;
	wfs_err rc = WFS_EIO;

	if (path && !filer_path_split(path, &dir, &name) &&
	    !filer_entry_decode(body, len, dir, name, &e))
		rc = WFS_OK;
	free(dir);
	free(name);
	if (!rc && etag)
		snprintf(etag, 17, "%016" PRIx64, (uint64_t)XXH64(body, len, 0));
	if (out)
		*out = e;
	else
		filer_entry_free(e);
	return rc;
}

wfs_err filer_meta_entry_answer(const char *body, size_t len, const char *path,
				struct filer_entry **out, char etag[17])
{
	yajl_val tree;
	const char *s;
	wfs_err rc = WFS_OK;

	if (out)
		*out = NULL;
	if (len && body[0] != '{') /* a version byte: the stored encoding */
		return entry_answer_encoded((const uint8_t *)body, len, path, out, etag);
	if (!(tree = json_parse(body, len, NULL, 0)))
		return WFS_EIO;
	if (etag) {
		if (json_get_str(tree, "etag", &s) && strlen(s) == 16)
			memcpy(etag, s, 17);
		else
			rc = WFS_EIO;
	}
	if (!rc && out && !(*out = filer_meta_entry_from_json(tree)))
		rc = WFS_EIO;
	yajl_tree_free(tree);
	return rc;
}

wfs_err filer_meta_lookup_etag(filer_rpc *r, const char *path, struct filer_entry **out,
			       char etag[17])
{
	buf b;

	buf_init(&b);
	filer_meta_lookup_body(&b, path);
	return call_entry_etag(r, "lookup", path, &b, -1, out, etag);
}

void filer_meta_page_free(struct filer_meta_page *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		filer_entry_free(p->entries[i]);
	free(p->entries);
	free(p->last_name);
	memset(p, 0, sizeof(*p));
}

wfs_err filer_meta_list(filer_rpc *r, const char *dir, const char *start, size_t limit,
			struct filer_meta_page *out)
{
	return filer_meta_list_from(r, dir, start, false, NULL, limit, out);
}

#define EACH_PAGE 1000

wfs_err filer_meta_each(filer_rpc *r, const char *dir,
			bool (*fn)(const struct filer_entry *e, void *arg), void *arg)
{
	char *start = xstrdup("");
	bool go = true;
	wfs_err rc = WFS_OK;
	while (start) {
		struct filer_meta_page pg;
		rc = filer_meta_list(r, dir, start, EACH_PAGE, &pg);
		free(start);
		start = NULL;
		if (rc)
			break;
		for (size_t i = 0; i < pg.n && go; i++)
			go = fn(pg.entries[i], arg);
		if (go && pg.more && pg.last_name)
			start = xstrdup(pg.last_name);
		filer_meta_page_free(&pg);
	}
	return rc;
}

wfs_err filer_meta_list_from(filer_rpc *r, const char *dir, const char *start, bool inclusive,
			     const char *prefix, size_t limit, struct filer_meta_page *out)
{
	yajl_val tree = NULL, arr;
	json_w *w;
	buf b;
	wfs_err rc;

	memset(out, 0, sizeof(*out));
	buf_init(&b);
	w = jw_new(&b, false);
	jw_obj_begin(w);
	entry_json_kv_bytes(w, "dir", dir);
	entry_json_kv_bytes(w, "startName", start ? start : "");
	if (inclusive)
		jw_kv_bool(w, "inclusive", true);
	if (prefix && *prefix)
		entry_json_kv_bytes(w, "prefix", prefix);
	jw_kv_u64(w, "limit", limit);
	jw_obj_end(w);
	jw_free(w);
	rc = call(r, "list", &b, &tree);
	if (rc)
		return rc;
	arr = json_get(tree, "entries");
	if (!arr || !YAJL_IS_ARRAY(arr)) {
		rc = WFS_EIO;
		goto out;
	}
	out->entries = xcalloc(arr->u.array.len + 1, sizeof(*out->entries));
	for (size_t i = 0; i < arr->u.array.len; i++) {
		struct filer_entry *e = filer_meta_entry_from_json(arr->u.array.values[i]);
		if (!e) {
			rc = WFS_EIO;
			goto out;
		}
		out->entries[out->n++] = e;
	}
	if (json_get(tree, "more") && !json_get_bool(tree, "more", &out->more)) {
		rc = WFS_EIO;
		goto out;
	}
	if (!entry_json_get_bytes(tree, "lastName", FILER_NAME_MAX, &out->last_name)) {
		rc = WFS_EIO;
		goto out;
	}
	if (!out->last_name && out->n)
		out->last_name = xstrdup(out->entries[out->n - 1]->name);
out:
	yajl_tree_free(tree);
	if (rc)
		filer_meta_page_free(out);
	return rc;
}

/* "consume": the paths, or "consumeB64": their base64 when one is not UTF-8. */
static void write_consume(json_w *w, const char *const *p, size_t n)
{
	bool utf8 = true;

	for (size_t i = 0; i < n && utf8; i++)
		utf8 = utf8_valid(p[i], strlen(p[i]));
	jw_key(w, utf8 ? "consume" : "consumeB64");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		if (utf8)
			jw_str(w, p[i]);
		else
			entry_json_base64(w, NULL, p[i], strlen(p[i]));
	}
	jw_arr_end(w);
}

/* "moves": [{"from", "to", "ifEtag"}...], each path as fromB64 / toB64 when not UTF-8. */
static void write_moves(json_w *w, const struct filer_meta_move *m, size_t n)
{
	jw_key(w, "moves");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		entry_json_kv_bytes(w, "from", m[i].from);
		entry_json_kv_bytes(w, "to", m[i].to);
		if (m[i].if_etag)
			jw_kv_str(w, "ifEtag", m[i].if_etag);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

/*
 * Inline content goes raw after the JSON (API_RAW_CONTENT_HEADER says how
 * much): as base64 inside it, encoding and parsing it cost a small PUT more
 * than the rest of its request. The bytes after the JSON, or -1 for none.
 */
static int64_t append_raw_content(buf *b, bool has, const uint8_t *content, size_t len)
{
	if (!has)
		return -1;
	buf_append(b, content, len);
	return (int64_t)len;
}

wfs_err filer_meta_create(filer_rpc *r, const char *path, const struct filer_meta_new *n,
			  struct filer_entry **out)
{
	return filer_meta_create_etag(r, path, n, out, NULL);
}

/*
 * Writes create's entry (the request form of client/entry_json.h) for path and n
 * through a view of n as an entry: its pointers are n's (borrowed, never freed).
 * The content is not in it: it goes raw after the JSON.
 */
static void new_entry_write(json_w *w, const char *path, const struct filer_meta_new *n)
{
	struct filer_entry e = {
		.dir = (char *)path, /* with name "": the full path is path as given */
		.name = (char *)"",
		.attr = {
			.mode = n->mode,
			.uid = n->uid,
			.gid = n->gid,
			.rdev = n->rdev,
			.mtime_ns = n->time_ns,
			.atime_ns = n->time_ns,
			.ctime_ns = n->time_ns,
			.crtime_ns = n->time_ns,
			.mime = (char *)n->mime,
			.symlink_target = (char *)n->symlink_target,
		},
		.xattrs = (struct filer_xattr *)n->xattrs,
		.n_xattrs = n->n_xattrs,
		.chunks = (struct filer_chunk *)n->chunks,
		.n_chunks = n->n_chunks,
	};
	entry_json_write(w, &e, ENTRY_JSON_REQUEST);
}

int64_t filer_meta_create_body(buf *b, const char *path, const struct filer_meta_new *n, bool quiet)
{
	json_w *w = jw_new(b, false);
	jw_obj_begin(w);
	jw_key(w, "entry");
	new_entry_write(w, path, n);
	jw_kv_bool(w, "exclusive", n->exclusive);
	if (n->if_etag)
		jw_kv_str(w, "ifEtag", n->if_etag);
	if (n->parents)
		jw_kv_bool(w, "parents", true);
	if (n->n_consume)
		write_consume(w, n->consume, n->n_consume);
	if (n->n_moves)
		write_moves(w, n->moves, n->n_moves);
	if (quiet) /* the entry is not wanted back: skip encoding and parsing it */
		jw_kv_bool(w, "quiet", true);
	jw_obj_end(w);
	jw_free(w);
	return append_raw_content(b, n->has_content, n->content, n->content_len);
}

wfs_err filer_meta_create_etag(filer_rpc *r, const char *path, const struct filer_meta_new *n,
			       struct filer_entry **out, char etag[17])
{
	int64_t raw;
	buf b;

	buf_init(&b);
	raw = filer_meta_create_body(&b, path, n, !out);
	return call_entry_etag(r, "create", path, &b, raw, out, etag);
}

wfs_err filer_meta_update(filer_rpc *r, const char *path, const struct filer_meta_set *s,
			  struct filer_entry **out)
{
	json_w *w;
	int64_t raw;
	buf b;

	buf_init(&b);
	w = jw_new(&b, false);
	jw_obj_begin(w);
	entry_json_kv_bytes(w, "path", path);
	jw_key(w, "set");
	jw_obj_begin(w);
	if (s->set & FM_SET_MODE)
		jw_kv_u64(w, "mode", s->mode & 07777);
	if (s->set & FM_SET_UID)
		jw_kv_u64(w, "uid", s->uid);
	if (s->set & FM_SET_GID)
		jw_kv_u64(w, "gid", s->gid);
	if (s->set & FM_SET_SIZE)
		jw_kv_u64(w, "size", s->size);
	if (s->set & FM_SET_MTIME)
		jw_kv_i64(w, "mtimeNs", s->mtime_ns);
	if (s->set & FM_SET_ATIME)
		jw_kv_i64(w, "atimeNs", s->atime_ns);
	if (s->set & FM_SET_CTIME)
		jw_kv_i64(w, "ctimeNs", s->ctime_ns);
	if ((s->set & FM_SET_CHUNKS) || ((s->set & FM_SET_APPEND) && s->n_append))
		entry_json_chunks_write(w, (s->set & FM_SET_CHUNKS) ? "chunks" : "appendChunks",
					s->append, s->n_append);
	if ((s->set & FM_SET_APPEND) && s->n_append && s->n_drop) {
		jw_key(w, "dropChunks");
		jw_arr_begin(w);
		for (size_t i = 0; i < s->n_drop; i++)
			jw_str(w, s->drop[i]);
		jw_arr_end(w);
	}
	jw_obj_end(w);
	if (s->fsync)
		jw_kv_bool(w, "fsync", true);
	jw_obj_end(w);
	jw_free(w);
	raw = append_raw_content(&b, s->set & FM_SET_CONTENT, s->content, s->content_len);
	return call_entry(r, "update", &b, raw, out);
}

/* delete with an optional ifEtag (NULL: none). */
static wfs_err delete_call(filer_rpc *r, const char *path, bool recursive, const char *if_etag)
{
	json_w *w;
	buf b;

	buf_init(&b);
	w = jw_new(&b, false);
	jw_obj_begin(w);
	entry_json_kv_bytes(w, "path", path);
	jw_kv_bool(w, "recursive", recursive);
	if (if_etag)
		jw_kv_str(w, "ifEtag", if_etag);
	jw_obj_end(w);
	jw_free(w);
	return call(r, "delete", &b, NULL);
}

wfs_err filer_meta_delete(filer_rpc *r, const char *path, bool recursive)
{
	return delete_call(r, path, recursive, NULL);
}

wfs_err filer_meta_delete_if(filer_rpc *r, const char *path, const char *if_etag)
{
	return delete_call(r, path, false, if_etag);
}

/* rename with an optional ifEtag (NULL: none; it excludes no_replace and exchange). */
static wfs_err rename_call(filer_rpc *r, const char *from, const char *to, bool no_replace,
			   bool exchange, const char *if_etag)
{
	json_w *w;
	buf b;

	buf_init(&b);
	w = jw_new(&b, false);
	jw_obj_begin(w);
	entry_json_kv_bytes(w, "from", from);
	entry_json_kv_bytes(w, "to", to);
	jw_kv_bool(w, "noReplace", no_replace);
	jw_kv_bool(w, "exchange", exchange);
	if (if_etag)
		jw_kv_str(w, "ifEtag", if_etag);
	jw_obj_end(w);
	jw_free(w);
	return call(r, "rename", &b, NULL);
}

wfs_err filer_meta_rename(filer_rpc *r, const char *from, const char *to, bool no_replace,
			  bool exchange)
{
	return rename_call(r, from, to, no_replace, exchange, NULL);
}

wfs_err filer_meta_rename_if(filer_rpc *r, const char *from, const char *to, const char *if_etag)
{
	return rename_call(r, from, to, false, false, if_etag);
}

wfs_err filer_meta_link(filer_rpc *r, const char *target, const char *newpath,
			struct filer_entry **out)
{
	json_w *w;
	buf b;

	buf_init(&b);
	w = jw_new(&b, false);
	jw_obj_begin(w);
	entry_json_kv_bytes(w, "target", target);
	entry_json_kv_bytes(w, "newPath", newpath);
	jw_obj_end(w);
	jw_free(w);
	return call_entry(r, "link", &b, -1, out);
}

wfs_err filer_meta_set_xattr_if(filer_rpc *r, const char *path, const char *name,
				const void *value, size_t len, enum filer_meta_xflag flag,
				const char *if_etag, struct filer_entry **out, char etag[17])
{
	json_w *w;
	buf b;

	buf_init(&b);
	w = jw_new(&b, false);
	jw_obj_begin(w);
	entry_json_kv_bytes(w, "path", path);
	jw_kv_str(w, "name", name);
	entry_json_base64(w, "value", value, len);
	jw_kv_str(w, "flags",
		  flag == FM_XATTR_CREATE    ? "create"
		  : flag == FM_XATTR_REPLACE ? "replace"
					     : "");
	if (if_etag)
		jw_kv_str(w, "ifEtag", if_etag);
	jw_obj_end(w);
	jw_free(w);
	if (!out && !etag)
		return call(r, "setXattr", &b, NULL);
	return call_entry_etag(r, "setXattr", path, &b, -1, out, etag);
}

wfs_err filer_meta_set_xattr(filer_rpc *r, const char *path, const char *name, const void *value,
			     size_t len, enum filer_meta_xflag flag)
{
	return filer_meta_set_xattr_if(r, path, name, value, len, flag, NULL, NULL, NULL);
}

wfs_err filer_meta_remove_xattr(filer_rpc *r, const char *path, const char *name)
{
	json_w *w;
	buf b;

	buf_init(&b);
	w = jw_new(&b, false);
	jw_obj_begin(w);
	entry_json_kv_bytes(w, "path", path);
	jw_kv_str(w, "name", name);
	jw_obj_end(w);
	jw_free(w);
	return call(r, "removeXattr", &b, NULL);
}

/* {"ops": [{"path", "name", "value", "flags", "ifEtag"}, ...]}: no value is a remove. */
void filer_meta_set_xattrs_body(buf *b, const struct filer_meta_xattr_op *ops, size_t n)
{
	json_w *w = jw_new(b, false);

	jw_obj_begin(w);
	jw_key(w, "ops");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		const struct filer_meta_xattr_op *op = &ops[i];
		jw_obj_begin(w);
		entry_json_kv_bytes(w, "path", op->path);
		jw_kv_str(w, "name", op->name);
		if (op->value) {
			entry_json_base64(w, "value", op->value, op->len);
			if (op->flag != FM_XATTR_ANY)
				jw_kv_str(w, "flags",
					  op->flag == FM_XATTR_CREATE ? "create" : "replace");
		}
		if (op->if_etag)
			jw_kv_str(w, "ifEtag", op->if_etag);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	jw_free(w);
}

/* The "etags" of setXattrs' answer, n of them, into etags; WFS_EIO when malformed. */
static wfs_err xattrs_etags(const buf *resp, size_t n, char (*etags)[17])
{
	char msg[128];
	yajl_val v = json_parse(resp->data ? resp->data : "", resp->len, msg, sizeof(msg));
	yajl_val a = v ? json_get(v, "etags") : NULL;
	wfs_err rc = a && YAJL_IS_ARRAY(a) && a->u.array.len == n ? WFS_OK : WFS_EIO;

	for (size_t i = 0; !rc && i < n; i++) {
		yajl_val s = a->u.array.values[i];
		if (!YAJL_IS_STRING(s) || strlen(s->u.string) != 16)
			rc = WFS_EIO;
		else
			memcpy(etags[i], s->u.string, 17);
	}
	if (v)
		yajl_tree_free(v);
	return rc;
}

/* The "index" of setXattrs' error answer, SIZE_MAX when it names none. */
static size_t xattrs_failed(const buf *err_body, size_t n)
{
	yajl_val v = err_body->len ? json_parse(err_body->data, err_body->len, NULL, 0) : NULL;
	uint64_t i = UINT64_MAX;

	if (v) {
		if (!json_get_u64(v, "index", &i) || i >= n)
			i = UINT64_MAX;
		yajl_tree_free(v);
	}
	return i == UINT64_MAX ? SIZE_MAX : (size_t)i;
}

wfs_err filer_meta_set_xattrs_if(filer_rpc *r, const struct filer_meta_xattr_op *ops, size_t n,
				 size_t *failed, char (*etags)[17])
{
	buf b, resp, err_body;
	wfs_err rc;

	if (failed)
		*failed = SIZE_MAX;
	if (!n || n > API_XATTR_OPS_MAX)
		return WFS_EINVAL;
	buf_init(&b);
	buf_init(&resp);
	buf_init(&err_body);
	filer_meta_set_xattrs_body(&b, ops, n);
	rc = filer_rpc_call_err(r, "setXattrs", b.data, b.len, &resp, &err_body);
	if (!rc && etags)
		rc = xattrs_etags(&resp, n, etags);
	else if (rc && failed)
		*failed = xattrs_failed(&err_body, n);
	buf_free(&b);
	buf_free(&resp);
	buf_free(&err_body);
	return rc;
}
