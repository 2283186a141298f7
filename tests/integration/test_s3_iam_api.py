"""The IAM API of the S3 gateway (docs/s3-gateway.md, "The IAM API"): users, access keys
and inline user policies through awscli's and boto3's iam clients on -iam.port, stored in
the filer and followed by every gateway of the cluster within a second; the keys sign S3
requests that their user's policies allow, and nothing else."""

import json
import os
import subprocess
import threading
import time
import urllib.parse

import boto3
import botocore
import pytest
import requests
from botocore.config import Config

from conftest import wait_until
from s3_fixtures import client, code_of, two_gateways

READ_PUB = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Action": ["s3:GetObject", "s3:ListBucket"],
     "Resource": ["arn:aws:s3:::iam-pub", "arn:aws:s3:::iam-pub/*"]},
    {"Effect": "Allow", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::iam-pub/up/*"},
    {"Effect": "Deny", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::iam-pub/secret*"}]}


@pytest.fixture(scope="module")
def gws(module_cluster):
    return two_gateways(module_cluster, {b: {"a.txt": b"a", "secret.txt": b"s"}
                                         for b in ("iam-pub", "iam-other")})


def iam(g, ak="AKALICE", sk="alice-secret"):
    """boto3's iam client; its own parameter checks off, so the server's are tested."""
    return boto3.client("iam", endpoint_url="http://127.0.0.1:%d" % g.iam_port,
                        region_name="us-east-1", aws_access_key_id=ak,
                        aws_secret_access_key=sk,
                        config=Config(retries={"max_attempts": 1},
                                      parameter_validation=False))


def err(fn, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        fn(**kw)
    e = ei.value.response
    return e["Error"]["Code"], e["ResponseMetadata"]["HTTPStatusCode"]


def s3_allowed(g, ak, sk):
    """Whether the key may read iam-pub/a.txt through g."""
    try:
        client(g, ak, sk).get_object(Bucket="iam-pub", Key="a.txt")
        return True
    except botocore.exceptions.ClientError:
        return False


def test_awscli_users_keys_policies(gws, tmp_path):
    """Every action through awscli, as an operator would call them."""
    _, g, _ = gws
    env = dict(os.environ, AWS_ACCESS_KEY_ID="AKALICE", AWS_SECRET_ACCESS_KEY="alice-secret",
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))

    def aws(*args):
        p = subprocess.run(["aws", "--endpoint-url", "http://127.0.0.1:%d" % g.iam_port,
                            "--output", "json", "iam"] + list(args),
                           env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stdout + p.stderr
        return json.loads(p.stdout) if p.stdout.strip() else None

    u = aws("create-user", "--user-name", "cli-user")["User"]
    assert u["UserName"] == "cli-user" and u["Arn"].endswith(":user/cli-user")
    assert aws("get-user", "--user-name", "cli-user")["User"]["UserId"] == u["UserId"]
    assert "cli-user" in [x["UserName"] for x in aws("list-users")["Users"]]
    k = aws("create-access-key", "--user-name", "cli-user")["AccessKey"]
    assert k["AccessKeyId"].startswith("AKIA") and len(k["AccessKeyId"]) == 20
    assert len(k["SecretAccessKey"]) == 40 and k["Status"] == "Active"
    meta = aws("list-access-keys", "--user-name", "cli-user")["AccessKeyMetadata"]
    assert [(m["AccessKeyId"], m["Status"]) for m in meta] == [(k["AccessKeyId"], "Active")]
    assert "SecretAccessKey" not in meta[0]  # only CreateAccessKey returns it
    aws("update-access-key", "--user-name", "cli-user", "--access-key-id", k["AccessKeyId"],
        "--status", "Inactive")
    meta = aws("list-access-keys", "--user-name", "cli-user")["AccessKeyMetadata"]
    assert meta[0]["Status"] == "Inactive"
    aws("put-user-policy", "--user-name", "cli-user", "--policy-name", "read",
        "--policy-document", json.dumps(READ_PUB))
    assert aws("list-user-policies", "--user-name", "cli-user")["PolicyNames"] == ["read"]
    got = aws("get-user-policy", "--user-name", "cli-user", "--policy-name", "read")
    assert got["PolicyDocument"] == READ_PUB  # awscli decodes IAM's URL-encoded document
    aws("delete-user-policy", "--user-name", "cli-user", "--policy-name", "read")
    aws("delete-access-key", "--user-name", "cli-user", "--access-key-id", k["AccessKeyId"])
    aws("delete-user", "--user-name", "cli-user")
    assert "cli-user" not in [x["UserName"] for x in aws("list-users")["Users"]]


def test_boto3_errors(gws):
    _, g, _ = gws
    c = iam(g)
    c.create_user(UserName="dup")
    assert err(c.create_user, UserName="dup") == ("EntityAlreadyExists", 409)
    # a name of the identities file is taken: the file's identity wins
    assert err(c.create_user, UserName="bob") == ("EntityAlreadyExists", 409)
    assert err(c.get_user, UserName="nobody") == ("NoSuchEntity", 404)
    assert err(c.delete_user, UserName="nobody") == ("NoSuchEntity", 404)
    assert err(c.create_access_key, UserName="nobody") == ("NoSuchEntity", 404)
    assert err(c.create_user, UserName="bad/name") == ("ValidationError", 400)
    k = c.create_access_key(UserName="dup")["AccessKey"]
    assert err(c.delete_user, UserName="dup") == ("DeleteConflict", 409)
    c.create_access_key(UserName="dup")
    assert err(c.create_access_key, UserName="dup") == ("LimitExceeded", 409)
    assert err(c.delete_access_key, UserName="dup",
               AccessKeyId="AKIANOSUCHKEY0000000") == ("NoSuchEntity", 404)
    assert err(c.update_access_key, UserName="dup", AccessKeyId=k["AccessKeyId"],
               Status="Sleeping") == ("ValidationError", 400)
    assert err(c.put_user_policy, UserName="dup", PolicyName="p",
               PolicyDocument="{not json") == ("MalformedPolicyDocument", 400)
    assert err(c.put_user_policy, UserName="dup", PolicyName="p",
               PolicyDocument=json.dumps({"Statement": [
                   {"Effect": "Allow", "Principal": "*", "Action": "s3:*",
                    "Resource": "*"}]})) == ("MalformedPolicyDocument", 400)
    big = {"Statement": [{"Effect": "Allow", "Action": "s3:GetObject",
                          "Resource": "arn:aws:s3:::b/%s" % ("x" * 2100)}]}
    assert err(c.put_user_policy, UserName="dup", PolicyName="p",
               PolicyDocument=json.dumps(big)) == ("LimitExceeded", 409)
    assert err(c.get_user_policy, UserName="dup", PolicyName="none") == ("NoSuchEntity", 404)
    assert err(c.delete_user_policy, UserName="dup",
               PolicyName="none") == ("NoSuchEntity", 404)
    assert c.list_user_policies(UserName="dup")["PolicyNames"] == []
    # refused calls changed nothing
    assert len(c.list_access_keys(UserName="dup")["AccessKeyMetadata"]) == 2
    for m in c.list_access_keys(UserName="dup")["AccessKeyMetadata"]:
        c.delete_access_key(UserName="dup", AccessKeyId=m["AccessKeyId"])
    c.delete_user(UserName="dup")
    assert err(c.get_user, UserName="dup") == ("NoSuchEntity", 404)


def test_callers_refused(gws):
    """Only an Admin identity of the file may call: bob (Read/List), a wrong secret, an
    unsigned request and a user of the API itself are refused; nothing is made."""
    _, g, _ = gws
    assert err(iam(g, "AKBOB", "bob-secret").create_user,
               UserName="by-bob") == ("AccessDenied", 403)
    assert err(iam(g, "AKALICE", "wrong").create_user,
               UserName="by-x")[0] == "SignatureDoesNotMatch"
    assert err(iam(g, "AKNOBODY", "x").list_users)[0] == "InvalidAccessKeyId"
    r = requests.post("http://127.0.0.1:%d/" % g.iam_port,
                      data={"Action": "CreateUser", "Version": "2010-05-08",
                            "UserName": "unsigned"})
    assert r.status_code == 403 and "MissingAuthenticationToken" in r.text, r.text
    assert "<ErrorResponse" in r.text
    c = iam(g)
    c.create_user(UserName="plain")
    k = c.create_access_key(UserName="plain")["AccessKey"]
    # no policy yet: the key is known (AccessDenied, not InvalidAccessKeyId) and may do nothing
    assert _known(g, k)
    c.put_user_policy(UserName="plain", PolicyName="all", PolicyDocument=json.dumps(
        {"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    assert err(iam(g, k["AccessKeyId"], k["SecretAccessKey"]).create_user,
               UserName="by-plain") == ("AccessDenied", 403)
    names = [u["UserName"] for u in c.list_users()["Users"]]
    assert not {"by-bob", "by-x", "unsigned", "by-plain"} & set(names)
    c.delete_user_policy(UserName="plain", PolicyName="all")
    c.delete_access_key(UserName="plain", AccessKeyId=k["AccessKeyId"])
    c.delete_user(UserName="plain")


def _known(g, k):
    """Whether g knows the key (its refusal is AccessDenied, not InvalidAccessKeyId)."""
    return code_of(client(g, k["AccessKeyId"], k["SecretAccessKey"]).list_objects_v2,
                   Bucket="iam-other") == "AccessDenied"


def test_policy_enforced_and_propagated(gws):
    """A new key signs at once on this gateway what its policy allows and is refused what
    it does not; the second gateway follows within a second; deactivating and deleting
    the key take effect on both within a second."""
    _, g, g2 = gws
    c = iam(g)
    c.create_user(UserName="reader")
    c.put_user_policy(UserName="reader", PolicyName="pub", PolicyDocument=json.dumps(READ_PUB))
    t0 = time.monotonic()
    k = c.create_access_key(UserName="reader")["AccessKey"]
    ak, sk = k["AccessKeyId"], k["SecretAccessKey"]
    wait_until(lambda: s3_allowed(g2, ak, sk), 5, "the second gateway takes the new key")
    took = time.monotonic() - t0
    assert took < 1.5, "the key reached the second gateway in %.2fs" % took
    for gw in (g, g2):
        s = client(gw, ak, sk)
        assert s.get_object(Bucket="iam-pub", Key="a.txt")["Body"].read() == b"a"
        keys = [o["Key"] for o in s.list_objects_v2(Bucket="iam-pub")["Contents"]]
        assert keys[:2] == ["a.txt", "secret.txt"]
        assert code_of(s.get_object, Bucket="iam-pub", Key="secret.txt") == "AccessDenied"
        assert code_of(s.get_object, Bucket="iam-other", Key="a.txt") == "AccessDenied"
        assert code_of(s.put_object, Bucket="iam-pub", Key="a.txt",
                       Body=b"x") == "AccessDenied"
        s.put_object(Bucket="iam-pub", Key="up/new.txt", Body=b"n")
        assert [b["Name"] for b in s.list_buckets()["Buckets"]] == ["iam-pub"]
    # the policy changed: the Deny now covers everything in the bucket
    c.put_user_policy(UserName="reader", PolicyName="deny", PolicyDocument=json.dumps(
        {"Statement": [{"Effect": "Deny", "Action": "s3:*", "Resource": "arn:aws:s3:::*"}]}))
    t0 = time.monotonic()
    wait_until(lambda: not s3_allowed(g2, ak, sk), 5, "the Deny reaches the second gateway")
    assert time.monotonic() - t0 < 1.5
    assert not s3_allowed(g, ak, sk)
    c.delete_user_policy(UserName="reader", PolicyName="deny")
    wait_until(lambda: s3_allowed(g2, ak, sk), 5, "the Deny is gone")
    # deactivated: InvalidAccessKeyId on both gateways, as AWS answers for an inactive key
    c.update_access_key(UserName="reader", AccessKeyId=ak, Status="Inactive")
    t0 = time.monotonic()
    wait_until(lambda: not s3_allowed(g2, ak, sk), 5, "the second gateway drops the key")
    assert time.monotonic() - t0 < 1.5
    for gw in (g, g2):
        assert code_of(client(gw, ak, sk).get_object, Bucket="iam-pub",
                       Key="a.txt") == "InvalidAccessKeyId"
    c.update_access_key(UserName="reader", AccessKeyId=ak, Status="Active")
    wait_until(lambda: s3_allowed(g2, ak, sk), 5, "active again")
    c.delete_access_key(UserName="reader", AccessKeyId=ak)
    t0 = time.monotonic()
    wait_until(lambda: not s3_allowed(g2, ak, sk), 5, "the deleted key is refused")
    assert time.monotonic() - t0 < 1.5
    assert code_of(client(g, ak, sk).get_object, Bucket="iam-pub",
                   Key="a.txt") == "InvalidAccessKeyId"
    c.delete_user_policy(UserName="reader", PolicyName="pub")
    c.delete_user(UserName="reader")


def test_inline_policy_sees_existing_object_tags(gws):
    """An inline policy's s3:ExistingObjectTag/<key> conditions see the tags stored on the
    object read, as a bucket policy's do: its Allow and its Deny follow the tags, and a
    change of the tags takes effect on the next read."""
    _, g, _ = gws
    c, admin = iam(g), client(g, "AKALICE", "alice-secret")
    for key, tags in (("t-yes", "share=yes"), ("t-no", "share=no"), ("t-none", None),
                      ("t-both", "share=yes&secret=true")):
        kw = {"Tagging": tags} if tags else {}
        admin.put_object(Bucket="iam-pub", Key="tags/" + key, Body=key.encode(), **kw)
    c.create_user(UserName="tagged")
    c.put_user_policy(UserName="tagged", PolicyName="by-tag", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::iam-pub/*",
             "Condition": {"StringEquals": {"s3:ExistingObjectTag/share": "yes"}}},
            {"Effect": "Deny", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::iam-pub/*",
             "Condition": {"StringEquals": {"s3:ExistingObjectTag/secret": "true"}}}]}))
    k = c.create_access_key(UserName="tagged")["AccessKey"]
    s = client(g, k["AccessKeyId"], k["SecretAccessKey"])

    def reads(key):
        try:
            return s.get_object(Bucket="iam-pub", Key="tags/" + key)["Body"].read() == \
                key.encode()
        except botocore.exceptions.ClientError as e:
            assert e.response["Error"]["Code"] == "AccessDenied"
            return False

    wait_until(lambda: reads("t-yes"), 5, "the new key signs")
    assert not reads("t-no") and not reads("t-none") and not reads("t-both")
    assert code_of(s.head_object, Bucket="iam-pub", Key="tags/t-no") == "403"
    admin.put_object_tagging(Bucket="iam-pub", Key="tags/t-no", Tagging={"TagSet": [
        {"Key": "share", "Value": "yes"}]})
    assert reads("t-no")
    admin.put_object_tagging(Bucket="iam-pub", Key="tags/t-yes", Tagging={"TagSet": [
        {"Key": "share", "Value": "yes"}, {"Key": "secret", "Value": "true"}]})
    assert not reads("t-yes")
    c.delete_access_key(UserName="tagged", AccessKeyId=k["AccessKeyId"])
    c.delete_user_policy(UserName="tagged", PolicyName="by-tag")
    c.delete_user(UserName="tagged")


def test_changes_on_two_gateways_are_kept(gws):
    """Keys and policies added to one user through both gateways at once: the conditional
    writes keep every change."""
    _, g, g2 = gws
    c1, c2 = iam(g), iam(g2)
    c1.create_user(UserName="both")
    errors = []

    def put(c, i):
        try:
            c.put_user_policy(UserName="both", PolicyName="p%d" % i, PolicyDocument=json.dumps(
                {"Statement": [{"Effect": "Allow", "Action": "s3:GetObject",
                                "Resource": "arn:aws:s3:::b%d/*" % i}]}))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=put, args=((c1, c2)[i % 2], i)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert sorted(c2.list_user_policies(UserName="both")["PolicyNames"]) == [
        "p%d" % i for i in range(8)]
    for i in range(8):
        c1.delete_user_policy(UserName="both", PolicyName="p%d" % i)
    c2.delete_user(UserName="both")


def test_static_identities_still_work(gws):
    """The file's identities sign as before next to the API's users, and GetUser of one of
    them answers."""
    _, g, g2 = gws
    for gw in (g, g2):
        assert client(gw, "AKBOB", "bob-secret").list_buckets() is not None
        assert code_of(client(gw, "AKBOB", "bob-secret").get_object, Bucket="iam-pub",
                       Key="a.txt") == "AccessDenied"
        assert client(gw, "AKALICE", "alice-secret").get_object(
            Bucket="iam-pub", Key="a.txt")["Body"].read() == b"a"
    assert iam(g).get_user()["User"]["UserName"] == "alice"
    assert iam(g).get_user(UserName="bob")["User"]["UserName"] == "bob"


def test_stored_users_in_the_filer(gws):
    """A user is one filer entry under /etc/iam/users; GetUserPolicy answers the document
    URL-encoded on the wire, as IAM does."""
    filer, g, _ = gws
    c = iam(g)
    c.create_user(UserName="stored")
    doc = json.dumps(READ_PUB)
    c.put_user_policy(UserName="stored", PolicyName="pub", PolicyDocument=doc)
    assert "stored" in filer.names("/etc/iam/users")
    stored = json.loads(filer.get("/etc/iam/users/stored").content)
    assert stored["name"] == "stored" and stored["policies"][0]["document"] == doc
    signed = botocore.awsrequest.AWSRequest(
        method="POST", url="http://127.0.0.1:%d/" % g.iam_port,
        data="Action=GetUserPolicy&Version=2010-05-08&UserName=stored&PolicyName=pub",
        headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})
    botocore.auth.SigV4Auth(botocore.credentials.Credentials("AKALICE", "alice-secret"),
                            "iam", "us-east-1").add_auth(signed)
    r = requests.post(signed.url, data=signed.data, headers=dict(signed.headers))
    assert r.status_code == 200, r.text
    enc = r.text.split("<PolicyDocument>")[1].split("</PolicyDocument>")[0]
    assert "{" not in enc and json.loads(urllib.parse.unquote(enc)) == READ_PUB
    c.delete_user_policy(UserName="stored", PolicyName="pub")
    c.delete_user(UserName="stored")
    assert "stored" not in filer.names("/etc/iam/users")


def test_mini_admin_from_environment(cluster, monkeypatch):
    """weedfs mini serves the IAM API on -iam.port; its environment's admin bootstraps it,
    and a key made there signs on mini's S3 port."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKMINI")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "mini-secret")
    monkeypatch.setenv("S3_BUCKET", "mini-b")
    m = cluster.mini()
    g = type("G", (), {"url": "127.0.0.1:%d" % m.s3_port, "iam_port": m.iam_port})
    c = iam(g, "AKMINI", "mini-secret")
    c.create_user(UserName="m-user")
    c.put_user_policy(UserName="m-user", PolicyName="b", PolicyDocument=json.dumps(
        {"Statement": [{"Effect": "Allow", "Action": "s3:*",
                        "Resource": ["arn:aws:s3:::mini-b", "arn:aws:s3:::mini-b/*"]}]}))
    k = c.create_access_key(UserName="m-user")["AccessKey"]
    s = client(g, k["AccessKeyId"], k["SecretAccessKey"])
    s.put_object(Bucket="mini-b", Key="k", Body=b"v")
    assert s.get_object(Bucket="mini-b", Key="k")["Body"].read() == b"v"
    # a bucket of its own it may make, and owns (each identity is an owner: test_s3_acl.py)
    s.create_bucket(Bucket="mini-other")
    s.put_object(Bucket="mini-other", Key="o", Body=b"o")
    # the stored user outlives a restart
    assert m.stop() == 0
    m.start()
    assert client(g, k["AccessKeyId"], k["SecretAccessKey"]).get_object(
        Bucket="mini-b", Key="k")["Body"].read() == b"v"


def test_bad_requests_in_iam_form(gws):
    """What is not an IAM call on the IAM port, and a body over 64 KiB, are refused in
    IAM's ErrorResponse form; an unknown action or parameter too."""
    _, g, _ = gws
    url = "http://127.0.0.1:%d/" % g.iam_port
    r = requests.get(url)
    assert r.status_code == 400 and "<ErrorResponse" in r.text, r.text
    r = requests.post(url, data={"Action": "ListUsers", "Pad": "x" * (70 << 10)})
    assert r.status_code == 400 and "<ErrorResponse" in r.text, r.text
    assert "MaxMessageLengthExceeded" in r.text
    c = iam(g)
    assert c.list_users(PathPrefix="/")["IsTruncated"] is False
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        c.get_account_summary()
    assert ei.value.response["Error"]["Code"] == "InvalidAction"
    assert err(c.create_user, UserName="u", Tags=[{"Key": "k", "Value": "v"}])[0] == \
        "InvalidInput"
    assert "u" not in [u["UserName"] for u in c.list_users()["Users"]]
