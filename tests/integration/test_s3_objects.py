"""Object data through the S3 gateway with real clients: PutObject streaming to the
volume servers (every x-amz-content-sha256 mode, checksums, Content-MD5), GetObject and
HeadObject (ranges, conditions, stored headers), conditional writes, and the same bytes
seen through the filer's HTTP API."""

import base64
import concurrent.futures
import hashlib
import http.client
import os
import socket
import subprocess
import time
import zlib

import boto3
import botocore
import pytest
import requests
from botocore.config import Config

from conftest import WEEDFS
from s3_fixtures import (IDENTITIES, Signer, client, code_of, crc32c, crc64nvme,
                         mini_gateway, put_streaming, signed, start_gateway)

AK, SK = "AKALICE", "alice-secret"


@pytest.fixture(scope="module")
def gw(module_cluster):
    return mini_gateway(module_cluster, "objs")


def b64(b):
    return base64.b64encode(b).decode()


@pytest.mark.parametrize("size", [0, 1, 4096, 4097, 3 << 20, (9 << 20) + 5])
def test_put_get_round_trip(gw, size):
    """boto3's defaults (CRC32 in an unsigned trailer): the ETag is the MD5, the bytes
    come back through S3 and through the filer, small objects live in their entry."""
    filer, g = gw
    s3 = client(g, AK, SK)
    data = os.urandom(size)
    key = "rt/%d/obj.bin" % size
    r = s3.put_object(Bucket="objs", Key=key, Body=data)
    assert r["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
    assert r["ChecksumCRC32"] == b64(zlib.crc32(data).to_bytes(4, "big"))
    got = s3.get_object(Bucket="objs", Key=key)
    assert got["Body"].read() == data
    assert got["ETag"] == r["ETag"] and got["ContentLength"] == size
    assert filer.get("/buckets/objs/" + key).content == data
    meta = filer.meta("/buckets/objs/" + key)
    assert meta["FileSize"] == size
    assert (len(meta.get("chunks") or []) == 0) == (size <= 4096), meta
    listed = s3.list_objects_v2(Bucket="objs", Prefix=key)["Contents"]
    assert [(o["Key"], o["Size"], o["ETag"]) for o in listed] == [(key, size, r["ETag"])]


@pytest.mark.parametrize("alg", ["CRC32", "SHA1", "SHA256"])
def test_boto3_explicit_checksums(gw, alg):
    _, g = gw
    s3 = client(g, AK, SK)
    data = os.urandom(100000)
    want = {"CRC32": zlib.crc32(data).to_bytes(4, "big"), "SHA1": hashlib.sha1(data).digest(),
            "SHA256": hashlib.sha256(data).digest()}[alg]
    r = s3.put_object(Bucket="objs", Key="ck/" + alg, Body=data, ChecksumAlgorithm=alg)
    assert r["Checksum" + alg] == b64(want)
    h = s3.head_object(Bucket="objs", Key="ck/" + alg, ChecksumMode="ENABLED")
    assert h["Checksum" + alg] == b64(want)
    assert "Checksum" + alg not in s3.head_object(Bucket="objs", Key="ck/" + alg)


def test_streaming_modes(gw):
    """Signed aws-chunked bodies, signed trailers with CRC32C and CRC64NVME, and the
    unsigned-trailer mode; bad chunk signatures, bad trailer checksums and bad framing
    are refused and nothing is written."""
    filer, g = gw
    s3 = client(g, AK, SK)
    data = os.urandom(200000)
    md5 = '"%s"' % hashlib.md5(data).hexdigest()
    r = put_streaming(g, AK, SK, "/objs/st/signed", data)
    assert r.status_code == 200, r.text
    assert r.headers["ETag"] == md5
    for name, fn in (("crc32c", crc32c), ("crc64nvme", crc64nvme)):
        trailer = "x-amz-checksum-%s:%s" % (name, b64(fn(data)))
        r = put_streaming(g, AK, SK, "/objs/st/" + name, data, trailer=trailer)
        assert r.status_code == 200, r.text
        assert r.headers["x-amz-checksum-" + name] == b64(fn(data))
        h = s3.head_object(Bucket="objs", Key="st/" + name, ChecksumMode="ENABLED")
        assert h["ResponseMetadata"]["HTTPHeaders"]["x-amz-checksum-" + name] == b64(fn(data))
        r = put_streaming(g, AK, SK, "/objs/st/u" + name, data, trailer=trailer,
                          signed_trailer=False)
        assert r.status_code == 200, r.text
    for k in ("st/signed", "st/crc32c", "st/crc64nvme", "st/ucrc32c"):
        assert s3.get_object(Bucket="objs", Key=k)["Body"].read() == data
    # failures: nothing is stored under the key
    bad_trailer = "x-amz-checksum-crc32c:%s" % b64(crc32c(data + b"x"))
    cases = [
        ("SignatureDoesNotMatch", dict(tamper=lambda b: b.replace(data[:10], b"X" * 10, 1))),
        ("BadDigest", dict(trailer=bad_trailer)),
        ("BadDigest", dict(trailer=bad_trailer, signed_trailer=False)),
        ("IncompleteBody", dict(tamper=lambda b: b[:-40] + b"zz" + b[-38:])),
    ]
    for i, (code, kw) in enumerate(cases):
        r = put_streaming(g, AK, SK, "/objs/st/bad%d" % i, data, **kw)
        assert r.status_code in (400, 403) and "<Code>%s</Code>" % code in r.text, (i, r.text)
        assert code_of(s3.head_object, Bucket="objs", Key="st/bad%d" % i) == "404"
    # chunks under 8 KiB but the last are refused in signed mode
    r = put_streaming(g, AK, SK, "/objs/st/small", data, chunk=4000)
    assert r.status_code == 400 and "InvalidChunkSizeError" in r.text


def test_payload_hash_and_digests(gw):
    """A signed payload hash, Content-MD5 and x-amz-checksum-* headers that do not match
    the body: the right error and nothing written; matching ones: stored."""
    filer, g = gw
    data = b"payload" * 1000
    r = signed(g, AK, SK, "PUT", "/objs/d/ok", data, headers={
        "Content-MD5": b64(hashlib.md5(data).digest()),
        "x-amz-checksum-crc32c": b64(crc32c(data))})
    assert r.status_code == 200, r.text
    assert r.headers["x-amz-checksum-crc32c"] == b64(crc32c(data))
    bad = [
        ({}, hashlib.sha256(b"other").hexdigest(), "XAmzContentSHA256Mismatch"),
        ({"Content-MD5": b64(hashlib.md5(b"x").digest())}, None, "BadDigest"),
        ({"Content-MD5": "nonsense"}, None, "InvalidDigest"),
        ({"x-amz-checksum-crc64nvme": b64(crc64nvme(b"x"))}, None, "BadDigest"),
        ({"x-amz-checksum-sha256": "short"}, None, "InvalidRequest"),
        ({"x-amz-checksum-crc32": b64(b"1234"), "x-amz-checksum-sha1": b64(b"1" * 20)}, None,
         "InvalidRequest"),
        ({"x-amz-website-redirect-location": "/x"}, None, "NotImplemented"),
        ({"If-None-Match": '"abc"', "If-Match": '"abc"'}, None, "NotImplemented"),
    ]
    for i, (h, ph, code) in enumerate(bad):
        r = signed(g, AK, SK, "PUT", "/objs/d/bad%d" % i, data, headers=h, payload_hash=ph)
        assert r.status_code in (400, 501) and "<Code>%s</Code>" % code in r.text, (i, r.text)
        assert filer.get("/buckets/objs/d/bad%d" % i).status_code == 404
    # UNSIGNED-PAYLOAD is taken as is
    r = signed(g, AK, SK, "PUT", "/objs/d/unsigned", data, payload_hash="UNSIGNED-PAYLOAD")
    assert r.status_code == 200 and filer.get("/buckets/objs/d/unsigned").content == data


def test_metadata_and_headers(gw):
    _, g = gw
    s3 = client(g, AK, SK)
    s3.put_object(Bucket="objs", Key="m/doc.txt", Body=b"hello", ContentType="text/plain",
                  Metadata={"Color": "blue", "n": "1"}, CacheControl="max-age=60",
                  ContentDisposition='attachment; filename="d.txt"', ContentLanguage="en",
                  ContentEncoding="identity")
    for h in (s3.head_object(Bucket="objs", Key="m/doc.txt"),
              s3.get_object(Bucket="objs", Key="m/doc.txt")):
        assert h["Metadata"] == {"color": "blue", "n": "1"}
        assert h["ContentType"] == "text/plain" and h["CacheControl"] == "max-age=60"
        assert h["ContentDisposition"] == 'attachment; filename="d.txt"'
        assert h["ContentLanguage"] == "en" and h["ContentEncoding"] == "identity"
    got = s3.get_object(Bucket="objs", Key="m/doc.txt", ResponseContentType="app/x",
                        ResponseCacheControl="no-cache")
    assert got["ContentType"] == "app/x" and got["CacheControl"] == "no-cache"
    assert code_of(s3.put_object, Bucket="objs", Key="m/big", Body=b"x",
                   Metadata={"k": "v" * 2100}) == "MetadataTooLarge"
    # replacing an object replaces its metadata
    s3.put_object(Bucket="objs", Key="m/doc.txt", Body=b"v2")
    h = s3.head_object(Bucket="objs", Key="m/doc.txt")
    assert h["Metadata"] == {} and h["ContentType"] == "binary/octet-stream"


def test_ranges_and_conditional_get(gw):
    _, g = gw
    s3 = client(g, AK, SK)
    data = os.urandom((5 << 20) + 123)
    etag = s3.put_object(Bucket="objs", Key="r/big", Body=data)["ETag"]
    small = b"0123456789"
    s3.put_object(Bucket="objs", Key="r/small", Body=small)
    for key, body in (("r/big", data), ("r/small", small)):
        n = len(body)
        for rng, want in (("bytes=0-4", body[:5]), ("bytes=3-", body[3:]),
                          ("bytes=-4", body[-4:]), ("bytes=%d-%d" % (n - 2, n + 50), body[-2:]),
                          ("bytes=0-0", body[:1])):
            got = s3.get_object(Bucket="objs", Key=key, Range=rng)
            assert got["Body"].read() == want, (key, rng)
            assert got["ResponseMetadata"]["HTTPStatusCode"] == 206
            assert got["ContentRange"].endswith("/%d" % n)
        assert code_of(s3.get_object, Bucket="objs", Key=key,
                       Range="bytes=%d-" % (n + 5)) == "InvalidRange"
        # several ranges: the whole object
        got = s3.get_object(Bucket="objs", Key=key, Range="bytes=0-1,4-5")
        assert got["Body"].read() == body
    # across chunk boundaries (4 MiB chunks)
    got = s3.get_object(Bucket="objs", Key="r/big", Range="bytes=%d-%d" % ((4 << 20) - 10,
                                                                          (4 << 20) + 10))
    assert got["Body"].read() == data[(4 << 20) - 10:(4 << 20) + 11]
    assert code_of(s3.get_object, Bucket="objs", Key="r/big", IfNoneMatch=etag) == "304"
    assert code_of(s3.get_object, Bucket="objs", Key="r/big",
                   IfMatch='"0000"') == "PreconditionFailed"
    assert s3.get_object(Bucket="objs", Key="r/big", IfMatch=etag)["ContentLength"] == len(data)
    assert code_of(s3.get_object, Bucket="objs", Key="r/none") == "NoSuchKey"
    assert code_of(s3.get_object, Bucket="no-such-bkt", Key="x") == "NoSuchBucket"
    # presigned GET (SigV4: boto3 presigns with SigV2 unless told), and an expired one
    s3 = boto3.client("s3", endpoint_url="http://%s" % g.url, aws_access_key_id=AK,
                      aws_secret_access_key=SK, region_name="us-east-1",
                      config=Config(signature_version="s3v4"))
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "objs", "Key": "r/small"},
                                    ExpiresIn=60)
    assert requests.get(url, timeout=10).content == small
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "objs", "Key": "r/small"},
                                    ExpiresIn=1)
    time.sleep(2.1)
    r = requests.get(url, timeout=10)
    assert r.status_code == 403 and "AccessDenied" in r.text


def test_conditional_writes(gw):
    """If-None-Match: * among 16 racing writers: one 200, fifteen 412; If-Match commits
    only over the version it names."""
    filer, g = gw
    s3 = client(g, AK, SK)

    def racer(i):
        try:
            s3.put_object(Bucket="objs", Key="c/race", Body=b"writer %d" % i, IfNoneMatch="*")
            return 200
        except botocore.exceptions.ClientError as e:
            return e.response["ResponseMetadata"]["HTTPStatusCode"]

    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        codes = sorted(ex.map(racer, range(16)))
    assert codes == [200] + [412] * 15, codes
    body = s3.get_object(Bucket="objs", Key="c/race")["Body"].read()
    assert body.startswith(b"writer ")
    etag = s3.head_object(Bucket="objs", Key="c/race")["ETag"]
    assert code_of(s3.put_object, Bucket="objs", Key="c/race", Body=b"x",
                   IfMatch='"ffff"') == "PreconditionFailed"
    s3.put_object(Bucket="objs", Key="c/race", Body=b"second", IfMatch=etag)
    assert code_of(s3.put_object, Bucket="objs", Key="c/race", Body=b"third",
                   IfMatch=etag) == "PreconditionFailed"
    assert s3.get_object(Bucket="objs", Key="c/race")["Body"].read() == b"second"
    assert code_of(s3.put_object, Bucket="objs", Key="c/missing", Body=b"x",
                   IfMatch=etag) == "NoSuchKey"


@pytest.mark.parametrize("versioning", [False, True])
def test_conditional_write_races_are_precondition_failures(gw, versioning):
    """Writers that all read the same version race to replace it with If-Match: those
    that pass the gateway's ETag check commit with the filer's ifEtag, which lets one
    through and refuses the others (the filer's 412 EPRECOND, WFS_EPRECOND in the client
    library): every loser is 412 PreconditionFailed, never a 5xx or a stale-handle error.
    If-None-Match: * over an existing key is PreconditionFailed too; in a bucket with
    versioning the same holds through its retries."""
    filer, g = gw
    s3 = client(g, AK, SK)
    bucket = "objs-cond-v" if versioning else "objs"
    if versioning:
        s3.create_bucket(Bucket=bucket)
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    key = "cond/racing-if-match"
    etag = s3.put_object(Bucket=bucket, Key=key, Body=b"base")["ETag"]

    def answer(fn, **kw):
        try:
            fn(**kw)
            return 200, None
        except botocore.exceptions.ClientError as e:
            return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]

    # a few rounds: in each, some losers fail the gateway's check, others the filer's
    for rnd in range(4):
        def racer(i):
            return answer(s3.put_object, Bucket=bucket, Key=key,
                          Body=b"writer %d.%d" % (rnd, i), IfMatch=etag)

        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            got = sorted(ex.map(racer, range(16)), key=lambda a: a[0])
        assert got == [(200, None)] + [(412, "PreconditionFailed")] * 15, (rnd, got)
        head = s3.head_object(Bucket=bucket, Key=key)
        assert head["ETag"] != etag
        etag = head["ETag"]
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read().startswith(b"writer 3.")
    # an unconditional write replaces it: a writer still naming the last version fails
    assert s3.put_object(Bucket=bucket, Key=key, Body=b"newest")["ETag"] != etag
    assert answer(s3.put_object, Bucket=bucket, Key=key, Body=b"late",
                  IfMatch=etag) == (412, "PreconditionFailed")
    assert answer(s3.put_object, Bucket=bucket, Key=key, Body=b"again",
                  IfNoneMatch="*") == (412, "PreconditionFailed")
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == b"newest"


def test_filer_view_and_changes_behind_the_gateway(gw):
    """An object is a file: written through the filer it reads through S3, and a change
    made through the filer gives it a new ETag (the stored one is stale then)."""
    filer, g = gw
    s3 = client(g, AK, SK)
    etag = s3.put_object(Bucket="objs", Key="f/x.txt", Body=b"from s3")["ETag"]
    assert filer.get("/buckets/objs/f/x.txt").content == b"from s3"
    assert filer.put("/buckets/objs/f/x.txt", b"changed by the filer").status_code in (200, 201)
    h = s3.head_object(Bucket="objs", Key="f/x.txt")
    assert h["ETag"] != etag and h["ContentLength"] == len(b"changed by the filer")
    assert s3.get_object(Bucket="objs", Key="f/x.txt")["Body"].read() == b"changed by the filer"
    # a key beside longer keys and empty components are objects too (test_s3_keys.py)
    s3.put_object(Bucket="objs", Key="f", Body=b"x")
    assert s3.get_object(Bucket="objs", Key="f")["Body"].read() == b"x"
    assert filer.get("/buckets/objs/f/x.txt").content == b"changed by the filer"
    assert code_of(s3.put_object, Bucket="no-such-bkt", Key="k", Body=b"x") == "NoSuchBucket"
    assert code_of(s3.put_object, Bucket="no-such-bkt", Key="d/k", Body=b"x") == "NoSuchBucket"
    assert filer.get("/buckets/no-such-bkt").status_code == 404


def test_cut_short_body_writes_nothing(gw):
    """A client that dies mid-body leaves no object (and the gateway keeps serving)."""
    filer, g = gw
    host, port = g.url.split(":")
    r = signed(g, AK, SK, "PUT", "/objs/cut/warm", b"x")  # a valid signature shape to copy
    assert r.status_code == 200
    s = socket.create_connection((host, int(port)))
    # an open gateway is not needed: the request fails on its body before any check
    s.sendall(b"PUT /objs/cut/obj HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000000\r\n"
              b"x-amz-content-sha256: UNSIGNED-PAYLOAD\r\n\r\n" % g.url.encode() + b"x" * 5000)
    s.close()
    assert filer.get("/buckets/objs/cut/obj").status_code == 404
    assert client(g, AK, SK).get_object(Bucket="objs", Key="cut/warm")["Body"].read() == b"x"


def test_awscli_cp_round_trip(gw, tmp_path):
    filer, g = gw
    src = tmp_path / "up.bin"
    data = os.urandom(3 << 20)
    src.write_bytes(data)
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_DEFAULT_REGION="us-east-1")
    base = ["aws", "--endpoint-url", "http://%s" % g.url, "s3"]
    subprocess.run(base + ["cp", str(src), "s3://objs/cli/up.bin"], env=env, check=True,
                   capture_output=True, timeout=120)
    out = tmp_path / "down.bin"
    subprocess.run(base + ["cp", "s3://objs/cli/up.bin", str(out)], env=env, check=True,
                   capture_output=True, timeout=120)
    assert out.read_bytes() == data
    assert filer.get("/buckets/objs/cli/up.bin").content == data
    r = subprocess.run(["aws", "--endpoint-url", "http://%s" % g.url, "s3api", "head-object",
                        "--bucket", "objs", "--key", "cli/up.bin"], env=env, check=True,
                       capture_output=True, timeout=60, text=True)
    assert hashlib.md5(data).hexdigest() in r.stdout


def test_copy_object_checksums(gw):
    """CopyObject computes the copy's checksum from the bytes it copies: of the
    algorithm x-amz-checksum-algorithm names, else of the source's (S3's default:
    a copy keeps its source's algorithm, whatever the metadata directive); answered
    in CopyObjectResult and on HEAD/GET with ChecksumMode. An unknown algorithm is
    InvalidRequest and writes nothing."""
    _, g = gw
    s3 = client(g, AK, SK)
    data = os.urandom((3 << 20) + 5)
    crc = b64(zlib.crc32(data).to_bytes(4, "big"))
    s3.put_object(Bucket="objs", Key="cpck/src", Body=data, ChecksumAlgorithm="CRC32")
    src = {"Bucket": "objs", "Key": "cpck/src"}

    def checksums(key):
        h = s3.head_object(Bucket="objs", Key=key, ChecksumMode="ENABLED")
        return {k: v for k, v in h.items() if k.startswith("Checksum")}

    for key, kw in (("cpck/kept", {}),
                    ("cpck/replaced", {"MetadataDirective": "REPLACE", "Metadata": {"x": "1"}})):
        r = s3.copy_object(Bucket="objs", Key=key, CopySource=src, **kw)["CopyObjectResult"]
        assert r["ChecksumCRC32"] == crc and r["ChecksumType"] == "FULL_OBJECT", r
        assert checksums(key) == {"ChecksumCRC32": crc, "ChecksumType": "FULL_OBJECT"}
    r = s3.copy_object(Bucket="objs", Key="cpck/sha", CopySource=src,
                       ChecksumAlgorithm="SHA256")["CopyObjectResult"]
    sha = b64(hashlib.sha256(data).digest())
    assert r["ChecksumSHA256"] == sha and "ChecksumCRC32" not in r, r
    assert checksums("cpck/sha") == {"ChecksumSHA256": sha, "ChecksumType": "FULL_OBJECT"}
    got = s3.get_object(Bucket="objs", Key="cpck/sha", ChecksumMode="ENABLED")
    assert got["Body"].read() == data and got["ChecksumSHA256"] == sha
    # a small source (its bytes inline in its entry) copies the same way
    # (botocore needs awscrt to compute a CRC32C: the header is sent by hand)
    assert signed(g, AK, SK, "PUT", "/objs/cpck/small", body=b"tiny", headers={
        "x-amz-checksum-crc32c": b64(crc32c(b"tiny"))}).status_code == 200
    r = s3.copy_object(Bucket="objs", Key="cpck/small-copy", ChecksumAlgorithm="SHA1",
                       CopySource={"Bucket": "objs", "Key": "cpck/small"})["CopyObjectResult"]
    assert r["ChecksumSHA1"] == b64(hashlib.sha1(b"tiny").digest()), r
    r = s3.copy_object(Bucket="objs", Key="cpck/small-kept",
                       CopySource={"Bucket": "objs", "Key": "cpck/small"})["CopyObjectResult"]
    assert r["ChecksumCRC32C"] == b64(crc32c(b"tiny")), r
    # a source with no checksum (boto3 would send its default CRC32) gives a copy with none
    assert signed(g, AK, SK, "PUT", "/objs/cpck/none", body=b"no checksum").status_code == 200
    assert checksums("cpck/none") == {}
    r = s3.copy_object(Bucket="objs", Key="cpck/none-copy",
                       CopySource={"Bucket": "objs", "Key": "cpck/none"})["CopyObjectResult"]
    assert not [k for k in r if k.startswith("Checksum")], r
    assert checksums("cpck/none-copy") == {}
    # an algorithm S3 does not have: refused, nothing written
    r = signed(g, AK, SK, "PUT", "/objs/cpck/bad", headers={
        "x-amz-copy-source": "/objs/cpck/src", "x-amz-checksum-algorithm": "MD5"})
    assert r.status_code == 400 and b"<Code>InvalidRequest</Code>" in r.content, r.text
    assert code_of(s3.head_object, Bucket="objs", Key="cpck/bad") == "404"


def test_copy_object(gw):
    """CopyObject: across buckets, metadata COPY and REPLACE, source conditions, copy onto
    itself refused unless the metadata changes, a missing source, and the bytes read
    back through S3 and the filer."""
    filer, g = gw
    s3 = client(g, AK, SK)
    s3.create_bucket(Bucket="objs-copy")
    data = os.urandom((4 << 20) + 99)
    etag = s3.put_object(Bucket="objs", Key="cp/src", Body=data, ContentType="text/x",
                         Metadata={"a": "1"})["ETag"]
    r = s3.copy_object(Bucket="objs-copy", Key="dst/one", CopySource={"Bucket": "objs",
                                                                       "Key": "cp/src"})
    assert r["CopyObjectResult"]["ETag"] == etag
    got = s3.get_object(Bucket="objs-copy", Key="dst/one")
    assert got["Body"].read() == data and got["Metadata"] == {"a": "1"}
    assert got["ContentType"] == "text/x"
    assert filer.get("/buckets/objs-copy/dst/one").content == data
    s3.copy_object(Bucket="objs", Key="cp/two", CopySource="objs/cp/src",
                   MetadataDirective="REPLACE", Metadata={"b": "2"}, ContentType="app/y")
    h = s3.head_object(Bucket="objs", Key="cp/two")
    assert h["Metadata"] == {"b": "2"} and h["ContentType"] == "app/y" and h["ETag"] == etag
    # a key with spaces and unicode as the source (URL-encoded by boto3)
    s3.put_object(Bucket="objs", Key="cp/a b+ü", Body=b"odd")
    s3.copy_object(Bucket="objs", Key="cp/odd", CopySource={"Bucket": "objs",
                                                            "Key": "cp/a b+ü"})
    assert s3.get_object(Bucket="objs", Key="cp/odd")["Body"].read() == b"odd"
    # conditions on the source
    assert code_of(s3.copy_object, Bucket="objs", Key="cp/x", CopySource="objs/cp/src",
                   CopySourceIfMatch='"nope"') == "PreconditionFailed"
    assert code_of(s3.copy_object, Bucket="objs", Key="cp/x", CopySource="objs/cp/src",
                   CopySourceIfNoneMatch=etag) == "PreconditionFailed"
    assert s3.copy_object(Bucket="objs", Key="cp/x", CopySource="objs/cp/src",
                          CopySourceIfMatch=etag)["CopyObjectResult"]["ETag"] == etag
    # onto itself: refused with COPY, allowed with REPLACE
    assert code_of(s3.copy_object, Bucket="objs", Key="cp/src",
                   CopySource="objs/cp/src") == "InvalidRequest"
    s3.copy_object(Bucket="objs", Key="cp/src", CopySource="objs/cp/src",
                   MetadataDirective="REPLACE", Metadata={"c": "3"})
    assert s3.head_object(Bucket="objs", Key="cp/src")["Metadata"] == {"c": "3"}
    assert s3.get_object(Bucket="objs", Key="cp/src")["Body"].read() == data
    assert code_of(s3.copy_object, Bucket="objs", Key="cp/y",
                   CopySource="objs/cp/none") == "NoSuchKey"
    assert code_of(s3.copy_object, Bucket="objs", Key="cp/y",
                   CopySource="nobucketnokey") == "InvalidArgument"
    # destination conditions
    assert code_of(s3.copy_object, Bucket="objs", Key="cp/x", CopySource="objs/cp/src",
                   IfNoneMatch="*") == "PreconditionFailed"
    # bob may read pub* buckets only: no copy out of objs
    bob = client(g, "AKBOB", "bob-secret")
    assert code_of(bob.copy_object, Bucket="objs", Key="cp/z",
                   CopySource="objs/cp/src") == "AccessDenied"


def vm_hwm_kib(daemon):
    for line in open("/proc/%d/status" % daemon.proc.pid):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def asan_build(monkeypatch):
    """Whether the daemons are ASan builds; if so, have them return freed memory at
    once (no quarantine) so their peak RSS means what it does without ASan."""
    with open(WEEDFS, "rb") as f:
        if b"__asan_init" not in f.read():
            return False
    saved = os.environ.get("ASAN_OPTIONS")
    monkeypatch.setenv("ASAN_OPTIONS", ((saved + ":") if saved else "")
                       + "quarantine_size_mb=0:allocator_release_to_os_interval_ms=0")
    return True


def test_concurrent_uploads_share_a_memory_budget(module_cluster, gw, monkeypatch):
    """Eight 24 MiB PUTs at once through a gateway with -uploadMemoryMB=24: each may
    hold ~22 MiB (two pieces, five 4 MiB chunk buffers), so they take turns. Measured:
    its peak RSS grows ~17 MiB; ~83 MiB with a budget they all fit in."""
    filer, _ = gw
    bound = 48 * (2 if asan_build(monkeypatch) else 1)
    g = start_gateway(module_cluster, filer, IDENTITIES, extra=["-uploadMemoryMB=24"]).start()
    bodies = [os.urandom(24 << 20) for _ in range(8)]
    before = vm_hwm_kib(g)

    def put(i):
        return client(g, AK, SK).put_object(Bucket="objs", Key="budget/%d" % i, Body=bodies[i])

    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        etags = [r["ETag"] for r in ex.map(put, range(8))]
    grew = (vm_hwm_kib(g) - before) >> 10
    assert etags == ['"%s"' % hashlib.md5(b).hexdigest() for b in bodies]
    s3 = client(g, AK, SK)
    for i in (0, 7):
        assert s3.get_object(Bucket="objs", Key="budget/%d" % i)["Body"].read() == bodies[i]
    assert grew < bound, "peak RSS grew %d MiB" % grew


def test_big_put_and_get_keep_memory_flat(module_cluster, gw, monkeypatch):
    """A 512 MiB PUT (sent in pieces) and GET (read slowly) move through a gateway of
    their own without its peak RSS growing by more than a few pieces and chunk
    buffers."""
    filer, _ = gw
    bound = 96 * 1024 * (2 if asan_build(monkeypatch) else 1)
    g = start_gateway(module_cluster, filer, IDENTITIES).start()
    size, piece = 512 << 20, 1 << 20
    block = os.urandom(piece)
    md5 = hashlib.md5()
    for _ in range(size // piece):
        md5.update(block)
    before = vm_hwm_kib(g)
    s = Signer(AK, SK)
    host, port = g.url.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=120)
    headers = s.sign("PUT", g.url, "/objs/mem/big", {"Content-Length": str(size)},
                     "UNSIGNED-PAYLOAD")
    conn.putrequest("PUT", "/objs/mem/big", skip_host=False)
    for k, v in headers.items():
        conn.putheader(k, v)
    conn.endheaders()
    for _ in range(size // piece):
        conn.send(block)
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()
    assert resp.getheader("ETag") == '"%s"' % md5.hexdigest()
    resp.read()
    conn.close()
    got = client(g, AK, SK).get_object(Bucket="objs", Key="mem/big")
    n, check = 0, hashlib.md5()
    for part in got["Body"].iter_chunks(1 << 20):
        n += len(part)
        check.update(part)
    assert n == size and check.hexdigest() == md5.hexdigest()
    grew = vm_hwm_kib(g) - before
    # the bounds: two 1 MiB pieces and the writer's 4 in-flight 4 MiB chunks on the way
    # in, a 16 MiB read window on the way out; far below the object's 512 MiB
    assert grew < bound, "gateway peak RSS grew by %d KiB" % grew


def test_tagging(gw):
    """Object and bucket tags: put/get/delete, x-amz-tagging on PUT, the count on
    GET/HEAD, copies keep or replace them, S3's limits; a tag change keeps the ETag."""
    _, g = gw
    s3 = client(g, AK, SK)
    etag = s3.put_object(Bucket="objs", Key="t/obj", Body=b"tagged",
                         Tagging="team=blue&env=a%20b")["ETag"]
    tags = s3.get_object_tagging(Bucket="objs", Key="t/obj")["TagSet"]
    # sorted by key, whatever order they were given in
    assert [(t["Key"], t["Value"]) for t in tags] == [("env", "a b"), ("team", "blue")]
    assert s3.get_object(Bucket="objs", Key="t/obj")["TagCount"] == 2
    s3.put_object_tagging(Bucket="objs", Key="t/obj", Tagging={"TagSet": [
        {"Key": "k", "Value": "ü & <v>"}]})
    assert s3.get_object_tagging(Bucket="objs", Key="t/obj")["TagSet"] == [
        {"Key": "k", "Value": "ü & <v>"}]
    assert s3.head_object(Bucket="objs", Key="t/obj")["ETag"] == etag
    # copies: tags come along (COPY) or from the request (REPLACE)
    s3.copy_object(Bucket="objs", Key="t/c1", CopySource="objs/t/obj")
    assert s3.get_object_tagging(Bucket="objs", Key="t/c1")["TagSet"][0]["Key"] == "k"
    s3.copy_object(Bucket="objs", Key="t/c2", CopySource="objs/t/obj",
                   TaggingDirective="REPLACE", Tagging="x=1")
    assert s3.get_object_tagging(Bucket="objs", Key="t/c2")["TagSet"] == [
        {"Key": "x", "Value": "1"}]
    s3.delete_object_tagging(Bucket="objs", Key="t/obj")
    assert s3.get_object_tagging(Bucket="objs", Key="t/obj")["TagSet"] == []
    assert "TagCount" not in s3.get_object(Bucket="objs", Key="t/obj")
    # limits: 11 tags, a duplicate key, a long key; nothing changes
    too_many = [{"Key": "k%d" % i, "Value": "v"} for i in range(11)]
    for ts in (too_many, [{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}],
               [{"Key": "k" * 129, "Value": "v"}], [{"Key": "k", "Value": "v" * 257}]):
        assert code_of(s3.put_object_tagging, Bucket="objs", Key="t/c2",
                       Tagging={"TagSet": ts}) == "InvalidTag"
    assert code_of(s3.put_object, Bucket="objs", Key="t/bad", Body=b"x",
                   Tagging="a=1&a=2") == "InvalidTag"
    assert code_of(s3.head_object, Bucket="objs", Key="t/bad") == "404"
    assert code_of(s3.get_object_tagging, Bucket="objs", Key="t/none") == "NoSuchKey"
    # bucket tags
    assert code_of(s3.get_bucket_tagging, Bucket="objs") == "NoSuchTagSet"
    s3.put_bucket_tagging(Bucket="objs", Tagging={"TagSet": [{"Key": "owner", "Value": "qa"}]})
    assert s3.get_bucket_tagging(Bucket="objs")["TagSet"] == [{"Key": "owner", "Value": "qa"}]
    s3.delete_bucket_tagging(Bucket="objs")
    assert code_of(s3.get_bucket_tagging, Bucket="objs") == "NoSuchTagSet"
    # bob has no Tagging grant on objs
    bob = client(g, "AKBOB", "bob-secret")
    assert code_of(bob.put_object_tagging, Bucket="objs", Key="t/obj",
                   Tagging={"TagSet": []}) == "AccessDenied"


def test_get_object_attributes(gw):
    _, g = gw
    s3 = client(g, AK, SK)
    data = os.urandom(5000)
    r = s3.put_object(Bucket="objs", Key="attr/o", Body=data, ChecksumAlgorithm="SHA256")
    a = s3.get_object_attributes(Bucket="objs", Key="attr/o", ObjectAttributes=[
        "ETag", "Checksum", "ObjectSize", "StorageClass"])
    assert a["ETag"] == hashlib.md5(data).hexdigest() and a["ObjectSize"] == 5000
    assert a["Checksum"]["ChecksumSHA256"] == r["ChecksumSHA256"]
    assert a["StorageClass"] == "STANDARD" and "ObjectParts" not in a
    a = s3.get_object_attributes(Bucket="objs", Key="attr/o", ObjectAttributes=["ObjectSize"])
    assert a["ObjectSize"] == 5000 and "ETag" not in a
    assert code_of(s3.get_object_attributes, Bucket="objs", Key="attr/none",
                   ObjectAttributes=["ETag"]) == "NoSuchKey"
    req = signed(g, AK, SK, "GET", "/objs/attr/o", query="attributes=")
    assert req.status_code == 400 and "InvalidArgument" in req.text
    req = signed(g, AK, SK, "PUT", "/objs/attr/o", b"x", query="attributes=")
    assert req.status_code == 405
    assert s3.get_object(Bucket="objs", Key="attr/o")["Body"].read() == data


def test_virtual_hosted_requests(module_cluster, gw):
    """With -domainName, Host <bucket>.<domain> names the bucket; path style still works."""
    filer, _ = gw
    g = start_gateway(module_cluster, filer, IDENTITIES,
                      extra=["-domainName=s3.test,other.test"]).start()
    port = g.url.split(":")[1]
    vhost = "objs.s3.test:%s" % port
    r = signed(g, AK, SK, "PUT", "/vh/key.txt", b"virtual", host=vhost)
    assert r.status_code == 200, r.text
    r = signed(g, AK, SK, "GET", "/vh/key.txt", host="objs.other.test:%s" % port)
    assert r.status_code == 200 and r.content == b"virtual"
    r = signed(g, AK, SK, "GET", "/", query="list-type=2&prefix=vh%2F", host=vhost)
    assert r.status_code == 200 and "<Key>vh/key.txt</Key>" in r.text
    assert client(g, AK, SK).get_object(Bucket="objs", Key="vh/key.txt")["Body"].read() == \
        b"virtual"
    r = signed(g, AK, SK, "GET", "/", host="nosuchbucket.s3.test:%s" % port)
    assert r.status_code == 404 and "NoSuchBucket" in r.text


def test_browser_post_uploads(gw):
    """PostObject: boto3's presigned POST (SigV4 policy), ${filename}, metadata fields,
    success_action_status / redirect, and the refusals: a wrong signature, a failed or
    missing condition, an expired policy, a file outside content-length-range, no file,
    oversized fields. A refused form stores nothing."""
    filer, g = gw
    s3 = boto3.client("s3", endpoint_url="http://%s" % g.url, aws_access_key_id=AK,
                      aws_secret_access_key=SK, region_name="us-east-1",
                      config=Config(signature_version="s3v4"))
    post = s3.generate_presigned_post(
        "objs", "up/${filename}",
        Fields={"x-amz-meta-source": "form", "success_action_status": "201"},
        Conditions=[["starts-with", "$key", "up/"], {"x-amz-meta-source": "form"},
                    {"success_action_status": "201"}, ["content-length-range", 1, 100000]],
        ExpiresIn=300)
    body = os.urandom(5000)
    r = requests.post(post["url"], data=post["fields"],
                      files={"file": ("photo.jpg", body, "image/jpeg")}, timeout=30)
    assert r.status_code == 201, r.text
    assert "<Key>up/photo.jpg</Key>" in r.text
    assert hashlib.md5(body).hexdigest() in r.text
    got = s3.get_object(Bucket="objs", Key="up/photo.jpg")
    assert got["Body"].read() == body and got["Metadata"] == {"source": "form"}
    assert got["ContentType"] == "image/jpeg"
    assert filer.get("/buckets/objs/up/photo.jpg").content == body

    def refused(fields, files, code, key="up/bad.bin"):
        r = requests.post(post["url"], data=fields, files=files, timeout=30)
        assert r.status_code in (400, 403) and "<Code>%s</Code>" % code in r.text, r.text
        assert filer.get("/buckets/objs/" + key).status_code == 404
    f = dict(post["fields"], key="up/bad.bin")
    refused(dict(f, **{"x-amz-signature": "0" * 64}), {"file": b"x"}, "SignatureDoesNotMatch")
    refused(dict(f, key="elsewhere/bad.bin"), {"file": b"x"}, "AccessDenied",
            key="elsewhere/bad.bin")
    refused(dict(f, **{"x-amz-meta-extra": "1"}), {"file": b"x"}, "AccessDenied")
    refused(f, {"file": b"x" * 100001}, "EntityTooLarge")
    refused(f, {"file": b""}, "EntityTooSmall")
    refused(f, {"notfile": (None, b"x")}, "InvalidArgument")
    refused(dict(f, **{"x-ignore-pad": "p" * (21 << 10)}), {"file": b"x"},
            "MaxPostPreDataLengthExceededError")
    old = s3.generate_presigned_post("objs", "up/late", ExpiresIn=1)
    time.sleep(2.1)
    r = requests.post(old["url"], data=old["fields"], files={"file": b"x"}, timeout=30)
    assert r.status_code == 403 and "Policy expired" in r.text
    # a redirect after success
    red = s3.generate_presigned_post(
        "objs", "up/r.txt", Fields={"success_action_redirect": "http://app.test/done"},
        Conditions=[{"success_action_redirect": "http://app.test/done"}])
    r = requests.post(red["url"], data=red["fields"], files={"file": b"hi"},
                      allow_redirects=False, timeout=30)
    assert r.status_code == 303
    assert r.headers["Location"].startswith("http://app.test/done?bucket=objs&key=up%2Fr.txt")
