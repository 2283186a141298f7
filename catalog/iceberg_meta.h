/*
 * Iceberg table metadata for the REST catalog: read and validate a metadata
 * document (format versions 1, 2 and 3), build a new table's first metadata
 * from a CreateTableRequest, check a commit's requirements and apply its
 * updates, and name the next metadata file. Pure: no I/O, no clock (callers
 * pass the time), no randomness (callers pass fresh uuids).
 *
 * A failure says what kind it is: ICE_CONFLICT when a requirement does not
 * hold against the current metadata (the server answers 409
 * CommitFailedException and the client reloads and retries), ICE_BAD when the
 * input is malformed or asks for something the spec forbids (400). The
 * message in err names the requirement or update at fault.
 */
#ifndef WEEDFS_CATALOG_ICEBERG_META_H
#define WEEDFS_CATALOG_ICEBERG_META_H

#include <stdint.h>
#include <sys/types.h>
#include "buf.h"
#include "jtree.h"

typedef enum { ICE_OK = 0, ICE_CONFLICT, ICE_BAD } ice_rc;

#define ICE_MAX_FORMAT_VERSION 3

/*
 * Parses text as table metadata and validates it (ice_meta_validate). NULL
 * with a message in err when it is not JSON or not valid metadata.
 */
jt *ice_meta_parse(const char *text, size_t len, char *err, size_t errlen);
/*
 * Checks the fields the document's format version requires and their types,
 * and that the current schema, default spec and sort order, current snapshot
 * and refs point at entries that exist. Fills what version 1 leaves optional
 * (schemas from schema, partition-specs from partition-spec, an unsorted sort
 * order, the main ref of the current snapshot), so the rest of this module
 * sees one shape. ICE_OK or ICE_BAD.
 */
ice_rc ice_meta_validate(jt *meta, char *err, size_t errlen);

/*
 * A new table's metadata from a CreateTableRequest body (name, schema,
 * location?, partition-spec?, write-order?, properties?). The format version
 * comes from properties["format-version"] (default 2; the property itself is
 * not kept). location is used when the request has none. Field ids are kept
 * as the client assigned them (pyiceberg and the Java client send fresh ids);
 * partition fields without a field-id get 1000, 1001, ...
 */
ice_rc ice_meta_create(const jt *req, const char *uuid, const char *location, int64_t now_ms,
		       jt **out, char *err, size_t errlen);

/* Checks a commit's requirements array against meta (NULL: no table yet). */
ice_rc ice_check_requirements(const jt *meta, const jt *requirements, char *err, size_t errlen);

/*
 * Applies an updates array to *meta: on a copy, swapped in only when every
 * update succeeded and the result validates; on failure *meta is untouched.
 * *updated_ms is the new last-updated-ms (the timestamp of a snapshot added by
 * this commit, otherwise now_ms).
 */
ice_rc ice_apply_updates(jt **meta, const jt *updates, int64_t now_ms, int64_t *updated_ms,
			 char *err, size_t errlen);

/*
 * Finishes a new metadata version: sets last-updated-ms and, when prev_file is
 * not NULL, appends it to the metadata-log with prev_ms (the previous
 * version's last-updated-ms), keeping at most
 * write.metadata.previous-versions-max (default 100) entries.
 */
void ice_meta_finish(jt *meta, int64_t updated_ms, const char *prev_file, int64_t prev_ms);

/*
 * A whole CommitTableRequest body {identifier?, requirements, updates} against
 * *meta (NULL with assert-create: a staged create, built from empty).
 * prev_file is the current metadata file's location (NULL for a create). On
 * ICE_OK *meta is the new, finished metadata (the old one freed).
 */
ice_rc ice_commit(jt **meta, const jt *body, const char *prev_file, int64_t now_ms, char *err,
		  size_t errlen);

/*
 * The location of metadata version `version` (1, 2, ...):
 * <write.metadata.path or location/metadata>/<NNNNN>-<uuid>.metadata.json,
 * the number zero-padded to 5 digits as Java and pyiceberg name them.
 */
char *ice_meta_file_name(const jt *meta, int version, const char *uuid);
/* The version number of such a file name, or -1 if it does not follow it. */
int ice_meta_file_version(const char *path);

/* Appends the document's JSON text to out. */
void ice_meta_write(const jt *meta, buf *out);

/*
 * Shared with the view engine (iceberg_view_meta.c), whose schemas and
 * properties are the table's: checks a schema (need_id: it must carry its
 * schema-id; the highest field id to *highest when not NULL), and that obj is
 * an object of string values. ICE_OK or ICE_BAD.
 */
ice_rc ice_schema_check(const jt *schema, bool need_id, int64_t *highest, char *err,
			size_t errlen);
ice_rc ice_string_map_check(const jt *obj, const char *what, char *err, size_t errlen);
/* The index of the object in arr whose integer member key is id, or -1. */
ssize_t ice_find_id(const jt *arr, const char *key, int64_t id);
/*
 * A requirements array checked with `one` for each requirement (an object):
 * ICE_BAD for the first malformed one even after a conflict, else the first
 * ICE_CONFLICT. ice_check_requirements is this with the table's.
 */
typedef ice_rc (*ice_check_fn)(const jt *meta, const jt *req, char *err, size_t errlen);
ice_rc ice_check_each(const jt *meta, const jt *reqs, ice_check_fn one, char *err,
		      size_t errlen);
/* The set-properties and remove-properties updates on meta's "properties". */
ice_rc ice_set_properties(jt *meta, const jt *update, char *err, size_t errlen);
ice_rc ice_remove_properties(jt *meta, const jt *update, char *err, size_t errlen);

#endif
