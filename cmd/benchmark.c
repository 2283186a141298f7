/*
 * weedfs benchmark: SeaweedFS's `weed benchmark` for weedfs.
 *
 * DESIGN
 * The client shares a small machine with the servers it measures, so it must
 * cost little CPU per request: no libcurl, no thread per connection. One or a
 * few loop threads (-threads) each drive a share of the -c workers over epoll.
 * A worker is a small state machine doing one file at a time:
 *   write: [GET /dir/assign on the master] -> PUT /<fid> on the volume server
 *   read:  [GET /dir/lookup once per volume] -> GET /<fid>, check length/content
 * Every worker keeps its own HTTP/1.1 keep-alive connections: one to the master
 * and one per volume server it has talked to, so there is never more than one
 * request in flight per connection and no pipelining. A request is kept in the
 * connection's output buffer until its response arrives, so a keep-alive
 * connection the server closed while idle is reopened and the request resent
 * once. Responses are parsed by lib/http_response_parser (http-parser), one
 * parser per connection, reused for every request.
 *
 * File contents are a pseudo-random stream seeded by (-seed, file index), so a
 * read can be verified without keeping the data, and a fid list (-list) lets a
 * later run read what an earlier one wrote.
 *
 * Latency is measured per file with the monotonic clock, from the first request
 * for the file (the assign, or the lookup on a cache miss) to the end of the
 * last response; percentiles come from the sorted array of successful samples.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "benchmark.h"
#include "buf.h"
#include "client/fid.h"
#include "client/master_list.h"
#include "daemon.h"
#include "flags.h"
#include "http_response_parser.h"
#include "json.h"
#include "jwt.h"
#include "log.h"
#include "security.h"
#include "util.h"

#define MAX_HEADER       65536   /* status line and headers of one response */
#define MAX_JSON_BODY    1048576 /* assign/lookup answers */
#define MAX_SMALL_BODY   4096    /* write answers, read errors */
#define MAX_FILE_SIZE    (256LL << 20)
#define MAX_ERRORS_SHOWN 10
#define URL_MAX          256

/* ---------------------------------------------------------------------------------------------
 * Options and shared state
 */

struct options {
	const char *master;
	int c;
	long long n;
	int size;
	const char *collection;
	const char *replication;
	bool write;
	bool read;
	long long seed;
	int assign_batch;
	int threads;
	double timeout_s;
	const char *list;
	bool multipart;
	int verify_every;
};

/* One file: where it was written. Written by one worker, read after a join. */
struct rec {
	uint32_t vid;
	uint32_t cookie;
	uint64_t key;
	uint32_t delta; /* the _N suffix of a batched assignment, 0 if none */
	uint32_t size;
	bool ok;
	uint64_t cidx; /* content index: the file index in the run that wrote it */
};

enum phase { PHASE_WRITE, PHASE_READ };

struct bench {
	struct options o;
	struct rec *recs; /* o.n entries, indexed by file index */
	uint64_t *lat_ns; /* one sample per file; 0 = no successful sample */
	uint64_t *order;  /* read phase: file indices in random order */
	uint64_t order_len;
	enum phase phase;
	uint64_t total;       /* items in this phase */
	uint64_t next;        /* next item to hand out; atomic */
	uint64_t completed;   /* atomic */
	uint64_t failed;      /* atomic */
	uint64_t transferred; /* atomic, bytes */
	int errors_shown;     /* atomic */
	uint64_t timeout_ns;
	char *assign_path; /* "/dir/assign?count=N[&collection=..][&replication=..]" */
};

static void bench_error(struct bench *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void bench_error(struct bench *b, const char *fmt, ...)
{
	va_list ap;
	int k = __atomic_fetch_add(&b->errors_shown, 1, __ATOMIC_RELAXED);
	if (k >= MAX_ERRORS_SHOWN) {
		if (k == MAX_ERRORS_SHOWN)
			fprintf(stderr, "benchmark: further errors not shown\n");
		return;
	}
	va_start(ap, fmt);
	fputs("benchmark: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---------------------------------------------------------------------------------------------
 * Content: a splitmix64 stream, cheap enough to generate for every request.
 */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void content_fill(uint64_t seed, uint64_t idx, uint8_t *p, size_t n)
{
	uint64_t s = seed * 0x2545f4914f6cdd1dULL ^ idx;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v = splitmix64(&s);
		memcpy(p + i, &v, 8);
	}
	if (i < n) {
		uint64_t v = splitmix64(&s);
		memcpy(p + i, &v, n - i);
	}
}

/* ---------------------------------------------------------------------------------------------
 * Connections
 */

struct loop;
struct worker;

struct conn {
	struct worker *w;
	int epfd; /* the owning loop's */
	int fd;
	struct sockaddr_storage sa;
	socklen_t salen;
	char hostport[URL_MAX]; /* for the Host header */
	bool connecting;
	bool want_out;   /* EPOLLOUT registered */
	bool busy;       /* a request is in flight */
	bool retried;    /* the in-flight request was already resent once */
	bool got_bytes;  /* some of the response arrived */
	uint64_t served; /* responses completed on the current socket */
	buf out;         /* the in-flight request, kept until its response */
	size_t out_off;
	buf in;          /* receive scratch: the parser consumes all but bytes after a response */
	hrp_parser *r;   /* parses the in-flight request's response */
	unsigned rflags; /* HRP_* of the in-flight request */
	uint64_t rmax;   /* its largest acceptable response body */
};

static int conn_set_events(struct conn *c, int op, bool want_out)
{
	struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = c};
	if (epoll_ctl(c->epfd, op, c->fd, &ev))
		return -1;
	c->want_out = want_out;
	return 0;
}

static void conn_close(struct conn *c)
{
	if (c->fd >= 0) {
		/* Closing the fd removes it from the epoll set. */
		close(c->fd);
		c->fd = -1;
	}
	c->connecting = false;
	c->want_out = false;
	c->served = 0;
	buf_reset(&c->in);
}

/* Resolves "host:port" (an optional http:// prefix is ignored). */
static int conn_resolve(struct conn *c, const char *url)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	char host[URL_MAX];
	const char *colon, *port;
	size_t hl;
	int rc;

	if (!strncmp(url, "http://", 7))
		url += 7;
	hl = strcspn(url, "/");
	if (hl == 0 || hl >= URL_MAX)
		return -1;
	memcpy(c->hostport, url, hl);
	c->hostport[hl] = 0;
	colon = strrchr(c->hostport, ':');
	if (!colon)
		return -1;
	memcpy(host, c->hostport, (size_t)(colon - c->hostport));
	host[colon - c->hostport] = 0;
	port = colon + 1;
	/* Bracketed IPv6 literal. */
	if (host[0] == '[') {
		size_t l = strlen(host);
		if (l < 2 || host[l - 1] != ']')
			return -1;
		memmove(host, host + 1, l - 2);
		host[l - 2] = 0;
	}
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc || !ai)
		return -1;
	memcpy(&c->sa, ai->ai_addr, ai->ai_addrlen);
	c->salen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static struct conn *conn_new(struct worker *w, int epfd, const char *url)
{
	struct conn *c = xcalloc(1, sizeof(*c));
	c->w = w;
	c->epfd = epfd;
	c->fd = -1;
	buf_init(&c->out);
	buf_init(&c->in);
	if (conn_resolve(c, url)) {
		free(c);
		return NULL;
	}
	c->r = hrp_new(&(struct hrp_opts){.max_header = MAX_HEADER});
	return c;
}

static void conn_free(struct conn *c)
{
	if (!c)
		return;
	conn_close(c);
	buf_free(&c->out);
	buf_free(&c->in);
	hrp_free(c->r);
	free(c);
}

static int conn_open(struct conn *c)
{
	int one = 1;
	c->fd = socket(c->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->served = 0;
	if (connect(c->fd, (struct sockaddr *)&c->sa, c->salen) == 0)
		c->connecting = false;
	else if (errno == EINPROGRESS)
		c->connecting = true;
	else
		goto fail;
	if (conn_set_events(c, EPOLL_CTL_ADD, c->connecting))
		goto fail;
	return 0;
fail:
	close(c->fd);
	c->fd = -1;
	return -1;
}

/* Sends what is left of c->out; registers for EPOLLOUT if the socket is full. */
static int conn_flush(struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t k = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
				 MSG_NOSIGNAL);
		if (k > 0) {
			c->out_off += (size_t)k;
			continue;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!c->want_out && conn_set_events(c, EPOLL_CTL_MOD, true))
				return -1;
			return 0;
		}
		return -1;
	}
	if (c->want_out && conn_set_events(c, EPOLL_CTL_MOD, false))
		return -1;
	return 0;
}

/* (Re)sends the request held in c->out on an open or newly opened socket. */
static int conn_start(struct conn *c)
{
	c->out_off = 0;
	c->got_bytes = false;
	buf_reset(&c->in);
	hrp_begin(c->r, c->rflags, c->rmax);
	if (c->fd < 0 && conn_open(c))
		return -1;
	if (c->connecting)
		return 0;
	return conn_flush(c);
}

/* ---------------------------------------------------------------------------------------------
 * Workers and loops
 */

enum wstate { W_IDLE, W_ASSIGN, W_PUT, W_LOOKUP, W_GET };

struct peer {
	char url[URL_MAX];
	struct conn *c;
};

/* Volume locations cached by volume id (per loop, so no locking); n == 0 means unknown. */
struct vloc {
	uint32_t vid;
	bool used;
	int n;
	char (*urls)[URL_MAX];
};

struct worker {
	struct loop *lp;
	int id;
	enum wstate st;
	bool done;
	struct conn *master;
	struct peer *peers;
	int npeers;
	struct conn *cur; /* the connection the worker waits on */
	uint64_t req_t0;  /* when the request on cur started, for the timeout */
	uint64_t idx;     /* current file index */
	uint64_t t0;      /* when work on the current file started */
	/* Batched assignment: the ids fid_1 .. fid_(count-1) not used yet. */
	struct rec batch;
	char batch_url[URL_MAX];
	char batch_auth[512]; /* the assign's "auth" (jwt.signing), "" if none: the batch shares it */
	uint32_t batch_next, batch_count;
	uint8_t *data; /* scratch for generated content, o.size bytes */
};

struct loop {
	struct bench *b;
	int epfd;
	pthread_t thread;
	struct worker **workers;
	int nworkers;
	int active;
	struct vloc *vlocs; /* open addressing, linear probing; a power of two slots */
	uint32_t nvlocs, vlocs_used;
};

static struct conn *worker_peer(struct worker *w, const char *url)
{
	for (int i = 0; i < w->npeers; i++)
		if (!strcmp(w->peers[i].url, url))
			return w->peers[i].c;
	struct conn *c = conn_new(w, w->lp->epfd, url);
	if (!c)
		return NULL;
	w->peers = xrealloc(w->peers, sizeof(*w->peers) * (size_t)(w->npeers + 1));
	snprintf(w->peers[w->npeers].url, URL_MAX, "%s", url);
	w->peers[w->npeers].c = c;
	w->npeers++;
	return c;
}

static void format_fid(const struct rec *r, char *out, size_t n)
{
	struct fid f = {.volume_id = r->vid, .key = r->key, .cookie = r->cookie};
	char s[FID_STR_MAX];
	fid_format(&f, s, sizeof(s));
	if (r->delta)
		snprintf(out, n, "%s_%" PRIu32, s, r->delta);
	else
		snprintf(out, n, "%s", s);
}

static void url_escape(buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '~')
			buf_append_byte(out, (char)ch);
		else {
			buf_append_byte(out, '%');
			buf_append_byte(out, hex[ch >> 4]);
			buf_append_byte(out, hex[ch & 15]);
		}
	}
}

/* Starts a GET on c; 0 if in flight, -1 if it failed at once. */
static int worker_get_as(struct worker *w, struct conn *c, const char *path_query,
			 uint64_t max_body, unsigned rflags, const char *fid_tok)
{
	/* Plain appends: this runs for every request and printf would dominate user time. */
	buf_reset(&c->out);
	buf_append(&c->out, "GET ", 4);
	buf_append_str(&c->out, path_query);
	buf_append(&c->out, " HTTP/1.1\r\nHost: ", 17);
	buf_append_str(&c->out, c->hostport);
	if (fid_tok) {
		/* read signing: a token for the needle, minted with the node's key */
		char tok[JWT_MAX];
		if (jwt_mint(&security()->volume_read, fid_tok, tok))
			buf_printf(&c->out, "\r\nAuthorization: Bearer %s", tok);
	}
	buf_append(&c->out, "\r\n\r\n", 4);
	c->rmax = max_body;
	c->rflags = rflags;
	c->busy = true;
	c->retried = false;
	w->cur = c;
	w->req_t0 = time_mono_ns();
	if (conn_start(c)) {
		c->busy = false;
		conn_close(c);
		return -1;
	}
	return 0;
}

static int worker_get(struct worker *w, struct conn *c, const char *path_query, uint64_t max_body,
		      unsigned rflags)
{
	return worker_get_as(w, c, path_query, max_body, rflags, NULL);
}

static int worker_assign(struct worker *w)
{
	w->st = W_ASSIGN;
	return worker_get(w, w->master, w->lp->b->assign_path, MAX_JSON_BODY, 0);
}

/*
 * -master as a list: the run talks to the leader that one of the masters names in
 * /cluster/status (any master would do, followers proxy, but that costs a hop on
 * every request); the answer of the master asked is kept in out. False after
 * printing why when the list is malformed or no master answers.
 */
static bool master_pick(const char *spec, char *out, size_t outlen)
{
	char msg[512], used[MASTER_ADDR_MAX];
	struct http_result res;
	master_list *ml = master_list_new(spec, msg, sizeof(msg));
	yajl_val v = NULL;
	const char *lead = NULL;
	bool ok = false;

	if (!ml) {
		fprintf(stderr, "weedfs benchmark: invalid -master: %s\n", msg);
		return false;
	}
	http_result_init(&res);
	if (master_list_request(ml, "GET", "/cluster/status", NULL, NULL, 0, 10000, &res, used,
				sizeof(used)) ||
	    res.status != 200) {
		fprintf(stderr, "weedfs benchmark: no master of %s answered /cluster/status\n", spec);
		goto out;
	}
	v = json_parse(res.body.data, res.body.len, NULL, 0);
	snprintf(out, outlen, "%s", json_get_str(v, "Leader", &lead) && lead && *lead ? lead : used);
	ok = true;
out:
	yajl_tree_free(v);
	http_result_free(&res);
	master_list_free(ml);
	return ok;
}

/* The assign request is the same for every file: build it once. */
static char *assign_path_new(const struct options *o)
{
	buf q = BUF_INIT;
	buf_printf(&q, "/dir/assign?count=%d", o->assign_batch);
	if (*o->collection) {
		buf_append_str(&q, "&collection=");
		url_escape(&q, o->collection);
	}
	if (*o->replication) {
		buf_append_str(&q, "&replication=");
		url_escape(&q, o->replication);
	}
	return buf_steal(&q, NULL);
}

/* Ends a write's headers, with the assignment's token when the master gave one. */
static void put_auth(const struct worker *w, buf *out)
{
	if (w->batch_auth[0])
		buf_printf(out, "Authorization: Bearer %s\r\n", w->batch_auth);
	buf_append_str(out, "\r\n");
}

static int worker_put(struct worker *w)
{
	struct bench *b = w->lp->b;
	struct rec *r = &b->recs[w->idx];
	char fid[FID_STR_MAX + 16];
	struct conn *c = worker_peer(w, w->batch_url);

	w->st = W_PUT;
	if (!c) {
		bench_error(b, "cannot resolve volume server \"%s\"", w->batch_url);
		return -1;
	}
	format_fid(r, fid, sizeof(fid));
	content_fill((uint64_t)b->o.seed, r->cidx, w->data, r->size);
	buf_reset(&c->out);
	if (b->o.multipart) {
		static const char bnd[] = "weedfsbenchmarkboundary7f3a";
		char head[256];
		int hl = snprintf(head, sizeof(head),
				  "--%s\r\nContent-Disposition: form-data; name=\"file\"; "
				  "filename=\"%" PRIu64 ".bin\"\r\nContent-Type: "
				  "application/octet-stream\r\n\r\n",
				  bnd, w->idx);
		size_t total = (size_t)hl + r->size + strlen(bnd) + 8;
		buf_printf(&c->out,
			   "POST /%s HTTP/1.1\r\nHost: %s\r\nContent-Type: multipart/form-data; "
			   "boundary=%s\r\nContent-Length: %zu\r\n",
			   fid, c->hostport, bnd, total);
		put_auth(w, &c->out);
		buf_append(&c->out, head, (size_t)hl);
		buf_append(&c->out, w->data, r->size);
		buf_printf(&c->out, "\r\n--%s--\r\n", bnd);
	} else {
		buf_printf(&c->out,
			   "PUT /%s HTTP/1.1\r\nHost: %s\r\n"
			   "Content-Type: application/octet-stream\r\n"
			   "Content-Length: %" PRIu32 "\r\n",
			   fid, c->hostport, r->size);
		put_auth(w, &c->out);
		buf_append(&c->out, w->data, r->size);
	}
	c->rmax = MAX_SMALL_BODY;
	c->rflags = 0;
	c->busy = true;
	c->retried = false;
	w->cur = c;
	w->req_t0 = time_mono_ns();
	if (conn_start(c)) {
		c->busy = false;
		conn_close(c);
		bench_error(b, "write %s to %s: cannot connect", fid, w->batch_url);
		return -1;
	}
	return 0;
}

static struct vloc *vloc_slot(struct vloc *t, uint32_t n, uint32_t vid)
{
	uint32_t i = (vid * 2654435761u) & (n - 1);
	while (t[i].used && t[i].vid != vid)
		i = (i + 1) & (n - 1);
	return &t[i];
}

/* The cache entry of vid, created empty if absent. */
static struct vloc *loop_vloc(struct loop *lp, uint32_t vid)
{
	struct vloc *v;
	if ((lp->vlocs_used + 1) * 2 > lp->nvlocs) {
		uint32_t n = lp->nvlocs ? lp->nvlocs * 2 : 64;
		struct vloc *t = xcalloc(n, sizeof(*t));
		for (uint32_t i = 0; i < lp->nvlocs; i++)
			if (lp->vlocs[i].used)
				*vloc_slot(t, n, lp->vlocs[i].vid) = lp->vlocs[i];
		free(lp->vlocs);
		lp->vlocs = t;
		lp->nvlocs = n;
	}
	v = vloc_slot(lp->vlocs, lp->nvlocs, vid);
	if (!v->used) {
		v->used = true;
		v->vid = vid;
		lp->vlocs_used++;
	}
	return v;
}

/* Whether the read of rec compares content (so its body must be kept). */
static bool read_verified(const struct bench *b, const struct rec *rec)
{
	return b->o.verify_every > 0 && rec->cidx % (uint64_t)b->o.verify_every == 0;
}

static int worker_read_get(struct worker *w, struct vloc *v)
{
	struct bench *b = w->lp->b;
	struct rec *r = &b->recs[w->idx];
	char path[FID_STR_MAX + 20];
	const char *url = v->urls[w->id % v->n];
	struct conn *c = worker_peer(w, url);

	w->st = W_GET;
	if (!c) {
		bench_error(b, "cannot resolve volume server \"%s\"", url);
		return -1;
	}
	path[0] = '/';
	format_fid(r, path + 1, sizeof(path) - 1);
	/* Room for an error answer too, so a short file still reports the server's status. */
	if (worker_get_as(w, c, path, MAX(r->size, MAX_SMALL_BODY),
			  read_verified(b, r) ? 0 : HRP_DISCARD,
			  security()->volume_read.key ? path + 1 : NULL)) {
		bench_error(b, "read %s from %s: cannot connect", path + 1, url);
		return -1;
	}
	return 0;
}

/* Records the end of the current file. */
static void worker_finish(struct worker *w, bool ok, uint64_t bytes)
{
	struct bench *b = w->lp->b;
	w->st = W_IDLE;
	w->cur = NULL;
	if (ok) {
		uint64_t d = time_mono_ns() - w->t0;
		b->lat_ns[w->idx] = d ? d : 1;
		if (b->phase == PHASE_WRITE)
			b->recs[w->idx].ok = true;
		__atomic_fetch_add(&b->transferred, bytes, __ATOMIC_RELAXED);
		__atomic_fetch_add(&b->completed, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_fetch_add(&b->failed, 1, __ATOMIC_RELAXED);
	}
}

/* Begins the next file; 0 if a request is in flight, -1 if it failed at once (counted). */
static int worker_begin(struct worker *w, uint64_t item)
{
	struct bench *b = w->lp->b;
	w->t0 = time_mono_ns();
	if (b->phase == PHASE_WRITE) {
		struct rec *r = &b->recs[item];
		w->idx = item;
		r->size = (uint32_t)b->o.size;
		r->cidx = item;
		if (w->batch_next < w->batch_count) {
			r->vid = w->batch.vid;
			r->key = w->batch.key;
			r->cookie = w->batch.cookie;
			r->delta = w->batch_next++;
			if (worker_put(w) == 0)
				return 0;
		} else if (worker_assign(w) == 0)
			return 0;
		else
			bench_error(b, "cannot connect to master %s", b->o.master);
	} else {
		struct vloc *v;
		w->idx = b->order[item];
		v = loop_vloc(w->lp, b->recs[w->idx].vid);
		if (v->n) {
			if (worker_read_get(w, v) == 0)
				return 0;
		} else {
			char path[64];
			snprintf(path, sizeof(path), "/dir/lookup?volumeId=%" PRIu32,
				 b->recs[w->idx].vid);
			w->st = W_LOOKUP;
			if (worker_get(w, w->master, path, MAX_JSON_BODY, 0) == 0)
				return 0;
			bench_error(b, "cannot connect to master %s", b->o.master);
		}
	}
	worker_finish(w, false, 0);
	return -1;
}

/* Hands the worker files until one is in flight or the phase has no more work. */
static void worker_next(struct worker *w)
{
	struct bench *b = w->lp->b;
	for (;;) {
		uint64_t item = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED);
		if (item >= b->total) {
			w->done = true;
			w->lp->active--;
			return;
		}
		if (worker_begin(w, item) == 0)
			return;
	}
}

static bool parse_assign(struct worker *w, const hrp_parser *r)
{
	struct bench *b = w->lp->b;
	char err[128];
	const char *fid = NULL, *url = NULL, *msg = NULL;
	int64_t count = 1;
	struct fid f;
	bool ok = false;
	size_t blen;
	const char *body = hrp_body(r, &blen);
	int status = hrp_status(r);
	yajl_val v = json_parse(body, blen, err, sizeof(err));

	if (!v) {
		bench_error(b, "assign: bad JSON answer (HTTP %d): %s", status, err);
		return false;
	}
	if (json_get_str(v, "error", &msg) && msg && *msg) {
		bench_error(b, "assign: HTTP %d: %s", status, msg);
		goto out;
	}
	if (status / 100 != 2 || !json_get_str(v, "fid", &fid) || !json_get_str(v, "url", &url) ||
	    !fid || !url) {
		bench_error(b, "assign: HTTP %d without fid/url: %.200s", status, body);
		goto out;
	}
	if (fid_parse(fid, &f, NULL) || strlen(url) >= URL_MAX) {
		bench_error(b, "assign: bad fid \"%s\" or url", fid);
		goto out;
	}
	json_get_i64(v, "count", &count);
	if (count < 1)
		count = 1;
	if (count > w->lp->b->o.assign_batch)
		count = w->lp->b->o.assign_batch;
	w->batch.vid = f.volume_id;
	w->batch.key = f.key;
	w->batch.cookie = f.cookie;
	w->batch_count = (uint32_t)count;
	w->batch_next = 1;
	snprintf(w->batch_url, URL_MAX, "%s", url);
	{
		const char *auth = NULL;
		if (!json_get_str(v, "auth", &auth) || !auth ||
		    strlen(auth) >= sizeof(w->batch_auth))
			auth = "";
		snprintf(w->batch_auth, sizeof(w->batch_auth), "%s", auth);
	}
	{
		struct rec *rec = &b->recs[w->idx];
		rec->vid = f.volume_id;
		rec->key = f.key;
		rec->cookie = f.cookie;
		rec->delta = 0;
	}
	ok = true;
out:
	yajl_tree_free(v);
	return ok;
}

static bool parse_lookup(struct worker *w, const hrp_parser *r, uint32_t vid)
{
	struct bench *b = w->lp->b;
	char err[128];
	const char *msg = NULL;
	size_t blen;
	const char *body = hrp_body(r, &blen);
	int status = hrp_status(r);
	yajl_val v = json_parse(body, blen, err, sizeof(err));
	yajl_val locs;
	struct vloc *vl;
	bool ok = false;

	if (!v) {
		bench_error(b, "lookup %" PRIu32 ": bad JSON answer (HTTP %d): %s", vid, status,
			    err);
		return false;
	}
	if (json_get_str(v, "error", &msg) && msg && *msg) {
		bench_error(b, "lookup %" PRIu32 ": HTTP %d: %s", vid, status, msg);
		goto out;
	}
	locs = json_get(v, "locations");
	if (status / 100 != 2 || !locs || !YAJL_IS_ARRAY(locs) || !locs->u.array.len) {
		bench_error(b, "lookup %" PRIu32 ": HTTP %d, no locations", vid, status);
		goto out;
	}
	vl = loop_vloc(w->lp, vid);
	if (vl->n) {
		/* Another worker of this loop looked the same volume up meanwhile. */
		ok = true;
		goto out;
	}
	vl->urls = xcalloc(locs->u.array.len, sizeof(*vl->urls));
	for (size_t i = 0; i < locs->u.array.len; i++) {
		const char *url = NULL;
		if (json_get_str(locs->u.array.values[i], "url", &url) && url &&
		    strlen(url) < URL_MAX)
			snprintf(vl->urls[vl->n++], URL_MAX, "%s", url);
	}
	if (!vl->n) {
		free(vl->urls);
		vl->urls = NULL;
		bench_error(b, "lookup %" PRIu32 ": no usable url", vid);
		goto out;
	}
	ok = true;
out:
	yajl_tree_free(v);
	return ok;
}

static bool verify_read(struct worker *w, const hrp_parser *r)
{
	struct bench *b = w->lp->b;
	const struct rec *rec = &b->recs[w->idx];
	char fid[FID_STR_MAX + 16];

	if (hrp_status(r) != 200 || hrp_body_len(r) != rec->size) {
		format_fid(rec, fid, sizeof(fid));
		bench_error(b, "read %s: HTTP %d, %" PRIu64 " bytes, want %" PRIu32, fid,
			    hrp_status(r), hrp_body_len(r), rec->size);
		return false;
	}
	if (read_verified(b, rec)) {
		content_fill((uint64_t)b->o.seed, rec->cidx, w->data, rec->size);
		if (memcmp(w->data, hrp_body(r, NULL), rec->size)) {
			format_fid(rec, fid, sizeof(fid));
			bench_error(b, "read %s: content differs from what was written", fid);
			return false;
		}
	}
	return true;
}

/* The response on c is complete (or c failed when ok is false). */
static void worker_on_response(struct worker *w, struct conn *c, bool ok, const char *why)
{
	struct bench *b = w->lp->b;
	const hrp_parser *r = c->r;
	char fid[FID_STR_MAX + 16];

	c->busy = false;
	w->cur = NULL;
	switch (w->st) {
	case W_ASSIGN:
		if (!ok)
			bench_error(b, "assign on %s: %s", b->o.master, why);
		else if (parse_assign(w, r) && worker_put(w) == 0)
			return;
		worker_finish(w, false, 0);
		break;
	case W_PUT:
		if (ok && hrp_status(r) / 100 == 2) {
			worker_finish(w, true, b->recs[w->idx].size);
			break;
		}
		format_fid(&b->recs[w->idx], fid, sizeof(fid));
		if (ok)
			bench_error(b, "write %s: HTTP %d: %.200s", fid, hrp_status(r),
				    hrp_body(r, NULL));
		else
			bench_error(b, "write %s: %s", fid, why);
		worker_finish(w, false, 0);
		break;
	case W_LOOKUP: {
		uint32_t vid = b->recs[w->idx].vid;
		if (!ok)
			bench_error(b, "lookup on %s: %s", b->o.master, why);
		else if (parse_lookup(w, r, vid) && worker_read_get(w, loop_vloc(w->lp, vid)) == 0)
			return;
		worker_finish(w, false, 0);
		break;
	}
	case W_GET:
		if (!ok) {
			format_fid(&b->recs[w->idx], fid, sizeof(fid));
			bench_error(b, "read %s: %s", fid, why);
			worker_finish(w, false, 0);
		} else
			worker_finish(w, verify_read(w, r), hrp_body_len(r));
		break;
	case W_IDLE:
		return;
	}
	worker_next(w);
}

/* A socket error or EOF on c: resend once on a reused socket, else fail the request. */
static void conn_failed(struct conn *c, const char *why)
{
	bool reused = c->served > 0;
	conn_close(c);
	if (!c->busy)
		return;
	if (reused && !c->got_bytes && !c->retried) {
		c->retried = true;
		if (conn_start(c) == 0)
			return;
		conn_close(c);
	}
	worker_on_response(c->w, c, false, why);
}

static void conn_readable(struct conn *c)
{
	ssize_t k;
	size_t want = 65536, used;
	enum hrp_result res;

	/* The parser consumes every byte until a response ends, so c->in is only scratch. */
	want = MAX(want, MIN(hrp_body_pending(c->r) + 64, (uint64_t)(4 << 20)));
	buf_reset(&c->in);
	buf_reserve(&c->in, want);
	k = recv(c->fd, c->in.data, c->in.cap - 1, 0);
	if (k < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		conn_failed(c, strerror(errno));
		return;
	}
	if (k == 0) {
		/* A body that runs until close ends here; anything else was cut short. */
		if (c->busy && c->got_bytes) {
			res = hrp_eof(c->r);
			conn_close(c);
			worker_on_response(c->w, c, res == HRP_DONE, hrp_error(c->r));
			return;
		}
		conn_failed(c, "connection closed by peer");
		return;
	}
	if (!c->busy) {
		/* Nothing was asked: a server must not talk first. */
		conn_close(c);
		return;
	}
	c->got_bytes = true;
	res = hrp_feed(c->r, c->in.data, (size_t)k, &used);
	if (res == HRP_MORE)
		return;
	if (res == HRP_ERROR) {
		conn_close(c);
		worker_on_response(c->w, c, false, hrp_error(c->r));
		return;
	}
	c->served++;
	/* Bytes after the response were never asked for: the connection is out of step. */
	if (!hrp_keep_alive(c->r) || used < (size_t)k)
		conn_close(c);
	worker_on_response(c->w, c, true, NULL);
}

static void conn_event(struct conn *c, uint32_t events)
{
	if (c->connecting) {
		int err = 0;
		socklen_t len = sizeof(err);
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
			conn_failed(c, strerror(err ? err : errno));
			return;
		}
		/* A stale event for an earlier socket of this conn: not connected yet. */
		if (getpeername(c->fd, (struct sockaddr *)&peer, &plen))
			return;
		c->connecting = false;
		if (conn_flush(c))
			conn_failed(c, strerror(errno));
		return;
	}
	if ((events & EPOLLOUT) && c->out_off < c->out.len) {
		if (conn_flush(c)) {
			conn_failed(c, strerror(errno));
			return;
		}
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		conn_readable(c);
}

static void loop_check_timeouts(struct loop *lp, uint64_t now)
{
	for (int i = 0; i < lp->nworkers; i++) {
		struct worker *w = lp->workers[i];
		if (w->cur && w->cur->busy && now - w->req_t0 > lp->b->timeout_ns) {
			struct conn *c = w->cur;
			conn_close(c);
			worker_on_response(w, c, false, "timed out");
		}
	}
}

static void *loop_run(void *arg)
{
	struct loop *lp = arg;
	struct epoll_event evs[64];
	uint64_t last_check = time_mono_ns();

	lp->active = lp->nworkers;
	for (int i = 0; i < lp->nworkers; i++) {
		lp->workers[i]->done = false;
		lp->workers[i]->st = W_IDLE;
		worker_next(lp->workers[i]);
	}
	while (lp->active > 0) {
		int n = epoll_wait(lp->epfd, evs, (int)ARRAY_LEN(evs), 100);
		uint64_t now;
		if (n < 0 && errno != EINTR) {
			perror("benchmark: epoll_wait");
			abort();
		}
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (c->fd >= 0)
				conn_event(c, evs[i].events);
		}
		now = time_mono_ns();
		if (now - last_check > 100000000ULL) {
			last_check = now;
			loop_check_timeouts(lp, now);
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Phases and figures
 */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void print_stats(const struct bench *b, const char *title, double secs, double cpu_user,
			double cpu_sys)
{
	uint64_t n = 0, *s = xmalloc(sizeof(*s) * (b->o.n ? (size_t)b->o.n : 1));
	double sum = 0, avg = 0, var = 0, min = 0, max = 0;
	static const int pct[] = {50, 66, 75, 80, 90, 95, 98, 99};

	for (long long i = 0; i < b->o.n; i++)
		if (b->lat_ns[i])
			s[n++] = b->lat_ns[i];
	qsort(s, n, sizeof(*s), cmp_u64);
	for (uint64_t i = 0; i < n; i++)
		sum += (double)s[i] / 1e6;
	if (n) {
		avg = sum / (double)n;
		for (uint64_t i = 0; i < n; i++) {
			double d = (double)s[i] / 1e6 - avg;
			var += d * d;
		}
		var /= (double)n;
		min = (double)s[0] / 1e6;
		max = (double)s[n - 1] / 1e6;
	}
	if (secs <= 0)
		secs = 1e-9;
	printf("\n------------ %s ----------\n", title);
	printf("Concurrency Level:      %d\n", b->o.c);
	printf("Time taken for tests:   %.3f seconds\n", secs);
	printf("Completed requests:     %8" PRIu64 "\n", b->completed);
	printf("Failed requests:        %" PRIu64 "\n", b->failed);
	printf("Total transferred:      %" PRIu64 " bytes\n", b->transferred);
	printf("Requests per second:    %.2f [#/sec]\n", (double)b->completed / secs);
	printf("Transfer rate:          %.2f [Kbytes/sec]\n", (double)b->transferred / 1024 / secs);
	printf("\nConnection Times (ms)\n");
	printf("              min      avg        max      std\n");
	printf("Total:        %.1f      %.1f       %.1f      %.1f\n", min, avg, max, sqrt(var));
	printf("\nPercentage of the requests served within a certain time (ms)\n");
	for (size_t i = 0; i < ARRAY_LEN(pct); i++) {
		double v = 0;
		if (n) {
			/* Nearest rank: the smallest sample with at least pct% at or below it. */
			uint64_t rank = (n * (uint64_t)pct[i] + 99) / 100;
			v = (double)s[rank ? rank - 1 : 0] / 1e6;
		}
		printf("  %3d%%    %5.1f ms\n", pct[i], v);
	}
	printf("  100%%    %5.1f ms\n", max);
	printf("\nClient CPU:             %.2f s user, %.2f s system\n", cpu_user, cpu_sys);
	fflush(stdout);
	free(s);
}

static void progress(struct bench *b, uint64_t t0, uint64_t *last_done, uint64_t *last_bytes,
		     uint64_t *last_t)
{
	uint64_t now = time_mono_ns();
	uint64_t done = __atomic_load_n(&b->completed, __ATOMIC_RELAXED) +
			__atomic_load_n(&b->failed, __ATOMIC_RELAXED);
	uint64_t bytes = __atomic_load_n(&b->transferred, __ATOMIC_RELAXED);
	double dt = (double)(now - *last_t) / 1e9;
	if (dt <= 0)
		return;
	fprintf(stderr,
		"Completed %" PRIu64 " of %" PRIu64 " requests, %.1f%% %.1f/s %.1fMB/s (%.0fs)\n",
		done, b->total, b->total ? 100.0 * (double)done / (double)b->total : 100.0,
		(double)(done - *last_done) / dt, (double)(bytes - *last_bytes) / dt / 1048576.0,
		(double)(now - t0) / 1e9);
	*last_done = done;
	*last_bytes = bytes;
	*last_t = now;
}

static double tv_s(struct timeval tv) { return (double)tv.tv_sec + (double)tv.tv_usec / 1e6; }

/* Runs one phase; returns its wall time and adds the process's CPU time to *user, *sys. */
static double run_phase(struct bench *b, struct loop *loops, int nloops, double *user, double *sys)
{
	struct rusage ru0, ru1;
	uint64_t t0, last_done = 0, last_bytes = 0, last_t, next_print;
	int finished = 0;

	b->next = 0;
	b->completed = b->failed = b->transferred = 0;
	memset(b->lat_ns, 0, sizeof(*b->lat_ns) * (size_t)b->o.n);
	getrusage(RUSAGE_SELF, &ru0);
	t0 = last_t = time_mono_ns();
	next_print = t0 + 1000000000ULL;
	for (int i = 0; i < nloops; i++)
		if (pthread_create(&loops[i].thread, NULL, loop_run, &loops[i]))
			fatal("benchmark: cannot start a thread");
	/* Poll the counters rather than join at once, to print progress each second. */
	while (finished < nloops) {
		struct timespec ts = {0, 20000000};
		uint64_t done;
		nanosleep(&ts, NULL);
		done = __atomic_load_n(&b->completed, __ATOMIC_RELAXED) +
		       __atomic_load_n(&b->failed, __ATOMIC_RELAXED);
		if (done >= b->total) {
			for (; finished < nloops; finished++)
				pthread_join(loops[finished].thread, NULL);
			break;
		}
		if (time_mono_ns() >= next_print) {
			progress(b, t0, &last_done, &last_bytes, &last_t);
			next_print += 1000000000ULL;
		}
	}
	t0 = time_mono_ns() - t0;
	getrusage(RUSAGE_SELF, &ru1);
	*user = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
	*sys = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
	return (double)t0 / 1e9;
}

static int list_save(const struct bench *b)
{
	FILE *f = fopen(b->o.list, "w");
	char fid[FID_STR_MAX + 16];
	if (!f) {
		fprintf(stderr, "benchmark: cannot write %s: %s\n", b->o.list, strerror(errno));
		return -1;
	}
	fprintf(f, "# weedfs benchmark seed=%lld size=%d\n", b->o.seed, b->o.size);
	for (long long i = 0; i < b->o.n; i++) {
		if (!b->recs[i].ok)
			continue;
		format_fid(&b->recs[i], fid, sizeof(fid));
		fprintf(f, "%lld %s %" PRIu32 "\n", i, fid, b->recs[i].size);
	}
	if (fclose(f)) {
		fprintf(stderr, "benchmark: cannot write %s: %s\n", b->o.list, strerror(errno));
		return -1;
	}
	return 0;
}

/* Reads a list written by list_save; sets o.n, o.seed and the records. */
static int list_load(struct bench *b)
{
	FILE *f = fopen(b->o.list, "r");
	char line[256];
	long long n = 0, cap = 0, seed = 0;
	int size = 0;

	if (!f) {
		fprintf(stderr, "benchmark: cannot read %s: %s\n", b->o.list, strerror(errno));
		return -1;
	}
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "# weedfs benchmark seed=%lld size=%d", &seed, &size) != 2) {
		fprintf(stderr, "benchmark: %s is not a benchmark list\n", b->o.list);
		fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		long long idx;
		char fs[128];
		unsigned sz;
		struct fid fd;
		const char *us;
		struct rec *r;
		if (sscanf(line, "%lld %127s %u", &idx, fs, &sz) != 3 || fid_parse(fs, &fd, NULL) ||
		    idx < 0 || sz > MAX_FILE_SIZE) {
			fprintf(stderr, "benchmark: bad line in %s: %s", b->o.list, line);
			fclose(f);
			return -1;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			b->recs = xrealloc(b->recs, sizeof(*b->recs) * (size_t)cap);
		}
		r = &b->recs[n++];
		memset(r, 0, sizeof(*r));
		r->vid = fd.volume_id;
		r->cookie = fd.cookie;
		r->key = fd.key;
		/* Keep the _N form as written; fid_parse already added N to the key. */
		us = strchr(fs, '_');
		if (us) {
			r->delta = (uint32_t)strtoul(us + 1, NULL, 10);
			r->key -= r->delta;
		}
		r->size = sz;
		r->ok = true;
		r->cidx = (uint64_t)idx;
	}
	fclose(f);
	b->o.n = n;
	b->o.seed = seed;
	b->o.size = size;
	return 0;
}

static const char summary[] =
	"Writes n files of size bytes (assign on the master, then PUT to the volume server), then\n"
	"reads them back in random order, verifying length and content, and prints figures in\n"
	"SeaweedFS's format. Exits 1 if any request failed.";

static void loop_setup(struct bench *b, struct loop *lp, struct worker *ws, int first, int step)
{
	lp->b = b;
	lp->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (lp->epfd < 0)
		fatal("benchmark: epoll_create1: %s", strerror(errno));
	for (int i = first; i < b->o.c; i += step) {
		struct worker *w = &ws[i];
		w->lp = lp;
		w->id = i;
		w->data = xmalloc((size_t)b->o.size + 8);
		w->master = conn_new(w, lp->epfd, b->o.master);
		if (!w->master)
			fatal("benchmark: cannot resolve master \"%s\"", b->o.master);
		lp->workers =
			xrealloc(lp->workers, sizeof(*lp->workers) * (size_t)(lp->nworkers + 1));
		lp->workers[lp->nworkers++] = w;
	}
}

static void loop_cleanup(struct loop *lp)
{
	for (int i = 0; i < lp->nworkers; i++) {
		struct worker *w = lp->workers[i];
		conn_free(w->master);
		for (int j = 0; j < w->npeers; j++)
			conn_free(w->peers[j].c);
		free(w->peers);
		free(w->data);
	}
	for (uint32_t i = 0; i < lp->nvlocs; i++)
		free(lp->vlocs[i].urls);
	free(lp->vlocs);
	free(lp->workers);
	if (lp->epfd >= 0)
		close(lp->epfd);
}

/* Collects the written files in a random order (Fisher-Yates, seeded). */
static void read_order(struct bench *b)
{
	uint64_t s = (uint64_t)b->o.seed ^ 0x5851f42d4c957f2dULL, n = 0;
	b->order = xmalloc(sizeof(*b->order) * (size_t)(b->o.n ? b->o.n : 1));
	for (long long i = 0; i < b->o.n; i++)
		if (b->recs[i].ok)
			b->order[n++] = (uint64_t)i;
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = splitmix64(&s) % i, t = b->order[i - 1];
		b->order[i - 1] = b->order[j];
		b->order[j] = t;
	}
	b->order_len = n;
}

int benchmark_main(int argc, char **argv)
{
	struct bench *b = xcalloc(1, sizeof(*b));
	struct options *o = &b->o;
	struct loop *loops = NULL;
	struct worker *workers = NULL;
	int npos = 0, rc, status = 0, nloops = 0;
	double secs, cu, cs;
	char leader[MASTER_ADDR_MAX];

	o->master = "127.0.0.1:9333";
	o->c = 16;
	o->n = 1048576;
	o->size = 1024;
	o->collection = "";
	o->replication = "";
	o->write = true;
	o->read = true;
	o->assign_batch = 1;
	o->threads = 1;
	o->timeout_s = 30;
	o->list = "";
	o->verify_every = 1;
	const char *security_file = NULL;
	const struct flag flags[] = {
		{"master", FLAG_STRING, &o->master,
		 "master address host:port, or every master as a comma list (the run uses the "
		 "leader they name)"},
		{"c", FLAG_INT, &o->c, "concurrent requests (one keep-alive connection each)"},
		{"n", FLAG_I64, &o->n, "number of files to write and read"},
		{"size", FLAG_INT, &o->size, "size of each file in bytes"},
		{"collection", FLAG_STRING, &o->collection, "collection to write to"},
		{"replication", FLAG_STRING, &o->replication, "replica placement, e.g. 001"},
		{"write", FLAG_BOOL, &o->write, "run the writing phase"},
		{"read", FLAG_BOOL, &o->read, "run the reading phase"},
		{"seed", FLAG_I64, &o->seed,
		 "seed of the contents and the read order (0: from the clock)"},
		{"assignBatch", FLAG_INT, &o->assign_batch,
		 "file ids per /dir/assign (count=N, then fid_1 .. fid_N-1)"},
		{"threads", FLAG_INT, &o->threads, "client event-loop threads"},
		{"timeout", FLAG_DOUBLE, &o->timeout_s,
		 "seconds before a request counts as failed"},
		{"list", FLAG_STRING, &o->list,
		 "save the written fids to this file; with -write=false, read the files it lists"},
		{"multipart", FLAG_BOOL, &o->multipart,
		 "upload as a multipart/form-data POST (as SeaweedFS's tool does), not a PUT"},
		{"verifyEvery", FLAG_INT, &o->verify_every,
		 "compare the content of every Nth file read (0: length only)"},
		{"security", FLAG_STRING, &security_file,
		 SECURITY_FLAG_HELP " (reads mint jwt.signing.read tokens)"},
	};

	rc = flags_parse(flags, ARRAY_LEN(flags), argc, argv, "benchmark", summary, &npos);
	if (rc) {
		status = rc > 0 ? 0 : 2;
		goto out;
	}
	rc = daemon_load_security("benchmark", flags, ARRAY_LEN(flags));
	if (rc >= 0) {
		status = rc;
		goto out;
	}
	if (npos < argc) {
		fprintf(stderr, "weedfs benchmark: unexpected argument \"%s\"\n", argv[npos]);
		status = 2;
		goto out;
	}
	if (o->c < 1 || o->c > 4096 || o->n < 0 || o->n > (1LL << 32) || o->size < 1 ||
	    o->size > MAX_FILE_SIZE || o->assign_batch < 1 || o->assign_batch > 1000000 ||
	    o->threads < 1 || o->threads > 64 || !(o->timeout_s > 0) || o->verify_every < 0) {
		fprintf(stderr, "weedfs benchmark: need 1<=c<=4096, 0<=n<=2^32, "
				"1<=size<=256MiB, 1<=assignBatch<=1000000, 1<=threads<=64, "
				"timeout>0, verifyEvery>=0\n");
		status = 2;
		goto out;
	}
	if (!o->write && !*o->list) {
		fprintf(stderr,
			"weedfs benchmark: -write=false needs -list=FILE from an earlier run\n");
		status = 2;
		goto out;
	}
	if (o->threads > o->c)
		o->threads = o->c;
	if (strchr(o->master, ',')) {
		if (!master_pick(o->master, leader, sizeof(leader))) {
			status = 2;
			goto out;
		}
		o->master = leader;
	}
	if (!o->write) {
		if (list_load(b)) {
			status = 2;
			goto out;
		}
	} else {
		if (!o->seed)
			o->seed = (long long)(time_now_ns() & 0x7fffffffffffULL);
		b->recs = xcalloc(o->n ? (size_t)o->n : 1, sizeof(*b->recs));
	}
	b->lat_ns = xcalloc(o->n ? (size_t)o->n : 1, sizeof(*b->lat_ns));
	b->timeout_ns = (uint64_t)(o->timeout_s * 1e9);
	b->assign_path = assign_path_new(o);

	nloops = o->threads;
	loops = xcalloc((size_t)nloops, sizeof(*loops));
	workers = xcalloc((size_t)o->c, sizeof(*workers));
	for (int i = 0; i < nloops; i++)
		loop_setup(b, &loops[i], workers, i, nloops);

	printf("weedfs benchmark: master=%s c=%d n=%lld size=%d assignBatch=%d threads=%d "
	       "seed=%lld\n",
	       o->master, o->c, o->n, o->size, o->assign_batch, o->threads, o->seed);
	fflush(stdout);
	if (o->write) {
		b->phase = PHASE_WRITE;
		b->total = (uint64_t)o->n;
		secs = run_phase(b, loops, nloops, &cu, &cs);
		print_stats(b, "Writing Benchmark", secs, cu, cs);
		if (b->failed)
			status = 1;
		if (*o->list && list_save(b))
			status = 1;
	}
	if (o->read) {
		read_order(b);
		b->phase = PHASE_READ;
		b->total = b->order_len;
		secs = run_phase(b, loops, nloops, &cu, &cs);
		print_stats(b, "Randomly Reading Benchmark", secs, cu, cs);
		if (b->failed)
			status = 1;
	}
out:
	for (int i = 0; i < nloops; i++)
		loop_cleanup(&loops[i]);
	free(loops);
	free(workers);
	free(b->recs);
	free(b->lat_ns);
	free(b->order);
	free(b->assign_path);
	free(b);
	return status;
}
