/*
 * volume.copy, volume.move, volume.fix.replication, volume.check.disk, volume.balance,
 * volume.fsck: the repair commands, over the volume servers' administration endpoints
 * (docs/internal-protocol.md "Volume administration"). Placement decisions use the
 * master's own pure logic (server/master/placement.h, linked into the weedfs binary)
 * over a snapshot of /dir/status and /vol/status, which the planning updates as it
 * goes: a plan never waits for the master to hear a heartbeat.
 */
#include "config.h"
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base64.h"
#include "client/chunk_cipher.h"
#include "client/chunks.h"
#include "http_client.h"
#include "jwt.h"
#include "security.h"
#include "server/common/replica_sync.h"
#include "server/master/placement.h"
#include "shell/shell_int.h"
#include "util.h"

#define COPY_TIMEOUT_MS (60L * 60 * 1000)
#define LIST_TIMEOUT_MS (10L * 60 * 1000)

/* ---- the cluster snapshot ---- */

struct snap {
	jt *dst, *vst;
	struct shell_node *nodes;
	size_t nn;
	struct shell_replica *reps; /* a replica with id 0 was removed by the plan */
	size_t nr, cap;
};

static int snap_load(struct shell_env *env, const char *cmd, struct snap *s)
{
	char msg[512];

	memset(s, 0, sizeof(*s));
	if (shell_nodes(env, &s->dst, &s->nodes, &s->nn, msg, sizeof(msg)) ||
	    shell_replicas(env, &s->vst, &s->reps, &s->nr, msg, sizeof(msg)))
		return shell_fail(cmd, "master %s: %s", env->master, msg);
	s->cap = s->nr;
	return 0;
}

static void snap_free(struct snap *s)
{
	free(s->nodes);
	free(s->reps);
	jt_free(s->dst);
	jt_free(s->vst);
}

static struct shell_node *snap_node(struct snap *s, const char *url)
{
	for (size_t i = 0; i < s->nn; i++)
		if (!strcmp(s->nodes[i].url, url))
			return &s->nodes[i];
	return NULL;
}

static struct shell_replica *snap_rep(struct snap *s, uint32_t vid, const char *url)
{
	for (size_t i = 0; i < s->nr; i++)
		if (s->reps[i].id == vid && !strcmp(s->reps[i].node, url))
			return &s->reps[i];
	return NULL;
}

/* The first replica of vid, or NULL. */
static struct shell_replica *snap_first(struct snap *s, uint32_t vid)
{
	for (size_t i = 0; i < s->nr; i++)
		if (s->reps[i].id == vid)
			return &s->reps[i];
	return NULL;
}

/* Replicas of vid into out (room for s->nr); their count. */
static size_t snap_copies(struct snap *s, uint32_t vid, struct shell_replica **out)
{
	size_t k = 0;
	for (size_t i = 0; i < s->nr; i++)
		if (s->reps[i].id == vid)
			out[k++] = &s->reps[i];
	return k;
}

/* The plan moved or added a copy: the model follows (from NULL: a new copy). */
static void snap_place(struct snap *s, struct shell_replica *from, uint32_t vid, const jt *v,
		       const char *to, bool keep_from)
{
	struct shell_node *src = from ? snap_node(s, from->node) : NULL, *dst = snap_node(s, to);
	struct shell_replica r = {0};

	r.id = vid;
	r.v = v;
	snprintf(r.node, sizeof(r.node), "%s", to);
	snprintf(r.dc, sizeof(r.dc), "%s", dst ? dst->dc : "");
	snprintf(r.rack, sizeof(r.rack), "%s", dst ? dst->rack : "");
	if (dst) {
		dst->volumes++;
		dst->free--;
	}
	if (from && !keep_from) {
		if (src) {
			src->volumes--;
			src->free++;
		}
		*from = r;
		return;
	}
	if (s->nr == s->cap)
		s->reps = xrealloc(s->reps, (s->cap = s->cap ? s->cap * 2 : 16) * sizeof(*s->reps));
	s->reps[s->nr++] = r;
}

static void snap_drop(struct snap *s, struct shell_replica *r)
{
	struct shell_node *nd = snap_node(s, r->node);
	if (nd) {
		nd->volumes--;
		nd->free++;
	}
	r->id = 0;
}

/* The distinct volume ids, ascending (owned). */
static uint32_t *snap_vids(const struct snap *s, size_t *n)
{
	uint32_t *ids = xcalloc(s->nr + 1, sizeof(*ids));
	size_t k = 0;

	for (size_t i = 0; i < s->nr; i++) {
		size_t at = 0;
		if (!s->reps[i].id)
			continue;
		while (at < k && ids[at] < s->reps[i].id)
			at++;
		if (at < k && ids[at] == s->reps[i].id)
			continue;
		memmove(&ids[at + 1], &ids[at], (k - at) * sizeof(*ids));
		ids[at] = s->reps[i].id;
		k++;
	}
	*n = k;
	return ids;
}

static uint8_t rp_digit(const jt *v, const char *key)
{
	uint64_t x = 0;
	jt_as_u64(jt_get(jt_get(v, "ReplicaPlacement"), key), &x);
	return (uint8_t)MIN(x, 9);
}

static struct replica_placement rp_of(const jt *v)
{
	struct replica_placement rp = {rp_digit(v, "DiffDataCenterCount"),
				       rp_digit(v, "DiffRackCount"), rp_digit(v, "SameRackCount")};
	return rp;
}

static const char *coll_of(const jt *v)
{
	const char *c = jt_get_str(v, "Collection");
	return c ? c : "";
}

static bool ro_of(const jt *v)
{
	bool b = false;
	jt_as_bool(jt_get(v, "ReadOnly"), &b);
	return b;
}

/* The servers as placement sees them (borrowing s); *idx_of gives a replica's index. */
static struct place_node *place_nodes(const struct snap *s)
{
	struct place_node *p = xcalloc(s->nn + 1, sizeof(*p));
	for (size_t i = 0; i < s->nn; i++) {
		p[i].url = p[i].public_url = s->nodes[i].url;
		p[i].dc = s->nodes[i].dc;
		p[i].rack = s->nodes[i].rack;
		p[i].free = (int)MAX(MIN(s->nodes[i].free, 1 << 30), 0);
	}
	return p;
}

/* Indices into s->nodes of the servers holding the copies c[0..n), skipping c[skip]. */
static size_t copy_set(struct snap *s, struct shell_replica **c, size_t n, size_t skip,
		       size_t *set)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		struct shell_node *nd = snap_node(s, c[i]->node);
		if (i != skip && nd)
			set[k++] = (size_t)(nd - s->nodes);
	}
	return k;
}

/* ---- the primitives ---- */

/* Has target pull vid from source; the bytes copied into *bytes. */
static int copy_volume(const char *cmd, uint32_t vid, const char *source, const char *target,
		       uint64_t *bytes)
{
	char pq[256], msg[512];
	jt *ans = NULL;

	*bytes = 0;
	snprintf(pq, sizeof(pq), "/admin/volume/copy?volume=%" PRIu32 "&source=%s", vid, source);
	if (shell_http_timeout("POST", target, pq, NULL, COPY_TIMEOUT_MS, &ans, NULL, msg,
			       sizeof(msg)))
		return shell_fail(cmd, "copying volume %" PRIu32 " from %s to %s: %s", vid, source,
				  target, msg);
	jt_as_u64(jt_get(ans, "bytesCopied"), bytes);
	jt_free(ans);
	return 0;
}

static int mark_ro(const char *cmd, const char *node, uint32_t vid, bool ro)
{
	char pq[96];
	snprintf(pq, sizeof(pq), "/admin/volume/readonly?volume=%" PRIu32 "&readonly=%s", vid,
		 ro ? "true" : "false");
	return shell_admin_post(cmd, node, pq);
}

static int delete_copy(const char *cmd, const char *node, uint32_t vid)
{
	char pq[64];
	snprintf(pq, sizeof(pq), "/admin/volume/delete?volume=%" PRIu32, vid);
	return shell_admin_post(cmd, node, pq);
}

/*
 * Moves vid from source to target: source read-only, copy, delete the source copy, then
 * target writable again when the source was. A failure before the source copy is gone
 * undoes what was done, leaving the source serving as it was.
 */
static int move_volume(const char *cmd, uint32_t vid, const char *source, const char *target,
		       bool was_ro, uint64_t *bytes)
{
	if (!was_ro && mark_ro(cmd, source, vid, true))
		return 1;
	if (copy_volume(cmd, vid, source, target, bytes))
		goto undo_source;
	if (delete_copy(cmd, source, vid)) {
		delete_copy(cmd, target, vid);
		goto undo_source;
	}
	if (!was_ro && mark_ro(cmd, target, vid, false))
		return shell_fail(cmd, "volume %" PRIu32 " moved to %s but left read-only there: "
				  "run volume.mark -volumeId=%" PRIu32 " -writable", vid, target, vid);
	return 0;
undo_source:
	if (!was_ro)
		mark_ro(cmd, source, vid, false);
	return 1;
}

/* ---- volume.copy, volume.move ---- */

struct cm_args {
	uint32_t vid;
	bool has_vid, dry;
	const char *source, *target;
};

/* Checks the arguments against the snapshot; the source's replica, or NULL after saying why. */
static struct shell_replica *cm_check(const char *cmd, struct snap *s, const struct cm_args *a)
{
	struct shell_replica *src;
	struct shell_node *tn;

	if (!snap_node(s, a->source)) {
		shell_fail(cmd, "%s is not a live volume server", a->source);
		return NULL;
	}
	tn = snap_node(s, a->target);
	if (!tn) {
		shell_fail(cmd, "%s is not a live volume server", a->target);
		return NULL;
	}
	src = snap_rep(s, a->vid, a->source);
	if (!src) {
		shell_fail(cmd, "volume %" PRIu32 " is not on %s", a->vid, a->source);
		return NULL;
	}
	if (snap_rep(s, a->vid, a->target)) {
		shell_fail(cmd, "volume %" PRIu32 " is already on %s", a->vid, a->target);
		return NULL;
	}
	if (tn->free <= 0) {
		shell_fail(cmd, "%s has no free volume slot", a->target);
		return NULL;
	}
	return src;
}

static int copy_or_move(struct shell_env *env, int argc, char **argv, bool move)
{
	const char *name = move ? "volume.move" : "volume.copy";
	struct cm_args a = {0};
	const struct shell_flag flags[] = {
		{"volumeId", SF_U32, &a.vid, "the volume", &a.has_vid},
		{"source", SF_STRING, &a.source, "the server holding it (host:port)", NULL},
		{"target", SF_STRING, &a.target, "the server to put it on (host:port)", NULL},
		{"n", SF_BOOL, &a.dry, "dry run", NULL},
	};
	struct shell_replica *src;
	struct snap s;
	uint64_t bytes = 0;
	int rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);

	if (rc)
		return rc < 0;
	if (!a.has_vid || !a.vid)
		return shell_fail(name, "-volumeId is required (1..4294967295)");
	if (!a.source || !*a.source || !a.target || !*a.target)
		return shell_fail(name, "-source and -target are required (host:port)");
	if (!strcmp(a.source, a.target))
		return shell_fail(name, "-source and -target are the same server %s", a.source);
	if (shell_need_lock(env, name, a.dry))
		return 1;
	rc = snap_load(env, name, &s);
	if (rc)
		goto out;
	src = cm_check(name, &s, &a);
	if (!src) {
		rc = 1;
	} else if (a.dry) {
		printf("would %s volume %" PRIu32 " from %s to %s\n", move ? "move" : "copy", a.vid,
		       a.source, a.target);
	} else {
		printf("%s volume %" PRIu32 " from %s to %s\n", move ? "moving" : "copying", a.vid,
		       a.source, a.target);
		fflush(stdout);
		rc = move ? move_volume(name, a.vid, a.source, a.target, ro_of(src->v), &bytes)
			  : copy_volume(name, a.vid, a.source, a.target, &bytes);
		if (!rc)
			printf("volume %" PRIu32 " %s to %s: %" PRIu64 " bytes copied\n", a.vid,
			       move ? "moved" : "copied", a.target, bytes);
	}
out:
	snap_free(&s);
	return rc;
}

static int volume_copy(struct shell_env *env, int argc, char **argv)
{
	return copy_or_move(env, argc, argv, false);
}

static int volume_move(struct shell_env *env, int argc, char **argv)
{
	return copy_or_move(env, argc, argv, true);
}

/* ---- volume.fix.replication ---- */

struct vol_filter {
	const char *pattern; /* -collectionPattern */
	uint32_t vid;
	bool has_vid;
};

static bool vf_match(const struct vol_filter *f, uint32_t vid, const jt *v)
{
	if (f->has_vid && vid != f->vid)
		return false;
	return !f->pattern || !fnmatch(f->pattern, coll_of(v), 0);
}

/* The common start of the commands over every volume: checks, lock, snapshot, ids and a
 * replica array c (room for every replica). s is initialised even when it fails. */
static int vols_load(struct shell_env *env, const char *name, const char *vid_flag,
		     const struct vol_filter *f, bool dry, struct snap *s, uint32_t **vids,
		     size_t *nv, struct shell_replica ***c)
{
	memset(s, 0, sizeof(*s));
	if (f->has_vid && !f->vid)
		return shell_fail(name, "invalid -%s 0", vid_flag);
	if (shell_need_lock(env, name, dry) || snap_load(env, name, s))
		return 1;
	*vids = snap_vids(s, nv);
	*c = xcalloc(s->nr + 1, sizeof(**c));
	return 0;
}

/* One planned copy. */
struct plan_copy {
	uint32_t vid;
	char source[128], target[128];
	bool is_move, was_ro;
};

static void plan_add(struct plan_copy **p, size_t *n, size_t *cap, uint32_t vid,
		     const char *source, const char *target, bool is_move, bool was_ro)
{
	struct plan_copy *c;
	if (*n == *cap)
		*p = xrealloc(*p, (*cap = *cap ? *cap * 2 : 8) * sizeof(**p));
	c = &(*p)[(*n)++];
	c->vid = vid;
	snprintf(c->source, sizeof(c->source), "%s", source);
	snprintf(c->target, sizeof(c->target), "%s", target);
	c->is_move = is_move;
	c->was_ro = was_ro;
}

/* Runs (or with dry only prints) the plan, with progress: volumes done / total, bytes. */
static int plan_run(const char *cmd, const struct plan_copy *p, size_t n, bool dry)
{
	uint64_t total = 0;
	size_t done = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t bytes = 0;
		const char *what = p[i].is_move ? "moving" : "replicating";
		if (dry) {
			printf("%s volume %" PRIu32 " from %s to %s\n", what, p[i].vid, p[i].source,
			       p[i].target);
			continue;
		}
		printf("[%zu/%zu] %s volume %" PRIu32 " from %s to %s\n", i + 1, n, what, p[i].vid,
		       p[i].source, p[i].target);
		fflush(stdout);
		if (p[i].is_move ? move_volume(cmd, p[i].vid, p[i].source, p[i].target, p[i].was_ro,
					       &bytes)
				 : copy_volume(cmd, p[i].vid, p[i].source, p[i].target, &bytes)) {
			rc = 1;
			continue;
		}
		total += bytes;
		done++;
		printf("[%zu/%zu] volume %" PRIu32 " done: %" PRIu64 " bytes (%" PRIu64
		       " bytes copied in all)\n", i + 1, n, p[i].vid, bytes, total);
		fflush(stdout);
	}
	if (dry)
		printf("%zu volume copy(ies) planned; nothing changed (-n)\n", n);
	else
		printf("%zu of %zu volume copy(ies) done, %" PRIu64 " bytes copied\n", done, n,
		       total);
	return rc;
}

/* The copy of c[0..n) whose removal leaves a set that still fits rp, from the fullest
 * server; n when none. */
static size_t extra_copy(struct snap *s, struct shell_replica **c, size_t n,
			 const struct place_node *pn, const struct replica_placement *rp)
{
	size_t *set = xcalloc(n + 1, sizeof(*set)), best = n;
	int64_t best_vols = -1;

	for (size_t i = 0; i < n; i++) {
		struct shell_node *nd = snap_node(s, c[i]->node);
		size_t k = copy_set(s, c, n, i, set);
		if (nd && nd->volumes > best_vols && placement_fits(pn, set, k, rp)) {
			best = i;
			best_vols = nd->volumes;
		}
	}
	free(set);
	return best;
}

static int fix_replication(struct shell_env *env, int argc, char **argv)
{
	static const char name[] = "volume.fix.replication";
	struct vol_filter f = {0};
	bool dry = false, do_delete = false;
	const struct shell_flag flags[] = {
		{"collectionPattern", SF_STRING, &f.pattern, "only collections matching (glob)", NULL},
		{"volumeIdFilter", SF_U32, &f.vid, "only this volume", &f.has_vid},
		{"doDelete", SF_BOOL, &do_delete, "remove the extra copies of over-replicated "
		 "volumes (default: only report them)", NULL},
		{"n", SF_BOOL, &dry, "dry run", NULL},
	};
	struct plan_copy *plan = NULL;
	size_t np = 0, cap = 0, nv = 0, under = 0, over = 0, stuck = 0;
	struct shell_replica **c = NULL;
	struct place_node *pn = NULL;
	uint32_t *vids = NULL;
	struct snap s;
	int rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);

	if (rc)
		return rc < 0;
	rc = vols_load(env, name, "volumeIdFilter", &f, dry, &s, &vids, &nv, &c);
	if (rc)
		goto out;
	for (size_t i = 0; i < nv; i++) {
		size_t n = snap_copies(&s, vids[i], c), want;
		struct replica_placement rp = rp_of(c[0]->v);
		const jt *v = c[0]->v;
		if (!vf_match(&f, vids[i], v))
			continue;
		want = (size_t)replica_placement_copies(&rp);
		under += n < want;
		while (n < want) {
			size_t *set = xcalloc(s.nn + 1, sizeof(*set)), k, to;
			char msg[256], rps[4];
			free(pn);
			pn = place_nodes(&s);
			k = copy_set(&s, c, n, n, set);
			if (placement_extend(pn, s.nn, set, k, &rp, vids[i], &to, msg, sizeof(msg))) {
				replica_placement_format(&rp, rps);
				printf("volume %" PRIu32 " (replication %s) has %zu of %zu copies and "
				       "no server fits: %s\n", vids[i], rps, n, want, msg);
				stuck++;
				free(set);
				break;
			}
			free(set);
			plan_add(&plan, &np, &cap, vids[i], c[0]->node, s.nodes[to].url, false,
				 false);
			snap_place(&s, NULL, vids[i], v, s.nodes[to].url, true);
			n = snap_copies(&s, vids[i], c);
		}
		while (n > want) {
			size_t x;
			free(pn);
			pn = place_nodes(&s);
			x = extra_copy(&s, c, n, pn, &rp);
			if (x == n)
				x = n - 1;
			over++;
			if (!do_delete) {
				printf("volume %" PRIu32 " is over-replicated: %zu of %zu copies (the "
				       "one on %s is extra; -doDelete removes it)\n", vids[i], n, want,
				       c[x]->node);
				break;
			}
			if (dry) {
				printf("deleting volume %" PRIu32 " from %s (over-replicated: %zu of "
				       "%zu copies)\n", vids[i], c[x]->node, n, want);
			} else if (delete_copy(name, c[x]->node, vids[i])) {
				rc = 1;
				break;
			} else {
				printf("volume %" PRIu32 " deleted from %s (was %zu of %zu copies)\n",
				       vids[i], c[x]->node, n, want);
			}
			snap_drop(&s, c[x]);
			n = snap_copies(&s, vids[i], c);
		}
	}
	if (!under && !over)
		printf("no volume is under- or over-replicated\n");
	rc |= plan_run(name, plan, np, dry);
	rc |= stuck > 0;
out:
	free(plan);
	free(pn);
	free(c);
	free(vids);
	snap_free(&s);
	return rc;
}

/* ---- volume.check.disk ---- */

static int check_disk(struct shell_env *env, int argc, char **argv)
{
	static const char name[] = "volume.check.disk";
	struct vol_filter f = {0};
	bool dry = false;
	const struct shell_flag flags[] = {
		{"volumeId", SF_U32, &f.vid, "only this volume", &f.has_vid},
		{"collectionPattern", SF_STRING, &f.pattern, "only collections matching (glob)", NULL},
		{"n", SF_BOOL, &dry, "dry run: print what each replica lacks", NULL},
	};
	struct shell_replica **c = NULL;
	size_t nv = 0, checked = 0, differed = 0, records = 0;
	uint64_t bytes = 0;
	uint32_t *vids = NULL;
	struct snap s;
	int rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);

	if (rc)
		return rc < 0;
	rc = vols_load(env, name, "volumeId", &f, dry, &s, &vids, &nv, &c);
	if (rc)
		goto out;
	if (f.has_vid && !snap_copies(&s, f.vid, c)) {
		rc = shell_fail(name, "volume %" PRIu32 " not found", f.vid);
		goto out;
	}
	for (size_t i = 0; i < nv; i++) {
		size_t n = snap_copies(&s, vids[i], c);
		const char **urls;
		struct replica_sync_stats st;
		char msg[512];
		if (n < 2 || !vf_match(&f, vids[i], c[0]->v))
			continue;
		urls = xcalloc(n, sizeof(*urls));
		for (size_t k = 0; k < n; k++)
			urls[k] = c[k]->node;
		checked++;
		if (replica_sync(vids[i], urls, n, dry, &st, msg, sizeof(msg))) {
			rc = shell_fail(name, "volume %" PRIu32 ": %s", vids[i], msg);
			free(urls);
			continue;
		}
		printf("volume %" PRIu32 ": %zu replicas, %zu needle id(s)", vids[i], n, st.ids);
		for (size_t k = 0; k < n && k < REPLICA_SYNC_REPORT; k++)
			printf("; %s lacks %zu", urls[k], st.lacking[k]);
		if (dry)
			printf("; would copy %zu record(s) (%zu deletion(s))\n", st.copied,
			       st.deletions);
		else
			printf("; copied %zu record(s) (%zu deletion(s), %" PRIu64 " bytes)\n",
			       st.copied, st.deletions, st.bytes);
		fflush(stdout);
		differed += st.copied > 0;
		records += st.copied;
		bytes += st.bytes;
		free(urls);
	}
	printf("checked %zu volume(s) with 2 or more replicas: %zu differed, %zu record(s) %s, "
	       "%" PRIu64 " bytes\n", checked, differed, records, dry ? "to copy" : "copied", bytes);
out:
	free(c);
	free(vids);
	snap_free(&s);
	return rc;
}

/* ---- volume.balance ---- */

/* Volumes on node counted by balance (all, or those of collection). */
static int64_t balance_count(const struct snap *s, const char *node, const char *coll)
{
	int64_t k = 0;
	for (size_t i = 0; i < s->nr; i++)
		k += s->reps[i].id && !strcmp(s->reps[i].node, node) &&
		     (!coll || !strcmp(coll_of(s->reps[i].v), coll));
	return k;
}

/* A copy on from that may go to to (placement still fits), or NULL. */
static struct shell_replica *movable(struct snap *s, const char *from, size_t to,
				     const char *coll, const struct place_node *pn)
{
	struct shell_replica **c = xcalloc(s->nr + 1, sizeof(*c)), *found = NULL;
	size_t *set = xcalloc(s->nr + 2, sizeof(*set));

	for (size_t i = 0; i < s->nr && !found; i++) {
		struct shell_replica *r = &s->reps[i];
		size_t n, k, me = 0;
		struct replica_placement rp;
		if (!r->id || strcmp(r->node, from) || (coll && strcmp(coll_of(r->v), coll)) ||
		    snap_rep(s, r->id, s->nodes[to].url))
			continue;
		n = snap_copies(s, r->id, c);
		while (me < n && c[me] != r)
			me++;
		k = copy_set(s, c, n, me, set);
		set[k++] = to;
		rp = rp_of(r->v);
		if (placement_fits(pn, set, k, &rp))
			found = r;
	}
	free(c);
	free(set);
	return found;
}

static int volume_balance(struct shell_env *env, int argc, char **argv)
{
	static const char name[] = "volume.balance";
	const char *coll = NULL;
	bool dry = false;
	const struct shell_flag flags[] = {
		{"collection", SF_STRING, &coll, "only this collection's volumes (\"\": the default "
		 "collection; absent: all volumes)", NULL},
		{"n", SF_BOOL, &dry, "dry run: print the moves", NULL},
	};
	struct plan_copy *plan = NULL;
	size_t np = 0, cap = 0;
	struct place_node *pn = NULL;
	struct snap s;
	int rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);

	if (rc)
		return rc < 0;
	if (shell_need_lock(env, name, dry))
		return 1;
	rc = snap_load(env, name, &s);
	if (rc)
		goto out;
	if (coll) {
		bool any = false;
		for (size_t i = 0; i < s.nr && !any; i++)
			any = !strcmp(coll_of(s.reps[i].v), coll);
		if (!any) {
			rc = shell_fail(name, "collection \"%s\" has no volume", coll);
			goto out;
		}
	}
	for (;;) {
		struct shell_replica *r = NULL;
		int64_t hi = -1, lo = INT64_MAX;
		/* the fullest server that can give a volume to one holding at least 2 fewer */
		for (size_t a = 0; a < s.nn; a++)
			hi = MAX(hi, balance_count(&s, s.nodes[a].url, coll));
		for (size_t a = 0; a < s.nn; a++)
			lo = MIN(lo, balance_count(&s, s.nodes[a].url, coll));
		if (s.nn < 2 || hi - lo <= 1)
			break;
		free(pn);
		pn = place_nodes(&s);
		for (size_t a = 0; a < s.nn && !r; a++) {
			int64_t ca = balance_count(&s, s.nodes[a].url, coll);
			if (ca != hi)
				continue;
			/* the emptiest first: b's count is lo, then lo + 1, ... */
			for (size_t b = 0, want = (size_t)lo; !r && (int64_t)want + 1 < ca;
			     b = (b + 1) % s.nn, want += b == 0) {
				int64_t cb = balance_count(&s, s.nodes[b].url, coll);
				if (cb != (int64_t)want || s.nodes[b].free <= 0)
					continue;
				r = movable(&s, s.nodes[a].url, b, coll, pn);
				if (r) {
					plan_add(&plan, &np, &cap, r->id, r->node, s.nodes[b].url, true,
						 ro_of(r->v));
					snap_place(&s, r, r->id, r->v, s.nodes[b].url, false);
				}
			}
		}
		if (!r)
			break; /* placement allows no move that narrows the spread */
	}
	if (!np)
		printf("the servers are balanced: nothing to move\n");
	rc = plan_run(name, plan, np, dry);
out:
	free(plan);
	free(pn);
	snap_free(&s);
	return rc;
}

/* ---- volume.fsck ---- */

struct fsck_ref {
	uint32_t vid;
	uint64_t key;
	char *path, *fid; /* owned */
};

struct fsck_needle {
	uint64_t id, cookie, size;
	int64_t append_ns;
	bool deleted;
};

struct fsck_vol {
	uint32_t vid;
	const char *node; /* the replica listed */
	struct fsck_needle *v;
	size_t n;
	bool listed; /* the filters chose it */
};

struct fsck {
	struct snap s;
	struct fsck_ref *refs;
	size_t nrefs, cap;
	uint64_t files;
	char *err; /* first error, owned */
};

/* "3,01637037d6" into volume, key and cookie. */
static bool fid_parse(const char *fid, uint32_t *vid, uint64_t *key, uint32_t *cookie)
{
	const char *comma = strchr(fid, ',');
	char vbuf[16], kbuf[24];
	size_t hl;

	if (!comma || comma == fid || (size_t)(comma - fid) >= sizeof(vbuf))
		return false;
	memcpy(vbuf, fid, (size_t)(comma - fid));
	vbuf[comma - fid] = 0;
	hl = strcspn(comma + 1, "_");
	if (hl <= 8 || hl > 8 + 16 || !parse_u32(vbuf, vid))
		return false;
	memcpy(kbuf, comma + 1, hl - 8);
	kbuf[hl - 8] = 0;
	*key = strtoull(kbuf, NULL, 16);
	memcpy(kbuf, comma + 1 + hl - 8, 8);
	kbuf[8] = 0;
	*cookie = (uint32_t)strtoul(kbuf, NULL, 16);
	return true;
}

static void ref_add(struct fsck *k, const char *path, const char *fid)
{
	struct fsck_ref *r;
	uint32_t cookie;

	if (k->nrefs == k->cap)
		k->refs = xrealloc(k->refs, (k->cap = k->cap ? k->cap * 2 : 64) * sizeof(*k->refs));
	r = &k->refs[k->nrefs];
	if (!fid_parse(fid, &r->vid, &r->key, &cookie)) {
		r->vid = 0; /* malformed: reported as missing */
		r->key = 0;
	}
	r->path = xstrdup(path);
	r->fid = xstrdup(fid);
	k->nrefs++;
}

/* The blob of fid from a replica of its volume (appended to out). */
static wfs_err fetch_blob(void *ctx, const char *fid, buf *out)
{
	struct fsck *k = ctx;
	struct shell_replica *r;
	struct http_result res;
	uint32_t vid, cookie;
	uint64_t key;
	wfs_err err;
	char *url;

	if (!fid_parse(fid, &vid, &key, &cookie))
		return WFS_EINVAL;
	r = snap_first(&k->s, vid);
	if (!r)
		return WFS_ENOENT;
	url = xasprintf("http://%s/%s", r->node, fid);
	http_result_init(&res);
	{ /* read signing: this node mints the token (it has the security file) */
		char auth[JWT_AUTH_HEADER_MAX];
		const char *hdr[] = {jwt_auth_header(&security()->volume_read, fid, auth), NULL};
		err = http_request("GET", url, hdr, NULL, 0, LIST_TIMEOUT_MS, &res);
	}
	free(url);
	if (!err && res.status != 200)
		err = res.status == 404 ? WFS_ENOENT : WFS_EUNAVAIL;
	if (!err)
		buf_append(out, res.body.data, res.body.len);
	http_result_free(&res);
	return err;
}

/*
 * The chunks of a manifest blob, each recorded (nested manifests too, to a depth). A
 * sealed one (-encryptVolumeData) is opened with key (NULL: plain); one that does not
 * open stops the check: its members would look orphaned.
 */
static void refs_of_manifest(struct fsck *k, const char *path, const char *fid,
			     const uint8_t *key, int depth)
{
	struct filer_chunk *c = NULL;
	size_t n = 0;
	buf b = BUF_INIT, plain = BUF_INIT;

	if (depth > CHUNKS_MANIFEST_DEPTH_MAX || fetch_blob(k, fid, &b)) {
		buf_free(&b);
		return; /* a missing manifest is reported as its own chunk */
	}
	if (key && chunk_cipher_open(key, (const uint8_t *)b.data, b.len, &plain)) {
		if (!k->err)
			k->err = xasprintf("%s: sealed manifest %s does not open with its key", path,
					   fid);
		buf_free(&b);
		buf_free(&plain);
		return;
	}
	if (key) {
		buf_free(&b);
		b = plain;
	}
	if (chunks_manifest_decode((const uint8_t *)b.data, b.len, &c, &n)) {
		buf_free(&b);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		ref_add(k, path, c[i].fid);
		if (c[i].is_manifest)
			refs_of_manifest(k, path, c[i].fid,
					 c[i].has_cipher_key ? c[i].cipher_key : NULL, depth + 1);
	}
	filer_chunks_free(c, n);
	buf_free(&b);
}

static int fsck_walk(struct shell_env *env, const jt *e, void *arg)
{
	struct fsck *k = arg;
	const char *path = jt_get_str(e, "fullPath");
	bool dir = false;
	char msg[512];
	const jt *cs = jt_get(e, "chunks");

	jt_as_bool(jt_get(e, "isDirectory"), &dir);
	if (!path)
		return 0;
	if (dir) {
		if (shell_fs_each(env, path, fsck_walk, k, msg, sizeof(msg)) < 0 && !k->err)
			k->err = xasprintf("%s: %s", path, msg);
		return k->err ? 1 : 0;
	}
	k->files++;
	for (size_t i = 0; i < jt_len(cs); i++) {
		const char *fid = jt_get_str(jt_at(cs, i), "fileId");
		const char *key64 = jt_get_str(jt_at(cs, i), "cipherKey");
		bool manifest = false;
		uint8_t *key = NULL;
		size_t klen = 0;
		if (!fid)
			continue;
		ref_add(k, path, fid);
		jt_as_bool(jt_get(jt_at(cs, i), "isManifest"), &manifest);
		if (key64 && (!base64_decode(key64, FILER_CHUNK_KEY_LEN, &key, &klen) ||
			      klen != FILER_CHUNK_KEY_LEN)) {
			if (!k->err)
				k->err = xasprintf("%s: chunk %s has a malformed cipherKey", path, fid);
			free(key);
			return 1;
		}
		if (manifest)
			refs_of_manifest(k, path, fid, key, 1);
		free(key);
	}
	return 0;
}

static int ref_cmp(const void *a, const void *b)
{
	const struct fsck_ref *x = a, *y = b;
	if (x->vid != y->vid)
		return x->vid < y->vid ? -1 : 1;
	return (x->key > y->key) - (x->key < y->key);
}

static bool referenced(const struct fsck *k, uint32_t vid, uint64_t key)
{
	struct fsck_ref q = {vid, key, NULL, NULL};
	return bsearch(&q, k->refs, k->nrefs, sizeof(q), ref_cmp) != NULL;
}

/* The needles of one replica of vid (the listing of /admin/volume/needles). */
static int list_volume(const char *cmd, struct fsck_vol *fv)
{
	struct http_result res;
	char *url = xasprintf("http://%s/admin/volume/needles?volume=%" PRIu32, fv->node, fv->vid);
	size_t cap = 0;
	wfs_err err;
	int rc = 0;

	http_result_init(&res);
	err = http_get(url, LIST_TIMEOUT_MS, &res);
	free(url);
	if (err || res.status != 200) {
		rc = shell_fail(cmd, "%s: needles of volume %" PRIu32 ": %s", fv->node, fv->vid,
				err ? wfs_strerror(err) : "bad status");
		goto out;
	}
	for (size_t off = 0; off < res.body.len;) {
		const char *line = res.body.data + off;
		const char *nl = memchr(line, '\n', res.body.len - off);
		size_t len = nl ? (size_t)(nl - line) : res.body.len - off;
		char perr[64];
		jt *j;
		off += len + 1;
		if (!len)
			continue;
		j = jt_parse(line, len, perr, sizeof(perr));
		if (fv->n == cap)
			fv->v = xrealloc(fv->v, (cap = cap ? cap * 2 : 256) * sizeof(*fv->v));
		memset(&fv->v[fv->n], 0, sizeof(*fv->v));
		if (!j || !jt_as_u64(jt_get(j, "id"), &fv->v[fv->n].id)) {
			jt_free(j);
			rc = shell_fail(cmd, "%s: malformed needles line of volume %" PRIu32,
					fv->node, fv->vid);
			goto out;
		}
		jt_as_u64(jt_get(j, "cookie"), &fv->v[fv->n].cookie);
		jt_as_u64(jt_get(j, "size"), &fv->v[fv->n].size);
		jt_as_i64(jt_get(j, "appendAtNs"), &fv->v[fv->n].append_ns);
		jt_as_bool(jt_get(j, "deleted"), &fv->v[fv->n].deleted);
		fv->n++;
		jt_free(j);
	}
out:
	http_result_free(&res);
	return rc;
}

static const struct fsck_needle *find_needle(const struct fsck_vol *fv, uint64_t id)
{
	size_t lo = 0, hi = fv->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (fv->v[mid].id == id)
			return &fv->v[mid];
		if (fv->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* "5m", "30s", "2h", "0": seconds into *out. */
static bool parse_duration(const char *s, uint64_t *out)
{
	char *end;
	double d = strtod(s, &end);
	double mul = !*end ? 1 : !strcmp(end, "s") ? 1 : !strcmp(end, "m") ? 60
		   : !strcmp(end, "h") ? 3600 : -1;
	if (end == s || mul < 0 || !(d >= 0) || d * mul > 1e12)
		return false;
	*out = (uint64_t)(d * mul);
	return true;
}

/* Deletes an orphan needle (the server passes it to the other replicas). */
static int delete_needle(const char *cmd, const char *node, const char *fid)
{
	char msg[512], *pq = xasprintf("/%s", fid);
	int rc = shell_http("DELETE", node, pq, NULL, NULL, NULL, msg, sizeof(msg));
	free(pq);
	if (rc)
		return shell_fail(cmd, "deleting %s on %s: %s", fid, node, msg);
	return 0;
}

/* Prints (and with del deletes) the live needles of fv no entry references. */
static size_t fsck_orphans(const char *cmd, const struct fsck *k, const struct fsck_vol *fv,
			   int64_t cutoff_ns, bool del, int *rc)
{
	size_t orphans = 0, live = 0;
	for (size_t i = 0; i < fv->n; i++) {
		const struct fsck_needle *nd = &fv->v[i];
		char fid[64];
		if (nd->deleted)
			continue;
		live++;
		if (referenced(k, fv->vid, nd->id) || nd->append_ns > cutoff_ns)
			continue;
		orphans++;
		snprintf(fid, sizeof(fid), "%" PRIu32 ",%" PRIx64 "%08" PRIx32, fv->vid, nd->id,
			 (uint32_t)nd->cookie);
		printf("orphan: volume %" PRIu32 " needle %s size:%" PRIu64 "%s\n", fv->vid, fid,
		       nd->size, del ? " (deleting)" : "");
		if (del && delete_needle(cmd, fv->node, fid))
			*rc = 1;
	}
	printf("volume:%" PRIu32 " entries:%zu orphan:%zu %.2f%%\n", fv->vid, live, orphans,
	       live ? 100.0 * (double)orphans / (double)live : 0.0);
	return orphans;
}

static int volume_fsck(struct shell_env *env, int argc, char **argv)
{
	static const char name[] = "volume.fsck";
	struct vol_filter f = {0};
	const char *cutoff_s = "5m";
	bool del = false;
	const struct shell_flag flags[] = {
		{"collectionPattern", SF_STRING, &f.pattern, "only collections matching (glob)", NULL},
		{"volumeId", SF_U32, &f.vid, "only this volume", &f.has_vid},
		{"cutoffTimeAgo", SF_STRING, &cutoff_s, "ignore needles newer than this (\"5m\", "
		 "\"30s\", \"0\"): uploads whose entry is not made yet", NULL},
		{"reallyDeleteFromVolume", SF_BOOL, &del, "delete the orphan needles (needs the "
		 "lock)", NULL},
	};
	struct fsck k = {0};
	struct fsck_vol *vols = NULL;
	uint32_t *vids = NULL;
	size_t nv = 0, orphans = 0, missing = 0;
	uint64_t cutoff = 0;
	char msg[512];
	int rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);

	if (rc)
		return rc < 0;
	if (!parse_duration(cutoff_s, &cutoff))
		return shell_fail(name, "invalid -cutoffTimeAgo \"%s\" (e.g. 5m, 30s, 0)", cutoff_s);
	if (f.has_vid && !f.vid)
		return shell_fail(name, "invalid -volumeId 0");
	if (shell_need_lock(env, name, !del))
		return 1;
	rc = snap_load(env, name, &k.s);
	if (rc)
		goto out;
	if (shell_fs_each(env, "/", fsck_walk, &k, msg, sizeof(msg)) < 0 || k.err) {
		rc = shell_fail(name, "filer %s: %s", env->filer, k.err ? k.err : msg);
		goto out;
	}
	qsort(k.refs, k.nrefs, sizeof(*k.refs), ref_cmp);
	vids = snap_vids(&k.s, &nv);
	vols = xcalloc(nv + 1, sizeof(*vols));
	printf("filer: %" PRIu64 " file(s), %zu chunk reference(s); %zu volume(s)\n", k.files,
	       k.nrefs, nv);
	for (size_t i = 0; i < nv && !rc; i++) {
		struct shell_replica *r = snap_first(&k.s, vids[i]);
		vols[i].vid = vids[i];
		vols[i].node = r->node;
		if (!vf_match(&f, vids[i], r->v))
			continue;
		vols[i].listed = true;
		rc = list_volume(name, &vols[i]);
		if (!rc)
			orphans += fsck_orphans(name, &k, &vols[i],
						(int64_t)(time_now_ns() - cutoff * 1000000000ull),
						del, &rc);
	}
	for (size_t i = 0; i < k.nrefs && !rc; i++) {
		const struct fsck_ref *r = &k.refs[i];
		const struct fsck_vol *fv = NULL;
		const struct fsck_needle *nd;
		for (size_t j = 0; j < nv && !fv; j++)
			if (vols[j].vid == r->vid)
				fv = &vols[j];
		if (fv ? !fv->listed : f.pattern || (f.has_vid && r->vid != f.vid))
			continue;
		nd = fv ? find_needle(fv, r->key) : NULL;
		if (nd && !nd->deleted)
			continue;
		missing++;
		printf("missing: %s chunk %s (%s)\n", r->path, r->fid,
		       !fv ? "no such volume" : nd ? "deleted" : "not in the volume");
	}
	if (!rc)
		printf("volume.fsck: %zu orphan needle(s)%s, %zu missing chunk(s)\n", orphans,
		       del ? " deleted" : "", missing);
	rc |= !rc && (orphans || missing) && !del;
out:
	for (size_t i = 0; i < nv; i++)
		free(vols[i].v);
	free(vols);
	free(vids);
	for (size_t i = 0; i < k.nrefs; i++) {
		free(k.refs[i].path);
		free(k.refs[i].fid);
	}
	free(k.refs);
	free(k.err);
	snap_free(&k.s);
	return rc;
}

const struct shell_cmd shell_cmds_repair[] = {
	{"volume.copy", volume_copy, "copy a volume to another server (the target pulls it)",
	 "-volumeId=N -source=HOST:PORT -target=HOST:PORT [-n]", true},
	{"volume.move", volume_move, "move a volume to another server (copy, then delete the "
	 "source copy)", "-volumeId=N -source=HOST:PORT -target=HOST:PORT [-n]", true},
	{"volume.fix.replication", fix_replication,
	 "add copies to under-replicated volumes where the placement allows",
	 "[-collectionPattern=GLOB] [-volumeIdFilter=N] [-doDelete] [-n]", true},
	{"volume.check.disk", check_disk,
	 "compare the replicas of each volume needle by needle and copy what one lacks",
	 "[-volumeId=N] [-collectionPattern=GLOB] [-n]", true},
	{"volume.balance", volume_balance,
	 "move volumes from the fullest to the emptiest servers (by volume count)",
	 "[-collection=NAME] [-n]", true},
	{"volume.fsck", volume_fsck,
	 "find needles no filer entry references and entries whose chunks are missing",
	 "[-collectionPattern=GLOB] [-volumeId=N] [-cutoffTimeAgo=5m] "
	 "[-reallyDeleteFromVolume]", false},
	{NULL, NULL, NULL, NULL, false},
};
