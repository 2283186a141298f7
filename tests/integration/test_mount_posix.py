"""POSIX behaviour of weedfs-mount: the conformance suite and fsx (tests/posix/).

Both tools first run against local directories (ext4 under /tmp and a tmpfs when root):
those runs must pass 100% and prove the tools themselves. The same tools then run against
a real weedfs-mount on a real mini (one mount, and two mounts of the same cluster for the
close-to-open fsx run). The mount tests are skipped only when the weedfs-mount binary is
absent.

Environment:
  WEEDFS_FSX_OPS       fsx operations per run (default 3000)
  WEEDFS_FSX_BIN       the fsx binary (default: next to weedfs in the build tree, else
                       compiled here from tests/posix/fsx.c with cc)
  WEEDFS_MOUNT_BIN     the weedfs-mount binary (default: next to weedfs)
  WEEDFS_FSX_REOPEN_DELAY_MS  delay before opening through the other mount (default 0:
                       close-to-open needs none)
"""

import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, WEEDFS, wait_until
from filer_fixtures import start_mini_with_filer
from mount_fixtures import mount_binary, start_mount

POSIX_DIR = ROOT / "tests" / "posix"
CONFORMANCE = POSIX_DIR / "conformance.py"
FSX_OPS = int(os.environ.get("WEEDFS_FSX_OPS", "3000"))
REOPEN_DELAY_MS = int(os.environ.get("WEEDFS_FSX_REOPEN_DELAY_MS", "0"))
IS_ROOT = os.geteuid() == 0


def _find_mount_bin():
    b = mount_binary()
    return b if b and os.access(b, os.X_OK) else None


MOUNT_BIN = _find_mount_bin()
needs_mount = pytest.mark.skipif(
    MOUNT_BIN is None or not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None,
    reason="weedfs-mount binary not built (looked next to WEEDFS_BIN; set WEEDFS_MOUNT_BIN), "
           "or no /dev/fuse / fusermount3")
needs_root = pytest.mark.skipif(not IS_ROOT, reason="FUSE mounts in the tests need root")


@pytest.fixture(scope="session")
def fsx_bin(tmp_path_factory):
    """The fsx binary: $WEEDFS_FSX_BIN, the build tree's (make check builds it), or cc."""
    env = os.environ.get("WEEDFS_FSX_BIN")
    if env:
        return env
    if WEEDFS:
        cand = Path(WEEDFS).parent / "tests" / "posix" / "fsx"
        src = POSIX_DIR / "fsx.c"
        if cand.is_file() and cand.stat().st_mtime >= src.stat().st_mtime:
            return str(cand)
    d = tmp_path_factory.mktemp("fsx")
    (d / "config.h").write_text("")
    out = d / "fsx"
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-std=gnu11", "-D_GNU_SOURCE", "-O2", "-g", "-Wall", "-Wextra",
                    "-Werror", "-I", str(d), str(POSIX_DIR / "fsx.c"), "-o", str(out)],
                   check=True)
    return str(out)


def searchable_tmpdir(prefix):
    """A directory under /tmp that the conformance suite's unprivileged users can reach
    (pytest's tmp_path is under a 0700 directory)."""
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    os.chmod(d, 0o755)
    return d


def run_conformance(target, extra=(), timeout=600):
    r = subprocess.run([sys.executable, str(CONFORMANCE), str(target)] + list(extra),
                       capture_output=True, text=True, timeout=timeout)
    summary = [l for l in r.stdout.splitlines() if l.startswith("conformance:")]
    return r, (summary[-1] if summary else "(no summary)")


def assert_conformance(target, extra=()):
    r, summary = run_conformance(target, extra)
    print(r.stdout[-20000:])
    if r.returncode != 0 or " 0 failed" not in summary:
        pytest.fail("%s\n%s%s" % (summary, r.stdout[-20000:], r.stderr[-5000:]), pytrace=False)
    return summary


def run_fsx(fsx, args, timeout=900):
    r = subprocess.run([fsx] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout)
    return r


def assert_fsx(fsx, args, timeout=900):
    r = run_fsx(fsx, args, timeout)
    print(r.stdout)
    if r.returncode != 0 or "fsx: PASS" not in r.stdout:
        pytest.fail("fsx %s failed:\n%s\n%s" % (" ".join(map(str, args)), r.stdout, r.stderr),
                    pytrace=False)
    return r.stdout


def seed():
    s = int(os.environ.get("WEEDFS_FSX_SEED", "0")) or random.randrange(1, 1 << 31)
    print("fsx seed", s)
    return s


# ------------------------------------------------------------------ local file systems
@pytest.fixture
def local_dir():
    d = searchable_tmpdir("weedfs-posix-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def tmpfs_dir():
    if not IS_ROOT:
        pytest.skip("mounting a tmpfs needs root")
    d = searchable_tmpdir("weedfs-posix-tmpfs-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512m,mode=0755", "tmpfs", d], check=True)
    yield d
    subprocess.run(["umount", d], check=False)
    os.rmdir(d)


def test_conformance_local_dir(local_dir):
    """The suite passes 100% on the local disk (ext4 on the CI machines)."""
    summary = assert_conformance(local_dir)
    n = int(summary.split()[1])
    assert n >= 500, summary


def test_conformance_tmpfs(tmpfs_dir):
    assert_conformance(tmpfs_dir)


def test_conformance_reports_failures():
    """The suite reports misbehaviour: on a tmpfs that runs out of inodes early, creates fail
    with ENOSPC, which must show as FAIL lines and exit status 1 (not a crash, not a pass)."""
    if not IS_ROOT:
        pytest.skip("mounting a tmpfs needs root")
    d = searchable_tmpdir("weedfs-posix-full-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,nr_inodes=300,mode=0755", "tmpfs",
                    d], check=True)
    try:
        r, summary = run_conformance(d, ["-k", "mkdir", "-k", "rename", "-k", "misc"])
    finally:
        subprocess.run(["umount", d], check=False)
        os.rmdir(d)
    assert r.returncode == 1, summary + r.stdout[-3000:] + r.stderr[-3000:]
    assert "FAIL " in r.stdout
    assert "failed" in summary and " 0 failed" not in summary, summary
    r = subprocess.run([sys.executable, str(CONFORMANCE), "/nonexistent-dir"],
                       capture_output=True, text=True)
    assert r.returncode == 2


def test_fsx_local_dir(fsx_bin, local_dir):
    assert_fsx(fsx_bin, ["-N", max(FSX_OPS, 5000), "-S", seed(), os.path.join(local_dir, "f")])


def test_fsx_tmpfs(fsx_bin, tmpfs_dir):
    assert_fsx(fsx_bin, ["-N", max(FSX_OPS, 5000), "-S", seed(), os.path.join(tmpfs_dir, "f")])


def test_fsx_small_ops_local(fsx_bin, local_dir):
    """Short files and operations: page-boundary and EOF cases dominate."""
    assert_fsx(fsx_bin, ["-N", max(FSX_OPS, 5000), "-S", seed(), "-l", 20000, "-o", 3000,
                         os.path.join(local_dir, "f")])


def test_fsx_two_paths_hardlink(fsx_bin, local_dir):
    a = os.path.join(local_dir, "a")
    b = os.path.join(local_dir, "sub")
    os.mkdir(b)
    open(a, "w").close()
    os.link(a, os.path.join(b, "a"))
    assert_fsx(fsx_bin, ["-N", FSX_OPS, "-S", seed(), "-2", os.path.join(b, "a"), a])


def test_fsx_two_paths_bind_mount(fsx_bin, local_dir):
    if not IS_ROOT:
        pytest.skip("bind mount needs root")
    src = os.path.join(local_dir, "src")
    os.mkdir(src)
    bind = searchable_tmpdir("weedfs-posix-bind-")
    subprocess.run(["mount", "--bind", src, bind], check=True)
    try:
        assert_fsx(fsx_bin, ["-N", FSX_OPS, "-S", seed(), "-2", os.path.join(bind, "f"),
                             os.path.join(src, "f")])
    finally:
        subprocess.run(["umount", bind], check=False)
        os.rmdir(bind)


def test_fsx_detects_divergence(fsx_bin, local_dir):
    """Two paths that are NOT the same file: fsx must notice at the first reopen, print the
    operation log and exit 1 (the checker itself can fail)."""
    a = os.path.join(local_dir, "a")
    b = os.path.join(local_dir, "b")
    open(b, "w").close()
    r = run_fsx(fsx_bin, ["-N", 2000, "-S", 7, "-2", b, a])
    assert r.returncode == 1, r.stdout + r.stderr
    assert "mismatch" in r.stderr or "size is" in r.stderr, r.stderr
    assert "last " in r.stderr and "reopen via B" in r.stderr, r.stderr
    assert "reproduce with -S 7" in r.stderr


def test_fsx_reproducible(fsx_bin, local_dir):
    """The same seed gives the same operation sequence and final size."""
    outs = []
    for name in ("x", "y"):
        out = assert_fsx(fsx_bin, ["-N", 1500, "-S", 4242, os.path.join(local_dir, name)])
        outs.append(out.splitlines()[-1])
    assert outs[0] == outs[1]
    assert read(os.path.join(local_dir, "x")) == read(os.path.join(local_dir, "y"))


def read(p):
    with open(p, "rb") as f:
        return f.read()


# ------------------------------------------------------------------ weedfs mounts
@pytest.fixture(scope="module")
def two_mounts(module_cluster):
    """Two weedfs-mounts (-o allow_other) of one mini's filer, each also bind-mounted on a
    directory under /tmp that the suite's unprivileged users can reach (pytest's base
    directory is 0700). Yields [(Mount, path)]."""
    _, filer = start_mini_with_filer(module_cluster)
    mounts, binds = [], []
    try:
        for i in (1, 2):
            mounts.append(start_mount(module_cluster, filer.url, ["-o", "allow_other"],
                                      name="posix-m%d" % i))
        for m in mounts:
            b = searchable_tmpdir("weedfs-posix-mnt-")
            binds.append(b)
            subprocess.run(["mount", "--bind", str(m.path), b], check=True)
        yield list(zip(mounts, binds))
    finally:
        for b in binds:
            subprocess.run(["umount", b], check=False)
            if not os.path.ismount(b):
                os.rmdir(b)
        for m in mounts:
            m.unmount()


def _mount_failure(res, mounts, out, err):
    """The tool's output (conftest attaches the mount and mini logs to the report)."""
    return "%s\n%s" % (out[-20000:], err[-5000:])


def _check_alive(mounts):
    for m, _ in mounts:
        assert m.daemon.proc.poll() is None, "weedfs-mount died:\n" + m.daemon.log_tail()


# Checks the mount fails on purpose, each a documented difference from a local file system
# (docs/mount.md, "Differences from a local file system"). The test fails on any other
# failure, and also when one of these starts passing, so the list can only shrink.
KNOWN_MOUNT_GAPS = set()


def _failed_checks(stdout):
    """The names of the FAIL lines, without their '(got ..., want ...)' detail."""
    out = set()
    for line in stdout.splitlines():
        if line.startswith("FAIL "):
            name = line[5:]
            out.add(name.split(" (", 1)[0] if " (" in name else name)
    return out


@needs_mount
@needs_root
def test_conformance_mount(two_mounts):
    _, path = two_mounts[0]
    r, summary = run_conformance(path)
    _check_alive(two_mounts)
    failed = _failed_checks(r.stdout)
    unexpected = failed - KNOWN_MOUNT_GAPS
    fixed = KNOWN_MOUNT_GAPS - failed
    if unexpected or fixed or r.returncode not in (0, 1) or "conformance:" not in summary:
        pytest.fail("%s\nunexpected failures: %s\nknown gaps that now pass (remove them "
                    "from KNOWN_MOUNT_GAPS): %s\n%s" % (
                        summary, sorted(unexpected), sorted(fixed),
                        _mount_failure(r, two_mounts, r.stdout, r.stderr)), pytrace=False)


@needs_mount
@needs_root
def test_fsx_mount(fsx_bin, two_mounts):
    _, path = two_mounts[0]
    r = run_fsx(fsx_bin, ["-N", FSX_OPS, "-S", seed(), os.path.join(path, "fsx-one")])
    _check_alive(two_mounts)
    if r.returncode != 0:
        pytest.fail(_mount_failure(r, two_mounts, r.stdout, r.stderr), pytrace=False)


@needs_mount
@needs_root
def test_fsx_mount_small_ops(fsx_bin, two_mounts):
    _, path = two_mounts[0]
    r = run_fsx(fsx_bin, ["-N", FSX_OPS, "-S", seed(), "-l", 20000, "-o", 3000,
                          os.path.join(path, "fsx-small")])
    _check_alive(two_mounts)
    if r.returncode != 0:
        pytest.fail(_mount_failure(r, two_mounts, r.stdout, r.stderr), pytrace=False)


@needs_mount
@needs_root
def test_fsx_two_mounts(fsx_bin, two_mounts):
    """The same file through two mounts, alternating with close-to-open."""
    p1 = os.path.join(two_mounts[0][1], "fsx-two")
    p2 = os.path.join(two_mounts[1][1], "fsx-two")
    open(p1, "w").close()
    wait_until(lambda: os.path.exists(p2), 10, "file visible through the second mount")
    r = run_fsx(fsx_bin, ["-N", FSX_OPS, "-S", seed(), "-D", REOPEN_DELAY_MS, "-2", p2, p1])
    _check_alive(two_mounts)
    if r.returncode != 0:
        pytest.fail(_mount_failure(r, two_mounts, r.stdout, r.stderr), pytrace=False)
