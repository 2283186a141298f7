/*
 * lib/sc_wire: the short-circuit lines both ways (round trips, each malformed
 * shape refused), the socket name, and a descriptor passed over a socket pair
 * with its line, a line split over two sends, and a second line sent early.
 */
#include "config.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sc_wire.h"
#include "tap.h"

static void test_request(void)
{
	struct sc_request r = {.want_fd = true}, p;
	char line[SC_LINE_MAX];
	size_t n;
	static const char *const bad[] = {
		"", "\n", "READ", "READ 3,01 2", "READ 3,01", "READ  3,01 1", "READ 3,01 1 ",
		"read 3,01 1", "READ 3,01 1\n\n", "READ 3,01 1 x", "WRITE 3,01 1",
		"READ 0123456789012345678901234567890123456789012345678901234567890123456789 1",
	};

	strcpy(r.fid, "3,01637037d6");
	n = sc_format_request(&r, line);
	ok(n == strlen("READ 3,01637037d6 1\n") && !strcmp(line, "READ 3,01637037d6 1\n"),
	   "request line: %s", line);
	ok(sc_parse_request(line, n, &p) == WFS_OK && !strcmp(p.fid, r.fid) && p.want_fd,
	   "request parses back");
	ok(sc_parse_request("READ 3,01 0", 11, &p) == WFS_OK && !p.want_fd,
	   "without its newline, want-fd 0");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(sc_parse_request(bad[i], strlen(bad[i]), &p) == WFS_EINVAL,
		   "refused: case %zu \"%.*s\"", i, (int)strcspn(bad[i], "\n"), bad[i]);
	ok(sc_parse_request("READ 3,\0001 1", 11, &p) == WFS_EINVAL, "a NUL inside is refused");
}

static void test_answer(void)
{
	struct sc_answer a = {.dev = 2049, .ino = 131075, .data_off = 8, .data_size = 524288,
			      .crc = 0x1f2e3d4c},
			 p;
	char line[SC_LINE_MAX], long_msg[400];
	size_t n = sc_format_answer(&a, line);
	static const char *const bad[] = {
		"OK", "OK 1 2 3 4", "OK 1 2 3 4 5", "OK 1 2 3 4 1f2e3d4", "OK 1 2 3 4 1f2e3d4g",
		"OK -1 2 3 4 1f2e3d4c", "OK 1 2 3 4 1f2e3d4c x", "OK 1 2 18446744073709551615 1 00000000",
		"NO", "NO ENOENT", "NO ENOENT ", "MAYBE 1 2", "OK 1 2 3 99999999999999999999 00000000",
	};

	ok(!strcmp(line, "OK 2049 131075 8 524288 1f2e3d4c\n"), "answer line: %s", line);
	ok(sc_parse_answer(line, n, &p) == WFS_OK && p.err == WFS_OK && p.dev == 2049 &&
	   p.ino == 131075 && p.data_off == 8 && p.data_size == 524288 && p.crc == 0x1f2e3d4c,
	   "answer parses back");
	a.err = WFS_ENOENT;
	snprintf(a.msg, sizeof(a.msg), "volume 9 is not on this server");
	n = sc_format_answer(&a, line);
	ok(!strcmp(line, "NO ENOENT volume 9 is not on this server\n"), "refusal line: %s", line);
	ok(sc_parse_answer(line, n, &p) == WFS_OK && p.err == WFS_ENOENT &&
	   !strcmp(p.msg, "volume 9 is not on this server"), "refusal parses back: %s", p.msg);
	ok(sc_parse_answer("NO EIO a  b ", 12, &p) == WFS_OK && !strcmp(p.msg, "a  b "),
	   "a message keeps its spaces");
	ok(sc_parse_answer("NO OK fine", 10, &p) == WFS_OK && p.err == WFS_EIO,
	   "\"NO OK\" is no success");
	ok(sc_parse_answer("NO EWHAT huh", 12, &p) == WFS_OK && p.err == WFS_EIO,
	   "an unknown name is EIO");
	memset(long_msg, 'm', sizeof(long_msg));
	memcpy(long_msg, "NO EIO ", 7);
	ok(sc_parse_answer(long_msg, SC_LINE_MAX - 1, &p) == WFS_OK &&
	   strlen(p.msg) == SC_MSG_MAX - 1, "a long message is cut to fit");
	ok(sc_parse_answer(long_msg, SC_LINE_MAX, &p) == WFS_EINVAL, "a line over the limit");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ok(sc_parse_answer(bad[i], strlen(bad[i]), &p) == WFS_EINVAL && p.err == WFS_EINVAL,
		   "refused: \"%s\"", bad[i]);
}

static void test_socket_name(void)
{
	struct sockaddr_un sa;
	socklen_t len;
	char big[300];

	sc_socket_addr("127.0.0.1:8080", &sa, &len);
	ok(sa.sun_path[0] == '\0' && !memcmp(sa.sun_path + 1, "weedfs-volume/127.0.0.1:8080", 28) &&
	   len == offsetof(struct sockaddr_un, sun_path) + 29, "abstract name of a url");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	sc_socket_addr(big, &sa, &len);
	ok(len <= sizeof(sa), "a long url is cut to the address size");
}

static void test_send_recv(void)
{
	int sp[2], fd, got;
	char line[SC_LINE_MAX];
	size_t len;
	struct stat a, b;

	ok(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0, "socket pair");
	fd = open("/proc/self/exe", O_RDONLY);
	ok(sc_send(sp[0], "OK 1 2 3 4 00000000\n", 20, fd) == WFS_OK, "a line with a descriptor");
	ok(sc_recv(sp[1], line, &len, &got) == WFS_OK && len == 19 &&
	   !strcmp(line, "OK 1 2 3 4 00000000") && got >= 0, "received with it: %s", line);
	ok(!fstat(fd, &a) && !fstat(got, &b) && a.st_ino == b.st_ino && a.st_dev == b.st_dev,
	   "the same file");
	close(got);
	close(fd);
	ok(write(sp[0], "READ 1,", 7) == 7 && write(sp[0], "02 1\n", 5) == 5, "split line sent");
	ok(sc_recv(sp[1], line, &len, &got) == WFS_OK && !strcmp(line, "READ 1,02 1") && got < 0,
	   "a line in two pieces, no descriptor");
	ok(write(sp[0], "READ 1,02 1\nREAD", 16) == 16, "two lines at once");
	ok(sc_recv(sp[1], line, &len, &got) == WFS_EINVAL && got < 0, "a line sent early: refused");
	memset(line, 'x', sizeof(line));
	ok(write(sp[0], line, sizeof(line)) == (ssize_t)sizeof(line), "a line with no end");
	ok(sc_recv(sp[1], line, &len, &got) == WFS_EINVAL, "too long: refused");
	close(sp[0]);
	ok(sc_recv(sp[1], line, &len, &got) == WFS_EUNAVAIL, "the peer closed");
	ok(sc_send(sp[1], "x\n", 2, -1) == WFS_EUNAVAIL, "sending to a closed peer fails");
	close(sp[1]);
}

int main(void)
{
	test_request();
	test_answer();
	test_socket_name();
	test_send_recv();
	return done_testing();
}
