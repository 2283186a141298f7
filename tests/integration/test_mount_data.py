"""The mount's data path (client/filer_rpc.c, mount/file_data*.c) against real daemons.

Runs the C drivers tests/unit/test_mount_filer_rpc and tests/unit/test_mount_file_data
(built next to WEEDFS_BIN, or named by WEEDFS_MOUNT_RPC_TEST / WEEDFS_MOUNT_DATA_TEST)
with WEEDFS_TEST_FILER pointing at a live filer. The file_data driver also gets the PID
of the volume server, which it kills to check that a failed upload is the blob client's
WFS_EUNAVAIL from flush (the cause, not a generic EIO) with the data kept dirty.
"""

import os
import subprocess
from pathlib import Path

import pytest

from conftest import WEEDFS
from filer_fixtures import start_filer, start_mini_with_filer


def unit_binary(name, env_var):
    env = os.environ.get(env_var)
    if env:
        return env
    if not WEEDFS:
        return None
    p = Path(WEEDFS).parent / "tests" / "unit" / name
    return str(p) if p.is_file() else None


def run_tap(binary, env, timeout=600):
    r = subprocess.run([binary], env=dict(os.environ, **env), capture_output=True, text=True,
                       timeout=timeout)
    out = r.stdout + r.stderr
    failed = [line for line in out.splitlines() if line.startswith("not ok")]
    passed = [line for line in out.splitlines() if line.startswith("ok ")]
    for line in out.splitlines():
        if line.startswith("# file_data"):
            print(line)
    assert r.returncode == 0 and not failed, out
    return passed, out


def test_filer_rpc_against_a_filer(cluster):
    binary = unit_binary("test_mount_filer_rpc", "WEEDFS_MOUNT_RPC_TEST")
    if not binary:
        pytest.skip("tests/unit/test_mount_filer_rpc not built next to WEEDFS_BIN")
    _, f = start_mini_with_filer(cluster)
    passed, out = run_tap(binary, {"WEEDFS_TEST_FILER": f.url})
    # the real-filer part ran, not only the scripted-server part
    assert any("lookup / succeeds" in p for p in passed), out
    assert any("exclusive create again is EEXIST" in p for p in passed), out
    # lookups come in the stored encoding; the JSON form decodes to the same entry
    assert any("meta: to the same entry" in p for p in passed), out
    assert len(passed) >= 35, out


def test_file_data_against_a_cluster(cluster):
    binary = unit_binary("test_mount_file_data", "WEEDFS_MOUNT_DATA_TEST")
    if not binary:
        pytest.skip("tests/unit/test_mount_file_data not built next to WEEDFS_BIN")
    master = cluster.master()
    vol = cluster.volume(master)
    f = start_filer(cluster, master)
    env = {
        "WEEDFS_TEST_FILER": f.url,
        "WEEDFS_TEST_VOLUME_PID": str(vol.proc.pid),
        "WEEDFS_TEST_SPEED": "1",
    }
    passed, out = run_tap(binary, env)
    for name in ("model: a fresh file_data reads the model",
                 "model: the filer's GET serves the model",
                 "truncate: shrink then growth commits the whole list",
                 "inline: filer GET agrees",
                 "sparse: re-looked-up entry reads the tail",
                 "budget: every file reads back its model",
                 "reads: it fetched only its 4 KiB",
                 "failure: flush returns WFS_EUNAVAIL",
                 "failure: and readable"):
        assert any(name in p for p in passed), "%s missing:\n%s" % (name, out)
    vol.proc.wait(timeout=10)


def _vm(pid, key):
    with open("/proc/%d/status" % pid) as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no %s for %d" % (key, pid))


def test_mount_frees_orphaned_chunks(cluster):
    """A chunk the mount uploaded in the background and a truncate then cut away is
    never committed: the mount hands it to the filer's freeChunks and the volume
    server deletes it (its delete count rises by exactly the cut chunks)."""
    from conftest import file_count, wait_until
    from mount_fixtures import start_mount
    from test_filer_tus import delete_count
    master = cluster.master()
    vol = cluster.volume(master)
    f = start_filer(cluster, master)
    m = start_mount(cluster, f.url, extra=["-chunkSizeMB=1"])
    try:
        files0, deleted0 = file_count(vol), delete_count(vol)
        p = os.path.join(str(m.path), "orphan.bin")
        fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, os.urandom(3 << 20))  # three full 1 MiB chunks: background uploads
        wait_until(lambda: file_count(vol) >= files0 + 1, timeout=30, what="a chunk uploaded")
        os.ftruncate(fd, 0)  # waits for the uploads, then cuts every pending chunk
        os.pwrite(fd, b"tail", 0)
        os.close(fd)
        with open(p, "rb") as fh:
            assert fh.read() == b"tail"
        wait_until(lambda: delete_count(vol) >= deleted0 + 3, timeout=30,
                   what="orphaned chunks deleted")
        # exactly those three: nothing committed was freed
        assert delete_count(vol) == deleted0 + 3
    finally:
        m.unmount()


def test_mount_memory_bounded_by_dirty_and_cache(cluster, monkeypatch):
    """4 parallel writers of 256 MiB through one mount: its peak RSS stays under the
    dirty budget + the memory cache + a margin (buffers freed after an upload go back
    to the kernel; nothing else holds written data)."""
    import threading
    from mount_fixtures import mini_and_mount, mount_binary
    dirty_mb, cache_mb, margin_mb = 64, 32, 64
    with open(mount_binary(), "rb") as f:
        asan = b"__asan_init" in f.read()
    if asan:
        # ASan keeps freed memory in its quarantine (256 MiB by default) and adds its
        # shadow and redzones: no quarantine here, and room for the rest
        saved = os.environ.get("ASAN_OPTIONS")
        monkeypatch.setenv("ASAN_OPTIONS",
                           ((saved + ":") if saved else "") + "quarantine_size_mb=0")
        margin_mb += (dirty_mb + cache_mb + margin_mb) // 2
    _, _, m = mini_and_mount(cluster, mount_extra=["-dirtyMB=%d" % dirty_mb,
                                                   "-memCacheMB=%d" % cache_mb])
    try:
        pid = m.daemon.proc.pid
        block = os.urandom(1 << 20)
        errors = []

        def writer(i):
            try:
                with open(os.path.join(str(m.path), "big%d" % i), "wb") as fh:
                    for _ in range(256):
                        fh.write(block)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
        ts = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors
        for i in range(4):
            assert os.path.getsize(os.path.join(str(m.path), "big%d" % i)) == 256 << 20
        hwm = _vm(pid, "VmHWM")
        assert hwm < (dirty_mb + cache_mb + margin_mb) << 20, "peak RSS %d MiB" % (hwm >> 20)
    finally:
        m.unmount()


def _entry(f, path):
    import requests
    r = requests.post(f.u("/.api/v1/lookup"), json={"path": path}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def test_mount_commits_small_files_inline(cluster):
    """Files up to -inlineKB (4 KiB by default) are committed as inline content of their
    entry (update {content}: no blob); bigger ones, and every file of a mount with
    -inlineKB=0, get chunks. A file shrunk below the limit goes inline and its chunks are
    freed; an inline file that grows gets chunks; bytes stay right through all of it."""
    import subprocess
    from conftest import file_count, wait_until
    from mount_fixtures import mount_binary, start_mount
    from test_filer_tus import delete_count
    master = cluster.master()
    vol = cluster.volume(master)
    f = start_filer(cluster, master)
    m = start_mount(cluster, f.url, extra=["-chunkSizeMB=1"])
    m0 = start_mount(cluster, f.url, extra=["-inlineKB=0"], name="noinline")
    try:
        d = str(m.path)
        files0 = file_count(vol)
        small = os.urandom(1000)
        Path(d, "small").write_bytes(small)
        Path(d, "edge").write_bytes(b"e" * 4096)
        e = _entry(f, "/small")
        assert e["chunks"] == [] and e["contentLength"] == 1000 and e["size"] == 1000
        assert _entry(f, "/edge")["contentLength"] == 4096
        assert file_count(vol) == files0, "no blob for inline files"
        assert f.get("/small").content == small
        assert Path(str(m0.path), "small").read_bytes() == small
        # one byte over: a chunk
        Path(d, "over").write_bytes(b"o" * 4097)
        e = _entry(f, "/over")
        assert len(e["chunks"]) == 1 and "contentLength" not in e

        # an overwrite inside an inline file keeps it inline, bytes merged
        with open(os.path.join(d, "small"), "r+b") as fh:
            fh.seek(100)
            fh.write(b"XYZ")
        want = small[:100] + b"XYZ" + small[103:]
        assert _entry(f, "/small")["contentLength"] == 1000
        assert f.get("/small").content == want
        # a hole: zeros below the write
        fd = os.open(os.path.join(d, "sparse"), os.O_CREAT | os.O_WRONLY, 0o644)
        os.pwrite(fd, b"end", 3000)
        os.close(fd)
        assert f.get("/sparse").content == b"\0" * 3000 + b"end"
        assert _entry(f, "/sparse")["contentLength"] == 3003

        # a chunked file rewritten small goes inline; its chunks are deleted
        big = os.urandom(3 << 20)
        Path(d, "big").write_bytes(big)
        nbig = len(_entry(f, "/big")["chunks"])
        assert nbig >= 3
        deleted0 = delete_count(vol)
        Path(d, "big").write_bytes(b"tiny")
        e = _entry(f, "/big")
        assert e["chunks"] == [] and e["size"] == 4
        assert Path(str(m0.path), "big").read_bytes() == b"tiny"
        wait_until(lambda: delete_count(vol) >= deleted0 + nbig, timeout=30,
                   what="the rewritten file's chunks deleted")

        # an inline file that grows gets chunks, its bytes kept in front
        with open(os.path.join(d, "small"), "ab") as fh:
            fh.write(b"g" * 5000)
        e = _entry(f, "/small")
        assert e["chunks"] and "contentLength" not in e and e["size"] == 6000
        assert f.get("/small").content == want + b"g" * 5000
        assert Path(str(m0.path), "small").read_bytes() == want + b"g" * 5000

        # -inlineKB=0: always chunks
        Path(str(m0.path), "plain").write_bytes(b"p" * 10)
        e = _entry(f, "/plain")
        assert len(e["chunks"]) == 1 and "contentLength" not in e
        assert Path(d, "plain").read_bytes() == b"p" * 10
    finally:
        m0.unmount()
        m.unmount()
    bad = subprocess.run([mount_binary(), "-filer=" + f.url.split("//")[-1], "-inlineKB=65",
                          str(m.path)], capture_output=True, timeout=30)
    assert bad.returncode == 2 and b"out of range" in bad.stderr


def test_mount_append_fsync_keeps_the_chunk_list_short(cluster):
    """fsync after each small append re-uploads the growing last chunk (kept in memory
    while under 64 KiB) and the commit drops the one it replaces (update dropChunks):
    the entry gets about one chunk per 64 KiB, not one per fsync, the replaced chunks are
    deleted, and every byte stays right, also when writes land inside the kept tail, a
    truncate cuts it, or the file is read from a second mount."""
    from conftest import wait_until
    from mount_fixtures import start_mount
    from test_filer_tus import delete_count
    master = cluster.master()
    vol = cluster.volume(master)
    f = start_filer(cluster, master)
    m = start_mount(cluster, f.url)
    m2 = start_mount(cluster, f.url, name="reader")
    try:
        p = os.path.join(str(m.path), "log")
        want = bytearray()
        fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o644)
        deleted0 = delete_count(vol)
        for i in range(200):
            b = bytes([i % 251]) * 4096
            os.write(fd, b)
            want += b
            os.fsync(fd)
        n = len(_entry(f, "/log")["chunks"])
        assert n <= 200 * 4096 // (64 << 10) + 2, "%d chunks for 200 fsyncs" % n
        assert Path(str(m2.path), "log").read_bytes() == bytes(want)
        # replaced tails are freed (the first commit is inline: no chunk to replace)
        wait_until(lambda: delete_count(vol) >= deleted0 + 150, timeout=30,
                   what="superseded tail chunks deleted")
        # a write inside the kept tail, then appends: the tail is not revived stale
        end = len(want)
        os.pwrite(fd, b"MID", end - 100)
        want[end - 100:end - 97] = b"MID"
        os.fsync(fd)
        os.write(fd, b"after")
        want += b"after"
        os.fsync(fd)
        assert f.get("/log").content == bytes(want)
        # a truncate into the tail, then an append
        os.ftruncate(fd, end - 1000)
        del want[end - 1000:]
        os.fsync(fd)
        os.lseek(fd, 0, os.SEEK_END)
        os.write(fd, b"Z" * 5000)
        want += b"Z" * 5000
        os.close(fd)
        assert f.get("/log").content == bytes(want)
        with open(os.path.join(str(m2.path), "log"), "rb") as fh:
            assert fh.read() == bytes(want)
    finally:
        m2.unmount()
        m.unmount()


def test_mount_commits_open_dirty_files_in_the_background(cluster):
    """A file written and left open (no close, no fsync) is committed after -commitSeconds:
    the filer and a second mount see its bytes; with -commitSeconds=0 nothing is
    committed until the close."""
    import time
    from conftest import wait_until
    from mount_fixtures import start_mount
    master = cluster.master()
    cluster.volume(master)
    f = start_filer(cluster, master)
    m = start_mount(cluster, f.url, extra=["-commitSeconds=2", "-chunkSizeMB=1"])
    m0 = start_mount(cluster, f.url, extra=["-commitSeconds=0"], name="nocommit")
    try:
        data = os.urandom((3 << 20) + 12345)  # full chunks uploaded early, and a partial one
        fd = os.open(os.path.join(str(m.path), "open.bin"), os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, data)
        t0 = time.monotonic()
        wait_until(lambda: _entry(f, "/open.bin")["size"] == len(data), timeout=20,
                   what="background commit")
        assert time.monotonic() - t0 >= 0.5, "committed before its age"
        assert f.get("/open.bin").content == data
        with open(os.path.join(str(m0.path), "open.bin"), "rb") as fh:
            assert fh.read() == data
        os.write(fd, b"more")
        os.close(fd)
        assert f.get("/open.bin").content == data + b"more"

        fd = os.open(os.path.join(str(m0.path), "held.bin"), os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, b"held back")
        time.sleep(4)
        assert _entry(f, "/held.bin")["size"] == 0
        os.close(fd)
        assert f.get("/held.bin").content == b"held back"
    finally:
        m0.unmount()
        m.unmount()
