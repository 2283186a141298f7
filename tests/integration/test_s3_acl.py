"""Bucket owners, ACLs, Object Ownership and the Public Access Block through the S3 gateway:
three identities of an identities file (alice an Admin, bob and carol with no grant at all,
bob with an e-mail), anonymous requests unsigned, every canned ACL's effect, grants by id,
e-mail and group, the ACL headers of put, copy and multipart, the three ownership rules,
the four Public Access Block settings, CreateBucket of an existing name, copy isolation
between identities, and bad bodies and headers refused with nothing changed."""

import json
import os
import subprocess

import boto3
import botocore
import pytest
import requests
from botocore.config import Config

from conftest import wait_until
from filer_fixtures import start_mini_with_filer
from s3_fixtures import client, code_of, start_gateway

IDS = {"identities": [
    {"name": "alice", "credentials": [{"accessKey": "AKALICE", "secretKey": "alice-secret"}],
     "actions": ["Admin"]},
    {"name": "bob", "email": "bob@example.com",
     "credentials": [{"accessKey": "AKBOB", "secretKey": "bob-secret"}]},
    {"name": "carol", "credentials": [{"accessKey": "AKCAROL", "secretKey": "carol-secret"}]},
]}
ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTH_USERS = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"


@pytest.fixture(scope="module")
def gw(module_cluster):
    _, filer = start_mini_with_filer(module_cluster)
    g = start_gateway(module_cluster, filer, IDS).start()
    return filer, g, module_cluster


def clients(g):
    return (client(g, "AKALICE", "alice-secret"), client(g, "AKBOB", "bob-secret"),
            client(g, "AKCAROL", "carol-secret"))


def anon(g):
    return boto3.client("s3", endpoint_url="http://%s" % g.url, region_name="us-east-1",
                        config=Config(signature_version=botocore.UNSIGNED,
                                      retries={"max_attempts": 1}))


def can(fn, **kw):
    """True when the call succeeds, False on AccessDenied (any other error raises)."""
    try:
        fn(**kw)
        return True
    except botocore.exceptions.ClientError as e:
        if e.response["Error"]["Code"] in ("AccessDenied", "403"):
            return False
        raise


def canonical(c, bucket):
    """The canonical id of c's identity: the owner of a bucket c owns."""
    return c.get_bucket_acl(Bucket=bucket)["Owner"]["ID"]


def grants(acl):
    out = set()
    for gr in acl["Grants"]:
        ge = gr["Grantee"]
        out.add((ge.get("DisplayName") or ge.get("URI"), gr["Permission"]))
    return out


def test_create_bucket_owners(gw):
    filer, g, cluster = gw
    alice, bob, carol = clients(g)
    # any identity makes buckets of its own, and has every right on them
    assert bob.create_bucket(Bucket="own-bob")["ResponseMetadata"]["HTTPStatusCode"] == 200
    bob.put_object(Bucket="own-bob", Key="k", Body=b"bob's")
    assert bob.get_object(Bucket="own-bob", Key="k")["Body"].read() == b"bob's"
    assert [o["Key"] for o in bob.list_objects_v2(Bucket="own-bob")["Contents"]] == ["k"]
    bob.put_object_tagging(Bucket="own-bob", Key="k", Tagging={"TagSet": []})
    bob.put_object(Bucket="own-bob", Key="d1", Body=b"1")
    assert [d["Key"] for d in bob.delete_objects(Bucket="own-bob", Delete={
        "Objects": [{"Key": "d1"}]})["Deleted"]] == ["d1"]
    bob.put_bucket_versioning(Bucket="own-bob", VersioningConfiguration={"Status": "Enabled"})
    assert bob.get_bucket_ownership_controls(Bucket="own-bob")["OwnershipControls"][
        "Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    # the same owner again in us-east-1: 200, with or without the constraint
    assert bob.create_bucket(Bucket="own-bob")["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert bob.create_bucket(Bucket="own-bob", CreateBucketConfiguration={
        "LocationConstraint": "us-east-1"})["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert bob.get_object(Bucket="own-bob", Key="k")["Body"].read() == b"bob's"
    # another identity, even an Admin, gets BucketAlreadyExists
    assert code_of(carol.create_bucket, Bucket="own-bob") == "BucketAlreadyExists"
    assert code_of(alice.create_bucket, Bucket="own-bob") == "BucketAlreadyExists"
    # carol has no grant on bob's bucket: nothing of it
    for fn, kw in ((carol.get_object, {"Key": "k"}), (carol.head_object, {"Key": "k"}),
                   (carol.put_object, {"Key": "c", "Body": b"x"}),
                   (carol.delete_object, {"Key": "k"}), (carol.list_objects_v2, {}),
                   (carol.get_bucket_acl, {}), (carol.delete_bucket, {})):
        assert not can(fn, Bucket="own-bob", **kw), fn
    # DeleteObjects answers each key: AccessDenied, the object kept
    r = carol.delete_objects(Bucket="own-bob", Delete={"Objects": [{"Key": "k"}]})
    assert [(e["Key"], e["Code"]) for e in r["Errors"]] == [("k", "AccessDenied")]
    assert not can(anon(g).get_object, Bucket="own-bob", Key="k")
    # each lists its own buckets; the Admin sees all
    assert "own-bob" in [b["Name"] for b in bob.list_buckets()["Buckets"]]
    assert "own-bob" not in [b["Name"] for b in carol.list_buckets()["Buckets"]]
    assert "own-bob" in [b["Name"] for b in alice.list_buckets()["Buckets"]]
    assert bob.list_buckets()["Owner"] == {"ID": canonical(bob, "own-bob"),
                                           "DisplayName": "bob"}
    # a bucket made through the filer has no owner: the Admin's create is 200, others' not
    assert filer.post("/buckets/own-filer/").status_code == 201
    assert alice.create_bucket(Bucket="own-filer")["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert code_of(bob.create_bucket, Bucket="own-filer") == "BucketAlreadyExists"
    # its ACL reads name the first Admin identity as owner; ACLs work on it (no rule set)
    assert alice.get_bucket_acl(Bucket="own-filer")["Owner"]["DisplayName"] == "alice"
    alice.put_bucket_acl(Bucket="own-filer", ACL="public-read")
    assert can(anon(g).list_objects_v2, Bucket="own-filer")
    assert not can(bob.delete_bucket, Bucket="own-filer")
    assert code_of(alice.get_bucket_ownership_controls,
                   Bucket="own-filer") == "OwnershipControlsNotFoundError"
    # anonymous requests make no bucket
    assert requests.put("http://%s/own-anon" % g.url, timeout=10).status_code == 403
    # in another region the same owner's create is BucketAlreadyOwnedByYou
    g2 = start_gateway(cluster, filer, IDS, extra=["-region=eu-west-1"]).start()
    bob2 = boto3.client("s3", endpoint_url="http://%s" % g2.url, aws_access_key_id="AKBOB",
                        aws_secret_access_key="bob-secret", region_name="eu-west-1",
                        config=Config(retries={"max_attempts": 1}))
    cfg = {"LocationConstraint": "eu-west-1"}
    assert code_of(bob2.create_bucket, Bucket="own-bob",
                   CreateBucketConfiguration=cfg) == "BucketAlreadyOwnedByYou"
    carol2 = boto3.client("s3", endpoint_url="http://%s" % g2.url,
                          aws_access_key_id="AKCAROL", aws_secret_access_key="carol-secret",
                          region_name="eu-west-1", config=Config(retries={"max_attempts": 1}))
    assert code_of(carol2.create_bucket, Bucket="own-bob",
                   CreateBucketConfiguration=cfg) == "BucketAlreadyExists"


def writer_bucket(bob, name):
    """A bucket of bob's with ACLs enabled (ObjectWriter)."""
    bob.create_bucket(Bucket=name, ObjectOwnership="ObjectWriter")
    return name


def test_canned_object_acls(gw):
    _, g, _ = gw
    alice, bob, carol = clients(g)
    b = writer_bucket(bob, "canned-obj")
    want = {  # canned ACL: (anonymous may read, carol may read)
        "private": (False, False),
        "public-read": (True, True),
        "public-read-write": (True, True),
        "authenticated-read": (False, True),
        "bucket-owner-read": (False, False),
        "bucket-owner-full-control": (False, False),
    }
    for acl, (a, c) in want.items():
        bob.put_object(Bucket=b, Key=acl, Body=acl.encode(), ACL=acl)
        assert can(anon(g).get_object, Bucket=b, Key=acl) == a, acl
        assert can(carol.get_object, Bucket=b, Key=acl) == c, acl
        assert can(bob.get_object, Bucket=b, Key=acl), acl
    r = requests.get("http://%s/%s/public-read" % (g.url, b), timeout=10)
    assert r.status_code == 200 and r.content == b"public-read"
    # an object's ACL gives no right on its neighbours nor to change it
    assert not can(anon(g).list_objects_v2, Bucket=b)
    assert not can(carol.put_object_acl, Bucket=b, Key="public-read", ACL="private")
    assert not can(carol.delete_object, Bucket=b, Key="public-read")
    got = bob.get_object_acl(Bucket=b, Key="public-read")
    assert got["Owner"]["DisplayName"] == "bob"
    assert grants(got) == {("bob", "FULL_CONTROL"), (ALL_USERS, "READ")}
    # PutObjectAcl changes it: private again
    bob.put_object_acl(Bucket=b, Key="public-read", ACL="private")
    assert not can(anon(g).get_object, Bucket=b, Key="public-read")
    assert grants(bob.get_object_acl(Bucket=b, Key="public-read")) == {("bob", "FULL_CONTROL")}


def test_canned_bucket_acls(gw):
    _, g, _ = gw
    _, bob, carol = clients(g)
    b = writer_bucket(bob, "canned-bkt")
    bob.put_object(Bucket=b, Key="k", Body=b"v")
    for acl, lst, write in (("private", (False, False), False),
                            ("public-read", (True, True), False),
                            ("public-read-write", (True, True), True),
                            ("authenticated-read", (False, True), False),
                            ("log-delivery-write", (False, False), False)):
        bob.put_bucket_acl(Bucket=b, ACL=acl)
        assert can(anon(g).list_objects_v2, Bucket=b) == lst[0], acl
        assert can(carol.list_objects_v2, Bucket=b) == lst[1], acl
        assert can(anon(g).put_object, Bucket=b, Key="anon", Body=b"a") == write, acl
        # a bucket's ACL never opens its objects: bob's object stays his
        assert not can(carol.get_object, Bucket=b, Key="k"), acl
    # a bucket carol has a grant on is listed for her
    bob.put_bucket_acl(Bucket=b, ACL="authenticated-read")
    assert b in [x["Name"] for x in carol.list_buckets()["Buckets"]]
    bob.put_bucket_acl(Bucket=b, ACL="private")
    assert b not in [x["Name"] for x in carol.list_buckets()["Buckets"]]
    assert code_of(bob.put_bucket_acl, Bucket=b, ACL="bucket-owner-everything") in (
        "InvalidArgument",)


def test_grants_by_id_email_group(gw):
    _, g, _ = gw
    alice, bob, carol = clients(g)
    carol.create_bucket(Bucket="carol-own")
    carol_id, bob_id = canonical(carol, "carol-own"), canonical(bob, writer_bucket(bob, "grants"))
    assert len(carol_id) == 64 and carol_id != bob_id
    bob.put_object(Bucket="grants", Key="k", Body=b"v")
    owner = {"ID": bob_id}
    bob.put_bucket_acl(Bucket="grants", AccessControlPolicy={"Owner": owner, "Grants": [
        {"Grantee": {"Type": "CanonicalUser", "ID": bob_id}, "Permission": "FULL_CONTROL"},
        {"Grantee": {"Type": "CanonicalUser", "ID": carol_id}, "Permission": "WRITE"},
        {"Grantee": {"Type": "Group", "URI": AUTH_USERS}, "Permission": "READ"}]})
    assert grants(bob.get_bucket_acl(Bucket="grants")) == {
        ("bob", "FULL_CONTROL"), ("carol", "WRITE"), (AUTH_USERS, "READ")}
    assert can(carol.put_object, Bucket="grants", Key="from-carol", Body=b"c")
    assert can(carol.list_objects_v2, Bucket="grants")
    assert not can(anon(g).list_objects_v2, Bucket="grants")
    assert not can(carol.get_bucket_acl, Bucket="grants")
    # by e-mail: bob's address from the identities file; READ_ACP lets carol read the ACL
    carol.put_object(Bucket="carol-own", Key="c", Body=b"c")
    carol.put_bucket_ownership_controls(Bucket="carol-own", OwnershipControls={
        "Rules": [{"ObjectOwnership": "ObjectWriter"}]})
    carol.put_object_acl(Bucket="carol-own", Key="c", AccessControlPolicy={
        "Owner": {"ID": carol_id}, "Grants": [
            {"Grantee": {"Type": "AmazonCustomerByEmail", "EmailAddress": "bob@example.com"},
             "Permission": "READ"},
            {"Grantee": {"Type": "AmazonCustomerByEmail", "EmailAddress": "bob@example.com"},
             "Permission": "READ_ACP"}]})
    assert bob.get_object(Bucket="carol-own", Key="c")["Body"].read() == b"c"
    assert grants(bob.get_object_acl(Bucket="carol-own", Key="c")) == {
        ("bob", "READ"), ("bob", "READ_ACP")}
    assert not can(bob.put_object_acl, Bucket="carol-own", Key="c", ACL="public-read")
    # grants by group URI in the x-amz-grant-* headers
    carol.put_object_acl(Bucket="carol-own", Key="c", GrantRead='uri="%s"' % ALL_USERS)
    assert anon(g).get_object(Bucket="carol-own", Key="c")["Body"].read() == b"c"
    assert not can(bob.get_object_acl, Bucket="carol-own", Key="c")


def test_acl_headers_on_put_copy_multipart(gw):
    _, g, _ = gw
    _, bob, carol = clients(g)
    b = writer_bucket(bob, "hdrs")
    carol.create_bucket(Bucket="hdrs-carol")
    carol_id = canonical(carol, "hdrs-carol")
    bob.put_object(Bucket=b, Key="granted", Body=b"g", GrantRead='id="%s"' % carol_id)
    assert carol.get_object(Bucket=b, Key="granted")["Body"].read() == b"g"
    assert not can(anon(g).get_object, Bucket=b, Key="granted")
    bob.put_object(Bucket=b, Key="full", Body=b"f", GrantFullControl='id="%s"' % carol_id)
    assert grants(carol.get_object_acl(Bucket=b, Key="full")) == {("carol", "FULL_CONTROL")}
    # a copy takes the ACL of its own headers, never the source's
    bob.copy_object(Bucket=b, Key="copy-pub", CopySource={"Bucket": b, "Key": "granted"},
                    ACL="public-read")
    assert anon(g).get_object(Bucket=b, Key="copy-pub")["Body"].read() == b"g"
    bob.copy_object(Bucket=b, Key="copy-priv", CopySource={"Bucket": b, "Key": "copy-pub"})
    assert not can(anon(g).get_object, Bucket=b, Key="copy-priv")
    # multipart: the ACL of CreateMultipartUpload holds once complete
    up = bob.create_multipart_upload(Bucket=b, Key="mp", ACL="public-read")["UploadId"]
    etag = bob.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=1,
                           Body=b"m" * 1024)["ETag"]
    bob.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert anon(g).get_object(Bucket=b, Key="mp")["Body"].read() == b"m" * 1024
    # the headers' errors: S3's codes, nothing stored
    assert code_of(bob.put_object, Bucket=b, Key="bad", Body=b"x", ACL="everyone") == \
        "InvalidArgument"
    assert code_of(bob.put_object, Bucket=b, Key="bad", Body=b"x", ACL="public-read",
                   GrantRead='uri="%s"' % ALL_USERS) == "InvalidRequest"
    assert code_of(bob.put_object, Bucket=b, Key="bad", Body=b"x",
                   GrantRead='id="%s"' % ("0" * 64)) == "InvalidArgument"
    assert code_of(bob.put_object, Bucket=b, Key="bad", Body=b"x",
                   GrantRead='emailAddress="nobody@example.com"') == \
        "UnresolvableGrantByEmailAddress"
    assert code_of(bob.put_object, Bucket=b, Key="bad", Body=b"x",
                   GrantRead='uri="http://example.com/group"') == "InvalidArgument"
    assert code_of(bob.head_object, Bucket=b, Key="bad") == "404"


def test_bad_acl_bodies_change_nothing(gw):
    _, g, _ = gw
    _, bob, _ = clients(g)
    b = writer_bucket(bob, "bad-acl")
    bob.put_object(Bucket=b, Key="k", Body=b"v", ACL="public-read")
    before_b, before_o = bob.get_bucket_acl(Bucket=b), bob.get_object_acl(Bucket=b, Key="k")
    creds = botocore.credentials.Credentials("AKBOB", "bob-secret")

    def put(path, body, headers=None):
        req = botocore.awsrequest.AWSRequest(method="PUT", url="http://%s/%s" % (g.url, path),
                                             data=body, headers=headers or {})
        botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
        return requests.put(req.url, data=body, headers=dict(req.headers), timeout=10)

    policy = (b'<AccessControlPolicy><Owner><ID>x</ID></Owner><AccessControlList><Grant>'
              b'<Grantee><URI>%s</URI></Grantee><Permission>%s</Permission></Grant>'
              b'</AccessControlList></AccessControlPolicy>')
    for path in ("%s?acl" % b, "%s/k?acl" % b):
        for body, headers, code in (
                (b"<AccessControlPolicy><Owner>", None, "MalformedACLError"),
                (b"<Tagging/>", None, "MalformedACLError"),
                (policy % (ALL_USERS.encode(), b"FLY"), None, "MalformedACLError"),
                (policy % (b"http://x/y", b"READ"), None, "InvalidArgument"),
                (policy % (ALL_USERS.encode(), b"READ"), {"x-amz-acl": "private"},
                 "UnexpectedContent"),
                (b"", {"x-amz-acl": "nope"}, "InvalidArgument"),
                (b"", {"x-amz-acl": "private", "x-amz-grant-read": 'uri="%s"' % ALL_USERS},
                 "InvalidRequest")):
            r = put(path, body, headers)
            assert r.status_code == 400 and "<Code>%s</Code>" % code in r.text, (path, r.text)
    assert bob.get_bucket_acl(Bucket=b)["Grants"] == before_b["Grants"]
    assert bob.get_object_acl(Bucket=b, Key="k")["Grants"] == before_o["Grants"]
    assert code_of(bob.get_object_acl, Bucket=b, Key="missing") == "NoSuchKey"
    # one with no right on them hears AccessDenied, whatever its headers
    _, _, carol = clients(g)
    assert code_of(carol.put_object_acl, Bucket=b, Key="k", ACL="nope") == "AccessDenied"
    assert code_of(carol.put_bucket_acl, Bucket=b, ACL="nope") == "AccessDenied"
    assert code_of(carol.put_object, Bucket=b, Key="c", Body=b"c", ACL="nope") == \
        "AccessDenied"


def test_object_ownership(gw):
    _, g, _ = gw
    _, bob, carol = clients(g)
    # BucketOwnerEnforced (the default): ACLs refused except the owner's full control
    bob.create_bucket(Bucket="enf")
    assert code_of(bob.put_object, Bucket="enf", Key="k", Body=b"x", ACL="public-read") == \
        "AccessControlListNotSupported"
    bob.put_object(Bucket="enf", Key="k", Body=b"x", ACL="bucket-owner-full-control")
    assert code_of(bob.put_bucket_acl, Bucket="enf", ACL="public-read") == \
        "AccessControlListNotSupported"
    assert code_of(bob.put_object_acl, Bucket="enf", Key="k", ACL="public-read") == \
        "AccessControlListNotSupported"
    bob.put_bucket_acl(Bucket="enf", ACL="private")
    assert grants(bob.get_bucket_acl(Bucket="enf")) == {("bob", "FULL_CONTROL")}
    assert grants(bob.get_object_acl(Bucket="enf", Key="k")) == {("bob", "FULL_CONTROL")}
    assert code_of(bob.create_bucket, Bucket="enf-acl", ACL="public-read") == \
        "InvalidBucketAclWithObjectOwnership"
    assert "enf-acl" not in [x["Name"] for x in bob.list_buckets()["Buckets"]]
    assert code_of(bob.create_bucket, Bucket="enf-bad", ObjectOwnership="Nobody") == \
        "InvalidArgument"
    # with ACLs enabled, CreateBucket's ACL headers hold
    bob.create_bucket(Bucket="made-public", ACL="public-read", ObjectOwnership="ObjectWriter")
    assert can(anon(g).list_objects_v2, Bucket="made-public")
    carol.create_bucket(Bucket="made-carol")
    bob.create_bucket(Bucket="made-granted", ObjectOwnership="BucketOwnerPreferred",
                      GrantWrite='id="%s"' % canonical(carol, "made-carol"))
    assert can(carol.put_object, Bucket="made-granted", Key="c", Body=b"c")
    assert not can(carol.list_objects_v2, Bucket="made-granted")
    assert code_of(bob.create_bucket, Bucket="made-bad", ObjectOwnership="ObjectWriter",
                   GrantRead='id="nobody"') == "InvalidArgument"
    assert "made-bad" not in [x["Name"] for x in bob.list_buckets()["Buckets"]]
    # ObjectWriter: a writer bob's bucket ACL lets in owns what it writes and reads it back
    b = writer_bucket(bob, "ow-bkt")
    carol.create_bucket(Bucket="ow-carol")
    carol_id = canonical(carol, "ow-carol")
    bob.put_bucket_acl(Bucket=b, GrantWrite='id="%s"' % carol_id,
                       GrantFullControl='id="%s"' % canonical(bob, b))
    carol.put_object(Bucket=b, Key="carols", Body=b"c")
    assert carol.get_object(Bucket=b, Key="carols")["Body"].read() == b"c"
    assert carol.get_object_acl(Bucket=b, Key="carols")["Owner"]["DisplayName"] == "carol"
    assert bob.get_object(Bucket=b, Key="carols")["Body"].read() == b"c"  # see the docs
    # BucketOwnerPreferred: with bucket-owner-full-control the bucket's owner owns it
    bob.put_bucket_ownership_controls(Bucket=b, OwnershipControls={
        "Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]})
    assert bob.get_bucket_ownership_controls(Bucket=b)["OwnershipControls"]["Rules"] == [
        {"ObjectOwnership": "BucketOwnerPreferred"}]
    carol.put_object(Bucket=b, Key="given", Body=b"g", ACL="bucket-owner-full-control")
    assert bob.get_object_acl(Bucket=b, Key="given")["Owner"]["DisplayName"] == "bob"
    assert not can(carol.get_object, Bucket=b, Key="given")
    carol.put_object(Bucket=b, Key="kept", Body=b"k")
    assert carol.get_object_acl(Bucket=b, Key="kept")["Owner"]["DisplayName"] == "carol"
    # BucketOwnerEnforced refused while the bucket ACL grants others; accepted once private
    enforce = {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    assert code_of(bob.put_bucket_ownership_controls, Bucket=b,
                   OwnershipControls=enforce) == "InvalidBucketAclWithObjectOwnership"
    bob.put_bucket_acl(Bucket=b, ACL="private")
    bob.put_bucket_ownership_controls(Bucket=b, OwnershipControls=enforce)
    assert not can(carol.get_object, Bucket=b, Key="carols")  # ACLs no longer count
    assert bob.get_object(Bucket=b, Key="carols")["Body"].read() == b"c"
    # delete, then get: not found; a malformed rule: MalformedXML, nothing changed
    bob.delete_bucket_ownership_controls(Bucket=b)
    assert code_of(bob.get_bucket_ownership_controls,
                   Bucket=b) == "OwnershipControlsNotFoundError"
    assert code_of(bob.put_bucket_ownership_controls, Bucket=b, OwnershipControls={
        "Rules": [{"ObjectOwnership": "Whoever"}]}) == "MalformedXML"
    assert code_of(bob.get_bucket_ownership_controls,
                   Bucket=b) == "OwnershipControlsNotFoundError"
    assert not can(carol.put_bucket_ownership_controls, Bucket=b, OwnershipControls=enforce)


def test_public_access_block(gw):
    _, g, _ = gw
    _, bob, carol = clients(g)
    b = writer_bucket(bob, "pab")
    bob.put_object(Bucket=b, Key="pub", Body=b"p", ACL="public-read")
    assert code_of(bob.get_public_access_block, Bucket=b) == \
        "NoSuchPublicAccessBlockConfiguration"

    def pab(**flags):
        conf = {k: flags.get(k, False) for k in ("BlockPublicAcls", "IgnorePublicAcls",
                                                 "BlockPublicPolicy", "RestrictPublicBuckets")}
        bob.put_public_access_block(Bucket=b, PublicAccessBlockConfiguration=conf)
        assert bob.get_public_access_block(Bucket=b)[
            "PublicAccessBlockConfiguration"] == conf

    # BlockPublicAcls: no public ACL may be set, by header or call; private ones still can
    pab(BlockPublicAcls=True)
    assert code_of(bob.put_object, Bucket=b, Key="p2", Body=b"x",
                   ACL="public-read") == "AccessDenied"
    assert code_of(bob.put_object_acl, Bucket=b, Key="pub", ACL="authenticated-read") == \
        "AccessDenied"
    assert code_of(bob.put_bucket_acl, Bucket=b, ACL="public-read") == "AccessDenied"
    bob.put_object(Bucket=b, Key="p3", Body=b"x", ACL="private")
    assert anon(g).get_object(Bucket=b, Key="pub")["Body"].read() == b"p"  # set before
    # IgnorePublicAcls: the public grants stop counting
    pab(IgnorePublicAcls=True)
    assert not can(anon(g).get_object, Bucket=b, Key="pub")
    assert not can(carol.get_object, Bucket=b, Key="pub")
    # BlockPublicPolicy: a public policy is refused, a narrow one is not
    public = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::pab/*"}]})
    pab(BlockPublicPolicy=True)
    assert code_of(bob.put_bucket_policy, Bucket=b, Policy=public) == "AccessDenied"
    assert code_of(bob.get_bucket_policy, Bucket=b) == "NoSuchBucketPolicy"
    # RestrictPublicBuckets: a public policy admits the gateway's identities only
    pab()
    bob.put_bucket_policy(Bucket=b, Policy=public)
    bob.put_object(Bucket=b, Key="priv", Body=b"s")
    assert anon(g).get_object(Bucket=b, Key="priv")["Body"].read() == b"s"
    pab(RestrictPublicBuckets=True)
    assert not can(anon(g).get_object, Bucket=b, Key="priv")
    assert carol.get_object(Bucket=b, Key="priv")["Body"].read() == b"s"
    # malformed: MalformedXML, the stored one kept; others may not change it; delete
    creds = botocore.credentials.Credentials("AKBOB", "bob-secret")
    body = b"<PublicAccessBlockConfiguration><BlockPublicAcls>maybe</BlockPublicAcls>" \
           b"</PublicAccessBlockConfiguration>"
    req = botocore.awsrequest.AWSRequest(
        method="PUT", url="http://%s/%s?publicAccessBlock" % (g.url, b), data=body)
    botocore.auth.S3SigV4Auth(creds, "s3", "us-east-1").add_auth(req)
    r = requests.put(req.url, data=body, headers=dict(req.headers), timeout=10)
    assert r.status_code == 400 and "<Code>MalformedXML</Code>" in r.text, r.text
    assert bob.get_public_access_block(Bucket=b)["PublicAccessBlockConfiguration"][
        "RestrictPublicBuckets"] is True
    assert not can(carol.delete_public_access_block, Bucket=b)
    bob.delete_public_access_block(Bucket=b)
    assert code_of(bob.get_public_access_block, Bucket=b) == \
        "NoSuchPublicAccessBlockConfiguration"
    assert anon(g).get_object(Bucket=b, Key="priv")["Body"].read() == b"s"


def test_copy_checks_read_on_the_source(gw):
    """An identity with no grant on another identity's bucket cannot copy out of it, by
    CopyObject or UploadPartCopy; a READ grant on the object lets it."""
    _, g, _ = gw
    _, bob, carol = clients(g)
    b = writer_bucket(bob, "copy-src")
    bob.put_object(Bucket=b, Key="secret", Body=b"s" * 100)
    carol.create_bucket(Bucket="copy-dst")
    src = {"Bucket": b, "Key": "secret"}
    assert code_of(carol.copy_object, Bucket="copy-dst", Key="x", CopySource=src) == \
        "AccessDenied"
    up = carol.create_multipart_upload(Bucket="copy-dst", Key="mp")["UploadId"]
    assert code_of(carol.upload_part_copy, Bucket="copy-dst", Key="mp", UploadId=up,
                   PartNumber=1, CopySource=src) == "AccessDenied"
    assert code_of(carol.head_object, Bucket="copy-dst", Key="x") == "404"
    # nor into a bucket she may not write, from her own
    carol.put_object(Bucket="copy-dst", Key="mine", Body=b"m")
    assert code_of(carol.copy_object, Bucket=b, Key="in",
                   CopySource={"Bucket": "copy-dst", "Key": "mine"}) == "AccessDenied"
    bob.put_object_acl(Bucket=b, Key="secret", GrantRead='id="%s"' % canonical(carol,
                                                                               "copy-dst"))
    carol.copy_object(Bucket="copy-dst", Key="x", CopySource=src)
    assert carol.get_object(Bucket="copy-dst", Key="x")["Body"].read() == b"s" * 100


def test_awscli_acls(gw, tmp_path):
    _, g, _ = gw
    _, bob, _ = clients(g)
    env = dict(os.environ, AWS_ACCESS_KEY_ID="AKBOB", AWS_SECRET_ACCESS_KEY="bob-secret",
               AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=str(tmp_path / "none"),
               AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"))

    def aws(*args):
        p = subprocess.run(["aws", "--endpoint-url", "http://%s" % g.url, "s3api"] + list(args),
                           env=env, capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr

    b = writer_bucket(bob, "cli-acl")
    bob.put_object(Bucket=b, Key="k", Body=b"v")
    assert aws("put-bucket-acl", "--bucket", b, "--acl", "public-read")[0] == 0
    assert can(anon(g).list_objects_v2, Bucket=b)
    assert aws("put-object-acl", "--bucket", b, "--key", "k",
               "--grant-read", 'uri="%s"' % ALL_USERS)[0] == 0
    rc, out = aws("get-object-acl", "--bucket", b, "--key", "k")
    assert rc == 0, out
    assert {(gr["Grantee"].get("URI"), gr["Permission"])
            for gr in json.loads(out)["Grants"]} == {(ALL_USERS, "READ")}
    rc, out = aws("get-bucket-acl", "--bucket", b)
    assert rc == 0 and json.loads(out)["Owner"]["DisplayName"] == "bob", out
    rc, out = aws("put-bucket-acl", "--bucket", b, "--acl", "no-such-acl")
    assert rc != 0


def test_version_acls(gw):
    _, g, _ = gw
    _, bob, _ = clients(g)
    b = writer_bucket(bob, "ver-acl")
    bob.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
    v1 = bob.put_object(Bucket=b, Key="k", Body=b"one", ACL="public-read")["VersionId"]
    v2 = bob.put_object(Bucket=b, Key="k", Body=b"two")["VersionId"]
    # each version keeps its own ACL
    assert (ALL_USERS, "READ") in grants(bob.get_object_acl(Bucket=b, Key="k", VersionId=v1))
    assert grants(bob.get_object_acl(Bucket=b, Key="k", VersionId=v2)) == {
        ("bob", "FULL_CONTROL")}
    assert anon(g).get_object(Bucket=b, Key="k", VersionId=v1)["Body"].read() == b"one"
    assert not can(anon(g).get_object, Bucket=b, Key="k")
    bob.put_object_acl(Bucket=b, Key="k", VersionId=v1, ACL="private")
    assert not can(anon(g).get_object, Bucket=b, Key="k", VersionId=v1)
    bob.put_object_acl(Bucket=b, Key="k", VersionId=v2, ACL="public-read")
    assert anon(g).get_object(Bucket=b, Key="k")["Body"].read() == b"two"


def test_inline_deny_stops_create_bucket(gw):
    """An IAM API user may make a bucket of its own, unless its inline policy denies it;
    its canonical id resolves in grants like the file's identities'."""
    _, g, _ = gw
    alice, bob, _ = clients(g)
    c = boto3.client("iam", endpoint_url="http://127.0.0.1:%d" % g.iam_port,
                     region_name="us-east-1", aws_access_key_id="AKALICE",
                     aws_secret_access_key="alice-secret",
                     config=Config(retries={"max_attempts": 1}))
    c.create_user(UserName="dave")
    k = c.create_access_key(UserName="dave")["AccessKey"]
    dave = client(g, k["AccessKeyId"], k["SecretAccessKey"])
    wait_until(lambda: can(dave.list_buckets), 5, "the gateway takes dave's key")
    dave.create_bucket(Bucket="dave-own")
    dave.put_object(Bucket="dave-own", Key="k", Body=b"d")
    b = writer_bucket(bob, "for-dave")
    bob.put_object(Bucket=b, Key="k", Body=b"b",
                   GrantRead='id="%s"' % canonical(dave, "dave-own"))
    assert dave.get_object(Bucket=b, Key="k")["Body"].read() == b"b"
    c.put_user_policy(UserName="dave", PolicyName="no-buckets", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Deny", "Action": "s3:CreateBucket", "Resource": "*"}]}))
    wait_until(lambda: not can(dave.create_bucket, Bucket="dave-two"), 5,
               "the Deny reaches the gateway")
    assert "dave-two" not in [x["Name"] for x in alice.list_buckets()["Buckets"]]


def test_post_form_acl(gw):
    """A browser POST form's acl field sets the object's canned ACL, under the bucket's
    rules: refused in a BucketOwnerEnforced bucket, nothing stored."""
    _, g, _ = gw
    _, bob, _ = clients(g)
    b = writer_bucket(bob, "post-acl")
    bob.create_bucket(Bucket="post-enf")

    def post(bucket, key, acl):
        form = bob.generate_presigned_post(bucket, key, Fields={"acl": acl},
                                           Conditions=[{"acl": acl}], ExpiresIn=300)
        return requests.post(form["url"], data=form["fields"], files={"file": b"form"},
                             timeout=30)

    assert post(b, "pub", "public-read").status_code == 204
    assert anon(g).get_object(Bucket=b, Key="pub")["Body"].read() == b"form"
    assert bob.get_object_acl(Bucket=b, Key="pub")["Owner"]["DisplayName"] == "bob"
    assert post(b, "priv", "private").status_code == 204
    assert not can(anon(g).get_object, Bucket=b, Key="priv")
    r = post("post-enf", "pub", "public-read")
    assert r.status_code == 400 and "AccessControlListNotSupported" in r.text, r.text
    r = post(b, "bad", "everyone")
    assert r.status_code == 400 and "InvalidArgument" in r.text, r.text
    for bucket, key in (("post-enf", "pub"), (b, "bad")):
        assert code_of(bob.head_object, Bucket=bucket, Key=key) == "404"


def test_post_form_grants(gw):
    """A browser POST form's x-amz-grant-* fields grant as PutObject's headers do; refused
    with AccessControlListNotSupported where Object Ownership disables ACLs, and with the
    headers' errors when malformed or beside an acl field, nothing stored."""
    _, g, _ = gw
    _, bob, carol = clients(g)
    b = writer_bucket(bob, "post-grants")
    bob.create_bucket(Bucket="post-grants-enf")
    carol.create_bucket(Bucket="carol-id-src")
    carol_id = canonical(carol, "carol-id-src")

    def post(bucket, key, fields):
        form = bob.generate_presigned_post(bucket, key, Fields=fields,
                                           Conditions=[{k: v} for k, v in fields.items()],
                                           ExpiresIn=300)
        return requests.post(form["url"], data=form["fields"], files={"file": b"granted"},
                             timeout=30)

    r = post(b, "all", {"x-amz-grant-read": 'uri="%s"' % ALL_USERS})
    assert r.status_code == 204, r.text
    assert anon(g).get_object(Bucket=b, Key="all")["Body"].read() == b"granted"
    acl = bob.get_object_acl(Bucket=b, Key="all")
    assert acl["Owner"]["DisplayName"] == "bob"
    assert grants(acl) == {(ALL_USERS, "READ")}
    fields = {"x-amz-grant-read-acp": 'id="%s"' % carol_id,
              "x-amz-grant-write-acp": 'id="%s"' % carol_id}
    assert post(b, "acp", fields).status_code == 204
    assert grants(carol.get_object_acl(Bucket=b, Key="acp")) == {
        ("carol", "READ_ACP"), ("carol", "WRITE_ACP")}
    assert not can(carol.get_object, Bucket=b, Key="acp")
    assert post(b, "full", {"x-amz-grant-full-control": 'id="%s"' % carol_id,
                            "x-amz-grant-write": 'id="%s"' % carol_id}).status_code == 204
    assert carol.get_object(Bucket=b, Key="full")["Body"].read() == b"granted"
    assert grants(carol.get_object_acl(Bucket=b, Key="full")) == {
        ("carol", "FULL_CONTROL"), ("carol", "WRITE")}
    refused = (
        ("post-grants-enf", {"x-amz-grant-read": 'uri="%s"' % ALL_USERS},
         "AccessControlListNotSupported"),
        (b, {"x-amz-grant-read": 'uri="%s"' % ALL_USERS, "acl": "private"}, "InvalidRequest"),
        (b, {"x-amz-grant-read": "nonsense"}, "InvalidArgument"),
        (b, {"x-amz-grant-read": 'emailAddress="nobody@example.com"'},
         "UnresolvableGrantByEmailAddress"),
    )
    for i, (bucket, fields, code) in enumerate(refused):
        r = post(bucket, "refused-%d" % i, fields)
        assert r.status_code == 400 and code in r.text, r.text
        assert code_of(bob.head_object, Bucket=bucket, Key="refused-%d" % i) == "404"


def test_owner_under_a_deny(gw):
    """A policy's Deny wins over ownership, and the owner can still undo the policy."""
    _, g, _ = gw
    _, bob, _ = clients(g)
    bob.create_bucket(Bucket="deny-own")
    bob.put_object(Bucket="deny-own", Key="k", Body=b"v")
    bob.put_bucket_policy(Bucket="deny-own", Policy=json.dumps({
        "Version": "2012-10-17", "Statement": [{
            "Effect": "Deny", "Principal": "*", "Action": "s3:*",
            "Resource": ["arn:aws:s3:::deny-own", "arn:aws:s3:::deny-own/*"]}]}))
    assert not can(bob.get_object, Bucket="deny-own", Key="k")
    assert not can(bob.put_object, Bucket="deny-own", Key="k2", Body=b"x")
    assert not can(bob.get_bucket_acl, Bucket="deny-own")
    bob.delete_bucket_policy(Bucket="deny-own")
    assert bob.get_object(Bucket="deny-own", Key="k")["Body"].read() == b"v"
