"""Bucket policies through the S3 gateway: stored and validated (MalformedPolicy), and
enforced together with the identities' grants: anonymous access a policy opens, named
principals, explicit Deny over any grant, aws:SourceIp, s3:prefix, s3:if-none-match,
DeleteObjects key by key, copy sources, and the Admin's way out of a lockout."""

import json

import boto3
import botocore
import pytest
import requests
from botocore.config import Config

from conftest import wait_until
from s3_fixtures import IDENTITIES, client, code_of, mini_gateway, start_gateway

ALICE = ("AKALICE", "alice-secret")  # Admin
BOB = ("AKBOB", "bob-secret")        # Read and List on pub* only


@pytest.fixture(scope="module")
def gw(module_cluster):
    return mini_gateway(module_cluster)


def policy(bucket, *statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def stmt(effect, principal, action, resource, condition=None):
    s = {"Effect": effect, "Principal": principal, "Action": action, "Resource": resource}
    if condition:
        s["Condition"] = condition
    return s


def anon(g, method, path, **kw):
    return requests.request(method, "http://%s/%s" % (g.url, path), timeout=10, **kw)


def test_policy_stored_and_validated(gw):
    _, g = gw
    alice, bob = client(g, *ALICE), client(g, *BOB)
    alice.create_bucket(Bucket="pol-conf")
    assert code_of(alice.get_bucket_policy, Bucket="pol-conf") == "NoSuchBucketPolicy"
    assert code_of(alice.get_bucket_policy_status, Bucket="pol-conf") == "NoSuchBucketPolicy"
    narrow = policy("pol-conf", stmt("Allow", "*", "s3:GetObject", "arn:aws:s3:::pol-conf/*",
                                     {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}))
    alice.put_bucket_policy(Bucket="pol-conf", Policy=narrow)
    assert alice.get_bucket_policy_status(Bucket="pol-conf")["PolicyStatus"]["IsPublic"] is False
    doc = policy("pol-conf", stmt("Allow", "*", "s3:GetObject", "arn:aws:s3:::pol-conf/*"))
    alice.put_bucket_policy(Bucket="pol-conf", Policy=doc)
    assert json.loads(alice.get_bucket_policy(Bucket="pol-conf")["Policy"]) == json.loads(doc)
    assert alice.get_bucket_policy_status(Bucket="pol-conf")["PolicyStatus"]["IsPublic"] is True
    for bad in ("not json", "{}",
                policy("x", stmt("Allow", "*", "s3:Fly", "arn:aws:s3:::pol-conf/*")),
                policy("x", stmt("Allow", "*", "s3:GetObject", "arn:aws:s3:::other/*")),
                policy("x", stmt("Maybe", "*", "s3:GetObject", "arn:aws:s3:::pol-conf/*")),
                policy("x", stmt("Allow", "*", "s3:GetObject", "arn:aws:s3:::pol-conf/*",
                                 {"IpAddress": {"aws:SourceIp": "300.1.2.3/8"}}))):
        assert code_of(alice.put_bucket_policy, Bucket="pol-conf", Policy=bad) == \
            "MalformedPolicy", bad
    # the stored policy is unchanged by the refusals; bob (no Admin) may not touch it
    assert json.loads(alice.get_bucket_policy(Bucket="pol-conf")["Policy"]) == json.loads(doc)
    assert code_of(bob.put_bucket_policy, Bucket="pol-conf", Policy=doc) == "AccessDenied"
    assert code_of(bob.delete_bucket_policy, Bucket="pol-conf") == "AccessDenied"
    alice.delete_bucket_policy(Bucket="pol-conf")
    assert code_of(alice.get_bucket_policy, Bucket="pol-conf") == "NoSuchBucketPolicy"
    assert code_of(alice.put_bucket_policy, Bucket="pol-none", Policy=doc) == "NoSuchBucket"


def test_anonymous_access_a_policy_opens(gw):
    _, g = gw
    alice = client(g, *ALICE)
    alice.create_bucket(Bucket="pol-web")
    for k in ("site/index.html", "private/key"):
        alice.put_object(Bucket="pol-web", Key=k, Body=k.encode())
    assert anon(g, "GET", "pol-web/site/index.html").status_code == 403
    alice.put_bucket_policy(Bucket="pol-web", Policy=policy("pol-web", stmt(
        "Allow", "*", ["s3:GetObject"], "arn:aws:s3:::pol-web/site/*"), stmt(
        "Allow", {"AWS": "*"}, "s3:ListBucket", "arn:aws:s3:::pol-web",
        {"StringEquals": {"s3:prefix": "site/"}})))
    r = anon(g, "GET", "pol-web/site/index.html")
    assert r.status_code == 200 and r.content == b"site/index.html"
    assert anon(g, "HEAD", "pol-web/site/index.html").status_code == 200
    r = anon(g, "GET", "pol-web/private/key")
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text
    assert anon(g, "PUT", "pol-web/site/new", data=b"x").status_code == 403
    assert anon(g, "DELETE", "pol-web/site/index.html").status_code == 403
    r = anon(g, "GET", "pol-web", params={"list-type": "2", "prefix": "site/"})
    assert r.status_code == 200 and "<Key>site/index.html</Key>" in r.text
    assert anon(g, "GET", "pol-web", params={"list-type": "2"}).status_code == 403
    assert anon(g, "GET", "").status_code == 403  # ListBuckets has no bucket policy
    assert alice.get_object(Bucket="pol-web", Key="site/index.html")["Body"].read()


def test_a_changed_policy_applies_at_once(gw):
    """Gateway threads keep parsed policies: a replaced policy of the same length, and
    more policed buckets than a thread keeps, still decide every request by what is
    stored now."""
    _, g = gw
    alice = client(g, *ALICE)
    alice.create_bucket(Bucket="pol-swap")
    for k in ("a/x", "b/x"):
        alice.put_object(Bucket="pol-swap", Key=k, Body=k.encode())

    def only(prefix):
        return policy("pol-swap", stmt("Allow", "*", "s3:GetObject",
                                       "arn:aws:s3:::pol-swap/%s/*" % prefix))
    for open_prefix, shut_prefix in (("a", "b"), ("b", "a"), ("a", "b")):
        alice.put_bucket_policy(Bucket="pol-swap", Policy=only(open_prefix))
        for _ in range(24):  # enough to reach every worker thread
            assert anon(g, "GET", "pol-swap/%s/x" % open_prefix).status_code == 200
            assert anon(g, "GET", "pol-swap/%s/x" % shut_prefix).status_code == 403
    buckets = ["pol-many-%d" % i for i in range(12)]
    for i, b in enumerate(buckets):
        alice.create_bucket(Bucket=b)
        alice.put_object(Bucket=b, Key="k%d" % i, Body=b"v")
        alice.put_bucket_policy(Bucket=b, Policy=policy(b, stmt(
            "Allow", "*", "s3:GetObject", "arn:aws:s3:::%s/k%d" % (b, i))))
    for _ in range(3):
        for i, b in enumerate(buckets):
            assert anon(g, "GET", "%s/k%d" % (b, i)).status_code == 200
            assert anon(g, "GET", "%s/k%d" % (b, i + 1)).status_code == 403
    alice.delete_bucket_policy(Bucket="pol-swap")
    assert anon(g, "GET", "pol-swap/a/x").status_code == 403


def test_named_principals_and_explicit_deny(gw):
    _, g = gw
    alice, bob = client(g, *ALICE), client(g, *BOB)
    alice.create_bucket(Bucket="pol-team")
    alice.put_object(Bucket="pol-team", Key="keep/x", Body=b"x")
    alice.put_object(Bucket="pol-team", Key="tmp/y", Body=b"y")
    assert code_of(bob.put_object, Bucket="pol-team", Key="bob/a", Body=b"a") == "AccessDenied"
    alice.put_bucket_policy(Bucket="pol-team", Policy=policy("pol-team", stmt(
        "Allow", {"AWS": ["arn:aws:iam::000000000000:user/bob"]},
        ["s3:PutObject", "s3:GetObject"], "arn:aws:s3:::pol-team/bob/*"), stmt(
        "Deny", "*", "s3:DeleteObject", "arn:aws:s3:::pol-team/keep/*")))
    # bob may now write and read under bob/ (no grant of his own there), nowhere else
    bob.put_object(Bucket="pol-team", Key="bob/a", Body=b"a")
    assert bob.get_object(Bucket="pol-team", Key="bob/a")["Body"].read() == b"a"
    assert code_of(bob.put_object, Bucket="pol-team", Key="other", Body=b"") == "AccessDenied"
    assert code_of(bob.get_object, Bucket="pol-team", Key="keep/x") == "AccessDenied"
    # a Deny wins over alice's Admin grant; DeleteObjects is judged key by key
    assert code_of(alice.delete_object, Bucket="pol-team", Key="keep/x") == "AccessDenied"
    r = alice.delete_objects(Bucket="pol-team", Delete={"Objects": [{"Key": "keep/x"},
                                                                    {"Key": "tmp/y"}]})
    assert [d["Key"] for d in r["Deleted"]] == ["tmp/y"]
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("keep/x", "AccessDenied")]
    assert alice.get_object(Bucket="pol-team", Key="keep/x")["Body"].read() == b"x"
    # a copy needs the source's GetObject: bob copies what the policy lets him read
    alice.create_bucket(Bucket="pub-dst")
    alice.put_bucket_policy(Bucket="pub-dst", Policy=policy("pub-dst", stmt(
        "Allow", {"AWS": "bob"}, "s3:PutObject", "arn:aws:s3:::pub-dst/*")))
    bob.copy_object(Bucket="pub-dst", Key="c", CopySource={"Bucket": "pol-team",
                                                           "Key": "bob/a"})
    assert code_of(bob.copy_object, Bucket="pub-dst", Key="d",
                   CopySource={"Bucket": "pol-team", "Key": "keep/x"}) == "AccessDenied"


def test_delete_objects_denied_keys_are_per_key_errors(gw):
    """DeleteObjects by an identity with no right on some or all of its keys: 200, each
    denied key an <Error> AccessDenied (Quiet too), nothing of it deleted, the allowed
    keys deleted; an anonymous request nothing could allow is refused whole, and a
    missing bucket is NoSuchBucket."""
    _, g = gw
    alice, bob = client(g, *ALICE), client(g, *BOB)
    alice.create_bucket(Bucket="pol-mdel")
    for k in ("a", "b", "bob/x", "bob/y"):
        alice.put_object(Bucket="pol-mdel", Key=k, Body=k.encode())

    def keys():
        return [o["Key"] for o in alice.list_objects_v2(Bucket="pol-mdel")["Contents"]]

    r = bob.delete_objects(Bucket="pol-mdel", Delete={"Objects": [{"Key": "a"}, {"Key": "b"}]})
    assert r["ResponseMetadata"]["HTTPStatusCode"] == 200 and "Deleted" not in r
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("a", "AccessDenied"),
                                                          ("b", "AccessDenied")]
    assert keys() == ["a", "b", "bob/x", "bob/y"]
    alice.put_bucket_policy(Bucket="pol-mdel", Policy=policy("pol-mdel", stmt(
        "Allow", {"AWS": "bob"}, "s3:DeleteObject", "arn:aws:s3:::pol-mdel/bob/*")))
    r = bob.delete_objects(Bucket="pol-mdel", Delete={"Objects": [
        {"Key": "a"}, {"Key": "bob/x"}]})
    assert [d["Key"] for d in r["Deleted"]] == ["bob/x"]
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("a", "AccessDenied")]
    r = bob.delete_objects(Bucket="pol-mdel", Delete={"Quiet": True, "Objects": [
        {"Key": "b"}, {"Key": "bob/y"}]})
    assert "Deleted" not in r
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("b", "AccessDenied")]
    assert keys() == ["a", "b"]
    alice.delete_bucket_policy(Bucket="pol-mdel")
    unsigned = boto3.client("s3", endpoint_url="http://%s" % g.url, region_name="us-east-1",
                            config=Config(signature_version=botocore.UNSIGNED))
    assert code_of(unsigned.delete_objects, Bucket="pol-mdel",
                   Delete={"Objects": [{"Key": "a"}]}) == "AccessDenied"
    assert code_of(bob.delete_objects, Bucket="pol-mdel-none",
                   Delete={"Objects": [{"Key": "a"}]}) == "NoSuchBucket"
    assert keys() == ["a", "b"]


def test_home_folders_by_policy_variable(gw):
    _, g = gw
    alice, bob = client(g, *ALICE), client(g, *BOB)
    alice.create_bucket(Bucket="pol-home")
    alice.put_bucket_policy(Bucket="pol-home", Policy=policy("pol-home", stmt(
        "Allow", {"AWS": "*"}, ["s3:PutObject", "s3:GetObject"],
        "arn:aws:s3:::pol-home/home/${aws:username}/*")))
    bob.put_object(Bucket="pol-home", Key="home/bob/notes", Body=b"mine")
    assert bob.get_object(Bucket="pol-home", Key="home/bob/notes")["Body"].read() == b"mine"
    assert code_of(bob.put_object, Bucket="pol-home", Key="home/alice/x",
                   Body=b"") == "AccessDenied"
    assert code_of(bob.put_object, Bucket="pol-home", Key="home/${aws:username}/x",
                   Body=b"") == "AccessDenied"


def test_browser_post_obeys_the_bucket_policy(gw):
    _, g = gw
    alice = client(g, *ALICE)
    alice.create_bucket(Bucket="pol-post")
    alice.put_bucket_policy(Bucket="pol-post", Policy=policy("pol-post", stmt(
        "Deny", "*", "s3:PutObject", "arn:aws:s3:::pol-post/blocked/*")))

    signer = boto3.client("s3", endpoint_url="http://%s" % g.url, aws_access_key_id=ALICE[0],
                          aws_secret_access_key=ALICE[1], region_name="us-east-1",
                          config=Config(signature_version="s3v4"))  # a SigV4 form

    def post(key):
        form = signer.generate_presigned_post("pol-post", key, ExpiresIn=300)
        return requests.post(form["url"], data=form["fields"], files={"file": b"form body"},
                             timeout=30)

    r = post("blocked/x")
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text, r.text
    assert code_of(alice.head_object, Bucket="pol-post", Key="blocked/x") == "404"
    assert post("open/x").status_code == 204
    assert alice.get_object(Bucket="pol-post", Key="open/x")["Body"].read() == b"form body"


def test_browser_post_allowed_by_the_bucket_policy_alone(gw):
    """A form signed by an identity with no write grant of its own (bob) is stored where
    the bucket policy allows it, and refused, nothing stored, elsewhere: the early check
    before the file streams leaves a bucket with a policy to the commit's decision."""
    _, g = gw
    alice = client(g, *ALICE)
    alice.create_bucket(Bucket="pol-postallow")
    signer = boto3.client("s3", endpoint_url="http://%s" % g.url, aws_access_key_id=BOB[0],
                          aws_secret_access_key=BOB[1], region_name="us-east-1",
                          config=Config(signature_version="s3v4"))

    def post(key):
        form = signer.generate_presigned_post("pol-postallow", key, ExpiresIn=300)
        return requests.post(form["url"], data=form["fields"], files={"file": b"bob's form"},
                             timeout=30)

    r = post("bob/x")  # no policy yet: bob may not write
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text, r.text
    alice.put_bucket_policy(Bucket="pol-postallow", Policy=policy("pol-postallow", stmt(
        "Allow", {"AWS": "bob"}, "s3:PutObject", "arn:aws:s3:::pol-postallow/bob/*")))
    alice.head_bucket(Bucket="pol-postallow")  # the bucket (with its policy) in the cache
    assert post("bob/x").status_code == 204
    assert alice.get_object(Bucket="pol-postallow", Key="bob/x")["Body"].read() == b"bob's form"
    r = post("alice/x")
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text, r.text
    assert code_of(alice.head_object, Bucket="pol-postallow", Key="alice/x") == "404"


def test_conditions_source_ip_and_if_none_match(gw):
    _, g = gw
    alice = client(g, *ALICE)
    alice.create_bucket(Bucket="pol-cond")
    # write-once keys: a PutObject without If-None-Match is denied
    alice.put_bucket_policy(Bucket="pol-cond", Policy=policy("pol-cond", stmt(
        "Deny", "*", "s3:PutObject", "arn:aws:s3:::pol-cond/*",
        {"Null": {"s3:if-none-match": "true"}})))
    assert code_of(alice.put_object, Bucket="pol-cond", Key="k", Body=b"1") == "AccessDenied"
    alice.put_object(Bucket="pol-cond", Key="k", Body=b"1", IfNoneMatch="*")
    assert code_of(alice.put_object, Bucket="pol-cond", Key="k", Body=b"2",
                   IfNoneMatch="*") == "PreconditionFailed"
    # requests from outside 10.0.0.0/8 are denied; from inside (none here) they would not be
    alice.put_bucket_policy(Bucket="pol-cond", Policy=policy("pol-cond", stmt(
        "Deny", "*", "s3:GetObject", "arn:aws:s3:::pol-cond/*",
        {"NotIpAddress": {"aws:SourceIp": ["10.0.0.0/8", "::1/128"]}})))
    assert code_of(alice.get_object, Bucket="pol-cond", Key="k") == "AccessDenied"
    alice.put_bucket_policy(Bucket="pol-cond", Policy=policy("pol-cond", stmt(
        "Deny", "*", "s3:GetObject", "arn:aws:s3:::pol-cond/*",
        {"NotIpAddress": {"aws:SourceIp": "127.0.0.0/8"}})))
    assert alice.get_object(Bucket="pol-cond", Key="k")["Body"].read() == b"1"


def test_admin_undoes_a_lockout(gw):
    _, g = gw
    alice = client(g, *ALICE)
    alice.create_bucket(Bucket="pol-lock")
    alice.put_object(Bucket="pol-lock", Key="k", Body=b"k")
    alice.put_bucket_policy(Bucket="pol-lock", Policy=policy("pol-lock", stmt(
        "Deny", "*", "s3:*", ["arn:aws:s3:::pol-lock", "arn:aws:s3:::pol-lock/*"])))
    assert code_of(alice.get_object, Bucket="pol-lock", Key="k") == "AccessDenied"
    assert code_of(alice.list_objects_v2, Bucket="pol-lock") == "AccessDenied"
    assert alice.get_bucket_policy(Bucket="pol-lock")["Policy"]
    alice.delete_bucket_policy(Bucket="pol-lock")
    assert alice.get_object(Bucket="pol-lock", Key="k")["Body"].read() == b"k"


def test_two_gateways_share_policies_and_versions(module_cluster, gw):
    """Gateways keep nothing of their own: a policy or versioning state set through one
    is in force in another within the bucket cache's second; objects immediately."""
    filer, a = gw
    b = start_gateway(module_cluster, filer, IDENTITIES).start()
    alice_a, alice_b = client(a, *ALICE), client(b, *ALICE)
    alice_a.create_bucket(Bucket="pol-two")
    alice_b.head_bucket(Bucket="pol-two")
    assert anon(b, "GET", "pol-two/k").status_code == 403  # b has the bucket cached now
    alice_a.put_object(Bucket="pol-two", Key="k", Body=b"shared")
    assert alice_b.get_object(Bucket="pol-two", Key="k")["Body"].read() == b"shared"
    alice_a.put_bucket_policy(Bucket="pol-two", Policy=policy("pol-two", stmt(
        "Allow", "*", "s3:GetObject", "arn:aws:s3:::pol-two/*")))
    wait_until(lambda: anon(b, "GET", "pol-two/k").status_code == 200, timeout=5,
               what="the policy through the other gateway")
    alice_a.delete_bucket_policy(Bucket="pol-two")
    wait_until(lambda: anon(b, "GET", "pol-two/k").status_code == 403, timeout=5,
               what="the policy's removal through the other gateway")
    alice_a.put_bucket_versioning(Bucket="pol-two", VersioningConfiguration={"Status": "Enabled"})
    wait_until(lambda: "VersionId" in alice_b.put_object(Bucket="pol-two", Key="k", Body=b"2"),
               timeout=5, what="versioning through the other gateway")
    assert len(alice_a.list_object_versions(Bucket="pol-two")["Versions"]) >= 2


# ---- principals and condition keys clients use (issue 26) ----

def test_existing_object_tags_decide_reads(gw):
    """s3:ExistingObjectTag/<key>: the tags stored on the object the request reads,
    read only for a policy that names such a key (versioned reads see their version's)."""
    _, g = gw
    alice, bob = client(g, *ALICE), client(g, *BOB)
    alice.create_bucket(Bucket="pol-etag")
    alice.put_bucket_versioning(Bucket="pol-etag", VersioningConfiguration={"Status": "Enabled"})
    alice.put_object(Bucket="pol-etag", Key="plain", Body=b"p")
    alice.put_object(Bucket="pol-etag", Key="shared", Body=b"s", Tagging="share=yes")
    v1 = alice.put_object(Bucket="pol-etag", Key="doc", Body=b"1",
                          Tagging="secret=true&share=yes")["VersionId"]
    alice.put_object(Bucket="pol-etag", Key="doc", Body=b"2", Tagging="share=yes")
    alice.get_object(Bucket="pol-etag", Key="plain")  # the bucket's entry cached now
    alice.put_bucket_policy(Bucket="pol-etag", Policy=policy("pol-etag", stmt(
        "Deny", "*", ["s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectVersionTagging"],
        "arn:aws:s3:::pol-etag/*",
        {"StringEquals": {"s3:ExistingObjectTag/secret": "true"}}), stmt(
        "Allow", {"AWS": "bob"}, "s3:GetObject", "arn:aws:s3:::pol-etag/*",
        {"StringEquals": {"s3:ExistingObjectTag/share": "yes"}})))
    # bob (no grant here) reads only what is tagged share=yes
    assert bob.get_object(Bucket="pol-etag", Key="shared")["Body"].read() == b"s"
    assert code_of(bob.get_object, Bucket="pol-etag", Key="plain") == "AccessDenied"
    assert bob.get_object(Bucket="pol-etag", Key="doc")["Body"].read() == b"2"
    # the version tagged secret=true is closed to everyone, its Admin owner too
    assert code_of(alice.get_object, Bucket="pol-etag", Key="doc", VersionId=v1) == \
        "AccessDenied"
    assert code_of(alice.get_object_tagging, Bucket="pol-etag", Key="doc", VersionId=v1) == \
        "AccessDenied"
    assert alice.get_object(Bucket="pol-etag", Key="plain")["Body"].read() == b"p"
    # tagging the current version secret closes it at once; untagging opens it again
    alice.put_object_tagging(Bucket="pol-etag", Key="shared",
                             Tagging={"TagSet": [{"Key": "secret", "Value": "true"}]})
    assert code_of(alice.get_object, Bucket="pol-etag", Key="shared") == "AccessDenied"
    assert code_of(alice.head_object, Bucket="pol-etag", Key="shared") == "403"
    assert code_of(bob.get_object, Bucket="pol-etag", Key="shared") == "AccessDenied"
    alice.delete_object_tagging(Bucket="pol-etag", Key="shared")
    assert alice.get_object(Bucket="pol-etag", Key="shared")["Body"].read() == b"s"
    # a copy reads its source under the same policy
    assert code_of(alice.copy_object, Bucket="pol-etag", Key="leak",
                   CopySource={"Bucket": "pol-etag", "Key": "doc", "VersionId": v1}) == \
        "AccessDenied"
    # a missing object has no tags: GetObject says what it says without a policy
    assert code_of(alice.get_object, Bucket="pol-etag", Key="none") == "NoSuchKey"


def test_request_object_tags_decide_writes(gw):
    """s3:RequestObjectTag/<key> and s3:RequestObjectTagKeys: from x-amz-tagging on
    PutObject, CreateMultipartUpload and CopyObject, and from PutObjectTagging's body."""
    _, g = gw
    alice, bob = client(g, *ALICE), client(g, *BOB)
    alice.create_bucket(Bucket="pol-rtag")
    alice.put_bucket_policy(Bucket="pol-rtag", Policy=policy("pol-rtag", stmt(
        "Deny", "*", ["s3:PutObject", "s3:PutObjectTagging"], "arn:aws:s3:::pol-rtag/*",
        {"StringNotEquals": {"s3:RequestObjectTag/team": "blue"}}), stmt(
        "Deny", "*", "s3:PutObjectTagging", "arn:aws:s3:::pol-rtag/*",
        {"ForAnyValue:StringNotEquals": {"s3:RequestObjectTagKeys": ["team", "env"]}}), stmt(
        "Allow", {"AWS": "bob"}, "s3:PutObject", "arn:aws:s3:::pol-rtag/bob/*",
        {"StringEquals": {"s3:RequestObjectTag/team": "blue"}})))
    assert code_of(alice.put_object, Bucket="pol-rtag", Key="a", Body=b"") == "AccessDenied"
    assert code_of(alice.put_object, Bucket="pol-rtag", Key="a", Body=b"",
                   Tagging="team=red") == "AccessDenied"
    alice.put_object(Bucket="pol-rtag", Key="a", Body=b"a", Tagging="team=blue&env=dev")
    # bob has no grant: the Allow with the tag is his only way in
    assert code_of(bob.put_object, Bucket="pol-rtag", Key="bob/x", Body=b"") == "AccessDenied"
    bob.put_object(Bucket="pol-rtag", Key="bob/x", Body=b"x", Tagging="team=blue")
    assert code_of(bob.put_object, Bucket="pol-rtag", Key="other", Body=b"",
                   Tagging="team=blue") == "AccessDenied"
    assert code_of(alice.create_multipart_upload, Bucket="pol-rtag", Key="m") == "AccessDenied"
    alice.create_multipart_upload(Bucket="pol-rtag", Key="m", Tagging="team=blue")
    assert code_of(alice.copy_object, Bucket="pol-rtag", Key="c",
                   CopySource={"Bucket": "pol-rtag", "Key": "a"}) == "AccessDenied"
    alice.copy_object(Bucket="pol-rtag", Key="c", CopySource={"Bucket": "pol-rtag", "Key": "a"},
                      Tagging="team=blue", TaggingDirective="REPLACE")
    # PutObjectTagging: the body's tags; a refused one leaves the stored tags alone
    assert code_of(alice.put_object_tagging, Bucket="pol-rtag", Key="a", Tagging={"TagSet": [
        {"Key": "team", "Value": "red"}]}) == "AccessDenied"
    assert code_of(alice.put_object_tagging, Bucket="pol-rtag", Key="a", Tagging={"TagSet": [
        {"Key": "team", "Value": "blue"}, {"Key": "cost", "Value": "1"}]}) == "AccessDenied"
    tags = alice.get_object_tagging(Bucket="pol-rtag", Key="a")["TagSet"]
    assert {t["Key"]: t["Value"] for t in tags} == {"team": "blue", "env": "dev"}
    alice.put_object_tagging(Bucket="pol-rtag", Key="a", Tagging={"TagSet": [
        {"Key": "team", "Value": "blue"}]})
    assert alice.get_object_tagging(Bucket="pol-rtag", Key="a")["TagSet"] == [
        {"Key": "team", "Value": "blue"}]
    # bob may not tag at all (no grant, no Allow), whatever the body says
    assert code_of(bob.put_object_tagging, Bucket="pol-rtag", Key="bob/x", Tagging={"TagSet": [
        {"Key": "team", "Value": "blue"}]}) == "AccessDenied"


def tagging_xml(tags):
    return "<Tagging><TagSet>%s</TagSet></Tagging>" % "".join(
        "<Tag><Key>%s</Key><Value>%s</Value></Tag>" % kv for kv in tags)


def test_post_form_tagging_reaches_the_policy(gw):
    """A browser POST form's tagging field (a Tagging document, as S3's form takes it)
    gives the policy s3:RequestObjectTag/<key> and s3:RequestObjectTagKeys, as
    x-amz-tagging does on PutObject, and is stored as the object's tags; a malformed or
    oversized one is refused with S3's codes, nothing stored."""
    _, g = gw
    alice = client(g, *ALICE)
    signer = boto3.client("s3", endpoint_url="http://%s" % g.url, aws_access_key_id=ALICE[0],
                          aws_secret_access_key=ALICE[1], region_name="us-east-1",
                          config=Config(signature_version="s3v4"))
    alice.create_bucket(Bucket="pol-ptag")
    alice.create_bucket(Bucket="pol-ptag-open")
    alice.put_bucket_policy(Bucket="pol-ptag", Policy=policy("pol-ptag", stmt(
        "Deny", "*", "s3:PutObject", "arn:aws:s3:::pol-ptag/*",
        {"StringNotEquals": {"s3:RequestObjectTag/team": "blue"}}), stmt(
        "Deny", "*", "s3:PutObject", "arn:aws:s3:::pol-ptag/*",
        {"ForAnyValue:StringNotEquals": {"s3:RequestObjectTagKeys": ["team", "env"]}})))

    def post(bucket, key, tagging=None):
        fields = {"tagging": tagging} if tagging is not None else {}
        form = signer.generate_presigned_post(bucket, key, Fields=fields,
                                              Conditions=[{"tagging": tagging}] if fields
                                              else [], ExpiresIn=300)
        return requests.post(form["url"], data=form["fields"], files={"file": b"tagged"},
                             timeout=30)

    denied = (None, tagging_xml([("team", "red")]),
              tagging_xml([("team", "blue"), ("cost", "1")]), "<Tagging>")
    for i, t in enumerate(denied):
        r = post("pol-ptag", "d%d" % i, t)
        assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text, (t, r.text)
        assert code_of(alice.head_object, Bucket="pol-ptag", Key="d%d" % i) == "404"
    r = post("pol-ptag", "ok", tagging_xml([("team", "blue"), ("env", "dev")]))
    assert r.status_code == 204, r.text
    assert alice.get_object_tagging(Bucket="pol-ptag", Key="ok")["TagSet"] == [
        {"Key": "env", "Value": "dev"}, {"Key": "team", "Value": "blue"}]
    assert alice.head_object(Bucket="pol-ptag", Key="ok")["ContentLength"] == 6
    # without a policy: stored as given, or refused as PutObjectTagging refuses the set
    assert post("pol-ptag-open", "t", tagging_xml([("a", "1")])).status_code == 204
    assert alice.get_object_tagging(Bucket="pol-ptag-open", Key="t")["TagSet"] == [
        {"Key": "a", "Value": "1"}]
    assert post("pol-ptag-open", "none").status_code == 204
    assert alice.get_object_tagging(Bucket="pol-ptag-open", Key="none")["TagSet"] == []
    refused = (("<Tagging><TagSet>", "MalformedXML"),
               ("<Tagging><TagSet><Tag><Value>v</Value></Tag></TagSet></Tagging>",
                "MalformedXML"),
               (tagging_xml([("k%d" % i, "v") for i in range(11)]), "InvalidTag"),
               (tagging_xml([("k", "1"), ("k", "2")]), "InvalidTag"))
    for i, (t, code) in enumerate(refused):
        r = post("pol-ptag-open", "bad%d" % i, t)
        assert r.status_code == 400 and "<Code>%s</Code>" % code in r.text, (t, r.text)
        assert code_of(alice.head_object, Bucket="pol-ptag-open", Key="bad%d" % i) == "404"


def test_acl_header_reaches_the_policy(gw):
    """s3:x-amz-acl: the canned ACL header is a condition key, so the common
    "bucket-owner-full-control or nothing" policy holds."""
    _, g = gw
    alice = client(g, *ALICE)
    alice.create_bucket(Bucket="pol-acl")
    alice.put_bucket_policy(Bucket="pol-acl", Policy=policy("pol-acl", stmt(
        "Deny", "*", "s3:PutObject", "arn:aws:s3:::pol-acl/*",
        {"StringNotEquals": {"s3:x-amz-acl": "bucket-owner-full-control"}})))
    assert code_of(alice.put_object, Bucket="pol-acl", Key="k", Body=b"") == "AccessDenied"
    assert code_of(alice.put_object, Bucket="pol-acl", Key="k", Body=b"",
                   ACL="public-read") == "AccessDenied"
    alice.put_object(Bucket="pol-acl", Key="k", Body=b"k", ACL="bucket-owner-full-control")
    assert alice.get_object(Bucket="pol-acl", Key="k")["Body"].read() == b"k"


def test_listing_conditions_max_keys_and_delimiter(gw):
    _, g = gw
    alice, bob = client(g, *ALICE), client(g, *BOB)
    alice.create_bucket(Bucket="pol-list")
    for k in ("a/1", "a/2", "b"):
        alice.put_object(Bucket="pol-list", Key=k, Body=b"")
    alice.put_bucket_policy(Bucket="pol-list", Policy=policy("pol-list", stmt(
        "Allow", {"AWS": "bob"}, "s3:ListBucket", "arn:aws:s3:::pol-list",
        {"NumericLessThanEquals": {"s3:max-keys": "10"},
         "StringEquals": {"s3:delimiter": "/"}})))
    r = bob.list_objects_v2(Bucket="pol-list", MaxKeys=10, Delimiter="/")
    assert [p["Prefix"] for p in r["CommonPrefixes"]] == ["a/"]
    assert [o["Key"] for o in r["Contents"]] == ["b"]
    assert code_of(bob.list_objects_v2, Bucket="pol-list", MaxKeys=11,
                   Delimiter="/") == "AccessDenied"
    assert code_of(bob.list_objects_v2, Bucket="pol-list", MaxKeys=5,
                   Delimiter="-") == "AccessDenied"
    assert code_of(bob.list_objects, Bucket="pol-list", Delimiter="/") == "AccessDenied"


def test_secure_transport_and_auth_keys(gw):
    """aws:SecureTransport is false on the gateway's plain HTTP: Deny false shuts
    everything but the Admin's way to the policy; s3:authType tells presigned URLs
    from signed headers; aws:CurrentTime takes the Date operators."""
    _, g = gw
    alice = client(g, *ALICE)
    alice.create_bucket(Bucket="pol-tls")
    alice.put_object(Bucket="pol-tls", Key="k", Body=b"k")
    alice.put_bucket_policy(Bucket="pol-tls", Policy=policy("pol-tls", stmt(
        "Deny", "*", "s3:*", ["arn:aws:s3:::pol-tls", "arn:aws:s3:::pol-tls/*"],
        {"Bool": {"aws:SecureTransport": "false"}})))
    assert code_of(alice.get_object, Bucket="pol-tls", Key="k") == "AccessDenied"
    assert code_of(alice.put_object, Bucket="pol-tls", Key="k", Body=b"") == "AccessDenied"
    assert code_of(alice.list_objects_v2, Bucket="pol-tls") == "AccessDenied"
    assert anon(g, "GET", "pol-tls/k").status_code == 403
    alice.put_bucket_policy(Bucket="pol-tls", Policy=policy("pol-tls", stmt(
        "Deny", "*", "s3:GetObject", "arn:aws:s3:::pol-tls/*",
        {"StringNotEquals": {"s3:authType": "REST-HEADER"}}), stmt(
        "Deny", "*", "s3:GetObject", "arn:aws:s3:::pol-tls/old*",
        {"DateGreaterThan": {"aws:CurrentTime": "2001-01-01T00:00:00Z"}})))
    assert alice.get_object(Bucket="pol-tls", Key="k")["Body"].read() == b"k"
    url = alice.generate_presigned_url("get_object", Params={"Bucket": "pol-tls", "Key": "k"})
    r = requests.get(url, timeout=10)
    assert r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text
    alice.put_object(Bucket="pol-tls", Key="old", Body=b"o")
    assert code_of(alice.get_object, Bucket="pol-tls", Key="old") == "AccessDenied"


def test_service_and_canonical_principals(gw):
    """{"Service": ...} policies are accepted and stored, and match no identity (only the
    gateway's own log delivery, s3_service_permitted); {"CanonicalUser": ...} names an
    identity by its canonical id, SHA-256 of "weedfs-s3-canonical-user:<name>"."""
    import hashlib
    _, g = gw
    alice, bob = client(g, *ALICE), client(g, *BOB)
    alice.create_bucket(Bucket="pol-svc")
    alice.put_object(Bucket="pol-svc", Key="k", Body=b"k")
    doc = policy("pol-svc", stmt(
        "Allow", {"Service": "logging.s3.amazonaws.com"}, "s3:PutObject",
        "arn:aws:s3:::pol-svc/logs/*",
        {"ArnLike": {"aws:SourceArn": "arn:aws:s3:::pol-*"},
         "StringEquals": {"aws:SourceAccount": "000000000000"}}))
    alice.put_bucket_policy(Bucket="pol-svc", Policy=doc)
    assert json.loads(alice.get_bucket_policy(Bucket="pol-svc")["Policy"]) == json.loads(doc)
    assert alice.get_bucket_policy_status(Bucket="pol-svc")["PolicyStatus"]["IsPublic"] is False
    assert code_of(bob.put_object, Bucket="pol-svc", Key="logs/x", Body=b"") == "AccessDenied"
    assert anon(g, "PUT", "pol-svc/logs/x", data=b"x").status_code == 403
    bob_id = hashlib.sha256(b"weedfs-s3-canonical-user:bob").hexdigest()
    alice.put_bucket_policy(Bucket="pol-svc", Policy=policy("pol-svc", stmt(
        "Allow", {"CanonicalUser": bob_id}, "s3:GetObject", "arn:aws:s3:::pol-svc/*")))
    assert bob.get_object(Bucket="pol-svc", Key="k")["Body"].read() == b"k"
    assert anon(g, "GET", "pol-svc/k").status_code == 403
    # NotPrincipal: a Deny of everyone but alice
    alice.put_bucket_policy(Bucket="pol-svc", Policy=json.dumps({"Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "bob"}, "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::pol-svc/*"},
        {"Effect": "Deny", "NotPrincipal": {"AWS": "alice"}, "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::pol-svc/*"}]}))
    assert code_of(bob.get_object, Bucket="pol-svc", Key="k") == "AccessDenied"
    assert alice.get_object(Bucket="pol-svc", Key="k")["Body"].read() == b"k"


def test_malformed_principals_and_conditions_store_nothing(gw):
    _, g = gw
    alice = client(g, *ALICE)
    alice.create_bucket(Bucket="pol-bad")
    res = "arn:aws:s3:::pol-bad/*"
    for bad in (
            stmt("Allow", {"Service": "logging.example.com"}, "s3:PutObject", res),
            stmt("Allow", {"Service": []}, "s3:PutObject", res),
            stmt("Allow", {"CanonicalUser": "abc"}, "s3:GetObject", res),
            stmt("Allow", {"Federated": "cognito-identity.amazonaws.com"}, "s3:GetObject", res),
            stmt("Allow", {"Group": "x"}, "s3:GetObject", res),
            stmt("Allow", "*", "s3:GetObject", res,
                 {"DateLessThan": {"aws:CurrentTime": "tomorrow"}}),
            stmt("Allow", "*", "s3:GetObject", res,
                 {"NumericLessThan": {"s3:max-keys": "ten"}}),
            stmt("Allow", "*", "s3:GetObject", res,
                 {"ForEveryValue:StringEquals": {"s3:RequestObjectTagKeys": "a"}}),
            stmt("Allow", "*", "s3:GetObject", res,
                 {"ArnLike": {"aws:SourceArn": "bucket"}}),
            {"Effect": "Deny", "Principal": "*", "NotPrincipal": {"AWS": "alice"},
             "Action": "s3:GetObject", "Resource": res}):
        r = anon(g, "GET", "")  # keep the connection pool honest: nothing to see here
        assert r.status_code == 403
        assert code_of(alice.put_bucket_policy, Bucket="pol-bad",
                       Policy=policy("pol-bad", bad)) == "MalformedPolicy", bad
        assert code_of(alice.get_bucket_policy, Bucket="pol-bad") == "NoSuchBucketPolicy"
