/* Short-circuit reads, the reader's side: see short_circuit.h. */
#include "config.h"
#include "short_circuit.h"
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include "bigbuf.h"
#include "client/fid.h"
#include "crc32c.h"
#include "log.h"
#include "sc_wire.h"
#include "util.h"

#define IDLE_MAX  16 /* idle connections kept per server */
#define ADDRS_MAX 64 /* interface addresses compared against */
/* a descriptor unused this long is closed: a deleted volume's space is freed only then */
#define VOLUME_IDLE_NS (60 * 1000000000ull)

struct sc_volume {
	uint32_t vid;
	int fd;
	uint64_t dev, ino;
	uint64_t used_ns;
};

struct sc_server {
	char *url;
	bool local;
	uint64_t off_until_ns; /* connecting failed: HTTP only until then */
	int idle[IDLE_MAX];
	size_t nidle;
	struct sc_volume *vols;
	size_t nvols;
	struct sc_server *next;
};

struct short_circuit {
	pthread_mutex_t mu;
	struct sc_server *servers; /* protected by mu */
	struct in6_addr addrs[ADDRS_MAX]; /* this host's addresses (IPv4 mapped), read once */
	size_t naddrs;
	struct timeval timeout; /* of one request on a connection */
	atomic_uint_fast64_t reads, bytes, fallbacks, descriptors;
};

static void addr_v4_mapped(const struct in_addr *a, struct in6_addr *out)
{
	memset(out, 0, sizeof(*out));
	out->s6_addr[10] = out->s6_addr[11] = 0xff;
	memcpy(out->s6_addr + 12, a, 4);
}

short_circuit *short_circuit_new(long timeout_ms)
{
	short_circuit *sc = xcalloc(1, sizeof(*sc));
	struct ifaddrs *ifs = NULL;

	sc->timeout.tv_sec = timeout_ms / 1000;
	sc->timeout.tv_usec = (timeout_ms % 1000) * 1000;

	pthread_mutex_init(&sc->mu, NULL);
	if (getifaddrs(&ifs) == 0) {
		for (struct ifaddrs *i = ifs; i && sc->naddrs < ADDRS_MAX; i = i->ifa_next) {
			if (!i->ifa_addr)
				continue;
			if (i->ifa_addr->sa_family == AF_INET)
				addr_v4_mapped(&((struct sockaddr_in *)i->ifa_addr)->sin_addr,
					       &sc->addrs[sc->naddrs++]);
			else if (i->ifa_addr->sa_family == AF_INET6)
				sc->addrs[sc->naddrs++] =
					((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		}
		freeifaddrs(ifs);
	}
	return sc;
}

void short_circuit_free(short_circuit *sc)
{
	if (!sc)
		return;
	for (struct sc_server *s = sc->servers, *next; s; s = next) {
		next = s->next;
		for (size_t i = 0; i < s->nidle; i++)
			close(s->idle[i]);
		for (size_t i = 0; i < s->nvols; i++)
			close(s->vols[i].fd);
		free(s->vols);
		free(s->url);
		free(s);
	}
	pthread_mutex_destroy(&sc->mu);
	free(sc);
}

void short_circuit_get_stats(short_circuit *sc, struct short_circuit_stats *out)
{
	out->reads = atomic_load(&sc->reads);
	out->bytes = atomic_load(&sc->bytes);
	out->fallbacks = atomic_load(&sc->fallbacks);
	out->descriptors = atomic_load(&sc->descriptors);
}

/* Whether url's host is this host: a loopback address, one of its interfaces', localhost. */
static bool url_is_local(const short_circuit *sc, const char *url)
{
	char host[128];
	const char *colon = strrchr(url, ':');
	size_t n = colon ? (size_t)(colon - url) : strlen(url);
	struct in6_addr a6;
	struct in_addr a4;

	if (n >= 2 && url[0] == '[' && url[n - 1] == ']') {
		url++;
		n -= 2;
	}
	if (n >= sizeof(host))
		return false;
	memcpy(host, url, n);
	host[n] = '\0';
	if (!strcmp(host, "localhost"))
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1) {
		if ((ntohl(a4.s_addr) >> 24) == 127)
			return true;
		addr_v4_mapped(&a4, &a6);
	} else if (inet_pton(AF_INET6, host, &a6) == 1) {
		if (IN6_IS_ADDR_LOOPBACK(&a6))
			return true;
	} else {
		return false; /* a name: not resolved here */
	}
	for (size_t i = 0; i < sc->naddrs; i++)
		if (!memcmp(&sc->addrs[i], &a6, sizeof(a6)))
			return true;
	return false;
}

/* The entry of url, made on first use. Under mu. */
static struct sc_server *server_of(short_circuit *sc, const char *url)
{
	struct sc_server *s;
	for (s = sc->servers; s; s = s->next)
		if (!strcmp(s->url, url))
			return s;
	s = xcalloc(1, sizeof(*s));
	s->url = xstrdup(url);
	s->local = url_is_local(sc, url);
	s->next = sc->servers;
	sc->servers = s;
	return s;
}

/* Closes the descriptors of s not used for VOLUME_IDLE_NS, and vid's when drop. Under mu. */
static void volumes_sweep(struct sc_server *s, uint64_t now, uint32_t vid, bool drop)
{
	for (size_t i = 0; i < s->nvols;) {
		if ((drop && s->vols[i].vid == vid) || now - s->vols[i].used_ns > VOLUME_IDLE_NS) {
			close(s->vols[i].fd);
			s->vols[i] = s->vols[--s->nvols];
		} else {
			i++;
		}
	}
}

static struct sc_volume *volume_of(struct sc_server *s, uint32_t vid)
{
	for (size_t i = 0; i < s->nvols; i++)
		if (s->vols[i].vid == vid)
			return &s->vols[i];
	return NULL;
}

/* Keeps fd (taken) as vid's descriptor, closing the one it replaces. Under mu. */
static void volume_keep(struct sc_server *s, uint32_t vid, int fd, uint64_t dev, uint64_t ino)
{
	struct sc_volume *v = volume_of(s, vid);
	if (!v) {
		s->vols = xrealloc(s->vols, (s->nvols + 1) * sizeof(*s->vols));
		v = &s->vols[s->nvols++];
		v->vid = vid;
	} else {
		close(v->fd);
	}
	v->fd = fd;
	v->dev = dev;
	v->ino = ino;
	v->used_ns = time_mono_ns();
}

/* A connection to url's socket; -1 when none answers (then not tried for a while). */
static int connect_server(short_circuit *sc, const char *url)
{
	struct sockaddr_un sa;
	socklen_t len;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (s < 0)
		return -1;
	/* a stopped (SIGSTOP) or hung server: the read moves on to HTTP, then another replica */
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &sc->timeout, sizeof(sc->timeout));
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &sc->timeout, sizeof(sc->timeout));
	sc_socket_addr(url, &sa, &len);
	if (connect(s, (struct sockaddr *)&sa, len) == 0)
		return s;
	close(s);
	pthread_mutex_lock(&sc->mu);
	server_of(sc, url)->off_until_ns = time_mono_ns() + SC_RETRY_SECONDS * 1000000000ull;
	pthread_mutex_unlock(&sc->mu);
	return -1;
}

/* One request on conn and its answer (a descriptor in *fd, -1 if none). */
static wfs_err ask(int conn, const char *fid, bool want_fd, struct sc_answer *a, int *fd)
{
	struct sc_request rq = {.want_fd = want_fd};
	char line[SC_LINE_MAX];
	size_t len;
	wfs_err err;

	*fd = -1;
	snprintf(rq.fid, sizeof(rq.fid), "%s", fid);
	err = sc_send(conn, line, sc_format_request(&rq, line), -1);
	if (!err)
		err = sc_recv(conn, line, &len, fd);
	if (!err)
		err = sc_parse_answer(line, len, a);
	if (err && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return err;
}

/* Appends [pos, pos+n) of fd to out; false on a short read or an error. */
static bool pread_all(int fd, uint64_t pos, size_t n, buf *out)
{
	size_t got = 0;
	if (!out->len)
		bigbuf_presize(out, n);
	buf_reserve(out, n);
	while (got < n) {
		ssize_t r = pread(fd, out->data + out->len + got, n - got, (off_t)(pos + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	out->len += n;
	out->data[out->len] = '\0';
	return true;
}

/* Where the needle lies and a descriptor (a dup, the caller closes it) to read it from. */
static wfs_err locate(short_circuit *sc, const char *url, const char *fid, uint32_t vid,
		      struct sc_answer *a, int *fd)
{
	struct sc_server *s;
	struct sc_volume *v;
	uint64_t dev = 0, ino = 0, now = time_mono_ns();
	int conn = -1, got = -1;
	wfs_err err;

	*fd = -1;
	pthread_mutex_lock(&sc->mu);
	s = server_of(sc, url);
	if (!s->local || now < s->off_until_ns) {
		pthread_mutex_unlock(&sc->mu);
		return WFS_ENOSYS; /* not a fallback: never tried */
	}
	if (s->nidle)
		conn = s->idle[--s->nidle];
	volumes_sweep(s, now, 0, false);
	v = volume_of(s, vid);
	if (v) {
		*fd = dup(v->fd);
		dev = v->dev;
		ino = v->ino;
		v->used_ns = now;
	}
	pthread_mutex_unlock(&sc->mu);
	if (conn < 0)
		conn = connect_server(sc, url);
	if (conn < 0)
		goto fail;
	err = ask(conn, fid, *fd < 0, a, &got);
	if (!err && !a->err && *fd >= 0 && (a->dev != dev || a->ino != ino)) {
		/* another file than the one held: ask for the new one */
		close(*fd);
		*fd = -1;
		err = ask(conn, fid, true, a, &got);
	}
	if (err) {
		close(conn); /* the connection's state is unknown */
		goto fail;
	}
	if (!a->err && *fd < 0) {
		struct stat st;
		if (got < 0 || fstat(got, &st) || (uint64_t)st.st_dev != a->dev ||
		    (uint64_t)st.st_ino != a->ino) {
			log_warn("short-circuit read of %s from %s: the descriptor is not the "
				 "file the answer names", fid, url);
			if (got >= 0)
				close(got);
			close(conn);
			goto fail;
		}
		atomic_fetch_add(&sc->descriptors, 1);
		*fd = dup(got);
		pthread_mutex_lock(&sc->mu);
		volume_keep(s, vid, got, a->dev, a->ino);
		pthread_mutex_unlock(&sc->mu);
	} else if (got >= 0) {
		close(got);
	}
	pthread_mutex_lock(&sc->mu);
	if (s->nidle < IDLE_MAX)
		s->idle[s->nidle++] = conn;
	else
		close(conn);
	if (a->err == WFS_ENOENT)
		volumes_sweep(s, now, vid, true); /* the volume may have left this server */
	pthread_mutex_unlock(&sc->mu);
	if (!a->err && *fd >= 0)
		return WFS_OK;
	if (a->err && a->err != WFS_ENOSYS)
		log_debug("short-circuit read of %s from %s: %s", fid, url, a->msg);
fail:
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	atomic_fetch_add(&sc->fallbacks, 1);
	return WFS_ENOSYS;
}

wfs_err short_circuit_read(short_circuit *sc, const char *url, const char *fid, uint64_t off,
			   uint64_t len, size_t max_whole, buf *out)
{
	struct sc_answer a;
	struct fid f;
	size_t mark = out->len;
	wfs_err err = WFS_ENOSYS;
	int fd;

	if (fid_parse(fid, &f, NULL))
		return WFS_ENOSYS;
	if (locate(sc, url, fid, f.volume_id, &a, &fd))
		return WFS_ENOSYS;
	if (!len) {
		if (a.data_size > max_whole) {
			err = WFS_ETOOBIG;
			goto out;
		}
		if (!pread_all(fd, a.data_off, (size_t)a.data_size, out))
			goto fallback;
		if (!crc32c_stored_matches(a.crc, crc32c_update(0, out->data + mark,
								 (size_t)a.data_size))) {
			log_error("short-circuit read of %s from %s: CRC mismatch, the needle is "
				  "damaged", fid, url);
			goto fallback;
		}
	} else {
		/* a range past the end: HTTP's answer (416) says so exactly */
		if (off > a.data_size || len > a.data_size - off)
			goto fallback;
		if (!pread_all(fd, a.data_off + off, (size_t)len, out))
			goto fallback;
	}
	atomic_fetch_add(&sc->reads, 1);
	atomic_fetch_add(&sc->bytes, out->len - mark);
	err = WFS_OK;
	goto out;
fallback:
	out->len = mark;
	if (out->data)
		out->data[mark] = '\0';
	atomic_fetch_add(&sc->fallbacks, 1);
	err = WFS_ENOSYS;
out:
	if (fd >= 0)
		close(fd);
	return err;
}
