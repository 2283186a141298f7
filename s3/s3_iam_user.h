/*
 * A user the IAM API made (s3_iam_api.c), as stored in the filer: one entry
 * per user, S3_IAM_USERS_DIR/<name>, whose inline content is
 *
 *   {"name": "alice", "id": "AIDA...", "created": "2026-01-02T03:04:05Z",
 *    "keys": [{"accessKey": "AKIA...", "secretKey": "...", "status": "Active",
 *              "created": "..."}],
 *    "policies": [{"name": "p1", "document": "{\"Version\": ...}"}]}
 *
 * Every policy document was validated when it was put; a stored one that no
 * longer parses is refused with the whole user (the reader logs it).
 * Pure: any thread; a struct belongs to its caller.
 */
#ifndef WEEDFS_S3_IAM_USER_H
#define WEEDFS_S3_IAM_USER_H

#include <stdbool.h>
#include <stddef.h>
#include "buf.h"

#define S3_IAM_USERS_DIR    "/etc/iam/users"
#define S3_IAM_NAME_MAX     64   /* IAM's user and policy names */
#define S3_IAM_KEYS_MAX     2    /* IAM's access keys per user */
#define S3_IAM_POLICIES_MAX 10   /* inline policies per user */
#define S3_IAM_POLICY_BYTES 2048 /* IAM's aggregate inline policy size of a user */
#define S3_IAM_AK_LEN       20
#define S3_IAM_SECRET_LEN   40
#define S3_IAM_USER_DOC_MAX (32u << 10)

struct s3_iam_key {
	char id[S3_IAM_AK_LEN + 1];
	char secret[S3_IAM_SECRET_LEN + 1];
	bool active;
	char created[32];
};

struct s3_iam_user {
	char name[S3_IAM_NAME_MAX + 1];
	char id[24];
	char created[32];
	struct s3_iam_key keys[S3_IAM_KEYS_MAX];
	size_t n_keys;
	char *pol_name[S3_IAM_POLICIES_MAX], *pol_doc[S3_IAM_POLICIES_MAX]; /* owned */
	size_t n_pols;
};

/* Whether s is a valid IAM user or policy name: 1..64 of [A-Za-z0-9+=,.@_-]. */
bool s3_iam_name_ok(const char *s);
/* Parses a stored document into *u (cleared first; s3_iam_user_clear after, either way). */
bool s3_iam_user_parse(const char *text, size_t len, struct s3_iam_user *u, char *msg,
		       size_t msglen);
/* Appends u's document to out. */
void s3_iam_user_write(const struct s3_iam_user *u, buf *out);
/* Frees u's policies and wipes its secrets. */
void s3_iam_user_clear(struct s3_iam_user *u);
/* The policy of u named name, its index, or -1. */
int s3_iam_user_policy(const struct s3_iam_user *u, const char *name);
/* The bytes of u's policy documents together. */
size_t s3_iam_user_policy_bytes(const struct s3_iam_user *u);

#endif
