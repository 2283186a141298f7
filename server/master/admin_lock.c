/*
 * DESIGN: a lease is a name ("admin"), the client that holds it (free text the
 * shell fills with user@host pid), a random 64-bit token and a monotonic expiry.
 * POST /admin/lease grants it when it is free, expired, or previousToken is the
 * current token (a renewal, which also hands out a fresh token and expiry);
 * otherwise 409 naming the holder. POST /admin/release frees it for the holder
 * of the token. Nothing is persisted: after a master restart every lease is
 * free, which is what a crashed holder's lease becomes anyway within
 * ADMIN_LEASE_SEC. A handful of names is enough (the shell uses one).
 */
#include "config.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"
#include "server/master/admin_lock.h"
#include "server/master/master_int.h"
#include "util.h"

#define LEASE_NAMES   8
#define LEASE_NAME_MAX 64
#define LEASE_CLIENT_MAX 128

struct lease {
	char name[LEASE_NAME_MAX]; /* "" = unused slot */
	char client[LEASE_CLIENT_MAX];
	uint64_t token;
	uint64_t expires_ns; /* monotonic */
};

struct admin_locks {
	pthread_mutex_t mu;
	struct lease leases[LEASE_NAMES]; /* protected by mu */
};

admin_locks *admin_locks_new(void)
{
	admin_locks *l = xcalloc(1, sizeof(*l));
	pthread_mutex_init(&l->mu, NULL);
	return l;
}

void admin_locks_free(admin_locks *l)
{
	if (!l)
		return;
	pthread_mutex_destroy(&l->mu);
	free(l);
}

/* The slot of name, or (with create) a free one for it; NULL when there is none. mu held. */
static struct lease *lease_slot(admin_locks *l, const char *name, uint64_t now, bool create)
{
	struct lease *spare = NULL;
	for (size_t i = 0; i < LEASE_NAMES; i++) {
		struct lease *s = &l->leases[i];
		if (!strcmp(s->name, name))
			return s;
		if (!spare && (!s->name[0] || s->expires_ns <= now))
			spare = s;
	}
	if (spare && create) {
		memset(spare, 0, sizeof(*spare));
		snprintf(spare->name, sizeof(spare->name), "%s", name);
	}
	return create ? spare : NULL;
}

static void send_lease(http_req *req, const char *name, const struct lease *s, uint64_t now,
		       bool with_token)
{
	buf out = BUF_INIT;
	json_w *w = jw_new(&out, master_pretty(req));
	bool held = s && s->token && s->expires_ns > now;
	char tok[24];

	jw_obj_begin(w);
	jw_kv_str(w, "name", name);
	jw_kv_bool(w, "held", held);
	if (held) {
		jw_kv_str(w, "client", s->client);
		jw_kv_i64(w, "expiresInMs", (int64_t)((s->expires_ns - now) / 1000000));
		if (with_token) {
			/* a string: shells and scripts pass it back verbatim */
			snprintf(tok, sizeof(tok), "%" PRIu64, s->token);
			jw_kv_str(w, "token", tok);
			jw_kv_i64(w, "ttlSeconds", ADMIN_LEASE_SEC);
		}
	}
	jw_obj_end(w);
	jw_free(w);
	http_resp_send_json(req, 200, &out);
	buf_free(&out);
}

/* Reads name (default "admin"); false after answering 400. */
static bool lease_name(http_req *req, const char **name)
{
	const char *n = http_req_query(req, "name");
	*name = n && *n ? n : "admin";
	if (strlen(*name) >= LEASE_NAME_MAX || !master_collection_valid(*name)) {
		http_resp_error(req, 400, "invalid lease name \"%.64s\"", *name);
		return false;
	}
	return true;
}

/* Reads an optional token parameter; false after answering 400. */
static bool lease_token(http_req *req, const char *param, uint64_t *tok)
{
	const char *v = http_req_query(req, param);
	*tok = 0;
	if (!v || !*v)
		return true;
	if (!parse_u64(v, tok) || !*tok) {
		http_resp_error(req, 400, "invalid %s \"%.24s\"", param, v);
		return false;
	}
	return true;
}

static void h_lease(admin_locks *l, http_req *req)
{
	const char *name, *client = http_req_query(req, "client");
	uint64_t prev, now = time_mono_ns();
	struct lease *s;

	if (!lease_name(req, &name) || !lease_token(req, "previousToken", &prev))
		return;
	if (http_req_method(req) != HTTP_POST) {
		pthread_mutex_lock(&l->mu);
		s = lease_slot(l, name, now, false);
		send_lease(req, name, s, now, false);
		pthread_mutex_unlock(&l->mu);
		return;
	}
	if (!client || !*client || strlen(client) >= LEASE_CLIENT_MAX) {
		http_resp_error(req, 400, "client is required (at most %d bytes)",
				LEASE_CLIENT_MAX - 1);
		return;
	}
	pthread_mutex_lock(&l->mu);
	s = lease_slot(l, name, now, true);
	if (!s) {
		http_resp_error(req, 503, "too many leases");
	} else if (s->token && s->expires_ns > now && s->token != prev) {
		http_resp_error(req, 409, "lock \"%s\" is held by %s (expires in %" PRIu64 " s)",
				name, s->client, (s->expires_ns - now) / 1000000000 + 1);
	} else {
		do
			s->token = master_rand64();
		while (!s->token);
		s->expires_ns = now + (uint64_t)ADMIN_LEASE_SEC * 1000000000;
		snprintf(s->client, sizeof(s->client), "%s", client);
		send_lease(req, name, s, now, true);
	}
	pthread_mutex_unlock(&l->mu);
}

static void h_release(admin_locks *l, http_req *req)
{
	const char *name;
	uint64_t tok, now = time_mono_ns();
	struct lease *s;

	if (!lease_name(req, &name) || !lease_token(req, "token", &tok))
		return;
	if (!tok) {
		http_resp_error(req, 400, "token is required");
		return;
	}
	pthread_mutex_lock(&l->mu);
	s = lease_slot(l, name, now, false);
	if (!s || s->token != tok || s->expires_ns <= now) {
		http_resp_error(req, 409, "lock \"%s\" is not held with that token", name);
	} else {
		memset(s, 0, sizeof(*s));
		http_resp_send(req, 204, NULL, 0);
	}
	pthread_mutex_unlock(&l->mu);
}

bool admin_locks_handle(admin_locks *l, http_req *req, const char *path)
{
	enum http_method me = http_req_method(req);
	bool lease = !strcmp(path, "/admin/lease");

	if (!lease && strcmp(path, "/admin/release"))
		return false;
	if (me != HTTP_POST && !(lease && (me == HTTP_GET || me == HTTP_HEAD)))
		http_resp_error(req, 405, "method %s not allowed", http_req_method_str(req));
	else if (lease)
		h_lease(l, req);
	else
		h_release(l, req);
	return true;
}
