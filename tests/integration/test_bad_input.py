"""Malformed requests get a 4xx with a JSON {"error": ...} body and change nothing."""

import socket

import pytest
import requests

from conftest import assign, dat_bytes, file_count, json_error, put_file, upload

LIMIT_MB = 1


@pytest.fixture(scope="module")
def cl(module_cluster):
    m = module_cluster.master()
    v = module_cluster.volume(m, max_volumes=40, extra=["-fileSizeLimitMB=%d" % LIMIT_MB])
    fid, url = put_file(m, b"existing")
    return m, v, fid


class Unchanged:
    """Asserts the volume server stored nothing while the block ran."""

    def __init__(self, v):
        self.v = v

    def __enter__(self):
        self.count = file_count(self.v)
        self.bytes = dat_bytes(self.v)
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            assert file_count(self.v) == self.count, "file count changed"
            assert dat_bytes(self.v) == self.bytes, ".dat grew"


def assert_4xx_json(r, *codes):
    assert 400 <= r.status_code < 500, (r.request.method, r.url[:200], r.status_code, r.text[:300])
    if codes:
        assert r.status_code in codes, (r.url[:200], r.status_code, r.text[:300])
    json_error(r)


def test_counters_are_meaningful(cl):
    """The Unchanged checks below would be vacuous if a good write did not move them."""
    m, v, _ = cl
    with pytest.raises(AssertionError):
        with Unchanged(v):
            put_file(m, b"one more")


BAD_FIDS = ["abc", "3,zz", "3,", ",123", "3,0163703", "3,01637037d6_", "3,01637037d6_x",
            "4294967296,01637037d6", "-1,01637037d6", "3,01637037d6.", "3," + "f" * 30,
            "3,01637037g6", "3,01637037d6/../../etc/passwd"]


@pytest.mark.parametrize("bad", BAD_FIDS)
def test_malformed_fid(cl, bad):
    m, v, _ = cl
    with Unchanged(v):
        assert_4xx_json(requests.get("http://%s/%s" % (v.url, bad)))
        assert_4xx_json(requests.post("http://%s/%s" % (v.url, bad), files={"file": ("f", b"x")}))
        assert_4xx_json(requests.delete("http://%s/%s" % (v.url, bad)))


def test_very_long_fid(cl):
    m, v, _ = cl
    with Unchanged(v):
        for n in (300, 5000, 60000):
            r = requests.get("http://%s/3,%s" % (v.url, "a" * n))
            assert_4xx_json(r)
            r = requests.post("http://%s/3,%s" % (v.url, "a" * n), data=b"x")
            assert_4xx_json(r)
    assert requests.get("http://%s/healthz" % v.url).status_code == 200


def test_unknown_volume(cl):
    m, v, _ = cl
    with Unchanged(v):
        assert_4xx_json(requests.get("http://%s/987654,01637037d6" % v.url), 404)
        assert_4xx_json(requests.post("http://%s/987654,01637037d6" % v.url,
                                      files={"file": ("f", b"x")}))
        assert_4xx_json(requests.delete("http://%s/987654,01637037d6" % v.url), 404)


def test_oversized_body(cl):
    m, v, _ = cl
    a = assign(m)
    big = b"z" * (LIMIT_MB * 1024 * 1024 + 1000)
    with Unchanged(v):
        try:
            r = upload(a["url"], a["fid"], big)
            assert_4xx_json(r, 413, 400)
        except requests.exceptions.ConnectionError:
            pass  # closing the connection after a 413 is allowed; the check is "nothing stored"
        try:
            r = requests.put("http://%s/%s" % (a["url"], a["fid"]), data=big)
            assert_4xx_json(r, 413, 400)
        except requests.exceptions.ConnectionError:
            pass
    assert requests.get("http://%s/%s" % (a["url"], a["fid"])).status_code == 404
    # Just under the limit works.
    ok = b"y" * (LIMIT_MB * 1024 * 1024 - 4096)
    r = upload(a["url"], a["fid"], ok)
    assert r.status_code in (200, 201), r.text
    assert requests.get("http://%s/%s" % (a["url"], a["fid"])).content == ok


@pytest.mark.parametrize("body", [
    b"garbage without boundary",
    b"--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nunterminated",
    b"--XYZ\r\n\r\n",
    b"--XYZ--\r\n",
])
def test_broken_multipart(cl, body):
    m, v, _ = cl
    a = assign(m)
    with Unchanged(v):
        r = requests.post("http://%s/%s" % (a["url"], a["fid"]), data=body,
                          headers={"Content-Type": "multipart/form-data; boundary=XYZ"})
        assert_4xx_json(r, 400)
        r = requests.post("http://%s/%s" % (a["url"], a["fid"]), data=body,
                          headers={"Content-Type": "multipart/form-data"})
        assert_4xx_json(r, 400)
    assert requests.get("http://%s/%s" % (a["url"], a["fid"])).status_code == 404


@pytest.mark.parametrize("rng", ["bytes=999999-", "bytes=100000-100010"])
def test_bad_range(cl, rng):
    m, v, fid = cl
    r = requests.get("http://%s/%s" % (v.url, fid), headers={"Range": rng})
    assert r.status_code == 416, r.text
    json_error(r)


@pytest.mark.parametrize("path,params", [
    ("/dir/assign", {"count": "abc"}),
    ("/dir/assign", {"count": "-1"}),
    ("/dir/assign", {"count": "99999999999999999999999"}),
    ("/dir/assign", {"replication": "0x1"}),
    ("/dir/assign", {"replication": "0000"}),
    ("/dir/assign", {"replication": "abc"}),
    ("/dir/assign", {"ttl": "5q"}),
    ("/dir/assign", {"ttl": "m"}),
    ("/dir/assign", {"collection": "a/b"}),
    ("/vol/vacuum", {"garbageThreshold": "7"}),
    ("/vol/vacuum", {"garbageThreshold": "abc"}),
    ("/vol/grow", {"count": "abc"}),
    ("/vol/grow", {"count": "0"}),
    ("/vol/grow", {"count": "2", "replication": "9x9"}),
    ("/dir/lookup", {"volumeId": "abc"}),
    ("/dir/lookup", {}),
])
def test_invalid_master_params(cl, path, params):
    m, v, _ = cl
    with Unchanged(v):
        r = requests.get("http://%s%s" % (m.url, path), params=params, timeout=30)
        assert_4xx_json(r)


def test_invalid_volume_params(cl):
    m, v, _ = cl
    a = assign(m)
    with Unchanged(v):
        r = upload(a["url"], a["fid"], b"x", params={"ts": "abc"})
        assert_4xx_json(r, 400)
        r = requests.delete("http://%s/%s" % (a["url"], a["fid"]), params={"ts": "-x"})
        assert_4xx_json(r)


def test_garbage_on_the_socket(cl):
    m, v, _ = cl
    for target in (m, v):
        with socket.create_connection(("127.0.0.1", target.port), timeout=5) as s:
            s.sendall(b"\x00\x01\x02 NOT HTTP AT ALL\r\n\r\n")
            try:
                reply = s.recv(4096)
            except socket.timeout:
                reply = b""
            assert reply == b"" or reply.startswith(b"HTTP/1.1 4"), reply[:100]
        with socket.create_connection(("127.0.0.1", target.port), timeout=5) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Big: " + b"a" * 200000 + b"\r\n\r\n")
            try:
                reply = s.recv(4096)
            except (socket.timeout, ConnectionResetError):
                reply = b""
            assert reply == b"" or reply.startswith(b"HTTP/1.1 4"), reply[:100]
        assert requests.get("http://%s/healthz" % target.url).status_code == 200


def test_unknown_paths_and_methods(cl):
    m, v, fid = cl
    r = requests.get("http://%s/no/such/endpoint" % m.url)
    assert_4xx_json(r)
    r = requests.request("PATCH", "http://%s/%s" % (v.url, fid), data=b"x")
    assert_4xx_json(r, 405, 400)
    assert requests.get("http://%s/%s" % (v.url, fid)).content == b"existing"
