"""Small statements, run by bench.py (`--only small`): how long the statements of a small
streaming table take (tens of rows, where the fixed cost of each statement is all there is),
with Delta's snapshot state in one partition (the embedded default) against two (the default
before it), in interleaved rounds in the same session.

Each round makes a Delta table of 30 rows and runs: a windowed batch query over it, CREATE
STREAMING TABLE over it, an append, REFRESH STREAMING TABLE, and a read of the streaming table.
A read after a change computes the table's new snapshot state (Delta's log replay: a few Spark
jobs whatever the table's size); that is what the partitions of the state change. The median of
the rounds counts.
"""

from __future__ import annotations

import statistics
import time
import uuid
from itertools import count

STEPS = ("batch window", "create streaming table", "append", "refresh", "read after refresh")
_tables = count()
_RUN = uuid.uuid4().hex[:6]  # the warehouse may hold an earlier run's tables


def _round(spark) -> dict[str, float]:
    i = f"{_RUN}_{next(_tables)}"
    spark.sql(f"CREATE TABLE small_src{i} (seq BIGINT, k STRING, v DOUBLE) USING DELTA")
    spark.sql(f"INSERT INTO small_src{i} SELECT id, CAST(id % 3 AS STRING), id * 1.5 "
              "FROM range(30)")
    window = "WINDOW TUMBLING COUNT(4) OVER (PARTITION BY k ORDER BY seq)"
    steps = {
        "batch window": lambda: spark.sql(
            f"SELECT k, WINDOW_ID() AS w, SUM(v) FROM small_src{i} {window}").collect(),
        "create streaming table": lambda: spark.sql(
            f"CREATE STREAMING TABLE small_st{i} AS SELECT k, WINDOW_ID() AS w, SUM(v) AS s "
            f"FROM STREAM(small_src{i}) {window}"),
        "append": lambda: spark.sql(f"INSERT INTO small_src{i} SELECT id, CAST(id % 3 AS "
                                    "STRING), id * 1.5 FROM range(30, 60)"),
        "refresh": lambda: spark.sql(f"REFRESH STREAMING TABLE small_st{i}"),
        "read after refresh": lambda: spark.table(f"small_st{i}").collect(),
    }
    took = {}
    for name, step in steps.items():
        started = time.perf_counter()
        step()
        took[name] = time.perf_counter() - started
    spark.sql(f"DROP TABLE small_st{i}")
    spark.sql(f"DROP TABLE small_src{i}")
    return took


def benchmark(spark, rounds: int = 6) -> None:
    key = "spark.databricks.delta.snapshotPartitions"
    default = spark.conf.get(key)
    settings = {"1 partition (default)": "1", "2 partitions (before)": "2"}
    for _ in range(2):  # warm-up: the first statements load and compile classes
        _round(spark)
    times: dict[str, list[dict[str, float]]] = {name: [] for name in settings}
    try:
        for _ in range(rounds):
            for name, partitions in settings.items():
                spark.conf.set(key, partitions)
                times[name].append(_round(spark))
    finally:
        spark.conf.set(key, default)
    print(f"Small statements (30 + 30 rows), Delta snapshot state in 1 vs 2 partitions, "
          f"median of {rounds} interleaved rounds (s)")
    medians = {name: {step: statistics.median(r[step] for r in runs) for step in STEPS}
               for name, runs in times.items()}
    one, two = medians.values()
    for step in STEPS:
        print(f"  {step:24s} {one[step]:6.2f} vs {two[step]:6.2f}  => {one[step] / two[step]:.2f}")
    total_one, total_two = sum(one.values()), sum(two.values())
    print(f"  {'all five':24s} {total_one:6.2f} vs {total_two:6.2f}  => "
          f"{total_one / total_two:.2f}  (target <= 1.0)")
