"""The streaming statements of spec/sql.md section 5, run for any client of the session:

    CREATE [OR REPLACE] STREAMING TABLE max_flow CHECKPOINT '/ckpt/max_flow' TRIGGER EVERY 10 AS
      SELECT freeway, PANE_START() AS s, MAX(lane_flow) AS flow FROM STREAM(traffic)
      WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway)
    ALTER STREAMING TABLE max_flow TRIGGER EVERY 30 AS <the query, changed or not>
    SHOW STREAMS
    STOP STREAM max_flow
    REFRESH STREAMING TABLE max_flow
    DROP STREAMING TABLE [IF EXISTS] max_flow

The JVM parser asks the rewriter about a statement (bridge.answer), which validates it and
answers COMMAND; Spark then runs it as a command that calls back `execute` with the session of
the client (PySpark, a Thrift connection, dbt). TRIGGER AVAILABLE NOW (the default) and REFRESH
process what the source holds and return when it is written; TRIGGER EVERY d returns once the
stream runs.
"""

from __future__ import annotations

import json

from pyspark.sql import SparkSession
from sqlglot import exp

from sql_ext import streaming
from sql_ext.dialect import (CreateStreamingTable, DropStreamingTable, RefreshStreamingTable,
                             ShowStreams, SqlExt, StopStream)
from sql_ext.errors import WindowSqlError, error_at_node
from sql_ext.rewrite import lower_parts, parse, stream_source
from sql_ext.window_model import duration_seconds

KINDS = {CreateStreamingTable: "CREATE", ShowStreams: "SHOW", StopStream: "STOP",
         RefreshStreamingTable: "REFRESH", DropStreamingTable: "DROP"}
STATEMENTS = tuple(KINDS)


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
        tokens = SqlExt().tokenize(sql)[:5]
    except Exception:  # noqa: BLE001 - untokenizable text is not ours to report
        return False
    words = " ".join(t.text.strip().upper() for t in tokens)
    return words.startswith(("CREATE STREAMING TABLE", "CREATE OR REPLACE", "SHOW STREAMS",
                             "ALTER STREAMING TABLE",
                             "STOP STREAM", "REFRESH STREAMING TABLE", "DROP STREAMING TABLE"))


def _validate_create(statement: CreateStreamingTable) -> None:
    select = statement.expression
    if not isinstance(select, exp.Select) or select.args.get("sx_window") is None \
            or stream_source(select) is None:
        verb = "ALTER" if statement.args.get("alter") else "CREATE"
        raise error_at_node(statement, f"{verb} STREAMING TABLE needs a windowed query over "
                                       "FROM STREAM(source): SELECT ... FROM STREAM(t) WINDOW ...")
    lower_parts(select.copy(), streaming=True)
    trigger = statement.args.get("trigger")
    if trigger is not None and duration_seconds(trigger, "TRIGGER EVERY") <= 0:
        raise error_at_node(trigger, "TRIGGER EVERY must be a positive duration")


def kind_of(statement: exp.Expression) -> str:
    return KINDS[type(statement)]


def execute(sql: str, spark: SparkSession) -> list[list]:
    """Runs one streaming statement on `spark`; the rows it returns (SHOW STREAMS)."""
    statement = statement_of(sql)
    if isinstance(statement, ShowStreams):
        return [[stream[column] for column in streaming.STREAM_COLUMNS]
                for stream in streaming.show_streams(spark)]
    name = statement.this.sql(dialect="spark")
    if isinstance(statement, StopStream):
        streaming.stop_stream(spark, name)
    elif isinstance(statement, RefreshStreamingTable):
        streaming.refresh_streaming_table(spark, name)
    elif isinstance(statement, DropStreamingTable):
        streaming.drop_streaming_table(spark, name, if_exists=bool(statement.args.get("exists")))
    else:
        _create(statement, sql, spark)
    return []


def _create(statement: CreateStreamingTable, sql: str, spark: SparkSession) -> None:
    location = statement.args.get("location")
    checkpoint = statement.args.get("checkpoint")
    trigger = statement.args.get("trigger")
    options = dict(
        checkpoint=checkpoint.this if checkpoint else None,
        location=location.this if location else None,
        trigger="available_now" if trigger is None else duration_seconds(trigger, "TRIGGER"),
        partitioned_by=tuple(statement.args.get("partitioned_by") or ()),
        tblproperties=tuple(statement.args.get("properties") or ()))
    name, query_text = statement.this.sql(dialect="spark"), sql[statement.args["query_start"]:]
    if statement.args.get("alter"):
        query = streaming.alter_streaming_table(spark, name, query_text, **options)
    else:
        query = streaming.create_streaming_table(spark, name, query_text, **options,
                                                 replace=bool(statement.args.get("replace")))
    if trigger is None:
        query.awaitTermination()


def answer_execute(sql: str, spark: SparkSession) -> str:
    """The JVM-facing answer of `execute`: {"rows": [...]} or {"error": "..."}."""
    try:
        return json.dumps({"rows": execute(sql, spark)}, default=str)
    except WindowSqlError as error:
        return json.dumps({"error": str(error)})
    except Exception as error:  # noqa: BLE001 - reported to the client, never crashes a server
        return json.dumps({"error": streaming.short_error(f"{type(error).__name__}: {error}")})
