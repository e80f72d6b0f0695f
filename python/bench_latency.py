"""Streaming latency (issue 18), run by bench.py: with a trigger every second and rows arriving
at a steady rate, how long after a pane could be complete does its row stand in the Delta table,
for our TIME_INTERVAL table against Spark's own `groupBy(k, window(ts, ...))`, same setup.

A feeder thread writes one Parquet file every FILE_EVERY seconds (rate * FILE_EVERY rows,
event time = the wall clock when the row was made, keys round robin) into a folder both streams
read. A pane [s, e) can fire on time once a row with ts >= e + delay has arrived: its closing
time is when the file holding the first such row was in place. Its row's time is the commit
timestamp of the first Delta version that holds it. Latency = row time - closing time, over
every (key, pane) closed after a warm-up; p50 and p95.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

FILE_EVERY = 0.5
PANE_SECONDS = 5
DELAY_SECONDS = 1
WARM_UP = 10.0


class Feeder(threading.Thread):
    """Writes rate rows/s into `folder` until stopped; remembers (time in place, max ts)."""

    def __init__(self, folder: Path, rate: int, keys: int):
        super().__init__(daemon=True)
        self.folder, self.rate, self.keys = folder, rate, keys
        self.files: list[tuple[float, float]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq

        per_file, seq, last = int(self.rate * FILE_EVERY), 0, time.time()
        while not self.stopping.is_set():
            now = time.time()
            stamps = np.sort(np.random.uniform(last, now, per_file))
            ids = np.arange(seq, seq + per_file)
            table = pa.table({"seq": ids, "k": ids % self.keys,
                              "x": np.random.random(per_file),
                              "ts": pa.array((stamps * 1e6).astype("int64"),
                                             pa.timestamp("us", tz="UTC"))})
            hidden = self.folder / f".part-{len(self.files):06d}.parquet"
            pq.write_table(table, hidden)
            os.rename(hidden, self.folder / f"part-{len(self.files):06d}.parquet")
            self.files.append((time.time(), float(stamps[-1])))
            seq, last = seq + per_file, now
            self.stopping.wait(max(0.0, FILE_EVERY - (time.time() - now)))

    def closing_time(self, pane_end: float) -> float | None:
        """When the first row with ts >= pane_end + delay was in place (None: never)."""
        for placed, top in self.files:
            if top >= pane_end + DELAY_SECONDS:
                return placed
        return None


def _first_seen(spark, path: str, key: str, start: str) -> dict[tuple, float]:
    """(key, pane start in epoch seconds) -> commit time of the first version holding it."""
    from delta.tables import DeltaTable

    history = DeltaTable.forPath(spark, path).history().select("version", "timestamp") \
        .collect()
    seen: dict[tuple, float] = {}
    for version, stamp in sorted(history):
        rows = spark.read.format("delta").option("versionAsOf", version).load(path) \
            .selectExpr(key, f"UNIX_MICROS({start}) / 1e6").collect()
        for k, s in rows:
            seen.setdefault((k, s), stamp.timestamp())
    return seen


def _run(spark, side: str, source, work: Path, seconds: float, feeder: Feeder) -> str:
    """Runs one side for `seconds` of feeding (plus a drain); its output Delta path."""
    from pyspark.sql import functions as F

    from sql_ext.streaming import create_streaming_table

    out = str(work / f"out_{side}")
    if side == "spark":
        query = (source.withWatermark("ts", f"{DELAY_SECONDS} seconds")
                 .groupBy("k", F.window("ts", f"{PANE_SECONDS} seconds"))
                 .agg(F.sum("x").alias("total"), F.max("x").alias("top"))
                 .selectExpr("k", "window.start AS s", "total", "top")
                 .writeStream.format("delta").outputMode("append")
                 .option("checkpointLocation", str(work / "ckpt_spark")).option("path", out)
                 .trigger(processingTime="1 second").start())
    else:
        source.createOrReplaceTempView("latency_in")
        query = create_streaming_table(
            spark, "bench_latency_out",
            "SELECT k, PANE_START() AS s, SUM(x) AS total, MAX(x) AS top FROM STREAM(latency_in) "
            f"WINDOW TIME_INTERVAL({PANE_SECONDS}, {PANE_SECONDS}) ON ts OVER (PARTITION BY k) "
            f"WATERMARK DELAY {DELAY_SECONDS}",
            checkpoint=str(work / "ckpt_ours"), location=out, trigger=1.0, replace=True)
    feeder.start()
    time.sleep(seconds)
    feeder.stopping.set()
    feeder.join()
    time.sleep(2 * PANE_SECONDS)  # the panes closed by the last files reach the table
    query.stop()
    return out


def _latencies(spark, out: str, feeder: Feeder) -> list[float]:
    start_of_feed = feeder.files[0][0]
    result = []
    for (_, pane_start), seen in _first_seen(spark, out, "k", "s").items():
        closed = feeder.closing_time(pane_start + PANE_SECONDS)
        if closed is not None and closed - start_of_feed >= WARM_UP:
            result.append(seen - closed)
    return result


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def benchmark(spark, rate: int = 10_000, keys: int = 1_000, seconds: float = 40.0) -> None:
    """Prints p50/p95 latency (ms) of both sides, TRIGGER EVERY 1 into Delta."""
    from pyspark.sql.types import (DoubleType, LongType, StructField, StructType,
                                   TimestampType)

    schema = StructType([StructField("seq", LongType()), StructField("k", LongType()),
                         StructField("x", DoubleType()), StructField("ts", TimestampType())])
    print(f"Latency, TRIGGER EVERY 1 into Delta, {rate:,} rows/s over {keys:,} keys for "
          f"{seconds:.0f} s, TIME_INTERVAL({PANE_SECONDS}, {PANE_SECONDS}) WATERMARK DELAY "
          f"{DELAY_SECONDS} vs window(ts, '{PANE_SECONDS} seconds'), watermark "
          f"{DELAY_SECONDS} s; ms from a pane's closing row in place to its row in the table")
    figures = {}
    for side in ("spark", "ours"):
        work = Path(tempfile.mkdtemp(prefix="sx_latency_"))
        folder = work / "in"
        folder.mkdir()
        feeder = Feeder(folder, rate, keys)
        source = spark.readStream.schema(schema).parquet(str(folder))
        out = _run(spark, side, source, work, seconds, feeder)
        values = _latencies(spark, out, feeder)
        figures[side] = (_percentile(values, 0.5), _percentile(values, 0.95))
        print(f"  {side:<6} p50 {figures[side][0] * 1000:>7,.0f}  p95 "
              f"{figures[side][1] * 1000:>7,.0f}  ({len(values):,} key panes, "
              f"{len(feeder.files)} files fed)", flush=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"  => ours / Spark p50 {figures['ours'][0] / figures['spark'][0]:.2f}, "
          f"p95 {figures['ours'][1] / figures['spark'][1]:.2f}")


if __name__ == "__main__":
    import argparse

    import sql_ext

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--seconds", type=float, default=40.0)
    args = parser.parse_args()
    session = sql_ext.session(conf={"spark.sql.shuffle.partitions": "8"})
    session.sparkContext.setLogLevel("ERROR")
    benchmark(session, args.rate, args.keys, args.seconds)
    session.stop()
