#!/usr/bin/env bash
# Lance Namespace REST catalog benchmark. Starts `weedfs mini` (open: no identities) in a
# temp dir on 127.0.0.1 and free ports, creates the table bucket "lake", its namespace
# "bench" and TABLES declared tables t0..t<TABLES-1> (with catalog_load -mode=lance-declare,
# each once), then runs tests/bench/catalog_load at C requests in flight for DURATION
# seconds per mode:
#   declare       DeclareTable of the TABLES tables, each once (the setup, timed)
#   describe      DescribeTable {} (load_detailed_metadata false) across the tables
#   vend          DescribeTable {"vend_credentials":true}: an open catalog vends no keys
#                 (storage_options say aws_skip_signature)
#   list-1000     ListTables of the namespace, limit=1000, page_token to the end: one op
#   list-100      the same with limit=100
# and, in the same run, the floors: the filer requests the catalog makes, at the same C:
#   filer-lookup     POST /.api/v1/lookup of a table's directory, across the tables
#   filer-list-1000  POST /.api/v1/list of the namespace directory, 1000 entries a request,
#                    to the end: one op
#   filer-list-100   the same, 100 entries a request
# and the four listings again at c=1 (labels ...-c1): a page's own latency, no queueing.
# Then (AUTH=1) a second mini with an identities file (one Admin identity), a bearer token
# from its /v1/oauth/tokens, AUTH_TABLES tables, and with that token:
#   auth-describe  DescribeTable {}
#   auth-vend      DescribeTable {"vend_credentials":true}: session keys minted per request
# Prints each run's lines and a table of the best of the rounds (ms/page: 1000 / pages/s, at
# c=16 the machine's time per page, at c=1 a page's latency).
#
#   tests/bench/lance.sh [BUILD_DIR]  (env: C=16 DURATION=10 ROUNDS=1 TABLES=10000
#                                      AUTH=1 AUTH_TABLES=1000)
set -euo pipefail

bdir=${1:-build}
C=${C:-16}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-1}
TABLES=${TABLES:-10000}
AUTH=${AUTH:-1}
AUTH_TABLES=${AUTH_TABLES:-1000}
load="$bdir/tests/bench/catalog_load"
[[ -x $load && -x $bdir/weedfs ]] || { echo "build $bdir first (make)" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weedfs-lance-bench.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME [flags...]: a mini in $tmp/NAME; sets fport, lport and mini_pid.
start() {
	local name=$1 mport vport sport iport
	shift
	mkdir -p "$tmp/$name"
	mport=$(free_port); vport=$(free_port); fport=$(free_port); sport=$(free_port)
	iport=$(free_port); lport=$(free_port)
	"$bdir/weedfs" mini -dir="$tmp/$name" -ip=127.0.0.1 -master.port="$mport" \
		-volume.port="$vport" -filer.port="$fport" -s3.port="$sport" -iceberg.port="$iport" \
		-lance.port="$lport" -iam.port=0 -v=warn "$@" >"$tmp/$name.log" 2>&1 &
	mini_pid=$!
	pids+=("$mini_pid")
}

# post PATH BODY [curl flags...]: a POST to the Lance port; fails unless 200.
post() {
	local path=$1 body=$2 code
	shift 2
	code=$(curl -s -o "$tmp/answer" -w '%{http_code}' -X POST "http://127.0.0.1:$lport$path" \
		-H 'Content-Type: application/json' "$@" -d "$body")
	[[ $code == 200 ]] || { echo "POST $path: $code $(cat "$tmp/answer")" >&2; exit 1; }
}

# token: a bearer token from the mini's /v1/oauth/tokens (an open catalog issues one to
# anyone: it answers as soon as the catalog is up).
token() {
	curl -sf -X POST "http://127.0.0.1:$lport/v1/oauth/tokens" \
		-d 'grant_type=client_credentials&client_id=AKBENCH&client_secret=bench-secret' |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])' 2>/dev/null
}

# Polls until the mini's catalog answers a token request, 30 s at most.
wait_up() {
	local deadline=$((SECONDS + 30))
	until token >/dev/null; do
		kill -0 "$mini_pid" 2>/dev/null || { cat "$tmp"/*.log >&2; exit 1; }
		((SECONDS < deadline)) || { echo "the catalog did not come up" >&2; exit 1; }
		sleep 0.2
	done
}

run() { # label flags...
	local label=$1
	shift
	kill -0 "$mini_pid" 2>/dev/null || { echo "weedfs mini exited" >&2; exit 1; }
	"$load" -label="$label" -c="$C" -endpoint="127.0.0.1:$lport" -filer="127.0.0.1:$fport" \
		-prefix=lake -ns=bench -table=t "$@" | tee -a "$tmp/lines"
}

echo "load average at the start: $(cut -d" " -f1-3 /proc/loadavg)"
start open
wait_up
post /v1/namespace/lake/create '{}'
post '/v1/namespace/lake%24bench/create' '{}'
run declare -mode=lance-declare -tables="$TABLES" -n="$TABLES" -duration=0
for ((r = 1; r <= ROUNDS; r++)); do
	run describe -mode=lance-describe -tables="$TABLES" -duration="$DURATION"
	run filer-lookup -mode=raw-lookup -path=/buckets/lake/bench/t -tables="$TABLES" \
		-duration="$DURATION"
	run vend -mode=lance-vend -tables="$TABLES" -duration="$DURATION"
	run list-1000 -mode=lance-list -limit=1000 -duration="$DURATION"
	run list-100 -mode=lance-list -limit=100 -duration="$DURATION"
	run filer-list-1000 -mode=raw-list -path=/buckets/lake/bench -limit=1000 -duration="$DURATION"
	run filer-list-100 -mode=raw-list -path=/buckets/lake/bench -limit=100 -duration="$DURATION"
	for l in 1000 100; do
		run "list-$l-c1" -mode=lance-list -limit="$l" -c=1 -duration="$DURATION"
		run "filer-list-$l-c1" -mode=raw-list -path=/buckets/lake/bench -limit="$l" -c=1 \
			-duration="$DURATION"
	done
done

if ((AUTH)); then
	echo '{"identities": [{"name": "bench", "actions": ["Admin"],
		"credentials": [{"accessKey": "AKBENCH", "secretKey": "bench-secret"}]}]}' \
		>"$tmp/identities.json"
	start auth -s3.config="$tmp/identities.json"
	wait_up
	token=$(token)
	post /v1/namespace/lake/create '{}' -H "Authorization: Bearer $token"
	post '/v1/namespace/lake%24bench/create' '{}' -H "Authorization: Bearer $token"
	run auth-declare -mode=lance-declare -bearer="$token" -tables="$AUTH_TABLES" \
		-n="$AUTH_TABLES" -duration=0
	# the vend path really mints: the answer carries session keys
	post '/v1/table/lake%24bench%24t0/describe' '{"vend_credentials":true}' \
		-H "Authorization: Bearer $token"
	grep -q '"aws_session_token"' "$tmp/answer" ||
		{ echo "no session keys vended: $(cat "$tmp/answer")" >&2; exit 1; }
	for ((r = 1; r <= ROUNDS; r++)); do
		run auth-describe -mode=lance-describe -bearer="$token" -tables="$AUTH_TABLES" \
			-duration="$DURATION"
		run auth-vend -mode=lance-vend -bearer="$token" -tables="$AUTH_TABLES" \
			-duration="$DURATION"
	done
fi

echo "load average at the end: $(cut -d" " -f1-3 /proc/loadavg)"

# The best round of each (by ops/s), a listing's items line joined to its run's, as a table.
python3 - "$tmp/lines" "$C" "$DURATION" "$ROUNDS" <<'PY'
import sys
best, last = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 2 or "=" not in f[1]:
        continue
    d = dict(x.split("=", 1) for x in f[1:])
    if "items" in d:
        last[f[0]].update(d)
        continue
    last[f[0]] = d
    if f[0] not in best or float(d["ops_s"]) > float(best[f[0]]["ops_s"]):
        best[f[0]] = d
print("\nc=%s, %s s per run, best of %s rounds" % tuple(sys.argv[2:5]))
print("| run | ops/s | tables/s | pages/s | ms/page | p50 ms | p99 ms | client cpu_s | errors |")
print("|---|---|---|---|---|---|---|---|---|")
for k, d in best.items():
    items = "%.0f" % float(d["items_s"]) if "items_s" in d else "-"
    pages = "%.1f" % float(d["pages_s"]) if "pages_s" in d else "-"
    per = "%.2f" % (1000 / float(d["pages_s"])) if float(d.get("pages_s", 0)) else "-"
    print("| %s | %.1f | %s | %s | %s | %s | %s | %s | %s |" % (k, float(d["ops_s"]), items,
          pages, per, d["p50_ms"], d["p99_ms"], d["cpu_s"], d["errors"]))
PY
