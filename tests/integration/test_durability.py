"""Crash safety, torn writes, and vacuum under concurrent reads."""

import os
import random
import threading
import time

import requests

from conftest import assign, dat_bytes, parse_fid, put_file, upload, wait_until


def _writer(m, acked, stop, errors, seed):
    rnd = random.Random(seed)
    s = requests.Session()
    while not stop.is_set():
        try:
            a = assign(m, expect_ok=False)
            if a.status_code != 200:
                continue
            a = a.json()
            body = rnd.randbytes(rnd.choice([1, 100, 1000, 5000, 40000]))
            r = s.post("http://%s/%s" % (a["url"], a["fid"]), files={"file": ("f", body)},
                       timeout=10)
            if r.status_code in (200, 201):
                acked.append((a["fid"], a["url"], body))
        except (requests.RequestException, ValueError) as e:
            errors.append(e)


def test_kill9_during_writes_keeps_acked_data(cluster):
    m = cluster.master()
    v = cluster.volume(m)
    assign(m)  # grow volumes before the load
    acked, errors = [], []
    stop = threading.Event()
    threads = [threading.Thread(target=_writer, args=(m, acked, stop, errors, i))
               for i in range(8)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: len(acked) >= 300, 60, "300 acknowledged writes")
        v.kill9()                       # in the middle of the load
        time.sleep(0.2)                 # let in-flight requests fail
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert acked
    snapshot = list(acked)
    cluster.restart(v)
    s = requests.Session()
    bad = []
    for fid, url, body in snapshot:
        r = s.get("http://%s/%s" % (url, fid))
        if r.status_code != 200 or r.content != body:
            bad.append((fid, r.status_code, len(r.content), len(body)))
    assert not bad, "%d of %d acknowledged writes lost or wrong after kill -9: %s" % (
        len(bad), len(snapshot), bad[:10])
    # And the server takes writes again.
    put_file(m, b"after crash")


def _fill(m, n=40):
    files = []
    for i in range(n):
        body = os.urandom(100 + 37 * i)
        files.append(put_file(m, body, name="f%d" % i) + (body,))
    return files


def _check_all(files, skip_last_per_volume=False):
    bad = []
    for fid, url, body in files:
        r = requests.get("http://%s/%s" % (url, fid))
        if r.status_code != 200 or r.content != body:
            bad.append((fid, r.status_code))
    assert not bad, bad


def _one_volume_cluster(cluster):
    m = cluster.master()
    # A single volume slot: every write lands in the same .dat, so "the last write" is known.
    v = cluster.volume(m, max_volumes=1)
    return m, v


def _dat_idx(v):
    dats = sorted(v.dir.glob("*.dat"))
    assert len(dats) == 1, dats
    return dats[0], dats[0].with_suffix(".idx")


def test_garbage_after_dat_tail(cluster):
    m, v = _one_volume_cluster(cluster)
    files = _fill(m)
    v.stop()
    dat, idx = _dat_idx(v)
    with open(dat, "ab") as f:
        f.write(os.urandom(29))             # a torn append: not even a whole header
    cluster.restart(v)
    _check_all(files)
    fid, url = put_file(m, b"after garbage")
    assert requests.get("http://%s/%s" % (url, fid)).content == b"after garbage"
    # The new write survives another restart, so it went after the valid data.
    cluster.restart(v)
    _check_all(files)
    assert requests.get("http://%s/%s" % (url, fid)).content == b"after garbage"


def test_torn_last_needle(cluster):
    m, v = _one_volume_cluster(cluster)
    files = _fill(m)
    v.stop()
    dat, idx = _dat_idx(v)
    # Cut the last needle in half, as a crash in the middle of its write would.
    size = dat.stat().st_size
    os.truncate(dat, size - (len(files[-1][2]) // 2))
    cluster.restart(v)
    _check_all(files[:-1])
    fid, url, _ = files[-1]
    assert requests.get("http://%s/%s" % (url, fid)).status_code == 404
    fid, url = put_file(m, b"after torn write")
    cluster.restart(v)
    assert requests.get("http://%s/%s" % (url, fid)).content == b"after torn write"
    _check_all(files[:-1])


def test_truncated_idx(cluster):
    m, v = _one_volume_cluster(cluster)
    files = _fill(m)
    v.stop()
    dat, idx = _dat_idx(v)
    size = idx.stat().st_size
    assert size == 16 * len(files), "one 16-byte .idx entry per write"
    os.truncate(idx, size - 16 * 3 - 7)     # three entries lost and a partial one
    cluster.restart(v)
    _check_all(files)


def test_missing_idx(cluster):
    m, v = _one_volume_cluster(cluster)
    files = _fill(m)
    # Deletes must survive an index rebuild too.
    for fid, url, _ in files[:5]:
        assert requests.delete("http://%s/%s" % (url, fid)).status_code in (200, 202)
    v.stop()
    dat, idx = _dat_idx(v)
    idx.unlink()
    cluster.restart(v)
    _check_all(files[5:])
    for fid, url, _ in files[:5]:
        assert requests.get("http://%s/%s" % (url, fid)).status_code == 404, fid
    assert idx.exists()


def test_vacuum_under_concurrent_reads(cluster):
    m = cluster.master(extra=["-garbageThreshold=0.9"])  # no automatic vacuum mid-test
    v = cluster.volume(m, max_volumes=2)
    files = []
    for i in range(300):
        body = os.urandom(8000 + 13 * i)
        files.append(put_file(m, body, name="v%d" % i) + (body,))
    dead, live = files[::2], files[1::2]
    for fid, url, _ in dead:
        r = requests.delete("http://%s/%s" % (url, fid))
        assert r.status_code in (200, 202), r.text
    before = dat_bytes(v)

    stop = threading.Event()
    failures, reads = [], [0]

    def reader(seed):
        rnd = random.Random(seed)
        s = requests.Session()
        while not stop.is_set():
            fid, url, body = rnd.choice(live)
            try:
                r = s.get("http://%s/%s" % (url, fid), timeout=10)
                if r.status_code != 200 or r.content != body:
                    failures.append((fid, r.status_code, len(r.content)))
            except requests.RequestException as e:
                failures.append((fid, repr(e)))
            reads[0] += 1

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    try:
        wait_until(lambda: reads[0] > 50, 20, "readers running")
        r = requests.get("http://%s/vol/vacuum" % m.url, params={"garbageThreshold": "0.1"},
                         timeout=120)
        assert r.status_code == 200, r.text
        wait_until(lambda: dat_bytes(v) < before * 0.75, 30,
                   ".dat shrinks below 75%% of %d bytes" % before)
        n = reads[0]
        wait_until(lambda: reads[0] > n + 50, 20, "reads continue after the swap")
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert not failures, "%d failed reads during vacuum: %s" % (len(failures), failures[:10])
    for fid, url, _ in dead:
        assert requests.get("http://%s/%s" % (url, fid)).status_code == 404
    _check_all(live)
    # Writes and deletes work after compaction, and survive a restart.
    fid, url = put_file(m, b"post vacuum")
    cluster.restart(v)
    _check_all(live)
    assert requests.get("http://%s/%s" % (url, fid)).content == b"post vacuum"
    for fid, url, _ in dead:
        assert requests.get("http://%s/%s" % (url, fid)).status_code == 404


def test_volume_full_moves_on(cluster):
    """A volume at -volumeSizeLimitMB stops taking writes and assignment moves on."""
    m = cluster.master(volume_size_limit_mb=1)
    v = cluster.volume(m, max_volumes=8)
    vids, full = set(), 0
    i = 0
    while len(vids) < 4 or i < 12:
        a = assign(m)
        r = upload(a["url"], a["fid"], os.urandom(300 * 1024), name="big%d" % i)
        if r.status_code == 507:
            # The master learns of a full volume at the next heartbeat: a client retries.
            full += 1
            assert full < 40, "kept being assigned to full volumes"
            continue
        assert r.status_code in (200, 201), (r.status_code, r.text)
        vids.add(parse_fid(a["fid"])[0])
        i += 1
        assert i < 40
    assert len(vids) >= 3, "3.6 MB in 1 MB volumes used only volumes %s" % vids
    for p in v.dir.glob("*.dat"):
        assert p.stat().st_size <= 1024 * 1024 + 400 * 1024, (p, p.stat().st_size)


def test_upload_after_restart_never_overwrites(cluster):
    m, v = _one_volume_cluster(cluster)
    files = _fill(m, 10)
    cluster.restart(v)
    a = assign(m)
    r = upload(a["url"], a["fid"], b"new")
    assert r.status_code in (200, 201)
    _check_all(files)
