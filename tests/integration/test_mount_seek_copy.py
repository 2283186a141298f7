"""lseek SEEK_DATA / SEEK_HOLE, fallocate PUNCH_HOLE / ZERO_RANGE and copy_file_range on
a real weedfs-mount (mount/fuse_data.c fuse_data_lseek, fuse_data_fallocate,
fuse_data_copy_file_range; file_data_seek in mount/file_data_read.c, file_data_punch in
mount/file_data_write.c).

One mini and two mounts of its filer (1 MiB chunks, so chunk edges are easy to place).
Every errno expectation is first checked on a local directory: the mount must answer
what Linux's own file systems answer.
"""

import ctypes
import errno
import hashlib
import os
import shutil
import subprocess
import tempfile

import pytest
import requests

from conftest import wait_until

MiB = 1 << 20
KiB = 1 << 10
FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02
FALLOC_FL_COLLAPSE_RANGE = 0x08
FALLOC_FL_ZERO_RANGE = 0x10

libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
libc.copy_file_range.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                 ctypes.c_size_t, ctypes.c_uint]
libc.copy_file_range.restype = ctypes.c_ssize_t


def fallocate(fd, mode, off, length):
    if libc.fallocate(fd, mode, off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def raw_copy(fi, fo, n, off_in=None, off_out=None, flags=0):
    pi = ctypes.byref(ctypes.c_longlong(off_in)) if off_in is not None else None
    po = ctypes.byref(ctypes.c_longlong(off_out)) if off_out is not None else None
    r = libc.copy_file_range(fi, pi, fo, po, n, flags)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def errno_of(fn, *a):
    try:
        fn(*a)
    except OSError as e:
        return e.errno
    return 0


def seek_map(fd):
    """The data intervals of fd as SEEK_DATA / SEEK_HOLE report them."""
    size = os.fstat(fd).st_size
    out, pos = [], 0
    while pos < size:
        try:
            d = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as e:
            assert e.errno == errno.ENXIO, e
            break
        h = os.lseek(fd, d, os.SEEK_HOLE)
        assert d < h <= size, (d, h, size)
        out.append((d, h))
        pos = h
    return out


def sha(b):
    return hashlib.sha256(b).hexdigest()


def entry(filer, path):
    r = requests.post(filer.u("/.api/v1/lookup"), json={"path": path}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def env(module_cluster):
    """(Filer, [Mount, Mount], volume daemon-less mini)."""
    from filer_fixtures import start_mini_with_filer
    from mount_fixtures import start_mount
    _, filer = start_mini_with_filer(module_cluster)
    mounts = [start_mount(module_cluster, filer.url, ["-chunkSizeMB=1"], name="seek-m%d" % i)
              for i in (1, 2)]
    yield filer, mounts
    for m in mounts:
        m.unmount()


@pytest.fixture
def local_dir():
    d = tempfile.mkdtemp(prefix="weedfs-seek-", dir="/tmp")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _alive(mounts):
    for m in mounts:
        assert m.daemon.proc.poll() is None, m.daemon.log_tail()


# ------------------------------------------------------------------ SEEK_DATA / SEEK_HOLE
def test_seek_data_hole_sparse_file(env):
    filer, (m1, m2) = env
    p = m1.p("sparse")
    want = [(0, 64 * KiB), (3 * MiB, 3 * MiB + 64 * KiB)]
    fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
    os.pwrite(fd, b"a" * (64 * KiB), 0)
    os.pwrite(fd, b"b" * (64 * KiB), 3 * MiB)
    os.ftruncate(fd, 5 * MiB)
    assert seek_map(fd) == want, "dirty data"
    os.fsync(fd)
    assert seek_map(fd) == want, "committed"
    # the edges, as lseek(2) says
    assert os.lseek(fd, 10, os.SEEK_DATA) == 10
    assert os.lseek(fd, 10, os.SEEK_HOLE) == 64 * KiB
    assert os.lseek(fd, 64 * KiB, os.SEEK_DATA) == 3 * MiB
    assert os.lseek(fd, 64 * KiB, os.SEEK_HOLE) == 64 * KiB
    assert os.lseek(fd, 5 * MiB - 1, os.SEEK_HOLE) == 5 * MiB - 1  # in a hole already
    for off in (3 * MiB + 64 * KiB, 5 * MiB - 1):
        assert errno_of(os.lseek, fd, off, os.SEEK_DATA) == errno.ENXIO  # only a hole left
    for whence in (os.SEEK_DATA, os.SEEK_HOLE):
        assert errno_of(os.lseek, fd, 5 * MiB, whence) == errno.ENXIO
        assert errno_of(os.lseek, fd, 6 * MiB, whence) == errno.ENXIO
    # dirty bytes over committed chunks and in a hole
    os.pwrite(fd, b"c" * 100, 64 * KiB)  # touches the first data: merges
    os.pwrite(fd, b"d" * 100, 4 * MiB)
    want2 = [(0, 64 * KiB + 100), (3 * MiB, 3 * MiB + 64 * KiB), (4 * MiB, 4 * MiB + 100)]
    assert seek_map(fd) == want2
    os.close(fd)
    # through the other mount (close-to-open): the committed chunk list
    fd = os.open(m2.p("sparse"), os.O_RDONLY)
    assert seek_map(fd) == want2
    os.close(fd)
    e = entry(filer, "/sparse")
    assert e["size"] == 5 * MiB
    _alive(env[1])


def test_seek_whole_empty_inline_and_filer_files(env):
    filer, (m1, m2) = env
    fd = os.open(m1.p("empty"), os.O_CREAT | os.O_RDWR, 0o644)
    for whence in (os.SEEK_DATA, os.SEEK_HOLE):
        assert errno_of(os.lseek, fd, 0, whence) == errno.ENXIO
    os.ftruncate(fd, 2 * MiB)  # all hole
    assert errno_of(os.lseek, fd, 0, os.SEEK_DATA) == errno.ENXIO
    assert os.lseek(fd, 0, os.SEEK_HOLE) == 0
    os.close(fd)
    # full chunks and a partial one: one interval
    data = os.urandom(2 * MiB + 12345)
    with open(m1.p("full"), "wb") as f:
        f.write(data)
    fd = os.open(m2.p("full"), os.O_RDONLY)
    assert seek_map(fd) == [(0, len(data))]
    assert os.lseek(fd, 100, os.SEEK_HOLE) == len(data)  # the hole at EOF
    os.close(fd)
    # inline content (a small file) is data
    with open(m1.p("small"), "wb") as f:
        f.write(b"x" * 1000)
    fd = os.open(m1.p("small"), os.O_RDONLY)
    assert seek_map(fd) == [(0, 1000)]
    os.close(fd)
    # a file the filer chunked (HTTP PUT) read through the mount
    body = os.urandom(3 * MiB + 7)
    assert filer.put("/put.bin", body).status_code in (200, 201)
    fd = os.open(m1.p("put.bin"), os.O_RDONLY)
    assert seek_map(fd) == [(0, len(body))]
    assert os.pread(fd, len(body), 0) == body
    os.close(fd)


# ------------------------------------------------------------------ punch hole
def test_punch_hole_aligned_frees_chunks(env):
    filer, (m1, m2) = env
    data = bytearray(os.urandom(4 * MiB))
    fd = os.open(m1.p("punch"), os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    chunks0 = entry(filer, "/punch")["chunks"]
    assert sum(c["size"] for c in chunks0) == 4 * MiB
    blocks0 = os.fstat(fd).st_blocks
    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1 * MiB, 2 * MiB)
    data[MiB:3 * MiB] = bytes(2 * MiB)
    st = os.fstat(fd)
    assert st.st_size == 4 * MiB
    assert os.pread(fd, 4 * MiB, 0) == bytes(data)
    assert seek_map(fd) == [(0, MiB), (3 * MiB, 4 * MiB)]
    e = entry(filer, "/punch")
    assert e["size"] == 4 * MiB
    # the chunks inside the hole left the list (the filer frees them)
    assert sum(c["size"] for c in e["chunks"]) == 2 * MiB, e["chunks"]
    gone = {c["fileId"] for c in chunks0} - {c["fileId"] for c in e["chunks"]}
    assert len(gone) == 2, (chunks0, e["chunks"])
    assert st.st_blocks < blocks0 and st.st_blocks * 512 <= 2 * MiB + 4096, \
        (st.st_blocks, blocks0)
    os.close(fd)
    fd = os.open(m2.p("punch"), os.O_RDONLY)
    assert os.pread(fd, 4 * MiB, 0) == bytes(data)
    assert seek_map(fd) == [(0, MiB), (3 * MiB, 4 * MiB)]
    os.close(fd)


def test_punch_hole_unaligned_committed_and_dirty(env):
    filer, (m1, m2) = env
    data = bytearray(os.urandom(4 * MiB))
    fd = os.open(m1.p("punch2"), os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    a, b = MiB + MiB // 2 + 100, 2 * MiB + MiB // 2 + 7
    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, a, b - a)
    data[a:b] = bytes(b - a)
    assert os.pread(fd, 4 * MiB, 0) == bytes(data)
    # [a, 2 MiB): the chunk crossing a was shortened, a hole; [2 MiB, b): zeros written over
    # the chunk crossing b (a chunk cannot start inside its blob), reported as data
    assert seek_map(fd) == [(0, a), (2 * MiB, 4 * MiB)]
    # punching dirty bytes (not committed yet): cut in memory, then committed
    fresh = os.urandom(3 * MiB)
    os.pwrite(fd, fresh, 0)
    data[0:3 * MiB] = fresh
    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 1000, 5000)
    data[1000:6000] = bytes(5000)
    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 3 * MiB + 10, 10 * MiB)  # past EOF
    data[3 * MiB + 10:] = bytes(len(data) - 3 * MiB - 10)
    assert os.fstat(fd).st_size == 4 * MiB
    assert os.pread(fd, 4 * MiB, 0) == bytes(data)
    assert os.lseek(fd, 3 * MiB + 10, os.SEEK_HOLE) == 3 * MiB + 10
    os.close(fd)
    for m in (m1, m2):
        with open(m.p("punch2"), "rb") as f:
            assert f.read() == bytes(data)


def _rss_hwm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def test_punch_one_gib_is_bounded(env):
    """A punch of 1 GiB over a sparse file allocates no 1 GiB of zeros."""
    filer, (m1, m2) = env
    fd = os.open(m1.p("huge"), os.O_CREAT | os.O_RDWR, 0o644)
    os.ftruncate(fd, 1 << 30)
    for off in (0, 512 * MiB, (1 << 30) - MiB):
        os.pwrite(fd, os.urandom(MiB), off)
    os.fsync(fd)
    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, (1 << 30) - 200)
    assert os.fstat(fd).st_size == 1 << 30
    assert os.pread(fd, 200, 0)[:100] != bytes(100)  # data before the hole stays
    assert os.pread(fd, MiB, 512 * MiB) == bytes(MiB)
    assert os.pread(fd, 100, (1 << 30) - 100) != bytes(100)
    m = seek_map(fd)
    assert m[0] == (0, 100), m
    assert m[-1][1] == 1 << 30 and m[-1][0] >= (1 << 30) - MiB, m  # zeros over one chunk
    assert len(m) == 2, m
    os.close(fd)
    # far below 1 GiB of zeros (the mount's budget and cache are bounded anyway; a zeroed
    # 1 GiB range would have had to be uploaded)
    e = entry(filer, "/huge")
    assert sum(c["size"] for c in e["chunks"]) <= 2 * MiB + 200, e["chunks"]
    _alive(env[1])


# ------------------------------------------------------------------ zero range
def test_zero_range(env, local_dir):
    filer, (m1, m2) = env
    for d in (local_dir, str(m1.path)):
        p = os.path.join(d, "zr")
        data = bytearray(os.urandom(100 * KiB))
        fd = os.open(p, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
        os.write(fd, data)
        os.fsync(fd)
        fallocate(fd, FALLOC_FL_ZERO_RANGE, 50 * KiB, 150 * KiB)  # grows to 200 KiB
        data[50 * KiB:] = bytes(50 * KiB)
        data += bytes(100 * KiB)
        assert os.fstat(fd).st_size == 200 * KiB, d
        fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 10, 300 * KiB)
        data[10:] = bytes(len(data) - 10)
        assert os.fstat(fd).st_size == 200 * KiB, d
        assert os.pread(fd, 300 * KiB, 0) == bytes(data), d
        # the errnos of modes nobody here offers
        assert errno_of(fallocate, fd, FALLOC_FL_PUNCH_HOLE, 0, 10) == errno.EOPNOTSUPP, d
        assert errno_of(fallocate, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE |
                        FALLOC_FL_KEEP_SIZE, 0, 10) == errno.EOPNOTSUPP, d
        assert errno_of(fallocate, fd, FALLOC_FL_ZERO_RANGE, -1, 10) == errno.EINVAL, d
        assert errno_of(fallocate, fd, FALLOC_FL_ZERO_RANGE, 0, 0) == errno.EINVAL, d
        os.close(fd)
        fd = os.open(p, os.O_RDONLY)
        assert errno_of(fallocate, fd, FALLOC_FL_ZERO_RANGE, 0, 10) == errno.EBADF, d
        os.close(fd)
    # larger than the chunk: a big file zeroed in the middle, seen by the other mount
    data = bytearray(os.urandom(3 * MiB))
    with open(m1.p("zr2"), "wb") as f:
        f.write(data)
    fd = os.open(m1.p("zr2"), os.O_RDWR)
    fallocate(fd, FALLOC_FL_ZERO_RANGE, MiB // 2, 2 * MiB)
    data[MiB // 2:MiB // 2 + 2 * MiB] = bytes(2 * MiB)
    os.close(fd)
    with open(m2.p("zr2"), "rb") as f:
        assert f.read() == bytes(data)


# ------------------------------------------------------------------ copy_file_range
def test_copy_file_range_between_and_within_files(env):
    filer, (m1, m2) = env
    src = os.urandom(3 * MiB + 999)
    with open(m1.p("cfr-src"), "wb") as f:
        f.write(src)
    fi = os.open(m1.p("cfr-src"), os.O_RDONLY)
    fo = os.open(m1.p("cfr-dst"), os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    assert os.copy_file_range(fi, fo, len(src), 0, 0) == len(src)
    assert os.pread(fo, len(src) + 1, 0) == src
    assert os.copy_file_range(fi, fo, 1000, 100, 5 * MiB) == 1000  # leaves a hole
    assert os.fstat(fo).st_size == 5 * MiB + 1000
    assert os.pread(fo, 1000, 5 * MiB) == src[100:1100]
    assert os.copy_file_range(fi, fo, 10, len(src), 0) == 0  # at the source's EOF
    assert os.copy_file_range(fi, fo, 10 * MiB, len(src) - 5, 0) == 5  # cut at EOF
    os.close(fo)
    with open(m2.p("cfr-dst"), "rb") as f:
        got = f.read()
    assert got[:5] == src[-5:] and got[5:len(src)] == src[5:]
    # within one file, non-overlapping ranges
    fo = os.open(m1.p("cfr-self"), os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    os.write(fo, src)
    assert os.copy_file_range(fo, fo, MiB, 0, 2 * MiB) == MiB
    want = bytearray(src)
    want[2 * MiB:3 * MiB] = src[:MiB]
    assert os.pread(fo, len(src), 0) == bytes(want)
    assert errno_of(os.copy_file_range, fo, fo, MiB, 0, MiB // 2) == errno.EINVAL
    os.close(fo)
    os.close(fi)


def test_copy_file_range_dirty_source_and_two_mounts(env):
    filer, (m1, m2) = env
    fs = os.open(m1.p("dirty-src"), os.O_CREAT | os.O_RDWR, 0o644)
    body = os.urandom(2 * MiB + 4321)
    os.write(fs, body)  # not committed yet: the copy reads the dirty bytes
    fo = os.open(m1.p("dirty-dst"), os.O_CREAT | os.O_RDWR, 0o644)
    n = 0
    while n < len(body):
        k = os.copy_file_range(fs, fo, len(body) - n, n, n)
        assert k > 0
        n += k
    assert os.pread(fo, len(body) + 1, 0) == body
    os.close(fo)
    os.close(fs)
    # between mounts: the kernel copies with reads and writes (EXDEV from the file system)
    fi = os.open(m1.p("dirty-src"), os.O_RDONLY)
    fo = os.open(m2.p("x-dst"), os.O_CREAT | os.O_WRONLY, 0o644)
    n = 0
    while n < len(body):
        k = os.copy_file_range(fi, fo, len(body) - n)
        assert k > 0
        n += k
    os.close(fo)
    os.close(fi)
    with open(m1.p("x-dst"), "rb") as f:
        assert f.read() == body


def test_copy_file_range_big_and_cp(env):
    filer, (m1, m2) = env
    blob = os.urandom(MiB)
    h = hashlib.sha256()
    with open(m1.p("big-src"), "wb") as f:
        for i in range(64):
            piece = blob[i:] + blob[:i]
            h.update(piece)
            f.write(piece)
    fi = os.open(m1.p("big-src"), os.O_RDONLY)
    fo = os.open(m1.p("big-dst"), os.O_CREAT | os.O_WRONLY, 0o644)
    n = 0
    while n < 64 * MiB:
        k = os.copy_file_range(fi, fo, 64 * MiB - n)
        assert k > 0
        n += k
    os.close(fo)
    os.close(fi)
    for m in (m1, m2):
        with open(m.p("big-dst"), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == h.hexdigest()
    for args, name in ((["cp", "--reflink=never"], "cp-never"), (["cp"], "cp-plain")):
        subprocess.run(args + [m1.p("big-src"), m1.p(name)], check=True, timeout=300)
        with open(m2.p(name), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == h.hexdigest(), name
    _alive(env[1])


def _bad_copy_errnos(d):
    """The errno of each bad copy_file_range in directory d."""
    a = os.path.join(d, "a")
    with open(a, "wb") as f:
        f.write(b"0123456789" * 1000)
    b = os.path.join(d, "b")
    open(b, "wb").close()
    sub = os.path.join(d, "sub")
    os.makedirs(sub, exist_ok=True)
    out = {}
    fa, fb = os.open(a, os.O_RDONLY), os.open(b, os.O_RDWR)
    fa_w = os.open(a, os.O_WRONLY)
    fb_r = os.open(b, os.O_RDONLY)
    fb_app = os.open(b, os.O_WRONLY | os.O_APPEND)
    fa_rw = os.open(a, os.O_RDWR)
    fdir = os.open(sub, os.O_RDONLY | os.O_DIRECTORY)
    out["dst read-only"] = errno_of(raw_copy, fa, fb_r, 10, 0, 0)
    out["src write-only"] = errno_of(raw_copy, fa_w, fb, 10, 0, 0)
    out["dst O_APPEND"] = errno_of(raw_copy, fa, fb_app, 10, 0, 0)
    out["flags"] = errno_of(raw_copy, fa, fb, 10, 0, 0, 1)
    out["overlap"] = errno_of(raw_copy, fa_rw, fa_rw, 100, 0, 50)
    out["src dir"] = errno_of(raw_copy, fdir, fb, 10, 0, 0)
    out["dst past the max size"] = errno_of(raw_copy, fa, fb, 100, 0, (1 << 63) - 1)
    out["ok"] = errno_of(raw_copy, fa, fb, 10, 0, 0)
    for x in (fa, fb, fa_w, fb_r, fb_app, fa_rw, fdir):
        os.close(x)
    return out


def test_copy_file_range_bad_input(env, local_dir):
    filer, (m1, m2) = env
    want = {"dst read-only": errno.EBADF, "src write-only": errno.EBADF,
            "dst O_APPEND": errno.EBADF, "flags": errno.EINVAL, "overlap": errno.EINVAL,
            "src dir": errno.EISDIR, "dst past the max size": errno.EFBIG, "ok": 0}
    assert _bad_copy_errnos(local_dir) == want
    d = m1.p("badcopy")
    os.mkdir(d)
    assert _bad_copy_errnos(d) == want
    with open(os.path.join(d, "b"), "rb") as f:
        assert f.read() == b"0123456789"  # only the good copy wrote
    _alive(env[1])
