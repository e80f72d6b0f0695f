"""Streaming tables: a windowed query over FROM STREAM(source) written into a Delta table.

    query = sql_ext.create_streaming_table(spark, "max_flow", '''
        SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end, MAX(lane_flow) AS flow
        FROM STREAM(traffic)
        WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway)
        WATERMARK DELAY 10''', checkpoint="/tmp/ckpt/max_flow")

The source's tuples, with the window's helper columns, go through the JVM pane processor under
transformWithState (state in Spark's state store, event-time timers), which emits every tuple
of every firing. Each micro-batch then runs the query's ordinary aggregation over its firings
and MERGEs the rows into the Delta table, keyed by partition keys, window and group keys: a late
re-firing replaces its pane's row. The MERGE carries Delta's txnAppId/txnVersion, so a batch
replayed after a restart is written once.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery
from sqlglot import exp

from sql_ext.errors import WindowSqlError
from sql_ext.rewrite import LoweredWindow, lower_parts, parse, stream_source

log = logging.getLogger("sql_ext")
KEY_COLUMN = "_sx_key"


@dataclass
class StreamingTable:
    name: str
    sql: str
    query: StreamingQuery


_running: dict[str, StreamingTable] = {}


def _windowed_select(sql: str) -> exp.Select:
    statements = parse(sql)
    select = statements[0] if len(statements) == 1 else None
    if not isinstance(select, exp.Select) or select.args.get("sx_window") is None \
            or stream_source(select) is None:
        raise WindowSqlError("a streaming table needs one windowed SELECT ... FROM STREAM(source)")
    return select


def _source_stream(spark: SparkSession, source: str) -> DataFrame:
    """A streaming view (e.g. over a file directory) as it is, a table as a stream."""
    try:
        frame = spark.table(source)
        if frame.isStreaming:
            return frame
    except Exception:  # noqa: BLE001 - not a view: read the table as a stream below
        pass
    return spark.readStream.table(source)


def _merge(batch: DataFrame, table: str, location: str | None, app_id: str,
           batch_id: int) -> None:
    session = batch.sparkSession
    if not session.catalog.tableExists(table):
        if location and DeltaTable.isDeltaTable(session, location):
            # A restarted application (its catalog may be new): the table's data is there.
            session.sql(f"CREATE TABLE {table} USING DELTA LOCATION '{location}'")
        else:
            writer = batch.limit(0).write.format("delta")
            if location:
                writer = writer.option("path", location)
            writer.saveAsTable(table)
    # Idempotent per micro-batch: Delta skips a (txnAppId, txnVersion) it already committed.
    session.conf.set("spark.databricks.delta.write.txnAppId", app_id)
    session.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
    try:
        (DeltaTable.forName(session, table).alias("t")
         .merge(batch.alias("s"), f"t.{KEY_COLUMN} <=> s.{KEY_COLUMN}")
         .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
    finally:
        session.conf.unset("spark.databricks.delta.write.txnAppId")
        session.conf.unset("spark.databricks.delta.write.txnVersion")


def _fault_point(batch_id: int) -> None:
    """Test hook: with SQL_EXT_FAULT_PAUSE=<file>, the first batch whose MERGE committed
    writes its id to <file> and waits there to be killed (before its offsets are committed)."""
    marker = os.environ.get("SQL_EXT_FAULT_PAUSE")
    if marker and not os.path.exists(marker):
        with open(marker, "w") as out:
            out.write(str(batch_id))
        time.sleep(3600)


def create_streaming_table(spark: SparkSession, name: str, sql: str, *, checkpoint: str,
                           location: str | None = None,
                           trigger: str | float = "available_now") -> StreamingQuery:
    """Starts `sql` (a windowed SELECT over FROM STREAM(source)) into the Delta table `name`.
    trigger: "available_now" (process what is there, then stop) or seconds between batches."""
    import json

    select = _windowed_select(sql)
    lowered: LoweredWindow = lower_parts(select, streaming=True)
    source_view = f"__sx_source_{name}"
    _source_stream(spark, stream_source(select)).createOrReplaceTempView(source_view)
    lowered.inner.set("from_", exp.From(this=exp.to_table(source_view)))
    tuples = spark.sql(lowered.inner.sql(dialect="spark"))
    jvm = spark.sparkContext._jvm
    firings = DataFrame(jvm.io.sqlext.streaming.StreamingWindows.firings(
        tuples._jdf, json.dumps(lowered.spec)), spark)

    firings_view = f"__sx_firings_{name}"
    outer = lowered.outer
    outer.set("from_", exp.From(this=exp.to_table(firings_view)))
    outer = outer.select(exp.alias_(lowered.key, KEY_COLUMN), copy=False)
    outer_sql = outer.sql(dialect="spark")

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        batch.createOrReplaceTempView(firings_view)
        # Computed once, always: the window state of the batch commits only when all of its
        # partitions run, also when Delta skips the MERGE of a batch replayed after a restart.
        rows = batch.sparkSession.sql(outer_sql).localCheckpoint(eager=True)
        _merge(rows, name, location, f"sql_ext:{name}", batch_id)
        _fault_point(batch_id)

    writer = (firings.writeStream.foreachBatch(write_batch).queryName(name)
              .option("checkpointLocation", checkpoint))
    writer = writer.trigger(availableNow=True) if trigger == "available_now" \
        else writer.trigger(processingTime=f"{float(trigger)} seconds")
    query = writer.start()
    _running[name] = StreamingTable(name, sql, query)
    log.info("sql_ext streaming table %s started (checkpoint %s)", name, checkpoint)
    return query


def show_streams() -> list[dict]:
    """The streaming tables of this process with their state and last progress."""
    out = []
    for table in _running.values():
        progress = table.query.lastProgress or {}
        out.append({"name": table.name, "active": table.query.isActive,
                    "batch": progress.get("batchId"),
                    "rows_in": progress.get("numInputRows"),
                    "watermark": (progress.get("eventTime") or {}).get("watermark"),
                    "state_rows": sum(op.get("numRowsTotal", 0)
                                      for op in progress.get("stateOperators", []))})
    return out


def stop_stream(name: str) -> None:
    table = _running.pop(name, None)
    if table is None:
        raise WindowSqlError(f"STOP STREAM {name}: no streaming table of that name is running")
    table.query.stop()
