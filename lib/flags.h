/* Command-line flags in the Go style SeaweedFS users know: -name=value, -name value, -bool. */
#ifndef WEEDFS_FLAGS_H
#define WEEDFS_FLAGS_H

#include <stddef.h>
#include <stdio.h>

enum flag_type {
	FLAG_STRING, /* ptr is const char **; the parsed value borrows argv */
	FLAG_INT,    /* ptr is int * */
	FLAG_I64,    /* ptr is long long * */
	FLAG_DOUBLE, /* ptr is double * */
	FLAG_BOOL,   /* ptr is bool *; "-x", "-x=true", "-x=false" */
	FLAG_LIST,   /* ptr is struct flag_list *; repeatable and comma separated */
};

#define FLAG_LIST_MAX 16
struct flag_list {
	int n;
	const char *v[FLAG_LIST_MAX]; /* borrowed from argv */
	char *owned[FLAG_LIST_MAX];   /* pieces split from a comma list */
};

struct flag {
	const char *name;
	enum flag_type type;
	void *ptr; /* holds the default on entry */
	const char *help;
};

/*
 * Parses argv[0..argc) (argv[0] is the first flag, not the program name).
 * Returns 0 and sets *npos to the index of the first positional argument,
 * 1 when -h/-help was given (usage already printed to stdout), or -1 on a
 * bad flag (a message already printed to stderr).
 */
int flags_parse(const struct flag *flags, size_t nflags, int argc, char **argv, const char *cmd,
		const char *summary, int *npos);
void flags_usage(FILE *out, const char *cmd, const char *summary, const struct flag *flags,
		 size_t nflags);
/* Frees the pieces a FLAG_LIST split off. */
void flag_list_free(struct flag_list *l);

#endif
