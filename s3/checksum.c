/*
 * S3's additional checksums (checksum.h).
 *
 * DESIGN
 * - CRC32 is the gzip/zlib CRC (reflected 0x04c11db7): isa-l's crc32_gzip_refl,
 *   which inverts on the way in and out itself, so its result chains as the
 *   next call's initial value.
 * - CRC32C is lib/crc32c.c (isa-l's crc32_iscsi, which does not invert, with
 *   the inversions the standard CRC-32C needs added there).
 * - CRC64NVME is not in the isa-l we build against, so it is here: reflected,
 *   slice-by-8 tables (16 KiB) built once on first use. Objects are large and
 *   recent SDKs default to this CRC, so the byte-at-a-time loop is only the tail.
 * - SHA1 and SHA256 are OpenSSL EVP digests; the EVP context is the only
 *   allocation, freed by final or clear.
 * - The CRCs' digest bytes are big-endian, which is how S3 base64-encodes them.
 * - Combining CRCs (s3_crc_combine) is zlib's method, for any reflected CRC
 *   that starts from and ends with all ones: crc(A||B) = crc(A) * x^(8|B|) mod
 *   P xor crc(B). Polynomials are held reflected (the top bit is x^0), products
 *   are shift-and-add modulo P, and x^(8|B|) is assembled from a table of
 *   x^(2^k) mod P (k < 67, so any 64-bit length), built once per CRC.
 */
#include "config.h"
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <isa-l/crc.h>
#include <openssl/evp.h>
#include "crc32c.h"
#include "s3/checksum.h"
#include "util.h"

static const struct {
	const char *name, *header;
	size_t digest_len;
} algs[S3_CKSUM_COUNT] = {
	[S3_CKSUM_CRC32] = {"CRC32", "x-amz-checksum-crc32", 4},
	[S3_CKSUM_CRC32C] = {"CRC32C", "x-amz-checksum-crc32c", 4},
	[S3_CKSUM_CRC64NVME] = {"CRC64NVME", "x-amz-checksum-crc64nvme", 8},
	[S3_CKSUM_SHA1] = {"SHA1", "x-amz-checksum-sha1", 20},
	[S3_CKSUM_SHA256] = {"SHA256", "x-amz-checksum-sha256", 32},
};

static bool known(enum s3_cksum a) { return a > S3_CKSUM_NONE && a < S3_CKSUM_COUNT; }

enum s3_cksum s3_cksum_from_name(const char *s)
{
	for (int a = S3_CKSUM_NONE + 1; s && a < S3_CKSUM_COUNT; a++)
		if (!strcasecmp(s, algs[a].name))
			return (enum s3_cksum)a;
	return S3_CKSUM_NONE;
}

enum s3_cksum s3_cksum_from_header(const char *s)
{
	for (int a = S3_CKSUM_NONE + 1; s && a < S3_CKSUM_COUNT; a++)
		if (!strcasecmp(s, algs[a].header))
			return (enum s3_cksum)a;
	return S3_CKSUM_NONE;
}

const char *s3_cksum_name(enum s3_cksum a) { return known(a) ? algs[a].name : NULL; }

const char *s3_cksum_header(enum s3_cksum a) { return known(a) ? algs[a].header : NULL; }

size_t s3_cksum_digest_len(enum s3_cksum a) { return known(a) ? algs[a].digest_len : 0; }

size_t s3_cksum_b64_len(enum s3_cksum a) { return (s3_cksum_digest_len(a) + 2) / 3 * 4; }

/* ---- CRC-64/NVME ---- */

#define CRC64NVME_POLY_REFL 0x9a6c9329ac4bc9b5ULL /* 0xad93d23594c93659 bit-reversed */

static uint64_t crc64_table[8][256];
static pthread_once_t crc64_once = PTHREAD_ONCE_INIT;

static void crc64_make_table(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint64_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? c >> 1 ^ CRC64NVME_POLY_REFL : c >> 1;
		crc64_table[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++) {
			uint64_t prev = crc64_table[t - 1][i];
			crc64_table[t][i] = prev >> 8 ^ crc64_table[0][prev & 0xff];
		}
}

uint64_t crc64nvme_update(uint64_t crc, const void *p, size_t n)
{
	const uint8_t *b = p;
	pthread_once(&crc64_once, crc64_make_table);
	crc = ~crc;
	for (; n >= 8; b += 8, n -= 8) {
		uint64_t w = 0;
		for (int i = 7; i >= 0; i--) /* little-endian load, any alignment */
			w = w << 8 | b[i];
		crc ^= w;
		crc = crc64_table[7][crc & 0xff] ^ crc64_table[6][crc >> 8 & 0xff] ^
		      crc64_table[5][crc >> 16 & 0xff] ^ crc64_table[4][crc >> 24 & 0xff] ^
		      crc64_table[3][crc >> 32 & 0xff] ^ crc64_table[2][crc >> 40 & 0xff] ^
		      crc64_table[1][crc >> 48 & 0xff] ^ crc64_table[0][crc >> 56];
	}
	while (n--)
		crc = crc >> 8 ^ crc64_table[0][(crc ^ *b++) & 0xff];
	return ~crc;
}

/* ---- combining CRCs ---- */

#define X2N_MAX 67 /* x^(2^k) for k < 67: lengths in bytes up to 2^64 - 1, in bits */

struct crc_shape {
	uint64_t poly; /* reflected */
	int width;
	uint64_t x2n[X2N_MAX];
};

static struct crc_shape crc_shapes[3] = {
	{0xedb88320u, 32, {0}},         /* CRC32 */
	{0x82f63b78u, 32, {0}},         /* CRC32C */
	{CRC64NVME_POLY_REFL, 64, {0}}, /* CRC64NVME */
};
static pthread_once_t x2n_once = PTHREAD_ONCE_INIT;

/* a * b modulo the shape's polynomial, both reflected. */
static uint64_t mult_mod(const struct crc_shape *c, uint64_t a, uint64_t b)
{
	uint64_t m = 1ULL << (c->width - 1), p = 0;
	for (; m; m >>= 1) {
		if (a & m) {
			p ^= b;
			if (!(a & (m - 1)))
				break;
		}
		b = b & 1 ? b >> 1 ^ c->poly : b >> 1;
	}
	return p;
}

static void x2n_make(void)
{
	for (size_t i = 0; i < ARRAY_LEN(crc_shapes); i++) {
		struct crc_shape *c = &crc_shapes[i];
		c->x2n[0] = 1ULL << (c->width - 2); /* x^1 */
		for (int k = 1; k < X2N_MAX; k++)
			c->x2n[k] = mult_mod(c, c->x2n[k - 1], c->x2n[k - 1]);
	}
}

static const struct crc_shape *shape_of(enum s3_cksum a)
{
	assert(s3_cksum_is_crc(a));
	pthread_once(&x2n_once, x2n_make);
	return &crc_shapes[a == S3_CKSUM_CRC32 ? 0 : a == S3_CKSUM_CRC32C ? 1 : 2];
}

bool s3_cksum_is_crc(enum s3_cksum a)
{
	return a == S3_CKSUM_CRC32 || a == S3_CKSUM_CRC32C || a == S3_CKSUM_CRC64NVME;
}

uint64_t s3_crc_from_digest(enum s3_cksum a, const uint8_t *d)
{
	return a == S3_CKSUM_CRC64NVME ? get_be64(d) : get_be32(d);
}

size_t s3_crc_to_digest(enum s3_cksum a, uint64_t crc, uint8_t out[S3_CKSUM_DIGEST_MAX])
{
	if (a == S3_CKSUM_CRC64NVME)
		put_be64(out, crc);
	else
		put_be32(out, (uint32_t)crc);
	return s3_cksum_digest_len(a);
}

uint64_t s3_crc_combine(enum s3_cksum a, uint64_t crc1, uint64_t crc2, uint64_t len2)
{
	const struct crc_shape *c = shape_of(a);
	uint64_t xn = 1ULL << (c->width - 1); /* x^0 */
	/* x^(8 * len2): the bits of len2 pick x^(2^(k+3)) */
	for (int k = 3; len2; len2 >>= 1, k++)
		if (len2 & 1)
			xn = mult_mod(c, c->x2n[k], xn);
	return mult_mod(c, xn, crc1) ^ crc2;
}

/* ---- running checksums ---- */

void s3_cksum_init(struct s3_cksum_ctx *c, enum s3_cksum a)
{
	assert(known(a));
	c->alg = a;
	c->crc = 0;
	c->md = NULL;
	if (a == S3_CKSUM_SHA1 || a == S3_CKSUM_SHA256) {
		c->md = EVP_MD_CTX_new();
		/* only allocation can fail here: abort as xmalloc does */
		if (!c->md ||
		    !EVP_DigestInit_ex(c->md, a == S3_CKSUM_SHA1 ? EVP_sha1() : EVP_sha256(), NULL))
			abort();
	}
}

void s3_cksum_update(struct s3_cksum_ctx *c, const void *p, size_t n)
{
	if (!n)
		return;
	switch (c->alg) {
	case S3_CKSUM_CRC32:
		c->crc = crc32_gzip_refl((uint32_t)c->crc, p, n);
		break;
	case S3_CKSUM_CRC32C:
		c->crc = crc32c_update((uint32_t)c->crc, p, n);
		break;
	case S3_CKSUM_CRC64NVME:
		c->crc = crc64nvme_update(c->crc, p, n);
		break;
	case S3_CKSUM_SHA1:
	case S3_CKSUM_SHA256:
		assert(c->md);
		EVP_DigestUpdate(c->md, p, n);
		break;
	default:
		assert(!"s3_cksum_update on a released checksum");
	}
}

size_t s3_cksum_final(struct s3_cksum_ctx *c, uint8_t out[S3_CKSUM_DIGEST_MAX])
{
	size_t len = s3_cksum_digest_len(c->alg);
	unsigned int mdlen = 0;
	switch (c->alg) {
	case S3_CKSUM_CRC32:
	case S3_CKSUM_CRC32C:
		put_be32(out, (uint32_t)c->crc);
		break;
	case S3_CKSUM_CRC64NVME:
		put_be64(out, c->crc);
		break;
	case S3_CKSUM_SHA1:
	case S3_CKSUM_SHA256:
		if (!EVP_DigestFinal_ex(c->md, out, &mdlen) || mdlen != len)
			abort();
		break;
	default:
		assert(!"s3_cksum_final on a released checksum");
	}
	s3_cksum_clear(c);
	return len;
}

void s3_cksum_final_b64(struct s3_cksum_ctx *c, char out[S3_CKSUM_B64_SIZE])
{
	uint8_t d[S3_CKSUM_DIGEST_MAX];
	size_t n = s3_cksum_final(c, d);
	EVP_EncodeBlock((unsigned char *)out, d, (int)n); /* writes the NUL too */
}

void s3_cksum_clear(struct s3_cksum_ctx *c)
{
	EVP_MD_CTX_free(c->md);
	c->md = NULL;
	c->alg = S3_CKSUM_NONE;
	c->crc = 0;
}

void s3_cksum_b64(enum s3_cksum a, const void *p, size_t n, char out[S3_CKSUM_B64_SIZE])
{
	struct s3_cksum_ctx c;
	s3_cksum_init(&c, a);
	s3_cksum_update(&c, p, n);
	s3_cksum_final_b64(&c, out);
}

void s3_cksum_digest_b64(enum s3_cksum a, const uint8_t *d, char out[S3_CKSUM_B64_SIZE])
{
	EVP_EncodeBlock((unsigned char *)out, d, (int)s3_cksum_digest_len(a)); /* and a NUL */
}

static bool b64_char(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '+' || ch == '/';
}

bool s3_cksum_b64_valid(enum s3_cksum a, const char *v, size_t len)
{
	size_t want = s3_cksum_b64_len(a), pad = (3 - s3_cksum_digest_len(a) % 3) % 3;
	if (!want || len != want)
		return false;
	for (size_t i = 0; i < len; i++)
		if (i < len - pad ? !b64_char(v[i]) : v[i] != '=')
			return false;
	return true;
}

size_t s3_cksum_b64_decode(enum s3_cksum a, const char *v, uint8_t out[S3_CKSUM_DIGEST_MAX])
{
	uint8_t d[S3_CKSUM_B64_SIZE]; /* 3 bytes per 4 characters, padding included */
	size_t len = s3_cksum_digest_len(a);
	if (!v || !s3_cksum_b64_valid(a, v, strlen(v)) ||
	    EVP_DecodeBlock(d, (const unsigned char *)v, (int)strlen(v)) < (int)len)
		return 0;
	memcpy(out, d, len);
	return len;
}
