/*
 * What the Lance catalog keeps and reads beside the shared table model
 * (catalog/table_store.h; docs/catalog.md, "Lance"): a Lance table is a
 * table entry of format LANCE whose directory is the dataset; its state
 * (declared, created, registered, deregistered) is in the attribute TS_XATTR_LANCE and,
 * for a reader without the catalog, in the marker files Lance's directory
 * catalog uses (.lance-reserved, .lance-deregistered). Its versions are the
 * manifests under _versions/, which clients commit through S3 themselves.
 */
#ifndef WEEDFS_CATALOG_LANCE_STORE_H
#define WEEDFS_CATALOG_LANCE_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include "catalog/table_files.h"
#include "client/filer_rpc.h"
#include "lib/err.h"

#define LANCE_FORMAT        "LANCE"
#define LANCE_DECLARED      "declared"
#define LANCE_CREATED       "created"
#define LANCE_REGISTERED    "registered"
#define LANCE_DEREGISTERED  "deregistered"
#define LANCE_MARK_RESERVED ".lance-reserved"
#define LANCE_MARK_DEREG    ".lance-deregistered"

/*
 * The version a manifest's file name holds: "<v>.manifest" (V1 naming) or
 * the 20 digits of u64::MAX - v then ".manifest" (V2, newest first); false
 * for any other name (a detached "d<v>", a temporary file).
 */
bool lance_manifest_version(const char *name, uint64_t *v);
/*
 * The newest version among the manifests of the dataset at location (an
 * s3:// URI); *any false when _versions/ has none (a declared table).
 */
wfs_err lance_latest_version(filer_rpc *r, const char *location, uint64_t *latest, bool *any);
/* Whether version v of the dataset at location has a manifest (either naming). */
wfs_err lance_version_exists(filer_rpc *r, const char *location, uint64_t v, bool *yes);

/* Records state (LANCE_DECLARED, ...) on the entry at path. */
wfs_err lance_state_set(filer_rpc *r, const char *path, const char *state);
/*
 * Puts (present) or removes the marker file named marker in the dataset at
 * location. A missing one removed is no error.
 */
wfs_err lance_marker(table_files *f, const char *location, const char *marker, bool present);

#endif
