/*
 * The figures the load generators (tests/bench/s3_load.c, catalog_load.c) share:
 * latency percentiles and the client's own CPU time.
 */
#ifndef WEEDFS_BENCH_LOAD_STATS_H
#define WEEDFS_BENCH_LOAD_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

static inline int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile p (0..100] of the sorted v[0..n), in ms. */
static inline double pct_ms(const uint32_t *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t k = (size_t)((p / 100.0) * (double)n + 0.999999);
	return v[(k ? k : 1) - 1] / 1000.0;
}

static inline double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

#endif
