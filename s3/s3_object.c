/*
 * Object operations that need no data path: DeleteObject and DeleteObjects. An
 * object is the file /buckets/<bucket>/<key> (s3_keypath.h: "a/" is the file
 * a/.s3~empty), or <key>/.s3~object when longer keys made <key> a directory.
 * Workers only.
 */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include "client/filer_meta.h"
#include "client/entry.h"
#include "http_util.h"
#include "s3/s3_int.h"
#include "s3/s3_keypath.h"
#include "s3/s3_meta.h"
#include "util.h"

/* S3's longest key, in bytes. */
#define S3_KEY_MAX 1024

/* Whether key is dir or under it. */
static bool under(const char *key, const char *dir)
{
	size_t n = strlen(dir);
	return !strncmp(key, dir, n) && (!key[n] || key[n] == '/');
}

char *s3_object_path(const char *bucket, const char *key)
{
	char *path, *rel, *d = NULL, *n = NULL;
	bool ok;

	if (under(key, S3_UPLOADS_NAME) || under(key, S3_VERSIONS_NAME))
		return NULL; /* multipart uploads and older versions live there */
	rel = s3_keypath_encode(key);
	path = xasprintf(S3_BUCKETS_DIR "/%s/%s", bucket, rel);
	free(rel);
	ok = filer_path_split(path, &d, &n) == WFS_OK;
	free(d);
	free(n);
	if (!ok) {
		free(path);
		return NULL;
	}
	return path;
}

/* s3_object_inside, the entry's filer etag into etag when it is not NULL. */
static wfs_err inside(struct s3_gateway *g, char **path, struct filer_entry **e, wfs_err rc,
		      char *etag)
{
	char *self;
	if (rc || !S_ISDIR((*e)->attr.mode))
		return rc;
	filer_entry_free(*e);
	*e = NULL;
	self = xasprintf("%s/" S3_KEYPATH_SELF, *path);
	rc = etag ? filer_meta_lookup_etag(g->filer, self, e, etag)
		  : filer_meta_lookup(g->filer, self, e);
	if (!rc) {
		free(*path);
		*path = self;
	} else {
		free(self);
	}
	return rc;
}

wfs_err s3_object_inside(struct s3_gateway *g, char **path, struct filer_entry **e, wfs_err rc)
{
	return inside(g, path, e, rc, NULL);
}

wfs_err s3_object_lookup_etag(struct s3_gateway *g, const char *path, struct filer_entry **e,
			      char etag[17])
{
	char *p = xstrdup(path);
	wfs_err rc = inside(g, &p, e, filer_meta_lookup_etag(g->filer, p, e, etag), etag);
	free(p);
	return rc;
}

bool s3_key_ok(struct s3_req *r)
{
	if (strlen(r->key) <= S3_KEY_MAX)
		return true;
	s3_error(r, S3_KEY_TOO_LONG, "Your key is too long (at most %d bytes)", S3_KEY_MAX);
	return false;
}

bool s3_etag_listed(const char *v, const char *etag)
{
	size_t el = strlen(etag);
	while (*v) {
		size_t n;
		while (*v == ' ' || *v == ',')
			v++;
		n = strcspn(v, ",");
		while (n && v[n - 1] == ' ')
			n--;
		if ((n == 1 && *v == '*') || (n == el && !strncmp(v, etag, n)) ||
		    (n + 2 == el && !strncmp(v, etag + 1, n))) /* unquoted */
			return true;
		v += n;
		while (*v && *v != ',')
			v++;
	}
	return false;
}

void s3_drop_empty_parents(struct s3_gateway *g, const char *bucket, char *path)
{
	size_t bucket_len = strlen(S3_BUCKETS_DIR) + 1 + strlen(bucket);
	char *slash;
	while ((slash = strrchr(path, '/')) && (size_t)(slash - path) > bucket_len) {
		*slash = '\0';
		if (filer_meta_delete(g->filer, path, false))
			break;
	}
}

/*
 * Deletes the object key of r's bucket: 0 also when there was none (S3
 * answers success then) or the name is a directory (not an object), else a
 * filer error. if_etag (an If-Match delete, the version its check read):
 * only that version, WFS_EPRECOND if another writer came between,
 * WFS_ENOENT if it is gone.
 */
static wfs_err delete_plain(struct s3_req *r, const char *key, const char *if_etag)
{
	char *path = s3_object_path(r->bucket, key);
	struct filer_entry *e = NULL;
	wfs_err rc;

	rc = path ? filer_meta_lookup(r->g->filer, path, &e) : WFS_ENOENT;
	if (path)
		rc = s3_object_inside(r->g, &path, &e, rc);
	if (if_etag) {
		/* only the version the check read: another writer's since is WFS_EPRECOND */
		if (!rc)
			rc = filer_meta_delete_if(r->g->filer, path, if_etag);
		if (!rc)
			s3_drop_empty_parents(r->g, r->bucket, path);
		filer_entry_free(e);
		free(path);
		return rc;
	}
	if (!rc && S_ISREG(e->attr.mode)) {
		rc = filer_meta_delete(r->g->filer, path, false);
		if (!rc)
			s3_drop_empty_parents(r->g, r->bucket, path);
	}
	filer_entry_free(e);
	free(path);
	return rc == WFS_ENOENT || rc == WFS_ENOTDIR ? WFS_OK : rc;
}

/* Deletes key (version id, or NULL) as the bucket's versioning state v says. */
static wfs_err delete_key(struct s3_req *r, const char *key, const char *id, enum s3_versioning v,
			  struct s3_deleted *out)
{
	memset(out, 0, sizeof(*out));
	if (v == S3_UNVERSIONED && !id)
		return delete_plain(r, key, NULL);
	return s3_delete_versioned(r, key, id, v, NULL, out);
}

/*
 * DeleteObject's If-Match (* or ETags), on the current object as S3 has it:
 * false with r's answer (NoSuchKey when there is none, PreconditionFailed
 * when its ETag is not listed); fetag gets the version read.
 */
static bool delete_cond_holds(struct s3_req *r, const char *im, char fetag[17])
{
	char *path = s3_object_path(r->bucket, r->key), etag[S3_ETAG_MAX];
	struct filer_entry *e = NULL;
	wfs_err rc = path ? s3_object_lookup_etag(r->g, path, &e, fetag) : WFS_ENOENT;
	bool ok = false;

	if (rc && rc != WFS_ENOENT && rc != WFS_ENOTDIR) {
		s3_filer_error(r, rc, "looking the object up");
	} else if (rc || !S_ISREG(e->attr.mode)) {
		s3_error(r, S3_NO_SUCH_KEY, "The specified key does not exist.");
	} else {
		s3_etag(e, etag);
		ok = s3_etag_listed(im, etag);
		if (!ok)
			s3_error(r, S3_PRECONDITION_FAILED,
				 "At least one of the pre-conditions you specified did not hold");
	}
	filer_entry_free(e);
	free(path);
	return ok;
}

/* The answer headers of a versioned delete. */
static void deleted_headers(struct s3_req *r, const struct s3_deleted *d)
{
	if (d->version_id[0])
		s3_header(r, "x-amz-version-id", d->version_id);
	if (d->marker)
		s3_header(r, "x-amz-delete-marker", "true");
}

static bool version_id_valid(struct s3_req *r, const char *id)
{
	if (!id || s3_version_id_ok(id))
		return true;
	s3_error(r, S3_INVALID_ARGUMENT, "Invalid version id specified");
	return false;
}

void s3_delete_object(struct s3_req *r)
{
	const char *id = http_req_query(r->req, "versionId");
	enum s3_versioning v;
	struct s3_deleted d;
	wfs_err rc;
	const char *im = http_req_header(r->req, "If-Match");
	char fetag[17];
	if (!version_id_valid(r, id) || !s3_versioning_of(r, &v))
		return;
	if (im && !delete_cond_holds(r, im, fetag))
		return;
	/* the delete takes only the version checked: a writer between is a conflict */
	if (im && v == S3_UNVERSIONED && !id) {
		memset(&d, 0, sizeof(d));
		rc = delete_plain(r, r->key, fetag);
	} else if (im && !id) {
		rc = s3_delete_versioned(r, r->key, NULL, v, fetag, &d);
	} else {
		rc = delete_key(r, r->key, id, v, &d);
	}
	if (rc == WFS_EPRECOND) {
		s3_error(r, S3_COND_CONFLICT,
			 "The conditional request cannot succeed due to a conflicting operation "
			 "against this resource.");
	} else if (rc == WFS_ENOENT && im) {
		s3_error(r, S3_NO_SUCH_KEY, "The specified key does not exist.");
	} else if (rc == WFS_EACCES) {
		s3_error(r, S3_ACCESS_DENIED,
			 "Access Denied because object protected by object lock.");
	} else if (rc) {
		s3_filer_error(r, rc, "deleting the object");
	} else {
		deleted_headers(r, &d);
		r->status = 204;
	}
}

/* At most this many keys in one DeleteObjects. */
#define DELETE_KEYS_MAX 1000

void s3_delete_objects(struct s3_req *r)
{
	struct xml_node *root = NULL;
	enum s3_versioning v;
	const char *quiet;
	char msg[128];
	size_t n;
	xml_w *w;

	if (xml_parse(r->in.data ? r->in.data : "", r->in.len, NULL, &root, msg, sizeof(msg)) ||
	    strcmp(root->name, "Delete") || (n = xml_count(root, "Object")) == 0 ||
	    n > DELETE_KEYS_MAX) {
		xml_free(root);
		s3_error(r, S3_MALFORMED_XML,
			 "The XML you provided was not well-formed or did not validate against "
			 "our published schema (1 to %d Object elements)",
			 DELETE_KEYS_MAX);
		return;
	}
	xml_foreach(o, root, "Object")
	{
		const char *key = xml_child_text(o, "Key");
		if (!key || !*key) {
			xml_free(root);
			s3_error(r, S3_MALFORMED_XML, "Every Object needs a Key");
			return;
		}
	}
	if (!s3_versioning_of(r, &v)) {
		xml_free(root);
		return;
	}
	quiet = xml_child_text(root, "Quiet");
	w = xml_w_new(&r->body);
	xml_open_s3(w, "DeleteResult");
	xml_foreach(o, root, "Object")
	{
		const char *key = xml_child_text(o, "Key"), *id = xml_child_text(o, "VersionId");
		struct s3_deleted d = {0};
		const char *act = id ? "s3:DeleteObjectVersion" : "s3:DeleteObject";
		wfs_err rc = strlen(key) > S3_KEY_MAX      ? WFS_ENAMETOOLONG
			 : id && !s3_version_id_ok(id) ? WFS_EINVAL
			 : !s3_permitted(r, r->bucket, key, act, S3_ACT_WRITE)
				 ? WFS_EACCES
				 : delete_key(r, key, id, v, &d);
		if (!rc && quiet && !strcmp(quiet, "true"))
			continue;
		xml_open(w, rc ? "Error" : "Deleted");
		xml_elem(w, "Key", key);
		if (id)
			xml_elem(w, "VersionId", id);
		if (!rc && d.marker) {
			xml_elem(w, "DeleteMarker", "true");
			if (!id)
				xml_elem(w, "DeleteMarkerVersionId", d.version_id);
		}
		if (rc == WFS_EACCES) {
			xml_elem(w, "Code", "AccessDenied");
			xml_elem(w, "Message", "Access Denied"); /* by the policy or a lock */
		} else if (rc == WFS_EINVAL) {
			xml_elem(w, "Code", "InvalidArgument");
			xml_elem(w, "Message", "Invalid version id specified");
		} else if (rc == WFS_ENAMETOOLONG) {
			xml_elem(w, "Code", "KeyTooLongError");
			xml_elem(w, "Message", "Your key is too long");
		} else if (rc) {
			xml_elem(w, "Code", s3_err_code(s3_err_of(rc)));
			xml_elem(w, "Message", wfs_strerror(rc));
		}
		xml_close(w);
	}
	xml_free(root);
	s3_xml_ok(r, w);
}
