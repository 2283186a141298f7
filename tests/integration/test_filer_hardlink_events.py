"""Hard links seen through every name: the HTTP directory listing merges the shared
record, and a change through one name puts an event for every other name on the
metadata stream (docs/api-filer-json.md, "link"; filer/filer_hardlink.h)."""

import re

from filer_fixtures import mini_filer  # noqa: F401 - pytest fixture
from test_filer_events import Stream, kind
from test_filer_hardlink import S_IFDIR, S_IFREG, chunk, nlink, ok, upload


def listing(f, d):
    r = f.get(d + "/", headers={"Accept": "application/json"})
    assert r.status_code == 200, r.text
    return {e["FullPath"]: e for e in r.json()["Entries"] or []}


def test_http_listing_merges_links(mini_filer):
    f = mini_filer
    ok(f, "create", {"entry": {"path": "/hx", "mode": S_IFDIR | 0o755}})
    d1 = b"listing " * 300
    fid1, _ = upload(f, d1)
    ok(f, "create", {"entry": {"path": "/hx/a", "mode": S_IFREG | 0o644,
                               "chunks": [chunk(fid1, len(d1))]}})
    ok(f, "link", {"target": "/hx/a", "newPath": "/hx/b"})
    ok(f, "link", {"target": "/hx/b", "newPath": "/hx/c"})
    # change the file through /hx/c: /hx/a's and /hx/b's stubs are now stale
    d2 = b"grown bigger " * 400
    fid2, _ = upload(f, d2)
    ok(f, "update", {"path": "/hx/c", "set": {"chunks": [chunk(fid2, len(d2), 5)],
                                               "mode": 0o600, "mtimeNs": 1234567890123456789}})
    ok(f, "setXattr", {"path": "/hx/c", "name": "user.k", "value": "dg=="})
    ls = listing(f, "/hx")
    assert sorted(ls) == ["/hx/a", "/hx/b", "/hx/c"]
    for p, e in ls.items():
        assert e["Nlink"] == 3, (p, e)
        assert e["FileSize"] == len(d2), (p, e)
        assert e["Mode"] == S_IFREG | 0o600, (p, e)
        assert e["Mtime"] == ls["/hx/c"]["Mtime"], (p, e)
        assert [c["file_id"] for c in e["chunks"]] == [fid2], (p, e)
        assert e["Extended"] == {"user.k": "v"}, (p, e)
    # the HTML listing shows the shared size too
    r = f.get("/hx/", headers={"Accept": "text/html"})
    assert r.status_code == 200
    sizes = re.findall(r'<a href="[abc]">[abc]</a></td><td>(\d+)</td>', r.text)
    assert sizes == [str(len(d2))] * 3, r.text
    # the JSON API and ?metadata=true agree with the listing
    for p in ls:
        assert f.get(p).content == d2
        assert nlink(f, p) == 3
    # a delete through one name is seen in the listing of the others
    ok(f, "delete", {"path": "/hx/b"})
    ls = listing(f, "/hx")
    assert sorted(ls) == ["/hx/a", "/hx/c"]
    assert [e["Nlink"] for e in ls.values()] == [2, 2]


def fan(evs):
    """The events' kinds, sorted (the order among one transaction's names is not fixed)."""
    return sorted(kind(e) for e in evs)


def test_events_for_every_name(mini_filer):
    f = mini_filer
    ok(f, "create", {"entry": {"path": "/hy", "mode": S_IFDIR | 0o755}})
    ok(f, "create", {"entry": {"path": "/hy/d", "mode": S_IFDIR | 0o755}})
    s = Stream(f, pathPrefix="/hy")
    d1 = b"one " * 600
    fid1, _ = upload(f, d1)
    ok(f, "create", {"entry": {"path": "/hy/a", "mode": S_IFREG | 0o644,
                               "chunks": [chunk(fid1, len(d1))]}})
    assert fan(s.events(1)) == [("create", "/hy/a")]
    ok(f, "link", {"target": "/hy/a", "newPath": "/hy/b"})
    assert fan(s.events(2)) == [("create", "/hy/b"), ("update", "/hy/a")]
    # a new link to a linked file: the target, the new name and the other name
    ok(f, "link", {"target": "/hy/b", "newPath": "/hy/d/c"})
    evs = s.events(3)
    assert fan(evs) == [("create", "/hy/d/c"), ("update", "/hy/a"), ("update", "/hy/b")]
    assert all((e["newEntry"] or {}).get("nlink") == 3 for e in evs)
    assert s.quiet(0.3) == []

    # update through one name: one event per name, each carrying the new file
    d2 = b"two " * 700
    fid2, _ = upload(f, d2)
    ok(f, "update", {"path": "/hy/b", "set": {"chunks": [chunk(fid2, len(d2), 2)]}})
    evs = s.events(3)
    assert fan(evs) == [("update", "/hy/a"), ("update", "/hy/b"), ("update", "/hy/d/c")]
    for e in evs:
        assert e["newEntry"]["size"] == len(d2) and e["newEntry"]["nlink"] == 3, e
        assert e["newEntry"]["chunks"][0]["fileId"] == fid2, e
        assert e["oldEntry"]["size"] == len(d1), e
        assert e["directory"] == e["newEntry"]["fullPath"].rsplit("/", 1)[0]
    ts = [e["tsNs"] for e in evs]
    assert ts == sorted(ts) and len(set(ts)) == 3
    assert s.quiet(0.3) == []

    # xattr and truncate
    ok(f, "setXattr", {"path": "/hy/d/c", "name": "user.x", "value": "eA=="})
    assert fan(s.events(3)) == [("update", "/hy/a"), ("update", "/hy/b"), ("update", "/hy/d/c")]
    ok(f, "update", {"path": "/hy/a", "set": {"size": 10}})
    evs = s.events(3)
    assert fan(evs) == [("update", "/hy/a"), ("update", "/hy/b"), ("update", "/hy/d/c")]
    assert all(e["newEntry"]["size"] == 10 for e in evs)

    # renaming the directory above a name keeps that name in the group
    ok(f, "rename", {"from": "/hy/d", "to": "/hy/e"})
    assert fan(s.events(1)) == [("rename", "/hy/d", "/hy/e")]
    assert s.quiet(0.3) == []  # a rename changes no shared state
    # and so does a SeaweedFS-style mv
    r = f.post("/hy/f", params={"mv.from": "/hy/e"})
    assert r.status_code == 204, r.text
    assert fan(s.events(1)) == [("rename", "/hy/e", "/hy/f")]
    ok(f, "update", {"path": "/hy/b", "set": {"mode": 0o640}})
    assert fan(s.events(3)) == [("update", "/hy/a"), ("update", "/hy/b"), ("update", "/hy/f/c")]

    # an unlink: the delete, and nlink 2 for the others
    ok(f, "delete", {"path": "/hy/a"})
    evs = s.events(3)
    assert fan(evs) == [("delete", "/hy/a"), ("update", "/hy/b"), ("update", "/hy/f/c")]
    assert all(e["newEntry"]["nlink"] == 2 for e in evs if e["newEntry"])
    assert s.quiet(0.3) == []

    # a PUT over one name leaves the group: the other name sees nlink 1
    assert f.put("/hy/b", b"fresh file").status_code == 201
    evs = s.events(2)
    assert fan(evs) == [("update", "/hy/b"), ("update", "/hy/f/c")]
    other = [e for e in evs if e["newEntry"]["fullPath"] == "/hy/f/c"][0]
    assert other["newEntry"]["nlink"] == 1 and other["newEntry"]["size"] == 10
    assert s.quiet(0.3) == []
    # the last name: just its delete, beside the parent losing a subdirectory link
    ok(f, "delete", {"path": "/hy/f", "recursive": True})
    evs = s.events(3)
    assert sorted(k[0] for k in fan(evs)) == ["delete", "delete", "update"]
    parent = [e for e in evs if kind(e)[0] == "update"][0]
    assert kind(parent) == ("update", "/hy"), parent
    assert parent["newEntry"]["nlink"] == parent["oldEntry"]["nlink"] - 1, parent
    assert s.quiet(0.3) == []
    s.close()


def test_tagging_a_linked_name_tags_the_file(mini_filer):
    f = mini_filer
    assert f.put("/ht/a.txt", b"tagged").status_code == 201
    ok(f, "link", {"target": "/ht/a.txt", "newPath": "/ht/b.txt"})
    r = f.put("/ht/b.txt", b"", params={"tagging": ""}, headers={"Seaweed-k": "v"})
    assert r.status_code == 202, r.text
    for p in ("/ht/a.txt", "/ht/b.txt"):
        m = f.meta(p)
        assert m["Extended"] == {"Seaweed-K": "v"}, (p, m)
        assert m["Nlink"] == 2
        assert f.get(p).content == b"tagged"
    assert f.delete("/ht/a.txt", params={"tagging": ""}).status_code == 202
    assert "Extended" not in f.meta("/ht/b.txt")


def test_rename_events_carry_the_linked_file(mini_filer):
    """Renaming a hard-linked name (JSON rename, exchange, mv.from): the event's old and
    new entries are the shared file (size, chunks, nlink), not the name's stale stub."""
    f = mini_filer
    ok(f, "create", {"entry": {"path": "/hr", "mode": S_IFDIR | 0o755}})
    d1 = b"small " * 100
    fid1, _ = upload(f, d1)
    ok(f, "create", {"entry": {"path": "/hr/a", "mode": S_IFREG | 0o644,
                               "chunks": [chunk(fid1, len(d1))]}})
    ok(f, "link", {"target": "/hr/a", "newPath": "/hr/b"})
    # grow the file through /hr/b: /hr/a's stub keeps the old size
    d2 = b"much bigger now " * 500
    fid2, _ = upload(f, d2)
    ok(f, "update", {"path": "/hr/b", "set": {"chunks": [chunk(fid2, len(d2), 2)]}})
    s = Stream(f, pathPrefix="/hr")

    def check(ev, old, new):
        assert kind(ev) == ("rename", old, new), ev
        for side in ("oldEntry", "newEntry"):
            e = ev[side]
            assert e["size"] == len(d2), (side, e)
            assert [c["fileId"] for c in e["chunks"]] == [fid2], (side, e)
            assert e["nlink"] == 2, (side, e)

    ok(f, "rename", {"from": "/hr/a", "to": "/hr/c"})
    evs = s.events(1)
    check(evs[0], "/hr/a", "/hr/c")
    assert s.quiet(0.3) == []
    r = f.post("/hr/d", params={"mv.from": "/hr/c"})
    assert r.status_code == 204, r.text
    check(s.events(1)[0], "/hr/c", "/hr/d")
    # exchange with an unlinked file: the linked side is resolved, the other untouched
    ok(f, "create", {"entry": {"path": "/hr/x", "mode": S_IFREG | 0o644,
                               "content": "eHl6"}})
    assert kind(s.events(1)[0]) == ("create", "/hr/x")
    ok(f, "rename", {"from": "/hr/d", "to": "/hr/x", "exchange": True})
    evs = {kind(e): e for e in s.events(2)}
    check(evs[("rename", "/hr/d", "/hr/x")], "/hr/d", "/hr/x")
    other = evs[("rename", "/hr/x", "/hr/d")]
    assert other["newEntry"]["size"] == 3 and other["newEntry"].get("nlink", 1) == 1
    # the renamed name still reads the shared file
    assert f.get("/hr/x").content == d2 and f.get("/hr/b").content == d2
    s.close()
