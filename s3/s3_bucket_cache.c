/*
 * The bucket entries a gateway read lately, so that the configuration every
 * request of a bucket consults (versioning now, the policy later) costs no
 * filer lookup per request.
 *
 * DESIGN: a small table of (bucket, entry, when read), each entry believed
 * for S3_BUCKET_CACHE_NS (misses are not kept). A change made through this gateway forgets the
 * bucket at once; one made through another gateway is seen within that time
 * (AWS documents minutes for versioning and policies to settle). Any thread.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "client/filer_meta.h"
#include "s3/s3_int.h"
#include "util.h"

#define S3_BUCKET_CACHE_NS   1000000000ull
#define S3_BUCKET_CACHE_SIZE 64

struct slot {
	char *bucket;          /* NULL: free */
	struct filer_entry *e; /* the bucket's directory */
	uint64_t read_ns;
};

struct s3_bucket_cache {
	pthread_mutex_t mu;
	struct slot s[S3_BUCKET_CACHE_SIZE];
};

struct s3_bucket_cache *s3_bucket_cache_new(void)
{
	struct s3_bucket_cache *c = xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

static void slot_clear(struct slot *s)
{
	free(s->bucket);
	filer_entry_free(s->e);
	memset(s, 0, sizeof(*s));
}

void s3_bucket_cache_free(struct s3_bucket_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < S3_BUCKET_CACHE_SIZE; i++)
		slot_clear(&c->s[i]);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void s3_bucket_forget(struct s3_gateway *g, const char *bucket)
{
	struct s3_bucket_cache *c = g->buckets;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < S3_BUCKET_CACHE_SIZE; i++)
		if (c->s[i].bucket && !strcmp(c->s[i].bucket, bucket))
			slot_clear(&c->s[i]);
	pthread_mutex_unlock(&c->mu);
}

/* A fresh copy of the cached entry (*found false: not cached or stale). */
static struct filer_entry *cached(struct s3_bucket_cache *c, const char *bucket, bool *found)
{
	uint64_t now = time_now_ns();
	struct filer_entry *e = NULL;
	*found = false;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < S3_BUCKET_CACHE_SIZE && !*found; i++) {
		struct slot *s = &c->s[i];
		if (s->bucket && !strcmp(s->bucket, bucket) &&
		    now - s->read_ns < S3_BUCKET_CACHE_NS) {
			*found = true;
			e = filer_entry_dup(s->e);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return e;
}

static void remember(struct s3_bucket_cache *c, const char *bucket, const struct filer_entry *e)
{
	struct slot *use = NULL;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < S3_BUCKET_CACHE_SIZE; i++) {
		struct slot *s = &c->s[i];
		if (s->bucket && !strcmp(s->bucket, bucket)) {
			use = s;
			break;
		}
		if (!use || (use->bucket && (!s->bucket || s->read_ns < use->read_ns)))
			use = s; /* a free slot, else the oldest */
	}
	slot_clear(use);
	use->bucket = xstrdup(bucket);
	use->e = filer_entry_dup(e);
	use->read_ns = time_now_ns();
	pthread_mutex_unlock(&c->mu);
}

bool s3_bucket_peek(struct s3_gateway *g, const char *bucket, struct filer_entry **out)
{
	bool found;
	*out = cached(g->buckets, bucket, &found);
	return found;
}

int s3_bucket_peek_xattr(struct s3_gateway *g, const char *bucket, const char *name, buf *out)
{
	struct s3_bucket_cache *c = g->buckets;
	uint64_t now = time_now_ns();
	int found = -1;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < S3_BUCKET_CACHE_SIZE && found < 0; i++) {
		struct slot *s = &c->s[i];
		if (s->bucket && !strcmp(s->bucket, bucket) &&
		    now - s->read_ns < S3_BUCKET_CACHE_NS) {
			const struct filer_xattr *x = filer_entry_xattr_get(s->e, name);
			found = x != NULL;
			if (x)
				buf_append(out, x->value, x->value_len);
		}
	}
	pthread_mutex_unlock(&c->mu);
	return found;
}

wfs_err s3_bucket_lookup(struct s3_gateway *g, const char *bucket, struct filer_entry **out)
{
	char *path;
	bool found;
	wfs_err rc;

	*out = cached(g->buckets, bucket, &found);
	if (found)
		return WFS_OK;
	path = s3_bucket_path(bucket);
	rc = filer_meta_lookup(g->filer, path, out);
	free(path);
	if (!rc && !S_ISDIR((*out)->attr.mode))
		rc = WFS_ENOENT;
	if (rc) {
		filer_entry_free(*out);
		*out = NULL;
		return rc;
	}
	/* a missing bucket is not remembered: it may be created any moment */
	remember(g->buckets, bucket, *out);
	return WFS_OK;
}

struct filer_entry *s3_bucket_entry(struct s3_req *r)
{
	struct filer_entry *e;
	wfs_err rc = s3_bucket_lookup(r->g, r->bucket, &e);
	if (rc == WFS_ENOENT || rc == WFS_ENOTDIR)
		s3_error(r, S3_NO_SUCH_BUCKET, "The specified bucket does not exist");
	else if (rc)
		s3_filer_error(r, rc, "looking the bucket up");
	return e;
}
