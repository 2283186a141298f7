/* UTF-8 decoding, strict (no overlongs, no surrogates, nothing past U+10FFFF). */
#ifndef WEEDFS_UTF8_H
#define WEEDFS_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Decodes the character at p (n > 0 bytes available). Returns its length in
 * bytes (1-4) and stores the code point in *cp (cp may be NULL), or returns 0
 * if p does not start a valid, complete UTF-8 sequence. Any thread.
 */
size_t utf8_decode(const unsigned char *p, size_t n, uint32_t *cp);

/* Whether s[0..n) is valid UTF-8 throughout. Any thread. */
bool utf8_valid(const char *s, size_t n);

#endif
