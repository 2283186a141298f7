"""The S3 gateway (weedfs s3) with real clients: identities and SigV4, bucket operations,
and the same buckets seen through the filer's HTTP API. Object operations are not in the
gateway yet (docs/s3-gateway.md); they answer NotImplemented."""

import json

import boto3
import botocore
import botocore.auth
import botocore.awsrequest
import botocore.credentials
import pytest
import requests
from botocore.config import Config

from conftest import Daemon, free_port
from filer_fixtures import start_mini_with_filer

IDENTITIES = {"identities": [
    {"name": "alice", "credentials": [{"accessKey": "AKALICE", "secretKey": "alice-secret"}],
     "actions": ["Admin"]},
    {"name": "bob", "credentials": [{"accessKey": "AKBOB", "secretKey": "bob-secret"}],
     "actions": ["Read:pub*", "List:pub*"]},
]}


def start_gateway(cluster, filer, config=None, extra=()):
    port = free_port()
    d = cluster._dir("s3")
    args = ["s3", "-ip=127.0.0.1", "-port=%d" % port, "-filer=%s" % filer.url] + list(extra)
    if config is not None:
        path = d / "identities.json"
        d.mkdir(parents=True, exist_ok=True)
        path.write_text(config if isinstance(config, str) else json.dumps(config))
        args.append("-config=%s" % path)
    g = Daemon("s3-%d" % port, args, d, "127.0.0.1:%d" % port)
    cluster.daemons.append(g)
    return g


def client(g, ak, sk):
    return boto3.client("s3", endpoint_url="http://%s" % g.url, aws_access_key_id=ak,
                        aws_secret_access_key=sk, region_name="us-east-1",
                        config=Config(retries={"max_attempts": 1}))


def code_of(fn, *args, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        fn(*args, **kw)
    return ei.value.response["Error"]["Code"]


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
    assert code_of(alice.create_bucket, Bucket="life") == "BucketAlreadyOwnedByYou"
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
    # bob lists only the buckets he has a grant on, and may not create or delete any
    assert [b["Name"] for b in bob.list_buckets()["Buckets"]] == ["pub-open"]
    assert bob.head_bucket(Bucket="pub-open")["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert code_of(bob.head_bucket, Bucket="secret-b") == "403"
    assert code_of(bob.create_bucket, Bucket="pub-new") == "AccessDenied"
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
    assert "bad-in2" not in [b["Name"] for b in alice.list_buckets()["Buckets"]]
    assert code_of(alice.put_object, Bucket="bad-in", Key="k", Body=b"x") == "NotImplemented"


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
