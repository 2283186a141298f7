"""weedfs-mount over replicated volumes (replication 001 on two volume servers):
a read fails over to the surviving replica when one server is killed, from a warm
mount and from a cold one, before and after the master notices; a blob whose every
copy is gone fails with EIO within a bounded time and the mount keeps serving; a
write while a replica's server is down either lands (and reads back) or makes
close() fail with its cause (EIO: a replica unreachable; ENOSPC: the master has nowhere
to place a replicated chunk), never a silent loss; the cluster is usable again after
the restart.
"""

import errno
import os
import time

import pytest
import requests

from conftest import lookup_urls, parse_fid, wait_until
from filer_fixtures import start_filer
from mount_fixtures import start_mount

READ_BOUND = 10  # seconds one file may take to read back (or fail) after a server died
WRITE_BOUND = 30  # seconds a write + fsync + close may take to succeed or fail
SIZES = {"small": 100, "one-mib": 1 << 20, "multi": 12 << 20}


def replicated_cluster(cluster):
    """A master, two volume servers in one rack and a filer, all replicating 001."""
    master = cluster.master(extra=["-defaultReplication=001"])
    vols = [cluster.volume(master, max_volumes=8) for _ in range(2)]
    filer = start_filer(cluster, master, extra=["-defaultReplication=001", "-maxMB=4"])
    return master, vols, filer


def mount(cluster, filer, *extra):
    # a short filer budget, so a test never waits 30 s for a metadata EIO
    return start_mount(cluster, filer.url, extra=["-replication=001", "-retrySeconds=2",
                                                  "-timeoutSeconds=5"] + list(extra))


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def timed_read(path):
    t0 = time.monotonic()
    with open(path, "rb") as f:
        data = f.read()
    return data, time.monotonic() - t0


def chunk_fids(filer, path):
    m = filer.meta(path)
    return [c["file_id"] for c in m.get("chunks") or []], m


def filer_lookup(filer, vid):
    r = requests.post(filer.u("/.api/v1/lookupVolume"), json={"volumeId": vid}, timeout=10)
    if r.status_code != 200:
        return []
    return sorted(loc["url"] for loc in r.json()["locations"])


def assert_on_both(master, vols, filer, path, data):
    """Every chunk of path is stored, byte-exact, on both volume servers."""
    fids, m = chunk_fids(filer, path)
    if not fids:
        # inline content: the filer holds the bytes, no volume server is involved
        assert m.get("Inline") and len(data) <= 4096, m
        return 0
    want = sorted(v.url for v in vols)
    covered = 0
    for c in m["chunks"]:
        vid = parse_fid(c["file_id"])[0]
        # the master's view (the filer's lookup is not asked here: it caches)
        assert lookup_urls(master, vid) == want, (path, c["file_id"])
        piece = data[c["offset"]:c["offset"] + c["size"]]
        for v in vols:
            r = requests.get("http://%s/%s" % (v.url, c["file_id"]), timeout=30)
            assert r.status_code == 200 and r.content == piece, (v.url, c["file_id"],
                                                                  r.status_code)
        covered += c["size"]
    assert covered == len(data), (path, covered)
    return len(fids)


def wait_master_forgets(master, vol, vids):
    """Until the master's lookups no longer list the dead server for any of vids."""
    wait_until(lambda: all(vol.url not in lookup_urls(master, v) for v in vids), 20,
               "master to drop %s" % vol.url)


def check_reads(m, files, label):
    worst = 0
    for name, data in files.items():
        got, took = timed_read(m.p(name))
        assert got == data, "%s: %s read back %d bytes, differing" % (label, name, len(got))
        assert took < READ_BOUND, "%s: %s took %.1fs" % (label, name, took)
        worst = max(worst, took)
    assert m.daemon.alive(), m.daemon.log_tail()
    print("%s: slowest file %.3fs" % (label, worst))


def test_reads_fail_over_to_the_other_replica(cluster):
    master, vols, filer = replicated_cluster(cluster)
    m = mount(cluster, filer)
    files = {"%s-%d" % (k, i): os.urandom(n) for k, n in SIZES.items() for i in range(2)}
    for name, data in files.items():
        write_file(m.p(name), data)
    nchunks = {name: assert_on_both(master, vols, filer, "/" + name, data)
               for name, data in files.items()}
    # small files may be inline; 12 MiB is 3 chunks of 4 MiB
    assert all(nchunks["one-mib-%d" % i] == 1 and nchunks["multi-%d" % i] == 3
               for i in range(2)), nchunks
    vids = {parse_fid(f)[0] for name in files for f in chunk_fids(filer, "/" + name)[0]}
    check_reads(m, files, "warm, both up")

    # Each server dies in turn (restarted between). The first time, the master is given
    # time to notice before anything reads, so the filer learns a one-replica location
    # list; the second time the other server dies while that list may still be cached.
    for rnd, dead in enumerate(vols):
        dead.kill9()
        if rnd == 0:
            wait_master_forgets(master, dead, vids)
        # a mount that read everything before: its cached locations name the dead server
        check_reads(m, files, "round %d, warm mount" % rnd)
        # cold caches: nothing cached about chunks or locations
        cold = mount(cluster, filer, "-cacheDir=%s" % (cluster._dir("cache")))
        check_reads(cold, files, "round %d, cold mount, master %s" % (
            rnd, "caught up" if rnd == 0 else "not caught up"))
        cold.unmount()
        if rnd == 1:
            wait_master_forgets(master, dead, vids)
            cold = mount(cluster, filer)
            check_reads(cold, files, "round %d, cold mount, master caught up" % rnd)
            cold.unmount()
        cluster.restart(dead)

    # both back: everything reads from a fresh mount, and the old one still works
    cold = mount(cluster, filer)
    check_reads(cold, files, "both back, cold")
    check_reads(m, files, "both back, warm")
    assert m.unmount() == 0


def test_all_copies_gone_is_eio_and_the_mount_survives(cluster):
    master, vols, filer = replicated_cluster(cluster)
    m = mount(cluster, filer)
    files = {"small": os.urandom(100), "big": os.urandom(6 << 20)}
    for name, data in files.items():
        write_file(m.p(name), data)
    for v in vols:
        v.kill9()
    # a cold mount: no copy of any chunk anywhere it could read
    cold = mount(cluster, filer)
    for mm in (m, cold):
        for name, data in files.items():
            if not chunk_fids(filer, "/" + name)[0]:
                continue  # inline: still readable, checked below
            # drop the kernel's pages so the read reaches the mount
            fd = os.open(mm.p(name), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
            if mm is m:
                continue  # the writer's own chunk cache may still hold the bytes
            t0 = time.monotonic()
            with pytest.raises(OSError) as ei:
                with open(mm.p(name), "rb") as f:
                    f.read()
            took = time.monotonic() - t0
            assert ei.value.errno == errno.EIO, ei.value
            assert took < READ_BOUND, (name, took)
        # the mount is alive and serves what needs no volume server
        assert mm.daemon.alive(), mm.daemon.log_tail()
        assert set(files) <= set(os.listdir(mm.p()))
        for name, data in files.items():
            if not chunk_fids(filer, "/" + name)[0]:
                assert timed_read(mm.p(name))[0] == data, name
        sub = mm.p("dir-%d" % id(mm))
        os.mkdir(sub)
        assert os.path.isdir(sub)
    # once one server is back every file reads again, from both mounts
    cluster.restart(vols[0])
    for mm in (m, cold):
        deadline = time.monotonic() + 20
        for name, data in files.items():
            while True:
                try:
                    got, _ = timed_read(mm.p(name))
                    break
                except OSError as e:
                    assert e.errno == errno.EIO and time.monotonic() < deadline, e
                    time.sleep(0.2)
            assert got == data, name
    assert m.unmount() == 0 and cold.unmount() == 0


def test_write_with_a_replica_down_lands_or_fails(cluster):
    master, vols, filer = replicated_cluster(cluster)
    m = mount(cluster, filer)
    write_file(m.p("before"), os.urandom(1 << 20))
    vols[1].kill9()
    outcomes, written, timings = {}, {}, {}
    # Right after the kill (the master still assigns to volumes with a copy on the dead
    # server: the upload fails, EIO; or the master notices meanwhile), then once it
    # noticed (no volume can hold two copies: assign fails with 507, ENOSPC).
    allowed = {"at once": ("EIO", "ENOSPC"), "after the master noticed": ("ENOSPC",)}
    for phase in ("at once", "after the master noticed"):
        if phase != "at once":
            wait_master_forgets(master, vols[1], {parse_fid(f)[0] for f in
                                                  chunk_fids(filer, "/before")[0]})
        for size in (100, 1 << 20, 9 << 20):
            name = "w-%s-%d" % (phase.replace(" ", "-"), size)
            data = os.urandom(size)
            t0 = time.monotonic()
            try:
                fd = os.open(m.p(name), os.O_CREAT | os.O_WRONLY, 0o644)
                try:
                    os.write(fd, data)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                outcomes[name] = "ok"
                written[name] = data
            except OSError as e:
                outcomes[name] = errno.errorcode.get(e.errno, str(e.errno))
                assert outcomes[name] in allowed[phase], (name, e)
            took = time.monotonic() - t0
            assert took < WRITE_BOUND, (name, took)
            timings[name] = round(took, 2)
    assert m.daemon.alive(), m.daemon.log_tail()
    print("writes with one replica server down:", outcomes, "seconds:", timings)
    # Every 001 volume has a copy on each of the two servers, so no chunk can be stored
    # twice: an uploaded write must fail (close/fsync), with EIO before the master
    # notices (the live server's replication to the dead one fails: 500) and ENOSPC
    # after (nowhere to grow a 001 volume). Small files may be inline (no volume server).
    for name, how in outcomes.items():
        size = int(name.rsplit("-", 1)[1])
        if size >= 1 << 20:
            assert how != "ok", outcomes
    # what was acknowledged reads back, through this mount and a cold one
    cold = mount(cluster, filer)
    for name, data in written.items():
        for mm in (m, cold):
            got, _ = timed_read(mm.p(name))
            assert got == data, (name, outcomes)
    cold.unmount()

    # the server comes back: writes succeed again and land on both replicas
    cluster.restart(vols[1])
    data = os.urandom(3 << 20)
    deadline = time.monotonic() + 30
    while True:
        try:
            write_file(m.p("after"), data)
            break
        except OSError as e:
            assert e.errno == errno.EIO and time.monotonic() < deadline, e
            time.sleep(0.5)
    assert assert_on_both(master, vols, filer, "/after", data) >= 1
    with open(m.p("after"), "rb") as f:
        assert f.read() == data
    assert m.unmount() == 0


def test_hung_server_is_bounded_by_the_request_timeout(cluster):
    """A volume server that accepts connections but never answers (SIGSTOP): a read
    that picks it first waits for the mount's request timeout (30 s), then takes the
    other replica; nothing hangs, and later reads, of other chunks of the same volumes
    through the same mount, do not wait for it again."""
    master, vols, filer = replicated_cluster(cluster)
    m = mount(cluster, filer)
    first = {"a": os.urandom(1 << 20), "b": os.urandom(24 << 20)}
    later = {"c": os.urandom(1 << 20), "d": os.urandom(12 << 20)}
    for name, data in list(first.items()) + list(later.items()):
        write_file(m.p(name), data)
    hung = vols[0]
    hung.pause()
    try:
        cold = mount(cluster, filer)
        t0 = time.monotonic()
        for name, data in first.items():
            got, _ = timed_read(cold.p(name))
            assert got == data, name
        took = time.monotonic() - t0
        assert took < 30 + 15, took
        assert cold.daemon.alive(), cold.daemon.log_tail()
        # past the time a failed server is remembered: what this mount cached about the
        # volumes must not send it back to the hung server
        vids = {parse_fid(f)[0] for name in later for f in chunk_fids(filer, "/" + name)[0]}
        wait_master_forgets(master, hung, vids)
        time.sleep(6)
        check_reads(cold, later, "same cold mount, later files, one server hung")
        print("hung server: first cold read of %d MiB %.1fs" % (
            sum(len(d) for d in first.values()) >> 20, took))
    finally:
        hung.resume()
    assert m.unmount() == 0
