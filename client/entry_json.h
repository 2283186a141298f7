/*
 * Entries as JSON: the one codec of the entry object and of chunk lists, in
 * both directions, for every side. The filer writes entries with it (JSON API
 * answers, ?metadata=true, JSON listings, the event stream) and parses
 * create's entry and update's chunks with it; its clients (the mount, the
 * gateways: client/filer_meta.c) write their requests and read the answers
 * and events with it. The fields are documented in docs/filer-events.md
 * (answers) and docs/api-filer-json.md (requests).
 *
 * Two forms of the entry object:
 * - the answer form (flags without ENTRY_JSON_REQUEST): fullPath, name and
 *   every attribute, as the filer sends an entry. Its reader ignores members
 *   it does not know (a newer filer may send more) and takes null as absent.
 * - the request form (ENTRY_JSON_REQUEST): create's "entry": path and the
 *   attributes a create sets. Its reader is strict, as the filer needs: an
 *   unknown or repeated member, a wrong type, a number out of range or a
 *   value over a bound of client/entry.h is refused with a message.
 * Both readers check types and the bounds of client/entry.h.
 *
 * A chunk is {"fileId", "offset", "size", "mtimeNs", "eTag", "isManifest"}
 * in both directions. Readers also take "etag" for "eTag" (requests said so
 * before the two were one codec); a request with both is refused.
 *
 * Byte fields: a path, a name or a symlink target is bytes, and JSON strings
 * must be UTF-8. In the answer form such a field travels as key (a string,
 * with U+FFFD for bad bytes) and, when its bytes are not UTF-8, also as keyB64
 * (their base64), which readers prefer; in requests a client sends one or the
 * other, never both (docs/api-filer-json.md).
 */
#ifndef WEEDFS_CLIENT_ENTRY_JSON_H
#define WEEDFS_CLIENT_ENTRY_JSON_H

#include "buf.h"
#include "client/entry.h"
#include "err.h"
#include "json.h"

/* Writer: include inline content ("content", base64) in the object. */
#define ENTRY_JSON_CONTENT 0x1u
/* Writer and readers: the request form (see above) instead of the answer form. */
#define ENTRY_JSON_REQUEST 0x2u

/* Members entry_json_read reports present in *has. */
#define ENTRY_JSON_HAS_MODE    0x01u
#define ENTRY_JSON_HAS_MTIME   0x02u
#define ENTRY_JSON_HAS_ATIME   0x04u
#define ENTRY_JSON_HAS_CTIME   0x08u
#define ENTRY_JSON_HAS_CRTIME  0x10u
#define ENTRY_JSON_HAS_CONTENT 0x20u

/*
 * Writes e (borrowed) as one JSON object at the writer's current position
 * (a value slot: top level, array element or after a key). Names and strings
 * that are not valid UTF-8 have each bad byte replaced by U+FFFD (byte fields
 * also carry their bytes, see above). In the request form, numbers that are 0
 * other than mode, uid and gid are left out (absent: create's defaults), as
 * are the attributes a create does not take. Any thread.
 */
void entry_json_write(json_w *w, const struct filer_entry *e, unsigned flags);

/* Appends e as a compact JSON object (no newline) to out. Any thread. */
void entry_json(const struct filer_entry *e, unsigned flags, buf *out);

/* Writes key: the chunk list c[0..n) (borrowed) as an array, in order. Any thread. */
void entry_json_chunks_write(json_w *w, const char *key, const struct filer_chunk *c, size_t n);

/*
 * Reads the entry object v (borrowed) in the form flags name. On WFS_OK *out
 * is a new entry (caller frees) that passes filer_entry_check, and *has
 * (unless NULL) holds the ENTRY_JSON_HAS_* bits of the members v had; the
 * request form also requires "path". WFS_EINVAL otherwise, with *out NULL
 * and the reason in msg (msglen may be 0). Any thread.
 */
wfs_err entry_json_read(yajl_val v, unsigned flags, struct filer_entry **out, unsigned *has,
			char *msg, size_t msglen);

/*
 * Reads the member key of obj (absent or, in the answer form, null: nothing),
 * a chunk list, appending its chunks to e's (which they must not take over
 * FILER_CHUNKS_MAX; a request's list holds at most API_CHUNKS_MAX). Offsets
 * and sizes are at most INT64_MAX, and so is their sum. WFS_EINVAL
 * with a message otherwise (e may then hold some of the chunks). Any thread.
 */
wfs_err entry_json_chunks_read(yajl_val obj, const char *key, unsigned flags,
			       struct filer_entry *e, char *msg, size_t msglen);

/* Writes key (NULL: at a value slot): the base64 of p[0..n) (p may be NULL when n is 0). */
void entry_json_base64(json_w *w, const char *key, const void *p, size_t n);
/*
 * Writes key: s (bad bytes as U+FFFD) and, when s is not valid UTF-8, also
 * <key>B64: the base64 of its bytes, so a client can recover the exact name.
 */
void entry_json_text(json_w *w, const char *key, const char *s);
/* Writes s as request byte field key: key when s is valid UTF-8, else keyB64. */
void entry_json_kv_bytes(json_w *w, const char *key, const char *s);
/*
 * Reads byte field key of the object v: keyB64 decoded when present (then key
 * is only its display form), else the string key. *out: a copy (at most max
 * bytes, no NUL inside), or NULL when neither is present; the old *out is
 * freed. False when malformed or too long (*out unchanged).
 */
bool entry_json_get_bytes(yajl_val v, const char *key, size_t max, char **out);
/*
 * entry_json_get_bytes for a request: key and keyB64 both present is refused
 * too. WFS_EINVAL with a message in msg. Any thread.
 */
wfs_err entry_json_req_bytes(yajl_val v, const char *key, size_t max, char **out, char *msg,
			     size_t msglen);
/*
 * A request's required path field key of v (entry_json_req_bytes): an
 * absolute, canonical path (filer_path_split), into new *path, *dir and
 * *name (the caller frees them, also on failure). WFS_EINVAL with a message.
 */
wfs_err entry_json_req_path(yajl_val v, const char *key, char **path, char **dir, char **name,
			    char *msg, size_t msglen);

#endif
