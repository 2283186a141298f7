#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "crc32c.h"
#include "needle.h"
#include "util.h"

uint32_t needle_body_size(const struct needle *n)
{
	uint64_t s = 4 + (uint64_t)n->data_size + 1;
	if (n->flags & NEEDLE_FLAG_HAS_NAME)
		s += 1 + n->name_len;
	if (n->flags & NEEDLE_FLAG_HAS_MIME)
		s += 1 + n->mime_len;
	if (n->flags & NEEDLE_FLAG_HAS_LAST_MODIFIED)
		s += 5;
	if (n->flags & NEEDLE_FLAG_HAS_TTL)
		s += 2;
	if (n->flags & NEEDLE_FLAG_HAS_PAIRS)
		s += 2 + (uint64_t)n->pairs_len;
	return s > NEEDLE_MAX_BODY ? NEEDLE_MAX_BODY + 1 : (uint32_t)s;
}

static void enc_header(uint8_t *p, uint32_t cookie, uint64_t key, uint32_t size)
{
	put_be32(p, cookie);
	put_be64(p + 4, key);
	put_be32(p + 12, size);
}

static uint8_t *enc_tail_buf(struct needle_enc *e, size_t need)
{
	e->tail = need <= sizeof(e->small) ? e->small : xmalloc(need);
	return e->tail;
}

void needle_encode(struct needle *n, struct needle_enc *e)
{
	needle_encode_crc(n, n->data_size ? crc32c_update(0, n->data, n->data_size) : 0, e);
}

void needle_encode_crc(struct needle *n, uint32_t crc, struct needle_enc *e)
{
	size_t tail_len, pos = 0;
	uint32_t pad;
	uint8_t *t;

	n->size = needle_body_size(n);
	n->crc = crc;
	pad = needle_padding(n->size);
	/* tail: everything after the data */
	tail_len = n->size - 4 - n->data_size + NEEDLE_TRAILER_SIZE + pad;
	t = enc_tail_buf(e, tail_len);
	enc_header(e->head, n->cookie, n->key, n->size);
	put_be32(e->head + NEEDLE_HEADER_SIZE, n->data_size);
	t[pos++] = n->flags;
	if (n->flags & NEEDLE_FLAG_HAS_NAME) {
		t[pos++] = n->name_len;
		memcpy(t + pos, n->name, n->name_len);
		pos += n->name_len;
	}
	if (n->flags & NEEDLE_FLAG_HAS_MIME) {
		t[pos++] = n->mime_len;
		memcpy(t + pos, n->mime, n->mime_len);
		pos += n->mime_len;
	}
	if (n->flags & NEEDLE_FLAG_HAS_LAST_MODIFIED) {
		for (int i = 0; i < 5; i++)
			t[pos++] = (uint8_t)(n->last_modified >> (32 - 8 * i));
	}
	if (n->flags & NEEDLE_FLAG_HAS_TTL) {
		t[pos++] = n->ttl[0];
		t[pos++] = n->ttl[1];
	}
	if (n->flags & NEEDLE_FLAG_HAS_PAIRS) {
		put_be16(t + pos, n->pairs_len);
		pos += 2;
		memcpy(t + pos, n->pairs, n->pairs_len);
		pos += n->pairs_len;
	}
	put_be32(t + pos, n->crc);
	put_be64(t + pos + 4, n->append_ns);
	pos += NEEDLE_TRAILER_SIZE;
	memset(t + pos, 0, pad);
	pos += pad;
	e->iov[0].iov_base = e->head;
	e->iov[0].iov_len = sizeof(e->head);
	e->iov[1].iov_base = n->data ? (void *)n->data : (void *)"";
	e->iov[1].iov_len = n->data ? n->data_size : 0;
	e->iov[2].iov_base = t;
	e->iov[2].iov_len = pos;
	e->iovcnt = 3;
	e->total = sizeof(e->head) + n->data_size + pos; /* data included even when external */
}

void needle_encode_delete(uint32_t cookie, uint64_t key, uint64_t append_ns, struct needle_enc *e)
{
	uint32_t pad = needle_padding(0);
	uint8_t *t = enc_tail_buf(e, NEEDLE_TRAILER_SIZE + pad);

	enc_header(e->head, cookie, key, 0);
	put_be32(t, 0);
	put_be64(t + 4, append_ns);
	memset(t + NEEDLE_TRAILER_SIZE, 0, pad);
	e->iov[0].iov_base = e->head;
	e->iov[0].iov_len = NEEDLE_HEADER_SIZE;
	e->iov[1].iov_base = t;
	e->iov[1].iov_len = NEEDLE_TRAILER_SIZE + pad;
	e->iovcnt = 2;
	e->total = NEEDLE_HEADER_SIZE + NEEDLE_TRAILER_SIZE + pad;
}

void needle_enc_free(struct needle_enc *e)
{
	if (e->tail && e->tail != e->small)
		free(e->tail);
	e->tail = NULL;
}

void needle_parse_header(const uint8_t *p, uint32_t *cookie, uint64_t *key, uint32_t *size)
{
	*cookie = get_be32(p);
	*key = get_be64(p + 4);
	*size = get_be32(p + 12);
}

/* Parses the body fields after the data: flags, name, mime, last-modified, TTL, pairs. */
static wfs_err decode_fields(const uint8_t *b, const uint8_t *end, struct needle *n)
{
	if (b >= end)
		return WFS_ECORRUPT;
	n->flags = *b++;
	if (n->flags & NEEDLE_FLAG_HAS_NAME) {
		if (b >= end || end - b - 1 < *b)
			return WFS_ECORRUPT;
		n->name_len = *b++;
		n->name = (const char *)b;
		b += n->name_len;
	}
	if (n->flags & NEEDLE_FLAG_HAS_MIME) {
		if (b >= end || end - b - 1 < *b)
			return WFS_ECORRUPT;
		n->mime_len = *b++;
		n->mime = (const char *)b;
		b += n->mime_len;
	}
	if (n->flags & NEEDLE_FLAG_HAS_LAST_MODIFIED) {
		if (end - b < 5)
			return WFS_ECORRUPT;
		for (int i = 0; i < 5; i++)
			n->last_modified = n->last_modified << 8 | *b++;
	}
	if (n->flags & NEEDLE_FLAG_HAS_TTL) {
		if (end - b < 2)
			return WFS_ECORRUPT;
		n->ttl[0] = *b++;
		n->ttl[1] = *b++;
	}
	if (n->flags & NEEDLE_FLAG_HAS_PAIRS) {
		if (end - b < 2 || end - b - 2 < get_be16(b))
			return WFS_ECORRUPT;
		n->pairs_len = get_be16(b);
		n->pairs = b + 2;
	}
	return WFS_OK;
}

wfs_err needle_decode(const uint8_t *p, size_t len, bool check_crc, struct needle *n)
{
	const uint8_t *b, *end;
	wfs_err err;

	if (len < NEEDLE_HEADER_SIZE)
		return WFS_ECORRUPT;
	memset(n, 0, sizeof(*n));
	needle_parse_header(p, &n->cookie, &n->key, &n->size);
	if (n->size > NEEDLE_MAX_BODY ||
	    len < NEEDLE_HEADER_SIZE + (uint64_t)n->size + NEEDLE_TRAILER_SIZE)
		return WFS_ECORRUPT;
	b = p + NEEDLE_HEADER_SIZE;
	end = b + n->size;
	if (n->size > 0) {
		if (end - b < 5)
			return WFS_ECORRUPT;
		n->data_size = get_be32(b);
		b += 4;
		if ((uint64_t)(end - b) < (uint64_t)n->data_size + 1)
			return WFS_ECORRUPT;
		n->data = b;
		b += n->data_size;
		err = decode_fields(b, end, n);
		if (err)
			return err;
	}
	n->crc = get_be32(end);
	n->append_ns = get_be64(end + 4);
	if (check_crc && n->size > 0) {
		uint32_t crc = crc32c_update(0, n->data, n->data_size);
		if (!crc32c_stored_matches(n->crc, crc))
			return WFS_ECORRUPT;
		n->crc = crc; /* the plain value even when stored in the legacy form */
	}
	return WFS_OK;
}

wfs_err needle_decode_meta(const uint8_t *head, const uint8_t *tail, size_t tail_len,
			   struct needle *n)
{
	uint64_t after;
	const uint8_t *end;
	wfs_err err;

	memset(n, 0, sizeof(*n));
	needle_parse_header(head, &n->cookie, &n->key, &n->size);
	if (n->size < 5 || n->size > NEEDLE_MAX_BODY)
		return WFS_ECORRUPT;
	n->data_size = get_be32(head + NEEDLE_HEADER_SIZE);
	if ((uint64_t)n->data_size + 5 > n->size)
		return WFS_ECORRUPT;
	after = n->size - 4 - (uint64_t)n->data_size; /* fields after the data */
	if (tail_len < after + NEEDLE_TRAILER_SIZE)
		return WFS_ECORRUPT;
	end = tail + after;
	err = decode_fields(tail, end, n);
	if (err)
		return err;
	n->crc = get_be32(end);
	n->append_ns = get_be64(end + 4);
	return WFS_OK;
}

void idx_entry_decode(const uint8_t *p, uint64_t *key, uint32_t *offset, uint32_t *size)
{
	*key = get_be64(p);
	*offset = get_be32(p + 8);
	*size = get_be32(p + 12);
}
