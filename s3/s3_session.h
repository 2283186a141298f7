/*
 * Session (temporary) credentials of the S3 gateway: STS AssumeRole's and the
 * ones the Iceberg catalog vends for one table (docs/s3-gateway.md).
 *
 * DESIGN: stateless. Nothing about a session is stored: the session token
 * (x-amz-security-token) carries it, signed with the cluster's key (32 bytes
 * every gateway of the cluster reads from the filer, s3_session_key.c). It is
 * the base64url (no padding) of
 *
 *   body = version (1) | flags (1: bit 0 "scoped") | expiry (8, unix seconds,
 *          big-endian) | access key id (20) | parent name (1 + n) |
 *          session name (1 + n) | scope count (1) |
 *          per scope: actions (1) | bucket (1 + n) | prefix (2 big-endian + n)
 *   token = body | HMAC-SHA256(key, "weedfs-session-token\0" | body)
 *
 * The access key id is "ASIA" and 16 base32 characters of a random nonce; the
 * secret is not in the token but derived from it, HMAC-SHA256(key,
 * "weedfs-session-secret\0" | access key id | "\0" | expiry in decimal), so
 * any gateway with the key recomputes it. A scoped session may do only what
 * its scopes list ((bucket, key prefix, actions)); an unscoped one (AssumeRole
 * without a Policy) what its parent may. Either way the parent identity must
 * still exist and allow the request: the gateway checks both.
 *
 * Everything here is pure (no I/O, no globals): any thread. The structs hold
 * fixed-size fields only; nothing needs freeing.
 */
#ifndef WEEDFS_S3_SESSION_H
#define WEEDFS_S3_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define S3_SESSION_VERSION     1
#define S3_SESSION_KEY_LEN     32
#define S3_SESSION_AK_PREFIX   "ASIA"
#define S3_SESSION_AK_LEN      20 /* "ASIA" + 16 base32 characters */
#define S3_SESSION_NONCE_LEN   10 /* random bytes behind the 16 characters */
#define S3_SESSION_SECRET_LEN  40
#define S3_SESSION_PARENT_MAX  128 /* the parent identity's name, bytes */
#define S3_SESSION_NAME_MAX    64  /* RoleSessionName */
#define S3_SESSION_BUCKET_MAX  63
#define S3_SESSION_PREFIX_MAX  1024
#define S3_SESSION_SCOPES_MAX  16
#define S3_SESSION_BODY_MAX    6000 /* the signed body, bytes: its scopes must fit */
#define S3_SESSION_TOKEN_MAX   8192 /* the token, characters */
#define S3_SESSION_TTL_MIN     900  /* AssumeRole's DurationSeconds bounds */
#define S3_SESSION_TTL_MAX     43200

/* What a scope allows (bits). */
enum {
	S3_SESSION_READ = 1,   /* GetObject, HeadObject (and attributes) */
	S3_SESSION_WRITE = 2,  /* PutObject, multipart uploads and their parts, copy targets */
	S3_SESSION_DELETE = 4, /* DeleteObject */
	S3_SESSION_LIST = 8,   /* ListObjects(V2), versions and uploads, with a prefix in scope */
	S3_SESSION_ALL = 15,
};

struct s3_session_scope {
	char bucket[S3_SESSION_BUCKET_MAX + 1];
	char prefix[S3_SESSION_PREFIX_MAX + 1]; /* "" for the whole bucket */
	unsigned actions;                       /* S3_SESSION_* bits, not 0 */
};

struct s3_session {
	char parent[S3_SESSION_PARENT_MAX + 1];
	char name[S3_SESSION_NAME_MAX + 1];
	char access_key[S3_SESSION_AK_LEN + 1];
	int64_t expiry; /* unix seconds: invalid from then on */
	bool scoped;    /* false: the parent's rights, scope[] unused */
	size_t n;
	struct s3_session_scope scope[S3_SESSION_SCOPES_MAX];
};

enum s3_session_status {
	S3_SESSION_OK,
	S3_SESSION_MALFORMED,     /* not base64url, cut short, bad fields, too long */
	S3_SESSION_BAD_VERSION,   /* a version this gateway does not read */
	S3_SESSION_BAD_SIGNATURE, /* not signed with this cluster's key, or altered */
	S3_SESSION_EXPIRED,
};

/* Whether access_key has the form of a session's ("ASIA" + 16 base32 characters). */
bool s3_session_key_id(const char *access_key);

/*
 * Adds a scope to s (s->scoped set): bucket (1..63 bytes, no '/'), prefix
 * (0..1024 bytes; a '*' or '?' is refused, never widened into a pattern; no
 * control character), actions (S3_SESSION_* bits, not 0). A scope of the same
 * bucket and prefix gains the actions. False with msg on a bad one or when
 * S3_SESSION_SCOPES_MAX are there.
 */
bool s3_session_add_scope(struct s3_session *s, const char *bucket, const char *prefix,
			  unsigned actions, char *msg, size_t msglen);

/*
 * Issues s: sets s->access_key from nonce, writes the token (NUL-terminated)
 * and the secret. s->parent (non-empty), s->name, s->expiry, s->scoped and the
 * scopes are the caller's. False with msg when a field is out of bounds or
 * the body would pass S3_SESSION_BODY_MAX.
 */
bool s3_session_issue(const uint8_t key[S3_SESSION_KEY_LEN], struct s3_session *s,
		      const uint8_t nonce[S3_SESSION_NONCE_LEN],
		      char token[S3_SESSION_TOKEN_MAX + 1], char secret[S3_SESSION_SECRET_LEN + 1],
		      char *msg, size_t msglen);

/*
 * Checks token: its form, version, signature under key (compared in constant
 * time), structure and expiry (valid while now < expiry), in that order; on
 * S3_SESSION_OK *out is the session (else cleared) and secret (if not NULL) its
 * secret. msg says what is wrong otherwise.
 */
enum s3_session_status s3_session_verify(const uint8_t key[S3_SESSION_KEY_LEN], const char *token,
					 int64_t now, struct s3_session *out,
					 char secret[S3_SESSION_SECRET_LEN + 1], char *msg,
					 size_t msglen);

/* The body's structure alone (no signature, no clock): what verify reads once signed. */
bool s3_session_parse(const uint8_t *body, size_t len, struct s3_session *out, char *msg,
		      size_t msglen);

/* The secret of access_key expiring at expiry. */
void s3_session_secret(const uint8_t key[S3_SESSION_KEY_LEN], const char *access_key,
		       int64_t expiry, char out[S3_SESSION_SECRET_LEN + 1]);

/* What a request does, for a session (from its policy action name, bucket_policy.h's). */
enum s3_session_op {
	S3_SESSION_OP_READ,
	S3_SESSION_OP_WRITE,
	S3_SESSION_OP_DELETE,
	S3_SESSION_OP_LIST,   /* of a bucket: the request's prefix parameter must be in scope */
	S3_SESSION_OP_BUCKET, /* HeadBucket, GetBucketLocation: any scope in the bucket */
	S3_SESSION_OP_OTHER,  /* anything else: never for a scoped session */
};
enum s3_session_op s3_session_op_of(const char *policy_action);

/*
 * Whether s lets op through on bucket (NULL: a call on no bucket, like
 * ListBuckets) and path: the key (READ, WRITE, DELETE) or the listing's
 * prefix parameter (LIST; NULL as ""), which must start with a scope's prefix.
 * An unscoped session lets everything through (its parent's grants decide).
 */
bool s3_session_permits(const struct s3_session *s, enum s3_session_op op, const char *bucket,
			const char *path);

/*
 * Maps an AssumeRole session policy (JSON text[0..len)) onto s's scopes.
 * Understood: "Version", "Statement" (an object or an array) of "Allow"
 * statements ("Sid" ignored) with "Action" s3:GetObject, s3:PutObject,
 * s3:DeleteObject (on "arn:aws:s3:::bucket/prefix*" resources, the '*' last
 * and only) and s3:ListBucket (on "arn:aws:s3:::bucket", optionally with
 * "Condition": {"StringLike": {"s3:prefix": "prefix*" or a list of them}}).
 * Anything else (Deny, NotAction, wildcards elsewhere, other actions or
 * conditions) is refused rather than widened: false with msg.
 */
bool s3_session_policy(const char *text, size_t len, struct s3_session *s, char *msg,
		       size_t msglen);

#endif
