/* A growable byte buffer, always NUL-terminated past len so text is usable as a C string. */
#ifndef WEEDFS_BUF_H
#define WEEDFS_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct buf {
	char *data; /* owned; NULL until the first append */
	size_t len;
	size_t cap;
} buf;

#define BUF_INIT           \
	{                  \
		NULL, 0, 0 \
	}

void buf_init(buf *b);
/* Releases the storage; b is empty and reusable afterwards. */
void buf_free(buf *b);
/* Empties b but keeps its storage. */
void buf_reset(buf *b);
/* Ensures room for n more bytes. */
void buf_reserve(buf *b, size_t n);
/* Like buf_reserve, but allocates exactly what n needs (for a body of known size). */
void buf_reserve_exact(buf *b, size_t n);
void buf_append(buf *b, const void *data, size_t n);
void buf_append_str(buf *b, const char *s);
void buf_append_byte(buf *b, char c);
void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(buf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Hands the storage to the caller (who frees it) and empties b. Never NULL. */
char *buf_steal(buf *b, size_t *len);

#endif
