"""Windowed streaming tables and flows of a Spark Declarative Pipeline (spec/sql.md section 10).

A pipeline runs each flow itself, as one streaming query that appends to its table; sql-ext
never starts it. So the rewrite keeps the statement Spark's (CREATE [OR REFRESH] STREAMING
TABLE ... AS, CREATE FLOW ... AS INSERT INTO ...: the user's text up to the query, as written)
and lowers only its windowed query, to a plan the pipeline can run:

    SELECT freeway, WINDOW_ID() AS w, MAX(lane_flow) AS m FROM STREAM(readings)
    WINDOW TUMBLING COUNT(3) OVER (PARTITION BY freeway)
    ->
    SELECT __sx_p0 AS freeway, __sx_wid AS w, __sx_a0 AS m
    FROM sql_ext_stream_window(TABLE(SELECT lane_flow, freeway AS __sx_p0, ...
                                     FROM STREAM(readings)), '<spec>') AS __sx_w

The JVM resolves sql_ext_stream_window into the window processors of a sql-ext streaming
table, which hand on one row of aggregate values per firing. Hence the limits, each an error
here: windows that only append (no re-firing panes: EMIT FINAL), aggregates with partials
(COUNT, SUM, AVG, MIN, MAX; the JVM checks their input types), no wall clock (the pipeline's
runs end with their input), no ORDER BY, GROUP BY, LATE ROWS INTO or WATERMARK BY.
"""

from __future__ import annotations

import json

from sqlglot import exp
from sqlglot.tokens import TokenType

from sql_ext.sql import contract
from sql_ext.sql.dialect import SqlExt, has_window_clause
from sql_ext.sql.errors import WindowSqlError, error_at, error_at_node
from sql_ext.sql.firings import Aggregates, aggregate_inputs, only_read_columns
from sql_ext.sql.transpile import LoweredWindow, lower_parts, parse, stream_source

TABLE_FUNCTION = "sql_ext_stream_window"
# The statements that define a pipeline's streaming dataset, by their first words.
DATASET_STATEMENTS = (("CREATE", "STREAMING", "TABLE"),
                      ("CREATE", "FLOW"))


def dataset_statement(sql: str) -> str | None:
    """The pipeline statement `sql` with its windowed query lowered; None when `sql` is not a
    windowed streaming table or flow (other statements take the ordinary paths)."""
    tokens = SqlExt().tokenize(sql)
    words = tuple(t.text.upper() for t in tokens[:5])
    if not any(words[:len(s)] == s for s in DATASET_STATEMENTS) or not has_window_clause(sql):
        return None
    start = _query_start(tokens)
    if start is None:
        return None
    header = [t for t in tokens if t.start < start]
    for before, token in zip(header, header[1:]):
        if token.token_type == TokenType.TRIGGER or (
                token.text.upper() == "CHECKPOINT" and before.token_type != TokenType.DOT):
            raise error_at(token, f"{token.text.upper()}: a declarative pipeline runs its "
                                  "streaming tables itself, on its own triggers and checkpoints; "
                                  "leave the clause out inside a pipeline")
    # The query parsed in place (the header blanked), so errors name the user's positions.
    blank = "".join(c if c == "\n" else " " for c in sql[:start])
    return sql[:start] + lowered_query(blank + sql[start:])


def _query_start(tokens) -> int | None:
    """Where the query of `... AS [INSERT INTO t [BY NAME]] <query>` starts: the first SELECT or
    WITH outside parentheses after the statement's AS."""
    depth, after_as = 0, False
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and token.token_type == TokenType.ALIAS:
            after_as = True
        elif depth == 0 and after_as and token.token_type in (TokenType.SELECT, TokenType.WITH):
            return token.start
    return None


def lowered_query(sql: str) -> str:
    statements = parse(sql)
    select = statements[0] if len(statements) == 1 else None
    if not isinstance(select, exp.Select) or select.args.get("sx_window") is None:
        raise WindowSqlError("a windowed streaming table or flow of a pipeline needs one "
                             "windowed SELECT ... FROM STREAM(source)")
    window = select.args["sx_window"]
    if stream_source(select) is None:
        raise error_at_node(window, "a streaming table or flow reads a stream: FROM "
                                    "STREAM(<dataset or table>); for batch windows over a table, "
                                    "define a MATERIALIZED VIEW")
    if select.args.get("order") is not None:
        raise error_at_node(window, "ORDER BY: a pipeline's streaming table appends rows as "
                                    "windows fire, in no order; order when reading it")
    lowered = lower_parts(select, streaming=True)
    _check_appends(window, lowered)
    aggregate_inputs(lowered)
    inner = only_read_columns(lowered)
    aggregates = Aggregates.of(lowered, None)
    if aggregates is not None and any(f["distinct"] or f["filtered"] for f in aggregates.facts):
        aggregates = None
    partials = aggregates.read_instead(lowered) if aggregates is not None else None
    if not partials:
        raise error_at_node(window, "inside a declarative pipeline a windowed streaming table "
                                    "hands on one row per firing, so it aggregates with COUNT, "
                                    "SUM, AVG, MIN and MAX of a column or an expression (no "
                                    "DISTINCT or FILTER) and has no GROUP BY of its own; define "
                                    "the result as a MATERIALIZED VIEW, or as a sql-ext "
                                    "streaming table outside the pipeline")
    spec = dict(lowered.spec, aggregates=partials)
    call = exp.Anonymous(this=TABLE_FUNCTION, expressions=[
        exp.Anonymous(this="TABLE", expressions=[inner]),
        exp.Literal.string(json.dumps(spec, separators=(",", ":")))])
    outer = lowered.outer
    outer.set("from_", exp.From(this=exp.Table(this=call, alias=exp.TableAlias(
        this=exp.to_identifier(contract.SOURCE_ALIAS)))))
    return outer.sql(dialect="spark")


def _check_appends(window: exp.Expression, lowered: LoweredWindow) -> None:
    """What a pipeline's flow cannot run: re-firing panes (a pipeline only appends), the wall
    clock (its runs end with their input), and the parts that write or read beside the flow."""
    spec = lowered.spec
    text = spec["policy_text"]
    if "pane_index" in spec["meta"]:
        raise error_at_node(window, f"{text}: late tuples and EMIT EARLY fire a pane again, "
                                    "replacing its row, but a declarative pipeline's streaming "
                                    "table only appends; add EMIT FINAL (one row per pane, when "
                                    "it closes), or define a MATERIALIZED VIEW")
    if "time" in (spec["policy"], spec.get("trigger")) \
            or spec.get("partition_eviction") == "age" or spec.get("watermark_idle"):
        raise error_at_node(window, f"{text}: TIME policies, PARTITION EVICTION AGE and "
                                    "WATERMARK ... IDLE act by the wall clock while a stream "
                                    "runs, and a pipeline's run ends with its input; use them in "
                                    "a sql-ext streaming table (TRIGGER EVERY ...)")
    if spec.get("late_rows") or spec.get("watermark") == "by":
        raise error_at_node(window, f"{text}: LATE ROWS INTO and WATERMARK BY are not "
                                    "available inside a declarative pipeline; use a sql-ext "
                                    "streaming table")
