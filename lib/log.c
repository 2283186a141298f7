#include "config.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "log.h"

static enum log_level log_threshold = LOG_LEVEL_INFO;
static const char *log_prefix = "weedfs";
static const char level_letter[] = {'E', 'W', 'I', 'D'};

void log_set_level(enum log_level level) { log_threshold = level; }
enum log_level log_get_level(void) { return log_threshold; }
void log_set_prefix(const char *s) { log_prefix = s; }

int log_parse_level(const char *s)
{
	static const char *names[] = {"error", "warn", "info", "debug"};
	for (int i = 0; i < 4; i++)
		if (!strcasecmp(s, names[i]) || (s[0] == '0' + i && !s[1]))
			return i;
	return -1;
}

__attribute__((format(printf, 4, 0))) static void log_vwrite(int level, const char *file, int line,
							     const char *fmt, va_list ap)
{
	char msg[2048];
	struct timespec ts;
	struct tm tm;
	const char *base = file ? strrchr(file, '/') : NULL;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* One fprintf per line: stdio locks the stream, so lines never interleave. */
	fprintf(stderr, "%c%02d%02d %02d:%02d:%02d.%06ld %s %s:%d] %s\n", level_letter[level],
		tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000,
		log_prefix, base ? base + 1 : (file ? file : "-"), line, msg);
}

void log_msg(enum log_level level, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	if (level > log_threshold)
		return;
	va_start(ap, fmt);
	log_vwrite(level, file, line, fmt, ap);
	va_end(ap);
}

void fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_ERROR, NULL, 0, fmt, ap);
	va_end(ap);
	exit(1);
}
