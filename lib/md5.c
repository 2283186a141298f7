/*
 * MD5 (RFC 1321) with hashing groups: see md5.h for why.
 *
 * A group is a queue of waiting updates (jobs), eight lanes and at most one
 * driver. The driver moves queued jobs into free lanes, hashes up to
 * QUANTUM blocks of every lane outside the lock (all lanes the same count,
 * so none runs past its end), marks finished jobs done and repeats until
 * its own job is done; then it leaves and wakes the others, one of which
 * drives next. A job's bytes and state stay its waiting thread's, which
 * cannot touch them until done is set under the lock.
 */
#include "config.h"
#include "md5.h"
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include "md5_rounds.h"
#include "md5_x8.h"
#include "util.h"

#define GROUPS_MAX     8
#define QUANTUM        256        /* blocks per lane between looks at the queue (16 KiB) */
#define LANES_MIN      (64 << 10) /* smaller updates hash in the caller */
#define LANES_MIN_JOBS 3

/* ---- one stream ---- */

#define ROTL(x, s) (((x) << (s)) | ((x) >> (32 - (s))))
#define F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define H(x, y, z) ((x) ^ (y) ^ (z))
#define I(x, y, z) ((y) ^ ((x) | ~(z)))
#define STEP(f, a, b, c, d, w, i, s)               \
	do {                                       \
		a += f(b, c, d) + m[w] + md5_k[i]; \
		a = ROTL(a, s) + b;                \
	} while (0)

static void md5_blocks(uint32_t h[4], const uint8_t *p, size_t nblocks)
{
	for (; nblocks; nblocks--, p += 64) {
		uint32_t m[16], a = h[0], b = h[1], c = h[2], d = h[3];
		for (int w = 0; w < 16; w++)
			m[w] = (uint32_t)p[4 * w] | (uint32_t)p[4 * w + 1] << 8 |
			       (uint32_t)p[4 * w + 2] << 16 | (uint32_t)p[4 * w + 3] << 24;
		MD5_ROUNDS();
		h[0] += a;
		h[1] += b;
		h[2] += c;
		h[3] += d;
	}
}

/* ---- hashing groups ---- */

struct md5_job {
	uint32_t *h;          /* the stream's state, advanced in place */
	const uint8_t *p;     /* its next block */
	size_t blocks;        /* blocks left */
	bool done;            /* protected by the group's lock */
	struct md5_job *next; /* in the queue */
};

struct md5_group {
	pthread_mutex_t lock;
	pthread_cond_t cond;                /* a job finished, or the driver left */
	struct md5_job *queue, **queue_end; /* protected by lock */
	struct md5_job *lane[MD5_LANES];    /* protected by lock */
	bool driving;                       /* protected by lock */
	atomic_int load; /* jobs queued or in lanes: guides the choice of group */
};

static struct md5_group groups[GROUPS_MAX];
static int ngroups;
static atomic_bool lanes_on;
static pthread_once_t groups_once = PTHREAD_ONCE_INIT;
static atomic_uint_fast64_t lane_blocks, alone_blocks;

static void groups_init(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	ngroups = (int)MAX(1, MIN(cpus, GROUPS_MAX));
	for (int i = 0; i < ngroups; i++) {
		pthread_mutex_init(&groups[i].lock, NULL);
		pthread_cond_init(&groups[i].cond, NULL);
		groups[i].queue_end = &groups[i].queue;
	}
	atomic_store(&lanes_on, md5_x8_supported());
}

bool md5_lanes_available(void)
{
	pthread_once(&groups_once, groups_init);
	return md5_x8_supported();
}

void md5_use_lanes(bool on)
{
	pthread_once(&groups_once, groups_init);
	atomic_store(&lanes_on, on && md5_x8_supported());
}

void md5_get_stats(struct md5_stats *out)
{
	out->lane_blocks = atomic_load(&lane_blocks);
	out->alone_blocks = atomic_load(&alone_blocks);
}

static void hash_alone(uint32_t h[4], const uint8_t *p, size_t nblocks)
{
	md5_blocks(h, p, nblocks);
	atomic_fetch_add_explicit(&alone_blocks, nblocks, memory_order_relaxed);
}

/*
 * Advances n jobs by q blocks each: in the lanes when there are LANES_MIN_JOBS
 * or more (a lane runs at about 1/3 of one stream alone: MD5's steps depend
 * on each other, so a lane's speed is bound by their latency).
 */
static void run_jobs(struct md5_job *const *job, int n, size_t q)
{
	uint32_t h[MD5_LANES][4];
	const uint8_t *p[MD5_LANES];

	if (n < LANES_MIN_JOBS || !atomic_load(&lanes_on)) {
		for (int i = 0; i < n; i++)
			hash_alone(job[i]->h, job[i]->p, q);
		return;
	}
	for (int l = 0; l < MD5_LANES; l++) {
		const struct md5_job *j = job[l < n ? l : 0]; /* idle lanes repeat lane 0 */
		memcpy(h[l], j->h, sizeof(h[l]));
		p[l] = j->p;
	}
	md5_x8_blocks(h, p, q);
	for (int i = 0; i < n; i++)
		memcpy(job[i]->h, h[i], sizeof(h[i]));
	atomic_fetch_add_explicit(&lane_blocks, q * (size_t)n, memory_order_relaxed);
}

/* Runs g's lanes until own is done. Called, and returns, with g->lock held. */
static void drive(struct md5_group *g, const struct md5_job *own)
{
	while (!own->done) {
		struct md5_job *act[MD5_LANES];
		size_t q = QUANTUM;
		int n = 0;
		bool finished = false;

		for (int l = 0; l < MD5_LANES; l++) {
			if (!g->lane[l] && g->queue) {
				g->lane[l] = g->queue;
				g->queue = g->queue->next;
				if (!g->queue)
					g->queue_end = &g->queue;
			}
			if (g->lane[l]) {
				act[n++] = g->lane[l];
				q = MIN(q, g->lane[l]->blocks);
			}
		}
		pthread_mutex_unlock(&g->lock);
		run_jobs(act, n, q);
		pthread_mutex_lock(&g->lock);
		for (int l = 0; l < MD5_LANES; l++) {
			struct md5_job *j = g->lane[l];
			if (!j)
				continue;
			j->p += q * 64;
			j->blocks -= q;
			if (!j->blocks) {
				j->done = true;
				g->lane[l] = NULL;
				atomic_fetch_sub(&g->load, 1);
				finished = true;
			}
		}
		if (finished)
			pthread_cond_broadcast(&g->cond);
	}
}

/*
 * The fullest group with a free lane (a lane costs the same whether its
 * neighbours are busy or not, so packing streams leaves the other CPUs to
 * other work), else the least loaded.
 */
static struct md5_group *pick_group(void)
{
	struct md5_group *best = NULL, *least = &groups[0];
	int best_load = -1;
	for (int i = 0; i < ngroups; i++) {
		int load = atomic_load(&groups[i].load);
		if (load < MD5_LANES && load > best_load) {
			best = &groups[i];
			best_load = load;
		}
		if (load < atomic_load(&least->load))
			least = &groups[i];
	}
	return best ? best : least;
}

/* Hashes nblocks at p into h in a group; returns when done. */
static void hash_in_group(uint32_t h[4], const uint8_t *p, size_t nblocks)
{
	struct md5_job job = {.h = h, .p = p, .blocks = nblocks};
	struct md5_group *g = pick_group();

	pthread_mutex_lock(&g->lock);
	*g->queue_end = &job;
	g->queue_end = &job.next;
	atomic_fetch_add(&g->load, 1);
	while (!job.done) {
		if (g->driving) {
			pthread_cond_wait(&g->cond, &g->lock);
			continue;
		}
		g->driving = true;
		drive(g, &job);
		g->driving = false;
		if (atomic_load(&g->load))
			pthread_cond_broadcast(&g->cond); /* someone else drives the rest */
	}
	pthread_mutex_unlock(&g->lock);
}

/* ---- the stream interface ---- */

void md5_init(struct md5_ctx *ctx)
{
	static const uint32_t iv[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
	memcpy(ctx->h, iv, sizeof(iv));
	ctx->total = 0;
	ctx->tail_len = 0;
}

void md5_update(struct md5_ctx *ctx, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t nblocks;

	ctx->total += len;
	if (ctx->tail_len) {
		size_t take = MIN(len, 64 - ctx->tail_len);
		memcpy(ctx->tail + ctx->tail_len, p, take);
		ctx->tail_len += take;
		p += take;
		len -= take;
		if (ctx->tail_len < 64)
			return;
		hash_alone(ctx->h, ctx->tail, 1);
		ctx->tail_len = 0;
	}
	nblocks = len / 64;
	if (nblocks) {
		pthread_once(&groups_once, groups_init);
		if (len >= LANES_MIN && atomic_load(&lanes_on))
			hash_in_group(ctx->h, p, nblocks);
		else
			hash_alone(ctx->h, p, nblocks);
	}
	memcpy(ctx->tail, p + nblocks * 64, len % 64);
	ctx->tail_len = len % 64;
}

void md5_final(struct md5_ctx *ctx, uint8_t out[MD5_SIZE])
{
	uint64_t bits = ctx->total * 8;
	uint8_t pad[72] = {0x80};
	size_t padlen = (ctx->tail_len < 56 ? 56 : 120) - ctx->tail_len;

	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (uint8_t)(bits >> (8 * i));
	md5_update(ctx, pad, padlen + 8);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			out[4 * i + j] = (uint8_t)(ctx->h[i] >> (8 * j));
}

void md5_digest(const void *data, size_t len, uint8_t out[MD5_SIZE])
{
	struct md5_ctx ctx;
	md5_init(&ctx);
	md5_update(&ctx, data, len);
	md5_final(&ctx, out);
}
