/*
 * DESIGN: /dir/assign picks a writable volume under the topology's shared
 * lock, reserves keys from the sequence and answers, all on the loop thread.
 * When the layout has no writable volume it asks growth (shared with other
 * assigns of the same layout) and resumes on the loop via http_req_defer.
 * /submit reuses the same path, then uploads the body from a worker.
 * Lookups and fid redirects are read-only topology queries.
 * Several masters (-peers): the keys come from a batch reserved in
 * PostgreSQL; when it runs short, a worker reserves the next batch and the
 * assignment resumes on the loop. A leader that took over less than
 * MASTER_WARMUP_PULSES pulses ago has not heard every volume server yet: an
 * assignment finding no writable volume waits out that warm-up (on a worker)
 * and looks again before it asks for growth, so a new leader never grows
 * volumes just because its topology is still empty.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "client/fid.h"
#include "http_client.h"
#include "json.h"
#include "jwt.h"
#include "log.h"
#include "security.h"
#include "server/master/master_int.h"
#include "util.h"

#define ASSIGN_MAX_COUNT  1000000
#define GROW_MAX_COUNT    1000
#define SUBMIT_MAX_BODY   (256ull << 20)
#define UPLOAD_TIMEOUT_MS 120000

/* A parameter from the form body (when given) or else the query string. */
static const char *param(http_req *req, const struct form *f, const char *name)
{
	for (size_t i = 0; f && i < f->n; i++)
		if (!strcmp(f->name[i], name))
			return f->value[i];
	return http_req_query(req, name);
}

static bool copy_param(http_req *req, const struct form *f, const char *name, char *out, size_t n,
		       char *msg, size_t msglen)
{
	const char *v = param(req, f, name);
	out[0] = '\0';
	if (!v)
		return true;
	if (strlen(v) >= n) {
		snprintf(msg, msglen, "%s is too long", name);
		return false;
	}
	memcpy(out, v, strlen(v) + 1);
	return true;
}

static bool assign_params_parse_form(struct master *m, http_req *req, const struct form *f,
				     struct assign_params *p, char *msg, size_t msglen);

bool assign_params_parse(struct master *m, http_req *req, struct assign_params *p, char *msg,
			 size_t msglen)
{
	return assign_params_parse_form(m, req, NULL, p, msg, msglen);
}

static bool assign_params_parse_form(struct master *m, http_req *req, const struct form *f,
				     struct assign_params *p, char *msg, size_t msglen)
{
	const char *v;
	uint64_t u;
	int64_t i;

	memset(p, 0, sizeof(*p));
	p->count = 1;
	p->preallocate = -1;
	if (!copy_param(req, f, "collection", p->collection, sizeof(p->collection), msg, msglen) ||
	    !copy_param(req, f, "dataCenter", p->dc, sizeof(p->dc), msg, msglen) ||
	    !copy_param(req, f, "rack", p->rack, sizeof(p->rack), msg, msglen) ||
	    !copy_param(req, f, "dataNode", p->node, sizeof(p->node), msg, msglen))
		return false;
	if (!master_collection_valid(p->collection)) {
		snprintf(msg, msglen, "invalid collection name \"%s\"", p->collection);
		return false;
	}
	v = param(req, f, "replication");
	if (v && *v) {
		if (replica_placement_parse(v, &p->rp)) {
			snprintf(msg, msglen, "invalid replication \"%.16s\"", v);
			return false;
		}
	} else {
		p->rp = m->default_rp;
	}
	v = param(req, f, "ttl");
	if (ttl_parse(v, &p->ttl)) {
		snprintf(msg, msglen, "invalid ttl \"%.16s\"", v);
		return false;
	}
	v = param(req, f, "count");
	if (v && *v) {
		if (!parse_u64(v, &u) || u == 0 || u > ASSIGN_MAX_COUNT) {
			snprintf(msg, msglen, "invalid count \"%.24s\" (want 1..%d)", v,
				 ASSIGN_MAX_COUNT);
			return false;
		}
		p->count = u;
	}
	v = param(req, f, "writableVolumeCount");
	if (v && *v) {
		if (!parse_u64(v, &u) || u > GROW_MAX_COUNT) {
			snprintf(msg, msglen, "invalid writableVolumeCount \"%.24s\" (want 0..%d)",
				 v, GROW_MAX_COUNT);
			return false;
		}
		p->writable_count = (int)u;
	}
	v = param(req, f, "dataSize");
	if (v && *v) {
		if (!parse_u64(v, &u)) {
			snprintf(msg, msglen, "invalid dataSize \"%.24s\"", v);
			return false;
		}
		if (u > m->volume_size_limit) {
			snprintf(msg, msglen, "dataSize %" PRIu64 " exceeds the volume size limit",
				 u);
			return false;
		}
		p->data_size = u;
	}
	v = param(req, f, "preallocate");
	if (v && *v) {
		if (!parse_i64(v, &i) || i < 0 || (uint64_t)i > m->volume_size_limit) {
			snprintf(msg, msglen, "invalid preallocate \"%.24s\"", v);
			return false;
		}
		p->preallocate = i;
	}
	return true;
}

static void params_key(const struct assign_params *p, struct topo_layout_key *k,
		       struct place_prefs *pr)
{
	k->collection = p->collection;
	k->rp = p->rp;
	k->ttl = p->ttl;
	pr->dc = p->dc;
	pr->rack = p->rack;
	pr->node = p->node;
}

/* ---- assignment with growth ---- */

struct assign_result {
	char fid[FID_STR_MAX];
	struct topo_location loc;
	uint64_t count;
};

struct assign_ctx;
/* Finishes the request on its loop thread; status 200 with r, or an error. */
typedef void (*assign_finish_fn)(struct assign_ctx *c, int status, const char *msg,
				 const struct assign_result *r);

struct assign_ctx {
	struct master *m;
	http_req *req;
	struct assign_params p;
	assign_finish_fn finish;
	/* growth outcome, written by the worker before the defer */
	bool grown;
	wfs_err gerr;
	char gmsg[512];
	int refills;  /* key batches reserved for this assignment */
	bool warmed;  /* waited out a fresh leader's warm-up */
	/* /submit */
	buf body;
	char *content_type;
	struct assign_result res;
	int up_status;
	char up_msg[512];
	char name[256];
	char etag[80];
	uint64_t size;
};

static void assign_ctx_free(struct assign_ctx *c)
{
	if (!c)
		return;
	buf_free(&c->body);
	free(c->content_type);
	free(c);
}

/* One pick plus keys; WFS_ENOENT when the layout has no usable volume. */
static wfs_err assign_try(struct master *m, const struct assign_params *p, struct assign_result *r,
			  char *msg, size_t msglen)
{
	struct topo_layout_key k;
	struct place_prefs pr;
	struct fid f;
	wfs_err err;

	params_key(p, &k, &pr);
	err = topology_pick_writable(m->topo, &k, &pr, p->data_size, time_mono_ns(),
				     master_rand64(), &f.volume_id, &r->loc);
	if (err)
		return err;
	err = sequence_next_keys(m->seq, p->count, &f.key);
	if (err == WFS_EUNAVAIL)
		snprintf(msg, msglen, "this master is no longer the leader; retry");
	else if (err)
		snprintf(msg, msglen, "could not reserve file keys: %s", wfs_strerror(err));
	if (err)
		return err;
	f.cookie = master_rand32();
	fid_format(&f, r->fid, sizeof(r->fid));
	r->count = p->count;
	return WFS_OK;
}

static void assign_start(struct assign_ctx *c);

/* Back on the request's loop after growth, a key batch or the warm-up. */
static void assign_again(http_req *req, void *arg) { assign_start(arg); }

/* Growth finished (worker thread): go back to the request's loop. */
static void assign_grown(void *arg, int created, wfs_err err, const char *msg)
{
	struct assign_ctx *c = arg;
	c->grown = true;
	c->gerr = err;
	snprintf(c->gmsg, sizeof(c->gmsg), "%s", msg ? msg : "");
	http_req_defer(c->req, assign_again, c);
}

/* Worker: reserves the next key batch in the database. */
static void assign_refill(void *arg)
{
	struct assign_ctx *c = arg;
	sequence_refill(c->m->seq, c->p.count); /* a failure shows on the next try */
	http_req_defer(c->req, assign_again, c);
}

/* True once the layout of c has a writable volume (a heartbeat brought one). Any thread. */
static bool layout_writable(struct assign_ctx *c)
{
	struct topo_layout_key k;
	struct place_prefs pr;
	struct topo_location loc;
	uint32_t vid;
	params_key(&c->p, &k, &pr);
	return !topology_pick_writable(c->m->topo, &k, &pr, c->p.data_size, time_mono_ns(),
				       master_rand64(), &vid, &loc);
}

/* Worker: waits until a fresh leader has heard its servers (or stopped leading). */
static void assign_warm_up(void *arg)
{
	struct assign_ctx *c = arg;
	while (master_leader_age_ns(c->m) > 0 && !master_warm(c->m) && !layout_writable(c) &&
	       master_sleep(c->m, 0))
		usleep(20 * 1000);
	http_req_defer(c->req, assign_again, c);
}

static void assign_later(struct assign_ctx *c, pool_fn fn)
{
	if (!master_submit(c->m, fn, c))
		c->finish(c, 503, "master is shutting down", NULL);
}

/* Starts (or resumes) an assignment for c; c->finish is always called (now or later). */
static void assign_start(struct assign_ctx *c)
{
	struct assign_result r;
	struct topo_layout_key k;
	struct place_prefs pr;
	char msg[512] = "";
	wfs_err err;

	if (c->grown && c->gerr) {
		c->finish(c, growth_error_status(c->gerr), c->gmsg, NULL);
		return;
	}
	err = assign_try(c->m, &c->p, &r, msg, sizeof(msg));
	if (!err) {
		c->finish(c, 200, NULL, &r);
	} else if (err == WFS_EBUSY && c->refills++ < 3) {
		assign_later(c, assign_refill);
	} else if (err == WFS_EBUSY || err == WFS_EUNAVAIL) {
		c->finish(c, 503, msg[0] ? msg : "could not reserve file keys; retry", NULL);
	} else if (err != WFS_ENOENT) {
		c->finish(c, 500, msg, NULL);
	} else if (c->grown) {
		char rps[4];
		replica_placement_format(&c->p.rp, rps);
		snprintf(msg, sizeof(msg),
			 "no writable volumes for collection \"%s\" replication %s after growth",
			 c->p.collection, rps);
		c->finish(c, 503, msg, NULL);
	} else if (!c->warmed && !master_warm(c->m)) {
		c->warmed = true;
		assign_later(c, assign_warm_up);
	} else {
		params_key(&c->p, &k, &pr);
		growth_request(c->m->growth, &k, &pr, c->p.writable_count, c->p.preallocate, true,
			       assign_grown, c);
	}
}

/*
 * An assignment's fields; with jwt.signing on also "auth", a write token for
 * the fid (a batch's fid_1..fid_N-1 share it: volumes strip the suffix).
 */
static void assign_result_json(json_w *w, const struct assign_result *r)
{
	char tok[JWT_MAX];

	jw_kv_str(w, "fid", r->fid);
	jw_kv_str(w, "url", r->loc.url);
	jw_kv_str(w, "publicUrl", r->loc.public_url);
	jw_kv_u64(w, "count", r->count);
	if (jwt_mint(&security()->volume_write, r->fid, tok))
		jw_kv_str(w, "auth", tok);
}

static void assign_answer(struct assign_ctx *c, int status, const char *msg,
			  const struct assign_result *r)
{
	buf out = BUF_INIT;
	json_w *w = jw_new(&out, master_pretty(c->req));
	jw_obj_begin(w);
	if (status == 200) {
		metric_inc(c->m->m_assigns);
		assign_result_json(w, r);
	} else {
		jw_kv_str(w, "error", msg);
	}
	jw_obj_end(w);
	jw_free(w);
	http_resp_send_json(c->req, status, &out);
	buf_free(&out);
	assign_ctx_free(c);
}

static void assign_run(struct master *m, http_req *req, const struct form *f)
{
	struct assign_ctx *c;
	struct assign_params p;
	struct assign_result r;
	char msg[512];

	if (!assign_params_parse_form(m, req, f, &p, msg, sizeof(msg))) {
		http_resp_error(req, 400, "%s", msg);
		return;
	}
	/* Fast path without any allocation. */
	if (!assign_try(m, &p, &r, msg, sizeof(msg))) {
		buf out = BUF_INIT;
		metric_inc(m->m_assigns);
		json_w *w = jw_new(&out, master_pretty(req));
		jw_obj_begin(w);
		assign_result_json(w, &r);
		jw_obj_end(w);
		jw_free(w);
		http_resp_send_json(req, 200, &out);
		buf_free(&out);
		return;
	}
	c = xcalloc(1, sizeof(*c));
	c->m = m;
	c->req = req;
	c->p = p;
	c->finish = assign_answer;
	assign_start(c);
}

static void assign_form_body(http_req *req, const char *data, size_t len, void *arg)
{
	struct form f;
	if (!form_parse(data, len, &f)) {
		http_resp_error(req, 400, "malformed form body");
		return;
	}
	assign_run(arg, req, &f);
	form_free(&f);
}

void master_h_assign(struct master *m, http_req *req)
{
	const char *ct = http_req_header(req, "Content-Type");
	/* SeaweedFS clients may send the parameters as a POSTed form. */
	if (http_req_method(req) == HTTP_POST && http_req_content_length(req) != 0 && ct &&
	    !strncasecmp(ct, "application/x-www-form-urlencoded", 33)) {
		http_req_read_body(req, FORM_MAX_BODY, assign_form_body, m);
		return;
	}
	assign_run(m, req, NULL);
}

/* ---- /submit ---- */

static void submit_answer(http_req *req, void *arg)
{
	struct assign_ctx *c = arg;
	buf out = BUF_INIT;
	json_w *w;

	if (c->up_status < 200 || c->up_status > 299) {
		http_resp_error(req, c->up_status >= 400 ? c->up_status : 500, "%s", c->up_msg);
		assign_ctx_free(c);
		return;
	}
	w = jw_new(&out, master_pretty(req));
	jw_obj_begin(w);
	jw_kv_str(w, "fileName", c->name);
	jw_kv_str(w, "fid", c->res.fid);
	{
		char *fu = xasprintf("%s/%s", c->res.loc.public_url, c->res.fid);
		jw_kv_str(w, "fileUrl", fu);
		free(fu);
	}
	jw_kv_u64(w, "size", c->size);
	jw_kv_str(w, "eTag", c->etag);
	jw_obj_end(w);
	jw_free(w);
	http_resp_send_json(req, 201, &out);
	buf_free(&out);
	assign_ctx_free(c);
}

/* Worker: uploads the original body (multipart or raw) to the assigned volume server. */
static void submit_upload(void *arg)
{
	struct assign_ctx *c = arg;
	struct http_result res;
	char *url = xasprintf("http://%s/%s", c->res.loc.url, c->res.fid);
	char *ct = xasprintf("Content-Type: %s",
			     c->content_type ? c->content_type : "application/octet-stream");
	char auth[JWT_AUTH_HEADER_MAX];
	const char *headers[] = {ct,
				 jwt_auth_header(&security()->volume_write, c->res.fid, auth),
				 NULL};
	char jerr[128];
	wfs_err err;

	http_result_init(&res);
	err = http_request("POST", url, headers, c->body.data, c->body.len, UPLOAD_TIMEOUT_MS,
			   &res);
	if (err) {
		c->up_status = 502;
		snprintf(c->up_msg, sizeof(c->up_msg), "upload to %s: %s", url, wfs_strerror(err));
	} else if (res.status < 200 || res.status > 299) {
		yajl_val v = json_parse(res.body.data ? res.body.data : "", res.body.len, jerr,
					sizeof(jerr));
		const char *e = NULL;
		c->up_status = res.status;
		json_get_str(v, "error", &e);
		snprintf(c->up_msg, sizeof(c->up_msg), "upload to %s: %s", url,
			 e ? e : http_status_text(res.status));
		yajl_tree_free(v);
	} else {
		yajl_val v = json_parse(res.body.data ? res.body.data : "", res.body.len, jerr,
					sizeof(jerr));
		const char *s;
		c->up_status = 201;
		if (json_get_str(v, "name", &s))
			snprintf(c->name, sizeof(c->name), "%s", s);
		if (json_get_str(v, "eTag", &s))
			snprintf(c->etag, sizeof(c->etag), "%s", s);
		if (!json_get_u64(v, "size", &c->size))
			c->size = c->body.len;
		yajl_tree_free(v);
	}
	http_result_free(&res);
	free(url);
	free(ct);
	http_req_defer(c->req, submit_answer, c);
}

static void submit_assigned(struct assign_ctx *c, int status, const char *msg,
			    const struct assign_result *r)
{
	if (status != 200) {
		http_resp_error(c->req, status, "%s", msg);
		assign_ctx_free(c);
		return;
	}
	c->res = *r;
	if (!master_submit(c->m, submit_upload, c)) {
		http_resp_error(c->req, 503, "master is shutting down");
		assign_ctx_free(c);
	}
}

static bool submit_data(http_req *req, const char *data, size_t len, void *arg)
{
	struct assign_ctx *c = arg;
	buf_append(&c->body, data, len);
	return true;
}

/* Always called once, so the context is released on every path. */
static void submit_end(http_req *req, wfs_err err, void *arg)
{
	struct assign_ctx *c = arg;
	if (err) {
		http_resp_error(req, wfs_err_http_status(err), "reading the body: %s",
				wfs_strerror(err));
		assign_ctx_free(c);
		return;
	}
	assign_start(c);
}

void master_h_submit(struct master *m, http_req *req)
{
	struct assign_ctx *c;
	struct assign_params p;
	const char *ct = http_req_header(req, "Content-Type");
	char msg[512];

	if (!assign_params_parse(m, req, &p, msg, sizeof(msg))) {
		http_resp_error(req, 400, "%s", msg);
		return;
	}
	if (!ct || strncasecmp(ct, "multipart/form-data", 19)) {
		http_resp_error(req, 400, "submit wants a multipart/form-data body");
		return;
	}
	c = xcalloc(1, sizeof(*c));
	c->m = m;
	c->req = req;
	c->p = p;
	c->p.count = 1;
	c->finish = submit_assigned;
	c->content_type = xstrdup(ct);
	/* The body size is bounded before anything is buffered. */
	http_req_stream_body(req, SUBMIT_MAX_BODY, submit_data, submit_end, c);
}

/* ---- lookup and redirect ---- */

/* Parses the volume id at the start of "3", "3,01637037d6" or "3/..."; false if malformed. */
static bool parse_vid_prefix(const char *s, uint32_t *vid)
{
	size_t n = strcspn(s, ",/");
	return volume_id_parse(s, n, vid);
}

/*
 * A token for the needle looked up, as SeaweedFS: read=yes gets a read token
 * (jwt.signing.read), otherwise a write token (a delete looks up first). It
 * goes in an "Authorization: BEARER" answer header like SeaweedFS's and in
 * "auth"; neither when that key is off.
 */
static void lookup_auth(http_req *req, json_w *w, const char *fid)
{
	const char *rd = http_req_query(req, "read");
	const struct security_key *k = rd && !strcmp(rd, "yes") ? &security()->volume_read
							  : &security()->volume_write;
	char tok[JWT_MAX], hdr[JWT_MAX + 8];

	if (!jwt_mint(k, fid, tok))
		return;
	snprintf(hdr, sizeof(hdr), "BEARER %s", tok);
	http_resp_header(req, "Authorization", hdr);
	jw_kv_str(w, "auth", tok);
}

void master_h_lookup(struct master *m, http_req *req)
{
	const char *id = http_req_query(req, "volumeId");
	struct topo_location locs[TOPO_MAX_LOCATIONS];
	buf out = BUF_INIT;
	json_w *w;
	uint32_t vid = 0;
	size_t n = 0;
	int status = 200;
	char err[128] = "";

	if (!id || !*id)
		id = http_req_query(req, "fileId");
	if (!id || !*id) {
		http_resp_error(req, 400, "volumeId or fileId is required");
		return;
	}
	if (strchr(id, ',')) {
		struct fid f = {0};
		if (fid_parse(id, &f, NULL)) {
			status = 400;
			snprintf(err, sizeof(err), "invalid file id \"%.64s\"", id);
		}
		vid = f.volume_id;
	} else if (!parse_vid_prefix(id, &vid)) {
		status = 400;
		snprintf(err, sizeof(err), "invalid volume id \"%.64s\"", id);
	}
	if (status == 200) {
		n = topology_lookup(m->topo, vid, time_mono_ns(), locs, TOPO_MAX_LOCATIONS);
		if (n == 0) {
			status = 404;
			snprintf(err, sizeof(err), "volume id %" PRIu32 " not found", vid);
		}
	}
	w = jw_new(&out, master_pretty(req));
	jw_obj_begin(w);
	jw_kv_str(w, "volumeOrFileId", id);
	if (status == 200 && strchr(id, ','))
		lookup_auth(req, w, id);
	if (status != 200) {
		jw_kv_str(w, "error", err);
	} else {
		jw_key(w, "locations");
		jw_arr_begin(w);
		for (size_t i = 0; i < n; i++) {
			jw_obj_begin(w);
			jw_kv_str(w, "url", locs[i].url);
			jw_kv_str(w, "publicUrl", locs[i].public_url);
			jw_kv_str(w, "dataCenter", locs[i].dc);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	}
	jw_obj_end(w);
	jw_free(w);
	http_resp_send_json(req, status, &out);
	buf_free(&out);
}

void master_h_ec_lookup(struct master *m, http_req *req)
{
	const char *id = http_req_query(req, "volumeId");
	struct topo_ec_locations *ec;
	buf out = BUF_INIT;
	json_w *w;
	uint32_t vid = 0;

	if (!id || !parse_vid_prefix(id, &vid) || id[strspn(id, "0123456789")]) {
		http_resp_error(req, 400, "invalid volumeId \"%.64s\"", id ? id : "");
		return;
	}
	ec = xmalloc(sizeof(*ec));
	if (!topology_ec_lookup(m->topo, vid, time_mono_ns(), ec)) {
		free(ec);
		http_resp_error(req, 404, "no EC shards of volume %" PRIu32 " on a live server", vid);
		return;
	}
	w = jw_new(&out, master_pretty(req));
	jw_obj_begin(w);
	jw_kv_u64(w, "volumeId", vid);
	jw_kv_str(w, "collection", ec->collection);
	jw_key(w, "shards");
	jw_arr_begin(w);
	for (int s = 0; s < 14; s++) {
		if (!ec->n[s])
			continue;
		jw_obj_begin(w);
		jw_kv_i64(w, "shard", s);
		jw_key(w, "locations");
		jw_arr_begin(w);
		for (size_t i = 0; i < ec->n[s]; i++) {
			jw_obj_begin(w);
			jw_kv_str(w, "url", ec->locs[s][i].url);
			jw_kv_str(w, "publicUrl", ec->locs[s][i].public_url);
			jw_kv_str(w, "dataCenter", ec->locs[s][i].dc);
			jw_obj_end(w);
		}
		jw_arr_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_obj_end(w);
	jw_free(w);
	http_resp_send_json(req, 200, &out);
	buf_free(&out);
	free(ec);
}

void master_h_redirect(struct master *m, http_req *req)
{
	const char *path = http_req_path(req);
	struct topo_location loc;
	uint32_t vid;
	char *location;

	if (!fid_path_parse(path, &vid)) {
		if (!strchr(path + 1, ',') && !strchr(path + 1, '/') &&
		    strspn(path + 1, "0123456789") != strlen(path + 1)) {
			http_resp_error(req, 404, "not found: %.200s", path);
			return;
		}
		http_resp_error(req, 400, "invalid file id \"%.200s\"", path + 1);
		return;
	}
	if (topology_lookup(m->topo, vid, time_mono_ns(), &loc, 1) == 0) {
		http_resp_error(req, 404, "volume id %" PRIu32 " not found", vid);
		return;
	}
	/* The request target keeps the client's encoding and query string. */
	location = xasprintf("http://%s%s", loc.public_url, http_req_uri(req));
	http_resp_header(req, "Location", location);
	http_resp_send(req, 308, NULL, 0);
	free(location);
}
