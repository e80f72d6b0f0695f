"""EMIT FINAL and EMIT EARLY EVERY in streaming tables (spec/sql.md section 8), against the pane
oracle: micro-batches of random sizes, each one run of the stream (AVAILABLE NOW).

The oracle replays what the stream sees: each micro-batch's tuples, then (EMIT EARLY) the
batch's processing time as a clock marker, then the watermark the batch leaves behind. EMIT
EARLY EVERY 0.001 makes every micro-batch late enough for an early firing, so the expected rows
do not depend on the wall clock."""

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from oracle_panes import pane_firings
from scale import examples
from test_streaming import T0, _run_batches, micro_batches

TUPLES = """
    SELECT k, PANE_START() AS s, PANE_TIMING() AS t, PANE_INDEX() AS i, WINDOW_EVENT() AS e,
           ARRAY_SORT(COLLECT_LIST(id)) AS ids, SUM(v) AS total
    FROM STREAM({{source}})
    WINDOW TIME_INTERVAL(10, 5, 15) ON event_time OVER (PARTITION BY k) WATERMARK DELAY 2
    {emit}"""
# Every aggregate has partials: the processor keeps partials per pane, not tuples.
PARTIALS = """
    SELECT k, PANE_START() AS s, PANE_TIMING() AS t, PANE_INDEX() AS i, WINDOW_EVENT() AS e,
           COUNT(*) AS n, SUM(v) AS total
    FROM STREAM({{source}})
    WINDOW TIME_INTERVAL(10, 5, 15) ON event_time OVER (PARTITION BY k) WATERMARK DELAY 2
    {emit}"""
_names = itertools.count()


def _oracle(batches, **emit):
    """The oracle's last firing of each (partition, pane), as the table holds them: no final
    watermark (a stream does not end)."""
    rows, seen = [], []
    for number, batch in enumerate(batches):
        rows += [dict(r, pos=len(rows) + j) for j, r in enumerate(batch)]
        seen += [r["ts"] for r in batch]
        rows.append({"pos": len(rows), "clock": 1000.0 * (number + 1)})
        rows.append({"pos": len(rows), "wm": max(seen) - 2})
    result = pane_firings(rows, 10, 5, 15, event_time=lambda r: r.get("ts"),
                          partition_by=lambda r: r.get("k"), order_by=lambda r: r["pos"],
                          watermark_by=lambda r: r.get("wm"), final_watermark=False,
                          early_clock=lambda r: r.get("clock"), **emit)
    return result["firings"]


def _shape(firings):
    return sorted((f["partition"], float(f["pane_start"]), f["timing"], f["index"],
                   tuple(sorted(r["id"] for r in f["rows"])),
                   float(sum(r["v"] for r in f["rows"]))) for f in firings)


def _event(timing):
    return timing if timing in ("EARLY", "FINAL") else "TRIGGER"


def _history_operations(spark, table):
    return [r.operation for r in spark.sql(f"DESCRIBE HISTORY {table}").collect()]


@pytest.mark.heavy
@pytest.mark.soak
@settings(max_examples=examples(2, 6), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=micro_batches())
@pytest.mark.parametrize("query", [TUPLES, PARTIALS], ids=["tuples", "partials"])
def test_emit_final_streams_each_pane_once_when_it_closes(spark, tmp_path_factory, query,
                                                          batches):
    """One FINAL row per closed pane, holding all its tuples (late ones included); a pane still
    open has no row. The table is append-only: no MERGE in its history."""
    name = f"final_{next(_names)}"
    rows = _run_batches(spark, tmp_path_factory, batches, query.format(emit="EMIT FINAL"),
                        sink=name)
    expected = _shape(_oracle(batches, emit="final"))
    assert all(r.e == "FINAL" and r.t == "FINAL" and r.i == 0 for r in rows)
    assert len(rows) == len(expected)  # appended once each: no pane written twice
    if query is TUPLES:
        got = sorted((r.k, (r.s - T0).total_seconds(), r.t, r.i, tuple(r.ids), r.total)
                     for r in rows)
        assert got == expected
    else:
        got = sorted((r.k, (r.s - T0).total_seconds(), r.n, r.total) for r in rows)
        assert got == sorted((k, s, len(ids), total) for k, s, _, _, ids, total in expected)
    if rows:
        assert "MERGE" not in _history_operations(spark, name)


@pytest.mark.heavy
@pytest.mark.soak
@settings(max_examples=examples(2, 6), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=micro_batches())
@pytest.mark.parametrize("query", [TUPLES, PARTIALS], ids=["tuples", "partials"])
def test_emit_early_streams_early_rows_replaced_on_time(spark, tmp_path_factory, query,
                                                        batches):
    """A pane that gets tuples fires EARLY in that micro-batch (EVERY 0.001 s has passed since
    its last early firing); the table keeps each pane's last firing, so its ON_TIME row (and
    later LATE rows) replace the EARLY one."""
    rows = _run_batches(spark, tmp_path_factory, batches,
                        query.format(emit="EMIT EARLY EVERY 0.001"))
    last = {}
    for f in _oracle(batches, emit="early", early_every=0.001):
        last[(f["partition"], f["window_id"])] = f
    expected = _shape(last.values())
    assert all(r.e == _event(r.t) for r in rows)
    if query is TUPLES:
        got = sorted((r.k, (r.s - T0).total_seconds(), r.t, r.i, tuple(r.ids), r.total)
                     for r in rows)
        assert got == expected
    else:
        got = sorted((r.k, (r.s - T0).total_seconds(), r.t, r.i, r.n, r.total) for r in rows)
        assert got == sorted((k, s, t, i, len(ids), total) for k, s, t, i, ids, total in expected)
