/*
 * DESIGN
 * - One call is one POST through lib/http_fetch: keep-alive connections in a
 *   pool of the client's, the head and body in one sendmsg, the answer read
 *   straight into its buffer. libcurl (lib/http_client) had cost a metadata
 *   call about as much client CPU as the filer spends on a lookup: its
 *   per-transfer setup, URL parsing and three polls per request. A request
 *   whose kept-alive connection turns out closed before any answer byte is
 *   sent once more on a new one, as libcurl did (a filer closes idle ones).
 * - The filer's {"error", "code"} answer becomes the wfs_err its code names
 *   (the filer sends wfs_err_name); a 503 (EAGAIN: its store or master is
 *   unreachable) changed nothing, so every op may repeat it.
 * - A transport failure is ambiguous: the request may have reached the filer.
 *   Ops safe to repeat (lookups, assign, conditional updates, xattrs) simply
 *   retry. The others (create, delete, rename, link, setXattrs) retry only
 *   when the filer is refusing connections, which the transport does not tell
 *   apart from a reset: a TCP connect probe right after the failure decides. A filer that
 *   accepts connections but dropped ours may have applied the change, so the
 *   call fails with WFS_EIO instead of risking EEXIST / ENOENT on a repeat.
 *   A spent budget is WFS_EUNAVAIL (or the last 503's code): nothing the
 *   call did not repeat was applied.
 * - Back-off 50 ms doubling to 2 s, within retry_seconds in total.
 */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "http_client.h"
#include "http_fetch.h"
#include "http_util.h"
#include "json.h"
#include "jwt.h"
#include "log.h"
#include "client/filer_rpc.h"
#include "client/filer_wire.h"
#include "util.h"

#define BACKOFF_FIRST_MS 50
#define BACKOFF_MAX_MS   2000
#define FETCH_IDLE_MAX   32          /* kept-alive connections to the filer */
#define FETCH_KEEP_MS    10000       /* how long one may stay idle (the filer keeps 120 s) */
#define ANSWER_MAX       (1ull << 32) /* a list page of big entries stays far below */

struct filer_rpc {
	char *addr;
	http_fetcher *fetch;
	char *sig_header; /* "X-Weedfs-Signature: N" or NULL */
	long timeout_ms;
	uint64_t retry_ns;
};

filer_rpc *filer_rpc_new(const char *filer_addr, long timeout_ms, int retry_seconds,
			 int32_t signature)
{
	filer_rpc *r = xcalloc(1, sizeof(*r));
	r->addr = xstrdup(filer_addr);
	r->fetch = http_fetcher_new(FETCH_IDLE_MAX, FETCH_KEEP_MS);
	if (signature)
		r->sig_header = xasprintf("X-Weedfs-Signature: %d", (int)signature);
	r->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
	r->retry_ns = (uint64_t)(retry_seconds > 0 ? retry_seconds : 30) * 1000000000ull;
	return r;
}

void filer_rpc_free(filer_rpc *r)
{
	if (!r)
		return;
	http_fetcher_free(r->fetch);
	free(r->addr);
	free(r->sig_header);
	free(r);
}

const char *filer_rpc_addr(const filer_rpc *r) { return r->addr; }

/* Whether repeating op after it may have been applied gives the same outcome. */
static bool op_idempotent(const char *op, const char *json, size_t len)
{
	static const char *const safe[] = {
		"lookup", "list", "lookupVolume", "assign", "setXattr", "removeXattr",
		"lockSession", "getLock",
		/* an owner's lock or unlock, repeated, leaves what one would */
		"lock", NULL};
	for (size_t i = 0; safe[i]; i++)
		if (!strcmp(op, safe[i]))
			return true;
	/* an update is repeatable when it is conditional on the entry's etag */
	if (!strcmp(op, "update")) {
		yajl_val v = json_parse(json, len, NULL, 0);
		bool cond = v && json_get(v, "ifEtag") != NULL;
		if (v)
			yajl_tree_free(v);
		return cond;
	}
	return false;
}

wfs_err filer_rpc_answer_err(int status, const char *body, size_t len)
{
	yajl_val v = len ? json_parse(body, len, NULL, 0) : NULL;
	const char *code = NULL;
	wfs_err e;

	if (v)
		json_get_str(v, "code", &code);
	if (code && status == 409 && !strcmp(code, "EAGAIN"))
		e = WFS_EBUSY; /* a lock held by another owner: try again later */
	else if (code)
		e = wfs_err_from_name(code);
	else
		e = status == 404 ? WFS_ENOSYS : wfs_err_from_http_status(status);
	if (v)
		yajl_tree_free(v);
	return e ? e : WFS_EIO;
}

/* Whether host:port refuses a TCP connection right now (nothing listens there). */
static bool filer_refuses(const char *addr, long timeout_ms)
{
	struct sockaddr_storage ss;
	bool refused = false;
	unsigned len;

	if (!host_port_resolve(addr, &ss, &len))
		return false;
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		refused = connect(fd, (struct sockaddr *)&ss, len) < 0 && errno == ECONNREFUSED;
		close(fd);
	}
	return refused;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* filer_rpc_call_as; a failure the filer answered leaves its body in err_body (NULL: not kept). */
static wfs_err rpc_call(filer_rpc *r, const char *op, const char *json, size_t len,
			const char *accept, int64_t raw_content, buf *resp, buf *err_body)
{
	char accept_header[128], raw_header[64], auth[JWT_AUTH_HEADER_MAX];
	const char *hdr[] = {"Content-Type: application/json", accept_header, NULL, NULL, NULL,
			     NULL};
	size_t nh = 2;
	struct http_result res;
	char *path = xasprintf("%s%s", API_PREFIX, op);
	uint64_t deadline = time_mono_ns() + r->retry_ns;
	long backoff = BACKOFF_FIRST_MS;
	/* the JSON ends where raw content starts */
	size_t json_len = raw_content >= 0 ? len - (size_t)raw_content : len;
	bool repeatable = op_idempotent(op, json, json_len);
	wfs_err e = WFS_EIO;

	snprintf(accept_header, sizeof(accept_header), "Accept: %s", accept);
	if (raw_content >= 0) {
		snprintf(raw_header, sizeof(raw_header), "%s: %" PRId64, API_RAW_CONTENT_HEADER,
			 raw_content);
		hdr[nh++] = raw_header;
	}
	if (jwt_filer_auth("POST", path, auth)) /* filer signing, a cached token */
		hdr[nh++] = auth;
	hdr[nh] = r->sig_header;

	http_result_init(&res);
	for (;;) {
		bool retry = false;
		wfs_err err = http_fetch_request(r->fetch, "POST", r->addr, path, hdr,
						 json ? json : "", len, r->timeout_ms, ANSWER_MAX,
						 &res);
		if (!err && res.status >= 200 && res.status < 300) {
			buf_append(resp, res.body.data, res.body.len);
			e = WFS_OK;
			break;
		}
		if (!err) {
			e = filer_rpc_answer_err(res.status, res.body.data, res.body.len);
			/* a 503 changed nothing: repeat it whatever the op */
			retry = res.status == 503;
			if (!retry) {
				if (err_body)
					buf_append(err_body, res.body.data, res.body.len);
				break;
			}
		} else {
			e = WFS_EIO; /* unless retried: it may have been applied */
			retry = repeatable || filer_refuses(r->addr, MIN(r->timeout_ms, 2000));
			if (!retry) {
				log_warn("filer %s: %s failed (%s) after it may have been sent",
					 r->addr, op, wfs_strerror(err));
				break;
			}
		}
		if (time_mono_ns() + (uint64_t)backoff * 1000000ull > deadline) {
			log_warn("filer %s: %s: giving up after retries (%s)", r->addr, op,
				 err ? wfs_strerror(err) : "503");
			if (err) /* nothing answered; what was not repeated was refused */
				e = WFS_EUNAVAIL;
			break;
		}
		log_debug("filer %s: %s: retrying in %ld ms", r->addr, op, backoff);
		sleep_ms(backoff);
		backoff = MIN(backoff * 2, BACKOFF_MAX_MS);
	}
	http_result_free(&res);
	free(path);
	return e;
}

wfs_err filer_rpc_call_as(filer_rpc *r, const char *op, const char *json, size_t len,
			  const char *accept, int64_t raw_content, buf *resp)
{
	return rpc_call(r, op, json, len, accept, raw_content, resp, NULL);
}

wfs_err filer_rpc_call(filer_rpc *r, const char *op, const char *json, size_t len, buf *resp)
{
	return rpc_call(r, op, json, len, "application/json", -1, resp, NULL);
}

wfs_err filer_rpc_call_err(filer_rpc *r, const char *op, const char *json, size_t len, buf *resp,
			   buf *err_body)
{
	return rpc_call(r, op, json, len, "application/json", -1, resp, err_body);
}

wfs_err filer_rpc_configuration(filer_rpc *r, bool *cipher)
{
	yajl_val tree, v;
	char msg[128];
	buf resp;
	wfs_err err;

	*cipher = false;
	buf_init(&resp);
	err = filer_rpc_call(r, "configuration", "{}", 2, &resp);
	if (err == WFS_ENOSYS) {
		err = WFS_OK;
		goto out;
	}
	if (err)
		goto out;
	tree = json_parse(resp.data ? resp.data : "", resp.len, msg, sizeof(msg));
	v = tree ? json_get(tree, "cipher") : NULL;
	if (v && !YAJL_IS_TRUE(v) && !YAJL_IS_FALSE(v))
		err = WFS_EIO;
	else if (!tree)
		err = WFS_EIO;
	else
		*cipher = v && YAJL_IS_TRUE(v);
	yajl_tree_free(tree);
out:
	buf_free(&resp);
	return err;
}
