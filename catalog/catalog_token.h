/*
 * The catalog's OAuth2 bearer tokens (POST /v1/oauth/tokens, client
 * credentials): "wfsc1.<expiry>.<identity, hex>.<HMAC-SHA256, hex>", the MAC
 * over everything before it with the cluster's signing key (kept in the
 * filer, s3/s3_session_key.h), so any catalog server of the cluster verifies
 * a token another issued without shared state. A token names an identity; it
 * grants what that identity may do at the time of each request. Pure; any
 * thread.
 */
#ifndef WEEDFS_CATALOG_TOKEN_H
#define WEEDFS_CATALOG_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CT_KEY_LEN   32
/* The key's place in the filer: a cluster key (s3_cluster_key_load), made by the first
   catalog server that needs it; deleting it and restarting the servers revokes every token. */
#define CT_KEY_PATH "/etc/catalog/token.key"
#define CT_NAME_MAX  256 /* the longest identity name a token carries */
#define CT_TOKEN_MAX (6 + 20 + 1 + 2 * CT_NAME_MAX + 1 + 64 + 1)

/* A token for identity, valid until expiry (unix seconds), into out. false if name is too long. */
bool ct_issue(const uint8_t key[CT_KEY_LEN], const char *identity, int64_t expiry,
	      char out[CT_TOKEN_MAX]);

enum ct_status { CT_VALID, CT_MALFORMED, CT_BAD_MAC, CT_EXPIRED };
/* Checks token at now (unix seconds); on CT_VALID identity holds its name. */
enum ct_status ct_verify(const uint8_t key[CT_KEY_LEN], const char *token, int64_t now,
			 char identity[CT_NAME_MAX + 1]);

#endif
