/*
 * The catalogs' storage model on the filer (docs/catalog.md), reached only
 * through client/filer_meta.h. A table bucket is the S3 bucket directory
 * /buckets/<name> carrying the attribute TS_XATTR_BUCKET; a namespace is the
 * directory /buckets/<b>/<levels joined with ".">, its levels kept in
 * TS_XATTR_NAMESPACE; a table is the directory /buckets/<b>/<ns>/<t>/ with
 * metadata/ and data/, its state in TS_XATTR_TABLE. The table's metadata
 * location and version token change only by compare-and-swap of that
 * attribute at the entry's etag (filer_meta_set_xattr_if), so any number of
 * stateless catalog servers can share one filer. Every function returns
 * WFS_OK or the wfs_err of its failure and is thread-safe.
 */
#ifndef WEEDFS_CATALOG_TABLE_STORE_H
#define WEEDFS_CATALOG_TABLE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "client/filer_rpc.h"
#include "lib/err.h"

#define TS_BUCKETS_DIR     "/buckets"
#define TS_XATTR_BUCKET    "weedfs.catalog.bucket"
#define TS_XATTR_NAMESPACE "weedfs.catalog.namespace"
#define TS_XATTR_TABLE     "weedfs.catalog.table"
#define TS_XATTR_POLICY    "weedfs.catalog.policy" /* a bucket's or table's resource policy */
/* a namespace's, a bucket's or a Lance table's properties (a JSON object of strings) */
#define TS_XATTR_PROPERTIES "weedfs.catalog.properties"
#define TS_XATTR_LANCE      "weedfs.catalog.lance" /* a Lance table's state (lance_store.h) */
#define TS_NS_LEVELS_MAX   16
#define TS_WHY_MAX         160

/*
 * The S3 Tables name rules. Bucket: 3..63 of [a-z0-9-], a letter or digit at
 * both ends, none of the reserved prefixes and suffixes. Namespace level and
 * table: 1..255 of [a-z0-9_], a letter or digit at both ends; a namespace
 * does not begin with "aws". On false, why says what is wrong.
 */
bool ts_valid_bucket_name(const char *s, char why[TS_WHY_MAX]);
bool ts_valid_namespace_name(const char *s, char why[TS_WHY_MAX]);
bool ts_valid_table_name(const char *s, char why[TS_WHY_MAX]);
/*
 * The directory name of a namespace of n (1..TS_NS_LEVELS_MAX) valid levels,
 * joined with "." (which no level holds, so the join is reversible), or NULL
 * with why. Caller frees.
 */
char *ts_namespace_dir(const char *const *levels, size_t n, char why[TS_WHY_MAX]);

struct ts_bucket {
	char *name, *arn, *owner, *format;
	int64_t created_ms;
};
void ts_bucket_free(struct ts_bucket *b);
/*
 * Makes the table bucket name (the directory and its attribute in one
 * create). WFS_EEXIST when a bucket (table bucket or plain S3) of that name
 * exists. out may be NULL.
 */
wfs_err ts_bucket_create(filer_rpc *r, const char *name, const char *region, const char *owner,
			 const char *format, struct ts_bucket *out);
/* WFS_ENOENT when there is no such bucket or it is no table bucket. */
wfs_err ts_bucket_get(filer_rpc *r, const char *name, struct ts_bucket *out);
/* WFS_ENOTEMPTY while it holds a namespace (or any object). */
wfs_err ts_bucket_delete(filer_rpc *r, const char *name);

struct ts_namespace {
	char *dir; /* the flattened name */
	char *levels[TS_NS_LEVELS_MAX];
	size_t n_levels;
	char *created_by, *owner;
	int64_t created_ms;
};
void ts_namespace_free(struct ts_namespace *ns);
wfs_err ts_namespace_create(filer_rpc *r, const char *bucket, const char *const *levels, size_t n,
			    const char *created_by, const char *owner, struct ts_namespace *out);
/* ns is the flattened name. WFS_ENOENT when absent (or no table bucket). */
wfs_err ts_namespace_get(filer_rpc *r, const char *bucket, const char *ns,
			 struct ts_namespace *out);
/* WFS_ENOTEMPTY while it holds a table. */
wfs_err ts_namespace_delete(filer_rpc *r, const char *bucket, const char *ns);

struct ts_table {
	char *bucket, *ns, *name;
	char *format, *arn, *version_token, *metadata_location, *warehouse;
	char *created_by, *modified_by, *owner;
	int64_t created_ms, modified_ms;
	char etag[17]; /* the entry's etag as ts_table_get read it */
};
void ts_table_free(struct ts_table *t);
/*
 * A table with no metadata location yet (S3 Tables' CreateTable without
 * metadata), its directory holding metadata/ and data/, or for format LANCE
 * data/ and _versions/ (a declared Lance dataset).
 */
wfs_err ts_table_create(filer_rpc *r, const char *region, const char *bucket, const char *ns,
			const char *name, const char *format, const char *created_by,
			const char *owner, struct ts_table *out);
wfs_err ts_table_get(filer_rpc *r, const char *bucket, const char *ns, const char *name,
		     struct ts_table *out);
/* The same, with the table's directory entry (its other attributes) into *entry (caller frees). */
struct filer_entry;
wfs_err ts_table_get_entry(filer_rpc *r, const char *bucket, const char *ns, const char *name,
			   struct ts_table *out, struct filer_entry **entry);
/*
 * Drops the table but keeps its files: the directory loses its attribute (a
 * later create of the name adopts it); expect (NULL: any) as below.
 */
wfs_err ts_table_forget(filer_rpc *r, const char *bucket, const char *ns, const char *name,
			const char *expect);
/*
 * The filer path of an s3://<bucket>/<path> location (a table's warehouse, a
 * file), trailing '/' left out, or NULL unless the bucket name is valid and
 * no component of path is empty, "." or "..". Caller frees.
 */
char *ts_location_dir(const char *location);
/*
 * Points the table at location if its version token is still expect: a new
 * token, by compare-and-swap in the filer. WFS_EPRECOND when the token has
 * moved on (a lost race or a stale client), nothing changed.
 */
wfs_err ts_table_set_location(filer_rpc *r, const char *bucket, const char *ns, const char *name,
			      const char *expect, const char *location, const char *by,
			      struct ts_table *out);
/*
 * ts_table_set_location of the table as seen (a ts_table_get answer, expecting
 * its token): the first try swaps against the entry's etag as it was read,
 * with no new lookup; only a lost race reads the entry again.
 */
wfs_err ts_table_advance(filer_rpc *r, const struct ts_table *seen, const char *location,
			 const char *by, struct ts_table *out);
/* One table of ts_tables_set_locations. */
struct ts_swap {
	const char *ns, *name;
	const char *expect;   /* the version token it must still have */
	const char *location; /* the new metadata location */
};
#define TS_SWAP_MAX 64
/*
 * ts_table_set_location for n (1..TS_SWAP_MAX) tables of bucket in one filer
 * transaction: all move on or none (the filer's setXattrs). WFS_EPRECOND when
 * a table's token has moved on, WFS_ENOENT when one is missing; *failed
 * (may be NULL) is then its index.
 */
wfs_err ts_tables_set_locations(filer_rpc *r, const char *bucket, const struct ts_swap *s,
				size_t n, const char *by, size_t *failed);
/*
 * Deletes the table's directory with all its files, and its warehouse
 * directory when a rename left it elsewhere; expect (NULL: any) as above.
 */
wfs_err ts_table_delete(filer_rpc *r, const char *bucket, const char *ns, const char *name,
			const char *expect);

/* ---- table ARNs and renames (docs/catalog.md, "Renames and table ARNs") ---- */

/* The attributes of a table (or bucket) that follow it: every one named so. */
#define TS_XATTR_PREFIX "weedfs.catalog."
/* The ARN index: /.catalog/tables/<bucket>/<id>, its attribute naming "<ns>/<table>". */
#define TS_ARN_DIR   "/.catalog/tables"
#define TS_XATTR_ARN "weedfs.catalog.path"

/* The filer directory of a table entry (caller frees). */
char *ts_table_path(const char *bucket, const char *ns, const char *name);
/*
 * The bucket and id of a table ARN (arn:aws:s3tables:<region>:<account>:
 * bucket/<b>/table/<id>), each malloc'd; false when it is malformed.
 */
bool ts_table_arn_parse(const char *arn, char **bucket, char **id);
/*
 * The table arn names: through the ARN index, and when the index has no
 * entry or a stale one, by a scan of the bucket's namespaces (the index is
 * then repaired). WFS_ENOENT when no table has that ARN.
 */
wfs_err ts_table_by_arn(filer_rpc *r, const char *arn, struct ts_table *out);
/*
 * Renames the table to to_ns/to_name (to_ns exists) if its version token is
 * still expect (NULL: any). Its files stay where they are, so its
 * warehouseLocation and metadataLocation stay valid: the first rename leaves
 * them in the old directory, marked as the table's storage, and makes a new
 * entry directory carrying the table's attributes; later renames move that
 * entry; a rename back onto the storage directory joins the two again.
 * WFS_EEXIST when to_name is taken, WFS_EPRECOND for a stale token.
 */
wfs_err ts_table_rename(filer_rpc *r, const char *bucket, const char *ns, const char *name,
			const char *to_ns, const char *to_name, const char *expect);
/* Whether the table attribute x marks a renamed table's storage, not a table. */
struct filer_xattr;
bool ts_is_storage(const struct filer_xattr *x);

/* The JSON of an attribute value and back (exposed for the unit test). */
char *ts_table_json(const struct ts_table *t);
bool ts_table_from_json(const char *s, size_t len, struct ts_table *t);

#endif
