/*
 * Object metadata kept in the object's filer entry: Content-Type in the
 * entry's mime, everything else in extended attributes named "s3.*":
 *
 *   s3.etag            the S3 ETag (MD5 hex, or "<md5 of md5s>-N" for multipart)
 *   s3.cksum.<alg>     a checksum the client sent (crc32, crc32c, crc64nvme, sha1,
 *                      sha256), base64 as S3 writes it
 *   s3.meta.<name>     user metadata (x-amz-meta-<name>, name in lower case)
 *   s3.h.<Header>      a content header: Cache-Control, Content-Disposition,
 *                      Content-Encoding, Content-Language, Expires
 *   s3.tagging         the tag set (s3_tagging.c)
 *
 * ETag and checksums describe the bytes, which the mount or the filer API can
 * change behind the gateway's back: their values end in "@<mtime ns>" and are
 * believed only while the entry's mtime is still that one; otherwise the
 * ETag is derived from the entry and no checksum is shown.
 */
#ifndef WEEDFS_S3_META_H
#define WEEDFS_S3_META_H

#include <stdbool.h>
#include <stdint.h>
#include "filer/entry.h"
#include "s3/checksum.h"

struct s3_req;

#define S3_XATTR_TAGGING "s3.tagging"

/* What a write gives its object besides the data: the attributes go in ->e's xattrs. */
struct s3_meta {
	struct filer_entry *e; /* a scratch entry holding the xattrs (sorted, unique) */
	char *mime;            /* Content-Type; NULL: none given */
};

/* S3's bound on user metadata: names and values of x-amz-meta-* together. */
#define S3_META_USER_MAX 2048

/*
 * Reads the metadata headers of a write (PutObject, CreateMultipartUpload,
 * CopyObject with REPLACE) into m (initialised here; free with
 * s3_meta_free), x-amz-tagging included. False with r's error answer:
 * MetadataTooLarge, InvalidTag, or InvalidArgument for a value S3 refuses.
 */
bool s3_meta_from_request(struct s3_req *r, struct s3_meta *m);
/* The same from name/value pairs (a POST form's fields) that at(src, i, ...) gives, tags aside. */
bool s3_meta_from_pairs(struct s3_req *r, struct s3_meta *m,
			bool (*at)(const void *src, size_t i, const char **name,
				   const char **value),
			const void *src);
/* Copies the user metadata, content headers and tags of src (a stored entry) into m. */
void s3_meta_from_entry(struct s3_meta *m, const struct filer_entry *src);
/* Records what the bytes hash to: the ETag (unquoted) and a checksum (alg may be NONE). */
void s3_meta_stamp(struct s3_meta *m, int64_t mtime_ns, const char *etag, enum s3_cksum alg,
		   const char *cksum_b64);
void s3_meta_free(struct s3_meta *m);

/*
 * The object's ETag, quoted: the stored one while it is current, else one
 * derived from the entry (xxh64 of size, mtime and chunk ids).
 */
#define S3_ETAG_MAX 72
void s3_etag(const struct filer_entry *e, char out[S3_ETAG_MAX]);

/* The object's current stored checksum into out, and its algorithm; NONE when there is none. */
enum s3_cksum s3_meta_checksum(const struct filer_entry *e, char out[S3_CKSUM_B64_SIZE]);

/*
 * Adds the stored metadata to r's answer (GetObject, HeadObject):
 * Content-Type, the content headers, x-amz-meta-*, and with
 * x-amz-checksum-mode: ENABLED the current checksum when the answer holds the
 * whole object (whole).
 */
void s3_meta_answer(struct s3_req *r, const struct filer_entry *e, bool whole);

#endif
