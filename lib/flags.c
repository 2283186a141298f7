#include "config.h"
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "flags.h"
#include "util.h"

static const struct flag *flag_find(const struct flag *flags, size_t n, const char *name,
				    size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(flags[i].name) == len && !strncmp(flags[i].name, name, len))
			return &flags[i];
	return NULL;
}

static int flag_list_add(struct flag_list *l, const char *v)
{
	const char *comma;
	while ((comma = strchr(v, ',')) != NULL) {
		if (l->n >= FLAG_LIST_MAX)
			return -1;
		l->owned[l->n] = xstrndup(v, (size_t)(comma - v));
		l->v[l->n] = l->owned[l->n];
		l->n++;
		v = comma + 1;
	}
	if (l->n >= FLAG_LIST_MAX)
		return -1;
	l->v[l->n++] = v;
	return 0;
}

void flag_list_free(struct flag_list *l)
{
	for (int i = 0; i < FLAG_LIST_MAX; i++) {
		free(l->owned[i]);
		l->owned[i] = NULL;
	}
	l->n = 0;
}

static int flag_set(const struct flag *f, const char *v)
{
	char *end;
	errno = 0;
	switch (f->type) {
	case FLAG_STRING:
		*(const char **)f->ptr = v;
		return 0;
	case FLAG_INT: {
		long x = strtol(v, &end, 10);
		if (!*v || *end || errno || x < -2147483647L || x > 2147483647L)
			return -1;
		*(int *)f->ptr = (int)x;
		return 0;
	}
	case FLAG_I64: {
		long long x = strtoll(v, &end, 10);
		if (!*v || *end || errno)
			return -1;
		*(long long *)f->ptr = x;
		return 0;
	}
	case FLAG_DOUBLE: {
		double x = strtod(v, &end);
		if (!*v || *end || errno)
			return -1;
		*(double *)f->ptr = x;
		return 0;
	}
	case FLAG_BOOL:
		return parse_bool(v, (bool *)f->ptr) ? 0 : -1;
	case FLAG_LIST: {
		struct flag_list *l = f->ptr;
		return flag_list_add(l, v);
	}
	}
	return -1;
}

static const char *flag_type_name(enum flag_type t)
{
	switch (t) {
	case FLAG_STRING:
		return "string";
	case FLAG_INT:
	case FLAG_I64:
		return "int";
	case FLAG_DOUBLE:
		return "float";
	case FLAG_BOOL:
		return "";
	case FLAG_LIST:
		return "list";
	}
	return "";
}

void flags_usage(FILE *out, const char *cmd, const char *summary, const struct flag *flags,
		 size_t nflags)
{
	fprintf(out, "Usage: weedfs %s [flags]\n\n%s\n\nFlags:\n", cmd, summary);
	for (size_t i = 0; i < nflags; i++) {
		const struct flag *f = &flags[i];
		fprintf(out, "  -%s %s\n    \t%s", f->name, flag_type_name(f->type), f->help);
		switch (f->type) {
		case FLAG_STRING:
			if (*(const char **)f->ptr && **(const char **)f->ptr)
				fprintf(out, " (default \"%s\")", *(const char **)f->ptr);
			break;
		case FLAG_INT:
			fprintf(out, " (default %d)", *(int *)f->ptr);
			break;
		case FLAG_I64:
			fprintf(out, " (default %lld)", *(long long *)f->ptr);
			break;
		case FLAG_DOUBLE:
			fprintf(out, " (default %g)", *(double *)f->ptr);
			break;
		case FLAG_BOOL:
			if (*(bool *)f->ptr)
				fprintf(out, " (default true)");
			break;
		case FLAG_LIST:
			break;
		}
		fputc('\n', out);
	}
}

int flags_parse(const struct flag *flags, size_t nflags, int argc, char **argv, const char *cmd,
		const char *summary, int *npos)
{
	int i;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i], *name, *eq, *val;
		const struct flag *f;
		size_t len;

		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		name = a + (a[1] == '-' ? 2 : 1);
		if (!strcmp(name, "h") || !strcmp(name, "help")) {
			flags_usage(stdout, cmd, summary, flags, nflags);
			return 1;
		}
		eq = strchr(name, '=');
		len = eq ? (size_t)(eq - name) : strlen(name);
		f = flag_find(flags, nflags, name, len);
		if (!f) {
			fprintf(stderr, "weedfs %s: unknown flag -%.*s (see weedfs %s -h)\n", cmd,
				(int)len, name, cmd);
			return -1;
		}
		if (eq)
			val = eq + 1;
		else if (f->type == FLAG_BOOL)
			val = "true";
		else if (i + 1 < argc)
			val = argv[++i];
		else {
			fprintf(stderr, "weedfs %s: flag -%s needs a value\n", cmd, f->name);
			return -1;
		}
		if (flag_set(f, val)) {
			fprintf(stderr, "weedfs %s: invalid value \"%s\" for -%s\n", cmd, val,
				f->name);
			return -1;
		}
	}
	*npos = i;
	return 0;
}
