/*
 * DESIGN
 * - N loop threads, each with its own event_base and its own SO_REUSEPORT
 *   listening socket on the same port: the kernel spreads connections, and a
 *   connection lives on one loop for its whole life, so nothing here locks
 *   except the per-loop defer queue.
 * - One http_req per connection, embedded in it: requests on a connection are
 *   processed one at a time, pipelined ones wait in the input buffer (the
 *   parser pauses after each message). The request head's strings live in a
 *   buffer reused across requests (lib/http_parse.c).
 * - Lifetime: a connection is freed when its socket is closed, no request is
 *   active (its response has not ended), no deferred call is queued for it
 *   and no callback of ours is on the stack for it (busy). So a handler may
 *   finish long after the peer left; its output then goes nowhere.
 * - Re-entrancy: handlers run inside conn_process(); anything they do that
 *   needs processing (response ended, body wanted) only sets state, and the
 *   loop in conn_process() picks it up. Outside conn_process() (deferred
 *   calls) the same calls run conn_process() themselves.
 * - Back-pressure: the input buffer has a high watermark, so a paused body or
 *   a pipelining client stops reading from the socket; output above OUT_HIGH
 *   makes http_resp_write() return false, and the write callback fires the
 *   drain function once it falls to OUT_LOW.
 * - Lingering close: closing a socket that still has unread input makes Linux
 *   send a reset, and a client still sending (a body answered early with 413)
 *   sees its send fail before it reads the answer. So a connection we close
 *   after its answer, while the peer may still be sending, is handed to a
 *   struct lingering: the write side is shut (the answer ends with a FIN), what
 *   arrives is read and dropped, and the socket is closed at the peer's EOF or
 *   after LINGER_MS or LINGER_BYTES. It still counts as a connection. A peer
 *   whose EOF was read has nothing left unread: its socket is closed at once.
 */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include "bigbuf.h"
#include "http_parse.h"
#include "http_server.h"
#include "http_util.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "util.h"

_Static_assert((int)HTTP_GET == HP_GET && (int)HTTP_HEAD == HP_HEAD && (int)HTTP_POST == HP_POST &&
		       (int)HTTP_PUT == HP_PUT && (int)HTTP_DELETE == HP_DELETE &&
		       (int)HTTP_OPTIONS == HP_OPTIONS && (int)HTTP_PATCH == HP_PATCH &&
		       (int)HTTP_OTHER == HP_OTHER,
	       "enum http_method and enum hp_method must agree");

#define OUT_HIGH   (1u << 20)
#define OUT_LOW    (256u << 10)
#define IO_MAX     (256 << 10)
#define READ_PIECE (128u << 10) /* read_more's largest read */
#define BODY_KEEP  (1u << 20)   /* read_body storage kept per connection up to this */

#define LINGER_MS    5000          /* a lingering close waits for the peer's EOF this long */
#define LINGER_BYTES (64ull << 20) /* and drops at most this much of its input */
#define LINGER_READ  (64u << 10)

struct defer_item {
	struct http_req *c;
	http_defer_fn fn;
	void *arg;
	struct defer_item *next;
};

/* A closed connection's socket, dropping what the peer still sends (lingering close). */
struct lingering {
	struct loop *l;
	struct lingering *prev, *next; /* in l->lingers */
	struct event *ev;
	int fd;
	uint64_t left;        /* bytes still dropped before giving up */
	uint64_t deadline_ns; /* monotonic */
};

struct loop {
	http_server *s;
	struct event_base *base;
	struct evconnlistener *lis;
	pthread_t thread;
	bool started;
	int efd;
	struct event *wake;
	pthread_mutex_t lock;
	struct defer_item *head, *tail; /* protected by lock */
	bool stop;                      /* protected by lock */
	struct http_req *conns;         /* loop thread only */
	struct lingering *lingers;      /* loop thread only */
	char *scratch;                  /* loop thread only: LINGER_READ bytes of dropped input */
	const struct timeval *idle_tv;
	time_t date_sec;
	char date[40];
	void *data; /* the handler's (http_req_loop_data) */
};

struct http_server {
	struct http_server_opts o;
	char host[64];
	char thread_name[16]; /* o.thread_name's copy; "" for none */
	http_handler_fn handler;
	void *ctx;
	int port;
	int nloops;
	struct loop *loops;
	atomic_int nconns;
	/* opts.metrics_prefix's families, or NULL */
	metric *m_requests, *m_seconds, *m_in, *m_out;
};

enum req_state { RS_HANDLER, RS_BODY, RS_BODY_DONE };
enum body_mode { BM_NONE, BM_READ, BM_STREAM };

/* A connection and its current request: one and the same object. */
typedef struct http_req conn;
struct http_req {
	struct loop *l;
	struct bufferevent *bev; /* NULL once the socket is closed */
	conn *prev, *next;       /* in l->conns */
	char peer[INET6_ADDRSTRLEN];
	http_parse hp;
	int busy;          /* our frames on the stack holding it */
	atomic_int defers; /* queued deferred calls */
	bool in_process;
	bool closing;  /* close once the output is flushed */
	bool eof;      /* the peer closed its side (or we act as if: forces a close) */
	bool read_eof; /* its EOF was read: nothing it sent is left in the socket */

	/* the current request */
	bool req_active; /* dispatched, response not yet finished */
	enum req_state rstate;
	enum body_mode bmode;
	bool body_paused;
	bool continue_sent;
	wfs_err body_err; /* the body broke (limit, malformed, connection) */
	uint64_t body_limit, body_seen;
	http_body_fn body_done;
	http_data_fn on_data;
	http_end_fn on_end;
	void *body_arg;
	buf body;
	void *data;

	/* the response */
	bool resp_started, resp_ended, resp_chunked, resp_head_only, resp_close;
	bool resp_until_close;  /* HTTP/1.0 stream without length: the close delimits it */
	int64_t resp_remaining; /* declared Content-Length still owed, or -1 */
	buf resp_hdrs;
	buf out; /* scratch for building a head */
	http_drain_fn drain_fn;
	void *drain_arg;

	/* metrics of the current request */
	const char *route;
	uint64_t start_ns;
	int status;
	uint64_t bytes_in, bytes_out;
};

static void conn_process(conn *c);

/* ---- small helpers ---- */

static void conn_hold(conn *c) { c->busy++; }

static void conn_maybe_free(conn *c)
{
	if (c->bev || c->req_active || c->busy || c->in_process || atomic_load(&c->defers))
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		c->l->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	http_parse_free(&c->hp);
	buf_free(&c->body);
	buf_free(&c->resp_hdrs);
	buf_free(&c->out);
	free(c);
}

static void conn_release(conn *c)
{
	c->busy--;
	conn_maybe_free(c);
}

/* Closes the socket now; the object lives on while a request or callback needs it. */
static void drain_trampoline(http_req *c, void *arg);

static void conn_close(conn *c)
{
	if (!c->bev)
		return;
	bufferevent_free(c->bev);
	c->bev = NULL;
	atomic_fetch_sub(&c->l->s->nconns, 1);
	/* A producer waiting for drain would wait forever: let it run (its output goes nowhere). */
	if (c->req_active && c->drain_fn)
		http_req_defer(c, drain_trampoline, NULL);
}

static void linger_free(struct lingering *g)
{
	if (g->prev)
		g->prev->next = g->next;
	else
		g->l->lingers = g->next;
	if (g->next)
		g->next->prev = g->prev;
	event_free(g->ev);
	close(g->fd);
	atomic_fetch_sub(&g->l->s->nconns, 1);
	free(g);
}

/* Drops what the peer sent; ends the linger at its EOF, an error or a limit. */
static void linger_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lingering *g = arg;
	bool done = (what & EV_TIMEOUT) != 0;
	size_t taken = 0;
	uint64_t now;

	while (!done && taken < IO_MAX) {
		ssize_t n = recv(fd, g->l->scratch, LINGER_READ, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			done = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
			break;
		}
		taken += (size_t)n;
		done = (uint64_t)n >= g->left;
		g->left -= done ? g->left : (uint64_t)n;
	}
	now = time_mono_ns();
	if (done || now >= g->deadline_ns) {
		linger_free(g);
		return;
	}
	struct timeval tv = {(time_t)((g->deadline_ns - now) / 1000000000u),
			     (suseconds_t)((g->deadline_ns - now) % 1000000000u / 1000u)};
	event_add(g->ev, &tv);
}

/*
 * Closes c's socket once its answer is out (output flushed): with a lingering
 * close (DESIGN) unless the peer's EOF was read already (then nothing of its
 * input is left to cause a reset).
 */
static void conn_close_flushed(conn *c)
{
	struct loop *l = c->l;
	struct lingering *g;
	int fd;

	if (!c->bev || c->read_eof || (fd = dup(bufferevent_getfd(c->bev))) < 0) {
		conn_close(c);
		return;
	}
	atomic_fetch_add(&l->s->nconns, 1); /* the lingering socket counts */
	conn_close(c);                      /* the dup keeps the socket open */
	shutdown(fd, SHUT_WR);
	if (!l->scratch)
		l->scratch = xmalloc(LINGER_READ);
	g = xcalloc(1, sizeof(*g));
	g->l = l;
	g->fd = fd;
	g->left = LINGER_BYTES;
	g->deadline_ns = time_mono_ns() + LINGER_MS * 1000000ull;
	g->ev = event_new(l->base, fd, EV_READ, linger_cb, g);
	if (!g->ev)
		fatal("event_new failed");
	g->next = l->lingers;
	if (l->lingers)
		l->lingers->prev = g;
	l->lingers = g;
	linger_cb(fd, EV_READ, g); /* what already arrived; then it waits */
}

/*
 * Writes queued output now instead of waiting a loop round for EV_WRITE: for
 * small responses this saves two epoll_ctl calls and a wake-up per request.
 * EV_WRITE is enabled only while output remains (and disabled by write_cb).
 */
static void conn_flush(conn *c)
{
	struct evbuffer *out;
	if (!c->bev || (bufferevent_get_enabled(c->bev) & EV_WRITE))
		return;
	out = bufferevent_get_output(c->bev);
	if (evbuffer_get_length(out) == 0)
		return;
	/* A bufferevent keeps the front of its output frozen against draining by users. */
	evbuffer_unfreeze(out, 1);
	evbuffer_write_atmost(out, bufferevent_getfd(c->bev), IO_MAX);
	evbuffer_freeze(out, 1);
	/* Leftovers and errors alike are handled by the bufferevent from here. */
	if (evbuffer_get_length(out))
		bufferevent_enable(c->bev, EV_WRITE);
}

/* Output was queued outside conn_process(): push it out. */
static void conn_kick(conn *c)
{
	if (!c->in_process)
		conn_flush(c);
}

static void conn_close_after_flush(conn *c)
{
	c->closing = true;
	if (!c->bev)
		return;
	bufferevent_disable(c->bev, EV_READ);
	conn_flush(c);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		conn_close_flushed(c);
}

static const char *loop_date(struct loop *l)
{
	struct timeval tv;
	event_base_gettimeofday_cached(l->base, &tv);
	if (tv.tv_sec != l->date_sec) {
		l->date_sec = tv.tv_sec;
		http_date_format(tv.tv_sec, l->date, sizeof(l->date));
	}
	return l->date;
}

static void buf_add_u64(buf *b, uint64_t v)
{
	char t[24];
	int i = sizeof(t);
	do {
		t[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	buf_append(b, t + i, sizeof(t) - (size_t)i);
}

static void loop_push(struct loop *l, struct defer_item *d)
{
	bool wake;
	pthread_mutex_lock(&l->lock);
	wake = !l->head;
	if (l->tail)
		l->tail->next = d;
	else
		l->head = d;
	l->tail = d;
	pthread_mutex_unlock(&l->lock);
	if (wake) {
		uint64_t one = 1;
		ssize_t r = write(l->efd, &one, sizeof(one));
		(void)r; /* EAGAIN means a wake-up is already pending */
	}
}

/* ---- status ---- */

const char *http_status_text(int status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 101:
		return "Switching Protocols";
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 202:
		return "Accepted";
	case 204:
		return "No Content";
	case 206:
		return "Partial Content";
	case 301:
		return "Moved Permanently";
	case 302:
		return "Found";
	case 303:
		return "See Other";
	case 304:
		return "Not Modified";
	case 307:
		return "Temporary Redirect";
	case 308:
		return "Permanent Redirect";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 406:
		return "Not Acceptable";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 410:
		return "Gone";
	case 411:
		return "Length Required";
	case 412:
		return "Precondition Failed";
	case 413:
		return "Request Entity Too Large";
	case 414:
		return "Request URI Too Long";
	case 415:
		return "Unsupported Media Type";
	case 416:
		return "Requested Range Not Satisfiable";
	case 417:
		return "Expectation Failed";
	case 422:
		return "Unprocessable Entity";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 507:
		return "Insufficient Storage";
	default:
		return "Unknown";
	}
}

/* ---- response ---- */

static bool status_has_body(int status)
{
	return !(status < 200 || status == 204 || status == 304);
}

/*
 * Builds the head into c->out. clen >= 0: Content-Length; -1: chunked (or
 * close-delimited for HTTP/1.0); -2: no length (status without body).
 */
static void resp_build_head(conn *c, int status, int64_t clen)
{
	buf *h = &c->out;
	bool http10 = c->hp.http_major == 1 && c->hp.http_minor == 0;
	bool keep = c->hp.keep_alive && c->hp.msg_done && !c->eof && !c->closing && c->bev;

	if (clen == -1 && http10 && !c->resp_head_only) {
		c->resp_until_close = true;
		keep = false;
	}
	c->status = status;
	buf_reset(h);
	buf_append(h, "HTTP/1.1 ", 9);
	buf_add_u64(h, (uint64_t)(status > 0 && status < 1000 ? status : 500));
	buf_append_byte(h, ' ');
	buf_append_str(h, http_status_text(status));
	buf_append(h, "\r\nServer: weedfs\r\nDate: ", 24);
	buf_append_str(h, loop_date(c->l));
	buf_append(h, "\r\n", 2);
	if (clen >= 0) {
		buf_append(h, "Content-Length: ", 16);
		buf_add_u64(h, (uint64_t)clen);
		buf_append(h, "\r\n", 2);
	} else if (clen == -1 && !c->resp_until_close) {
		buf_append(h, "Transfer-Encoding: chunked\r\n", 28);
		c->resp_chunked = true;
	}
	if (!keep)
		buf_append(h, "Connection: close\r\n", 19);
	else if (http10)
		buf_append(h, "Connection: keep-alive\r\n", 24);
	if (c->resp_hdrs.len)
		buf_append(h, c->resp_hdrs.data, c->resp_hdrs.len);
	buf_append(h, "\r\n", 2);
	c->resp_close = !keep;
}

static struct evbuffer *conn_out(conn *c) { return c->bev ? bufferevent_get_output(c->bev) : NULL; }

void http_resp_header(http_req *c, const char *name, const char *value)
{
	size_t start = c->resp_hdrs.len;
	if (c->resp_started)
		return;
	buf_append_str(&c->resp_hdrs, name);
	buf_append(&c->resp_hdrs, ": ", 2);
	buf_append_str(&c->resp_hdrs, value);
	/* No header splitting: CR and LF become spaces. */
	for (size_t i = start; i < c->resp_hdrs.len; i++)
		if (c->resp_hdrs.data[i] == '\r' || c->resp_hdrs.data[i] == '\n')
			c->resp_hdrs.data[i] = ' ';
	buf_append(&c->resp_hdrs, "\r\n", 2);
}

/* The response is complete: let conn_process() finish the request. */
static void resp_finish(conn *c)
{
	c->resp_ended = true;
	conn_hold(c);
	conn_process(c);
	conn_release(c);
}

void http_resp_send(http_req *c, int status, const void *body, size_t len)
{
	struct evbuffer *out;
	if (!c->req_active || c->resp_started)
		return;
	c->resp_started = true;
	c->resp_head_only = c->hp.method == HP_HEAD || !status_has_body(status);
	resp_build_head(c, status, status_has_body(status) ? (int64_t)len : -2);
	out = conn_out(c);
	if (out) {
		if (!c->resp_head_only && len <= 4096) {
			/* One copy into the output for small responses. */
			buf_append(&c->out, body, len);
			evbuffer_add(out, c->out.data, c->out.len);
		} else {
			evbuffer_add(out, c->out.data, c->out.len);
			if (!c->resp_head_only && len)
				evbuffer_add(out, body, len);
		}
		c->bytes_out += c->out.len + (c->resp_head_only || len <= 4096 ? 0 : len);
	}
	resp_finish(c);
}

void http_resp_send_json(http_req *c, int status, const buf *b)
{
	http_resp_header(c, "Content-Type", "application/json");
	http_resp_send(c, status, b->data ? b->data : "", b->len);
}

static void resp_error_msg(http_req *c, int status, const char *msg)
{
	buf b = BUF_INIT;
	json_w *w;
	if (c->l->s->o.error_answer) {
		c->l->s->o.error_answer(c, status, msg, c->l->s->ctx);
		return;
	}
	w = jw_new(&b, false);
	jw_obj_begin(w);
	jw_kv_str(w, "error", msg);
	jw_obj_end(w);
	jw_free(w);
	http_resp_send_json(c, status, &b);
	buf_free(&b);
}

void http_resp_error(http_req *c, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	resp_error_msg(c, status, msg);
}

void http_resp_start(http_req *c, int status, int64_t content_length)
{
	struct evbuffer *out;
	if (!c->req_active || c->resp_started)
		return;
	c->resp_started = true;
	c->resp_head_only = c->hp.method == HP_HEAD || !status_has_body(status);
	if (!status_has_body(status))
		content_length = -2;
	c->resp_remaining = content_length >= 0 ? content_length : -1;
	resp_build_head(c, status, content_length < -1 ? -2 : content_length);
	if (c->resp_head_only)
		c->resp_chunked = false;
	out = conn_out(c);
	if (out) {
		evbuffer_add(out, c->out.data, c->out.len);
		c->bytes_out += c->out.len;
		conn_kick(c);
	}
}

bool http_resp_write(http_req *c, const void *data, size_t len)
{
	struct evbuffer *out = conn_out(c);
	if (!c->resp_started || c->resp_ended || c->resp_head_only || !out || len == 0)
		return !out || evbuffer_get_length(out) < OUT_HIGH;
	if (c->resp_remaining >= 0) {
		if ((uint64_t)len > (uint64_t)c->resp_remaining) {
			len = (size_t)c->resp_remaining; /* more than declared: drop and close */
			c->resp_close = true;
		}
		c->resp_remaining -= (int64_t)len;
		if (len)
			evbuffer_add(out, data, len);
	} else if (c->resp_chunked) {
		char hex[20];
		int n = snprintf(hex, sizeof(hex), "%zx\r\n", len);
		evbuffer_add(out, hex, (size_t)n);
		evbuffer_add(out, data, len);
		evbuffer_add(out, "\r\n", 2);
	} else {
		evbuffer_add(out, data, len);
	}
	c->bytes_out += len;
	conn_kick(c);
	return evbuffer_get_length(out) < OUT_HIGH;
}

static void take_cleanup(const void *data, size_t len, void *arg)
{
	(void)len, (void)arg;
	bigbuf_put((void *)data);
}

bool http_resp_write_take(http_req *c, void *data, size_t len)
{
	struct evbuffer *out = conn_out(c);
	if (!c->resp_started || c->resp_ended || c->resp_head_only || !out || len == 0 ||
	    c->resp_remaining < 0 || (uint64_t)len > (uint64_t)c->resp_remaining) {
		bool more = http_resp_write(c, data, len);
		bigbuf_put(data);
		return more;
	}
	c->resp_remaining -= (int64_t)len;
	evbuffer_add_reference(out, data, len, take_cleanup, NULL);
	c->bytes_out += len;
	conn_kick(c);
	return evbuffer_get_length(out) < OUT_HIGH;
}

static void drain_trampoline(http_req *c, void *arg)
{
	http_drain_fn fn = c->drain_fn;
	(void)arg;
	if (!fn || !c->req_active)
		return;
	c->drain_fn = NULL;
	fn(c, c->drain_arg);
}

void http_resp_on_drain(http_req *c, http_drain_fn fn, void *arg)
{
	struct evbuffer *out = conn_out(c);
	c->drain_fn = fn;
	c->drain_arg = arg;
	/* Already drained (or nowhere to write): call back soon, never re-entrantly. */
	if (fn && (!out || evbuffer_get_length(out) <= OUT_LOW))
		http_req_defer(c, drain_trampoline, NULL);
}

void http_resp_end(http_req *c)
{
	struct evbuffer *out = conn_out(c);
	if (!c->req_active || c->resp_ended)
		return;
	if (!c->resp_started) {
		http_resp_send(c, 200, NULL, 0);
		return;
	}
	if (c->resp_remaining > 0 && !c->resp_head_only)
		c->resp_close = true; /* less than declared: only a close tells the client */
	else if (c->resp_chunked && out)
		evbuffer_add(out, "0\r\n\r\n", 5);
	if (c->resp_until_close)
		c->resp_close = true;
	resp_finish(c);
}

void http_resp_abort(http_req *c)
{
	if (!c->req_active || c->resp_ended)
		return;
	if (!c->resp_started) {
		c->eof = true; /* forces "Connection: close" */
		resp_error_msg(c, 500, "aborted");
		return;
	}
	c->resp_close = true;
	resp_finish(c);
}

/* ---- request accessors ---- */

enum http_method http_req_method(const http_req *c) { return (enum http_method)c->hp.method; }
const char *http_req_method_str(const http_req *c) { return c->hp.method_str; }
const char *http_req_path(const http_req *c) { return c->hp.path; }
const char *http_req_uri(const http_req *c) { return c->hp.uri; }
const char *http_req_query_string(const http_req *c) { return c->hp.query; }

const char *http_req_query(const http_req *c, const char *name)
{
	for (size_t i = 0; i < c->hp.nparams; i++)
		if (!strcmp(c->hp.params[i].name, name))
			return c->hp.params[i].value;
	return NULL;
}

bool http_req_query_at(const http_req *c, size_t i, const char **name, const char **value)
{
	if (i >= c->hp.nparams)
		return false;
	*name = c->hp.params[i].name;
	*value = c->hp.params[i].value;
	return true;
}

const char *http_req_header(const http_req *c, const char *name)
{
	for (size_t i = 0; i < c->hp.nheaders; i++)
		if (!strcasecmp(c->hp.headers[i].name, name))
			return c->hp.headers[i].value;
	return NULL;
}

bool http_req_header_at(const http_req *c, size_t i, const char **name, const char **value)
{
	if (i >= c->hp.nheaders)
		return false;
	*name = c->hp.headers[i].name;
	*value = c->hp.headers[i].value;
	return true;
}

int64_t http_req_content_length(const http_req *c) { return c->hp.content_length; }
const char *http_req_peer(const http_req *c) { return c->peer; }
bool http_req_closed(const http_req *c) { return !c->bev || c->eof; }
void http_req_set_data(http_req *c, void *data) { c->data = data; }
void *http_req_data(const http_req *c) { return c->data; }

/* ---- request body ---- */

/* Body bytes from the parser (inside http_parse_feed). false pauses the parser. */
static bool conn_on_body(void *arg, const char *data, size_t len)
{
	conn *c = arg;
	if (c->resp_ended || c->body_err)
		return false;
	c->body_seen += len;
	if (c->body_seen > c->body_limit) {
		c->body_err = WFS_ETOOBIG;
		return false;
	}
	if (c->bmode == BM_READ) {
		buf_append(&c->body, data, len);
		return true;
	}
	if (!c->on_data(c, data, len, c->body_arg)) {
		c->body_paused = true;
		return false;
	}
	return !c->body_paused;
}

static void body_begin(conn *c, enum body_mode mode, uint64_t limit)
{
	struct evbuffer *out = conn_out(c);
	if (!c->req_active || c->bmode != BM_NONE || c->resp_ended)
		return;
	c->bmode = mode;
	c->body_limit = limit;
	c->body_seen = 0;
	c->rstate = RS_BODY;
	if (c->hp.content_length >= 0 && (uint64_t)c->hp.content_length > limit)
		c->body_err = WFS_ETOOBIG; /* refused before a byte is sent: no 100 Continue */
	else if (c->hp.expect_continue && !c->hp.msg_done && !c->continue_sent && out) {
		evbuffer_add(out, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		c->continue_sent = true;
		conn_kick(c);
	}
	conn_hold(c);
	conn_process(c);
	conn_release(c);
}

void http_req_read_body(http_req *c, size_t limit, http_body_fn done, void *arg)
{
	c->body_done = done;
	c->body_arg = arg;
	buf_reset(&c->body);
	body_begin(c, BM_READ, limit);
}

void http_req_stream_body(http_req *c, uint64_t limit, http_data_fn on_data, http_end_fn on_end,
			  void *arg)
{
	c->on_data = on_data;
	c->on_end = on_end;
	c->body_arg = arg;
	body_begin(c, BM_STREAM, limit);
}

void http_req_resume_body(http_req *c)
{
	if (!c->body_paused)
		return;
	c->body_paused = false;
	conn_hold(c);
	conn_process(c);
	conn_release(c);
}

struct event_base *http_req_event_base(const http_req *c) { return c->l->base; }

void **http_req_loop_data(http_req *c) { return &c->l->data; }

void http_req_set_route(http_req *c, const char *route) { c->route = route; }

const char *http_route_of(const char *const *routes, const char *path)
{
	for (; *routes; routes++)
		if (!strcmp(*routes, path))
			return *routes;
	return "other";
}

void http_req_defer(http_req *c, http_defer_fn fn, void *arg)
{
	struct defer_item *d = xmalloc(sizeof(*d));
	d->c = c;
	d->fn = fn;
	d->arg = arg;
	d->next = NULL;
	atomic_fetch_add(&c->defers, 1);
	loop_push(c->l, d);
}

/* ---- connection processing ---- */

/* Feeds buffered input to the parser until it stops; drains what it consumed. */
static enum hp_event conn_feed(conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	enum hp_event ev = HP_EV_NEED_MORE;
	while (ev == HP_EV_NEED_MORE && evbuffer_get_length(in)) {
		struct evbuffer_iovec v[8];
		int n = evbuffer_peek(in, -1, NULL, v, 8);
		size_t used = 0;
		for (int i = 0; i < n && i < 8; i++) {
			size_t k = http_parse_feed(&c->hp, v[i].iov_base, v[i].iov_len, &ev);
			used += k;
			c->bytes_in += k;
			if (ev != HP_EV_NEED_MORE)
				break;
		}
		/* The socket may have been closed by a callback (bufferevent_free defers its
		 * frees). */
		if (!c->bev)
			return ev == HP_EV_NEED_MORE ? HP_EV_PAUSED : ev;
		evbuffer_drain(in, used);
		if (used == 0)
			break;
	}
	return ev;
}

/* Answers a request whose head could not be parsed, then closes. */
static void conn_head_error(conn *c, int status)
{
	const char *msg = status == 431   ? "request header fields too large"
			  : status == 414 ? "request uri too long"
			  : status == 413 ? "request entity too large"
			  : status == 417 ? "expectation failed"
					  : "bad request";
	/* Reuse the response path with a synthetic active request. */
	c->start_ns = time_mono_ns();
	c->req_active = true;
	c->rstate = RS_HANDLER;
	c->eof = true; /* forces "Connection: close" */
	c->hp.method = HP_OTHER;
	resp_error_msg(c, status, msg);
}

static void req_reset(conn *c)
{
	c->req_active = false;
	c->rstate = RS_HANDLER;
	c->bmode = BM_NONE;
	c->body_paused = false;
	c->continue_sent = false;
	c->body_err = WFS_OK;
	c->body_limit = c->body_seen = 0;
	c->body_done = NULL;
	c->on_data = NULL;
	c->on_end = NULL;
	c->body_arg = NULL;
	c->data = NULL;
	c->resp_started = c->resp_ended = c->resp_chunked = false;
	c->resp_head_only = c->resp_close = c->resp_until_close = false;
	c->resp_remaining = -1;
	c->drain_fn = NULL;
	c->drain_arg = NULL;
	c->route = NULL;
	c->status = 0;
	c->bytes_in = c->bytes_out = 0;
	buf_reset(&c->resp_hdrs);
	if (c->body.cap > BODY_KEEP)
		buf_free(&c->body);
	else
		buf_reset(&c->body);
}

static const char *const method_names[] = {"GET",    "HEAD",    "POST",  "PUT",
					   "DELETE", "OPTIONS", "PATCH", "OTHER"};

/* Counts the finished request in the server's metrics; a dropped one (no answer) too, as 0. */
static void conn_record(conn *c)
{
	http_server *s = c->l->s;
	const char *method = method_names[c->hp.method <= HP_OTHER ? c->hp.method : HP_OTHER];
	const char *route = c->route ? c->route : "other";
	char code[8];

	snprintf(code, sizeof(code), "%d", c->status);
	metric_inc(metric_at(s->m_requests, method, route, code));
	metric_observe(metric_at(s->m_seconds, method, route),
		       (double)(time_mono_ns() - c->start_ns) / 1e9);
	metric_add(metric_at(s->m_in, route), c->bytes_in);
	metric_add(metric_at(s->m_out, route), c->bytes_out);
}

/* The response has ended: keep the connection for the next request, or close it. */
static void conn_finish_req(conn *c)
{
	bool keep = c->bev && !c->resp_close && c->hp.msg_done && !c->closing;
	if (c->l->s->m_requests)
		conn_record(c);
	req_reset(c);
	if (!keep) {
		conn_close_after_flush(c);
		return;
	}
	http_parse_next(&c->hp);
}

/* Delivers the end of the body (complete or failed) to whoever asked for it. */
static void conn_body_end(conn *c)
{
	c->rstate = RS_BODY_DONE;
	if (c->bmode == BM_READ) {
		if (c->body_err == WFS_ETOOBIG)
			http_resp_error(c, 413, "request body too large");
		else if (c->body_err == WFS_EINVAL)
			http_resp_error(c, 400, "malformed request body");
		else if (c->body_err) {
			/* The peer is gone: drop the request without a response. */
			c->resp_close = true;
			c->resp_ended = true;
		} else {
			c->body_done(c, c->body.data ? c->body.data : "", c->body.len, c->body_arg);
		}
	} else {
		c->on_end(c, c->body_err, c->body_arg);
	}
}

/* Whether c's body still wants bytes: not failed, not complete, not paused. */
static bool body_reading(const conn *c)
{
	return !c->body_err && !c->hp.msg_done && !c->body_paused;
}

static void conn_process(conn *c)
{
	if (c->in_process)
		return;
	c->in_process = true;
	for (;;) {
		if (c->req_active && c->resp_ended) {
			conn_finish_req(c);
			continue;
		}
		if (!c->bev || c->closing)
			break;
		struct evbuffer *in = bufferevent_get_input(c->bev);
		if (!c->req_active) {
			enum hp_event ev = evbuffer_get_length(in) ? conn_feed(c) : HP_EV_NEED_MORE;
			if (ev == HP_EV_ERROR) {
				conn_head_error(c, c->hp.error_status);
				continue;
			}
			if (ev == HP_EV_HEAD) {
				if (c->l->s->m_requests)
					c->start_ns = time_mono_ns();
				c->req_active = true;
				c->rstate = RS_HANDLER;
				c->l->s->handler(c, c->l->s->ctx);
				continue;
			}
			if (c->eof)
				conn_close_after_flush(c); /* nothing more will come */
			break;
		}
		if (c->rstate != RS_BODY)
			break; /* the handler has it */
		if (body_reading(c) && evbuffer_get_length(in)) {
			enum hp_event ev = conn_feed(c);
			if (ev == HP_EV_ERROR)
				c->body_err = c->hp.error_status == 413 ? WFS_ETOOBIG : WFS_EINVAL;
		}
		/* checked after the feed too: libevent reports the EOF once, and the
		   last bytes may have waited behind a paused body until now */
		if (body_reading(c) && c->eof && !evbuffer_get_length(in))
			c->body_err = WFS_EIO;
		if (c->body_err || c->hp.msg_done) {
			conn_body_end(c);
			continue;
		}
		break; /* waiting for data or for resume */
	}
	c->in_process = false;
	conn_flush(c);
}

/*
 * libevent 2.1 reads at most 4 KiB per readable event (its EVBUFFER_MAX_READ),
 * so a 64 MiB body took 16,384 loop turns, each with a FIONREAD and a readv.
 * After libevent's read, this takes what else the socket holds, up to the
 * input's high watermark (back-pressure still holds) and IO_MAX in all (the
 * loop's other connections get their turn). EOF and errors are left for
 * libevent's next read to report.
 */
static void read_more(struct bufferevent *bev)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	int fd = bufferevent_getfd(bev);
	size_t high = 0, taken = 0;

	bufferevent_getwatermark(bev, EV_READ, NULL, &high);
	evbuffer_unfreeze(in, 0); /* bufferevents keep their input's end frozen between reads */
	while (taken < IO_MAX) {
		size_t len = evbuffer_get_length(in), want = MIN(READ_PIECE, IO_MAX - taken);
		struct evbuffer_iovec v;
		ssize_t n;

		if (high && len >= high)
			break;
		if (high)
			want = MIN(want, high - len);
		if (evbuffer_reserve_space(in, (ev_ssize_t)want, &v, 1) != 1)
			break;
		n = recv(fd, v.iov_base, want, MSG_DONTWAIT);
		v.iov_len = n > 0 ? (size_t)n : 0;
		evbuffer_commit_space(in, &v, n > 0 ? 1 : 0);
		if (n <= 0)
			break;
		taken += (size_t)n;
		if ((size_t)n < want)
			break; /* the socket is drained */
	}
	evbuffer_freeze(in, 0);
}

/* libevent 2.1's largest read (EVBUFFER_MAX_READ); it reads less only when FIONREAD said less */
#define LIBEVENT_READ 4096

static void read_cb(struct bufferevent *bev, void *arg)
{
	conn *c = arg;
	conn_hold(c);
	/* input under LIBEVENT_READ in all: libevent's read took all the socket held, and a
	   recv would only say EAGAIN (a syscall per small request) */
	if (evbuffer_get_length(bufferevent_get_input(bev)) >= LIBEVENT_READ)
		read_more(bev);
	conn_process(c);
	conn_release(c);
}

static void write_cb(struct bufferevent *bev, void *arg)
{
	conn *c = arg;
	conn_hold(c);
	if (c->drain_fn && c->req_active &&
	    evbuffer_get_length(bufferevent_get_output(bev)) <= OUT_LOW) {
		http_drain_fn fn = c->drain_fn;
		c->drain_fn = NULL;
		fn(c, c->drain_arg);
	}
	if (c->bev && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		if (c->closing)
			conn_close_flushed(c);
		else
			bufferevent_disable(c->bev, EV_WRITE);
	}
	conn_release(c);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
	conn *c = arg;
	conn_hold(c);
	if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_WRITING)) {
		conn_close(c); /* the peer stopped reading */
	} else if (what & BEV_EVENT_TIMEOUT) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) && !c->closing) {
			bufferevent_enable(bev, EV_READ); /* still sending: not idle */
		} else if (!c->req_active || (c->rstate == RS_BODY && !c->body_paused)) {
			/* Idle, or a body that stopped arriving. */
			if (c->req_active && !c->hp.msg_done) {
				c->body_err = WFS_ETIMEDOUT;
				conn_process(c);
			}
			conn_close(c);
		} else {
			bufferevent_enable(bev, EV_READ); /* the handler is busy: not idle */
		}
	} else if (what & BEV_EVENT_EOF) {
		c->eof = c->read_eof = true;
		conn_process(c);
		if (!c->req_active)
			conn_close_after_flush(c);
	} else if (what & BEV_EVENT_ERROR) {
		c->eof = true;
		conn_close(c);
		if (c->req_active && c->rstate == RS_BODY && !c->hp.msg_done && !c->body_err) {
			c->body_err = WFS_EIO;
			conn_body_end(c);
			conn_process(c);
		}
	}
	conn_release(c);
}

static void accept_cb(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	struct loop *l = arg;
	http_server *s = l->s;
	int one = 1;
	(void)lis;
	(void)salen;

	if (atomic_fetch_add(&s->nconns, 1) >= s->o.max_connections) {
		atomic_fetch_sub(&s->nconns, 1);
		close(fd);
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	conn *c = xcalloc(1, sizeof(*c));
	c->l = l;
	atomic_init(&c->defers, 0);
	if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, c->peer,
			  sizeof(c->peer));
	else
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, c->peer, sizeof(c->peer));
	http_parse_init(&c->hp, s->o.max_header_bytes, s->o.max_uri_bytes);
	c->hp.on_body = conn_on_body;
	c->hp.body_arg = c;
	req_reset(c);
	c->bev = bufferevent_socket_new(l->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!c->bev) {
		close(fd);
		atomic_fetch_sub(&s->nconns, 1);
		http_parse_free(&c->hp);
		free(c);
		return;
	}
	c->next = l->conns;
	if (l->conns)
		l->conns->prev = c;
	l->conns = c;
	bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
	bufferevent_set_timeouts(c->bev, l->idle_tv, l->idle_tv);
	bufferevent_setwatermark(c->bev, EV_READ, 0, s->o.max_header_bytes + IO_MAX);
	bufferevent_setwatermark(c->bev, EV_WRITE, OUT_LOW, 0);
	bufferevent_set_max_single_read(c->bev, IO_MAX);
	bufferevent_set_max_single_write(c->bev, IO_MAX);
	/* EV_WRITE is on by default; conn_flush() turns it on only while output is pending. */
	bufferevent_disable(c->bev, EV_WRITE);
	bufferevent_enable(c->bev, EV_READ);
}

/* ---- loops ---- */

static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loop *l = arg;
	struct defer_item *d;
	uint64_t v;
	bool stop;
	ssize_t r = read(fd, &v, sizeof(v));
	(void)r;
	(void)what;
	pthread_mutex_lock(&l->lock);
	d = l->head;
	l->head = l->tail = NULL;
	stop = l->stop;
	pthread_mutex_unlock(&l->lock);
	while (d) {
		struct defer_item *next = d->next;
		conn *c = d->c;
		conn_hold(c);
		atomic_fetch_sub(&c->defers, 1);
		d->fn(c, d->arg);
		conn_release(c);
		free(d);
		d = next;
	}
	if (stop)
		event_base_loopbreak(l->base);
}

static void *loop_main(void *arg)
{
	struct loop *l = arg;
	event_base_dispatch(l->base);
	return NULL;
}

static int listen_socket(const struct addrinfo *ai, bool reuseport, wfs_err *err)
{
	int one = 1;
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*err = wfs_err_from_errno(errno);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (reuseport)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || (reuseport && listen(fd, 1024) < 0)) {
		*err = errno == EADDRINUSE ? WFS_EEXIST : wfs_err_from_errno(errno);
		log_error("could not listen on port: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int addr_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -1;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void loop_destroy(struct loop *l)
{
	struct defer_item *d, *next;
	conn *c, *cn;
	if (l->data && l->s->o.loop_data_free)
		l->s->o.loop_data_free(l->data, l->s->ctx);
	l->data = NULL;
	for (c = l->conns; c; c = cn) {
		cn = c->next;
		if (c->bev)
			bufferevent_free(c->bev);
		http_parse_free(&c->hp);
		buf_free(&c->body);
		buf_free(&c->resp_hdrs);
		buf_free(&c->out);
		free(c);
	}
	l->conns = NULL;
	while (l->lingers)
		linger_free(l->lingers);
	free(l->scratch);
	l->scratch = NULL;
	for (d = l->head; d; d = next) {
		next = d->next;
		free(d);
	}
	if (l->lis)
		evconnlistener_free(l->lis);
	if (l->wake)
		event_free(l->wake);
	if (l->efd >= 0)
		close(l->efd);
	if (l->base)
		event_base_free(l->base);
	pthread_mutex_destroy(&l->lock);
}

static void http_metrics_register(http_server *s, const char *prefix)
{
	char name[128];
	snprintf(name, sizeof(name), "%s_http_requests_total", prefix);
	s->m_requests = metric_counter(name, "HTTP requests by method, route and status code.",
				       "method,route,code");
	snprintf(name, sizeof(name), "%s_http_request_duration_seconds", prefix);
	s->m_seconds = metric_histogram(name, "HTTP request latency, head parsed to response end.",
					"method,route", NULL, 0);
	snprintf(name, sizeof(name), "%s_http_received_bytes_total", prefix);
	s->m_in = metric_counter(name, "HTTP request bytes received (head and body).", "route");
	snprintf(name, sizeof(name), "%s_http_sent_bytes_total", prefix);
	s->m_out = metric_counter(name, "HTTP response bytes sent (head and body).", "route");
}

http_server *http_server_new(const struct http_server_opts *opts, http_handler_fn handler,
			     void *ctx, wfs_err *err)
{
	http_server *s = xcalloc(1, sizeof(*s));
	struct addrinfo hints, *ai = NULL;
	char portstr[16];
	int i, rc;

	*err = WFS_OK;
	s->o = *opts;
	if (opts->thread_name)
		snprintf(s->thread_name, sizeof(s->thread_name), "%s", opts->thread_name);
	s->o.thread_name = s->thread_name;
	snprintf(s->host, sizeof(s->host), "%s",
		 opts->host && *opts->host ? opts->host : "127.0.0.1");
	s->o.host = s->host;
	if (!s->o.max_header_bytes)
		s->o.max_header_bytes = 64 * 1024;
	if (!s->o.max_uri_bytes)
		s->o.max_uri_bytes = 8 * 1024;
	if (s->o.idle_timeout_sec <= 0)
		s->o.idle_timeout_sec = 120;
	if (s->o.max_connections <= 0)
		s->o.max_connections = 16384;
	s->nloops = opts->threads > 0 ? opts->threads : cpu_count();
	s->handler = handler;
	s->ctx = ctx;
	if (opts->metrics_prefix)
		http_metrics_register(s, opts->metrics_prefix);
	atomic_init(&s->nconns, 0);
	s->loops = xcalloc((size_t)s->nloops, sizeof(*s->loops));
	for (i = 0; i < s->nloops; i++) {
		s->loops[i].efd = -1;
		pthread_mutex_init(&s->loops[i].lock, NULL);
	}

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(portstr, sizeof(portstr), "%d", opts->port);
	rc = getaddrinfo(s->host, portstr, &hints, &ai);
	if (rc || !ai) {
		log_error("could not resolve listen address \"%s\": %s", s->host, gai_strerror(rc));
		*err = WFS_EINVAL;
		goto fail;
	}
	if (opts->port) {
		/* SO_REUSEPORT would let us join another process's group on a busy port:
		 * probe with a plain bind first so a busy port is an error. */
		int probe = listen_socket(ai, false, err);
		if (probe < 0)
			goto fail;
		close(probe);
	}
	for (i = 0; i < s->nloops; i++) {
		struct loop *l = &s->loops[i];
		struct timeval tv = {s->o.idle_timeout_sec, 0};
		l->s = s;
		l->base = event_base_new();
		if (!l->base)
			fatal("event_base_new failed");
		if (i == 1 && opts->port == 0) {
			/* The rest bind to the port the first one got. */
			if (ai->ai_family == AF_INET6)
				((struct sockaddr_in6 *)ai->ai_addr)->sin6_port =
					htons((uint16_t)s->port);
			else
				((struct sockaddr_in *)ai->ai_addr)->sin_port =
					htons((uint16_t)s->port);
		}
		int fd = listen_socket(ai, true, err);
		if (fd < 0)
			goto fail;
		if (i == 0)
			s->port = addr_port(fd);
		l->lis = evconnlistener_new(l->base, accept_cb, l, LEV_OPT_CLOSE_ON_FREE, 0, fd);
		if (!l->lis) {
			close(fd);
			*err = WFS_EIO;
			goto fail;
		}
		l->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (l->efd < 0)
			fatal("eventfd: %s", strerror(errno));
		l->wake = event_new(l->base, l->efd, EV_READ | EV_PERSIST, wake_cb, l);
		event_add(l->wake, NULL);
		l->idle_tv = event_base_init_common_timeout(l->base, &tv);
	}
	freeaddrinfo(ai);
	return s;
fail:
	if (ai)
		freeaddrinfo(ai);
	http_server_free(s);
	return NULL;
}

void http_server_start(http_server *s)
{
	for (int i = 0; i < s->nloops; i++) {
		struct loop *l = &s->loops[i];
		if (thread_start(&l->thread, NULL, loop_main, l, s->thread_name))
			fatal("cannot start an event loop thread");
		l->started = true;
	}
}

int http_server_port(const http_server *s) { return s->port; }

void http_server_free(http_server *s)
{
	int i;
	if (!s)
		return;
	for (i = 0; i < s->nloops; i++) {
		struct loop *l = &s->loops[i];
		if (!l->started)
			continue;
		pthread_mutex_lock(&l->lock);
		l->stop = true;
		pthread_mutex_unlock(&l->lock);
		uint64_t one = 1;
		ssize_t r = write(l->efd, &one, sizeof(one));
		(void)r;
	}
	for (i = 0; i < s->nloops; i++)
		if (s->loops[i].started)
			pthread_join(s->loops[i].thread, NULL);
	for (i = 0; i < s->nloops; i++)
		loop_destroy(&s->loops[i]);
	free(s->loops);
	free(s);
}
