/*
 * Object metadata kept in the object's filer entry: Content-Type in the
 * entry's mime, everything else in extended attributes named "s3.*":
 *
 *   s3.etag            the S3 ETag (MD5 hex, or "<md5 of md5s>-N" for multipart)
 *   s3.cksum.<alg>     a checksum the client sent (crc32, crc32c, crc64nvme, sha1,
 *                      sha256), base64 as S3 writes it; a multipart object's is
 *                      FULL_OBJECT (the CRC of the bytes, combined from the
 *                      parts') or COMPOSITE, "<base64>-<N>": the checksum of the
 *                      parts' checksums, not of the bytes
 *   s3.parts           a multipart object's part sizes: "<size>" or
 *                      "<size>*<count>" (a run of equal sizes) joined by ','
 *   s3.parts.cksum     its parts' checksums (of the object's algorithm, base64)
 *                      joined by ',', when the upload had a checksum algorithm
 *   s3.meta.<name>     user metadata (x-amz-meta-<name>, name in lower case)
 *   s3.h.<Header>      a content header: Cache-Control, Content-Disposition,
 *                      Content-Encoding, Content-Language, Expires
 *   s3.tagging         the tag set (s3_tagging.c)
 *
 * ETag, checksums and part sizes describe the bytes, which the mount or the filer API can
 * change behind the gateway's back: their values end in "@<mtime ns>" and are
 * believed only while the entry's mtime is still that one; otherwise the
 * ETag is derived from the entry, no checksum is shown and the object has
 * one part.
 */
#ifndef WEEDFS_S3_META_H
#define WEEDFS_S3_META_H

#include <stdbool.h>
#include <stdint.h>
#include "client/entry.h"
#include "s3/checksum.h"
#include "s3/xml.h"

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
/* Records a multipart object's part sizes (n of them, in part order), stamped like the ETag. */
void s3_meta_stamp_parts(struct s3_meta *m, int64_t mtime_ns, const uint64_t *sizes, size_t n);
/* Records its parts' checksums: list is their base64 values joined by ',', in part order. */
void s3_meta_stamp_part_checksums(struct s3_meta *m, int64_t mtime_ns, const char *list);
void s3_meta_free(struct s3_meta *m);

/*
 * The object's ETag, quoted: the stored one while it is current, else one
 * derived from the entry (xxh64 of size, mtime and chunk ids).
 */
#define S3_ETAG_MAX 72
void s3_etag(const struct filer_entry *e, char out[S3_ETAG_MAX]);

/* A stored checksum value: base64, or a COMPOSITE "<base64>-<N>" (N up to 10000). */
#define S3_CKSUM_VALUE_MAX 64
/* The object's current stored checksum into out, and its algorithm; NONE when there is none. */
enum s3_cksum s3_meta_checksum(const struct filer_entry *e, char out[S3_CKSUM_VALUE_MAX]);
/* The current stored checksum of algorithm a into out; false when there is none. */
bool s3_meta_checksum_alg(const struct filer_entry *e, enum s3_cksum a,
			  char out[S3_CKSUM_VALUE_MAX]);
/* The checksum type of a stored value: "COMPOSITE" (it ends in "-<N>") or "FULL_OBJECT". */
const char *s3_meta_checksum_type(const char *value);
/* A listing's ChecksumAlgorithm and ChecksumType of e, when it has a checksum. */
void s3_checksum_elems(xml_w *w, const struct filer_entry *e);

/*
 * The parts of a multipart object: their number (0 when none are recorded
 * or the record is stale: the object is then one part), and when 1 <= n <=
 * that number, part n's offset and length.
 */
uint32_t s3_meta_part(const struct filer_entry *e, uint32_t n, uint64_t *off, uint64_t *len);
/*
 * Part n's recorded checksum (base64, of the object's algorithm) into out;
 * false when none is recorded (no checksum algorithm, a stale record) or n is
 * past the parts.
 */
bool s3_meta_part_checksum(const struct filer_entry *e, uint32_t n, char out[S3_CKSUM_B64_SIZE]);
/* The whole record, "<base64>,<base64>,..." (*len bytes, not NUL-terminated); NULL: none. */
const char *s3_meta_part_checksums(const struct filer_entry *e, size_t *len);
/*
 * Takes the next item of such a record: returns its start and sets *item_len,
 * moving *v and *len past it and its ','; *v becomes NULL after the last one.
 */
const char *s3_meta_list_next(const char **v, size_t *len, size_t *item_len);

/*
 * Adds the stored metadata to r's answer (GetObject, HeadObject):
 * Content-Type, the content headers, x-amz-meta-*, and with
 * x-amz-checksum-mode: ENABLED the current checksum and its type
 * (x-amz-checksum-type) when the answer holds the whole object (whole).
 */
void s3_meta_answer(struct s3_req *r, const struct filer_entry *e, bool whole);

#endif
