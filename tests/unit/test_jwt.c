/* JSON Web Tokens and base64url: vectors made by an independent tool (python3 hmac/hashlib), and every refusal. */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "base64.h"
#include "jwt.h"
#include "tap.h"

#define KEY "secret-key"
#define FUTURE 4102444800 /* 2100-01-01, the exp of the fixed vectors */
#define NOW 1700000000

/* python3: HS256 over {"alg":"HS256","typ":"JWT"}.{"exp":4102444800,"fid":"3,01637037d6"} with key "secret-key" */
#define VEC_FID                                                                                     \
	"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjQxMDI0NDQ4MDAsImZpZCI6IjMsMDE2MzcwMzdkNiJ9." \
	"wvlEiD86fmMhZqWHf8mqV1_54481iwbgSBOWTUhfEqI"
/* the same with claims {"exp":4102444800} (a filer token) */
#define VEC_NOFID                                                          \
	"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjQxMDI0NDQ4MDB9." \
	"XUVGUwIBQWQDMV6OQkcv0ouE308udKzooFDeSRKLSic"
/* alg none, no signature */
#define VEC_NONE                                                         \
	"eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJleHAiOjQxMDI0NDQ4MDAsImZpZCI6" \
	"IjMsMDE2MzcwMzdkNiJ9."
/* alg HS512 in the header but an HS256 MAC (an algorithm confusion) */
#define VEC_HS512                                                                                   \
	"eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9.eyJleHAiOjQxMDI0NDQ4MDAsImZpZCI6IjMsMDE2MzcwMzdkNiJ9." \
	"ysY6Rk5eMGUSMSQSDK23iFe8f2IQaJQqmg_Q4K0Qwo8"
/* header without typ, exp a fraction */
#define VEC_NOTYP                                                                    \
	"eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjQxMDI0NDQ4MDAuNSwiZmlkIjoiMywwMTYzNzAzN2Q2In0." \
	"Y2J_geyCcbFsVnroNgsFjgDDKcfmdeaBGF2C3aaEWws"
/* signed, but no exp */
#define VEC_NOEXP                                                                    \
	"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJmaWQiOiIzLDAxNjM3MDM3ZDYifQ." \
	"BWRp3P0WUVmH4uz-eD-ISrxUWXSgPxmQ5bbBZrtIPCQ"

static enum jwt_status v(const char *t, const char *fid, int64_t now)
{
	return jwt_verify(KEY, strlen(KEY), t, strlen(t), fid, now);
}

static void test_base64url(void)
{
	static const struct {
		const char *raw, *enc;
	} vec[] = {{"", ""}, {"f", "Zg"}, {"fo", "Zm8"}, {"foo", "Zm9v"}, {"\xfb\xff", "-_8"},
		   {"\xff\xfe\xfd\xfc", "__79_A"}};
	for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		buf b = {0};
		uint8_t *d;
		size_t n;
		base64url_encode(vec[i].raw, strlen(vec[i].raw), &b);
		is_str(b.len ? b.data : "", vec[i].enc, "base64url encode");
		ok(base64url_decode(vec[i].enc, strlen(vec[i].enc), 64, &d, &n) &&
			   n == strlen(vec[i].raw) && !memcmp(d, vec[i].raw, n),
		   "base64url decode %s", vec[i].enc);
		free(d);
		buf_free(&b);
	}
	uint8_t *d;
	size_t n;
	ok(!base64url_decode("Zg==", 4, 64, &d, &n), "padding refused");
	ok(!base64url_decode("Zm+v", 4, 64, &d, &n), "standard alphabet refused");
	ok(!base64url_decode("Z", 1, 64, &d, &n), "a lone digit refused");
	ok(!base64url_decode("Zh", 2, 64, &d, &n), "non-zero unused bits refused");
	ok(!base64url_decode("Zm9vYmFy", 8, 5, &d, &n), "over the limit refused");
	ok(!d && !n, "a refusal leaves nothing");
}

static void test_vectors(void)
{
	buf b = {0};

	jwt_sign(KEY, strlen(KEY), FUTURE, "3,01637037d6", &b);
	is_str(b.data, VEC_FID, "sign matches the python vector (fid)");
	buf_reset(&b);
	jwt_sign(KEY, strlen(KEY), FUTURE, NULL, &b);
	is_str(b.data, VEC_NOFID, "sign matches the python vector (no fid)");
	buf_free(&b);

	is_int(v(VEC_FID, "3,01637037d6", NOW), JWT_OK, "valid token for its fid");
	is_int(v(VEC_FID, "3,01637037d6_2", NOW), JWT_OK, "a batch id _N uses its base fid's token");
	is_int(v(VEC_FID, NULL, NOW), JWT_OK, "no fid asked: fine");
	is_int(v(VEC_FID, "3,01637037d7", NOW), JWT_WRONG_FID, "another fid refused");
	is_int(v(VEC_FID, "3,01637037d", NOW), JWT_WRONG_FID, "a prefix of the fid refused");
	is_int(v(VEC_FID, "13,01637037d6", NOW), JWT_WRONG_FID, "another volume refused");
	is_int(v(VEC_NOFID, "3,01637037d6", NOW), JWT_WRONG_FID, "a filer token is no volume token");
	is_int(v(VEC_NOFID, NULL, NOW), JWT_OK, "filer token");
	is_int(v(VEC_FID, "3,01637037d6", FUTURE), JWT_EXPIRED, "expired at exp");
	is_int(v(VEC_NOTYP, "3,01637037d6", NOW), JWT_OK, "typ optional, fractional exp");
	is_int(v(VEC_NONE, "3,01637037d6", NOW), JWT_BAD_ALG, "alg none refused");
	is_int(v(VEC_HS512, "3,01637037d6", NOW), JWT_BAD_ALG, "alg HS512 refused");
	is_int(v(VEC_NOEXP, "3,01637037d6", NOW), JWT_MALFORMED, "no exp refused");
	is_int(jwt_verify("other", 5, VEC_FID, strlen(VEC_FID), NULL, NOW), JWT_BAD_SIG,
	       "another key refused");
}

static void test_tampering(void)
{
	char t[sizeof(VEC_FID) + 8];
	size_t n = strlen(VEC_FID);

	/* flipping any one character breaks the token */
	int bad = 0;
	for (size_t i = 0; i < n; i++) {
		strcpy(t, VEC_FID);
		if (t[i] == '.')
			continue;
		t[i] = t[i] == 'A' ? 'B' : 'A';
		if (v(t, "3,01637037d6", NOW) == JWT_OK)
			bad++;
	}
	is_int(bad, 0, "every one-character change refused");
	is_int(v("", NULL, NOW), JWT_MISSING, "empty");
	is_int(jwt_verify(KEY, 3, NULL, 0, NULL, NOW), JWT_MISSING, "none");
	is_int(v("a.b", NULL, NOW), JWT_MALFORMED, "two parts");
	is_int(v(VEC_FID ".x", NULL, NOW), JWT_MALFORMED, "four parts");
	is_int(v("..", NULL, NOW), JWT_MALFORMED, "empty parts");
	strcpy(t, VEC_FID);
	t[n - 1] = '\0';
	is_int(v(t, NULL, NOW), JWT_BAD_SIG, "short signature");
	/* header [] is JSON but no object */
	is_int(v("W10.eyJleHAiOjQxMDI0NDQ4MDB9.XUVGUwIBQWQDMV6OQkcv0ouE308udKzooFDeSRKLSic", NULL, NOW),
	       JWT_MALFORMED, "header not an object");
	char *big = malloc(JWT_MAX + 2);
	memset(big, 'A', JWT_MAX + 1);
	big[JWT_MAX + 1] = '\0';
	big[10] = big[20] = '.';
	is_int(v(big, NULL, NOW), JWT_MALFORMED, "too long");
	free(big);
}

static void test_mint(void)
{
	struct security_key off = {0}, k = {.key = (char *)KEY, .key_len = strlen(KEY),
					    .expires_after_sec = 10};
	char t[JWT_MAX], t2[JWT_MAX];

	ok(!jwt_mint(&off, "3,01", t), "no key: no token");
	ok(!jwt_cached(&off, t), "no key: no cached token");
	ok(jwt_mint(&k, "3,01", t), "mint");
	is_int(v(t, "3,01", jwt_now()), JWT_OK, "a minted token verifies");
	is_int(v(t, "3,01", jwt_now() + 11), JWT_EXPIRED, "and expires after its life");
	ok(jwt_cached(&k, t) && jwt_cached(&k, t2), "cached");
	is_str(t2, t, "the cache gives the same token again");
	is_int(v(t, NULL, jwt_now()), JWT_OK, "a cached token verifies");
}

int main(void)
{
	test_base64url();
	test_vectors();
	test_tampering();
	test_mint();
	return done_testing();
}
