"""Streaming tables: a windowed query over FROM STREAM(source) written into a Delta table, an
object of the catalog (spec/sql.md section 5).

    query = create_streaming_table(spark, "max_flow", '''
        SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end, MAX(lane_flow) AS flow
        FROM STREAM(traffic)
        WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway)
        WATERMARK DELAY 10''', checkpoint="/tmp/ckpt/max_flow", trigger=10)

The source's tuples, with the window's helper columns, go through the JVM pane processor under
transformWithState (state in Spark's state store, event-time timers), which emits every firing;
each micro-batch runs the query's ordinary aggregation over its firings and writes the rows
into the Delta table in one commit (stream_sink). The definition lives in the catalog
(stream_catalog), so `resume` starts the continuous streams of a catalog again in the next
process, and SHOW STREAMS lists every streaming table, running or not.
"""

from __future__ import annotations

import datetime
import logging
import posixpath
import time
import uuid
from dataclasses import dataclass
from urllib.parse import urlparse

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery
from sql_ext import bridge
from sql_ext import stream_catalog as catalog
from sql_ext.errors import WindowSqlError
from sql_ext.names import table_name
from sql_ext.stream_catalog import AVAILABLE_NOW, Definition, Entry
from sql_ext.stream_plan import INDEX_COLUMN, StreamPlan, output_schema, plan_stream
from sql_ext.stream_sink import DeltaSink, create_table, fault_point, table_location

log = logging.getLogger("sql_ext")

STREAM_COLUMNS = ("name", "state", "trigger", "batch", "rows_in", "rows_out", "watermark",
                  "state_rows", "state_bytes", "late_dropped", "not_windowed",
                  "out_of_order_rows", "last_progress", "last_error", "last_error_time",
                  "checkpoint", "location")


@dataclass
class StreamingTable:
    """A streaming table this process has run."""

    entry: Entry
    query: StreamingQuery
    spark: SparkSession
    location: str
    rows_out: int = 0  # rows written into the table (firings after aggregation)
    dropped: tuple = (0, 0, 0)  # (late, no event time, out of order) when last logged


_runs: dict[str, StreamingTable] = {}  # by Entry.key, the latest run of each table


def default_checkpoint(spark: SparkSession, db: str, table: str) -> str:
    """<warehouse>/_sql_ext_checkpoints/<table> (<db>.<table> outside `default`): beside the
    tables, stable across restarts."""
    warehouse = spark.conf.get("spark.sql.warehouse.dir")
    path = urlparse(warehouse).path if warehouse.startswith("file:") else warehouse
    return posixpath.join(path, "_sql_ext_checkpoints",
                          table if db == "default" else f"{db}.{table}")


def create_streaming_table(spark: SparkSession, name: str, sql: str, *,
                           checkpoint: str | None = None,
                           location: str | None = None,
                           trigger: str | float = AVAILABLE_NOW,
                           replace: bool = False) -> StreamingQuery:
    """Starts `sql` (a windowed SELECT over FROM STREAM(source)) into the Delta table `name`.
    trigger: AVAILABLE_NOW (process what is there, then stop) or seconds between batches.

    A new name creates the table and records its definition in the catalog. An existing
    streaming table with the same definition resumes from its checkpoint (a running one is left
    running); a different definition is an error naming the difference. `replace` starts over:
    the stream stops, the table's contents and the checkpoint go, and it is created anew."""
    name = table_name(name)
    db, table = catalog.identify(spark, name)
    definition = Definition(sql, trigger if trigger == AVAILABLE_NOW else float(trigger),
                            checkpoint or default_checkpoint(spark, db, table), location)
    plan = plan_stream(spark, name, sql, definition.trigger, definition.checkpoint)
    props = catalog.read(spark, db, table)
    if replace and props:
        _stop_run(f"{db}.{table}")
        bridge.delete_path(spark, catalog.entry(db, table, props).definition.checkpoint)
    if replace:
        bridge.delete_path(spark, definition.checkpoint)
    exists = catalog.exists(spark, db, table)
    if exists and not replace:
        if not props:
            raise WindowSqlError(f"{name} is a table, not a streaming table: DROP TABLE it or "
                                 "choose another name")
        entry = catalog.entry(db, table, props)
        changed = entry.definition.differences(definition)
        if changed:
            raise WindowSqlError(
                f"streaming table {name} exists with another definition: "
                + "; ".join(changed) + ". CREATE OR REPLACE STREAMING TABLE starts it over "
                "(new contents, new checkpoint); DROP STREAMING TABLE removes it")
        run = _runs.get(entry.key)
        if run is not None and run.query.isActive:
            return run.query  # the same stream, already running
    else:
        if exists:  # replaced
            spark.sql(f"DROP TABLE {name}")  # a managed table's files go with it
        create_table(spark, name, output_schema(spark, plan), location, replace)
        catalog.define(spark, db, table, definition, uuid.uuid4().hex)
        entry = catalog.entry(db, table, catalog.read(spark, db, table))
    return _start(spark, entry, plan, definition.trigger)


def _start(spark: SparkSession, entry: Entry, plan: StreamPlan,
           trigger: str | float) -> StreamingQuery:
    """Runs the planned stream of `entry` with `trigger` (its own, or AVAILABLE NOW for a
    REFRESH)."""
    location = table_location(spark, entry.name)
    sink = DeltaSink(location, f"sql_ext:{entry.stream_id}", plan.merge_on)
    previous = _runs.get(entry.key)
    progress = bridge.stream_progress(spark)

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        batch.createOrReplaceTempView(plan.firings_view)
        # Computed once, always: the window state of the batch commits only when all of its
        # partitions run, also when Delta skips the MERGE of a batch replayed after a restart.
        rows = batch.sparkSession.sql(plan.outer_sql).localCheckpoint(eager=True)
        # One small job over the computed rows: how many, and whether any re-fires a pane.
        written, upsert = rows.selectExpr(
            "COUNT(*)",
            f"COALESCE(MAX({INDEX_COLUMN}), 0) > 0" if plan.refires else "FALSE").first()
        sink.write(rows.drop(INDEX_COLUMN) if plan.refires else rows, batch_id, upsert, written)
        _written(run, batch_id, written)
        fault_point(batch_id)

    writer = (plan.firings.writeStream.foreachBatch(write_batch).queryName(entry.key)
              .option("checkpointLocation", entry.definition.checkpoint))
    writer = writer.trigger(availableNow=True) if trigger == AVAILABLE_NOW \
        else writer.trigger(processingTime=f"{float(trigger)} seconds")
    progress.watch(spark._jsparkSession)
    catalog.record_state(spark, entry, "RUNNING")
    run = StreamingTable(entry, None, spark, location)
    query = run.query = writer.start()
    if previous is not None and previous.entry.stream_id == entry.stream_id:
        run.rows_out, run.dropped = previous.rows_out, previous.dropped  # totals of the process
    _runs[entry.key] = run
    bridge.stream_catalog(spark).started(spark._jsparkSession, entry.db, entry.table,
                                         query._jsq)
    log.info("sql_ext streaming table %s started (%s, checkpoint %s)", entry.name,
             entry.definition.trigger_text(), entry.definition.checkpoint)
    return query


def _written(run: StreamingTable, batch_id: int, written: int) -> None:
    """Adds a micro-batch's figures to the run's; logs drops when they grew."""
    run.rows_out += written
    log.info("sql_ext stream %s batch %d: %d rows written", run.entry.name, batch_id, written)
    dropped = tuple(bridge.stream_progress(run.spark).dropped(
        run.spark._jsparkSession, run.entry.definition.checkpoint))
    if dropped != run.dropped:
        log.warning("sql_ext stream %s batch %d: %d tuples dropped as late (below the "
                    "watermark minus the discard age), %d without an event time, %d rows "
                    "below an ORDER BY value an earlier micro-batch processed (replayed "
                    "where they arrived), in all", run.entry.name, batch_id, *dropped)
        run.dropped = dropped


def _entry(spark: SparkSession, name: str, statement: str) -> Entry:
    db, table = catalog.identify(spark, table_name(name))
    props = catalog.read(spark, db, table)
    if not props:
        raise WindowSqlError(f"{statement} {name}: no streaming table of that name")
    return catalog.entry(db, table, props)


def _running(key: str) -> StreamingTable | None:
    run = _runs.get(key)
    return run if run is not None and run.query.isActive else None


def _stop_run(key: str, timeout: float = 3.0) -> bool:
    """Stops this process's run of a table between two micro-batches when it can (a stop in the
    middle of a batch interrupts it; the batch is then redone at the next start)."""
    run = _running(key)
    if run is None:
        return False
    deadline = time.monotonic() + timeout
    while run.query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(0.05)
    run.query.stop()
    return True


def stop_stream(spark: SparkSession, name: str) -> None:
    """STOP STREAM: stops the stream and records it STOPPED (a restart does not resume it);
    the table and checkpoint stay."""
    entry = _entry(spark, name, "STOP STREAM")
    if not _stop_run(entry.key):
        raise WindowSqlError(f"STOP STREAM {name}: no streaming table of that name is running")
    catalog.record_state(spark, entry, "STOPPED")


def refresh_streaming_table(spark: SparkSession, name: str) -> None:
    """REFRESH STREAMING TABLE: one AVAILABLE NOW pass from the checkpoint, then returns."""
    entry = _entry(spark, name, "REFRESH STREAMING TABLE")
    if _running(entry.key) is not None:
        raise WindowSqlError(f"REFRESH STREAMING TABLE {name}: the stream is running, and "
                             "it already reads what arrives: STOP STREAM it first")
    definition = entry.definition
    plan = plan_stream(spark, entry.name, definition.query, AVAILABLE_NOW, definition.checkpoint)
    _start(spark, entry, plan, AVAILABLE_NOW).awaitTermination()


def drop_streaming_table(spark: SparkSession, name: str, if_exists: bool = False) -> None:
    """DROP STREAMING TABLE: stops the stream, drops the table, removes the checkpoint."""
    try:
        entry = _entry(spark, name, "DROP STREAMING TABLE")
    except WindowSqlError:
        if if_exists and not catalog.exists(spark, *catalog.identify(spark, table_name(name))):
            return
        raise
    _stop_run(entry.key)
    spark.sql(f"DROP TABLE {entry.name}")
    bridge.delete_path(spark, entry.definition.checkpoint)
    _runs.pop(entry.key, None)


def resume(spark: SparkSession) -> list[str]:
    """Starts every continuous (TRIGGER EVERY) streaming table of the catalog from its
    checkpoint, unless STOP STREAM stopped it or it runs already; the names started. A stream
    that cannot start is recorded FAILED with its cause; the others start regardless."""
    started = []
    for entry in catalog.entries(spark):
        if not entry.definition.continuous or entry.state == "STOPPED" \
                or _running(entry.key) is not None:
            continue
        definition = entry.definition
        try:
            plan = plan_stream(spark, entry.name, definition.query, definition.trigger,
                               definition.checkpoint)
            _start(spark, entry, plan, definition.trigger)
            started.append(entry.name)
        except Exception as error:  # noqa: BLE001 - one stream's failure is its own
            log.error("sql_ext streaming table %s could not resume: %s", entry.name, error)
            catalog.record_failure(spark, entry, f"could not resume: {error}", _now())
    return started


def show_streams(spark: SparkSession) -> list[dict]:
    """SHOW STREAMS: every streaming table of the catalog, running or not, one dict each with
    STREAM_COLUMNS. Figures of runs in this process (rows read and written add up over the
    runs); for others the last committed batch and its time, from the checkpoint."""
    return [_status(spark, entry) for entry in catalog.entries(spark)]


def stream_status(spark: SparkSession, name: str) -> dict:
    """The SHOW STREAMS row of one streaming table."""
    return _status(spark, _entry(spark, name, "SHOW STREAMS"))


def state_curve(spark: SparkSession, name: str) -> list[tuple[int, int]]:
    """(batch id, rows in the state store) of each micro-batch of this process's latest run."""
    run = _runs[_entry(spark, name, "state_curve").key]
    flat = list(bridge.stream_progress(spark).stateCurve(str(run.query.id)))
    return list(zip(flat[::2], flat[1::2]))


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _status(spark: SparkSession, entry: Entry) -> dict:
    definition = entry.definition
    run = _runs.get(entry.key)
    if run is not None and run.entry.stream_id != entry.stream_id:
        run = None  # a run of a table since dropped and created again
    status = dict.fromkeys(STREAM_COLUMNS)
    status.update(name=entry.name, trigger=definition.trigger_text(),
                  checkpoint=definition.checkpoint, last_error=entry.error,
                  last_error_time=entry.error_time, state=entry.state)
    if run is not None:
        progress = run.query.lastProgress or {}
        states = progress.get("stateOperators", [])
        late, not_windowed, out_of_order = bridge.stream_progress(spark).dropped(
            run.spark._jsparkSession, definition.checkpoint)
        status.update(rows_in=bridge.stream_progress(spark).rowsIn(str(run.query.id)),
                      rows_out=run.rows_out, location=run.location,
                      watermark=(progress.get("eventTime") or {}).get("watermark"),
                      state_rows=sum(op.get("numRowsTotal", 0) for op in states),
                      state_bytes=sum(op.get("memoryUsedBytes", 0) for op in states),
                      late_dropped=late, not_windowed=not_windowed,
                      out_of_order_rows=out_of_order)
        failure = None if run.query.isActive else run.query.exception()
        if run.query.isActive:
            status["state"] = "RUNNING"
        elif failure is not None and entry.state != "FAILED":
            # Seen here before the JVM listener recorded it (it runs on Spark's listener bus).
            catalog.record_failure(spark, entry, short_error(str(failure)), _now())
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
    return status


def short_error(message: str, limit: int = 2000) -> str:
    """A stream failure carries the whole stack of every layer: keep its first line and the
    innermost cause, which name the problem."""
    lines = message.splitlines()
    causes = [line for line in lines if line.lstrip().startswith("Caused by:")]
    text = "\n".join(lines[:1] + causes[-1:])
    return text if len(text) <= limit else text[:limit] + " ..."
