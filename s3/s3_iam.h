/*
 * Identities of the S3 gateway: who may call it, with which keys, for which
 * actions (docs/s3-gateway.md). Loaded once at start from a JSON file in
 * SeaweedFS's s3.json form:
 *
 *   {"identities": [{"name": "alice",
 *                    "credentials": [{"accessKey": "AK...", "secretKey": "..."}],
 *                    "actions": ["Read", "Write", "List", "Tagging", "Admin",
 *                                "Read:bucket1", ...]}]}
 *
 * An action with ":bucket" holds for that bucket only (a trailing '*' in the
 * bucket matches any suffix); "Admin" allows everything. With no identity at
 * all the gateway is open: every request is allowed, signed or not.
 * Read-only after loading: any thread.
 */
#ifndef WEEDFS_S3_IAM_H
#define WEEDFS_S3_IAM_H

#include <stdbool.h>
#include <stddef.h>

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
void s3_iam_free(struct s3_iam *iam);

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
/* Whether id may do a on bucket (NULL or "" for calls on no bucket, like ListBuckets). */
bool s3_identity_allows(const struct s3_identity *id, enum s3_action a, const char *bucket);

#endif
