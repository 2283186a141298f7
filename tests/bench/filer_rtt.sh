#!/usr/bin/env bash
# The filer's metadata round trip: starts `weedfs mini` (SQLite store, no S3) on loopback
# and runs tests/bench/filer_rtt against its filer: N sequential creates, updates (set
# mode), lookups and deletes over one keep-alive connection, p50/p99 per kind. Then the
# same with the updates sent with "fsync": true (FSYNC_N of them). Prints a summary and
# appends it to a results file. A benchmark, not a pass/fail test.
#
# Usage: tests/bench/filer_rtt.sh [path/to/weedfs]   (filer_rtt is looked for beside it)
# Environment: N=5000 FSYNC_N=500 (0 skips that run) BENCH_DIR=/tmp FILER_RTT=path/to/filer_rtt
#              RESULTS=tests/bench/results/filer-rtt-<date>.txt KEEP=1 (keep temp)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
N=${N:-5000}
FSYNC_N=${FSYNC_N:-500}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}
RESULTS=${RESULTS:-$here/results/filer-rtt-$(date +%Y-%m-%d).txt}

weedfs=${1:-${WEEDFS:-}}
if [[ -z $weedfs ]]; then
	for cand in ./weedfs "$top/build/default/weedfs" "$top/build/weedfs" "$top/weedfs"; do
		[[ -x $cand ]] && weedfs=$cand && break
	done
fi
[[ -x ${weedfs:-} ]] || { echo "weedfs binary not found (pass it as \$1)" >&2; exit 2; }
weedfs=$(cd "$(dirname "$weedfs")" && pwd)/$(basename "$weedfs")
rtt=${FILER_RTT:-$(dirname "$weedfs")/tests/bench/filer_rtt}
[[ -x $rtt ]] || { echo "$rtt not built (make tests/bench/filer_rtt)" >&2; exit 2; }

tmp=$(mktemp -d "$BENCH_DIR/weedfs-rtt-bench.XXXXXX")
pid=
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	[[ -n ${KEEP:-} ]] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fp=$(free_port)
"$weedfs" mini -dir="$tmp" -ip=127.0.0.1 -master.port="$(free_port)" \
	-volume.port="$(free_port)" -filer.port="$fp" -s3=false -v=warn >"$tmp/mini.log" 2>&1 &
pid=$!
for _ in $(seq 400); do
	curl -sf "http://127.0.0.1:$fp/healthz" >/dev/null 2>&1 && break
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/mini.log" >&2; exit 1; }
	sleep 0.05
done

out=$("$rtt" "127.0.0.1:$fp" "$N" /rtt)
if (( FSYNC_N > 0 )); then
	out="$out
$(FSYNC=1 "$rtt" "127.0.0.1:$fp" "$FSYNC_N" /rtt-fsync | grep -E '^(filer_rtt|update)')"
fi
summary="== weedfs filer round trip $(date -u +%Y-%m-%dT%H:%M:%SZ) ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)); weedfs mini, SQLite store
$out"
echo "$summary"
mkdir -p "$(dirname "$RESULTS")"
echo "$summary" >>"$RESULTS"
