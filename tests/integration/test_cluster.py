"""Topology: cold start, key sequence across master restarts, replica placement,
replicated writes and deletes, dead volume servers."""

import requests

from conftest import (assign, ci_get, json_error, lookup_urls, parse_fid, put_file, upload,
                      volume_records, wait_until, walk)


def test_cold_start_first_assign_grows(cluster):
    m = cluster.master()
    v = cluster.volume(m)
    # No volume exists yet.
    assert not list(v.dir.glob("*.dat"))
    j = requests.get("http://%s/status" % v.url).json()
    assert not [d for d in walk(j) if ci_get(d, "id", "volumeId") is not None
                and ci_get(d, "fileCount", "size") is not None]
    # The very first assignment waits for growth instead of failing.
    a = assign(m)
    assert a["url"] == v.url
    r = upload(a["url"], a["fid"], b"first")
    assert r.status_code in (200, 201), r.text
    assert list(v.dir.glob("*.dat"))


def test_assign_without_volume_servers_fails_cleanly(cluster):
    m = cluster.master()
    r = requests.get("http://%s/dir/assign" % m.url, timeout=60)
    assert r.status_code >= 400
    json_error(r)


def _keys(fids):
    return [parse_fid(f)[1] for f in fids]


def test_key_sequence_survives_master_restarts(cluster):
    m = cluster.master()
    v = cluster.volume(m)
    written = {}
    seen = []

    def round_(n, tag):
        for i in range(n):
            a = assign(m, count=2 if i % 3 == 0 else 1)
            seen.append(parse_fid(a["fid"])[1])
            if a["count"] == 2:
                seen.append(parse_fid(a["fid"])[1] + 1)
            body = b"%s-%d" % (tag, i)
            r = upload(a["url"], a["fid"], body)
            assert r.status_code in (200, 201), r.text
            written[a["fid"]] = body

    round_(20, b"a")
    m.stop()                      # clean restart
    m.start()
    cluster_wait = lambda: v.url in requests.get("http://%s/dir/status" % m.url).text  # noqa: E731
    wait_until(cluster_wait, 15, "volume server re-registers")
    round_(20, b"b")
    m.kill9()                     # crash: the sequence must still never go back
    m.start()
    wait_until(cluster_wait, 15, "volume server re-registers after kill -9")
    round_(20, b"c")
    # A crash right after assigning (nothing written yet with those keys).
    for _ in range(5):
        seen.append(parse_fid(assign(m)["fid"])[1])
    m.kill9()
    m.start()
    wait_until(cluster_wait, 15, "volume server re-registers after second kill -9")
    round_(10, b"d")

    assert len(seen) == len(set(seen)), "a file key was handed out twice: %s" % sorted(seen)
    for fid, body in written.items():
        r = requests.get("http://%s/%s" % (v.url, fid))
        assert r.status_code == 200 and r.content == body, fid


def _three_servers(cluster):
    m = cluster.master()
    vols = [
        cluster.volume(m, dc="dc1", rack="rack1", max_volumes=40),
        cluster.volume(m, dc="dc1", rack="rack1", max_volumes=40),
        cluster.volume(m, dc="dc1", rack="rack2", max_volumes=40),
    ]
    return m, vols


def test_replica_placement(cluster):
    m, (a1, a2, b1) = _three_servers(cluster)
    rack = {a1.url: "rack1", a2.url: "rack1", b1.url: "rack2"}

    a = assign(m, replication="000")
    assert len(lookup_urls(m, parse_fid(a["fid"])[0])) == 1

    for _ in range(3):
        a = assign(m, replication="001")
        urls = lookup_urls(m, parse_fid(a["fid"])[0])
        assert sorted(urls) == sorted([a1.url, a2.url]), urls

        a = assign(m, replication="010")
        urls = lookup_urls(m, parse_fid(a["fid"])[0])
        assert len(urls) == 2 and {rack[u] for u in urls} == {"rack1", "rack2"}, urls

    a = assign(m, replication="011")
    urls = lookup_urls(m, parse_fid(a["fid"])[0])
    assert sorted(urls) == sorted([a1.url, a2.url, b1.url])

    # The master's view agrees: each volume of 001 is on both rack1 servers.
    j = requests.get("http://%s/vol/status" % m.url).json()
    assert volume_records(j, parse_fid(a["fid"])[0])


def test_impossible_placement_is_a_clear_error(cluster):
    m, vols = _three_servers(cluster)
    for repl in ("200", "100", "002", "020"):
        r = assign(m, expect_ok=False, replication=repl)
        assert 400 <= r.status_code < 600 and r.status_code != 200, (repl, r.status_code, r.text)
        msg = json_error(r)
        assert msg, repl
    # It still works for a possible one afterwards.
    assign(m, replication="010")


def test_replicated_write_and_delete(cluster):
    m, (a1, a2, b1) = _three_servers(cluster)
    for repl in ("001", "010"):
        written = []
        for i in range(5):
            fid, url = put_file(m, b"replicated %s %d" % (repl.encode(), i), name="r.txt",
                                replication=repl)
            written.append((fid, url))
        for fid, url in written:
            urls = lookup_urls(m, parse_fid(fid)[0])
            assert len(urls) == 2
            for u in urls:
                r = requests.get("http://%s/%s" % (u, fid))
                assert r.status_code == 200, (u, fid, r.text)
                assert r.content.startswith(b"replicated " + repl.encode())
        # Delete through the replica that was NOT the upload target.
        for fid, url in written[:3]:
            urls = lookup_urls(m, parse_fid(fid)[0])
            other = [u for u in urls if u != url][0]
            r = requests.delete("http://%s/%s" % (other, fid))
            assert r.status_code in (200, 202), r.text
            for u in urls:
                assert requests.get("http://%s/%s" % (u, fid)).status_code == 404, (u, fid)
        for fid, url in written[3:]:
            for u in lookup_urls(m, parse_fid(fid)[0]):
                assert requests.get("http://%s/%s" % (u, fid)).status_code == 200


def test_replicated_write_fails_when_replica_down(cluster):
    m = cluster.master()
    v1 = cluster.volume(m, rack="r1")
    v2 = cluster.volume(m, rack="r1")
    a = assign(m, replication="001")
    vid = parse_fid(a["fid"])[0]
    assert sorted(lookup_urls(m, vid)) == sorted([v1.url, v2.url])
    v2.kill9()
    # At once (the master still lists v2) and after the master dropped v2: a write
    # through v1 cannot reach every replica, so it must not be acknowledged.
    for phase in ("replica unreachable", "replica dropped by the master"):
        if phase.endswith("master"):
            wait_until(lambda: lookup_urls(m, vid) == [v1.url], 15, "v2 dropped")
        r = requests.post("http://%s/%s" % (v1.url, a["fid"]),
                          files={"file": ("x", b"data")}, timeout=40)
        assert r.status_code >= 500, (phase, r.status_code, r.text)
        json_error(r)
    # With v2 back, the same write goes through to both.
    v2.start()
    wait_until(lambda: sorted(lookup_urls(m, vid)) == sorted([v1.url, v2.url]), 15, "v2 back")
    r = requests.post("http://%s/%s" % (v1.url, a["fid"]), files={"file": ("x", b"data")},
                      timeout=40)
    # 204 (unchanged) is fine for v1, which kept the failed attempt, but the
    # retry must still leave the data on every replica.
    assert r.status_code in (200, 201, 204), r.text
    for u in (v1.url, v2.url):
        r = requests.get("http://%s/%s" % (u, a["fid"]))
        assert r.status_code == 200 and r.content == b"data", (u, r.status_code, r.text)


def test_dead_volume_server_dropped_and_back(cluster):
    m = cluster.master()
    v1 = cluster.volume(m)
    v2 = cluster.volume(m)
    owner = {}
    for _ in range(30):
        a = assign(m)
        owner.setdefault(a["url"], parse_fid(a["fid"])[0])
        if len(owner) == 2:
            break
    assert set(owner) == {v1.url, v2.url}, "assignments never reached both servers: %s" % owner
    vid2 = owner[v2.url]

    v2.pause()  # heartbeats stop
    try:
        wait_until(lambda: v2.url not in lookup_urls(m, vid2), 15,
                   "frozen server dropped from lookup of volume %d" % vid2)
        r = requests.get("http://%s/dir/lookup" % m.url, params={"volumeId": vid2})
        assert r.status_code == 404 or not r.json().get("locations")
        for _ in range(20):
            assert assign(m)["url"] == v1.url
    finally:
        v2.resume()
    wait_until(lambda: v2.url in lookup_urls(m, vid2), 15, "resumed server back in lookup")

    # A killed server is dropped too, and a restart on the same dir brings it back.
    v2.kill9()
    wait_until(lambda: v2.url not in lookup_urls(m, vid2), 15, "killed server dropped")
    for _ in range(10):
        assert assign(m)["url"] == v1.url
    v2.start()
    wait_until(lambda: v2.url in lookup_urls(m, vid2), 15, "restarted server back in lookup")
    seen = {assign(m)["url"] for _ in range(40)}
    assert v2.url in seen, "restarted server never assigned to again"


def test_public_url_is_what_clients_are_told(cluster):
    m = cluster.master()
    port = __import__("conftest").free_port()
    v = cluster.volume(m, port=port, extra=["-publicUrl=localhost:%d" % port])
    a = assign(m)
    assert a["url"] == v.url
    assert a["publicUrl"] == "localhost:%d" % port
    r = requests.get("http://%s/dir/lookup" % m.url, params={"volumeId": a["fid"]}).json()
    assert r["locations"][0]["publicUrl"] == "localhost:%d" % port


def test_volume_server_started_before_master(cluster):
    from conftest import free_port
    mport = free_port()

    class FutureMaster:
        url = "127.0.0.1:%d" % mport

    # The volume server comes up without its master and keeps trying.
    v = cluster.volume(FutureMaster, wait_registered=False)
    m = cluster.master(port=mport)
    v.master = m
    wait_until(lambda: v.url in requests.get("http://%s/dir/status" % m.url).text, 20,
               "late master learns the volume server")
    fid, url = put_file(m, b"late master")
    assert url == v.url
    assert requests.get("http://%s/%s" % (url, fid)).content == b"late master"
