"""Several clients managing the same streaming tables at once: six JDBC connections to one
`sql-ext thriftserver` create, alter, stop, refresh, drop and list two shared tables in random
order. Every error is one a user can meet alone (never a table made twice, a stream started
twice on one checkpoint, or a lost definition); afterwards each table holds exactly the
windows of its source, and its stream runs in a session of its own: the caller's session is
never changed while a stream starts."""

from __future__ import annotations

import random
import threading
import time

from pyhive import hive
from test_managed_streams import _counts, _fetch, _rows_sql, _streams, _table_equals_batch, \
    _until

CLIENTS = 6
STATEMENTS = 10
TABLES = ("race.a", "race.b")
# Errors a client meets when another changed the table just before: each names the problem.
EXPECTED = ("no streaming table of that name", "exists with another definition",
            "the stream is running, and it already reads what arrives")


def _statement(rng: random.Random, table: str) -> str:
    query = _counts("race.clicks")
    return rng.choice([
        f"CREATE STREAMING TABLE {table} TRIGGER EVERY 1 AS {query}",
        f"CREATE STREAMING TABLE {table} TRIGGER EVERY 1 AS {query}",
        f"ALTER STREAMING TABLE {table} TRIGGER EVERY {rng.choice((1, 2))} AS {query}",
        f"STOP STREAM {table}",
        f"REFRESH STREAMING TABLE {table}",
        f"DROP STREAMING TABLE IF EXISTS {table}",
        "SHOW STREAMS",
    ])


def _client(port: int, seed: int, failures: list, done: list) -> None:
    rng = random.Random(seed)
    with hive.connect(host="127.0.0.1", port=port) as conn:
        cursor = conn.cursor()
        for _ in range(STATEMENTS):
            sql = _statement(rng, rng.choice(TABLES))
            try:
                cursor.execute(sql)
                if sql.startswith("SHOW"):
                    cursor.fetchall()
                done.append(sql.split(" AS ")[0])
            except Exception as error:  # noqa: BLE001 - sorted below
                if not any(expected in str(error) for expected in EXPECTED):
                    failures.append(f"{sql.split(' AS ')[0]}: {str(error)[:1500]}")


def test_six_clients_manage_the_same_streaming_tables_at_once(thrift_server):
    port = thrift_server
    with hive.connect(host="127.0.0.1", port=port) as conn:
        cursor = conn.cursor()
        cursor.execute("CREATE DATABASE race")
        cursor.execute("CREATE TABLE race.clicks (seq BIGINT, k STRING) USING DELTA")
        cursor.execute(f"INSERT INTO race.clicks VALUES {_rows_sql(0, 30)}")
        failures: list[str] = []
        done: list[str] = []
        clients = [threading.Thread(target=_client, args=(port, seed, failures, done))
                   for seed in range(CLIENTS)]
        for client in clients:
            client.start()
        for client in clients:
            client.join(timeout=900)
        assert not any(client.is_alive() for client in clients), "a client hangs"
        assert failures == []
        assert len(done) > CLIENTS * STATEMENTS // 3  # most statements did something

        # Every table that is left runs one stream, which writes each window once.
        cursor.execute(f"INSERT INTO race.clicks VALUES {_rows_sql(30, 45)}")
        for table in TABLES:
            cursor.execute(f"ALTER STREAMING TABLE {table} TRIGGER EVERY 1 AS "
                           + _counts("race.clicks"))
        for table in TABLES:
            _until(lambda: _table_equals_batch(cursor, table, "race.clicks"),
                   f"{table} to hold its windows")
        streams = _streams(cursor)
        for table in TABLES:
            assert streams[table]["state"] == "RUNNING", streams[table]
            assert streams[table]["last_error"] is None, streams[table]
        time.sleep(2)  # a second stream on the table would have written its windows again
        for table in TABLES:
            assert _table_equals_batch(cursor, table, "race.clicks")
            assert len(_fetch(cursor, f"SELECT * FROM {table}")) == 14  # 45 rows: 23 of key a, 22 of b; 7 windows of 3 each
            cursor.execute(f"DROP STREAMING TABLE {table}")


STREAM_SETTING = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


def test_a_stream_gets_its_settings_in_its_own_session(spark, tmp_path):
    """The streaming table's settings (RocksDB changelog checkpoints) reach its stream, which
    writes changelog files, while the creating session never holds them, not even for the
    moment the stream starts."""
    from sql_ext.streaming import create_streaming_table, drop_streaming_table

    assert spark.conf.get(STREAM_SETTING, None) is None
    spark.range(0, 40).selectExpr("id AS seq", "CAST(id % 2 AS STRING) AS k").write \
        .format("delta").save(str(tmp_path / "source"))
    spark.readStream.format("delta").load(str(tmp_path / "source")) \
        .createOrReplaceTempView("own_session_source")
    seen, stop = set(), threading.Event()

    def watch() -> None:
        while not stop.is_set():
            seen.add(spark.conf.get(STREAM_SETTING, None))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        create_streaming_table(
            spark, "own_session_counts", _counts("own_session_source"),
            checkpoint=str(tmp_path / "checkpoint")).awaitTermination()
    finally:
        stop.set()
        watcher.join()
    assert seen == {None}
    assert list((tmp_path / "checkpoint" / "state").rglob("*.changelog"))
    assert spark.table("own_session_counts").count() == 12
    drop_streaming_table(spark, "own_session_counts")
