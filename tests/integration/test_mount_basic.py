"""weedfs-mount basics on a real FUSE mount of a real mini: files, directories,
rename (with RENAME_NOREPLACE / RENAME_EXCHANGE), hard and symbolic links,
device nodes, extended attributes, big files, truncate, append, unlink while
open, setgid directories, and the errno values a local file system returns."""

import ctypes
import errno
import hashlib
import os
import stat
import time

import pytest

from conftest import wait_until
from mount_fixtures import mounted, start_mount  # noqa: F401 - the fixture

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2


def renameat2(a, b, flags):
    rc = libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags)
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def expect_errno(code, fn, *args):
    with pytest.raises(OSError) as ei:
        fn(*args)
    assert ei.value.errno == code, "%s%r: %s, wanted %s" % (
        fn.__name__, args, errno.errorcode.get(ei.value.errno), errno.errorcode[code])


@pytest.fixture
def d(mounted, request):  # noqa: F811
    """A fresh directory on the mount for one test."""
    _, m = mounted
    path = m.p(request.node.name.replace("[", "_").replace("]", ""))
    os.mkdir(path)
    return path


def test_file_write_read_stat(mounted, d):  # noqa: F811
    filer, _ = mounted
    p = os.path.join(d, "f.txt")
    with open(p, "wb") as f:
        f.write(b"hello weedfs\n")
    st = os.stat(p)
    assert stat.S_ISREG(st.st_mode) and st.st_size == 13 and st.st_nlink == 1
    with open(p, "rb") as f:
        assert f.read() == b"hello weedfs\n"
    # the same bytes through the filer's HTTP API
    rel = p[len(str(mounted[1].path)):]
    r = filer.get(rel)
    assert r.status_code == 200 and r.content == b"hello weedfs\n"
    assert sorted(os.listdir(d)) == ["f.txt"]


def test_overwrite_in_place(d):
    p = os.path.join(d, "f")
    with open(p, "wb") as f:
        f.write(b"a" * 10000)
    with open(p, "r+b") as f:
        f.seek(5000)
        f.write(b"XYZ")
    with open(p, "rb") as f:
        data = f.read()
    assert len(data) == 10000 and data[5000:5003] == b"XYZ" and data[4999] == ord("a")


def test_mkdir_rmdir_errnos(d):
    sub = os.path.join(d, "sub")
    os.mkdir(sub, 0o750)
    st = os.stat(sub)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o750 & ~current_umask()
    expect_errno(errno.EEXIST, os.mkdir, sub)
    open(os.path.join(sub, "x"), "w").close()
    expect_errno(errno.ENOTEMPTY, os.rmdir, sub)
    expect_errno(errno.ENOENT, os.rmdir, os.path.join(d, "nope"))
    expect_errno(errno.ENOENT, os.stat, os.path.join(d, "nope", "x"))
    expect_errno(errno.ENOTDIR, os.rmdir, os.path.join(sub, "x"))
    expect_errno(errno.ENOTDIR, os.stat, os.path.join(sub, "x", "y"))
    expect_errno(errno.EISDIR, os.unlink, sub)
    expect_errno(errno.EISDIR, open, sub, "w")
    expect_errno(errno.ENAMETOOLONG, open, os.path.join(d, "n" * 256), "w")
    expect_errno(errno.ENAMETOOLONG, os.mkdir, os.path.join(d, "n" * 256))
    # 255 bytes is fine
    open(os.path.join(d, "n" * 255), "w").close()
    assert os.path.exists(os.path.join(d, "n" * 255))
    fd = os.open(os.path.join(d, "excl"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.close(fd)
    expect_errno(errno.EEXIST, os.open, os.path.join(d, "excl"),
                 os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    os.unlink(os.path.join(sub, "x"))
    os.rmdir(sub)
    assert not os.path.exists(sub)


def current_umask():
    u = os.umask(0)
    os.umask(u)
    return u


def test_rename(d):
    a, b, c = (os.path.join(d, x) for x in ("a", "b", "c"))
    for p, data in ((a, b"A"), (b, b"B")):
        with open(p, "wb") as f:
            f.write(data)
    os.rename(a, c)
    assert not os.path.exists(a) and open(c, "rb").read() == b"A"
    os.rename(c, b)  # replaces b
    assert open(b, "rb").read() == b"A" and sorted(os.listdir(d)) == ["b"]
    # directories, with contents, and renames that must fail
    sd = os.path.join(d, "sd")
    os.mkdir(sd)
    with open(os.path.join(sd, "inner"), "wb") as f:
        f.write(b"in")
    os.rename(sd, os.path.join(d, "sd2"))
    assert open(os.path.join(d, "sd2", "inner"), "rb").read() == b"in"
    expect_errno(errno.EINVAL, os.rename, os.path.join(d, "sd2"), os.path.join(d, "sd2", "x"))
    os.mkdir(os.path.join(d, "full"))
    open(os.path.join(d, "full", "f"), "w").close()
    expect_errno(errno.ENOTEMPTY, os.rename, os.path.join(d, "sd2"), os.path.join(d, "full"))
    expect_errno(errno.EISDIR, os.rename, b, os.path.join(d, "sd2"))
    expect_errno(errno.ENOTDIR, os.rename, os.path.join(d, "sd2"), b)
    expect_errno(errno.ENOENT, os.rename, os.path.join(d, "none"), os.path.join(d, "z"))


def test_rename_noreplace_exchange(d):
    a, b = os.path.join(d, "a"), os.path.join(d, "b")
    with open(a, "wb") as f:
        f.write(b"A")
    with open(b, "wb") as f:
        f.write(b"B")
    expect_errno(errno.EEXIST, renameat2, a, b, RENAME_NOREPLACE)
    renameat2(a, b, RENAME_EXCHANGE)
    assert open(a, "rb").read() == b"B" and open(b, "rb").read() == b"A"
    renameat2(a, os.path.join(d, "c"), RENAME_NOREPLACE)
    assert open(os.path.join(d, "c"), "rb").read() == b"B" and not os.path.exists(a)
    expect_errno(errno.ENOENT, renameat2, a, b, RENAME_EXCHANGE)


def test_hard_links(d):
    a, b = os.path.join(d, "a"), os.path.join(d, "b")
    with open(a, "wb") as f:
        f.write(b"shared")
    os.link(a, b)
    sa, sb = os.stat(a), os.stat(b)
    assert sa.st_ino == sb.st_ino and sa.st_nlink == 2 and sb.st_nlink == 2
    with open(b, "ab") as f:
        f.write(b"+more")
    assert open(a, "rb").read() == b"shared+more"
    os.unlink(a)
    assert os.stat(b).st_nlink == 1 and open(b, "rb").read() == b"shared+more"
    expect_errno(errno.EEXIST, os.link, b, b)
    expect_errno(errno.ENOENT, os.link, a, os.path.join(d, "c"))
    os.mkdir(os.path.join(d, "dir"))
    expect_errno(errno.EPERM, os.link, os.path.join(d, "dir"), os.path.join(d, "dl"))


def test_symlinks(d):
    t = os.path.join(d, "target")
    with open(t, "wb") as f:
        f.write(b"T")
    os.symlink("target", os.path.join(d, "ln"))
    assert os.readlink(os.path.join(d, "ln")) == "target"
    assert open(os.path.join(d, "ln"), "rb").read() == b"T"
    st = os.lstat(os.path.join(d, "ln"))
    assert stat.S_ISLNK(st.st_mode) and st.st_size == len("target")
    os.symlink("nowhere", os.path.join(d, "dangling"))
    expect_errno(errno.ENOENT, os.stat, os.path.join(d, "dangling"))
    expect_errno(errno.EEXIST, os.symlink, "x", os.path.join(d, "ln"))
    expect_errno(errno.EINVAL, os.readlink, t)
    os.symlink("loop2", os.path.join(d, "loop1"))
    os.symlink("loop1", os.path.join(d, "loop2"))
    expect_errno(errno.ELOOP, os.stat, os.path.join(d, "loop1"))


def test_special_files(d):
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo, 0o600)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    dev = os.path.join(d, "dev")
    os.mknod(dev, 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    st = os.stat(dev)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    blk = os.path.join(d, "blk")
    os.mknod(blk, 0o600 | stat.S_IFBLK, os.makedev(8, 1))
    assert stat.S_ISBLK(os.stat(blk).st_mode) and os.stat(blk).st_rdev == os.makedev(8, 1)
    sock = os.path.join(d, "sock")
    os.mknod(sock, 0o600 | stat.S_IFSOCK)
    assert stat.S_ISSOCK(os.stat(sock).st_mode)


def test_xattrs(d):
    p = os.path.join(d, "x")
    open(p, "w").close()
    os.setxattr(p, "user.k", b"v1")
    assert os.getxattr(p, "user.k") == b"v1"
    os.setxattr(p, "user.bin", bytes(range(256)))
    assert os.getxattr(p, "user.bin") == bytes(range(256))
    assert sorted(os.listxattr(p)) == ["user.bin", "user.k"]
    expect_errno(errno.EEXIST, os.setxattr, p, "user.k", b"v2", os.XATTR_CREATE)
    expect_errno(errno.ENODATA, os.setxattr, p, "user.none", b"v", os.XATTR_REPLACE)
    os.setxattr(p, "user.k", b"v2", os.XATTR_REPLACE)
    assert os.getxattr(p, "user.k") == b"v2"
    os.removexattr(p, "user.k")
    expect_errno(errno.ENODATA, os.getxattr, p, "user.k")
    expect_errno(errno.ENODATA, os.removexattr, p, "user.k")
    assert os.listxattr(p) == ["user.bin"]
    expect_errno(errno.EOPNOTSUPP, os.setxattr, p, "bogus.name", b"v")
    # the value is too big for a small buffer: ERANGE from getxattr(2)
    buf = ctypes.create_string_buffer(4)
    rc = libc.getxattr(p.encode(), b"user.bin", buf, ctypes.c_size_t(4))
    assert rc == -1 and ctypes.get_errno() == errno.ERANGE


def test_chmod_chown_utimes(d):
    p = os.path.join(d, "f")
    open(p, "w").close()
    os.chmod(p, 0o4751)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o4751
    os.chown(p, 1234, 5678)
    st = os.stat(p)
    assert st.st_uid == 1234 and st.st_gid == 5678
    os.utime(p, ns=(1_600_000_000_123_456_789, 1_500_000_000_987_654_321))
    assert os.stat(p).st_mtime_ns == 1_500_000_000_987_654_321
    before = os.stat(p).st_ctime_ns
    os.chmod(p, 0o644)
    assert os.stat(p).st_ctime_ns >= before


def test_utimens_omit_now_and_rename_keeps_inode(d):
    p = os.path.join(d, "t")
    open(p, "w").close()
    os.utime(p, ns=(1_000_000_000_123_456_789, 1_500_000_000_987_654_321))
    st = os.stat(p)
    assert (st.st_atime_ns, st.st_mtime_ns) == (1_000_000_000_123_456_789,
                                                1_500_000_000_987_654_321)
    # UTIME_OMIT for mtime: only atime moves, and ctime changes
    UTIME_OMIT = (1 << 30) - 2
    UTIME_NOW = (1 << 30) - 1

    class timespec(ctypes.Structure):
        _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]

    ts = (timespec * 2)(timespec(7, 0), timespec(0, UTIME_OMIT))
    c0 = os.stat(p).st_ctime_ns
    assert libc.utimensat(AT_FDCWD, p.encode(), ts, 0) == 0
    st = os.stat(p)
    assert st.st_atime_ns == 7_000_000_000 and st.st_mtime_ns == 1_500_000_000_987_654_321
    assert st.st_ctime_ns > c0
    ts = (timespec * 2)(timespec(0, UTIME_OMIT), timespec(0, UTIME_NOW))
    assert libc.utimensat(AT_FDCWD, p.encode(), ts, 0) == 0
    st = os.stat(p)
    assert st.st_atime_ns == 7_000_000_000 and st.st_mtime_ns > 1_500_000_000_987_654_321
    # rename keeps the inode number and changes ctime
    ino, c1 = st.st_ino, st.st_ctime_ns
    os.rename(p, os.path.join(d, "u"))
    st = os.stat(os.path.join(d, "u"))
    assert st.st_ino == ino and st.st_ctime_ns > c1
    a, b = os.path.join(d, "u"), os.path.join(d, "v")
    open(b, "w").close()
    ia, ib = os.stat(a).st_ino, os.stat(b).st_ino
    renameat2(a, b, RENAME_EXCHANGE)
    assert (os.stat(a).st_ino, os.stat(b).st_ino) == (ib, ia)


def test_suid_cleared_on_write(d):
    p = os.path.join(d, "s")
    with open(p, "wb") as f:
        f.write(b"x")
    os.chmod(p, 0o6755)
    os.chown(p, 1000, 1000)
    os.chmod(p, 0o6755)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o6755
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    pid = os.fork()
    if pid == 0:  # an unprivileged writer (through root's descriptor): suid/sgid go
        try:
            os.setgid(1000)
            os.setuid(1000)
            os.write(fd, b"y")
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.WEXITSTATUS(status) == 0
    assert stat.S_IMODE(os.stat(p).st_mode) & 0o6000 == 0


def test_setgid_directory(d):
    sg = os.path.join(d, "sg")
    os.mkdir(sg)
    os.chown(sg, 0, 4321)
    os.chmod(sg, 0o2775)
    open(os.path.join(sg, "f"), "w").close()
    os.mkdir(os.path.join(sg, "sub"))
    assert os.stat(os.path.join(sg, "f")).st_gid == 4321
    st = os.stat(os.path.join(sg, "sub"))
    assert st.st_gid == 4321 and st.st_mode & stat.S_ISGID


def test_big_file_md5(mounted, d):  # noqa: F811
    filer, m = mounted
    p = os.path.join(d, "big")
    block = os.urandom(1 << 20)
    h = hashlib.md5()
    with open(p, "wb") as f:
        for i in range(50):
            chunk = bytes([i]) + block[1:]
            f.write(chunk)
            h.update(chunk)
    assert os.stat(p).st_size == 50 << 20
    h2 = hashlib.md5()
    with open(p, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h2.update(b)
    assert h2.hexdigest() == h.hexdigest()
    r = filer.get(p[len(str(m.path)):])
    assert r.status_code == 200 and hashlib.md5(r.content).hexdigest() == h.hexdigest()


def test_truncate(d):
    p = os.path.join(d, "t")
    with open(p, "wb") as f:
        f.write(b"0123456789")
    os.truncate(p, 4)
    assert open(p, "rb").read() == b"0123"
    os.truncate(p, 8)
    assert open(p, "rb").read() == b"0123\0\0\0\0"
    with open(p, "r+b") as f:
        f.truncate(2)
        f.seek(0)
        assert f.read() == b"01"
    with open(p, "wb") as f:  # O_TRUNC
        pass
    assert os.stat(p).st_size == 0


def test_append(d):
    p = os.path.join(d, "log")
    for i in range(5):
        with open(p, "ab") as f:
            f.write(b"line %d\n" % i)
    assert open(p, "rb").read() == b"".join(b"line %d\n" % i for i in range(5))
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, b"end\n")
    os.close(fd)
    assert open(p, "rb").read().endswith(b"line 4\nend\n")


def test_unlink_while_open(mounted, d):  # noqa: F811
    p = os.path.join(d, "gone")
    data = os.urandom(3 << 20)
    with open(p, "wb") as f:
        f.write(data)
    f = open(p, "rb")
    os.unlink(p)
    assert not os.path.exists(p) and os.listdir(d) == []
    assert f.read() == data
    f.close()
    # nothing hidden stays behind, and the directory can go
    _, m = mounted
    assert ".weedfs-unlinked" not in os.listdir(str(m.path))
    os.rmdir(d)
    os.mkdir(d)


def test_unlink_open_hard_link(d):
    a, b = os.path.join(d, "a"), os.path.join(d, "b")
    with open(a, "wb") as f:
        f.write(b"linked")
    os.link(a, b)
    fd = os.open(a, os.O_RDWR)
    os.unlink(a)
    assert os.fstat(fd).st_nlink == 1 and os.stat(b).st_nlink == 1
    os.write(fd, b"LINKED")
    os.close(fd)
    assert open(b, "rb").read() == b"LINKED" and os.listdir(d) == ["b"]
    fd = os.open(b, os.O_RDONLY)
    os.unlink(b)
    assert os.fstat(fd).st_nlink == 0 and os.read(fd, 100) == b"LINKED"
    os.close(fd)
    assert os.listdir(d) == []


def test_unlink_open_second_name(d):
    a, b = os.path.join(d, "a"), os.path.join(d, "b")
    with open(a, "wb") as f:
        f.write(b"data")
    os.link(a, b)
    os.stat(a)
    os.stat(b)
    fd = os.open(b, os.O_RDONLY)
    os.unlink(b)  # the name learned second
    os.close(fd)
    assert os.listdir(d) == ["a"] and open(a, "rb").read() == b"data"
    assert os.stat(a).st_nlink == 1


def test_write_after_unlink_then_close(d):
    p = os.path.join(d, "w")
    fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, b"abc")
    os.unlink(p)
    os.write(fd, b"def")
    os.lseek(fd, 0, os.SEEK_SET)
    assert os.read(fd, 10) == b"abcdef"
    os.close(fd)
    assert os.listdir(d) == []


def test_readdir_many(d):
    names = ["f%05d" % i for i in range(2500)]
    for n in names:
        open(os.path.join(d, n), "w").close()
    assert sorted(os.listdir(d)) == names
    with os.scandir(d) as it:
        entries = {e.name: e.inode() for e in it}
    assert len(entries) == 2500 and len(set(entries.values())) == 2500
    assert entries["f01234"] == os.stat(os.path.join(d, "f01234")).st_ino


def test_fsync_and_statfs(d):
    p = os.path.join(d, "s")
    fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, b"durable")
    os.fsync(fd)
    os.close(fd)
    dfd = os.open(d, os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)
    sv = os.statvfs(d)
    assert sv.f_blocks > 0 and sv.f_bavail > 0 and sv.f_namemax == 255


def test_read_only_subtree_and_background(cluster):
    """-filer.path mounts a subtree; -o ro refuses changes with EROFS; -foreground=false
    detaches (the started process exits once mounted) and still serves."""
    import subprocess

    from mount_fixtures import fusermount_u, is_mounted, mini_and_mount, mount_binary

    _, filer, m = mini_and_mount(cluster)
    os.makedirs(m.p("sub", "deeper"))
    with open(m.p("sub", "f"), "wb") as f:
        f.write(b"in the subtree")
    mnt = cluster._dir("bgmount") / "mnt"
    mnt.mkdir()
    p = subprocess.run([mount_binary(), "-filer=%s" % filer.url, "-filer.path=/sub",
                        "-foreground=false", "-o", "ro", str(mnt)], capture_output=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    try:
        deadline = time.monotonic() + 10
        while not is_mounted(mnt):
            assert time.monotonic() < deadline, "background mount never appeared"
            time.sleep(0.05)
        assert sorted(os.listdir(mnt)) == ["deeper", "f"]
        assert open(mnt / "f", "rb").read() == b"in the subtree"
        expect_errno(errno.EROFS, open, str(mnt / "new"), "w")
        expect_errno(errno.EROFS, os.mkdir, str(mnt / "newdir"))
        expect_errno(errno.EROFS, os.unlink, str(mnt / "f"))
        # the writable mount sees through to the same entries
        with open(m.p("sub", "g"), "wb") as f:
            f.write(b"g")
        deadline = time.monotonic() + 2
        while "g" not in os.listdir(mnt):
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        fusermount_u(mnt)
        deadline = time.monotonic() + 10
        while is_mounted(mnt) and time.monotonic() < deadline:
            time.sleep(0.05)
        if is_mounted(mnt):
            fusermount_u(mnt, lazy=True)
    assert not is_mounted(mnt)


def filer_entry(filer, m, path):
    """The filer's JSON entry of a path on the mount (what every other mount sees)."""
    r = filer.post("/.api/v1/lookup", json={"path": path[len(str(m.path)):]})
    assert r.status_code == 200, r.text
    return r.json()


def test_atime_stored_in_filer(mounted, d):  # noqa: F811
    filer, m = mounted
    p = os.path.join(d, "a")
    with open(p, "wb") as f:
        f.write(b"x")
    os.utime(p, ns=(3_000_000_000, 5_000_000_000))
    e = filer_entry(filer, m, p)
    assert (e["atimeNs"], e["mtimeNs"]) == (3_000_000_000, 5_000_000_000)
    # setting only the atime keeps the mtime, in the mount and in the filer
    ts_cls = ctypes.c_long * 4
    UTIME_OMIT = (1 << 30) - 2
    assert libc.utimensat(AT_FDCWD, p.encode(), ts_cls(9, 0, 0, UTIME_OMIT), 0) == 0
    st = os.stat(p)
    assert (st.st_atime_ns, st.st_mtime_ns) == (9_000_000_000, 5_000_000_000)
    e = filer_entry(filer, m, p)
    assert (e["atimeNs"], e["mtimeNs"]) == (9_000_000_000, 5_000_000_000)
    # and setting only the mtime keeps the atime
    assert libc.utimensat(AT_FDCWD, p.encode(), ts_cls(0, UTIME_OMIT, 11, 0), 0) == 0
    e = filer_entry(filer, m, p)
    assert (e["atimeNs"], e["mtimeNs"]) == (9_000_000_000, 11_000_000_000)
    assert (os.stat(p).st_atime_ns, os.stat(p).st_mtime_ns) == (9_000_000_000, 11_000_000_000)


def test_atime_relatime_on_read(mounted, d):  # noqa: F811
    filer, m = mounted
    p = os.path.join(d, "r")
    with open(p, "wb") as f:
        f.write(b"relatime")
    os.utime(p, ns=(1_000_000_000, 2_000_000_000))  # atime <= mtime: the next read moves it
    c0 = os.stat(p).st_ctime_ns
    t0 = time.time_ns()
    with open(p, "rb") as f:
        assert f.read() == b"relatime"
        st = os.stat(p)  # right after the read, through the same mount
        assert st.st_atime_ns >= t0 - 1_000_000_000 and st.st_mtime_ns == 2_000_000_000
    st = os.stat(p)
    a1 = st.st_atime_ns
    assert a1 >= t0 - 1_000_000_000 and st.st_ctime_ns == c0  # reading changes no ctime
    # stored for other mounts (by the background thread: the close waited for nothing)
    wait_until(lambda: filer_entry(filer, m, p)["atimeNs"] == a1, timeout=5,
               what="the read's atime stored")
    assert filer_entry(filer, m, p)["mtimeNs"] == 2_000_000_000
    # atime now after mtime and ctime, and fresh: another read leaves it
    time.sleep(0.05)
    with open(p, "rb") as f:
        f.read()
    assert os.stat(p).st_atime_ns == a1 and filer_entry(filer, m, p)["atimeNs"] == a1
    # older than a day (though after the mtime): a read moves it again
    day_old = time.time_ns() - 2 * 86400 * 1_000_000_000
    os.utime(p, ns=(day_old, 2_000_000_000))
    with open(p, "rb") as f:
        f.read()
    assert os.stat(p).st_atime_ns > a1
    wait_until(lambda: filer_entry(filer, m, p)["atimeNs"] > a1, timeout=5,
               what="the new atime stored")


def test_noatime_mount(module_cluster, mounted, d):  # noqa: F811
    filer, m = mounted
    p = os.path.join(d, "n")
    with open(p, "wb") as f:
        f.write(b"no atime")
    os.utime(p, ns=(1_000_000_000, 2_000_000_000))
    m2 = start_mount(module_cluster, filer.url, extra=["-o", "noatime"], name="noatime")
    try:
        with open("/proc/self/mountinfo") as f:
            line = [x for x in f if x.split()[4] == os.path.realpath(str(m2.path))][0]
        assert "noatime" in line.split()[5]
        q = m2.p(os.path.relpath(p, str(m.path)))
        with open(q, "rb") as f:
            assert f.read() == b"no atime"
        assert os.stat(q).st_atime_ns == 1_000_000_000
        assert filer_entry(filer, m, p)["atimeNs"] == 1_000_000_000
    finally:
        m2.unmount()


def test_sparse_file_blocks(d):
    p = os.path.join(d, "sparse")
    with open(p, "wb") as f:
        f.seek((1 << 30) - 4096)
        f.write(b"e" * 4096)
    st = os.stat(p)
    assert st.st_size == 1 << 30
    assert 0 < st.st_blocks * 512 <= 1 << 20, st.st_blocks
    # dense: every byte counted once, overwrites (overlapping chunks) too
    q = os.path.join(d, "dense")
    with open(q, "wb") as f:
        f.write(b"d" * (3 << 20))
    with open(q, "r+b") as f:
        f.seek(1 << 20)
        f.write(b"o" * (1 << 20))
    assert os.stat(q).st_blocks * 512 == 3 << 20
    # inline content counts its length
    r = os.path.join(d, "small")
    with open(r, "wb") as f:
        f.write(b"s" * 1000)
    assert os.stat(r).st_blocks == 2
    # truncated up: a hole only
    os.truncate(r, 10 << 20)
    assert os.stat(r).st_blocks == 2


def test_removed_while_open_nlink_zero(d):
    sub = os.path.join(d, "gone")
    os.mkdir(sub)
    fd = os.open(sub, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert os.fstat(fd).st_nlink == 2
        os.rmdir(sub)
        st = os.fstat(fd)
        assert st.st_nlink == 0 and stat.S_ISDIR(st.st_mode)
    finally:
        os.close(fd)
    p = os.path.join(d, "f")
    fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        os.write(fd, b"data")
        os.unlink(p)
        assert os.fstat(fd).st_nlink == 0
    finally:
        os.close(fd)


def test_directories_nlink(mounted, d):  # noqa: F811
    """2 + subdirectories, as on ext4 (test_dir_nlink.py follows renames and events)."""
    _, m = mounted
    for sub in ("a", "b", os.path.join("a", "c")):
        os.mkdir(os.path.join(d, sub))
    for path, n in ((d, 4), (os.path.join(d, "a"), 3), (os.path.join(d, "a", "c"), 2)):
        assert os.stat(path).st_nlink == n, path
        assert os.lstat(path + "/.").st_nlink == n
    # the root: 1 while not stored (uncounted), else counted
    subdirs = sum(1 for e in os.scandir(str(m.path)) if e.is_dir(follow_symlinks=False))
    assert os.stat(str(m.path)).st_nlink in (1, 2 + subdirs)


def test_names_are_bytes(d):
    """Any bytes but '/' and NUL, as on ext4: UTF-8, Latin-1, a lone 0xff."""
    top = os.fsencode(d)
    for name in (b"bad\xff", b"caf\xe9", "ok-\u00e9\u6f22".encode()):
        fd = os.open(top + b"/" + name, os.O_CREAT | os.O_WRONLY, 0o644)
        os.write(fd, name)
        os.close(fd)
    os.mkdir(top + b"/dir\xfe")
    assert sorted(os.listdir(top)) == sorted(
        [b"bad\xff", b"caf\xe9", "ok-\u00e9\u6f22".encode(), b"dir\xfe"])
    with open(top + b"/caf\xe9", "rb") as f:
        assert f.read() == b"caf\xe9"
    expect_errno(errno.ENAMETOOLONG, os.mkdir, top + b"/" + b"\xff" * 256)


def test_statfs_figures(mounted, d):  # noqa: F811
    filer, _ = mounted
    sv = os.statvfs(d)
    r = filer.post("/.api/v1/statfs", json={})
    if r.status_code == 200:
        fs = r.json()
        assert sv.f_blocks == fs["totalBytes"] // sv.f_frsize
        assert abs(sv.f_bfree * sv.f_frsize - fs["freeBytes"]) <= 64 << 20
    else:
        # a filer without the op: the fixed 1 PiB, all free
        assert sv.f_blocks * sv.f_frsize == 1 << 50 and sv.f_bfree == sv.f_blocks
    assert sv.f_namemax == 255


def resident_pages(path):
    """How many of the file's pages the kernel's page cache holds (mmap + mincore)."""
    size = os.path.getsize(path)
    pg = os.sysconf("SC_PAGE_SIZE")
    npages = (size + pg - 1) // pg
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        assert addr not in (None, ctypes.c_void_p(-1).value)
        try:
            vec = (ctypes.c_ubyte * npages)()
            assert libc.mincore(addr, size, vec) == 0
            return sum(v & 1 for v in vec)
        finally:
            libc.munmap(addr, size)
    finally:
        os.close(fd)


def test_page_cache_kept_while_unchanged(mounted, d):  # noqa: F811
    """An open keeps the kernel's pages of a file whose data did not change since
    they were read (keep_cache), and drops them after another client's change."""
    filer, m = mounted
    p = os.path.join(d, "pc")
    data = os.urandom(1 << 20)
    with open(p, "wb") as f:
        f.write(data)
    with open(p, "rb") as f:
        assert f.read() == data
    # the pages survive the next open (mincore opens the file itself)
    assert resident_pages(p) >= 200
    with open(p, "rb") as f:
        assert f.read() == data
    assert resident_pages(p) >= 200
    # another client replaces the data: the next open must not show the old pages
    rel = os.path.relpath(p, m.p())
    new = os.urandom(1 << 20)
    assert filer.put("/" + rel, new).status_code < 300
    deadline = time.monotonic() + 10
    while True:
        with open(p, "rb") as f:
            got = f.read()
        if got == new:
            break
        assert time.monotonic() < deadline, "old data after another client's change"
        time.sleep(0.05)
    with open(p, "rb") as f:
        assert f.read() == new
