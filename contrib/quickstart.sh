#!/usr/bin/env bash
# From a fresh checkout to a running single-node weedfs cluster:
# installs what is missing (Debian 12), builds into build/default, and runs
# `weedfs mini` in the foreground with the cluster mounted by weedfs-mount at
# MOUNT_DIR (Ctrl-C unmounts and stops it; the data stays).
#
#   ./contrib/quickstart.sh [DATA_DIR]      (default: build/data)
#
# Environment: JOBS (make -j), MASTER_PORT (9333), VOLUME_PORT (8080), FILER_PORT (8888),
# S3_PORT (8333), MOUNT_DIR (build/mnt; empty = do not mount); AWS_ACCESS_KEY_ID and
# AWS_SECRET_ACCESS_KEY make the S3 gateway require that key (else it is open).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
DATA=${1:-$ROOT/build/data}
BUILD=$ROOT/build/default
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
MASTER_PORT=${MASTER_PORT:-9333}
VOLUME_PORT=${VOLUME_PORT:-8080}
FILER_PORT=${FILER_PORT:-8888}
S3_PORT=${S3_PORT:-8333}
MOUNT_DIR=${MOUNT_DIR-$ROOT/build/mnt}

"$ROOT/contrib/install-deps.sh"
if [ ! -x "$ROOT/configure" ] || [ "$ROOT/configure.ac" -nt "$ROOT/configure" ]; then
	if [ -f "$ROOT/autogen.sh" ]; then sh "$ROOT/autogen.sh"; else autoreconf -fi; fi
fi
if [ ! -f "$BUILD/Makefile" ]; then
	mkdir -p "$BUILD"
	(cd "$BUILD" && "$ROOT/configure" -q)
fi
make -C "$BUILD" -j"$JOBS" weedfs weedfs-mount
mkdir -p "$DATA"
mount_args=()
if [ -n "$MOUNT_DIR" ]; then
	# a mount left by a run that was killed answers "Transport endpoint is not connected"
	if grep -qs " $MOUNT_DIR fuse" /proc/mounts; then fusermount3 -uz "$MOUNT_DIR" || true; fi
	mkdir -p "$MOUNT_DIR"
	mount_args=(-mount.dir="$MOUNT_DIR")
fi

M=127.0.0.1:$MASTER_PORT
cat <<MSG

weedfs is starting: master on $M, volume server on 127.0.0.1:$VOLUME_PORT,
filer on 127.0.0.1:$FILER_PORT, S3 on 127.0.0.1:$S3_PORT (its buckets are /buckets
in the filer and the mount), data in $DATA${MOUNT_DIR:+,
mounted at $MOUNT_DIR (an ordinary directory: cp, ls, git, sqlite3 all work there)}
Try it from another terminal:
${MOUNT_DIR:+
  cp -r "$ROOT/docs" "$MOUNT_DIR/"; ls -l "$MOUNT_DIR/docs"      # through the mount
  curl "http://127.0.0.1:$FILER_PORT/docs/" -H 'Accept: application/json'  # same files
}
  curl -T /etc/hostname "http://127.0.0.1:$FILER_PORT/docs/hostname"    # a file by path
  curl "http://127.0.0.1:$FILER_PORT/docs/hostname"                     # read it back
  curl -H 'Accept: application/json' "http://127.0.0.1:$FILER_PORT/docs/"   # list
  aws --endpoint-url http://127.0.0.1:$S3_PORT --no-sign-request s3 mb s3://demo  # a bucket
  aws --endpoint-url http://127.0.0.1:$S3_PORT --no-sign-request s3 ls            # = /buckets
  aws --endpoint-url http://127.0.0.1:$S3_PORT --no-sign-request s3 cp /etc/hostname s3://demo/

  curl "http://$M/dir/assign"                      # -> {"fid":"3,01637037d6","url":"127.0.0.1:$VOLUME_PORT",...}
  curl -F file=@/etc/hostname "http://127.0.0.1:$VOLUME_PORT/3,01637037d6"   # upload (use your fid)
  curl "http://127.0.0.1:$VOLUME_PORT/3,01637037d6"                       # read
  curl -X DELETE "http://127.0.0.1:$VOLUME_PORT/3,01637037d6"             # delete
  curl -F file=@/etc/hostname "http://$M/submit"   # assign + upload in one call
  $BUILD/weedfs benchmark -master=$M -n=10000      # measure

Manual: man -l man/weedfs.1   More: docs/README.md   Stop: Ctrl-C

MSG
exec "$BUILD/weedfs" mini -dir="$DATA" -ip=127.0.0.1 -master.port="$MASTER_PORT" \
	-volume.port="$VOLUME_PORT" -filer.port="$FILER_PORT" -s3.port="$S3_PORT" "${mount_args[@]}"
