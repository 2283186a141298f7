/*
 * Entry JSON writer (see entry_json.h). Key names are camelCase and stable:
 * they are a public interface (docs/filer-events.md).
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "base64.h"
#include "client/entry_json.h"
#include "client/filer_wire.h"
#include "utf8.h"
#include "util.h"

static void kv_text(json_w *w, const char *key, const char *v)
{
	if (!v || !v[0])
		return; /* absent and empty are the same */
	jw_key(w, key);
	jw_str(w, v);
}

static void kv_base64(json_w *w, const char *key, const void *p, size_t n)
{
	buf b = BUF_INIT;
	base64_encode(p, n, &b);
	if (key)
		jw_key(w, key);
	jw_strn(w, b.data ? b.data : "", b.len);
	buf_free(&b);
}

void entry_json_text(json_w *w, const char *key, const char *s)
{
	size_t n = strlen(s);
	jw_key(w, key);
	jw_strn(w, s, n);
	if (!utf8_valid(s, n)) {
		char k64[64];
		snprintf(k64, sizeof(k64), "%sB64", key);
		kv_base64(w, k64, s, n);
	}
}

void entry_json_kv_bytes(json_w *w, const char *key, const char *s)
{
	size_t n = strlen(s);
	char k64[64];

	if (utf8_valid(s, n)) {
		jw_kv_str(w, key, s);
		return;
	}
	snprintf(k64, sizeof(k64), "%sB64", key);
	kv_base64(w, k64, s, n);
}

bool entry_json_get_bytes(yajl_val v, const char *key, size_t max, char **out)
{
	yajl_val s = json_get(v, key), b;
	char k64[64];
	uint8_t *raw = NULL;
	size_t n;

	snprintf(k64, sizeof(k64), "%sB64", key);
	b = json_get(v, k64);
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

void entry_json_write(json_w *w, const struct filer_entry *e, unsigned flags)
{
	const struct filer_attr *a = &e->attr;
	char *full = filer_entry_full_path(e);

	jw_obj_begin(w);
	entry_json_text(w, "fullPath", full);
	entry_json_text(w, "name", e->name);
	jw_kv_bool(w, "isDirectory", S_ISDIR(a->mode));
	jw_kv_u64(w, "mode", a->mode);
	jw_kv_u64(w, "uid", a->uid);
	jw_kv_u64(w, "gid", a->gid);
	jw_kv_u64(w, "size", a->size);
	jw_kv_i64(w, "mtime", a->mtime_ns / 1000000000);
	jw_kv_i64(w, "mtimeNs", a->mtime_ns);
	jw_kv_i64(w, "ctimeNs", a->ctime_ns);
	jw_kv_i64(w, "crtimeNs", a->crtime_ns);
	/* never stored (older entries): the mtime, so a client always sees a time */
	jw_kv_i64(w, "atimeNs", a->atime_ns ? a->atime_ns : a->mtime_ns);
	jw_kv_u64(w, "nlink", a->nlink);
	jw_kv_u64(w, "rdev", a->rdev);
	jw_kv_u64(w, "ttlSec", a->ttl_sec);
	kv_text(w, "mime", a->mime);
	kv_text(w, "collection", a->collection);
	kv_text(w, "replication", a->replication);
	if (a->symlink_target && a->symlink_target[0])
		entry_json_text(w, "symlinkTarget", a->symlink_target);
	if (a->hard_link_id_len)
		kv_base64(w, "hardLinkId", a->hard_link_id, a->hard_link_id_len);
	if (e->n_xattrs) {
		jw_key(w, "xattrs");
		jw_obj_begin(w);
		for (size_t i = 0; i < e->n_xattrs; i++) {
			jw_str(w, e->xattrs[i].name);
			kv_base64(w, NULL, e->xattrs[i].value, e->xattrs[i].value_len);
		}
		jw_obj_end(w);
	}
	if (e->has_content || e->content_omitted) {
		jw_kv_u64(w, "contentLength", e->content_len);
		if (e->has_content && (flags & ENTRY_JSON_CONTENT))
			kv_base64(w, "content", e->content, e->content_len);
	}
	jw_key(w, "chunks");
	jw_arr_begin(w);
	for (size_t i = 0; i < e->n_chunks; i++) {
		const struct filer_chunk *c = &e->chunks[i];
		jw_obj_begin(w);
		jw_key(w, "fileId");
		jw_str(w, c->fid);
		jw_kv_u64(w, "offset", c->offset);
		jw_kv_u64(w, "size", c->size);
		jw_kv_i64(w, "mtimeNs", c->mtime_ns);
		kv_text(w, "eTag", c->etag);
		if (c->is_manifest)
			jw_kv_bool(w, "isManifest", true);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	free(full);
}

void entry_json(const struct filer_entry *e, unsigned flags, buf *out)
{
	json_w *w = jw_new(out, false);
	entry_json_write(w, e, flags);
	jw_free(w);
}
