/* The OAuth2 token endpoint: see oauth_tokens.h. */
#include "config.h"
#include "catalog/oauth_tokens.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "lib/base64.h"
#include "lib/http_util.h"
#include "lib/json.h"
#include "lib/util.h"

#define FORM_FIELD_MAX 1024

/* The form field name of body, decoded (caller frees), or NULL. */
static char *form_field(const char *body, size_t len, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = body, *end = body + len; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		size_t flen = amp ? (size_t)(amp - p) : (size_t)(end - p);
		if (flen > n && p[n] == '=' && !strncmp(p, name, n) && flen - n - 1 <= FORM_FIELD_MAX) {
			buf b;
			buf_init(&b);
			if (!url_decode(p + n + 1, flen - n - 1, true, &b) ||
			    memchr(b.data, '\0', b.len)) {
				buf_free(&b);
				return NULL;
			}
			buf_append_byte(&b, '\0');
			return b.data;
		}
		p += flen + 1;
	}
	return NULL;
}

/* "Basic base64(id:secret)" into *id and *secret (caller frees both); false if not one. */
static bool basic_auth(const char *h, char **id, char **secret)
{
	uint8_t *raw = NULL;
	size_t n = 0;
	char *colon;
	if (!h || strncasecmp(h, "Basic ", 6) || strlen(h + 6) > 4 * FORM_FIELD_MAX ||
	    !base64_decode(h + 6, strlen(h + 6), &raw, &n))
		return false;
	raw = xrealloc(raw, n + 1);
	raw[n] = '\0';
	colon = strchr((char *)raw, ':');
	if (!colon || strlen((char *)raw) != n) {
		free(raw);
		return false;
	}
	*id = xstrndup((char *)raw, (size_t)(colon - (char *)raw));
	*secret = xstrdup(colon + 1);
	free(raw);
	return true;
}

static void oauth_error(int code, const char *error, const char *why, int *status, buf *out)
{
	json_w *w = jw_new(out, false);
	*status = code;
	jw_obj_begin(w);
	jw_kv_str(w, "error", error);
	jw_kv_str(w, "error_description", why);
	jw_obj_end(w);
	jw_free(w);
}

void oauth_tokens(const struct s3_iam *iam, const uint8_t key[CT_KEY_LEN], const char *body,
		  size_t len, const char *authorization, int64_t now, int *status, buf *out)
{
	char *grant = form_field(body, len, "grant_type"), *id = NULL, *secret = NULL;
	const char *want = NULL;
	char token[CT_TOKEN_MAX];

	if (!basic_auth(authorization, &id, &secret)) {
		id = form_field(body, len, "client_id");
		secret = form_field(body, len, "client_secret");
	}
	if (!grant || strcmp(grant, "client_credentials")) {
		oauth_error(400, "unsupported_grant_type", "only grant_type=client_credentials",
			    status, out);
	} else if (!id || !*id || !secret) {
		oauth_error(400, "invalid_request", "client_id and client_secret are required",
			    status, out);
	} else if (!s3_iam_is_open(iam) &&
		   (!s3_iam_lookup(iam, id, &want) || !want || strlen(want) != strlen(secret) ||
		    CRYPTO_memcmp(want, secret, strlen(want)))) {
		oauth_error(401, "invalid_client", "unknown client_id or wrong client_secret",
			    status, out);
	} else if (!ct_issue(key, id, now + OAUTH_TOKEN_TTL, token)) {
		oauth_error(400, "invalid_request", "client_id is too long", status, out);
	} else {
		json_w *w = jw_new(out, false);
		*status = 200;
		jw_obj_begin(w);
		jw_kv_str(w, "access_token", token);
		jw_kv_str(w, "token_type", "bearer");
		jw_kv_i64(w, "expires_in", OAUTH_TOKEN_TTL);
		jw_kv_str(w, "issued_token_type", "urn:ietf:params:oauth:token-type:access_token");
		jw_obj_end(w);
		jw_free(w);
	}
	free(grant);
	free(id);
	free(secret);
}
