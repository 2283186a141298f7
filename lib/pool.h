/* A fixed pool of worker threads for blocking work (fsync, outbound HTTP, compaction). */
#ifndef WEEDFS_POOL_H
#define WEEDFS_POOL_H

typedef struct pool pool;
typedef void (*pool_fn)(void *arg);

/* Starts nthreads workers (at least 1). */
pool *pool_new(int nthreads);
/* Queues fn(arg) to run on some worker. Any thread. Never blocks on the work itself. */
void pool_submit(pool *p, pool_fn fn, void *arg);
/* Runs every queued job, joins the workers, frees p. pool_free(NULL) does nothing. */
void pool_free(pool *p);

#endif
