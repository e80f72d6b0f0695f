"""Session setup: one function wires jars, extensions, Delta and the rewriter."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from sql_ext import jars, jvm, udaf
from sql_ext.metastore import (BENIGN_LOG_LINES, METASTORE_ENV, CatalogInUse, catalog_conf,
                               check_open, java_options, set_aside_unfinished)
from sql_ext.logs import HARMLESS_LOG_LINES, VERBOSE_ENV
from sql_ext.server import callback
from sql_ext.spark_settings import is_secret

# spark-submit's class loader for the application's jars: it can take more at run time.
ADDABLE_LOADERS = ("org.apache.spark.util.MutableURLClassLoader",
                   "org.apache.spark.util.ChildFirstURLClassLoader")

REDACTED_OPTIONS = r"(?i)url|private key|keystore.key"

# Spark's settings as the embedded default and the servers start them, where they differ from
# Spark's own defaults; a caller's `conf` (a server's --conf) wins over each. The settings page
# lists them (tests/test_docs_agree.py).
SPARK_DEFAULTS = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    # Delta's snapshot state (one row per data file) defaults to 50 partitions. Each is a task
    # whose setup (generated projections of Delta's action schema) costs more than its rows: a
    # statement over a small table runs several such jobs (docs/benchmarks.md).
    "spark.databricks.delta.snapshotPartitions": "1",
    # Delta's VACUUM lists a table's folder in jobs of this many tasks: at Spark's 10,000 the
    # VACUUM of a four-file table ran 170,091 tasks in 51.5 s, at 4 159 tasks in 6.4 s
    # (docs/operations/maintenance.md).
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "8",
    # Options shown redacted (SHOW CREATE TABLE, DESCRIBE, SHOW TBLPROPERTIES), beside Spark's
    # secrets (spark.redaction.regex: password, token, ...): Spark's default (URLs), and private
    # keys given inline (a Kafka table's kafka.ssl.keystore.key, any PEM key).
    "spark.sql.redaction.options.regex": REDACTED_OPTIONS,
}


def _embedded_environment() -> None:
    """The embedded default's processes: one machine, this interpreter for Python workers.
    Only `session()` sets these; on a user's cluster they are the user's choice."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def _load_into_running_driver(jar_paths: list[str]) -> None:
    """Makes the extension and Delta loadable in a driver JVM that is already running, before
    the session starts: spark-submit runs the application under a class loader that accepts
    more jars, and Spark loads session extensions and catalogs through it."""
    add_jars(jvm.driver_class_loader(), jar_paths)


def add_jars(loader, jar_paths: list[str]) -> None:
    """Adds `jar_paths` to `loader` unless it loads the extension already; an error with the
    spark-submit arguments when it cannot take jars."""
    if jvm.loadable(loader, jars.EXTENSION_CLASS):
        return
    kind = jvm.class_loader_name(loader)
    if kind not in ADDABLE_LOADERS:
        raise RuntimeError(
            f"sql_ext.configure: the Spark driver is already running and its class loader "
            f"({kind}) cannot take sql-ext's jars; start the job with them: spark-submit "
            + " ".join(jars.submit_arguments()) + " ... (`sql-ext jars` prints these)")
    for path in jar_paths:
        jvm.add_jar(loader, path)


def _joined(ours: list[str], theirs: str | None, separator: str) -> str:
    """Ours first, then the caller's own entries of a list-valued setting, each once."""
    entries = ours + [e for e in (theirs or "").split(separator) if e and e not in ours]
    return separator.join(entries)


def _sql_ext_settings(given: dict[str, str], jar_paths: list[str]) -> dict[str, str]:
    """What sql-ext sets on a builder: its jars and extension beside the caller's own (list
    settings are joined, not replaced), Delta's catalog and the state store its windows need,
    and a default the caller may override (the local file system's implementation)."""
    settings = {
        # The driver's system classpath: the Thrift server closes the class loader of
        # spark.jars when a JDBC session ends, which would break classes loaded later.
        "spark.driver.extraClassPath": _joined(jar_paths, given.get(
            "spark.driver.extraClassPath"), os.pathsep),
        "spark.jars": _joined(jars.jar_uris(), given.get("spark.jars"), ","),
        "spark.sql.extensions": _joined(jars.EXTENSIONS.split(","),
                                        given.get("spark.sql.extensions"), ","),
        "spark.sql.catalog.spark_catalog": jars.DELTA_CATALOG,
        "spark.sql.streaming.stateStore.providerClass": jars.ROCKSDB_STATE_STORE,
    }
    defaults = {
        # Hadoop's local file system without a process per file created or renamed (Delta's
        # commits, data files, checksums): io.sqlext.streaming.LocalFiles.
        "spark.hadoop.fs.file.impl": jars.LOCAL_FILES,
        "spark.hadoop.fs.AbstractFileSystem.file.impl": jars.LOCAL_FILES_FS,
    }
    return {**settings, **{k: v for k, v in defaults.items() if k not in given}}


def configure(builder: SparkSession.Builder) -> SparkSession:
    """Adds the extension and Delta to a user's builder, starts the session, registers the
    rewriter, and returns the session: `spark.sql(<windowed SQL>)` then works directly.
    Under spark-submit (client mode) it needs no extra arguments."""
    jar_paths = [str(p) for p in jars.all_jars()]
    if jvm.driver_running():
        _load_into_running_driver(jar_paths)
    given = dict(builder._options)  # the caller's settings (and earlier builders', PySpark's)
    for key, value in _sql_ext_settings(given, jar_paths).items():
        builder = builder.config(key, value)
    jvm.start_driver(builder._options, lambda key: is_secret(key, given))
    spark = builder.getOrCreate()
    if jars.EXTENSION_CLASS not in (spark.conf.get("spark.sql.extensions", "") or ""):
        raise RuntimeError(
            "sql_ext.configure: a SparkSession without sql-ext already runs in this process and "
            "getOrCreate returned it; stop it (spark.stop()) before calling configure")
    callback.register(spark)
    udaf.register_all(spark)
    return spark


def session(
    warehouse: str | Path | None = None,
    master: str = "local[2]",
    app_name: str = "sql-ext",
    conf: dict | None = None,
    metastore: str | None = None,
) -> SparkSession:
    """The embedded default: local Spark, a Delta warehouse (see `jars.default_warehouse`), a
    persistent catalog (an embedded metastore in the warehouse, or `metastore`: see
    sql_ext.metastore). The warehouse defaults to `jars.default_warehouse()`. `conf` wins over
    the defaults set here (Java options are joined: the catalog's first, then conf's)."""
    _embedded_environment()
    warehouse = Path(warehouse or jars.default_warehouse()).resolve()
    warehouse.mkdir(parents=True, exist_ok=True)
    if metastore is None and not os.environ.get(METASTORE_ENV):
        set_aside_unfinished(warehouse)
    conf = dict(conf or {})
    # The embedded catalog's Java options (Derby's log) beside the caller's own.
    java = " ".join(filter(None, (java_options(warehouse),
                                  conf.pop("spark.driver.extraJavaOptions", None))))
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.extraJavaOptions", java)
    )
    for key, value in {**SPARK_DEFAULTS, **catalog_conf(warehouse, metastore), **conf}.items():
        builder = builder.config(key, value)
    spark = configure(builder)
    if os.environ.get(VERBOSE_ENV) != "1":
        for logger, pattern in {**BENIGN_LOG_LINES, **HARMLESS_LOG_LINES}.items():
            jvm.drop_log_lines(spark, logger, pattern)
    try:
        check_open(spark, warehouse)
    except CatalogInUse:
        spark.stop()
        raise
    return spark
