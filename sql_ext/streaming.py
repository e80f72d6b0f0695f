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

import logging
import posixpath
import re
import time
import uuid

from pyspark import InheritableThread
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery
from sql_ext import bridge
from sql_ext import stream_catalog as catalog
from sql_ext.errors import WindowSqlError
from sql_ext.names import table_name
from sql_ext.stream_catalog import AVAILABLE_NOW, Definition, Entry
from sql_ext.stream_plan import (INDEX_COLUMN, StreamPlan, output_schema,
                                 plan_stream)
from sql_ext.stream_runs import (StreamingTable, named_entry, now, running, runs,
                                 short_error)
from sql_ext.stream_sink import (DeltaSink, LateRowsSink, create_late_table, create_table,
                                 fault_point, fault_stage, set_properties, stream_settings)
# SHOW STREAMS and a stream's status are part of this module's API.
from sql_ext.stream_status import (STREAM_COLUMNS, show_streams, state_curve,  # noqa: F401
                                   stream_status)

log = logging.getLogger("sql_ext")


def default_checkpoint(spark: SparkSession, db: str, table: str) -> str:
    """<warehouse>/_sql_ext_checkpoints/<table> (<db>.<table> outside `default`): beside the
    tables, stable across restarts."""
    # Spark's qualified warehouse is a Hadoop path string (file:/a b #c), not a URI: nothing in
    # it is percent-encoded, and a `#` starts no fragment. A local one loses its scheme only.
    warehouse = spark.conf.get("spark.sql.warehouse.dir")
    path = re.sub(r"^file:(//)?(?=/)", "", warehouse)
    return posixpath.join(path, "_sql_ext_checkpoints",
                          table if db == "default" else f"{db}.{table}")


def create_streaming_table(spark: SparkSession, name: str, sql: str, *,
                           checkpoint: str | None = None,
                           location: str | None = None,
                           trigger: str | float = AVAILABLE_NOW,
                           replace: bool = False,
                           partitioned_by: tuple[str, ...] = (),
                           tblproperties: tuple[tuple[str, str], ...] = ()) -> StreamingQuery:
    """Starts `sql` (a windowed SELECT over FROM STREAM(source)) into the Delta table `name`.
    trigger: AVAILABLE_NOW (process what is there, then stop) or seconds between batches.
    partitioned_by, tblproperties: the Delta table's partition columns and table properties.

    A new name creates the table and records its definition in the catalog. An existing
    streaming table with the same definition resumes from its checkpoint (a running one is left
    running); a different definition is an error naming the difference. `replace` starts over:
    the stream stops, the table's contents and the checkpoint go, and it is created anew."""
    name = table_name(name)
    db, table = catalog.identify(spark, name)
    definition = Definition(sql, trigger if trigger == AVAILABLE_NOW else float(trigger),
                            checkpoint or default_checkpoint(spark, db, table), location,
                            tuple(partitioned_by), tuple(map(tuple, tblproperties)))
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
                + "; ".join(changed) + ". ALTER STREAMING TABLE applies the change in place "
                "(dbt: on_configuration_change='apply'); CREATE OR REPLACE STREAMING TABLE "
                "starts it over, new contents and checkpoint (dbt: --full-refresh)")
        run = runs.get(entry.key)
        if run is not None and run.query.isActive:
            return run.query  # the same stream, already running
    else:
        if exists:  # replaced
            spark.sql(f"DROP TABLE {name}")  # a managed table's files go with it
        return _create_and_start(spark, name, db, table, definition, plan, replace)
    return _start(spark, entry, plan, definition.trigger)


def _create_and_start(spark: SparkSession, name: str, db: str, table: str,
                      definition: Definition, plan: StreamPlan, replace: bool) -> StreamingQuery:
    """A new streaming table: its Delta table and catalog entry are made while its stream starts
    and computes its first micro-batch, whose write waits for them (the Delta table's first
    commit and the metastore's entry take about a third of a second). The table is there, and
    defined, when this returns; if it cannot be made, the stream stops and the error is
    raised."""
    stream_id = uuid.uuid4().hex
    entry = catalog.entry(db, table, catalog.defined(definition, stream_id, plan.window))
    checkpoint_was_there = bridge.path_exists(spark, definition.checkpoint)

    def create() -> str:
        create_table(spark, name, output_schema(spark, plan), definition.location, replace,
                     definition.partitioned_by, dict(definition.tblproperties))
        if plan.late_rows and replace:  # starts over: so do its late rows (_start creates)
            create_late_table(spark, plan.late_rows, plan.late_schema(), replace=True)
        try:
            catalog.define(spark, db, table, definition, stream_id, plan.window)
        except Exception:
            # A table without its definition would be a plain table that blocks the name.
            spark.sql(f"DROP TABLE IF EXISTS {name}")
            raise
        return catalog.location(spark, db, table)

    made = Background(create)
    try:
        query = _start(spark, entry, plan, definition.trigger, made=made)
    except BaseException:
        made.result()  # the table's own error, if it has one, names the problem first
        raise
    try:
        location = made.result()
    except BaseException:
        _stop_run(entry.key, timeout=0)
        if not checkpoint_was_there:
            bridge.delete_path(spark, definition.checkpoint)
        raise
    runs[entry.key].location = location
    return query


class Background:
    """A function run on a thread of its own (keeping the caller's Spark local properties);
    `result()` waits for it and returns its value or raises its error."""

    def __init__(self, function):
        self._value = None
        self._error: BaseException | None = None
        self._thread = InheritableThread(target=self._run, args=(function,))
        self._thread.start()

    def _run(self, function) -> None:
        try:
            self._value = function()
        except BaseException as error:  # noqa: BLE001 - raised by result()
            self._error = error

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


def alter_streaming_table(spark: SparkSession, name: str, sql: str, *,
                          checkpoint: str | None = None,
                          location: str | None = None,
                          trigger: str | float = AVAILABLE_NOW,
                          partitioned_by: tuple[str, ...] = (),
                          tblproperties: tuple[tuple[str, str], ...] = ()) -> StreamingQuery:
    """ALTER STREAMING TABLE: a changed query, trigger or TBLPROPERTIES applied in place. The
    stream stops between two micro-batches and starts again on the same table and checkpoint:
    nothing is read twice, nothing written is lost, and the new query holds from the next
    micro-batch on. CHECKPOINT and LOCATION left out keep theirs. What cannot change in place
    (where the table or its state live, its partitioning, its columns) is an error; so is a
    query that Spark cannot continue from the checkpoint: the old definition then stays, and
    runs again if it ran. A name that is not a streaming table yet is created."""
    name = table_name(name)
    db, table = catalog.identify(spark, name)
    props = catalog.read(spark, db, table)
    old = catalog.entry(db, table, props).definition if props else None
    definition = Definition(
        sql, trigger if trigger == AVAILABLE_NOW else float(trigger),
        checkpoint or (old.checkpoint if old else default_checkpoint(spark, db, table)),
        location or (old.location if old else None), tuple(partitioned_by),
        tuple(map(tuple, tblproperties)))
    changed = old.differences(definition) if old else []
    if not changed:
        return create_streaming_table(
            spark, name, sql, checkpoint=definition.checkpoint, location=definition.location,
            trigger=definition.trigger, partitioned_by=definition.partitioned_by,
            tblproperties=definition.tblproperties)
    fixed = old.structural_differences(definition)
    if fixed:
        raise WindowSqlError(f"ALTER STREAMING TABLE {name} cannot change in place: "
                             + "; ".join(fixed) + ". CREATE OR REPLACE STREAMING TABLE starts "
                             "it over (new contents, new checkpoint)")
    entry = catalog.entry(db, table, props)
    plan = plan_stream(spark, entry.name, sql, definition.trigger, definition.checkpoint)
    _check_columns(spark, entry.name, output_schema(spark, plan))
    _check_state(entry.name, plan_stream(spark, entry.name, old.query, old.trigger,
                                         old.checkpoint).state_shape, plan.state_shape)
    was_running = _stop_run(entry.key)
    log.info("sql_ext streaming table %s altered: %s", entry.name, "; ".join(changed))
    _redefine(spark, entry, definition, old)
    query = _start(spark, catalog.entry(db, table, catalog.read(spark, db, table)), plan,
                   definition.trigger)
    failure = _first_batch(query)
    if failure is None:
        return query
    _redefine(spark, catalog.entry(db, table, catalog.read(spark, db, table)), old, definition)
    if was_running:
        _start(spark, catalog.entry(db, table, catalog.read(spark, db, table)),
               plan_stream(spark, entry.name, old.query, old.trigger, old.checkpoint),
               old.trigger)
    raise WindowSqlError(f"ALTER STREAMING TABLE {name}: Spark cannot continue the checkpoint "
                         f"with the new query: {short_error(failure)}. The old definition "
                         "stays; CREATE OR REPLACE STREAMING TABLE starts over")


def _check_columns(spark: SparkSession, name: str, schema) -> None:
    """The altered query must write the table's columns: same names, same types, same order."""
    def shape(fields):
        return [(f.name.lower(), f.dataType.simpleString()) for f in fields]
    table = spark.table(name).schema
    if shape(schema) != shape(table):
        raise WindowSqlError(
            f"ALTER STREAMING TABLE {name}: the query's columns ("
            + ", ".join(f"{n} {t}" for n, t in shape(schema)) + ") are not the table's ("
            + ", ".join(f"{n} {t}" for n, t in shape(table)) + "); CREATE OR REPLACE "
            "STREAMING TABLE starts it over with the new columns")


def _check_state(name: str, old: dict, new: dict) -> None:
    """The altered query must keep the window state the checkpoint holds (stream_plan's
    STATE_FIELDS): Spark checks only that the state's schema fits, not what it means."""
    changed = [f"{field} {old[field]!r} -> {new[field]!r}" for field in old
               if old[field] != new[field]]
    if changed:
        raise WindowSqlError(
            f"ALTER STREAMING TABLE {name}: the new query keeps other window state than the "
            f"checkpoint holds ({'; '.join(changed)}); CREATE OR REPLACE STREAMING TABLE "
            "starts it over with a new checkpoint")


def _redefine(spark: SparkSession, entry: Entry, definition: Definition,
              previous: Definition) -> None:
    """Stores `definition` for `entry` (same stream id: its Delta commits continue) and makes
    the table's TBLPROPERTIES those of `definition`."""
    set_properties(spark, entry.name, dict(definition.tblproperties), dict(previous.tblproperties))
    catalog.define(spark, entry.db, entry.table, definition, entry.stream_id)


def _first_batch(query: StreamingQuery, timeout: float = 300.0) -> str | None:
    """Waits for a restarted stream's first progress (or, AVAILABLE NOW, its end): the error
    that stopped it, or None. Spark checks a checkpoint against the query when it plans the
    first micro-batch."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.lastProgress is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if query.isActive and query.lastProgress is None:
        raise WindowSqlError("the altered stream made no progress in "
                             f"{timeout:.0f} s; see SHOW STREAMS")
    failure = None if query.isActive else query.exception()
    return None if failure is None else str(failure)


def _start(spark: SparkSession, entry: Entry, plan: StreamPlan,
           trigger: str | float, made: Background | None = None) -> StreamingQuery:
    """Runs the planned stream of `entry` with `trigger` (its own, or AVAILABLE NOW for a
    REFRESH). `made`: the table is being created (and defined, RUNNING) meanwhile; it gives
    the table's location, which the first write waits for."""
    location = catalog.location(spark, entry.db, entry.table) if made is None else None
    sink = DeltaSink(location, f"sql_ext:{entry.stream_id}", plan.merge_on)
    if plan.late_rows:  # kept, or created again if it was dropped
        create_late_table(spark, plan.late_rows, plan.late_schema(), replace=False)
    late_location = catalog.location(
        spark, *catalog.identify(spark, table_name(plan.late_rows))) if plan.late_rows else None
    late_sink = LateRowsSink(entry.definition.checkpoint, f"sql_ext:{entry.stream_id}:late") \
        if plan.late_rows else None
    previous = runs.get(entry.key)
    progress = bridge.stream_progress(spark)

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        # One job computes the micro-batch's firings; with LATE ROWS INTO the same job wrote
        # its late rows to files of the late table (LateRowFiles), committed here.
        rows, upsert, written = compute(batch)
        if sink.location is None:  # a new table, being made
            sink.location = run.location = made.result()
        commit(rows, batch_id, upsert, written)

    def compute(batch: DataFrame):
        """The micro-batch's rows, computed once, always: the window state of the batch
        commits only when all of its partitions run, also when Delta skips the write of a
        batch replayed after a restart. The same job observes how many rows there are and
        whether any re-fires a pane: (rows, upsert, written)."""
        batch.createOrReplaceTempView(plan.firings_view)
        figures = Observation()
        rows = batch.sparkSession.sql(plan.outer_sql).observe(
            figures, F.count(F.lit(1)).alias("written"),
            (F.coalesce(F.max(INDEX_COLUMN), F.lit(0)) > 0 if plan.refires else F.lit(False))
            .alias("upsert")).localCheckpoint(eager=True)
        observed = figures.get
        rows = rows.drop(INDEX_COLUMN) if plan.refires else rows
        return rows, observed["upsert"], observed["written"]

    def commit(rows: DataFrame, batch_id: int, upsert: bool, written: int) -> None:
        """Writes the firings' rows and commits the late rows, each in its own exactly-once
        commit: at the same time when both are appends."""
        def firings() -> None:
            sink.write(rows, batch_id, upsert, written)
            _written(run, batch_id, written, plan.late_rows)
        if late_sink is None:
            firings()
        elif upsert or fault_stage() == "firings":  # (and a test's stop between the two)
            firings()
            fault_point(batch_id, "firings")
            late_sink.commit(rows.sparkSession, batch_id)
        else:
            _together(firings, lambda: late_sink.commit(rows.sparkSession, batch_id))
        fault_point(batch_id)

    writer = (plan.firings_into(spark, late_location).writeStream.foreachBatch(write_batch).queryName(entry.key)
              .option("checkpointLocation", entry.definition.checkpoint))
    writer = writer.trigger(availableNow=True) if trigger == AVAILABLE_NOW \
        else writer.trigger(processingTime=f"{float(trigger)} seconds")
    progress.watch(spark._jsparkSession)
    if made is None:  # (a new table is defined RUNNING)
        catalog.record_start(spark, entry, plan.window)
    run = StreamingTable(entry, None, spark, location)
    with stream_settings(spark):  # the stream's session is a copy made at start
        query = run.query = writer.start()
    if previous is not None and previous.entry.stream_id == entry.stream_id:
        run.rows_out, run.dropped = previous.rows_out, previous.dropped  # totals of the process
    runs[entry.key] = run
    bridge.stream_catalog(spark).started(spark._jsparkSession, entry.db, entry.table,
                                         query._jsq)
    log.info("sql_ext streaming table %s started (%s, checkpoint %s)", entry.name,
             entry.definition.trigger_text(), entry.definition.checkpoint)
    return query


def _together(first, second) -> None:
    """Runs both at once (the second in a thread that keeps the micro-batch's local
    properties); raises the first failure."""
    failure = []

    def run_second() -> None:
        try:
            second()
        except BaseException as error:  # noqa: BLE001 - raised below, in the batch's thread
            failure.append(error)
    thread = InheritableThread(target=run_second)
    thread.start()
    try:
        first()
    finally:
        thread.join()
    if failure:
        raise failure[0]


def _written(run: StreamingTable, batch_id: int, written: int, late_table: str) -> None:
    """Adds a micro-batch's figures to the run's; logs drops when they grew (a warning when a
    tuple is lost to the table; late tuples that LATE ROWS INTO keeps are not)."""
    run.rows_out += written
    log.info("sql_ext stream %s batch %d: %d rows written", run.entry.name, batch_id, written)
    dropped = tuple(bridge.stream_progress(run.spark).dropped(
        run.spark._jsparkSession, run.entry.definition.checkpoint))
    if dropped != run.dropped:
        lost = dropped[1:] != run.dropped[1:] or (not late_table and dropped != run.dropped)
        log.log(logging.WARNING if lost else logging.INFO,
                "sql_ext stream %s batch %d: %d tuples late (below the watermark minus the "
                "discard age; %s), %d without an event time, %d rows below an ORDER BY value "
                "an earlier micro-batch processed (replayed where they arrived), in all",
                run.entry.name, batch_id, dropped[0],
                f"kept in {late_table}" if late_table else "dropped", *dropped[1:])
        run.dropped = dropped


def _stop_run(key: str, timeout: float = 3.0) -> bool:
    """Stops this process's run of a table between two micro-batches when it can (a stop in the
    middle of a batch interrupts it; the batch is then redone at the next start)."""
    run = running(key)
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
    entry = named_entry(spark, name, "STOP STREAM")
    if not _stop_run(entry.key):
        raise WindowSqlError(f"STOP STREAM {name}: no streaming table of that name is running")
    catalog.record_state(spark, entry, "STOPPED")


def refresh_streaming_table(spark: SparkSession, name: str) -> None:
    """REFRESH STREAMING TABLE: one AVAILABLE NOW pass from the checkpoint, then returns."""
    entry = named_entry(spark, name, "REFRESH STREAMING TABLE")
    if running(entry.key) is not None:
        raise WindowSqlError(f"REFRESH STREAMING TABLE {name}: the stream is running, and "
                             "it already reads what arrives: STOP STREAM it first")
    definition = entry.definition
    plan = plan_stream(spark, entry.name, definition.query, AVAILABLE_NOW, definition.checkpoint)
    _start(spark, entry, plan, AVAILABLE_NOW).awaitTermination()


def drop_streaming_table(spark: SparkSession, name: str, if_exists: bool = False) -> None:
    """DROP STREAMING TABLE: stops the stream, drops the table, removes the checkpoint."""
    try:
        entry = named_entry(spark, name, "DROP STREAMING TABLE")
    except WindowSqlError:
        if if_exists and not catalog.exists(spark, *catalog.identify(spark, table_name(name))):
            return
        raise
    _stop_run(entry.key)
    spark.sql(f"DROP TABLE {entry.name}")
    bridge.delete_path(spark, entry.definition.checkpoint)
    runs.pop(entry.key, None)


def resume(spark: SparkSession) -> list[str]:
    """Starts every continuous (TRIGGER EVERY) streaming table of the catalog from its
    checkpoint, unless STOP STREAM stopped it or it runs already; the names started. A stream
    that cannot start is recorded FAILED with its cause; the others start regardless."""
    started = []
    for entry in catalog.entries(spark):
        if not entry.definition.continuous or entry.state == "STOPPED" \
                or running(entry.key) is not None:
            continue
        definition = entry.definition
        try:
            plan = plan_stream(spark, entry.name, definition.query, definition.trigger,
                               definition.checkpoint)
            _start(spark, entry, plan, definition.trigger)
            started.append(entry.name)
        except Exception as error:  # noqa: BLE001 - one stream's failure is its own
            log.error("sql_ext streaming table %s could not resume: %s", entry.name, error)
            catalog.record_failure(spark, entry, f"could not resume: {error}", now())
    return started
