/*
 * S3 checksums (s3/checksum.h) and the aws-chunked decoder (s3/aws_chunked.h).
 *
 * Checksums: the "123456789" check values of the CRC catalogue, FIPS 180
 * vectors for SHA-1 and SHA-256, the CRC32C AWS's trailer example carries,
 * names, header names and base64 forms; CRC combination (crc(A||B) from
 * crc(A), crc(B) and |B|) at every split, and base64 decoding.
 *
 * Decoder: AWS's 65 KiB chunked-upload examples (plain and with a signed
 * trailer), with a real SigV4 chunk-signature chain built here from the
 * documented keys (the gateway's own sigv4 module is not used), every mode,
 * every split of the input, each malformed form, checksum and length
 * mismatches, and truncation at every position.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "buf.h"
#include "s3/aws_chunked.h"
#include "s3/checksum.h"
#include "tap.h"
#include "util.h"

static void to_hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
	out[2 * n] = '\0';
}

static void sha256_hex(const void *p, size_t n, char out[65])
{
	uint8_t h[32];
	EVP_Digest(p, n, h, NULL, EVP_sha256(), NULL);
	to_hex(h, 32, out);
}

/* ---- checksums ---- */

static void digest_hex(enum s3_cksum a, const void *p, size_t n, char *out)
{
	struct s3_cksum_ctx c;
	uint8_t d[S3_CKSUM_DIGEST_MAX];
	size_t len;
	s3_cksum_init(&c, a);
	s3_cksum_update(&c, p, n);
	len = s3_cksum_final(&c, d);
	to_hex(d, len, out);
}

/* Bit at a time, straight from the definition: the reference for the tables. */
static uint64_t crc64nvme_bitwise(const uint8_t *p, size_t n)
{
	uint64_t crc = ~0ULL;
	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ ((crc & 1) ? 0x9a6c9329ac4bc9b5ULL : 0);
	}
	return ~crc;
}

static void test_check_values(void)
{
	const char *s = "123456789";
	char hex[2 * S3_CKSUM_DIGEST_MAX + 1], b64[S3_CKSUM_B64_SIZE];

	/* the catalogue's check values, and the bytes S3 base64-encodes (big-endian) */
	digest_hex(S3_CKSUM_CRC32, s, 9, hex);
	is_str(hex, "cbf43926", "CRC32 check value");
	digest_hex(S3_CKSUM_CRC32C, s, 9, hex);
	is_str(hex, "e3069283", "CRC32C check value (isa-l's crc32_iscsi with the inversions)");
	digest_hex(S3_CKSUM_CRC64NVME, s, 9, hex);
	is_str(hex, "ae8b14860a799888", "CRC64NVME check value");
	ok(crc64nvme_update(0, s, 9) == 0xae8b14860a799888ULL, "crc64nvme_update check value");
	ok(crc64nvme_update(0, "", 0) == 0, "CRC64NVME of nothing is 0");
	s3_cksum_b64(S3_CKSUM_CRC32, s, 9, b64);
	is_str(b64, "y/Q5Jg==", "CRC32 base64");
	s3_cksum_b64(S3_CKSUM_CRC32C, s, 9, b64);
	is_str(b64, "4waSgw==", "CRC32C base64");
	s3_cksum_b64(S3_CKSUM_CRC64NVME, s, 9, b64);
	is_str(b64, "rosUhgp5mIg=", "CRC64NVME base64");
	s3_cksum_b64(S3_CKSUM_CRC32, "", 0, b64);
	is_str(b64, "AAAAAA==", "CRC32 of nothing");

	/* FIPS 180-2 appendix vectors */
	digest_hex(S3_CKSUM_SHA1, "abc", 3, hex);
	is_str(hex, "a9993e364706816aba3e25717850c26c9cd0d89d", "SHA1 abc");
	digest_hex(S3_CKSUM_SHA1, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
		   hex);
	is_str(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1", "SHA1 448-bit message");
	digest_hex(S3_CKSUM_SHA256, "abc", 3, hex);
	is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	       "SHA256 abc");
	digest_hex(S3_CKSUM_SHA256, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
		   hex);
	is_str(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
	       "SHA256 448-bit message");
	digest_hex(S3_CKSUM_SHA256, "", 0, hex);
	is_str(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	       "SHA256 of nothing");
	{
		/* one million 'a', fed in uneven pieces */
		struct s3_cksum_ctx c1, c256;
		char piece[997];
		size_t left = 1000000;
		uint8_t d[S3_CKSUM_DIGEST_MAX];
		memset(piece, 'a', sizeof(piece));
		s3_cksum_init(&c1, S3_CKSUM_SHA1);
		s3_cksum_init(&c256, S3_CKSUM_SHA256);
		while (left) {
			size_t n = MIN(left, sizeof(piece));
			s3_cksum_update(&c1, piece, n);
			s3_cksum_update(&c256, piece, n);
			left -= n;
		}
		is_int(s3_cksum_final(&c1, d), 20, "SHA1 digest length");
		to_hex(d, 20, hex);
		is_str(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f", "SHA1 million a");
		is_int(s3_cksum_final(&c256, d), 32, "SHA256 digest length");
		to_hex(d, 32, hex);
		is_str(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
		       "SHA256 million a");
	}
	{
		/* the CRC32C value in AWS's trailer example: 66560 bytes of 'a' */
		char *a = xmalloc(66560);
		memset(a, 'a', 66560);
		s3_cksum_b64(S3_CKSUM_CRC32C, a, 66560, b64);
		is_str(b64, "sOO8/Q==", "CRC32C of AWS's 65 KiB example is sOO8/Q==");
		free(a);
	}
}

static void test_incremental(void)
{
	uint8_t data[300];
	size_t bad = 0;
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof(data); i++) {
		x = x * 1103515245 + 12345;
		data[i] = (uint8_t)(x >> 16);
	}
	for (int a = S3_CKSUM_CRC32; a < S3_CKSUM_COUNT; a++) {
		char one[S3_CKSUM_B64_SIZE], two[S3_CKSUM_B64_SIZE];
		s3_cksum_b64((enum s3_cksum)a, data, sizeof(data), one);
		for (size_t cut = 0; cut <= sizeof(data); cut += 7) {
			struct s3_cksum_ctx c;
			s3_cksum_init(&c, (enum s3_cksum)a);
			s3_cksum_update(&c, data, cut);
			s3_cksum_update(&c, NULL, 0);
			s3_cksum_update(&c, data + cut, sizeof(data) - cut);
			s3_cksum_final_b64(&c, two);
			if (strcmp(one, two))
				bad++;
		}
	}
	is_int(bad, 0, "every algorithm: split updates equal one update");

	/* the slice-by-8 tables against the bitwise definition, every length and alignment */
	bad = 0;
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n + off <= sizeof(data); n += 3)
			if (crc64nvme_update(0, data + off, n) != crc64nvme_bitwise(data + off, n))
				bad++;
	is_int(bad, 0, "CRC64NVME tables equal the bitwise definition");
	bad = 0;
	for (size_t cut = 0; cut <= sizeof(data); cut++)
		if (crc64nvme_update(crc64nvme_update(0, data, cut), data + cut,
				     sizeof(data) - cut) != crc64nvme_bitwise(data, sizeof(data)))
			bad++;
	is_int(bad, 0, "crc64nvme_update chains at every cut");
}

/* A CRC's value as s3_cksum computes it. */
static uint64_t crc_of(enum s3_cksum a, const void *p, size_t n)
{
	struct s3_cksum_ctx c;
	uint8_t d[S3_CKSUM_DIGEST_MAX];
	s3_cksum_init(&c, a);
	s3_cksum_update(&c, p, n);
	s3_cksum_final(&c, d);
	return s3_crc_from_digest(a, d);
}

static void test_crc_combine(void)
{
	static const enum s3_cksum crcs[] = {S3_CKSUM_CRC32, S3_CKSUM_CRC32C, S3_CKSUM_CRC64NVME};
	size_t n = 3001, zn = (1u << 20) + 7;
	uint8_t *data = xmalloc(n), *zeros = xcalloc(1, zn), d[S3_CKSUM_DIGEST_MAX];
	uint32_t x = 777;
	char b64[S3_CKSUM_B64_SIZE];

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245 + 12345;
		data[i] = (uint8_t)(x >> 16);
	}
	for (size_t k = 0; k < ARRAY_LEN(crcs); k++) {
		enum s3_cksum a = crcs[k];
		const char *name = s3_cksum_name(a);
		uint64_t whole = crc_of(a, data, n), c1, c2, c3, big1, big2, l1, l2;
		size_t bad = 0, bad3 = 0;

		ok(s3_cksum_is_crc(a), "%s is a CRC", name);
		/* every split into two */
		for (size_t cut = 0; cut <= n; cut++)
			if (s3_crc_combine(a, crc_of(a, data, cut), crc_of(a, data + cut, n - cut),
					   n - cut) != whole)
				bad++;
		ok(!bad, "%s: combine(crc(a), crc(b), len(b)) == crc(a||b) at every cut", name);
		/* three pieces, combined left to right and right to left */
		for (size_t i = 0; i <= n; i += 97)
			for (size_t j = i; j <= n; j += 131) {
				c1 = crc_of(a, data, i);
				c2 = crc_of(a, data + i, j - i);
				c3 = crc_of(a, data + j, n - j);
				if (s3_crc_combine(a, s3_crc_combine(a, c1, c2, j - i), c3,
						   n - j) != whole ||
				    s3_crc_combine(a, c1, s3_crc_combine(a, c2, c3, n - j),
						   n - i) != whole)
					bad3++;
			}
		ok(!bad3, "%s: three pieces combine either way round", name);
		/* a long second piece (5 MiB parts are the usual case) */
		{
			uint8_t *both = xmalloc(n + zn);
			memcpy(both, data, n);
			memcpy(both + n, zeros, zn);
			ok(s3_crc_combine(a, whole, crc_of(a, zeros, zn), zn) ==
				   crc_of(a, both, n + zn),
			   "%s: a 1 MiB + 7 second piece", name);
			free(both);
		}
		ok(s3_crc_combine(a, whole, crc_of(a, "", 0), 0) == whole,
		   "%s: an empty second piece changes nothing", name);
		ok(s3_crc_combine(a, crc_of(a, "", 0), whole, n) == whole,
		   "%s: an empty first piece changes nothing", name);
		/* lengths far past any buffer: crc(A||B||C) either way round */
		l1 = (1ULL << 40) + 12345;
		l2 = (1ULL << 62) + 999;
		big1 = s3_crc_combine(a, s3_crc_combine(a, whole, c1 = crc_of(a, data, 17), l1),
				      c2 = crc_of(a, data + 17, 33), l2);
		big2 = s3_crc_combine(a, whole, s3_crc_combine(a, c1, c2, l2), l1 + l2);
		ok(big1 == big2, "%s: combines of 2^40- and 2^62-byte lengths associate", name);
		if (a != S3_CKSUM_CRC64NVME)
			ok(whole <= 0xffffffffu && big1 <= 0xffffffffu, "%s: values stay 32-bit",
			   name);
		/* digests and back */
		s3_crc_to_digest(a, whole, d);
		s3_cksum_digest_b64(a, d, b64);
		{
			char want[S3_CKSUM_B64_SIZE];
			s3_cksum_b64(a, data, n, want);
			ok(!strcmp(b64, want), "%s: value -> digest -> base64 is the checksum",
			   name);
		}
		memset(d, 0, sizeof(d));
		ok(s3_cksum_b64_decode(a, b64, d) == s3_cksum_digest_len(a) &&
			   s3_crc_from_digest(a, d) == whole,
		   "%s: base64 decodes to the CRC", name);
	}
	ok(!s3_cksum_is_crc(S3_CKSUM_SHA1) && !s3_cksum_is_crc(S3_CKSUM_SHA256) &&
		   !s3_cksum_is_crc(S3_CKSUM_NONE),
	   "SHA1, SHA256 and NONE are not CRCs");
	/* zlib's own crc32_combine on a known pair: "1234" + "56789" */
	ok(s3_crc_combine(S3_CKSUM_CRC32, crc_of(S3_CKSUM_CRC32, "1234", 4),
			  crc_of(S3_CKSUM_CRC32, "56789", 5), 5) == 0xcbf43926u,
	   "CRC32 of \"1234\" combined with \"56789\" is the check value");
	ok(s3_crc_combine(S3_CKSUM_CRC64NVME, crc_of(S3_CKSUM_CRC64NVME, "12345678", 8),
			  crc_of(S3_CKSUM_CRC64NVME, "9", 1), 1) == 0xae8b14860a799888ULL,
	   "CRC64NVME of \"12345678\" combined with \"9\" is the check value");
	is_int(s3_cksum_b64_decode(S3_CKSUM_SHA256,
				   "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=", d),
	       32, "SHA256 base64 decodes to 32 bytes");
	ok(d[0] == 0xba && d[31] == 0xad, "SHA256 of abc decoded");
	is_int(s3_cksum_b64_decode(S3_CKSUM_CRC32, "y/Q5Jg=", d), 0, "malformed base64: 0");
	is_int(s3_cksum_b64_decode(S3_CKSUM_CRC32, "rosUhgp5mIg=", d), 0,
	       "another algorithm's length: 0");
	is_int(s3_cksum_b64_decode(S3_CKSUM_CRC32, NULL, d), 0, "NULL: 0");
	free(data);
	free(zeros);
}

static void test_names(void)
{
	static const struct {
		enum s3_cksum a;
		const char *name, *header;
		size_t dl, bl;
	} t[] = {
		{S3_CKSUM_CRC32, "CRC32", "x-amz-checksum-crc32", 4, 8},
		{S3_CKSUM_CRC32C, "CRC32C", "x-amz-checksum-crc32c", 4, 8},
		{S3_CKSUM_CRC64NVME, "CRC64NVME", "x-amz-checksum-crc64nvme", 8, 12},
		{S3_CKSUM_SHA1, "SHA1", "x-amz-checksum-sha1", 20, 28},
		{S3_CKSUM_SHA256, "SHA256", "x-amz-checksum-sha256", 32, 44},
	};
	size_t bad = 0;
	for (size_t i = 0; i < ARRAY_LEN(t); i++) {
		if (strcmp(s3_cksum_name(t[i].a), t[i].name) ||
		    strcmp(s3_cksum_header(t[i].a), t[i].header) ||
		    s3_cksum_from_name(t[i].name) != t[i].a ||
		    s3_cksum_from_header(t[i].header) != t[i].a ||
		    s3_cksum_digest_len(t[i].a) != t[i].dl || s3_cksum_b64_len(t[i].a) != t[i].bl)
			bad++;
	}
	is_int(bad, 0, "names, header names and lengths of the five algorithms");
	is_int(s3_cksum_from_name("crc64nvme"), S3_CKSUM_CRC64NVME, "name: any case");
	is_int(s3_cksum_from_name("Sha256"), S3_CKSUM_SHA256, "name: mixed case");
	is_int(s3_cksum_from_name("SHA-256"), S3_CKSUM_NONE, "name: SHA-256 is not S3's spelling");
	is_int(s3_cksum_from_name("CRC"), S3_CKSUM_NONE, "name: prefix refused");
	is_int(s3_cksum_from_name("CRC32 "), S3_CKSUM_NONE, "name: trailing space refused");
	is_int(s3_cksum_from_name("MD5"), S3_CKSUM_NONE, "name: MD5 is no additional checksum");
	is_int(s3_cksum_from_name(""), S3_CKSUM_NONE, "name: empty");
	is_int(s3_cksum_from_name(NULL), S3_CKSUM_NONE, "name: NULL");
	is_int(s3_cksum_from_header("X-Amz-Checksum-CRC32C"), S3_CKSUM_CRC32C, "header: any case");
	is_int(s3_cksum_from_header("x-amz-checksum-md5"), S3_CKSUM_NONE, "header: unknown");
	is_int(s3_cksum_from_header("x-amz-checksum-"), S3_CKSUM_NONE, "header: no algorithm");
	is_int(s3_cksum_from_header("CRC32"), S3_CKSUM_NONE, "header: a bare name is not a header");
	is_int(s3_cksum_from_header(NULL), S3_CKSUM_NONE, "header: NULL");
	ok(!s3_cksum_name(S3_CKSUM_NONE) && !s3_cksum_header(S3_CKSUM_NONE) &&
		   !s3_cksum_digest_len(S3_CKSUM_NONE) && !s3_cksum_b64_len(S3_CKSUM_NONE),
	   "NONE has no name, header or length");
	ok(!s3_cksum_name((enum s3_cksum)99) && !s3_cksum_header(S3_CKSUM_COUNT) &&
		   !s3_cksum_digest_len(S3_CKSUM_COUNT),
	   "out-of-range values have none either");
}

static void test_b64_valid(void)
{
	static const struct {
		enum s3_cksum a;
		const char *v;
		bool want;
	} t[] = {
		{S3_CKSUM_CRC32, "y/Q5Jg==", true},
		{S3_CKSUM_CRC32, "y/Q5Jg=", false},
		{S3_CKSUM_CRC32, "y/Q5Jg===", false},
		{S3_CKSUM_CRC32, "y/Q5Jgg=", false},
		{S3_CKSUM_CRC32, "y/Q5J===", false},
		{S3_CKSUM_CRC32, "y-Q5Jg==", false},
		{S3_CKSUM_CRC32, "y/Q5Jg= ", false},
		{S3_CKSUM_CRC32C, "sOO8/Q==", true},
		{S3_CKSUM_CRC64NVME, "rosUhgp5mIg=", true},
		{S3_CKSUM_CRC64NVME, "rosUhgp5mI==", false},
		{S3_CKSUM_CRC64NVME, "y/Q5Jg==", false},
		{S3_CKSUM_SHA1, "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=", true},
		{S3_CKSUM_SHA1, "qZk+NkcGgWq6PiVxeFDCbJzQ2J0", false},
		{S3_CKSUM_SHA256, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=", true},
		{S3_CKSUM_SHA256, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0A", false},
		{S3_CKSUM_NONE, "", false},
	};
	char b64[S3_CKSUM_B64_SIZE];
	for (size_t i = 0; i < ARRAY_LEN(t); i++)
		is_int(s3_cksum_b64_valid(t[i].a, t[i].v, strlen(t[i].v)), t[i].want, t[i].v);
	/* the SHA values above are "abc"'s: they are the real thing */
	s3_cksum_b64(S3_CKSUM_SHA1, "abc", 3, b64);
	is_str(b64, "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=", "SHA1 abc base64");
	s3_cksum_b64(S3_CKSUM_SHA256, "abc", 3, b64);
	is_str(b64, "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=", "SHA256 abc base64");
	{
		struct s3_cksum_ctx c;
		memset(&c, 0, sizeof(c));
		s3_cksum_clear(&c);
		s3_cksum_init(&c, S3_CKSUM_SHA256);
		s3_cksum_update(&c, "x", 1);
		s3_cksum_clear(&c);
		s3_cksum_clear(&c);
		ok(c.md == NULL && c.alg == S3_CKSUM_NONE, "clear releases, and twice is harmless");
	}
}

/* ---- decoder harness ---- */

/* A SigV4 chunk-signature chain (AWS's "seed", then one signature per chunk, then the trailer). */
struct signer {
	uint8_t key[32];
	const char *stamp, *scope;
	char prev[65];
	char hashes[4][65]; /* the chunk hashes seen, for comparison with the doc */
	int chunks, trailers;
	char trailer_hash[65];
};

static void hmac(const uint8_t *key, size_t kl, const char *msg, uint8_t out[32])
{
	unsigned int n = 32;
	HMAC(EVP_sha256(), key, (int)kl, (const unsigned char *)msg, strlen(msg), out, &n);
}

static void signer_init(struct signer *s, const char *seed)
{
	const char *secret = "AWS4wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
	memset(s, 0, sizeof(*s));
	hmac((const uint8_t *)secret, strlen(secret), "20130524", s->key);
	hmac(s->key, 32, "us-east-1", s->key);
	hmac(s->key, 32, "s3", s->key);
	hmac(s->key, 32, "aws4_request", s->key);
	s->stamp = "20130524T000000Z";
	s->scope = "20130524/us-east-1/s3/aws4_request";
	strcpy(s->prev, seed);
}

static bool signer_check(struct signer *s, const char *sts, const char *sig)
{
	uint8_t mac[32];
	char hex[65];
	hmac(s->key, 32, sts, mac);
	to_hex(mac, 32, hex);
	if (strcmp(hex, sig))
		return false;
	strcpy(s->prev, sig);
	return true;
}

static bool sigv4_chunk(void *ctx, const uint8_t sha256[32], const char *sig)
{
	struct signer *s = ctx;
	char h[65], *sts;
	bool good;
	to_hex(sha256, 32, h);
	if (s->chunks < 4)
		strcpy(s->hashes[s->chunks], h);
	s->chunks++;
	sts = xasprintf("AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n%s\n%s", s->stamp, s->scope, s->prev,
			"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", h);
	good = signer_check(s, sts, sig);
	free(sts);
	return good;
}

static bool sigv4_trailer(void *ctx, const uint8_t sha256[32], const char *sig)
{
	struct signer *s = ctx;
	char *sts;
	bool good;
	to_hex(sha256, 32, s->trailer_hash);
	s->trailers++;
	sts = xasprintf("AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n%s\n%s", s->stamp, s->scope, s->prev,
			s->trailer_hash);
	good = signer_check(s, sts, sig);
	free(sts);
	return good;
}

/*
 * A stand-in for the signature chain in the other tests: a chunk's
 * "signature" is the hex SHA-256 of its data, the trailer's that of the
 * canonical trailer text. Counts calls.
 */
static int fake_chunk_calls, fake_trailer_calls;

static bool fake_chunk(void *ctx, const uint8_t sha256[32], const char *sig)
{
	char h[65];
	to_hex(sha256, 32, h);
	fake_chunk_calls++;
	return !strcmp(h, sig);
}

static bool fake_trailer(void *ctx, const uint8_t sha256[32], const char *sig)
{
	char h[65];
	to_hex(sha256, 32, h);
	fake_trailer_calls++;
	return !strcmp(h, sig);
}

/* Collects the payload; fails with fail_with once more than fail_after bytes came. */
struct sink {
	buf out;
	size_t calls, max_piece;
	size_t fail_after;
	enum s3_err fail_with;
};

static enum s3_err sink_out(void *ctx, const char *data, size_t len)
{
	struct sink *k = ctx;
	k->calls++;
	k->max_piece = MAX(k->max_piece, len);
	if (k->out.len + len > k->fail_after)
		return k->fail_with;
	buf_append(&k->out, data, len);
	return S3_OK;
}

static void sink_init(struct sink *k)
{
	memset(k, 0, sizeof(*k));
	k->fail_after = SIZE_MAX;
}

enum mode { M_SIGNED, M_SIGNED_TRAILER, M_UNSIGNED_TRAILER };
static const char *const mode_names[] = {"signed", "signed+trailer", "unsigned+trailer"};

static struct aws_chunked_opts opts_for(enum mode m, enum s3_cksum alg, uint64_t decoded_length)
{
	struct aws_chunked_opts o;
	memset(&o, 0, sizeof(o));
	o.signed_chunks = m != M_UNSIGNED_TRAILER;
	o.trailer = m != M_SIGNED;
	o.trailer_signed = m == M_SIGNED_TRAILER;
	o.trailer_cksum = m == M_SIGNED ? S3_CKSUM_NONE : alg;
	o.decoded_length = decoded_length;
	o.verify_chunk = fake_chunk;
	o.verify_trailer = fake_trailer;
	return o;
}

/* Layout switches for enc(), for the malformed-body tests. */
struct layout {
	bool blank_before_trailer; /* AWS's example layout */
	bool no_closing;           /* no closing empty line */
	const char *extra_trailer; /* a line added before the signature, CRLF included */
	const char *cksum_value;   /* instead of the right one */
	const char *cksum_header;  /* instead of the right one */
};

/*
 * Encodes payload[0..len) in chunks of `chunk` bytes (the last shorter) as
 * mode m would, with fake signatures, and a checksum trailer of alg.
 */
static void enc(buf *b, enum mode m, enum s3_cksum alg, const char *payload, size_t len,
		size_t chunk, const struct layout *l)
{
	static const struct layout plain;
	char sig[65], value[S3_CKSUM_B64_SIZE];
	size_t off = 0;
	buf canon = BUF_INIT;
	if (!l)
		l = &plain;
	for (;;) {
		size_t n = MIN(chunk, len - off);
		buf_printf(b, "%zx", n);
		if (m != M_UNSIGNED_TRAILER) {
			sha256_hex(payload + off, n, sig);
			buf_printf(b, ";chunk-signature=%s", sig);
		}
		buf_append_str(b, "\r\n");
		if (!n)
			break;
		buf_append(b, payload + off, n);
		buf_append_str(b, "\r\n");
		off += n;
	}
	if (m != M_SIGNED) {
		if (l->blank_before_trailer)
			buf_append_str(b, "\r\n");
		if (alg != S3_CKSUM_NONE) {
			s3_cksum_b64(alg, payload, len, value);
			buf_printf(&canon, "%s:%s\n",
				   l->cksum_header ? l->cksum_header : s3_cksum_header(alg),
				   l->cksum_value ? l->cksum_value : value);
			buf_printf(b, "%s:%s\r\n",
				   l->cksum_header ? l->cksum_header : s3_cksum_header(alg),
				   l->cksum_value ? l->cksum_value : value);
		}
		if (l->extra_trailer)
			buf_append_str(b, l->extra_trailer);
		if (m == M_SIGNED_TRAILER) {
			sha256_hex(canon.data ? canon.data : "", canon.len, sig);
			buf_printf(b, "x-amz-trailer-signature:%s\r\n", sig);
		}
	}
	if (!l->no_closing)
		buf_append_str(b, "\r\n");
	buf_free(&canon);
}

struct result {
	enum s3_err feed, fin;
	buf out;
	uint64_t decoded;
	char cksum[S3_CKSUM_B64_SIZE];
};

/* Decodes body[0..len) fed in pieces of `step` bytes (0: one call); finish too. */
static void decode(const struct aws_chunked_opts *o, const char *body, size_t len, size_t step,
		   struct result *r)
{
	aws_chunked *d = aws_chunked_new(o);
	struct sink k;
	const char *c;
	sink_init(&k);
	r->feed = S3_OK;
	for (size_t off = 0; off < len && !r->feed;) {
		size_t n = step ? MIN(step, len - off) : len;
		r->feed = aws_chunked_feed(d, body + off, n, sink_out, &k);
		off += n;
	}
	r->fin = aws_chunked_finish(d);
	r->out = k.out;
	r->decoded = aws_chunked_decoded(d);
	c = aws_chunked_checksum(d);
	snprintf(r->cksum, sizeof(r->cksum), "%s", c ? c : "");
	aws_chunked_free(d);
}

static bool same_result(const struct result *a, const struct result *b)
{
	return a->feed == b->feed && a->fin == b->fin && a->out.len == b->out.len &&
	       (!a->out.len || !memcmp(a->out.data, b->out.data, a->out.len)) &&
	       a->decoded == b->decoded && !strcmp(a->cksum, b->cksum);
}

/* ---- AWS's examples ---- */

static char *doc_payload(void)
{
	char *a = xmalloc(66560);
	memset(a, 'a', 66560);
	return a;
}

/* The example body: 64 KiB and 1 KiB of 'a', the 0-size chunk, then tail. */
static void doc_body(buf *b, const char *payload, const char *const sigs[3], const char *tail)
{
	buf_printf(b, "10000;chunk-signature=%s\r\n", sigs[0]);
	buf_append(b, payload, 65536);
	buf_printf(b, "\r\n400;chunk-signature=%s\r\n", sigs[1]);
	buf_append(b, payload + 65536, 1024);
	buf_printf(b, "\r\n0;chunk-signature=%s\r\n%s", sigs[2], tail);
}

static void test_doc_example(void)
{
	/* "Example: PUT Object" of the chunked-upload page */
	static const char *const sigs[3] = {
		"ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
		"0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
		"b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
	};
	char *payload = doc_payload();
	buf b = BUF_INIT;
	struct signer s;
	struct aws_chunked_opts o;
	struct result one, bytes;

	doc_body(&b, payload, sigs, "\r\n");
	is_int(b.len, 66824, "the example body is the documented Content-Length, 66824");
	memset(&o, 0, sizeof(o));
	ok(aws_chunked_mode("STREAMING-AWS4-HMAC-SHA256-PAYLOAD", &o), "mode parsed");
	o.decoded_length = 66560;
	o.min_chunk = AWS_CHUNKED_MIN_CHUNK;
	o.verify_chunk = sigv4_chunk;
	o.ctx = &s;
	signer_init(&s, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
	decode(&o, b.data, b.len, 0, &one);
	is_int(one.feed, S3_OK, "example: feed");
	is_int(one.fin, S3_OK, "example: finish");
	ok(one.out.len == 66560 && !memcmp(one.out.data, payload, 66560),
	   "example: the 66560 bytes of 'a'");
	is_int(one.decoded, 66560, "example: decoded count");
	is_int(s.chunks, 3, "example: three chunk signatures checked (the 0-size chunk's too)");
	is_str(s.hashes[0], "bf718b6f653bebc184e1479f1935b8da974d701b893afcf49e701f3e2f9f9c5a",
	       "example: the first chunk's hash, as the doc's string to sign has it");
	is_str(s.hashes[1], "2edc986847e209b4016e141a6dc8716d3207350f416969382d431539bf292e4a",
	       "example: the second chunk's hash");
	is_str(s.hashes[2], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	       "example: the 0-size chunk's hash");
	is_str(s.prev, sigs[2], "example: the chain reached the final signature");

	signer_init(&s, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
	decode(&o, b.data, b.len, 1, &bytes);
	ok(same_result(&one, &bytes), "example: a byte at a time decodes the same");
	buf_free(&bytes.out);

	/* one wrong byte of data, or of a signature, breaks the chain */
	b.data[100] = 'b';
	signer_init(&s, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
	decode(&o, b.data, b.len, 0, &bytes);
	is_int(bytes.feed, S3_SIGNATURE_MISMATCH, "example: altered data is a signature mismatch");
	is_int(bytes.fin, S3_SIGNATURE_MISMATCH, "example: and finish says so too");
	buf_free(&bytes.out);
	b.data[100] = 'a';
	b.data[b.len - 10] ^= 1;
	signer_init(&s, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9");
	decode(&o, b.data, b.len, 0, &bytes);
	is_int(bytes.feed, S3_SIGNATURE_MISMATCH, "example: an altered last signature");
	buf_free(&bytes.out);
	signer_init(&s, "0000000000000000000000000000000000000000000000000000000000000000");
	b.data[b.len - 10] ^= 1;
	decode(&o, b.data, b.len, 0, &bytes);
	is_int(bytes.feed, S3_SIGNATURE_MISMATCH, "example: a wrong seed signature");
	ok(bytes.decoded == 65536 && s.chunks == 1, "example: it failed at the first chunk's end");
	buf_free(&bytes.out);
	buf_free(&one.out);
	buf_free(&b);
	free(payload);
}

static void test_doc_trailer_example(void)
{
	/* the trailing-header page's example: CRC32C in a signed trailer */
	static const char *const sigs[3] = {
		"b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2",
		"1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7",
		"2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992",
	};
	static const struct {
		const char *name, *tail;
	} layouts[] = {
		{"SDK layout",
		 "x-amz-checksum-crc32c:sOO8/Q==\r\n"
		 "x-amz-trailer-signature:"
		 "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n\r\n"},
		{"doc layout (empty line first, none last)",
		 "\r\nx-amz-checksum-crc32c:sOO8/Q==\r\n"
		 "x-amz-trailer-signature:"
		 "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n"},
		{"empty lines on both sides",
		 "\r\nX-Amz-Checksum-CRC32C: sOO8/Q==\r\n"
		 "x-amz-trailer-signature:"
		 "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n\r\n"},
	};
	char *payload = doc_payload();
	struct aws_chunked_opts o;
	struct signer s;

	memset(&o, 0, sizeof(o));
	ok(aws_chunked_mode("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", &o),
	   "trailer mode parsed");
	ok(o.signed_chunks && o.trailer && o.trailer_signed, "trailer mode flags");
	o.trailer_cksum = s3_cksum_from_header("x-amz-checksum-crc32c");
	o.decoded_length = 66560;
	o.verify_chunk = sigv4_chunk;
	o.verify_trailer = sigv4_trailer;
	o.ctx = &s;
	for (size_t i = 0; i < ARRAY_LEN(layouts); i++) {
		buf b = BUF_INIT;
		struct result one, bytes;
		doc_body(&b, payload, sigs, layouts[i].tail);
		signer_init(&s, "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e");
		decode(&o, b.data, b.len, 0, &one);
		ok(one.feed == S3_OK && one.fin == S3_OK, "trailer example, %s: accepted",
		   layouts[i].name);
		ok(one.out.len == 66560 && !memcmp(one.out.data, payload, 66560),
		   "trailer example, %s: the payload", layouts[i].name);
		is_str(one.cksum, "sOO8/Q==", "trailer example: the trailer's checksum");
		ok(s.chunks == 3 && s.trailers == 1,
		   "trailer example: 3 chunk and 1 trailer checks");
		is_str(s.trailer_hash,
		       "1e376db7e1a34a8ef1c4bcee131a2d60a1cb62503747488624e10995f448d774",
		       "trailer example: signed text is \"x-amz-checksum-crc32c:sOO8/Q==\\n\"");
		signer_init(&s, "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e");
		decode(&o, b.data, b.len, 1, &bytes);
		ok(same_result(&one, &bytes), "trailer example, %s: byte at a time the same",
		   layouts[i].name);
		buf_free(&one.out);
		buf_free(&bytes.out);
		buf_free(&b);
	}
	{
		/* a wrong trailer signature, and a tampered checksum under a good one */
		buf b = BUF_INIT;
		struct result r;
		doc_body(
			&b, payload, sigs,
			"x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:"
			"d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e436\r\n\r\n");
		signer_init(&s, "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e");
		decode(&o, b.data, b.len, 0, &r);
		is_int(r.feed, S3_SIGNATURE_MISMATCH, "trailer example: wrong trailer signature");
		buf_free(&r.out);
		buf_reset(&b);
		doc_body(
			&b, payload, sigs,
			"x-amz-checksum-crc32c:sOO8/A==\r\nx-amz-trailer-signature:"
			"d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n\r\n");
		signer_init(&s, "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e");
		decode(&o, b.data, b.len, 0, &r);
		is_int(r.feed, S3_SIGNATURE_MISMATCH,
		       "trailer example: a tampered checksum fails the signature before the "
		       "digest");
		buf_free(&r.out);
		buf_free(&b);
	}
	free(payload);
}

/* ---- every mode ---- */

static void test_modes(void)
{
	char payload[5000];
	static const size_t chunks[] = {1, 7, 100, 4999, 5000, 9000};
	size_t bad_ok = 0, bad_split = 0, bad_ck = 0, n = 0;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (char)(i * 31 + 7);
	for (int m = M_SIGNED; m <= M_UNSIGNED_TRAILER; m++)
		for (int a = S3_CKSUM_NONE; a < (m == M_SIGNED ? 1 : S3_CKSUM_COUNT); a++)
			for (size_t c = 0; c < ARRAY_LEN(chunks); c++)
				for (size_t len = 0; len <= sizeof(payload); len += 2500) {
					struct aws_chunked_opts o =
						opts_for((enum mode)m, (enum s3_cksum)a, len);
					buf b = BUF_INIT;
					struct result one, split;
					enc(&b, (enum mode)m, (enum s3_cksum)a, payload, len,
					    chunks[c], NULL);
					decode(&o, b.data, b.len, 0, &one);
					if (one.feed || one.fin || one.out.len != len ||
					    (len && memcmp(one.out.data, payload, len)))
						bad_ok++;
					if (a != S3_CKSUM_NONE && m != M_SIGNED) {
						char want[S3_CKSUM_B64_SIZE];
						s3_cksum_b64((enum s3_cksum)a, payload, len, want);
						if (strcmp(one.cksum, want))
							bad_ck++;
					} else if (one.cksum[0]) {
						bad_ck++;
					}
					for (size_t step = 1; step < 14; step += 6) {
						decode(&o, b.data, b.len, step, &split);
						if (!same_result(&one, &split))
							bad_split++;
						buf_free(&split.out);
					}
					buf_free(&one.out);
					buf_free(&b);
					n++;
				}
	ok(n > 100, "%zu bodies over every mode, algorithm and chunk size", n);
	is_int(bad_ok, 0, "every one decodes to its payload");
	is_int(bad_ck, 0, "the trailer checksum is reported when there is one, only then");
	is_int(bad_split, 0, "split feeding (1, 7, 13 bytes) decodes the same as one-shot");
}

static void test_no_buffering(void)
{
	/* a 1 MiB chunk fed 1000 bytes at a time comes out as it goes in */
	size_t len = 1 << 20;
	char *payload = xmalloc(len);
	buf b = BUF_INIT;
	struct sink k;
	struct aws_chunked_opts o = opts_for(M_SIGNED, S3_CKSUM_NONE, len);
	aws_chunked *d = aws_chunked_new(&o);
	enum s3_err e = S3_OK;
	memset(payload, 'z', len);
	enc(&b, M_SIGNED, S3_CKSUM_NONE, payload, len, len, NULL);
	sink_init(&k);
	for (size_t off = 0; off < b.len && !e; off += 1000)
		e = aws_chunked_feed(d, b.data + off, MIN(1000, b.len - off), sink_out, &k);
	is_int(e, S3_OK, "1 MiB chunk: fed");
	is_int(aws_chunked_finish(d), S3_OK, "1 MiB chunk: complete");
	ok(k.calls > 1000 && k.max_piece <= 1000, "1 MiB chunk: passed on as it came (%zu calls)",
	   k.calls);
	is_int(k.out.len, len, "1 MiB chunk: all of it");
	aws_chunked_free(d);
	aws_chunked_free(NULL);
	buf_free(&k.out);
	buf_free(&b);
	free(payload);
}

/* ---- malformed bodies ---- */

static struct result run(const struct aws_chunked_opts *o, const char *body, size_t len)
{
	struct result r, bytes;
	decode(o, body, len, 0, &r);
	decode(o, body, len, 1, &bytes);
	if (!same_result(&r, &bytes))
		r.fin = S3_ERR_COUNT; /* fails whatever the test expects */
	buf_free(&bytes.out);
	return r;
}

/* The first error, from feed or finish. */
static enum s3_err run_err(const struct aws_chunked_opts *o, const char *body)
{
	struct result r = run(o, body, strlen(body));
	buf_free(&r.out);
	return r.feed ? r.feed : r.fin;
}

static void test_malformed_framing(void)
{
	struct aws_chunked_opts u = opts_for(M_UNSIGNED_TRAILER, S3_CKSUM_NONE, UINT64_MAX);
	struct aws_chunked_opts s = opts_for(M_SIGNED, S3_CKSUM_NONE, UINT64_MAX);
	char sig[65], *body;
	static const struct {
		const char *body, *what;
		enum s3_err want;
	} t[] = {
		{"5\r\nhello\r\n0\r\n\r\n", "a well-formed body", S3_OK},
		{"05\r\nhello\r\n00\r\n\r\n", "leading zeros", S3_OK},
		{"A\r\n0123456789\r\n0\r\n\r\n", "upper-case hex", S3_OK},
		{"\r\n", "an empty chunk header", S3_INCOMPLETE_BODY},
		{"zz\r\n", "a size that is not hex", S3_INCOMPLETE_BODY},
		{"0x5\r\nhello\r\n0\r\n\r\n", "a 0x prefix", S3_INCOMPLETE_BODY},
		{"-5\r\n", "a negative size", S3_INCOMPLETE_BODY},
		{" 5\r\nhello\r\n0\r\n\r\n", "a space before the size", S3_INCOMPLETE_BODY},
		{"5 \r\nhello\r\n0\r\n\r\n", "a space after the size", S3_INCOMPLETE_BODY},
		{"5;a=b\r\nhello\r\n0\r\n\r\n", "a chunk extension", S3_INCOMPLETE_BODY},
		{"5\nhello\r\n0\r\n\r\n", "a bare LF after the header", S3_INCOMPLETE_BODY},
		{"5\r\r\nhello\r\n0\r\n\r\n", "a CR inside the header", S3_INCOMPLETE_BODY},
		{"5\r\nhelloX\r\n0\r\n\r\n", "no CRLF after the data", S3_INCOMPLETE_BODY},
		{"5\r\nhello\n0\r\n\r\n", "LF only after the data", S3_INCOMPLETE_BODY},
		{"5\r\nhello\r\r0\r\n\r\n", "CR CR after the data", S3_INCOMPLETE_BODY},
		{"5\r\nhello0\r\n\r\n", "the next header glued to the data", S3_INCOMPLETE_BODY},
		{"5\r\nhello\r\n0\r\n\r\nx", "a byte after the end", S3_INCOMPLETE_BODY},
		{"5\r\nhello\r\n0\r\n\r\n\r\n", "an empty line after the end", S3_OK},
		{"5\r\nhello\r\n0\r\n\r\n\r\n\r\n", "two empty lines after the end",
		 S3_INCOMPLETE_BODY},
		{"5\r\nhello\r\n0\r\nfoo\r\n\r\n", "a trailer line that is no header",
		 S3_MALFORMED_TRAILER},
		{"5\r\nhello\r\n", "no 0-size chunk", S3_INCOMPLETE_BODY},
		{"5\r\nhel", "short data", S3_INCOMPLETE_BODY},
		{"5\r\nhello\r\n0\r\n", "no end of the trailer section", S3_INCOMPLETE_BODY},
		{"", "an empty body", S3_INCOMPLETE_BODY},
		{"140000000\r\n", "a 5 GiB chunk is allowed, but short", S3_INCOMPLETE_BODY},
		{"140000001\r\n", "a chunk over 5 GiB", S3_ENTITY_TOO_LARGE},
		{"ffffffffffffffffffffffff\r\n", "a size that overflows 64 bits",
		 S3_ENTITY_TOO_LARGE},
		{"0000000000000000000000000000000000000000000000000000000000000000000000000000000"
		 "00000000000000000000000000000000000000000000000000000005\r\n",
		 "a header line over AWS_CHUNKED_LINE_MAX", S3_INCOMPLETE_BODY},
	};
	for (size_t i = 0; i < ARRAY_LEN(t); i++)
		is_int(run_err(&u, t[i].body), t[i].want, t[i].what);
	{
		/* the NUL one with its real length (strlen stops at the NUL) */
		static const char nul[] = "5\r\nhe\0lo\r\n0\r\n\r\n";
		struct result r = run(&u, nul, sizeof(nul) - 1);
		ok(!r.feed && !r.fin && r.out.len == 5 && !memcmp(r.out.data, "he\0lo", 5),
		   "a NUL in the data is just data");
		buf_free(&r.out);
		r = run(&u, "5\r\n\0", 4);
		is_int(r.fin, S3_INCOMPLETE_BODY, "data then the end");
		buf_free(&r.out);
		r = run(&u, "5\0\r\n", 4);
		is_int(r.feed, S3_INCOMPLETE_BODY, "a NUL in a chunk header");
		buf_free(&r.out);
		r = run(&u, "0\r\nx\0y\r\n\r\n", 10);
		is_int(r.feed, S3_MALFORMED_TRAILER, "a NUL in a trailer line");
		buf_free(&r.out);
	}
	{
		/* oversized line fed a byte at a time stops at the limit, not later */
		aws_chunked *d = aws_chunked_new(&u);
		struct sink k;
		size_t i;
		enum s3_err e = S3_OK;
		sink_init(&k);
		for (i = 0; i < 1000 && !e; i++)
			e = aws_chunked_feed(d, "0", 1, sink_out, &k);
		is_int(e, S3_INCOMPLETE_BODY, "an endless header line is refused");
		is_int(i, AWS_CHUNKED_LINE_MAX + 2,
		       "as soon as it passes AWS_CHUNKED_LINE_MAX + CR");
		aws_chunked_free(d);
	}

	/* signed chunk headers */
	sha256_hex("hello", 5, sig);
	body = xasprintf("5;chunk-signature=%s\r\nhello\r\n0;chunk-signature=%s\r\n\r\n", sig,
			 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	is_int(run_err(&s, body), S3_OK, "signed: well-formed");
	free(body);
	body = xasprintf("5;chunk-signature=%.40s%.24s\r\nhello\r\n0;chunk-signature=%s\r\n\r\n",
			 "0123456789ABCDEF0123456789ABCDEF01234567", sig + 40,
			 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	is_int(run_err(&s, body), S3_SIGNATURE_MISMATCH, "signed: a wrong signature");
	free(body);
	{
		/* an upper-case signature reaches the callback lower-cased */
		char up[65];
		for (int i = 0; i < 65; i++)
			up[i] = sig[i] >= 'a' && sig[i] <= 'f' ? (char)(sig[i] - 32) : sig[i];
		body = xasprintf(
			"5;chunk-signature=%s\r\nhello\r\n0;chunk-signature=%s\r\n\r\n", up,
			"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855");
		is_int(run_err(&s, body), S3_OK, "signed: upper-case hex signatures");
		free(body);
	}
	static const struct {
		const char *header, *what;
	} sh[] = {
		{"5\r\n", "signed: no signature"},
		{"5;chunk-signature=\r\n", "signed: an empty signature"},
		{"5;chunk-signature="
		 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\r\n",
		 "signed: 63 hex digits"},
		{"5;chunk-signature="
		 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0"
		 "\r\n",
		 "signed: 65 hex digits"},
		{"5;chunk-signature="
		 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg\r\n",
		 "signed: a non-hex digit"},
		{"5;chunk-signaturE="
		 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n",
		 "signed: a misspelt key"},
		{"5; "
		 "chunk-signature="
		 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n",
		 "signed: a space before the key"},
		{";chunk-signature="
		 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n",
		 "signed: no size"},
	};
	for (size_t i = 0; i < ARRAY_LEN(sh); i++)
		is_int(run_err(&s, sh[i].header), S3_INCOMPLETE_BODY, sh[i].what);
	{
		/* no trailer at all in the plain signed mode */
		buf b = BUF_INIT;
		buf_printf(&b, "5;chunk-signature=%s\r\nhello\r\n0;chunk-signature=%s\r\n", sig,
			   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
		buf_append_str(&b, "x-amz-checksum-crc32:NhCmhg==\r\n\r\n");
		is_int(run_err(&s, b.data), S3_INCOMPLETE_BODY,
		       "signed: a trailer where none may be");
		buf_reset(&b);
		buf_printf(&b, "5;chunk-signature=%s\r\nhello\r\n0;chunk-signature=%s\r\n", sig,
			   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
		is_int(run_err(&s, b.data), S3_INCOMPLETE_BODY,
		       "signed: the closing CRLF is required when no trailer came");
		buf_free(&b);
	}
}

static void test_lengths(void)
{
	char payload[40000];
	buf b = BUF_INIT;
	struct aws_chunked_opts o;
	struct result r;
	memset(payload, 'q', sizeof(payload));

	o = opts_for(M_UNSIGNED_TRAILER, S3_CKSUM_NONE, 10);
	enc(&b, M_UNSIGNED_TRAILER, S3_CKSUM_NONE, payload, 11, 6, NULL);
	r = run(&o, b.data, b.len);
	is_int(r.feed, S3_INCOMPLETE_BODY, "decoded length: one byte more than declared");
	is_int(r.out.len, 6, "  refused at the header of the chunk that would pass it");
	buf_free(&r.out);
	o.decoded_length = 12;
	r = run(&o, b.data, b.len);
	is_int(r.feed, S3_INCOMPLETE_BODY, "decoded length: one byte less than declared");
	buf_free(&r.out);
	o.decoded_length = 11;
	r = run(&o, b.data, b.len);
	ok(!r.feed && !r.fin && r.decoded == 11, "decoded length: exact");
	buf_free(&r.out);
	o.decoded_length = 0;
	buf_reset(&b);
	enc(&b, M_UNSIGNED_TRAILER, S3_CKSUM_NONE, payload, 0, 6, NULL);
	r = run(&o, b.data, b.len);
	ok(!r.feed && !r.fin && r.decoded == 0, "decoded length 0: an empty payload");
	buf_free(&r.out);

	/* S3's 8 KiB minimum, for every chunk but the last */
	o = opts_for(M_SIGNED, S3_CKSUM_NONE, UINT64_MAX);
	o.min_chunk = AWS_CHUNKED_MIN_CHUNK;
	buf_reset(&b);
	enc(&b, M_SIGNED, S3_CKSUM_NONE, payload, 40000, 8192, NULL);
	r = run(&o, b.data, b.len);
	ok(!r.feed && !r.fin, "min chunk: 8192-byte chunks and a short last one");
	buf_free(&r.out);
	buf_reset(&b);
	enc(&b, M_SIGNED, S3_CKSUM_NONE, payload, 40000, 8191, NULL);
	r = run(&o, b.data, b.len);
	is_int(r.feed, S3_INVALID_CHUNK_SIZE, "min chunk: 8191-byte chunks");
	is_int(r.out.len, 8191, "  refused at the second chunk's header");
	buf_free(&r.out);
	buf_reset(&b);
	enc(&b, M_SIGNED, S3_CKSUM_NONE, payload, 100, 8192, NULL);
	r = run(&o, b.data, b.len);
	ok(!r.feed && !r.fin, "min chunk: one short chunk is the last one");
	buf_free(&r.out);
	buf_free(&b);
}

static void test_trailers(void)
{
	static const char payload[] = "The quick brown fox jumps over the lazy dog";
	size_t len = sizeof(payload) - 1;
	char right[S3_CKSUM_B64_SIZE];
	static const struct {
		int mode;
		enum s3_cksum named; /* x-amz-trailer */
		enum s3_cksum sent;  /* the trailer line's algorithm */
		struct layout l;
		const char *what;
		enum s3_err want;
	} t[] = {
		{M_UNSIGNED_TRAILER, S3_CKSUM_CRC32, S3_CKSUM_CRC32, {0}, "unsigned: right", S3_OK},
		{M_SIGNED_TRAILER, S3_CKSUM_SHA256, S3_CKSUM_SHA256, {0}, "signed: right", S3_OK},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.no_closing = true},
		 "no closing empty line",
		 S3_OK},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.blank_before_trailer = true},
		 "an empty line before the trailer",
		 S3_OK},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_NONE,
		 S3_CKSUM_NONE,
		 {0},
		 "no checksum at all",
		 S3_OK},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_NONE,
		 S3_CKSUM_NONE,
		 {.blank_before_trailer = true},
		 "no checksum, two empty lines",
		 S3_OK},
		{M_SIGNED_TRAILER,
		 S3_CKSUM_NONE,
		 S3_CKSUM_NONE,
		 {0},
		 "signed, no checksum: the signature of an empty trailer",
		 S3_OK},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32C,
		 {0},
		 "a trailer for another algorithm",
		 S3_MALFORMED_TRAILER},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_NONE,
		 S3_CKSUM_CRC32,
		 {0},
		 "a checksum trailer x-amz-trailer did not name",
		 S3_MALFORMED_TRAILER},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_NONE,
		 {0},
		 "the named checksum missing",
		 S3_MALFORMED_TRAILER},
		{M_SIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_NONE,
		 {0},
		 "signed: the named checksum missing",
		 S3_MALFORMED_TRAILER},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.cksum_value = "AAAAAA=="},
		 "a wrong checksum",
		 S3_BAD_DIGEST},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_SHA1,
		 S3_CKSUM_SHA1,
		 {.cksum_value = "2jmj7l5rSw0yVb/vlWAYkK/YBwk="},
		 "a wrong SHA1",
		 S3_BAD_DIGEST},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.cksum_value = "AAAAAA="},
		 "a checksum of the wrong length",
		 S3_INVALID_REQUEST},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.cksum_value = "AA*AAA=="},
		 "a checksum that is not base64",
		 S3_INVALID_REQUEST},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.cksum_value = ""},
		 "an empty checksum",
		 S3_INVALID_REQUEST},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.extra_trailer = "x-amz-checksum-crc32:AAAAAA==\r\n"},
		 "two checksum trailers",
		 S3_MALFORMED_TRAILER},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.extra_trailer = "x-amz-meta-foo:bar\r\n"},
		 "an unknown trailer",
		 S3_MALFORMED_TRAILER},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.extra_trailer = "x-amz-checksum-crc32\r\n"},
		 "a trailer with no colon",
		 S3_MALFORMED_TRAILER},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.extra_trailer = ":x\r\n"},
		 "a trailer with no name",
		 S3_MALFORMED_TRAILER},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.cksum_header = "x-amz-checksum crc32"},
		 "a space in a trailer name",
		 S3_MALFORMED_TRAILER},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.extra_trailer =
			  "x-amz-trailer-signature:"
			  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n"},
		 "a trailer signature in the unsigned mode",
		 S3_MALFORMED_TRAILER},
		{M_UNSIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.extra_trailer =
			  "x-amz-checksum-crc32:"
			  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
			  "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\r"
			  "\n"},
		 "a trailer line over AWS_CHUNKED_LINE_MAX",
		 S3_MALFORMED_TRAILER},
		{M_SIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.extra_trailer =
			  "x-amz-trailer-signature:"
			  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\r\n"},
		 "two trailer signatures",
		 S3_MALFORMED_TRAILER},
		{M_SIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.extra_trailer = "x-amz-trailer-signature:0123\r\n"},
		 "a short trailer signature",
		 S3_MALFORMED_TRAILER},
		{M_SIGNED_TRAILER,
		 S3_CKSUM_CRC32,
		 S3_CKSUM_CRC32,
		 {.cksum_value = "AAAAAA=="},
		 "signed: a wrong checksum under a right signature",
		 S3_BAD_DIGEST},
	};
	for (size_t i = 0; i < ARRAY_LEN(t); i++) {
		struct aws_chunked_opts o = opts_for((enum mode)t[i].mode, t[i].named, len);
		buf b = BUF_INIT;
		struct result r;
		enc(&b, (enum mode)t[i].mode, t[i].sent, payload, len, 16, &t[i].l);
		r = run(&o, b.data, b.len);
		is_int(r.feed ? r.feed : r.fin, t[i].want, t[i].what);
		buf_free(&r.out);
		buf_free(&b);
	}
	{
		/* order, whitespace, case; the signature must come last */
		struct aws_chunked_opts o = opts_for(M_SIGNED_TRAILER, S3_CKSUM_CRC32, len);
		buf b = BUF_INIT;
		char sig[65], csig[65];
		char *canon;
		s3_cksum_b64(S3_CKSUM_CRC32, payload, len, right);
		canon = xasprintf("x-amz-checksum-crc32:%s\n", right);
		sha256_hex(canon, strlen(canon), sig);
		sha256_hex(payload, len, csig);
		buf_printf(&b, "%zx;chunk-signature=%s\r\n%s\r\n0;chunk-signature=%s\r\n", len,
			   csig, payload,
			   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
		buf_printf(&b, "X-AMZ-Checksum-CRC32: \t%s \r\nx-amz-trailer-signature:%s\r\n\r\n",
			   right, sig);
		is_int(run_err(&o, b.data), S3_OK,
		       "trailer names in any case, blanks around the value: signed canonical");
		buf_reset(&b);
		buf_printf(&b, "%zx;chunk-signature=%s\r\n%s\r\n0;chunk-signature=%s\r\n", len,
			   csig, payload,
			   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
		buf_printf(&b, "x-amz-trailer-signature:%s\r\nx-amz-checksum-crc32:%s\r\n\r\n", sig,
			   right);
		is_int(run_err(&o, b.data), S3_MALFORMED_TRAILER, "a checksum after the signature");
		buf_reset(&b);
		buf_printf(&b, "%zx;chunk-signature=%s\r\n%s\r\n0;chunk-signature=%s\r\n", len,
			   csig, payload,
			   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
		buf_printf(&b, "x-amz-checksum-crc32:%s\r\n\r\n", right);
		is_int(run_err(&o, b.data), S3_MALFORMED_TRAILER, "signed: no trailer signature");
		buf_free(&b);
		free(canon);
	}
}

static void test_sticky_and_out_errors(void)
{
	static const char good[] = "5\r\nhello\r\n0\r\n\r\n";
	struct aws_chunked_opts o = opts_for(M_UNSIGNED_TRAILER, S3_CKSUM_NONE, UINT64_MAX);
	struct sink k;
	aws_chunked *d = aws_chunked_new(&o);
	sink_init(&k);
	is_int(aws_chunked_feed(d, "zz\r\n", 4, sink_out, &k), S3_INCOMPLETE_BODY, "an error");
	is_int(aws_chunked_feed(d, good, strlen(good), sink_out, &k), S3_INCOMPLETE_BODY,
	       "sticks: good input after it is refused");
	is_int(aws_chunked_feed(d, "", 0, sink_out, &k), S3_INCOMPLETE_BODY, "even empty input");
	is_int(aws_chunked_finish(d), S3_INCOMPLETE_BODY, "finish says the same");
	is_int(k.calls, 0, "nothing was passed on");
	aws_chunked_free(d);

	d = aws_chunked_new(&o);
	sink_init(&k);
	k.fail_after = 3;
	k.fail_with = S3_INTERNAL;
	is_int(aws_chunked_feed(d, good, 6, sink_out, &k), S3_OK, "out: 3 bytes taken");
	is_int(aws_chunked_feed(d, good + 6, strlen(good) - 6, sink_out, &k), S3_INTERNAL,
	       "out's error comes back from feed");
	is_int(aws_chunked_finish(d), S3_INTERNAL, "and sticks");
	is_int(k.calls, 2, "out is not called again");
	aws_chunked_free(d);
	buf_free(&k.out);

	d = aws_chunked_new(&o);
	sink_init(&k);
	is_int(aws_chunked_feed(d, good, strlen(good), sink_out, &k), S3_OK, "complete body");
	is_int(aws_chunked_finish(d), S3_OK, "finish");
	is_int(aws_chunked_finish(d), S3_OK, "finish twice");
	is_int(aws_chunked_feed(d, "0", 1, sink_out, &k), S3_INCOMPLETE_BODY, "then a byte more");
	is_int(aws_chunked_finish(d), S3_INCOMPLETE_BODY, "is an error that sticks");
	aws_chunked_free(d);
	buf_free(&k.out);
}

static void test_mode_names(void)
{
	struct aws_chunked_opts o;
	memset(&o, 0, sizeof(o));
	ok(aws_chunked_mode("STREAMING-UNSIGNED-PAYLOAD-TRAILER", &o) && !o.signed_chunks &&
		   o.trailer && !o.trailer_signed,
	   "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
	ok(aws_chunked_mode("STREAMING-AWS4-HMAC-SHA256-PAYLOAD", &o) && o.signed_chunks &&
		   !o.trailer && !o.trailer_signed,
	   "STREAMING-AWS4-HMAC-SHA256-PAYLOAD");
	ok(!aws_chunked_mode("UNSIGNED-PAYLOAD", &o), "UNSIGNED-PAYLOAD is not streaming");
	ok(!aws_chunked_mode("STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", &o), "SigV4a: not here");
	ok(!aws_chunked_mode("streaming-aws4-hmac-sha256-payload", &o), "exact spelling only");
	ok(!aws_chunked_mode(NULL, &o), "NULL");
}

/* Every prefix of a valid body is refused, except where a tolerated end lies. */
static void test_truncation(void)
{
	static const char payload[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	size_t len = sizeof(payload) - 1;
	for (int m = M_SIGNED; m <= M_UNSIGNED_TRAILER; m++) {
		enum s3_cksum a = m == M_SIGNED ? S3_CKSUM_NONE : S3_CKSUM_CRC64NVME;
		struct aws_chunked_opts o = opts_for((enum mode)m, a, len);
		buf b = BUF_INIT;
		size_t bad = 0, over = 0;
		enc(&b, (enum mode)m, a, payload, len, 10, NULL);
		for (size_t cut = 0; cut < b.len; cut++) {
			struct result r = run(&o, b.data, cut);
			/* with a trailer, the closing empty line may be missing */
			bool tolerated = m != M_SIGNED && cut == b.len - 2;
			if (tolerated ? (r.feed || r.fin) : (!r.feed && !r.fin))
				bad++;
			if (r.out.len > len ||
			    (r.out.len && memcmp(r.out.data, payload, r.out.len)))
				over++;
			buf_free(&r.out);
		}
		ok(bad == 0, "%s: every truncation of the %zu bytes refused", mode_names[m], b.len);
		ok(over == 0, "%s: what came out was a prefix of the payload", mode_names[m]);
		buf_free(&b);
	}
}

int main(void)
{
	test_check_values();
	test_incremental();
	test_crc_combine();
	test_names();
	test_b64_valid();
	test_mode_names();
	test_doc_example();
	test_doc_trailer_example();
	test_modes();
	test_no_buffering();
	test_malformed_framing();
	test_lengths();
	test_trailers();
	test_sticky_and_out_errors();
	test_truncation();
	return done_testing();
}
