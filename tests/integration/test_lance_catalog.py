"""The weedfs Lance Namespace REST catalog of the Lance port (-lance.port) with real
clients: lance_namespace's REST client (pylance's Rust RestNamespace) for namespaces
(table buckets and the levels below them), declared, registered, deregistered, dropped
and renamed tables; pylance writing and reading the tables at the locations and with
the storage options the catalog vends, and through the catalog itself (namespace_client);
the same datasets opened without the catalog, by s3:// URI with static keys and by path
in weedfs-mount; concurrent appenders and the conditional PUT their commits rely on;
`requests` for bad input and the unsupported data-plane routes.

Markers: none, so these run under the sanitizer builds too."""
import base64
import multiprocessing
import threading
import uuid

import boto3
import botocore.exceptions
import lance
import lance_namespace
import numpy as np
import pyarrow as pa
import pytest
import requests
from lance_namespace import (CreateNamespaceRequest, DeclareTableRequest,
                             DeregisterTableRequest, DescribeNamespaceRequest,
                             DescribeTableRequest, DropNamespaceRequest, DropTableRequest,
                             ListNamespacesRequest, ListTablesRequest, NamespaceExistsRequest,
                             RegisterTableRequest, RenameTableRequest, TableExistsRequest)
from lance_namespace.errors import (NamespaceAlreadyExistsError, NamespaceNotEmptyError,
                                    NamespaceNotFoundError, TableAlreadyExistsError,
                                    TableNotFoundError)

import catalog_clients
from filer_fixtures import start_mini_with_filer
from mount_fixtures import start_mount

BUCKET = "lkb"  # table bucket names are 3-63 characters: "lk" is one short
LOC = "s3://%s/sales/" % BUCKET
DIM = 8
# What every table answer of an open catalog carries in storage_options: where the
# gateway is, and that it takes unsigned requests (vended keys need identities:
# test_catalog_auth.py).
OPEN_OPTIONS = ("aws_endpoint", "aws_region", "allow_http", "aws_skip_signature")


def static_options(s3_port):
    """Storage options for a dataset opened without the catalog: the open gateway's keys."""
    return {"aws_access_key_id": "x", "aws_secret_access_key": "y", "aws_region": "us-east-1",
            "aws_endpoint": "http://127.0.0.1:%d" % s3_port, "allow_http": "true"}


class Env:
    def __init__(self, m, filer):
        self.m, self.filer = m, filer
        self.uri = "http://127.0.0.1:%d" % m.lance_port
        self.s3_endpoint = "http://127.0.0.1:%d" % m.s3_port
        self.s3 = boto3.client("s3", endpoint_url=self.s3_endpoint, region_name="us-east-1",
                               aws_access_key_id="x", aws_secret_access_key="y")
        self.ns = lance_namespace.connect("rest", {"uri": self.uri})

    def static(self):
        return static_options(self.m.s3_port)

    def vended(self, storage_options):
        """A describe/declare answer's storage options, with the endpoint and plain HTTP
        added only where the catalog left them out."""
        opts = dict(storage_options or {})
        for k, v in (("aws_endpoint", self.s3_endpoint), ("allow_http", "true")):
            opts.setdefault(k, v)
        return opts

    def keys(self, prefix, bucket=BUCKET):
        """Every object key under prefix in bucket (all pages)."""
        out, kw = [], {"Bucket": bucket, "Prefix": prefix}
        while True:
            r = self.s3.list_objects_v2(**kw)
            out += [o["Key"] for o in r.get("Contents", [])]
            if not r.get("IsTruncated"):
                return out
            kw["ContinuationToken"] = r["NextContinuationToken"]

    def describe(self, tid, **kw):
        return self.ns.describe_table(DescribeTableRequest(id=tid, **kw))

    def tables(self, nsid, **kw):
        return self.ns.list_tables(ListTablesRequest(id=nsid, **kw)).tables

    def url(self, path):
        return self.uri + path


def rows(lo, n):
    """n rows with ids lo.., x = 10 * id and a random DIM-dim float32 vector."""
    ids = np.arange(lo, lo + n, dtype=np.int64)
    vec = np.random.default_rng(lo).random((n, DIM), dtype=np.float32)
    return pa.table({"id": ids, "x": ids * 10,
                     "vec": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), DIM)})


def ids_of(ds):
    return sorted(ds.to_table(columns=["id"]).column("id").to_pylist())


def lance_err(r, statuses, code):
    """r is a Lance error answer with one of statuses and the JSON code; its body."""
    if isinstance(statuses, int):
        statuses = (statuses,)
    assert r.status_code in statuses, "%s %s" % (r.status_code, r.text[:300])
    j = r.json()
    assert {"code", "error", "detail", "instance"} <= set(j), j
    assert j["code"] == code and isinstance(j["error"], str) and j["error"], j
    assert isinstance(j["instance"], str), j
    return j


def ns_exists(env, nsid):
    try:
        env.ns.namespace_exists(NamespaceExistsRequest(id=nsid))
        return True
    except NamespaceNotFoundError:
        return False


def table_exists(env, tid):
    try:
        env.ns.table_exists(TableExistsRequest(id=tid))
        return True
    except (TableNotFoundError, NamespaceNotFoundError):
        return False


@pytest.fixture(scope="module")
def env(module_cluster):
    m, filer = start_mini_with_filer(module_cluster)
    e = Env(m, filer)
    e.ns.create_namespace(CreateNamespaceRequest(id=[BUCKET]))  # a table bucket
    e.ns.create_namespace(CreateNamespaceRequest(id=[BUCKET, "sales"]))
    return e


@pytest.fixture(scope="module")
def t1(env):
    """lkb$sales$t1: declared through the catalog, then created by pylance at the vended
    location with the vended storage options (256 rows); (location, options)."""
    tid = [BUCKET, "sales", "t1"]
    d = env.ns.declare_table(DeclareTableRequest(id=tid))
    assert d.location.rstrip("/") == LOC + "t1", d.location
    assert table_exists(env, tid)
    desc = env.describe(tid, vend_credentials=True, check_declared=True)
    assert desc.location.rstrip("/") == LOC + "t1", desc.location
    assert desc.is_only_declared is True, desc
    for k in OPEN_OPTIONS:
        assert desc.storage_options and desc.storage_options.get(k), (k, desc.storage_options)
    assert desc.storage_options["aws_endpoint"] == env.s3_endpoint
    assert "aws_access_key_id" not in desc.storage_options  # nothing to vend: it is open
    # declared, not yet created: listed only with include_declared
    assert "t1" in env.tables([BUCKET, "sales"], include_declared=True)
    assert "t1" not in env.tables([BUCKET, "sales"], include_declared=False)
    opts = env.vended(desc.storage_options)
    ds = lance.write_dataset(rows(0, 256), desc.location, mode="create", storage_options=opts)
    assert ds.count_rows() == 256
    return desc.location, opts


# ---- namespaces ----

def test_namespaces(env):
    ns = env.ns
    with pytest.raises(NamespaceAlreadyExistsError):
        ns.create_namespace(CreateNamespaceRequest(id=[BUCKET], mode="Create"))
    ns.create_namespace(CreateNamespaceRequest(id=[BUCKET], mode="ExistOk"))
    ns.create_namespace(CreateNamespaceRequest(id=["lkn"]))
    for name in ("c", "a", "d", "b"):
        ns.create_namespace(CreateNamespaceRequest(id=["lkn", name],
                                                   properties={"owner": "ann-" + name}))
    root = ns.list_namespaces(ListNamespacesRequest(id=[])).namespaces
    assert root == sorted(root) and {BUCKET, "lkn"} <= set(root), root
    assert ns.list_namespaces(ListNamespacesRequest(id=["lkn"])).namespaces == \
        ["a", "b", "c", "d"]
    p1 = ns.list_namespaces(ListNamespacesRequest(id=["lkn"], limit=3))
    assert p1.namespaces == ["a", "b", "c"] and p1.page_token, p1
    p2 = ns.list_namespaces(ListNamespacesRequest(id=["lkn"], limit=3,
                                                  page_token=p1.page_token))
    assert p2.namespaces == ["d"] and not p2.page_token, p2
    assert ns.list_namespaces(ListNamespacesRequest(id=["lkn"], limit=0)).namespaces == []
    props = ns.describe_namespace(DescribeNamespaceRequest(id=["lkn", "a"])).properties
    assert props.get("owner") == "ann-a", props
    with pytest.raises(NamespaceNotFoundError):
        ns.describe_namespace(DescribeNamespaceRequest(id=["lkn", "zz"]))
    assert ns_exists(env, ["lkn", "a"]) and ns_exists(env, ["lkn"])
    assert not ns_exists(env, ["lkn", "zz"]) and not ns_exists(env, ["lkzz"])
    with pytest.raises(NamespaceAlreadyExistsError):
        ns.create_namespace(CreateNamespaceRequest(id=["lkn", "a"], mode="Create"))
    ns.create_namespace(CreateNamespaceRequest(id=["lkn", "a"], mode="ExistOk"))
    assert ns.describe_namespace(DescribeNamespaceRequest(id=["lkn", "a"])) \
        .properties.get("owner") == "ann-a"
    # a namespace holding a table, and a bucket holding namespaces, are not empty
    ns.declare_table(DeclareTableRequest(id=["lkn", "b", "t"]))
    with pytest.raises(NamespaceNotEmptyError):
        ns.drop_namespace(DropNamespaceRequest(id=["lkn", "b"], behavior="Restrict"))
    with pytest.raises(NamespaceNotEmptyError):
        ns.drop_namespace(DropNamespaceRequest(id=["lkn"], behavior="Restrict"))
    assert ns_exists(env, ["lkn", "b"]) and table_exists(env, ["lkn", "b", "t"])
    ns.drop_namespace(DropNamespaceRequest(id=["lkn", "b"], behavior="Cascade"))
    assert not ns_exists(env, ["lkn", "b"]) and not table_exists(env, ["lkn", "b", "t"])
    ns.drop_namespace(DropNamespaceRequest(id=["lkn", "zz"], mode="Skip"))
    with pytest.raises(NamespaceNotFoundError):
        ns.drop_namespace(DropNamespaceRequest(id=["lkn", "zz"], mode="Fail"))
    ns.drop_namespace(DropNamespaceRequest(id=["lkn", "d"]))
    assert ns.list_namespaces(ListNamespacesRequest(id=["lkn"])).namespaces == ["a", "c"]


def test_list_tables_paging(env):
    ns = env.ns
    ns.create_namespace(CreateNamespaceRequest(id=[BUCKET, "pg"]))
    names = ["p%d" % i for i in (3, 1, 5, 2, 4)]
    for n in names:
        ns.declare_table(DeclareTableRequest(id=[BUCKET, "pg", n]))
    with pytest.raises(TableAlreadyExistsError):
        ns.declare_table(DeclareTableRequest(id=[BUCKET, "pg", "p1"]))
    got, token = [], None
    for _ in range(len(names)):
        r = ns.list_tables(ListTablesRequest(id=[BUCKET, "pg"], limit=2, page_token=token,
                                             include_declared=True))
        assert len(r.tables) <= 2, r
        got += r.tables
        token = r.page_token
        if not token:
            break
    assert got == sorted(names) and not token, (got, token)
    assert env.tables([BUCKET, "pg"], include_declared=True) == sorted(names)
    assert env.tables([BUCKET, "pg"], include_declared=False) == []
    with pytest.raises(NamespaceNotFoundError):
        env.tables([BUCKET, "nope"])
    # ListAllTables (GET /v1/table) names them too, as leaves or as full ids
    every = ns.list_all_tables(ListTablesRequest(include_declared=True)).tables
    for n in names:
        assert n in every or "%s$pg$%s" % (BUCKET, n) in every, every


def test_nested_namespace(env):
    """Levels below the bucket are one directory, joined by '.'."""
    ns = env.ns
    ns.create_namespace(CreateNamespaceRequest(id=[BUCKET, "sales", "eu"]))
    assert "eu" in ns.list_namespaces(ListNamespacesRequest(id=[BUCKET, "sales"])).namespaces
    top = ns.list_namespaces(ListNamespacesRequest(id=[BUCKET])).namespaces
    assert "sales" in top and "eu" not in top and "sales.eu" not in top, top
    tid = [BUCKET, "sales", "eu", "t5"]
    lance.write_dataset(rows(0, 5), namespace_client=ns, table_id=tid, mode="create")
    assert env.describe(tid).location.rstrip("/") == "s3://%s/sales.eu/t5" % BUCKET
    assert ids_of(lance.dataset(namespace_client=ns, table_id=tid)) == list(range(5))
    assert env.tables([BUCKET, "sales", "eu"]) == ["t5"]
    assert "t5" not in env.tables([BUCKET, "sales"])
    with pytest.raises(NamespaceNotFoundError):
        ns.create_namespace(CreateNamespaceRequest(id=[BUCKET, "nope", "eu"]))


# ---- tables written at the vended location ----

def test_declared_table_read_back(env, t1):
    loc, opts = t1
    assert ids_of(lance.dataset(loc, storage_options=opts)) == list(range(256))
    assert "t1" in env.tables([BUCKET, "sales"], include_declared=False)
    desc = env.describe([BUCKET, "sales", "t1"], check_declared=True)
    assert desc.is_only_declared is False, desc
    desc = env.describe([BUCKET, "sales", "t1"], with_table_uri=True)
    assert desc.table_uri.rstrip("/") == LOC + "t1", desc
    # the dataset's files are under the table's prefix, nowhere else
    keys = env.keys("sales/t1/")
    assert any(k.startswith("sales/t1/_versions/") for k in keys), keys
    assert any(k.startswith("sales/t1/data/") for k in keys), keys


def test_append_versions_checkout(env, t1):
    loc, opts = t1
    ds = lance.dataset(loc, storage_options=opts)
    v0, n0 = ds.version, ds.count_rows()
    ds = lance.write_dataset(rows(10000, 16), loc, mode="append", storage_options=opts)
    assert ds.version == v0 + 1 and ds.count_rows() == n0 + 16
    versions = [v["version"] for v in ds.versions()]
    assert versions[-2:] == [v0, v0 + 1], versions
    old = lance.dataset(loc, version=v0, storage_options=opts)
    assert old.count_rows() == n0
    assert ids_of(old) == ids_of(ds)[:n0]
    desc = env.describe([BUCKET, "sales", "t1"], load_detailed_metadata=True)
    assert desc.version == v0 + 1, desc


def test_vector_index_and_query(env, t1):
    loc, opts = t1
    ds = lance.dataset(loc, storage_options=opts)
    v0 = ds.version
    ds = ds.create_index("vec", index_type="IVF_PQ", num_partitions=1, num_sub_vectors=2)
    assert ds.version == v0 + 1
    idx = ds.describe_indices()
    assert [(i.name, i.field_names, i.num_rows_indexed) for i in idx] == \
        [("vec_idx", ["vec"], ds.count_rows())], idx
    assert any(k.startswith("sales/t1/_indices/") for k in env.keys("sales/t1/"))
    q = rows(0, 256).column("vec")[7].values.to_numpy()
    got = ds.to_table(nearest={"column": "vec", "q": q, "k": 3, "refine_factor": 50},
                      columns=["id"])
    assert got.column("id")[0].as_py() == 7, got
    # a fresh open finds the index the commit recorded
    again = lance.dataset(loc, storage_options=opts)
    assert again.has_index and again.to_table(
        nearest={"column": "vec", "q": q, "k": 1, "refine_factor": 50},
        columns=["id"]).column("id")[0].as_py() == 7


def test_add_column_and_detailed_version(env, t1):
    loc, opts = t1
    ds = lance.dataset(loc, storage_options=opts)
    v0 = ds.version
    ds.add_columns({"y": "x * 2"})
    ds = lance.dataset(loc, storage_options=opts)
    assert ds.version == v0 + 1 and "y" in ds.schema.names
    t = ds.to_table(columns=["x", "y"])
    assert t.column("y").to_pylist() == [x * 2 for x in t.column("x").to_pylist()]
    desc = env.describe([BUCKET, "sales", "t1"], load_detailed_metadata=True)
    assert desc.version == ds.latest_version == v0 + 1, desc


# ---- tables written through the catalog ----

def test_write_through_namespace(env):
    tid = [BUCKET, "sales", "t2"]
    ds = lance.write_dataset(rows(0, 32), namespace_client=env.ns, table_id=tid, mode="create")
    assert ds.count_rows() == 32
    desc = env.describe(tid)
    assert desc.location.rstrip("/") == LOC + "t2", desc.location
    assert ds.uri.rstrip("/") == desc.location.rstrip("/"), ds.uri
    assert ids_of(lance.dataset(namespace_client=env.ns, table_id=tid)) == list(range(32))
    ds = lance.write_dataset(rows(32, 8), namespace_client=env.ns, table_id=tid, mode="append")
    assert ds.count_rows() == 40
    assert ids_of(lance.dataset(namespace_client=env.ns, table_id=tid)) == list(range(40))
    assert env.describe(tid, load_detailed_metadata=True).version == 2
    # a create onto a table the catalog already has is refused by the declare
    with pytest.raises(TableAlreadyExistsError):
        lance.write_dataset(rows(0, 1), namespace_client=env.ns, table_id=tid, mode="create")
    with pytest.raises(TableNotFoundError):
        lance.dataset(namespace_client=env.ns, table_id=[BUCKET, "sales", "nope"])
    assert "t2" in env.tables([BUCKET, "sales"], include_declared=False)


def test_deregister_register_drop(env):
    tid = [BUCKET, "sales", "t3"]
    lance.write_dataset(rows(0, 20), namespace_client=env.ns, table_id=tid, mode="create")
    dr = env.ns.deregister_table(DeregisterTableRequest(id=tid))
    assert dr.location.rstrip("/") == LOC + "t3", dr
    assert "t3" not in env.tables([BUCKET, "sales"], include_declared=True)
    assert not table_exists(env, tid)
    with pytest.raises(TableNotFoundError):
        env.describe(tid)
    # deregistered keeps the data
    kept = env.keys("sales/t3/")
    assert any(k.startswith("sales/t3/_versions/") for k in kept), kept
    assert ids_of(lance.dataset(dr.location, storage_options=env.static())) == list(range(20))
    env.ns.register_table(RegisterTableRequest(id=tid, location=dr.location))
    assert table_exists(env, tid) and "t3" in env.tables([BUCKET, "sales"])
    assert ids_of(lance.dataset(namespace_client=env.ns, table_id=tid)) == list(range(20))
    with pytest.raises(TableAlreadyExistsError):
        env.ns.register_table(RegisterTableRequest(id=tid, location=dr.location, mode="Create"))
    dropped = env.ns.drop_table(DropTableRequest(id=tid))
    assert dropped.location.rstrip("/") == LOC + "t3", dropped
    assert not table_exists(env, tid)
    assert env.keys("sales/t3/") == []
    with pytest.raises(TableNotFoundError):
        env.ns.drop_table(DropTableRequest(id=tid))


def test_rename_table(env):
    tid = [BUCKET, "sales", "t4"]
    lance.write_dataset(rows(0, 12), namespace_client=env.ns, table_id=tid, mode="create")
    env.ns.rename_table(RenameTableRequest(id=tid, new_table_name="t4r"))
    listed = env.tables([BUCKET, "sales"])
    assert "t4r" in listed and "t4" not in listed, listed
    assert not table_exists(env, tid)
    assert ids_of(lance.dataset(namespace_client=env.ns, table_id=[BUCKET, "sales", "t4r"])) \
        == list(range(12))
    with pytest.raises(TableNotFoundError):
        env.ns.rename_table(RenameTableRequest(id=tid, new_table_name="t4s"))


# ---- the same datasets without the catalog ----

def test_opened_by_uri_with_static_keys(env, t1):
    loc, opts = t1
    by_uri = lance.dataset(LOC + "t1", storage_options=env.static())
    vended = lance.dataset(loc, storage_options=opts)
    assert by_uri.version == vended.version
    assert by_uri.to_table(columns=["id", "x"]) == vended.to_table(columns=["id", "x"])


def test_opened_by_path_in_the_mount(env, t1, module_cluster):
    loc, opts = t1
    want = lance.dataset(loc, storage_options=opts)
    m = start_mount(module_cluster, env.filer.url, name="lance-mount")
    try:
        local = lance.dataset(m.p("buckets", BUCKET, "sales", "t1"))
        assert local.version == want.version
        assert local.to_table(columns=["id", "x"]) == want.to_table(columns=["id", "x"])
    finally:
        m.unmount()


# ---- conditional PUT (the commit primitive) ----

def test_if_none_match_race(env):
    env.s3.create_bucket(Bucket="lkrace")
    key = "race/%s.manifest" % uuid.uuid4().hex
    barrier = threading.Barrier(8)
    results = [None] * 8

    def put(i):
        barrier.wait()
        try:
            env.s3.put_object(Bucket="lkrace", Key=key, Body=b"writer %d" % i, IfNoneMatch="*")
            results[i] = 200
        except botocore.exceptions.ClientError as e:
            results[i] = e.response["ResponseMetadata"]["HTTPStatusCode"]

    threads = [threading.Thread(target=put, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [200] + [412] * 7, results
    winner = results.index(200)
    body = env.s3.get_object(Bucket="lkrace", Key=key)["Body"].read()
    assert body == b"writer %d" % winner


# ---- bad input (raw HTTP) ----

def test_bad_input(env, t1):
    u = env.url
    # a name outside [a-z0-9_], and a table bucket name shorter than 3
    lance_err(requests.post(u("/v1/namespace/lkb%24Bad-Name!/create"), json={}), 400, 13)
    lance_err(requests.post(u("/v1/namespace/ab/create"), json={}), 400, 13)
    lance_err(requests.post(u("/v1/table/lkb%24sales%24Bad!/declare"), json={}), 400, 13)
    # '$' inside a part when the delimiter is '.'
    lance_err(requests.post(u("/v1/namespace/lkb.a%24b/create"), params={"delimiter": "."},
                            json={}), 400, 13)
    # the path and the body name different namespaces
    lance_err(requests.post(u("/v1/namespace/lkb%24mm/create"), json={"id": ["other"]}),
              400, 13)
    lance_err(requests.post(u("/v1/namespace/lkb%24md/create"), json={"mode": "Sideways"}),
              400, 13)
    lance_err(requests.post(u("/v1/namespace/lkb%24big/create"),
                            json={"properties": {"p": "x" * ((1 << 20) + 16)}}), (400, 413), 13)
    lance_err(requests.post(u("/v1/namespace/lkb%24gj/create"), data=b"{not json",
                            headers={"Content-Type": "application/json"}), 400, 13)
    # an unknown drop behavior is refused, not read as one of the two
    env.ns.create_namespace(CreateNamespaceRequest(id=[BUCKET, "keep"]))
    lance_err(requests.post(u("/v1/namespace/lkb%24keep/drop"), json={"behavior": "Sideways"}),
              400, 13)
    assert ns_exists(env, [BUCKET, "keep"])
    # nothing was created by any of them
    root = env.ns.list_namespaces(ListNamespacesRequest(id=[])).namespaces
    assert "ab" not in root and "other" not in root, root
    kids = env.ns.list_namespaces(ListNamespacesRequest(id=[BUCKET])).namespaces
    for bad in ("a", "a$b", "mm", "md", "big", "gj"):
        assert bad not in kids, kids
    for bad in ("a", "mm", "md", "big", "gj"):
        assert not ns_exists(env, [BUCKET, bad])
    assert not any(t.lower() == "bad!" for t in env.tables([BUCKET, "sales"]))
    # a missing table and namespace: JSON errors with their codes
    lance_err(requests.post(u("/v1/table/lkb%24sales%24nope/describe"), json={}), 404, 4)
    lance_err(requests.post(u("/v1/namespace/lkb%24nope/exists"), json={}), 404, 1)
    # the data plane is not served: Unsupported, code 0
    r = requests.post(u("/v1/table/lkb%24sales%24t1/count_rows"), json={"id": [BUCKET, "sales",
                                                                             "t1"]})
    lance_err(r, 406, 0)


# ---- states on disk, modes, versions, what describe answers ----

STATE_XATTR = "weedfs.catalog.lance"


def entry(env, path):
    """The filer's entry at path (xattrs decoded), or None when there is none."""
    r = env.filer.post("/.api/v1/lookup", json={"path": path})
    if r.status_code == 404:
        return None
    assert r.status_code == 200, r.text
    e = r.json()
    e["xattrs"] = {k: base64.b64decode(v) for k, v in (e.get("xattrs") or {}).items()}
    return e


def state_of(env, ns, name):
    """The table directory's state attribute (None: none) and which markers are there."""
    d = "/buckets/%s/%s/%s" % (BUCKET, ns, name)
    e = entry(env, d)
    assert e is not None, d
    st = e["xattrs"].get(STATE_XATTR)
    marks = {m for m in (".lance-reserved", ".lance-deregistered") if entry(env, d + "/" + m)}
    return (st.decode() if st is not None else None), marks


def test_states_as_markers_and_attribute(env):
    """declared: .lance-reserved and the attribute; created once the catalog sees the
    first version (no marker); deregistered: .lance-deregistered; registered again
    (the undrop): no marker left."""
    tid = [BUCKET, "sales", "st"]
    d = env.ns.declare_table(DeclareTableRequest(id=tid))
    assert state_of(env, "sales", "st") == ("declared", {".lance-reserved"})
    lance.write_dataset(rows(0, 4), d.location, storage_options=env.vended(
        env.describe(tid).storage_options))
    # the write went through S3; the catalog records it when it reads the versions
    assert env.describe(tid, check_declared=True).is_only_declared is False
    assert state_of(env, "sales", "st") == ("created", set())
    assert "st" in env.tables([BUCKET, "sales"], include_declared=False)
    dr = env.ns.deregister_table(DeregisterTableRequest(id=tid))
    st, marks = state_of(env, "sales", "st")
    assert (st, marks) == ("deregistered", {".lance-deregistered"}), (st, marks)
    env.ns.register_table(RegisterTableRequest(id=tid, location=dr.location))
    assert state_of(env, "sales", "st") == ("registered", set())
    assert ids_of(lance.dataset(namespace_client=env.ns, table_id=tid)) == list(range(4))
    # a listing that leaves out declared tables records created as well
    tid2 = [BUCKET, "sales", "st2"]
    d2 = env.ns.declare_table(DeclareTableRequest(id=tid2))
    lance.write_dataset(rows(0, 2), d2.location, storage_options=env.static())
    assert state_of(env, "sales", "st2") == ("declared", {".lance-reserved"})
    assert "st2" in env.tables([BUCKET, "sales"], include_declared=False)
    assert state_of(env, "sales", "st2") == ("created", set())


def test_namespace_create_modes(env):
    ns = env.ns
    ns.create_namespace(CreateNamespaceRequest(id=[BUCKET, "ow"], properties={"k": "old"}))
    ns.declare_table(DeclareTableRequest(id=[BUCKET, "ow", "t"]))
    # Create on an existing one: 409 NamespaceAlreadyExists, nothing changed
    lance_err(requests.post(env.url("/v1/namespace/%s%%24ow/create" % BUCKET),
                            json={"mode": "Create", "properties": {"k": "new"}}), 409, 2)
    # ExistOk: the existing namespace, its properties kept
    r = requests.post(env.url("/v1/namespace/%s%%24ow/create" % BUCKET),
                      json={"mode": "ExistOk", "properties": {"k": "new"}})
    assert r.status_code == 200 and r.json()["properties"] == {"k": "old"}, r.text
    assert table_exists(env, [BUCKET, "ow", "t"])
    # Overwrite: dropped with its tables, made anew with the new properties
    ns.create_namespace(CreateNamespaceRequest(id=[BUCKET, "ow"], mode="Overwrite",
                                               properties={"k": "new"}))
    assert ns.describe_namespace(DescribeNamespaceRequest(id=[BUCKET, "ow"])).properties \
        == {"k": "new"}
    assert not table_exists(env, [BUCKET, "ow", "t"])
    assert env.tables([BUCKET, "ow"], include_declared=True) == []
    # Overwrite of one that does not exist yet simply makes it
    ns.create_namespace(CreateNamespaceRequest(id=[BUCKET, "ow2"], mode="Overwrite"))
    assert ns_exists(env, [BUCKET, "ow2"])


def test_register_overwrite(env):
    tid = [BUCKET, "sales", "ro"]
    lance.write_dataset(rows(0, 6), namespace_client=env.ns, table_id=tid, mode="create")
    loc = env.describe(tid).location
    with pytest.raises(TableAlreadyExistsError):
        env.ns.register_table(RegisterTableRequest(id=tid, location=loc, mode="Create",
                                                   properties={"p": "1"}))
    r = env.ns.register_table(RegisterTableRequest(id=tid, location=loc, mode="Overwrite",
                                                   properties={"p": "2"}))
    assert r.location.rstrip("/") == LOC + "ro", r
    assert env.describe(tid).properties == {"p": "2"}
    assert state_of(env, "sales", "ro") == ("registered", set())
    assert ids_of(lance.dataset(namespace_client=env.ns, table_id=tid)) == list(range(6))
    # an unknown mode is refused, the registration unchanged
    lance_err(requests.post(env.url("/v1/table/%s%%24sales%%24ro/register" % BUCKET),
                            json={"location": loc, "mode": "Sideways"}), 400, 13)
    assert env.describe(tid).properties == {"p": "2"}


def test_rename_to_another_namespace(env):
    ns = env.ns
    ns.create_namespace(CreateNamespaceRequest(id=[BUCKET, "moved"]))
    old, new = [BUCKET, "sales", "mv"], [BUCKET, "moved", "mv2"]
    lance.write_dataset(rows(0, 9), namespace_client=ns, table_id=old, mode="create")
    ns.rename_table(RenameTableRequest(id=old, new_table_name="mv2",
                                       new_namespace_id=[BUCKET, "moved"]))
    with pytest.raises(TableNotFoundError):
        env.describe(old)
    assert not table_exists(env, old)
    assert "mv" not in env.tables([BUCKET, "sales"], include_declared=True)
    assert env.tables([BUCKET, "moved"]) == ["mv2"]
    desc = env.describe(new, load_detailed_metadata=True)
    assert desc.table == "mv2" and desc.namespace == [BUCKET, "moved"], desc
    # the files stay where they were written (docs/catalog.md: renames move the entry,
    # not the data); the location the new id answers is where they are
    assert desc.location.rstrip("/") == LOC + "mv", desc.location
    assert any(k.startswith("sales/mv/_versions/") for k in env.keys("sales/mv/"))
    assert ids_of(lance.dataset(desc.location, storage_options=env.static())) == \
        list(range(9))
    assert ids_of(lance.dataset(namespace_client=ns, table_id=new)) == list(range(9))
    # appended at the new id, read back there
    lance.write_dataset(rows(9, 3), namespace_client=ns, table_id=new, mode="append")
    assert ids_of(lance.dataset(namespace_client=ns, table_id=new)) == list(range(12))
    # a namespace that does not exist, or one of another bucket: refused, nothing moved
    with pytest.raises(NamespaceNotFoundError):
        ns.rename_table(RenameTableRequest(id=new, new_table_name="x",
                                           new_namespace_id=[BUCKET, "nowhere"]))
    lance_err(requests.post(env.url("/v1/table/%s%%24moved%%24mv2/rename" % BUCKET),
                            json={"new_table_name": "x", "new_namespace_id": ["lkn", "a"]}),
              400, 13)
    assert env.tables([BUCKET, "moved"]) == ["mv2"]
    # the old name's directory still holds the moved table's files: a new table there
    # is refused rather than given them
    j = lance_err(requests.post(env.url("/v1/table/%s%%24sales%%24mv/declare" % BUCKET),
                                json={}), 409, 5)
    assert "renamed" in j["error"], j
    with pytest.raises(TableAlreadyExistsError):
        ns.declare_table(DeclareTableRequest(id=old))
    assert not table_exists(env, old)
    assert ids_of(lance.dataset(namespace_client=ns, table_id=new)) == list(range(12))


def test_describe_versions(env):
    tid = [BUCKET, "sales", "ver"]
    lance.write_dataset(rows(0, 3), namespace_client=env.ns, table_id=tid, mode="create")
    lance.write_dataset(rows(3, 3), namespace_client=env.ns, table_id=tid, mode="append")
    assert env.describe(tid, version=1).version == 1
    assert env.describe(tid, version=2).version == 2
    j = lance_err(requests.post(env.url("/v1/table/%s%%24sales%%24ver/describe" % BUCKET),
                                json={"version": 7}), 404, 11)
    assert "7" in j["error"], j
    from lance_namespace.errors import TableVersionNotFoundError
    with pytest.raises(TableVersionNotFoundError):
        env.describe(tid, version=3)


def test_describe_answers_only_what_it_read(env, t1):
    """managed_versioning false; no schema or stats without load_detailed_metadata (and
    none with it either: the dataset is not opened, so nothing is invented)."""
    u = env.url("/v1/table/%s%%24sales%%24t1/describe" % BUCKET)
    for body in ({}, {"load_detailed_metadata": False}, {"vend_credentials": True}):
        r = requests.post(u, json=body)
        assert r.status_code == 200, r.text
        j = r.json()
        assert j["managed_versioning"] is False, j
        for k in ("schema", "stats", "version", "is_only_declared", "table"):
            assert k not in j, (k, j)
    j = requests.post(u, json={"load_detailed_metadata": True}).json()
    assert j["managed_versioning"] is False and isinstance(j["version"], int), j
    assert "schema" not in j and "stats" not in j, j
    assert env.describe([BUCKET, "sales", "t1"]).managed_versioning is False


def test_location_with_wildcards_refused(env):
    """A location holding '*' or '?' is refused on both routes that carry one (declare
    and register), before anything is made. (The check in storage_options cannot be
    reached through the API: a stored location is built from validated names.)"""
    for route, loc in (("declare", LOC + "wc*"), ("declare", LOC + "wc?"),
                       ("register", LOC + "wc*"), ("register", "s3://%s/sa?es/wc" % BUCKET)):
        j = lance_err(requests.post(env.url("/v1/table/%s%%24sales%%24wc/%s" % (BUCKET, route)),
                                    json={"location": loc}), 400, 13)
        assert "'*' or '?'" in j["error"], j
    assert not table_exists(env, [BUCKET, "sales", "wc"])
    assert entry(env, "/buckets/%s/sales/wc" % BUCKET) is None


# ---- concurrent appenders (last: eight interpreters) ----

def _append_one(uri, opts, i, barrier):
    barrier.wait(60)
    lance.write_dataset(rows(1000 * (i + 1), 10), uri, mode="append", storage_options=opts)


def test_duckdb_by_uri_and_through_the_catalog(env, t1, tmp_path, monkeypatch):
    """DuckDB's lance extension reads the dataset by s3:// URI (its object store takes
    the AWS_* environment) and through the catalog (ATTACH ... TYPE LANCE: ListTables,
    then DescribeTable's location and storage_options)."""
    location, opts = t1
    want = lance.dataset(location, storage_options=opts).count_rows()
    for k, v in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "y"),
                 ("AWS_REGION", "us-east-1"), ("AWS_ENDPOINT", env.s3_endpoint),
                 ("AWS_ALLOW_HTTP", "true")):
        monkeypatch.setenv(k, v)
    con = catalog_clients.duckdb_connect(tmp_path / "ext", extensions=("httpfs", "lance"))
    try:
        got = con.execute("SELECT count(*), min(id) FROM __lance_scan('%s')"
                          % location.rstrip("/")).fetchall()
        assert got == [(want, 0)], got
        con.execute("ATTACH '%s$sales' AS lk (TYPE LANCE, ENDPOINT '%s')" % (BUCKET, env.uri))
        names = {r[2] for r in con.execute("SHOW ALL TABLES").fetchall() if r[0] == "lk"}
        assert "t1" in names, names
        assert con.execute("SELECT count(*) FROM lk.t1").fetchall() == [(want,)]
    finally:
        con.close()


def test_request_id_echoed(env):
    """x-request-id (lance-namespace's header.x-request-id context) comes back, on
    answers and errors alike."""
    for path, want in (("/v1/namespace/%s/describe" % BUCKET, 200),
                       ("/v1/table/%s%%24sales%%24missing/describe" % BUCKET, 404)):
        r = requests.post(env.url(path), json={}, headers={"x-request-id": "req-42"})
        assert r.status_code == want and r.headers.get("x-request-id") == "req-42", r.headers


def test_eight_process_appenders(env):
    tid = [BUCKET, "sales", "mp"]
    d = env.ns.declare_table(DeclareTableRequest(id=tid))
    uri = d.location.rstrip("/")
    lance.write_dataset(rows(0, 10), uri, mode="create", storage_options=env.static())
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(8)
    procs = [ctx.Process(target=_append_one, args=(uri, env.static(), i, barrier))
             for i in range(8)]
    for p in procs:
        p.start()
    try:
        for p in procs:
            p.join(120)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
    assert [p.exitcode for p in procs] == [0] * 8
    ds = lance.dataset(uri, storage_options=env.static())
    want = list(range(10)) + [1000 * (i + 1) + j for i in range(8) for j in range(10)]
    assert ids_of(ds) == sorted(want)
    assert ds.version == 9 and len(ds.versions()) == 9
    assert env.describe(tid, load_detailed_metadata=True).version == 9
