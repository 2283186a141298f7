#!/usr/bin/env bash
# Filer benchmark: `weedfs mini` (master + volume + filer, SQLite store) on loopback, then
#   - creates/s: PUT of small (inline) files to fresh paths in one directory, wrk at C conns
#   - stats/s:   GET ?metadata=true of those files, wrk at C conns
#   - 1 GiB upload and download through the filer (curl), against dd to and from the same disk
# Prints a summary and appends it to a results file. A benchmark, not a pass/fail test.
#
# Usage: tests/bench/filer.sh [path/to/weedfs]
# Environment: C=16 DURATION=5 SIZE_MB=1024 MAXMB=4 BENCH_DIR=/tmp
#              RESULTS=tests/bench/results/filer-<date>.txt KEEP=1 (keep the temp dir)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
C=${C:-16}
DURATION=${DURATION:-5}
SIZE_MB=${SIZE_MB:-1024}
MAXMB=${MAXMB:-4}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}
RESULTS=${RESULTS:-$here/results/filer-$(date +%Y-%m-%d).txt}

weedfs=${1:-${WEEDFS:-}}
if [[ -z $weedfs ]]; then
	for cand in ./weedfs "$top/build/default/weedfs" "$top/weedfs"; do
		[[ -x $cand ]] && weedfs=$cand && break
	done
fi
[[ -x ${weedfs:-} ]] || { echo "weedfs binary not found (pass it as \$1)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is needed" >&2; exit 2; }

tmp=$(mktemp -d "$BENCH_DIR/weedfs-filer-bench.XXXXXX")
pid=
cleanup() {
	[[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	[[ -n ${KEEP:-} ]] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mp=$(free_port); vp=$(free_port); fp=$(free_port)
"$weedfs" mini -dir="$tmp/data" -master.port="$mp" -volume.port="$vp" -filer.port="$fp" \
	-filer.maxMB="$MAXMB" -v=warn >"$tmp/mini.log" 2>&1 &
pid=$!
for _ in $(seq 200); do
	curl -sf "http://127.0.0.1:$fp/healthz" >/dev/null 2>&1 && break
	sleep 0.05
done
F=http://127.0.0.1:$fp
curl -sf -X POST "$F/bench/" >/dev/null

cat >"$tmp/create.lua" <<'LUA'
local counter = 0
local tid = 0
local threads = {}
function setup(thread)
	tid = tid + 1
	thread:set("tid", tid)
end
function request()
	counter = counter + 1
	return wrk.format("PUT", "/bench/t" .. tid .. "-" .. counter, nil, string.rep("x", 100))
end
LUA
cat >"$tmp/stat.lua" <<'LUA'
local counter = 0
local tid = 0
function setup(thread)
	tid = tid + 1
	thread:set("tid", tid)
end
function request()
	counter = counter % 1000 + 1
	return wrk.format("GET", "/bench/t" .. tid .. "-" .. counter .. "?metadata=true")
end
LUA

threads=$(( C < 4 ? C : 4 ))
wrk -t"$threads" -c"$C" -d"${DURATION}s" -s "$tmp/create.lua" "$F" >"$tmp/create.txt"
creates=$(awk '/Requests\/sec/ {print $2}' "$tmp/create.txt")
non2xx=$(awk '/Non-2xx/ {print $NF}' "$tmp/create.txt")
wrk -t"$threads" -c"$C" -d"${DURATION}s" -s "$tmp/stat.lua" "$F" >"$tmp/stat.txt"
stats=$(awk '/Requests\/sec/ {print $2}' "$tmp/stat.txt")
stat_non2xx=$(awk '/Non-2xx/ {print $NF}' "$tmp/stat.txt")

# 1 GiB through the filer vs dd on the same disk
head -c $((SIZE_MB << 20)) /dev/urandom >"$tmp/src.bin"
sync
t0=$(date +%s.%N)
curl -sf -T "$tmp/src.bin" "$F/big/src.bin" >/dev/null
t1=$(date +%s.%N)
curl -sf "$F/big/src.bin" -o "$tmp/back.bin"
t2=$(date +%s.%N)
cmp -s "$tmp/src.bin" "$tmp/back.bin" && same=yes || same=NO
up=$(echo "$SIZE_MB / ($t1 - $t0)" | bc -l)
down=$(echo "$SIZE_MB / ($t2 - $t1)" | bc -l)
rm -f "$tmp/back.bin"
ddw=$(dd if="$tmp/src.bin" of="$tmp/dd.bin" bs=4M conv=fdatasync 2>&1 | awk '/copied/ {print $(NF-1), $NF}')
ddr=$(dd if="$tmp/dd.bin" of=/dev/null bs=4M 2>&1 | awk '/copied/ {print $(NF-1), $NF}')
rss=$(awk '/VmHWM/ {print $2, $3}' "/proc/$pid/status")

summary=$(cat <<EOF2
== weedfs filer benchmark $(date -u +%Y-%m-%dT%H:%M:%SZ) ($(nproc) cores, mini, SQLite, c=$C, ${DURATION}s)
creates/s (PUT 100 B, inline):   $creates  (non-2xx: ${non2xx:-0})
stats/s (GET ?metadata=true):    $stats  (non-2xx: ${stat_non2xx:-0})
upload   ${SIZE_MB} MiB via filer:      $(printf %.0f "$up") MiB/s   (dd write, fdatasync: $ddw)
download ${SIZE_MB} MiB via filer:      $(printf %.0f "$down") MiB/s   (dd read, page cache: $ddr)
round trip identical: $same; mini peak RSS: $rss; -maxMB=$MAXMB
EOF2
)
echo "$summary"
mkdir -p "$(dirname "$RESULTS")"
echo "$summary" >>"$RESULTS"
