"""weedfs-mount on a cluster that fills up: the data path keeps the cause of a failed
upload, so a full cluster is ENOSPC at fsync() and close() (and at the close of a file
written after it filled), never EIO; the mount keeps working afterwards: files stored
before read back whole, names can be listed and deleted, and small files (inline in their
filer entry, no volume needed) can still be written.

The cluster: a master with 1 MB volumes and one volume server with two slots, so three
256 KiB files fill a volume and six the cluster (a volume refuses a write past its limit
with 507, the master answers assign with 507 once it has no room; the filer passes both
on as ENOSPC). One volume can fill before the master hears of it (heartbeats), while the
other still has room: an upload whose every try was assigned to the full one fails with
ENOSPC then, and the next file may still fit; the test fills until the volume files on
disk say no file fits anywhere."""

import errno
import os

import pytest

from filer_fixtures import start_filer
from mount_fixtures import start_mount

FILE = 256 << 10  # bytes per file: three fit in a 1 MB volume
LIMIT = 1 << 20  # -volumeSizeLimitMB=1
SLOTS = 2  # -max of the one volume server
NEEDLE_SLACK = 4096  # more than a needle's header, footer and padding
MAX_FILES = 64  # 16 MB: far more than the two 1 MB volumes hold


def small_cluster(cluster):
    master = cluster.master(volume_size_limit_mb=LIMIT >> 20)
    vol = cluster.volume(master, max_volumes=SLOTS)
    filer = start_filer(cluster, master)
    # 1 MiB chunks, files above 4 KiB in chunks on the volume servers, a short budget for
    # the filer calls so nothing waits long
    m = start_mount(cluster, filer.url, extra=["-chunkSizeMB=1", "-inlineKB=4",
                                               "-retrySeconds=2", "-timeoutSeconds=10"])
    return vol, m


def room_left(vol):
    """Whether the volume server could still store one more file: a free slot, or a
    volume whose .dat file (what the size limit counts) has room for it."""
    dats = list(vol.dir.glob("*.dat"))
    return len(dats) < SLOTS or any(p.stat().st_size + FILE + NEEDLE_SLACK <= LIMIT
                                    for p in dats)


def errno_of(fn, *args):
    with pytest.raises(OSError) as ei:
        fn(*args)
    return ei.value.errno


def name_of(code):
    return errno.errorcode.get(code, str(code))


def test_full_cluster_is_enospc(cluster):
    vol, m = small_cluster(cluster)
    os.mkdir(m.p("fill"))
    stored = {}
    full = False
    for i in range(MAX_FILES):
        path = m.p("fill", "f%02d" % i)
        data = os.urandom(FILE)
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
        assert os.write(fd, data) == FILE  # buffered: the upload happens at fsync
        try:
            os.fsync(fd)
        except OSError as e:
            assert e.errno == errno.ENOSPC, "fsync on a full volume: %s, not ENOSPC" % (
                name_of(e.errno))
            full = not room_left(vol)
            try:
                os.close(fd)  # uploads again: lands when another volume had room
                assert not full, "close stored a file in a full cluster"
                stored[path] = data
            except OSError as e2:
                # the data is still not stored: close() says so too, with the same cause
                assert e2.errno == errno.ENOSPC, "close after it: %s, not ENOSPC" % (
                    name_of(e2.errno))
            if full:
                break
            continue
        os.close(fd)
        stored[path] = data
    assert full, "%d files of %d KiB fit in two 1 MB volumes" % (MAX_FILES, FILE >> 10)
    assert len(stored) >= 2, "the cluster was full before two files: %d" % len(stored)

    # a file written and closed without fsync: close() fails with ENOSPC
    fd = os.open(m.p("fill", "late"), os.O_CREAT | os.O_WRONLY, 0o644)
    assert os.write(fd, os.urandom(FILE)) == FILE
    code = errno_of(os.close, fd)
    assert code == errno.ENOSPC, "close of a new file on a full cluster: %s" % name_of(code)

    # the mount keeps working: what was stored reads back, names list and go away
    assert m.daemon.alive(), m.daemon.log_tail()
    for path, data in stored.items():
        with open(path, "rb") as f:
            assert f.read() == data, path
    names = set(os.listdir(m.p("fill")))
    assert {os.path.basename(p) for p in stored} <= names, names
    first = sorted(stored)[0]
    os.unlink(first)
    assert os.path.basename(first) not in os.listdir(m.p("fill"))
    code = errno_of(os.stat, first)
    assert code == errno.ENOENT, name_of(code)
    # a small file lives inline in its filer entry: no volume space needed
    with open(m.p("fill", "small"), "wb") as f:
        f.write(b"still writable")
    with open(m.p("fill", "small"), "rb") as f:
        assert f.read() == b"still writable"
    os.rename(m.p("fill", "small"), m.p("fill", "small2"))
    assert m.daemon.alive(), m.daemon.log_tail()
    # the two files whose data never fit are still dirty: the unmount says they were lost
    assert m.unmount() == 1
