"""The S3 gateway's exact edge behaviour (issue 26): bodies of unknown length, conditional
writes with ETags, browser forms with file-like fields, missing buckets and presigned
expiries, checksum types, repeated multipart completes and lifecycle validation."""

import base64
import concurrent.futures
import hashlib
import http.client
import os
import socket

import botocore
import pytest

from s3_fixtures import Signer, client, code_of, mini_gateway, signed

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


def status_of(fn, **kw):
    try:
        fn(**kw)
        return 200, None
    except botocore.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]


def test_conditional_writes_with_etags(gw):
    """If-None-Match with an ETag: refused over that version, taken over another or none;
    If-Match and If-None-Match with ETags on PutObject, CopyObject's target and
    CompleteMultipartUpload; a refusal changes nothing."""
    _, g = gw
    s3 = client(g, AK, SK)
    e1 = s3.put_object(Bucket="edge", Key="cw/o", Body=b"one")["ETag"]
    assert status_of(s3.put_object, Bucket="edge", Key="cw/o", Body=b"x",
                     IfNoneMatch=e1) == (412, "PreconditionFailed")
    assert status_of(s3.put_object, Bucket="edge", Key="cw/o", Body=b"x",
                     IfNoneMatch=e1.strip('"')) == (412, "PreconditionFailed")
    assert s3.get_object(Bucket="edge", Key="cw/o")["Body"].read() == b"one"
    e2 = s3.put_object(Bucket="edge", Key="cw/o", Body=b"two", IfNoneMatch='"0000"')["ETag"]
    assert s3.get_object(Bucket="edge", Key="cw/o")["Body"].read() == b"two"
    s3.put_object(Bucket="edge", Key="cw/new", Body=b"n", IfNoneMatch=e1)  # none there
    assert s3.get_object(Bucket="edge", Key="cw/new")["Body"].read() == b"n"
    assert status_of(s3.put_object, Bucket="edge", Key="cw/o", Body=b"x",
                     IfMatch=e1) == (412, "PreconditionFailed")
    # CopyObject: the conditions are on the target
    s3.put_object(Bucket="edge", Key="cw/src", Body=b"source")
    assert status_of(s3.copy_object, Bucket="edge", Key="cw/o", CopySource="edge/cw/src",
                     IfMatch=e1) == (412, "PreconditionFailed")
    assert status_of(s3.copy_object, Bucket="edge", Key="cw/o", CopySource="edge/cw/src",
                     IfNoneMatch=e2) == (412, "PreconditionFailed")
    assert status_of(s3.copy_object, Bucket="edge", Key="cw/none", CopySource="edge/cw/src",
                     IfMatch=e2) == (404, "NoSuchKey")
    assert s3.get_object(Bucket="edge", Key="cw/o")["Body"].read() == b"two"
    e3 = s3.copy_object(Bucket="edge", Key="cw/o", CopySource="edge/cw/src",
                        IfMatch=e2)["CopyObjectResult"]["ETag"]
    assert s3.get_object(Bucket="edge", Key="cw/o")["Body"].read() == b"source"
    s3.copy_object(Bucket="edge", Key="cw/o2", CopySource="edge/cw/src", IfNoneMatch=e1)
    # CompleteMultipartUpload
    up = s3.create_multipart_upload(Bucket="edge", Key="cw/o")["UploadId"]
    pe = s3.upload_part(Bucket="edge", Key="cw/o", UploadId=up, PartNumber=1,
                        Body=b"multi")["ETag"]
    parts = {"Parts": [{"PartNumber": 1, "ETag": pe}]}
    assert status_of(s3.complete_multipart_upload, Bucket="edge", Key="cw/o", UploadId=up,
                     MultipartUpload=parts, IfNoneMatch=e3) == (412, "PreconditionFailed")
    assert status_of(s3.complete_multipart_upload, Bucket="edge", Key="cw/o", UploadId=up,
                     MultipartUpload=parts, IfMatch=e2) == (412, "PreconditionFailed")
    assert s3.get_object(Bucket="edge", Key="cw/o")["Body"].read() == b"source"
    s3.complete_multipart_upload(Bucket="edge", Key="cw/o", UploadId=up,
                                 MultipartUpload=parts, IfMatch=e3)
    assert s3.get_object(Bucket="edge", Key="cw/o")["Body"].read() == b"multi"
    up = s3.create_multipart_upload(Bucket="edge", Key="cw/o")["UploadId"]
    pe = s3.upload_part(Bucket="edge", Key="cw/o", UploadId=up, PartNumber=1,
                        Body=b"again")["ETag"]
    s3.complete_multipart_upload(Bucket="edge", Key="cw/o", UploadId=up, IfNoneMatch=e3,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": pe}]})
    assert s3.get_object(Bucket="edge", Key="cw/o")["Body"].read() == b"again"


@pytest.mark.parametrize("versioning", [False, True])
def test_conditional_etag_races(gw, versioning):
    """Eight writers with If-Match of one ETag: exactly one wins, the others are refused
    (412, or 409 when the filer saw the race); eight with If-None-Match of an ETag the
    object never had: each either wins or gets ConditionalRequestConflict, never a 5xx."""
    _, g = gw
    s3 = client(g, AK, SK)
    bucket = "edge-race-v" if versioning else "edge"
    if versioning:
        s3.create_bucket(Bucket=bucket)
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    etag = s3.put_object(Bucket=bucket, Key="race/o", Body=b"base")["ETag"]
    for rnd in range(3):
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            got = list(ex.map(lambda i: status_of(
                s3.put_object, Bucket=bucket, Key="race/o", Body=b"w%d.%d" % (rnd, i),
                IfMatch=etag), range(8)))
        wins = [i for i, a in enumerate(got) if a[0] == 200]
        assert len(wins) == 1, got
        assert all(a in ((412, "PreconditionFailed"), (409, "ConditionalRequestConflict"))
                   for a in got if a[0] != 200), got
        assert s3.get_object(Bucket=bucket, Key="race/o")["Body"].read() == \
            b"w%d.%d" % (rnd, wins[0])
        etag = s3.head_object(Bucket=bucket, Key="race/o")["ETag"]
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda i: status_of(
            s3.put_object, Bucket=bucket, Key="race/n", Body=b"n%d" % i,
            IfNoneMatch='"00000000000000000000000000000000"'), range(8)))
    assert (200, None) in got, got
    assert all(a in ((200, None), (409, "ConditionalRequestConflict")) for a in got), got
    assert s3.get_object(Bucket=bucket, Key="race/n")["Body"].read().startswith(b"n")


def test_conditional_delete(gw):
    """DeleteObject If-Match: NoSuchKey without an object, PreconditionFailed (nothing
    deleted) for another ETag, 204 for its own or *; in a versioned bucket the check is
    on the current object and the delete leaves a marker."""
    _, g = gw
    s3 = client(g, AK, SK)
    etag = s3.put_object(Bucket="edge", Key="cd/o", Body=b"keep")["ETag"]
    assert status_of(s3.delete_object, Bucket="edge", Key="cd/none",
                     IfMatch=etag) == (404, "NoSuchKey")
    assert status_of(s3.delete_object, Bucket="edge", Key="cd/o",
                     IfMatch='"ffff"') == (412, "PreconditionFailed")
    assert s3.get_object(Bucket="edge", Key="cd/o")["Body"].read() == b"keep"
    s3.delete_object(Bucket="edge", Key="cd/o", IfMatch=etag)
    assert code_of(s3.head_object, Bucket="edge", Key="cd/o") == "404"
    s3.put_object(Bucket="edge", Key="cd/star", Body=b"s")
    s3.delete_object(Bucket="edge", Key="cd/star", IfMatch="*")
    assert code_of(s3.head_object, Bucket="edge", Key="cd/star") == "404"
    s3.create_bucket(Bucket="edge-cd-v")
    s3.put_bucket_versioning(Bucket="edge-cd-v", VersioningConfiguration={"Status": "Enabled"})
    etag = s3.put_object(Bucket="edge-cd-v", Key="o", Body=b"v1")["ETag"]
    assert status_of(s3.delete_object, Bucket="edge-cd-v", Key="o",
                     IfMatch='"ffff"') == (412, "PreconditionFailed")
    r = s3.delete_object(Bucket="edge-cd-v", Key="o", IfMatch=etag)
    assert r["DeleteMarker"] is True
    assert status_of(s3.delete_object, Bucket="edge-cd-v", Key="o",
                     IfMatch=etag) == (404, "NoSuchKey")
    assert len(s3.list_object_versions(Bucket="edge-cd-v")["Versions"]) == 1


@pytest.mark.parametrize("versioning", [False, True])
def test_conditional_delete_races(gw, versioning):
    """Eight DeleteObjects with If-Match of the current ETag at once: exactly one deletes
    (one delete marker in a versioned bucket), the others get NoSuchKey or, when they
    checked before it, ConditionalRequestConflict; and a delete racing a writer that
    replaced the object never deletes (or hides) the new version."""
    _, g = gw
    s3 = client(g, AK, SK)
    bucket = "edge-dr-v" if versioning else "edge-dr"
    s3.create_bucket(Bucket=bucket)
    if versioning:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    for rnd in range(3):
        key = "dr/%d" % rnd
        etag = s3.put_object(Bucket=bucket, Key=key, Body=b"base")["ETag"]
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            got = list(ex.map(lambda i: status_of(
                s3.delete_object, Bucket=bucket, Key=key, IfMatch=etag), range(8)))
        assert got.count((200, None)) == 1, got  # status_of: 200 for any success
        assert all(a in ((404, "NoSuchKey"), (409, "ConditionalRequestConflict"))
                   for a in got if a != (200, None)), got
        if versioning:
            markers = s3.list_object_versions(Bucket=bucket, Prefix=key).get("DeleteMarkers")
            assert len(markers) == 1, markers
    # writers replacing the object while deletes of the old ETag race them
    key = "dr/w"
    etag = s3.put_object(Bucket=bucket, Key=key, Body=b"old")["ETag"]
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        puts = [ex.submit(s3.put_object, Bucket=bucket, Key=key, Body=b"new%d" % i)
                for i in range(4)]
        dels = [ex.submit(status_of, s3.delete_object, Bucket=bucket, Key=key, IfMatch=etag)
                for _ in range(4)]
        [p.result() for p in puts]
        got = [d.result() for d in dels]
    assert all(a[0] in (200, 404, 409, 412) for a in got), got
    # the last writer's bytes are there unless a delete of "old" came after them all,
    # which it cannot: every delete was of the old ETag
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert body.startswith(b"new"), body


def form_body(parts, boundary="edge-form-b"):
    """A multipart/form-data body of (name, value, filename) parts, built by hand."""
    out = b""
    for name, value, filename in parts:
        out += b"--%s\r\nContent-Disposition: form-data; name=\"%s\"" % (
            boundary.encode(), name.encode())
        if filename is not None:
            out += b"; filename=\"%s\"\r\nContent-Type: application/octet-stream" % \
                filename.encode()
        out += b"\r\n\r\n" + (value if isinstance(value, bytes) else value.encode()) + b"\r\n"
    out += b"--%s--\r\n" % boundary.encode()
    return out, "multipart/form-data; boundary=%s" % boundary


def test_browser_post_fields_sent_as_files(gw):
    """A form whose key and policy fields come as parts with a filename (as several
    clients send them) is read as fields; the object is the first part named file, and
    parts after it are ignored; a form with file-like fields but no part named file is
    refused and stores nothing."""
    import boto3
    import requests
    from botocore.config import Config
    filer, g = gw
    s3 = boto3.client("s3", endpoint_url="http://%s" % g.url, aws_access_key_id=AK,
                      aws_secret_access_key=SK, region_name="us-east-1",
                      config=Config(signature_version="s3v4"))
    post = s3.generate_presigned_post("edge", "form/${filename}",
                                      Conditions=[["starts-with", "$key", "form/"]])
    f = post["fields"]
    data = os.urandom(3000)
    parts = [("key", f["key"], "key.txt"), ("policy", f["policy"], "blob")]
    parts += [(k, v, None) for k, v in f.items() if k not in ("key", "policy")]
    body, ctype = form_body(parts + [("file", data, "photo.bin"),
                                     ("file", b"second file", "other.bin"),
                                     ("x-amz-meta-late", "ignored", None)])
    r = requests.post(post["url"], data=body, headers={"Content-Type": ctype}, timeout=30)
    assert r.status_code == 204, r.text
    got = s3.get_object(Bucket="edge", Key="form/photo.bin")
    assert got["Body"].read() == data and got["Metadata"] == {}
    assert filer.get("/buckets/edge/form/other.bin").status_code == 404
    body, ctype = form_body(parts + [("upload", data, "photo2.bin")])
    r = requests.post(post["url"], data=body, headers={"Content-Type": ctype}, timeout=30)
    assert r.status_code == 400 and "<Code>InvalidArgument</Code>" in r.text, r.text
    assert filer.get("/buckets/edge/form/photo2.bin").status_code == 404


def test_missing_bucket_is_no_such_bucket_to_anyone(gw):
    """As S3, a bucket that does not exist is NoSuchBucket (404) to an unsigned request
    and to an identity with no grant on it; an existing bucket still refuses them; an
    unsigned CreateBucket is AccessDenied (and makes nothing)."""
    import requests
    filer, g = gw
    base = "http://%s" % g.url
    for method, path in [("GET", "/no-such-edge"), ("GET", "/no-such-edge/k"),
                         ("PUT", "/no-such-edge/k"), ("DELETE", "/no-such-edge/k"),
                         ("GET", "/no-such-edge?list-type=2")]:
        r = requests.request(method, base + path, data=b"x" if method == "PUT" else None,
                             timeout=10)
        assert r.status_code == 404 and "<Code>NoSuchBucket</Code>" in r.text, (method, path)
    assert requests.head(base + "/no-such-edge/k", timeout=10).status_code == 404
    assert requests.head(base + "/no-such-edge", timeout=10).status_code == 404
    r = requests.get(base + "/edge/k", timeout=10)
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text
    r = requests.put(base + "/no-such-edge", timeout=10)
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text
    assert filer.get("/buckets/no-such-edge").status_code == 404
    bob = client(g, "AKBOB", "bob-secret")
    assert code_of(bob.get_object, Bucket="no-such-edge", Key="k") == "NoSuchBucket"
    assert code_of(bob.put_object, Bucket="no-such-edge", Key="k", Body=b"x") == "NoSuchBucket"
    assert code_of(bob.get_object, Bucket="edge", Key="k") == "AccessDenied"
    assert filer.get("/buckets/no-such-edge").status_code == 404


@pytest.mark.parametrize("expires,message", [
    ("604801", "X-Amz-Expires must be less than a week"),
    ("99999999999999999999", "X-Amz-Expires must be less than a week"),
    ("-7", "X-Amz-Expires must be non-negative"),
    ("1h", "X-Amz-Expires should be a number"),
    ("0", "Request has expired")])
def test_presigned_expires_out_of_range(gw, expires, message):
    """A presigned URL whose X-Amz-Expires is out of range or not a number is
    AccessDenied (403) like an expired one, with S3's message; a PUT so refused stores
    nothing."""
    import re
    import requests
    from botocore.config import Config
    import boto3
    filer, g = gw
    s3 = boto3.client("s3", endpoint_url="http://%s" % g.url, aws_access_key_id=AK,
                      aws_secret_access_key=SK, region_name="us-east-1",
                      config=Config(signature_version="s3v4"))
    s3.put_object(Bucket="edge", Key="pre/o", Body=b"presigned")
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "edge", "Key": "pre/o"},
                                    ExpiresIn=60)
    assert requests.get(url, timeout=10).content == b"presigned"
    bad = re.sub(r"X-Amz-Expires=\d+", "X-Amz-Expires=" + expires, url)
    r = requests.get(bad, timeout=10)
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text, r.text
    assert message in r.text, r.text
    put = s3.generate_presigned_url("put_object", Params={"Bucket": "edge", "Key": "pre/p"},
                                    ExpiresIn=60)
    r = requests.put(re.sub(r"X-Amz-Expires=\d+", "X-Amz-Expires=" + expires, put),
                     data=b"x", timeout=10)
    assert r.status_code == 403
    assert filer.get("/buckets/edge/pre/p").status_code == 404


def test_checksum_types_everywhere(gw):
    """ChecksumType where S3 shows it: PutObject's answer, HEAD with ChecksumMode, the
    listings' ChecksumAlgorithm and ChecksumType; a COMPOSITE multipart checksum has its
    -N on Complete and HEAD; GetObjectAttributes gives every attribute asked, of the
    version asked."""
    _, g = gw
    s3 = client(g, AK, SK)
    r = s3.put_object(Bucket="edge", Key="ck/one", Body=b"checked", ChecksumAlgorithm="SHA256")
    assert r["ChecksumType"] == "FULL_OBJECT" and r["ChecksumSHA256"]
    h = s3.head_object(Bucket="edge", Key="ck/one", ChecksumMode="ENABLED")
    assert h["ChecksumType"] == "FULL_OBJECT"
    up = s3.create_multipart_upload(Bucket="edge", Key="ck/mp", ChecksumAlgorithm="SHA256")
    parts = []
    for n, body in ((1, os.urandom(5 << 20)), (2, b"tail")):
        p = s3.upload_part(Bucket="edge", Key="ck/mp", UploadId=up["UploadId"], PartNumber=n,
                           Body=body, ChecksumAlgorithm="SHA256")
        parts.append({"PartNumber": n, "ETag": p["ETag"], "ChecksumSHA256": p["ChecksumSHA256"]})
    c = s3.complete_multipart_upload(Bucket="edge", Key="ck/mp", UploadId=up["UploadId"],
                                     MultipartUpload={"Parts": parts})
    assert c["ChecksumSHA256"].endswith("-2") and c["ChecksumType"] == "COMPOSITE"
    h = s3.head_object(Bucket="edge", Key="ck/mp", ChecksumMode="ENABLED")
    assert h["ChecksumSHA256"] == c["ChecksumSHA256"] and h["ChecksumType"] == "COMPOSITE"
    listed = {o["Key"]: o for o in s3.list_objects_v2(Bucket="edge", Prefix="ck/")["Contents"]}
    assert listed["ck/one"]["ChecksumAlgorithm"] == ["SHA256"]
    assert listed["ck/one"]["ChecksumType"] == "FULL_OBJECT"
    assert listed["ck/mp"]["ChecksumType"] == "COMPOSITE"
    a = s3.get_object_attributes(Bucket="edge", Key="ck/mp", ObjectAttributes=[
        "ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"])
    assert a["ETag"] == c["ETag"].strip('"') and a["ObjectSize"] == (5 << 20) + 4
    assert a["StorageClass"] == "STANDARD" and a["ObjectParts"]["TotalPartsCount"] == 2
    assert a["Checksum"]["ChecksumType"] == "COMPOSITE"
    assert a["Checksum"]["ChecksumSHA256"] == c["ChecksumSHA256"].split("-")[0]
    # a version's attributes
    s3.create_bucket(Bucket="edge-attr-v")
    s3.put_bucket_versioning(Bucket="edge-attr-v", VersioningConfiguration={"Status": "Enabled"})
    v1 = s3.put_object(Bucket="edge-attr-v", Key="o", Body=b"first")["VersionId"]
    s3.put_object(Bucket="edge-attr-v", Key="o", Body=b"second one")
    a = s3.get_object_attributes(Bucket="edge-attr-v", Key="o", VersionId=v1,
                                 ObjectAttributes=["ETag", "ObjectSize"])
    assert a["ObjectSize"] == 5 and a["ETag"] == hashlib.md5(b"first").hexdigest()
    assert a["VersionId"] == v1
    vs = s3.list_object_versions(Bucket="edge-attr-v")["Versions"]
    assert len(vs) == 2


def test_lifecycle_validated_as_s3(gw):
    """Lifecycle rules are checked as S3 checks them: an ID over 255 characters or
    repeated, Days <= 0, a date not at midnight UTC: InvalidArgument; a Status other than
    Enabled/Disabled, Filter beside Prefix: MalformedXML; a refusal keeps the rules there
    were. A rule given with the legacy Prefix comes back as written."""
    _, g = gw
    s3 = client(g, AK, SK)
    s3.create_bucket(Bucket="edge-life")
    keep = {"Rules": [{"ID": "keep", "Prefix": "logs/", "Status": "Enabled",
                       "Expiration": {"Days": 3}}]}
    s3.put_bucket_lifecycle_configuration(Bucket="edge-life", LifecycleConfiguration=keep)
    got = s3.get_bucket_lifecycle_configuration(Bucket="edge-life")["Rules"]
    assert got == [{"ID": "keep", "Prefix": "logs/", "Status": "Enabled",
                    "Expiration": {"Days": 3}}], got

    def rule(**kw):
        r = {"ID": "r", "Filter": {"Prefix": "a/"}, "Status": "Enabled",
             "Expiration": {"Days": 1}}
        r.update(kw)
        return r

    bad = [([rule(ID="x" * 256)], "InvalidArgument"),
           ([rule(ID="same"), rule(ID="same", Filter={"Prefix": "b/"})], "InvalidArgument"),
           ([rule(Expiration={"Days": 0})], "InvalidArgument"),
           ([rule(Expiration={"Days": -2})], "InvalidArgument"),
           ([rule(Status="enabled")], "MalformedXML"),
           ([rule(Status="Invalid")], "MalformedXML"),
           ([rule(Prefix="c/")], "MalformedXML")]
    for rules, code in bad:
        assert code_of(s3.put_bucket_lifecycle_configuration, Bucket="edge-life",
                       LifecycleConfiguration={"Rules": rules}) == code, rules
    for date in ("2030-01-01T10:00:00Z", "20300101"):
        body = ("<LifecycleConfiguration><Rule><ID>d</ID><Filter><Prefix>a/</Prefix></Filter>"
                "<Status>Enabled</Status><Expiration><Date>%s</Date></Expiration></Rule>"
                "</LifecycleConfiguration>" % date).encode()
        r = signed(g, AK, SK, "PUT", "/edge-life", body, query="lifecycle=",
                   headers={"Content-MD5": base64.b64encode(hashlib.md5(body).digest()).decode()})
        assert r.status_code == 400 and "<Code>InvalidArgument</Code>" in r.text, r.text
    assert s3.get_bucket_lifecycle_configuration(Bucket="edge-life")["Rules"] == got
    ok = [rule(ID="i" * 255, Expiration={"Date": "2030-01-01T00:00:00Z"})]
    s3.put_bucket_lifecycle_configuration(Bucket="edge-life",
                                          LifecycleConfiguration={"Rules": ok})
    got = s3.get_bucket_lifecycle_configuration(Bucket="edge-life")["Rules"]
    assert got[0]["ID"] == "i" * 255 and got[0]["Filter"] == {"Prefix": "a/"}


def test_repeated_complete_answers_the_same(gw):
    """A CompleteMultipartUpload repeated after it succeeded answers the same result
    (ETag, checksum); another parts list, or once the object was replaced, is
    NoSuchUpload; UploadPart and ListParts of the completed upload are NoSuchUpload; a
    partNumber past the last part is InvalidPartNumber."""
    _, g = gw
    s3 = client(g, AK, SK)
    up = s3.create_multipart_upload(Bucket="edge", Key="rc/o", ChecksumAlgorithm="CRC32")
    uid = up["UploadId"]
    parts = []
    for n, body in ((1, os.urandom(5 << 20)), (2, b"end")):
        p = s3.upload_part(Bucket="edge", Key="rc/o", UploadId=uid, PartNumber=n, Body=body,
                           ChecksumAlgorithm="CRC32")
        parts.append({"PartNumber": n, "ETag": p["ETag"], "ChecksumCRC32": p["ChecksumCRC32"]})
    first = s3.complete_multipart_upload(Bucket="edge", Key="rc/o", UploadId=uid,
                                         MultipartUpload={"Parts": parts})
    again = s3.complete_multipart_upload(Bucket="edge", Key="rc/o", UploadId=uid,
                                         MultipartUpload={"Parts": parts})
    for k in ("ETag", "ChecksumCRC32", "ChecksumType", "Bucket", "Key"):
        assert again[k] == first[k], k
    assert code_of(s3.complete_multipart_upload, Bucket="edge", Key="rc/o", UploadId=uid,
                   MultipartUpload={"Parts": parts[:1]}) == "NoSuchUpload"
    assert code_of(s3.upload_part, Bucket="edge", Key="rc/o", UploadId=uid, PartNumber=3,
                   Body=b"x") == "NoSuchUpload"
    assert code_of(s3.list_parts, Bucket="edge", Key="rc/o", UploadId=uid) == "NoSuchUpload"
    assert code_of(s3.head_object, Bucket="edge", Key="rc/o", PartNumber=3) == "416"
    r = signed(g, AK, SK, "GET", "/edge/rc/o", query="partNumber=3")
    assert r.status_code == 416 and "<Code>InvalidPartNumber</Code>" in r.text
    s3.put_object(Bucket="edge", Key="rc/o", Body=b"replaced")
    assert code_of(s3.complete_multipart_upload, Bucket="edge", Key="rc/o", UploadId=uid,
                   MultipartUpload={"Parts": parts}) == "NoSuchUpload"
    assert s3.get_object(Bucket="edge", Key="rc/o")["Body"].read() == b"replaced"
