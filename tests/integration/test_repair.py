"""The master's automatic repair: a volume that lost a copy with its server gets a new
one on a server its placement allows; replicas that differ after a replicated write that
missed one are brought level; the repairs are logged and counted."""

import re
import subprocess

import requests
from prometheus_client.parser import text_string_to_metric_families

from conftest import assign, find_binary, parse_fid, put_file, upload, wait_until


def _repairs(master):
    """{kind: count} of weedfs_master_replication_repairs_total."""
    text = requests.get("http://%s/metrics" % master.url, timeout=10).text
    out = {}
    for fam in text_string_to_metric_families(text):
        if fam.name == "weedfs_master_replication_repairs":
            for s in fam.samples:
                if s.name.endswith("_total"):
                    out[s.labels["kind"]] = s.value
    return out


def _metric(master, name):
    text = requests.get("http://%s/metrics" % master.url, timeout=10).text
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name:
                return s.value
    raise AssertionError("%s not in /metrics" % name)


def _locations(master, vid):
    r = requests.get("http://%s/dir/lookup" % master.url, params={"volumeId": str(vid)},
                     timeout=10)
    return sorted(loc["url"] for loc in r.json().get("locations") or []) if r.ok else []


def _get(url, fid):
    return requests.get("http://%s/%s" % (url, fid), timeout=10)


def test_lost_server_is_re_replicated(cluster):
    m = cluster.master(extra=["-repairDelaySeconds=1"])
    vols = [cluster.volume(m, dc="dc1", rack="rack1", max_volumes=20) for _ in range(3)]
    written = {}
    for i in range(30):
        fid, _ = put_file(m, b"copy me %d " % i * (1 + i * 50), replication="001")
        written[fid] = b"copy me %d " % i * (1 + i * 50)
    by_vid = {}
    for fid in written:
        by_vid.setdefault(parse_fid(fid)[0], []).append(fid)
    before = {vid: _locations(m, vid) for vid in by_vid}
    assert all(len(u) == 2 for u in before.values()), before
    victim = vols[0]
    hit = [vid for vid, urls in before.items() if victim.url in urls]
    assert hit, "the first server holds none of the volumes: %s" % before
    victim.kill9()

    def healed():
        now = {vid: _locations(m, vid) for vid in by_vid}
        return all(len(u) == 2 and victim.url not in u for u in now.values())
    wait_until(healed, 60, "every volume back at two copies without the dead server")
    for vid, fids in by_vid.items():
        for url in _locations(m, vid):
            # the copy is a real one: every needle readable with its bytes on each server
            wait_until(lambda: _get(url, fids[0]).status_code == 200, 15,
                       "volume %d served by %s" % (vid, url))
            for fid in fids:
                r = _get(url, fid)
                assert r.status_code == 200 and r.content == written[fid], (url, fid)
    wait_until(lambda: _repairs(m).get("copy", 0) >= len(hit), 15, "repairs counted")
    log = m.log_text()
    for vid in hit:
        assert re.search(r"repair: volume %d copied to 127\.0\.0\.1:\d+" % vid, log), log[-3000:]
    # the new copies take writes like any other
    fid, url = put_file(m, b"after the repair", replication="001")
    for u in _locations(m, parse_fid(fid)[0]):
        assert _get(u, fid).content == b"after the repair"


def test_no_server_fits_is_said_once(cluster):
    m = cluster.master(extra=["-repairDelaySeconds=1"])
    a = cluster.volume(m, dc="dc1", rack="rack1")
    b = cluster.volume(m, dc="dc1", rack="rack1")
    fid, _ = put_file(m, b"two copies, then one", replication="001")
    vid = parse_fid(fid)[0]
    b.kill9()
    line = "repair: volume %d has 1 of 2 copies and cannot get more" % vid
    wait_until(lambda: line in m.log_text(), 30, "the master says no server fits")
    # more scans go by without repeating it
    scans = _metric(m, "weedfs_master_repair_scans_total")
    wait_until(lambda: _metric(m, "weedfs_master_repair_scans_total") >= scans + 3, 30,
               "three more repair scans")
    assert _get(a.url, fid).status_code == 200
    assert m.log_text().count(line) == 1
    assert _get(a.url, fid).content == b"two copies, then one"


def test_replicas_that_missed_writes_are_brought_level(cluster):
    # no spare server, and a delay longer than the test: only the level-bringing runs
    m = cluster.master(extra=["-repairDelaySeconds=600"])
    a = cluster.volume(m, dc="dc1", rack="rack1")
    b = cluster.volume(m, dc="dc1", rack="rack1")
    a1 = assign(m, replication="001", count=20)
    vid, key, cookie = parse_fid(a1["fid"])
    fids = ["%d,%x%08x" % (vid, key + i, cookie) for i in range(20)]
    body = {f: b"needle %s " % f.encode() * 40 for f in fids}
    for f in fids[:10]:
        r = upload(a.url, f, body[f])
        assert r.status_code in (200, 201), r.text
    for f in fids[:10]:
        assert _get(b.url, f).content == body[f]
    b.kill9()
    # while b is down: writes and a delete reach a only (the client sees the failure)
    for f in fids[10:]:
        r = upload(a.url, f, body[f])
        assert r.status_code >= 500 or r.status_code in (200, 201), r.text
        assert _get(a.url, f).content == body[f]
    requests.delete("http://%s/%s" % (a.url, fids[0]), timeout=10)
    assert _get(a.url, fids[0]).status_code == 404
    b.start()

    def level():
        return (all(_get(b.url, f).content == body[f] for f in fids[1:]) and
                _get(b.url, fids[0]).status_code == 404)
    wait_until(level, 60, "b gets the writes and the delete it missed")
    for f in fids[1:]:
        assert _get(a.url, f).content == body[f]
    assert _get(a.url, fids[0]).status_code == 404
    wait_until(lambda: _repairs(m).get("sync", 0) >= 1, 15, "the sync counted")
    assert re.search(r"repair: the 2 copies of volume %d differed; 11 record\(s\) copied "
                     r"\(1 deletion\(s\)" % vid, m.log_text()), m.log_text()[-3000:]
    # once level, the copies are not synced again
    n = _repairs(m)["sync"]
    fid, _ = put_file(m, b"one more", replication="001")
    wait_until(lambda: _get(b.url, fid).status_code == 200 or
               _get(a.url, fid).status_code == 200, 10, "write")
    assert _repairs(m)["sync"] == n


def test_bad_repair_flags_fail_at_start(tmp_path):
    for flag in ("-repairDelaySeconds=-1", "-repairMBps=-5", "-repairDelaySeconds=abc"):
        p = subprocess.run([find_binary(), "master", "-ip=127.0.0.1", "-port=0",
                            "-mdir=%s" % tmp_path, flag],
                           capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
        assert p.returncode != 0, flag
        err = p.stderr.decode()
        assert "repair" in err, (flag, err)


def test_repair_killed_mid_copy_is_retried(cluster):
    # 1 MB/s: a few MiB take seconds to copy, long enough to kill both ends mid-way
    m = cluster.master(extra=["-repairDelaySeconds=1", "-repairMBps=1"])
    vols = [cluster.volume(m, dc="dc1", rack="rack1", max_volumes=12) for _ in range(3)]
    a = assign(m, replication="001", count=6)
    vid, key, cookie = parse_fid(a["fid"])
    holders = _locations(m, vid)
    body = {}
    for i in range(6):
        fid = "%d,%x%08x" % (vid, key + i, cookie)
        body[fid] = bytes([i]) * (700 * 1024)
        r = upload(a["url"], fid, body[fid])
        assert r.status_code in (200, 201), r.text
    victim = next(v for v in vols if v.url == holders[0])
    spare = next(v for v in vols if v.url not in holders)
    victim.kill9()
    wait_until(lambda: "copying it from" in m.log_text(), 60, "a repair copy starts")
    wait_until(lambda: list(spare.dir.glob("*.copying")), 30, "the copy under way")
    spare.kill9()                 # the target dies mid-copy
    spare.start()
    assert "left by an unfinished volume copy" in spare.log_text()
    # no half volume: the target does not serve it until a repair completes
    m.kill9()                     # and the master too
    m.start()

    def healed():
        urls = _locations(m, vid)
        return len(urls) == 2 and victim.url not in urls
    wait_until(healed, 90, "the repair is retried and completes")
    for url in _locations(m, vid):
        wait_until(lambda: _get(url, next(iter(body))).status_code == 200, 15, "served")
        for fid, b in body.items():
            assert _get(url, fid).content == b, (url, fid)
    assert not list(spare.dir.glob("*.copying")), "temporary copy files left behind"
