#include "config.h"
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include "buf.h"
#include "http_loop_client.h"
#include "http_util.h"
#include "http_response_parser.h"
#include "log.h"
#include "util.h"

#define MAX_IDLE     16 /* kept-alive connections per client */
#define IDLE_TIMEOUT 50 /* seconds: below the servers' own idle timeout */

struct conn {
	hlc *c;
	struct bufferevent *bev;
	hrp_parser *p;
	struct conn *prev, *next; /* in c->idle or c->busy */
	bool busy;
	bool reused;    /* carried a request before this one */
	bool got_bytes; /* some of the answer arrived */
	/* the request in flight */
	buf req; /* its bytes, kept to send once more on a new connection */
	unsigned flags;
	size_t max_body;
	long timeout_ms;
	hlc_done_fn done;
	void *arg;
};

struct hlc {
	struct event_base *base;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	char host[300]; /* the Host header */
	struct conn *idle, *busy;
	int nidle;
};

static void list_add(struct conn **head, struct conn *k)
{
	k->prev = NULL;
	k->next = *head;
	if (*head)
		(*head)->prev = k;
	*head = k;
}

static void list_remove(struct conn **head, struct conn *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		*head = k->next;
	if (k->next)
		k->next->prev = k->prev;
	k->prev = k->next = NULL;
}

static void conn_free(struct conn *k)
{
	hlc *c = k->c;
	if (k->busy) {
		list_remove(&c->busy, k);
	} else {
		list_remove(&c->idle, k);
		c->nidle--;
	}
	bufferevent_free(k->bev);
	hrp_free(k->p);
	buf_free(&k->req);
	free(k);
}

static void set_timeout(struct conn *k, long ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	bufferevent_set_timeouts(k->bev, &tv, NULL);
}

/* Ends the request in flight on k: its callback, then k kept for the next or closed. */
static void conn_end(struct conn *k, wfs_err err, bool keep)
{
	hlc *c = k->c;
	hlc_done_fn done = k->done;
	void *arg = k->arg;
	size_t len = 0;
	const char *body = err ? "" : hrp_body(k->p, &len);
	int status = err ? 0 : hrp_status(k->p);

	k->done = NULL;
	/* the body is the parser's: answer before the connection can carry another */
	done(arg, err, status, body, len);
	if (!keep || c->nidle >= MAX_IDLE) {
		conn_free(k);
		return;
	}
	list_remove(&c->busy, k);
	k->busy = false;
	k->reused = true;
	buf_reset(&k->req);
	list_add(&c->idle, k);
	c->nidle++;
	set_timeout(k, IDLE_TIMEOUT * 1000L);
}

static void on_read(struct bufferevent *bev, void *arg);
static void on_event(struct bufferevent *bev, short what, void *arg);

static struct conn *conn_open(hlc *c, wfs_err *err)
{
	int one = 1;
	int fd = socket(c->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct conn *k;

	if (fd < 0) {
		*err = WFS_EUNAVAIL;
		return NULL;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	k = xcalloc(1, sizeof(*k));
	k->c = c;
	k->bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!k->bev) {
		close(fd);
		free(k);
		*err = WFS_EUNAVAIL;
		return NULL;
	}
	k->p = hrp_new(NULL);
	bufferevent_setcb(k->bev, on_read, NULL, on_event, k);
	bufferevent_enable(k->bev, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(k->bev, (struct sockaddr *)&c->addr, (int)c->addrlen) < 0) {
		bufferevent_free(k->bev);
		hrp_free(k->p);
		free(k);
		*err = WFS_EUNAVAIL;
		return NULL;
	}
	k->busy = true;
	list_add(&c->busy, k);
	return k;
}

/* Starts k's request (its bytes in k->req). */
static void conn_send(struct conn *k)
{
	k->got_bytes = false;
	hrp_begin(k->p, k->flags, k->max_body);
	set_timeout(k, k->timeout_ms);
	bufferevent_write(k->bev, k->req.data, k->req.len);
}

/* k failed before any of its answer came: the same request on a new connection. */
static void conn_resend(struct conn *k)
{
	wfs_err err = WFS_OK;
	struct conn *n = conn_open(k->c, &err);
	if (!n) {
		conn_end(k, err, false);
		return;
	}
	n->req = k->req;
	buf_init(&k->req);
	n->flags = k->flags;
	n->max_body = k->max_body;
	n->timeout_ms = k->timeout_ms;
	n->done = k->done;
	n->arg = k->arg;
	k->done = NULL;
	conn_free(k);
	conn_send(n);
}

static void on_read(struct bufferevent *bev, void *arg)
{
	struct conn *k = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t n, used;

	while ((n = evbuffer_get_contiguous_space(in)) > 0) {
		if (!k->done) {
			conn_free(k); /* bytes nobody asked for: the connection is out of step */
			return;
		}
		const char *d = (const char *)evbuffer_pullup(in, (ssize_t)n);
		enum hrp_result res = hrp_feed(k->p, d, n, &used);
		evbuffer_drain(in, used);
		k->got_bytes = true;
		if (res == HRP_DONE) {
			conn_end(k, WFS_OK, hrp_keep_alive(k->p) && !evbuffer_get_length(in));
			return;
		}
		if (res == HRP_ERROR) {
			log_warn("http %s: %s", k->c->host, hrp_error(k->p));
			conn_end(k, WFS_ECORRUPT, false);
			return;
		}
	}
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn *k = arg;
	(void)bev;
	if (what & BEV_EVENT_CONNECTED)
		return;
	if (!k->done) {
		conn_free(k); /* an idle connection closed or timed out */
		return;
	}
	if ((what & BEV_EVENT_EOF) && hrp_eof(k->p) == HRP_DONE) {
		conn_end(k, WFS_OK, false);
	} else if (k->reused && !k->got_bytes && !(what & BEV_EVENT_TIMEOUT)) {
		conn_resend(k); /* the peer closed it while it was idle */
	} else {
		conn_end(k, (what & BEV_EVENT_TIMEOUT) ? WFS_ETIMEDOUT : WFS_EUNAVAIL, false);
	}
}

hlc *hlc_new(struct event_base *base, const char *host_port, wfs_err *err)
{
	hlc *c = xcalloc(1, sizeof(*c));
	unsigned len;

	if (!host_port_resolve(host_port, &c->addr, &len)) {
		free(c);
		*err = strrchr(host_port, ':') ? WFS_EUNAVAIL : WFS_EINVAL;
		return NULL;
	}
	c->addrlen = len;
	c->base = base;
	snprintf(c->host, sizeof(c->host), "%s", host_port);
	*err = WFS_OK;
	return c;
}

void hlc_free(hlc *c)
{
	if (!c)
		return;
	while (c->busy) {
		struct conn *k = c->busy;
		if (k->done)
			k->done(k->arg, WFS_EINTERNAL, 0, "", 0);
		conn_free(k);
	}
	while (c->idle)
		conn_free(c->idle);
	free(c);
}

void hlc_request(hlc *c, const char *method, const char *path, const char *headers,
		 const void *body, size_t len, size_t max_body, long timeout_ms, hlc_done_fn done,
		 void *arg)
{
	struct conn *k = c->idle;
	wfs_err err = WFS_OK;

	if (k) {
		list_remove(&c->idle, k);
		c->nidle--;
		k->busy = true;
		list_add(&c->busy, k);
	} else if (!(k = conn_open(c, &err))) {
		done(arg, err, 0, "", 0);
		return;
	}
	buf_printf(&k->req, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %zu\r\n%s\r\n", method,
		   path, c->host, len, headers ? headers : "");
	if (len)
		buf_append(&k->req, body, len);
	k->flags = !strcasecmp(method, "HEAD") ? HRP_HEAD : 0;
	k->max_body = max_body;
	k->timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
	k->done = done;
	k->arg = arg;
	conn_send(k);
}
