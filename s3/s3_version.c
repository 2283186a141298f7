/*
 * Bucket versioning: Put/GetBucketVersioning, and what writes, deletes and
 * reads of objects do in a bucket that has it (docs/s3-gateway.md).
 *
 * DESIGN: the current version of a key stays the plain file
 * /buckets/<b>/<key> (<key>/.s3~object while longer keys make <key> a
 * directory, s3_keypath.h), so the mount and the filer API keep seeing
 * objects as files; its version id is the xattr s3.version-id ("null" when
 * absent: a write while versioning was off or suspended, or one made through
 * the mount). Older versions and delete markers are files of
 * /buckets/<b>/.versions/<key>/, named so that a listing is the history
 * newest first: a real version by its id (16 hex digits of 2^64-1 minus the
 * write time in ns, 8 random), a null one by such a name made from its mtime.
 * Every change of a key's history is one filer transaction: a write moves
 * the file it replaces into .versions (create's "moves", guarded by the etag
 * read just before; a race re-reads and tries again), a delete writes the
 * marker and moves the current file in the same create, deleting the
 * current version by id promotes the newest older one with a rename guarded
 * by the current etag. When there is no current file, the newest file of
 * .versions is the latest version (a delete marker, normally).
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "client/filer_meta.h"
#include "log.h"
#include "s3/s3_int.h"
#include "s3/s3_keypath.h"
#include "s3/s3_meta.h"
#include "util.h"

#define X_VERSIONING    "s3.versioning"
#define X_VERSION_ID    "s3.version-id"
#define X_DELETE_MARKER "s3.delete-marker"
#define RACE_TRIES      8 /* re-reads of a key whose version changed under a write */

/* ---- version ids ---- */

static void version_name(int64_t ns, char out[S3_VERSION_ID_SIZE])
{
	uint32_t rnd = 0;
	if (RAND_bytes((unsigned char *)&rnd, sizeof(rnd)) != 1)
		rnd = (uint32_t)time_now_ns();
	snprintf(out, S3_VERSION_ID_SIZE, "%016" PRIx64 "%08" PRIx32, UINT64_MAX - (uint64_t)ns,
		 rnd);
}

bool s3_version_id_ok(const char *id)
{
	if (!strcmp(id, "null"))
		return true;
	if (strlen(id) != S3_VERSION_ID_SIZE - 1)
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

void s3_version_of(const struct filer_entry *e, char out[S3_VERSION_ID_SIZE])
{
	const struct filer_xattr *x = filer_entry_xattr_get(e, X_VERSION_ID);
	if (x && x->value_len == S3_VERSION_ID_SIZE - 1)
		memcpy(out, x->value, x->value_len), out[x->value_len] = '\0';
	else
		strcpy(out, "null");
}

bool s3_is_delete_marker(const struct filer_entry *e)
{
	return filer_entry_xattr_get(e, X_DELETE_MARKER) != NULL;
}

char *s3_versions_dir(const char *bucket, const char *key)
{
	char *rel = s3_keypath_encode(key), *dir;
	dir = xasprintf(S3_BUCKETS_DIR "/%s/" S3_VERSIONS_NAME "/%s", bucket, rel);
	free(rel);
	return dir;
}

/* ---- the bucket's state ---- */

enum s3_versioning s3_versioning_in(const struct filer_entry *bucket)
{
	const struct filer_xattr *x = filer_entry_xattr_get(bucket, X_VERSIONING);
	if (!x)
		return S3_UNVERSIONED;
	return x->value_len == 7 && !memcmp(x->value, "Enabled", 7) ? S3_VERSIONING_ENABLED
								    : S3_VERSIONING_SUSPENDED;
}

bool s3_versioning_of(struct s3_req *r, enum s3_versioning *v)
{
	struct filer_entry *b = s3_bucket_entry(r);
	if (!b)
		return false;
	*v = s3_versioning_in(b);
	filer_entry_free(b);
	return true;
}

void s3_get_versioning(struct s3_req *r)
{
	enum s3_versioning v;
	xml_w *w;
	if (!s3_versioning_of(r, &v))
		return;
	w = xml_w_new(&r->body);
	xml_open_s3(w, "VersioningConfiguration");
	if (v != S3_UNVERSIONED)
		xml_elem(w, "Status", v == S3_VERSIONING_ENABLED ? "Enabled" : "Suspended");
	s3_xml_ok(r, w);
}

void s3_put_versioning(struct s3_req *r)
{
	struct xml_node *root = NULL;
	struct filer_entry *b = NULL;
	const char *st, *mfa;
	char msg[128];
	buf doc = BUF_INIT;

	if (xml_parse(r->in.data ? r->in.data : "", r->in.len, NULL, &root, msg, sizeof(msg)) ||
	    strcmp(root->name, "VersioningConfiguration")) {
		s3_error(r, S3_MALFORMED_XML, "The XML you provided was not well-formed");
	} else if (!(st = xml_child_text(root, "Status")) ||
		   (strcmp(st, "Enabled") && strcmp(st, "Suspended"))) {
		s3_error(r, S3_MALFORMED_XML, "Status must be Enabled or Suspended");
	} else if ((mfa = xml_child_text(root, "MfaDelete")) && strcmp(mfa, "Disabled")) {
		s3_error(r, S3_INVALID_ARGUMENT, "MFA delete is not supported here");
	} else if (!strcmp(st, "Suspended") && (b = s3_bucket_entry(r)) && s3_lock_enabled(b)) {
		s3_error(r, S3_INVALID_BUCKET_STATE,
			 "An Object Lock configuration is present on this bucket, so the "
			 "versioning state cannot be changed.");
	} else if (b || !strcmp(st, "Enabled")) {
		buf_append(&doc, st, strlen(st));
		s3_bucket_config_set(r, X_VERSIONING, &doc, "storing the versioning state");
	}
	filer_entry_free(b);
	buf_free(&doc);
	xml_free(root);
}

/* ---- finding versions ---- */

/* Whether a file of a key's version directory is the one looked for. */
typedef bool (*version_match)(const struct filer_entry *e, const void *arg);

struct scan {
	version_match match;
	const void *arg;
	struct filer_entry *found;
};

static bool scan_entry(const struct filer_entry *e, void *arg)
{
	struct scan *sc = arg;
	if (S_ISREG(e->attr.mode) && sc->match(e, sc->arg))
		sc->found = filer_entry_dup(e);
	return !sc->found;
}

/* The first file of vdir (newest first) that match accepts: WFS_OK, WFS_ENOENT or a filer
   error. */
static wfs_err scan_versions(struct s3_gateway *g, const char *vdir, version_match match,
			     const void *arg, struct filer_entry **out)
{
	struct scan sc = {.match = match, .arg = arg};
	wfs_err rc = filer_meta_each(g->filer, vdir, scan_entry, &sc);
	*out = sc.found;
	if (rc)
		return rc == WFS_ENOTDIR ? WFS_ENOENT : rc;
	return sc.found ? WFS_OK : WFS_ENOENT;
}

static bool any_version(const struct filer_entry *e, const void *arg)
{
	(void)e;
	(void)arg;
	return true;
}

static bool null_version(const struct filer_entry *e, const void *arg)
{
	char vid[S3_VERSION_ID_SIZE];
	(void)arg;
	s3_version_of(e, vid);
	return !strcmp(vid, "null");
}

/* The newest file of vdir: the key's latest noncurrent version or marker. */
static wfs_err newest_version(struct s3_gateway *g, const char *vdir, struct filer_entry **out)
{
	return scan_versions(g, vdir, any_version, NULL, out);
}

/* The file of vdir holding version id (a "null" one is searched for). */
static wfs_err find_version(struct s3_gateway *g, const char *vdir, const char *id,
			    struct filer_entry **out)
{
	char *p;
	wfs_err rc;
	if (!strcmp(id, "null"))
		return scan_versions(g, vdir, null_version, NULL, out);
	p = xasprintf("%s/%s", vdir, id);
	rc = filer_meta_lookup(g->filer, p, out);
	free(p);
	if (!rc && !S_ISREG((*out)->attr.mode))
		rc = WFS_ENOENT;
	if (rc) {
		filer_entry_free(*out);
		*out = NULL;
	}
	return rc == WFS_ENOTDIR ? WFS_ENOENT : rc;
}

/* The filer path of a file found in vdir (caller frees). */
static char *in_dir(const char *vdir, const struct filer_entry *e)
{
	return xasprintf("%s/%s", vdir, e->name);
}

/*
 * The current file of the key whose object path is path, with its filer etag:
 * WFS_OK, WFS_ENOENT, WFS_EISDIR (no file where the object would be: a
 * directory made through the mount or the filer API), or a filer error. *at
 * (caller frees; NULL after a filer error) is where the current version is or
 * would be written: path, or path/S3_KEYPATH_SELF when longer keys made path
 * a directory ("a" beside "a/b", s3_keypath.h).
 */
static wfs_err current(struct s3_gateway *g, const char *path, struct filer_entry **e,
		       char etag[17], char **at)
{
	wfs_err rc = filer_meta_lookup_etag(g->filer, path, e, etag);
	*at = NULL;
	if (!rc && S_ISDIR((*e)->attr.mode)) {
		filer_entry_free(*e);
		*e = NULL;
		*at = xasprintf("%s/" S3_KEYPATH_SELF, path);
		rc = filer_meta_lookup_etag(g->filer, *at, e, etag);
	}
	if (rc == WFS_ENOTDIR)
		rc = WFS_ENOENT;
	if (!rc && !S_ISREG((*e)->attr.mode))
		rc = WFS_EISDIR;
	if (rc) {
		filer_entry_free(*e);
		*e = NULL;
	}
	if (rc && rc != WFS_ENOENT && rc != WFS_EISDIR) {
		free(*at);
		*at = NULL;
	} else if (!*at) {
		*at = xstrdup(path);
	}
	return rc;
}

wfs_err s3_version_read(struct s3_gateway *g, const char *bucket, const char *key, const char *id,
			struct filer_entry **out)
{
	struct filer_entry *e = NULL;
	char etag[17], vid[S3_VERSION_ID_SIZE], *vdir, *at = NULL;
	char *path = s3_object_path(bucket, key);
	wfs_err rc = path ? current(g, path, &e, etag, &at) : WFS_ENOENT;

	free(at);
	free(path);
	*out = NULL;
	if (!rc) {
		s3_version_of(e, vid);
		if (!strcmp(vid, id)) {
			*out = e;
			return WFS_OK;
		}
		filer_entry_free(e);
	} else if (rc != WFS_ENOENT && rc != WFS_EISDIR) {
		return rc;
	}
	vdir = s3_versions_dir(bucket, key);
	rc = find_version(g, vdir, id, out);
	free(vdir);
	return rc;
}

struct filer_entry *s3_version_target(struct s3_req *r, char **path)
{
	const char *id = http_req_query(r->req, "versionId");
	struct filer_entry *e = NULL;
	char *p;
	wfs_err rc;

	*path = NULL;
	if (id && !s3_version_id_ok(id)) {
		s3_error(r, S3_INVALID_ARGUMENT, "Invalid version id specified");
		return NULL;
	}
	if (id) {
		rc = s3_version_read(r->g, r->bucket, r->key, id, &e);
	} else {
		p = s3_object_path(r->bucket, r->key);
		rc = p ? filer_meta_lookup(r->g->filer, p, &e) : WFS_ENOENT;
		if (p)
			rc = s3_object_inside(r->g, &p, &e, rc); /* "a" beside "a/b" */
		free(p);
		if (!rc && !S_ISREG(e->attr.mode))
			rc = WFS_ENOENT;
	}
	if (!rc && s3_is_delete_marker(e)) {
		s3_version_headers(r, e);
		s3_error(r, S3_METHOD_NOT_ALLOWED,
			 "The specified method is not allowed against a delete marker.");
		rc = WFS_EPERM;
	} else if (rc == WFS_ENOENT || rc == WFS_ENOTDIR) {
		if (id)
			s3_error(r, S3_NO_SUCH_VERSION, "The specified version does not exist.");
		else if (s3_bucket_exists(r))
			s3_error(r, S3_NO_SUCH_KEY, "The specified key does not exist.");
	} else if (rc) {
		s3_filer_error(r, rc, "looking the object up");
	}
	if (rc) {
		filer_entry_free(e);
		return NULL;
	}
	if (id)
		s3_header(r, "x-amz-version-id", id);
	*path = xasprintf("%s/%s", e->dir, e->name);
	return e;
}

void s3_version_headers(struct s3_req *r, const struct filer_entry *e)
{
	char vid[S3_VERSION_ID_SIZE];
	s3_version_of(e, vid);
	if (strcmp(vid, "null") || http_req_query(r->req, "versionId"))
		s3_header(r, "x-amz-version-id", vid);
	if (s3_is_delete_marker(e))
		s3_header(r, "x-amz-delete-marker", "true");
}

void s3_version_missing(struct s3_req *r)
{
	struct filer_entry *m = NULL, *b = NULL;
	char *vdir;
	bool versioned =
		!s3_bucket_lookup(r->g, r->bucket, &b) && s3_versioning_in(b) != S3_UNVERSIONED;
	filer_entry_free(b);
	if (!versioned)
		return; /* no history to look at (the lookup is cached: no filer request) */
	vdir = s3_versions_dir(r->bucket, r->key);
	if (!newest_version(r->g, vdir, &m) && s3_is_delete_marker(m))
		s3_version_headers(r, m);
	filer_entry_free(m);
	free(vdir);
}

/* ---- writes ---- */

/* The xattrs of nw plus one (name, value): a new array (caller frees; values borrowed). */
static struct filer_xattr *xattrs_plus(const struct filer_meta_new *nw, const char *name,
				       const char *value)
{
	struct filer_xattr *x = xcalloc(nw->n_xattrs + 1, sizeof(*x));
	size_t n = 0;
	for (size_t i = 0; i < nw->n_xattrs; i++)
		if (strcmp(nw->xattrs[i].name, name))
			x[n++] = nw->xattrs[i];
	x[n].name = (char *)name;
	x[n].value = (uint8_t *)value;
	x[n].value_len = strlen(value);
	return x;
}

/* What a write does to the key's history, planned from the current file. */
struct plan {
	struct filer_meta_move move; /* the current file into .versions */
	bool has_move;
	char *to;             /* the move's target (owned) */
	const char **consume; /* the caller's consumed files plus a replaced null version */
	size_t n_consume;
	struct filer_entry *null_old; /* the noncurrent null version a suspended write replaces */
};

static void plan_free(struct plan *p)
{
	free(p->to);
	free(p->consume);
	filer_entry_free(p->null_old);
	memset(p, 0, sizeof(*p));
}

/*
 * Plans a write of a version with id vid ("null" when suspended) over cur
 * (NULL: no current file; etag its filer etag): the current file moves into
 * vdir unless it is a null version being replaced by another null one; a
 * suspended write also replaces a noncurrent null version.
 */
static wfs_err plan_write(struct s3_gateway *g, struct plan *p, const char *path, const char *vdir,
			  const struct filer_entry *cur, const char *etag, bool null_write,
			  const char *const *consume, size_t n_consume, bool *replace_cur)
{
	char vid[S3_VERSION_ID_SIZE], name[S3_VERSION_ID_SIZE];
	wfs_err rc;

	*replace_cur = false;
	if (cur) {
		s3_version_of(cur, vid);
		if (null_write && !strcmp(vid, "null")) {
			*replace_cur = true;
		} else {
			if (!strcmp(vid, "null"))
				version_name(cur->attr.mtime_ns, name);
			else
				memcpy(name, vid, sizeof(name));
			p->to = xasprintf("%s/%s", vdir, name);
			p->move = (struct filer_meta_move){
				.from = path, .to = p->to, .if_etag = etag};
			p->has_move = true;
		}
	}
	p->consume = xcalloc(n_consume + 1, sizeof(*p->consume));
	for (size_t i = 0; i < n_consume; i++)
		p->consume[p->n_consume++] = consume[i];
	if (null_write) {
		rc = find_version(g, vdir, "null", &p->null_old);
		if (rc && rc != WFS_ENOENT)
			return rc;
	}
	return WFS_OK;
}

/* A write that lost a race with another writer of the key: read again. */
static bool raced(wfs_err rc) { return rc == WFS_EPRECOND || rc == WFS_EEXIST || rc == WFS_ENOENT; }

static void too_busy(struct s3_req *r)
{
	s3_error(r, S3_SERVICE_UNAVAILABLE,
		 "The key is being changed by other writers at the same time; please retry");
}

wfs_err s3_commit_versioned(struct s3_req *r, const char *path, struct filer_meta_new *nw,
			    const struct s3_cond *c, enum s3_versioning v)
{
	struct filer_meta_new w = *nw;
	struct filer_xattr *xs = NULL;
	char vid[S3_VERSION_ID_SIZE] = "null", *vdir;
	size_t bl = strlen(S3_BUCKETS_DIR) + 2 + strlen(r->bucket);
	bool answered = false;
	wfs_err rc = WFS_OK;
	int tries;

	/* path's key (CopyObject: the target), already as a path (s3_keypath.h) */
	vdir = xasprintf(S3_BUCKETS_DIR "/%s/" S3_VERSIONS_NAME "/%s", r->bucket, path + bl);
	if (v == S3_VERSIONING_ENABLED) {
		if (!w.time_ns)
			w.time_ns = (int64_t)time_now_ns();
		version_name(w.time_ns, vid);
		xs = xattrs_plus(nw, X_VERSION_ID, vid);
		w.xattrs = xs;
		w.n_xattrs = nw->n_xattrs + 1;
	}
	w.parents = true; /* the bucket is there (s3_commit_object read it) */
	for (tries = 0; tries < RACE_TRIES; tries++) {
		struct filer_entry *cur = NULL;
		struct plan p = {0};
		char etag[17], *at;
		bool replace, in_way;

		rc = current(r->g, path, &cur, etag, &at);
		if (rc && rc != WFS_ENOENT) {
			free(at);
			break;
		}
		if (!s3_cond_holds(r, cur, c)) {
			filer_entry_free(cur);
			free(at);
			answered = true;
			rc = WFS_EPERM;
			break;
		}
		rc = plan_write(r->g, &p, at, vdir, cur, etag, v != S3_VERSIONING_ENABLED,
				nw->consume, nw->n_consume, &replace);
		filer_entry_free(cur);
		if (!rc) {
			if (p.null_old)
				p.consume[p.n_consume++] = in_dir(vdir, p.null_old);
			w.moves = p.has_move ? &p.move : NULL;
			w.n_moves = p.has_move;
			w.consume = p.consume;
			w.n_consume = p.n_consume;
			w.if_etag = replace ? etag : NULL;
			w.exclusive = !replace;
			rc = filer_meta_create(r->g->filer, at, &w, NULL);
			/* "a/b" while "a" is a file: "a" becomes a/.s3~object in the same step */
			if (rc == WFS_ENOTDIR && !strcmp(at, path) && !w.n_moves && !w.if_etag)
				rc = s3_commit_below(r, at, &w, rc);
			if (p.null_old)
				free((char *)p.consume[p.n_consume - 1]);
		}
		plan_free(&p);
		/* a consumed part gone is a racing CompleteMultipartUpload: no retry; a
		   directory at path or a file above path/.s3~object is a racing writer of a
		   longer key or of a shorter one */
		in_way = strcmp(at, path) ? rc == WFS_ENOTDIR : rc == WFS_EISDIR;
		free(at);
		if (!rc || !((raced(rc) || in_way) && (rc != WFS_ENOENT || !nw->n_consume)))
			break;
	}
	if (!rc && v == S3_VERSIONING_ENABLED)
		s3_header(r, "x-amz-version-id", vid);
	else if (tries == RACE_TRIES)
		too_busy(r);
	else if (rc && !answered)
		s3_commit_error(r, rc, c);
	free(xs);
	free(vdir);
	return rc;
}

/* ---- deletes ---- */

/* Makes the missing directories above path (a file of r's bucket). */
static wfs_err make_parents(struct s3_gateway *g, const char *path)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	struct filer_meta_new d = {.mode = S_IFDIR | 0770, .parents = true};
	wfs_err rc;
	*slash = '\0';
	rc = filer_meta_create(g->filer, dir, &d, NULL);
	free(dir);
	return rc == WFS_EEXIST ? WFS_OK : rc;
}

/*
 * The version at from could not be renamed back to path: a prefix of its
 * key is an object now ("a" while "a/b" comes back; WFS_ENOTDIR). It is
 * written anew at path from its entry, consuming its file (its chunks pass
 * over: nothing is copied), while s3_commit_below moves "a" into
 * a/.s3~object in the same step. A write racing in first wins (exclusive).
 */
static void restore_below(struct s3_req *r, const char *path, const char *from)
{
	const char *consume[1] = {from};
	struct filer_entry *e = NULL;
	struct filer_meta_new nw = {.exclusive = true, .consume = consume, .n_consume = 1};
	if (filer_meta_lookup(r->g->filer, from, &e) || !S_ISREG(e->attr.mode)) {
		filer_entry_free(e);
		return;
	}
	nw.mode = e->attr.mode;
	nw.uid = e->attr.uid;
	nw.gid = e->attr.gid;
	nw.time_ns = e->attr.mtime_ns; /* its LastModified (and a null version's name) */
	nw.mime = e->attr.mime;
	nw.xattrs = e->xattrs;
	nw.n_xattrs = e->n_xattrs;
	if (e->n_chunks) {
		nw.chunks = e->chunks;
		nw.n_chunks = e->n_chunks;
	} else {
		nw.content = e->content;
		nw.content_len = e->content_len;
		nw.has_content = true;
	}
	(void)s3_commit_below(r, path, &nw, WFS_ENOTDIR);
	filer_entry_free(e);
}

/*
 * With no current file, the newest version of the key (unless a delete
 * marker) becomes the current file again: after its marker or the version
 * above it was deleted. A write racing in first wins (noReplace).
 */
static void promote_if_uncovered(struct s3_req *r, const char *path, const char *vdir)
{
	struct filer_entry *n = NULL, *cur = NULL;
	char etag[17], *from, *at = NULL;
	wfs_err rc;
	if (current(r->g, path, &cur, etag, &at) != WFS_ENOENT) {
		filer_entry_free(cur);
		free(at);
		return;
	}
	if (newest_version(r->g, vdir, &n) || s3_is_delete_marker(n)) {
		filer_entry_free(n);
		free(at);
		return;
	}
	/* back where the current version is: a/.s3~object while "a" is a directory */
	from = in_dir(vdir, n);
	rc = make_parents(r->g, at);
	if (!rc)
		rc = filer_meta_rename(r->g->filer, from, at, true, false);
	if (rc == WFS_ENOTDIR)
		restore_below(r, at, from);
	free(from);
	free(at);
	filer_entry_free(n);
}

/*
 * DELETE ?versionId=id: that version goes (WFS_EACCES while Object Lock keeps
 * it); the current one is replaced by the newest older.
 */
static wfs_err delete_version(struct s3_req *r, const char *key, const char *path, const char *vdir,
			      const char *id, struct s3_deleted *out)
{
	wfs_err rc = WFS_OK;
	for (int tries = 0; tries < RACE_TRIES; tries++) {
		struct filer_entry *cur = NULL, *older = NULL, *old = NULL;
		char etag[17], vid[S3_VERSION_ID_SIZE], *p, *at = NULL;

		rc = current(r->g, path, &cur, etag, &at);
		if (rc && rc != WFS_ENOENT && rc != WFS_EISDIR)
			return rc;
		if (cur)
			s3_version_of(cur, vid);
		if (cur && !strcmp(vid, id) && s3_lock_forbids_delete(r, key, cur)) {
			filer_entry_free(cur);
			free(at);
			return WFS_EACCES;
		}
		if (cur && !strcmp(vid, id)) {
			char *moved = NULL;
			rc = newest_version(r->g, vdir, &older);
			if (!rc && !s3_is_delete_marker(older)) {
				moved = in_dir(vdir, older);
				rc = filer_meta_rename_if(r->g->filer, moved, at, etag);
			} else if (!rc || rc == WFS_ENOENT) {
				rc = filer_meta_delete_if(r->g->filer, at, etag);
				if (!rc)
					s3_drop_empty_parents(r->g, r->bucket, at);
			}
			if (!rc && moved)
				s3_drop_empty_parents(r->g, r->bucket, moved);
			free(moved);
			free(at);
			filer_entry_free(older);
			filer_entry_free(cur);
			if (rc == WFS_EPRECOND || rc == WFS_ENOENT)
				continue; /* the current version changed meanwhile */
			return rc;
		}
		filer_entry_free(cur);
		free(at);
		rc = find_version(r->g, vdir, id, &old);
		if (rc == WFS_ENOENT)
			return WFS_OK; /* no such version: nothing to do, as S3 answers */
		if (rc)
			return rc;
		out->marker = s3_is_delete_marker(old);
		if (s3_lock_forbids_delete(r, key, old)) {
			filer_entry_free(old);
			return WFS_EACCES;
		}
		p = in_dir(vdir, old);
		rc = filer_meta_delete(r->g->filer, p, false);
		filer_entry_free(old);
		if (!rc || rc == WFS_ENOENT) {
			promote_if_uncovered(r, path, vdir);
			s3_drop_empty_parents(r->g, r->bucket, p);
			rc = WFS_OK;
		}
		free(p);
		return rc;
	}
	return WFS_EBUSY;
}

/* DELETE without a version: a delete marker becomes the latest version (over the version
   of filer etag if_etag only, when given). */
static wfs_err delete_current(struct s3_req *r, const char *path, const char *vdir,
			      enum s3_versioning v, const char *if_etag, struct s3_deleted *out)
{
	bool suspended = v == S3_VERSIONING_SUSPENDED;
	char name[S3_VERSION_ID_SIZE], *marker = NULL, *at = NULL;
	struct filer_meta_new m = {
		.mode = S_IFREG | 0644, .has_content = true, .parents = true, .exclusive = true};
	struct filer_xattr x[2] = {
		{.name = X_DELETE_MARKER, .value = (uint8_t *)"1", .value_len = 1}};
	wfs_err rc = WFS_OK;

	m.time_ns = (int64_t)time_now_ns();
	version_name(m.time_ns, name);
	snprintf(out->version_id, sizeof(out->version_id), "%s", suspended ? "null" : name);
	m.xattrs = x;
	m.n_xattrs = 1;
	if (!suspended) {
		x[1] = (struct filer_xattr){
			.name = X_VERSION_ID, .value = (uint8_t *)name, .value_len = strlen(name)};
		m.n_xattrs = 2;
	}
	marker = xasprintf("%s/%s", vdir, name);
	for (int tries = 0; tries < RACE_TRIES; tries++) {
		struct filer_entry *cur = NULL;
		struct plan p = {0};
		char etag[17];
		bool replace;
		free(at);
		rc = current(r->g, path, &cur, etag, &at);
		if (rc == WFS_EISDIR)
			rc = WFS_ENOENT; /* no object where it would be: only the marker */
		if (rc && rc != WFS_ENOENT)
			break;
		if (if_etag && (rc || strcmp(etag, if_etag))) {
			filer_entry_free(cur);
			rc = WFS_EPRECOND; /* the version checked is no longer the current one */
			break;
		}
		rc = plan_write(r->g, &p, at, vdir, cur, etag, suspended, NULL, 0, &replace);
		filer_entry_free(cur);
		if (!rc) {
			if (replace) /* a null current version is what the null marker replaces */
				p.consume[p.n_consume++] = at;
			if (p.null_old) {
				p.consume =
					xrealloc(p.consume, (p.n_consume + 1) * sizeof(*p.consume));
				p.consume[p.n_consume++] = in_dir(vdir, p.null_old);
			}
			m.moves = p.has_move ? &p.move : NULL;
			m.n_moves = p.has_move;
			m.consume = p.consume;
			m.n_consume = p.n_consume;
			rc = filer_meta_create(r->g->filer, marker, &m, NULL);
			if (p.null_old)
				free((char *)p.consume[p.n_consume - 1]);
		}
		plan_free(&p);
		if (!rc || !raced(rc))
			break;
		rc = if_etag ? WFS_EPRECOND : WFS_EBUSY; /* the move was over that version only */
		if (if_etag)
			break;
	}
	free(marker);
	if (!rc) {
		out->marker = true;
		s3_drop_empty_parents(r->g, r->bucket, at);
	}
	free(at);
	return rc;
}

wfs_err s3_delete_versioned(struct s3_req *r, const char *key, const char *id, enum s3_versioning v,
			    const char *if_etag, struct s3_deleted *out)
{
	char *path = s3_object_path(r->bucket, key), *vdir;
	wfs_err rc;
	memset(out, 0, sizeof(*out));
	if (!path)
		return WFS_OK; /* no such key can exist */
	vdir = s3_versions_dir(r->bucket, key);
	if (id) {
		snprintf(out->version_id, sizeof(out->version_id), "%s", id);
		rc = delete_version(r, key, path, vdir, id, out);
	} else {
		rc = delete_current(r, path, vdir, v, if_etag, out);
	}
	free(vdir);
	free(path);
	return rc;
}
