"""The Delta sink of a streaming table: the table is created once, when the streaming table is;
then each micro-batch is one Delta commit by path (no catalog call per batch): a MERGE on the
columns that identify a pane's row when the batch re-fires panes (their rows replace the
earlier ones), else an append (first firings have no row yet). The commit records the batch
as a Delta transaction of the stream (an append through io.sqlext.streaming.DeltaBatchAppend,
a MERGE through Delta's txnAppId/txnVersion), so a batch replayed after a restart is written
once.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from sql_ext import bridge
from sql_ext.errors import WindowSqlError
from sql_ext.names import string_literal


def create_table(spark: SparkSession, name: str, schema: StructType, location: str | None,
                 replace: bool, partitioned_by: tuple[str, ...] = (),
                 properties: dict[str, str] | None = None) -> None:
    """Creates the streaming table `name` (Delta, at `location` or the catalog's managed place,
    partitioned by `partitioned_by`, with table `properties`). A location that already holds a
    Delta table is that table: registered as it is (the catalog may be new), or emptied first
    when `replace`."""
    if location and DeltaTable.isDeltaTable(spark, location):
        if replace:
            spark.createDataFrame([], schema).write.format("delta").mode("overwrite") \
                .option("overwriteSchema", "true").partitionBy(*partitioned_by).save(location)
        spark.catalog.createTable(name, path=location, source="delta")
        set_properties(spark, name, properties or {})
        return
    # A new table: one DDL statement, one Delta commit of its metadata, no Spark job.
    columns = spark._jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json()).toDDL()
    clauses = [f"CREATE TABLE {name} ({columns}) USING DELTA"]
    if partitioned_by:
        clauses.append(f"PARTITIONED BY ({', '.join(map(_quoted, partitioned_by))})")
    if location:
        clauses.append(f"LOCATION {string_literal(location)}")
    if properties:
        clauses.append(f"TBLPROPERTIES ({_property_pairs(properties)})")
    spark.sql(" ".join(clauses))


def set_properties(spark: SparkSession, name: str, properties: dict[str, str],
                   previous: dict[str, str] | None = None) -> None:
    """Makes the table's TBLPROPERTIES `properties` where they differ from `previous` (removing
    the ones no longer given), in one commit; nothing when nothing changed."""
    previous = previous or {}
    changed = {k: v for k, v in properties.items() if previous.get(k) != v}
    if changed:
        spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ({_property_pairs(changed)})")
    gone = [k for k in previous if k not in properties]
    if gone:
        spark.sql(f"ALTER TABLE {name} UNSET TBLPROPERTIES IF EXISTS "
                  f"({', '.join(map(string_literal, gone))})")


def _property_pairs(properties: dict[str, str]) -> str:
    """'k' = 'v', ... of a TBLPROPERTIES clause."""
    return ", ".join(f"{string_literal(k)} = {string_literal(v)}" for k, v in properties.items())


# Settings of every streaming table's own session (a copy of the creating session, made when
# the stream starts), unless the session sets them: RocksDB commits a changelog of the
# micro-batch's changes instead of a snapshot of the whole store (half the commit time here;
# snapshots are still written in the background). Checkpoints written without it resume.
# Checkpoint files on a local disk are written without Hadoop's forks of `chmod` (30-40 ms a
# file, several files a micro-batch; io.sqlext.streaming.LocalCheckpointFiles); other file
# systems keep Spark's own manager.
STREAM_SETTINGS = {
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.streaming.checkpointFileManagerClass": "io.sqlext.streaming.LocalCheckpointFiles",
}


@contextmanager
def stream_settings(spark: SparkSession):
    """STREAM_SETTINGS in `spark` while a stream starts (it copies them), then as they were."""
    unset = [key for key in STREAM_SETTINGS if spark.conf.get(key, None) is None]
    for key in unset:
        spark.conf.set(key, STREAM_SETTINGS[key])
    try:
        yield
    finally:
        for key in unset:
            spark.conf.unset(key)


# A session setting for benchmarks: "noop" computes every micro-batch's rows and writes none.
BENCH_SINK = "spark.sql_ext.bench.sink"


class DeltaSink:
    """One Delta commit per micro-batch into the table at `location`; `app_id` names the
    stream's incarnation (a replaced stream starts its batch ids again)."""

    def __init__(self, location: str, app_id: str, merge_on: list[str]):
        self.location = location
        self.app_id = app_id
        self.merge_on = " AND ".join(f"t.{c} <=> s.{c}" for c in map(_quoted, merge_on))

    def write(self, rows: DataFrame, batch_id: int, upsert: bool, count: int) -> None:
        if count == 0:
            return
        session = rows.sparkSession
        if session.conf.get(BENCH_SINK, "delta") == "noop":
            # Benchmarks only: everything but the Delta commit, as Spark's noop sink measures.
            rows.write.format("noop").mode("overwrite").save()
            return
        if not upsert:
            # A file per half million rows: a micro-batch's few firings in one file, not one
            # per shuffle partition (each small file costs the commit more than its rows). At
            # most once per (stream, batch), checked without Delta's state reconstruction.
            bridge.delta_batch_append(rows.coalesce(count // 500_000 + 1), self.location,
                                      self.app_id, batch_id)
            return
        # Idempotent per micro-batch: Delta skips a (txnAppId, txnVersion) it already committed.
        session.conf.set("spark.databricks.delta.write.txnAppId", self.app_id)
        session.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
        try:
            (DeltaTable.forPath(session, self.location).alias("t")
             .merge(rows.alias("s"), self.merge_on)
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        finally:
            session.conf.unset("spark.databricks.delta.write.txnAppId")
            session.conf.unset("spark.databricks.delta.write.txnVersion")


def create_late_table(spark: SparkSession, name: str, schema: StructType,
                      replace: bool) -> None:
    """The LATE ROWS INTO table of a new streaming table: created, or kept when it has these
    columns (a stream replaced starts it over: emptied)."""
    if spark.catalog.tableExists(name):
        have = [(f.name, f.dataType.simpleString()) for f in spark.table(name).schema.fields]
        want = [(f.name, f.dataType.simpleString()) for f in schema.fields]
        if have != want:
            raise WindowSqlError(f"LATE ROWS INTO {name}: the table exists with other columns "
                                 f"({', '.join(' '.join(c) for c in have)}) than the late rows "
                                 f"have ({', '.join(' '.join(c) for c in want)}); drop it or "
                                 "choose another table")
        if replace:
            spark.sql(f"DELETE FROM {name}")
        return
    columns = spark._jvm.org.apache.spark.sql.types.DataType.fromJson(schema.json()).toDDL()
    spark.sql(f"CREATE TABLE {name} ({columns}) USING DELTA")


class LateRowsSink:
    """LATE ROWS INTO of a streaming table: the tasks of each micro-batch write its late rows
    to files of the late table (io.sqlext.streaming.LateRowFiles); they are committed here in
    one commit that records the batch (as DeltaSink's appends), so a batch replayed after a
    restart adds them once."""

    def __init__(self, checkpoint: str, app_id: str):
        self.checkpoint = checkpoint
        self.app_id = app_id

    def commit(self, spark: SparkSession, batch_id: int) -> None:
        # Benchmarks' noop sink: the files are written (as a sink's are), then deleted.
        noop = spark.conf.get(BENCH_SINK, "delta") == "noop"
        bridge.commit_late_rows(spark, self.checkpoint, self.app_id, batch_id, discard=noop)


def _quoted(column: str) -> str:
    return "`" + column.replace("`", "``") + "`"


def fault_stage() -> str:
    """The stage of a micro-batch at which the test hook fault_point stops ("written")."""
    return os.environ.get("SQL_EXT_FAULT_STAGE", "written")


def fault_point(batch_id: int, stage: str = "written") -> None:
    """Test hook: with SQL_EXT_FAULT_PAUSE=<file>, the first batch whose write committed (from
    batch SQL_EXT_FAULT_BATCH on, default 0) writes its id to <file> and waits there to be
    killed (before its offsets are committed). SQL_EXT_FAULT_STAGE=firings stops a stream with
    LATE ROWS INTO between the commit of its firings and that of its late rows instead."""
    marker = os.environ.get("SQL_EXT_FAULT_PAUSE")
    if marker and not os.path.exists(marker) and stage == fault_stage() \
            and batch_id >= int(os.environ.get("SQL_EXT_FAULT_BATCH", "0")):
        with open(marker, "w") as out:
            out.write(str(batch_id))
        time.sleep(3600)
