/* Authorization of catalog requests: see catalog_authz.h. */
#include "config.h"
#include "catalog/catalog_authz.h"

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
 * The effect of the policy stored on entry e (none: POLICY_NO_MATCH) for a,
 * as resource arn; a document that does not parse denies.
 */
static enum policy_effect stored_policy(const struct filer_entry *e, const char *arn_prefix,
					const char *bucket, const char *principal,
					const char *action, const char *arn)
{
	const struct filer_xattr *x = e ? filer_entry_xattr_get(e, TS_XATTR_POLICY) : NULL;
	struct policy_request pr = {.principal = principal, .action = action, .resource = arn};
	struct bucket_policy *p;
	enum policy_effect eff;
	char msg[128];

	if (!x)
		return POLICY_NO_MATCH;
	p = bucket_policy_parse_for((const char *)x->value, x->value_len, &POLICY_S3TABLES,
				    arn_prefix, bucket, msg, sizeof(msg));
	if (!p)
		return POLICY_DENY;
	eff = bucket_policy_eval(p, &pr);
	bucket_policy_free(p);
	return eff;
}

/* The ARN stored in table entry e, or NULL (caller frees). */
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
	struct filer_entry *be = NULL, *te = NULL;
	enum policy_effect eb = POLICY_NO_MATCH, et = POLICY_NO_MATCH;
	char *prefix, *arn = NULL, *path;
	bool ok;

	if (!id)
		return true;
	if (!a->bucket) /* ListTableBuckets: each identity sees the buckets it may */
		return true;
	prefix = xasprintf("arn:aws:s3tables:%s:%s:bucket/", region, account);
	path = xasprintf(TS_BUCKETS_DIR "/%s", a->bucket);
	if (filer_meta_lookup(r, path, &be) == WFS_OK && a->table && a->ns) {
		char *tpath = ts_table_path(a->bucket, a->ns, a->table);
		if (filer_meta_lookup(r, tpath, &te) == WFS_OK)
			arn = table_arn(te);
		free(tpath);
	}
	if (!arn)
		arn = xasprintf("%s%s", prefix, a->bucket);
	eb = stored_policy(be, prefix, a->bucket, who, a->action, arn);
	if (te)
		et = stored_policy(te, prefix, a->bucket, who, a->action, arn);
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
	filer_entry_free(be);
	filer_entry_free(te);
	return ok;
}
