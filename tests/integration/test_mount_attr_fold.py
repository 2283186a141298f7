"""weedfs-mount folds a setattr of a file with dirty data into the commit at close
(fuse_attrs.c, fuse_attrs_defer): tar's fchown, fchmod and futimens before close
cost no round trip each. The writing mount shows the attributes at once, other
mounts at close (close-to-open), the filer's event stream carries one update, not
four; an open file without dirty data still gets its update at once."""

import io
import os
import shutil
import subprocess
import tarfile
import time

from test_filer_events import Stream, kind
from test_mount_coherence import within as within_s
from test_mount_locks import two_mounts  # noqa: F401 - the fixture: filer, mounts A and B


def within(pred, what):
    within_s(pred, what, deadline=2.0)


def attrs(path):
    st = os.stat(path)
    return (st.st_mode & 0o7777, st.st_uid, st.st_gid, st.st_mtime_ns, st.st_size)


def file_events(stream, path, wait=0.5):
    """The events of path (the parent directory's own are left out)."""
    return [e for e in stream.quiet(wait) if path in kind(e)[1:]]


MTIME = 1_500_000_000_123_456_789
ATIME = 1_400_000_000_000_000_000


def test_fold_into_close(two_mounts):
    filer, a, b = two_mounts
    os.makedirs(a.p("fold"))
    s = Stream(filer, pathPrefix="/fold/")
    fd = os.open(a.p("fold", "f"), os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644)
    try:
        os.write(fd, b"tar member data")
        os.fchmod(fd, 0o750)
        os.fchown(fd, 1234, 5678)
        os.utime(fd, ns=(ATIME, MTIME))
        st = os.fstat(fd)
        # this mount: at once, before close
        assert st.st_mode & 0o7777 == 0o750
        assert (st.st_uid, st.st_gid) == (1234, 5678)
        assert (st.st_mtime_ns, st.st_atime_ns) == (MTIME, ATIME)
        assert st.st_ctime_ns > MTIME  # the setattr's, not the mtime set
        assert attrs(a.p("fold", "f")) == (0o750, 1234, 5678, MTIME, 15)
        # nothing sent yet: the filer holds the create only
        assert [kind(e) for e in file_events(s, "/fold/f", 0.3)] == [("create", "/fold/f")]
    finally:
        os.close(fd)
    want = (0o750, 1234, 5678, MTIME, 15)
    within(lambda: attrs(b.p("fold", "f")) == want, "the attributes in mount B")
    assert os.stat(b.p("fold", "f")).st_atime_ns == ATIME
    evs = file_events(s, "/fold/f")
    assert [kind(e) for e in evs] == [("update", "/fold/f")]  # one update, not four
    ne = evs[0]["newEntry"]
    assert (ne["mode"] & 0o7777, ne["uid"], ne["gid"], ne["mtimeNs"]) == (0o750, 1234, 5678,
                                                                         MTIME)
    assert ne["contentLength"] == 15
    with open(b.p("fold", "f"), "rb") as f:
        assert f.read() == b"tar member data"
    s.close()


def test_write_after_utimens_wins(two_mounts):
    _, a, b = two_mounts
    os.makedirs(a.p("later"))
    t0 = time.time_ns()
    fd = os.open(a.p("later", "f"), os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.write(fd, b"one")
        os.utime(fd, ns=(MTIME, MTIME))
        assert os.fstat(fd).st_mtime_ns == MTIME
        os.write(fd, b"two")  # as on ext4: the mtime is the write's again
        mt = os.fstat(fd).st_mtime_ns
        assert mt >= t0 - 1_000_000_000
    finally:
        os.close(fd)
    assert os.stat(a.p("later", "f")).st_mtime_ns >= t0 - 1_000_000_000
    within(lambda: os.stat(b.p("later", "f")).st_size == 6, "the data in mount B")
    assert os.stat(b.p("later", "f")).st_mtime_ns >= t0 - 1_000_000_000


def test_chmod_without_dirty_data_is_at_once(two_mounts):
    filer, a, b = two_mounts
    os.makedirs(a.p("clean"))
    with open(a.p("clean", "f"), "wb") as f:
        f.write(b"committed")
    within(lambda: os.path.exists(b.p("clean", "f")), "the file in mount B")
    s = Stream(filer, pathPrefix="/clean/")
    fd = os.open(a.p("clean", "f"), os.O_RDWR)
    try:
        os.fchmod(fd, 0o600)  # no dirty data: no commit is certain, so no deferral
        assert [kind(e) for e in file_events(s, "/clean/f", 0.3)] == [("update", "/clean/f")]
        within(lambda: os.stat(b.p("clean", "f")).st_mode & 0o7777 == 0o600,
               "the mode in mount B while A holds the file open")
        # dirty data then a chmod: kept for the commit, flushed by fsync
        os.write(fd, b"C")
        os.fchmod(fd, 0o604)
        assert os.fstat(fd).st_mode & 0o7777 == 0o604
        assert file_events(s, "/clean/f", 0.3) == []
        os.fsync(fd)
        assert [kind(e) for e in file_events(s, "/clean/f")] == [("update", "/clean/f")]
        within(lambda: os.stat(b.p("clean", "f")).st_mode & 0o7777 == 0o604,
               "the mode after fsync in mount B")
    finally:
        os.close(fd)
    s.close()


def test_rename_keeps_pending_attrs(two_mounts):
    _, a, b = two_mounts
    os.makedirs(a.p("mv"))
    fd = os.open(a.p("mv", "f"), os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.write(fd, b"moved")
        os.fchmod(fd, 0o710)
        os.utime(fd, ns=(MTIME, MTIME))
        os.rename(a.p("mv", "f"), a.p("mv", "g"))
        assert attrs(a.p("mv", "g"))[:4] == (0o710, 0, 0, MTIME)
    finally:
        os.close(fd)
    within(lambda: os.path.exists(b.p("mv", "g")) and
           attrs(b.p("mv", "g")) == (0o710, 0, 0, MTIME, 5), "the renamed file's attributes")


def stat_walk(top):
    out = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            out[os.path.relpath(p, top)] = (st.st_mode, st.st_uid, st.st_gid,
                                            st.st_mtime_ns // 1000,
                                            0 if os.path.isdir(p) else st.st_size)
    return out


def test_tar_extract_equals_local(two_mounts, tmp_path):
    _, a, b = two_mounts
    tar_path = tmp_path / "t.tar"
    # in tree order: GNU tar restores a directory's times once past its members
    members = [("top/", 0o755, 1010, 2010, None), ("top/bin/", 0o750, 1011, 2011, None),
               ("top/bin/tool", 0o755, 1001, 2001, b"#!/bin/sh\necho hi\n"),
               ("top/bin/suid", 0o4755, 0, 0, b"suid binary"),
               ("top/etc/", 0o750, 1012, 2012, None),
               ("top/etc/secret", 0o600, 1002, 2002, b"s" * 5000),
               ("top/etc/shared", 0o2664, 1003, 50, b"x" * 70000),
               ("top/empty", 0o444, 1004, 2004, b"")]
    with tarfile.open(tar_path, "w") as t:
        for i, (name, mode, uid, gid, data) in enumerate(members):
            ti = tarfile.TarInfo(name.rstrip("/"))
            ti.mode, ti.uid, ti.gid = mode, uid, gid
            ti.mtime = 1_200_000_000 + i * 3600
            if data is None:
                ti.type = tarfile.DIRTYPE
                t.addfile(ti)
            else:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
    local = tmp_path / "local"
    local.mkdir()
    dest = a.p("tarx")
    os.mkdir(dest)
    for d in (str(local), dest):
        subprocess.run(["tar", "-xpf", str(tar_path), "--same-owner", "-C", d], check=True)
    r = subprocess.run(["tar", "--compare", "-f", str(tar_path), "-C", dest],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    want = stat_walk(str(local))
    assert len(want) == 8
    assert stat_walk(dest) == want
    within(lambda: stat_walk(b.p("tarx")) == want, "the extracted tree in mount B")
    shutil.rmtree(str(local))
