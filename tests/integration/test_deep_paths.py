"""Trees deeper than one system call's path: Linux bounds the path a call passes
(PATH_MAX, 4,096 bytes), not the depth of a tree, so a tree whose full paths run
to about 8,000 bytes is made, read, listed, renamed and removed through the mount
with relative paths (chdir step by step, dir_fd), as on ext4, and through the
filer's HTTP APIs with its full paths. The 255-byte name and the 4,096-byte
symlink target stay refused."""

import errno
import os
import stat
from urllib.parse import quote

import pytest

from filer_fixtures import start_filer
from mount_fixtures import mounted  # noqa: F401 - the fixture
from test_filer_store_pg import pg  # noqa: F401 - pytest fixture (a private PostgreSQL)

COMPONENT = "d" * 200  # 201 bytes a level with its slash
LEVELS = 40            # about 8,040 bytes below the top


def _relative_chain(levels):
    return "/".join([COMPONENT] * levels)


def _make_deep(top, levels):
    """mkdir step by step with dir_fd; returns the fd of the deepest directory."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(levels):
        os.mkdir(COMPONENT, dir_fd=fd)
        nfd = os.open(COMPONENT, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    return fd


def _remove_deep(top, levels):
    """rmdir from the bottom up, reaching each level by chdir through relative paths."""
    cwd = os.getcwd()
    try:
        os.chdir(top)
        for _ in range(levels):
            os.chdir(COMPONENT)
        for _ in range(levels):
            os.chdir("..")
            os.rmdir(COMPONENT)
    finally:
        os.chdir(cwd)


def test_deep_tree_through_the_mount(mounted):  # noqa: F811
    filer, m = mounted
    top = m.p("deep")
    os.mkdir(top)
    fd = _make_deep(top, LEVELS)
    cwd = os.getcwd()
    try:
        full = "/deep/" + _relative_chain(LEVELS)
        assert len(full) > 8000
        # create, write, stat, read back, list, rename, unlink: all relative to a deep fd
        wfd = os.open("f", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, dir_fd=fd)
        os.write(wfd, b"deep data")
        os.close(wfd)
        st = os.stat("f", dir_fd=fd)
        assert stat.S_ISREG(st.st_mode) and st.st_size == 9
        rfd = os.open("f", os.O_RDONLY, dir_fd=fd)
        assert os.read(rfd, 100) == b"deep data"
        os.close(rfd)
        os.mkdir("sub", dir_fd=fd)
        os.rename("f", "g", src_dir_fd=fd, dst_dir_fd=fd)
        os.rename("g", "sub/h", src_dir_fd=fd, dst_dir_fd=fd)
        os.chdir("/proc/self/fd/%d" % fd)  # the kernel's own reference, not a path
        assert sorted(os.listdir(".")) == ["sub"]
        assert os.listdir("sub") == ["h"]
        with open("sub/h", "rb") as f:
            assert f.read() == b"deep data"
        os.symlink("t" * 4095, "link")
        assert os.readlink("link") == "t" * 4095
        with pytest.raises(OSError) as ei:
            os.mkdir("n" * 256)
        assert ei.value.errno == errno.ENAMETOOLONG
        # the filer holds the same entries at their full paths
        e = filer.api("lookup", {"path": full + "/sub/h"})
        assert e["size"] == 9 and e["fullPath"] == full + "/sub/h"
        r = filer.get(quote(full + "/sub/h"))
        assert r.status_code == 200 and r.content == b"deep data"
        os.unlink("sub/h")
        os.unlink("link")
        os.rmdir("sub")
        assert os.listdir(".") == []
    finally:
        os.chdir(cwd)
        os.close(fd)
    _remove_deep(top, LEVELS)
    assert os.listdir(top) == []
    os.rmdir(top)


def test_deep_tree_through_the_filer_apis(mounted):  # noqa: F811
    filer, m = mounted
    base = "/deephttp/" + _relative_chain(LEVELS)
    # REST: a PUT makes the parents; GET, listing, rename, delete
    r = filer.put(quote(base + "/a.txt"), b"over http")
    assert r.status_code == 201, r.text
    assert filer.get(quote(base + "/a.txt")).content == b"over http"
    assert filer.names(quote(base) + "/") == ["a.txt"]
    r = filer.post(quote(base + "/b.txt"), params={"mv.from": base + "/a.txt"})
    assert r.status_code in (200, 204), r.text
    # the JSON API: create, lookup, list, rename, delete
    filer.api("create", {"entry": {"path": base + "/j", "mode": 0o40755}})
    filer.api("rename", {"from": base + "/b.txt", "to": base + "/j/c.txt"})
    assert filer.api("lookup", {"path": base + "/j/c.txt"})["size"] == 9
    names = [e["fullPath"] for e in filer.api("list", {"dir": base})["entries"]]
    assert names == [base + "/j"]
    # the mount sees it, reached by relative steps
    fd = os.open(m.p("deephttp"), os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(LEVELS):
            nfd = os.open(COMPONENT, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        rfd = os.open("j/c.txt", os.O_RDONLY, dir_fd=fd)
        assert os.read(rfd, 100) == b"over http"
        os.close(rfd)
    finally:
        os.close(fd)
    filer.api("delete", {"path": "/deephttp", "recursive": True})
    assert filer.get("/deephttp", params={"metadata": "true"}).status_code == 404
    # a path over the bound is refused with a clear error, not cut
    too_long = "/" + "/".join(["x" * 255] * 129)
    assert len(too_long) > 32768
    r = filer.post("/.api/v1/lookup", json={"path": too_long})
    assert r.status_code == 400 and "EINVAL" in r.text, r.text


def test_deep_tree_on_postgres(cluster, pg):  # noqa: F811
    """PostgreSQL keys entries by their directory too: an 8 KB directory path must
    not meet the btree's row limit (about 2.7 KB)."""
    dsn = "host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test" % pg.port
    m = cluster.master()
    cluster.volume(m)
    f = start_filer(cluster, m, extra=["-store=postgres", "-postgres.dsn=" + dsn])
    # random names: PostgreSQL compresses a repeated "ddd..." path under its limit
    base = "/deeppg/" + "/".join(os.urandom(100).hex() for _ in range(LEVELS))
    r = f.put(quote(base + "/a.txt"), b"deep on postgres")
    assert r.status_code == 201, r.text
    assert f.get(quote(base + "/a.txt")).content == b"deep on postgres"
    assert f.names(quote(base) + "/") == ["a.txt"]
    f.api("rename", {"from": base + "/a.txt", "to": base + "/b.txt"})
    assert f.api("lookup", {"path": base + "/b.txt"})["size"] == 16
    f.api("delete", {"path": "/deeppg", "recursive": True})
    assert f.get("/deeppg", params={"metadata": "true"}).status_code == 404


def test_postgres_store_made_before_the_md5_key(cluster, pg):  # noqa: F811
    """A database whose filemeta key held the directory itself: the filer's open
    moves it to the md5 key, keeps its entries, and deep paths then work."""
    dsn = "host=127.0.0.1 port=%d user=weedfs dbname=weedfs_test" % pg.port
    psql = [os.path.join(pg.bindir, "psql"), "-h", "127.0.0.1", "-p", str(pg.port),
            "-U", "weedfs", "-d", "weedfs_test", "-tAc"]
    m = cluster.master()
    cluster.volume(m)
    f = start_filer(cluster, m, extra=["-store=postgres", "-postgres.dsn=" + dsn])
    assert f.put("/kept/a.txt", b"from before").status_code == 201
    f.daemon.stop()
    pg.run(psql + ["DROP INDEX filemeta_key; ALTER TABLE filemeta "
                   "ADD PRIMARY KEY (dirhash, name, directory)"])
    f.daemon.start()
    keys = pg.run(psql + ["SELECT indexname FROM pg_indexes WHERE tablename='filemeta' "
                          "ORDER BY 1"]).stdout.split()
    assert keys == ["filemeta_key"], keys
    assert f.get("/kept/a.txt").content == b"from before"
    deep = "/deeppg2/" + "/".join(os.urandom(100).hex() for _ in range(LEVELS))
    r = f.put(quote(deep + "/b.txt"), b"deep")
    assert r.status_code == 201, r.text
    # the key still refuses a second row for one name
    assert f.put(quote(deep + "/b.txt"), b"again").status_code == 201
    assert f.names(quote(deep) + "/") == ["b.txt"]
    assert f.get(quote(deep + "/b.txt")).content == b"again"
