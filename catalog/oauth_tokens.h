/*
 * POST /v1/oauth/tokens, the Iceberg REST catalog's OAuth2 token endpoint
 * (RFC 6749 client credentials): client_id is an access key, client_secret
 * its secret key, given in the form body or as HTTP Basic authorization. The
 * answer is a bearer token (catalog_token.h) for that identity, valid for
 * OAUTH_TOKEN_TTL seconds; errors are OAuth's {"error", "error_description"}.
 */
#ifndef WEEDFS_CATALOG_OAUTH_TOKENS_H
#define WEEDFS_CATALOG_OAUTH_TOKENS_H

#include <stddef.h>
#include <stdint.h>
#include "catalog/catalog_token.h"
#include "lib/buf.h"
#include "s3/s3_iam.h"

#define OAUTH_TOKEN_TTL 3600

/*
 * Answers the request (form body, the Authorization header or NULL) at now:
 * *status and the JSON into out. An open catalog (no identities) issues a
 * token to any client id.
 */
void oauth_tokens(const struct s3_iam *iam, const uint8_t key[CT_KEY_LEN], const char *body,
		  size_t len, const char *authorization, int64_t now, int *status, buf *out);

#endif
