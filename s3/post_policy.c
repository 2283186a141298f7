/*
 * POST policy documents (post_policy.h).
 *
 * DESIGN: the document is decoded (base64, then JSON through yajl with its
 * own bounds) and walked once. Each condition names a field; a field the form
 * lacks counts as "" (S3's rule: a condition on an absent field fails unless
 * it allows the empty value). Which fields were named is remembered in a
 * bitmap over the form's fields, so the last check (every field covered) costs
 * nothing more. Names compare case-insensitively, values exactly.
 */
#include "config.h"
#include "s3/post_policy.h"
#include "http_util.h"
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "json.h"
#include "util.h"

/* Form fields a policy covers at most (S3 caps form fields at 20 KiB anyway). */
#define FIELDS_MAX 256

struct pctx {
	const char *bucket;
	const struct post_field *f;
	size_t n;
	bool covered[FIELDS_MAX];
	uint64_t min, max;
	char *msg;
	size_t msglen;
};

static enum s3_err fail(struct pctx *c, enum s3_err e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static enum s3_err fail(struct pctx *c, enum s3_err e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (c->msglen)
		vsnprintf(c->msg, c->msglen, fmt, ap);
	va_end(ap);
	return e;
}

/* The value of the field named name ("$" already stripped) and marks it covered; "" if absent. */
static const char *field(struct pctx *c, const char *name)
{
	if (!strcasecmp(name, "bucket"))
		return c->bucket;
	for (size_t i = 0; i < c->n; i++)
		if (!strcasecmp(c->f[i].name, name)) {
			c->covered[i] = true;
			return c->f[i].value;
		}
	return "";
}

/* {"name": "value"}: an exact match. */
static enum s3_err cond_object(struct pctx *c, yajl_val o)
{
	if (o->u.object.len != 1 || !YAJL_IS_STRING(o->u.object.values[0]))
		return fail(c, S3_INVALID_POLICY,
			    "an object condition names one field and a string");
	const char *name = o->u.object.keys[0], *want = o->u.object.values[0]->u.string;
	if (strcmp(field(c, name[0] == '$' ? name + 1 : name), want))
		return fail(c, S3_ACCESS_DENIED,
			    "Invalid according to Policy: Policy Condition failed: [\"eq\", "
			    "\"$%.64s\", "
			    "\"%.64s\"]",
			    name, want);
	return S3_OK;
}

/* ["eq"|"starts-with", "$name", "value"] or ["content-length-range", min, max]. */
static enum s3_err cond_array(struct pctx *c, yajl_val a)
{
	yajl_val *v = a->u.array.values;
	const char *op, *name, *want, *have;
	int64_t lo, hi;

	if (a->u.array.len != 3 || !YAJL_IS_STRING(v[0]))
		return fail(c, S3_INVALID_POLICY, "an array condition has three elements");
	op = v[0]->u.string;
	if (!strcasecmp(op, "content-length-range")) {
		if (!json_as_i64(v[1], &lo) || !json_as_i64(v[2], &hi) || lo < 0 || hi < lo)
			return fail(c, S3_INVALID_POLICY,
				    "content-length-range takes 0 <= min <= max");
		c->min = (uint64_t)lo;
		c->max = (uint64_t)hi;
		return S3_OK;
	}
	if (!YAJL_IS_STRING(v[1]) || !YAJL_IS_STRING(v[2]) || v[1]->u.string[0] != '$')
		return fail(c, S3_INVALID_POLICY, "a condition names a field as \"$name\"");
	name = v[1]->u.string + 1;
	want = v[2]->u.string;
	if (strcasecmp(op, "eq") && strcasecmp(op, "starts-with"))
		return fail(c, S3_INVALID_POLICY, "unknown condition \"%.32s\"", op);
	have = field(c, name);
	/* starts-with "" allows any value; Content-Type may list several, each checked */
	if (!strcasecmp(op, "eq") ? strcmp(have, want) : strncmp(have, want, strlen(want)))
		return fail(c, S3_ACCESS_DENIED,
			    "Invalid according to Policy: Policy Condition failed: [\"%s\", "
			    "\"$%.64s\", "
			    "\"%.64s\"]",
			    op, name, want);
	return S3_OK;
}

static bool exempt(const char *name)
{
	return !strcasecmp(name, "policy") || !strcasecmp(name, "x-amz-signature") ||
	       !strcasecmp(name, "file") || !strncasecmp(name, "x-ignore-", 9) ||
	       !strcasecmp(name, "AWSAccessKeyId") || !strcasecmp(name, "signature"); /* SigV2 */
}

enum s3_err post_policy_check(const char *policy_b64, size_t len, const char *bucket,
			      const struct post_field *f, size_t n, int64_t now, uint64_t *len_min,
			      uint64_t *len_max, char *msg, size_t msglen)
{
	struct pctx *c = xcalloc(1, sizeof(*c));
	unsigned char *json = NULL;
	yajl_val root = NULL, conds;
	const char *exp;
	char err[128];
	time_t until;
	enum s3_err e = S3_OK;
	int dl;

	c->bucket = bucket;
	c->f = f;
	c->n = n;
	c->max = UINT64_MAX;
	c->msg = msg;
	c->msglen = msglen;
	if (n > FIELDS_MAX) {
		e = fail(c, S3_INVALID_POLICY, "too many form fields");
		goto out;
	}
	if (!len || len > POST_POLICY_MAX || len % 4) {
		e = fail(c, S3_INVALID_POLICY, "the policy is not base64 of at most %u bytes",
			 POST_POLICY_MAX);
		goto out;
	}
	json = xmalloc(len / 4 * 3 + 1);
	dl = EVP_DecodeBlock(json, (const unsigned char *)policy_b64, (int)len);
	if (dl < 0) {
		e = fail(c, S3_INVALID_POLICY, "the policy is not base64");
		goto out;
	}
	while (dl > 0 && policy_b64[len - 1] == '=' && json[dl - 1] == 0 && len--)
		dl--; /* EVP_DecodeBlock counts the padding as zero bytes */
	root = json_parse((const char *)json, (size_t)dl, err, sizeof(err));
	if (!root || !YAJL_IS_OBJECT(root) || !json_get_str(root, "expiration", &exp) ||
	    !(conds = json_get(root, "conditions")) || !YAJL_IS_ARRAY(conds)) {
		e = fail(c, S3_INVALID_POLICY,
			 "the policy must be a JSON object with \"expiration\" and \"conditions\"");
		goto out;
	}
	if (!iso8601_parse(exp, &until)) {
		e = fail(c, S3_INVALID_POLICY, "the policy's expiration is not an ISO 8601 time");
		goto out;
	}
	if (until < now) {
		e = fail(c, S3_ACCESS_DENIED, "Invalid according to Policy: Policy expired.");
		goto out;
	}
	for (size_t i = 0; i < conds->u.array.len && !e; i++) {
		yajl_val v = conds->u.array.values[i];
		if (YAJL_IS_OBJECT(v))
			e = cond_object(c, v);
		else if (YAJL_IS_ARRAY(v))
			e = cond_array(c, v);
		else
			e = fail(c, S3_INVALID_POLICY, "a condition is an object or an array");
	}
	for (size_t i = 0; i < n && !e; i++)
		if (!c->covered[i] && !exempt(f[i].name))
			e = fail(c, S3_ACCESS_DENIED,
				 "Invalid according to Policy: Extra input fields: %.64s",
				 f[i].name);
	*len_min = c->min;
	*len_max = c->max;
out:
	if (root)
		yajl_tree_free(root);
	free(json);
	free(c);
	return e;
}
