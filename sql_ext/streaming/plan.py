"""The rewrites of a streaming table's query: the windowed SELECT over FROM STREAM(source)
taken apart into the tuples the window processor reads (helper columns, only the columns the
aggregation reads), and the aggregation over each micro-batch's firings, merging one partial
row per firing where every aggregate has partials. Pure sqlglot, except two questions to the
JVM through sql_ext.jvm (the firings' operator, which aggregates have partials).
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp

from sql_ext import jvm
from sql_ext.sql import contract
from sql_ext.sql.errors import UnsupportedWindowError, WindowSqlError
from sql_ext.sql.firings import Aggregates, aggregate_inputs, only_read_columns
from sql_ext.sql.names import table_key
from sql_ext.sql.transpile import LoweredWindow, lower_parts, parse, stream_source

log = logging.getLogger("sql_ext")
# The column that identifies a pane's row when the SELECT list does not carry the partition
# keys, the GROUP BY keys and the pane (PANE_START(), PANE_END() or WINDOW_ID()); documented.
KEY_COLUMN = "_pane_key"
INDEX_COLUMN = "_sx_index"  # never written: tells a re-firing micro-batch from a first one
PANE_COLUMNS = tuple(contract.PANE_FUNCTION_COLUMNS[f]
                     for f in ("pane_start", "pane_end", "window_id"))


def view_name(kind: str, name: str) -> str:
    """A temporary view's name for a streaming table: one part, whatever the table's name is
    (qualified, quoted, with spaces), distinct per table."""
    digest = hashlib.sha1(table_key(name).encode()).hexdigest()[:16]
    return f"{contract.HELPER_PREFIX}{kind}_{digest}"


def windowed_select(sql: str | exp.Select) -> exp.Select:
    statements = parse(sql) if isinstance(sql, str) else [sql.copy()]
    select = statements[0] if len(statements) == 1 else None
    if not isinstance(select, exp.Select) or select.args.get("sx_window") is None \
            or stream_source(select) is None:
        raise WindowSqlError("a streaming table needs one windowed SELECT ... FROM STREAM(source)")
    return select


def source_stream(spark: SparkSession, source: str) -> DataFrame:
    """A streaming view (e.g. over a file directory) as it is, a table as a stream (the JVM's
    io.sqlext.access.ServerWork.streamSource: the source as the server reads it for the
    statement, whose query over it the access checks judge as it is planned)."""
    return jvm.stream_source(spark, source)


def check_streaming(lowered: LoweredWindow, trigger: str | float) -> None:
    """Wall-clock policies need a running stream; an unbounded partition set gets a warning."""
    spec = lowered.spec
    clocked = "time" in (spec["policy"], spec.get("trigger")) \
        or spec.get("partition_eviction") == "age"
    if trigger == "available_now" and spec.get("watermark_idle"):
        raise UnsupportedWindowError(f"{spec['policy_text']}: WATERMARK ... IDLE advances the "
                                     "watermark by the wall clock while the source is idle, so "
                                     "it needs a running stream: TRIGGER EVERY <duration> (not "
                                     "AVAILABLE NOW)")
    if trigger == "available_now" and clocked:
        raise UnsupportedWindowError(f"{spec['policy_text']}: TIME policies and PARTITION "
                                     "EVICTION AGE act by the wall clock in streaming, so they "
                                     "need a running stream: TRIGGER EVERY <duration> (not "
                                     "AVAILABLE NOW)")
    if spec["kind"] != "time_interval" and spec["partition_columns"] \
            and not spec.get("partition_eviction"):
        log.warning("sql_ext streaming %s: PARTITION BY without PARTITION EVICTION keeps the "
                    "tuples of every partition key the stream ever sees, so state grows without "
                    "bound when keys keep coming; PARTITION EVICTION AGE(<seconds>) bounds the "
                    "tuples kept (an evicted key keeps only its window number)",
                    spec["policy_text"])


def partial_aggregates(lowered: LoweredWindow, schema: dict[str, str],
                       spark: SparkSession) -> list | None:
    """Firings reduced to one row each by the window processor, when every aggregate of the
    query has partials and the query has no GROUP BY of its own (sql_ext.sql.firings). Which
    aggregates have partials is decided once, in the JVM (PartialAggregates, which the batch
    rule uses too). Returns [(function, column), ...] and rewrites lowered.outer in place, or
    None."""
    aggregates = Aggregates.of(lowered, schema)
    if aggregates is None or jvm.partial_aggregate_kinds(spark, aggregates.facts) is None:
        return None
    return aggregates.read_instead(lowered)


@dataclass
class StreamPlan:
    """A streaming table's query, ready to run: the stream of firings, and the aggregation
    over one micro-batch of them (which reads the temporary view `firings_view`)."""

    firings: DataFrame
    firings_view: str
    outer_sql: str
    refires: bool  # late tuples re-fire panes: their rows replace earlier ones (a MERGE)
    merge_on: list[str]  # the columns that identify a row, when `refires`
    state_shape: dict  # what the checkpoint's window state depends on (see STATE_FIELDS)
    window: str = ""  # the window as window_state() reads it (WINDOW_PROPERTY)
    late_rows: str = ""  # LATE ROWS INTO: the table
    tuples: DataFrame | None = None  # the window's input stream
    spec: dict | None = None  # the window, as the JVM reads it
    checkpoint: str = ""

    def late_schema(self):
        """The LATE ROWS INTO table's columns."""
        return jvm.late_rows_schema(self.tuples)

    def firings_into(self, spark: SparkSession, late_location: str | None) -> DataFrame:
        """The stream of firings to run; with LATE ROWS INTO, writing its late rows into the
        table at `late_location` (before the shuffle: they never travel with the firings)."""
        if not self.late_rows:
            return self.firings
        return jvm.stream_firings(spark, self.tuples, self.spec, self.checkpoint,
                                     late_location)


# The parts of a window spec that shape its state in the checkpoint: the window family and
# policies, the partition keys and arrival order, pane geometry, the watermark's kind and the
# partial aggregates kept. Counts, deltas, periods of SLIDING/TUMBLING policies, the discard
# age and the watermark delay may change under a running checkpoint; these may not.
STATE_FIELDS = ("kind", "policy", "trigger", "partition_columns", "ordered",
                "partition_eviction", "duration", "period", "offset", "watermark", "aggregates",
                "emit_panes")


def plan_stream(spark: SparkSession, name: str, query: str, trigger: str | float,
                checkpoint: str) -> StreamPlan:
    """Validates and plans `query` for the streaming table `name` (errors name the problem)."""
    select = windowed_select(query)
    lowered: LoweredWindow = lower_parts(select, streaming=True)
    check_streaming(lowered, trigger)
    refires = "pane_index" in lowered.spec["meta"]
    merge_on = (carried_key(lowered) or [KEY_COLUMN]) if refires else []
    source_view = view_name("source", name)
    source_stream(spark, stream_source(select)).createOrReplaceTempView(source_view)
    # The stream read under the name the query gave it (its alias, else the table's own: the
    # last part of STREAM(db.t)), so that qualified columns (x.col, t.col) resolve.
    streamed = select.args["from_"].this
    alias = streamed.alias or streamed.this.expressions[0].name
    lowered.inner.set("from_", exp.From(this=exp.to_table(source_view).as_(alias)))
    aggregate_inputs(lowered)
    late_rows = lowered.spec.get("late_rows", "")
    # A late row holds every source column, so LATE ROWS INTO reads them all.
    tuples = spark.sql((lowered.inner if late_rows else only_read_columns(lowered))
                       .sql(dialect="spark"))
    # WATERMARK BY replays every tuple through one state machine, whose firings hand on tuples.
    markers = lowered.spec.get("watermark") == "by"
    partials = None if markers else partial_aggregates(
        lowered, {f.name: f.dataType.simpleString() for f in tuples.schema.fields}, spark)
    if partials:
        lowered.spec["aggregates"] = partials
    firings = jvm.stream_firings(spark, tuples, lowered.spec, checkpoint)
    firings_view = view_name("firings", name)
    outer = lowered.outer
    outer.set("from_", exp.From(this=exp.to_table(firings_view)))
    if merge_on == [KEY_COLUMN]:
        outer = outer.select(exp.alias_(lowered.key, KEY_COLUMN), copy=False)
    if refires:
        pane_index = contract.PANE_FUNCTION_COLUMNS["pane_index"]
        outer = outer.select(exp.alias_(exp.column(pane_index), INDEX_COLUMN), copy=False)
    shape = {field: lowered.spec.get(field) for field in STATE_FIELDS}
    # What window_state() needs to read the checkpoint: the window spec (with its partials) and
    # the partition keys as written.
    window = json.dumps({"spec": lowered.spec, "partitions": [
        p.sql(dialect="spark") for p in lowered.model.partition_by]}, separators=(",", ":"))
    return StreamPlan(firings, firings_view, outer.sql(dialect="spark"), refires, merge_on,
                      shape, window, late_rows, tuples, lowered.spec, checkpoint)


def late_rows_table(query: str) -> str:
    """The LATE ROWS INTO table of a streaming table's query, "" without one."""
    late = windowed_select(query).args["sx_window"].args.get("late_rows")
    return late.sql(dialect="spark") if late is not None else ""


def carried_key(lowered: LoweredWindow) -> list[str] | None:
    """The output columns that identify a pane's row, when the SELECT list carries them all:
    every partition key, every GROUP BY key, and the pane. None when one is missing.

        SELECT k, PANE_START() AS s, SUM(v) ... OVER (PARTITION BY k)  ->  ["k", "s"]
        SELECT SUM(v) AS total ... OVER (PARTITION BY k)               ->  None
    """
    outputs = {}
    for projection in lowered.outer.expressions:
        outputs.setdefault(projection.unalias(), projection.alias_or_name)
    groups = lowered.outer.args["group"].expressions
    partitions = [g for g in groups
                  if isinstance(g, exp.Column) and contract.is_partition_column(g.name)]
    users = [g for g in groups
             if not (isinstance(g, exp.Column) and contract.is_helper(g.name))]
    panes = [outputs[exp.column(c)] for c in PANE_COLUMNS if exp.column(c) in outputs]
    needed = partitions + users
    if not panes or any(g not in outputs for g in needed):
        return None
    return [outputs[g] for g in needed] + panes[:1]


def output_schema(spark: SparkSession, plan: StreamPlan):
    """The streaming table's columns: the aggregation over no firings."""
    jvm.empty_frame(spark, plan.firings.schema).createOrReplaceTempView(plan.firings_view)
    rows = spark.sql(plan.outer_sql).drop(INDEX_COLUMN)
    return rows.schema
