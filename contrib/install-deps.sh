#!/usr/bin/env bash
# Installs everything weedfs needs to build and run its tests on Debian 12
# (bookworm). Idempotent: when every package is already present it runs no
# apt-get at all, so a warm CI machine pays nothing.
#
#   ./contrib/install-deps.sh          as root, or as a user with sudo
#
# Environment: PYTHON (default python3) is the interpreter the integration
# tests run with; contrib/requirements-test.txt's pinned packages are installed
# for it with pip unless every pinned version is there already. Then
# contrib/fetch-spark-jars.sh fills its jar cache (WEEDFS_JARS_DIR; a no-op when
# the cached jars' SHA-256s match).
set -euo pipefail

PACKAGES=(
	build-essential autoconf automake libtool pkg-config
	libevent-dev libcurl4-openssl-dev libyajl-dev libssl-dev
	libpq-dev libsqlite3-dev libfuse3-dev fuse3
	libxxhash-dev libisal-dev libhttp-parser-dev libexpat1-dev libedit-dev
	clang libclang-rt-14-dev
	python3 python3-pip curl fio postgresql strace
	rsync git
	s3cmd rclone
	openjdk-17-jre-headless maven
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

# One dpkg-query for all of them (a fork each cost more than the rest of a warm run).
missing_packages() {
	local p name status
	local -A have=()
	while read -r name status; do
		case "$status" in
		*" installed") have[$name]=1 ;;
		esac
	done < <(dpkg-query -W -f='${Package} ${Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)
	for p in "${PACKAGES[@]}"; do
		[ -n "${have[$p]:-}" ] || printf '%s\n' "$p"
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

# Python side of the integration tests: the pinned clients of requirements-test.txt.
# A pyenv/venv interpreter takes them with pip as it is; Debian's own python3 is
# "externally managed" and has none of these pins packaged, so pip is told to install
# beside Debian's packages (into /usr/local).
PYTHON=${PYTHON:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
REQUIREMENTS=$HERE/requirements-test.txt

# Prints each pin of $REQUIREMENTS that is not installed at its version, or whose
# extras' packages are missing; prints nothing when all are there. Reads metadata
# only, so a warm machine pays a fraction of a second, not a pip resolve.
unmet_pins() {
	"$PYTHON" - "$REQUIREMENTS" <<'PY'
import re, sys
from importlib import metadata

def installed(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None

for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    m = re.fullmatch(r"([A-Za-z0-9._-]+)(?:\[([^\]]*)\])?==(\S+)", line)
    if not m:
        print("%s (not name==version)" % line)
        continue
    name, extras, want = m.group(1), m.group(2), m.group(3)
    have = installed(name)
    if have != want:
        print("%s (%s)" % (line, "have " + have if have else "not installed"))
        continue
    for extra in filter(None, (e.strip() for e in (extras or "").split(","))):
        for req in metadata.requires(name) or ():
            if re.search(r"extra\s*==\s*['\"]%s['\"]" % re.escape(extra), req):
                dep = re.match(r"[A-Za-z0-9._-]+", req).group(0)
                if installed(dep) is None:
                    print("%s (extra %s: no %s)" % (line, extra, dep))
PY
}

# $(...) and set -e: a crash of the check (no $PYTHON, say) stops the script rather than
# reading as "all met"
pins=$(unmet_pins)
if [ -z "$pins" ] && command -v aws >/dev/null 2>&1; then
	log "all pinned Python packages present"
else
	[ -n "$pins" ] && log "not at their pins: ${pins//$'\n'/, }"
	log "installing $REQUIREMENTS with $PYTHON -m pip"
	pybin=$(command -v "$PYTHON" || true)
	pybin=$(readlink -f "$pybin" 2>/dev/null || echo "$pybin")
	pipargs=(install -q --disable-pip-version-check -r "$REQUIREMENTS")
	case "$pybin" in
	/usr/bin/*) "${SUDO[@]}" "$pybin" -m pip "${pipargs[@]}" --break-system-packages ;;
	*) "$PYTHON" -m pip "${pipargs[@]}" ||
		"$PYTHON" -m pip "${pipargs[@]}" --break-system-packages ;;
	esac
	# a pyenv interpreter reaches new scripts (aws) through shims made by rehash
	if command -v pyenv >/dev/null 2>&1; then pyenv rehash || true; fi
	pins=$(unmet_pins)
	if [ -n "$pins" ]; then
		log "still not at their pins after pip: ${pins//$'\n'/, }"
		exit 1
	fi
	command -v aws >/dev/null
fi

# Spark's Iceberg jars, into the cache the tests read (tests/integration/catalog_clients.py).
"$HERE/fetch-spark-jars.sh" >/dev/null
log "done"
