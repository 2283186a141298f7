/* Allocation that aborts on failure, clocks, big-endian codecs, small string helpers. */
#ifndef WEEDFS_UTIL_H
#define WEEDFS_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <pthread.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b)    ((a) < (b) ? (a) : (b))
#define MAX(a, b)    ((a) > (b) ? (a) : (b))

/* Allocation failure aborts the process (STYLE.md); callers never check. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Copies exactly n bytes of s (which must have that many; unlike strndup it does not
 * stop at a NUL) and terminates the copy. */
char *xstrndup(const char *s, size_t n);
/* Returns a newly allocated formatted string; the caller frees it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Formats the reason for a refusal into msg (msglen bytes, 0: none) and returns false. */
bool msg_fail(char *msg, size_t msglen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Wall clock in nanoseconds since the epoch, and a monotonic clock in ns. */
uint64_t time_now_ns(void);
uint64_t time_mono_ns(void);
/* The time on clock (CLOCK_REALTIME, CLOCK_MONOTONIC) ns from now, as
 * pthread_cond_timedwait wants it (for a condition variable on that clock). */
struct timespec time_deadline(int clock, uint64_t ns);

/* pthread_create, then names the thread (top -H, gdb, perf) before returning, so that no
 * thread is ever seen with the process's name because it has not run yet. attr may be
 * NULL; name at most 15 characters. Returns pthread_create's result. */
int thread_start(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg,
		 const char *name);

static inline void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}
static inline void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}
static inline void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}
static inline uint16_t get_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

/* The value of one hex digit (either case), or -1. */
int hex_digit_value(int c);
/* Writes n bytes at p as 2n lower-case hex digits and a NUL at out. */
void hex_encode(const void *p, size_t n, char *out);

/* Strict decimal parsers: the whole string must be a number in range. */
bool parse_u64(const char *s, uint64_t *out);
bool parse_i64(const char *s, int64_t *out);
bool parse_u32(const char *s, uint32_t *out);
/* Parses "true/false/1/0/yes/no/y/n/on/off"; returns false if none match. */
bool parse_bool(const char *s, bool *out);

/* Makes dir and its parents (mode 0755); true if it exists afterwards. */
bool mkdir_p(const char *dir);
/* Writes data to path atomically (temp file, fsync, rename, fsync dir). */
int write_file_atomic(const char *path, const void *data, size_t len);
/* Number of online CPUs, at least 1. */
int cpu_count(void);

#endif
