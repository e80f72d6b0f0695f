"""Python UDAFs inside windowed queries, checked against Spark's built-in aggregates."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sql_ext
from sql_ext.udaf import reduce_windows, segments


@pytest.fixture(scope="module")
def udafs(spark):
    @sql_ext.udaf("double")
    def py_sum(values):
        return reduce_windows(np.add, values)

    @sql_ext.udaf("double")
    def py_max(values):
        return reduce_windows(np.maximum, values)

    @sql_ext.udaf("bigint")
    def py_count(values):
        return pc.list_value_length(values)

    @sql_ext.udaf("double")
    def py_weighted_avg(values, weights):
        x, offsets = segments(values)
        w, _ = segments(weights)
        starts = offsets[:-1]
        return np.add.reduceat(x * w, starts) / np.add.reduceat(w, starts)

    spark.sql("""
        SELECT id AS seq, CAST(id % 7 AS STRING) AS k, id % 2 AS g,
               IF(id % 11 = 0, NULL, CAST((id * 37) % 101 AS DOUBLE)) AS x,
               CAST(id % 3 + 1 AS DOUBLE) AS w
        FROM range(0, 3000)""").createOrReplaceTempView("udaf_input")
    return True


def _rows(spark, sql):
    return sorted(tuple(r) for r in spark.sql(sql).collect())


@pytest.mark.parametrize("window", [
    "TUMBLING COUNT(20) OVER (PARTITION BY k ORDER BY seq)",
    "TUMBLING COUNT(7) OVER (ORDER BY seq)",
    "TUMBLING DELTA(seq, 30) OVER (PARTITION BY k ORDER BY seq)",
])
def test_udafs_equal_builtins(spark, udafs, window):
    got = _rows(spark, f"""
        SELECT WINDOW_ID() AS w, py_sum(x), py_max(x), py_count(x),
               ROUND(py_weighted_avg(x, w), 9)
        FROM udaf_input WINDOW {window} GROUP BY g""")
    want = _rows(spark, f"""
        SELECT WINDOW_ID() AS w, SUM(x), MAX(x), COUNT(x),
               ROUND(SUM(IF(x IS NULL, NULL, x * w)) / SUM(IF(x IS NULL, NULL, w)), 9)
        FROM udaf_input WINDOW {window} GROUP BY g""")
    assert len(got) > 50
    assert got == want


def test_udaf_is_one_call_per_batch_of_windows(spark, udafs):
    plan = spark.sql("SELECT py_sum(x) FROM udaf_input "
                     "WINDOW TUMBLING COUNT(5) OVER (ORDER BY seq)")._jdf.queryExecution()
    text = plan.executedPlan().toString()
    assert "ArrowEvalPython" in text and "collect_list" in text
    assert "AggregateInPandas" not in text and "ArrowAggregatePython" not in text


def test_udaf_in_plain_group_by(spark, udafs):
    got = _rows(spark, "SELECT k, py_sum(x) FROM udaf_input GROUP BY k")
    want = _rows(spark, "SELECT k, SUM(x) FROM udaf_input GROUP BY k")
    assert got == want


def test_reduce_windows_handles_empty_windows():
    lists = pa.array([[1.0, 2.0], [], [5.0]], pa.list_(pa.float64()))
    assert reduce_windows(np.add, lists).to_pylist() == [3.0, None, 5.0]


def test_udaf_code_reaches_executors_without_sql_ext_or_its_module(spark, tmp_path):
    """What Spark ships to a Python worker (the pickled wrapper) loads and runs in a Python
    where neither sql_ext nor the UDAF's own module can be imported."""
    import subprocess
    import sys

    from pyspark import cloudpickle
    from udafs.team_aggregates import team_total

    blob = tmp_path / "udaf.pickle"
    blob.write_bytes(cloudpickle.dumps(team_total.wrappers()[0]))
    worker = subprocess.run([sys.executable, "-c", f"""
import sys
sys.modules["sql_ext"] = None  # import sql_ext raises ImportError, as on a bare worker
sys.modules["udafs"] = None
import pickle
import pyarrow as pa
batched = pickle.loads(open({str(blob)!r}, "rb").read())
print(batched(pa.array([[1.0, 2.0], [3.5], []], type=pa.list_(pa.float64()))).to_pylist())
"""], capture_output=True, text=True, timeout=120)
    assert worker.returncode == 0, worker.stderr[-3000:]
    assert worker.stdout.strip() == "[3.0, 3.5, None]"


def test_a_udaf_defined_after_a_stream_started_reaches_the_users_session(spark):
    """Starting a streaming table (which plans in a session of its own) leaves the user's
    session the one a UDAF defined afterwards registers in."""
    spark.sql("SELECT id AS seq, CAST(id AS DOUBLE) AS x FROM range(0, 9)") \
        .write.mode("overwrite").saveAsTable("udaf_after_stream_src")
    spark.sql("CREATE STREAMING TABLE udaf_after_stream_out AS SELECT COUNT(*) AS n "
              "FROM STREAM(udaf_after_stream_src) WINDOW TUMBLING COUNT(3) OVER (ORDER BY seq)")

    @sql_ext.udaf("double")
    def sum_after_stream(values):
        return reduce_windows(np.add, values)

    query = ("SELECT {f}(x) AS s FROM udaf_after_stream_src "
             "WINDOW TUMBLING COUNT(3) OVER (ORDER BY seq)")
    got = sorted(r.s for r in spark.sql(query.format(f="sum_after_stream")).collect())
    assert got == sorted(r.s for r in spark.sql(query.format(f="SUM")).collect()) == [3, 12, 21]
    spark.sql("DROP STREAMING TABLE udaf_after_stream_out")
