"""A row's way to its window, run by bench.py (`--only latency`): one row appended at a time
to a Delta table, and how long from the INSERT's return until the row is committed in the
target, for a streaming table `TUMBLING COUNT(1) OVER (PARTITION BY k)` (every row closes a
window) against Spark's own stateless `readStream.table(source) -> writeStream.toTable(...)`,
the floor of a Spark micro-batch with the same source and sink, both at a trigger of 0.1 s, in
the same session, one after the other.

The row is committed when the target's Delta log has a new commit (polled every 5 ms from the
file system: a query of the target, which finds it from then on, would cost more than what it
measures). Besides the latencies (p50, p95), per micro-batch with a row: Spark's phases of the
stream (its progress' durationMs), the CPU-seconds of the driver's JVM and of Python, and for
the streaming table the parts of its micro-batch that sql-ext's Python runs (the access rules'
check, the job that computes and observes the firings, the write, the run's figures).

Then each stream alone again, measured as a user who waits for the window's row would: until a
query of the target finds it, polled every 20 ms. And, for each stream alone, a profile of its
small micro-batches: Spark's jobs and stages a micro-batch runs (from Spark's own status store:
each job's wall time, each stage's task CPU) and Java Flight Recorder's samples of the driver's
JVM, summed by the layer they are in (Delta's log and commit, the state store, Catalyst's
analysis, optimization and planning, code generation, Py4J, sql-ext's own code, ...).
"""

from __future__ import annotations

import collections
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

import bench_profile  # beside this script
from sql_ext import jvm
from sql_ext.streaming import runner, runs, sink

LABELS = {"floor": "Spark's stateless Delta -> Delta", "ours": "streaming table COUNT(1)"}
PHASES = ("latestOffset", "getBatch", "queryPlanning", "addBatch", "walCommit",
          "commitOffsets", "triggerExecution")


def commit_files(log: Path) -> list[str]:
    """The names of a Delta table's commit files (none before its first commit)."""
    try:
        return [name for name in os.listdir(log) if name.endswith(".json")]
    except FileNotFoundError:
        return []


def _commits(log: Path) -> int:
    return len(commit_files(log))


def _deadline(started: float, what: str, seconds: float = 120) -> None:
    if time.perf_counter() - started > seconds:
        raise TimeoutError(f"{what}: not within {seconds:.0f} s")


def _cpu(spark) -> float:
    """CPU-seconds so far of the driver's JVM (with the processes it started and waited for)
    and of this Python process."""
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    jvm_seconds = sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return jvm_seconds + sum(os.times()[:2])


class _Parts:
    """Wall time of the parts of a streaming table's micro-batch that sql-ext's Python runs."""

    def __init__(self):
        self.seconds: dict[str, list[float]] = collections.defaultdict(list)
        self._undo = []

    def wrap(self, owner, name: str, part: str) -> None:
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[part].append(time.perf_counter() - started)
        setattr(owner, name, timed)
        self._undo.append((owner, name, original))

    def undo(self) -> None:
        for owner, name, original in reversed(self._undo):
            setattr(owner, name, original)


def _append(spark, source: str, logs: dict[str, Path], value: int) -> dict[str, float]:
    """Appends one row; the seconds until each target's log has a new commit."""
    before = {key: _commits(log) for key, log in logs.items()}
    spark.sql(f"INSERT INTO {source} VALUES ('a', {value})")
    started = time.perf_counter()
    took: dict[str, float] = {}
    while len(took) < len(logs):
        for key, log in logs.items():
            if key not in took and _commits(log) > before[key]:
                took[key] = time.perf_counter() - started
        _deadline(started, f"row {value} committed to {sorted(set(logs) - set(took))}")
        time.sleep(0.005)
    return took


def _found(spark, source: str, target: str, value: int) -> float:
    """Appends one row; the seconds until a query of the target finds it (every 20 ms)."""
    spark.sql(f"INSERT INTO {source} VALUES ('a', {value})")
    started = time.perf_counter()
    while not spark.sql(f"SELECT 1 FROM {target} WHERE v = {value} LIMIT 1").collect():
        _deadline(started, f"row {value} found in {target}")
        time.sleep(0.02)
    return time.perf_counter() - started


def quantiles(values: list[float]) -> tuple[float, float]:
    """(p50, p95)."""
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _phases(progress) -> str:
    means = {phase: statistics.mean(p.durationMs.get(phase, 0) for p in progress)
             for phase in PHASES}
    return ", ".join(f"{phase} {ms:.0f}" for phase, ms in means.items() if ms >= 0.5)


def benchmark(spark, rows: int = 40, trigger: float = 0.1) -> dict:
    run = uuid.uuid4().hex[:6]
    source, floor_table, ours = f"lat_src_{run}", f"lat_floor_{run}", f"lat_win_{run}"
    warehouse = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    spark.sql(f"CREATE TABLE {source} (k STRING, v BIGINT) USING DELTA")
    spark.sql(f"CREATE TABLE {floor_table} (k STRING, v BIGINT) USING DELTA")
    logs = {"floor": warehouse / floor_table / "_delta_log", "ours": warehouse / ours / "_delta_log"}
    print(f"A row to its window: {rows} rows appended one at a time, trigger {trigger} s, both "
          "streams on the same source; then each alone for its CPU")
    parts = _Parts()
    parts.wrap(jvm, "stream_refusal", "access rules' check")
    parts.wrap(ClassicFrame, "localCheckpoint", "firings computed and observed")
    parts.wrap(sink.DeltaSink, "write", "firings written")
    parts.wrap(runner, "_written", "the run's figures")
    checkpoint = tempfile.mkdtemp(prefix="lat-floor-")
    streams = {}
    profiles = {}

    def start(key: str) -> None:
        if key == "floor":
            streams[key] = (spark.readStream.table(source).writeStream.format("delta")
                            .option("checkpointLocation", checkpoint)
                            .trigger(processingTime=f"{trigger} seconds").toTable(floor_table))
        else:
            spark.sql(f"CREATE STREAMING TABLE {ours} TRIGGER EVERY {trigger} AS SELECT k, "
                      f"WINDOW_ID() AS w, MAX(v) AS v FROM STREAM({source}) "
                      "WINDOW TUMBLING COUNT(1) OVER (PARTITION BY k)")
            # The stream runs in a session of its own: its query from sql-ext's registry.
            streams[key] = runs.running(spark, runs.named_entry(spark, ours, "bench")).query

    value = iter(range(10**9))
    latencies: dict[str, list[float]] = {"floor": [], "ours": []}
    alone: dict[str, list[float]] = {"floor": [], "ours": []}
    found: dict[str, list[float]] = {"floor": [], "ours": []}
    cpu: dict[str, float] = {}
    try:
        start("floor")
        start("ours")
        for i in range(rows + 10):  # the first 10: warm-up
            took = _append(spark, source, logs, next(value))
            if i >= 10:
                for key, seconds in took.items():
                    latencies[key].append(seconds)
        progress = {key: [p for p in query.recentProgress if p.numInputRows > 0][-rows:]
                    for key, query in streams.items()}
        for part in parts.seconds.values():
            part.clear()
        for key in ("floor", "ours"):  # each alone: its CPU per row, a profile, found by a query
            other = "ours" if key == "floor" else "floor"
            streams[other].stop()
            if not streams[key].isActive:
                streams[key] = None
                start(key) if key == "floor" else streams.__setitem__(key, _restart(spark, ours))
            for _ in range(3):  # (the restarted stream's first micro-batches)
                _append(spark, source, {key: logs[key]}, next(value))
            used = _cpu(spark)
            for _ in range(rows):
                alone[key].append(_append(spark, source, {key: logs[key]}, next(value))[key])
            cpu[key] = (_cpu(spark) - used) / rows
            since_job = bench_profile.last_job(spark)  # the profile: rows of its own
            with bench_profile.FlightRecording(spark, f"latency-{key}") as recording:
                for _ in range(rows // 2):
                    _append(spark, source, {key: logs[key]}, next(value))
            profiles[key] = (recording, since_job, bench_profile.last_job(spark),
                             str(streams[key].runId))
            target = floor_table if key == "floor" else ours
            for _ in range(rows):
                found[key].append(_found(spark, source, target, next(value)))
    finally:
        parts.undo()
        for query in streams.values():
            if query is not None and query.isActive:
                query.stop()
        spark.sql(f"DROP STREAMING TABLE IF EXISTS {ours}")
        for table in (source, floor_table):
            spark.sql(f"DROP TABLE IF EXISTS {table}")

    for key in ("floor", "ours"):
        p50, p95 = quantiles(latencies[key])
        a50, a95 = quantiles(alone[key])
        q50, q95 = quantiles(found[key])
        print(f"  {LABELS[key]:34s} to the commit, side by side: p50 {p50:.3f} s  p95 {p95:.3f} "
              f"s; alone: p50 {a50:.3f} s  p95 {a95:.3f} s, CPU {cpu[key]:.2f} s a row\n"
              f"  {'':34s} found by a query, alone: p50 {q50:.3f} s  p95 {q95:.3f} s\n"
              f"  {'':34s} micro-batch ms side by side: {_phases(progress[key])}")
    for what, measured in (("to the commit, side by side", latencies), ("to the commit, alone",
                           alone), ("found by a query, alone", found)):
        (f50, f95), (o50, o95) = (quantiles(measured[k]) for k in ("floor", "ours"))
        print(f"  => streaming table / Spark's floor, {what}: p50 {o50 / f50:.2f} (target <= "
              f"1.3), p95 {o95 / f95:.2f} (target <= 1.6)")
    print(f"  => CPU a row, streaming table / Spark's floor: {cpu['ours'] / cpu['floor']:.2f}")
    for key, (recording, since_job, until_job, run_id) in profiles.items():
        bench_profile.print_jobs(f"{LABELS[key]}, alone", spark, run_id, since_job, until_job,
                                 rows // 2)
        bench_profile.print_layers(f"{LABELS[key]}, alone", recording, rows // 2)
    print("  the streaming table's micro-batch, in sql-ext's Python (mean ms): " + ", ".join(
        f"{part} {1000 * statistics.mean(seconds):.0f}"
        for part, seconds in parts.seconds.items() if seconds))
    return {"latencies": latencies, "alone": alone, "cpu": cpu}


def _restart(spark, table: str):
    """The streaming table's stream again (after it was stopped): REFRESH would run one pass;
    an ALTER with the same definition starts it as it was."""
    spark.sql(f"ALTER STREAMING TABLE {table} TRIGGER EVERY 0.1 AS SELECT k, WINDOW_ID() AS w, "
              f"MAX(v) AS v FROM STREAM({table.replace('lat_win', 'lat_src')}) "
              "WINDOW TUMBLING COUNT(1) OVER (PARTITION BY k)")
    return runs.running(spark, runs.named_entry(spark, table, "bench")).query
