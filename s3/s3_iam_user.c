/*
 * The stored document of an IAM API user (s3_iam_user.h).
 */
#include "config.h"
#include "s3/s3_iam_user.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/crypto.h>
#include "json.h"
#include "s3/bucket_policy.h"
#include "util.h"

bool s3_iam_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > S3_IAM_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') && !strchr("+=,.@_-", s[i]))
			return false;
	return true;
}

void s3_iam_user_clear(struct s3_iam_user *u)
{
	for (size_t i = 0; i < u->n_pols; i++) {
		free(u->pol_name[i]);
		free(u->pol_doc[i]);
	}
	OPENSSL_cleanse(u, sizeof(*u));
	memset(u, 0, sizeof(*u));
}

int s3_iam_user_policy(const struct s3_iam_user *u, const char *name)
{
	for (size_t i = 0; i < u->n_pols; i++)
		if (!strcmp(u->pol_name[i], name))
			return (int)i;
	return -1;
}

size_t s3_iam_user_policy_bytes(const struct s3_iam_user *u)
{
	size_t n = 0;
	for (size_t i = 0; i < u->n_pols; i++)
		n += strlen(u->pol_doc[i]);
	return n;
}

/* A bounded string member of printable ASCII (ids, times, keys: all made here) copied
   into out[cap]. */
static bool copy_str(yajl_val obj, const char *key, char *out, size_t cap, bool required)
{
	const char *s;
	if (!json_get_str(obj, key, &s))
		return !required && !json_get(obj, key);
	if (strlen(s) >= cap)
		return false;
	for (const char *p = s; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			return false;
	memcpy(out, s, strlen(s) + 1);
	return true;
}

static bool parse_key(yajl_val v, struct s3_iam_key *k, char *msg, size_t msglen)
{
	char status[16] = "";
	if (!YAJL_IS_OBJECT(v) || !copy_str(v, "accessKey", k->id, sizeof(k->id), true) ||
	    !copy_str(v, "secretKey", k->secret, sizeof(k->secret), true) ||
	    !copy_str(v, "status", status, sizeof(status), true) ||
	    !copy_str(v, "created", k->created, sizeof(k->created), false))
		return msg_fail(msg, msglen, "a key needs accessKey, secretKey and status");
	if (strlen(k->id) != S3_IAM_AK_LEN || strlen(k->secret) != S3_IAM_SECRET_LEN)
		return msg_fail(msg, msglen, "a key is %d characters, its secret %d",
				S3_IAM_AK_LEN, S3_IAM_SECRET_LEN);
	if (strcmp(status, "Active") && strcmp(status, "Inactive"))
		return msg_fail(msg, msglen, "a key's status is Active or Inactive");
	k->active = !strcmp(status, "Active");
	return true;
}

static bool parse_policy(yajl_val v, struct s3_iam_user *u, char *msg, size_t msglen)
{
	const char *name, *doc;
	struct bucket_policy *p;
	char why[160];
	if (!YAJL_IS_OBJECT(v) || !json_get_str(v, "name", &name) ||
	    !json_get_str(v, "document", &doc) || !s3_iam_name_ok(name))
		return msg_fail(msg, msglen, "a policy needs a valid name and a document");
	if (s3_iam_user_policy(u, name) >= 0)
		return msg_fail(msg, msglen, "policy %s is there twice", name);
	p = bucket_policy_parse_identity(doc, strlen(doc), why, sizeof(why));
	if (!p)
		return msg_fail(msg, msglen, "policy %s: %s", name, why);
	bucket_policy_free(p);
	u->pol_name[u->n_pols] = xstrdup(name);
	u->pol_doc[u->n_pols++] = xstrdup(doc);
	return true;
}

bool s3_iam_user_parse(const char *text, size_t len, struct s3_iam_user *u, char *msg,
		       size_t msglen)
{
	yajl_val root = NULL, keys, pols;
	char err[128];
	bool ok = false;

	memset(u, 0, sizeof(*u));
	if (len > S3_IAM_USER_DOC_MAX) {
		msg_fail(msg, msglen, "larger than %u bytes", S3_IAM_USER_DOC_MAX);
		goto out;
	}
	root = json_parse(text, len, err, sizeof(err));
	if (!root) {
		msg_fail(msg, msglen, "not JSON: %s", err);
		goto out;
	}
	if (!YAJL_IS_OBJECT(root) || !copy_str(root, "name", u->name, sizeof(u->name), true) ||
	    !s3_iam_name_ok(u->name) || !copy_str(root, "id", u->id, sizeof(u->id), false) ||
	    !copy_str(root, "created", u->created, sizeof(u->created), false)) {
		msg_fail(msg, msglen, "a user needs a valid \"name\"");
		goto out;
	}
	keys = json_get(root, "keys");
	pols = json_get(root, "policies");
	if ((keys && !YAJL_IS_ARRAY(keys)) || (pols && !YAJL_IS_ARRAY(pols))) {
		msg_fail(msg, msglen, "\"keys\" and \"policies\" are arrays");
		goto out;
	}
	if ((keys && keys->u.array.len > S3_IAM_KEYS_MAX) ||
	    (pols && pols->u.array.len > S3_IAM_POLICIES_MAX)) {
		msg_fail(msg, msglen, "at most %d keys and %d policies", S3_IAM_KEYS_MAX,
			 S3_IAM_POLICIES_MAX);
		goto out;
	}
	for (size_t i = 0; keys && i < keys->u.array.len; i++) {
		if (!parse_key(keys->u.array.values[i], &u->keys[i], msg, msglen))
			goto out;
		u->n_keys++;
	}
	for (size_t i = 0; pols && i < pols->u.array.len; i++)
		if (!parse_policy(pols->u.array.values[i], u, msg, msglen))
			goto out;
	ok = true;
out:
	if (root)
		yajl_tree_free(root);
	return ok;
}

void s3_iam_user_write(const struct s3_iam_user *u, buf *out)
{
	json_w *w = jw_new(out, false);
	jw_obj_begin(w);
	jw_kv_str(w, "name", u->name);
	jw_kv_str(w, "id", u->id);
	jw_kv_str(w, "created", u->created);
	jw_key(w, "keys");
	jw_arr_begin(w);
	for (size_t i = 0; i < u->n_keys; i++) {
		jw_obj_begin(w);
		jw_kv_str(w, "accessKey", u->keys[i].id);
		jw_kv_str(w, "secretKey", u->keys[i].secret);
		jw_kv_str(w, "status", u->keys[i].active ? "Active" : "Inactive");
		jw_kv_str(w, "created", u->keys[i].created);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "policies");
	jw_arr_begin(w);
	for (size_t i = 0; i < u->n_pols; i++) {
		jw_obj_begin(w);
		jw_kv_str(w, "name", u->pol_name[i]);
		jw_kv_str(w, "document", u->pol_doc[i]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	jw_free(w);
}
