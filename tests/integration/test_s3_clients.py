"""s3cmd (SigV4 and --signature-v2), rclone and boto3's SigV2 (signature_version "s3", and
its default presigned URLs and POST forms) against the S3 gateway: uploads (single and
multipart), listings, downloads, sync/check and deletes, with the same bytes seen through
the filer."""

import hashlib
import os
import subprocess

import boto3
import pytest
import requests
from botocore.config import Config

from s3_fixtures import code_of, mini_gateway

AK, SK = "AKALICE", "alice-secret"
MIB = 1 << 20


@pytest.fixture(scope="module")
def gw(module_cluster):
    return mini_gateway(module_cluster)


def run(args, env=None, timeout=300):
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, "%s failed:\n%s\n%s" % (args, r.stdout, r.stderr)
    return r.stdout


@pytest.mark.parametrize("v2", [False, True], ids=["sigv4", "sigv2"])
def test_s3cmd(gw, tmp_path, v2):
    filer, g = gw
    cfg = tmp_path / "s3cfg"
    cfg.write_text("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\n"
                   "host_bucket = %s\nuse_https = False\nsignature_v2 = %s\n"
                   "bucket_location = us-east-1\n" % (AK, SK, g.url, g.url, v2))
    s3cmd = ["s3cmd", "-c", str(cfg)]
    bucket = "cmd-bkt-v2" if v2 else "cmd-bkt"
    run(s3cmd + ["mb", "s3://" + bucket])
    small, big = tmp_path / "small.txt", tmp_path / "big.bin"
    small.write_bytes(b"hello from s3cmd\n")
    data = os.urandom(12 * MIB + 3)
    big.write_bytes(data)
    run(s3cmd + ["put", str(small), "s3://%s/dir/small.txt" % bucket])
    run(s3cmd + ["put", "--multipart-chunk-size-mb=5", str(big), "s3://%s/big.bin" % bucket])
    out = run(s3cmd + ["ls", "--recursive", "s3://" + bucket])
    assert "s3://%s/dir/small.txt" % bucket in out and "s3://%s/big.bin" % bucket in out
    assert filer.get("/buckets/%s/big.bin" % bucket).content == data
    down = tmp_path / "down.bin"
    run(s3cmd + ["get", "s3://%s/big.bin" % bucket, str(down)])
    assert down.read_bytes() == data
    info = run(s3cmd + ["info", "s3://%s/dir/small.txt" % bucket])
    assert hashlib.md5(b"hello from s3cmd\n").hexdigest() in info
    run(s3cmd + ["del", "s3://%s/dir/small.txt" % bucket, "s3://%s/big.bin" % bucket])
    assert "s3://" not in run(s3cmd + ["ls", "--recursive", "s3://" + bucket])
    run(s3cmd + ["rb", "s3://" + bucket])


def test_rclone(gw, tmp_path):
    filer, g = gw
    env = dict(os.environ, RCLONE_CONFIG_WFS_TYPE="s3", RCLONE_CONFIG_WFS_PROVIDER="Other",
               RCLONE_CONFIG_WFS_ENDPOINT="http://%s" % g.url,
               RCLONE_CONFIG_WFS_ACCESS_KEY_ID=AK, RCLONE_CONFIG_WFS_SECRET_ACCESS_KEY=SK,
               RCLONE_CONFIG_WFS_REGION="us-east-1", RCLONE_CONFIG_WFS_FORCE_PATH_STYLE="true",
               RCLONE_CONFIG=str(tmp_path / "none.conf"))
    env.pop("AWS_CA_BUNDLE", None)  # plain http; rclone refuses a bundle it cannot apply
    src = tmp_path / "tree"
    files = {"a.txt": b"alpha", "sub/b.bin": os.urandom(300000),
             "sub/deep/c.bin": os.urandom(7 * MIB), "space name.txt": b"spaces"}
    for name, body in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_bytes(body)
    run(["rclone", "mkdir", "wfs:rc-bkt"], env)
    run(["rclone", "copy", "--s3-upload-cutoff=5M", "--s3-chunk-size=5M", str(src),
         "wfs:rc-bkt/tree"], env)
    run(["rclone", "check", str(src), "wfs:rc-bkt/tree"], env)  # sizes and MD5s
    listed = sorted(run(["rclone", "lsf", "-R", "--files-only", "wfs:rc-bkt/tree"],
                        env).split("\n"))
    assert [x for x in listed if x] == sorted(files)
    for name, body in files.items():
        assert filer.get("/buckets/rc-bkt/tree/" + name).content == body
    back = tmp_path / "back"
    run(["rclone", "copy", "wfs:rc-bkt/tree", str(back)], env)
    for name, body in files.items():
        assert (back / name).read_bytes() == body
    # a changed local file is synced, a removed one deleted remotely
    (src / "a.txt").write_bytes(b"alpha, changed")
    (src / "space name.txt").unlink()
    run(["rclone", "sync", str(src), "wfs:rc-bkt/tree"], env)
    run(["rclone", "check", str(src), "wfs:rc-bkt/tree"], env)
    assert filer.get("/buckets/rc-bkt/tree/a.txt").content == b"alpha, changed"
    assert filer.get("/buckets/rc-bkt/tree/space name.txt").status_code == 404
    run(["rclone", "purge", "wfs:rc-bkt"], env)


def test_boto3_signature_v2(gw):
    """SigV2 as boto3 sends it: header auth (signature_version "s3") for objects with
    awkward keys, listings, tagging, multipart and bucket configuration; the presigned
    URLs and POST forms boto3 makes by default; and the refusals: another secret, an
    expired URL, a tampered one, a forged form."""
    filer, g = gw
    kw = dict(endpoint_url="http://%s" % g.url, aws_access_key_id=AK, aws_secret_access_key=SK,
              region_name="us-east-1")
    v2 = boto3.client("s3", config=Config(signature_version="s3"), **kw)
    default = boto3.client("s3", **kw)
    v2.create_bucket(Bucket="sigv2")
    key = "dir/a b+c%d/ü.txt"
    v2.put_object(Bucket="sigv2", Key=key, Body=b"signed v2", ContentType="text/plain",
                  Metadata={"who": "v2"}, Tagging="t=1")
    got = v2.get_object(Bucket="sigv2", Key=key)
    assert got["Body"].read() == b"signed v2" and got["Metadata"] == {"who": "v2"}
    assert filer.get("/buckets/sigv2/" + key).content == b"signed v2"
    assert [o["Key"] for o in v2.list_objects_v2(Bucket="sigv2", Prefix="dir/")["Contents"]] \
        == [key]
    assert v2.get_object_tagging(Bucket="sigv2", Key=key)["TagSet"] == [
        {"Key": "t", "Value": "1"}]
    v2.put_bucket_versioning(Bucket="sigv2", VersioningConfiguration={"Status": "Suspended"})
    assert v2.get_bucket_versioning(Bucket="sigv2")["Status"] == "Suspended"
    up = v2.create_multipart_upload(Bucket="sigv2", Key="mp")["UploadId"]
    parts = [v2.upload_part(Bucket="sigv2", Key="mp", UploadId=up, PartNumber=n,
                            Body=bytes([n]) * (5 * MIB if n == 1 else 10))["ETag"]
             for n in (1, 2)]
    v2.complete_multipart_upload(Bucket="sigv2", Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": n, "ETag": e} for n, e in zip((1, 2), parts)]})
    assert filer.get("/buckets/sigv2/mp").content == b"\x01" * 5 * MIB + b"\x02" * 10

    # boto3's defaults: presigned URLs and POST forms are SigV2
    url = default.generate_presigned_url("get_object", Params={
        "Bucket": "sigv2", "Key": key, "ResponseContentType": "application/x-v2"})
    assert "AWSAccessKeyId=" in url and "X-Amz-" not in url
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.content == b"signed v2"
    assert r.headers["Content-Type"] == "application/x-v2"
    url = default.generate_presigned_url("put_object", Params={"Bucket": "sigv2", "Key": "pp"})
    assert requests.put(url, data=b"presigned put", timeout=10).status_code == 200
    assert filer.get("/buckets/sigv2/pp").content == b"presigned put"
    form = default.generate_presigned_post("sigv2", "post/${filename}", Conditions=[
        ["starts-with", "$key", "post/"], ["content-length-range", 1, 64]])
    assert "AWSAccessKeyId" in form["fields"] and "signature" in form["fields"]
    r = requests.post(form["url"], data=form["fields"], files={"file": ("f.txt", b"posted")},
                      timeout=10)
    assert r.status_code == 204, r.text
    assert filer.get("/buckets/sigv2/post/f.txt").content == b"posted"

    # refusals change nothing
    wrong = boto3.client("s3", config=Config(signature_version="s3"), **dict(
        kw, aws_secret_access_key="not-" + SK))
    assert code_of(wrong.put_object, Bucket="sigv2", Key="w", Body=b"x") == \
        "SignatureDoesNotMatch"
    unknown = boto3.client("s3", config=Config(signature_version="s3"), **dict(
        kw, aws_access_key_id="AKNOBODY"))
    assert code_of(unknown.get_object, Bucket="sigv2", Key=key) == "InvalidAccessKeyId"
    url = default.generate_presigned_url("get_object", Params={"Bucket": "sigv2", "Key": key},
                                         ExpiresIn=-5)
    r = requests.get(url, timeout=10)
    assert r.status_code == 403 and "Request has expired" in r.text
    url = default.generate_presigned_url("get_object", Params={"Bucket": "sigv2", "Key": key})
    r = requests.get(url.replace("/sigv2/dir/", "/sigv2/Dir/"), timeout=10)
    assert r.status_code == 403 and "<Code>SignatureDoesNotMatch</Code>" in r.text
    url = default.generate_presigned_url("put_object", Params={"Bucket": "sigv2", "Key": "pp"})
    r = requests.put(url.replace("Expires=", "Expires=1"), data=b"tampered", timeout=10)
    assert r.status_code == 403
    forged = dict(form["fields"], signature="A" * 27 + "=")
    r = requests.post(form["url"], data=forged, files={"file": ("g.txt", b"forged")},
                      timeout=10)
    assert r.status_code == 403 and "SignatureDoesNotMatch" in r.text
    assert filer.get("/buckets/sigv2/pp").content == b"presigned put"
    assert filer.get("/buckets/sigv2/w").status_code == 404
    assert filer.get("/buckets/sigv2/post/g.txt").status_code == 404
