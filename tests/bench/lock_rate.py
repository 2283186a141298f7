#!/usr/bin/env python3
"""POSIX lock calls per second in a directory (a weedfs mount, or a local disk to compare).

Two workloads on one file DIR/lock_rate.<pid>, one after the other:
  pair    F_SETLK write lock on one byte at 1 GiB, then its unlock (what the old
          test_sqlite_style_lock_cycle_is_fast timed)
  sqlite  SQLite's lock sequence per write transaction (its unix VFS): a shared lock
          through PENDING, RESERVED, PENDING, EXCLUSIVE, a 13-byte pwrite, back to
          shared, unlocked: 8 lock calls and a write
Prints one line per workload: "<workload> <per s> <median ms> <p99 ms>" (per s counts
pairs or whole transactions; the latencies are of one pair or one transaction,
nearest-rank over N samples). Run it on a mount that tests/bench/mount.sh or
`weedfs mini -mount.dir=` made. A benchmark, not a test: it fails only if a lock call does.

Usage: lock_rate.py DIR [--n=2000]
"""
import argparse
import fcntl
import os
import struct
import time

PENDING = 1 << 30
RESERVED = PENDING + 1
SHARED, SHARED_LEN = PENDING + 2, 510


def setlk(fd, typ, start, length):
    fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("hhqqi4x", typ, 0, start, length, 0))


def pair(fd, i):
    setlk(fd, fcntl.F_WRLCK, PENDING, 1)
    setlk(fd, fcntl.F_UNLCK, PENDING, 1)


def sqlite(fd, i):
    setlk(fd, fcntl.F_RDLCK, PENDING, 1)
    setlk(fd, fcntl.F_RDLCK, SHARED, SHARED_LEN)
    setlk(fd, fcntl.F_UNLCK, PENDING, 1)
    setlk(fd, fcntl.F_WRLCK, RESERVED, 1)
    setlk(fd, fcntl.F_WRLCK, PENDING, 1)
    setlk(fd, fcntl.F_WRLCK, SHARED, SHARED_LEN)
    os.pwrite(fd, b"cycle %06d\n" % (i % 1000000), 0)
    setlk(fd, fcntl.F_RDLCK, SHARED, SHARED_LEN)
    setlk(fd, fcntl.F_UNLCK, PENDING, 2)
    setlk(fd, fcntl.F_UNLCK, 0, 0)


def measure(fd, fn, n):
    lat = []
    t0 = time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        fn(fd, i)
        lat.append(time.perf_counter() - t)
    total = time.perf_counter() - t0
    lat.sort()
    rank = lambda q: lat[min(n - 1, max(0, int(q * n + 0.999999) - 1))]  # noqa: E731
    return n / total, rank(0.5) * 1e3, rank(0.99) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--n", type=int, default=2000, help="pairs / transactions per workload")
    args = ap.parse_args()
    path = os.path.join(args.dir, "lock_rate.%d" % os.getpid())
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, b"0123456789" * 20)
        print("%s, %d each" % (args.dir, args.n))
        for name, fn in (("pair", pair), ("sqlite", sqlite)):
            rate, p50, p99 = measure(fd, fn, args.n)
            print("%-6s %8.0f /s  median %.3f ms  p99 %.3f ms" % (name, rate, p50, p99))
    finally:
        os.close(fd)
        os.unlink(path)


if __name__ == "__main__":
    main()
