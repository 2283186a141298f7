/*
 * DESIGN: each replica's /admin/volume/needles listing (one line per id, ascending)
 * is read whole into an array; the arrays are merged by id; for each id the record
 * with the latest append time wins and is fetched once (needle_raw GET) from its
 * holder and appended (needle_raw POST) to every replica behind. Listings are small
 * (about 60 bytes an id) next to the volume; records are fetched one at a time.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "http_client.h"
#include "json.h"
#include "server/common/replica_sync.h"
#include "util.h"

#define LIST_TIMEOUT_MS (10 * 60 * 1000)
#define RAW_TIMEOUT_MS  (5 * 60 * 1000)

struct needle_state {
	uint64_t id;
	int64_t append_ns;
	uint64_t cookie, size;
	bool deleted;
};

struct listing {
	const char *url;
	struct needle_state *v;
	size_t n, cap, pos;
	char revision[32];
};

static bool parse_line(const char *line, size_t len, struct needle_state *out)
{
	char err[64];
	yajl_val j = json_parse(line, len, err, sizeof(err));
	uint64_t id;
	int64_t at;
	bool ok = j && json_get_u64(j, "id", &id) && json_get_i64(j, "appendAtNs", &at) &&
		  json_get_u64(j, "cookie", &out->cookie) && json_get_u64(j, "size", &out->size) &&
		  json_get_bool(j, "deleted", &out->deleted);
	if (ok) {
		out->id = id;
		out->append_ns = at;
	}
	yajl_tree_free(j);
	return ok;
}

static wfs_err list_needles(uint32_t vid, struct listing *l, char *msg, size_t msglen)
{
	struct http_result res;
	char *url = xasprintf("http://%s/admin/volume/needles?volume=%" PRIu32, l->url, vid);
	wfs_err err;

	http_result_init(&res);
	err = http_get(url, LIST_TIMEOUT_MS, &res);
	free(url);
	if (!err && res.status != 200) {
		snprintf(msg, msglen, "%s: needles of volume %" PRIu32 ": HTTP %d %.*s", l->url,
			 vid, res.status, (int)MIN(res.body.len, 200), res.body.data);
		err = res.status == 404 ? WFS_ENOENT : WFS_EUNAVAIL;
	} else if (err) {
		snprintf(msg, msglen, "%s: needles of volume %" PRIu32 ": %s", l->url, vid,
			 wfs_strerror(err));
	}
	if (!err && !http_result_header(&res, "X-Volume-Revision", l->revision,
					sizeof(l->revision)))
		l->revision[0] = '\0';
	for (size_t off = 0; !err && off < res.body.len;) {
		const char *line = res.body.data + off;
		const char *nl = memchr(line, '\n', res.body.len - off);
		size_t len = nl ? (size_t)(nl - line) : res.body.len - off;
		off += len + 1;
		if (len == 0)
			continue;
		if (l->n == l->cap) {
			l->cap = l->cap ? l->cap * 2 : 1024;
			l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
		}
		if (!parse_line(line, len, &l->v[l->n])) {
			snprintf(msg, msglen, "%s: malformed needles line of volume %" PRIu32,
				 l->url, vid);
			err = WFS_ECORRUPT;
		}
		l->n++;
	}
	http_result_free(&res);
	return err;
}

/* The record of id on from, appended to each of the n urls; counts into st. */
static wfs_err copy_record(uint32_t vid, uint64_t id, const char *from, const char **to,
			   size_t n, struct replica_sync_stats *st, char *msg, size_t msglen)
{
	struct http_result raw;
	char *url = xasprintf("http://%s/admin/volume/needle_raw?volume=%" PRIu32 "&id=%" PRIu64,
			      from, vid, id);
	char deleted[8] = "";
	wfs_err err;

	http_result_init(&raw);
	err = http_get(url, RAW_TIMEOUT_MS, &raw);
	free(url);
	if (!err && raw.status != 200) {
		snprintf(msg, msglen, "%s: needle %" PRIu64 " of volume %" PRIu32 ": HTTP %d", from,
			 id, vid, raw.status);
		err = WFS_EUNAVAIL;
	} else if (err) {
		snprintf(msg, msglen, "%s: needle %" PRIu64 ": %s", from, id, wfs_strerror(err));
	}
	http_result_header(&raw, "X-Needle-Deleted", deleted, sizeof(deleted));
	for (size_t i = 0; !err && i < n; i++) {
		struct http_result res;
		url = xasprintf("http://%s/admin/volume/needle_raw?volume=%" PRIu32, to[i], vid);
		http_result_init(&res);
		err = http_request("POST", url, NULL, raw.body.data, raw.body.len, RAW_TIMEOUT_MS,
				   &res);
		free(url);
		if (!err && res.status != 200) {
			snprintf(msg, msglen, "%s: writing needle %" PRIu64 " of volume %" PRIu32
				 ": HTTP %d %.*s", to[i], id, vid, res.status,
				 (int)MIN(res.body.len, 200), res.body.data);
			err = WFS_EUNAVAIL;
		} else if (err) {
			snprintf(msg, msglen, "%s: writing needle %" PRIu64 ": %s", to[i], id,
				 wfs_strerror(err));
		} else {
			st->copied++;
			st->bytes += raw.body.len;
			st->deletions += !strcmp(deleted, "true");
		}
		http_result_free(&res);
	}
	http_result_free(&raw);
	return err;
}

/*
 * True when a replica's state s (NULL: the id is absent there) is older than the winner's.
 * Each replica stamps its own append time on a replicated write, so the same needle
 * (cookie and size) is level whatever its time; a deletion matters only where the
 * needle is live.
 */
static bool behind_winner(const struct needle_state *s, const struct needle_state *win)
{
	if (win->deleted)
		return s && !s->deleted && s->append_ns < win->append_ns;
	if (!s)
		return true;
	if (s->deleted)
		return s->append_ns < win->append_ns;
	return (s->cookie != win->cookie || s->size != win->size) && s->append_ns < win->append_ns;
}

wfs_err replica_sync(uint32_t vid, const char *const *urls, size_t n, bool dry_run,
		     struct replica_sync_stats *st, char *msg, size_t msglen)
{
	struct listing *ls = xcalloc(n ? n : 1, sizeof(*ls));
	const char **behind = xcalloc(n ? n : 1, sizeof(*behind));
	wfs_err err = WFS_OK;

	memset(st, 0, sizeof(*st));
	msg[0] = '\0';
	for (size_t i = 0; i < n && !err; i++) {
		ls[i].url = urls[i];
		err = list_needles(vid, &ls[i], msg, msglen);
		if (!err && i > 0 && strcmp(ls[i].revision, ls[0].revision)) {
			snprintf(msg, msglen,
				 "volume %" PRIu32 " is at compaction revision %s on %s but %s on "
				 "%s: vacuum it first",
				 vid, ls[0].revision, ls[0].url, ls[i].revision, ls[i].url);
			err = WFS_EPRECOND;
		}
	}
	while (!err) {
		uint64_t id = UINT64_MAX;
		const struct needle_state *win = NULL;
		size_t wi = 0, nb = 0;
		for (size_t i = 0; i < n; i++)
			if (ls[i].pos < ls[i].n && ls[i].v[ls[i].pos].id < id)
				id = ls[i].v[ls[i].pos].id;
		if (id == UINT64_MAX)
			break;
		for (size_t i = 0; i < n; i++) {
			const struct needle_state *s =
				ls[i].pos < ls[i].n && ls[i].v[ls[i].pos].id == id
					? &ls[i].v[ls[i].pos] : NULL;
			if (s && (!win || s->append_ns > win->append_ns))
				win = s, wi = i;
		}
		for (size_t i = 0; i < n; i++) {
			const struct needle_state *s =
				ls[i].pos < ls[i].n && ls[i].v[ls[i].pos].id == id
					? &ls[i].v[ls[i].pos] : NULL;
			bool lacks = i != wi && behind_winner(s, win);
			if (lacks)
				behind[nb++] = ls[i].url;
			if (lacks && i < REPLICA_SYNC_REPORT)
				st->lacking[i]++;
			if (s)
				ls[i].pos++;
		}
		st->ids++;
		if (nb && dry_run) {
			st->copied += nb;
			st->deletions += win->deleted ? nb : 0;
		} else if (nb) {
			err = copy_record(vid, id, ls[wi].url, behind, nb, st, msg, msglen);
		}
	}
	for (size_t i = 0; i < n; i++)
		free(ls[i].v);
	free(ls);
	free(behind);
	return err;
}
