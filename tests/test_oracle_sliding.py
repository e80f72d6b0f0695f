"""Unit tests for tests/oracle_sliding.py and tests/oracle_eviction.py (no Spark).

Why: these oracles judge Spark's SLIDING windows and PARTITION EVICTION, so they must agree
with the shared conformance cases (reference behaviour) and with hand-computed expectations
from semantics.md sections 3, 5 and 7 and sql.md sections 2, 3 and 7.
"""


import pytest
from conformance import (
    CASES,
    EVICTING,
    SLIDING,
    at_seconds,
    case_policy,
    case_rows_and_kwargs,
    case_rows_and_policy,
    expected_triggers,
)
from oracle import tumbling_firings
from oracle_eviction import tumbling_eviction_result, tumbling_firings_with_eviction
from oracle_sliding import sliding_firings_with_dropped, sliding_result


def by_partition(firings):
    shown = {}
    for firing in firings:
        key = firing["partition"]
        shown.setdefault(key, []).append((key, firing["window_id"],
                                          [row["id"] for row in firing["rows"]]))
    return shown


def test_cases_found():
    """Guard against the filters silently selecting nothing."""
    assert len(SLIDING) >= 3 and len(EVICTING) >= 1


@pytest.mark.parametrize("emit_incomplete", [True, False])
@pytest.mark.parametrize("case", SLIDING, ids=[case["id"] for case in SLIDING])
def test_conformance_sliding(case, emit_incomplete):
    """Per partition, the shown triggers equal the reference's (order across keys unspecified)."""
    rows, kwargs = case_rows_and_kwargs(case)
    firings, dropped = sliding_firings_with_dropped(
        rows, case_policy(case["window"]["eviction"]), case_policy(case["window"]["trigger"]),
        emit_incomplete=emit_incomplete, **kwargs)
    assert dropped == 0
    assert all(firing["event"] == "TRIGGER" for firing in firings)
    assert by_partition(firings) == expected_triggers(case, emit_incomplete)


@pytest.mark.parametrize("emit_evicted", [True, False])
@pytest.mark.parametrize("case", EVICTING, ids=[case["id"] for case in EVICTING])
def test_conformance_partition_eviction(case, emit_evicted):
    """Victims and their content match partitionEvict events; flushes match evict events."""
    rows, kwargs = case_rows_and_kwargs(case)
    result = tumbling_eviction_result(rows, case_policy(case["window"]["eviction"]),
                                      emit_evicted=emit_evicted, **kwargs)
    evictions = [{"partitions": e["partitions"],
                  "tuples": {k: [r["id"] for r in v] for k, v in e["rows"].items()}}
                 for e in result["partition_evictions"]]
    assert evictions == [{"partitions": e["partitions"], "tuples": e["tuples"]}
                         for e in case["expected"] if e["event"] == "partitionEvict"]
    flushes = [(f["partition"], [r["id"] for r in f["rows"]])
               for f in result["firings"] if f["event"] == "FLUSH"]
    assert flushes == [(e["partition"], e["tuples"])
                       for e in case["expected"] if e["event"] == "evict"]
    evicted = [(f["partition"], f["window_id"], [r["id"] for r in f["rows"]])
               for f in result["firings"] if f["event"] == "EVICTED"]
    lost = sum(len(v) for e in case["expected"] if e["event"] == "partitionEvict"
               for v in e["tuples"].values())
    if emit_evicted:
        assert result["evicted_tuples"] == 0
        assert evicted == [(k, 0, e["tuples"][k]) for e in case["expected"]
                           if e["event"] == "partitionEvict" for k in sorted(e["partitions"])]
    else:
        assert evicted == [] and result["evicted_tuples"] == lost


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_tumbling_without_eviction_matches_plain_oracle(case):
    """With no PARTITION EVICTION the eviction-aware tumbling model is the plain oracle."""
    rows, policy, kwargs = case_rows_and_policy(case)
    got = tumbling_firings_with_eviction(rows, policy, partition_eviction=None, **kwargs)[0]
    assert all(f.pop("event") == "FLUSH" for f in got)
    assert got == tumbling_firings(rows, policy, **kwargs)


def test_tumbling_time_and_punct_without_eviction_match_plain_oracle():
    """Ticks, NULL arrival times and file punctuation agree with tests/oracle.py."""
    rows = [{"id": i, "k": "ab"[i % 2], "ts": None if i == 3 else at_seconds(1000 + 1.5 * i),
             "file": f"f{i // 4}"} for i in range(11)]
    for policy, extra in [(("time", 2), {}), (("punct",), {"file_of": lambda r: r["file"]})]:
        kwargs = dict(partition_by=lambda r: r["k"], order_by=lambda r: r["ts"], **extra)
        got, dropped = tumbling_firings_with_eviction(rows, policy, partition_eviction=None,
                                                      **kwargs)
        assert dropped == (1 if policy[0] == "time" else 0)
        assert [dict(f, event=None) for f in got] == \
            [dict(f, event=None) for f in tumbling_firings(rows, policy, **kwargs)]


# Hand-computed expectations for the nine eviction x trigger combinations, unpartitioned.
# Rows r0..r5 arrive at seconds 0, 1, 2, 5, 6, 9 (plus 1000) with v = 0, 1, 3, 4, 7, 8.
# Eviction count(3) | delta(v, 2) | time(3); trigger count(2) | delta(v, 2) | time(2), whose
# ticks are at 2, 4, 6, 8 (before the tuple at 2 and at 6; none at 10 > last arrival 9).
NINE_ROWS = [{"id": i, "ts": at_seconds(1000 + t), "v": v}
             for i, (t, v) in enumerate([(0, 0), (1, 1), (2, 3), (5, 4), (6, 7), (9, 8)])]
EVICTIONS = {"count": ("count", 3), "delta": ("delta", "v", 2), "time": ("time", 3)}
TRIGGERS = {"count": ("count", 2), "delta": ("delta", "v", 2), "time": ("time", 2)}
NINE = {  # (eviction, trigger): (window_id, row ids) of every non-empty trigger; first full id
    ("count", "count"): ([(0, [0, 1]), (1, [1, 2, 3]), (2, [3, 4, 5])], 1),
    ("count", "delta"): ([(0, [0, 1]), (1, [1, 2, 3])], 1),
    ("count", "time"): ([(0, [0, 1]), (1, [0, 1, 2]), (2, [1, 2, 3]), (3, [2, 3, 4])], 1),
    ("delta", "count"): ([(0, [0, 1]), (1, [2, 3]), (2, [4, 5])], 1),
    ("delta", "delta"): ([(0, [0, 1]), (1, [2, 3])], 1),
    ("delta", "time"): ([(0, [0, 1]), (1, [1, 2]), (2, [2, 3]), (3, [4])], 1),
    ("time", "count"): ([(0, [0, 1]), (1, [2, 3]), (2, [4, 5])], 0),
    ("time", "delta"): ([(0, [0, 1]), (1, [3])], 0),
    ("time", "time"): ([(0, [0, 1]), (1, [1, 2]), (2, [3]), (3, [3, 4])], 0),
}


def _shown(firings):
    return [(f["window_id"], [r["id"] for r in f["rows"]]) for f in firings]


@pytest.mark.parametrize("combo", sorted(NINE), ids=["-".join(c) for c in sorted(NINE)])
def test_nine_combinations(combo):
    """Order of evict/insert/trigger per semantics.md 3.1 and the initialFull rule of 3.2/7."""
    triggers, first_full = NINE[combo]
    for emit_incomplete in (True, False):
        firings, dropped = sliding_firings_with_dropped(
            NINE_ROWS, EVICTIONS[combo[0]], TRIGGERS[combo[1]], order_by=lambda r: r["ts"],
            emit_incomplete=emit_incomplete)
        expected = triggers if emit_incomplete else [t for t in triggers if t[0] >= first_full]
        assert _shown(firings) == expected and dropped == 0
        assert [(f["pane_start"], f["pane_end"]) for f in firings] == \
            [(NINE_ROWS[ids[0]]["ts"], NINE_ROWS[ids[-1]]["ts"]) for _, ids in expected]


def test_delta_eviction_from_the_middle():
    """After a decreasing value the whole partition is scanned: b leaves, older a stays."""
    rows = [{"id": "a", "v": 10}, {"id": "b", "v": 3}, {"id": "c", "v": 6}, {"id": "d", "v": 9}]
    result = sliding_result(rows, ("delta", "v", 2), ("count", 1), emit_incomplete=True)
    assert [[r["id"] for r in f["rows"]] for f in result["firings"]] == \
        [["a"], ["a", "b"], ["a", "c"], ["a", "d"]]
    firings, _ = sliding_firings_with_dropped(rows, ("delta", "v", 2), ("count", 1))
    assert _shown(firings) == [(2, ["a", "c"]), (3, ["a", "d"])]  # full at c's first eviction


def test_tuple_count_example_of_semantics_section_5():
    """TUMBLING COUNT(4), TUPLES(5): partition 0 goes when i13 arrives, 1 keeps 3 tuples."""
    keys = [0, 0, 0, 0, 1, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1]
    rows = [{"id": f"i{i}", "k": k} for i, k in enumerate(keys)]
    for emit_evicted in (False, True):
        result = tumbling_eviction_result(rows[:14], ("count", 4), partition_by=lambda r: r["k"],
                                          partition_eviction=("tuples", 5),
                                          emit_evicted=emit_evicted)
        flushes = [(0, 0, ["i0", "i1", "i2", "i3"]), (1, 0, ["i4", "i5", "i6", "i7"])]
        evicted = [(0, 1, ["i8", "i10", "i12"])] if emit_evicted else []
        assert [(f["partition"], f["window_id"], [r["id"] for r in f["rows"]])
                for f in result["firings"]] == flushes + evicted
        assert [(e["partitions"], [r["id"] for r in e["rows"][0]])
                for e in result["partition_evictions"]] == [([0], ["i8", "i10", "i12"])]
        assert result["evicted_tuples"] == (0 if emit_evicted else 3)
    firings, _ = tumbling_firings_with_eviction(rows, ("count", 4), partition_by=lambda r: r["k"],
                                                partition_eviction=("tuples", 5))
    assert [r["id"] for r in firings[-1]["rows"]] == ["i9", "i11", "i13", "i14"]


def test_partition_age_whole_seconds():
    """Needed iff oldest last-insert second + s < now; then all with second <= now - s go."""
    times = {"a": 1000.0, "b": 1001.9, "c": 1002.9, "d": 1003.0, "e": 1003.5}
    keys = {"a": "K1", "b": "K2", "c": "K3", "d": "K3", "e": "K1"}
    rows = [{"id": i, "k": keys[i], "ts": at_seconds(t)} for i, t in times.items()]
    result = tumbling_eviction_result(rows, ("count", 10), partition_by=lambda r: r["k"],
                                      order_by=lambda r: r["ts"],
                                      partition_eviction=("age", 2), emit_evicted=True)
    # c: K1 is 2.9 s old but 1000 + 2 < 1002 is false. d: 1000 + 2 < 1003, so every partition
    # last inserted at second <= 1001 goes, K2 too although it is only 1.1 s old.
    assert [(e["partitions"], {k: [r["id"] for r in v] for k, v in e["rows"].items()})
            for e in result["partition_evictions"]] == [(["K1", "K2"], {"K1": ["a"], "K2": ["b"]})]
    assert _shown(result["firings"]) == [(0, ["a"]), (0, ["b"])]
    assert [f["event"] for f in result["firings"]] == ["EVICTED", "EVICTED"]


def test_partition_age_runs_before_punctuation_and_ticks():
    """AGE is checked before a marker or tick: old partitions are evicted, not flushed.

    Victims are listed least recently inserted first; their firings come in key order.
    """
    rows = [{"id": "x", "k": "b", "ts": at_seconds(1000), "m": False},
            {"id": "y", "k": "a", "ts": at_seconds(1001), "m": False},
            {"id": "z", "k": "c", "ts": at_seconds(1003), "m": False},  # 1000 + 3 < 1003 is false
            {"id": "mark", "k": None, "ts": at_seconds(1004), "m": True}]
    kwargs = dict(partition_by=lambda r: r["k"], order_by=lambda r: r["ts"],
                  partition_eviction=("age", 3), emit_evicted=True)
    marked = tumbling_eviction_result(rows, ("punct_expr",), punct_of=lambda r: r["m"],
                                      **kwargs)
    assert [e["partitions"] for e in marked["partition_evictions"]] == [["b", "a"]]
    assert [(f["partition"], f["event"]) for f in marked["firings"]] == \
        [("a", "EVICTED"), ("b", "EVICTED"), ("c", "FLUSH")]
    ticked = tumbling_eviction_result(rows, ("time", 4), **kwargs)  # tick at 1004
    assert [(f["partition"], f["event"]) for f in ticked["firings"]] == \
        [("a", "EVICTED"), ("b", "EVICTED"), ("c", "FLUSH")]
    assert ticked["not_windowed"] == 0 and marked["not_windowed"] == 0
    slid = sliding_result(rows, ("count", 5), ("time", 4), emit_incomplete=True, **kwargs)
    assert [(f["partition"], f["event"]) for f in slid["firings"]] == \
        [("a", "EVICTED"), ("b", "EVICTED"), ("c", "TRIGGER")]


def test_partition_age_resets_state_but_not_window_ids():
    """Sliding + AGE: K1's fullness goes with it, its window ids continue; EMIT EVICTED fires."""
    rows = [{"id": i, "k": k, "ts": at_seconds(1000 + t)}
            for i, (k, t) in enumerate([("K1", 0), ("K1", 1), ("K2", 10), ("K1", 11), ("K1", 12)])]
    kwargs = dict(partition_by=lambda r: r["k"], order_by=lambda r: r["ts"],
                  partition_eviction=("age", 5))
    plain = sliding_result(rows, ("count", 2), ("count", 1), **kwargs)
    assert _shown(plain["firings"]) == [(1, [0, 1]), (3, [3, 4])]
    assert plain["evicted_tuples"] == 2
    emitted = sliding_result(rows, ("count", 2), ("count", 1), emit_evicted=True, **kwargs)
    assert [(f["partition"], f["window_id"], f["event"]) for f in emitted["firings"]] == \
        [("K1", 1, "TRIGGER"), ("K1", 2, "EVICTED"), ("K1", 4, "TRIGGER")]
    assert emitted["firings"][1]["rows"] == rows[:2] and emitted["evicted_tuples"] == 0


def test_partition_count_evicts_least_recently_inserted_in_sliding_window():
    """COUNT(2) evicts by last insertion; a re-created key starts with a fresh delta reference.

    r5 would trigger over [r4] if K2 still had its old reference 0 (1.2 - 0 > 1).
    """
    rows = [{"id": i, "k": k, "v": v} for i, (k, v) in enumerate(
        [("K1", 0), ("K2", 0), ("K1", 2), ("K3", 0), ("K2", 0.5), ("K2", 1.2)])]
    result = sliding_result(rows, ("count", 5), ("delta", "v", 1),
                            partition_by=lambda r: r["k"], partition_eviction=("count", 2),
                            emit_incomplete=True, emit_evicted=True)
    assert [e["partitions"] for e in result["partition_evictions"]] == [["K2"], ["K1"]]
    assert [(f["partition"], f["window_id"], f["event"], [r["id"] for r in f["rows"]])
            for f in result["firings"]] == [("K1", 0, "TRIGGER", [0]),
                                            ("K2", 0, "EVICTED", [1]),
                                            ("K1", 1, "EVICTED", [0, 2])]


def test_tuples_can_evict_the_partition_just_inserted():
    """TUPLES(1): the second tuple overflows the only partition, so it goes at once."""
    rows = [{"id": i} for i in range(4)]
    result = sliding_result(rows, ("count", 3), ("count", 1), partition_eviction=("tuples", 1),
                            emit_incomplete=True, emit_evicted=True)
    assert [(f["window_id"], f["event"], [r["id"] for r in f["rows"]])
            for f in result["firings"]] == [(0, "TRIGGER", [0]), (1, "EVICTED", [0, 1]),
                                            (2, "TRIGGER", [2]), (3, "EVICTED", [2, 3])]


def test_delta_trigger_reference_survives_time_eviction():
    """The emptied partition is removed, its reference is kept, the empty trigger is silent."""
    rows = [{"id": "a", "ts": at_seconds(1000), "v": 0}, {"id": "b", "ts": at_seconds(1010), "v": 0.5},
            {"id": "c", "ts": at_seconds(1011), "v": 1.2}, {"id": "d", "ts": at_seconds(1020), "v": 3},
            {"id": "e", "ts": at_seconds(1021), "v": 5}]
    firings, _ = sliding_firings_with_dropped(rows, ("time", 2), ("delta", "v", 1),
                                              order_by=lambda r: r["ts"])
    # c: 1.2 - 0 > 1 triggers over [b]; d: 3 - 1.2 > 1 but the window is empty (no id);
    # e: 5 - 3 > 1 triggers over [d].
    assert _shown(firings) == [(0, ["b"]), (1, ["d"])]


def test_time_evicted_empty_partition_leaves_storage_and_recency():
    """K1 emptied by time eviction is removed, so K2 does not exceed COUNT(1) partitions."""
    rows = [{"id": "a", "k": "K1", "ts": at_seconds(1000)}, {"id": "b", "k": "K2", "ts": at_seconds(1010)},
            {"id": "c", "k": "K3", "ts": at_seconds(1011)}]
    result = sliding_result(rows, ("time", 2), ("count", 1), partition_by=lambda r: r["k"],
                            order_by=lambda r: r["ts"], partition_eviction=("count", 1))
    assert [e["partitions"] for e in result["partition_evictions"]] == [["K2"]]
    assert [(f["partition"], [r["id"] for r in f["rows"]]) for f in result["firings"]] == \
        [("K1", ["a"]), ("K2", ["b"]), ("K3", ["c"])]


def test_time_trigger_fires_partitions_in_key_order():
    rows = [{"id": i, "k": k, "ts": at_seconds(1000 + i)} for i, k in enumerate(["b", None, "a", "b"])]
    firings, _ = sliding_firings_with_dropped(rows, ("count", 1), ("time", 3),
                                              partition_by=lambda r: r["k"],
                                              order_by=lambda r: r["ts"])
    assert [(f["partition"], f["window_id"]) for f in firings] == [(None, 0), ("a", 0), ("b", 0)]


def test_not_windowed_rows_are_counted():
    """NULL DELTA values (eviction or trigger attribute) and NULL arrival times under TIME."""
    rows = [{"id": 0, "v": 1, "w": 1, "ts": None}, {"id": 1, "v": None, "w": 2, "ts": at_seconds(1)},
            {"id": 2, "v": 2, "w": None, "ts": at_seconds(2)}, {"id": 3, "v": 3, "w": 3, "ts": at_seconds(3)},
            {"id": 4, "v": 4, "w": 4, "ts": at_seconds(4)}]
    assert sliding_firings_with_dropped(rows, ("delta", "v", 9), ("delta", "w", 0))[1] == 2
    firings, dropped = sliding_firings_with_dropped(rows, ("delta", "v", 9), ("time", 1),
                                                    order_by=lambda r: r["ts"],
                                                    emit_incomplete=True)
    assert dropped == 2  # ticks from t0 = 1 (row 1 is not windowed but has a time)
    assert _shown(firings) == [(0, [2]), (1, [2, 3])]


@pytest.mark.parametrize("args", [
    (("count", 0), ("count", 1), {}), (("count", 1), ("time", 0), {}),
    (("punct",), ("count", 1), {}), (("time", 1), ("count", 1), {}),
    (("count", 1), ("count", 1), {"partition_eviction": ("lru", 1)})])
def test_invalid_windows_are_rejected(args):
    eviction, trigger, kwargs = args
    with pytest.raises(ValueError):
        sliding_result([{"id": 0}], eviction, trigger, **kwargs)
