"""SHOW STREAMS: every streaming table of the catalog with its state and figures, from this
process's runs where it runs them, else from the catalog and the checkpoint."""

from __future__ import annotations

import datetime

from pyspark.sql import SparkSession

from sql_ext import jvm
from sql_ext.sql.contract import STREAM_COLUMNS
from sql_ext.streaming import catalog, runs
from sql_ext.streaming.catalog import Entry
from sql_ext.streaming.plan import late_rows_table
from sql_ext.streaming.runs import named_entry, now, short_error


def show_streams(spark: SparkSession) -> list[dict]:
    """SHOW STREAMS: every streaming table of the catalog, running or not, one dict each with
    STREAM_COLUMNS. Figures of runs in this process (rows read and written add up over the
    runs); for others the last committed batch and its time, from the checkpoint. A signed-in
    user sees the streams of the tables the server's access rules let them read."""
    return [_status(spark, entry) for entry in catalog.entries(spark)
            if jvm.readable(spark, entry.db, entry.table)]


def stream_status(spark: SparkSession, name: str) -> dict:
    """The SHOW STREAMS row of one streaming table."""
    return _status(spark, named_entry(spark, name, "SHOW STREAMS"))


def state_curve(spark: SparkSession, name: str) -> list[tuple[int, int]]:
    """(batch id, rows in the state store) of each micro-batch of this process's latest run."""
    run = runs.latest(spark, named_entry(spark, name, "state_curve"))
    return [] if run is None else jvm.state_curve(spark, run.query)


def _status(spark: SparkSession, entry: Entry) -> dict:
    definition = entry.definition
    run = runs.latest(spark, entry)
    status = dict.fromkeys(STREAM_COLUMNS)
    status.update(name=entry.name, trigger=definition.trigger_text(),
                  checkpoint=definition.checkpoint, last_error=entry.error,
                  last_error_time=entry.error_time, state=entry.state, owner=entry.owner)
    if run is not None:
        progress = run.query.lastProgress or {}
        states = progress.get("stateOperators", [])
        late, not_windowed, out_of_order, undecodable = jvm.dropped_rows(
            spark, definition.checkpoint)
        status.update(rows_in=jvm.rows_in(spark, run.query),
                      rows_out=run.rows_out, location=run.location,
                      watermark=(progress.get("eventTime") or {}).get("watermark"),
                      state_rows=sum(op.get("numRowsTotal", 0) for op in states),
                      state_bytes=sum(op.get("memoryUsedBytes", 0) for op in states),
                      late_dropped=late, not_windowed=not_windowed,
                      out_of_order_rows=out_of_order, undecodable_messages=undecodable)
        failure = None if run.query.isActive else run.query.exception()
        if run.query.isActive:
            status["state"] = "RUNNING"
        elif failure is not None and entry.state != "FAILED":
            # Seen here before the JVM listener recorded it (it runs on Spark's listener bus).
            catalog.record_failure(spark, entry, short_error(str(failure)), now())
            entry = catalog.entry(entry.db, entry.table, catalog.read(spark, entry.db,
                                                                     entry.table))
            status.update(state="FAILED", last_error=entry.error,
                          last_error_time=entry.error_time)
    if status["state"] == "RUNNING" and (run is None or not run.query.isActive):
        status["state"] = "STOPPED"  # recorded running, but no process here runs it
    committed = catalog.last_commit(spark, definition.checkpoint)
    if committed is not None:
        status["batch"] = committed[0]
        status["last_progress"] = datetime.datetime.fromtimestamp(
            committed[1] / 1000, datetime.timezone.utc).isoformat(timespec="seconds")
    late_table = late_rows_table(definition.query)
    if late_table and spark.catalog.tableExists(late_table):
        # LATE ROWS INTO holds every late tuple of every run, exactly once: count those.
        status["late_dropped"] = spark.table(late_table).count()
    return status
