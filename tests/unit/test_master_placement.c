/* Replica placement over constructed topologies. */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include "server/master/placement.h"
#include "tap.h"

static struct place_node N(const char *url, const char *dc, const char *rack, int free_slots) {
	struct place_node n = {url, url, dc, rack, free_slots};
	return n;
}

static wfs_err
choose(const struct place_node *nodes, size_t n, const char *rps, const struct place_prefs *prefs,
       size_t *out, char *msg)
{
	struct replica_placement rp;
	replica_placement_parse(rps, &rp);
	msg[0] = '\0';
	return placement_choose(nodes, n, &rp, prefs, 42, out, msg, 256);
}

static bool distinct(const size_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (out[i] == out[j])
				return false;
	return true;
}

int main(void)
{
	/* dc1: r1 {a,b,c}, r2 {d}; dc2: r1 {e}; dc3: r9 {f} */
	struct place_node nodes[] = {
		N("a", "dc1", "r1", 5), N("b", "dc1", "r1", 3), N("c", "dc1", "r1", 1),
		N("d", "dc1", "r2", 2), N("e", "dc2", "r1", 4), N("f", "dc3", "r9", 1),
	};
	size_t n = sizeof(nodes) / sizeof(nodes[0]);
	size_t out[PLACEMENT_MAX_COPIES];
	char msg[256];
	struct place_prefs pr = {0};

	is_int(choose(nodes, n, "000", NULL, out, msg), WFS_OK, "000 places");
	is_int(out[0], 0, "000 picks the freest server");

	is_int(choose(nodes, n, "001", NULL, out, msg), WFS_OK, "001 places");
	ok(distinct(out, 2), "001 copies on distinct servers");
	ok(!strcmp(nodes[out[0]].rack, nodes[out[1]].rack) &&
		   !strcmp(nodes[out[0]].dc, nodes[out[1]].dc),
	   "001 copies share a rack");

	is_int(choose(nodes, n, "002", NULL, out, msg), WFS_OK, "002 places");
	ok(distinct(out, 3) && !strcmp(nodes[out[2]].rack, "r1") &&
		   !strcmp(nodes[out[0]].dc, "dc1"),
	   "002 uses three servers of rack r1");

	is_int(choose(nodes, n, "010", NULL, out, msg), WFS_OK, "010 places");
	ok(!strcmp(nodes[out[0]].dc, nodes[out[1]].dc) &&
		   strcmp(nodes[out[0]].rack, nodes[out[1]].rack),
	   "010: same dc, other rack");

	is_int(choose(nodes, n, "100", NULL, out, msg), WFS_OK, "100 places");
	ok(strcmp(nodes[out[0]].dc, nodes[out[1]].dc), "100: other data center");

	is_int(choose(nodes, n, "110", NULL, out, msg), WFS_OK, "110 places");
	ok(distinct(out, 3), "110 distinct servers");
	ok(!strcmp(nodes[out[0]].dc, "dc1"), "110: main copy in the only dc with two racks");
	ok(!strcmp(nodes[out[1]].dc, "dc1") && strcmp(nodes[out[1]].rack, nodes[out[0]].rack),
	   "110: second copy on another rack of the main dc");
	ok(strcmp(nodes[out[2]].dc, "dc1"), "110: third copy in another dc");

	is_int(choose(nodes, n, "200", NULL, out, msg), WFS_OK, "200 places");
	ok(strcmp(nodes[out[0]].dc, nodes[out[1]].dc) &&
		   strcmp(nodes[out[0]].dc, nodes[out[2]].dc) &&
		   strcmp(nodes[out[1]].dc, nodes[out[2]].dc),
	   "200: three data centers");

	is_int(choose(nodes, n, "300", NULL, out, msg), WFS_ENOSPC, "300 impossible with 3 dcs");
	is_str(msg, "not enough data centers for replication 300: have 3 with free slots, need 4",
	       "300 message");
	is_int(choose(nodes, n, "020", NULL, out, msg), WFS_ENOSPC, "020 impossible");
	is_str(msg,
	       "not enough racks in a data center for replication 020: have 2 with free slots, "
	       "need 3",
	       "020 message");
	is_int(choose(nodes, n, "003", NULL, out, msg), WFS_ENOSPC, "003 impossible");
	is_str(msg,
	       "not enough servers on a rack for replication 003: have 3 with free slots, need 4",
	       "003 message");

	/* One data center only. */
	is_int(choose(nodes, 4, "100", NULL, out, msg), WFS_ENOSPC, "100 with one dc");
	is_str(msg, "not enough data centers for replication 100: have 1 with free slots, need 2",
	       "100 message");

	/* Full servers are not candidates. */
	{
		struct place_node full[] = {N("a", "dc1", "r1", 0), N("b", "dc1", "r1", 1)};
		is_int(choose(full, 2, "001", NULL, out, msg), WFS_ENOSPC,
		       "001 with one free server");
		is_int(choose(full, 2, "000", NULL, out, msg), WFS_OK, "000 uses the free one");
		is_int(out[0], 1, "the server with a free slot");
		full[1].free = 0;
		is_int(choose(full, 2, "000", NULL, out, msg), WFS_ENOSPC, "no free slots");
		is_str(msg, "no free volume slots", "no-slot message");
		is_int(choose(full, 0, "000", NULL, out, msg), WFS_ENOSPC, "empty topology");
	}

	/* Preferences. */
	pr.dc = "dc2";
	is_int(choose(nodes, n, "000", &pr, out, msg), WFS_OK, "preferred dc");
	is_str(nodes[out[0]].url, "e", "main copy in dc2");
	is_int(choose(nodes, n, "100", &pr, out, msg), WFS_OK, "100 from dc2");
	ok(!strcmp(nodes[out[0]].dc, "dc2") && strcmp(nodes[out[1]].dc, "dc2"),
	   "main in dc2, replica elsewhere");
	is_int(choose(nodes, n, "010", &pr, out, msg), WFS_ENOSPC, "010 in single-rack dc2");
	pr.dc = "nowhere";
	is_int(choose(nodes, n, "000", &pr, out, msg), WFS_ENOSPC, "unknown dc");
	is_str(msg, "no free volume slots in data center nowhere", "unknown dc message");
	pr.dc = "dc1";
	pr.rack = "r2";
	is_int(choose(nodes, n, "000", &pr, out, msg), WFS_OK, "preferred rack");
	is_str(nodes[out[0]].url, "d", "main copy on rack r2");
	is_int(choose(nodes, n, "001", &pr, out, msg), WFS_ENOSPC, "001 on a one-server rack");
	pr.rack = NULL;
	pr.node = "c";
	is_int(choose(nodes, n, "001", &pr, out, msg), WFS_OK, "preferred node");
	is_str(nodes[out[0]].url, "c", "main copy on node c");
	ok(out[1] != 2 && !strcmp(nodes[out[1]].rack, "r1"), "its replica on the same rack");

	/* Spreading: repeated picks with decreasing free slots visit every server. */
	{
		struct place_node sp[] = {N("a", "d", "r", 3), N("b", "d", "r", 3),
					  N("c", "d", "r", 3)};
		int used[3] = {0};
		for (int i = 0; i < 9; i++) {
			if (choose(sp, 3, "000", NULL, out, msg))
				break;
			used[out[0]]++;
			sp[out[0]].free--;
		}
		ok(used[0] == 3 && used[1] == 3 && used[2] == 3, "nine volumes spread 3/3/3");
	}

	/* Repair: which sets fit, and the server that completes one. */
	{
		struct replica_placement rp;
		size_t s2[2], got = 99;
		replica_placement_parse("010", &rp);
		s2[0] = 0, s2[1] = 3; /* a (dc1 r1), d (dc1 r2) */
		ok(placement_fits(nodes, s2, 2, &rp), "010: a and d fit");
		s2[1] = 1; /* a, b: the same rack */
		ok(!placement_fits(nodes, s2, 2, &rp), "010: a and b do not");
		s2[1] = 4; /* a, e: another dc */
		ok(!placement_fits(nodes, s2, 2, &rp), "010: a and e do not");
		ok(placement_fits(nodes, s2, 0, &rp), "the empty set fits");
		s2[1] = 0;
		ok(!placement_fits(nodes, s2, 2, &rp), "a server twice does not");
		replica_placement_parse("200", &rp);
		s2[0] = 4, s2[1] = 5; /* e (dc2), f (dc3): either may be the main copy */
		ok(placement_fits(nodes, s2, 2, &rp), "200: e and f fit");
		is_int(placement_extend(nodes, n, s2, 2, &rp, 7, &got, msg, 256), WFS_OK,
		       "200: a third copy for e and f");
		ok(!strcmp(nodes[got].dc, "dc1"), "the third copy goes to dc1");
		is_str(nodes[got].url, "a", "the freest server of dc1");
		replica_placement_parse("001", &rp);
		s2[0] = 4; /* e alone on dc2 r1 */
		is_int(placement_extend(nodes, n, s2, 1, &rp, 7, &got, msg, 256), WFS_ENOSPC,
		       "001: no second server on e's rack");
		is_str(msg, "no server with a free slot fits replication 001 beside the 1 copies left",
		       "the message says why");
		s2[0] = 2; /* c: a and b share its rack, a is freer */
		is_int(placement_extend(nodes, n, s2, 1, &rp, 7, &got, msg, 256), WFS_OK,
		       "001: a partner for c");
		is_str(nodes[got].url, "a", "the freest of its rack");
		nodes[0].free = 0;
		is_int(placement_extend(nodes, n, s2, 1, &rp, 7, &got, msg, 256), WFS_OK,
		       "001: a full server is skipped");
		is_str(nodes[got].url, "b", "the next one");
		nodes[0].free = 5;
	}
	return done_testing();
}
