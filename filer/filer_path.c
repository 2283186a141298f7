/*
 * Request jobs, path rules, path locks and the store operations every handler
 * shares (find with a virtual root, mkdir -p, the entry JSON). See
 * filer_int.h for the threading and locking rules.
 */
#include "config.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include "client/chunk_io.h"
#include "filer/filer_api_parse.h"
#include "filer/filer_hardlink.h"
#include "client/entry_json.h"
#include "filer/filer_int.h"
#include "filer/gc_queue.h"
#include "filer/namespace.h"
#include "log.h"
#include "util.h"

/* Request headers a handler may need later on a worker. */
static const char *const copied_headers[] = {
	"Accept",        "Range",
	"If-None-Match", "If-Modified-Since",
	"Content-Type",  API_RAW_CONTENT_HEADER,
};

/* ---- jobs ---- */

struct fjob *fjob_new(struct filer *f, http_req *req, const char *path, bool trailing_slash)
{
	struct fjob *j = xcalloc(1, sizeof(*j));
	const char *name, *value;
	size_t n = 0;

	j->f = f;
	j->req = req;
	j->method = http_req_method(req);
	j->path = xstrdup(path);
	j->trailing_slash = trailing_slash;
	if (filer_path_split(path, &j->dir, &j->name) != WFS_OK) {
		/* the router validated path already; keep the job usable anyway */
		j->dir = xstrdup("/");
		j->name = xstrdup("");
	}
	while (http_req_query_at(req, n, &name, &value))
		n++;
	j->q = xcalloc(n ? n : 1, sizeof(*j->q));
	for (size_t i = 0; i < n && http_req_query_at(req, i, &name, &value); i++) {
		j->q[i].name = xstrdup(name);
		j->q[i].value = xstrdup(value ? value : "");
	}
	j->nq = n;
	j->h = xcalloc(ARRAY_LEN(copied_headers) + FILER_TAGS_MAX, sizeof(*j->h));
	for (size_t i = 0; i < ARRAY_LEN(copied_headers); i++) {
		const char *v = http_req_header(req, copied_headers[i]);
		if (!v)
			continue;
		j->h[j->nh].name = xstrdup(copied_headers[i]);
		j->h[j->nh].value = xstrdup(v);
		j->nh++;
	}
	/* tags: "Seaweed-" headers (filer_tag.c); more than FILER_TAGS_MAX are refused there */
	for (size_t i = 0, ntags = 0; http_req_header_at(req, i, &name, &value); i++) {
		if (strncasecmp(name, "Seaweed-", 8))
			continue;
		if (++ntags > FILER_TAGS_MAX) {
			j->too_many_tags = true;
			break;
		}
		j->h[j->nh].name = xstrdup(name);
		j->h[j->nh].value = xstrdup(value ? value : "");
		j->nh++;
	}
	fjob_signature(req, &j->signature); /* the router refused a malformed one */
	j->status = 200;
	return j;
}

bool filer_signature_parse(const char *s, int32_t *sig)
{
	int64_t n;
	if (!parse_i64(s, &n) || n == 0 || n < INT32_MIN || n > INT32_MAX)
		return false;
	*sig = (int32_t)n;
	return true;
}

bool fjob_signature(http_req *req, int32_t *sig)
{
	const char *v = http_req_header(req, FILER_SIGNATURE_HEADER);
	*sig = 0;
	return !v || filer_signature_parse(v, sig);
}

void fjob_free(struct fjob *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->nq; i++) {
		free(j->q[i].name);
		free(j->q[i].value);
	}
	for (size_t i = 0; i < j->nh; i++) {
		free(j->h[i].name);
		free(j->h[i].value);
	}
	for (size_t i = 0; i < j->nrh; i++) {
		free(j->rh[i].name);
		free(j->rh[i].value);
	}
	free(j->q);
	free(j->h);
	free(j->ctype_owned);
	free(j->path);
	free(j->dir);
	free(j->name);
	buf_free(&j->body);
	free(j);
}

const char *fjob_query(const struct fjob *j, const char *name)
{
	for (size_t i = 0; i < j->nq; i++)
		if (!strcmp(j->q[i].name, name))
			return j->q[i].value;
	return NULL;
}

const char *fjob_header(const struct fjob *j, const char *name)
{
	for (size_t i = 0; i < j->nh; i++)
		if (!strcasecmp(j->h[i].name, name))
			return j->h[i].value;
	return NULL;
}

bool fjob_query_bool(struct fjob *j, const char *name, bool def, bool *out)
{
	const char *v = fjob_query(j, name);
	*out = def;
	if (!v)
		return true;
	if (!*v) {
		*out = true; /* "?recursive" alone means true */
		return true;
	}
	if (!parse_bool(v, out)) {
		fjob_error(j, 400, "invalid boolean %s=\"%s\"", name, v);
		return false;
	}
	return true;
}

void fjob_verror(struct fjob *j, int status, const char *code, const char *fmt, va_list ap)
{
	char msg[512];
	json_w *w;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	buf_reset(&j->body);
	w = jw_new(&j->body, false);
	jw_obj_begin(w);
	jw_kv_str(w, "error", msg);
	if (code)
		jw_kv_str(w, "code", code);
	jw_obj_end(w);
	jw_free(w);
	j->status = status;
	j->ctype = "application/json";
}

void fjob_error(struct fjob *j, int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fjob_verror(j, status, NULL, fmt, ap);
	va_end(ap);
}

/* The REST API's status for err (SeaweedFS's: a peer that times out is 503 too). */
static int rest_status(wfs_err err)
{
	int status = wfs_err_http_status(err);
	if (err == WFS_EUNAVAIL || err == WFS_ETIMEDOUT)
		status = 503;
	return status < 400 ? 500 : status;
}

void fjob_store_error(struct fjob *j, wfs_err err, const char *what)
{
	fjob_error(j, rest_status(err), "%s: %s", what, wfs_strerror(err));
}

void fjob_ns_error(struct fjob *j, const struct ns_result *res)
{
	fjob_error(j, rest_status(res->err), "%s", res->msg);
}

void fjob_resp_header(struct fjob *j, const char *name, const char *value)
{
	if (j->nrh >= FILER_JOB_HEADERS)
		return;
	j->rh[j->nrh].name = xstrdup(name);
	j->rh[j->nrh].value = xstrdup(value);
	j->nrh++;
}

void fjob_respond(struct fjob *j)
{
	if (j->on_loop) {
		fjob_fn fn = j->on_loop;
		j->on_loop = NULL;
		fn(j);
		return;
	}
	for (size_t i = 0; i < j->nrh; i++)
		http_resp_header(j->req, j->rh[i].name, j->rh[i].value);
	if (j->body.len || j->ctype)
		http_resp_header(j->req, "Content-Type", j->ctype ? j->ctype : "application/json");
	http_resp_send(j->req, j->status, j->body.data ? j->body.data : "", j->body.len);
	fjob_free(j);
}

static void job_done(http_req *req, void *arg)
{
	(void)req;
	fjob_respond(arg);
}

void fjob_respond_deferred(struct fjob *j) { http_req_defer(j->req, job_done, j); }

static void job_run(void *arg)
{
	struct fjob *j = arg;
	j->run(j);
	http_req_defer(j->req, job_done, j);
}

void fjob_submit(struct fjob *j)
{
	if (!filer_submit(j->f, false, job_run, j)) {
		http_resp_error(j->req, 503, "filer is stopping");
		fjob_free(j);
	}
}

/* ---- paths ---- */

wfs_err filer_path_normalize(const char *raw, char **out, bool *trailing)
{
	size_t n = strlen(raw);
	char *p, *dir = NULL, *name = NULL;
	size_t o = 0;
	wfs_err err;

	*out = NULL;
	*trailing = false;
	if (n == 0 || raw[0] != '/' || n > FILER_PATH_MAX)
		return WFS_EINVAL;
	p = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++) {
		if (raw[i] == '/' && o > 0 && p[o - 1] == '/')
			continue;
		p[o++] = raw[i];
	}
	p[o] = '\0';
	if (o > 1 && p[o - 1] == '/') {
		p[--o] = '\0';
		*trailing = true;
	} else if (o == 1) {
		*trailing = true;
	}
	err = filer_path_split(p, &dir, &name);
	free(dir);
	free(name);
	if (err) {
		free(p);
		return WFS_EINVAL;
	}
	*out = p;
	return WFS_OK;
}

char *filer_path_join(const char *dir, const char *name)
{
	if (!*name)
		return xstrdup(dir);
	if (!strcmp(dir, "/"))
		return xasprintf("/%s", name);
	return xasprintf("%s/%s", dir, name);
}

/* ---- common store operations ---- */

bool filer_entry_is_dir(const struct filer_entry *e) { return S_ISDIR(e->attr.mode); }

struct filer_entry *filer_dir_entry_new(const char *dir, const char *name, uint32_t mode)
{
	struct filer_entry *e = filer_entry_new(dir, name);
	int64_t now = (int64_t)time_now_ns();
	e->attr.mode = S_IFDIR | (mode & 07777);
	e->attr.mtime_ns = e->attr.ctime_ns = e->attr.crtime_ns = now;
	e->attr.nlink = 2; /* "." and its name in the parent; no subdirectory yet */
	return e;
}

/* ns_walk's step of count_subdirs. */
static wfs_err count_dir(void *ctx, struct filer_tx *tx, struct filer_entry *c)
{
	(void)tx;
	*(uint32_t *)ctx += filer_entry_is_dir(c);
	return WFS_OK;
}

wfs_err filer_dir_links(struct filer *f, struct filer_tx *tx, struct filer_evs *evs,
			const char *dir, int delta)
{
	struct filer_entry *old = NULL, *e = NULL;
	char *pdir = NULL, *pname = NULL;
	uint32_t subdirs = 0;
	wfs_err err = filer_path_split(dir, &pdir, &pname);

	/* inside tx the find locks the row (store.h), so concurrent changes add up */
	if (!err)
		err = filer_store_find(f->store, tx, pdir, pname, &old);
	if (err == WFS_ENOENT && !*pname)
		err = WFS_OK; /* the root, not stored: not counted (nlink 1) */
	if (err || !old || !filer_entry_is_dir(old))
		goto out;
	e = filer_entry_dup(old);
	if (old->attr.nlink < 2) {
		/* stored before directories counted their links: count now, the change included */
		err = ns_walk(f, tx, dir, count_dir, &subdirs, false);
		if (err)
			goto out;
		e->attr.nlink = 2 + subdirs;
	} else if (delta < 0 && old->attr.nlink + delta < 2) {
		e->attr.nlink = 2; /* never below an empty directory's */
	} else {
		e->attr.nlink = (uint32_t)((int64_t)old->attr.nlink + delta);
	}
	if (e->attr.nlink == old->attr.nlink)
		goto out;
	e->attr.ctime_ns = (int64_t)time_now_ns(); /* a change of the inode, as ext4's */
	err = filer_store_update(f->store, tx, e);
	if (!err)
		filer_evs_add(evs, old, e);
out:
	filer_entry_free(old);
	filer_entry_free(e);
	free(pdir);
	free(pname);
	return err;
}

wfs_err filer_find(struct filer *f, struct filer_tx *tx, const char *dir, const char *name,
		   struct filer_entry **out)
{
	wfs_err err = filer_store_find(f->store, tx, dir, name, out);
	if (err == WFS_ENOENT && !*name && !strcmp(dir, "/")) {
		*out = filer_dir_entry_new("/", "", 0755);
		(*out)->attr.inode = FILER_ROOT_INODE;
		(*out)->attr.nlink = 1; /* not stored, so not counted: find(1) reads 1 as unknown */
		err = WFS_OK;
	}
	return err;
}

wfs_err filer_mkdir_p(struct filer *f, struct filer_tx *tx, struct filer_evs *evs, const char *dir)
{
	struct filer_entry *e = NULL;
	char *pdir = NULL, *pname = NULL;
	wfs_err err;

	if (!strcmp(dir, "/"))
		return WFS_OK;
	err = filer_path_split(dir, &pdir, &pname);
	if (err)
		goto out;
	err = filer_find(f, tx, pdir, pname, &e);
	if (!err) {
		if (!filer_entry_is_dir(e))
			err = WFS_EPERM;
		goto out;
	}
	if (err != WFS_ENOENT)
		goto out;
	err = filer_mkdir_p(f, tx, evs, pdir);
	if (err)
		goto out;
	e = filer_dir_entry_new(pdir, pname, 0770);
	err = filer_store_insert(f->store, tx, e);
	if (!err) {
		filer_evs_add(evs, NULL, e);
		err = filer_dir_links(f, tx, evs, pdir, 1);
	} else if (err == WFS_EEXIST) {
		/* another transaction made it first (PostgreSQL runs writers in parallel) */
		filer_entry_free(e);
		e = NULL;
		err = filer_find(f, tx, pdir, pname, &e);
		if (!err && !filer_entry_is_dir(e))
			err = WFS_EPERM;
	}
out:
	filer_entry_free(e);
	free(pdir);
	free(pname);
	return err;
}

/* ---- life cycle hooks ---- */

wfs_err filer_gc_enqueue(struct filer *f, struct filer_tx *tx, const struct filer_chunk *c,
			 size_t n)
{
	struct filer_chunk *leaves = NULL;
	size_t nleaves = 0, nf = 0;
	const char **fids;
	bool manifests = false;
	wfs_err err = WFS_OK;

	if (!n)
		return WFS_OK;
	for (size_t i = 0; i < n; i++)
		manifests |= c[i].is_manifest;
	if (manifests) {
		err = chunk_resolve_manifests(f->bc, c, n, &leaves, &nleaves);
		if (err) {
			/* the members stay on the volumes; the manifests themselves still go */
			log_warn("could not resolve manifests of freed chunks: %s",
				 wfs_strerror(err));
			leaves = NULL;
			nleaves = 0;
		}
	}
	fids = xcalloc(n + nleaves, sizeof(*fids));
	for (size_t i = 0; i < n; i++)
		fids[nf++] = c[i].fid;
	for (size_t i = 0; i < nleaves; i++)
		fids[nf++] = leaves[i].fid;
	err = WFS_OK;
	for (size_t off = 0; !err && off < nf; off += FILER_GC_BATCH_MAX)
		err = filer_store_gc_enqueue(f->store, tx, fids + off,
					     MIN((size_t)FILER_GC_BATCH_MAX, nf - off), 0);
	free(fids);
	filer_chunks_free(leaves, nleaves);
	return err;
}

void filer_gc_kick(struct filer *f) { gc_queue_kick(f->gc); }

void filer_free_chunks(struct filer *f, struct filer_chunk *c, size_t n)
{
	wfs_err err;
	if (n) {
		err = filer_gc_enqueue(f, NULL, c, n);
		if (err)
			log_warn("could not queue %zu unreferenced chunks (first %s): %s", n,
				 c[0].fid, wfs_strerror(err));
		filer_gc_kick(f);
	}
	filer_chunks_free(c, n);
}

void filer_evs_add(struct filer_evs *evs, const struct filer_entry *old_e,
		   const struct filer_entry *new_e)
{
	if (evs->n == evs->cap) {
		evs->cap = evs->cap ? evs->cap * 2 : 4;
		evs->v = xrealloc(evs->v, evs->cap * sizeof(*evs->v));
	}
	evs->v[evs->n].old_e = old_e ? filer_entry_dup(old_e) : NULL;
	evs->v[evs->n].new_e = new_e ? filer_entry_dup(new_e) : NULL;
	evs->n++;
}

void filer_evs_clear(struct filer_evs *evs)
{
	for (size_t i = 0; i < evs->n; i++) {
		filer_entry_free(evs->v[i].old_e);
		filer_entry_free(evs->v[i].new_e);
	}
	free(evs->v);
	evs->v = NULL;
	evs->n = evs->cap = 0;
}

void filer_evs_add_resolved(struct filer *f, struct filer_tx *tx, struct filer_evs *evs,
			    const struct filer_entry *old_e, const struct filer_entry *new_e)
{
	struct filer_entry *e[2] = {NULL, NULL};
	const struct filer_entry *in[2] = {old_e, new_e};
	for (int i = 0; i < 2; i++) {
		wfs_err err;
		if (!in[i] || !filer_hardlink_is_linked(in[i]))
			continue;
		e[i] = filer_entry_dup(in[i]);
		err = filer_hardlink_resolve(f->store, tx, &e[i]);
		if (err)
			log_warn("rename event of %s/%s: hard-link record: %s", in[i]->dir,
				 in[i]->name, wfs_strerror(err));
	}
	filer_evs_add(evs, e[0] ? e[0] : old_e, e[1] ? e[1] : new_e);
	filer_entry_free(e[0]);
	filer_entry_free(e[1]);
}

/* ---- JSON ---- */

static void jw_time(json_w *w, const char *key, int64_t ns)
{
	char s[64];
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	long frac = (long)(ns % 1000000000);
	if (frac < 0) {
		frac += 1000000000;
		t--;
	}
	gmtime_r(&t, &tm);
	snprintf(s, sizeof(s), "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
	jw_kv_str(w, key, s);
}

void filer_entry_json(json_w *w, const struct filer_entry *e)
{
	char *full = filer_entry_full_path(e);
	jw_obj_begin(w);
	entry_json_text(w, "FullPath", full);
	jw_time(w, "Mtime", e->attr.mtime_ns);
	jw_time(w, "Crtime", e->attr.crtime_ns);
	jw_kv_u64(w, "Mode", e->attr.mode);
	jw_kv_u64(w, "Uid", e->attr.uid);
	jw_kv_u64(w, "Gid", e->attr.gid);
	jw_kv_str(w, "Mime", e->attr.mime ? e->attr.mime : "");
	jw_kv_u64(w, "TtlSec", e->attr.ttl_sec);
	jw_kv_str(w, "Collection", e->attr.collection ? e->attr.collection : "");
	jw_kv_str(w, "Replication", e->attr.replication ? e->attr.replication : "");
	jw_kv_str(w, "SymlinkTarget", e->attr.symlink_target ? e->attr.symlink_target : "");
	jw_kv_u64(w, "FileSize", filer_entry_is_dir(e) ? 0 : e->attr.size);
	jw_kv_u64(w, "Nlink", e->attr.nlink);
	jw_kv_bool(w, "IsDirectory", filer_entry_is_dir(e));
	jw_kv_bool(w, "Inline", e->has_content);
	jw_key(w, "chunks");
	jw_arr_begin(w);
	for (size_t i = 0; i < e->n_chunks; i++) {
		const struct filer_chunk *c = &e->chunks[i];
		jw_obj_begin(w);
		jw_kv_str(w, "file_id", c->fid);
		jw_kv_u64(w, "offset", c->offset);
		jw_kv_u64(w, "size", c->size);
		jw_kv_i64(w, "modified_ts_ns", c->mtime_ns);
		jw_kv_str(w, "e_tag", c->etag ? c->etag : "");
		if (c->is_manifest)
			jw_kv_bool(w, "is_chunk_manifest", true);
		if (c->has_cipher_key)
			entry_json_base64(w, "cipher_key", c->cipher_key, FILER_CHUNK_KEY_LEN);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	if (e->n_xattrs) {
		jw_key(w, "Extended");
		jw_obj_begin(w);
		for (size_t i = 0; i < e->n_xattrs; i++) {
			jw_key(w, e->xattrs[i].name);
			jw_strn(w, (const char *)e->xattrs[i].value, e->xattrs[i].value_len);
		}
		jw_obj_end(w);
	}
	jw_obj_end(w);
	free(full);
}

wfs_err filer_write_target(struct fjob *j, struct filer_tx *tx, struct filer_evs *evs,
			   const char *dir, const char *name, bool make_parents,
			   struct filer_entry **old)
{
	char *full = filer_path_join(dir, name);
	wfs_err err = make_parents ? filer_mkdir_p(j->f, tx, evs, dir) : WFS_OK;

	*old = NULL;
	if (err == WFS_EPERM) {
		fjob_error(j, 409, "a parent of %s is a file", full);
		goto out;
	}
	if (err) {
		fjob_store_error(j, err, "creating parent directories");
		goto out;
	}
	err = filer_store_find(j->f->store, tx, dir, name, old);
	if (err == WFS_ENOENT) {
		err = WFS_OK;
	} else if (err) {
		fjob_store_error(j, err, "lookup");
	} else if (filer_entry_is_dir(*old)) {
		err = WFS_EPERM;
		fjob_error(j, 409, "%s is a directory", full);
	}
out:
	free(full);
	return err;
}
