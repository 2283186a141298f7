#include "config.h"
#include <http_parser.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "http_parse.h"
#include "http_util.h"
#include "util.h"

enum { CB_NONE, CB_FIELD, CB_VALUE };

static http_parse *hp_of(http_parser *p) { return p->data; }

static int hp_fail(http_parse *hp, int status)
{
	hp->error_status = status;
	return 1;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
	http_parse *hp = hp_of(p);
	hp->uri_len += len;
	if (hp->uri_len > hp->max_uri)
		return hp_fail(hp, 414);
	if (hp->uri_len > hp->max_header)
		return hp_fail(hp, 431);
	buf_append(&hp->strs, at, len);
	return 0;
}

static void hp_end_uri(http_parse *hp)
{
	/* The URI occupies strs from 0; terminate it once before the first header. */
	if (hp->last_cb == CB_NONE && hp->nraw == 0 && hp->strs.len == hp->uri_len)
		buf_append_byte(&hp->strs, '\0');
}

static int hp_count(http_parse *hp, size_t len)
{
	hp->head_bytes += len;
	if (hp->head_bytes + hp->uri_len > hp->max_header)
		return hp_fail(hp, 431);
	return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	http_parse *hp = hp_of(p);
	if (hp_count(hp, len))
		return 1;
	hp_end_uri(hp);
	if (hp->last_cb != CB_FIELD) {
		if (hp->last_cb == CB_VALUE)
			buf_append_byte(&hp->strs, '\0');
		if (hp->nraw == HP_MAX_HEADERS)
			return hp_fail(hp, 431);
		if (hp->nraw == hp->raw_cap) {
			hp->raw_cap = hp->raw_cap ? hp->raw_cap * 2 : 16;
			hp->raw = xrealloc(hp->raw, hp->raw_cap * sizeof(*hp->raw));
		}
		struct hp_raw *r = &hp->raw[hp->nraw++];
		r->noff = (uint32_t)hp->strs.len;
		r->nlen = 0;
		r->voff = 0;
		r->vlen = 0;
		hp->last_cb = CB_FIELD;
	}
	buf_append(&hp->strs, at, len);
	hp->raw[hp->nraw - 1].nlen += (uint32_t)len;
	return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	http_parse *hp = hp_of(p);
	if (hp_count(hp, len))
		return 1;
	if (hp->last_cb != CB_VALUE) {
		if (hp->last_cb != CB_FIELD) /* cannot happen with http-parser; be safe */
			return hp_fail(hp, 400);
		buf_append_byte(&hp->strs, '\0');
		hp->raw[hp->nraw - 1].voff = (uint32_t)hp->strs.len;
		hp->last_cb = CB_VALUE;
	}
	buf_append(&hp->strs, at, len);
	hp->raw[hp->nraw - 1].vlen += (uint32_t)len;
	return 0;
}

static int hp_method(unsigned m)
{
	switch (m) {
	case HTTP_GET:
		return HP_GET;
	case HTTP_HEAD:
		return HP_HEAD;
	case HTTP_POST:
		return HP_POST;
	case HTTP_PUT:
		return HP_PUT;
	case HTTP_DELETE:
		return HP_DELETE;
	case HTTP_OPTIONS:
		return HP_OPTIONS;
	case HTTP_PATCH:
		return HP_PATCH;
	default:
		return HP_OTHER;
	}
}

static void hp_grow_kv(struct hp_kv **a, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	size_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	*a = xrealloc(*a, c * sizeof(**a));
	*cap = c;
}

/* Appends the decoded form of s[0..n) to strs (room reserved by the caller), NUL-terminated;
 * falls back to the raw bytes when the escape is malformed. Returns the offset. */
static size_t hp_decode_param(http_parse *hp, const char *s, size_t n)
{
	size_t off = hp->strs.len;
	if (!url_decode(s, n, true, &hp->strs)) {
		hp->strs.len = off;
		buf_append(&hp->strs, s, n);
	}
	buf_append_byte(&hp->strs, '\0');
	return off;
}

/* Called once the head is complete: builds the pointer tables. Returns an HTTP status on error. */
static int hp_finish_head(http_parse *hp)
{
	http_parser *p = hp->p;
	size_t i, j, n = 0;

	if (hp->uri_len == 0)
		return 400;
	hp_end_uri(hp);
	if (hp->last_cb == CB_VALUE)
		buf_append_byte(&hp->strs, '\0');
	else if (hp->last_cb == CB_FIELD)
		return 400;

	/* Trim trailing blanks of values and join repeated headers into the first one. */
	for (i = 0; i < hp->nraw; i++) {
		struct hp_raw *r = &hp->raw[i];
		while (r->vlen && (hp->strs.data[r->voff + r->vlen - 1] == ' ' ||
				   hp->strs.data[r->voff + r->vlen - 1] == '\t'))
			r->vlen--;
		hp->strs.data[r->voff + r->vlen] = '\0';
	}
	for (i = 0; i < hp->nraw; i++) {
		struct hp_raw *r = &hp->raw[i];
		for (j = 0; j < n; j++) {
			struct hp_raw *q = &hp->raw[j];
			if (q->nlen == r->nlen &&
			    !strncasecmp(hp->strs.data + q->noff, hp->strs.data + r->noff, r->nlen))
				break;
		}
		if (j < n) {
			struct hp_raw *q = &hp->raw[j];
			size_t off = hp->strs.len;
			/* strs may move: copy via offsets only. */
			buf_reserve(&hp->strs, q->vlen + 2 + r->vlen + 1);
			buf_append(&hp->strs, hp->strs.data + q->voff, q->vlen);
			buf_append(&hp->strs, ", ", 2);
			buf_append(&hp->strs, hp->strs.data + r->voff, r->vlen);
			buf_append_byte(&hp->strs, '\0');
			q->voff = (uint32_t)off;
			q->vlen = (uint32_t)(hp->strs.len - off - 1);
		} else {
			hp->raw[n++] = *r;
		}
	}
	hp->nraw = n;

	/* Split the target: absolute-form "http://host/path" keeps only the path. */
	const char *uri = hp->strs.data;
	size_t ulen = hp->uri_len, poff = 0, plen, qoff, qlen = 0;
	if (uri[0] != '/' && uri[0] != '*') {
		const char *s = memchr(uri, ':', ulen);
		if (!s || s + 3 > uri + ulen || s[1] != '/' || s[2] != '/')
			return 400;
		const char *slash = memchr(s + 3, '/', (size_t)(uri + ulen - (s + 3)));
		const char *q = memchr(s + 3, '?', (size_t)(uri + ulen - (s + 3)));
		if (q && (!slash || q < slash))
			slash = NULL;
		poff = slash ? (size_t)(slash - uri) : ulen;
	}
	const char *qm = memchr(uri + poff, '?', ulen - poff);
	const char *hash = memchr(uri + poff, '#', ulen - poff);
	size_t end = hash ? (size_t)(hash - uri) : ulen;
	if (qm && (size_t)(qm - uri) < end) {
		plen = (size_t)(qm - uri) - poff;
		qoff = (size_t)(qm - uri) + 1;
		qlen = end - qoff;
	} else {
		plen = end - poff;
		qoff = end;
	}

	/* Room for the decoded path, the query copy and every decoded parameter, so the
	 * decoders below never move strs while reading from it. */
	buf_reserve(&hp->strs, 3 * ulen + 16);
	size_t path_off = hp->strs.len;
	if (plen == 0) {
		buf_append(&hp->strs, "/", 2);
	} else {
		if (!url_decode(hp->strs.data + poff, plen, false, &hp->strs))
			return 400;
		buf_append_byte(&hp->strs, '\0');
	}
	size_t query_off = hp->strs.len;
	buf_append(&hp->strs, hp->strs.data + qoff, qlen);
	buf_append_byte(&hp->strs, '\0');

	/* Parameters as offsets first (strs must not move while pointers exist). */
	size_t np = 0;
	const char *q = hp->strs.data + qoff, *qend = q + qlen;
	while (q < qend) {
		const char *amp = memchr(q, '&', (size_t)(qend - q));
		const char *e = amp ? amp : qend;
		if (e > q) {
			const char *eq = memchr(q, '=', (size_t)(e - q));
			const char *ne = eq ? eq : e;
			hp_grow_kv(&hp->params, &hp->param_cap, np + 1);
			size_t noff = hp_decode_param(hp, q, (size_t)(ne - q));
			size_t voff = eq ? hp_decode_param(hp, eq + 1, (size_t)(e - eq - 1))
					 : hp_decode_param(hp, "", 0);
			hp->params[np].name = (const char *)(uintptr_t)noff;
			hp->params[np].value = (const char *)(uintptr_t)voff;
			np++;
		}
		q = e + 1;
	}

	/* strs is final: turn offsets into pointers. */
	const char *base = hp->strs.data;
	for (i = 0; i < np; i++) {
		hp->params[i].name = base + (uintptr_t)hp->params[i].name;
		hp->params[i].value = base + (uintptr_t)hp->params[i].value;
	}
	hp->nparams = np;
	hp_grow_kv(&hp->headers, &hp->kv_cap, hp->nraw + 1);
	for (i = 0; i < hp->nraw; i++) {
		hp->headers[i].name = base + hp->raw[i].noff;
		hp->headers[i].value = base + hp->raw[i].voff;
	}
	hp->nheaders = hp->nraw;
	hp->uri = base;
	hp->path = base + path_off;
	hp->query = base + query_off;

	hp->method = hp_method(p->method);
	hp->method_str = http_method_str((enum http_method)p->method);
	hp->http_major = p->http_major;
	hp->http_minor = p->http_minor;
	hp->chunked = (p->flags & F_CHUNKED) != 0;
	hp->keep_alive = http_should_keep_alive(p) && !p->upgrade;
	if (!hp->chunked && (p->flags & F_CONTENTLENGTH)) {
		if (p->content_length > INT64_MAX)
			return 413;
		hp->content_length = (int64_t)p->content_length;
	} else {
		hp->content_length = -1;
	}
	hp->has_body = !p->upgrade && (hp->chunked || hp->content_length > 0);
	hp->expect_continue = false;
	for (i = 0; i < hp->nheaders; i++) {
		if (!strcasecmp(hp->headers[i].name, "expect")) {
			if (!strcasecmp(hp->headers[i].value, "100-continue"))
				hp->expect_continue = p->http_major == 1 && p->http_minor >= 1;
			else
				return 417;
		}
	}
	hp->head_done = true;
	return 0;
}

static int on_headers_complete(http_parser *p)
{
	http_parse *hp = hp_of(p);
	int st = hp_finish_head(hp);
	if (st)
		return hp_fail(hp, st), -1;
	/* A head with a body waits here for the handler; a body-less one ends at message_complete.
	 */
	if (hp->has_body)
		http_parser_pause(p, 1);
	else if (p->upgrade)
		return 1; /* no body; the server closes after the response */
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	http_parse *hp = hp_of(p);
	if (hp->on_body && !hp->on_body(hp->body_arg, at, len))
		http_parser_pause(p, 1);
	return 0;
}

static int on_message_complete(http_parser *p)
{
	http_parse *hp = hp_of(p);
	hp->msg_done = true;
	/* Stop before a pipelined next request: it waits until this response has ended. */
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings hp_settings = {
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

static void hp_reset(http_parse *hp)
{
	buf_reset(&hp->strs);
	hp->nraw = 0;
	hp->nheaders = 0;
	hp->nparams = 0;
	hp->uri_len = 0;
	hp->head_bytes = 0;
	hp->raw_bytes = 0;
	hp->last_cb = CB_NONE;
	hp->head_done = false;
	hp->msg_done = false;
	hp->has_body = false;
	hp->content_length = -1;
	hp->chunked = false;
	hp->keep_alive = false;
	hp->expect_continue = false;
	hp->uri = hp->path = hp->query = "";
	hp->method = HP_OTHER;
	hp->method_str = "";
}

void http_parse_init(http_parse *hp, size_t max_header, size_t max_uri)
{
	memset(hp, 0, sizeof(*hp));
	hp->p = xmalloc(sizeof(*hp->p));
	http_parser_init(hp->p, HTTP_REQUEST);
	hp->p->data = hp;
	hp->max_header = max_header;
	hp->max_uri = max_uri;
	buf_init(&hp->strs);
	hp_reset(hp);
}

void http_parse_free(http_parse *hp)
{
	if (!hp)
		return;
	free(hp->p);
	buf_free(&hp->strs);
	free(hp->raw);
	free(hp->headers);
	free(hp->params);
	hp->p = NULL;
	hp->raw = NULL;
	hp->headers = NULL;
	hp->params = NULL;
}

void http_parse_next(http_parse *hp)
{
	hp_reset(hp);
	/* Storage that one huge request grew is given back rather than kept per connection. */
	if (hp->strs.cap > 64 * 1024)
		buf_free(&hp->strs);
	if (HTTP_PARSER_ERRNO(hp->p) == HPE_PAUSED)
		http_parser_pause(hp->p, 0);
}

static int hp_status_for(enum http_errno e)
{
	switch (e) {
	case HPE_HEADER_OVERFLOW:
		return 431;
	default:
		return 400;
	}
}

size_t http_parse_feed(http_parse *hp, const char *data, size_t len, enum hp_event *ev)
{
	http_parser *p = hp->p;
	bool was_head = hp->head_done;
	size_t n;

	if (hp->failed) {
		*ev = HP_EV_ERROR;
		return 0;
	}
	if (len == 0 || (hp->msg_done)) {
		/* Zero bytes would mean EOF to http-parser; a finished message needs _next(). */
		*ev = hp->msg_done ? HP_EV_DONE : HP_EV_NEED_MORE;
		return 0;
	}
	if (HTTP_PARSER_ERRNO(p) == HPE_PAUSED)
		http_parser_pause(p, 0);
	n = http_parser_execute(p, &hp_settings, data, len);
	enum http_errno e = HTTP_PARSER_ERRNO(p);
	if (e != HPE_OK && e != HPE_PAUSED) {
		if (!hp->error_status)
			hp->error_status = hp_status_for(e);
		hp->failed = true;
		*ev = HP_EV_ERROR;
		return n;
	}
	if (!was_head && hp->head_done) {
		*ev = HP_EV_HEAD;
		return n;
	}
	if (!hp->head_done) {
		/* Blank lines and folding count too, so a head can never grow without bound. */
		hp->raw_bytes += n;
		if (hp->raw_bytes > hp->max_header + hp->max_uri + 4096) {
			hp->error_status = 431;
			hp->failed = true;
			*ev = HP_EV_ERROR;
			return n;
		}
	}
	if (hp->msg_done)
		*ev = HP_EV_DONE;
	else if (e == HPE_PAUSED)
		*ev = HP_EV_PAUSED;
	else
		*ev = HP_EV_NEED_MORE;
	return n;
}
