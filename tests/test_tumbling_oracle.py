"""Spark's TUMBLING results against the pure-Python oracle on randomized inputs: many partitions,
NULL keys, ties in ORDER BY, decreasing and NULL delta values, markers."""

import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import aggregate_rows, tumbling_firings
from scale import examples
from windowing import EPOCH, as_multiset, make_view, oracle_shape, sql_firings

# Every test here runs SETTINGS' examples: more of them under `dev.sh soak`.
pytestmark = pytest.mark.soak
SETTINGS = settings(max_examples=examples(6, 30), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def event_rows(draw, max_rows=40, null_ts=False):
    n = draw(st.integers(0, max_rows))
    keys = st.sampled_from(["a", "b", "c", None])
    values = st.one_of(st.none(), st.integers(-3, 12).map(float)) if draw(st.booleans()) \
        else st.integers(0, 30).map(float)
    seconds = st.integers(0, 40)
    ts = st.one_of(st.none(), seconds) if null_ts else seconds
    rows = []
    for i in range(n):
        t = draw(ts)
        rows.append({
            "id": i, "k": draw(keys), "seq": draw(st.integers(0, 12)), "v": draw(values),
            "ts": None if t is None else EPOCH + datetime.timedelta(seconds=t),
            "marker": draw(st.booleans().map(lambda b: b and draw(st.integers(0, 4)) == 0)),
        })
    return rows


def compare(spark, rows, policy, policy_sql, partitioned, order_by, **oracle_kwargs):
    make_view(spark, rows)
    got = sql_firings(spark, policy_sql, partitioned=partitioned, order_by=order_by)
    expected = tumbling_firings(
        rows, policy,
        partition_by=(lambda r: r["k"]) if partitioned else None,
        order_by=(lambda r: r[order_by]) if order_by else None, **oracle_kwargs)
    assert as_multiset(got) == as_multiset(oracle_shape(expected))


@SETTINGS
@given(rows=event_rows(), n=st.integers(1, 5), partitioned=st.booleans(),
       ordered=st.booleans())
def test_count_matches_oracle(spark, rows, n, partitioned, ordered):
    compare(spark, rows, ("count", n), f"COUNT({n})", partitioned, "seq" if ordered else None)


@SETTINGS
@given(rows=event_rows(), d=st.sampled_from([0, 1, 2.5, 7]), partitioned=st.booleans())
def test_numeric_delta_matches_oracle(spark, rows, d, partitioned):
    compare(spark, rows, ("delta", "v", d), f"DELTA(v, {d})", partitioned, "seq")


@SETTINGS
@given(rows=event_rows(), d=st.sampled_from([0, 5, 12.5]), partitioned=st.booleans())
def test_timestamp_delta_matches_oracle(spark, rows, d, partitioned):
    compare(spark, rows, ("delta", "ts", d), f"DELTA(ts, {d})", partitioned, "seq")


@SETTINGS
@given(rows=event_rows(null_ts=True), t=st.sampled_from([1, 3, 7.5]), partitioned=st.booleans())
def test_time_replay_matches_oracle(spark, rows, t, partitioned):
    compare(spark, rows, ("time", t), f"TIME({t})", partitioned, "ts")


@SETTINGS
@given(rows=event_rows(), partitioned=st.booleans())
def test_punct_markers_match_oracle(spark, rows, partitioned):
    compare(spark, rows, ("punct_expr",), "PUNCT(marker)", partitioned, "seq",
            punct_of=lambda r: r["marker"])


@SETTINGS
@given(rows=event_rows(), n=st.integers(1, 6), partitioned=st.booleans())
def test_group_by_inside_windows_matches_oracle(spark, rows, n, partitioned):
    """GROUP BY splits each firing into one row per group; the window still counts all."""
    make_view(spark, rows)
    key = "k" if partitioned else "NULL"
    over = "OVER (PARTITION BY k ORDER BY seq)" if partitioned else "OVER (ORDER BY seq)"
    got = sorted(
        (str(r.p), r.w, r.g, r.n, r.s) for r in spark.sql(f"""
            SELECT {key} AS p, WINDOW_ID() AS w, seq % 3 AS g, COUNT(*) AS n, SUM(id) AS s
            FROM events WINDOW TUMBLING COUNT({n}) {over} GROUP BY seq % 3""").collect())
    firings = tumbling_firings(rows, ("count", n),
                               partition_by=(lambda r: r["k"]) if partitioned else None,
                               order_by=lambda r: r["seq"])
    expected = aggregate_rows(
        firings, {"n": len, "s": lambda rs: sum(r["id"] for r in rs)},
        group_by=lambda r: r["seq"] % 3)
    assert got == sorted((str(e["partition"]), e["window_id"], e["group"], e["n"], e["s"])
                         for e in expected)
