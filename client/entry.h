/*
 * Filer entries: one file, directory, symlink or device node in the namespace,
 * and its versioned binary encoding (the blob stored in the database; the byte
 * layout is in docs/filer-entry-format.md).
 *
 * The fields are public because every layer (stores, HTTP, mount protocol)
 * reads and fills them. Every pointer field is owned by the entry and released
 * by filer_entry_free. Strings that are empty may be NULL; the decoder always
 * yields NULL for an empty string.
 */
#ifndef WEEDFS_CLIENT_ENTRY_H
#define WEEDFS_CLIENT_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "err.h"

#define FILER_ENTRY_VERSION 1

/* The media type of an entry sent in this encoding (lookup's binary answer, api-filer-json.md). */
/* The inode number of the filer's root directory (others are assigned from 2 on). */
#define FILER_ROOT_INODE 1

#define FILER_ENTRY_MEDIA_TYPE "application/x-weedfs-entry"

/* Bounds enforced by both the encoder's callers (filer_entry_check) and the decoder. */
#define FILER_NAME_MAX        255          /* bytes of one path component */
/* a full path: Linux bounds the path one call passes (4,096), not a tree's depth */
#define FILER_PATH_MAX        32768        /* bytes of a full path (32 KiB) */
#define FILER_SYMLINK_MAX     4096         /* bytes of a symlink target (Linux's PATH_MAX) */
#define FILER_SHORT_MAX       255          /* mime, collection, replication, xattr name */
#define FILER_HARDLINK_ID_MAX 64           /* bytes of a hard-link id */
#define FILER_FID_MAX         64           /* bytes of a chunk's file id */
#define FILER_ETAG_MAX        128          /* bytes of a chunk's etag */
#define FILER_CHUNK_KEY_LEN   32           /* bytes of a chunk's cipher key (AES-256) */
#define FILER_XATTR_VALUE_MAX (1u << 20)   /* one extended attribute value */
#define FILER_XATTRS_MAX      4096         /* extended attributes per entry */
#define FILER_CONTENT_MAX     (4u << 20)   /* inline content */
#define FILER_CHUNKS_MAX      (1u << 20)   /* chunks in one list (entry or manifest) */
#define FILER_ENCODED_MAX     (128u << 20) /* whole encoded entry */

struct filer_chunk {
	char *fid;        /* owned; the volume file id, e.g. "3,01637037d6" */
	uint64_t offset;  /* logical offset of the chunk's first byte in the file */
	uint64_t size;    /* bytes of file data the chunk covers */
	int64_t mtime_ns; /* when written: newer chunks hide older ones where they overlap */
	char *etag;       /* owned, may be NULL */
	bool is_manifest; /* the blob is a manifest listing more chunks (chunks.h) */
	/* -encryptVolumeData: the blob is sealed with this AES-256-GCM key (chunk_cipher.h);
	   size and offset stay the plaintext's, the blob is CHUNK_CIPHER_OVERHEAD longer */
	bool has_cipher_key;
	uint8_t cipher_key[FILER_CHUNK_KEY_LEN];
};

struct filer_xattr {
	char *name;     /* owned, 1..FILER_SHORT_MAX bytes */
	uint8_t *value; /* owned, may be NULL when value_len is 0 */
	size_t value_len;
};

struct filer_attr {
	uint32_t mode; /* permission bits and the S_IFMT file type */
	uint32_t uid, gid;
	uint64_t size; /* logical file size */
	int64_t mtime_ns, ctime_ns, crtime_ns;
	int64_t atime_ns; /* last access; 0 = never stored, readers take mtime_ns */
	uint32_t nlink;
	uint64_t rdev;
	uint32_t ttl_sec;      /* 0 = never expires */
	char *mime;            /* owned, may be NULL */
	char *collection;      /* owned, may be NULL */
	char *replication;     /* owned, may be NULL */
	char *symlink_target;  /* owned, may be NULL */
	uint8_t *hard_link_id; /* owned; NULL and 0 when the entry is not a hard link */
	size_t hard_link_id_len;
	/* the filer's persistent inode number: unique, kept across renames, shared by
	   hard links; 0 = none assigned (an entry not stored yet, or a client's) */
	uint64_t inode;
};

struct filer_entry {
	char *dir;  /* owned; "/" or "/a/b" without a trailing slash */
	char *name; /* owned; "" only for the root itself */
	struct filer_attr attr;
	struct filer_xattr *xattrs; /* owned, sorted by name, names unique */
	size_t n_xattrs;
	uint8_t *content; /* owned inline content, meaningful when has_content */
	size_t content_len;
	bool has_content;
	/* Events only: the entry had content_len bytes of inline content, left out (content
	   NULL, has_content false); a reader who needs them looks the entry up. */
	bool content_omitted;
	struct filer_chunk *chunks; /* owned, in write order */
	size_t n_chunks;
	size_t cap_chunks;
};

/* A zeroed entry at dir/name (both copied). Any thread. Caller frees with filer_entry_free. */
struct filer_entry *filer_entry_new(const char *dir, const char *name);
/* Releases e and everything it owns. filer_entry_free(NULL) does nothing. */
void filer_entry_free(struct filer_entry *e);
/* A deep copy. Borrows e. */
struct filer_entry *filer_entry_dup(const struct filer_entry *e);
/* Replaces e's path (copied). */
void filer_entry_set_path(struct filer_entry *e, const char *dir, const char *name);
/* Newly allocated "dir/name" (or "/" for the root). Caller frees. */
char *filer_entry_full_path(const struct filer_entry *e);

/*
 * Splits a normalised absolute path into a newly allocated directory and name
 * ("/a/b" -> "/a", "b"; "/" -> "/", ""). WFS_EINVAL for a relative path, an
 * empty, "." or ".." component, a doubled or trailing slash, a NUL, a component
 * over FILER_NAME_MAX or a path over FILER_PATH_MAX.
 */
wfs_err filer_path_split(const char *path, char **dir, char **name);

/* Sets name to a copy of value (replacing any old value). */
void filer_entry_xattr_set(struct filer_entry *e, const char *name, const void *value, size_t len);
/* The attribute named name or NULL; borrowed from e. */
const struct filer_xattr *filer_entry_xattr_get(const struct filer_entry *e, const char *name);
/* Removes name; WFS_ENOENT if absent. */
wfs_err filer_entry_xattr_remove(struct filer_entry *e, const char *name);

/* Sets inline content to a copy of data (len may be 0: an empty inline file). */
void filer_entry_set_content(struct filer_entry *e, const void *data, size_t len);
/* Drops inline content. */
void filer_entry_clear_content(struct filer_entry *e);
/* Appends a chunk (fid and etag copied; etag may be NULL). Returns the chunk in e. */
struct filer_chunk *filer_entry_add_chunk(struct filer_entry *e, const char *fid, uint64_t offset,
					  uint64_t size, int64_t mtime_ns, const char *etag,
					  bool is_manifest);
/* Appends a deep copy of src (its cipher key included). Returns the chunk in e. */
struct filer_chunk *filer_entry_push_chunk(struct filer_entry *e, const struct filer_chunk *src);
/* Frees the chunks' strings (not the array). */
void filer_chunks_clear(struct filer_chunk *c, size_t n);
/* Frees the strings and the array. */
void filer_chunks_free(struct filer_chunk *c, size_t n);
/* Deep copy of one chunk into *dst. */
void filer_chunk_copy(struct filer_chunk *dst, const struct filer_chunk *src);
/* Gives dst src's cipher key (or none): a record rebuilt from another keeps reading its blob. */
void filer_chunk_copy_key(struct filer_chunk *dst, const struct filer_chunk *src);

/* WFS_OK if every field is within the bounds above (so the entry encodes and decodes back). */
wfs_err filer_entry_check(const struct filer_entry *e);

/*
 * Appends the encoding of e (everything but dir and name, which are the
 * store's key) to out. WFS_EINVAL if filer_entry_check fails (out unchanged).
 */
wfs_err filer_entry_encode(const struct filer_entry *e, buf *out);
/*
 * Decodes len bytes into a new entry at dir/name (copied). Never trusts a
 * length: WFS_ECORRUPT on any malformed, truncated or over-long input or an
 * unknown (newer) version. *out is owned by the caller on WFS_OK.
 * The encoding is canonical: re-encoding a decoded entry gives the same bytes.
 */
wfs_err filer_entry_decode(const uint8_t *data, size_t len, const char *dir, const char *name,
			   struct filer_entry **out);
/* The version byte of an encoded entry, or -1 if len is 0. */
int filer_entry_encoded_version(const uint8_t *data, size_t len);

/*
 * The chunk-list codec shared by entries and manifests: appends n chunks
 * (count then records) to out. Chunks must pass the bounds above.
 */
void filer_chunk_list_encode(buf *out, const struct filer_chunk *c, size_t n);
/*
 * Decodes a chunk list from p[0..len); *used is the bytes consumed. On WFS_OK
 * the caller owns *out (free with filer_chunks_free). WFS_ECORRUPT otherwise.
 */
wfs_err filer_chunk_list_decode(const uint8_t *p, size_t len, size_t *used,
				struct filer_chunk **out, size_t *n);

#endif
