/*
 * Hard links: several names sharing one file (docs/api-filer-json.md, "link").
 *
 * DESIGN: every linked entry carries the same hard-link id
 * (attr.hard_link_id). The file itself (attributes, xattrs, inline content,
 * chunk list and nlink) lives in ONE record in the store's kv space under
 * "hardlink:" + id, encoded as an entry (filer/entry.h). The entry stored at
 * each name is a stub: its attributes as of its last change, its id, and no
 * chunks or content. So a change through any name is seen through all of
 * them (readers merge the record in with filer_hardlink_resolve), nlink is
 * the record's, and code that deletes a stub without knowing about links
 * never frees chunks still in use (a stub references none). Removing a name
 * decrements nlink; only the last one deletes the record and hands its chunks
 * to the caller for the garbage queue. Every function runs inside the
 * caller's transaction (or none, for reads) on a worker thread.
 */
#ifndef WEEDFS_FILER_FILER_HARDLINK_H
#define WEEDFS_FILER_FILER_HARDLINK_H

#include <stdbool.h>
#include <stddef.h>
#include "err.h"
#include "filer/entry.h"
#include "filer/store.h"

/* True if e is one name of a hard-linked file. */
bool filer_hardlink_is_linked(const struct filer_entry *e);

/*
 * If *e (owned by the caller) is linked, replaces it with the merged entry:
 * the shared record at *e's path, id kept. Unlinked entries are left alone.
 * WFS_ECORRUPT / store errors on a missing or bad record (*e unchanged).
 */
wfs_err filer_hardlink_resolve(struct filer_store *s, struct filer_tx *tx, struct filer_entry **e);

/*
 * Writes merged (borrowed; a resolved linked entry after a change) back: the
 * shared record and the stub at merged's own path (which must exist).
 */
wfs_err filer_hardlink_save(struct filer_store *s, struct filer_tx *tx,
			    const struct filer_entry *merged);

/*
 * Accounts for the removal of the name e (borrowed, as stored; the caller
 * deletes the entry itself). Unlinked: nothing. Linked: nlink - 1; when it
 * reaches 0 the record goes and its chunks are returned in *freed / *nfreed
 * (caller owns; queue them for deletion in the same tx). *freed is NULL and
 * *nfreed 0 otherwise.
 */
wfs_err filer_hardlink_drop(struct filer_store *s, struct filer_tx *tx, const struct filer_entry *e,
			    struct filer_chunk **freed, size_t *nfreed);

/*
 * For removing or replacing the name e (owned, as stored): drops it from its
 * link group like filer_hardlink_drop, and hands any shared chunks the last
 * name frees to e. Afterwards e->chunks is what removing e frees, linked or
 * not. Unlinked: nothing changes.
 */
wfs_err filer_hardlink_release(struct filer_store *s, struct filer_tx *tx, struct filer_entry *e);

/*
 * Makes dir/name (must not exist; the caller checked) a new name of target
 * (borrowed, as stored, a non-directory). An unlinked target becomes linked
 * (its record is made from it, its stub replaces it). On WFS_OK *before and
 * *after (caller frees) are the target's merged entry before and after, and
 * *made the new name's merged entry, for the events and the answer.
 */
wfs_err filer_hardlink_make(struct filer_store *s, struct filer_tx *tx,
			    const struct filer_entry *target, const char *dir, const char *name,
			    struct filer_entry **before, struct filer_entry **after,
			    struct filer_entry **made);

#endif
