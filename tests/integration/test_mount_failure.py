"""weedfs-mount when the cluster goes away: operations fail with EIO once the
retry budget (-retrySeconds=2 here) is spent, nothing hangs, the mount process
survives, an upload that cannot happen makes fsync() and close() fail, and
everything works again once the filer is back."""

import ctypes
import errno
import os
import signal
import time

import pytest

from conftest import wait_until
from filer_fixtures import start_mini_with_filer
from mount_fixtures import is_mounted, start_mount

RETRY = 2
# the budget, the request timeout of the last try, and slack for a loaded machine
BOUND = RETRY + 8


def timed_errno(fn, *args):
    t0 = time.monotonic()
    with pytest.raises(OSError) as ei:
        fn(*args)
    return ei.value.errno, time.monotonic() - t0


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)


def test_filer_down_eio_then_recovers(cluster):
    mini, filer = start_mini_with_filer(cluster)
    m = start_mount(cluster, filer.url, extra=["-retrySeconds=%d" % RETRY,
                                               "-timeoutSeconds=2"])
    os.mkdir(m.p("d"))
    write_file(m.p("d", "old"), b"before")
    # a file open for writing with data the mount has not uploaded yet
    pending = os.open(m.p("d", "pending"), os.O_CREAT | os.O_WRONLY, 0o644)
    assert os.write(pending, os.urandom(1 << 20)) == 1 << 20

    mini.kill9()
    # until the mount sees its event stream end, what it knows of d is still current
    wait_until(lambda: "lost the filer's event stream" in m.daemon.log_text(), 30,
               "the mount never noticed the filer's event stream end")

    code, took = timed_errno(os.stat, m.p("d", "new-name"))
    assert code == errno.EIO and took < BOUND, (code, took)
    code, took = timed_errno(os.listdir, m.p("d"))
    assert code == errno.EIO and took < BOUND, (code, took)
    code, took = timed_errno(os.mkdir, m.p("d", "sub"))
    assert code == errno.EIO and took < BOUND, (code, took)
    code, took = timed_errno(os.fsync, pending)
    assert code == errno.EIO and took < BOUND, (code, took)
    code, took = timed_errno(os.close, pending)
    assert code == errno.EIO and took < BOUND, (code, took)
    assert m.daemon.alive(), m.daemon.log_tail()

    # the filer comes back on the same port and directory
    mini.start()
    deadline = time.monotonic() + 30
    while True:
        try:
            os.listdir(m.p("d"))
            break
        except OSError:
            assert time.monotonic() < deadline, "mount never recovered"
            time.sleep(0.2)
    write_file(m.p("d", "after"), b"after the restart")
    with open(m.p("d", "after"), "rb") as f:
        assert f.read() == b"after the restart"
    with open(m.p("d", "old"), "rb") as f:
        assert f.read() == b"before"
    assert m.daemon.alive()
    assert m.unmount() == 0


def test_sigterm_commits_dirty_data(cluster):
    _, filer = start_mini_with_filer(cluster)
    m = start_mount(cluster, filer.url)
    fd = os.open(m.p("open-at-stop"), os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"committed by SIGTERM")  # in the mount, not committed (no close, no fsync)
    m.daemon.proc.terminate()
    assert m.daemon.proc.wait(20) == 0, m.daemon.log_tail()
    try:
        os.close(fd)
    except OSError:
        pass  # the mount is gone
    r = filer.get("/open-at-stop")
    assert r.status_code == 200 and r.content == b"committed by SIGTERM"
    m.unmount()


def thread_ids_named(pid, name):
    tids = []
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            if f.read().strip() == name:
                tids.append(int(tid))
    return tids


def tgkill(pid, tid, sig):
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.syscall(234, pid, tid, sig) == 0, os.strerror(ctypes.get_errno())  # tgkill


@pytest.mark.parametrize("thread", ["wfs-follower", "wfs-touch", "wfs-commit"])
def test_stop_signal_taken_by_a_helper_thread(cluster, thread):
    """The kernel may hand a process's SIGTERM to any of its threads; taken by
    one that is not FUSE's (the event follower sleeping in curl, the commit
    thread), the mount must still stop, commit and unmount within seconds."""
    _, filer = start_mini_with_filer(cluster)
    m = start_mount(cluster, filer.url)
    pid = m.daemon.proc.pid
    with open(m.p("written"), "wb") as f:
        f.write(b"x" * 1000)
    deadline = time.monotonic() + 10
    while not thread_ids_named(pid, thread):
        assert time.monotonic() < deadline, "no %s thread" % thread
        time.sleep(0.05)
    time.sleep(0.3)  # the follower has connected and sleeps waiting for events
    tgkill(pid, thread_ids_named(pid, thread)[0], signal.SIGTERM)
    assert m.daemon.proc.wait(15) == 0, m.daemon.log_tail()
    assert not is_mounted(m.path)
    assert filer.get("/written").content == b"x" * 1000
