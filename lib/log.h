/* Leveled logging to stderr; thread-safe, one line per call. */
#ifndef WEEDFS_LOG_H
#define WEEDFS_LOG_H

enum log_level { LOG_LEVEL_ERROR = 0, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG };

/* Sets the threshold; messages above it are dropped. Call before threads start. */
void log_set_level(enum log_level level);
/* Parses "error", "warn", "info", "debug" or "0".."3"; returns -1 if unknown. */
int log_parse_level(const char *s);
enum log_level log_get_level(void);
/* Sets a short prefix naming the process role, e.g. "master". Borrows s. */
void log_set_prefix(const char *s);

void log_msg(enum log_level level, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Logs and exits(1): for start-up failures and impossible states. */
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define log_error(...) log_msg(LOG_LEVEL_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LEVEL_WARN, __FILE__, __LINE__, __VA_ARGS__)
#define log_info(...)                                                             \
	do {                                                                      \
		if (log_get_level() >= LOG_LEVEL_INFO)                            \
			log_msg(LOG_LEVEL_INFO, __FILE__, __LINE__, __VA_ARGS__); \
	} while (0)
#define log_debug(...)                                                             \
	do {                                                                       \
		if (log_get_level() >= LOG_LEVEL_DEBUG)                            \
			log_msg(LOG_LEVEL_DEBUG, __FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

#endif
