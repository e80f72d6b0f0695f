"""Unit tests for tests/oracle.py, the pure-Python model of TUMBLING windows.

Why: the oracle is what Spark results are judged against, so it must itself agree with the
shared conformance cases (reference behaviour) and with the SQL departures in sql.md. No Spark.
"""

import datetime

import pytest
from conformance import CASES, EPOCH, case_rows_and_policy
from oracle import aggregate_rows, tumbling_firings, tumbling_firings_with_dropped


def test_conformance_cases_found():
    """Guard against the filter silently selecting nothing."""
    assert len(CASES) >= 6


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_conformance_tumbling(case):
    """Per partition, the flushes must match the reference's evict events in order.

    Why per partition: the order across partitions flushed by one event is unspecified in the
    reference (semantics.md 1), but each partition's own sequence is not.
    """
    rows, policy, kwargs = case_rows_and_policy(case)
    firings = tumbling_firings(rows, policy, **kwargs)
    expected = {}
    for event in case["expected"]:
        if event["event"] == "evict":
            expected.setdefault(event["partition"], []).append(event["tuples"])
    actual = {}
    for firing in firings:
        ids = actual.setdefault(firing["partition"], [])
        assert firing["window_id"] == len(ids)
        ids.append([row["id"] for row in firing["rows"]])
    assert actual == expected


def _ts(seconds):
    return EPOCH + datetime.timedelta(seconds=seconds)


def _ids(firings):
    return [(f["partition"], f["window_id"], [r["id"] for r in f["rows"]]) for f in firings]


def test_time_tuple_on_tick_goes_to_next_window():
    """Ticks run from the earliest arrival and never pass the last one.

    A tuple exactly on a tick is in the next window, an empty tick fires nothing (SQL), and
    the tuple after the last tick never fires.
    """
    rows = [
        {"id": "c", "ts": _ts(105)},  # scan order differs from arrival order on purpose
        {"id": "a", "ts": _ts(100)},
        {"id": "b", "ts": _ts(102)},
        {"id": "d", "ts": _ts(109.5)},
        {"id": "e", "ts": _ts(117)},  # ticks at 105, 110, 115 (empty); 120 never happens
    ]
    firings = tumbling_firings(rows, ("time", 5), order_by=lambda r: r["ts"])
    assert _ids(firings) == [(None, 0, ["a", "b"]), (None, 1, ["c", "d"])]
    assert firings[0]["pane_start"] == _ts(100)
    assert firings[0]["pane_end"] == _ts(102)


def test_time_tick_flushes_all_partitions_in_key_order_and_counts_null_arrivals():
    """One tick flushes every non-empty partition, NULL key first; NULL arrivals are dropped."""
    rows = [
        {"id": "z", "k": "z", "ts": _ts(1)},
        {"id": "n", "k": None, "ts": _ts(2)},
        {"id": "a", "k": "a", "ts": _ts(0)},
        {"id": "lost", "k": "a", "ts": None},
        {"id": "last", "k": "a", "ts": _ts(10)},
    ]
    firings, dropped = tumbling_firings_with_dropped(
        rows, ("time", 10), partition_by=lambda r: r["k"], order_by=lambda r: r["ts"])
    assert _ids(firings) == [(None, 0, ["n"]), ("a", 0, ["a"]), ("z", 0, ["z"])]
    assert dropped == 1


def test_time_requires_datetime_order_by():
    """Batch TIME reads elapsed time from a timestamp ORDER BY; anything else is an error."""
    with pytest.raises(ValueError):
        tumbling_firings([{"id": "a"}], ("time", 5))
    with pytest.raises(TypeError):
        tumbling_firings([{"id": "a", "t": 3}], ("time", 5), order_by=lambda r: r["t"])


def test_delta_decreasing_values_never_tumble():
    """A value below the oldest never tumbles, however large the drop (no absolute value)."""
    rows = [{"id": i, "v": v} for i, v in enumerate([10, 9, 5, 1, -100])]
    assert tumbling_firings(rows, ("delta", "v", 1)) == []
    rows.append({"id": 5, "v": 11.5})  # 11.5 - 10 (the oldest) > 1
    assert _ids(tumbling_firings(rows, ("delta", "v", 1))) == [(None, 0, [0, 1, 2, 3, 4])]
    # Even with a negative d, where 4.5 - 5 > -1 would hold, a decrease does not tumble.
    rows = [{"id": i, "v": v} for i, v in enumerate([5, 4.5, 5])]
    assert _ids(tumbling_firings(rows, ("delta", "v", -1))) == [(None, 0, [0, 1])]


def test_delta_boundary_is_strict_and_excludes_new_tuple():
    """A difference equal to d stays; the tumbling tuple starts the next window."""
    rows = [{"id": i, "v": v} for i, v in enumerate([0, 1, 2, 2.5, 4.5, 5])]
    # 2 - 0 = 2 is not > 2; 2.5 - 0 tumbles; 4.5 - 2.5 = 2 does not; 5 - 2.5 tumbles.
    assert _ids(tumbling_firings(rows, ("delta", "v", 2))) == [
        (None, 0, [0, 1, 2]), (None, 1, [3, 4])]


def test_delta_null_values_are_dropped_and_counted():
    """NULL DELTA values are not windowed, but counted so SQL can report them."""
    rows = [{"id": i, "v": v} for i, v in enumerate([0, None, 1, None, 3])]
    firings, dropped = tumbling_firings_with_dropped(rows, ("delta", "v", 2))
    assert _ids(firings) == [(None, 0, [0, 2])]
    assert dropped == 2


def test_count_null_partition_key_is_its_own_partition():
    """PARTITION BY treats NULL as a key of its own (sql.md 2)."""
    keys = [None, "a", None, "a", None]
    rows = [{"id": i, "k": k} for i, k in enumerate(keys)]
    firings, dropped = tumbling_firings_with_dropped(
        rows, ("count", 2), partition_by=lambda r: r["k"])
    assert _ids(firings) == [(None, 0, [0, 2]), ("a", 0, [1, 3])]
    assert dropped == 0


def test_window_id_counts_per_key():
    """WINDOW_ID() is the n-th tumble of its own key, surviving partition removal."""
    rows = [{"id": i, "k": k} for i, k in enumerate("abaab")]
    firings = tumbling_firings(rows, ("count", 1), partition_by=lambda r: r["k"])
    assert [(f["partition"], f["window_id"]) for f in firings] == [
        ("a", 0), ("b", 0), ("a", 1), ("a", 2), ("b", 1)]


def test_order_by_is_stable_and_sets_pane_bounds():
    """ORDER BY ties keep scan order; PANE_START/END are first/last arrival values."""
    rows = [{"id": i, "t": t} for i, t in enumerate([3, 1, 3, 1])]
    firings = tumbling_firings(rows, ("count", 4), order_by=lambda r: r["t"])
    assert _ids(firings) == [(None, 0, [1, 3, 0, 2])]
    assert (firings[0]["pane_start"], firings[0]["pane_end"]) == (1, 3)
    assert tumbling_firings(rows, ("count", 4))[0]["pane_start"] is None


def test_punct_files_flush_after_each_file_in_name_order():
    """PUNCT(): files in name order, rows by ORDER BY inside a file, NULL key first."""
    rows = [
        {"id": "b2", "f": "b.csv", "k": "x", "t": 2},
        {"id": "a1", "f": "a.csv", "k": "x", "t": 1},
        {"id": "b1", "f": "b.csv", "k": None, "t": 1},
        {"id": "b0", "f": "b.csv", "k": "x", "t": 0},
    ]
    firings = tumbling_firings(rows, ("punct",), partition_by=lambda r: r["k"],
                               order_by=lambda r: r["t"], file_of=lambda r: r["f"])
    assert _ids(firings) == [("x", 0, ["a1"]), (None, 0, ["b1"]), ("x", 1, ["b0", "b2"])]


def test_punct_expr_markers_flush_and_leftover_never_fires():
    """Markers are not tuples, empty flushes fire nothing, a NULL condition is a tuple."""
    rows = [{"id": "a", "m": False}, {"id": "M1", "m": True}, {"id": "M2", "m": True},
            {"id": "b", "m": None}, {"id": "M3", "m": True}, {"id": "c", "m": False}]
    firings = tumbling_firings(rows, ("punct_expr",), punct_of=lambda r: r["m"])
    assert _ids(firings) == [(None, 0, ["a"]), (None, 1, ["b"])]


def test_aggregate_rows_with_and_without_group_by():
    """GROUP BY splits one firing into one output row per group, NULL group first."""
    rows = [{"id": i, "g": g, "v": i} for i, g in enumerate(["y", None, "y", "x"])]
    firings = tumbling_firings(rows, ("count", 4))
    total = {"s": lambda rs: sum(r["v"] for r in rs), "n": len}
    assert aggregate_rows(firings, total) == [
        {"partition": None, "window_id": 0, "s": 6, "n": 4}]
    assert aggregate_rows(firings, total, group_by=lambda r: r["g"]) == [
        {"partition": None, "window_id": 0, "group": None, "s": 1, "n": 1},
        {"partition": None, "window_id": 0, "group": "x", "s": 3, "n": 1},
        {"partition": None, "window_id": 0, "group": "y", "s": 2, "n": 2},
    ]


@pytest.mark.parametrize("policy", [("count", 0), ("time", 0), ("punct", 1), ("sliding", 1)])
def test_invalid_policies_are_rejected(policy):
    """COUNT(0), TIME(0) and malformed policies are errors in SQL (sql.md 6, 7)."""
    with pytest.raises(ValueError):
        tumbling_firings([{"id": 1}], policy, file_of=lambda r: "f")
