"""Windowed queries of a Spark Declarative Pipeline (spec/sql.md section 10): materialized
views, streaming tables and flows in its SQL files, and spark.sql(...) in its Python
definitions.

A pipeline runs each dataset's query itself (a flow that appends to a streaming table is one
streaming query of the pipeline's) and resolves its own datasets while it analyzes them, after
the statement was parsed. So the rewrite keeps the statement Spark's (CREATE STREAMING TABLE
... AS, CREATE FLOW ... AS INSERT INTO ..., CREATE MATERIALIZED VIEW ... AS: the user's text up
to the query, as written) and lowers only its windowed query, into one call the JVM resolves
once the pipeline has resolved the window's tuples:

    SELECT freeway, WINDOW_ID() AS w, MAX(lane_flow) AS m FROM STREAM(readings)
    WINDOW TUMBLING COUNT(3) OVER (PARTITION BY freeway)
    ->
    SELECT * FROM sql_ext_pipeline_window(TABLE(SELECT * FROM STREAM(readings)),
        '{"spec": ..., "tuples": "SELECT lane_flow, freeway AS __sx_p0, ... FROM __sx_src",
          "query": "SELECT __sx_p0 AS freeway, ... FROM __sx_w", "user": "<the statement>"}')

Over a stream the window runs as the processors of a sql-ext streaming table, which hand on one
row of aggregate values per firing. Hence the limits of a pipeline's streaming windows, each
an error here: windows that only append (no re-firing panes: EMIT FINAL), aggregates with
partials (COUNT, SUM, AVG, MIN, MAX; the JVM checks their input types), no wall clock (a
pipeline's run ends with its input), no ORDER BY, GROUP BY, LATE ROWS INTO or WATERMARK BY.
"""

from __future__ import annotations

import json

from sqlglot import exp
from sqlglot.tokens import TokenType

from sql_ext.sql import contract
from sql_ext.sql.dialect import has_window_clause, tokenize
from sql_ext.sql.errors import UnsupportedWindowError
from sql_ext.sql.errors import error_at as _error_at
from sql_ext.sql.errors import error_at_node as _error_at_node
from sql_ext.sql.firings import (Aggregates, aggregate_inputs, only_read_columns,
                                 tuple_columns_read)
from sql_ext.sql.statements import stream_clause
from sql_ext.sql.transpile import (LoweredWindow, leading_text, lower_parts, parse,
                                   stream_source)

def error_at(token, message: str):
    """Every window this module refuses is one a pipeline cannot run
    (SQL_EXT_UNSUPPORTED_WINDOW)."""
    return _error_at(token, message, UnsupportedWindowError)


def error_at_node(node, message: str):
    return _error_at_node(node, message, UnsupportedWindowError)


TABLE_FUNCTION = "sql_ext_pipeline_window"
# The statements that define a pipeline's dataset, by their first words.
DATASET_STATEMENTS = (("CREATE", "STREAMING", "TABLE"), ("CREATE", "FLOW"),
                      ("CREATE", "MATERIALIZED", "VIEW"))


def dataset_statement(sql: str) -> str | None:
    """The pipeline statement `sql` (in a pipeline's SQL file) with its windowed query lowered;
    None when `sql` is not a windowed dataset (other statements take the ordinary paths, as
    does a materialized view whose window is not its top SELECT's)."""
    tokens = tokenize(sql)
    words = tuple(t.text.upper() for t in tokens[:5])
    kind = next((s for s in DATASET_STATEMENTS if words[:len(s)] == s), None)
    if kind is None or not has_window_clause(sql):
        return None
    start = _query_start(tokens)
    if start is None:
        return None
    clause = stream_clause([t for t in tokens[len(kind):] if t.start < start])
    if clause is not None:
        raise error_at(clause, f"{clause.text.upper()}: a declarative pipeline runs its "
                               "streaming tables itself, on its own triggers and checkpoints; "
                               "leave the clause out inside a pipeline")
    # The query parsed in place (the header blanked), so errors name the user's positions.
    blank = "".join(c if c == "\n" else " " for c in sql[:start])
    select = _windowed_select(blank + sql[start:])
    if select is None and kind[1] == "MATERIALIZED":
        return None  # a window deeper in the query: lowered in place, as anywhere
    if select is None or (kind[1] == "STREAMING" and stream_source(select) is None):
        raise UnsupportedWindowError("a windowed streaming table or flow of a pipeline needs "
                                     "one windowed SELECT ... FROM STREAM(<dataset or "
                                     "table>); for batch windows over a table, define a "
                                     "MATERIALIZED VIEW")
    return sql[:start] + _lowered(select, sql)


def query(sql: str) -> str | None:
    """A windowed query that a pipeline's Python definition runs through spark.sql(...) (over
    STREAM(dataset) for a streaming table), lowered; None for any other text."""
    if not has_window_clause(sql):
        return None
    select = _windowed_select(sql)
    return leading_text(sql) + _lowered(select, sql) if select is not None else None


def _windowed_select(sql: str) -> exp.Select | None:
    statements = parse(sql)
    select = statements[0] if len(statements) == 1 else None
    if isinstance(select, exp.Select) and select.args.get("sx_window") is not None:
        return select
    return None


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


def _lowered(select: exp.Select, user_text: str) -> str:
    """SELECT * FROM sql_ext_pipeline_window(TABLE(SELECT * FROM <the query's FROM and JOINs>),
    '<window>'), where the window is {spec; tuples: the window's input over that source (FROM
    __sx_src: WHERE, helper columns); query: the aggregation over its firings (FROM __sx_w);
    user: the statement as written}. The JVM builds and analyzes them once the pipeline has
    resolved the source, and says their errors in the user's terms."""
    window = select.args["sx_window"]
    if stream_source(select) is None:
        lowered = lower_parts(select)
        tuples, spec = lowered.inner, lowered.spec
    else:
        if select.args.get("order") is not None:
            raise error_at_node(window, "ORDER BY: a pipeline's streaming table appends rows as "
                                        "windows fire, in no order; order when reading it")
        lowered = lower_parts(select, streaming=True)
        _check_appends(window, lowered)
        tuples, spec = _one_row_per_firing(window, lowered)
    source = exp.select(exp.Star()).from_(tuples.args["from_"].this.copy())
    for join in tuples.args.get("joins") or []:
        source.append("joins", join.copy())
    tuples = tuples.copy()
    tuples.set("from_", exp.From(this=exp.to_table(contract.TUPLES_ALIAS)))
    tuples.set("joins", None)
    outer = lowered.outer
    outer.set("from_", exp.From(this=exp.to_table(contract.SOURCE_ALIAS)))
    argument = {"spec": spec, "tuples": tuples.sql(dialect="spark"),
                "query": outer.sql(dialect="spark"), "user": user_text}
    call = exp.Anonymous(this=TABLE_FUNCTION, expressions=[
        exp.Anonymous(this="TABLE", expressions=[source]),
        exp.Literal.string(json.dumps(argument, separators=(",", ":")))])
    return exp.select(exp.Star()).from_(exp.Table(this=call)).sql(dialect="spark")


def _one_row_per_firing(window: exp.Expression, lowered: LoweredWindow) -> tuple:
    """A stream's window hands on one row of aggregate values per firing (the pipeline only
    appends what the query projects of them): the tuples it reads and its spec."""
    aggregate_inputs(lowered)
    inner = only_read_columns(lowered)
    aggregates = Aggregates.of(lowered, None)
    if aggregates is not None and any(f["distinct"] or f["filtered"] for f in aggregates.facts):
        aggregates = None
    partials = aggregates.read_instead(lowered) if aggregates is not None else None
    if aggregates is not None and partials is None:
        outside = ", ".join(sorted(tuple_columns_read(aggregates.outer)))
        raise error_at_node(window, f"{outside}: read outside an aggregate; a windowed "
                                    "streaming table of a pipeline hands on one row per firing, "
                                    "so each column outside an aggregate must be a PARTITION BY "
                                    "key of the window")
    if not partials:
        raise error_at_node(window, "inside a declarative pipeline a windowed streaming table "
                                    "hands on one row per firing, so it aggregates with COUNT, "
                                    "SUM, AVG, MIN and MAX of a column or an expression (no "
                                    "DISTINCT or FILTER) and has no GROUP BY of its own; define "
                                    "the result as a MATERIALIZED VIEW, or as a sql-ext "
                                    "streaming table outside the pipeline")
    return inner, dict(lowered.spec, aggregates=partials)


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
