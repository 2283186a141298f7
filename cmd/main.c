/* weedfs: one binary, one subcommand per daemon or tool (a table, as tmux does). */
#include "config.h"
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "benchmark.h"
#include "filer/filer.h"
#include "http_client.h"
#include "server/master/master.h"
#include "mini.h"
#include "s3_cmd.h"
#include "s3/s3_server.h"
#include "shell/shell.h"
#include "server/volume/volume_server.h"

static int version_main(int argc, char **argv);
static int help_main(int argc, char **argv);

static const struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"master", master_main, "run the master: volume placement and file ids (port 9333)"},
	{"volume", volume_main, "run a volume server: stores needles in volumes (port 8080)"},
	{"filer", filer_main, "run a filer: directories and files over volumes (port 8888)"},
	{"s3", s3_main, "run an S3 gateway over a filer (port 8333)"},
	{"mini", mini_main, "run a master, a volume server and a filer in one process"},
	{"shell", shell_main, "an operator's console: volumes, collections, the lock, files"},
	{"benchmark", benchmark_main, "write then read many small files and print figures"},
	{"version", version_main, "print the version"},
	{"help", help_main, "list the commands"},
};

static int version_main(int argc, char **argv)
{
	printf("weedfs %s\n", PACKAGE_VERSION);
	return 0;
}

static int help_main(int argc, char **argv)
{
	printf("weedfs %s: a distributed file system\n\nUsage: weedfs COMMAND [flags]\n\n"
	       "Commands:\n",
	       PACKAGE_VERSION);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		printf("  %-10s %s\n", commands[i].name, commands[i].summary);
	printf("\nRun \"weedfs COMMAND -h\" for a command's flags; see weedfs(1).\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *name;

	if (argc < 2)
		return help_main(0, NULL), 2;
	name = argv[1];
	if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "-help"))
		name = "help";
	if (!strcmp(name, "-version") || !strcmp(name, "--version"))
		name = "version";
	/* A peer hanging up must surface as an error on the write, not kill the daemon. */
	signal(SIGPIPE, SIG_IGN);
	http_client_global_init();
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return commands[i].run(argc - 2, argv + 2);
	fprintf(stderr, "weedfs: unknown command \"%s\" (see weedfs help)\n", name);
	return 2;
}
