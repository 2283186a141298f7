#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util.h"

static void oom(size_t n)
{
	fprintf(stderr, "out of memory allocating %zu bytes\n", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom(n);
	return p;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		oom(0);
	va_end(ap);
	return p;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t time_now_ns(void) { return clock_ns(CLOCK_REALTIME); }
uint64_t time_mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

struct timespec time_deadline(int clock, uint64_t ns)
{
	struct timespec ts;
	clock_gettime((clockid_t)clock, &ts);
	ts.tv_sec += (time_t)(ns / 1000000000u);
	ts.tv_nsec += (long)(ns % 1000000000u);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

void hex_encode(const void *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

int hex_digit_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	if (!s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

bool parse_i64(const char *s, int64_t *out)
{
	char *end;
	long long v;
	if (!s || !*s || (*s != '-' && (*s < '0' || *s > '9')))
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

bool parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;
	if (!parse_u64(s, &v) || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

bool parse_bool(const char *s, bool *out)
{
	static const char *yes[] = {"true", "1", "yes", "y", "on"};
	static const char *no[] = {"false", "0", "no", "n", "off"};
	for (size_t i = 0; i < ARRAY_LEN(yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return true;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return true;
		}
	}
	return false;
}

bool mkdir_p(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	size_t n = strlen(dir);
	if (n == 0 || n >= sizeof(path))
		return false;
	memcpy(path, dir, n + 1);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return false;
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return false;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	const char *p = data;
	int fd, dfd, rc = -1;
	char *slash;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			goto out;
		}
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd))
		goto out;
	if (rename(tmp, path))
		goto out;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		dfd = open(slash == dir ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	rc = 0;
out:
	close(fd);
	if (rc)
		unlink(tmp);
	return rc;
}

int cpu_count(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

bool msg_fail(char *msg, size_t msglen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (msglen)
		vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
	return false;
}

int thread_start(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg,
		 const char *name)
{
	int rc = pthread_create(th, attr, fn, arg);
	if (!rc && name && name[0])
		pthread_setname_np(*th, name);
	return rc;
}
