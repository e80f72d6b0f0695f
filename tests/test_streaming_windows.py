"""Streaming TUMBLING and SLIDING windows (issue 5): a Delta source fed in random micro-batches,
the streaming table compared with the batch query over the same recorded input (ORDER BY the
arrival number), for every deterministic policy; restarts resume the window state."""

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sql_ext.streaming import create_streaming_table

WINDOWS = [
    "TUMBLING COUNT(3)",
    "TUMBLING DELTA(v, 4)",
    "SLIDING COUNT(3) TRIGGER COUNT(2)",
    "SLIDING DELTA(v, 5) TRIGGER COUNT(2)",
    "SLIDING COUNT(4) TRIGGER DELTA(v, 3)",
    "SLIDING COUNT(3) TRIGGER COUNT(1) EMIT INCOMPLETE",
]
_names = itertools.count()


def _query(source: str, window: str, order: str = "") -> str:
    policy, _, emit = window.partition(" EMIT ")
    return (f"SELECT k, WINDOW_ID() AS w, WINDOW_EVENT() AS e, "
            f"ARRAY_SORT(COLLECT_LIST(id)) AS ids, SUM(v) AS total FROM {source} "
            f"WINDOW {policy} OVER (PARTITION BY k{order}) {'EMIT ' + emit if emit else ''}")


def _rows(frame):
    return sorted((r.k, r.w, r.e, tuple(r.ids), r.total) for r in frame.collect())


def _append(spark, table, batch):
    # One file per micro-batch, so its scan order is the arrival order.
    spark.createDataFrame(batch, "id long, k string, v double").coalesce(1) \
        .write.format("delta").mode("append").saveAsTable(table)


@st.composite
def micro_batches(draw):
    counter = itertools.count()
    return [[(next(counter), draw(st.sampled_from(["a", "b", "c"])),
              float(draw(st.integers(-3, 12)))) for _ in range(draw(st.integers(1, 7)))]
            for _ in range(draw(st.integers(1, 4)))]


@pytest.mark.parametrize("window", WINDOWS)
@settings(max_examples=2, deadline=None,  # each example runs several streaming queries
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=micro_batches())
def test_streaming_equals_batch(spark, tmp_path_factory, window, batches):
    n = next(_names)
    source, sink = f"sw_src_{n}", f"sw_out_{n}"
    checkpoint = str(tmp_path_factory.mktemp("checkpoint"))
    spark.sql(f"CREATE TABLE {source} (id BIGINT, k STRING, v DOUBLE) USING DELTA")
    for batch in batches:
        _append(spark, source, batch)
        create_streaming_table(spark, sink, _query(f"STREAM({source})", window),
                               checkpoint=checkpoint).awaitTermination()
    expected = _rows(spark.sql(_query(source, window, " ORDER BY id")))
    got = _rows(spark.table(sink)) if spark.catalog.tableExists(sink) else []
    assert got == expected


def test_count_20_resumes_after_restart(spark, tmp_path):
    """semantics.md section 8: a TUMBLING COUNT(20) stopped after 6 tuples fires after 14 more;
    the window contents and its count come back from the checkpoint."""
    spark.sql("CREATE TABLE c20_src (id BIGINT, k STRING, v DOUBLE) USING DELTA")
    statement = (f"CREATE STREAMING TABLE c20_out CHECKPOINT '{tmp_path / 'ckpt'}' AS "
                 "SELECT COUNT(*) AS n, MIN(id) AS first, MAX(id) AS last FROM STREAM(c20_src) "
                 "WINDOW TUMBLING COUNT(20)")
    _append(spark, "c20_src", [(i, "a", 1.0) for i in range(6)])
    spark.sql(statement)  # a run of its own, then the query ends (a restart follows)
    assert not spark.catalog.tableExists("c20_out") or spark.table("c20_out").count() == 0
    _append(spark, "c20_src", [(i, "a", 1.0) for i in range(6, 19)])
    spark.sql(statement)
    assert spark.table("c20_out").count() == 0  # 19 tuples: not yet
    _append(spark, "c20_src", [(19, "a", 1.0), (20, "a", 1.0)])
    spark.sql(statement)
    assert [tuple(r) for r in spark.table("c20_out").select("n", "first", "last").collect()] \
        == [(20, 0, 19)]
