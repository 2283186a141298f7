#include "config.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "daemon.h"
#include "log.h"
#include "security.h"
#include "util.h"

int daemon_load_security(const char *cmd, const struct flag *flags, size_t n)
{
	char msg[512];
	for (size_t i = 0; i < n; i++) {
		if (strcmp(flags[i].name, "security") || flags[i].type != FLAG_STRING)
			continue;
		if (security_init(*(const char *const *)flags[i].ptr, msg, sizeof(msg))) {
			fprintf(stderr, "weedfs %s: -security: %s\n", cmd, msg);
			return 2;
		}
		if (security_tls_requested(security())) {
			/* parsed, but no listener or client speaks TLS yet: starting would
			   leave the user believing the ports are encrypted */
			fprintf(stderr,
				"weedfs %s: -security: TLS ([https.*] sections) is not built yet; "
				"remove them (docs/security.md, \"TLS\")\n",
				cmd);
			return 2;
		}
		if (security_path())
			log_info("security file %s", security_path());
	}
	return -1;
}

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
	return daemon_load_security(cmd, flags, n);
}

void daemon_block_stop_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, set, NULL);
}

int daemon_wait_for_stop(const sigset_t *set)
{
	int sig;
	for (;;) {
		if (sigwait(set, &sig) != 0)
			continue;
		if (sig != SIGHUP)
			break;
		security_reload();
	}
	log_info("stopping on signal %d", sig);
	return sig;
}
