/* cluster.ps, cluster.check, collection.list, collection.delete. */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "shell/shell_int.h"
#include "util.h"

/* "(weedfs 0.1.0)" from a /dir/status or /status answer's Version, or the error. */
static int probe_version(const char *host, const char *pathq, char *out, size_t outlen)
{
	jt *v = NULL;
	int rc = shell_get(host, pathq, &v, out, outlen);
	if (!rc) {
		const char *ver = jt_get_str(v, "Version");
		snprintf(out, outlen, "%s", ver ? ver : "unknown version");
	}
	jt_free(v);
	return rc;
}

static int filer_probe(struct shell_env *env, char *msg, size_t msglen)
{
	return shell_http("GET", env->filer, "/healthz", NULL, NULL, NULL, msg, msglen);
}

static int cluster_ps(struct shell_env *env, int argc, char **argv)
{
	struct shell_node *nodes = NULL;
	size_t n = 0;
	jt *st = NULL;
	char msg[512];
	int rc = shell_no_args("cluster.ps", argc, argv);

	if (rc)
		return rc < 0;
	if (shell_nodes(env, &st, &nodes, &n, msg, sizeof(msg)))
		return shell_fail("cluster.ps", "master %s: %s", env->master, msg);
	printf("* master %s (%s)\n", env->master,
	       jt_get_str(st, "Version") ? jt_get_str(st, "Version") : "unknown version");
	if (filer_probe(env, msg, sizeof(msg)))
		printf("* filer %s (unreachable: %s)\n", env->filer, msg);
	else
		printf("* filer %s\n", env->filer);
	for (size_t i = 0; i < n; i++) {
		char ver[512];
		if (probe_version(nodes[i].url, "/status", ver, sizeof(ver)))
			printf("* volume server %s (unreachable: %s)\n", nodes[i].url, ver);
		else
			printf("* volume server %s (%s)\n", nodes[i].url, ver);
		printf("  DataCenter %s Rack %s volumes:%" PRId64 "/%" PRId64 "\n", nodes[i].dc,
		       nodes[i].rack, nodes[i].volumes, nodes[i].max);
	}
	free(nodes);
	jt_free(st);
	return 0;
}

/* ---- cluster.check ---- */

static unsigned rp_digit(const jt *v, const char *key)
{
	uint64_t x = 0;
	jt_as_u64(jt_get(jt_get(v, "ReplicaPlacement"), key), &x);
	return (unsigned)x;
}

/* Distinct values of a replica field among sel (dc, or dc+rack when racks). */
static size_t distinct(const struct shell_replica **sel, size_t n, bool racks)
{
	size_t d = 0;
	for (size_t i = 0; i < n; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strcmp(sel[i]->dc, sel[j]->dc) &&
			       (!racks || !strcmp(sel[i]->rack, sel[j]->rack));
		d += !seen;
	}
	return d;
}

/* Volumes short of the copies, data centers or racks their placement asks for. */
static size_t check_volumes(const struct shell_replica *reps, size_t n)
{
	const struct shell_replica **sel = xcalloc(n + 1, sizeof(*sel));
	size_t problems = 0;

	for (size_t i = 0; i < n; i++) {
		const jt *v = reps[i].v;
		unsigned x = rp_digit(v, "DiffDataCenterCount"), y = rp_digit(v, "DiffRackCount"),
			 z = rp_digit(v, "SameRackCount");
		size_t k = 0;
		bool first = true;
		for (size_t j = 0; j < n; j++)
			if (reps[j].id == reps[i].id) {
				first = first && j >= i;
				sel[k++] = &reps[j];
			}
		if (!first)
			continue; /* reported with its first replica */
		if (k < x + y + z + 1) {
			printf("volume %" PRIu32 ": %zu of %u copies (replication %u%u%u) on", reps[i].id,
			       k, x + y + z + 1, x, y, z);
			for (size_t j = 0; j < k; j++)
				printf(" %s", sel[j]->node);
			printf("\n");
			problems++;
		} else if (distinct(sel, k, false) < x + 1 || distinct(sel, k, true) < x + y + 1) {
			printf("volume %" PRIu32 ": copies not spread as replication %u%u%u asks\n",
			       reps[i].id, x, y, z);
			problems++;
		}
	}
	free(sel);
	return problems;
}

/* Prints a line for each EC volume missing shards; returns how many; *n gets the count of
 * EC volumes seen. */
static size_t check_ec(const struct shell_node *nodes, size_t nn, size_t *n)
{
	struct {
		uint64_t id, bits;
	} *ec = NULL;
	size_t cap = 0, problems = 0;

	*n = 0;
	for (size_t i = 0; i < nn; i++)
		for (size_t k = 0; k < jt_len(nodes[i].ec); k++) {
			const jt *e = jt_at(nodes[i].ec, k);
			uint64_t id = 0, bits = 0;
			size_t j;
			if (!jt_as_u64(jt_get(e, "Id"), &id) || !jt_as_u64(jt_get(e, "Shards"), &bits))
				continue;
			for (j = 0; j < *n && ec[j].id != id; j++)
				;
			if (j == *n) {
				if (*n == cap)
					ec = xrealloc(ec, (cap = cap ? cap * 2 : 8) * sizeof(*ec));
				ec[(*n)++].id = id;
				ec[j].bits = 0;
			}
			ec[j].bits |= bits;
		}
	for (size_t j = 0; j < *n; j++) {
		int have = __builtin_popcount((unsigned)ec[j].bits);
		if (have == 14)
			continue;
		printf("ec volume %" PRIu64 ": %d of 14 shards (missing", ec[j].id, have);
		for (int s = 0; s < 14; s++)
			if (!(ec[j].bits & (1u << s)))
				printf(" %d", s);
		printf(")%s\n", have >= 10 ? "; ec.rebuild regenerates them"
				       : "; fewer than 10: its data cannot be read");
		problems++;
	}
	free(ec);
	return problems;
}

static int cluster_check(struct shell_env *env, int argc, char **argv)
{
	struct shell_node *nodes = NULL;
	struct shell_replica *reps = NULL;
	size_t nn = 0, nr = 0, problems = 0, volumes = 0, ecs = 0;
	jt *dst = NULL, *vst = NULL;
	char msg[512];
	int rc = shell_no_args("cluster.check", argc, argv);

	if (rc)
		return rc < 0;
	if (shell_nodes(env, &dst, &nodes, &nn, msg, sizeof(msg)) ||
	    shell_replicas(env, &vst, &reps, &nr, msg, sizeof(msg))) {
		printf("master %s: unreachable: %s\n", env->master, msg);
		problems++;
		goto out;
	}
	printf("master %s: ok, %zu volume server(s)\n", env->master, nn);
	if (nn == 0) {
		printf("no volume server is registered\n");
		problems++;
	}
	for (size_t i = 0; i < nn; i++) {
		char ver[512];
		if (probe_version(nodes[i].url, "/status", ver, sizeof(ver))) {
			printf("volume server %s: unreachable: %s\n", nodes[i].url, ver);
			problems++;
		}
	}
	if (filer_probe(env, msg, sizeof(msg)))
		printf("filer %s: unreachable: %s\n", env->filer, msg);
	for (size_t i = 0; i < nr; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = reps[j].id == reps[i].id;
		volumes += !seen;
	}
	problems += check_volumes(reps, nr);
	problems += check_ec(nodes, nn, &ecs);
	printf("checked %zu volume(s), %zu replica(s), %zu EC volume(s)\n", volumes, nr, ecs);
out:
	if (problems)
		printf("cluster.check: %zu problem(s)\n", problems);
	else
		printf("cluster.check: ok\n");
	free(nodes);
	free(reps);
	jt_free(dst);
	jt_free(vst);
	return problems ? 1 : 0;
}

/* ---- collections ---- */

/* The distinct collections of the master's volumes, sorted (owned array of borrowed names). */
static const char **collections(const struct shell_replica *reps, size_t n, size_t *count)
{
	const char **c = xcalloc(n + 1, sizeof(*c));
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		const char *name = jt_get_str(reps[i].v, "Collection");
		size_t at = 0;
		name = name ? name : "";
		while (at < k && strcmp(c[at], name) < 0)
			at++;
		if (at < k && !strcmp(c[at], name))
			continue;
		memmove(&c[at + 1], &c[at], (k - at) * sizeof(*c));
		c[at] = name;
		k++;
	}
	*count = k;
	return c;
}

static int collection_list(struct shell_env *env, int argc, char **argv)
{
	struct shell_replica *reps = NULL;
	const char **names = NULL;
	size_t nr = 0, nc = 0;
	jt *st = NULL;
	char msg[512];
	int rc = shell_no_args("collection.list", argc, argv);

	if (rc)
		return rc < 0;
	if (shell_replicas(env, &st, &reps, &nr, msg, sizeof(msg)))
		return shell_fail("collection.list", "%s", msg);
	names = collections(reps, nr, &nc);
	for (size_t i = 0; i < nc && !rc; i++) {
		char *esc = shell_escape(names[i], false);
		char *pq = xasprintf("/collection/info?collection=%s", esc);
		int64_t vols = 0, files = 0, size = 0, deleted = 0;
		jt *v = NULL;
		if (shell_get(env->master, pq, &v, msg, sizeof(msg))) {
			rc = shell_fail("collection.list", "%s", msg);
		} else {
			jt_get_i64(v, "VolumeCount", &vols);
			jt_get_i64(v, "FileCount", &files);
			jt_get_i64(v, "TotalSize", &size);
			jt_get_i64(v, "DeletedBytes", &deleted);
			printf("collection:\"%s\"\tvolumeCount:%" PRId64 "\tsize:%" PRId64
			       "\tfileCount:%" PRId64 "\tdeletedBytes:%" PRId64 "\n",
			       names[i], vols, size, files, deleted);
		}
		jt_free(v);
		free(pq);
		free(esc);
	}
	if (!rc)
		printf("Total %zu collections.\n", nc);
	free(names);
	free(reps);
	jt_free(st);
	return rc;
}

static int collection_delete(struct shell_env *env, int argc, char **argv)
{
	static const char name[] = "collection.delete";
	const char *coll = NULL;
	bool dry = false;
	const struct shell_flag flags[] = {
		{"collection", SF_STRING, &coll, "the collection to delete", NULL},
		{"n", SF_BOOL, &dry, "dry run", NULL},
	};
	struct shell_replica *reps = NULL;
	const char **names = NULL;
	size_t nr = 0, nc = 0, vols = 0;
	bool found = false;
	jt *st = NULL;
	char msg[512];
	int rc = shell_parse_all(name, flags, ARRAY_LEN(flags), argc, argv);

	if (rc)
		return rc < 0;
	if (!coll || !*coll)
		return shell_fail(name, "-collection is required");
	if (shell_need_lock(env, name, dry))
		return 1;
	if (shell_replicas(env, &st, &reps, &nr, msg, sizeof(msg)))
		return shell_fail(name, "%s", msg);
	names = collections(reps, nr, &nc);
	for (size_t i = 0; i < nc; i++)
		found = found || !strcmp(names[i], coll);
	for (size_t i = 0; i < nr; i++) {
		const char *c = jt_get_str(reps[i].v, "Collection");
		vols += c && !strcmp(c, coll);
	}
	if (!found) {
		rc = shell_fail(name, "collection \"%s\" does not exist", coll);
	} else if (dry) {
		printf("would delete collection \"%s\" (%zu volume replica(s))\n", coll, vols);
	} else {
		char *esc = shell_escape(coll, false);
		char *pq = xasprintf("/col/delete?collection=%s", esc);
		if (shell_http("POST", env->master, pq, NULL, NULL, NULL, msg, sizeof(msg)))
			rc = shell_fail(name, "%s", msg);
		else
			printf("collection \"%s\" is deleted.\n", coll);
		free(pq);
		free(esc);
	}
	free(names);
	free(reps);
	jt_free(st);
	return rc;
}

const struct shell_cmd shell_cmds_cluster[] = {
	{"cluster.ps", cluster_ps, "list the master, the filer and the volume servers", "",
	 false},
	{"cluster.check", cluster_check,
	 "check that every server answers and every volume has its copies", "", false},
	{"collection.list", collection_list, "list the collections and their sizes", "", false},
	{"collection.delete", collection_delete, "delete a collection's volumes everywhere",
	 "-collection=NAME [-n]", true},
	{NULL, NULL, NULL, NULL, false},
};
