"""Persistent inode numbers in the filer (docs/filer-entry-format.md, docs/api-filer-json.md):
every entry gets one when it is created, keeps it across renames, updates and filer
restarts, shares it with its hard links, and never gets one used before, also with two
filers on one PostgreSQL database. Entries stored without one (an older filer's) are
numbered once when the filer opens the store. Real mini / filers, real PostgreSQL."""

import glob
import os
import sqlite3
import threading

import requests

from filer_fixtures import Filer, start_filer, start_mini_with_filer
from test_filer_store_pg import pg  # noqa: F401 - pytest fixture (a private PostgreSQL)

S_IFREG, S_IFDIR = 0o100000, 0o040000


def call(f, op, body):
    return requests.post(f.u("/.api/v1/" + op), json=body, timeout=60)


def lookup(f, path):
    return f.api("lookup", {"path": path})


def mkfile(f, path, data="aGk="):
    return f.api("create", {"entry": {"path": path, "mode": S_IFREG | 0o644, "content": data}})


def test_json_api_inodes(cluster):
    _, f = start_mini_with_filer(cluster)
    assert lookup(f, "/")["inode"] == 1
    d = f.api("create", {"entry": {"path": "/j", "mode": S_IFDIR | 0o755}})
    a = mkfile(f, "/j/a")
    assert d["inode"] > 1 and a["inode"] > 1 and d["inode"] != a["inode"]
    assert lookup(f, "/j/a")["inode"] == a["inode"]
    listed = {e["name"]: e["inode"] for e in f.api("list", {"dir": "/j"})["entries"]}
    assert listed == {"a": a["inode"]}
    # a client may not choose one
    r = call(f, "create", {"entry": {"path": "/j/x", "mode": S_IFREG | 0o644, "inode": 5}})
    assert r.status_code == 400 and "inode" in r.json()["error"], r.text
    r = call(f, "update", {"path": "/j/a", "set": {"inode": 5}})
    assert r.status_code == 400, r.text
    # updates, replacing creates, uploads and renames keep it
    f.api("update", {"path": "/j/a", "set": {"mode": 0o600}})
    assert lookup(f, "/j/a")["inode"] == a["inode"]
    mkfile(f, "/j/a", "Ynll")
    assert lookup(f, "/j/a")["inode"] == a["inode"]
    assert f.put("/j/a", b"uploaded").status_code in (200, 201)
    assert lookup(f, "/j/a")["inode"] == a["inode"]
    f.api("rename", {"from": "/j", "to": "/k"})
    assert lookup(f, "/k")["inode"] == d["inode"] and lookup(f, "/k/a")["inode"] == a["inode"]
    # hard links share it; a copy is a new file
    f.api("link", {"target": "/k/a", "newPath": "/k/b"})
    assert lookup(f, "/k/b")["inode"] == a["inode"]
    listed = {e["name"]: e["inode"] for e in f.api("list", {"dir": "/k"})["entries"]}
    assert listed == {"a": a["inode"], "b": a["inode"]}
    assert f.post("/k/c", params={"cp.from": "/k/a"}).status_code in (200, 201, 204)
    c = lookup(f, "/k/c")["inode"]
    assert c not in (a["inode"], d["inode"], 1)
    # a replaced name of a linked file is a file of its own
    mkfile(f, "/k/b", "bmV3")
    assert lookup(f, "/k/b")["inode"] not in (a["inode"], c)
    assert lookup(f, "/k/a")["inode"] == a["inode"]


def test_inodes_survive_a_filer_restart(cluster):
    mini, f = start_mini_with_filer(cluster)
    f.api("create", {"entry": {"path": "/r", "mode": S_IFDIR | 0o755}})
    for i in range(50):
        mkfile(f, "/r/f%d" % i)
    f.api("link", {"target": "/r/f0", "newPath": "/r/link"})
    before = {e["name"]: e["inode"] for e in f.api("list", {"dir": "/r"})["entries"]}
    rdir = lookup(f, "/r")["inode"]
    cluster.restart(mini)
    assert {e["name"]: e["inode"] for e in f.api("list", {"dir": "/r"})["entries"]} == before
    assert lookup(f, "/r")["inode"] == rdir and lookup(f, "/r/link")["inode"] == before["f0"]
    # new entries continue above every number handed out before the restart
    new = [mkfile(f, "/r/n%d" % i)["inode"] for i in range(20)]
    assert min(new) > max(list(before.values()) + [rdir]) and len(set(new)) == 20


def strip_inode(blob):
    """The blob as a filer without inode numbers wrote it (the inode is the last 8 bytes)."""
    b = bytearray(blob)
    if b[1] & 0x08:
        b[1] &= ~0x08
        del b[-8:]
    return bytes(b)


def test_entries_stored_without_inodes_are_numbered_once(cluster):
    mini, f = start_mini_with_filer(cluster)
    f.api("create", {"entry": {"path": "/old", "mode": S_IFDIR | 0o755}})
    f.api("create", {"entry": {"path": "/old/sub", "mode": S_IFDIR | 0o755}})
    for i in range(30):
        mkfile(f, "/old/sub/f%d" % i)
    f.api("link", {"target": "/old/sub/f0", "newPath": "/old/l1"})
    f.api("link", {"target": "/old/sub/f0", "newPath": "/old/l2"})
    mini.stop()
    (db,) = glob.glob(os.path.join(str(mini.dir), "**", "filer.db"), recursive=True)
    con = sqlite3.connect(db)
    rows = con.execute("SELECT rowid, meta FROM filemeta").fetchall()
    for rowid, meta in rows:
        con.execute("UPDATE filemeta SET meta=? WHERE rowid=?", (strip_inode(meta), rowid))
    for k, v in con.execute("SELECT k, v FROM filer_kv").fetchall():
        if bytes(k).startswith(b"hardlink:"):
            con.execute("UPDATE filer_kv SET v=? WHERE k=?", (strip_inode(v), k))
    con.execute("DELETE FROM filer_kv WHERE k=?", (b"inode-numbered",))
    con.commit()
    unnumbered = sum(1 for (m,) in con.execute("SELECT meta FROM filemeta") if not m[1] & 8)
    con.close()
    assert unnumbered == len(rows) >= 34

    cluster.restart(mini)
    paths = ["/", "/old", "/old/sub", "/old/l1", "/old/l2"] + [
        "/old/sub/f%d" % i for i in range(30)]
    got = {p: lookup(f, p)["inode"] for p in paths}
    assert got["/"] == 1
    assert got["/old/l1"] == got["/old/l2"] == got["/old/sub/f0"]
    others = [v for p, v in got.items() if p not in ("/old/l1", "/old/l2")]
    assert 0 not in others and len(set(others)) == len(others), got
    listed = {e["name"]: e["inode"] for e in f.api("list", {"dir": "/old"})["entries"]}
    assert listed["l1"] == listed["l2"] == got["/old/sub/f0"]
    assert "gave inode numbers to" in mini.log_text()
    # once: a second start changes nothing, and new numbers do not repeat old ones
    cluster.restart(mini)
    assert {p: lookup(f, p)["inode"] for p in paths} == got
    assert mkfile(f, "/old/new")["inode"] not in got.values()


def test_two_filers_on_postgres_never_share_a_number(cluster, pg):  # noqa: F811
    dsn = "host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test" % pg.port
    m = cluster.master()
    cluster.volume(m)
    filers = [start_filer(cluster, m, extra=["-store=postgres", "-postgres.dsn=" + dsn])
              for _ in range(2)]
    filers[0].api("create", {"entry": {"path": "/pg", "mode": S_IFDIR | 0o755}})
    got, errors = [], []

    def worker(f, tag):
        s = requests.Session()
        try:
            for i in range(700):
                r = s.post(f.u("/.api/v1/create"), json={"entry": {
                    "path": "/pg/%s-%d" % (tag, i), "mode": S_IFREG | 0o644}}, timeout=60)
                assert r.status_code in (200, 201), r.text
                got.append(r.json()["inode"])
        except Exception as e:  # reported below
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(f, "%d%d" % (i, j)))
          for i, f in enumerate(filers) for j in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:3]
    assert len(got) == 2800 and len(set(got)) == 2800 and min(got) > 1
    # both filers see the same number for one entry
    e = filers[1].api("lookup", {"path": "/pg/00-1"})["inode"]
    assert filers[0].api("lookup", {"path": "/pg/00-1"})["inode"] == e
    # a restarted filer continues above both filers' blocks
    d = filers[0].daemon
    d.stop()
    d.start()
    assert Filer(d, d.url).api("create", {"entry": {
        "path": "/pg/after", "mode": S_IFREG | 0o644}})["inode"] > max(got)
