"""Real workloads on a weedfs-mount of a real mini (real FUSE): unpacking and
building this repository's source tree with autotools, SQLite with four
concurrent writer processes (rollback journal and WAL), and git (commit, gc,
fsck) with a second mount of the same cluster reading the repository."""

import hashlib
import io
import os
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest

from conftest import TEST_TIMEOUT
from filer_fixtures import start_mini_with_filer
from mount_fixtures import start_mount

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wl(module_cluster):
    """(cluster, Filer, Mount): one mini with a filer and one mount for the module."""
    _, filer = start_mini_with_filer(module_cluster)
    m = start_mount(module_cluster, filer.url, name="mounta")
    yield module_cluster, filer, m
    m.unmount()


def extend_timeout(seconds):
    """Raises the per-test alarm (conftest's, 180 s by default) for a long workload."""
    signal.alarm(max(seconds, TEST_TIMEOUT))


def run(cmd, cwd, timeout=300, env=None, ok=True):
    """Runs a command; with ok, a non-zero exit fails the test with its output."""
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
                       shell=isinstance(cmd, str))
    if ok and p.returncode != 0:
        raise AssertionError("%r in %s exited %d after %.1fs\n--- stdout\n%s\n--- stderr\n%s"
                             % (cmd, cwd, p.returncode, time.monotonic() - t0,
                                p.stdout[-6000:], p.stderr[-6000:]))
    return p


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree_listing(root):
    """{relative path: ('f', mode, sha256) | ('l', target) | ('d', mode)} of a tree."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("l", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("d", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("f", stat.S_IMODE(st.st_mode), sha256_file(p))
    return out


def tar_listing(data, prefix):
    """The same listing built from a tar.gz's members under prefix/."""
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t:
        for mem in t.getmembers():
            name = mem.name.rstrip("/")
            if not name.startswith(prefix + "/"):
                continue
            rel = name[len(prefix) + 1:]
            if mem.issym():
                out[rel] = ("l", mem.linkname)
            elif mem.isdir():
                out[rel] = ("d", mem.mode & 0o7777)
            elif mem.isfile():
                out[rel] = ("f", mem.mode & 0o7777, hashlib.sha256(t.extractfile(mem).read())
                            .hexdigest())
    return out


# ---------------------------------------------------------------------------
# 1. Unpack this repository's source tarball on the mount and build it there.

def source_tarball():
    """git archive of HEAD of the repository the tests run from (bytes)."""
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    p = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--show-toplevel"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("%s is not a git work tree: %s" % (REPO, p.stderr.strip()))
    p = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar.gz", "--prefix=src/",
                        "HEAD"], capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_unpack_and_build_source_tree(wl):
    for tool in ("autoreconf", "automake", "make", "cc", "tar", "ar"):
        if shutil.which(tool) is None:
            pytest.skip("%s not installed" % tool)
    extend_timeout(420)
    _, _, m = wl
    work = m.p("build")
    os.mkdir(work)
    data = source_tarball()
    tgz = os.path.join(work, "src.tar.gz")
    with open(tgz, "wb") as f:
        f.write(data)
    assert sha256_file(tgz) == hashlib.sha256(data).hexdigest()

    t0 = time.monotonic()
    run(["tar", "xzf", "src.tar.gz"], cwd=work)
    t_unpack = time.monotonic() - t0
    src = os.path.join(work, "src")

    # tar's own comparison (content, mode, owner, mtime, size of every member; checked
    # at the end, so that a difference does not hide what the build finds) ...
    tar_d = run(["tar", "-d", "-z", "-f", "src.tar.gz"], cwd=work, ok=False)
    # ... and a sha256 listing of the tree (also catches extra files tar -d does not).
    want = tar_listing(data, "src")
    got = tree_listing(src)
    assert len(want) > 100
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    differ = sorted(k for k in want if k in got and want[k] != got[k])
    assert not missing and not extra and not differ, (
        "missing %s\nextra %s\ndiffer %s" % (missing[:20], extra[:20],
                                             [(k, want[k], got[k]) for k in differ[:20]]))

    # A real autotools build on the mount: many small files, .o writes, depcomp's
    # renames of .Tpo to .Po, ar's rewrite of the archive, the linker's reads.
    t0 = time.monotonic()
    run(["./autogen.sh"], cwd=src, timeout=300)
    t_autogen = time.monotonic() - t0
    t0 = time.monotonic()
    run(["./configure", "-q"], cwd=src, timeout=300)
    t_configure = time.monotonic() - t0
    t0 = time.monotonic()
    run(["make", "-j2", "lib/libweedfs.a", "weedfs"], cwd=src, timeout=400)
    t_make = time.monotonic() - t0

    lib = os.path.join(src, "lib", "libweedfs.a")
    with open(lib, "rb") as f:
        assert f.read(8) == b"!<arch>\n"
    members = run(["ar", "t", lib], cwd=src).stdout.split()
    objs = sorted(os.path.basename(o) for o in Path(src, "lib").glob("*.o"))
    assert len(members) >= 10 and sorted(members) == objs, (members, objs)
    # depcomp left its dependency files (written as .Tpo and renamed to .Po)
    deps = list(Path(src, "lib").rglob("*.Po"))
    assert deps and not list(Path(src, "lib").rglob("*.Tpo"))
    # the linked binary runs from the mount
    out = run([os.path.join(src, "weedfs"), "version"], cwd=src).stdout
    assert out.startswith("weedfs "), out
    # Timestamps on the mount are coherent: a second make rebuilds nothing. (Not
    # `make -q`: automake's config.h rule always counts as out of date there.)
    built = sorted(Path(src).rglob("*.o")) + [Path(src, "weedfs"), Path(lib)]
    before = {str(p): p.stat().st_mtime_ns for p in built}
    p = run(["make", "-j2", "lib/libweedfs.a", "weedfs"], cwd=src)
    assert "CC" not in p.stdout and "AR" not in p.stdout, "make rebuilt:\n" + p.stdout
    assert {str(p): p.stat().st_mtime_ns for p in built} == before
    sys.stderr.write("\nbuild on mount: unpack %.1fs autogen %.1fs configure %.1fs make %.1fs\n"
                     % (t_unpack, t_autogen, t_configure, t_make))
    diffs = tar_d.stdout.splitlines()
    assert tar_d.returncode == 0, "tar -d: %d differences after unpacking, first:\n%s\n%s" % (
        len(diffs), "\n".join(diffs[:10]), tar_d.stderr[-2000:])


# ---------------------------------------------------------------------------
# 2. SQLite with four concurrent writer processes on one mount.

WRITER = textwrap.dedent("""
    import sqlite3, sys, time
    db, wid, txns, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    c = sqlite3.connect(db, timeout=120, isolation_level=None)
    c.execute("PRAGMA busy_timeout=120000")
    mode = c.execute("PRAGMA journal_mode").fetchone()[0]
    if mode != sys.argv[5]:
        raise SystemExit("writer %d: journal_mode %s" % (wid, mode))
    for t in range(txns):
        for attempt in range(200):
            try:
                c.execute("BEGIN IMMEDIATE")
                break
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise
                time.sleep(0.05)
        else:
            raise SystemExit("writer %d: database stayed locked" % wid)
        for i in range(per):
            c.execute("INSERT INTO rows(writer, seq, payload) VALUES (?, ?, ?)",
                      (wid, t * per + i, ("w%d-%d-" % (wid, t * per + i)) * 20))
        c.execute("UPDATE counters SET n = n + ? WHERE writer = ?", (per, wid))
        c.execute("COMMIT")
    c.close()
""")

# A reader running next to the writers: every read transaction sees a consistent
# snapshot (the counters match the rows), and the count never goes backwards.
READER = textwrap.dedent("""
    import os, sqlite3, sys, time
    db, done = sys.argv[1], sys.argv[2]
    c = sqlite3.connect(db, timeout=120, isolation_level=None)
    c.execute("PRAGMA busy_timeout=120000")
    last, reads = 0, 0
    while not os.path.exists(done) or reads < 5:
        c.execute("BEGIN")
        rows = c.execute("SELECT count(*) FROM rows").fetchone()[0]
        total = c.execute("SELECT sum(n) FROM counters").fetchone()[0]
        c.execute("COMMIT")
        if rows != total or rows < last:
            raise SystemExit("inconsistent read: %d rows, counters %d, before %d"
                             % (rows, total, last))
        last, reads = rows, reads + 1
        time.sleep(0.002)
    print(reads, last)
""")

WRITERS = 4
TXNS = 100
PER_TXN = 20


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_sqlite_concurrent_writers(wl, tmp_path, journal):
    extend_timeout(300)
    _, filer, m = wl
    d = m.p("sqlite-%s" % journal)
    os.mkdir(d)
    db = os.path.join(d, "test.db")
    import sqlite3
    c = sqlite3.connect(db, isolation_level=None)
    mode = c.execute("PRAGMA journal_mode=%s" % journal).fetchone()[0]
    assert mode == journal, "PRAGMA journal_mode=%s answered %r" % (journal, mode)
    c.execute("CREATE TABLE rows(id INTEGER PRIMARY KEY, writer INT, seq INT, payload TEXT,"
              " UNIQUE(writer, seq))")
    c.execute("CREATE TABLE counters(writer INT PRIMARY KEY, n INT)")
    c.executemany("INSERT INTO counters VALUES (?, 0)", [(w,) for w in range(WRITERS)])
    c.close()

    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    reader = tmp_path / "reader.py"
    reader.write_text(READER)
    done = tmp_path / "writers-done"
    t0 = time.monotonic()
    rp = subprocess.Popen([sys.executable, str(reader), db, str(done)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    procs = [subprocess.Popen([sys.executable, str(script), db, str(w), str(TXNS), str(PER_TXN),
                               journal], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(WRITERS)]
    fails = []
    for w, p in enumerate(procs):
        out, err = p.communicate(timeout=240)
        if p.returncode != 0:
            fails.append("writer %d exited %d: %s%s" % (w, p.returncode, out, err[-3000:]))
    elapsed = time.monotonic() - t0
    done.touch()
    out, err = rp.communicate(timeout=120)
    if rp.returncode != 0:
        fails.append("reader exited %d: %s%s" % (rp.returncode, out, err[-3000:]))
    assert not fails, "\n".join(fails)
    reads = int(out.split()[0])

    total = WRITERS * TXNS * PER_TXN
    c = sqlite3.connect(db, isolation_level=None)
    assert c.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert c.execute("SELECT count(*) FROM rows").fetchone()[0] == total
    assert c.execute("SELECT count(DISTINCT writer * 100000 + seq) FROM rows").fetchone()[0] \
        == total
    for w in range(WRITERS):
        seqs = [r[0] for r in c.execute("SELECT seq FROM rows WHERE writer=? ORDER BY seq", (w,))]
        assert seqs == list(range(TXNS * PER_TXN)), "writer %d rows" % w
    assert sorted(c.execute("SELECT writer, n FROM counters").fetchall()) == \
        [(w, TXNS * PER_TXN) for w in range(WRITERS)]
    if journal == "wal":
        # fold the WAL into the database so the file alone is the whole database
        busy, _, _ = c.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0
    c.close()
    if journal == "delete":
        assert not os.path.exists(db + "-journal")

    # The committed file, read through the filer's HTTP API, is the same database.
    rel = db[len(str(m.path)):]
    r = filer.get(rel)
    assert r.status_code == 200
    with open(db, "rb") as f:
        assert r.content == f.read()
    copy = tmp_path / "copy.db"
    copy.write_bytes(r.content)
    c = sqlite3.connect(str(copy))
    assert c.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert c.execute("SELECT count(*) FROM rows").fetchone()[0] == total
    c.close()
    sys.stderr.write("\nsqlite %s: %d rows by %d writers in %.1fs, %d consistent reads\n"
                     % (journal, total, WRITERS, elapsed, reads))


# ---------------------------------------------------------------------------
# 3. git on the mount, then read by a second mount of the same cluster.

GIT_ENV = dict(os.environ, GIT_AUTHOR_NAME="weedfs test", GIT_AUTHOR_EMAIL="t@weedfs.invalid",
               GIT_COMMITTER_NAME="weedfs test", GIT_COMMITTER_EMAIL="t@weedfs.invalid",
               GIT_CONFIG_NOSYSTEM="1", HOME="/nonexistent-weedfs-home",
               GIT_CONFIG_GLOBAL="/dev/null")


def git(repo, *args, ok=True, timeout=180):
    return run(["git", "-c", "safe.directory=*", "-c", "gc.auto=0"] + list(args), cwd=repo,
               env=GIT_ENV, ok=ok, timeout=timeout)


def test_git_repository_and_second_mount(wl):
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    extend_timeout(300)
    cluster, filer, a = wl
    # The second mount exists throughout: it must see A's work through the event
    # stream / close-to-open, not just because it never cached anything.
    b = start_mount(cluster, filer.url, name="mountb")
    try:
        repo = a.p("gitrepo")
        os.mkdir(repo)
        assert os.listdir(b.p("gitrepo")) == []

        git(repo, "init", "-q", "-b", "main")
        files = {}
        for i in range(300):
            rel = "d%02d/sub%d/file%03d.txt" % (i % 15, i % 3, i)
            files[rel] = ("file %d\n" % i + "line of text %d\n" % i * (i % 50 + 1)).encode()
        files["bin/blob.bin"] = os.urandom(3 << 20)
        for rel, data in files.items():
            p = os.path.join(repo, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(data)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "first")
        # modify, delete, rename, add
        for i in range(0, 300, 7):
            rel = "d%02d/sub%d/file%03d.txt" % (i % 15, i % 3, i)
            files[rel] += b"changed\n"
            with open(os.path.join(repo, rel), "ab") as f:
                f.write(b"changed\n")
        for i in range(1, 300, 11):
            rel = "d%02d/sub%d/file%03d.txt" % (i % 15, i % 3, i)
            os.unlink(os.path.join(repo, rel))
            del files[rel]
        git(repo, "mv", "d00/sub0/file000.txt", "renamed.txt")
        files["renamed.txt"] = files.pop("d00/sub0/file000.txt")
        os.mkdir(os.path.join(repo, "new"))
        with open(os.path.join(repo, "new", "x.txt"), "wb") as f:
            f.write(b"new file\n")
        files["new/x.txt"] = b"new file\n"
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "second")

        def check(where, r):
            log = git(r, "log", "--format=%s").stdout.split()
            assert log == ["second", "first"], "%s: %s" % (where, log)
            fsck = git(r, "fsck", "--full", "--strict", "--no-dangling")
            assert "error" not in (fsck.stdout + fsck.stderr).lower(), fsck.stderr
            st = git(r, "status", "--porcelain", "--untracked-files=all").stdout
            assert st == "", "%s: status not clean:\n%s" % (where, st)
            listed = git(r, "ls-files").stdout.split("\n")[:-1]
            assert sorted(listed) == sorted(files), where
            return git(r, "rev-parse", "HEAD").stdout.strip()

        head = check("A", repo)
        diffstat = git(repo, "diff", "--shortstat", "HEAD~1", "HEAD").stdout
        assert "changed" in diffstat

        git(repo, "gc", "-q", "--prune=now", "--aggressive")
        assert list(Path(repo, ".git", "objects", "pack").glob("*.pack"))
        loose = [p for p in Path(repo, ".git", "objects").glob("[0-9a-f][0-9a-f]/*")]
        assert loose == [], loose[:5]
        assert check("A after gc", repo) == head

        # The second mount, after A's commands finished (close-to-open).
        rb = b.p("gitrepo")
        assert check("B", rb) == head
        for rel, data in files.items():
            with open(os.path.join(rb, rel), "rb") as f:
                assert f.read() == data, rel
        # a fresh clone through B reads every object from the pack A wrote
        git(b.p(), "clone", "-q", rb, b.p("clone"))
        assert git(b.p("clone"), "rev-parse", "HEAD").stdout.strip() == head
        git(b.p("clone"), "fsck", "--full", "--strict")
    finally:
        b.unmount()
