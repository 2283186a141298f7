"""mount(8) / fstab support: mount/mount.weedfs, the helper installed as
/sbin/mount.fuse.weedfs and /sbin/mount.weedfs.

mount(8) looks for helpers only in /sbin (and /sbin/fs.d, /sbin/fs) and runs them
with a sanitised PATH, and tests must not write to /sbin. So the helper is run
here with exactly the argv mount(8) gives /sbin/mount.fuse.weedfs
(`SOURCE MOUNTPOINT -o OPTS -t fuse.weedfs`), and once more through the real
/sbin/mount.fuse3 (mount(8)'s fallback for fuse.TYPE, which runs the program
TYPE from PATH). Unmounting is the real umount(8). The background weedfs-mount
process is found by its unique mount point in /proc and stopped by PID if a
test fails before it unmounted."""

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import WEEDFS
from filer_fixtures import start_mini_with_filer
from mount_fixtures import fusermount_u, is_mounted, mount_binary

HELPER = Path(__file__).resolve().parents[2] / "mount" / "mount.weedfs"


def mount_opts(path):
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            if fields[1] == os.path.realpath(str(path)):
                return fields
    return None


def daemon_pids(mnt):
    """PIDs of weedfs-mount processes serving mnt (ours: mnt is a fresh temp dir)."""
    pids = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            argv = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"weedfs-mount") and str(mnt).encode() in argv:
            pids.append(int(p.name))
    return pids


def wait_gone(mnt, timeout=20):
    deadline = time.monotonic() + timeout
    while daemon_pids(mnt):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture(scope="module")
def fstab_env(module_cluster):
    if not mount_binary():
        pytest.fail("weedfs-mount binary not found next to %s" % WEEDFS, pytrace=False)
    if not shutil.which("umount"):
        pytest.skip("umount(8) is needed")
    _, filer = start_mini_with_filer(module_cluster)
    # the volume server registers within a pulse: wait until a write works
    deadline = time.monotonic() + 30
    while filer.put("/sub/.ready", b"x").status_code >= 300:
        assert time.monotonic() < deadline, "filer never took a write"
        time.sleep(0.2)
    filer.delete("/sub/.ready")
    env = dict(os.environ, WEEDFS_MOUNT=mount_binary())
    yield module_cluster, filer, env


@pytest.fixture
def mnt(fstab_env, request):
    cluster = fstab_env[0]
    d = cluster._dir("fstab-" + request.node.name[:40])
    m = d / "mnt"
    m.mkdir()
    yield m
    if is_mounted(m):
        fusermount_u(m)
    if not wait_gone(m, 10):
        for pid in daemon_pids(m):
            os.kill(pid, signal.SIGKILL)
    if is_mounted(m):
        fusermount_u(m, lazy=True)


def helper(argv, env, prog=str(HELPER), timeout=30):
    return subprocess.run([prog] + argv, env=env, capture_output=True, text=True,
                          timeout=timeout)


def umount(m):
    r = subprocess.run(["umount", str(m)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert not is_mounted(m)
    assert wait_gone(m), "weedfs-mount still running after umount"


def test_mount_argv_of_mount8_and_umount(fstab_env, mnt):
    _, filer, env = fstab_env
    # as mount(8) runs /sbin/mount.fuse.weedfs for an fstab line
    # "127.0.0.1:PORT:/sub MNT fuse.weedfs noatime,_netdev,memCacheMB=16,... 0 0"
    r = helper(["%s:/sub" % filer.url, str(mnt), "-o",
                "rw,noatime,_netdev,nofail,x-systemd.automount,memCacheMB=16,attrTimeout=2,"
                "writebackCache", "-t", "fuse.weedfs"], env)
    assert r.returncode == 0, r.stderr
    # the helper returned with the file system mounted (fstab mounts must return)
    assert is_mounted(mnt)
    fields = mount_opts(mnt)
    assert fields[0] == "weedfs:%s/sub" % filer.url
    assert fields[2] == "fuse.weedfs"
    assert "noatime" in fields[3].split(",")
    with open(mnt / "hello", "w") as f:
        f.write("through fstab")
    # the file is in the filer under /sub (the SOURCE's path)
    assert filer.get("/sub/hello").content == b"through fstab"
    filer.put("/sub/from-filer", b"abc")
    deadline = time.monotonic() + 10
    while not (mnt / "from-filer").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert (mnt / "from-filer").read_bytes() == b"abc"
    # the weedfs-mount flags from -o reached the daemon
    pids = daemon_pids(mnt)
    assert len(pids) == 1
    argv = Path("/proc/%d/cmdline" % pids[0]).read_bytes().split(b"\0")
    for want in (b"-filer.path=/sub", b"-memCacheMB=16", b"-attrTimeout=2",
                 b"-writebackCache=true", b"-foreground=false"):
        assert want in argv, argv
    assert not any(b"_netdev" in a or b"x-systemd" in a or b"nofail" in a for a in argv), argv
    umount(mnt)


def test_filer_path_option_and_read_only(fstab_env, mnt):
    _, filer, env = fstab_env
    filer.put("/sub/deep/f", b"deep")
    # the source without a path, the subtree from -o filer.path=
    r = helper([filer.url, str(mnt), "-o", "ro,filer.path=/sub/deep"], env)
    assert r.returncode == 0, r.stderr
    assert (mnt / "f").read_bytes() == b"deep"
    assert "ro" in mount_opts(mnt)[3].split(",")
    with pytest.raises(OSError):
        open(mnt / "g", "w")
    umount(mnt)


def test_through_mount_fuse3(fstab_env, mnt):
    """mount -t fuse.weedfs without /sbin/mount.fuse.weedfs falls back to
    /sbin/mount.fuse3, which runs the program `weedfs` (the subtype) from PATH with
    SOURCE MOUNTPOINT -o OPTS: here a link named weedfs to the helper."""
    cluster, filer, env = fstab_env
    mf = shutil.which("mount.fuse3") or "/sbin/mount.fuse3"
    if not os.access(mf, os.X_OK):
        pytest.skip("mount.fuse3 is not installed")
    pbin = cluster._dir("fstab-path")
    os.symlink(HELPER, pbin / "weedfs")
    env = dict(env, PATH="%s:%s" % (pbin, env.get("PATH", "/usr/bin:/bin")))
    r = helper(["%s:/sub" % filer.url, str(mnt), "-o", "noatime,memCacheMB=8", "-t",
                "fuse.weedfs"], env, prog=mf)
    assert r.returncode == 0, r.stderr
    assert is_mounted(mnt)
    (mnt / "via-fuse3").write_bytes(b"1")
    assert filer.get("/sub/via-fuse3").content == b"1"
    umount(mnt)


def test_fake_verbose_and_errors(fstab_env, mnt):
    _, filer, env = fstab_env
    # -f (fake) with -v: prints the command, mounts nothing
    r = helper(["%s:/sub" % filer.url, str(mnt), "-fv", "-o", "cacheDir=/tmp/x,ttl=1d"], env)
    assert r.returncode == 0, r.stderr
    assert "-filer=%s" % filer.url in r.stderr and "-cacheDir=/tmp/x" in r.stderr
    assert "-ttl=1d" in r.stderr
    assert not is_mounted(mnt)
    # a source without a port
    r = helper(["nohost", str(mnt)], env)
    assert r.returncode != 0 and "HOST:PORT" in r.stderr
    # a filer path that does not exist: the mount fails, and says so
    r = helper(["%s:/no/such/dir" % filer.url, str(mnt)], env)
    assert r.returncode != 0
    assert not is_mounted(mnt)
    assert helper([str(mnt)], env).returncode != 0
