/* The shell's HTTP calls to the master, the volume servers and the filer. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "client/master_list.h"
#include "http_client.h"
#include "jwt.h"
#include "shell/shell_int.h"
#include "util.h"

#define SHELL_HTTP_TIMEOUT_MS (5 * 60 * 1000) /* a vacuum answers when it is done */

char *shell_escape(const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	buf b = BUF_INIT;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-_.~", *p) || (keep_slash && *p == '/')) {
			buf_append_byte(&b, (char)*p);
		} else {
			buf_append_byte(&b, '%');
			buf_append_byte(&b, hex[*p >> 4]);
			buf_append_byte(&b, hex[*p & 15]);
		}
	}
	return buf_steal(&b, NULL);
}

int shell_http(const char *method, const char *host, const char *pathq, const char *body,
	       jt **out, int *status, char *msg, size_t msglen)
{
	return shell_http_timeout(method, host, pathq, body, SHELL_HTTP_TIMEOUT_MS, out, status,
				  msg, msglen);
}

int shell_http_timeout(const char *method, const char *host, const char *pathq,
		       const char *body, long timeout_ms, jt **out, int *status, char *msg,
		       size_t msglen)
{
	struct http_result res;
	char *url = xasprintf("http://%s%s", host, pathq), auth[JWT_AUTH_HEADER_MAX];
	/* a filer token when filer signing is on (masters and /admin/ ignore it) */
	const char *a = jwt_filer_auth(method, pathq, auth);
	const char *json_hdr[] = {"Content-Type: application/json", a, NULL},
		   *auth_hdr[] = {a, NULL};
	char perr[128];
	int rc = -1;
	wfs_err err;
	jt *v = NULL;

	if (out)
		*out = NULL;
	if (status)
		*status = 0;
	http_result_init(&res);
	if (strchr(host, ',')) {
		/* -master as a list: the masters in turn, with failover */
		master_list *ml = master_list_new(host, msg, msglen);
		if (!ml)
			goto out;
		err = master_list_request(ml, method, pathq, body ? json_hdr : auth_hdr, body,
					  body ? strlen(body) : 0, timeout_ms, &res, NULL, 0);
		master_list_free(ml);
	} else {
		err = http_request(method, url, body ? json_hdr : auth_hdr, body,
				   body ? strlen(body) : 0, timeout_ms, &res);
	}
	if (err) {
		snprintf(msg, msglen, "%s: %s", host, wfs_strerror(err));
		goto out;
	}
	if (status)
		*status = res.status;
	if (res.body.len)
		v = jt_parse(res.body.data, res.body.len, perr, sizeof(perr));
	if (res.status < 200 || res.status > 299) {
		const char *e = jt_get_str(v, "error");
		if (e)
			snprintf(msg, msglen, "%s (%d)", e, res.status);
		else
			snprintf(msg, msglen, "%s %s: status %d", method, pathq, res.status);
		goto out;
	}
	if (out && res.body.len && !v) {
		snprintf(msg, msglen, "%s %s: answer is not JSON: %s", method, pathq, perr);
		goto out;
	}
	if (out) {
		*out = v;
		v = NULL;
	}
	rc = 0;
out:
	jt_free(v);
	http_result_free(&res);
	free(url);
	return rc;
}

int shell_get(const char *host, const char *pathq, jt **out, char *msg, size_t msglen)
{
	return shell_http("GET", host, pathq, NULL, out, NULL, msg, msglen);
}

static void replica_add(struct shell_replica **reps, size_t *n, size_t *cap,
			const struct shell_replica *r)
{
	if (*n == *cap)
		*reps = xrealloc(*reps, (*cap = *cap ? *cap * 2 : 16) * sizeof(**reps));
	(*reps)[(*n)++] = *r;
}

int shell_replicas(struct shell_env *env, jt **status_out, struct shell_replica **reps,
		   size_t *n, char *msg, size_t msglen)
{
	jt *st = NULL;
	const jt *dcs;
	size_t cap = 0;

	*reps = NULL;
	*n = 0;
	*status_out = NULL;
	if (shell_get(env->master, "/vol/status", &st, msg, msglen))
		return -1;
	dcs = jt_get(jt_get(st, "Volumes"), "DataCenters");
	for (size_t i = 0; i < jt_len(dcs); i++) {
		const jt *racks = dcs->items[i];
		for (size_t j = 0; j < jt_len(racks); j++) {
			const jt *nodes = racks->items[j];
			for (size_t k = 0; k < jt_len(nodes); k++) {
				const jt *vols = nodes->items[k];
				for (size_t l = 0; l < jt_len(vols); l++) {
					struct shell_replica r = {0};
					uint64_t id = 0;
					r.v = vols->items[l];
					jt_as_u64(jt_get(r.v, "Id"), &id);
					r.id = (uint32_t)id;
					snprintf(r.dc, sizeof(r.dc), "%s", dcs->keys[i]);
					snprintf(r.rack, sizeof(r.rack), "%s", racks->keys[j]);
					snprintf(r.node, sizeof(r.node), "%s", nodes->keys[k]);
					replica_add(reps, n, &cap, &r);
				}
			}
		}
	}
	*status_out = st;
	return 0;
}

int shell_nodes(struct shell_env *env, jt **status_out, struct shell_node **nodes, size_t *n,
		char *msg, size_t msglen)
{
	jt *st = NULL;
	const jt *dcs;
	size_t cap = 0;

	*nodes = NULL;
	*n = 0;
	*status_out = NULL;
	if (shell_get(env->master, "/dir/status", &st, msg, msglen))
		return -1;
	dcs = jt_get(jt_get(st, "Topology"), "DataCenters");
	for (size_t i = 0; i < jt_len(dcs); i++) {
		const jt *racks = jt_get(jt_at(dcs, i), "Racks");
		for (size_t j = 0; j < jt_len(racks); j++) {
			const jt *dns = jt_get(jt_at(racks, j), "DataNodes");
			for (size_t k = 0; k < jt_len(dns); k++) {
				const jt *d = jt_at(dns, k);
				struct shell_node nd = {0};
				nd.dc = jt_get_str(jt_at(dcs, i), "Id");
				nd.rack = jt_get_str(jt_at(racks, j), "Id");
				nd.url = jt_get_str(d, "Url");
				if (!nd.dc || !nd.rack || !nd.url)
					continue;
				jt_get_i64(d, "Volumes", &nd.volumes);
				jt_get_i64(d, "Max", &nd.max);
				jt_get_i64(d, "Free", &nd.free);
				nd.ec = jt_get(d, "EcShards");
				if (*n == cap)
					*nodes = xrealloc(*nodes, (cap = cap ? cap * 2 : 8) *
									  sizeof(**nodes));
				(*nodes)[(*n)++] = nd;
			}
		}
	}
	*status_out = st;
	return 0;
}
