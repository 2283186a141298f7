/*
 * Entries as JSON: the form the filer's HTTP API (?metadata=true, JSON
 * listings) and the metadata event stream share. The fields are documented in
 * docs/filer-events.md. Output only; there is no decoder.
 */
#ifndef WEEDFS_FILER_ENTRY_JSON_H
#define WEEDFS_FILER_ENTRY_JSON_H

#include "buf.h"
#include "filer/entry.h"
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

/* Writes a string as JSON, replacing invalid UTF-8 bytes by U+FFFD. */
void entry_json_str(json_w *w, const char *s, size_t n);

/* Appends the standard base64 (with padding) of p[0..n) to out. */
void entry_json_base64(const void *p, size_t n, buf *out);

#endif
