/*
 * The command table, word splitting, each command's flag parser and `help`.
 * Flags follow Go's flag package as SeaweedFS's shell does: -name=value,
 * -name value, -bool, and parsing stops at the first non-flag word.
 */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "shell/shell_int.h"
#include "util.h"

static int help_run(struct shell_env *env, int argc, char **argv);

static const struct shell_cmd shell_cmds_help[] = {
	{"help", help_run, "list the commands, or show one command's flags", "[COMMAND]", false},
	{NULL, NULL, NULL, NULL, false},
};

static const struct shell_cmd *const groups[] = {
	shell_cmds_help, shell_cmds_lock, shell_cmds_cluster, shell_cmds_volume, shell_cmds_repair,
	shell_cmds_ec, shell_cmds_fs,
};

const struct shell_cmd *shell_cmd_find(const char *name)
{
	for (size_t g = 0; g < ARRAY_LEN(groups); g++)
		for (const struct shell_cmd *c = groups[g]; c->name; c++)
			if (!strcmp(c->name, name))
				return c;
	return NULL;
}

static void cmd_help(FILE *out, const struct shell_cmd *c)
{
	fprintf(out, "%s %s\n\n  %s\n", c->name, c->usage, c->summary);
	if (c->changes)
		fprintf(out, "\n  Changes the cluster: needs the admin lock (\"lock\"); -n only "
			     "prints what it would do.\n");
}

static int help_run(struct shell_env *env, int argc, char **argv)
{
	const struct shell_cmd *c;

	(void)env;
	if (argc > 2)
		return shell_fail("help", "too many arguments (usage: help [COMMAND])");
	if (argc == 2) {
		c = shell_cmd_find(argv[1]);
		if (!c)
			return shell_fail("help", "unknown command \"%s\"", argv[1]);
		cmd_help(stdout, c);
		return 0;
	}
	printf("Type \"help COMMAND\" for a command's flags.\n\n");
	for (size_t g = 0; g < ARRAY_LEN(groups); g++)
		for (c = groups[g]; c->name; c++)
			printf("  %-20s %s\n", c->name, c->summary);
	printf("  %-20s %s\n", "exit", "leave the shell (also quit, ^D)");
	return 0;
}

int shell_fail(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static int flag_set(const struct shell_flag *f, const char *v)
{
	char *end;
	bool b;

	errno = 0;
	switch (f->type) {
	case SF_STRING:
		*(const char **)f->ptr = v;
		break;
	case SF_U32:
		if (!parse_u32(v, f->ptr))
			return -1;
		break;
	case SF_DOUBLE: {
		double d = strtod(v, &end);
		if (!*v || *end || errno)
			return -1;
		*(double *)f->ptr = d;
		break;
	}
	case SF_BOOL:
		if (!parse_bool(v, &b))
			return -1;
		*(bool *)f->ptr = b;
		break;
	}
	if (f->set)
		*f->set = true;
	return 0;
}

int shell_parse_flags(const struct shell_cmd *cmd, const struct shell_flag *flags,
		      size_t nflags, int argc, char **argv, int *npos)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *name, *eq, *val;
		const struct shell_flag *f = NULL;
		size_t len;

		if (a[0] != '-' || !a[1])
			break;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		name = a + (a[1] == '-' ? 2 : 1);
		if (!strcmp(name, "h") || !strcmp(name, "help")) {
			cmd_help(stdout, cmd);
			if (nflags)
				printf("\nFlags:\n");
			for (size_t k = 0; k < nflags; k++)
				printf("  -%-18s %s\n", flags[k].name, flags[k].help);
			return 1;
		}
		eq = strchr(name, '=');
		len = eq ? (size_t)(eq - name) : strlen(name);
		for (size_t k = 0; k < nflags && !f; k++)
			if (strlen(flags[k].name) == len && !strncmp(flags[k].name, name, len))
				f = &flags[k];
		if (!f) {
			shell_fail(cmd->name, "unknown flag -%.*s (see \"help %s\")", (int)len, name,
				   cmd->name);
			return -1;
		}
		if (eq)
			val = eq + 1;
		else if (f->type == SF_BOOL)
			val = "true";
		else if (i + 1 < argc)
			val = argv[++i];
		else {
			shell_fail(cmd->name, "flag -%s needs a value", f->name);
			return -1;
		}
		if (flag_set(f, val)) {
			shell_fail(cmd->name, "invalid value \"%s\" for -%s", val, f->name);
			return -1;
		}
	}
	*npos = i;
	return 0;
}

int shell_parse_all(const char *name, const struct shell_flag *flags, size_t nflags, int argc,
		    char **argv)
{
	int npos, rc = shell_parse_flags(shell_cmd_find(name), flags, nflags, argc, argv, &npos);
	if (!rc && npos != argc) {
		shell_fail(name, "unexpected argument \"%s\"", argv[npos]);
		return -1;
	}
	return rc;
}

int shell_run_words(struct shell_env *env, int argc, char **argv)
{
	const struct shell_cmd *c;

	if (argc == 0)
		return 0;
	c = shell_cmd_find(argv[0]);
	if (!c)
		return shell_fail(argv[0], "unknown command (type \"help\" for the list)");
	return c->run(env, argc, argv) ? 1 : 0;
}

/* ---- word splitting ---- */

int shell_split(const char *line, char ***words)
{
	size_t n = 0, cap = 8;
	char **w = xmalloc(cap * sizeof(*w));
	const char *p = line;
	buf cur = BUF_INIT;

	for (;;) {
		char quote = 0;
		bool any = false;

		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (!*p)
			break;
		buf_reset(&cur);
		for (; *p; p++) {
			if (quote) {
				if (*p == quote)
					quote = 0;
				else if (*p == '\\' && quote == '"' && p[1])
					buf_append_byte(&cur, *++p);
				else
					buf_append_byte(&cur, *p);
			} else if (*p == '\'' || *p == '"') {
				quote = *p;
			} else if (*p == '\\' && p[1]) {
				buf_append_byte(&cur, *++p);
			} else if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
				break;
			} else {
				buf_append_byte(&cur, *p);
			}
			any = true;
		}
		if (quote) {
			fprintf(stderr, "unterminated %c quote\n", quote);
			buf_free(&cur);
			w[n] = NULL;
			shell_words_free(w);
			return -1;
		}
		if (n + 2 > cap)
			w = xrealloc(w, (cap *= 2) * sizeof(*w));
		w[n++] = any && cur.data ? xstrdup(cur.data) : xstrdup("");
	}
	buf_free(&cur);
	w[n] = NULL;
	*words = w;
	return (int)n;
}

void shell_words_free(char **words)
{
	if (!words)
		return;
	for (char **p = words; *p; p++)
		free(*p);
	free(words);
}
