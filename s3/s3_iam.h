/*
 * Identities of the S3 gateway: who may call it, with which keys, for which
 * actions (docs/s3-gateway.md). Loaded once at start from a JSON file in
 * SeaweedFS's s3.json form:
 *
 *   {"identities": [{"name": "alice", "email": "alice@example.com",
 *                    "credentials": [{"accessKey": "AK...", "secretKey": "..."}],
 *                    "actions": ["Read", "Write", "List", "Tagging", "Admin",
 *                                "Read:bucket1", ...]}]}
 *
 * An action with ":bucket" holds for that bucket only (a trailing '*' in the
 * bucket matches any suffix); "Admin" allows everything. The optional
 * "email" names the identity in ACL grants by e-mail address. With no identity at
 * all the gateway is open: every request is allowed, signed or not.
 *
 * The IAM API's users (s3_iam_user.h) join a copy of the file's identities
 * (s3_iam_clone, s3_iam_add_user): they have no grants, only their inline
 * policies (s3_identity_policy_eval). A set is read-only once built and
 * reference-counted, so a request keeps the set it started with while a newer
 * one replaces it: any thread.
 */
#ifndef WEEDFS_S3_IAM_H
#define WEEDFS_S3_IAM_H

#include <stdbool.h>
#include <stddef.h>
#include "s3/bucket_policy.h"

enum s3_action {
	S3_ACT_READ,    /* GetObject, HeadObject, ... */
	S3_ACT_WRITE,   /* PutObject, DeleteObject, CreateBucket, DeleteBucket, multipart */
	S3_ACT_LIST,    /* ListBuckets, ListObjects, HeadBucket */
	S3_ACT_TAGGING, /* object and bucket tags */
	S3_ACT_ADMIN,   /* bucket configuration: policy, CORS, lifecycle, versioning */
};

struct s3_iam;
struct s3_identity;

/*
 * Parses the JSON document text[0..len). NULL with a message in msg on a
 * malformed document (unknown fields, missing keys, an unknown action, a
 * duplicate access key).
 */
struct s3_iam *s3_iam_parse(const char *text, size_t len, char *msg, size_t msglen);
/* Reads and parses the file at path (NULL path: no identities). */
struct s3_iam *s3_iam_load(const char *path, char *msg, size_t msglen);
/* Adds an identity allowed everything (weedfs mini's AWS_ACCESS_KEY_ID/SECRET). */
void s3_iam_add_admin(struct s3_iam *iam, const char *name, const char *access_key,
		      const char *secret_key);
/* Drops a reference to iam (freed with the last one). NULL does nothing. */
void s3_iam_free(struct s3_iam *iam);
/* Takes another reference to iam; returns iam. */
struct s3_iam *s3_iam_ref(struct s3_iam *iam);
/* A new set (one reference) holding copies of src's identities. */
struct s3_iam *s3_iam_clone(const struct s3_iam *src);
/*
 * Adds the IAM API user u (borrowed) to iam, its active keys only (a key
 * another identity holds is left out). False with msg when an identity of
 * that name is there (the file's wins).
 */
struct s3_iam_user;
bool s3_iam_add_user(struct s3_iam *iam, const struct s3_iam_user *u, char *msg, size_t msglen);

/* Whether there are no identities: the gateway then allows everything. */
bool s3_iam_is_open(const struct s3_iam *iam);
/* How many identities there are. */
size_t s3_iam_count(const struct s3_iam *iam);
/* The identity owning access_key and its secret (*secret borrowed), or NULL. */
const struct s3_identity *s3_iam_lookup(const struct s3_iam *iam, const char *access_key,
					const char **secret);
/* The identity named name, or NULL (a session's parent). */
const struct s3_identity *s3_iam_find(const struct s3_iam *iam, const char *name);
/* The identity's name (borrowed). */
const char *s3_identity_name(const struct s3_identity *id);
/* The identity's e-mail address from the file (borrowed), or NULL. */
const char *s3_identity_email(const struct s3_identity *id);
/* The i-th identity (in the file's order, then the IAM API's users), or NULL past the end. */
const struct s3_identity *s3_iam_at(const struct s3_iam *iam, size_t i);
/* Whether id may do a on bucket (NULL or "" for calls on no bucket, like ListBuckets). */
bool s3_identity_allows(const struct s3_identity *id, enum s3_action a, const char *bucket);
/* Whether id is an IAM API user (not the file's). */
bool s3_identity_stored(const struct s3_identity *id);
/* Whether id has inline policies. */
bool s3_identity_has_policies(const struct s3_identity *id);
/* What evaluating id's inline policies needs (bucket_policy_needs, all of them; NULL: 0). */
unsigned s3_identity_policy_needs(const struct s3_identity *id);
/* What id's inline policies say of pr (its principal unused): a Deny wins. */
struct policy_request;
enum policy_effect s3_identity_policy_eval(const struct s3_identity *id,
					   const struct policy_request *pr);

#endif
