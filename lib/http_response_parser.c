#include "config.h"
#include <http_parser.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "http_response_parser.h"
#include "util.h"

#define DEFAULT_MAX_HEADER 65536
/* A server that keeps sending 1xx answers must not keep the client forever. */
#define MAX_INTERIM 32
/* Buffers grown past this by one large response are given back at the next begin. */
#define KEEP_BODY_CAP (1u << 20)
#define KEEP_HDR_CAP  4096

enum { CB_NONE, CB_FIELD, CB_VALUE };

struct hrp_parser {
	http_parser p;
	struct hrp_opts o;
	unsigned flags;
	uint64_t max_body;
	uint64_t body_len;
	int64_t content_length;
	int status;
	int interim;       /* 1xx answers skipped */
	bool interim_done; /* paused after a 1xx */
	int prefix;        /* bytes of "HTTP/" checked at the start of the message */
	size_t head_bytes; /* of the head being parsed, or of the trailers */
	bool started;      /* some byte of a response arrived */
	bool head_done;    /* the final response's head is complete */
	bool done;
	bool failed;
	bool keep_alive;
	const char *err; /* static */
	/* The header being assembled for on_header: name, NUL, value. */
	buf hdr;
	size_t hdr_nlen;
	int last_cb;
	buf body;
};

static int resp_fail(hrp_parser *r, const char *why)
{
	if (!r->err)
		r->err = why;
	return -1;
}

static int resp_count(hrp_parser *r, size_t len)
{
	r->head_bytes += len;
	if (r->head_bytes > r->o.max_header)
		return resp_fail(r,
				 r->head_done ? "trailers too large" : "response head too large");
	return 0;
}

/* Whether header callbacks of the current message go to the caller. */
static bool resp_reports(const hrp_parser *r)
{
	return r->o.on_header && !r->head_done && r->p.status_code >= 200;
}

static int resp_flush_header(hrp_parser *r)
{
	if (r->last_cb != CB_VALUE)
		return 0;
	char *v = r->hdr.data + r->hdr_nlen + 1;
	size_t vlen = r->hdr.len - r->hdr_nlen - 1;
	/* http-parser drops leading blanks of a value but keeps trailing ones. */
	while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	v[vlen] = '\0';
	r->last_cb = CB_NONE;
	/* Lenient http-parser lets a NUL through at the start of a value; the caller gets C
	 * strings, so such a header is refused rather than cut short. */
	if (memchr(r->hdr.data, '\0', r->hdr_nlen) || memchr(v, '\0', vlen))
		return resp_fail(r, "NUL byte in a header");
	if (!r->o.on_header(r->o.arg, r->hdr.data, r->hdr_nlen, v, vlen))
		return resp_fail(r, "rejected by caller");
	return 0;
}

static int on_message_begin(http_parser *p)
{
	hrp_parser *r = p->data;
	r->started = true;
	r->head_bytes = 0;
	r->last_cb = CB_NONE;
	return 0;
}

static int on_status(http_parser *p, const char *at, size_t len)
{
	(void)at;
	return resp_count(p->data, len);
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
	hrp_parser *r = p->data;
	if (resp_count(r, len))
		return -1;
	if (!resp_reports(r))
		return 0;
	if (r->last_cb != CB_FIELD) {
		if (resp_flush_header(r))
			return -1;
		buf_reset(&r->hdr);
		r->last_cb = CB_FIELD;
	}
	buf_append(&r->hdr, at, len);
	return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
	hrp_parser *r = p->data;
	if (resp_count(r, len))
		return -1;
	if (!resp_reports(r))
		return 0;
	if (r->last_cb != CB_VALUE) {
		r->hdr_nlen = r->hdr.len;
		buf_append_byte(&r->hdr, '\0');
		r->last_cb = CB_VALUE;
	}
	buf_append(&r->hdr, at, len);
	return 0;
}

/* Returns 0 to read the body, 1 when there is none, -1 on error (http-parser's protocol). */
static int on_headers_complete(http_parser *p)
{
	hrp_parser *r = p->data;
	int st = p->status_code;

	if (st < 100)
		return resp_fail(r, "bad status code");
	if (st == 101)
		return resp_fail(r, "unexpected 101 Switching Protocols");
	if (st < 200) {
		/* Interim: its message ends here and the real answer follows. */
		if (++r->interim > MAX_INTERIM)
			return resp_fail(r, "too many 1xx responses");
		return 1;
	}
	if (r->o.on_header && resp_flush_header(r))
		return -1;
	r->status = st;
	r->head_done = true;
	r->head_bytes = 0; /* trailers get their own budget */
	if (!(p->flags & F_CHUNKED) && p->content_length != ULLONG_MAX)
		r->content_length =
			p->content_length > INT64_MAX ? INT64_MAX : (int64_t)p->content_length;
	if ((r->flags & HRP_HEAD) || st == 204 || st == 304)
		return 1;
	if (r->content_length > 0) {
		if ((uint64_t)r->content_length > r->max_body)
			return resp_fail(r, "response body too large");
		if (!r->o.on_body && !(r->flags & HRP_DISCARD))
			buf_reserve(&r->body, (size_t)r->content_length);
	}
	return 0;
}

static int on_chunk_header(http_parser *p)
{
	hrp_parser *r = p->data;
	/* Fail on the declared size rather than after receiving it. */
	if (p->content_length > r->max_body - r->body_len)
		return resp_fail(r, "response body too large");
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
	hrp_parser *r = p->data;
	if (len > r->max_body - r->body_len)
		return resp_fail(r, "response body too large");
	r->body_len += len;
	if (r->flags & HRP_DISCARD)
		return 0;
	if (r->o.on_body) {
		if (!r->o.on_body(r->o.arg, at, len))
			return resp_fail(r, "rejected by caller");
		return 0;
	}
	buf_append(&r->body, at, len);
	return 0;
}

static int on_message_complete(http_parser *p)
{
	hrp_parser *r = p->data;
	if (!r->head_done) {
		/* A skipped 1xx: pause so feed() checks the next message's first bytes. */
		r->interim_done = true;
		http_parser_pause(p, 1);
		return 0;
	}
	r->keep_alive = http_should_keep_alive(p) != 0;
	r->done = true;
	/* Stop before a pipelined next response: it belongs to the next begin(). */
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings resp_settings = {
	.on_message_begin = on_message_begin,
	.on_status = on_status,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
	.on_chunk_header = on_chunk_header,
};

hrp_parser *hrp_new(const struct hrp_opts *o)
{
	hrp_parser *r = xcalloc(1, sizeof(*r));
	if (o)
		r->o = *o;
	if (!r->o.max_header)
		r->o.max_header = DEFAULT_MAX_HEADER;
	buf_init(&r->hdr);
	buf_init(&r->body);
	hrp_begin(r, 0, 0);
	return r;
}

void hrp_free(hrp_parser *r)
{
	if (!r)
		return;
	buf_free(&r->hdr);
	buf_free(&r->body);
	free(r);
}

void hrp_begin(hrp_parser *r, unsigned flags, uint64_t max_body)
{
	http_parser_init(&r->p, HTTP_RESPONSE);
	r->p.data = r;
	r->flags = flags;
	r->max_body = max_body;
	r->body_len = 0;
	r->content_length = -1;
	r->status = 0;
	r->interim = 0;
	r->interim_done = false;
	r->prefix = 0;
	r->head_bytes = 0;
	r->started = false;
	r->head_done = false;
	r->done = false;
	r->failed = false;
	r->keep_alive = false;
	r->err = NULL;
	r->last_cb = CB_NONE;
	r->hdr_nlen = 0;
	if (r->body.cap > KEEP_BODY_CAP && r->body.cap - 1 > max_body)
		buf_free(&r->body);
	else
		buf_reset(&r->body);
	if (r->hdr.cap > KEEP_HDR_CAP)
		buf_free(&r->hdr);
	else
		buf_reset(&r->hdr);
}

static enum hrp_result resp_failed(hrp_parser *r, const char *why)
{
	r->failed = true;
	if (!r->err)
		r->err = why;
	return HRP_ERROR;
}

/*
 * http-parser, as distributions build it (not strict), checks only the 'H' of
 * "HTTP/"; a client must not take any other bytes for a response. Looks at the
 * first bytes of a message (CR/LF before it are skipped by http-parser too).
 * Returns -1 on a mismatch.
 */
static int resp_check_prefix(hrp_parser *r, const char *d, size_t n)
{
	static const char want[] = "HTTP/";
	size_t i = 0;
	for (; i < n && r->prefix < 5; i++) {
		if (r->prefix == 0 && (d[i] == '\r' || d[i] == '\n'))
			continue;
		if (d[i] != want[r->prefix])
			return -1;
		r->prefix++;
	}
	return 0;
}

enum hrp_result hrp_feed(hrp_parser *r, const char *data, size_t len, size_t *used)
{
	*used = 0;
	if (r->failed)
		return HRP_ERROR;
	if (r->done)
		return HRP_DONE;
	if (len == 0) /* zero bytes would mean EOF to http-parser */
		return HRP_MORE;
	while (*used < len) {
		if (resp_check_prefix(r, data + *used, len - *used))
			return resp_failed(r, "not an HTTP/1.x response");
		*used += http_parser_execute(&r->p, &resp_settings, data + *used, len - *used);
		if (r->done)
			return HRP_DONE;
		enum http_errno e = HTTP_PARSER_ERRNO(&r->p);
		if (e == HPE_PAUSED && r->interim_done) {
			r->interim_done = false;
			r->prefix = 0;
			http_parser_pause(&r->p, 0);
			continue;
		}
		if (e != HPE_OK)
			return resp_failed(r, http_errno_description(e));
	}
	return HRP_MORE;
}

enum hrp_result hrp_eof(hrp_parser *r)
{
	if (r->failed)
		return HRP_ERROR;
	if (r->done)
		return HRP_DONE;
	if (!r->started)
		return resp_failed(r, "connection closed before a response");
	/* Ends a body that runs until close; any other state is truncated. */
	http_parser_execute(&r->p, &resp_settings, NULL, 0);
	if (r->done)
		return HRP_DONE;
	return resp_failed(r, "connection closed before the response ended");
}

int hrp_status(const hrp_parser *r) { return r->status; }

bool hrp_keep_alive(const hrp_parser *r) { return r->done && r->keep_alive; }

int64_t hrp_content_length(const hrp_parser *r) { return r->content_length; }

uint64_t hrp_body_len(const hrp_parser *r) { return r->body_len; }

const char *hrp_body(const hrp_parser *r, size_t *len)
{
	if (len)
		*len = r->body.len;
	/* buf_reserve() at the head may have left storage without a NUL yet. */
	return r->body.len ? r->body.data : "";
}

uint64_t hrp_body_pending(const hrp_parser *r)
{
	if (!r->head_done || r->done || r->failed || r->p.content_length == ULLONG_MAX)
		return 0;
	/* While a chunk-size line is read, content_length holds its digits so far. */
	return MIN(r->p.content_length, r->max_body - r->body_len);
}

const char *hrp_error(const hrp_parser *r) { return r->failed ? r->err : NULL; }
