"""File ids handed out by the JSON API's assign are leased (docs/api-filer-json.md,
"assign"): the filer records each in its persistent garbage queue, due when
-assignLeaseSeconds runs out, and the commit that makes an entry reference an id
(create, update chunks / appendChunks) claims it in the same transaction. A blob a
dead client stored and never committed is deleted from its volume after the lease;
a committed one never is. Real master, volume server, filer (SQLite and PostgreSQL)
and, for the crash case, a real weedfs-mount killed with SIGKILL."""

import os
import subprocess
import time

import requests

from conftest import WEEDFS, file_count, free_port, wait_until
from filer_fixtures import start_filer
from mount_fixtures import start_mount
from test_filer_store_pg import pg  # noqa: F401 - pytest fixture (a private PostgreSQL)
from test_filer_tus import MiB, delete_count
from test_filer_tus_expiry import gc_rows

S_IFREG = 0o100000
LEASE = 3


def call(f, op, body):
    r = requests.post(f.u("/.api/v1/" + op), json=body, timeout=60)
    assert r.status_code in (200, 201), "%s %s: %s %s" % (op, body, r.status_code, r.text)
    return r.json()


def assign(f, n):
    fids = call(f, "assign", {"count": n})["fids"]
    assert len(fids) == n
    return fids


def upload(a, data):
    r = requests.post("http://%s/%s" % (a["url"], a["fid"]), files={"file": ("b", data)},
                      timeout=30)
    assert r.status_code in (200, 201), r.text


def blob_status(a):
    return requests.get("http://%s/%s" % (a["url"], a["fid"]), timeout=10).status_code


def chunk(a, off, size, mtime):
    return {"fileId": a["fid"], "offset": off, "size": size, "mtimeNs": mtime}


def new_filer(cluster, lease=LEASE, extra=()):
    m = cluster.master()
    v = cluster.volume(m)
    f = start_filer(cluster, m, extra=["-assignLeaseSeconds=%d" % lease] + list(extra))
    return m, v, f


def leases_expire_commits_stay(f, v, rows):
    """The scenario on one filer; rows() counts the garbage queue."""
    call(f, "create", {"entry": {"path": "/l", "mode": 0o040755}})
    # replaced by update {chunks} below: committed, then freed by the replacement
    old = assign(f, 1)[0]
    upload(old, b"o" * 100)
    call(f, "create", {"entry": {"path": "/l/chunks", "mode": S_IFREG | 0o644,
                                 "chunks": [chunk(old, 0, 100, 1)]}})
    assert rows() == 0  # claimed by its create

    t0 = time.monotonic()
    a = assign(f, 5)
    orphan, created, appended, replaced, unused = a
    assert rows() == 5  # one lease per id handed out
    data = {x["fid"]: os.urandom(1000 + i) for i, x in enumerate(a[:4])}
    for x in a[:4]:
        upload(x, data[x["fid"]])
    d0 = delete_count(v)

    # committed three ways: create {chunks}, update {appendChunks}, update {chunks}
    call(f, "create", {"entry": {"path": "/l/created", "mode": S_IFREG | 0o644,
                                 "chunks": [chunk(created, 0, 1001, 1)]}})
    call(f, "create", {"entry": {"path": "/l/appended", "mode": S_IFREG | 0o644}})
    e = call(f, "update", {"path": "/l/appended",
                           "set": {"appendChunks": [chunk(appended, 0, 1002, 2)]}})
    assert e["size"] == 1002
    e = call(f, "update", {"path": "/l/chunks",
                           "set": {"chunks": [chunk(replaced, 0, 1003, 3)]}})
    assert e["size"] == 1003 and len(e["chunks"]) == 1
    # two leases left (orphan, unused); the replaced chunk is queued due now
    wait_until(lambda: blob_status(old) == 404, timeout=30, what="replaced chunk freed")
    assert rows() == 2
    assert time.monotonic() - t0 < LEASE, "too slow to check before the lease ends"
    assert blob_status(orphan) == 200  # still leased

    # the lease runs out: the stored orphan is deleted, the never-stored id just goes
    wait_until(lambda: blob_status(orphan) == 404, timeout=30, what="orphan deleted")
    wait_until(lambda: rows() == 0, timeout=30, what="expired leases done")
    assert delete_count(v) == d0 + 2  # the orphan and the replaced chunk, nothing else
    # well past the lease, after a pass of the garbage worker: every committed blob is
    # still there and read back
    time.sleep(max(0, t0 + 2 * LEASE + 1 - time.monotonic()))
    canaries = f.gc_pass()
    for x, path in ((created, "/l/created"), (appended, "/l/appended"),
                    (replaced, "/l/chunks")):
        assert blob_status(x) == 200, path
        assert f.get(path).content == data[x["fid"]], path
    assert delete_count(v) == d0 + 2 + canaries
    wait_until(lambda: rows() == 0, timeout=30, what="the canaries marked done")
    assert blob_status(unused) == 404
    # an update without chunks claims nothing and changes nothing here
    call(f, "update", {"path": "/l/created", "set": {"mode": 0o600}})
    assert rows() == 0


def test_assigned_ids_leased_sqlite(cluster):
    _, v, f = new_filer(cluster)
    leases_expire_commits_stay(f, v, lambda: gc_rows(f))


def test_assigned_ids_leased_postgres(cluster, pg):  # noqa: F811
    dsn = "host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test" % pg.port
    _, v, f = new_filer(cluster, extra=["-store=postgres", "-postgres.dsn=" + dsn])
    psql = os.path.join(pg.bindir, "psql")

    def rows():
        out = pg.run([psql, "-h", "127.0.0.1", "-p", str(pg.port), "-U", "weedfs", "-d",
                      "weedfs_test", "-Atc", "SELECT count(*) FROM filer_gc"]).stdout
        return int(out.strip())
    leases_expire_commits_stay(f, v, rows)


def test_free_chunks_ends_the_lease(cluster):
    """freeChunks on a leased id deletes it now, not when a long lease ends; a failed
    commit leaves the lease in place."""
    _, v, f = new_filer(cluster, lease=600)
    a, b = assign(f, 2)
    upload(a, b"a" * 10)
    upload(b, b"b" * 10)
    assert gc_rows(f) == 2
    # a commit that fails (no parent) claims nothing
    r = requests.post(f.u("/.api/v1/create"), json={"entry": {
        "path": "/nope/x", "mode": S_IFREG | 0o644, "chunks": [chunk(b, 0, 10, 1)]}}, timeout=30)
    assert r.status_code == 404, r.text
    assert gc_rows(f) == 2
    assert call(f, "freeChunks", {"fileIds": [a["fid"]]}) == {"queued": 1}
    wait_until(lambda: blob_status(a) == 404, timeout=15, what="freed leased blob deleted")
    wait_until(lambda: gc_rows(f) == 1, timeout=15, what="freed id done")
    assert blob_status(b) == 200


def test_restart_keeps_leases(cluster):
    """The leases live in the store: a filer killed and restarted still deletes what
    was never committed, at the lease's end (not at once, not never)."""
    _, v, f = new_filer(cluster, lease=8)
    t0 = time.monotonic()
    kept, lost = assign(f, 2)
    upload(kept, b"k" * 50)
    upload(lost, b"l" * 50)
    call(f, "create", {"entry": {"path": "/kept", "mode": S_IFREG | 0o644,
                                 "chunks": [chunk(kept, 0, 50, 1)]}})
    f.daemon.kill9()
    f.daemon.start()
    assert gc_rows(f) == 1
    # the restarted filer's worker has made a pass: it left the leased orphan alone
    f.gc_pass()
    status = blob_status(lost)
    if time.monotonic() - t0 < 8:  # (else the lease may have run out meanwhile)
        assert status == 200
    wait_until(lambda: blob_status(lost) == 404, timeout=40, what="leased orphan deleted")
    wait_until(lambda: gc_rows(f) == 0, timeout=30, what="the orphan marked done")
    assert blob_status(kept) == 200 and f.get("/kept").content == b"k" * 50


def test_bad_lease_flag(cluster, tmp_path):
    m = cluster.master()
    for bad in ("0", "-1", "x", "2592001"):
        p = subprocess.run([WEEDFS, "filer", "-ip=127.0.0.1", "-port=%d" % free_port(),
                            "-master=%s" % m.url, "-dir=%s" % tmp_path,
                            "-assignLeaseSeconds=" + bad], capture_output=True, timeout=30)
        assert p.returncode != 0, bad
        assert b"assignLeaseSeconds" in p.stderr + p.stdout, bad


def test_killed_mount_leaks_nothing(cluster):
    """A mount killed with uncommitted background uploads: after the lease its chunks
    are deleted; what it committed before stays."""
    _, v, f = new_filer(cluster)
    mnt = start_mount(cluster, f.url, extra=["-chunkSizeMB=1", "-commitSeconds=0"])
    kept = os.urandom(2 * MiB + 5)
    with open(mnt.p("kept.bin"), "wb") as fh:
        fh.write(kept)
    assert f.get("/kept.bin").content == kept  # committed at close
    files0, d0 = file_count(v), delete_count(v)

    fd = os.open(mnt.p("dead.bin"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, os.urandom(3 * MiB))
    # three full 1 MiB chunks uploaded in the background, none committed
    wait_until(lambda: file_count(v) >= files0 + 3, timeout=30, what="background uploads")
    time.sleep(0.5)
    r = requests.post(f.u("/.api/v1/lookup"), json={"path": "/dead.bin"}, timeout=30)
    assert r.status_code == 404 or not r.json().get("chunks"), r.text
    mnt.daemon.kill9()
    try:
        os.close(fd)
    except OSError:
        pass
    stored = file_count(v) - files0
    assert stored >= 3

    wait_until(lambda: delete_count(v) >= d0 + stored, timeout=40, what="orphans deleted")
    wait_until(lambda: gc_rows(f) == 0, timeout=40, what="garbage queue drained")
    # a pass of the garbage worker later, nothing else was deleted
    canaries = f.gc_pass()
    assert delete_count(v) == d0 + stored + canaries
    assert f.get("/kept.bin").content == kept
