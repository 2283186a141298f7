"""fcntl and flock locks through weedfs-mount: held by the filer (the JSON API's
"lock" ops), so they exclude other mounts of the same filer, and processes of one
mount. Lock holders are separate processes (a small locker driven over a pipe), so
F_GETLK has a real pid to report and a close behaves as in any program."""

import errno
import fcntl
import os
import struct
import subprocess
import sys
import threading
import time

import pytest
import requests

from filer_fixtures import start_mini_with_filer
from mount_fixtures import start_mount

LEASE = 15  # the filer's default lock lease (filer/filer_lock.h)

LOCKER = r"""
import fcntl, os, struct, sys
fds = {}
def flk(t, s, n):
    return struct.pack("hhqqi4x", t, 0, s, n, 0)
T = {"r": fcntl.F_RDLCK, "w": fcntl.F_WRLCK, "u": fcntl.F_UNLCK}
print("pid %d" % os.getpid(), flush=True)
for line in sys.stdin:
    a = line.split()
    try:
        if a[0] == "open":
            fds[a[1]] = os.open(a[2], os.O_RDWR)
        elif a[0] == "close":
            os.close(fds.pop(a[1]))
        elif a[0] == "lk":      # lk NAME r|w|u START LEN
            fcntl.fcntl(fds[a[1]], fcntl.F_SETLK, flk(T[a[2]], int(a[3]), int(a[4])))
        elif a[0] == "flock":   # flock NAME ex|sh|un
            op = {"ex": fcntl.LOCK_EX, "sh": fcntl.LOCK_SH, "un": fcntl.LOCK_UN}[a[2]]
            fcntl.flock(fds[a[1]], op | fcntl.LOCK_NB)
        elif a[0] == "write":   # write NAME OFFSET
            os.pwrite(fds[a[1]], b"w", int(a[2]))
        elif a[0] == "fsync":   # fsync NAME
            os.fsync(fds[a[1]])
        print("ok", flush=True)
    except OSError as e:
        print("err %d" % e.errno, flush=True)
"""


class Locker:
    """A child process holding files open and locks on them."""

    def __init__(self):
        self.p = subprocess.Popen([sys.executable, "-c", LOCKER], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1)
        self.pid = int(self.p.stdout.readline().split()[1])

    def do(self, *cmd):
        self.p.stdin.write(" ".join(str(c) for c in cmd) + "\n")
        self.p.stdin.flush()
        r = self.p.stdout.readline().split()
        assert r, "locker died"
        return 0 if r[0] == "ok" else int(r[1])

    def ok(self, *cmd):
        rc = self.do(*cmd)
        assert rc == 0, "%s: %s" % (cmd, os.strerror(rc))

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


@pytest.fixture
def lockers():
    made = []

    def make():
        lk = Locker()
        made.append(lk)
        return lk

    yield make
    for lk in made:
        lk.stop()


@pytest.fixture(scope="module")
def two_mounts(module_cluster):
    _, filer = start_mini_with_filer(module_cluster)
    a = start_mount(module_cluster, filer.url, name="mounta")
    b = start_mount(module_cluster, filer.url, name="mountb")
    yield filer, a, b
    b.unmount()
    a.unmount()


def newfile(m, name, data=b"0123456789" * 20):
    with open(m.p(name), "wb") as f:
        f.write(data)


def wait_exists(path, timeout=10):
    t0 = time.monotonic()
    while not os.path.exists(path):
        assert time.monotonic() - t0 < timeout, "%s never appeared" % path
        time.sleep(0.01)


def setlk(fd, typ, start=0, length=0, wait=False):
    fcntl.fcntl(fd, fcntl.F_SETLKW if wait else fcntl.F_SETLK,
                struct.pack("hhqqi4x", typ, 0, start, length, 0))


def getlk(fd, typ, start=0, length=0):
    r = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi4x", typ, 0, start, length, 0))
    t, _, s, n, pid = struct.unpack("hhqqi4x", r)
    return t, s, n, pid


def conflicts(fd, typ, start=0, length=0):
    try:
        setlk(fd, typ, start, length)
    except OSError as e:
        assert e.errno in (errno.EAGAIN, errno.EACCES), e
        return True
    setlk(fd, fcntl.F_UNLCK, start, length)
    return False


def test_write_lock_excludes_other_mount(two_mounts, lockers):
    _, a, b = two_mounts
    newfile(a, "w1")
    wait_exists(b.p("w1"))
    holder = lockers()
    holder.ok("open", "f", a.p("w1"))
    holder.ok("lk", "f", "w", 10, 50)  # bytes 10..59
    fd = os.open(b.p("w1"), os.O_RDWR)
    try:
        assert conflicts(fd, fcntl.F_WRLCK, 0, 0)
        assert conflicts(fd, fcntl.F_RDLCK, 59, 1)
        t, s, n, pid = getlk(fd, fcntl.F_WRLCK, 0, 0)
        assert (t, s, n) == (fcntl.F_WRLCK, 10, 50)
        assert pid == holder.pid  # one host: the kernel shows the holder's pid
        assert getlk(fd, fcntl.F_RDLCK, 60, 0)[0] == fcntl.F_UNLCK
        # ranges that do not overlap are both granted
        setlk(fd, fcntl.F_WRLCK, 0, 10)
        setlk(fd, fcntl.F_WRLCK, 60, 0)
        assert holder.do("lk", "f", "w", 9, 1) in (errno.EAGAIN, errno.EACCES)
        setlk(fd, fcntl.F_UNLCK, 0, 0)
        # unlock on A, then B gets the whole file
        holder.ok("lk", "f", "u", 0, 0)
        setlk(fd, fcntl.F_WRLCK, 0, 0)
        assert holder.do("lk", "f", "r", 0, 1) in (errno.EAGAIN, errno.EACCES)
    finally:
        os.close(fd)
    # our close released B's lock (flush with the fd table's owner)
    holder.ok("lk", "f", "w", 0, 0)


def test_read_locks_shared(two_mounts, lockers):
    _, a, b = two_mounts
    newfile(a, "r1")
    wait_exists(b.p("r1"))
    holder = lockers()
    holder.ok("open", "f", a.p("r1"))
    holder.ok("lk", "f", "r", 0, 100)
    other = lockers()
    other.ok("open", "f", b.p("r1"))
    other.ok("lk", "f", "r", 50, 100)
    assert other.do("lk", "f", "w", 0, 1) in (errno.EAGAIN, errno.EACCES)
    assert holder.do("lk", "f", "w", 60, 1) in (errno.EAGAIN, errno.EACCES)
    holder.ok("lk", "f", "w", 0, 10)  # only its own read lock there: an upgrade
    other.ok("lk", "f", "u", 0, 0)
    holder.ok("lk", "f", "w", 0, 0)


def test_setlkw_blocks_until_unlock(two_mounts, lockers):
    _, a, b = two_mounts
    newfile(a, "b1")
    wait_exists(b.p("b1"))
    holder = lockers()
    holder.ok("open", "f", a.p("b1"))
    holder.ok("lk", "f", "w", 0, 0)
    fd = os.open(b.p("b1"), os.O_RDWR)
    got = {}

    def waiter():
        t0 = time.monotonic()
        try:
            setlk(fd, fcntl.F_WRLCK, 0, 0, wait=True)
            got["t"] = time.monotonic()
        except OSError as e:
            got["err"] = e
        got["waited"] = time.monotonic() - t0

    th = threading.Thread(target=waiter)
    th.start()
    try:
        th.join(0.5)
        assert th.is_alive(), "F_SETLKW returned while the lock was held: %s" % got
        t_unlock = time.monotonic()
        holder.ok("lk", "f", "u", 0, 0)
        th.join(30)
        assert not th.is_alive(), "F_SETLKW still blocked 30 s after the unlock"
        assert "err" not in got, got
        print("F_SETLKW granted %.3f s after the unlock" % (got["t"] - t_unlock))
        assert holder.do("lk", "f", "r", 0, 1) in (errno.EAGAIN, errno.EACCES)
    finally:
        th.join(30)
        os.close(fd)


def test_close_of_any_fd_releases_posix_locks(two_mounts, lockers):
    _, a, b = two_mounts
    newfile(a, "c1")
    wait_exists(b.p("c1"))
    holder = lockers()
    holder.ok("open", "f1", a.p("c1"))
    holder.ok("open", "f2", a.p("c1"))
    holder.ok("lk", "f1", "w", 0, 0)
    fd = os.open(b.p("c1"), os.O_RDWR)
    try:
        assert conflicts(fd, fcntl.F_WRLCK)
        holder.ok("close", "f2")  # POSIX: any close of the file drops the process's locks
        assert not conflicts(fd, fcntl.F_WRLCK)
    finally:
        os.close(fd)


def test_rename_while_locked_then_close_releases(two_mounts, lockers):
    filer, a, _ = two_mounts
    os.mkdir(a.p("rn"))
    newfile(a, "rn/f")
    holder = lockers()
    holder.ok("open", "f", a.p("rn/f"))
    holder.ok("lk", "f", "w", 0, 0)
    body = {"key": "path:/rn/f", "session": 99, "owner": 1, "type": "write"}
    r = requests.post(filer.u("/.api/v1/getLock"), json=body, timeout=10)
    assert r.status_code == 200 and r.json()["conflict"]["type"] == "write", r.text
    os.rename(a.p("rn/f"), a.p("rn/g"))
    holder.ok("close", "f")  # the mount unlocks under the key it locked with
    r = requests.post(filer.u("/.api/v1/getLock"), json=body, timeout=10)
    assert r.status_code == 200 and r.json()["conflict"] is None, r.text


def test_flock_across_mounts(two_mounts, lockers):
    _, a, b = two_mounts
    newfile(a, "fl")
    wait_exists(b.p("fl"))
    holder = lockers()
    holder.ok("open", "f", a.p("fl"))
    holder.ok("flock", "f", "ex")
    fd = os.open(b.p("fl"), os.O_RDWR)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        # flock and POSIX locks do not meet (Linux)
        assert not conflicts(fd, fcntl.F_WRLCK)
        holder.ok("flock", "f", "sh")
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # shared with A's
        assert holder.do("flock", "f", "ex") == errno.EWOULDBLOCK
        fcntl.flock(fd, fcntl.LOCK_UN)
        holder.ok("flock", "f", "ex")
        # the last close of A's open file releases its flock
        holder.ok("close", "f")
        t0 = time.monotonic()
        while True:  # release reaches the mount just after close returns
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                assert time.monotonic() - t0 < 10, "flock not released by close"
                time.sleep(0.01)
    finally:
        os.close(fd)


def test_blocking_flock_and_interrupt(two_mounts, lockers):
    _, a, b = two_mounts
    newfile(a, "fi")
    wait_exists(b.p("fi"))
    holder = lockers()
    holder.ok("open", "f", a.p("fi"))
    holder.ok("flock", "f", "ex")
    # a blocked waiter that gets a signal: flock fails with EINTR and holds nothing
    # (Python retries EINTR unless the handler raises; the handler only runs once
    # the kernel's request returned, so the exception shows the mount gave EINTR)
    code = ("import fcntl, os, signal, sys\n"
            "class Alarm(Exception): pass\n"
            "def h(*a): raise Alarm()\n"
            "signal.signal(signal.SIGALRM, h)\n"
            "fd = os.open(sys.argv[1], os.O_RDWR)\n"
            "signal.setitimer(signal.ITIMER_REAL, 0.5)\n"
            "try:\n    fcntl.flock(fd, fcntl.LOCK_EX)\n    print('granted')\n"
            "except Alarm:\n    print('eintr')\n")
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code, b.p("fi")], capture_output=True,
                         text=True, timeout=30)
    assert out.stdout.strip() == "eintr", out
    assert time.monotonic() - t0 < 10
    holder.ok("flock", "f", "sh")
    # a blocked flock is granted once the holder lets go
    fd = os.open(b.p("fi"), os.O_RDWR)
    try:
        done = threading.Event()
        th = threading.Thread(target=lambda: (fcntl.flock(fd, fcntl.LOCK_EX), done.set()))
        th.start()
        assert not done.wait(0.5)
        holder.ok("flock", "f", "un")
        assert done.wait(30), "blocking flock never granted"
        th.join()
    finally:
        os.close(fd)


def test_processes_of_one_mount(two_mounts, lockers):
    _, a, _ = two_mounts
    newfile(a, "mp")
    p1, p2 = lockers(), lockers()
    p1.ok("open", "f", a.p("mp"))
    p2.ok("open", "f", a.p("mp"))
    p1.ok("lk", "f", "w", 0, 100)
    assert p2.do("lk", "f", "w", 50, 1) in (errno.EAGAIN, errno.EACCES)
    p2.ok("lk", "f", "w", 100, 0)
    fd = os.open(a.p("mp"), os.O_RDWR)
    try:
        t, s, n, pid = getlk(fd, fcntl.F_RDLCK, 0, 0)
        assert (t, s, n, pid) == (fcntl.F_WRLCK, 0, 100, p1.pid)
        t, s, n, pid = getlk(fd, fcntl.F_RDLCK, 100, 0)
        assert (t, s, n, pid) == (fcntl.F_WRLCK, 100, 0, p2.pid)
    finally:
        os.close(fd)
    p1.ok("lk", "f", "u", 0, 0)
    p2.ok("lk", "f", "w", 0, 1)
    p1.ok("flock", "f", "ex")
    assert p2.do("flock", "f", "sh") == errno.EWOULDBLOCK
    p1.stop()  # exit closes everything: its flock and POSIX locks go
    t0 = time.monotonic()
    while p2.do("flock", "f", "ex") != 0:
        assert time.monotonic() - t0 < 10, "flock of an exited process still held"
        time.sleep(0.01)


# SQLite's lock bytes (its unix VFS): a 1 GiB offset, one byte each for PENDING and
# RESERVED, then the SHARED range
PENDING = 1 << 30
RESERVED = PENDING + 1
SHARED, SHARED_LEN = PENDING + 2, 510


def refused(rc):
    return rc in (errno.EAGAIN, errno.EACCES)


def test_sqlite_style_lock_cycles(two_mounts, lockers):
    """SQLite's lock sequence per write transaction (shared, reserved, pending,
    exclusive, write, back to shared, unlocked), many times over: every call
    succeeds, another process (on the other mount and on the same one) is refused
    while the exclusive lock is held, shares the shared lock, and gets the exclusive
    one once it is released, and the file holds what the last cycle wrote. The rate
    is a benchmark: tests/bench/lock_rate.py."""
    filer, a, b = two_mounts
    base = b"0123456789" * 20
    newfile(a, "sqlite", base)
    wait_exists(b.p("sqlite"))
    probes = [lockers(), lockers()]
    probes[0].ok("open", "f", b.p("sqlite"))
    probes[1].ok("open", "f", a.p("sqlite"))
    n = 40
    record = lambda i: b"cycle %06d\n" % i  # noqa: E731
    want = record(n - 1) + base[len(record(0)):]
    fd = os.open(a.p("sqlite"), os.O_RDWR)
    try:
        for i in range(n):
            probe = i % 8 == 0
            setlk(fd, fcntl.F_RDLCK, PENDING, 1)  # shared: through PENDING, then SHARED
            setlk(fd, fcntl.F_RDLCK, SHARED, SHARED_LEN)
            setlk(fd, fcntl.F_UNLCK, PENDING, 1)
            setlk(fd, fcntl.F_WRLCK, RESERVED, 1)  # reserved
            setlk(fd, fcntl.F_WRLCK, PENDING, 1)  # pending, then exclusive
            setlk(fd, fcntl.F_WRLCK, SHARED, SHARED_LEN)
            assert os.pwrite(fd, record(i), 0) == len(record(i))
            for p in probes if probe else ():
                assert refused(p.do("lk", "f", "r", SHARED, SHARED_LEN)), i
                assert refused(p.do("lk", "f", "w", RESERVED, 1)), i
                assert refused(p.do("lk", "f", "r", PENDING, 1)), i
            setlk(fd, fcntl.F_RDLCK, SHARED, SHARED_LEN)  # back to shared
            setlk(fd, fcntl.F_UNLCK, PENDING, 2)
            for p in probes if probe else ():
                p.ok("lk", "f", "r", SHARED, SHARED_LEN)  # readers share it
                assert refused(p.do("lk", "f", "w", SHARED, SHARED_LEN)), i
                p.ok("lk", "f", "u", 0, 0)
            setlk(fd, fcntl.F_UNLCK, 0, 0)
            for p in probes if probe else ():
                p.ok("lk", "f", "w", SHARED, SHARED_LEN)  # released: a writer gets it
                p.ok("lk", "f", "u", 0, 0)
        assert os.pread(fd, len(base), 0) == want
    finally:
        os.close(fd)
    assert filer.get("/sqlite").content == want


def test_killed_mount_frees_its_locks(module_cluster, two_mounts, lockers):
    filer, _, b = two_mounts
    c = start_mount(module_cluster, filer.url, name="mountc")
    newfile(c, "k1")
    wait_exists(b.p("k1"))
    holder = lockers()
    holder.ok("open", "f", c.p("k1"))
    holder.ok("lk", "f", "w", 0, 0)
    holder.ok("open", "g", c.p("k1"))
    holder.ok("flock", "g", "ex")
    fd = os.open(b.p("k1"), os.O_RDWR)
    try:
        assert conflicts(fd, fcntl.F_RDLCK)
        c.daemon.kill9()
        t0 = time.monotonic()
        while conflicts(fd, fcntl.F_WRLCK):
            assert time.monotonic() - t0 < LEASE + 10, "locks of a dead mount still held"
            time.sleep(0.2)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        freed = time.monotonic() - t0
        print("locks of the killed mount freed after %.1f s (lease %d s)" % (freed, LEASE))
        assert freed > 1  # the lease, not something else, freed them
    finally:
        os.close(fd)
        holder.stop()
        c.unmount()


def test_lock_api_and_bad_input(two_mounts):
    filer, a, _ = two_mounts
    newfile(a, "api")
    u = lambda op: filer.u("/.api/v1/" + op)  # noqa: E731

    def post(op, body, raw=None):
        if raw is not None:
            return requests.post(u(op), data=raw, timeout=10)
        return requests.post(u(op), json=body, timeout=10)

    base = {"path": "/api", "session": 7, "owner": 1, "pid": 4242, "type": "write",
            "start": 5, "length": 10}
    r = post("lock", base)
    assert r.status_code == 200 and r.json() == {"key": "path:/api", "held": 1,
                                                 "created": True}, r.text
    other = dict(base, session=8, type="read", start=0, length=0)
    r = post("lock", other)
    assert r.status_code == 409, r.text
    j = r.json()
    assert j["code"] == "EAGAIN" and j["error"]
    assert j["conflict"] == {"type": "write", "start": 5, "length": 10, "pid": 4242,
                             "flock": False}
    r = post("getLock", other)
    assert r.status_code == 200 and r.json()["conflict"]["start"] == 5, r.text
    r = post("getLock", dict(other, start=15))
    assert r.status_code == 200 and r.json()["conflict"] is None, r.text

    bad = [
        ("lock", dict(base, type="exclusive")),
        ("lock", dict(base, start=-1)),
        ("lock", dict(base, length=-5)),
        ("lock", dict(base, start=2 ** 63 - 5, length=10)),
        ("lock", dict(base, session=0)),
        ("lock", {k: v for k, v in base.items() if k != "owner"}),
        ("lock", dict(base, path="relative")),
        ("lock", dict(base, path="/a/../api")),
        ("lock", dict(base, key="path:/api")),  # path and key
        ("lock", dict({k: v for k, v in base.items() if k != "path"}, key="nokey")),
        ("lock", dict(base, wait=True)),
        ("lock", dict(base, flock=True)),  # flock with a range
        ("lock", dict(base, extra=1)),
        ("lock", dict(base, pid="12")),
        ("getLock", dict(base, type="unlock")),
        ("lockSession", {"session": 7, "leaseSeconds": 0}),
        ("lockSession", {"session": 7, "leaseSeconds": 100000}),
        ("lockSession", {}),
        ("lockSession", {"session": 7, "x": 1}),
        ("lockSession", []),
    ]
    for op, body in bad:
        r = post(op, body)
        assert r.status_code == 400, "%s %s: %s %s" % (op, body, r.status_code, r.text)
        assert r.json()["code"] == "EINVAL" and r.json()["error"], r.text
    r = post("lock", None, raw=b"{not json")
    assert r.status_code == 400 and r.json()["code"] == "EINVAL"
    # nothing changed: session 7 still holds exactly its one lock
    r = post("getLock", other)
    assert r.json()["conflict"] == {"type": "write", "start": 5, "length": 10, "pid": 4242,
                                    "flock": False}, r.text
    r = post("lock", dict(base, path="/no/such/file"))
    assert r.status_code == 404 and r.json()["code"] == "ENOENT", r.text

    # a session with a 1 s lease that is not renewed loses its locks
    r = post("lockSession", {"session": 7, "leaseSeconds": 1})
    assert r.status_code == 200 and r.json() == {"leaseSeconds": 1, "created": False,
                                                 "grace": False}, r.text
    t0 = time.monotonic()
    while post("getLock", other).json()["conflict"] is not None:
        assert time.monotonic() - t0 < 10, "lease of 1 s never expired"
        time.sleep(0.1)
    r = post("lockSession", {"session": 7})
    assert r.json()["created"] is True, r.text
    # release drops a session's locks at once
    assert post("lock", dict(base, session=9)).status_code == 200
    assert post("lockSession", {"session": 9, "release": True}).status_code == 200
    assert post("getLock", other).json()["conflict"] is None
