"""Exactly once across a crash: a driver process running streaming tables is killed with
SIGKILL and restarted on the same checkpoints, and each Delta table must equal its oracle row
for row: nothing lost, nothing doubled, late re-firings replacing their panes, every late row
of LATE ROWS INTO once.

Two ways to kill: at chosen points of a micro-batch (its MERGE committed and its offsets not;
its firings committed and its late rows not), and at random moments while feeders append. One
driver process runs all the streaming tables of a way at once, each stopped at its own point:
a kill then hits every one of them where it stands, as separate drivers would, for a fraction
of the processes."""

import datetime
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from scale import size
from stream_driver import MARKERS
from test_late_rows import _streamed_late, _streaming_late_oracle
from test_streaming import T0, _expected

DRIVER = Path(__file__).resolve().parent / "stream_driver.py"
BATCHES = [
    [{"id": 0, "k": "a", "ts": 103, "v": 1.0}, {"id": 1, "k": "b", "ts": 107, "v": 2.0}],
    [{"id": 2, "k": "a", "ts": 112, "v": 4.0}, {"id": 3, "k": "b", "ts": 104, "v": 8.0}],
    [{"id": 4, "k": "a", "ts": 104, "v": 16.0}, {"id": 5, "k": "a", "ts": 131, "v": 32.0}],
    [{"id": 6, "k": "b", "ts": 122, "v": 64.0}, {"id": 7, "k": "a", "ts": 160, "v": 1.0}],
]


def _driver(folder: Path, streams: list[dict], env: dict) -> subprocess.Popen:
    """stream_driver.py running `streams` in a process group of its own (the Python process
    and the JVM it launched)."""
    spec = folder / "streams.json"
    spec.write_text(json.dumps(streams))
    return subprocess.Popen([sys.executable, str(DRIVER), str(folder / "warehouse"), str(spec)],
                            env=env, cwd=folder, stdout=subprocess.DEVNULL,
                            stderr=open(folder / "driver.log", "a"), start_new_session=True)


def _log(folder: Path) -> str:
    return (folder / "driver.log").read_text()[-3000:]


def _kill(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    time.sleep(1)  # let the kernel reap the JVM too


def _run_to_end(folder: Path, streams: list[dict], env: dict) -> None:
    process = _driver(folder, streams, env)
    assert process.wait(timeout=300) == 0, _log(folder)


def _stream(folder: Path, name: str, query: str, **more) -> dict:
    return {"name": name, "query": query, "source": str(folder / f"{name}_source"),
            "sink": str(folder / f"{name}_sink"), "checkpoint": str(folder / f"{name}_ckpt"),
            **more}


def _append_events(spark, path: str, batches) -> None:
    for batch in batches:  # one Delta version (one file) per micro-batch
        spark.createDataFrame(
            [(r["id"], r["k"], T0 + datetime.timedelta(seconds=r["ts"]), r["v"]) for r in batch],
            "id long, k string, event_time timestamp, v double").coalesce(1) \
            .write.format("delta").mode("append").save(path)


# The fault points: (stream, query, fault, LATE ROWS INTO table). "written": after the batch's
# commits, before Spark commits its offsets; "firings": after the firings' commit, before the
# late rows'. Batch 1 is the first with a late tuple (104 under the watermark 105), and the
# second of TUMBLING COUNT(20), whose first batch left 6 tuples in the window state.
FAULTS = [("panes", "panes", {}, None), ("pane_partials", "pane_partials", {}, None),
          ("count20", "count20", {"batch": 1}, None),
          ("late_firings", "late_partials", {"batch": 1, "stage": "firings"}, "late_rows_firings"),
          ("late_written", "late_partials", {"batch": 1, "stage": "written"}, "late_rows_written")]


@pytest.fixture(scope="module")
def killed_at_fault_points(spark, tmp_path_factory):
    """Every stream of FAULTS in one driver, each stopped at its point; the driver killed once
    all are, then run again to the end: (the folder, {stream: the batch it stopped in})."""
    folder = tmp_path_factory.mktemp("fault_points")
    streams, faults = [], {}
    for name, query, fault, late in FAULTS:
        stream = _stream(folder, name, query, **({"late": late} if late else {}))
        streams.append(stream)
        faults[stream["sink"]] = {"pause": str(folder / f"{name}.paused"), **fault}
        if name == "count20":  # appends of 6, 14, 25 and 16 tuples
            start = 0
            for rows in (6, 14, 25, 16):
                spark.createDataFrame([(i, "a", 1.0) for i in range(start, start + rows)],
                                      "id long, k string, v double").coalesce(1) \
                    .write.format("delta").mode("append").save(stream["source"])
                start += rows
        else:
            _append_events(spark, stream["source"], BATCHES)
    process = _driver(folder, streams, dict(os.environ, SQL_EXT_FAULTS=json.dumps(faults)))
    try:
        deadline = time.monotonic() + 300
        while not all(os.path.exists(fault["pause"]) for fault in faults.values()):
            assert process.poll() is None, _log(folder)
            assert time.monotonic() < deadline, "a stream never reached its fault point"
            time.sleep(0.2)
    finally:
        _kill(process)
    stopped = {name: int((folder / f"{name}.paused").read_text()) for name, *_ in FAULTS}
    _run_to_end(folder, streams, dict(os.environ))
    return folder, stopped


def _pane_rows(row, query):
    """A sink row as the oracle's (tuples), or its partials (pane_partials)."""
    pane = (row.k, (row.s - T0).total_seconds(), row.t, row.i)
    return pane + ((tuple(row.ids), row.total) if query == "panes"
                   else (row.n, row.lo, row.hi, row.total))


@pytest.mark.xdist_group("fault_points")  # the one driver of killed_at_fault_points
@pytest.mark.parametrize("query", ["panes", "pane_partials"])
def test_kill_in_the_middle_of_a_batch_and_restart(spark, killed_at_fault_points, query):
    folder, stopped = killed_at_fault_points
    assert stopped[query] >= 0
    table = spark.read.format("delta").load(str(folder / f"{query}_sink"))
    expected = _expected(BATCHES)
    if query == "pane_partials":
        expected = sorted((k, s, t, i, len(ids), min(ids), max(ids), total)
                          for k, s, t, i, ids, total in expected)
    assert sorted(_pane_rows(r, query) for r in table.collect()) == expected
    # Nothing doubled; the SELECT list carries the pane's key (k, PANE_START()): no key column.
    assert table.count() == table.select("k", "s").distinct().count()
    assert "_pane_key" not in table.columns


@pytest.mark.xdist_group("fault_points")
def test_tumbling_count_window_survives_a_kill(spark, killed_at_fault_points):
    """TUMBLING COUNT(20) over appends of 6, 14, 25 and 16 tuples, killed right after the
    second micro-batch wrote its firing: the restart redoes that batch from the checkpointed
    window (6 tuples), Delta skips its second write, and every window appears once."""
    folder, stopped = killed_at_fault_points
    assert stopped["count20"] == 1
    table = spark.read.format("delta").load(str(folder / "count20_sink"))
    assert sorted(tuple(r) for r in table.select("n", "first", "last", "w").collect()) == [
        (20, 0, 19, 0), (20, 20, 39, 1), (20, 40, 59, 2)]


@pytest.mark.xdist_group("fault_points")
@pytest.mark.parametrize("stage", ["firings", "written"])
def test_late_rows_survive_a_kill(spark, killed_at_fault_points, stage):
    """Killed after a micro-batch committed its firings but not its late rows ("firings"), or
    both but not its offsets ("written"): the restart writes every late row exactly once and
    the firings once."""
    folder, stopped = killed_at_fault_points
    assert stopped[f"late_{stage}"] >= 1
    late = spark.read.format("delta").load(str(folder / "warehouse" / f"late_rows_{stage}"))
    assert _streamed_late(late.collect()) == _streaming_late_oracle(BATCHES, (10, 5))
    assert late.count() == 3
    sink = spark.read.format("delta").load(str(folder / f"late_{stage}_sink"))
    assert sink.count() == sink.select("k", "s").distinct().count()  # nothing doubled


QUERIES_OVER_SOURCE = {
    "ordered_count": """SELECT k, WINDOW_ID() AS w, ARRAY_SORT(COLLECT_LIST(id)) AS ids
                        FROM delta.`{source}`
                        WINDOW TUMBLING COUNT(5) OVER (PARTITION BY k ORDER BY id)""",
    "sliding_partials": """SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, SUM(v) AS total,
                                  MIN(id) AS lo, MAX(id) AS hi FROM delta.`{source}`
                           WINDOW SLIDING COUNT(6) TRIGGER COUNT(4) OVER (PARTITION BY k)""",
    "markers": MARKERS.format(source="delta.`{source}`"),
}
# The soak kills more often, with more seeds; more seeds by hand: SQL_EXT_CRASH_SEEDS=5,6.
CRASH_SEEDS = size([1], [1, 2, 3, 4]) + [
    int(seed) for seed in os.environ.get("SQL_EXT_CRASH_SEEDS", "").split(",") if seed.strip()]


def _kills(rng: random.Random) -> list[tuple[bool, float]]:
    """(after the streams run?, seconds): a kill from the process's start (starting up,
    creating the tables, or later), one while they run, and in the soak one more."""
    kills = [(False, rng.uniform(5.0, 14.0)), (True, rng.uniform(0.0, 3.0)),
             (True, rng.uniform(0.0, 5.0))]
    return kills[:size(2, 3)]


def _wait_for_a_batch(folder: Path, streams: list[dict], process: subprocess.Popen) -> None:
    """Until a stream of the driver just started commits a micro-batch (its checkpoint's commit
    log grows)."""
    def count() -> int:
        return sum(len(list(Path(s["checkpoint"], "commits").glob("[0-9]*"))) for s in streams)

    before, deadline = count(), time.monotonic() + 180
    while count() == before:
        assert process.poll() is None, _log(folder)
        assert time.monotonic() < deadline, "the streams committed no micro-batch"
        time.sleep(0.2)


def _last_firing_per_pane(rows):
    """The batch query lists every firing of a pane; a streaming table keeps its last."""
    last = {}
    for row in rows:  # (k, w, i, ...): the pane is (k, w), its firings count up in i
        if (row[0], row[1]) not in last or last[(row[0], row[1])][2] < row[2]:
            last[(row[0], row[1])] = row
    return list(last.values())


def _feed(spark, source: str, rng: random.Random, stop: threading.Event) -> None:
    """Appends batches of random sizes (rows shuffled within each) at random pauses."""
    start = 0
    for _ in range(25):
        if stop.is_set():
            return
        size_ = rng.randint(1, 40)
        rows = [(i, rng.choice("abc"), float(i % 7)) for i in range(start, start + size_)]
        rng.shuffle(rows)
        spark.createDataFrame(rows, "id long, k string, v double").coalesce(1) \
            .write.format("delta").mode("append").save(source)
        start += size_
        time.sleep(rng.uniform(0.0, 1.5))


@pytest.mark.soak
@pytest.mark.heavy
@pytest.mark.parametrize("seed", CRASH_SEEDS)
def test_killed_at_random_moments_while_feeders_append(spark, tmp_path, seed):
    """Feeders append to three sources while a driver runs a TRIGGER EVERY 0.5 streaming table
    over each (an ORDER BY within each micro-batch over tuples, sliding partials, WATERMARK BY
    markers); the driver is killed with SIGKILL at seeded random moments (starting up,
    mid-batch, between batches) and restarted on the same checkpoints; at the end it drains the
    sources. Each table equals the batch query over its source, row for row (for WATERMARK BY,
    each pane's last firing: a closing marker ends the input)."""
    rng = random.Random(seed)
    streams = [_stream(tmp_path, query, query) for query in QUERIES_OVER_SOURCE]
    for stream in streams:
        spark.createDataFrame([], "id long, k string, v double").write.format("delta").save(
            stream["source"])
    stop = threading.Event()
    feeders = [threading.Thread(target=_feed, args=(
        spark, stream["source"], random.Random(rng.random()), stop)) for stream in streams]
    for feeder in feeders:
        feeder.start()
    env = dict(os.environ, SQL_EXT_DRIVER_EVERY="0.5")
    try:
        for running, kill_after in _kills(rng):
            process = _driver(tmp_path, streams, env)
            try:
                if running:  # from a moment its streams run: mid-batch or between batches
                    _wait_for_a_batch(tmp_path, streams, process)
                time.sleep(kill_after)
                assert process.poll() is None, _log(tmp_path)
            finally:
                _kill(process)
    finally:
        stop.set()
        for feeder in feeders:
            feeder.join()
    # A last marker closes every pane, in batch and streaming alike.
    spark.createDataFrame([(10 ** 6, "c", 12.0)], "id long, k string, v double") \
        .write.format("delta").mode("append").save(str(tmp_path / "markers_source"))
    # Drains what is left, in one micro-batch: a backlog.
    _run_to_end(tmp_path, streams, dict(os.environ, SQL_EXT_DRIVER_BACKLOG="1"))
    for stream in streams:
        query = stream["query"]
        table = spark.read.format("delta").load(stream["sink"])
        expected = [tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in
                    spark.sql(QUERIES_OVER_SOURCE[query].format(source=stream["source"]))
                    .select(*table.columns).collect()]
        if query == "markers":
            expected = _last_firing_per_pane(expected)
        assert sorted(tuple(tuple(v) if isinstance(v, list) else v for v in r)
                      for r in table.collect()) == sorted(expected), query
        assert table.count() > 0, query
