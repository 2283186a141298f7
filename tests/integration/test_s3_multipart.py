"""Multipart uploads through the S3 gateway: parts stream to the volume servers,
completing is a metadata operation (the object's chunks are the parts' chunks), the
part rules are enforced, and awscli / boto3 transfers that go multipart work; the
object's checksum (COMPOSITE or FULL_OBJECT) is made from the parts', and GetObject /
HeadObject ?partNumber read one part."""

import base64
import concurrent.futures
import hashlib
import os
import subprocess
import zlib

import botocore
import pytest
from boto3.s3.transfer import TransferConfig

from s3_fixtures import client, code_of, crc32c, crc64nvme, mini_gateway, signed

AK, SK = "AKALICE", "alice-secret"
MIB = 1 << 20


@pytest.fixture(scope="module")
def gw(module_cluster):
    return mini_gateway(module_cluster, "mpu")


def multipart_etag(parts):
    return '"%s-%d"' % (hashlib.md5(b"".join(hashlib.md5(p).digest() for p in parts))
                        .hexdigest(), len(parts))


def fids(filer, path):
    return sorted(c["file_id"] for c in filer.meta(path).get("chunks") or [])


def test_upload_complete_is_metadata_only(gw):
    filer, g = gw
    s3 = client(g, AK, SK)
    parts = [os.urandom(5 * MIB), os.urandom(5 * MIB + 17), os.urandom(1234)]
    up = s3.create_multipart_upload(Bucket="mpu", Key="dir/big.bin", ContentType="video/mp4",
                                    Metadata={"origin": "test"})
    uid = up["UploadId"]
    done = []
    part_fids = []
    for n, data in enumerate(parts, 1):
        r = s3.upload_part(Bucket="mpu", Key="dir/big.bin", UploadId=uid, PartNumber=n, Body=data)
        assert r["ETag"] == '"%s"' % hashlib.md5(data).hexdigest()
        done.append({"PartNumber": n, "ETag": r["ETag"]})
        part_fids += fids(filer, "/buckets/mpu/.uploads/%s/%05d" % (uid, n))
    # in progress: listed as an upload, not as an object
    ups = s3.list_multipart_uploads(Bucket="mpu")["Uploads"]
    assert [(u["Key"], u["UploadId"]) for u in ups] == [("dir/big.bin", uid)]
    assert "Contents" not in s3.list_objects_v2(Bucket="mpu", Prefix=".uploads")
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="mpu").get("Contents", [])] == []
    lp = s3.list_parts(Bucket="mpu", Key="dir/big.bin", UploadId=uid)["Parts"]
    assert [(p["PartNumber"], p["Size"]) for p in lp] == [(i + 1, len(d)) for i, d in
                                                          enumerate(parts)]
    lp = s3.list_parts(Bucket="mpu", Key="dir/big.bin", UploadId=uid, MaxParts=2)
    assert lp["IsTruncated"] and lp["NextPartNumberMarker"] == 2
    r = s3.complete_multipart_upload(Bucket="mpu", Key="dir/big.bin", UploadId=uid,
                                     MultipartUpload={"Parts": done})
    assert r["ETag"] == multipart_etag(parts)
    whole = b"".join(parts)
    got = s3.get_object(Bucket="mpu", Key="dir/big.bin")
    assert got["Body"].read() == whole and got["ETag"] == multipart_etag(parts)
    assert got["ContentType"] == "video/mp4" and got["Metadata"] == {"origin": "test"}
    got = s3.get_object(Bucket="mpu", Key="dir/big.bin", Range="bytes=%d-%d" % (5 * MIB - 3,
                                                                               5 * MIB + 3))
    assert got["Body"].read() == whole[5 * MIB - 3:5 * MIB + 4]
    # no data was copied: the object's chunks are the parts' chunks
    assert fids(filer, "/buckets/mpu/dir/big.bin") == sorted(part_fids)
    assert filer.get("/buckets/mpu/dir/big.bin").content == whole
    assert "Uploads" not in s3.list_multipart_uploads(Bucket="mpu")
    assert code_of(s3.list_parts, Bucket="mpu", Key="dir/big.bin", UploadId=uid) == "NoSuchUpload"


def test_part_rules(gw):
    filer, g = gw
    s3 = client(g, AK, SK)
    uid = s3.create_multipart_upload(Bucket="mpu", Key="rules")["UploadId"]
    small = [os.urandom(1000), os.urandom(1000)]
    etags = [s3.upload_part(Bucket="mpu", Key="rules", UploadId=uid, PartNumber=n + 1,
                            Body=d)["ETag"] for n, d in enumerate(small)]

    def complete(parts):
        return code_of(s3.complete_multipart_upload, Bucket="mpu", Key="rules", UploadId=uid,
                       MultipartUpload={"Parts": parts})
    assert complete([{"PartNumber": 1, "ETag": etags[0]},
                     {"PartNumber": 2, "ETag": etags[1]}]) == "EntityTooSmall"
    assert complete([{"PartNumber": 2, "ETag": etags[1]},
                     {"PartNumber": 1, "ETag": etags[0]}]) == "InvalidPartOrder"
    assert complete([{"PartNumber": 1, "ETag": '"%s"' % ("0" * 32)}]) == "InvalidPart"
    assert complete([{"PartNumber": 3, "ETag": etags[0]}]) == "InvalidPart"
    for bad in (0, 10001):
        assert code_of(s3.upload_part, Bucket="mpu", Key="rules", UploadId=uid, PartNumber=bad,
                       Body=b"x") == "InvalidArgument"
    for uid_bad in ("nope", "0" * 32):
        assert code_of(s3.upload_part, Bucket="mpu", Key="rules", UploadId=uid_bad,
                       PartNumber=1, Body=b"x") == "NoSuchUpload"
    # the upload belongs to its key
    assert code_of(s3.upload_part, Bucket="mpu", Key="other", UploadId=uid, PartNumber=1,
                   Body=b"x") == "NoSuchUpload"
    # nothing was made by the failures; the last part alone may be small
    assert code_of(s3.head_object, Bucket="mpu", Key="rules") == "404"
    r = s3.complete_multipart_upload(Bucket="mpu", Key="rules", UploadId=uid,
                                     MultipartUpload={"Parts": [{"PartNumber": 2,
                                                                 "ETag": etags[1]}]})
    assert r["ETag"] == multipart_etag([small[1]])
    assert s3.get_object(Bucket="mpu", Key="rules")["Body"].read() == small[1]
    # part 1, left out, was freed with the upload
    assert filer.get("/buckets/mpu/.uploads/%s" % uid).status_code == 404


def test_abort_frees_parts(gw):
    filer, g = gw
    s3 = client(g, AK, SK)
    uid = s3.create_multipart_upload(Bucket="mpu", Key="aborted")["UploadId"]
    s3.upload_part(Bucket="mpu", Key="aborted", UploadId=uid, PartNumber=1, Body=b"x" * 100)
    assert s3.abort_multipart_upload(Bucket="mpu", Key="aborted", UploadId=uid)[
        "ResponseMetadata"]["HTTPStatusCode"] == 204
    assert code_of(s3.abort_multipart_upload, Bucket="mpu", Key="aborted",
                   UploadId=uid) == "NoSuchUpload"
    assert code_of(s3.complete_multipart_upload, Bucket="mpu", Key="aborted", UploadId=uid,
                   MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"x"'}]}) == \
        "NoSuchUpload"
    assert code_of(s3.head_object, Bucket="mpu", Key="aborted") == "404"


def test_racing_completes_and_conditions(gw):
    """Completes of one upload racing with the same parts: one commits, the others find
    no upload or (when the winner's object is there) answer its result, as a repeated
    Complete does; If-None-Match: * on complete refuses to replace an existing key."""
    _, g = gw
    s3 = client(g, AK, SK)
    uid = s3.create_multipart_upload(Bucket="mpu", Key="race")["UploadId"]
    et = s3.upload_part(Bucket="mpu", Key="race", UploadId=uid, PartNumber=1, Body=b"r")["ETag"]

    def complete(_):
        try:
            s3.complete_multipart_upload(Bucket="mpu", Key="race", UploadId=uid,
                                         MultipartUpload={"Parts": [{"PartNumber": 1,
                                                                     "ETag": et}]})
            return "ok"
        except botocore.exceptions.ClientError as e:
            return e.response["Error"]["Code"]
    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        codes = sorted(ex.map(complete, range(4)))
    assert "ok" in codes and set(codes) <= {"ok", "NoSuchUpload"}, codes
    assert s3.get_object(Bucket="mpu", Key="race")["Body"].read() == b"r"
    uid = s3.create_multipart_upload(Bucket="mpu", Key="race")["UploadId"]
    et = s3.upload_part(Bucket="mpu", Key="race", UploadId=uid, PartNumber=1, Body=b"2")["ETag"]
    assert code_of(s3.complete_multipart_upload, Bucket="mpu", Key="race", UploadId=uid,
                   IfNoneMatch="*", MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": et}]}
                   ) == "PreconditionFailed"
    assert s3.get_object(Bucket="mpu", Key="race")["Body"].read() == b"r"


def test_boto3_and_awscli_multipart_transfers(gw, tmp_path):
    filer, g = gw
    s3 = client(g, AK, SK)
    data = os.urandom(21 * MIB + 5)
    src = tmp_path / "big.bin"
    src.write_bytes(data)
    cfg = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB,
                         max_concurrency=4)
    s3.upload_file(str(src), "mpu", "boto/big.bin", Config=cfg)
    head = s3.head_object(Bucket="mpu", Key="boto/big.bin")
    assert head["ContentLength"] == len(data) and head["ETag"].endswith('-5"')
    out = tmp_path / "down.bin"
    s3.download_file("mpu", "boto/big.bin", str(out), Config=cfg)
    assert out.read_bytes() == data
    env = dict(os.environ, AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK,
               AWS_DEFAULT_REGION="us-east-1")
    base = ["aws", "--endpoint-url", "http://%s" % g.url, "s3"]
    subprocess.run(base + ["cp", str(src), "s3://mpu/cli/big.bin"], env=env, check=True,
                   capture_output=True, timeout=300)
    assert filer.get("/buckets/mpu/cli/big.bin").content == data
    out2 = tmp_path / "down2.bin"
    subprocess.run(base + ["cp", "s3://mpu/cli/big.bin", str(out2)], env=env, check=True,
                   capture_output=True, timeout=300)
    assert out2.read_bytes() == data


def test_upload_part_copy(gw):
    _, g = gw
    s3 = client(g, AK, SK)
    src = os.urandom(12 * MIB)
    s3.put_object(Bucket="mpu", Key="copy/src", Body=src)
    uid = s3.create_multipart_upload(Bucket="mpu", Key="copy/dst")["UploadId"]
    ranges = [(0, 6 * MIB - 1), (6 * MIB, 12 * MIB - 1)]
    parts = []
    for n, (a, b) in enumerate(ranges, 1):
        r = s3.upload_part_copy(Bucket="mpu", Key="copy/dst", UploadId=uid, PartNumber=n,
                                CopySource="mpu/copy/src", CopySourceRange="bytes=%d-%d" % (a, b))
        assert r["CopyPartResult"]["ETag"] == '"%s"' % hashlib.md5(src[a:b + 1]).hexdigest()
        parts.append({"PartNumber": n, "ETag": r["CopyPartResult"]["ETag"]})
    assert code_of(s3.upload_part_copy, Bucket="mpu", Key="copy/dst", UploadId=uid,
                   PartNumber=3, CopySource="mpu/copy/src",
                   CopySourceRange="bytes=5-%d" % (12 * MIB)) == "InvalidArgument"
    s3.complete_multipart_upload(Bucket="mpu", Key="copy/dst", UploadId=uid,
                                 MultipartUpload={"Parts": parts})
    assert s3.get_object(Bucket="mpu", Key="copy/dst")["Body"].read() == src


def test_delete_bucket_with_uploads_in_progress(gw):
    """Uploads in progress do not keep a bucket alive; objects do."""
    _, g = gw
    s3 = client(g, AK, SK)
    s3.create_bucket(Bucket="mpu-gone")
    uid = s3.create_multipart_upload(Bucket="mpu-gone", Key="k")["UploadId"]
    s3.upload_part(Bucket="mpu-gone", Key="k", UploadId=uid, PartNumber=1, Body=b"p")
    s3.put_object(Bucket="mpu-gone", Key="obj", Body=b"o")
    assert code_of(s3.delete_bucket, Bucket="mpu-gone") == "BucketNotEmpty"
    s3.delete_object(Bucket="mpu-gone", Key="obj")
    s3.delete_bucket(Bucket="mpu-gone")
    assert code_of(s3.head_bucket, Bucket="mpu-gone") == "404"


# ---- checksums (COMPOSITE and FULL_OBJECT) and partNumber reads ----

def b64(b):
    return base64.b64encode(b).decode()


# the raw checksum of data: CRCs computed here (botocore needs awscrt for two of them)
RAW = {"CRC32": lambda d: zlib.crc32(d).to_bytes(4, "big"), "CRC32C": crc32c,
       "CRC64NVME": crc64nvme, "SHA1": lambda d: hashlib.sha1(d).digest(),
       "SHA256": lambda d: hashlib.sha256(d).digest()}


def upload_with_checksums(s3, key, alg, parts, ctype=None):
    """An upload of parts, each sent with its checksum of alg (computed here); returns
    (upload id, the Complete part list with the checksums)."""
    kw = {"ChecksumType": ctype} if ctype else {}
    up = s3.create_multipart_upload(Bucket="mpu", Key=key, ChecksumAlgorithm=alg, **kw)
    assert up["ChecksumAlgorithm"] == alg
    assert up["ChecksumType"] == (ctype or ("FULL_OBJECT" if alg == "CRC64NVME"
                                            else "COMPOSITE"))
    done = []
    for n, data in enumerate(parts, 1):
        want = b64(RAW[alg](data))
        r = s3.upload_part(Bucket="mpu", Key=key, UploadId=up["UploadId"], PartNumber=n,
                           Body=data, **{"Checksum" + alg: want})
        assert r["Checksum" + alg] == want
        done.append({"PartNumber": n, "ETag": r["ETag"], "Checksum" + alg: want})
    return up["UploadId"], done


def check_part_checksums(s3, key, alg, parts):
    """Each part's own checksum: on a partNumber GET or HEAD with ChecksumMode, and in
    GetObjectAttributes' ObjectParts, one page of MaxParts at a time."""
    for n, data in enumerate(parts, 1):
        want = b64(RAW[alg](data))
        got = s3.get_object(Bucket="mpu", Key=key, PartNumber=n, ChecksumMode="ENABLED")
        assert got["Body"].read() == data and got["Checksum" + alg] == want
        h = s3.head_object(Bucket="mpu", Key=key, PartNumber=n, ChecksumMode="ENABLED")
        assert h["Checksum" + alg] == want and h["PartsCount"] == len(parts)
    # without ChecksumMode no checksum is answered
    assert "Checksum" + alg not in s3.head_object(Bucket="mpu", Key=key, PartNumber=1)
    listed, marker = [], 0
    while True:
        op = s3.get_object_attributes(Bucket="mpu", Key=key, ObjectAttributes=["ObjectParts"],
                                      MaxParts=1, PartNumberMarker=marker)["ObjectParts"]
        assert op["TotalPartsCount"] == len(parts) and op["MaxParts"] == 1
        assert op["PartNumberMarker"] == marker and len(op["Parts"]) == 1
        listed += op["Parts"]
        if not op["IsTruncated"]:
            break
        marker = op["NextPartNumberMarker"]
    assert listed == [{"PartNumber": n, "Size": len(d), "Checksum" + alg: b64(RAW[alg](d))}
                      for n, d in enumerate(parts, 1)]


@pytest.mark.parametrize("alg", ["SHA256", "CRC32C"])
def test_composite_checksum(gw, alg):
    """COMPOSITE: the checksum of the parts' raw checksums, then -N; answered by
    Complete, HEAD/GET with ChecksumMode (botocore does not check a -N value) and
    GetObjectAttributes (without -N); ListParts shows the parts' checksums."""
    _, g = gw
    s3 = client(g, AK, SK)
    key = "ck/composite-" + alg
    parts = [os.urandom(5 * MIB), os.urandom(1000)]
    uid, done = upload_with_checksums(s3, key, alg, parts)
    lp = s3.list_parts(Bucket="mpu", Key=key, UploadId=uid)
    assert lp["ChecksumAlgorithm"] == alg and lp["ChecksumType"] == "COMPOSITE"
    assert [p["Checksum" + alg] for p in lp["Parts"]] == [p["Checksum" + alg] for p in done]
    ups = [u for u in s3.list_multipart_uploads(Bucket="mpu")["Uploads"] if u["Key"] == key]
    assert [(u["ChecksumAlgorithm"], u["ChecksumType"]) for u in ups] == [(alg, "COMPOSITE")]
    want = "%s-%d" % (b64(RAW[alg](b"".join(RAW[alg](p) for p in parts))), len(parts))
    r = s3.complete_multipart_upload(Bucket="mpu", Key=key, UploadId=uid,
                                     MultipartUpload={"Parts": done})
    assert r["Checksum" + alg] == want and r["ChecksumType"] == "COMPOSITE"
    h = s3.head_object(Bucket="mpu", Key=key, ChecksumMode="ENABLED")
    assert h["Checksum" + alg] == want and h["ChecksumType"] == "COMPOSITE"
    got = s3.get_object(Bucket="mpu", Key=key, ChecksumMode="ENABLED")
    assert got["Body"].read() == b"".join(parts) and got["Checksum" + alg] == want
    # without ChecksumMode no checksum is answered
    assert "Checksum" + alg not in s3.head_object(Bucket="mpu", Key=key)
    at = s3.get_object_attributes(Bucket="mpu", Key=key,
                                  ObjectAttributes=["Checksum", "ObjectParts"])
    assert at["Checksum"] == {"Checksum" + alg: want.split("-")[0], "ChecksumType": "COMPOSITE"}
    assert at["ObjectParts"]["TotalPartsCount"] == 2
    check_part_checksums(s3, key, alg, parts)


@pytest.mark.parametrize("alg,ctype", [("CRC64NVME", None), ("CRC32", "FULL_OBJECT")])
def test_full_object_checksum(gw, alg, ctype):
    """FULL_OBJECT: the CRC of the whole object, combined from the parts' CRCs and
    sizes without reading a byte; GET with ChecksumMode lets botocore check it too."""
    _, g = gw
    s3 = client(g, AK, SK)
    key = "ck/full-" + alg
    parts = [os.urandom(5 * MIB), os.urandom(1000)]
    if alg == "CRC32":
        parts.insert(1, os.urandom(5 * MIB + 3))
    whole = b"".join(parts)
    want = b64(RAW[alg](whole))
    uid, done = upload_with_checksums(s3, key, alg, parts, ctype)
    r = s3.complete_multipart_upload(Bucket="mpu", Key=key, UploadId=uid,
                                     MultipartUpload={"Parts": done})
    assert r["Checksum" + alg] == want and r["ChecksumType"] == "FULL_OBJECT"
    h = s3.head_object(Bucket="mpu", Key=key, ChecksumMode="ENABLED")
    assert h["Checksum" + alg] == want and h["ChecksumType"] == "FULL_OBJECT"
    got = s3.get_object(Bucket="mpu", Key=key, ChecksumMode="ENABLED")
    assert got["Checksum" + alg] == want and got["Body"].read() == whole
    at = s3.get_object_attributes(Bucket="mpu", Key=key, ObjectAttributes=["Checksum"])
    assert at["Checksum"] == {"Checksum" + alg: want, "ChecksumType": "FULL_OBJECT"}
    check_part_checksums(s3, key, alg, parts)


def test_checksum_rules(gw):
    """The algorithm/type pairs S3 refuses; parts without the upload's checksum or with
    another one; a Complete naming a checksum a part does not have: InvalidPart, and
    nothing completed."""
    _, g = gw
    s3 = client(g, AK, SK)
    for alg, ctype in (("SHA256", "FULL_OBJECT"), ("SHA1", "FULL_OBJECT"),
                       ("CRC64NVME", "COMPOSITE")):
        assert code_of(s3.create_multipart_upload, Bucket="mpu", Key="ck/rules",
                       ChecksumAlgorithm=alg, ChecksumType=ctype) == "InvalidRequest"
    r = signed(g, AK, SK, "POST", "/mpu/ck/rules", query="uploads=",
               headers={"x-amz-checksum-algorithm": "CRC32", "x-amz-checksum-type": "BOTH"})
    assert r.status_code == 400 and b"InvalidRequest" in r.content
    r = signed(g, AK, SK, "POST", "/mpu/ck/rules", query="uploads=",
               headers={"x-amz-checksum-type": "COMPOSITE"})
    assert r.status_code == 400 and b"InvalidRequest" in r.content

    parts = [os.urandom(5 * MIB), b"tail"]
    uid, done = upload_with_checksums(s3, "ck/rules", "CRC32", parts)
    # a part without the upload's checksum, or with another one, is refused
    r = signed(g, AK, SK, "PUT", "/mpu/ck/rules", body=b"x",
               query="partNumber=3&uploadId=" + uid)
    assert r.status_code == 400 and b"x-amz-checksum-crc32 is required" in r.content
    assert code_of(s3.upload_part, Bucket="mpu", Key="ck/rules", UploadId=uid, PartNumber=3,
                   Body=b"x", ChecksumSHA256=b64(RAW["SHA256"](b"x"))) == "InvalidRequest"
    assert [p["PartNumber"] for p in s3.list_parts(Bucket="mpu", Key="ck/rules",
                                                    UploadId=uid)["Parts"]] == [1, 2]

    def complete(parts):
        return code_of(s3.complete_multipart_upload, Bucket="mpu", Key="ck/rules",
                       UploadId=uid, MultipartUpload={"Parts": parts})
    bad = dict(done[0], ChecksumCRC32=b64(RAW["CRC32"](b"other")))
    assert complete([bad, done[1]]) == "InvalidPart"
    other = dict(done[1], ChecksumSHA1=b64(RAW["SHA1"](parts[1])))
    assert complete([done[0], other]) == "InvalidPart"  # the part has no SHA1
    assert code_of(s3.head_object, Bucket="mpu", Key="ck/rules") == "404"
    # the upload is intact: the right list completes it (checksums may be left out)
    r = s3.complete_multipart_upload(
        Bucket="mpu", Key="ck/rules", UploadId=uid,
        MultipartUpload={"Parts": [done[0], {"PartNumber": 2, "ETag": done[1]["ETag"]}]})
    assert r["ChecksumCRC32"] == "%s-2" % b64(zlib.crc32(b"".join(
        RAW["CRC32"](p) for p in parts)).to_bytes(4, "big"))


@pytest.mark.parametrize("alg,ctype", [("SHA256", "COMPOSITE"), ("CRC64NVME", "FULL_OBJECT")])
def test_upload_part_copy_with_checksums(gw, alg, ctype):
    """UploadPartCopy into an upload with a checksum algorithm: the gateway computes
    each copied part's checksum from the bytes it copies (the client sends none),
    answers it in CopyPartResult and stores it like an uploaded part's, so Complete
    makes the object's checksum from copied and uploaded parts alike."""
    _, g = gw
    s3 = client(g, AK, SK)
    src = os.urandom(11 * MIB)
    s3.put_object(Bucket="mpu", Key="ck/copy-src-" + alg, Body=src)
    key = "ck/copy-dst-" + alg
    tail = os.urandom(777)
    up = s3.create_multipart_upload(Bucket="mpu", Key=key, ChecksumAlgorithm=alg,
                                    ChecksumType=ctype)
    uid, parts, done = up["UploadId"], [src[:6 * MIB], src[6 * MIB:]], []
    for n, (a, b) in enumerate([(0, 6 * MIB - 1), (6 * MIB, 11 * MIB - 1)], 1):
        r = s3.upload_part_copy(Bucket="mpu", Key=key, UploadId=uid, PartNumber=n,
                                CopySource="mpu/ck/copy-src-" + alg,
                                CopySourceRange="bytes=%d-%d" % (a, b))["CopyPartResult"]
        assert r["Checksum" + alg] == b64(RAW[alg](parts[n - 1])), r
        assert r["ETag"] == '"%s"' % hashlib.md5(parts[n - 1]).hexdigest()
        done.append({"PartNumber": n, "ETag": r["ETag"], "Checksum" + alg: r["Checksum" + alg]})
    r = s3.upload_part(Bucket="mpu", Key=key, UploadId=uid, PartNumber=3, Body=tail,
                       **{"Checksum" + alg: b64(RAW[alg](tail))})
    done.append({"PartNumber": 3, "ETag": r["ETag"], "Checksum" + alg: r["Checksum" + alg]})
    parts.append(tail)
    lp = s3.list_parts(Bucket="mpu", Key=key, UploadId=uid)["Parts"]
    assert [p["Checksum" + alg] for p in lp] == [d["Checksum" + alg] for d in done]
    if ctype == "COMPOSITE":
        want = "%s-3" % b64(RAW[alg](b"".join(RAW[alg](p) for p in parts)))
    else:
        want = b64(RAW[alg](b"".join(parts)))
    r = s3.complete_multipart_upload(Bucket="mpu", Key=key, UploadId=uid,
                                     MultipartUpload={"Parts": done})
    assert r["Checksum" + alg] == want and r["ChecksumType"] == ctype
    got = s3.get_object(Bucket="mpu", Key=key, ChecksumMode="ENABLED")
    assert got["Body"].read() == b"".join(parts) and got["Checksum" + alg] == want


def test_full_object_checksum_claimed_on_complete(gw):
    """A client may send the whole object's checksum with Complete (FULL_OBJECT):
    compared with the one the parts make, BadDigest when it differs."""
    _, g = gw
    s3 = client(g, AK, SK)
    parts = [os.urandom(5 * MIB), b"end"]
    uid, done = upload_with_checksums(s3, "ck/claimed", "CRC32", parts, "FULL_OBJECT")
    assert code_of(s3.complete_multipart_upload, Bucket="mpu", Key="ck/claimed", UploadId=uid,
                   ChecksumCRC32=b64(RAW["CRC32"](b"wrong")), ChecksumType="FULL_OBJECT",
                   MultipartUpload={"Parts": done}) == "BadDigest"
    want = b64(RAW["CRC32"](b"".join(parts)))
    r = s3.complete_multipart_upload(Bucket="mpu", Key="ck/claimed", UploadId=uid,
                                     ChecksumCRC32=want, ChecksumType="FULL_OBJECT",
                                     MultipartUpload={"Parts": done})
    assert r["ChecksumCRC32"] == want


def test_get_part_number(gw):
    """GET/HEAD ?partNumber=N of a multipart object: that part's bytes (206,
    Content-Range, x-amz-mp-parts-count); past the last part 416; with Range 400. Any
    other object (or one changed behind the gateway) is one part."""
    filer, g = gw
    s3 = client(g, AK, SK)
    parts = [os.urandom(5 * MIB), os.urandom(5 * MIB + 17), os.urandom(1234)]
    up = s3.create_multipart_upload(Bucket="mpu", Key="pn/obj")
    done = [{"PartNumber": n, "ETag": s3.upload_part(Bucket="mpu", Key="pn/obj",
                                                     UploadId=up["UploadId"], PartNumber=n,
                                                     Body=d)["ETag"]}
            for n, d in enumerate(parts, 1)]
    etag = s3.complete_multipart_upload(Bucket="mpu", Key="pn/obj", UploadId=up["UploadId"],
                                        MultipartUpload={"Parts": done})["ETag"]
    size, off = sum(map(len, parts)), 0
    for n, data in enumerate(parts, 1):
        got = s3.get_object(Bucket="mpu", Key="pn/obj", PartNumber=n)
        assert got["ResponseMetadata"]["HTTPStatusCode"] == 206
        assert got["Body"].read() == data and got["PartsCount"] == 3 and got["ETag"] == etag
        assert got["ContentRange"] == "bytes %d-%d/%d" % (off, off + len(data) - 1, size)
        h = s3.head_object(Bucket="mpu", Key="pn/obj", PartNumber=n, ChecksumMode="ENABLED")
        assert h["ResponseMetadata"]["HTTPStatusCode"] == 206
        assert h["ContentLength"] == len(data) and h["PartsCount"] == 3
        assert not [k for k in h if k.startswith("Checksum")], h  # the upload had none
        off += len(data)
    # without checksums GetObjectAttributes counts the parts but lists none (as S3)
    op = s3.get_object_attributes(Bucket="mpu", Key="pn/obj",
                                  ObjectAttributes=["ObjectParts"])["ObjectParts"]
    assert op == {"TotalPartsCount": 3}, op
    for hdr in ("x-amz-max-parts", "x-amz-part-number-marker"):
        r = signed(g, AK, SK, "GET", "/mpu/pn/obj", query="attributes=",
                   headers={"x-amz-object-attributes": "ObjectParts", hdr: "-1"})
        assert r.status_code == 400 and b"InvalidArgument" in r.content, (hdr, r.content)
    assert code_of(s3.get_object, Bucket="mpu", Key="pn/obj", PartNumber=4) == \
        "InvalidPartNumber"
    assert code_of(s3.head_object, Bucket="mpu", Key="pn/obj", PartNumber=4) == "416"
    assert code_of(s3.get_object, Bucket="mpu", Key="pn/obj", PartNumber=1,
                   Range="bytes=0-9") == "InvalidRequest"
    for bad in ("0", "10001", "abc", "1.5", ""):
        r = signed(g, AK, SK, "GET", "/mpu/pn/obj", query="partNumber=" + bad)
        assert r.status_code == 400 and b"InvalidArgument" in r.content, (bad, r.content)
    # other methods still refuse partNumber
    r = signed(g, AK, SK, "DELETE", "/mpu/pn/obj", query="partNumber=1")
    assert r.status_code == 501
    # a plain object is one part
    s3.put_object(Bucket="mpu", Key="pn/plain", Body=b"plain bytes")
    got = s3.get_object(Bucket="mpu", Key="pn/plain", PartNumber=1)
    assert got["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert got["Body"].read() == b"plain bytes" and "PartsCount" not in got
    assert code_of(s3.get_object, Bucket="mpu", Key="pn/plain", PartNumber=2) == \
        "InvalidPartNumber"
    # bytes changed through the filer: the part record is stale, the object one part
    assert filer.put("/buckets/mpu/pn/obj", b"rewritten").status_code in (200, 201)
    got = s3.get_object(Bucket="mpu", Key="pn/obj", PartNumber=1)
    assert got["Body"].read() == b"rewritten" and "PartsCount" not in got
    assert code_of(s3.get_object, Bucket="mpu", Key="pn/obj", PartNumber=2) == \
        "InvalidPartNumber"
