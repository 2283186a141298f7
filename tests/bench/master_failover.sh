#!/usr/bin/env bash
# Master failover benchmark: three masters on a private PostgreSQL (-peers,
# -postgres.dsn), one volume server following them; ROUNDS times, kill -9 the
# leader and measure the time from the kill to the first successful /dir/assign
# through any master, then restart the killed master (it rejoins as a follower).
# Prints median/min/max and the time until the masters agree on the new leader,
# and appends them to a results file. A benchmark, not a pass/fail test.
#
# Usage: tests/bench/master_failover.sh [path/to/weedfs]
# Environment (all optional):
#   ROUNDS=10        kills of the leader
#   LEASE=5          -leaseSeconds of the masters (the master's default)
#   PULSE=1          -pulseSeconds of masters and volume server
#   RESULTS=tests/bench/results/master-failover-<date>.txt
# Needs the PostgreSQL server binaries (initdb, pg_ctl) as the integration tests do;
# the servers and the database are the test suite's own helpers (tests/integration).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
weedfs=${1:-${WEEDFS:-}}
if [[ -z $weedfs ]]; then
	for cand in ./weedfs "$top/build/weedfs" "$top/build/default/weedfs"; do
		if [[ -x $cand ]]; then
			weedfs=$cand
			break
		fi
	done
fi
if [[ -z $weedfs || ! -x $weedfs ]]; then
	echo "master_failover.sh: no weedfs binary (pass its path or set WEEDFS)" >&2
	exit 2
fi
export WEEDFS_BIN=$(cd "$(dirname "$weedfs")" && pwd)/$(basename "$weedfs")
export ROUNDS=${ROUNDS:-10} LEASE=${LEASE:-5} PULSE=${PULSE:-1}
export RESULTS=${RESULTS:-$here/results/master-failover-$(date +%Y-%m-%d).txt}
mkdir -p "$(dirname "$RESULTS")"

cd "$top/tests/integration"
exec python3 - <<'PY'
import os, shutil, statistics, tempfile, time
from pathlib import Path

import requests

from conftest import Daemon, free_port, wait_until
from test_filer_store_pg import PgServer, pg_bindir

rounds, lease, pulse = int(os.environ["ROUNDS"]), float(os.environ["LEASE"]), int(os.environ["PULSE"])
bindir = pg_bindir()
if not bindir:
    raise SystemExit("master_failover.sh: PostgreSQL server binaries not installed")
base = Path(tempfile.mkdtemp(prefix="weedfs-failover-"))
pg = PgServer(bindir)
daemons = []
try:
    pg.init()
    pg.start()
    pg.createdb("weedfs_bench")
    dsn = "host=127.0.0.1 port=%d user=weedfs dbname=weedfs_bench" % pg.port
    ports = [free_port() for _ in range(3)]
    peers = ",".join("127.0.0.1:%d" % p for p in ports)
    masters = []
    for p in ports:
        d = base / ("m%d" % p)
        d.mkdir()
        m = Daemon("master-%d" % p, ["master", "-ip=127.0.0.1", "-port=%d" % p, "-mdir=%s" % d,
                                     "-pulseSeconds=%d" % pulse, "-volumeSizeLimitMB=64",
                                     "-peers=" + peers, "-postgres.dsn=" + dsn,
                                     "-leaseSeconds=%g" % lease], d, "127.0.0.1:%d" % p)
        masters.append(m)
        daemons.append(m.start())
    vp = free_port()
    vd = base / "v"
    vd.mkdir()
    daemons.append(Daemon("volume", ["volume", "-ip=127.0.0.1", "-port=%d" % vp, "-dir=%s" % vd,
                                     "-max=16", "-mserver=" + peers, "-pulseSeconds=%d" % pulse],
                          vd, "127.0.0.1:%d" % vp).start())

    def status(m):
        return requests.get("http://%s/cluster/status" % m.url, timeout=1).json()

    def agreed(ms):
        sts = [status(m) for m in ms]
        lead = [m for m, s in zip(ms, sts) if s["IsLeader"]]
        if len(lead) == 1 and all(s["Leader"] == lead[0].url for s in sts):
            return lead[0]
        return None

    def assign_any(ms):
        for m in ms:
            try:
                if requests.get("http://%s/dir/assign" % m.url, timeout=1).status_code == 200:
                    return True
            except requests.RequestException:
                pass
        return False

    to_assign, to_agree = [], []
    lead = wait_until(lambda: agreed(masters), 30, "a leader")
    wait_until(lambda: assign_any(masters), 60, "a first assignment")
    for r in range(rounds):
        lead = wait_until(lambda: agreed(masters), 60, "a leader")
        wait_until(lambda: assign_any([lead]), 60, "an assignment before the kill")
        rest = [m for m in masters if m is not lead]
        t0 = time.monotonic()
        lead.kill9()
        wait_until(lambda: assign_any(rest), 120, "an assignment after the kill", )
        to_assign.append(time.monotonic() - t0)
        wait_until(lambda: agreed(rest), 60, "the new leader")
        to_agree.append(time.monotonic() - t0)
        print("round %d: killed %s, assign after %.2f s" % (r + 1, lead.url, to_assign[-1]),
              flush=True)
        lead.start()

    def fig(xs):
        return "median %.2f s  min %.2f s  max %.2f s" % (statistics.median(xs), min(xs), max(xs))
    out = ["== master failover %s (lease %g s, pulse %d s, %d kills of the leader)"
           % (time.strftime("%Y-%m-%d %H:%M:%S"), lease, pulse, rounds),
           "kill -9 -> first successful assign:  " + fig(to_assign),
           "kill -9 -> masters agree on leader:  " + fig(to_agree)]
    print("\n".join(out))
    with open(os.environ["RESULTS"], "a") as f:
        f.write("\n".join(out) + "\n")
finally:
    for d in reversed(daemons):
        d.stop()
    pg.cleanup()
    shutil.rmtree(base, ignore_errors=True)
PY
