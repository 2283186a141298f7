/*
 * Session credentials in the gateway: checking them on requests, and the STS
 * endpoint (AssumeRole, GetCallerIdentity) on the S3 port. Private to the
 * gateway (s3_int.h's types); the token itself is s3_session.h's.
 */
#ifndef WEEDFS_S3_SESSION_GW_H
#define WEEDFS_S3_SESSION_GW_H

#include <stdbool.h>
#include <stddef.h>
#include "client/filer_rpc.h"
#include "s3/s3_err.h"
#include "s3/s3_session.h"
#include "s3/xml.h"

struct s3_req;
struct s3_session_gw;

/* A request's verified session: r->session, freed with r. */
struct s3_session_auth {
	struct s3_session s;
	char secret[S3_SESSION_SECRET_LEN + 1];
};

/* The gateway's side: enabled when it has identities; loads the cluster key now (a
   failure is retried by the next AssumeRole). Blocks on the filer: at start. */
struct s3_session_gw *s3_session_gw_new(filer_rpc *filer, bool enabled);
void s3_session_gw_free(struct s3_session_gw *sg);

/* Loop thread: whether access_key with r's x-amz-security-token (header or query) is a
   session's, to be checked by s3_session_identify rather than the identities. */
bool s3_session_presented(const struct s3_req *r, const char *access_key);
/*
 * Loop thread: checks r's token (InvalidToken, ExpiredToken), its access key
 * and that its parent identity still exists; then r->who is the parent,
 * r->session the session and *secret (borrowed from it) its secret.
 */
enum s3_err s3_session_identify(struct s3_req *r, const char *access_key, const char **secret,
				char *msg, size_t msglen);
/* Whether r's session (none: true) allows action (bucket_policy.h's name) on bucket/key. */
bool s3_session_gate(struct s3_req *r, const char *bucket, const char *key, const char *action);

/* Loop thread: whether r is an STS call (POST / with a form body); marks it so. */
bool s3_sts_is(struct s3_req *r);
/* Loop thread: r's authentication failed; its S3 error answer becomes STS's form. */
void s3_sts_auth_failed(struct s3_req *r);
/* Worker: answers the STS call in r->in (authenticated, service "sts"). */
void s3_sts(struct s3_req *r);

/* The query protocol's answers (STS, IAM), namespace ns_uri: any thread. */
/* Sets r's ErrorResponse answer. */
void s3_query_error(struct s3_req *r, const char *ns_uri, int status, const char *code,
		    const char *msg);
/* r's authentication failed: its S3 error answer becomes an ErrorResponse. */
void s3_query_auth_failed(struct s3_req *r, const char *ns_uri);
/* Opens <ActionResponse> and (result) <ActionResult>. */
void s3_query_begin(xml_w *w, const char *ns_uri, const char *action, bool result);
/* Closes them with the ResponseMetadata; r's answer is 200 and w is freed. */
void s3_query_end(struct s3_req *r, xml_w *w, bool result);
/* Whether the signature covers r's body (botocore signs its hash; open gateway: true). */
bool s3_query_body_signed(struct s3_req *r);

#endif
