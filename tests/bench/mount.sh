#!/usr/bin/env bash
# FUSE mount benchmark. Starts `weedfs mini -mount.dir=` (master + volume server + filer +
# weedfs-mount, on 127.0.0.1, free ports) in a temp dir, then runs the same workloads on
# the mount and on a local directory of the same disk (the temp dir, which also holds the
# mini's data), and prints both and mount/local:
#   - fio, 1 MiB sequential write (end_fsync) and read, 1 job and 4 jobs of SIZE each;
#     reads cold (the mount remounted, and the page cache dropped on both sides) and warm
#     (read again at once on the same side; fio's invalidate=0, which otherwise drops the
#     file's pages). The mount keeps the kernel's pages across opens while a file is
#     unchanged (keep_cache), so a warm read is served by the page cache on both sides
#   - fio, 4 KiB random reads of the 1-job file: cached (buffered, the file just read)
#     and uncached (O_DIRECT after remount + drop_caches; the mount's own chunk cache
#     fills as it runs), RUNTIME seconds each: IOPS, p50/p99 latency
#   - fio, 4 KiB random writes to a RW_SIZE file for RUNTIME seconds (end_fsync): IOPS
#   - fio, 4 KiB sequential writes each followed by fsync, RUNTIME seconds: fsync p50/p99
#   - mdtest.py (next to this script): MD_PROCS processes x MD_FILES files of MD_SIZE
#     bytes, each process in its own directory: create/s, stat/s, read/s, delete/s
#   - memory: the mount process's VmHWM over the runs above (the largest of the mount
#     processes: a remount starts a new one), then a tree of WALK_FILES files (1,000 a
#     directory) walked with find (a stat of every entry) by a freshly remounted mount:
#     its VmRSS before, its VmHWM after (the peak during the walk), its VmRSS after the
#     kernel forgets the inodes (drop_caches), and walk times against the local tree
# Cold reads need root (drop_caches); without it they are reported as not cold.
# Prints a summary and appends it to a results file. A benchmark, not a pass/fail test.
#
# Usage: tests/bench/mount.sh [path/to/build-dir]   (holds weedfs and weedfs-mount;
#        default build/default, or the current directory when it has them)
# Environment: SIZE=512M (per fio job) RUNTIME=8 RW_SIZE=128M MD_PROCS=4 MD_FILES=1000
#              MD_SIZE=1024 WALK_FILES=10000 (100000 for a real run)
#              MOUNT_OPTS="" (flags for weedfs-mount, e.g. -writebackCache=true: the
#              mini's own mount is then replaced at once by one with these flags)
#              MINI_OPTS="" (more flags for weedfs mini, e.g. -shortCircuit=false with
#              MOUNT_OPTS=-shortCircuit=false: the remounted mount then reads over HTTP too)
#              PHASES="seq rand fsync meta walk" BENCH_DIR=/tmp KEEP=1 (keep the temp dir)
#              RESULTS=tests/bench/results/mount-<date>.txt
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
SIZE=${SIZE:-512M}
RUNTIME=${RUNTIME:-8}
RW_SIZE=${RW_SIZE:-128M}
MD_PROCS=${MD_PROCS:-4}
MD_FILES=${MD_FILES:-1000}
MD_SIZE=${MD_SIZE:-1024}
WALK_FILES=${WALK_FILES:-10000}
MOUNT_OPTS=${MOUNT_OPTS:-}
PHASES=${PHASES:-seq rand fsync meta walk}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}
RESULTS=${RESULTS:-$here/results/mount-$(date +%Y-%m-%d).txt}

# shellcheck source=tests/bench/mount_bench_lib.sh
. "$here/mount_bench_lib.sh"
find_build "${1:-}"
for tool in fio fusermount3 mountpoint python3 find; do
	command -v "$tool" >/dev/null || { echo "$tool is needed" >&2; exit 2; }
done

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp -d "$BENCH_DIR/weedfs-mount-bench.XXXXXX")
chmod 755 "$tmp"
mnt=$tmp/mnt
loc=$tmp/local
mkdir -p "$mnt" "$loc" "$tmp/mini"
mini_pid=
mount_pid=   # the current mount process (the mini's child first, later our own)
own_mount=   # set when mount_pid is our child (started by remount)
sampler_pid=

cleanup() {
	local rc=$?
	set +e
	[[ -n $sampler_pid ]] && kill "$sampler_pid" 2>/dev/null && wait "$sampler_pid" 2>/dev/null
	if [[ -n $own_mount && -n $mount_pid ]]; then
		kill "$mount_pid" 2>/dev/null && wait "$mount_pid" 2>/dev/null
	fi
	# the mini stops its own mount child (if still running) before its servers
	[[ -n $mini_pid ]] && kill "$mini_pid" 2>/dev/null && wait "$mini_pid" 2>/dev/null
	mountpoint -q "$mnt" 2>/dev/null && { fusermount3 -u "$mnt" || fusermount3 -uz "$mnt"; }
	if ((rc != 0)); then
		echo "mount.sh failed (status $rc); last log lines:" >&2
		tail -n 20 "$tmp"/*.log >&2 2>/dev/null
	fi
	if [[ -n ${KEEP:-} ]]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM


can_drop=
[[ -w /proc/sys/vm/drop_caches ]] && can_drop=1
drop_caches() {
	sync
	[[ -n $can_drop ]] && echo 3 >/proc/sys/vm/drop_caches
	return 0
}


# vm_field PID FIELD: "1234" (kB) or "?"
vm_field() { awk -v f="$2:" '$1 == f {print $2; found=1} END {if (!found) print "?"}' "/proc/$1/status" 2>/dev/null || echo "?"; }

hwm_max=0
hwm_note() {
	local h
	h=$(vm_field "$mount_pid" VmHWM)
	[[ $h != "?" ]] && ((h > hwm_max)) && hwm_max=$h
	return 0
}

# remount: stops the current mount process (it commits and unmounts on SIGTERM) and
# starts a fresh weedfs-mount (our child), which starts with empty caches
remount() {
	hwm_note
	kill -TERM "$mount_pid"
	if [[ -n $own_mount ]]; then
		wait "$mount_pid" || true
	else
		# the mini's child: the mini reaps it only when it stops; wait for the unmount
		for _ in $(seq 1200); do
			mountpoint -q "$mnt" || break
			sleep 0.05
		done
	fi
	mountpoint -q "$mnt" && { echo "$mnt still mounted after SIGTERM" >&2; return 1; }
	# shellcheck disable=SC2086
	"$bdir/weedfs-mount" -filer="127.0.0.1:$fport" -v=warn $MOUNT_OPTS "$mnt" \
		>>"$tmp/mount.log" 2>&1 &
	mount_pid=$!
	own_mount=1
	wait_mounted
}

# ---- the cluster ---------------------------------------------------------------------
mport=$(free_port); vport=$(free_port); fport=$(free_port)
"$bdir/weedfs" mini -dir="$tmp/mini" -ip=127.0.0.1 -master.port="$mport" \
	-volume.port="$vport" -filer.port="$fport" -s3=false -mount.dir="$mnt" -v=warn ${MINI_OPTS:-} \
	>"$tmp/mini.log" 2>&1 &
mini_pid=$!
wait_mounted
for _ in $(seq 100); do
	mount_pid=$(cat /proc/"$mini_pid"/task/*/children 2>/dev/null | awk '{print $1; exit}')
	[[ -n $mount_pid ]] && break
	sleep 0.05
done
[[ -n $mount_pid ]] || { echo "no weedfs-mount child of the mini" >&2; exit 1; }
[[ -n $MOUNT_OPTS ]] && remount
# the volume server registers with the master within a pulse: the first write waits
for _ in $(seq 200); do
	head -c 4096 /dev/zero >"$mnt/.warm" 2>/dev/null && break
	sleep 0.1
done
rm -f "$mnt/.warm"
mkdir -p "$mnt/fio" "$loc/fio"

# ---- fio -------------------------------------------------------------------------------
# fio_run SIDE TAG fio-args...: JSON into $tmp/fio-SIDE-TAG.json
fio_run() {
	local side=$1 tag=$2 dir
	shift 2
	dir=$([[ $side == mount ]] && echo "$mnt/fio" || echo "$loc/fio")
	fio --directory="$dir" --ioengine=psync --group_reporting --output-format=json \
		--output="$tmp/fio-$side-$tag.json" "$@" >/dev/null
}
# fio_get SIDE TAG KEY: bw (MiB/s), iops, p50/p99 (clat, us), s50/s99 (fsync latency, us)
fio_get() {
	python3 - "$tmp/fio-$1-$2.json" "$3" <<'PY'
import json, sys
f, key = sys.argv[1], sys.argv[2]
j = json.load(open(f))["jobs"][0]
rw = j["read"] if j["read"]["io_bytes"] > 0 else j["write"]
def pct(d, p):
    v = d.get("percentile", {}).get("%.6f" % p)
    return "%.0f" % (v / 1000.0) if v is not None else "?"
if key == "bw":
    print("%.0f" % ((j["read"]["bw"] + j["write"]["bw"]) / 1024.0))
elif key == "iops":
    print("%.0f" % (j["read"]["iops"] + j["write"]["iops"]))
elif key in ("p50", "p99"):
    print(pct(rw["clat_ns"], float(key[1:])))
elif key in ("s50", "s99"):
    print(pct(j.get("sync", {}).get("lat_ns", {}), float(key[1:])))
PY
}

out=$tmp/summary.txt
: >"$out"
# row LABEL MOUNT LOCAL UNIT: a line with mount/local
row() {
	local ratio
	ratio=$(awk -v m="$2" -v l="$3" 'BEGIN { if (m+0 > 0 && l+0 > 0) printf "%.2f", m / l; else print "-" }')
	printf "%-44s %12s %12s %-7s %8s\n" "$1" "$2" "$3" "$4" "$ratio" >>"$out"
}
printf "%-44s %12s %12s %-7s %8s\n" "workload" "mount" "local" "unit" "m/l" >>"$out"

# both SIDE-independent args: runs on the mount then locally
both() {
	local tag=$1
	shift
	fio_run mount "$tag" "$@"
	fio_run local "$tag" "$@"
}
# cold TAG args: a cold read on each side
cold() {
	local tag=$1
	shift
	remount
	drop_caches
	fio_run mount "$tag" "$@"
	drop_caches
	fio_run local "$tag" "$@"
}
# cold_warm COLD_TAG WARM_TAG args: a cold read, then at once a warm one, on each side
# (the warm one must follow its own side's cold read: the other side's drops the pages)
cold_warm() {
	local ctag=$1 wtag=$2 side
	shift 2
	for side in mount local; do
		[[ $side == mount ]] && remount
		drop_caches
		fio_run "$side" "$ctag" "$@"
		fio_run "$side" "$wtag" --invalidate=0 "$@"
	done
}
cold_note=
[[ -n $can_drop ]] || cold_note=" (NOT cold: no drop_caches)"

if has_phase seq || has_phase rand; then
	both w1 --name=seq1 --rw=write --bs=1M --size="$SIZE" --numjobs=1 --end_fsync=1
fi
if has_phase seq; then
	row "seq write 1M, 1 job x $SIZE (end_fsync)" "$(fio_get mount w1 bw)" "$(fio_get local w1 bw)" MiB/s
	cold_warm r1c r1w --name=seq1 --rw=read --bs=1M --size="$SIZE" --numjobs=1
	row "seq read 1M, 1 job, cold$cold_note" "$(fio_get mount r1c bw)" "$(fio_get local r1c bw)" MiB/s
	row "seq read 1M, 1 job, warm" "$(fio_get mount r1w bw)" "$(fio_get local r1w bw)" MiB/s
fi
if has_phase rand; then
	# cached: the file read just before (buffered); uncached: O_DIRECT from a fresh mount
	both rr1 --name=seq1 --invalidate=0 --rw=read --bs=1M --size="$SIZE" --numjobs=1
	both rrc --name=rrc --filename=seq1.0.0 --invalidate=0 --rw=randread --bs=4k --size="$SIZE" \
		--runtime="$RUNTIME" --time_based
	cold rru --name=rru --filename=seq1.0.0 --rw=randread --bs=4k --size="$SIZE" --direct=1 \
		--runtime="$RUNTIME" --time_based
	row "rand read 4K, cached" "$(fio_get mount rrc iops)" "$(fio_get local rrc iops)" IOPS
	row "  latency p50" "$(fio_get mount rrc p50)" "$(fio_get local rrc p50)" us
	row "  latency p99" "$(fio_get mount rrc p99)" "$(fio_get local rrc p99)" us
	row "rand read 4K, uncached (O_DIRECT, cold)" "$(fio_get mount rru iops)" "$(fio_get local rru iops)" IOPS
	row "  latency p50" "$(fio_get mount rru p50)" "$(fio_get local rru p50)" us
	row "  latency p99" "$(fio_get mount rru p99)" "$(fio_get local rru p99)" us
	both rw --name=rw --rw=randwrite --bs=4k --size="$RW_SIZE" --runtime="$RUNTIME" \
		--time_based --end_fsync=1
	row "rand write 4K, $RW_SIZE file (end_fsync)" "$(fio_get mount rw iops)" "$(fio_get local rw iops)" IOPS
fi
if has_phase seq; then
	rm -f "$mnt"/fio/seq1.* "$loc"/fio/seq1.* "$mnt"/fio/rw.* "$loc"/fio/rw.*
	both w4 --name=seq4 --rw=write --bs=1M --size="$SIZE" --numjobs=4 --end_fsync=1
	row "seq write 1M, 4 jobs x $SIZE (end_fsync)" "$(fio_get mount w4 bw)" "$(fio_get local w4 bw)" MiB/s
	cold_warm r4c r4w --name=seq4 --rw=read --bs=1M --size="$SIZE" --numjobs=4
	row "seq read 1M, 4 jobs, cold$cold_note" "$(fio_get mount r4c bw)" "$(fio_get local r4c bw)" MiB/s
	row "seq read 1M, 4 jobs, warm" "$(fio_get mount r4w bw)" "$(fio_get local r4w bw)" MiB/s
fi
rm -rf "$mnt"/fio/* "$loc"/fio/*
if has_phase fsync; then
	both fs --name=fs --rw=write --bs=4k --size=64M --fsync=1 --runtime="$RUNTIME" --time_based
	row "4K write + fsync" "$(fio_get mount fs iops)" "$(fio_get local fs iops)" ops/s
	row "  fsync latency p50" "$(fio_get mount fs s50)" "$(fio_get local fs s50)" us
	row "  fsync latency p99" "$(fio_get mount fs s99)" "$(fio_get local fs s99)" us
	row "  write latency p50" "$(fio_get mount fs p50)" "$(fio_get local fs p50)" us
	rm -rf "$mnt"/fio/* "$loc"/fio/*
fi

# ---- metadata --------------------------------------------------------------------------
if has_phase meta; then
	declare -A md_m md_l
	while read -r ph rate _; do md_m[$ph]=$rate; done < <(python3 "$here/mdtest.py" "$mnt/md" \
		--procs="$MD_PROCS" --files="$MD_FILES" --size="$MD_SIZE")
	while read -r ph rate _; do md_l[$ph]=$rate; done < <(python3 "$here/mdtest.py" "$loc/md" \
		--procs="$MD_PROCS" --files="$MD_FILES" --size="$MD_SIZE")
	for ph in create stat read delete; do
		row "mdtest $ph ($MD_PROCS procs x $MD_FILES, $MD_SIZE B)" "${md_m[$ph]:-?}" "${md_l[$ph]:-?}" ops/s
	done
fi
hwm_note
run_hwm=$hwm_max

# ---- tree walk and memory --------------------------------------------------------------
walk_line=
if has_phase walk; then
	per=$(( (WALK_FILES + MD_PROCS - 1) / MD_PROCS ))
	t0=$(date +%s.%N)
	python3 "$here/mdtest.py" "$mnt/walk" --procs="$MD_PROCS" --files="$per" --size=0 \
		--per-dir=1000 --phases=create >/dev/null
	t1=$(date +%s.%N)
	python3 "$here/mdtest.py" "$loc/walk" --procs="$MD_PROCS" --files="$per" --size=0 \
		--per-dir=1000 --phases=create >/dev/null
	fill=$(awk -v a="$t0" -v b="$t1" -v n=$((per * MD_PROCS)) 'BEGIN {printf "%.0f", n / (b - a)}')
	remount
	drop_caches
	rss0=$(vm_field "$mount_pid" VmRSS)
	# walk DIR: "entries seconds" for a find that stats every entry
	walk() {
		local a b n
		a=$(date +%s.%N)
		n=$(find "$1" -printf '%s %m\n' | wc -l)
		b=$(date +%s.%N)
		awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN {printf "%d %.2f\n", n, b - a}'
	}
	read -r wn ws < <(walk "$mnt/walk")
	whwm=$(vm_field "$mount_pid" VmHWM)
	wrss=$(vm_field "$mount_pid" VmRSS)
	read -r _ ws2 < <(walk "$mnt/walk")
	drop_caches
	# FORGETs arrive asynchronously; the mount trims its heap per 4 MiB freed and at its
	# next event-stream heartbeat (every 2 s)
	sleep 3
	frss=$(vm_field "$mount_pid" VmRSS)
	read -r _ ls_ < <(walk "$loc/walk")
	read -r _ ls2 < <(walk "$loc/walk")
	row "tree walk $wn entries, cold (find + stat)" "$ws" "$ls_" s
	row "tree walk, warm (again at once)" "$ws2" "$ls2" s
	per_kb=$(awk -v h="$whwm" -v r="$rss0" -v n="$wn" 'BEGIN { if (n > 0 && h != "?" && r != "?") printf "%.0f", (h - r) * 1024 / n; else print "?" }')
	walk_line="mount memory, walk of $wn entries (fresh mount): VmRSS before ${rss0} kB, VmHWM after ${whwm} kB (~${per_kb} B/entry), VmRSS after ${wrss} kB, after drop_caches (inodes forgotten) ${frss} kB; tree made through the mount at ${fill} files/s"
fi

summary=$(cat <<EOF2
== weedfs mount benchmark $(date -u +%Y-%m-%dT%H:%M:%SZ) ($(nproc) cores, load $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end)
-- weedfs mini ${MINI_OPTS:-} + weedfs-mount ${MOUNT_OPTS:-(default flags)} on 127.0.0.1 vs a local dir on the same disk ($(df --output=source,fstype "$tmp" | tail -1 | tr -s ' ')); SIZE=$SIZE RUNTIME=${RUNTIME}s; m/l = mount/local
$(cat "$out")
mount process VmHWM over the runs above: ${run_hwm} kB (largest of the mount processes; a remount starts a new one)
${walk_line}
EOF2
)
echo "$summary"
mkdir -p "$(dirname "$RESULTS")"
echo "$summary" >>"$RESULTS"
