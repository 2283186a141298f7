"""The weedfs Iceberg REST catalog (docs/catalog.md) used by real engines: DuckDB's
iceberg extension (CREATE SCHEMA/TABLE, INSERT, SELECT, UPDATE, DELETE), and the
tables each engine makes seen by the others: `aws s3tables list-tables` lists them
and the filer holds their data and metadata files under /buckets/<bucket>/<ns>/<t>.

Markers: none (no JVM), so these run under the sanitizer builds too."""
import json
import os
import subprocess

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

import catalog_clients
from filer_fixtures import start_mini_with_filer

BUCKET = "eng"


class Env:
    def __init__(self, m, filer):
        self.m, self.filer = m, filer
        self.uri = "http://127.0.0.1:%d" % m.catalog_port
        self.s3 = "127.0.0.1:%d" % m.s3_port

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

    def files_under(self, path):
        """Every file below path (recursively), through the filer's JSON listing."""
        out = []
        r = self.filer.get(path + "/", headers={"Accept": "application/json"})
        if r.status_code == 404:
            return out
        assert r.status_code == 200, r.text
        for e in r.json()["Entries"] or []:
            if e["Mode"] & 0o40000:
                out += self.files_under(e["FullPath"])
            else:
                out.append(e["FullPath"])
        return out

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
                "URL_STYLE 'path', USE_SSL false, REGION 'us-east-1')" % env.s3)
    con.execute("ATTACH '%s' AS lake (TYPE ICEBERG, ENDPOINT '%s', AUTHORIZATION_TYPE 'none')"
                % (BUCKET, env.uri))
    yield con
    con.close()


def q(con, sql):
    return con.execute(sql).fetchall()


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
    cat = env.pyiceberg()
    cat.create_namespace("py")
    schema = Schema(NestedField(1, "id", LongType(), required=False),
                    NestedField(2, "name", StringType(), required=False))
    t = cat.create_table("py.t", schema)
    t.append(pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["p", "q"]}))
    assert q(duck, "SELECT * FROM lake.py.t ORDER BY id") == [(1, "p"), (2, "q")]
    # DuckDB's insert into pyiceberg's table reads back in pyiceberg
    q(duck, "INSERT INTO lake.py.t VALUES (3, 'r')")
    got = cat.load_table("py.t").scan().to_arrow().to_pylist()
    assert sorted(r["id"] for r in got) == [1, 2, 3]
    assert env.listed("py") == [("py", "t")]
    env.assert_table_files("py", "t")
