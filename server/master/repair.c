/*
 * DESIGN: automatic repair. A thread scans the topology every pulse
 * (topology_repair_list): a volume with fewer live copies than its placement
 * asks for, for longer than -repairDelaySeconds, gets a new copy on the
 * server placement_extend picks, pulled by that server from a live copy
 * (/admin/volume/copy, throttled by -repairMBps); replicas whose figures
 * differ and stay unchanged for a whole scan (a replicated write that missed
 * a copy, a copy that came back stale) are brought level needle by needle
 * (replica_sync). One repair at a time, under the vacuum lock, so a repair
 * and a vacuum never work on the same files at once. Every repair is logged
 * and counted (weedfs_master_replication_repairs_total{kind}).
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http_client.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "server/common/replica_sync.h"
#include "server/master/master_int.h"
#include "util.h"

#define COPY_TIMEOUT_MS (60 * 60 * 1000)

static metric_series *counter(const char *name, const char *help, const char *kind)
{
	return metric_at(metric_counter(name, help, "kind"), kind);
}

static metric_series *repairs(const char *kind)
{
	return counter("weedfs_master_replication_repairs_total",
		       "Repairs done: volume copies made (copy), replicas brought level (sync).",
		       kind);
}

static metric_series *failures(const char *kind)
{
	return counter("weedfs_master_replication_repair_failures_total",
		       "Repairs that failed (retried at a later scan).", kind);
}

/* Asks the target to pull the volume from a live copy; true when it answered 200. */
static bool repair_copy(struct master *m, const struct topo_repair_item *it)
{
	struct http_result res;
	char *url = xasprintf("http://%s/admin/volume/copy?volume=%" PRIu32
			      "&source=%s&limitMBps=%d",
			      it->target, it->vid, it->urls[0], m->opts.repair_mbps);
	uint64_t t0 = time_mono_ns(), bytes = 0;
	wfs_err err;
	bool ok;

	log_info("repair: volume %" PRIu32 " has %zu of %zu copies; copying it from %s to %s",
		 it->vid, it->nurls, it->want, it->urls[0], it->target);
	http_result_init(&res);
	err = http_request("POST", url, NULL, NULL, 0, COPY_TIMEOUT_MS, &res);
	free(url);
	ok = !err && res.status == 200;
	if (ok) {
		char jerr[64];
		yajl_val j = json_parse(res.body.data, res.body.len, jerr, sizeof(jerr));
		if (j)
			json_get_u64(j, "bytesCopied", &bytes);
		yajl_tree_free(j);
		log_info("repair: volume %" PRIu32 " copied to %s: %" PRIu64 " bytes in %.3f s",
			 it->vid, it->target, bytes, (double)(time_mono_ns() - t0) / 1e9);
	} else {
		log_warn("repair: copying volume %" PRIu32 " to %s failed: %s%.*s", it->vid,
			 it->target, err ? wfs_strerror(err) : "",
			 err ? 0 : (int)MIN(res.body.len, 300), res.body.data);
	}
	http_result_free(&res);
	return ok;
}

static bool repair_sync(const struct topo_repair_item *it)
{
	const char *urls[TOPO_MAX_LOCATIONS];
	struct replica_sync_stats st;
	uint64_t t0 = time_mono_ns();
	char msg[512];
	wfs_err err;

	for (size_t i = 0; i < it->nurls; i++)
		urls[i] = it->urls[i];
	err = replica_sync(it->vid, urls, it->nurls, false, &st, msg, sizeof(msg));
	if (err) {
		log_warn("repair: bringing the %zu copies of volume %" PRIu32 " level failed: %s",
			 it->nurls, it->vid, msg);
		return false;
	}
	log_info("repair: the %zu copies of volume %" PRIu32 " differed; %zu record(s) copied "
		 "(%zu deletion(s), %" PRIu64 " bytes) over %zu needle id(s) in %.3f s",
		 it->nurls, it->vid, st.copied, st.deletions, st.bytes, st.ids,
		 (double)(time_mono_ns() - t0) / 1e9);
	return true;
}

static bool repair_stopping(struct master *m)
{
	bool s;
	pthread_mutex_lock(&m->lock);
	s = m->stopping;
	pthread_mutex_unlock(&m->lock);
	return s;
}

static void repair_scan(struct master *m)
{
	uint64_t delay_ns = (uint64_t)m->opts.repair_delay_seconds * 1000000000ull;
	size_t n;
	struct topo_repair_item *items =
		topology_repair_list(m->topo, time_mono_ns(), delay_ns, master_rand64(), &n);

	metric_inc(metric_at(metric_counter("weedfs_master_repair_scans_total",
					    "Scans of the topology for volumes to repair.", NULL)));
	for (size_t i = 0; i < n; i++) {
		const struct topo_repair_item *it = &items[i];
		const char *kind = it->sync ? "sync" : "copy";
		bool ok = false;
		if (!it->sync && !it->target[0]) {
			log_warn("repair: volume %" PRIu32 " has %zu of %zu copies and cannot get "
				 "more: %s",
				 it->vid, it->nurls, it->want, it->msg);
			continue;
		}
		if (!repair_stopping(m) && master_is_leader(m)) {
			pthread_mutex_lock(&m->vacuum_lock);
			ok = it->sync ? repair_sync(it) : repair_copy(m, it);
			pthread_mutex_unlock(&m->vacuum_lock);
			metric_inc(ok ? repairs(kind) : failures(kind));
		}
		topology_repair_done(m->topo, it, ok, time_mono_ns());
	}
	free(items);
}

void *master_repair_main(void *arg)
{
	struct master *m = arg;

	metric_add(repairs("copy"), 0);
	metric_add(repairs("sync"), 0);
	metric_add(failures("copy"), 0);
	metric_add(failures("sync"), 0);
	/* a fresh master waits until every live server has reported (three pulses), so that
	   a server whose first heartbeat is late does not look like a lost copy */
	if (!master_sleep(m, 3 * m->opts.pulse_seconds))
		return NULL;
	/* with -peers, the same holds for a fresh leader: it repairs once it has led for three
	   pulses, and never while it does not lead */
	while (master_sleep(m, m->opts.pulse_seconds))
		if (master_leader_age_ns(m) >= 3ull * (uint64_t)m->opts.pulse_seconds * 1000000000ull)
			repair_scan(m);
	return NULL;
}
