"""Erasure coding against real daemons: weedfs shell's ec.encode spreads a sealed volume's
14 shards over seven volume servers in three racks; every needle reads back from every
holder; a delete is journaled on all of them; four shards are lost (one server stopped,
another's shard files deleted) and every needle still reads; ec.rebuild regenerates the
lost shards; ec.decode gives back a normal volume whose .dat is byte for byte the original.
Also: bad arguments and unsealed volumes are refused, and a volume server killed in the
middle of generating shards keeps serving the original volume."""

import os
import re
import shutil
import threading

import requests

from conftest import assign, parse_fid, upload, wait_until
from filer_fixtures import start_filer
from test_shell import server_volumes, shell


def _cluster(cluster, n=7):
    m = cluster.master(extra=["-repairDelaySeconds=0"])
    racks = ["r%d" % (i % 3 + 1) for i in range(n)]
    vols = [cluster.volume(m, dc="dc1", rack=r, max_volumes=10) for r in racks]
    return m, vols, start_filer(cluster, m)


def _fill(m, count, size_of):
    """count needles in one volume; returns (vid, {fid: bytes})."""
    a = assign(m, collection="ec", count=count)
    vid, key, cookie = parse_fid(a["fid"])
    written = {}
    for i in range(count):
        fid = "%d,%x%08x" % (vid, key + i, cookie)
        data = os.urandom(size_of(i))
        r = upload(a["url"], fid, data)
        assert r.status_code in (200, 201), r.text
        written[fid] = data
    return vid, a["url"], written


def _ec_lookup(m, vid):
    r = requests.get("http://%s/vol/ec/lookup?volumeId=%d" % (m.url, vid), timeout=10)
    if r.status_code != 200:
        return {}
    return {s["shard"]: [x["url"] for x in s["locations"]] for s in r.json()["shards"]}


def _read_all(url, written, gone=()):
    for fid, data in written.items():
        r = requests.get("http://%s/%s" % (url, fid), timeout=30)
        if fid in gone:
            assert r.status_code == 404, (url, fid, r.status_code)
        else:
            assert r.status_code == 200 and r.content == data, (url, fid, r.status_code)


def _dat_path(v, vid):
    return os.path.join(str(v.dir), "ec_%d.dat" % vid)


def test_encode_lose_rebuild_decode(cluster, tmp_path):
    m, vols, f = _cluster(cluster)
    by_url = {v.url: v for v in vols}
    vid, src_url, written = _fill(m, 80, lambda i: 100 + (i * 7919) % 300000)
    src = by_url[src_url]

    # bad arguments and an unsealed volume: refused, nothing changed
    for cmd, text in [
        ("lock; ec.encode", "exactly one of -volumeId and -collection"),
        ("lock; ec.encode -volumeId=%d -collection=ec" % vid, "exactly one of"),
        ("lock; ec.encode -volumeId=abc", "invalid value"),
        ("lock; ec.encode -volumeId=%d" % vid, "is not sealed"),
        ("lock; ec.encode -volumeId=99999", "not found"),
        ("ec.encode -volumeId=%d" % vid, "lock"),
        ("lock; ec.decode -volumeId=%d" % vid, "is not erasure coded"),
        ("lock; ec.rebuild -bogus", "bogus"),
    ]:
        rc, out, err = shell(m, f, cmd)
        assert rc == 1 and text in err, (cmd, rc, out, err)
    assert vid in server_volumes(src.url)
    assert _ec_lookup(m, vid) == {}

    shell(m, f, "lock; volume.mark -readonly -volumeId=%d" % vid, expect=0)
    original = tmp_path / "original.dat"
    shutil.copyfile(_dat_path(src, vid), original)
    _, out, _ = shell(m, f, "ec.encode -n -volumeId=%d" % vid, expect=0)
    assert "planned; nothing changed" in out, out
    assert _ec_lookup(m, vid) == {}

    _, out, _ = shell(m, f, "lock; ec.encode -volumeId=%d" % vid, expect=0)
    assert "volume %d erasure coded" % vid in out, out
    shards = wait_until(lambda: (lambda s: len(s) == 14 and s)(_ec_lookup(m, vid)), 30,
                        "14 shards at the master")
    holders = sorted({u for urls in shards.values() for u in urls})
    assert len(holders) == 7, shards
    per_rack = {}
    for s, urls in shards.items():
        for u in urls:
            per_rack[by_url[u].rack] = per_rack.get(by_url[u].rack, 0) + 1
    assert max(per_rack.values()) <= 5, per_rack  # 14 over 3 racks: 5, 5, 4
    for v in vols:  # the original is gone everywhere
        assert vid not in server_volumes(v.url)
        assert not os.path.exists(_dat_path(v, vid))
    for u in holders:
        _read_all(u, written)
    _, out, _ = shell(m, f, "volume.list -volumeId=%d" % vid, expect=0)
    listed = re.findall(r"ec volume id:%d collection:\"ec\" shards:\[([\d ]+)\]" % vid, out)
    assert sorted(int(x) for line in listed for x in line.split()) == list(range(14)), out
    # the master points readers at the shard holders
    r = requests.get("http://%s/dir/lookup?volumeId=%d" % (m.url, vid), timeout=10).json()
    assert sorted(x["url"] for x in r["locations"]) == holders

    # a damaged byte in a shard is caught by the needle's CRC and read around, never served
    h0 = by_url[shards[0][0]]
    ec00 = os.path.join(str(h0.dir), "ec_%d.ec00" % vid)
    with open(ec00, "r+b") as fh:
        fh.seek(4096)
        good = fh.read(1)
        fh.seek(4096)
        fh.write(bytes([good[0] ^ 0x5A]))
    for u in (h0.url, next(u for u in holders if u != h0.url)):
        _read_all(u, written)
    assert "failed its check, reconstructing" in h0.log_text()
    with open(ec00, "r+b") as fh:
        fh.seek(4096)
        fh.write(good)

    # a delete is journaled on every holder
    gone = sorted(written)[:2]
    for fid in gone:
        r = requests.delete("http://%s/%s" % (holders[0], fid), timeout=10)
        assert r.status_code == 202, r.text
    for u in holders:
        _read_all(u, written, gone)
    # a wrong cookie reads as absent and deletes nothing
    fid = sorted(written)[5]
    bad = fid[:-8] + "%08x" % ((int(fid[-8:], 16) + 1) & 0xFFFFFFFF)
    assert requests.get("http://%s/%s" % (holders[1], bad), timeout=10).status_code == 404
    assert requests.delete("http://%s/%s" % (holders[1], bad), timeout=10).status_code == 404

    # lose four shards: one server stops, another loses its shard files
    two = [u for u in holders if sum(u in urls for urls in shards.values()) == 2]
    down, wiped = by_url[two[0]], by_url[two[1]]
    down.stop()
    wiped.stop()
    for name in os.listdir(str(wiped.dir)):
        if re.match(r"ec_%d\.ec\d\d$" % vid, name):
            os.unlink(os.path.join(str(wiped.dir), name))
    cluster.restart(wiped)
    wait_until(lambda: len(_ec_lookup(m, vid)) == 10, 60, "the master to see 10 shards")
    live = [u for u in holders if u != down.url]
    for u in live:
        _read_all(u, written, gone)

    rc, out, _ = shell(m, f, "cluster.check")
    assert rc == 1 and "ec volume %d: 10 of 14 shards (missing" % vid in out, out
    _, out, _ = shell(m, f, "ec.rebuild -n", expect=0)
    assert re.search(r"volume %d: rebuilding shards [\d,]+ on" % vid, out), out
    _, out, _ = shell(m, f, "lock; ec.rebuild", expect=0)
    assert re.search(r"rebuilt shards [\d,]+ on", out), out
    wait_until(lambda: len(_ec_lookup(m, vid)) == 14, 30, "14 shards after the rebuild")
    _, out, _ = shell(m, f, "lock; ec.rebuild", expect=0)
    assert "every shard of 1 EC volume(s) is in place" in out, out
    for u in live:
        _read_all(u, written, gone)

    _, out, _ = shell(m, f, "lock; ec.balance -n", expect=0)
    assert "shard move(s)" in out, out

    _, out, _ = shell(m, f, "lock; ec.decode -volumeId=%d" % vid, expect=0)
    m_dec = re.search(r"volume %d is a normal volume again on (\S+)" % vid, out)
    assert m_dec, out
    target = by_url[m_dec.group(1)]
    wait_until(lambda: _ec_lookup(m, vid) == {}, 30, "the shards to be gone")
    _read_all(target.url, written, gone)
    with open(_dat_path(target, vid), "rb") as a, open(original, "rb") as b:
        assert a.read() == b.read(), "the decoded .dat differs from the original"
    for v in vols:
        if v is not down:
            assert not [n for n in os.listdir(str(v.dir)) if ".ec" in n or ".vif" in n], v.dir
    down.start()


def _kill_at_first_tmp(servers, action):
    """Runs action() while a watcher kill -9s whichever of servers first shows a .tmp file
    (a shard, index or .dat being written) in its directory; returns that server."""
    stop = threading.Event()
    killed = []

    def watch():
        while not stop.is_set():
            for v in servers:
                if v.alive() and any(n.endswith(".tmp") for n in os.listdir(str(v.dir))):
                    v.kill9()
                    killed.append(v)
                    return

    t = threading.Thread(target=watch)
    t.start()
    try:
        action()
    finally:
        stop.set()
        t.join()
    assert killed, "no .tmp file was seen while %s ran" % action
    return killed[0]


def test_kill9_during_rebuild_and_decode(cluster):
    m, vols, f = _cluster(cluster, n=3)
    by_url = {v.url: v for v in vols}
    vid, _, written = _fill(m, 40, lambda i: (1 << 20) + 13 * i)
    shell(m, f, "lock; volume.mark -readonly -volumeId=%d" % vid, expect=0)
    shell(m, f, "lock; ec.encode -volumeId=%d" % vid, expect=0)
    shards = wait_until(lambda: (lambda s: len(s) == 14 and s)(_ec_lookup(m, vid)), 30,
                        "14 shards")
    count = {u: sum(u in urls for urls in shards.values()) for u in by_url}
    wiped = by_url[min(count, key=count.get)]  # 4 shards: 10 stay
    wiped.stop()
    for name in os.listdir(str(wiped.dir)):
        if name.startswith("ec_%d." % vid):
            os.unlink(os.path.join(str(wiped.dir), name))
    cluster.restart(wiped)
    wait_until(lambda: len(_ec_lookup(m, vid)) == 10, 60, "10 shards")
    rebuilder = _kill_at_first_tmp([v for v in vols if v is not wiped],
                                   lambda: shell(m, f, "lock; ec.rebuild"))
    cluster.restart(rebuilder)
    wait_until(lambda: len(_ec_lookup(m, vid)) >= 10, 60, "the shards back")
    for u in by_url:
        _read_all(u, written)
    shell(m, f, "lock; ec.rebuild", expect=0)
    wait_until(lambda: len(_ec_lookup(m, vid)) == 14, 30, "14 shards after the rebuild")

    decoder = _kill_at_first_tmp(vols, lambda: shell(m, f, "lock; ec.decode -volumeId=%d" % vid))
    cluster.restart(decoder)
    wait_until(lambda: len(_ec_lookup(m, vid)) == 14, 60, "the shards back after the kill")
    for u in by_url:
        _read_all(u, written)
    _, out, _ = shell(m, f, "lock; ec.decode -volumeId=%d" % vid, expect=0)
    target = re.search(r"volume %d is a normal volume again on (\S+)" % vid, out).group(1)
    wait_until(lambda: _ec_lookup(m, vid) == {}, 30, "the shards to be gone")
    _read_all(target, written)


def test_kill9_during_generate_keeps_the_volume(cluster):
    m, vols, f = _cluster(cluster, n=3)
    by_url = {v.url: v for v in vols}
    vid, src_url, written = _fill(m, 48, lambda i: (1 << 20) + i)
    src = by_url[src_url]
    shell(m, f, "lock; volume.mark -readonly -volumeId=%d" % vid, expect=0)

    def generate():
        try:
            requests.post("http://%s/admin/ec/generate?volume=%d" % (src.url, vid), timeout=120)
        except requests.RequestException:
            pass  # the server died under the request

    _kill_at_first_tmp([src], generate)
    cluster.restart(src)
    assert not [n for n in os.listdir(str(src.dir)) if n.endswith(".tmp")]
    _read_all(src.url, written)
    assert vid in server_volumes(src.url)
    # the seal survived the restart, and a fresh encode after the tear works
    st = requests.get("http://%s/admin/volume/status?volume=%d" % (src.url, vid), timeout=10)
    assert st.json()["readOnly"] is True, st.text
    _, out, _ = shell(m, f, "lock; ec.encode -volumeId=%d" % vid, expect=0)
    assert "volume %d erasure coded" % vid in out, out
    wait_until(lambda: len(_ec_lookup(m, vid)) == 14, 30, "14 shards")
    for u in by_url:
        _read_all(u, written)


def test_admin_ec_bad_requests(cluster):
    m, vols, f = _cluster(cluster, n=1)
    v = vols[0]
    base = "http://%s/admin/ec/" % v.url
    for method, path, code in [
        ("POST", "generate", 400),                       # no volume
        ("POST", "generate?volume=abc", 400),
        ("POST", "generate?volume=77", 404),
        ("GET", "generate?volume=77", 405),
        ("POST", "copy?volume=77&shards=0&source=127.0.0.1:1", 502),
        ("POST", "copy?volume=77&shards=14&source=127.0.0.1:1", 400),
        ("POST", "copy?volume=77&shards=&source=127.0.0.1:1", 400),
        ("POST", "copy?volume=77&shards=1,x&source=127.0.0.1:1", 400),
        ("POST", "copy?volume=77&shards=1&source=nohost", 400),
        ("POST", "copy?volume=77&shards=1&source=%s" % v.url, 400),
        ("POST", "delete?volume=77&shards=1", 404),
        ("POST", "rebuild?volume=77", 404),
        ("POST", "to_volume?volume=77", 404),
        ("POST", "blob_delete?volume=77&key=1", 404),
        ("POST", "blob_delete?volume=77", 400),
        ("GET", "shard_read?volume=77&shard=0&offset=0&size=10", 404),
        ("GET", "shard_read?volume=77&shard=14&offset=0&size=10", 400),
        ("GET", "shard_read?volume=77&shard=0&offset=0&size=999999999", 400),
        ("GET", "file?volume=77&ext=dat", 400),
        ("GET", "file?volume=77&ext=ecx", 404),
        ("GET", "status?volume=77", 404),
        ("POST", "nosuch?volume=77", 404),
    ]:
        r = requests.request(method, base + path, timeout=10)
        assert r.status_code == code, (method, path, r.status_code, r.text)
        assert r.text.strip(), (method, path)
    # the master's EC lookup refuses garbage
    for q, code in [("", 400), ("volumeId=x", 400), ("volumeId=5", 404)]:
        r = requests.get("http://%s/vol/ec/lookup?%s" % (m.url, q), timeout=10)
        assert r.status_code == code, (q, r.status_code, r.text)
    # a heartbeat with a bad ecShards entry is refused, the server stays registered
    r = requests.post("http://%s/heartbeat" % m.url, timeout=10,
                      json={"ip": "127.0.0.1", "port": 1, "ecShards": [{"id": 1, "shards": 1 << 14}]})
    assert r.status_code == 400, r.text


def test_filer_reads_files_on_an_encoded_volume(cluster):
    """The filer's reads (short-circuit first, then HTTP) find the chunks of an encoded
    volume through /dir/lookup's shard holders, and a delete through the filer reaches
    the journal."""
    m, vols, f = _cluster(cluster, n=3)
    files = {"/ec/%d.bin" % i: os.urandom(50000 + 977 * i) for i in range(12)}
    for p, data in files.items():
        assert f.put(p, data).status_code in (200, 201)
    vids = {parse_fid(c["fileId"])[0] for p in files
            for c in f.api("lookup", {"path": p})["chunks"]}
    for vid in vids:
        shell(m, f, "lock; volume.mark -readonly -volumeId=%d; ec.encode -volumeId=%d"
              % (vid, vid), expect=0)
    for vid in vids:
        wait_until(lambda: len(_ec_lookup(m, vid)) == 14, 30, "14 shards of %d" % vid)
    for p, data in files.items():
        r = f.get(p)
        assert r.status_code == 200 and r.content == data, (p, r.status_code)
    victim = sorted(files)[0]
    chunk = f.api("lookup", {"path": victim})["chunks"][0]["fileId"]
    assert f.delete(victim).status_code in (200, 204)
    holders = sorted({u for urls in _ec_lookup(m, parse_fid(chunk)[0]).values() for u in urls})
    wait_until(lambda: all(requests.get("http://%s/%s" % (u, chunk), timeout=10).status_code
                           == 404 for u in holders), 30, "the chunk's deletion journaled")
