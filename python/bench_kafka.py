"""Kafka topics into Delta: sql-ext streaming tables over a Kafka topic table against Spark's own
Kafka source and streaming windows, on a real Kafka 4.1.1 broker on 127.0.0.1
(tests/kafka_broker.py), local[2], spark.sql.shuffle.partitions 4.

What it measures:

1. Production: N JSON messages {"k", "seq", "v", "ts"} over 1,000 keys (key = seq % 1000, also
   the Kafka message key, so a key's messages are in one partition in seq order), one tuple per
   key per second of event time (ts = T0 + seq DIV 1000 s, like bench_streaming.py), into a
   topic of 4 partitions, by a batching confluent-kafka producer (lz4); its time and rate.
2. Throughput, AVAILABLE NOW from the earliest offset of the same topic, each family into
   Delta, both sides in the same run, interleaved (ours then Spark's per family), after an
   untimed warm-up of both on a small topic and an untimed first read of the measured topic
   (the first read of a new topic is seconds slower for whoever comes first); the time from
   the statement's start to its return:
   - ours: CREATE STREAMING TABLE ... TRIGGER AVAILABLE NOW over `STREAM(<kafka table>)`
     (the table declares k, seq, v, ts with 'format' = 'json') for TUMBLING COUNT(100),
     SLIDING COUNT(100) TRIGGER COUNT(10) and TIME_INTERVAL(60, 15) ON ts WATERMARK DELAY 5,
     each OVER (PARTITION BY k), with COUNT(*), SUM(v), MAX(v);
   - Spark: readStream.format("kafka") (subscribe, startingOffsets earliest), from_json(CAST(
     value AS STRING)), withWatermark("ts", "5 seconds"), groupBy(k, window(ts, ...)) with the
     same aggregates, append mode into a Delta path, trigger(availableNow=True); window sizes
     as bench_streaming.py maps them (one tuple per key per second: COUNT(100) holds the tuples
     of window '100 seconds'; SLIDING COUNT(100) TRIGGER COUNT(10) ~ window('100 seconds',
     '10 seconds'); TIME_INTERVAL(60, 15) ~ window('60 seconds', '15 seconds'));
   - Spark decode only: the same read and from_json, appended to Delta as they are (no window):
     how much of either side's time is reading and decoding the topic; beside it ours with one
     row per message (a streaming table needs a window: TUMBLING COUNT(1) OVER (PARTITION BY
     k), every message its own row), the nearest streaming table to a plain decode.
3. Latency, continuous triggers (TRIGGER EVERY 1 / processingTime '1 second'), each side over a
   fresh topic: a producer thread sends ~200 messages/s for ~60 s and records each seq's send
   time; a poller lists the output table's _delta_log every 0.2 s, reads the files each new
   version adds (pyarrow, no Spark job competing with the stream) and records when each seq
   first became visible. Ours: TUMBLING COUNT(1) OVER (PARTITION BY k) (every message fires its
   own row: k, MAX(seq), COUNT(*)); Spark: from_json and a plain append of the rows (no window),
   the floor for "message to row visible". p50 / p95 / max of visible - sent, in ms.

Why the baselines are fair: both sides read the same topic through the same Spark Kafka source
(sql-ext's topic table hands every option to Spark's source and only decodes each batch's
messages), decode the same JSON into the same four columns, start from the earliest offset,
run AVAILABLE NOW (one backlog micro-batch each: no maxOffsetsPerTrigger on either side), in the
same session (same shuffle partitions, same cores), and commit into Delta; Spark's windows hold
the same tuples as ours (one tuple per key per second), with the same watermark delay. Ours pays
for CREATE STREAMING TABLE (the Delta table, the catalog entry) inside its time, as a user
would; Spark's side starts a new query into a new path, as a user would. The latency baseline
has no window at all, so it is a lower bound for any windowed Spark query over the same topic.

Run: SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python python/bench_kafka.py --sizes 2000000,10000000
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

KEYS = 1_000
PARTITIONS = 4
T0 = datetime.datetime(2024, 1, 1, 0, 0, 0)  # epoch seconds a multiple of 100 and of 15
COLUMNS = "k STRING, seq BIGINT, v DOUBLE, ts TIMESTAMP"
AGGREGATES = "COUNT(*) AS n, SUM(v) AS total, MAX(v) AS top"

# name: (our window clause, our window column, Spark's window() arguments)
FAMILIES = {
    "TUMBLING COUNT(100)": ("TUMBLING COUNT(100) OVER (PARTITION BY k)", "WINDOW_ID() AS w",
                            ("100 seconds",)),
    "SLIDING COUNT(100) TRIGGER COUNT(10)": (
        "SLIDING COUNT(100) TRIGGER COUNT(10) OVER (PARTITION BY k)", "WINDOW_ID() AS w",
        ("100 seconds", "10 seconds")),
    "TIME_INTERVAL(60, 15) WATERMARK DELAY 5": (
        "TIME_INTERVAL(60, 15) ON ts OVER (PARTITION BY k) WATERMARK DELAY 5",
        "PANE_START() AS s", ("60 seconds", "15 seconds")),
}


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M:%S")


def log(message: str) -> None:
    print(f"[{now()}] {message}", flush=True)


# ---------------------------------------------------------------- producing


def produce_bulk(bootstrap: str, topic: str, count: int) -> float:
    """Sends `count` bench messages as fast as the broker takes them; the seconds it took
    (until every message is acknowledged)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50,
                         "batch.num.messages": 100_000, "batch.size": 4_000_000,
                         "queue.buffering.max.messages": 2_000_000,
                         "queue.buffering.max.kbytes": 1_048_576,
                         "compression.type": "lz4", "acks": 1})
    failures = []

    def delivered(error, message):
        if error is not None:
            failures.append(error)

    produce = producer.produce
    poll = producer.poll
    start = time.perf_counter()
    for second in range(0, (count + KEYS - 1) // KEYS):
        stamp = (T0 + datetime.timedelta(seconds=second)).isoformat()
        base = second * KEYS
        for key in range(min(KEYS, count - base)):
            i = base + key
            value = (f'{{"k":"k{key}","seq":{i},"v":{((i * 7919) % 10007) / 100.0},'
                     f'"ts":"{stamp}"}}')
            while True:
                try:
                    produce(topic, value, f"k{key}", on_delivery=delivered)
                    break
                except BufferError:
                    poll(0.05)
        poll(0)
    remaining = producer.flush(600)
    seconds = time.perf_counter() - start
    if remaining or failures:
        raise RuntimeError(f"producing to {topic}: {remaining} unsent, failures {failures[:3]}")
    return seconds


# ---------------------------------------------------------------- throughput


def kafka_table(spark, name: str, bootstrap: str, topic: str) -> None:
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} ({COLUMNS}) USING kafka OPTIONS ("
              f"'kafka.bootstrap.servers' = '{bootstrap}', 'subscribe' = '{topic}', "
              "'format' = 'json')")


def decoded(spark, bootstrap: str, topic: str):
    """Spark's own read of the topic, decoded into the four columns."""
    from pyspark.sql import functions as F

    schema = "k STRING, seq BIGINT, v DOUBLE, ts TIMESTAMP"
    return (spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
            .option("startingOffsets", "earliest").load()
            .select(F.from_json(F.col("value").cast("string"), schema).alias("m"))
            .select("m.*"))


_names = iter(range(1_000_000))


# Ours with one row per message, against Spark's decode-only baseline.
PER_MESSAGE = "one row per message"
PER_MESSAGE_QUERY = ("TUMBLING COUNT(1) OVER (PARTITION BY k)", "MAX(seq) AS last", None)


ALL = (*FAMILIES, PER_MESSAGE)


def ours(spark, table: str, family: str) -> tuple[float, str]:
    """CREATE STREAMING TABLE ... TRIGGER AVAILABLE NOW: (seconds, table name)."""
    clause, column, _ = FAMILIES.get(family) or PER_MESSAGE_QUERY
    name = f"kafka_out_{next(_names)}"
    sql = (f"CREATE STREAMING TABLE {name} TRIGGER AVAILABLE NOW AS SELECT k, {column}, "
           f"{AGGREGATES} FROM STREAM({table}) WINDOW {clause}")
    start = time.perf_counter()
    spark.sql(sql)
    return time.perf_counter() - start, name


def native(spark, bootstrap: str, topic: str, work: Path, window: tuple[str, ...] | None
           ) -> tuple[float, str]:
    """Spark's streaming window aggregation (or, window None, the decoded rows as they are)
    into a new Delta path, AVAILABLE NOW: (seconds, path)."""
    from pyspark.sql import functions as F

    stamp = next(_names)
    out = str(work / f"native_out_{stamp}")
    start = time.perf_counter()
    frame = decoded(spark, bootstrap, topic)
    if window is not None:
        frame = (frame.withWatermark("ts", "5 seconds").groupBy("k", F.window("ts", *window))
                 .agg(F.count(F.lit(1)).alias("n"), F.sum("v").alias("total"),
                      F.max("v").alias("top")))
    query = (frame.writeStream.format("delta").outputMode("append")
             .option("checkpointLocation", str(work / f"ckpt_native_{stamp}"))
             .option("path", out).trigger(availableNow=True).start())
    query.awaitTermination()
    seconds = time.perf_counter() - start
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    return seconds, out


def prime(spark, bootstrap: str, topic: str, work: Path) -> float:
    """One untimed read of the whole topic (Spark's raw rows into noop): the first read of a new
    topic is seconds slower than the next ones (the broker's and the consumer's first pass), and
    whichever side ran first paid for it. The seconds it took."""
    start = time.perf_counter()
    query = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", topic).option("startingOffsets", "earliest").load()
             .writeStream.format("noop").trigger(availableNow=True)
             .option("checkpointLocation", str(work / f"ckpt_prime_{next(_names)}")).start())
    query.awaitTermination()
    return time.perf_counter() - start


def throughput(spark, bootstrap: str, topic: str, rows: int, work: Path, table: str,
               skip_spark: bool = False, families: tuple[str, ...] = ALL) -> dict:
    """{family: (ours s, Spark s, ours output rows, Spark output rows)} and the decode-only
    baseline under 'decode only'."""
    from sql_ext.streaming import drop_streaming_table

    log(f"{rows:,}: a first read of the topic, untimed: "
        f"{prime(spark, bootstrap, topic, work):.1f} s")

    def pair(label: str, family: str, window, spark_label: str) -> tuple:
        """Ours for `family`, then Spark's with `window` (None: decode only)."""
        log(f"{rows:,}: ours {label}")
        ours_s, name = ours(spark, table, family)
        ours_rows = spark.table(name).count()
        log(f"  ours {ours_s:.1f} s, {ours_rows:,} rows out")
        drop_streaming_table(spark, name)
        spark_s = spark_rows = None
        if not skip_spark:
            log(f"{rows:,}: Spark {spark_label}")
            spark_s, out = native(spark, bootstrap, topic, work, window)
            spark_rows = spark.read.format("delta").load(out).count()
            log(f"  Spark {spark_label} {spark_s:.1f} s, {spark_rows:,} rows out")
            shutil.rmtree(out, ignore_errors=True)
        return ours_s, spark_s, ours_rows, spark_rows

    results = {family: pair(family, family, window, family)
               for family, (_, _, window) in FAMILIES.items() if family in families}
    # One row per message: Spark's decode-only baseline, and ours' nearest (a streaming table
    # needs a window): TUMBLING COUNT(1), every message its own row.
    if PER_MESSAGE in families:
        results["one row per message: ours TUMBLING COUNT(1) vs Spark decode only "
                "(from_json -> Delta, no window)"] = pair(
            "one row per message (TUMBLING COUNT(1))", PER_MESSAGE, None, "decode only")
    return results


def print_throughput(rows: int, results: dict) -> list[str]:
    def f(value, fmt):
        return "-" if value is None else format(value, fmt)

    lines = [f"Throughput, {rows:,} messages, AVAILABLE NOW into Delta (seconds, statement "
             "start to return; ratio = Spark / ours, > 1 means ours faster)",
             "| family | ours s | Spark s | Spark / ours | ours rows/s | Spark rows/s | "
             "rows out ours / Spark |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for family, (ours_s, spark_s, ours_rows, spark_rows) in results.items():
        ratio = spark_s / ours_s if ours_s and spark_s else None
        lines.append(f"| {family} | {f(ours_s, '.1f')} | {f(spark_s, '.1f')} | "
                     f"{f(ratio, '.2f')} | {f(ours_s and rows / ours_s, ',.0f')} | "
                     f"{f(spark_s and rows / spark_s, ',.0f')} | "
                     f"{f(ours_rows, ',')} / {f(spark_rows, ',')} |")
    print("\n".join(lines), flush=True)
    return lines


# ---------------------------------------------------------------- latency


class Sender(threading.Thread):
    """`rate` messages/s for `seconds`; sent[seq] = time.time() just before produce()."""

    def __init__(self, bootstrap: str, topic: str, rate: int, seconds: float):
        super().__init__(daemon=True)
        self.bootstrap, self.topic, self.rate, self.seconds = bootstrap, topic, rate, seconds
        self.sent: dict[int, float] = {}

    def run(self) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 1, "acks": 1})
        count = int(self.rate * self.seconds)
        start = time.time()
        for seq in range(count):
            delay = start + seq / self.rate - time.time()
            if delay > 0:
                time.sleep(delay)
            key = seq % KEYS
            sent = time.time()
            stamp = datetime.datetime.fromtimestamp(sent, datetime.timezone.utc) \
                .replace(tzinfo=None).isoformat()
            producer.produce(self.topic, json.dumps(
                {"k": f"k{key}", "seq": seq, "v": float(seq % 100), "ts": stamp}), f"k{key}")
            self.sent[seq] = sent
            producer.poll(0)
        producer.flush(60)


class Poller(threading.Thread):
    """Every 0.2 s: new versions in `path`/_delta_log; seen[seq] = when the poll first found a
    version adding a row with that seq (column `column` of the files the version adds)."""

    def __init__(self, path: str, column: str):
        super().__init__(daemon=True)
        self.path, self.column = path, column
        self.seen: dict[int, float] = {}
        self.next_version = 0
        self.stopping = threading.Event()

    def poll(self) -> None:
        import pyarrow.parquet as pq

        log_dir = Path(self.path) / "_delta_log"
        while True:
            commit = log_dir / f"{self.next_version:020d}.json"
            if not commit.is_file():
                return
            seen_at = time.time()
            try:
                actions = [json.loads(line) for line in commit.read_text().splitlines()
                           if line.strip()]
            except ValueError:
                return  # not complete yet (Delta writes by rename; defensive)
            for action in actions:
                add = action.get("add")
                if add is None:
                    continue
                file = Path(self.path) / urllib.parse.unquote(add["path"])
                for seq in pq.read_table(file, columns=[self.column]).column(0).to_pylist():
                    if seq is not None:
                        self.seen.setdefault(int(seq), seen_at)
            self.next_version += 1

    def run(self) -> None:
        while not self.stopping.is_set():
            self.poll()
            self.stopping.wait(0.2)
        self.poll()


def latency_side(spark, side: str, bootstrap: str, work: Path, rate: int, seconds: float
                 ) -> tuple[list[float], int, int]:
    """(latencies in ms, messages sent, messages seen) of one side over a fresh topic."""
    from kafka_messages import create_topic
    from sql_ext.streaming import drop_streaming_table

    topic = f"bench_latency_{side}_{next(_names)}"
    create_topic(bootstrap, topic, PARTITIONS)
    if side == "ours":
        table = f"lat_{next(_names)}"
        kafka_table(spark, table, bootstrap, topic)
        name = f"lat_out_{next(_names)}"
        spark.sql(f"CREATE STREAMING TABLE {name} TRIGGER EVERY 1 AS SELECT k, MAX(seq) AS last, "
                  f"COUNT(*) AS n FROM STREAM({table}) WINDOW TUMBLING COUNT(1) "
                  "OVER (PARTITION BY k)")
        path = spark.sql(f"DESCRIBE DETAIL {name}").first()["location"]
        path = urllib.parse.urlparse(path).path if path.startswith("file:") else path
        column, query = "last", None
    else:
        path = str(work / f"latency_spark_{next(_names)}")
        query = (decoded(spark, bootstrap, topic).writeStream.format("delta")
                 .outputMode("append").option("checkpointLocation", path + "_ckpt")
                 .option("path", path).trigger(processingTime="1 second").start())
        column, name = "seq", None
    time.sleep(8)  # the stream runs its first (empty) micro-batches before the first message
    poller = Poller(path, column)
    poller.start()
    sender = Sender(bootstrap, topic, rate, seconds)
    sender.start()
    sender.join()
    drain = time.time() + 15
    while time.time() < drain and len(poller.seen) < len(sender.sent):
        time.sleep(0.2)
    poller.stopping.set()
    poller.join()
    if side == "ours":
        spark.sql(f"STOP STREAM {name}")
        drop_streaming_table(spark, name)
        spark.sql(f"DROP TABLE {table}")
    else:
        query.stop()
    values = [(poller.seen[seq] - sent) * 1000 for seq, sent in sender.sent.items()
              if seq in poller.seen]
    return values, len(sender.sent), len(poller.seen)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def latency(spark, bootstrap: str, work: Path, rate: int, seconds: float) -> list[str]:
    lines = [f"Latency, continuous trigger every 1 s into Delta, {rate} messages/s over "
             f"{KEYS:,} keys for {seconds:.0f} s, fresh topic of {PARTITIONS} partitions each; "
             "ms from produce() to the poll (every 0.2 s) that first finds the row in the table",
             "| side | p50 ms | p95 ms | max ms | mean ms | messages seen / sent |",
             "| --- | ---: | ---: | ---: | ---: | --- |"]
    labels = {"ours": "ours: TUMBLING COUNT(1) OVER (PARTITION BY k), TRIGGER EVERY 1",
              "spark": "Spark: from_json, append (no window), processingTime '1 second'"}
    for side in ("ours", "spark"):
        log(f"latency: {side}")
        values, sent, seen = latency_side(spark, side, bootstrap, work, rate, seconds)
        if values:
            lines.append(f"| {labels[side]} | {percentile(values, 0.5):,.0f} | "
                         f"{percentile(values, 0.95):,.0f} | {max(values):,.0f} | "
                         f"{statistics.fmean(values):,.0f} | {seen:,} / {sent:,} |")
        else:
            lines.append(f"| {labels[side]} | - | - | - | - | {seen:,} / {sent:,} |")
        log(lines[-1])
    print("\n".join(lines), flush=True)
    return lines


# ---------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000000,10000000",
                        help="message counts, comma-separated")
    parser.add_argument("--latency-rate", type=int, default=200)
    parser.add_argument("--latency-seconds", type=float, default=60.0)
    parser.add_argument("--no-latency", action="store_true")
    parser.add_argument("--skip-spark-sizes", default="",
                        help="sizes whose Spark side is not run (time)")
    parser.add_argument("--warm-up", type=int, default=100_000)
    parser.add_argument("--families", default="",
                        help="the families to run, by their first word (TUMBLING, SLIDING, "
                        "TIME_INTERVAL, one), comma-separated; all by default")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    skip_spark = {int(s) for s in args.skip_spark_sizes.split(",") if s}
    chosen = {w.strip().lower() for w in args.families.split(",") if w.strip()}
    families = tuple(f for f in ALL if not chosen or f.split()[0].lower() in chosen)

    import sql_ext
    from kafka_broker import Broker
    from kafka_messages import create_topic

    work = Path(tempfile.mkdtemp(prefix="sx_kafka_bench_"))
    broker = spark = None
    report: list[str] = [f"date {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
                         f"UTC, {os.cpu_count()} cores, local[2], shuffle partitions 4, "
                         f"{KEYS:,} keys, topics of {PARTITIONS} partitions"]
    try:
        broker = Broker(work / "kafka").start()
        log(f"broker at {broker.bootstrap}")
        spark = sql_ext.session(warehouse=work / "warehouse",
                                conf={"spark.sql.shuffle.partitions": "4"})
        spark.sparkContext.setLogLevel("ERROR")
        # Warm-up of both sides (class loading, code compilation), not timed.
        create_topic(broker.bootstrap, "bench_warm_up", PARTITIONS)
        produce_bulk(broker.bootstrap, "bench_warm_up", args.warm_up)
        kafka_table(spark, "readings_warm_up", broker.bootstrap, "bench_warm_up")
        log("warm-up")
        throughput(spark, broker.bootstrap, "bench_warm_up", args.warm_up, work,
                   "readings_warm_up")
        for rows in sizes:
            topic = f"bench_{rows}"
            create_topic(broker.bootstrap, topic, PARTITIONS)
            log(f"producing {rows:,} messages")
            seconds = produce_bulk(broker.bootstrap, topic, rows)
            line = (f"Produced {rows:,} messages in {seconds:.1f} s ({rows / seconds:,.0f} "
                    f"messages/s; confluent-kafka, lz4, linger 50 ms)")
            log(line)
            report.append(line)
            table = f"readings_{rows}"
            kafka_table(spark, table, broker.bootstrap, topic)
            results = throughput(spark, broker.bootstrap, topic, rows, work, table,
                                 skip_spark=rows in skip_spark, families=families)
            report += [""] + print_throughput(rows, results)
            if rows == sizes[0] and not args.no_latency:
                report += [""] + latency(spark, broker.bootstrap, work, args.latency_rate,
                                         args.latency_seconds)
        print("\n==== report ====\n" + "\n".join(report), flush=True)
    finally:
        if spark is not None:
            spark.stop()
        if broker is not None:
            broker.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
