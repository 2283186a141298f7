/*
 * How an S3 key becomes a path of its bucket's file tree, and back.
 *
 * DESIGN: a key is the path under /buckets/<bucket>, component by component
 * ("x/y/z.txt" is the file x/y/z.txt), so the mount and the filer API see
 * the bucket as an ordinary tree. A component the filer cannot hold as a
 * name, or that would collide with those the gateway makes, is escaped into
 * the reserved namespace: names beginning with ".s3~" (hidden in a listing
 * of the mount):
 *   ""  (a key ending in "/", "a//b", "/a")  ->  ".s3~empty"
 *   "."                                       ->  ".s3~dot"
 *   ".."                                      ->  ".s3~dotdot"
 *   ".s3~x" (any name with the prefix)        ->  ".s3~.s3~x"
 * Every other component is kept as it is. One more reserved name is not the
 * image of a component: ".s3~object" inside directory "a" holds the object
 * whose key is "a" itself while longer keys ("a/b") make "a" a directory.
 * Pure functions of bytes; any thread.
 */
#ifndef WEEDFS_S3_KEYPATH_H
#define WEEDFS_S3_KEYPATH_H

#include <stdbool.h>

#define S3_KEYPATH_PREFIX ".s3~"
/* The object named by its directory ("a" beside "a/b"): the file a/.s3~object. */
#define S3_KEYPATH_SELF ".s3~object"

/* The path of key below its bucket's directory (no leading "/"; caller frees). Key is
   not empty. */
char *s3_keypath_encode(const char *key);
/* The key component a stored name stands for (caller frees); NULL for a reserved name
   that is no component's escape (S3_KEYPATH_SELF, or one this gateway never makes). */
char *s3_keypath_decode(const char *name);
/* Whether name lies in the reserved namespace (listings take those apart). */
bool s3_keypath_reserved(const char *name);

#endif
