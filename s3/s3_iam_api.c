/*
 * The IAM API of the gateway (-iam.port; docs/s3-gateway.md): the query
 * protocol's users, access keys and inline user policies, with the users
 * stored in the filer (s3_iam_store.h).
 *
 * DESIGN: a call is a form-encoded POST signed for service "iam" by an
 * identity with the Admin action (the file's, or weedfs mini's). A change
 * reads the user's entry, changes it and writes it back at the version read,
 * again from the read when another gateway changed it meanwhile; then this
 * gateway rebuilds its identities at once, and the others on the filer's
 * event about it. Answers and errors are IAM's XML.
 */
#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include "http_util.h"
#include "log.h"
#include "s3/query_form.h"
#include "s3/s3_iam_store.h"
#include "s3/s3_int.h"
#include "s3/s3_session_gw.h"
#include "util.h"

#define IAM_NS       "https://iam.amazonaws.com/doc/2010-05-08/"
#define IAM_VERSION  "2010-05-08"
#define IAM_ACCOUNT  "000000000000"
#define IAM_RETRIES  16 /* writes lost to another gateway's, before giving up */

static void iam_error(struct s3_req *r, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void iam_error(struct s3_req *r, int status, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s3_query_error(r, IAM_NS, status, code, msg);
}

void s3_iam_auth_failed(struct s3_req *r) { s3_query_auth_failed(r, IAM_NS); }

static void no_such_user(struct s3_req *r, const char *name)
{
	iam_error(r, 404, "NoSuchEntity", "The user with name %.64s cannot be found.", name);
}

static void no_such_policy(struct s3_req *r, const char *name)
{
	iam_error(r, 404, "NoSuchEntity", "The user policy with name %.64s cannot be found.",
		  name);
}

static void store_error(struct s3_req *r, wfs_err rc)
{
	iam_error(r, rc == WFS_EUNAVAIL ? 503 : 500, "ServiceFailure",
		  "The identities in the filer could not be read or written: %s", wfs_strerror(rc));
}

static void now_iso(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* n characters of base32 (A-Z, 2-7) from the CSPRNG after prefix: false without random
   bytes. */
static bool random_id(char *out, const char *prefix, size_t n)
{
	static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
	uint8_t rnd[32];
	size_t p = strlen(prefix);
	if (n > sizeof(rnd) || RAND_bytes(rnd, (int)n) != 1)
		return false;
	memcpy(out, prefix, p);
	for (size_t i = 0; i < n; i++)
		out[p + i] = b32[rnd[i] & 31];
	out[p + n] = '\0';
	return true;
}

/* 40 characters of base64 from 30 random bytes. */
static bool random_secret(char out[S3_IAM_SECRET_LEN + 1])
{
	uint8_t rnd[30];
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return false;
	EVP_EncodeBlock((unsigned char *)out, rnd, sizeof(rnd));
	OPENSSL_cleanse(rnd, sizeof(rnd));
	return strlen(out) == S3_IAM_SECRET_LEN;
}

static void user_xml(xml_w *w, const char *elem, const char *name, const char *id,
		     const char *created)
{
	xml_open(w, elem);
	xml_elem(w, "Path", "/");
	xml_elem(w, "UserName", name);
	xml_elem(w, "UserId", id && *id ? id : name);
	xml_elem_fmt(w, "Arn", "arn:aws:iam::%s:user/%s", IAM_ACCOUNT, name);
	xml_elem(w, "CreateDate", created && *created ? created : "1970-01-01T00:00:00Z");
	xml_close(w);
}

/* An answer without a result element (the Delete and Put calls). */
static void empty_ok(struct s3_req *r, const char *action)
{
	xml_w *w = xml_w_new(&r->body);
	s3_query_begin(w, IAM_NS, action, false);
	s3_query_end(r, w, false);
}

/* The UserName parameter, valid, or the caller's name; NULL with r's answer. */
static const char *user_param(struct s3_req *r, const struct query_form *f, bool required)
{
	const char *u = query_form_get(f, "UserName");
	if (!u && !required)
		u = s3_identity_name(r->who);
	if (!u) {
		iam_error(r, 400, "ValidationError", "UserName is required");
		return NULL;
	}
	if (!s3_iam_name_ok(u)) {
		iam_error(r, 400, "ValidationError",
			  "UserName must be 1..64 characters of [A-Za-z0-9+=,.@_-]");
		return NULL;
	}
	return u;
}

/* A change of user name: fn changes u (0) or answers r and returns nonzero. */
typedef int (*change_fn)(struct s3_req *r, struct s3_iam_user *u, void *arg);

/* Reads, changes and writes user name back at the version read; true when written. */
static bool change_user(struct s3_req *r, const char *name, change_fn fn, void *arg)
{
	struct s3_iam_store *st = r->g->iam_store;
	for (int attempt = 0; attempt < IAM_RETRIES; attempt++) {
		struct s3_iam_user u;
		char etag[17];
		wfs_err rc = s3_iam_store_read(st, name, &u, etag);
		if (rc == WFS_ENOENT) {
			no_such_user(r, name);
		} else if (rc) {
			store_error(r, rc);
		} else if (!fn(r, &u, arg)) {
			rc = s3_iam_store_write(st, &u, etag);
			if (rc == WFS_EPRECOND || rc == WFS_ENOENT) {
				s3_iam_user_clear(&u);
				continue; /* another gateway's change came first: again */
			}
			if (rc)
				store_error(r, rc);
		} else {
			rc = WFS_EINVAL;
		}
		s3_iam_user_clear(&u);
		if (!rc)
			s3_iam_store_reload(st);
		return !rc;
	}
	iam_error(r, 409, "ConcurrentModification", "User %.64s kept changing; try again", name);
	return false;
}

/* ---- users ---- */

static void create_user(struct s3_req *r, const struct query_form *f)
{
	const char *name = user_param(r, f, true);
	struct s3_iam_user u = {0};
	wfs_err rc;
	xml_w *w;

	if (!name)
		return;
	if (s3_iam_store_is_static(r->g->iam_store, name)) {
		iam_error(r, 409, "EntityAlreadyExists",
			  "User with name %.64s already exists (in the identities file).", name);
		return;
	}
	snprintf(u.name, sizeof(u.name), "%s", name);
	now_iso(u.created);
	if (!random_id(u.id, "AIDA", 17)) {
		iam_error(r, 500, "ServiceFailure", "No random bytes for a user id");
		return;
	}
	rc = s3_iam_store_write(r->g->iam_store, &u, NULL);
	if (rc == WFS_EEXIST) {
		iam_error(r, 409, "EntityAlreadyExists", "User with name %.64s already exists.",
			  name);
		goto out;
	}
	if (rc) {
		store_error(r, rc);
		goto out;
	}
	s3_iam_store_reload(r->g->iam_store);
	w = xml_w_new(&r->body);
	s3_query_begin(w, IAM_NS, "CreateUser", true);
	user_xml(w, "User", u.name, u.id, u.created);
	s3_query_end(r, w, true);
out:
	s3_iam_user_clear(&u);
}


/* Reads user name into u (etag: its version); false after answering NoSuchEntity or the
 * store's error. */
static bool read_user(struct s3_req *r, const char *name, struct s3_iam_user *u, char *etag)
{
	wfs_err rc = s3_iam_store_read(r->g->iam_store, name, u, etag);
	if (rc == WFS_ENOENT)
		no_such_user(r, name);
	else if (rc)
		store_error(r, rc);
	return rc == WFS_OK;
}
static void get_user(struct s3_req *r, const struct query_form *f)
{
	const char *name = user_param(r, f, false);
	struct s3_iam_user u;
	char etag[17];
	xml_w *w;

	if (!name)
		return;
	if (s3_iam_store_is_static(r->g->iam_store, name)) {
		w = xml_w_new(&r->body);
		s3_query_begin(w, IAM_NS, "GetUser", true);
		user_xml(w, "User", name, NULL, NULL);
		s3_query_end(r, w, true);
		return;
	}
	if (!read_user(r, name, &u, etag))
		return;
	w = xml_w_new(&r->body);
	s3_query_begin(w, IAM_NS, "GetUser", true);
	user_xml(w, "User", u.name, u.id, u.created);
	s3_query_end(r, w, true);
	s3_iam_user_clear(&u);
}

static void list_users(struct s3_req *r, const struct query_form *f)
{
	struct s3_iam_user *v;
	size_t n;
	wfs_err rc = s3_iam_store_users(r->g->iam_store, &v, &n);
	xml_w *w;
	(void)f;
	if (rc) {
		store_error(r, rc);
		return;
	}
	w = xml_w_new(&r->body);
	s3_query_begin(w, IAM_NS, "ListUsers", true);
	xml_open(w, "Users");
	for (size_t i = 0; i < n; i++) {
		user_xml(w, "member", v[i].name, v[i].id, v[i].created);
		s3_iam_user_clear(&v[i]);
	}
	xml_close(w);
	xml_elem(w, "IsTruncated", "false");
	s3_query_end(r, w, true);
	free(v);
}

static void delete_user(struct s3_req *r, const struct query_form *f)
{
	const char *name = user_param(r, f, true);
	struct s3_iam_user u;
	char etag[17];
	wfs_err rc;

	if (!name)
		return;
	for (int attempt = 0; attempt < IAM_RETRIES; attempt++) {
		rc = s3_iam_store_read(r->g->iam_store, name, &u, etag);
		if (rc == WFS_ENOENT) {
			no_such_user(r, name);
			return;
		}
		if (rc) {
			store_error(r, rc);
			return;
		}
		if (u.n_keys || u.n_pols) {
			iam_error(r, 409, "DeleteConflict",
				  "Cannot delete entity, must %s first.",
				  u.n_keys ? "delete access keys" : "delete policies");
			s3_iam_user_clear(&u);
			return;
		}
		s3_iam_user_clear(&u);
		/* only the version seen empty: a key added meanwhile keeps the user */
		rc = s3_iam_store_delete(r->g->iam_store, name, etag);
		if (rc == WFS_EPRECOND)
			continue;
		if (rc == WFS_ENOENT) {
			no_such_user(r, name);
			return;
		}
		if (rc) {
			store_error(r, rc);
			return;
		}
		s3_iam_store_reload(r->g->iam_store);
		empty_ok(r, "DeleteUser");
		return;
	}
	iam_error(r, 409, "ConcurrentModification", "User %.64s kept changing; try again", name);
}

/* ---- access keys ---- */

struct key_change {
	const char *key_id;
	bool active;
	struct s3_iam_key made;
};

static int key_create(struct s3_req *r, struct s3_iam_user *u, void *arg)
{
	struct key_change *kc = arg;
	struct s3_iam_key *k;
	if (u->n_keys == S3_IAM_KEYS_MAX) {
		iam_error(r, 409, "LimitExceeded", "Cannot exceed quota for AccessKeysPerUser: %d",
			  S3_IAM_KEYS_MAX);
		return -1;
	}
	k = &u->keys[u->n_keys];
	if (!random_id(k->id, "AKIA", 16) || !random_secret(k->secret)) {
		iam_error(r, 500, "ServiceFailure", "No random bytes for an access key");
		return -1;
	}
	k->active = true;
	now_iso(k->created);
	kc->made = *k;
	u->n_keys++;
	return 0;
}

/* The key of u named kc->key_id, or NULL with r's NoSuchEntity. */
static struct s3_iam_key *key_find(struct s3_req *r, struct s3_iam_user *u,
				   const struct key_change *kc)
{
	for (size_t i = 0; i < u->n_keys; i++)
		if (!strcmp(u->keys[i].id, kc->key_id))
			return &u->keys[i];
	iam_error(r, 404, "NoSuchEntity", "The Access Key with id %.32s cannot be found.",
		  kc->key_id);
	return NULL;
}

static int key_delete(struct s3_req *r, struct s3_iam_user *u, void *arg)
{
	struct s3_iam_key *k = key_find(r, u, arg);
	if (!k)
		return -1;
	memmove(k, k + 1, (size_t)(&u->keys[u->n_keys] - (k + 1)) * sizeof(*k));
	u->n_keys--;
	return 0;
}

static int key_update(struct s3_req *r, struct s3_iam_user *u, void *arg)
{
	struct key_change *kc = arg;
	struct s3_iam_key *k = key_find(r, u, kc);
	if (!k)
		return -1;
	k->active = kc->active;
	return 0;
}

/* AccessKeyId, present; NULL with r's answer. */
static const char *key_param(struct s3_req *r, const struct query_form *f)
{
	const char *k = query_form_get(f, "AccessKeyId");
	if (!k || !*k || strlen(k) > 128)
		iam_error(r, 400, "ValidationError", "AccessKeyId is required");
	return k && *k && strlen(k) <= 128 ? k : NULL;
}

static void create_access_key(struct s3_req *r, const struct query_form *f)
{
	const char *name = user_param(r, f, false);
	struct key_change kc = {0};
	xml_w *w;
	if (!name || !change_user(r, name, key_create, &kc))
		goto out;
	w = xml_w_new(&r->body);
	s3_query_begin(w, IAM_NS, "CreateAccessKey", true);
	xml_open(w, "AccessKey");
	xml_elem(w, "UserName", name);
	xml_elem(w, "AccessKeyId", kc.made.id);
	xml_elem(w, "Status", "Active");
	xml_elem(w, "SecretAccessKey", kc.made.secret);
	xml_elem(w, "CreateDate", kc.made.created);
	xml_close(w);
	s3_query_end(r, w, true);
out:
	OPENSSL_cleanse(&kc, sizeof(kc));
}

static void list_access_keys(struct s3_req *r, const struct query_form *f)
{
	const char *name = user_param(r, f, false);
	struct s3_iam_user u;
	char etag[17];
	xml_w *w;

	if (!name)
		return;
	if (!read_user(r, name, &u, etag))
		return;
	w = xml_w_new(&r->body);
	s3_query_begin(w, IAM_NS, "ListAccessKeys", true);
	xml_elem(w, "UserName", name);
	xml_open(w, "AccessKeyMetadata");
	for (size_t i = 0; i < u.n_keys; i++) {
		xml_open(w, "member");
		xml_elem(w, "UserName", name);
		xml_elem(w, "AccessKeyId", u.keys[i].id);
		xml_elem(w, "Status", u.keys[i].active ? "Active" : "Inactive");
		xml_elem(w, "CreateDate", u.keys[i].created);
		xml_close(w);
	}
	xml_close(w);
	xml_elem(w, "IsTruncated", "false");
	s3_query_end(r, w, true);
	s3_iam_user_clear(&u);
}

static void delete_access_key(struct s3_req *r, const struct query_form *f)
{
	const char *name = user_param(r, f, false);
	struct key_change kc = {.key_id = key_param(r, f)};
	if (name && kc.key_id && change_user(r, name, key_delete, &kc))
		empty_ok(r, "DeleteAccessKey");
}

static void update_access_key(struct s3_req *r, const struct query_form *f)
{
	const char *name = user_param(r, f, false), *status = query_form_get(f, "Status");
	struct key_change kc = {.key_id = key_param(r, f)};
	if (!name || !kc.key_id)
		return;
	if (!status || (strcmp(status, "Active") && strcmp(status, "Inactive"))) {
		iam_error(r, 400, "ValidationError", "Status must be Active or Inactive");
		return;
	}
	kc.active = !strcmp(status, "Active");
	if (change_user(r, name, key_update, &kc))
		empty_ok(r, "UpdateAccessKey");
}

/* ---- inline user policies ---- */

struct policy_change {
	const char *name, *doc; /* doc NULL: delete */
};

static int policy_put(struct s3_req *r, struct s3_iam_user *u, void *arg)
{
	struct policy_change *pc = arg;
	int i = s3_iam_user_policy(u, pc->name);
	size_t bytes = s3_iam_user_policy_bytes(u) + strlen(pc->doc) -
		       (i >= 0 ? strlen(u->pol_doc[i]) : 0);
	if (bytes > S3_IAM_POLICY_BYTES) {
		iam_error(r, 409, "LimitExceeded",
			  "Maximum policy size of %d bytes exceeded for user %.64s",
			  S3_IAM_POLICY_BYTES, u->name);
		return -1;
	}
	if (i < 0 && u->n_pols == S3_IAM_POLICIES_MAX) {
		iam_error(r, 409, "LimitExceeded", "Cannot exceed quota for PoliciesPerUser: %d",
			  S3_IAM_POLICIES_MAX);
		return -1;
	}
	if (i >= 0) {
		free(u->pol_doc[i]);
		u->pol_doc[i] = xstrdup(pc->doc);
	} else {
		u->pol_name[u->n_pols] = xstrdup(pc->name);
		u->pol_doc[u->n_pols++] = xstrdup(pc->doc);
	}
	return 0;
}

static int policy_delete(struct s3_req *r, struct s3_iam_user *u, void *arg)
{
	struct policy_change *pc = arg;
	int i = s3_iam_user_policy(u, pc->name);
	if (i < 0) {
		no_such_policy(r, pc->name);
		return -1;
	}
	free(u->pol_name[i]);
	free(u->pol_doc[i]);
	memmove(&u->pol_name[i], &u->pol_name[i + 1], (u->n_pols - (size_t)i - 1) * sizeof(char *));
	memmove(&u->pol_doc[i], &u->pol_doc[i + 1], (u->n_pols - (size_t)i - 1) * sizeof(char *));
	u->n_pols--;
	return 0;
}

/* PolicyName, valid; NULL with r's answer. */
static const char *policy_param(struct s3_req *r, const struct query_form *f)
{
	const char *p = query_form_get(f, "PolicyName");
	if (!p || !s3_iam_name_ok(p)) {
		iam_error(r, 400, "ValidationError",
			  "PolicyName must be 1..64 characters of [A-Za-z0-9+=,.@_-]");
		return NULL;
	}
	return p;
}

static void put_user_policy(struct s3_req *r, const struct query_form *f)
{
	const char *name = user_param(r, f, true), *doc = query_form_get(f, "PolicyDocument");
	struct policy_change pc = {.name = policy_param(r, f), .doc = doc};
	struct bucket_policy *p;
	char msg[200];
	if (!name || !pc.name)
		return;
	if (!doc || !*doc) {
		iam_error(r, 400, "ValidationError", "PolicyDocument is required");
		return;
	}
	if (strlen(doc) > S3_IAM_POLICY_BYTES) {
		iam_error(r, 409, "LimitExceeded", "Maximum policy size of %d bytes exceeded",
			  S3_IAM_POLICY_BYTES);
		return;
	}
	p = bucket_policy_parse_identity(doc, strlen(doc), msg, sizeof(msg));
	if (!p) {
		iam_error(r, 400, "MalformedPolicyDocument", "%s", msg);
		return;
	}
	bucket_policy_free(p);
	if (change_user(r, name, policy_put, &pc))
		empty_ok(r, "PutUserPolicy");
}

static void get_user_policy(struct s3_req *r, const struct query_form *f)
{
	const char *name = user_param(r, f, true), *pname = policy_param(r, f);
	struct s3_iam_user u;
	char etag[17];
	buf enc = BUF_INIT;
	xml_w *w;
	int i;

	if (!name || !pname)
		return;
	if (!read_user(r, name, &u, etag))
		return;
	i = s3_iam_user_policy(&u, pname);
	if (i < 0) {
		no_such_policy(r, pname);
		goto out;
	}
	/* IAM returns the document URL-encoded (RFC 3986) */
	url_encode_query(u.pol_doc[i], &enc);
	buf_append_byte(&enc, '\0');
	w = xml_w_new(&r->body);
	s3_query_begin(w, IAM_NS, "GetUserPolicy", true);
	xml_elem(w, "UserName", name);
	xml_elem(w, "PolicyName", pname);
	xml_elem(w, "PolicyDocument", enc.data);
	s3_query_end(r, w, true);
out:
	buf_free(&enc);
	s3_iam_user_clear(&u);
}

static void list_user_policies(struct s3_req *r, const struct query_form *f)
{
	const char *name = user_param(r, f, true);
	struct s3_iam_user u;
	char etag[17];
	xml_w *w;

	if (!name)
		return;
	if (!read_user(r, name, &u, etag))
		return;
	w = xml_w_new(&r->body);
	s3_query_begin(w, IAM_NS, "ListUserPolicies", true);
	xml_open(w, "PolicyNames");
	for (size_t i = 0; i < u.n_pols; i++)
		xml_elem(w, "member", u.pol_name[i]);
	xml_close(w);
	xml_elem(w, "IsTruncated", "false");
	s3_query_end(r, w, true);
	s3_iam_user_clear(&u);
}

static void delete_user_policy(struct s3_req *r, const struct query_form *f)
{
	const char *name = user_param(r, f, true);
	struct policy_change pc = {.name = policy_param(r, f)};
	if (name && pc.name && change_user(r, name, policy_delete, &pc))
		empty_ok(r, "DeleteUserPolicy");
}

/* ---- the call ---- */

static const struct {
	const char *action;
	void (*fn)(struct s3_req *r, const struct query_form *f);
	const char *params[5]; /* besides Action and Version */
} actions[] = {
	{"CreateUser", create_user, {"UserName", "Path"}},
	{"GetUser", get_user, {"UserName"}},
	{"ListUsers", list_users, {"PathPrefix", "Marker", "MaxItems"}},
	{"DeleteUser", delete_user, {"UserName"}},
	{"CreateAccessKey", create_access_key, {"UserName"}},
	{"ListAccessKeys", list_access_keys, {"UserName", "Marker", "MaxItems"}},
	{"DeleteAccessKey", delete_access_key, {"UserName", "AccessKeyId"}},
	{"UpdateAccessKey", update_access_key, {"UserName", "AccessKeyId", "Status"}},
	{"PutUserPolicy", put_user_policy, {"UserName", "PolicyName", "PolicyDocument"}},
	{"GetUserPolicy", get_user_policy, {"UserName", "PolicyName"}},
	{"ListUserPolicies", list_user_policies, {"UserName", "Marker", "MaxItems"}},
	{"DeleteUserPolicy", delete_user_policy, {"UserName", "PolicyName"}},
};

void s3_iam_api(struct s3_req *r)
{
	struct query_form f;
	const char *action, *version, *bad;
	char msg[128];

	if (!r->who || r->session) {
		iam_error(r, 403, "MissingAuthenticationToken",
			  "Request is missing Authentication Token");
		return;
	}
	if (!s3_identity_allows(r->who, S3_ACT_ADMIN, NULL) || s3_identity_stored(r->who)) {
		iam_error(r, 403, "AccessDenied",
			  "User %.64s is not authorized to call the IAM API (it needs the Admin "
			  "action in the identities file)",
			  s3_identity_name(r->who));
		return;
	}
	if (!s3_query_body_signed(r)) {
		iam_error(r, 400, "InvalidRequest", "IAM calls must sign their body's SHA-256");
		return;
	}
	if (!query_form_parse(r->in.data, r->in.len, &f, msg, sizeof(msg))) {
		iam_error(r, 400, "InvalidInput", "%s", msg);
		return;
	}
	action = query_form_get(&f, "Action");
	version = query_form_get(&f, "Version");
	if (version && strcmp(version, IAM_VERSION)) {
		iam_error(r, 400, "InvalidInput", "Version must be %s", IAM_VERSION);
		goto out;
	}
	for (size_t i = 0; i < ARRAY_LEN(actions); i++) {
		const char *known[8] = {"Action", "Version"};
		if (!action || strcmp(action, actions[i].action))
			continue;
		for (size_t k = 0; k < ARRAY_LEN(actions[i].params); k++)
			known[2 + k] = actions[i].params[k];
		bad = query_form_unknown(&f, known);
		if (bad)
			iam_error(r, 400, "InvalidInput",
				  "%.64s is not supported by this gateway's %s", bad, action);
		else
			actions[i].fn(r, &f);
		goto out;
	}
	iam_error(r, 400, "InvalidAction", "Action %.64s is not served by this gateway",
		  action ? action : "(none)");
out:
	query_form_free(&f);
}
