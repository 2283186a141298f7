/*
 * Query-protocol form bodies (query_form.h).
 */
#include "config.h"
#include "s3/query_form.h"
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "http_util.h"
#include "util.h"

static char *decoded(const char *s, size_t n)
{
	buf b = BUF_INIT;
	if (!url_decode(s, n, true, &b)) {
		buf_free(&b);
		return NULL;
	}
	buf_append_byte(&b, '\0');
	return b.data;
}

void query_form_free(struct query_form *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->name[i]);
		free(f->value[i]);
	}
	f->n = 0;
}

bool query_form_parse(const char *body, size_t len, struct query_form *f, char *msg,
		      size_t msglen)
{
	const char *p = body ? body : "", *end = p + len;
	memset(f, 0, sizeof(*f));
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end, *eq;
		char *name, *value;
		if (stop == p) {
			p = stop + 1;
			continue;
		}
		eq = memchr(p, '=', (size_t)(stop - p));
		name = decoded(p, (size_t)((eq ? eq : stop) - p));
		value = eq ? decoded(eq + 1, (size_t)(stop - eq - 1)) : xstrdup("");
		if (!name || !value || f->n == QUERY_FORM_MAX) {
			msg_fail(msg, msglen,
				 "The form body does not decode or has more than %d parameters",
				 QUERY_FORM_MAX);
			goto bad;
		}
		if (query_form_get(f, name)) {
			msg_fail(msg, msglen, "Parameter %.64s is given twice", name);
			goto bad;
		}
		f->name[f->n] = name;
		f->value[f->n++] = value;
		p = stop + 1;
		continue;
	bad:
		free(name);
		free(value);
		query_form_free(f);
		return false;
	}
	return true;
}

const char *query_form_get(const struct query_form *f, const char *name)
{
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->name[i], name))
			return f->value[i];
	return NULL;
}

const char *query_form_unknown(const struct query_form *f, const char *const *known)
{
	for (size_t i = 0; i < f->n; i++) {
		bool ok = false;
		for (size_t k = 0; known[k] && !ok; k++)
			ok = !strcmp(known[k], f->name[i]);
		if (!ok)
			return f->name[i];
	}
	return NULL;
}
