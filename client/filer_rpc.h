/*
 * The client of the filer's JSON entry API (docs/api-filer-json.md) that
 * weedfs-mount and the gateways share: one call is POST /.api/v1/<op> with a
 * JSON body, answered with JSON (or, asked for it, a lookup with the entry's
 * stored encoding) or with {"error", "code"}, whose code (wfs_err_name) maps
 * back to the wfs_err the filer answered with (wfs_err_from_name): a failed
 * precondition is WFS_EPRECOND, a full cluster WFS_ENOSPC, and so on.
 *
 * Retries: an unreachable filer or a 503 is retried with exponential back-off
 * (50 ms doubling up to 2 s) until the budget runs out, then WFS_EUNAVAIL (or
 * the code of the last 503, e.g. WFS_ENOLCK). Operations that are not safe to
 * repeat (create, delete, rename, link, setXattrs) are retried only when the
 * request cannot have reached the filer (connection refused), so a retry never
 * turns a success into WFS_EEXIST, WFS_ENOENT or WFS_EPRECOND; such an
 * operation whose request failed after it may have been sent is WFS_EIO: it
 * may have been applied.
 *
 * Thread-safe: the calls share a pool of keep-alive connections (lib/http_fetch.h).
 */
#ifndef WEEDFS_CLIENT_FILER_RPC_H
#define WEEDFS_CLIENT_FILER_RPC_H

#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "err.h"

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
 * Calls op with the JSON body json (len bytes, borrowed). On success returns
 * WFS_OK and appends the response body to *resp. Otherwise:
 *   - the filer's answer as filer_rpc_answer_err maps it (WFS_ENOENT,
 *     WFS_EEXIST, WFS_EPRECOND, WFS_ENOSPC, WFS_EQUOTA, WFS_EBUSY, ...);
 *   - WFS_EUNAVAIL when the retry budget is spent on an unreachable or busy
 *     filer (nothing was applied by an operation not safe to repeat), or the
 *     code of its last 503 answer when it had one (WFS_ENOLCK);
 *   - WFS_EIO when the request of an operation not safe to repeat failed after
 *     it may have reached the filer: the change may have been applied.
 */
wfs_err filer_rpc_call(filer_rpc *r, const char *op, const char *json, size_t len, buf *resp);
/*
 * The same asking for the answer as the media type accept (a lookup's entry
 * can come in its stored encoding: FILER_ENTRY_MEDIA_TYPE), the body's last
 * raw_content bytes (-1: none) being content sent raw after the JSON
 * (API_RAW_CONTENT_HEADER).
 */
wfs_err filer_rpc_call_as(filer_rpc *r, const char *op, const char *json, size_t len,
			  const char *accept, int64_t raw_content, buf *resp);
/*
 * filer_rpc_call that also keeps what the filer said on a failure it
 * answered: that answer's body ({"error", "code", ...}) is appended to
 * *err_body, for an op whose errors carry more than the code.
 */
wfs_err filer_rpc_call_err(filer_rpc *r, const char *op, const char *json, size_t len, buf *resp,
			   buf *err_body);

/*
 * The error of the filer's answer with status (>= 300) and body: its "code"
 * mapped with wfs_err_from_name (an unknown code is WFS_EIO), except that
 * EAGAIN with 409 is the lock table's conflict (docs/api-filer-json.md):
 * WFS_EBUSY. Without a code: 404 is WFS_ENOSYS (a filer without the op),
 * anything else wfs_err_from_http_status. Never WFS_OK. Pure; any thread.
 */
wfs_err filer_rpc_answer_err(int status, const char *body, size_t len);

/*
 * The filer's configuration op: *cipher is whether it seals every chunk
 * (-encryptVolumeData), which a client uploading chunks itself must follow.
 * A filer without the op (older) is one that does not: WFS_OK, false.
 * Otherwise the call's error. Blocking.
 */
wfs_err filer_rpc_configuration(filer_rpc *r, bool *cipher);

/* The filer's address as given ("host:port"; borrowed from r). */
const char *filer_rpc_addr(const filer_rpc *r);

#endif
