"""The S3 Tables API of the catalog listener (docs/catalog.md) with the real clients:
boto3's s3tables client and awscli's `aws s3tables`, against `weedfs mini` (open) and
`weedfs s3` with identities (SigV4 for the service s3tables). Every table bucket,
namespace and table is also a filer directory and an S3 prefix."""
import json
import os
import socket
import subprocess
import threading

import boto3
import botocore
import pytest
import requests

from conftest import wait_until
from filer_fixtures import start_mini_with_filer
from s3_fixtures import IDENTITIES, code_of, start_gateway

TB_XATTR = "weedfs.catalog.bucket"
T_XATTR = "weedfs.catalog.table"


def tables(port, ak="AKANY", sk="any-secret"):
    return boto3.client("s3tables", endpoint_url="http://127.0.0.1:%d" % port,
                        region_name="us-east-1", aws_access_key_id=ak,
                        aws_secret_access_key=sk)


@pytest.fixture(scope="module")
def cat(module_cluster):
    m, filer = start_mini_with_filer(module_cluster)
    return m, filer, tables(m.catalog_port)


def status_of(fn, *args, **kw):
    with pytest.raises(botocore.exceptions.ClientError) as ei:
        fn(*args, **kw)
    r = ei.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"]


def port_open(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def xattr_names(filer, path):
    e = filer.api("lookup", {"path": path})
    return json.dumps(e.get("xattrs"))


def test_lifecycle_and_the_filer_view(cat):
    m, filer, c = cat
    arn = c.create_table_bucket(name="life")["arn"]
    assert arn == "arn:aws:s3tables:us-east-1:000000000000:bucket/life"
    b = c.get_table_bucket(tableBucketARN=arn)
    assert b["name"] == "life" and b["arn"] == arn and b["ownerAccountId"]
    assert "life" in [x["name"] for x in c.list_table_buckets()["tableBuckets"]]
    assert c.create_namespace(tableBucketARN=arn, namespace=["sales"])["namespace"] == ["sales"]
    assert c.get_namespace(tableBucketARN=arn, namespace="sales")["namespace"] == ["sales"]
    assert [n["namespace"] for n in c.list_namespaces(tableBucketARN=arn)["namespaces"]] == \
        [["sales"]]
    t = c.create_table(tableBucketARN=arn, namespace="sales", name="orders", format="ICEBERG")
    assert t["tableARN"].startswith(arn + "/table/") and t["versionToken"]
    g = c.get_table(tableBucketARN=arn, namespace="sales", name="orders")
    assert g["warehouseLocation"] == "s3://life/sales/orders"
    assert g["versionToken"] == t["versionToken"] and g["format"] == "ICEBERG"
    assert "metadataLocation" not in g
    assert [x["name"] for x in c.list_tables(tableBucketARN=arn)["tables"]] == ["orders"]
    assert [x["name"] for x in c.list_tables(tableBucketARN=arn, namespace="sales")["tables"]] \
        == ["orders"]

    # the storage model: directories with the catalog's attributes, metadata/ and data/
    assert TB_XATTR in xattr_names(filer, "/buckets/life")
    assert T_XATTR in xattr_names(filer, "/buckets/life/sales/orders")
    assert sorted(filer.names("/buckets/life/sales/orders")) == ["data", "metadata"]
    # ... and an S3 prefix of the gateway's bucket of the same name
    s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % m.s3_port,
                      region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    s3.put_object(Bucket="life", Key="sales/orders/data/x.parquet", Body=b"rows")
    assert s3.get_object(Bucket="life", Key="sales/orders/data/x.parquet")["Body"].read() == \
        b"rows"
    assert filer.get("/buckets/life/sales/orders/data/x.parquet").content == b"rows"

    # the metadata pointer: compare-and-swap on the version token
    loc = c.get_table_metadata_location(tableBucketARN=arn, namespace="sales", name="orders")
    assert loc["versionToken"] == t["versionToken"] and "metadataLocation" not in loc
    u = c.update_table_metadata_location(
        tableBucketARN=arn, namespace="sales", name="orders", versionToken=loc["versionToken"],
        metadataLocation="s3://life/sales/orders/metadata/00000-a.metadata.json")
    assert u["versionToken"] != loc["versionToken"]
    assert u["metadataLocation"].endswith("00000-a.metadata.json")
    assert status_of(c.update_table_metadata_location, tableBucketARN=arn, namespace="sales",
                     name="orders", versionToken=loc["versionToken"],
                     metadataLocation="s3://life/x") == (409, "ConflictException")
    now = c.get_table_metadata_location(tableBucketARN=arn, namespace="sales", name="orders")
    assert now["versionToken"] == u["versionToken"]
    assert now["metadataLocation"] == u["metadataLocation"]

    # non-empty containers are kept
    assert status_of(c.delete_namespace, tableBucketARN=arn, namespace="sales") == \
        (409, "ConflictException")
    assert status_of(c.delete_table_bucket, tableBucketARN=arn) == (409, "ConflictException")

    # rename within and across namespaces; a stale token is refused
    c.create_namespace(tableBucketARN=arn, namespace=["archive"])
    assert status_of(c.rename_table, tableBucketARN=arn, namespace="sales", name="orders",
                     newName="o2", versionToken=loc["versionToken"]) == (409, "ConflictException")
    c.rename_table(tableBucketARN=arn, namespace="sales", name="orders", newName="o2",
                   newNamespaceName="archive", versionToken=u["versionToken"])
    assert c.get_table(tableBucketARN=arn, namespace="archive", name="o2")["name"] == "o2"
    assert status_of(c.get_table, tableBucketARN=arn, namespace="sales", name="orders") == \
        (404, "NotFoundException")
    # the files stay where the table's locations name them (test_rename_keeps_locations)
    assert filer.get("/buckets/life/sales/orders/data/x.parquet").content == b"rows"

    # delete: the table with its files, then the namespaces, then the bucket
    assert status_of(c.delete_table, tableBucketARN=arn, namespace="archive", name="o2",
                     versionToken=loc["versionToken"]) == (409, "ConflictException")
    c.delete_table(tableBucketARN=arn, namespace="archive", name="o2")
    for gone in ["/buckets/life/archive/o2", "/buckets/life/sales/orders"]:
        assert filer.post("/.api/v1/lookup", json={"path": gone}).status_code == 404, gone
    c.delete_namespace(tableBucketARN=arn, namespace="archive")
    c.delete_namespace(tableBucketARN=arn, namespace="sales")
    c.delete_table_bucket(tableBucketARN=arn)
    assert "life" not in [x["name"] for x in c.list_table_buckets()["tableBuckets"]]
    assert status_of(c.get_table_bucket, tableBucketARN=arn) == (404, "NotFoundException")


def test_bad_input(cat):
    m, _, c = cat
    arn = c.create_table_bucket(name="badin")["arn"]
    c.create_namespace(tableBucketARN=arn, namespace=["ns"])
    # names breaking the S3 Tables rules are 400 BadRequestException
    for name in ["Upper", "a_b", "-x-", "xn--abc", "abc-s3alias", "a.b"]:
        assert status_of(c.create_table_bucket, name=name) == (400, "BadRequestException"), name
    for ns in ["Sales", "a-b", "_x", "awsx", "a/b"]:
        assert status_of(c.create_namespace, tableBucketARN=arn, namespace=[ns]) == \
            (400, "BadRequestException"), ns
    for name in ["T", "a-b", "x_", "a.b"]:
        assert status_of(c.create_table, tableBucketARN=arn, namespace="ns", name=name,
                         format="ICEBERG") == (400, "BadRequestException"), name
    # duplicates are conflicts; a plain S3 bucket of the name too
    assert status_of(c.create_table_bucket, name="badin") == (409, "ConflictException")
    assert status_of(c.create_namespace, tableBucketARN=arn, namespace=["ns"]) == \
        (409, "ConflictException")
    c.create_table(tableBucketARN=arn, namespace="ns", name="t", format="ICEBERG")
    assert status_of(c.create_table, tableBucketARN=arn, namespace="ns", name="t",
                     format="ICEBERG") == (409, "ConflictException")
    # unknown things are 404
    assert status_of(c.get_table, tableBucketARN=arn, namespace="ns", name="nope") == \
        (404, "NotFoundException")
    assert status_of(c.get_namespace, tableBucketARN=arn, namespace="nope") == \
        (404, "NotFoundException")
    assert status_of(c.create_table, tableBucketARN=arn, namespace="nope", name="t",
                     format="ICEBERG") == (404, "NotFoundException")
    other = arn.replace("badin", "nosuchbucket")
    assert status_of(c.list_namespaces, tableBucketARN=other) == (404, "NotFoundException")
    assert status_of(c.get_table_bucket, tableBucketARN="arn:aws:s3:::badin") == \
        (400, "BadRequestException")
    # raw requests: the error shape botocore parses, malformed bodies, the Iceberg prefix
    base = "http://127.0.0.1:%d" % m.catalog_port
    r = requests.put(base + "/buckets", data="{not json", timeout=10)
    assert r.status_code == 400 and r.headers["x-amzn-ErrorType"] == "BadRequestException"
    assert r.json()["message"]
    r = requests.put(base + "/buckets", data="[1]", timeout=10)
    assert r.status_code == 400
    r = requests.get(base + "/buckets/" + "%00", timeout=10)
    assert r.status_code == 400
    # /v1/ is the Iceberg REST catalog's, in its own error shape: a config needs a warehouse
    r = requests.get(base + "/v1/config", timeout=10)
    assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequestException"
    r = requests.get(base + "/buckets", params={"maxBuckets": "0"}, timeout=10)
    assert r.status_code == 400
    r = requests.put(base + "/buckets", data="x" * (2 << 20), timeout=10)
    assert r.status_code == 413
    assert "t" in [x["name"] for x in c.list_tables(tableBucketARN=arn)["tables"]]


def test_paging(cat):
    _, _, c = cat
    names = ["pg-%02d" % i for i in range(5)]
    for n in names:
        c.create_table_bucket(name=n)
    seen, token = [], None
    while True:
        kw = {"prefix": "pg-", "maxBuckets": 2}
        if token:
            kw["continuationToken"] = token
        r = c.list_table_buckets(**kw)
        assert len(r["tableBuckets"]) <= 2
        seen += [b["name"] for b in r["tableBuckets"]]
        token = r.get("continuationToken")
        if not token:
            break
    assert seen == names
    arn = c.get_table_bucket(tableBucketARN="arn:aws:s3tables:us-east-1:000000000000:bucket/"
                             "pg-00")["arn"]
    want = []
    for ns in ["a", "b", "c"]:
        c.create_namespace(tableBucketARN=arn, namespace=[ns])
        for t in ["t1", "t2"]:
            c.create_table(tableBucketARN=arn, namespace=ns, name=t, format="ICEBERG")
            want.append((ns, t))
    got, token = [], None
    while True:
        kw = {"tableBucketARN": arn, "maxTables": 4}
        if token:
            kw["continuationToken"] = token
        r = c.list_tables(**kw)
        got += [(x["namespace"][0], x["name"]) for x in r["tables"]]
        token = r.get("continuationToken")
        if not token:
            break
    assert got == want
    p = c.get_paginator("list_namespaces")
    assert [n["namespace"][0] for page in p.paginate(tableBucketARN=arn,
                                                     PaginationConfig={"PageSize": 1})
            for n in page["namespaces"]] == ["a", "b", "c"]


def test_version_token_race(cat):
    _, _, c = cat
    arn = c.create_table_bucket(name="race")["arn"]
    c.create_namespace(tableBucketARN=arn, namespace=["ns"])
    tok = c.create_table(tableBucketARN=arn, namespace="ns", name="t",
                         format="ICEBERG")["versionToken"]
    barrier, results = threading.Barrier(16), []

    def worker(i):
        cl = tables(cat[0].catalog_port)
        barrier.wait()
        try:
            cl.update_table_metadata_location(tableBucketARN=arn, namespace="ns", name="t",
                                              versionToken=tok,
                                              metadataLocation="s3://race/ns/t/metadata/%d" % i)
            results.append(("won", i))
        except botocore.exceptions.ClientError as e:
            results.append((e.response["Error"]["Code"], i))

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    wins = [i for r, i in results if r == "won"]
    assert len(wins) == 1, results
    assert all(r == "ConflictException" for r, _ in results if r != "won"), results
    loc = c.get_table_metadata_location(tableBucketARN=arn, namespace="ns", name="t")
    assert loc["metadataLocation"] == "s3://race/ns/t/metadata/%d" % wins[0]


def test_awscli(cat):
    m, _, _ = cat
    env = dict(os.environ, AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y",
               AWS_DEFAULT_REGION="us-east-1")
    ep = ["--endpoint-url", "http://127.0.0.1:%d" % m.catalog_port, "--output", "json"]

    def aws(*args, check=True):
        r = subprocess.run(["aws", "s3tables"] + list(args) + ep, capture_output=True,
                           text=True, env=env, timeout=120)
        assert (r.returncode == 0) == check, r.stderr
        return json.loads(r.stdout) if check and r.stdout.strip() else r

    arn = aws("create-table-bucket", "--name", "cli")["arn"]
    assert "cli" in [b["name"] for b in aws("list-table-buckets")["tableBuckets"]]
    aws("create-namespace", "--table-bucket-arn", arn, "--namespace", "web")
    aws("create-table", "--table-bucket-arn", arn, "--namespace", "web", "--name", "hits",
        "--format", "ICEBERG")
    t = aws("get-table", "--table-bucket-arn", arn, "--namespace", "web", "--name", "hits")
    assert t["warehouseLocation"] == "s3://cli/web/hits"
    r = aws("delete-namespace", "--table-bucket-arn", arn, "--namespace", "web", check=False)
    assert "ConflictException" in r.stderr


def test_signed_with_identities(module_cluster, cat):
    _, filer, _ = cat
    g = start_gateway(module_cluster, filer, IDENTITIES).start()
    wait_until(lambda: port_open(g.catalog_port), what="the catalog listens")
    alice = tables(g.catalog_port, "AKALICE", "alice-secret")
    arn = alice.create_table_bucket(name="signed")["arn"]
    alice.create_namespace(tableBucketARN=arn, namespace=["ns"])
    t = alice.create_table(tableBucketARN=arn, namespace="ns", name="t", format="ICEBERG")
    assert alice.get_table(tableBucketARN=arn, namespace="ns", name="t")["createdBy"] == "alice"
    assert t["versionToken"]
    wrong = tables(g.catalog_port, "AKALICE", "not-the-secret")
    assert status_of(wrong.list_table_buckets) == (403, "InvalidSignatureException")
    assert status_of(wrong.create_table_bucket, name="nope") == (403, "InvalidSignatureException")
    unknown = tables(g.catalog_port, "AKNOBODY", "x")
    assert status_of(unknown.list_table_buckets)[0] == 403
    r = requests.get("http://127.0.0.1:%d/buckets" % g.catalog_port, timeout=10)
    assert r.status_code == 403 and r.headers["x-amzn-ErrorType"] == "AccessDeniedException"
    # a signature for the S3 service is no catalog signature
    s3signed = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % g.catalog_port,
                            region_name="us-east-1", aws_access_key_id="AKALICE",
                            aws_secret_access_key="alice-secret")
    assert code_of(s3signed.list_objects_v2, Bucket="buckets") in ("403", "AccessDenied",
                                                                   "AccessDeniedException")
    assert "nope" not in [b["name"] for b in alice.list_table_buckets()["tableBuckets"]]


def test_policies_stored(cat):
    _, _, c = cat
    arn = c.create_table_bucket(name="pol")["arn"]
    c.create_namespace(tableBucketARN=arn, namespace=["ns"])
    c.create_table(tableBucketARN=arn, namespace="ns", name="t", format="ICEBERG")
    doc = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3tables:GetTable", "Resource": arn}]})
    assert status_of(c.get_table_bucket_policy, tableBucketARN=arn) == (404, "NotFoundException")
    c.put_table_bucket_policy(tableBucketARN=arn, resourcePolicy=doc)
    assert json.loads(c.get_table_bucket_policy(tableBucketARN=arn)["resourcePolicy"]) == \
        json.loads(doc)
    assert status_of(c.put_table_bucket_policy, tableBucketARN=arn,
                     resourcePolicy="{not json") == (400, "BadRequestException")
    c.delete_table_bucket_policy(tableBucketARN=arn)
    assert status_of(c.get_table_bucket_policy, tableBucketARN=arn) == (404, "NotFoundException")
    c.put_table_policy(tableBucketARN=arn, namespace="ns", name="t", resourcePolicy=doc)
    assert c.get_table_policy(tableBucketARN=arn, namespace="ns", name="t")["resourcePolicy"] \
        == doc
    c.delete_table_policy(tableBucketARN=arn, namespace="ns", name="t")
    assert status_of(c.get_table_policy, tableBucketARN=arn, namespace="ns", name="t") == \
        (404, "NotFoundException")
    assert status_of(c.put_table_policy, tableBucketARN=arn, namespace="ns", name="nope",
                     resourcePolicy=doc) == (404, "NotFoundException")
    # the table's attributes are untouched by its policy
    assert c.get_table(tableBucketARN=arn, namespace="ns", name="t")["name"] == "t"


def new_table(c, bucket, ns="ns", name="t"):
    arn = c.create_table_bucket(name=bucket)["arn"]
    c.create_namespace(tableBucketARN=arn, namespace=[ns])
    t = c.create_table(tableBucketARN=arn, namespace=ns, name=name, format="ICEBERG")
    return arn, t["tableARN"]


def aws_cli(port, *args):
    env = dict(os.environ, AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y",
               AWS_DEFAULT_REGION="us-east-1")
    r = subprocess.run(["aws", "s3tables"] + list(args) +
                       ["--endpoint-url", "http://127.0.0.1:%d" % port, "--output", "json"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout) if r.stdout.strip() else None


def test_tags(cat):
    m, _, c = cat
    arn = c.create_table_bucket(name="tagged", tags={"team": "data", "env": ""})["arn"]
    assert c.list_tags_for_resource(resourceArn=arn)["tags"] == {"team": "data", "env": ""}
    c.create_namespace(tableBucketARN=arn, namespace=["ns"])
    tarn = c.create_table(tableBucketARN=arn, namespace="ns", name="t", format="ICEBERG",
                          tags={"pii": "no"})["tableARN"]
    assert c.list_tags_for_resource(resourceArn=tarn)["tags"] == {"pii": "no"}
    c.tag_resource(resourceArn=arn, tags={"team": "ml", "cost": "42"})
    assert c.list_tags_for_resource(resourceArn=arn)["tags"] == \
        {"team": "ml", "env": "", "cost": "42"}
    c.untag_resource(resourceArn=arn, tagKeys=["env", "cost", "absent"])
    assert c.list_tags_for_resource(resourceArn=arn)["tags"] == {"team": "ml"}
    # the table's tags are its own, and follow it through a rename
    assert c.list_tags_for_resource(resourceArn=tarn)["tags"] == {"pii": "no"}
    c.rename_table(tableBucketARN=arn, namespace="ns", name="t", newName="t2")
    c.tag_resource(resourceArn=tarn, tags={"owner": "bob"})
    assert c.list_tags_for_resource(resourceArn=tarn)["tags"] == {"pii": "no", "owner": "bob"}
    # concurrent tag calls all land (compare-and-swap of the attribute)
    barrier = threading.Barrier(8)

    def tagger(i):
        cl = tables(m.catalog_port)
        barrier.wait()
        cl.tag_resource(resourceArn=tarn, tags={"c%d" % i: str(i)})

    ts = [threading.Thread(target=tagger, args=(i,)) for i in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    got = c.list_tags_for_resource(resourceArn=tarn)["tags"]
    assert {k: v for k, v in got.items() if k.startswith("c")} == \
        {"c%d" % i: str(i) for i in range(8)}
    c.untag_resource(resourceArn=tarn, tagKeys=["c%d" % i for i in range(8)])
    # the limits: 50 tags, keys 1..128, values 0..256, no aws: keys; nothing changes
    full = {"k%02d" % i: "v" for i in range(49)}
    c.tag_resource(resourceArn=arn, tags=full)
    assert status_of(c.tag_resource, resourceArn=arn, tags={"one": "more", "two": "more"}) == \
        (400, "BadRequestException")
    for bad in [{"k" * 129: "v"}, {"k": "v" * 257}, {"aws:x": "v"}]:
        assert status_of(c.tag_resource, resourceArn=arn, tags=bad) == \
            (400, "BadRequestException"), bad
    assert len(c.list_tags_for_resource(resourceArn=arn)["tags"]) == 50
    c.tag_resource(resourceArn=arn, tags={"k00": "replaced"})  # a replacement fits
    assert c.list_tags_for_resource(resourceArn=arn)["tags"]["k00"] == "replaced"
    assert status_of(c.create_table_bucket, name="toomany",
                     tags={"k%02d" % i: "v" for i in range(51)}) == (400, "BadRequestException")
    assert "toomany" not in [b["name"] for b in c.list_table_buckets()["tableBuckets"]]
    # unknown and malformed resources
    assert status_of(c.list_tags_for_resource, resourceArn=arn.replace("tagged", "nobucket")) \
        == (404, "NotFoundException")
    assert status_of(c.tag_resource, resourceArn=arn + "/table/" + "0" * 32,
                     tags={"a": "b"}) == (404, "NotFoundException")
    assert status_of(c.list_tags_for_resource,
                     resourceArn="arn:aws:s3tables:us-east-1:000000000000:bucket/tagged/table/x.y") \
        == (400, "BadRequestException")
    base = "http://127.0.0.1:%d" % m.catalog_port
    r = requests.delete(base + "/tag/" + requests.utils.quote(arn, safe=""), timeout=10)
    assert r.status_code == 400 and r.headers["x-amzn-ErrorType"] == "BadRequestException"
    # awscli
    assert aws_cli(m.catalog_port, "list-tags-for-resource", "--resource-arn", tarn)["tags"] \
        == {"pii": "no", "owner": "bob"}


def test_maintenance(cat):
    m, _, c = cat
    arn, tarn = new_table(c, "maint")
    assert c.get_table_bucket_maintenance_configuration(tableBucketARN=arn)["configuration"] \
        == {}
    v = {"status": "enabled", "settings": {"icebergUnreferencedFileRemoval": {
        "unreferencedDays": 4, "nonCurrentDays": 11}}}
    c.put_table_bucket_maintenance_configuration(tableBucketARN=arn,
                                                 type="icebergUnreferencedFileRemoval", value=v)
    g = c.get_table_bucket_maintenance_configuration(tableBucketARN=arn)
    assert g["tableBucketARN"] == arn
    assert g["configuration"] == {"icebergUnreferencedFileRemoval": v}
    comp = {"status": "enabled", "settings": {"icebergCompaction": {"targetFileSizeMB": 256,
                                                                    "strategy": "binpack"}}}
    snap = {"status": "disabled", "settings": {"icebergSnapshotManagement": {
        "minSnapshotsToKeep": 2, "maxSnapshotAgeHours": 48}}}
    kw = dict(tableBucketARN=arn, namespace="ns", name="t")
    c.put_table_maintenance_configuration(type="icebergCompaction", value=comp, **kw)
    c.put_table_maintenance_configuration(type="icebergSnapshotManagement", value=snap, **kw)
    g = c.get_table_maintenance_configuration(**kw)
    assert g["tableARN"] == tarn
    assert g["configuration"] == {"icebergCompaction": comp, "icebergSnapshotManagement": snap}
    # no maintenance job runs: each type not yet run, or disabled as configured
    st = c.get_table_maintenance_job_status(**kw)
    assert st["tableARN"] == tarn
    assert {k: x["status"] for k, x in st["status"].items()} == {
        "icebergCompaction": "Not_Yet_Run", "icebergSnapshotManagement": "Disabled",
        "icebergUnreferencedFileRemoval": "Not_Yet_Run"}
    # malformed configurations are 400 and change nothing
    bads = [
        ("icebergCompaction", {"status": "on"}),
        ("icebergCompaction", {"status": "enabled", "settings": {"icebergCompaction": {
            "strategy": "random"}}}),
        ("icebergCompaction", {"settings": {"icebergSnapshotManagement": {
            "minSnapshotsToKeep": 1}}}),
    ]
    for typ, val in bads:
        assert status_of(c.put_table_maintenance_configuration, type=typ, value=val, **kw) == \
            (400, "BadRequestException"), val
    base = "http://127.0.0.1:%d/tables/%s/ns/t/maintenance/" % (m.catalog_port,
                                                                 requests.utils.quote(arn, safe=""))
    for typ, body in [("icebergCompaction", {"value": {"status": "enabled", "extra": 1}}),
                      ("icebergCompaction", {"value": {"settings": {"icebergCompaction": {
                          "targetFileSizeMB": 1, "bogus": 2}}}}),
                      ("icebergCompaction", {"value": {"settings": {"icebergCompaction": {
                          "targetFileSizeMB": 0}}}}),
                      ("icebergSnapshotManagement", {"value": {"settings": {
                          "icebergSnapshotManagement": {"maxSnapshotAgeHours": 2 ** 31}}}}),
                      ("icebergCompaction", {"value": {"settings": {"icebergCompaction": {
                          "targetFileSizeMB": "1"}}}}),
                      ("icebergCompaction", {"value": "enabled"}),
                      ("icebergCompaction", {}),
                      ("icebergUnreferencedFileRemoval", {"value": {"status": "enabled"}}),
                      ("icebergNothing", {"value": {"status": "enabled"}})]:
        r = requests.put(base + typ, json=body, timeout=10)
        assert r.status_code == 400 and r.headers["x-amzn-ErrorType"] == \
            "BadRequestException", (typ, body, r.text)
    assert c.get_table_maintenance_configuration(**kw)["configuration"] == \
        {"icebergCompaction": comp, "icebergSnapshotManagement": snap}
    r = requests.put("http://127.0.0.1:%d/buckets/%s/maintenance/icebergUnreferencedFileRemoval"
                     % (m.catalog_port, requests.utils.quote(arn, safe="")),
                     json={"value": {"settings": {"icebergUnreferencedFileRemoval": {
                         "unreferencedDays": -1}}}}, timeout=10)
    assert r.status_code == 400 and r.headers["x-amzn-ErrorType"] == "BadRequestException"
    assert c.get_table_bucket_maintenance_configuration(tableBucketARN=arn)["configuration"] \
        == {"icebergUnreferencedFileRemoval": v}
    assert status_of(c.get_table_maintenance_configuration, tableBucketARN=arn, namespace="ns",
                     name="nope") == (404, "NotFoundException")
    assert status_of(c.get_table_bucket_maintenance_configuration,
                     tableBucketARN=arn.replace("maint", "nomaint")) == (404, "NotFoundException")
    # awscli
    cli = aws_cli(m.catalog_port, "get-table-maintenance-configuration", "--table-bucket-arn",
                  arn, "--namespace", "ns", "--name", "t")
    assert cli["configuration"]["icebergCompaction"] == comp


def test_encryption(cat):
    m, _, c = cat
    arn, _ = new_table(c, "enc")
    assert c.get_table_bucket_encryption(tableBucketARN=arn)["encryptionConfiguration"] == \
        {"sseAlgorithm": "AES256"}
    assert c.get_table_encryption(tableBucketARN=arn, namespace="ns", name="t")[
        "encryptionConfiguration"] == {"sseAlgorithm": "AES256"}
    kms = {"sseAlgorithm": "aws:kms",
           "kmsKeyArn": "arn:aws:kms:us-east-1:000000000000:key/1234abcd-12ab"}
    c.put_table_bucket_encryption(tableBucketARN=arn, encryptionConfiguration=kms)
    assert c.get_table_bucket_encryption(tableBucketARN=arn)["encryptionConfiguration"] == kms
    # a new table takes its bucket's configuration, or its own
    c.create_table(tableBucketARN=arn, namespace="ns", name="inherits", format="ICEBERG")
    assert c.get_table_encryption(tableBucketARN=arn, namespace="ns", name="inherits")[
        "encryptionConfiguration"] == kms
    c.create_table(tableBucketARN=arn, namespace="ns", name="own", format="ICEBERG",
                   encryptionConfiguration={"sseAlgorithm": "AES256"})
    assert c.get_table_encryption(tableBucketARN=arn, namespace="ns", name="own")[
        "encryptionConfiguration"] == {"sseAlgorithm": "AES256"}
    # malformed: 400, nothing changed
    for bad in [{"sseAlgorithm": "aws:kms"},
                {"sseAlgorithm": "AES256", "kmsKeyArn": kms["kmsKeyArn"]},
                {"sseAlgorithm": "aws:kms", "kmsKeyArn": "arn:aws:s3:::nokey"}]:
        assert status_of(c.put_table_bucket_encryption, tableBucketARN=arn,
                         encryptionConfiguration=bad) == (400, "BadRequestException"), bad
    r = requests.put("http://127.0.0.1:%d/buckets/%s/encryption" % (
        m.catalog_port, requests.utils.quote(arn, safe="")),
        json={"encryptionConfiguration": {"sseAlgorithm": "DES"}}, timeout=10)
    assert r.status_code == 400 and r.headers["x-amzn-ErrorType"] == "BadRequestException"
    assert status_of(c.create_table, tableBucketARN=arn, namespace="ns", name="badenc",
                     format="ICEBERG", encryptionConfiguration={"sseAlgorithm": "aws:kms"}) == \
        (400, "BadRequestException")
    assert "badenc" not in [t["name"] for t in c.list_tables(tableBucketARN=arn)["tables"]]
    assert c.get_table_bucket_encryption(tableBucketARN=arn)["encryptionConfiguration"] == kms
    assert aws_cli(m.catalog_port, "get-table-bucket-encryption", "--table-bucket-arn",
                   arn)["encryptionConfiguration"] == kms
    c.delete_table_bucket_encryption(tableBucketARN=arn)
    assert c.get_table_bucket_encryption(tableBucketARN=arn)["encryptionConfiguration"] == \
        {"sseAlgorithm": "AES256"}
    assert status_of(c.get_table_bucket_encryption,
                     tableBucketARN=arn.replace("enc", "noenc")) == (404, "NotFoundException")


def test_get_table_by_arn(cat):
    m, filer, c = cat
    arn, tarn = new_table(c, "byarn")
    g = c.get_table(tableArn=tarn)
    assert g["tableARN"] == tarn and g["name"] == "t" and g["namespace"] == ["ns"]
    c.create_namespace(tableBucketARN=arn, namespace=["other"])
    c.rename_table(tableBucketARN=arn, namespace="ns", name="t", newNamespaceName="other",
                   newName="moved")
    g = c.get_table(tableArn=tarn)
    assert (g["namespace"], g["name"]) == (["other"], "moved")
    # the ARN index is a help, not the truth: without it the bucket is searched, and it is
    # written again
    tid = tarn.rsplit("/", 1)[1]
    index = "/.catalog/tables/byarn/" + tid
    assert filer.post("/.api/v1/lookup", json={"path": index}).status_code == 200
    filer.api("delete", {"path": index})
    assert c.get_table(tableArn=tarn)["name"] == "moved"
    assert filer.post("/.api/v1/lookup", json={"path": index}).status_code == 200
    assert status_of(c.get_table, tableArn=arn + "/table/" + "f" * 32) == \
        (404, "NotFoundException")
    assert status_of(c.get_table, tableArn="arn:aws:s3tables:us-east-1:000000000000:bucket/"
                     "nobucket/table/abc") == (404, "NotFoundException")
    r = requests.get("http://127.0.0.1:%d/get-table" % m.catalog_port,
                     params={"tableArn": "arn:aws:s3tables:x:1:bucket/byarn/table/a.b"},
                     timeout=10)
    assert r.status_code == 400 and r.headers["x-amzn-ErrorType"] == "BadRequestException"
    assert aws_cli(m.catalog_port, "get-table", "--table-arn", tarn)["name"] == "moved"
    c.delete_table(tableBucketARN=arn, namespace="other", name="moved")
    assert status_of(c.get_table, tableArn=tarn) == (404, "NotFoundException")
    assert filer.post("/.api/v1/lookup", json={"path": index}).status_code == 404


def test_rename_keeps_locations(cat):
    m, filer, c = cat
    arn, tarn = new_table(c, "ren", name="orders")
    c.create_namespace(tableBucketARN=arn, namespace=["archive"])
    s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % m.s3_port,
                      region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    g = c.get_table(tableBucketARN=arn, namespace="ns", name="orders")
    wh = g["warehouseLocation"]
    assert wh == "s3://ren/ns/orders"
    # an Iceberg writer's files: metadata naming the table's location and its data files
    meta_key = "ns/orders/metadata/00000-a.metadata.json"
    doc = json.dumps({"format-version": 2, "location": wh,
                      "snapshots": [{"manifest-list": wh + "/metadata/snap-1.avro"}]})
    s3.put_object(Bucket="ren", Key=meta_key, Body=doc.encode())
    s3.put_object(Bucket="ren", Key="ns/orders/metadata/snap-1.avro", Body=b"avro")
    s3.put_object(Bucket="ren", Key="ns/orders/data/f1.parquet", Body=b"rows")
    u = c.update_table_metadata_location(tableBucketARN=arn, namespace="ns", name="orders",
                                         versionToken=g["versionToken"],
                                         metadataLocation="s3://ren/" + meta_key)
    pol = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3tables:GetTable",
         "Resource": arn + "/table/*"}]})
    c.put_table_policy(tableBucketARN=arn, namespace="ns", name="orders", resourcePolicy=pol)

    def reachable(table):
        """Every location the table and its metadata name can be read through S3."""
        loc = c.get_table_metadata_location(tableBucketARN=arn, **table)
        bucket, key = loc["metadataLocation"][5:].split("/", 1)
        meta = json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
        assert meta["location"] == loc["warehouseLocation"]
        prefix = meta["location"][len("s3://ren/"):]
        assert s3.get_object(Bucket="ren", Key=prefix + "/metadata/snap-1.avro")[
            "Body"].read() == b"avro"
        assert s3.get_object(Bucket="ren", Key=prefix + "/data/f1.parquet")["Body"].read() == \
            b"rows"
        return loc

    for n, (to_ns, to_name) in enumerate([("archive", "o2"), ("archive", "o3"),
                                          ("ns", "orders")]):
        cur = c.get_table(tableArn=tarn)
        c.rename_table(tableBucketARN=arn, namespace=cur["namespace"][0], name=cur["name"],
                       newNamespaceName=to_ns, newName=to_name,
                       versionToken=cur["versionToken"])
        table = {"namespace": to_ns, "name": to_name}
        loc = reachable(table)
        assert loc["warehouseLocation"] == wh and loc["metadataLocation"] == u["metadataLocation"]
        got = c.get_table(tableBucketARN=arn, **table)
        assert got["tableARN"] == tarn and got["versionToken"] == u["versionToken"]
        names = sorted((t["namespace"][0], t["name"]) for t in
                       c.list_tables(tableBucketARN=arn)["tables"])
        assert names == [(to_ns, to_name)], names
        # the table's other attributes went with it
        assert c.get_table_policy(tableBucketARN=arn, **table)["resourcePolicy"] == pol
        if n == 0:
            # the old name is no table any more; its directory holds the files
            assert status_of(c.get_table, tableBucketARN=arn, namespace="ns",
                             name="orders") == (404, "NotFoundException")
            with pytest.raises(botocore.exceptions.ClientError) as ei:
                c.create_table(tableBucketARN=arn, namespace="ns", name="orders",
                               format="ICEBERG")
            assert ei.value.response["Error"]["Code"] == "ConflictException"
            assert "renamed table" in ei.value.response["Error"]["Message"]
            assert status_of(c.update_table_metadata_location, tableBucketARN=arn,
                             namespace="ns", name="orders", versionToken=u["versionToken"],
                             metadataLocation="s3://ren/x") == (404, "NotFoundException")
    # back at its first name the table is one directory again
    assert T_XATTR in xattr_names(filer, "/buckets/ren/ns/orders")
    assert filer.post("/.api/v1/lookup", json={"path": "/buckets/ren/archive/o3"}).status_code \
        == 404
    # a commit after the renames lands; a rename onto a taken name is a conflict
    c.create_table(tableBucketARN=arn, namespace="archive", name="taken", format="ICEBERG")
    aws_cli(m.catalog_port, "rename-table", "--table-bucket-arn", arn, "--namespace", "ns",
            "--name", "orders", "--new-namespace-name", "archive", "--new-name", "o4")
    assert status_of(c.rename_table, tableBucketARN=arn, namespace="archive", name="o4",
                     newName="taken") == (409, "ConflictException")
    tok = c.get_table(tableArn=tarn)["versionToken"]
    u2 = c.update_table_metadata_location(tableBucketARN=arn, namespace="archive", name="o4",
                                          versionToken=tok,
                                          metadataLocation="s3://ren/" + meta_key)
    assert u2["versionToken"] != tok
    reachable({"namespace": "archive", "name": "o4"})
    # deleting the renamed table deletes its files: the old namespace is empty again
    assert status_of(c.delete_namespace, tableBucketARN=arn, namespace="ns") == \
        (409, "ConflictException")
    c.delete_table(tableBucketARN=arn, namespace="archive", name="o4")
    assert filer.post("/.api/v1/lookup", json={"path": "/buckets/ren/ns/orders"}).status_code \
        == 404
    c.delete_namespace(tableBucketARN=arn, namespace="ns")
