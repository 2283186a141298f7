"""?fsync=true on volume server uploads and deletes.

The durability itself is watched with strace: an fsync=true request must make
the volume server (and every replica) call fdatasync before it answers, and a
plain request must not. strace is a test dependency (contrib/install-deps.sh
installs it); without it, or when it cannot attach, these tests fail.
"""

import os
import re
import shutil
import subprocess
import time

import pytest
import requests

from conftest import assign, json_error, lookup_urls, parse_fid, wait_until

SYNC_LINE = re.compile(r"^\d+\s+(\d+\.\d+)\s+(fdatasync|fsync)\(")


class Strace:
    """strace -f attached to a running daemon, logging fdatasync/fsync with wall-clock times."""

    def __init__(self, daemon, workdir):
        if shutil.which("strace") is None:
            pytest.fail("strace is not installed (contrib/install-deps.sh installs it)",
                        pytrace=False)
        self.out = os.path.join(str(workdir), "strace-%d.out" % daemon.proc.pid)
        self.err = self.out + ".err"
        with open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                ["strace", "-f", "-ttt", "-e", "trace=fdatasync,fsync", "-o", self.out,
                 "-p", str(daemon.proc.pid)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 15
        while "attached" not in self._stderr():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("strace could not attach to %s: %s" % (daemon.name, self._stderr()),
                            pytrace=False)
            time.sleep(0.02)

    def _stderr(self):
        with open(self.err, errors="replace") as f:
            return f.read()

    def sync_times(self):
        """Wall-clock times of the fdatasync/fsync calls traced so far."""
        try:
            with open(self.out, errors="replace") as f:
                return [float(m.group(1)) for m in map(SYNC_LINE.match, f) if m]
        except FileNotFoundError:
            return []

    def wait_sync_after(self, t0, what):
        """Waits until a sync at or after t0 shows up (so every earlier line is written)."""
        wait_until(lambda: any(t >= t0 for t in self.sync_times()), 15, what)

    def syncs_between(self, t0, t1):
        return [t for t in self.sync_times() if t0 <= t <= t1]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()  # strace detaches and exits
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def traces(tmp_path):
    started = []

    def attach(daemon):
        t = Strace(daemon, tmp_path)
        started.append(t)
        return t

    yield attach
    for t in started:
        t.stop()


def _put(url, fid, data, **params):
    return requests.put("http://%s/%s" % (url, fid), data=data, params=params, timeout=30)


def _timed(fn):
    """(result, start, end) in wall-clock seconds, as strace -ttt prints them."""
    t0 = time.time()
    r = fn()
    return r, t0, time.time()


def test_fsync_upload_and_delete_single(cluster, traces):
    m = cluster.master()
    v = cluster.volume(m)
    a = assign(m)
    body = os.urandom(4096)
    trace = traces(v)

    # Plain writes and deletes never sync.
    plain = [assign(m) for _ in range(5)]
    p0 = time.time()
    for p in plain:
        r = _put(p["url"], p["fid"], body)
        assert r.status_code == 201, r.text
    r = requests.delete("http://%s/%s" % (plain[0]["url"], plain[0]["fid"]), timeout=30)
    assert r.status_code == 202, r.text
    p1 = time.time()

    # A raw PUT with fsync=true: synced before the 201.
    r, f0, f1 = _timed(lambda: _put(a["url"], a["fid"], body, fsync="true"))
    assert r.status_code == 201, r.text
    assert r.json()["size"] == len(body)
    trace.wait_sync_after(f0, "an fdatasync for the fsync=true upload")
    assert trace.syncs_between(f0, f1), "no fdatasync while the fsync=true upload was served"
    assert not trace.syncs_between(p0, p1), "plain uploads/deletes called fdatasync"
    g = requests.get("http://%s/%s" % (a["url"], a["fid"]), timeout=30)
    assert g.status_code == 200 and g.content == body

    # Multipart POST and a body bigger than the in-memory limit (streamed).
    for data in (b"multipart with fsync", os.urandom(3 << 20)):
        b = assign(m)
        r, t0, t1 = _timed(lambda: requests.post(
            "http://%s/%s" % (b["url"], b["fid"]), files={"file": ("f.bin", data)},
            params={"fsync": "true"}, timeout=60))
        assert r.status_code == 201, r.text
        trace.wait_sync_after(t0, "an fdatasync for the fsync=true POST")
        assert trace.syncs_between(t0, t1)
        g = requests.get("http://%s/%s" % (b["url"], b["fid"]), timeout=60)
        assert g.status_code == 200 and g.content == data

    # The same content again is 204 (already durable: no new round needed).
    r = _put(a["url"], a["fid"], body, fsync="true")
    assert r.status_code == 204, r.text

    # DELETE with fsync=true.
    r, d0, d1 = _timed(lambda: requests.delete(
        "http://%s/%s" % (a["url"], a["fid"]), params={"fsync": "true"}, timeout=30))
    assert r.status_code == 202, r.text
    trace.wait_sync_after(d0, "an fdatasync for the fsync=true delete")
    assert trace.syncs_between(d0, d1), "no fdatasync while the fsync=true delete was served"
    assert requests.get("http://%s/%s" % (a["url"], a["fid"]), timeout=30).status_code == 404


def test_fsync_invalid_value_is_400(cluster):
    m = cluster.master()
    cluster.volume(m)
    a = assign(m)
    url = "http://%s/%s" % (a["url"], a["fid"])

    r = requests.put(url, data=b"x" * 100, params={"fsync": "maybe"}, timeout=30)
    assert r.status_code == 400, r.text
    assert "fsync" in json_error(r)
    r = requests.post(url, files={"file": ("f", b"y")}, params={"fsync": "maybe"}, timeout=30)
    assert r.status_code == 400, r.text
    assert requests.get(url, timeout=30).status_code == 404, "a refused upload stored data"

    assert requests.put(url, data=b"kept", params={"fsync": "false"}, timeout=30).status_code == 201
    r = requests.delete(url, params={"fsync": "maybe"}, timeout=30)
    assert r.status_code == 400, r.text
    assert "fsync" in json_error(r)
    g = requests.get(url, timeout=30)
    assert g.status_code == 200 and g.content == b"kept", "a refused delete deleted"


def test_fsync_replicated_001(cluster, traces):
    m = cluster.master()
    va = cluster.volume(m)
    vb = cluster.volume(m)
    a = assign(m, replication="001")
    vid = parse_fid(a["fid"])[0]
    assert sorted(lookup_urls(m, vid)) == sorted([va.url, vb.url])
    ta, tb = traces(va), traces(vb)
    body = os.urandom(4096)

    # Plain replicated write: no sync anywhere.
    p = assign(m, replication="001")
    p0 = time.time()
    r = _put(p["url"], p["fid"], body)
    assert r.status_code == 201, r.text
    p1 = time.time()

    r, f0, f1 = _timed(lambda: _put(a["url"], a["fid"], body, fsync="true"))
    assert r.status_code == 201, r.text
    for t, d in ((ta, va), (tb, vb)):
        t.wait_sync_after(f0, "an fdatasync on %s" % d.name)
        assert t.syncs_between(f0, f1), "%s did not sync before the client got 201" % d.name
        assert not t.syncs_between(p0, p1), "%s synced a plain replicated write" % d.name
        g = requests.get("http://%s/%s" % (d.url, a["fid"]), timeout=30)
        assert g.status_code == 200 and g.content == body, d.name

    # The replicated delete is synced on both copies too.
    r, d0, d1 = _timed(lambda: requests.delete(
        "http://%s/%s" % (a["url"], a["fid"]), params={"fsync": "true"}, timeout=30))
    assert r.status_code == 202, r.text
    for t, d in ((ta, va), (tb, vb)):
        t.wait_sync_after(d0, "an fdatasync for the delete on %s" % d.name)
        assert t.syncs_between(d0, d1), "%s did not sync the delete" % d.name
        assert requests.get("http://%s/%s" % (d.url, a["fid"]), timeout=30).status_code == 404
