/*
 * The client of the filer's JSON entry API (docs/api-filer-json.md) that
 * weedfs-mount and the gateways share: one call is POST /.api/v1/<op> with a
 * JSON body, answered with JSON (or, asked for it, a lookup with the entry's
 * stored encoding) or with {"error", "code"}, which becomes an errno.
 *
 * Retries: an unreachable filer or a 503 is retried with exponential back-off
 * (50 ms doubling up to 2 s) until the budget runs out, then EIO. Operations
 * that are not safe to repeat (create, delete, rename, link) are retried only
 * when the request cannot have reached the filer (connection refused), so a
 * retry never turns a success into EEXIST or ENOENT.
 *
 * Thread-safe: libcurl, one handle per thread (lib/http_client.h).
 */
#ifndef WEEDFS_CLIENT_FILER_RPC_H
#define WEEDFS_CLIENT_FILER_RPC_H

#include <stddef.h>
#include <stdint.h>
#include "buf.h"

typedef struct filer_rpc filer_rpc;

/*
 * A client of the filer at "host:port" (copied). timeout_ms bounds each HTTP
 * request (0 = 30000); retry_seconds is the total back-off budget (0 = 30).
 * A nonzero signature is sent with every call as X-Weedfs-Signature: the
 * events the calls cause carry it (docs/filer-events.md).
 */
filer_rpc *filer_rpc_new(const char *filer_addr, long timeout_ms, int retry_seconds,
			 int32_t signature);
/* NULL does nothing. No call may be running. */
void filer_rpc_free(filer_rpc *r);

/*
 * Calls op with the JSON body json (len bytes, borrowed). On success returns 0
 * and appends the response body to *resp. Otherwise returns a POSITIVE errno:
 * the answer's "code" mapped (ENOENT, EEXIST, ENOTEMPTY, ENOTDIR, EISDIR, EPERM,
 * EINVAL, ENODATA, ENOSYS, EAGAIN; EPRECOND becomes ESTALE), EIO for anything
 * else or once the retry budget is spent.
 */
int filer_rpc_call(filer_rpc *r, const char *op, const char *json, size_t len, buf *resp);
/*
 * The same asking for the answer as the media type accept (a lookup's entry
 * can come in its stored encoding: FILER_ENTRY_MEDIA_TYPE), the body's last
 * raw_content bytes (-1: none) being content sent raw after the JSON
 * (API_RAW_CONTENT_HEADER).
 */
int filer_rpc_call_as(filer_rpc *r, const char *op, const char *json, size_t len,
		      const char *accept, int64_t raw_content, buf *resp);

/* The errno (as filer_rpc_call's) of an error answer (status >= 300) with body. */
int filer_rpc_answer_errno(int status, const char *body, size_t len);

/* The filer's address as given ("host:port"; borrowed from r). */
const char *filer_rpc_addr(const filer_rpc *r);

#endif
