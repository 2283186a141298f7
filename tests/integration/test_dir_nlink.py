"""A directory's link count is 2 plus its subdirectories, as on ext4, through
mkdir, rmdir and every kind of rename (within a directory, across directories,
onto an empty directory, an exchange), in the filer's JSON API (the entry's
nlink) and in two mounts: the one that made the change and one that learns of it
from the filer's events (60 s kernel caches, so only events can refresh it).
find(1)'s leaf optimisation, which trusts st_nlink, then sees every directory."""

import ctypes
import os
import subprocess
import time

import pytest

from filer_fixtures import start_mini_with_filer
from mount_fixtures import start_mount

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
RENAME_EXCHANGE = 2
DEADLINE = 5.0


@pytest.fixture(scope="module")
def two_mounts(module_cluster):
    _, filer = start_mini_with_filer(module_cluster)
    a = start_mount(module_cluster, filer.url, name="nla")
    b = start_mount(module_cluster, filer.url, name="nlb",
                    extra=["-entryTimeout=60", "-attrTimeout=60"])
    yield filer, a, b
    b.unmount()
    a.unmount()


def exchange(x, y):
    if libc.renameat2(AT_FDCWD, x.encode(), AT_FDCWD, y.encode(), RENAME_EXCHANGE) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def expect_links(filer, a, b, want):
    """want: {relative path: nlink}; the JSON API and mount a agree at once, mount b
    once the events reached it (polled with a deadline)."""
    for rel, n in want.items():
        assert filer.api("lookup", {"path": "/" + rel})["nlink"] == n, rel
        assert os.stat(a.p(rel)).st_nlink == n, rel
    t0 = time.monotonic()
    while True:
        got = {rel: os.stat(b.p(rel)).st_nlink for rel in want}
        if got == want:
            return
        if time.monotonic() - t0 > DEADLINE:
            raise AssertionError("second mount: %s, wanted %s" % (got, want))
        time.sleep(0.02)


def test_nlink_follows_mkdir_rmdir_rename(two_mounts):
    filer, a, b = two_mounts
    os.mkdir(a.p("t"))
    expect_links(filer, a, b, {"t": 2})
    for name in ("x", "y", "z"):
        os.mkdir(a.p("t", name))
    with open(a.p("t", "file"), "w") as f:  # files do not count
        f.write("f")
    os.stat(b.p("t"))  # b caches t now
    expect_links(filer, a, b, {"t": 5, "t/x": 2})
    os.mkdir(a.p("t", "x", "deeper"))
    expect_links(filer, a, b, {"t": 5, "t/x": 3, "t/x/deeper": 2})
    os.rmdir(a.p("t", "z"))
    expect_links(filer, a, b, {"t": 4})
    # within a directory: no change
    os.rename(a.p("t", "y"), a.p("t", "y2"))
    expect_links(filer, a, b, {"t": 4, "t/y2": 2})
    # across directories: one out, one in; the moved directory keeps its own
    os.mkdir(a.p("u"))
    os.rename(a.p("t", "x"), a.p("u", "x"))
    expect_links(filer, a, b, {"t": 3, "u": 3, "u/x": 3})
    # onto an empty directory: the replaced one goes
    os.mkdir(a.p("u", "empty"))
    expect_links(filer, a, b, {"u": 4})
    os.rename(a.p("t", "y2"), a.p("u", "empty"))
    expect_links(filer, a, b, {"t": 2, "u": 4})
    os.mkdir(a.p("t", "e2"))
    os.rename(a.p("u", "empty"), a.p("t", "e2"))  # from u onto t's own directory
    expect_links(filer, a, b, {"t": 3, "u": 3})
    # an exchange of a directory with a file across directories
    with open(a.p("u", "f"), "w") as f:
        f.write("f")
    exchange(a.p("t", "e2"), a.p("u", "f"))
    expect_links(filer, a, b, {"t": 2, "u": 4, "u/f": 2})
    # renames and removals made in the other mount and through the filer's APIs
    os.rename(b.p("u", "f"), b.p("t", "back"))
    expect_links(filer, b, a, {"t": 3, "u": 3})
    filer.api("create", {"entry": {"path": "/t/api", "mode": 0o40755}})
    assert filer.post("/t/rest/").status_code in (200, 201)
    expect_links(filer, a, b, {"t": 5})
    filer.api("delete", {"path": "/u", "recursive": True})
    filer.api("delete", {"path": "/t/api"})
    expect_links(filer, a, b, {"t": 4})


def test_find_leaf_optimisation_sees_every_directory(two_mounts):
    _, a, _ = two_mounts
    top = a.p("tree")
    for d in ("a/b/c", "a/d", "e", "f/g/h/i"):
        os.makedirs(os.path.join(top, d))
        with open(os.path.join(top, d, "file"), "w") as f:
            f.write("x")
    os.rename(os.path.join(top, "f/g"), os.path.join(top, "a/g"))
    os.unlink(os.path.join(top, "e", "file"))
    os.rmdir(os.path.join(top, "e"))

    def find(*opts):
        out = subprocess.run(["find", top] + list(opts) + ["-type", "d"], check=True,
                             capture_output=True, text=True).stdout
        return sorted(out.split())

    assert find() == find("-noleaf")
    assert len(find()) == 9
    assert os.stat(os.path.join(top, "a")).st_nlink == 5  # b, d, g
