"""Where a driver's time goes, for the benchmarks: Java Flight Recorder's CPU samples of the
driver's JVM summed by the layer they are in, and the Spark jobs and stages a stream's
micro-batches ran, from Spark's own status store (kept also when the UI is off).
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

# A sample counts for every layer one of whose frames it holds (so the shares overlap: a Delta
# commit's Catalyst planning counts for both). First the pieces of a micro-batch, then what
# runs under them.
LAYERS = {
    "Spark's stream execution (offsets, planning a batch, checkpoint)":
        ("org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution",
         "org.apache.spark.sql.execution.streaming.MicroBatchExecution"),
    "the Python callback (foreachBatch, Py4J)": ("py4j.",),
    "Delta: source (offsets, files of a version)":
        ("org.apache.spark.sql.delta.sources.DeltaSource",),
    "Delta: log listing, replay and snapshots": ("org.apache.spark.sql.delta.SnapshotManagement",
                                                 "org.apache.spark.sql.delta.Snapshot."),
    "Delta: a write and its commit": ("org.apache.spark.sql.delta.OptimisticTransaction",
                                      "org.apache.spark.sql.delta.files.TransactionalWrite",
                                      "org.apache.spark.sql.delta.commands.WriteIntoDelta",
                                      "org.apache.spark.sql.delta.sources.DeltaSink"),
    "state store": ("org.apache.spark.sql.execution.streaming.state.",),
    "Catalyst: analysis": ("org.apache.spark.sql.catalyst.analysis.",),
    "Catalyst: optimizer": ("org.apache.spark.sql.catalyst.optimizer.",),
    "physical planning and preparation": ("org.apache.spark.sql.execution.SparkStrategies",
                                          "org.apache.spark.sql.execution.QueryExecution$."
                                          "createSparkPlan",
                                          "org.apache.spark.sql.execution.QueryExecution$."
                                          "prepareForExecution"),
    "code generation (Janino)": ("org.codehaus.janino.", "org.codehaus.commons.compiler."),
    "sql-ext's JVM code": ("io.sqlext.",),
    "tasks (executor threads)": ("org.apache.spark.executor.Executor$TaskRunner",),
    "Parquet": ("org.apache.parquet.",),
    "Hadoop file system": ("org.apache.hadoop.fs.",),
    "JSON (Jackson)": ("com.fasterxml.jackson.",),
    "scheduler (DAG and tasks)": ("org.apache.spark.scheduler.",),
}


class FlightRecording:
    """A JFR recording of the driver's JVM (jcmd, the JDK's) while the block runs."""

    def __init__(self, spark, name: str):
        self.pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        self.name = name
        self.file = Path(tempfile.mkdtemp(prefix="jfr-")) / f"{name}.jfr"

    def __enter__(self):
        self.threads_before = thread_cpu(self.pid)
        subprocess.run(["jcmd", str(self.pid), "JFR.start", f"name={self.name}",
                       "settings=profile", f"filename={self.file}"],
                       check=True, capture_output=True)
        return self

    def __exit__(self, *exc):
        subprocess.run(["jcmd", str(self.pid), "JFR.stop", f"name={self.name}"],
                       check=True, capture_output=True)
        after = thread_cpu(self.pid)
        self.thread_seconds = collections.Counter()
        for tid, (name, seconds) in after.items():
            self.thread_seconds[_thread_group(name)] += seconds - self.threads_before.get(
                tid, (name, 0.0))[1]

    def layers(self) -> tuple[int, dict[str, int], dict[str, int]]:
        """(samples, samples per layer, samples per thread kind)."""
        out = subprocess.run(["jfr", "print", "--json", "--stack-depth", "256", "--events",
                              "jdk.ExecutionSample", str(self.file)],
                             check=True, capture_output=True, text=True).stdout
        events = json.loads(out)["recording"]["events"]
        per_layer: collections.Counter = collections.Counter()
        per_thread: collections.Counter = collections.Counter()
        for event in events:
            frames = [f"{frame['method']['type']['name']}.{frame['method']['name']}"
                      for frame in event["values"]["stackTrace"]["frames"]]
            for layer, prefixes in LAYERS.items():
                if any(frame.startswith(prefixes) for frame in frames):
                    per_layer[layer] += 1
            per_thread[_thread_kind(event["values"]["sampledThread"]["javaName"] or "")] += 1
        os.remove(self.file)
        return len(events), dict(per_layer), dict(per_thread)


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """Each thread of process `pid`: (its name as the kernel keeps it, CPU-seconds so far)."""
    tick = os.sysconf("SC_CLK_TCK")
    threads = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            head, fields = (task / "stat").read_text().rsplit(")", 1)
        except OSError:  # ended meanwhile
            continue
        values = fields.split()
        threads[int(task.name)] = (head.split("(", 1)[1],
                                   (int(values[11]) + int(values[12])) / tick)
    return threads


def _thread_group(name: str) -> str:
    """A kernel thread name (15 characters) without its numbers: JIT compilers, GC, tasks..."""
    return re.sub(r"[\d#-]+$", "", re.sub(r"\d+", "#", name)).strip() or name


def _thread_kind(name: str) -> str:
    for prefix, kind in (("stream execution thread", "the stream's thread"),
                         ("Executor task launch worker", "task threads"),
                         ("dag-scheduler", "scheduler"), ("Thread-", "Py4J calls")):
        if name.startswith(prefix):
            return kind
    return re.sub(r"[\d-]+", "#", name)[:40]


def print_layers(title: str, recording: FlightRecording, rows: int) -> None:
    samples, per_layer, per_thread = recording.layers()
    if not samples:
        print(f"  {title}: no samples")
        return
    print(f"  {title}: {samples} JFR samples of the driver's JVM ({samples / rows:.0f} a row); "
          "share of the samples by thread: " + ", ".join(
              f"{kind} {100 * n / samples:.0f}%" for kind, n in
              sorted(per_thread.items(), key=lambda item: -item[1])[:8]))
    total = sum(recording.thread_seconds.values())
    print(f"    CPU of the driver's JVM by thread (from /proc; {total / rows:.2f} s a row): " +
          ", ".join(f"{name} {seconds / rows:.3f}" for name, seconds in
                    recording.thread_seconds.most_common(10) if seconds > 0))
    print("    by layer (a sample counts for each layer on its stack): " + ", ".join(
        f"{layer} {100 * n / samples:.0f}%" for layer, n in
        sorted(per_layer.items(), key=lambda item: -item[1]) if n / samples >= 0.01))


def last_job(spark) -> int:
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)
    return max((jobs.apply(i).jobId() for i in range(jobs.size())), default=-1)


def _plan_heads(spark) -> dict[int, str]:
    """Job id -> the first operator of its SQL execution's physical plan (below AQE's root)."""
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    heads = {}
    for i in range(executions.size()):
        execution = executions.apply(i)
        lines = execution.physicalPlanDescription().split("== Physical Plan ==")[-1].splitlines()
        operators = [re.sub(r"^[\s+\-:*()\d]*", "", line) for line in lines if line.strip()]
        operators = [o for o in operators if not o.startswith(("AdaptiveSparkPlan", "=="))]
        head = re.sub(r"#\d+L?|\[plan_id=\d+\]", "", operators[0] if operators else "?")[:70]
        jobs = execution.jobs().keys().toList()
        for j in range(jobs.size()):
            heads[int(jobs.apply(j))] = head
    return heads


def print_jobs(title: str, spark, run_id: str, since_job: int, until_job: int,
               batches: int) -> None:
    """The jobs of the stream `run_id` after `since_job` up to `until_job`, over `batches`
    micro-batches: how many a micro-batch runs, and the
    wall time and task CPU of each kind (by its description, or its SQL execution's plan)."""
    store = spark.sparkContext._jsc.sc().statusStore()
    jobs = store.jobsList(None)
    gateway = spark.sparkContext._gateway
    stages = store.stageList(None, False, False, gateway.new_array(gateway.jvm.double, 0), None)
    cpu_ms = collections.Counter()
    for i in range(stages.size()):
        stage = stages.apply(i)
        cpu_ms[stage.stageId()] += stage.executorCpuTime() / 1e6
    heads = _plan_heads(spark)
    kinds: dict[str, list[float]] = collections.defaultdict(list)
    kind_cpu: collections.Counter = collections.Counter()
    count = 0
    for i in range(jobs.size()):
        job = jobs.apply(i)
        group = job.jobGroup()
        if not since_job < job.jobId() <= until_job or group.isEmpty() \
                or group.get() != run_id:
            continue
        if job.submissionTime().isEmpty() or job.completionTime().isEmpty():
            continue
        count += 1
        described = job.description()
        text = described.get() if described.isDefined() else ""
        kind = text.strip().splitlines()[0][:60] if text and "batch =" not in text else \
            heads.get(job.jobId(), job.name())
        kinds[kind].append(job.completionTime().get().getTime()
                           - job.submissionTime().get().getTime())
        ids = job.stageIds()
        kind_cpu[kind] += sum(cpu_ms[ids.apply(j)] for j in range(ids.size()))
    if not count:
        print(f"  {title}: no jobs found")
        return
    print(f"  {title}: {count / batches:.1f} Spark jobs a micro-batch; each kind's jobs a "
          "micro-batch, wall ms a job, task CPU ms a job:")
    for kind, walls in sorted(kinds.items(), key=lambda item: -sum(item[1])):
        print(f"    {len(walls) / batches:4.1f} x {sum(walls) / len(walls):6.0f} ms wall, "
              f"{kind_cpu[kind] / len(walls):6.0f} ms CPU  {kind}")
