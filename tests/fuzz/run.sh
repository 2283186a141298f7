#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build for a short time each.
#
#   tests/fuzz/run.sh BUILD_DIR        (BUILD_DIR configured with CC=clang --enable-fuzz)
#
# FUZZ_SECONDS (default 15) is the time per target; FUZZ_TOTAL_SECONDS (default
# 170) caps the whole run by shortening each target's share. Each target gets a
# fresh corpus directory in a temporary directory, seeded read-only from
# tests/fuzz/corpus/<target>/ when that exists. A crash, leak, timeout or
# sanitizer report fails the run; its reproducer is kept in
# BUILD_DIR/fuzz-artifacts/. The last line is "fuzz: N passed, N failed".
set -uo pipefail

build=${1:?usage: tests/fuzz/run.sh BUILD_DIR}
src=$(cd "$(dirname "$0")" && pwd)
per=${FUZZ_SECONDS:-15}
total=${FUZZ_TOTAL_SECONDS:-170}

targets=()
for t in "$build"/tests/fuzz/fuzz_*; do
	[ -f "$t" ] && [ -x "$t" ] && targets+=("$t")
done
if [ "${#targets[@]}" -eq 0 ]; then
	echo "fuzz: no fuzz targets in $build/tests/fuzz (configure with CC=clang --enable-fuzz)" >&2
	echo "fuzz: 0 passed, 1 failed"
	exit 1
fi
share=$((total / ${#targets[@]}))
[ "$share" -lt "$per" ] && per=$share
[ "$per" -lt 2 ] && per=2

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

pass=0 fail=0
for t in "${targets[@]}"; do
	name=$(basename "$t")
	corpus="$tmp/$name"
	mkdir -p "$corpus"
	seeds=()
	[ -d "$src/corpus/$name" ] && seeds=("$src/corpus/$name")
	log="$tmp/$name.log"
	echo "fuzz: $name for ${per}s"
	# -timeout: one input taking >10 s is a hang; -rss_limit_mb: bounded allocation.
	if "$t" -max_total_time="$per" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$artifacts/$name-" "$corpus" "${seeds[@]}" >"$log" 2>&1; then
		pass=$((pass + 1))
		grep -E '^(stat::number_of_executed_units|#[0-9]+.*DONE)' "$log" | tail -1 | sed "s/^/fuzz: $name: /"
	else
		fail=$((fail + 1))
		echo "fuzz: $name FAILED; reproducer in $artifacts/, log tail:"
		tail -60 "$log"
	fi
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
