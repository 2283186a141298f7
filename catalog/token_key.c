/* The catalog's token key in the filer: see token_key.h. */
#include "config.h"
#include "catalog/token_key.h"

#include <string.h>
#include <sys/stat.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include "client/entry.h"
#include "client/filer_meta.h"
#include "lib/log.h"

static wfs_err read_key(filer_rpc *r, uint8_t key[CT_KEY_LEN])
{
	struct filer_entry *e = NULL;
	wfs_err err = filer_meta_lookup(r, TOKEN_KEY_PATH, &e);
	if (!err && (!e->has_content || e->content_len != CT_KEY_LEN)) {
		log_error("%s does not hold a %d-byte key: no bearer tokens", TOKEN_KEY_PATH,
			  CT_KEY_LEN);
		err = WFS_EIO;
	}
	if (!err)
		memcpy(key, e->content, CT_KEY_LEN);
	if (e && e->content)
		OPENSSL_cleanse(e->content, e->content_len);
	filer_entry_free(e);
	return err;
}

wfs_err token_key_load(filer_rpc *r, uint8_t key[CT_KEY_LEN])
{
	uint8_t made[CT_KEY_LEN];
	struct filer_meta_new n = {.mode = S_IFREG | 0600, .exclusive = true, .parents = true,
				   .content = made, .content_len = sizeof(made), .has_content = true};
	wfs_err err = read_key(r, key);
	if (err != WFS_ENOENT)
		return err;
	if (RAND_bytes(made, sizeof(made)) != 1)
		return WFS_EIO;
	err = filer_meta_create(r, TOKEN_KEY_PATH, &n, NULL);
	OPENSSL_cleanse(made, sizeof(made));
	/* EEXIST: another server made it first; EIO: ours may have landed. Either way, read */
	return err && err != WFS_EEXIST && err != WFS_EIO ? err : read_key(r, key);
}
