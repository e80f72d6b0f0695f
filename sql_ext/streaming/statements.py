"""Runs the streaming statements of spec/sql.md section 5 (recognised and validated by
sql_ext.sql.statements) with the session of the client that sent them: TRIGGER AVAILABLE NOW
(the default) and REFRESH process what the source holds and return when it is written (the
statement waits for that pass in the JVM, where a cancel or a timeout of the statement stops
it); TRIGGER EVERY d returns once the stream runs."""

from __future__ import annotations

import json
from collections.abc import Callable

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from sql_ext import jvm
from sql_ext.sql.dialect import (CreateStreamingTable, DropStreamingTable, RefreshStreamingTable,
                                 ShowStreams, StopStream)
from sql_ext.sql.errors import AccessDeniedError, StreamingTableError, WindowSqlError
from sql_ext.sql.statements import statement_of
from sql_ext.sql.window_model import duration_seconds
from sql_ext.streaming import lifecycle, status
from sql_ext.streaming.runs import short_error


def execute(sql: str, spark: SparkSession, ended: Callable[[], str | None] = lambda: None
            ) -> tuple[list[list], StreamingQuery | None]:
    """Runs one streaming statement on `spark`: the rows it returns (SHOW STREAMS), and the
    stream of a pass the statement ends with (AVAILABLE NOW, REFRESH), still running.
    `ended`: why the statement ended early (a cancel, a timeout), else None; what waits in
    Python (ALTER's first micro-batch) asks it."""
    statement = statement_of(sql)
    if isinstance(statement, ShowStreams):
        return [[stream[column] for column in status.STREAM_COLUMNS]
                for stream in status.show_streams(spark)], None
    name = statement.this.sql(dialect="spark")
    # Creating, altering, refreshing, stopping and dropping a streaming table need the privilege
    # STREAM on it (the access rules file's; its query's tables need SELECT as it is planned).
    refusal = jvm.table_refusal(spark, "STREAM", name)
    if refusal:
        raise AccessDeniedError(refusal)
    if isinstance(statement, StopStream):
        lifecycle.stop_stream(spark, name)
    elif isinstance(statement, RefreshStreamingTable):
        return [], lifecycle.start_refresh(spark, name)
    elif isinstance(statement, DropStreamingTable):
        lifecycle.drop_streaming_table(spark, name, if_exists=bool(statement.args.get("exists")))
    else:
        return [], _create(statement, sql, spark, ended)
    return [], None


def _create(statement: CreateStreamingTable, sql: str, spark: SparkSession,
            ended: Callable[[], str | None]) -> StreamingQuery | None:
    """CREATE [OR REPLACE] / ALTER STREAMING TABLE; the stream when it runs one pass (AVAILABLE
    NOW), None when it runs on (TRIGGER EVERY)."""
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
    verb = "ALTER" if statement.args.get("alter") else "CREATE"
    _check_paths(spark, f"{verb} STREAMING TABLE {name}", name,
                 {"CHECKPOINT": (options["checkpoint"], "WRITE FILES"),
                  "LOCATION": (options["location"], "CREATE EXTERNAL TABLE")})
    if statement.args.get("alter"):
        query = lifecycle.alter_streaming_table(spark, name, query_text, ended=ended, **options)
    else:
        query = lifecycle.create_streaming_table(spark, name, query_text, **options,
                                                 replace=bool(statement.args.get("replace")))
    return query if trigger is None else None


def _check_paths(spark: SparkSession, statement: str, name: str,
                 paths: dict[str, tuple[str | None, str]]) -> None:
    """CHECKPOINT (WRITE FILES) and LOCATION (CREATE EXTERNAL TABLE) of a signed-in user who is
    not an admin keep to the access rule 'paths' that every other statement's paths keep to (the
    JVM's io.sqlext.access.AccessChecks; the stream's query passes those checks as it is
    planned). The streaming table `name` may name its own folders again."""
    for what, (location, access) in paths.items():
        refusal = location and jvm.path_refusal(spark, f"{statement}'s {what}", location, access,
                                                name)
        if refusal:
            raise AccessDeniedError(refusal)


def answer_execute(sql: str, spark: SparkSession, statement_id: str | None = None) -> str:
    """The JVM-facing answer of `execute`: {"rows": [...]}, with "await": a token of the stream
    the statement waits for (io.sqlext.commands.AwaitedStreams), or {"error": "..."}.
    statement_id: the Thrift server's id of the statement, None outside one."""
    def ended() -> str | None:
        return jvm.statement_ended(spark, statement_id) if statement_id else None
    try:
        rows, pass_ = execute(sql, spark, ended)
        answer = {"rows": rows}
        if pass_ is not None:
            answer["await"] = jvm.hand_over_stream(spark, pass_)
        return json.dumps(answer, default=str)
    except WindowSqlError as error:
        return json.dumps({"error": error.message, "condition": error.condition})
    except Exception as error:  # noqa: BLE001 - reported to the client, never crashes a server
        return json.dumps({"error": short_error(f"{type(error).__name__}: {error}"),
                           "condition": StreamingTableError.condition})
