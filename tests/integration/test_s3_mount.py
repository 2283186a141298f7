"""The S3 gateway and weedfs-mount over one filer (`weedfs mini -mount.dir`): objects
are files and files are objects, both ways, for inline, chunked and multipart objects,
deletes, and versioned buckets (the mount sees the current version)."""

import hashlib
import io
import os
import time

import boto3
import pytest
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

from conftest import Daemon, free_port, module_scratch, wait_until
from mount_fixtures import is_mounted


@pytest.fixture(scope="module")
def mini_mounted(request):
    with module_scratch(request, "s3mount") as tmp:
        yield from _mini_mounted(tmp)


def _mini_mounted(tmp):
    mnt = tmp / "mnt"
    mnt.mkdir()
    s3port, fport = free_port(), free_port()
    args = ["mini", "-dir=%s" % (tmp / "data"), "-ip=127.0.0.1",
            "-master.port=%d" % free_port(), "-volume.port=%d" % free_port(),
            "-filer.port=%d" % fport, "-pulseSeconds=1", "-s3.port=%d" % s3port,
            "-iam.port=%d" % free_port(), "-mount.dir=%s" % mnt]
    mini = Daemon("mini-s3-mount", args, tmp, "127.0.0.1:%d" % fport)
    saved = {k: os.environ.pop(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
             if k in os.environ}  # an open gateway: no admin identity from the environment
    try:
        mini.start()
        os.environ.update(saved)
        deadline = time.monotonic() + 20
        while not is_mounted(mnt):
            assert time.monotonic() < deadline, mini.log_tail()
            time.sleep(0.05)
        s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % s3port,
                          aws_access_key_id="any", aws_secret_access_key="any",
                          region_name="us-east-1", config=Config(retries={"max_attempts": 1}))
        yield s3, mnt
    finally:
        mini.stop()
        if is_mounted(mnt):
            os.system("fusermount3 -uz %s" % mnt)


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def test_objects_are_files_and_files_are_objects(mini_mounted):
    s3, mnt = mini_mounted
    s3.create_bucket(Bucket="both")
    bucket = mnt / "buckets" / "both"
    wait_until(bucket.is_dir, timeout=10, what="the bucket in the mount")
    small, big = b"inline bytes", os.urandom((9 << 20) + 7)
    s3.put_object(Bucket="both", Key="dir/small.txt", Body=small)
    s3.upload_fileobj(io.BytesIO(big), "both", "dir/big.bin",
                      Config=TransferConfig(multipart_threshold=5 << 20,
                                            multipart_chunksize=5 << 20))
    wait_until(lambda: read(bucket / "dir" / "small.txt") == small, timeout=10,
               what="a PUT seen in the mount")
    assert hashlib.md5(read(bucket / "dir" / "big.bin")).digest() == hashlib.md5(big).digest()
    # a file written through the mount is an object, with an ETag of its own
    data = os.urandom(3 << 20)
    with open(bucket / "dir" / "from-mount.bin", "wb") as f:
        f.write(data)
    got = s3.get_object(Bucket="both", Key="dir/from-mount.bin")
    assert got["Body"].read() == data and got["ContentLength"] == len(data)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="both", Prefix="dir/")["Contents"]]
    assert keys == ["dir/big.bin", "dir/from-mount.bin", "dir/small.txt"]
    # an object rewritten through the mount: S3 serves the new bytes, not the old ETag
    old_etag = s3.head_object(Bucket="both", Key="dir/small.txt")["ETag"]
    with open(bucket / "dir" / "small.txt", "wb") as f:
        f.write(b"rewritten")
    h = s3.head_object(Bucket="both", Key="dir/small.txt")
    assert h["ETag"] != old_etag and h["ContentLength"] == len(b"rewritten")
    assert s3.get_object(Bucket="both", Key="dir/small.txt")["Body"].read() == b"rewritten"
    # deleted through S3: gone from the mount
    s3.delete_object(Bucket="both", Key="dir/big.bin")
    wait_until(lambda: not (bucket / "dir" / "big.bin").exists(), timeout=10,
               what="a DELETE seen in the mount")


def test_versioned_bucket_shows_the_current_version(mini_mounted):
    s3, mnt = mini_mounted
    s3.create_bucket(Bucket="vboth")
    s3.put_bucket_versioning(Bucket="vboth", VersioningConfiguration={"Status": "Enabled"})
    path = mnt / "buckets" / "vboth" / "k"
    v1 = s3.put_object(Bucket="vboth", Key="k", Body=b"one")["VersionId"]
    s3.put_object(Bucket="vboth", Key="k", Body=b"two")
    wait_until(lambda: read(path) == b"two", timeout=10, what="the current version")
    s3.delete_object(Bucket="vboth", Key="k")
    wait_until(lambda: read(path) is None, timeout=10, what="the delete marker")
    assert s3.get_object(Bucket="vboth", Key="k", VersionId=v1)["Body"].read() == b"one"


def test_keys_that_are_no_plain_path(mini_mounted):
    """docs/s3-gateway.md: the object 'a' beside 'a/b' is a/.s3~object in the mount, 'a/'
    is a/.s3~empty; a file the mount turns into a directory (a PUT of 'f/x' over the file
    f) keeps its bytes there; a file written at such a name is that object for S3."""
    s3, mnt = mini_mounted
    s3.create_bucket(Bucket="kboth")
    bucket = mnt / "buckets" / "kboth"
    wait_until(bucket.is_dir, timeout=10, what="the bucket in the mount")
    s3.put_object(Bucket="kboth", Key="f", Body=b"the file")
    wait_until(lambda: read(bucket / "f") == b"the file", timeout=10, what="the file f")
    s3.put_object(Bucket="kboth", Key="f/x", Body=b"x")
    s3.put_object(Bucket="kboth", Key="f/", Body=b"slash")
    wait_until(lambda: read(bucket / "f" / ".s3~object") == b"the file", timeout=10,
               what="f turned into a directory holding the object f")
    assert (bucket / "f").is_dir()
    wait_until(lambda: read(bucket / "f" / ".s3~empty") == b"slash", timeout=10,
               what="the object f/")
    assert sorted(os.listdir(bucket / "f")) == [".s3~empty", ".s3~object", "x"]
    (bucket / "m").mkdir()
    with open(bucket / "m" / ".s3~empty", "wb") as f:
        f.write(b"from the mount")
    assert s3.get_object(Bucket="kboth", Key="m/")["Body"].read() == b"from the mount"
    assert [o["Key"] for o in s3.list_objects_v2(Bucket="kboth")["Contents"]] == \
        ["f", "f/", "f/x", "m/"]
