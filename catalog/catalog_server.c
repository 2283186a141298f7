/* The catalog listener: see catalog_server.h. */
#include "config.h"
#include "catalog/catalog_server.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "catalog/catalog_authz.h"
#include "catalog/catalog_token.h"
#include "catalog/iceberg_rest.h"
#include "catalog/lance_rest.h"
#include "catalog/oauth_tokens.h"
#include "catalog/s3tables.h"
#include "catalog/table_files.h"
#include "client/filer_rpc.h"
#include "lib/http_server.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/pool.h"
#include "lib/util.h"
#include "s3/s3_iam.h"
#include "s3/s3_session_key.h"
#include "s3/sigv4.h"

#define CATALOG_BODY_MAX     (1 << 20)
#define CATALOG_FILER_MS     30000
#define CATALOG_WORKERS      16
#define CATALOG_SERVICE      "s3tables"
#define CATALOG_ACCOUNT      "000000000000"
#define CATALOG_CACHE_BYTES  (64u << 20) /* metadata files kept in memory */
#define CATALOG_VEND_SECONDS 3600        /* vended credentials' lifetime */

/* A key of the cluster kept in the filer at path, loaded at first use (by any worker). */
struct cluster_key {
	const char *path; /* s3_cluster_key_load's */
	pthread_mutex_t lock;
	bool loaded;
	uint8_t key[32];
};
_Static_assert(CT_KEY_LEN == 32 && S3_SESSION_KEY_LEN == 32, "both cluster keys are 32 bytes");

struct catalog_server {
	http_server *http;       /* S3 Tables and Iceberg REST; NULL: not served */
	http_server *lance_http; /* Lance Namespace REST; NULL: not served */
	filer_rpc *filer;
	pool *work;
	struct s3_iam *iam;
	char *region, *s3_endpoint;
	table_files *files;
	struct s3t_env env;
	struct ice_env ice;
	struct lance_env lance;
	struct cluster_key token_key;   /* bearer tokens' (catalog_token.h) */
	struct cluster_key session_key; /* vended credentials' (s3/s3_session_key.h) */
};

/* One request on its way through a worker. */
struct job {
	struct catalog_server *c;
	http_req *req;
	char *method, *uri, *body;
	size_t body_len;
	struct sigv4_header *hs;
	size_t nh;
	enum { API_S3TABLES, API_ICEBERG, API_LANCE } api; /* the error shape it answers in */
	const struct s3_identity *id; /* who it is (NULL: the catalog is open) */
	struct s3t_answer a;
};

static void job_free(struct job *j)
{
	for (size_t i = 0; i < j->nh; i++) {
		free((char *)j->hs[i].name);
		free((char *)j->hs[i].value);
	}
	free(j->hs);
	free(j->method);
	free(j->uri);
	free(j->body);
	buf_free(&j->a.body);
	free(j);
}

static void answer_error(struct job *j, int status, const char *type, const char *msg)
{
	json_w *w;
	buf_reset(&j->a.body);
	j->a.status = status;
	if (j->api == API_LANCE) {
		enum lance_code code = status == 401   ? LANCE_UNAUTHENTICATED
				       : status == 403 ? LANCE_PERMISSION_DENIED
				       : status == 503 ? LANCE_SERVICE_UNAVAILABLE
				       : status < 500  ? LANCE_INVALID_INPUT
						       : LANCE_INTERNAL;
		char *q = strchr(j->uri, '?');
		char *path = q ? xstrndup(j->uri, (size_t)(q - j->uri)) : xstrdup(j->uri);
		lance_error_body(&j->a.body, code, msg, path);
		free(path);
		return;
	}
	w = jw_new(&j->a.body, false);
	jw_obj_begin(w);
	if (j->api == API_ICEBERG) {
		jw_key(w, "error");
		jw_obj_begin(w);
		jw_kv_str(w, "message", msg);
		jw_kv_str(w, "type", status == 401   ? "NotAuthorizedException"
				     : status == 403 ? "ForbiddenException"
						     : "BadRequestException");
		jw_kv_i64(w, "code", status);
		jw_obj_end(w);
	} else {
		j->a.error_type = type;
		jw_kv_str(w, "message", msg);
	}
	jw_obj_end(w);
	jw_free(w);
}

/* Worker: k's bytes, NULL while the filer cannot give them (retried by the next call). */
static const uint8_t *cluster_key(struct catalog_server *c, struct cluster_key *k)
{
	const uint8_t *key;
	pthread_mutex_lock(&k->lock);
	if (!k->loaded)
		k->loaded = !s3_cluster_key_load(c->filer, k->path, k->key, sizeof(k->key));
	key = k->loaded ? k->key : NULL;
	pthread_mutex_unlock(&k->lock);
	return key;
}

static const char *header(const struct job *j, const char *name)
{
	size_t count;
	return sigv4_header_find(&(struct sigv4_input){.headers = j->hs, .nheaders = j->nh}, name,
				 &count);
}

/* Worker: an Iceberg request's bearer token (catalog_token.h) into who; false answered. */
static bool bearer(struct job *j, const char *token, char *who, size_t wholen)
{
	const uint8_t *key = cluster_key(j->c, &j->c->token_key);
	char ak[CT_NAME_MAX + 1];
	const char *secret;
	enum ct_status st;

	if (!key) {
		answer_error(j, 503, "ServiceUnavailableException",
			     "the signing key cannot be read from the filer");
		return false;
	}
	st = ct_verify(key, token, (int64_t)time(NULL), ak);
	if (st == CT_VALID && (j->id = s3_iam_lookup(j->c->iam, ak, &secret))) {
		snprintf(who, wholen, "%s", s3_identity_name(j->id));
		return true;
	}
	answer_error(j, 401, "NotAuthorizedException",
		     st == CT_EXPIRED ? "the token has expired; get a new one at /v1/oauth/tokens"
		     : st == CT_VALID ? "the token's identity is no longer known"
				      : "the bearer token is not valid");
	return false;
}

/*
 * The SigV4 service an Iceberg client signed for: pyiceberg and Java sign
 * "execute-api" unless told rest.signing-name (s3tables or glue).
 */
static const char *iceberg_service(const struct job *j)
{
	static const char *const ok[] = {"s3tables", "execute-api", "glue"};
	const char *h = header(j, "authorization"), *cred = h ? strstr(h, "Credential=") : NULL;
	for (int slash = 0; cred && *cred && slash < 3; cred++)
		slash += *cred == '/';
	for (size_t i = 0; cred && i < sizeof(ok) / sizeof(*ok); i++)
		if (!strncmp(cred, ok[i], strlen(ok[i])) && cred[strlen(ok[i])] == '/')
			return ok[i];
	return CATALOG_SERVICE;
}

/*
 * Worker: the identity that signed j, into who (the account id when the
 * catalog is open). false with an answer when the signature does not hold.
 * botocore sends no x-amz-content-sha256 for this service: the body's hash
 * is then the payload hash the signature covers.
 */
static bool authenticate(struct job *j, char *who, size_t wholen)
{
	struct sigv4_input in = {0};
	struct sigv4_auth a;
	const char *q = strchr(j->uri, '?'), *secret = NULL;
	const struct s3_identity *id;
	char msg[512], hash[65], *path;
	bool anonymous, ok = false;
	size_t count;
	enum s3_err e;
	buf enc;

	snprintf(who, wholen, "%s", CATALOG_ACCOUNT);
	if (s3_iam_is_open(j->c->iam))
		return true;
	if (j->api != API_S3TABLES && header(j, "authorization") &&
	    !strncasecmp(header(j, "authorization"), "Bearer ", 7))
		return bearer(j, header(j, "authorization") + 7, who, wholen);
	if (j->api == API_LANCE && header(j, "x-api-key")) /* Lance's api_key: a bearer token */
		return bearer(j, header(j, "x-api-key"), who, wholen);
	sigv4_sha256_hex(j->body ? j->body : "", j->body_len, hash);
	if (!sigv4_header_find(&(struct sigv4_input){.headers = j->hs, .nheaders = j->nh},
			       "x-amz-content-sha256", &count)) {
		j->hs = xrealloc(j->hs, (j->nh + 1) * sizeof(*j->hs));
		j->hs[j->nh].name = xstrdup("x-amz-content-sha256");
		j->hs[j->nh].value = xstrdup(hash);
		j->nh++;
	}
	path = q ? xstrndup(j->uri, (size_t)(q - j->uri)) : xstrdup(j->uri);
	/* services other than S3 sign the path encoded once more (the ARNs' %3A as %253A):
	   sigv4.h decodes its raw_path once and encodes it, so it is given that */
	buf_init(&enc);
	sigv4_uri_encode(path, strlen(path), true, &enc);
	buf_append_byte(&enc, '\0');
	free(path);
	path = enc.data;
	in.method = j->method;
	in.raw_path = path;
	in.raw_query = q ? q + 1 : NULL;
	in.headers = j->hs;
	in.nheaders = j->nh;
	in.now = (int64_t)time(NULL);
	in.region = j->c->region;
	in.service = j->api != API_S3TABLES ? iceberg_service(j) : CATALOG_SERVICE;
	e = sigv4_parse(&in, &a, &anonymous, msg, sizeof(msg));
	if (!e && anonymous)
		answer_error(j, j->api != API_S3TABLES ? 401 : 403, "AccessDeniedException",
			     j->api != API_S3TABLES
				     ? "the request carries no bearer token, API key nor signature"
				     : "the request is not signed");
	else if (e)
		answer_error(j, 403, "AccessDeniedException", msg);
	else if (a.payload == SIGV4_PAYLOAD_HASH && strcmp(a.payload_hash, hash))
		answer_error(j, 400, "BadRequestException",
			     "x-amz-content-sha256 is not the body's SHA-256");
	else if (a.payload != SIGV4_PAYLOAD_HASH)
		answer_error(j, 400, "BadRequestException", "the payload must be signed");
	else if (!(id = s3_iam_lookup(j->c->iam, a.access_key, &secret)))
		answer_error(j, 403, "UnrecognizedClientException",
			     header(j, "x-amz-security-token")
				     ? "session credentials are for the S3 gateway: sign catalog "
				       "requests with an identity's keys, or send a bearer token"
				     : "the access key is not known to this catalog");
	else if (sigv4_verify(&in, &a, secret, NULL) != S3_OK)
		answer_error(j, 403, "InvalidSignatureException",
			     "the request signature does not match the one computed");
	else {
		snprintf(who, wholen, "%s", s3_identity_name(id));
		j->id = id;
		ok = true;
	}
	free(path);
	return ok;
}

/* Loop thread: sends j's answer. */
static void send_answer(http_req *req, void *arg)
{
	struct job *j = arg;
	const char *rid = header(j, "x-request-id");
	http_resp_header(req, "Content-Type", "application/json");
	if (rid && strlen(rid) <= 128 && !strpbrk(rid, "\r\n")) /* traced: echoed back */
		http_resp_header(req, "x-request-id", rid);
	if (j->a.error_type)
		http_resp_header(req, "x-amzn-ErrorType", j->a.error_type);
	http_resp_send(req, j->a.status, j->a.body.data, j->a.body.len);
	job_free(j);
}

/* catalog_authz's hook: j's identity asks (catalog_authz.h). */
static bool allow(void *ctx, const struct catalog_access *a, char *msg, size_t msglen)
{
	struct job *j = ctx;
	return catalog_authorize(j->c->filer, j->c->region, CATALOG_ACCOUNT, j->id, a, msg,
				 msglen);
}

/*
 * Vended credentials: S3 session credentials of j's identity, limited to
 * bucket/prefix, and to reads unless it may write the table bucket's data.
 */
static bool vend(struct job *j, const char *bucket, const char *prefix,
		 struct s3_session_creds *cr, char *msg, size_t msglen)
{
	const uint8_t *key = cluster_key(j->c, &j->c->session_key);
	struct catalog_access put = {"s3tables:PutTableData", bucket, NULL, NULL};
	char why[8];
	bool may_write = allow(j, &put, why, sizeof(why));

	if (!key) {
		snprintf(msg, msglen, "the session key cannot be read from the filer");
		return false;
	}
	return s3_session_vend(key, s3_identity_name(j->id), bucket, prefix, may_write,
			       CATALOG_VEND_SECONDS, (int64_t)time(NULL), cr, msg, msglen);
}

/* The names a catalog gives vended keys: access key, secret, token, expiry (ms). */
static const char *const ICEBERG_KEYS[4] = {"s3.access-key-id", "s3.secret-access-key",
					    "s3.session-token", "s3.session-token-expires-at-ms"};
static const char *const LANCE_KEYS[4] = {"aws_access_key_id", "aws_secret_access_key",
					  "aws_session_token", "expires_at_millis"};

/* vend's keys written into w under names. */
static bool mint_as(void *ctx, const char *bucket, const char *prefix, json_w *w, char *msg,
		    size_t msglen, const char *const names[4])
{
	struct s3_session_creds cr;
	char expires[32];
	if (!vend(ctx, bucket, prefix, &cr, msg, msglen))
		return false;
	snprintf(expires, sizeof(expires), "%lld", (long long)cr.expiry * 1000);
	jw_kv_str(w, names[0], cr.access_key);
	jw_kv_str(w, names[1], cr.secret_key);
	jw_kv_str(w, names[2], cr.session_token);
	jw_kv_str(w, names[3], expires);
	return true;
}

/* ice_vend's mint: Iceberg's S3 FileIO properties. */
static bool mint(void *ctx, const char *bucket, const char *prefix, json_w *w, char *msg,
		 size_t msglen)
{
	return mint_as(ctx, bucket, prefix, w, msg, msglen, ICEBERG_KEYS);
}

/* lance_vend's mint: Lance's storage options. */
static bool mint_lance(void *ctx, const char *bucket, const char *prefix, json_w *w, char *msg,
		       size_t msglen)
{
	return mint_as(ctx, bucket, prefix, w, msg, msglen, LANCE_KEYS);
}

/*
 * Worker: an Iceberg REST request, authenticated as who. Credentials are
 * vended only to an identity: an open catalog's gateway takes any keys.
 */
static void iceberg(struct job *j, const char *path, const char *q, const char *who)
{
	const char *deleg = header(j, "x-iceberg-access-delegation");
	struct ice_vend vend = {mint, j};
	struct catalog_authz authz = {allow, j};
	struct ice_request r = {.method = j->method,
				.raw_path = path,
				.raw_query = q ? q + 1 : NULL,
				.body = j->body,
				.body_len = j->body_len,
				.caller = who,
				.authz = &authz};
	struct ice_answer a;

	if (j->id && deleg && strstr(deleg, "vended-credentials"))
		r.vend = &vend;
	ice_rest_handle(&j->c->ice, &r, &a);
	buf_free(&j->a.body);
	j->a.status = a.status;
	j->a.body = a.body;
}

/* Worker: a Lance Namespace REST request, authenticated as who. */
static void lance(struct job *j, const char *path, const char *q, const char *who)
{
	struct lance_vend lv = {mint_lance, j};
	struct catalog_authz authz = {allow, j};
	struct lance_request r = {.method = j->method,
				  .raw_path = path,
				  .raw_query = q ? q + 1 : NULL,
				  .body = j->body,
				  .body_len = j->body_len,
				  .caller = who,
				  .vend = j->id ? &lv : NULL,
				  .authz = &authz};
	struct lance_answer a;

	lance_rest_handle(&j->c->lance, &r, &a);
	buf_free(&j->a.body);
	j->a.status = a.status;
	j->a.body = a.body;
}

/* Worker: POST /v1/oauth/tokens, which needs no signature. */
static void tokens(struct job *j)
{
	const uint8_t *key = cluster_key(j->c, &j->c->token_key);
	if (strcmp(j->method, "POST"))
		return answer_error(j, 405, "MethodNotAllowedException", "POST a token request");
	if (!key)
		return answer_error(j, 503, "ServiceUnavailableException",
				    "the signing key cannot be read from the filer");
	oauth_tokens(j->c->iam, key, j->body, j->body_len, header(j, "authorization"),
		     (int64_t)time(NULL), &j->a.status, &j->a.body);
}

static void work(void *arg)
{
	struct job *j = arg;
	const char *q = strchr(j->uri, '?');
	char *path = q ? xstrndup(j->uri, (size_t)(q - j->uri)) : xstrdup(j->uri);
	char who[128];

	buf_init(&j->a.body);
	if (j->api != API_S3TABLES && !strcmp(path, "/v1/oauth/tokens")) {
		tokens(j);
	} else if (authenticate(j, who, sizeof(who))) {
		if (j->api == API_ICEBERG) {
			iceberg(j, path, q, who);
		} else if (j->api == API_LANCE) {
			lance(j, path, q, who);
		} else {
			struct catalog_authz authz = {allow, j};
			struct s3t_request r = {j->method,   path, q ? q + 1 : NULL, j->body,
						j->body_len, who,  &authz};
			buf_free(&j->a.body);
			s3t_handle(&j->c->env, &r, &j->a);
		}
	}
	free(path);
	http_req_defer(j->req, send_answer, j);
}

/* Loop thread: a job for req (its body data, len bytes) answering in shape api. */
static struct job *job_new(struct catalog_server *c, http_req *req, const char *data, size_t len,
			   int api)
{
	struct job *j = xcalloc(1, sizeof(*j));
	const char *name, *value;

	j->c = c;
	j->req = req;
	j->method = xstrdup(http_req_method_str(req));
	j->uri = xstrdup(http_req_uri(req));
	j->body = xstrndup(data ? data : "", len);
	j->body_len = len;
	j->api = api;
	for (size_t i = 0; http_req_header_at(req, i, &name, &value); i++) {
		if (i == SIGV4_MAX_HEADERS)
			break;
		j->hs = xrealloc(j->hs, (j->nh + 1) * sizeof(*j->hs));
		j->hs[j->nh].name = xstrdup(name);
		j->hs[j->nh].value = xstrdup(value ? value : "");
		j->nh++;
	}
	return j;
}

/* Loop thread: the body is in; hand the request to a worker. */
static void body_done(http_req *req, const char *data, size_t len, void *arg)
{
	struct catalog_server *c = arg;
	int api = ice_rest_is_path(http_req_path(req)) ? API_ICEBERG : API_S3TABLES;
	pool_submit(c->work, work, job_new(c, req, data, len, api));
}

static void lance_body_done(http_req *req, const char *data, size_t len, void *arg)
{
	pool_submit(((struct catalog_server *)arg)->work, work,
		    job_new(arg, req, data, len, API_LANCE));
}

/* A JSON 404 in the S3 Tables API's error shape. */
static void not_here(http_req *req)
{
	static const char body[] = "{\"message\":\"no such resource\"}";
	http_resp_header(req, "Content-Type", "application/json");
	http_resp_header(req, "x-amzn-ErrorType", "NotFoundException");
	http_resp_send(req, 404, body, sizeof(body) - 1);
}

static void handle(http_req *req, void *ctx)
{
	const char *path = http_req_path(req);
	if (!s3t_is_api_path(path) && !ice_rest_is_path(path))
		return not_here(req);
	http_req_read_body(req, CATALOG_BODY_MAX, body_done, ctx);
}

/* The Lance port: every request is the catalog's; a body over the limit is refused in JSON. */
static void handle_lance(http_req *req, void *ctx)
{
	if (http_req_content_length(req) > CATALOG_BODY_MAX) {
		buf b;
		buf_init(&b);
		lance_error_body(&b, LANCE_INVALID_INPUT, "the request body is over 1 MiB",
				 http_req_path(req));
		http_resp_header(req, "Content-Type", "application/json");
		http_resp_header(req, "Connection", "close");
		http_resp_send(req, 413, b.data, b.len);
		buf_free(&b);
		return;
	}
	http_req_read_body(req, CATALOG_BODY_MAX, lance_body_done, ctx);
}

/* A listener on port with handler h; NULL (logged) on failure. */
static http_server *listen_on(const struct catalog_opts *o, int port, http_handler_fn h,
			      struct catalog_server *c, wfs_err *err)
{
	struct http_server_opts ho = {0};
	http_server *s;
	ho.host = o->ip;
	ho.port = port;
	ho.threads = o->threads ? o->threads : 1;
	ho.thread_name = "wfs-catalog";
	s = http_server_new(&ho, h, c, err);
	if (s)
		http_server_start(s);
	return s;
}

struct catalog_server *catalog_start(const struct catalog_opts *o, wfs_err *err)
{
	struct catalog_server *c = xcalloc(1, sizeof(*c));
	char msg[256] = "";

	c->iam = s3_iam_load(o->config, msg, sizeof(msg));
	if (!c->iam) {
		log_error("catalog identities: %s", msg);
		*err = WFS_EINVAL;
		goto fail;
	}
	if (o->admin_access_key && *o->admin_access_key && o->admin_secret_key &&
	    *o->admin_secret_key)
		s3_iam_add_admin(c->iam, "admin", o->admin_access_key, o->admin_secret_key);
	c->region = xstrdup(o->region && *o->region ? o->region : "us-east-1");
	c->filer = filer_rpc_new(o->filer, CATALOG_FILER_MS, 10, 0);
	c->work = pool_new(CATALOG_WORKERS, "wfs-catalog");
	c->env = (struct s3t_env){c->filer, c->region, CATALOG_ACCOUNT};
	c->files = tf_new(o->filer, CATALOG_CACHE_BYTES);
	c->token_key.path = CT_KEY_PATH;
	c->session_key.path = S3_SESSION_KEY_PATH;
	pthread_mutex_init(&c->token_key.lock, NULL);
	pthread_mutex_init(&c->session_key.lock, NULL);
	c->s3_endpoint = o->s3_endpoint ? xstrdup(o->s3_endpoint) : NULL;
	c->ice = (struct ice_env){c->filer, c->files, c->region, CATALOG_ACCOUNT, c->s3_endpoint};
	c->lance = (struct lance_env){c->filer, c->files, c->region, CATALOG_ACCOUNT,
				      c->s3_endpoint};
	if (o->port >= 0 && !(c->http = listen_on(o, o->port, handle, c, err)))
		goto fail;
	if (o->lance_port > 0 && !(c->lance_http = listen_on(o, o->lance_port, handle_lance, c, err)))
		goto fail;
	if (s3_iam_is_open(c->iam))
		log_warn("catalog (port %d, Lance namespace port %d) is OPEN: no identities "
			 "configured (-config), so every request is allowed, signed or not",
			 catalog_port(c), catalog_lance_port(c));
	else
		log_info("catalog (port %d, Lance namespace port %d): %zu identities",
			 catalog_port(c), catalog_lance_port(c), s3_iam_count(c->iam));
	return c;
fail:
	catalog_stop(c);
	return NULL;
}

int catalog_port(const struct catalog_server *c) { return c->http ? http_server_port(c->http) : 0; }

int catalog_lance_port(const struct catalog_server *c)
{
	return c->lance_http ? http_server_port(c->lance_http) : 0;
}

void catalog_stop(struct catalog_server *c)
{
	if (!c)
		return;
	pool_free(c->work); /* the requests in work end first */
	http_server_free(c->http);
	http_server_free(c->lance_http);
	filer_rpc_free(c->filer);
	tf_free(c->files);
	pthread_mutex_destroy(&c->token_key.lock);
	pthread_mutex_destroy(&c->session_key.lock);
	s3_iam_free(c->iam);
	free(c->region);
	free(c->s3_endpoint);
	free(c);
}
