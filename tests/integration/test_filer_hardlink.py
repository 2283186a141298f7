"""Hard links in the filer's JSON entry API (`link`, docs/api-filer-json.md): names
sharing one file, nlink, updates seen through every name, chunks freed only with the
last name, rename keeping the link, and the error cases."""

import requests

from conftest import wait_until
from filer_fixtures import mini_filer  # noqa: F401 - pytest fixture

S_IFREG, S_IFDIR = 0o100000, 0o040000


def call(f, op, body):
    return requests.post(f.u("/.api/v1/" + op), json=body, timeout=60)


def ok(f, op, body):
    r = call(f, op, body)
    assert r.status_code in (200, 201), "%s %s: %s %s" % (op, body, r.status_code, r.text)
    return r.json()


def err(f, op, body, status, code):
    r = call(f, op, body)
    assert r.status_code == status, "%s %s: %s %s" % (op, body, r.status_code, r.text)
    assert r.json()["code"] == code, r.text


def upload(f, data):
    """A chunk on a volume server: (fid, url of the blob)."""
    a = ok(f, "assign", {})["fids"][0]
    url = "http://%s/%s" % (a["url"], a["fid"])
    r = requests.post(url, files={"file": ("b", data)}, timeout=30)
    assert r.status_code in (200, 201), r.text
    return a["fid"], url


def chunk(fid, size, mtime=1):
    return {"fileId": fid, "offset": 0, "size": size, "mtimeNs": mtime}


def nlink(f, path):
    return ok(f, "lookup", {"path": path})["nlink"]


def test_link_read_update_nlink_and_free(mini_filer):
    f = mini_filer
    ok(f, "create", {"entry": {"path": "/hl", "mode": S_IFDIR | 0o755}})
    d1 = b"first content " * 100
    fid1, url1 = upload(f, d1)
    ok(f, "create", {"entry": {"path": "/hl/a", "mode": S_IFREG | 0o644,
                               "chunks": [chunk(fid1, len(d1))]}})
    e = ok(f, "link", {"target": "/hl/a", "newPath": "/hl/b"})
    assert e["nlink"] == 2 and e["size"] == len(d1)
    assert nlink(f, "/hl/a") == 2 and nlink(f, "/hl/b") == 2
    # both names read the same content over plain HTTP GET
    assert f.get("/hl/a").content == d1
    assert f.get("/hl/b").content == d1
    ok(f, "link", {"target": "/hl/b", "newPath": "/hl/c"})
    assert [nlink(f, p) for p in ("/hl/a", "/hl/b", "/hl/c")] == [3, 3, 3]
    # the listing shows the shared file too
    lst = ok(f, "list", {"dir": "/hl"})["entries"]
    assert sorted((x["nlink"], x["size"]) for x in lst) == [(3, len(d1))] * 3

    # new chunks written through one name are seen through the others
    d2 = b"second" * 300
    fid2, url2 = upload(f, d2)
    e = ok(f, "update", {"path": "/hl/b", "set": {"chunks": [chunk(fid2, len(d2), 2)]}})
    assert e["size"] == len(d2) and e["nlink"] == 3
    for p in ("/hl/a", "/hl/b", "/hl/c"):
        assert f.get(p).content == d2, p
        assert ok(f, "lookup", {"path": p})["chunks"][0]["fileId"] == fid2
    # the replaced chunk is no longer referenced by any name: freed
    wait_until(lambda: requests.get(url1, timeout=10).status_code == 404, timeout=20,
               what="replaced chunk deleted")
    # attributes are shared as well
    ok(f, "update", {"path": "/hl/c", "set": {"mode": 0o600}})
    assert ok(f, "lookup", {"path": "/hl/a"})["mode"] == S_IFREG | 0o600

    # deletes count down; the chunk stays until the last name goes
    ok(f, "delete", {"path": "/hl/a"})
    assert nlink(f, "/hl/b") == 2 and nlink(f, "/hl/c") == 2
    assert f.get("/hl/c").content == d2
    r = f.delete("/hl/b")  # the SeaweedFS-style DELETE respects links too
    assert r.status_code in (200, 204), r.text
    assert nlink(f, "/hl/c") == 1
    f.gc_pass()
    assert requests.get(url2, timeout=10).status_code == 200, "chunk freed while still linked"
    assert f.get("/hl/c").content == d2
    ok(f, "delete", {"path": "/hl/c"})
    wait_until(lambda: requests.get(url2, timeout=10).status_code == 404, timeout=20,
               what="chunk deleted with the last link")


def test_rename_keeps_link(mini_filer):
    f = mini_filer
    ok(f, "create", {"entry": {"path": "/hr", "mode": S_IFDIR | 0o755}})
    ok(f, "create", {"entry": {"path": "/hr/sub", "mode": S_IFDIR | 0o755}})
    d = b"rename me" * 50
    fid, url = upload(f, d)
    ok(f, "create", {"entry": {"path": "/hr/a", "mode": S_IFREG | 0o644,
                               "chunks": [chunk(fid, len(d))]}})
    ok(f, "link", {"target": "/hr/a", "newPath": "/hr/b"})
    ok(f, "rename", {"from": "/hr/b", "to": "/hr/sub/moved"})
    assert f.get("/hr/sub/moved").content == d
    assert nlink(f, "/hr/sub/moved") == 2
    # renaming one name onto another name of the same file does nothing (POSIX)
    ok(f, "rename", {"from": "/hr/a", "to": "/hr/sub/moved"})
    assert nlink(f, "/hr/a") == 2
    d2 = b"changed after rename" * 20
    fid2, _ = upload(f, d2)
    ok(f, "update", {"path": "/hr/sub/moved", "set": {"chunks": [chunk(fid2, len(d2), 2)]}})
    assert f.get("/hr/a").content == d2
    # a directory holding a link deleted recursively drops one name only
    ok(f, "delete", {"path": "/hr/sub", "recursive": True})
    assert nlink(f, "/hr/a") == 1
    assert f.get("/hr/a").content == d2


def test_link_errors(mini_filer):
    f = mini_filer
    ok(f, "create", {"entry": {"path": "/he", "mode": S_IFDIR | 0o755}})
    ok(f, "create", {"entry": {"path": "/he/f", "mode": S_IFREG | 0o644, "content": "eA=="}})
    ok(f, "create", {"entry": {"path": "/he/g", "mode": S_IFREG | 0o644, "content": "eQ=="}})
    err(f, "link", {"target": "/he", "newPath": "/he2"}, 409, "EPERM")
    err(f, "link", {"target": "/he/f", "newPath": "/he/g"}, 409, "EEXIST")
    err(f, "link", {"target": "/he/missing", "newPath": "/he/x"}, 404, "ENOENT")
    err(f, "link", {"target": "/he/f", "newPath": "/nodir/x"}, 404, "ENOENT")
    err(f, "link", {"target": "/he/f", "newPath": "/he/g/x"}, 409, "ENOTDIR")
    err(f, "link", {"target": "/he/f"}, 400, "EINVAL")
    err(f, "link", {"target": "/he/f", "newPath": "/he/y", "bogus": 1}, 400, "EINVAL")
    assert nlink(f, "/he/f") in (0, 1)  # nothing changed
    # inline content is shared as well, and a copy is a file of its own
    ok(f, "link", {"target": "/he/f", "newPath": "/he/h"})
    assert f.get("/he/h").content == b"x"
    r = f.post("/he/copy", params={"cp.from": "/he/h"})
    assert r.status_code in (200, 201, 204), r.text
    assert f.get("/he/copy").content == b"x"
    assert nlink(f, "/he/copy") == 1 and nlink(f, "/he/f") == 2


def test_put_over_a_link_leaves_the_group(mini_filer):
    """A plain HTTP PUT replaces the name (like create-and-rename): the other
    name keeps the shared content and drops to nlink 1; the shared chunk is
    freed only when that last name goes too. Append to a linked name is
    refused rather than written to the stub."""
    f = mini_filer
    ok(f, "create", {"entry": {"path": "/hp", "mode": S_IFDIR | 0o755}})
    d1 = b"shared bytes " * 200
    fid1, url1 = upload(f, d1)
    ok(f, "create", {"entry": {"path": "/hp/a", "mode": S_IFREG | 0o644,
                               "chunks": [chunk(fid1, len(d1))]}})
    ok(f, "link", {"target": "/hp/a", "newPath": "/hp/b"})
    r = f.put("/hp/b", b"x", params={"op": "append"})
    assert r.status_code == 409, r.text
    assert f.get("/hp/a").content == d1
    r = f.put("/hp/b", b"a new, unlinked file")
    assert r.status_code == 201, r.text
    assert f.get("/hp/b").content == b"a new, unlinked file"
    assert f.get("/hp/a").content == d1
    assert nlink(f, "/hp/a") == 1 and nlink(f, "/hp/b") == 1
    f.gc_pass()
    assert requests.get(url1, timeout=10).status_code == 200, "chunk freed while /hp/a uses it"
    assert f.delete("/hp/a").status_code in (200, 204)
    wait_until(lambda: requests.get(url1, timeout=10).status_code == 404, timeout=30,
               what="the shared chunk to be freed with the last name")
