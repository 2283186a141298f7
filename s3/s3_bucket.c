/*
 * Bucket operations: list, create, delete, head, location. A bucket is the
 * filer directory /buckets/<name> (docs/s3-gateway.md). Workers only.
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
#include "s3/acl.h"
#include "s3/s3_int.h"
#include "util.h"

#define LIST_PAGE 1000

bool s3_bucket_name_ok(const char *name)
{
	size_t n = strlen(name);
	bool digits_and_dots = true;
	if (n < 3 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && c != '.' && c != '-')
			return false;
		if ((i == 0 || i == n - 1) && !alnum)
			return false;
		if (c == '.' && name[i + 1] == '.')
			return false;
		if (!(c >= '0' && c <= '9') && c != '.')
			digits_and_dots = false;
	}
	/* not formatted as an IP address; reserved prefixes and suffixes */
	return !digits_and_dots && strncmp(name, "xn--", 4) && strncmp(name, "sthree-", 7) &&
	       (n < 8 || strcmp(name + n - 8, "-s3alias")) &&
	       (n < 6 || strcmp(name + n - 6, "--ol-s3"));
}

/* The caller as ListBuckets names it: its canonical id, as ACLs do (s3_acl.c). */
static void owner(struct s3_req *r, xml_w *w)
{
	const char *name = r->who ? s3_identity_name(r->who) : "anonymous";
	char id[65];
	acl_canonical_id(name, id);
	xml_open(w, "Owner");
	xml_elem(w, "ID", id);
	xml_elem(w, "DisplayName", name);
	xml_close(w);
}

void s3_list_buckets(struct s3_req *r)
{
	struct filer_meta_page pg;
	char *start = NULL;
	xml_w *w = xml_w_new(&r->body);
	wfs_err e;

	xml_open_s3(w, "ListAllMyBucketsResult");
	owner(r, w);
	xml_open(w, "Buckets");
	do {
		e = filer_meta_list(r->g->filer, S3_BUCKETS_DIR, start, LIST_PAGE, &pg);
		free(start);
		start = NULL;
		if (e == WFS_ENOENT) { /* no bucket was ever made */
			e = WFS_OK;
			break;
		}
		if (e)
			break;
		for (size_t i = 0; i < pg.n; i++) {
			const struct filer_entry *b = pg.entries[i];
			char when[32];
			if (!S_ISDIR(b->attr.mode) || !s3_bucket_name_ok(b->name))
				continue;
			if (r->who && !s3_identity_allows(r->who, S3_ACT_LIST, b->name) &&
			    !s3_identity_allows(r->who, S3_ACT_READ, b->name) &&
			    s3_identity_says(r, b->name, NULL, "s3:ListBucket") != POLICY_ALLOW &&
			    !s3_acl_lists_bucket(r, b))
				continue; /* a bucket this identity cannot touch stays unlisted */
			s3_iso8601(b->attr.crtime_ns ? b->attr.crtime_ns : b->attr.mtime_ns, when);
			xml_open(w, "Bucket");
			xml_elem(w, "Name", b->name);
			xml_elem(w, "CreationDate", when);
			xml_close(w);
		}
		if (pg.more && pg.last_name)
			start = xstrdup(pg.last_name);
		filer_meta_page_free(&pg);
	} while (start);
	if (e) {
		xml_w_free(w);
		s3_filer_error(r, e, "listing the buckets");
		return;
	}
	s3_xml_ok(r, w);
}

wfs_err s3_bucket_make_with(struct s3_gateway *g, const char *bucket, const struct filer_xattr *x,
			    size_t nx)
{
	struct filer_meta_new n = {
		.mode = S_IFDIR | 0755, .exclusive = true, .xattrs = x, .n_xattrs = nx};
	struct filer_meta_new top = {.mode = S_IFDIR | 0755, .exclusive = true};
	char *path = s3_bucket_path(bucket);
	wfs_err e = filer_meta_create(g->filer, path, &n, NULL);

	if (e == WFS_ENOENT) { /* the first bucket: make /buckets, then retry */
		wfs_err e2 = filer_meta_create(g->filer, S3_BUCKETS_DIR, &top, NULL);
		if (!e2 || e2 == WFS_EEXIST)
			e = filer_meta_create(g->filer, path, &n, NULL);
	}
	free(path);
	return e;
}

wfs_err s3_bucket_make(struct s3_gateway *g, const char *bucket)
{
	return s3_bucket_make_with(g, bucket, NULL, 0);
}

/* CreateBucket of a bucket that exists: as S3 answers, by whose it is and the region. */
static void create_existing(struct s3_req *r)
{
	struct filer_entry *b = NULL;
	wfs_err e = s3_bucket_lookup(r->g, r->bucket, &b);
	if (e) {
		s3_filer_error(r, e, "looking the bucket up");
	} else if (s3_bucket_claim(r, b) == S3_CLAIM_OTHERS) {
		s3_error(r, S3_BUCKET_EXISTS,
			 "The requested bucket name is not available. The bucket namespace is "
			 "shared by all users of the system. Please select a different name and "
			 "try again.");
	} else if (!strcmp(r->g->region, "us-east-1")) {
		/* us-east-1 answers a repeated create of one's own bucket with success */
		char *loc = xasprintf("/%s", r->bucket);
		s3_header(r, "Location", loc);
		free(loc);
		r->status = 200;
	} else {
		s3_error(r, S3_BUCKET_OWNED,
			 "Your previous request to create the named bucket succeeded and you "
			 "already own it.");
	}
	filer_entry_free(b);
}

void s3_create_bucket(struct s3_req *r)
{
	const char *lock = http_req_header(r->req, "x-amz-bucket-object-lock-enabled");
	struct filer_xattr x[2];
	struct filer_entry *xs = filer_entry_new("/", "bucket");
	wfs_err e;

	/* the owner, Object Ownership and ACL, and Object Lock: sorted and unique in xs */
	if (!s3_bucket_create_xattrs(r, xs)) {
		filer_entry_free(xs);
		return;
	}
	for (size_t i = 0, n = lock && !strcasecmp(lock, "true") ? s3_lock_bucket_xattrs(x) : 0;
	     i < n; i++)
		filer_entry_xattr_set(xs, x[i].name, x[i].value, x[i].value_len);
	e = s3_bucket_make_with(r->g, r->bucket, xs->xattrs, xs->n_xattrs);
	filer_entry_free(xs);
	if (e == WFS_EEXIST) {
		create_existing(r);
	} else if (e) {
		s3_filer_error(r, e, "creating the bucket");
	} else {
		char *loc = xasprintf("/%s", r->bucket);
		s3_header(r, "Location", loc);
		free(loc);
		r->status = 200;
	}
}

/* Whether the bucket at path holds nothing but multipart uploads in progress. */
static bool only_uploads(struct s3_req *r, const char *path)
{
	struct filer_meta_page pg;
	bool only;
	if (filer_meta_list(r->g->filer, path, "", 2, &pg))
		return false;
	only = pg.n == 1 && S_ISDIR(pg.entries[0]->attr.mode) &&
	       !strcmp(pg.entries[0]->name, S3_UPLOADS_NAME);
	filer_meta_page_free(&pg);
	return only;
}

void s3_delete_bucket(struct s3_req *r)
{
	char *path = s3_bucket_path(r->bucket);
	wfs_err e = filer_meta_delete(r->g->filer, path, false);

	s3_bucket_forget(r->g, r->bucket);
	if (e == WFS_ENOTEMPTY && only_uploads(r, path)) {
		/* uploads in progress go with their bucket, as in S3 */
		char *up = xasprintf("%s/" S3_UPLOADS_NAME, path);
		e = filer_meta_delete(r->g->filer, up, true);
		free(up);
		if (!e || e == WFS_ENOENT)
			e = filer_meta_delete(r->g->filer, path, false);
	}

	if (e == WFS_ENOENT)
		s3_error(r, S3_NO_SUCH_BUCKET, "The specified bucket does not exist");
	else if (e == WFS_ENOTEMPTY)
		s3_error(r, S3_BUCKET_NOT_EMPTY, "The bucket you tried to delete is not empty");
	else if (e)
		s3_filer_error(r, e, "deleting the bucket");
	else
		r->status = 204;
	free(path);
}

bool s3_bucket_exists(struct s3_req *r)
{
	char *path = s3_bucket_path(r->bucket);
	struct filer_entry *e = NULL;
	wfs_err rc = filer_meta_lookup(r->g->filer, path, &e);
	bool ok = !rc && S_ISDIR(e->attr.mode);

	if (!ok && (rc == WFS_ENOENT || !rc))
		s3_error(r, S3_NO_SUCH_BUCKET, "The specified bucket does not exist");
	else if (!ok)
		s3_filer_error(r, rc, "looking the bucket up");
	filer_entry_free(e);
	free(path);
	return ok;
}

void s3_head_bucket(struct s3_req *r)
{
	if (!s3_bucket_exists(r))
		return;
	s3_header(r, "x-amz-bucket-region", r->g->region);
	r->status = 200;
}

void s3_bucket_location(struct s3_req *r)
{
	xml_w *w;
	if (!s3_bucket_exists(r))
		return;
	w = xml_w_new(&r->body);
	xml_open_s3(w, "LocationConstraint");
	/* us-east-1 is written as an empty constraint */
	if (strcmp(r->g->region, "us-east-1"))
		xml_escape(&r->body, r->g->region, strlen(r->g->region));
	s3_xml_ok(r, w);
}

void s3_bucket_config_set(struct s3_req *r, const char *xattr, const buf *doc, const char *what)
{
	char *path;
	wfs_err rc;
	if (!s3_bucket_exists(r))
		return;
	path = s3_bucket_path(r->bucket);
	rc = filer_meta_set_xattr(r->g->filer, path, xattr, doc->data, doc->len, FM_XATTR_ANY);
	s3_bucket_forget(r->g, r->bucket);
	if (rc)
		s3_filer_error(r, rc, what);
	else
		r->status = 200;
	free(path);
}

void s3_bucket_config_remove(struct s3_req *r, const char *xattr, const char *what)
{
	char *path;
	wfs_err rc;
	if (!s3_bucket_exists(r))
		return;
	path = s3_bucket_path(r->bucket);
	rc = filer_meta_remove_xattr(r->g->filer, path, xattr);
	s3_bucket_forget(r->g, r->bucket);
	if (rc && rc != WFS_ENODATA)
		s3_filer_error(r, rc, what);
	else
		r->status = 204;
	free(path);
}
