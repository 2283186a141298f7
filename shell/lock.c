/*
 * DESIGN: `lock` takes the master's admin lease (POST /admin/lease) and starts a
 * thread that renews it every SHELL_RENEW_SEC, well inside the master's TTL, so a
 * shell that is killed loses it within seconds. A renewal that fails (the lease was
 * taken by another shell after a long stall, the master is unreachable) marks it
 * lost: the next command that changes something refuses, as if `lock` had never run.
 * `unlock` and exit release it.
 */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "shell/shell_int.h"
#include "util.h"

#define SHELL_RENEW_SEC 3
#define SHELL_LEASE_SEC 10 /* the master's ADMIN_LEASE_SEC */
#define LEASE_NAME      "admin"
#define LEASE_TIMEOUT_MS 5000 /* a hung master must not hold up unlock or exit long */

struct shell_lock {
	pthread_mutex_t mu;
	pthread_cond_t cond; /* CLOCK_MONOTONIC; signalled when stop is set */
	pthread_t thread;
	const char *master;
	char client[160];
	char token[32]; /* "" = not held; protected by mu */
	bool stop;      /* protected by mu */
	bool running;   /* the renewal thread was started and not joined yet */
};

static int lease_call(struct shell_lock *l, const char *prev, int *status, char *msg,
		      size_t msglen)
{
	char *client = shell_escape(l->client, false);
	char *pq = xasprintf("/admin/lease?name=" LEASE_NAME "&client=%s%s%s", client,
			     prev ? "&previousToken=" : "", prev ? prev : "");
	const char *tok;
	jt *v = NULL;
	int rc;

	rc = shell_http_timeout("POST", l->master, pq, NULL, LEASE_TIMEOUT_MS, &v, status, msg,
				msglen);
	tok = jt_get_str(v, "token");
	if (!rc && (!tok || strlen(tok) >= sizeof(l->token))) {
		snprintf(msg, msglen, "the master's answer has no token");
		rc = -1;
	}
	if (!rc) {
		pthread_mutex_lock(&l->mu);
		snprintf(l->token, sizeof(l->token), "%s", tok);
		pthread_mutex_unlock(&l->mu);
	}
	jt_free(v);
	free(pq);
	free(client);
	return rc;
}

static void *renew_main(void *arg)
{
	struct shell_lock *l = arg;
	char prev[32], msg[512];
	uint64_t last_ok = time_mono_ns();
	int status;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct timespec ts = time_deadline(CLOCK_MONOTONIC, SHELL_RENEW_SEC * 1000000000ull);
		while (!l->stop && pthread_cond_timedwait(&l->cond, &l->mu, &ts) != ETIMEDOUT)
			;
		if (l->stop || !l->token[0])
			break;
		snprintf(prev, sizeof(prev), "%s", l->token);
		pthread_mutex_unlock(&l->mu);
		if (!lease_call(l, prev, &status, msg, sizeof(msg))) {
			last_ok = time_mono_ns();
		} else if (status == 0 && time_mono_ns() - last_ok <
						  (SHELL_LEASE_SEC - SHELL_RENEW_SEC) * 1000000000ull) {
			/* master unreachable: the lease holds a while yet, try again */
		} else {
			/* dropped before it is said, so no command that follows the message
			 * can still see the lock held */
			pthread_mutex_lock(&l->mu);
			l->token[0] = 0;
			fprintf(stderr, "lock: lost the admin lock: %s\n", msg);
			break;
		}
		pthread_mutex_lock(&l->mu);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* Stops the renewal thread (the lease stays as it is). */
static void renew_stop(struct shell_lock *l)
{
	if (!l->running)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	l->running = false;
	l->stop = false;
}

static struct shell_lock *lock_new(struct shell_env *env)
{
	struct shell_lock *l = xcalloc(1, sizeof(*l));
	pthread_condattr_t ca;
	char host[64] = "localhost";
	const char *user = getenv("USER");

	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cond, &ca);
	pthread_condattr_destroy(&ca);
	l->master = env->master;
	gethostname(host, sizeof(host) - 1);
	snprintf(l->client, sizeof(l->client), "%s@%s pid %d", user && *user ? user : "?", host,
		 (int)getpid());
	return l;
}

bool shell_lock_held(struct shell_env *env)
{
	bool held;
	if (!env->lock)
		return false;
	pthread_mutex_lock(&env->lock->mu);
	held = env->lock->token[0] != 0;
	pthread_mutex_unlock(&env->lock->mu);
	return held;
}

int shell_need_lock(struct shell_env *env, const char *cmd, bool dry)
{
	if (dry || shell_lock_held(env))
		return 0;
	return shell_fail(cmd, "changes the cluster: run \"lock\" first (or -n for a dry run)");
}

/* Stops renewing and releases the lease; msg set and -1 when the master refused. */
static int lock_release(struct shell_env *env, char *msg, size_t msglen)
{
	struct shell_lock *l = env->lock;
	char *pq;
	int rc;

	renew_stop(l);
	pthread_mutex_lock(&l->mu);
	pq = xasprintf("/admin/release?name=" LEASE_NAME "&token=%s", l->token);
	l->token[0] = 0;
	pthread_mutex_unlock(&l->mu);
	rc = shell_http_timeout("POST", l->master, pq, NULL, LEASE_TIMEOUT_MS, NULL, NULL, msg,
				msglen);
	free(pq);
	return rc;
}

void shell_lock_drop(struct shell_env *env)
{
	char msg[512];
	struct shell_lock *l = env->lock;

	if (!l)
		return;
	if (shell_lock_held(env) && lock_release(env, msg, sizeof(msg)))
		fprintf(stderr, "unlock: %s\n", msg);
	renew_stop(l);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->mu);
	free(l);
	env->lock = NULL;
}

static int lock_run(struct shell_env *env, int argc, char **argv)
{
	char msg[512];
	int rc = shell_no_args("lock", argc, argv);

	if (rc)
		return rc < 0;
	if (shell_lock_held(env)) {
		printf("already holding the admin lock\n");
		return 0;
	}
	if (env->lock)
		renew_stop(env->lock); /* a thread that ended after losing the lease */
	else
		env->lock = lock_new(env);
	if (lease_call(env->lock, NULL, NULL, msg, sizeof(msg)))
		return shell_fail("lock", "%s", msg);
	if (thread_start(&env->lock->thread, NULL, renew_main, env->lock, "wfs-shell-lock")) {
		lock_release(env, msg, sizeof(msg));
		return shell_fail("lock", "could not start the renewal thread");
	}
	env->lock->running = true;
	printf("locked: holding the admin lock as %s\n", env->lock->client);
	return 0;
}

static int unlock_run(struct shell_env *env, int argc, char **argv)
{
	char msg[512];
	int rc = shell_no_args("unlock", argc, argv);

	if (rc)
		return rc < 0;
	if (!shell_lock_held(env)) {
		printf("not holding the admin lock\n");
		return 0;
	}
	if (lock_release(env, msg, sizeof(msg)))
		return shell_fail("unlock", "%s", msg);
	printf("unlocked\n");
	return 0;
}

const struct shell_cmd shell_cmds_lock[] = {
	{"lock", lock_run, "take the exclusive admin lock (needed to change the cluster)", "",
	 false},
	{"unlock", unlock_run, "release the admin lock", "", false},
	{NULL, NULL, NULL, NULL, false},
};
