"""Kafka topics as tables (spec/sql.md section 9), against a real broker on 127.0.0.1.

The topic's content is known without Spark: messages are sent with another client
(tests/kafka_messages.py) and the broker reports where it stored each one. Batch reads and
windows are checked against that (plain Python, or Spark's own window() for panes); streaming
tables over the topic, read in small micro-batches across several REFRESHes, against the batch
query over the same topic."""

import datetime
import itertools
import json
import uuid

import pytest

from kafka_messages import create_topic, produce
from scale import size
from sql_ext.streaming import stream_status
from test_stream_order import WINDOWS as STREAM_ORDER_WINDOWS

T0 = datetime.datetime(2024, 1, 1, 8, 0, 0)
COLUMNS = "id BIGINT, k STRING, v DOUBLE, event_time TIMESTAMP"
# The message key decides the Kafka partition (as a keyed producer's partitioner does).
PARTITION_OF = {"a": 0, "b": 1, "c": 2, "d": 1}.get
BAD = ["not json", '{"id": "seven", "k": "a"}', "[1, 2]", None]
_names = itertools.count()


def _decoded(message):
    """The message's fields when its value fits COLUMNS (a JSON object of those types)."""
    fields = message.fields()
    types = {"id": int, "k": str, "v": (int, float), "event_time": str}
    if fields is None or any(not isinstance(fields.get(f), t) for f, t in types.items()
                             if fields.get(f) is not None):
        return None
    return fields


def _topic(kafka, partitions=3):
    topic = f"t{uuid.uuid4().hex[:12]}"
    create_topic(kafka, topic, partitions)
    return topic


def _reading(i, seconds=None):
    """Message i: key k, its value as JSON (ids ascending, event times ascending)."""
    k = "abcd"[(i * 7 + i // 3) % 4]
    stamp = T0 + datetime.timedelta(seconds=i if seconds is None else seconds)
    return k, {"id": i, "k": k, "v": float((i * 37) % 11), "event_time": stamp.isoformat()}


def _create(spark, kafka, topic_options, columns=COLUMNS, **options):
    name = f"kt{next(_names)}"
    options = {"kafka.bootstrap.servers": kafka, "format": "json", **topic_options, **options}
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} ({columns}) USING kafka OPTIONS ("
              + ", ".join(f"'{k}' = '{v}'" for k, v in options.items()) + ")")
    return name


def _sorted(rows):
    return sorted(rows, key=repr)  # NULLs (None) among strings


def _rows(frame):
    return _sorted(tuple(tuple(v) if isinstance(v, list) else v for v in r)
                   for r in frame.collect())


def test_a_topic_is_a_table_of_its_declared_columns_and_the_message_columns(spark, kafka):
    topic = _topic(kafka)
    good = [_reading(i) for i in range(30)]
    sent = produce(kafka, topic, good[:15] + [("a", BAD[0]), ("b", BAD[1])] + good[15:]
                   + [("c", BAD[2]), ("d", BAD[3])], PARTITION_OF)
    table = _create(spark, kafka, {"subscribe": topic})
    described = [(r.col_name, r.data_type) for r in spark.sql(f"DESCRIBE {table}").collect()]
    assert described == [("id", "bigint"), ("k", "string"), ("v", "double"),
                         ("event_time", "timestamp"), ("kafka_key", "string"),
                         ("kafka_partition", "int"), ("kafka_offset", "bigint"),
                         ("kafka_timestamp", "timestamp")]
    got = _rows(spark.sql(f"SELECT id, k, v, CAST(event_time AS STRING), kafka_key, "
                          f"kafka_partition, kafka_offset, unix_millis(kafka_timestamp) "
                          f"FROM {table}"))
    decoded = [(_decoded(m), m) for m in sent if _decoded(m) is not None]
    assert got == _sorted((f["id"], f["k"], f["v"], f["event_time"].replace("T", " "), m.key,
                          m.partition, m.offset, m.timestamp_ms) for f, m in decoded)
    assert len(got) == 30
    # The messages that do not decode are not rows: they are read, raw, with their place.
    bad = _rows(spark.sql(f"SELECT kafka_value, kafka_key, kafka_partition, kafka_offset "
                          f"FROM kafka_undecodable('{table}')"))
    assert bad == _sorted((m.value, m.key, m.partition, m.offset)
                          for m in sent if _decoded(m) is None)
    assert sorted(v for v, *_ in bad if v is not None) == sorted(b for b in BAD if b)


def test_batch_windows_over_a_topic_follow_offset_order_per_partition(spark, kafka):
    topic = _topic(kafka)
    sent = produce(kafka, topic, [_reading(i) for i in range(40)], PARTITION_OF)
    table = _create(spark, kafka, {"subscribe": topic})
    by_key = {}
    for m in sorted(sent, key=lambda m: (m.partition, m.offset)):  # arrival: offset order
        by_key.setdefault(m.key, []).append(_decoded(m))
    # TUMBLING COUNT(3) per key: every full window (the rest waits for more tuples).
    tumbling = _rows(spark.sql(f"SELECT k, WINDOW_ID() AS w, ARRAY_SORT(ARRAY_AGG(id)) AS ids "
                               f"FROM {table} WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k)"))
    assert tumbling == _sorted((k, w, tuple(r["id"] for r in rows[w * 3:w * 3 + 3]))
                               for k, rows in by_key.items() for w in range(len(rows) // 3))
    # SLIDING COUNT(4) TRIGGER COUNT(2): every second tuple once four are held, the last four.
    sliding = _rows(spark.sql(f"SELECT k, SUM(v) AS total, MAX(id) AS last FROM {table} "
                              "WINDOW SLIDING COUNT(4) TRIGGER COUNT(2) OVER (PARTITION BY k)"))
    assert sliding == _sorted((k, sum(r["v"] for r in rows[n - 4:n]), rows[n - 1]["id"])
                             for k, rows in by_key.items()
                             for n in range(4, len(rows) + 1, 2))
    # TIME_INTERVAL on a value field, and on the Kafka timestamp: Spark's own window().
    for column in ("event_time", "kafka_timestamp"):
        panes = _rows(spark.sql(
            f"SELECT k, PANE_START() AS s, COUNT(*) AS n, SUM(v) AS total FROM {table} "
            f"WINDOW TIME_INTERVAL(10) ON {column} OVER (PARTITION BY k)"))
        spark_panes = _rows(spark.sql(
            f"SELECT k, window.start AS s, COUNT(*) AS n, SUM(v) AS total FROM {table} "
            f"GROUP BY k, window({column}, '10 seconds')"))
        assert panes == spark_panes and sum(p[2] for p in panes) == 40


# The stream-order test's windows whose events act per key: PUNCT(...) and PARTITION EVICTION
# act on every key of the window, so across Kafka partitions they follow arrival order.
WINDOWS = [w for w in STREAM_ORDER_WINDOWS if "PUNCT" not in w and "EVICTION" not in w] + [
    "SLIDING COUNT(3) TRIGGER COUNT(1)"]
QUERY = ("SELECT k, WINDOW_ID() AS w, ARRAY_SORT(COLLECT_LIST(id)) AS ids, COUNT(*) AS n, "
         "SUM(v) AS total FROM {source} WINDOW {window} OVER (PARTITION BY k){tail}")
PANES = ("SELECT k, PANE_START() AS s, COUNT(*) AS n, SUM(v) AS total, MAX(id) AS last "
         "FROM {source} WINDOW TIME_INTERVAL(10) ON event_time OVER (PARTITION BY k) "
         "WATERMARK DELAY 500 EMIT FINAL")


@pytest.mark.heavy
@pytest.mark.soak  # tests/scale.py sizes its micro-batches
def test_streaming_tables_over_a_topic_equal_the_batch_query_however_the_stream_is_cut(
        spark, kafka):
    """Every window family, keyed by the message key: micro-batches of at most 20 messages
    (10 in the soak), two rounds of messages with a REFRESH after each, so that windows span
    micro-batches and runs; undecodable messages counted."""
    topic = _topic(kafka)
    table = _create(spark, kafka, {"subscribe": topic})
    cut = _create(spark, kafka, {"subscribe": topic}, maxOffsetsPerTrigger=size("20", "10"))
    queries = {f"ks{next(_names)}": QUERY.format(
        source=f"STREAM({cut})", window=w.removesuffix(" EMIT INCOMPLETE"),
        tail=" EMIT INCOMPLETE" if w.endswith(" EMIT INCOMPLETE") else "") for w in WINDOWS}
    panes = f"ks{next(_names)}"
    queries[panes] = PANES.format(source=f"STREAM({cut})")
    sent = []
    rounds = 2
    for round_ in range(rounds):
        sent += produce(kafka, topic, [_reading(i) for i in range(round_ * 25, round_ * 25 + 25)]
                        + [("b", bad) for bad in BAD[round_ * 2:min(3, round_ * 2 + 2)]],
                        PARTITION_OF)
        for name, query in queries.items():
            if round_ == 0:
                spark.sql(f"CREATE STREAMING TABLE {name} TRIGGER AVAILABLE NOW AS {query}")
            else:
                spark.sql(f"REFRESH STREAMING TABLE {name}")
    # Far later readings of every key close the panes of the others (watermark = max - 500 s).
    sent += produce(kafka, topic, [(k, _reading(1000 + i, seconds=2000)[1] | {"k": k})
                                   for i, k in enumerate("abcd")], PARTITION_OF)
    for name in queries:
        spark.sql(f"REFRESH STREAMING TABLE {name}")
    for (name, query), window in zip(queries.items(), WINDOWS):
        batch = _rows(spark.sql(query.replace(f"STREAM({cut})", table)))
        assert _rows(spark.table(name)) == batch, window
        status = stream_status(spark, name)
        assert status["undecodable_messages"] == 3 and status["out_of_order_rows"] == 0
    watermark = T0 + datetime.timedelta(seconds=2000 - 500)
    expected = _rows(spark.sql(
        f"SELECT k, window.start AS s, COUNT(*) AS n, SUM(v) AS total, MAX(id) AS last "
        f"FROM {table} GROUP BY k, window(event_time, '10 seconds') "
        f"HAVING window.end <= TIMESTAMP '{watermark}'"))
    assert len(expected) > 10 and _rows(spark.table(panes)) == expected
    assert stream_status(spark, panes)["late_dropped"] == 0
    for name in queries:
        spark.sql(f"DROP TABLE {name}")


def test_where_a_stream_starts_and_which_topics_it_reads(spark, kafka):
    """'startingOffsets' = 'latest': a stream reads what comes after its first start (a batch
    read still reads the topic); a timestamp; a topic pattern."""
    stem = f"p{uuid.uuid4().hex[:8]}"
    first, second = f"{stem}_one", f"{stem}_two"
    for topic in (first, second):
        create_topic(kafka, topic, 2)
    early = produce(kafka, first, [_reading(i) for i in range(6)])
    latest = _create(spark, kafka, {"subscribe": first}, startingOffsets="latest")
    name = f"ks{next(_names)}"
    spark.sql(f"CREATE STREAMING TABLE {name} TRIGGER AVAILABLE NOW AS SELECT k, COUNT(*) AS n, "
              f"MIN(id) AS lo FROM STREAM({latest}) WINDOW TUMBLING COUNT(1) "
              "OVER (PARTITION BY k)")
    assert spark.table(name).count() == 0
    later = produce(kafka, first, [_reading(i) for i in range(6, 10)])
    spark.sql(f"REFRESH STREAMING TABLE {name}")
    assert sorted(r.lo for r in spark.table(name).collect()) == list(range(6, 10))
    assert spark.table(latest).count() == 10  # batch: the whole topic
    # From a time on: the messages stamped at or after it.
    since = min(m.timestamp_ms for m in later)
    timed = _create(spark, kafka, {"subscribe": first}, startingTimestamp=str(since))
    assert sorted(r.id for r in spark.table(timed).collect()) == \
        sorted(m.fields()["id"] for m in early + later if m.timestamp_ms >= since)
    # A pattern: both topics.
    produce(kafka, second, [_reading(i) for i in range(100, 103)])
    pattern = _create(spark, kafka, {"subscribePattern": f"{stem}_.*"})
    assert spark.table(pattern).count() == 13
    spark.sql(f"DROP TABLE {name}")


def test_mistakes_in_a_topic_table_are_named(spark, kafka):
    base = {"kafka.bootstrap.servers": kafka, "subscribe": "x"}
    options = ", ".join(f"'{k}' = '{v}'" for k, v in base.items())
    with pytest.raises(Exception, match=r"'format' = 'avro' is not supported.*json"):
        spark.sql(f"CREATE TABLE bad1 (id INT) USING kafka OPTIONS ({options}, 'format' = 'avro')")
    with pytest.raises(Exception, match=r"column kafka_offset is one the table adds itself"):
        spark.sql(f"CREATE TABLE bad2 (id INT, kafka_offset BIGINT) USING kafka "
                  f"OPTIONS ({options})")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW plain AS SELECT 1 AS x")
    spark.sql("DROP TABLE IF EXISTS plain_delta")
    spark.sql("CREATE TABLE plain_delta (x INT) USING delta")
    with pytest.raises(Exception, match=r"plain_delta is not a Kafka topic table"):
        spark.sql("SELECT * FROM kafka_undecodable('plain_delta')").collect()
    # Without columns, USING kafka stays Spark's own table of raw messages.
    spark.sql("DROP TABLE IF EXISTS raw_kafka")
    spark.sql(f"CREATE TABLE raw_kafka USING kafka OPTIONS ({options})")
    assert [f.name for f in spark.table("raw_kafka").schema.fields][:2] == ["key", "value"]
    for table in ("bad1", "bad2"):
        assert not spark.catalog.tableExists(table)
    spark.sql("DROP TABLE raw_kafka")
    spark.sql("DROP TABLE plain_delta")


def test_json_options_reach_the_decoder(spark, kafka):
    topic = _topic(kafka, partitions=1)
    produce(kafka, topic, [("a", json.dumps({"id": 1, "k": "a", "v": 2.5,
                                              "event_time": "01/02/2024 08:00:07"}))])
    table = _create(spark, kafka, {"subscribe": topic},
                    **{"json.timestampFormat": "dd/MM/yyyy HH:mm:ss"})
    row = spark.table(table).collect()[0]
    assert (row.id, row.event_time) == (1, datetime.datetime(2024, 2, 1, 8, 0, 7))


def test_across_partitions_order_by_orders_each_micro_batch(spark, kafka):
    """An unpartitioned window over three Kafka partitions: ORDER BY id orders each
    micro-batch, so rounds whose ids come after the last round's give the batch query's rows;
    an id below one already processed is taken where it arrives and counted."""
    topic = _topic(kafka)
    table = _create(spark, kafka, {"subscribe": topic})
    query = ("SELECT WINDOW_ID() AS w, ARRAY_SORT(COLLECT_LIST(id)) AS ids FROM {source} "
             "WINDOW TUMBLING COUNT(5) OVER (ORDER BY id)")
    name = f"ks{next(_names)}"
    for round_ in range(3):  # ids of a round spread over every partition, shuffled
        ids = list(range(round_ * 20, round_ * 20 + 20))
        ids = ids[7:] + ids[:7]
        produce(kafka, topic, [_reading(i) for i in ids], lambda k: "abcd".index(k) % 3)
        if round_ == 0:
            spark.sql(f"CREATE STREAMING TABLE {name} TRIGGER AVAILABLE NOW AS "
                      + query.format(source=f"STREAM({table})"))
        else:
            spark.sql(f"REFRESH STREAMING TABLE {name}")
    assert sorted(_rows(spark.table(name))) == sorted(_rows(spark.sql(query.format(
        source=table)))) == [(w, tuple(range(w * 5, w * 5 + 5))) for w in range(12)]
    assert stream_status(spark, name)["out_of_order_rows"] == 0
    produce(kafka, topic, [_reading(i) for i in (60, 61, 3, 62, 63)],
            lambda k: "abcd".index(k) % 3)
    spark.sql(f"REFRESH STREAMING TABLE {name}")
    assert stream_status(spark, name)["out_of_order_rows"] == 1
    assert max(_rows(spark.table(name))) == (12, (3, 60, 61, 62, 63))
    spark.sql(f"DROP TABLE {name}")


def test_a_topic_table_under_a_qualified_quoted_name(spark, kafka):
    """A topic table in a schema of its own under a qualified, quoted name, read in batch, by
    kafka_undecodable and by a streaming table in another schema. (The Hive metastore allows
    only letters, digits and _ in schema and table names.)"""
    topic = _topic(kafka)
    sent = produce(kafka, topic, [_reading(i) for i in range(20)] + [("a", BAD[0])],
                   PARTITION_OF)
    spark.sql("CREATE DATABASE IF NOT EXISTS kafka_in")
    spark.sql("CREATE DATABASE IF NOT EXISTS lane_totals")
    table = "`kafka_in`.`Topic_Table`"
    spark.sql(f"DROP TABLE IF EXISTS {table}")
    spark.sql(f"CREATE TABLE {table} ({COLUMNS}) USING kafka OPTIONS ('kafka.bootstrap.servers'"
              f" = '{kafka}', 'subscribe' = '{topic}', 'format' = 'json')")
    assert sorted(r.id for r in spark.table(table).collect()) == list(range(20))
    assert [r.kafka_value for r in spark.sql(
        f"SELECT kafka_value FROM kafka_undecodable('{table}')").collect()] == [BAD[0]]
    query = (f"SELECT k, WINDOW_ID() AS w, COUNT(*) AS n, SUM(v) AS total FROM {{source}} "
             f"WINDOW TUMBLING COUNT(3) OVER (PARTITION BY k)")
    out = "lane_totals.`by_key`"
    spark.sql(f"CREATE STREAMING TABLE {out} TRIGGER AVAILABLE NOW AS "
              + query.format(source=f"STREAM({table})"))
    assert _rows(spark.table(out)) == _rows(spark.sql(query.format(source=table)))
    assert len(_rows(spark.table(out))) == sum(
        n // 3 for n in map([m.key for m in sent if _decoded(m)].count, "abcd"))
    assert stream_status(spark, out)["undecodable_messages"] == 1
    spark.sql(f"DROP TABLE {out}")
    spark.sql(f"DROP TABLE {table}")
