/*
 * The request parser of the filer's JSON entry API (docs/api-filer-json.md):
 * turns one operation name and its JSON body into a validated struct
 * api_req. Strict: unknown fields, wrong types, out-of-range numbers,
 * non-canonical paths, "." / ".." components and NUL bytes are refused with
 * a message, so a handler only ever sees well-formed input. Pure (no I/O, no
 * globals): the fuzz target drives it directly.
 */
#ifndef WEEDFS_FILER_FILER_API_PARSE_H
#define WEEDFS_FILER_FILER_API_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "client/entry.h"
#include "client/filer_wire.h"

enum api_op {
	API_LOOKUP,
	API_LIST,
	API_CREATE,
	API_UPDATE,
	API_DELETE,
	API_RENAME,
	API_SET_XATTR,
	API_REMOVE_XATTR,
	API_ASSIGN,
	API_LOOKUP_VOLUME,
	API_LINK,
	API_STATFS,
	API_FREE_CHUNKS,
	API_SET_XATTRS,
	API_CONFIGURATION,
};

/* Fields of update's "set" that were present. */
#define API_SET_MODE    0x001u
#define API_SET_UID     0x002u
#define API_SET_GID     0x004u
#define API_SET_SIZE    0x008u
#define API_SET_MTIME   0x010u
#define API_SET_CTIME   0x020u
#define API_SET_CHUNKS  0x040u
#define API_SET_APPEND  0x080u
#define API_SET_ATIME   0x100u
#define API_SET_CONTENT 0x200u /* content: the data replaced by inline bytes */
#define API_SET_DROP    0x400u /* dropChunks (in fids): chunks the appended ones supersede */

enum api_xattr_flag { API_XATTR_ANY, API_XATTR_CREATE, API_XATTR_REPLACE };

/* One of create's "moves": the regular file from renamed to to (owned strings). */
struct api_move {
	char *from, *to; /* canonical, not the root */
	char *if_etag;   /* 16 hex digits or NULL: move only that version of from */
};

/* One of setXattrs' "ops": set (value) or remove (no value) one attribute (owned strings). */
struct api_xattr_op {
	char *path, *dir, *name; /* the entry, canonical, and its split */
	char *xname;             /* 1..FILER_SHORT_MAX bytes */
	bool remove;             /* no "value": the attribute goes */
	uint8_t *value;          /* the decoded value (not NULL unless remove) */
	size_t len;
	enum api_xattr_flag flag; /* API_XATTR_ANY for a remove */
	char *if_etag;            /* 16 hex digits or NULL: change only that version */
};

/* One parsed request. Every pointer is owned (api_req_free). */
struct api_req {
	enum api_op op;
	/* lookup, update, delete, setXattr, removeXattr: path; list: dir; rename: from */
	char *path, *dir, *name; /* path and its split */
	/* rename: to; link: newPath (path is the target) */
	char *path2, *dir2, *name2;
	/* list */
	char *start, *prefix;
	bool inclusive;
	size_t limit;
	/* create: the new entry (dir/name set, attributes, xattrs, content, chunks) */
	struct filer_entry *entry;
	bool exclusive;
	bool parents; /* create: make missing parent directories */
	bool quiet;   /* create: answer only the new entry's etag */
	/* create: canonical paths of regular files to delete in the same transaction,
	   sorted by byte value, no duplicates, none equal to path; 0..API_CONSUME_MAX */
	char **consume;
	size_t nconsume;
	/* create: files renamed in the same transaction before the target is looked at,
	   in the given order; 0..API_MOVES_MAX. No path twice among every from and to,
	   no to equal to path, none in consume */
	struct api_move *moves;
	size_t nmoves;
	/* update */
	unsigned set;
	struct filer_attr attr;     /* only the numeric fields named by set */
	struct filer_entry *chunks; /* chunks (API_SET_CHUNKS) or appendChunks, in ->chunks */
	uint8_t *content;           /* API_SET_CONTENT: the new bytes */
	size_t content_len;
	bool fsync; /* commit durably; with an empty set: only make earlier commits durable */
	/* update; create (16 hex digits: replace only if it matches); delete (delete only
	   if it matches); rename (to must exist and match) */
	char *if_etag;
	/* delete, rename */
	bool recursive, no_replace, exchange;
	/* xattrs */
	char *xname;
	uint8_t *xvalue;
	size_t xvalue_len;
	enum api_xattr_flag xflag;
	/* setXattrs: 1..API_XATTR_OPS_MAX changes in the given order, no (path, name) twice */
	struct api_xattr_op *xops;
	size_t nxops;
	/* assign, lookupVolume */
	uint32_t count;
	char *collection, *replication, *ttl;
	uint32_t volume_id;
	/* freeChunks, update's dropChunks: valid file ids (fid_parse), 1..API_FREE_MAX,
	   no duplicates removed */
	char **fids;
	size_t nfids;
};

/*
 * Parses the body of operation op (e.g. "lookup"); len bytes, need not be
 * NUL-terminated. raw (raw_len bytes; NULL for none) is the content sent raw
 * after the JSON, which only create and update take. On WFS_OK *out is owned
 * by the caller. WFS_ENOENT for an unknown op, WFS_EINVAL for a bad body;
 * either way msg holds a reason. Any thread.
 */
wfs_err api_req_parse(const char *op, const char *body, size_t len, const uint8_t *raw,
		      size_t raw_len, struct api_req **out, char *msg, size_t msglen);
/* Frees r. NULL does nothing. */
void api_req_free(struct api_req *r);

#endif
