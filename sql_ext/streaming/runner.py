"""Runs a planned streaming table: its Spark stream in a session of its own, each micro-batch's
firings aggregated once and written into the Delta table (and its late rows into theirs) in
exactly-once commits, its figures recorded in the registry of runs, and how a stream stops
between two micro-batches.
"""

from __future__ import annotations

import contextlib
import logging

from pyspark import InheritableThread, StorageLevel
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from sql_ext import jvm
from sql_ext.sql.errors import AccessDeniedError
from sql_ext.sql.names import table_name
from sql_ext.streaming import catalog, runs
from sql_ext.streaming.catalog import AVAILABLE_NOW, Entry
from sql_ext.streaming.plan import INDEX_COLUMN, StreamPlan
from sql_ext.streaming.sink import (STREAM_SETTINGS, DeltaSink, LateRowsSink, create_late_table,
                                   sinks_of)

log = logging.getLogger("sql_ext")

# How a micro-batch's computed rows are kept until they are written: serialized (an UnsafeRow is
# its bytes), not as millions of row objects on the heap; on disk when memory is short.
CHECKPOINTED_ROWS = StorageLevel.MEMORY_AND_DISK  # (PySpark's: serialized)


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


def own_session(spark: SparkSession, owner: str = "") -> SparkSession:
    """The session a stream is planned and runs in: a copy of the caller's (its settings, views
    and functions) with STREAM_SETTINGS where the caller does not set them. The caller's
    session is never changed. It runs as the caller's signed-in user, or as `owner` where one
    is given: the streaming table's owner, whose rights (the access rules, their row filters
    and column masks) a REFRESH or a resumed stream reads with, whoever starts it."""
    return jvm.stream_session(spark, STREAM_SETTINGS, owner)


def start(spark: SparkSession, entry: Entry, plan: StreamPlan,
          trigger: str | float, made: Background | None = None) -> StreamingQuery:
    """Runs the stream of `entry`, planned in `spark` (its own_session), with `trigger` (its
    own, or AVAILABLE NOW for a REFRESH). `made`: the table is being created (and defined,
    RUNNING) meanwhile; it gives the table's location, which the first write waits for."""
    location = catalog.location(spark, entry.db, entry.table) if made is None else None
    table_sink = DeltaSink(location, f"sql_ext:{entry.stream_id}", plan.merge_on)
    if plan.late_rows:  # kept, or created again if it was dropped
        create_late_table(spark, plan.late_rows, plan.late_schema(), replace=False)
    late_location = catalog.location(
        spark, *catalog.identify(spark, table_name(plan.late_rows))) if plan.late_rows else None
    late_sink = LateRowsSink(entry.definition.checkpoint, f"sql_ext:{entry.stream_id}:late") \
        if plan.late_rows else None
    # What the batches write to: the sinks, or what a test or benchmark wraps them in.
    table_writes, late_writes = sinks_of(table_sink, late_sink)

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        # One job computes the micro-batch's firings; with LATE ROWS INTO the same job wrote
        # its late rows to files of the late table (LateRowFiles), committed here.
        with _stop_told_briefly(batch_id):
            # The access rules again (a server's user's stream): rules changed while the stream
            # runs stop it before it reads or writes what they no longer give its user.
            refusal = jvm.stream_refusal(spark, plan.firings, entry.name)
            if refusal:
                raise AccessDeniedError(refusal)
            rows, upsert, written = compute(batch)
            if table_sink.location is None:  # a new table, being made
                table_sink.location = made.result()
                jvm.run_set_location(spark, entry.db, entry.table, table_sink.location)
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
            .alias("upsert")).localCheckpoint(eager=True, storageLevel=CHECKPOINTED_ROWS)
        observed = figures.get
        rows = rows.drop(INDEX_COLUMN) if plan.refires else rows
        return rows, observed["upsert"], observed["written"]

    def commit(rows: DataFrame, batch_id: int, upsert: bool, written: int) -> None:
        """Writes the firings' rows and commits the late rows, each in its own exactly-once
        commit: at the same time when both are appends."""
        def firings() -> None:
            table_writes.write(rows, batch_id, upsert, written)
            _written(spark, entry, batch_id, written, plan.late_rows)
        if late_writes is None:
            firings()
        elif upsert:  # only two appends commit side by side
            firings()
            late_writes.commit(rows.sparkSession, batch_id)
        else:
            _together(firings, lambda: late_writes.commit(rows.sparkSession, batch_id))

    writer = (plan.firings_into(spark, late_location).writeStream.foreachBatch(write_batch)
              .queryName(entry.key).option("checkpointLocation", entry.definition.checkpoint))
    writer = writer.trigger(availableNow=True) if trigger == AVAILABLE_NOW \
        else writer.trigger(processingTime=f"{float(trigger)} seconds")
    jvm.watch_progress(spark)
    if made is None:  # (a new table is defined RUNNING)
        # A REFRESH of a TRIGGER EVERY table is one pass: whether its stream starts with the
        # server stays as STOP STREAM (or its last run) left it.
        catalog.record_start(spark, entry, plan.window, running=not (
            trigger == AVAILABLE_NOW and entry.definition.continuous))
    query = jvm.start_stream(writer)
    jvm.run_started(spark, entry.db, entry.table, entry.stream_id, location, query)
    log.info("sql_ext streaming table %s started (%s, checkpoint %s)", entry.name,
             entry.definition.trigger_text(), entry.definition.checkpoint)
    return query


@contextlib.contextmanager
def _stop_told_briefly(batch_id: int):
    """A stop in the middle of a micro-batch interrupts the JVM call the batch waits on. Spark
    knows a stop from a failure by a pattern over the error's whole text, which for a Python
    batch is the traceback, and with it the JVM's stack: the pattern's matcher then recurses
    once a character and overflows the thread's stack (StackOverflowError in the server's
    log). Told in one line, the stop is seen as one."""
    try:
        yield
    except Exception as error:
        cause = jvm.interruption(error)
        if cause is None:
            raise
        raise StreamStopped(f"py4j.protocol.Py4JJavaError: An error occurred while calling "
                            f"the JVM in micro-batch {batch_id}: {cause}") from None


class StreamStopped(RuntimeError):
    """The stream was stopped in the middle of a micro-batch (it is done again at the next
    start)."""


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


def _written(spark: SparkSession, entry: Entry, batch_id: int, written: int,
             late_table: str) -> None:
    """Adds a micro-batch's figures to the run's; logs drops when they grew (a warning when a
    tuple is lost to the table; late tuples that LATE ROWS INTO keeps are not)."""
    jvm.run_wrote(spark, entry.db, entry.table, written)
    log.info("sql_ext stream %s batch %d: %d rows written", entry.name, batch_id, written)
    dropped = jvm.dropped_rows(spark, entry.definition.checkpoint)
    before = jvm.run_swap_logged_drops(spark, entry.db, entry.table, dropped)
    if dropped != before:
        lost = dropped[1:] != before[1:] or (not late_table and dropped != before)
        log.log(logging.WARNING if lost else logging.INFO,
                "sql_ext stream %s batch %d: %d tuples late (below the watermark minus the "
                "discard age; %s), %d without an event time, %d rows below an ORDER BY value "
                "an earlier micro-batch processed (replayed where they arrived), %d Kafka "
                "messages whose value does not decode (kafka_undecodable(...) reads them), in "
                "all",
                entry.name, batch_id, dropped[0],
                f"kept in {late_table}" if late_table else "dropped", *dropped[1:])


def stop(spark: SparkSession, entry: Entry, timeout: float = 3.0) -> bool:
    """Stops this process's run of a table between two micro-batches when it can (a stop in the
    middle of a batch interrupts it; the batch is then redone at the next start)."""
    run = runs.running_on_table(spark, entry)
    if run is None:
        return False
    jvm.stop_between_batches(spark, run.query, timeout)
    return True
