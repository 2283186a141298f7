"""The filer's JSON entry API (POST /.api/v1/<op>, docs/api-filer-json.md): each
operation, the POSIX rename rules, atomic conditions under races, error codes and
bad input."""

import base64
import json
import struct
import threading
import uuid

import pytest
import requests

from filer_fixtures import mini_filer  # noqa: F401 - pytest fixture
from test_filer_store_pg import pg  # noqa: F401 - pytest fixture (a private PostgreSQL)

S_IFREG, S_IFDIR, S_IFLNK = 0o100000, 0o040000, 0o120000


def call(f, op, body, raw=None):
    url = f.u("/.api/v1/" + op)
    if raw is not None:
        return requests.post(url, data=raw, timeout=60)
    return requests.post(url, json=body, timeout=60)


def ok(f, op, body, status=(200, 201)):
    r = call(f, op, body)
    assert r.status_code in status, "%s %s: %s %s" % (op, body, r.status_code, r.text)
    return r.json()


def err(f, op, body, status, code):
    r = call(f, op, body)
    assert r.status_code == status, "%s %s: %s %s" % (op, body, r.status_code, r.text)
    j = r.json()
    assert j["code"] == code and j["error"], j
    return j


def mkdir(f, path, mode=0o755):
    return ok(f, "create", {"entry": {"path": path, "mode": S_IFDIR | mode}})


def mkfile(f, path, data=b"", **kw):
    e = {"path": path, "mode": S_IFREG | 0o644, "content": base64.b64encode(data).decode()}
    e.update(kw)
    return ok(f, "create", {"entry": e})


def exists(f, path):
    r = call(f, "lookup", {"path": path})
    assert r.status_code in (200, 404), r.text
    return r.status_code == 200


def b64(raw):
    return base64.b64encode(raw).decode()


def test_names_that_are_not_utf8(mini_filer):
    """Paths, names and symlink targets are bytes: a client sends <field>B64 for bytes
    that are not UTF-8, and answers carry fullPathB64/nameB64 (fullPath shows U+FFFD)."""
    f = mini_filer
    mkdir(f, "/nb")
    name = b"caf\xe9-\xff"  # Latin-1, not UTF-8
    path = b"/nb/" + name
    e = ok(f, "create", {"entry": {"pathB64": b64(path), "mode": S_IFREG | 0o644,
                                   "content": b64(b"latin")}})
    assert base64.b64decode(e["fullPathB64"]) == path
    assert base64.b64decode(e["nameB64"]) == name
    assert e["fullPath"] == "/nb/caf\ufffd-\ufffd" and e["name"] == "caf\ufffd-\ufffd"
    assert base64.b64decode(ok(f, "lookup", {"pathB64": b64(path)})["fullPathB64"]) == path
    err(f, "lookup", {"path": "/nb/caf\ufffd-\ufffd"}, 404, "ENOENT")  # not the same name
    # a listing, paged from a byte start name
    mkfile(f, "/nb/a")
    page = ok(f, "list", {"dir": "/nb", "limit": 1})
    assert [x["name"] for x in page["entries"]] == ["a"] and page["more"]
    page = ok(f, "list", {"dir": "/nb", "startName": "a", "limit": 10})
    assert [base64.b64decode(x["nameB64"]) for x in page["entries"]] == [name]
    assert base64.b64decode(page["lastNameB64"]) == name
    page = ok(f, "list", {"dir": "/nb", "prefixB64": b64(b"caf\xe9"), "limit": 10})
    assert len(page["entries"]) == 1
    # rename, link and a symlink whose target is bytes too
    to = b"/nb/\xfe"
    ok(f, "rename", {"fromB64": b64(path), "toB64": b64(to)})
    err(f, "lookup", {"pathB64": b64(path)}, 404, "ENOENT")
    ok(f, "link", {"targetB64": b64(to), "newPathB64": b64(b"/nb/\xfd")})
    ln = ok(f, "create", {"entry": {"path": "/nb/sym", "mode": S_IFLNK | 0o777,
                                    "symlinkTargetB64": b64(b"../\xff")}})
    assert base64.b64decode(ln["symlinkTargetB64"]) == b"../\xff"
    # the SeaweedFS-style HTTP API reaches the same bytes through percent-encoding
    r = requests.get(f.u("/nb/%FE"), timeout=10)
    assert r.status_code == 200 and r.content == b"latin"
    # bad forms: both fields, bad base64, a NUL byte, a name too long
    for body in ({"path": "/nb/a", "pathB64": b64(b"/nb/a")}, {"pathB64": "***"},
                 {"pathB64": b64(b"/nb/a\x00b")}, {"pathB64": b64(b"/nb/" + b"\xff" * 256)},
                 {"pathB64": 5}):
        err(f, "lookup", body, 400, "EINVAL")
    ok(f, "delete", {"pathB64": b64(to)})
    err(f, "lookup", {"pathB64": b64(to)}, 404, "ENOENT")
    assert ok(f, "lookup", {"pathB64": b64(b"/nb/\xfd")})["nlink"] == 1


# ---- lookup, list, create ----------------------------------------------------


def test_create_lookup_round_trip_exact_64bit(mini_filer):
    f = mini_filer
    mkdir(f, "/j1")
    big = 9007199254740993  # 2^53 + 1: not representable as a double
    e = mkfile(f, "/j1/a", b"hello", uid=4000000000, gid=7, mtimeNs=big,
               ctimeNs=big, crtimeNs=1)
    assert e["fullPath"] == "/j1/a" and e["size"] == 5 and len(e["etag"]) == 16
    r = call(f, "lookup", {"path": "/j1/a"})
    assert r.status_code == 200
    assert '"mtimeNs":9007199254740993' in r.text
    got = r.json()
    assert got["uid"] == 4000000000 and got["gid"] == 7 and got["mode"] == S_IFREG | 0o644
    assert got["etag"] == e["etag"]
    assert base64.b64decode(got["content"]) == b"hello"
    # the same file through the plain HTTP API
    assert f.get("/j1/a").content == b"hello"
    root = ok(f, "lookup", {"path": "/"})
    assert root["isDirectory"] is True


def test_lookup_in_stored_encoding(mini_filer):
    """Accept: application/x-weedfs-entry gets the entry as stored
    (docs/filer-entry-format.md) instead of JSON; errors stay JSON."""
    f = mini_filer
    mkdir(f, "/j7")
    big = 9007199254740993
    mkfile(f, "/j7/a", b"hello", uid=4000000000, mtimeNs=big, mime="text/x-j7")
    url = f.u("/.api/v1/lookup")
    binary = {"Accept": "application/x-weedfs-entry"}
    r = requests.post(url, json={"path": "/j7/a"}, headers=binary, timeout=60)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/x-weedfs-entry"
    b = r.content
    assert b[0] == 1  # the version
    mode, uid = struct.unpack(">II", b[2:10])
    size, mtime = struct.unpack(">Qq", b[14:30])
    assert (mode, uid, size, mtime) == (S_IFREG | 0o644, 4000000000, 5, big)
    assert b[62:64] == struct.pack(">H", 9) and b[64:73] == b"text/x-j7"
    assert b"\x00\x00\x00\x05hello" in b  # the inline content, length first
    # anything else asked (or nothing) is JSON
    for h in ({}, {"Accept": "application/json"}, {"Accept": "*/*"}):
        j = requests.post(url, json={"path": "/j7/a"}, headers=h, timeout=60)
        assert j.status_code == 200 and j.json()["size"] == 5, (h, j.text)
    miss = requests.post(url, json={"path": "/j7/none"}, headers=binary, timeout=60)
    assert miss.status_code == 404 and miss.json()["code"] == "ENOENT"
    bad = requests.post(url, data=b"{", headers=binary, timeout=60)
    assert bad.status_code == 400 and bad.json()["code"] == "EINVAL"


def raw_call(f, op, doc, raw, header=None):
    """op with raw content after the JSON, X-Weedfs-Content-Length saying how much."""
    body = json.dumps(doc).encode() + raw
    h = {"X-Weedfs-Content-Length": str(len(raw)) if header is None else header}
    return requests.post(f.u("/.api/v1/" + op), data=body, headers=h, timeout=60)


def test_raw_content_after_the_json(mini_filer):
    """create's and update's content may follow the JSON as raw bytes instead of
    base64 inside it; every misuse is 400 EINVAL and changes nothing."""
    f = mini_filer
    mkdir(f, "/j8")
    data = bytes(range(256)) * 256  # 64 KiB, NULs and bytes that are not UTF-8
    r = raw_call(f, "create", {"entry": {"path": "/j8/a", "mode": S_IFREG | 0o644}}, data)
    assert r.status_code == 201, r.text
    e = r.json()
    assert e["size"] == len(data) and base64.b64decode(e["content"]) == data
    assert f.get("/j8/a").content == data
    r = raw_call(f, "create", {"entry": {"path": "/j8/empty", "mode": S_IFREG | 0o644}}, b"")
    assert r.status_code == 201 and r.json()["size"] == 0, r.text
    assert "content" in ok(f, "lookup", {"path": "/j8/empty"})  # an empty inline file
    r = raw_call(f, "update", {"path": "/j8/a", "set": {"mtimeNs": 5}}, b"new\x00")
    assert r.status_code == 200, r.text
    assert base64.b64decode(ok(f, "lookup", {"path": "/j8/a"})["content"]) == b"new\x00"
    before = ok(f, "lookup", {"path": "/j8/a"})["etag"]

    def refused(op, doc, raw, header=None, why=""):
        r = raw_call(f, op, doc, raw, header)
        assert r.status_code == 400 and r.json()["code"] == "EINVAL", (op, header, r.text)
        assert why in r.json()["error"], r.text

    new = {"entry": {"path": "/j8/b", "mode": S_IFREG | 0o644}}
    both = {"entry": {"path": "/j8/b", "mode": S_IFREG | 0o644, "content": b64(b"x")}}
    refused("create", both, b"y", why="not also")
    refused("create", {"entry": {"path": "/j8/b", "mode": S_IFDIR | 0o755}}, b"y")
    refused("create", new, data + b"!", why="over")
    for bad in ("abc", "-1", "", "1x", "99999999999999999999", "100000"):
        refused("create", new, b"xyz", header=bad)
    refused("lookup", {"path": "/j8/a"}, b"xyz", why="no content")
    refused("delete", {"path": "/j8/a"}, b"", why="no content")
    refused("update", {"path": "/j8/a", "set": {"size": 1}}, b"z", why="excludes")
    # the JSON must end where the header says: a count one too small leaves it torn
    refused("create", new, b"xyz", header="2")
    assert not exists(f, "/j8/b")
    assert ok(f, "lookup", {"path": "/j8/a"})["etag"] == before


def test_symlink_and_device(mini_filer):
    f = mini_filer
    mkdir(f, "/j2")
    e = ok(f, "create", {"entry": {"path": "/j2/l", "mode": S_IFLNK | 0o777,
                                   "symlinkTarget": "../x"}})
    assert e["symlinkTarget"] == "../x" and e["mode"] == S_IFLNK | 0o777
    e = ok(f, "create", {"entry": {"path": "/j2/dev", "mode": 0o020644, "rdev": 259}})
    assert e["rdev"] == 259
    err(f, "create", {"entry": {"path": "/j2/l2", "mode": S_IFLNK | 0o777}}, 400, "EINVAL")


def test_create_missing_parent_and_exclusive(mini_filer):
    f = mini_filer
    err(f, "create", {"entry": {"path": "/nope/x", "mode": S_IFREG | 0o644}}, 404, "ENOENT")
    mkdir(f, "/j3")
    mkfile(f, "/j3/f", b"1")
    err(f, "create", {"entry": {"path": "/j3/f", "mode": S_IFREG | 0o644}, "exclusive": True},
        409, "EEXIST")
    # non-exclusive create replaces a file
    e = mkfile(f, "/j3/f", b"22")
    assert e["size"] == 2
    # a file is not a parent
    err(f, "create", {"entry": {"path": "/j3/f/x", "mode": S_IFREG | 0o644}}, 409, "ENOTDIR")
    # a directory is never replaced
    mkdir(f, "/j3/d")
    err(f, "create", {"entry": {"path": "/j3/d", "mode": S_IFREG | 0o644}}, 409, "EEXIST")


def test_exclusive_create_race_16(mini_filer):
    f = mini_filer
    mkdir(f, "/race")
    for round_ in range(3):
        path = "/race/f%d" % round_
        codes = []
        barrier = threading.Barrier(16)

        def worker(i):
            barrier.wait()
            r = call(f, "create", {"entry": {"path": path, "mode": S_IFREG | 0o644,
                                             "uid": i}, "exclusive": True})
            codes.append((r.status_code, r.json().get("code"), i))

        ts = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        wins = [c for c in codes if c[0] == 201]
        assert len(wins) == 1, codes
        assert all(c[0] == 409 and c[1] == "EEXIST" for c in codes if c[0] != 201)
        assert ok(f, "lookup", {"path": path})["uid"] == wins[0][2]


def test_list_paging_prefix(mini_filer):
    f = mini_filer
    mkdir(f, "/ls")
    names = ["a%02d" % i for i in range(25)] + ["b1", "b2"]
    for n in names:
        mkfile(f, "/ls/" + n)
    seen, start, pages = [], "", 0
    while True:
        j = ok(f, "list", {"dir": "/ls", "startName": start, "limit": 10})
        seen += [e["name"] for e in j["entries"]]
        pages += 1
        if not j["more"]:
            break
        start = j["lastName"]
    assert seen == sorted(names) and pages == 3
    j = ok(f, "list", {"dir": "/ls", "prefix": "b"})
    assert [e["name"] for e in j["entries"]] == ["b1", "b2"] and j["more"] is False
    j = ok(f, "list", {"dir": "/ls", "startName": "b1", "inclusive": True, "limit": 1})
    assert [e["name"] for e in j["entries"]] == ["b1"] and j["more"] is True
    assert all(len(e["etag"]) == 16 for e in j["entries"])
    err(f, "list", {"dir": "/ls/a00"}, 409, "ENOTDIR")
    err(f, "list", {"dir": "/nolist"}, 404, "ENOENT")
    err(f, "list", {"dir": "/ls", "limit": 1000000}, 400, "EINVAL")
    err(f, "list", {"dir": "/ls", "limit": 0}, 400, "EINVAL")


# ---- update ------------------------------------------------------------------


def test_update_attrs_and_cas(mini_filer):
    f = mini_filer
    mkdir(f, "/up")
    e = mkfile(f, "/up/f", b"0123456789")
    e2 = ok(f, "update", {"path": "/up/f", "set": {"mode": 0o600, "uid": 5, "gid": 6,
                                                    "mtimeNs": 123}, "ifEtag": e["etag"]})
    assert e2["mode"] == S_IFREG | 0o600 and e2["uid"] == 5 and e2["mtimeNs"] == 123
    assert e2["etag"] != e["etag"]
    err(f, "update", {"path": "/up/f", "set": {"uid": 9}, "ifEtag": e["etag"]}, 412, "EPRECOND")
    assert ok(f, "lookup", {"path": "/up/f"})["uid"] == 5
    e3 = ok(f, "update", {"path": "/up/f", "set": {"size": 4}})
    assert e3["size"] == 4 and f.get("/up/f").content == b"0123"
    err(f, "update", {"path": "/up/missing", "set": {"uid": 1}}, 404, "ENOENT")
    err(f, "update", {"path": "/up", "set": {"size": 1}}, 409, "EISDIR")


def test_atime_separate_from_mtime(mini_filer):
    f = mini_filer
    mkdir(f, "/at")
    big = 9007199254740993  # exact beyond 2^53
    e = mkfile(f, "/at/f", b"x", mtimeNs=1000, atimeNs=big)
    assert e["atimeNs"] == big and e["mtimeNs"] == 1000
    # atime alone (utimensat with UTIME_OMIT on mtime): mtime stays
    e2 = ok(f, "update", {"path": "/at/f", "set": {"atimeNs": 2000}})
    assert e2["atimeNs"] == 2000 and e2["mtimeNs"] == 1000
    assert e2["etag"] != e["etag"]  # atime is stored: it is part of the version
    # mtime alone: atime stays
    e3 = ok(f, "update", {"path": "/at/f", "set": {"mtimeNs": 3000}})
    assert e3["atimeNs"] == 2000 and e3["mtimeNs"] == 3000
    # ctime still defaults to now on every update, or takes the given value
    e4 = ok(f, "update", {"path": "/at/f", "set": {"atimeNs": 4000, "ctimeNs": 77}})
    assert e4["atimeNs"] == 4000 and e4["ctimeNs"] == 77 and e4["mtimeNs"] == 3000
    e5 = ok(f, "update", {"path": "/at/f", "set": {"atimeNs": 5000}})
    assert e5["ctimeNs"] > 10**18
    # lookup and list show the stored value
    assert ok(f, "lookup", {"path": "/at/f"})["atimeNs"] == 5000
    # create without atimeNs: the mtime
    mkfile(f, "/at/g", b"y", mtimeNs=6000)
    ls = {x["name"]: x for x in ok(f, "list", {"dir": "/at"})["entries"]}
    assert ls["f"]["atimeNs"] == 5000 and ls["f"]["mtimeNs"] == 3000
    assert ls["g"]["atimeNs"] == 6000 == ls["g"]["mtimeNs"]
    # before the epoch, like the other times
    assert mkfile(f, "/at/h", atimeNs=-5)["atimeNs"] == -5


def test_atime_of_entry_without_one(mini_filer):
    f = mini_filer
    mkdir(f, "/at2")
    # the SeaweedFS-compatible PUT stores no atime, like entries written before atime existed
    assert f.put("/at2/old", b"old").status_code in (200, 201)
    e = ok(f, "lookup", {"path": "/at2/old"})
    assert e["atimeNs"] == e["mtimeNs"] > 0
    ls = ok(f, "list", {"dir": "/at2"})["entries"]
    assert ls[0]["atimeNs"] == ls[0]["mtimeNs"] == e["mtimeNs"]
    # changing only the mtime keeps the atime it showed
    e2 = ok(f, "update", {"path": "/at2/old", "set": {"mtimeNs": 1}})
    assert e2["mtimeNs"] == 1 and e2["atimeNs"] == e["mtimeNs"]
    assert f.get("/at2/old").content == b"old"
    # the SeaweedFS-compatible metadata is as before
    m = f.meta("/at2/old")
    assert "atimeNs" not in m


def race16(f, op, body_of):
    """16 clients send op with body_of(i) at once: the one that won (the rest got 412)."""
    results = []
    barrier = threading.Barrier(16)

    def worker(i):
        barrier.wait()
        results.append((call(f, op, body_of(i)).status_code, i))

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    wins = [i for s, i in results if s == 200]
    assert len(wins) == 1, results
    assert all(s == 412 for s, _ in results if s != 200), results
    return wins[0]


def test_cas_race(mini_filer):
    f = mini_filer
    mkdir(f, "/cas")
    e = mkfile(f, "/cas/c")
    won = race16(f, "update", lambda i: {"path": "/cas/c", "set": {"uid": 100 + i},
                                         "ifEtag": e["etag"]})
    assert ok(f, "lookup", {"path": "/cas/c"})["uid"] == 100 + won


def test_chunks_append_truncate_frees(mini_filer):
    f = mini_filer
    mkdir(f, "/ch")
    a = ok(f, "assign", {"count": 2})["fids"]
    assert len(a) == 2
    blobs = []
    for i, x in enumerate(a):
        data = bytes([65 + i]) * 1000
        r = requests.post("http://%s/%s" % (x["url"], x["fid"]), files={"file": ("b", data)},
                          timeout=30)
        assert r.status_code in (200, 201), r.text
        blobs.append((x, data))
    ok(f, "create", {"entry": {"path": "/ch/f", "mode": S_IFREG | 0o644, "chunks": [
        {"fileId": a[0]["fid"], "offset": 0, "size": 1000, "mtimeNs": 1}]}})
    e = ok(f, "update", {"path": "/ch/f", "set": {"appendChunks": [
        {"fileId": a[1]["fid"], "offset": 1000, "size": 1000, "mtimeNs": 2}]}})
    assert e["size"] == 2000 and len(e["chunks"]) == 2
    assert f.get("/ch/f").content == blobs[0][1] + blobs[1][1]
    e = ok(f, "update", {"path": "/ch/f", "set": {"size": 1000}})
    assert e["size"] == 1000 and len(e["chunks"]) == 1
    assert f.get("/ch/f").content == blobs[0][1]
    vid = int(a[1]["fid"].split(",")[0])
    loc = ok(f, "lookupVolume", {"volumeId": vid})
    assert loc["locations"] and loc["locations"][0]["url"]
    # the truncated-away chunk is deleted from its volume by the garbage queue
    url = "http://%s/%s" % (a[1]["url"], a[1]["fid"])

    def gone():
        return requests.get(url, timeout=10).status_code == 404
    from conftest import wait_until
    wait_until(gone, timeout=20, what="freed chunk deleted")
    err(f, "lookupVolume", {"volumeId": 99999}, 404, "ENOENT")


def upload_blob(f, data):
    a = ok(f, "assign", {"count": 1})["fids"][0]
    r = requests.post("http://%s/%s" % (a["url"], a["fid"]), files={"file": ("b", data)},
                      timeout=30)
    assert r.status_code in (200, 201), r.text
    return a["fid"]


def test_update_content_replaces_chunks(mini_filer):
    """set.content makes the file's data inline bytes: its chunks are freed, the size is
    the content's; it excludes chunks/appendChunks/size and applies to regular files."""
    f = mini_filer
    mkdir(f, "/uc")
    a = ok(f, "assign", {"count": 1})["fids"][0]
    r = requests.post("http://%s/%s" % (a["url"], a["fid"]), files={"file": ("b", b"x" * 5000)},
                      timeout=30)
    assert r.status_code in (200, 201), r.text
    ok(f, "create", {"entry": {"path": "/uc/f", "mode": S_IFREG | 0o644, "chunks": [
        {"fileId": a["fid"], "offset": 0, "size": 5000, "mtimeNs": 1}]}})
    e = ok(f, "update", {"path": "/uc/f",
                         "set": {"content": base64.b64encode(b"small now").decode(),
                                 "mtimeNs": 77}})
    assert e["size"] == 9 and e["chunks"] == [] and e["contentLength"] == 9
    assert e["mtimeNs"] == 77
    assert f.get("/uc/f").content == b"small now"
    # empty content: an empty file
    e = ok(f, "update", {"path": "/uc/f", "set": {"content": ""}})
    assert e["size"] == 0 and f.get("/uc/f").content == b""
    url = "http://%s/%s" % (a["url"], a["fid"])
    from conftest import wait_until
    wait_until(lambda: requests.get(url, timeout=10).status_code == 404, timeout=20,
               what="the replaced chunk deleted")
    # bad input changes nothing
    ok(f, "update", {"path": "/uc/f", "set": {"content": base64.b64encode(b"keep").decode()}})
    b64 = base64.b64encode(b"z").decode()
    err(f, "update", {"path": "/uc/f", "set": {"content": b64, "size": 1}}, 400, "EINVAL")
    err(f, "update", {"path": "/uc/f", "set": {"content": b64, "appendChunks": []}}, 400,
        "EINVAL")
    err(f, "update", {"path": "/uc/f", "set": {"content": "!!notbase64"}}, 400, "EINVAL")
    err(f, "update", {"path": "/uc/f", "set": {"content": 5}}, 400, "EINVAL")
    too_big = base64.b64encode(b"q" * (64 * 1024 + 1)).decode()
    err(f, "update", {"path": "/uc/f", "set": {"content": too_big}}, 400, "EINVAL")
    err(f, "update", {"path": "/uc", "set": {"content": b64}}, 409, "EISDIR")
    assert f.get("/uc/f").content == b"keep"


def test_update_drop_chunks(mini_filer):
    """appendChunks + dropChunks: the dropped chunks leave the list in the same update and
    are freed; unknown ids are ignored; an id also appended is kept; bad input is 400."""
    f = mini_filer
    mkdir(f, "/dc")
    a = upload_blob(f, b"a" * 1000)
    b = upload_blob(f, b"b" * 1000)
    c = upload_blob(f, b"B" * 1000 + b"c" * 1000)
    ok(f, "create", {"entry": {"path": "/dc/f", "mode": S_IFREG | 0o644, "chunks": [
        {"fileId": a, "offset": 0, "size": 1000, "mtimeNs": 1},
        {"fileId": b, "offset": 1000, "size": 1000, "mtimeNs": 2}]}})
    vid, key = a.split(",")
    unknown = "%s,%s" % (vid, "0" * (len(key) - 1) + "9")
    e = ok(f, "update", {"path": "/dc/f", "set": {
        "appendChunks": [{"fileId": c, "offset": 1000, "size": 2000, "mtimeNs": 3}],
        "dropChunks": [b, unknown]}})
    assert [x["fileId"] for x in e["chunks"]] == [a, c] and e["size"] == 3000
    assert f.get("/dc/f").content == b"a" * 1000 + b"B" * 1000 + b"c" * 1000
    loc = ok(f, "lookupVolume", {"volumeId": int(b.split(",")[0])})["locations"][0]["url"]
    from conftest import wait_until
    wait_until(lambda: requests.get("http://%s/%s" % (loc, b), timeout=10).status_code == 404,
               timeout=20, what="the dropped chunk deleted")
    # an id the request also appends is not freed
    d = upload_blob(f, b"d" * 10)
    e = ok(f, "update", {"path": "/dc/f", "set": {
        "appendChunks": [{"fileId": d, "offset": 3000, "size": 10, "mtimeNs": 4}],
        "dropChunks": [d]}})
    assert d in [x["fileId"] for x in e["chunks"]]
    assert f.get("/dc/f").content.endswith(b"d" * 10)
    # bad input changes nothing
    before = ok(f, "lookup", {"path": "/dc/f"})
    err(f, "update", {"path": "/dc/f", "set": {"dropChunks": [a]}}, 400, "EINVAL")
    err(f, "update", {"path": "/dc/f", "set": {"appendChunks": [], "dropChunks": ["zz"]}},
        400, "EINVAL")
    err(f, "update", {"path": "/dc/f", "set": {"appendChunks": [], "dropChunks": []}},
        400, "EINVAL")
    err(f, "update", {"path": "/dc/f", "set": {"chunks": [], "dropChunks": [a]}}, 400,
        "EINVAL")
    assert ok(f, "lookup", {"path": "/dc/f"})["chunks"] == before["chunks"]


def test_shrink_then_grow_reads_zeros(mini_filer):
    """A smaller size shortens the chunk crossing the new end: growing again (a larger
    size, or a chunk appended past the end) reads zeros there, not the old bytes."""
    f = mini_filer
    mkdir(f, "/tz")
    mib = 1 << 20
    data = bytes((i % 251) + 1 for i in range(mib))  # no zero byte anywhere
    for name in ("grow", "append"):
        fid = upload_blob(f, data)
        ok(f, "create", {"entry": {"path": "/tz/" + name, "mode": S_IFREG | 0o644,
                                   "chunks": [{"fileId": fid, "offset": 0, "size": mib,
                                               "mtimeNs": 1}]}})
        assert f.get("/tz/" + name).content == data
        e = ok(f, "update", {"path": "/tz/" + name, "set": {"size": 1000}})
        assert e["size"] == 1000 and len(e["chunks"]) == 1
        assert e["chunks"][0]["size"] == 1000
        assert f.get("/tz/" + name).content == data[:1000]
    e = ok(f, "update", {"path": "/tz/grow", "set": {"size": mib}})
    assert e["size"] == mib
    got = f.get("/tz/grow").content
    assert len(got) == mib and got[:1000] == data[:1000]
    assert got[1000:] == bytes(mib - 1000)
    tail = b"T" * 1000
    fid = upload_blob(f, tail)
    e = ok(f, "update", {"path": "/tz/append", "set": {"appendChunks": [
        {"fileId": fid, "offset": mib, "size": 1000, "mtimeNs": 2}]}})
    assert e["size"] == mib + 1000
    got = f.get("/tz/append").content
    assert got == data[:1000] + bytes(mib - 1000) + tail
    # the shortened chunk stays on its volume (only wholly cut chunks are freed)
    f.gc_pass()
    assert f.get("/tz/grow").content[:1000] == data[:1000]
    # inline content is cut the same way
    mkfile(f, "/tz/inline", b"hello world")
    ok(f, "update", {"path": "/tz/inline", "set": {"size": 3}})
    e = ok(f, "update", {"path": "/tz/inline", "set": {"size": 10}})
    assert e["size"] == 10
    assert f.get("/tz/inline").content == b"hel" + bytes(7)


# ---- delete ------------------------------------------------------------------


def test_delete(mini_filer):
    f = mini_filer
    mkdir(f, "/del")
    mkdir(f, "/del/d")
    mkdir(f, "/del/d/e")
    mkfile(f, "/del/d/e/f", b"x")
    err(f, "delete", {"path": "/del/d"}, 409, "ENOTEMPTY")
    assert exists(f, "/del/d/e/f")
    ok(f, "delete", {"path": "/del/d", "recursive": True})
    assert not exists(f, "/del/d") and not exists(f, "/del/d/e/f")
    err(f, "delete", {"path": "/del/d"}, 404, "ENOENT")
    err(f, "delete", {"path": "/"}, 400, "EINVAL")


# ---- rename ------------------------------------------------------------------


@pytest.fixture
def rn(mini_filer):
    f = mini_filer
    base = "/rn-" + uuid.uuid4().hex  # id(object()) repeats once the object is freed
    mkdir(f, base)
    return f, base


def test_rename_file_over_file(rn):
    f, b = rn
    mkfile(f, b + "/a", b"A")
    mkfile(f, b + "/b", b"B")
    ok(f, "rename", {"from": b + "/a", "to": b + "/b"})
    assert not exists(f, b + "/a") and f.get(b + "/b").content == b"A"


def test_rename_dir_over_empty_dir_and_subtree(rn):
    f, b = rn
    mkdir(f, b + "/d")
    mkdir(f, b + "/d/sub")
    mkfile(f, b + "/d/sub/x", b"X")
    mkdir(f, b + "/e")
    ok(f, "rename", {"from": b + "/d", "to": b + "/e"})
    assert not exists(f, b + "/d") and not exists(f, b + "/d/sub/x")
    assert f.get(b + "/e/sub/x").content == b"X"


def test_rename_rules(rn):
    f, b = rn
    mkdir(f, b + "/d")
    mkdir(f, b + "/full")
    mkfile(f, b + "/full/x")
    mkfile(f, b + "/file")
    err(f, "rename", {"from": b + "/d", "to": b + "/full"}, 409, "ENOTEMPTY")
    err(f, "rename", {"from": b + "/file", "to": b + "/d"}, 409, "EISDIR")
    err(f, "rename", {"from": b + "/d", "to": b + "/file"}, 409, "ENOTDIR")
    err(f, "rename", {"from": b + "/full", "to": b + "/full/x/y"}, 409, "ENOTDIR")
    mkdir(f, b + "/full/in")
    err(f, "rename", {"from": b + "/full", "to": b + "/full/in/z"}, 400, "EINVAL")
    err(f, "rename", {"from": b + "/nothing", "to": b + "/z"}, 404, "ENOENT")
    err(f, "rename", {"from": b + "/file", "to": b + "/nodir/z"}, 404, "ENOENT")
    mkfile(f, b + "/other")
    err(f, "rename", {"from": b + "/file", "to": b + "/other", "noReplace": True},
        409, "EEXIST")
    ok(f, "rename", {"from": b + "/file", "to": b + "/new", "noReplace": True})
    assert exists(f, b + "/new") and not exists(f, b + "/file")
    ok(f, "rename", {"from": b + "/new", "to": b + "/new"})
    assert exists(f, b + "/new")
    # nothing changed by the refused ones
    assert exists(f, b + "/d") and exists(f, b + "/full/x")


def test_rename_exchange(rn):
    f, b = rn
    mkfile(f, b + "/a", b"A")
    mkdir(f, b + "/d")
    mkfile(f, b + "/d/in", b"IN")
    err(f, "rename", {"from": b + "/a", "to": b + "/zz", "exchange": True}, 404, "ENOENT")
    ok(f, "rename", {"from": b + "/a", "to": b + "/d", "exchange": True})
    assert f.get(b + "/d").content == b"A"
    assert f.get(b + "/a/in").content == b"IN"
    assert ok(f, "lookup", {"path": b + "/a"})["isDirectory"] is True
    mkfile(f, b + "/p", b"P")
    mkfile(f, b + "/q", b"Q")
    ok(f, "rename", {"from": b + "/p", "to": b + "/q", "exchange": True})
    assert f.get(b + "/p").content == b"Q" and f.get(b + "/q").content == b"P"
    err(f, "rename", {"from": b + "/p", "to": b + "/q", "exchange": True, "noReplace": True},
        400, "EINVAL")


def test_rename_exchange_two_dirs(rn):
    f, b = rn
    for d in ("x", "y"):
        mkdir(f, "%s/%s" % (b, d))
        mkdir(f, "%s/%s/sub" % (b, d))
        mkfile(f, "%s/%s/sub/%s.txt" % (b, d, d), d.encode())
    ok(f, "rename", {"from": b + "/x", "to": b + "/y", "exchange": True})
    assert f.get(b + "/x/sub/y.txt").content == b"y"
    assert f.get(b + "/y/sub/x.txt").content == b"x"
    assert not exists(f, b + "/x/sub/x.txt") and not exists(f, b + "/y/sub/y.txt")
    mkdir(f, b + "/x/sub/deep")
    err(f, "rename", {"from": b + "/x/sub/deep", "to": b + "/x", "exchange": True},
        400, "EINVAL")
    err(f, "rename", {"from": b + "/x", "to": b + "/x/sub/deep", "exchange": True},
        400, "EINVAL")


def test_create_replace_keeps_shared_chunks(mini_filer):
    f = mini_filer
    mkdir(f, "/keep")
    a = ok(f, "assign", {})["fids"][0]
    data = b"K" * 500
    r = requests.post("http://%s/%s" % (a["url"], a["fid"]), files={"file": ("b", data)},
                      timeout=30)
    assert r.status_code in (200, 201)
    ch = [{"fileId": a["fid"], "offset": 0, "size": 500, "mtimeNs": 1}]
    ok(f, "create", {"entry": {"path": "/keep/f", "mode": S_IFREG | 0o644, "chunks": ch}})
    ok(f, "create", {"entry": {"path": "/keep/f", "mode": S_IFREG | 0o600, "chunks": ch}})
    ok(f, "update", {"path": "/keep/f", "set": {"chunks": ch}})
    f.gc_pass()
    assert f.get("/keep/f").content == data


def test_rename_events_logged(rn):
    f, b = rn
    mkfile(f, b + "/ev", b"E")
    r = requests.get(f.u("/.meta/subscribe"), params={"pathPrefix": b, "sinceNs": "0"},
                     stream=True, timeout=10)
    ok(f, "rename", {"from": b + "/ev", "to": b + "/ev2"})
    found = False
    for line in r.iter_lines():
        if b"ev2" in line and b'"oldEntry":{' in line:
            found = True
            break
    r.close()
    assert found


# ---- xattrs ------------------------------------------------------------------


def test_xattrs(mini_filer):
    f = mini_filer
    mkdir(f, "/xa")
    mkfile(f, "/xa/f")
    v = base64.b64encode(b"\x00\x01bin").decode()
    e = ok(f, "setXattr", {"path": "/xa/f", "name": "user.k", "value": v, "flags": "create"})
    assert "user.k" in str(e.get("xattrs"))
    err(f, "setXattr", {"path": "/xa/f", "name": "user.k", "value": v, "flags": "create"},
        409, "EEXIST")
    err(f, "setXattr", {"path": "/xa/f", "name": "user.n", "value": v, "flags": "replace"},
        404, "ENODATA")
    ok(f, "setXattr", {"path": "/xa/f", "name": "user.k", "value": "", "flags": "replace"})
    ok(f, "removeXattr", {"path": "/xa/f", "name": "user.k"})
    err(f, "removeXattr", {"path": "/xa/f", "name": "user.k"}, 404, "ENODATA")
    err(f, "setXattr", {"path": "/xa/nope", "name": "user.k", "value": v}, 404, "ENOENT")


def test_xattr_if_etag(mini_filer):
    f = mini_filer
    mkdir(f, "/xe")
    e = mkdir(f, "/xe/t")
    v1, v2 = b64(b"one"), b64(b"two")
    e2 = ok(f, "setXattr", {"path": "/xe/t", "name": "user.p", "value": v1, "ifEtag": e["etag"]})
    assert e2["etag"] != e["etag"]
    # the etag it was read at is stale now: 412, and the value stays
    err(f, "setXattr", {"path": "/xe/t", "name": "user.p", "value": v2, "ifEtag": e["etag"]},
        412, "EPRECOND")
    err(f, "removeXattr", {"path": "/xe/t", "name": "user.p", "ifEtag": e["etag"]},
        412, "EPRECOND")
    now = ok(f, "lookup", {"path": "/xe/t"})
    assert now["etag"] == e2["etag"] and v1 in json.dumps(now["xattrs"])
    err(f, "setXattr", {"path": "/xe/t", "name": "user.p", "value": v2, "ifEtag": "xyz"},
        400, "EINVAL")
    ok(f, "removeXattr", {"path": "/xe/t", "name": "user.p", "ifEtag": e2["etag"]})
    assert "user.p" not in json.dumps(ok(f, "lookup", {"path": "/xe/t"}).get("xattrs"))


def test_xattr_cas_race(mini_filer):
    f = mini_filer
    mkdir(f, "/xr")
    e = mkdir(f, "/xr/t")
    won = race16(f, "setXattr", lambda i: {"path": "/xr/t", "name": "user.ptr",
                                           "value": b64(b"v%d" % i), "ifEtag": e["etag"]})
    assert b64(b"v%d" % won) in json.dumps(ok(f, "lookup", {"path": "/xr/t"})["xattrs"])


# ---- bad input ----------------------------------------------------------------


@pytest.mark.parametrize("op,body", [
    ("lookup", "{"),
    ("lookup", "[]"),
    ("lookup", ""),
    ("lookup", '{"path": 5}'),
    ("lookup", '{"path": "/a", "bogus": 1}'),
    ("lookup", '{"path": "/a/../b"}'),
    ("lookup", '{"path": "/a/./b"}'),
    ("lookup", '{"path": "a"}'),
    ("lookup", '{"path": "/a\\u0000b"}'),
    ("lookup", '{"path": "/' + "x" * 300 + '"}'),
    ("lookup", '{"path": "/a", "path": "/b"}'),
    ("list", '{"dir": "/", "limit": 99999999999999999999999}'),
    ("list", '{"dir": "/", "limit": -1}'),
    ("list", '{"dir": "/", "limit": 1.5}'),
    ("list", '{"dir": "/", "inclusive": "yes"}'),
    ("create", '{"entry": {"path": "/x", "mode": 33188, "content": "!!"}}'),
    ("create", '{"entry": {"path": "/x"}}'),
    ("create", '{"entry": {"path": "/x", "mode": 420}}'),
    ("create", '{"entry": {"path": "/x", "mode": 33188, "color": 1}}'),
    ("create", '{"entry": {"path": "/x", "mode": 33188, "chunks": [{"offset": 0}]}}'),
    ("update", '{"path": "/x"}'),
    ("update", '{"path": "/x", "set": {"size": "1"}}'),
    ("update", '{"path": "/x", "set": {"nlink": 3}}'),
    ("update", '{"path": "/x", "set": {"atimeNs": "1"}}'),
    ("update", '{"path": "/x", "set": {"atimeNs": 1.5}}'),
    ("update", '{"path": "/x", "set": {"atimeNs": 9223372036854775808}}'),
    ("create", '{"entry": {"path": "/x", "mode": 33188, "atimeNs": -9223372036854775809}}'),
    ("create", '{"entry": {"path": "/x", "mode": 33188, "atimeNs": null}}'),
    ("rename", '{"from": "/a"}'),
    ("rename", '{"from": "/", "to": "/b"}'),
    ("setXattr", '{"path": "/a", "name": "k"}'),
    ("setXattr", '{"path": "/a", "name": "k", "value": "", "flags": "both"}'),
    ("assign", '{"count": 0}'),
    ("lookupVolume", '{}'),
])
def test_bad_input_400(mini_filer, op, body):
    r = call(mini_filer, op, None, raw=body.encode())
    assert r.status_code == 400, (op, body, r.status_code, r.text)
    assert r.json()["code"] == "EINVAL" and r.json()["error"]


def test_unknown_op_method_and_query(mini_filer):
    f = mini_filer
    r = call(f, "frobnicate", {})
    assert r.status_code == 404 and r.json()["code"] == "ENOSYS"
    assert requests.get(f.u("/.api/v1/lookup"), timeout=10).status_code == 405
    r = requests.post(f.u("/.api/v1/lookup"), params={"x": "1"}, json={"path": "/"},
                      timeout=10)
    assert r.status_code == 400
    r = requests.post(f.u("/.api/v1/lookup"), data=b"\x00{}", timeout=10)
    assert r.status_code == 400
    # the server is fine afterwards
    assert ok(f, "lookup", {"path": "/"})["isDirectory"]


# ---- statfs ------------------------------------------------------------------


def test_statfs(cluster):
    from filer_fixtures import start_filer
    from conftest import wait_registered_with
    m = cluster.master(volume_size_limit_mb=64, extra=["-pulseSeconds=1"])
    v = cluster.volume(m, max_volumes=10, extra=["-pulseSeconds=1"])
    wait_registered_with(m, v)
    f = start_filer(cluster, m)
    before = ok(f, "statfs", {})
    assert before["totalBytes"] == 64 * (1 << 20) * 10, before
    assert before["freeBytes"] == before["totalBytes"] - before["usedBytes"]
    for i in range(20):
        r = f.put("/sf/f%d" % i, b"x" * 50000)
        assert r.status_code in (200, 201), r.text
    import time
    from conftest import wait_until

    def counted():
        s = ok(f, "statfs", {})
        return s["files"] >= 20 and s["usedBytes"] >= before["usedBytes"] + 20 * 50000
    wait_until(counted, timeout=20, what="statfs sees the new files")  # heartbeats lag
    s = ok(f, "statfs", {})
    assert s["freeBytes"] == s["totalBytes"] - s["usedBytes"]
    err(f, "statfs", {"x": 1}, 400, "EINVAL")
    # a filer whose master is gone answers 503 EAGAIN
    m.stop()
    time.sleep(0.2)
    err(f, "statfs", {}, 503, "EAGAIN")


# ---- freeChunks ----------------------------------------------------------------


def test_free_chunks_deletes_blobs(mini_filer):
    """Blobs a client stored but never committed are queued and deleted; a bad
    request queues nothing."""
    from conftest import wait_until
    f = mini_filer
    fids = [upload_blob(f, b"orphan %d" % i) for i in range(3)]
    kept = upload_blob(f, b"kept")
    a = ok(f, "assign", {"count": 1})["fids"][0]
    url = lambda fid: "http://%s/%s" % (a["url"], fid)  # noqa: E731 - one mini volume
    for fid in fids + [kept]:
        assert requests.get(url(fid), timeout=10).status_code == 200
    err(f, "freeChunks", {"fileIds": fids[:1] + ["not-a-fid"]}, 400, "EINVAL")
    err(f, "freeChunks", {"fileIds": []}, 400, "EINVAL")
    err(f, "freeChunks", {}, 400, "EINVAL")
    err(f, "freeChunks", {"fileIds": fids, "x": 1}, 400, "EINVAL")
    err(f, "freeChunks", {"fileIds": [fids[0] + ".jpg"]}, 400, "EINVAL")
    f.gc_pass()  # a refused request queued nothing: a pass leaves the blob alone
    assert requests.get(url(fids[0]), timeout=10).status_code == 200
    assert ok(f, "freeChunks", {"fileIds": fids}) == {"queued": 3}
    wait_until(lambda: all(requests.get(url(x), timeout=10).status_code == 404 for x in fids),
               timeout=20, what="freed blobs deleted")
    f.gc_pass()
    assert requests.get(url(kept), timeout=10).status_code == 200
    # freeing again (already gone) is harmless
    assert ok(f, "freeChunks", {"fileIds": fids[:1]}) == {"queued": 1}


# ---- create: xattrs, parents, ifEtag, consume ------------------------------------


def test_create_with_xattrs(mini_filer):
    """entry.xattrs: the new entry carries exactly these (any type); a replaced file's
    old ones are dropped; malformed ones are 400 and change nothing."""
    f = mini_filer
    mkdir(f, "/cx")
    xs = {"user.a": b64(b"\x00\x01bin"), "user.empty": "", "user.long": b64(b"v" * 70000)}
    e = mkfile(f, "/cx/f", b"data", xattrs=xs)
    assert e["xattrs"] == xs
    got = ok(f, "lookup", {"path": "/cx/f"})
    assert got["xattrs"] == xs and got["etag"] == e["etag"]
    assert base64.b64decode(got["xattrs"]["user.a"]) == b"\x00\x01bin"
    # setXattr sees them as ordinary attributes
    err(f, "setXattr", {"path": "/cx/f", "name": "user.a", "value": "", "flags": "create"},
        409, "EEXIST")
    # replacing the file: exactly the new set, the old names are gone
    e2 = mkfile(f, "/cx/f", b"new", xattrs={"user.b": b64(b"B")})
    assert e2["xattrs"] == {"user.b": b64(b"B")}
    assert ok(f, "lookup", {"path": "/cx/f"})["xattrs"] == {"user.b": b64(b"B")}
    # and without xattrs: none
    assert "xattrs" not in mkfile(f, "/cx/f", b"none")
    # directories and symlinks too
    d = ok(f, "create", {"entry": {"path": "/cx/d", "mode": S_IFDIR | 0o755,
                                   "xattrs": {"user.d": b64(b"dir")}}})
    assert d["xattrs"] == {"user.d": b64(b"dir")}
    ln = ok(f, "create", {"entry": {"path": "/cx/l", "mode": S_IFLNK | 0o777,
                                    "symlinkTarget": "d", "xattrs": {"user.l": ""}}})
    assert ln["xattrs"] == {"user.l": ""}
    # many attributes: the entry's limit is 4096
    many = {"user.%d" % i: "" for i in range(4096)}
    assert len(mkfile(f, "/cx/many", xattrs=many)["xattrs"]) == 4096
    before = ok(f, "lookup", {"path": "/cx/f"})
    for bad in ({"user.x": "!!"}, {"user.x": "QQ"}, {"": b64(b"x")}, {"n" * 256: ""},
                {"user.x": 5}, {"user.x": None}, ["user.x"], "user.x",
                {"user.x": b64(b"v" * ((1 << 20) + 1))},
                {"user.%d" % i: "" for i in range(4097)}):
        err(f, "create", {"entry": {"path": "/cx/f", "mode": S_IFREG | 0o644, "xattrs": bad}},
            400, "EINVAL")
    assert ok(f, "lookup", {"path": "/cx/f"})["etag"] == before["etag"]
    # a name of 255 bytes is fine; a name yajl hands over twice is refused
    assert mkfile(f, "/cx/g", xattrs={"n" * 255: ""})["xattrs"] == {"n" * 255: ""}
    raw = b'{"entry": {"path": "/cx/g", "mode": 33188, "xattrs": {"user.x": "", "user.x": ""}}}'
    r = call(f, "create", None, raw=raw)
    assert r.status_code == 400 and r.json()["code"] == "EINVAL", r.text


def test_create_parents(mini_filer):
    """parents: missing directories are made in the create's transaction; a file among
    them is 409 ENOTDIR and nothing is made; without it a missing parent is 404."""
    f = mini_filer
    err(f, "create", {"entry": {"path": "/cp/a/b/c/f", "mode": S_IFREG | 0o644}}, 404,
        "ENOENT")
    assert not exists(f, "/cp")
    e = ok(f, "create", {"entry": {"path": "/cp/a/b/c/f", "mode": S_IFREG | 0o644,
                                   "content": b64(b"deep")}, "parents": True}, status=(201,))
    assert e["fullPath"] == "/cp/a/b/c/f"
    for d in ("/cp", "/cp/a", "/cp/a/b", "/cp/a/b/c"):
        assert ok(f, "lookup", {"path": d})["isDirectory"] is True, d
    assert f.get("/cp/a/b/c/f").content == b"deep"
    # existing parents are fine; a new leaf directory too
    ok(f, "create", {"entry": {"path": "/cp/a/b/g", "mode": S_IFREG | 0o644},
                     "parents": True}, status=(201,))
    ok(f, "create", {"entry": {"path": "/cp/a/x/y", "mode": S_IFDIR | 0o700},
                     "parents": True}, status=(201,))
    assert ok(f, "lookup", {"path": "/cp/a/x"})["isDirectory"] is True
    # a file among the parents: 409 ENOTDIR, nothing made below it or beside it
    for path in ("/cp/a/b/g/h/i", "/cp/a/b/g/h", "/cp/a/b/c/f/z"):
        err(f, "create", {"entry": {"path": path, "mode": S_IFREG | 0o644}, "parents": True},
            409, "ENOTDIR")
    assert not exists(f, "/cp/a/b/g/h")
    assert ok(f, "lookup", {"path": "/cp/a/b/g"})["isDirectory"] is False
    # a missing directory before the file: the directory made earlier in the same
    # request rolls back with the refusal
    err(f, "create", {"entry": {"path": "/cp/new/dir", "mode": S_IFREG | 0o644},
                      "parents": True, "ifEtag": "0" * 16}, 404, "ENOENT")
    assert not exists(f, "/cp/new")
    for bad in ("yes", 1, None):
        err(f, "create", {"entry": {"path": "/cp/q", "mode": S_IFREG | 0o644},
                          "parents": bad}, 400, "EINVAL")


def test_create_parents_events_order(mini_filer):
    """One create event per directory made, parents first, each followed by its
    parent's update (the parent's link count), then the file's."""
    from test_filer_events import Stream, kind
    f = mini_filer
    mkdir(f, "/cpe")
    s = Stream(f, pathPrefix="/cpe/")
    try:
        ok(f, "create", {"entry": {"path": "/cpe/a/b/f", "mode": S_IFREG | 0o644},
                         "parents": True})
        ok(f, "create", {"entry": {"path": "/cpe/a/b/g", "mode": S_IFREG | 0o644},
                         "parents": True})
        evs = s.events(6, timeout=5)
        assert [kind(e) for e in evs] == [
            ("create", "/cpe/a"), ("update", "/cpe"), ("create", "/cpe/a/b"),
            ("update", "/cpe/a"), ("create", "/cpe/a/b/f"), ("create", "/cpe/a/b/g")], evs
        assert evs[0]["newEntry"]["isDirectory"] and not evs[4]["newEntry"]["isDirectory"]
        assert [evs[i]["newEntry"]["nlink"] for i in (1, 3)] == [3, 3]
        assert s.quiet(0.5) == []
    finally:
        s.close()


def filer_on(cluster, store, pgsrv=None):
    """A master, a volume server and a filer on SQLite or the private PostgreSQL."""
    from conftest import wait_registered_with
    from filer_fixtures import start_filer
    m = cluster.master()
    v = cluster.volume(m)
    wait_registered_with(m, v)
    extra = []
    if store == "postgres":
        extra = ["-store=postgres",
                 "-postgres.dsn=host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test" % pgsrv.port]
    return start_filer(cluster, m, extra=extra)


@pytest.fixture(params=["sqlite", "postgres"])
def store_filer(request, cluster):
    if request.param == "postgres":
        return filer_on(cluster, "postgres", request.getfixturevalue("pg"))
    return filer_on(cluster, "sqlite")


def test_create_parents_race_16(store_filer):
    """16 clients create files under one missing deep directory at once: all succeed,
    every directory is made once (one create event each)."""
    from test_filer_events import Stream, kind
    f = store_filer
    mkdir(f, "/pr")
    s = Stream(f, pathPrefix="/pr/")
    try:
        for round_ in range(3):
            base = "/pr/r%d/a/b/c/d" % round_
            codes = []
            barrier = threading.Barrier(16)

            def worker(i):
                barrier.wait()
                r = call(f, "create", {"entry": {"path": "%s/f%02d" % (base, i),
                                                 "mode": S_IFREG | 0o644,
                                                 "content": b64(b"%d" % i)},
                                       "parents": True})
                codes.append((r.status_code, r.text))

            ts = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
            [t.start() for t in ts]
            [t.join() for t in ts]
            assert sorted(c for c, _ in codes) == [201] * 16, codes
            names = [x["name"] for x in ok(f, "list", {"dir": base})["entries"]]
            assert names == ["f%02d" % i for i in range(16)]
            assert f.get(base + "/f07").content == b"7"
            evs = s.events(5 + 5 + 16, timeout=10)
            made = [k[1] for k in map(kind, evs)
                    if k[0] == "create" and not k[1].startswith(base + "/")]
            dirs = ["/pr/r%d" % round_, "/pr/r%d/a" % round_, "/pr/r%d/a/b" % round_,
                    "/pr/r%d/a/b/c" % round_, base]
            assert made == dirs, made
            # each directory made once: its parent's link count moved once
            assert [k[1] for k in map(kind, evs) if k[0] == "update"] == ["/pr"] + dirs[:-1]
            assert all(kind(e)[0] in ("create", "update") for e in evs)
            assert s.quiet(0.3) == []
    finally:
        s.close()


def test_create_if_etag(mini_filer):
    """ifEtag: replace only that version; missing 404, stale 412 and nothing changed;
    with exclusive or malformed 400."""
    f = mini_filer
    mkdir(f, "/ce")
    e = mkfile(f, "/ce/f", b"one", xattrs={"user.v": b64(b"1")})
    e2 = ok(f, "create", {"entry": {"path": "/ce/f", "mode": S_IFREG | 0o600,
                                    "content": b64(b"two")}, "ifEtag": e["etag"]},
            status=(200,))
    assert e2["etag"] != e["etag"] and "xattrs" not in e2
    assert f.get("/ce/f").content == b"two"
    # the old etag is stale now: 412, nothing changed
    err(f, "create", {"entry": {"path": "/ce/f", "mode": S_IFREG | 0o644,
                                "content": b64(b"three")}, "ifEtag": e["etag"]},
        412, "EPRECOND")
    got = ok(f, "lookup", {"path": "/ce/f"})
    assert got["etag"] == e2["etag"] and f.get("/ce/f").content == b"two"
    # upper case hex is the same etag
    e3 = ok(f, "create", {"entry": {"path": "/ce/f", "mode": S_IFREG | 0o644,
                                    "content": b64(b"3")}, "ifEtag": e2["etag"].upper()})
    assert f.get("/ce/f").content == b"3"
    # a missing target: 404 and nothing made
    err(f, "create", {"entry": {"path": "/ce/none", "mode": S_IFREG | 0o644},
                      "ifEtag": e3["etag"]}, 404, "ENOENT")
    assert not exists(f, "/ce/none")
    # a directory at the target: its etag matches but it is never replaced
    d = mkdir(f, "/ce/d")
    err(f, "create", {"entry": {"path": "/ce/d", "mode": S_IFREG | 0o644},
                      "ifEtag": d["etag"]}, 409, "EEXIST")
    for bad in ({"ifEtag": e3["etag"], "exclusive": True}, {"ifEtag": "abc"},
                {"ifEtag": "g" * 16}, {"ifEtag": e3["etag"] + "0"}, {"ifEtag": 5},
                {"ifEtag": ""}):
        body = {"entry": {"path": "/ce/f", "mode": S_IFREG | 0o644}}
        body.update(bad)
        err(f, "create", body, 400, "EINVAL")
    assert ok(f, "lookup", {"path": "/ce/f"})["etag"] == e3["etag"]
    # exclusive false with ifEtag is fine
    ok(f, "create", {"entry": {"path": "/ce/f", "mode": S_IFREG | 0o644},
                     "ifEtag": e3["etag"], "exclusive": False}, status=(200,))


def test_create_if_etag_race_16(mini_filer):
    f = mini_filer
    mkdir(f, "/cer")
    e = mkfile(f, "/cer/f")
    results = []
    barrier = threading.Barrier(16)

    def worker(i):
        barrier.wait()
        r = call(f, "create", {"entry": {"path": "/cer/f", "mode": S_IFREG | 0o644, "uid": i},
                               "ifEtag": e["etag"]})
        results.append((r.status_code, i))

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    wins = [i for s, i in results if s == 200]
    assert len(wins) == 1, results
    assert all(s == 412 for s, _ in results if s != 200), results
    assert ok(f, "lookup", {"path": "/cer/f"})["uid"] == wins[0]


def blob_url(f, fid):
    vid = int(fid.split(",")[0])
    loc = ok(f, "lookupVolume", {"volumeId": vid})["locations"][0]["url"]
    return "http://%s/%s" % (loc, fid)


def part_with_chunks(f, path, pieces):
    """A file at path whose chunks are blobs of pieces (assign + volume upload)."""
    chunks, off = [], 0
    for i, data in enumerate(pieces):
        fid = upload_blob(f, data)
        chunks.append({"fileId": fid, "offset": off, "size": len(data), "mtimeNs": i + 1})
        off += len(data)
    return ok(f, "create", {"entry": {"path": path, "mode": S_IFREG | 0o644,
                                      "chunks": chunks}})


def shifted(chunks, base):
    """Chunks of an answer as a request takes them (answers say eTag, requests etag),
    moved by base bytes."""
    out = []
    for c in chunks:
        c = dict(c, offset=c["offset"] + base)
        if "eTag" in c:
            c["etag"] = c.pop("eTag")
        out.append(c)
    return out


def test_create_consume_moves_chunks(mini_filer):
    """consume: the parts go in the create's transaction, the chunks the object lists
    are taken over (never deleted), the others are freed; no data is copied."""
    from conftest import wait_until
    from test_filer_events import Stream, kind
    f = mini_filer
    up = "/cm/.uploads/u1"
    ok(f, "create", {"entry": {"path": up, "mode": S_IFDIR | 0o755}, "parents": True})
    # part 1 through the filer's HTTP PUT (-filer.maxMB=1: three chunks)
    p1 = bytes((i * 7) % 251 for i in range((5 << 20) // 2))
    assert f.put(up + "/0001", p1).status_code in (200, 201)
    c1 = ok(f, "lookup", {"path": up + "/0001"})["chunks"]
    assert len(c1) == 3
    # part 2: two blobs, of which the object uses only the first; part 3: one blob
    p2a, p2b, p3 = b"b" * 3000, b"X" * 100, b"c" * 777
    c2 = part_with_chunks(f, up + "/0002", [p2a, p2b])["chunks"]
    c3 = part_with_chunks(f, up + "/0003", [p3])["chunks"]
    # an old object at the key, replaced: its chunk is freed
    old_fid = upload_blob(f, b"old object")
    ok(f, "create", {"entry": {"path": "/cm/obj", "mode": S_IFREG | 0o644, "chunks": [
        {"fileId": old_fid, "offset": 0, "size": 10, "mtimeNs": 1}]}})
    s = Stream(f, pathPrefix="/cm/")
    try:
        chunks = (shifted(c1, 0) + shifted(c2[:1], len(p1)) +
                  shifted(c3, len(p1) + len(p2a)))
        e = ok(f, "create", {"entry": {"path": "/cm/obj", "mode": S_IFREG | 0o644,
                                       "mime": "application/x-test", "chunks": chunks,
                                       "xattrs": {"user.etag": b64(b"md5-3")}},
                             "consume": [up + "/0003", up + "/0001", up + "/0002"]},
               status=(200,))
        assert e["size"] == len(p1) + len(p2a) + len(p3) and len(e["chunks"]) == 5
        assert e["mime"] == "application/x-test"
        evs = s.events(4, timeout=5)
        assert [kind(x) for x in evs] == [
            ("update", "/cm/obj"), ("delete", up + "/0001"), ("delete", up + "/0002"),
            ("delete", up + "/0003")], evs
    finally:
        s.close()
    want = p1 + p2a + p3
    assert f.get("/cm/obj").content == want
    for p in ("/0001", "/0002", "/0003"):
        assert not exists(f, up + p)
    assert ok(f, "list", {"dir": up})["entries"] == []
    # the chunks not taken over are freed: part 2's second blob and the old object's
    for fid in (c2[1]["fileId"], old_fid):
        url = blob_url(f, fid)
        wait_until(lambda: requests.get(url, timeout=10).status_code == 404, timeout=20,
                   what="chunk %s freed" % fid)
    # the garbage worker has run over that transaction's queue: the kept blobs stay
    f.gc_pass()
    for c in chunks:
        assert requests.get(blob_url(f, c["fileId"]), timeout=10).status_code == 200, c
    assert f.get("/cm/obj").content == want
    # deleting the object later frees them, as any file's
    ok(f, "delete", {"path": "/cm/obj"})
    url = blob_url(f, chunks[-1]["fileId"])
    wait_until(lambda: requests.get(url, timeout=10).status_code == 404, timeout=20,
               what="the object's chunks freed with it")


def test_create_consume_refusals(mini_filer):
    """A missing, directory, special or hard-linked consumed path changes nothing;
    malformed lists are 400."""
    f = mini_filer
    up = "/cr/.uploads/u"
    ok(f, "create", {"entry": {"path": up, "mode": S_IFDIR | 0o755}, "parents": True})
    parts = [part_with_chunks(f, "%s/%d" % (up, i), [b"%d" % i * 100]) for i in range(3)]
    paths = [p["fullPath"] for p in parts]
    chunks = [dict(p["chunks"][0], offset=100 * i) for i, p in enumerate(parts)]
    entry = {"path": "/cr/obj", "mode": S_IFREG | 0o644, "chunks": chunks}
    before = {p: ok(f, "lookup", {"path": p})["etag"] for p in paths}

    def unchanged():
        assert not exists(f, "/cr/obj")
        assert {p: ok(f, "lookup", {"path": p})["etag"] for p in paths} == before

    err(f, "create", {"entry": entry, "consume": paths + [up + "/9"]}, 404, "ENOENT")
    unchanged()
    mkdir(f, up + "/dir")
    err(f, "create", {"entry": entry, "consume": paths + [up + "/dir"]}, 409, "EISDIR")
    unchanged()
    ok(f, "create", {"entry": {"path": up + "/sym", "mode": S_IFLNK | 0o777,
                               "symlinkTarget": "0"}})
    err(f, "create", {"entry": entry, "consume": paths + [up + "/sym"]}, 400, "EINVAL")
    unchanged()
    mkfile(f, up + "/linked", b"L")
    ok(f, "link", {"target": up + "/linked", "newPath": up + "/linked2"})
    err(f, "create", {"entry": entry, "consume": paths + [up + "/linked"]}, 400, "EINVAL")
    unchanged()
    # ifEtag on a missing target: 404, the parts stay
    err(f, "create", {"entry": entry, "consume": paths, "ifEtag": "0" * 16}, 404, "ENOENT")
    unchanged()
    for bad in ([], [paths[0], paths[0]], ["/cr/obj"], ["relative"], ["/"], [up + "/a/../b"],
                [up + "/x/"], [5], "one", None, ["/ok"] * 2,
                ["/p%d" % i for i in range(10001)]):
        err(f, "create", {"entry": entry, "consume": bad}, 400, "EINVAL")
    err(f, "create", {"entry": entry, "consume": paths, "consumeB64": [b64(b"/x")]}, 400,
        "EINVAL")
    for bad in (["!!"], [b64(b"/a\x00b")], [b64(b"rel")]):
        err(f, "create", {"entry": entry, "consumeB64": bad}, 400, "EINVAL")
    unchanged()
    # a parent of the target among the consumed files: the target's parent is not a dir
    err(f, "create", {"entry": dict(entry, path=paths[0] + "/x"), "consume": [paths[1]],
                      "parents": True}, 409, "ENOTDIR")
    unchanged()
    # and then it works, the parts' bytes in the object
    ok(f, "create", {"entry": entry, "consume": paths}, status=(201,))
    assert f.get("/cr/obj").content == b"0" * 100 + b"1" * 100 + b"2" * 100
    assert not any(exists(f, p) for p in paths)


def test_create_consume_bytes_paths(mini_filer):
    """consumeB64: parts whose names are not UTF-8."""
    f = mini_filer
    mkdir(f, "/cb")
    raw = [b"/cb/p\xff1", b"/cb/p\xfe2"]
    chunks = []
    for i, p in enumerate(raw):
        fid = upload_blob(f, b"%d" % i * 10)
        ok(f, "create", {"entry": {"pathB64": b64(p), "mode": S_IFREG | 0o644, "chunks": [
            {"fileId": fid, "offset": 0, "size": 10, "mtimeNs": 1}]}})
        chunks.append({"fileId": fid, "offset": 10 * i, "size": 10, "mtimeNs": 1})
    ok(f, "create", {"entry": {"path": "/cb/obj", "mode": S_IFREG | 0o644, "chunks": chunks},
                     "consumeB64": [b64(p) for p in raw]}, status=(201,))
    assert f.get("/cb/obj").content == b"0" * 10 + b"1" * 10
    assert [x["name"] for x in ok(f, "list", {"dir": "/cb"})["entries"]] == ["obj"]


def test_create_consume_race(store_filer):
    """Two completes consuming the same parts at once (different keys, so only the
    consumed paths' locks order them): exactly one succeeds, the other is 404 and
    leaves nothing behind."""
    f = store_filer
    mkdir(f, "/rc")
    for round_ in range(4):
        up = "/rc/u%d" % round_
        mkdir(f, up)
        parts = [part_with_chunks(f, "%s/%d" % (up, i), [b"%d" % i * 50]) for i in range(4)]
        chunks = [dict(p["chunks"][0], offset=50 * i) for i, p in enumerate(parts)]
        paths = [p["fullPath"] for p in parts]
        results = []
        barrier = threading.Barrier(2)

        def worker(key, order):
            barrier.wait()
            r = call(f, "create", {"entry": {"path": "%s-%s" % (up, key),
                                             "mode": S_IFREG | 0o644, "chunks": chunks},
                                   "consume": order})
            results.append((r.status_code, r.json().get("code"), key))

        ts = [threading.Thread(target=worker, args=("a", paths)),
              threading.Thread(target=worker, args=("b", paths[::-1]))]
        [t.start() for t in ts]
        [t.join() for t in ts]
        wins = [k for s, _, k in results if s in (200, 201)]
        assert len(wins) == 1, results
        assert [(s, c) for s, c, _ in results if s not in (200, 201)] == [(404, "ENOENT")]
        loser = "b" if wins[0] == "a" else "a"
        assert not exists(f, "%s-%s" % (up, loser))
        assert f.get("%s-%s" % (up, wins[0])).content == b"".join(
            b"%d" % i * 50 for i in range(4))
        assert ok(f, "list", {"dir": up})["entries"] == []


def put_raw_blob(f, data):
    """A blob stored byte for byte (assign + volume PUT)."""
    a = ok(f, "assign", {"count": 1})["fids"][0]
    r = requests.put("http://%s/%s" % (a["url"], a["fid"]), data=data, timeout=30,
                     headers={"Content-Type": "application/octet-stream"})
    assert r.status_code in (200, 201), r.text
    return a["fid"]


def manifest_blob(chunks):
    """A manifest blob (docs/filer-entry-format.md) listing chunks (request form)."""
    import struct
    out = bytearray([1]) + struct.pack(">I", len(chunks))
    for c in chunks:
        fid = c["fileId"].encode()
        out += struct.pack(">H", len(fid)) + fid
        out += struct.pack(">QQq", c["offset"], c["size"], c["mtimeNs"])
        out += struct.pack(">H", 0) + bytes([0])
    return bytes(out)


def test_create_consume_manifest_parts(mini_filer):
    """A part whose chunk is a manifest: listed as is, the manifest and its members are
    kept; resolved by the client (members listed, not the manifest), the manifest blob
    and the members the object does not list are freed, the listed ones kept."""
    from conftest import wait_until
    f = mini_filer
    mkdir(f, "/cmf")
    parts, members = [], []
    for i, (x, y) in enumerate(((b"m", b"n"), (b"k", b"l"))):
        ms = [{"fileId": upload_blob(f, x * 1000), "offset": 0, "size": 1000, "mtimeNs": 1},
              {"fileId": upload_blob(f, y * 1000), "offset": 1000, "size": 1000, "mtimeNs": 2}]
        man = put_raw_blob(f, manifest_blob(ms))
        ok(f, "create", {"entry": {"path": "/cmf/p%d" % i, "mode": S_IFREG | 0o644, "chunks": [
            {"fileId": man, "offset": 0, "size": 2000, "mtimeNs": 2, "isManifest": True}]}})
        assert f.get("/cmf/p%d" % i).content == x * 1000 + y * 1000
        parts.append(man)
        members.append(ms)
    chunks = [{"fileId": parts[0], "offset": 0, "size": 2000, "mtimeNs": 2, "isManifest": True},
              dict(members[1][0], offset=2000)]
    ok(f, "create", {"entry": {"path": "/cmf/obj", "mode": S_IFREG | 0o644, "chunks": chunks},
                     "consume": ["/cmf/p0", "/cmf/p1"]}, status=(201,))
    want = b"m" * 1000 + b"n" * 1000 + b"k" * 1000
    assert f.get("/cmf/obj").content == want
    for fid in (parts[1], members[1][1]["fileId"]):
        url = blob_url(f, fid)
        wait_until(lambda: requests.get(url, timeout=10).status_code == 404, timeout=20,
                   what="unlisted %s freed" % fid)
    f.gc_pass()
    for fid in (parts[0], members[0][0]["fileId"], members[0][1]["fileId"],
                members[1][0]["fileId"]):
        assert requests.get(blob_url(f, fid), timeout=10).status_code == 200, fid
    assert f.get("/cmf/obj").content == want


# ---- create: moves; delete and rename: ifEtag (S3 versioning) --------------------


def events_of(f, prefix, action, n):
    """The first n events under prefix caused by action() (read on this thread, so
    closing the stream does not wait for a heartbeat)."""
    import json
    r = requests.get(f.u("/.meta/subscribe"), params={"pathPrefix": prefix}, stream=True,
                     timeout=10)
    try:
        lines = r.iter_lines()
        assert set(json.loads(next(lines))) == {"tsNs"}  # the resume point
        action()
        out = []
        while len(out) < n:
            line = next(lines)
            if line and "directory" in json.loads(line):
                out.append(json.loads(line))
        return out
    finally:
        r.close()


def test_create_moves(mini_filer):
    """moves: the current file goes to a version path (parents made) in the create's
    transaction, keeping its chunks, xattrs, mode and times; the new entry takes its
    place (201: the move made room). Events: parents (each with its parent's link count),
    the rename, then the entry."""
    from test_filer_events import kind
    f = mini_filer
    mkdir(f, "/mv")
    old_fid = upload_blob(f, b"version one")
    e0 = ok(f, "create", {"entry": {"path": "/mv/k", "mode": S_IFREG | 0o640, "mtimeNs": 77,
                                    "chunks": [{"fileId": old_fid, "offset": 0, "size": 11,
                                                "mtimeNs": 1}],
                                    "xattrs": {"user.v": b64(b"1")}}})
    got = []
    evs = events_of(f, "/mv/", lambda: got.append(ok(f, "create", {
        "entry": {"path": "/mv/k", "mode": S_IFREG | 0o644, "content": b64(b"version two")},
        "moves": [{"from": "/mv/k", "to": "/mv/.v/k/1", "ifEtag": e0["etag"].upper()}]},
        status=(201,))), 6)
    e1 = got[0]
    assert [kind(x) for x in evs] == [
        ("create", "/mv/.v"), ("update", "/mv"), ("create", "/mv/.v/k"), ("update", "/mv/.v"),
        ("rename", "/mv/k", "/mv/.v/k/1"), ("create", "/mv/k")], evs
    assert "xattrs" not in e1 and f.get("/mv/k").content == b"version two"
    v1 = ok(f, "lookup", {"path": "/mv/.v/k/1"})
    assert v1["xattrs"] == {"user.v": b64(b"1")} and v1["mode"] == S_IFREG | 0o640
    assert v1["mtimeNs"] == 77 and v1["crtimeNs"] == e0["crtimeNs"]
    assert [c["fileId"] for c in v1["chunks"]] == [old_fid] and v1["nlink"] == 1
    for d in ("/mv/.v", "/mv/.v/k"):
        assert ok(f, "lookup", {"path": d})["isDirectory"] is True
    # the moved file's chunk was neither freed nor claimed: its bytes read back
    assert f.get("/mv/.v/k/1").content == b"version one"
    assert requests.get(blob_url(f, old_fid), timeout=10).content == b"version one"
    # moves of files other than the target (from a version path, bytes names): an
    # existing target is replaced (200)
    mkfile(f, "/mv/other", b"o")
    ok(f, "create", {"entry": {"path": "/mv/other", "mode": S_IFREG | 0o644},
                     "moves": [{"from": "/mv/.v/k/1", "to": "/mv/.v/k/2"},
                               {"fromB64": b64(b"/mv/k"), "toB64": b64(b"/mv/.v/k/\xff")}]},
       status=(200,))
    assert not exists(f, "/mv/k") and not exists(f, "/mv/.v/k/1")
    assert f.get("/mv/.v/k/2").content == b"version one"
    assert base64.b64decode(ok(f, "lookup", {"pathB64": b64(b"/mv/.v/k/\xff")})["content"]) \
        == b"version two"
    assert f.get("/mv/other").content == b""


def test_create_moves_exclusive(mini_filer):
    """With exclusive the target must be absent after the moves: moving it away makes
    room; moving something else does not."""
    f = mini_filer
    mkdir(f, "/mx")
    mkfile(f, "/mx/k", b"cur")
    mkfile(f, "/mx/j", b"j")
    body = {"entry": {"path": "/mx/k", "mode": S_IFREG | 0o644, "content": b64(b"new")},
            "exclusive": True}
    err(f, "create", body, 409, "EEXIST")
    err(f, "create", dict(body, moves=[{"from": "/mx/j", "to": "/mx/j2"}]), 409, "EEXIST")
    assert exists(f, "/mx/j") and not exists(f, "/mx/j2")
    ok(f, "create", dict(body, moves=[{"from": "/mx/k", "to": "/mx/old"}]), status=(201,))
    assert f.get("/mx/k").content == b"new" and f.get("/mx/old").content == b"cur"


def test_create_quiet(mini_filer):
    """quiet: the answer is only the new entry's etag, the one lookup shows; a bad value
    is 400."""
    f = mini_filer
    mkdir(f, "/mq")
    body = {"entry": {"path": "/mq/k", "mode": S_IFREG | 0o644, "content": b64(b"x" * 4096)},
            "quiet": True}
    got = ok(f, "create", body, status=(201,))
    assert list(got) == ["etag"] and got["etag"] == ok(f, "lookup", {"path": "/mq/k"})["etag"]
    assert list(ok(f, "create", body, status=(200,))) == ["etag"]
    err(f, "create", dict(body, quiet="yes"), 400, "EINVAL")
    assert f.get("/mq/k").content == b"x" * 4096


def test_create_move_into_own_directory(mini_filer):
    """A move below its own from turns the file into the directory holding it, in the
    create's transaction, before the target's parents are made (how the S3 gateway
    keeps the object 'a' beside 'a/b'); a stale ifEtag changes nothing."""
    f = mini_filer
    mkdir(f, "/mo")
    a = mkfile(f, "/mo/a", b"A")
    entry = {"path": "/mo/a/b", "mode": S_IFREG | 0o644, "content": b64(b"B")}
    err(f, "create", {"entry": entry, "moves": [
        {"from": "/mo/a", "to": "/mo/a/.s3~object", "ifEtag": "0" * 16}]}, 412, "EPRECOND")
    assert not ok(f, "lookup", {"path": "/mo/a"}).get("isDirectory")
    ok(f, "create", {"entry": entry, "moves": [
        {"from": "/mo/a", "to": "/mo/a/.s3~object", "ifEtag": a["etag"]}]})
    assert ok(f, "lookup", {"path": "/mo/a"})["isDirectory"]
    assert f.get("/mo/a/.s3~object").content == b"A"
    assert f.get("/mo/a/b").content == b"B"


def test_create_moves_refusals(mini_filer):
    """A stale ifEtag (412), a missing from (404), an existing to (409), a directory
    (409 EISDIR), another kind or a hard-linked file (400): nothing changes, no parent
    left behind, earlier moves rolled back. Bad shapes are 400."""
    f = mini_filer
    mkdir(f, "/mr")
    a = mkfile(f, "/mr/a", b"A")
    mkfile(f, "/mr/b", b"B")
    mkfile(f, "/mr/e", b"E")
    entry = {"path": "/mr/t", "mode": S_IFREG | 0o644, "content": b64(b"T")}
    before = {p: ok(f, "lookup", {"path": p})["etag"] for p in ("/mr/a", "/mr/b", "/mr/e")}

    def unchanged():
        assert not exists(f, "/mr/t") and not exists(f, "/mr/v")
        assert {p: ok(f, "lookup", {"path": p})["etag"] for p in before} == before

    first = {"from": "/mr/a", "to": "/mr/v/a", "ifEtag": a["etag"]}
    for bad, status, code in (
            ({"from": "/mr/b", "to": "/mr/v/b", "ifEtag": a["etag"]}, 412, "EPRECOND"),
            ({"from": "/mr/none", "to": "/mr/v/n"}, 404, "ENOENT"),
            ({"from": "/mr/b", "to": "/mr/a"}, 400, "EINVAL"),  # a path twice
            ({"from": "/mr/b", "to": "/mr/e/x"}, 409, "ENOTDIR")):
        err(f, "create", {"entry": entry, "moves": [first, bad], "parents": True}, status, code)
        unchanged()
    mkfile(f, "/mr/c", b"C")
    err(f, "create", {"entry": entry, "moves": [first, {"from": "/mr/b", "to": "/mr/c"}]},
        409, "EEXIST")
    unchanged()
    mkdir(f, "/mr/d")
    err(f, "create", {"entry": entry, "moves": [{"from": "/mr/d", "to": "/mr/v/d"}]}, 409,
        "EISDIR")
    ok(f, "create", {"entry": {"path": "/mr/s", "mode": S_IFLNK | 0o777,
                               "symlinkTarget": "a"}})
    err(f, "create", {"entry": entry, "moves": [{"from": "/mr/s", "to": "/mr/v/s"}]}, 400,
        "EINVAL")
    mkfile(f, "/mr/h", b"H")
    ok(f, "link", {"target": "/mr/h", "newPath": "/mr/h2"})
    err(f, "create", {"entry": entry, "moves": [{"from": "/mr/h", "to": "/mr/v/h"}]}, 400,
        "EINVAL")
    # a refusal of the target after the moves rolls them back too
    err(f, "create", {"entry": entry, "moves": [first], "ifEtag": "0" * 16}, 404, "ENOENT")
    unchanged()
    mv = {"from": "/mr/a", "to": "/mr/v/a"}
    for bad in ("x", [], {}, [mv] * 1 + [{"from": "/mr/x%d" % i, "to": "/mr/y%d" % i}
                                        for i in range(16)],
                [mv, mv], [mv, {"from": "/mr/b", "to": "/mr/v/a"}],
                [mv, {"from": "/mr/v/a", "to": "/mr/z"}], [{"from": "/mr/a", "to": "/mr/a"}],
                [{"from": "/mr/a", "to": "/mr/t"}], [{"from": "/mr/c", "to": "/mr/v/c"}],
                [{"from": "/mr/a", "to": "/mr/c"}], [{"from": "/", "to": "/mr/z"}],
                [{"from": "/mr/a", "to": "/"}], [{"from": "/mr/a/", "to": "/mr/z"}],
                [{"from": "/mr/a", "to": "/mr/./z"}], [{"from": "/mr/a"}], [{"to": "/mr/z"}],
                [dict(mv, ifEtag="abc")], [dict(mv, ifEtag=5)], [dict(mv, color=1)], ["/mr/a"],
                [dict(mv, fromB64=b64(b"/mr/a"))]):
        err(f, "create", {"entry": entry, "moves": bad, "consume": ["/mr/c"]}, 400, "EINVAL")
    unchanged()
    # and then it works
    ok(f, "create", {"entry": entry, "moves": [first], "parents": True}, status=(201,))
    assert f.get("/mr/v/a").content == b"A" and f.get("/mr/t").content == b"T"


def test_create_moves_race(store_filer):
    """8 creates at once, each moving the same current file to its own version path
    with the same ifEtag: exactly one wins, the others are 412 and leave nothing."""
    f = store_filer
    mkdir(f, "/mrc")
    for round_ in range(3):
        key = "/mrc/k%d" % round_
        cur = mkfile(f, key, b"old")
        results = []
        barrier = threading.Barrier(8)

        def worker(i):
            barrier.wait()
            r = call(f, "create", {"entry": {"path": key, "mode": S_IFREG | 0o644,
                                             "content": b64(b"new%d" % i)},
                                   "moves": [{"from": key, "to": "%s.v/%d" % (key, i),
                                              "ifEtag": cur["etag"]}],
                                   "parents": True})
            results.append((r.status_code, r.json().get("code"), i))

        ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        [t.start() for t in ts]
        [t.join() for t in ts]
        wins = [i for s, _, i in results if s in (200, 201)]
        assert len(wins) == 1, results
        assert sorted((s, c) for s, c, _ in results if s not in (200, 201)) == \
            [(412, "EPRECOND")] * 7, results
        assert f.get(key).content == b"new%d" % wins[0]
        names = [x["name"] for x in ok(f, "list", {"dir": key + ".v"})["entries"]]
        assert names == ["%d" % wins[0]]
        assert f.get("%s.v/%d" % (key, wins[0])).content == b"old"


def test_delete_if_etag(mini_filer):
    """delete ifEtag: only that version goes; another is 412 and nothing changes."""
    f = mini_filer
    mkdir(f, "/de")
    e = mkfile(f, "/de/f", b"1")
    e2 = mkfile(f, "/de/f", b"2")
    err(f, "delete", {"path": "/de/f", "ifEtag": e["etag"]}, 412, "EPRECOND")
    assert f.get("/de/f").content == b"2"
    ok(f, "delete", {"path": "/de/f", "ifEtag": e2["etag"].upper()})
    assert not exists(f, "/de/f")
    err(f, "delete", {"path": "/de/f", "ifEtag": e2["etag"]}, 404, "ENOENT")
    # a directory, recursive: the top entry is compared
    d = mkdir(f, "/de/d")
    mkfile(f, "/de/d/x")
    err(f, "delete", {"path": "/de/d", "recursive": True, "ifEtag": e["etag"]}, 412,
        "EPRECOND")
    assert exists(f, "/de/d/x")
    ok(f, "delete", {"path": "/de/d", "recursive": True, "ifEtag": d["etag"]})
    assert not exists(f, "/de/d")
    for bad in ("abc", 5, "", "g" * 16):
        err(f, "delete", {"path": "/de", "ifEtag": bad}, 400, "EINVAL")


def test_rename_if_etag(mini_filer):
    """rename ifEtag: to must exist at that etag (404 / 412) and is replaced; it
    excludes noReplace and exchange."""
    f = mini_filer
    mkdir(f, "/re")
    mkfile(f, "/re/a", b"A")
    b = mkfile(f, "/re/b", b"B")
    err(f, "rename", {"from": "/re/a", "to": "/re/c", "ifEtag": b["etag"]}, 404, "ENOENT")
    err(f, "rename", {"from": "/re/none", "to": "/re/b", "ifEtag": b["etag"]}, 404, "ENOENT")
    b2 = mkfile(f, "/re/b", b"B2")
    err(f, "rename", {"from": "/re/a", "to": "/re/b", "ifEtag": b["etag"]}, 412, "EPRECOND")
    assert f.get("/re/a").content == b"A" and f.get("/re/b").content == b"B2"
    for bad in ({"noReplace": True}, {"exchange": True}, {"ifEtag": "xyz"}):
        body = {"from": "/re/a", "to": "/re/b", "ifEtag": b2["etag"]}
        body.update(bad)
        err(f, "rename", body, 400, "EINVAL")
    ok(f, "rename", {"from": "/re/a", "to": "/re/b", "ifEtag": b2["etag"]})
    assert not exists(f, "/re/a") and f.get("/re/b").content == b"A"
