#!/usr/bin/env bash
# The cost of metrics on a loaded daemon: `weedfs benchmark` (assign on the master, PUT
# then GET on the volume server) against a master and a volume server on loopback, in
# three runs on fresh servers:
#   off     the volume server without -metricsPort (it records nothing)
#   on      -metricsPort set, nobody scraping (the per-request recording)
#   scrape  -metricsPort set and both daemons' /metrics scraped every second
# Prints the write and read requests/s of each. A benchmark, not a pass/fail test.
#
# Usage: tests/bench/metrics.sh [path/to/weedfs]
# Environment: N=20000 C=16 SIZE=1024 (weedfs benchmark -n -c -size), ROUNDS=1 (the three
# runs, interleaved, this many times: on a shared machine the spread between rounds is
# the noise to compare the differences with), KEEP=1 keeps the temp dir (logs).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
weedfs=${1:-$top/build/weedfs}
N=${N:-20000}
C=${C:-16}
SIZE=${SIZE:-1024}
ROUNDS=${ROUNDS:-1}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weedfs-metrics-bench.XXXXXX")
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ "${KEEP:-0}" = 1 ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_http() {
	for _ in $(seq 1 200); do
		curl -sf "http://$1" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "no answer from $1" >&2
	exit 1
}

# run NAME VOLUME_METRICS(0/1) SCRAPE(0/1): prints "NAME write_rps read_rps"
run() {
	local name=$1 vm=$2 scrape=$3 d=$tmp/$1.$4 mport vport mmport vmport vextra=() sp=
	mkdir -p "$d/m" "$d/v"
	mport=$(free_port) vport=$(free_port) mmport=$(free_port) vmport=$(free_port)
	[ "$vm" = 1 ] && vextra=(-metricsPort="$vmport")
	"$weedfs" master -ip=127.0.0.1 -port="$mport" -mdir="$d/m" -metricsPort="$mmport" \
		-v=warn >"$d/master.log" 2>&1 &
	pids+=($!)
	wait_http "127.0.0.1:$mport/healthz"
	"$weedfs" volume -ip=127.0.0.1 -port="$vport" -dir="$d/v" -max=8 \
		-mserver="127.0.0.1:$mport" -pulseSeconds=1 "${vextra[@]}" -v=warn \
		>"$d/volume.log" 2>&1 &
	pids+=($!)
	wait_http "127.0.0.1:$vport/healthz"
	for _ in $(seq 1 200); do
		curl -s "http://127.0.0.1:$mport/dir/status" | grep -q "127.0.0.1:$vport" && break
		sleep 0.05
	done
	if [ "$scrape" = 1 ]; then
		(while :; do
			curl -s "http://127.0.0.1:$mport/metrics" >/dev/null
			curl -s "http://127.0.0.1:$vmport/metrics" >/dev/null
			sleep 1
		done) &
		sp=$!
		pids+=($sp)
	fi
	"$weedfs" benchmark -master="127.0.0.1:$mport" -n="$N" -c="$C" -size="$SIZE" \
		>"$d/bench.out" 2>&1
	# this run's servers (and scraper) go before the next run starts
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	pids=()
	awk -v n="$name" '/Requests per second/ { r[++i] = $4 }
		END { printf "%-7s %12s %12s\n", n, r[1], r[2] }' "$d/bench.out"
}

printf "%-7s %12s %12s   (weedfs benchmark -n=%s -c=%s -size=%s)\n" run write_req/s \
	read_req/s "$N" "$C" "$SIZE"
for r in $(seq 1 "$ROUNDS"); do
	run off 0 0 "$r"
	run on 1 0 "$r"
	run scrape 1 1 "$r"
done
