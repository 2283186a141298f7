/*
 * Eight MD5 streams at once: lane l of every AVX2 register holds stream l's
 * 32-bit word, so each instruction advances all eight. MD5's steps only add,
 * rotate and combine 32-bit words, which vectorise lane by lane; the one
 * cost the single-stream code does not have is gathering word w of eight
 * blocks into one register, done by transposing 8x8 words.
 */
#include "config.h"
#include "md5_x8.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include "md5_rounds.h"

bool md5_x8_supported(void) { return __builtin_cpu_supports("avx2"); }

#define TARGET __attribute__((target("avx2")))

/* m[w] lane l = word w (of 8 from byte off) of lane l's block. */
TARGET static inline void load_words(const uint8_t *const p[MD5_LANES], size_t off, __m256i m[8])
{
	__m256i r[8], t[8], u[8];
	for (int l = 0; l < MD5_LANES; l++)
		r[l] = _mm256_loadu_si256((const __m256i *)(p[l] + off));
	for (int i = 0; i < 4; i++) {
		t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
	}
	/* u[0..3]: words 0..3 (low half) and 4..7 (high half) of lanes 0-3; u[4..7] of lanes 4-7 */
	for (int i = 0; i < 2; i++) {
		u[4 * i + 0] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
		u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
		u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
		u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
	}
	for (int w = 0; w < 4; w++) {
		m[w] = _mm256_permute2x128_si256(u[w], u[w + 4], 0x20);
		m[w + 4] = _mm256_permute2x128_si256(u[w], u[w + 4], 0x31);
	}
}

#define ADD(x, y)  _mm256_add_epi32(x, y)
#define XOR(x, y)  _mm256_xor_si256(x, y)
#define F(x, y, z) XOR(z, _mm256_and_si256(x, XOR(y, z)))
#define G(x, y, z) XOR(y, _mm256_and_si256(z, XOR(x, y)))
#define H(x, y, z) XOR(XOR(x, y), z)
#define I(x, y, z) XOR(y, _mm256_or_si256(x, XOR(z, ones)))
#define STEP(f, a, b, c, d, w, i, s)                                                            \
	do {                                                                                    \
		a = ADD(ADD(a, ADD(m[w], _mm256_set1_epi32((int)md5_k[i]))), f(b, c, d));       \
		a = ADD(_mm256_or_si256(_mm256_slli_epi32(a, s), _mm256_srli_epi32(a, 32 - s)), \
			b);                                                                     \
	} while (0)

TARGET void md5_x8_blocks(uint32_t h[MD5_LANES][4], const uint8_t *const p[MD5_LANES],
			  size_t nblocks)
{
	const __m256i ones = _mm256_set1_epi32(-1);
	__m256i st[4];
	const uint8_t *q[MD5_LANES];

	for (int j = 0; j < 4; j++)
		st[j] = _mm256_setr_epi32((int)h[0][j], (int)h[1][j], (int)h[2][j], (int)h[3][j],
					  (int)h[4][j], (int)h[5][j], (int)h[6][j], (int)h[7][j]);
	for (int l = 0; l < MD5_LANES; l++)
		q[l] = p[l];
	for (size_t n = 0; n < nblocks; n++) {
		__m256i m[16], a = st[0], b = st[1], c = st[2], d = st[3];
		load_words(q, 0, m);
		load_words(q, 32, m + 8);
		MD5_ROUNDS();
		st[0] = ADD(st[0], a);
		st[1] = ADD(st[1], b);
		st[2] = ADD(st[2], c);
		st[3] = ADD(st[3], d);
		for (int l = 0; l < MD5_LANES; l++)
			q[l] += 64;
	}
	for (int j = 0; j < 4; j++) {
		uint32_t v[MD5_LANES];
		_mm256_storeu_si256((__m256i *)v, st[j]);
		for (int l = 0; l < MD5_LANES; l++)
			h[l][j] = v[l];
	}
}

#else

bool md5_x8_supported(void) { return false; }

void md5_x8_blocks(uint32_t h[MD5_LANES][4], const uint8_t *const p[MD5_LANES], size_t nblocks)
{
	(void)h, (void)p, (void)nblocks;
}

#endif
