"""Session credentials on the S3 gateway (docs/s3-gateway.md, "Session credentials and
STS"): STS AssumeRole and GetCallerIdentity on the S3 port through boto3's sts client,
session keys with x-amz-security-token (header and presigned query) that any gateway of
the cluster checks, scoped by a session policy, refused when tampered with or when their
parent identity is gone."""

import datetime
import json

import boto3
import botocore
import pytest
import requests
from botocore.config import Config

from conftest import wait_until
from filer_fixtures import start_mini_with_filer
from s3_fixtures import IDENTITIES, client, code_of, start_gateway, two_gateways

ROLE = "arn:aws:iam::000000000000:role/reader"


@pytest.fixture(scope="module")
def gws(module_cluster):
    return two_gateways(module_cluster, {b: {"in/one.txt": b"one", "out/two.txt": b"two"}
                                         for b in ("sts-a", "sts-b")})


def sts(g, ak="AKALICE", sk="alice-secret"):
    """boto3's sts client; its own parameter checks off, so the server's are tested."""
    return boto3.client("sts", endpoint_url="http://%s" % g.url, region_name="us-east-1",
                        aws_access_key_id=ak, aws_secret_access_key=sk,
                        config=Config(retries={"max_attempts": 1},
                                      parameter_validation=False))


def session_client(g, creds, signature_version=None):
    return boto3.client("s3", endpoint_url="http://%s" % g.url, region_name="us-east-1",
                        aws_access_key_id=creds["AccessKeyId"],
                        aws_secret_access_key=creds["SecretAccessKey"],
                        aws_session_token=creds["SessionToken"],
                        config=Config(retries={"max_attempts": 1},
                                      signature_version=signature_version))


def sts_code(fn, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        fn(**kw)
    return ei.value.response["Error"]["Code"]


def test_assume_role_unscoped(gws):
    _, g, g2 = gws
    before = datetime.datetime.now(datetime.timezone.utc)
    r = sts(g).assume_role(RoleArn=ROLE, RoleSessionName="batch-1", DurationSeconds=900)
    c = r["Credentials"]
    assert c["AccessKeyId"].startswith("ASIA") and len(c["AccessKeyId"]) == 20
    left = (c["Expiration"] - before).total_seconds()
    assert 890 <= left <= 905
    assert r["AssumedRoleUser"]["Arn"].endswith("/batch-1")
    # the parent's rights, on this gateway and on another of the cluster
    for gg in (g, g2):
        s = session_client(gg, c)
        assert s.get_object(Bucket="sts-a", Key="out/two.txt")["Body"].read() == b"two"
        s.put_object(Bucket="sts-a", Key="in/by-session", Body=b"s")
    who = sts(g, c["AccessKeyId"], c["SecretAccessKey"])
    who = boto3.client("sts", endpoint_url="http://%s" % g.url, region_name="us-east-1",
                       aws_access_key_id=c["AccessKeyId"],
                       aws_secret_access_key=c["SecretAccessKey"],
                       aws_session_token=c["SessionToken"])
    ident = who.get_caller_identity()
    assert "batch-1" in ident["Arn"] and ident["Account"] == "000000000000"
    assert "alice" in sts(g).get_caller_identity()["Arn"]


def test_assume_role_with_policy(gws):
    _, g, _ = gws
    doc = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject"],
         "Resource": "arn:aws:s3:::sts-a/in/*"},
        {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::sts-a",
         "Condition": {"StringLike": {"s3:prefix": "in/*"}}}]}
    c = sts(g).assume_role(RoleArn=ROLE, RoleSessionName="scoped",
                           Policy=json.dumps(doc))["Credentials"]
    s = session_client(g, c)
    assert s.get_object(Bucket="sts-a", Key="in/one.txt")["Body"].read() == b"one"
    s.put_object(Bucket="sts-a", Key="in/new.txt", Body=b"n")
    keys = [o["Key"] for o in s.list_objects_v2(Bucket="sts-a", Prefix="in/")["Contents"]]
    assert "in/new.txt" in keys
    # outside the scopes: another prefix, another bucket, another action, the bucket list
    assert code_of(s.get_object, Bucket="sts-a", Key="out/two.txt") == "AccessDenied"
    assert code_of(s.get_object, Bucket="sts-b", Key="in/one.txt") == "AccessDenied"
    assert code_of(s.delete_object, Bucket="sts-a", Key="in/one.txt") == "AccessDenied"
    assert code_of(s.list_objects_v2, Bucket="sts-a", Prefix="out/") == "AccessDenied"
    assert code_of(s.list_objects_v2, Bucket="sts-a") == "AccessDenied"
    assert code_of(s.list_buckets) == "AccessDenied"
    assert client(g, "AKALICE", "alice-secret").get_object(
        Bucket="sts-a", Key="in/one.txt")["Body"].read() == b"one"
    # presigned GETs with the session's keys, SigV4 and SigV2
    for version in ("s3v4", "s3"):
        p = session_client(g, c, version)
        url = p.generate_presigned_url("get_object", Params={"Bucket": "sts-a",
                                                             "Key": "in/one.txt"})
        assert "security-token" in url.lower()
        got = requests.get(url, timeout=10)
        assert got.content == b"one", (version, got.text)
        bad = p.generate_presigned_url("get_object", Params={"Bucket": "sts-a",
                                                             "Key": "out/two.txt"})
        assert requests.get(bad, timeout=10).status_code == 403


def test_a_session_never_exceeds_its_parent(gws, module_cluster):
    filer, g, _ = gws
    # bob reads pub* only: his session cannot reach sts-a whatever its policy says
    doc = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::sts-a/*"}]}
    c = sts(g, "AKBOB", "bob-secret").assume_role(RoleArn=ROLE, RoleSessionName="bob-s",
                                                  Policy=json.dumps(doc))["Credentials"]
    assert code_of(session_client(g, c).get_object, Bucket="sts-a",
                   Key="in/one.txt") == "AccessDenied"
    # a gateway whose identities no longer hold bob refuses his sessions
    pub = sts(g, "AKBOB", "bob-secret").assume_role(RoleArn=ROLE,
                                                    RoleSessionName="bob-t")["Credentials"]
    client(g, "AKALICE", "alice-secret").create_bucket(Bucket="pub-sts")
    client(g, "AKALICE", "alice-secret").put_object(Bucket="pub-sts", Key="k", Body=b"p")
    assert session_client(g, pub).get_object(Bucket="pub-sts", Key="k")["Body"].read() == b"p"
    without = {"identities": [i for i in IDENTITIES["identities"] if i["name"] != "bob"]}
    g3 = start_gateway(module_cluster, filer, without).start()
    assert code_of(session_client(g3, pub).get_object, Bucket="pub-sts",
                   Key="k") == "InvalidToken"


def test_bad_requests_and_tokens(gws):
    _, g, _ = gws
    cl = sts(g)
    for name in ("bad name!", "x", "n" * 65):
        assert sts_code(cl.assume_role, RoleArn=ROLE, RoleSessionName=name,
                        DurationSeconds=900) == "ValidationError"
    assert sts_code(cl.assume_role, RoleArn=ROLE, RoleSessionName="ok-name",
                    DurationSeconds=899) == "ValidationError"
    assert sts_code(cl.assume_role, RoleArn=ROLE, RoleSessionName="ok-name",
                    DurationSeconds=43201) == "ValidationError"
    assert sts_code(cl.assume_role, RoleArn="not-an-arn",
                    RoleSessionName="ok-name") == "ValidationError"
    for policy in ("{not json", json.dumps({"Statement": [
            {"Effect": "Deny", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::sts-a/*"}]}),
            json.dumps({"Statement": [{"Effect": "Allow", "Action": "s3:GetObject",
                                       "Resource": "arn:aws:s3:::sts-a/a*b"}]})):
        assert sts_code(cl.assume_role, RoleArn=ROLE, RoleSessionName="ok-name",
                        Policy=policy) == "MalformedPolicyDocument"
    assert sts_code(sts(g, "AKALICE", "wrong").assume_role, RoleArn=ROLE,
                    RoleSessionName="ok-name") in ("SignatureDoesNotMatch", "AccessDenied")
    c = cl.assume_role(RoleArn=ROLE, RoleSessionName="tamper")["Credentials"]
    tok = c["SessionToken"]
    flipped = tok[:40] + ("A" if tok[40] != "A" else "B") + tok[41:]
    for bad in (dict(c, SessionToken=flipped), dict(c, SessionToken="garbage"),
                dict(c, SecretAccessKey="x" * 40)):
        code = code_of(session_client(g, bad).get_object, Bucket="sts-a", Key="in/one.txt")
        assert code in ("InvalidToken", "SignatureDoesNotMatch"), code
    # a session key without its token is no key at all
    nokey = boto3.client("s3", endpoint_url="http://%s" % g.url, region_name="us-east-1",
                         aws_access_key_id=c["AccessKeyId"],
                         aws_secret_access_key=c["SecretAccessKey"],
                         config=Config(retries={"max_attempts": 1}))
    assert code_of(nokey.get_object, Bucket="sts-a", Key="in/one.txt") == \
        "InvalidAccessKeyId"


def test_open_gateway_has_no_sts(module_cluster):
    _, filer = start_mini_with_filer(module_cluster)
    g = start_gateway(module_cluster, filer).start()
    r = requests.post("http://%s/" % g.url, timeout=10,
                      data={"Action": "AssumeRole", "Version": "2011-06-15",
                            "RoleArn": ROLE, "RoleSessionName": "ok-name"})
    assert r.status_code >= 400 and b"<ErrorResponse" in r.content, r.text
