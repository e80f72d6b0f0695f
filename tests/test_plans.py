"""Which physical plan runs for each fast path, and where each optimizer rule must not apply:
a fast path that silently stops applying still returns correct rows, so only the plan shows it."""

import pytest

SOURCE = ("SELECT id AS seq, id % 3 AS k, CAST(id AS DOUBLE) AS x, TIMESTAMP_SECONDS(id) AS ts, "
          "id % 2 AS g FROM range(100)")
SLIDING = "WINDOW SLIDING COUNT(10) TRIGGER COUNT(1) OVER (PARTITION BY k ORDER BY seq)"
PANES = "WINDOW TIME_INTERVAL(10, 5) ON ts OVER (PARTITION BY k)"

# (query, what the executed plan must show, what it must not)
CASES = {
    # Unpartitioned COUNT numbers its tuples in parallel: no single-partition funnel, no sort.
    "unpartitioned count": ("SELECT SUM(x) FROM t WINDOW TUMBLING COUNT(10) OVER (ORDER BY seq)",
                            ["WindowAssign"], ["SinglePartition", "Sort ["]),
    # Partitioned windows cluster by key, each task replays its keys in arrival order.
    "partitioned count": ("SELECT k, SUM(x) FROM t WINDOW TUMBLING COUNT(10) "
                          "OVER (PARTITION BY k ORDER BY seq)",
                          ["hashpartitioning(__sx_p0", "Sort [__sx_p0", "WindowAssign"],
                          ["SinglePartition"]),
    # IncrementalWindowAggregate: SUM/COUNT/AVG/MIN/MAX of numbers, one row per firing.
    "sliding partials": (f"SELECT k, AVG(x), MAX(seq * 2), COUNT(*) FROM t {SLIDING}",
                         ["WindowAggregate"], ["WindowAssign", "HashAggregate"]),
    # ... and not for holistic aggregates, DISTINCT, or a GROUP BY of the query's own.
    "sliding collect_list": (f"SELECT k, COLLECT_LIST(x) FROM t {SLIDING}",
                             ["WindowAssign"], ["WindowAggregate"]),
    "sliding distinct": (f"SELECT k, SUM(DISTINCT x) FROM t {SLIDING}",
                         ["WindowAssign"], ["WindowAggregate"]),
    "sliding group by": (f"SELECT k, g, SUM(x) FROM t {SLIDING} GROUP BY g",
                         ["WindowAssign"], ["WindowAggregate"]),
    "tumbling is not incremental": ("SELECT k, SUM(x) FROM t WINDOW TUMBLING COUNT(10) "
                                    "OVER (PARTITION BY k ORDER BY seq)",
                                    ["WindowAssign"], ["WindowAggregate"]),
    # ExpandPanes: panes without a replayed watermark are Spark's hopping-window shape.
    "pane expansion": (f"SELECT k, SUM(x) FROM t {PANES}",
                       ["Expand [", "Filter"], ["WindowAssign", "Sort [", "sql_ext_arrival"]),
    # ... and not with a watermark: the replay is one arrival order.
    "pane replay": ("SELECT k, SUM(x) FROM t WINDOW TIME_INTERVAL(10, 5) ON ts "
                    "OVER (PARTITION BY k ORDER BY seq) WATERMARK DELAY 2",
                    ["WindowAssign", "SinglePartition", "sql_ext_arrival"], ["Expand ["]),
}


@pytest.mark.parametrize("case", CASES)
def test_fast_path_plan(spark, case):
    spark.sql(SOURCE).createOrReplaceTempView("t")
    query, present, absent = CASES[case]
    frame = spark.sql(query)
    plan = frame._jdf.queryExecution().executedPlan().toString()
    for text in present:
        assert text in plan, f"{case}: {text!r} missing from\n{plan}"
    for text in absent:
        assert text not in plan, f"{case}: {text!r} in\n{plan}"
    assert frame.count() > 0
