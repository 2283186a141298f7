"""Big needles on the volume server: streamed uploads and downloads with bounded memory.

A 300 MiB body is generated on the fly (never held by the test either), uploaded
to a volume server started with -fileSizeLimitMB=512, read back and compared by
SHA-256; the server's peak RSS (VmHWM) must stay within 64 MiB of its idle
value. Also: ranges of a big needle, chunked and multipart streamed uploads,
the "unchanged" answer, a client hanging up mid-body, bodies over the limit,
DELETE ?ts= the redirect for a volume held by another server, and reads
of needles whose pages are not in the page cache (the read pool's path).
"""

import hashlib
import os
import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from conftest import assign, file_count, dat_bytes, wait_until

MiB = 1 << 20
BIG = 300 * MiB
RSS_BUDGET_KIB = 64 * 1024


def block(i):
    """The i-th MiB of the test data: deterministic, incompressible-ish, cheap."""
    seed = hashlib.sha256(b"weedfs-%d" % i).digest()
    return (seed * (MiB // len(seed)))[:MiB]


class BigBody:
    """A file-like body of `size` bytes made of block(i); requests sends it with
    Content-Length (it has __len__) and streams it through read()."""

    def __init__(self, size):
        self.size, self.pos = size, 0
        self.sha = hashlib.sha256()
        self._i, self._cur = -1, b""

    def __len__(self):
        return self.size - self.pos

    def read(self, n=-1):
        if self.pos >= self.size:
            return b""
        if n is None or n < 0:
            n = self.size - self.pos
        n = min(n, self.size - self.pos, MiB - self.pos % MiB)
        i = self.pos // MiB
        if i != self._i:
            self._i, self._cur = i, block(i)
        off = self.pos % MiB
        out = self._cur[off:off + n]
        self.pos += len(out)
        self.sha.update(out)
        return out


def data_at(start, length):
    out = bytearray()
    while length:
        i, off = divmod(start, MiB)
        take = min(length, MiB - off)
        out += block(i)[off:off + take]
        start += take
        length -= take
    return bytes(out)


def vm_hwm_kib(daemon):
    for line in Path("/proc/%d/status" % daemon.proc.pid).read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def deleted_fds(daemon):
    """Descriptors of the daemon open on unlinked files (a leaked spill file)."""
    out = []
    fd_dir = Path("/proc/%d/fd" % daemon.proc.pid)
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.endswith("(deleted)"):
            out.append(target)
    return out


def is_asan(daemon):
    maps = Path("/proc/%d/maps" % daemon.proc.pid).read_text()
    return "asan" in maps


@pytest.fixture(scope="module")
def big_cluster(module_cluster):
    m = module_cluster.master(volume_size_limit_mb=4096)
    # Under ASan freed memory sits in a 256 MiB quarantine, which would hide what the
    # server itself holds; a small one keeps the RSS check meaningful (no effect otherwise).
    saved = os.environ.get("ASAN_OPTIONS")
    os.environ["ASAN_OPTIONS"] = ((saved + ":") if saved else "") + "quarantine_size_mb=8"
    try:
        v = module_cluster.volume(m, extra=["-fileSizeLimitMB=512"])
    finally:
        if saved is None:
            del os.environ["ASAN_OPTIONS"]
        else:
            os.environ["ASAN_OPTIONS"] = saved
    return m, v


def new_fid(master):
    a = assign(master)
    return a["fid"], a["url"]


def raw_put(sock_addr, path, head_extra, body_iter):
    """Sends a PUT by hand; returns (status or None, bytes sent). Stops sending when
    the server answers or hangs up."""
    s = socket.create_connection(sock_addr, timeout=30)
    sent = 0
    try:
        s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\n%s\r\n" % (path, head_extra)).encode())
        for piece in body_iter:
            try:
                s.sendall(piece)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(piece)
        s.settimeout(30)
        try:
            resp = s.recv(4096)
        except (ConnectionResetError, socket.timeout):
            resp = b""
    finally:
        s.close()
    if not resp.startswith(b"HTTP/1.1 "):
        return None, sent
    return int(resp[9:12]), sent


def test_big_upload_download_bounded_memory(big_cluster):
    m, v = big_cluster
    fid, url = new_fid(m)
    idle = vm_hwm_kib(v)
    body = BigBody(BIG)
    t0 = time.monotonic()
    r = requests.put("http://%s/%s" % (url, fid), data=body, timeout=600)
    up_s = time.monotonic() - t0
    assert r.status_code == 201, r.text
    assert r.json()["size"] == BIG
    want = body.sha.hexdigest()
    after_up = vm_hwm_kib(v)

    t0 = time.monotonic()
    sha = hashlib.sha256()
    got = 0
    with requests.get("http://%s/%s" % (url, fid), stream=True, timeout=600) as g:
        assert g.status_code == 200
        assert int(g.headers["Content-Length"]) == BIG
        for piece in g.iter_content(MiB):
            sha.update(piece)
            got += len(piece)
    down_s = time.monotonic() - t0
    after_down = vm_hwm_kib(v)
    print("\n300 MiB: upload %.1f s (%.0f MiB/s), download %.1f s (%.0f MiB/s); "
          "VmHWM idle %d KiB, after upload %d KiB, after download %d KiB"
          % (up_s, 300 / up_s, down_s, 300 / down_s, idle, after_up, after_down))
    assert got == BIG and sha.hexdigest() == want
    budget = RSS_BUDGET_KIB * (2 if is_asan(v) else 1)
    assert after_up - idle < budget, "upload peak RSS grew by %d KiB" % (after_up - idle)
    assert after_down - idle < budget, "download peak RSS grew by %d KiB" % (after_down - idle)

    # HEAD gives the length without a body
    h = requests.head("http://%s/%s" % (url, fid), timeout=30)
    assert h.status_code == 200 and int(h.headers["Content-Length"]) == BIG

    # ranges read only what they need
    base = "http://%s/%s" % (url, fid)
    for rng, start, length in (("bytes=0-99", 0, 100),
                               ("bytes=%d-%d" % (150 * MiB - 7, 151 * MiB + 9),
                                150 * MiB - 7, MiB + 17),
                               ("bytes=-1000", BIG - 1000, 1000)):
        r = requests.get(base, headers={"Range": rng}, timeout=30)
        assert r.status_code == 206, (rng, r.status_code)
        assert r.headers["Content-Range"] == "bytes %d-%d/%d" % (start, start + length - 1, BIG)
        assert r.content == data_at(start, length), rng
    r = requests.get(base, headers={"Range": "bytes=10-19,%d-%d" % (200 * MiB, 200 * MiB + 4)},
                     timeout=30)
    assert r.status_code == 206
    assert r.headers["Content-Type"].startswith("multipart/byteranges")
    assert data_at(10, 10) in r.content and data_at(200 * MiB, 5) in r.content
    assert int(r.headers["Content-Length"]) == len(r.content)
    r = requests.get(base, headers={"Range": "bytes=%d-" % (BIG + 5)}, timeout=30)
    assert r.status_code == 416

    # the same content again is "unchanged", and the .dat does not grow
    before = dat_bytes(v)
    r = requests.put(base, data=BigBody(BIG), timeout=600)
    assert r.status_code == 204, r.text
    assert dat_bytes(v) == before


def test_chunked_and_multipart_streamed_uploads(big_cluster):
    m, v = big_cluster
    # chunked raw body (no Content-Length)
    fid, url = new_fid(m)
    size = 5 * MiB + 123
    def gen():
        b = BigBody(size)
        while True:
            p = b.read(64 * 1024)
            if not p:
                return
            yield p
    r = requests.put("http://%s/%s" % (url, fid), data=gen(),
                     headers={"Content-Type": "text/plain"}, timeout=60)
    assert r.status_code == 201, r.text
    g = requests.get("http://%s/%s" % (url, fid), timeout=60)
    assert g.content == data_at(0, size)
    assert g.headers["Content-Type"] == "text/plain"

    # a small chunked body is stored from memory, the same way
    fid, url = new_fid(m)
    r = requests.put("http://%s/%s" % (url, fid), data=iter([b"hello ", b"world"]), timeout=30)
    assert r.status_code == 201 and r.json()["size"] == 11
    assert requests.get("http://%s/%s" % (url, fid), timeout=30).content == b"hello world"

    # multipart with a big file part (a small field first)
    fid, url = new_fid(m)
    data = data_at(3 * MiB, 4 * MiB + 5)
    r = requests.post("http://%s/%s" % (url, fid),
                      files={"note": (None, b"x" * 10), "file": ("big.bin", data, "image/png")},
                      timeout=60)
    assert r.status_code == 201, r.text
    j = r.json()
    assert j["name"] == "big.bin" and j["size"] == len(data) and j["mime"] == "image/png"
    g = requests.get("http://%s/%s" % (url, fid), timeout=60)
    assert g.content == data and g.headers["Content-Type"] == "image/png"
    assert "big.bin" in g.headers.get("Content-Disposition", "")

    # Content-MD5 checked on a streamed body
    fid, url = new_fid(m)
    import base64
    good = base64.b64encode(hashlib.md5(data).digest()).decode()
    bad = base64.b64encode(hashlib.md5(b"other").digest()).decode()
    r = requests.put("http://%s/%s" % (url, fid), data=data, headers={"Content-MD5": bad},
                     timeout=60)
    assert r.status_code == 400
    assert requests.get("http://%s/%s" % (url, fid), timeout=30).status_code == 404
    r = requests.put("http://%s/%s" % (url, fid), data=data, headers={"Content-MD5": good},
                     timeout=60)
    assert r.status_code == 201


def test_disconnect_mid_upload_leaves_nothing(big_cluster):
    m, v = big_cluster
    fid, url = new_fid(m)
    host, port = url.split(":")
    count, dat = file_count(v), dat_bytes(v)
    s = socket.create_connection((host, int(port)), timeout=30)
    s.sendall(("PUT /%s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n"
               % (fid, 100 * MiB)).encode())
    for i in range(20):
        s.sendall(block(i))
    s.close()
    # the server notices, drops the spill file and stores nothing
    wait_until(lambda: not deleted_fds(v), 15, "spill file closed")
    assert file_count(v) == count
    assert dat_bytes(v) == dat
    assert requests.get("http://%s/%s" % (url, fid), timeout=30).status_code == 404
    leftovers = [p.name for p in Path(v.dir).iterdir()
                 if not p.name.endswith((".dat", ".idx", ".log", ".vif"))]
    assert not leftovers, leftovers


def test_over_limit_refused_and_nothing_written(big_cluster):
    m, v = big_cluster
    fid, url = new_fid(m)
    host, port = url.split(":")
    count, dat = file_count(v), dat_bytes(v)
    # declared too big: refused before the body is read
    status, _ = raw_put((host, int(port)), "/" + fid,
                        "Content-Length: %d\r\n" % (513 * MiB), iter([]))
    assert status == 413
    # chunked, found too big while streaming
    def chunks():
        piece = b"%x\r\n" % MiB + block(0) + b"\r\n"
        for _ in range(520):
            yield piece
        yield b"0\r\n\r\n"
    status, sent = raw_put((host, int(port)), "/" + fid, "Transfer-Encoding: chunked\r\n",
                           chunks())
    assert status == 413, status
    wait_until(lambda: not deleted_fds(v), 15, "spill file closed")
    assert file_count(v) == count
    assert dat_bytes(v) == dat
    assert requests.get("http://%s/%s" % (url, fid), timeout=30).status_code == 404


def test_delete_ts_is_the_deletion_time(big_cluster):
    m, v = big_cluster
    fid, url = new_fid(m)
    assert requests.put("http://%s/%s" % (url, fid), data=b"abc", timeout=30).status_code == 201
    r = requests.delete("http://%s/%s" % (url, fid), params={"ts": "1700000000"}, timeout=30)
    assert r.status_code == 202
    vid = fid.split(",")[0]
    dat = next(Path(v.dir).glob("%s.dat" % vid)).read_bytes()
    # the deletion record ends the .dat: header (size 0), crc, append time, 4 padding bytes
    rec = dat[-32:]
    assert struct.unpack(">I", rec[12:16])[0] == 0
    assert struct.unpack(">Q", rec[20:28])[0] == 1700000000 * 10**9


def test_read_redirects_to_the_holder(cluster):
    m = cluster.master()
    a = cluster.volume(m)
    b = cluster.volume(m)
    fid, url = new_fid(m)
    assert requests.put("http://%s/%s" % (url, fid), data=b"where am i",
                        timeout=30).status_code == 201
    other = b if url == a.url else a
    r = requests.get("http://%s/%s?x=1" % (other.url, fid), allow_redirects=False, timeout=30)
    assert r.status_code in (301, 302, 307, 308), (r.status_code, r.text)
    assert r.headers["Location"] == "http://%s/%s?x=1" % (url, fid)
    r = requests.head("http://%s/%s" % (other.url, fid), allow_redirects=False, timeout=30)
    assert r.status_code in (301, 302, 307, 308)
    r = requests.get("http://%s/%s" % (other.url, fid), timeout=30)
    assert r.status_code == 200 and r.content == b"where am i"
    r = requests.get("http://%s/9999,01637037d6" % other.url, allow_redirects=False, timeout=30)
    assert r.status_code == 404


def test_big_upload_is_replicated_from_the_spill(cluster):
    m = cluster.master()
    a = cluster.volume(m, extra=["-fileSizeLimitMB=64"])
    b = cluster.volume(m, extra=["-fileSizeLimitMB=64"])
    fid, url = assign(m, replication="001")["fid"], None
    vid = fid.split(",")[0]
    wait_until(lambda: len(requests.get("http://%s/dir/lookup" % m.url,
                                        params={"volumeId": vid}, timeout=5)
                           .json().get("locations") or []) == 2, 15, "two replicas")
    url = requests.get("http://%s/dir/lookup" % m.url, params={"volumeId": vid},
                       timeout=5).json()["locations"][0]["url"]
    size = 20 * MiB + 3
    body = BigBody(size)
    r = requests.put("http://%s/%s" % (url, fid), data=body, params={"ts": "1600000000"},
                     headers={"Content-Type": "application/x-test"}, timeout=120)
    assert r.status_code == 201, r.text
    for v in (a, b):
        g = requests.get("http://%s/%s" % (v.url, fid), timeout=60)
        assert g.status_code == 200, v.url
        assert hashlib.sha256(g.content).hexdigest() == body.sha.hexdigest(), v.url
        assert g.headers["Content-Type"] == "application/x-test"
        assert g.headers["Last-Modified"] == "Sun, 13 Sep 2020 12:26:40 GMT"
    # a multipart upload's file name reaches the replica too
    fid = assign(m, replication="001")["fid"]
    vid = fid.split(",")[0]
    url = requests.get("http://%s/dir/lookup" % m.url, params={"volumeId": vid},
                       timeout=5).json()["locations"][0]["url"]
    data = data_at(0, 3 * MiB)
    r = requests.post("http://%s/%s" % (url, fid), files={"file": ("x y.bin", data)},
                      timeout=60)
    assert r.status_code == 201, r.text
    for v in (a, b):
        g = requests.get("http://%s/%s" % (v.url, fid), timeout=60)
        assert g.content == data
        assert 'filename="x y.bin"' in g.headers.get("Content-Disposition", ""), v.url
    # the same big content again is unchanged on every replica
    r = requests.post("http://%s/%s" % (url, fid), files={"file": ("x y.bin", data)},
                      timeout=60)
    assert r.status_code == 204, r.text


def test_streamed_read_of_a_corrupt_needle_is_cut_short(cluster):
    m = cluster.master()
    v = cluster.volume(m)
    fid, url = new_fid(m)
    data = os.urandom(3 * MiB)
    assert requests.put("http://%s/%s" % (url, fid), data=data, timeout=60).status_code == 201
    vid = fid.split(",")[0]
    dat = next(Path(v.dir).glob("%s.dat" % vid))
    pos = dat.read_bytes().find(data[:64])
    assert pos > 0
    with open(dat, "r+b") as f:  # the server reads through the same page cache
        f.seek(pos + 2 * MiB)
        f.write(bytes([data[2 * MiB] ^ 0xFF]))
    # a range is served unchecked (the CRC covers the whole needle)
    r = requests.get("http://%s/%s" % (url, fid), headers={"Range": "bytes=0-99"}, timeout=30)
    assert r.status_code == 206 and r.content == data[:100]
    # the full read ends early instead of delivering bad data silently
    got = b""
    try:
        with requests.get("http://%s/%s" % (url, fid), stream=True, timeout=30) as g:
            assert g.status_code == 200 and int(g.headers["Content-Length"]) == len(data)
            for piece in g.iter_content(64 * 1024):
                got += piece
    except requests.exceptions.RequestException:
        pass  # urllib3 2 reports the short body; older versions just end it
    assert len(got) < len(data)
    wait_until(lambda: "CRC mismatch" in v.log_text(), 10, "CRC error logged")


def evict(v):
    """Drops v's volume files from the page cache, so the next read needs the disk."""
    for path in Path(v.dir).glob("*.dat"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def test_cold_streamed_reads(cluster):
    """Pieces the page cache does not hold are read by the read pool, not on the loop."""
    m = cluster.master()
    v = cluster.volume(m)
    fids, datas = [], []
    for i in range(4):
        fid, url = new_fid(m)
        data = os.urandom(6 * MiB + 1234 * i)
        assert requests.put("http://%s/%s" % (url, fid), data=data, timeout=60).status_code == 201
        fids.append(fid)
        datas.append(data)

    # whole reads (CRC checked), four at once, while small reads keep being answered
    evict(v)
    with ThreadPoolExecutor(4) as ex:
        gets = [ex.submit(requests.get, "http://%s/%s" % (v.url, f), timeout=60) for f in fids]
        assert requests.get("http://%s/status" % v.url, timeout=10).status_code == 200
        for g, data in zip(gets, datas):
            r = g.result()
            assert r.status_code == 200 and r.content == data

    # ranges, single and multiple
    evict(v)
    base = "http://%s/%s" % (v.url, fids[1])
    r = requests.get(base, headers={"Range": "bytes=%d-%d" % (MiB - 5, 5 * MiB)}, timeout=30)
    assert r.status_code == 206 and r.content == datas[1][MiB - 5:5 * MiB + 1]
    evict(v)
    r = requests.get(base, headers={"Range": "bytes=0-9,%d-" % (6 * MiB)}, timeout=30)
    assert r.status_code == 206
    assert datas[1][:10] in r.content and datas[1][6 * MiB:] in r.content

    # a client that leaves while a piece is being read: the server carries on
    for _ in range(8):
        evict(v)
        s = socket.create_connection((v.url.split(":")[0], int(v.url.split(":")[1])))
        s.sendall(b"GET /%s HTTP/1.1\r\nHost: x\r\n\r\n" % fids[2].encode())
        s.recv(100)
        s.close()
    r = requests.get("http://%s/%s" % (v.url, fids[2]), timeout=60)
    assert r.status_code == 200 and r.content == datas[2]

    # a needle damaged on disk is still cut short when its pieces come from the disk
    dat = next(Path(v.dir).glob("%s.dat" % fids[3].split(",")[0]))
    pos = dat.read_bytes().find(datas[3][:64])
    assert pos > 0
    with open(dat, "r+b") as f:
        f.seek(pos + 5 * MiB)
        f.write(bytes([datas[3][5 * MiB] ^ 0xFF]))
    evict(v)
    got = b""
    try:
        with requests.get("http://%s/%s" % (v.url, fids[3]), stream=True, timeout=30) as g:
            assert g.status_code == 200
            for piece in g.iter_content(64 * 1024):
                got += piece
    except requests.exceptions.RequestException:
        pass
    assert len(got) < len(datas[3])
