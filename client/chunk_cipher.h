/*
 * Encryption at rest of chunk blobs (the filer's -encryptVolumeData): each blob
 * is sealed with its own random AES-256-GCM key, which lives only in the chunk
 * record (struct filer_chunk.cipher_key, in the filer's store). A sealed blob
 * is nonce (12 bytes) || ciphertext || tag (16 bytes), so a volume server holds
 * ciphertext only and a blob is CHUNK_CIPHER_OVERHEAD bytes longer than the
 * chunk's plaintext. GCM authenticates the whole blob: a damaged one is an
 * error (WFS_ECORRUPT), never different bytes, and a range of a sealed chunk
 * is read by fetching and opening the whole blob.
 */
#ifndef WEEDFS_CLIENT_CHUNK_CIPHER_H
#define WEEDFS_CLIENT_CHUNK_CIPHER_H

#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "err.h"
#include "client/blob_client.h"
#include "client/entry.h"

#define CHUNK_NONCE_LEN        12
#define CHUNK_TAG_LEN          16
#define CHUNK_CIPHER_OVERHEAD  (CHUNK_NONCE_LEN + CHUNK_TAG_LEN)

/*
 * Seals len bytes (borrowed) with a fresh random key written to key: appends
 * nonce || ciphertext || tag to out. WFS_EINTERNAL if the random source or
 * OpenSSL fails (nothing appended). Any thread.
 */
wfs_err chunk_cipher_seal(const void *data, size_t len, uint8_t key[FILER_CHUNK_KEY_LEN],
			  buf *out);
/*
 * Opens a sealed blob of len bytes with key: appends the plaintext to out.
 * WFS_ECORRUPT (nothing appended) when the blob is shorter than the overhead
 * or fails authentication (wrong key, damaged or truncated). Any thread.
 */
wfs_err chunk_cipher_open(const uint8_t key[FILER_CHUNK_KEY_LEN], const uint8_t *blob, size_t len,
			  buf *out);

/*
 * Appends the plaintext of chunk c's whole blob (at most max_plain bytes) to
 * out: a plain chunk as blob_client_read, a sealed one fetched (max_plain plus
 * the overhead) and opened, with a log line naming the blob when it fails
 * authentication (WFS_ECORRUPT). Blocking.
 */
wfs_err chunk_cipher_read(blob_client *bc, const struct filer_chunk *c, size_t max_plain, buf *out);

/*
 * Seals data when encrypt is set (the key written to c->cipher_key and
 * c->has_cipher_key set) and saves the blob as blob_client_save; a plain save
 * otherwise. *fid and etag as blob_client_save.
 */
wfs_err chunk_cipher_save(blob_client *bc, const struct blob_assign_params *ap,
			  const struct blob_upload_params *up, bool encrypt, const void *data,
			  size_t len, struct filer_chunk *c, char **fid, char *etag);

#endif
