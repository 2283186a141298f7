/*
 * Object operations that need no data path: HeadObject and DeleteObject. An
 * object is the file /buckets/<bucket>/<key>; a key the filer cannot name as a
 * path ("a//b", "a/", ".." components) holds no object. Workers only.
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
#include "filer/entry.h"
#include "http_util.h"
#include "s3/s3_int.h"
#include "util.h"

/* S3's longest key, in bytes. */
#define S3_KEY_MAX 1024

/* The filer path of r's object, or NULL when the key cannot name one. */
static char *object_path(const struct s3_req *r)
{
	char *path = xasprintf(S3_BUCKETS_DIR "/%s/%s", r->bucket, r->key), *d = NULL, *n = NULL;
	bool ok = filer_path_split(path, &d, &n) == WFS_OK;
	free(d);
	free(n);
	if (!ok) {
		free(path);
		return NULL;
	}
	return path;
}

bool s3_key_ok(struct s3_req *r)
{
	if (strlen(r->key) <= S3_KEY_MAX)
		return true;
	s3_error(r, S3_KEY_TOO_LONG, "Your key is too long (at most %d bytes)", S3_KEY_MAX);
	return false;
}

/* Whether etag (quoted) is in the If-Match / If-None-Match list v ("*" matches any). */
static bool etag_listed(const char *v, const char *etag)
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

/*
 * The conditional headers of a read against the object (RFC 7232 order, as
 * S3 applies them): 0 to go on, or the status to answer (304, 412).
 */
static int preconditions(struct s3_req *r, const char *etag, time_t mtime)
{
	const char *im = http_req_header(r->req, "If-Match");
	const char *inm = http_req_header(r->req, "If-None-Match");
	const char *ims = http_req_header(r->req, "If-Modified-Since");
	const char *ius = http_req_header(r->req, "If-Unmodified-Since");
	time_t t;

	if (im && !etag_listed(im, etag))
		return 412;
	if (!im && ius && http_date_parse(ius, &t) && mtime > t)
		return 412;
	if (inm && etag_listed(inm, etag))
		return 304;
	if (!inm && ims && http_date_parse(ims, &t) && mtime <= t)
		return 304;
	return 0;
}

void s3_head_object(struct s3_req *r)
{
	char *path = object_path(r);
	struct filer_entry *e = NULL;
	char etag[S3_ETAG_MAX], when[64];
	time_t mtime;
	int rc, cond;

	rc = path ? filer_meta_lookup(r->g->filer, path, &e) : ENOENT;
	if (rc == ENOENT || rc == ENOTDIR || (!rc && !S_ISREG(e->attr.mode))) {
		/* a missing bucket and a missing key are both 404 (no body to tell them apart) */
		s3_error(r, S3_NO_SUCH_KEY, "The specified key does not exist.");
		goto out;
	}
	if (rc) {
		s3_filer_error(r, rc, "looking the object up");
		goto out;
	}
	s3_etag(e, etag);
	mtime = (time_t)(e->attr.mtime_ns / 1000000000);
	http_date_format(mtime, when, sizeof(when));
	s3_header(r, "ETag", etag);
	s3_header(r, "Last-Modified", when);
	cond = preconditions(r, etag, mtime);
	if (cond) {
		r->status = cond;
		goto out;
	}
	s3_header(r, "Content-Type",
		  e->attr.mime && *e->attr.mime ? e->attr.mime : "binary/octet-stream");
	s3_header(r, "Accept-Ranges", "bytes");
	r->head_length = (int64_t)e->attr.size;
	r->status = 200;
out:
	filer_entry_free(e);
	free(path);
}

void s3_delete_object(struct s3_req *r)
{
	char *path = object_path(r);
	struct filer_entry *e = NULL;
	int rc;

	if (!s3_bucket_exists(r))
		goto out;
	rc = path ? filer_meta_lookup(r->g->filer, path, &e) : ENOENT;
	/* S3 answers 204 whether or not the key existed; directories are not objects */
	if (!rc && S_ISREG(e->attr.mode))
		rc = filer_meta_delete(r->g->filer, path, false);
	if (rc && rc != ENOENT && rc != ENOTDIR) {
		s3_filer_error(r, rc, "deleting the object");
		goto out;
	}
	r->status = 204;
out:
	filer_entry_free(e);
	free(path);
}
