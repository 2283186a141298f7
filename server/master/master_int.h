/* Internals shared by the master's HTTP handler files; not for other components. */
#ifndef WEEDFS_MASTER_INT_H
#define WEEDFS_MASTER_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "http_server.h"
#include "metrics.h"
#include "server/master/admin_lock.h"
#include "server/master/growth.h"
#include "server/master/leader.h"
#include "server/master/master.h"
#include "server/master/parse.h"
#include "server/master/sequence.h"
#include "server/master/topology.h"
#include "pool.h"

struct master {
	struct master_opts opts; /* strings below are owned copies */
	char *ip, *mdir, *default_replication;
	struct replica_placement default_rp;
	char self[TOPO_URL_MAX]; /* ip:port */
	uint64_t volume_size_limit;
	http_server *http;
	pool *pool;
	topology *topo;
	sequence *seq;
	growth *growth;
	admin_locks *locks; /* the shell's admin lease */
	pthread_mutex_t lock;
	pthread_cond_t stop_cond; /* signalled with lock held when stopping is set */
	bool stopping;            /* protected by lock */
	pthread_t vacuum_thread;  /* periodic vacuum */
	bool vacuum_started;
	pthread_t repair_thread; /* automatic repair, when -repairDelaySeconds > 0 */
	bool repair_started;
	pthread_mutex_t vacuum_lock; /* serialises vacuum runs (held on a worker) */
	metric_series *m_assigns;    /* successful /dir/assign answers */
	metric_collector *collector; /* topology gauges at scrape time */
	metrics_server *metrics;     /* -metricsPort */
	leader *leader;              /* the lease with -peers; NULL for a single master */
	char **peers;                /* -peers other than self */
	size_t npeers;
};

/* A fresh leader hears from its volume servers this many pulses before it grows volumes. */
#define MASTER_WARMUP_PULSES 2

/* True when this master may act as the leader (always for a single master). Any thread. */
bool master_is_leader(struct master *m);
/* How long this master has been the leader (UINT64_MAX for a single master, 0 for a
 * follower). Any thread. */
uint64_t master_leader_age_ns(struct master *m);
/* True once a leader has had MASTER_WARMUP_PULSES pulses to hear its servers. Any thread. */
bool master_warm(struct master *m);
/* The leader as this master knows it: itself while it leads, else the lease's holder, ""
   when none is known (or the holder is this master, whose lease lapsed). Any thread. */
void master_known_leader(struct master *m, char *out, size_t outlen);
/* A follower's answer: the request proxied to the leader (server/master/forward.c). Loop thread. */
void master_forward(struct master *m, http_req *req);

/* Interval of the automatic vacuum (SeaweedFS runs it every 15 minutes). */
#define MASTER_VACUUM_INTERVAL_SEC (15 * 60)

/* Waits seconds or until the master stops; false once it is stopping. Any thread. */
bool master_sleep(struct master *m, int seconds);
/* The repair thread's body (server/master/repair.c): scans every pulse until stopped. */
void *master_repair_main(void *m);

/* Vacuums every volume above threshold; blocks (worker or vacuum thread only). */
void master_vacuum_all(struct master *m, double threshold);
/* Queues fn on the pool unless the master is stopping (then false). Any thread. */
bool master_submit(struct master *m, pool_fn fn, void *arg);
/* True when the request asked for pretty JSON. Loop thread. */
bool master_pretty(http_req *req);
/* Fresh random bits (cookies, tie-breaks); thread-local buffer over RAND_bytes. */
uint64_t master_rand64(void);
uint32_t master_rand32(void);

/* Handlers (loop thread). */
void master_h_assign(struct master *m, http_req *req);
void master_h_submit(struct master *m, http_req *req);
void master_h_lookup(struct master *m, http_req *req);
/* GET /vol/ec/lookup?volumeId=: the servers holding each shard of an erasure-coded volume. */
void master_h_ec_lookup(struct master *m, http_req *req);
void master_h_redirect(struct master *m, http_req *req);
void master_h_grow(struct master *m, http_req *req);
void master_h_vacuum(struct master *m, http_req *req);
void master_h_col_delete(struct master *m, http_req *req);

/* Parsed placement parameters of /dir/assign, /submit and /vol/grow. */
struct assign_params {
	char collection[TOPO_NAME_MAX];
	struct replica_placement rp;
	struct ttl ttl;
	char dc[TOPO_NAME_MAX], rack[TOPO_NAME_MAX], node[TOPO_URL_MAX];
	uint64_t count;
	uint64_t data_size;
	int writable_count;
	int64_t preallocate; /* -1 = master default */
};
/* Reads and validates the parameters; false with msg (a 400) on bad input. */
bool assign_params_parse(struct master *m, http_req *req, struct assign_params *p, char *msg,
			 size_t msglen);

#endif
