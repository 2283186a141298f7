"""Locks survive a filer restart (docs/mount.md, "Locks"): the mount keeps a copy of
the locks it holds and re-asserts them when the restarted filer answers that its
session is new; during the filer's grace period (-lockGraceSeconds) only re-asserted
locks are granted. A lock that is not re-asserted in time is lost, and its holder is
told (ENOLCK) instead of silently sharing it. A separate master, volume server and
filer, so the filer restarts (same store) while the others keep running; two real
FUSE mounts of it; the holder is a child process on mount A (test_mount_locks.Locker).
"""

import errno
import fcntl
import os
import re
import struct

import requests

from conftest import wait_until
from filer_fixtures import start_filer
from mount_fixtures import start_mount
from test_mount_locks import Locker

GRACE = 5  # the filer's -lockGraceSeconds
LEASE = 5  # the mounts' -lockLeaseSeconds: they renew every second
PROBE = 0x51  # a session id of the test's own, to ask the filer about its grace
GHOST = 0x52  # a mount session that never comes back after the restart
REFUSED = (errno.EAGAIN, errno.EACCES)  # EWOULDBLOCK is EAGAIN on Linux
HELD = (100, 100)  # A's POSIX write lock: bytes 100..199 of "posix"


def session_call(filer, body):
    r = requests.post(filer.u("/.api/v1/lockSession"), json=body, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def in_grace(filer):
    """What lockSession answers about the filer's grace period (a 1 s probe session)."""
    return session_call(filer, {"session": PROBE, "leaseSeconds": 1})["grace"]


def restart_cluster(cluster, grace=GRACE, lease=LEASE):
    master = cluster.master()
    cluster.volume(master)
    filer = start_filer(cluster, master, extra=["-lockGraceSeconds=%d" % grace])
    a = start_mount(cluster, filer.url, extra=["-lockLeaseSeconds=%d" % lease], name="mounta")
    b = start_mount(cluster, filer.url, extra=["-lockLeaseSeconds=%d" % lease], name="mountb")
    return filer, a, b


def newfile(m, name):
    with open(m.p(name), "wb") as f:
        f.write(b"0123456789" * 30)


def hold(a):
    """A child on mount A with an exclusive flock on "flock" and a POSIX write lock on
    HELD of "posix"."""
    newfile(a, "flock")
    newfile(a, "posix")
    holder = Locker()
    holder.ok("open", "fl", a.p("flock"))
    holder.ok("flock", "fl", "ex")
    holder.ok("open", "px", a.p("posix"))
    holder.ok("lk", "px", "w", *HELD)
    return holder


def flock_err(fd):
    """The errno of flock(LOCK_EX | LOCK_NB) on fd, 0 when granted."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        return e.errno
    return 0


def setlk_err(fd, typ, start, length):
    """The errno of F_SETLK for the range on fd, 0 when granted."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("hhqqi4x", typ, 0, start, length, 0))
    except OSError as e:
        return e.errno
    return 0


def open_b(b):
    wait_until(lambda: os.path.exists(b.p("flock")) and os.path.exists(b.p("posix")), 10,
               "A's files seen through B")
    return os.open(b.p("flock"), os.O_RDWR), os.open(b.p("posix"), os.O_RDWR)


def assert_excluded(fl, px, why):
    assert flock_err(fl) == errno.EWOULDBLOCK, "B's flock granted %s" % why
    assert setlk_err(px, fcntl.F_WRLCK, *HELD) in REFUSED, "B's F_SETLK granted %s" % why
    assert setlk_err(px, fcntl.F_RDLCK, HELD[0] + HELD[1] - 1, 1) in REFUSED, why


def restart_filer(filer):
    filer.daemon.stop()
    filer.daemon.start()


def lost_reported(m):
    """The count of the mount's last "re-asserted, lost" log line's lost locks."""
    found = re.findall(r"(\d+) lock\(s\) re-asserted, (\d+) lost", m.daemon.log_text())
    return int(found[-1][1]) if found else 0


def test_locks_reasserted_after_filer_restart(cluster):
    """A's flock and POSIX lock exclude B during the grace (the filer defers B until A
    has re-asserted) and after it; a range A does not hold is B's; A's unlock frees
    them. Would fail if A did not re-assert: B's calls are granted at the grace's end."""
    filer, a, b = restart_cluster(cluster)
    # a mount that died while the filer was down: the filer waits the whole grace for it
    session_call(filer, {"session": GHOST, "hiddenDir": "/.ghost-unlinked"})
    holder = hold(a)
    fl, px = open_b(b)
    try:
        assert_excluded(fl, px, "before the restart")
        restart_filer(filer)
        assert in_grace(filer), "the restarted filer is not in its grace period"
        # B's calls wait (the filer defers them) until A has re-asserted, then conflict
        assert_excluded(fl, px, "during the grace period (A's locks not re-asserted)")
        assert in_grace(filer), "the grace ended before B's calls were answered"
        wait_until(lambda: not in_grace(filer), GRACE + 15, "the filer's grace period over")
        assert_excluded(fl, px, "after the grace period")
        holder.ok("write", "px", 150)  # kept locks: I/O through them is not refused
        holder.ok("fsync", "fl")
        # a range A does not hold is B's, and A's holder is refused it in turn
        assert setlk_err(px, fcntl.F_WRLCK, 0, HELD[0]) == 0
        assert holder.do("lk", "px", "w", 0, 1) in REFUSED
        assert setlk_err(px, fcntl.F_UNLCK, 0, HELD[0]) == 0
        # A releases: B gets both
        holder.ok("flock", "fl", "un")
        holder.ok("lk", "px", "u", 0, 0)
        assert flock_err(fl) == 0
        assert setlk_err(px, fcntl.F_WRLCK, 0, 0) == 0
        assert lost_reported(a) == 0
    finally:
        os.close(fl)
        os.close(px)
        holder.stop()
        b.unmount()
        a.unmount()


def test_lock_not_reasserted_is_lost(cluster):
    """Mount A stopped (SIGSTOP) across the whole grace period cannot re-assert: after
    the grace B takes the locks, and once A runs again its holder is told (ENOLCK,
    once per lock) by its next lock call on the file or its next write or fsync
    through the descriptor it locked through, whichever comes first; then it sees
    B's locks as any conflict."""
    filer, a, b = restart_cluster(cluster)
    holder = hold(a)
    newfile(a, "wr")
    newfile(a, "fs")
    holder.ok("open", "wr", a.p("wr"))
    holder.ok("lk", "wr", "w", 0, 0)
    holder.ok("open", "fs", a.p("fs"))
    holder.ok("flock", "fs", "sh")
    fl, px = open_b(b)
    try:
        assert_excluded(fl, px, "before the restart")
        a.daemon.pause()
        restart_filer(filer)
        wait_until(lambda: not in_grace(filer), GRACE + 15, "the filer's grace period over")
        assert flock_err(fl) == 0, "A's flock still held after the grace"
        assert setlk_err(px, fcntl.F_WRLCK, *HELD) == 0, "A's POSIX lock still held"
        a.daemon.resume()
        wait_until(lambda: lost_reported(a) == 4, 15, "mount A to find its 4 locks lost")
        assert holder.do("write", "wr", 5) == errno.ENOLCK  # not written
        holder.ok("write", "wr", 6)
        holder.ok("lk", "wr", "w", 0, 0)  # the write told it: a lock call is not
        assert holder.do("fsync", "fs") == errno.ENOLCK
        holder.ok("fsync", "fs")
        holder.ok("flock", "fs", "ex")
        holder.ok("fsync", "wr")
        assert filer.get("/wr").content[4:8] == b"45w7"
        assert holder.do("flock", "fl", "ex") == errno.ENOLCK
        assert holder.do("lk", "px", "w", *HELD) == errno.ENOLCK
        # told once: the next calls meet B's locks
        assert holder.do("flock", "fl", "ex") == errno.EWOULDBLOCK
        assert holder.do("lk", "px", "w", *HELD) in REFUSED
        assert holder.do("lk", "px", "w", 0, HELD[0]) == 0  # a free range is granted
        fcntl.flock(fl, fcntl.LOCK_UN)
        assert setlk_err(px, fcntl.F_UNLCK, 0, 0) == 0
        holder.ok("flock", "fl", "ex")
        holder.ok("lk", "px", "w", *HELD)
        assert flock_err(fl) == errno.EWOULDBLOCK
    finally:
        a.daemon.resume()
        os.close(fl)
        os.close(px)
        holder.stop()
        b.unmount()
        a.unmount()



def test_lock_granted_before_the_loss_is_noticed(cluster):
    """A filer restarted without a grace period forgets A's locks at once. A's holder
    locks a free range before A's renewal (every 3 s) notices, or just after: either
    way one of its next two calls is told ENOLCK and the other is granted, B gets the
    lost range, and the lock granted after the restart is A's to release: the close
    frees it (it is not counted lost, so not forgotten, by the mount)."""
    filer, a, b = restart_cluster(cluster, grace=0, lease=15)
    newfile(a, "posix")
    holder = Locker()
    holder.ok("open", "px", a.p("posix"))
    holder.ok("lk", "px", "w", *HELD)
    wait_until(lambda: os.path.exists(b.p("posix")), 10, "A's file seen through B")
    px = os.open(b.p("posix"), os.O_RDWR)
    try:
        assert setlk_err(px, fcntl.F_WRLCK, *HELD) in REFUSED
        restart_filer(filer)
        fresh = (300, 10)
        told = [holder.do("lk", "px", "w", *fresh), holder.do("lk", "px", "w", *fresh)]
        assert sorted(told) == [0, errno.ENOLCK], told
        assert setlk_err(px, fcntl.F_WRLCK, *HELD) == 0, "A's lost lock still held"
        assert setlk_err(px, fcntl.F_UNLCK, 0, 0) == 0
        assert setlk_err(px, fcntl.F_WRLCK, *fresh) in REFUSED
        holder.ok("close", "px")  # the flush unlocks it before close returns
        assert setlk_err(px, fcntl.F_WRLCK, *fresh) == 0, "the lock taken after the restart leaked"
    finally:
        os.close(px)
        holder.stop()
        b.unmount()
        a.unmount()
