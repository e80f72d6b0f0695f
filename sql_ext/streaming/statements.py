"""Runs the streaming statements of spec/sql.md section 5 (recognised and validated by
sql_ext.sql.statements) with the session of the client that sent them: TRIGGER AVAILABLE NOW
(the default) and REFRESH process what the source holds and return when it is written;
TRIGGER EVERY d returns once the stream runs."""

from __future__ import annotations

import json

from pyspark.sql import SparkSession

from sql_ext.sql.dialect import (CreateStreamingTable, DropStreamingTable, RefreshStreamingTable,
                                 ShowStreams, StopStream)
from sql_ext.sql.errors import WindowSqlError
from sql_ext.sql.statements import statement_of
from sql_ext.sql.window_model import duration_seconds
from sql_ext.streaming import lifecycle, status
from sql_ext.streaming.runs import short_error


def execute(sql: str, spark: SparkSession) -> list[list]:
    """Runs one streaming statement on `spark`; the rows it returns (SHOW STREAMS)."""
    statement = statement_of(sql)
    if isinstance(statement, ShowStreams):
        return [[stream[column] for column in status.STREAM_COLUMNS]
                for stream in status.show_streams(spark)]
    name = statement.this.sql(dialect="spark")
    if isinstance(statement, StopStream):
        lifecycle.stop_stream(spark, name)
    elif isinstance(statement, RefreshStreamingTable):
        lifecycle.refresh_streaming_table(spark, name)
    elif isinstance(statement, DropStreamingTable):
        lifecycle.drop_streaming_table(spark, name, if_exists=bool(statement.args.get("exists")))
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
        query = lifecycle.alter_streaming_table(spark, name, query_text, **options)
    else:
        query = lifecycle.create_streaming_table(spark, name, query_text, **options,
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
        return json.dumps({"error": short_error(f"{type(error).__name__}: {error}")})
