/* Short-circuit reads' wire format: see sc_wire.h. */
#include "config.h"
#include "sc_wire.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "util.h"

void sc_socket_addr(const char *url, struct sockaddr_un *sa, socklen_t *len)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* sun_path[0] = '\0': the abstract namespace, no file to clean up after a crash */
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "weedfs-volume/%s", url);
	if (n < 0 || (size_t)n >= sizeof(sa->sun_path) - 1)
		n = (int)sizeof(sa->sun_path) - 2;
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

size_t sc_format_request(const struct sc_request *r, char *out)
{
	int n = snprintf(out, SC_LINE_MAX, "READ %s %d\n", r->fid, r->want_fd ? 1 : 0);
	return n < 0 ? 0 : MIN((size_t)n, SC_LINE_MAX - 1);
}

size_t sc_format_answer(const struct sc_answer *a, char *out)
{
	int n;
	if (a->err == WFS_OK)
		n = snprintf(out, SC_LINE_MAX, "OK %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %08" PRIx32 "\n",
			     a->dev, a->ino, a->data_off, a->data_size, a->crc);
	else
		n = snprintf(out, SC_LINE_MAX, "NO %s %.*s\n", wfs_err_name(a->err), SC_MSG_MAX - 1,
			     a->msg);
	return n < 0 ? 0 : MIN((size_t)n, SC_LINE_MAX - 1);
}

/*
 * Copies line (one newline at its end dropped) into out[SC_LINE_MAX] and
 * splits it at single spaces into at most max fields, the last taking the
 * rest. The number of fields, or -1 when the line is too long or holds a NUL,
 * another newline or an empty field.
 */
static int split(const char *line, size_t len, char *out, char **f, int max)
{
	int n = 0;

	if (len && line[len - 1] == '\n')
		len--;
	if (len >= SC_LINE_MAX || memchr(line, '\0', len) || memchr(line, '\n', len))
		return -1;
	memcpy(out, line, len);
	out[len] = '\0';
	f[n++] = out;
	for (char *p = out; *p && n < max; p++) {
		if (*p != ' ')
			continue;
		*p = '\0';
		f[n++] = p + 1;
	}
	for (int i = 0; i < n; i++)
		if (!*f[i])
			return -1;
	return n;
}

wfs_err sc_parse_request(const char *line, size_t len, struct sc_request *out)
{
	char copy[SC_LINE_MAX], *f[3];

	memset(out, 0, sizeof(*out));
	if (split(line, len, copy, f, 3) != 3 || strcmp(f[0], "READ") || strchr(f[2], ' '))
		return WFS_EINVAL;
	if (strlen(f[1]) >= SC_FID_MAX || strchr(f[1], ' '))
		return WFS_EINVAL;
	if (strcmp(f[2], "0") && strcmp(f[2], "1"))
		return WFS_EINVAL;
	strcpy(out->fid, f[1]);
	out->want_fd = f[2][0] == '1';
	return WFS_OK;
}

static bool parse_crc(const char *s, uint32_t *out)
{
	uint32_t v = 0;
	if (strlen(s) != 8)
		return false;
	for (int i = 0; i < 8; i++) {
		int d = hex_digit_value((unsigned char)s[i]);
		if (d < 0)
			return false;
		v = v << 4 | (uint32_t)d;
	}
	*out = v;
	return true;
}

wfs_err sc_parse_answer(const char *line, size_t len, struct sc_answer *out)
{
	char copy[SC_LINE_MAX], *f[6];
	int n;

	memset(out, 0, sizeof(*out));
	out->err = WFS_EINVAL;
	n = split(line, len, copy, f, 6);
	if (n == 6 && !strcmp(f[0], "OK") && !strchr(f[5], ' ') && parse_u64(f[1], &out->dev) &&
	    parse_u64(f[2], &out->ino) && parse_u64(f[3], &out->data_off) &&
	    parse_u64(f[4], &out->data_size) && parse_crc(f[5], &out->crc) &&
	    out->data_off <= UINT64_MAX - out->data_size) {
		out->err = WFS_OK;
		return WFS_OK;
	}
	/* NO <name> <message>: the message is the rest of the line, spaces and all */
	if (split(line, len, copy, f, 3) == 3 && !strcmp(f[0], "NO")) {
		out->err = wfs_err_from_name(f[1]);
		if (out->err == WFS_OK)
			out->err = WFS_EIO; /* "NO OK" is no success */
		snprintf(out->msg, sizeof(out->msg), "%s", f[2]);
		return WFS_OK;
	}
	return WFS_EINVAL;
}

wfs_err sc_send(int sock, const char *line, size_t len, int fd)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = {.iov_base = (void *)line, .iov_len = len};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t w;

	if (fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		m.msg_control = ctl.space;
		m.msg_controllen = sizeof(ctl.space);
		ctl.h.cmsg_level = SOL_SOCKET;
		ctl.h.cmsg_type = SCM_RIGHTS;
		ctl.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&ctl.h), &fd, sizeof(int));
	}
	do
		w = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	/* a line is far below the socket buffer: a short send means the peer is gone */
	return w == (ssize_t)len ? WFS_OK : WFS_EUNAVAIL;
}

/* Keeps the first descriptor m carries in *fd (if it has none yet), closes any other. */
static void take_fds(struct msghdr *m, int *fd)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int got;
			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = got;
			else
				close(got);
		}
	}
}

wfs_err sc_recv(int sock, char *line, size_t *len, int *fd)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	size_t have = 0;

	*fd = -1;
	*len = 0;
	for (;;) {
		struct iovec iov = {.iov_base = line + have, .iov_len = SC_LINE_MAX - have};
		struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
				   .msg_controllen = sizeof(ctl.space)};
		ssize_t r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
		char *nl;

		if (r < 0 && errno == EINTR)
			continue;
		if (r > 0 || m.msg_controllen)
			take_fds(&m, fd);
		if (r <= 0)
			goto fail_unavail;
		have += (size_t)r;
		nl = memchr(line, '\n', have);
		if (nl) {
			if ((size_t)(nl - line) + 1 != have)
				goto fail_inval; /* a second request before the answer to the first */
			*nl = '\0';
			*len = (size_t)(nl - line);
			return WFS_OK;
		}
		if (have == SC_LINE_MAX)
			goto fail_inval;
	}
fail_unavail:
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return WFS_EUNAVAIL;
fail_inval:
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return WFS_EINVAL;
}
