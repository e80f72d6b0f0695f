"""Independent reference model of SPL TUMBLING windows as exposed through our SQL.

Why this exists: tests compare what Spark computes with what this file computes. It is written
from spec/semantics.md (sections 1, 2, 4, 5, 7) and sql.md (sections 2, 3, 7)
only, shares no code with the extension, and favours being obviously correct over being fast:
every policy is a plain loop over rows in arrival order that keeps a dict
``partition key -> list of rows``.

SQL departures from the reference runtime that are modelled here (sql.md section 7 and 2):
  * firings caused by one event (a punctuation marker, a time tick) come out ordered by
    partition key, NULL first, instead of hash order;
  * an empty flush (time tick or marker with nothing buffered) produces no firing at all;
  * time(t) is a batch replay: elapsed time is read from the ORDER BY timestamp;
  * rows whose DELTA value (or, for time(t), arrival value) is NULL are not windowed but
    counted, see ``tumbling_firings_with_dropped``.
Partition eviction (PARTITION EVICTION ...) is not modelled.

Standard library only, so it can run in any test without Spark.
"""

import datetime

__all__ = ["aggregate_rows", "tumbling_firings", "tumbling_firings_with_dropped"]


def _null_first(value):
    """Sort key putting None before everything; tuples (multi-column keys) element-wise.

    Why: SQL orders NULL keys first (ascending), and plain Python cannot compare None with
    other values.
    """
    if value is None:
        return (0,)
    if isinstance(value, tuple):
        return (1, tuple(_null_first(v) for v in value))
    return (1, value)


def _arrival_order(rows, order_by):
    """Rows in arrival order: scan order, or stably sorted by ``order_by`` (NULL first).

    Why stable: sql.md says ties in ORDER BY are broken by scan order.
    """
    if order_by is None:
        return list(rows)
    return sorted(rows, key=lambda row: _null_first(order_by(row)))


def _fire(out, window_ids, key, window_rows, order_by):
    """Append one firing of ``window_rows`` for partition ``key``; empty flushes are skipped.

    Why the counter lives outside the window storage: partitions are removed after count,
    time and punct flushes, but WINDOW_ID() keeps counting per key across re-creations.
    """
    if not window_rows:
        return
    window_id = window_ids.get(key, 0)
    window_ids[key] = window_id + 1
    out.append({
        "partition": key,
        "window_id": window_id,
        "rows": list(window_rows),
        "pane_start": None if order_by is None else order_by(window_rows[0]),
        "pane_end": None if order_by is None else order_by(window_rows[-1]),
    })


def _flush_all(out, window_ids, parts, order_by):
    """Flush every partition (one event: marker or tick) in key order, then remove them all."""
    for key in sorted(parts, key=_null_first):
        _fire(out, window_ids, key, parts[key], order_by)
    parts.clear()


def _delta_exceeds(new, oldest, d):
    """Tell whether the window tumbles: new - oldest > d, strictly, never when new < oldest.

    Why both tests: with a negative d, ``new - oldest > d`` alone could hold for a decreasing
    value, but the reference never tumbles on one (semantics.md 2.2). Timestamps use seconds.
    """
    if new < oldest:
        return False
    if isinstance(new, datetime.datetime):
        return new - oldest > datetime.timedelta(seconds=d)
    return new - oldest > d


def _count(arrival, n, part, order_by, out, ids):
    """count(n): append, flush when the partition holds n tuples (new one included)."""
    parts = {}
    for row in arrival:
        key = part(row)
        parts.setdefault(key, []).append(row)
        if len(parts[key]) == n:
            _fire(out, ids, key, parts.pop(key), order_by)
    return 0


def _delta(arrival, attr, d, part, order_by, out, ids):
    """delta(attr, d): before inserting, compare with the partition's OLDEST tuple."""
    value_of = attr if callable(attr) else (lambda row: row[attr])
    parts = {}
    dropped = 0
    for row in arrival:
        value = value_of(row)
        if value is None:
            dropped += 1
            continue
        key = part(row)
        window = parts.setdefault(key, [])
        if window and _delta_exceeds(value, value_of(window[0]), d):
            _fire(out, ids, key, window, order_by)
            window = parts[key] = []
        window.append(row)
    return dropped


def _time(rows, seconds, part, order_by, out, ids):
    """time(t) batch replay: window-wide ticks at t0 + k*t, fired before any tuple at or after.

    Why ticks are only checked before inserting a row: the clock never passes the last
    arrival, so a tick later than every arrival never happens, and a tuple exactly on a tick
    lands in the next window.
    """
    if order_by is None:
        raise ValueError("time(t) in batch needs order_by (an arrival timestamp)")
    timed = []
    dropped = 0
    for row in rows:
        value = order_by(row)
        if value is None:
            dropped += 1
        elif not isinstance(value, datetime.datetime):
            raise TypeError(f"time(t) arrival values must be datetime, got {value!r}")
        else:
            timed.append(row)
    arrival = sorted(timed, key=order_by)
    if not arrival:
        return dropped
    t0 = order_by(arrival[0])
    period = datetime.timedelta(seconds=seconds)
    parts = {}
    k = 1
    for row in arrival:
        while t0 + k * period <= order_by(row):
            _flush_all(out, ids, parts, order_by)
            k += 1
        parts.setdefault(part(row), []).append(row)
    return dropped


def _punct_files(rows, file_of, part, order_by, out, ids):
    """punct(): a window punctuation after each file; files in ascending name order."""
    if file_of is None:
        raise ValueError("punct() needs file_of")
    files = {}
    for row in rows:
        files.setdefault(file_of(row), []).append(row)
    parts = {}
    for name in sorted(files, key=_null_first):
        for row in _arrival_order(files[name], order_by):
            parts.setdefault(part(row), []).append(row)
        _flush_all(out, ids, parts, order_by)
    return 0


def _punct_expr(arrival, punct_of, part, order_by, out, ids):
    """punct(expr): marker rows flush every partition; they are not tuples themselves."""
    if punct_of is None:
        raise ValueError("punct_expr needs punct_of")
    parts = {}
    for row in arrival:
        if punct_of(row):
            _flush_all(out, ids, parts, order_by)
        else:
            parts.setdefault(part(row), []).append(row)
    return 0


def tumbling_firings_with_dropped(rows, policy, *, partition_by=None, order_by=None,
                                  group_by=None, file_of=None, punct_of=None):
    """Like ``tumbling_firings`` but returns ``(firings, dropped_count)``.

    Why: sql.md section 6 requires rows with a NULL DELTA value (or, for batch TIME, a NULL
    arrival value) to be counted and reported, never silently lost; tests check that count.
    ``group_by`` is accepted for symmetry with the SQL but does not change firings (GROUP BY
    only splits output rows, see ``aggregate_rows``).
    """
    del group_by  # GROUP BY does not influence when or what a window fires.
    part = partition_by if partition_by is not None else (lambda row: None)
    out = []
    ids = {}
    kind = policy[0]
    if kind == "count":
        (n,) = policy[1:]
        if n < 1:
            raise ValueError("COUNT(n) needs n >= 1")
        dropped = _count(_arrival_order(rows, order_by), n, part, order_by, out, ids)
    elif kind == "delta":
        attr, d = policy[1:]
        dropped = _delta(_arrival_order(rows, order_by), attr, d, part, order_by, out, ids)
    elif kind == "time":
        (seconds,) = policy[1:]
        if seconds <= 0:
            raise ValueError("TIME(t) needs t > 0")
        dropped = _time(rows, seconds, part, order_by, out, ids)
    elif kind == "punct" and len(policy) == 1:
        dropped = _punct_files(rows, file_of, part, order_by, out, ids)
    elif kind == "punct_expr" and len(policy) == 1:
        dropped = _punct_expr(_arrival_order(rows, order_by), punct_of, part, order_by, out,
                              ids)
    else:
        raise ValueError(f"unknown tumbling policy {policy!r}")
    return out, dropped


def tumbling_firings(rows, policy, *, partition_by=None, order_by=None, group_by=None,
                     file_of=None, punct_of=None):
    """Return the list of firings of a TUMBLING window over `rows` in arrival order.

    rows: list of dicts (input tuples), in SCAN order.
    policy: one of ("count", n) | ("delta", attr, d) | ("time", seconds) | ("punct",) |
       ("punct_expr",). For delta, attr is a key of the row dicts (or a function row -> value).
    partition_by: None or a function row -> key (None is a valid key of its own).
    order_by: None or a function row -> sortable arrival value. Arrival order is the rows sorted
       by order_by (stable: ties keep scan order, None sorts first); without order_by it is
       scan order.
    file_of: for ("punct",): function row -> input file name; a window punctuation follows the
       end of each file. Files are processed in ascending file-name order; within a file, rows
       in arrival order.
    punct_of: for ("punct_expr",): function row -> bool; rows where it is True are punctuation
       markers (not tuples) at their place in arrival order.
    Each firing is a dict: {"partition": key, "window_id": int, "rows": [row dicts in window
       order], "pane_start": order value of first row or None, "pane_end": order value of last
       row or None}
    Firings are returned in the order they happen; firings caused by one event (punct marker,
    time tick) are ordered by partition key (None first, then ascending).
    """
    firings, _ = tumbling_firings_with_dropped(
        rows, policy, partition_by=partition_by, order_by=order_by, group_by=group_by,
        file_of=file_of, punct_of=punct_of)
    return firings


def aggregate_rows(firings, aggregates, group_by=None):
    """SQL-level output: for each firing, one output row per group.

    group_by: row -> group key, or None for one row per firing.
    aggregates: dict name -> function(list of row dicts) -> value.
    Returns list of dicts with keys: "partition", "window_id", "group" (only if group_by), and
    each aggregate name.

    Why groups are sorted (NULL first) inside a firing: the reference emits them in hash
    order, so callers should compare output rows as a multiset; sorting just makes the oracle
    deterministic. Groups come from the rows of a firing, so a group is never empty.
    """
    reserved = {"partition", "window_id", "group"}
    clash = reserved.intersection(aggregates)
    if clash:
        raise ValueError(f"aggregate names clash with output keys: {sorted(clash)}")
    output = []
    for firing in firings:
        if group_by is None:
            groups = [(None, firing["rows"])]
        else:
            by_key = {}
            for row in firing["rows"]:
                by_key.setdefault(group_by(row), []).append(row)
            groups = [(key, by_key[key]) for key in sorted(by_key, key=_null_first)]
        for key, group_rows in groups:
            result = {"partition": firing["partition"], "window_id": firing["window_id"]}
            if group_by is not None:
                result["group"] = key
            for name, function in aggregates.items():
                result[name] = function(group_rows)
            output.append(result)
    return output
