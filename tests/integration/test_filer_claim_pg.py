"""Claims on PostgreSQL: the transaction that makes an entry reference assigned ids
takes their leases off the garbage queue, and on PostgreSQL that DELETE is deferred
to the commit's pipeline (filer/store_postgres.c). These tests show it keeps the
guarantees of a DELETE run in place: a claim the server refuses fails the whole
commit (nothing written, the leases stay), and an id claimed and then freed in the
same request ends up queued (deleted now), not lost. Real master, volume server,
filer and a private PostgreSQL server; the refusal is a real trigger on the table."""

import os

import requests

from conftest import wait_until
from test_filer_assign_lease import S_IFREG, assign, blob_status, call, chunk, new_filer, upload
from test_filer_store_pg import pg  # noqa: F401 - pytest fixture (a private PostgreSQL)


def pg_filer(cluster, pg, lease):  # noqa: F811
    dsn = "host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test" % pg.port
    _, v, f = new_filer(cluster, lease=lease, extra=["-store=postgres", "-postgres.dsn=" + dsn])
    psql = os.path.join(pg.bindir, "psql")

    def sql(q):
        return pg.run([psql, "-h", "127.0.0.1", "-p", str(pg.port), "-U", "weedfs", "-d",
                       "weedfs_test", "-v", "ON_ERROR_STOP=1", "-Atc", q]).stdout.strip()
    return v, f, sql


REFUSE = ("CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
          "$$BEGIN RAISE EXCEPTION 'refused by the test'; END$$; "
          "CREATE TRIGGER refuse BEFORE DELETE ON filer_gc "
          "FOR EACH STATEMENT EXECUTE FUNCTION refuse()")


def post(f, op, body):
    return requests.post(f.u("/.api/v1/" + op), json=body, timeout=60)


def test_failed_claim_fails_the_commit(cluster, pg):  # noqa: F811
    v, f, sql = pg_filer(cluster, pg, lease=600)
    rows = lambda: int(sql("SELECT count(*) FROM filer_gc"))  # noqa: E731
    events = lambda p: int(sql(  # noqa: E731
        "SELECT count(*) FROM filer_events WHERE new_path='%s'" % p))
    call(f, "create", {"entry": {"path": "/c", "mode": 0o040755}})
    call(f, "create", {"entry": {"path": "/c/base", "mode": S_IFREG | 0o644}})
    a, b, c, d = assign(f, 4)
    for x, data in ((a, b"a" * 100), (b, b"b" * 200), (c, b"c" * 50), (d, b"d" * 60)):
        upload(x, data)
    call(f, "create", {"entry": {"path": "/c/old", "mode": S_IFREG | 0o644,
                                 "chunks": [chunk(c, 0, 50, 1)]}})
    assert rows() == 3
    base_events = events("/c/base")

    sql(REFUSE)
    # the DELETE of the claim fails on the server: the create fails as a whole
    r = post(f, "create", {"entry": {"path": "/c/x", "mode": S_IFREG | 0o644,
                                     "chunks": [chunk(a, 0, 100, 1)]}})
    assert r.status_code == 500, r.text
    assert r.json()["code"] == "EIO", r.text
    assert post(f, "lookup", {"path": "/c/x"}).status_code == 404
    assert events("/c/x") == 0
    # the same for appendChunks: the entry and its events are as before
    r = post(f, "update", {"path": "/c/base",
                           "set": {"appendChunks": [chunk(b, 0, 200, 2)]}})
    assert r.status_code == 500, r.text
    e = call(f, "lookup", {"path": "/c/base"})
    assert e["size"] == 0 and not e.get("chunks"), e
    assert events("/c/base") == base_events
    # an overwrite: the claim goes out with the queueing of the old chunk, and fails it
    r = post(f, "create", {"entry": {"path": "/c/old", "mode": S_IFREG | 0o644,
                                     "chunks": [chunk(d, 0, 60, 2)]}})
    assert r.status_code == 500, r.text
    e = call(f, "lookup", {"path": "/c/old"})
    assert [x["fileId"] for x in e["chunks"]] == [c["fid"]], e
    assert rows() == 3  # every lease still there, the old chunk not queued
    # a commit without claims is not affected, and the connection is usable
    call(f, "create", {"entry": {"path": "/c/plain", "mode": S_IFREG | 0o644}})

    sql("DROP TRIGGER refuse ON filer_gc")
    call(f, "create", {"entry": {"path": "/c/x", "mode": S_IFREG | 0o644,
                                 "chunks": [chunk(a, 0, 100, 1)]}})
    e = call(f, "update", {"path": "/c/base", "set": {"appendChunks": [chunk(b, 0, 200, 2)]}})
    assert e["size"] == 200
    call(f, "create", {"entry": {"path": "/c/old", "mode": S_IFREG | 0o644,
                                 "chunks": [chunk(d, 0, 60, 2)]}})
    wait_until(lambda: blob_status(c) == 404, timeout=30, what="replaced chunk deleted")
    wait_until(lambda: rows() == 0, timeout=30, what="queue drained")
    assert events("/c/x") == 1
    assert f.get("/c/x").content == b"a" * 100
    assert f.get("/c/base").content == b"b" * 200
    assert f.get("/c/old").content == b"d" * 60


def test_claimed_then_freed_in_one_request(cluster, pg):  # noqa: F811
    """appendChunks and a size that cuts the appended chunk away: the claim comes
    first, then the cut chunk is queued due now, so it is deleted long before its
    lease would end (a claim applied after the enqueue would leak it). An overwrite
    (create over a file with chunks) claims the new ids and frees the old ones."""
    v, f, sql = pg_filer(cluster, pg, lease=600)
    rows = lambda: int(sql("SELECT count(*) FROM filer_gc"))  # noqa: E731
    call(f, "create", {"entry": {"path": "/t", "mode": S_IFREG | 0o644}})
    cut, old, new = assign(f, 3)
    for x in (cut, old, new):
        upload(x, b"x" * 100)
    e = call(f, "update", {"path": "/t", "set": {"appendChunks": [chunk(cut, 0, 100, 1)],
                                                 "size": 0}})
    assert e["size"] == 0 and not e.get("chunks"), e
    wait_until(lambda: blob_status(cut) == 404, timeout=30, what="cut chunk deleted")

    call(f, "create", {"entry": {"path": "/o", "mode": S_IFREG | 0o644,
                                 "chunks": [chunk(old, 0, 100, 1)]}})
    call(f, "create", {"entry": {"path": "/o", "mode": S_IFREG | 0o644,
                                 "chunks": [chunk(new, 0, 100, 2)]}})
    wait_until(lambda: blob_status(old) == 404, timeout=30, what="replaced chunk deleted")
    wait_until(lambda: rows() == 0, timeout=30, what="queue drained")
    assert blob_status(new) == 200
    assert f.get("/o").content == b"x" * 100
