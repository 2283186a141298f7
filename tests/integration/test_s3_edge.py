"""The S3 gateway's exact edge behaviour (issue 26): bodies of unknown length, conditional
writes with ETags, browser forms with file-like fields, missing buckets and presigned
expiries, checksum types, repeated multipart completes and lifecycle validation."""

import concurrent.futures
import hashlib
import http.client
import os
import socket

import botocore
import pytest

from s3_fixtures import Signer, client, code_of, mini_gateway

AK, SK = "AKALICE", "alice-secret"


@pytest.fixture(scope="module")
def gw(module_cluster):
    return mini_gateway(module_cluster, "edge")


def chunked_put(g, path, pieces, query="", headers=None):
    """A PUT whose body goes with HTTP chunking and no Content-Length, signed
    UNSIGNED-PAYLOAD (as curl -T - sends it); returns (status, body, headers)."""
    s = Signer(AK, SK)
    h = s.sign("PUT", g.url, path, headers or {}, "UNSIGNED-PAYLOAD", query)
    c = http.client.HTTPConnection(g.url, timeout=60)
    c.putrequest("PUT", path + ("?" + query if query else ""), skip_accept_encoding=True)
    for k, v in h.items():
        c.putheader(k, v)
    c.putheader("Transfer-Encoding", "chunked")
    c.endheaders()
    for p in pieces:
        if p:
            c.send(b"%x\r\n%s\r\n" % (len(p), p))
    c.send(b"0\r\n\r\n")
    r = c.getresponse()
    out = r.status, r.read(), dict(r.getheaders())
    c.close()
    return out


@pytest.mark.parametrize("size", [0, 100, (9 << 20) + 3])
def test_chunked_put_without_length(gw, size):
    """Transfer-Encoding: chunked and no Content-Length: the body's length is what comes;
    the ETag is its MD5, a checksum header is checked as for any PUT."""
    filer, g = gw
    s3 = client(g, AK, SK)
    data = os.urandom(size)
    pieces = [data[i:i + 300000] for i in range(0, size, 300000)]
    st, body, h = chunked_put(g, "/edge/te/obj%d" % size, pieces)
    assert st == 200, body
    assert h["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    got = s3.get_object(Bucket="edge", Key="te/obj%d" % size)
    assert got["ContentLength"] == size and got["Body"].read() == data
    # a wrong Content-MD5 refuses it and keeps the object as it was
    st, body, _ = chunked_put(g, "/edge/te/obj%d" % size, [b"other"],
                              headers={"Content-MD5": "AAAAAAAAAAAAAAAAAAAAAA=="})
    assert st == 400 and b"BadDigest" in body
    assert s3.get_object(Bucket="edge", Key="te/obj%d" % size)["Body"].read() == data


def test_chunked_upload_part_and_cut_short(gw):
    """UploadPart takes a chunked body too; a chunked body cut short leaves no object."""
    filer, g = gw
    s3 = client(g, AK, SK)
    up = s3.create_multipart_upload(Bucket="edge", Key="te/mp")["UploadId"]
    part = os.urandom(5 << 20)
    st, body, h = chunked_put(g, "/edge/te/mp", [part[:1 << 20], part[1 << 20:]],
                              query="partNumber=1&uploadId=%s" % up)
    assert st == 200, body
    assert h["ETag"] == '"%s"' % hashlib.md5(part).hexdigest()
    s3.complete_multipart_upload(Bucket="edge", Key="te/mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": h["ETag"]}]})
    assert s3.get_object(Bucket="edge", Key="te/mp")["Body"].read() == part

    s = Signer(AK, SK)
    hd = s.sign("PUT", g.url, "/edge/te/cut", {}, "UNSIGNED-PAYLOAD")
    sock = socket.create_connection(tuple(g.url.split(":")[:1]) + (int(g.url.split(":")[1]),))
    head = "PUT /edge/te/cut HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n" % g.url
    head += "".join("%s: %s\r\n" % kv for kv in hd.items()) + "\r\n"
    sock.sendall(head.encode() + b"100000\r\n" + b"x" * 300000)
    sock.close()
    assert filer.get("/buckets/edge/te/cut").status_code == 404
    assert code_of(s3.head_object, Bucket="edge", Key="te/cut") == "404"
