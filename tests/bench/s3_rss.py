#!/usr/bin/env python3
"""The S3 gateway's memory while one huge object streams through it (issue 5: "a 5 GiB
PUT and a 5 GiB GET keep the gateway's RSS flat").

Starts `weedfs mini -s3=false` and a separate `weedfs s3` in front of its filer (so the
figures are the gateway's alone), PUTs SIZE bytes in 1 MiB pieces (SigV4,
UNSIGNED-PAYLOAD), GETs them back reading 1 MiB at a time, and samples the gateway's
VmRSS every 0.2 s. Prints the RSS before, the peak and the median during each transfer,
the VmHWM, and the MiB/s. A benchmark, not a test.

Usage: tests/bench/s3_rss.py [build-dir]   Environment: SIZE_GIB=5 (default)
"""
import hashlib
import http.client
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from s3_fixtures import Signer  # noqa: E402  (SigV4 by hand)

AK, SK = "AKBENCH", "bench-secret"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("port %d never opened" % port)


def status_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Sampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.samples, self.on = pid, [], True

    def run(self):
        while self.on:
            self.samples.append(status_kib(self.pid, "VmRSS"))
            time.sleep(0.2)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build/default"
    weedfs = os.path.join(build, "weedfs")
    size = int(float(os.environ.get("SIZE_GIB", "5")) * (1 << 30))
    piece = 1 << 20
    d = tempfile.mkdtemp(prefix="weedfs-s3-rss.")
    mp, vp, fp, sp = free_port(), free_port(), free_port(), free_port()
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK)
    mini = subprocess.Popen([weedfs, "mini", "-dir=" + d, "-ip=127.0.0.1",
                             "-master.port=%d" % mp, "-volume.port=%d" % vp,
                             "-filer.port=%d" % fp, "-s3=false"],
                            stdout=open(d + "/mini.log", "w"), stderr=subprocess.STDOUT)
    wait_port(fp)
    cfg = d + "/s3.json"
    with open(cfg, "w") as f:
        f.write('{"identities": [{"name": "bench", "credentials": [{"accessKey": "%s", '
                '"secretKey": "%s"}], "actions": ["Admin"]}]}' % (AK, SK))
    gw = subprocess.Popen([weedfs, "s3", "-ip=127.0.0.1", "-port=%d" % sp,
                           "-filer=127.0.0.1:%d" % fp, "-config=" + cfg, "-iceberg.port=0",
                           "-lance.port=0", "-iam.port=0"],
                          stdout=open(d + "/s3.log", "w"), stderr=subprocess.STDOUT, env=env)
    wait_port(sp)
    host = "127.0.0.1:%d" % sp
    try:
        def request(method, path, headers=None, payload="UNSIGNED-PAYLOAD"):
            c = http.client.HTTPConnection("127.0.0.1", sp, timeout=600)
            h = Signer(AK, SK).sign(method, host, path, headers or {}, payload)
            c.putrequest(method, path)
            for k, v in h.items():
                c.putheader(k, v)
            c.endheaders()
            return c
        c = request("PUT", "/rss", payload=hashlib.sha256(b"").hexdigest())
        assert c.getresponse().status == 200
        block = os.urandom(piece)
        base = status_kib(gw.pid, "VmRSS")
        s = Sampler(gw.pid)
        s.start()
        t0 = time.time()
        c = request("PUT", "/rss/huge", {"Content-Length": str(size)})
        for _ in range(size // piece):
            c.send(block)
        r = c.getresponse()
        body = r.read()
        put_s = time.time() - t0
        assert r.status == 200, body
        s.on = False
        s.join()
        put_samples = s.samples
        s = Sampler(gw.pid)
        s.start()
        t0 = time.time()
        c = request("GET", "/rss/huge")
        r = c.getresponse()
        got = 0
        while True:
            b = r.read(piece)
            if not b:
                break
            got += len(b)
        get_s = time.time() - t0
        s.on = False
        s.join()
        assert got == size, got
        mib = size / (1 << 20)
        print("weedfs s3 RSS while %.1f GiB streams through (%s, load %s)" % (
            size / (1 << 30), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            " ".join(open("/proc/loadavg").read().split()[:3])))
        print("gateway VmRSS before: %d KiB" % base)
        print("PUT: %.0f MiB/s; VmRSS median %d KiB, peak %d KiB" % (
            mib / put_s, statistics.median(put_samples), max(put_samples)))
        print("GET: %.0f MiB/s; VmRSS median %d KiB, peak %d KiB" % (
            mib / get_s, statistics.median(s.samples), max(s.samples)))
        print("gateway VmHWM after both: %d KiB" % status_kib(gw.pid, "VmHWM"))
    finally:
        gw.terminate()
        mini.terminate()
        gw.wait()
        mini.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
