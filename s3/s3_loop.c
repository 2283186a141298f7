/*
 * Requests answered from the loop thread, with the loop's own client of the
 * filer (http_loop_client.h: connections kept alive per loop): GetObject's
 * and HeadObject's lookup here, the small PutObject's create in s3_put.c. An
 * inline object, or the head of any object, is answered right where it was
 * parsed: no worker hop, no curl request.
 *
 * DESIGN: only the lookup moves. Its result is handed to s3_get_object /
 * s3_head_object (s3_get.c), which decide every answer as they do on a
 * worker; they run on the loop only when they will not block (a regular file
 * whose answer needs no stream). The rest goes on to a worker with the lookup
 * done: a chunked object's stream, a miss (NoSuchBucket or NoSuchKey takes
 * one more lookup; versioned buckets look for a delete marker). A transport
 * failure or a 503 leaves the lookup to the worker, whose client retries.
 * Requests the loop cannot judge alone stay on workers from the start: a
 * versionId, an Origin (CORS reads the bucket), a policy not yet cached.
 */
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include "client/filer_meta.h"
#include "http_loop_client.h"
#include "jwt.h"
#include "log.h"
#include <stdio.h>
#include <string.h>
#include "s3/s3_int.h"
#include "s3/s3_sse.h"
#include "util.h"

/* Bounds the lookup's answer: an entry with a long chunk list (a 5 TiB object's is ~60 MB)
 * goes to a worker, whose client takes any size. */
#define LOOKUP_ANSWER_MAX (8u << 20)

/* Seconds before a loop tries again to resolve a filer address that did not resolve:
 * DNS blocks the loop, and meanwhile the workers' client serves every request. */
#define RESOLVE_RETRY_S 10

/* What each loop thread keeps (http_req_loop_data). */
struct s3_loop {
	hlc *filer;
	time_t failed_at; /* when resolving the filer's address last failed; 0: never */
};

void s3_loop_data_free(void *data, void *ctx)
{
	struct s3_loop *l = data;
	(void)ctx;
	hlc_free(l->filer);
	free(l);
}

hlc *s3_loop_filer(struct s3_req *r)
{
	void **slot = http_req_loop_data(r->req);
	struct s3_loop *l = *slot;
	time_t now = time(NULL);
	wfs_err err;

	if (!l)
		*slot = l = xcalloc(1, sizeof(*l));
	if (!l->filer && (!l->failed_at || now - l->failed_at >= RESOLVE_RETRY_S)) {
		l->filer = hlc_new(http_req_event_base(r->req), filer_rpc_addr(r->g->filer), &err);
		if (!l->filer)
			log_warn("filer %s: %s: requests take the workers' client",
				 filer_rpc_addr(r->g->filer), wfs_strerror(err));
		l->failed_at = l->filer ? 0 : now;
	}
	return l->filer;
}

static void looked_up(void *arg, wfs_err err, int status, const char *body, size_t len)
{
	struct s3_req *r = arg;
	bool head = http_req_method(r->req) == HTTP_HEAD;
	void (*run)(struct s3_req * r) = head ? s3_head_object : s3_get_object;
	const struct filer_entry *e;

	if (err == WFS_EINTERNAL || atomic_load(&r->g->closing)) {
		s3_req_free(r); /* the gateway is stopping: its connections go with it */
		return;
	}
	if (err || status == 503) {
		s3_submit(r, run); /* the worker looks it up again, with retries */
		return;
	}
	r->looked_up = true;
	r->lookup_rc = status / 100 == 2
			       ? filer_meta_entry_answer(body, len, r->lookup_path, &r->found, NULL)
			       : filer_rpc_answer_err(status, body, len);
	e = r->found;
	/* an encrypted object may need the filer's master key read: the worker reads it */
	if (r->lookup_rc || !S_ISREG(e->attr.mode) ||
	    !(head || e->has_content || e->attr.size == 0) || !s3_sse_read_ready(r->g, e)) {
		s3_submit(r, run);
		return;
	}
	run(r); /* a regular file answered from its entry (no stream): nothing blocks */
	s3_send_answer(r);
}

bool s3_read_on_loop(struct s3_req *r)
{
	hlc *c;
	buf b;
	char hdrs[128 + JWT_AUTH_HEADER_MAX] =
		"Content-Type: application/json\r\nAccept: " FILER_ENTRY_MEDIA_TYPE "\r\n";
	char auth[JWT_AUTH_HEADER_MAX];

	if (http_req_query(r->req, "versionId") || http_req_header(r->req, "Origin") ||
	    !(c = s3_loop_filer(r)) || !(r->lookup_path = s3_object_path(r->bucket, r->key)))
		return false;
	buf_init(&b);
	filer_meta_lookup_body(&b, r->lookup_path);
	if (jwt_filer_auth("POST", "/.api/v1/lookup", auth)) /* filer signing */
		snprintf(hdrs + strlen(hdrs), sizeof(hdrs) - strlen(hdrs), "%s\r\n", auth);
	hlc_request(c, "POST", "/.api/v1/lookup", hdrs, b.data, b.len, LOOKUP_ANSWER_MAX,
		    S3_FILER_TIMEOUT_MS, looked_up, r);
	buf_free(&b);
	return true;
}
