"""The weedfs Iceberg REST catalog (docs/catalog.md) used by real engines: DuckDB's
iceberg extension (CREATE SCHEMA/TABLE, INSERT, SELECT, UPDATE, DELETE), Spark 3.5
(one session: partitioned tables, MERGE, DELETE, schema evolution, metadata tables,
time travel, rewrite_data_files, expire_snapshots), and the
tables each engine makes seen by the others: `aws s3tables list-tables` lists them,
the filer holds their data and metadata files under /buckets/<bucket>/<ns>/<t>, and
weedfs-mount shows the same files as an ordinary directory.

Markers: heavy_client on the Spark tests (one JVM for the module); the others have
none, so they run under the sanitizer builds too."""
import json
import os
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

import catalog_clients
import test_iceberg_rest
from filer_fixtures import start_mini_with_filer
from mount_fixtures import start_mount

BUCKET = "eng"


class Env(test_iceberg_rest.Env):
    """test_iceberg_rest's (files_under), with awscli and the gateway's address."""

    def __init__(self, m, filer):
        super().__init__(m, filer)
        self.s3_addr = "127.0.0.1:%d" % m.s3_port

    def aws(self, *args):
        """awscli against the catalog port; its JSON answer."""
        env = dict(os.environ, AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="y",
                   AWS_DEFAULT_REGION="us-east-1")
        p = subprocess.run(["aws", "--endpoint-url", self.uri, "--output", "json"]
                           + list(args), capture_output=True, text=True, env=env, timeout=60)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout) if p.stdout.strip() else {}

    def pyiceberg(self):
        return RestCatalog("eng", uri=self.uri, warehouse=BUCKET,
                           **{"s3.access-key-id": "x", "s3.secret-access-key": "y",
                              "s3.region": "us-east-1"})

    def listed(self, ns):
        """(namespace, name) of every table list-tables answers in namespace ns."""
        got = self.aws("s3tables", "list-tables", "--table-bucket-arn", self.arn,
                       "--namespace", ns)
        return sorted((t["namespace"][0], t["name"]) for t in got["tables"])

    def assert_table_files(self, ns, table):
        """The table's data and metadata files are in the filer; their names."""
        base = "/buckets/%s/%s/%s" % (BUCKET, ns, table)
        data = self.files_under(base + "/data")
        meta = self.files_under(base + "/metadata")
        assert any(p.endswith(".parquet") for p in data), data
        assert any(p.endswith(".metadata.json") for p in meta), meta
        assert any(p.endswith(".avro") for p in meta), meta
        return data, meta


@pytest.fixture(scope="module")
def env(module_cluster):
    m, filer = start_mini_with_filer(module_cluster)
    e = Env(m, filer)
    e.arn = e.aws("s3tables", "create-table-bucket", "--name", BUCKET)["arn"]
    return e


@pytest.fixture
def duck(env, tmp_path):
    con = catalog_clients.duckdb_connect(tmp_path / "duckdb-ext")
    con.execute("CREATE SECRET s3s (TYPE S3, KEY_ID 'x', SECRET 'y', ENDPOINT '%s', "
                "URL_STYLE 'path', USE_SSL false, REGION 'us-east-1')" % env.s3_addr)
    con.execute("ATTACH '%s' AS lake (TYPE ICEBERG, ENDPOINT '%s', AUTHORIZATION_TYPE 'none')"
                % (BUCKET, env.uri))
    yield con
    con.close()


def q(con, sql):
    return con.execute(sql).fetchall()


def pyiceberg_table(env, ns, ids, names):
    """Namespace ns and table ns.t (id, name) made by pyiceberg, with one append; the
    catalog."""
    cat = env.pyiceberg()
    cat.create_namespace(ns)
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False))
    cat.create_table(ns + ".t", schema).append(
        pa.table({"id": pa.array(ids, pa.int64()), "name": names}))
    return cat


def test_duckdb_dml(env, duck):
    q(duck, "CREATE SCHEMA lake.dk")
    assert ("dk",) in env.pyiceberg().list_namespaces()
    q(duck, "CREATE TABLE lake.dk.t (id BIGINT, name VARCHAR)")
    assert env.listed("dk") == [("dk", "t")]
    q(duck, "INSERT INTO lake.dk.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    assert q(duck, "SELECT * FROM lake.dk.t ORDER BY id") == [(1, "a"), (2, "b"), (3, "c")]
    q(duck, "UPDATE lake.dk.t SET name = 'z' WHERE id = 3")
    q(duck, "DELETE FROM lake.dk.t WHERE id = 2")
    assert q(duck, "SELECT * FROM lake.dk.t ORDER BY id") == [(1, "a"), (3, "z")]
    # every change was a commit through the catalog: pyiceberg sees the same rows
    t = env.pyiceberg().load_table("dk.t")
    assert sorted(tuple(r.values()) for r in t.scan().to_arrow().to_pylist()) == \
        [(1, "a"), (3, "z")]
    assert len(t.snapshots()) >= 3, t.snapshots()
    env.assert_table_files("dk", "t")


def test_pyiceberg_table_read_by_duckdb(env, duck):
    cat = pyiceberg_table(env, "py", [1, 2], ["p", "q"])
    assert q(duck, "SELECT * FROM lake.py.t ORDER BY id") == [(1, "p"), (2, "q")]
    # DuckDB's insert into pyiceberg's table reads back in pyiceberg
    q(duck, "INSERT INTO lake.py.t VALUES (3, 'r')")
    got = cat.load_table("py.t").scan().to_arrow().to_pylist()
    assert sorted(r["id"] for r in got) == [1, 2, 3]
    assert env.listed("py") == [("py", "t")]
    env.assert_table_files("py", "t")


def test_table_files_through_the_mount(env, duck, module_cluster):
    """A table is a directory in the mount: its current metadata file, read there,
    is the one the catalog names, and its Parquet files read there (by pyarrow and
    by DuckDB) hold the table's rows, byte for byte what S3 serves."""
    cat = pyiceberg_table(env, "mnt", [10, 20], ["x", "y"])
    q(duck, "INSERT INTO lake.mnt.t VALUES (30, 'z')")
    table = cat.load_table("mnt.t")
    m = start_mount(module_cluster, env.filer.url, name="eng-mount")
    try:
        tdir = m.p("buckets", BUCKET, "mnt", "t")
        assert sorted(os.listdir(tdir)) == ["data", "metadata"]
        prefix = "s3://%s/mnt/t/" % BUCKET
        assert table.metadata_location.startswith(prefix), table.metadata_location
        with open(os.path.join(tdir, table.metadata_location[len(prefix):])) as f:
            meta = json.load(f)
        assert meta["table-uuid"] == str(table.metadata.table_uuid)
        assert meta["current-snapshot-id"] == table.metadata.current_snapshot_id
        files = [t.file.file_path for t in table.scan().plan_files()]
        assert len(files) == 2, files
        rows = []
        for path in files:
            assert path.startswith(prefix), path
            local = os.path.join(tdir, path[len(prefix):])
            got = env.s3.get_object(Bucket=BUCKET, Key=path[len("s3://%s/" % BUCKET):])
            with open(local, "rb") as f:
                assert f.read() == got["Body"].read()
            rows += pq.read_table(local).to_pylist()
        assert sorted((r["id"], r["name"]) for r in rows) == [(10, "x"), (20, "y"), (30, "z")]
        got = q(duck, "SELECT id FROM read_parquet('%s/data/*.parquet') ORDER BY id" % tdir)
        assert got == [(10,), (20,), (30,)]
    finally:
        m.unmount()


@pytest.fixture(scope="module")
def spark(env, tmp_path_factory):
    """ONE Spark session for the module, catalog `lake` at weedfs's REST catalog."""
    cat = {"lake": {"type": "rest", "uri": env.uri, "warehouse": BUCKET,
                    "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
                    "s3.endpoint": "http://" + env.s3_addr, "s3.path-style-access": "true",
                    "s3.access-key-id": "x", "s3.secret-access-key": "y",
                    "client.region": "us-east-1"}}
    with catalog_clients.spark_session(tmp_path_factory.mktemp("spark"), cat) as s:
        yield s


def sq(spark, sql):
    return [tuple(r) for r in spark.sql(sql).collect()]


@pytest.mark.heavy_client
def test_spark_sql(env, spark):
    sq(spark, "CREATE NAMESPACE lake.sp")
    assert ("sp",) in env.pyiceberg().list_namespaces()
    sq(spark, "CREATE TABLE lake.sp.t (id BIGINT, cat STRING, v DOUBLE) USING iceberg "
              "PARTITIONED BY (cat)")
    spec = env.pyiceberg().load_table("sp.t").spec()
    assert [f.name for f in spec.fields] == ["cat"], spec
    sq(spark, "INSERT INTO lake.sp.t VALUES (1, 'a', 1.0), (2, 'b', 2.0), (3, 'a', 3.0)")
    assert sq(spark, "SELECT * FROM lake.sp.t ORDER BY id") == \
        [(1, "a", 1.0), (2, "b", 2.0), (3, "a", 3.0)]
    data, _ = env.assert_table_files("sp", "t")
    assert any("/data/cat=a/" in p for p in data) and any("/data/cat=b/" in p for p in data)
    sq(spark, "CREATE OR REPLACE TEMPORARY VIEW src AS SELECT * FROM VALUES "
              "(2L, 'b', 20.0D), (4L, 'c', 4.0D) AS s(id, cat, v)")
    sq(spark, "MERGE INTO lake.sp.t t USING src s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
    assert sq(spark, "SELECT id, v FROM lake.sp.t ORDER BY id") == \
        [(1, 1.0), (2, 20.0), (3, 3.0), (4, 4.0)]
    sq(spark, "DELETE FROM lake.sp.t WHERE id = 1")
    assert sq(spark, "SELECT id FROM lake.sp.t ORDER BY id") == [(2,), (3,), (4,)]
    sq(spark, "ALTER TABLE lake.sp.t ADD COLUMN note STRING")
    assert "note" in [f.name for f in env.pyiceberg().load_table("sp.t").schema().fields]
    assert sq(spark, "SELECT id, note FROM lake.sp.t ORDER BY id") == \
        [(2, None), (3, None), (4, None)]
    snaps = sq(spark, "SELECT snapshot_id, operation FROM lake.sp.t.snapshots "
                      "ORDER BY committed_at")
    assert len(snaps) == 3 and snaps[0][1] == "append", snaps
    hist = sq(spark, "SELECT snapshot_id FROM lake.sp.t.history ORDER BY made_current_at")
    assert [h[0] for h in hist] == [s[0] for s in snaps]
    first = snaps[0][0]
    assert sq(spark, "SELECT id FROM lake.sp.t VERSION AS OF %d ORDER BY id" % first) == \
        [(1,), (2,), (3,)]
    # a second file in partition a: a group the rewrite compacts (one file is never one)
    sq(spark, "INSERT INTO lake.sp.t VALUES (5, 'a', 5.0, 'n')")
    r = sq(spark, "CALL lake.system.rewrite_data_files(table => 'sp.t', "
                  "options => map('min-input-files', '1'))")
    assert r[0][0] == 2 and r[0][1] == 1, r  # rewritten, added data files
    assert sq(spark, "SELECT operation FROM lake.sp.t.snapshots ORDER BY committed_at")[-1] \
        == ("replace",)
    assert sq(spark, "SELECT id FROM lake.sp.t ORDER BY id") == [(2,), (3,), (4,), (5,)]
    before = len(env.files_under("/buckets/%s/sp/t/data" % BUCKET))
    now = sq(spark, "SELECT date_format(current_timestamp() + INTERVAL 1 SECOND, "
                    "'yyyy-MM-dd HH:mm:ss.SSS')")[0][0]
    r = spark.sql("CALL lake.system.expire_snapshots(table => 'sp.t', "
                  "older_than => TIMESTAMP '%s', retain_last => 1)" % now).collect()[0]
    assert r["deleted_data_files_count"] >= 1, r
    assert len(sq(spark, "SELECT * FROM lake.sp.t.snapshots")) == 1
    assert len(env.files_under("/buckets/%s/sp/t/data" % BUCKET)) < before
    assert len(env.pyiceberg().load_table("sp.t").snapshots()) == 1
    assert sq(spark, "SELECT id FROM lake.sp.t ORDER BY id") == [(2,), (3,), (4,), (5,)]
    assert env.listed("sp") == [("sp", "t")]


@pytest.mark.heavy_client
def test_spark_rows_read_by_duckdb_and_pyiceberg(env, spark, duck, module_cluster):
    sq(spark, "CREATE NAMESPACE lake.xs")
    sq(spark, "CREATE TABLE lake.xs.t (id BIGINT, name STRING) USING iceberg")
    sq(spark, "INSERT INTO lake.xs.t VALUES (1, 'a'), (2, 'b')")
    assert q(duck, "SELECT * FROM lake.xs.t ORDER BY id") == [(1, "a"), (2, "b")]
    table = env.pyiceberg().load_table("xs.t")
    got = table.scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["name"]) for r in got) == [(1, "a"), (2, "b")]
    assert env.listed("xs") == [("xs", "t")]
    data, meta = env.assert_table_files("xs", "t")
    # what Spark wrote is in the mount too: the same listing, its metadata file, its rows
    m = start_mount(module_cluster, env.filer.url, name="eng-spark-mount")
    try:
        tdir = m.p("buckets", BUCKET, "xs", "t")
        prefix = "s3://%s/xs/t/" % BUCKET

        def walk(sub):
            out = []
            for root, _, names in os.walk(os.path.join(tdir, sub)):
                out += [os.path.join(root, n)[len(tdir):] for n in names]
            return sorted(out)
        base = "/buckets/%s/xs/t" % BUCKET
        assert walk("data") == sorted(p[len(base):] for p in data)
        assert walk("metadata") == sorted(p[len(base):] for p in meta)
        with open(os.path.join(tdir, table.metadata_location[len(prefix):])) as f:
            md = json.load(f)
        assert md["current-snapshot-id"] == table.metadata.current_snapshot_id
        assert md["table-uuid"] == str(table.metadata.table_uuid)
        rows = []
        for t in table.scan().plan_files():
            rows += pq.read_table(os.path.join(tdir, t.file.file_path[len(prefix):])).to_pylist()
        assert sorted((r["id"], r["name"]) for r in rows) == [(1, "a"), (2, "b")]
    finally:
        m.unmount()


@pytest.mark.heavy_client
def test_pyiceberg_rows_read_by_spark(env, spark):
    pyiceberg_table(env, "ps", [7, 8], ["g", "h"])
    assert sq(spark, "SELECT * FROM lake.ps.t ORDER BY id") == [(7, "g"), (8, "h")]
    assert env.listed("ps") == [("ps", "t")]
