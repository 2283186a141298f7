"""s3cmd and rclone against the S3 gateway: uploads (single and multipart), listings,
downloads, sync/check and deletes, with the same bytes seen through the filer."""

import hashlib
import os
import subprocess

import pytest

from s3_fixtures import mini_gateway

AK, SK = "AKALICE", "alice-secret"
MIB = 1 << 20


@pytest.fixture(scope="module")
def gw(module_cluster):
    return mini_gateway(module_cluster)


def run(args, env=None, timeout=300):
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, "%s failed:\n%s\n%s" % (args, r.stdout, r.stderr)
    return r.stdout


def test_s3cmd(gw, tmp_path):
    filer, g = gw
    cfg = tmp_path / "s3cfg"
    cfg.write_text("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\n"
                   "host_bucket = %s\nuse_https = False\nsignature_v2 = False\n"
                   "bucket_location = us-east-1\n" % (AK, SK, g.url, g.url))
    s3cmd = ["s3cmd", "-c", str(cfg)]
    run(s3cmd + ["mb", "s3://cmd-bkt"])
    small, big = tmp_path / "small.txt", tmp_path / "big.bin"
    small.write_bytes(b"hello from s3cmd\n")
    data = os.urandom(12 * MIB + 3)
    big.write_bytes(data)
    run(s3cmd + ["put", str(small), "s3://cmd-bkt/dir/small.txt"])
    run(s3cmd + ["put", "--multipart-chunk-size-mb=5", str(big), "s3://cmd-bkt/big.bin"])
    out = run(s3cmd + ["ls", "--recursive", "s3://cmd-bkt"])
    assert "s3://cmd-bkt/dir/small.txt" in out and "s3://cmd-bkt/big.bin" in out
    assert filer.get("/buckets/cmd-bkt/big.bin").content == data
    down = tmp_path / "down.bin"
    run(s3cmd + ["get", "s3://cmd-bkt/big.bin", str(down)])
    assert down.read_bytes() == data
    info = run(s3cmd + ["info", "s3://cmd-bkt/dir/small.txt"])
    assert hashlib.md5(b"hello from s3cmd\n").hexdigest() in info
    run(s3cmd + ["del", "s3://cmd-bkt/dir/small.txt", "s3://cmd-bkt/big.bin"])
    assert "s3://" not in run(s3cmd + ["ls", "--recursive", "s3://cmd-bkt"])
    run(s3cmd + ["rb", "s3://cmd-bkt"])


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
