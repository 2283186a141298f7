/*
 * Server-side encryption (s3_sse.c): SSE-C, SSE-S3 and SSE-KMS of objects,
 * and a bucket's default encryption. docs/s3-gateway.md ("Encryption") says
 * how keys are kept; the object's xattrs:
 *
 *   s3.sse        the mode: "AES256" (SSE-S3), "aws:kms" or "C" (SSE-C)
 *   s3.sse.iv     the 8-byte IV prefix of each part, hex, joined by ','
 *                 (one for a single PUT)
 *   s3.sse.dk     SSE-S3/KMS: the data key wrapped (AES-256-GCM) by the key named by
 *   s3.sse.kid    the master key's or the KMS key's id
 *   s3.sse.cmd5   SSE-C: the key's MD5 (base64), echoed in answers
 *   s3.sse.chk    SSE-C: a random salt and HMAC-SHA256(salt, key), hex: tells the
 *                 right key without keeping it
 */
#ifndef WEEDFS_S3_SSE_H
#define WEEDFS_S3_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "err.h"

struct s3_req;
struct s3_gateway;
struct filer_entry;
struct filer_rpc;

enum s3_sse_mode { S3_SSE_NONE, S3_SSE_S3, S3_SSE_KMS, S3_SSE_C };

#define S3_SSE_KID_MAX 128
#define S3_XATTR_ENCRYPTION "s3.encryption" /* a bucket's default: "AES256" or "aws:kms <kid>" */

/* The cluster's keys: SSE-S3 master keys and the KMS key store. */
struct s3_sse_keys;
/*
 * Loads key_file (-sse.keyFile: lines "<id> <64 hex digits>", the first the
 * current master key; NULL: the filer's generated key, read on first use) and
 * kms_file (-sse.kmsKeys: JSON, docs/s3-gateway.md; NULL: no KMS). NULL with
 * msg on a bad file.
 */
struct s3_sse_keys *s3_sse_keys_new(const char *key_file, const char *kms_file,
				    struct filer_rpc *filer, char *msg, size_t msglen);
void s3_sse_keys_free(struct s3_sse_keys *k);

/* How one object is (to be) encrypted: its mode, data key and parts' IVs (opaque). */
struct s3_sse;
void s3_sse_free(struct s3_sse *s);

/*
 * The encryption a write asks for: its x-amz-server-side-encryption* headers
 * (checked: S3's errors), else the bucket's default (bucket: its entry, may
 * be NULL). *out is NULL for none. False with r's error answer. Any thread but
 * the wrap of SSE-S3 keys (s3_sse_seal) happens later, on a worker.
 */
bool s3_sse_for_write(struct s3_req *r, const struct filer_entry *bucket, struct s3_sse **out);
/* Whether the request carries any x-amz-server-side-encryption* header. */
bool s3_sse_requested(struct s3_req *r);
/* Wraps the data key (SSE-S3/KMS) and adds s's xattrs to e; false with r's answer. Worker. */
bool s3_sse_seal(struct s3_req *r, struct s3_sse *s, struct filer_entry *e);
/* Adds the answer headers of s (the mode, the KMS key id, the SSE-C key MD5) to r. */
void s3_sse_headers(struct s3_req *r, const struct s3_sse *s);
/*
 * The encryption of a stored object e, its key unwrapped or checked against
 * the request's SSE-C headers (copy_source: the x-amz-copy-source-... ones):
 * *out NULL when e is not encrypted. False with r's answer (InvalidRequest
 * without a needed key, AccessDenied for a wrong one). Any thread; SSE-S3
 * may read the filer's master key (a worker) the first time.
 */
bool s3_sse_for_read(struct s3_req *r, const struct filer_entry *e, bool copy_source,
		     struct s3_sse **out);
/*
 * En- or decrypts (AES-256-CTR: the same) n bytes at plaintext offset off
 * in place. The counter of part i is its IV prefix and the block index from
 * the part's start. Any thread (s is only read).
 */
void s3_sse_crypt(const struct s3_sse *s, uint64_t off, void *data, size_t n);

/*
 * Whether s3_sse_seal of s (a write's), or s3_sse_for_read of the stored
 * entry e, can run without filer I/O or waiting for a lock: SSE-C and KMS
 * always, SSE-S3 once its master key is loaded. Any thread (the loop's fast
 * paths ask).
 */
bool s3_sse_write_ready(struct s3_gateway *g, const struct s3_sse *s);
bool s3_sse_read_ready(struct s3_gateway *g, const struct filer_entry *e);
/* A part of an upload: a new IV for the data key the upload's s3_sse_for_read gave. */
bool s3_sse_fresh_iv(struct s3_sse *s);
/*
 * CompleteMultipartUpload: the upload's encryption (dir: its directory) into
 * into's xattrs, with the IVs of its parts (n, in the object's order). No-op
 * for an upload without one; false with r's answer (a part stored plain).
 */
bool s3_sse_inherit(struct s3_req *r, const struct filer_entry *dir,
		    const struct filer_entry *const *parts, size_t n, struct filer_entry *into);
/* The answer headers of a stored entry's encryption (no key needed). */
void s3_sse_stored_headers(struct s3_req *r, const struct filer_entry *e);

/* PutBucketEncryption / GetBucketEncryption / DeleteBucketEncryption, on a worker. */
void s3_put_encryption(struct s3_req *r);
void s3_get_encryption(struct s3_req *r);
void s3_delete_encryption(struct s3_req *r);
/*
 * Parses a ServerSideEncryptionConfiguration into its stored form ("AES256",
 * "aws:kms" or "aws:kms <kid>") in out; NULL, or why it is refused
 * (*malformed: not the schema at all).
 */
const char *s3_sse_config_parse(const char *xml, size_t len, buf *out, bool *malformed);

#endif
