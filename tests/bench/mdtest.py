#!/usr/bin/env python3
"""mdtest-like metadata benchmark for a POSIX directory (a weedfs mount or a local disk).

P processes each work in their own directory DIR/p<i>/ (mdtest's "unique directory per
task"), on N files each. Phases run one after another, all processes starting each phase
together (a barrier); a phase's rate is P*N operations over the time from the earliest
start to the latest finish:
  create  open(O_CREAT|O_EXCL|O_WRONLY), write SIZE bytes, close
  stat    lstat
  read    open, read the whole file, close
  delete  unlink (and the per-process directories at the end)
Prints one line per phase: "<phase> <ops/s> <seconds>".

With --per-dir=K the files of a process are spread over subdirectories of K files each
(used to build a large tree for a walk); --phases=create then leaves the tree in place.

Usage: mdtest.py DIR [--procs=4] [--files=1000] [--size=1024] [--per-dir=0]
                     [--phases=create,stat,read,delete]
"""
import argparse
import multiprocessing as mp
import os
import sys
import time

PHASES = ("create", "stat", "read", "delete")


def paths(root, rank, nfiles, per_dir):
    base = os.path.join(root, "p%d" % rank)
    for i in range(nfiles):
        if per_dir:
            yield os.path.join(base, "d%d" % (i // per_dir), "f%d" % i)
        else:
            yield os.path.join(base, "f%d" % i)


def dirs(root, rank, nfiles, per_dir):
    base = os.path.join(root, "p%d" % rank)
    out = [base]
    if per_dir:
        out += [os.path.join(base, "d%d" % d) for d in range((nfiles + per_dir - 1) // per_dir)]
    return out


def worker(rank, args, phases, barrier, results):
    data = b"x" * args.size
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY
    try:
        for phase in phases:
            if phase == "create":
                for d in dirs(args.dir, rank, args.files, args.per_dir):
                    os.makedirs(d, exist_ok=True)
            barrier.wait()
            t0 = time.perf_counter()
            if phase == "create":
                for p in paths(args.dir, rank, args.files, args.per_dir):
                    fd = os.open(p, flags, 0o644)
                    if data:
                        os.write(fd, data)
                    os.close(fd)
            elif phase == "stat":
                for p in paths(args.dir, rank, args.files, args.per_dir):
                    st = os.lstat(p)
                    if st.st_size != args.size:
                        raise RuntimeError("%s: size %d, wrote %d" % (p, st.st_size, args.size))
            elif phase == "read":
                for p in paths(args.dir, rank, args.files, args.per_dir):
                    fd = os.open(p, os.O_RDONLY)
                    got = 0
                    while True:
                        b = os.read(fd, 65536)
                        if not b:
                            break
                        got += len(b)
                    os.close(fd)
                    if got != args.size:
                        raise RuntimeError("%s: read %d, wrote %d" % (p, got, args.size))
            elif phase == "delete":
                for p in paths(args.dir, rank, args.files, args.per_dir):
                    os.unlink(p)
            t1 = time.perf_counter()
            if phase == "delete":
                for d in reversed(dirs(args.dir, rank, args.files, args.per_dir)):
                    os.rmdir(d)
            results.put((phase, rank, t0, t1, None))
    except Exception as e:  # report, and let the other processes past the barriers
        results.put((None, rank, 0, 0, "%s: %s" % (type(e).__name__, e)))
        barrier.abort()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--files", type=int, default=1000, help="files per process")
    ap.add_argument("--size", type=int, default=1024, help="bytes per file")
    ap.add_argument("--per-dir", type=int, default=0, help="files per subdirectory (0: one)")
    ap.add_argument("--phases", default=",".join(PHASES))
    args = ap.parse_args()
    phases = [p for p in args.phases.split(",") if p]
    for p in phases:
        if p not in PHASES:
            ap.error("unknown phase %r" % p)
    os.makedirs(args.dir, exist_ok=True)

    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(args.procs)
    results = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, args, phases, barrier, results))
             for r in range(args.procs)]
    for p in procs:
        p.start()
    spans = {ph: [] for ph in phases}
    errors = []
    want = args.procs * len(phases)
    got = 0
    while got < want and not errors:
        ph, rank, t0, t1, err = results.get()
        got += 1
        if err:
            errors.append("process %d: %s" % (rank, err))
        else:
            spans[ph].append((t0, t1))
    for p in procs:
        p.join()
    if errors:
        for e in errors:
            print("mdtest: " + e, file=sys.stderr)
        return 1
    for ph in phases:
        secs = max(t1 for _, t1 in spans[ph]) - min(t0 for t0, _ in spans[ph])
        n = args.procs * args.files
        print("%s %.0f %.3f" % (ph, n / secs if secs > 0 else 0.0, secs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
