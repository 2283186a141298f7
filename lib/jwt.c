/* HS256 JSON Web Tokens: see jwt.h. */
#include "config.h"
#include "jwt.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "base64.h"
#include "http_server.h"
#include "json.h"
#include "log.h"
#include "util.h"

#define JWT_HEADER "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"
#define JWT_PART_MAX 1024 /* decoded header or claims, bytes */

const char *jwt_status_str(enum jwt_status s)
{
	switch (s) {
	case JWT_OK:
		return "ok";
	case JWT_MISSING:
		return "missing token";
	case JWT_MALFORMED:
		return "malformed token";
	case JWT_BAD_ALG:
		return "token algorithm not HS256";
	case JWT_BAD_SIG:
		return "bad token signature";
	case JWT_EXPIRED:
		return "token expired";
	case JWT_WRONG_FID:
		return "token is for another file id";
	}
	return "bad token";
}

int64_t jwt_now(void) { return (int64_t)(time_now_ns() / 1000000000u); }

static void mac(const void *key, size_t key_len, const char *text, size_t len, unsigned char out[32])
{
	unsigned int n = 32;
	/* HMAC wants a non-NULL key pointer even for an empty key */
	HMAC(EVP_sha256(), key_len ? key : "", (int)key_len, (const unsigned char *)text, len, out,
	     &n);
}

void jwt_sign(const void *key, size_t key_len, int64_t exp, const char *fid, buf *out)
{
	size_t start = out->len;
	unsigned char sig[32];
	buf claims = {0};
	json_w *w = jw_new(&claims, false);

	jw_obj_begin(w);
	jw_kv_i64(w, "exp", exp);
	if (fid)
		jw_kv_str(w, "fid", fid);
	jw_obj_end(w);
	jw_free(w);
	base64url_encode(JWT_HEADER, strlen(JWT_HEADER), out);
	buf_append(out, ".", 1);
	base64url_encode(claims.data, claims.len, out);
	mac(key, key_len, out->data + start, out->len - start, sig);
	buf_append(out, ".", 1);
	base64url_encode(sig, sizeof(sig), out);
	buf_free(&claims);
}

/* Decodes one base64url part that must hold a JSON object; NULL if not. */
static yajl_val part_json(const char *s, size_t n)
{
	uint8_t *raw;
	size_t len;
	yajl_val v;
	char err[64];

	if (!base64url_decode(s, n, JWT_PART_MAX, &raw, &len))
		return NULL;
	v = json_parse((const char *)raw, len, err, sizeof(err));
	free(raw);
	if (v && !YAJL_IS_OBJECT(v)) {
		yajl_tree_free(v);
		v = NULL;
	}
	return v;
}

/* The needle a fid names with a batch suffix "_N" dropped. */
static size_t fid_base_len(const char *fid)
{
	const char *us = strrchr(fid, '_');
	return us && us > fid ? (size_t)(us - fid) : strlen(fid);
}

enum jwt_status jwt_verify(const void *key, size_t key_len, const char *token, size_t len,
			   const char *fid, int64_t now)
{
	const char *d1, *d2, *s;
	unsigned char want[32];
	uint8_t *got = NULL;
	size_t got_len;
	yajl_val hdr = NULL, claims = NULL;
	enum jwt_status st = JWT_MALFORMED;
	const char *alg, *typ, *cfid;
	int64_t exp;

	if (!token || !len)
		return JWT_MISSING;
	if (len > JWT_MAX || memchr(token, '\0', len))
		return JWT_MALFORMED;
	d1 = memchr(token, '.', len);
	d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - token)) : NULL;
	if (!d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - token)))
		return JWT_MALFORMED;
	s = d2 + 1;
	hdr = part_json(token, (size_t)(d1 - token));
	claims = hdr ? part_json(d1 + 1, (size_t)(d2 - d1 - 1)) : NULL;
	if (!claims)
		goto out;
	st = JWT_BAD_ALG;
	if (!json_get_str(hdr, "alg", &alg) || strcmp(alg, "HS256"))
		goto out;
	if (json_get(hdr, "typ") && (!json_get_str(hdr, "typ", &typ) || strcmp(typ, "JWT")))
		goto out;
	st = JWT_BAD_SIG;
	if (!base64url_decode(s, len - (size_t)(s - token), 64, &got, &got_len) ||
	    got_len != sizeof(want))
		goto out;
	mac(key, key_len, token, (size_t)(d2 - token), want);
	if (CRYPTO_memcmp(want, got, sizeof(want)))
		goto out;
	/* only a signed token's claims are looked at */
	st = JWT_MALFORMED;
	if (!json_get_i64(claims, "exp", &exp)) {
		double e;
		if (!json_get_double(claims, "exp", &e) || e != e)
			goto out;
		exp = e > 9e18 ? INT64_MAX : e < -9e18 ? INT64_MIN : (int64_t)e;
	}
	st = JWT_EXPIRED;
	if (exp <= now)
		goto out;
	st = JWT_WRONG_FID;
	if (fid) {
		size_t n = fid_base_len(fid);
		if (!json_get_str(claims, "fid", &cfid) || strlen(cfid) != n || memcmp(cfid, fid, n))
			goto out;
	}
	st = JWT_OK;
out:
	free(got);
	if (hdr)
		yajl_tree_free(hdr);
	if (claims)
		yajl_tree_free(claims);
	return st;
}

bool jwt_mint(const struct security_key *k, const char *fid, char out[JWT_MAX])
{
	buf b = {0};

	char base[JWT_MAX / 2];
	size_t n;

	if (!k || !k->key)
		return false;
	if (fid) { /* a batch id's token names its base fid, like the volume checks */
		n = fid_base_len(fid);
		if (n >= sizeof(base))
			return false;
		memcpy(base, fid, n);
		base[n] = '\0';
		fid = base;
	}
	jwt_sign(k->key, k->key_len, jwt_now() + k->expires_after_sec, fid, &b);
	if (b.len >= JWT_MAX) { /* a fid nobody makes: send no token, the server says why */
		buf_free(&b);
		return false;
	}
	memcpy(out, b.data, b.len + 1);
	buf_free(&b);
	return true;
}

/* One slot per key (filer write and filer read): few keys, a linear look. */
#define JWT_CACHE_SLOTS 4
static struct {
	const struct security_key *k;
	int64_t made, exp;
	char token[JWT_MAX];
} cache[JWT_CACHE_SLOTS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

bool jwt_cached(const struct security_key *k, char out[JWT_MAX])
{
	int64_t now = jwt_now();
	int slot = -1;

	if (!k || !k->key)
		return false;
	pthread_mutex_lock(&cache_lock);
	for (int i = 0; i < JWT_CACHE_SLOTS; i++) {
		if (cache[i].k == k) {
			slot = i;
			break;
		}
		if (slot < 0 && !cache[i].k)
			slot = i;
	}
	if (slot < 0)
		slot = 0;
	/* reused while more than half its life remains, so a receiver never sees it expire */
	if (cache[slot].k != k || now - cache[slot].made >= (cache[slot].exp - cache[slot].made) / 2) {
		if (!jwt_mint(k, NULL, cache[slot].token)) {
			pthread_mutex_unlock(&cache_lock);
			return false;
		}
		cache[slot].k = k;
		cache[slot].made = now;
		cache[slot].exp = now + k->expires_after_sec;
	}
	memcpy(out, cache[slot].token, strlen(cache[slot].token) + 1);
	pthread_mutex_unlock(&cache_lock);
	return true;
}

const char *jwt_of_req(const struct http_req *req)
{
	const char *h = http_req_header(req, "Authorization"), *q;

	if (h && !strncasecmp(h, "Bearer ", 7)) {
		h += 7;
		while (*h == ' ')
			h++;
		return *h ? h : NULL;
	}
	q = http_req_query(req, "jwt");
	return q && *q ? q : NULL;
}

bool jwt_req_allowed(struct http_req *req, const struct security_key *k, const char *fid)
{
	const char *t;
	enum jwt_status st;

	if (!k || !k->key)
		return true;
	t = jwt_of_req(req);
	st = jwt_verify(k->key, k->key_len, t, t ? strlen(t) : 0, fid, jwt_now());
	if (st == JWT_OK)
		return true;
	log_info("refused %s %s from %s: %s", http_req_method_str(req), http_req_path(req),
		 http_req_peer(req), jwt_status_str(st));
	http_resp_error(req, 401, "%s", jwt_status_str(st));
	return false;
}

const char *jwt_auth_header_of(const char *tok, char out[JWT_AUTH_HEADER_MAX])
{
	if (!tok || !*tok || strlen(tok) >= JWT_MAX)
		return NULL;
	snprintf(out, JWT_AUTH_HEADER_MAX, "Authorization: Bearer %s", tok);
	return out;
}

const char *jwt_auth_header(const struct security_key *k, const char *fid,
			    char out[JWT_AUTH_HEADER_MAX])
{
	char tok[JWT_MAX];
	return jwt_mint(k, fid, tok) ? jwt_auth_header_of(tok, out) : NULL;
}

const struct security_key *jwt_filer_key(const char *method, const char *path)
{
	static const char *const reads[] = {"lookup", "list", "lookupVolume", "statfs", NULL};
	bool read = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	if (!strcmp(method, "POST") && !strncmp(path, "/.api/v1/", 9)) {
		size_t n = strcspn(path + 9, "?");
		for (int i = 0; reads[i]; i++)
			read = read || (strlen(reads[i]) == n && !strncmp(path + 9, reads[i], n));
	}
	return read ? &security()->filer_read : &security()->filer_write;
}

const char *jwt_filer_auth(const char *method, const char *path, char out[JWT_AUTH_HEADER_MAX])
{
	char tok[JWT_MAX];
	return jwt_cached(jwt_filer_key(method, path), tok) ? jwt_auth_header_of(tok, out) : NULL;
}
