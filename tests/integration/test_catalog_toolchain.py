"""The pinned catalog clients work on this machine, each on its own local tables.

No weedfs daemon is involved: these tests prove the toolchain the catalog tests will
use (contrib/requirements-test.txt, contrib/fetch-spark-jars.sh), so that a failure
there is told apart from a failure of weedfs's catalog. pyiceberg writes through a
SQLite SqlCatalog and DuckDB reads what it wrote; Spark writes through a Hadoop
catalog and DuckDB reads that too; pylance writes and reads a dataset.

Markers: client_toolchain (all), heavy_client (the one that starts a JVM).
"""

from pathlib import Path

import pyarrow as pa
import pytest

import catalog_clients

pytestmark = pytest.mark.client_toolchain

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())])
FIRST = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}, schema=SCHEMA)
SECOND = pa.table({"id": [4, 5], "name": ["d", "e"]}, schema=SCHEMA)
ALL_ROWS = [(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]


def rows(table):
    """An Arrow table's (id, name) rows, by id."""
    return sorted((r["id"], r["name"]) for r in table.to_pylist())


def iceberg_table(tmp_path):
    """ns.t in a SQLite SqlCatalog over a local warehouse, with FIRST and SECOND
    appended (two snapshots)."""
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    catalog = SqlCatalog("local", uri="sqlite:///%s" % (tmp_path / "catalog.db"),
                         warehouse=warehouse.as_uri())
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=SCHEMA)
    table.append(FIRST)
    table.append(SECOND)
    return catalog, catalog.load_table("ns.t")


def test_pyiceberg_sql_catalog(tmp_path):
    catalog, table = iceberg_table(tmp_path)
    assert ("ns",) in catalog.list_namespaces()
    assert ("ns", "t") in catalog.list_tables("ns")
    assert len(table.snapshots()) == 2
    assert rows(table.scan().to_arrow()) == ALL_ROWS
    # the filter is applied: rows on both sides of it, in both snapshots' files
    got = table.scan(row_filter="id >= 2 and id < 5", selected_fields=("id", "name")).to_arrow()
    assert rows(got) == [(2, "b"), (3, "c"), (4, "d")]
    # the first snapshot still reads as it was
    first = table.snapshots()[0].snapshot_id
    assert rows(table.scan(snapshot_id=first).to_arrow()) == ALL_ROWS[:3]


def test_duckdb_reads_pyiceberg_table(tmp_path):
    _, table = iceberg_table(tmp_path)
    metadata = table.metadata_location
    assert Path(metadata.removeprefix("file://")).is_file(), metadata
    con = catalog_clients.duckdb_connect(tmp_path / "duckdb-ext")
    try:
        loaded = dict(con.execute(
            "SELECT extension_name, loaded FROM duckdb_extensions()").fetchall())
        for name in catalog_clients.DUCKDB_EXTENSIONS:
            assert loaded.get(name) is True, (name, loaded)
        got = con.execute("SELECT id, name FROM iceberg_scan(?) ORDER BY id",
                          [metadata]).fetchall()
        assert got == ALL_ROWS
        got = con.execute("SELECT id FROM iceberg_scan(?) WHERE name IN ('b', 'e') ORDER BY id",
                          [metadata]).fetchall()
        assert got == [(2,), (5,)]
        snaps = con.execute("SELECT snapshot_id FROM iceberg_snapshots(?) ORDER BY sequence_number",
                            [metadata]).fetchall()
        assert [s[0] for s in snaps] == [s.snapshot_id for s in table.snapshots()]
    finally:
        con.close()


@pytest.mark.heavy_client
def test_spark_hadoop_catalog(tmp_path):
    warehouse = tmp_path / "spark-wh"
    catalogs = {"local": {"type": "hadoop", "warehouse": warehouse.as_uri()}}
    with catalog_clients.spark_session(tmp_path, catalogs) as spark:
        spark.sql("CREATE NAMESPACE local.db")
        spark.sql("CREATE TABLE local.db.t (id BIGINT NOT NULL, name STRING) USING iceberg")
        spark.sql("INSERT INTO local.db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
        spark.sql("INSERT INTO local.db.t VALUES (4, 'd'), (5, 'e')")
        got = [(r.id, r.name) for r in spark.sql(
            "SELECT id, name FROM local.db.t WHERE id >= 2 ORDER BY id").collect()]
        assert got == ALL_ROWS[1:]
        # Iceberg's own metadata table: both inserts are snapshots
        ops = [r.operation for r in spark.sql(
            "SELECT operation FROM local.db.t.snapshots ORDER BY committed_at").collect()]
        assert ops == ["append", "append"]
    # A Hadoop catalog's table is plain Iceberg on disk: another client reads it.
    metadata = sorted((warehouse / "db" / "t" / "metadata").glob("v*.metadata.json"),
                      key=lambda p: int(p.name[1:].split(".")[0]))
    assert metadata, list(warehouse.rglob("*"))
    con = catalog_clients.duckdb_connect(tmp_path / "duckdb-ext")
    try:
        got = con.execute("SELECT id, name FROM iceberg_scan(?) ORDER BY id",
                          [str(metadata[-1])]).fetchall()
        assert got == ALL_ROWS
    finally:
        con.close()


def test_pylance_dataset(tmp_path):
    import lance

    uri = tmp_path / "t.lance"
    lance.write_dataset(FIRST, uri)
    lance.write_dataset(SECOND, uri, mode="append")
    ds = lance.dataset(uri)
    assert ds.count_rows() == 5
    assert ds.version == 2
    assert ds.schema.field("id").type == pa.int64()
    assert rows(ds.to_table()) == ALL_ROWS
    assert rows(ds.to_table(filter="id > 1 AND id < 5")) == ALL_ROWS[1:4]
    # the first version is still there, as written
    assert rows(lance.dataset(uri, version=1).to_table()) == ALL_ROWS[:3]
