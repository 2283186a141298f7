#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "util.h"

void buf_init(buf *b) { b->data = NULL, b->len = 0, b->cap = 0; }

void buf_free(buf *b)
{
	free(b->data);
	buf_init(b);
}

void buf_reset(buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void buf_reserve(buf *b, size_t n)
{
	size_t need = b->len + n + 1;
	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
	b->data[b->len] = '\0'; /* a fresh buffer is an empty string too */
}

void buf_reserve_exact(buf *b, size_t n)
{
	size_t need = b->len + n + 1;
	if (need <= b->cap)
		return;
	b->data = xrealloc(b->data, need);
	b->cap = need;
	b->data[b->len] = '\0';
}

void buf_append(buf *b, const void *data, size_t n)
{
	buf_reserve(b, n);
	if (n)
		memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void buf_append_str(buf *b, const char *s) { buf_append(b, s, strlen(s)); }

void buf_append_byte(buf *b, char c) { buf_append(b, &c, 1); }

void buf_vprintf(buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return;
	buf_reserve(b, (size_t)n);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void buf_printf(buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

char *buf_steal(buf *b, size_t *len)
{
	char *p;
	buf_reserve(b, 0);
	p = b->data;
	if (len)
		*len = b->len;
	buf_init(b);
	return p;
}
