"""Many small streams on one server, run by bench.py (`--only latency`): N streaming tables
`TUMBLING COUNT(1) OVER (PARTITION BY k)` on one `sql-ext thriftserver`, each fed a row a second
(one INSERT a second of a row for each, into the source they share; each reads its own key),
and one more over a source that gets no rows; beside it the same with Spark's own stateless
`readStream.table(source).where(k = ...) -> writeStream.toTable(...)`, N of them in this
process's session, fed the same way.

A row's latency is from the source's commit that holds it until the target's commit of the first
micro-batch that read that source version, both by their log files' modification times (a
commit's micro-batch is its stream's transaction version; the source versions a micro-batch
read are in its checkpoint's offsets). The idle stream's
micro-batches during the feed are counted from its checkpoint's offsets.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from pathlib import Path

from pyhive import hive

from bench_row_latency import commit_files, quantiles
from sql_ext.server.thrift import free_port
from thrift_load import start_server, stop_server


def _batch_of(log: Path, file: str) -> int | None:
    """The stream's micro-batch a commit of its target recorded (its transaction version)."""
    for line in (log / file).read_text().splitlines():
        action = json.loads(line)
        if "txn" in action:
            return int(action["txn"]["version"])
    return None


def _offset_end(checkpoint: Path, batch: int) -> tuple[int, int]:
    """Where micro-batch `batch` of the stream at `checkpoint` ended in its Delta source:
    (reservoirVersion, index)."""
    offset = json.loads((checkpoint / "offsets" / str(batch)).read_text().splitlines()[-1])
    return int(offset["reservoirVersion"]), int(offset["index"])


def _covers(end: tuple[int, int], version: int) -> bool:
    """Whether a micro-batch that ended at `end` read source version `version` (Delta's source
    offset: versions before reservoirVersion whole, and reservoirVersion itself up to file
    `index` when index >= 0)."""
    reservoir, index = end
    return version < reservoir or (version == reservoir and index >= 0)


def _committed(log: Path, version: int) -> float:
    """When version `version` of a Delta table was committed: its log file's modification time
    (Delta writes a commit to a temporary file and renames it into place)."""
    return (log / f"{version:020d}.json").stat().st_mtime_ns / 1e9


def _latencies(logs: dict[str, Path], checkpoints: dict[str, Path], source_log: Path,
               versions: range) -> dict[str, list[float]]:
    """Each target's latency of each source version: from the source's commit to the target's
    commit of the first micro-batch that read it."""
    out = {}
    for name, log in logs.items():
        commits = sorted((_committed(log, int(file[:-5])), _batch_of(log, file))
                         for file in commit_files(log))
        # Each commit's micro-batch's end in the source, read once.
        ends = [(at, _offset_end(checkpoints[name], batch)) for at, batch in commits
                if batch is not None]
        found = []
        for version in versions:
            at = next((at for at, end in ends if _covers(end, version)), None)
            if at is not None:
                found.append(at - _committed(source_log, version))
        out[name] = found
    return out


def _offsets(checkpoint: Path) -> int:
    folder = checkpoint / "offsets"
    return sum(1 for name in os.listdir(folder) if name.isdigit()) if folder.is_dir() else 0


def _feed(execute, source: str, streams: int, seconds: int) -> float:
    """One INSERT a second of a row for each stream's key (later when an INSERT takes longer);
    the seconds it took."""
    started = time.perf_counter()
    for second in range(seconds):
        wait = started + second - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        rows = ", ".join(f"('k{i}', {second})" for i in range(streams))
        execute(f"INSERT INTO {source} VALUES {rows}")
    return time.perf_counter() - started


def _measure(execute, source: str, logs: dict[str, Path], checkpoints: dict[str, Path],
             source_log: Path, idle: Path, streams: int, seconds: int) -> dict:
    for second in range(3):  # warm-up: the streams' first micro-batches (source versions 1-3)
        execute(f"INSERT INTO {source} VALUES " +
                ", ".join(f"('k{i}', {-1 - second})" for i in range(streams)))
    time.sleep(5)
    idle_before = _offsets(idle)
    fed = _feed(execute, source, streams, seconds)  # source versions 4 to seconds + 3
    versions = range(4, seconds + 4)
    deadline = time.perf_counter() + 60
    while time.perf_counter() < deadline and not all(
            len(found) == len(versions)
            for found in _latencies(logs, checkpoints, source_log, versions).values()):
        time.sleep(1)
    return {"latencies": _latencies(logs, checkpoints, source_log, versions),
            "idle_batches": _offsets(idle) - idle_before, "rows": len(versions),
            "rows_a_second": len(versions) / fed}


def _window(name: str, source: str, key: str, trigger: float, checkpoint: Path) -> str:
    return (f"CREATE STREAMING TABLE {name} CHECKPOINT '{checkpoint}' TRIGGER EVERY {trigger} "
            f"AS SELECT k, WINDOW_ID() AS w, MAX(v) AS v FROM STREAM({source}) "
            f"WHERE k = '{key}' WINDOW TUMBLING COUNT(1) OVER (PARTITION BY k)")


def ours(streams: int, seconds: int, trigger: float) -> dict:
    """The streaming tables on a Thrift server of their own."""
    with tempfile.TemporaryDirectory(prefix="sql_ext_many_") as work:
        work = Path(work)
        warehouse = work / "warehouse"
        port = free_port()
        server = start_server(warehouse, port, work / "server.log")
        try:
            with hive.connect(host="127.0.0.1", port=port) as conn:
                cursor = conn.cursor()
                cursor.execute("CREATE TABLE many_src (k STRING, v BIGINT) USING DELTA")
                cursor.execute("CREATE TABLE idle_src (k STRING, v BIGINT) USING DELTA")
                checkpoints = {f"many_{i}": work / "checkpoints" / f"many_{i}"
                               for i in range(streams)}
                for i in range(streams):
                    cursor.execute(_window(f"many_{i}", "many_src", f"k{i}", trigger,
                                           checkpoints[f"many_{i}"]))
                idle = work / "checkpoints" / "idle"
                cursor.execute(_window("many_idle", "idle_src", "k0", trigger, idle))
                logs = {name: warehouse / name / "_delta_log" for name in checkpoints}
                return _measure(cursor.execute, "many_src", logs, checkpoints,
                                warehouse / "many_src" / "_delta_log", idle, streams, seconds)
        finally:
            stop_server(server)


def spark_own(spark, streams: int, seconds: int, trigger: float) -> dict:
    """Spark's own stateless Delta -> Delta streams in this process's session."""
    work = Path(tempfile.mkdtemp(prefix="spark_many_"))
    warehouse = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:"))
    run = uuid.uuid4().hex[:6]
    source, idle_source = f"many_src_{run}", f"idle_src_{run}"
    targets = [f"spark_many_{run}_{i}" for i in range(streams)]
    tables = [source, idle_source, f"spark_idle_{run}", *targets]
    for table in tables:
        spark.sql(f"CREATE TABLE {table} (k STRING, v BIGINT) USING DELTA")
    queries = []

    def stream(source_table: str, key: str | None, checkpoint: Path, target: str) -> None:
        frame = spark.readStream.table(source_table)
        frame = frame.where(f"k = '{key}'") if key else frame
        queries.append(frame.writeStream.format("delta")
                       .option("checkpointLocation", str(checkpoint))
                       .trigger(processingTime=f"{trigger} seconds").toTable(target))
    try:
        checkpoints = {target: work / target for target in targets}
        for i, target in enumerate(targets):
            stream(source, f"k{i}", checkpoints[target], target)
        stream(idle_source, None, work / "idle", f"spark_idle_{run}")
        logs = {target: warehouse / target / "_delta_log" for target in targets}
        return _measure(spark.sql, source, logs, checkpoints, warehouse / source / "_delta_log",
                        work / "idle", streams, seconds)
    finally:
        for query in queries:
            query.stop()
        for table in tables:
            spark.sql(f"DROP TABLE IF EXISTS {table}")


def benchmark(spark, streams: int = 20, seconds: int = 60, trigger: float = 0.1) -> dict:
    print(f"Many small streams: {streams} streams, each fed a row a second for {seconds} s "
          f"(trigger {trigger} s), and one idle stream")
    results = {"Spark's stateless Delta -> Delta, one session": spark_own(
        spark, streams, seconds, trigger),
        "streaming tables, one Thrift server": ours(streams, seconds, trigger)}
    for label, figures in results.items():
        per_table = [quantiles(values) for values in figures["latencies"].values() if values]
        every = [v for values in figures["latencies"].values() for v in values]
        missing = sum(figures["rows"] - len(v) for v in figures["latencies"].values())
        p50, p95 = quantiles(every)
        worst = max(p95 for _, p95 in per_table)
        print(f"  {label:48s} fed {figures['rows_a_second']:.2f} rows a second a table; all "
              f"rows: p50 {p50:.2f} s  p95 {p95:.2f} s; the worst table's p95 {worst:.2f} s "
              f"(target <= 2); the idle stream's micro-batches: {figures['idle_batches']}; rows "
              f"not found {missing}")
    return results
