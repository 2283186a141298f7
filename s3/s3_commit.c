/*
 * Making an object visible: the filer create shared by PutObject,
 * CompleteMultipartUpload and CopyObject, with S3's conditional writes
 * (If-None-Match: * or ETags, If-Match) and the freeing of stored data that no
 * entry came to reference.
 *
 * DESIGN: conditions are the filer's, so they hold against every writer,
 * whichever gateway it went through: If-None-Match: * is an exclusive create,
 * If-Match looks the object up, compares its ETag, and commits with ifEtag on
 * the entry version it read. If-None-Match with ETags looks it up too and
 * commits with ifEtag on what it read, or exclusively when there was none: a
 * writer that came between is ConditionalRequestConflict (409), as S3 answers
 * a conflicting operation, since the condition may still hold over the new
 * object. The parent directories of a key are made only
 * when the first create says one is missing (and the bucket is there), so a
 * key in an existing directory costs one filer request.
 */
#include "config.h"
#include <errno.h>
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

bool s3_cond_read(struct s3_req *r, struct s3_cond *c)
{
	const char *inm = http_req_header(r->req, "If-None-Match");
	const char *im = http_req_header(r->req, "If-Match");
	memset(c, 0, sizeof(*c));
	if (inm && im) {
		s3_error(r, S3_NOT_IMPLEMENTED, "If-Match and If-None-Match exclude each other");
		return false;
	}
	if ((inm && !inm[strspn(inm, " ,")]) || (im && !im[strspn(im, " ,")])) {
		s3_error(r, S3_INVALID_ARGUMENT, "An If-Match or If-None-Match header is empty");
		return false;
	}
	c->if_absent = inm && !strcmp(inm, "*");
	c->if_none_match = inm && !c->if_absent ? xstrdup(inm) : NULL;
	c->if_match = im ? xstrdup(im) : NULL;
	return true;
}

void s3_cond_free(struct s3_cond *c)
{
	free(c->if_match);
	free(c->if_none_match);
	c->if_match = c->if_none_match = NULL;
}

static void precondition_failed(struct s3_req *r)
{
	s3_error(r, S3_PRECONDITION_FAILED,
		 "At least one of the pre-conditions you specified did not hold");
}

bool s3_cond_holds(struct s3_req *r, const struct filer_entry *cur, const struct s3_cond *c)
{
	char etag[S3_ETAG_MAX];
	if (!c)
		return true;
	if (c->if_absent && cur) {
		precondition_failed(r);
		return false;
	}
	if (c->if_match && !cur) {
		s3_error(r, S3_NO_SUCH_KEY, "The specified key does not exist.");
		return false;
	}
	if (c->if_match || (c->if_none_match && cur))
		s3_etag(cur, etag);
	if ((c->if_match && !s3_etag_listed(c->if_match, etag)) ||
	    (c->if_none_match && cur && s3_etag_listed(c->if_none_match, etag))) {
		precondition_failed(r);
		return false;
	}
	return true;
}

bool s3_cond_check(struct s3_req *r, const char *path, struct s3_cond *c)
{
	struct filer_entry *e = NULL;
	bool ok = false;
	wfs_err rc;

	c->filer_etag[0] = '\0';
	c->none_there = false;
	if (!c->if_match && !c->if_none_match)
		return true;
	rc = s3_object_lookup_etag(r->g, path, &e, c->filer_etag);
	if (rc)
		c->filer_etag[0] = '\0';
	c->none_there = rc == WFS_ENOENT || rc == WFS_ENOTDIR;
	if (rc && rc != WFS_ENOENT && rc != WFS_ENOTDIR) {
		s3_filer_error(r, rc, "looking the object up");
	} else {
		if (!rc && !S_ISREG(e->attr.mode)) { /* a directory: the create refuses it */
			filer_entry_free(e);
			e = NULL;
			c->filer_etag[0] = '\0';
		}
		ok = s3_cond_holds(r, rc ? NULL : e, c);
	}
	filer_entry_free(e);
	return ok;
}

void s3_commit_error(struct s3_req *r, wfs_err rc, const struct s3_cond *c)
{
	if (c && c->if_none_match && (rc == WFS_EPRECOND || (rc == WFS_EEXIST && c->none_there)))
		s3_error(r, S3_COND_CONFLICT,
			 "The conditional request cannot succeed due to a conflicting operation "
			 "against this resource.");
	else if ((rc == WFS_EEXIST && c && c->if_absent) || rc == WFS_EPRECOND)
		precondition_failed(r);
	else if (rc == WFS_EEXIST || rc == WFS_EISDIR)
		s3_error(r, S3_INVALID_REQUEST,
			 "The key names a directory of the bucket that cannot hold its object "
			 "(one made through the mount or the filer API)");
	else if (rc == WFS_ENOTDIR)
		s3_error(r, S3_INVALID_REQUEST,
			 "A prefix of the key is a file that cannot hold other keys "
			 "(one made through the mount or the filer API)");
	else if (rc == WFS_ENOENT && c && c->if_match)
		s3_error(r, S3_NO_SUCH_KEY, "The specified key does not exist.");
	else
		s3_filer_error(r, rc, "committing the object");
}

/*
 * A create at path was refused (rc) because path is a directory (longer keys
 * are under it): the object is its file S3_KEYPATH_SELF (s3_keypath.h), made
 * under the same conditions. rc when path is no directory.
 */
static wfs_err commit_inside(struct s3_req *r, const char *path, struct filer_meta_new *nw,
			     wfs_err rc)
{
	struct filer_entry *e = NULL;
	char *self;
	if (filer_meta_lookup(r->g->filer, path, &e) || !S_ISDIR(e->attr.mode)) {
		filer_entry_free(e);
		return rc;
	}
	filer_entry_free(e);
	self = xasprintf("%s/" S3_KEYPATH_SELF, path);
	rc = filer_meta_create(r->g->filer, self, nw, NULL);
	free(self);
	return rc;
}

/* Whether a create that moved a file in the way may have lost a race to another one. */
static bool move_raced(wfs_err rc)
{
	return rc == WFS_ENOTDIR || rc == WFS_EPRECOND || rc == WFS_EISDIR || rc == WFS_ENOENT;
}

wfs_err s3_commit_below(struct s3_req *r, const char *path, struct filer_meta_new *nw, wfs_err rc)
{
	size_t bl = strlen(S3_BUCKETS_DIR) + 1 + strlen(r->bucket);
	const struct filer_meta_move *moves = nw->moves;
	size_t n_moves = nw->n_moves;
	bool parents = nw->parents;

	for (int attempt = 0; attempt < 4 && move_raced(rc); attempt++) {
		struct filer_entry *e = NULL;
		struct filer_meta_move mv = {0};
		char etag[17], *anc = NULL, *self = NULL;
		const char *slash;
		/* the first prefix that is not a directory is the file in the way */
		for (slash = strchr(path + bl + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
			wfs_err lr;
			free(anc);
			anc = xstrndup(path, (size_t)(slash - path));
			lr = filer_meta_lookup_etag(r->g->filer, anc, &e, etag);
			if (!lr && S_ISDIR(e->attr.mode)) {
				filer_entry_free(e);
				e = NULL;
				continue;
			}
			break;
		}
		nw->parents = true;
		if (slash && e && S_ISREG(e->attr.mode)) {
			self = xasprintf("%s/" S3_KEYPATH_SELF, anc);
			mv = (struct filer_meta_move){.from = anc, .to = self, .if_etag = etag};
			nw->moves = &mv;
			nw->n_moves = 1;
		}
		/* else another writer moved it meanwhile: the plain create again */
		rc = filer_meta_create(r->g->filer, path, nw, NULL);
		nw->moves = moves;
		nw->n_moves = n_moves;
		nw->parents = parents;
		filer_entry_free(e);
		free(self);
		free(anc);
	}
	return rc;
}

/* s3_commit_object in a bucket without versioning. */
static wfs_err commit_plain(struct s3_req *r, const char *path, struct filer_meta_new *nw,
			    const struct s3_cond *c)
{
	wfs_err rc;
	if (c) {
		nw->exclusive = c->if_absent || (c->if_none_match && c->none_there);
		nw->if_etag = (c->if_match || c->if_none_match) && c->filer_etag[0] ? c->filer_etag
										     : NULL;
	}
	rc = filer_meta_create(r->g->filer, path, nw, NULL);
	if (rc == WFS_ENOENT && !nw->if_etag && !nw->parents) {
		/* a parent is missing: made in the same create, if the bucket is there */
		if (!s3_bucket_exists(r))
			return WFS_ENOENT;
		nw->parents = true;
		rc = filer_meta_create(r->g->filer, path, nw, NULL);
	}
	/* a key beside longer ones ("a" and "a/b"): s3_keypath.h */
	if (rc == WFS_EEXIST || rc == WFS_EISDIR || (rc == WFS_EPRECOND && nw->if_etag))
		rc = commit_inside(r, path, nw, rc);
	else if (rc == WFS_ENOTDIR && !nw->if_etag && !nw->n_moves)
		rc = s3_commit_below(r, path, nw, rc);
	if (rc)
		s3_commit_error(r, rc, c);
	return rc;
}

wfs_err s3_commit_object(struct s3_req *r, const char *path, struct filer_meta_new *nw,
			 const struct s3_cond *c)
{
	struct filer_entry *b;
	struct filer_xattr *lock_xattrs = NULL;
	char *lock_values = NULL;
	const struct filer_xattr *xattrs = nw->xattrs;
	size_t n_xattrs = nw->n_xattrs;
	enum s3_versioning v;
	size_t bl = strlen(S3_BUCKETS_DIR) + 2 + strlen(r->bucket);
	wfs_err rc;
	if (!strncmp(path + bl, S3_UPLOADS_NAME "/", strlen(S3_UPLOADS_NAME) + 1))
		return commit_plain(r, path, nw, c); /* a part: no versions, no lock */
	if (!(b = s3_bucket_entry(r)))
		return WFS_ENOENT;
	v = s3_versioning_in(b);
	rc = s3_lock_apply(r, b, nw, &lock_xattrs, &lock_values) ? WFS_OK : WFS_EPERM;
	filer_entry_free(b);
	if (!rc && v != S3_UNVERSIONED)
		rc = s3_commit_versioned(r, path, nw, c, v);
	else if (!rc)
		rc = commit_plain(r, path, nw, c);
	nw->xattrs = xattrs; /* the caller's again */
	nw->n_xattrs = n_xattrs;
	free(lock_xattrs);
	free(lock_values);
	return rc;
}

/* The filer's bound on ids per freeChunks. */
#define FREE_BATCH 10000

void s3_free_chunks(struct s3_gateway *g, const struct filer_chunk *c, size_t n)
{
	buf req = BUF_INIT, resp = BUF_INIT;
	for (size_t at = 0; at < n; at += FREE_BATCH) {
		size_t end = MIN(n, at + FREE_BATCH);
		wfs_err rc;
		buf_reset(&req);
		buf_printf(&req, "{\"fileIds\":[");
		for (size_t i = at; i < end; i++)
			buf_printf(&req, "%s\"%s\"", i > at ? "," : "", c[i].fid);
		buf_printf(&req, "]}");
		rc = filer_rpc_call(g->filer, "freeChunks", (const char *)req.data, req.len, &resp);
		if (rc)
			log_warn("could not free %zu unreferenced chunks now (freed when their "
				 "lease ends): %s",
				 end - at, wfs_strerror(rc));
		buf_reset(&resp);
	}
	buf_free(&req);
	buf_free(&resp);
}
