#!/usr/bin/env bash
# Blob-store benchmark: weedfs master + volume server on loopback, `weedfs benchmark`
# (write then random read), the volume server's peak RSS, the memory of its needle index,
# and the raw limits of the same disk (fio, else dd), in one run. Prints a summary table
# and appends a dated section to a results file. A benchmark, not a pass/fail test.
#
# Usage: tests/bench/blob.sh [path/to/weedfs]
# Environment (all optional):
#   N=100000 C=16 SIZE=1024     the main run (weedfs benchmark -n -c -size)
#   ASSIGN_BATCH=100            also a write run with -assignBatch (0 skips it)
#   THREADS=1                   client loop threads (-threads)
#   MODE=split|mini             master + volume as two processes (default) or `weedfs mini`
#   VOLUME_MAX=8                -max of the volume server
#   INDEX_N=1000000 INDEX_SIZE=16 INDEX_BATCH=100
#                               index memory run on fresh servers (INDEX_N=0 skips it)
#   DISK=1                      raw disk figures (0 skips them); FIO_RUNTIME=5 seconds per job
#   BENCH_DIR=/tmp              where the temp dir (servers' data, fio files) goes: the disk
#                               under test
#   RESULTS=tests/bench/results/blob-<date>.txt
#   KEEP=1                      keep the temp dir (daemon logs, raw outputs) for a look
#   SECURITY=FILE               every daemon and the benchmark get -security=FILE (signing:
#                               the cost of tokens on every write and read)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

N=${N:-100000}
C=${C:-16}
SIZE=${SIZE:-1024}
ASSIGN_BATCH=${ASSIGN_BATCH:-100}
THREADS=${THREADS:-1}
MODE=${MODE:-split}
VOLUME_MAX=${VOLUME_MAX:-8}
INDEX_N=${INDEX_N:-1000000}
INDEX_SIZE=${INDEX_SIZE:-16}
INDEX_BATCH=${INDEX_BATCH:-100}
DISK=${DISK:-1}
FIO_RUNTIME=${FIO_RUNTIME:-5}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}
sec=()
[[ -n ${SECURITY:-} ]] && sec=(-security="$SECURITY")
RESULTS=${RESULTS:-$here/results/blob-$(date +%Y-%m-%d).txt}

# --- find the binary -------------------------------------------------------------------------
weedfs=${1:-${WEEDFS:-}}
if [[ -z $weedfs ]]; then
	for cand in ./weedfs "$top/build/default/weedfs" "$top/weedfs"; do
		if [[ -x $cand ]]; then
			weedfs=$cand
			break
		fi
	done
fi
if [[ -z $weedfs || ! -x $weedfs ]]; then
	echo "blob.sh: no weedfs binary (pass its path, set WEEDFS, or run in the build dir)" >&2
	exit 2
fi
weedfs=$(cd "$(dirname "$weedfs")" && pwd)/$(basename "$weedfs")

# --- temp dir, processes, cleanup ------------------------------------------------------------
tmp=$(mktemp -d "$BENCH_DIR/weedfs-bench.XXXXXX")
pids=()

forget_pid() { # drop a pid from the cleanup list (once it is reaped, it may be reused)
	local p rest=()
	for p in "${pids[@]}"; do
		[[ $p == "$1" ]] || rest+=("$p")
	done
	pids=("${rest[@]}")
}

stop_pid() { # stop one process we started, by pid, wait for it, and forget it
	local pid=$1 i
	forget_pid "$pid"
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local i
	# Newest first: the client before the servers it talks to.
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		stop_pid "${pids[i]}"
	done 2>/dev/null
	if [[ ${KEEP:-0} == 1 ]]; then
		echo "blob.sh: kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "blob.sh: $*" >&2; }

# Runs a command in the background and waits for it, so INT/TERM stop the script at once
# (a trap does not run while bash waits for a foreground child); cleanup kills it by PID.
run_bg() {
	local pid rc=0
	"$@" &
	pid=$!
	pids+=("$pid")
	wait "$pid" || rc=$?
	forget_pid "$pid"
	return "$rc"
}

free_port() { # a free loopback port
	local p
	if command -v python3 >/dev/null 2>&1; then
		python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
		return
	fi
	while :; do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

http_get() { curl -fsS --max-time 5 "http://$1" 2>/dev/null; }

wait_http() { # wait_http ADDR/PATH PID WHAT
	local i
	for i in $(seq 1 300); do
		if http_get "$1" >/dev/null; then
			return 0
		fi
		if ! kill -0 "$2" 2>/dev/null; then
			log "$3 exited; its log:"
			tail -20 "$4" >&2
			exit 1
		fi
		sleep 0.1
	done
	log "$3 not ready after 30 s"
	exit 1
}

proc_kb() { # proc_kb PID FIELD -> kB value of a /proc/PID/status field
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0
}

proc_cpu_s() { # user+system CPU seconds of PID
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"
}

# Starts a master + volume server (or mini) with data under $1; sets mport, vpid, mpid.
start_servers() {
	local dir=$1 vport
	mkdir -p "$dir"
	mport=$(free_port)
	vport=$(free_port)
	if [[ $MODE == mini ]]; then
		"$weedfs" mini -dir="$dir" -ip=127.0.0.1 -master.port="$mport" -volume.port="$vport" \
			-volume.max="$VOLUME_MAX" -filer.port="$(free_port)" -s3=false ${sec[@]+"${sec[@]}"} \
			>"$dir/mini.log" 2>&1 &
		mpid=$!
		vpid=$mpid
		pids+=("$mpid")
		wait_http "127.0.0.1:$mport/healthz" "$mpid" "weedfs mini" "$dir/mini.log"
		wait_http "127.0.0.1:$vport/healthz" "$mpid" "weedfs mini" "$dir/mini.log"
	else
		mkdir -p "$dir/m" "$dir/v"
		"$weedfs" master -ip=127.0.0.1 -port="$mport" -mdir="$dir/m" ${sec[@]+"${sec[@]}"} >"$dir/master.log" 2>&1 &
		mpid=$!
		pids+=("$mpid")
		wait_http "127.0.0.1:$mport/healthz" "$mpid" "master" "$dir/master.log"
		start_volume "$dir" "$vport"
	fi
	wait_assign "$dir"
}

start_volume() { # start_volume DIR PORT (split mode)
	"$weedfs" volume -ip=127.0.0.1 -port="$2" -dir="$1/v" -max="$VOLUME_MAX" \
		-mserver="127.0.0.1:$mport" ${sec[@]+"${sec[@]}"} >>"$1/volume.log" 2>&1 &
	vpid=$!
	vport_cur=$2
	pids+=("$vpid")
	wait_http "127.0.0.1:$2/healthz" "$vpid" "volume server" "$1/volume.log"
}

wait_assign() { # the volume server has registered once the master can assign
	local i
	for i in $(seq 1 300); do
		if http_get "127.0.0.1:$mport/dir/assign" | grep -q '"fid"'; then
			return 0
		fi
		sleep 0.1
	done
	log "master cannot assign a file id after 30 s; logs in $1"
	exit 1
}

stop_servers() {
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		stop_pid "${pids[i]}"
	done
}

# --- machine -----------------------------------------------------------------------------------
mem_total=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
cpu_model=$(lscpu 2>/dev/null | awk -F: '/Model name/ { gsub(/^ +/, "", $2); print $2; exit }')
disk=$(df -PT "$tmp" | awk 'NR == 2 { print $1 " " $2 " (" $7 ")" }')
version=$("$weedfs" version 2>/dev/null || echo "?")
# Other work on the machine skews every figure: record how busy it was before we started.
load=$(cut -d' ' -f1-3 /proc/loadavg)

# --- main run ----------------------------------------------------------------------------------
log "servers in $tmp ($MODE), weedfs benchmark -c=$C -n=$N -size=$SIZE"
start_servers "$tmp/main"
cpu0=$(proc_cpu_s "$vpid")
mcpu0=$(proc_cpu_s "$mpid")
bench_rc=0
t_start=$(date +%s.%N)
run_bg "$weedfs" benchmark ${sec[@]+"${sec[@]}"} -master="127.0.0.1:$mport" -c="$C" -n="$N" -size="$SIZE" \
	-threads="$THREADS" -seed=1 >"$tmp/bench.txt" || bench_rc=$?
cli_wall=$(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
cat "$tmp/bench.txt"
vol_hwm=$(proc_kb "$vpid" VmHWM)
vol_cpu=$(awk -v a="$cpu0" -v b="$(proc_cpu_s "$vpid")" 'BEGIN { printf "%.2f", b - a }')
mas_cpu=$(awk -v a="$mcpu0" -v b="$(proc_cpu_s "$mpid")" 'BEGIN { printf "%.2f", b - a }')
# The client reports its own CPU per phase ("Client CPU: U s user, S s system").
cli_cpu=$(awk '/^Client CPU:/ { t += $3 + $6 } END { printf "%.2f", t }' "$tmp/bench.txt")

field() { # field FILE N LABEL -> value after LABEL in the Nth phase block
	awk -v n="$2" -v l="$3" 'index($0, "------------") == 1 { k++ }
		k == n && index($0, l) { sub(".*" l " *", ""); print $1; exit }' "$1"
}
pct() { # pct FILE N PERCENT
	awk -v n="$2" -v p="$3%" 'index($0, "------------") == 1 { k++ }
		k == n && $1 == p { print $2; exit }' "$1"
}
w_rps=$(field "$tmp/bench.txt" 1 "Requests per second:")
w_fail=$(field "$tmp/bench.txt" 1 "Failed requests:")
w_p50=$(pct "$tmp/bench.txt" 1 50)
w_p99=$(pct "$tmp/bench.txt" 1 99)
r_rps=$(field "$tmp/bench.txt" 2 "Requests per second:")
r_fail=$(field "$tmp/bench.txt" 2 "Failed requests:")
r_p50=$(pct "$tmp/bench.txt" 2 50)
r_p99=$(pct "$tmp/bench.txt" 2 99)

b_rps="-" b_fail="-" b_p50="-" b_p99="-"
if ((ASSIGN_BATCH > 1)); then
	log "write run with -assignBatch=$ASSIGN_BATCH"
	run_bg "$weedfs" benchmark ${sec[@]+"${sec[@]}"} -master="127.0.0.1:$mport" -c="$C" -n="$N" -size="$SIZE" \
		-threads="$THREADS" -assignBatch="$ASSIGN_BATCH" -read=false -seed=2 \
		>"$tmp/bench-batch.txt" || bench_rc=$?
	cat "$tmp/bench-batch.txt"
	b_rps=$(field "$tmp/bench-batch.txt" 1 "Requests per second:")
	b_fail=$(field "$tmp/bench-batch.txt" 1 "Failed requests:")
	b_p50=$(pct "$tmp/bench-batch.txt" 1 50)
	b_p99=$(pct "$tmp/bench-batch.txt" 1 99)
	vol_hwm=$(proc_kb "$vpid" VmHWM)
fi
stop_servers

# --- index memory --------------------------------------------------------------------------------
idx_before="-" idx_after="-" idx_reload="-" idx_bpn="-" idx_bpn_reload="-" idx_rps="-"
if ((INDEX_N > 0)); then
	log "index memory: $INDEX_N needles of $INDEX_SIZE bytes on fresh servers"
	start_servers "$tmp/index"
	idx_before=$(proc_kb "$vpid" VmRSS)
	run_bg "$weedfs" benchmark ${sec[@]+"${sec[@]}"} -master="127.0.0.1:$mport" -c="$C" -n="$INDEX_N" -size="$INDEX_SIZE" \
		-threads="$THREADS" -assignBatch="$INDEX_BATCH" -read=false -seed=3 \
		>"$tmp/bench-index.txt" || bench_rc=$?
	idx_rps=$(field "$tmp/bench-index.txt" 1 "Requests per second:")
	idx_after=$(proc_kb "$vpid" VmRSS)
	idx_bpn=$(awk -v a="$idx_before" -v b="$idx_after" -v n="$INDEX_N" \
		'BEGIN { printf "%.1f", (b - a) * 1024 / n }')
	# A restarted server holds just the index it loaded from disk, no write buffers; the
	# baseline of an empty server is idx_before.
	if [[ $MODE == split ]]; then
		stop_pid "$vpid"
		start_volume "$tmp/index" "$(free_port)"
	else
		stop_servers
		start_servers "$tmp/index"
	fi
	wait_assign "$tmp/index"
	idx_reload=$(proc_kb "$vpid" VmRSS)
	idx_bpn_reload=$(awk -v a="$idx_before" -v b="$idx_reload" -v n="$INDEX_N" \
		'BEGIN { printf "%.1f", (b - a) * 1024 / n }')
	stop_servers
fi

# --- the same disk, raw ------------------------------------------------------------------------
disk_tool="none"
d_w1k="-" d_r1k="-" d_r4kd="-" d_seqw="-" d_seqr="-"
if [[ $DISK == 1 ]]; then
	mkdir -p "$tmp/disk"
	if command -v fio >/dev/null 2>&1; then
		disk_tool="fio $(fio --version)"
		fio_run() { # fio_run NAME ARGS...: one time-based job group, JSON in fio-NAME.json
			local name=$1
			shift
			run_bg fio --name="$name" --directory="$tmp/disk" --output-format=json \
				--runtime="$FIO_RUNTIME" --time_based --group_reporting "$@" \
				>"$tmp/fio-$name.json" 2>"$tmp/fio-$name.err" || log "fio $name failed"
		}
		fio_iops() { # fio_iops NAME read|write
			jq -r ".jobs[0].$2.iops | floor" "$tmp/fio-$1.json" 2>/dev/null || echo "-"
		}
		fio_mbs() { # fio_mbs NAME read|write -> MiB/s
			jq -r "(.jobs[0].$2.bw_bytes / 1048576 * 10 | floor) / 10" "$tmp/fio-$1.json" \
				2>/dev/null || echo "-"
		}
		# The volume server's own pattern is buffered, fsync off: compare with that, with as
		# many jobs as client connections. Each job works on its own 64 MiB file.
		log "fio: 1 KiB random writes, buffered, no fsync, $C jobs"
		fio_run w1k --rw=randwrite --bs=1k --size=64m --numjobs="$C" --ioengine=psync \
			--direct=0 --fsync=0
		d_w1k=$(fio_iops w1k write)
		# The benchmark's data set was just written and sits in the page cache: warm fio's
		# files too (and invalidate=0) so both read through the same path.
		log "fio: 1 KiB random reads, buffered, from the page cache"
		cat "$tmp"/disk/w1k.* >/dev/null 2>&1 || true
		fio_run r1k --filename_format='w1k.$jobnum.0' --rw=randread --bs=1k --size=64m \
			--numjobs="$C" --ioengine=psync --direct=0 --invalidate=0
		d_r1k=$(fio_iops r1k read)
		log "fio: 4 KiB random reads, O_DIRECT, iodepth $C (the device itself)"
		fio_run r4kd --rw=randread --bs=4k --size=256m --numjobs=1 --ioengine=libaio \
			--iodepth="$C" --direct=1
		d_r4kd=$(fio_iops r4kd read)
		log "fio: 1 MiB sequential write and read, O_DIRECT"
		fio_run seqw --rw=write --bs=1m --size=1g --numjobs=1 --ioengine=libaio --iodepth=4 \
			--direct=1
		d_seqw=$(fio_mbs seqw write)
		fio_run seqr --filename_format='seqw.0.0' --rw=read --bs=1m --size=1g --numjobs=1 \
			--ioengine=libaio --iodepth=4 --direct=1
		d_seqr=$(fio_mbs seqr read)
		rm -f "$tmp"/disk/*
	else
		disk_tool="dd"
		dd_rate() { # dd_rate ARGS... -> bytes/s from dd's summary line
			LC_ALL=C dd "$@" 2>&1 | awk '/bytes/ && /copied/ { for (i = 1; i <= NF; i++)
				if ($i == "s,") print $1 / $(i - 1) }'
		}
		log "dd: 1 KiB sequential writes and reads (no random-I/O tool without fio)"
		r=$(dd_rate if=/dev/zero of="$tmp/disk/d1k" bs=1k count=200000)
		d_w1k=$(awk -v r="$r" 'BEGIN { printf "%d (seq)", r / 1024 }')
		r=$(dd_rate if="$tmp/disk/d1k" of=/dev/null bs=1k)
		d_r1k=$(awk -v r="$r" 'BEGIN { printf "%d (seq)", r / 1024 }')
		log "dd: 1 MiB sequential write (fdatasync) and read (O_DIRECT)"
		r=$(dd_rate if=/dev/zero of="$tmp/disk/d1m" bs=1M count=1024 conv=fdatasync)
		d_seqw=$(awk -v r="$r" 'BEGIN { printf "%.1f", r / 1048576 }')
		r=$(dd_rate if="$tmp/disk/d1m" of=/dev/null bs=1M iflag=direct)
		d_seqr=$(awk -v r="$r" 'BEGIN { printf "%.1f", r / 1048576 }')
		rm -f "$tmp"/disk/*
	fi
fi

# --- summary -------------------------------------------------------------------------------------
summary() {
	echo "== weedfs blob benchmark, $(date -u '+%Y-%m-%d %H:%M:%S UTC') =="
	echo "machine: $(nproc) CPUs ($cpu_model), $mem_total RAM, kernel $(uname -r)"
	echo "load:    $load before the run (1, 5, 15 min), $(cut -d' ' -f1-3 /proc/loadavg) after"
	echo "disk:    $disk, data in $BENCH_DIR"
	echo "weedfs:  $version, $MODE, volume -max=$VOLUME_MAX; client -c=$C -threads=$THREADS"
	echo
	printf "%-46s %14s %8s %8s %8s\n" "weedfs benchmark (n=$N, size=$SIZE${SECURITY:+, signed})" "req/s" "failed" \
		"p50 ms" "p99 ms"
	printf "%-46s %14s %8s %8s %8s\n" "write (assign + PUT, assignBatch=1)" "$w_rps" "$w_fail" \
		"$w_p50" "$w_p99"
	printf "%-46s %14s %8s %8s %8s\n" "write (assignBatch=$ASSIGN_BATCH)" "$b_rps" "$b_fail" \
		"$b_p50" "$b_p99"
	printf "%-46s %14s %8s %8s %8s\n" "random read (GET)" "$r_rps" "$r_fail" "$r_p50" "$r_p99"
	printf "%-46s %14s\n" "target write / read (1 KB, c=16)" "15000 / 40000"
	echo
	if [[ $MODE == mini ]]; then
		printf "%-46s %s\n" "mini process (master + volume) peak RSS" "$vol_hwm kB"
	else
		printf "%-46s %s\n" "volume server peak RSS (VmHWM)" "$vol_hwm kB"
	fi
	if [[ $MODE == mini ]]; then
		printf "%-46s %s\n" "CPU s during main run: mini/client" "$vol_cpu / $cli_cpu"
	else
		printf "%-46s %s\n" "CPU s during main run: volume/master/client" \
			"$vol_cpu / $mas_cpu / $cli_cpu"
	fi
	printf "%-46s %s\n" "wall s of the main run (write + read)" "${cli_wall:--}"
	printf "%-46s %s\n" "index: needles x size (write req/s)" "$INDEX_N x $INDEX_SIZE ($idx_rps)"
	printf "%-46s %s\n" "index: RSS before / after writes" "$idx_before kB / $idx_after kB"
	printf "%-46s %s\n" "index: bytes per needle (after writes)" "$idx_bpn"
	printf "%-46s %s\n" "index: RSS after restart / bytes per needle" \
		"$idx_reload kB / $idx_bpn_reload"
	echo
	printf "%-46s %s\n" "raw disk ($disk_tool)" ""
	printf "%-46s %s\n" "  1 KiB random write, buffered, $C jobs IOPS" "$d_w1k"
	printf "%-46s %s\n" "  1 KiB random read, page cache, $C jobs IOPS" "$d_r1k"
	printf "%-46s %s\n" "  4 KiB random read, O_DIRECT, qd $C IOPS" "$d_r4kd"
	printf "%-46s %s\n" "  1 MiB sequential write MiB/s" "$d_seqw"
	printf "%-46s %s\n" "  1 MiB sequential read MiB/s" "$d_seqr"
}
out=$(summary)
echo
echo "$out"
mkdir -p "$(dirname "$RESULTS")"
{
	echo
	echo "$out"
	echo
	echo "-- weedfs benchmark output --"
	cat "$tmp/bench.txt"
	[[ -f $tmp/bench-batch.txt ]] && cat "$tmp/bench-batch.txt"
	[[ -f $tmp/bench-index.txt ]] && cat "$tmp/bench-index.txt"
} >>"$RESULTS"
log "appended to $RESULTS"
exit "$bench_rc"
