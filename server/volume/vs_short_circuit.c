/*
 * Short-circuit reads, the volume server's side (lib/sc_wire.h): readers on
 * this host ask over a Unix socket where a needle's data lies and receive a
 * read-only descriptor of the volume's .dat to pread it from, so the bytes
 * never cross TCP.
 *
 * DESIGN
 * - The socket is in the abstract namespace, named after the url the server
 *   advertises (what a reader finds in a volume lookup), so there is no file
 *   to clean up after a crash and a reader that can reach the server at that
 *   address in this network namespace finds it.
 * - One accept thread; each connection gets a thread of its own that answers
 *   its requests in turn. A reader keeps its connection, requests are a line
 *   each, and a thread that waits on a needle header's pread holds up only its
 *   own reader. At most SC_CONN_MAX connections: more are closed at once and
 *   those readers use HTTP.
 * - The checks of an HTTP read: volume_read_ex (cookie, deletion, TTL) with
 *   inline_max 0 decodes the needle's fields and leaves the data on disk.
 *   Compressed needles are refused (HTTP serves them with their
 *   Content-Encoding) and the reader falls back to HTTP.
 * - The descriptor: the .dat reopened O_RDONLY through /proc/self/fd, since a
 *   dup would share the server's read-write open file: a reader can read
 *   the volume, never write it. Only peers running as the server's user or
 *   root are answered (SO_PEERCRED): the descriptor shows every needle of the
 *   volume, deleted ones included, which HTTP does not.
 * - Stop: shutdown() of the listening socket and of every connection wakes
 *   their threads; the accept thread is joined and the connection threads
 *   (detached) are waited for until none is left.
 * - Read signing (jwt.signing.read) turns the socket off: a descriptor shows
 *   every needle of the volume, which no per-needle token can scope, so
 *   readers use HTTP and its token check instead (docs/security.md).
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "log.h"
#include "sc_wire.h"
#include "security.h"
#include "util.h"
#include "vs_int.h"

#define SC_CONN_MAX 256

struct sc_conn {
	struct vs_short_circuit *sc;
	int sock;
	struct sc_conn *next;
};

struct vs_short_circuit {
	struct volume_server *vs;
	int lsock;
	pthread_t accept_thread;
	pthread_mutex_t mu;
	pthread_cond_t gone;   /* a connection thread ended */
	struct sc_conn *conns; /* protected by mu */
	size_t nconns;         /* protected by mu */
	bool stopping;         /* protected by mu */
	atomic_uint_fast64_t answered, descriptors, refused;
};

/* Fills a for request rq; *fd gets a read-only descriptor of the .dat when asked for. */
static void answer(struct vs_short_circuit *sc, const struct sc_request *rq, buf *storage,
		   struct sc_answer *a, int *fd)
{
	char path[SC_FID_MAX + 1], proc[64];
	struct needle_blob blob = {-1, 0};
	struct fid_path f;
	struct needle n;
	struct stat st;
	volume *v;

	*fd = -1;
	memset(a, 0, sizeof(*a));
	snprintf(path, sizeof(path), "/%s", rq->fid);
	if (vs_parse_fid_path(path, &f) || f.ext || f.filename) {
		a->err = WFS_EINVAL;
		snprintf(a->msg, sizeof(a->msg), "malformed file id");
		return;
	}
	v = volume_store_get(sc->vs->store, f.vid);
	if (!v) {
		a->err = WFS_ENOENT;
		snprintf(a->msg, sizeof(a->msg), "volume %" PRIu32 " is not on this server", f.vid);
		return;
	}
	a->err = volume_read_ex(v, f.key, f.cookie, false, 0, storage, &n, &blob);
	volume_unref(v);
	if (a->err) {
		snprintf(a->msg, sizeof(a->msg), "%s", wfs_strerror(a->err));
		return;
	}
	if (blob.fd < 0 || (n.flags & NEEDLE_FLAG_COMPRESSED)) {
		a->err = WFS_ENOSYS; /* empty or compressed: HTTP answers those */
		snprintf(a->msg, sizeof(a->msg), "read it over HTTP");
		goto out;
	}
	if (fstat(blob.fd, &st)) {
		a->err = WFS_EIO;
		snprintf(a->msg, sizeof(a->msg), "fstat: %s", strerror(errno));
		goto out;
	}
	if (rq->want_fd) {
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", blob.fd);
		*fd = open(proc, O_RDONLY | O_CLOEXEC);
		if (*fd < 0) {
			a->err = WFS_EIO;
			snprintf(a->msg, sizeof(a->msg), "reopen: %s", strerror(errno));
			goto out;
		}
		atomic_fetch_add(&sc->descriptors, 1);
	}
	a->dev = (uint64_t)st.st_dev;
	a->ino = (uint64_t)st.st_ino;
	a->data_off = blob.off;
	a->data_size = n.data_size;
	a->crc = n.crc;
	atomic_fetch_add(&sc->answered, 1);
out:
	close(blob.fd);
}

/* Whether the peer runs as this process's user or as root. */
static bool peer_allowed(int sock)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return false;
	return cred.uid == 0 || cred.uid == geteuid();
}

static void *conn_main(void *arg)
{
	struct sc_conn *c = arg;
	struct vs_short_circuit *sc = c->sc;
	char line[SC_LINE_MAX], out[SC_LINE_MAX];
	buf storage = BUF_INIT;

	if (!peer_allowed(c->sock)) {
		atomic_fetch_add(&sc->refused, 1);
		goto done;
	}
	for (;;) {
		struct sc_request rq;
		struct sc_answer a;
		size_t len;
		int fd, junk;

		if (sc_recv(c->sock, line, &len, &junk))
			break;
		if (junk >= 0)
			close(junk); /* readers send no descriptors */
		if (sc_parse_request(line, len, &rq)) {
			memset(&a, 0, sizeof(a));
			a.err = WFS_EINVAL;
			snprintf(a.msg, sizeof(a.msg), "malformed request");
			sc_send(c->sock, out, sc_format_answer(&a, out), -1);
			break;
		}
		answer(sc, &rq, &storage, &a, &fd);
		wfs_err err = sc_send(c->sock, out, sc_format_answer(&a, out), fd);
		if (fd >= 0)
			close(fd);
		if (err)
			break;
	}
done:
	buf_free(&storage);
	pthread_mutex_lock(&sc->mu);
	for (struct sc_conn **p = &sc->conns; *p; p = &(*p)->next)
		if (*p == c) {
			*p = c->next;
			break;
		}
	sc->nconns--;
	close(c->sock);
	free(c);
	pthread_cond_broadcast(&sc->gone);
	pthread_mutex_unlock(&sc->mu); /* the last touch of sc: the stopper may free it next */
	return NULL;
}

static void *accept_main(void *arg)
{
	struct vs_short_circuit *sc = arg;

	for (;;) {
		int s = accept4(sc->lsock, NULL, NULL, SOCK_CLOEXEC);
		struct sc_conn *c;
		pthread_attr_t at;
		pthread_t th;
		bool started;

		if (s < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				usleep(10000); /* out of descriptors: give readers time to close some */
				continue;
			}
			break; /* EINVAL once stop shut the socket down */
		}
		pthread_mutex_lock(&sc->mu);
		if (sc->stopping || sc->nconns >= SC_CONN_MAX) {
			pthread_mutex_unlock(&sc->mu);
			close(s); /* the reader sees the connection end and uses HTTP */
			continue;
		}
		c = xcalloc(1, sizeof(*c));
		c->sc = sc;
		c->sock = s;
		c->next = sc->conns;
		sc->conns = c;
		sc->nconns++;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&at, 128 << 10);
		started = thread_start(&th, &at, conn_main, c, "wfs-vol-sc") == 0;
		pthread_attr_destroy(&at);
		if (!started) {
			sc->conns = c->next;
			sc->nconns--;
			close(s);
			free(c);
		}
		pthread_mutex_unlock(&sc->mu);
	}
	return NULL;
}

struct vs_short_circuit *vs_short_circuit_start(struct volume_server *vs)
{
	struct vs_short_circuit *sc;
	struct sockaddr_un sa;
	socklen_t len;
	int s;

	if (security()->volume_read.key) {
		log_info("short-circuit reads off: jwt.signing.read is set, reads go over HTTP");
		return NULL;
	}
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		log_warn("short-circuit reads off: socket: %s", strerror(errno));
		return NULL;
	}
	sc_socket_addr(vs->self, &sa, &len);
	if (bind(s, (struct sockaddr *)&sa, len) || listen(s, 64)) {
		log_warn("short-circuit reads off: could not listen on @%s: %s", sa.sun_path + 1,
			 strerror(errno));
		close(s);
		return NULL;
	}
	sc = xcalloc(1, sizeof(*sc));
	sc->vs = vs;
	sc->lsock = s;
	pthread_mutex_init(&sc->mu, NULL);
	pthread_cond_init(&sc->gone, NULL);
	if (thread_start(&sc->accept_thread, NULL, accept_main, sc, "wfs-vol-sc-acc")) {
		log_warn("short-circuit reads off: no thread");
		pthread_mutex_destroy(&sc->mu);
		pthread_cond_destroy(&sc->gone);
		close(s);
		free(sc);
		return NULL;
	}
	log_info("short-circuit reads on @%s", sa.sun_path + 1);
	return sc;
}

void vs_short_circuit_stop(struct vs_short_circuit *sc)
{
	if (!sc)
		return;
	pthread_mutex_lock(&sc->mu);
	sc->stopping = true;
	pthread_mutex_unlock(&sc->mu);
	shutdown(sc->lsock, SHUT_RDWR);
	pthread_join(sc->accept_thread, NULL);
	pthread_mutex_lock(&sc->mu);
	for (struct sc_conn *c = sc->conns; c; c = c->next)
		shutdown(c->sock, SHUT_RDWR);
	while (sc->nconns)
		pthread_cond_wait(&sc->gone, &sc->mu);
	pthread_mutex_unlock(&sc->mu);
	close(sc->lsock);
	pthread_mutex_destroy(&sc->mu);
	pthread_cond_destroy(&sc->gone);
	free(sc);
}

void vs_short_circuit_status(struct vs_short_circuit *sc, json_w *w)
{
	size_t n = 0;
	jw_key(w, "ShortCircuit");
	jw_obj_begin(w);
	jw_kv_bool(w, "enabled", sc != NULL);
	if (sc) {
		pthread_mutex_lock(&sc->mu);
		n = sc->nconns;
		pthread_mutex_unlock(&sc->mu);
		jw_kv_u64(w, "connections", n);
		jw_kv_u64(w, "answered", atomic_load(&sc->answered));
		jw_kv_u64(w, "descriptors", atomic_load(&sc->descriptors));
		jw_kv_u64(w, "refusedPeers", atomic_load(&sc->refused));
	}
	jw_obj_end(w);
}
