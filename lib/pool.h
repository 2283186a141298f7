/* A fixed pool of worker threads for blocking work (fsync, outbound HTTP, compaction). */
#ifndef WEEDFS_POOL_H
#define WEEDFS_POOL_H

#include <stdbool.h>

typedef struct pool pool;
typedef void (*pool_fn)(void *arg);

/*
 * Starts nthreads workers (at least 1), each named name (top -H, gdb, perf;
 * at most 15 characters are kept; NULL leaves the process's name).
 */
pool *pool_new(int nthreads, const char *name);
/* Queues fn(arg) to run on some worker. Any thread. Never blocks on the work itself. */
void pool_submit(pool *p, pool_fn fn, void *arg);
/* Whether every worker is waiting for a job (none queued, none running). Any thread. */
bool pool_idle(pool *p);
/*
 * Runs every queued job and joins the workers. p stays valid: a job submitted
 * afterwards runs at once on the submitting thread (at shutdown, event loops
 * that are still running may hand work over; it must not be lost). NULL does nothing.
 */
void pool_stop(pool *p);
/* pool_stop, then frees p. pool_free(NULL) does nothing. */
void pool_free(pool *p);

#endif
