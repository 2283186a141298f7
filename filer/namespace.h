/*
 * The filer's namespace core: every change of the tree of entries, for the
 * front ends that parse requests and write answers (filer_api.c, the JSON
 * entry API; filer_ops.c, filer_write.c, filer_tag.c, filer_tus.c, the REST
 * API; filer_ttl.c, the expiry sweeper).
 *
 * DESIGN: the core owns what makes a change correct, so no front end repeats
 * it:
 *   - the transaction scope (struct ns_tx, ns_scope.c): the namespace locks,
 *     the store transaction, the change's events and the chunks it frees. A
 *     front end or an operation takes the locks (ns_lock_*), begins
 *     (ns_begin), records events in t->evs and freed chunks in t->g, and
 *     commits (ns_commit: the chunks are queued in the garbage queue in the
 *     same transaction, the events are appended at commit, the garbage worker
 *     is woken after it) or ends (ns_end: rollback, unlock, free) in one place;
 *   - the directory walk (struct ns_page, ns_walk), the accounting of a
 *     removed name (ns_drop_name: hard links, filer_hardlink.h) and the entry
 *     etag;
 *   - the operations (ns_tree.c: delete of a tree, rename and move of a
 *     tree, link; ns_entry.c: create, update and the other read-modify-writes
 *     of one entry such as xattrs), each in one transaction of its own.
 * The core never writes an HTTP answer: an operation returns a wfs_err and
 * fills a struct ns_result (the error and a message) that the front end turns
 * into its own answer (its status table, its wording of the code).
 *
 * Locking (filer_int.h): a change of one path holds the read side of
 * f->ns_lock and that path's stripe; a change of several paths the read side
 * and each of their distinct stripes in increasing index; a change of a tree
 * (a recursive delete, a rename, a link) the write side. Lock order: ns_lock,
 * then stripes in increasing index, then the store's own locks, so the path
 * locks are taken BEFORE filer_store_begin and never inside a transaction
 * (ns_lock_* asserts it: a deadlock once came from taking them inside).
 *
 * Threads: the functions block (store calls; some fetch manifests from volume
 * servers), so they run on worker threads, except the JSON API's changes that
 * touch only a local store (filer_api.c: no manifest fetch, no fsync, no
 * tree), which may run on a loop thread; a struct ns_tx belongs to the thread
 * that began it.
 */
#ifndef WEEDFS_FILER_NAMESPACE_H
#define WEEDFS_FILER_NAMESPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "client/entry.h"
#include "filer/filer_int.h"
#include "filer/store.h"

/* ---- results ---- */

/*
 * What an operation says about itself. below: err came from the store or the
 * blob client (msg says what was being done, as "what: why"); otherwise err is
 * the operation's verdict on the request (no such entry, not empty, ...).
 */
struct ns_result {
	wfs_err err;
	bool below;
	char msg[512];
};

/* Records a verdict in res (printf-style message); returns err. */
wfs_err ns_fail(struct ns_result *res, wfs_err err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Records a failure from below in res ("what: <wfs_strerror(err)>"); returns err. */
wfs_err ns_fail_below(struct ns_result *res, wfs_err err, const char *what);

/* ---- chunks freed by a change ---- */

/* A growable list of chunks (owned copies) a change stops referencing. */
struct ns_garbage {
	struct filer_chunk *c;
	size_t n, cap;
};

/* Appends a copy of c (borrowed). */
void ns_garbage_add(struct ns_garbage *g, const struct filer_chunk *c);
/* Appends copies of every chunk of e (borrowed). */
void ns_garbage_entry(struct ns_garbage *g, const struct filer_entry *e);
/* Frees the list; it is empty and reusable afterwards. */
void ns_garbage_clear(struct ns_garbage *g);

/* ---- the transaction scope ---- */

enum ns_lock_mode { NS_LOCK_NONE, NS_LOCK_PATHS, NS_LOCK_TREE };

/*
 * One change in progress. Fields an operation uses: f, tx (the store
 * transaction once begun, NULL after commit or end), evs (the change's events,
 * filer_evs_add), g (the chunks it frees), keep_chunks (set: g is not queued
 * for deletion, skipChunkDeletion), res (where failures are recorded). The
 * lock fields are the scope's own.
 */
struct ns_tx {
	struct filer *f;
	struct filer_tx *tx;
	struct filer_evs evs;
	struct ns_garbage g;
	bool keep_chunks;
	int32_t sig; /* the client's signature for the events (0: none) */
	struct ns_result *res;
	enum ns_lock_mode lock;
	unsigned *stripes; /* NS_LOCK_PATHS: distinct stripe indexes, increasing */
	size_t nstripes;
};

/*
 * Prepares t for a change by f, whose events carry sig (0: none) and whose
 * failures go to res (borrowed; must outlive t). Nothing is locked or begun.
 */
void ns_tx_init(struct ns_tx *t, struct filer *f, int32_t sig, struct ns_result *res);
/* Takes the locks of one path. Before ns_begin, at most one ns_lock_* per scope. */
void ns_lock_path(struct ns_tx *t, const char *path);
/*
 * Takes the locks of paths[0..n) (borrowed): the read side of ns_lock, then
 * each distinct stripe in increasing index, so two changes locking
 * overlapping sets cannot deadlock. Before ns_begin.
 */
void ns_lock_paths(struct ns_tx *t, const char *const *paths, size_t n);
/* Takes the tree lock (the write side of ns_lock). Before ns_begin. */
void ns_lock_tree(struct ns_tx *t);
/* Begins the store transaction (failure recorded as "begin"). */
wfs_err ns_begin(struct ns_tx *t);
/* ns_tx_init, ns_lock_path and ns_begin: a change of one path. ns_end t either way. */
wfs_err ns_begin_path(struct ns_tx *t, struct filer *f, int32_t sig, struct ns_result *res,
		      const char *path);
/* ns_tx_init, ns_lock_tree and ns_begin: a change of a tree. ns_end t either way. */
wfs_err ns_begin_tree(struct ns_tx *t, struct filer *f, int32_t sig, struct ns_result *res);
/*
 * Queues t->g in the garbage queue (unless keep_chunks) and commits t->tx
 * with t->evs, plus the events the other names of hard-linked files it
 * changed are owed (filer_hardlink_fanout); a scope without events commits
 * without waking subscribers. Then wakes the garbage worker if chunks were
 * queued. t->tx is released either way. Failure recorded as "commit". The
 * locks stay held until ns_end.
 */
wfs_err ns_commit(struct ns_tx *t);
/* Rolls back t->tx now (if any): the locks stay held until ns_end. */
void ns_rollback(struct ns_tx *t);
/* Rolls back what was not committed, releases the locks, frees the events and garbage. */
void ns_end(struct ns_tx *t);

/* ---- reads and helpers inside a scope ---- */

/* One page of a directory listing: entries owned by the page. */
struct ns_page {
	struct filer_entry **v;
	size_t n, cap;
};

/* A filer_list_fn that appends the listed entry (ownership moves) to the ns_page ctx. */
bool ns_page_add(void *ctx, struct filer_entry *e);
/* Frees the page's entries and array; the page is empty and reusable afterwards. */
void ns_page_free(struct ns_page *p);

/*
 * Calls fn for every child of dir (borrowed for the call; fn may change it),
 * reading the directory page by page inside tx (NULL: no transaction). fn's
 * first error ends the walk and is returned, unless ignore is set: then the
 * walk goes on and the first error is returned at the end.
 */
typedef wfs_err (*ns_child_fn)(void *ctx, struct filer_tx *tx, struct filer_entry *child);
wfs_err ns_walk(struct filer *f, struct filer_tx *tx, const char *dir, ns_child_fn fn, void *ctx,
		bool ignore);

/*
 * Inside t, the entry at path (dir/name; the root is a directory even when
 * not stored) into *e (caller frees). WFS_ENOENT is a verdict ("not found").
 */
wfs_err ns_find(struct ns_tx *t, const char *path, const char *dir, const char *name,
		struct filer_entry **e);

/* Whether the directory path has no child, inside tx. */
wfs_err ns_dir_is_empty(struct filer *f, struct filer_tx *tx, const char *path, bool *empty);

/*
 * Accounts for the removal of the name e (borrowed, as stored; the caller
 * deletes the entry): a hard-linked name drops its file's nlink, and the last
 * name's shared chunks go to t->g (filer_hardlink.h). Unlinked: nothing.
 */
wfs_err ns_drop_name(struct ns_tx *t, const struct filer_entry *e);

/* Bytes of an entry etag with its NUL: xxh64 of the stored encoding in 16 hex digits. */
#define NS_ETAG_SIZE 17
/* e's etag (any change to an entry changes it) into out. */
void ns_etag(const struct filer_entry *e, char out[NS_ETAG_SIZE]);
/*
 * Inside t: whether e (at path, as stored; a hard-linked name shows its
 * shared file's etag, as lookup does) has the etag want (case-insensitive
 * hex). WFS_EPRECOND when not.
 */
wfs_err ns_etag_check(struct ns_tx *t, const struct filer_entry *e, const char *path,
		      const char *want);
/*
 * Inside t: whether dir exists and is a directory; WFS_ENOENT or WFS_ENOTDIR
 * when not (the JSON API's rule for a new name's parent).
 */
wfs_err ns_parent_check(struct ns_tx *t, const char *dir);
/*
 * Inside t: makes dir and its missing parents (filer_mkdir_p, an event each);
 * WFS_ENOTDIR when a file is in the way (what names the path being made).
 */
wfs_err ns_make_parents(struct ns_tx *t, const char *dir, const char *what);

/* ---- tree operations (ns_tree.c) ---- */

/* A delete of path (split into dir and name; not the root). Strings borrowed. */
struct ns_delete {
	const char *path, *dir, *name;
	bool recursive;     /* a non-empty directory goes with everything below it */
	bool ignore_errors; /* REST ignoreRecursiveError: a child that fails is passed over */
	bool keep_chunks;   /* REST skipChunkDeletion: the chunks stay on the volumes */
	const char *if_etag; /* NULL, or delete only that version */
};
/*
 * Deletes d->path under the tree lock, in one transaction: an event per
 * removed entry (descendants first), their chunks to the garbage queue.
 * Verdicts: WFS_EINVAL (the root), WFS_ENOENT, WFS_EPRECOND (if_etag),
 * WFS_ENOTEMPTY (a non-empty directory without recursive).
 */
wfs_err ns_delete(struct filer *f, int32_t sig, const struct ns_delete *d, struct ns_result *res);

/* The rules a rename follows. */
enum ns_rename_style {
	/*
	 * rename(2), the JSON API: to's parent must exist; a file replaces a
	 * file, a directory an empty directory; a name renamed onto another
	 * name of the same hard-linked file changes nothing.
	 */
	NS_RENAME_POSIX,
	/*
	 * SeaweedFS's mv.from: a to that is an existing directory receives
	 * from under from's name; to's missing parents are made; only a file
	 * replaces a file.
	 */
	NS_RENAME_SEAWEED,
};

/* A rename of from to to (each with its split; strings borrowed). */
struct ns_rename {
	enum ns_rename_style style;
	const char *from, *from_dir, *from_name;
	const char *to, *to_dir, *to_name;
	bool no_replace; /* an existing to is WFS_EEXIST */
	bool exchange;   /* from and to (both must exist) swap */
	const char *if_etag; /* NULL, or to must exist at that version */
};
/*
 * Renames (moves) from, with its whole tree, to to under the tree lock, in
 * one transaction: one rename event (old and new entry), the replaced
 * target's delete event and chunks. Renaming onto itself does nothing.
 * Verdicts: WFS_ENOENT (from, to's parent, exchange's or if_etag's to),
 * WFS_ENOTDIR (to's parent; a directory over a non-directory), WFS_EISDIR
 * (a non-directory over a directory), WFS_ENOTEMPTY, WFS_EEXIST (no_replace;
 * SEAWEED: a directory on either side), WFS_EPRECOND, WFS_EINVAL (a
 * directory into itself, the root).
 */
wfs_err ns_rename(struct filer *f, int32_t sig, const struct ns_rename *r, struct ns_result *res);

/*
 * SeaweedFS's target rule (mv.from, cp.from): dir/name, or src_name inside it
 * when dir/name is an existing directory (the root included). On WFS_OK
 * *tdir and *tname are newly allocated. Inside tx (NULL: none).
 */
wfs_err ns_target_into(struct filer *f, struct filer_tx *tx, const char *dir, const char *name,
		       const char *src_name, char **tdir, char **tname);

/*
 * Makes new_dir/new_name another name of the file at path (dir/name)
 * (filer_hardlink.h) under the tree lock. On WFS_OK *made (caller frees) is
 * the new name's entry. Verdicts: WFS_ENOENT (target, new_dir), WFS_EPERM
 * (the target is a directory), WFS_ENOTDIR (new_dir), WFS_EEXIST.
 */
wfs_err ns_link(struct filer *f, int32_t sig, const char *path, const char *dir, const char *name,
		const char *new_path, const char *new_dir, const char *new_name,
		struct filer_entry **made, struct ns_result *res);

/* ---- entry operations (ns_entry.c) ---- */

/* One of a create's moves: the regular file from renamed to to (borrowed). */
struct ns_move {
	const char *from, *to;
	const char *if_etag; /* NULL, or move only that version of from */
};

/* A create at path (split into dir and name); strings and arrays borrowed. */
struct ns_create {
	const char *path, *dir, *name;
	bool exclusive;      /* an existing entry is WFS_EEXIST */
	bool parents;        /* make missing parents (else the parent must exist) */
	const char *if_etag; /* NULL, or replace only that version */
	const char *const *consume; /* regular files deleted, their chunks taken over */
	size_t nconsume;
	const struct ns_move *moves; /* files renamed first, in order */
	size_t nmoves;
};
/*
 * Stores e (borrowed; its crtime becomes the replaced entry's) at c->path in
 * one transaction under the locks of the path and of every moved and
 * consumed path, with its moves, consumed files, parents and conditions (all
 * checked before anything is written): the replaced and consumed entries'
 * chunks that e does not list go to the garbage queue, e's chunks are claimed
 * off their assign lease. *replaced tells whether an entry was there.
 * Verdicts: WFS_ENOENT, WFS_ENOTDIR (a parent), WFS_EEXIST, WFS_EPRECOND,
 * WFS_EISDIR and WFS_EINVAL (a moved or consumed path that is not a plain
 * regular file).
 */
wfs_err ns_create(struct filer *f, int32_t sig, const struct ns_create *c, struct filer_entry *e,
		  bool *replaced, struct ns_result *res);

/*
 * One read-modify-write step: edits e (a copy of old, both the entry as
 * lookup shows it, hard links resolved; ctime already now) inside t; an
 * error recorded in t->res refuses the change.
 */
typedef wfs_err (*ns_edit_fn)(struct ns_tx *t, const struct filer_entry *old,
			      struct filer_entry *e, void *ctx);
/*
 * Changes the entry at path (dir/name) through edit under the path's lock, in
 * one transaction with its event; a hard-linked name changes the shared file.
 * if_etag (NULL: none) must equal the entry's etag byte for byte. On WFS_OK
 * *out (may be NULL; caller frees) is the entry after. Verdicts: WFS_ENOENT,
 * WFS_EPRECOND, WFS_EINVAL (the edited entry exceeds a limit), edit's own.
 */
wfs_err ns_modify(struct filer *f, int32_t sig, const char *path, const char *dir,
		  const char *name, const char *if_etag, ns_edit_fn edit, void *ctx,
		  struct filer_entry **out, struct ns_result *res);

/* What an update sets (ns_update.set). */
#define NS_SET_MODE    0x001u
#define NS_SET_UID     0x002u
#define NS_SET_GID     0x004u
#define NS_SET_SIZE    0x008u /* truncate or extend to attr->size */
#define NS_SET_MTIME   0x010u
#define NS_SET_CTIME   0x020u /* else ctime becomes now */
#define NS_SET_CHUNKS  0x040u /* chunks replace the chunk list */
#define NS_SET_APPEND  0x080u /* chunks are appended */
#define NS_SET_ATIME   0x100u
#define NS_SET_CONTENT 0x200u /* content replaces the data inline */
#define NS_SET_DROP    0x400u /* drop: chunks the appended ones supersede */

/* An update of path (split into dir and name); everything borrowed. */
struct ns_update {
	const char *path, *dir, *name;
	const char *if_etag; /* compared byte for byte */
	unsigned set;        /* NS_SET_* */
	const struct filer_attr *attr; /* the numeric fields set names */
	const struct filer_chunk *chunks; /* NS_SET_CHUNKS or NS_SET_APPEND */
	size_t nchunks;
	const uint8_t *content; /* NS_SET_CONTENT */
	size_t content_len;
	const char *const *drop; /* NS_SET_DROP: file ids */
	size_t ndrop;
	bool durable; /* the commit is synced (filer_store_tx_durable): an fsync */
};
/*
 * Applies u through ns_modify: chunks no longer listed (replaced, dropped,
 * cut by a truncate) go to the garbage queue, new ones are claimed off their
 * assign lease. On WFS_OK *out (caller frees) is the entry after. Verdicts:
 * ns_modify's, WFS_EISDIR (size, chunks or content of a non-regular file),
 * WFS_EINVAL (chunks for an inline file).
 */
wfs_err ns_update(struct filer *f, int32_t sig, const struct ns_update *u,
		  struct filer_entry **out, struct ns_result *res);

enum ns_xattr_flag { NS_XATTR_ANY, NS_XATTR_CREATE, NS_XATTR_REPLACE };
/*
 * Sets the extended attribute xname of the entry at path to value[0..len)
 * through ns_modify. On WFS_OK *out (caller frees) is the entry after.
 * if_etag (NULL: any) is ns_modify's: the change happens only at that etag.
 * Verdicts: ns_modify's (WFS_EPRECOND), WFS_EEXIST (NS_XATTR_CREATE), WFS_ENODATA
 * (NS_XATTR_REPLACE), WFS_ENOSPC (FILER_XATTRS_MAX attributes already).
 */
wfs_err ns_xattr_set(struct filer *f, int32_t sig, const char *path, const char *dir,
		     const char *name, const char *xname, const uint8_t *value, size_t len,
		     enum ns_xattr_flag flag, const char *if_etag, struct filer_entry **out,
		     struct ns_result *res);
/* Removes the extended attribute xname like ns_xattr_set; WFS_ENODATA when absent. */
wfs_err ns_xattr_remove(struct filer *f, int32_t sig, const char *path, const char *dir,
			const char *name, const char *xname, const char *if_etag,
			struct filer_entry **out, struct ns_result *res);

/* One change of a batch of attributes (ns_xattrs_set); strings borrowed. */
struct ns_xattr_op {
	const char *path, *dir, *name; /* the entry and its split */
	const char *xname;
	bool remove;          /* else set to value[0..len) */
	const uint8_t *value;
	size_t len;
	enum ns_xattr_flag flag;
	const char *if_etag; /* NULL, or only while the entry is this version (lookup's) */
};
/*
 * Applies ops[0..n) (no attribute of a path twice) all or nothing, in one
 * transaction under the locks of all their paths: every entry is read (in
 * byte order of the paths) and every if_etag compared before anything
 * changes, then the ops edit their entries in the given order and each entry
 * is written once, with one event; two names of one hard-linked file change
 * that one file. On a verdict *failed is the index of the op it concerns
 * (SIZE_MAX for a failure from below). On WFS_OK etags[i] (may be NULL) is
 * the etag of op i's entry after. Verdicts: WFS_ENOENT, WFS_EPRECOND,
 * ns_xattr_set's (WFS_EEXIST, WFS_ENODATA, WFS_ENOSPC), WFS_EINVAL (an entry
 * would exceed a size limit).
 */
wfs_err ns_xattrs_set(struct filer *f, int32_t sig, const struct ns_xattr_op *ops, size_t n,
		      char (*etags)[NS_ETAG_SIZE], size_t *failed, struct ns_result *res);

#endif
