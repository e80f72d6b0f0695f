"""The TUMBLING conformance cases (tests/fixtures/conformance_cases.json) through spark.sql."""

import pytest
from conformance import CASES, MARKER, case_rows_and_policy


def _policy_sql(case):
    eviction = case["window"]["eviction"]
    kind = eviction["type"]
    if kind == "count":
        return f"COUNT({eviction['size']})"
    if kind == "delta":
        attr = eviction["attribute"].removesuffix("(timestamp)")
        return f"DELTA({attr}, {eviction['delta']})"
    return "PUNCT(is_marker)"


def _expected(case):
    return sorted(
        (e["partition"], e["tuples"]) for e in case["expected"] if e["event"] == "evict")


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_tumbling_case_through_sql(spark, case):
    rows, _, _ = case_rows_and_policy(case)
    window = case["window"]
    attrs = sorted({k for r in rows for k in r if k not in ("id", MARKER)})
    values = []
    for seq, row in enumerate(rows):
        values.append([seq, row.get("id"), bool(row.get(MARKER, False))]
                      + [row.get(a) for a in attrs])
    columns = ["seq", "id", "is_marker", *attrs]
    spark.createDataFrame(values, columns).coalesce(1).createOrReplaceTempView("case_input")
    partition = window.get("partitionBy")
    over = f"OVER ({'PARTITION BY ' + partition if partition else ''} ORDER BY seq)"
    key = partition or "NULL"
    result = spark.sql(f"""
        SELECT {key} AS p, TRANSFORM(ARRAY_SORT(COLLECT_LIST(STRUCT(seq, id))), x -> x.id) AS ids
        FROM case_input WINDOW TUMBLING {_policy_sql(case)} {over}""").collect()
    assert sorted((r.p, list(r.ids)) for r in result) == _expected(case)


def test_seed_sum_of_cost_count4(spark):
    """Seed 003: tumbling count(4) over cost 1..5 emits one sum, 10, and E stays buffered."""
    spark.createDataFrame([(i, float(i)) for i in range(1, 6)], ["seq", "cost"]) \
        .createOrReplaceTempView("costs")
    rows = spark.sql("SELECT SUM(cost) AS s FROM costs "
                     "WINDOW TUMBLING COUNT(4) OVER (ORDER BY seq)").collect()
    assert [r.s for r in rows] == [10.0]
