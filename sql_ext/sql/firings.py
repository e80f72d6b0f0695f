"""The aggregation over a window's firings, for the streams that run a window themselves (a
sql-ext streaming table, a declarative pipeline's flow): aggregate arguments become helper
columns of the window's input, the input keeps only the columns the aggregation reads, and,
where every aggregate has partials, the window processor hands on one row per firing with
the aggregates' values, which the outer query only projects. Pure sqlglot: which aggregates
have partials for which input types is the JVM's decision (PartialAggregates), asked by the
callers.
"""

from __future__ import annotations

from sqlglot import exp

from sql_ext.sql import contract
from sql_ext.sql.transpile import LoweredWindow


def _transform_aggregation(outer: exp.Select, function) -> None:
    """Applies `function` (sqlglot's transform, without copying: it sees `outer`'s own nodes)
    to the parts of the aggregation over the firings that hold aggregates: SELECT list,
    HAVING, ORDER BY; in place."""
    for part in ("expressions", "having", "order"):
        value = outer.args.get(part)
        if isinstance(value, list):
            outer.set(part, [e.transform(function, copy=False) for e in value])
        elif value is not None:
            outer.set(part, value.transform(function, copy=False))


def _single_argument(node: exp.Expression) -> bool:
    """An aggregate call of one argument, `this` (SUM(x), not PERCENTILE(x, 0.5))."""
    return isinstance(node, exp.AggFunc) and node.this is not None and not any(
        isinstance(value, exp.Expression) or (isinstance(value, list) and value)
        for key, value in node.args.items() if key != "this")  # flags (big_int) aside


def aggregate_inputs(lowered: LoweredWindow) -> None:
    """Aggregate arguments that are expressions become helper columns of the window's input,
    so the firing partials read a column (as the batch rule, IncrementalWindowAggregate, reads
    any numeric input expression). Rewrites lowered.inner and lowered.outer in place.

        SUM(x * 2)  ->  inner: x * 2 AS __sx_in0, outer: SUM(__sx_in0)
    """
    inputs: list[exp.Expression] = []

    def column_for(node: exp.Expression) -> exp.Expression:
        if not _single_argument(node) or isinstance(node.this, (exp.Column, exp.Star,
                                                                   exp.Distinct)):
            return node
        if any(contract.is_helper(c.name) for c in node.this.find_all(exp.Column)) \
                or node.this.find(exp.AggFunc, exp.Anonymous) is not None:
            return node  # reads a partition key or a function sqlglot does not know: as is
        inputs.append(node.this.copy())
        return node.__class__(this=exp.column(contract.aggregate_input_column(len(inputs) - 1)))

    _transform_aggregation(lowered.outer, column_for)
    for i, expression in enumerate(inputs):
        lowered.inner = lowered.inner.select(
            exp.alias_(expression, contract.aggregate_input_column(i)), copy=False)


class Aggregates:
    """The aggregate calls of the aggregation over the firings (of a copy of it, `outer`), with
    the facts the JVM decides partials on: [{function, type, distinct, filtered}]; `type` is
    the input's Spark type from `schema`, "*" for COUNT(*) and DISTINCT, None without a schema
    (a pipeline's flow, whose input is resolved later: the JVM checks the types then)."""

    def __init__(self, outer: exp.Select, calls: list[exp.AggFunc], facts: list[dict]):
        self.outer, self.calls, self.facts = outer, calls, facts

    @classmethod
    def of(cls, lowered: LoweredWindow, schema: dict[str, str] | None) -> Aggregates | None:
        """None when some aggregate can have no partial whatever its input's type: it reads a
        partition key or an expression left as is, has several arguments, or the query has a
        GROUP BY of its own."""
        outer = lowered.outer.copy()
        if any(not contract.is_helper(g.name) for g in outer.args["group"].expressions):
            return None
        facts, calls = [], []
        for call in outer.find_all(exp.AggFunc):
            arg = call.this
            distinct = isinstance(arg, exp.Distinct)
            helper = isinstance(arg, exp.Column) and contract.is_helper(arg.name) \
                and not arg.name.startswith(contract.AGGREGATE_INPUT_PREFIX)
            if isinstance(arg, exp.Star) or distinct:
                input_type = "*"  # COUNT(*); DISTINCT is refused whatever the type
            elif isinstance(arg, exp.Column) and not helper and _single_argument(call) \
                    and (schema is None or arg.name in schema):
                input_type = schema[arg.name] if schema is not None else None
            else:
                return None
            facts.append({"function": call.sql_name().lower(), "type": input_type,
                          "distinct": distinct, "filtered": isinstance(call.parent, exp.Filter)})
            calls.append(call)
        return cls(outer, calls, facts) if facts else None

    def read_instead(self, lowered: LoweredWindow) -> list[tuple[str, str]] | None:
        """Rewrites lowered.outer to read each aggregate's value from the firing's row (one
        row per firing: no GROUP BY) and returns [(function, column), ...], the spec's
        `aggregates`; None (nothing changed) when something else reads the tuples.

            SUM(x), AVG(x)  ->  __sx_a0, __sx_a1
        """
        columns = {id(call): (fact["function"], "*" if isinstance(call.this, exp.Star)
                              else call.this.name) for call, fact in zip(self.calls, self.facts)}
        partials: list[tuple[str, str]] = []

        def value(node: exp.Expression) -> exp.Expression:
            if id(node) not in columns:
                return node
            partials.append(columns[id(node)])
            return exp.column(contract.aggregate_column(len(partials) - 1))

        outer = self.outer
        _transform_aggregation(outer, value)
        if tuple_columns_read(outer):
            return None  # something else reads the tuples (a function sqlglot does not know)
        lowered.outer = _one_row_per_firing(outer)
        return partials


def _one_row_per_firing(outer: exp.Select) -> exp.Select:
    """The aggregation over the firings without its GROUP BY: the window processor hands on one
    row per firing with the aggregates' values, and the groups (partition keys, firing, firing
    columns) are firings. Spares every micro-batch a shuffle.

        SELECT __sx_p0 AS k, __sx_a0 AS s FROM f GROUP BY __sx_p0, __sx_fire
               HAVING __sx_a1 > 2
        ->  SELECT __sx_p0 AS k, __sx_a0 AS s FROM f WHERE __sx_a1 > 2
    """
    single = outer.copy()
    single.set("group", None)
    having = single.args.get("having")
    single.set("having", None)
    if having is not None:
        single = single.where(having.this, copy=False)
    return single


def tuple_columns_read(outer: exp.Select) -> set[str]:
    """Source columns the aggregation over the firings reads (helper columns aside)."""
    reading = outer.copy()
    reading.set("from_", None)
    return {c.name for c in reading.find_all(exp.Column) if not contract.is_helper(c.name)}


def only_read_columns(lowered: LoweredWindow) -> exp.Select:
    """The inner SELECT with `*` narrowed to the source columns the aggregation reads: window
    state keeps every column it is given, and the optimizer cannot prune through it.

        SELECT *, k AS __sx_p0, ts AS __sx_etime FROM s  ->  SELECT x, k AS __sx_p0, ... FROM s
    """
    read = sorted(tuple_columns_read(lowered.outer))
    inner = lowered.inner.copy()
    helpers = [e for e in inner.expressions if not isinstance(e, exp.Star)]
    inner.set("expressions", [exp.column(c, quoted=True) for c in read] + helpers)
    return inner
