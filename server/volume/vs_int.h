/* Internals shared by the volume server's modules (not for other components). */
#ifndef WEEDFS_VOLUME_VS_INT_H
#define WEEDFS_VOLUME_VS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "http_server.h"
#include "pool.h"
#include "store.h"
#include "volume_server.h"

struct lookup_cache_entry {
	uint32_t vid;
	uint64_t expires_ns;
	char **urls; /* other replicas' ip:port */
	int nurls;
};

struct volume_server {
	char *ip, *public_url, *mserver, *data_center, *rack;
	char self[300]; /* ip:port */
	int port;
	int pulse_seconds;
	uint64_t file_size_limit;
	store *store;
	http_server *http;

	pthread_rwlock_t pool_lock; /* guards pool against stop */
	pool *pool;                 /* protected by pool_lock; NULL once stopping */

	pthread_t hb_thread;
	bool hb_started;
	pthread_mutex_t hb_lock;
	pthread_cond_t hb_cond;
	bool hb_stop, hb_kick; /* protected by hb_lock */

	pthread_mutex_t cache_lock;
	struct lookup_cache_entry *cache; /* protected by cache_lock */
	int ncache;
};

/* Runs fn(arg) on the worker pool; false if the server is stopping. Any thread. */
bool vs_submit(struct volume_server *vs, pool_fn fn, void *arg);
/* Wakes the heartbeat thread for an immediate heartbeat. Any thread. */
void vs_heartbeat_now(struct volume_server *vs);

/* Needle requests (GET/HEAD/PUT/POST/DELETE on a file id path). Loop thread. */
void vs_handle_needle(struct volume_server *vs, http_req *req);

#endif
