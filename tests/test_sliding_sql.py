"""SLIDING windows and PARTITION EVICTION through spark.sql: the conformance cases, and the
oracles (tests/oracle_sliding.py, tests/oracle_eviction.py) on randomized inputs, for both the
copying plan (COLLECT_LIST) and the incremental one (SUM, COUNT, MIN, MAX, AVG)."""

import math

import pytest
from conformance import (
    AT,
    EVICTING,
    SLIDING,
    at_seconds,
    case_rows_and_kwargs,
    expected_triggers,
)
from hypothesis import given
from hypothesis import strategies as st
from oracle_eviction import tumbling_eviction_result
from oracle_sliding import sliding_result
from test_tumbling_oracle import SETTINGS, event_rows
from windowing import make_view


def _policy_sql(spec):
    if spec["type"] == "count":
        return f"COUNT({spec['size']})"
    if spec["type"] == "time":
        return f"TIME({spec['seconds']})"
    return f"DELTA({spec['attribute']}, {spec['delta']})"


def _case_view(spark, case):
    rows, _ = case_rows_and_kwargs(case)
    attrs = sorted({k for r in rows for k in r if k not in ("id", AT)})
    timed = any(AT in r for r in rows)
    def cell(value):
        return float(value) if isinstance(value, int) else value
    values = [[seq, r["id"], r.get(AT)] + [cell(r.get(a)) for a in attrs]
              for seq, r in enumerate(rows)]
    schema = ", ".join(["seq BIGINT", "id STRING", "at TIMESTAMP"] +
                       [f"{a} {'STRING' if isinstance(rows[0].get(a), str) else 'DOUBLE'}"
                        for a in attrs])
    spark.createDataFrame(values, schema).coalesce(1).createOrReplaceTempView("case_input")
    return "at" if timed else "seq"


@pytest.mark.parametrize("emit_incomplete", [False, True])
@pytest.mark.parametrize("case", SLIDING, ids=[c["id"] for c in SLIDING])
def test_sliding_case_through_sql(spark, case, emit_incomplete):
    order = _case_view(spark, case)
    window = case["window"]
    key = window.get("partitionBy")
    over = f"OVER ({'PARTITION BY ' + key if key else ''} ORDER BY {order})"
    emit = "EMIT INCOMPLETE" if emit_incomplete else ""
    got = spark.sql(f"""
        SELECT {key or 'NULL'} AS p, WINDOW_ID() AS w,
               TRANSFORM(ARRAY_SORT(COLLECT_LIST(STRUCT(seq, id))), x -> x.id) AS ids
        FROM case_input
        WINDOW SLIDING {_policy_sql(window['eviction'])} TRIGGER {_policy_sql(window['trigger'])}
        {over} {emit}""").collect()
    expected = expected_triggers(case, emit_incomplete)
    assert sorted((r.p, r.w, list(r.ids)) for r in got) == \
        sorted(t for triggers in expected.values() for t in triggers)


@pytest.mark.parametrize("emit_evicted", [False, True])
@pytest.mark.parametrize("case", EVICTING, ids=[c["id"] for c in EVICTING])
def test_partition_eviction_case_through_sql(spark, case, emit_evicted):
    _case_view(spark, case)
    window = case["window"]
    spec = window["partitionEviction"]
    limit = {"partitionCount": "COUNT", "tupleCount": "TUPLES"}[spec["type"]]
    got = spark.sql(f"""
        SELECT k AS p, WINDOW_EVENT() AS e, COLLECT_LIST(id) AS ids FROM case_input
        WINDOW TUMBLING {_policy_sql(window['eviction'])}
        OVER (PARTITION BY {window['partitionBy']} ORDER BY seq)
        PARTITION EVICTION {limit}({spec['count']}) {'EMIT EVICTED' if emit_evicted else ''}
        """).collect()
    evicted = sorted((p, tuple(ids)) for e in case["expected"] if e["event"] == "partitionEvict"
                     for p, ids in e["tuples"].items())
    shown = sorted((r.p, tuple(r.ids)) for r in got if r.e == "EVICTED")
    assert shown == (evicted if emit_evicted else [])


POLICIES = {
    "count": (lambda: st.integers(1, 4).map(lambda n: (("count", n), f"COUNT({n})"))),
    "delta": (lambda: st.sampled_from([0, 2, 5]).map(
        lambda d: (("delta", "v", d), f"DELTA(v, {d})"))),
    "time": (lambda: st.sampled_from([1, 3, 6.5]).map(
        lambda s: (("time", s), f"TIME({s})"))),
}
COMBOS = [(e, t) for e in POLICIES for t in POLICIES]


def _oracle_shape(firings):
    return sorted((str(f["partition"]), f["window_id"], tuple(sorted(r["id"] for r in f["rows"])),
                   f["pane_start"], f["pane_end"], f["event"]) for f in firings)


def _run(spark, rows, clause, partitioned, select):
    make_view(spark, rows)
    over = "OVER (PARTITION BY k ORDER BY ts)" if partitioned else "OVER (ORDER BY ts)"
    return spark.sql(f"SELECT {'k' if partitioned else 'NULL'} AS p, WINDOW_ID() AS w, "
                     f"PANE_START() AS ps, PANE_END() AS pe, WINDOW_EVENT() AS e, {select} "
                     f"FROM events WINDOW {clause.format(over=over)}").collect()


@pytest.mark.soak  # tests/scale.py sizes its examples
@pytest.mark.parametrize("eviction,trigger", COMBOS, ids=[f"{e}-{t}" for e, t in COMBOS])
def test_sliding_matches_oracle(spark, eviction, trigger):
    @SETTINGS
    @given(rows=event_rows(max_rows=30), ev=POLICIES[eviction](), tr=POLICIES[trigger](),
           partitioned=st.booleans(), incomplete=st.booleans())
    def check(rows, ev, tr, partitioned, incomplete):
        clause = (f"SLIDING {ev[1]} TRIGGER {tr[1]} {{over}} "
                  f"{'EMIT INCOMPLETE' if incomplete else ''}")
        result = sliding_result(rows, ev[0], tr[0], order_by=lambda r: r["ts"],
                                partition_by=(lambda r: r["k"]) if partitioned else None,
                                emit_incomplete=incomplete)
        copied = _run(spark, rows, clause, partitioned,
                      "ARRAY_SORT(COLLECT_LIST(id)) AS ids")
        assert sorted((str(r.p), r.w, tuple(r.ids), r.ps, r.pe, r.e) for r in copied) == \
            _oracle_shape(result["firings"])
        incremental = _run(spark, rows, clause, partitioned,
                           "COUNT(*) AS n, SUM(id) AS s, MIN(v) AS lo, MAX(v) AS hi, AVG(v) AS a")
        expected = {(str(f["partition"]), f["window_id"]): f["rows"] for f in result["firings"]}
        assert len(incremental) == len(expected)
        for r in incremental:
            members = expected[(str(r.p), r.w)]
            values = [m["v"] for m in members if m["v"] is not None]
            assert (r.n, r.s) == (len(members), sum(m["id"] for m in members))
            assert (r.lo, r.hi) == ((min(values), max(values)) if values else (None, None))
            assert (r.a is None) == (not values)
            assert r.a is None or math.isclose(r.a, sum(values) / len(values), rel_tol=1e-9)
    check()


EVICTIONS = st.sampled_from([("count", 2, "COUNT(2)"), ("tuples", 4, "TUPLES(4)"),
                             ("age", 5, "AGE(5)")])


@pytest.mark.soak  # tests/scale.py sizes its examples
@SETTINGS
@given(rows=event_rows(), eviction=EVICTIONS, emit_evicted=st.booleans(), n=st.integers(1, 4))
def test_tumbling_partition_eviction_matches_oracle(spark, rows, eviction, emit_evicted, n):
    result = tumbling_eviction_result(
        rows, ("count", n), partition_eviction=eviction[:2], emit_evicted=emit_evicted,
        partition_by=lambda r: r["k"], order_by=lambda r: r["ts"])
    got = _run(spark, rows, f"TUMBLING COUNT({n}) {{over}} PARTITION EVICTION {eviction[2]} "
               f"{'EMIT EVICTED' if emit_evicted else ''}", True,
               "ARRAY_SORT(COLLECT_LIST(id)) AS ids")
    assert sorted((str(r.p), r.w, tuple(r.ids), r.ps, r.pe, r.e) for r in got) == \
        _oracle_shape(result["firings"])


@pytest.mark.soak  # tests/scale.py sizes its examples
@SETTINGS
@given(rows=event_rows(), eviction=EVICTIONS, emit_evicted=st.booleans(),
       policy=POLICIES["count"]())
def test_sliding_partition_eviction_matches_oracle(spark, rows, eviction, emit_evicted, policy):
    result = sliding_result(
        rows, policy[0], ("count", 1), partition_eviction=eviction[:2],
        emit_evicted=emit_evicted, partition_by=lambda r: r["k"], order_by=lambda r: r["ts"])
    got = _run(spark, rows, f"SLIDING {policy[1]} TRIGGER COUNT(1) {{over}} PARTITION EVICTION "
               f"{eviction[2]} {'EMIT EVICTED' if emit_evicted else ''}", True,
               "ARRAY_SORT(COLLECT_LIST(id)) AS ids")
    assert sorted((str(r.p), r.w, tuple(r.ids), r.ps, r.pe, r.e) for r in got) == \
        _oracle_shape(result["firings"])


def test_partition_eviction_bounds_partitions_and_counts_dropped_tuples(spark):
    """PARTITION EVICTION COUNT(10) over 1,000 keys keeps at most 10 partitions alive, and the
    tuples of evicted partitions are counted, not silently lost."""
    import sql_ext

    rows = [{"id": i, "k": str(i % 1000), "ts": None} for i in range(5000)]
    for row in rows:
        row["ts"] = at_seconds(row["id"])
    make_view(spark, rows)
    frame = spark.sql("SELECT k, COUNT(*) AS n FROM events WINDOW TUMBLING COUNT(5) "
                      "OVER (PARTITION BY k ORDER BY ts) PARTITION EVICTION COUNT(10)")
    assert frame.collect() == []  # every key is evicted before its fifth tuple
    metrics = sql_ext.window_metrics(frame)
    assert metrics["peak_partitions"] == 10
    assert metrics["evicted_tuples_dropped"] == 5000 - 10  # the last 10 partitions stay open
