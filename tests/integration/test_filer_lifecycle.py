"""The filer's data life cycle and concurrency, on real daemons: the volume space
that deletes, overwrites and truncating re-uploads orphan comes back through the
garbage queue and a vacuum; racing renames never lose or duplicate an entry; a
directory rename is atomic for concurrent readers."""

import hashlib
import random
import threading
import time

import requests

from conftest import dat_bytes, wait_until
from filer_fixtures import start_filer

KiB = 1 << 10
MiB = 1 << 20


def sha(b):
    return hashlib.sha256(b).hexdigest()


def content(name, size):
    """Deterministic bytes for name, so a read can be checked without keeping them."""
    seed = hashlib.sha256(name.encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def test_volume_space_returns_after_deletes_and_vacuum(cluster):
    m = cluster.master()
    v = cluster.volume(m)
    f = start_filer(cluster, m, extra=["-maxMB=1"])
    n, size = 200, 256 * KiB
    names = ["/space/f%03d" % i for i in range(n)]
    for p in names:
        assert f.put(p, content(p, size)).status_code == 201
    # a few multi-chunk files, to be truncated by re-uploading them smaller
    big = ["/space/big%d" % i for i in range(4)]
    for p in big:
        assert f.put(p, content(p, 3 * MiB)).status_code == 201
    wait_until(lambda: live_count(v) == n + 4 * 3, 15, "every chunk counted on the volume")
    full = dat_bytes(v)
    assert full >= n * size + 12 * MiB

    # delete 180 files, overwrite 10 of the rest with new content, truncate the big ones
    for p in names[:180]:
        assert f.delete(p).status_code == 204
    for p in names[180:190]:
        assert f.put(p, content(p + "v2", size)).status_code == 201
    for p in big:
        assert f.put(p, content(p, 100 * KiB)).status_code == 201
    live_files = 20 + 4
    live_bytes = 20 * size + 4 * 100 * KiB
    # the garbage worker deletes the orphaned chunks: only the live ones stay counted
    wait_until(lambda: live_count(v) == live_files, 60,
               "garbage worker deleted the orphaned chunks (count %d)" % live_files)
    # nothing still referenced was freed
    for p in names[180:190]:
        assert sha(f.get(p).content) == sha(content(p + "v2", size)), p
    for p in names[190:]:
        assert sha(f.get(p).content) == sha(content(p, size)), p
    for p in big:
        assert sha(f.get(p).content) == sha(content(p, 100 * KiB)), p
    for p in names[:180:17]:
        assert f.get(p).status_code == 404
    # deleted needles still take their space until a vacuum compacts the volumes
    assert dat_bytes(v) >= full
    r = requests.get("http://%s/vol/vacuum" % m.url, params={"garbageThreshold": "0.01"},
                     timeout=120)
    assert r.status_code == 200, r.text
    # compaction is committed per volume; poll until the space is back
    slack = 1 * MiB  # needle headers, padding, superblocks
    wait_until(lambda: dat_bytes(v) <= live_bytes + slack, 60,
               "the .dat files shrink to the live data (%d bytes live, %d before)"
               % (live_bytes, full))
    after = dat_bytes(v)
    assert after >= live_bytes, (after, live_bytes)
    # and every live file still reads back after the compaction
    for p in names[180:190]:
        assert sha(f.get(p).content) == sha(content(p + "v2", size)), p
    for p in names[190:]:
        assert sha(f.get(p).content) == sha(content(p, size)), p
    for p in big:
        assert sha(f.get(p).content) == sha(content(p, 100 * KiB)), p


def live_count(vol):
    """Needles the volume server counts as live: FileCount minus DeleteCount (its
    /status counts deleted needles in FileCount until a vacuum, as SeaweedFS)."""
    j = requests.get("http://%s/status" % vol.url, timeout=10).json()
    return sum(v["FileCount"] - v["DeleteCount"] for v in j["Volumes"])


def run_threads(n, fn):
    errors = []

    def wrap(i):
        try:
            fn(i)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:3]


def test_racing_moves_never_lose_or_duplicate(cluster):
    """16 clients move 32 uniquely named files between 6 directories, guessing where
    each file is, so most moves race with another on the same source or target
    directory. Moving into an existing directory keeps the name, so no move
    legitimately replaces another file: afterwards every file exists exactly once
    with its own content."""
    m = cluster.master()
    cluster.volume(m)
    f = start_filer(cluster, m, extra=["-maxMB=1"])
    ndirs, nfiles = 6, 32
    for d in range(ndirs):
        assert f.post("/race/d%d/" % d).status_code == 201
    body = {}
    for k in range(nfiles):
        # half inline, half chunked
        body[k] = content("file%d" % k, 1000 if k % 2 else 300 * KiB)
        assert f.put("/race/d%d/f%d" % (k % ndirs, k), body[k]).status_code == 201
    moved = [0] * 16
    sess = [requests.Session() for _ in range(16)]

    def client(i):
        rnd = random.Random(i)
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            k = rnd.randrange(nfiles)
            src, dst = rnd.sample(range(ndirs), 2)
            r = sess[i].post(f.u("/race/d%d" % dst), timeout=60,
                             params={"mv.from": "/race/d%d/f%d" % (src, k)})
            assert r.status_code in (204, 404), (r.status_code, r.text)
            if r.status_code == 204:
                moved[i] += 1

    run_threads(16, client)
    assert sum(moved) > 50, moved  # enough moves happened to mean something
    seen = {}
    for d in range(ndirs):
        for name in f.names("/race/d%d/" % d):
            assert name not in seen, "%s in d%d and d%d" % (name, seen[name], d)
            seen[name] = d
    assert sorted(seen) == sorted("f%d" % k for k in range(nfiles))
    for k in range(nfiles):
        assert sha(f.get("/race/d%d/f%d" % (seen["f%d" % k], k)).content) == sha(body[k])
    assert sorted(f.names("/race/")) == ["d%d" % d for d in range(ndirs)]


def test_directory_rename_is_atomic_for_readers(cluster):
    """A tree moves /atom/t0 -> /atom/t1 -> ... -> /atom/tN (never back) while readers
    read and list inside it. Every reader tracks the generation g where it last found
    the tree: when a path is absent at t<g>, the tree must have moved on, so it tries
    t<g+1>, and so on. With atomic renames a reader can never pass the last
    generation and every listing is complete; a half-moved tree would make a file
    (or a listing entry) absent at both places and run the reader past the end."""
    m = cluster.master()
    cluster.volume(m)
    f = start_filer(cluster, m, extra=["-maxMB=1"])
    dirs = ["", "a/", "a/b/", "c/"]
    files = []
    for d in dirs:
        for i in range(40):
            files.append("%sx%02d" % (d, i))
    for rel in files:
        data = content(rel, 300 * KiB if rel.endswith("7") else 64)
        assert f.put("/atom/t0/" + rel, data).status_code == 201
    expect_list = {}
    for d in dirs:
        expect_list[d] = sorted(f.names("/atom/t0/" + d, limit=1000))
    assert len(expect_list[""]) == 40 + 2 and len(expect_list["a/"]) == 41
    last = 100
    done = threading.Event()
    stats = {"reads": 0, "lists": 0, "moves": 0}
    lock = threading.Lock()

    def renamer(_):
        s = requests.Session()
        try:
            for g in range(last):
                r = s.post(f.u("/atom/t%d" % (g + 1)), params={"mv.from": "/atom/t%d" % g},
                           timeout=60)
                assert r.status_code == 204, (g, r.status_code, r.text)
                with lock:
                    stats["moves"] += 1
                # spreads the renames over a few seconds of reads; the check does
                # not depend on this timing, only its power to catch a bad state
                time.sleep(0.02)
        finally:
            done.set()

    def reader(i):
        s = requests.Session()
        rnd = random.Random(i)
        g = 0
        while not done.is_set():
            listing = i % 2 == 0 and rnd.random() < 0.5
            if listing:
                d = rnd.choice(dirs)
            else:
                rel = rnd.choice(files)
            while True:
                assert g <= last, "reader %d ran past the last generation" % i
                if listing:
                    r = s.get(f.u("/atom/t%d/%s" % (g, d)), params={"limit": 1000},
                              headers={"Accept": "application/json"}, timeout=60)
                else:
                    r = s.get(f.u("/atom/t%d/%s" % (g, rel)), timeout=60)
                if r.status_code == 404:
                    g += 1
                    continue
                assert r.status_code == 200, (r.status_code, r.text[:300])
                if listing:
                    j = r.json()
                    got = sorted(e["FullPath"] for e in j["Entries"] or [])
                    want = sorted("/atom/t%d/%s%s" % (g, d, n) for n in expect_list[d])
                    assert got == want, "partial or mixed listing of t%d/%s: %s" % (
                        g, d, sorted(set(got) ^ set(want))[:5])
                else:
                    want = content(rel, 300 * KiB if rel.endswith("7") else 64)
                    assert r.content == want, "t%d/%s: wrong content" % (g, rel)
                with lock:
                    stats["lists" if listing else "reads"] += 1
                break

    run_threads(9, lambda i: renamer(i) if i == 8 else reader(i))
    assert stats["moves"] == last
    assert stats["reads"] > 100 and stats["lists"] > 20, stats
    assert f.names("/atom/") == ["t%d" % last]
    for d in dirs:
        assert sorted(f.names("/atom/t%d/%s" % (last, d), limit=1000)) == expect_list[d]
