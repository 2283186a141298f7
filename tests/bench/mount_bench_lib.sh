# Sourced by the mount benchmarks (mount.sh, posix.sh): finding the build, and the
# helpers every one of them needs. Expects $top (the source tree), $PHASES, $mnt when
# wait_mounted runs; sets $bdir from $1 or the usual build directories.

# find_build [DIR]: sets bdir to DIR, or the first of ., build/default, the tree holding
# weedfs and weedfs-mount; exits 2 when none does
find_build() {
	bdir=${1:-}
	if [[ -z $bdir ]]; then
		for cand in . "$top/build/default" "$top"; do
			[[ -x $cand/weedfs && -x $cand/weedfs-mount ]] && bdir=$cand && break
		done
	fi
	[[ -n $bdir && -x $bdir/weedfs && -x $bdir/weedfs-mount ]] ||
		{ echo "weedfs and weedfs-mount not found (pass their build dir as \$1)" >&2; exit 2; }
	bdir=$(cd "$bdir" && pwd)
}

has_phase() { [[ " $PHASES " == *" $1 "* ]]; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_mounted() {
	for _ in $(seq 600); do
		mountpoint -q "$mnt" && return 0
		sleep 0.05
	done
	echo "$mnt did not get mounted" >&2
	return 1
}
