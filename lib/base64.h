/*
 * Standard base64 (RFC 4648 section 4, with padding): the form the filer's
 * JSON API and its event stream carry bytes in; and base64url (section 5,
 * without padding), the form of JSON Web Tokens. Pure functions, any thread.
 */
#ifndef WEEDFS_BASE64_H
#define WEEDFS_BASE64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"

/* Appends the base64 of p[0..n) (padded) to out, NUL-terminated. */
void base64_encode(const void *p, size_t n, buf *out);

/*
 * Decodes the NUL-terminated s (padding required when the length is not a
 * multiple of 4) into a new buffer of at most max bytes (caller frees *out).
 * False on bad input or more than max bytes (*out NULL, *outlen 0).
 */
bool base64_decode(const char *s, size_t max, uint8_t **out, size_t *outlen);

/* Appends the base64url of p[0..n) (no padding) to out, NUL-terminated. */
void base64url_encode(const void *p, size_t n, buf *out);

/*
 * Decodes base64url s[0..n) (no padding, canonical: unused bits zero) into a
 * new buffer of at most max bytes (caller frees *out). False on bad input.
 */
bool base64url_decode(const char *s, size_t n, size_t max, uint8_t **out, size_t *outlen);

#endif
