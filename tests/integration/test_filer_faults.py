"""The filer through faults of what it stands on, on real daemons: the only volume
server killed (SIGKILL) and restarted, and the PostgreSQL server under two filers
stopped and started. Meanwhile requests fail with a JSON 5xx in bounded time (no
hang) and what does not need the failed part keeps working; afterwards everything
works again and every entry written before reads back intact."""

import hashlib
import os
import time

import requests

from conftest import json_error, wait_registered_with, wait_until
from filer_fixtures import start_filer
from test_filer_store_pg import pg  # noqa: F401 - pytest fixture (a private PostgreSQL)

KiB = 1 << 10
MiB = 1 << 20
BOUND = 30  # seconds a failing request may take


def sha(b):
    return hashlib.sha256(b).hexdigest()


def timed(fn, *a, **kw):
    t0 = time.monotonic()
    r = fn(*a, **kw)
    return r, time.monotonic() - t0


def assert_5xx(r, dt, what):
    assert 500 <= r.status_code < 600, "%s: %s %s" % (what, r.status_code, r.text[:300])
    assert dt < BOUND, "%s took %.1fs" % (what, dt)
    assert json_error(r)


def write_corpus(f, prefix):
    """Chunked and inline files and a directory; returns {path: bytes}."""
    files = {}
    for i in range(4):
        files["%s/big%d.bin" % (prefix, i)] = os.urandom(2 * MiB + 1000 * i)
    for i in range(6):
        files["%s/small%d.txt" % (prefix, i)] = b"small %d" % i
    files["%s/sub/deep.bin" % prefix] = os.urandom(300 * KiB)
    for p, data in files.items():
        assert f.put(p, data).status_code == 201, p
    return files


def check_corpus(f, files):
    for p, data in files.items():
        r = f.get(p)
        assert r.status_code == 200, (p, r.status_code, r.text[:200])
        assert sha(r.content) == sha(data), p
        m = f.meta(p)
        assert m["FileSize"] == len(data), p


def test_volume_server_killed_and_restarted(cluster):
    m = cluster.master()
    v = cluster.volume(m)
    f = start_filer(cluster, m, extra=["-maxMB=1"])
    files = write_corpus(f, "/vk")

    v.kill9()
    # chunked reads and uploads fail clearly, in bounded time, and change nothing
    for p in ("/vk/big0.bin", "/vk/sub/deep.bin"):
        r, dt = timed(f.get, p)
        assert_5xx(r, dt, "GET %s" % p)
    r, dt = timed(f.put, "/vk/new.bin", os.urandom(3 * MiB))
    assert_5xx(r, dt, "chunked upload")
    assert f.get("/vk/new.bin").status_code == 404
    r, dt = timed(f.put, "/vk/big1.bin", os.urandom(2 * MiB))
    assert_5xx(r, dt, "chunked overwrite")
    r, dt = timed(f.post, "/vk/copy.bin", params={"cp.from": "/vk/big2.bin"})
    assert_5xx(r, dt, "copy of a chunked file")
    # metadata and inline content need no volume server
    assert f.post("/vk/newdir/a/").status_code == 201
    assert f.put("/vk/newdir/inline.txt", b"inline while down").status_code == 201
    assert f.get("/vk/newdir/inline.txt").content == b"inline while down"
    assert f.get("/vk/small3.txt").content == b"small 3"
    assert sorted(f.names("/vk/")) == sorted(
        ["big0.bin", "big1.bin", "big2.bin", "big3.bin", "newdir", "sub"]
        + ["small%d.txt" % i for i in range(6)])
    assert f.meta("/vk/big0.bin")["FileSize"] == len(files["/vk/big0.bin"])
    assert f.post("/vk/moved3.bin", params={"mv.from": "/vk/big3.bin"}).status_code == 204
    files["/vk/moved3.bin"] = files.pop("/vk/big3.bin")
    # the same after the master has noticed the volume server is gone
    wait_until(lambda: v.url not in requests.get("http://%s/dir/status" % m.url,
                                                 timeout=2).text,
               30, "master dropped the dead volume server")
    r, dt = timed(f.get, "/vk/big0.bin")
    assert_5xx(r, dt, "GET after the master dropped the volume server")
    r, dt = timed(f.put, "/vk/new2.bin", os.urandom(2 * MiB))
    assert_5xx(r, dt, "upload with no volume server")

    v.start()
    wait_registered_with(m, v)
    # everything works again, nothing was corrupted
    check_corpus(f, files)
    data = os.urandom(3 * MiB + 5)
    wait_until(lambda: f.put("/vk/after.bin", data).status_code == 201, 30,
               "uploads work again")
    assert sha(f.get("/vk/after.bin").content) == sha(data)
    assert f.post("/vk/copy.bin", params={"cp.from": "/vk/big2.bin"}).status_code == 204
    assert sha(f.get("/vk/copy.bin").content) == sha(files["/vk/big2.bin"])
    assert f.get("/vk/new.bin").status_code == 404


def test_postgres_stopped_and_started_under_two_filers(cluster, pg):  # noqa: F811
    m = cluster.master()
    cluster.volume(m)
    dsn = "host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test connect_timeout=5" % pg.port
    f1 = start_filer(cluster, m, extra=["-store=postgres", "-postgres.dsn=" + dsn, "-maxMB=1"])
    f2 = start_filer(cluster, m, extra=["-store=postgres", "-postgres.dsn=" + dsn, "-maxMB=1"])
    files = write_corpus(f1, "/pgf")
    check_corpus(f2, files)

    pg.stop()
    for f in (f1, f2):
        checks = [
            ("GET inline", lambda: f.get("/pgf/small1.txt")),
            ("GET chunked", lambda: f.get("/pgf/big0.bin")),
            ("metadata", lambda: f.get("/pgf/big1.bin", params={"metadata": "true"})),
            ("list", lambda: f.get("/pgf/", headers={"Accept": "application/json"})),
            ("PUT inline", lambda: f.put("/pgf/down.txt", b"x")),
            ("PUT chunked", lambda: f.put("/pgf/down.bin", os.urandom(2 * MiB))),
            ("mkdir", lambda: f.post("/pgf/downdir/")),
            ("mv", lambda: f.post("/pgf/m.txt", params={"mv.from": "/pgf/small2.txt"})),
            ("delete", lambda: f.delete("/pgf/small3.txt")),
        ]
        for what, call in checks:
            r, dt = timed(call)
            assert_5xx(r, dt, "%s on %s with PostgreSQL down" % (what, f.url))
    assert f1.daemon.alive() and f2.daemon.alive()

    pg.start()
    # the next requests reconnect (the first one may still see the dead connection)
    for f in (f1, f2):
        wait_until(lambda: f.get("/pgf/small1.txt").status_code == 200, 30,
                   "%s reads again after the restart" % f.url)
    check_corpus(f1, files)
    check_corpus(f2, files)
    for p in ("/pgf/down.txt", "/pgf/down.bin", "/pgf/downdir", "/pgf/m.txt"):
        assert f1.get(p).status_code == 404, p
    assert f2.put("/pgf/after.txt", b"after").status_code == 201
    assert f1.get("/pgf/after.txt").content == b"after"
    assert f1.post("/pgf/m.txt", params={"mv.from": "/pgf/small2.txt"}).status_code == 204
    assert f2.get("/pgf/m.txt").content == b"small 2"
    assert f2.delete("/pgf/small3.txt").status_code == 204
    assert f1.get("/pgf/small3.txt").status_code == 404

