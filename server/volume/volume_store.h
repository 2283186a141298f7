/*
 * The volumes of one volume server, spread over several directories each with
 * a maximum volume count.
 *
 * DESIGN: a small array of (id, volume) behind a rwlock; lookups take a
 * reference so a volume deleted meanwhile stays valid until the request
 * drops it. -max=0 sizes a directory from its free space and the master's
 * volume size limit (recomputed when the limit changes), at least 8 slots.
 */
#ifndef WEEDFS_VOLUME_VOLUME_STORE_H
#define WEEDFS_VOLUME_VOLUME_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "err.h"
#include "volume.h"

typedef struct volume_store volume_store;

struct volume_store_dir {
	const char *path;
	int max; /* 0 = from free space */
};

struct volume_store_disk_status {
	char dir[512];
	uint64_t all, used, free;
};

/* Opens every volume found in the directories (created if missing). Blocking. */
wfs_err volume_store_open(const struct volume_store_dir *dirs, size_t ndirs, volume_store **out);
/* Closes the volumes (each when its last reference drops). NULL does nothing. */
void volume_store_free(volume_store *s);

/* The volume with this id with a reference the caller drops (volume_unref), or NULL. */
volume *volume_store_get(volume_store *s, uint32_t vid);
/*
 * Creates volume vid in the directory with the most free slots. An existing
 * volume with the same collection and settings is fine (WFS_OK); different
 * settings give WFS_EEXIST; no free slot WFS_ENOSPC.
 */
wfs_err volume_store_create_volume(volume_store *s, uint32_t vid, const char *collection,
			    const struct volume_create *c);
/* Suffixes of the files a volume copy is received into (removed at open: never loaded). */
#define VOLUME_COPY_DAT ".dat.copying"
#define VOLUME_COPY_IDX ".idx.copying"

/* The directory with the most free volume slots (malloc'ed), or NULL when none is free. */
char *volume_store_pick_dir(volume_store *s);
/*
 * Opens the volume whose files are in dir (one of the store's directories)
 * and adds it; *out gets a reference the caller drops. WFS_EEXIST if vid is
 * already there. Blocking (the volume's load).
 */
wfs_err volume_store_load_volume(volume_store *s, const char *dir, uint32_t vid,
				 const char *collection, volume **out);
/* Removes the volume and its files. WFS_ENOENT if unknown. */
wfs_err volume_store_delete_volume(volume_store *s, uint32_t vid);
/* Removes every volume of collection; returns how many. */
int volume_store_delete_collection(volume_store *s, const char *collection);
/* Referenced volumes, sorted by id; caller unrefs each and frees the array. */
size_t volume_store_list(volume_store *s, volume ***out);
/* Sum of the directories' volume slots. */
int volume_store_max_volumes(volume_store *s);
/* Sets the master's volume size limit for all volumes (and -max=0 sizing). */
void volume_store_set_size_limit(volume_store *s, uint64_t limit);
uint64_t volume_store_size_limit(volume_store *s);
/* Fills up to max entries; returns the count. */
size_t volume_store_disk_status(volume_store *s, struct volume_store_disk_status *out, size_t max);
/* The directories' paths (borrowed; at most max written); returns how many there are. */
size_t volume_store_dirs(volume_store *s, const char **paths, size_t max);
/* Splits "coll_7<ext>" (ext as ".dat") into collection and id; false for other names. */
bool volume_file_name_parse(const char *name, const char *ext, char *coll, size_t collsz,
			    uint32_t *id);
/* Deletes TTL volumes with nothing written for their TTL; returns how many. */
int volume_store_expire(volume_store *s, uint64_t now_sec);

#endif
