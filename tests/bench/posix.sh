#!/usr/bin/env bash
# The tools people run, on weedfs-mount against the local disk, in one run. Starts
# `weedfs mini -mount.dir=` (master + volume server + filer + weedfs-mount on 127.0.0.1,
# free ports) in a temp dir and runs each workload on the mount and then on a local
# directory of the same disk (the temp dir, which also holds the mini's data):
#   - tar x: extracting a tar of SRC (default /usr/share/doc; the tar is made first, on
#     the local disk, and read from there by both sides)
#   - rsync -a of SRC
#   - git: clone --no-hardlinks of REPO (default this source tree's repository), then a
#     checkout of an older commit (GIT_BACK commits back) and git status
#   - sqlite: SQL_ROWS inserts, each in its own transaction (python3's sqlite3, the
#     default rollback journal: every commit fsyncs)
#   - make -j2 of a generated C project (MAKE_FILES source files and their headers)
#   - mdtest.py (next to this script): MD_PROCS processes x MD_FILES files of 4 KiB,
#     create/stat/read/unlink, each phase's seconds
# Prints seconds on each side and mount/local, and appends the table to a results file.
# Times are the commands' own (no sync after them: the mount commits files on close,
# the local disk leaves them in the page cache). A benchmark, not a pass/fail test.
#
# Usage: tests/bench/posix.sh [path/to/build-dir]   (holds weedfs and weedfs-mount;
#        default build/default, or the current directory when it has them)
# Environment: SRC=/usr/share/doc REPO=<this tree> GIT_BACK=20 SQL_ROWS=2000
#              MAKE_FILES=40 MD_PROCS=4 MD_FILES=1000 MOUNT_OPTS="" (flags for a
#              weedfs-mount that then replaces the mini's own) PHASES="tar rsync git
#              sqlite make mdtest" BENCH_DIR=/tmp KEEP=1 (keep the temp dir)
#              RESULTS=tests/bench/results/posix-<date>.txt
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
SRC=${SRC:-/usr/share/doc}
REPO=${REPO:-$top}
GIT_BACK=${GIT_BACK:-20}
SQL_ROWS=${SQL_ROWS:-2000}
MAKE_FILES=${MAKE_FILES:-40}
MD_PROCS=${MD_PROCS:-4}
MD_FILES=${MD_FILES:-1000}
MOUNT_OPTS=${MOUNT_OPTS:-}
PHASES=${PHASES:-tar rsync git sqlite make mdtest}
BENCH_DIR=${BENCH_DIR:-${TMPDIR:-/tmp}}
RESULTS=${RESULTS:-$here/results/posix-$(date +%Y-%m-%d).txt}

# shellcheck source=tests/bench/mount_bench_lib.sh
. "$here/mount_bench_lib.sh"
find_build "${1:-}"
for tool in tar rsync git make cc python3 fusermount3 mountpoint; do
	command -v "$tool" >/dev/null ||
		{ echo "$tool is needed (contrib/install-deps.sh installs it)" >&2; exit 2; }
done

load_start=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp -d "$BENCH_DIR/weedfs-posix-bench.XXXXXX")
chmod 755 "$tmp"
mnt=$tmp/mnt
loc=$tmp/local
mkdir -p "$mnt" "$loc" "$tmp/mini"
mini_pid=
mount_pid= # our own weedfs-mount, when MOUNT_OPTS replaced the mini's

cleanup() {
	local rc=$?
	set +e
	[[ -n $mount_pid ]] && kill "$mount_pid" 2>/dev/null && wait "$mount_pid" 2>/dev/null
	# the mini stops its own mount child (if still running) before its servers
	[[ -n $mini_pid ]] && kill "$mini_pid" 2>/dev/null && wait "$mini_pid" 2>/dev/null
	mountpoint -q "$mnt" 2>/dev/null && { fusermount3 -u "$mnt" || fusermount3 -uz "$mnt"; }
	if ((rc != 0)); then
		echo "posix.sh failed (status $rc); last log lines:" >&2
		tail -n 20 "$tmp"/*.log >&2 2>/dev/null
	fi
	if [[ -n ${KEEP:-} ]]; then echo "kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM



# ---- the cluster ---------------------------------------------------------------------
mport=$(free_port); vport=$(free_port); fport=$(free_port)
"$bdir/weedfs" mini -dir="$tmp/mini" -ip=127.0.0.1 -master.port="$mport" \
	-volume.port="$vport" -filer.port="$fport" -s3=false -mount.dir="$mnt" -v=warn \
	>"$tmp/mini.log" 2>&1 &
mini_pid=$!
wait_mounted
if [[ -n $MOUNT_OPTS ]]; then
	child=$(cat /proc/"$mini_pid"/task/*/children 2>/dev/null | awk '{print $1; exit}')
	[[ -n $child ]] && kill -TERM "$child"
	for _ in $(seq 1200); do mountpoint -q "$mnt" || break; sleep 0.05; done
	# shellcheck disable=SC2086
	"$bdir/weedfs-mount" -filer="127.0.0.1:$fport" -v=warn $MOUNT_OPTS "$mnt" \
		>>"$tmp/mount.log" 2>&1 &
	mount_pid=$!
	wait_mounted
fi
# the volume server registers with the master within a pulse: the first write waits
for _ in $(seq 200); do
	head -c 4096 /dev/zero >"$mnt/.warm" 2>/dev/null && break
	sleep 0.1
done
rm -f "$mnt/.warm"

out=$tmp/summary.txt
: >"$out"
# row LABEL MOUNT LOCAL: a line with mount/local
row() {
	local ratio
	ratio=$(awk -v m="$2" -v l="$3" 'BEGIN { if (m+0 > 0 && l+0 > 0) printf "%.2f", m / l; else print "-" }')
	printf "%-48s %10s %10s %8s\n" "$1" "$2" "$3" "$ratio" >>"$out"
}
printf "%-48s %10s %10s %8s\n" "workload (seconds)" "mount" "local" "m/l" >>"$out"

# timed CMD...: runs CMD (its output to the log), prints its wall seconds
# (a failure stops the run: a workload that failed fast would look fast)
timed() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >>"$tmp/work.log" 2>&1 || { echo "$* failed (see work.log)" >&2; return 1; }
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f\n", b - a}'
}
# tree_sum DIR: a digest of the paths, types and file sizes below DIR
tree_sum() { (cd "$1" && find . -printf '%y %s %p\n' | grep -v '^d' | sort | md5sum); }
# both LABEL FN: FN DIR on the mount, then locally, each in a fresh DIR; one row
both() {
	local label=$1 fn=$2 m l
	mkdir -p "$mnt/$fn" "$loc/$fn"
	m=$(timed "$fn" "$mnt/$fn")
	l=$(timed "$fn" "$loc/$fn")
	# both sides must hold the same tree (names and sizes of files)
	if [[ $(tree_sum "$mnt/$fn") != $(tree_sum "$loc/$fn") ]]; then
		echo "$label: the mount's tree differs from the local one" >&2
		return 1
	fi
	row "$label" "$m" "$l"
}

# ---- the workloads (each FN DIR) -----------------------------------------------------
w_tar() { tar -xf "$tmp/src.tar" -C "$1"; }
w_rsync() { rsync -a "$SRC/" "$1/"; }
w_git() {
	git clone -q --no-hardlinks "$REPO" "$1/repo"
	git -C "$1/repo" -c advice.detachedHead=false checkout -q "HEAD~$GIT_BACK"
	git -C "$1/repo" status --short
}
w_sqlite() {
	python3 - "$1/bench.db" "$SQL_ROWS" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, body BLOB)")
for i in range(int(sys.argv[2])):
    db.execute("BEGIN")
    db.execute("INSERT INTO t (name, body) VALUES (?, ?)", ("row %d" % i, b"x" * 200))
    db.execute("COMMIT")
db.close()
PY
}
# a C project: MAKE_FILES sources, each with its header, one program
make_project() {
	local d=$1 i
	mkdir -p "$d"
	{
		echo 'OBJS = main.o $(patsubst %.c,%.o,$(wildcard m[0-9]*.c))'
		echo 'prog: $(OBJS)'
		printf '\t$(CC) -o $@ $(OBJS)\n'
		echo '%.o: %.c $(wildcard *.h)'
		printf '\t$(CC) -O1 -c -o $@ $<\n'
	} >"$d/Makefile"
	: >"$d/all.h"
	echo 'int main(void) { int s = 0;' >"$d/main.c.in"
	for ((i = 0; i < MAKE_FILES; i++)); do
		printf 'int m%d(int x);\n' "$i" >"$d/m$i.h"
		printf '#include "m%d.h"\nint m%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * %d; return s; }\n' \
			"$i" "$i" "$i" >"$d/m$i.c"
		echo "#include \"m$i.h\"" >>"$d/all.h"
		echo "s += m$i($i);" >>"$d/main.c.in"
	done
	{ echo '#include "all.h"'; cat "$d/main.c.in"; echo 'return s & 1; }'; } >"$d/main.c"
	rm "$d/main.c.in"
}
w_make() { make -s -C "$1/p" -j2; }

if has_phase tar; then
	tar -cf "$tmp/src.tar" -C "$(dirname "$SRC")" "$(basename "$SRC")" 2>/dev/null || true
	n=$(tar -tf "$tmp/src.tar" | wc -l)
	both "tar x of $SRC ($n entries, $(du -sh "$tmp/src.tar" | cut -f1))" w_tar
	rm -f "$tmp/src.tar"
fi
has_phase rsync && both "rsync -a of $SRC" w_rsync
if has_phase git; then
	git -C "$REPO" rev-parse -q --verify "HEAD~$GIT_BACK" >/dev/null ||
		{ echo "$REPO has fewer than $GIT_BACK commits (GIT_BACK)" >&2; exit 2; }
	both "git clone + checkout HEAD~$GIT_BACK + status" w_git
fi
has_phase sqlite && both "sqlite: $SQL_ROWS inserts, a transaction each" w_sqlite
if has_phase make; then
	make_project "$mnt/w_make/p"
	make_project "$loc/w_make/p"
	both "make -j2 of $MAKE_FILES C files" w_make
fi
if has_phase mdtest; then
	declare -A md_m md_l
	mkdir -p "$mnt/md" "$loc/md"
	while read -r ph _ s; do md_m[$ph]=$s; done < <(python3 "$here/mdtest.py" "$mnt/md" \
		--procs="$MD_PROCS" --files="$MD_FILES" --size=4096)
	while read -r ph _ s; do md_l[$ph]=$s; done < <(python3 "$here/mdtest.py" "$loc/md" \
		--procs="$MD_PROCS" --files="$MD_FILES" --size=4096)
	for ph in create stat read delete; do
		row "mdtest $ph ($MD_PROCS procs x $MD_FILES, 4 KiB)" "${md_m[$ph]:-?}" "${md_l[$ph]:-?}"
	done
fi

summary=$(cat <<EOF2
== weedfs POSIX workloads $(date -u +%Y-%m-%dT%H:%M:%SZ) ($(nproc) cores, load $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end)
-- weedfs mini + weedfs-mount ${MOUNT_OPTS:-(default flags)} on 127.0.0.1 vs a local dir on the same disk ($(df --output=source,fstype "$tmp" | tail -1 | tr -s ' ')); m/l = mount/local
$(cat "$out")
EOF2
)
echo "$summary"
mkdir -p "$(dirname "$RESULTS")"
echo "$summary" >>"$RESULTS"
