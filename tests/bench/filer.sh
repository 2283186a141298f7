#!/usr/bin/env bash
# Filer benchmark. For each store (SQLite, and PostgreSQL when its server binaries are
# installed: a private cluster is initdb'ed in the temp dir), starts a master, a volume
# server and a filer on loopback, then measures over HTTP:
#   - creates/s: PUT of small (inline) files to fresh paths in one directory, wrk at C conns
#   - stats/s:   GET ?metadata=true of those files
#   - renames/s: POST ?mv.from= of those files to new names in the same directory
#   - deletes/s: DELETE of the renamed files
#   - listing of a LIST_N-entry directory page by page (1,000 per page): the time of a page
#     at the start, the middle and the end (median of 5 each), and of the whole pass
#   - 1 GiB upload and download through the filer (curl), against dd to and from the
#     same disk (write with fdatasync, read with O_DIRECT and through the page cache) in
#     the same run; the download is repeated DOWNLOADS times (each figure printed)
# Rates count 2xx answers only (a phase that runs out of files shows non-2xx).
# Prints a summary and appends it to a results file. A benchmark, not a pass/fail test.
#
# Usage: tests/bench/filer.sh [path/to/weedfs]
# Environment: C=16 DURATION=5 SIZE_MB=1024 MAXMB=4 LIST_N=100000 STORES="sqlite postgres"
#              BENCH_DIR=/tmp RESULTS=tests/bench/results/filer-<date>.txt KEEP=1 (keep temp)
#              PHASES="meta transfer" (transfer alone: only the 1 GiB upload and download)
#              DOWNLOADS=1
#              SMALL_BYTES=100 (body of each create: over 2048 the files go to chunks)
#              FILER_FLAGS= (more flags for the filer, e.g. -encryptVolumeData)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
C=${C:-16}
DURATION=${DURATION:-5}
SIZE_MB=${SIZE_MB:-1024}
MAXMB=${MAXMB:-4}
LIST_N=${LIST_N:-100000}
STORES=${STORES:-sqlite postgres}
PHASES=${PHASES:-meta transfer}
DOWNLOADS=${DOWNLOADS:-1}
SMALL_BYTES=${SMALL_BYTES:-100}
FILER_FLAGS=${FILER_FLAGS:-}
export SMALL_BYTES
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}
RESULTS=${RESULTS:-$here/results/filer-$(date +%Y-%m-%d).txt}

weedfs=${1:-${WEEDFS:-}}
if [[ -z $weedfs ]]; then
	for cand in ./weedfs "$top/build/default/weedfs" "$top/weedfs"; do
		[[ -x $cand ]] && weedfs=$cand && break
	done
fi
[[ -x ${weedfs:-} ]] || { echo "weedfs binary not found (pass it as \$1)" >&2; exit 2; }
weedfs=$(cd "$(dirname "$weedfs")" && pwd)/$(basename "$weedfs")
has_phase() { [[ " $PHASES " == *" $1 "* ]]; }
if has_phase meta; then
	command -v wrk >/dev/null || { echo "wrk is needed (apt-get install wrk)" >&2; exit 2; }
fi

tmp=$(mktemp -d "$BENCH_DIR/weedfs-filer-bench.XXXXXX")
chmod 755 "$tmp"
pids=()
pg_ctl_cmd=
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
	[[ -n $pg_ctl_cmd ]] && $pg_ctl_cmd -m fast stop >/dev/null 2>&1 || true
	[[ -n ${KEEP:-} ]] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() {
	for _ in $(seq 400); do
		curl -sf "http://$1/healthz" >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	echo "no answer from $1" >&2
	return 1
}

# ---- a private PostgreSQL (as the integration tests start one) --------------------------
pg_port=
start_postgres() {
	local bindir run=()
	bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
	[[ -x $bindir/initdb ]] || bindir=$(dirname "$(command -v initdb 2>/dev/null || echo /x/x)")
	[[ -x $bindir/initdb && -x $bindir/pg_ctl ]] || return 1
	mkdir -p "$tmp/pg/sock"
	if [[ $(id -u) == 0 ]]; then
		chown -R nobody "$tmp/pg"
		run=(runuser -u nobody --)
	fi
	pg_port=$(free_port)
	"${run[@]}" "$bindir/initdb" -D "$tmp/pg/data" -U weedfs --auth=trust -E UTF8 \
		--locale=C --no-sync >"$tmp/pg/initdb.log" 2>&1
	pg_ctl_cmd="${run[*]} $bindir/pg_ctl -D $tmp/pg/data -w -t 60"
	# durability off, as in the tests: this measures the filer, not the WAL's fsync
	$pg_ctl_cmd -l "$tmp/pg/pg.log" -o "-c listen_addresses=127.0.0.1 -c port=$pg_port \
		-c unix_socket_directories=$tmp/pg/sock -c fsync=off -c synchronous_commit=off \
		-c full_page_writes=off -c max_connections=100" start >/dev/null
	"${run[@]}" "$bindir/createdb" -h 127.0.0.1 -p "$pg_port" -U weedfs weedfs_bench
	pg_version=$("$bindir/postgres" --version | awk '{print $3}')
}

cat >"$tmp/create.lua" <<'LUA'
-- tid is a global: setup() sets it in each thread's own Lua state
tid = 0
local counter, prefix, cap = 0, "/bench/t", nil
function setup(thread)
	tid = tid + 1
	thread:set("tid", tid)
end
function init(args)
	body = string.rep("x", tonumber(os.getenv("SMALL_BYTES") or "100"))
	if args[1] then prefix = args[1] end
	if args[2] then cap = tonumber(args[2]) end
end
function request()
	counter = counter + 1
	if cap and counter > cap then return wrk.format("GET", "/healthz") end
	return wrk.format("PUT", prefix .. tid .. "-" .. counter, nil, body)
end
LUA
cat >"$tmp/stat.lua" <<'LUA'
tid = 0
local counter, cycle = 0, 1000
function setup(thread)
	tid = tid + 1
	thread:set("tid", tid)
end
function init(args)
	if args[1] then cycle = tonumber(args[1]) end
end
-- from 2: wrk calls request() of its first thread once to check the script and drops
-- that request, so that thread's file 1 was never created
function request()
	counter = counter % cycle + 2
	return wrk.format("GET", "/bench/t" .. tid .. "-" .. counter .. "?metadata=true")
end
LUA
cat >"$tmp/rename.lua" <<'LUA'
tid = 0
local counter = 0
function setup(thread)
	tid = tid + 1
	thread:set("tid", tid)
end
function request()
	counter = counter + 1
	return wrk.format("POST", "/bench/r" .. tid .. "-" .. counter ..
		"?mv.from=/bench/t" .. tid .. "-" .. counter)
end
LUA
cat >"$tmp/delete.lua" <<'LUA'
tid = 0
local counter = 0
function setup(thread)
	tid = tid + 1
	thread:set("tid", tid)
end
-- the renamed files first; past the last one (404), the files the rename phase left
local prefix = "/bench/r"
function request()
	counter = counter + 1
	return wrk.format("DELETE", prefix .. tid .. "-" .. counter)
end
function response(status, headers, body)
	if status == 404 then prefix = "/bench/t" end
end
LUA

threads=$(( C < 4 ? C : 4 ))
# ok_rate FILE: "R B": 2xx answers per second of a wrk run, and its non-2xx count
ok_rate() {
	local n secs
	n=$(awk '/requests in/ {print $1}' "$1")
	secs=$(awk '/requests in/ {sub(/,$/, "", $4); print $4}' "$1")
	case $secs in *ms) secs=$(echo "${secs%ms} / 1000" | bc -l) ;; *m) secs=$(echo "${secs%m} * 60" | bc -l) ;; *s) secs=${secs%s} ;; esac
	bad=$(awk '/Non-2xx/ {print $NF}' "$1")
	bad=${bad:-0}
	printf "%.0f %s\n" "$(echo "($n - $bad) / $secs" | bc -l)" "$bad"
}

# list_pages URL: pages through a directory of 1,000-entry pages; prints the times
list_pages() {
	python3 - "$1" <<'PY'
import json, statistics, sys, time, urllib.request, urllib.parse
base = sys.argv[1]
def page(last):
    q = urllib.parse.urlencode({"limit": 1000, "lastFileName": last})
    t0 = time.perf_counter()
    with urllib.request.urlopen(base + "?" + q, timeout=120) as r:
        body = r.read()
    dt = time.perf_counter() - t0
    return dt, json.loads(body)
starts, last, times, total = [], "", [], 0
t0 = time.perf_counter()
while True:
    dt, j = page(last)
    ents = j["Entries"] or []
    starts.append(last)
    times.append(dt)
    total += len(ents)
    if not j["ShouldDisplayLoadMore"]:
        break
    last = j["LastFileName"]
whole = time.perf_counter() - t0
def med(last):
    return statistics.median(page(last)[0] for _ in range(5)) * 1000
n = len(starts)
print("%d %d %.1f %.2f %.2f %.2f" % (total, n, whole, med(starts[0]), med(starts[n // 2]),
                                     med(starts[-1] if len(starts) < 2 else starts[-2])))
PY
}

run_store() {
	local store=$1 d=$tmp/$store mp vp fp F extra=() label
	mkdir -p "$d/m" "$d/v" "$d/f"
	mp=$(free_port); vp=$(free_port); fp=$(free_port)
	"$weedfs" master -ip=127.0.0.1 -port="$mp" -mdir="$d/m" -volumeSizeLimitMB=1024 \
		-v=warn >"$d/master.log" 2>&1 &
	pids+=($!)
	wait_http "127.0.0.1:$mp"
	"$weedfs" volume -ip=127.0.0.1 -port="$vp" -dir="$d/v" -max=16 -mserver="127.0.0.1:$mp" \
		-v=warn >"$d/volume.log" 2>&1 &
	pids+=($!)
	wait_http "127.0.0.1:$vp"
	label="SQLite"
	if [[ $store == postgres ]]; then
		extra=(-store=postgres "-postgres.dsn=host=127.0.0.1 port=$pg_port user=weedfs dbname=weedfs_bench")
		label="PostgreSQL $pg_version (fsync off)"
	fi
	"$weedfs" filer -ip=127.0.0.1 -port="$fp" -master="127.0.0.1:$mp" -dir="$d/f" \
		-maxMB="$MAXMB" -v=warn "${extra[@]}" $FILER_FLAGS >"$d/filer.log" 2>&1 &
	local fpid=$!
	pids+=($fpid)
	wait_http "127.0.0.1:$fp"
	F=http://127.0.0.1:$fp
	# the volume server registers within a pulse; the first upload waits for it
	for _ in $(seq 100); do
		curl -sf -X PUT --data-binary @"$tmp/warm.bin" "$F/warm/w" >/dev/null && break
		sleep 0.1
	done
	curl -sf -X POST "$F/bench/" >/dev/null

	local creates stats renames deletes cb sb rb db half ln lpages lwhole lfirst lmid llast
	if has_phase meta; then
	wrk -t"$threads" -c"$C" -d"${DURATION}s" -s "$tmp/create.lua" "$F" >"$d/create.txt"
	read -r creates cb < <(ok_rate "$d/create.txt")
	# stat files that exist: at most 1,000 per thread, at most half what each thread made
	local cycle=$(( creates * DURATION / threads / 2 ))
	(( cycle > 1000 )) && cycle=1000
	(( cycle < 1 )) && cycle=1
	wrk -t"$threads" -c"$C" -d"${DURATION}s" -s "$tmp/stat.lua" "$F" -- "$cycle" >"$d/stat.txt"
	read -r stats sb < <(ok_rate "$d/stat.txt")
	# renames and deletes run half as long, so that they do not run out of files
	local half=$(( DURATION / 2 > 0 ? DURATION / 2 : 1 ))
	wrk -t"$threads" -c"$C" -d"${half}s" -s "$tmp/rename.lua" "$F" >"$d/rename.txt"
	read -r renames rb < <(ok_rate "$d/rename.txt")
	wrk -t"$threads" -c"$C" -d"${half}s" -s "$tmp/delete.lua" "$F" >"$d/delete.txt"
	read -r deletes db < <(ok_rate "$d/delete.txt")

	# a LIST_N-entry directory: wrk fills it (each of its threads makes its share, then
	# idles on /healthz), then one client pages through it
	local per=$(( (LIST_N + threads - 1) / threads )) secs listed
	secs=$(( LIST_N / (creates > 500 ? creates : 500) * 2 + 5 ))
	wrk -t"$threads" -c"$C" -d"${secs}s" -s "$tmp/create.lua" "$F" -- /list/l "$per" \
		>"$d/fill.txt"
	listed=$(list_pages "$F/list/")
	read -r ln lpages lwhole lfirst lmid llast <<<"$listed"
	cat >>"$tmp/summary.txt" <<EOF2
-- $label: master + volume + filer, c=$C, ${DURATION}s per phase (renames, deletes ${half}s), -maxMB=$MAXMB $FILER_FLAGS
creates/s (PUT $SMALL_BYTES B$( ((SMALL_BYTES <= 2048)) && echo ", inline")):   $creates  (non-2xx: $cb)
stats/s (GET ?metadata=true):    $stats  (non-2xx: $sb)
renames/s (POST ?mv.from=):      $renames  (non-2xx: $rb)
deletes/s (DELETE):              $deletes  (non-2xx: $db)
list ${ln} entries, ${lpages} pages of 1,000: whole pass ${lwhole}s; one page at start ${lfirst} ms, middle ${lmid} ms, end ${llast} ms
EOF2
	fi
	if ! has_phase transfer; then
		for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
		pids=()
		rm -rf "$d/v"
		return
	fi

	# 1 GiB through the filer
	local t0 t1 t2 up down same downs=""
	t0=$(date +%s.%N)
	curl -sf -T "$tmp/src.bin" "$F/big/src.bin" >/dev/null
	t1=$(date +%s.%N)
	up=$(echo "$SIZE_MB / ($t1 - $t0)" | bc -l)
	# the round trip is checked once, untimed; the timed downloads go to /dev/null
	# like dd's reads, so writing the copy does not count against the filer
	same=yes
	curl -sf "$F/big/src.bin" -o "$tmp/back.bin"
	cmp -s "$tmp/src.bin" "$tmp/back.bin" || same=NO
	rm -f "$tmp/back.bin"
	for _ in $(seq "$DOWNLOADS"); do
		t1=$(date +%s.%N)
		curl -sf "$F/big/src.bin" -o /dev/null
		t2=$(date +%s.%N)
		down=$(echo "$SIZE_MB / ($t2 - $t1)" | bc -l)
		downs="$downs $(printf %.0f "$down")"
	done
	local rss
	rss=$(awk '/VmHWM/ {print $2, $3}' "/proc/$fpid/status")

	has_phase meta || echo "-- $label: master + volume + filer, -maxMB=$MAXMB $FILER_FLAGS" >>"$tmp/summary.txt"
	cat >>"$tmp/summary.txt" <<EOF2
upload   ${SIZE_MB} MiB via filer:      $(printf %.0f "$up") MiB/s
download ${SIZE_MB} MiB via filer:     $downs MiB/s   (round trip identical: $same; filer peak RSS $rss)
EOF2
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
	pids=()
	rm -rf "$d/v"
}

head -c 1024 /dev/urandom >"$tmp/warm.bin"
head -c $((SIZE_MB << 20)) /dev/urandom >"$tmp/src.bin"
sync
: >"$tmp/summary.txt"
pg_version=
for store in $STORES; do
	if [[ $store == postgres ]] && ! start_postgres; then
		echo "-- PostgreSQL: server binaries not found, skipped" >>"$tmp/summary.txt"
		continue
	fi
	run_store "$store"
done

# the same disk, raw, in the same run
ddw=$(dd if="$tmp/src.bin" of="$tmp/dd.bin" bs=4M conv=fdatasync 2>&1 | awk '/copied/ {print $(NF-1), $NF}')
ddr=$(dd if="$tmp/dd.bin" of=/dev/null bs=4M iflag=direct 2>&1 | awk '/copied/ {print $(NF-1), $NF}')
dd if="$tmp/dd.bin" of=/dev/null bs=4M 2>/dev/null # into the page cache
ddc=$(dd if="$tmp/dd.bin" of=/dev/null bs=4M 2>&1 | awk '/copied/ {print $(NF-1), $NF}')
rm -f "$tmp/dd.bin"

summary=$(cat <<EOF2
== weedfs filer benchmark $(date -u +%Y-%m-%dT%H:%M:%SZ) ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at the end)
$(cat "$tmp/summary.txt")
-- the same disk: dd write ${SIZE_MB} MiB with fdatasync: $ddw; dd read with O_DIRECT: $ddr; dd read from the page cache: $ddc
EOF2
)
echo "$summary"
mkdir -p "$(dirname "$RESULTS")"
echo "$summary" >>"$RESULTS"
