/*
 * DESIGN: candidates (free > 0) are grouped into data centers and racks.
 * Every (data center, rack) pair that matches the preferences and can host
 * the main copy plus z same-rack copies, with y other racks in that data
 * center and x other data centers, is a valid main position; the one whose
 * best server has the most free slots wins (rnd rotates ties). Copies then
 * go to the freest servers of each chosen group, which spreads volumes.
 * When nothing fits, the first unmet constraint is named in the message.
 */
#include "config.h"
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "server/master/placement.h"
#include "util.h"

struct grp_rack {
	const char *name;
	size_t *nodes; /* indices into the caller's nodes */
	size_t n;
	int best; /* most free slots of one server */
};

struct grp_dc {
	const char *name;
	struct grp_rack *racks;
	size_t nracks;
	int best;
};

struct groups {
	struct grp_dc *dcs;
	size_t ndcs;
};

static bool pref_set(const char *p) { return p && *p; }

static bool node_matches(const struct place_node *nd, const char *pref)
{
	return !pref_set(pref) || !strcmp(nd->url, pref) ||
	       (nd->public_url && !strcmp(nd->public_url, pref));
}

static void groups_build(struct groups *g, const struct place_node *nodes, size_t n)
{
	g->dcs = xcalloc(n ? n : 1, sizeof(*g->dcs));
	g->ndcs = 0;
	for (size_t i = 0; i < n; i++) {
		struct grp_dc *d = NULL;
		struct grp_rack *r = NULL;
		if (nodes[i].free <= 0)
			continue;
		for (size_t j = 0; j < g->ndcs && !d; j++)
			if (!strcmp(g->dcs[j].name, nodes[i].dc))
				d = &g->dcs[j];
		if (!d) {
			d = &g->dcs[g->ndcs++];
			d->name = nodes[i].dc;
			d->racks = xcalloc(n, sizeof(*d->racks));
		}
		for (size_t j = 0; j < d->nracks && !r; j++)
			if (!strcmp(d->racks[j].name, nodes[i].rack))
				r = &d->racks[j];
		if (!r) {
			r = &d->racks[d->nracks++];
			r->name = nodes[i].rack;
			r->nodes = xcalloc(n, sizeof(size_t));
		}
		r->nodes[r->n++] = i;
		r->best = MAX(r->best, nodes[i].free);
		d->best = MAX(d->best, nodes[i].free);
	}
}

static void groups_free(struct groups *g)
{
	for (size_t i = 0; i < g->ndcs; i++) {
		for (size_t j = 0; j < g->dcs[i].nracks; j++)
			free(g->dcs[i].racks[j].nodes);
		free(g->dcs[i].racks);
	}
	free(g->dcs);
}

static uint64_t rnd_next(uint64_t *s)
{
	/* splitmix64: only for tie-breaking */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Index in [0, n) of the highest score not yet taken, rotating ties by rnd; n if none. */
static size_t pick_best(const int *score, const bool *taken, size_t n, uint64_t *rnd)
{
	size_t best = n, off = n ? (size_t)(rnd_next(rnd) % n) : 0;
	for (size_t k = 0; k < n; k++) {
		size_t i = (k + off) % n;
		if (taken[i] || score[i] <= 0)
			continue;
		if (best == n || score[i] > score[best])
			best = i;
	}
	return best;
}

/* Picks the k freest servers of rack r other than skip into out; returns how many. */
static size_t pick_in_rack(const struct place_node *nodes, const struct grp_rack *r, size_t skip,
			   size_t k, uint64_t *rnd, size_t *out)
{
	int *score = xcalloc(r->n, sizeof(int));
	bool *taken = xcalloc(r->n, sizeof(bool));
	size_t got = 0;
	for (size_t i = 0; i < r->n; i++) {
		score[i] = nodes[r->nodes[i]].free;
		taken[i] = r->nodes[i] == skip;
	}
	while (got < k) {
		size_t b = pick_best(score, taken, r->n, rnd);
		if (b == r->n)
			break;
		taken[b] = true;
		out[got++] = r->nodes[b];
	}
	free(score);
	free(taken);
	return got;
}

wfs_err placement_choose(const struct place_node *nodes, size_t n,
			 const struct replica_placement *rp, const struct place_prefs *prefs,
			 uint64_t rnd, size_t *out, char *msg, size_t msglen)
{
	static const struct place_prefs none = {NULL, NULL, NULL};
	struct groups g;
	char rps[4];
	size_t best_dc = 0, best_rack = 0, main_node = 0, nout = 0;
	int best_score = 0, have_dcs = 0, have_racks = 0, have_servers = 0;
	bool found = false, pref_dc_seen = false;
	wfs_err err = WFS_ENOSPC;

	if (!prefs)
		prefs = &none;
	replica_placement_format(rp, rps);
	groups_build(&g, nodes, n);
	if (g.ndcs == 0) {
		snprintf(msg, msglen, "no free volume slots");
		goto out;
	}
	have_dcs = (int)g.ndcs;
	for (size_t di = 0; di < g.ndcs; di++) {
		struct grp_dc *d = &g.dcs[di];
		if (pref_set(prefs->dc) && strcmp(d->name, prefs->dc))
			continue;
		pref_dc_seen = true;
		have_racks = MAX(have_racks, (int)d->nracks);
		for (size_t ri = 0; ri < d->nracks; ri++) {
			struct grp_rack *r = &d->racks[ri];
			int score = 0;
			size_t mn = 0;
			bool has_node = false;
			if (pref_set(prefs->rack) && strcmp(r->name, prefs->rack))
				continue;
			have_servers = MAX(have_servers, (int)r->n);
			for (size_t k = 0; k < r->n; k++) {
				const struct place_node *nd = &nodes[r->nodes[k]];
				if (node_matches(nd, prefs->node) &&
				    (!has_node || nd->free > score)) {
					has_node = true;
					score = nd->free;
					mn = r->nodes[k];
				}
			}
			if (!has_node || r->n < (size_t)rp->server + 1 ||
			    d->nracks < (size_t)rp->rack + 1 || g.ndcs < (size_t)rp->dc + 1)
				continue;
			if (!found || score > best_score ||
			    (score == best_score && (rnd_next(&rnd) & 1))) {
				found = true;
				best_score = score;
				best_dc = di;
				best_rack = ri;
				main_node = mn;
			}
		}
	}
	if (!found) {
		if (have_dcs < rp->dc + 1)
			snprintf(msg, msglen,
				 "not enough data centers for replication %s: have %d with free "
				 "slots, "
				 "need %d",
				 rps, have_dcs, rp->dc + 1);
		else if (!pref_dc_seen)
			snprintf(msg, msglen, "no free volume slots in data center %s", prefs->dc);
		else if (have_racks < rp->rack + 1)
			snprintf(msg, msglen,
				 "not enough racks in a data center for replication %s: have %d "
				 "with free slots, need %d",
				 rps, have_racks, rp->rack + 1);
		else if (have_servers == 0 && pref_set(prefs->rack))
			snprintf(msg, msglen, "no free volume slots on rack %s", prefs->rack);
		else if (have_servers < rp->server + 1)
			snprintf(msg, msglen,
				 "not enough servers on a rack for replication %s: have %d with "
				 "free "
				 "slots, need %d",
				 rps, have_servers, rp->server + 1);
		else if (pref_set(prefs->node))
			snprintf(msg, msglen,
				 "no free volume slots on server %s for replication %s",
				 prefs->node, rps);
		else
			snprintf(msg, msglen, "no placement satisfies replication %s", rps);
		goto out;
	}

	{
		struct grp_dc *d = &g.dcs[best_dc];
		struct grp_rack *r = &d->racks[best_rack];
		size_t cap = MAX(g.ndcs, d->nracks);
		int *score = xcalloc(cap, sizeof(int));
		bool *taken = xcalloc(cap, sizeof(bool));

		out[nout++] = main_node;
		nout += pick_in_rack(nodes, r, main_node, rp->server, &rnd, out + nout);
		/* other racks of the main data center, freest first */
		for (size_t i = 0; i < d->nracks; i++) {
			score[i] = d->racks[i].best;
			taken[i] = i == best_rack;
		}
		for (int k = 0; k < rp->rack; k++) {
			size_t b = pick_best(score, taken, d->nracks, &rnd);
			taken[b] = true;
			nout += pick_in_rack(nodes, &d->racks[b], (size_t)-1, 1, &rnd, out + nout);
		}
		/* other data centers: the freest server of each */
		for (size_t i = 0; i < g.ndcs; i++) {
			score[i] = g.dcs[i].best;
			taken[i] = i == best_dc;
		}
		for (int k = 0; k < rp->dc; k++) {
			size_t b = pick_best(score, taken, g.ndcs, &rnd);
			struct grp_dc *od = &g.dcs[b];
			int *rs = xcalloc(od->nracks, sizeof(int));
			bool *rt = xcalloc(od->nracks, sizeof(bool));
			taken[b] = true;
			for (size_t i = 0; i < od->nracks; i++)
				rs[i] = od->racks[i].best;
			nout += pick_in_rack(nodes, &od->racks[pick_best(rs, rt, od->nracks, &rnd)],
					     (size_t)-1, 1, &rnd, out + nout);
			free(rs);
			free(rt);
		}
		free(score);
		free(taken);
	}
	if (nout != (size_t)replica_placement_copies(rp)) {
		snprintf(msg, msglen, "internal placement error for replication %s", rps);
		err = WFS_EINTERNAL;
		goto out;
	}
	err = WFS_OK;
out:
	groups_free(&g);
	return err;
}

/* True if set[a], outside main's rack, shares its rack (outside main's data center: its
   data center) with no earlier member: one copy per other rack, one per other center. */
static bool one_per_group(const struct place_node *nodes, const size_t *set, size_t n,
			  size_t main, size_t a)
{
	const struct place_node *m = &nodes[set[main]], *x = &nodes[set[a]];
	bool other_dc = strcmp(x->dc, m->dc) != 0;
	for (size_t b = 0; b < a; b++) {
		const struct place_node *y = &nodes[set[b]];
		if (b == main)
			continue;
		if (other_dc ? !strcmp(y->dc, x->dc)
			     : !strcmp(y->dc, x->dc) && !strcmp(y->rack, x->rack) &&
				       strcmp(x->rack, m->rack))
			return false;
	}
	return true;
}

bool placement_fits(const struct place_node *nodes, const size_t *set, size_t n,
		    const struct replica_placement *rp)
{
	if (n == 0)
		return true;
	if (n > (size_t)replica_placement_copies(rp))
		return false;
	for (size_t main = 0; main < n; main++) {
		int same_rack = 0, other_rack = 0, other_dc = 0;
		bool ok = true;
		for (size_t a = 0; a < n && ok; a++) {
			const struct place_node *m = &nodes[set[main]], *x = &nodes[set[a]];
			if (a == main)
				continue;
			if (set[a] == set[main] || !one_per_group(nodes, set, n, main, a))
				ok = false;
			else if (strcmp(x->dc, m->dc))
				other_dc++;
			else if (strcmp(x->rack, m->rack))
				other_rack++;
			else
				same_rack++;
		}
		if (ok && same_rack <= rp->server && other_rack <= rp->rack && other_dc <= rp->dc)
			return true;
	}
	return false;
}

wfs_err placement_extend(const struct place_node *nodes, size_t n, const size_t *have,
			 size_t nhave, const struct replica_placement *rp, uint64_t rnd,
			 size_t *out, char *msg, size_t msglen)
{
	size_t *set = xcalloc(nhave + 1, sizeof(size_t)), best = n;
	char rps[4];

	memcpy(set, have, nhave * sizeof(size_t));
	for (size_t k = 0, off = n ? (size_t)(rnd_next(&rnd) % n) : 0; k < n; k++) {
		size_t c = (k + off) % n;
		bool held = false;
		for (size_t i = 0; i < nhave; i++)
			held |= have[i] == c;
		if (held || nodes[c].free <= 0 || (best < n && nodes[c].free <= nodes[best].free))
			continue;
		set[nhave] = c;
		if (placement_fits(nodes, set, nhave + 1, rp))
			best = c;
	}
	free(set);
	if (best == n) {
		replica_placement_format(rp, rps);
		snprintf(msg, msglen,
			 "no server with a free slot fits replication %s beside the %zu "
			 "copies left",
			 rps, nhave);
		return WFS_ENOSPC;
	}
	*out = best;
	return WFS_OK;
}
