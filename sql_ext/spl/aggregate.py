"""One SPL Aggregate invocation -> the SELECT of a streaming table: its window clause, its
partitions and groups, and each output attribute's value (SPL's output functions, unassigned
attributes as Last, a bare expression as Last of it), cast to the type the output stream
declares. Arrival order is the source's: FIRST, LAST and COLLECT_LIST follow it in sql-ext's
windows, batch and streaming alike."""

from __future__ import annotations

from dataclasses import dataclass

from lark import Token, Tree

from sql_ext.spl.expressions import PANE_FUNCTIONS, Scope, Untranslatable, constant, translate
from sql_ext.spl.types import SplType, quote, spark_type

# SPL output function -> SQL template over its translated arguments ({0}, {1}).
OUTPUT_FUNCTIONS = {
    "Max": "MAX({0})",
    "Min": "MIN({0})",
    "Count": "COUNT(*)",
    "CountDistinct": "COUNT(DISTINCT {0})",
    "First": "FIRST({0})",
    "Last": "LAST({0})",
    # One tuple of the group: the last, deterministic where SPL leaves it open.
    "Any": "LAST({0})",
    "Collect": "COLLECT_LIST({0})",
    # The distinct values in the order they first arrived.
    "CollectDistinct": "ARRAY_DISTINCT(COLLECT_LIST({0}))",
    "CountByDistinct": ("TRANSFORM(ARRAY_DISTINCT(COLLECT_LIST({0})), __d -> "
                        "CAST(SIZE(FILTER(COLLECT_LIST({0}), __e -> __e = __d)) AS INT))"),
    "SampleStdDev": "STDDEV_SAMP({0})",
    "PopulationStdDev": "STDDEV_POP({0})",
    "MaxCount": "SIZE(FILTER(COLLECT_LIST({0}), __e -> __e = MAX({0})))",
    "MinCount": "SIZE(FILTER(COLLECT_LIST({0}), __e -> __e = MIN({0})))",
    # Among the tuples whose value is the maximum (minimum), the first to arrive.
    "ArgMax": "ELEMENT_AT(FILTER(COLLECT_LIST(NAMED_STRUCT('v', {0}, 'w', {1})), "
              "__e -> __e.v = MAX({0})), 1).w",
    "ArgMin": "ELEMENT_AT(FILTER(COLLECT_LIST(NAMED_STRUCT('v', {0}, 'w', {1})), "
              "__e -> __e.v = MIN({0})), 1).w",
    "CollectArgMax": "TRANSFORM(FILTER(COLLECT_LIST(NAMED_STRUCT('v', {0}, 'w', {1})), "
                     "__e -> __e.v = MAX({0})), __e -> __e.w)",
    "CollectArgMin": "TRANSFORM(FILTER(COLLECT_LIST(NAMED_STRUCT('v', {0}, 'w', {1})), "
                     "__e -> __e.v = MIN({0})), __e -> __e.w)",
}
ARITY = {"Count": 0, "CountAll": 0, "ArgMax": 2, "ArgMin": 2, "CollectArgMax": 2,
         "CollectArgMin": 2}
REFUSED = {
    "Custom": "Custom() runs SPL code (init, process and result functions) per tuple: a user "
              "aggregation, not SQL; register a Python UDAF and call it instead",
    "CountGroups": "CountGroups() counts the groups of the whole window, an aggregation over "
                   "the groups that one windowed SELECT does not express",
    "CountByGroup": "CountByGroup() lists every group's count in each group's row, an "
                    "aggregation over the groups that one windowed SELECT does not express",
}


@dataclass
class Input:
    """What an Aggregate reads: the source table, the conditions of Filters and Functors on the
    way (already over the source's columns) and the scope its expressions see."""

    table: str
    where: list[str]
    scope: Scope
    event_time: tuple[str, float] | None  # (SQL of the event time, watermark lag seconds)


def _items(window: list) -> tuple[str, list[tuple[str, list, Tree]]]:
    kind = None
    calls = []
    for item in window:
        if isinstance(item, Tree) and item.data == "name":
            word = str(item.children[0])
            if kind is None:
                kind = word
            calls.append((word, [], item))
        elif isinstance(item, Tree) and item.data == "call":
            calls.append((str(item.children[0]), list(item.children[1:]), item))
        else:
            raise Untranslatable("a window item the translator does not know", item)
    return kind or "", calls[1:] if calls and calls[0][0] == kind else calls


def window_kind(window: list) -> str:
    """tumbling, sliding or timeInterval: the first word of SPL's window clause."""
    return _items(window)[0]


def _number_sql(value) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def window_clause(window: list, params: dict[str, list], source: Input) -> str:
    """SPL's window clause and the Aggregate's window parameters as sql-ext's WINDOW clause."""
    kind, calls = _items(window)
    scope = source.scope

    def policy(name, args, node):
        if name == "count":
            n = constant(args[0], scope)
            if not isinstance(n, int) or n < 1:
                raise Untranslatable(f"count({n}): SQL windows count at least 1 tuple", node)
            return f"COUNT({n})"
        if name == "delta":
            attribute, _ = translate(args[0], scope)
            return f"DELTA({attribute}, {_number_sql(constant(args[1], scope))})"
        if name == "time":
            return f"TIME({_number_sql(constant(args[0], scope))})"
        if name == "punct":
            return "PUNCT()"
        raise Untranslatable(f"{name}() is not an SPL window policy", node)

    policies, partitioned, eviction, interval = [], False, None, {}
    for name, args, node in calls:
        if name == "partitioned":
            partitioned = True
        elif name in ("partitionAge", "partitionCount", "tupleCount"):
            word = {"partitionAge": "AGE", "partitionCount": "COUNT", "tupleCount": "TUPLES"}[name]
            eviction = f"PARTITION EVICTION {word}({_number_sql(constant(args[0], scope))})"
        elif name in ("intervalDuration", "creationPeriod", "discardAge", "intervalOffset"):
            interval[name] = constant(args[0], scope)
        else:
            policies.append(policy(name, args, node))
    partition_by = params.get("partitionBy")
    if partitioned != bool(partition_by):
        raise Untranslatable("a partitioned window needs partitionBy, and partitionBy a "
                             "partitioned window", window[0])
    if kind == "tumbling" and len(policies) == 1:
        clause = f"WINDOW TUMBLING {policies[0]}"
    elif kind == "sliding" and len(policies) == 2:
        clause = f"WINDOW SLIDING {policies[0]} TRIGGER {policies[1]}"
    elif kind == "timeInterval":
        if source.event_time is None:
            raise Untranslatable("a timeInterval window needs its input's event time: "
                                 "@eventTime(eventTimeAttribute=...) on the operator that "
                                 "produces the stream", window[0])
        if "intervalDuration" not in interval:
            raise Untranslatable("timeInterval needs intervalDuration", window[0])
        duration = interval["intervalDuration"]
        args = [duration, interval.get("creationPeriod", duration),
                interval.get("discardAge", 0), interval.get("intervalOffset", 0)]
        event_time, lag = source.event_time
        clause = (f"WINDOW TIME_INTERVAL({', '.join(_number_sql(a) for a in args)}) "
                  f"ON {event_time}")
    else:
        raise Untranslatable(f"'{kind}' with {len(policies)} policies is not an SPL window",
                             window[0])
    if partition_by:
        keys = ", ".join(translate(p, scope)[0] for p in partition_by)
        clause += f" OVER (PARTITION BY {keys})"
    if kind == "timeInterval":
        clause += f" WATERMARK DELAY {_number_sql(lag)}"
    if eviction:
        clause += f" {eviction}"
    # Only a sliding window fires before it is first full; a tumbling window or a pane fires
    # complete whatever the flag says (semantics: aggregateIncompleteWindows), and SQL's EMIT
    # INCOMPLETE is for SLIDING alone.
    if kind == "sliding" and _flag(params, "aggregateIncompleteWindows", scope):
        clause += " EMIT INCOMPLETE"
    if _flag(params, "aggregateEvictedPartitions", scope):
        clause += " EMIT EVICTED"
    return clause


def _flag(params, name, scope) -> bool:
    values = params.get(name)
    if not values:
        return False
    value = values[0]
    if isinstance(value, Tree) and value.data in ("true", "false"):
        return value.data == "true"
    return str(constant(value, scope)).lower() == "true"


def output_value(value: Tree, scope: Scope, grouped: bool) -> tuple[str, SplType | None]:
    """One assignment's value: an output function call, or Last(expression)."""
    if isinstance(value, Tree) and value.data == "call":
        name = str(value.children[0]).rpartition("::")[2]
        args = list(value.children[1:])
        if name in REFUSED:
            raise Untranslatable(REFUSED[name], value)
        if name == "CountAll":
            if grouped:
                raise Untranslatable("CountAll() with groupBy counts the whole window across "
                                     "groups, which one windowed SELECT does not express", value)
            return "COUNT(*)", SplType("int32")
        if name in OUTPUT_FUNCTIONS:
            if len(args) != ARITY.get(name, 1):
                raise Untranslatable(f"{name}() takes {ARITY.get(name, 1)} argument(s)", value)
            translated = [translate(a, scope) for a in args]
            sql = [s for s, _ in translated]
            kind = translated[0][1] if translated else None
            return OUTPUT_FUNCTIONS[name].format(*sql), kind
        if name == "Sum":
            sql, kind = translate(args[0], scope)
            if kind is not None and kind.string:
                return f"ARRAY_JOIN(COLLECT_LIST({sql}), '')", kind
            return f"SUM({sql})", kind
        if name == "Average":
            sql, kind = translate(args[0], scope)
            if kind is not None and kind.integral:  # SPL divides in the input's integer type
                return f"(SUM({sql}) DIV COUNT({sql}))", kind
            return f"AVG({sql})", kind
    sql, kind = translate(value, scope)
    if isinstance(value, Tree) and value.data == "call" and \
            str(value.children[0]) in PANE_FUNCTIONS:
        return sql, kind  # one value per firing, not per tuple
    return f"LAST({sql})", kind


def select(assignments: list[tuple[str, Tree]], out_attributes: list[tuple[str, SplType]],
           params: dict[str, list], source: Input, window: str) -> str:
    scope = source.scope
    group_by = params.get("groupBy") or []
    keys = {}  # a key attribute's name -> its SQL, for unassigned attributes
    for key in group_by + (params.get("partitionBy") or []):
        sql, _ = translate(key, scope)
        if isinstance(key, Tree) and key.data in ("name", "member"):
            keys[str(key.children[-1])] = sql
    assigned = dict(assignments)
    unknown = [n for n in assigned if n not in dict(out_attributes)]
    if unknown:
        raise Untranslatable(f"the output stream has no attribute {unknown[0]}",
                             assigned[unknown[0]])
    projections = []
    for name, out_type in out_attributes:
        if name in assigned:
            sql, _ = output_value(assigned[name], scope, bool(group_by))
        elif name in keys:
            if scope.attributes.get(name) == out_type:
                projections.append(f"{keys[name]} AS {quote(name)}" if keys[name] != quote(name)
                                   else keys[name])
                continue
            sql = keys[name]
        elif name in scope.attributes:
            sql = f"LAST({translate(Tree('name', [Token('NAME', name)]), scope)[0]})"
        else:
            raise Untranslatable(f"output attribute {name} is not assigned and the input has no "
                                 "attribute of that name (SPL's default is Last of it)")
        projections.append(f"CAST({sql} AS {spark_type(out_type)}) AS {quote(name)}")
    text = "SELECT " + ",\n       ".join(projections) + "\nFROM {source}"
    if source.where:
        text += "\nWHERE " + " AND ".join(source.where)
    text += f"\n{window}"
    if group_by:
        text += "\nGROUP BY " + ", ".join(translate(g, scope)[0] for g in group_by)
    return text
