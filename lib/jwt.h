/*
 * jwt: the HS256 JSON Web Tokens of SeaweedFS's security.toml signing
 * (jwt.signing, jwt.signing.read, jwt.filer_signing(.read)), so tokens minted
 * by SeaweedFS tools work here and ours work there.
 *
 *   header  {"alg":"HS256","typ":"JWT"}
 *   claims  {"exp":<unix seconds>,"fid":"<vid>,<key+cookie>"}   (fid: volume tokens only)
 *
 * Verification is strict: exactly three base64url parts (no padding), the
 * header's alg must be "HS256" (so "none" and every other algorithm are
 * refused), typ when present must be "JWT", the signature is compared in
 * constant time, exp is required and must be in the future, and a fid the
 * caller asks for must equal the claim (a "_N" suffix of a batch assignment's
 * later ids is stripped first, as SeaweedFS volumes do). Tokens longer than
 * JWT_MAX are refused before anything is decoded.
 *
 * Pure functions except jwt_cached, which keeps a small locked cache; any thread.
 */
#ifndef WEEDFS_JWT_H
#define WEEDFS_JWT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"
#include "security.h"

#define JWT_MAX 2048 /* longest token accepted or made, bytes */

enum jwt_status {
	JWT_OK,
	JWT_MISSING,   /* no token given */
	JWT_MALFORMED, /* not three base64url parts of JSON objects, too long, no exp */
	JWT_BAD_ALG,   /* alg is not HS256 (none included) or typ is not JWT */
	JWT_BAD_SIG,
	JWT_EXPIRED,
	JWT_WRONG_FID,
};

/* A short English reason ("token expired"...). */
const char *jwt_status_str(enum jwt_status s);

/*
 * Appends a token signed with key[0..key_len) expiring at exp (unix seconds)
 * to out, NUL-terminated; fid NULL leaves the claim out.
 */
void jwt_sign(const void *key, size_t key_len, int64_t exp, const char *fid, buf *out);

/*
 * Checks token[0..len) against key at time now (unix seconds). fid non-NULL:
 * the token's fid claim must name that needle (see above); NULL: any or no
 * fid claim is fine (the filer's tokens).
 */
enum jwt_status jwt_verify(const void *key, size_t key_len, const char *token, size_t len,
			   const char *fid, int64_t now);

/*
 * A token for k (exp = now + k->expires_after_sec) naming fid (NULL: none)
 * into out (JWT_MAX bytes; a "_N" suffix of fid is left out of the claim).
 * False when k is off (no key): send no token.
 */
bool jwt_mint(const struct security_key *k, const char *fid, char out[JWT_MAX]);

/*
 * Like jwt_mint with no fid, but a token made earlier for the same key is
 * reused while more than half its life is left (the filer's clients send one
 * with every request).
 */
bool jwt_cached(const struct security_key *k, char out[JWT_MAX]);

/*
 * Client side: "Authorization: Bearer <token>" for k and fid into out, for a
 * header list; NULL when k is off (a NULL entry ends the list, so put it last).
 */
#define JWT_AUTH_HEADER_MAX (JWT_MAX + 24)
const char *jwt_auth_header(const struct security_key *k, const char *fid,
			    char out[JWT_AUTH_HEADER_MAX]);
/* The same with a token already in hand (tok NULL or "": NULL). */
const char *jwt_auth_header_of(const char *tok, char out[JWT_AUTH_HEADER_MAX]);

/*
 * The filer's key for a request (jwt.filer_signing or .read): reads are GET,
 * HEAD and the JSON API's POSTs to /.api/v1/lookup, list, lookupVolume and
 * statfs; everything else changes things. One rule for the filer and its
 * clients.
 */
const struct security_key *jwt_filer_key(const char *method, const char *path);
/*
 * Client side: the Authorization header for a filer request (a cached token,
 * jwt_cached), NULL when that key is off.
 */
const char *jwt_filer_auth(const char *method, const char *path, char out[JWT_AUTH_HEADER_MAX]);

/* The token a request carries: "Authorization: Bearer <t>", else ?jwt=<t>; NULL if none. */
struct http_req;
const char *jwt_of_req(const struct http_req *req);

/*
 * Server side: true when k is off or req carries a valid token for fid (NULL:
 * no fid check). Otherwise answers 401 {"error":"<why>"}, logs, and returns
 * false: the caller returns without touching anything.
 */
bool jwt_req_allowed(struct http_req *req, const struct security_key *k, const char *fid);

/* The unix time now, seconds. */
int64_t jwt_now(void);

#endif
