/*
 * DESIGN: one EVP context per call (they are cheap next to a chunk's worth of
 * AES) so the functions are thread-safe without locks; the nonce is random per
 * blob, which with a fresh key per blob can never repeat under one key.
 */
#include "config.h"
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <string.h>
#include "client/chunk_cipher.h"
#include "log.h"
#include "util.h"

/* OpenSSL takes int lengths: feed it in steps well below INT_MAX. */
#define STEP (1u << 30)

/*
 * A GCM context (enc: 1 seal, 0 open) under key and nonce that has run len bytes of in
 * into out; NULL when OpenSSL failed. The caller finishes (tag) and frees it.
 */
static EVP_CIPHER_CTX *gcm_run(int enc, const uint8_t *key, const uint8_t *nonce,
			       const uint8_t *in, size_t len, uint8_t *out)
{
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
	size_t done = 0;
	int n;
	bool ok = x && EVP_CipherInit_ex(x, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) == 1 &&
		  EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_IVLEN, CHUNK_NONCE_LEN, NULL) == 1 &&
		  EVP_CipherInit_ex(x, NULL, NULL, key, nonce, enc) == 1;

	while (ok && done < len) {
		size_t step = MIN(len - done, STEP);
		ok = EVP_CipherUpdate(x, out + done, &n, in + done, (int)step) == 1 &&
		     (size_t)n == step;
		done += step;
	}
	if (!ok) {
		EVP_CIPHER_CTX_free(x);
		return NULL;
	}
	return x;
}

wfs_err chunk_cipher_seal(const void *data, size_t len, uint8_t key[FILER_CHUNK_KEY_LEN],
			  buf *out)
{
	size_t mark = out->len;
	EVP_CIPHER_CTX *x;
	uint8_t *o;
	int n;
	bool ok;

	if (RAND_bytes(key, FILER_CHUNK_KEY_LEN) != 1)
		return WFS_EINTERNAL;
	buf_reserve(out, len + CHUNK_CIPHER_OVERHEAD);
	o = (uint8_t *)out->data + mark;
	if (RAND_bytes(o, CHUNK_NONCE_LEN) != 1)
		return WFS_EINTERNAL;
	x = gcm_run(1, key, o, data, len, o + CHUNK_NONCE_LEN);
	ok = x && EVP_EncryptFinal_ex(x, o + CHUNK_NONCE_LEN + len, &n) == 1 && n == 0 &&
	     EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, CHUNK_TAG_LEN,
				 o + CHUNK_NONCE_LEN + len) == 1;
	EVP_CIPHER_CTX_free(x);
	if (!ok)
		return WFS_EINTERNAL;
	out->len = mark + len + CHUNK_CIPHER_OVERHEAD;
	out->data[out->len] = '\0';
	return WFS_OK;
}

wfs_err chunk_cipher_open(const uint8_t key[FILER_CHUNK_KEY_LEN], const uint8_t *blob, size_t len,
			  buf *out)
{
	size_t mark = out->len, plen;
	EVP_CIPHER_CTX *x;
	uint8_t tag[CHUNK_TAG_LEN];
	uint8_t *o;
	int n;
	bool ok;

	if (len < CHUNK_CIPHER_OVERHEAD)
		return WFS_ECORRUPT;
	plen = len - CHUNK_CIPHER_OVERHEAD;
	memcpy(tag, blob + CHUNK_NONCE_LEN + plen, CHUNK_TAG_LEN);
	buf_reserve(out, plen);
	o = (uint8_t *)out->data + mark;
	x = gcm_run(0, key, blob, blob + CHUNK_NONCE_LEN, plen, o);
	ok = x && EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, CHUNK_TAG_LEN, tag) == 1 &&
	     EVP_DecryptFinal_ex(x, o + plen, &n) == 1;
	EVP_CIPHER_CTX_free(x);
	if (!ok) {
		/* no byte of an unauthenticated blob may reach a reader */
		memset(o, 0, plen);
		out->len = mark;
		out->data[mark] = '\0';
		return WFS_ECORRUPT;
	}
	out->len = mark + plen;
	out->data[out->len] = '\0';
	return WFS_OK;
}

wfs_err chunk_cipher_read(blob_client *bc, const struct filer_chunk *c, size_t max_plain, buf *out)
{
	buf sealed;
	wfs_err err;

	if (!c->has_cipher_key)
		return blob_client_read(bc, c->fid, 0, 0, max_plain, out);
	buf_init(&sealed);
	err = blob_client_read(bc, c->fid, 0, 0, max_plain + CHUNK_CIPHER_OVERHEAD, &sealed);
	if (!err) {
		err = chunk_cipher_open(c->cipher_key, (const uint8_t *)sealed.data, sealed.len,
					out);
		if (err)
			log_error("chunk %s (%zu bytes stored) failed authentication: damaged on "
				  "its volume, or the record's key is not the one it was sealed with",
				  c->fid, sealed.len);
	}
	buf_free(&sealed);
	return err;
}

wfs_err chunk_cipher_save(blob_client *bc, const struct blob_assign_params *ap,
			  const struct blob_upload_params *up, bool encrypt, const void *data,
			  size_t len, struct filer_chunk *c, char **fid, char *etag)
{
	buf sealed;
	wfs_err err;

	if (!encrypt) {
		c->has_cipher_key = false;
		return blob_client_save(bc, ap, up, data, len, fid, etag);
	}
	buf_init(&sealed);
	err = chunk_cipher_seal(data, len, c->cipher_key, &sealed);
	if (!err)
		err = blob_client_save(bc, ap, up, sealed.data, sealed.len, fid, etag);
	c->has_cipher_key = !err;
	buf_free(&sealed);
	return err;
}
