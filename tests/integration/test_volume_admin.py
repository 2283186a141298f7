"""Volume administration on real volume servers: status, file and tail streaming, volume copy
(with a writer running, refused when present, bad input, kill -9 mid-way), the needles listing
and raw records repairing a replica, a full disk turning a volume read-only, and bad -dir values.
docs/internal-protocol.md ("Volume administration") describes every endpoint."""

import json
import os
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests

from conftest import WEEDFS, assign, free_port, upload, wait_until

MiB = 1 << 20


def fid(vid, key, cookie):
    return "%d,%x%08x" % (vid, key, cookie)


def admin(vol, what, method="GET", **params):
    return requests.request(method, "http://%s/admin/volume/%s" % (vol.url, what), params=params,
                            timeout=120)


def status(vol, vid):
    r = admin(vol, "status", volume=vid)
    assert r.status_code == 200, r.text
    return r.json()


def needles(vol, vid):
    r = admin(vol, "needles", volume=vid)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/x-ndjson"
    return {n["id"]: n for n in map(json.loads, r.text.splitlines())}


def make_volume(vol, vid, **params):
    r = requests.get("http://%s/admin/assign_volume" % vol.url, params=dict(volume=vid, **params),
                     timeout=30)
    assert r.status_code == 200, r.text


def put(vol, vid, key, data, cookie=0x1234abcd):
    r = upload(vol.url, fid(vid, key, cookie), data)
    assert r.status_code == 201, r.text


def delete(vol, vid, key, cookie=0x1234abcd):
    r = requests.delete("http://%s/%s" % (vol.url, fid(vid, key, cookie)), timeout=30)
    assert r.status_code == 202, r.text


def get(vol, vid, key, cookie=0x1234abcd):
    return requests.get("http://%s/%s" % (vol.url, fid(vid, key, cookie)), timeout=60)


def leftovers(vol):
    return sorted(p.name for p in vol.dir.iterdir() if p.name.endswith(".copying"))


def fill(vol, vid, rng, keys):
    """Needles of several sizes (one over 1 MiB), some deleted; returns {key: bytes or None}."""
    want = {}
    sizes = [0, 1, 100, 4096, 65535, 300000, int(1.5 * MiB), 3 * MiB]
    for i, key in enumerate(keys):
        data = rng.randbytes(sizes[i % len(sizes)])
        put(vol, vid, key, data)
        want[key] = data
    for key in keys[1::5]:
        delete(vol, vid, key)
        want[key] = None
    return want


def check_target(vol, vid, want):
    for key, data in want.items():
        r = get(vol, vid, key)
        if data is None:
            assert r.status_code == 404, (key, r.status_code)
        else:
            assert r.status_code == 200, (key, r.status_code, r.text[:200])
            assert r.content == data, key


def test_status_and_file_snapshot(cluster):
    m = cluster.master()
    src = cluster.volume(m)
    make_volume(src, 5, replication="000", collection="pics")
    rng = random.Random(5)
    want = fill(src, 5, rng, list(range(1, 11)))
    st = status(src, 5)
    assert st["collection"] == "pics" and st["replication"] == "000" and st["ttl"] == ""
    assert st["readOnly"] is False and st["diskFull"] is False
    assert st["idxSize"] == 16 * (10 + 2) and st["fileCount"] == 10 and st["deleteCount"] == 2
    assert st["datSize"] == (src.dir / "pics_5.dat").stat().st_size
    assert st["lastAppendAtNs"] > (time.time() - 300) * 1e9
    for ext, size in (("dat", st["datSize"]), ("idx", st["idxSize"])):
        r = admin(src, "file", volume=5, ext=ext, size=size, revision=st["compactRevision"])
        assert r.status_code == 200, r.text
        assert r.headers["X-Volume-Revision"] == str(st["compactRevision"])
        assert r.content == (src.dir / ("pics_5." + ext)).read_bytes()[:size]
    # a prefix of the .dat, and the tail after it
    r = admin(src, "file", volume=5, ext="dat", size=4096)
    assert r.content == (src.dir / "pics_5.dat").read_bytes()[:4096]
    put(src, 5, 99, b"appended later")
    r = admin(src, "tail", volume=5, since=st["datSize"], revision=st["compactRevision"])
    assert r.status_code == 200
    assert r.content == (src.dir / "pics_5.dat").read_bytes()[st["datSize"]:]
    assert b"appended later" in r.content
    assert int(r.headers["X-Volume-Dat-Size"]) == st["datSize"] + len(r.content)
    # a vacuum moves every offset: the old revision is refused
    for step in ("compact", "commit"):
        r = requests.get("http://%s/admin/vacuum/%s" % (src.url, step), params={"volume": 5},
                         timeout=60)
        assert r.status_code == 200, r.text
    st2 = status(src, 5)
    assert st2["compactRevision"] == st["compactRevision"] + 1
    r = admin(src, "file", volume=5, ext="idx", size=16, revision=st["compactRevision"])
    assert r.status_code == 409
    r = admin(src, "tail", volume=5, since=st2["datSize"], revision=st["compactRevision"])
    assert r.status_code == 409
    check_target(src, 5, want)


def test_copy_with_writer(cluster):
    # no automatic repair: the copy leaves a 000 volume with two differing copies, which
    # the master would bring level behind the test's back
    m = cluster.master(extra=["-repairDelaySeconds=0"])
    src, dst = cluster.volume(m), cluster.volume(m)
    make_volume(src, 7, replication="000")
    rng = random.Random(7)
    want = fill(src, 7, rng, list(range(1, 25)))
    before = status(src, 7)
    assert before["datSize"] > 6 * MiB

    stop = threading.Event()
    written = {}
    errors = []

    def writer():
        key = 1000
        while not stop.is_set():
            data = b"w%d" % key * 50
            try:
                put(src, 7, key, data)
                written[key] = data
            except AssertionError as e:  # reported below
                errors.append(e)
                return
            key += 1

    result = {}

    def copy():
        result["r"] = admin(dst, "copy", "POST", volume=7, source=src.url, limitMBps=4)

    w = threading.Thread(target=writer)
    c = threading.Thread(target=copy)
    w.start()
    c.start()
    # mid-transfer (the status has been taken): these can only arrive by the tail
    wait_until(lambda: admin(dst, "status", volume=7).json()
               .get("copy", {}).get("bytesCopied", 0) > 0, 30, "copy in progress")
    during = fill(src, 7, rng, list(range(500, 510)))
    delete(src, 7, 3)
    want.update(during)
    want[3] = None
    c.join(120)
    stop.set()
    w.join(30)
    assert not errors, errors
    r = result["r"]
    assert r.status_code == 200, r.text
    ans = r.json()
    assert ans["volume"] == 7 and ans["source"] == src.url and ans["readOnly"] is False
    assert ans["tailRounds"] >= 2 and ans["bytesCopied"] >= before["datSize"]
    print("copy: %d bytes, %d tail rounds, %d writer needles" % (
        ans["bytesCopied"], ans["tailRounds"], len(written)))
    st = status(dst, 7)
    assert st["datSize"] == ans["datSize"] and st["idxSize"] == ans["idxSize"]
    # the target's files are exactly a prefix of the source's
    for ext in ("dat", "idx"):
        t = (dst.dir / ("7." + ext)).read_bytes()
        assert t == (src.dir / ("7." + ext)).read_bytes()[:len(t)]
    check_target(dst, 7, want)
    listed = needles(dst, 7)
    copied = {k: d for k, d in written.items() if listed.get(k, {}).get("deleted") is False}
    assert copied, "the writer's needles reach the target"
    check_target(dst, 7, copied)
    assert leftovers(dst) == []
    # the master hears of the new replica
    wait_until(lambda: dst.url in requests.get("http://%s/dir/lookup" % m.url,
                                               params={"volumeId": 7}, timeout=5).text,
               15, "master lists the copy")
    # present: refused, nothing changed
    r = admin(dst, "copy", "POST", volume=7, source=src.url)
    assert r.status_code == 409
    assert status(dst, 7)["datSize"] == st["datSize"]


def test_copy_keeps_read_only(cluster):
    m = cluster.master()
    src, dst = cluster.volume(m), cluster.volume(m)
    make_volume(src, 4, replication="000", collection="c1")
    put(src, 4, 1, b"one")
    r = requests.get("http://%s/admin/volume/readonly" % src.url,
                     params={"volume": 4, "readonly": "true"}, timeout=10)
    assert r.status_code == 200
    r = admin(dst, "copy", "POST", volume=4, source=src.url)
    assert r.status_code == 200, r.text
    assert r.json()["collection"] == "c1"
    st = status(dst, 4)
    assert st["readOnly"] is True and st["collection"] == "c1"
    assert (dst.dir / "c1_4.dat").exists()
    assert get(dst, 4, 1).content == b"one"


def test_bad_parameters_change_nothing(cluster):
    m = cluster.master()
    src, dst = cluster.volume(m), cluster.volume(m)
    make_volume(src, 3, replication="000")
    put(src, 3, 1, b"x" * 1000)
    st = status(src, 3)
    cases = [
        ("status", "GET", {}),
        ("status", "GET", {"volume": "abc"}),
        ("file", "GET", {"volume": 3, "ext": "cpd", "size": 8}),
        ("file", "GET", {"volume": 3, "ext": "dat"}),
        ("file", "GET", {"volume": 3, "ext": "dat", "size": st["datSize"] + 1}),
        ("file", "GET", {"volume": 3, "ext": "idx", "size": 15}),
        ("file", "GET", {"volume": 3, "ext": "dat", "size": 8, "revision": "x"}),
        ("tail", "GET", {"volume": 3, "since": 9}),
        ("tail", "GET", {"volume": 3, "since": st["datSize"] + 8}),
        ("tail", "GET", {"volume": 3}),
        ("needle_raw", "GET", {"volume": 3}),
        ("needle_raw", "GET", {"volume": 3, "id": "zz"}),
        ("copy", "POST", {"volume": 3}),
        ("copy", "POST", {"volume": 3, "source": "nocolon"}),
        ("copy", "POST", {"volume": 3, "source": "a/b:80"}),
        ("copy", "POST", {"volume": 3, "source": dst.url}),  # itself
        ("copy", "POST", {"volume": 3, "source": src.url, "limitMBps": "-1"}),
        ("copy", "GET", {"volume": 3, "source": src.url}),
    ]
    for what, method, params in cases:
        r = admin(dst if what == "copy" else src, what, method, **params)
        assert 400 <= r.status_code < 500, (what, params, r.status_code, r.text)
        assert "error" in r.json(), (what, params)
    assert admin(src, "status", volume=77).status_code == 404
    assert admin(src, "needle_raw", volume=3, id=12345).status_code == 404
    # a source without the volume, and one that does not answer
    r = admin(dst, "copy", "POST", volume=77, source=src.url)
    assert r.status_code == 404, r.text
    r = admin(dst, "copy", "POST", volume=3, source="127.0.0.1:%d" % free_port())
    assert r.status_code == 502, r.text
    assert admin(dst, "status", volume=3).status_code == 404 and leftovers(dst) == []
    # malformed raw records: 400 and nothing written
    raw = admin(src, "needle_raw", volume=3, id=1).content
    bad_crc = bytearray(raw)
    bad_crc[30] ^= 0xFF
    bad_size = bytearray(raw)
    bad_size[12:16] = (len(raw)).to_bytes(4, "big")
    zero_key = bytearray(raw)
    zero_key[4:12] = bytes(8)
    for body in (b"", b"garbage", raw[:-8], raw + bytes(8), bytes(bad_crc), bytes(bad_size),
                 bytes(zero_key), bytes(64)):
        r = requests.post("http://%s/admin/volume/needle_raw" % src.url, params={"volume": 3},
                          data=body, timeout=10)
        assert r.status_code == 400, (body[:20], r.status_code, r.text)
    r = requests.post("http://%s/admin/volume/needle_raw" % src.url, params={"volume": 99},
                      data=raw, timeout=10)
    assert r.status_code == 404
    st2 = status(src, 3)
    assert (st2["datSize"], st2["idxSize"], st2["fileCount"]) == \
        (st["datSize"], st["idxSize"], st["fileCount"])


def _copy_in_background(dst, src, vid, limit):
    res = {}

    def run():
        try:
            res["r"] = admin(dst, "copy", "POST", volume=vid, source=src.url, limitMBps=limit)
        except requests.RequestException as e:
            res["e"] = e
    t = threading.Thread(target=run)
    t.start()
    return t, res


def test_kill9_target_mid_copy(cluster):
    m = cluster.master()
    src, dst = cluster.volume(m), cluster.volume(m)
    make_volume(src, 8, replication="000")
    fill(src, 8, random.Random(8), list(range(1, 17)))
    st = status(src, 8)
    src_dat = (src.dir / "8.dat").read_bytes()
    t, res = _copy_in_background(dst, src, 8, 1)
    wait_until(lambda: admin(dst, "status", volume=8).json()
               .get("copy", {}).get("bytesCopied", 0) > 0, 30, "copy in progress")
    assert leftovers(dst) == ["8.dat.copying", "8.idx.copying"]
    prog = admin(dst, "status", volume=8).json()["copy"]
    assert prog["source"] == src.url and prog["bytesTotal"] == st["datSize"] + st["idxSize"]
    assert prog["bytesCopied"] < prog["bytesTotal"]
    # one copy of a volume at a time
    r = admin(dst, "copy", "POST", volume=8, source=src.url)
    assert r.status_code == 409, r.text
    dst.kill9()
    t.join(30)
    assert "e" in res or res["r"].status_code >= 500
    cluster.restart(dst)
    assert admin(dst, "status", volume=8).status_code == 404
    assert leftovers(dst) == [] and not (dst.dir / "8.dat").exists()
    assert "unfinished volume copy" in dst.log_text()
    assert status(src, 8) == st and (src.dir / "8.dat").read_bytes() == src_dat
    # and it can be run again
    r = admin(dst, "copy", "POST", volume=8, source=src.url)
    assert r.status_code == 200, r.text
    assert (dst.dir / "8.dat").read_bytes() == src_dat


def test_kill9_source_mid_copy(cluster):
    m = cluster.master()
    src, dst = cluster.volume(m), cluster.volume(m)
    make_volume(src, 6, replication="000")
    want = fill(src, 6, random.Random(6), list(range(1, 17)))
    t, res = _copy_in_background(dst, src, 6, 1)
    wait_until(lambda: admin(dst, "status", volume=6).json()
               .get("copy", {}).get("bytesCopied", 0) > 0, 30, "copy in progress")
    src.kill9()
    t.join(90)
    assert res["r"].status_code == 502, res["r"].text
    assert admin(dst, "status", volume=6).status_code == 404 and leftovers(dst) == []
    cluster.restart(src)
    check_target(src, 6, want)


def test_needles_and_raw_records_repair_a_replica(cluster):
    m = cluster.master()
    a, b = cluster.volume(m), cluster.volume(m)
    for v in (a, b):
        make_volume(v, 9, replication="000")
    rng = random.Random(9)
    data = {k: rng.randbytes(n) for k, n in ((1, 10), (2, 2000), (3, 2 * MiB), (4, 0))}
    for v in (a, b):
        for k, d in data.items():
            put(v, 9, k, d)
    # b misses a write (a big one) and a delete
    data[5] = rng.randbytes(int(1.2 * MiB))
    put(a, 9, 5, data[5])
    delete(a, 9, 2)
    na, nb = needles(a, 9), needles(b, 9)
    assert set(na) == {1, 2, 3, 4, 5} and set(nb) == {1, 2, 3, 4}
    assert na[2]["deleted"] is True and nb[2]["deleted"] is False
    assert na[5]["size"] > len(data[5]) and na[5]["cookie"] == 0x1234abcd
    assert na[2]["appendAtNs"] >= na[5]["appendAtNs"] > 0
    missing = [k for k in na if k not in nb or na[k]["deleted"] != nb[k]["deleted"]]
    assert sorted(missing) == [2, 5]
    for k in missing:
        r = admin(a, "needle_raw", volume=9, id=k)
        assert r.status_code == 200
        assert r.headers["X-Needle-Deleted"] == ("true" if na[k]["deleted"] else "false")
        dat = (a.dir / "9.dat").read_bytes()
        assert r.content == dat[na[k]["offset"]:na[k]["offset"] + len(r.content)]
        p = requests.post("http://%s/admin/volume/needle_raw" % b.url, params={"volume": 9},
                          data=r.content, timeout=30)
        assert p.status_code == 200 and p.json() == {"written": True}, p.text
        p = requests.post("http://%s/admin/volume/needle_raw" % b.url, params={"volume": 9},
                          data=r.content, timeout=30)
        assert p.json() == {"written": False}
    nb = needles(b, 9)
    for k in (2, 5):
        assert {f: nb[k][f] for f in ("cookie", "size", "appendAtNs", "deleted")} == \
            {f: na[k][f] for f in ("cookie", "size", "appendAtNs", "deleted")}
    assert get(b, 9, 5).content == data[5]
    assert get(b, 9, 2).status_code == 404
    assert get(b, 9, 1).content == data[1]
    # the repair survives a restart (the .idx entries are right)
    cluster.restart(b)
    assert get(b, 9, 5).content == data[5] and get(b, 9, 2).status_code == 404


@pytest.fixture
def small_fs(tmp_path):
    """An 8 MiB tmpfs, unmounted afterwards."""
    d = tmp_path / "small"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(d)], check=True)
    yield d
    subprocess.run(["umount", "-l", str(d)], check=False)


@pytest.mark.parametrize("how", ["memory", "spilled"])
def test_disk_full_turns_volume_read_only(cluster, small_fs, how):
    m = cluster.master(volume_size_limit_mb=64)
    full = cluster.volume(m, max_volumes=1, vdir=small_fs / "vol")
    try:
        vid = None
        for _ in range(100):
            a = assign(m)
            vid = int(a["fid"].split(",")[0])
            if how == "memory":
                r = upload(a["url"], a["fid"], os.urandom(512 << 10))
            else:  # a chunked body goes through a spill file in the volume's directory
                r = requests.put("http://%s/%s" % (a["url"], a["fid"]),
                                 data=iter([os.urandom(1 << 20)]), timeout=30)
            if r.status_code != 201:
                break
        assert r.status_code == 507, r.text
        st = wait_until(lambda: (lambda s: s if s["readOnly"] else None)(status(full, vid)), 10,
                        "volume read-only")
        assert st["diskFull"] is True
        # what was written before stays readable; later writes are refused without retrying the disk
        r = upload(full.url, a["fid"], b"small")
        assert r.status_code >= 400
        assert full.log_text().count("is full") == 1
        # the master stops assigning to it and grows elsewhere
        other = cluster.volume(m)
        wait_until(lambda: assign(m, expect_ok=False).status_code == 200, 30, "assign works")
        seen = {int(assign(m)["fid"].split(",")[0]) for _ in range(30)}
        assert vid not in seen, seen
        assert other.url
    finally:
        full.stop()


def _start_fails(args, timeout=30):
    p = subprocess.run([WEEDFS] + args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def test_bad_dir_exits(tmp_path):
    mport = free_port()
    base = ["volume", "-ip=127.0.0.1", "-port=%d" % free_port(), "-mserver=127.0.0.1:%d" % mport]
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    missing = tmp_path / "no" / "such"
    rc, out = _start_fails(base + ["-dir=%s" % missing])
    assert rc != 0 and str(missing) in out and "parent directory does not exist" in out, out
    rc, out = _start_fails(base + ["-dir=%s" % a_file])
    assert rc != 0 and str(a_file) in out and "not a directory" in out, out
    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(ro)], check=True)
    try:
        (ro / "volume").mkdir()
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        good = tmp_path / "good"
        good.mkdir()
        rc, out = _start_fails(base + ["-dir=%s,%s" % (good, ro)])
        assert rc != 0 and str(ro) in out and "not writable" in out, out
        assert "Read-only file system" in out, out
        # mini: its volume directory under -dir
        mini = ["mini", "-ip=127.0.0.1"] + ["-%s.port=%d" % (s, free_port()) for s in
                                            ("master", "volume", "filer", "s3", "iceberg", "iam",
                                             "lance")]
        rc, out = _start_fails(mini + ["-dir=%s" % ro], timeout=60)
        assert rc != 0 and str(ro) in out, out
        rc, out = _start_fails(mini + ["-dir=%s" % a_file], timeout=60)
        assert rc != 0 and str(a_file) in out, out
    finally:
        subprocess.run(["umount", "-l", str(ro)], check=False)
    assert not list(Path(good).iterdir())
