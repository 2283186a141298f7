/* Lance Namespace identifiers: see lance_id.h. */
#include "config.h"
#include "catalog/lance_id.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/buf.h"
#include "lib/http_util.h"
#include "lib/util.h"

#define DEFAULT_DELIM "$"

void lance_id_free(struct lance_id *id)
{
	for (size_t i = 0; i < id->n; i++)
		free(id->parts[i]);
	id->n = 0;
}

static const char *delim_or_default(const char *delim)
{
	return delim && *delim ? delim : DEFAULT_DELIM;
}

bool lance_delimiter_ok(const char *delim)
{
	delim = delim_or_default(delim);
	return strlen(delim) <= LANCE_DELIM_MAX && !strchr(delim, '/');
}

/* Adds part (len bytes) to id unless empty; false with why when it cannot be one. */
static bool add_part(struct lance_id *id, const char *part, size_t len, char why[LANCE_WHY_MAX])
{
	if (!len)
		return true;
	if (memchr(part, '$', len)) {
		/* '$' is the default delimiter: a name holding it would mean two ids */
		snprintf(why, LANCE_WHY_MAX, "an identifier part may not hold '$'");
		return false;
	}
	if (id->n == LANCE_ID_PARTS_MAX) {
		snprintf(why, LANCE_WHY_MAX, "an identifier has at most %d parts",
			 LANCE_ID_PARTS_MAX);
		return false;
	}
	id->parts[id->n++] = xstrndup(part, len);
	return true;
}

bool lance_id_split(const char *text, size_t len, const char *delim, struct lance_id *id,
		    char why[LANCE_WHY_MAX])
{
	size_t dl;
	bool ok = true;

	id->n = 0;
	delim = delim_or_default(delim);
	dl = strlen(delim);
	if (!lance_delimiter_ok(delim)) {
		snprintf(why, LANCE_WHY_MAX, "the delimiter must be 1 to %d bytes without '/'",
			 LANCE_DELIM_MAX);
		return false;
	}
	if (memchr(text, '\0', len)) {
		snprintf(why, LANCE_WHY_MAX, "the identifier holds a NUL");
		return false;
	}
	for (size_t at = 0; ok && at < len;) {
		const char *p = text + at;
		const char *next = memmem(p, len - at, delim, dl);
		size_t plen = next ? (size_t)(next - p) : len - at;
		ok = add_part(id, p, plen, why);
		at += plen + (next ? dl : 0);
	}
	if (!ok)
		lance_id_free(id);
	return ok;
}

bool lance_id_parse(const char *raw, size_t len, const char *delim, struct lance_id *id,
		    char why[LANCE_WHY_MAX])
{
	bool ok;
	buf s;

	id->n = 0;
	buf_init(&s);
	if (!url_decode(raw, len, false, &s)) {
		snprintf(why, LANCE_WHY_MAX,
			 "the identifier is not valid percent-encoding, or holds a NUL");
		ok = false;
	} else {
		ok = lance_id_split(s.data ? s.data : "", s.len, delim, id, why);
	}
	buf_free(&s);
	return ok;
}

bool lance_id_equal(const struct lance_id *a, const struct lance_id *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->parts[i], b->parts[i]))
			return false;
	return true;
}

char *lance_id_join(const struct lance_id *id, size_t from, const char *delim)
{
	buf b;
	buf_init(&b);
	delim = delim_or_default(delim);
	for (size_t i = from; i < id->n; i++) {
		if (i > from)
			buf_append_str(&b, delim);
		buf_append_str(&b, id->parts[i]);
	}
	buf_append_byte(&b, '\0');
	return b.data;
}
