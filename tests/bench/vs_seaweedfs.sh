#!/usr/bin/env bash
# weedfs against SeaweedFS on the same machine, in the same run, with the local disk as the
# physical limit. Starts `weedfs mini -mount.dir=` (with its S3 gateway) and SeaweedFS's
# `weed server -filer -s3` with `weed mount`, both on 127.0.0.1, both with their default
# caches, data in one temp dir (the same disk), then ROUNDS times, alternating the sides
# (weedfs, SeaweedFS, local; then again) so that the machine's drift hits all of them:
#   - fio, 1 MiB sequential write of SIZE (end_fsync), 1 job
#   - the same file read cold (the mount restarted, so its own cache is empty, and the
#     page cache dropped; locally: drop_caches), then warm (read again at once)
#   - S3: BIG_COUNT objects of 64 MiB PUT by tests/bench/s3_load (C=16 in flight), then
#     GET cold (drop_caches first); locally the same bytes as files, read by fio
#     (16 jobs, psync) after drop_caches
# Prints each round and the medians, and appends them to a results file. A benchmark,
# not a pass/fail test. Needs root (drop_caches, FUSE).
#
# Usage: WEED=/path/to/weed tests/bench/vs_seaweedfs.sh [path/to/build-dir]
#        (the build dir holds weedfs, weedfs-mount and tests/bench/s3_load)
# Environment: SIZE=1G ROUNDS=3 BIG_COUNT=8 C=16 BENCH_DIR=/tmp KEEP=1 (keep the temp dir)
#              MINI_OPTS="" (more flags for weedfs mini) PHASES="mount s3"
#              RESULTS=tests/bench/results/vs-seaweedfs-<date>.txt
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
SIZE=${SIZE:-1G}
ROUNDS=${ROUNDS:-3}
BIG_COUNT=${BIG_COUNT:-8}
C=${C:-16}
PHASES=${PHASES:-mount s3}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}
RESULTS=${RESULTS:-$here/results/vs-seaweedfs-$(date +%Y-%m-%d).txt}
WEED=${WEED:-}

# shellcheck source=tests/bench/mount_bench_lib.sh
. "$here/mount_bench_lib.sh"
find_build "${1:-}"
[[ -x $WEED ]] || { echo "WEED must name SeaweedFS's weed binary" >&2; exit 2; }
[[ -x $bdir/tests/bench/s3_load ]] ||
	{ echo "$bdir/tests/bench/s3_load not found (make tests/bench/s3_load)" >&2; exit 2; }
[[ -w /proc/sys/vm/drop_caches ]] || { echo "needs root (drop_caches)" >&2; exit 2; }
for tool in fio fusermount3 mountpoint python3 curl; do
	command -v "$tool" >/dev/null || { echo "$tool is needed" >&2; exit 2; }
done

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp -d "$BENCH_DIR/weedfs-vs-seaweedfs.XXXXXX")
chmod 755 "$tmp"
wmnt=$tmp/weedfs-mnt smnt=$tmp/seaweedfs-mnt loc=$tmp/local
mkdir -p "$wmnt" "$smnt" "$loc/fio" "$loc/big" "$tmp/mini" "$tmp/weed"
mini_pid= weed_pid= wmount_pid= smount_pid=

cleanup() {
	local rc=$? p
	set +e
	for p in $wmount_pid $smount_pid; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	for p in $mini_pid $weed_pid; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	for p in "$wmnt" "$smnt"; do
		mountpoint -q "$p" 2>/dev/null && { fusermount3 -u "$p" || fusermount3 -uz "$p"; }
	done
	if ((rc != 0)); then
		echo "vs_seaweedfs.sh failed (status $rc); last log lines:" >&2
		tail -n 20 "$tmp"/*.log >&2 2>/dev/null
	fi
	if [[ -n ${KEEP:-} ]]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# a port whose +10000 (SeaweedFS's gRPC port) is free too
weed_port() {
	python3 -c '
import socket, random
while True:
    p = random.randint(12000, 30000)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass'
}
wait_mount() {
	local d=$1 i
	for i in $(seq 600); do mountpoint -q "$d" && return 0; sleep 0.05; done
	echo "$d did not get mounted" >&2
	return 1
}
wait_unmount() {
	local d=$1 i
	for i in $(seq 1200); do mountpoint -q "$d" || return 0; sleep 0.05; done
	echo "$d still mounted" >&2
	return 1
}

# ---- the two clusters ------------------------------------------------------------------
ak=bench-ak
sk=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
bucket=bench
mport=$(free_port) vport=$(free_port) fport=$(free_port) s3port=$(free_port)
AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk S3_BUCKET=$bucket \
	"$bdir/weedfs" mini -dir="$tmp/mini" -ip=127.0.0.1 -master.port="$mport" \
	-volume.port="$vport" -filer.port="$fport" -s3.port="$s3port" -mount.dir="$wmnt" \
	-iceberg.port=0 -lance.port=0 -iam.port=0 -v=warn ${MINI_OPTS:-} >"$tmp/mini.log" 2>&1 &
mini_pid=$!

cat >"$tmp/weed-s3.json" <<EOF
{"identities": [{"name": "bench", "credentials": [{"accessKey": "$ak", "secretKey": "$sk"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
EOF
wm=$(weed_port) wv=$(weed_port) wf=$(weed_port) ws=$(weed_port)
"$WEED" server -dir="$tmp/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.port="$wm" \
	-volume.port="$wv" -filer -filer.port="$wf" -s3 -s3.port="$ws" \
	-s3.config="$tmp/weed-s3.json" -s3.port.iceberg="$(weed_port)" -s3.port.lance="$(weed_port)" \
	-master.telemetry=false >"$tmp/weed.log" 2>&1 &
weed_pid=$!

# the mounts: weedfs's is the mini's child until the first remount
wait_mount "$wmnt"
for _ in $(seq 100); do
	wmount_pid=$(cat /proc/"$mini_pid"/task/*/children 2>/dev/null | awk '{print $1; exit}')
	[[ -n $wmount_pid ]] && break
	sleep 0.05
done
wmount_own=
start_smount() {
	"$WEED" mount -filer="127.0.0.1:$wf" -dir="$smnt" >>"$tmp/weed-mount.log" 2>&1 &
	smount_pid=$!
	wait_mount "$smnt"
}
for _ in $(seq 600); do
	curl -fsS "http://127.0.0.1:$wf/" >/dev/null 2>&1 && break
	sleep 0.1
done
start_smount
# remount SIDE: the mount restarted with empty caches
remount() {
	if [[ $1 == weedfs ]]; then
		kill -TERM "$wmount_pid"
		if [[ -n $wmount_own ]]; then wait "$wmount_pid" || true; fi
		wait_unmount "$wmnt"
		"$bdir/weedfs-mount" -filer="127.0.0.1:$fport" -v=warn "$wmnt" >>"$tmp/mount.log" 2>&1 &
		wmount_pid=$! wmount_own=1
		wait_mount "$wmnt"
	else
		kill -TERM "$smount_pid"
		wait "$smount_pid" || true
		mountpoint -q "$smnt" && fusermount3 -u "$smnt"
		wait_unmount "$smnt"
		start_smount
	fi
}
# first writes wait for the volume servers to register
for d in "$wmnt" "$smnt"; do
	for _ in $(seq 300); do
		head -c 4096 /dev/zero >"$d/.warm" 2>/dev/null && break
		sleep 0.1
	done
	rm -f "$d/.warm"
	mkdir -p "$d/fio"
done
sigv4=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$ak:$sk")
for _ in $(seq 300); do
	curl -fsS "${sigv4[@]}" -X PUT "http://127.0.0.1:$ws/$bucket" >/dev/null 2>&1 && break
	sleep 0.1
done

# ---- the workloads -----------------------------------------------------------------------
fio_bw() {
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
print("%.0f" % ((j["read"]["bw"] + j["write"]["bw"]) / 1024.0))' "$1"
}
dir_of() {
	case $1 in weedfs) echo "$wmnt/fio" ;; seaweedfs) echo "$smnt/fio" ;; *) echo "$loc/fio" ;; esac
}
# seq SIDE ROUND: write, cold read, warm read of one SIZE file; "w r_cold r_warm" MiB/s
seq_side() {
	local side=$1 r=$2 dir f
	dir=$(dir_of "$side")
	f=(--directory="$dir" --name=seq --filename=seq.$r --ioengine=psync --bs=1m --size="$SIZE"
		--output-format=json --invalidate=0)
	fio "${f[@]}" --rw=write --end_fsync=1 --output="$tmp/fio-$side-w$r.json" >/dev/null
	[[ $side != local ]] && remount "$side"
	drop_caches
	fio "${f[@]}" --rw=read --output="$tmp/fio-$side-c$r.json" >/dev/null
	fio "${f[@]}" --rw=read --output="$tmp/fio-$side-h$r.json" >/dev/null
	echo "$(fio_bw "$tmp/fio-$side-w$r.json") $(fio_bw "$tmp/fio-$side-c$r.json")" \
		"$(fio_bw "$tmp/fio-$side-h$r.json")"
	rm -f "$dir/seq.$r"
}
# s3 SIDE ROUND: "put get" MiB/s of BIG_COUNT 64 MiB objects
s3_side() {
	local side=$1 r=$2 port p g
	port=$([[ $side == weedfs ]] && echo "$s3port" || echo "$ws")
	l=("$bdir/tests/bench/s3_load" -endpoint="127.0.0.1:$port" -bucket="$bucket" -ak="$ak"
		-sk="$sk" -c="$C" -n="$BIG_COUNT" -size=67108864 -prefix="big$r/")
	"${l[@]}" -mode=put >"$tmp/s3-$side-p$r.txt"
	drop_caches
	"${l[@]}" -mode=get >"$tmp/s3-$side-g$r.txt"
	"${l[@]}" -mode=delete >/dev/null
	p=$(awk '$1 == "put" { for (i = 2; i <= NF; i++) if ($i ~ /^mib_s=/) print substr($i, 7) }' "$tmp/s3-$side-p$r.txt")
	g=$(awk '$1 == "get" { for (i = 2; i <= NF; i++) if ($i ~ /^mib_s=/) print substr($i, 7) }' "$tmp/s3-$side-g$r.txt")
	echo "${p:-?} ${g:-?}"
}
s3_local() {
	local r=$1 f
	f=(--directory="$loc/big" --name=big --ioengine=psync --bs=1m --numjobs="$C"
		--nrfiles=$(((BIG_COUNT + C - 1) / C)) --filesize=64m --group_reporting
		--output-format=json --invalidate=0 --fallocate=none)
	fio "${f[@]}" --rw=write --create_on_open=1 --output="$tmp/fio-big-w$r.json" >/dev/null
	drop_caches
	fio "${f[@]}" --rw=read --output="$tmp/fio-big-r$r.json" >/dev/null
	echo "$(fio_bw "$tmp/fio-big-w$r.json") $(fio_bw "$tmp/fio-big-r$r.json")"
	rm -rf "${loc:?}/big/"*
}

out=$tmp/summary.txt
{
	echo "== weedfs vs SeaweedFS $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores," \
		"$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
	echo "SeaweedFS: $("$WEED" version 2>/dev/null | head -n 1)"
	echo "weedfs: $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo '?') MINI_OPTS=${MINI_OPTS:-}"
	echo "SIZE=$SIZE ROUNDS=$ROUNDS BIG_COUNT=$BIG_COUNT C=$C load at start: $load_start"
} >"$out"
declare -A acc
for r in $(seq "$ROUNDS"); do
	for side in weedfs seaweedfs local; do
		if has_phase mount; then
			read -r w c h <<<"$(seq_side "$side" "$r")"
			printf "round %d %-9s seq write %6s  cold read %6s  warm read %6s MiB/s\n" \
				"$r" "$side" "$w" "$c" "$h" | tee -a "$out"
			acc[$side.w]+="$w " acc[$side.c]+="$c " acc[$side.h]+="$h "
		fi
		if has_phase s3; then
			if [[ $side == local ]]; then read -r p g <<<"$(s3_local "$r")"
			else read -r p g <<<"$(s3_side "$side" "$r")"; fi
			printf "round %d %-9s 64 MiB PUT %6s  GET cold %6s MiB/s\n" "$r" "$side" "$p" "$g" |
				tee -a "$out"
			acc[$side.p]+="$p " acc[$side.g]+="$g "
		fi
	done
done

# the median of the numbers in $1 (the mean of the middle two for an even count)
median() {
	printf '%s\n' $1 | sort -n |
		awk '{v[NR] = $1} END {m = int((NR + 1) / 2); if (NR % 2) print v[m]; else printf "%.0f\n", (v[m] + v[m + 1]) / 2}'
}
# the median over the rounds of a's figure over b's, each round's pair taken together
ratio_median() {
	paste -d' ' <(printf '%s\n' $1) <(printf '%s\n' $2) |
		awk '$1 + 0 > 0 && $2 + 0 > 0 {print $1 / $2}' | sort -n |
		awk '{v[NR] = $1} END {if (!NR) {print "-"; exit} m = int((NR + 1) / 2); printf "%.2f\n", NR % 2 ? v[m] : (v[m] + v[m + 1]) / 2}'
}
{
	echo
	echo "MiB/s, the median of $ROUNDS rounds; w/S and w/local: the median of the rounds' own ratios"
	printf "%-28s %9s %9s %9s %8s %8s\n" "workload" weedfs SeaweedFS local w/S w/local
	for k in w:"mount seq write" c:"mount seq read, cold" h:"mount seq read, warm" \
		p:"S3 64 MiB PUT" g:"S3 64 MiB GET, cold"; do
		key=${k%%:*}
		[[ -n ${acc[weedfs.$key]:-} ]] || continue
		a=$(median "${acc[weedfs.$key]}") b=$(median "${acc[seaweedfs.$key]}")
		l=$(median "${acc[local.$key]}")
		printf "%-28s %9s %9s %9s %8s %8s\n" "${k#*:}" "$a" "$b" "$l" \
			"$(ratio_median "${acc[weedfs.$key]}" "${acc[seaweedfs.$key]}")" \
			"$(ratio_median "${acc[weedfs.$key]}" "${acc[local.$key]}")"
	done
	echo "local S3 rows: 16 fio jobs writing/reading the same bytes as 64 MiB files"
	echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$out"
echo
cat "$out"
mkdir -p "$(dirname "$RESULTS")"
cat "$out" >>"$RESULTS"
