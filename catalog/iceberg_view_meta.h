/*
 * Iceberg view metadata for the REST catalog: read and validate a view
 * metadata document (view format version 1), build a new view's first
 * metadata from a CreateViewRequest, apply a CommitViewRequest (its
 * requirements, then its updates), and name the next metadata file. Pure: no
 * I/O, no clock (callers pass the time), no randomness (callers pass uuids).
 *
 * Failures are the table engine's kinds (iceberg_meta.h): ICE_CONFLICT when a
 * requirement does not hold (409, the client reloads and retries), ICE_BAD
 * for malformed input or a change the spec forbids (400), with a message in
 * err naming the requirement or update at fault.
 */
#ifndef WEEDFS_CATALOG_ICEBERG_VIEW_META_H
#define WEEDFS_CATALOG_ICEBERG_VIEW_META_H

#include <stdint.h>
#include "buf.h"
#include "iceberg_meta.h"
#include "jtree.h"

#define ICE_VIEW_MAX_FORMAT_VERSION 1
/* Versions kept when the view has no version.history.num-entries property. */
#define ICE_VIEW_HISTORY_DEFAULT 10

/* Parses text as view metadata and validates it; NULL with a message in err. */
jt *ice_view_parse(const char *text, size_t len, char *err, size_t errlen);
/*
 * Checks the fields view format version 1 requires and their types, that
 * version and schema ids are unique, that current-version-id and each
 * version's schema-id name entries that exist, and that no version has two
 * SQL representations of one dialect. ICE_OK or ICE_BAD.
 */
ice_rc ice_view_validate(const jt *meta, char *err, size_t errlen);

/*
 * A new view's metadata from a CreateViewRequest body (name, location?,
 * schema, view-version, properties?): schema id 0, version id 1 with
 * timestamp now_ms, and one version-log entry. location is used when the
 * request has none.
 */
ice_rc ice_view_create(const jt *req, const char *uuid, const char *location, int64_t now_ms,
		       jt **out, char *err, size_t errlen);

/*
 * A CommitViewRequest body {identifier?, requirements, updates} against
 * *meta: the requirements checked, the updates applied to a copy, old
 * versions trimmed to version.history.num-entries (default 10, never the
 * current one nor one this commit added). On ICE_OK *meta is the new metadata
 * (the old one freed); on failure it is untouched. now_ms stamps a version-log
 * entry for a version made current again (a new one carries its own time).
 */
ice_rc ice_view_commit(jt **meta, const jt *body, int64_t now_ms, char *err, size_t errlen);

/* <write.metadata.path or location/metadata>/<NNNNN>-<uuid>.metadata.json, as for tables. */
char *ice_view_file_name(const jt *meta, int version, const char *uuid);

/* Appends the document's JSON text to out. */
void ice_view_write(const jt *meta, buf *out);

#endif
