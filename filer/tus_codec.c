/*
 * TUS session records: "TUS2" length offset touched tlen target mlen meta
 * chunk-list, big-endian. "TUS1" (before expiry existed) lacks touched.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "filer/tus_codec.h"
#include "util.h"

void tus_session_clear(struct tus_session *s)
{
	free(s->target);
	free(s->meta);
	filer_chunks_free(s->chunks, s->n);
	memset(s, 0, sizeof(*s));
}

void tus_session_encode(const struct tus_session *s, buf *out)
{
	uint8_t h[32];
	size_t tl = strlen(s->target), ml = strlen(s->meta);
	memcpy(h, "TUS2", 4);
	put_be64(h + 4, s->length);
	put_be64(h + 12, s->offset);
	put_be64(h + 20, (uint64_t)s->touched_ns);
	put_be32(h + 28, (uint32_t)tl);
	buf_append(out, h, 32);
	buf_append(out, s->target, tl);
	put_be32(h, (uint32_t)ml);
	buf_append(out, h, 4);
	buf_append(out, s->meta, ml);
	filer_chunk_list_encode(out, s->chunks, s->n);
}

/* A NUL-terminated copy of n bytes at *p; advances *p and *len. */
static char *take_str(const uint8_t **p, size_t *len, size_t n)
{
	char *s = xmalloc(n + 1);
	memcpy(s, *p, n);
	s[n] = '\0';
	*p += n;
	*len -= n;
	return s;
}

wfs_err tus_session_decode(const uint8_t *p, size_t len, struct tus_session *s)
{
	uint32_t tl, ml;
	size_t used, head;
	bool v2;
	memset(s, 0, sizeof(*s));
	if (len < 4)
		return WFS_ECORRUPT;
	v2 = !memcmp(p, "TUS2", 4);
	if (!v2 && memcmp(p, "TUS1", 4))
		return WFS_ECORRUPT;
	head = v2 ? 32 : 24;
	if (len < head)
		return WFS_ECORRUPT;
	s->length = get_be64(p + 4);
	s->offset = get_be64(p + 12);
	if (v2)
		s->touched_ns = (int64_t)get_be64(p + 20);
	tl = get_be32(p + head - 4);
	p += head;
	len -= head;
	if (tl == 0 || tl > FILER_PATH_MAX || len < (size_t)tl + 4 || s->offset > s->length ||
	    s->touched_ns < 0 || memchr(p, '\0', tl))
		goto bad;
	s->target = take_str(&p, &len, tl);
	ml = get_be32(p);
	p += 4;
	len -= 4;
	if (ml > TUS_META_MAX || len < ml || memchr(p, '\0', ml))
		goto bad;
	s->meta = take_str(&p, &len, ml);
	if (filer_chunk_list_decode(p, len, &used, &s->chunks, &s->n) || used != len)
		goto bad;
	return WFS_OK;
bad:
	tus_session_clear(s);
	return WFS_ECORRUPT;
}

bool tus_metadata_valid(const char *m)
{
	const char *p = m;
	if (strlen(m) > TUS_META_MAX)
		return false;
	if (!*p)
		return true;
	for (;;) {
		const char *k;
		while (*p == ' ')
			p++;
		k = p;
		while (*p > ' ' && *p < 127 && *p != ',')
			p++;
		if (p == k)
			return false;
		if (*p == ' ') {
			p++;
			while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
			       (*p >= '0' && *p <= '9') || *p == '+' || *p == '/' || *p == '=')
				p++;
		}
		while (*p == ' ')
			p++;
		if (!*p)
			return true;
		if (*p != ',')
			return false;
		p++;
	}
}
