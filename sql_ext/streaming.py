"""Streaming tables: a windowed query over FROM STREAM(source) written into a Delta table.

    query = sql_ext.create_streaming_table(spark, "max_flow", '''
        SELECT freeway, PANE_START() AS time_start, PANE_END() AS time_end, MAX(lane_flow) AS flow
        FROM STREAM(traffic)
        WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway)
        WATERMARK DELAY 10''', checkpoint="/tmp/ckpt/max_flow")

The source's tuples, with the window's helper columns, go through the JVM pane processor under
transformWithState (state in Spark's state store, event-time timers), which emits every tuple
of every firing. Each micro-batch then runs the query's ordinary aggregation over its firings
and writes the rows into the Delta table in one commit: a MERGE keyed by partition keys, window
and group keys when late re-firings replace earlier rows of their panes, else an append (first
firings have no row yet). The commit carries Delta's txnAppId/txnVersion, so a batch replayed
after a restart is written once.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
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
INDEX_COLUMN = "_sx_index"


STREAM_COLUMNS = ("name", "active", "batch", "rows_in", "rows_out", "watermark", "state_rows",
                  "state_bytes", "late_dropped", "not_windowed", "out_of_order_rows",
                  "checkpoint")


@dataclass
class StreamingTable:
    name: str
    checkpoint: str
    query: StreamingQuery
    progress: object  # the JVM io.sqlext.streaming.StreamProgress (per-batch totals)
    session: object  # the JVM SparkSession, whose drop counters the stream adds to
    rows_out: int = 0  # rows written into the table (firings after aggregation)
    dropped: tuple = (0, 0, 0)  # (late, no event time, out of order) when last logged


_running: dict[str, StreamingTable] = {}  # by table_key(name)

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def table_name(name: str) -> str:
    """A table name as Spark reads it back, qualified or not: `db`.`t` -> db.t; parts that need
    quoting keep their backquotes (`my table` stays quoted, `a``b` escaped)."""
    try:
        table = exp.to_table(name, dialect="spark")
    except Exception as error:  # noqa: BLE001 - sqlglot's errors name no table
        raise WindowSqlError(f"{name!r} is not a table name: {error}") from None
    return ".".join(part.name if _PLAIN_NAME.match(part.name)
                    else "`" + part.name.replace("`", "``") + "`" for part in table.parts)


def table_key(name: str) -> str:
    """One key per table however its name is written (Spark's names are case-insensitive)."""
    return table_name(name).lower()


def _view_name(kind: str, name: str) -> str:
    """A temporary view's name for a streaming table: one part, whatever the table's name is
    (qualified, quoted, with spaces), distinct per table."""
    return f"__sx_{kind}_{hashlib.sha1(table_key(name).encode()).hexdigest()[:16]}"


def _windowed_select(sql: str | exp.Select) -> exp.Select:
    statements = parse(sql) if isinstance(sql, str) else [sql.copy()]
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


def _write(batch: DataFrame, table: str, location: str | None, app_id: str, batch_id: int,
           upsert: bool, rows: int) -> None:
    """Creates the table at the first batch; then one Delta commit per micro-batch with `rows`
    rows: a MERGE when the batch re-fires panes (their rows replace the earlier ones), else an
    append (a first firing has no row yet)."""
    session = batch.sparkSession
    if not session.catalog.tableExists(table):
        if location and DeltaTable.isDeltaTable(session, location):
            # A restarted application (its catalog may be new): the table's data is there.
            session.catalog.createTable(table, path=location, source="delta")
        else:
            writer = batch.limit(0).write.format("delta")
            if location:
                writer = writer.option("path", location)
            writer.saveAsTable(table)
    if rows == 0:
        return
    # Idempotent per micro-batch: Delta skips a (txnAppId, txnVersion) it already committed.
    session.conf.set("spark.databricks.delta.write.txnAppId", app_id)
    session.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
    try:
        if upsert:
            (DeltaTable.forName(session, table).alias("t")
             .merge(batch.alias("s"), f"t.{KEY_COLUMN} <=> s.{KEY_COLUMN}")
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        else:
            # A file per half million rows: a micro-batch's few firings in one file, not one
            # per shuffle partition (each small file costs the commit more than its rows).
            batch.coalesce(rows // 500_000 + 1).write.format("delta").mode("append") \
                .saveAsTable(table)
    finally:
        session.conf.unset("spark.databricks.delta.write.txnAppId")
        session.conf.unset("spark.databricks.delta.write.txnVersion")


def _fault_point(batch_id: int) -> None:
    """Test hook: with SQL_EXT_FAULT_PAUSE=<file>, the first batch whose write committed (from
    batch SQL_EXT_FAULT_BATCH on, default 0) writes its id to <file> and waits there to be
    killed (before its offsets are committed)."""
    marker = os.environ.get("SQL_EXT_FAULT_PAUSE")
    if marker and not os.path.exists(marker) \
            and batch_id >= int(os.environ.get("SQL_EXT_FAULT_BATCH", "0")):
        with open(marker, "w") as out:
            out.write(str(batch_id))
        time.sleep(3600)


def _check_streaming(lowered: LoweredWindow, trigger: str | float) -> None:
    """Wall-clock policies need a running stream; an unbounded partition set gets a warning."""
    spec = lowered.spec
    clocked = "time" in (spec["policy"], spec.get("trigger")) \
        or spec.get("partition_eviction") == "age"
    if trigger == "available_now" and clocked:
        raise WindowSqlError(f"{spec['policy_text']}: TIME policies and PARTITION EVICTION AGE "
                             "act by the wall clock in streaming, so they need a running "
                             "stream: TRIGGER EVERY <duration> (not AVAILABLE NOW)")
    if spec["kind"] != "time_interval" and spec["partition_columns"] \
            and not spec.get("partition_eviction"):
        log.warning("sql_ext streaming %s: PARTITION BY without PARTITION EVICTION keeps state "
                    "for every partition key the stream ever sees, so state grows without "
                    "bound when keys keep coming; PARTITION EVICTION AGE(<seconds>) bounds it",
                    spec["policy_text"])


# sqlglot's aggregate classes by the names PartialAggregates (JVM) decides on.
PARTIAL_FUNCTIONS = {exp.Sum: "sum", exp.Count: "count", exp.Min: "min", exp.Max: "max",
                     exp.Avg: "avg"}


def _transform_aggregation(outer: exp.Select, function) -> None:
    """Applies `function` (sqlglot's transform) to the parts of the aggregation over the
    firings that hold aggregates: SELECT list, HAVING, ORDER BY; in place."""
    for part in ("expressions", "having", "order"):
        value = outer.args.get(part)
        if isinstance(value, list):
            outer.set(part, [e.transform(function) for e in value])
        elif value is not None:
            outer.set(part, value.transform(function))


def _aggregate_inputs(lowered: LoweredWindow) -> None:
    """Aggregate arguments that are expressions become helper columns of the window's input,
    so the firing partials read a column (as the batch rule, IncrementalWindowAggregate, reads
    any numeric input expression). Rewrites lowered.inner and lowered.outer in place.

        SUM(x * 2)  ->  inner: x * 2 AS __sx_in0, outer: SUM(__sx_in0)
    """
    inputs: list[exp.Expression] = []

    def column_for(node: exp.Expression) -> exp.Expression:
        if type(node) not in PARTIAL_FUNCTIONS or isinstance(node.this, (exp.Column, exp.Star,
                                                                         exp.Distinct)):
            return node
        if any(c.name.startswith("__sx_") for c in node.this.find_all(exp.Column)) \
                or node.this.find(exp.AggFunc, exp.Anonymous) is not None:
            return node  # reads a partition key or a function sqlglot does not know: as is
        inputs.append(node.this.copy())
        return node.__class__(this=exp.column(f"__sx_in{len(inputs) - 1}"))

    _transform_aggregation(lowered.outer, column_for)
    for i, expression in enumerate(inputs):
        lowered.inner = lowered.inner.select(exp.alias_(expression, f"__sx_in{i}"), copy=False)


def _partial_aggregates(lowered: LoweredWindow, schema: dict[str, str], jvm) -> list | None:
    """Firings reduced to one row each by the window processor, when every aggregate of the
    query has partials and the query has no GROUP BY of its own: the outer query then merges
    one partial row per firing. Which aggregates have partials is decided once, in the JVM
    (PartialAggregates, which the batch rule uses too): here only the facts are gathered.

        SUM(x), AVG(x)  ->  SUM(__sx_a0), TRY_DIVIDE(SUM(__sx_a1), SUM(__sx_a2))

    Returns [(function, column), ...] and rewrites lowered.outer in place, or None.
    """
    outer = lowered.outer.copy()
    if any(not g.name.startswith("__sx_") for g in outer.args["group"].expressions):
        return None
    facts = []
    for call in outer.find_all(exp.AggFunc):
        arg = call.this
        if type(call) not in PARTIAL_FUNCTIONS:
            return None  # a function the processor has no partial for, whatever the JVM says
        distinct = isinstance(arg, exp.Distinct)
        helper = isinstance(arg, exp.Column) and arg.name.startswith("__sx_") \
            and not arg.name.startswith("__sx_in")
        if isinstance(arg, exp.Star) or distinct:
            input_type = "*"  # COUNT(*); DISTINCT is refused whatever the type
        elif isinstance(arg, exp.Column) and arg.name in schema and not helper:
            input_type = schema[arg.name]
        else:
            return None  # reads a partition key or an expression left as is
        facts.append({"function": PARTIAL_FUNCTIONS[type(call)], "type": input_type,
                      "distinct": distinct, "filtered": isinstance(call.parent, exp.Filter)})
    if not facts or jvm.io.sqlext.optimizer.PartialAggregates.kindsJson(json.dumps(facts)) \
            is None:
        return None
    partials: list[tuple[str, str]] = []

    def partial(function: str, column: str) -> exp.Expression:
        partials.append((function, column))
        return exp.column(f"__sx_a{len(partials) - 1}")

    def merge(node: exp.Expression) -> exp.Expression:
        if type(node) not in PARTIAL_FUNCTIONS:
            return node
        column = "*" if isinstance(node.this, exp.Star) else node.this.name
        name = PARTIAL_FUNCTIONS[type(node)]
        if name == "avg":
            return exp.func("try_divide", exp.Sum(this=partial("sum", column)),
                            exp.Sum(this=partial("count", column)))
        merged = exp.Sum if name in ("sum", "count") else type(node)
        return merged(this=partial(name, column))

    _transform_aggregation(outer, merge)
    if _tuple_columns_read(outer):
        return None  # something else reads the tuples (a function sqlglot does not know)
    lowered.outer = _one_row_per_firing(outer)
    return partials


def _one_row_per_firing(outer: exp.Select) -> exp.Select:
    """The merge of partials without its GROUP BY: the window processor hands on one row per
    firing, and the groups (partition keys, firing, firing columns) are firings, so each merge
    reads one row. Spares every micro-batch a shuffle.

        SELECT __sx_p0 AS k, SUM(__sx_a0) AS s FROM f GROUP BY __sx_p0, __sx_fire
               HAVING MAX(__sx_a1) > 2
        ->  SELECT __sx_p0 AS k, __sx_a0 AS s FROM f WHERE __sx_a1 > 2
    """
    def unwrap(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Sum, exp.Min, exp.Max)) and isinstance(node.this, exp.Column) \
                and node.this.name.startswith("__sx_a"):
            return node.this.copy()
        return node

    single = outer.copy()
    single.set("group", None)
    having = single.args.get("having")
    single.set("having", None)
    single = single.transform(unwrap)
    if having is not None:
        single = single.where(having.this.transform(unwrap), copy=False)
    return single


def _tuple_columns_read(outer: exp.Select) -> set[str]:
    """Source columns the aggregation over the firings reads (helper columns aside)."""
    reading = outer.copy()
    reading.set("from_", None)
    return {c.name for c in reading.find_all(exp.Column) if not c.name.startswith("__sx_")}


def _only_read_columns(lowered: LoweredWindow) -> exp.Select:
    """The inner SELECT with `*` narrowed to the source columns the aggregation reads: window
    state keeps every column it is given, and the optimizer cannot prune through it.

        SELECT *, k AS __sx_p0, ts AS __sx_etime FROM s  ->  SELECT x, k AS __sx_p0, ... FROM s
    """
    read = sorted(_tuple_columns_read(lowered.outer))
    inner = lowered.inner.copy()
    helpers = [e for e in inner.expressions if not isinstance(e, exp.Star)]
    inner.set("expressions", [exp.column(c, quoted=True) for c in read] + helpers)
    return inner


def create_streaming_table(spark: SparkSession, name: str, sql: str | exp.Select, *,
                           checkpoint: str,
                           location: str | None = None,
                           trigger: str | float = "available_now") -> StreamingQuery:
    """Starts `sql` (a windowed SELECT over FROM STREAM(source)) into the Delta table `name`.
    trigger: "available_now" (process what is there, then stop) or seconds between batches."""

    name = table_name(name)
    running = _running.get(table_key(name))
    if running is not None and running.query.isActive:
        raise WindowSqlError(f"streaming table {name} is running: STOP STREAM {name} first")
    select = _windowed_select(sql)
    lowered: LoweredWindow = lower_parts(select, streaming=True)
    _check_streaming(lowered, trigger)
    source_view = _view_name("source", name)
    _source_stream(spark, stream_source(select)).createOrReplaceTempView(source_view)
    lowered.inner.set("from_", exp.From(this=exp.to_table(source_view)))
    _aggregate_inputs(lowered)
    tuples = spark.sql(_only_read_columns(lowered).sql(dialect="spark"))
    # WATERMARK BY replays every tuple through one state machine, whose firings hand on tuples.
    markers = lowered.spec.get("watermark") == "by"
    partials = None if markers else _partial_aggregates(
        lowered, {f.name: f.dataType.simpleString() for f in tuples.schema.fields},
        spark.sparkContext._jvm)
    if partials:
        lowered.spec["aggregates"] = partials
    jvm = spark.sparkContext._jvm
    firings = DataFrame(jvm.io.sqlext.streaming.StreamingWindows.firings(
        tuples._jdf, json.dumps(lowered.spec), checkpoint), spark)

    firings_view = _view_name("firings", name)
    outer = lowered.outer
    outer.set("from_", exp.From(this=exp.to_table(firings_view)))
    outer = outer.select(exp.alias_(lowered.key, KEY_COLUMN), copy=False)
    refires = "pane_index" in lowered.spec["meta"]  # LATE firings replace earlier rows
    if refires:
        outer = outer.select(exp.alias_(exp.column("__sx_pidx"), INDEX_COLUMN), copy=False)
    outer_sql = outer.sql(dialect="spark")

    def write_batch(batch: DataFrame, batch_id: int) -> None:
        batch.createOrReplaceTempView(firings_view)
        # Computed once, always: the window state of the batch commits only when all of its
        # partitions run, also when Delta skips the MERGE of a batch replayed after a restart.
        rows = batch.sparkSession.sql(outer_sql).localCheckpoint(eager=True)
        # One small job over the computed rows: how many, and whether any re-fires a pane.
        written, upsert = rows.selectExpr(
            "COUNT(*)", f"COALESCE(MAX({INDEX_COLUMN}), 0) > 0" if refires else "FALSE").first()
        if refires:
            rows = rows.drop(INDEX_COLUMN)
        _write(rows, name, location, f"sql_ext:{table_key(name)}", batch_id, upsert, written)
        table = _running.get(table_key(name))
        if table is not None:
            table.rows_out += written
            log.info("sql_ext stream %s batch %d: %d rows written", name, batch_id, written)
            dropped = tuple(table.progress.dropped(table.session, table.checkpoint))
            if dropped != table.dropped:
                log.warning("sql_ext stream %s batch %d: %d tuples dropped as late (below the "
                            "watermark minus the discard age), %d without an event time, %d "
                            "rows below an ORDER BY value an earlier micro-batch processed "
                            "(replayed where they arrived), in all", name, batch_id, *dropped)
                table.dropped = dropped
        _fault_point(batch_id)

    writer = (firings.writeStream.foreachBatch(write_batch).queryName(name)
              .option("checkpointLocation", checkpoint))
    writer = writer.trigger(availableNow=True) if trigger == "available_now" \
        else writer.trigger(processingTime=f"{float(trigger)} seconds")
    progress = jvm.io.sqlext.streaming.StreamProgress
    progress.watch(spark._jsparkSession)
    query = writer.start()
    table = StreamingTable(name, checkpoint, query, progress, spark._jsparkSession)
    if running is not None and running.query.id == query.id:  # the same stream, resumed
        table.rows_out, table.dropped = running.rows_out, running.dropped
    _running[table_key(name)] = table
    log.info("sql_ext streaming table %s started (checkpoint %s)", name, checkpoint)
    return query


def show_streams() -> list[dict]:
    """The streaming tables started in this process (running or ended), one dict each with
    STREAM_COLUMNS: last batch, rows read and rows written (totals over the runs of the stream
    in this process), watermark, state size (rows and bytes in the state store), TIME_INTERVAL
    tuples dropped: below the watermark minus the discard age, or without an event time."""
    return [_status(table) for table in _running.values()]


def state_curve(name: str) -> list[tuple[int, int]]:
    """(batch id, rows in the state store) of each micro-batch of a streaming table."""
    table = _running[table_key(name)]
    flat = list(table.progress.stateCurve(str(table.query.id)))
    return list(zip(flat[::2], flat[1::2]))


def _status(table: StreamingTable) -> dict:
    progress = table.query.lastProgress or {}
    states = progress.get("stateOperators", [])
    late, not_windowed, out_of_order = table.progress.dropped(table.session, table.checkpoint)
    return {"name": table.name, "active": table.query.isActive,
            "batch": progress.get("batchId"),
            "rows_in": table.progress.rowsIn(str(table.query.id)),
            "rows_out": table.rows_out,
            "watermark": (progress.get("eventTime") or {}).get("watermark"),
            "state_rows": sum(op.get("numRowsTotal", 0) for op in states),
            "state_bytes": sum(op.get("memoryUsedBytes", 0) for op in states),
            "late_dropped": late, "not_windowed": not_windowed,
            "out_of_order_rows": out_of_order,
            "checkpoint": table.checkpoint}


def stop_stream(name: str, timeout: float = 3.0) -> None:
    """Stops a running streaming table between two micro-batches when it can (a stop in the
    middle of a batch interrupts it; the batch is then redone at the next start)."""
    table = _running.get(table_key(name))
    if table is None or not table.query.isActive:
        raise WindowSqlError(f"STOP STREAM {name}: no streaming table of that name is running")
    deadline = time.monotonic() + timeout
    while table.query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(0.05)
    table.query.stop()
