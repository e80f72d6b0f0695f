"""FIRST, LAST and COLLECT_LIST over a window follow its arrival order (SPL's First, Last and
Collect), checked against the oracles' window contents, which are kept in arrival order:
tumbling, sliding and TIME_INTERVAL windows, with and without ORDER BY, partitions, NULLs,
IGNORE NULLS; and a streaming table fed in several commits against the same query in batch."""

import datetime
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import tumbling_firings
from oracle_panes import pane_firings
from oracle_sliding import sliding_result
from scale import examples
from windowing import EPOCH, make_view

SETTINGS = settings(max_examples=examples(8, 40), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

AGGREGATES = """FIRST(v) AS first_v, LAST(v) AS last_v, FIRST(v, true) AS first_nn,
    LAST(v) IGNORE NULLS AS last_nn, FIRST_VALUE(id) AS first_id, LAST_VALUE(id) AS last_id,
    COLLECT_LIST(v) AS vs, ARRAY_AGG(id) AS ids"""


def expected_row(partition, window_id, rows):
    """What the aggregates must give for one firing's rows (arrival order)."""
    values = [r["v"] for r in rows]
    kept = [v for v in values if v is not None]
    return (partition, window_id, values[0], values[-1], kept[0] if kept else None,
            kept[-1] if kept else None, rows[0]["id"], rows[-1]["id"], kept,
            [r["id"] for r in rows])


def sql_rows(spark, window_sql, partitioned):
    key = "k" if partitioned else "NULL"
    query = f"SELECT {key} AS k, WINDOW_ID() AS w, {AGGREGATES} FROM events {window_sql}"
    return sorted((tuple(r) for r in spark.sql(query).collect()), key=repr)


@st.composite
def rows_strategy(draw):
    n = draw(st.integers(1, 30))
    return [{"id": i, "k": draw(st.sampled_from(["a", "b", None])),
             "seq": draw(st.integers(0, 6)),
             "v": draw(st.one_of(st.none(), st.integers(-5, 20).map(float))),
             "ts": EPOCH + datetime.timedelta(seconds=draw(st.integers(0, 60)))}
            for i in range(n)]


def over(partitioned, ordered):
    parts = (["PARTITION BY k"] if partitioned else []) + (["ORDER BY seq"] if ordered else [])
    return f"OVER ({' '.join(parts)})" if parts else ""


def key_and_order(partitioned, ordered):
    return ((lambda r: r["k"]) if partitioned else None,
            (lambda r: r["seq"]) if ordered else None)


@SETTINGS
@given(rows=rows_strategy(), n=st.integers(1, 4), partitioned=st.booleans(),
       ordered=st.booleans())
def test_tumbling_first_last_collect_follow_arrival(spark, rows, n, partitioned, ordered):
    make_view(spark, rows)
    partition_by, order_by = key_and_order(partitioned, ordered)
    firings = tumbling_firings(rows, ("count", n), partition_by=partition_by, order_by=order_by)
    expected = sorted((expected_row(f["partition"] if partitioned else None, f["window_id"],
                                    f["rows"]) for f in firings), key=repr)
    got = sql_rows(spark, f"WINDOW TUMBLING COUNT({n}) {over(partitioned, ordered)}", partitioned)
    assert got == expected


@SETTINGS
@given(rows=rows_strategy(), size=st.integers(1, 4), step=st.integers(1, 3),
       partitioned=st.booleans(), ordered=st.booleans())
def test_sliding_first_last_collect_follow_arrival(spark, rows, size, step, partitioned,
                                                    ordered):
    make_view(spark, rows)
    partition_by, order_by = key_and_order(partitioned, ordered)
    result = sliding_result(rows, ("count", size), ("count", step), partition_by=partition_by,
                            order_by=order_by, emit_incomplete=True)
    expected = sorted((expected_row(f["partition"] if partitioned else None, f["window_id"],
                                    f["rows"]) for f in result["firings"]), key=repr)
    window = (f"WINDOW SLIDING COUNT({size}) TRIGGER COUNT({step}) "
              f"{over(partitioned, ordered)} EMIT INCOMPLETE")
    assert sql_rows(spark, window, partitioned) == expected


@SETTINGS
@given(rows=rows_strategy(), duration=st.sampled_from([10, 25]), partitioned=st.booleans())
def test_pane_first_last_collect_follow_arrival(spark, rows, duration, partitioned):
    make_view(spark, rows)
    partition_by, _ = key_and_order(partitioned, False)
    result = pane_firings(rows, duration, event_time=lambda r: r["ts"],
                          partition_by=partition_by)
    expected = sorted((expected_row(f["partition"] if partitioned else None, f["window_id"],
                                    f["rows"]) for f in result["firings"]), key=repr)
    window = f"WINDOW TIME_INTERVAL({duration}) ON ts {over(partitioned, False)}"
    assert sql_rows(spark, window, partitioned) == expected


def test_distinct_collect_and_window_functions_keep_their_meaning(spark):
    rows = [{"id": i, "k": "a", "seq": i, "v": float(v), "ts": EPOCH}
            for i, v in enumerate([3, 1, 3, 2])]
    make_view(spark, rows)
    got = spark.sql("SELECT SORT_ARRAY(COLLECT_SET(v)) AS s, COUNT(DISTINCT v) AS d "
                    "FROM events WINDOW TUMBLING COUNT(4)").collect()
    assert [tuple(r) for r in got] == [([1.0, 2.0, 3.0], 3)]
    plain = spark.sql("SELECT FIRST(v) OVER (ORDER BY seq) AS f FROM events").collect()
    assert {r.f for r in plain} == {3.0}


@pytest.mark.parametrize("window", [
    "WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k)",
    "WINDOW SLIDING COUNT(3) TRIGGER COUNT(2) OVER (PARTITION BY k) EMIT INCOMPLETE",
])
def test_streaming_table_keeps_arrival_order_across_commits(spark, window):
    """Windows that span commits: the values of earlier micro-batches come first."""
    run = uuid.uuid4().hex[:8]
    source, table = f"arr_src_{run}", f"arr_st_{run}"
    spark.sql(f"CREATE TABLE {source} (id BIGINT, k STRING, v DOUBLE) USING DELTA")
    query = (f"SELECT k, WINDOW_ID() AS w, FIRST(v) AS first_v, LAST(v) AS last_v, "
             f"COLLECT_LIST(id) AS ids FROM {{}} {window}")
    commits = [[(0, "a", 5.0), (1, "b", 1.0)], [(2, "a", None), (3, "a", 2.0)],
               [(4, "b", 7.0), (5, "a", -1.0), (6, "b", 0.0)], [(7, "b", 3.0)]]
    spark.sql(f"CREATE STREAMING TABLE {table} AS {query.format(f'STREAM({source})')}")
    for commit in commits:
        values = ", ".join(f"({i}, '{k}', {'NULL' if v is None else v})" for i, k, v in commit)
        spark.sql(f"INSERT INTO {source} VALUES {values}")
        spark.sql(f"REFRESH STREAMING TABLE {table}")
    streamed = sorted(tuple(r) for r in spark.table(table).collect())
    batch = sorted(tuple(r) for r in spark.sql(query.format(source)).collect())
    assert streamed == batch and len(batch) >= 2
    commit_of = {i: n for n, commit in enumerate(commits) for i, _, _ in commit}
    # The rows of one INSERT may land in several files, in any order; commits stay in order.
    assert all([commit_of[i] for i in ids] == sorted(commit_of[i] for i in ids)
               for *_, ids in batch)
    spark.sql(f"DROP STREAMING TABLE {table}")


def test_streaming_panes_keep_arrival_order_across_commits(spark):
    """A pane's tuples from several micro-batches, one of them late: the pane's last firing
    in the stream equals its last firing in batch replay."""
    run = uuid.uuid4().hex[:8]
    source, table = f"arr_psrc_{run}", f"arr_pst_{run}"
    spark.sql(f"CREATE TABLE {source} (id BIGINT, k STRING, v DOUBLE, ts TIMESTAMP) USING DELTA")
    window = ("WINDOW TIME_INTERVAL(10, 10, 1000) ON ts OVER (PARTITION BY k) "
              "WATERMARK DELAY 0")
    aggregates = "FIRST(v) AS first_v, LAST(v) AS last_v, COLLECT_LIST(id) AS ids"
    commits = [[(0, "a", 5.0, 1), (1, "b", 1.0, 2)], [(2, "a", None, 3), (3, "a", 2.0, 12)],
               [(4, "b", 7.0, 4), (5, "a", -1.0, 13)], [(6, "b", 3.0, 40)]]
    spark.sql(f"CREATE STREAMING TABLE {table} AS SELECT k, WINDOW_ID() AS w, {aggregates} "
              f"FROM STREAM({source}) {window}")
    for commit in commits:
        values = ", ".join(f"({i}, '{k}', {'NULL' if v is None else v}, "
                           f"TIMESTAMP '2020-01-01 00:00:{t:02d}')" for i, k, v, t in commit)
        spark.sql(f"INSERT INTO {source} VALUES {values}")
        spark.sql(f"REFRESH STREAMING TABLE {table}")
    streamed = {(r.k, r.w): (r.first_v, r.last_v, list(r.ids))
                for r in spark.table(table).collect()}
    last_firing = {}
    for r in spark.sql(f"SELECT k, WINDOW_ID() AS w, PANE_INDEX() AS i, {aggregates} "
                       f"FROM {source} {window}").collect():
        if r.i >= last_firing.get((r.k, r.w), (-1,))[0]:
            last_firing[(r.k, r.w)] = (r.i, r.first_v, r.last_v, list(r.ids))
    assert len(streamed) >= 3
    assert streamed == {key: value[1:] for key, value in last_firing.items() if key in streamed}
    late_pane = [ids for (k, _), (_, _, ids) in streamed.items() if k == "b"]
    assert late_pane == [[1, 4]]  # the late tuple of a later commit comes last
    spark.sql(f"DROP STREAMING TABLE {table}")
