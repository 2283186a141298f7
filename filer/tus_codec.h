/*
 * The stored form of a TUS upload session and the Upload-Metadata syntax check
 * (filer_tus.c). Pure functions over bytes, kept apart so the fuzzer and the
 * unit tests reach them.
 */
#ifndef WEEDFS_FILER_TUS_CODEC_H
#define WEEDFS_FILER_TUS_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "err.h"
#include "client/entry.h"

#define TUS_META_MAX 4096 /* longest Upload-Metadata header */

struct tus_session {
	char *target; /* full path of the file to make */
	uint64_t length, offset;
	int64_t touched_ns; /* creation or last PATCH; 0 = unknown (a "TUS1" record) */
	char *meta;         /* the Upload-Metadata header as sent, "" if none */
	struct filer_chunk *chunks;
	size_t n;
};

/* Frees what s owns and zeroes it. Any thread. */
void tus_session_clear(struct tus_session *s);

/* Appends s (borrowed; target and meta not NULL) to out in the "TUS2" format. */
void tus_session_encode(const struct tus_session *s, buf *out);

/*
 * Decodes a stored session ("TUS2", or the older "TUS1" without touched_ns)
 * from p[0..len) (borrowed) into *s (zeroed first; clear with
 * tus_session_clear). WFS_ECORRUPT, with *s empty, on anything malformed or
 * out of bounds.
 */
wfs_err tus_session_decode(const uint8_t *p, size_t len, struct tus_session *s);

/*
 * True if m is a valid Upload-Metadata value: at most TUS_META_MAX bytes of
 * "key base64,key2 base64,key3" with keys printable ASCII without space or comma.
 */
bool tus_metadata_valid(const char *m);

#endif
