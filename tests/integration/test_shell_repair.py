"""weedfs shell's repair commands against real daemons: volume.copy and volume.move (every
needle read back from the new place), volume.fix.replication after kill -9 of a server,
volume.check.disk on replicas that missed writes and a delete, volume.balance, volume.fsck
(an orphan needle and a missing chunk), -n dry runs and bad arguments. The master runs
with -repairDelaySeconds=0 (its automatic repair off) so nothing repairs behind the
shell's back."""

import os
import re

import requests

from conftest import assign, lookup_urls, parse_fid, upload, wait_until
from filer_fixtures import start_filer
from test_shell import server_volumes, shell


def _cluster(cluster, racks=("r1", "r1", "r2"), max_volumes=30):
    m = cluster.master(extra=["-repairDelaySeconds=0"])
    vols = [cluster.volume(m, dc="dc1", rack=r, max_volumes=max_volumes) for r in racks]
    return m, vols, start_filer(cluster, m)


def _write(m, n, **params):
    """n needles of distinct sizes; {fid: bytes}."""
    out = {}
    for i in range(n):
        a = assign(m, **params)
        data = os.urandom(1000 + 37 * i)
        r = upload(a["url"], a["fid"], data)
        assert r.status_code in (200, 201), r.text
        out[a["fid"]] = data
    return out


def _by_vid(written):
    by = {}
    for fid in written:
        by.setdefault(parse_fid(fid)[0], []).append(fid)
    return by


def _read_all(url, fids, written):
    for fid in fids:
        r = requests.get("http://%s/%s" % (url, fid), timeout=10)
        assert r.status_code == 200 and r.content == written[fid], (url, fid, r.status_code)


def _wait_locations(m, vid, want, what):
    return wait_until(lambda: (lambda u: u == sorted(want) and u)(lookup_urls(m, vid)), 30,
                      what)


def _refused(m, f, cmd, text):
    rc, out, err = shell(m, f, cmd)
    assert rc == 1 and text in err, (cmd, rc, out, err)


def test_copy_and_move(cluster):
    m, vols, f = _cluster(cluster)
    written = _write(m, 30, collection="cm")
    by = _by_vid(written)
    urls = [v.url for v in vols]
    vid, vid2 = sorted(by)[:2]
    src = lookup_urls(m, vid)[0]
    dst = next(u for u in urls if u != src)
    before = {u: server_volumes(u) for u in urls}

    # bad arguments: refused with a message, nothing changed
    for cmd, text in [
        ("lock; volume.copy -source=%s -target=%s" % (src, dst), "-volumeId is required"),
        ("lock; volume.copy -volumeId=%d -source=%s" % (vid, src), "-source and -target"),
        ("lock; volume.copy -volumeId=%d -source=%s -target=%s" % (vid, src, src),
         "the same server"),
        ("lock; volume.copy -volumeId=%d -source=%s -target=127.0.0.1:1" % (vid, src),
         "not a live volume server"),
        ("lock; volume.copy -volumeId=%d -source=%s -target=%s" % (vid, dst, src),
         "is not on %s" % dst),
        ("lock; volume.move -volumeId=abc -source=%s -target=%s" % (src, dst),
         "invalid value"),
        ("lock; volume.move -volumeId=%d -source=%s -target=%s -bogus" % (vid, src, dst),
         "unknown flag"),
        ("volume.copy -volumeId=%d -source=%s -target=%s" % (vid, src, dst),
         "run \"lock\" first"),
        ("lock; volume.balance -collection=nosuch", "has no volume"),
        ("lock; volume.check.disk -volumeId=99999", "not found"),
        ("volume.fsck -cutoffTimeAgo=soon", "invalid -cutoffTimeAgo"),
        ("volume.fsck -reallyDeleteFromVolume", "run \"lock\" first"),
        ("lock; volume.fix.replication -volumeIdFilter=x", "invalid value"),
    ]:
        _refused(m, f, cmd, text)
    _, out, _ = shell(m, f, "volume.copy -n -volumeId=%d -source=%s -target=%s"
                      % (vid, src, dst), expect=0)
    assert "would copy volume %d from %s to %s" % (vid, src, dst) in out
    assert {u: server_volumes(u) for u in urls} == before

    # copy: the target pulls it, every needle reads back byte for byte from there
    _, out, _ = shell(m, f, "lock; volume.copy -volumeId=%d -source=%s -target=%s"
                      % (vid, src, dst), expect=0)
    g = re.search(r"volume %d copied to %s: (\d+) bytes copied" % (vid, re.escape(dst)), out)
    assert g and int(g.group(1)) > sum(len(written[x]) for x in by[vid]), out
    _read_all(dst, by[vid], written)
    _read_all(src, by[vid], written)
    _wait_locations(m, vid, [src, dst], "the master to see the copy")
    _refused(m, f, "lock; volume.copy -volumeId=%d -source=%s -target=%s" % (vid, src, dst),
             "already on %s" % dst)

    # the copy made a 000 volume over-replicated: reported, -doDelete removes one copy
    _, out, _ = shell(m, f, "lock; volume.fix.replication -volumeIdFilter=%d" % vid, expect=0)
    assert "volume %d is over-replicated: 2 of 1 copies" % vid in out, out
    _, out, _ = shell(m, f, "volume.fix.replication -n -doDelete -volumeIdFilter=%d" % vid,
                      expect=0)
    assert "deleting volume %d from" % vid in out, out
    assert len(lookup_urls(m, vid)) == 2
    _, out, _ = shell(m, f, "lock; volume.fix.replication -doDelete -volumeIdFilter=%d" % vid,
                      expect=0)
    wait_until(lambda: len(lookup_urls(m, vid)) == 1, 30, "one copy left")
    _read_all(lookup_urls(m, vid)[0], by[vid], written)

    # move: the new place serves every needle, writable; the source copy is gone
    src2 = lookup_urls(m, vid2)[0]
    dst2 = next(u for u in urls if u != src2)
    _, out, _ = shell(m, f, "lock; volume.move -volumeId=%d -source=%s -target=%s"
                      % (vid2, src2, dst2), expect=0)
    assert "volume %d moved to %s" % (vid2, dst2) in out, out
    _read_all(dst2, by[vid2], written)
    assert vid2 not in server_volumes(src2)
    assert server_volumes(dst2)[vid2]["ReadOnly"] is False
    _wait_locations(m, vid2, [dst2], "the master to see the move")
    r = upload(dst2, "%d,%x%08x" % (vid2, 0x7777, 0x1234), b"after the move")
    assert r.status_code in (200, 201), r.text


def test_move_failure_leaves_the_source_serving(cluster):
    m, vols, f = _cluster(cluster, racks=("r1", "r1"))
    written = _write(m, 5, collection="mf")
    vid = parse_fid(next(iter(written)))[0]
    src = lookup_urls(m, vid)[0]
    dst = next(v for v in vols if v.url != src)
    dst.kill9()  # still listed by the master for a few pulses: the copy itself fails
    rc, out, err = shell(m, f, "lock; volume.move -volumeId=%d -source=%s -target=%s"
                         % (vid, src, dst.url))
    assert rc == 1 and "copying volume %d" % vid in err, (out, err)
    assert server_volumes(src)[vid]["ReadOnly"] is False
    _read_all(src, [x for x in written if parse_fid(x)[0] == vid], written)


def test_fix_replication_after_kill9(cluster):
    m, vols, f = _cluster(cluster)
    written = _write(m, 40, collection="fx", replication="010")
    by = _by_vid(written)
    victim = next(v for v in vols[:2] if any(v.url in lookup_urls(m, x) for x in by))
    spare = next(v for v in vols[:2] if v is not victim)
    # every fx volume on the victim, also those growth made but no write landed in
    hit = sorted(x for x, rec in server_volumes(victim.url).items()
                 if rec.get("Collection") == "fx")
    assert set(hit) & set(by)
    victim.kill9()
    wait_until(lambda: all(len(lookup_urls(m, x)) == 1 for x in hit), 60,
               "the master to drop the dead server's copies")
    _, out, _ = shell(m, f, "volume.fix.replication -n -collectionPattern=f*", expect=0)
    for x in hit:
        assert re.search(r"replicating volume %d from \S+ to %s" % (x, re.escape(spare.url)),
                         out), out
    assert all(len(lookup_urls(m, x)) == 1 for x in hit)
    _, out, _ = shell(m, f, "lock; volume.fix.replication", expect=0)
    assert "[%d/%d] volume" % (len(hit), len(hit)) in out, out
    assert "%d of %d volume copy(ies) done" % (len(hit), len(hit)) in out, out
    for x in set(by) | set(hit):
        urls = wait_until(lambda: (lambda u: len(u) == 2 and u)(lookup_urls(m, x)), 30,
                          "volume %d whole" % x)
        assert victim.url not in urls
        for u in urls:
            _read_all(u, by.get(x, []), written)
    _, out, _ = shell(m, f, "lock; volume.fix.replication", expect=0)
    assert "no volume is under- or over-replicated" in out


def test_check_disk_brings_replicas_level(cluster):
    m, (a, b), f = _cluster(cluster, racks=("r1", "r1"))
    a1 = assign(m, replication="001", count=20)
    vid, key, cookie = parse_fid(a1["fid"])
    fids = ["%d,%x%08x" % (vid, key + i, cookie) for i in range(20)]
    body = {x: b"needle %s " % x.encode() * 40 for x in fids}
    for x in fids[:10]:
        assert upload(a.url, x, body[x]).status_code in (200, 201)
    b.kill9()
    for x in fids[10:]:
        upload(a.url, x, body[x])  # b missed them: the client sees a 500
    requests.delete("http://%s/%s" % (a.url, fids[0]), timeout=10)
    b.start()
    _wait_locations(m, vid, [a.url, b.url], "b back with its copy")
    _, out, _ = shell(m, f, "volume.check.disk -n -volumeId=%d" % vid, expect=0)
    assert "volume %d: 2 replicas, 20 needle id(s)" % vid in out, out
    assert "would copy 11 record(s) (1 deletion(s))" in out, out
    assert [u for u in (a.url, b.url) if u + " lacks 11" in out] == [b.url], out
    assert a.url + " lacks 0" in out, out
    assert requests.get("http://%s/%s" % (b.url, fids[15]), timeout=10).status_code == 404
    assert requests.get("http://%s/%s" % (b.url, fids[0]), timeout=10).status_code == 200
    _, out, _ = shell(m, f, "lock; volume.check.disk", expect=0)
    assert re.search(r"volume %d: .*; copied 11 record\(s\) \(1 deletion\(s\), \d+ bytes\)"
                     % vid, out), out
    for u in (a.url, b.url):
        _read_all(u, fids[1:], body)
        assert requests.get("http://%s/%s" % (u, fids[0]), timeout=10).status_code == 404
    _, out, _ = shell(m, f, "lock; volume.check.disk -volumeId=%d" % vid, expect=0)
    assert "copied 0 record(s)" in out, out


def _counts(m, urls):
    st = requests.get("http://%s/dir/status" % m.url, timeout=10).json()
    out = {}
    for dc in st["Topology"]["DataCenters"]:
        for rack in dc["Racks"]:
            for dn in rack["DataNodes"]:
                out[dn["Url"]] = dn["Volumes"]
    return [out.get(u, -1) for u in urls]


def test_balance_evens_volume_counts(cluster):
    m = cluster.master(extra=["-repairDelaySeconds=0"])
    first = cluster.volume(m, dc="dc1", rack="r1", max_volumes=30)
    f = start_filer(cluster, m)
    written = {}
    for c in ("b1", "b2"):
        written.update(_write(m, 12, collection=c))
    more = [cluster.volume(m, dc="dc1", rack=r, max_volumes=30) for r in ("r1", "r2")]
    urls = [first.url] + [v.url for v in more]
    start = _counts(m, urls)
    assert start[0] >= 4 and start[1:] == [0, 0], start
    _, out, _ = shell(m, f, "volume.balance -n", expect=0)
    moves = re.findall(r"moving volume (\d+) from (\S+) to (\S+)", out)
    assert len(moves) >= 2 and all(s == first.url for _, s, _ in moves), out
    assert _counts(m, urls) == start
    _, out, _ = shell(m, f, "lock; volume.balance", expect=0)
    assert "%d of %d volume copy(ies) done" % (len(moves), len(moves)) in out, out
    wait_until(lambda: sum(_counts(m, urls)) == sum(start) and
               max(_counts(m, urls)) - min(_counts(m, urls)) <= 1, 30, "even counts")
    for fid, data in written.items():
        (u,) = lookup_urls(m, parse_fid(fid)[0])
        _read_all(u, [fid], written)
    _, out, _ = shell(m, f, "lock; volume.balance", expect=0)
    assert "nothing to move" in out


def test_fsck_orphans_and_missing_chunks(cluster):
    m, vols, f = _cluster(cluster)
    files = {"/fsck/a.bin": os.urandom(300000), "/fsck/sub/b.bin": os.urandom(200000)}
    for p, data in files.items():
        assert f.put(p, data).status_code in (200, 201)
    orphan = assign(m)
    assert upload(orphan["url"], orphan["fid"], b"nobody refers to me").status_code in (200, 201)
    chunk = f.api("lookup", {"path": "/fsck/sub/b.bin"})["chunks"][0]["fileId"]
    for u in lookup_urls(m, parse_fid(chunk)[0]):
        requests.delete("http://%s/%s?type=replicate" % (u, chunk), timeout=10)
    _, out, _ = shell(m, f, "volume.fsck -cutoffTimeAgo=0")
    orphans = [parse_fid(x) for x in re.findall(r"^orphan: volume \d+ needle (\S+)", out, re.M)]
    assert parse_fid(orphan["fid"]) in orphans, out
    assert "missing: /fsck/sub/b.bin chunk %s (deleted)" % chunk in out, out
    assert not any(parse_fid(c["fileId"]) in orphans for c in f.api("lookup", {"path": "/fsck/a.bin"})["chunks"])
    assert re.search(r"volume.fsck: \d+ orphan needle\(s\), 1 missing chunk\(s\)", out), out
    # the default cutoff leaves needles this young alone
    _, out, _ = shell(m, f, "volume.fsck")
    assert "orphan: volume %d needle" % parse_fid(orphan["fid"])[0] not in out, out
    blob = "http://%s/%s" % (orphan["url"], orphan["fid"])
    _refused(m, f, "volume.fsck -cutoffTimeAgo=0 -reallyDeleteFromVolume", "run \"lock\" first")
    assert requests.get(blob, timeout=10).status_code == 200
    _, out, _ = shell(m, f, "lock; volume.fsck -cutoffTimeAgo=0 -reallyDeleteFromVolume")
    assert "(deleting)" in out, out
    assert requests.get(blob, timeout=10).status_code == 404
    assert f.get("/fsck/a.bin").content == files["/fsck/a.bin"]
