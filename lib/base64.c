#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "base64.h"
#include "util.h"

static const char b64_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url_digits[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Both alphabets: url-safe ones leave the padding out. */
static void encode_with(const char *digits, bool pad, const void *p, size_t n, buf *out)
{
	const uint8_t *s = p;
	char *q;
	size_t i;
	buf_reserve(out, (n + 2) / 3 * 4 + 1);
	q = out->data + out->len; /* written in place: reserved above */
	for (i = 0; i + 3 <= n; i += 3, q += 4) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		q[0] = digits[v >> 18];
		q[1] = digits[v >> 12 & 63];
		q[2] = digits[v >> 6 & 63];
		q[3] = digits[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0);
		*q++ = digits[v >> 18];
		*q++ = digits[v >> 12 & 63];
		if (i + 1 < n)
			*q++ = digits[v >> 6 & 63];
		else if (pad)
			*q++ = '=';
		if (pad)
			*q++ = '=';
	}
	out->len = (size_t)(q - out->data);
	out->data[out->len] = '\0';
}

void base64_encode(const void *p, size_t n, buf *out) { encode_with(b64_digits, true, p, n, out); }

void base64url_encode(const void *p, size_t n, buf *out)
{
	encode_with(b64url_digits, false, p, n, out);
}

/* The 6-bit value of each base64 digit, -1 for other bytes (a table: entries carry KiBs). */
static signed char b64_table[256], b64url_table[256];
static pthread_once_t b64_once = PTHREAD_ONCE_INIT;

static void b64_table_init(void)
{
	memset(b64_table, -1, sizeof(b64_table));
	memset(b64url_table, -1, sizeof(b64url_table));
	for (int i = 0; i < 64; i++) {
		b64_table[(unsigned char)b64_digits[i]] = (signed char)i;
		b64url_table[(unsigned char)b64url_digits[i]] = (signed char)i;
	}
}

bool base64_decode(const char *s, size_t max, uint8_t **out, size_t *outlen)
{
	size_t n = strlen(s), o = 0;
	uint8_t *p;

	pthread_once(&b64_once, b64_table_init);
	*out = NULL;
	*outlen = 0;
	if (n % 4 || n / 4 * 3 > max + 2)
		return false;
	p = xmalloc(n / 4 * 3 + 1);
	/* every group but the last has no padding */
	for (size_t i = 0; i + 4 < n; i += 4) {
		const unsigned char *q = (const unsigned char *)s + i;
		int a = b64_table[q[0]], b = b64_table[q[1]], c = b64_table[q[2]],
		    d = b64_table[q[3]];
		if ((a | b | c | d) < 0)
			goto bad;
		p[o++] = (uint8_t)(a << 2 | b >> 4);
		p[o++] = (uint8_t)(b << 4 | c >> 2);
		p[o++] = (uint8_t)(c << 6 | d);
	}
	for (size_t i = n >= 4 ? n - 4 : n; i < n; i += 4) {
		int v[4];
		int pad = 0;
		for (int k = 0; k < 4; k++) {
			if (s[i + k] == '=' && i + 4 == n && k >= 2) {
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad) /* data after padding */
				goto bad;
			v[k] = b64_table[(unsigned char)s[i + k]];
			if (v[k] < 0)
				goto bad;
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
			     (uint32_t)v[3];
		p[o++] = (uint8_t)(w >> 16);
		if (pad < 2)
			p[o++] = (uint8_t)(w >> 8);
		if (pad < 1)
			p[o++] = (uint8_t)w;
	}
	if (o > max)
		goto bad;
	*out = p;
	*outlen = o;
	return true;
bad:
	free(p);
	return false;
}

bool base64url_decode(const char *s, size_t n, size_t max, uint8_t **out, size_t *outlen)
{
	size_t o = 0, i;
	uint32_t acc = 0;
	int bits = 0;
	uint8_t *p;

	pthread_once(&b64_once, b64_table_init);
	*out = NULL;
	*outlen = 0;
	/* a lone trailing digit carries fewer than 8 bits: never an encoding */
	if (n % 4 == 1 || n / 4 * 3 + n % 4 > max + 2)
		return false;
	p = xmalloc(n / 4 * 3 + 3);
	for (i = 0; i < n; i++) {
		int v = b64url_table[(unsigned char)s[i]];
		if (v < 0)
			goto bad;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			p[o++] = (uint8_t)(acc >> bits);
		}
	}
	/* the unused low bits of the last digit are zero in a canonical encoding */
	if ((acc & ((1u << bits) - 1)) || o > max)
		goto bad;
	*out = p;
	*outlen = o;
	return true;
bad:
	free(p);
	return false;
}
