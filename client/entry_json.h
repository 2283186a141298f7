/*
 * Entries as JSON: the form the filer's HTTP API (?metadata=true, JSON
 * listings) and the metadata event stream share. The fields are documented in
 * docs/filer-events.md. Output only; there is no decoder (the mount has one).
 *
 * Byte fields: a path, a name or a symlink target is bytes, and JSON strings
 * must be UTF-8. Such a field travels as key (a string, with U+FFFD for bad
 * bytes) and, when its bytes are not UTF-8, also as keyB64 (their base64);
 * in requests a client sends one or the other (docs/api-filer-json.md).
 */
#ifndef WEEDFS_CLIENT_ENTRY_JSON_H
#define WEEDFS_CLIENT_ENTRY_JSON_H

#include "buf.h"
#include "client/entry.h"
#include "json.h"

/* Include inline content ("content", base64) in the object. */
#define ENTRY_JSON_CONTENT 0x1u

/*
 * Writes e (borrowed) as one JSON object at the writer's current position
 * (a value slot: top level, array element or after a key). Names and strings
 * that are not valid UTF-8 have each bad byte replaced by U+FFFD. Any thread.
 */
void entry_json_write(json_w *w, const struct filer_entry *e, unsigned flags);

/* Appends e as a compact JSON object (no newline) to out. Any thread. */
void entry_json(const struct filer_entry *e, unsigned flags, buf *out);

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


#endif
