"""Prometheus metrics and status pages of every daemon (docs/metrics.md).

Each daemon runs with -metricsPort; the test drives a known number of requests,
scrapes /metrics, parses it with the real Prometheus text parser
(prometheus_client) and checks that counters moved by exactly what was sent,
that histograms agree with the counters, and that the gauges describe the
cluster. Status pages (/cluster/status, /status, /) are checked for their fields.
"""

import os
import socket
import time

import boto3
import pytest
import requests
from botocore.config import Config
from prometheus_client.parser import text_string_to_metric_families

from conftest import READY_TIMEOUT, Daemon, assign, free_port, wait_until
from filer_fixtures import start_filer, start_mini_with_filer
from mount_fixtures import start_mount


def scrape(url):
    """{(sample name, frozenset(labels)): value} of http://url/metrics, parsed strictly."""
    r = requests.get("http://%s/metrics" % url, timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    out = {}
    for fam in text_string_to_metric_families(r.text):
        assert fam.documentation or fam.name, fam
        for s in fam.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in out, "sample %s twice" % (key,)
            out[key] = s.value
    return out


def val(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples, name, **labels):
    """The sum over every series of name whose labels include the given ones."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


def check_histograms(samples):
    """Every histogram: cumulative buckets, +Inf bucket == _count."""
    for (n, ls), v in samples.items():
        if not n.endswith("_count"):
            continue
        base = n[: -len("_count")]
        buckets = sorted((float(dict(l)["le"]), bv) for (bn, l), bv in samples.items()
                         if bn == base + "_bucket" and ls <= l
                         and set(l) - ls == {("le", dict(l)["le"])})
        assert buckets, "no buckets for %s %s" % (n, dict(ls))
        assert buckets[-1][0] == float("inf") and buckets[-1][1] == v, (n, dict(ls))
        counts = [b for _, b in buckets]
        assert counts == sorted(counts), (n, dict(ls), counts)


def metrics_port_of(d):
    return "127.0.0.1:%d" % d.metrics_port


def with_metrics(extra=()):
    port = free_port()
    return port, ["-metricsPort=%d" % port] + list(extra)


def start_cluster(cluster, volume_metrics=False):
    mport, mextra = with_metrics()
    m = cluster.master(extra=mextra)
    m.metrics_port = mport
    vport, vextra = with_metrics()
    v = cluster.volume(m, max_volumes=4, extra=vextra if volume_metrics else ())
    v.metrics_port = vport
    return m, v


def test_master_metrics_and_cluster_status(cluster):
    m, v = start_cluster(cluster)
    n = 5
    before = scrape(m.url)
    for _ in range(n):
        assign(m)
    after = scrape(m.url)
    req = "weedfs_master_http_requests_total"
    labels = dict(method="GET", route="/dir/assign", code="200")
    assert val(after, req, **labels) - val(before, req, **labels) == n
    assert (val(after, "weedfs_master_assigns_total")
            - val(before, "weedfs_master_assigns_total")) == n
    # the latency histogram saw every request of the route, whatever its code
    hist = "weedfs_master_http_request_duration_seconds_count"
    assert val(after, hist, method="GET", route="/dir/assign") == total(
        after, req, method="GET", route="/dir/assign")
    check_histograms(after)
    assert val(after, "weedfs_master_data_nodes") == 1
    assert val(after, "weedfs_master_volumes") >= 1
    assert val(after, "weedfs_master_volume_slots") == 4
    assert (val(after, "weedfs_master_free_volume_slots")
            == 4 - val(after, "weedfs_master_volumes"))
    for kind in ("copy", "sync"):  # registered at 0 once the repair thread runs
        assert ("weedfs_master_replication_repairs_total",
                frozenset({("kind", kind)})) in after
    # a file id's path never becomes a label value
    requests.get("http://%s/3,01637037d6" % m.url, allow_redirects=False, timeout=5)
    routes = {dict(ls).get("route") for (n_, ls) in scrape(m.url) if n_ == req}
    assert not any(r and "," in r for r in routes), routes
    assert "other" in routes

    r = requests.get("http://%s/cluster/status" % m.url, timeout=5)
    assert r.status_code == 200
    j = r.json()
    assert j["IsLeader"] is True and j["Leader"] == m.url and j["Peers"] == []

    # the metrics port: the same registry, and a status page
    mp = scrape(metrics_port_of(m))
    assert val(mp, "weedfs_master_assigns_total") >= n
    st = requests.get("http://%s/status" % metrics_port_of(m), timeout=5).json()
    assert st["IsLeader"] is True and st["Leader"] == m.url and st["Version"]
    page = requests.get("http://%s/" % metrics_port_of(m), timeout=5)
    assert page.status_code == 200 and "text/html" in page.headers["Content-Type"]
    assert v.url in page.text


def test_volume_metrics_and_status(cluster):
    m, v = start_cluster(cluster, volume_metrics=True)
    mp = metrics_port_of(v)
    # the main port's paths are file ids: no /metrics there
    assert requests.get("http://%s/metrics" % v.url, timeout=5).status_code != 200
    before = scrape(mp)
    n, data = 4, b"x" * 1000
    fids = []
    for _ in range(n):
        a = assign(m)
        r = requests.put("http://%s/%s" % (a["url"], a["fid"]), data=data, timeout=10)
        assert r.status_code == 201, r.text
        fids.append(a["fid"])
    for fid in fids:
        assert requests.get("http://%s/%s" % (v.url, fid), timeout=10).content == data
    after = scrape(mp)
    req = "weedfs_volume_http_requests_total"
    for method, code in (("PUT", "201"), ("GET", "200")):
        d = (val(after, req, method=method, route="fid", code=code)
             - val(before, req, method=method, route="fid", code=code))
        assert d == n, (method, code, d)
        assert (val(after, "weedfs_volume_http_request_duration_seconds_count",
                    method=method, route="fid")
                == total(after, req, method=method, route="fid"))
    check_histograms(after)
    assert (val(after, "weedfs_volume_http_received_bytes_total", route="fid")
            - val(before, "weedfs_volume_http_received_bytes_total", route="fid")) > n * len(data)
    assert (val(after, "weedfs_volume_http_sent_bytes_total", route="fid")
            - val(before, "weedfs_volume_http_sent_bytes_total", route="fid")) > n * len(data)
    vids = {f.split(",")[0] for f in fids}
    files = sum(val(after, "weedfs_volume_volume_files", volume=vid, collection="")
                for vid in vids)
    assert files == n
    for vid in vids:
        assert val(after, "weedfs_volume_volume_size_bytes", volume=vid, collection="") > 0
    nvol = val(after, "weedfs_volume_volumes")
    assert nvol >= 1
    assert val(after, "weedfs_volume_max_volumes") == 4
    assert val(after, "weedfs_volume_free_volume_slots") == 4 - nvol
    assert val(after, "weedfs_volume_read_only_volumes") == 0

    # read-only flags show on the status page and in the gauge
    vid = sorted(vids)[0]
    r = requests.post("http://%s/admin/volume/readonly" % v.url,
                      params={"volume": vid, "readonly": "true"}, timeout=5)
    assert r.status_code == 200, r.text
    assert val(scrape(mp), "weedfs_volume_read_only_volumes") == 1
    for url in (v.url, mp):
        page = requests.get("http://%s/ui/index.html" % url, timeout=5)
        assert page.status_code == 200 and "text/html" in page.headers["Content-Type"]
        assert "<td>%s</td>" % vid in page.text and "true" in page.text
        assert str(v.dir) in page.text
    st = requests.get("http://%s/status" % mp, timeout=5).json()
    assert {str(x["Id"]) for x in st["Volumes"]} >= vids
    assert st["DiskStatuses"] and st["Version"]


def test_filer_metrics_and_status(cluster):
    m, v = start_cluster(cluster)
    fport, fextra = with_metrics()
    f = start_filer(cluster, m, extra=fextra)
    mp = "127.0.0.1:%d" % fport
    # on the filer's main port /metrics is a file path
    assert requests.get(f.u("/metrics"), timeout=5).status_code == 404
    before = scrape(mp)
    n = 3
    for i in range(n):
        assert f.put("/m/f%d.txt" % i, b"hello %d" % i).status_code == 201
    after = scrape(mp)
    req = "weedfs_filer_http_requests_total"
    assert (val(after, req, method="PUT", route="path", code="201")
            - val(before, req, method="PUT", route="path", code="201")) == n
    assert not any("f0.txt" in str(ls) for (_, ls) in after)
    check_histograms(after)
    store = "weedfs_filer_store_duration_seconds_count"
    assert val(after, store, op="insert") - val(before, store, op="insert") >= n
    assert val(after, store, op="find") > val(before, store, op="find")
    assert ("weedfs_filer_store_errors_total", frozenset({("op", "insert")})) not in after
    assert val(after, "weedfs_filer_subscribers") == 0

    # an event-stream subscriber shows while it is connected
    sub = requests.get(f.u("/.meta/subscribe"), params={"pathPrefix": "/m"}, stream=True,
                       timeout=30)
    assert sub.status_code == 200
    next(sub.iter_lines())
    wait_until(lambda: val(scrape(mp), "weedfs_filer_subscribers") == 1, 10,
               "subscriber never counted")
    sub.close()
    wait_until(lambda: val(scrape(mp), "weedfs_filer_subscribers") == 0, 20,
               "subscriber never uncounted")

    st = requests.get("http://%s/status" % mp, timeout=5).json()
    assert st["Daemon"] == "filer" and st["Url"] == f.url and st["Store"] == "sqlite"
    assert st["Master"] == m.url and st["Peers"] == [m.url]
    assert st["Version"] and st["UptimeSeconds"] > 0
    page = requests.get("http://%s/" % mp, timeout=5)
    assert "text/html" in page.headers["Content-Type"] and m.url in page.text


def test_s3_metrics_by_operation(cluster):
    from s3_fixtures import start_gateway
    m, v = start_cluster(cluster)
    f = start_filer(cluster, m)
    sport, sextra = with_metrics()
    g = start_gateway(cluster, f, extra=sextra).start()
    mp = "127.0.0.1:%d" % sport
    # on the gateway's main port /metrics is a bucket (here: none)
    r = requests.get("http://%s/metrics" % g.url, timeout=5)
    assert r.status_code == 404 and "weedfs_" not in r.text
    s3 = boto3.client("s3", endpoint_url="http://%s" % g.url, aws_access_key_id="x",
                      aws_secret_access_key="y", region_name="us-east-1",
                      config=Config(retries={"max_attempts": 1}))
    s3.create_bucket(Bucket="mbk")
    before = scrape(mp)
    n = 4
    for i in range(n):
        s3.put_object(Bucket="mbk", Key="dir/k%d" % i, Body=b"v%d" % i)
    for i in range(n):
        assert s3.get_object(Bucket="mbk", Key="dir/k%d" % i)["Body"].read() == b"v%d" % i
    s3.list_objects_v2(Bucket="mbk")
    with pytest.raises(s3.exceptions.NoSuchKey):
        s3.get_object(Bucket="mbk", Key="absent")
    after = scrape(mp)
    req = "weedfs_s3_http_requests_total"

    def delta(**ls):
        return val(after, req, **ls) - val(before, req, **ls)

    assert delta(method="PUT", route="PutObject", code="200") == n
    assert delta(method="GET", route="GetObject", code="200") == n
    assert delta(method="GET", route="GetObject", code="404") == 1
    assert delta(method="GET", route="ListObjectsV2", code="200") == 1
    assert not any("k0" in str(ls) for (_, ls) in after)
    check_histograms(after)
    st = requests.get("http://%s/status" % mp, timeout=5).json()
    assert st["Daemon"] == "s3" and st["Url"] == g.url and st["Filer"] == f.url
    assert st["Peers"] == [f.url] and st["Version"] and st["UptimeSeconds"] > 0


def test_mini_one_metrics_port(cluster):
    port, extra = with_metrics(["-s3=true"])
    mini, f = start_mini_with_filer(cluster, extra=extra)
    mp = "127.0.0.1:%d" % port
    data = os.urandom(200 * 1024)  # not inlined in the entry: a chunk on the volume server
    assert f.put("/x/a.bin", data).status_code == 201
    assert f.get("/x/a.bin").content == data
    assert requests.get("http://127.0.0.1:%d/" % mini.s3_port, timeout=5).status_code == 200
    s = scrape(mp)
    for prefix in ("weedfs_master_", "weedfs_volume_", "weedfs_filer_", "weedfs_s3_"):
        assert any(n.startswith(prefix) for (n, _) in s), prefix
    assert val(s, "weedfs_filer_http_requests_total", method="PUT", route="path",
               code="201") == 1
    assert total(s, "weedfs_volume_http_requests_total", method="PUT", route="fid") >= 1
    assert val(s, "weedfs_s3_http_requests_total", method="GET", route="ListBuckets",
               code="200") == 1
    assert val(s, "weedfs_volume_volumes") >= 1
    check_histograms(s)
    st = requests.get("http://%s/status" % mp, timeout=5).json()
    assert st["Daemon"] == "mini" and st["Filer"] == f.url
    assert st["Master"] == "127.0.0.1:%d" % mini.port


def test_mount_cache_metrics(cluster):
    mini, f = start_mini_with_filer(cluster)
    port = free_port()
    mnt = start_mount(cluster, f.url, extra=["-metricsPort=%d" % port])
    mp = "127.0.0.1:%d" % port
    wait_until(lambda: requests.get("http://%s/status" % mp, timeout=2).ok, READY_TIMEOUT,
               "mount metrics port")
    data = os.urandom(300 * 1024)
    assert f.put("/cold.bin", data).status_code == 201

    def read_uncached():
        fd = os.open(mnt.p("cold.bin"), os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # not from the page cache
            got = b""
            while True:
                b = os.read(fd, 1 << 20)
                if not b:
                    break
                got += b
        finally:
            os.close(fd)
        assert got == data

    s0 = scrape(mp)
    read_uncached()
    s1 = scrape(mp)
    hits = "weedfs_mount_chunk_cache_hits_total"
    miss = "weedfs_mount_chunk_cache_misses_total"
    assert val(s1, miss) > val(s0, miss)
    assert val(s1, "weedfs_mount_read_bytes_total") - val(s0, "weedfs_mount_read_bytes_total") \
        >= len(data)
    read_uncached()
    s2 = scrape(mp)
    assert total(s2, hits) > total(s1, hits)
    assert val(s2, miss) == val(s1, miss)
    assert val(s2, "weedfs_mount_read_bytes_total") == val(s1, "weedfs_mount_read_bytes_total")

    # writes: dirty bytes while held, written bytes once uploaded
    with open(mnt.p("w.bin"), "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    s3 = scrape(mp)
    assert (val(s3, "weedfs_mount_written_bytes_total")
            - val(s2, "weedfs_mount_written_bytes_total")) >= len(data)
    assert val(s3, "weedfs_mount_dirty_bytes") == 0
    st = requests.get("http://%s/status" % mp, timeout=5).json()
    assert st["Daemon"] == "mount" and st["Filer"] == f.url
    assert st["Mountpoint"] == str(mnt.path)


def expect_start_failure(d, needle):
    d.start(wait=False)
    rc = d.proc.wait(timeout=READY_TIMEOUT)
    assert rc != 0
    text = d.log_text()
    assert needle in text, text[-2000:]


@pytest.mark.parametrize("bad", ["-1", "70000", "abc"])
def test_bad_metrics_port_range(cluster, bad):
    d = cluster._dir("bad")
    v = Daemon("volume-bad", ["volume", "-ip=127.0.0.1", "-port=%d" % free_port(),
                              "-dir=%s" % d, "-metricsPort=%s" % bad], d, "unused")
    cluster.daemons.append(v)
    expect_start_failure(v, "metricsPort")


def test_metrics_port_in_use(cluster):
    m, _ = start_cluster(cluster)
    busy = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    try:
        d = cluster._dir("busy")
        cases = [
            ("master", ["master", "-ip=127.0.0.1", "-port=%d" % free_port(), "-mdir=%s" % d]),
            ("volume", ["volume", "-ip=127.0.0.1", "-port=%d" % free_port(), "-dir=%s" % d,
                        "-mserver=%s" % m.url]),
            ("filer", ["filer", "-ip=127.0.0.1", "-port=%d" % free_port(),
                       "-master=%s" % m.url, "-dir=%s" % d]),
            ("mini", ["mini", "-dir=%s" % (d / "mini"), "-ip=127.0.0.1",
                      "-master.port=%d" % free_port(), "-volume.port=%d" % free_port(),
                      "-filer.port=%d" % free_port(), "-s3=false"]),
        ]
        for name, args in cases:
            x = Daemon("%s-busy" % name, args + ["-metricsPort=%d" % port], d, "unused")
            cluster.daemons.append(x)
            expect_start_failure(x, "-metricsPort %d: could not listen" % port)
        # the mount refuses before it mounts
        mnt = d / "mnt"
        mnt.mkdir()
        from mount_fixtures import mount_binary
        import subprocess
        p = subprocess.run([mount_binary(), "-filer=127.0.0.1:1", "-metricsPort=%d" % port,
                            str(mnt)], capture_output=True, timeout=30)
        assert p.returncode == 2
        assert b"-metricsPort %d: could not listen" % port in p.stderr + p.stdout
    finally:
        busy.close()
