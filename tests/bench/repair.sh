#!/usr/bin/env bash
# The master's repair rates against the disk. A master (-repairDelaySeconds=1,
# -repairMBps=0: unthrottled) and three volume servers on loopback, one rack:
#   copy   MB MiB written into one 001 volume (1 MiB needles), one of its two servers
#          killed: the time the master's re-replication copy takes (its log line), MiB/s
#   sync   the new copy's server killed, MB MiB more written (the client sees 500s; the
#          bytes stay on the copy that took them), the server restarted: the
#          needle-by-needle sync's rate (its log line), MiB/s
# Both repairs read their source cold (drop_caches first) and fsync what they wrote.
#   local  the same volume's .dat copied on the same disk with the page cache dropped
#          (dd, 1 MiB blocks, conv=fsync), MiB/s: the physical limit of a copy
# A benchmark, not a pass/fail test. Needs root for drop_caches (else "not cold").
#
# Usage: tests/bench/repair.sh [path/to/weedfs]
# Environment: MB=512 KEEP=1 (keep the temp dir) RESULTS=tests/bench/results/repair-<date>.txt
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
weedfs=${1:-$top/build/weedfs}
[[ -d $weedfs ]] && weedfs=$weedfs/weedfs
MB=${MB:-512}
RESULTS=${RESULTS:-$here/results/repair-$(date +%Y-%m-%d).txt}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weedfs-repair-bench.XXXXXX")
declare -A pid

cleanup() {
	local p
	for p in "${pid[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pid[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ -n ${KEEP:-} ]]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || cold=" (NOT cold)"; }
cold=
wait_for() { # wait_for SECONDS CMD...: polls CMD every 0.1 s
	local n=$(($1 * 10))
	shift
	for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	echo "timed out: $*" >&2
	return 1
}

mport=$(free_port)
"$weedfs" master -ip=127.0.0.1 -port="$mport" -mdir="$tmp" -pulseSeconds=1 \
	-repairDelaySeconds=1 -repairMBps=0 -volumeSizeLimitMB=4096 >"$tmp/master.log" 2>&1 &
pid[master]=$!
declare -A vport
start_volume() {
	mkdir -p "$tmp/v$1"
	"$weedfs" volume -ip=127.0.0.1 -port="${vport[$1]}" -dir="$tmp/v$1" -max=8 \
		-mserver="127.0.0.1:$mport" -pulseSeconds=1 -rack=r1 >>"$tmp/v$1.log" 2>&1 &
	pid[v$1]=$!
}
for i in 1 2 3; do vport[$i]=$(free_port); start_volume "$i"; done
registered() { [[ $(curl -s "http://127.0.0.1:$mport/dir/status" | grep -o '"Url"' | wc -l) -ge 3 ]]; }
wait_for 30 registered

# write N 1 MiB needles of one 001 volume through its first server; prints nothing
head -c 1048576 /dev/urandom >"$tmp/needle"
assign_json=$(curl -s "http://127.0.0.1:$mport/dir/assign?replication=001&count=100000")
fid=$(sed 's/.*"fid":"\([^"]*\)".*/\1/' <<<"$assign_json")
vid=${fid%%,*}
rest=${fid#*,}
key=$((16#${rest:0:${#rest}-8}))
cookie=${rest: -8}
locations() { curl -s "http://127.0.0.1:$mport/dir/lookup?volumeId=$vid" | grep -o '"url":"[^"]*"' | cut -d'"' -f4 | sort; }
first=$(locations | head -n 1)
write_needles() { # write_needles FROM COUNT
	local i
	for ((i = $1; i < $1 + $2; i++)); do
		curl -s -o /dev/null -F "file=@$tmp/needle" "http://$first/$vid,$(printf '%x' $((key + i)))$cookie" || true
	done
}
write_needles 0 "$MB"
holders=$(locations)
victim=$(tail -n 1 <<<"$holders")
for i in 1 2 3; do [[ 127.0.0.1:${vport[$i]} == "$victim" ]] && vi=$i; done
for i in 1 2 3; do grep -q "127.0.0.1:${vport[$i]}" <<<"$holders" || si=$i; done

# ---- copy: re-replication after the victim is killed (the source read cold)
drop_caches
kill -9 "${pid[v$vi]}"
wait "${pid[v$vi]}" 2>/dev/null || true
copied() { grep -q "repair: volume $vid copied to" "$tmp/master.log"; }
wait_for 120 copied
copy_line=$(grep "repair: volume $vid copied to" "$tmp/master.log" | tail -n 1)
copy_bytes=$(sed 's/.*: \([0-9]*\) bytes in.*/\1/' <<<"$copy_line")
copy_secs=$(sed 's/.* bytes in \([0-9.]*\) s.*/\1/' <<<"$copy_line")

# ---- sync: the new copy's server killed while MB MiB more are written, then restarted
kill -9 "${pid[v$si]}"
wait "${pid[v$si]}" 2>/dev/null || true
write_needles "$MB" "$MB"
drop_caches
start_volume "$si"
synced() { grep -q "copies of volume $vid differed" "$tmp/master.log"; }
wait_for 300 synced
sync_line=$(grep "copies of volume $vid differed" "$tmp/master.log" | tail -n 1)
sync_bytes=$(sed 's/.*deletion(s), \([0-9]*\) bytes).*/\1/' <<<"$sync_line")
sync_secs=$(sed 's/.* in \([0-9.]*\) s$/\1/' <<<"$sync_line")

# ---- local: the .dat copied on the same disk, cold
dat=$(ls "$tmp/v$si"/*"$vid".dat | head -n 1)
drop_caches
t0=$(date +%s.%N)
dd if="$dat" of="$tmp/local.copy" bs=1M conv=fsync status=none
t1=$(date +%s.%N)
dat_bytes=$(stat -c %s "$dat")

rate() { awk -v b="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.0f", b / 1048576 / s; else print "?" }'; }
out=$tmp/summary.txt
{
	echo "== repair.sh $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores, MB=$MB, load $(cut -d' ' -f1-3 /proc/loadavg)"
	printf "%-48s %10s MiB/s  (%s bytes in %s s)\n" "re-replication copy (unthrottled)" \
		"$(rate "$copy_bytes" "$copy_secs")" "$copy_bytes" "$copy_secs"
	printf "%-48s %10s MiB/s  (%s bytes in %s s)\n" "sync of a copy that missed $MB MiB of writes" \
		"$(rate "$sync_bytes" "$sync_secs")" "$sync_bytes" "$sync_secs"
	printf "%-48s %10s MiB/s  (%s bytes)\n" "local: dd of the .dat on the same disk$cold" \
		"$(rate "$dat_bytes" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')")" "$dat_bytes"
} >"$out"
cat "$out"
mkdir -p "$(dirname "$RESULTS")"
cat "$out" >>"$RESULTS"
