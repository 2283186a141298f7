"""The master and volume examples of reference/seaweedfs-REST_API.md, run for real."""

import json

import pytest
import requests

from conftest import (assign, curl, json_error, lookup, lookup_urls, parse_fid, put_file,
                      upload, volume_records, wait_until, walk, ci_get)


@pytest.fixture(scope="module")
def cl(module_cluster):
    m = module_cluster.master()
    v = module_cluster.volume(m, max_volumes=40)
    return m, v


def test_assign_shape(cl):
    m, v = cl
    j = assign(m)
    assert j["count"] == 1
    assert j["url"] == v.url
    assert j["publicUrl"]
    parse_fid(j["fid"])


def test_upload_read_delete_with_curl(cl, tmp_path):
    m, v = cl
    data = b"\xff\xd8\xff\xe0 not really a jpeg " * 100
    photo = tmp_path / "myphoto.jpg"
    photo.write_bytes(data)
    a = assign(m)
    base = "http://%s/%s" % (a["url"], a["fid"])

    code, body = curl("-F", "file=@%s" % photo, base)
    assert code in (200, 201), body
    j = json.loads(body)
    assert j["name"] == "myphoto.jpg"
    assert j["size"] == len(data)
    assert j.get("eTag")
    assert j.get("mime") == "image/jpeg"

    code, body = curl(base)
    assert code == 200 and body == data

    r = requests.get(base + ".jpg")
    assert r.status_code == 200 and r.content == data
    assert r.headers["Content-Type"].startswith("image/jpeg")

    code, body = curl("-X", "DELETE", base)
    assert code in (200, 202), body
    # SeaweedFS reports the stored needle's size: the data plus its name and mime fields.
    j = json.loads(body)
    assert list(j) == ["size"] and len(data) <= j["size"] < len(data) + 600, j

    code, body = curl(base)
    assert code == 404
    # A second delete of the same fid finds nothing.
    r = requests.delete(base)
    assert r.status_code == 404


def test_lookup(cl):
    m, v = cl
    fid, url = put_file(m, b"x")
    vid = parse_fid(fid)[0]
    r = lookup(m, vid)
    assert r.status_code == 200, r.text
    locs = r.json()["locations"]
    assert [loc["url"] for loc in locs] == [v.url]
    assert all(loc["publicUrl"] for loc in locs)
    # A full fid is accepted as volumeId too.
    r = requests.get("http://%s/dir/lookup" % m.url, params={"volumeId": fid})
    assert r.status_code == 200 and r.json()["locations"][0]["url"] == v.url
    r = requests.get("http://%s/dir/lookup" % m.url, params={"fileId": fid})
    assert r.status_code == 200 and r.json()["locations"][0]["url"] == v.url
    # Unknown volume: 404 with an error.
    r = lookup(m, 987654)
    assert r.status_code == 404
    json_error(r)


def test_submit(cl, tmp_path):
    m, v = cl
    data = b"%PDF-1.4 report\n" * 50
    f = tmp_path / "report.pdf"
    f.write_bytes(data)
    code, body = curl("-F", "file=@%s" % f, "http://%s/submit?collection=&replication=000" % m.url)
    assert code in (200, 201), body
    j = json.loads(body)
    assert j["fileName"] == "report.pdf"
    assert j["size"] == len(data)
    assert j.get("eTag")
    parse_fid(j["fid"])
    assert j["fileUrl"].endswith("/" + j["fid"])
    r = requests.get("http://" + j["fileUrl"])
    assert r.status_code == 200 and r.content == data


def test_master_redirect_308(cl):
    m, v = cl
    fid, url = put_file(m, b"redirect me")
    r = requests.get("http://%s/%s?width=10&x=y" % (m.url, fid), allow_redirects=False)
    assert r.status_code == 308, r.text
    loc = r.headers["Location"]
    assert loc.startswith("http://%s/" % v.url) or loc.startswith("http://%s/" % url)
    assert fid in loc
    assert "width=10" in loc and "x=y" in loc
    r = requests.get("http://%s/%s" % (m.url, fid))
    assert r.status_code == 200 and r.content == b"redirect me"
    code, _ = curl("-o", "/dev/null", "http://%s/%s" % (m.url, fid))
    assert code == 308


def test_status_pages(cl):
    m, v = cl
    fid, _ = put_file(m, b"status")
    vid = parse_fid(fid)[0]
    r = requests.get("http://%s/dir/status?pretty=y" % m.url)
    assert r.status_code == 200
    r.json()
    assert v.url in r.text
    r = requests.get("http://%s/vol/status?pretty=y" % m.url)
    assert r.status_code == 200
    assert volume_records(r.json(), vid), r.text[:2000]
    r = requests.get("http://%s/status?pretty=y" % v.url)
    assert r.status_code == 200
    assert volume_records(r.json(), vid), r.text[:2000]


def test_collection_info_and_delete(cl):
    m, v = cl
    fids = [put_file(m, b"c" * 100, collection="turbo")[0] for _ in range(3)]
    # The master learns file counts from heartbeats.
    def info():
        r = requests.get("http://%s/collection/info" % m.url, params={"collection": "turbo"})
        assert r.status_code == 200, r.text
        j = r.json()
        return j if ci_get(j, "FileCount") >= 3 else None
    j = wait_until(info, 10, "collection/info FileCount >= 3")
    for k in ("TotalSize", "FileCount", "UsedSize", "VolumeCount"):
        assert ci_get(j, k) is not None, (k, j)
    assert ci_get(j, "VolumeCount") >= 1
    assert ci_get(j, "TotalSize") >= 300
    r = requests.get("http://%s/collection/info" % m.url,
                     params={"collection": "turbo", "detail": "true"})
    assert r.status_code == 200

    assert list(v.dir.glob("turbo_*.dat")), "collection volumes are named turbo_<vid>.dat"
    r = requests.get("http://%s/col/delete" % m.url, params={"collection": "turbo"})
    assert r.status_code == 204, r.text
    for fid in fids:
        vid = parse_fid(fid)[0]
        wait_until(lambda: not lookup_urls(m, vid), 10, "volume %d gone from lookup" % vid)
        assert requests.get("http://%s/%s" % (v.url, fid)).status_code == 404
    wait_until(lambda: not list(v.dir.glob("turbo_*.dat")), 10, "turbo_*.dat removed")


def test_vol_grow(cl):
    m, v = cl

    def count_volumes(coll):
        j = requests.get("http://%s/status" % v.url).json()
        return sum(1 for d in walk(j) if ci_get(d, "collection") == coll
                   and ci_get(d, "id", "volumeId") is not None)

    r = requests.get("http://%s/vol/grow" % m.url,
                     params={"count": 2, "collection": "grown", "replication": "000"})
    assert r.status_code == 200, r.text
    assert r.json()["count"] == 2
    wait_until(lambda: count_volumes("grown") == 2, 10, "2 volumes in collection grown")
    assert len(list(v.dir.glob("grown_*.dat"))) == 2
    # Missing count is an error.
    r = requests.get("http://%s/vol/grow" % m.url, params={"collection": "grown"})
    assert 400 <= r.status_code < 500
    json_error(r)


def test_vol_vacuum_endpoint(cl):
    m, v = cl
    r = requests.get("http://%s/vol/vacuum" % m.url, params={"garbageThreshold": "0.4"})
    assert r.status_code == 200, r.text
    r.json()


def test_health_and_ui(cl):
    m, v = cl
    for path in ("/healthz", "/readyz"):
        assert requests.get("http://%s%s" % (m.url, path)).status_code == 200
        assert requests.head("http://%s%s" % (m.url, path)).status_code == 200
    assert requests.get("http://%s/healthz" % v.url).status_code == 200
    code, _ = curl("-I", "http://%s/healthz" % m.url)
    assert code == 200
    r = requests.get("http://%s/" % m.url)
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/html")
    assert "<html" in r.text.lower()


def test_ttl_assignment(cl):
    m, v = cl
    a = assign(m, ttl="1m")
    vid = parse_fid(a["fid"])[0]
    r = upload(a["url"], a["fid"], b"short lived")
    assert r.status_code in (200, 201), r.text
    assert requests.get("http://%s/%s" % (a["url"], a["fid"])).content == b"short lived"
    # A TTL assignment never lands in a volume without TTL.
    b = assign(m)
    assert parse_fid(b["fid"])[0] != vid

    def ttl_ok(rec):
        t = ci_get(rec, "ttl")
        if isinstance(t, str):
            return t == "1m"
        if isinstance(t, dict):
            return ci_get(t, "count") == 1 and ci_get(t, "unit") in (1, "m", "minute")
        return False

    def master_has_ttl():
        j = requests.get("http://%s/vol/status" % m.url).json()
        recs = volume_records(j, vid)
        return recs and all(ttl_ok(r) for r in recs)
    wait_until(master_has_ttl, 10, "master /vol/status shows ttl 1m for volume %d" % vid)
    recs = volume_records(requests.get("http://%s/status" % v.url).json(), vid)
    assert recs and all(ttl_ok(r) for r in recs), recs
    # The superblock carries it: version 3, TTL count 1, unit minute (1).
    dat = [p for p in v.dir.glob("*.dat") if p.name.split("_")[-1] == "%d.dat" % vid]
    assert len(dat) == 1, list(v.dir.iterdir())
    sb = dat[0].read_bytes()[:8]
    assert sb[0] == 3 and sb[2:4] == b"\x01\x01", sb.hex()
