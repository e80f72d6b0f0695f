"""The Delta sink of a streaming table: the table is created once, when the streaming table is;
then each micro-batch is one Delta commit by path (no catalog call per batch): a MERGE on the
columns that identify a pane's row when the batch re-fires panes (their rows replace the
earlier ones), else an append (first firings have no row yet). The commit records the batch
as a Delta transaction of the stream (an append through io.sqlext.streaming.delta.DeltaBatchAppend,
a MERGE through Delta's txnAppId/txnVersion), so a batch replayed after a restart is written
once.
"""

from __future__ import annotations

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from sql_ext import jvm
from sql_ext.sql.errors import StreamingTableError
from sql_ext.sql.names import string_literal


def create_table(spark: SparkSession, name: str, schema: StructType, location: str | None,
                 replace: bool, partitioned_by: tuple[str, ...] = (),
                 properties: dict[str, str] | None = None) -> None:
    """Creates the streaming table `name` (Delta, at `location` or the catalog's managed place,
    partitioned by `partitioned_by`, with table `properties`). A location that already holds a
    Delta table is that table: registered as it is (the catalog may be new), or emptied first
    when `replace`."""
    if location and DeltaTable.isDeltaTable(spark, location):
        if replace:
            jvm.empty_delta_table(spark, schema, location, partitioned_by)
        spark.catalog.createTable(name, path=location, source="delta")
        set_properties(spark, name, properties or {})
        return
    # A new table: one DDL statement, one Delta commit of its metadata, no Spark job.
    columns = jvm.table_ddl(spark, schema)
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


# Settings of every streaming table's own session (runner.own_session: a copy of the creating
# session), unless the creating session sets them: RocksDB commits a changelog of the
# micro-batch's changes instead of a snapshot of the whole store (half the commit time here;
# snapshots are still written in the background). Checkpoints written without it resume.
# Checkpoint files on a local disk are written without Hadoop's forks of `chmod` (30-40 ms a
# file, several files a micro-batch; io.sqlext.streaming.LocalCheckpointFiles); other file
# systems keep Spark's own manager.
# Every stream reports its metrics (input and processing rates, latency, state rows, watermark)
# under its query name, the table's name, to Spark's metrics system (sql_ext.server.monitoring).
STREAM_SETTINGS = {
    "spark.sql.streaming.metricsEnabled": "true",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.streaming.checkpointFileManagerClass": "io.sqlext.streaming.LocalCheckpointFiles",
}


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
        if not upsert:
            # A file per half million rows: a micro-batch's few firings in one file, not one
            # per shuffle partition (each small file costs the commit more than its rows). At
            # most once per (stream, batch), checked without Delta's state reconstruction.
            jvm.delta_batch_append(rows.coalesce(count // 500_000 + 1), self.location,
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
            raise StreamingTableError(f"LATE ROWS INTO {name}: the table exists with other "
                                      f"columns ({', '.join(' '.join(c) for c in have)}) than "
                                      f"the late rows have ({', '.join(' '.join(c) for c in want)}"
                                      "); drop it or choose another table")
        if replace:
            spark.sql(f"DELETE FROM {name}")
        return
    columns = jvm.table_ddl(spark, schema)
    spark.sql(f"CREATE TABLE {name} ({columns}) USING DELTA")


class LateRowsSink:
    """LATE ROWS INTO of a streaming table: the tasks of each micro-batch write its late rows
    to files of the late table (io.sqlext.streaming.delta.LateRowFiles); they are committed here in
    one commit that records the batch (as DeltaSink's appends), so a batch replayed after a
    restart adds them once."""

    def __init__(self, checkpoint: str, app_id: str):
        self.checkpoint = checkpoint
        self.app_id = app_id

    def commit(self, spark: SparkSession, batch_id: int) -> None:
        jvm.commit_late_rows(spark, self.checkpoint, self.app_id, batch_id)

    def discard(self, spark: SparkSession, batch_id: int) -> None:
        """Deletes the late rows' files of micro-batch `batch_id` instead (a benchmark's)."""
        jvm.commit_late_rows(spark, self.checkpoint, self.app_id, batch_id, discard=True)


def _quoted(column: str) -> str:
    return "`" + column.replace("`", "``") + "`"


# What wraps the sinks of the streams this process starts: a function(table_sink, late_sink or
# None) -> (table_sink, late_sink), or None. Tests stop a stream between two commits with it
# (tests/fault_sinks.py), the streaming benchmark measures everything but the commits
# (python/bench_streaming.py). Only the process's own Python sets it (wrap_sinks), never a
# setting or a statement: no client of a server can make it import or run anything.
_sink_wrapper = None


def wrap_sinks(function) -> None:
    """From now on, streams started in this process write through `function` (None: to their
    sinks as they are). For tests and benchmarks."""
    global _sink_wrapper
    _sink_wrapper = function


def sinks_of(table: DeltaSink, late: LateRowsSink | None) -> tuple:
    """The sinks a stream writes to: (table, late), as wrap_sinks wraps them."""
    if _sink_wrapper is None:
        return table, late
    return _sink_wrapper(table, late)
