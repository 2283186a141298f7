/*
 * Session credentials in the gateway (s3_session_gw.h): a session request's
 * check, what it may do, and STS's AssumeRole and GetCallerIdentity.
 *
 * DESIGN: a request signed with an "ASIA" key and carrying a security token
 * is checked from the token alone (s3_session.h): no lookup, so any gateway
 * of the cluster takes a session another issued. The parent identity then
 * stands for the request (its grants, bucket policies naming it), and the
 * session's scopes narrow it further (s3_session_gate, called where the
 * identity's grant is decided). AssumeRole needs the cluster key, read from
 * the filer at start (s3_session_key.c).
 */
#include "config.h"
#include "s3/s3_session_gw.h"
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include "http_util.h"
#include "log.h"
#include "s3/query_form.h"
#include "s3/s3_int.h"
#include "s3/s3_session_key.h"
#include "util.h"

#define STS_NS         "https://sts.amazonaws.com/doc/2011-06-15/"
#define STS_VERSION    "2011-06-15"
#define STS_ACCOUNT    "000000000000"
#define STS_POLICY_MAX 2048 /* characters, as AWS's packed policy limit */
#define STS_ARN_MAX    2048

struct s3_session_gw {
	filer_rpc *filer;
	bool enabled;
	pthread_mutex_t mu; /* one load at a time */
	atomic_bool ready;  /* key holds the cluster key */
	uint8_t key[S3_SESSION_KEY_LEN];
};

static bool key_load(struct s3_session_gw *sg)
{
	wfs_err rc = WFS_OK;
	pthread_mutex_lock(&sg->mu);
	if (!atomic_load(&sg->ready)) {
		rc = s3_session_key_load(sg->filer, sg->key);
		if (rc)
			log_warn("session credentials: cannot read the cluster key %s: %s",
				 S3_SESSION_KEY_PATH, wfs_strerror(rc));
		else
			atomic_store(&sg->ready, true);
	}
	pthread_mutex_unlock(&sg->mu);
	return !rc;
}

struct s3_session_gw *s3_session_gw_new(filer_rpc *filer, bool enabled)
{
	struct s3_session_gw *sg = xcalloc(1, sizeof(*sg));
	sg->filer = filer;
	sg->enabled = enabled;
	pthread_mutex_init(&sg->mu, NULL);
	atomic_init(&sg->ready, false);
	if (enabled)
		key_load(sg);
	return sg;
}

void s3_session_gw_free(struct s3_session_gw *sg)
{
	if (!sg)
		return;
	pthread_mutex_destroy(&sg->mu);
	OPENSSL_cleanse(sg->key, sizeof(sg->key));
	free(sg);
}

/* ---- session requests ---- */

static const char *token_of(const struct s3_req *r)
{
	const char *t = http_req_header(r->req, "x-amz-security-token");
	if (!t)
		t = http_req_query(r->req, "X-Amz-Security-Token");
	/* SigV2's presigned URLs spell it in lower case */
	return t ? t : http_req_query(r->req, "x-amz-security-token");
}

bool s3_session_presented(const struct s3_req *r, const char *access_key)
{
	return r->g->sessions->enabled && !strncmp(access_key, S3_SESSION_AK_PREFIX, 4) &&
	       token_of(r);
}

enum s3_err s3_session_identify(struct s3_req *r, const char *access_key, const char **secret,
				char *msg, size_t msglen)
{
	struct s3_session_gw *sg = r->g->sessions;
	struct s3_session_auth *a;
	enum s3_session_status st;

	if (!atomic_load(&sg->ready)) {
		snprintf(msg, msglen, "This gateway cannot check session credentials: it has not "
				      "read the cluster key from the filer yet");
		return S3_INVALID_TOKEN;
	}
	a = xmalloc(sizeof(*a));
	st = s3_session_verify(sg->key, token_of(r), (int64_t)time(NULL), &a->s, a->secret, msg,
			       msglen);
	if (!st && strcmp(a->s.access_key, access_key)) {
		snprintf(msg, msglen, "The security token does not belong to access key %.32s",
			 access_key);
		st = S3_SESSION_MALFORMED;
	}
	if (!st && !(r->who = s3_iam_find(r->iam, a->s.parent))) {
		snprintf(msg, msglen, "The identity the session belongs to (%.128s) no longer exists",
			 a->s.parent);
		st = S3_SESSION_MALFORMED;
	}
	if (st) {
		OPENSSL_cleanse(a, sizeof(*a));
		free(a);
		return st == S3_SESSION_EXPIRED ? S3_EXPIRED_TOKEN : S3_INVALID_TOKEN;
	}
	r->session = a;
	*secret = a->secret;
	return S3_OK;
}

bool s3_session_gate(struct s3_req *r, const char *bucket, const char *key, const char *action)
{
	enum s3_session_op op;
	const char *path = key;
	if (!r->session)
		return true;
	op = s3_session_op_of(action);
	if (op == S3_SESSION_OP_LIST && !key && bucket && r->bucket && !strcmp(bucket, r->bucket)) {
		/* a listing's reach is its prefix parameter; HeadBucket only names the bucket */
		if (http_req_method(r->req) == HTTP_HEAD)
			op = S3_SESSION_OP_BUCKET;
		path = http_req_query(r->req, "prefix");
	}
	return s3_session_permits(&r->session->s, op, bucket, path);
}

/* ---- STS ---- */

bool s3_sts_is(struct s3_req *r)
{
	const char *ct = http_req_header(r->req, "Content-Type");
	r->sts = http_req_method(r->req) == HTTP_POST && !r->bucket && ct &&
		 !strncasecmp(ct, "application/x-www-form-urlencoded", 33) &&
		 !strcmp(http_req_path(r->req), "/");
	return r->sts;
}

void s3_query_error(struct s3_req *r, const char *ns_uri, int status, const char *code,
		    const char *msg)
{
	const char *ns[] = {"xmlns", ns_uri, NULL};
	xml_w *w;
	buf_reset(&r->body);
	w = xml_w_new(&r->body);
	xml_open_attrs(w, "ErrorResponse", ns);
	xml_open(w, "Error");
	xml_elem(w, "Type", status >= 500 ? "Receiver" : "Sender");
	xml_elem(w, "Code", code);
	xml_elem(w, "Message", msg);
	xml_close(w);
	xml_elem(w, "RequestId", r->id);
	xml_w_free(w);
	r->status = status;
	r->ctype = "text/xml";
}

/* STS's error answer (the query protocol's ErrorResponse). */
static void sts_error(struct s3_req *r, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void sts_error(struct s3_req *r, int status, const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s3_query_error(r, STS_NS, status, code, msg);
}

void s3_query_auth_failed(struct s3_req *r, const char *ns_uri)
{
	struct xml_node *root = NULL;
	char m[64], *code = NULL, *text = NULL;
	int status = r->status;
	if (!xml_parse(r->body.data, r->body.len, NULL, &root, m, sizeof(m))) {
		const char *c = xml_child_text(root, "Code"), *t = xml_child_text(root, "Message");
		code = xstrdup(c ? c : "AccessDenied");
		text = xstrdup(t ? t : "");
	}
	xml_free(root);
	s3_query_error(r, ns_uri, status, code ? code : "AccessDenied",
		       text ? text : "Access Denied");
	free(code);
	free(text);
}

void s3_sts_auth_failed(struct s3_req *r) { s3_query_auth_failed(r, STS_NS); }

static const char *param(const struct query_form *f, const char *name)
{
	return query_form_get(f, name);
}

/* Whether every parameter is one of known (NULL-terminated); else an answer. */
static bool only_params(struct s3_req *r, const struct query_form *f, const char *const *known)
{
	const char *bad = query_form_unknown(f, known);
	if (bad)
		sts_error(r, 400, "InvalidParameterValue", "%.64s is not supported by this "
			  "gateway's %s", bad, param(f, "Action"));
	return !bad;
}

/* RoleSessionName's characters: [\w+=,.@-], 2..64 of them. */
static bool session_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < 2 || n > S3_SESSION_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') && !strchr("_+=,.@-", s[i]))
			return false;
	return true;
}

/* "arn:<partition>:iam::<account>:role/<path/>name": the account and the role's name. */
static bool role_arn_ok(const char *arn, char account[16], const char **role)
{
	const char *p, *acct;
	size_t an;
	if (strlen(arn) > STS_ARN_MAX || strncmp(arn, "arn:", 4))
		return false;
	p = arn + 4;
	p += strspn(p, "abcdefghijklmnopqrstuvwxyz-");
	if (p == arn + 4 || strncmp(p, ":iam::", 6))
		return false;
	acct = p + 6;
	an = strspn(acct, "0123456789");
	if (!an || an > 12 || strncmp(acct + an, ":role/", 6))
		return false;
	snprintf(account, 16, "%.*s", (int)an, acct);
	p = acct + an + 6;
	*role = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
	return **role && strlen(*role) <= 64;
}

static bool duration_of(const char *s, int *out)
{
	char *end;
	long v;
	if (!s) {
		*out = 3600;
		return true;
	}
	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 6)
		return false;
	v = strtol(s, &end, 10);
	*out = (int)v;
	return v >= S3_SESSION_TTL_MIN && v <= S3_SESSION_TTL_MAX;
}

void s3_query_begin(xml_w *w, const char *ns_uri, const char *action, bool result)
{
	const char *ns[] = {"xmlns", ns_uri, NULL};
	char name[64];
	snprintf(name, sizeof(name), "%sResponse", action);
	xml_open_attrs(w, name, ns);
	snprintf(name, sizeof(name), "%sResult", action);
	if (result)
		xml_open(w, name);
}

void s3_query_end(struct s3_req *r, xml_w *w, bool result)
{
	if (result)
		xml_close(w);
	xml_open(w, "ResponseMetadata");
	xml_elem(w, "RequestId", r->id);
	xml_w_free(w);
	r->status = 200;
	r->ctype = "text/xml";
}

static void response_begin(xml_w *w, const char *action)
{
	s3_query_begin(w, STS_NS, action, true);
}

static void response_end(struct s3_req *r, xml_w *w) { s3_query_end(r, w, true); }

static void assume_role(struct s3_req *r, const struct query_form *f)
{
	static const char *const known[] = {"Action",          "Version", "RoleArn",
					    "RoleSessionName", "DurationSeconds", "Policy",
					    NULL};
	const char *arn = param(f, "RoleArn"), *name = param(f, "RoleSessionName"),
		   *policy = param(f, "Policy"), *role = NULL;
	struct s3_session s = {0};
	struct s3_session_creds *c;
	char account[16], msg[256] = "";
	int ttl;
	xml_w *w;

	if (!only_params(r, f, known))
		return;
	if (!r->who || r->session) {
		sts_error(r, 403, "AccessDenied",
			  r->session ? "Session credentials cannot assume a role"
				     : "AssumeRole needs a request signed by one of the gateway's "
				       "identities");
		return;
	}
	if (!arn || !name) {
		sts_error(r, 400, "MissingParameter", "AssumeRole needs RoleArn and RoleSessionName");
		return;
	}
	if (!role_arn_ok(arn, account, &role)) {
		sts_error(r, 400, "ValidationError",
			  "RoleArn must be arn:aws:iam::<account>:role/<name>");
		return;
	}
	if (!session_name_ok(name)) {
		sts_error(r, 400, "ValidationError",
			  "RoleSessionName must be 2..64 characters of [\\w+=,.@-]");
		return;
	}
	if (!duration_of(param(f, "DurationSeconds"), &ttl)) {
		sts_error(r, 400, "ValidationError", "DurationSeconds must be %d..%d",
			  S3_SESSION_TTL_MIN, S3_SESSION_TTL_MAX);
		return;
	}
	if (policy && strlen(policy) > STS_POLICY_MAX) {
		sts_error(r, 400, "PackedPolicyTooLarge", "A session policy may be at most %d "
			  "characters", STS_POLICY_MAX);
		return;
	}
	if (policy && !s3_session_policy(policy, strlen(policy), &s, msg, sizeof(msg))) {
		sts_error(r, 400, "MalformedPolicyDocument", "%s", msg);
		return;
	}
	if (!atomic_load(&r->g->sessions->ready) && !key_load(r->g->sessions)) {
		sts_error(r, 503, "ServiceUnavailable",
			  "The cluster key could not be read from the filer");
		return;
	}
	snprintf(s.parent, sizeof(s.parent), "%s", s3_identity_name(r->who));
	snprintf(s.name, sizeof(s.name), "%s", name);
	s.expiry = (int64_t)time(NULL) + ttl;
	c = xmalloc(sizeof(*c));
	if (!s3_session_mint(r->g->sessions->key, &s, c, msg, sizeof(msg))) {
		sts_error(r, 400, "ValidationError", "%s", msg);
		free(c);
		return;
	}
	w = xml_w_new(&r->body);
	response_begin(w, "AssumeRole");
	xml_open(w, "Credentials");
	xml_elem(w, "AccessKeyId", c->access_key);
	xml_elem(w, "SecretAccessKey", c->secret_key);
	xml_elem(w, "SessionToken", c->session_token);
	xml_elem(w, "Expiration", c->expiration);
	xml_close(w);
	xml_open(w, "AssumedRoleUser");
	xml_elem_fmt(w, "AssumedRoleId", "AROA%s:%s", c->access_key + 4, name);
	xml_elem_fmt(w, "Arn", "arn:aws:sts::%s:assumed-role/%s/%s", account, role, name);
	xml_close(w);
	response_end(r, w);
	OPENSSL_cleanse(c, sizeof(*c));
	free(c);
}

static void caller_identity(struct s3_req *r, const struct query_form *f)
{
	static const char *const known[] = {"Action", "Version", NULL};
	const char *who = r->who ? s3_identity_name(r->who) : "anonymous";
	xml_w *w;
	if (!only_params(r, f, known))
		return;
	w = xml_w_new(&r->body);
	response_begin(w, "GetCallerIdentity");
	if (r->session) {
		xml_elem_fmt(w, "Arn", "arn:aws:sts::%s:assumed-role/%s/%s", STS_ACCOUNT, who,
			     r->session->s.name);
		xml_elem_fmt(w, "UserId", "%s:%s", r->session->s.access_key, r->session->s.name);
	} else {
		xml_elem_fmt(w, "Arn", "arn:aws:iam::%s:user/%s", STS_ACCOUNT, who);
		xml_elem(w, "UserId", who);
	}
	xml_elem(w, "Account", STS_ACCOUNT);
	response_end(r, w);
}

bool s3_query_body_signed(struct s3_req *r)
{
	uint8_t h[32];
	if (!r->who)
		return true; /* an open gateway: nothing was verified */
	SHA256((const uint8_t *)(r->in.data ? r->in.data : ""), r->in.len, h);
	return r->payload == SIGV4_PAYLOAD_HASH && !memcmp(h, r->payload_sha256, sizeof(h));
}

void s3_sts(struct s3_req *r)
{
	struct query_form f;
	const char *action, *version;
	char msg[128];
	if (!s3_query_body_signed(r)) {
		sts_error(r, 400, "InvalidRequest", "STS calls must sign their body's SHA-256");
		return;
	}
	if (!query_form_parse(r->in.data, r->in.len, &f, msg, sizeof(msg))) {
		sts_error(r, 400, "InvalidParameterValue", "%s", msg);
		return;
	}
	action = param(&f, "Action");
	version = param(&f, "Version");
	if (version && strcmp(version, STS_VERSION))
		sts_error(r, 400, "InvalidParameterValue", "Version must be %s", STS_VERSION);
	else if (action && !strcmp(action, "AssumeRole"))
		assume_role(r, &f);
	else if (action && !strcmp(action, "GetCallerIdentity"))
		caller_identity(r, &f);
	else
		sts_error(r, 400, "InvalidAction", "Action %.64s is not served by this gateway",
			  action ? action : "(none)");
	query_form_free(&f);
}
