/*
 * Short-circuit reads' wire format (docs/internal-protocol.md, "Short-circuit
 * reads"). A reader on the volume server's host asks, over a Unix stream
 * socket, where a needle's data lies in its volume's .dat, and gets a
 * read-only descriptor of that file with the answer (SCM_RIGHTS) when it asks
 * for one; it then preads the bytes itself.
 *
 *   request  "READ <vid>,<keycookie> <want-fd: 0|1>\n"
 *   answer   "OK <dev> <ino> <data offset> <data size> <crc32c, 8 hex>\n" [+ descriptor]
 *            "NO <error wire name> <message>\n"
 *
 * dev and ino name the .dat the offset is in: a descriptor the reader holds
 * for another file (a vacuum or a new volume of the same id replaced it) must
 * not be read at that offset. One request and its answer at a time on a
 * connection; a line is at most SC_LINE_MAX bytes with its newline.
 */
#ifndef WEEDFS_LIB_SC_WIRE_H
#define WEEDFS_LIB_SC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "err.h"

#define SC_LINE_MAX 256
#define SC_FID_MAX  64
#define SC_MSG_MAX  160

struct sc_request {
	char fid[SC_FID_MAX]; /* "vid,keycookie" as the HTTP path names it, unchecked here */
	bool want_fd;
};

struct sc_answer {
	wfs_err err; /* WFS_OK: the fields below hold; else msg says why */
	uint64_t dev, ino, data_off, data_size;
	uint32_t crc;
	char msg[SC_MSG_MAX];
};

/*
 * The abstract socket address of the volume server that advertises url
 * ("ip:port"): one name per server, in the network namespace that reaches it
 * at that address. *len gets the address length to pass to bind or connect.
 */
void sc_socket_addr(const char *url, struct sockaddr_un *sa, socklen_t *len);

/* Writes the request's line (with its newline) into out[SC_LINE_MAX]; its length. */
size_t sc_format_request(const struct sc_request *r, char *out);
/* Writes the answer's line into out[SC_LINE_MAX]; its length. */
size_t sc_format_answer(const struct sc_answer *a, char *out);
/* Parses one request line (len bytes, the newline included or not). WFS_EINVAL if malformed. */
wfs_err sc_parse_request(const char *line, size_t len, struct sc_request *out);
/* Parses one answer line. WFS_EINVAL if malformed (out->err is then WFS_EINVAL too). */
wfs_err sc_parse_answer(const char *line, size_t len, struct sc_answer *out);

/* Sends line[0, len) with descriptor fd attached (-1: none). WFS_EUNAVAIL on failure. */
wfs_err sc_send(int sock, const char *line, size_t len, int fd);
/*
 * Receives one line into line[SC_LINE_MAX] (NUL-terminated, newline
 * dropped), and *fd the descriptor that came with it (-1: none; the caller
 * owns it). WFS_EUNAVAIL when the peer closed or failed, WFS_EINVAL when it
 * sent more than a line or a line too long (no descriptor is left open then).
 */
wfs_err sc_recv(int sock, char *line, size_t *len, int *fd);

#endif
