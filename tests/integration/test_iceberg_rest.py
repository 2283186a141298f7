"""The Iceberg REST catalog of the catalog port (docs/catalog.md) with real clients:
pyiceberg's RestCatalog (namespaces, tables, appends, scans, evolution, time travel,
rename, drop, register, staged create, concurrent writers, views), `requests` for the
protocol's corners and bad input (config and its endpoints, view commits and renames),
boto3's s3tables and s3 clients for the same tables seen through the S3 Tables API and
the S3 gateway, and a commit with the filer down."""
import base64
import contextlib
import json
import socket
import threading
import types
import uuid

import boto3
import pyarrow as pa
import pytest
import requests
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (CommitFailedException, NamespaceNotEmptyError,
                                  NoSuchNamespaceError, NoSuchTableError,
                                  TableAlreadyExistsError)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

from filer_fixtures import start_mini_with_filer

T_XATTR = "weedfs.catalog.table"
US = "\x1f"


class Env:
    def __init__(self, m, filer):
        self.m, self.filer = m, filer
        self.uri = "http://127.0.0.1:%d" % m.catalog_port
        kw = dict(endpoint_url=self.uri, region_name="us-east-1", aws_access_key_id="x",
                  aws_secret_access_key="y")
        self.tables = boto3.client("s3tables", **kw)
        kw["endpoint_url"] = "http://127.0.0.1:%d" % m.s3_port
        self.s3 = boto3.client("s3", **kw)

    def bucket(self, name):
        return self.tables.create_table_bucket(name=name)["arn"]

    def catalog(self, warehouse):
        return RestCatalog("w-" + uuid.uuid4().hex[:8], uri=self.uri, warehouse=warehouse,
                           **{"s3.access-key-id": "x", "s3.secret-access-key": "y",
                              "s3.region": "us-east-1"})

    def url(self, path):
        return self.uri + "/v1/" + path

    def entry(self, path):
        """The filer's entry at path (its xattrs), or None when there is none."""
        r = self.filer.post("/.api/v1/lookup", json={"path": path})
        if r.status_code == 404:
            return None
        assert r.status_code == 200, r.text
        return r.json()

    def files_under(self, path):
        """Every file name below path (recursively), through the filer's JSON listing."""
        out = []
        r = self.filer.get(path + "/", headers={"Accept": "application/json"})
        if r.status_code == 404:
            return out
        assert r.status_code == 200, r.text
        for e in r.json()["Entries"] or []:
            p = e["FullPath"]
            if e["Mode"] & 0o40000:
                out += self.files_under(p)
            else:
                out.append(p)
        return out


@pytest.fixture(scope="module")
def env(module_cluster):
    m, filer = start_mini_with_filer(module_cluster)
    e = Env(m, filer)
    e.bucket("lake")
    return e


def schema():
    return Schema(NestedField(1, "id", IntegerType(), required=False),
                  NestedField(2, "region", StringType(), required=False))


def rows(ids, region):
    return pa.table({"id": pa.array(ids, pa.int32()), "region": [region] * len(ids)})


def err_of(r, status, type_):
    assert r.status_code == status, "%s %s" % (r.status_code, r.text)
    e = r.json()["error"]
    assert e["type"] == type_ and e["code"] == status and e["message"], e
    return e


def loc_of(env, prefix, ns, name):
    r = requests.get(env.url("%s/namespaces/%s/tables/%s" % (prefix, ns, name)))
    assert r.status_code == 200, r.text
    return r.json()["metadata-location"]


# ---- pyiceberg ----

def test_namespaces(env):
    cat = env.catalog("lake")
    cat.create_namespace("nsa", {"owner": "ann", "team": "x"})
    cat.create_namespace(("nsa", "b"))
    cat.create_namespace(("nsa", "b", "c"))
    cat.create_namespace("nsz")
    top = cat.list_namespaces()
    assert ("nsa",) in top and ("nsz",) in top and ("nsa", "b") not in top
    assert cat.list_namespaces("nsa") == [("nsa", "b")]
    assert cat.list_namespaces(("nsa", "b")) == [("nsa", "b", "c")]
    props = cat.load_namespace_properties("nsa")
    assert props["owner"] == "ann" and props["team"] == "x"
    s = cat.update_namespace_properties("nsa", removals={"team", "absent"},
                                        updates={"owner": "bob", "tier": "1"})
    assert sorted(s.removed) == ["team"] and sorted(s.updated) == ["owner", "tier"]
    assert sorted(s.missing) == ["absent"]
    props = cat.load_namespace_properties("nsa")
    assert props.get("owner") == "bob" and props.get("tier") == "1" and "team" not in props
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("nsa")
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace(("nsa", "b"))
    cat.create_table("nsz.t", schema())
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("nsz")
    # a drop keeping the files keeps them in the namespace's directory: still refused
    cat.drop_table("nsz.t")
    assert cat.list_tables("nsz") == []
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("nsz")
    cat.create_table("nsz.t", schema())
    cat.purge_table("nsz.t")
    cat.drop_namespace("nsz")
    cat.drop_namespace(("nsa", "b", "c"))
    assert cat.list_namespaces(("nsa", "b")) == []
    with pytest.raises(NoSuchNamespaceError):
        cat.load_namespace_properties("nsz")
    assert ("nsz",) not in cat.list_namespaces()


def test_table_data_evolution_and_time_travel(env):
    cat = env.catalog("lake")
    cat.create_namespace("sales")
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))
    t = cat.create_table("sales.orders", schema(), partition_spec=spec,
                         properties={"k": "v"})
    assert t.metadata_location.startswith("s3://lake/sales/orders/metadata/")
    t.append(rows([1, 2, 3], "eu"))
    s1 = t.current_snapshot().snapshot_id
    t.append(rows([4, 5], "us"))
    t = cat.load_table("sales.orders")
    assert t.properties["k"] == "v"
    assert sorted(r["id"] for r in t.scan(row_filter="region = 'eu'").to_arrow().to_pylist()) \
        == [1, 2, 3]
    assert t.scan(row_filter="id >= 4").to_arrow().num_rows == 2
    # time travel: the first snapshot has the first append only
    assert t.scan(snapshot_id=s1).to_arrow().num_rows == 3
    assert len(t.snapshots()) == 2

    # schema evolution: add, rename, widen int -> long
    with t.update_schema() as u:
        u.add_column("qty", LongType())
        u.rename_column("region", "area")
        u.update_column("id", field_type=LongType())
    t = cat.load_table("sales.orders")
    f = {x.name: x for x in t.schema().fields}
    assert set(f) == {"id", "area", "qty"} and isinstance(f["id"].field_type, LongType)
    assert f["area"].field_id == 2
    # partition evolution: a bucket of id beside the region
    with t.update_spec() as u:
        u.add_identity("qty")
    t = cat.load_table("sales.orders")
    assert len(t.specs()) == 2 and len(t.spec().fields) == 2
    t.append(pa.table({"id": pa.array([6], pa.int64()), "area": ["eu"],
                       "qty": pa.array([7], pa.int64())}))
    t = cat.load_table("sales.orders")
    assert t.scan().to_arrow().num_rows == 6
    assert t.scan(row_filter="area = 'eu'").to_arrow().num_rows == 4
    assert t.scan(snapshot_id=s1).to_arrow().num_rows == 3
    # overwrite replaces everything
    t.overwrite(pa.table({"id": pa.array([9], pa.int64()), "area": ["eu"],
                          "qty": pa.array([5], pa.int64())}))
    t = cat.load_table("sales.orders")
    assert t.scan().to_arrow().to_pylist() == [{"id": 9, "area": "eu", "qty": 5}]
    assert t.scan(snapshot_id=s1).to_arrow().num_rows == 3
    n_all = len(t.metadata.snapshots)
    assert n_all >= 4

    # snapshots=refs: only what a ref points at
    r = requests.get(env.url("lake/namespaces/sales/tables/orders"),
                     params={"snapshots": "refs"})
    assert r.status_code == 200, r.text
    md = r.json()["metadata"]
    ref_ids = {x["snapshot-id"] for x in md["refs"].values()}
    assert {x["snapshot-id"] for x in md["snapshots"]} == ref_ids
    assert md["current-snapshot-id"] in ref_ids
    r = requests.get(env.url("lake/namespaces/sales/tables/orders"),
                     params={"snapshots": "all"})
    assert len(r.json()["metadata"]["snapshots"]) == n_all
    r = requests.get(env.url("lake/namespaces/sales/tables/orders"),
                     params={"snapshots": "some"})
    err_of(r, 400, "BadRequestException")

    # exists: HEAD 204 / 404
    assert cat.table_exists("sales.orders") and not cat.table_exists("sales.nope")
    assert requests.head(env.url("lake/namespaces/sales/tables/orders")).status_code == 204
    assert requests.head(env.url("lake/namespaces/sales/tables/nope")).status_code == 404


def test_rename_and_the_old_name(env):
    cat = env.catalog("lake")
    cat.create_namespace("rn1")
    cat.create_namespace("rn2")
    t = cat.create_table("rn1.t", schema())
    t.append(rows([1, 2], "eu"))
    cat.rename_table("rn1.t", "rn1.u")
    assert cat.load_table("rn1.u").scan().to_arrow().num_rows == 2
    with pytest.raises(NoSuchTableError):
        cat.load_table("rn1.t")
    # across namespaces
    cat.rename_table("rn1.u", "rn2.v")
    t = cat.load_table("rn2.v")
    assert t.scan().to_arrow().num_rows == 2
    t.append(rows([3], "us"))
    assert cat.load_table("rn2.v").scan().to_arrow().num_rows == 3
    assert cat.list_tables("rn1") == [] and cat.list_tables("rn2") == [("rn2", "v")]
    # the old directory holds v's files: marked, no table, and no new table may take it
    e = env.entry("/buckets/lake/rn1/t")
    mark = json.loads(base64.b64decode(e["xattrs"][T_XATTR]))
    assert mark["storageOf"].startswith("arn:aws:s3tables:") and "metadataLocation" not in mark
    assert not cat.table_exists("rn1.t")
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("rn1.t", schema())
    # the intermediate name held nothing of the files: gone, and free again
    assert env.entry("/buckets/lake/rn1/u") is None
    cat.create_table("rn1.u", schema())
    assert cat.load_table("rn1.u").scan().to_arrow().num_rows == 0
    # renaming onto an existing table is refused, a missing source is 404
    with pytest.raises(TableAlreadyExistsError):
        cat.rename_table("rn1.u", "rn2.v")
    with pytest.raises(NoSuchTableError):
        cat.rename_table("rn1.nope", "rn1.other")
    with pytest.raises(NoSuchNamespaceError):
        cat.rename_table("rn1.u", "missing.u")
    assert cat.load_table("rn2.v").scan().to_arrow().num_rows == 3
    # a purge of the renamed table takes its files, in the old directory
    assert env.files_under("/buckets/lake/rn1/t/data")
    cat.purge_table("rn2.v")
    assert env.entry("/buckets/lake/rn2/v") is None
    assert env.files_under("/buckets/lake/rn1/t") == []
    cat.create_table("rn1.t", schema())
    assert cat.load_table("rn1.t").scan().to_arrow().num_rows == 0


def test_drop_purge_and_keep(env):
    cat = env.catalog("lake")
    cat.create_namespace("dr")
    t = cat.create_table("dr.p", schema())
    t.append(rows([1], "eu"))
    assert env.files_under("/buckets/lake/dr/p/data")
    cat.purge_table("dr.p")
    assert env.entry("/buckets/lake/dr/p") is None
    assert not cat.table_exists("dr.p")

    t = cat.create_table("dr.k", schema())
    t.append(rows([1, 2], "eu"))
    meta_loc = cat.load_table("dr.k").metadata_location
    data = env.files_under("/buckets/lake/dr/k/data")
    assert data
    cat.drop_table("dr.k")
    assert not cat.table_exists("dr.k")
    assert env.files_under("/buckets/lake/dr/k/data") == data
    # the same name again adopts the directory: a new, empty table
    t = cat.create_table("dr.k", schema())
    assert t.scan().to_arrow().num_rows == 0
    assert t.metadata_location != meta_loc
    # register the old metadata file under a new name: its data is back
    r = cat.register_table("dr.back", meta_loc)
    assert r.metadata_location == meta_loc
    assert cat.load_table("dr.back").scan().to_arrow().num_rows == 2
    with pytest.raises(TableAlreadyExistsError):
        cat.register_table("dr.back", meta_loc)


def test_stage_create(env):
    cat = env.catalog("lake")
    cat.create_namespace("st")
    tx = cat.create_table_transaction("st.s", schema())
    assert not cat.table_exists("st.s")
    tx.append(rows([1, 2, 3], "eu"))
    tx.commit_transaction()
    t = cat.load_table("st.s")
    assert t.scan().to_arrow().num_rows == 3 and len(t.snapshots()) == 1
    # a second staged create of the same name loses at its commit
    tx = cat.create_table_transaction("st.s", schema())
    with pytest.raises((CommitFailedException, TableAlreadyExistsError)):
        tx.commit_transaction()
    assert cat.load_table("st.s").scan().to_arrow().num_rows == 3


# ---- protocol and bad input ----

def test_errors_and_names(env):
    u = env.url
    r = requests.get(u("config"), params={"warehouse": "lake"})
    assert r.status_code == 200 and r.json()["overrides"]["prefix"] == "lake"
    requests.post(u("lake/namespaces"), json={"namespace": ["pe"]})
    e = err_of(requests.post(u("lake/namespaces"), data=b"{not json"), 400,
               "BadRequestException")
    assert set(e) == {"message", "type", "code"}
    err_of(requests.post(u("lake/namespaces/pe/tables"), data=b"[1,"), 400,
           "BadRequestException")
    for bad in ["a/b", "..", ".", "a\x00b", "Upper", "", "-x", "x" * 256]:
        r = requests.post(u("lake/namespaces"), json={"namespace": [bad]})
        err_of(r, 400, "BadRequestException")
        r = requests.post(u("lake/namespaces/pe/tables"),
                          json={"name": bad, "schema": schema_json()})
        err_of(r, 400, "BadRequestException")
    # a NUL in the path is refused by the HTTP layer already (a plain 400)
    assert requests.get(u("lake/namespaces/a%00b")).status_code == 400
    assert requests.get(u("lake/namespaces/pe/tables/a%00b")).status_code == 400
    for raw in ["a%2Fb", "%2E%2E", "%2E", "pe%1F", "%1Fpe", "pe%1F%1Fx", "PE", "pe.x"]:
        r = requests.get(u("lake/namespaces/" + raw))
        err_of(r, 400, "BadRequestException")
        r = requests.get(u("lake/namespaces/" + raw + "/tables/t"))
        err_of(r, 400, "BadRequestException")
    r = requests.get(u("lake/namespaces/pe/tables/a%2Fb"))
    err_of(r, 400, "BadRequestException")
    r = requests.get(u("lake/namespaces/pe/tables/T"))
    err_of(r, 400, "BadRequestException")
    # nothing was made by any of it
    assert env.files_under("/buckets/lake/pe") == []
    # the missing: namespace vs table
    err_of(requests.post(u("lake/namespaces/nons/tables"),
                         json={"name": "t", "schema": schema_json()}), 404,
           "NoSuchNamespaceException")
    err_of(requests.get(u("lake/namespaces/pe/tables/nope")), 404, "NoSuchTableException")
    err_of(requests.get(u("lake/namespaces/nons/tables/nope")), 404, "NoSuchTableException")
    err_of(requests.get(u("lake/namespaces/nons")), 404, "NoSuchNamespaceException")
    r = requests.get(u("nobucket/namespaces"))
    assert r.status_code == 404 and r.json()["error"]["type"].startswith("NoSuch"), r.text
    # metrics
    requests.post(u("lake/namespaces/pe/tables"), json={"name": "m", "schema": schema_json()})
    r = requests.post(u("lake/namespaces/pe/tables/m/metrics"),
                      json={"report-type": "scan-report", "table-name": "pe.m"})
    assert r.status_code == 204, r.text
    err_of(requests.post(u("lake/namespaces/pe/tables/nom/metrics"),
                         json={"report-type": "scan-report"}), 404, "NoSuchTableException")
    # a location outside the table's directory
    for loc in ["s3://lake/pe/other", "s3://other/pe/x", "s3://lake/pe/x/../../y"]:
        r = requests.post(u("lake/namespaces/pe/tables"),
                          json={"name": "x", "schema": schema_json(), "location": loc})
        err_of(r, 403, "ForbiddenException")
    r = requests.post(u("lake/namespaces/pe/tables"),
                      json={"name": "x", "schema": schema_json(),
                            "properties": {"write.metadata.path": "s3://lake/elsewhere"}})
    err_of(r, 403, "ForbiddenException")
    assert requests.head(u("lake/namespaces/pe/tables/x")).status_code == 404
    before = loc_of(env, "lake", "pe", "m")
    for loc in ["s3://lake/pe/m/../x", "s3://lake/pe/m/./x", "s3://lake/pe/m//x",
                "s3://lake/pe/mx"]:
        r = commit(env, "lake", "pe", "m", [], [{"action": "set-location", "location": loc}])
        err_of(r, 403, "ForbiddenException")
    r = commit(env, "lake", "pe", "m", [], [{"action": "set-location",
                                              "location": "s3://lake/pe/elsewhere"}])
    err_of(r, 403, "ForbiddenException")
    r = commit(env, "lake", "pe", "m", [], [{"action": "set-properties", "updates": {
        "write.metadata.path": "s3://lake/zz"}}])
    err_of(r, 403, "ForbiddenException")
    assert loc_of(env, "lake", "pe", "m") == before


def test_page_sizes_and_paging(env):
    u = env.url
    requests.post(u("lake/namespaces"), json={"namespace": ["pg"]})
    for v in ["0", "100000", "x", "-1", ""]:
        r = requests.get(u("lake/namespaces"), params={"pageSize": v})
        err_of(r, 400, "BadRequestException")
        r = requests.get(u("lake/namespaces/pg/tables"), params={"pageSize": v})
        err_of(r, 400, "BadRequestException")
    names = ["n%02d" % i for i in range(25)]
    for n in names:
        r = requests.post(u("lake/namespaces"), json={"namespace": ["pg", n]})
        assert r.status_code == 200, r.text
        r = requests.post(u("lake/namespaces/pg/tables"),
                          json={"name": "t" + n, "schema": schema_json()})
        assert r.status_code == 200, r.text

    def pages(path, key):
        got, token, n = [], None, 0
        while True:
            p = {"pageSize": 10, "parent": "pg"} if key == "namespaces" else {"pageSize": 10}
            if token:
                p["pageToken"] = token
            r = requests.get(u(path), params=p)
            assert r.status_code == 200, r.text
            j = r.json()
            assert len(j[key]) <= 10
            got += j[key]
            n += 1
            token = j.get("next-page-token")
            if not token:
                return got, n
            assert n < 10

    got, n = pages("lake/namespaces", "namespaces")
    assert got == [["pg", x] for x in names] and n in (3, 4)
    got, n = pages("lake/namespaces/pg/tables", "identifiers")
    assert [x["name"] for x in got] == ["t" + x for x in names] and n in (3, 4)
    assert all(x["namespace"] == ["pg"] for x in got)
    r = requests.get(u("lake/namespaces/pg/tables"), params={"pageToken": "\x01bogus/.."})
    assert r.status_code in (200, 400), r.text


def test_bodies_commits_and_transactions(env):
    u = env.url
    requests.post(u("lake/namespaces"), json={"namespace": ["cm"]})
    for n in ("a", "b"):
        r = requests.post(u("lake/namespaces/cm/tables"), json={"name": n, "schema": schema_json()})
        assert r.status_code == 200, r.text
    a0, b0 = loc_of(env, "lake", "cm", "a"), loc_of(env, "lake", "cm", "b")
    # oversized
    big = json.dumps({"namespace": ["big"], "properties": {"x": "y" * (1 << 20) + "z"}})
    r = requests.post(u("lake/namespaces"), data=big)
    assert r.status_code == 413, r.status_code
    assert requests.get(u("lake/namespaces/big")).status_code == 404
    # unknown requirement and update types change nothing
    r = commit(env, "lake", "cm", "a", [{"type": "assert-bogus"}], [])
    err_of(r, 400, "BadRequestException")
    r = commit(env, "lake", "cm", "a", [], [{"action": "bogus-update"}])
    err_of(r, 400, "BadRequestException")
    r = commit(env, "lake", "cm", "a", [], [{"action": "set-properties", "updates": {"k": "v"}},
                                             {"action": "bogus-update"}])
    err_of(r, 400, "BadRequestException")
    r = commit(env, "lake", "cm", "a", [], {"not": "a list"})
    err_of(r, 400, "BadRequestException")
    assert loc_of(env, "lake", "cm", "a") == a0
    # a failing requirement: 409 CommitFailedException
    r = commit(env, "lake", "cm", "a", [{"type": "assert-table-uuid", "uuid": str(uuid.uuid4())}],
               [{"action": "set-properties", "updates": {"k": "v"}}])
    err_of(r, 409, "CommitFailedException")
    r = commit(env, "lake", "cm", "a", [{"type": "assert-ref-snapshot-id", "ref": "main",
                                          "snapshot-id": 12345}],
               [{"action": "set-properties", "updates": {"k": "v"}}])
    err_of(r, 409, "CommitFailedException")
    assert loc_of(env, "lake", "cm", "a") == a0
    # the body names another table than the path
    r = requests.post(u("lake/namespaces/cm/tables/a"), json={
        "identifier": {"namespace": ["cm"], "name": "b"}, "requirements": [],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    err_of(r, 400, "BadRequestException")
    assert loc_of(env, "lake", "cm", "a") == a0 and loc_of(env, "lake", "cm", "b") == b0
    # a good commit moves it
    r = commit(env, "lake", "cm", "a", [], [{"action": "set-properties", "updates": {"k": "1"}}])
    assert r.status_code == 200, r.text
    a1 = r.json()["metadata-location"]
    assert a1 != a0 and loc_of(env, "lake", "cm", "a") == a1

    def change(n, reqs, v):
        return {"identifier": {"namespace": ["cm"], "name": n}, "requirements": reqs,
                "updates": [{"action": "set-properties", "updates": {"tx": v}}]}
    tx = u("lake/transactions/commit")
    r = requests.post(tx, json={"table-changes": [change("a", [], "1"), change("b", [], "1")]})
    assert r.status_code == 204, r.text
    a2, b2 = loc_of(env, "lake", "cm", "a"), loc_of(env, "lake", "cm", "b")
    assert a2 != a1 and b2 != b0
    for t in ("a", "b"):
        r = requests.get(u("lake/namespaces/cm/tables/" + t))
        assert r.json()["metadata"]["properties"]["tx"] == "1"
    stale = [{"type": "assert-table-uuid", "uuid": str(uuid.uuid4())}]
    r = requests.post(tx, json={"table-changes": [change("a", [], "2"), change("b", stale, "2")]})
    err_of(r, 409, "CommitFailedException")
    r = requests.post(tx, json={"table-changes": [change("a", [], "2"), change("nope", [], "2")]})
    assert r.status_code in (404, 409), r.text
    r = requests.post(tx, json={"table-changes": [change("a", [], "2"),
                                                  change("b", [{"type": "nonsense"}], "2")]})
    err_of(r, 400, "BadRequestException")
    for body in ({"table-changes": "x"}, {"table-changes": []}, [], "x", None):
        err_of(requests.post(tx, json=body), 400, "BadRequestException")
    err_of(requests.post(tx, json={"table-changes": [change("a", [], "3"), change("a", [], "4")]}),
           400, "BadRequestException")
    assert loc_of(env, "lake", "cm", "a") == a2 and loc_of(env, "lake", "cm", "b") == b2


def schema_json():
    return {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "int", "required": False}]}


def commit(env, prefix, ns, name, reqs, updates):
    return requests.post(env.url("%s/namespaces/%s/tables/%s" % (prefix, ns, name)), json={
        "identifier": {"namespace": ns.split("."), "name": name},
        "requirements": reqs, "updates": updates})


# ---- concurrency ----

def test_concurrent_appends(env):
    cat = env.catalog("lake")
    cat.create_namespace("cc")
    cat.create_table("cc.t", schema())
    n, errors, retries = 8, [], [0]

    def writer(i):
        try:
            c = env.catalog("lake")
            while True:
                t = c.load_table("cc.t")
                try:
                    t.append(rows(list(range(i * 100, i * 100 + i + 1)), "r%d" % i))
                    return
                except CommitFailedException:
                    retries[0] += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
    ths = [threading.Thread(target=writer, args=(i,)) for i in range(n)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(120)
    assert not errors, errors
    t = cat.load_table("cc.t")
    assert t.scan().to_arrow().num_rows == sum(i + 1 for i in range(n))
    assert len(t.snapshots()) == n
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == \
        sorted(x for i in range(n) for x in range(i * 100, i * 100 + i + 1))


def test_concurrent_creates(env):
    env.catalog("lake").create_namespace("cr")
    barrier = threading.Barrier(16)
    out = []

    def creator():
        c = env.catalog("lake")
        barrier.wait()
        try:
            c.create_table("cr.one", schema())
            out.append("ok")
        except TableAlreadyExistsError:
            out.append("exists")
        except Exception as e:  # noqa: BLE001 - reported below
            out.append(repr(e))
    ths = [threading.Thread(target=creator) for _ in range(16)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(60)
    assert sorted(out) == ["exists"] * 15 + ["ok"], out
    assert env.catalog("lake").load_table("cr.one").scan().to_arrow().num_rows == 0


# ---- the same tables through S3 Tables and S3 ----

def test_cross_view(env):
    arn = env.bucket("xview")
    cat = env.catalog("xview")
    cat.create_namespace("ns")
    t = cat.create_table("ns.tab", schema())
    t.append(rows([1, 2, 3], "eu"))
    t = cat.load_table("ns.tab")
    listed = env.tables.list_tables(tableBucketARN=arn, namespace="ns")["tables"]
    assert [x["name"] for x in listed] == ["tab"]
    g = env.tables.get_table_metadata_location(tableBucketARN=arn, namespace="ns", name="tab")
    assert g["metadataLocation"] == t.metadata_location
    keys = [o["Key"] for o in env.s3.list_objects_v2(Bucket="xview", Prefix="ns/tab/data/")
            .get("Contents", [])]
    assert keys and all(k.endswith(".parquet") for k in keys)
    body = env.s3.get_object(Bucket="xview", Key=keys[0])["Body"].read()
    assert body[:4] == b"PAR1" and body[-4:] == b"PAR1"
    mkey = t.metadata_location[len("s3://xview/"):]
    meta = json.loads(env.s3.get_object(Bucket="xview", Key=mkey)["Body"].read())
    assert meta["current-snapshot-id"] == t.current_snapshot().snapshot_id
    # a commit through S3 Tables' pointer is what pyiceberg loads next
    tok = env.tables.get_table(tableBucketARN=arn, namespace="ns", name="tab")["versionToken"]
    t.append(rows([4], "us"))
    g2 = env.tables.get_table_metadata_location(tableBucketARN=arn, namespace="ns", name="tab")
    assert g2["metadataLocation"] == cat.load_table("ns.tab").metadata_location
    assert g2["versionToken"] != tok


# ---- views ----

def view_version(sql, ns, schema_id=0, version_id=1):
    from pyiceberg.view.metadata import SQLViewRepresentation, ViewRepresentation, ViewVersion
    return ViewVersion(**{"version-id": version_id, "schema-id": schema_id,
                          "representations": [ViewRepresentation(SQLViewRepresentation(
                              type="sql", sql=sql, dialect="spark"))],
                          "default-namespace": [ns], "summary": {"engine": "test"}})


def view_body(name, sql="SELECT 1 AS id"):
    return {"name": name, "schema": schema_json(),
            "view-version": {"version-id": 1, "schema-id": 0, "timestamp-ms": 1,
                             "summary": {}, "default-namespace": ["vw"],
                             "representations": [{"type": "sql", "sql": sql,
                                                  "dialect": "spark"}]}}


def view_at(env, ns, name):
    r = requests.get(env.url("lake/namespaces/%s/views/%s" % (ns, name)))
    assert r.status_code == 200, r.text
    return r.json()


def test_views(env):
    from pyiceberg.exceptions import NoSuchViewError, ViewAlreadyExistsError
    cat = env.catalog("lake")
    cat.create_namespace("vw")
    cat.create_namespace("vw2")
    cat.create_table("vw.t", schema())
    v = cat.create_view("vw.v1", schema(), view_version("SELECT id FROM vw.t", "vw"),
                        properties={"comment": "first"})
    assert v.metadata.location == "s3://lake/vw/v1" and v.properties["comment"] == "first"
    assert v.current_version().representations[0].root.sql == "SELECT id FROM vw.t"
    # a view is no table, a table no view
    assert cat.list_views("vw") == [("vw", "v1")] and cat.list_tables("vw") == [("vw", "t")]
    assert cat.view_exists("vw.v1") and not cat.view_exists("vw.t")
    assert not cat.view_exists("vw.nope") and not cat.table_exists("vw.v1")
    with pytest.raises(NoSuchViewError):
        cat.load_view("vw.t")
    with pytest.raises(NoSuchViewError):
        cat.load_view("vw.nope")
    with pytest.raises(NoSuchTableError):
        cat.load_table("vw.v1")
    err_of(requests.get(env.url("lake/namespaces/vw/views/nope")), 404, "NoSuchViewException")
    err_of(requests.get(env.url("lake/namespaces/vw/views/t")), 404, "NoSuchViewException")
    err_of(requests.get(env.url("lake/namespaces/vw/tables/v1")), 404, "NoSuchTableException")
    assert requests.head(env.url("lake/namespaces/vw/views/v1")).status_code == 204
    assert requests.head(env.url("lake/namespaces/vw/views/t")).status_code == 404
    # one name space for both: a view and a table of the same name are refused
    with pytest.raises(ViewAlreadyExistsError):
        cat.create_view("vw.t", schema(), view_version("SELECT 2", "vw"))
    with pytest.raises(ViewAlreadyExistsError):
        cat.create_view("vw.v1", schema(), view_version("SELECT 2", "vw"))
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("vw.v1", schema())
    err_of(requests.post(env.url("lake/namespaces/vw/views"), json=view_body("t")), 409,
           "AlreadyExistsException")
    err_of(requests.post(env.url("lake/namespaces/nons/views"), json=view_body("x")), 404,
           "NoSuchNamespaceException")
    assert cat.load_table("vw.t").scan().to_arrow().num_rows == 0
    first = view_at(env, "vw", "v1")
    loc0, meta0 = first["metadata-location"], first["metadata"]
    assert loc0.startswith("s3://lake/vw/v1/metadata/00000-")
    assert loc0.endswith(".metadata.json")
    vuuid = meta0["view-uuid"]

    # replace: a new schema and version, made current, under an assert-view-uuid
    def replace(reqs, updates):
        return requests.post(env.url("lake/namespaces/vw/views/v1"), json={
            "identifier": {"namespace": ["vw"], "name": "v1"},
            "requirements": reqs, "updates": updates})
    new_schema = {"type": "struct", "schema-id": 1, "fields": [
        {"id": 1, "name": "id", "type": "int", "required": False},
        {"id": 2, "name": "n", "type": "long", "required": False}]}
    new_version = {"version-id": 2, "schema-id": -1, "timestamp-ms": 1700000000000,
                   "summary": {"engine": "test"}, "default-namespace": ["vw"],
                   "representations": [{"type": "sql", "dialect": "spark",
                                        "sql": "SELECT id, count(*) AS n FROM vw.t GROUP BY id"}]}
    good = [{"action": "add-schema", "schema": new_schema},
            {"action": "add-view-version", "view-version": new_version},
            {"action": "set-current-view-version", "view-version-id": -1},
            {"action": "set-properties", "updates": {"comment": "second"}}]
    # bad commits first: each 400 or 409, nothing changed
    stale = [{"type": "assert-view-uuid", "uuid": str(uuid.uuid4())}]
    err_of(replace(stale, good), 409, "CommitFailedException")
    err_of(replace([{"type": "assert-table-uuid", "uuid": vuuid}], good), 400,
           "BadRequestException")
    err_of(replace([], good + [{"action": "bogus-update"}]), 400, "BadRequestException")
    err_of(replace([], [{"action": "set-current-view-version", "view-version-id": 9}]), 400,
           "BadRequestException")
    err_of(replace([], [{"action": "add-view-version", "view-version": dict(
        new_version, **{"schema-id": 7})}]), 400, "BadRequestException")
    err_of(replace([], [{"action": "add-snapshot", "snapshot": {}}]), 400,
           "BadRequestException")
    err_of(requests.post(env.url("lake/namespaces/vw/views/v1"), json={"updates": "x"}), 400,
           "BadRequestException")
    err_of(requests.post(env.url("lake/namespaces/vw/views/v1"), data=b"{"), 400,
           "BadRequestException")
    err_of(replace([], [{"action": "set-location", "location": "s3://lake/elsewhere"}]), 403,
           "ForbiddenException")
    err_of(requests.post(env.url("lake/namespaces/vw/views/nope"), json={
        "requirements": [], "updates": good}), 404, "NoSuchViewException")
    # the body names another view than the path
    r = requests.post(env.url("lake/namespaces/vw/views/v1"), json={
        "identifier": {"namespace": ["vw"], "name": "other"}, "requirements": [],
        "updates": good})
    err_of(r, 400, "BadRequestException")
    assert view_at(env, "vw", "v1")["metadata-location"] == loc0
    # the good one
    r = replace([{"type": "assert-view-uuid", "uuid": vuuid}], good)
    assert r.status_code == 200, r.text
    loc1 = r.json()["metadata-location"]
    assert loc1 != loc0 and loc1.startswith("s3://lake/vw/v1/metadata/00001-")
    v = cat.load_view("vw.v1")
    assert v.metadata.current_version_id == 2 and len(v.versions) == 2
    assert [f.name for f in v.schema().fields] == ["id", "n"]
    assert "GROUP BY" in v.current_version().representations[0].root.sql
    assert v.properties["comment"] == "second" and str(v.metadata.view_uuid) == vuuid
    assert [e.version_id for e in v.history()] == [1, 2]
    # back to version 1: a third file, the log says so
    r = replace([], [{"action": "set-current-view-version", "view-version-id": 1}])
    assert r.status_code == 200, r.text
    v = cat.load_view("vw.v1")
    assert v.metadata.current_version_id == 1 and [e.version_id for e in v.history()] == [1, 2, 1]
    # the old metadata files are still there, the pointer is the newest
    files = env.files_under("/buckets/lake/vw/v1/metadata")
    assert len(files) == 3 and any(f.endswith(loc1.rsplit("/", 1)[1]) for f in files)

    # rename, across namespaces
    ren = env.url("lake/views/rename")

    def rename(src, dst):
        return requests.post(ren, json={
            "source": {"namespace": [src[0]], "name": src[1]},
            "destination": {"namespace": [dst[0]], "name": dst[1]}})
    err_of(rename(("vw", "nope"), ("vw", "x")), 404, "NoSuchViewException")
    # a table is not renamed by the views' route
    err_of(rename(("vw", "t"), ("vw", "x")), 404, "NoSuchViewException")
    err_of(rename(("vw", "v1"), ("vw", "t")), 409, "AlreadyExistsException")
    err_of(rename(("vw", "v1"), ("nons", "v")), 404, "NoSuchNamespaceException")
    err_of(requests.post(ren, json={"source": "vw.v1"}), 400, "BadRequestException")
    assert cat.view_exists("vw.v1") and cat.table_exists("vw.t")
    r = rename(("vw", "v1"), ("vw2", "v2"))
    assert r.status_code == 204, r.text
    assert not cat.view_exists("vw.v1") and cat.view_exists("vw2.v2")
    assert cat.list_views("vw") == [] and cat.list_views("vw2") == [("vw2", "v2")]
    v = cat.load_view("vw2.v2")
    assert str(v.metadata.view_uuid) == vuuid and len(v.versions) == 2
    # it still commits under its new name
    r = requests.post(env.url("lake/namespaces/vw2/views/v2"), json={
        "requirements": [{"type": "assert-view-uuid", "uuid": vuuid}],
        "updates": [{"action": "set-current-view-version", "view-version-id": 2}]})
    assert r.status_code == 200, r.text
    assert cat.load_view("vw2.v2").metadata.current_version_id == 2
    # the old directory holds v2's files: no new table or view may take it
    with pytest.raises(TableAlreadyExistsError):
        cat.create_table("vw.v1", schema())
    with pytest.raises(ViewAlreadyExistsError):
        cat.create_view("vw.v1", schema(), view_version("SELECT 2", "vw"))
    assert not cat.view_exists("vw.v1") and not cat.table_exists("vw.v1")

    # bad create bodies: 400, nothing made
    bads = [{"name": "b"},
            dict(view_body("b"), schema=None),
            {k: x for k, x in view_body("b").items() if k != "view-version"},
            dict(view_body("b"), **{"view-version": dict(view_body("b")["view-version"],
                                                        representations=[])}),
            dict(view_body("b"), **{"view-version": dict(view_body("b")["view-version"],
                                                        representations=[{"type": "sql"}])}),
            dict(view_body("b"), properties={"k": 1}),
            dict(view_body("b"), location="s3://lake/other/b"),
            dict(view_body("b"), name="B/c"),
            [1], "x"]
    for body in bads:
        r = requests.post(env.url("lake/namespaces/vw/views"), json=body)
        assert r.status_code in (400, 403), "%s %s" % (body, r.text)
        assert r.json()["error"]["type"] in ("BadRequestException", "ForbiddenException")
    err_of(requests.post(env.url("lake/namespaces/vw/views"), data=b"[1,"), 400,
           "BadRequestException")
    assert not cat.view_exists("vw.b") and env.entry("/buckets/lake/vw/b") is None
    assert cat.list_views("vw") == []

    # drop: only views, by the views' route
    with pytest.raises(NoSuchViewError):
        cat.drop_view("vw.t")
    with pytest.raises(NoSuchTableError):
        cat.drop_table("vw2.v2")
    assert cat.table_exists("vw.t") and cat.view_exists("vw2.v2")
    assert len(env.files_under("/buckets/lake/vw/v1/metadata")) == 4
    cat.drop_view("vw2.v2")
    assert not cat.view_exists("vw2.v2") and cat.list_views("vw2") == []
    # a view's files are only its metadata: dropped with it, where they were
    assert env.files_under("/buckets/lake/vw/v1") == []
    assert env.entry("/buckets/lake/vw2/v2") is None
    with pytest.raises(NoSuchViewError):
        cat.drop_view("vw2.v2")
    # the name is free again, for a view or a table
    cat.create_view("vw2.v2", schema(), view_version("SELECT 3", "vw2"))
    cat.drop_view("vw2.v2")
    cat.create_table("vw2.v2", schema())

    # views only in Iceberg table buckets: a Lance one refuses them
    lance = "http://127.0.0.1:%d/v1/namespace/" % env.m.lance_port
    for ns in ("lkview", "lkview$ns"):
        r = requests.post(lance + ns + "/create", json={})
        assert r.status_code == 200, r.text
    r = requests.post(env.url("lkview/namespaces/ns/views"), json=view_body("v"))
    e = err_of(r, 400, "BadRequestException")
    assert "LANCE" in e["message"], e
    err_of(requests.get(env.url("lkview/namespaces/ns/views")), 400, "BadRequestException")
    assert env.entry("/buckets/lkview/ns/v") is None


# ---- config and namespace exists ----

# Every route the catalog serves: (methods, path under /v1/{prefix}), as the spec names
# them in "endpoints" ("METHOD /v1/{prefix}/...").
ROUTES = [
    ("GET POST", "/namespaces"), ("GET HEAD DELETE", "/namespaces/{namespace}"),
    ("POST", "/namespaces/{namespace}/properties"), ("POST", "/namespaces/{namespace}/register"),
    ("GET POST", "/namespaces/{namespace}/tables"),
    ("GET HEAD POST DELETE", "/namespaces/{namespace}/tables/{table}"),
    ("POST", "/namespaces/{namespace}/tables/{table}/metrics"),
    ("POST", "/tables/rename"), ("POST", "/transactions/commit"),
    ("GET POST", "/namespaces/{namespace}/views"),
    ("GET HEAD POST DELETE", "/namespaces/{namespace}/views/{view}"),
    ("POST", "/views/rename"),
]
SERVED = {"%s /v1/{prefix}%s" % (m, path) for ms, path in ROUTES for m in ms.split()}


def test_config(env):
    r = requests.get(env.url("config"), params={"warehouse": "lake"})
    assert r.status_code == 200, r.text
    j = r.json()
    assert j["overrides"] == {"prefix": "lake"}
    d = j["defaults"]
    assert d["s3.endpoint"] == "http://127.0.0.1:%d" % env.m.s3_port
    assert d["s3.path-style-access"] == "true" and d["client.region"] == "us-east-1"
    eps = j["endpoints"]
    assert len(eps) == len(set(eps)) and set(eps) == SERVED
    answers = []
    # each endpoint listed is served: no route-level 404 or 405 for any of them (the
    # names in it do not exist, so what answers is the route's own error)
    for ep in eps:
        method, path = ep.split(" ")
        path = (path.replace("{prefix}", "lake").replace("{namespace}", "nocfg")
                .replace("{table}", "nocfg").replace("{view}", "nocfg"))
        r = requests.request(method, env.uri + path, json={} if method == "POST" else None)
        assert r.status_code not in (405, 501), "%s: %s" % (ep, r.status_code)
        if method != "HEAD" and r.status_code >= 400:
            assert r.json()["error"]["type"] not in ("NotFoundException",
                                                     "MethodNotAllowedException"), ep
        assert r.status_code < 500, "%s: %s %s" % (ep, r.status_code, r.text)
        answers.append((ep, r.status_code))
    assert dict(answers)["POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics"] \
        == 404
    # a route not served is not listed and answers so
    err_of(requests.get(env.url("lake/namespaces/nocfg/tables/t/credentials")), 404,
           "NotFoundException")
    assert not any("credentials" in e or "plan" in e for e in eps)
    # pyiceberg takes the list: the view endpoints are known to it
    from pyiceberg.catalog.rest import Capability
    cat = env.catalog("lake")
    assert Capability.V1_LIST_VIEWS in cat._supported_endpoints
    assert Capability.V1_VIEW_EXISTS in cat._supported_endpoints
    # the warehouse as s3:// and as the bucket's ARN, a missing or absent one
    for wh in ("s3://lake", env.tables.get_table_bucket(
            tableBucketARN=env.bucket("cfgarn"))["arn"]):
        r = requests.get(env.url("config"), params={"warehouse": wh})
        assert r.status_code == 200, r.text
    err_of(requests.get(env.url("config")), 400, "BadRequestException")
    r = requests.get(env.url("config"), params={"warehouse": "nolake"})
    assert r.status_code == 404 and r.json()["error"]["type"].startswith("NoSuch"), r.text
    err_of(requests.post(env.url("config"), params={"warehouse": "lake"}), 405,
           "MethodNotAllowedException")


def test_namespace_exists(env):
    cat = env.catalog("lake")
    cat.create_namespace(("nx", "deep"))  # the parent need not exist on its own
    cat.create_namespace("nx")
    assert cat.namespace_exists("nx") and cat.namespace_exists(("nx", "deep"))
    assert not cat.namespace_exists("nxnope") and not cat.namespace_exists(("nx", "nope"))
    r = requests.head(env.url("lake/namespaces/nx"))
    assert r.status_code == 204 and not r.content
    assert requests.head(env.url("lake/namespaces/nx%1Fdeep")).status_code == 204
    assert requests.head(env.url("lake/namespaces/nxnope")).status_code == 404
    assert requests.head(env.url("lake/namespaces/nx%1Fnope")).status_code == 404
    assert requests.head(env.url("lake/namespaces/a%2Fb")).status_code == 400
    assert requests.head(env.url("nolake/namespaces/nx")).status_code == 404
    cat.drop_namespace(("nx", "deep"))
    assert not cat.namespace_exists(("nx", "deep")) and cat.namespace_exists("nx")
    # a table's directory is no namespace
    cat.create_table("nx.t", schema())
    assert requests.head(env.url("lake/namespaces/nx%1Ft")).status_code == 404


# ---- faults ----

def test_commit_with_the_filer_down(module_cluster):
    """The filer stopped under the catalog: loads and commits answer 503 (the outcome is
    known: nothing was written), never a 409 that would make a client retry at once nor a
    200; once the filer is back the table is as it was, loads, and the retried commit
    lands."""
    from conftest import wait_until
    filer, base, cat, t = fault_stack(module_cluster, "fault")
    tpath = base + "/v1/fault/namespaces/f/tables/t"
    before = requests.get(tpath).json()["metadata-location"]
    body = {"identifier": {"namespace": ["f"], "name": "t"}, "requirements": [],
            "updates": [{"action": "set-properties", "updates": {"during": "outage"}}]}

    filer.daemon.stop()
    r = requests.post(tpath, json=body, timeout=60)
    e = err_of(r, 503, "ServiceUnavailableException")
    assert "filer" in e["message"], e
    err_of(requests.get(tpath, timeout=60), 503, "ServiceUnavailableException")

    module_cluster.restart(filer.daemon)
    wait_until(lambda: requests.get(tpath, timeout=10).status_code == 200,
               what="the catalog reaches the filer again")
    r = requests.get(tpath)
    assert r.json()["metadata-location"] == before
    assert "during" not in r.json()["metadata"]["properties"]
    t = cat.load_table("f.t")
    assert t.scan().to_arrow().num_rows == 2
    # the retries land
    r = requests.post(tpath, json=body, timeout=60)
    assert r.status_code == 200, r.text
    t = cat.load_table("f.t")
    t.append(rows([3], "us"))
    t = cat.load_table("f.t")
    assert t.properties["during"] == "outage" and t.scan().to_arrow().num_rows == 3
    assert len(t.snapshots()) == 2


def fault_stack(cluster, bucket, on_proxy=None):
    """A master, volume server, filer and open gateway of their own (the tests stop or
    cut them), with table f.t in table bucket `bucket` holding two rows. With on_proxy,
    the gateway reaches the filer through a SwapAnswerLost proxy given to on_proxy.
    Returns (filer, catalog URL, pyiceberg catalog, the table)."""
    from filer_fixtures import start_filer
    from s3_fixtures import start_gateway
    from conftest import wait_until
    master = cluster.master()
    cluster.volume(master)
    filer = start_filer(cluster, master)
    via = filer
    if on_proxy:
        proxy = SwapAnswerLost(filer.url)
        on_proxy(proxy)
        via = types.SimpleNamespace(url=proxy.url)
    g = start_gateway(cluster, via).start()
    base = "http://127.0.0.1:%d" % g.catalog_port
    wait_until(lambda: _answers(base + "/v1/config?warehouse=x"), what="the catalog listens")
    boto3.client("s3tables", endpoint_url=base, region_name="us-east-1", aws_access_key_id="x",
                 aws_secret_access_key="y").create_table_bucket(name=bucket)
    cat = RestCatalog(bucket, uri=base, warehouse=bucket,
                      **{"s3.access-key-id": "x", "s3.secret-access-key": "y",
                         "s3.region": "us-east-1"})
    cat.create_namespace("f")
    t = cat.create_table("f.t", schema())
    t.append(rows([1, 2], "eu"))
    return filer, base, cat, t


def _answers(url):
    try:
        return requests.get(url, timeout=5).status_code > 0
    except requests.ConnectionError:
        return False


class SwapAnswerLost:
    """A TCP proxy in front of the filer that, once armed, passes the next table-pointer
    swap (a conditional setXattr of the table attribute) to the filer and drops the
    filer's answer, closing the connection: the swap lands, the catalog never hears so,
    and its filer client repeats the conditional update, which then fails."""

    def __init__(self, target):
        self.target = target
        self.armed, self.dropped = threading.Event(), threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "127.0.0.1:%d" % self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.sock.close()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        host, port = self.target.split(":")
        s = socket.create_connection((host, int(port)))
        drop = threading.Event()

        def up():
            seen = b""
            try:
                while True:
                    d = c.recv(65536)
                    if not d:
                        break
                    if d[:5] in (b"POST ", b"GET /", b"PUT /", b"HEAD ", b"DELET"):
                        seen = b""  # a request starts: one at a time on a connection
                    seen = (seen + d)[-16384:]
                    if self.armed.is_set() and seen.startswith(b"POST /.api/v1/setXattr ") \
                            and b"weedfs.catalog.table" in seen and b"ifEtag" in seen:
                        self.armed.clear()
                        drop.set()
                    s.sendall(d)
            except OSError:
                pass
        threading.Thread(target=up, daemon=True).start()
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                if drop.is_set():
                    self.dropped.set()
                    break
                c.sendall(d)
        except OSError:
            pass
        finally:
            for x in (c, s):  # shutdown, not only close: it wakes the other thread's recv
                with contextlib.suppress(OSError):
                    x.shutdown(socket.SHUT_RDWR)
                x.close()


def test_commit_whose_swap_answer_is_lost(module_cluster):
    """The filer applies a commit's pointer swap but its answer is lost: the catalog's
    filer client repeats the conditional update, which now fails as a lost race. The
    catalog reads the pointer back, finds its own new file there and answers 200; the
    file is kept, the table loads and commits on."""
    proxies = []
    try:
        _, base, cat, t = fault_stack(module_cluster, "lost", proxies.append)
        proxy = proxies[0]
        tpath = base + "/v1/lost/namespaces/f/tables/t"
        proxy.armed.set()
        r = requests.post(tpath, timeout=120, json={
            "requirements": [], "updates": [{"action": "set-properties",
                                             "updates": {"k": "v"}}]})
        assert proxy.dropped.is_set(), "the proxy saw no swap"
        assert r.status_code == 200, r.text
        loc = r.json()["metadata-location"]
        r = requests.get(tpath)
        assert r.status_code == 200, r.text
        assert r.json()["metadata-location"] == loc
        assert r.json()["metadata"]["properties"]["k"] == "v"
        t = cat.load_table("f.t")
        assert t.scan().to_arrow().num_rows == 2
        t.append(rows([3], "us"))
        assert cat.load_table("f.t").scan().to_arrow().num_rows == 3
        # a create whose first pointer swap's answer is lost: made, not a spurious 409
        proxy.dropped.clear()
        proxy.armed.set()
        t = cat.create_table("f.u", schema())
        assert proxy.dropped.is_set()
        assert cat.load_table("f.u").metadata_location == t.metadata_location
        t.append(rows([1], "eu"))
        assert cat.load_table("f.u").scan().to_arrow().num_rows == 1
        # and a register's
        proxy.dropped.clear()
        proxy.armed.set()
        r = cat.register_table("f.r", t.metadata_location)
        assert proxy.dropped.is_set()
        assert cat.load_table("f.r").scan().to_arrow().num_rows == 1
    finally:
        for x in proxies:
            x.close()
