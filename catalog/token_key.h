/*
 * The key the catalog signs its bearer tokens with (catalog_token.h), kept in
 * the filer so that every catalog server of a cluster shares it without
 * configuration: 32 random bytes, the inline content of TOKEN_KEY_PATH, made
 * by whichever server needs it first (an exclusive create: a server that
 * loses the race reads the winner's). Deleting the file and restarting the
 * servers revokes every token issued.
 */
#ifndef WEEDFS_CATALOG_TOKEN_KEY_H
#define WEEDFS_CATALOG_TOKEN_KEY_H

#include <stdint.h>
#include "catalog/catalog_token.h"
#include "client/filer_rpc.h"
#include "lib/err.h"

#define TOKEN_KEY_PATH "/etc/catalog/token.key"

/* Reads the key, making it when there is none. Blocks on the filer. */
wfs_err token_key_load(filer_rpc *r, uint8_t key[CT_KEY_LEN]);

#endif
