/* Catalog bearer tokens: see catalog_token.h. */
#include "config.h"
#include "catalog/catalog_token.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>
#include "lib/util.h"

#define CT_PREFIX "wfsc1."

/* The MAC of text[0..len) in hex (64 characters and a NUL). */
static void mac_hex(const uint8_t key[CT_KEY_LEN], const char *text, size_t len, char out[65])
{
	unsigned char mac[32];
	unsigned int n = sizeof(mac);
	HMAC(EVP_sha256(), key, CT_KEY_LEN, (const unsigned char *)text, len, mac, &n);
	hex_encode(mac, sizeof(mac), out);
	out[64] = '\0';
}

bool ct_issue(const uint8_t key[CT_KEY_LEN], const char *identity, int64_t expiry,
	      char out[CT_TOKEN_MAX])
{
	size_t n = strlen(identity), len;
	char mac[65];

	if (!n || n > CT_NAME_MAX || expiry < 0)
		return false;
	len = (size_t)snprintf(out, CT_TOKEN_MAX, CT_PREFIX "%" PRId64 ".", expiry);
	hex_encode(identity, n, out + len);
	len += 2 * n;
	mac_hex(key, out, len, mac);
	snprintf(out + len, CT_TOKEN_MAX - len, ".%s", mac);
	return true;
}

enum ct_status ct_verify(const uint8_t key[CT_KEY_LEN], const char *token, int64_t now,
			 char identity[CT_NAME_MAX + 1])
{
	const char *p, *dot1, *dot2;
	char num[24], mac[65];
	size_t hexlen;
	int64_t expiry;

	if (strncmp(token, CT_PREFIX, strlen(CT_PREFIX)))
		return CT_MALFORMED;
	p = token + strlen(CT_PREFIX);
	dot1 = strchr(p, '.');
	dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	if (!dot2 || dot1 == p || (size_t)(dot1 - p) >= sizeof(num) || strlen(dot2 + 1) != 64)
		return CT_MALFORMED;
	hexlen = (size_t)(dot2 - dot1 - 1);
	if (!hexlen || hexlen % 2 || hexlen > 2 * CT_NAME_MAX)
		return CT_MALFORMED;
	memcpy(num, p, (size_t)(dot1 - p));
	num[dot1 - p] = '\0';
	if (strspn(num, "0123456789") != strlen(num) || !parse_i64(num, &expiry))
		return CT_MALFORMED;
	for (size_t i = 0; i < hexlen; i += 2) {
		int hi = hex_digit_value((unsigned char)dot1[1 + i]);
		int lo = hex_digit_value((unsigned char)dot1[2 + i]);
		if (hi < 0 || lo < 0)
			return CT_MALFORMED;
		identity[i / 2] = (char)(hi << 4 | lo);
	}
	identity[hexlen / 2] = '\0';
	if (strlen(identity) != hexlen / 2)
		return CT_MALFORMED; /* a NUL in the name */
	mac_hex(key, token, (size_t)(dot2 - token), mac);
	if (CRYPTO_memcmp(mac, dot2 + 1, 64))
		return CT_BAD_MAC;
	return now < expiry ? CT_VALID : CT_EXPIRED;
}
