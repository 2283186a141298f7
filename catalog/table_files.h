/*
 * The files of the catalogs' tables (metadata JSON above all), named by their
 * s3:// locations: s3://<bucket>/<key> is the filer's /buckets/<bucket>/<key>,
 * what the S3 gateway serves at that name. Written and read through the
 * filer's HTTP API (docs/api-filer.md): content up to 4 MiB stays inside the
 * entry, one filer write per file.
 *
 * DESIGN: metadata files are written once under fresh names and never
 * changed, so the text read for a location is kept in a small LRU cache
 * (by bytes): a table load costs the filer one lookup of the table's entry,
 * not a read of its metadata. A file deleted and written again under the
 * same name (only a purge followed by a register could) is the one case the
 * cache could answer stale; tf_delete forgets it.
 *
 * Thread-safe.
 */
#ifndef WEEDFS_CATALOG_TABLE_FILES_H
#define WEEDFS_CATALOG_TABLE_FILES_H

#include <stddef.h>
#include "lib/buf.h"
#include "lib/err.h"

#define TF_FILE_MAX (64u << 20) /* the largest metadata file read */

typedef struct table_files table_files;

/* Files in the filer at "host:port", caching up to cache_bytes of text. */
table_files *tf_new(const char *filer, size_t cache_bytes);
void tf_free(table_files *f);

/*
 * The filer path of location when it is s3://<bucket>/<key> with a valid
 * bucket and a key of no empty, ".", ".." or NUL component; otherwise NULL.
 * Caller frees.
 */
char *tf_location_path(const char *location);
/*
 * Whether location is dir or below it (dir an s3:// location, no trailing
 * '/'): a valid location (see tf_location_path) that starts with dir.
 */
int tf_location_under(const char *location, const char *dir);

/* Writes the file (replacing one of the same name). WFS_EINVAL for a bad location. */
wfs_err tf_put(table_files *f, const char *location, const void *data, size_t len);
/* Appends the file's bytes to out: WFS_ENOENT when it is missing, WFS_ETOOBIG over TF_FILE_MAX. */
wfs_err tf_get(table_files *f, const char *location, buf *out);
/* Deletes the file (a directory with recursive: everything below it). Missing is WFS_OK. */
wfs_err tf_delete(table_files *f, const char *location, int recursive);

/* A fresh random (version 4) UUID, 36 characters and a NUL. */
void tf_uuid(char out[37]);

#endif
