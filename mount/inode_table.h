/*
 * The mount's inode table: FUSE node ids for filer entries.
 *
 * DESIGN: two numbers per node. What stat and readdir show (st_ino, d_ino)
 * is the filer's persistent inode number of the entry (attr.filer_ino, from
 * client/entry.h attr.inode): the same in every mount, after a remount and
 * after the kernel forgot the node, so tar, rsync and du see one file as
 * one. The node id the kernel and the mount exchange ("ino" below) is the
 * mount's own: handed out once and never reused while the mount lives (a
 * 64-bit counter; the root is 1, FUSE_ROOT_ID, and stands for -filer.path),
 * so a stale id the kernel still holds never names another file, and a
 * forgotten node costs nothing to look up again under a new id.
 * A node is known by one or more names (parent ino, name); the names of a
 * hard-linked file (the entry's hardLinkId) share one node. A node holds the
 * kernel's lookup count and goes away when forget brings it to zero. The
 * node's full path is rebuilt from its first name's parent chain, so a rename
 * of a directory moves everything below it at once.
 *
 * Memory: the kernel may know millions of nodes (a tree walk). The table
 * keeps for each a compact record (names, lookup count, the attributes stat
 * needs: struct inode_attr, about 260 bytes with a short name); the full
 * struct inode below (mutexes, open-file state) exists only while a caller
 * holds it (itable_get) or it has open data, and its fields go back into the
 * record when it is released. Freed records are given back to the system
 * (malloc_trim) once enough of them went, so the mount shrinks after the
 * kernel forgets a walk.
 *
 * Nodes are reference counted for the callers (itable_get / itable_put) so a
 * node a FUSE operation works on stays valid while the kernel forgets it.
 * All functions are thread-safe (one table mutex; per-node data has its own
 * mutex, node->mu; the table mutex is taken first).
 */
#ifndef WEEDFS_MOUNT_INODE_TABLE_H
#define WEEDFS_MOUNT_INODE_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "client/entry.h"

#define ITABLE_ROOT 1

struct file_data;
struct inode_extra;

/*
 * What the mount keeps of an entry: what getattr, lookup, readlink and the
 * xattr calls answer from (no chunks, content, mime, collection).
 */
struct inode_attr {
	uint64_t size;
	int64_t mtime_ns, ctime_ns;
	int64_t atime_ns; /* 0 = never stored, readers take mtime_ns */
	uint64_t rdev;
	uint32_t mode, uid, gid, nlink;
	uint64_t filer_ino;        /* the filer's inode number (st_ino); 0 = unknown */
	struct inode_extra *extra; /* symlink target and xattrs; NULL when neither (table-owned) */
};

/*
 * One inode in use. Fields below mu are protected by mu; the others by the
 * table. A pointer is valid while the caller holds a reference.
 */
struct inode {
	uint64_t ino; /* immutable */
	bool is_dir;  /* immutable */
	pthread_mutex_t mu;
	/* protected by mu: */
	bool cached;               /* attr holds the last entry seen (a hint when stale) */
	struct inode_attr attr;    /* the cached entry's attributes */
	uint64_t cached_until;     /* time_mono_ns after which attr is stale */
	uint64_t cached_at;        /* time_mono_ns it was cached */
	struct file_data *fd;      /* open data, shared by the handles */
	int open_count;            /* open handles */
	int64_t base_ctime_ns;     /* ctime of the entry fd's base came from */
	int64_t data_mtime_ns;     /* set by a write, committed as the mtime; 0 = none */
	int64_t atime_pending_ns;  /* a read's atime (relatime) not yet stored; 0 = none */
	uint64_t alloc_bytes;      /* bytes the entry's chunks and content cover within its size */
	bool removed;              /* its last name was removed (unlink, rmdir): nlink 0 */
	bool unlinked;             /* a name was removed while open: hidden_name holds it */
	char *hidden_name;         /* its name in the hidden directory, or NULL */
	pthread_mutex_t commit_mu; /* serialises commits of fd */
	/*
	 * protected by mu: the data signature (fuse_data.c data_sig) of the entry
	 * whose bytes the kernel's page cache holds for this inode through this
	 * mount, and the signature of its chunk list alone; 0 = unknown (the next
	 * open drops the kernel's pages)
	 */
	uint64_t kc_sig, kc_chunks_sig;
	/*
	 * A directory this mount created whose every name the table knows: a name
	 * not in the table does not exist (no lookup round trip) while the event
	 * follower is connected and the cached entry stays fresh. Cleared by
	 * itable_uncache, by a cache refresh after the entry went stale, and when
	 * the table forgets one of its names.
	 */
	atomic_bool dir_complete;
	/* protected by mu: a directory's new mtime/ctime not yet sent (0 = none) */
	int64_t touch_pending_ns;
	/* protected by mu: on the touch thread's list for its atime (fuse_ops.c) */
	bool atime_queued;
	/*
	 * protected by mu, changed with commit_mu held too: a setattr's mode,
	 * uid, gid (FM_SET_* bits in pend_set) and ctime, taken while the open
	 * data was dirty and stored with its commit (fuse_attrs.c); pend_mtime:
	 * data_mtime_ns is that setattr's explicit mtime, not a write's
	 */
	unsigned pend_set;
	uint32_t pend_mode, pend_uid, pend_gid;
	int64_t pend_ctime_ns;
	bool pend_mtime;
	/* table-private: the node's record */
	struct itable_rec *priv;
};

typedef struct itable itable;

/* A table whose root (ino 1) is the filer path root_path (copied). */
itable *itable_new(const char *root_path);
/* Frees every node (their file data must be gone). NULL does nothing. */
void itable_free(itable *t);

/*
 * Records that the kernel learned name in parent as the entry e (borrowed):
 * finds or creates the node (by name, else by e's hard-link id), adds one
 * lookup reference, refreshes its cached entry for cache_ns, and returns its
 * ino. 0 if parent is unknown.
 */
uint64_t itable_learn(itable *t, uint64_t parent, const char *name, const struct filer_entry *e,
		      uint64_t cache_ns);
/* Adds one lookup reference to ino (a lookup answered from the cache). False if unknown. */
bool itable_ref(itable *t, uint64_t ino);
/* Drops n lookup references of ino (the kernel's forget). */
void itable_forget(itable *t, uint64_t ino, uint64_t n);

/* The node of ino with a caller reference, or NULL. Release with itable_put. */
struct inode *itable_get(itable *t, uint64_t ino);
void itable_put(itable *t, struct inode *n);
/* The node known by name in parent (a reference; itable_put), or NULL. */
struct inode *itable_get_name(itable *t, uint64_t parent, const char *name);

/* Newly allocated full filer path of ino, or NULL when ino is unknown. */
char *itable_path(itable *t, uint64_t ino);
/* Newly allocated full path of name in parent ("/" joins), NULL if parent is unknown. */
char *itable_child_path(itable *t, uint64_t parent, const char *name);
/*
 * Finds the ino a full filer path resolves to through known names, 0 if any
 * component is unknown (the kernel has nothing cached for it then).
 */
uint64_t itable_resolve(itable *t, const char *path);

/* Removes the name (parent, name) (unlink, rmdir). The node stays until forgotten. */
void itable_unlink(itable *t, uint64_t parent, const char *name);
/*
 * Moves the name (p1, n1) to (p2, n2) (a name that was at (p2, n2) is dropped);
 * with exchange the two names swap nodes.
 */
void itable_rename(itable *t, uint64_t p1, const char *n1, uint64_t p2, const char *n2,
		   bool exchange);

/*
 * Replaces n's cached attributes by e's (borrowed) for cache_ns;
 * n->alloc_bytes becomes what e's chunks cover (itable_alloc_bytes). The
 * caller holds a reference to n, not n->mu.
 */
void itable_cache(struct inode *n, const struct filer_entry *e, uint64_t cache_ns);
/*
 * A new entry (caller frees) from n's cached attributes: mode, owner, size,
 * times, nlink, rdev, symlink target and xattrs; no path, chunks or content.
 * NULL when nothing is cached. The caller holds n->mu.
 */
struct filer_entry *itable_cached_entry(const struct inode *n);
/*
 * The bytes of e's file that chunks or inline content cover within its size
 * (overlapping chunks counted once): the allocation st_blocks reports, small
 * for a sparse file. Any thread.
 */
uint64_t itable_alloc_bytes(const struct filer_entry *e);
/* Marks n's cached entry stale (it stays as a hint); clears dir_complete. */
void itable_uncache(struct inode *n);
/* Marks every node's cached entry stale (the event stream was down). */
void itable_uncache_all(itable *t);
/*
 * Whether name in parent is known not to exist: parent is dir_complete and
 * the table has no such name. The caller checks that the parent's entry is
 * fresh and the event follower is connected.
 */
bool itable_known_absent(itable *t, uint64_t parent, const char *name);
/* Gives ino the hard-link id (copied) so every name with that id maps to it. */
void itable_set_hardlink(itable *t, uint64_t ino, const uint8_t *id, size_t len);
/* The parent ino of ino's first name (ITABLE_ROOT for the root or when unknown). */
uint64_t itable_parent(itable *t, uint64_t ino);

/*
 * Calls fn(node, arg) for every node in use: held by a caller or holding open
 * data (under the table lock: fn must not call the table). The nodes the
 * kernel merely knows are records without a struct inode and are skipped.
 */
void itable_foreach(itable *t, void (*fn)(struct inode *n, void *arg), void *arg);

/*
 * Gives the memory of forgotten nodes back to the system (malloc_trim) when
 * some was freed since the last trim; a mutex and a compare otherwise. For a
 * periodic caller (the event follower's heartbeat): forgets trim only per
 * few MiB, this catches the rest of a burst.
 */
void itable_trim(itable *t);

/* Number of nodes the table knows (for tests and statistics). */
size_t itable_count(itable *t);

struct itable_stats {
	size_t nodes;   /* records (every node the kernel or a caller knows) */
	size_t in_use;  /* of them with a struct inode (itable_foreach's) */
	size_t trims;   /* malloc_trim calls after forgets */
	uint64_t freed; /* bytes of records freed since the last trim */
};
void itable_get_stats(itable *t, struct itable_stats *st);

#endif
