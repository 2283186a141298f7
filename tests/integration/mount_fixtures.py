"""weedfs-mount for the integration tests: a real FUSE mount of a real mini.

`start_mount(cluster, filer_url, extra)` starts weedfs-mount (found next to the
weedfs binary, or $WEEDFS_MOUNT_BIN) on a fresh directory and waits until the
kernel lists the mount. The mount is a conftest `Daemon` in the cluster, so its
log is attached to failures, sanitizer reports fail the test, and teardown
stops it by PID. `Mount.unmount()` is `fusermount3 -u` first (a clean unmount),
then SIGTERM / SIGKILL of our own PID only.
"""

import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import SECURITY_ARGS, WEEDFS, Daemon
from filer_fixtures import start_mini_with_filer


def mount_binary():
    env = os.environ.get("WEEDFS_MOUNT_BIN")
    if env:
        return str(Path(env).resolve())
    if WEEDFS:
        cand = Path(WEEDFS).parent / "weedfs-mount"
        if cand.is_file():
            return str(cand)
    return None


def is_mounted(path):
    path = os.path.realpath(str(path))
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 4 and fields[4] == path:
                return True
    return False


def fusermount_u(path, lazy=False, timeout=20):
    subprocess.run(["fusermount3", "-uz" if lazy else "-u", str(path)], capture_output=True,
                   timeout=timeout)


class MountDaemon(Daemon):
    """A weedfs-mount process: stopping it unmounts first, and never leaves the
    kernel mount behind (even when the process died)."""

    def __init__(self, name, binary, args, workdir, filer_url, mnt):
        super().__init__(name, args, workdir, filer_url)
        self.args = [binary] + list(args)
        self.mnt = mnt

    def stop(self, timeout=20):
        if self.alive() and is_mounted(self.mnt):
            fusermount_u(self.mnt)  # a clean unmount: the process commits and exits
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        rc = super().stop(timeout)
        if is_mounted(self.mnt):
            fusermount_u(self.mnt, lazy=True)
        return rc


class Mount:
    """One weedfs-mount process and its mount point."""

    def __init__(self, daemon, path, filer_url):
        self.daemon = daemon
        self.path = Path(path)
        self.filer_url = filer_url

    def p(self, *parts):
        return str(self.path.joinpath(*parts))

    def unmount(self, timeout=20):
        """fusermount3 -u, then our own PID (SIGTERM, SIGKILL); the exit status."""
        return self.daemon.stop(timeout)


def start_mount(cluster, filer_url, extra=(), name=None, wait=True):
    binary = mount_binary()
    if not binary:
        pytest.fail("weedfs-mount binary not found next to %s" % WEEDFS, pytrace=False)
    d = cluster._dir(name or "mount")
    mnt = d / "mnt"
    mnt.mkdir()
    args = ["-filer=%s" % filer_url, "-v=info"] + SECURITY_ARGS + list(extra) + [str(mnt)]
    dm = MountDaemon("mount-%s" % d.name, binary, args, d, filer_url, mnt)
    cluster.daemons.append(dm)
    dm.start(wait=False)
    m = Mount(dm, mnt, filer_url)
    if wait:
        deadline = time.monotonic() + 20
        while not is_mounted(mnt):
            if dm.proc.poll() is not None:
                raise AssertionError("weedfs-mount exited with %s\n%s"
                                     % (dm.proc.returncode, dm.log_tail()))
            if time.monotonic() > deadline:
                raise AssertionError("weedfs-mount never mounted\n%s" % dm.log_tail())
            time.sleep(0.02)
    return m


def mini_and_mount(cluster, mount_extra=(), mini_extra=()):
    """A mini with a filer and one mount of it: (mini daemon, Filer, Mount)."""
    mini, filer = start_mini_with_filer(cluster, extra=mini_extra)
    m = start_mount(cluster, filer.url, extra=mount_extra)
    return mini, filer, m


@pytest.fixture(scope="module")
def mounted(module_cluster):
    """(Filer, Mount) shared by a module (-o allow_other, so tests can switch users);
    unmounted at the end."""
    _, filer, m = mini_and_mount(module_cluster, mount_extra=["-o", "allow_other"])
    yield filer, m
    m.unmount()
