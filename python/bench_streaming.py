"""Streaming benchmarks (issues 4 and 18), run by bench.py: streaming tables against Spark's own
streaming `groupBy(k, window(ts, ...))` of the same shape, over the same Delta source:

- both into Delta, and both into Spark's noop sink (ours through this file's noop_sinks, set as
  the streams' sink wrapper: every micro-batch computed, nothing committed);
- at each size of --stream-sizes, cut both ways: one append per micro-batch (`per-append`,
  maxFilesPerTrigger 1) and all appends in one micro-batch (`backlog`);
- with the state-size curve of each of our runs.

The bench rows have one tuple per key per second (ts = seq DIV keys), so COUNT(100),
DELTA(ts, 99) and window(ts, '100 s') hold the same 100 tuples; PUNCT() is one window per key
per append, against window() of an append's span of event time.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

WATERMARK = "WATERMARK DELAY 5"


def queries(rows: int, parts: int, keys: int) -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """name: (our window clause, our window column, Spark's window() arguments)."""
    span = f"{max(1, rows // parts // keys)} seconds"
    return {
        "TIME_INTERVAL(60, 15)": ("TIME_INTERVAL(60, 15) ON ts OVER (PARTITION BY k) " + WATERMARK,
                                  "PANE_START() AS s", ("60 seconds", "15 seconds")),
        "TUMBLING COUNT(100)": ("TUMBLING COUNT(100) OVER (PARTITION BY k)", "WINDOW_ID() AS w",
                                ("100 seconds",)),
        "TUMBLING DELTA(ts, 99)": ("TUMBLING DELTA(ts, 99) OVER (PARTITION BY k)",
                                   "WINDOW_ID() AS w", ("100 seconds",)),
        "TUMBLING PUNCT()": ("TUMBLING PUNCT() OVER (PARTITION BY k)", "WINDOW_ID() AS w",
                             (span,)),
        "SLIDING COUNT(100) TRIGGER COUNT(10)": (
            "SLIDING COUNT(100) TRIGGER COUNT(10) OVER (PARTITION BY k)", "WINDOW_ID() AS w",
            ("100 seconds", "10 seconds")),
    }


def source(spark, rows: int, parts: int, table: str = "bench") -> tuple[Path, str]:
    """The first `rows` rows of `table` (the bench rows) as `parts` Delta appends in seq order,
    one file each, in a new work folder."""
    work = Path(tempfile.mkdtemp(prefix="sx_stream_bench_"))
    path = str(work / "source")
    for part in range(parts):
        spark.table(table) \
            .where(f"seq >= {part * rows // parts} AND seq < {(part + 1) * rows // parts}") \
            .coalesce(1).write.format("delta").mode("append").save(path)
    return work, path


def reader(spark, path: str, cut: str):
    read = spark.readStream.format("delta")
    if cut == "per-append":
        read = read.option("maxFilesPerTrigger", 1)
    return read.load(path)


class NoopTable:
    """The noop sink of our streams: every micro-batch's rows computed, none committed, as
    Spark's noop sink measures Spark's own streams."""

    def write(self, rows, batch_id: int, upsert: bool, count: int) -> None:
        if count:
            rows.write.format("noop").mode("overwrite").save()


class NoopLateRows:
    """Late rows' files are written by the micro-batch's tasks (as a sink's are); deleted."""

    def __init__(self, late):
        self.late = late

    def commit(self, spark, batch_id: int) -> None:
        self.late.discard(spark, batch_id)


def noop_sinks(table, late):
    """The sink wrapper for sink=noop (sql_ext.streaming.sink.wrap_sinks)."""
    return NoopTable(), (NoopLateRows(late) if late is not None else None)


# Spark's streams with our checkpoint file manager (a reference, not a target): how much of
# our lead on a local disk is Spark's local checkpoint files (sql_ext.streaming.sink).
CHECKPOINT_FILES = "spark.sql.streaming.checkpointFileManagerClass"


def native(spark, path: str, cut: str, work: Path, sink: str, window: tuple[str, ...],
           our_checkpoint_files: bool = False):
    """Spark's own streaming window SUM and MAX, watermark 5 s, into `sink`, AVAILABLE NOW;
    the finished query. `our_checkpoint_files`: with sql-ext's checkpoint file manager."""
    from pyspark.sql import functions as F
    from sql_ext.streaming.sink import STREAM_SETTINGS

    if our_checkpoint_files:
        spark.conf.set(CHECKPOINT_FILES, STREAM_SETTINGS[CHECKPOINT_FILES])
        try:
            return native(spark, path, cut, work, sink, window)
        finally:
            spark.conf.unset(CHECKPOINT_FILES)
    stamp = time.time_ns()
    writer = (reader(spark, path, cut).withWatermark("ts", "5 seconds")
              .groupBy("k", F.window("ts", *window))
              .agg(F.sum("x").alias("total"), F.max("x").alias("top"))
              .writeStream.format(sink).outputMode("append")
              .option("checkpointLocation", str(work / f"ckpt_native_{stamp}"))
              .trigger(availableNow=True))
    if sink == "delta":
        writer = writer.option("path", str(work / f"native_out_{stamp}"))
    query = writer.start()
    query.awaitTermination()
    return query


# The streaming table of the last run of `ours`; each run creates a new one, as a user's
# CREATE STREAMING TABLE does (Spark's side starts a new query into a new path each run).
made: list[str] = []


def drop_earlier(spark) -> None:
    """Drops the tables of earlier runs of `ours` (not timed: a user's CREATE drops nothing)."""
    from sql_ext.streaming import drop_streaming_table

    while made:
        drop_streaming_table(spark, made.pop())


def ours(spark, path: str, cut: str, work: Path, sink: str, clause: str, column: str,
         name: str | None = None, replace: bool = False):
    """Our streaming table into `sink`, a new one (`made[-1]`) unless `name` is given (with
    `replace`: CREATE OR REPLACE); the finished query."""
    from sql_ext.streaming import create_streaming_table
    from sql_ext.streaming.sink import wrap_sinks

    reader(spark, path, cut).createOrReplaceTempView("bench_stream")
    stamp = time.time_ns()
    if name is None:
        name = f"bench_stream_out_{stamp}"
        made.append(name)
    if sink == "noop":
        wrap_sinks(noop_sinks)
    try:
        query = create_streaming_table(
            spark, name,
            f"SELECT k, {column}, SUM(x) AS total, MAX(x) AS top FROM STREAM(bench_stream) "
            f"WINDOW {clause}", checkpoint=str(work / f"ckpt_{stamp}"),
            location=str(work / f"out_{stamp}"), replace=replace)
        query.awaitTermination()
    finally:
        wrap_sinks(None)
    return query


def state_rows(spark) -> list[int]:
    """State rows per micro-batch of the last run of `ours`."""
    from sql_ext.streaming import state_curve

    return [size for _, size in state_curve(spark, made[-1])]


def timed(action, prepare=None) -> tuple[float, float]:
    """(wall seconds of the run, seconds its micro-batches took by Spark's query progress);
    `prepare` runs first, not timed."""
    if prepare is not None:
        prepare()
    start = time.perf_counter()
    query = action()
    wall = time.perf_counter() - start
    return wall, sum(p["durationMs"].get("triggerExecution", 0)
                     for p in query.recentProgress) / 1000


def best(action, repeat: int, prepare=None) -> tuple[float, float]:
    runs = [timed(action, prepare) for _ in range(repeat)]
    return min(r[0] for r in runs), min(r[1] for r in runs)


def benchmark(spark, sizes: list[int], parts: int, keys: int, cuts: list[str],
              only: list[str] | None, repeat: int = 1) -> None:
    """Prints, per size and cut, rows/s of each query on both sides and both sinks (the best
    of `repeat` runs each): by the wall clock of the whole run (ours includes CREATE STREAMING
    TABLE: the Delta table, the catalog entry), and the ratios by the time of the micro-batches
    alone (Spark's triggerExecution, both sides)."""
    for rows in sizes:
        work, path = source(spark, rows, parts)
        chosen = {name: q for name, q in queries(rows, parts, keys).items()
                  if not only or any(word.lower() in name.lower() for word in only)}
        # A warm-up of both sides: the first streaming query of a process pays for class
        # loading, and a backlog run (a few seconds) for compiling its hot code.
        native(spark, path, "backlog", work, "noop", ("100 seconds",))
        clause, column, _ = queries(rows, parts, keys)["TUMBLING COUNT(100)"]
        ours(spark, path, "backlog", work, "noop", clause, column)
        for cut in cuts:
            print(f"Streaming, {rows:,} rows, {keys:,} keys, {parts} appends, {cut} "
                  f"({'one micro-batch per append' if cut == 'per-append' else 'all appends in one micro-batch'}); rows/s")
            print(f"  {'query':<38}{'Spark noop':>11}{'Spark Delta':>12}{'ours noop':>11}"
                  f"{'ours Delta':>11}{'vs noop':>9}{'vs Delta':>9}{'Spark D/n':>10}"
                  f"{'batches: vs noop':>17}{'vs Delta':>9}{'ref: vs Spark+files':>21}"
                  "  state rows")
            for name, (clause, column, window) in chosen.items():
                seconds, curve = {}, None
                for side, sink in [("spark", "noop"), ("ours", "noop"), ("spark", "delta"),
                                   ("ours", "delta"), ("spark+files", "noop")]:
                    if side.startswith("spark"):
                        seconds[side, sink] = best(
                            lambda: native(spark, path, cut, work, sink, window,
                                           our_checkpoint_files=side == "spark+files"),
                            repeat)
                    else:
                        seconds[side, sink] = best(
                            lambda: ours(spark, path, cut, work, sink, clause, column), repeat,
                            prepare=lambda: drop_earlier(spark))
                        curve = state_rows(spark)
                rate = {key: rows / value[0] for key, value in seconds.items()}
                batches = {key: rows / max(value[1], 1e-3) for key, value in seconds.items()}
                print(f"  {name:<38}{rate['spark', 'noop']:>11,.0f}{rate['spark', 'delta']:>12,.0f}"
                      f"{rate['ours', 'noop']:>11,.0f}{rate['ours', 'delta']:>11,.0f}"
                      f"{rate['ours', 'noop'] / rate['spark', 'noop']:>9.2f}"
                      f"{rate['ours', 'delta'] / rate['spark', 'delta']:>9.2f}"
                      f"{rate['spark', 'delta'] / rate['spark', 'noop']:>10.2f}"
                      f"{batches['ours', 'noop'] / batches['spark', 'noop']:>17.2f}"
                      f"{batches['ours', 'delta'] / batches['spark', 'delta']:>9.2f}"
                      f"{rate['ours', 'noop'] / rate['spark+files', 'noop']:>21.2f}  {curve}",
                      flush=True)
            print("  (targets: ours / Spark >= 1.0 both into noop, >= 1.2 both into Delta; "
                  "the reference: ours against Spark's stream given our checkpoint file "
                  "manager, noop)")
        drop_earlier(spark)
        shutil.rmtree(work, ignore_errors=True)


def state_size(query) -> tuple[int, int]:
    """(state rows, state bytes on disk) after the last micro-batch of a finished query."""
    last = next((p for p in reversed(query.recentProgress) if p.get("stateOperators")), None)
    operators = (last or {}).get("stateOperators", [])
    return (sum(op.get("numRowsTotal", 0) for op in operators),
            sum(op.get("customMetrics", {}).get("rocksdbSstFileSize", 0) for op in operators))


def state_growth(spark, rows: int, parts: int, keys: int, only: list[str] | None) -> None:
    """State of every family after 1x and 10x the input (same keys, same event-time rate: the
    bench rows have one tuple per key per second), one append per micro-batch, noop sink."""
    print(f"State after 1x ({rows // 10:,} rows) and 10x ({rows:,} rows) input, {keys:,} keys, "
          f"{parts} appends (target: 10x within 1.2x of 1x)")
    print(f"  {'query':<38}{'rows 1x':>9}{'rows 10x':>10}{'SST KB 1x':>11}{'SST KB 10x':>12}"
          f"{'rows 10x/1x':>13}{'KB 10x/1x':>11}{'held 1x':>9}{'held 10x':>10}")
    sizes = {}
    # Compacted at every commit; under changelog checkpointing (every streaming table's) a
    # commit writes a changelog, so the SST files show what RocksDB flushed when, not the live
    # state: `held` reads what the windows hold from the state itself (window_state).
    compact = "spark.sql.streaming.stateStore.rocksdb.compactOnCommit"
    spark.conf.set(compact, "true")
    for size in (rows // 10, rows):
        work, path = source(spark, size, parts)
        for name, (clause, column, _) in queries(size, parts, keys).items():
            if only and not any(word.lower() in name.lower() for word in only):
                continue
            drop_earlier(spark)
            sizes[name, size] = state_size(
                ours(spark, path, "per-append", work, "noop", clause, column)) + (held(spark),)
        drop_earlier(spark)
        shutil.rmtree(work, ignore_errors=True)
    spark.conf.unset(compact)
    for name in dict.fromkeys(name for name, _ in sizes):
        (rows_1, bytes_1, held_1), (rows_10, bytes_10, held_10) = (sizes[name, rows // 10],
                                                                   sizes[name, rows])
        print(f"  {name:<38}{rows_1:>9,}{rows_10:>10,}{bytes_1 / 1024:>11,.0f}"
              f"{bytes_10 / 1024:>12,.0f}{rows_10 / max(rows_1, 1):>13.2f}"
              f"{bytes_10 / max(bytes_1, 1):>11.2f}{held_1:>9,}{held_10:>10,}", flush=True)


def held(spark) -> int:
    """What the last run's windows hold, read back from its state (window_state): tuples, or
    one per open pane where the window keeps partials instead."""
    return spark.sql("SELECT COALESCE(SUM(COALESCE(tuples, 1)), 0) FROM "
                     f"window_state('{made[-1]}')").first()[0]


def closing_state(spark, rows: int, parts: int) -> None:
    """TIME_INTERVAL state once one tuple an hour later moves the watermark past every pane."""
    from sql_ext.streaming import create_streaming_table

    work, path = source(spark, rows, parts)
    clause, column, _ = queries(rows, parts, 1)["TIME_INTERVAL(60, 15)"]
    sql = (f"SELECT k, {column}, SUM(x) AS total, MAX(x) AS top FROM STREAM(bench_stream) "
           f"WINDOW {clause}")
    reader(spark, path, "per-append").createOrReplaceTempView("bench_stream")
    options = dict(checkpoint=str(work / "ckpt"), location=str(work / "out"))
    drop_earlier(spark)
    made.append("bench_stream_closing")
    create_streaming_table(spark, made[-1], sql, replace=True, **options).awaitTermination()
    spark.read.format("delta").load(path).selectExpr(
        "0L AS seq", "0L AS k", "0.5D AS x",
        "TIMESTAMP_SECONDS(UNIX_SECONDS(MAX(ts)) + 3600) AS ts") \
        .write.format("delta").mode("append").save(path)
    create_streaming_table(spark, made[-1], sql, **options).awaitTermination()
    curve = state_rows(spark)
    print(f"TIME_INTERVAL(60, 15) state rows per micro-batch: {curve}; the last once the "
          "watermark passed every pane (the panes and clock of that one tuple)")
    shutil.rmtree(work, ignore_errors=True)
