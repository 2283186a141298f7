/* `weedfs shell`: an operator's console over the master's and filer's HTTP APIs. */
#ifndef WEEDFS_SHELL_H
#define WEEDFS_SHELL_H

/* The subcommand: argv[0] is the first flag. Returns the process exit status. */
int shell_main(int argc, char **argv);

#endif
