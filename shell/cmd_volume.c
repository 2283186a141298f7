/* volume.list, volume.mark, volume.delete, volume.vacuum. */
#include "config.h"
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "shell/shell_int.h"
#include "util.h"

/* ---- volume.list ---- */

struct vl_sum {
	int64_t volumes, active, max, free;
	uint64_t size, files, deleted_files, deleted_bytes;
};

static uint64_t vget(const jt *v, const char *key)
{
	uint64_t x = 0;
	jt_as_u64(jt_get(v, key), &x);
	return x;
}

static bool vbool(const jt *v, const char *key)
{
	bool b = false;
	jt_as_bool(jt_get(v, key), &b);
	return b;
}

static const char *vcoll(const jt *v)
{
	const char *c = jt_get_str(v, "Collection");
	return c ? c : "";
}

/* The placement as SeaweedFS prints it: the xyz digits read as a number (001 -> 1). */
static unsigned vplacement(const jt *v)
{
	const jt *rp = jt_get(v, "ReplicaPlacement");
	return (unsigned)(vget(rp, "DiffDataCenterCount") * 100 + vget(rp, "DiffRackCount") * 10 +
			  vget(rp, "SameRackCount"));
}

static void sum_add(struct vl_sum *to, const struct vl_sum *s)
{
	to->volumes += s->volumes;
	to->active += s->active;
	to->max += s->max;
	to->free += s->free;
	to->size += s->size;
	to->files += s->files;
	to->deleted_files += s->deleted_files;
	to->deleted_bytes += s->deleted_bytes;
}

static void print_usage(int indent, const char *what, const char *id, const struct vl_sum *s)
{
	printf("%*s%s%s%s hdd(volume:%" PRId64 "/%" PRId64 " active:%" PRId64 " free:%" PRId64
	       " remote:0)\n",
	       indent, "", what, id ? " " : "", id ? id : "", s->volumes, s->max, s->active,
	       s->free);
}

static void print_total(int indent, const char *what, const char *id, const struct vl_sum *s)
{
	printf("%*s%s%s%s total size:%" PRIu64 " file_count:%" PRIu64 " deleted_file:%" PRIu64
	       " deleted_bytes:%" PRIu64 "\n",
	       indent, "", what, id ? " " : "", id ? id : "", s->size, s->files, s->deleted_files,
	       s->deleted_bytes);
}

static int rep_cmp(const void *a, const void *b)
{
	const struct shell_replica *x = a, *y = b;
	int c = strcmp(x->node, y->node);
	return c ? c : (x->id > y->id) - (x->id < y->id);
}

struct vl_filter {
	const char *pattern; /* -collectionPattern */
	uint32_t vid;
	bool has_vid;
};

static bool vl_match(const struct vl_filter *f, const struct shell_replica *r)
{
	if (f->has_vid && r->id != f->vid)
		return false;
	return !f->pattern || !fnmatch(f->pattern, vcoll(r->v), 0);
}

/* Prints one server's volumes and returns its sums. */
static struct vl_sum list_node(const struct shell_node *nd, const struct shell_replica *reps,
			       size_t nreps, const struct vl_filter *f)
{
	struct vl_sum s = {0};

	s.max = nd->max;
	s.free = nd->free;
	for (size_t i = 0; i < nreps; i++)
		if (!strcmp(reps[i].node, nd->url)) {
			s.volumes++;
			s.active += !vbool(reps[i].v, "ReadOnly");
		}
	print_usage(6, "DataNode", nd->url, &s);
	print_usage(8, "Disk", NULL, &s);
	for (size_t i = 0; i < nreps; i++) {
		const jt *v = reps[i].v;
		if (strcmp(reps[i].node, nd->url) || !vl_match(f, &reps[i]))
			continue;
		printf("          volume id:%" PRIu32 " size:%" PRIu64 " collection:\"%s\" file_count:%" PRIu64
		       " delete_count:%" PRIu64 " deleted_byte_count:%" PRIu64
		       " replica_placement:%u version:%" PRIu64 " read_only:%s"
		       " compact_revision:%" PRIu64 " modified_at_second:%" PRIu64 "\n",
		       reps[i].id, vget(v, "Size"), vcoll(v), vget(v, "FileCount"),
		       vget(v, "DeleteCount"), vget(v, "DeletedByteCount"), vplacement(v),
		       vget(v, "Version"), vbool(v, "ReadOnly") ? "true" : "false",
		       vget(v, "CompactRevision"), vget(v, "ModifiedAtSecond"));
		s.size += vget(v, "Size");
		s.files += vget(v, "FileCount");
		s.deleted_files += vget(v, "DeleteCount");
		s.deleted_bytes += vget(v, "DeletedByteCount");
	}
	for (size_t i = 0; i < jt_len(nd->ec); i++) {
		const jt *e = jt_at(nd->ec, i);
		uint64_t id = vget(e, "Id"), bits = vget(e, "Shards");
		const char *sep = "";
		if ((f->has_vid && id != f->vid) || (f->pattern && fnmatch(f->pattern, vcoll(e), 0)))
			continue;
		printf("          ec volume id:%" PRIu64 " collection:\"%s\" shards:[", id, vcoll(e));
		for (int k = 0; k < 14; k++)
			if (bits & (1u << k)) {
				printf("%s%d", sep, k);
				sep = " ";
			}
		printf("]\n");
	}
	print_total(8, "Disk", "hdd", &s);
	print_total(6, "DataNode", nd->url, &s);
	return s;
}

/* Sums of the nodes [from, to) without printing (the headers come first). */
static struct vl_sum usage_of(const struct shell_node *nodes, size_t from, size_t to,
			      const struct shell_replica *reps, size_t nreps)
{
	struct vl_sum s = {0};
	for (size_t i = from; i < to; i++) {
		s.max += nodes[i].max;
		s.free += nodes[i].free;
		for (size_t k = 0; k < nreps; k++)
			if (!strcmp(reps[k].node, nodes[i].url)) {
				s.volumes++;
				s.active += !vbool(reps[k].v, "ReadOnly");
			}
	}
	return s;
}

static int volume_list(struct shell_env *env, int argc, char **argv)
{
	struct vl_filter f = {0};
	const struct shell_flag flags[] = {
		{"collectionPattern", SF_STRING, &f.pattern, "only collections matching (glob)", NULL},
		{"volumeId", SF_U32, &f.vid, "only this volume", &f.has_vid},
	};
	struct shell_node *nodes = NULL;
	struct shell_replica *reps = NULL;
	jt *dst = NULL, *vst = NULL;
	struct vl_sum all = {0}, tot;
	size_t nn = 0, nr = 0;
	char msg[512];
	int rc = shell_parse_all("volume.list", flags, ARRAY_LEN(flags), argc, argv);

	if (rc)
		return rc < 0;
	if (shell_nodes(env, &dst, &nodes, &nn, msg, sizeof(msg)) ||
	    shell_replicas(env, &vst, &reps, &nr, msg, sizeof(msg))) {
		rc = shell_fail("volume.list", "%s", msg);
		goto out;
	}
	qsort(reps, nr, sizeof(*reps), rep_cmp);
	tot = usage_of(nodes, 0, nn, reps, nr);
	snprintf(msg, sizeof(msg), "volumeSizeLimit:%" PRIu64 " MB",
		 vget(vst, "VolumeSizeLimit") / (1024 * 1024));
	print_usage(0, "Topology", msg, &tot);
	for (size_t d = 0; d < nn;) {
		struct vl_sum dsum = {0};
		size_t dend = d;
		while (dend < nn && !strcmp(nodes[dend].dc, nodes[d].dc))
			dend++;
		tot = usage_of(nodes, d, dend, reps, nr);
		print_usage(2, "DataCenter", nodes[d].dc, &tot);
		for (size_t r = d; r < dend;) {
			struct vl_sum rsum = {0};
			size_t rend = r;
			while (rend < dend && !strcmp(nodes[rend].rack, nodes[r].rack))
				rend++;
			tot = usage_of(nodes, r, rend, reps, nr);
			print_usage(4, "Rack", nodes[r].rack, &tot);
			for (size_t k = r; k < rend; k++) {
				struct vl_sum s = list_node(&nodes[k], reps, nr, &f);
				sum_add(&rsum, &s);
			}
			print_total(4, "Rack", nodes[r].rack, &rsum);
			sum_add(&dsum, &rsum);
			r = rend;
		}
		print_total(2, "DataCenter", nodes[d].dc, &dsum);
		sum_add(&all, &dsum);
		d = dend;
	}
	printf("total size:%" PRIu64 " file_count:%" PRIu64 " deleted_file:%" PRIu64
	       " deleted_bytes:%" PRIu64 "\n",
	       all.size, all.files, all.deleted_files, all.deleted_bytes);
out:
	free(nodes);
	free(reps);
	jt_free(dst);
	jt_free(vst);
	return rc;
}

/* ---- the changing commands ---- */

/* Replicas of vid (into *out, borrowed from st), optionally only on node. */
static size_t replicas_of(const struct shell_replica *reps, size_t n, uint32_t vid,
			  const char *node, const struct shell_replica **out)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (reps[i].id == vid && (!node || !strcmp(reps[i].node, node)))
			out[k++] = &reps[i];
	return k;
}

/* The replicas of one volume (sel points into the /vol/status tree st). */
struct vol_sel {
	jt *st;
	struct shell_replica *reps;
	const struct shell_replica **sel;
	size_t n;
};

/* Loads the replicas of an existing volume (on node, if given), or 1 after saying why
 * not. Free with vol_sel_free either way. */
static int vol_sel_load(struct shell_env *env, const char *cmd, uint32_t vid, const char *node,
			struct vol_sel *v)
{
	size_t n;
	char msg[512];

	memset(v, 0, sizeof(*v));
	if (shell_replicas(env, &v->st, &v->reps, &n, msg, sizeof(msg)))
		return shell_fail(cmd, "%s", msg);
	v->sel = xcalloc(n + 1, sizeof(*v->sel));
	v->n = replicas_of(v->reps, n, vid, node, v->sel);
	if (v->n == 0 && node && replicas_of(v->reps, n, vid, NULL, v->sel))
		return shell_fail(cmd, "volume %" PRIu32 " is not on %s", vid, node);
	if (v->n == 0)
		return shell_fail(cmd, "volume %" PRIu32 " not found", vid);
	return 0;
}

static void vol_sel_free(struct vol_sel *v)
{
	free(v->sel);
	free(v->reps);
	jt_free(v->st);
}

int shell_admin_post(const char *cmd, const char *node, const char *pathq)
{
	char msg[512];
	if (shell_http("POST", node, pathq, NULL, NULL, NULL, msg, sizeof(msg)))
		return shell_fail(cmd, "%s: %s", node, msg);
	return 0;
}

static int volume_mark(struct shell_env *env, int argc, char **argv)
{
	static const char name[] = "volume.mark";
	uint32_t vid = 0;
	bool has_vid = false, ro = false, rw = false, dry = false;
	const char *node = NULL;
	const struct shell_flag flags[] = {
		{"volumeId", SF_U32, &vid, "the volume", &has_vid},
		{"readonly", SF_BOOL, &ro, "mark it read-only", NULL},
		{"writable", SF_BOOL, &rw, "mark it writable", NULL},
		{"node", SF_STRING, &node, "only the replica on this server", NULL},
		{"n", SF_BOOL, &dry, "dry run", NULL},
	};
	struct vol_sel v;
	int rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);

	if (rc)
		return rc < 0;
	if (!has_vid)
		return shell_fail(name, "-volumeId is required");
	if (ro == rw)
		return shell_fail(name, "give exactly one of -readonly and -writable");
	if (shell_need_lock(env, name, dry))
		return 1;
	rc = vol_sel_load(env, name, vid, node, &v);
	for (size_t i = 0; i < v.n && !rc; i++) {
		char pq[96];
		if (dry) {
			printf("would mark volume %" PRIu32 " on %s %s\n", vid, v.sel[i]->node,
			       ro ? "read-only" : "writable");
			continue;
		}
		snprintf(pq, sizeof(pq), "/admin/volume/readonly?volume=%" PRIu32 "&readonly=%s",
			 vid, ro ? "true" : "false");
		rc = shell_admin_post(name, v.sel[i]->node, pq);
		if (!rc)
			printf("volume %" PRIu32 " on %s: marked %s\n", vid, v.sel[i]->node,
			       ro ? "read-only" : "writable");
	}
	vol_sel_free(&v);
	return rc;
}

static int volume_delete(struct shell_env *env, int argc, char **argv)
{
	static const char name[] = "volume.delete";
	uint32_t vid = 0;
	bool has_vid = false, dry = false;
	const char *node = NULL;
	const struct shell_flag flags[] = {
		{"volumeId", SF_U32, &vid, "the volume", &has_vid},
		{"node", SF_STRING, &node, "the server to delete it from (host:port)", NULL},
		{"n", SF_BOOL, &dry, "dry run", NULL},
	};
	struct vol_sel v;
	int rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);

	if (rc)
		return rc < 0;
	if (!has_vid)
		return shell_fail(name, "-volumeId is required");
	if (!node || !*node)
		return shell_fail(name, "-node is required");
	if (shell_need_lock(env, name, dry))
		return 1;
	rc = vol_sel_load(env, name, vid, node, &v);
	if (!rc && dry) {
		printf("would delete volume %" PRIu32 " on %s\n", vid, node);
	} else if (!rc) {
		char pq[64];
		snprintf(pq, sizeof(pq), "/admin/volume/delete?volume=%" PRIu32, vid);
		rc = shell_admin_post(name, node, pq);
		if (!rc)
			printf("volume %" PRIu32 " on %s: deleted\n", vid, node);
	}
	vol_sel_free(&v);
	return rc;
}

/* ---- volume.vacuum ---- */

/* The smallest garbage ratio over the replicas (-1 when one did not answer). */
static double garbage_ratio(const char *cmd, const struct shell_replica **sel, size_t n)
{
	double min = 1;
	for (size_t i = 0; i < n; i++) {
		char pq[64], msg[512];
		jt *v = NULL;
		double r;
		const jt *g;
		snprintf(pq, sizeof(pq), "/admin/vacuum/check?volume=%" PRIu32, sel[i]->id);
		if (shell_get(sel[i]->node, pq, &v, msg, sizeof(msg))) {
			shell_fail(cmd, "%s: %s", sel[i]->node, msg);
			return -1;
		}
		g = jt_get(v, "garbageRatio");
		r = g && g->type == JT_NUM ? strtod(g->s, NULL) : 0;
		min = MIN(min, r);
		jt_free(v);
	}
	return min;
}

/* Compacts then commits one volume on each replica (cleans up after a failure). */
static int vacuum_direct(const char *cmd, const struct shell_replica **sel, size_t n)
{
	const char *steps[] = {"compact", "commit"};
	int rc = 0;

	for (size_t s = 0; s < ARRAY_LEN(steps) && !rc; s++)
		for (size_t i = 0; i < n && !rc; i++) {
			char pq[64];
			snprintf(pq, sizeof(pq), "/admin/vacuum/%s?volume=%" PRIu32, steps[s],
				 sel[i]->id);
			rc = shell_admin_post(cmd, sel[i]->node, pq);
		}
	for (size_t i = 0; i < n && rc; i++) {
		char pq[64], msg[512];
		snprintf(pq, sizeof(pq), "/admin/vacuum/cleanup?volume=%" PRIu32, sel[i]->id);
		shell_http("POST", sel[i]->node, pq, NULL, NULL, NULL, msg, sizeof(msg));
	}
	return rc;
}

static int volume_vacuum(struct shell_env *env, int argc, char **argv)
{
	static const char name[] = "volume.vacuum";
	double threshold = 0.3;
	uint32_t vid = 0;
	bool has_vid = false, dry = false;
	const struct shell_flag flags[] = {
		{"garbageThreshold", SF_DOUBLE, &threshold,
		 "vacuum volumes with more garbage than this ratio", NULL},
		{"volumeId", SF_U32, &vid, "only this volume", &has_vid},
		{"n", SF_BOOL, &dry, "dry run", NULL},
	};
	struct shell_replica *reps = NULL;
	const struct shell_replica **sel = NULL;
	size_t n = 0, due = 0;
	jt *st = NULL;
	char msg[512];
	int rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);

	if (rc)
		return rc < 0;
	if (!(threshold >= 0 && threshold <= 1))
		return shell_fail(name, "invalid -garbageThreshold %g (want 0..1)", threshold);
	if (shell_need_lock(env, name, dry))
		return 1;
	if (shell_replicas(env, &st, &reps, &n, msg, sizeof(msg)))
		return shell_fail(name, "%s", msg);
	qsort(reps, n, sizeof(*reps), rep_cmp);
	sel = xcalloc(n + 1, sizeof(*sel));
	if (has_vid && !replicas_of(reps, n, vid, NULL, sel)) {
		rc = shell_fail(name, "volume %" PRIu32 " not found", vid);
		goto out;
	}
	/* Each volume once, in id order: the lowest id not yet seen. */
	for (uint32_t last = 0, cur;; last = cur) {
		size_t k;
		double ratio;
		bool any = false;
		cur = UINT32_MAX;
		for (size_t i = 0; i < n; i++)
			if (reps[i].id > last && reps[i].id <= cur && (!has_vid || reps[i].id == vid)) {
				cur = reps[i].id;
				any = true;
			}
		if (!any)
			break;
		k = replicas_of(reps, n, cur, NULL, sel);
		ratio = garbage_ratio(name, sel, k);
		if (ratio < 0) {
			rc = 1;
			continue;
		}
		if (!(ratio > threshold))
			continue;
		due++;
		if (dry) {
			printf("would vacuum volume %" PRIu32 " (garbage %.1f%% on %zu replica(s))\n",
			       cur, ratio * 100, k);
		} else if (has_vid) {
			rc |= vacuum_direct(name, sel, k);
			if (!rc)
				printf("volume %" PRIu32 ": vacuumed (garbage was %.1f%%)\n", cur,
				       ratio * 100);
		} else {
			printf("volume %" PRIu32 ": garbage %.1f%%\n", cur, ratio * 100);
		}
		if (cur == UINT32_MAX)
			break;
	}
	if (!dry && !has_vid && due) {
		/* the master vacuums them, keeping new writes away meanwhile */
		char pq[64];
		snprintf(pq, sizeof(pq), "/vol/vacuum?garbageThreshold=%g", threshold);
		if (shell_http("POST", env->master, pq, NULL, NULL, NULL, msg, sizeof(msg)))
			rc = shell_fail(name, "%s", msg);
		else
			printf("vacuumed %zu volume(s)\n", due);
	} else if (!due) {
		printf("no volume has more than %.1f%% garbage\n", threshold * 100);
	}
out:
	free(sel);
	free(reps);
	jt_free(st);
	return rc;
}

const struct shell_cmd shell_cmds_volume[] = {
	{"volume.list", volume_list, "list the volumes by data center, rack and server",
	 "[-collectionPattern=GLOB] [-volumeId=N]", false},
	{"volume.mark", volume_mark, "mark a volume's replicas read-only or writable",
	 "-volumeId=N -readonly|-writable [-node=HOST:PORT] [-n]", true},
	{"volume.delete", volume_delete, "delete a volume's replica on one server",
	 "-volumeId=N -node=HOST:PORT [-n]", true},
	{"volume.vacuum", volume_vacuum, "compact volumes whose garbage exceeds a threshold",
	 "[-garbageThreshold=0.3] [-volumeId=N] [-n]", true},
	{NULL, NULL, NULL, NULL, false},
};
