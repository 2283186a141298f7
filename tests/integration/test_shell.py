"""weedfs shell: each command's output against the cluster's real state, bad arguments,
the admin lock between two shells (and its expiry after kill -9), -n dry runs, script
and -c modes, and the interactive mode through a pty."""

import json
import os
import pty
import re
import select
import signal
import subprocess
import time

import pytest
import requests

from conftest import SANITIZER_PATTERNS, WEEDFS, assign, parse_fid, upload, wait_until
from filer_fixtures import start_filer


def shell(m, f, cmds=None, stdin=None, expect=None, env=None):
    """Runs `weedfs shell` with -c cmds (or a script on stdin); returns (rc, out, err)."""
    args = [WEEDFS, "shell", "-master=%s" % m.url, "-filer=%s" % f.url]
    if cmds is not None:
        args += ["-c", cmds]
    p = subprocess.run(args, input=(stdin or "").encode(), capture_output=True, timeout=120,
                       env=env)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert not SANITIZER_PATTERNS.search(err), err
    if expect is not None:
        assert p.returncode == expect, "rc %d\n%s\n%s" % (p.returncode, out, err)
    return p.returncode, out, err


def vol_status(m):
    return requests.get("http://%s/vol/status" % m.url, timeout=10).json()


def replicas(m):
    """{(node, vid): volume record} from the master."""
    out = {}
    for racks in vol_status(m)["Volumes"]["DataCenters"].values():
        for nodes in racks.values():
            for node, vols in nodes.items():
                for v in vols or []:
                    out[(node, v["Id"])] = v
    return out


def server_volumes(url):
    """{vid: record} straight from a volume server's /status."""
    return {v["Id"]: v for v in requests.get("http://%s/status" % url, timeout=10).json()["Volumes"]}


def write(m, n, size, **params):
    fids = []
    for i in range(n):
        a = assign(m, **params)
        r = upload(a["url"], a["fid"], os.urandom(size + i))
        assert r.status_code in (200, 201), r.text
        fids.append((a["fid"], a["url"]))
    return fids


@pytest.fixture(scope="module")
def env(module_cluster):
    c = module_cluster
    m = c.master()
    vols = [c.volume(m, dc="dc1", rack=r, max_volumes=100) for r in ("r1", "r1", "r2")]
    f = start_filer(c, m)
    return c, m, vols, f


class Holder:
    """A shell on a pipe that took the lock and keeps running (until killed)."""

    def __init__(self, m, f, must=True):
        self.p = subprocess.Popen([WEEDFS, "shell", "-master=%s" % m.url, "-filer=%s" % f.url],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        self.line = self.say("lock")
        self.locked = self.line.startswith("locked:")
        assert self.locked or not must, self.line

    def say(self, cmd):
        """Sends one command; returns the first line it answers."""
        self.p.stdin.write(cmd.encode() + b"\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().decode()

    def close(self):
        """Ends the shell (EOF: it releases a held lock) and closes the pipes now, not at
        garbage collection, which could close a number reused by a later descriptor."""
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(30)
        rest = self.p.stdout.read().decode(errors="replace")
        self.p.stdin.close()
        self.p.stdout.close()
        assert not SANITIZER_PATTERNS.search(rest), rest


def lease(m):
    return requests.get("http://%s/admin/lease?name=admin" % m.url, timeout=10).json()


# ---- read-only commands ----------------------------------------------------------

def _listed(out):
    listed = {}
    node = None
    for line in out.splitlines():
        g = re.match(r"\s+DataNode (\S+) hdd", line)
        if g:
            node = g.group(1)
        g = re.match(r"\s+volume id:(\d+) size:(\d+) collection:\"([^\"]*)\" file_count:(\d+)"
                     r" delete_count:(\d+) deleted_byte_count:(\d+) replica_placement:(\d+)"
                     r" version:\d+ read_only:(true|false)", line)
        if g:
            listed[(node, int(g.group(1)))] = g.groups()[1:]
    return listed


def test_volume_list_matches_servers(env):
    _, m, vols, f = env
    write(m, 12, 3000, collection="vl", replication="001")
    truth = {}
    for v in vols:
        for vid, r in server_volumes(v.url).items():
            truth[(v.url, vid)] = (str(r["Size"]), r["Collection"], str(r["FileCount"]),
                                   str(r["DeleteCount"]), str(r["DeletedByteCount"]),
                                   str(int(r["ReplicaPlacement"])),
                                   "true" if r["ReadOnly"] else "false")
    # Every replica every server holds is listed under it with its exact numbers, once
    # the master has had the servers' heartbeats since the writes.
    out = wait_until(lambda: (lambda o: _listed(o) == truth and o)(
        shell(m, f, "volume.list", expect=0)[1]), 15, "volume.list to show the writes")
    assert out.startswith("Topology volumeSizeLimit:64 MB hdd(volume:")
    assert any(k for k, t in truth.items() if t[1] == "vl" and int(t[2]) > 0)
    assert "Rack r1 hdd" in out and "Rack r2 hdd" in out and "DataCenter dc1 hdd" in out
    total = sum(int(t[0]) for t in truth.values())
    assert ("total size:%d file_count:%d" % (total, sum(int(t[2]) for t in truth.values()))
            in out.splitlines()[-1])
    # The filter keeps the tree and drops other volumes.
    vid = next(k[1] for k, t in truth.items() if t[1] == "vl")
    _, out2, _ = shell(m, f, "volume.list -volumeId=%d" % vid, expect=0)
    ids = set(int(x) for x in re.findall(r"volume id:(\d+)", out2))
    assert ids == {vid}


def test_cluster_ps_lists_every_daemon(env):
    _, m, vols, f = env
    _, out, _ = shell(m, f, "cluster.ps", expect=0)
    assert "* master %s (weedfs " % m.url in out
    assert "* filer %s" % f.url in out
    for v in vols:
        assert re.search(r"\* volume server %s \(\d+\.\d+" % re.escape(v.url), out), out
    assert "DataCenter dc1 Rack r2" in out


def test_collection_list_and_delete(env):
    _, m, vols, f = env
    write(m, 5, 2000, collection="gone")
    def listed():
        info = requests.get("http://%s/collection/info?collection=gone" % m.url).json()
        _, out, _ = shell(m, f, "collection.list", expect=0)
        line = next(l for l in out.splitlines() if l.startswith('collection:"gone"'))
        want = "volumeCount:%d\tsize:%d\tfileCount:5\t" % (info["VolumeCount"],
                                                           info["TotalSize"])
        return want in line and out
    out = wait_until(listed, 15, "collection.list to count the 5 files")
    assert re.search(r"Total \d+ collections\.", out)
    # Without the lock it refuses; -n needs none and changes nothing.
    rc, _, err = shell(m, f, "collection.delete -collection=gone", expect=1)
    assert 'run "lock" first' in err
    _, out, _ = shell(m, f, "collection.delete -collection=gone -n", expect=0)
    assert 'would delete collection "gone"' in out
    assert any(v["Collection"] == "gone" for v in replicas(m).values())
    _, out, _ = shell(m, f, "lock; collection.delete -collection=gone; unlock", expect=0)
    assert 'collection "gone" is deleted.' in out
    assert not any(v["Collection"] == "gone" for v in replicas(m).values())
    for v in vols:
        assert not any(r["Collection"] == "gone" for r in server_volumes(v.url).values())
    _, out, _ = shell(m, f, "collection.list", expect=0)
    assert 'collection:"gone"' not in out
    rc, _, err = shell(m, f, "lock; collection.delete -collection=gone", expect=1)
    assert 'collection "gone" does not exist' in err


def test_fs_commands(env):
    _, m, _, f = env
    sizes = {"/t/a.txt": 1000, "/t/sub/b.bin": 300000, "/t/sub/deep/c": 7}
    for p, n in sizes.items():
        r = f.put(p, os.urandom(n))
        assert r.status_code in (200, 201), r.text
    _, out, _ = shell(m, f, "fs.ls /t", expect=0)
    assert out.split() == ["a.txt", "sub/"]
    _, out, _ = shell(m, f, "fs.ls -l /t", expect=0)
    line = next(l for l in out.splitlines() if l.endswith(" a.txt"))
    assert line.startswith("-rw") and " 1000 " in line
    assert next(l for l in out.splitlines() if l.endswith(" sub/")).startswith("d")
    _, out, _ = shell(m, f, "fs.du /t", expect=0)
    g = re.match(r"block:\s*(\d+)\tbyte:\s*(\d+)\tfiles:(\d+)\tdirs:(\d+)\t/t$", out.strip())
    assert g, out
    assert int(g.group(2)) == sum(sizes.values())
    assert (int(g.group(3)), int(g.group(4))) == (3, 2)
    _, out, _ = shell(m, f, "fs.tree /t", expect=0)
    assert out.splitlines()[:6] == ["/t", "├── a.txt", "└── sub", "    ├── b.bin",
                                    "    └── deep", "        └── c"]
    assert "2 directories, 3 files" in out
    _, out, _ = shell(m, f, "fs.meta.cat /t/sub/b.bin", expect=0)
    meta = json.loads(out)
    assert meta["fullPath"] == "/t/sub/b.bin" and meta["size"] == 300000
    assert meta["chunks"] and meta["chunks"][0]["fileId"]
    _, out, _ = shell(m, f, "fs.cd /t/sub; fs.pwd; fs.ls; fs.cd ..; fs.pwd; fs.du sub/./deep",
                      expect=0)
    lines = out.splitlines()
    assert lines[0] == "/t/sub" and lines[1:3] == ["b.bin", "deep/"] and lines[3] == "/t"
    assert re.match(r"block:\s*0\tbyte:\s*7\tfiles:1\tdirs:0\t/t/sub/deep$", lines[4]), lines
    rc, _, err = shell(m, f, "fs.cd /t/a.txt", expect=1)
    assert "not a directory" in err
    rc, _, err = shell(m, f, "fs.ls /nope", expect=1)
    assert "/nope" in err and "(404)" in err


# ---- changing commands -----------------------------------------------------------

def test_volume_mark_readonly_and_writable(env):
    _, m, vols, f = env
    write(m, 2, 100, collection="mark")
    pending = assign(m, collection="mark")       # uploaded only after the mark
    vid = parse_fid(pending["fid"])[0]
    holders = [k[0] for k in replicas(m) if k[1] == vid]
    # -n changes nothing.
    _, out, _ = shell(m, f, "volume.mark -volumeId=%d -readonly -n" % vid, expect=0)
    assert out.count("would mark volume %d" % vid) == len(holders)
    assert all(not server_volumes(h)[vid]["ReadOnly"] for h in holders)
    _, out, _ = shell(m, f, "lock; volume.mark -volumeId=%d -readonly" % vid, expect=0)
    assert out.count("marked read-only") == len(holders)
    assert all(server_volumes(h)[vid]["ReadOnly"] for h in holders)
    r = upload(pending["url"], pending["fid"], b"after mark")
    assert r.status_code >= 400, r.text
    wait_until(lambda: all(v["ReadOnly"] for k, v in replicas(m).items() if k[1] == vid),
               15, "the master to see the volume read-only")
    for _ in range(30):
        assert parse_fid(assign(m, collection="mark")["fid"])[0] != vid
    _, out, _ = shell(m, f, "volume.list -volumeId=%d" % vid, expect=0)
    assert "read_only:true" in out
    _, out, _ = shell(m, f, "lock; volume.mark -volumeId=%d -writable" % vid, expect=0)
    assert all(not server_volumes(h)[vid]["ReadOnly"] for h in holders)
    r = upload(pending["url"], pending["fid"], b"writable again")
    assert r.status_code in (200, 201), r.text


def test_volume_delete_one_replica(env):
    _, m, vols, f = env
    fid, _ = write(m, 1, 500, collection="del", replication="001")[0]
    vid = parse_fid(fid)[0]
    holders = sorted(k[0] for k in replicas(m) if k[1] == vid)
    assert len(holders) == 2
    _, out, _ = shell(m, f, "volume.delete -volumeId=%d -node=%s -n" % (vid, holders[0]),
                      expect=0)
    assert "would delete volume %d on %s" % (vid, holders[0]) in out
    assert vid in server_volumes(holders[0])
    _, out, _ = shell(m, f, "lock; volume.delete -volumeId=%d -node=%s" % (vid, holders[0]),
                      expect=0)
    assert vid not in server_volumes(holders[0]) and vid in server_volumes(holders[1])
    wait_until(lambda: (holders[0], vid) not in replicas(m), 15, "the master to drop it")


def test_volume_vacuum(env):
    _, m, vols, f = env
    fids = write(m, 30, 5000, collection="vac")
    by_vol = {}
    for fid, url in fids:
        by_vol.setdefault(parse_fid(fid)[0], []).append((fid, url))
    # the two volumes with the most files (30 files over at most 7 volumes: >= 2 each)
    (va, fa), (vb, fb) = sorted(by_vol.items(), key=lambda kv: -len(kv[1]))[:2]
    assert len(fa) >= 2 and len(fb) >= 2
    for fid, url in fa[1:] + fb[1:]:
        r = requests.delete("http://%s/%s" % (url, fid), timeout=10)
        assert r.status_code in (200, 202, 204), r.text
    size = lambda vid, url: server_volumes(url)[vid]["Size"]  # noqa: E731
    a0, b0 = size(va, fa[0][1]), size(vb, fb[0][1])
    _, out, _ = shell(m, f, "volume.vacuum -garbageThreshold=0.01 -n", expect=0)
    assert "would vacuum volume %d" % va in out and "would vacuum volume %d" % vb in out
    assert (size(va, fa[0][1]), size(vb, fb[0][1])) == (a0, b0)
    # One volume by id: the shell compacts it on its replicas itself.
    _, out, _ = shell(m, f, "lock; volume.vacuum -garbageThreshold=0.01 -volumeId=%d" % va,
                      expect=0)
    assert "volume %d: vacuumed" % va in out
    assert size(va, fa[0][1]) < a0 and size(vb, fb[0][1]) == b0
    # All of them: the master's /vol/vacuum does the work.
    _, out, _ = shell(m, f, "lock; volume.vacuum -garbageThreshold=0.01", expect=0)
    assert "volume %d: garbage" % vb in out and re.search(r"vacuumed \d+ volume\(s\)", out)
    assert size(vb, fb[0][1]) < b0
    for fid, url in (fa[0], fb[0]):
        assert requests.get("http://%s/%s" % (url, fid), timeout=10).status_code == 200
    _, out, _ = shell(m, f, "lock; volume.vacuum -garbageThreshold=0.99", expect=0)
    assert "no volume has more than 99.0% garbage" in out


def test_bad_arguments_change_nothing(env):
    _, m, vols, f = env
    write(m, 1, 100, collection="bad")
    before = {k: v["ReadOnly"] for k, v in replicas(m).items()}
    vid = next(k[1] for k in before)
    cases = [
        ("volume.mark -volumeId=%d -readonly -bogus" % vid, "unknown flag -bogus"),
        ("volume.mark -readonly", "-volumeId is required"),
        ("volume.mark -volumeId=abc -readonly", 'invalid value "abc" for -volumeId'),
        ("volume.mark -volumeId=%d" % vid, "exactly one of -readonly and -writable"),
        ("volume.mark -volumeId=999999 -readonly", "volume 999999 not found"),
        ("volume.mark -volumeId=-3 -readonly", 'invalid value "-3" for -volumeId'),
        ("volume.delete -volumeId=%d" % vid, "-node is required"),
        ("volume.delete -volumeId=%d -node=10.9.9.9:1" % vid, "is not on 10.9.9.9:1"),
        ("volume.vacuum -garbageThreshold=7", "invalid -garbageThreshold"),
        ("volume.vacuum -volumeId=999999", "volume 999999 not found"),
        ("collection.delete", "-collection is required"),
        ("volume.list extra", 'unexpected argument "extra"'),
        ("volume.mark -volumeId", "flag -volumeId needs a value"),
        ("no.such.command", "unknown command"),
        ("help no.such", 'unknown command "no.such"'),
    ]
    for cmd, msg in cases:
        rc, out, err = shell(m, f, "lock; " + cmd)
        assert rc == 1, (cmd, out, err)
        assert msg in err, (cmd, err)
    after = {k: v["ReadOnly"] for k, v in replicas(m).items()}
    assert after == before
    rc, _, err = shell(m, f, 'fs.ls "unterminated')
    assert rc == 1 and "unterminated" in err


def test_script_mode_and_exit_status(env):
    _, m, vols, f = env
    rc, out, err = shell(m, f, stdin="# a comment\ncluster.ps\n\nfs.pwd\n")
    assert rc == 0 and "* master %s" % m.url in out and "/\n" in out
    rc, out, err = shell(m, f, stdin="no.such\nfs.pwd\n")
    assert rc == 1 and out.strip() == "/" and "no.such: unknown command" in err
    rc, out, _ = shell(m, f, "fs.pwd; exit; cluster.ps")
    assert rc == 0 and out == "/\n"
    # Quotes and backslashes keep blanks and ';' inside one word, in -c and in scripts.
    assert f.put("/q/a b;c.txt", b"12345").status_code in (200, 201)
    _, out, _ = shell(m, f, 'fs.meta.cat "/q/a b;c.txt"; fs.ls \'/q\'', expect=0)
    assert '"fullPath": "/q/a b;c.txt"' in out and out.rstrip().endswith("a b;c.txt")
    _, out, _ = shell(m, f, stdin="fs.du /q/a\\ b\\;c.txt\n", expect=0)
    assert re.match(r"block:\s*\d+\tbyte:\s*5\t", out), out
    _, out, _ = shell(m, f, "fs.du /q/a\\ b\\;c.txt; fs.pwd", expect=0)
    assert re.match(r"block:\s*\d+\tbyte:\s*5\t.*\n/\n$", out), out
    rc, out, _ = shell(m, f, "help volume.vacuum", expect=0)
    assert out.startswith("volume.vacuum [-garbageThreshold=0.3] [-volumeId=N] [-n]")
    rc, out, _ = shell(m, f, "volume.mark -h", expect=0)
    assert "admin lock" in out


# ---- the admin lock ----------------------------------------------------------------

def test_lock_is_exclusive_and_expires_after_kill9(env):
    _, m, vols, f = env
    write(m, 1, 100, collection="locked")
    a = Holder(m, f)
    try:
        held = lease(m)
        assert held["held"] and ("pid %d" % a.p.pid) in held["client"]
        rc, out, err = shell(m, f, "lock", expect=1)
        assert "held by" in err and ("pid %d" % a.p.pid) in err
        # The holder renews in the background (its expiry moves forward).
        seen = [lease(m)["expiresInMs"]]
        wait_until(lambda: seen.append(lease(m)["expiresInMs"]) or seen[-1] > seen[-2], 15,
                   "a renewal")
        # A second shell cannot change anything meanwhile.
        rc, _, err = shell(m, f, "lock; collection.delete -collection=locked", expect=1)
        assert 'run "lock" first' in err
        assert any(v["Collection"] == "locked" for v in replicas(m).values())
        os.kill(a.p.pid, signal.SIGKILL)
        a.p.wait()
        t0 = time.monotonic()
        wait_until(lambda: shell(m, f, "lock")[0] == 0, 40, "the dead shell's lease to expire")
        assert time.monotonic() - t0 < 30
    finally:
        if a.p.poll() is None:
            os.kill(a.p.pid, signal.SIGKILL)
            a.p.wait()
        a.close()
    # The -c shell released the lease as it exited.
    assert not lease(m)["held"]


def test_stalled_holder_loses_the_lock(env):
    """A holder stopped past the lease's TTL loses it to another shell; once it runs
    again its renewal is refused, it says so, and it refuses to change anything."""
    _, m, vols, f = env
    a = Holder(m, f)
    b = None
    try:
        a.p.send_signal(signal.SIGSTOP)

        def take():
            nonlocal b
            h = Holder(m, f, must=False)
            if h.locked:
                b = h
                return True
            h.close()
            return False
        wait_until(take, 40, "the stalled shell's lease to lapse")
        assert ("pid %d" % b.p.pid) in lease(m)["client"]
        a.p.send_signal(signal.SIGCONT)
        line = a.p.stdout.readline().decode()
        assert "lost the admin lock" in line and ("pid %d" % b.p.pid) in line, line
        vid = next(k[1] for k, v in replicas(m).items() if not v["ReadOnly"])
        line = a.say("volume.mark -volumeId=%d -readonly" % vid)
        assert 'run "lock" first' in line, line
        assert not any(server_volumes(v.url).get(vid, {}).get("ReadOnly") for v in vols)
    finally:
        a.p.send_signal(signal.SIGCONT)
        a.close()
        if b:
            b.close()
    assert not lease(m)["held"]


def test_unlock_releases_and_second_shell_locks(env):
    _, m, vols, f = env
    a = Holder(m, f)
    try:
        assert a.say("unlock").strip() == "unlocked"
        assert not lease(m)["held"]
        _, out, _ = shell(m, f, "lock; unlock", expect=0)
        assert "locked:" in out and "unlocked" in out
    finally:
        a.close()
    r = requests.post("http://%s/admin/release?name=admin&token=12345" % m.url, timeout=10)
    assert r.status_code == 409
    r = requests.post("http://%s/admin/lease?name=admin" % m.url, timeout=10)
    assert r.status_code == 400 and "client" in r.json()["error"]
    r = requests.post("http://%s/admin/lease?name=admin&client=x&previousToken=z" % m.url)
    assert r.status_code == 400


# ---- interactive ---------------------------------------------------------------------

def _read_until(fd, needle, timeout=30, prompt=False):
    """Reads the pty until needle has come (and, with prompt, a prompt after it)."""
    buf = b""
    deadline = time.monotonic() + timeout
    while needle not in buf or (prompt and not buf.endswith(b"> ")):
        left = deadline - time.monotonic()
        assert left > 0, "no %r in %r" % (needle, buf)
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    assert needle in buf, buf
    return buf


def test_interactive_through_a_pty(env, tmp_path):
    _, m, vols, f = env
    home = tmp_path / "home"
    home.mkdir()
    e = dict(os.environ, HOME=str(home), TERM="dumb")
    # The shell's stdin, stdout and stderr are a pty's slave (subprocess forks and execs
    # in C: no Python runs in the child).
    fd, slave = pty.openpty()
    p = subprocess.Popen([WEEDFS, "shell", "-master=%s" % m.url, "-filer=%s" % f.url],
                         stdin=slave, stdout=slave, stderr=slave, env=e, start_new_session=True)
    os.close(slave)
    try:
        _read_until(fd, b"> ")
        os.write(fd, b"cluster.ps\n")
        # the output, then the next prompt (which may come in the same read)
        out = _read_until(fd, ("* volume server %s" % vols[2].url).encode(), prompt=True)
        assert ("* master %s" % m.url).encode() in out
        os.write(fd, b"fs.pwd\n")
        _read_until(fd, b"/\r\n", prompt=True)
        os.write(fd, b"exit\n")
        assert p.wait(30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(fd)
    hist = (home / ".weedfs_shell_history").read_text()
    assert "cluster.ps" in hist and "fs.pwd" in hist


# ---- cluster.check -------------------------------------------------------------------

def test_cluster_check_reports_missing_copies(cluster):
    m = cluster.master()
    v1, v2 = cluster.volume(m), cluster.volume(m)
    f = start_filer(cluster, m)
    fid, _ = write(m, 1, 100, replication="001")[0]
    vid = parse_fid(fid)[0]
    _, out, _ = shell(m, f, "cluster.check", expect=0)
    assert "cluster.check: ok" in out and "volume server(s)" in out
    v2.kill9()
    def degraded():
        rc, out, _ = shell(m, f, "cluster.check")
        return rc == 1 and ("volume %d: 1 of 2 copies (replication 001) on %s" % (vid, v1.url)
                            in out) and out
    out = wait_until(degraded, 30, "cluster.check to see the lost copy")
    assert re.search(r"cluster\.check: \d+ problem\(s\)", out)
