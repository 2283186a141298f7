#!/usr/bin/env python3
"""Erasure coding in a cluster, against the physical limits. A master and seven volume
servers (three racks) on loopback; one volume of MB MiB (1 MiB needles) plus N small
needles (4 KiB) sealed and encoded with weedfs shell. Prints:
  encode     ec.encode of the volume (generate + spreading the shards + removing the
             original), MiB of .dat per s
  read       4 KiB reads (GET, keep-alive) of small needles: median and p99 ms, from
             the normal volume, from the encoded one (the holder of the needle's
             shard: a local read), from another holder (one hop more), and degraded:
             the needle's shard lost (rebuilt from ten others), and four shards lost
  rebuild    ec.rebuild of four lost shards, MiB of shards written per s
  limits     tests/bench/ec_encode (isa-l's raw encode in memory, the codec on a file,
             a plain copy of the same bytes on this disk)
A benchmark, not a pass/fail test.

Usage: tests/bench/ec.py [path/to/weedfs]   Environment: MB=256 N=400 KEEP=1
"""
import os
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
WEEDFS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(TOP, "build", "weedfs")
MB = int(os.environ.get("MB", "256"))
N = int(os.environ.get("N", "400"))
SMALL_BLOCK = 1 << 20


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_for(what, fn, secs=60):
    t0 = time.time()
    while time.time() - t0 < secs:
        try:
            v = fn()
        except requests.RequestException:
            v = None  # not listening yet
        if v:
            return v
        time.sleep(0.05)
    raise SystemExit("timed out waiting for " + what)


def main():
    tmp = tempfile.mkdtemp(prefix="weedfs-ec-bench.")
    procs = []
    try:
        run(tmp, procs)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        if os.environ.get("KEEP"):
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def start(procs, tmp, name, args):
    log = open(os.path.join(tmp, name + ".log"), "ab")
    p = subprocess.Popen([WEEDFS] + args, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    procs.append(p)
    return p


def shell(master, cmd):
    t0 = time.time()
    p = subprocess.run([WEEDFS, "shell", "-master=" + master, "-filer=127.0.0.1:1", "-c", cmd],
                       capture_output=True, text=True, timeout=3600)
    if p.returncode:
        raise SystemExit("shell %r failed:\n%s%s" % (cmd, p.stdout, p.stderr))
    return time.time() - t0, p.stdout


def lat(session, url, fids):
    ms = []
    for fid in fids:
        t0 = time.perf_counter()
        r = session.get("http://%s/%s" % (url, fid), timeout=30)
        ms.append((time.perf_counter() - t0) * 1000)
        assert r.status_code == 200, (url, fid, r.status_code)
    ms.sort()
    return "median %.3f ms, p99 %.3f ms (%d reads)" % (statistics.median(ms),
                                                      ms[int(len(ms) * 0.99) - 1], len(ms))


def ec_lookup(m, vid):
    r = requests.get("http://%s/vol/ec/lookup?volumeId=%d" % (m, vid), timeout=10)
    return {s["shard"]: [x["url"] for x in s["locations"]] for s in r.json()["shards"]} \
        if r.status_code == 200 else {}


def run(tmp, procs):
    mport = free_port()
    m = "127.0.0.1:%d" % mport
    start(procs, tmp, "master", ["master", "-ip=127.0.0.1", "-port=%d" % mport, "-mdir=" + tmp,
                                 "-pulseSeconds=1", "-repairDelaySeconds=0",
                                 "-volumeSizeLimitMB=4096"])
    vols = {}
    for i in range(7):
        port = free_port()
        d = os.path.join(tmp, "v%d" % i)
        os.makedirs(d)
        start(procs, tmp, "v%d" % i, ["volume", "-ip=127.0.0.1", "-port=%d" % port, "-dir=" + d,
                                       "-max=8", "-mserver=" + m, "-pulseSeconds=1",
                                       "-rack=r%d" % (i % 3)])
        vols["127.0.0.1:%d" % port] = d
    wait_for("7 volume servers", lambda: requests.get("http://%s/dir/status" % m, timeout=5)
             .text.count('"Url"') >= 7)
    a = requests.get("http://%s/dir/assign?collection=b&count=%d" % (m, MB + N), timeout=30).json()
    vid, rest = a["fid"].split(",")
    vid, key, cookie = int(vid), int(rest[:-8], 16), rest[-8:]
    src = a["url"]
    s = requests.Session()
    big = os.urandom(1 << 20)
    fids = []
    for i in range(MB + N):
        fid = "%d,%x%s" % (vid, key + i, cookie)
        data = big if i < MB else os.urandom(4096)
        r = s.put("http://%s/%s" % (src, fid), files={"file": ("f", data)}, timeout=60)
        assert r.status_code in (200, 201), r.text
        if i >= MB:
            fids.append(fid)
    print("ec bench: %d MiB volume %d + %d needles of 4 KiB on %s, 7 servers over 3 racks"
          % (MB, vid, N, src))
    print("read normal volume:        " + lat(s, src, fids))
    dat = os.path.join(vols[src], "b_%d.dat" % vid)
    dat_mib = os.path.getsize(dat) / 1048576.0
    shell(m, "lock; volume.mark -readonly -volumeId=%d" % vid)
    t, _ = shell(m, "lock; ec.encode -volumeId=%d" % vid)
    print("encode:                    %.1f MiB/s (%.1f MiB in %.2f s)" % (dat_mib / t, dat_mib, t))
    shards = wait_for("14 shards", lambda: (lambda x: len(x) == 14 and x)(ec_lookup(m, vid)))

    # where each small needle's bytes are: its .ecx offset -> shard (small rows only below 10 GiB)
    holder = shards[0][0]
    ecx = open(os.path.join(vols[holder], "b_%d.ecx" % vid), "rb").read()
    shard_mib = os.path.getsize(os.path.join(vols[holder], "b_%d.ec00" % vid)) / 1048576.0
    shard_of = {}
    for off in range(0, len(ecx), 16):
        k, o, _ = struct.unpack(">QII", ecx[off:off + 16])
        shard_of[k] = (o * 8 // SMALL_BLOCK) % 10
    by_shard = {}
    for fid in fids:
        by_shard.setdefault(shard_of[int(fid.split(",")[1][:-8], 16)], []).append(fid)
    k = max(by_shard, key=lambda x: len(by_shard[x]))
    on_k, owner = by_shard[k], shards[k][0]
    other = next(u for u in vols if u != owner)
    print("read EC, local shard:      " + lat(s, owner, on_k))
    print("read EC, shard elsewhere:  " + lat(s, other, on_k))
    requests.post("http://%s/admin/ec/delete?volume=%d&shards=%d" % (owner, vid, k), timeout=30)
    wait_for("13 shards", lambda: len(ec_lookup(m, vid)) == 13)
    print("read EC, 1 shard lost:     " + lat(s, other, on_k))
    lost = [k] + [x for x in range(10) if x != k][:3]
    for x in lost[1:]:
        requests.post("http://%s/admin/ec/delete?volume=%d&shards=%d" % (shards[x][0], vid, x),
                      timeout=30)
    wait_for("10 shards", lambda: len(ec_lookup(m, vid)) == 10)
    print("read EC, 4 shards lost:    " + lat(s, other, on_k))
    t, _ = shell(m, "lock; ec.rebuild")
    print("rebuild:                   %.1f MiB/s of shards (4 x %.1f MiB in %.2f s, the 10 "
          "sources pulled to one server included)" % (4 * shard_mib / t, shard_mib, t))
    limits = os.path.join(os.path.dirname(WEEDFS), "tests", "bench", "ec_encode")
    if os.path.exists(limits):
        out = subprocess.run([limits, str(min(MB, 256)), tmp], capture_output=True, text=True,
                             timeout=600).stdout
        for line in out.splitlines():
            print("limit: " + line)


if __name__ == "__main__":
    main()
