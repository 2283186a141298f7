#!/usr/bin/env bash
# Installs everything weedfs needs to build and run its tests on Debian 12
# (bookworm). Idempotent: when every package is already present it runs no
# apt-get at all, so a warm CI machine pays nothing.
#
#   ./contrib/install-deps.sh          as root, or as a user with sudo
#
# Environment: PYTHON (default python3) is the interpreter the integration
# tests run with; pytest and requests are installed for it when missing.
set -euo pipefail

PACKAGES=(
	build-essential autoconf automake libtool pkg-config
	libevent-dev libcurl4-openssl-dev libyajl-dev libssl-dev
	libpq-dev libsqlite3-dev libfuse3-dev fuse3
	libxxhash-dev libisal-dev libhttp-parser-dev libexpat1-dev
	clang libclang-rt-14-dev
	python3 python3-pip curl fio postgresql strace
	rsync git
	s3cmd rclone
)

log() { printf 'install-deps: %s\n' "$*" >&2; }

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		log "not root and no sudo: cannot install packages"
	fi
fi

missing_packages() {
	local p status
	for p in "${PACKAGES[@]}"; do
		status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
		case "$status" in
		*" installed") ;;
		*) printf '%s\n' "$p" ;;
		esac
	done
}

if ! command -v dpkg-query >/dev/null 2>&1; then
	log "dpkg not found: this script supports Debian 12; install the packages listed in it by hand"
	exit 1
fi

mapfile -t missing < <(missing_packages)
if [ "${#missing[@]}" -eq 0 ]; then
	log "all Debian packages present"
else
	log "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	"${SUDO[@]}" apt-get update -q
	"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Python side of the integration tests. A pyenv/venv interpreter takes pip;
# Debian's own python3 is "externally managed", so it takes Debian's packages.
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import pytest, requests, boto3' >/dev/null 2>&1 ||
	! command -v aws >/dev/null 2>&1; then
	pybin=$(command -v "$PYTHON" || true)
	pybin=$(readlink -f "$pybin" 2>/dev/null || echo "$pybin")
	case "$pybin" in
	/usr/bin/*)
		log "installing python3-pytest python3-requests python3-boto3 awscli"
		export DEBIAN_FRONTEND=noninteractive
		"${SUDO[@]}" apt-get update -q
		"${SUDO[@]}" apt-get install -y -q --no-install-recommends python3-pytest python3-requests \
			python3-boto3 awscli
		;;
	*)
		log "installing pytest requests boto3 awscli with $PYTHON -m pip"
		"$PYTHON" -m pip install -q pytest requests boto3 awscli ||
			"$PYTHON" -m pip install -q --break-system-packages pytest requests boto3 awscli
		# a pyenv interpreter reaches new scripts (aws) through shims made by rehash
		if command -v pyenv >/dev/null 2>&1; then pyenv rehash || true; fi
		;;
	esac
	"$PYTHON" -c 'import pytest, requests, boto3'
	command -v aws >/dev/null
fi
log "done"
