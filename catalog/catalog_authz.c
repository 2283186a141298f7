/* Authorization of catalog requests: see catalog_authz.h. */
#include "config.h"
#include "catalog/catalog_authz.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "catalog/table_store.h"
#include "client/entry.h"
#include "client/filer_meta.h"
#include "lib/util.h"
#include "s3/bucket_policy.h"
#include "s3/s3_iam.h"

bool catalog_may(const struct catalog_authz *z, const char *action, const char *bucket,
		 const char *ns, const char *table, char *msg, size_t msglen)
{
	char full[96];
	struct catalog_access a = {full, bucket, ns, table};
	if (!z)
		return true;
	snprintf(full, sizeof(full), "s3tables:%s", action);
	return z->allow(z->ctx, &a, msg, msglen);
}

/* Whether action only reads (Get*, List*): what a Read or List grant permits. */
static bool reads(const char *action)
{
	const char *name = strchr(action, ':');
	name = name ? name + 1 : action;
	return !strncmp(name, "Get", 3) || !strncmp(name, "List", 4);
}

/* Whether action reads or changes a resource policy (Admin's, like S3's bucket policies). */
static bool policy_action(const char *action)
{
	size_t n = strlen(action);
	return n > 6 && !strcmp(action + n - 6, "Policy");
}

/*
 * What a request's authorization reads of a bucket's or a table's entry, kept
 * for AUTHZ_CACHE_NS, so that a describe or a credential re-vend costs no
 * filer lookup for it: the gateway's bucket cache's time (s3_bucket_cache.c).
 * A policy put or deleted through this gateway is forgotten at once
 * (catalog_authz_forget); one changed through another gateway, or an entry
 * dropped and made again, is seen within that second. Missing entries are
 * not kept (a table just made has its ARN at once). Any thread.
 */
#define AUTHZ_CACHE_NS   1000000000ull
#define AUTHZ_CACHE_SIZE 256 /* slots, one per path hash: a clash is a lookup */

struct fact {
	filer_rpc *r; /* the filer it was read from; NULL: free slot */
	char *path;
	char *policy; /* the stored policy document, NULL: none */
	size_t policy_len;
	char *arn; /* a table's ARN, NULL: none */
	uint64_t read_ns;
};

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fact cache[AUTHZ_CACHE_SIZE];
static uint64_t cache_gen; /* bumped by each forget: a lookup older than it is not kept */

static size_t slot_of(const char *path)
{
	uint64_t h = 1469598103934665603ull;
	for (const unsigned char *s = (const unsigned char *)path; *s; s++)
		h = (h ^ *s) * 1099511628211ull;
	return (size_t)(h ^ (h >> 29)) % AUTHZ_CACHE_SIZE;
}

static char *memdup(const void *p, size_t n)
{
	char *d = xmalloc(n + 1);
	memcpy(d, p, n);
	d[n] = '\0';
	return d;
}

static void fact_clear(struct fact *f)
{
	free(f->path);
	free(f->policy);
	free(f->arn);
	memset(f, 0, sizeof(*f));
}

/* The table ARN stored in table entry e, or NULL (caller frees). */
static char *table_arn(const struct filer_entry *e)
{
	const struct filer_xattr *x = e ? filer_entry_xattr_get(e, TS_XATTR_TABLE) : NULL;
	struct ts_table t = {0};
	char *arn = NULL;
	if (x && ts_table_from_json((const char *)x->value, x->value_len, &t) && t.arn)
		arn = xstrdup(t.arn);
	ts_table_free(&t);
	return arn;
}

/*
 * What authorization reads of the entry at path into *f (caller frees with
 * fact_clear): kept, or looked up and kept; false when there is no entry.
 */
static bool read_fact(filer_rpc *r, const char *path, struct fact *f)
{
	struct fact *slot = &cache[slot_of(path)];
	struct filer_entry *e = NULL;
	const struct filer_xattr *x;
	uint64_t now = time_mono_ns(), gen;

	memset(f, 0, sizeof(*f));
	pthread_mutex_lock(&cache_mu);
	if (slot->r == r && !strcmp(slot->path, path) && now - slot->read_ns < AUTHZ_CACHE_NS) {
		f->policy = slot->policy ? memdup(slot->policy, slot->policy_len) : NULL;
		f->policy_len = slot->policy_len;
		f->arn = slot->arn ? xstrdup(slot->arn) : NULL;
		pthread_mutex_unlock(&cache_mu);
		return true;
	}
	gen = cache_gen;
	pthread_mutex_unlock(&cache_mu);
	if (filer_meta_lookup(r, path, &e) != WFS_OK)
		return false;
	x = filer_entry_xattr_get(e, TS_XATTR_POLICY);
	f->policy = x ? memdup(x->value, x->value_len) : NULL;
	f->policy_len = x ? x->value_len : 0;
	f->arn = table_arn(e);
	filer_entry_free(e);
	pthread_mutex_lock(&cache_mu);
	if (gen == cache_gen) {
		fact_clear(slot);
		slot->r = r;
		slot->path = xstrdup(path);
		slot->policy = f->policy ? memdup(f->policy, f->policy_len) : NULL;
		slot->policy_len = f->policy_len;
		slot->arn = f->arn ? xstrdup(f->arn) : NULL;
		slot->read_ns = now;
	}
	pthread_mutex_unlock(&cache_mu);
	return true;
}

void catalog_authz_forget(const char *path)
{
	struct fact *slot = &cache[slot_of(path)];
	pthread_mutex_lock(&cache_mu);
	cache_gen++;
	if (slot->path && !strcmp(slot->path, path))
		fact_clear(slot);
	pthread_mutex_unlock(&cache_mu);
}

/*
 * The effect of the policy stored in f (none: POLICY_NO_MATCH) for a, as
 * resource arn; a document that does not parse denies.
 */
static enum policy_effect stored_policy(const struct fact *f, const char *arn_prefix,
					const char *bucket, const char *principal,
					const char *action, const char *arn)
{
	struct policy_request pr = {.principal = principal, .action = action, .resource = arn};
	struct bucket_policy *p;
	enum policy_effect eff;
	char msg[128];

	if (!f->policy)
		return POLICY_NO_MATCH;
	p = bucket_policy_parse_for(f->policy, f->policy_len, &POLICY_S3TABLES, arn_prefix,
				    bucket, msg, sizeof(msg));
	if (!p)
		return POLICY_DENY;
	eff = bucket_policy_eval(p, &pr);
	bucket_policy_free(p);
	return eff;
}

static bool granted(const struct s3_identity *id, const struct catalog_access *a)
{
	if (policy_action(a->action))
		return s3_identity_allows(id, S3_ACT_ADMIN, a->bucket);
	if (reads(a->action))
		return s3_identity_allows(id, S3_ACT_READ, a->bucket) ||
		       s3_identity_allows(id, S3_ACT_LIST, a->bucket);
	return s3_identity_allows(id, S3_ACT_WRITE, a->bucket);
}

bool catalog_authorize(filer_rpc *r, const char *region, const char *account,
		       const struct s3_identity *id, const struct catalog_access *a, char *msg,
		       size_t msglen)
{
	const char *who = id ? s3_identity_name(id) : NULL;
	struct fact bf = {0}, tf = {0};
	bool have_table = false;
	enum policy_effect eb = POLICY_NO_MATCH, et = POLICY_NO_MATCH;
	char *prefix, *arn = NULL, *path;
	bool ok;

	if (!id)
		return true;
	if (!a->bucket) /* ListTableBuckets: each identity sees the buckets it may */
		return true;
	prefix = xasprintf("arn:aws:s3tables:%s:%s:bucket/", region, account);
	path = xasprintf(TS_BUCKETS_DIR "/%s", a->bucket);
	if (read_fact(r, path, &bf) && a->table && a->ns) {
		char *tpath = ts_table_path(a->bucket, a->ns, a->table);
		have_table = read_fact(r, tpath, &tf);
		if (have_table && tf.arn)
			arn = xstrdup(tf.arn);
		free(tpath);
	}
	if (!arn)
		arn = xasprintf("%s%s", prefix, a->bucket);
	eb = stored_policy(&bf, prefix, a->bucket, who, a->action, arn);
	if (have_table)
		et = stored_policy(&tf, prefix, a->bucket, who, a->action, arn);
	if (eb == POLICY_DENY || et == POLICY_DENY)
		ok = false;
	else
		ok = eb == POLICY_ALLOW || et == POLICY_ALLOW || granted(id, a);
	if (!ok)
		snprintf(msg, msglen, "%s may not %s on %.300s%s", who, a->action, arn,
			 eb == POLICY_DENY || et == POLICY_DENY ? " (a resource policy denies it)"
								: "");
	free(arn);
	free(path);
	free(prefix);
	fact_clear(&bf);
	fact_clear(&tf);
	return ok;
}
