/* A minimal TAP producer for the C unit tests (header-only, one per test binary). */
#ifndef WEEDFS_TAP_H
#define WEEDFS_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_count, tap_failed;

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, name) \
	tap_is_int((long long)(got), (long long)(want), __FILE__, __LINE__, name)
#define is_str(got, want, name) tap_is_str((got), (want), __FILE__, __LINE__, name)

static inline void tap_vok(int pass, const char *file, int line, const char *name)
{
	tap_count++;
	printf("%sok %d - %s\n", pass ? "" : "not ", tap_count, name);
	if (!pass) {
		tap_failed++;
		printf("# failed at %s:%d\n", file, line);
	}
}

static inline int tap_ok(int pass, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static inline int tap_ok(int pass, const char *file, int line, const char *fmt, ...)
{
	char name[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	tap_vok(pass, file, line, name);
	return pass;
}

static inline int tap_is_int(long long got, long long want, const char *file, int line,
			     const char *name)
{
	tap_vok(got == want, file, line, name);
	if (got != want)
		printf("#   got: %lld\n#  want: %lld\n", got, want);
	return got == want;
}

static inline int tap_is_str(const char *got, const char *want, const char *file, int line,
			     const char *name)
{
	int pass = got && want ? !strcmp(got, want) : got == want;
	tap_vok(pass, file, line, name);
	if (!pass)
		printf("#   got: \"%s\"\n#  want: \"%s\"\n", got ? got : "(null)",
		       want ? want : "(null)");
	return pass;
}

/* Prints the plan and returns the process exit status. */
static inline int done_testing(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif
