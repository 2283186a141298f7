/*
 * DESIGN: `weedfs shell` reads command lines from one of three places: -c's
 * text (commands separated by ';'), a terminal (libedit, with history in
 * ~/.weedfs_shell_history), or stdin when it is not a terminal (a script, one
 * command a line, '#' comments). In -c and script mode every command runs and the
 * exit status is 1 when any of them failed; interactively a failure only prints.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <editline/readline.h>
#include "daemon.h"
#include "flags.h"
#include "security.h"
#include "shell/shell.h"
#include "shell/shell_int.h"
#include "util.h"

#define HISTORY_FILE ".weedfs_shell_history"
#define HISTORY_MAX  1000

/* Runs one line; "exit"/"quit" set *quit. 0 on success. */
static int run_line(struct shell_env *env, const char *line, bool *quit)
{
	char **words;
	int n = shell_split(line, &words), rc;

	if (n < 0)
		return 1;
	if (n > 0 && words[0][0] == '#')
		n = 0;
	if (n > 0 && (!strcmp(words[0], "exit") || !strcmp(words[0], "quit"))) {
		*quit = true;
		n = 0;
	}
	rc = shell_run_words(env, n, words);
	shell_words_free(words);
	fflush(stdout);
	return rc;
}

/* -c: commands separated by ';' (a quoted or escaped ';' stays in its word). */
static int run_commands(struct shell_env *env, const char *text)
{
	char *copy = xstrdup(text), *p = copy;
	bool quit = false;
	int failed = 0;

	while (p && !quit) {
		char *semi = p, quote = 0;
		for (; *semi; semi++) {
			if (*semi == '\\' && semi[1] && quote != '\'')
				semi++; /* an escaped character, ';' too, as shell_split reads it */
			else if (quote && *semi == quote)
				quote = 0;
			else if (!quote && (*semi == '\'' || *semi == '"'))
				quote = *semi;
			else if (!quote && *semi == ';')
				break;
		}
		if (*semi)
			*semi++ = 0;
		else
			semi = NULL;
		failed |= run_line(env, p, &quit);
		p = semi;
	}
	free(copy);
	return failed;
}

static int run_script(struct shell_env *env, FILE *in)
{
	char *line = NULL;
	size_t cap = 0;
	bool quit = false;
	int failed = 0;

	while (!quit && getline(&line, &cap, in) >= 0)
		failed |= run_line(env, line, &quit);
	free(line);
	return failed;
}

static int run_interactive(struct shell_env *env)
{
	const char *home = getenv("HOME");
	char *hist = home && *home ? xasprintf("%s/" HISTORY_FILE, home) : NULL;
	bool quit = false;
	char *line;

	using_history();
	stifle_history(HISTORY_MAX);
	if (hist)
		read_history(hist);
	printf("weedfs shell: master %s, filer %s. Type \"help\" for the commands.\n",
	       env->master, env->filer);
	while (!quit && (line = readline("> ")) != NULL) {
		const char *p = line + strspn(line, " \t");
		if (*p) {
			add_history(line);
			if (hist)
				write_history(hist);
			run_line(env, line, &quit);
		}
		free(line);
	}
	if (!quit)
		putchar('\n');
	free(hist);
	return 0;
}

int shell_main(int argc, char **argv)
{
	struct shell_env env = {0};
	const char *master = "127.0.0.1:9333", *filer = "127.0.0.1:8888", *cmds = NULL;
	const char *security_file = NULL;
	const struct flag flags[] = {
		{"master", FLAG_STRING, &master, "the master (host:port)"},
		{"filer", FLAG_STRING, &filer, "the filer for the fs.* commands (host:port)"},
		{"c", FLAG_STRING, &cmds, "run these commands (separated by ';') and exit"},
		{"security", FLAG_STRING, &security_file, SECURITY_FLAG_HELP},
	};
	int npos, rc;

	rc = flags_parse(flags, ARRAY_LEN(flags), argc, argv, "shell",
			 "An operator's console: inspect and change the cluster through the "
			 "master and the filer.",
			 &npos);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (npos != argc) {
		fprintf(stderr, "weedfs shell: unexpected argument \"%s\" (commands go in -c)\n",
			argv[npos]);
		return 2;
	}
	if (daemon_load_security("shell", flags, ARRAY_LEN(flags)) >= 0)
		return 2;
	env.master = master;
	env.filer = filer;
	env.cwd = xstrdup("/");
	if (cmds)
		rc = run_commands(&env, cmds);
	else if (isatty(STDIN_FILENO))
		rc = run_interactive(&env);
	else
		rc = run_script(&env, stdin);
	shell_lock_drop(&env);
	free(env.cwd);
	return rc ? 1 : 0;
}
