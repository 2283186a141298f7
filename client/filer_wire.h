/*
 * The filer's wire protocol as both sides see it: the JSON entry API's
 * limits and the request headers it reads (docs/api-filer-json.md,
 * docs/filer-events.md). The filer enforces these; a client uses them to
 * stay within them.
 */
#ifndef WEEDFS_CLIENT_FILER_WIRE_H
#define WEEDFS_CLIENT_FILER_WIRE_H

/* The path prefix of the JSON entry API: POST /.api/v1/<op>. */
#define API_PREFIX "/.api/v1/"

/* Largest request body the API reads. */
#define API_BODY_MAX (8u << 20)
/* Largest page of a list request (a larger limit is refused, not clamped). */
#define API_LIST_MAX 10000
/* Largest inline content a create may carry (decoded bytes). */
#define API_CONTENT_MAX (64u << 10)
/* The request header saying that the body's last N bytes are the content, raw, after the
   JSON (create's entry content, update's content) instead of base64 inside it. */
#define API_RAW_CONTENT_HEADER "X-Weedfs-Content-Length"
/* Chunks one create or update may carry. */
#define API_CHUNKS_MAX 65536
/* File ids one assign may ask for. */
#define API_ASSIGN_MAX 100
/* File ids one freeChunks may carry (the garbage queue's batch limit). */
#define API_FREE_MAX 10000
/* Paths one create may consume (delete in its transaction). */
#define API_CONSUME_MAX 10000
/* Files one create may move (rename in its transaction). */
#define API_MOVES_MAX 16
/* Attribute changes one setXattrs may carry (one transaction). */
#define API_XATTR_OPS_MAX 64

/*
 * A client names itself with this header (a nonzero int32) on the requests
 * that change entries; an event stream opened with ?signature= the same
 * number leaves out the events those requests caused (docs/filer-events.md).
 */
#define FILER_SIGNATURE_HEADER "X-Weedfs-Signature"

#endif
