"""The filer HTTP API (`weedfs filer`, and the filer inside `weedfs mini`): uploads
inline and in chunks, reads with ranges and conditionals, listings, mkdir, delete,
mv, cp, bad input, concurrency and restarts."""

import hashlib
import os
import threading

import requests

from conftest import json_error, wait_until
from filer_fixtures import mini_filer, start_filer  # noqa: F401 - pytest fixture
from test_filer_store_pg import pg  # noqa: F401 - pytest fixture (a private PostgreSQL)

MiB = 1 << 20


def sha(b):
    return hashlib.sha256(b).hexdigest()


def blob_url(volume_url, fid):
    return "http://%s/%s" % (volume_url, fid)


# ---- uploads and reads ----------------------------------------------------------


def test_small_file_is_inline_and_round_trips(mini_filer):
    f = mini_filer
    r = f.put("/small/hello.txt", b"hello filer")
    assert r.status_code == 201, r.text
    assert r.json() == {"name": "hello.txt", "size": 11}
    r = f.get("/small/hello.txt")
    assert r.status_code == 200 and r.content == b"hello filer"
    assert r.headers["Content-Type"].startswith("text/plain")
    assert r.headers["Accept-Ranges"] == "bytes"
    m = f.meta("/small/hello.txt")
    assert m["FullPath"] == "/small/hello.txt"
    assert m["FileSize"] == 11 and m["Inline"] is True and m["chunks"] == []
    # the parent was created as a directory
    d = f.meta("/small")
    assert d["IsDirectory"] is True
    # an empty file
    assert f.put("/small/empty", b"").status_code == 201
    r = f.get("/small/empty")
    assert r.status_code == 200 and r.content == b""


def test_large_file_streams_in_chunks(mini_filer):
    f = mini_filer
    data = os.urandom(20 * MiB + 12345)
    r = f.put("/big/file.bin", data)
    assert r.status_code == 201, r.text
    assert r.json()["size"] == len(data)
    m = f.meta("/big/file.bin")
    assert m["Inline"] is False
    assert len(m["chunks"]) == 21  # -filer.maxMB=1
    assert sorted(c["offset"] for c in m["chunks"]) == [i * MiB for i in range(21)]
    assert all(c["size"] <= MiB for c in m["chunks"])
    r = f.get("/big/file.bin")
    assert r.status_code == 200
    assert int(r.headers["Content-Length"]) == len(data)
    assert sha(r.content) == sha(data)
    # HEAD: headers only
    h = requests.head(f.u("/big/file.bin"), timeout=30)
    assert h.status_code == 200 and int(h.headers["Content-Length"]) == len(data)
    assert h.content == b""


def test_range_reads(mini_filer):
    f = mini_filer
    data = os.urandom(3 * MiB + 100)
    assert f.put("/range/r.bin", data).status_code == 201
    for start, end in [(0, 0), (10, 99), (MiB - 5, MiB + 5), (2 * MiB, 3 * MiB + 99)]:
        r = f.get("/range/r.bin", headers={"Range": "bytes=%d-%d" % (start, end)})
        assert r.status_code == 206, r.text
        assert r.content == data[start:end + 1]
        assert r.headers["Content-Range"] == "bytes %d-%d/%d" % (start, end, len(data))
    r = f.get("/range/r.bin", headers={"Range": "bytes=-50"})
    assert r.status_code == 206 and r.content == data[-50:]
    r = f.get("/range/r.bin", headers={"Range": "bytes=%d-" % (len(data) - 7)})
    assert r.status_code == 206 and r.content == data[-7:]
    r = f.get("/range/r.bin", headers={"Range": "bytes=%d-" % (len(data) + 10)})
    assert r.status_code == 416
    assert r.headers["Content-Range"] == "bytes */%d" % len(data)
    # inline content ranges too
    assert f.put("/range/s.txt", b"0123456789").status_code == 201
    r = f.get("/range/s.txt", headers={"Range": "bytes=2-4"})
    assert r.status_code == 206 and r.content == b"234"


def test_conditional_reads(mini_filer):
    f = mini_filer
    assert f.put("/cond/a.txt", b"version one").status_code == 201
    r = f.get("/cond/a.txt")
    etag, lm = r.headers["ETag"], r.headers["Last-Modified"]
    assert etag and lm
    assert f.get("/cond/a.txt", headers={"If-None-Match": etag}).status_code == 304
    assert f.get("/cond/a.txt", headers={"If-Modified-Since": lm}).status_code == 304
    assert f.get("/cond/a.txt", headers={"If-None-Match": '"other"'}).status_code == 200
    assert f.put("/cond/a.txt", b"version two!").status_code == 201
    r = f.get("/cond/a.txt", headers={"If-None-Match": etag})
    assert r.status_code == 200 and r.content == b"version two!"
    assert r.headers["ETag"] != etag


def test_multipart_post(mini_filer):
    f = mini_filer
    r = f.post("/mp/", files={"file": ("photo.jpg", b"\xff\xd8jpegdata", "image/jpeg")})
    assert r.status_code == 201, r.text
    assert r.json()["name"] == "photo.jpg"
    r = f.get("/mp/photo.jpg")
    assert r.content == b"\xff\xd8jpegdata"
    assert r.headers["Content-Type"] == "image/jpeg"
    # to a full path: the path names the file
    big = os.urandom(2 * MiB + 3)
    r = f.post("/mp/named.bin", files={"file": ("ignored.bin", big)})
    assert r.status_code == 201, r.text
    assert sha(f.get("/mp/named.bin").content) == sha(big)


def test_overwrite_frees_old_chunks(mini_filer):
    f = mini_filer
    assert f.put("/ow/f.bin", os.urandom(2 * MiB)).status_code == 201
    old = [c["file_id"] for c in f.meta("/ow/f.bin")["chunks"]]
    assert len(old) == 2
    new = os.urandom(100)
    assert f.put("/ow/f.bin", new).status_code == 201
    assert f.get("/ow/f.bin").content == new
    vol = "127.0.0.1:%d" % f.daemon.volume_port
    for fid in old:
        wait_until(lambda: requests.get(blob_url(vol, fid), timeout=5).status_code == 404,
                   15, "old chunk %s freed" % fid)


def test_append(mini_filer):
    f = mini_filer
    assert f.put("/app/log", b"line1\n").status_code == 201
    r = f.put("/app/log", b"line2\n", params={"op": "append"})
    assert r.status_code == 201, r.text
    assert f.get("/app/log").content == b"line1\nline2\n"
    more = os.urandom(MiB + 7)
    assert f.put("/app/log", more, params={"op": "append"}).status_code == 201
    assert f.get("/app/log").content == b"line1\nline2\n" + more
    assert f.meta("/app/log")["FileSize"] == 12 + len(more)
    # append to a missing file creates it
    assert f.put("/app/new", b"x", params={"op": "append"}).status_code == 201
    assert f.get("/app/new").content == b"x"


def test_upload_parameters(mini_filer):
    f = mini_filer
    r = f.put("/params/p.txt", b"abc", params={"mode": "0600", "ttl": "3d"})
    assert r.status_code == 201, r.text
    m = f.meta("/params/p.txt")
    assert m["Mode"] & 0o7777 == 0o600
    assert m["TtlSec"] == 3 * 86400
    r = f.put("/params/inside", b"z" * 100000, params={"saveInside": "true"})
    assert r.status_code == 201
    m = f.meta("/params/inside")
    assert m["Inline"] is True and m["FileSize"] == 100000
    r = f.put("/params/c.bin", os.urandom(5000), params={"maxMB": "1", "fsync": "true"})
    assert r.status_code == 201
    assert len(f.meta("/params/c.bin")["chunks"]) == 1


# ---- directories and listings ----------------------------------------------------


def test_mkdir(mini_filer):
    f = mini_filer
    r = f.post("/mk/a/b/c/")
    assert r.status_code == 201, r.text
    for p in ("/mk", "/mk/a", "/mk/a/b", "/mk/a/b/c"):
        assert f.meta(p)["IsDirectory"] is True
    assert f.post("/mk/a/b/c/").status_code == 201  # idempotent
    assert f.put("/mk/file", b"x").status_code == 201
    r = f.post("/mk/file/")
    assert r.status_code == 409
    json_error(r)
    r = f.put("/mk/file/under", b"x")
    assert r.status_code == 409
    assert "file" in json_error(r)
    r = f.put("/mk/a", b"x")  # a directory is not overwritten by a file
    assert r.status_code == 409
    assert f.meta("/mk/a")["IsDirectory"] is True


def test_listing_paging_and_patterns(mini_filer):
    f = mini_filer
    names = ["f%02d.txt" % i for i in range(25)] + ["g1.log", "g2.log"]
    for n in names:
        assert f.put("/ls/" + n, n.encode()).status_code == 201
    assert f.post("/ls/sub/").status_code == 201
    everything = sorted(names + ["sub"])
    assert f.names("/ls/") == everything
    got, last = [], ""
    while True:
        r = f.get("/ls/", params={"limit": 10, "lastFileName": last},
                  headers={"Accept": "application/json"})
        j = r.json()
        assert j["Path"] == "/ls" and j["Limit"] == 10
        page = [e["FullPath"].rsplit("/", 1)[1] for e in j["Entries"] or []]
        assert len(page) <= 10
        got += page
        if not j["ShouldDisplayLoadMore"]:
            break
        assert j["LastFileName"] == page[-1]
        last = j["LastFileName"]
    assert got == everything
    assert f.names("/ls/", namePattern="f1*") == ["f%02d.txt" % i for i in range(10, 20)]
    assert f.names("/ls/", namePattern="*.log") == ["g1.log", "g2.log"]
    assert f.names("/ls/", namePattern="f?5.txt") == ["f05.txt", "f15.txt"]
    assert f.names("/ls/", namePatternExclude="f*") == ["g1.log", "g2.log", "sub"]
    assert f.names("/ls/", namePattern="f*", limit=3, lastFileName="f20.txt") == [
        "f21.txt", "f22.txt", "f23.txt"]
    e = {x["FullPath"]: x for x in f.get("/ls/", headers={"Accept": "application/json"})
         .json()["Entries"]}
    assert e["/ls/f03.txt"]["FileSize"] == 7 and "Mtime" in e["/ls/f03.txt"]
    assert e["/ls/sub"]["IsDirectory"] is True
    # browsers get HTML
    r = f.get("/ls/", headers={"Accept": "text/html,application/xhtml+xml"})
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    assert "f07.txt" in r.text
    # an empty directory
    j = f.get("/ls/sub/", headers={"Accept": "application/json"}).json()
    assert j["Entries"] in (None, []) and j["EmptyFolder"] is True


# ---- delete, move, copy -------------------------------------------------------------


def test_delete(mini_filer):
    f = mini_filer
    assert f.put("/del/a/b/x.bin", os.urandom(MiB + 1)).status_code == 201
    assert f.put("/del/a/y.txt", b"y").status_code == 201
    fids = [c["file_id"] for c in f.meta("/del/a/b/x.bin")["chunks"]]
    r = f.delete("/del/a")
    assert r.status_code == 409
    assert "recursive" in json_error(r)
    assert f.get("/del/a/y.txt").content == b"y"  # nothing changed
    r = f.delete("/del/a", params={"recursive": "false"})
    assert r.status_code == 409
    assert f.delete("/del/a/y.txt").status_code == 204
    assert f.get("/del/a/y.txt").status_code == 404
    assert f.delete("/del/a/y.txt").status_code == 404
    assert f.delete("/del/a", params={"recursive": "true"}).status_code == 204
    for p in ("/del/a", "/del/a/b", "/del/a/b/x.bin"):
        assert f.get(p).status_code == 404, p
    assert f.names("/del/") == []
    vol = "127.0.0.1:%d" % f.daemon.volume_port
    for fid in fids:
        wait_until(lambda: requests.get(blob_url(vol, fid), timeout=5).status_code == 404,
                   15, "chunk %s freed" % fid)
    # an empty directory goes without recursive
    assert f.post("/del/empty/").status_code == 201
    assert f.delete("/del/empty").status_code == 204
    # skipChunkDeletion keeps the blob
    assert f.put("/del/keep.bin", os.urandom(4096)).status_code == 201
    fid = f.meta("/del/keep.bin")["chunks"][0]["file_id"]
    assert f.delete("/del/keep.bin", params={"skipChunkDeletion": "true"}).status_code == 204
    assert requests.get(blob_url(vol, fid), timeout=5).status_code == 200
    assert f.delete("/").status_code == 400


def test_move_file_and_tree(mini_filer):
    f = mini_filer
    big = os.urandom(MiB + 5)
    assert f.put("/mv/src/a.txt", b"a").status_code == 201
    assert f.put("/mv/src/d1/b.bin", big).status_code == 201
    assert f.put("/mv/src/d1/d2/c.txt", b"c").status_code == 201
    # a file rename
    r = f.post("/mv/src/a2.txt", params={"mv.from": "/mv/src/a.txt"})
    assert r.status_code == 204, r.text
    assert f.get("/mv/src/a.txt").status_code == 404
    assert f.get("/mv/src/a2.txt").content == b"a"
    # a tree, into a new parent
    r = f.post("/mv/dst/tree", params={"mv.from": "/mv/src"})
    assert r.status_code == 204, r.text
    assert f.get("/mv/src").status_code == 404
    assert f.get("/mv/src/d1/b.bin").status_code == 404
    assert f.get("/mv/dst/tree/a2.txt").content == b"a"
    assert sha(f.get("/mv/dst/tree/d1/b.bin").content) == sha(big)
    assert f.get("/mv/dst/tree/d1/d2/c.txt").content == b"c"
    assert f.names("/mv/dst/tree/d1/") == ["b.bin", "d2"]
    assert f.meta("/mv/dst/tree/d1/d2")["FullPath"] == "/mv/dst/tree/d1/d2"
    # into an existing directory: keeps the name
    assert f.post("/mv/into/").status_code == 201
    assert f.post("/mv/into", params={"mv.from": "/mv/dst/tree/d1/d2/c.txt"}).status_code == 204
    assert f.get("/mv/into/c.txt").content == b"c"
    # onto an existing file: replaces it
    assert f.put("/mv/x", b"old").status_code == 201
    assert f.put("/mv/y", b"new").status_code == 201
    assert f.post("/mv/x", params={"mv.from": "/mv/y"}).status_code == 204
    assert f.get("/mv/x").content == b"new" and f.get("/mv/y").status_code == 404
    # refused: into itself, missing source
    r = f.post("/mv/dst/tree/d1/inner", params={"mv.from": "/mv/dst/tree"})
    assert r.status_code == 400
    json_error(r)
    assert f.get("/mv/dst/tree/a2.txt").status_code == 200
    assert f.post("/mv/z", params={"mv.from": "/mv/nothing"}).status_code == 404


def test_copy(mini_filer):
    f = mini_filer
    big = os.urandom(2 * MiB + 9)
    assert f.put("/cp/a.bin", big).status_code == 201
    assert f.put("/cp/s.txt", b"small").status_code == 201
    assert f.post("/cp/b.bin", params={"cp.from": "/cp/a.bin"}).status_code == 204
    assert f.post("/cp/t.txt", params={"cp.from": "/cp/s.txt"}).status_code == 204
    a, b = f.meta("/cp/a.bin"), f.meta("/cp/b.bin")
    assert not {c["file_id"] for c in a["chunks"]} & {c["file_id"] for c in b["chunks"]}
    assert f.delete("/cp/a.bin").status_code == 204
    assert sha(f.get("/cp/b.bin").content) == sha(big)
    assert f.get("/cp/t.txt").content == b"small"
    assert f.post("/cp/dir/").status_code == 201
    assert f.post("/cp/d2", params={"cp.from": "/cp/dir"}).status_code == 400


def test_tagging(mini_filer):
    f = mini_filer
    assert f.put("/tag/f.txt", b"tagged").status_code == 201
    r = requests.put(f.u("/tag/f.txt"), params={"tagging": ""},
                     headers={"Seaweed-k1": "v1", "seaweed-k2": "v2", "Seaweed-Other-Key": "x"},
                     timeout=10)
    assert r.status_code == 202, r.text
    ext = f.meta("/tag/f.txt")["Extended"]
    assert ext == {"Seaweed-K1": "v1", "Seaweed-K2": "v2", "Seaweed-Other-Key": "x"}
    assert f.get("/tag/f.txt").content == b"tagged"  # content untouched
    # the delete list is matched case-sensitively against the stored names
    assert f.delete("/tag/f.txt", params={"tagging": "k1,K2"}).status_code == 202
    assert f.meta("/tag/f.txt")["Extended"] == {"Seaweed-K1": "v1", "Seaweed-Other-Key": "x"}
    assert f.delete("/tag/f.txt", params={"tagging": ""}).status_code == 202
    assert "Extended" not in f.meta("/tag/f.txt")
    r = requests.put(f.u("/tag/missing"), params={"tagging": ""}, headers={"Seaweed-a": "b"},
                     timeout=10)
    assert r.status_code == 404


def test_proxy_chunk_id(mini_filer):
    f = mini_filer
    data = os.urandom(300000)
    assert f.put("/proxy/p.bin", data).status_code == 201
    fid = f.meta("/proxy/p.bin")["chunks"][0]["file_id"]
    r = f.get("/", params={"proxyChunkId": fid})
    assert r.status_code == 200 and r.content == data
    assert f.get("/", params={"proxyChunkId": "not-a-fid"}).status_code == 400
    vid = fid.split(",")[0]
    r = f.get("/", params={"proxyChunkId": vid + ",ffffffff0badf00d"})
    assert r.status_code == 404, r.text


# ---- bad input -------------------------------------------------------------------


def raw_status(f, method, target, body=b""):
    """Sends the request target exactly as given (no client-side normalisation)."""
    import http.client
    host, port = f.url.split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=30)
    c.putrequest(method, target, skip_accept_encoding=True)
    c.putheader("Content-Length", str(len(body)))
    c.endheaders()
    if body:
        c.send(body)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def test_bad_input(mini_filer):
    f = mini_filer
    assert f.post("/bad/").status_code == 201
    before = f.names("/bad/")
    for target in ["/bad/../etc", "/bad/%2e%2e/x", "/bad/./x", "/bad/a%00b",
                   "/bad/" + "n" * 256]:
        for method in ("PUT", "GET", "DELETE"):
            status, body = raw_status(f, method, target, b"data" if method == "PUT" else b"")
            assert 400 <= status < 500, (method, target, status, body)
    long_ok = "/bad/" + "n" * 255
    assert f.put(long_ok, b"ok").status_code == 201
    for params in ({"limit": "0"}, {"limit": "-1"}, {"limit": "99999999999"},
                   {"limit": "ten"}, {"lastFileName": "x" * 300}):
        r = f.get("/bad/", params=params)
        assert r.status_code == 400, (params, r.text)
        json_error(r)
    for params in ({"op": "truncate"}, {"nosuch": "1"}, {"mode": "999"}, {"ttl": "5x"},
                   {"replication": "0a0"}, {"maxMB": "0"}, {"fsync": "maybe"}):
        r = f.put("/bad/p.txt", b"x", params=params)
        assert r.status_code == 400, (params, r.text)
        json_error(r)
    r = f.post("/bad/x", params={"mv.from": "../etc"})
    assert r.status_code == 400
    r = f.delete("/bad/", params={"recursive": "perhaps"})
    assert r.status_code == 400
    assert f.get("/bad/p.txt").status_code == 404
    assert sorted(f.names("/bad/")) == sorted(before + ["n" * 255])
    r = f.get("/bad/missing")
    assert r.status_code == 404
    json_error(r)
    assert requests.request("PATCH", f.u("/bad/x"), timeout=10).status_code == 405


# ---- concurrency ---------------------------------------------------------------------


def run_threads(n, fn):
    errors, results = [], [None] * n

    def wrap(i):
        try:
            results[i] = fn(i)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    return results


def test_concurrent_writers(mini_filer):
    f = mini_filer
    # 16 clients making the same deep directory and files under it
    codes = run_threads(16, lambda i: f.post("/conc/a/b/c/").status_code)
    assert codes == [201] * 16
    codes = run_threads(16, lambda i: f.put("/conc/new%d/x/f%d" % (i % 4, i),
                                            b"%d" % i).status_code)
    assert codes == [201] * 16
    for i in range(16):
        assert f.get("/conc/new%d/x/f%d" % (i % 4, i)).content == b"%d" % i
    # 16 clients overwriting one path: each succeeds, the file is one of them, whole
    blobs = [bytes([i]) * (MiB // 2 + i) for i in range(16)]
    codes = run_threads(16, lambda i: f.put("/conc/same", blobs[i]).status_code)
    assert codes == [201] * 16
    got = f.get("/conc/same").content
    assert got in blobs
    assert f.meta("/conc/same")["FileSize"] == len(got)
    assert f.names("/conc/", namePattern="same") == ["same"]


# ---- restarts --------------------------------------------------------------------------


def test_filer_restart_keeps_everything(cluster):
    m = cluster.master()
    v = cluster.volume(m)
    f = start_filer(cluster, m, extra=["-maxMB=1"])
    big = os.urandom(3 * MiB + 1)
    assert f.put("/keep/big.bin", big).status_code == 201
    assert f.put("/keep/small.txt", b"small").status_code == 201
    assert f.post("/keep/emptydir/").status_code == 201
    assert f.post("/keep/moved.txt", params={"mv.from": "/keep/small.txt"}).status_code == 204
    assert (f.daemon.dir / "filer.db").is_file()
    assert f.daemon.stop() == 0, f.daemon.log_tail()
    f.daemon.start()
    assert sha(f.get("/keep/big.bin").content) == sha(big)
    assert f.get("/keep/moved.txt").content == b"small"
    assert f.get("/keep/small.txt").status_code == 404
    assert f.names("/keep/") == ["big.bin", "emptydir", "moved.txt"]
    assert v.alive()


def test_mini_runs_a_filer(cluster):
    from filer_fixtures import start_mini_with_filer
    mini, f = start_mini_with_filer(cluster)
    assert f.put("/m/hello.txt", b"hi mini").status_code == 201
    assert (mini.dir / "filer" / "filer.db").is_file()
    assert mini.stop() == 0, mini.log_tail()
    mini.start()
    assert f.get("/m/hello.txt").content == b"hi mini"
    assert "filer http://127.0.0.1:%d" % mini.filer_port in mini.log_text()


def test_curl_upload_download(mini_filer, tmp_path):
    """The documented commands of the man page, with the real curl."""
    import subprocess
    f = mini_filer
    src = tmp_path / "in.bin"
    src.write_bytes(os.urandom(1500000))
    p = subprocess.run(["curl", "-sS", "-f", "-T", str(src), f.u("/curl/in.bin")],
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    p = subprocess.run(["curl", "-sS", "-f", "-F", "file=@%s" % src, f.u("/curl/form/")],
                       capture_output=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = subprocess.run(["curl", "-sS", "-f", f.u("/curl/form/in.bin")],
                         capture_output=True, timeout=60).stdout
    assert sha(out) == sha(src.read_bytes())


# ---- PostgreSQL ------------------------------------------------------------------------


def test_filer_on_postgres_two_filers_one_namespace(cluster, pg):  # noqa: F811
    m = cluster.master()
    cluster.volume(m)
    dsn = "host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test" % pg.port
    f1 = start_filer(cluster, m, extra=["-store=postgres", "-postgres.dsn=" + dsn, "-maxMB=1"])
    f2 = start_filer(cluster, m, extra=["-store=postgres", "-postgres.dsn=" + dsn])
    big = os.urandom(2 * MiB + 17)
    assert f1.put("/pg/dir/big.bin", big).status_code == 201
    assert f1.put("/pg/dir/s.txt", b"small").status_code == 201
    # what one filer writes, the other reads
    assert sha(f2.get("/pg/dir/big.bin").content) == sha(big)
    assert f2.names("/pg/dir/") == ["big.bin", "s.txt"]
    assert f2.post("/pg/moved", params={"mv.from": "/pg/dir"}).status_code == 204
    assert f1.get("/pg/moved/s.txt").content == b"small"
    assert f1.get("/pg/dir/s.txt").status_code == 404
    assert f1.delete("/pg", params={"recursive": "true"}).status_code == 204
    assert f2.get("/pg/moved/big.bin").status_code == 404
    # 16 clients over both filers: parallel PostgreSQL writers racing on shared parents
    fs = (f1, f2)
    codes = run_threads(16, lambda i: fs[i % 2].put("/pgc/a/b/f%d" % i, b"%d" % i).status_code)
    assert codes == [201] * 16
    assert sorted(f1.names("/pgc/a/b/")) == sorted("f%d" % i for i in range(16))
    codes = run_threads(16, lambda i: fs[i % 2].post("/pgc/d/e/").status_code)
    assert codes == [201] * 16
    codes = run_threads(16, lambda i: fs[i % 2].put("/pgc/same", b"v%d" % i).status_code)
    assert codes == [201] * 16
    assert f2.get("/pgc/same").content in [b"v%d" % i for i in range(16)]
