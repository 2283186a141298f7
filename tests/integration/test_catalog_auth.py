"""Who may use the catalogs (docs/catalog.md, "Authentication"): with identities
configured, OAuth2 client credentials at /v1/oauth/tokens (a bearer token any gateway of the
cluster verifies; Lance clients may send it as x-api-key) or SigV4-signed requests; each
identity limited by its grants and by the table bucket's and the table's resource policies,
on the S3 Tables, Iceberg REST and Lance namespace APIs; credentials vended to each."""
import base64
import hashlib
import hmac
import json
import random
import struct
import time

import boto3
import botocore
from botocore.config import Config
import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError, UnauthorizedError, OAuthError

from conftest import wait_until
from filer_fixtures import start_mini_with_filer
from s3_fixtures import start_gateway
from catalog_clients import duckdb_connect
from test_s3tables import port_open, tables

IDS = {"identities": [
    {"name": "alice", "credentials": [{"accessKey": "AKALICE", "secretKey": "alice-secret"}],
     "actions": ["Admin"]},
    {"name": "rita", "credentials": [{"accessKey": "AKRITA", "secretKey": "rita-secret"}],
     "actions": ["Read:whs", "List:whs"]},
    {"name": "bob", "credentials": [{"accessKey": "AKBOB", "secretKey": "bob-secret"}],
     "actions": []},
    {"name": "lena", "credentials": [{"accessKey": "AKLENA", "secretKey": "lena-secret"}],
     "actions": ["Read:lnc", "List:lnc"]},
]}
ARN = "arn:aws:s3tables:us-east-1:000000000000:bucket/whs"


@pytest.fixture(scope="module")
def gw(module_cluster):
    _, filer = start_mini_with_filer(module_cluster)
    g = start_gateway(module_cluster, filer, IDS).start()
    wait_until(lambda: port_open(g.catalog_port), what="the catalog listens")
    tables(g.catalog_port, "AKALICE", "alice-secret").create_table_bucket(name="whs")
    # a second gateway of the same cluster: tokens and sessions hold there too
    g2 = start_gateway(module_cluster, filer, IDS).start()
    wait_until(lambda: port_open(g2.catalog_port), what="the second catalog listens")
    g.filer_client = filer  # for the cluster keys the expiry tests mint with
    return g, g2


def uri(g):
    return "http://127.0.0.1:%d" % g.catalog_port


def catalog(g, **props):
    return RestCatalog("w", uri=uri(g), warehouse="whs", **props)


def token(g, ak, sk):
    r = requests.post(uri(g) + "/v1/oauth/tokens", timeout=10,
                      data={"grant_type": "client_credentials", "client_id": ak,
                            "client_secret": sk})
    return r


def test_oauth_tokens(gw):
    g, g2 = gw
    r = token(g, "AKALICE", "alice-secret")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"] == "bearer" and body["expires_in"] == 3600
    tok = body["access_token"]
    # any gateway of the cluster takes it
    for gg in (g, g2):
        r = requests.get(uri(gg) + "/v1/config?warehouse=whs", timeout=10,
                         headers={"Authorization": "Bearer " + tok})
        assert r.status_code == 200 and r.json()["overrides"]["prefix"] == "whs"
    assert token(g, "AKALICE", "wrong").status_code == 401
    assert token(g, "AKALICE", "wrong").json()["error"] == "invalid_client"
    assert token(g, "AKNOBODY", "x").status_code == 401
    r = requests.post(uri(g) + "/v1/oauth/tokens", timeout=10,
                      data={"grant_type": "password", "client_id": "AKALICE"})
    assert r.status_code == 400 and r.json()["error"] == "unsupported_grant_type"
    # HTTP Basic carries the client credentials too
    r = requests.post(uri(g) + "/v1/oauth/tokens", timeout=10,
                      data={"grant_type": "client_credentials"},
                      auth=("AKALICE", "alice-secret"))
    assert r.status_code == 200
    # a tampered token, none at all
    bad = tok[:-1] + ("0" if tok[-1] != "0" else "1")
    r = requests.get(uri(g) + "/v1/whs/namespaces", timeout=10,
                     headers={"Authorization": "Bearer " + bad})
    assert r.status_code == 401 and r.json()["error"]["type"] == "NotAuthorizedException"
    r = requests.get(uri(g) + "/v1/whs/namespaces", timeout=10)
    assert r.status_code == 401


def test_pyiceberg_oauth_and_grants(gw):
    g, _ = gw
    with pytest.raises(OAuthError):
        catalog(g, credential="AKALICE:wrong")
    alice = catalog(g, credential="AKALICE:alice-secret",
                    **{"s3.access-key-id": "AKALICE", "s3.secret-access-key": "alice-secret"})
    alice.create_namespace("sales")
    t = alice.create_table("sales.orders", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1, 2, 3]}))
    # rita may read wh, not change it
    rita = catalog(g, credential="AKRITA:rita-secret",
                   **{"s3.access-key-id": "AKRITA", "s3.secret-access-key": "rita-secret"})
    assert ("sales",) in rita.list_namespaces()
    assert rita.load_table("sales.orders").scan().to_arrow().num_rows == 3
    with pytest.raises(ForbiddenError):
        rita.create_namespace("nope")
    with pytest.raises(ForbiddenError):
        rita.drop_table("sales.orders")
    assert alice.load_table("sales.orders").scan().to_arrow().num_rows == 3


def test_sigv4(gw):
    g, _ = gw
    signed = catalog(g, **{"rest.sigv4-enabled": "true", "rest.signing-name": "s3tables",
                           "rest.signing-region": "us-east-1",
                           "rest.access-key-id": "AKALICE",
                           "rest.secret-access-key": "alice-secret",
                           "client.access-key-id": "AKALICE",
                           "client.secret-access-key": "alice-secret",
                           "client.region": "us-east-1"})
    signed.create_namespace("signed")
    assert ("signed",) in signed.list_namespaces()
    with pytest.raises((UnauthorizedError, ForbiddenError)) as ei:
        catalog(g, **{"rest.sigv4-enabled": "true", "rest.signing-name": "s3tables",
                      "rest.signing-region": "us-east-1",
                      "client.access-key-id": "AKALICE",
                      "client.secret-access-key": "wrong",
                      "client.region": "us-east-1"}).list_namespaces()
    assert "signature" in str(ei.value).lower() or "403" in str(ei.value)


def policy(*statements):
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def user(name):
    return {"AWS": "arn:aws:iam::000000000000:user/" + name}


def code(ei):
    return ei.value.response["Error"]["Code"]


def test_s3tables_grants_and_policies(gw):
    g, _ = gw
    alice = tables(g.catalog_port, "AKALICE", "alice-secret")
    rita = tables(g.catalog_port, "AKRITA", "rita-secret")
    bob = tables(g.catalog_port, "AKBOB", "bob-secret")
    alice.create_namespace(tableBucketARN=ARN, namespace=["pol"])
    acat = catalog(g, credential="AKALICE:alice-secret")
    for name in ("a", "b"):
        acat.create_table("pol." + name, pa.schema([("id", pa.int64())]))
    # grants: rita reads, bob has none
    assert rita.get_table(tableBucketARN=ARN, namespace="pol", name="a")["name"] == "a"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        rita.create_namespace(tableBucketARN=ARN, namespace=["nope"])
    assert code(ei) == "AccessDeniedException"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        bob.list_namespaces(tableBucketARN=ARN)
    assert code(ei) == "AccessDeniedException"
    # only Admin touches policies
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        rita.put_table_bucket_policy(tableBucketARN=ARN, resourcePolicy=policy(
            {"Effect": "Allow", "Principal": "*", "Action": "s3tables:*", "Resource": ARN}))
    assert code(ei) == "AccessDeniedException"
    # a bucket policy lets bob read; rita is denied one table by that table's policy
    alice.put_table_bucket_policy(tableBucketARN=ARN, resourcePolicy=policy(
        {"Effect": "Allow", "Principal": user("bob"),
         "Action": ["s3tables:GetTableBucket", "s3tables:ListNamespaces", "s3tables:GetTable",
                    "s3tables:ListTables",
                    "s3tables:GetTableMetadataLocation"],
         "Resource": [ARN, ARN + "/table/*"]}))
    assert [n["namespace"] for n in bob.list_namespaces(tableBucketARN=ARN)["namespaces"]]
    assert bob.get_table(tableBucketARN=ARN, namespace="pol", name="b")["name"] == "b"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        bob.delete_table(tableBucketARN=ARN, namespace="pol", name="b")
    assert code(ei) == "AccessDeniedException"
    alice.put_table_policy(tableBucketARN=ARN, namespace="pol", name="a",
                           resourcePolicy=policy({"Effect": "Deny", "Principal": user("rita"),
                                                  "Action": "s3tables:Get*",
                                                  "Resource": ARN + "/table/*"}))
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        rita.get_table(tableBucketARN=ARN, namespace="pol", name="a")
    assert code(ei) == "AccessDeniedException" and "policy denies" in str(ei.value)
    assert rita.get_table(tableBucketARN=ARN, namespace="pol", name="b")["name"] == "b"
    # the same policies hold on the Iceberg side
    rcat = catalog(g, credential="AKRITA:rita-secret")
    with pytest.raises(ForbiddenError):
        rcat.load_table("pol.a")
    assert rcat.load_table("pol.b") is not None
    bcat = catalog(g, credential="AKBOB:bob-secret")
    assert ("pol", "b") in bcat.list_tables("pol")
    with pytest.raises(ForbiddenError):
        bcat.create_namespace("bobs")
    # policies that cannot be evaluated are refused, nothing stored
    for bad in (policy({"Effect": "Allow", "Principal": "*", "Action": "s3tables:Nope",
                        "Resource": ARN}),
                policy({"Effect": "Allow", "Principal": "*", "Action": "s3tables:GetTable",
                        "Resource": "arn:aws:s3tables:us-east-1:000000000000:bucket/other"}),
                policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                        "Resource": ARN}),
                "{not json"):
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            alice.put_table_bucket_policy(tableBucketARN=ARN, resourcePolicy=bad)
        assert code(ei) == "BadRequestException"
    assert "bob" in alice.get_table_bucket_policy(tableBucketARN=ARN)["resourcePolicy"]
    # without the policies, the grants alone again
    alice.delete_table_bucket_policy(tableBucketARN=ARN)
    alice.delete_table_policy(tableBucketARN=ARN, namespace="pol", name="a")
    assert rita.get_table(tableBucketARN=ARN, namespace="pol", name="a")["name"] == "a"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        bob.get_table(tableBucketARN=ARN, namespace="pol", name="b")
    assert code(ei) == "AccessDeniedException"

def s3(g, creds):
    return boto3.client("s3", endpoint_url="http://%s" % g.url, region_name="us-east-1",
                        aws_access_key_id=creds["s3.access-key-id"],
                        aws_secret_access_key=creds["s3.secret-access-key"],
                        aws_session_token=creds["s3.session-token"],
                        config=Config(retries={"max_attempts": 1}))


def load_vended(g, tok, name):
    r = requests.get(uri(g) + "/v1/whs/namespaces/vend/tables/" + name, timeout=10,
                     headers={"Authorization": "Bearer " + tok,
                              "X-Iceberg-Access-Delegation": "vended-credentials"})
    assert r.status_code == 200, r.text
    return r.json()


def test_vended_credentials(gw):
    g, g2 = gw
    alice = catalog(g, credential="AKALICE:alice-secret",
                    **{"s3.access-key-id": "AKALICE", "s3.secret-access-key": "alice-secret"})
    alice.create_namespace("vend")
    t = alice.create_table("vend.t", pa.schema([("id", pa.int64())]))
    t.append(pa.table({"id": [1]}))
    alice.create_table("vend.other", pa.schema([("id", pa.int64())]))
    atok = token(g, "AKALICE", "alice-secret").json()["access_token"]
    res = load_vended(g, atok, "t")
    cfg = res["config"]
    assert cfg["s3.session-token"] and cfg["s3.access-key-id"] != "AKALICE"
    sc = res["storage-credentials"]
    assert sc[0]["prefix"] == "s3://whs/vend/t" and sc[0]["config"]["s3.session-token"]
    # they expire in about an hour (the default), said in ms as clients read it
    for c in (cfg, sc[0]["config"]):
        left = int(c["s3.session-token-expires-at-ms"]) / 1000 - time.time()
        assert 3540 < left <= 3601, left
    # inside the table's prefix: read and write; outside: refused (also via the other gateway)
    for gg in (g, g2):
        c = s3(gg, cfg)
        keys = [o["Key"] for o in c.list_objects_v2(Bucket="whs", Prefix="vend/t/")["Contents"]]
        assert any(k.endswith(".metadata.json") for k in keys)
        c.put_object(Bucket="whs", Key="vend/t/data/extra.bin", Body=b"x")
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            c.get_object(Bucket="whs", Key=keys[0].replace("vend/t/", "vend/other/"))
        assert ei.value.response["Error"]["Code"] in ("AccessDenied", "NoSuchKey") and \
            ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            c.list_objects_v2(Bucket="whs", Prefix="vend/")
        assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # rita only reads: her vended keys read, never write
    rtok = token(g, "AKRITA", "rita-secret").json()["access_token"]
    rc = s3(g, load_vended(g, rtok, "t")["config"])
    assert rc.get_object(Bucket="whs", Key="vend/t/data/extra.bin")["Body"].read() == b"x"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        rc.put_object(Bucket="whs", Key="vend/t/data/rita.bin", Body=b"r")
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # pyiceberg with delegation reads through the vended keys alone
    vended = catalog(g, credential="AKRITA:rita-secret",
                     **{"header.X-Iceberg-Access-Delegation": "vended-credentials"})
    assert vended.load_table("vend.t").scan().to_arrow().num_rows == 1


def test_duckdb_vended_credentials(gw, tmp_path):
    """DuckDB with no S3 secret of its own: OAuth2 at the catalog, data through the
    credentials the catalog vends per table."""
    g, _ = gw
    con = duckdb_connect(tmp_path / "ext")
    con.execute("ATTACH 'whs' AS v (TYPE ICEBERG, ENDPOINT '%s', CLIENT_ID 'AKALICE', "
                "CLIENT_SECRET 'alice-secret', OAUTH2_SERVER_URI '%s/v1/oauth/tokens', "
                "ACCESS_DELEGATION_MODE 'vended_credentials')" % (uri(g), uri(g)))
    con.execute("CREATE SCHEMA v.duck")
    con.execute("CREATE TABLE v.duck.t (id BIGINT, name VARCHAR)")
    con.execute("INSERT INTO v.duck.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    con.execute("DELETE FROM v.duck.t WHERE id = 2")
    assert con.execute("SELECT id, name FROM v.duck.t ORDER BY id").fetchall() == \
        [(1, "a"), (3, "c")]
    # what DuckDB wrote is where the table is, readable with the owner's own keys
    alice = catalog(g, credential="AKALICE:alice-secret",
                    **{"s3.access-key-id": "AKALICE", "s3.secret-access-key": "alice-secret"})
    assert alice.load_table("duck.t").scan().to_arrow().num_rows == 2


def lance_ns(g, tok, header="Authorization"):
    """pylance's REST namespace client on g's Lance port, sending tok."""
    import lance_namespace
    value = "Bearer " + tok if header == "Authorization" else tok
    return lance_namespace.connect("rest", {"uri": "http://127.0.0.1:%d" % g.lance_port,
                                            "header." + header: value})


def lance_post(g, path, body=None, **headers):
    return requests.post("http://127.0.0.1:%d/v1/%s" % (g.lance_port, path), json=body or {},
                         headers=headers, timeout=10)


def test_lance_identities_grants_and_vended_credentials(gw):
    """The Lance namespace API under identities: no credentials is 401 Unauthenticated,
    a token as Bearer or x-api-key is the identity, grants decide (403 PermissionDenied),
    the root lists only the buckets a caller may see, and describe with vend_credentials
    gives session keys limited to the table (read-only without write grants) that
    pylance writes and reads the dataset with."""
    import lance
    from lance_namespace import (CreateNamespaceRequest, DeclareTableRequest,
                                 DescribeTableRequest, ListNamespacesRequest)
    g, g2 = gw
    atok = token(g, "AKALICE", "alice-secret").json()["access_token"]
    ltok = token(g, "AKLENA", "lena-secret").json()["access_token"]
    btok = token(g, "AKBOB", "bob-secret").json()["access_token"]
    r = lance_post(g, "namespace/lnc/create")
    assert r.status_code == 401 and r.json()["code"] == 16, r.text
    r = lance_post(g, "namespace/lnc/create", **{"Authorization": "Bearer " + atok[:-2]})
    assert r.status_code == 401 and r.json()["code"] == 16, r.text
    alice = lance_ns(g, atok)
    alice.create_namespace(CreateNamespaceRequest(id=["lnc"]))
    lance_ns(g2, atok, header="x-api-key").create_namespace(CreateNamespaceRequest(id=["lnc", "v"]))
    alice.declare_table(DeclareTableRequest(id=["lnc", "v", "t"]))
    # bob: no grants; the root hides what he may not see
    r = lance_post(g, "namespace/lnc%24v/describe", **{"x-api-key": btok})
    assert r.status_code == 403 and r.json()["code"] == 15, r.text
    root = "http://127.0.0.1:%d/v1/namespace/%%24/list" % g.lance_port
    r = requests.get(root, timeout=10, headers={"x-api-key": btok})
    assert r.status_code == 200 and r.json()["namespaces"] == [], r.text
    r = requests.get(root, timeout=10, headers={"x-api-key": ltok})
    assert r.status_code == 200 and r.json()["namespaces"] == ["lnc"], r.text
    assert {"lnc", "whs"} <= set(alice.list_namespaces(ListNamespacesRequest(id=[])).namespaces)
    r = requests.get("http://127.0.0.1:%d/v1/table" % g.lance_port, timeout=10,
                     headers={"x-api-key": btok})
    assert r.status_code == 200 and r.json()["tables"] == [], r.text
    # lena reads lnc only
    lena = lance_ns(g, ltok)
    with pytest.raises(Exception) as ei:
        lena.declare_table(DeclareTableRequest(id=["lnc", "v", "u"]))
    assert "ermission" in str(ei.value) or "403" in str(ei.value), ei.value
    r = lance_post(g, "table/lnc%24v%24u/exists", **{"x-api-key": atok})
    assert r.status_code == 404 and r.json()["code"] == 4  # nothing was made
    # vended keys: alice's write the dataset, lena's only read it
    d = alice.describe_table(DescribeTableRequest(id=["lnc", "v", "t"], vend_credentials=True))
    so = d.storage_options
    assert so["aws_session_token"] and so["aws_access_key_id"] != "AKALICE", so
    # pylance re-describes before every object-store request once the credentials are
    # close to expiry: they must be good for minutes, not seconds
    assert int(so["expires_at_millis"]) > (time.time() + 120) * 1000
    assert so["allow_http"] == "true"
    assert "aws_skip_signature" not in so
    lance.write_dataset(pa.table({"id": [1, 2, 3]}), d.location, storage_options=so)
    ld = lena.describe_table(DescribeTableRequest(id=["lnc", "v", "t"], vend_credentials=True))
    assert lance.dataset(ld.location, storage_options=ld.storage_options).count_rows() == 3
    with pytest.raises(OSError):
        lance.write_dataset(pa.table({"id": [4]}), ld.location,
                            storage_options=ld.storage_options, mode="append")
    assert lance.dataset(d.location, storage_options=so).count_rows() == 3
    # the keys are the table's only
    c = boto3.client("s3", endpoint_url="http://%s" % g.url, region_name="us-east-1",
                     aws_access_key_id=so["aws_access_key_id"],
                     aws_secret_access_key=so["aws_secret_access_key"],
                     aws_session_token=so["aws_session_token"],
                     config=Config(retries={"max_attempts": 1}))
    assert c.list_objects_v2(Bucket="lnc", Prefix="v/t/")["KeyCount"] > 0
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        c.put_object(Bucket="lnc", Key="v/other/x", Body=b"x")
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_lance_and_iceberg_keep_to_their_buckets(gw):
    """A LANCE bucket takes no Iceberg table (Iceberg REST and S3 Tables refuse), an
    ICEBERG one no Lance table, and a Lance table is never loaded as an Iceberg one."""
    from lance_namespace import CreateNamespaceRequest, DeclareTableRequest
    g, _ = gw
    atok = token(g, "AKALICE", "alice-secret").json()["access_token"]
    alice = lance_ns(g, atok)
    alice.create_namespace(CreateNamespaceRequest(id=["lnk"]))
    alice.create_namespace(CreateNamespaceRequest(id=["lnk", "n"]))
    alice.declare_table(DeclareTableRequest(id=["lnk", "n", "t"]))
    auth = {"Authorization": "Bearer " + atok}
    r = requests.get(uri(g) + "/v1/lnk/namespaces/n/tables/t", headers=auth, timeout=10)
    assert r.status_code == 404, r.text
    # an Iceberg purge never reaches it
    r = requests.delete(uri(g) + "/v1/lnk/namespaces/n/tables/t?purgeRequested=true",
                        headers=auth, timeout=10)
    assert r.status_code == 404, r.text
    assert lance_post(g, "table/lnk%24n%24t/exists", **auth).status_code == 204
    r = requests.post(uri(g) + "/v1/lnk/namespaces/n/tables", headers=auth, timeout=10,
                      json={"name": "ice", "schema": {"type": "struct", "schema-id": 0,
                                                      "fields": []}})
    assert r.status_code == 400 and "LANCE" in r.text, r.text
    t = tables(g.catalog_port, "AKALICE", "alice-secret")
    arn = "arn:aws:s3tables:us-east-1:000000000000:bucket/lnk"
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        t.create_table(tableBucketARN=arn, namespace="n", name="ice2", format="ICEBERG")
    assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    # and the Iceberg bucket whs takes no Lance table
    alice_ice = catalog(g, credential="AKALICE:alice-secret")
    if ("lancefree",) not in alice_ice.list_namespaces():
        alice_ice.create_namespace("lancefree")
    r = lance_post(g, "table/whs%24lancefree%24t/declare", **auth)
    assert r.status_code == 400 and r.json()["code"] == 13 and "ICEBERG" in r.text, r.text


def test_lance_sigv4(gw):
    """A SigV4-signed Lance request (service s3tables) is its signer's; a wrong secret is
    refused with the Lance error shape."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    g, _ = gw

    def signed(secret):
        url = "http://127.0.0.1:%d/v1/namespace/%%24/list" % g.lance_port
        req = AWSRequest(method="GET", url=url)
        SigV4Auth(Credentials("AKALICE", secret), "s3tables", "us-east-1").add_auth(req)
        return requests.get(url, headers=dict(req.headers), timeout=10)

    r = signed("alice-secret")
    assert r.status_code == 200 and "whs" in r.json()["namespaces"], r.text
    r = signed("wrong")
    assert r.status_code == 403 and r.json()["code"] == 15, r.text


# ---- expiry: tokens and session credentials minted with the cluster's keys ----

def cluster_key(g, path):
    """The cluster key at path, read through the filer's HTTP API (made on first use)."""
    r = g.filer_client.get(path)
    assert r.status_code == 200 and len(r.content) == 32, (path, r.status_code)
    return r.content


def mint_token(key, identity, expiry):
    """A bearer token in catalog_token.h's format: wfsc1.<expiry>.<identity hex>.<MAC hex>."""
    body = "wfsc1.%d.%s" % (expiry, identity.encode().hex())
    return body + "." + hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def mint_session(key, parent, expiry):
    """An unscoped session (s3/s3_session.h's token layout): access key, secret, token."""
    ak = "ASIA" + "".join(random.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
    name = b"expiry-test"
    body = (bytes([1, 0]) + struct.pack(">Q", expiry) + ak.encode() +
            bytes([len(parent)]) + parent.encode() + bytes([len(name)]) + name + bytes([0]))
    mac = hmac.new(key, b"weedfs-session-token\0" + body, hashlib.sha256).digest()
    secret = hmac.new(key, b"weedfs-session-secret\0" + ak.encode() + b"\0" +
                      str(expiry).encode(), hashlib.sha256).digest()[:30]
    return ak, b64url(secret), b64url(body + mac)


def test_expired_bearer_token(gw):
    g, g2 = gw
    token(g, "AKALICE", "alice-secret")  # the token key exists from the first token on
    key = cluster_key(g, "/etc/catalog/token.key")
    now = int(time.time())
    fresh, old = mint_token(key, "AKALICE", now + 600), mint_token(key, "AKALICE", now - 1)
    for gg in (g, g2):
        # the minted token is a good one while it lasts: only its expiry differs
        r = requests.get(uri(gg) + "/v1/whs/namespaces", timeout=10,
                         headers={"Authorization": "Bearer " + fresh})
        assert r.status_code == 200, r.text
        r = requests.get(uri(gg) + "/v1/whs/namespaces", timeout=10,
                         headers={"Authorization": "Bearer " + old})
        assert r.status_code == 401, r.text
        e = r.json()["error"]
        assert e["type"] == "NotAuthorizedException" and e["code"] == 401
        assert "expired" in e["message"] and "/v1/oauth/tokens" in e["message"], e
    # nothing is done with it
    r = requests.post(uri(g) + "/v1/whs/namespaces", timeout=10, json={"namespace": ["exp"]},
                      headers={"Authorization": "Bearer " + old})
    assert r.status_code == 401
    r = requests.get(uri(g) + "/v1/whs/namespaces/exp", timeout=10,
                     headers={"Authorization": "Bearer " + fresh})
    assert r.status_code == 404, r.text
    # pyiceberg with it: NotAuthorized, its message passed on
    with pytest.raises(UnauthorizedError) as ei:
        catalog(g, token=old).list_namespaces()
    assert "expired" in str(ei.value)
    # the Lance API says the same in its own shape
    r = lance_post(g, "namespace/whs/list", **{"Authorization": "Bearer " + old})
    assert r.status_code == 401 and "expired" in r.json()["error"], r.text
    # a token of an identity the gateway does not know, and one for the wrong key
    r = requests.get(uri(g) + "/v1/whs/namespaces", timeout=10,
                     headers={"Authorization": "Bearer " + mint_token(key, "AKNOBODY", now + 600)})
    assert r.status_code == 401 and "no longer known" in r.json()["error"]["message"], r.text
    r = requests.get(uri(g) + "/v1/whs/namespaces", timeout=10,
                     headers={"Authorization": "Bearer " + mint_token(b"k" * 32, "AKALICE",
                                                                      now + 600)})
    assert r.status_code == 401 and "not valid" in r.json()["error"]["message"], r.text


def test_expired_session_credentials(gw):
    g, g2 = gw
    key = cluster_key(g, "/etc/s3/session.key")
    now = int(time.time())

    def s3_as(gg, creds):
        ak, sk, tok = creds
        return s3(gg, {"s3.access-key-id": ak, "s3.secret-access-key": sk,
                       "s3.session-token": tok})
    fresh, old = mint_session(key, "alice", now + 600), mint_session(key, "alice", now - 1)
    for gg in (g, g2):
        s3_as(gg, fresh).list_objects_v2(Bucket="whs", Prefix="sales/")
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            s3_as(gg, old).list_objects_v2(Bucket="whs", Prefix="sales/")
        err = ei.value.response["Error"]
        assert err["Code"] == "ExpiredToken" and "expired" in err["Message"], err
        assert ei.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400  # as AWS
        with pytest.raises(botocore.exceptions.ClientError) as ei:
            s3_as(gg, old).put_object(Bucket="whs", Key="sales/expired.bin", Body=b"x")
        assert ei.value.response["Error"]["Code"] == "ExpiredToken"
    with pytest.raises(botocore.exceptions.ClientError):
        s3_as(g, fresh).head_object(Bucket="whs", Key="sales/expired.bin")
    # the catalog takes no session credentials, fresh or expired, and says what it takes
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    for creds in (fresh, old):
        url = uri(g) + "/v1/whs/namespaces"
        req = AWSRequest("GET", url)
        SigV4Auth(Credentials(*creds), "s3tables", "us-east-1").add_auth(req)
        r = requests.get(url, headers=dict(req.headers), timeout=10)
        assert r.status_code == 403, r.text
        assert "session credentials are for the S3 gateway" in r.json()["error"]["message"]


def test_vended_credentials_never_for_a_pattern(gw):
    """A location with '*' or '?' gets no vended credentials (never widened into a
    pattern), and a create or register asking for them with one makes nothing."""
    g, _ = gw
    atok = token(g, "AKALICE", "alice-secret").json()["access_token"]
    h = {"Authorization": "Bearer " + atok}
    vh = dict(h, **{"X-Iceberg-Access-Delegation": "vended-credentials"})
    base = uri(g) + "/v1/whs/namespaces/"
    r = requests.post(base, json={"namespace": ["pat"]}, headers=h, timeout=10)
    assert r.status_code == 200, r.text
    schema = {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "int", "required": False}]}
    for loc in ("s3://whs/pat/p/*", "s3://whs/pat/p/a?b"):
        r = requests.post(base + "pat/tables", headers=vh, timeout=10,
                          json={"name": "p", "schema": schema, "location": loc})
        assert r.status_code == 400, r.text
        e = r.json()["error"]
        assert e["type"] == "BadRequestException" and "'*' or '?'" in e["message"], e
        r = requests.head(base + "pat/tables/p", headers=h, timeout=10)
        assert r.status_code == 404, "the refused create made the table"
    # register a metadata file whose location has a '*': refused with delegation, nothing made
    r = requests.post(base + "pat/tables", headers=h, timeout=10,
                      json={"name": "src", "schema": schema})
    assert r.status_code == 200, r.text
    meta = r.json()["metadata"]
    meta["location"] = "s3://whs/pat/src/*"
    c = boto3.client("s3", endpoint_url="http://%s" % g.url, region_name="us-east-1",
                     aws_access_key_id="AKALICE", aws_secret_access_key="alice-secret")
    c.put_object(Bucket="whs", Key="pat/src/metadata/star.metadata.json",
                 Body=json.dumps(meta).encode())
    r = requests.post(base + "pat/register", headers=vh, timeout=10,
                      json={"name": "reg", "metadata-location":
                            "s3://whs/pat/src/metadata/star.metadata.json"})
    assert r.status_code == 400 and "'*' or '?'" in r.json()["error"]["message"], r.text
    assert requests.head(base + "pat/tables/reg", headers=h, timeout=10).status_code == 404


def test_open_catalog_warns_loudly(gw, module_cluster):
    """Without identities the catalog is open and says so at start, in its log, as a
    warning naming the port; a gateway with identities says nothing of the kind."""
    g, _ = gw
    o = start_gateway(module_cluster, g.filer_client).start()
    wait_until(lambda: port_open(o.catalog_port), what="the open catalog listens")
    # open indeed: no credentials needed
    r = requests.get(uri(o) + "/v1/config?warehouse=whs", timeout=10)
    assert r.status_code == 200, r.text

    def warning():
        return [line for line in o.log_path.read_text().splitlines()
                if "catalog" in line and "OPEN" in line]
    wait_until(warning, what="the open catalog's warning")
    line = warning()[0]
    assert line.startswith("W") and "port %d" % o.catalog_port in line, line
    assert "no identities" in line and "every request is allowed" in line, line
    assert not [x for x in g.log_path.read_text().splitlines() if "is OPEN" in x]
