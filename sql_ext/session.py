"""Session setup: one function wires jars, extensions, Delta and the rewriter."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from sql_ext import bridge, catalog, jars, udaf

EXTENSIONS = "io.sqlext.SqlExtExtensions,io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
ROCKSDB_STATE_STORE = \
    "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def _prepare_environment() -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def configure(builder: SparkSession.Builder) -> SparkSession:
    """Adds the extension and Delta to a user's builder, starts the session, registers the
    rewriter, and returns the session: `spark.sql(<windowed SQL>)` then works directly."""
    _prepare_environment()
    jar_paths = [str(p) for p in jars.all_jars()]
    spark = (
        # The driver's system classpath: the Thrift server closes the class loader of
        # spark.jars when a JDBC session ends, which would break classes loaded later.
        builder.config("spark.driver.extraClassPath", os.pathsep.join(jar_paths))
        .config("spark.jars", ",".join(jar_paths))
        .config("spark.sql.extensions", EXTENSIONS)
        .config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
        # Streaming windows run under transformWithState, which needs the RocksDB store.
        .config("spark.sql.streaming.stateStore.providerClass", ROCKSDB_STATE_STORE)
        .getOrCreate()
    )
    bridge.register(spark)
    udaf.register_all(spark)
    return spark


def session(
    warehouse: str | Path | None = None,
    master: str = "local[2]",
    app_name: str = "sql-ext",
    conf: dict | None = None,
    metastore: str | None = None,
) -> SparkSession:
    """The embedded default: local Spark, a Delta warehouse under the project folder, and a
    persistent catalog (an embedded metastore in the warehouse, or `metastore`: see
    sql_ext.catalog)."""
    warehouse = Path(warehouse or jars.PROJECT_DIR / "warehouse").resolve()
    warehouse.mkdir(parents=True, exist_ok=True)
    if metastore is None and not os.environ.get(catalog.METASTORE_ENV):
        catalog.set_aside_unfinished(warehouse)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.extraJavaOptions", catalog.java_options(warehouse))
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        # Delta's snapshot state defaults to 50 partitions: far too many for local[2].
        .config("spark.databricks.delta.snapshotPartitions", "2")
    )
    for key, value in {**catalog.catalog_conf(warehouse, metastore), **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = configure(builder)
    try:
        catalog.check_open(spark, warehouse)
    except catalog.CatalogInUse:
        spark.stop()
        raise
    return spark
