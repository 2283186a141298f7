#!/usr/bin/env bash
# Fetches the jars the Spark side of the catalog tests needs (Iceberg's Spark runtime
# and its AWS bundle, for S3FileIO) from Maven Central into a cache, checks each against
# the SHA-256 recorded below, and prints their paths, one a line. A jar already in the
# cache with the right digest is not fetched again, so a warm run asks no registry.
#
#   ./contrib/fetch-spark-jars.sh [CACHE_DIR]
#
# CACHE_DIR (or $WEEDFS_JARS_DIR) defaults to ${XDG_CACHE_HOME:-$HOME/.cache}/weedfs/jars.
# Maven's own client downloads (mvn -C: it fails on a checksum that does not match the
# .sha1 published beside the jar), into a local repository inside the cache.
# To move to another Iceberg version, change ICEBERG_VERSION and the digests: the
# registry publishes each jar's .sha256 beside it.
set -euo pipefail

ICEBERG_VERSION=1.10.1
# group:artifact:version  sha256
JARS=(
	"org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:$ICEBERG_VERSION 39ea09e6c03550a300b9d9ab498949836d2d434e441da4c12a943a086e396940"
	"org.apache.iceberg:iceberg-aws-bundle:$ICEBERG_VERSION 86bf20892ea5b4c17688f19b075399885f6aa5303f6b2dc9f491e76ceef9633b"
)

CACHE=${1:-${WEEDFS_JARS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/weedfs/jars}}
REPO=$CACHE/repository

log() { printf 'fetch-spark-jars: %s\n' "$*" >&2; }

# The path of group:artifact:version's jar in the local repository's layout.
jar_path() {
	local g a v
	IFS=: read -r g a v <<<"$1"
	printf '%s/%s/%s/%s/%s-%s.jar\n' "$REPO" "${g//.//}" "$a" "$v" "$a" "$v"
}

# True when $1 exists and its SHA-256 is $2.
digest_ok() {
	[ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

fetch() {
	local coords=$1
	if ! command -v mvn >/dev/null 2>&1; then
		log "mvn not found (contrib/install-deps.sh installs maven)"
		return 1
	fi
	log "fetching $coords"
	# mvn's output is shown only when it fails
	if ! mvn -B -C -Dmaven.repo.local="$REPO" dependency:get -Dartifact="$coords" \
		-Dtransitive=false >"$CACHE/mvn.log" 2>&1; then
		cat "$CACHE/mvn.log" >&2
		return 1
	fi
}

mkdir -p "$REPO"
for entry in "${JARS[@]}"; do
	read -r coords sum <<<"$entry"
	path=$(jar_path "$coords")
	if ! digest_ok "$path" "$sum"; then
		rm -f "$path"
		fetch "$coords"
		if ! digest_ok "$path" "$sum"; then
			log "$path: SHA-256 is not $sum"
			rm -f "$path"
			exit 1
		fi
	fi
	printf '%s\n' "$path"
done
