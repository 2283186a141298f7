/*
 * The erasure-coding commands: ec.encode, ec.rebuild, ec.decode, ec.balance. Each drives the
 * volume servers' /admin/ec/... endpoints (docs/internal-protocol.md) from the master's
 * /dir/status (which servers hold which shards) and /vol/status (the normal volumes).
 *
 * Every command is ordered so that a failure, or the shell being killed, at any step leaves
 * every needle readable: ec.encode removes the original volume only once all 14 shards are
 * in place; ec.decode removes the shards only once the decoded volume is loaded; ec.rebuild
 * and ec.balance add a shard before they remove a copy of it.
 */
#include "config.h"
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "shell_int.h"
#include "util.h"

#define EC_SHARDS   14
#define EC_DATA     10
#define EC_ALL      ((uint16_t)0x3fff)
#define JOB_TIMEOUT (60L * 60 * 1000) /* encoding or copying a 30 GB volume */

/* The cluster as the EC commands see it. */
struct ec_view {
	jt *dir_tree, *vol_tree;
	struct shell_node *nodes;
	size_t nn;
	struct shell_replica *reps;
	size_t nr;
};

static void view_free(struct ec_view *v)
{
	free(v->nodes);
	free(v->reps);
	jt_free(v->dir_tree);
	jt_free(v->vol_tree);
}

static int view_load(struct shell_env *env, const char *cmd, struct ec_view *v)
{
	char msg[512];
	memset(v, 0, sizeof(*v));
	if (shell_nodes(env, &v->dir_tree, &v->nodes, &v->nn, msg, sizeof(msg)) ||
	    shell_replicas(env, &v->vol_tree, &v->reps, &v->nr, msg, sizeof(msg))) {
		view_free(v);
		return shell_fail(cmd, "%s", msg);
	}
	return 0;
}

/* The shards node i holds of vid (and, when coll is non-NULL, the volume's collection). */
static uint16_t node_shards(const struct ec_view *v, size_t i, uint32_t vid, const char **coll)
{
	const jt *ecs = v->nodes[i].ec;
	for (size_t k = 0; k < jt_len(ecs); k++) {
		const jt *e = jt_at(ecs, k);
		uint64_t id = 0, bits = 0;
		if (jt_as_u64(jt_get(e, "Id"), &id) && id == vid && jt_as_u64(jt_get(e, "Shards"), &bits)) {
			if (coll) {
				const char *c = jt_get_str(e, "Collection");
				*coll = c ? c : "";
			}
			return (uint16_t)bits;
		}
	}
	return 0;
}

/* Every shard of vid held somewhere. */
static uint16_t all_shards(const struct ec_view *v, uint32_t vid, const char **coll)
{
	uint16_t bits = 0;
	for (size_t i = 0; i < v->nn; i++)
		bits |= node_shards(v, i, vid, coll);
	return bits;
}

/* The ids of the EC volumes (sorted, unique) whose collection matches pattern (NULL: any). */
static uint32_t *ec_vids(const struct ec_view *v, const char *pattern, size_t *n)
{
	uint32_t *out = NULL;
	size_t cap = 0;
	*n = 0;
	for (size_t i = 0; i < v->nn; i++) {
		const jt *ecs = v->nodes[i].ec;
		for (size_t k = 0; k < jt_len(ecs); k++) {
			const jt *e = jt_at(ecs, k);
			const char *c = jt_get_str(e, "Collection");
			uint64_t id = 0;
			bool seen = false;
			if (!jt_as_u64(jt_get(e, "Id"), &id) ||
			    (pattern && fnmatch(pattern, c ? c : "", 0)))
				continue;
			for (size_t j = 0; j < *n && !seen; j++)
				seen = out[j] == id;
			if (seen)
				continue;
			if (*n == cap)
				out = xrealloc(out, (cap = cap ? cap * 2 : 8) * sizeof(*out));
			out[(*n)++] = (uint32_t)id;
		}
	}
	for (size_t i = 1; i < *n; i++)
		for (size_t j = i; j > 0 && out[j - 1] > out[j]; j--) {
			uint32_t t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return out;
}

/* "0,1,13" for bits. */
static void shards_str(uint16_t bits, char *out, size_t outlen)
{
	size_t o = 0;
	out[0] = '\0';
	for (int s = 0; s < EC_SHARDS; s++)
		if (bits & (1u << s))
			o += (size_t)snprintf(out + o, outlen - o, "%s%d", o ? "," : "", s);
}

static int ec_post(const char *cmd, const char *node, const char *pq, jt **ans)
{
	char msg[512];
	if (shell_http_timeout("POST", node, pq, NULL, JOB_TIMEOUT, ans, NULL, msg, sizeof(msg)))
		return shell_fail(cmd, "%s: %s", node, msg);
	return 0;
}

static int copy_shards(const char *cmd, const char *target, const char *source, uint32_t vid,
		       const char *coll, uint16_t bits)
{
	char pq[512], list[64], *ec = shell_escape(coll, false);
	int rc;
	shards_str(bits, list, sizeof(list));
	snprintf(pq, sizeof(pq), "/admin/ec/copy?volume=%" PRIu32 "&collection=%s&shards=%s"
		 "&source=%s", vid, ec, list, source);
	free(ec);
	rc = ec_post(cmd, target, pq, NULL);
	if (!rc)
		printf("  volume %" PRIu32 ": shards %s copied from %s to %s\n", vid, list, source,
		       target);
	return rc;
}

static int delete_shards(const char *cmd, const char *node, uint32_t vid, uint16_t bits)
{
	char pq[160], list[64];
	shards_str(bits, list, sizeof(list));
	snprintf(pq, sizeof(pq), "/admin/ec/delete?volume=%" PRIu32 "&shards=%s", vid, list);
	return ec_post(cmd, node, pq, NULL);
}

/*
 * Which node gets each shard: one at a time, to the rack (of a data center) holding fewest
 * shards so far, in it to the node holding fewest, the emptiest first. Losing a rack then
 * costs as few shards as the racks allow (with 4 or more racks, at most 4: survivable).
 */
static bool same_rack(const struct shell_node *a, const struct shell_node *b)
{
	return !strcmp(a->dc, b->dc) && !strcmp(a->rack, b->rack);
}

static void spread(const struct ec_view *v, size_t *owner)
{
	int *on_node = xcalloc(v->nn + 1, sizeof(*on_node));
	for (int s = 0; s < EC_SHARDS; s++) {
		size_t best = v->nn;
		int best_rack = 0;
		for (size_t i = 0; i < v->nn; i++) {
			int in_rack = 0;
			for (size_t k = 0; k < v->nn; k++)
				if (same_rack(&v->nodes[i], &v->nodes[k]))
					in_rack += on_node[k];
			if (best == v->nn || in_rack < best_rack ||
			    (in_rack == best_rack &&
			     (on_node[i] < on_node[best] ||
			      (on_node[i] == on_node[best] && v->nodes[i].free > v->nodes[best].free)))) {
				best = i;
				best_rack = in_rack;
			}
		}
		owner[s] = best;
		on_node[best]++;
	}
	free(on_node);
}

/* ---- ec.encode ---- */

static bool has_replica(const struct ec_view *v, uint32_t vid)
{
	for (size_t i = 0; i < v->nr; i++)
		if (v->reps[i].id == vid)
			return true;
	return false;
}

static int encode_one(const char *cmd, const struct ec_view *v, uint32_t vid, bool dry)
{
	const struct shell_replica *r[32];
	size_t nr = 0, owner[EC_SHARDS], src = v->nn;
	uint16_t bits[64] = {0};
	const char *coll = "";
	int rc = 0;

	for (size_t i = 0; i < v->nr && nr < ARRAY_LEN(r); i++)
		if (v->reps[i].id == vid)
			r[nr++] = &v->reps[i];
	if (!nr)
		return shell_fail(cmd, "volume %" PRIu32 " not found", vid);
	coll = jt_get_str(r[0]->v, "Collection") ? jt_get_str(r[0]->v, "Collection") : "";
	for (size_t i = 0; i < nr; i++) {
		/* asked of the server itself: the master learns of a fresh mark a heartbeat later */
		char pq[96], msg[256];
		bool ro = false;
		jt *st = NULL;
		snprintf(pq, sizeof(pq), "/admin/volume/status?volume=%" PRIu32, vid);
		if (shell_get(r[i]->node, pq, &st, msg, sizeof(msg)))
			return shell_fail(cmd, "volume %" PRIu32 " on %s: %s", vid, r[i]->node, msg);
		jt_as_bool(jt_get(st, "readOnly"), &ro);
		jt_free(st);
		if (!ro)
			return shell_fail(cmd, "volume %" PRIu32 " is not sealed (writable on %s): mark "
					  "it read-only first (volume.mark -readonly -volumeId=%" PRIu32
					  ")", vid, r[i]->node, vid);
	}
	if (v->nn > ARRAY_LEN(bits))
		return shell_fail(cmd, "too many volume servers (%zu)", v->nn);
	for (size_t i = 0; i < v->nn; i++)
		if (!strcmp(v->nodes[i].url, r[0]->node))
			src = i;
	if (src == v->nn)
		return shell_fail(cmd, "volume %" PRIu32 ": its server %s is not live", vid,
				  r[0]->node);
	if (!dry && all_shards(v, vid, NULL)) {
		/* an ec.encode cut off before it removed the original: start again */
		printf("  removing the shards an unfinished ec.encode left\n");
		for (size_t i = 0; i < v->nn; i++)
			if (node_shards(v, i, vid, NULL) && delete_shards(cmd, v->nodes[i].url, vid, EC_ALL))
				return 1;
	}
	spread(v, owner);
	for (int s = 0; s < EC_SHARDS; s++)
		bits[owner[s]] |= (uint16_t)(1u << s);
	printf("volume %" PRIu32 " (collection \"%s\"): encoding on %s into 14 shards over %zu "
	       "server(s)\n", vid, coll, v->nodes[src].url, v->nn < EC_SHARDS ? v->nn : EC_SHARDS);
	for (size_t i = 0; i < v->nn; i++) {
		char list[64];
		if (!bits[i])
			continue;
		shards_str(bits[i], list, sizeof(list));
		printf("  shards %s -> %s (rack %s)\n", list, v->nodes[i].url, v->nodes[i].rack);
	}
	if (dry)
		return 0;
	{
		char pq[96];
		jt *ans = NULL;
		uint64_t size = 0;
		snprintf(pq, sizeof(pq), "/admin/ec/generate?volume=%" PRIu32, vid);
		if (ec_post(cmd, v->nodes[src].url, pq, &ans))
			return 1;
		jt_as_u64(jt_get(ans, "shardSize"), &size);
		jt_free(ans);
		printf("  generated 14 shards of %" PRIu64 " bytes on %s\n", size, v->nodes[src].url);
	}
	for (size_t i = 0; i < v->nn && !rc; i++)
		if (i != src && bits[i])
			rc = copy_shards(cmd, v->nodes[i].url, v->nodes[src].url, vid, coll, bits[i]);
	if (rc) {
		/* the original volume still serves: take the shards back out */
		for (size_t i = 0; i < v->nn; i++)
			if (bits[i] || i == src)
				delete_shards(cmd, v->nodes[i].url, vid, EC_ALL);
		return shell_fail(cmd, "volume %" PRIu32 ": encoding abandoned, the volume is "
				  "unchanged", vid);
	}
	if ((EC_ALL & ~bits[src]) && delete_shards(cmd, v->nodes[src].url, vid, EC_ALL & ~bits[src]))
		return 1;
	for (size_t i = 0; i < nr; i++) {
		char pq[64];
		snprintf(pq, sizeof(pq), "/admin/volume/delete?volume=%" PRIu32, vid);
		if (shell_admin_post(cmd, r[i]->node, pq))
			return 1;
		printf("  original copy removed from %s\n", r[i]->node);
	}
	printf("volume %" PRIu32 " erasure coded\n", vid);
	return 0;
}

static int ec_encode(struct shell_env *env, int argc, char **argv)
{
	static const char name[] = "ec.encode";
	const char *coll = NULL;
	uint32_t vid = 0;
	bool has_vid = false, dry = false;
	const struct shell_flag flags[] = {
		{"volumeId", SF_U32, &vid, "the volume to encode", &has_vid},
		{"collection", SF_STRING, &coll, "every sealed (read-only) volume of this collection",
		 NULL},
		{"n", SF_BOOL, &dry, "dry run: print the plan only", NULL},
	};
	struct ec_view v;
	int rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);
	uint32_t *todo = NULL;
	size_t nt = 0, done = 0;

	if (rc)
		return rc < 0;
	if (has_vid == (coll != NULL))
		return shell_fail(name, "give exactly one of -volumeId and -collection");
	if (has_vid && !vid)
		return shell_fail(name, "invalid -volumeId 0");
	if (shell_need_lock(env, name, dry) || view_load(env, name, &v))
		return 1;
	if (has_vid && all_shards(&v, vid, NULL) && !has_replica(&v, vid)) {
		view_free(&v);
		return shell_fail(name, "volume %" PRIu32 " is erasure coded already", vid);
	}
	todo = xcalloc(v.nr + 1, sizeof(*todo));
	if (has_vid) {
		todo[nt++] = vid;
	} else {
		for (size_t i = 0; i < v.nr; i++) {
			const char *c = jt_get_str(v.reps[i].v, "Collection");
			bool ro = false, seen = false;
			jt_as_bool(jt_get(v.reps[i].v, "ReadOnly"), &ro);
			if (!ro || strcmp(c ? c : "", coll))
				continue;
			for (size_t k = 0; k < nt && !seen; k++)
				seen = todo[k] == v.reps[i].id;
			if (!seen)
				todo[nt++] = v.reps[i].id;
		}
		if (!nt)
			printf("no sealed (read-only) volume in collection \"%s\"\n", coll);
	}
	for (size_t i = 0; i < nt; i++) {
		printf("[%zu/%zu] ", i + 1, nt);
		if (encode_one(name, &v, todo[i], dry))
			rc = 1;
		else
			done++;
	}
	if (nt)
		printf("%zu of %zu volume(s) %s\n", done, nt, dry ? "planned; nothing changed (-n)"
								 : "encoded");
	free(todo);
	view_free(&v);
	return rc;
}

/* ---- ec.rebuild ---- */

/* The node holding most shards of vid (ties: most free slots). */
static size_t richest(const struct ec_view *v, uint32_t vid)
{
	size_t best = 0;
	int best_n = -1;
	for (size_t i = 0; i < v->nn; i++) {
		int n = __builtin_popcount(node_shards(v, i, vid, NULL));
		if (n > best_n || (n == best_n && v->nodes[i].free > v->nodes[best].free)) {
			best = i;
			best_n = n;
		}
	}
	return best;
}

/*
 * Copies to node t the shards of vid it lacks: first every one of `need` held elsewhere,
 * then others until t holds `want`. *added gets the bits copied.
 */
static int gather(const char *cmd, const struct ec_view *v, uint32_t vid, const char *coll,
		  size_t t, uint16_t need, int want, uint16_t *added)
{
	uint16_t have = node_shards(v, t, vid, NULL);
	*added = 0;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < v->nn; i++) {
			uint16_t there = i == t ? 0 : node_shards(v, i, vid, NULL) & ~have, take = 0;
			for (int s = 0; s < EC_SHARDS; s++) {
				uint16_t b = (uint16_t)(1u << s);
				if ((there & b) && (pass == 0 ? (need & b) != 0
							      : __builtin_popcount(have | take) < want))
					take |= b;
			}
			if (!take)
				continue;
			if (copy_shards(cmd, v->nodes[t].url, v->nodes[i].url, vid, coll, take))
				return 1;
			*added |= take;
			have |= take;
		}
	return 0;
}

static int rebuild_one(const char *cmd, const struct ec_view *v, uint32_t vid, bool dry)
{
	const char *coll = "";
	uint16_t all = all_shards(v, vid, &coll), added = 0;
	size_t t;
	char list[64], pq[96];
	jt *ans = NULL;
	uint64_t rebuilt = 0;

	if (all == EC_ALL)
		return 0;
	shards_str(EC_ALL & ~all, list, sizeof(list));
	if (__builtin_popcount(all) < EC_DATA)
		return shell_fail(cmd, "volume %" PRIu32 ": only %d shards left (missing %s); 10 are "
				  "needed to rebuild", vid, __builtin_popcount(all), list);
	t = richest(v, vid);
	printf("volume %" PRIu32 ": rebuilding shards %s on %s\n", vid, list, v->nodes[t].url);
	if (dry)
		return 0;
	if (gather(cmd, v, vid, coll, t, 0, EC_DATA, &added))
		return 1;
	snprintf(pq, sizeof(pq), "/admin/ec/rebuild?volume=%" PRIu32, vid);
	if (ec_post(cmd, v->nodes[t].url, pq, &ans))
		return 1;
	jt_as_u64(jt_get(ans, "rebuilt"), &rebuilt);
	jt_free(ans);
	shards_str((uint16_t)rebuilt, list, sizeof(list));
	printf("  rebuilt shards %s on %s\n", list, v->nodes[t].url);
	/* the copies made only to rebuild from go again: their holders still have them */
	if (added && delete_shards(cmd, v->nodes[t].url, vid, added))
		return 1;
	return 0;
}

static int ec_rebuild(struct shell_env *env, int argc, char **argv)
{
	static const char name[] = "ec.rebuild";
	const char *coll = NULL;
	bool dry = false;
	const struct shell_flag flags[] = {
		{"collection", SF_STRING, &coll, "only volumes of collections matching (glob)", NULL},
		{"n", SF_BOOL, &dry, "dry run", NULL},
	};
	struct ec_view v;
	uint32_t *vids;
	size_t n, todo = 0;
	int rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);

	if (rc)
		return rc < 0;
	if (shell_need_lock(env, name, dry) || view_load(env, name, &v))
		return 1;
	vids = ec_vids(&v, coll, &n);
	for (size_t i = 0; i < n; i++)
		if (all_shards(&v, vids[i], NULL) != EC_ALL) {
			todo++;
			rc |= rebuild_one(name, &v, vids[i], dry);
		}
	if (!todo)
		printf("every shard of %zu EC volume(s) is in place\n", n);
	free(vids);
	view_free(&v);
	return rc;
}

/* ---- ec.decode ---- */

static int decode_one(const char *cmd, const struct ec_view *v, uint32_t vid, bool dry)
{
	const char *coll = "";
	uint16_t all = all_shards(v, vid, &coll), added = 0, missing_data = 0x3ff & ~all;
	size_t t = richest(v, vid);
	char pq[96];

	if (__builtin_popcount(all) < EC_DATA)
		return shell_fail(cmd, "volume %" PRIu32 ": only %d shards left; 10 are needed",
				  vid, __builtin_popcount(all));
	printf("volume %" PRIu32 ": decoding on %s%s\n", vid, v->nodes[t].url,
	       missing_data ? " (rebuilding missing data shards first)" : "");
	if (dry)
		return 0;
	if (gather(cmd, v, vid, coll, t, 0x3ff, missing_data ? EC_DATA : 0, &added))
		return 1;
	if (missing_data) {
		snprintf(pq, sizeof(pq), "/admin/ec/rebuild?volume=%" PRIu32, vid);
		if (ec_post(cmd, v->nodes[t].url, pq, NULL))
			return 1;
	}
	snprintf(pq, sizeof(pq), "/admin/ec/to_volume?volume=%" PRIu32, vid);
	if (ec_post(cmd, v->nodes[t].url, pq, NULL))
		return 1;
	printf("  volume %" PRIu32 " is a normal volume again on %s\n", vid, v->nodes[t].url);
	for (size_t i = 0; i < v->nn; i++)
		if ((i == t || node_shards(v, i, vid, NULL)) &&
		    delete_shards(cmd, v->nodes[i].url, vid, EC_ALL))
			return 1;
	printf("  shards removed; the master's repair (or volume.fix.replication) restores its "
	       "replication\n");
	return 0;
}

static int ec_decode(struct shell_env *env, int argc, char **argv)
{
	static const char name[] = "ec.decode";
	const char *coll = NULL;
	uint32_t vid = 0;
	bool has_vid = false, dry = false;
	const struct shell_flag flags[] = {
		{"volumeId", SF_U32, &vid, "the EC volume to decode", &has_vid},
		{"collection", SF_STRING, &coll, "every EC volume of this collection", NULL},
		{"n", SF_BOOL, &dry, "dry run", NULL},
	};
	struct ec_view v;
	uint32_t *vids = NULL;
	size_t n = 0;
	int rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);

	if (rc)
		return rc < 0;
	if (has_vid == (coll != NULL))
		return shell_fail(name, "give exactly one of -volumeId and -collection");
	if (shell_need_lock(env, name, dry) || view_load(env, name, &v))
		return 1;
	if (has_vid) {
		if (!all_shards(&v, vid, NULL)) {
			view_free(&v);
			return shell_fail(name, "volume %" PRIu32 " is not erasure coded", vid);
		}
		vids = xmalloc(sizeof(*vids));
		vids[n++] = vid;
	} else {
		vids = ec_vids(&v, coll, &n);
	}
	for (size_t i = 0; i < n; i++)
		rc |= decode_one(name, &v, vids[i], dry);
	if (!n)
		printf("no EC volume in collection \"%s\"\n", coll ? coll : "");
	free(vids);
	view_free(&v);
	return rc;
}

/* ---- ec.balance ---- */

/*
 * Evens out the shard count per server: while one server holds two or more shards more
 * than another that holds no shard of the same volume, moves one (copy, then delete).
 */
static int ec_balance(struct shell_env *env, int argc, char **argv)
{
	static const char name[] = "ec.balance";
	const char *coll = NULL;
	bool dry = false;
	const struct shell_flag flags[] = {
		{"collection", SF_STRING, &coll, "only volumes of collections matching (glob)", NULL},
		{"n", SF_BOOL, &dry, "dry run", NULL},
	};
	struct ec_view v;
	uint32_t *vids;
	int *count = NULL, rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);
	uint16_t (*held)[64];
	size_t n, moves = 0;

	if (rc)
		return rc < 0;
	if (shell_need_lock(env, name, dry) || view_load(env, name, &v))
		return 1;
	if (v.nn > 64) {
		view_free(&v);
		return shell_fail(name, "too many volume servers (%zu)", v.nn);
	}
	vids = ec_vids(&v, coll, &n);
	held = xcalloc(n + 1, sizeof(*held));
	count = xcalloc(v.nn + 1, sizeof(*count));
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < v.nn; i++) {
			held[k][i] = node_shards(&v, i, vids[k], NULL);
			count[i] += __builtin_popcount(held[k][i]);
		}
	for (bool moved = true; moved && !rc;) {
		moved = false;
		for (size_t k = 0; k < n && !moved && !rc; k++)
			for (size_t from = 0; from < v.nn && !moved; from++) {
				size_t to = v.nn;
				int s;
				if (!held[k][from] || __builtin_popcount(held[k][from]) < 2)
					continue;
				for (size_t i = 0; i < v.nn; i++)
					if (!held[k][i] && count[i] + 1 < count[from] &&
					    (to == v.nn || count[i] < count[to]))
						to = i;
				if (to == v.nn)
					continue;
				s = __builtin_ctz(held[k][from]);
				printf("moving shard %d of volume %" PRIu32 " from %s to %s\n", s, vids[k],
				       v.nodes[from].url, v.nodes[to].url);
				if (!dry) {
					const char *c = "";
					node_shards(&v, from, vids[k], &c);
					rc = copy_shards(name, v.nodes[to].url, v.nodes[from].url, vids[k], c,
							 (uint16_t)(1u << s)) ||
					     delete_shards(name, v.nodes[from].url, vids[k],
							   (uint16_t)(1u << s));
				}
				held[k][from] &= (uint16_t)~(1u << s);
				held[k][to] |= (uint16_t)(1u << s);
				count[from]--;
				count[to]++;
				moves++;
				moved = true;
			}
	}
	printf("%zu shard move(s)%s\n", moves, dry ? " planned; nothing changed (-n)" : "");
	free(count);
	free(held);
	free(vids);
	view_free(&v);
	return rc;
}

const struct shell_cmd shell_cmds_ec[] = {
	{"ec.encode", ec_encode, "erasure code sealed volumes: RS(10,4), 14 shards spread over "
	 "servers and racks, then the original removed", "-volumeId=N | -collection=NAME [-n]",
	 true},
	{"ec.rebuild", ec_rebuild, "regenerate the lost shards of EC volumes from any 10 others",
	 "[-collection=GLOB] [-n]", true},
	{"ec.decode", ec_decode, "turn EC volumes back into normal volumes",
	 "-volumeId=N | -collection=GLOB [-n]", true},
	{"ec.balance", ec_balance, "even out the number of shards per server",
	 "[-collection=GLOB] [-n]", true},
	{NULL, NULL, NULL, NULL, false},
};
