"""fsync through weedfs-mount is durable: watched from the outside with strace.

A master, two volume servers (replication 001: every chunk has a copy on each),
a filer with its SQLite store and a mount run as separate processes; strace -f -y
follows the volume servers and the filer and logs their fsync, fdatasync and
sync_file_range calls with wall-clock times and the path behind each descriptor.
A client's fsync, fdatasync, O_SYNC / O_DSYNC write or msync(MS_SYNC) through the
mount must be preceded, between its start and its return, by a sync of the
volume's .dat on both servers and by a sync of the filer's database or WAL made
by a committing thread (the store's checkpointer thread, which syncs on its own
schedule, does not count). A plain close must sync nothing: that path stays
cheap. strace is a test dependency (contrib/install-deps.sh installs it).
"""

import mmap
import os
import re
import shutil
import subprocess
import time

import pytest
import requests

from conftest import wait_until
from filer_fixtures import start_filer
from mount_fixtures import start_mount

# 1234 1700000000.123456 fdatasync(7</tmp/x/1.dat> <unfinished ...>
SYNC_LINE = re.compile(r"^(\d+)\s+(\d+\.\d+)\s+(fdatasync|fsync|sync_file_range)\(\d+<([^>]*)>")
BIG = 256 << 10  # over the inline limit: the data goes to chunks


class Trace:
    """strace -f -y of one daemon: its syncs as (time, path, thread name)."""

    def __init__(self, daemon, workdir):
        if shutil.which("strace") is None:
            pytest.fail("strace is not installed (contrib/install-deps.sh installs it)",
                        pytrace=False)
        self.pid = daemon.proc.pid
        self.name = daemon.name
        self.out = os.path.join(str(workdir), "strace-%d.out" % self.pid)
        self.err = self.out + ".err"
        self.threads = {}
        with open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                ["strace", "-f", "-y", "-ttt", "-e", "trace=fsync,fdatasync,sync_file_range",
                 "-o", self.out, "-p", str(self.pid)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        wait_until(lambda: "attached" in self._stderr() or self.proc.poll() is not None, 15,
                   "strace attached to %s" % self.name)
        if self.proc.poll() is not None:
            pytest.fail("strace could not attach to %s: %s" % (self.name, self._stderr()),
                        pytrace=False)

    def _stderr(self):
        with open(self.err, errors="replace") as f:
            return f.read()

    def _thread(self, tid):
        if tid not in self.threads:
            try:
                with open("/proc/%d/task/%s/comm" % (self.pid, tid)) as f:
                    self.threads[tid] = f.read().strip()
            except OSError:
                self.threads[tid] = "?"
        return self.threads[tid]

    def syncs(self):
        try:
            with open(self.out, errors="replace") as f:
                lines = [SYNC_LINE.match(line) for line in f]
        except FileNotFoundError:
            return []
        return [(float(m.group(2)), m.group(4), self._thread(m.group(1))) for m in lines if m]

    def between(self, t0, t1, suffixes):
        return [s for s in self.syncs()
                if t0 <= s[0] <= t1 and s[1].endswith(suffixes) and s[2] != "wfs-sqlite-ckpt"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()  # strace detaches and exits
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


DAT = (".dat",)
STORE = ("filer.db", "filer.db-wal")


@pytest.fixture
def fs(cluster, tmp_path):
    """(mount, [volume traces], filer trace) of a replicated cluster."""
    master = cluster.master(extra=["-defaultReplication=001"])
    va, vb = cluster.volume(master), cluster.volume(master)
    filer = start_filer(cluster, master)
    mnt = start_mount(cluster, filer.url, extra=["-replication=001", "-chunkSizeMB=1"])
    traces = [Trace(va, tmp_path), Trace(vb, tmp_path), Trace(filer.daemon, tmp_path)]
    yield mnt, traces[:2], traces[2]
    for t in traces:
        t.stop()


def timed(fn):
    t0 = time.time()
    fn()
    return t0, time.time()


def assert_durable(vols, filer, t0, t1, what):
    for v in vols:
        wait_until(lambda v=v: v.between(t0, t1, DAT), 10, "%s: %s synced a .dat" % (what, v.name))
    wait_until(lambda: filer.between(t0, t1, STORE), 10,
               "%s: the filer synced its store in a commit" % what)


def assert_no_sync(vols, filer, t0, t1, what):
    # a sync that started in the window shows up in the trace at once: strace writes each
    # line when the call starts (<unfinished ...>); one more traced call proves it flushed
    for v in vols:
        assert not v.between(t0, t1, DAT), "%s: %s synced: %s" % (what, v.name,
                                                                  v.between(t0, t1, DAT))
    assert not filer.between(t0, t1, STORE), "%s: the filer synced its store: %s" % (
        what, filer.between(t0, t1, STORE))


def write_file(path, data, flags=0, sync=None):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | flags, 0o644)
    try:
        os.write(fd, data)
        if sync:
            sync(fd)
    finally:
        os.close(fd)


def test_fsync_and_fdatasync_are_durable_on_every_replica(fs):
    mnt, vols, filer = fs
    data = os.urandom(BIG)

    # a plain close syncs nothing
    p0, p1 = timed(lambda: write_file(mnt.p("plain"), data))
    # the fsync and fdatasync windows below come later: their syncs prove strace's output
    # for this window is complete before it is checked
    for name, call in (("fsync", os.fsync), ("fdatasync", os.fdatasync)):
        fd = os.open(mnt.p(name), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)
            t0, t1 = timed(lambda: call(fd))
        finally:
            os.close(fd)
        assert_durable(vols, filer, t0, t1, name)
    assert_no_sync(vols, filer, p0, p1, "plain close")
    with open(mnt.p("fsync"), "rb") as f:
        assert f.read() == data


@pytest.mark.parametrize("flag", ["O_SYNC", "O_DSYNC"])
def test_osync_write_is_durable(fs, flag):
    mnt, vols, filer = fs
    data = os.urandom(BIG)
    fd = os.open(mnt.p("f"), os.O_WRONLY | os.O_CREAT | getattr(os, flag), 0o644)
    try:
        t0, t1 = timed(lambda: os.write(fd, data))
    finally:
        os.close(fd)
    assert_durable(vols, filer, t0, t1, "%s write" % flag)


def test_msync_is_durable(fs):
    mnt, vols, filer = fs
    write_file(mnt.p("m"), b"\0" * BIG, sync=os.fsync)
    with open(mnt.p("m"), "r+b") as f:
        m = mmap.mmap(f.fileno(), BIG)
        m[:] = os.urandom(BIG)
        t0, t1 = timed(m.flush)  # msync(MS_SYNC): FUSE fsync
        want = m[:]
        m.close()
    assert_durable(vols, filer, t0, t1, "msync")
    with open(mnt.p("m"), "rb") as f:
        assert f.read() == want


def test_fsync_syncs_chunks_uploaded_before_it(fs):
    """Full chunks go up in the background, without fsync=true: the fsync that follows
    must sync their volumes on both replicas, though it has nothing left to upload."""
    mnt, vols, filer = fs
    data = os.urandom(4 << 20)  # four full 1 MiB chunks
    fd = os.open(mnt.p("big"), os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
        t0, t1 = timed(lambda: os.fsync(fd))
    finally:
        os.close(fd)
    assert_durable(vols, filer, t0, t1, "fsync after background uploads")
    with open(mnt.p("big"), "rb") as f:
        assert f.read() == data


def test_fsync_of_a_clean_file(fs):
    """A file written and closed without fsync, then reopened: fsync has nothing to
    upload, yet must make the chunks and the entry durable; a second fsync finds
    nothing changed and syncs nothing."""
    mnt, vols, filer = fs
    data = os.urandom(BIG)
    write_file(mnt.p("c"), data)
    fd = os.open(mnt.p("c"), os.O_RDONLY)
    try:
        t0, t1 = timed(lambda: os.fsync(fd))
        s0, s1 = timed(lambda: os.fsync(fd))
    finally:
        os.close(fd)
    assert_durable(vols, filer, t0, t1, "fsync of a clean file")
    # a later sync proves the trace holds everything up to s1
    write_file(mnt.p("later"), data, sync=os.fsync)
    wait_until(lambda: any(s[0] > s1 for s in filer.syncs()), 10, "a later sync")
    assert_no_sync(vols, filer, s0, s1, "second fsync of a clean file")


def test_filer_update_fsync(fs):
    """update {"fsync": true} commits synced; with an empty set it changes nothing (not
    even the ctime) and only makes the store's earlier commits durable."""
    mnt, _, filer = fs
    write_file(mnt.p("u"), b"x" * 100)

    def api(op, body):
        return requests.post("http://%s/.api/v1/%s" % (mnt.filer_url, op), json=body,
                             timeout=30)

    before = api("lookup", {"path": "/u"}).json()
    t0 = time.time()
    r = api("update", {"path": "/u", "set": {}, "fsync": True})
    t1 = time.time()
    assert r.status_code == 200, r.text
    assert r.json() == before
    wait_until(lambda: filer.between(t0, t1, STORE), 10, "a store sync for an empty update")
    t0 = time.time()
    r = api("update", {"path": "/u", "set": {"mode": 0o600}, "fsync": True})
    t1 = time.time()
    assert r.status_code == 200 and r.json()["mode"] & 0o7777 == 0o600, r.text
    wait_until(lambda: filer.between(t0, t1, STORE), 10, "a store sync for an update")
    r = api("update", {"path": "/u", "set": {}, "fsync": "yes"})
    assert r.status_code == 400 and "fsync" in r.text, r.text


def test_fsyncdir_makes_a_rename_durable(fs):
    """The atomic-replace pattern: write a temporary file, fsync it, rename it over
    the target, fsync the directory. The rename is committed when it returns but
    synced by the store's schedule; the directory's fsync must sync it."""
    mnt, _, filer = fs
    os.mkdir(mnt.p("d"))
    write_file(mnt.p("d/target"), b"old")
    write_file(mnt.p("d/tmp"), b"new contents", sync=os.fsync)
    r0, r1 = timed(lambda: os.rename(mnt.p("d/tmp"), mnt.p("d/target")))
    dfd = os.open(mnt.p("d"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        t0, t1 = timed(lambda: os.fsync(dfd))
    finally:
        os.close(dfd)
    wait_until(lambda: filer.between(t0, t1, STORE), 10, "the filer synced its store")
    assert_no_sync([], filer, r0, r1, "the rename itself")
    with open(mnt.p("d/target"), "rb") as f:
        assert f.read() == b"new contents"
    # a directory removed while open: its fsync still succeeds and syncs
    os.mkdir(mnt.p("gone"))
    dfd = os.open(mnt.p("gone"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.rmdir(mnt.p("gone"))
        t0, t1 = timed(lambda: os.fsync(dfd))
    finally:
        os.close(dfd)
    wait_until(lambda: filer.between(t0, t1, STORE), 10, "a sync for a removed directory")
