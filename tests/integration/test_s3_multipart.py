"""Multipart uploads through the S3 gateway: parts stream to the volume servers,
completing is a metadata operation (the object's chunks are the parts' chunks), the
part rules are enforced, and awscli / boto3 transfers that go multipart work."""

import concurrent.futures
import hashlib
import os
import subprocess

import botocore
import pytest
from boto3.s3.transfer import TransferConfig

from s3_fixtures import client, code_of, mini_gateway

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
    """Two completes of one upload: one wins, the other finds no upload; If-None-Match: *
    on complete refuses to replace an existing key."""
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
    assert codes == ["NoSuchUpload"] * 3 + ["ok"], codes
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
