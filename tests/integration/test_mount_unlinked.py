"""Files unlinked while open (docs/mount.md, "Unlink while open"): weedfs-mount hides
them in <root>/.weedfs-unlinked as <mount id>-<inode> and deletes them at the last
close. Nothing may stay there: not after close and unlink race (FUSE sends release
after close(2) has returned), not after a clean unmount with files still open, and
not after the mount died (the filer reclaims them, with their chunks, once the
mount's lock session has expired; after a filer restart once its grace period has
passed). Real master, volume server, filer and FUSE mounts."""

import os
import subprocess
import sys
import time

import requests

from conftest import dat_bytes, wait_until
from filer_fixtures import start_filer, start_mini_with_filer
from mount_fixtures import start_mount

HIDDEN = "/.weedfs-unlinked"
LEASE = 2  # the mounts' lock lease in the reclaim tests (-lockLeaseSeconds)
GRACE = 5  # the filer's -lockGraceSeconds in the restart test
MiB = 1 << 20


def hidden(filer):
    r = filer.get(HIDDEN, headers={"Accept": "application/json"})
    if r.status_code == 404:
        return []
    assert r.status_code == 200, r.text
    return [e["FullPath"].rsplit("/", 1)[1] for e in (r.json()["Entries"] or [])]


def wait_hidden_empty(filer, timeout=20, what="the hidden folder to empty"):
    """The last releases reach the mount just after the closes returned: poll."""
    try:
        wait_until(lambda: hidden(filer) == [], timeout, what)
    except AssertionError:
        raise AssertionError("%s; left: %s" % (what, hidden(filer)[:20]))


# The loops run in a child process, as any program would: it exits with the count of
# failed calls. Orders: create-write-close-unlink (the close's release races the
# unlink), open-unlink-write-read-close, and an fd still open on another name.
CYCLES = r"""
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
bad = 0
for i in range(n):
    p = os.path.join(d, "c%d" % (i % 50))
    k = i % 4
    fd = os.open(p, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o644)
    os.write(fd, b"x" * (i % 300 + 1))
    if k == 0:          # open, unlink, then use and close
        os.unlink(p)
        os.write(fd, b"more")
        if os.pread(fd, 4, i % 300 + 1) != b"more":
            bad += 1
        os.close(fd)
    elif k == 1:        # two fds, one closed before the unlink
        fd2 = os.open(p, os.O_RDONLY)
        os.close(fd)
        os.unlink(p)
        if len(os.read(fd2, 1)) != 1:
            bad += 1
        os.close(fd2)
    else:               # close, then unlink at once
        os.close(fd)
        os.unlink(p)
print(bad)
"""


def test_close_unlink_cycles_leave_nothing(cluster):
    _, filer = start_mini_with_filer(cluster)
    m = start_mount(cluster, filer.url)
    os.mkdir(m.p("cyc"))
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", CYCLES, m.p("cyc"), "10000"],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0", out
    print("10,000 close/unlink cycles in %.1f s" % (time.monotonic() - t0))
    wait_hidden_empty(filer)
    assert os.listdir(m.p("cyc")) == []
    assert filer.names("/cyc") == []


SQLITE = r"""
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("PRAGMA journal_mode=DELETE")
db.execute("CREATE TABLE t (i INTEGER PRIMARY KEY, v TEXT)")
for i in range(int(sys.argv[2])):
    db.execute("BEGIN")
    db.execute("INSERT INTO t (v) VALUES (?)", ("row %d" % i * 20,))
    db.execute("UPDATE t SET v = v || '.' WHERE i = ?", (i // 2 + 1,))
    db.execute("COMMIT")
print(db.execute("SELECT count(*) FROM t").fetchone()[0],
      db.execute("PRAGMA integrity_check").fetchone()[0])
"""


def test_sqlite_transactions_leave_nothing(cluster):
    """journal_mode DELETE creates and unlinks the journal in every transaction."""
    _, filer = start_mini_with_filer(cluster)
    m = start_mount(cluster, filer.url)
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", SQLITE, m.p("db.sqlite"), "500"],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["500", "ok"], out
    print("500 sqlite transactions in %.1f s" % (time.monotonic() - t0))
    wait_hidden_empty(filer)
    assert sorted(os.listdir(m.p())) == ["db.sqlite"]


HOLDER = r"""
import os, sys
fds = []
for i in range(int(sys.argv[2])):
    p = os.path.join(sys.argv[1], "h%d" % i)
    fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o644)
    os.write(fd, os.urandom(int(sys.argv[3])))
    os.fsync(fd)
    os.unlink(p)
    fds.append(fd)
print("ready", flush=True)
sys.stdin.read()
"""


def hold_unlinked(m, n, size):
    """A child process holding n files of size bytes open after unlinking them."""
    p = subprocess.Popen([sys.executable, "-c", HOLDER, m.p(), str(n), str(size)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def stop_holder(p):
    if p.poll() is None:
        p.kill()
    p.wait()


def test_clean_unmount_removes_what_it_hid(cluster):
    _, filer = start_mini_with_filer(cluster)
    m = start_mount(cluster, filer.url)
    other = start_mount(cluster, filer.url, name="other")
    keep = hold_unlinked(other, 2, 100)  # another mount's: not this one's to remove
    mine = hold_unlinked(m, 5, 100)
    try:
        assert len(hidden(filer)) == 7
        mount_ids = {n.split("-")[0] for n in hidden(filer)}
        assert len(mount_ids) == 2
        # busy: fusermount -u refuses; the harness then stops it with SIGTERM (a clean
        # stop: the loop ends, open files are committed, the session released)
        assert m.unmount() == 0
        left = hidden(filer)
        assert len(left) == 2 and len({n.split("-")[0] for n in left}) == 1, left
    finally:
        stop_holder(mine)
        stop_holder(keep)
    wait_hidden_empty(filer)  # the other mount's last closes delete its own
    other.unmount()


def separate_cluster(cluster, filer_extra=()):
    master = cluster.master()
    vol = cluster.volume(master)
    filer = start_filer(cluster, master, extra=list(filer_extra))
    return master, vol, filer


def chunk_blobs(filer, name):
    meta = filer.meta(HIDDEN + "/" + name)
    chunks = meta.get("chunks") or []
    assert chunks, meta
    urls = []
    for c in chunks:
        fid = c.get("fileId") or c.get("file_id")
        vid = fid.split(",")[0]
        r = requests.get("http://%s/dir/lookup" % filer.master_url, params={"volumeId": vid},
                         timeout=10)
        loc = r.json()["locations"][0]["url"]
        urls.append("http://%s/%s" % (loc, fid))
    return urls


def test_killed_mount_hidden_files_reclaimed(cluster):
    """kill -9: nothing closes the files; the filer deletes them (and frees their chunks)
    once the mount's session lease has run out, and a vacuum gives the space back."""
    master, vol, filer = separate_cluster(cluster)
    filer.master_url = master.url
    m = start_mount(cluster, filer.url, extra=["-lockLeaseSeconds=%d" % LEASE,
                                               "-chunkSizeMB=1"])
    holder = hold_unlinked(m, 3, 2 * MiB + 7)
    try:
        names = hidden(filer)
        assert len(names) == 3, names
        blobs = [u for n in names for u in chunk_blobs(filer, n)]
        assert all(requests.get(u, timeout=10).status_code == 200 for u in blobs)
        size_before = dat_bytes(vol)
        t0 = time.monotonic()
        m.daemon.kill9()
        wait_hidden_empty(filer, timeout=LEASE + 15, what="the dead mount's files reclaimed")
        took = time.monotonic() - t0
        print("a killed mount's hidden files reclaimed after %.1f s (lease %d s)"
              % (took, LEASE))
        assert took > LEASE - 0.5, "reclaimed before the lease ran out"
        wait_until(lambda: all(requests.get(u, timeout=10).status_code == 404 for u in blobs),
                   30, "the reclaimed files' chunks deleted")
        r = requests.get("http://%s/vol/vacuum" % master.url,
                         params={"garbageThreshold": "0.0001"}, timeout=120)
        assert r.status_code == 200, r.text
        wait_until(lambda: dat_bytes(vol) < size_before - 5 * MiB, 60,
                   "the volume space back after vacuum")
        print("volume files %d -> %d bytes" % (size_before, dat_bytes(vol)))
    finally:
        stop_holder(holder)
        m.unmount()


def test_restarted_filer_reclaims_unknown_sessions(cluster):
    """A mount that died while its filer was down: the restarted filer does not know its
    session, keeps its files through the grace period (a live mount would renew within
    it) and reclaims them after it."""
    master, vol, filer = separate_cluster(cluster, ["-lockGraceSeconds=%d" % GRACE])
    live = start_mount(cluster, filer.url, extra=["-lockLeaseSeconds=%d" % LEASE],
                       name="live")
    dead = start_mount(cluster, filer.url, extra=["-lockLeaseSeconds=%d" % LEASE],
                       name="dead")
    h_live = hold_unlinked(live, 1, 10)
    h_dead = hold_unlinked(dead, 2, 10)
    try:
        assert len(hidden(filer)) == 3
        filer.daemon.stop()
        dead.daemon.kill9()
        t0 = time.monotonic()
        filer.daemon.start()
        assert len(hidden(filer)) == 3  # unknown sessions are not reclaimed at once
        wait_until(lambda: len(hidden(filer)) == 1, GRACE + 15,
                   "the dead mount's files reclaimed after the grace period")
        took = time.monotonic() - t0
        print("reclaimed %.1f s after the restart (grace %d s)" % (took, GRACE))
        assert took > GRACE - 1
        # the live mount renewed with the restarted filer: its file stays until closed
        assert len(hidden(filer)) == 1
        h_live.stdin.close()
        h_live.wait(30)
        wait_hidden_empty(filer)
    finally:
        stop_holder(h_live)
        stop_holder(h_dead)
        live.unmount()
        dead.unmount()


def test_lock_session_hidden_dir_bad_input(cluster):
    _, filer = start_mini_with_filer(cluster)
    for bad in ("relative", "/a/../b", "/a//b", 5):
        r = requests.post(filer.u("/.api/v1/lockSession"),
                          json={"session": 3, "hiddenDir": bad}, timeout=10)
        assert r.status_code == 400 and r.json()["code"] == "EINVAL", (bad, r.text)
    r = requests.post(filer.u("/.api/v1/lockSession"),
                      json={"session": 3, "reclaimed": "yes"}, timeout=10)
    assert r.status_code == 400, r.text
