#!/usr/bin/env bash
# Installs what is missing, builds weedfs three ways and runs every test:
#
#   1. build/default  --enable-werror           make check (unit, TAP) + pytest tests/integration
#   2. build/asan     --enable-asan --enable-werror   the same, under ASan+UBSan, less the
#                     heavy_client tests (Spark's JVM), which run in stage 1 only
#   3. build/tsan     --enable-tsan --enable-werror   make check and a mini + mount + S3 smoke,
#                     under ThreadSanitizer (any data race fails)
#   4. build/fuzz     CC=clang --enable-fuzz    every libFuzzer target, briefly (tests/fuzz/run.sh)
#
# This is the command CI runs (.ci/run). It prints a summary and, as its last
# line, "N passed, N failed"; it exits non-zero if anything failed.
#
# Environment: JOBS (make -j, default 2), PYTHON (default python3),
# WEEDFS_BUILD_ROOT (default ./build), FUZZ_SECONDS / FUZZ_TOTAL_SECONDS
# (see tests/fuzz/run.sh), SKIP="asan fuzz deps" to leave stages out while
# iterating locally (stages: deps asan tsan fuzz), PYTEST_ARGS (extra pytest arguments,
# e.g. "-k mini -x").
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD_ROOT=${WEEDFS_BUILD_ROOT:-$ROOT/build}
JOBS=${JOBS:-2}
PYTHON=${PYTHON:-python3}
SKIP=${SKIP:-}
read -r -a PYTEST_EXTRA <<<"${PYTEST_ARGS:-}"

passed=0
failed=0
failures=()
start=$SECONDS

section() { printf '\n==== %s  [%ds]\n' "$*" $((SECONDS - start)); }
skipped() { case " $SKIP " in *" $1 "*) return 0 ;; esac; return 1; }
ok() { passed=$((passed + ${2:-1})); }
bad() {
	failed=$((failed + ${2:-1}))
	failures+=("$1")
}

# Runs "$@" as one pass/fail unit named $1.
unit() {
	local name=$1
	shift
	section "$name"
	if "$@"; then
		ok "$name"
		return 0
	fi
	echo "FAILED: $name" >&2
	bad "$name"
	return 1
}

# make check; counts TAP results from test-suite.log.
make_check() {
	local dir=$1 name=$2 rc p f
	section "$name: make check"
	timeout 900 make -C "$dir" -j"$JOBS" check
	rc=$?
	p=$(sed -n 's/^# PASS: *\([0-9]*\).*/\1/p' "$dir/test-suite.log" 2>/dev/null | head -1)
	f=$(sed -n 's/^# \(FAIL\|ERROR\|XPASS\): *\([0-9]*\).*/\2/p' "$dir/test-suite.log" 2>/dev/null |
		awk '{s += $1} END {print s + 0}')
	p=${p:-0}
	if [ "$rc" -ne 0 ]; then
		tail -100 "$dir/test-suite.log" 2>/dev/null
		[ "$f" -eq 0 ] && f=1
	fi
	echo "$name: make check: $p passed, $f failed"
	ok "" "$p"
	[ "$f" -gt 0 ] && bad "$name: make check ($f)" "$f"
	return "$rc"
}

# pytest against $1/weedfs (tests/integration, or the tests and options given after $2);
# counts results from JUnit XML.
integration() {
	local dir=$1 name=$2 rc counts p f
	shift 2
	local what=("$@")
	[ ${#what[@]} -eq 0 ] && what=(tests/integration)
	section "$name: integration tests"
	rm -f "$dir/pytest.xml"
	WEEDFS_BIN="$dir/weedfs" timeout 1500 "$PYTHON" -m pytest "${what[@]}" -q \
		-p no:cacheprovider --basetemp="$dir/pytest-tmp" --junitxml="$dir/pytest.xml" \
		"${PYTEST_EXTRA[@]}"
	rc=$?
	counts=$("$PYTHON" - "$dir/pytest.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print("0 0"); sys.exit()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = sum(int(s.get("tests", 0)) for s in suites)
f = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
sk = sum(int(s.get("skipped", 0)) for s in suites)
bad = [c.get("classname", "") + "::" + c.get("name", "") for s in suites
       for c in s.iter("testcase") if c.find("failure") is not None or c.find("error") is not None]
print(t - f - sk, f, " ".join(bad))
PY
)
	read -r p f names <<<"$counts"
	# pytest exit 5 = no tests collected: that is a failure here.
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
	echo "$name: integration: $p passed, $f failed"
	ok "" "$p"
	# the names go to the summary: a CI log may show only its tail
	[ "$f" -gt 0 ] && bad "$name: integration ($f)${names:+: $names}" "$f"
	return "$rc"
}

# The security smoke: mini, its mount and S3 with volume write and read signing on
# (every daemon and mount gets -security, conftest.py's WEEDFS_TEST_SECURITY).
SECURITY_SMOKE=(tests/integration/test_mini.py tests/integration/test_mount_mini.py
	tests/integration/test_s3_buckets.py)
security_smoke() {
	local dir=$1 rc
	printf '[jwt.signing]\nkey = "smoke-write-%s"\n[jwt.signing.read]\nkey = "smoke-read-%s"\n' \
		"$RANDOM" "$RANDOM" >"$dir/security-smoke.toml"
	WEEDFS_TEST_SECURITY="$dir/security-smoke.toml" integration "$dir" "default: security smoke" \
		"${SECURITY_SMOKE[@]}"
	rc=$?
	return "$rc"
}

configure_in() {
	local dir=$1
	shift
	mkdir -p "$dir"
	(cd "$dir" && "$ROOT/configure" -q "$@")
}

# ---------------------------------------------------------------------------
if ! skipped deps; then
	if ! unit "install dependencies" "$ROOT/contrib/install-deps.sh"; then
		printf '\n%d passed, %d failed\n' "$passed" "$failed"
		exit 1
	fi
fi
# autogen.sh = autoreconf -fi plus automake's TAP driver, which autoreconf does not install.
bootstrap() {
	if [ -f "$ROOT/autogen.sh" ]; then sh "$ROOT/autogen.sh"; else autoreconf -fi; fi
}
if ! unit "bootstrap (autogen.sh)" bootstrap; then
	printf '\n%d passed, %d failed\n' "$passed" "$failed"
	exit 1
fi

# Stage 1 and 2: a normal and a sanitizer build, each unit + integration tested.
for cfg in default asan; do
	skipped "$cfg" && continue
	dir="$BUILD_ROOT/$cfg"
	flags=(--enable-werror)
	[ "$cfg" = asan ] && flags+=(--enable-asan)
	unit "$cfg: configure ${flags[*]}" configure_in "$dir" "${flags[@]}" || continue
	unit "$cfg: make" make -C "$dir" -j"$JOBS" || continue
	if [ "$cfg" = asan ]; then
		# Sanitizer reports go to the daemon logs, which the test harness scans.
		export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:disable_coredump=1:allocator_may_return_null=0
		export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
		export WEEDFS_READY_TIMEOUT=60 WEEDFS_TEST_TIMEOUT=300
	fi
	make_check "$dir" "$cfg"
	if [ "$cfg" = asan ]; then
		# heavy_client tests (a Spark JVM each, ~20 s) run in the plain stage only
		integration "$dir" "$cfg" tests/integration -m "not heavy_client"
	else
		integration "$dir" "$cfg"
		security_smoke "$dir"
	fi
	unset ASAN_OPTIONS UBSAN_OPTIONS WEEDFS_READY_TIMEOUT WEEDFS_TEST_TIMEOUT
done

# Stage 3: ThreadSanitizer over every unit test and a smoke of the threaded daemons: mini
# with its mount, the mount's data path against a cluster, S3 objects. Tests that measure
# memory or count threads are left out: TSan's shadow memory and its own thread change both.
TSAN_SMOKE=(tests/integration/test_mini.py tests/integration/test_mount_mini.py
	tests/integration/test_mount_basic.py tests/integration/test_mount_coherence.py
	tests/integration/test_mount_data.py tests/integration/test_s3_objects.py
	tests/integration/test_s3_mount.py
	-k "not memory and not rss and not flat and not threads_are_named" -m "not heavy_client")
if ! skipped tsan; then
	dir="$BUILD_ROOT/tsan"
	if unit "tsan: configure --enable-tsan --enable-werror" configure_in "$dir" --enable-tsan \
		--enable-werror && unit "tsan: make" make -C "$dir" -j"$JOBS"; then
		# exitcode 66 after any report: the unit test fails, the harness scans daemon logs
		export TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1"
		export WEEDFS_READY_TIMEOUT=60 WEEDFS_TEST_TIMEOUT=600
		make_check "$dir" tsan
		integration "$dir" tsan "${TSAN_SMOKE[@]}"
		unset TSAN_OPTIONS WEEDFS_READY_TIMEOUT WEEDFS_TEST_TIMEOUT
	fi
fi

# Stage 4: libFuzzer targets.
if ! skipped fuzz; then
	dir="$BUILD_ROOT/fuzz"
	if unit "fuzz: configure CC=clang --enable-fuzz" configure_in "$dir" CC=clang --enable-fuzz &&
		unit "fuzz: make" make -C "$dir" -j"$JOBS"; then
		section "fuzz: run targets"
		out=$(mktemp)
		"$ROOT/tests/fuzz/run.sh" "$dir" | tee "$out"
		read -r p f < <(sed -n 's/^fuzz: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$out" | tail -1)
		rm -f "$out"
		ok "" "${p:-0}"
		[ "${f:-1}" -gt 0 ] && bad "fuzz targets (${f:-?})" "${f:-1}"
	fi
fi

section "summary"
echo "elapsed: $((SECONDS - start))s"
for f in "${failures[@]}"; do
	echo "  failed: $f"
done
printf '%d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
