/*
 * Hard links: several names sharing one file (docs/api-filer-json.md, "link").
 *
 * DESIGN: every linked entry carries the same hard-link id
 * (attr.hard_link_id). The file itself (attributes, xattrs, inline content,
 * chunk list and nlink) lives in ONE record in the store's kv space under
 * "hardlink:" + id, encoded as an entry (client/entry.h). The entry stored at
 * each name is a stub: its attributes as of its last change, its id, and no
 * chunks or content. So a change through any name is seen through all of
 * them (readers merge the record in with filer_hardlink_resolve), nlink is
 * the record's, and code that deletes a stub without knowing about links
 * never frees chunks still in use (a stub references none). Removing a name
 * decrements nlink; only the last one deletes the record and hands its chunks
 * to the caller for the garbage queue. Every function runs inside the
 * caller's transaction (or none, for reads) on a worker thread.
 *
 * The names of a group are kept too, in a second kv record
 * ("hardlink-names:" + id: the full paths, each NUL-terminated), maintained
 * in the same transaction by make (adds), drop/release (removes) and moved
 * (renames, also of a directory above a name). filer_hardlink_fanout uses it
 * so a change through one name yields an event for every other name, which
 * is what lets a mount invalidate all of them. A group linked before the
 * names were kept starts its list at its next link (target and new name).
 */
#ifndef WEEDFS_FILER_FILER_HARDLINK_H
#define WEEDFS_FILER_FILER_HARDLINK_H

#include <stdbool.h>
#include <stddef.h>
#include "err.h"
#include "client/entry.h"
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

/*
 * Records that the name from_path of e's file (borrowed; e is the entry at
 * either path, only its id is used) is now to_path: a rename or move of the
 * name or of a directory above it. Unlinked e: nothing. Call it for every
 * linked stub a rename re-keys, in the rename's transaction.
 */
wfs_err filer_hardlink_moved(struct filer_store *s, struct filer_tx *tx,
			     const struct filer_entry *e, const char *from_path,
			     const char *to_path);

/*
 * The names of e's link group as recorded (*paths: caller frees each and the
 * array; NULL when *n is 0). Unlinked e or no record: *n is 0.
 */
wfs_err filer_hardlink_names(struct filer_store *s, struct filer_tx *tx,
			     const struct filer_entry *e, char ***paths, size_t *n);

/* One change of a transaction as the fan-out reads it (both borrowed; one may be NULL). */
struct filer_hardlink_change {
	const struct filer_entry *old_e, *new_e;
};
/* Receives one extra event (both borrowed for the call; copy what you keep). */
typedef void (*filer_hardlink_event_fn)(void *ctx, const struct filer_entry *old_e,
					const struct filer_entry *new_e);

/*
 * The events a transaction owes the other names of the hard-linked files it
 * changed. For every link group an event of ch[0..n) touches (other than a
 * plain rename of one name, which changes no shared state), every recorded
 * name of the group that has no event of its own in ch and still exists gets
 * one update event through fn: old is the file as the changing event saw it
 * before (its old side moved to this name; the name's stub if there is no
 * old side), new is the shared record now, at this name. A group whose
 * record is gone (its last name removed) has no other names. Call it inside
 * tx, after every entry change and before appending the events.
 */
wfs_err filer_hardlink_fanout(struct filer_store *s, struct filer_tx *tx,
			      const struct filer_hardlink_change *ch, size_t n,
			      filer_hardlink_event_fn fn, void *ctx);

#endif
