"""The filer's metadata event stream (GET /.meta/subscribe) and TTL expiry."""

import json
import os
import queue
import socket
import sqlite3
import threading
import time

import requests

from conftest import wait_until
from filer_fixtures import start_filer
from test_filer_store_pg import pg  # noqa: F401 - pytest fixture (a private PostgreSQL)


class Stream:
    """A subscriber reading lines on a thread into a queue."""

    def __init__(self, f, **params):
        self.r = requests.get(f.u("/.meta/subscribe"), params=params, stream=True, timeout=30)
        assert self.r.status_code == 200, self.r.text
        assert self.r.headers["Content-Type"] == "application/x-ndjson"
        self.q = queue.Queue()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()
        first = self.next(5)  # the subscription's resume point
        assert set(first) == {"tsNs"}
        self.start_ts = first["tsNs"]

    def _run(self):
        try:
            for line in self.r.iter_lines():
                if line:
                    self.q.put(json.loads(line))
        except Exception:  # closed by the test
            pass

    def next(self, timeout=1.0):
        return self.q.get(timeout=timeout)

    def events(self, n, timeout=1.0):
        """The next n events (heartbeats skipped), each within timeout."""
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < n:
            ev = self.q.get(timeout=max(0.01, deadline - time.monotonic()))
            if "directory" in ev:
                out.append(ev)
        return out

    def quiet(self, wait=0.5):
        """Events (not heartbeats) that arrive within wait."""
        out = []
        deadline = time.monotonic() + wait
        while True:
            try:
                ev = self.q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                return out
            if "directory" in ev:
                out.append(ev)

    def close(self):
        self.r.close()


def path_of(e):
    return e["fullPath"] if e else None


def kind(ev):
    o, n = ev["oldEntry"], ev["newEntry"]
    if o is None:
        return ("create", path_of(n))
    if n is None:
        return ("delete", path_of(o))
    if path_of(o) != path_of(n):
        return ("rename", path_of(o), path_of(n))
    return ("update", path_of(n))


def local_filer(cluster, extra=(), env=None):
    m = cluster.master()
    v = cluster.volume(m)
    assert v
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        return m, start_filer(cluster, m, extra=list(extra))
    finally:
        os.environ.clear()
        os.environ.update(old)


def thread_count(pid):
    return len(os.listdir("/proc/%d/task" % pid))


def test_stream_prefix_order_and_resume(cluster):
    _, f = local_filer(cluster)
    assert f.post("/a/b/").status_code == 201
    s = Stream(f, pathPrefix="/a/b")  # from now
    t0 = time.monotonic()
    assert f.put("/a/b/x.txt", b"one").status_code == 201
    assert f.put("/other/y.txt", b"outside").status_code == 201
    assert f.put("/a/bc.txt", b"sibling, not under /a/b").status_code == 201
    assert f.put("/a/b/x.txt", b"two").status_code == 201
    assert f.post("/a/b/z.txt", params={"mv.from": "/a/b/x.txt"}).status_code == 204
    assert f.delete("/a/b/z.txt").status_code == 204
    evs = s.events(4, timeout=1.0)
    assert time.monotonic() - t0 < 2.0
    assert [kind(e) for e in evs] == [
        ("create", "/a/b/x.txt"), ("update", "/a/b/x.txt"),
        ("rename", "/a/b/x.txt", "/a/b/z.txt"), ("delete", "/a/b/z.txt")]
    assert all(e["directory"] == "/a/b" for e in evs)
    ts = [e["tsNs"] for e in evs]
    assert ts == sorted(ts) and len(set(ts)) == 4 and ts[0] > s.start_ts
    # inline content stays out of events (its length says there is some)
    assert "content" not in evs[1]["newEntry"] and evs[1]["newEntry"]["contentLength"] == 3
    assert "content" not in evs[1]["oldEntry"] and evs[1]["oldEntry"]["contentLength"] == 3
    assert s.quiet(0.3) == []  # nothing outside the prefix
    s.close()

    # Resume from the second event: exactly the last two, nothing twice, nothing missed.
    r = Stream(f, pathPrefix="/a/b/", sinceNs=str(ts[1]))
    assert [e["tsNs"] for e in r.events(2)] == ts[2:]
    assert r.quiet(0.3) == []
    # New events keep coming on the resumed stream.
    assert f.put("/a/b/w.txt", b"w").status_code == 201
    assert kind(r.events(1)[0]) == ("create", "/a/b/w.txt")
    r.close()

    # sinceNs=0: from the oldest kept, the whole history under the prefix, in order.
    a = Stream(f, pathPrefix="/a/b", sinceNs="0")
    hist = a.events(5)
    assert [e["tsNs"] for e in hist][1:5] == ts  # hist[0]: mkdir of /a/b
    assert kind(hist[0]) == ("create", "/a/b")
    a.close()


def test_stream_heartbeat_and_bad_parameters(cluster):
    _, f = local_filer(cluster)
    s = Stream(f, heartbeatSeconds="1")
    hb = s.next(2.5)
    assert set(hb) == {"tsNs"} and hb["tsNs"] >= s.start_ts
    s.close()
    for params in ({"sinceNs": "abc"}, {"sinceNs": "-5"}, {"pathPrefix": "a/b"},
                   {"pathPrefix": "/a/../b"}, {"heartbeatSeconds": "0"}, {"bogus": "1"},
                   {"signature": "0"}, {"signature": "x"}, {"signature": "2147483648"}):
        r = requests.get(f.u("/.meta/subscribe"), params=params, timeout=10)
        assert r.status_code == 400, params
        assert "error" in r.json()
    assert requests.post(f.u("/.meta/subscribe"), timeout=10).status_code == 405


def test_disconnects_leave_no_worker(cluster):
    _, f = local_filer(cluster)
    pid = f.daemon.proc.pid
    base = thread_count(pid)
    streams = [Stream(f, heartbeatSeconds="1", pathPrefix="/s%d" % i) for i in range(50)]
    assert thread_count(pid) >= base + 50
    for s in streams:
        s.close()
    # each worker ends within one heartbeat of its client leaving
    wait_until(lambda: thread_count(pid) <= base, timeout=10, what="stream threads to end")
    # Raw sockets that vanish mid-headers-read and mid-stream.
    for _ in range(10):
        c = socket.create_connection(("127.0.0.1", f.daemon.port))
        c.sendall(b"GET /.meta/subscribe?sinceNs=0&heartbeatSeconds=1 HTTP/1.1\r\n"
                  b"Host: x\r\n\r\n")
        c.recv(100)
        c.close()
    assert f.put("/after.txt", b"still here").status_code == 201
    assert f.get("/after.txt").content == b"still here"
    wait_until(lambda: thread_count(pid) <= base, timeout=10, what="stream threads to end")
    # Streams open at shutdown end cleanly too.
    open_streams = [Stream(f) for _ in range(5)]
    assert f.daemon.stop() == 0
    for s in open_streams:
        s.close()


def test_slow_reader_back_pressure(cluster):
    _, f = local_filer(cluster)
    for i in range(300):
        assert f.put("/bp/f%03d" % i, b"x" * 1500).status_code == 201
    # A reader that takes its time still gets every event once, in order.
    r = requests.get(f.u("/.meta/subscribe"), params={"sinceNs": "0", "pathPrefix": "/bp"},
                     stream=True, timeout=30)
    seen = []
    for line in r.iter_lines(chunk_size=512):
        ev = json.loads(line)
        if "directory" in ev:
            seen.append(ev["tsNs"])
            if len(seen) % 50 == 0:
                time.sleep(0.05)
            if len(seen) == 301:  # the mkdir of /bp and 300 creates
                break
    r.close()
    assert seen == sorted(seen) and len(set(seen)) == 301
    assert f.get("/healthz").status_code == 200


def test_two_filers_on_postgres_stream(cluster, pg):  # noqa: F811
    m = cluster.master()
    assert cluster.volume(m)
    dsn = "host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test" % pg.port
    fa = start_filer(cluster, m, extra=["-store=postgres", "-postgres.dsn=" + dsn])
    fb = start_filer(cluster, m, extra=["-store=postgres", "-postgres.dsn=" + dsn])
    s = Stream(fb, pathPrefix="/shared")
    assert fa.put("/shared/from_a.txt", b"hello").status_code == 201
    assert fb.put("/shared/from_b.txt", b"hi").status_code == 201
    assert fa.delete("/shared/from_a.txt").status_code == 204
    evs = s.events(4, timeout=2.0)  # events of both filers, in tsNs order
    assert [kind(e) for e in evs] == [
        ("create", "/shared"), ("create", "/shared/from_a.txt"),
        ("create", "/shared/from_b.txt"), ("delete", "/shared/from_a.txt")]
    ts = [e["tsNs"] for e in evs]
    assert ts == sorted(ts) and len(set(ts)) == 4
    assert s.quiet(0.5) == []
    s.close()


def test_signed_changes_skip_their_own_stream(cluster):
    """A client that signs its requests (X-Weedfs-Signature) and subscribes with
    ?signature= the same number is not sent its own changes; others still are. The
    filer's SQLite database predates signed events: the column is added at start."""
    fdir = cluster._dir("filer")
    db = sqlite3.connect(os.path.join(fdir, "filer.db"))
    db.executescript(
        "CREATE TABLE filer_events (ts INTEGER PRIMARY KEY, directory TEXT NOT NULL,"
        " old_path TEXT, old_meta BLOB, new_path TEXT, new_meta BLOB);")
    db.close()
    m = cluster.master()
    assert cluster.volume(m)
    f = start_filer(cluster, m, fdir=fdir)
    mine = Stream(f, pathPrefix="/sig", signature="42")
    everyone = Stream(f, pathPrefix="/sig")
    signed = {"X-Weedfs-Signature": "42"}
    # the PUT makes /sig as well: both events are signed
    assert f.put("/sig/own.txt", b"mine", headers=signed).status_code == 201
    r = requests.post(f.u("/.api/v1/create"), headers=signed, timeout=10,
                      json={"entry": {"path": "/sig/own-api", "mode": 0o100644}})
    assert r.status_code == 201, r.text
    r = requests.post(f.u("/.api/v1/create"), headers={"X-Weedfs-Signature": "-7"},
                      timeout=10, json={"entry": {"path": "/sig/other-api", "mode": 0o100644}})
    assert r.status_code == 201, r.text
    assert f.put("/sig/unsigned.txt", b"theirs").status_code == 201
    assert [kind(e) for e in mine.events(2)] == [
        ("create", "/sig/other-api"), ("create", "/sig/unsigned.txt")]
    assert [kind(e) for e in everyone.events(5)] == [
        ("create", "/sig"), ("create", "/sig/own.txt"), ("create", "/sig/own-api"),
        ("create", "/sig/other-api"), ("create", "/sig/unsigned.txt")]
    # A malformed signature is refused before anything changes.
    for bad in ("0", "abc", "99999999999", ""):
        r = requests.post(f.u("/.api/v1/create"), headers={"X-Weedfs-Signature": bad},
                          timeout=10, json={"entry": {"path": "/sig/bad", "mode": 0o100644}})
        assert r.status_code == 400 and "X-Weedfs-Signature" in r.json()["error"], bad
        r = f.put("/sig/bad.txt", b"x", headers={"X-Weedfs-Signature": bad})
        assert r.status_code == 400, bad
    assert f.get("/sig/bad").status_code == 404 and f.get("/sig/bad.txt").status_code == 404
    assert mine.quiet(0.3) == [] and everyone.quiet(0.1) == []
    mine.close()
    everyone.close()


def test_ttl_expiry(cluster):
    # The clock offset makes ttl=1m files expired at once and ttl=5m files not (filer_ttl.c).
    _, f = local_filer(cluster, env={"WEEDFS_TEST_TTL_CLOCK_OFFSET_SECONDS": "61",
                                     "WEEDFS_FILER_TTL_SWEEP_SECONDS": "1"})
    s = Stream(f, pathPrefix="/ttl")
    big = os.urandom(300 * 1024)  # on a volume, not inline
    assert f.put("/ttl/short.bin", big, params={"ttl": "1m"}).status_code == 201
    assert f.put("/ttl/long.bin", big, params={"ttl": "5m"}).status_code == 201
    assert f.put("/ttl/none.txt", b"forever").status_code == 201
    # reads of the expired file answer 404 at once
    assert f.get("/ttl/short.bin").status_code == 404
    assert f.get("/ttl/short.bin", params={"metadata": "true"}).status_code == 404
    assert f.get("/ttl/long.bin").content == big
    assert f.get("/ttl/none.txt").content == b"forever"
    # the sweep deletes it, logging a delete event
    evs = s.events(4, timeout=2.0)
    evs += s.events(1, timeout=5.0)
    assert kind(evs[-1]) == ("delete", "/ttl/short.bin")
    chunks = evs[-1]["oldEntry"]["chunks"]
    assert chunks
    wait_until(lambda: "short.bin" not in f.names("/ttl/"), timeout=5, what="sweep")
    assert sorted(f.names("/ttl/")) == ["long.bin", "none.txt"]
    # its chunks are freed on the volume server
    for c in chunks:
        fid = c["fileId"]
        wait_until(lambda: requests.get(f.u("/"), params={"proxyChunkId": fid},
                                        timeout=10).status_code == 404,
                   timeout=10, what="chunk %s freed" % fid)
    s.close()
