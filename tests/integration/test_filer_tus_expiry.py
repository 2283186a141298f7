"""TUS sessions that expire (-tus.expireSeconds, the expiration extension) and a
PATCH whose filer is killed mid-body, against a real master, volume server and
filer."""

import email.utils
import os
import socket
import sqlite3
import subprocess
import time

import requests

from conftest import WEEDFS, file_count, free_port, wait_until
from filer_fixtures import start_filer
from test_filer_tus import MiB, TUS, create, delete_count, head, patch


def expires(r):
    """Upload-Expires as a Unix time (an RFC 7231 IMF-fixdate)."""
    v = r.headers["Upload-Expires"]
    assert v.endswith(" GMT") and len(v) == 29, v
    return email.utils.parsedate_to_datetime(v).timestamp()


def gc_rows(f):
    """Rows of the filer's persistent garbage queue (read-only look at its SQLite file)."""
    db = sqlite3.connect("file:%s/filer.db?mode=ro" % f.daemon.dir, uri=True, timeout=10)
    try:
        return db.execute("SELECT count(*) FROM filer_gc").fetchone()[0]
    finally:
        db.close()


def cluster_with_filer(cluster, monkeypatch, expire, env=None, extra=()):
    for k, val in (env or {}).items():
        monkeypatch.setenv(k, val)
    m = cluster.master()
    v = cluster.volume(m)
    f = start_filer(cluster, m, extra=["-maxMB=1", "-tus.expireSeconds=%d" % expire]
                    + list(extra))
    return f, v


def test_expiration_headers(cluster, monkeypatch):
    f, _ = cluster_with_filer(cluster, monkeypatch, 3600)
    r = requests.options(f.u("/.tus/"), timeout=30)
    assert set(r.headers["Tus-Extension"].split(",")) == {"creation", "termination", "expiration"}
    assert "Upload-Expires" in r.headers["Access-Control-Expose-Headers"]

    t0 = time.time()
    r = create(f, "/exp/headers.bin", 20)
    assert r.status_code == 201
    loc = r.headers["Location"]
    assert abs(expires(r) - (t0 + 3600)) < 5
    h = head(f, loc)
    assert h.status_code == 200 and abs(expires(h) - expires(r)) < 1
    time.sleep(1.1)  # the next touch must move the date by a whole second
    p = patch(f, loc, 0, b"x" * 10)
    assert p.status_code == 204
    assert expires(p) >= expires(r) + 1  # a PATCH renews the session
    assert abs(expires(head(f, loc)) - expires(p)) < 1
    p = patch(f, loc, 10, b"y" * 10)  # the last PATCH: the session is gone, nothing expires
    assert p.status_code == 204 and "Upload-Expires" not in p.headers
    assert f.get("/exp/headers.bin").content == b"x" * 10 + b"y" * 10


def test_bad_expire_flag(cluster, tmp_path):
    m = cluster.master()
    for bad in ("0", "-5", "x"):
        p = subprocess.run([WEEDFS, "filer", "-ip=127.0.0.1", "-port=%d" % free_port(),
                            "-master=%s" % m.url, "-dir=%s" % tmp_path,
                            "-tus.expireSeconds=" + bad], capture_output=True, timeout=30)
        assert p.returncode != 0, bad
        assert b"expireSeconds" in p.stderr + p.stdout, bad


def test_abandoned_session_swept_and_chunks_freed(cluster, monkeypatch):
    f, v = cluster_with_filer(cluster, monkeypatch, 2,
                              env={"WEEDFS_FILER_TTL_SWEEP_SECONDS": "1"})
    data = os.urandom(3 * MiB)
    loc = create(f, "/exp/abandoned.bin", 4 * MiB).headers["Location"]
    assert patch(f, loc, 0, data).status_code == 204
    # a second session kept alive by PATCHes past the expiry time
    live = create(f, "/exp/live.bin", 10).headers["Location"]
    before = delete_count(v)

    # the sweep alone removes the abandoned session: no request touches it meanwhile
    deadline = time.monotonic() + 30
    off = 0
    while delete_count(v) < before + 3:
        assert time.monotonic() < deadline, "chunks of the expired session not deleted"
        if off < 9:
            assert patch(f, live, off, b"z").status_code == 204
            off += 1
        time.sleep(0.4)
    wait_until(lambda: "expired" in f.daemon.log_path.read_text(), what="expiry logged")
    assert head(f, loc).status_code == 404
    assert patch(f, loc, 3 * MiB, b"more").status_code == 404
    assert requests.delete(f.u(loc), headers=TUS, timeout=30).status_code == 404
    assert f.get("/exp/abandoned.bin").status_code == 404
    wait_until(lambda: gc_rows(f) == 0, what="garbage queue drained")

    # the touched session outlived the abandoned one and completes
    assert int(head(f, live).headers["Upload-Offset"]) == off
    assert patch(f, live, off, b"z" * (10 - off)).status_code == 204
    assert f.get("/exp/live.bin").content == b"z" * 10


def test_expired_session_is_404_before_the_sweep(cluster, monkeypatch):
    # a sweep interval far away: HEAD and PATCH see the expiry themselves
    f, v = cluster_with_filer(cluster, monkeypatch, 1,
                              env={"WEEDFS_FILER_TTL_SWEEP_SECONDS": "3600"})
    loc = create(f, "/exp/lazy.bin", 2 * MiB).headers["Location"]
    assert patch(f, loc, 0, os.urandom(MiB)).status_code == 204
    before = delete_count(v)
    wait_until(lambda: head(f, loc).status_code == 404, timeout=10, what="session expired")
    assert patch(f, loc, MiB, b"x").status_code == 404
    wait_until(lambda: delete_count(v) >= before + 1, timeout=30, what="chunk deleted")


def test_patch_killed_mid_body_leaks_nothing(cluster, monkeypatch):
    f, v = cluster_with_filer(cluster, monkeypatch, 3600,
                              env={"WEEDFS_FILER_UPLOAD_LEASE_SECONDS": "2"})
    data = os.urandom(6 * MiB)
    loc = create(f, "/exp/killed.bin", len(data)).headers["Location"]
    assert patch(f, loc, 0, data[:MiB]).status_code == 204  # committed: offset 1 MiB
    files0, deleted0 = file_count(v), delete_count(v)
    assert gc_rows(f) == 0

    # a slow PATCH of the rest: 4.5 of 5 MiB sent, then the client stalls (what the
    # filer holds back is under 1 MiB, so at least three chunks are cut)
    host, port = f.url.split(":")
    s = socket.create_connection((host, int(port)), timeout=30)
    s.sendall(("PATCH %s HTTP/1.1\r\nHost: %s\r\nTus-Resumable: 1.0.0\r\n"
               "Upload-Offset: %d\r\nContent-Type: application/offset+octet-stream\r\n"
               "Content-Length: %d\r\n\r\n" % (loc, f.url, MiB, 5 * MiB)).encode())
    for i in range(9):
        s.sendall(data[MiB + i * (MiB // 2):MiB + (i + 1) * (MiB // 2)])
        time.sleep(0.05)
    # three 1 MiB chunks are on the volume server and recorded under a lease
    wait_until(lambda: file_count(v) >= files0 + 3, timeout=30, what="chunks uploaded")
    wait_until(lambda: gc_rows(f) >= 3, timeout=30, what="chunks recorded")
    f.daemon.kill9()
    s.close()

    f.daemon.start()
    # the lease runs out and the garbage queue deletes what the dead PATCH uploaded
    wait_until(lambda: delete_count(v) >= deleted0 + 3, timeout=30, what="orphans deleted")
    wait_until(lambda: gc_rows(f) == 0, timeout=30, what="garbage queue drained")
    # the session resumes from its committed offset, its committed chunk intact
    r = head(f, loc)
    assert r.status_code == 200 and int(r.headers["Upload-Offset"]) == MiB
    r = patch(f, loc, MiB, data[MiB:])
    assert r.status_code == 204, r.text
    assert f.get("/exp/killed.bin").content == data
