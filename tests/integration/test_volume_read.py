"""Volume server reads and writes: ranges, conditional GETs, URL forms, count=N."""

import email.utils

import pytest
import requests

from conftest import assign, json_error, parse_fid, put_file, upload

DATA = bytes(range(256)) * 40  # 10240 bytes, every offset distinguishable


@pytest.fixture(scope="module")
def cl(module_cluster):
    m = module_cluster.master()
    v = module_cluster.volume(m, max_volumes=40)
    return m, v


@pytest.fixture(scope="module")
def blob(cl):
    m, v = cl
    fid, url = put_file(m, DATA, name="data.bin")
    return "http://%s/%s" % (url, fid), fid, url


def test_range_single(blob):
    base, _, _ = blob
    r = requests.get(base, headers={"Range": "bytes=10-19"})
    assert r.status_code == 206
    assert r.content == DATA[10:20]
    assert r.headers["Content-Range"] == "bytes 10-19/%d" % len(DATA)
    assert r.headers["Content-Length"] == "10"
    r = requests.get(base, headers={"Range": "bytes=10000-"})
    assert r.status_code == 206 and r.content == DATA[10000:]
    # An end past the size is clamped.
    r = requests.get(base, headers={"Range": "bytes=10230-99999"})
    assert r.status_code == 206 and r.content == DATA[10230:]
    assert r.headers["Content-Range"] == "bytes 10230-10239/%d" % len(DATA)
    assert requests.get(base).headers.get("Accept-Ranges") == "bytes"


def test_range_suffix(blob):
    base, _, _ = blob
    r = requests.get(base, headers={"Range": "bytes=-5"})
    assert r.status_code == 206
    assert r.content == DATA[-5:]
    assert r.headers["Content-Range"] == "bytes %d-%d/%d" % (len(DATA) - 5, len(DATA) - 1,
                                                             len(DATA))


def test_range_multiple(blob):
    base, _, _ = blob
    r = requests.get(base, headers={"Range": "bytes=0-3,100-103"})
    assert r.status_code == 206
    ctype = r.headers["Content-Type"]
    assert ctype.startswith("multipart/byteranges"), ctype
    boundary = ctype.split("boundary=")[1].strip('"').encode()
    parts = [p for p in r.content.split(b"--" + boundary) if p.strip(b"\r\n-")]
    assert len(parts) == 2, r.content[:500]
    head0, body0 = parts[0].split(b"\r\n\r\n", 1)
    head1, body1 = parts[1].split(b"\r\n\r\n", 1)
    assert b"bytes 0-3/%d" % len(DATA) in head0
    assert b"bytes 100-103/%d" % len(DATA) in head1
    assert body0.rstrip(b"\r\n") == DATA[0:4] or body0[:4] == DATA[0:4]
    assert body1[:4] == DATA[100:104]


def test_range_unsatisfiable(blob):
    base, _, _ = blob
    r = requests.get(base, headers={"Range": "bytes=20000-20010"})
    assert r.status_code == 416
    assert r.headers.get("Content-Range") == "bytes */%d" % len(DATA)
    r = requests.get(base, headers={"Range": "bytes=50-10"})
    # A syntactically invalid range is ignored (RFC 9110) or refused, never garbage.
    assert r.status_code in (200, 416)
    if r.status_code == 200:
        assert r.content == DATA


def test_etag_if_none_match(blob):
    base, _, _ = blob
    r = requests.get(base)
    etag = r.headers["ETag"]
    assert etag.strip('"')
    r2 = requests.get(base, headers={"If-None-Match": etag})
    assert r2.status_code == 304
    assert r2.content == b""
    r3 = requests.get(base, headers={"If-None-Match": '"somethingelse"'})
    assert r3.status_code == 200 and r3.content == DATA


def test_if_modified_since(blob):
    base, _, _ = blob
    r = requests.get(base)
    lm = r.headers["Last-Modified"]
    assert email.utils.parsedate_to_datetime(lm)
    r2 = requests.get(base, headers={"If-Modified-Since": lm})
    assert r2.status_code == 304
    r3 = requests.get(base, headers={"If-Modified-Since": "Mon, 01 Jan 1990 00:00:00 GMT"})
    assert r3.status_code == 200 and r3.content == DATA


def test_head(blob):
    base, _, _ = blob
    r = requests.head(base)
    assert r.status_code == 200
    assert r.headers["Content-Length"] == str(len(DATA))
    assert r.content == b""
    assert r.headers.get("ETag") == requests.get(base).headers.get("ETag")


def test_content_type(cl):
    m, v = cl
    fid, url = put_file(m, b"hello text", name="notes.txt", mime="text/plain")
    r = requests.get("http://%s/%s" % (url, fid))
    assert r.headers["Content-Type"].startswith("text/plain")
    # The stored file name's extension decides when no specific type was sent.
    fid, url = put_file(m, b"\x89PNG....", name="pic.png")
    r = requests.get("http://%s/%s" % (url, fid))
    assert r.headers["Content-Type"].startswith("image/png"), r.headers
    # A raw body with no type: the URL extension decides.
    a = assign(m)
    r = requests.put("http://%s/%s" % (a["url"], a["fid"]), data=b"raw bytes",
                     headers={"Content-Type": "application/octet-stream"})
    assert r.status_code in (200, 201), r.text
    r = requests.get("http://%s/%s.jpg" % (a["url"], a["fid"]))
    assert r.status_code == 200 and r.content == b"raw bytes"
    assert r.headers["Content-Type"].startswith("image/jpeg")
    r = requests.get("http://%s/%s.html" % (a["url"], a["fid"]))
    assert r.headers["Content-Type"].startswith("text/html")


def test_url_forms(cl):
    m, v = cl
    fid, url = put_file(m, b"many urls", name="x.dat")
    vid, key, cookie = parse_fid(fid)
    keycookie = fid.split(",", 1)[1]
    for path in ("/%s" % fid, "/%d/%s" % (vid, keycookie), "/%d/%s/any-name.txt" % (vid, keycookie),
                 "/%s.txt" % fid):
        r = requests.get("http://%s%s" % (url, path))
        assert r.status_code == 200, (path, r.status_code, r.text)
        assert r.content == b"many urls", path
    r = requests.get("http://%s/%d/%s/any-name.txt" % (url, vid, keycookie))
    assert r.headers["Content-Type"].startswith("text/plain")


def test_unchanged_reupload_204(cl):
    m, v = cl
    a = assign(m)
    r = upload(a["url"], a["fid"], b"same content", name="same.txt")
    assert r.status_code in (200, 201)
    size_before = sum(p.stat().st_size for p in v.dir.glob("*.dat"))
    r = upload(a["url"], a["fid"], b"same content", name="same.txt")
    assert r.status_code == 204, (r.status_code, r.text)
    # Nothing appended for an unchanged write.
    assert sum(p.stat().st_size for p in v.dir.glob("*.dat")) == size_before
    r = upload(a["url"], a["fid"], b"other content", name="same.txt")
    assert r.status_code in (200, 201)
    assert requests.get("http://%s/%s" % (a["url"], a["fid"])).content == b"other content"


def test_ts_sets_last_modified(cl):
    m, v = cl
    a = assign(m)
    r = upload(a["url"], a["fid"], b"old file", params={"ts": "1600000000"})
    assert r.status_code in (200, 201), r.text
    r = requests.get("http://%s/%s" % (a["url"], a["fid"]))
    assert r.headers["Last-Modified"] == "Sun, 13 Sep 2020 12:26:40 GMT"


def test_wrong_cookie_404(cl):
    m, v = cl
    fid, url = put_file(m, b"secret")
    vid, key, cookie = parse_fid(fid)
    bad = "%d,%x%08x" % (vid, key, cookie ^ 0x1)
    if len(bad.split(",")[1]) % 2:
        bad = "%d,0%x%08x" % (vid, key, cookie ^ 0x1)
    r = requests.get("http://%s/%s" % (url, bad))
    assert r.status_code == 404
    # Delete with a wrong cookie must not remove the file.
    r = requests.delete("http://%s/%s" % (url, bad))
    assert 400 <= r.status_code < 500
    assert requests.get("http://%s/%s" % (url, fid)).content == b"secret"
    # Overwrite with a wrong cookie is refused too.
    r = upload(url, bad, b"hijack")
    assert 400 <= r.status_code < 500
    assert requests.get("http://%s/%s" % (url, fid)).content == b"secret"


def test_count_assignment(cl):
    m, v = cl
    a = assign(m, count=3)
    assert a["count"] == 3
    vid, key, cookie = parse_fid(a["fid"])
    fids = [a["fid"], a["fid"] + "_1", a["fid"] + "_2"]
    for i, f in enumerate(fids):
        r = upload(a["url"], f, b"part %d" % i)
        assert r.status_code in (200, 201), (f, r.text)
    for i, f in enumerate(fids):
        r = requests.get("http://%s/%s" % (a["url"], f))
        assert r.status_code == 200 and r.content == b"part %d" % i, f
    # _2 is key + 2 with the same cookie: addressable in canonical form.
    canon = "%d,%x%08x" % (vid, key + 2, cookie)
    if len(canon.split(",")[1]) % 2:
        canon = "%d,0%x%08x" % (vid, key + 2, cookie)
    assert requests.get("http://%s/%s" % (a["url"], canon)).content == b"part 2"
    # The next assignment never reuses the reserved keys.
    b = assign(m)
    assert parse_fid(b["fid"])[1] > key + 2


def test_put_raw_body(cl):
    m, v = cl
    a = assign(m)
    body = bytes(reversed(DATA))
    r = requests.put("http://%s/%s" % (a["url"], a["fid"]), data=body)
    assert r.status_code in (200, 201), r.text
    assert r.json()["size"] == len(body)
    assert requests.get("http://%s/%s" % (a["url"], a["fid"])).content == body


def test_empty_file(cl):
    m, v = cl
    fid, url = put_file(m, b"", name="empty.txt")
    r = requests.get("http://%s/%s" % (url, fid))
    assert r.status_code == 200 and r.content == b""


def test_large_file_streams(cl):
    m, v = cl
    data = bytes(range(251)) * (3 * 1024 * 1024 // 251)  # ~3 MiB, not a power of two
    fid, url = put_file(m, data, name="big.bin")
    r = requests.get("http://%s/%s" % (url, fid))
    assert r.status_code == 200 and r.content == data
    r = requests.get("http://%s/%s" % (url, fid), headers={"Range": "bytes=2000000-2000099"})
    assert r.content == data[2000000:2000100]


def test_not_found_is_json(cl):
    m, v = cl
    fid, url = put_file(m, b"x")
    vid, key, cookie = parse_fid(fid)
    r = requests.get("http://%s/%d,%x%08x" % (url, vid, key + 1000, cookie))
    assert r.status_code == 404
    json_error(r)


def test_keepalive_and_pipelining(cl):
    """Three pipelined requests on one connection get three answers, in order."""
    import socket
    m, v = cl
    fid, url = put_file(m, b"pipelined body", name="p.txt")
    host, port = url.split(":")
    reqs = (b"GET /%s HTTP/1.1\r\nHost: x\r\n\r\n"
            b"HEAD /%s HTTP/1.1\r\nHost: x\r\n\r\n"
            b"GET /%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") % (
        fid.encode(), fid.encode(), fid.encode())
    data = b""
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(reqs)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    assert data.count(b"HTTP/1.1 200") == 3, data[:1000]
    assert data.count(b"pipelined body") == 2, data[:1000]
    # A session reuses its connection across many requests.
    s = requests.Session()
    for _ in range(50):
        assert s.get("http://%s/%s" % (url, fid)).content == b"pipelined body"
