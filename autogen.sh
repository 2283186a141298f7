#!/bin/sh
# Generates configure and the build helpers (automake does not install its TAP driver itself).
set -e
cd "$(dirname "$0")"
autoreconf -fi
cp -f "$(automake --print-libdir)/tap-driver.sh" build-aux/tap-driver.sh
