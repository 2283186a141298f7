#!/usr/bin/env bash
# S3 gateway benchmark. Starts `weedfs mini` (master + volume server + filer + S3 gateway in
# one process, on 127.0.0.1, free ports) in a temp dir, with an admin identity and a bucket
# from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / S3_BUCKET, and drives the gateway with
# tests/bench/s3_load (libcurl, C=16 requests in flight, SigV4 with UNSIGNED-PAYLOAD):
#   - small: COUNT objects of 4 KiB: PUT, then GET (cold: drop_caches first) checking each
#     length, then HEAD: objects/s, MiB/s, latency p50/p99
#   - big:   BIG_COUNT objects of 64 MiB: PUT, then GET (cold), then DELETE: MiB/s, latency;
#     MD5's rate on all cores (tests/bench/md5_rate) and the PUT ceiling it sets with the local
#     write (a PUT's ETag is its MD5: the gateway hashes every byte on the same cores);
#     one loopback TCP hop's rate (tests/bench/tcp_hop) and the PUT and GET ceilings that
#     two hops per byte set on these cores;
#     and the mini's VmRSS and VmHWM (/proc/<pid>/status) before and after each, to show
#     whether memory stays flat while 16 x 64 MiB bodies stream through (VmHWM is the
#     whole mini process: master, volume server, filer and gateway together; as root it
#     is reset before each 64 MiB phase, so it is that phase's own peak)
#   - mixed: MIXED_SECONDS of 45% GET, 30% HEAD, 15% PUT, 10% DELETE of random keys among
#     the COUNT small objects; a GET/HEAD of a key deleted meanwhile (404) is counted apart
# and the physical limit of the same workloads, as files in a directory of the same temp dir
# (the same disk), with fio (psync, 16 jobs, no fsync anywhere, as the volume server does
# not fsync a PUT): 16 writers creating COUNT files of 4 KiB (create, one 4 KiB write,
# close; each job its own files in one directory), then reading them back after
# drop_caches (open, one 4 KiB read, close); 16 writers writing BIG_COUNT files of 64 MiB
# in 1 MiB writes, then reading them back after drop_caches. Local rates are files/s
# (= fio IOPS: one I/O per file) and MiB/s; fio's latency does not include open/close, so
# no local latency is printed. The local workloads run first, LOCAL_REPEAT times (this
# disk's small-file rate varies a lot from run to run). Cold reads need root (drop_caches);
# without it they are reported as not cold.
# Prints a summary and appends it to a results file. A benchmark, not a pass/fail test:
# failed requests are counted and printed, and make the summary say so.
#
# Usage: tests/bench/s3.sh [path/to/build-dir]   (holds weedfs and tests/bench/s3_load;
#        default build/default, or the current directory when it has them)
# Environment: COUNT=20000 BIG_COUNT=32 MIXED_SECONDS=180 C=16 LOCAL_REPEAT=3 (the local
#              figures are the median of this many runs; their range is printed too)
#              PHASES="small big mixed local" (mixed needs small's objects: without the
#              small phase it PUTs them first, untimed)
#              BENCH_DIR=/tmp KEEP=1 (keep the temp dir) RESULTS=tests/bench/results/s3-<date>.txt
#              MINI_OPTS="" (more flags for weedfs mini, e.g. -shortCircuit=false: reads over
#              loopback HTTP instead of the volume files)
#              SSE="" (AES256 or aws:kms: the bucket's default encryption, put with boto3
#              before the phases, so every object is encrypted; aws:kms needs
#              -s3.sse.kmsKeys in MINI_OPTS)
#              CACERT="" (the gateway speaks TLS: MINI_OPTS has -security=FILE with an
#              [https.s3] section; s3_load trusts this CA; the SSE setup call too)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
COUNT=${COUNT:-20000}
BIG_COUNT=${BIG_COUNT:-32}
MIXED_SECONDS=${MIXED_SECONDS:-180}
C=${C:-16}
PHASES=${PHASES:-small big mixed local}
LOCAL_REPEAT=${LOCAL_REPEAT:-3}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}
RESULTS=${RESULTS:-$here/results/s3-$(date +%Y-%m-%d).txt}
SMALL=4096
BIG=$((64 << 20))

bdir=${1:-}
if [[ -z $bdir ]]; then
	for cand in . "$top/build/default" "$top"; do
		[[ -x $cand/weedfs && -x $cand/tests/bench/s3_load ]] && bdir=$cand && break
	done
fi
[[ -n $bdir && -x $bdir/weedfs && -x $bdir/tests/bench/s3_load ]] ||
	{ echo "weedfs and tests/bench/s3_load not found (pass their build dir as \$1;" \
		"make tests/bench/s3_load builds the second)" >&2; exit 2; }
bdir=$(cd "$bdir" && pwd)
for tool in fio python3; do
	command -v "$tool" >/dev/null || { echo "$tool is needed" >&2; exit 2; }
done
has_phase() { [[ " $PHASES " == *" $1 "* ]]; }
((COUNT >= C && BIG_COUNT >= 1)) || { echo "COUNT must be >= C, BIG_COUNT >= 1" >&2; exit 2; }

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp -d "$BENCH_DIR/weedfs-s3-bench.XXXXXX")
chmod 755 "$tmp"
loc=$tmp/local
mkdir -p "$loc" "$tmp/mini"
mini_pid=

cleanup() {
	local rc=$?
	set +e
	[[ -n $mini_pid ]] && kill "$mini_pid" 2>/dev/null && wait "$mini_pid" 2>/dev/null
	if ((rc != 0)); then
		echo "s3.sh failed (status $rc); last log lines:" >&2
		tail -n 20 "$tmp"/*.log "$tmp"/*.err >&2 2>/dev/null
	fi
	if [[ -n ${KEEP:-} ]]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

can_drop=
[[ -w /proc/sys/vm/drop_caches ]] && can_drop=1
drop_caches() {
	sync
	[[ -n $can_drop ]] && echo 3 >/proc/sys/vm/drop_caches
	return 0
}
cold_note=
[[ -n $can_drop ]] || cold_note=" NOT cold (no drop_caches)"

# vm_field PID FIELD: "1234" (kB) or "?"
vm_field() { awk -v f="$2:" '$1 == f {print $2; found=1} END {if (!found) print "?"}' "/proc/$1/status" 2>/dev/null || echo "?"; }
mem() { echo "VmRSS $(vm_field "$mini_pid" VmRSS) kB, VmHWM $(vm_field "$mini_pid" VmHWM) kB"; }
# peak_reset: restarts VmHWM at the current RSS (clear_refs 5, Linux >= 4.0, as root), so
# that the next VmHWM is the peak of the phase in between; a no-op where not allowed
peak_reset() { echo 5 >"/proc/$mini_pid/clear_refs" 2>/dev/null || peak_note=" (VmHWM not reset between phases: cumulative)"; }
peak_note=

# ---- the gateway -------------------------------------------------------------------------
ak=bench-ak
sk=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
bucket=bench
mport=$(free_port); vport=$(free_port); fport=$(free_port); sport=$(free_port)
AWS_ACCESS_KEY_ID=$ak AWS_SECRET_ACCESS_KEY=$sk S3_BUCKET=$bucket \
	"$bdir/weedfs" mini -dir="$tmp/mini" -ip=127.0.0.1 -master.port="$mport" \
	-volume.port="$vport" -filer.port="$fport" -s3.port="$sport" -v=warn ${MINI_OPTS:-} \
	>"$tmp/mini.log" 2>&1 &
mini_pid=$!

failed=()
# the mini's user + system CPU time so far, in clock ticks (/proc/<pid>/stat fields 14, 15;
# the command name before them is in parentheses and has no spaces here)
mini_cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$mini_pid/stat"; }
# load TAG flags...: runs s3_load into $tmp/load-TAG.txt (its first failure in load-TAG.err);
# a run with failed requests is noted, not fatal
load() {
	local tag=$1 rc=0 cpu0
	shift
	cpu0=$(mini_cpu_ticks)
	"$bdir/tests/bench/s3_load" -endpoint="127.0.0.1:$sport" -bucket="$bucket" -ak="$ak" \
		-sk="$sk" -c="$C" ${CACERT:+-cacert="$CACERT"} "$@" >"$tmp/load-$tag.txt" 2>"$tmp/load-$tag.err" || rc=$?
	echo $(($(mini_cpu_ticks) - cpu0)) >"$tmp/cpu-$tag.txt"
	((rc == 1)) && failed+=("$tag: $(sed -n 's/.*errors by status: //p' "$tmp/load-$tag.txt")
$(head -n 3 "$tmp/load-$tag.err" | sed 's/^/    /')")
	((rc <= 1)) || { cat "$tmp/load-$tag.err" >&2; return 1; }
}
# fld TAG NAME KEY: the value of KEY= on s3_load's line NAME ("?" if absent)
fld() { awk -v n="$2" -v k="$3" '$1 == n { for (i = 2; i <= NF; i++) { split($i, a, "="); if (a[1] == k) { print a[2]; f = 1 } } } END { if (!f) print "?" }' "$tmp/load-$1.txt" 2>/dev/null || echo "?"; }

# ready: the gateway answers a signed PUT (the volume server registers within a pulse)
for i in $(seq 300); do
	kill -0 "$mini_pid" 2>/dev/null || { echo "weedfs mini exited" >&2; exit 1; }
	"$bdir/tests/bench/s3_load" -endpoint="127.0.0.1:$sport" -bucket="$bucket" -ak="$ak" \
		-sk="$sk" ${CACERT:+-cacert="$CACERT"} -c=1 -n=1 -prefix=warm/ -mode=put -timeout=5 >/dev/null 2>&1 && break
	((i == 300)) && { echo "the gateway did not take a PUT" >&2; exit 1; }
	sleep 0.1
done
if [[ -n ${SSE:-} ]]; then
	python3 - "$sport" "$ak" "$sk" "$bucket" "$SSE" <<'EOF2' ||
import sys, boto3
port, ak, sk, bucket, alg = sys.argv[1:]
import os
ca = os.environ.get("CACERT")
boto3.client("s3", endpoint_url=("https" if ca else "http") + "://127.0.0.1:" + port,
             aws_access_key_id=ak, verify=ca or None,
             aws_secret_access_key=sk, region_name="us-east-1").put_bucket_encryption(
    Bucket=bucket, ServerSideEncryptionConfiguration={
        "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": alg}}]})
EOF2
		{ echo "PutBucketEncryption ($SSE) failed" >&2; exit 1; }
fi
mem_start=$(mem)

# ---- the summary ---------------------------------------------------------------------------
out=$tmp/summary.txt
: >"$out"
# row LABEL GATEWAY LOCAL UNIT: a line with gateway/local
row() {
	local ratio
	ratio=$(awk -v g="$2" -v l="$3" 'BEGIN { if (g+0 > 0 && l+0 > 0) printf "%.2f", g / l; else print "-" }')
	printf "%-46s %17s %12s %-7s %8s\n" "$1" "$2" "$3" "$4" "$ratio" >>"$out"
}
printf "%-46s %17s %12s %-7s %8s\n" "workload" "gateway" "local" "unit" "g/l" >>"$out"
# lat TAG NAME: "p50 / p99" in ms
lat() { echo "$(fld "$1" "$2" p50_ms) / $(fld "$1" "$2" p99_ms)"; }

# ---- fio on the local directory ---------------------------------------------------------------
# fio_run TAG args: JSON into $tmp/fio-TAG.json; fio_get TAG iops|bw (MiB/s)
fio_run() {
	local tag=$1
	shift
	fio --directory="$loc" --ioengine=psync --group_reporting --output-format=json \
		--output="$tmp/fio-$tag.json" --invalidate=0 --fallocate=none "$@" >/dev/null
}
fio_get() {
	python3 - "$tmp/fio-$1.json" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
rw = j["read"] if j["read"]["io_bytes"] > 0 else j["write"]
print("%.0f" % (rw["iops"] if sys.argv[2] == "iops" else rw["bw"] / 1024.0))
PY
}
# median and range of numbers (one per argument)
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
range() { printf '%s\n' "$@" | sort -n | awk 'NR == 1 {a = $1} {b = $1} END {print a "-" b}'; }
# local_pair NAME KEY fio-args: LOCAL_REPEAT times, a write (creating the files), then a read
# after drop_caches, then the files removed; sets w_all and r_all to the figures (KEY)
local_pair() {
	local name=$1 key=$2 i
	shift 2
	w_all=() r_all=()
	for i in $(seq "$LOCAL_REPEAT"); do
		fio_run "$name-w$i" --name="$name" "$@" --rw=write --create_on_open=1
		drop_caches
		fio_run "$name-r$i" --name="$name" "$@" --rw=read
		w_all+=("$(fio_get "$name-w$i" "$key")") r_all+=("$(fio_get "$name-r$i" "$key")")
		rm -rf "${loc:?}"/*
	done
}
l_sw=- l_sr=- l_bw=- l_br=- local_line=
if has_phase local; then
	local_pair small iops --nrfiles=$(((COUNT + C - 1) / C)) --filesize=4k --bs=4k \
		--numjobs="$C" --openfiles=1 --file_service_type=sequential
	l_sw=$(median "${w_all[@]}") l_sr=$(median "${r_all[@]}")
	local_line="local: median of $LOCAL_REPEAT runs; ranges: 4 KiB create $(range "${w_all[@]}") files/s, read $(range "${r_all[@]}") files/s"
	local_pair big bw --nrfiles=$(((BIG_COUNT + C - 1) / C)) --filesize=64m --bs=1m \
		--numjobs="$C" --openfiles=1 --file_service_type=sequential
	l_bw=$(median "${w_all[@]}") l_br=$(median "${r_all[@]}")
	local_line+="; 64 MiB write $(range "${w_all[@]}") MiB/s, read $(range "${r_all[@]}") MiB/s"
fi

# ---- the gateway's workloads ----------------------------------------------------------------------
mem_small=
if has_phase small; then
	load sput -mode=put -n="$COUNT" -size=$SMALL
	drop_caches
	load sget -mode=get -n="$COUNT" -size=$SMALL
	load shead -mode=head -n="$COUNT" -size=$SMALL
	row "4 KiB PUT, c=$C, $COUNT objects" "$(fld sput put ops_s)" "$l_sw" obj/s
	row "  latency p50 / p99" "$(lat sput put)" - ms
	row "4 KiB GET, cold$cold_note" "$(fld sget get ops_s)" "$l_sr" obj/s
	row "  latency p50 / p99" "$(lat sget get)" - ms
	row "4 KiB HEAD" "$(fld shead head ops_s)" - obj/s
	row "  latency p50 / p99" "$(lat shead head)" - ms
	mem_small=$(mem)
fi
mem_big=
if has_phase big; then
	mem_b0=$(mem)
	peak_reset
	load bput -mode=put -n="$BIG_COUNT" -size=$BIG -prefix=big/
	mem_b1=$(mem)
	drop_caches
	peak_reset
	load bget -mode=get -n="$BIG_COUNT" -size=$BIG -prefix=big/
	mem_b2=$(mem)
	peak_reset
	load bdel -mode=delete -n="$BIG_COUNT" -size=$BIG -prefix=big/
	row "64 MiB PUT, c=$C, $BIG_COUNT objects" "$(fld bput put mib_s)" "$l_bw" MiB/s
	row "  latency p50 / p99" "$(lat bput put)" - ms
	row "64 MiB GET, cold$cold_note" "$(fld bget get mib_s)" "$l_br" MiB/s
	row "  latency p50 / p99" "$(lat bget get)" - ms
	row "64 MiB DELETE" "$(fld bdel delete ops_s)" - obj/s
	# A PUT's ETag is the MD5 of its body, so the gateway hashes every byte on the same
	# cores that also do the local workload's own work (the page-cache write): the PUT
	# rate can at best be 1 / (1/md5 + 1/local), with no network copy at all. The
	# gateway's MD5 hashes C concurrent uploads together in AVX2 lanes (lib/md5.c);
	# tests/bench/md5_rate measures that and OpenSSL's one-stream-at-a-time rate.
	md5_rate() { awk -v w="$1" '$0 ~ w { for (i = 1; i <= NF; i++) if ($i ~ /^mib_s=/) print substr($i, 7) }' "$tmp/md5.txt"; }
	"$bdir/tests/bench/md5_rate" "$C" 2 >"$tmp/md5.txt" 2>&1 || true
	md5_mib=$(md5_rate "lanes|no AVX2")
	row "  MD5, $C streams, all $(nproc) cores" "${md5_mib:-?}" - MiB/s
	row "    (OpenSSL, each stream alone)" "$(md5_rate openssl)" - MiB/s
	row "  PUT ceiling: MD5 + the local write" "$(awk -v m="$md5_mib" -v l="$l_bw" \
		'BEGIN { if (m + 0 > 0 && l + 0 > 0) printf "%.0f", 1 / (1 / m + 1 / l); else print "?" }')" \
		"$l_bw" MiB/s
	# Every byte of a large PUT or GET also crosses two loopback TCP hops on these cores
	# (client - gateway - volume server), each a copy into the kernel and one out:
	# tests/bench/tcp_hop measures one hop with nothing else done to the bytes. With MD5 and
	# the page-cache write, they bound the PUT; alone (the volume server's read taken as
	# free) they bound the GET.
	hop_mib=$("$bdir/tests/bench/tcp_hop" "$C" 2 2>/dev/null | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^mib_s=/) print substr($i, 7) }') || true
	row "  one loopback TCP hop, $C streams" "${hop_mib:-?}" - MiB/s
	row "  PUT ceiling: 2 hops + MD5 + the local write" "$(awk -v h="$hop_mib" -v m="$md5_mib" -v l="$l_bw" \
		'BEGIN { if (h + 0 > 0 && m + 0 > 0 && l + 0 > 0) printf "%.0f", 1 / (2 / h + 1 / m + 1 / l); else print "?" }')" \
		"$l_bw" MiB/s
	row "  GET ceiling: 2 hops, the read free" "$(awk -v h="$hop_mib" 'BEGIN { if (h + 0 > 0) printf "%.0f", h / 2; else print "?" }')" \
		"$l_br" MiB/s
	mem_big="mini memory around the 64 MiB phases (VmHWM: the peak during that phase$peak_note): before: $mem_b0; after the PUTs: $mem_b1; after the GETs: $mem_b2; after the DELETEs: $(mem)"
fi
mixed_line=
if has_phase mixed; then
	has_phase small || load sput -mode=put -n="$COUNT" -size=$SMALL
	load mixed -mode=mixed -n="$COUNT" -size=$SMALL -duration="$MIXED_SECONDS"
	# ops/s is over the whole run: MIXED_SECONDS, then the requests still in flight
	row "mixed 45/30/15/10 GET/HEAD/PUT/DELETE, $(fld mixed mixed secs)s" "$(fld mixed mixed ops_s)" - ops/s
	row "  latency p50 / p99" "$(lat mixed mixed)" - ms
	for k in get head put delete; do
		row "  $k" "$(fld mixed mixed.$k ops_s)" - ops/s
	done
	mixed_line="mixed: $(fld mixed mixed not_found) GET/HEAD answered 404 (key deleted meanwhile: not errors), max latency $(fld mixed mixed max_ms) ms, $(fld mixed mixed connects) connections opened for $(fld mixed mixed ops) requests"
fi
cpu_line="s3_load CPU time (s):"
for t in sput sget shead bput bget bdel mixed; do
	[[ -f $tmp/load-$t.txt ]] && cpu_line+=" $t $(awk '{for (i = 2; i <= NF; i++) if ($i ~ /^cpu_s=/) print substr($i, 7)}' "$tmp/load-$t.txt") / $(awk '{for (i = 2; i <= NF; i++) if ($i ~ /^secs=/) {print substr($i, 6); exit}}' "$tmp/load-$t.txt")s;"
done
# the mini's CPU per request: steadier than rates on a shared machine for comparing builds
cpu_us() { awk -v t="$(cat "$tmp/cpu-$1.txt")" -v hz="$(getconf CLK_TCK)" -v n="$(awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^ops=/) { print substr($i, 5); exit } }' "$tmp/load-$1.txt")" 'BEGIN { if (n + 0 > 0) printf "%.0f", t / hz * 1e6 / n; else print "?" }'; }
cpu_line+=$'\n'"weedfs mini CPU per request (us):"
for t in sput sget shead bput bget bdel mixed; do
	[[ -f $tmp/cpu-$t.txt ]] && cpu_line+=" $t $(cpu_us "$t");"
done
# what the mini's CPU alone allows on these cores (the load generator shares them here)
cpu_line+=$'\n'"requests/s the mini's CPU allows on $(nproc) cores (cores / CPU per request):"
for t in sput sget shead mixed; do
	[[ -f $tmp/cpu-$t.txt ]] && cpu_line+=" $t $(awk -v u="$(cpu_us "$t")" -v c="$(nproc)" 'BEGIN { if (u + 0 > 0) printf "%.0f", c * 1e6 / u; else print "?" }');"
done
fail_line="failed requests: none"
((${#failed[@]} == 0)) || fail_line="FAILED requests (and the first failures): $(printf '%s\n' "${failed[@]}")"

summary=$(cat <<EOF2
== weedfs S3 gateway benchmark $(date -u +%Y-%m-%dT%H:%M:%SZ) ($(nproc) cores, load $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end)
-- weedfs mini ${MINI_OPTS:-}${SSE:+ (bucket default encryption $SSE)} (master + volume + filer + S3 gateway, one process) on 127.0.0.1, driven by tests/bench/s3_load (libcurl, c=$C, SigV4 UNSIGNED-PAYLOAD), vs fio files in a local dir on the same disk ($(df --output=source,fstype "$tmp" | tail -1 | tr -s ' ')), no fsync on either side; g/l = gateway/local
$(cat "$out")
$mixed_line
$fail_line
$local_line
mini memory: at start: $mem_start; after the 4 KiB phases: ${mem_small:--}
$mem_big
$cpu_line
EOF2
)
echo "$summary"
mkdir -p "$(dirname "$RESULTS")"
echo "$summary" >>"$RESULTS"
