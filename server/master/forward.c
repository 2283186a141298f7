/*
 * DESIGN: what a follower (a master without the lease, -peers) does with a
 * request other than its own status. It proxies to the leader, as SeaweedFS's
 * followers do, so a client (curl included) may talk to any master: the body
 * (bounded) is read on the loop, a worker sends it to the leader with an
 * X-Weedfs-Forwarded header and the answer (status, Content-Type, Location,
 * body) goes back through http_req_defer. Two cases differ:
 * - /heartbeat is refused (503, {"error", "leader"}): a volume server must
 *   talk to the leader itself, which rebuilds its topology from heartbeats.
 * - /submit carries a whole file: a 307 to the leader, which keeps the method
 *   and body for a client that follows it (curl -L).
 * A request already forwarded once is never forwarded again (503), so two
 * masters with stale views cannot bounce it between them; with no leader
 * known, the answer is 503 too, which a failover client retries elsewhere.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http_client.h"
#include "json.h"
#include "log.h"
#include "server/master/master_int.h"
#include "util.h"

#define FORWARD_MAX_BODY   (1u << 20)
#define FORWARD_TIMEOUT_MS 60000
#define FORWARDED_HEADER   "X-Weedfs-Forwarded"

struct fwd {
	struct master *m;
	http_req *req;
	char leader[TOPO_URL_MAX];
	char *method, *uri, *content_type;
	buf body;
	struct http_result res;
	wfs_err err;
};

/* 503 naming the leader (when known), the answer a volume server or client acts on. */
static void not_leader(struct master *m, http_req *req, const char *lead, const char *why)
{
	buf out = BUF_INIT;
	json_w *w = jw_new(&out, false);
	jw_obj_begin(w);
	jw_kv_str(w, "error", why);
	jw_kv_str(w, "leader", lead);
	jw_obj_end(w);
	jw_free(w);
	http_resp_header(req, "Retry-After", "1");
	http_resp_send_json(req, 503, &out);
	buf_free(&out);
	(void)m;
}

static void fwd_free(struct fwd *f)
{
	free(f->method);
	free(f->uri);
	free(f->content_type);
	buf_free(&f->body);
	http_result_free(&f->res);
	free(f);
}

static void fwd_answer(http_req *req, void *arg)
{
	struct fwd *f = arg;
	char v[1024];

	if (f->err) {
		http_resp_error(req, 502, "the leader %s did not answer: %s", f->leader,
				wfs_strerror(f->err));
	} else {
		if (http_result_header(&f->res, "Content-Type", v, sizeof(v)))
			http_resp_header(req, "Content-Type", v);
		if (http_result_header(&f->res, "Location", v, sizeof(v)))
			http_resp_header(req, "Location", v);
		http_resp_send(req, f->res.status, f->res.body.data, f->res.body.len);
	}
	fwd_free(f);
}

/* Worker: one request to the leader. */
static void fwd_send(void *arg)
{
	struct fwd *f = arg;
	char *url = xasprintf("http://%s%s", f->leader, f->uri);
	char *ct = f->content_type ? xasprintf("Content-Type: %s", f->content_type) : NULL;
	char *fw = xasprintf(FORWARDED_HEADER ": %s", f->m->self);
	const char *headers[] = {fw, ct, NULL};

	f->err = http_request(f->method, url, headers, f->body.data, f->body.len,
			      FORWARD_TIMEOUT_MS, &f->res);
	if (f->err)
		log_warn("proxying %s %s to the leader %s: %s", f->method, f->uri, f->leader,
			 wfs_strerror(f->err));
	free(url);
	free(ct);
	free(fw);
	http_req_defer(f->req, fwd_answer, f);
}

static bool fwd_data(http_req *req, const char *data, size_t len, void *arg)
{
	struct fwd *f = arg;
	buf_append(&f->body, data, len);
	return true;
}

/* Always called once, so f is released on every path. */
static void fwd_end(http_req *req, wfs_err err, void *arg)
{
	struct fwd *f = arg;
	if (err) {
		http_resp_error(req, wfs_err_http_status(err), "reading the body: %s",
				wfs_strerror(err));
		fwd_free(f);
		return;
	}
	if (!master_submit(f->m, fwd_send, f)) {
		http_resp_error(req, 503, "master is shutting down");
		fwd_free(f);
	}
}

void master_forward(struct master *m, http_req *req)
{
	const char *path = http_req_path(req);
	const char *ct = http_req_header(req, "Content-Type");
	char lead[TOPO_URL_MAX];
	struct fwd *f;

	master_known_leader(m, lead, sizeof(lead));
	if (!lead[0] || !strcmp(lead, m->self)) {
		not_leader(m, req, "", "no leader is known yet; retry");
		return;
	}
	if (!strcmp(path, "/heartbeat")) {
		not_leader(m, req, lead, "not the leader");
		return;
	}
	if (http_req_header(req, FORWARDED_HEADER)) {
		not_leader(m, req, lead, "not the leader (the request was already forwarded)");
		return;
	}
	if (!strcmp(path, "/submit")) {
		char *loc = xasprintf("http://%s%s", lead, http_req_uri(req));
		http_resp_header(req, "Location", loc);
		http_resp_send(req, 307, NULL, 0);
		free(loc);
		return;
	}
	f = xcalloc(1, sizeof(*f));
	f->m = m;
	f->req = req;
	snprintf(f->leader, sizeof(f->leader), "%s", lead);
	f->method = xstrdup(http_req_method_str(req));
	f->uri = xstrdup(http_req_uri(req));
	f->content_type = ct ? xstrdup(ct) : NULL;
	http_result_init(&f->res);
	http_req_stream_body(req, FORWARD_MAX_BODY, fwd_data, fwd_end, f);
}
