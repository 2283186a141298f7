"""Uploads of moderate size (over 1 MiB, up to 8 MiB) collected in memory on the volume server.

Such bodies are written from one buffer instead of going through a spill file, as long
as a process-wide budget (64 MiB, shown in /status as UploadMemory) has room; the others
(bigger, chunked, over the budget) still spill. Checked here with real daemons: contents
and ETags (the CRC32C) of concurrent raw and multipart uploads on both paths, Content-MD5,
a client hanging up mid-body, more concurrent uploads than the budget holds (bounded
RSS, every one stored), and replication to a second server.
"""

import base64
import hashlib
import http.client
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from conftest import assign, file_count, wait_until

MiB = 1 << 20
BUDGET = 64 * MiB
MEMORY_MAX = 8 * MiB

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data):
    """Plain CRC32C, independent of the server's (isa-l) one."""
    c = 0xFFFFFFFF
    t = _CRC_TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def etag(crc):
    return '"%08x"' % crc


def upload_memory(vol):
    j = requests.get("http://%s/status" % vol.url, timeout=10).json()
    um = j["UploadMemory"]
    assert um["budget"] == BUDGET
    return um


def vm_hwm_kib(daemon):
    for line in Path("/proc/%d/status" % daemon.proc.pid).read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def is_asan(daemon):
    return "asan" in Path("/proc/%d/maps" % daemon.proc.pid).read_text()


def put(url, fid, data, **kw):
    return requests.put("http://%s/%s" % (url, fid), data=data, timeout=120, **kw)


def post_form(url, fid, name, data, mime="application/x-test"):
    # a plain field first: the server must drop it when the file part comes
    return requests.post("http://%s/%s" % (url, fid),
                         files={"note": (None, b"n" * 100), "file": (name, data, mime)},
                         timeout=120)


def chunked(data, piece=256 * 1024):
    for i in range(0, len(data), piece):
        yield data[i:i + piece]


def start_server(cl):
    m = cl.master(volume_size_limit_mb=1024)
    saved = os.environ.get("ASAN_OPTIONS")
    # a small quarantine keeps the RSS figures about what the server holds (no effect
    # without ASan)
    os.environ["ASAN_OPTIONS"] = ((saved + ":") if saved else "") + "quarantine_size_mb=8"
    try:
        v = cl.volume(m, extra=["-fileSizeLimitMB=64"])
    finally:
        if saved is None:
            del os.environ["ASAN_OPTIONS"]
        else:
            os.environ["ASAN_OPTIONS"] = saved
    return m, v


@pytest.fixture(scope="module")
def one_server(module_cluster):
    return start_server(module_cluster)


def test_concurrent_raw_and_multipart_uploads_read_back(one_server):
    m, v = one_server
    sizes = [2 * MiB, 4 * MiB + 17, MEMORY_MAX, 9 * MiB + 3]
    datas = {s: os.urandom(s) for s in sizes}
    crcs = {s: crc32c(d) for s, d in datas.items()}
    before = upload_memory(v)
    jobs = []
    for s in sizes:
        for kind in ("raw", "form", "chunked"):
            a = assign(m)
            jobs.append((s, kind, a["fid"], a["url"]))

    def run(job):
        s, kind, fid, url = job
        if kind == "raw":
            return put(url, fid, datas[s], headers={"Content-Type": "image/x-raw"})
        if kind == "form":
            return post_form(url, fid, "f%d.bin" % s, datas[s])
        return put(url, fid, chunked(datas[s]))  # no Content-Length: always spilled

    with ThreadPoolExecutor(len(jobs)) as ex:
        results = list(ex.map(run, jobs))
    for (s, kind, fid, url), r in zip(jobs, results):
        assert r.status_code == 201, (s, kind, r.status_code, r.text)
        assert r.headers["ETag"] == etag(crcs[s]), (s, kind)
        assert r.json()["size"] == s
        if kind == "form":
            assert r.json()["name"] == "f%d.bin" % s
        g = requests.get("http://%s/%s" % (url, fid), timeout=60)
        assert g.status_code == 200, (s, kind)
        assert g.content == datas[s], (s, kind)
        assert g.headers["ETag"] == etag(crcs[s]), (s, kind)
        if kind == "form":
            assert g.headers["Content-Type"] == "application/x-test"
            assert "f%d.bin" % s in g.headers.get("Content-Disposition", "")
        elif kind == "raw":
            assert g.headers["Content-Type"] == "image/x-raw"
    after = wait_until(lambda: (lambda u: u if u["held"] == 0 else None)(upload_memory(v)),
                       10, "memory budget returned")
    # 2, 4 and 8 MiB raw and multipart bodies (6) fit the budget together; a raw 9 MiB
    # body and every chunked one over 1 MiB spill
    assert after["inMemory"] - before["inMemory"] == 6, (before, after)
    assert after["spilled"] - before["spilled"] == 6, (before, after)

    # the same content again is "unchanged" on the in-memory path too
    s, kind, fid, url = jobs[3]  # 4 MiB raw
    assert kind == "raw"
    r = put(url, fid, datas[s], headers={"Content-Type": "image/x-raw"})
    assert r.status_code == 204, r.text
    assert r.headers["ETag"] == etag(crcs[s])


def test_content_md5_and_fsync_in_memory(one_server):
    m, v = one_server
    data = os.urandom(3 * MiB + 5)
    good = base64.b64encode(hashlib.md5(data).digest()).decode()
    bad = base64.b64encode(hashlib.md5(data[:-1]).digest()).decode()
    before = upload_memory(v)
    count = file_count(v)
    a = assign(m)
    r = put(a["url"], a["fid"], data, headers={"Content-MD5": bad})
    assert r.status_code == 400 and "MD5" in r.text
    r = post_form(a["url"], a["fid"], "x.bin", data)  # no Content-MD5 for the part here
    assert r.status_code == 201
    a = assign(m)
    r = requests.post("http://%s/%s" % (a["url"], a["fid"]),
                      files={"file": ("x.bin", data)}, headers={"Content-MD5": bad}, timeout=60)
    assert r.status_code == 400, "multipart body checked against Content-MD5"
    r = put(a["url"], a["fid"], data, headers={"Content-MD5": good}, params={"fsync": "true"})
    assert r.status_code == 201, r.text
    assert requests.get("http://%s/%s" % (a["url"], a["fid"]), timeout=60).content == data
    assert file_count(v) == count + 2
    after = upload_memory(v)
    assert after["inMemory"] - before["inMemory"] == 4
    assert after["held"] == 0


def test_hang_up_mid_body_returns_the_budget(one_server):
    m, v = one_server
    a = assign(m)
    host, port = a["url"].split(":")
    count = file_count(v)
    before = upload_memory(v)
    for kind in ("raw", "form"):
        c = http.client.HTTPConnection(host, int(port), timeout=30)
        c.putrequest("POST" if kind == "form" else "PUT", "/" + a["fid"])
        c.putheader("Content-Length", str(6 * MiB))
        if kind == "form":
            c.putheader("Content-Type", "multipart/form-data; boundary=XyZ")
        c.endheaders()
        if kind == "form":
            c.send(b'--XyZ\r\nContent-Disposition: form-data; name="file"; '
                   b'filename="a.bin"\r\n\r\n')
        c.send(os.urandom(3 * MiB))
        # the body is being collected in memory: its declared length is reserved
        wait_until(lambda: upload_memory(v)["held"] >= 6 * MiB, 10, "reservation")
        c.sock.shutdown(2)
        c.close()
        wait_until(lambda: upload_memory(v)["held"] == 0, 15, "budget returned")
    after = upload_memory(v)
    assert after["inMemory"] - before["inMemory"] == 2
    assert file_count(v) == count
    assert requests.get("http://%s/%s" % (a["url"], a["fid"]), timeout=30).status_code == 404
    leftovers = [p.name for p in Path(v.dir).iterdir()
                 if not p.name.endswith((".dat", ".idx", ".log", ".vif"))]
    assert not leftovers, leftovers


def test_more_uploads_than_the_budget_all_stored_bounded_memory(cluster):
    m, v = start_server(cluster)  # a fresh server: its peak RSS is this test's
    n = 32
    size = MEMORY_MAX
    datas = [os.urandom(size) for _ in range(n)]
    fids = [assign(m) for _ in range(n)]
    before = upload_memory(v)
    idle = vm_hwm_kib(v)
    sent = threading.Barrier(n + 1)
    go = threading.Event()
    results = [None] * n

    def client(i):
        host, port = fids[i]["url"].split(":")
        c = http.client.HTTPConnection(host, int(port), timeout=120)
        try:
            c.putrequest("PUT", "/" + fids[i]["fid"])
            c.putheader("Content-Length", str(size))
            c.endheaders()
            c.send(datas[i][:-1])  # all but the last byte: every upload stays open
            sent.wait(60)
            go.wait(60)
            c.send(datas[i][-1:])
            r = c.getresponse()
            results[i] = (r.status, r.getheader("ETag"), r.read())
        finally:
            c.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    try:
        sent.wait(60)
        # every upload is open at once: the in-memory ones are within the budget
        um = wait_until(lambda: (lambda u: u if u["spilled"] - before["spilled"] >=
                                 n - BUDGET // size else None)(upload_memory(v)),
                        30, "the uploads past the budget spill")
        assert um["held"] <= BUDGET
        assert um["inMemory"] - before["inMemory"] == BUDGET // size, (before, um)
        grew = vm_hwm_kib(v) - idle
    finally:
        go.set()
        for t in threads:
            t.join(120)
    for i in range(n):
        assert results[i] and results[i][0] == 201, (i, results[i])
    for i in range(n):
        g = requests.get("http://%s/%s" % (fids[i]["url"], fids[i]["fid"]), timeout=60)
        assert g.status_code == 200 and g.content == datas[i], i
        assert g.headers["ETag"] == results[i][1]
    wait_until(lambda: upload_memory(v)["held"] == 0, 10, "budget returned")
    # the budget, plus about two 1 MiB pieces per spilled upload and socket buffers;
    # without the budget this would be n * 8 MiB = 256 MiB
    limit_kib = (BUDGET + (n - BUDGET // size) * 3 * MiB + 24 * MiB) // 1024
    if is_asan(v):
        limit_kib *= 2
    print("\n%d concurrent %d MiB uploads: peak RSS grew by %d KiB (limit %d KiB)"
          % (n, size // MiB, grew, limit_kib))
    assert grew < limit_kib, "peak RSS grew by %d KiB" % grew


def test_replicated_in_memory_uploads_identical(cluster):
    m = cluster.master()
    a = cluster.volume(m, extra=["-fileSizeLimitMB=64"])
    b = cluster.volume(m, extra=["-fileSizeLimitMB=64"])
    before = {x.url: upload_memory(x) for x in (a, b)}
    jobs = []
    for s in (2 * MiB, 4 * MiB, MEMORY_MAX, 9 * MiB):
        for kind in ("raw", "form"):
            f = assign(m, replication="001")
            jobs.append((s, kind, f["fid"], f["url"], os.urandom(s)))
    vid = jobs[0][2].split(",")[0]
    wait_until(lambda: len(requests.get("http://%s/dir/lookup" % m.url,
                                        params={"volumeId": vid}, timeout=5)
                           .json().get("locations") or []) == 2, 15, "two replicas")

    def run(job):
        s, kind, fid, url, data = job
        if kind == "raw":
            return put(url, fid, data, params={"ts": "1600000000"},
                              headers={"Content-Type": "application/x-raw", "Seaweed-k": "v"})
        return post_form(url, fid, "r%d.bin" % s, data)

    with ThreadPoolExecutor(len(jobs)) as ex:
        results = list(ex.map(run, jobs))
    for (s, kind, fid, url, data), r in zip(jobs, results):
        assert r.status_code == 201, (s, kind, r.text)
        tag = r.headers["ETag"]
        for x in (a, b):
            g = requests.get("http://%s/%s" % (x.url, fid), timeout=60)
            assert g.status_code == 200, (x.url, s, kind)
            assert g.content == data, (x.url, s, kind)
            assert g.headers["ETag"] == tag, (x.url, s, kind)
            if kind == "raw":
                assert g.headers["Content-Type"] == "application/x-raw"
                assert g.headers["Last-Modified"] == "Sun, 13 Sep 2020 12:26:40 GMT"
            else:
                assert 'filename="r%d.bin"' % s in g.headers.get("Content-Disposition", "")
    # the primaries and the replicas (raw PUTs of the data) both used memory
    took = 0
    for x in (a, b):
        um = wait_until(lambda: (lambda u: u if u["held"] == 0 else None)(upload_memory(x)),
                        10, "budget returned")
        took += um["inMemory"] - before[x.url]["inMemory"]
    assert took == 12, took  # 3 sizes x 2 kinds x 2 servers; 9 MiB spills
