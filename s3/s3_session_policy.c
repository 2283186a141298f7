/*
 * AssumeRole's session policy, mapped onto a session's scopes (s3_session.h).
 * Only what maps exactly is taken: anything else is refused, so a policy is
 * never read as allowing more than it says.
 */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>
#include "json.h"
#include "s3/s3_session.h"
#include "util.h"

#define ARN_S3 "arn:aws:s3:::"


/* A string or an array of strings: its count (0 when it is neither or holds a non-string). */
static size_t strings(yajl_val v, const char **out, size_t cap)
{
	if (YAJL_IS_STRING(v)) {
		out[0] = v->u.string;
		return 1;
	}
	if (!YAJL_IS_ARRAY(v) || !v->u.array.len || v->u.array.len > cap)
		return 0;
	for (size_t i = 0; i < v->u.array.len; i++) {
		if (!YAJL_IS_STRING(v->u.array.values[i]))
			return 0;
		out[i] = v->u.array.values[i]->u.string;
	}
	return v->u.array.len;
}

/* The S3_SESSION_* bit of an object action, S3_SESSION_LIST for s3:ListBucket, or 0. */
static unsigned action_bit(const char *a)
{
	if (!strcmp(a, "s3:GetObject"))
		return S3_SESSION_READ;
	if (!strcmp(a, "s3:PutObject"))
		return S3_SESSION_WRITE;
	if (!strcmp(a, "s3:DeleteObject"))
		return S3_SESSION_DELETE;
	if (!strcmp(a, "s3:ListBucket"))
		return S3_SESSION_LIST;
	return 0;
}

/* "prefix*" with its one '*' last: the prefix into out; false otherwise. */
static bool star_prefix(const char *s, char *out, size_t cap)
{
	size_t n = strlen(s);
	if (!n || s[n - 1] != '*' || n > cap)
		return false;
	snprintf(out, cap, "%.*s", (int)(n - 1), s);
	return !strchr(out, '*') && !strchr(out, '?');
}

/* The s3:prefix values of a ListBucket statement's Condition (none: ""), into pre[]. */
static size_t list_prefixes(yajl_val cond, const char **pre, size_t cap, char *msg,
			    size_t msglen)
{
	yajl_val like;
	if (!cond) {
		pre[0] = "*";
		return 1;
	}
	if (!YAJL_IS_OBJECT(cond) || cond->u.object.len != 1 ||
	    strcmp(cond->u.object.keys[0], "StringLike") ||
	    !YAJL_IS_OBJECT(like = cond->u.object.values[0]) || like->u.object.len != 1 ||
	    strcmp(like->u.object.keys[0], "s3:prefix")) {
		msg_fail(msg, msglen, "only a Condition of StringLike on s3:prefix can be mapped");
		return 0;
	}
	return strings(like->u.object.values[0], pre, cap);
}

static bool add(struct s3_session *s, const char *bucket, const char *prefix, unsigned bits,
		char *msg, size_t msglen)
{
	char m[160];
	if (s3_session_add_scope(s, bucket, prefix, bits, m, sizeof(m)))
		return true;
	return msg_fail(msg, msglen, "%s", m);
}

/* One resource for the statement's object actions (bits): "arn:aws:s3:::bucket/prefix*". */
static bool object_resource(struct s3_session *s, const char *res, unsigned bits, char *msg,
			    size_t msglen)
{
	const char *b = res + strlen(ARN_S3), *slash = strchr(b, '/');
	char bucket[S3_SESSION_BUCKET_MAX + 1], prefix[S3_SESSION_PREFIX_MAX + 2];
	if (!slash || slash == b || (size_t)(slash - b) > S3_SESSION_BUCKET_MAX ||
	    !star_prefix(slash + 1, prefix, sizeof(prefix)))
		return msg_fail(msg, msglen,
			    "resource \"%.128s\": object actions need arn:aws:s3:::bucket/prefix* "
			    "(one '*', last)",
			    res);
	snprintf(bucket, sizeof(bucket), "%.*s", (int)(slash - b), b);
	return add(s, bucket, prefix, bits, msg, msglen);
}

/* One resource for s3:ListBucket: "arn:aws:s3:::bucket", with the Condition's prefixes. */
static bool bucket_resource(struct s3_session *s, const char *res, yajl_val cond, char *msg,
			    size_t msglen)
{
	const char *b = res + strlen(ARN_S3), *pre[S3_SESSION_SCOPES_MAX];
	char prefix[S3_SESSION_PREFIX_MAX + 2];
	size_t np;
	if (!*b || strchr(b, '/') || strchr(b, '*') || strchr(b, '?'))
		return msg_fail(msg, msglen, "resource \"%.128s\": s3:ListBucket needs arn:aws:s3:::bucket",
			    res);
	np = list_prefixes(cond, pre, ARRAY_LEN(pre), msg, msglen);
	if (!np)
		return msglen && *msg ? false
				      : msg_fail(msg, msglen, "s3:prefix must be a string or a list of "
							  "strings");
	for (size_t i = 0; i < np; i++) {
		if (!star_prefix(pre[i], prefix, sizeof(prefix)))
			return msg_fail(msg, msglen,
				    "s3:prefix \"%.128s\" must be prefix* (one '*', last)", pre[i]);
		if (!add(s, b, prefix, S3_SESSION_LIST, msg, msglen))
			return false;
	}
	return true;
}

static bool statement(struct s3_session *s, yajl_val st, char *msg, size_t msglen)
{
	static const char *const keys[] = {"Sid", "Effect", "Action", "Resource", "Condition"};
	const char *acts[16], *res[16], *effect;
	unsigned obj = 0, list = 0;
	yajl_val cond;
	size_t na, nr;

	if (!YAJL_IS_OBJECT(st))
		return msg_fail(msg, msglen, "a statement must be an object");
	for (size_t i = 0; i < st->u.object.len; i++) {
		bool known = false;
		for (size_t k = 0; k < ARRAY_LEN(keys) && !known; k++)
			known = !strcmp(keys[k], st->u.object.keys[i]);
		if (!known)
			return msg_fail(msg, msglen, "\"%.64s\" in a statement cannot be mapped",
				    st->u.object.keys[i]);
	}
	if (!json_get_str(st, "Effect", &effect) || strcmp(effect, "Allow"))
		return msg_fail(msg, msglen, "only Allow statements can be mapped");
	na = strings(json_get(st, "Action"), acts, ARRAY_LEN(acts));
	nr = strings(json_get(st, "Resource"), res, ARRAY_LEN(res));
	if (!na || !nr)
		return msg_fail(msg, msglen, "a statement needs Action and Resource (strings)");
	for (size_t i = 0; i < na; i++) {
		unsigned bit = action_bit(acts[i]);
		if (!bit)
			return msg_fail(msg, msglen,
				    "action \"%.64s\" cannot be mapped (s3:GetObject, s3:PutObject, "
				    "s3:DeleteObject, s3:ListBucket)",
				    acts[i]);
		*(bit == S3_SESSION_LIST ? &list : &obj) |= bit;
	}
	cond = json_get(st, "Condition");
	/* an object request has no s3:prefix: such a statement would allow it nothing */
	if (cond && obj)
		return msg_fail(msg, msglen, "a Condition goes only with s3:ListBucket here");
	for (size_t i = 0; i < nr; i++) {
		bool object;
		if (strncmp(res[i], ARN_S3, strlen(ARN_S3)))
			return msg_fail(msg, msglen, "resource \"%.128s\" is not an arn:aws:s3::: one",
				    res[i]);
		object = strchr(res[i] + strlen(ARN_S3), '/') != NULL;
		/* an object action on a bucket resource (or the reverse) matches nothing */
		if (object && obj && !object_resource(s, res[i], obj, msg, msglen))
			return false;
		if (!object && list && !bucket_resource(s, res[i], cond, msg, msglen))
			return false;
		if (object ? !obj : !list)
			return msg_fail(msg, msglen, "resource \"%.128s\" matches none of the statement's "
						 "actions",
				    res[i]);
	}
	return true;
}

bool s3_session_policy(const char *text, size_t len, struct s3_session *s, char *msg,
		       size_t msglen)
{
	char err[128] = "", *copy = xstrndup(text, len);
	yajl_val root = yajl_tree_parse(copy, err, sizeof(err)), sts;
	const char *version;
	bool ok = true;

	free(copy);
	if (msglen)
		*msg = '\0';
	if (!root || !YAJL_IS_OBJECT(root)) {
		yajl_tree_free(root);
		return msg_fail(msg, msglen, "the policy is not a JSON object");
	}
	for (size_t i = 0; i < root->u.object.len && ok; i++)
		if (strcmp(root->u.object.keys[i], "Version") &&
		    strcmp(root->u.object.keys[i], "Statement") &&
		    strcmp(root->u.object.keys[i], "Id"))
			ok = msg_fail(msg, msglen, "\"%.64s\" in a policy cannot be mapped",
				  root->u.object.keys[i]);
	if (ok && json_get(root, "Version") &&
	    (!json_get_str(root, "Version", &version) || strcmp(version, "2012-10-17")))
		ok = msg_fail(msg, msglen, "Version must be \"2012-10-17\"");
	sts = json_get(root, "Statement");
	if (ok && YAJL_IS_OBJECT(sts))
		ok = statement(s, sts, msg, msglen);
	else if (ok && YAJL_IS_ARRAY(sts) && sts->u.array.len)
		for (size_t i = 0; i < sts->u.array.len && ok; i++)
			ok = statement(s, sts->u.array.values[i], msg, msglen);
	else if (ok)
		ok = msg_fail(msg, msglen, "a policy needs a Statement");
	yajl_tree_free(root);
	if (ok && !s->n)
		ok = msg_fail(msg, msglen, "the policy allows nothing");
	return ok;
}
