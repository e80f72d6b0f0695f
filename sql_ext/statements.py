"""The streaming statements of spec/sql.md section 5, run for any client of the session:

    CREATE STREAMING TABLE max_flow CHECKPOINT '/ckpt/max_flow' TRIGGER EVERY 10 AS
      SELECT freeway, PANE_START() AS s, MAX(lane_flow) AS flow FROM STREAM(traffic)
      WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway)
    SHOW STREAMS
    STOP STREAM max_flow

The JVM parser asks the rewriter about a statement (bridge.answer), which validates it and
answers COMMAND; Spark then runs it as a command that calls back `execute` with the session of
the client (PySpark, a Thrift connection, dbt). TRIGGER AVAILABLE NOW (the default) processes
what the source holds and returns when it is written; TRIGGER EVERY d returns once the stream
runs.
"""

from __future__ import annotations

import json
import posixpath
from urllib.parse import urlparse

from pyspark.sql import SparkSession
from sqlglot import exp

from sql_ext.dialect import CreateStreamingTable, ShowStreams, SqlExt, StopStream
from sql_ext.errors import WindowSqlError, error_at_node
from sql_ext.rewrite import lower_parts, parse, stream_source
from sql_ext.streaming import STREAM_COLUMNS, create_streaming_table, show_streams, stop_stream
from sql_ext.window_model import duration_seconds

STATEMENTS = (CreateStreamingTable, ShowStreams, StopStream)


def statement_of(sql: str) -> exp.Expression | None:
    """The streaming statement `sql` is, validated; None for any other text."""
    if not _starts_like_a_statement(sql):
        return None
    statements = parse(sql)
    if len(statements) != 1 or not isinstance(statements[0], STATEMENTS):
        return None
    statement = statements[0]
    if isinstance(statement, CreateStreamingTable):
        _validate_create(statement)
    return statement


def _starts_like_a_statement(sql: str) -> bool:
    """Token level, so leading comments (dbt writes one) do not matter."""
    try:
        tokens = SqlExt().tokenize(sql)[:3]
    except Exception:  # noqa: BLE001 - untokenizable text is not ours to report
        return False
    words = " ".join(t.text.strip().upper() for t in tokens)
    return words.startswith(("CREATE STREAMING TABLE", "SHOW STREAMS", "STOP STREAM"))


def _validate_create(statement: CreateStreamingTable) -> None:
    select = statement.expression
    if not isinstance(select, exp.Select) or select.args.get("sx_window") is None \
            or stream_source(select) is None:
        raise error_at_node(statement, "CREATE STREAMING TABLE needs a windowed query over "
                                       "FROM STREAM(source): SELECT ... FROM STREAM(t) WINDOW ...")
    lower_parts(select.copy(), streaming=True)
    trigger = statement.args.get("trigger")
    if trigger is not None and duration_seconds(trigger, "TRIGGER EVERY") <= 0:
        raise error_at_node(trigger, "TRIGGER EVERY must be a positive duration")


def kind_of(statement: exp.Expression) -> str:
    return {CreateStreamingTable: "CREATE", ShowStreams: "SHOW", StopStream: "STOP"}[
        type(statement)]


def execute(sql: str, spark: SparkSession) -> list[list]:
    """Runs one streaming statement on `spark`; the rows it returns (SHOW STREAMS)."""
    statement = statement_of(sql)
    if isinstance(statement, ShowStreams):
        return [[stream[column] for column in STREAM_COLUMNS] for stream in show_streams()]
    if isinstance(statement, StopStream):
        stop_stream(statement.this.sql(dialect="spark"))
        return []
    assert isinstance(statement, CreateStreamingTable)
    name = statement.this.sql(dialect="spark")
    location = statement.args.get("location")
    checkpoint = statement.args.get("checkpoint")
    trigger = statement.args.get("trigger")
    query = create_streaming_table(
        spark, name, statement.expression,
        checkpoint=checkpoint.this if checkpoint else default_checkpoint(spark, name),
        location=location.this if location else None,
        trigger="available_now" if trigger is None else duration_seconds(trigger, "TRIGGER"))
    if trigger is None:
        query.awaitTermination()
    return []


def default_checkpoint(spark: SparkSession, name: str) -> str:
    """<warehouse>/_sql_ext_checkpoints/<name>: beside the tables, stable across restarts."""
    warehouse = spark.conf.get("spark.sql.warehouse.dir")
    path = urlparse(warehouse).path if warehouse.startswith("file:") else warehouse
    return posixpath.join(path, "_sql_ext_checkpoints", name.replace("`", ""))


def answer_execute(sql: str, spark: SparkSession) -> str:
    """The JVM-facing answer of `execute`: {"rows": [...]} or {"error": "..."}."""
    try:
        return json.dumps({"rows": execute(sql, spark)}, default=str)
    except WindowSqlError as error:
        return json.dumps({"error": str(error)})
    except Exception as error:  # noqa: BLE001 - reported to the client, never crashes a server
        return json.dumps({"error": _short(f"{type(error).__name__}: {error}")})


def _short(message: str, limit: int = 2000) -> str:
    """A stream failure carries the whole stack of every layer: keep its first line and the
    innermost cause, which name the problem."""
    lines = message.splitlines()
    causes = [line for line in lines if line.lstrip().startswith("Caused by:")]
    text = "\n".join(lines[:1] + causes[-1:])
    return text if len(text) <= limit else text[:limit] + " ..."
