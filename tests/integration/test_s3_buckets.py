"""The S3 gateway (weedfs s3) with real clients: identities and SigV4, bucket operations,
and the same buckets seen through the filer's HTTP API. Object data: test_s3_objects.py."""

import json
import os
import socket
import subprocess

import boto3
import botocore
import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest
import requests

from conftest import wait_until
from filer_fixtures import start_mini_with_filer
from s3_fixtures import IDENTITIES, client, code_of, start_gateway

@pytest.fixture(scope="module")
def gw(module_cluster):
    _, filer = start_mini_with_filer(module_cluster)
    g = start_gateway(module_cluster, filer, IDENTITIES).start()
    return filer, g


def test_bucket_lifecycle_and_filer_view(gw):
    filer, g = gw
    alice = client(g, "AKALICE", "alice-secret")
    r = alice.create_bucket(Bucket="life")
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert r["ResponseMetadata"]["HTTPHeaders"]["x-amz-request-id"]
    assert "life" in [b["Name"] for b in alice.list_buckets()["Buckets"]]
    # the bucket is the filer's /buckets/life directory, and the reverse
    assert filer.meta("/buckets/life")["Mode"] & 0o170000 == 0o040000
    assert filer.post("/buckets/fromfiler/").status_code == 201
    names = [b["Name"] for b in alice.list_buckets()["Buckets"]]
    assert "fromfiler" in names and names == sorted(names)
    # creating one's own bucket again: us-east-1 answers 200 (test_s3_acl has the rest)
    assert alice.create_bucket(Bucket="life")["ResponseMetadata"]["HTTPStatusCode"] == 200
    h = alice.head_bucket(Bucket="life")["ResponseMetadata"]["HTTPHeaders"]
    assert h["x-amz-bucket-region"] == "us-east-1"
    assert alice.get_bucket_location(Bucket="life")["LocationConstraint"] is None
    # not empty: refused, nothing deleted
    assert filer.put("/buckets/life/x.txt", b"data").status_code == 201
    assert code_of(alice.delete_bucket, Bucket="life") == "BucketNotEmpty"
    assert filer.get("/buckets/life/x.txt").content == b"data"
    assert filer.delete("/buckets/life/x.txt").status_code == 204
    assert alice.delete_bucket(Bucket="life")["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert code_of(alice.head_bucket, Bucket="life") == "404"
    assert code_of(alice.delete_bucket, Bucket="life") == "NoSuchBucket"
    assert code_of(alice.get_bucket_location, Bucket="life") == "NoSuchBucket"


def test_create_bucket_configuration(gw):
    _, g = gw
    alice = client(g, "AKALICE", "alice-secret")
    elsewhere = boto3.client("s3", endpoint_url="http://%s" % g.url, region_name="eu-west-1",
                             aws_access_key_id="AKALICE", aws_secret_access_key="alice-secret")
    # a client signing for another region is refused by the signature's scope
    assert code_of(elsewhere.list_buckets) == "AuthorizationHeaderMalformed"
    assert code_of(alice.create_bucket, Bucket="cfg-b",
                   CreateBucketConfiguration={"LocationConstraint": "eu-west-1"}) == \
        "InvalidArgument"
    assert "cfg-b" not in [b["Name"] for b in alice.list_buckets()["Buckets"]]


def test_identities_and_grants(gw):
    _, g = gw
    alice = client(g, "AKALICE", "alice-secret")
    bob = client(g, "AKBOB", "bob-secret")
    alice.create_bucket(Bucket="pub-open")
    alice.create_bucket(Bucket="secret-b")
    # bob lists only the buckets he has a grant on (or owns), and may delete none of them
    assert [b["Name"] for b in bob.list_buckets()["Buckets"]] == ["pub-open"]
    assert bob.head_bucket(Bucket="pub-open")["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert code_of(bob.head_bucket, Bucket="secret-b") == "403"
    assert code_of(bob.create_bucket, Bucket="pub-open") == "BucketAlreadyExists"
    assert code_of(bob.delete_bucket, Bucket="pub-open") == "AccessDenied"
    assert code_of(client(g, "AKALICE", "wrong").list_buckets) == "SignatureDoesNotMatch"
    assert code_of(client(g, "AKNOBODY", "x").list_buckets) == "InvalidAccessKeyId"
    # unsigned requests are refused when identities exist; errors are S3 XML with an id
    r = requests.get("http://%s/" % g.url, timeout=10)
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text
    assert "<RequestId>%s</RequestId>" % r.headers["x-amz-request-id"] in r.text
    r = requests.put("http://%s/pub-x" % g.url, timeout=10)
    assert r.status_code == 403
    assert "pub-x" not in [b["Name"] for b in alice.list_buckets()["Buckets"]]


def test_bad_input(gw):
    _, g = gw
    alice = client(g, "AKALICE", "alice-secret")
    for bad in ("ab", "UpperCase", "a..b", "-lead", "192.168.1.1", "x" * 64, "xn--abc"):
        assert code_of(alice.head_bucket, Bucket=bad) in ("400", "InvalidBucketName"), bad
    # a signed request with a malformed body, and an unimplemented operation
    alice.create_bucket(Bucket="bad-in")
    creds = botocore.credentials.Credentials("AKALICE", "alice-secret")
    for body in (b"<CreateBucketConfiguration><LocationConstraint>", b"not xml"):
        req = botocore.awsrequest.AWSRequest(method="PUT", url="http://%s/bad-in2" % g.url,
                                             data=body)
        botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
        r = requests.put(req.url, data=body, headers=dict(req.headers), timeout=10)
        assert r.status_code == 400 and "<Code>MalformedXML</Code>" in r.text, r.text
    # a body over the 64 KiB bound: MaxMessageLengthExceeded, no bucket
    big = b"<CreateBucketConfiguration>" + b" " * (70 << 10) + b"</CreateBucketConfiguration>"
    req = botocore.awsrequest.AWSRequest(method="PUT", url="http://%s/bad-in2" % g.url, data=big)
    botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
    r = requests.put(req.url, data=big, headers=dict(req.headers), timeout=10)
    assert r.status_code == 400 and "<Code>MaxMessageLengthExceeded</Code>" in r.text, r.text
    assert "bad-in2" not in [b["Name"] for b in alice.list_buckets()["Buckets"]]
    assert code_of(alice.get_object_acl, Bucket="bad-in", Key="k") == "NoSuchKey"
    # a body that is not the one signed: XAmzContentSHA256Mismatch, no bucket
    body = b"<CreateBucketConfiguration/>"
    req = botocore.awsrequest.AWSRequest(method="PUT", url="http://%s/bad-in3" % g.url, data=body)
    botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
    r = requests.put(req.url, data=body.replace(b"/", b" /"), headers=dict(req.headers),
                     timeout=10)
    assert r.status_code == 400 and "XAmzContentSHA256Mismatch" in r.text, r.text
    assert "bad-in3" not in [b["Name"] for b in alice.list_buckets()["Buckets"]]


def test_server_refusals_are_s3_xml(gw):
    """What the HTTP server refuses by itself (a head over 64 KiB, a request it cannot
    parse) is answered in S3's XML with a request id, like every other error."""
    _, g = gw
    host, port = g.url.split(":")
    for raw, status, code in (
            (b"GET /b HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (70 << 10) + b"\r\n\r\n",
             431, "RequestHeaderSectionTooLarge"),
            (b"GET / HTTP/1.1\r\nHost x\r\n\r\n", 400, "InvalidRequest")):
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(raw)
            got = b""
            while b"</Error>" not in got:
                more = sock.recv(65536)
                if not more:
                    break
                got += more
        head, _, body = got.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 %d" % status), head
        assert b"x-amz-request-id:" in head.lower() and b"application/xml" in head
        assert b"<Code>%s</Code>" % code.encode() in body, body


def test_open_gateway_and_bad_config(module_cluster, gw):
    filer, _ = gw
    g = start_gateway(module_cluster, filer).start()
    assert "OPEN" in g.log_path.read_text()
    r = requests.put("http://%s/open-b" % g.url, timeout=10)
    assert r.status_code == 200
    assert filer.meta("/buckets/open-b")["Mode"] & 0o170000 == 0o040000
    anyone = client(g, "ANY", "thing")
    assert "open-b" in [b["Name"] for b in anyone.list_buckets()["Buckets"]]
    # a malformed identities file stops the gateway at start with a clear message
    for cfg in ("{not json", '{"identities":[{"name":"x","credentials":[{}]}]}',
                '{"identities":[{"name":"x","credentials":[],"actions":["Fly"]}]}',
                '{"identities":[{"name":"a","credentials":[{"accessKey":"K","secretKey":"s"}]},'
                '{"name":"b","credentials":[{"accessKey":"K","secretKey":"t"}]}]}'):
        bad = start_gateway(module_cluster, filer, cfg)
        with pytest.raises(AssertionError):
            bad.start()
        assert bad.proc.returncode == 1
        assert "identities:" in bad.log_path.read_text()


def test_mini_serves_s3_with_env_identity_and_buckets(cluster, monkeypatch):
    """weedfs mini runs the gateway: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY become its
    identity and S3_BUCKET's buckets are made at start (a bad name is logged, not fatal)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKMINI")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "mini-secret")
    monkeypatch.setenv("S3_BUCKET", "alpha, beta,Bad_Name")
    m = cluster.mini()
    g = type("G", (), {"url": "127.0.0.1:%d" % m.s3_port})
    c = client(g, "AKMINI", "mini-secret")
    assert [b["Name"] for b in c.list_buckets()["Buckets"]] == ["alpha", "beta"]
    assert "not a valid bucket name" in m.log_path.read_text()
    assert requests.get("http://%s/" % g.url, timeout=10).status_code == 403
    assert code_of(client(g, "AKMINI", "nope").list_buckets) == "SignatureDoesNotMatch"
    # restarting with the buckets already there is fine
    assert m.stop() == 0
    m.start()
    assert [b["Name"] for b in c.list_buckets()["Buckets"]] == ["alpha", "beta"]


# ---- ListObjects / ListObjectsV2 over objects written through the filer -----------------

LIST_KEYS = ["a-b", "a/x", "a/y/z", "a.b/c", "b/", "b/c d+e%f", "caf\u00e9/\u00e9t\u00e9",
             "deep/1/2/3/4/k", "photos/2024-01/x.jpg", "photos/2024-02/y.jpg", "photos/2025/z",
             "photos/index.html", "z"]


def model(keys, prefix="", delim=None, after=""):
    """What S3 lists: keys and common prefixes in byte order, each once."""
    out = []
    for k in sorted(keys, key=lambda s: s.encode()):
        if not k.startswith(prefix) or k.encode() <= after.encode():
            continue
        if delim and delim in k[len(prefix):]:
            cp = k[:k.index(delim, len(prefix)) + len(delim)]
            if after.startswith(cp) or cp.encode() <= after.encode():
                continue
            if not out or out[-1] != ("P", cp):
                out.append(("P", cp))
        else:
            out.append(("K", k))
    return out


def listed(page):
    items = [("K", c["Key"]) for c in page.get("Contents", [])]
    items += [("P", p["Prefix"]) for p in page.get("CommonPrefixes", [])]
    return sorted(items, key=lambda i: i[1].encode())


@pytest.fixture(scope="module")
def listing(gw):
    filer, g = gw
    alice = client(g, "AKALICE", "alice-secret")
    alice.create_bucket(Bucket="lst")
    keys = [k for k in LIST_KEYS if not k.endswith("/")]
    for k in keys:
        r = filer.put("/buckets/lst/" + requests.utils.quote(k), k.encode())
        assert r.status_code == 201, (k, r.text)
    return alice, keys


@pytest.mark.parametrize("prefix,delim", [("", None), ("", "/"), ("a", "/"), ("a/", "/"),
                                          ("photos/", "/"), ("photos/2024", "/"),
                                          ("photos/2024-0", None), ("p", "-"), ("nope", "/"),
                                          ("", "a")])
def test_list_objects_matches_s3_order(listing, prefix, delim):
    c, keys = listing
    kw = {"Prefix": prefix}
    if delim:
        kw["Delimiter"] = delim
    want = model(keys, prefix, delim)
    page = c.list_objects_v2(Bucket="lst", **kw)
    assert listed(page) == want
    assert page["KeyCount"] == len(want) and not page["IsTruncated"]
    assert listed(c.list_objects(Bucket="lst", **kw)) == want
    # pages of 1, 2 and 3 follow each other exactly (v2 tokens and v1 markers)
    for size in (1, 2, 3):
        got, token = [], None
        while True:
            args = dict(kw, MaxKeys=size)
            if token:
                args["ContinuationToken"] = token
            p = c.list_objects_v2(Bucket="lst", **args)
            got += listed(p)
            assert p["KeyCount"] <= size
            if not p["IsTruncated"]:
                break
            token = p["NextContinuationToken"]
        assert got == want, size
    paginator = c.get_paginator("list_objects")
    got = []
    for p in paginator.paginate(Bucket="lst", PaginationConfig={"PageSize": 2}, **kw):
        got += listed(p)
    assert got == want


def test_list_objects_parameters(listing):
    c, keys = listing
    p = c.list_objects_v2(Bucket="lst", StartAfter="a/x")
    assert listed(p) == model(keys, after="a/x")
    p = c.list_objects_v2(Bucket="lst", StartAfter="photos/", Delimiter="/")
    assert listed(p) == model(keys, delim="/", after="photos/")
    p = c.list_objects_v2(Bucket="lst", MaxKeys=0)
    assert p["KeyCount"] == 0 and "Contents" not in p
    # an empty continuation token is no token, as S3 takes it
    p = c.list_objects_v2(Bucket="lst", ContinuationToken="")
    assert listed(p) == model(keys) and "ContinuationToken" not in p
    p = c.list_objects_v2(Bucket="lst", ContinuationToken="", StartAfter="a/x")
    assert listed(p) == model(keys, after="a/x")
    p = c.list_objects_v2(Bucket="lst", Prefix="caf\u00e9/", FetchOwner=True)
    assert [x["Key"] for x in p["Contents"]] == ["caf\u00e9/\u00e9t\u00e9"]
    assert p["Contents"][0]["Owner"]["ID"] == "alice"
    assert p["Contents"][0]["Size"] == len("caf\u00e9/\u00e9t\u00e9".encode())
    etag = p["Contents"][0]["ETag"]
    assert etag.startswith('"') and etag == c.list_objects_v2(
        Bucket="lst", Prefix="caf\u00e9/")["Contents"][0]["ETag"]
    raw = requests.get("http://%s/lst" % c.meta.endpoint_url.split("//")[1], timeout=10)
    assert raw.status_code == 403  # unsigned
    # encoding-type=url asked for explicitly: boto3 leaves the keys encoded (when it adds
    # the parameter itself, as in every listing above, it decodes them)
    p = c.list_objects_v2(Bucket="lst", Prefix="b/", EncodingType="url")
    assert [x["Key"] for x in p["Contents"]] == ["b/c%20d%2Be%25f"]
    for bad in ({"MaxKeys": -1}, {"ContinuationToken": "!!notbase64"},
                {"EncodingType": "gzip"}):
        assert code_of(c.list_objects_v2, Bucket="lst", **bad) in (
            "InvalidArgument", "400"), bad
    assert code_of(c.list_objects_v2, Bucket="no-such-bucket") == "NoSuchBucket"


def test_awscli_buckets_and_listing(gw, tmp_path):
    """awscli (s3 and s3api) against the gateway, signing with alice's key; its presigned
    URL (SigV2) fetched with requests."""
    filer, g = gw
    env = dict(os.environ, AWS_ACCESS_KEY_ID="AKALICE", AWS_SECRET_ACCESS_KEY="alice-secret",
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))

    def aws(*args):
        p = subprocess.run(["aws", "--endpoint-url", "http://%s" % g.url] + list(args),
                           env=env, capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr

    assert aws("s3", "mb", "s3://cli-b")[0] == 0
    assert filer.put("/buckets/cli-b/dir/one.txt", b"1").status_code == 201
    assert filer.put("/buckets/cli-b/two.txt", b"22").status_code == 201
    rc, out = aws("s3", "ls")
    assert rc == 0 and "cli-b" in out
    rc, out = aws("s3", "ls", "s3://cli-b/")
    assert rc == 0 and "PRE dir/" in out and "two.txt" in out and "one.txt" not in out
    rc, out = aws("s3", "ls", "--recursive", "s3://cli-b")
    assert rc == 0 and "dir/one.txt" in out and "two.txt" in out
    rc, out = aws("s3api", "list-objects-v2", "--bucket", "cli-b", "--max-keys", "1")
    assert rc == 0 and json.loads(out)["Contents"][0]["Key"] == "dir/one.txt"
    rc, out = aws("s3", "rb", "s3://cli-b")
    assert rc != 0 and "BucketNotEmpty" in out
    # `aws s3 presign` signs with SigV2 by default (AWSAccessKeyId, Expires, Signature)
    rc, url = aws("s3", "presign", "s3://cli-b/two.txt", "--expires-in", "60")
    assert rc == 0 and "AWSAccessKeyId=AKALICE" in url, url
    r = requests.get(url.strip(), timeout=10)
    assert r.status_code == 200 and r.content == b"22"
    env["AWS_SECRET_ACCESS_KEY"] = "wrong"
    rc, out = aws("s3", "ls")
    assert rc != 0 and "SignatureDoesNotMatch" in out



def test_head_and_delete_object(gw):
    """HeadObject and DeleteObject over files written through the filer."""
    filer, g = gw
    alice = client(g, "AKALICE", "alice-secret")
    bob = client(g, "AKBOB", "bob-secret")
    alice.create_bucket(Bucket="pub-obj")
    assert filer.put("/buckets/pub-obj/dir/f.txt", b"hello", headers={
        "Content-Type": "text/plain"}).status_code == 201
    h = alice.head_object(Bucket="pub-obj", Key="dir/f.txt")
    assert h["ContentLength"] == 5 and h["ContentType"] == "text/plain"
    etag = h["ETag"]
    assert etag.startswith('"') and h["LastModified"]
    assert bob.head_object(Bucket="pub-obj", Key="dir/f.txt")["ETag"] == etag  # Read grant
    # conditional requests
    assert alice.head_object(Bucket="pub-obj", Key="dir/f.txt", IfMatch=etag)["ContentLength"] == 5
    assert code_of(alice.head_object, Bucket="pub-obj", Key="dir/f.txt",
                   IfMatch='"other"') == "412"
    assert code_of(alice.head_object, Bucket="pub-obj", Key="dir/f.txt",
                   IfNoneMatch=etag) == "304"
    assert code_of(alice.head_object, Bucket="pub-obj", Key="dir/f.txt",
                   IfModifiedSince=h["LastModified"]) == "304"
    # missing keys, directories and unnamable keys are 404; long keys 400
    for k in ("nope", "dir", "dir/", "a//b", "dir/../dir/f.txt"):
        assert code_of(alice.head_object, Bucket="pub-obj", Key=k) == "404", k
    assert code_of(alice.head_object, Bucket="pub-obj", Key="k" * 1025) == "400"
    # delete: bob may not, alice may; deleting again (or a missing key) is still 204
    assert code_of(bob.delete_object, Bucket="pub-obj", Key="dir/f.txt") == "AccessDenied"
    for _ in range(2):
        r = alice.delete_object(Bucket="pub-obj", Key="dir/f.txt")
        assert r["ResponseMetadata"]["HTTPStatusCode"] == 204
    assert filer.get("/buckets/pub-obj/dir/f.txt").status_code == 404
    # the last key under a prefix takes its now empty directories with it, as in S3
    assert filer.get("/buckets/pub-obj/dir").status_code == 404
    assert filer.put("/buckets/pub-obj/d2/sub/g.txt", b"g").status_code == 201
    assert filer.put("/buckets/pub-obj/d2/h.txt", b"h").status_code == 201
    alice.delete_object(Bucket="pub-obj", Key="d2/sub/g.txt")
    assert filer.get("/buckets/pub-obj/d2/sub").status_code == 404
    assert alice.delete_object(Bucket="pub-obj", Key="d2")["ResponseMetadata"][
        "HTTPStatusCode"] == 204
    assert filer.meta("/buckets/pub-obj/d2")["IsDirectory"]  # a directory is not an object
    assert filer.get("/buckets/pub-obj/d2/h.txt").content == b"h"
    assert code_of(alice.delete_object, Bucket="no-such-b", Key="k") == "NoSuchBucket"


def test_delete_objects(gw):
    """DeleteObjects: the keys go, missing ones count as deleted, Quiet lists only errors,
    and a body whose digest does not match is refused before anything is deleted."""
    filer, g = gw
    alice = client(g, "AKALICE", "alice-secret")
    alice.create_bucket(Bucket="multi-del")
    for k in ("a.txt", "d/b.txt", "d/c.txt", "keep.txt"):
        assert filer.put("/buckets/multi-del/" + k, k.encode()).status_code == 201
    r = alice.delete_objects(Bucket="multi-del", Delete={"Objects": [
        {"Key": "a.txt"}, {"Key": "d/b.txt"}, {"Key": "missing"}, {"Key": "k" * 1025}]})
    assert sorted(d["Key"] for d in r["Deleted"]) == ["a.txt", "d/b.txt", "missing"]
    assert [e["Code"] for e in r["Errors"]] == ["KeyTooLongError"]
    r = alice.delete_objects(Bucket="multi-del",
                             Delete={"Objects": [{"Key": "d/c.txt"}], "Quiet": True})
    assert "Deleted" not in r and "Errors" not in r
    names = [c["Key"] for c in alice.list_objects_v2(Bucket="multi-del")["Contents"]]
    assert names == ["keep.txt"]
    # a Content-MD5 that does not match the body: BadDigest, nothing deleted
    body = (b'<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>keep.txt'
            b'</Key></Object></Delete>')
    creds = botocore.credentials.Credentials("AKALICE", "alice-secret")
    for md5, code in (("AAAAAAAAAAAAAAAAAAAAAA==", "BadDigest"), ("bogus", "InvalidDigest")):
        req = botocore.awsrequest.AWSRequest(
            method="POST", url="http://%s/multi-del?delete" % g.url, data=body,
            headers={"Content-MD5": md5})
        botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
        resp = requests.post(req.url, data=body, headers=dict(req.headers), timeout=10)
        assert resp.status_code == 400 and "<Code>%s</Code>" % code in resp.text, resp.text
    for bad in (b"<Delete></Delete>", b"<Delete><Object></Object></Delete>", b"junk",
                b"<Delete>" + b"<Object><Key>x</Key></Object>" * 1001 + b"</Delete>"):
        req = botocore.awsrequest.AWSRequest(
            method="POST", url="http://%s/multi-del?delete" % g.url, data=bad)
        botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
        resp = requests.post(req.url, data=bad, headers=dict(req.headers), timeout=10)
        assert resp.status_code == 400 and "MalformedXML" in resp.text, resp.text
    assert filer.get("/buckets/multi-del/keep.txt").content == b"keep.txt"
    # an identity without the right: the key's own AccessDenied, nothing deleted
    r = client(g, "AKBOB", "bob-secret").delete_objects(
        Bucket="multi-del", Delete={"Objects": [{"Key": "keep.txt"}]})
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("keep.txt", "AccessDenied")]
    assert filer.get("/buckets/multi-del/keep.txt").content == b"keep.txt"


def test_cors(gw):
    """Bucket CORS: put/get/delete, the unsigned OPTIONS preflight, and the CORS headers
    of ordinary answers to a request with Origin."""
    _, g = gw
    alice = client(g, "AKALICE", "alice-secret")
    alice.create_bucket(Bucket="cors-b")
    alice.put_object(Bucket="cors-b", Key="page.html", Body=b"<html/>")
    url = "http://%s/cors-b/page.html" % g.url
    pre = {"Origin": "https://app.example.com", "Access-Control-Request-Method": "GET"}
    r = requests.options(url, headers=pre, timeout=10)
    assert r.status_code == 403 and "AccessForbidden" in r.text  # not enabled yet
    assert code_of(alice.get_bucket_cors, Bucket="cors-b") == "NoSuchCORSConfiguration"
    rules = {"CORSRules": [
        {"AllowedOrigins": ["https://*.example.com"], "AllowedMethods": ["GET", "HEAD"],
         "AllowedHeaders": ["x-amz-*", "content-type"], "ExposeHeaders": ["ETag"],
         "MaxAgeSeconds": 600},
        {"AllowedOrigins": ["*"], "AllowedMethods": ["PUT"]}]}
    alice.put_bucket_cors(Bucket="cors-b", CORSConfiguration=rules)
    got = alice.get_bucket_cors(Bucket="cors-b")["CORSRules"]
    assert got[0]["AllowedOrigins"] == ["https://*.example.com"] and got[0]["MaxAgeSeconds"] == 600
    r = requests.options(url, headers=dict(pre, **{
        "Access-Control-Request-Headers": "X-Amz-Date, Content-Type"}), timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
    assert "GET" in r.headers["Access-Control-Allow-Methods"]
    assert r.headers["Access-Control-Max-Age"] == "600"
    assert r.headers["Access-Control-Allow-Headers"] == "X-Amz-Date, Content-Type"
    # a header, an origin or a method no rule allows
    for h in ({"Access-Control-Request-Headers": "x-other"},
              {"Origin": "https://evil.test"}, {"Access-Control-Request-Method": "DELETE"}):
        r = requests.options(url, headers=dict(pre, **h), timeout=10)
        assert r.status_code == 403, h
    r = requests.options(url, headers={"Access-Control-Request-Method": "GET"}, timeout=10)
    assert r.status_code == 400
    r = requests.options(url, headers=dict(pre, **{"Access-Control-Request-Method": "PUT",
                                                   "Origin": "https://any.test"}), timeout=10)
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "*"
    # an ordinary signed GET from a page: the CORS headers come with the answer
    creds = botocore.credentials.Credentials("AKALICE", "alice-secret")
    req = botocore.awsrequest.AWSRequest(method="GET", url=url,
                                         headers={"Origin": "https://app.example.com"})
    botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
    r = requests.get(url, headers=dict(req.headers), timeout=10)
    assert r.status_code == 200 and r.content == b"<html/>"
    assert r.headers["Access-Control-Allow-Origin"] == "https://app.example.com"
    assert r.headers["Access-Control-Expose-Headers"] == "ETag"
    # bad configurations change nothing
    for bad in ({"CORSRules": [{"AllowedOrigins": ["*"], "AllowedMethods": ["PATCH"]}]},
                {"CORSRules": [{"AllowedOrigins": ["*.*.x"], "AllowedMethods": ["GET"]}]}):
        assert code_of(alice.put_bucket_cors, Bucket="cors-b",
                       CORSConfiguration=bad) == "InvalidRequest"
    assert len(alice.get_bucket_cors(Bucket="cors-b")["CORSRules"]) == 2
    assert code_of(client(g, "AKBOB", "bob-secret").put_bucket_cors, Bucket="cors-b",
                   CORSConfiguration=rules) == "AccessDenied"
    alice.delete_bucket_cors(Bucket="cors-b")
    assert code_of(alice.get_bucket_cors, Bucket="cors-b") == "NoSuchCORSConfiguration"
    assert requests.options(url, headers=pre, timeout=10).status_code == 403


def test_lifecycle_expiration(module_cluster, gw, monkeypatch):
    """Lifecycle rules are stored and carried out: objects expire by prefix, tag or date,
    uploads in progress are aborted; others stay. A lifecycle day lasts 1 s here
    (WEEDFS_S3_LIFECYCLE_DAY_SECONDS) and the sweeper passes every second."""
    filer, _ = gw
    monkeypatch.setenv("WEEDFS_S3_LIFECYCLE_DAY_SECONDS", "1")
    g = start_gateway(module_cluster, filer, IDENTITIES, extra=["-lifecycleSeconds=1"]).start()
    s3 = client(g, "AKALICE", "alice-secret")
    s3.create_bucket(Bucket="life-exp")
    assert code_of(s3.get_bucket_lifecycle_configuration,
                   Bucket="life-exp") == "NoSuchLifecycleConfiguration"
    for bad, code in (
            ([{"ID": "x", "Status": "Maybe", "Filter": {"Prefix": ""},
               "Expiration": {"Days": 1}}], "MalformedXML"),
            ([{"ID": "x", "Status": "Enabled", "Filter": {"Prefix": ""},
               "Expiration": {"Days": 0}}], "InvalidArgument"),
            ([{"ID": "x", "Status": "Enabled", "Filter": {"Prefix": ""}}], "InvalidRequest")):
        try:
            s3.put_bucket_lifecycle_configuration(Bucket="life-exp",
                                                  LifecycleConfiguration={"Rules": bad})
            raise AssertionError("accepted %r" % bad)
        except botocore.exceptions.ClientError as e:
            assert e.response["Error"]["Code"] in (code, "MalformedXML", "InvalidRequest")
    for k in ("tmp/a", "keep/b", "tagged/c", "tagged/d", "old/e"):
        s3.put_object(Bucket="life-exp", Key=k, Body=k.encode(),
                      Tagging="exp=yes" if k == "tagged/c" else "")
    uid = s3.create_multipart_upload(Bucket="life-exp", Key="big/upload")["UploadId"]
    rules = [
        {"ID": "tmp", "Status": "Enabled", "Filter": {"Prefix": "tmp/"},
         "Expiration": {"Days": 2}},
        {"ID": "tag", "Status": "Enabled",
         "Filter": {"And": {"Prefix": "tagged/", "Tags": [{"Key": "exp", "Value": "yes"}]}},
         "Expiration": {"Days": 1}},
        {"ID": "old", "Status": "Enabled", "Filter": {"Prefix": "old/"},
         "Expiration": {"Date": "2020-01-01T00:00:00Z"}},
        {"ID": "off", "Status": "Disabled", "Filter": {"Prefix": "keep/"},
         "Expiration": {"Days": 1}},
        {"ID": "uploads", "Status": "Enabled", "Filter": {"Prefix": ""},
         "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 1}},
    ]
    s3.put_bucket_lifecycle_configuration(Bucket="life-exp",
                                          LifecycleConfiguration={"Rules": rules})
    got = s3.get_bucket_lifecycle_configuration(Bucket="life-exp")["Rules"]
    assert [r["ID"] for r in got] == ["tmp", "tag", "old", "off", "uploads"]

    def keys():
        return sorted(o["Key"] for o in s3.list_objects_v2(Bucket="life-exp").get("Contents", []))
    wait_until(lambda: keys() == ["keep/b", "tagged/d"], timeout=20, what="expiration")
    assert code_of(s3.list_parts, Bucket="life-exp", Key="big/upload",
                   UploadId=uid) == "NoSuchUpload"
    assert filer.get("/buckets/life-exp/tmp").status_code == 404  # emptied prefix gone
    s3.delete_bucket_lifecycle(Bucket="life-exp")
    assert code_of(s3.get_bucket_lifecycle_configuration,
                   Bucket="life-exp") == "NoSuchLifecycleConfiguration"
