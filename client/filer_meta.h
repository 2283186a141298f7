/*
 * Typed calls of the filer's JSON entry API (docs/api-filer-json.md), shared
 * by the filer's clients (weedfs-mount, the gateways): each builds the
 * request body, calls filer_rpc_call and decodes the answer into struct
 * filer_entry. Every function returns WFS_OK or the wfs_err of its failure
 * (filer_rpc.h's mapping: the filer's code as sent; WFS_EIO for an answer
 * that does not decode) and is thread-safe.
 */
#ifndef WEEDFS_CLIENT_FILER_META_H
#define WEEDFS_CLIENT_FILER_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yajl/yajl_tree.h>
#include "client/entry.h"
#include "client/filer_rpc.h"

/*
 * Decodes an entry object (fullPath, mode, ..., chunks; docs/filer-events.md)
 * into a new entry. NULL when the object is malformed. Borrows v.
 */
struct filer_entry *filer_meta_entry_from_json(yajl_val v);

/* lookup's request body for path, appended to b (for callers that send it themselves). */
void filer_meta_lookup_body(buf *b, const char *path);
/*
 * A successful entry answer's body decoded, in either form (JSON, or the
 * stored encoding a lookup sent with Accept: FILER_ENTRY_MEDIA_TYPE gets, the
 * entry then named path): 0 with *out (caller frees) and the filer etag
 * (16 hex digits + NUL), each unless NULL; WFS_EIO for a malformed answer.
 */
wfs_err filer_meta_entry_answer(const char *body, size_t len, const char *path,
				struct filer_entry **out, char etag[17]);

/* lookup: *out (caller frees) is the entry at path. */
wfs_err filer_meta_lookup(filer_rpc *r, const char *path, struct filer_entry **out);
/*
 * lookup that also returns the entry's filer etag (16 hex digits + NUL: the
 * version create's if_etag and update's ifEtag compare). out may be NULL.
 */
wfs_err filer_meta_lookup_etag(filer_rpc *r, const char *path, struct filer_entry **out,
			       char etag[17]);

/* One page of a directory listing. */
struct filer_meta_page {
	struct filer_entry **entries; /* owned */
	size_t n;
	bool more;
	char *last_name; /* owned; the startName of the next page */
};
void filer_meta_page_free(struct filer_meta_page *p);
/* list: entries of dir after start ("" = from the first), at most limit. */
wfs_err filer_meta_list(filer_rpc *r, const char *dir, const char *start, size_t limit,
			struct filer_meta_page *out);
/*
 * Calls fn for every entry of dir in name order, page after page, until fn
 * returns false: WFS_OK, or the error of the listing that failed (WFS_ENOENT:
 * no such directory). Entries are borrowed for the call.
 */
wfs_err filer_meta_each(filer_rpc *r, const char *dir,
			bool (*fn)(const struct filer_entry *e, void *arg), void *arg);
/* The same from start (inclusive: at it), names beginning with prefix (NULL: all). */
wfs_err filer_meta_list_from(filer_rpc *r, const char *dir, const char *start, bool inclusive,
			     const char *prefix, size_t limit, struct filer_meta_page *out);

/* One of create's moves: the regular file from renamed to to (its missing parents made). */
struct filer_meta_move {
	const char *from, *to;
	const char *if_etag; /* move only this version of from (16 hex); NULL: any */
};

/*
 * What a create carries besides the path (docs/api-filer-json.md, create).
 * Every pointer is borrowed for the call; zero-initialised fields are absent.
 */
struct filer_meta_new {
	uint32_t mode; /* with the S_IFMT type */
	uint32_t uid, gid;
	uint64_t rdev;
	const char *symlink_target; /* symlinks only */
	int64_t time_ns;            /* mtime, atime, ctime and crtime; 0 = the filer's now */
	bool exclusive;
	const char *mime; /* entry.mime; NULL or "" = none */
	/* regular files: inline data (has_content; content may be NULL when content_len is 0,
	   at most 64 KiB) or a chunk list (n_chunks > 0), not both */
	const uint8_t *content;
	size_t content_len;
	bool has_content;
	const struct filer_chunk *chunks;
	size_t n_chunks;
	const struct filer_xattr *xattrs; /* the new entry's exact xattrs */
	size_t n_xattrs;
	const char *if_etag; /* replace only this version (16 hex); excludes exclusive */
	bool parents;        /* make missing parent directories */
	/* regular files deleted in the same transaction; the chunks the new entry lists are
	   taken over from them, their others freed (S3 CompleteMultipartUpload) */
	const char *const *consume;
	size_t n_consume;
	/* 0..16 files renamed in the same transaction, in order, before the target is looked
	   at (from may be the target: it makes room); S3 versioning keeps old versions so */
	const struct filer_meta_move *moves;
	size_t n_moves;
};
/*
 * create: *out (caller frees; may be NULL to ignore) is the new entry. A
 * stale if_etag (also a move's) is WFS_EPRECOND, a missing target with
 * if_etag, a missing consumed or moved file WFS_ENOENT, an existing move
 * target WFS_EEXIST. A create is not repeated once it may have been sent
 * (filer_rpc.h), so WFS_EIO may mean it committed: a caller that consumed
 * files looks the target up before it retries (a repeat would find them gone).
 */
wfs_err filer_meta_create(filer_rpc *r, const char *path, const struct filer_meta_new *n,
			  struct filer_entry **out);
/*
 * create's request body, appended to b; quiet: the answer leaves the entry
 * out. Returns the bytes of content at its end, sent raw after the JSON (the
 * request says so with API_RAW_CONTENT_HEADER), or -1 for none.
 */
int64_t filer_meta_create_body(buf *b, const char *path, const struct filer_meta_new *n,
			       bool quiet);
/* filer_meta_create that also returns the new entry's etag (16 hex + NUL; may be NULL). */
wfs_err filer_meta_create_etag(filer_rpc *r, const char *path, const struct filer_meta_new *n,
			       struct filer_entry **out, char etag[17]);

/* The fields an update sets (those whose flag is in set). */
#define FM_SET_MODE    0x01u
#define FM_SET_UID     0x02u
#define FM_SET_GID     0x04u
#define FM_SET_SIZE    0x08u
#define FM_SET_MTIME   0x10u
#define FM_SET_CTIME   0x20u
#define FM_SET_APPEND  0x40u
#define FM_SET_CHUNKS  0x80u  /* replace the chunk list with append[0..n_append) */
#define FM_SET_ATIME   0x100u /* independent of the mtime (the other is kept) */
#define FM_SET_CONTENT 0x200u /* the data becomes content[0..content_len) (inline) */
struct filer_meta_set {
	unsigned set;
	uint32_t mode; /* permission bits 07777 */
	uint32_t uid, gid;
	uint64_t size;
	int64_t mtime_ns, atime_ns, ctime_ns;
	const struct filer_chunk *append; /* FM_SET_APPEND / FM_SET_CHUNKS: borrowed */
	size_t n_append;
	char *const *drop; /* with FM_SET_APPEND: chunks the appended ones supersede */
	size_t n_drop;
	const uint8_t *content; /* FM_SET_CONTENT (excludes size and chunks): borrowed */
	size_t content_len;
	/* the filer commits the update durably ("fsync": true; an fsync's commit); with
	   no field set it changes nothing and makes the store's earlier commits durable */
	bool fsync;
};
/* update: *out (caller frees; may be NULL) is the entry after. */
wfs_err filer_meta_update(filer_rpc *r, const char *path, const struct filer_meta_set *s,
			  struct filer_entry **out);

wfs_err filer_meta_delete(filer_rpc *r, const char *path, bool recursive);
/*
 * delete of path (not recursive) only if its etag (lookup's) is if_etag:
 * WFS_EPRECOND when it is not (nothing deleted), WFS_ENOENT when path is missing.
 */
wfs_err filer_meta_delete_if(filer_rpc *r, const char *path, const char *if_etag);
wfs_err filer_meta_rename(filer_rpc *r, const char *from, const char *to, bool no_replace,
			  bool exchange);
/*
 * rename of from over to only if to exists with the etag if_etag (lookup's): to is
 * replaced. WFS_EPRECOND when to has another etag, WFS_ENOENT when from or to
 * is missing.
 */
wfs_err filer_meta_rename_if(filer_rpc *r, const char *from, const char *to, const char *if_etag);
/* link: newpath becomes another name of target; *out (may be NULL) is the new entry. */
wfs_err filer_meta_link(filer_rpc *r, const char *target, const char *newpath,
			struct filer_entry **out);

enum filer_meta_xflag { FM_XATTR_ANY, FM_XATTR_CREATE, FM_XATTR_REPLACE };
wfs_err filer_meta_set_xattr(filer_rpc *r, const char *path, const char *name, const void *value,
			     size_t len, enum filer_meta_xflag flag);
wfs_err filer_meta_remove_xattr(filer_rpc *r, const char *path, const char *name);
/*
 * set_xattr only while the entry's etag is if_etag (lookup's; NULL: any), checked
 * in the filer's transaction: the compare-and-swap of an attribute. WFS_EPRECOND
 * when the entry has another etag (nothing changed). *out and etag (each may be
 * NULL) are the entry after and its new etag.
 */
wfs_err filer_meta_set_xattr_if(filer_rpc *r, const char *path, const char *name,
				const void *value, size_t len, enum filer_meta_xflag flag,
				const char *if_etag, struct filer_entry **out, char etag[17]);

/* One change of filer_meta_set_xattrs_if (borrowed for the call). */
struct filer_meta_xattr_op {
	const char *path, *name;
	const void *value; /* NULL: remove the attribute */
	size_t len;
	enum filer_meta_xflag flag;
	const char *if_etag; /* 16 hex; NULL: any */
};
/*
 * The ops in one filer transaction, all or nothing. WFS_EPRECOND when an
 * op's if_etag is not its entry's (nothing changed), WFS_ENOENT for a
 * missing path; *failed (may be NULL) is then that op's index. etags (may be
 * NULL) receives each entry's new etag (n of them, 16 hex + NUL) on WFS_OK.
 * Other refusals that concern one op (WFS_EEXIST, WFS_ENODATA with its flag
 * or a remove, WFS_ENOSPC, WFS_EINVAL for an entry grown too big) name it
 * in *failed too; SIZE_MAX when the failure names no op. n is 1..64
 * (API_XATTR_OPS_MAX), else WFS_EINVAL. Not repeated once it may have been
 * sent (filer_rpc.h): WFS_EIO may mean it committed.
 */
wfs_err filer_meta_set_xattrs_if(filer_rpc *r, const struct filer_meta_xattr_op *ops, size_t n,
				 size_t *failed, char (*etags)[17]);
/* setXattrs' request body for ops[0..n), appended to b. */
void filer_meta_set_xattrs_body(buf *b, const struct filer_meta_xattr_op *ops, size_t n);

#endif
