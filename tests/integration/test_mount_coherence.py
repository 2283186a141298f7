"""Coherence between clients: two weedfs-mounts of one mini, and the filer's HTTP
API. The observing mount runs with 60 s kernel entry/attr timeouts, so only its
event follower (GET /.meta/subscribe) can make a change visible in time: every
change must show within one second."""

import json
import os
import re
import threading
import time

import pytest
import requests

from filer_fixtures import start_mini_with_filer
from mount_fixtures import start_mount

DEADLINE = 1.0


@pytest.fixture(scope="module")
def two_mounts(module_cluster):
    _, filer = start_mini_with_filer(module_cluster)
    a = start_mount(module_cluster, filer.url, name="mounta")
    b = start_mount(module_cluster, filer.url, name="mountb",
                    extra=["-entryTimeout=60", "-attrTimeout=60"])
    yield filer, a, b
    b.unmount()
    a.unmount()


def read_or_none(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def within(pred, what, deadline=DEADLINE):
    """Polls pred until true; returns the seconds it took, fails past the deadline."""
    t0 = time.monotonic()
    while True:
        if pred():
            return time.monotonic() - t0
        if time.monotonic() - t0 > deadline:
            raise AssertionError("%s not visible within %.1f s" % (what, deadline))
        time.sleep(0.01)


def test_write_close_visible_in_other_mount(two_mounts):
    _, a, b = two_mounts
    os.mkdir(a.p("w"))
    within(lambda: os.path.isdir(b.p("w")), "new directory")
    # b caches a negative entry and then the old content
    assert not os.path.exists(b.p("w", "f"))
    with open(a.p("w", "f"), "wb") as f:
        f.write(b"version 1")
    within(lambda: read_or_none(b.p("w", "f")) == b"version 1", "new file")
    assert read_or_none(b.p("w", "f")) == b"version 1"
    with open(a.p("w", "f"), "wb") as f:
        f.write(b"version two, longer")
    within(lambda: read_or_none(b.p("w", "f")) == b"version two, longer", "overwrite")
    assert os.stat(b.p("w", "f")).st_size == len(b"version two, longer")


def test_metadata_changes_visible(two_mounts):
    _, a, b = two_mounts
    os.mkdir(a.p("m"))
    with open(a.p("m", "f"), "wb") as f:
        f.write(b"x")
    within(lambda: os.path.exists(b.p("m", "f")), "file")
    assert os.stat(b.p("m", "f")).st_mode & 0o777 == 0o644
    os.chmod(a.p("m", "f"), 0o600)
    within(lambda: os.stat(b.p("m", "f")).st_mode & 0o777 == 0o600, "chmod")
    os.setxattr(a.p("m", "f"), "user.t", b"1")
    within(lambda: b"user.t" in [x.encode() for x in os.listxattr(b.p("m", "f"))], "xattr")
    os.rename(a.p("m", "f"), a.p("m", "g"))
    within(lambda: not os.path.exists(b.p("m", "f")) and os.path.exists(b.p("m", "g")),
           "rename")
    os.unlink(a.p("m", "g"))
    within(lambda: not os.path.exists(b.p("m", "g")), "unlink")
    within(lambda: os.listdir(b.p("m")) == [], "empty listing")


def test_filer_http_change_visible(two_mounts):
    filer, _, b = two_mounts
    r = filer.put("/http/f.txt", b"from http 1")
    assert r.status_code in (200, 201), r.text
    within(lambda: read_or_none(b.p("http", "f.txt")) == b"from http 1", "HTTP create")
    r = filer.put("/http/f.txt", b"from http, second")
    assert r.status_code in (200, 201), r.text
    within(lambda: read_or_none(b.p("http", "f.txt")) == b"from http, second", "HTTP overwrite")
    assert filer.delete("/http/f.txt").status_code in (200, 202, 204)
    within(lambda: not os.path.exists(b.p("http", "f.txt")), "HTTP delete")


def test_open_file_sees_other_writer_after_reopen(two_mounts):
    _, a, b = two_mounts
    with open(a.p("o"), "wb") as f:
        f.write(b"first")
    within(lambda: read_or_none(b.p("o")) == b"first", "file")
    held = open(b.p("o"), "rb")  # b keeps the file open (its data stays attached)
    assert held.read() == b"first"
    with open(a.p("o"), "wb") as f:
        f.write(b"second!")
    # the open file itself is reset from the filer's entry (events carry no inline bytes)
    within(lambda: os.pread(held.fileno(), 100, 0) == b"second!", "change to an open file")
    # close-to-open: a new open in b sees the new data
    within(lambda: read_or_none(b.p("o")) == b"second!", "rewrite while open elsewhere")
    held.close()


def test_own_changes_are_not_streamed_back(two_mounts):
    """The mount signs its filer requests and follows the event stream with that
    signature, so the filer leaves out the events of its own changes (the mount would
    only parse and drop them) and still sends everyone else's."""
    filer, a, _ = two_mounts
    log = a.daemon.log_path.read_text()
    sig = re.search(r"filer requests signed (-?\d+)", log).group(1)
    d = "/own%d" % time.monotonic_ns()
    os.mkdir(a.p(d[1:]))
    seen = {"signed": [], "all": []}

    def follow(key, params):
        r = requests.get(filer.u("/.meta/subscribe"), stream=True, timeout=30,
                         params=dict(params, pathPrefix=d, heartbeatSeconds="1"))
        for line in r.iter_lines():
            ev = json.loads(line)
            if ev.get("newEntry"):
                seen[key].append(ev["newEntry"]["fullPath"])
                if ev["newEntry"]["fullPath"].endswith("/done"):
                    return

    threads = [threading.Thread(target=follow, args=("signed", {"signature": sig}),
                                daemon=True),
               threading.Thread(target=follow, args=("all", {}), daemon=True)]
    for t in threads:
        t.start()
    time.sleep(0.3)  # both streams subscribed
    with open(a.p(d[1:], "mine"), "wb") as f:
        f.write(b"through the mount")
    os.rename(a.p(d[1:], "mine"), a.p(d[1:], "mine2"))
    assert filer.put(d + "/theirs", b"through the filer").status_code == 201
    assert filer.put(d + "/done", b"").status_code == 201
    for t in threads:
        t.join(10)
    assert seen["signed"] == [d + "/theirs", d + "/done"]
    assert d + "/mine" in seen["all"] and d + "/mine2" in seen["all"]
    assert seen["all"][-2:] == [d + "/theirs", d + "/done"]


def test_names_that_are_not_utf8(two_mounts):
    """Names are bytes, as on a local file system: Latin-1 and stray bytes work through
    the mount (create, list, rename, symlink targets, hard links) and reach the other
    mount through the event stream."""
    filer, a, b = two_mounts
    top = os.fsencode(a.p("bytes%d" % time.monotonic_ns()))
    other = os.fsencode(b.p(os.path.basename(os.fsdecode(top))))
    os.mkdir(top)
    os.mkdir(top + b"/r\xe9pertoire")
    name = top + b"/r\xe9pertoire/caf\xe9-\xff.txt"
    with open(name, "wb") as f:
        f.write(b"latin-1 name")
    os.symlink(b"caf\xe9-\xff.txt", top + b"/r\xe9pertoire/\xfe-link")
    os.link(name, top + b"/r\xe9pertoire/hard-\xfd")
    assert sorted(os.listdir(top + b"/r\xe9pertoire")) == sorted(
        [b"caf\xe9-\xff.txt", b"\xfe-link", b"hard-\xfd"])
    assert os.stat(name).st_nlink == 2
    within(lambda: read_or_none(other + b"/r\xe9pertoire/\xfe-link") == b"latin-1 name",
           "a byte-named file and symlink in the other mount")
    assert os.readlink(other + b"/r\xe9pertoire/\xfe-link") == b"caf\xe9-\xff.txt"
    os.rename(name, top + b"/r\xe9pertoire/\xe0")
    within(lambda: sorted(os.listdir(other + b"/r\xe9pertoire")) == sorted(
        [b"\xe0", b"\xfe-link", b"hard-\xfd"]), "the rename in the other mount")
    # the filer's HTTP API reaches the same bytes through percent-encoding
    url = "/%s/r%%E9pertoire/%%E0" % os.path.basename(os.fsdecode(top))
    assert filer.get(url).content == b"latin-1 name"
    for n in (b"\xe0", b"\xfe-link", b"hard-\xfd"):
        os.unlink(top + b"/r\xe9pertoire/" + n)
    os.rmdir(top + b"/r\xe9pertoire")
    within(lambda: not os.path.exists(other + b"/r\xe9pertoire"), "the removal")
