"""Where a streaming table's time goes (issue 18): one streaming query over the bench source,
ours or Spark's native window, with Spark's event log and Java Flight Recorder on.

    bash python/dev.sh profile [--rows 2000000] [--parts 4] [--cut per-append|backlog]
                               [--query panes|tumbling|delta|punct|sliding]
                               [--native] [--sink delta|noop] [--jfr]

Prints, per micro-batch, Spark's own phases (queryProgress durationMs: latestOffset,
queryPlanning, addBatch, walCommit, commitOffsets), the state operator's metrics, then the
stages of all micro-batches grouped by what they ran (wall time, task time, rows, shuffle), and
with --jfr the hottest JVM frames (CPU samples of the driver/executor JVM, local mode).
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import sql_ext  # noqa: E402

import bench  # noqa: E402 - beside this script: the bench's data
import bench_streaming  # noqa: E402 - and its streaming source, queries and runs

# The profile's names for the bench's streaming queries.
QUERIES = {"panes": "TIME_INTERVAL(60, 15)", "tumbling": "TUMBLING COUNT(100)",
           "delta": "TUMBLING DELTA(ts, 99)", "punct": "TUMBLING PUNCT()",
           "sliding": "SLIDING COUNT(100) TRIGGER COUNT(10)"}


def batches(stream) -> None:
    print(f"{'batch':>5} {'rows':>9} {'trigger':>8} {'addBatch':>9} {'plan':>6} {'offsets':>8}"
          f" {'wal':>5} {'commit':>7}   state: rows, update ms, commit ms")
    for p in stream.recentProgress:
        d = p["durationMs"]
        states = "; ".join(
            f"{s['numRowsTotal']}, {s.get('allUpdatesTimeMs', 0)}, {s.get('commitTimeMs', 0)}"
            for s in p.get("stateOperators", []))
        print(f"{p['batchId']:>5} {p['numInputRows']:>9} {d.get('triggerExecution', 0):>8}"
              f" {d.get('addBatch', 0):>9} {d.get('queryPlanning', 0):>6}"
              f" {d.get('latestOffset', 0):>8} {d.get('walCommit', 0):>5}"
              f" {d.get('commitOffsets', 0):>7}   {states}")


def stages(log_dir: Path, since_ms: float = 0) -> None:
    """Stages of the event log submitted from `since_ms` on, grouped by name (call site): wall
    ms, task ms, records."""
    logs = sorted(f for f in log_dir.rglob("*") if f.is_file() and "events" in f.name)
    if not logs:
        return
    groups: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0, 0, 0, 0])
    for line in (line for log in logs for line in log.read_text().splitlines()):
        event = json.loads(line)
        if event.get("Event") != "SparkListenerStageCompleted":
            continue
        info = event["Stage Info"]
        if info.get("Submission Time", 0) < since_ms:
            continue
        name = info["Stage Name"].split(" at ")[0] + f" ({info['Number of Tasks']} tasks)"
        rdds = [r["Name"] for r in info.get("RDD Info", [])]
        name += " [" + ", ".join(sorted(set(rdds))[:3]) + "]"
        metrics = {a["Name"]: a.get("Value", 0) for a in info.get("Accumulables", [])}
        g = groups[name]
        g[0] += 1
        g[1] += info.get("Completion Time", 0) - info.get("Submission Time", 0)
        g[2] += float(metrics.get("internal.metrics.executorRunTime", 0))
        g[3] += int(metrics.get("internal.metrics.input.recordsRead", 0))
        g[4] += int(metrics.get("internal.metrics.shuffle.write.recordsWritten", 0))
        g[5] += int(metrics.get("internal.metrics.shuffle.read.recordsRead", 0))
    print(f"\n{'stages':<90}{'n':>4}{'wall ms':>9}{'task ms':>9}{'in':>10}{'sh.out':>9}"
          f"{'sh.in':>9}")
    for name, g in sorted(groups.items(), key=lambda item: -item[1][1]):
        print(f"{name[:89]:<90}{g[0]:>4}{g[1]:>9.0f}{g[2]:>9.0f}{g[3]:>10}{g[4]:>9}{g[5]:>9}")


def fine_jfc(work: Path) -> Path:
    """The JDK's `profile` recording settings with CPU samples every millisecond (not 10 ms):
    a micro-batch of a few seconds gets enough samples to tell its parts apart."""
    java_home = Path(subprocess.run(["java", "-XshowSettings:properties", "-version"],
                                    capture_output=True, text=True).stderr.split(
        "java.home = ")[1].splitlines()[0].strip())
    settings = (java_home / "lib" / "jfr" / "profile.jfc").read_text()
    fine = work / "fine.jfc"
    fine.write_text(settings.replace(
        '<setting name="period" control="method-sampling-java-interval">10 ms</setting>',
        '<setting name="period" control="method-sampling-java-interval">1 ms</setting>'))
    return fine


def hot_frames(recording: Path, top: int = 40) -> None:
    """Top frames (self time) and top project/Spark frames (inclusive) of the CPU samples."""
    printed = subprocess.run(["jfr", "print", "--events", "jdk.ExecutionSample", "--stack-depth",
                              "64", str(recording)], capture_output=True, text=True).stdout
    own, inclusive = collections.Counter(), collections.Counter()
    samples = 0
    for block in printed.split("jdk.ExecutionSample")[1:]:
        frames = [line.strip().split("(")[0] for line in block.splitlines()
                  if "line:" in line]
        if not frames:
            continue
        samples += 1
        own[frames[0]] += 1
        for frame in set(frames):
            if frame.startswith(("io.sqlext", "org.apache.spark.sql.execution",
                                 "org.apache.spark.sql.delta", "org.rocksdb")):
                inclusive[frame] += 1
    print(f"\nJFR: {samples} CPU samples; self time")
    for frame, n in own.most_common(top):
        print(f"  {100 * n / samples:5.1f}%  {frame}")
    print("inclusive (io.sqlext, spark.sql.execution, delta, rocksdb)")
    for frame, n in inclusive.most_common(top):
        print(f"  {100 * n / samples:5.1f}%  {frame}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--parts", type=int, default=4)
    parser.add_argument("--cut", choices=["per-append", "backlog"], default="per-append")
    parser.add_argument("--query", choices=sorted(QUERIES), default="panes")
    parser.add_argument("--native", action="store_true", help="Spark's own window instead")
    parser.add_argument("--sink", choices=["delta", "noop"], default="delta")
    parser.add_argument("--jfr", action="store_true")
    parser.add_argument("--late", action="store_true",
                        help="issue 17: 5%% of the rows late, kept by LATE ROWS INTO")
    parser.add_argument("--conf", action="append", default=[], help="KEY=VALUE, repeated")
    parser.add_argument("--warmup", type=int, default=0,
                        help="runs of the same query before the profiled one (JIT, classes)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sx_profile_"))
    events = work / "events"
    events.mkdir()
    recording = work / "cpu.jfr"
    conf = {"spark.sql.shuffle.partitions": "8", "spark.driver.memory": "8g",
            "spark.eventLog.enabled": "true", "spark.eventLog.dir": str(events),
            "spark.eventLog.compress": "false"}
    conf.update(item.split("=", 1) for item in args.conf)
    spark = sql_ext.session(warehouse=work / "warehouse", conf=conf)
    spark.sparkContext.setLogLevel("ERROR")
    bench.make_data(spark, args.rows, 1000)
    table = "bench"
    if args.late:  # as bench_late.py: one row in 20 is 10,000 s late
        spark.sql("CREATE OR REPLACE TEMP VIEW bench_with_late AS SELECT seq, k, x, "
                  "IF(seq % 20 = 0, ts - INTERVAL 10000 SECONDS, ts) AS ts FROM bench")
        table = "bench_with_late"
    source_work, path = bench_streaming.source(spark, args.rows, args.parts, table)
    clause, column, window = bench_streaming.queries(args.rows, args.parts, 1000)[
        QUERIES[args.query]]
    if args.late:
        clause += " LATE ROWS INTO profile_late_rows"

    def run():
        return bench_streaming.native(spark, path, args.cut, work, args.sink, window) \
            if args.native else \
            bench_streaming.ours(spark, path, args.cut, work, args.sink, clause, column)
    for _ in range(args.warmup):
        run()
    since_ms = time.time() * 1000  # the stages of the profiled run only
    if args.jfr:
        pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        subprocess.run(["jcmd", str(pid), "JFR.start", "name=sx", f"settings={fine_jfc(work)}",
                        f"filename={recording}"], check=True, capture_output=True)
    started = time.perf_counter()
    stream = run()
    wall = time.perf_counter() - started
    if args.jfr:
        subprocess.run(["jcmd", str(pid), "JFR.stop", "name=sx"], check=True,
                       capture_output=True)
    who = "Spark native window" if args.native else "sql_ext"
    print(f"{who} {args.query} -> {args.sink}: {args.rows:,} rows in {args.parts} appends, "
          f"{wall:.2f} s, {args.rows / wall:,.0f} rows/s")
    batches(stream)
    spark.stop()
    stages(events, since_ms)
    if args.jfr:
        hot_frames(recording)
        kept = Path(tempfile.gettempdir()) / "sx_profile_cpu.jfr"
        shutil.copy(recording, kept)
        print(f"CPU recording: {kept}")
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(source_work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
