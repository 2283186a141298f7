#include "config.h"
#include <pthread.h>
#include <stdio.h>
#include "daemon.h"
#include "log.h"

int daemon_parse_flags(const char *cmd, const char *summary, const struct flag *flags, size_t n,
		       int argc, char **argv, const char *const *level)
{
	int npos, lvl, rc = flags_parse(flags, n, argc, argv, cmd, summary, &npos);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (npos < argc) {
		fprintf(stderr, "weedfs %s: unexpected argument \"%s\"\n", cmd, argv[npos]);
		return 2;
	}
	lvl = log_parse_level(*level);
	if (lvl < 0) {
		fprintf(stderr, "weedfs %s: invalid -v \"%s\" (error, warn, info or debug)\n", cmd,
			*level);
		return 2;
	}
	log_set_level((enum log_level)lvl);
	log_set_prefix(cmd);
	return -1;
}

void daemon_block_stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, set, NULL);
}

int daemon_wait_for_stop(const sigset_t *set)
{
	int sig;
	while (sigwait(set, &sig) != 0)
		;
	log_info("stopping on signal %d", sig);
	return sig;
}
