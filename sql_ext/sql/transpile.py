"""Lowers windowed SQL into plain Spark SQL over the `sql_ext_window` table function.

    SELECT customer, SUM(cost) AS total, WINDOW_ID() AS w
    FROM orders WHERE cost > 0
    WINDOW TUMBLING COUNT(3) OVER (PARTITION BY customer ORDER BY seq)
->
    SELECT __sx_p0 AS customer, SUM(cost) AS total, __sx_wid AS w
    FROM sql_ext_window(TABLE(SELECT *, customer AS __sx_p0, seq AS __sx_order,
                                     SQL_EXT_ARRIVAL() AS __sx_seq
                              FROM orders WHERE cost > 0), '{...spec...}') AS __sx_w
    GROUP BY __sx_p0, __sx_fire, __sx_wid

The table function assigns tuples to firings (the JVM operator); the aggregation over
(partition keys, firing, group keys) is ordinary Spark aggregation, so built-ins and Python
UDAFs both work. Spark's order-sensitive aggregates follow the window's arrival order
(`arrival_ordered`): FIRST, LAST, FIRST_VALUE, LAST_VALUE, COLLECT_LIST and ARRAY_AGG give
what SPL's First, Last and Collect give, in batch and streaming alike.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import ParseError
from sqlglot.tokens import TokenType

from sql_ext.sql import contract
from sql_ext.sql import udaf_names
from sql_ext.sql.dialect import SqlExt, has_window_clause, tokenize
from sql_ext.sql.errors import (UnsupportedWindowError, WindowSqlError, WindowSyntaxError,
                                 error_at_node)
from sql_ext.sql.window_model import WindowModel, duration_seconds, validate

TABLE_FUNCTION = "sql_ext_window"
# PANE_START() -> ("pane_start", its column), for each pane function.
PANE_FUNCTIONS = {function.upper(): (function, column)
                  for function, column in contract.PANE_FUNCTION_COLUMNS.items()}


def parse(sql: str) -> list[exp.Expression]:
    """Parses with the extension dialect; syntax errors carry line and column."""
    try:
        # The tokens the rewriter's other steps read (dialect.tokenize): one tokenization.
        return [s for s in SqlExt().parser().parse(tokenize(sql), sql) if s is not None]
    except ParseError as error:
        first = error.errors[0] if error.errors else {}
        raise WindowSyntaxError(_readable(first.get("description") or str(error),
                                          first.get("highlight")),
                                first.get("line") or 1, first.get("col") or 0) from None


_MISSING = re.compile(r"Required keyword: '\w+' missing for <class '[\w.]+\.(\w+)'>")


def _readable(description: str, near: str | None) -> str:
    """sqlglot names its own classes when an expression is incomplete ("Required keyword:
    'this' missing for <class '...Sum'>"); say it in SQL's words instead."""
    missing = _MISSING.search(description)
    if missing is None:
        return description
    name = missing.group(1)
    kind = getattr(exp, name, None)
    if isinstance(kind, type) and issubclass(kind, exp.Func):
        what = f"{name.upper()}(...) is missing an argument"
    elif isinstance(kind, type) and issubclass(kind, (exp.Binary, exp.Connector)):
        what = "an operator is missing an operand"
    else:
        what = f"an incomplete {name.lower()} clause or expression"
    return f"syntax error near '{near}': {what}" if near else f"syntax error: {what}"


def transpile(sql: str, comments: bool = True) -> str:
    """Plain Spark SQL for `sql`; text without a window clause comes back unchanged.
    `comments=False` leaves the statement's comments out."""
    if not has_window_clause(sql):
        return sql
    statements = [s.transform(_lower_if_windowed) for s in parse(sql)]
    return ";\n".join(s.sql(dialect="spark", comments=comments) for s in statements)


def named_positional_parameters(sql: str) -> str:
    """`sql` with its i-th `?` written `:__sx_pos<i>` (contract.positional_parameter).

    The lowering may move clauses, and with them the markers' order, so the JVM binds
    `spark.sql(text, args=[...])`'s values to these names rather than by position.

        SELECT ... WHERE k = ? AND x > ?  ->  SELECT ... WHERE k = :__sx_pos0 AND x > :__sx_pos1
    """
    markers = [t for t in tokenize(sql)
               if t.token_type == TokenType.PLACEHOLDER and t.text == "?"]
    for i, marker in reversed(list(enumerate(markers))):
        sql = sql[:marker.start] + ":" + contract.positional_parameter(i) + sql[marker.end + 1:]
    return sql


def leading_text(sql: str) -> str:
    """What comes before the statement's first token: whitespace and comments.

    A rewritten statement keeps it, so its plan starts where Spark's parser says the
    statement starts in the user's text (declarative pipelines cut the text at that index)."""
    tokens = tokenize(sql)
    return sql[:tokens[0].start] if tokens else sql


def _lower_if_windowed(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Select) and node.args.get("sx_window") is not None:
        return lower_select(node)
    return node


def _not_supported_yet(node: exp.Expression, what: str) -> WindowSqlError:
    return error_at_node(node, f"{what} is not supported yet (sql_ext runs batch windows so far)",
                         UnsupportedWindowError)


def stream_source(select: exp.Select) -> str | None:
    """The table of FROM STREAM(table), or None for a batch source (or none at all)."""
    if select.args.get("from_") is None:
        return None
    source = select.args["from_"].this
    if isinstance(source, exp.Table) and isinstance(source.this, exp.Anonymous) \
            and source.this.name.upper() == "STREAM" and source.this.expressions:
        return source.this.expressions[0].sql(dialect="spark")
    return None


def _check_supported(window: exp.Expression, model: WindowModel, select: exp.Select,
                     streaming: bool = False) -> None:
    streamed = stream_source(select) is not None
    stream = select.args["from_"].this.this if streamed else None  # STREAM(...)
    if streamed and isinstance(stream.expressions[0], (exp.Subquery, exp.Query)):
        raise error_at_node(stream, "STREAM(...) reads a table or a streaming view by its name, "
                                    "not a query: name the table in STREAM(...) and filter or "
                                    "join it in the windowed query itself",
                            UnsupportedWindowError)
    if streamed and not streaming:
        raise error_at_node(window, "a windowed query over STREAM(...) runs as a streaming "
                                    "table: CREATE STREAMING TABLE <name> AS <query> (or "
                                    "sql_ext.streaming.create_streaming_table(...))",
                            UnsupportedWindowError)
    if "INCOMPLETE" in model.emit and model.kind != "SLIDING":
        emit = window.args["emit"][model.emit.index("INCOMPLETE")]
        raise error_at_node(emit, "EMIT INCOMPLETE applies to SLIDING windows (a TUMBLING "
                                  "window only fires when it is full)")
    if "EVICTED" in model.emit and model.eviction is None:
        emit = window.args["emit"][model.emit.index("EVICTED")]
        raise error_at_node(emit, "EMIT EVICTED needs PARTITION EVICTION")
    clocked = [p for p in (model.policy, model.trigger) if p is not None and p.name == "TIME"]
    if model.eviction is not None and model.eviction.name == "AGE":
        clocked.append(model.eviction)
    if clocked and model.order_by is None and not streaming:
        raise error_at_node(window, f"{clocked[0].text}: a batch TIME policy replays time from "
                                    "the arrival order, so it needs OVER (ORDER BY <timestamp>)")


# Spark's aggregates whose value depends on the order of their input.
ARRIVAL_AGGREGATES = (exp.First, exp.Last, exp.FirstValue, exp.LastValue, exp.ArrayAgg)


def _uses_arrival(select: exp.Select) -> bool:
    return select.find(*ARRIVAL_AGGREGATES) is not None


def arrival_ordered(node: exp.Expression, model: WindowModel, rewrite,
                    streaming: bool = False) -> exp.Expression | None:
    """FIRST(x) -> MIN_BY(x, <arrival>), LAST(x) -> MAX_BY(x, <arrival>), COLLECT_LIST(x) ->
    x's values sorted by arrival; None for a node that is not such an aggregate. `rewrite`
    turns x into its form over the window's output. Spark leaves the order of an aggregate's
    input unspecified; over a window's tuples there is one order, the arrival order (the
    ORDER BY value, then the source's order), and SPL's First, Last and Collect follow it.
    FIRST(x, true) / IGNORE NULLS skips NULL values as Spark does; COLLECT_LIST skips them.
    A stream's processors renumber the arrival column in the order they took the tuples in
    (a row below an earlier micro-batch's ORDER BY value is taken where it arrives), so there
    it is the whole key."""
    ignore_nulls = isinstance(node, exp.IgnoreNulls)
    inner = node.this if ignore_nulls else node
    if not isinstance(inner, ARRIVAL_AGGREGATES) or inner.this is None \
            or isinstance(node.parent, exp.Window) \
            or (isinstance(inner, exp.ArrayAgg) and isinstance(inner.this, exp.Distinct)):
        return None
    argument = inner.this.copy().transform(rewrite)
    key = exp.column(contract.ARRIVAL_COLUMN)
    if model.order_by is not None and not streaming:
        key = exp.func("struct", exp.column(contract.ORDER_COLUMN), key)
    if isinstance(inner, exp.ArrayAgg):
        ordered = exp.func("array_sort", exp.func("collect_list", exp.func(
            "struct", key, exp.alias_(argument, "v"))))
        kept = exp.maybe_parse("FILTER(o, __sx_e -> __sx_e.v IS NOT NULL)", dialect="spark")
        kept.set("this", ordered)
        return exp.maybe_parse("TRANSFORM(k, __sx_e -> __sx_e.v)", dialect="spark").transform(
            lambda n: kept if isinstance(n, exp.Column) and n.name == "k" else n)
    if ignore_nulls or (inner.expression is not None and inner.expression.this == "true"):
        key = exp.If(this=exp.Is(this=argument.copy(), expression=exp.null()),
                     true=exp.null(), false=key)
    first = isinstance(inner, (exp.First, exp.FirstValue))
    return exp.func("min_by" if first else "max_by", argument, key)


def _helper_columns(model: WindowModel, select: exp.Select,
                    streaming: bool = False) -> list[tuple[exp.Expression, str]]:
    """(expression, name) pairs the operator reads, computed over the window's input."""
    helpers = [(p.copy(), contract.partition_column(i)) for i, p in enumerate(model.partition_by)]
    if model.order_by is not None:
        helpers.append((model.order_by.copy(), contract.ORDER_COLUMN))
    watermark = model.watermark
    early_batch = model.emit_panes == "early" and not streaming
    if model.kind != "TIME_INTERVAL" or early_batch or _uses_arrival(select) \
            or (watermark is not None and (not streaming or watermark.name == "BY")):
        # The source's order (commit order for Delta, admission order for files), batch and
        # streaming alike: the arrival order without ORDER BY, the tie-breaker with it. Panes
        # without a replayed watermark (and streaming panes under WATERMARK DELAY, one
        # watermark per micro-batch) do not depend on it; early firings in batch replay do
        # (their clock is the highest event time so far).
        helpers.append((exp.func("sql_ext_arrival"), contract.ARRIVAL_COLUMN))
    if model.kind == "TIME_INTERVAL":
        helpers.append((model.event_time.copy(), contract.EVENT_TIME_COLUMN))
        if watermark is not None and watermark.name == "BY":
            helpers.append((watermark.expressions[0].copy(), contract.WATERMARK_COLUMN))
        return helpers
    policy = model.policy
    if model.trigger is not None and model.trigger.name == "DELTA":
        helpers.append((model.trigger.attribute.copy(), contract.TRIGGER_DELTA_COLUMN))
    if policy.name == "DELTA":
        helpers.append((policy.attribute.copy(), contract.DELTA_COLUMN))
    elif policy.name == "PUNCT" and policy.marker is not None:
        helpers.append((exp.func("coalesce", policy.marker.copy(), exp.false()),
                        contract.PUNCT_COLUMN))
    elif policy.name == "PUNCT":
        helpers.append((exp.func("sql_ext_arrival_file"), contract.FILE_COLUMN))
    if any(p is not None and p.name == "TIME" for p in (policy, model.trigger)) \
            and not streaming:  # streaming TIME policies read the wall clock
        # Ticks are window-wide: every task needs the first and last arrival of all input.
        for fn, name in (("min", contract.CLOCK_START_COLUMN), ("max", contract.CLOCK_END_COLUMN)):
            bound = exp.select(exp.func(fn, model.order_by.copy())).from_(
                select.args["from_"].this.copy())
            if select.args.get("where"):
                bound.set("where", select.args["where"].copy())
            helpers.append((exp.Subquery(this=bound), name))
    return helpers


def _pane_spec(model: WindowModel, meta: list[str]) -> dict:
    interval, watermark = model.interval, model.watermark
    delay = 0.0
    if watermark is not None and watermark.name == "DELAY":
        delay = duration_seconds(watermark.expressions[0], "WATERMARK DELAY")
        if delay < 0:
            raise error_at_node(watermark, "WATERMARK DELAY must be >= 0")
    return {
        "kind": "time_interval",
        "policy": "",
        "policy_text": f"TIME_INTERVAL({interval.duration:g}, {interval.period:g}, "
                       f"{interval.discard:g}, {interval.offset:g})",
        "partition_columns": [contract.partition_column(i) for i in range(len(model.partition_by))],
        "ordered": model.order_by is not None,
        "meta": meta,
        "duration": interval.duration,
        "period": interval.period,
        "discard": interval.discard,
        "offset": interval.offset,
        "watermark": watermark.name.lower() if watermark is not None else "",
        "watermark_delay": delay,
        "emit_panes": model.emit_panes,
        "early_every": model.early_every,
        "late_rows": model.late_rows.sql(dialect="spark") if model.late_rows else "",
        "watermark_idle": model.idle,
    }


def _spec(model: WindowModel, meta: list[str]) -> dict:
    if model.kind == "TIME_INTERVAL":
        return _pane_spec(model, meta)
    policy, trigger, eviction = model.policy, model.trigger, model.eviction
    name = "punct_expr" if policy.name == "PUNCT" and policy.marker is not None \
        else policy.name.lower()
    text = policy.text if trigger is None else f"{policy.text} TRIGGER {trigger.text}"
    return {
        "kind": model.kind.lower(),
        "policy": name,
        "count": policy.count,
        "delta": policy.delta,
        "seconds": policy.seconds,
        "policy_text": f"{model.kind} {text}",
        "partition_columns": [contract.partition_column(i) for i in range(len(model.partition_by))],
        "ordered": model.order_by is not None,
        "meta": meta,
        "trigger": trigger.name.lower() if trigger else "",
        "trigger_count": trigger.count if trigger else 0,
        "trigger_delta": trigger.delta if trigger else 0.0,
        "trigger_seconds": trigger.seconds if trigger else 0.0,
        "partition_eviction": eviction.name.lower() if eviction else "",
        "partition_eviction_value": (eviction.seconds or eviction.count) if eviction else 0,
        "emit_incomplete": "INCOMPLETE" in model.emit,
        "emit_evicted": "EVICTED" in model.emit,
    }


def _batched_udaf_call(call: exp.Anonymous) -> exp.Expression:
    """py_sum(x) -> __sx_udaf_py_sum(COLLECT_LIST(x)): one Arrow call per batch of windows.

    Several arguments travel as one list of structs; a row with any NULL argument is skipped.
    """
    args = [a.copy() for a in call.expressions]
    if len(args) == 1:
        collected = args[0]
    else:
        any_null = exp.or_(*[exp.Is(this=a.copy(), expression=exp.null()) for a in args])
        collected = exp.If(this=any_null, true=exp.null(), false=exp.func("struct", *args))
    return exp.Anonymous(this=udaf_names.BATCHED_PREFIX + call.name.lower(),
                         expressions=[exp.func("collect_list", collected)])


@dataclass
class LoweredWindow:
    """A windowed SELECT taken apart: the tuples with their helper columns (`inner`), the
    operator's spec, and the aggregation over the firings (`outer`, FROM still to be set).
    `key` identifies one output row across re-firings: partition keys, window, group keys."""

    model: WindowModel
    inner: exp.Select
    spec: dict
    outer: exp.Select
    key: exp.Expression


def lower_select(select: exp.Select) -> exp.Select:
    """Rewrites one SELECT that carries a window clause (see the module docstring)."""
    lowered = lower_parts(select)
    spec = json.dumps(lowered.spec, separators=(",", ":"))
    call = exp.Anonymous(this=TABLE_FUNCTION, expressions=[
        exp.Anonymous(this="TABLE", expressions=[lowered.inner]), exp.Literal.string(spec)])
    outer = lowered.outer
    outer.set("from_", exp.From(this=exp.Table(this=call, alias=exp.TableAlias(
        this=exp.to_identifier(contract.SOURCE_ALIAS)))))
    return outer


def lower_parts(select: exp.Select, streaming: bool = False) -> LoweredWindow:
    """Takes a windowed SELECT apart (batch, or streaming over FROM STREAM(...))."""
    window = select.args["sx_window"]
    if select.args.get("from_") is None:
        raise error_at_node(window, "a windowed query needs FROM <table, view, subquery or "
                                    "STREAM(table)>: the window's tuples come from there")
    model = validate(window)
    _check_supported(window, model, select, streaming)
    for part in ("where",):
        clause = select.args.get(part)
        if clause is not None:
            for fn in clause.find_all(exp.Anonymous):
                if fn.name.upper() in PANE_FUNCTIONS:
                    raise error_at_node(window, f"{fn.name.upper()}() belongs in SELECT or HAVING "
                                                "of a windowed query, not in WHERE")

    inner = exp.select(exp.Star()).from_(select.args["from_"].this.copy())
    for join in select.args.get("joins") or []:
        inner.append("joins", join.copy())
    if select.args.get("where"):
        inner.set("where", select.args["where"].copy())
    for expression, name in _helper_columns(model, select, streaming):
        inner = inner.select(exp.alias_(expression, name), copy=False)

    partition_columns = {p: contract.partition_column(i) for i, p in enumerate(model.partition_by)}
    # With a watermark a pane fires again after late tuples, and with EMIT EARLY before it
    # completes: its firings differ by PANE_INDEX. EMIT FINAL fires each pane once. A stream
    # always has a watermark (WATERMARK DELAY 0 when none is given), a batch only when given.
    replayed = model.kind == "TIME_INTERVAL" and model.emit_panes != "final" \
        and (model.watermark is not None or streaming or model.emit_panes == "early")
    meta: list[str] = ["pane_index"] if replayed else []

    def substitute(node: exp.Expression) -> exp.Expression:
        for expression, name in partition_columns.items():
            if node == expression:
                return exp.column(name)
        if isinstance(node, exp.Anonymous) and node.name.upper() in PANE_FUNCTIONS:
            function, column = PANE_FUNCTIONS[node.name.upper()]
            if function in ("pane_start", "pane_end") and model.order_by is None \
                    and model.kind != "TIME_INTERVAL":
                return exp.null()  # no arrival values without ORDER BY
            if function not in meta:
                meta.append(function)
            return exp.column(column)
        if isinstance(node, exp.Anonymous) and node.name.lower() in udaf_names.registered():
            return _batched_udaf_call(node)
        if isinstance(node, (exp.IgnoreNulls, *ARRIVAL_AGGREGATES)):
            ordered = arrival_ordered(node, model, substitute, streaming)
            if ordered is not None:
                return ordered
        if isinstance(node, exp.Column) and node.table:
            return exp.column(node.name, quoted=node.this.quoted)  # the source is now __sx_w
        return node

    projections = []
    for projection in select.expressions:
        rewritten = projection.copy().transform(substitute)
        if not isinstance(projection, exp.Alias) and rewritten != projection \
                and projection.alias_or_name and not isinstance(projection, exp.Star):
            rewritten = exp.alias_(rewritten, projection.alias_or_name)
        projections.append(rewritten)

    user_groups = select.args.get("group")
    user_group_exprs = [g.copy().transform(substitute) for g in
                        (user_groups.expressions if user_groups else [])]
    having = select.args.get("having")
    order = select.args.get("order")

    outer = select.copy()
    outer.set("sx_window", None)
    outer.set("where", None)
    outer.set("joins", None)
    outer.set("expressions", projections)
    if having is not None:
        outer.set("having", having.copy().transform(substitute))
    if order is not None:
        outer.set("order", order.copy().transform(substitute))
    columns = [exp.column(c) for c in partition_columns.values()] \
        + [exp.column(contract.GROUP_COLUMN)]
    columns += [exp.column(PANE_FUNCTIONS[f.upper()][1]) for f in meta]
    outer.set("group", exp.Group(expressions=columns + user_group_exprs))

    key = exp.func("named_struct", *[x for i, c in enumerate(columns[:len(partition_columns)])
                                     for x in (exp.Literal.string(f"p{i}"), c.copy())],
                   exp.Literal.string("window"), exp.column(contract.GROUP_COLUMN),
                   *[x for i, g in enumerate(user_group_exprs)
                     for x in (exp.Literal.string(f"g{i}"), g.copy())])
    return LoweredWindow(model, inner, _spec(model, meta), outer, key)
