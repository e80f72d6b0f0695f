"""The streaming statements of spec/sql.md section 5, run for any client of the session:

    CREATE [OR REPLACE] STREAMING TABLE max_flow CHECKPOINT '/ckpt/max_flow' TRIGGER EVERY 10 AS
      SELECT freeway, PANE_START() AS s, MAX(lane_flow) AS flow FROM STREAM(traffic)
      WINDOW TIME_INTERVAL(50, 25, 1000, 0) ON event_time OVER (PARTITION BY freeway)
    ALTER STREAMING TABLE max_flow TRIGGER EVERY 30 AS <the query, changed or not>
    SHOW STREAMS
    STOP STREAM max_flow
    REFRESH STREAMING TABLE max_flow
    DROP STREAMING TABLE [IF EXISTS] max_flow

This module recognises and validates them, without Spark: the JVM parser asks the rewriter
about a statement (sql_ext.server.callback), which answers COMMAND with its kind; Spark then
runs it as a command that calls back, and sql_ext.streaming.statements runs it with the
session of the client (PySpark, a Thrift connection, dbt).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.tokens import TokenType

from sql_ext.sql.dialect import (CreateStreamingTable, DropStreamingTable, RefreshStreamingTable,
                                 ShowStreams, StopStream, has_window_clause,
                                 tokenize)
from sql_ext.sql.errors import error_at_node
from sql_ext.sql.transpile import lower_parts, parse, stream_source
from sql_ext.sql.window_model import duration_seconds

KINDS = {CreateStreamingTable: "CREATE", ShowStreams: "SHOW", StopStream: "STOP",
         RefreshStreamingTable: "REFRESH", DropStreamingTable: "DROP"}
STATEMENTS = tuple(KINDS)


def statement_of(sql: str) -> exp.Expression | None:
    """The streaming statement `sql` is, validated; None for any other text, and for a CREATE
    STREAMING TABLE without the extension's clauses: that one is Spark's (spec/sql.md section
    10), so Spark's own error stands."""
    if not _starts_like_a_statement(sql) or not _holds_extension_clause(sql):
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
        tokens = tokenize(sql)[:5]
    except Exception:  # noqa: BLE001 - untokenizable text is not ours to report
        return False
    words = " ".join(t.text.strip().upper() for t in tokens)
    return words.startswith(("CREATE STREAMING TABLE", "CREATE OR REPLACE", "SHOW STREAMS",
                             "ALTER STREAMING TABLE",
                             "STOP STREAM", "REFRESH STREAMING TABLE", "DROP STREAMING TABLE"))


def _holds_extension_clause(sql: str) -> bool:
    """A CREATE [OR REPLACE] STREAMING TABLE is the extension's when its header has TRIGGER or
    CHECKPOINT or its query has a window clause (spec/sql.md section 10); the other statements
    of this module are never Spark's."""
    tokens = tokenize(sql)
    words = [t.text.upper() for t in tokens[:5]]
    if words[:3] == ["CREATE", "STREAMING", "TABLE"]:
        header_start = 3
    elif words == ["CREATE", "OR", "REPLACE", "STREAMING", "TABLE"]:
        header_start = 5
    else:
        return True
    header = []
    for token in tokens[header_start:]:
        if token.token_type == TokenType.ALIAS:
            break
        header.append(token)
    return has_window_clause(sql) or stream_clause(header) is not None


def stream_clause(header: list) -> object | None:
    """The TRIGGER or CHECKPOINT token in the tokens of a streaming table's header (from its
    name up to AS), or None. header[0] starts the table's name; a name part follows a dot
    (`db.checkpoint`)."""
    return next((token for before, token in zip(header, header[1:])
                 if token.token_type == TokenType.TRIGGER
                 or (token.text.upper() == "CHECKPOINT" and before.token_type != TokenType.DOT)),
                None)


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
