"""Exactly once from Kafka into Delta: a producer writes to the topic while TRIGGER EVERY
streaming tables over it (a tumbling and a sliding window) run in a driver process; the driver
is killed with SIGKILL at seeded random moments (starting up, mid-batch, between batches) and
started again with the same statements; at the end one REFRESH of each reads what is left.
Each table equals the batch query over the topic, row for row: nothing lost, nothing doubled.
Each restart finds the topic's table in the catalog the first process created."""

import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from kafka_driver import QUERIES, topic_table
from kafka_messages import create_topic, produce
from scale import size

DRIVER = Path(__file__).resolve().parent / "kafka_driver.py"
PARTITION_OF = {"a": 0, "b": 1, "c": 2}.get
# Each seed runs every query in one driver; more by hand: SQL_EXT_KAFKA_CRASH_SEEDS=5,6. The
# soak runs four seeds with four kills each; the suite one with two, one of each kind.
SEEDS = size([1], [1, 2, 3, 4]) + [
    int(s) for s in os.environ.get("SQL_EXT_KAFKA_CRASH_SEEDS", "").split(",") if s.strip()]


def KILLS(rng):  # noqa: N802 - a table of kills, drawn from the seed
    """(after the stream runs?, seconds): a kill while it runs, one from the process's start
    (starting up, or creating the streaming table), and in the soak two more while it runs."""
    kills = [(True, rng.uniform(0.5, 5.0)), (False, rng.uniform(2.0, 25.0)),
             (True, rng.uniform(0.0, 5.0)), (True, rng.uniform(0.0, 3.0))]
    return kills[:size(2, 4)]


def _wait_for_a_batch(warehouse, process, log):
    """Until a stream of the driver just started commits a micro-batch (the first query's
    checkpoint's commit log grows)."""
    commits = warehouse / "_sql_ext_checkpoints" / sorted(QUERIES)[0] / "commits"

    def count():
        return len(list(commits.glob("[0-9]*"))) if commits.is_dir() else 0

    before, deadline = count(), time.monotonic() + 180
    while count() == before:
        assert process.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "the stream committed no micro-batch"
        time.sleep(0.2)


def _rows(frame, columns):
    return sorted(tuple(tuple(v) if isinstance(v, list) else v for v in r)
                  for r in frame.select(*columns).collect())


@pytest.mark.soak
@pytest.mark.heavy
@pytest.mark.parametrize("seed", SEEDS)
def test_killed_at_random_moments_while_a_producer_writes(spark, kafka, tmp_path, seed):
    rng = random.Random(seed)
    topic = f"crash{uuid.uuid4().hex[:10]}"
    create_topic(kafka, topic, 3)
    stop = threading.Event()
    produced = []

    def write():  # until the kills are over: batches of random sizes at random pauses
        feed, start = random.Random(seed * 1000), 0
        while not stop.is_set():
            messages = []
            for i in range(start, start + feed.randint(1, 40)):
                k = feed.choice("abc")
                messages.append((k, {"id": i, "k": k, "v": float(i % 7)}))
                if i % 53 == 0:
                    messages.append((k, "{not json"))  # counted, never a row
            produced.extend(produce(kafka, topic, messages, PARTITION_OF))
            start = i + 1
            time.sleep(feed.uniform(0.0, 1.2))

    producer = threading.Thread(target=write)
    producer.start()
    args = [sys.executable, str(DRIVER), str(tmp_path / "warehouse"), kafka, topic,
            str(tmp_path / "sinks")]
    try:
        for run, (running, kill_after) in enumerate(KILLS(rng)):
            process = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL,
                                       stderr=open(tmp_path / "driver.log", "a"),
                                       start_new_session=True)
            try:
                if running:  # from a moment its stream runs: mid-batch or between batches
                    _wait_for_a_batch(tmp_path / "warehouse", process, tmp_path / "driver.log")
                time.sleep(kill_after)
                assert process.poll() is None, (tmp_path / "driver.log").read_text()[-3000:]
            finally:  # killed whatever happened: a failed wait leaves no driver behind
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
            time.sleep(1)
    finally:
        stop.set()
        producer.join()
    drain = subprocess.run(args + ["drain"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300)
    assert drain.returncode == 0, drain.stderr[-3000:]
    source = f"crash_source_{seed}"
    topic_table(spark, source, kafka, topic)
    for name, query in QUERIES.items():
        table = spark.read.format("delta").load(str(tmp_path / "sinks" / name))
        expected = spark.sql(query.format(source=source))
        assert table.count() > 20, name
        assert _rows(table, expected.columns) == _rows(expected, expected.columns), name
    # Every message the producer wrote that decodes is one tuple of the windows' input.
    decoded = sum(1 for m in produced if m.value.startswith('{"'))
    assert decoded > 100
    assert spark.sql(f"SELECT COUNT(*), COUNT(DISTINCT id) FROM {source}").first() == \
        (decoded, decoded)
    spark.sql(f"DROP TABLE {source}")
