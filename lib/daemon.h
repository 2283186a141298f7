/* What every weedfs command does the same way: flag parsing with -v, and waiting for SIGTERM. */
#ifndef WEEDFS_DAEMON_H
#define WEEDFS_DAEMON_H

#include <signal.h>
#include <stddef.h>
#include "flags.h"

/*
 * Parses a command's flags (no positional arguments allowed) and applies the
 * log level in *level (a -v flag in flags) and the log prefix cmd.
 * Returns -1 to go on, or the exit status to return at once: 0 after -h, 2 on
 * bad usage (already explained on stderr). Main thread, before other threads.
 */
int daemon_parse_flags(const char *cmd, const char *summary, const struct flag *flags, size_t n,
		       int argc, char **argv, const char *const *level);

/*
 * Loads the security file named by the command's "security" flag, if it has
 * one (security.h). -1 to go on, or 2 after explaining a bad file on stderr.
 * daemon_parse_flags calls it; commands parsing their own flags call it too.
 */
int daemon_load_security(const char *cmd, const struct flag *flags, size_t n);

/* Blocks SIGINT, SIGTERM and SIGHUP in the calling thread and every thread it starts later. */
void daemon_block_stop_signals(sigset_t *set);
/* Waits for SIGINT or SIGTERM (blocked by daemon_block_stop_signals) and returns it; a SIGHUP
 * meanwhile reloads the certificates (security_reload) and waits on. */
int daemon_wait_for_stop(const sigset_t *set);

#endif
