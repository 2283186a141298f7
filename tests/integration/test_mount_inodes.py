"""Persistent inode numbers through weedfs-mount: st_ino is the filer's inode number
(docs/mount.md, Inodes), so it stays the same when the kernel forgets an inode
(drop_caches), across a remount, a rename and a second mount, hard links agree, and
GNU tar can extract a tree with drop_caches running beside it (it checks that a
directory's st_ino did not change between creating it and setting its times).
Real mini, real FUSE mounts; root is needed for the mounts and for drop_caches."""

import hashlib
import os
import random
import stat
import subprocess
import threading
import time

import pytest

from mount_fixtures import mini_and_mount, start_mount
from test_mount_posix import needs_mount, needs_root

pytestmark = [needs_mount, needs_root]


def drop_caches():
    """Makes the kernel forget every unused dentry and inode (FUSE forgets follow)."""
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2")


def ino(path):
    return os.lstat(path).st_ino


def api_inode(filer, path):
    e = filer.api("lookup", {"path": path})
    assert "inode" in e, "the JSON API shows no inode: %s" % e
    return e["inode"]


@pytest.fixture(scope="module")
def mounted2(module_cluster):
    """A mini, its filer and one mount (the module's)."""
    _, filer, m = mini_and_mount(module_cluster)
    yield module_cluster, filer, m
    m.unmount()


def make(m, top):
    os.makedirs(m.p(top, "dir", "sub"))
    with open(m.p(top, "dir", "file"), "wb") as f:
        f.write(b"data")
    return m.p(top, "dir"), m.p(top, "dir", "file")


def test_stable_across_drop_caches(mounted2):
    _, filer, m = mounted2
    d, f = make(m, "dc")
    before = (ino(d), ino(f))
    assert before == (api_inode(filer, "/dc/dir"), api_inode(filer, "/dc/dir/file"))
    for _ in range(3):
        drop_caches()
        assert (ino(d), ino(f)) == before
    # readdir's d_ino says the same as stat
    names = {e.name: e.inode() for e in os.scandir(m.p("dc", "dir"))}
    assert names == {"file": before[1], "sub": ino(m.p("dc", "dir", "sub"))}
    assert ino(m.p("dc")) == api_inode(filer, "/dc") and ino(m.p()) == 1


def test_stable_across_rename(mounted2):
    _, filer, m = mounted2
    d, f = make(m, "rn")
    before = (ino(d), ino(f))
    os.rename(f, m.p("rn", "dir", "file2"))
    os.rename(d, m.p("rn", "dir2"))  # a directory, with the file inside
    os.makedirs(m.p("rn", "other"))
    os.rename(m.p("rn", "dir2"), m.p("rn", "other", "moved"))
    drop_caches()
    after = (ino(m.p("rn", "other", "moved")), ino(m.p("rn", "other", "moved", "file2")))
    assert after == before
    assert api_inode(filer, "/rn/other/moved/file2") == before[1]


def test_hard_links_agree(mounted2):
    cluster, filer, m = mounted2
    os.makedirs(m.p("hl"))
    a = m.p("hl", "a")
    with open(a, "wb") as f:
        f.write(b"x" * 100)
    first = ino(a)
    os.link(a, m.p("hl", "b"))
    os.makedirs(m.p("hl", "deep"))
    os.link(a, m.p("hl", "deep", "c"))
    drop_caches()
    names = ("/hl/a", "/hl/b", "/hl/deep/c")
    assert {ino(m.p(*n[1:].split("/"))) for n in names} == {first}
    assert {api_inode(filer, n) for n in names} == {first}
    assert os.stat(a).st_nlink == 3
    # the link group keeps its number when the first name goes
    os.unlink(a)
    drop_caches()
    assert ino(m.p("hl", "b")) == first and api_inode(filer, "/hl/deep/c") == first


def test_same_in_a_second_mount_and_after_a_remount(mounted2):
    cluster, filer, m = mounted2
    d, f = make(m, "two")
    os.link(f, m.p("two", "link"))
    want = {p: ino(m.p(*p.split("/"))) for p in ("two", "two/dir", "two/dir/file",
                                                 "two/link", "two/dir/sub")}
    m2 = start_mount(cluster, filer.url, name="second")
    try:
        # the second mount looks the names up in another order: its own counter would differ
        got = {p: ino(m2.p(*p.split("/"))) for p in reversed(list(want))}
        assert got == want
    finally:
        m2.unmount()
    m3 = start_mount(cluster, filer.url, name="again")
    try:
        assert {p: ino(m3.p(*p.split("/"))) for p in want} == want
    finally:
        m3.unmount()


# ---- GNU tar with drop_caches beside it ----

def make_tree(root, seed=20):
    """A tree of about 2,000 entries: directories (some read-only, so tar must defer their
    modes), files of various sizes and modes, symlinks (to files, directories, nowhere),
    hard links; every entry with its own mtime."""
    rnd = random.Random(seed)
    dirs = [root]
    for i in range(150):
        parent = rnd.choice(dirs[: 1 + len(dirs) // 2])
        d = os.path.join(parent, "d%03d" % i)
        os.mkdir(d)
        dirs.append(d)
    files = []
    for i in range(1500):
        p = os.path.join(rnd.choice(dirs), "f%04d%s" % (i, rnd.choice(["", ".txt", ".c"])))
        size = rnd.choice([0, 1, 100, 4096, 5000, 20000, rnd.randrange(60000)])
        with open(p, "wb") as f:
            f.write(rnd.randbytes(size))
        os.chmod(p, rnd.choice([0o644, 0o600, 0o755, 0o640, 0o444, 0o4755 & 0o777]))
        files.append(p)
    for i in range(200):
        p = os.path.join(rnd.choice(dirs), "l%03d" % i)
        target = rnd.choice([os.path.relpath(rnd.choice(files), os.path.dirname(p)),
                             os.path.relpath(rnd.choice(dirs), os.path.dirname(p)),
                             "nowhere/%d" % i])
        os.symlink(target, p)
    for i in range(120):
        os.link(rnd.choice(files), os.path.join(rnd.choice(dirs), "h%03d" % i))
    base = 1_600_000_000
    for dp, dn, fn in os.walk(root, topdown=False):
        for n in fn + dn:
            p = os.path.join(dp, n)
            if os.path.islink(p):
                os.utime(p, (base, base + rnd.randrange(10**7)), follow_symlinks=False)
            elif not os.path.isdir(p):
                t = base + rnd.randrange(10**7)
                os.utime(p, (t, t))
    for i, d in enumerate(reversed(dirs[1:])):
        t = base + rnd.randrange(10**7)
        os.utime(d, (t, t))
        if i % 7 == 0:
            os.chmod(d, 0o555)
        elif i % 5 == 0:
            os.chmod(d, 0o750)


def snapshot(root):
    """Everything tar restores, per relative path, and the hard-link groups."""
    out, groups = {}, {}
    for dp, dn, fn in os.walk(root):
        for n in dn + fn:
            p = os.path.join(dp, n)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            rec = {"type": stat.S_IFMT(st.st_mode), "mode": stat.S_IMODE(st.st_mode),
                   "mtime": st.st_mtime_ns, "uid": st.st_uid, "gid": st.st_gid}
            if stat.S_ISLNK(st.st_mode):
                rec["target"] = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    rec["sha"] = hashlib.sha256(f.read()).hexdigest()
                rec["nlink"] = st.st_nlink
                groups.setdefault(st.st_ino, []).append(rel)
            out[rel] = rec
    links = sorted(sorted(g) for g in groups.values() if len(g) > 1)
    return out, links


def test_tar_extract_with_drop_caches(mounted2, tmp_path):
    _, filer, m = mounted2
    src = tmp_path / "src"
    src.mkdir()
    make_tree(str(src))
    tarball = tmp_path / "tree.tar"
    subprocess.run(["tar", "--numeric-owner", "-cf", str(tarball), "-C", str(src), "."],
                   check=True)
    local = tmp_path / "local"
    local.mkdir()
    subprocess.run(["tar", "--numeric-owner", "-xf", str(tarball), "-C", str(local)],
                   check=True)
    dst = m.p("tar")
    os.mkdir(dst)

    stop = threading.Event()
    drops = [0]

    def dropper():
        while not stop.is_set():
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("2")
            drops[0] += 1
            stop.wait(0.05)

    t = threading.Thread(target=dropper)
    t.start()
    t0 = time.monotonic()
    try:
        r = subprocess.run(["tar", "--numeric-owner", "-xf", str(tarball), "-C", dst],
                           capture_output=True, text=True, timeout=300)
    finally:
        stop.set()
        t.join()
    took = time.monotonic() - t0
    assert r.returncode == 0, "tar exit %d after %.1f s, %d drops:\n%s" % (
        r.returncode, took, drops[0], r.stderr[-3000:])
    assert drops[0] >= 3, "drop_caches ran only %d times" % drops[0]
    want, want_links = snapshot(str(local))
    got, got_links = snapshot(dst)
    assert len(want) > 1900
    diff = [(p, want[p], got.get(p)) for p in want if want[p] != got.get(p)]
    assert not diff and set(got) == set(want), "%d differ, e.g. %s" % (len(diff), diff[:5])
    assert got_links == want_links and len(want_links) > 50
