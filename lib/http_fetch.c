/* Blocking requests, answers received in place (see http_fetch.h). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "bigbuf.h"
#include "buf.h"
#include "http_fetch.h"
#include "http_response_parser.h"
#include "util.h"

#define HOST_MAX  256
#define HEAD_READ (16u << 10) /* bytes read while the head is not complete */

struct idle_conn {
	char host[HOST_MAX];
	int fd;
	long timeout_ms;   /* its send and receive timeouts (set_io_timeout) */
	uint64_t since_ns; /* idle since */
};

struct http_fetcher {
	pthread_mutex_t mu;
	pthread_cond_t wake;    /* the reaper's */
	struct idle_conn *idle; /* protected by mu */
	size_t n, max;
	uint64_t keep_ns;
	bool stop; /* protected by mu */
	pthread_t reaper;
	bool reaper_started;
};

/* Closes the connections idle for longer than keep_ns, twice per keep_ns. */
static void *reaper_main(void *arg)
{
	http_fetcher *f = arg;
	pthread_mutex_lock(&f->mu);
	while (!f->stop) {
		uint64_t now = time_mono_ns();
		struct timespec until;
		for (size_t i = f->n; i-- > 0;) {
			if (now - f->idle[i].since_ns > f->keep_ns) {
				close(f->idle[i].fd);
				f->idle[i] = f->idle[--f->n];
			}
		}
		until = time_deadline(CLOCK_MONOTONIC, f->keep_ns / 2);
		pthread_cond_timedwait(&f->wake, &f->mu, &until);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

http_fetcher *http_fetcher_new(size_t max_idle, long keep_idle_ms)
{
	http_fetcher *f = xcalloc(1, sizeof(*f));
	pthread_condattr_t ca;
	pthread_mutex_init(&f->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&f->wake, &ca);
	pthread_condattr_destroy(&ca);
	f->max = max_idle;
	f->keep_ns = (uint64_t)(keep_idle_ms > 0 ? keep_idle_ms : 1) * 1000000u;
	f->idle = xcalloc(max_idle ? max_idle : 1, sizeof(*f->idle));
	f->reaper_started = thread_start(&f->reaper, NULL, reaper_main, f, "wfs-fetch-reap") == 0;
	if (!f->reaper_started)
		f->max = 0; /* nothing would close them: keep nothing idle */
	return f;
}

void http_fetcher_free(http_fetcher *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = true;
	pthread_cond_signal(&f->wake);
	pthread_mutex_unlock(&f->mu);
	if (f->reaper_started)
		pthread_join(f->reaper, NULL);
	for (size_t i = 0; i < f->n; i++)
		close(f->idle[i].fd);
	free(f->idle);
	pthread_cond_destroy(&f->wake);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

/* An idle connection to host (its timeouts in *timeout_ms), or -1. */
static int take_idle(http_fetcher *f, const char *host, long *timeout_ms)
{
	int fd = -1;
	pthread_mutex_lock(&f->mu);
	for (size_t i = f->n; i-- > 0;) {
		if (!strcmp(f->idle[i].host, host)) {
			fd = f->idle[i].fd;
			*timeout_ms = f->idle[i].timeout_ms;
			f->idle[i] = f->idle[--f->n];
			break;
		}
	}
	pthread_mutex_unlock(&f->mu);
	return fd;
}

static void give_back(http_fetcher *f, const char *host, int fd, long timeout_ms)
{
	pthread_mutex_lock(&f->mu);
	if (f->n < f->max && strlen(host) < HOST_MAX) {
		memcpy(f->idle[f->n].host, host, strlen(host) + 1);
		f->idle[f->n].since_ns = time_mono_ns();
		f->idle[f->n].timeout_ms = timeout_ms;
		f->idle[f->n++].fd = fd;
		fd = -1;
	}
	pthread_mutex_unlock(&f->mu);
	if (fd >= 0)
		close(fd);
}

/* Each blocking send/recv on fd waits at most ms. */
static void set_io_timeout(int fd, long ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Connects to one address within ms: the blocking socket, or -1 with *err. */
static int dial_one(const struct addrinfo *ai, long ms, wfs_err *err)
{
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	if (fd < 0) {
		*err = WFS_EUNAVAIL;
		return -1;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		struct pollfd p = {fd, POLLOUT, 0};
		int r;
		if (errno != EINPROGRESS) {
			*err = WFS_EUNAVAIL;
			goto fail;
		}
		while ((r = poll(&p, 1, (int)ms)) < 0 && errno == EINTR)
			;
		if (r == 0) {
			*err = WFS_ETIMEDOUT;
			goto fail;
		}
		if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
			*err = WFS_EUNAVAIL;
			goto fail;
		}
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	set_io_timeout(fd, ms);
	return fd;
fail:
	close(fd);
	return -1;
}

/* A new connection to "host:port" (resolved now), or -1 with *err. */
static int dial(const char *host_port, long ms, wfs_err *err)
{
	const char *colon = strrchr(host_port, ':');
	struct addrinfo hints = {0}, *res = NULL;
	char host[HOST_MAX];
	int fd = -1;
	size_t hl;

	*err = WFS_EUNAVAIL;
	if (!colon || (hl = (size_t)(colon - host_port)) >= sizeof(host))
		return -1;
	memcpy(host, host_port, hl);
	host[hl] = '\0';
	if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') { /* [v6]:port */
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
		return -1;
	for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
		fd = dial_one(ai, ms, err);
	freeaddrinfo(res);
	return fd;
}

/* One exchange's state, shared with the parser's callbacks. */
struct exchange {
	struct http_result *res;
	hrp_parser *p;
	uint64_t max_body;
	bool sized;       /* the body's buffer holds the declared length */
	const void *body; /* the request's body */
	size_t body_len;
};

static bool on_header(void *arg, const char *name, size_t nlen, const char *value, size_t vlen)
{
	struct exchange *x = arg;
	buf_append(&x->res->headers, name, nlen);
	buf_append(&x->res->headers, ": ", 2);
	buf_append(&x->res->headers, value, vlen);
	buf_append(&x->res->headers, "\r\n", 2);
	return true;
}

/* Once the head is in: room for the whole declared body (bigbuf_presize). */
static void size_body(struct exchange *x)
{
	int64_t cl = hrp_content_length(x->p);
	if (x->sized || !hrp_status(x->p))
		return;
	x->sized = true;
	if (cl > 0 && (uint64_t)cl <= x->max_body) /* over it, the parser refuses the answer */
		bigbuf_presize(&x->res->body, (uint64_t)cl);
}

/* Body bytes: already in place when they were received into the body's buffer. */
static bool on_body(void *arg, const char *data, size_t len)
{
	struct exchange *x = arg;
	buf *b = &x->res->body;
	size_body(x);
	if (b->data && data == b->data + b->len) {
		b->len += len;
		b->data[b->len] = '\0';
	} else {
		buf_append(b, data, len);
	}
	return true;
}

/* Sends the head and the body (len bytes, may be 0) with as few calls as the socket allows. */
static wfs_err send_all(int fd, const buf *head, const void *body, size_t len)
{
	struct iovec iov[2] = {{head->data, head->len}, {(void *)body, len}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};

	while (m.msg_iovlen) {
		ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? WFS_ETIMEDOUT
								       : WFS_EUNAVAIL;
		while (m.msg_iovlen && (size_t)n >= m.msg_iov->iov_len) {
			n -= (ssize_t)m.msg_iov->iov_len;
			m.msg_iov++;
			m.msg_iovlen--;
		}
		if (m.msg_iovlen) {
			m.msg_iov->iov_base = (char *)m.msg_iov->iov_base + n;
			m.msg_iov->iov_len -= (size_t)n;
		}
	}
	return WFS_OK;
}

/*
 * Sends req on fd and reads the answer into x->res. *answered: a byte of the
 * answer arrived. *reusable: fd may carry another request.
 */
static wfs_err exchange(int fd, const buf *req, struct exchange *x, uint64_t deadline_ns,
			bool *answered, bool *reusable)
{
	char head[HEAD_READ];
	/* a server may answer early (413) and close while a body is still being sent:
	   its answer is still read */
	wfs_err send_err = send_all(fd, req, x->body, x->body_len);

	*answered = *reusable = false;
	if (send_err == WFS_ETIMEDOUT)
		return send_err;
	for (;;) {
		buf *b = &x->res->body;
		uint64_t pending = hrp_body_pending(x->p);
		char *to = head;
		size_t room = sizeof(head), used;
		enum hrp_result r;
		ssize_t n;

		size_body(x);
		/* the body's next bytes straight into their place when it has room for them */
		if (pending && b->data &&
		    b->cap - b->len - 1 >= MIN(pending, (uint64_t)HEAD_READ)) {
			to = b->data + b->len;
			room = (size_t)MIN(pending, (uint64_t)(b->cap - b->len - 1));
		}
		n = recv(fd, to, room, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? WFS_ETIMEDOUT
								       : WFS_EUNAVAIL;
		if (n == 0)
			return hrp_eof(x->p) == HRP_DONE ? WFS_OK : WFS_EUNAVAIL;
		*answered = true;
		r = hrp_feed(x->p, to, (size_t)n, &used);
		if (r == HRP_ERROR) {
			int64_t cl = hrp_content_length(x->p);
			return cl > 0 && (uint64_t)cl > x->max_body ? WFS_ETOOBIG : WFS_EUNAVAIL;
		}
		if (r == HRP_DONE) {
			/* bytes past the answer were never asked for: do not reuse */
			*reusable = !send_err && used == (size_t)n && hrp_keep_alive(x->p);
			return WFS_OK;
		}
		if (time_mono_ns() > deadline_ns)
			return WFS_ETIMEDOUT;
	}
}

wfs_err http_fetch_request(http_fetcher *f, const char *method, const char *host_port,
			   const char *path, const char *const *headers, const void *body,
			   size_t len, long timeout_ms, uint64_t max_body, struct http_result *res)
{
	struct hrp_opts o = {.on_header = on_header, .on_body = on_body};
	struct exchange x = {res, NULL, max_body, false, body, body ? len : 0};
	uint64_t deadline = time_mono_ns() + (uint64_t)timeout_ms * 1000000u;
	buf req = BUF_INIT;
	wfs_err err = WFS_EUNAVAIL;

	buf_printf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, host_port);
	if (body)
		buf_printf(&req, "Content-Length: %zu\r\n", len);
	for (size_t i = 0; headers && headers[i]; i++)
		buf_printf(&req, "%s\r\n", headers[i]);
	buf_append(&req, "\r\n", 2);
	o.arg = &x;
	x.p = hrp_new(&o);
	for (int attempt = 0; attempt < 2; attempt++) {
		long fd_ms = 0;
		int fd = attempt ? -1 : take_idle(f, host_port, &fd_ms);
		bool reused = fd >= 0, answered, reusable;
		if (!reused && (fd = dial(host_port, timeout_ms, &err)) < 0)
			break;
		if (reused && fd_ms != timeout_ms) /* two syscalls a request otherwise */
			set_io_timeout(fd, timeout_ms);
		http_result_free(res);
		x.sized = false;
		hrp_begin(x.p, strcmp(method, "HEAD") ? 0 : HRP_HEAD, max_body);
		err = exchange(fd, &req, &x, deadline, &answered, &reusable);
		res->status = err ? 0 : hrp_status(x.p);
		if (!err && reusable)
			give_back(f, host_port, fd, timeout_ms);
		else
			close(fd);
		/* a kept-alive connection the server closed while idle: once more, on a new one */
		if (!(err == WFS_EUNAVAIL && reused && !answered))
			break;
	}
	if (err)
		http_result_free(res);
	hrp_free(x.p);
	buf_free(&req);
	return err;
}

wfs_err http_fetch_get(http_fetcher *f, const char *host_port, const char *path,
		       const char *const *headers, long timeout_ms, uint64_t max_body,
		       struct http_result *res)
{
	return http_fetch_request(f, "GET", host_port, path, headers, NULL, 0, timeout_ms, max_body,
				  res);
}
