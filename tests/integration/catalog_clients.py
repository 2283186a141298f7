"""Helpers for tests that drive the catalog clients (pyiceberg, DuckDB, Spark, pylance).

The clients are the pinned ones of contrib/requirements-test.txt; Spark's jars come
from contrib/fetch-spark-jars.sh's cache. Nothing here reaches a network: DuckDB's
extensions are loaded from the files their PyPI wheels carry (DuckDB's own extension
server is out of reach), and Spark binds to loopback.
"""

import contextlib
import subprocess
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FETCH_JARS = ROOT / "contrib" / "fetch-spark-jars.sh"

# Loaded in this order: iceberg reads manifests with avro's reader and S3 through httpfs.
DUCKDB_EXTENSIONS = ("avro", "httpfs", "iceberg")


def duckdb_extension_file(name):
    """The .duckdb_extension file of wheel duckdb-extension-NAME for the installed duckdb."""
    import duckdb

    dist = metadata.distribution("duckdb-extension-" + name)
    want = "v%s/%s.duckdb_extension" % (duckdb.__version__, name)
    for f in dist.files or ():
        if str(f).endswith(want):
            path = Path(dist.locate_file(f))
            if path.is_file():
                return path
    raise FileNotFoundError("duckdb-extension-%s %s has no %s" % (name, dist.version, want))


def duckdb_connect(extension_dir, database=":memory:", extensions=DUCKDB_EXTENSIONS):
    """A DuckDB connection with EXTENSIONS installed from their wheels into
    EXTENSION_DIR and loaded. Autoinstall is off, so a missing extension fails at once
    rather than trying DuckDB's server."""
    import duckdb

    con = duckdb.connect(database, config={
        "extension_directory": str(extension_dir),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
    })
    for name in extensions:
        con.execute("INSTALL '%s'" % duckdb_extension_file(name))
        con.execute("LOAD %s" % name)
    return con


def spark_jars():
    """Paths of Iceberg's Spark runtime and AWS bundle jars. fetch-spark-jars.sh only
    checks digests when the cache is warm (install-deps.sh filled it)."""
    out = subprocess.run([str(FETCH_JARS)], check=True, capture_output=True, text=True,
                         timeout=600).stdout
    return [line for line in out.splitlines() if line]


@contextlib.contextmanager
def spark_session(tmp_dir, catalogs=None, app="weedfs-test"):
    """A local Spark session (one core, small heap, loopback, no UI) with Iceberg's jars
    and SQL extensions. CATALOGS maps a catalog name to its spark.sql.catalog.NAME.*
    options, e.g. {"local": {"type": "hadoop", "warehouse": path}}. The JVM this starts
    is stopped, by its PID, on exit."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    tmp_dir = Path(tmp_dir)
    b = (SparkSession.builder.master("local[1]").appName(app)
         .config("spark.jars", ",".join(spark_jars()))
         .config("spark.sql.extensions",
                 "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.driver.memory", "512m")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "1")
         .config("spark.default.parallelism", "1")
         .config("spark.local.dir", str(tmp_dir / "spark-local"))
         .config("spark.sql.warehouse.dir", str(tmp_dir / "spark-warehouse")))
    for name, opts in (catalogs or {}).items():
        b = b.config("spark.sql.catalog." + name, "org.apache.iceberg.spark.SparkCatalog")
        for k, v in opts.items():
            b = b.config("spark.sql.catalog.%s.%s" % (name, k), str(v))
    spark = b.getOrCreate()
    try:
        yield spark
    finally:
        spark.stop()
        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        if gateway is not None:
            gateway.shutdown()
        SparkContext._gateway = None
        SparkContext._jvm = None
        if proc is not None:
            # The JVM exits when its stdin closes; kill it only if it does not.
            with contextlib.suppress(Exception):
                proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
