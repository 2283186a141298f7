/*
 * The cluster's session key, kept in the filer, and the credentials the
 * Iceberg catalog vends for one table (s3_session.h has the token itself).
 *
 * The key is 32 random bytes (OpenSSL RAND_bytes) in the inline content of
 * S3_SESSION_KEY_PATH, created once with an exclusive create: of gateways
 * racing to make it, the losers read the winner's. Every gateway (and the
 * catalog) of the cluster so signs and checks with the same key without
 * configuration. Removing the file (then restarting the gateways) revokes
 * every session issued so far.
 */
#ifndef WEEDFS_S3_SESSION_KEY_H
#define WEEDFS_S3_SESSION_KEY_H

#include <stdbool.h>
#include <stdint.h>
#include "client/filer_rpc.h"
#include "err.h"
#include "s3/s3_session.h"

#define S3_SESSION_KEY_PATH "/etc/s3/session.key"
/* The TTL bounds of s3_session_vend, seconds. */
#define S3_SESSION_VEND_TTL_MIN 60
#define S3_SESSION_VEND_TTL_MAX S3_SESSION_TTL_MAX

/*
 * A key of the cluster kept in the filer at path: len (at most
 * S3_CLUSTER_KEY_MAX) random bytes made by the first server that needs them
 * (an exclusive create; the losers of the race read the winner's). WFS_OK, or
 * the filer's error; WFS_EIO when the stored file is not len bytes. Blocks
 * (filer calls): workers only. The catalog's token key is one too.
 */
#define S3_CLUSTER_KEY_MAX 64
wfs_err s3_cluster_key_load(filer_rpc *filer, const char *path, uint8_t *key, size_t len);
/* The session key: s3_cluster_key_load of S3_SESSION_KEY_PATH. */
wfs_err s3_session_key_load(filer_rpc *filer, uint8_t key[S3_SESSION_KEY_LEN]);

/* Session credentials as a client takes them. */
struct s3_session_creds {
	char access_key[S3_SESSION_AK_LEN + 1];
	char secret_key[S3_SESSION_SECRET_LEN + 1];
	char session_token[S3_SESSION_TOKEN_MAX + 1];
	char expiration[32]; /* ISO 8601 UTC, "2026-12-01T12:00:00Z" */
	int64_t expiry;      /* the same, unix seconds */
};

/*
 * Vended credentials for the catalog: a session of identity parent limited
 * to keys of bucket under prefix (no '*' or '?'; a table's location, e.g.
 * "warehouse/ns/table/"), read-only (GetObject, HeadObject, ListObjects with
 * a prefix parameter under prefix) or read_write (also PutObject, multipart
 * uploads, DeleteObject), valid for ttl_s seconds from now (60..43200).
 * The gateway still requires parent to exist and to allow each request.
 * key is the cluster key (s3_session_key_load, which a caller may cache).
 * False with msg when an argument is refused (or RAND_bytes fails). Pure
 * but for the random access key id: any thread.
 */
bool s3_session_vend(const uint8_t key[S3_SESSION_KEY_LEN], const char *parent,
		     const char *bucket, const char *prefix, bool read_write, int ttl_s,
		     int64_t now, struct s3_session_creds *out, char *msg, size_t msglen);

/* Issues s (its parent, name, expiry and scopes set) into out, with a random access key
   id: s3_session_vend's and AssumeRole's common end. False with msg. */
bool s3_session_mint(const uint8_t key[S3_SESSION_KEY_LEN], struct s3_session *s,
		     struct s3_session_creds *out, char *msg, size_t msglen);

#endif
