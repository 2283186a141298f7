"""Resumable uploads: the filer's TUS 1.0.0 endpoint at /.tus (core, creation,
termination), against a real master, volume server and filer."""

import base64
import hashlib
import os
import threading

import pytest
import requests

from conftest import json_error, walk, ci_get, wait_until
from filer_fixtures import start_filer

MiB = 1 << 20
TUS = {"Tus-Resumable": "1.0.0"}


@pytest.fixture(scope="module")
def tus(module_cluster):
    m = module_cluster.master()
    v = module_cluster.volume(m)
    f = start_filer(module_cluster, m, extra=["-maxMB=1"])
    return f, v


def create(f, target, length, meta=None, headers=None):
    h = dict(TUS, **{"Upload-Length": str(length)})
    if meta is not None:
        h["Upload-Metadata"] = meta
    h.update(headers or {})
    return requests.post(f.u("/.tus" + target), headers=h, timeout=60)


def patch(f, loc, offset, data, headers=None):
    h = dict(TUS, **{"Upload-Offset": str(offset),
                     "Content-Type": "application/offset+octet-stream"})
    h.update(headers or {})
    return requests.patch(f.u(loc), data=data, headers=h, timeout=120)


def head(f, loc):
    return requests.head(f.u(loc), headers=TUS, timeout=60)


def delete_count(v):
    j = requests.get("http://%s/status" % v.url, timeout=10).json()
    return sum(ci_get(d, "DeleteCount") for d in walk(j)
               if isinstance(ci_get(d, "DeleteCount"), int)
               and ci_get(d, "id", "volumeId") is not None)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def test_options_advertises(tus):
    f, _ = tus
    r = requests.options(f.u("/.tus/"), timeout=30)  # no Tus-Resumable needed
    assert r.status_code in (200, 204)
    assert r.headers["Tus-Resumable"] == "1.0.0"
    assert r.headers["Tus-Version"] == "1.0.0"
    assert set(r.headers["Tus-Extension"].split(",")) >= {"creation", "termination"}
    assert int(r.headers["Tus-Max-Size"]) == 1 * MiB * 100000


def test_upload_in_three_patches_across_restart(tus):
    f, _ = tus
    data = os.urandom(5 * MiB + 123)
    meta = "filename %s,private" % base64.b64encode(b"big.bin").decode()
    r = create(f, "/tus/dir/big.bin", len(data), meta=meta)
    assert r.status_code == 201, r.text
    assert r.headers["Tus-Resumable"] == "1.0.0"
    loc = r.headers["Location"]
    assert loc.startswith("/.tus/.uploads/")
    cuts = [0, 2 * MiB + 7, 4 * MiB, len(data)]

    r = patch(f, loc, 0, data[cuts[0]:cuts[1]])
    assert r.status_code == 204, r.text
    assert r.headers["Tus-Resumable"] == "1.0.0"
    assert int(r.headers["Upload-Offset"]) == cuts[1]
    assert f.get("/tus/dir/big.bin").status_code == 404  # not there until complete

    # the session survives a restart of the filer
    assert f.daemon.stop() == 0, f.daemon.log_tail()
    f.daemon.start()
    r = head(f, loc)
    assert r.status_code == 200
    assert int(r.headers["Upload-Offset"]) == cuts[1]
    assert int(r.headers["Upload-Length"]) == len(data)
    assert r.headers["Upload-Metadata"] == meta
    assert r.headers["Cache-Control"] == "no-store"

    r = patch(f, loc, cuts[1], data[cuts[1]:cuts[2]])
    assert r.status_code == 204, r.text
    assert int(r.headers["Upload-Offset"]) == cuts[2]
    assert f.get("/tus/dir/big.bin").status_code == 404
    r = patch(f, loc, cuts[2], data[cuts[2]:cuts[3]])
    assert r.status_code == 204, r.text
    assert int(r.headers["Upload-Offset"]) == len(data)

    g = f.get("/tus/dir/big.bin")
    assert g.status_code == 200
    assert sha(g.content) == sha(data)
    assert f.meta("/tus/dir/big.bin")["FileSize"] == len(data)
    assert head(f, loc).status_code == 404  # the session is gone


def test_wrong_offset_conflicts(tus):
    f, _ = tus
    data = os.urandom(300000)
    loc = create(f, "/tus/conflict.bin", len(data)).headers["Location"]
    r = patch(f, loc, 5, data[5:100])
    assert r.status_code == 409
    assert int(r.headers["Upload-Offset"]) == 0
    assert r.headers["Tus-Resumable"] == "1.0.0"
    assert patch(f, loc, 0, data[:1000]).status_code == 204
    r = patch(f, loc, 0, data[:1000])  # a replay of the same piece
    assert r.status_code == 409
    assert int(r.headers["Upload-Offset"]) == 1000
    assert int(head(f, loc).headers["Upload-Offset"]) == 1000
    assert patch(f, loc, 1000, data[1000:]).status_code == 204
    assert f.get("/tus/conflict.bin").content == data


def test_head_reports_progress(tus):
    f, _ = tus
    data = os.urandom(100000)
    loc = create(f, "/tus/progress.bin", len(data)).headers["Location"]
    seen = []
    for off in range(0, len(data), 30000):
        r = head(f, loc)
        assert r.status_code == 200
        assert int(r.headers["Upload-Length"]) == len(data)
        seen.append(int(r.headers["Upload-Offset"]))
        assert patch(f, loc, off, data[off:off + 30000]).status_code == 204
    assert seen == [0, 30000, 60000, 90000]
    assert f.get("/tus/progress.bin").content == data


def test_body_past_length_refused(tus):
    f, _ = tus
    loc = create(f, "/tus/short.bin", 10).headers["Location"]
    r = patch(f, loc, 0, b"x" * 11)
    assert r.status_code == 413
    assert int(head(f, loc).headers["Upload-Offset"]) == 0


def test_delete_frees_chunks(tus):
    f, v = tus
    data = os.urandom(3 * MiB)
    loc = create(f, "/tus/abandoned.bin", 4 * MiB).headers["Location"]
    before = delete_count(v)
    assert patch(f, loc, 0, data).status_code == 204
    r = requests.delete(f.u(loc), headers=TUS, timeout=60)
    assert r.status_code == 204
    assert r.headers["Tus-Resumable"] == "1.0.0"
    assert head(f, loc).status_code == 404
    assert patch(f, loc, 3 * MiB, b"more").status_code == 404
    assert requests.delete(f.u(loc), headers=TUS, timeout=60).status_code == 404
    # 3 MiB at -maxMB=1: three chunks go through the garbage queue
    wait_until(lambda: delete_count(v) >= before + 3, timeout=30, what="chunks deleted")
    assert f.get("/tus/abandoned.bin").status_code == 404


def test_empty_upload_completes_at_once(tus):
    f, _ = tus
    r = create(f, "/tus/empty.txt", 0)
    assert r.status_code == 201
    g = f.get("/tus/empty.txt")
    assert g.status_code == 200 and g.content == b""


def test_missing_tus_resumable_412(tus):
    f, _ = tus
    r = requests.post(f.u("/.tus/tus/x.bin"), headers={"Upload-Length": "5"}, timeout=30)
    assert r.status_code == 412
    assert r.headers["Tus-Version"] == "1.0.0"
    r = requests.post(f.u("/.tus/tus/x.bin"),
                      headers={"Upload-Length": "5", "Tus-Resumable": "0.2.2"}, timeout=30)
    assert r.status_code == 412
    loc = create(f, "/tus/x.bin", 5).headers["Location"]
    r = requests.patch(f.u(loc), data=b"hello", timeout=30,
                       headers={"Upload-Offset": "0",
                                "Content-Type": "application/offset+octet-stream"})
    assert r.status_code == 412
    assert requests.head(f.u(loc), timeout=30).status_code == 412
    assert requests.delete(f.u(loc), timeout=30).status_code == 412
    assert int(head(f, loc).headers["Upload-Offset"]) == 0


def test_oversize_413(tus):
    f, _ = tus
    r = create(f, "/tus/huge.bin", 1 * MiB * 100000 + 1)
    assert r.status_code == 413
    assert r.headers["Tus-Resumable"] == "1.0.0"
    json_error(r)
    assert create(f, "/tus/huge.bin", 1 << 62).status_code == 413


@pytest.mark.parametrize("headers", [
    {"Upload-Length": None},
    {"Upload-Length": "-1"},
    {"Upload-Length": "12abc"},
    {"Upload-Length": ""},
    {"Upload-Length": "99999999999999999999999"},
    {"Upload-Metadata": "bad key with spaces!"},
    {"Upload-Metadata": "k v@lue"},
    {"Upload-Metadata": ",,"},
    {"Upload-Defer-Length": "1"},
])
def test_malformed_creation_400(tus, headers):
    f, _ = tus
    h = dict(TUS, **{"Upload-Length": "10"})
    for k, val in headers.items():
        if val is None:
            h.pop(k)
        else:
            h[k] = val
    r = requests.post(f.u("/.tus/tus/bad.bin"), headers=h, timeout=30)
    assert r.status_code == 400, (headers, r.text)
    json_error(r)


def test_malformed_requests_400(tus):
    f, _ = tus
    # a target that is not a file path
    assert create(f, "/", 10).status_code == 400
    assert create(f, "/tus/dir/", 10).status_code == 400
    loc = create(f, "/tus/m.bin", 10).headers["Location"]
    for off in ("", "-1", "x", "1.5"):
        assert patch(f, loc, off, b"0123456789").status_code == 400, off
    r = patch(f, loc, 0, b"0123456789", headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 415
    assert int(head(f, loc).headers["Upload-Offset"]) == 0
    # unknown or malformed upload ids
    assert head(f, "/.tus/.uploads/" + "0" * 32).status_code == 404
    assert head(f, "/.tus/.uploads/nope").status_code == 404
    assert requests.get(f.u(loc), headers=TUS, timeout=30).status_code == 405
    # the file API is untouched
    assert f.put("/tus/plain.txt", b"plain").status_code == 201


def test_interrupted_patch_keeps_nothing(tus):
    import socket
    f, _ = tus
    data = os.urandom(2 * MiB)
    loc = create(f, "/tus/cut.bin", len(data)).headers["Location"]
    host, port = f.url.split(":")
    s = socket.create_connection((host, int(port)), timeout=30)
    s.sendall(("PATCH %s HTTP/1.1\r\nHost: %s\r\nTus-Resumable: 1.0.0\r\n"
               "Upload-Offset: 0\r\nContent-Type: application/offset+octet-stream\r\n"
               "Content-Length: %d\r\n\r\n" % (loc, f.url, len(data))).encode())
    s.sendall(data[:MiB + 5])
    s.close()
    wait_until(lambda: head(f, loc).status_code == 200, what="session readable")
    assert int(head(f, loc).headers["Upload-Offset"]) == 0
    r = patch(f, loc, 0, data)
    assert r.status_code == 204, r.text
    assert f.get("/tus/cut.bin").content == data


def test_upload_over_a_hard_linked_name_leaves_the_group(tus):
    """A finished upload replaces its target name; a hard-linked name leaves its link
    group first: the other name keeps the old bytes with its link count down to 1, and
    removing it then frees the shared chunks (nothing leaks)."""
    f, v = tus
    old = os.urandom(300000)
    assert requests.put(f.u("/tuslink/a"), data=old, timeout=60).status_code in (200, 201)
    r = requests.post(f.u("/.api/v1/link"), json={"target": "/tuslink/a",
                                                  "newPath": "/tuslink/b"}, timeout=60)
    assert r.status_code in (200, 201), r.text
    new = os.urandom(5000)
    r = create(f, "/tuslink/a", len(new))
    assert r.status_code == 201, r.text
    assert patch(f, r.headers["Location"], 0, new).status_code == 204
    assert f.get("/tuslink/a").content == new
    assert f.get("/tuslink/b").content == old
    e = requests.post(f.u("/.api/v1/lookup"), json={"path": "/tuslink/b"}, timeout=60).json()
    assert e["nlink"] == 1
    deleted0 = delete_count(v)
    assert requests.delete(f.u("/tuslink/b"), timeout=60).status_code in (200, 202, 204)
    wait_until(lambda: delete_count(v) > deleted0, timeout=30,
               what="the last name's shared chunks freed")


def test_completion_races_writes_to_the_target(tus):
    """Completing an upload writes its target under the target's path lock, taken
    before the store transaction like every writer's: taken inside it (as it once
    was), a PUT holding that lock and waiting for the store deadlocked the filer."""
    f, _ = tus
    stop = threading.Event()
    errors = []

    def writer(i):
        n = 0
        while not stop.is_set():
            try:
                r = requests.put(f.u("/race/target"), data=b"w%d-%d" % (i, n), timeout=20)
                if r.status_code not in (200, 201):
                    errors.append(r.status_code)
            except requests.RequestException as e:
                errors.append(repr(e))
                return
            n += 1

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    try:
        for k in range(30):
            empty = create(f, "/race/target", 0)  # completes at once
            assert empty.status_code == 201, empty.text
            r = create(f, "/race/target", 5)
            assert r.status_code == 201, r.text
            p = patch(f, r.headers["Location"], 0, b"tus%02d" % k)
            assert p.status_code == 204, p.text
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=30)
    assert not errors, errors[:5]
    assert all(not t.is_alive() for t in threads)
    assert requests.get(f.u("/race/target"), timeout=20).status_code == 200
