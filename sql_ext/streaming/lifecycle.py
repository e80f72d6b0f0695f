"""Starting, altering, stopping, refreshing, dropping and resuming streaming tables: each
statement holds its table (runs.managing) from its checks to its last change, plans the
stream in a session of its own and starts it through runner. A new table's Delta table and
catalog entry are made while its stream computes its first micro-batch."""

from __future__ import annotations

import logging
import posixpath
import re
import time
import uuid
from collections.abc import Callable

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from sql_ext import jvm
from sql_ext.sql.errors import StreamingTableError, StreamInterruptedError, WindowSqlError
from sql_ext.sql.names import table_name
from sql_ext.streaming import catalog, runner, runs
from sql_ext.streaming.catalog import AVAILABLE_NOW, Definition
from sql_ext.streaming.plan import StreamPlan, output_schema, plan_stream
from sql_ext.streaming.runner import Background, own_session
from sql_ext.streaming.runs import managing, named_entry, now, short_error
from sql_ext.streaming.sink import create_late_table, create_table, set_properties

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
    with managing(f"{db}.{table}"):
        return _create(own_session(spark), name, db, table, definition, replace)


def _create(spark: SparkSession, name: str, db: str, table: str, definition: Definition,
            replace: bool) -> StreamingQuery:
    if not replace and definition.location is None and not catalog.exists(spark, db, table):
        _forget_dropped_stream(spark, name, definition.checkpoint)
    plan = plan_stream(spark, name, definition.query, definition.trigger, definition.checkpoint)
    props = catalog.read(spark, db, table)
    if replace and props:
        runner.stop(spark, catalog.entry(db, table, props))
        jvm.delete_path(spark, catalog.entry(db, table, props).definition.checkpoint)
    if replace:
        jvm.delete_path(spark, definition.checkpoint)
    exists = catalog.exists(spark, db, table)
    if exists and not replace:
        if not props:
            raise StreamingTableError(f"{name} is a table, not a streaming table: DROP TABLE it "
                                      "or choose another name")
        entry = catalog.entry(db, table, props)
        changed = entry.definition.differences(definition)
        if changed:
            raise StreamingTableError(
                f"streaming table {name} exists with another definition: "
                + "; ".join(changed) + ". ALTER STREAMING TABLE applies the change in place "
                "(dbt: on_configuration_change='apply'); CREATE OR REPLACE STREAMING TABLE "
                "starts it over, new contents and checkpoint (dbt: --full-refresh)")
        run = runs.running(spark, entry)
        if run is not None:
            return run.query  # the same stream, already running
    else:
        if exists:  # replaced
            spark.sql(f"DROP TABLE {name}")  # a managed table's files go with it
        return _create_and_start(spark, name, db, table, definition, plan, replace)
    return runner.start(spark, entry, plan, definition.trigger)


def _forget_dropped_stream(spark: SparkSession, name: str, checkpoint: str) -> None:
    """A new managed streaming table starts empty, so its stream starts from the beginning of
    its sources. A checkpoint there is one a dropped table of the same name left (Spark's DROP
    TABLE keeps it; DROP STREAMING TABLE removes it): resumed, it would skip what that table
    had read. It goes, when it holds a stream's logs (a folder of anything else stays)."""
    if any(jvm.path_exists(spark, posixpath.join(checkpoint, part))
           for part in ("offsets", "commits", "metadata")):
        log.warning("sql_ext streaming table %s is new: the checkpoint %s, left by a dropped "
                    "table of that name, is removed", name, checkpoint)
        jvm.delete_path(spark, checkpoint)


def _create_and_start(spark: SparkSession, name: str, db: str, table: str,
                      definition: Definition, plan: StreamPlan, replace: bool) -> StreamingQuery:
    """A new streaming table: its Delta table and catalog entry are made while its stream starts
    and computes its first micro-batch, whose write waits for them (the Delta table's first
    commit and the metastore's entry take about a third of a second). The table is there, and
    defined, when this returns; if it cannot be made, the stream stops and the error is
    raised."""
    stream_id = uuid.uuid4().hex
    entry = catalog.entry(db, table, catalog.defined(definition, stream_id, plan.window))
    checkpoint_was_there = jvm.path_exists(spark, definition.checkpoint)

    def create() -> str:
        create_table(spark, name, output_schema(spark, plan), definition.location, replace,
                     definition.partitioned_by, dict(definition.tblproperties))
        if plan.late_rows and replace:  # starts over: so do its late rows (start creates)
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
        query = runner.start(spark, entry, plan, definition.trigger, made=made)
    except BaseException:
        made.result()  # the table's own error, if it has one, names the problem first
        raise
    try:
        location = made.result()
    except BaseException:
        runner.stop(spark, entry, timeout=0)
        if not checkpoint_was_there:
            jvm.delete_path(spark, definition.checkpoint)
        raise
    jvm.run_set_location(spark, db, table, location)
    return query


def alter_streaming_table(spark: SparkSession, name: str, sql: str, *,
                          checkpoint: str | None = None,
                          location: str | None = None,
                          trigger: str | float = AVAILABLE_NOW,
                          partitioned_by: tuple[str, ...] = (),
                          tblproperties: tuple[tuple[str, str], ...] = (),
                          ended: Callable[[], str | None] = lambda: None) -> StreamingQuery:
    """ALTER STREAMING TABLE: a changed query, trigger or TBLPROPERTIES applied in place. The
    stream stops between two micro-batches and starts again on the same table and checkpoint:
    nothing is read twice, nothing written is lost, and the new query holds from the next
    micro-batch on. CHECKPOINT and LOCATION left out keep theirs. What cannot change in place
    (where the table or its state live, its partitioning, its columns) is an error; so is a
    query that Spark cannot continue from the checkpoint: the old definition then stays, and
    runs again if it ran. A name that is not a streaming table yet is created.

    `ended` says why the statement ended early ("cancelled", a timeout), else None: the wait
    for the new query's first micro-batch asks it. Ended before that batch, the stream stops
    and the old definition stays; ended after it, the new definition holds."""
    name = table_name(name)
    db, table = catalog.identify(spark, name)
    with managing(f"{db}.{table}"):
        return _alter(own_session(spark), name, db, table, sql, checkpoint, location, trigger,
                      partitioned_by, tblproperties, ended)


def _alter(spark: SparkSession, name: str, db: str, table: str, sql: str,
           checkpoint: str | None, location: str | None, trigger: str | float,
           partitioned_by: tuple[str, ...], tblproperties: tuple[tuple[str, str], ...],
           ended: Callable[[], str | None]) -> StreamingQuery:
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
        raise StreamingTableError(f"ALTER STREAMING TABLE {name} cannot change in place: "
                                  + "; ".join(fixed) + ". CREATE OR REPLACE STREAMING TABLE "
                                  "starts it over (new contents, new checkpoint)")
    entry = catalog.entry(db, table, props)
    plan = plan_stream(spark, entry.name, sql, definition.trigger, definition.checkpoint)
    _check_columns(spark, entry.name, output_schema(spark, plan))
    _check_state(entry.name, plan_stream(spark, entry.name, old.query, old.trigger,
                                         old.checkpoint).state_shape, plan.state_shape)
    state, was_running = entry.state, runner.stop(spark, entry)
    # The new query runs under the old definition until its first micro-batch ends: only then
    # does the catalog (what SHOW STREAMS and a restart read) take the new one, so that a
    # statement ended early, or a query Spark cannot continue, never shows it. The table's
    # properties change first: they hold from the first micro-batch on.
    set_properties(spark, entry.name, dict(definition.tblproperties), dict(old.tblproperties))

    def run_as_before(plan: StreamPlan, trigger: str | float) -> None:
        """The stream runs on if it ran on; if not, its recorded state is the one it had (a
        restart of the server does not resume it)."""
        current = catalog.entry(db, table, catalog.read(spark, db, table))
        if was_running and trigger != AVAILABLE_NOW:
            runner.start(spark, current, plan, trigger)
        else:
            catalog.record_state(spark, current, state)

    def holds(running: bool) -> None:
        catalog.define(spark, db, table, definition, entry.stream_id,
                       plan.window if running else None)
        log.info("sql_ext streaming table %s altered: %s", entry.name, "; ".join(changed))

    query = runner.start(spark, entry, plan, definition.trigger)
    failure, why = _first_batch(query, ended)
    if why is None and failure is None:
        holds(running=True)
        return query
    if why is not None:
        runner.stop(spark, entry)
        if query.lastProgress is not None:  # its first micro-batch ended as it stopped
            holds(running=False)
            run_as_before(plan, definition.trigger)
            raise StreamInterruptedError(f"ALTER STREAMING TABLE {name} was {why} after the new "
                                         "query's first micro-batch: the new definition holds")
    set_properties(spark, entry.name, dict(old.tblproperties), dict(definition.tblproperties))
    run_as_before(plan_stream(spark, entry.name, old.query, old.trigger, old.checkpoint),
                  old.trigger)
    if why is not None:
        raise StreamInterruptedError(f"ALTER STREAMING TABLE {name} was {why} before the new "
                                     "query's first micro-batch ended: its stream stopped, and "
                                     "the old definition stays")
    raise StreamingTableError(f"ALTER STREAMING TABLE {name}: Spark cannot continue the checkpoint "
                              f"with the new query: {short_error(failure)}. The old definition "
                              "stays; CREATE OR REPLACE STREAMING TABLE starts over")


def _check_columns(spark: SparkSession, name: str, schema) -> None:
    """The altered query must write the table's columns: same names, same types, same order."""
    def shape(fields):
        return [(f.name.lower(), f.dataType.simpleString()) for f in fields]
    table = spark.table(name).schema
    if shape(schema) != shape(table):
        raise StreamingTableError(
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
        raise StreamingTableError(
            f"ALTER STREAMING TABLE {name}: the new query keeps other window state than the "
            f"checkpoint holds ({'; '.join(changed)}); CREATE OR REPLACE STREAMING TABLE "
            "starts it over with a new checkpoint")


def _first_batch(query: StreamingQuery, ended: Callable[[], str | None],
                 timeout: float = 300.0) -> tuple[str | None, str | None]:
    """Waits for a restarted stream's first progress (or, AVAILABLE NOW, its end), or for its
    statement to end early: (the error that stopped the stream, why the statement ended), each
    None when it did not happen. Spark checks a checkpoint against the query when it plans the
    first micro-batch."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.lastProgress is None and time.monotonic() < deadline:
        why = ended()
        if why is not None:
            return None, why
        time.sleep(0.2)
    if query.isActive and query.lastProgress is None:
        raise StreamingTableError("the altered stream made no progress in "
                                  f"{timeout:.0f} s; see SHOW STREAMS")
    failure = None if query.isActive else query.exception()
    return None if failure is None else str(failure), None


def _key(spark: SparkSession, name: str) -> str:
    """The registry's key of the table `name` (Entry.key)."""
    return "%s.%s" % catalog.identify(spark, table_name(name))


def stop_stream(spark: SparkSession, name: str) -> None:
    """STOP STREAM: stops the stream and records it STOPPED (a restart does not resume it);
    the table and checkpoint stay."""
    with managing(_key(spark, name)):
        entry = named_entry(spark, name, "STOP STREAM")
        if not runner.stop(spark, entry):
            raise StreamingTableError(f"STOP STREAM {name}: no streaming table of that name is "
                                      "running")
        catalog.record_state(spark, entry, "STOPPED")


def refresh_streaming_table(spark: SparkSession, name: str) -> None:
    """REFRESH STREAMING TABLE: one AVAILABLE NOW pass from the checkpoint, then returns."""
    start_refresh(spark, name).awaitTermination()


def start_refresh(spark: SparkSession, name: str) -> StreamingQuery:
    """Starts REFRESH STREAMING TABLE's pass; its query, which ends when the pass is written."""
    with managing(_key(spark, name)):
        entry = named_entry(spark, name, "REFRESH STREAMING TABLE")
        if runs.running(spark, entry) is not None:
            raise StreamingTableError(f"REFRESH STREAMING TABLE {name}: the stream is running, "
                                      "and it already reads what arrives: STOP STREAM it first")
        own = own_session(spark, entry.owner)
        definition = entry.definition
        plan = plan_stream(own, entry.name, definition.query, AVAILABLE_NOW,
                           definition.checkpoint)
        return runner.start(own, entry, plan, AVAILABLE_NOW)


def drop_streaming_table(spark: SparkSession, name: str, if_exists: bool = False) -> None:
    """DROP STREAMING TABLE: stops the stream, drops the table, removes the checkpoint."""
    with managing(_key(spark, name)):
        try:
            entry = named_entry(spark, name, "DROP STREAMING TABLE")
        except WindowSqlError:
            if if_exists and not catalog.exists(spark, *catalog.identify(spark,
                                                                         table_name(name))):
                return
            raise
        runner.stop(spark, entry)
        spark.sql(f"DROP TABLE {entry.name}")  # (the registry forgets its runs)
        jvm.delete_path(spark, entry.definition.checkpoint)


def resume(spark: SparkSession) -> list[str]:
    """Starts every continuous (TRIGGER EVERY) streaming table of the catalog from its
    checkpoint, unless STOP STREAM stopped it or it runs already; the names started. A stream
    that cannot start is recorded FAILED with its cause; the others start regardless."""
    started = []
    for entry in catalog.entries(spark):
        if not entry.definition.continuous or entry.state == "STOPPED":
            continue
        definition = entry.definition
        try:
            with managing(entry.key):
                if runs.running(spark, entry) is not None:
                    continue
                own = own_session(spark, entry.owner)
                plan = plan_stream(own, entry.name, definition.query, definition.trigger,
                                   definition.checkpoint)
                runner.start(own, entry, plan, definition.trigger)
            started.append(entry.name)
        except Exception as error:  # noqa: BLE001 - one stream's failure is its own
            log.error("sql_ext streaming table %s could not resume: %s", entry.name, error)
            catalog.record_failure(spark, entry, f"could not resume: {error}", now())
    return started
