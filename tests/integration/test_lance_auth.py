"""The Lance namespace API under identities (docs/catalog.md, "Lance", "Authorization"),
beside test_catalog_auth.py's tests and on its gateways (the `gw` fixture): who may make
a table bucket through a one-part namespace, and table and table-bucket resource
policies (S3 Tables PutTablePolicy / PutTableBucketPolicy through boto3) deciding a
Lance describe, its credential re-vend included, for one identity while another still
may. A policy put through one gateway holds on the other within the catalog's policy
cache time (about a second): the checks there wait for it."""
import pytest
import requests
from lance_namespace import (CreateNamespaceRequest, DeclareTableRequest,
                             DescribeTableRequest, NamespaceExistsRequest)
from lance_namespace.errors import NamespaceNotFoundError, PermissionDeniedError

from conftest import wait_until
from test_catalog_auth import gw, lance_ns, lance_post, policy, token, user  # noqa: F401
from test_s3tables import tables

ARN = "arn:aws:s3tables:us-east-1:000000000000:bucket/lnc"


def describe(g, tok, name, **body):
    """A raw Lance describe of lnc$p$<name> as tok's identity: (status, JSON)."""
    r = lance_post(g, "table/lnc%%24p%%24%s/describe" % name, body,
                   **{"Authorization": "Bearer " + tok})
    return r.status_code, r.json()


def refused(g, tok, name, **body):
    status, j = describe(g, tok, name, **body)
    return status == 403 and j["code"] == 15 and "policy denies" in j["error"]


@pytest.fixture(scope="module")
def lnc(gw):  # noqa: F811
    """alice's table bucket lnc (lena reads it by grant) with tables p$a and p$b; the
    tokens of alice, lena and bob."""
    g, _ = gw
    toks = {n: token(g, ak, sk).json()["access_token"] for n, ak, sk in (
        ("alice", "AKALICE", "alice-secret"), ("lena", "AKLENA", "lena-secret"),
        ("bob", "AKBOB", "bob-secret"))}
    alice = lance_ns(g, toks["alice"])
    alice.create_namespace(CreateNamespaceRequest(id=["lnc"]))
    alice.create_namespace(CreateNamespaceRequest(id=["lnc", "p"]))
    for name in ("a", "b"):
        alice.declare_table(DeclareTableRequest(id=["lnc", "p", name]))
    return toks


def test_one_part_namespace_needs_create_table_bucket(gw, lnc):  # noqa: F811
    """A one-part namespace is a table bucket: an identity without the grant to make
    one gets 403 PermissionDenied (code 15), and no bucket appears."""
    g, _ = gw
    for who in ("lena", "bob"):
        r = lance_post(g, "namespace/lnx/create", {}, **{"Authorization": "Bearer " + lnc[who]})
        assert r.status_code == 403 and r.json()["code"] == 15, r.text
        assert "CreateTableBucket" in r.json()["error"], r.text
    with pytest.raises(PermissionDeniedError):
        lance_ns(g, lnc["lena"]).create_namespace(CreateNamespaceRequest(id=["lnx"]))
    with pytest.raises(NamespaceNotFoundError):
        lance_ns(g, lnc["alice"]).namespace_exists(NamespaceExistsRequest(id=["lnx"]))
    names = [b["name"] for b in tables(g.catalog_port, "AKALICE", "alice-secret")
             .list_table_buckets()["tableBuckets"]]
    assert "lnx" not in names, names
    # and a namespace inside a bucket lena only reads is refused the same way
    r = lance_post(g, "namespace/lnc%24q/create", {}, **{"Authorization": "Bearer " + lnc["lena"]})
    assert r.status_code == 403 and r.json()["code"] == 15, r.text


def test_table_policy_deny(gw, lnc):  # noqa: F811
    """A Deny of table a's policy refuses lena's Lance describe of a (and its re-vend),
    not of b; alice still describes a. Removed, lena reads a again."""
    g, g2 = gw
    s3t = tables(g.catalog_port, "AKALICE", "alice-secret")
    assert describe(g, lnc["lena"], "a")[0] == 200
    s3t.put_table_policy(tableBucketARN=ARN, namespace="p", name="a", resourcePolicy=policy(
        {"Effect": "Deny", "Principal": user("lena"), "Action": "s3tables:GetTable",
         "Resource": ARN + "/table/*"}))
    try:
        assert refused(g, lnc["lena"], "a")
        assert refused(g, lnc["lena"], "a", vend_credentials=True)
        wait_until(lambda: refused(g2, lnc["lena"], "a"), timeout=5,
                   what="the other gateway sees it (its cache keeps a second)")
        with pytest.raises(PermissionDeniedError):
            lance_ns(g, lnc["lena"]).describe_table(DescribeTableRequest(id=["lnc", "p", "a"]))
        status, j = describe(g, lnc["lena"], "b", vend_credentials=True)
        assert status == 200 and j["storage_options"]["aws_session_token"], j
        status, j = describe(g, lnc["alice"], "a", vend_credentials=True)
        assert status == 200 and j["storage_options"]["aws_session_token"], j
    finally:
        s3t.delete_table_policy(tableBucketARN=ARN, namespace="p", name="a")
    assert describe(g, lnc["lena"], "a")[0] == 200
    wait_until(lambda: describe(g2, lnc["lena"], "a")[0] == 200, timeout=5,
               what="the other gateway sees the policy gone")


def test_bucket_policy(gw, lnc):  # noqa: F811
    """A bucket policy lets bob (no grants) describe lnc's tables and denies lena
    (whose grant would let her); alice is untouched. Removed, the grants alone again."""
    g, g2 = gw
    s3t = tables(g.catalog_port, "AKALICE", "alice-secret")
    assert describe(g, lnc["bob"], "b")[0] == 403
    s3t.put_table_bucket_policy(tableBucketARN=ARN, resourcePolicy=policy(
        {"Effect": "Allow", "Principal": user("bob"), "Action": "s3tables:GetTable",
         "Resource": ARN + "/table/*"},
        {"Effect": "Deny", "Principal": user("lena"), "Action": "s3tables:GetTable",
         "Resource": ARN + "/table/*"}))
    try:
        for gg in (g, g2):
            wait_until(lambda: describe(gg, lnc["bob"], "b")[0] == 200,
                       what="bob allowed by the bucket policy")
            wait_until(lambda: refused(gg, lnc["lena"], "b"),
                       what="lena denied by the bucket policy")
        assert refused(g, lnc["lena"], "a", vend_credentials=True)
        status, j = describe(g, lnc["bob"], "a", vend_credentials=True)
        assert status == 200 and j["storage_options"]["aws_session_token"], j
        assert describe(g, lnc["alice"], "b")[0] == 200
        # a table not there yet is asked about as the bucket (no table ARN to match);
        # made, it is the table at once: a missing entry is never kept
        assert describe(g, lnc["bob"], "c")[0] == 403
        lance_ns(g, lnc["alice"]).declare_table(DeclareTableRequest(id=["lnc", "p", "c"]))
        assert describe(g, lnc["bob"], "c")[0] == 200
        # the policy allows describing, nothing else
        r = lance_post(g, "table/lnc%24p%24b/drop", {}, **{"Authorization": "Bearer " + lnc["bob"]})
        assert r.status_code == 403 and r.json()["code"] == 15, r.text
    finally:
        s3t.delete_table_bucket_policy(tableBucketARN=ARN)
    for gg in (g, g2):
        wait_until(lambda: describe(gg, lnc["bob"], "b")[0] == 403, what="bob's grants alone")
        wait_until(lambda: describe(gg, lnc["lena"], "b")[0] == 200, what="lena's grants alone")
