"""Short-circuit reads: a reader on the volume server's host gets the volume file's
descriptor over the server's Unix socket and preads the needle itself
(docs/internal-protocol.md). Each test checks that the bytes are the ones HTTP gives,
that the short-circuit path really served them (the volume server's /status counts
its answers), and that whatever goes wrong (vacuum, deletion, a move, a restart, a
damaged needle, a reader forced off) ends in the right bytes or an error, never in
stale or wrong bytes."""

import array
import os
import shutil
import socket
import time

import pytest
import requests

from conftest import lookup_urls, wait_registered_with, wait_until
from filer_fixtures import start_filer
from mount_fixtures import start_mount

MiB = 1 << 20


def sc_status(vol):
    return requests.get("http://%s/status" % vol.url, timeout=10).json()["ShortCircuit"]


def answered(vol):
    return sc_status(vol).get("answered", 0)


def fids_of(filer, path):
    return [c["file_id"] for c in filer.meta(path)["chunks"]]


def http_bytes(master, fids):
    """The file's bytes as the volume servers' HTTP API gives them, chunk by chunk."""
    out = b""
    for fid in fids:
        url = lookup_urls(master, int(fid.split(",")[0]))[0]
        r = requests.get("http://%s/%s" % (url, fid), timeout=30)
        assert r.status_code == 200, r.text
        out += r.content
    return out


def small_cluster(cluster, volume_extra=(), filer_extra=(), max_volumes=8):
    master = cluster.master()
    vol = cluster.volume(master, max_volumes=max_volumes, extra=list(volume_extra))
    filer = start_filer(cluster, master, extra=["-maxMB=1"] + list(filer_extra))
    return master, vol, filer


def test_mount_and_filer_read_the_volume_file_and_get_what_http_gives(cluster):
    master, vol, filer = small_cluster(cluster)
    data = os.urandom(5 * MiB + 12345)
    assert filer.put("/sc/f.bin", data).status_code in (200, 201)
    fids = fids_of(filer, "/sc/f.bin")
    assert len(fids) == 6
    assert http_bytes(master, fids) == data

    before = answered(vol)
    r = filer.get("/sc/f.bin")
    assert r.status_code == 200 and r.content == data
    assert answered(vol) >= before + len(fids), sc_status(vol)

    m = start_mount(cluster, filer.url)
    before = answered(vol)
    with open(m.p("sc", "f.bin"), "rb") as f:
        assert f.read() == data
        f.seek(3 * MiB - 7)
        assert f.read(100) == data[3 * MiB - 7:3 * MiB + 93]
    assert answered(vol) > before, sc_status(vol)
    st = sc_status(vol)
    assert st["enabled"] and st["descriptors"] >= 1 and st["refusedPeers"] == 0
    assert m.unmount() == 0


def test_mini_s3_gateway_reads_through_the_volume_file(cluster):
    mini = cluster.mini(extra=["-filer.maxMB=1"])
    s3 = "http://127.0.0.1:%d" % mini.s3_port
    vol = type("V", (), {"url": "127.0.0.1:%d" % mini.volume_port})
    data = os.urandom(3 * MiB + 1)
    assert requests.put(s3 + "/scb", timeout=30).status_code == 200  # open gateway
    assert requests.put(s3 + "/scb/k", data=data, timeout=60).status_code == 200
    before = answered(vol)
    r = requests.get(s3 + "/scb/k", timeout=60)
    assert r.status_code == 200 and r.content == data
    r = requests.get(s3 + "/scb/k", headers={"Range": "bytes=1048570-2097160"}, timeout=60)
    assert r.status_code == 206 and r.content == data[1048570:2097161]
    assert answered(vol) >= before + 2, sc_status(vol)  # one 4 MiB chunk, read twice


def test_forced_off_on_either_side_reads_over_http(cluster):
    master, vol, filer = small_cluster(cluster)
    data = os.urandom(2 * MiB + 3)
    assert filer.put("/off/f.bin", data).status_code in (200, 201)
    # the reader forced off: the server answers nothing, the bytes still arrive
    m = start_mount(cluster, filer.url, extra=["-shortCircuit=false"])
    before = answered(vol)
    with open(m.p("off", "f.bin"), "rb") as f:
        assert f.read() == data
    assert answered(vol) == before
    assert m.unmount() == 0
    # the server forced off: no socket, readers fall back without a word
    vol.args.append("-shortCircuit=false")
    cluster.restart(vol)
    assert sc_status(vol) == {"enabled": False}
    r = filer.get("/off/f.bin")
    assert r.status_code == 200 and r.content == data


def test_reads_after_a_vacuum_use_the_new_file(cluster):
    master, vol, filer = small_cluster(cluster, max_volumes=1)  # the garbage beside keep
    keep = os.urandom(MiB // 2)
    assert filer.put("/vac/keep.bin", keep).status_code in (200, 201)
    for i in range(6):
        assert filer.put("/vac/gone%d.bin" % i, os.urandom(MiB // 2)).status_code in (200, 201)
    assert filer.get("/vac/keep.bin").content == keep  # the filer now holds a descriptor
    got_before = sc_status(vol)["descriptors"]
    for i in range(6):
        assert filer.delete("/vac/gone%d.bin" % i).status_code in (200, 204)
    filer.gc_pass()
    r = requests.get("http://%s/vol/vacuum" % master.url, params={"garbageThreshold": "0.01"},
                     timeout=120)
    assert r.status_code == 200, r.text
    vid = int(fids_of(filer, "/vac/keep.bin")[0].split(",")[0])
    wait_until(lambda: any(v["Id"] == vid and v["CompactRevision"] > 0 for v in requests.get(
        "http://%s/status" % vol.url, timeout=10).json()["Volumes"]), 60, "the vacuum commit")
    before = answered(vol)
    r = filer.get("/vac/keep.bin")
    assert r.status_code == 200 and r.content == keep
    assert answered(vol) > before
    # the held descriptor named the old file: a new one was handed over
    assert sc_status(vol)["descriptors"] > got_before


def test_a_deleted_volume_is_not_read_from_a_held_descriptor(cluster):
    master, vol, filer = small_cluster(cluster)
    data = os.urandom(MiB // 2)
    assert filer.put("/del/f.bin", data).status_code in (200, 201)
    assert filer.get("/del/f.bin").content == data
    vid = int(fids_of(filer, "/del/f.bin")[0].split(",")[0])
    r = requests.get("http://%s/admin/volume/delete" % vol.url, params={"volume": vid},
                     timeout=30)
    assert r.status_code == 200, r.text
    r = filer.get("/del/f.bin")
    assert r.status_code != 200 or r.content != data
    assert r.status_code >= 400


def test_a_moved_volume_is_read_where_it_went(cluster):
    master = cluster.master()
    a = cluster.volume(master)
    filer = start_filer(cluster, master, extra=["-maxMB=1"])
    data = os.urandom(MiB // 2 + 77)
    assert filer.put("/mv/f.bin", data).status_code in (200, 201)
    assert filer.get("/mv/f.bin").content == data  # a descriptor of a's file is held
    vid = int(fids_of(filer, "/mv/f.bin")[0].split(",")[0])
    b = cluster.volume(master)
    a.stop()
    for p in list(a.dir.iterdir()):
        if p.name.split(".")[0].split("_")[-1] == str(vid):
            shutil.move(str(p), str(b.dir / p.name))
    cluster.restart(b)
    wait_until(lambda: lookup_urls(master, vid) == [b.url], 30, "the master to see the move")
    before = answered(b)
    deadline = time.monotonic() + 30
    while True:  # the filer's location cache may still name a: it then asks again
        r = filer.get("/mv/f.bin")
        if r.status_code == 200:
            break
        assert time.monotonic() < deadline, (r.status_code, r.text)
        time.sleep(0.2)
    assert r.content == data
    assert answered(b) > before


def test_a_restarted_volume_server_is_reconnected(cluster):
    master, vol, filer = small_cluster(cluster)
    data = os.urandom(MiB + 5)
    assert filer.put("/rs/f.bin", data).status_code in (200, 201)
    assert filer.get("/rs/f.bin").content == data
    cluster.restart(vol)
    # the first read after the restart may fall back to HTTP (its connection was the
    # old process's); the bytes are right either way, and short-circuit comes back
    for _ in range(3):
        r = filer.get("/rs/f.bin")
        assert r.status_code == 200 and r.content == data
    assert answered(vol) >= 2, sc_status(vol)


def find_in_dats(vol, needle_bytes):
    for p in vol.dir.rglob("*.dat"):
        raw = p.read_bytes()
        i = raw.find(needle_bytes)
        if i >= 0:
            return p, i
    raise AssertionError("bytes not found in any .dat")


def test_a_damaged_needle_is_an_error_not_wrong_bytes(cluster):
    master, vol, filer = small_cluster(cluster)
    data = os.urandom(MiB // 2)
    assert filer.put("/bad/f.bin", data).status_code in (200, 201)
    assert filer.get("/bad/f.bin").content == data
    m = start_mount(cluster, filer.url)
    with open(m.p("bad", "f.bin"), "rb") as f:
        assert f.read() == data  # the mount holds a descriptor too
    assert m.unmount() == 0
    path, at = find_in_dats(vol, data[:64])
    with open(path, "r+b") as f:
        f.seek(at + 1000)
        b = f.read(1)
        f.seek(at + 1000)
        f.write(bytes([b[0] ^ 0xFF]))
    try:
        r = filer.get("/bad/f.bin")
        body_ok = r.status_code == 200 and len(r.content) == len(data)
    except requests.exceptions.RequestException:
        body_ok = False  # the answer broke off: the client saw an error
    assert not body_ok, "the damaged needle was served"
    wait_until(lambda: "CRC mismatch" in filer.daemon.log_text(), 10,
               "the short-circuit reader to report the damage")
    m2 = start_mount(cluster, filer.url, name="mount-after-damage")
    with open(m2.p("bad", "f.bin"), "rb") as f:
        try:
            got = f.read()
        except OSError:
            got = None
    assert got is None, (len(got), got == data)
    assert m2.unmount() == 0


# ---- the socket itself, spoken to directly ----------------------------------------------

def sc_connect(vol):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect("\0weedfs-volume/%s" % vol.url)
    return s


def sc_ask(s, line):
    s.sendall(line)
    fds = array.array("i")
    msg, anc, _, _ = s.recvmsg(512, socket.CMSG_SPACE(fds.itemsize))
    for level, kind, d in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(d[:len(d) - (len(d) % fds.itemsize)])
    return msg, list(fds)


def test_the_socket_hands_out_a_read_only_descriptor_and_refuses_bad_requests(cluster):
    master, vol, filer = small_cluster(cluster)
    data = os.urandom(300000)
    assert filer.put("/sock/f.bin", data).status_code in (200, 201)
    fid = fids_of(filer, "/sock/f.bin")[0]

    s = sc_connect(vol)
    msg, fds = sc_ask(s, b"READ %s 1\n" % fid.encode())
    assert msg.startswith(b"OK "), msg
    _, dev, ino, off, size, crc = msg.split()
    assert int(size) == len(data) and len(fds) == 1
    st = os.fstat(fds[0])
    assert (st.st_dev, st.st_ino) == (int(dev), int(ino))
    assert os.pread(fds[0], len(data), int(off)) == data
    with pytest.raises(OSError):
        os.pwrite(fds[0], b"x", int(off))  # read-only: a reader can never write a volume
    os.close(fds[0])
    # without asking for a descriptor, none comes
    msg, fds = sc_ask(s, b"READ %s 0\n" % fid.encode())
    assert msg.startswith(b"OK ") and fds == []
    # a needle that is not there, a wrong cookie, a volume that is not here
    vid, kc = fid.split(",")
    for bad in ("%s,%s" % (vid, kc[:-8] + "00000000"), "%s,ffff00000000" % vid, "9999,100000000"):
        msg, fds = sc_ask(s, b"READ %s 1\n" % bad.encode())
        assert msg.startswith(b"NO ENOENT "), (bad, msg)
        assert fds == []
    s.close()

    for junk in (b"GET / HTTP/1.1\r\n\r\n", b"READ\n", b"READ 1,2 2\n", b"READ a,b 1\n",
                 b"READ %s 1 extra\n" % fid.encode(), b"x" * 300,
                 b"READ %s 1\nREAD %s 1\n" % (fid.encode(), fid.encode()), b"\0\n"):
        s = sc_connect(vol)
        s.sendall(junk)
        got = b""
        try:
            while True:
                chunk = s.recv(512)
                if not chunk:
                    break
                got += chunk
        except OSError:
            pass
        s.close()
        assert not got.startswith(b"OK"), (junk, got)
        assert got == b"" or got.startswith(b"NO EINVAL"), (junk, got)
    # the server still serves
    r = filer.get("/sock/f.bin")
    assert r.status_code == 200 and r.content == data


def test_other_users_are_refused(cluster):
    master, vol, filer = small_cluster(cluster)
    assert filer.put("/u/f.bin", os.urandom(200000)).status_code in (200, 201)
    fid = fids_of(filer, "/u/f.bin")[0]
    before = sc_status(vol)["refusedPeers"]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child, as nobody
        os.close(r)
        try:
            os.setgid(65534)
            os.setuid(65534)
            s = sc_connect(vol)
            s.sendall(b"READ %s 1\n" % fid.encode())
            got = s.recv(512)
            os.write(w, b"answered" if got else b"closed")
        except (ConnectionResetError, BrokenPipeError):
            os.write(w, b"closed")  # closed before it read (or we sent) the request
        except OSError as e:
            os.write(w, ("error %s" % e).encode())
        os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    out = os.read(r, 100)
    os.close(r)
    assert out == b"closed", out
    assert sc_status(vol)["refusedPeers"] == before + 1
